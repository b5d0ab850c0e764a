# SPDX-License-Identifier: GPL-2.0
#
# check-vm: for every kernel with both an image in /boot and headers in
# /lib/modules, and every Debian kernel of another release prepared in
# KVA_KERNELS (mk/kmod.mk), build kvarena.ko for it, boot it in qemu and
# run VM_TESTS; then a table of what ran, passed, failed and was skipped
# (and why) on each kernel, also in $(B)/vm-matrix.txt
# (selftests/vm/matrix.sh).  VM_KERNELS=<release> picks one; VM_TIMEOUT
# bounds each boot.

VM_HOST_KERNELS := $(foreach k,$(notdir $(patsubst %/build,%,$(KDIRS_ALL))),\
		     $(if $(wildcard /boot/vmlinuz-$(k)),$(k)))
VM_KERNELS ?= $(shell printf '%s\n' $(VM_HOST_KERNELS) $(ROOT_KERNELS) | sort -V)
VM_TIMEOUT ?= 900
VM_RUN := $(SRC)/selftests/vm/run.sh
# A kernel's image, and how its module is built.
vm_image = $(if $(filter $(1),$(ROOT_KERNELS)),$(KVA_KERNELS)/$(1)/vmlinuz,/boot/vmlinuz-$(1))
vm_module = $(if $(filter $(1),$(ROOT_KERNELS)),KREL=$(1) module-root,KDIR=/lib/modules/$(1)/build module)
# Tests whose races need more CPUs at once than the VM's two (a reader,
# a victim and a freeing thread): booted again with VM_SMP_RACE.
VM_TESTS_RACE := $(B)/selftests/kvarena/isolation_test
VM_SMP_RACE ?= 4

# VM_TESTS_LAST run after the others: they change what a later test would
# find (selftests/docs unloads and loads the module again).
.SECONDEXPANSION:
check-vm: $$(VM_TESTS) $$(VM_TESTS_LAST)
	@test -n "$(VM_KERNELS)" || { echo "kvarena: no kernel with both /boot/vmlinuz-* and headers; apt-get install linux-image-amd64 linux-headers-amd64" >&2; exit 1; }
	$(Q)$(foreach k,$(VM_KERNELS),\
		$(MAKE) --no-print-directory $(call vm_module,$(k)) &&) true
	$(Q)$(SRC)/selftests/vm/matrix.sh --timeout $(VM_TIMEOUT) \
		--smp-race $(VM_SMP_RACE) $(addprefix --race ,$(VM_TESTS_RACE)) \
		--summary $(B)/vm-matrix.txt \
		$(foreach k,$(VM_KERNELS),--kernel $(k) $(call vm_image,$(k)) \
			$(B)/kmod/$(k)/kvarena.ko) \
		-- $(VM_TESTS) $(VM_TESTS_LAST)

# The main job: boot the newest kernel, create a host arena with
# kvarenactl, serve slices of the Azure traces with three kvserve
# processes, kill one mid-flight, and check that every frame it held came
# back (selftests/vm/main-job.sh); the results, with a picture of the run
# (run.svg), go into a folder of RUN_RESULTS that it names at the end
# (selftests/vm/run-job.sh).  KVA_TRACES names the traces' directory
# (selftests/kvsim/kvsim.mk finds ../shared/data/traces).
#
# check-run-short, part of make check: the same job with 12 requests a
# process.  check-run: the whole job three times, as it is, with the VM
# on one virtual CPU, and with a busy loop on every host CPU beside it.
RUN_KERNEL ?= $(lastword $(VM_HOST_KERNELS))
RUN_TRACES = $(addprefix $(KVA_TRACES)/,AzureLLMInferenceTrace_conv.csv \
		AzureLLMInferenceTrace_code.csv)
RUN_RESULTS ?= $(B)/run
RUN_TIMEOUT ?= 1500
RUN_PLOT := $(B)/selftests/vm/runplot

$(RUN_PLOT): $(SRC)/selftests/vm/runplot.c $(KVT_SVG_SRCS) $(KVT_SVG_HDRS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) $(KVT_COMMON_CFLAGS) -o $@ \
		$(SRC)/selftests/vm/runplot.c $(KVT_SVG_SRCS) -lm

RUN_DEPS := $(B)/tools/kvserve-static $(B)/tools/kvarenactl-static $(RUN_PLOT)
CHECK_BUILD += $(RUN_DEPS)
# run_job CONDITIONS: the main job under run-job.sh's CONDITIONS.
run_job = $(SRC)/selftests/vm/run-job.sh --results $(RUN_RESULTS) \
		--plot $(RUN_PLOT) $(1) -- $(VM_RUN) --timeout $(RUN_TIMEOUT) \
		--script $(SRC)/selftests/vm/main-job.sh \
		--kernel /boot/vmlinuz-$(RUN_KERNEL) \
		--module $(B)/kmod/$(RUN_KERNEL)/kvarena.ko \
		$(addprefix --data ,$(RUN_TRACES)) \
		$(B)/tools/kvserve-static $(B)/tools/kvarenactl-static

.PHONY: run check-run check-run-short run-prereqs
run-prereqs: $(RUN_DEPS)
	@test -n "$(RUN_KERNEL)" || { echo "kvarena: no kernel with both /boot/vmlinuz-* and headers" >&2; exit 1; }
	@test -n "$(KVA_TRACES)" || { echo "kvarena: no traces in $(SRC)/../shared/data/traces or $(SRC)/shared/data/traces; set KVA_TRACES to the directory of the Azure traces" >&2; exit 1; }
	@for f in $(RUN_TRACES); do test -r "$$f" || { echo "kvarena: $$f: not found; set KVA_TRACES to the directory of the Azure traces" >&2; exit 1; }; done
	$(Q)$(MAKE) --no-print-directory KDIR=/lib/modules/$(RUN_KERNEL)/build module

run: run-prereqs
	$(Q)$(call run_job,)

# Without the traces (a tree with no shared/ beside it), as the kvsim
# tests do: skipped, and said so.
ifneq ($(KVA_TRACES),)
check-run-short: run-prereqs
	@echo "== the main job, short: 12 requests a process"
	$(Q)$(call run_job,--requests 12 --name check-run-short)
else
check-run-short:
	@echo "== the main job, short: skipped, no traces (set KVA_TRACES)"
endif

check-run: run-prereqs
	@echo "== the main job as it is"
	$(Q)$(call run_job,--name check-run)
	@echo "== the main job with the VM on one CPU"
	$(Q)$(call run_job,--smp 1 --name check-run-smp1)
	@echo "== the main job beside a busy loop on every host CPU"
	$(Q)$(call run_job,--hog --name check-run-hog)

# kvserve --tp 2 against --tp 1 on a trace slice, in the VM (part of make
# check, after the main job; skipped without the traces).
.PHONY: check-kvserve-tp
ifneq ($(KVA_TRACES),)
check-kvserve-tp: run-prereqs
	@echo "== kvserve --tp 2 against --tp 1"
	$(Q)$(VM_RUN) --timeout 600 --script $(SRC)/selftests/kvserve/tp-job.sh \
		--kernel /boot/vmlinuz-$(RUN_KERNEL) \
		--module $(B)/kmod/$(RUN_KERNEL)/kvarena.ko \
		--data $(KVA_TRACES)/AzureLLMInferenceTrace_conv.csv \
		$(B)/tools/kvserve-static $(B)/tools/kvarenactl-static
else
check-kvserve-tp:
	@echo "== kvserve --tp 2 against --tp 1: skipped, no traces (set KVA_TRACES)"
endif
