// SPDX-License-Identifier: GPL-2.0
/*
 * A test double of the CUDA driver entry points kvarenactl's cuda backend
 * loads, for machines without a GPU: point $KVA_CUDA_LIBRARY at it.
 *
 *   FAKE_CUDA_DEVICES      device count (default 1)
 *   FAKE_CUDA_GRANULARITY  allocation granularity in bytes (default 2 MiB)
 *   FAKE_CUDA_INIT_ERROR   cuInit's result (default 0, CUDA_SUCCESS)
 *   FAKE_CUDA_UUID_ERROR   cuDeviceGetUuid_v2's result (default 0)
 *
 * Built with -DFAKE_CUDA_OLD it lacks cuMemCreate, like a driver that
 * predates CUDA's virtual memory management.  Allocations are memfds.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef int CUresult;

static int env(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v ? atoi(v) : dflt;
}

CUresult cuInit(unsigned int flags)
{
	return flags ? 1 : env("FAKE_CUDA_INIT_ERROR", 0);
}

CUresult cuDeviceGetCount(int *n)
{
	*n = env("FAKE_CUDA_DEVICES", 1);
	return 0;
}

CUresult cuDeviceGet(int *dev, int ordinal)
{
	*dev = ordinal;
	return ordinal < env("FAKE_CUDA_DEVICES", 1) ? 0 : 101;
}

/* Device d's UUID: bytes 0xd0 + d, 1, 2, ... 15. */
CUresult cuDeviceGetUuid_v2(unsigned char uuid[16], int dev)
{
	int i;

	for (i = 0; i < 16; i++)
		uuid[i] = (unsigned char)(i ? i : 0xd0 + dev);
	return env("FAKE_CUDA_UUID_ERROR", 0);
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	*ctx = (void *)(long)(dev + 1);
	return 0;
}

CUresult cuDevicePrimaryCtxRelease_v2(int dev)
{
	return 0;
}

CUresult cuCtxSetCurrent(void *ctx)
{
	return 0;
}

CUresult cuMemGetAllocationGranularity(size_t *g, const void *prop, int opt)
{
	*g = (size_t)env("FAKE_CUDA_GRANULARITY", 2 << 20);
	return 0;
}

#ifndef FAKE_CUDA_OLD
CUresult cuMemCreate(unsigned long long *h, size_t size, const void *prop,
		     unsigned long long flags)
{
	int fd = memfd_create("fake-cuda", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)size))
		return 2;	/* CUDA_ERROR_OUT_OF_MEMORY */
	*h = (unsigned long long)fd;
	return 0;
}
#endif

CUresult cuMemExportToShareableHandle(void *out, unsigned long long h,
				      int type, unsigned long long flags)
{
	int fd = dup((int)h);

	if (type != 1 || fd < 0)
		return 1;
	memcpy(out, &fd, sizeof(fd));
	return 0;
}

CUresult cuMemRelease(unsigned long long h)
{
	return close((int)h) ? 1 : 0;
}

CUresult cuGetErrorString(CUresult r, const char **s)
{
	*s = r == 100 ? "no CUDA-capable device is detected" : "fake error";
	return 0;
}
