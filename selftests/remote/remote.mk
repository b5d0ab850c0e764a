# SPDX-License-Identifier: GPL-2.0
#
# The remote tier's tests.
#
#   check-remote   native: the block format and the key slots against
#                  their published vectors (block_test, under ASan/UBSan);
#                  the format against kvblock_spec.py, its specification
#                  written again in Python, both ways (spec_check.py);
#                  the cluster client (rc_repl, under
#                  ASan/UBSan) against Redis processes the test starts on
#                  127.0.0.1 - a single server and a 3+3 cluster - with
#                  redis-py (python3-redis) as the other client, through a
#                  slot migration, a closed port, a slow node, a manual
#                  failover and a killed master (cluster_test.py); the
#                  benchmark runs once, small (bench.py)
#   bench-remote   kvbench remote's figures: a block from one server and
#                  from a 3+3 cluster vs recomputing it, vs redis-benchmark

REMOTE_T := $(B)/selftests/remote
# As tools/common/common.mk's KVT_REMOTE_* (read after this file).
REMOTE_SRCS := $(SRC)/tools/common/kvblock.c $(SRC)/tools/common/rcluster.c \
	       $(SRC)/lib/src/sha256.c
REMOTE_HDRS := $(SRC)/tools/common/kvblock.h $(SRC)/tools/common/rcluster.h \
	       $(SRC)/lib/src/sha256.h
REMOTE_CC = $(CC) $(CFLAGS) $(KVA_CFLAGS) $(KSFT_CFLAGS) $(SAN_FLAGS) \
	-I$(KSFT_INC) -I$(SRC)/tools/common -I$(SRC)/lib/src

$(REMOTE_T)/block_test: $(SRC)/selftests/remote/block_test.c \
		$(REMOTE_SRCS) $(REMOTE_HDRS) $(KSFT_HARNESS)
	$(Q)mkdir -p $(@D)
	$(Q)$(REMOTE_CC) -o $@ $(filter %.c,$^) -lhiredis

$(REMOTE_T)/block_vector: $(SRC)/selftests/remote/block_vector.c \
		$(REMOTE_SRCS) $(REMOTE_HDRS)
	$(Q)mkdir -p $(@D)
	$(Q)$(REMOTE_CC) -o $@ $(filter %.c,$^) -lhiredis

$(REMOTE_T)/rc_repl: $(SRC)/selftests/remote/rc_repl.c \
		$(REMOTE_SRCS) $(REMOTE_HDRS)
	$(Q)mkdir -p $(@D)
	$(Q)$(REMOTE_CC) -o $@ $(filter %.c,$^) -lhiredis

# (tools/common/common.mk, read after this file, says whether hiredis is
# there: the recipe looks when it runs.)
.PHONY: check-remote check-remote-hiredis
check-remote: check-remote-hiredis
	$(Q)$(MAKE) --no-print-directory $(REMOTE_T)/block_test $(REMOTE_T)/rc_repl \
		$(REMOTE_T)/block_vector
	$(Q)$(REMOTE_T)/block_test
	$(Q)$(PYTHON) $(SRC)/selftests/remote/spec_check.py $(REMOTE_T)/block_vector
	$(Q)$(PYTHON) $(SRC)/selftests/remote/cluster_test.py $(REMOTE_T)/rc_repl
	$(Q)$(MAKE) --no-print-directory $(B)/tools/kvbench
	$(Q)$(PYTHON) $(SRC)/selftests/remote/bench.py $(B)/tools/kvbench \
		--blocks 8 --reps 1 --threads 1 >/dev/null
	@echo "  REMOTE  kvbench remote runs (make bench-remote for its figures)"

# The benchmark, with its figures (Documentation/remote.rst, "What it
# costs"): 64 blocks of 2 MiB, best of 5.
.PHONY: bench-remote
bench-remote: $(B)/tools/kvbench
	$(Q)$(PYTHON) $(SRC)/selftests/remote/bench.py $(B)/tools/kvbench

check-remote-hiredis:
	$(Q)$(if $(KVT_HIREDIS),true,echo "check-remote: hiredis not found (apt-get install libhiredis-dev redis-server redis-tools python3-redis)" >&2; exit 1)

CHECK_NATIVE += check-remote
