// SPDX-License-Identifier: GPL-2.0
/*
 * kva_cuda_load() for static test programs in the VM: the CUDA driver's
 * entry points are those of cuda_double.c, linked into the program (there
 * is no GPU, and a static program has no dlopen()).  Linked in place of
 * cuda_load.o; the library path asked for is not used.
 */
#include <string.h>

#include "cuda_syms.h"

int kva_cuda_load(const char *path, struct kva_cuda_fns *fns)
{
	memset(fns, 0, sizeof(*fns));
#define KVA_CUDA_LINKED(name) fns->name = name;
	KVA_CUDA_SYMS(KVA_CUDA_LINKED)
#undef KVA_CUDA_LINKED
	return 0;
}

void kva_cuda_unload(struct kva_cuda_fns *fns)
{
	memset(fns, 0, sizeof(*fns));
}
