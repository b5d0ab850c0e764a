# SPDX-License-Identifier: MIT
#
# selftests/gpu/: the CUDA kernels against the CPU reference, and decode
# bandwidth against the card's copy bandwidth.  Built by `make` wherever
# nvcc is (so CI links it); run by run.sh on a machine with a GPU.

KVG_DIR := $(B)/selftests/gpu

ifneq ($(NVCC),)
ALL += $(KVG_DIR)/gpu_check

$(KVG_DIR)/gpu_check: $(SRC)/selftests/gpu/gpu_check.c \
		      $(SRC)/selftests/kernels/fixture.c \
		      $(SRC)/selftests/kernels/fixture.h \
		      $(KVK_CUDA_LIB) $(KVK_LIB) $(KVK_HDRS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(KVA_CFLAGS) -I$(SRC)/kernels -I$(SRC)/selftests/kernels \
		-I$(CUDA_HOME)/include $(CFLAGS) \
		$(SRC)/selftests/gpu/gpu_check.c \
		$(SRC)/selftests/kernels/fixture.c \
		$(KVK_CUDA_LIB) $(KVK_LIB) $(KVK_CUDA_LDLIBS) -o $@
endif
