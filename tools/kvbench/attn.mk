# SPDX-License-Identifier: GPL-2.0
#
# kvbench attn (attn.c) runs the CPU attention kernels: the kvbench
# binaries link libkvkernels.a besides libkvarena.

$(B)/tools/kvbench $(B)/tools/kvbench-static: $(KVK_LIB)
$(B)/tools/kvbench $(B)/tools/kvbench-static: KVB_CFLAGS += -I$(SRC)/kernels
$(B)/tools/kvbench $(B)/tools/kvbench-static: \
	LIBKVA_LDLIBS += $(KVK_LIB) $(KVK_LDLIBS)
