# SPDX-License-Identifier: GPL-2.0
#
# check-deb-vm (part of check-vm): make deb's packages installed with
# dpkg -i into a Debian 12 root (DKMS builds the module there), that root
# booted in the VM with systemd as init (the module loaded by
# modules-load.d, the arena of arenas.conf made by kvarena.service, the
# exporter serving it, a reload), then everything purged and the root's
# files compared with those before the install (deb_vm.sh, deb_checks.sh).
# The root (debootstrap, ~650 MB, a minute) is made once, in
# KVA_DEB_ROOT, for the Debian 12 kernel the VM boots: the oldest of this
# machine's /boot (6.1).

KVA_DEB_ROOT ?= $(patsubst %/,%,$(dir $(KVA_KERNELS)))/deb-root
KVA_DEB_KREL ?= $(firstword $(filter 6.1.%,$(VM_HOST_KERNELS)) $(VM_HOST_KERNELS))

.PHONY: check-deb-vm
check-deb-vm:
	@test -n "$(KVA_DEB_KREL)" || { echo "check-deb-vm: no Debian 12 kernel with /boot/vmlinuz-* and headers" >&2; exit 1; }
	$(Q)ls $(DEB_T)/kvarena-dkms_$(KVA_VERSION)_all.deb >/dev/null 2>&1 || \
		$(MAKE) --no-print-directory deb
	$(Q)$(SRC)/selftests/install/deb_root.sh $(KVA_DEB_ROOT) $(KVA_DEB_KREL)
	@echo "== VM, kvarena's packages installed, used and purged, on $(KVA_DEB_KREL) with systemd"
	$(Q)$(SRC)/selftests/install/deb_vm.sh $(SRC) $(DEB_T) $(KVA_DEB_ROOT) \
		$(KVA_DEB_KREL) $(abspath $(B))/selftests/deb-vm $(VM_TIMEOUT)

check-vm: check-deb-vm
