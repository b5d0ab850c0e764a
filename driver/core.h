/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The kvarena core allocator: a frame table, a free list, handle
 * generations and min/max charging, for one arena.
 *
 * The same file is built into kvarena.ko and into libkvarena (the embedded
 * in-process arena) and the native tests, so it knows nothing of files,
 * processes or locks.  Every function expects the caller to hold the
 * arena's lock (a mutex in the module, a pthread mutex in the library);
 * that lock protects every field below.
 *
 * Accounting words:
 *   held      frames a client holds now
 *   min       frames guaranteed to a client: while it holds fewer, the
 *             difference is kept out of every other client's reach
 *   max       frames a client may hold at most
 *   unmet     max(0, min - held): frames reserved for the client
 *   available what a client may still take: free frames less the other
 *             clients' unmet minimums, and no more than max - held
 */
#ifndef KVA_CORE_H
#define KVA_CORE_H

#include "core_shim.h"

#define KVA_NIL		0xffffffffu	/* no frame: end of a list */

/*
 * Handle encoding, shared with the uapi header: generation in the high 32
 * bits, frame index in the low 32.  Generation 0 is never used, so 0 is
 * never a valid handle.
 */
#define KVA_HANDLE(gen, idx)	(((u64)(gen) << 32) | (u32)(idx))
#define KVA_HANDLE_IDX(h)	((u32)(h))
#define KVA_HANDLE_GEN(h)	((u32)((h) >> 32))

struct kva_core_client;

/* struct kva_frame.flags */
#define KVA_FRAME_HELD	(1u << 0)	/* on a client's list */
#define KVA_FRAME_MARK	(1u << 1)	/* seen in the batch being freed */

/**
 * struct kva_frame - one frame of the table.
 * @gen:	generation of the current (or next) handle; moves on free.
 * @flags:	KVA_FRAME_*.
 * @next:	next frame on the free list or on the holder's list.
 * @prev:	previous frame on the holder's list (unused while free).
 * @holder:	the client holding the frame, NULL while free.
 */
struct kva_frame {
	u32 gen;
	u32 flags;
	u32 next;
	u32 prev;
	struct kva_core_client *holder;
};

/**
 * struct kva_core_client - a client's share of the arena.
 * @min:		guaranteed frames.
 * @max:		limit.
 * @held:		frames held now.
 * @peak:		highest @held.
 * @head:		first frame on the client's list, KVA_NIL if none.
 * @alloc_calls:	kva_core_alloc() calls.
 * @free_calls:		kva_core_free() calls.
 * @alloc_failures:	kva_core_alloc() calls that returned -ENOSPC.
 *
 * Embedded in the owner's client object; the core never allocates it.
 */
struct kva_core_client {
	u32 min;
	u32 max;
	u32 held;
	u32 peak;
	u32 head;
	u64 alloc_calls;
	u64 free_calls;
	u64 alloc_failures;
};

/**
 * struct kva_core - one arena's frames.
 * @frames:		the frame table, @nr_frames entries.
 * @nr_frames:		capacity.
 * @nr_free:		frames on the free list.
 * @free_head:		top of the free list (LIFO: recently freed frames,
 *			still warm in caches and TLBs, go out first).
 * @unmet_min:		sum of the clients' unmet minimums.
 * @nr_clients:		clients attached.
 * @peak_held:		highest nr_frames - nr_free.
 * @alloc_calls:	kva_core_alloc() calls, all clients.
 * @free_calls:		kva_core_free() calls, all clients.
 * @alloc_failures:	kva_core_alloc() calls that returned -ENOSPC.
 * @frames_allocated:	frames handed out, ever.
 * @frames_freed:	frames returned, ever (free and detach).
 */
struct kva_core {
	struct kva_frame *frames;
	u32 nr_frames;
	u32 nr_free;
	u32 free_head;
	u32 unmet_min;
	u32 nr_clients;
	u32 peak_held;
	u64 alloc_calls;
	u64 free_calls;
	u64 alloc_failures;
	u64 frames_allocated;
	u64 frames_freed;
};

int kva_core_init(struct kva_core *c, u32 nr_frames);
void kva_core_fini(struct kva_core *c);

int kva_core_attach(struct kva_core *c, struct kva_core_client *cl,
		    u32 min, u32 max);
u32 kva_core_detach(struct kva_core *c, struct kva_core_client *cl);
int kva_core_set_limits(struct kva_core *c, struct kva_core_client *cl,
			u32 min, u32 max);

u32 kva_core_available(const struct kva_core *c,
		       const struct kva_core_client *cl);
int kva_core_alloc(struct kva_core *c, struct kva_core_client *cl,
		   u64 *handles, u32 n, bool partial);
int kva_core_free(struct kva_core *c, struct kva_core_client *cl,
		  const u64 *handles, u32 n);
int kva_core_lookup(const struct kva_core *c,
		    const struct kva_core_client *cl, u64 handle);

/* What kva_core_frame_access() says a client may do with a frame. */
enum kva_access {
	KVA_ACCESS_NONE = 0,	/* not the client's: no mapping at all */
	KVA_ACCESS_READ = 1,	/* held with others: map read-only */
	KVA_ACCESS_WRITE = 2,	/* the client's own: map read-write */
};

enum kva_access kva_core_frame_access(const struct kva_core *c,
				      const struct kva_core_client *cl,
				      u32 idx);

int kva_core_check(const struct kva_core *c);

static inline u32 kva_core_held(const struct kva_core *c)
{
	return c->nr_frames - c->nr_free;
}

#endif /* KVA_CORE_H */
