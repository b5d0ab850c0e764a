# SPDX-License-Identifier: GPL-2.0
#
# libkvarena's tests.
#
# Native (check-lib), plain and under ASan/UBSan, built against the
# KVA_TESTING objects of the library (fault-injection and pass-count
# sites):
#   lib_seq_test      embedded arena, host backend: the public API, and
#                     what needs no module (mode choice, bad arguments)
#   lib_cuda_test     the cuda backend against a test double of libcuda,
#                     run twice: a device that keeps up, and one that runs
#                     queued work only when waited for (CUDA_DOUBLE_ASYNC=1)
# plus two smoke tests of the shipped libraries (shared and static) and a
# check that the shared library exports only the public API.
#
# In the VM (VM_TESTS, static, KTAP), with kvarena.ko:
#   lib_vm_test         the shipped libkvarena.a
#   lib_vm_device_test  the device path, over ioctl and io_uring, from the
#                       KVA_TESTING objects
#   lib_vm_cuda_test    the cuda backend in device mode, with the test
#                       double of libcuda linked in
# On a GPU machine: selftests/gpu/runtime_check (selftests/gpu/run.sh).
# Every build: cuda_link_check links the backend's entry-point list
# against the CUDA stub driver, so a name the real driver lacks fails CI.

LIBKVA_T := $(B)/selftests/lib
LIBKVA_T_SRC := $(SRC)/selftests/lib
LIBKVA_T_CFLAGS = $(KVA_CFLAGS) -I$(KSFT_INC) $(KSFT_CFLAGS) -I$(LIBKVA_T_SRC) -pthread
LIBKVA_T_DEPS := $(LIBKVA_T_SRC)/common.h $(LIBKVA_T_SRC)/hooks.h $(LIBKVA_T_SRC)/hooks.c \
	   $(KSFT_HARNESS) $(SRC)/lib/include/kvarena.h

# $(call libkva_native_test,name,extra sources,extra prerequisites,extra libs)
define libkva_native_test
$(LIBKVA_T)/$(1): $(LIBKVA_T_SRC)/$(1:lib_%=%).c $(2) $(3) $$(LIBKVA_TEST_OBJS) $$(LIBKVA_T_DEPS)
	@mkdir -p $$(@D)
	$$(Q)$$(CC) $$(CFLAGS) $$(LIBKVA_T_CFLAGS) -o $$@ $$< $(LIBKVA_T_SRC)/hooks.c \
		$(2) $$(LIBKVA_TEST_OBJS) $(4) $$(LIBKVA_LDLIBS)

$(LIBKVA_T)/$(1)_san: $(LIBKVA_T_SRC)/$(1:lib_%=%).c $(2) $(3) $$(LIBKVA_SAN_OBJS) $$(LIBKVA_T_DEPS)
	@mkdir -p $$(@D)
	$$(Q)$$(CC) -O1 -g $$(SAN_FLAGS) $$(LIBKVA_T_CFLAGS) -o $$@ $$< \
		$(LIBKVA_T_SRC)/hooks.c $(2) $$(LIBKVA_SAN_OBJS) $(4) $$(LIBKVA_LDLIBS)

LIBKVA_T_NATIVE += $(LIBKVA_T)/$(1) $(LIBKVA_T)/$(1)_san
endef

LIBKVA_T_NATIVE :=
$(eval $(call libkva_native_test,lib_seq_test))
# Prefix sharing, embedded; it also tests the library's own SHA-256.
$(eval $(call libkva_native_test,lib_prefix_test))
$(LIBKVA_T)/lib_prefix_test $(LIBKVA_T)/lib_prefix_test_san: \
	LIBKVA_T_CFLAGS += -I$(SRC)/lib/src

ifneq ($(LIBKVA_HAVE_CUDA),)
# The test double of libcuda: a shared object for tests only.
LIBKVA_T_DOUBLE := $(LIBKVA_T)/libcuda_double.so
LIBKVA_T_DOUBLE_LIBS = -I$(CUDA_HOME)/include -L$(LIBKVA_T) -lcuda_double \
		 -Wl,-rpath,$(abspath $(LIBKVA_T))

$(LIBKVA_T_DOUBLE): $(LIBKVA_T_SRC)/cuda_double.c $(LIBKVA_T_SRC)/cuda_double.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) -I$(CUDA_HOME)/include -fPIC -shared \
		-o $@ $< -lpthread

# A copy under another name, which the test does not link: the library
# opens it, and the test sees whether it is still loaded after kva_close().
LIBKVA_T_DOUBLE_COPY := $(LIBKVA_T)/libcuda_double_unlinked.so
$(LIBKVA_T_DOUBLE_COPY): $(LIBKVA_T_DOUBLE)
	$(Q)cp $< $@

$(eval $(call libkva_native_test,lib_cuda_test,,$(LIBKVA_T_DOUBLE) $(LIBKVA_T_DOUBLE_COPY),$(LIBKVA_T_DOUBLE_LIBS) -ldl))
endif

