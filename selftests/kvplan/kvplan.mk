# SPDX-License-Identifier: GPL-2.0
#
# check-kvplan: kvplan against hand-computed figures, once as built and
# once under ASan/UBSan.

.PHONY: check-kvplan
check-kvplan: $(B)/tools/kvplan $(B)/tools/kvplan-san
	$(Q)$(SRC)/selftests/kvplan/kvplan_test.sh $(B)/tools/kvplan
	$(Q)$(SRC)/selftests/kvplan/kvplan_test.sh $(B)/tools/kvplan-san

CHECK_NATIVE += check-kvplan
