// SPDX-License-Identifier: MIT
/*
 * Loading the CUDA driver at run time, so that one libkvarena runs on
 * machines with and without it.  Kept apart from cuda.c so that a static
 * program with no use for CUDA can link cuda_noload.c instead and carry
 * no dlopen().
 *
 * The driver is opened with RTLD_NODELETE: once cuInit() has run, libcuda
 * has started threads and registered handlers that must not outlive its
 * code, so kva_cuda_unload() drops our reference but the library stays
 * mapped until the process exits, as it does for a program linked to it.
 */
#include <dlfcn.h>
#include <string.h>

#include "internal.h"
#include "cuda_syms.h"

int kva_cuda_load(const char *path, struct kva_cuda_fns *fns)
{
	const char *env = kva_env("KVA_CUDA_LIBRARY");

	memset(fns, 0, sizeof(*fns));
	fns->dl = dlopen(path ? path : env ? env : "libcuda.so.1",
			 RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!fns->dl)
		return -ELIBACC;
#define KVA_CUDA_RESOLVE(name)						\
	fns->name = (__typeof__(&name))dlsym(fns->dl, KVA_CUDA_STR(name)); \
	if (!fns->name)							\
		goto err_close;
	KVA_CUDA_SYMS(KVA_CUDA_RESOLVE)
#undef KVA_CUDA_RESOLVE
	return 0;

err_close:
	dlclose(fns->dl);
	memset(fns, 0, sizeof(*fns));
	return -ELIBBAD;
}

void kva_cuda_unload(struct kva_cuda_fns *fns)
{
	if (fns->dl)
		dlclose(fns->dl);
	memset(fns, 0, sizeof(*fns));
}
