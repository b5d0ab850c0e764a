# SPDX-License-Identifier: GPL-2.0
#
# selftests/llama.cpp/: llama.cpp's llama-server with kvarena.
#
#   make check-llama.cpp LLAMA_DIR=TREE   run.sh on a llama.cpp tree (see
#                                         Documentation/llama.cpp.rst);
#                                         without LLAMA_DIR it skips, as
#                                         in make check

.PHONY: check-llama.cpp
check-llama.cpp:
	$(Q)KVA_BUILD=$(B) $(SRC)/selftests/llama.cpp/run.sh $(LLAMA_DIR); \
		rc=$$?; [ $$rc = 0 ] || [ $$rc = 77 ]

CHECK_NATIVE += check-llama.cpp
