/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The few things the core allocator (core.c) needs from its surroundings,
 * for the kernel module and for userspace (libkvarena's embedded arena and
 * the native tests).  Everything else in core.c is plain C.
 */
#ifndef KVA_CORE_SHIM_H
#define KVA_CORE_SHIM_H

#ifdef __KERNEL__

#include <linux/bug.h>
#include <linux/errno.h>
#include <linux/indirect_call_wrapper.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/types.h>

#include <linux/sched.h>

/*
 * Tables sized by an arena's frames (here and in arena.c) are the arena's
 * memory, charged to the creator's cgroup; a size the machine cannot
 * spare is ENOMEM to the caller, never the OOM killer's business.
 */
#define KVA_GFP_TABLE	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)
#define kva_shim_calloc(n, size) kvcalloc(n, size, KVA_GFP_TABLE)
#define kva_shim_free(p)	kvfree(p)
#define kva_shim_random_u64()	get_random_u64()
#define KVA_WARN_ON(cond)	WARN_ON(cond)
/* Long walks (a client of millions of frames) let others run. */
#define kva_shim_cond_resched()	cond_resched()

#else /* userspace */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t s64;

#define kva_shim_calloc(n, size) calloc(n, size)
#define kva_shim_free(p)	free(p)
#define kva_shim_cond_resched()	do { } while (0)

/* A seed for the key index's hash; the clock if getrandom() fails. */
static inline u64 kva_shim_random_u64(void)
{
	struct timespec ts;
	u64 v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == sizeof(v))
		return v;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (u64)ts.tv_sec;
}

#ifndef likely
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#endif

static inline int kva_warn_on(int cond, const char *what, const char *file,
			      int line)
{
	if (unlikely(cond))
		fprintf(stderr, "kvarena: WARNING %s:%d: %s\n", file, line,
			what);
	return cond;
}
#define KVA_WARN_ON(cond) kva_warn_on(!!(cond), #cond, __FILE__, __LINE__)

#endif /* __KERNEL__ */

#endif /* KVA_CORE_SHIM_H */
