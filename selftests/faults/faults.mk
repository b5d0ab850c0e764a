# SPDX-License-Identifier: GPL-2.0
#
# The fault campaign (Documentation/reliability.rst).
#
# In the VM, on every kernel (VM_TESTS, CI counts):
#   kill_storm      1,000 SIGKILLs of processes busy with the arena
#   sysfuzz         200,000 random and broken commands, 4 processes
#   stress          threads of several processes on one arena, limits
#                   changed and clients dying under them; exact counters
#   lifecycle_test  unload, destroy, backing and sysfs lifetimes
# Natively (check-faults, part of check-native):
#   fuzz_args       libFuzzer on every command's argument checks
#                   (driver/check.c), from the corpus in the tree
#
#   make stress       a longer storm and stress on the newest kernel
#   make fuzz         longer libFuzzer runs and a longer syscall fuzz
#   make check-debug  everything in the VM on a KASAN/lockdep/kmemleak
#                     kernel built from linux-source-6.1 (long; see
#                     Documentation/reliability.rst)

FLT     := $(B)/selftests/faults
FLT_SRC := $(SRC)/selftests/faults
FLT_HDR := $(FLT_SRC)/faults.h $(SRC)/include/uapi/linux/kvarena.h
FLT_CC   = $(CC) $(CFLAGS) $(KVA_CFLAGS) -static
# Static, without dlopen(): cuda_noload.o stands in for the driver loader.
FLT_NOLOAD := $(if $(LIBKVA_HAVE_CUDA),$(B)/lib/obj/cuda_noload.o)

$(FLT)/kill_storm: $(FLT_SRC)/kill_storm.c $(FLT_HDR) $(LIBKVA_A) $(FLT_NOLOAD)
	@mkdir -p $(@D)
	$(Q)$(FLT_CC) -o $@ $< $(FLT_NOLOAD) $(LIBKVA_A) -luring -lpthread

$(FLT)/sysfuzz: $(FLT_SRC)/sysfuzz.c $(FLT_HDR)
	@mkdir -p $(@D)
	$(Q)$(FLT_CC) -o $@ $< -luring

$(FLT)/stress: $(FLT_SRC)/stress.c $(FLT_HDR)
	@mkdir -p $(@D)
	$(Q)$(FLT_CC) -pthread -o $@ $< -luring -lpthread

$(FLT)/lifecycle_test $(FLT)/regress_test: $(FLT)/%: $(FLT_SRC)/%.c $(FLT_HDR) \
		$(KSFT_HARNESS)
	@mkdir -p $(@D)
	$(Q)$(FLT_CC) $(KSFT_CFLAGS) -I$(KSFT_INC) -pthread -o $@ $< \
		-luring -lpthread

FLT_VM := $(FLT)/lifecycle_test $(FLT)/regress_test $(FLT)/stress \
	  $(FLT)/kill_storm $(FLT)/sysfuzz
VM_TESTS += $(FLT_VM)

# ---- libFuzzer: the argument checks, and the core from the tree's corpus ----

FLT_CORPUS   := $(FLT_SRC)/corpus
FUZZ_ARGS    := $(FLT)/fuzz_args
FLT_FUZZ_SECONDS ?= $(FUZZ_SECONDS)

$(FUZZ_ARGS): $(FLT_SRC)/fuzz_args.c $(SRC)/driver/check.c $(SRC)/driver/check.h \
	      $(SRC)/include/uapi/linux/kvarena.h
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -D_GNU_SOURCE -I$(SRC)/driver \
		-I$(SRC)/include/uapi -o $@ $< $(SRC)/driver/check.c

# $(call flt_fuzz,binary,name,seconds): fuzz from the tree's corpus
# (read-only) into a corpus under build/, which `make fuzz-merge` folds
# back into the tree.
define flt_fuzz
	@mkdir -p $(FLT)/corpus-$(2)
	$(Q)$(1) -max_total_time=$(3) -max_len=4096 -print_final_stats=1 \
		$(FLT)/corpus-$(2) $(FLT_CORPUS)/$(2) >$(FLT)/fuzz-$(2).log 2>&1 || \
		{ tail -40 $(FLT)/fuzz-$(2).log; exit 1; }
	@echo "  FUZZ    $(2): $$(sed -n 's/^stat::number_of_executed_units: *//p' \
		$(FLT)/fuzz-$(2).log) runs in $(3) s, $$(ls $(FLT_CORPUS)/$(2) | wc -l) \
		inputs in the tree's corpus"
