// SPDX-License-Identifier: GPL-2.0
/*
 * libcuda_double.so: see cuda_double.h.  Built only for the tests; never
 * linked into libkvarena, which finds it through KVA_CUDA_LIBRARY or its
 * cuda_library option.
 *
 * The handful of rules checked are those of the driver API documentation
 * that the runtime must follow: cuInit first; whole allocations mapped at
 * offset 0 inside a reservation, never over another mapping; access set
 * only over mapped memory; unmaps of whole mappings; reservations freed
 * only when empty; copies with a current context.
 */
#include <cuda.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_double.h"

#define MAX_ALLOCS	4096
#define MAX_RESV	1024
#define MAX_MAPS	4096
#define MAX_LOG		8192

struct alloc {
	bool live;
	bool released;
	bool exportable;
	int fd;
	size_t size;
	unsigned int maps;
};

struct resv {
	bool live;
	uint64_t va, size, raw, raw_size;
};

struct mapping {
	bool live;
	bool access;
	int flags;		/* CU_MEM_ACCESS_FLAGS_* once access is set */
	uint64_t va, size;
	struct alloc *al;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloc allocs[MAX_ALLOCS];
static struct resv resvs[MAX_RESV];
static struct mapping maps[MAX_MAPS];
static struct cuda_double_call calls[MAX_LOG];
static unsigned int nr_calls;
static char trace[MAX_LOG * 24];
static bool initialized;
static unsigned int ctx_refs;
static size_t granularity = 64 << 10;
/* Devices as this process sees them: ordinal i is physical device
 * visible[i] (CUDA_VISIBLE_DEVICES); each has its own UUID. */
static int nr_visible = 1;
static int visible[CUDA_DOUBLE_MAX_DEVICES];
static __thread int ctx_depth;
static bool async_model;		/* see "The device" below */
static struct CUctx_st *const primary = (struct CUctx_st *)&primary;

static const char *fail_fn;
static unsigned int fail_nth;
static CUresult fail_err;

static void lose_queue(void);

/* Log the call; returns the armed failure if this is the call for it. */
static CUresult enter(const char *fn, uint64_t a, uint64_t b, uint64_t c)
{
	if (nr_calls < MAX_LOG)
		calls[nr_calls++] = (struct cuda_double_call){
			fn, a, b, c, 0, (unsigned long)pthread_self(), 0 };
	if (fail_fn && !strcmp(fail_fn, fn) && !--fail_nth) {
		fail_fn = NULL;
		/*
		 * A wait that fails is a context that an earlier fault broke:
		 * nothing queued in it runs any more.
		 */
		if (strstr(fn, "Synchronize"))
			lose_queue();
		return fail_err;
	}
	return CUDA_SUCCESS;
}

static CUresult leave(CUresult r)
{
	calls[nr_calls - 1].res = r;
	pthread_mutex_unlock(&lock);
	return r;
}

#define ENTER(a, b, c) do {						\
		CUresult _r;						\
		pthread_mutex_lock(&lock);				\
		_r = enter(__func__, (uint64_t)(a), (uint64_t)(b),	\
			   (uint64_t)(c));				\
		if (_r)							\
			return leave(_r);				\
		if (!initialized && strcmp(__func__, "cuInit"))		\
			return leave(CUDA_ERROR_NOT_INITIALIZED);	\
	} while (0)

static bool ordinal_ok(int ordinal)
{
	return ordinal >= 0 && ordinal < nr_visible;
}

static struct alloc *alloc_of(CUmemGenericAllocationHandle h)
{
	struct alloc *al = (struct alloc *)(uintptr_t)h;

	if (al < allocs || al >= allocs + MAX_ALLOCS || !al->live)
		return NULL;
	return al;
}

static struct alloc *new_alloc(int fd, size_t size)
{
	int i;

	for (i = 0; i < MAX_ALLOCS; i++)
		if (!allocs[i].live) {
			allocs[i] = (struct alloc){ .live = true, .fd = fd,
						    .size = size };
			return &allocs[i];
		}
	return NULL;
}

static void put_alloc(struct alloc *al)
{
	if (al->released && !al->maps) {
		close(al->fd);
		al->live = false;
	}
}

static struct resv *resv_of(uint64_t va, uint64_t size)
{
	int i;

	for (i = 0; i < MAX_RESV; i++)
		if (resvs[i].live && va >= resvs[i].va &&
		    va + size <= resvs[i].va + resvs[i].size)
			return &resvs[i];
	return NULL;
}

static struct mapping *mapping_at(uint64_t va)
{
	int i;

