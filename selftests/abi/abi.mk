# SPDX-License-Identifier: GPL-2.0
#
# check-abi: the uapi header, Documentation/kvarena.rst and the selftests
# agree - every command, flag bit and error code the header names is in
# the rst and used by a selftest (selftests/abi/crosscheck.py, which takes
# the lists from the header itself).

.PHONY: check-abi
check-abi:
	@mkdir -p $(B)
	$(Q)python3 $(SRC)/selftests/abi/crosscheck.py $(SRC) > $(B)/abi-crosscheck.tap || \
		{ grep -v '^ok' $(B)/abi-crosscheck.tap; exit 1; }
	@echo "  ABI     $$(tail -1 $(B)/abi-crosscheck.tap | sed 's/^# //')"

CHECK_NATIVE += check-abi
