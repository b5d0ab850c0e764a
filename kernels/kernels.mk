# SPDX-License-Identifier: MIT
#
# kernels/: attention over the frame layout.
#
#   $(B)/kernels/libkvkernels.a       CPU kernels (reference, scalar, AVX2,
#                                     AVX-512; chosen at run time)
#   $(B)/kernels/libkvkernels-san.a   the same under ASan/UBSan, for tests
#   $(B)/kernels/libkvkernels_cuda.a  CUDA kernels, sm_80 and sm_90 (needs
#                                     nvcc; link with $(KVK_CUDA_LDLIBS):
#                                     the static cudart, so that a program
#                                     needs no library path to run)
#
# KVK_CUDA_ARCHS chooses the -gencode targets (selftests/gpu/run.sh builds
# sm_90 alone, in half the time); the newest also goes in as PTX.
#
# Each ISA file is compiled with its own -m flags; nothing else is, so the
# library runs on any x86-64 and picks its path with __builtin_cpu_supports.

KVK_DIR      := $(B)/kernels
KVK_SRCS     := attn_cpu.c attn_ref.c attn_scalar.c pool.c attn_avx2.c \
		attn_avx512.c attn_avx512_dp.c
# KVK_NO_SIMD=1: the CPU kernels without the x86 SIMD files, into a
# directory of their own (selftests/gpu/run.sh falls back to it when a
# compiler cannot build them, so that the CUDA checks still run).
KVK_CPU_DIR  := $(KVK_DIR)
ifneq ($(KVK_NO_SIMD),)
KVK_SRCS     := attn_cpu.c attn_ref.c attn_scalar.c pool.c
KVK_CPU_DIR  := $(KVK_DIR)/nosimd
KVK_FLAGS_attn_cpu.c := -DKVK_NO_SIMD
endif
KVK_HDRS     := $(wildcard $(SRC)/kernels/*.h) $(SRC)/include/kvarena/layout.h
KVK_CFLAGS   := $(KVA_CFLAGS) -I$(SRC)/kernels -pthread
KVK_FLAGS_attn_avx2.c   := -mavx2 -mfma -mf16c
KVK_FLAGS_attn_avx512.c := -mavx512f -mavx512bw -mavx512dq -mavx512vl \
			   -mfma -mf16c
KVK_FLAGS_attn_avx512_dp.c := $(KVK_FLAGS_attn_avx512.c) -mavx512vbmi \
			       -mavx512bf16

KVK_LIB      := $(KVK_CPU_DIR)/libkvkernels.a
KVK_LIB_SAN  := $(KVK_CPU_DIR)/libkvkernels-san.a
KVK_OBJS     := $(KVK_SRCS:%.c=$(KVK_CPU_DIR)/%.o)
KVK_OBJS_SAN := $(KVK_SRCS:%.c=$(KVK_CPU_DIR)/san/%.o)
# Libraries a program linking libkvkernels.a needs after it.
KVK_LDLIBS   := -pthread -lm

ALL += $(KVK_LIB) $(KVK_LIB_SAN)

$(KVK_CPU_DIR)/%.o: $(SRC)/kernels/%.c $(KVK_HDRS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(KVK_CFLAGS) $(CFLAGS) -O3 $(KVK_FLAGS_$(notdir $<)) \
		-c $< -o $@

# -O1: the sanitizers' instrumentation of the inlined SIMD kernels takes
# minutes to compile at -O2 and finds the same things.
$(KVK_CPU_DIR)/san/%.o: $(SRC)/kernels/%.c $(KVK_HDRS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(KVK_CFLAGS) $(CFLAGS) -O1 $(SAN_FLAGS) \
		$(KVK_FLAGS_$(notdir $<)) -c $< -o $@

$(KVK_LIB): $(KVK_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^

$(KVK_LIB_SAN): $(KVK_OBJS_SAN)
	$(Q)rm -f $@ && ar rcs $@ $^

# ---- CUDA ----------------------------------------------------------------

KVK_CUDA_LIB  := $(KVK_DIR)/libkvkernels_cuda.a
KVK_CU_SRCS   := $(wildcard $(SRC)/kernels/cuda/*.cu)
KVK_CU_HDRS   := $(wildcard $(SRC)/kernels/cuda/*.cuh) $(KVK_HDRS)
KVK_CU_OBJS   := $(KVK_CU_SRCS:$(SRC)/kernels/cuda/%.cu=$(KVK_DIR)/cuda/%.o)
# Cubins for each of KVK_CUDA_ARCHS (newest last), and PTX for the newest,
# which the driver compiles for a GPU newer than all of them.
KVK_CUDA_ARCHS ?= 80 90
KVK_CUDA_PTX  := $(lastword $(KVK_CUDA_ARCHS))
KVK_NVCC_FLAGS := -O3 -std=c++17 -I$(SRC)/include -I$(SRC)/kernels \
		  $(foreach a,$(KVK_CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
		  -gencode arch=compute_$(KVK_CUDA_PTX),code=compute_$(KVK_CUDA_PTX) \
		  -Xcompiler -Wall,-Wextra,-Wno-unused-parameter \
		  -Xptxas -warn-spills
KVK_CUDA_LDLIBS := -L$(CUDA_HOME)/lib64 -lcudart_static -lstdc++ -ldl -lrt \
		   -pthread -lm

ifneq ($(NVCC),)
ALL += $(KVK_CUDA_LIB)

$(KVK_DIR)/cuda/%.o: $(SRC)/kernels/cuda/%.cu $(KVK_CU_HDRS)
	@mkdir -p $(@D)
	$(Q)$(NVCC) $(KVK_NVCC_FLAGS) $(KVK_NVCC_EXTRA) -c $< -o $@

$(KVK_CUDA_LIB): $(KVK_CU_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^
else
ALL += kernels-cuda-skip
.PHONY: kernels-cuda-skip
kernels-cuda-skip:
	@echo "kernels: skipping CUDA: nvcc not found (CUDA_HOME=$(CUDA_HOME))"
endif
