/* SPDX-License-Identifier: MIT */
/*
 * libkvarena internals: the arena handle, its frame table, the two frame
 * providers (device, embedded) and the two VMM backends (host, cuda).
 *
 * Locking: one mutex per arena, a->lock, protects everything below that
 * is not marked otherwise: the frame table, the sequence list, every
 * sequence's frame slots, the reservation cache and the provider's and
 * backend's state.  A sequence's public fields are written only by the
 * thread using the sequence; slow paths write them with a->lock held.
 * The only field read without the owner's cooperation is
 * kva_seq.tokens (by the usage walk), so it is stored atomically.
 */
#ifndef KVA_LIB_INTERNAL_H
#define KVA_LIB_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <linux/kvarena.h>

#include "kvarena.h"

#define KVA_NAME_LEN		32
#define KVA_MAX_BATCH		65536u	/* handles per ALLOC/FREE */
#define KVA_RESV_CACHE		32	/* freed ranges kept for reuse */

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#endif
#define container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Frame index of a handle (generation << 32 | index). */
static inline uint32_t handle_idx(uint64_t h)
{
	return (uint32_t)h;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t kva_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline bool kva_all_zero(const uint64_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/*
 * Test sites, compiled in only for the test build of the library (the
 * tests' side is selftests/lib/hooks.c).  KVA_FAULT(site) is 0, or the
 * error a test armed for that pass through @site, so that the test can
 * check the unwinding; KVA_PASS(site) only counts the pass, for a test
 * to check how many commands the library sent where the module does not
 * count them.
 */
#ifdef KVA_TESTING
int kva_testing_fault(const char *site);
void kva_testing_pass(const char *site);
#define KVA_FAULT(site)		kva_testing_fault(site)
#define KVA_PASS(site)		kva_testing_pass(site)
#else
#define KVA_FAULT(site)		0
#define KVA_PASS(site)		do { } while (0)
#endif

struct list_node {
	struct list_node *prev, *next;
};

static inline void list_init(struct list_node *h)
{
	h->prev = h->next = h;
}

static inline void list_add_tail(struct list_node *n, struct list_node *h)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void list_del(struct list_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}

/* struct kva_frame_rec.flags */
#define FRAME_RESOLVED	(1u << 0)	/* backend knows its memory (mem) */
#define FRAME_RAW	(1u << 1)	/* taken by kva_alloc() */
#define FRAME_STUCK	(1u << 2)	/* could not be unmapped: kept held
					 * until kva_close() */
#define FRAME_PUBLISHED	(1u << 3)	/* under a key (ours, or found by
					 * LOOKUP): its contents are the
					 * key's, so it is mapped read-only
					 * from then on and written only
					 * through a copy */

/* A frame a sequence must copy before writing into it. */
#define FRAME_SHARED(f)	((f)->refs > 1 || ((f)->flags & FRAME_PUBLISHED))

/**
 * struct kva_frame_rec - this handle's view of one frame of the arena,
 * indexed by frame index.
 * @handle:	the handle while this arena handle holds the frame, else 0.
 * @refs:	sequences mapping the frame (forked sequences share).
 * @flags:	FRAME_*.
 * @file:	host: index of the backing file in the host backend's table.
 * @mark:	usage walk: the walk that last counted this frame.
 * @mem:	host: byte offset of the frame in that file; cuda: the
 *		CUmemGenericAllocationHandle.  A frame's backing is set once
 *		in the module's lifetime of the arena, so this stays valid
 *		after the frame is freed and is reused when it comes back.
 * @fill:	usage walk: tokens counted for this frame in walk @mark.
 */
struct kva_frame_rec {
	uint64_t handle;
	uint32_t refs;
	uint32_t flags;
	uint32_t file;
	uint32_t mark;
	uint64_t mem;
	uint32_t fill;
	uint32_t fill_bpt;	/* bytes per token of @fill's geometry */
};

struct kva_arena;

/**
 * struct kva_provider - where frames come from: the module (device.c) or
 * the in-process core allocator (embedded.c).
 * @alloc:	take @n frames; all or nothing unless @partial.  Returns the
 *		number taken or -errno.  If @usage is not NULL it is
 *		reported in the same submission, once the frames are taken.
 * @free:	return @n frames, all or nothing.  If @usage is not NULL it
 *		is reported in the same submission (its values are valid
 *		before and after the free).
 * @report:	report filled tokens and bytes.
 * @stat:	fill the arena-wide fields of @st.
 * @frame_fd:	device only: a new fd and offset for a held frame.
 * @poll_fd:	device only: the fd whose poll() reports pressure.
 * @publish:	PUBLISH @n entries (frames held); returns the number newly
 *		published or -errno, and sets each entry's flags.  @tokens
 *		(NULL, or @per_entry ids per entry) go to the module's
 *		events; an embedded arena has none.
 * @lookup:	LOOKUP @n keys; returns the leading run found (handles
 *		and flags written) or -errno.
 * @scrub:	device only: SCRUB, a take (@flags 0, waiting up to
 *		@timeout_ms) or KVARENA_SCRUB_DONE; returns nr_done or -errno.
 * @retired:	device only: frames shrinks took out of the arena, ever.
 * @imports_dropped: device only: tell the module this process holds no
 *		import of a frame out of the arena (IMPORTS_DROPPED).
 * @tier:	device only: TIER, a take of up to @n jobs (@flags 0,
 *		waiting up to @timeout_ms; the lower frames through
 *		@lower's file) or KVARENA_TIER_DONE; nr_done or -errno.
 * @close:	detach and release the provider.
 */
struct kva_usage_report {
	uint64_t tokens;
	uint64_t bytes;
};

struct kva_provider {
	int (*alloc)(struct kva_arena *a, uint64_t *h, uint32_t n,
		     bool partial, const struct kva_usage_report *usage);
	int (*free)(struct kva_arena *a, const uint64_t *h, uint32_t n,
		    const struct kva_usage_report *usage);
	int (*report)(struct kva_arena *a,
		      const struct kva_usage_report *usage);
	int (*stat)(struct kva_arena *a, struct kva_stat *st);
	int (*frame_fd)(struct kva_arena *a, uint64_t handle, int *fd,
			uint64_t *offset);
	int (*poll_fd)(struct kva_arena *a);
	int (*publish)(struct kva_arena *a, struct kvarena_prefix_entry *e,
		       uint32_t n, const uint32_t *tokens, uint32_t per_entry);
	int (*lookup)(struct kva_arena *a, struct kvarena_prefix_entry *e,
		      uint32_t n);
	int (*scrub)(struct kva_arena *a, uint64_t *h, uint32_t n,
		     uint32_t flags, uint32_t timeout_ms);
	int (*retired)(struct kva_arena *a, uint64_t *n);
	int (*imports_dropped)(struct kva_arena *a);
	int (*tier)(struct kva_arena *a, struct kvarena_tier_job *jobs,
		    uint32_t n, uint32_t flags, uint32_t timeout_ms,
		    struct kva_arena *lower);
	void (*close)(struct kva_arena *a);
};

extern const struct kva_provider kva_device_provider;
extern const struct kva_provider kva_embedded_provider;

/**
 * struct kva_vmm - how frames become memory at a virtual address.
 * @map_replaces: @map may map over a mapped frame, replacing it (mmap
 *		MAP_FIXED); otherwise the old frame must be unmapped first
 *		(cuMemMap).
 * @init:	set up for @a (embedded: make the memory).
 * @fini:	release everything @init and @resolve made.
 * @resolve:	learn frame @idx's memory (a->frames[idx].mem), once.
 * @reserve:	reserve @size bytes of address space aligned to the frame
 *		size.
 * @release:	give a reservation back (all of it unmapped).
 * @map:	map frames @idx[0..n) at @va, @va + frame_size, ... with
 *		read-write access, read-only for FRAME_PUBLISHED frames; all
 *		or nothing.
 * @unmap:	unmap @n frames mapped at @va, leaving the range reserved.
 * @copy:	copy the first @tokens tokens of every (layer, K|V, head)
 *		block of the frame at @src to the frame at @dst, and wait
 *		until it is done and so is everything the engine queued
 *		before it (as @quiesce): on the engine's stream when it is
 *		named, so that the copy is ordered with its kernels.
 * @quiesce:	wait until the device has finished the work that may use
 *		this process's mappings: what was queued on the engine's
 *		stream (kva_arena_set_stream()), or, with no stream named or
 *		if @whole, everything in the context.  Every unmap the
 *		engine's kernels might still read through waits for this
 *		first, or for a @fence: cuMemUnmap() does not wait for the
 *		device.  NULL where the memory is the CPU's (host).
 * @fence:	record a point on @stream (an event); NULL where teardown
 *		cannot be stream-ordered (host).
 * @fence_wait:	wait until the stream passed @fence, and forget it.
 */
struct kva_vmm {
	bool map_replaces;
	int (*init)(struct kva_arena *a, const struct kva_open_opts *o);
	void (*fini)(struct kva_arena *a);
	int (*resolve)(struct kva_arena *a, uint32_t idx);
	int (*reserve)(struct kva_arena *a, uint64_t size, uint64_t *va);
	void (*release)(struct kva_arena *a, uint64_t va, uint64_t size);
	int (*map)(struct kva_arena *a, uint64_t va, const uint32_t *idx,
		   uint32_t n);
	int (*unmap)(struct kva_arena *a, uint64_t va, uint32_t n);
	int (*copy)(struct kva_arena *a, uint64_t dst, uint64_t src,
		    const struct kva_geometry *g, uint32_t tokens);
	int (*quiesce)(struct kva_arena *a, bool whole);
	int (*fence)(struct kva_arena *a, void *stream, void **fence);
	int (*fence_wait)(struct kva_arena *a, void *fence);
	/* zero @n frames mapped at @va and wait until the device has (NULL:
	 * the module clears this memory itself) */
	int (*clear)(struct kva_arena *a, uint64_t va, uint32_t n);
	/* zero @n frames just mapped at @va for a raw sequence, before the
	 * engine's next work reads them (NULL: nothing to zero: no memory) */
	int (*zero)(struct kva_arena *a, uint64_t va, uint32_t n);
	/* drop what @resolve learnt of frame @idx: a scrubber's import */
	void (*forget)(struct kva_arena *a, uint32_t idx);
	/*
	 * copy @len bytes between mapped range @va and host memory @host
	 * (@out: to the host), after the work before it, and wait for it
	 */
	int (*xfer)(struct kva_arena *a, uint64_t va, void *host,
		    uint64_t len, bool out);
	/*
	 * a tier agent's copies (tier.c): frame i of the @n mapped at @va
	 * to host frame i at @host if @out[i], else back, on a stream of
	 * the agent's own, and wait for them
	 */
	int (*tier_xfer)(struct kva_arena *a, uint64_t va, void *host,
			 const bool *out, uint32_t n);
};

extern const struct kva_vmm kva_host_vmm;
extern const struct kva_vmm kva_cuda_vmm;
extern const struct kva_vmm kva_track_vmm;	/* a gang's scheduler */

struct kva_resv {
	uint64_t va;
	uint64_t size;
};

/**
 * struct kva_arena - an arena handle.
 * @lock:	see the top of this file.
 * @prov:	frame provider; @prov_priv is its state.
 * @vmm:	VMM backend; @vmm_priv is its state.
 * @frames:	the frame table, @nr_frames entries.
 * @held:	frames the provider counts as ours (deferred ones included).
 * @seqs:	open sequences (struct kva_seq_impl.link).
 * @resv:	freed ranges kept for reuse, @nr_resv of them.
 * @scratch_va:	a one-frame reservation for copy-on-write copies, 0 until
 *		first needed.
 * @deferred:	handles the provider refused to take back, retried later.
 * @walk:	usage walk counter (struct kva_frame_rec.mark).
 * @reported:	the usage last reported.
 * @acct:	usage past every sequence's shared prefix (usage.c).
 * @cow_seqs:	sequences with a shared prefix (nr_cow > 0).
 * @no_memory:	an accounting-only device arena: frames without memory.
 * @closing:	kva_close() is running: the provider's release will return
 *		every frame, so frames are not returned one by one.
 * @td_*:	stream-ordered teardown (teardown.c): the stream, the queue
 *		for the worker thread, the teardowns queued or running.
 */
struct kva_arena {
	pthread_mutex_t lock;
	uint32_t mode;
	uint32_t backend;
	uint32_t transport;
	uint32_t flags;
	const char *mode_reason;
	const char *transport_reason;
	char name[KVA_NAME_LEN];
	uint64_t frame_size;
	uint32_t nr_frames;
	uint32_t client_id;
	uint64_t domain;		/* device: the client's cache domain */
	uint32_t mem_dev;
	uint8_t mem_uuid[16];		/* device mode, CUDA: the module's */
	int32_t backend_error;

	const struct kva_provider *prov;
	void *prov_priv;
	const struct kva_vmm *vmm;
	void *vmm_priv;

	struct kva_frame_rec *frames;
	uint32_t held;
	uint32_t nr_seqs;
	struct list_node seqs;

	struct kva_resv resv[KVA_RESV_CACHE];
	uint32_t nr_resv;
	uint64_t scratch_va;

	uint64_t *deferred;
	uint32_t nr_deferred;
	uint32_t walk;
	uint64_t retired_seen;		/* device: frames_retired last acted on */
	struct kva_usage_report reported;
	bool reported_valid;
	struct kva_usage_report acct;
	struct list_node cow_seqs;
	bool closing;
	bool no_memory;
	/*
	 * Gangs (device.c, seq.c): @gang_members, the members of a gang
	 * this handle is a client of (0: no gang); @rank, a handle of
	 * kva_rank_open(), which takes no frames: its frame records say
	 * what its client held when it last mapped them.
	 */
	uint32_t gang_members;
	bool rank;

	bool td_on, td_live, td_stop;
	void *td_stream;
	pthread_t td_thread;
	pthread_cond_t td_work, td_done;
	struct kva_teardown *td_head, *td_tail;
	uint32_t td_pending;
};

/**
 * struct kva_seq_impl - a sequence: the public part and the rest.
 * @slot:	frame index of each frame of the range, @nr_slots entries;
 *		[0, nr_mapped) are mapped.
 * @nr_cow:	frames [0, nr_cow) may be shared with a forked sequence;
 *		frames beyond are private to this one.
 * @in_batch:	set while a kva_seq_grow_batch() plans this sequence.
 * @unmapping:	a stream-ordered shrink (teardown.c) may still have slots
 *		from nr_mapped on mapped: wait for it before mapping there.
 * @acct_tokens, @acct_bytes: this sequence's part of arena->acct.
 * @cow_link:	on arena->cow_seqs while nr_cow > 0 (@on_cow_list).
 */
struct kva_seq_impl {
	struct kva_seq pub;
	struct kva_arena *arena;
	struct list_node link;
	uint64_t va_size;
	uint32_t nr_slots;
	uint32_t nr_mapped;
	uint32_t nr_cow;
	bool in_batch;
	bool unmapping;
	bool on_cow_list;
	uint32_t *slot;
	uint64_t acct_tokens;
	uint64_t acct_bytes;
	struct list_node cow_link;
};

static inline struct kva_seq_impl *seq_impl(struct kva_seq *s)
{
	return container_of(s, struct kva_seq_impl, pub);
}

/* SHA-256 (sha256.c) */
#include "sha256.h"

/* seq.c */
void kva_seq_set_room(struct kva_seq_impl *s);
uint64_t kva_seq_slot_va(const struct kva_seq_impl *s, uint32_t i);

/* arena.c */
void kva_lock(struct kva_arena *a);
void kva_unlock(struct kva_arena *a);
int kva_frames_take(struct kva_arena *a, uint64_t *h, uint32_t n,
		    const struct kva_usage_report *usage);
int kva_frames_put(struct kva_arena *a, const uint64_t *h, uint32_t n);
void kva_frames_record(struct kva_arena *a, const uint64_t *h, uint32_t n,
		       uint32_t flags);
int kva_resv_get(struct kva_arena *a, uint64_t size, uint64_t *va,
		 uint64_t *got);
void kva_resv_put(struct kva_arena *a, uint64_t va, uint64_t size);
int kva_scratch(struct kva_arena *a, uint64_t *va);
void kva_seq_destroy_locked(struct kva_seq_impl *s);

/* teardown.c */
struct kva_teardown;
struct kva_teardown *kva_teardown_new(struct kva_arena *a, uint64_t va,
				      uint64_t va_size, uint32_t nr_mapped,
				      uint32_t room);
uint64_t *kva_teardown_handles(struct kva_teardown *t);
void kva_teardown_queue(struct kva_arena *a, struct kva_teardown *t,
			uint32_t nr);
void kva_teardown_wait_locked(struct kva_arena *a);
void kva_teardown_stop(struct kva_arena *a);
int kva_quiesce(struct kva_arena *a);
const char *kva_env(const char *name);
const char *kva_device_path(const char *opt);

/* usage.c */
void kva_acct_update(struct kva_arena *a, struct kva_seq_impl *s);
void kva_acct_remove(struct kva_arena *a, struct kva_seq_impl *s);
void kva_usage_compute(struct kva_arena *a, struct kva_usage_report *u,
		       bool trim);
void kva_usage_refresh(struct kva_arena *a);
int kva_usage_report(struct kva_arena *a);

/* device.c */
int kva_device_open(struct kva_arena *a, const struct kva_open_opts *o,
		    const char *path);
int kva_device_set_backing(int dev_fd, const char *name, uint32_t first,
			   uint32_t nr, int fd, uint64_t offset);

int kva_device_join(struct kva_arena *a, const struct kva_rank_opts *r,
		    const char *path);
int kva_device_gang_token(struct kva_arena *a, uint32_t flags,
			  uint64_t *token, uint32_t *nr_members);

/* embedded.c */
int kva_embedded_open(struct kva_arena *a, const struct kva_open_opts *o);

/* host.c, cuda.c: provisioning for kva_arena_create() */
int kva_host_provision(int dev_fd, const struct kva_arena_params *p);
int kva_cuda_provision(int dev_fd, const struct kva_arena_params *p);
/* cuda.c: the UUID of device @ordinal, for ARENA_CREATE */
int kva_cuda_uuid(const char *lib, uint32_t ordinal, uint8_t uuid[16]);

/* Run-time flags every backend honours. */
#define KVA_OPEN_ALL	(KVA_OPEN_PREFAULT | KVA_OPEN_POPULATE | \
			 KVA_OPEN_HUGETLB | KVA_OPEN_PRIVATE | KVA_OPEN_NO_PROMOTE | \
			 KVA_OPEN_NO_REMOTE)

#endif /* KVA_LIB_INTERNAL_H */
