# SPDX-License-Identifier: GPL-2.0
#
# kvserve: a serving loop on libkvarena and the attention kernels.
#
#   $(B)/tools/kvserve          the tool; with nvcc at build time it also
#                               runs --backend cuda (the CUDA kernels and
#                               cudart linked statically, so the binary
#                               still starts where there is no GPU)
#   $(B)/tools/kvserve-static   CPU only, statically linked, for the VM
#                               (make run)

KVS_SRCS := $(addprefix $(SRC)/tools/kvserve/,main.c serve.c compute.c tp.c) \
	    $(KVT_COMMON_SRCS)
KVS_HDRS := $(SRC)/tools/kvserve/kvserve.h $(KVT_COMMON_HDRS) \
	    $(SRC)/lib/include/kvarena.h $(SRC)/kernels/kvattn.h
KVS_CFLAGS = $(KVA_CFLAGS) $(KVT_COMMON_CFLAGS) -I$(SRC)/kernels

ifneq ($(NVCC),)
KVS_CUDA_SRCS := $(SRC)/tools/kvserve/compute_cuda.c
KVS_CUDA_LIBS := $(KVK_CUDA_LIB)
KVS_CUDA_FLAGS := -DKVSERVE_CUDA -I$(CUDA_HOME)/include
KVS_CUDA_LDLIBS := -L$(CUDA_HOME)/lib64 -lcudart_static -lstdc++ -lrt
else
KVS_CUDA_SRCS := $(SRC)/tools/kvserve/compute_nocuda.c
endif

$(B)/tools/kvserve: $(KVS_SRCS) $(KVS_CUDA_SRCS) $(KVS_HDRS) $(LIBKVA_A) \
		    $(KVK_LIB) $(KVS_CUDA_LIBS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVS_CFLAGS) $(KVS_CUDA_FLAGS) -o $@ $(KVS_SRCS) \
		$(KVS_CUDA_SRCS) $(LIBKVA_A) $(KVK_LIB) $(KVS_CUDA_LIBS) \
		$(LIBKVA_LDLIBS) $(KVK_LDLIBS) $(KVS_CUDA_LDLIBS)

# Without dlopen: cuda_noload.o stands in for the driver loader.
KVS_NOLOAD := $(if $(LIBKVA_HAVE_CUDA),$(B)/lib/obj/cuda_noload.o)

$(B)/tools/kvserve-static: $(KVS_SRCS) $(SRC)/tools/kvserve/compute_nocuda.c \
			   $(KVS_HDRS) $(LIBKVA_A) $(KVK_LIB) $(KVS_NOLOAD)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVS_CFLAGS) -static -o $@ $(KVS_SRCS) \
		$(SRC)/tools/kvserve/compute_nocuda.c $(KVS_NOLOAD) \
		$(LIBKVA_A) $(KVK_LIB) -luring -lpthread $(KVK_LDLIBS)

.PHONY: install-kvserve
install-kvserve: $(B)/tools/kvserve
	$(Q)install -d $(DESTDIR)$(BINDIR)
	$(Q)install -m 755 $(B)/tools/kvserve $(DESTDIR)$(BINDIR)/kvserve

ALL             += $(B)/tools/kvserve
INSTALL_TARGETS += install-kvserve
INSTALL_FILES   += $(BINDIR)/kvserve
