/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A test double of the CUDA driver's virtual memory entry points, built
 * only for tests (libcuda_double.so).  It implements them over host
 * memory: an allocation is a memfd, a reservation a PROT_NONE range, a
 * mapping an mmap of the memfd that stays PROT_NONE until cuMemSetAccess,
 * so data written through a mapped range is real and readable through
 * every other mapping of the same allocation.  It checks the rules the
 * real driver enforces that libkvarena relies on, records every call,
 * and fails a chosen call on demand.  Its device queues work per stream
 * and, in its asynchronous model, runs it only when waited for, so that
 * an unmap under queued work - a fault on a GPU - fails the test.
 */
#ifndef KVA_CUDA_DOUBLE_H
#define KVA_CUDA_DOUBLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** One recorded call: the entry point's exported name and two arguments
 * (address and size for the VMM calls, the handle for cuMemMap in @c). */
struct cuda_double_call {
	const char *fn;
	uint64_t a, b, c;
	int res;
	unsigned long thread;		/* pthread_self() of the caller */
	uint64_t stream;		/* the stream of a stream's call */
};

struct cuda_double_live {
	unsigned int allocs;		/* created or imported, not freed */
	unsigned int reservations;
	unsigned int mappings;
	unsigned int ctx_refs;		/* primary context retains */
};

/*
 * The device (see cuda_double.c): work queued on a stream runs in order,
 * at once (the synchronous model, the default) or only when waited for
 * (the asynchronous model: cuda_double_set_async(true), or
 * CUDA_DOUBLE_ASYNC=1 at cuInit).  While held, nothing runs and every
 * wait (cuStreamSynchronize, cuEventSynchronize, cuCtxSynchronize)
 * blocks until the release; events recorded meanwhile are reached only
 * after it.
 */
void cuda_double_stream_hold(void);
void cuda_double_stream_release(void);
void cuda_double_set_async(bool on);
bool cuda_double_async(void);
/* The device catches up with everything queued (unless held). */
void cuda_double_progress(void);
/* Work queued and not yet run. */
unsigned int cuda_double_queued(void);
/*
 * Stand-ins for an engine's kernels: read [va, va + n) on @stream (the
 * FNV-1a hash of the bytes goes to *@sum when it runs), or fill it with
 * @val.  Return 0, or a CUresult.
 */
int cuda_double_launch_read(void *stream, uint64_t va, uint64_t n,
			    uint64_t *sum);
int cuda_double_launch_write(void *stream, uint64_t va, uint64_t n, int val);
/* The hash a read kernel gives for the bytes at @p. */
uint64_t cuda_double_sum(const void *p, uint64_t n);
/* Queued work that found its memory unmapped, or read-only, when it ran. */
unsigned int cuda_double_faults(void);
/*
 * Unmaps of memory that queued work still used (a GPU would fault), and
 * the first one's description ("" if none).
 */
unsigned int cuda_double_violations(void);
const char *cuda_double_violation(void);
/* Clear the call log and any armed failure; live state is kept. */
void cuda_double_reset(void);
/* The @nth next call of @fn (its exported name) returns @err. */
void cuda_double_fail(const char *fn, unsigned int nth, int err);
/* Calls of @fn since the last reset. */
unsigned int cuda_double_count(const char *fn);
/* The @i-th call of @fn since the last reset (0-based), or NULL. */
const struct cuda_double_call *cuda_double_find(const char *fn,
						unsigned int i);
/* Every call since the last reset, names separated by spaces. */
const char *cuda_double_trace(void);
/* The same, of the calling thread only (another may be waiting on an
 * event meanwhile: the arena's teardown thread). */
const char *cuda_double_trace_mine(void);
/* Contexts pushed and not popped on this thread. */
int cuda_double_ctx_depth(void);
void cuda_double_live(struct cuda_double_live *live);
#define CUDA_DOUBLE_MAX_DEVICES	8
/*
 * The devices this process sees, as CUDA_VISIBLE_DEVICES would make them:
 * ordinal i is physical device @phys[i]; @n of them (1 to 8).  Default:
 * one, physical device 0.  Returns 0, or -1 for a bad @n.
 */
int cuda_double_set_devices(const int *phys, int n);
/* The 16-byte UUID of physical device @phys, as cuDeviceGetUuid gives it. */
void cuda_double_uuid(int phys, unsigned char *uuid);
/* Granularity reported by cuMemGetAllocationGranularity (64 KiB). */
void cuda_double_set_granularity(size_t bytes);
/*
 * The CU_MEM_ACCESS_FLAGS_* of the mapping at @va: READ (1), READWRITE
 * (3), or 0 when nothing is mapped there or access was never set.
 */
int cuda_double_access(uint64_t va);

#endif
