# SPDX-License-Identifier: GPL-2.0
#
# Native tests of the core allocator, plain and under ASan/UBSan.

CORE_SRC  := $(SRC)/driver/core.c
CORE_DEPS := $(CORE_SRC) $(SRC)/driver/core.h $(SRC)/driver/core_shim.h
CORE_TEST := $(B)/selftests/core/core_test
CORE_TEST_SAN := $(B)/selftests/core/core_test_san

$(CORE_TEST): $(SRC)/selftests/core/core_test.c $(CORE_DEPS) $(KSFT_HARNESS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) -I$(SRC)/driver -I$(KSFT_INC) $(KSFT_CFLAGS) \
		-o $@ $< $(CORE_SRC)

$(CORE_TEST_SAN): $(SRC)/selftests/core/core_test.c $(CORE_DEPS) $(KSFT_HARNESS)
	@mkdir -p $(@D)
	$(Q)$(CC) -O1 -g $(SAN_FLAGS) $(KVA_CFLAGS) -I$(SRC)/driver \
		-I$(KSFT_INC) $(KSFT_CFLAGS) -o $@ $< $(CORE_SRC)

.PHONY: check-core
check-core: $(CORE_TEST) $(CORE_TEST_SAN)
	$(Q)$(CORE_TEST)
	$(Q)$(CORE_TEST_SAN)

CHECK_NATIVE += check-core

# libFuzzer over the core allocator, when clang's fuzzer runtime is there
# (clang and libclang-rt-14-dev).  `make fuzz-core FUZZ_SECONDS=600` for
# a longer run; check-core runs it for FUZZ_SECONDS (20 by default).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 20
CORE_FUZZ    := $(B)/selftests/core/fuzz_core
HAVE_FUZZER  := $(shell echo 'int LLVMFuzzerTestOneInput(const char *d, long n){return 0;}' | \
		  $(FUZZ_CC) -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null && echo y)

$(CORE_FUZZ): $(SRC)/selftests/core/fuzz_core.c $(CORE_DEPS)
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -D_GNU_SOURCE -I$(SRC)/driver \
		-o $@ $< $(CORE_SRC)

.PHONY: fuzz-core
ifeq ($(HAVE_FUZZER),y)
fuzz-core: $(CORE_FUZZ)
	@mkdir -p $(B)/selftests/core/corpus
	$(Q)$(CORE_FUZZ) -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
		-print_final_stats=1 $(B)/selftests/core/corpus \
		>$(B)/selftests/core/fuzz.log 2>&1 || \
		{ tail -40 $(B)/selftests/core/fuzz.log; exit 1; }
	@grep -E '^(Done|stat::number_of_executed_units)' $(B)/selftests/core/fuzz.log
else
fuzz-core:
	@echo "fuzz-core: skipped: $(FUZZ_CC) with -fsanitize=fuzzer not available (apt-get install clang libclang-rt-14-dev)"
endif
check-core: fuzz-core
