# SPDX-License-Identifier: GPL-2.0
#
# kvarena.ko selftests (kselftest harness, KTAP output), statically linked
# to run in the VM's initramfs.  VM_TESTS collects every program the VM
# runs; other parts of the tree append theirs.

KVA_SELFTESTS := $(B)/selftests/kvarena/kvarena_test \
		 $(B)/selftests/kvarena/isolation_test \
		 $(B)/selftests/kvarena/prefix_test \
		 $(B)/selftests/kvarena/tenancy_test \
		 $(B)/selftests/kvarena/scrub_test \
		 $(B)/selftests/kvarena/resize_test \
		 $(B)/selftests/kvarena/tier_test \
		 $(B)/selftests/kvarena/gang_test \
		 $(B)/selftests/kvarena/figures_test \
		 $(B)/selftests/kvarena/dmem_test \
		 $(B)/selftests/kvarena/attack_test

$(KVA_SELFTESTS): $(B)/selftests/kvarena/%: $(SRC)/selftests/kvarena/%.c \
		 $(SRC)/selftests/kvarena/kva_test.h \
		 $(SRC)/selftests/kvarena/kva_uring.h \
		 $(SRC)/selftests/kvarena/kva_tenant.h \
		 $(SRC)/include/uapi/linux/kvarena.h $(KSFT_HARNESS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) $(KSFT_CFLAGS) -I$(KSFT_INC) \
		-I$(B)/selftests/kvarena -static -o $@ $< -luring

# figures_test walks the figure table of Documentation/kvarena.rst.
$(B)/selftests/kvarena/figures_table.h: $(SRC)/Documentation/kvarena.rst \
		$(SRC)/include/uapi/linux/kvarena.h \
		$(SRC)/selftests/kvarena/figures-table.sh
	@mkdir -p $(@D)
	$(Q)$(SRC)/selftests/kvarena/figures-table.sh $< \
		$(SRC)/include/uapi/linux/kvarena.h > $@.tmp && mv $@.tmp $@
$(B)/selftests/kvarena/figures_test: $(B)/selftests/kvarena/figures_table.h

VM_TESTS += $(KVA_SELFTESTS)