	for (i = 0; i < MAX_MAPS; i++)
		if (maps[i].live && va >= maps[i].va &&
		    va < maps[i].va + maps[i].size)
			return &maps[i];
	return NULL;
}

/* Every byte of [va, va + size) lies in a mapping (with access, if @acc). */
static bool covered(uint64_t va, uint64_t size, bool acc)
{
	while (size) {
		struct mapping *m = mapping_at(va);
		uint64_t n;

		if (!m || (acc && !m->access))
			return false;
		n = m->va + m->size - va;
		if (n > size)
			n = size;
		va += n;
		size -= n;
	}
	return true;
}

CUresult cuInit(unsigned int flags)
{
	ENTER(flags, 0, 0);
	if (flags)
		return leave(CUDA_ERROR_INVALID_VALUE);
	if (!initialized) {
		const char *env = getenv("CUDA_DOUBLE_ASYNC");

		async_model = env && *env && strcmp(env, "0");
	}
	initialized = true;
	return leave(CUDA_SUCCESS);
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
	ENTER(ordinal, 0, 0);
	if (!ordinal_ok(ordinal))
		return leave(CUDA_ERROR_INVALID_DEVICE);
	*dev = ordinal;
	return leave(CUDA_SUCCESS);
}

CUresult cuDeviceGetCount(int *count)
{
	ENTER(0, 0, 0);
	*count = nr_visible;
	return leave(CUDA_SUCCESS);
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	ENTER(dev, 0, 0);
	if (!ordinal_ok(dev))
		return leave(CUDA_ERROR_INVALID_DEVICE);
	cuda_double_uuid(visible[dev], (unsigned char *)uuid->bytes);
	return leave(CUDA_SUCCESS);
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
	ENTER(dev, 0, 0);
	if (!ordinal_ok(dev))
		return leave(CUDA_ERROR_INVALID_DEVICE);
	ctx_refs++;
	*ctx = primary;
	return leave(CUDA_SUCCESS);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	ENTER(dev, 0, 0);
	if (!ordinal_ok(dev) || !ctx_refs)
		return leave(CUDA_ERROR_INVALID_CONTEXT);
	ctx_refs--;
	return leave(CUDA_SUCCESS);
}

CUresult cuCtxPushCurrent(CUcontext ctx)
{
	ENTER(0, 0, 0);
	if (ctx != primary || !ctx_refs)
		return leave(CUDA_ERROR_INVALID_CONTEXT);
	ctx_depth++;
	return leave(CUDA_SUCCESS);
}

CUresult cuCtxPopCurrent(CUcontext *ctx)
{
	ENTER(0, 0, 0);
	if (!ctx_depth)
		return leave(CUDA_ERROR_INVALID_CONTEXT);
	ctx_depth--;
	*ctx = primary;
	return leave(CUDA_SUCCESS);
}

CUresult cuMemGetAllocationGranularity(size_t *gran,
				       const CUmemAllocationProp *prop,
				       CUmemAllocationGranularity_flags option)
{
	ENTER(option, 0, 0);
	if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    !ordinal_ok(prop->location.id))
		return leave(CUDA_ERROR_INVALID_VALUE);
	*gran = granularity;
	return leave(CUDA_SUCCESS);
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size,
		     const CUmemAllocationProp *prop,
		     unsigned long long flags)
{
	struct alloc *al;
	int fd;

	ENTER(size, prop->requestedHandleTypes, 0);
	if (flags || !size || size % granularity ||
	    prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    !ordinal_ok(prop->location.id))
		return leave(CUDA_ERROR_INVALID_VALUE);
	fd = memfd_create("cuda-double", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)size))
		return leave(CUDA_ERROR_OUT_OF_MEMORY);
	al = new_alloc(fd, size);
	if (!al) {
		close(fd);
		return leave(CUDA_ERROR_OUT_OF_MEMORY);
	}
	al->exportable = prop->requestedHandleTypes &
			 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	*h = (CUmemGenericAllocationHandle)(uintptr_t)al;
	return leave(CUDA_SUCCESS);
}

CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
	struct alloc *al;

	ENTER(h, 0, 0);
	al = alloc_of(h);
	if (!al || al->released)
		return leave(CUDA_ERROR_INVALID_VALUE);
	al->released = true;
	put_alloc(al);
	return leave(CUDA_SUCCESS);
}

