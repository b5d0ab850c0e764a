# SPDX-License-Identifier: GPL-2.0
#
# check-vm: for every kernel with both an image in /boot and headers in
# /lib/modules, build kvarena.ko for it, boot it in qemu and run VM_TESTS.
# VM_KERNELS=<release> picks one; VM_TIMEOUT bounds each boot.

VM_KERNELS ?= $(foreach k,$(notdir $(patsubst %/build,%,$(KDIRS_ALL))),\
		$(if $(wildcard /boot/vmlinuz-$(k)),$(k)))
VM_TIMEOUT ?= 900
VM_RUN := $(SRC)/selftests/vm/run.sh

# VM_TESTS_LAST run after the others: they change what a later test would
# find (selftests/docs unloads and loads the module again).
.SECONDEXPANSION:
check-vm: $$(VM_TESTS) $$(VM_TESTS_LAST)
	@test -n "$(VM_KERNELS)" || { echo "kvarena: no kernel with both /boot/vmlinuz-* and headers; apt-get install linux-image-amd64 linux-headers-amd64" >&2; exit 1; }
	$(Q)for k in $(VM_KERNELS); do \
		$(MAKE) --no-print-directory KDIR=/lib/modules/$$k/build module || exit 1; \
		echo "== VM tests on $$k"; \
		$(VM_RUN) --timeout $(VM_TIMEOUT) --kernel /boot/vmlinuz-$$k \
			--module $(B)/kmod/$$k/kvarena.ko $(VM_TESTS) \
			$(VM_TESTS_LAST) || exit 1; \
	done

# The main job: boot the newest kernel, create an arena with kvarenactl,
# attach two clients, allocate, print the STAT totals and the clients.
VM_DEMO := $(B)/selftests/vm/demo-client
DEMO_KERNEL ?= $(lastword $(VM_KERNELS))

$(VM_DEMO): $(SRC)/selftests/vm/demo-client.c $(SRC)/include/uapi/linux/kvarena.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) -static -o $@ $<

.PHONY: demo
demo: all $(VM_DEMO) $(B)/tools/kvarenactl-static
	@test -n "$(DEMO_KERNEL)" || { echo "kvarena: no kernel with both /boot/vmlinuz-* and headers" >&2; exit 1; }
	$(Q)$(MAKE) --no-print-directory KDIR=/lib/modules/$(DEMO_KERNEL)/build module
	$(Q)$(VM_RUN) --timeout $(VM_TIMEOUT) --script $(SRC)/selftests/vm/demo.sh \
		--kernel /boot/vmlinuz-$(DEMO_KERNEL) \
		--module $(B)/kmod/$(DEMO_KERNEL)/kvarena.ko \
		$(VM_DEMO) $(B)/tools/kvarenactl-static
