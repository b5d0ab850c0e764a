# SPDX-License-Identifier: GPL-2.0
#
# kvbench: one binary, a subcommand per benchmark (tools/kvbench/*.c).
# Also built statically for the VM (`make bench-vm`), where the device
# paths of `kvbench frames` run against the real module.

KVB_DIR    := $(B)/tools
# tier --file copies with the tier agent's file engine (tools/common).
KVB_SRCS   := $(wildcard $(SRC)/tools/kvbench/*.c) $(SRC)/tools/common/fileio.c
KVB_HDRS   := $(wildcard $(SRC)/tools/kvbench/*.h) $(SRC)/tools/common/fileio.h
KVB_CFLAGS := $(KVA_CFLAGS) -I$(SRC)/tools/kvbench -I$(SRC)/kernels \
	      -I$(SRC)/driver -I$(SRC)/tools/common \
	      $(if $(LIBKVA_HAVE_URING),-DKVT_URING)
# map, frames and prefix use libkvarena (prefix its core allocator
# directly too: driver/core.c is in libkvarena.a); attn the CPU
# attention kernels.
KVB_LIBS   := $(LIBKVA_A) $(KVK_LIB)
KVB_LDLIBS := $(LIBKVA_LDLIBS) $(KVK_LDLIBS) -lm

# remote needs hiredis (tools/common's cluster client); the static build
# has no remote.
KVB_REMOTE_CFLAGS := $(if $(KVT_HIREDIS),-DKVB_REMOTE -I$(SRC)/lib/src)
KVB_REMOTE_SRCS := $(if $(KVT_HIREDIS),$(SRC)/tools/common/kvblock.c \
		   $(SRC)/tools/common/rcluster.c)

$(KVB_DIR)/kvbench: $(KVB_SRCS) $(KVB_HDRS) $(KVB_LIBS) $(KVT_REMOTE_SRCS) \
		$(KVT_REMOTE_HDRS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVB_CFLAGS) $(KVB_REMOTE_CFLAGS) -o $@ $(KVB_SRCS) \
		$(KVB_REMOTE_SRCS) $(KVB_LIBS) $(KVB_LDLIBS) $(KVT_REMOTE_LIBS)

# Static, for the VM: no --peer (no dlopen() of a peer there).
$(KVB_DIR)/kvbench-static: $(KVB_SRCS) $(KVB_HDRS) $(KVB_LIBS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVB_CFLAGS) -DKVB_NO_PEER -static -o $@ $(KVB_SRCS) \
		$(KVB_LIBS) $(KVB_LDLIBS)

ALL += $(KVB_DIR)/kvbench

.PHONY: install-kvbench bench-vm
install-kvbench: $(KVB_DIR)/kvbench
	install -D -m 0755 $< $(DESTDIR)$(BINDIR)/kvbench
INSTALL_TARGETS += install-kvbench
INSTALL_FILES   += $(BINDIR)/kvbench

# kvbench frames, prefix, map, resize and tier inside the VM, on the newest
# kernel: the module's paths, the runtime mapping frames through FRAME_FD,
# and a lower tier's agent copying frames (128 MiB each way: the arenas
# and the memcpy peer fit the VM's 1 GiB).
bench-vm: $(KVB_DIR)/kvbench-static $(B)/tools/kvarenactl-static
	$(Q)$(MAKE) --no-print-directory KDIR=/lib/modules/$(RUN_KERNEL)/build module
	$(Q)printf '%s\n' 'kvbench-static frames' 'kvbench-static prefix' \
		'kvarenactl-static create bench --frames 40 --frame-size 2M' \
		'kvbench-static map --arena bench --reps 20' \
		'kvbench-static resize' 'kvbench-static tier' > $(B)/bench-vm.sh
	$(Q)$(VM_RUN) --timeout $(VM_TIMEOUT) --script $(B)/bench-vm.sh \
		--kernel /boot/vmlinuz-$(RUN_KERNEL) \
		--module $(B)/kmod/$(RUN_KERNEL)/kvarena.ko $^

# kvbench attn's rows: --mixed, and --peer with a test double of the peer
# library (CI has no ggml tree; tools/ggml-peer/build.sh builds the real
# one).
KVB_T := $(B)/selftests/kvbench
$(KVB_T)/peer_double.so $(KVB_T)/peer_wrong_abi.so: \
		$(SRC)/selftests/kvbench/peer_double.c $(SRC)/tools/kvbench/peer.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -fPIC -shared -I$(SRC)/tools/kvbench \
		$(if $(findstring wrong,$@),-DWRONG_ABI) -o $@ $<

.PHONY: check-kvbench
check-kvbench: $(KVB_DIR)/kvbench $(KVB_T)/peer_double.so \
	       $(KVB_T)/peer_wrong_abi.so
	$(Q)$(SRC)/selftests/kvbench/attn_test.sh $(KVB_DIR)/kvbench \
		$(KVB_T)/peer_double.so $(KVB_T)/peer_wrong_abi.so
CHECK_NATIVE += check-kvbench
