# SPDX-License-Identifier: GPL-2.0
#
# The kselftest harness and checkpatch come from Debian's linux-source-6.1
# package, extracted at build time (never committed).  One tar pass takes
# both (about 11 s: the tarball is one xz stream).

KSRC_TAR ?= $(lastword $(sort $(wildcard /usr/src/linux-source-6.1.tar.xz \
					 /usr/src/linux-source-*.tar.xz)))
KSRC     := $(B)/ksrc
KSFT_INC := $(KSRC)/tools/testing/selftests
KSFT_HARNESS := $(KSFT_INC)/kselftest_harness.h
CHECKPATCH := $(KSRC)/scripts/checkpatch.pl

$(KSRC)/.extracted:
	@test -n "$(KSRC_TAR)" || { echo "kvarena: /usr/src/linux-source-6.1.tar.xz not found; apt-get install linux-source-6.1" >&2; exit 1; }
	$(Q)mkdir -p $(KSRC)
	$(Q)tar -xJf $(KSRC_TAR) -C $(KSRC) --strip-components=1 --wildcards \
		'*/tools/testing/selftests/kselftest.h' \
		'*/tools/testing/selftests/kselftest_harness.h' \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
		'*/scripts/const_structs.checkpatch'
	$(Q)touch $@

$(KSFT_HARNESS) $(CHECKPATCH): $(KSRC)/.extracted