ifneq ($(LIBKVA_HAVE_CUDA),)
# Proof, in every build, that the CUDA pieces compile and link: the
# backend's entry points against the stub driver.
LIBKVA_T_CUDA_STUBS := $(CUDA_HOME)/lib64/stubs
LIBKVA_T_CUDA_LINK  := -L$(LIBKVA_T_CUDA_STUBS) -Wl,--no-as-needed -lcuda

$(LIBKVA_T)/cuda_link_check: $(LIBKVA_T_SRC)/cuda_link_check.c $(SRC)/lib/src/cuda_syms.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) -I$(SRC)/lib/src \
		-I$(CUDA_HOME)/include -o $@ $< $(LIBKVA_T_CUDA_LINK)

ALL += $(LIBKVA_T)/cuda_link_check
endif

# The VM test: static, without dlopen (cuda_noload.o stands in for the
# driver loader, ahead of the archive).
LIBKVA_T_NOLOAD := $(if $(LIBKVA_HAVE_CUDA),$(B)/lib/obj/cuda_noload.o)

$(LIBKVA_T)/lib_vm_test: $(LIBKVA_T_SRC)/vm_test.c $(LIBKVA_A) $(LIBKVA_T_NOLOAD) $(LIBKVA_T_DEPS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LIBKVA_T_CFLAGS) -static -o $@ $< $(LIBKVA_T_NOLOAD) \
		$(LIBKVA_A) -luring -lpthread

VM_TESTS += $(LIBKVA_T)/lib_vm_test

# The device path's VM tests: static, from the KVA_TESTING objects (for
# the pass-count and fault sites), without dlopen: cuda_load.o is left
# out, and kva_cuda_load() comes from cuda_noload.o or, for the cuda
# test, from cuda_static.c, which hands the library the entry points of
# the test double linked in.
LIBKVA_T_VM_OBJS := $(filter-out %/cuda_load.o,$(LIBKVA_TEST_OBJS))
LIBKVA_T_VM_NOLOAD := $(if $(LIBKVA_HAVE_CUDA),$(B)/lib/test-obj/cuda_noload.o)
LIBKVA_T_VM_DEPS := $(LIBKVA_T_DEPS) $(LIBKVA_T_SRC)/module.h

$(LIBKVA_T)/lib_vm_device_test: $(LIBKVA_T_SRC)/vm_device_test.c $(LIBKVA_T_VM_OBJS) \
		$(LIBKVA_T_VM_NOLOAD) $(LIBKVA_T_VM_DEPS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LIBKVA_T_CFLAGS) -static -o $@ $< \
		$(LIBKVA_T_SRC)/hooks.c $(LIBKVA_T_VM_NOLOAD) $(LIBKVA_T_VM_OBJS) \
		-luring -lpthread

VM_TESTS += $(LIBKVA_T)/lib_vm_device_test

$(LIBKVA_T)/lib_vm_gang_test: $(LIBKVA_T_SRC)/vm_gang_test.c $(LIBKVA_T_VM_OBJS) \
		$(LIBKVA_T_VM_NOLOAD) $(LIBKVA_T_VM_DEPS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LIBKVA_T_CFLAGS) -static -o $@ $< \
		$(LIBKVA_T_SRC)/hooks.c $(LIBKVA_T_VM_NOLOAD) $(LIBKVA_T_VM_OBJS) \
		-luring -lpthread

VM_TESTS += $(LIBKVA_T)/lib_vm_gang_test

# Prefix sharing in device mode: host memory, and with a CUDA toolkit the
# cuda backend against the test double linked in.
LIBKVA_T_PREFIX_SRCS := $(if $(LIBKVA_HAVE_CUDA),$(LIBKVA_T_SRC)/cuda_static.c \
			$(LIBKVA_T_SRC)/cuda_double.c,$(LIBKVA_T_VM_NOLOAD))
LIBKVA_T_PREFIX_FLAGS := $(if $(LIBKVA_HAVE_CUDA),-DKVA_TEST_CUDA -I$(SRC)/lib/src \
			 -I$(CUDA_HOME)/include)

$(LIBKVA_T)/lib_vm_prefix_test: $(LIBKVA_T_SRC)/vm_prefix_test.c $(LIBKVA_T_PREFIX_SRCS) \
		$(LIBKVA_T_VM_OBJS) $(LIBKVA_T_VM_DEPS) \
		$(if $(LIBKVA_HAVE_CUDA),$(LIBKVA_T_SRC)/cuda_double.h $(SRC)/lib/src/cuda_syms.h)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LIBKVA_T_CFLAGS) $(LIBKVA_T_PREFIX_FLAGS) -static -o $@ $< \
		$(LIBKVA_T_PREFIX_SRCS) $(LIBKVA_T_SRC)/hooks.c $(LIBKVA_T_VM_OBJS) \
		-luring -lpthread

