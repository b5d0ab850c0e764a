# SPDX-License-Identifier: GPL-2.0
#
# selftests/llama.cpp/: llama.cpp's llama-server with kvarena.
#
#   make check-llama.cpp LLAMA_DIR=TREE   run.sh on a llama.cpp tree (see
#                                         Documentation/llama.cpp.rst),
#                                         the two-server VM case on
#                                         RUN_KERNEL; without LLAMA_DIR it
#                                         skips, as in make check

# What the run needs is built only when there is a tree to run on.
LLAMA_DEPS := $(if $(LLAMA_DIR),$(LIBKVA_A) $(B)/tools/kvarenactl-static)

.PHONY: check-llama.cpp
check-llama.cpp: $(LLAMA_DEPS)
	$(Q)if [ -n "$(LLAMA_DIR)" ] && [ -n "$(RUN_KERNEL)" ]; then \
		$(MAKE) --no-print-directory KDIR=/lib/modules/$(RUN_KERNEL)/build module || exit 1; \
	fi; \
	KVA_BUILD=$(B) \
	KVA_VM_KERNEL=$(if $(RUN_KERNEL),/boot/vmlinuz-$(RUN_KERNEL)) \
	KVA_VM_MODULE=$(if $(RUN_KERNEL),$(B)/kmod/$(RUN_KERNEL)/kvarena.ko) \
	KVA_VM_KVARENACTL=$(B)/tools/kvarenactl-static \
	KVA_TRACE=$(if $(KVA_TRACES),$(KVA_TRACES)/AzureLLMInferenceTrace_conv.csv) \
		$(SRC)/selftests/llama.cpp/run.sh $(LLAMA_DIR); \
		rc=$$?; [ $$rc = 0 ] || [ $$rc = 77 ]

CHECK_NATIVE += check-llama.cpp
