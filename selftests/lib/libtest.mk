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

# $(call lt_native,name,extra sources,extra prerequisites,extra libs)
define lt_native
$(LT)/$(1): $(LT_SRC)/$(1:lib_%=%).c $(2) $(3) $$(LIBKVA_TEST_OBJS) $$(LT_DEPS)
	@mkdir -p $$(@D)
	$$(Q)$$(CC) $$(CFLAGS) $$(LT_CFLAGS) -o $$@ $$< $(LT_SRC)/hooks.c \
		$(2) $$(LIBKVA_TEST_OBJS) $(4) $$(LIBKVA_LDLIBS)

$(LT)/$(1)_san: $(LT_SRC)/$(1:lib_%=%).c $(2) $(3) $$(LIBKVA_SAN_OBJS) $$(LT_DEPS)
	@mkdir -p $$(@D)
	$$(Q)$$(CC) -O1 -g $$(SAN_FLAGS) $$(LT_CFLAGS) -o $$@ $$< \
		$(LT_SRC)/hooks.c $(2) $$(LIBKVA_SAN_OBJS) $(4) $$(LIBKVA_LDLIBS)

LT_NATIVE += $(LT)/$(1) $(LT)/$(1)_san
endef

LT_FAKE := $(LT_SRC)/fake_module.c
LT_FAKE_DEPS := $(LT_SRC)/fake_module.h $(SRC)/driver/core.h
LT_FAKE_FLAGS := -I$(SRC)/driver

LT_NATIVE :=
$(eval $(call lt_native,lib_seq_test))
$(eval $(call lt_native,lib_device_test,$(LT_FAKE),$(LT_FAKE_DEPS),$(LT_FAKE_FLAGS)))

ifneq ($(LIBKVA_HAVE_CUDA),)
# The test double of libcuda: a shared object for tests only.
LT_DOUBLE := $(LT)/libcuda_double.so
LT_DOUBLE_LIBS = -I$(CUDA_HOME)/include -L$(LT) -lcuda_double \
		 -Wl,-rpath,$(abspath $(LT))

$(LT_DOUBLE): $(LT_SRC)/cuda_double.c $(LT_SRC)/cuda_double.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) -I$(CUDA_HOME)/include -fPIC -shared \
		-o $@ $< -lpthread

$(eval $(call lt_native,lib_cuda_test,$(LT_FAKE),$(LT_DOUBLE) $(LT_FAKE_DEPS),$(LT_DOUBLE_LIBS) $(LT_FAKE_FLAGS) -ldl))
endif

ifneq ($(LIBKVA_HAVE_CUDA),)
# Proof, in every build, that the CUDA pieces compile and link: the
# backend's entry points against the stub driver, and the GPU test.
LT_CUDA_STUBS := $(CUDA_HOME)/lib64/stubs
LT_CUDA_LINK  := -L$(LT_CUDA_STUBS) -Wl,--no-as-needed -lcuda

$(LT)/cuda_link_check: $(LT_SRC)/cuda_link_check.c $(SRC)/lib/src/cuda_syms.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) -I$(SRC)/lib/src \
		-I$(CUDA_HOME)/include -o $@ $< $(LT_CUDA_LINK)

$(LT)/lib_gpu_test: $(LT_SRC)/gpu_test.c $(LIBKVA_A) $(LT_DEPS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LT_CFLAGS) -I$(CUDA_HOME)/include -o $@ $< \
		$(LIBKVA_A) $(LIBKVA_LDLIBS) $(LT_CUDA_LINK)

ALL += $(LT)/cuda_link_check $(LT)/lib_gpu_test
endif

# The VM test: static, without dlopen (cuda_noload.o stands in for the
# driver loader, ahead of the archive).
LT_NOLOAD := $(if $(LIBKVA_HAVE_CUDA),$(B)/lib/obj/cuda_noload.o)

$(LT)/lib_vm_test: $(LT_SRC)/vm_test.c $(LIBKVA_A) $(LT_NOLOAD) $(LT_DEPS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LT_CFLAGS) -static -o $@ $< $(LT_NOLOAD) \
		$(LIBKVA_A) -luring -lpthread

VM_TESTS += $(LT)/lib_vm_test

# The shipped libraries, as a user links them: shared, static, and from
# a DESTDIR install through pkg-config.
$(LT)/abi_test_shared: $(LT_SRC)/abi_test.c $(LIBKVA_SO)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -I$(SRC)/lib/include -I$(SRC)/include -o $@ $< \
		-L$(B)/lib -lkvarena -Wl,-rpath,$(abspath $(B)/lib)

$(LT)/abi_test_static: $(LT_SRC)/abi_test.c $(LIBKVA_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -I$(SRC)/lib/include -I$(SRC)/include -o $@ $< \
		$(LIBKVA_A) $(LIBKVA_LDLIBS)

LT_DESTDIR := $(abspath $(LT))/destdir
LT_PC = PKG_CONFIG_PATH=$(LT_DESTDIR)$(LIBDIR)/pkgconfig \
	PKG_CONFIG_SYSROOT_DIR=$(LT_DESTDIR) pkg-config

.PHONY: check-lib-install
check-lib-install: $(LIBKVA_A) $(LIBKVA_SO) $(LIBKVA_PC)
	$(Q)rm -rf $(LT_DESTDIR)
	$(Q)$(MAKE) --no-print-directory install-lib DESTDIR=$(LT_DESTDIR)
	$(Q)$(CC) $(CFLAGS) -o $(LT)/abi_test_installed $(LT_SRC)/abi_test.c \
		$$($(LT_PC) --cflags --libs kvarena)
	$(Q)LD_LIBRARY_PATH=$(LT_DESTDIR)$(LIBDIR) $(LT)/abi_test_installed \
		> /dev/null
	@# libkvarena.a with what its Libs.private name (glibc stays shared:
	@# a static glibc warns about the CUDA loader's dlopen()).
	$(Q)$(CC) $(CFLAGS) -o $(LT)/abi_test_installed_static \
		$(LT_SRC)/abi_test.c $$($(LT_PC) --cflags kvarena) \
		$$($(LT_PC) --static --libs kvarena | \
		   sed 's/-lkvarena/-Wl,-Bstatic -lkvarena -Wl,-Bdynamic/')
	$(Q)$(LT)/abi_test_installed_static > /dev/null

.PHONY: check-lib
check-lib: $(LT_NATIVE) $(LT)/abi_test_shared $(LT)/abi_test_static \
	   check-lib-install
	$(Q)for t in $(LT_NATIVE); do $$t || exit 1; done
	$(Q)$(LT)/abi_test_shared > /dev/null
	$(Q)$(LT)/abi_test_static > /dev/null
	@# The shared library exports the public API and nothing else.
	$(Q)! nm -D --defined-only $(LIBKVA_SO) | awk '{ print $$3 }' | \
		grep -v -e '^kva_' -e '^KVARENA_1.0$$'
	@# The public header is C++ too.
	$(Q)$(CXX) -std=c++11 -Wall -Wextra -fsyntax-only \
		-I$(SRC)/lib/include -I$(SRC)/include $(LT_SRC)/header_cxx_test.cc

CHECK_NATIVE += check-lib
