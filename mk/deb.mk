# SPDX-License-Identifier: GPL-2.0
#
# Debian packages, from debian/ (dpkg-buildpackage, debhelper):
#
#   make deb     kvarena-dkms, libkvarena1, libkvarena-dev, kvarena-tools
#                and python3-kvarena into $(B)/deb/, built from a copy of
#                the tree's files (git's, where the tree is a checkout),
#                then checked by lintian: no error, no warning that
#                debian/*.lintian-overrides does not explain
#
# Installed with `apt install ./build/deb/*.deb` (Documentation/install.rst).

DEB_T := $(abspath $(B))/deb
DEB_SRC := $(DEB_T)/kvarena-$(KVA_VERSION)
LINTIAN ?= lintian

.PHONY: deb
deb:
	@command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null || \
		{ echo "deb: dpkg-buildpackage and debhelper needed (apt-get install dpkg-dev debhelper dh-dkms dh-python)" >&2; exit 1; }
	$(Q)head -1 $(SRC)/debian/changelog | grep -q '^kvarena ($(KVA_VERSION))' || \
		{ echo "deb: debian/changelog's version is not $(KVA_VERSION)" >&2; exit 1; }
	$(Q)rm -rf $(DEB_T) && mkdir -p $(DEB_SRC)
	$(Q)if git -C $(SRC) rev-parse --git-dir >/dev/null 2>&1; then \
		git -C $(SRC) ls-files -z --cached --others --exclude-standard | \
			(cd $(SRC) && cpio -pdm0 --quiet $(DEB_SRC)); \
	else \
		tar -C $(SRC) --exclude=./build --exclude=./.git -cf - . | \
			tar -C $(DEB_SRC) -xf -; \
	fi
	@echo "  DEB     $(DEB_T): dpkg-buildpackage -b (log: $(DEB_T)/build.log)"
	$(Q)cd $(DEB_SRC) && dpkg-buildpackage -us -uc -b >$(DEB_T)/build.log 2>&1 || \
		{ tail -40 $(DEB_T)/build.log; exit 1; }
	$(Q)rm -rf $(DEB_SRC)
	@ls $(DEB_T)/*.deb | sed 's|^|  DEB     |'
	@echo "  LINTIAN $(DEB_T)/kvarena_$(KVA_VERSION)_*.changes"
	$(Q)$(LINTIAN) --fail-on error,warning --display-info \
		$(DEB_T)/kvarena_$(KVA_VERSION)_*.changes

# make check builds the packages and runs lintian on them (natively; the
# packages installed, used and purged in a VM: selftests/install/deb.mk).
.PHONY: check-deb-lintian
check-deb-lintian: deb

CHECK_NATIVE += check-deb-lintian