endef

.PHONY: check-faults fuzz fuzz-merge stress check-debug
ifeq ($(HAVE_FUZZER),y)
check-faults: $(FUZZ_ARGS) $(CORE_FUZZ)
	$(call flt_fuzz,$(FUZZ_ARGS),args,$(FLT_FUZZ_SECONDS))
	@# Every input of the core's corpus in the tree, once.
	$(Q)$(CORE_FUZZ) -runs=0 $(FLT_CORPUS)/core >$(FLT)/fuzz-core-replay.log 2>&1 || \
		{ tail -40 $(FLT)/fuzz-core-replay.log; exit 1; }
	@echo "  FUZZ    core: $$(ls $(FLT_CORPUS)/core | wc -l) inputs of the tree's corpus replayed"

fuzz-merge: $(FUZZ_ARGS) $(CORE_FUZZ)
	$(Q)$(FUZZ_ARGS) -merge=1 $(FLT_CORPUS)/args $(FLT)/corpus-args
	$(Q)$(CORE_FUZZ) -merge=1 $(FLT_CORPUS)/core $(FLT)/corpus-core
else
check-faults:
	@echo "check-faults: skipped: $(FUZZ_CC) with -fsanitize=fuzzer not available (apt-get install clang libclang-rt-14-dev)"
fuzz-merge: check-faults
endif
CHECK_NATIVE += check-faults

# ---- longer runs -------------------------------------------------------------
#
#   make fuzz    FUZZ_HOURS of libFuzzer split over the two targets (default
#                a quarter of an hour), then SYSFUZZ_CALLS syscalls in the VM
#   make stress  STORM_KILLS kills and STRESS_LIVES process lives in the VM,
#                then the attacks of selftests/kvarena/attack_test.c,
#                ATTACK_ROUNDS rounds each (make check runs 100)

FUZZ_HOURS    ?= 0.25
SYSFUZZ_CALLS ?= 5000000
STORM_KILLS   ?= 20000
STRESS_LIVES  ?= 600
ATTACK_ROUNDS ?= 1000
FLT_KERNEL    ?= $(lastword $(VM_HOST_KERNELS))
FLT_VM_RUN     = $(MAKE) --no-print-directory KDIR=/lib/modules/$(FLT_KERNEL)/build module && \
		 $(VM_RUN) --timeout $(1) --kernel /boot/vmlinuz-$(FLT_KERNEL) \
		 --module $(B)/kmod/$(FLT_KERNEL)/kvarena.ko

fuzz: $(FUZZ_ARGS) $(CORE_FUZZ) $(FLT)/sysfuzz
	$(call flt_fuzz,$(FUZZ_ARGS),args,$$(awk 'BEGIN { print int($(FUZZ_HOURS) * 1800) }'))
	$(call flt_fuzz,$(CORE_FUZZ),core,$$(awk 'BEGIN { print int($(FUZZ_HOURS) * 1800) }'))
	@printf 'sysfuzz --calls %s\n' $(SYSFUZZ_CALLS) > $(FLT)/fuzz.sh
	$(Q)$(call FLT_VM_RUN,3600) --script $(FLT)/fuzz.sh $(FLT)/sysfuzz

stress: $(FLT)/kill_storm $(FLT)/stress $(B)/selftests/kvarena/attack_test
	@printf 'kill_storm --kills %s && stress --lives %s && KVA_ATTACK_ROUNDS=%s attack_test\n' \
		$(STORM_KILLS) $(STRESS_LIVES) $(ATTACK_ROUNDS) > $(FLT)/stress.sh
	$(Q)$(call FLT_VM_RUN,3600) --script $(FLT)/stress.sh $(FLT)/kill_storm \
		$(FLT)/stress $(B)/selftests/kvarena/attack_test