CUresult cuMemExportToShareableHandle(void *out, CUmemGenericAllocationHandle h,
				      CUmemAllocationHandleType type,
				      unsigned long long flags)
{
	struct alloc *al;

	ENTER(h, type, 0);
	al = alloc_of(h);
	if (!al || al->released || flags ||
	    type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return leave(CUDA_ERROR_INVALID_VALUE);
	if (!al->exportable)
		return leave(CUDA_ERROR_NOT_SUPPORTED);
	*(int *)out = fcntl(al->fd, F_DUPFD_CLOEXEC, 0);
	return leave(CUDA_SUCCESS);
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h,
					void *os_handle,
					CUmemAllocationHandleType type)
{
	int fd = (int)(intptr_t)os_handle;
	struct alloc *al;
	struct stat st;

	ENTER(fd, type, 0);
	if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
	    fstat(fd, &st) || !st.st_size)
		return leave(CUDA_ERROR_INVALID_VALUE);
	fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	al = new_alloc(fd, (size_t)st.st_size);
	if (!al) {
		close(fd);
		return leave(CUDA_ERROR_OUT_OF_MEMORY);
	}
	al->exportable = true;
	*h = (CUmemGenericAllocationHandle)(uintptr_t)al;
	return leave(CUDA_SUCCESS);
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align,
			     CUdeviceptr addr, unsigned long long flags)
{
	uint64_t raw, va;
	void *p;
	int i;

	ENTER(size, align, addr);
	if (!size || size % granularity || flags || addr ||
	    (align & (align - 1)))
		return leave(CUDA_ERROR_INVALID_VALUE);
	if (align < granularity)
		align = granularity;
	for (i = 0; i < MAX_RESV && resvs[i].live; i++)
		;
	if (i == MAX_RESV)
		return leave(CUDA_ERROR_OUT_OF_MEMORY);
	p = mmap(NULL, size + align, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return leave(CUDA_ERROR_OUT_OF_MEMORY);
	raw = (uint64_t)(uintptr_t)p;
	va = (raw + align - 1) & ~(uint64_t)(align - 1);
	resvs[i] = (struct resv){ true, va, size, raw, size + align };
	*ptr = va;
	return leave(CUDA_SUCCESS);
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	int i, j;

	ENTER(ptr, size, 0);
	for (i = 0; i < MAX_RESV; i++)
		if (resvs[i].live && resvs[i].va == ptr &&
		    resvs[i].size == size)
			break;
	if (i == MAX_RESV)
		return leave(CUDA_ERROR_INVALID_VALUE);
	/* Everything in it must have been unmapped. */
	for (j = 0; j < MAX_MAPS; j++)
		if (maps[j].live && maps[j].va >= ptr &&
		    maps[j].va < ptr + size)
			return leave(CUDA_ERROR_INVALID_VALUE);
	munmap((void *)(uintptr_t)resvs[i].raw, resvs[i].raw_size);
	resvs[i].live = false;
	return leave(CUDA_SUCCESS);
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
		  CUmemGenericAllocationHandle h, unsigned long long flags)
{
	struct alloc *al;
	void *p;
	int i;

	ENTER(ptr, size, h);
	al = alloc_of(h);
	if (!al || al->released || offset || flags || size != al->size ||
	    ptr % granularity || !resv_of(ptr, size))
		return leave(CUDA_ERROR_INVALID_VALUE);
	for (i = 0; i < MAX_MAPS; i++)
		if (maps[i].live && ptr < maps[i].va + maps[i].size &&
		    maps[i].va < ptr + size)
			return leave(CUDA_ERROR_INVALID_VALUE);
	for (i = 0; i < MAX_MAPS && maps[i].live; i++)
		;
	if (i == MAX_MAPS)
		return leave(CUDA_ERROR_OUT_OF_MEMORY);
	p = mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
		 MAP_SHARED | MAP_FIXED, al->fd, 0);
	if (p == MAP_FAILED)
		return leave(CUDA_ERROR_OUT_OF_MEMORY);
	maps[i] = (struct mapping){ .live = true, .va = ptr, .size = size,
				    .al = al };
	al->maps++;
	return leave(CUDA_SUCCESS);
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size,
			const CUmemAccessDesc *desc, size_t count)
{
	uint64_t va = ptr, end = ptr + size;

	ENTER(ptr, size, count);
	if (count != 1 || desc->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    !ordinal_ok(desc->location.id) ||
	    (desc->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE &&
	     desc->flags != CU_MEM_ACCESS_FLAGS_PROT_READ) ||
	    !covered(ptr, size, false))
		return leave(CUDA_ERROR_INVALID_VALUE);
	while (va < end) {
		struct mapping *m = mapping_at(va);

		mprotect((void *)(uintptr_t)m->va, m->size,
			 desc->flags == CU_MEM_ACCESS_FLAGS_PROT_READ ?
			 PROT_READ : PROT_READ | PROT_WRITE);
		m->access = true;
		m->flags = desc->flags;
		va = m->va + m->size;
	}
	return leave(CUDA_SUCCESS);
}

