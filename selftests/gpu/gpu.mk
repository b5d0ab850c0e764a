# SPDX-License-Identifier: MIT
#
# selftests/gpu/: what run.sh runs on a machine with a GPU.
#
#   gpu_check       the CUDA kernels against the CPU reference (KTAP), then
#                   decode bandwidth against the card's copy bandwidth
#   runtime_check   libkvarena's CUDA backend and shareable frames passed
#                   between processes (KTAP)
#   probe           is there a GPU (run.sh builds it with cc alone first;
#                   built here so that CI compiles it)
#
# Both are built by `make` wherever nvcc is (so CI links them) and need
# neither the kselftest harness nor liburing, which a bare GPU machine
# lacks.  check-gpu-dry (make check) runs run.sh --dry-run: the script
# itself, its steps, results.jsonl and exit status, with runtime_check
# against the test double of the driver; then again with the CPU kernels'
# build broken on purpose (a flag the compiler does not know, as an older
# compiler lacks -mavx512bf16): the build fails, gpu_check is built
# without the SIMD files, the runtime step still runs and passes, and
# every line of results.jsonl is a whole JSON object.

KVG_DIR := $(B)/selftests/gpu

ifneq ($(NVCC),)
ALL += $(KVG_DIR)/gpu_check $(KVG_DIR)/runtime_check $(KVG_DIR)/probe
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

$(KVG_DIR)/probe: $(SRC)/selftests/gpu/probe.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) -I$(CUDA_HOME)/include -o $@ $< -ldl

KVG_RESULTS := $(SRC)/selftests/gpu/results.py

check-gpu-dry: $(KVG_DIR)/gpu_check $(KVG_DIR)/runtime_check \
	       $(B)/selftests/lib/libcuda_double.so
	$(Q)rm -rf $(B)/gpu-dry
	$(SRC)/selftests/gpu/run.sh --dry-run --build $(B) $(B)/gpu-dry
	@# every step reported, and the runtime checks passed on the double
	$(Q)python3 $(KVG_RESULTS) $(B)/gpu-dry/results.jsonl \
		--passed build,runtime --skipped kernels-fp32,kernels-other,bench,llama \
		--check frames_exported_by_a_process_that_exited_keep_its_bytes \
		--check a_tier_agents_async_copies_through_an_import_are_byte_exact \
		--check free_without_a_stream_waits_for_the_device \
		--check free_with_the_stream_named_unmaps_after_the_device
	@# the same with a CPU kernel the compiler cannot build; the build
	@# tree seeded with this one's, so that only the CPU kernels are
	@# built again (and fail)
	$(Q)rm -rf $(B)/gpu-broken && mkdir -p $(B)/gpu-broken/build
	$(Q)cp -a $(B)/lib $(B)/kernels $(B)/gpu-broken/build/
	$(Q)rm -rf $(B)/gpu-broken/build/kernels/libkvkernels.a \
		$(B)/gpu-broken/build/kernels/attn_avx512_dp.o \
		$(B)/gpu-broken/build/kernels/nosimd
	$(Q)KVG_MAKE_ARGS='KVK_FLAGS_attn_avx512_dp.c=-mno-such-isa' \
		$(SRC)/selftests/gpu/run.sh --dry-run --build $(B)/gpu-broken/build \
		$(B)/gpu-broken > $(B)/gpu-broken/run.log 2>&1; \
		rc=$$?; [ $$rc = 1 ] || { cat $(B)/gpu-broken/run.log; \
		echo "check-gpu-dry: broken build: exit $$rc, not 1" >&2; exit 1; }
	$(Q)python3 $(KVG_RESULTS) $(B)/gpu-broken/results.jsonl \
		--failed build --passed build_nosimd,runtime \
		--check free_with_the_stream_named_unmaps_after_the_device
	$(Q)test -x $(B)/gpu-broken/build/selftests/gpu/gpu_check

.PHONY: check-gpu-dry
endif
