// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl - CUDA frames: one cuMemCreate() allocation per frame on one
 * device, exported as a POSIX file descriptor for ARENA_SET_BACKING.
 *
 * The driver library is loaded at run time (libcuda.so.1, or
 * $KVA_CUDA_LIBRARY as for libkvarena), so one kvarenactl binary runs on
 * machines with and without a GPU driver.  The few types and constants
 * used are declared here from the driver API's documented ABI; no CUDA
 * header is needed to build.  The statically linked build (for the test
 * VM) cannot load shared libraries and says so.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifndef KVACTL_STATIC
#include <dlfcn.h>
#endif

#include "kvarenactl.h"

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUmemGenericAllocationHandle;

#define CUDA_SUCCESS				0
#define CU_MEM_ALLOCATION_TYPE_PINNED		1
#define CU_MEM_LOCATION_TYPE_DEVICE		1
#define CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR 1
#define CU_MEM_ALLOC_GRANULARITY_MINIMUM	0

typedef struct {
	char bytes[16];
} CUuuid;

typedef struct {
	int type;			/* CUmemLocationType */
	int id;
} CUmemLocation;

typedef struct {
	int type;			/* CUmemAllocationType */
	int requestedHandleTypes;	/* CUmemAllocationHandleType */
	CUmemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} CUmemAllocationProp;

struct kvactl_cuda {
	void *lib;
	CUdevice dev;
	uint32_t ordinal;
	uint64_t frame_size;
	uint8_t uuid[16];
	bool ctx_retained;

	CUresult (*cuInit)(unsigned int);
	CUresult (*cuDeviceGetCount)(int *);
	CUresult (*cuDeviceGet)(CUdevice *, int);
	CUresult (*cuDeviceGetUuid)(CUuuid *, CUdevice);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
	CUresult (*cuCtxSetCurrent)(CUcontext);
	CUresult (*cuMemGetAllocationGranularity)(size_t *,
						  const CUmemAllocationProp *,
						  int);
	CUresult (*cuMemCreate)(CUmemGenericAllocationHandle *, size_t,
				const CUmemAllocationProp *,
				unsigned long long);
	CUresult (*cuMemExportToShareableHandle)(void *,
						 CUmemGenericAllocationHandle,
						 int, unsigned long long);
	CUresult (*cuMemRelease)(CUmemGenericAllocationHandle);
	CUresult (*cuGetErrorString)(CUresult, const char **);
};

static const char *library(void)
{
	const char *l = getenv("KVA_CUDA_LIBRARY");

	return l && *l ? l : "libcuda.so.1";
}

/* "CUDA error 2 (out of memory)" */
static const char *cu_error(struct kvactl_cuda *cu, CUresult r)
{
	static char buf[160];
	const char *s = NULL;

	if (cu->cuGetErrorString && cu->cuGetErrorString(r, &s) != CUDA_SUCCESS)
		s = NULL;
	snprintf(buf, sizeof(buf), "CUDA error %d%s%s%s", r, s ? " (" : "",
		 s ? s : "", s ? ")" : "");
	return buf;
}

static CUmemAllocationProp frame_prop(const struct kvactl_cuda *cu)
{
	CUmemAllocationProp p;

	memset(&p, 0, sizeof(p));
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = cu->dev;
	return p;
}

#ifdef KVACTL_STATIC
static int load(struct kvactl_cuda *cu)
{
	kvactl_err("cuda backend: %s not found: this kvarenactl is statically linked and cannot load it; use the dynamically linked one",
		   library());
	return -1;
}
#else
static int load(struct kvactl_cuda *cu)
{
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
#define SYM(field, name) { name, offsetof(struct kvactl_cuda, field) }
		SYM(cuInit, "cuInit"),
		SYM(cuDeviceGetCount, "cuDeviceGetCount"),
		SYM(cuDeviceGet, "cuDeviceGet"),
		/* what <cuda.h> maps cuDeviceGetUuid to, as libkvarena */
		SYM(cuDeviceGetUuid, "cuDeviceGetUuid_v2"),
		SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
		SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
		SYM(cuCtxSetCurrent, "cuCtxSetCurrent"),
		SYM(cuMemGetAllocationGranularity,
		    "cuMemGetAllocationGranularity"),
		SYM(cuMemCreate, "cuMemCreate"),
		SYM(cuMemExportToShareableHandle,
		    "cuMemExportToShareableHandle"),
		SYM(cuMemRelease, "cuMemRelease"),
		SYM(cuGetErrorString, "cuGetErrorString"),
#undef SYM
	};
	size_t i;

	/*
	 * RTLD_NODELETE: after cuInit() the driver has threads and handlers
	 * that must not outlive its code, so a dlclose() must not unmap it
	 * (as libkvarena's cuda_load.c does).
	 */
	cu->lib = dlopen(library(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!cu->lib) {
		kvactl_err("cuda backend: %s not found: %s", library(),
			   dlerror());
		return -1;
	}
	for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *p = dlsym(cu->lib, syms[i].name);

		if (!p) {
			kvactl_err("cuda backend: %s has no %s (driver too old for CUDA virtual memory?)",
				   library(), syms[i].name);
			return -1;
		}
		memcpy((char *)cu + syms[i].off, &p, sizeof(p));
	}
	return 0;
}
#endif

