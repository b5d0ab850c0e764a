# SPDX-License-Identifier: GPL-2.0
#
# kvarena as installed, in the VM (check-vm-installed, part of check-vm):
# for each VM kernel, a root with `make install` (PREFIX=/usr/local) and
# that kernel's `make modules_install` staged in it (for a kernel of
# KVA_KERNELS, the module built in its root, copied to extra/ and
# depmod), completed by
# vm_root.sh (kmod, systemd-udevd, python3 with numpy, zmq and msgpack -
# and torch for the kernel VMI_TORCH -, users and group kvarena), booted
# with run.sh --root;
# vm_installed.sh then unloads the build's module and does what an
# administrator would: udevd, modprobe, the installed udev rule's group and
# mode, modinfo, the Python binding in device mode (test_device.py,
# test_events.py, test_routers.py with the routers' decoders of
# selftests/events, test_prefix_torch.py where torch is), modprobe -r.  DKMS itself cannot run there (busybox, no compiler); its
# make-driven equivalent is modules_install, and check-dkms runs dkms on
# the host.  The install and DKMS checks on the host are mk/install.mk's.

VMI_T := $(abspath $(B))/selftests/vm-installed
# The kernel whose root also carries torch (test_prefix_torch.py): half a
# gigabyte more to boot, so one kernel only; VMI_TORCH= for none.
VMI_TORCH ?= $(lastword $(VM_HOST_KERNELS))

.PHONY: check-vm-installed
check-vm-installed: all $$(KVEV_BINS)
	@test -n "$(VM_KERNELS)" || { echo "kvarena: no kernel with both /boot/vmlinuz-* and headers" >&2; exit 1; }
	$(Q)for k in $(VM_KERNELS); do \
		r=$(VMI_T)/$$k/root; rm -rf $(VMI_T)/$$k; mkdir -p $$r; \
		$(MAKE) --no-print-directory install DESTDIR=$$r PREFIX=/usr/local \
			>$(VMI_T)/$$k/install.log 2>&1 && \
		if [ -d "$(KVA_KERNELS)/$$k/root" ]; then \
			$(MAKE) --no-print-directory KREL=$$k module-root && \
			install -D -m 644 $(B)/kmod/$$k/kvarena.ko \
				$$r/lib/modules/$$k/extra/kvarena.ko && \
			depmod -b $$r $$k; \
		else \
			$(MAKE) --no-print-directory KDIR=/lib/modules/$$k/build \
				modules_install INSTALL_MOD_PATH=$$r; \
		fi >>$(VMI_T)/$$k/install.log 2>&1 || \
			{ cat $(VMI_T)/$$k/install.log; exit 1; }; \
		t=; mem=2048; \
		if [ "$$k" = "$(VMI_TORCH)" ]; then t=torch; mem=4096; fi; \
		KVEV_BINS="$(KVEV_BINS)" \
			$(SRC)/selftests/install/vm_root.sh $$r "$(PYTHON)" $(SRC) $$t || \
			exit 1; \
		echo "== VM, kvarena installed, on $$k$${t:+, with torch}"; \
		img=/boot/vmlinuz-$$k; \
		[ ! -d "$(KVA_KERNELS)/$$k/root" ] || img=$(KVA_KERNELS)/$$k/vmlinuz; \
		$(VM_RUN) --timeout $(VM_TIMEOUT) --mem $$mem \
			--kernel $$img --module $(B)/kmod/$$k/kvarena.ko \
			--root $$r --script $(SRC)/selftests/install/vm_installed.sh \
			|| exit 1; \
	done

check-vm: check-vm-installed
