# SPDX-License-Identifier: MIT
#
# selftests/gpu/: what run.sh runs on a machine with a GPU.
#
#   gpu_check       the CUDA kernels against the CPU reference (KTAP), then
#                   decode bandwidth against the card's copy bandwidth
#   runtime_check   libkvarena's CUDA backend and shareable frames passed
#                   between processes (KTAP)
#
# Both are built by `make` wherever nvcc is (so CI links them) and need
# neither the kselftest harness nor liburing, which a bare GPU machine
# lacks.  check-gpu-dry (make check) runs run.sh --dry-run: the script
# itself, its steps, results.jsonl and exit status, with runtime_check
# against the test double of the driver.

KVG_DIR := $(B)/selftests/gpu

ifneq ($(NVCC),)
ALL += $(KVG_DIR)/gpu_check $(KVG_DIR)/runtime_check
CHECK_NATIVE += check-gpu-dry

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

$(KVG_DIR)/runtime_check: $(SRC)/selftests/gpu/runtime_check.c $(LIBKVA_A) \
			  $(SRC)/lib/include/kvarena.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) -I$(CUDA_HOME)/include -o $@ $< \
		$(LIBKVA_A) $(LIBKVA_LDLIBS)

check-gpu-dry: $(KVG_DIR)/gpu_check $(KVG_DIR)/runtime_check \
	       $(B)/selftests/lib/libcuda_double.so
	$(Q)rm -rf $(B)/gpu-dry
	$(SRC)/selftests/gpu/run.sh --dry-run --build $(B) $(B)/gpu-dry
	@# every step reported, and the runtime checks passed on the double
	$(Q)for s in build kernels bench runtime; do \
		grep -q "\"kind\":\"step\",\"name\":\"$$s\"" $(B)/gpu-dry/results.jsonl || \
			{ echo "check-gpu-dry: no step $$s in results.jsonl" >&2; exit 1; }; \
	done
	$(Q)grep -q '"name":"frames_exported_by_a_process_that_exited_keep_its_bytes","ok":true' \
		$(B)/gpu-dry/results.jsonl

.PHONY: check-gpu-dry
endif
