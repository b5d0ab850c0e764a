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