struct kvactl_cuda *kvactl_cuda_open(uint32_t ordinal, uint64_t frame_size)
{
	struct kvactl_cuda *cu = calloc(1, sizeof(*cu));
	CUmemAllocationProp prop;
	char b[2][KVACTL_NUM_LEN];
	CUcontext ctx;
	CUuuid uuid;
	size_t gran = 0;
	int count = 0;
	CUresult r;

	if (!cu)
		abort();
	cu->ordinal = ordinal;
	cu->frame_size = frame_size;
	if (load(cu))
		goto err_close;
	r = cu->cuInit(0);
	if (r != CUDA_SUCCESS) {
		kvactl_err("cuda backend: cuInit: %s", cu_error(cu, r));
		goto err_close;
	}
	r = cu->cuDeviceGetCount(&count);
	if (r != CUDA_SUCCESS) {
		kvactl_err("cuda backend: cuDeviceGetCount: %s", cu_error(cu, r));
		goto err_close;
	}
	if (ordinal >= (uint32_t)count) {
		kvactl_err("cuda backend: no CUDA device %u (%d device%s)",
			   ordinal, count, count == 1 ? "" : "s");
		goto err_close;
	}
	r = cu->cuDeviceGet(&cu->dev, (int)ordinal);
	if (r == CUDA_SUCCESS) {
		/*
		 * The module records the GPU by UUID: ordinals depend on
		 * each process's CUDA_VISIBLE_DEVICES (libkvarena's clients
		 * find the device by it).
		 */
		r = cu->cuDeviceGetUuid(&uuid, cu->dev);
		if (r != CUDA_SUCCESS) {
			kvactl_err("cuda backend: device %u: cuDeviceGetUuid: %s",
				   ordinal, cu_error(cu, r));
			goto err_close;
		}
		memcpy(cu->uuid, uuid.bytes, sizeof(cu->uuid));
		r = cu->cuDevicePrimaryCtxRetain(&ctx, cu->dev);
		cu->ctx_retained = r == CUDA_SUCCESS;
	}
	if (r == CUDA_SUCCESS)
		r = cu->cuCtxSetCurrent(ctx);
	if (r != CUDA_SUCCESS) {
		kvactl_err("cuda backend: device %u: %s", ordinal,
			   cu_error(cu, r));
		goto err_close;
	}
	prop = frame_prop(cu);
	r = cu->cuMemGetAllocationGranularity(&gran, &prop,
					      CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	if (r != CUDA_SUCCESS) {
		kvactl_err("cuda backend: device %u: no POSIX fd export of device memory: %s",
			   ordinal, cu_error(cu, r));
		goto err_close;
	}
	if (!gran || frame_size % gran) {
		kvactl_err("cuda backend: --frame-size %s is not a multiple of device %u's allocation granularity, %s",
			   kvactl_fmt_size(b[0], frame_size, false), ordinal,
			   kvactl_fmt_size(b[1], gran, false));
		goto err_close;
	}
	return cu;

err_close:
	kvactl_cuda_close(cu);
	return NULL;
}

void kvactl_cuda_uuid(const struct kvactl_cuda *cu, uint8_t uuid[16])
{
	memcpy(uuid, cu->uuid, sizeof(cu->uuid));
}

int kvactl_cuda_frame(struct kvactl_cuda *cu)
{
	CUmemAllocationProp prop = frame_prop(cu);
	CUmemGenericAllocationHandle h;
	char b[KVACTL_NUM_LEN];
	int fd = -1;
	CUresult r;

	r = cu->cuMemCreate(&h, cu->frame_size, &prop, 0);
	if (r != CUDA_SUCCESS) {
		kvactl_err("cuda backend: cuMemCreate of %s on device %u: %s",
			   kvactl_fmt_size(b, cu->frame_size, false),
			   cu->ordinal, cu_error(cu, r));
		return -1;
	}
	r = cu->cuMemExportToShareableHandle(&fd, h,
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
	if (r != CUDA_SUCCESS) {
		kvactl_err("cuda backend: cuMemExportToShareableHandle: %s",
			   cu_error(cu, r));
		fd = -1;
	}
	/* The exported fd keeps the allocation; drop our handle on it. */
	cu->cuMemRelease(h);
	return fd;
}

void kvactl_cuda_close(struct kvactl_cuda *cu)
{
	if (cu->ctx_retained)
		cu->cuDevicePrimaryCtxRelease(cu->dev);
#ifndef KVACTL_STATIC
	if (cu->lib)
		dlclose(cu->lib);
#endif
	free(cu);
}