static void check_unmap(const char *fn, uint64_t va, uint64_t n);

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	uint64_t va = ptr, end = ptr + size;
	struct mapping *m;

	ENTER(ptr, size, 0);
	/* Whole mappings only. */
	while (va < end) {
		m = mapping_at(va);
		if (!m || m->va != va || m->va + m->size > end)
			return leave(CUDA_ERROR_INVALID_VALUE);
		va += m->size;
	}
	check_unmap(__func__, ptr, size);
	for (va = ptr; va < end; va += m->size) {
		m = mapping_at(va);
		mmap((void *)(uintptr_t)va, m->size, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
		     -1, 0);
		m->live = false;
		m->al->maps--;
		put_alloc(m->al);
	}
	return leave(CUDA_SUCCESS);
}

/*
 * The device.  Work queued on a stream - copies, memsets, event records,
 * and the tests' stand-in kernels (cuda_double_launch_read/_write()) -
 * runs in the order it was queued on that stream.  Two models:
 *
 * - synchronous (the default): the device is infinitely fast, and work
 *   runs as it is queued;
 * - asynchronous (cuda_double_set_async(), or CUDA_DOUBLE_ASYNC=1 in the
 *   environment at cuInit): work runs only when someone waits for it -
 *   cuStreamSynchronize() runs its stream, cuEventSynchronize() the
 *   event's stream up to the event, cuCtxSynchronize() and
 *   cuda_double_progress() everything.
 *
 * Streams are independent of each other, as non-blocking streams are; the
 * legacy stream (NULL) is one more.  While a hold is on, nothing runs and
 * every wait blocks until the release, which (synchronous model) runs
 * everything queued.
 *
 * Queued work keeps the memory it will read and write.  Unmapping memory
 * that queued work still touches is what makes a real GPU fault (an
 * illegal address, Xid 31) or read another allocation: the double counts
 * each such unmap as a violation and keeps the first one's description;
 * the work then faults when it runs (cuda_double_faults()), as does work
 * that finds its memory unmapped or writes a read-only mapping.
 */
enum work_kind { W_COPY, W_SET, W_READ, W_WRITE, W_EVENT, W_HOST, W_DTOH,
		 W_HTOD };

struct event {
	bool live;
	bool pending;			/* its record is queued */
	uint64_t stream;
};

struct work {
	enum work_kind kind;
	uint64_t stream;
	uint64_t dst, src;		/* W_READ: src; W_WRITE, W_SET: dst;
					 * W_DTOH: dst is host memory, W_HTOD:
					 * src is */
	size_t n;
	int val;
	uint64_t *sum;			/* W_READ: where the result goes */
	struct event *ev;		/* W_EVENT */
	CUhostFn fn;			/* W_HOST: fn(arg) */
	void *arg;
	bool done;
};

#define MAX_WORK	256
static struct work queue[MAX_WORK];
static unsigned int nr_work, nr_faults, nr_violations;
static char violation[256];
static unsigned int held;
static pthread_cond_t released = PTHREAD_COND_INITIALIZER;

static bool overlaps(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
	return an && bn && a < b + bn && b < a + an;
}

