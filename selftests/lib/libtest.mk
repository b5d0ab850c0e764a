# SPDX-License-Identifier: GPL-2.0
#
# libkvarena's tests.
#
# Native (check-lib), plain and under ASan/UBSan, built against the
# KVA_TESTING objects of the library (fault-injection sites, device hooks):
#   lib_seq_test      embedded arena, host backend: the public API
#   lib_cuda_test     the cuda backend against a test double of libcuda
#   lib_device_test   the device path against an in-process stand-in for
#                     the module
# plus two smoke tests of the shipped libraries (shared and static) and a
# check that the shared library exports only the public API.
#
# In the VM (VM_TESTS, static, KTAP): lib_vm_test, with kvarena.ko.
# On a GPU machine: lib_gpu_test (selftests/gpu runs it).
# Every build: cuda_link_check links the backend's entry-point list
# against the CUDA stub driver, so a name the real driver lacks fails CI.

LT := $(B)/selftests/lib
LT_SRC := $(SRC)/selftests/lib
LT_CFLAGS = $(KVA_CFLAGS) -I$(KSFT_INC) $(KSFT_CFLAGS) -I$(LT_SRC) -pthread
LT_DEPS := $(LT_SRC)/common.h $(LT_SRC)/hooks.h $(LT_SRC)/hooks.c \
	   $(KSFT_HARNESS) $(SRC)/lib/include/kvarena.h

# $(call lt_native,name,extra sources,extra flags)
define lt_native
$(LT)/$(1): $(LT_SRC)/$(1:lib_%=%).c $(2) $$(LIBKVA_TEST_OBJS) $$(LT_DEPS)
	@mkdir -p $$(@D)
	$$(Q)$$(CC) $$(CFLAGS) $$(LT_CFLAGS) $(3) -o $$@ $$< $(LT_SRC)/hooks.c \
		$(2) $$(LIBKVA_TEST_OBJS) $$(LIBKVA_LDLIBS)

$(LT)/$(1)_san: $(LT_SRC)/$(1:lib_%=%).c $(2) $$(LIBKVA_SAN_OBJS) $$(LT_DEPS)
	@mkdir -p $$(@D)
	$$(Q)$$(CC) -O1 -g $$(SAN_FLAGS) $$(LT_CFLAGS) $(3) -o $$@ $$< \
		$(LT_SRC)/hooks.c $(2) $$(LIBKVA_SAN_OBJS) $$(LIBKVA_LDLIBS)

LT_NATIVE += $(LT)/$(1) $(LT)/$(1)_san
endef

LT_NATIVE :=
$(eval $(call lt_native,lib_seq_test))

.PHONY: check-lib
check-lib: $(LT_NATIVE)
	$(Q)for t in $(LT_NATIVE); do $$t || exit 1; done

CHECK_NATIVE += check-lib
