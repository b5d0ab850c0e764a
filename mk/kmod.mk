# SPDX-License-Identifier: GPL-2.0
#
# Building kvarena.ko out of tree.
#
# KDIR defaults to the running kernel's build tree and falls back to the
# newest installed headers (a container or CI host often runs a kernel with
# no headers installed).  Each kernel release gets its own output directory,
# $(B)/kmod/<release>/, holding links to the sources, the results of the
# compile probes (kva_config.h) and the objects.

KDIR ?= $(or $(wildcard /lib/modules/$(shell uname -r)/build),\
	     $(shell ls -d /lib/modules/*/build 2>/dev/null | sort -V | tail -n 1))
KVER  = $(shell sed -n 's/.*UTS_RELEASE "\(.*\)"/\1/p' \
	   $(KDIR)/include/generated/utsrelease.h 2>/dev/null)
KOBJ  = $(B)/kmod/$(KVER)
# Every kernel with headers installed, for `make module-all-kernels`.
KDIRS_ALL = $(shell ls -d /lib/modules/*/build 2>/dev/null | sort -V)

# Debian's kernels of other releases than this machine's (bullseye's 5.10,
# the newest of trixie-backports): selftests/vm/kernels.sh prepares them
# in KVA_KERNELS (.ci/deps does), each in a root of its own release with
# Debian's headers and the compiler they ask for, and builds kvarena.ko
# there (as root: chroot) into $(B)/kmod/<release>/ (make module-root
# KREL=<release>).
KVA_KERNELS ?= /var/lib/kvarena/kernels
ROOT_KERNELS := $(shell $(SRC)/selftests/vm/kernels.sh list $(KVA_KERNELS) 2>/dev/null)

# KVA_STRICT=0 for builds on kernels this tree was never tried on (DKMS):
# no W=1, and warnings are shown but do not fail the build.
KVA_STRICT ?= 1
# KVA_SPARSE=1: sparse checks every file as it compiles (C=1); its warnings
# fail a strict build too.  On by default in strict builds where sparse is
# installed (.ci/deps installs it, and in each root of KVA_KERNELS).
KVA_SPARSE ?= $(if $(filter 1,$(KVA_STRICT)),$(if $(shell command -v sparse),1))

DRIVER_SRCS := $(wildcard $(SRC)/driver/*.c $(SRC)/driver/*.h)
PROBE_SRCS  := $(wildcard $(SRC)/driver/probes/*.c)

module: $(KOBJ)/kvarena.ko
	@# A module for another release than the running kernel's cannot be
	@# loaded here: say so whenever make picked that kernel by itself.
	$(Q)if [ "$(origin KDIR)" = file ] && [ "$(KVER)" != "$$(uname -r)" ]; then \
		echo "kvarena: the running kernel $$(uname -r) has no headers (/lib/modules/$$(uname -r)/build), so kvarena.ko was built for $(KVER): it loads only into that kernel.  Install the running kernel's headers (Debian: apt-get install linux-headers-$$(uname -r)) and run make again, or boot $(KVER)." >&2; fi

$(KOBJ)/kva_config.h: $(PROBE_SRCS) $(SRC)/driver/probes/run-probes.sh
	@test -n "$(KVER)" || { echo "kvarena: no kernel build tree found (KDIR='$(KDIR)'); install linux-headers" >&2; exit 1; }
	$(Q)mkdir -p $(KOBJ)
	$(Q)$(SRC)/driver/probes/run-probes.sh $(KDIR) $(KOBJ)/probe $@

$(KOBJ)/kvarena.ko: $(KOBJ)/kva_config.h $(DRIVER_SRCS) $(SRC)/Kbuild \
		    $(SRC)/include/uapi/linux/kvarena.h
	$(Q)mkdir -p $(KOBJ)/driver
	$(Q)ln -sf $(SRC)/Kbuild $(KOBJ)/Kbuild
	$(Q)for f in $(SRC)/driver/*.c; do ln -sf $$f $(KOBJ)/driver/; done
	$(Q)$(MAKE) -C $(KDIR) M=$(abspath $(KOBJ)) KVA_SRC=$(SRC) \
		KVA_CONFIG=$(abspath $(KOBJ)) $(if $(filter 1,$(KVA_STRICT)),W=1) \
		$(if $(KVA_SPARSE),C=1) \
		modules >$(KOBJ)/build.log 2>&1 || { cat $(KOBJ)/build.log; exit 1; }
	@# Warnings (W=1: extra compiler checks and kernel-doc; sparse's with
	@# C=1) fail the build.
	$(Q)if grep -i 'warning' $(KOBJ)/build.log | grep -v 'Skipping BTF' && \
	    [ "$(KVA_STRICT)" = 1 ]; then \
		rm -f $@; echo "kvarena: warnings building for $(KVER)" >&2; exit 1; fi
	@# Kbuild turns C=1 off where its checker-valid.sh finds sparse too old
	@# for the kernel: say so, it is not a pass.
	$(Q)if grep -q 'sparse is not available or not up to date' $(KOBJ)/build.log; then \
		echo "kvarena: sparse not run for $(KVER): kbuild finds this sparse too old for it ($$(sparse --version 2>/dev/null || echo none): its headers use __typeof_unqual__, which sparse 0.6.4 cannot parse)" >&2; fi
	@echo "  KMOD    $@"

module-all-kernels:
	$(Q)for k in $(KDIRS_ALL); do \
		$(MAKE) --no-print-directory KDIR=$$k module || exit 1; done
	$(Q)for k in $(ROOT_KERNELS); do \
		$(MAKE) --no-print-directory KREL=$$k module-root || exit 1; done

.PHONY: module-root
module-root:
	@test -n "$(KREL)" || { echo "kvarena: make module-root KREL=<release>, one of: $(ROOT_KERNELS)" >&2; exit 1; }
	$(Q)$(SRC)/selftests/vm/kernels.sh build $(KVA_KERNELS) $(KREL) $(SRC) \
		$(B)/kmod/$(KREL) KVA_STRICT=$(KVA_STRICT) \
		$(if $(KVA_SPARSE),KVA_SPARSE=1)
	@echo "  KMOD    $(B)/kmod/$(KREL)/kvarena.ko (in $(KVA_KERNELS)/$(KREL)/root)"

# checkpatch.pl from the kernel source package, on everything kernel-side.
.PHONY: checkpatch
checkpatch: $(CHECKPATCH)
	$(Q)perl $(CHECKPATCH) --no-tree -q --terse --show-types -f \
		$(SRC)/driver/*.c $(SRC)/driver/*.h $(SRC)/driver/probes/*.c \
		$(SRC)/include/uapi/linux/kvarena.h | \
		grep -v 'total: 0 errors, 0 warnings' | { ! grep .; }

CHECK_NATIVE += checkpatch module-all-kernels

# The uapi header stands alone: C90 (pedantic) and C++, no warnings.
.PHONY: check-uapi
check-uapi:
	$(Q)printf '#include <linux/kvarena.h>\nstruct kvarena_stat kva_s;\n' | \
		$(CC) -std=c90 -Wall -Wextra -pedantic -Werror \
		-I$(SRC)/include/uapi -x c -c -o /dev/null -
	$(Q)printf '#include <linux/kvarena.h>\nstruct kvarena_stat kva_s;\n' | \
		$(CXX) -std=c++11 -Wall -Wextra -pedantic -Werror \
		-I$(SRC)/include/uapi -x c++ -c -o /dev/null -
	@echo "  UAPI    include/uapi/linux/kvarena.h: C90 and C++ clean"

CHECK_NATIVE += check-uapi
