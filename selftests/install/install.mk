# SPDX-License-Identifier: GPL-2.0
#
# kvarena as installed, in the VM (check-vm-installed, part of check-vm):
# for each VM kernel, a root with `make install` (PREFIX=/usr/local) and
# that kernel's `make modules_install` staged in it, completed by
# vm_root.sh (kmod, systemd-udevd, python3 with numpy, zmq and msgpack,
# users and group kvarena), booted with run.sh --root;
# vm_installed.sh then unloads the build's module and does what an
# administrator would: udevd, modprobe, the installed udev rule's group and
# mode, modinfo, the Python binding in device mode (test_device.py),
# modprobe -r.  DKMS itself cannot run there (busybox, no compiler); its
# make-driven equivalent is modules_install, and check-dkms runs dkms on
# the host.  The install and DKMS checks on the host are mk/install.mk's.

VMI_T := $(abspath $(B))/selftests/vm-installed

.PHONY: check-vm-installed
check-vm-installed: all
	@test -n "$(VM_KERNELS)" || { echo "kvarena: no kernel with both /boot/vmlinuz-* and headers" >&2; exit 1; }
	$(Q)for k in $(VM_KERNELS); do \
		r=$(VMI_T)/$$k/root; rm -rf $(VMI_T)/$$k; mkdir -p $$r; \
		$(MAKE) --no-print-directory install DESTDIR=$$r PREFIX=/usr/local \
			>$(VMI_T)/$$k/install.log 2>&1 && \
		$(MAKE) --no-print-directory KDIR=/lib/modules/$$k/build \
			modules_install INSTALL_MOD_PATH=$$r \
			>>$(VMI_T)/$$k/install.log 2>&1 || \
			{ cat $(VMI_T)/$$k/install.log; exit 1; }; \
		$(SRC)/selftests/install/vm_root.sh $$r "$(PYTHON)" $(SRC) || exit 1; \
		echo "== VM, kvarena installed, on $$k"; \
		$(VM_RUN) --timeout $(VM_TIMEOUT) --mem 2048 \
			--kernel /boot/vmlinuz-$$k --module $(B)/kmod/$$k/kvarena.ko \
			--root $$r --script $(SRC)/selftests/install/vm_installed.sh \
			|| exit 1; \
	done

check-vm: check-vm-installed