VM_TESTS += $(LIBKVA_T)/lib_vm_prefix_test

ifneq ($(LIBKVA_HAVE_CUDA),)
$(LIBKVA_T)/lib_vm_cuda_test: $(LIBKVA_T_SRC)/vm_cuda_test.c $(LIBKVA_T_SRC)/cuda_static.c \
		$(LIBKVA_T_SRC)/cuda_double.c $(LIBKVA_T_SRC)/cuda_double.h \
		$(SRC)/lib/src/cuda_syms.h $(LIBKVA_T_VM_OBJS) $(LIBKVA_T_VM_DEPS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LIBKVA_T_CFLAGS) -I$(SRC)/lib/src -I$(CUDA_HOME)/include \
		-static -o $@ $< $(LIBKVA_T_SRC)/cuda_static.c \
		$(LIBKVA_T_SRC)/cuda_double.c $(LIBKVA_T_SRC)/hooks.c \
		$(LIBKVA_T_VM_OBJS) -luring -lpthread

VM_TESTS += $(LIBKVA_T)/lib_vm_cuda_test
endif

# The shipped libraries, as a user links them: shared, static, and from
# a DESTDIR install through pkg-config.
$(LIBKVA_T)/abi_test_shared: $(LIBKVA_T_SRC)/abi_test.c $(LIBKVA_SO)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -I$(SRC)/lib/include -I$(SRC)/include -o $@ $< \
		-L$(B)/lib -lkvarena -Wl,-rpath,$(abspath $(B)/lib)

$(LIBKVA_T)/abi_test_static: $(LIBKVA_T_SRC)/abi_test.c $(LIBKVA_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -I$(SRC)/lib/include -I$(SRC)/include -o $@ $< \
		$(LIBKVA_A) $(LIBKVA_LDLIBS)

LIBKVA_T_DESTDIR := $(abspath $(LIBKVA_T))/destdir
LIBKVA_T_PC = PKG_CONFIG_PATH=$(LIBKVA_T_DESTDIR)$(LIBDIR)/pkgconfig \
	PKG_CONFIG_SYSROOT_DIR=$(LIBKVA_T_DESTDIR) pkg-config

.PHONY: check-lib-install
check-lib-install: $(LIBKVA_A) $(LIBKVA_SO) $(LIBKVA_PC)
	$(Q)rm -rf $(LIBKVA_T_DESTDIR)
	$(Q)$(MAKE) --no-print-directory install-lib DESTDIR=$(LIBKVA_T_DESTDIR)
	$(Q)$(CC) $(CFLAGS) -o $(LIBKVA_T)/abi_test_installed $(LIBKVA_T_SRC)/abi_test.c \
		$$($(LIBKVA_T_PC) --cflags --libs kvarena)
	$(Q)LD_LIBRARY_PATH=$(LIBKVA_T_DESTDIR)$(LIBDIR) $(LIBKVA_T)/abi_test_installed \
		> /dev/null
	@# libkvarena.a with what its Libs.private name (glibc stays shared:
	@# a static glibc warns about the CUDA loader's dlopen()).
	$(Q)$(CC) $(CFLAGS) -o $(LIBKVA_T)/abi_test_installed_static \
		$(LIBKVA_T_SRC)/abi_test.c $$($(LIBKVA_T_PC) --cflags kvarena) \
		$$($(LIBKVA_T_PC) --static --libs kvarena | \
		   sed 's/-lkvarena/-Wl,-Bstatic -lkvarena -Wl,-Bdynamic/')
	$(Q)$(LIBKVA_T)/abi_test_installed_static > /dev/null

.PHONY: check-lib
check-lib: $(LIBKVA_T_NATIVE) $(LIBKVA_T)/abi_test_shared $(LIBKVA_T)/abi_test_static \
	   check-lib-install
	$(Q)for t in $(LIBKVA_T_NATIVE); do $$t || exit 1; done
	@# The cuda tests again with a device that runs queued work only when
	@# waited for (cuda_double.c): every path, against an unmap under it.
	$(Q)for t in $(filter %/lib_cuda_test %/lib_cuda_test_san,$(LIBKVA_T_NATIVE)); do \
		CUDA_DOUBLE_ASYNC=1 $$t || exit 1; done
	$(Q)$(LIBKVA_T)/abi_test_shared > /dev/null
	$(Q)$(LIBKVA_T)/abi_test_static > /dev/null
	@# The shared library exports the public API and nothing else.
	$(Q)! nm -D --defined-only $(LIBKVA_SO) | awk '{ print $$3 }' | \
		grep -v -e '^kva_' -e '^KVARENA_1\.[0-4]$$'
	@# The public header is C++ too.
	$(Q)$(CXX) -std=c++11 -Wall -Wextra -fsyntax-only \
		-I$(SRC)/lib/include -I$(SRC)/include $(LIBKVA_T_SRC)/header_cxx_test.cc

CHECK_NATIVE += check-lib
