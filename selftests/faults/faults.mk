# SPDX-License-Identifier: GPL-2.0
#
# The fault campaign (Documentation/reliability.rst).
#
# In the VM, on every kernel (VM_TESTS, CI counts):
#   kill_storm      1,000 SIGKILLs of processes busy with the arena
#   sysfuzz         100,000 random and broken commands, 4 processes
#   stress          threads of several processes on one arena, limits
#                   changed and clients dying under them; exact counters
#   lifecycle_test  unload, destroy, backing and sysfs lifetimes
# Natively (check-faults, part of check-native):
#   fuzz_args       libFuzzer on every command's argument checks
#                   (driver/check.c), from the corpus in the tree
#
#   make stress       a longer storm and stress on the newest kernel
#   make fuzz         longer libFuzzer runs and a longer syscall fuzz
#   make check-debug  everything in the VM on a KASAN/lockdep/kmemleak
#                     kernel built from linux-source-6.1 (long; see
#                     Documentation/reliability.rst)

FLT     := $(B)/selftests/faults
FLT_SRC := $(SRC)/selftests/faults
FLT_HDR := $(FLT_SRC)/faults.h $(SRC)/include/uapi/linux/kvarena.h
FLT_CC   = $(CC) $(CFLAGS) $(KVA_CFLAGS) -static
# Static, without dlopen(): cuda_noload.o stands in for the driver loader.
FLT_NOLOAD := $(if $(LIBKVA_HAVE_CUDA),$(B)/lib/obj/cuda_noload.o)

$(FLT)/kill_storm: $(FLT_SRC)/kill_storm.c $(FLT_HDR) $(LIBKVA_A) $(FLT_NOLOAD)
	@mkdir -p $(@D)
	$(Q)$(FLT_CC) -o $@ $< $(FLT_NOLOAD) $(LIBKVA_A) -luring -lpthread

$(FLT)/sysfuzz: $(FLT_SRC)/sysfuzz.c $(FLT_HDR)
	@mkdir -p $(@D)
	$(Q)$(FLT_CC) -o $@ $< -luring

$(FLT)/stress: $(FLT_SRC)/stress.c $(FLT_HDR)
	@mkdir -p $(@D)
	$(Q)$(FLT_CC) -pthread -o $@ $< -luring -lpthread

$(FLT)/lifecycle_test: $(FLT_SRC)/lifecycle_test.c $(FLT_HDR) $(KSFT_HARNESS)
	@mkdir -p $(@D)
	$(Q)$(FLT_CC) $(KSFT_CFLAGS) -I$(KSFT_INC) -pthread -o $@ $< \
		-luring -lpthread

FLT_VM := $(FLT)/lifecycle_test $(FLT)/stress $(FLT)/kill_storm $(FLT)/sysfuzz
VM_TESTS += $(FLT_VM)
