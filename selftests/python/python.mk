# SPDX-License-Identifier: GPL-2.0
#
# The Python binding's tests (KTAP, selftests/python/ktap.py), run with
# the system python3 ($(PYTHON)) against the libkvarena.so.1 of this build
# (KVARENA_LIBRARY).
#
#   check-python   native, embedded arenas:
#                  test_embedded.py     the API, errors, views through the
#                                       array interface and DLPack (numpy),
#                                       struct layouts against the C headers
#                  test_torch.py        torch.from_dlpack() views; torch's
#                                       scaled-dot-product attention over
#                                       them against kvattn (the CPU
#                                       kernels, as libkvattn_test.so) on
#                                       the same memory
#                  test_cuda_double.py  a CUDA arena's views (DLPack CUDA
#                                       device, __cuda_array_interface__)
#                                       over the test double of libcuda
#   VM: see vm.mk in this directory.

PY_T     := $(B)/selftests/python
PY_T_SRC := $(SRC)/selftests/python
PY_ENV    = PYTHONPATH=$(SRC)/lib/python:$(PY_T_SRC) \
	    PYTHONPYCACHEPREFIX=$(abspath $(B))/pycache \
	    KVARENA_LIBRARY=$(abspath $(LIBKVA_SO))

$(PY_T)/layout_dump: $(PY_T_SRC)/layout_dump.c $(SRC)/lib/include/kvarena.h \
		     $(SRC)/include/uapi/linux/kvarena.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) -o $@ $<

# The CPU attention kernels as a shared object, for ctypes.  The objects
# are the kernels' own sources, compiled position-independent.
PY_KVATTN_OBJS := $(KVK_SRCS:%.c=$(PY_T)/kvattn/%.o)

$(PY_T)/kvattn/%.o: $(SRC)/kernels/%.c $(KVK_HDRS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(KVK_CFLAGS) $(CFLAGS) -fPIC $(KVK_FLAGS_$(notdir $<)) \
		-c $< -o $@

$(PY_T)/libkvattn_test.so: $(PY_KVATTN_OBJS)
	$(Q)$(CC) -shared -o $@ $^ $(KVK_LDLIBS)

PY_T_NATIVE := $(PY_T)/layout_dump $(PY_T)/libkvattn_test.so $(LIBKVA_SO) \
	       $(LIBKVA_T_DOUBLE)

.PHONY: check-python
check-python: $(PY_T_NATIVE)
	$(Q)$(PY_ENV) KVA_LAYOUT_DUMP=$(PY_T)/layout_dump \
		$(PYTHON) $(PY_T_SRC)/test_embedded.py
	$(Q)$(PY_ENV) KVA_KVATTN_LIBRARY=$(abspath $(PY_T))/libkvattn_test.so \
		$(PYTHON) $(PY_T_SRC)/test_torch.py
ifneq ($(LIBKVA_T_DOUBLE),)
	$(Q)$(PY_ENV) KVA_CUDA_DOUBLE=$(abspath $(LIBKVA_T_DOUBLE)) \
		$(PYTHON) $(PY_T_SRC)/test_cuda_double.py
endif

CHECK_NATIVE += check-python
