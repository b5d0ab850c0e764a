# SPDX-License-Identifier: GPL-2.0
#
# check-kvsim: kvsim against hand-computed figures and malformed traces,
# once as built and once under ASan/UBSan, and the issue's figures on the
# real traces (Azure conversation, Mooncake), which take about a second.
# KVA_TRACES names the directory of the traces; without it, the
# project's ../shared/data/traces (or shared/data/traces) is used, and
# where neither exists those tests are reported as skipped.

KVA_TRACES ?= $(firstword $(wildcard $(SRC)/shared/data/traces \
				    $(SRC)/../shared/data/traces))

.PHONY: check-kvsim
check-kvsim: $(B)/tools/kvsim $(B)/tools/kvsim-san
	$(Q)$(SRC)/selftests/kvsim/kvsim_test.sh $(B)/tools/kvsim "$(KVA_TRACES)"
	$(Q)$(SRC)/selftests/kvsim/kvsim_test.sh $(B)/tools/kvsim-san "$(KVA_TRACES)"

CHECK_NATIVE += check-kvsim
