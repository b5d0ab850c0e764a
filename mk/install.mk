# SPDX-License-Identifier: GPL-2.0
#
# Installing kvarena the way C libraries and out-of-tree modules are
# installed.
#
#   make install [PREFIX=/usr/local] [DESTDIR=]   library, headers, pkg-config
#                       file, tools, man pages, the Python package, the udev
#                       rule and the sysusers.d file for its group
#   make uninstall      removes every file `make install` wrote
#   make modules_install [KDIR=] [INSTALL_MOD_PATH=$(DESTDIR)]
#                       kvarena.ko into /lib/modules/<release>/extra/, by
#                       the kernel's own modules_install, then depmod
#   make install-dkms   the module's sources and dkms.conf into
#                       /usr/src/kvarena-$(KVA_VERSION)/ for `dkms add`
#
# Directories (each may be set on the command line; DESTDIR goes in front
# of all of them):
#
#   BINDIR       $(PREFIX)/bin
#   LIBDIR       $(PREFIX)/lib               (lib/lib.mk)
#   INCLUDEDIR   $(PREFIX)/include           (lib/lib.mk)
#   MANDIR       $(PREFIX)/share/man
#   PYTHONDIR    where Debian's python3 looks for PREFIX: /usr/lib/python3/
#                dist-packages for /usr, $(PREFIX)/lib/pythonX.Y/
#                dist-packages otherwise
#   UDEVDIR      /usr/lib/udev when PREFIX is /usr or /usr/local (udev
#                reads rules from nowhere under /usr/local), else
#                $(PREFIX)/lib/udev
#   SYSUSERSDIR  /usr/lib/sysusers.d, on the same rule
#   DATADIR      $(PREFIX)/share/kvarena: Prometheus rules, a Grafana
#                dashboard, arenas.conf.example
#   SYSCONFDIR   /etc on the UDEVDIR rule, else $(PREFIX)/etc: where the
#                units look for kvarena/arenas.conf
#   SYSTEMDUNITDIR, MODULESLOADDIR  $(PREFIX)/lib/systemd/system,
#                $(PREFIX)/lib/modules-load.d (systemd reads /usr/local's)
#
# Every part of the tree that installs a file adds its path (without
# DESTDIR) to INSTALL_FILES; `make uninstall` removes exactly those, then
# every directory that removal left empty, and check-install fails when an
# install writes a file nobody listed or an uninstall leaves anything.
#
# Installed into the live system (no DESTDIR) by root, `make install` also
# runs ldconfig, creates group kvarena (systemd-sysusers, or groupadd) and
# tells udev to reload its rules, as a package's postinst would.
# `make uninstall` leaves the group, as package removal does.

KVA_VERSION := 1.0.0
# The tools say it in --version.
KVA_CFLAGS += -DKVA_VERSION='"$(KVA_VERSION)"'

BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
PYTHON  ?= $(or $(wildcard /usr/bin/python3),python3)
PYTHON_VERSION := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PYTHONDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python$(PYTHON_VERSION)/dist-packages)
KVA_SYSTEM_PREFIX := $(filter /usr /usr/local,$(PREFIX))
UDEVDIR ?= $(if $(KVA_SYSTEM_PREFIX),/usr/lib/udev,$(PREFIX)/lib/udev)
SYSUSERSDIR ?= $(if $(KVA_SYSTEM_PREFIX),/usr/lib/sysusers.d,$(PREFIX)/lib/sysusers.d)
DATADIR ?= $(PREFIX)/share/kvarena

INSTALL_FILES :=

.PHONY: uninstall install-udev install-dkms modules_install check-install \
	check-dkms

# ---- the udev rule and its group -------------------------------------------

install-udev:
	$(Q)install -D -m 644 $(SRC)/dist/60-kvarena.rules \
		$(DESTDIR)$(UDEVDIR)/rules.d/60-kvarena.rules
	$(Q)install -D -m 644 $(SRC)/dist/kvarena.sysusers \
		$(DESTDIR)$(SYSUSERSDIR)/kvarena.conf

