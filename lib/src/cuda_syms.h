/* SPDX-License-Identifier: MIT */
/*
 * The CUDA driver entry points the cuda backend uses, as an X-macro list.
 *
 * The backend resolves each with dlsym() under the name <cuda.h> maps it
 * to (cuCtxPushCurrent is cuCtxPushCurrent_v2, cuMemcpyDtoD is
 * cuMemcpyDtoD_v2, ...), so the versions match the header it was built
 * with.  The build links the same list against the driver's stub library
 * (selftests/lib/cuda_link_check.c), which proves every name exists.
 */
#ifndef KVA_CUDA_SYMS_H
#define KVA_CUDA_SYMS_H

#include <cuda.h>

#define KVA_CUDA_SYMS(X)				\
	X(cuInit)					\
	X(cuDeviceGet)					\
	X(cuDeviceGetCount)				\
	X(cuDeviceGetUuid)				\
	X(cuDevicePrimaryCtxRetain)			\
	X(cuDevicePrimaryCtxRelease)			\
	X(cuCtxPushCurrent)				\
	X(cuCtxPopCurrent)				\
	X(cuMemGetAllocationGranularity)		\
	X(cuMemCreate)					\
	X(cuMemRelease)					\
	X(cuMemExportToShareableHandle)			\
	X(cuMemImportFromShareableHandle)		\
	X(cuMemAddressReserve)				\
	X(cuMemAddressFree)				\
	X(cuMemMap)					\
	X(cuMemUnmap)					\
	X(cuMemSetAccess)				\
	X(cuMemcpyDtoD)					\
	X(cuMemcpyDtoDAsync)				\
	X(cuMemcpyDtoH)					\
	X(cuMemcpyHtoD)					\
	X(cuMemcpyDtoHAsync)				\
	X(cuMemcpyHtoDAsync)				\
	X(cuMemsetD8Async)				\
	X(cuStreamCreate)				\
	X(cuStreamDestroy)				\
	X(cuStreamSynchronize)				\
	X(cuCtxSynchronize)				\
	X(cuEventCreate)				\
	X(cuEventRecord)				\
	X(cuEventSynchronize)				\
	X(cuEventDestroy)

#define KVA_CUDA_STR_(x)	#x
#define KVA_CUDA_STR(x)		KVA_CUDA_STR_(x)

/* The loaded driver: one function pointer per entry point. */
struct kva_cuda_fns {
	void *dl;
#define KVA_CUDA_FIELD(name) __typeof__(&name) name;
	KVA_CUDA_SYMS(KVA_CUDA_FIELD)
#undef KVA_CUDA_FIELD
};

/*
 * kva_cuda_load() - dlopen @path (NULL: $KVA_CUDA_LIBRARY, then
 * libcuda.so.1) with RTLD_NODELETE and resolve every entry point;
 * kva_cuda_unload() forgets the entry points, and the library stays loaded.
 * Return: 0, -ELIBACC (cannot load), -ELIBBAD (an entry point missing).
 */
int kva_cuda_load(const char *path, struct kva_cuda_fns *fns);
void kva_cuda_unload(struct kva_cuda_fns *fns);

#endif /* KVA_CUDA_SYMS_H */