# ---- the debug kernel ----------------------------------------------------------
#
# Built once from the newest Debian linux-source that kernels.sh prepare
# fetched (7.3 from trixie-backports; DEBUG_KSRC_TAR names another) into
# $(B)/debug-kernel (nice 19, one
# job: DEBUG_KERNEL_JOBS=2 when nobody else needs the machine), then the
# module for it, then every VM test, the storm and the fuzzer on it, then
# a kmemleak scan after unloading the module.

DEBUG_KERNEL_JOBS ?= 1
DEBUG_KSRC_TAR ?= $(lastword $(shell ls $(KVA_KERNELS)/*/linux-source-*.tar.xz 2>/dev/null | sort -V))
DEBUG_KDIR  := $(B)/debug-kernel/obj
DEBUG_IMAGE := $(DEBUG_KDIR)/arch/x86/boot/bzImage

$(DEBUG_IMAGE): $(FLT_SRC)/debug-kernel.config $(FLT_SRC)/debug-kernel.sh
	@test -n "$(DEBUG_KSRC_TAR)" || { echo "kvarena: no linux-source tarball in $(KVA_KERNELS)/*/ for the debug kernel; run .ci/deps (selftests/vm/kernels.sh prepare) as root" >&2; exit 1; }
	$(Q)$(FLT_SRC)/debug-kernel.sh $(DEBUG_KSRC_TAR) $(B)/debug-kernel $(DEBUG_KERNEL_JOBS)

.SECONDEXPANSION:
# bench-dmem: the dmem cgroup controller's cost at a production kernel's
# speed - the debug kernel's configuration without its detectors (a
# second kernel build, so not in make check; check-debug prints the same
# benchmark on the debug kernel).
PLAIN_KDIR  := $(B)/debug-kernel/obj-plain
PLAIN_IMAGE := $(PLAIN_KDIR)/arch/x86/boot/bzImage
DMEM_BENCH_RUNS ?= 3

$(PLAIN_IMAGE): $(FLT_SRC)/debug-kernel.config $(FLT_SRC)/debug-kernel.sh
	@test -n "$(DEBUG_KSRC_TAR)" || { echo "kvarena: no linux-source tarball in $(KVA_KERNELS)/*/; run .ci/deps (selftests/vm/kernels.sh prepare) as root" >&2; exit 1; }
	$(Q)$(FLT_SRC)/debug-kernel.sh $(DEBUG_KSRC_TAR) $(B)/debug-kernel $(DEBUG_KERNEL_JOBS) plain

.PHONY: bench-dmem
bench-dmem: $(PLAIN_IMAGE) $$(KVB_DIR)/kvbench-static
	$(Q)$(MAKE) --no-print-directory KDIR=$(abspath $(PLAIN_KDIR)) module
	@mkdir -p $(FLT)
	$(Q)echo 'for i in $$(seq $(DMEM_BENCH_RUNS)); do kvbench-static frames --dmem || exit 1; done' > $(FLT)/bench-dmem.sh
	$(Q)$(VM_RUN) --timeout 1800 --script $(FLT)/bench-dmem.sh \
		--kernel $(PLAIN_IMAGE) \
		--module $(B)/kmod/$$(cat $(PLAIN_KDIR)/include/config/kernel.release)/kvarena.ko \
		$(KVB_DIR)/kvbench-static

check-debug: $(DEBUG_IMAGE) $$(VM_TESTS) $$(VM_TESTS_LAST) $(FLT_SRC)/check-debug.sh \
	     $$(KVB_DIR)/kvbench-static
	$(Q)$(MAKE) --no-print-directory KDIR=$(abspath $(DEBUG_KDIR)) module
	@{ echo 'TESTS="$(notdir $(VM_TESTS) $(VM_TESTS_LAST))"'; \
	  cat $(FLT_SRC)/check-debug.sh; } \
		> $(FLT)/check-debug-vm.sh
	$(Q)$(VM_RUN) --timeout 5400 --mem 2048 --script $(FLT)/check-debug-vm.sh \
		--kernel $(DEBUG_IMAGE) \
		--module $(B)/kmod/$$(cat $(DEBUG_KDIR)/include/config/kernel.release)/kvarena.ko \
		$(VM_TESTS) $(VM_TESTS_LAST) $(KVB_DIR)/kvbench-static