INSTALL_TARGETS += install-udev
INSTALL_FILES   += $(UDEVDIR)/rules.d/60-kvarena.rules \
		   $(SYSUSERSDIR)/kvarena.conf

# ---- systemd: the arenas at boot, the exporter, agents and scrubbers -------
#
# Units with BINDIR and SYSCONFDIR filled in; the module loaded at boot
# (modules-load.d); arenas.conf's example beside the other shared files
# (the configuration itself is the administrator's: make install writes
# none into SYSCONFDIR).

SYSCONFDIR ?= $(if $(KVA_SYSTEM_PREFIX),/etc,$(PREFIX)/etc)
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
MODULESLOADDIR ?= $(PREFIX)/lib/modules-load.d
KVA_UNITS := kvarena.service kvarena-exporter.service \
	     kvarena-agent@.service kvarena-scrub@.service \
	     kvarena-remote@.service

.PHONY: install-systemd
install-systemd:
	$(Q)mkdir -p $(B)
	$(Q)for u in $(KVA_UNITS); do \
		sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
			$(SRC)/dist/systemd/$$u.in > $(B)/$$u.tmp && \
		install -D -m 644 $(B)/$$u.tmp $(DESTDIR)$(SYSTEMDUNITDIR)/$$u && \
		rm -f $(B)/$$u.tmp || exit 1; done
	$(Q)install -D -m 644 $(SRC)/dist/kvarena.modules-load \
		$(DESTDIR)$(MODULESLOADDIR)/kvarena.conf
	$(Q)install -D -m 644 $(SRC)/dist/arenas.conf.example \
		$(DESTDIR)$(DATADIR)/arenas.conf.example
	$(Q)install -D -m 644 $(SRC)/dist/remote.conf.example \
		$(DESTDIR)$(DATADIR)/remote.conf.example

INSTALL_TARGETS += install-systemd
INSTALL_FILES   += $(addprefix $(SYSTEMDUNITDIR)/,$(KVA_UNITS)) \
		   $(MODULESLOADDIR)/kvarena.conf $(DATADIR)/arenas.conf.example \
		   $(DATADIR)/remote.conf.example

# ---- Prometheus alerting rules and a Grafana dashboard ---------------------


.PHONY: install-monitoring
install-monitoring:
	$(Q)install -D -m 644 $(SRC)/dist/prometheus/kvarena-alerts.yml \
		$(DESTDIR)$(DATADIR)/prometheus/kvarena-alerts.yml
	$(Q)install -D -m 644 $(SRC)/dist/grafana/kvarena-dashboard.json \
		$(DESTDIR)$(DATADIR)/grafana/kvarena-dashboard.json

INSTALL_TARGETS += install-monitoring
INSTALL_FILES   += $(DATADIR)/prometheus/kvarena-alerts.yml \
		   $(DATADIR)/grafana/kvarena-dashboard.json

# What a package's postinst does, for a live install by root.  Runs after
# every install-* (this rule's recipe waits for all of `install`'s
# prerequisites).
install:
	$(Q)if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then \
		ldconfig 2>/dev/null || true; \
		getent group kvarena >/dev/null || \
		systemd-sysusers $(SYSUSERSDIR)/kvarena.conf 2>/dev/null || \
		groupadd --system kvarena; \
		if command -v udevadm >/dev/null && [ -d /run/udev ]; then \
			udevadm control --reload-rules && \
			udevadm trigger --subsystem-match=misc --sysname-match=kvarena; \
		fi; \
	fi
	@echo "  INSTALL $(DESTDIR)$(PREFIX)"

