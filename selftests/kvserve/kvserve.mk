# SPDX-License-Identifier: GPL-2.0
#
# kvserve's tests.
#
#   check-kvserve          native: kvserve on embedded arenas against
#                          hand-worked schedules, as built
#   kvserve_pressure_test  in the VM (VM_TESTS, static, KTAP):
#                          kva_poll_fd() against kvarena.ko, the pressure
#                          kvserve watches before admitting
#
# The device path of kvserve itself runs in `make run`.

KVS_T := $(B)/selftests/kvserve
# Static, without dlopen: cuda_noload.o stands in for the driver loader.
KVS_T_NOLOAD := $(if $(LIBKVA_HAVE_CUDA),$(B)/lib/obj/cuda_noload.o)

.PHONY: check-kvserve
check-kvserve: $(B)/tools/kvserve
	$(Q)$(SRC)/selftests/kvserve/kvserve_test.sh $(B)/tools/kvserve

CHECK_NATIVE += check-kvserve

$(KVS_T)/kvserve_pressure_test: $(SRC)/selftests/kvserve/pressure_vm_test.c \
		$(LIBKVA_A) $(KVS_T_NOLOAD) $(KSFT_HARNESS) \
		$(SRC)/lib/include/kvarena.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) -I$(KSFT_INC) $(KSFT_CFLAGS) -static \
		-o $@ $< $(KVS_T_NOLOAD) $(LIBKVA_A) -luring -lpthread

VM_TESTS += $(KVS_T)/kvserve_pressure_test
