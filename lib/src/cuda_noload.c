// SPDX-License-Identifier: MIT
/*
 * kva_cuda_load() for static programs that need no CUDA (the VM tests):
 * linked ahead of libkvarena.a it keeps cuda_load.o, and with it
 * dlopen(), out of the program.  CUDA arenas then fail to open with
 * -ELIBACC, as on a machine without the driver.
 */
#include <string.h>

#include "internal.h"
#include "cuda_syms.h"

int kva_cuda_load(const char *path, struct kva_cuda_fns *fns)
{
	memset(fns, 0, sizeof(*fns));
	return -ELIBACC;
}

void kva_cuda_unload(struct kva_cuda_fns *fns)
{
}
