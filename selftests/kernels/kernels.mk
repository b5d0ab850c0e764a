# SPDX-License-Identifier: MIT
#
# selftests/kernels/: the CPU attention kernels against the reference.
#
#   make check-kernels    the public headers together (C and C++), then
#                         test_attn on every ISA this CPU has, then the
#                         ASan/UBSan build on the reference and scalar
#                         paths (all shapes) and the SIMD paths (--quick),
#                         and, with nvcc, cuda_args_test: the CUDA entry
#                         points' argument checks, which need no device

KVT_DIR  := $(B)/selftests/kernels
KVT_SRCS := $(SRC)/selftests/kernels/test_attn.c \
	    $(SRC)/selftests/kernels/fixture.c
KVT_HDRS := $(SRC)/selftests/kernels/fixture.h $(KVK_HDRS)
KVT_CFLAGS := $(KVA_CFLAGS) -I$(SRC)/kernels -I$(SRC)/selftests/kernels

ALL += $(KVT_DIR)/test_attn $(KVT_DIR)/test_attn-san
CHECK_NATIVE += check-kernels
.PHONY: check-kernels

$(KVT_DIR)/test_attn: $(KVT_SRCS) $(KVT_HDRS) $(KVK_LIB)
	@mkdir -p $(@D)
	$(Q)$(CC) $(KVT_CFLAGS) $(CFLAGS) $(KVT_SRCS) $(KVK_LIB) \
		$(KVK_LDLIBS) -o $@

$(KVT_DIR)/test_attn-san: $(KVT_SRCS) $(KVT_HDRS) $(KVK_LIB_SAN)
	@mkdir -p $(@D)
	$(Q)$(CC) $(KVT_CFLAGS) $(CFLAGS) $(SAN_FLAGS) $(KVT_SRCS) \
		$(KVK_LIB_SAN) $(KVK_LDLIBS) -o $@

ifneq ($(NVCC),)
# The CUDA entry points' argument checks, with no device (KTAP).
$(KVT_DIR)/cuda_args_test: $(SRC)/selftests/kernels/cuda_args_test.c \
			   $(KVK_CUDA_LIB) $(KVK_LIB) $(KVK_HDRS) $(KSFT_HARNESS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(KVT_CFLAGS) $(CFLAGS) -I$(KSFT_INC) $(KSFT_CFLAGS) $< \
		$(KVK_CUDA_LIB) $(KVK_LIB) $(KVK_CUDA_LDLIBS) -o $@

ALL += $(KVT_DIR)/cuda_args_test
KVT_CUDA_CHECK := $(KVT_DIR)/cuda_args_test
endif

check-kernels: $(KVT_DIR)/test_attn $(KVT_DIR)/test_attn-san $(KVT_CUDA_CHECK)
	@# kvarena.h and the kernels' headers together, in C and in C++
	$(Q)$(CC) $(KVT_CFLAGS) -fsyntax-only \
		$(SRC)/selftests/kernels/headers_test.c
	$(Q)$(CXX) -std=c++11 -Wall -Wextra -I$(SRC)/include \
		-I$(SRC)/lib/include -I$(SRC)/kernels -x c++ -fsyntax-only \
		$(SRC)/selftests/kernels/headers_test.c
	$(KVT_DIR)/test_attn
	$(KVT_DIR)/test_attn-san --isa scalar
	$(KVT_DIR)/test_attn-san --quick --isa avx2 --isa avx512
	$(if $(KVT_CUDA_CHECK),$(KVT_CUDA_CHECK))