/* Every byte of [va, va + n) mapped read-write. */
static bool writable(uint64_t va, uint64_t n)
{
	while (n) {
		struct mapping *m = mapping_at(va);
		uint64_t k;

		if (!m || !m->access ||
		    m->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			return false;
		k = m->va + m->size - va;
		if (k > n)
			k = n;
		va += k;
		n -= k;
	}
	return true;
}

static uint64_t fnv(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

static const char *const kind_name[] = {
	[W_COPY] = "copy", [W_SET] = "memset", [W_READ] = "kernel reading",
	[W_WRITE] = "kernel writing", [W_EVENT] = "event",
	[W_HOST] = "host function", [W_DTOH] = "copy to the host",
	[W_HTOD] = "copy from the host",
};

/* Lock held.  The device gets to queued work @w. */
static void run_one(struct work *w)
{
	w->done = true;
	switch (w->kind) {
	case W_EVENT:
		w->ev->pending = false;
		return;
	case W_HOST:
		/* under the double's lock: it may not call the double */
		w->fn(w->arg);
		return;
	case W_READ:
		if (!covered(w->src, w->n, true)) {
			nr_faults++;
			return;
		}
		if (w->sum)
			*w->sum = fnv((const void *)(uintptr_t)w->src, w->n);
		return;
	case W_DTOH:
		if (!covered(w->src, w->n, true)) {
			nr_faults++;
			return;
		}
		memcpy((void *)(uintptr_t)w->dst, (void *)(uintptr_t)w->src,
		       w->n);
		return;
	case W_COPY:
		if (!covered(w->src, w->n, true)) {
			nr_faults++;
			return;
		}
		/* fall through */
	case W_HTOD:
	case W_SET:
	case W_WRITE:
		if (!writable(w->dst, w->n)) {
			nr_faults++;
			return;
		}
		if (w->kind == W_COPY || w->kind == W_HTOD)
			memmove((void *)(uintptr_t)w->dst,
				(void *)(uintptr_t)w->src, w->n);
		else
			memset((void *)(uintptr_t)w->dst, w->val, w->n);
		return;
	}
}

/*
 * Lock held.  Run the queued work of @stream (of every stream if @all),
 * in order, up to and including the record of @until (NULL: all of it).
 */
static void run_queue(bool all, uint64_t stream, const struct event *until)
{
	unsigned int i, k;

	for (i = 0; i < nr_work; i++) {
		struct work *w = &queue[i];

		if (!all && w->stream != stream)
			continue;
		run_one(w);
		if (until && w->ev == until)
			break;
	}
	for (i = k = 0; i < nr_work; i++)
		if (!queue[i].done)
			queue[k++] = queue[i];
	nr_work = k;
}

/* Lock held.  The context is lost: drop everything queued. */
static void lose_queue(void)
{
	unsigned int i;

	for (i = 0; i < nr_work; i++)
		if (queue[i].kind == W_EVENT)
			queue[i].ev->pending = false;
	nr_work = 0;
}

static bool stream_busy(uint64_t stream)
{
	unsigned int i;

	for (i = 0; i < nr_work; i++)
		if (queue[i].stream == stream)
			return true;
	return false;
}

/*
 * Lock held.  Queue @w, and run it at once unless the device is behind
 * (held, or the asynchronous model).  Returns CUDA_SUCCESS, or
 * CUDA_ERROR_OUT_OF_MEMORY when the queue is full.
 */
static CUresult submit(struct work w)
{
	if (nr_work == MAX_WORK)
		return CUDA_ERROR_OUT_OF_MEMORY;
	queue[nr_work++] = w;
	if (!held && !async_model)
		run_queue(false, w.stream, NULL);
	return CUDA_SUCCESS;
}

/* Lock held: what the device still has to do touches [va, va + n)? */
static void check_unmap(const char *fn, uint64_t va, uint64_t n)
{
	unsigned int i;

	for (i = 0; i < nr_work; i++) {
		const struct work *w = &queue[i];

		if (w->kind == W_EVENT || w->kind == W_HOST ||
		    !(overlaps(va, n, w->dst,
			       w->kind == W_READ || w->kind == W_DTOH ?
			       0 : w->n) ||
		      overlaps(va, n, w->src,
			       w->kind == W_COPY || w->kind == W_READ ||
			       w->kind == W_DTOH ? w->n : 0)))
			continue;
		if (!nr_violations++)
			snprintf(violation, sizeof(violation),
				 "%s(0x%llx, %llu) while a queued %s 0x%llx+%zu "
				 "on stream 0x%llx still uses it", fn,
				 (unsigned long long)va, (unsigned long long)n,
				 kind_name[w->kind],
				 (unsigned long long)(w->kind == W_READ ?
						      w->src : w->dst),
				 w->n, (unsigned long long)w->stream);
		return;
	}
}

/* Lock held: wait out a hold (the device is busy until the release). */
static void wait_hold(void)
{
	while (held)
		pthread_cond_wait(&released, &lock);
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n,
			   CUstream stream)
{
	ENTER(dst, src, n);
	calls[nr_calls - 1].stream = (uintptr_t)stream;
	if (!ctx_depth)
		return leave(CUDA_ERROR_INVALID_CONTEXT);
	if (!covered(dst, n, true) || !covered(src, n, true))
		return leave(CUDA_ERROR_INVALID_VALUE);
	return leave(submit((struct work){ .kind = W_COPY,
		.stream = (uintptr_t)stream, .dst = dst, .src = src,
		.n = n }));
}

/*
 * A device-to-device copy does not wait for the device either: it goes
 * on the legacy stream.
 */
CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	ENTER(dst, src, n);
	if (!ctx_depth)
		return leave(CUDA_ERROR_INVALID_CONTEXT);
	if (!covered(dst, n, true) || !covered(src, n, true))
		return leave(CUDA_ERROR_INVALID_VALUE);
	return leave(submit((struct work){ .kind = W_COPY, .dst = dst,
					   .src = src, .n = n }));
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char val, size_t n,
			 CUstream stream)
{
	ENTER(dst, val, n);
	calls[nr_calls - 1].stream = (uintptr_t)stream;
	if (!ctx_depth)
		return leave(CUDA_ERROR_INVALID_CONTEXT);
	if (!covered(dst, n, true))
		return leave(CUDA_ERROR_INVALID_VALUE);
	return leave(submit((struct work){ .kind = W_SET,
		.stream = (uintptr_t)stream, .dst = dst, .n = n,
		.val = val }));
}

/*
 * Streams the program makes (runtime_check's): handles the double tells
 * apart, never the legacy stream's NULL.
 */
static unsigned char streams[16];

CUresult cuStreamCreate(CUstream *stream, unsigned int flags)
{
	int i;

	ENTER(flags, 0, 0);
	if (!ctx_depth)
		return leave(CUDA_ERROR_INVALID_CONTEXT);
	for (i = 0; i < 16 && streams[i]; i++)
		;
	if (i == 16)
		return leave(CUDA_ERROR_OUT_OF_MEMORY);
	streams[i] = 1;
	*stream = (CUstream)&streams[i];
	return leave(CUDA_SUCCESS);
}

CUresult cuStreamDestroy(CUstream stream)
{
	unsigned char *p = (unsigned char *)stream;

	ENTER((uintptr_t)stream, 0, 0);
	if (p < streams || p >= streams + 16 || !*p)
		return leave(CUDA_ERROR_INVALID_HANDLE);
	/* as the driver: queued work still runs, the handle is gone */
	*p = 0;
	return leave(CUDA_SUCCESS);
}

/* A host function on a stream: the stream waits while it runs. */
CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *arg)
{
	ENTER((uintptr_t)stream, 0, 0);
	calls[nr_calls - 1].stream = (uintptr_t)stream;
	if (!ctx_depth || !fn)
		return leave(CUDA_ERROR_INVALID_VALUE);
	return leave(submit((struct work){ .kind = W_HOST,
		.stream = (uintptr_t)stream, .fn = fn, .arg = arg }));
}

CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *loc,
			CUdeviceptr ptr)
{
	struct mapping *m;

	ENTER(ptr, 0, 0);
	m = mapping_at(ptr);
	if (!flags || !loc || loc->type != CU_MEM_LOCATION_TYPE_DEVICE || !m)
		return leave(CUDA_ERROR_INVALID_VALUE);
	*flags = m->access ? (unsigned long long)m->flags : 0;
	return leave(CUDA_SUCCESS);
}

CUresult cuStreamSynchronize(CUstream stream)
{
	ENTER((uintptr_t)stream, 0, 0);
	calls[nr_calls - 1].stream = (uintptr_t)stream;
	if (!ctx_depth)
		return leave(CUDA_ERROR_INVALID_CONTEXT);
	wait_hold();
	run_queue(false, (uintptr_t)stream, NULL);
	return leave(CUDA_SUCCESS);
}

CUresult cuCtxSynchronize(void)
{
	ENTER(0, 0, 0);
	if (!ctx_depth)
		return leave(CUDA_ERROR_INVALID_CONTEXT);
	wait_hold();
	run_queue(true, 0, NULL);
	return leave(CUDA_SUCCESS);
}

unsigned int cuda_double_faults(void)
{
	unsigned int n;

	pthread_mutex_lock(&lock);
	n = nr_faults;
	pthread_mutex_unlock(&lock);
	return n;
}

unsigned int cuda_double_violations(void)
{
	unsigned int n;

	pthread_mutex_lock(&lock);
	n = nr_violations;
	pthread_mutex_unlock(&lock);
	return n;
}

const char *cuda_double_violation(void)
{
	return nr_violations ? violation : "";
}

void cuda_double_set_async(bool on)
{
	pthread_mutex_lock(&lock);
	async_model = on;
	if (!on && !held)
		run_queue(true, 0, NULL);
	pthread_mutex_unlock(&lock);
}

bool cuda_double_async(void)
{
	return async_model;
}

void cuda_double_progress(void)
{
	pthread_mutex_lock(&lock);
	if (!held)
		run_queue(true, 0, NULL);
	pthread_mutex_unlock(&lock);
}

unsigned int cuda_double_queued(void)
{
	unsigned int n;

	pthread_mutex_lock(&lock);
	n = nr_work;
	pthread_mutex_unlock(&lock);
	return n;
}

int cuda_double_launch_read(void *stream, uint64_t va, uint64_t n,
			    uint64_t *sum)
{
	int r;

	pthread_mutex_lock(&lock);
	r = submit((struct work){ .kind = W_READ,
		.stream = (uintptr_t)stream, .src = va, .n = n, .sum = sum });
	pthread_mutex_unlock(&lock);
	return r;
}