uninstall:
	$(Q)for f in $(INSTALL_FILES); do rm -f "$(DESTDIR)$$f" || exit 1; done
	@# Python writes __pycache__ beside an imported package.
	$(Q)rm -rf $(DESTDIR)$(PYTHONDIR)/kvarena/__pycache__
	@# Directories left empty, deepest first, up to (not including) /.
	$(Q)for f in $(INSTALL_FILES); do \
		d=$${f%/*}; \
		while [ -n "$$d" ] && rmdir "$(DESTDIR)$$d" 2>/dev/null; do \
			d=$${d%/*}; done; \
	done
	@echo "  UNINSTALL $(DESTDIR)$(PREFIX)"

# ---- the module: the kernel's conventions, and DKMS --------------------------

INSTALL_MOD_PATH ?= $(DESTDIR)

# The kernel's modules_install for an external module: extra/kvarena.ko,
# compressed and signed as the kernel's build tree says (.ko.xz on Debian's
# 6.12; signing where the tree has its key), then depmod, which the
# kernel's step skips when the headers have no System.map (Debian's
# linux-headers packages).
modules_install: module
	$(Q)$(MAKE) -C $(KDIR) M=$(abspath $(KOBJ)) KVA_SRC=$(SRC) \
		KVA_CONFIG=$(abspath $(KOBJ)) INSTALL_MOD_PATH=$(INSTALL_MOD_PATH) \
		INSTALL_MOD_DIR=extra modules_install >$(KOBJ)/install.log 2>&1 || \
		{ cat $(KOBJ)/install.log; exit 1; }
	@# (Its warnings about a staging tree without modules.builtin are
	@# expected: shown only if it fails.)
	$(Q)depmod $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) $(KVER) \
		2>$(KOBJ)/depmod.log || { cat $(KOBJ)/depmod.log; exit 1; }
	@echo "  MODINST $(INSTALL_MOD_PATH)/lib/modules/$(KVER)/extra"

# What DKMS needs to build the module: the top Makefile and mk/ (make
# module), Kbuild, the driver and its probes, the uapi header.
DKMS_DIR   ?= /usr/src/kvarena-$(KVA_VERSION)
DKMS_FILES := Makefile Kbuild dkms.conf mk/kmod.mk mk/kselftest.mk mk/deb.mk \
	      mk/docs.mk mk/install.mk include/uapi/linux/kvarena.h \
	      $(patsubst $(SRC)/%,%,$(wildcard $(SRC)/driver/*.[ch] \
					      $(SRC)/driver/probes/*))

install-dkms:
	$(Q)for f in $(DKMS_FILES); do \
		install -D -m 644 $(SRC)/$$f $(DESTDIR)$(DKMS_DIR)/$$f || exit 1; done
	$(Q)chmod 755 $(DESTDIR)$(DKMS_DIR)/driver/probes/run-probes.sh
	@echo "  DKMS    $(DESTDIR)$(DKMS_DIR): now dkms add kvarena/$(KVA_VERSION)"

# ---- tests ---------------------------------------------------------------------

KVA_INST_T := $(B)/selftests/install
KVA_INST_ROOT := $(abspath $(KVA_INST_T))/destdir
KVA_INST_PREFIX := /usr/local

# make install into a DESTDIR: exactly the files INSTALL_FILES lists; a
# program built with `pkg-config --cflags --libs kvarena` against it runs
# (shared and static); the tools, man pages and Python package work from
# it; make uninstall leaves nothing.
check-install: all
	$(Q)rm -rf $(KVA_INST_T) && mkdir -p $(KVA_INST_T)
	$(Q)$(MAKE) --no-print-directory install DESTDIR=$(KVA_INST_ROOT) \
		PREFIX=$(KVA_INST_PREFIX) >$(KVA_INST_T)/install.log 2>&1 || \
		{ cat $(KVA_INST_T)/install.log; exit 1; }
	$(Q)$(MAKE) -s --no-print-directory print-install-files \
		PREFIX=$(KVA_INST_PREFIX) > $(KVA_INST_T)/listed
	$(Q)$(SRC)/selftests/install/check_install.sh $(KVA_INST_T) \
		$(KVA_INST_ROOT) $(KVA_INST_PREFIX) "$(PYTHON)" "$(CC)"
	$(Q)$(MAKE) --no-print-directory uninstall DESTDIR=$(KVA_INST_ROOT) \
		PREFIX=$(KVA_INST_PREFIX) >/dev/null
	$(Q)left=$$(cd $(KVA_INST_ROOT) && find . -mindepth 1); \
	if [ -n "$$left" ]; then \
		echo "check-install: make uninstall left:" >&2; \
		echo "$$left" >&2; exit 1; fi
	@echo "  INSTALL install, pkg-config program, tools, man, python, uninstall: ok"

.PHONY: print-install-files
print-install-files:
	@printf '%s\n' $(sort $(INSTALL_FILES))

CHECK_NATIVE += check-install

# The units as `make install PREFIX=/usr` writes them, checked by systemd's
# own `systemd-analyze verify` in that root (with this machine's systemd
# units beside them, for the targets they name; every ExecStart must be an
# installed program, every Documentation= an installed man page).  Then
# the example arenas.conf with its lines uncommented: `kvarenactl apply
# --check` takes it.
KVA_SYSTEMD_T := $(abspath $(B))/selftests/systemd
SYSTEMD_ANALYZE ?= systemd-analyze

.PHONY: check-systemd
check-systemd: all
	@command -v $(SYSTEMD_ANALYZE) >/dev/null || { echo "check-systemd: no systemd-analyze (apt-get install systemd)" >&2; exit 1; }
	$(Q)rm -rf $(KVA_SYSTEMD_T) && mkdir -p $(KVA_SYSTEMD_T)/root/usr/lib/systemd/system
	$(Q)cp -a /usr/lib/systemd/system/. $(KVA_SYSTEMD_T)/root/usr/lib/systemd/system/
	$(Q)$(MAKE) --no-print-directory install DESTDIR=$(KVA_SYSTEMD_T)/root \
		PREFIX=/usr >$(KVA_SYSTEMD_T)/install.log 2>&1 || \
		{ cat $(KVA_SYSTEMD_T)/install.log; exit 1; }
	$(Q)cd $(KVA_SYSTEMD_T)/root && MANPATH=$$PWD/usr/share/man \
		$(SYSTEMD_ANALYZE) --root=$$PWD verify \
		$(addprefix usr/lib/systemd/system/,$(KVA_UNITS)) \
		>$(KVA_SYSTEMD_T)/verify.log 2>&1; \
	rc=$$?; cat $(KVA_SYSTEMD_T)/verify.log; \
	if [ $$rc != 0 ] || [ -s $(KVA_SYSTEMD_T)/verify.log ]; then \
		echo "check-systemd: systemd-analyze verify is not clean" >&2; exit 1; fi
	$(Q)sed -n 's/^# \(arena\|tier\) /\1 /p' $(SRC)/dist/arenas.conf.example | \
		sed 's/ --group kvarena//' > $(KVA_SYSTEMD_T)/arenas.conf
	$(Q)$(B)/tools/kvarenactl apply --check $(KVA_SYSTEMD_T)/arenas.conf
	@echo "  SYSTEMD systemd-analyze verify $(KVA_UNITS): clean"

CHECK_NATIVE += check-systemd

# DKMS itself, for every kernel with headers (selftests/install/
# check_dkms.sh; root and Debian's dkms).  dkms.conf's version must be
# this tree's.
KVA_DKMS_T := $(abspath $(B))/selftests/dkms
KVA_DKMS_RELEASES = $(patsubst /lib/modules/%/build,%,$(KDIRS_ALL))

check-dkms:
	$(Q)grep -q '^PACKAGE_VERSION="$(KVA_VERSION)"$$' $(SRC)/dkms.conf || \
		{ echo "check-dkms: dkms.conf's PACKAGE_VERSION is not $(KVA_VERSION)" >&2; exit 1; }
	$(Q)grep -q '^#define KVA_MOD_VERSION "$(KVA_VERSION)"$$' $(SRC)/driver/version.h || \
		{ echo "check-dkms: driver/version.h's KVA_MOD_VERSION is not $(KVA_VERSION)" >&2; exit 1; }
	$(Q)rm -rf $(KVA_DKMS_T)
	$(Q)$(MAKE) --no-print-directory install-dkms \
		DESTDIR=$(KVA_DKMS_T)/root >/dev/null
	$(Q)$(SRC)/selftests/install/check_dkms.sh $(KVA_DKMS_T) $(KVA_VERSION) \
		$(KVA_DKMS_RELEASES)

CHECK_NATIVE += check-dkms
