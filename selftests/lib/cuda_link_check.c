// SPDX-License-Identifier: GPL-2.0
/*
 * Links the cuda backend's entry-point list (lib/src/cuda_syms.h) against
 * the CUDA driver's stub library, taking each by the name <cuda.h> gives
 * it: if the driver lacks one, this fails to link, in every build, rather
 * than the backend failing to load (-ELIBBAD) on a GPU machine.  Built,
 * never run.
 */
#include "cuda_syms.h"

#define KVA_CUDA_ADDR(name) (const void *)&name,

const void *const kva_cuda_entry_points[] = {
	KVA_CUDA_SYMS(KVA_CUDA_ADDR)
};

int main(void)
{
	return kva_cuda_entry_points[0] == NULL;
}
