# SPDX-License-Identifier: GPL-2.0
#
# kvarenactl's tests.
#
#   check-kvarenactl   native: the formatters (also under ASan/UBSan); the
#                      agent's file I/O on an io_uring and with
#                      pread/pwrite (under ASan/UBSan); the command line,
#                      table-driven (args_test, on the tool and on its
#                      ASan/UBSan build); the tool without the module:
#                      messages, the cuda backend against a test double
#                      of libcuda.so.1
#   VM_TESTS           kvarenactl_test: the tool end to end with the module
#                      loaded; the static kvarenactl is built into it

KVACTL_T := $(B)/selftests/kvarenactl
KVACTL_FMT_TEST_DEPS := $(SRC)/selftests/kvarenactl/fmt_test.c \
	$(SRC)/tools/kvarenactl/fmt.c $(SRC)/tools/kvarenactl/kvarenactl.h \
	$(KSFT_HARNESS)
KVACTL_FMT_TEST_CC = $(CC) $(CFLAGS) $(KVA_CFLAGS) $(KSFT_CFLAGS) \
	-I$(KSFT_INC) -I$(SRC)/tools/kvarenactl

$(KVACTL_T)/fmt_test: $(KVACTL_FMT_TEST_DEPS)
	$(Q)mkdir -p $(@D)
	$(Q)$(KVACTL_FMT_TEST_CC) -o $@ $(filter %.c,$^)

$(KVACTL_T)/fmt_test-san: $(KVACTL_FMT_TEST_DEPS)
	$(Q)mkdir -p $(@D)
	$(Q)$(KVACTL_FMT_TEST_CC) $(SAN_FLAGS) -o $@ $(filter %.c,$^)

# fileio.c twice: as the tool builds it, and without liburing.
KVACTL_FILEIO_TEST_DEPS := $(SRC)/selftests/kvarenactl/fileio_test.c \
	$(SRC)/tools/common/fileio.c $(SRC)/tools/common/fileio.h \
	$(KSFT_HARNESS)

$(KVACTL_T)/fileio_test: $(KVACTL_FILEIO_TEST_DEPS)
	$(Q)mkdir -p $(@D)
	$(Q)$(KVACTL_FMT_TEST_CC) $(SAN_FLAGS) $(KVACTL_URING_CFLAGS) -o $@ \
		$(filter %.c,$^) $(KVACTL_URING_LIBS)

$(KVACTL_T)/fileio_test-sync: $(KVACTL_FILEIO_TEST_DEPS)
	$(Q)mkdir -p $(@D)
	$(Q)$(KVACTL_FMT_TEST_CC) $(SAN_FLAGS) -I$(SRC)/tools/common -o $@ \
		$(filter %.c,$^)

KVACTL_ARGS_TEST_DEPS := $(SRC)/selftests/kvarenactl/args_test.c $(KSFT_HARNESS)

$(KVACTL_T)/args_test: $(KVACTL_ARGS_TEST_DEPS)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) $(KSFT_CFLAGS) -I$(KSFT_INC) -o $@ $<

$(KVACTL_T)/libcuda-fake.so: $(SRC)/selftests/kvarenactl/fake_libcuda.c
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Wall -fPIC -shared -o $@ $<

$(KVACTL_T)/libcuda-fake-old.so: $(SRC)/selftests/kvarenactl/fake_libcuda.c
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Wall -fPIC -shared -DFAKE_CUDA_OLD -o $@ $<

KVACTL_NATIVE := $(SRC)/selftests/kvarenactl/kvarenactl_native.sh
KVACTL_FAKES := $(KVACTL_T)/libcuda-fake.so $(KVACTL_T)/libcuda-fake-old.so

# kvarenactl events --zmq's msgpack encoder against python3-msgpack.
$(KVACTL_T)/msgpack_test: $(SRC)/selftests/kvarenactl/msgpack_test.c \
		$(SRC)/tools/kvarenactl/msgpack.c $(SRC)/tools/kvarenactl/events.h
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) $(SAN_FLAGS) -I$(SRC)/tools/kvarenactl \
		-o $@ $(filter %.c,$^)

.PHONY: check-kvarenactl
check-kvarenactl: $(KVACTL_T)/fmt_test $(KVACTL_T)/fmt_test-san \
		  $(KVACTL_T)/fileio_test $(KVACTL_T)/fileio_test-sync \
		  $(KVACTL_T)/args_test $(KVACTL_T)/msgpack_test \
		  $(B)/tools/kvarenactl $(B)/tools/kvarenactl-san $(KVACTL_FAKES)
	$(Q)$(KVACTL_T)/fmt_test
	$(Q)$(KVACTL_T)/fmt_test-san
	$(Q)$(KVACTL_T)/fileio_test
	$(Q)$(KVACTL_T)/fileio_test-sync
	$(Q)KVARENACTL=$(B)/tools/kvarenactl $(KVACTL_T)/args_test
	$(Q)KVARENACTL=$(B)/tools/kvarenactl-san $(KVACTL_T)/args_test
	$(Q)$(PYTHON) $(SRC)/selftests/kvarenactl/msgpack_check.py \
		$(KVACTL_T)/msgpack_test
	$(Q)$(KVACTL_NATIVE) $(B)/tools/kvarenactl $(KVACTL_FAKES)
	$(Q)$(KVACTL_NATIVE) $(B)/tools/kvarenactl-san $(KVACTL_FAKES)

CHECK_NATIVE += check-kvarenactl

# The VM test carries the static tool inside it (.incbin of KVACTL_BIN).
$(KVACTL_T)/kvarenactl_test: $(SRC)/selftests/kvarenactl/kvarenactl_test.c \
		$(SRC)/selftests/kvarenactl/kvarenactl.mk \
		$(SRC)/selftests/kvarena/kva_test.h \
		$(SRC)/include/uapi/linux/kvarena.h $(KSFT_HARNESS) \
		$(B)/tools/kvarenactl-static
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) $(KSFT_CFLAGS) -I$(KSFT_INC) \
		-I$(SRC)/selftests/kvarena \
		-DKVACTL_BIN='"$(abspath $(B)/tools/kvarenactl-static)"' \
		-static -o $@ $<

VM_TESTS += $(KVACTL_T)/kvarenactl_test