int cuda_double_launch_write(void *stream, uint64_t va, uint64_t n, int val)
{
	int r;

	pthread_mutex_lock(&lock);
	r = submit((struct work){ .kind = W_WRITE,
		.stream = (uintptr_t)stream, .dst = va, .n = n, .val = val });
	pthread_mutex_unlock(&lock);
	return r;
}

uint64_t cuda_double_sum(const void *p, uint64_t n)
{
	return fnv(p, n);
}

/*
 * Events: reached when the device gets to their record; one recorded on
 * an idle stream, no hold on, is reached at once.
 */
static struct event events[64];

CUresult cuEventCreate(CUevent *ev, unsigned int flags)
{
	int i;

	ENTER(flags, 0, 0);
	for (i = 0; i < 64 && events[i].live; i++)
		;
	if (i == 64)
		return leave(CUDA_ERROR_OUT_OF_MEMORY);
	events[i] = (struct event){ .live = true };
	*ev = (CUevent)&events[i];
	return leave(CUDA_SUCCESS);
}

static struct event *event_of(CUevent ev)
{
	struct event *e = (struct event *)ev;

	return e >= events && e < events + 64 && e->live ? e : NULL;
}

CUresult cuEventRecord(CUevent ev, CUstream stream)
{
	struct event *e;

	ENTER((uintptr_t)ev, (uintptr_t)stream, 0);
	e = event_of(ev);
	if (!e || !ctx_depth)
		return leave(CUDA_ERROR_INVALID_HANDLE);
	e->stream = (uintptr_t)stream;
	e->pending = held || stream_busy(e->stream);
	if (!e->pending)
		return leave(CUDA_SUCCESS);
	if (nr_work == MAX_WORK) {
		e->pending = false;
		return leave(CUDA_ERROR_OUT_OF_MEMORY);
	}
	queue[nr_work++] = (struct work){ .kind = W_EVENT,
					  .stream = e->stream, .ev = e };
	return leave(CUDA_SUCCESS);
}

CUresult cuEventSynchronize(CUevent ev)
{
	struct event *e;

	unsigned int me;

	ENTER((uintptr_t)ev, 0, 0);
	me = nr_calls - 1;
	e = event_of(ev);
	if (!e)
		return leave(CUDA_ERROR_INVALID_HANDLE);
	/* other calls are logged meanwhile: this one's result by index */
	wait_hold();
	if (e->pending)
		run_queue(false, e->stream, e);
	calls[me].res = CUDA_SUCCESS;
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

/* A queued record of a destroyed event still runs; it marks nothing. */
static struct event spent;

CUresult cuEventDestroy(CUevent ev)
{
	struct event *e;
	unsigned int i;

	ENTER((uintptr_t)ev, 0, 0);
	e = event_of(ev);
	if (!e)
		return leave(CUDA_ERROR_INVALID_HANDLE);
	for (i = 0; i < nr_work; i++)
		if (queue[i].ev == e)
			queue[i].ev = &spent;
	e->live = false;
	return leave(CUDA_SUCCESS);
}

void cuda_double_stream_hold(void)
{
	pthread_mutex_lock(&lock);
	held++;
	pthread_mutex_unlock(&lock);
}

void cuda_double_stream_release(void)
{
	pthread_mutex_lock(&lock);
	held = 0;
	if (!async_model)
		run_queue(true, 0, NULL);
	pthread_cond_broadcast(&released);
	pthread_mutex_unlock(&lock);
}

/*
 * Host <-> device copies, for the GPU script's runtime test in --dry-run:
 * on the legacy stream, and waited for.
 */
CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n)
{
	ENTER(dst, (uintptr_t)src, n);
	if (!ctx_depth)
		return leave(CUDA_ERROR_INVALID_CONTEXT);
	wait_hold();
	run_queue(false, 0, NULL);	/* after the legacy stream */
	if (!covered(dst, n, true))
		return leave(CUDA_ERROR_INVALID_VALUE);
	memcpy((void *)(uintptr_t)dst, src, n);
	return leave(CUDA_SUCCESS);
}

CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
	ENTER((uintptr_t)dst, src, n);
	if (!ctx_depth)
		return leave(CUDA_ERROR_INVALID_CONTEXT);
	wait_hold();
	run_queue(false, 0, NULL);	/* after the legacy stream */
	if (!covered(src, n, true))
		return leave(CUDA_ERROR_INVALID_VALUE);
	memcpy(dst, (void *)(uintptr_t)src, n);
	return leave(CUDA_SUCCESS);
}

/*
 * Host <-> device copies on a stream (a tier agent's): queued like any
 * other work, so that the host memory is written or read only when the
 * device gets to them - an agent that unmapped it before waiting would
 * crash here, as a real GPU would fault.
 */
CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n,
			   CUstream stream)
{
	ENTER((uintptr_t)dst, src, n);
	calls[nr_calls - 1].stream = (uintptr_t)stream;
	if (!ctx_depth)
		return leave(CUDA_ERROR_INVALID_CONTEXT);
	if (!dst || !covered(src, n, true))
		return leave(CUDA_ERROR_INVALID_VALUE);
	return leave(submit((struct work){ .kind = W_DTOH,
		.stream = (uintptr_t)stream, .dst = (uintptr_t)dst,
		.src = src, .n = n }));
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n,
			   CUstream stream)
{
	ENTER(dst, (uintptr_t)src, n);
	calls[nr_calls - 1].stream = (uintptr_t)stream;
	if (!ctx_depth)
		return leave(CUDA_ERROR_INVALID_CONTEXT);
	if (!src || !covered(dst, n, true))
		return leave(CUDA_ERROR_INVALID_VALUE);
	return leave(submit((struct work){ .kind = W_HTOD,
		.stream = (uintptr_t)stream, .dst = dst,
		.src = (uintptr_t)src, .n = n }));
}

/* ---- control ---- */

void cuda_double_reset(void)
{
	pthread_mutex_lock(&lock);
	nr_calls = 0;
	fail_fn = NULL;
	pthread_mutex_unlock(&lock);
}

void cuda_double_fail(const char *fn, unsigned int nth, int err)
{
	pthread_mutex_lock(&lock);
	fail_fn = fn;
	fail_nth = nth;
	fail_err = (CUresult)err;
	pthread_mutex_unlock(&lock);
}

unsigned int cuda_double_count(const char *fn)
{
	unsigned int i, n = 0;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nr_calls; i++)
		n += !strcmp(calls[i].fn, fn);
	pthread_mutex_unlock(&lock);
	return n;
}

const struct cuda_double_call *cuda_double_find(const char *fn,
						unsigned int nth)
{
	const struct cuda_double_call *c = NULL;
	unsigned int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nr_calls; i++)
		if (!strcmp(calls[i].fn, fn) && !nth--) {
			c = &calls[i];
			break;
		}
	pthread_mutex_unlock(&lock);
	return c;
}

/* The calls of @thread (0: of every thread), names separated by spaces. */
static const char *trace_of(unsigned long thread)
{
	size_t len = 0;
	unsigned int i;

	pthread_mutex_lock(&lock);
	trace[0] = 0;
	for (i = 0; i < nr_calls && len + 48 < sizeof(trace); i++)
		if (!thread || calls[i].thread == thread)
			len += (size_t)snprintf(trace + len,
						sizeof(trace) - len, "%s%s",
						len ? " " : "", calls[i].fn);
	pthread_mutex_unlock(&lock);
	return trace;
}

const char *cuda_double_trace(void)
{
	return trace_of(0);
}

const char *cuda_double_trace_mine(void)
{
	return trace_of((unsigned long)pthread_self());
}

int cuda_double_ctx_depth(void)
{
	return ctx_depth;
}

void cuda_double_live(struct cuda_double_live *live)
{
	int i;

	pthread_mutex_lock(&lock);
	*live = (struct cuda_double_live){ .ctx_refs = ctx_refs };
	for (i = 0; i < MAX_ALLOCS; i++)
		live->allocs += allocs[i].live;
	for (i = 0; i < MAX_RESV; i++)
		live->reservations += resvs[i].live;
	for (i = 0; i < MAX_MAPS; i++)
		live->mappings += maps[i].live;
	pthread_mutex_unlock(&lock);
}

void cuda_double_uuid(int phys, unsigned char *uuid)
{
	static const unsigned char base[16] = {
		0x47, 0x50, 0x55, 0x2d, 0x64, 0x6f, 0x75, 0x62,
		0x6c, 0x65, 0x2d, 0x6b, 0x76, 0x61, 0x00, 0x00,
	};

	memcpy(uuid, base, 16);
	uuid[15] = (unsigned char)phys;
}

int cuda_double_set_devices(const int *phys, int n)
{
	if (n < 1 || n > CUDA_DOUBLE_MAX_DEVICES)
		return -1;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < n; i++)
		visible[i] = phys[i];
	nr_visible = n;
	pthread_mutex_unlock(&lock);
	return 0;
}

void cuda_double_set_granularity(size_t bytes)
{
	granularity = bytes;
}

int cuda_double_access(uint64_t va)
{
	struct mapping *m;
	int flags = 0;

	pthread_mutex_lock(&lock);
	m = mapping_at(va);
	if (m && m->access)
		flags = m->flags;
	pthread_mutex_unlock(&lock);
	return flags;
}
