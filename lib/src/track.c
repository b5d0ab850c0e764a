// SPDX-License-Identifier: MIT
/*
 * The "track" backend: a gang's scheduler (Documentation/libkvarena.rst,
 * "Gangs").  Its sequences take, share, publish and return frames as any
 * sequence does, but map nothing: the frames' memory is in the members,
 * mapped by the ranks (kva_seq_mirror()).  A range is still reserved,
 * PROT_NONE, so that every sequence has an address of its own; touching
 * it faults.  What needs the memory - a copy-on-write copy, a swap, a
 * tier's copy - is -EOPNOTSUPP here: it is the ranks' to do.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#include "internal.h"

static int track_init(struct kva_arena *a, const struct kva_open_opts *o)
{
	(void)a;
	(void)o;
	return 0;
}

static void track_fini(struct kva_arena *a)
{
	(void)a;
}

static int track_resolve(struct kva_arena *a, uint32_t idx)
{
	a->frames[idx].flags |= FRAME_RESOLVED;
	return 0;
}

static int track_reserve(struct kva_arena *a, uint64_t size, uint64_t *va)
{
	void *p = mmap(NULL, size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	(void)a;
	if (p == MAP_FAILED)
		return -errno;
	*va = (uint64_t)(uintptr_t)p;
	return 0;
}

static void track_release(struct kva_arena *a, uint64_t va, uint64_t size)
{
	(void)a;
	munmap((void *)(uintptr_t)va, size);
}

static int track_map(struct kva_arena *a, uint64_t va, const uint32_t *idx,
		     uint32_t n)
{
	(void)a;
	(void)va;
	(void)idx;
	(void)n;
	return 0;
}

static int track_unmap(struct kva_arena *a, uint64_t va, uint32_t n)
{
	(void)a;
	(void)va;
	(void)n;
	return 0;
}

static int track_copy(struct kva_arena *a, uint64_t dst, uint64_t src,
		      const struct kva_geometry *g, uint32_t tokens)
{
	(void)a;
	(void)dst;
	(void)src;
	(void)g;
	(void)tokens;
	return -EOPNOTSUPP;
}

static int track_xfer(struct kva_arena *a, uint64_t va, void *host,
		      uint64_t len, bool out)
{
	(void)a;
	(void)va;
	(void)host;
	(void)len;
	(void)out;
	return -EOPNOTSUPP;
}

static int track_tier_xfer(struct kva_arena *a, uint64_t va, void *host,
			   const bool *out, uint32_t n)
{
	(void)a;
	(void)va;
	(void)host;
	(void)out;
	(void)n;
	return -EOPNOTSUPP;
}

const struct kva_vmm kva_track_vmm = {
	.map_replaces = true,
	.init = track_init,
	.fini = track_fini,
	.resolve = track_resolve,
	.reserve = track_reserve,
	.release = track_release,
	.map = track_map,
	.unmap = track_unmap,
	.copy = track_copy,
	.xfer = track_xfer,
	.tier_xfer = track_tier_xfer,
};
