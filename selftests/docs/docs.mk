# SPDX-License-Identifier: GPL-2.0
#
# The guide and the README, tested: every command line of
# Documentation/operators.rst and the README runs in the test VM and its
# output is compared with the text (selftests/docs/doc_test.c).
#
#   $(B)/selftests/docs/spec        the records extract.awk finds
#   $(B)/selftests/docs/doc-client  a stand-in serving process, static
#   $(B)/selftests/docs/doc_test    the VM test, with the static kvarenactl,
#                                   kvplan, doc-client and the records in it

DOCS_T := $(B)/selftests/docs
DOCS_SRC := $(SRC)/selftests/docs
# The README first: it loads the module, as a reader would.
DOCS_TESTED := $(SRC)/README $(SRC)/Documentation/operators.rst

$(DOCS_T)/spec: $(DOCS_SRC)/extract.awk $(DOCS_TESTED)
	$(Q)mkdir -p $(@D)
	$(Q)awk -f $(DOCS_SRC)/extract.awk $(DOCS_TESTED) > $@.tmp && mv $@.tmp $@

$(DOCS_T)/doc-client: $(DOCS_SRC)/doc-client.c $(SRC)/include/uapi/linux/kvarena.h
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) -static -o $@ $<

$(DOCS_T)/doc_test: $(DOCS_SRC)/doc_test.c $(DOCS_SRC)/docs.mk \
		$(DOCS_T)/spec $(DOCS_T)/doc-client $(B)/tools/kvarenactl-static \
		$(B)/tools/kvplan-static $(KSFT_HARNESS) \
		$(SRC)/include/uapi/linux/kvarena.h
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) $(KSFT_CFLAGS) -I$(KSFT_INC) \
		-DKVACTL_BIN='"$(abspath $(B)/tools/kvarenactl-static)"' \
		-DKVPLAN_BIN='"$(abspath $(B)/tools/kvplan-static)"' \
		-DCLIENT_BIN='"$(abspath $(DOCS_T)/doc-client)"' \
		-DSPEC='"$(abspath $(DOCS_T)/spec)"' \
		-static -o $@ $<

# Last: the README's part unloads the module and loads it again.
VM_TESTS_LAST += $(DOCS_T)/doc_test

# The synopses of the guide and of kvarenactl(8) have every command and
# option that `kvarenactl help` lists (natively, from the tool's own help).
.PHONY: check-synopsis
check-synopsis: $(B)/tools/kvarenactl
	$(Q)$(PYTHON) $(DOCS_SRC)/synopsis_check.py $(B)/tools/kvarenactl \
		$(SRC)/Documentation/operators.rst \
		$(SRC)/Documentation/man/kvarenactl.8.rst

CHECK_NATIVE += check-synopsis
