/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The kvarena core allocator: a frame table, a free list, handle
 * generations, min/max charging, and the prefix cache (published frames
 * under 32-byte keys, shared holds, cached frames on an LRU), for one
 * arena.
 *
 * The same file is built into kvarena.ko and into libkvarena (the embedded
 * in-process arena) and the native tests, so it knows nothing of files,
 * processes or locks.  Every function expects the caller to hold the
 * arena's lock (a mutex in the module, a pthread mutex in the library);
 * that lock protects every field below.  Nothing but kva_core_init() and
 * kva_core_holds_alloc() allocates memory: the frame table, the key index
 * and the first hold records are made at init, and more hold records are
 * made by the caller outside its lock and handed in (see "Hold records").
 *
 * Accounting words:
 *   held      frames a client holds now.  A frame may be held by several
 *             clients at once (a shared hold, taken by LOOKUP); it counts
 *             once in the arena's held frames and once in each holder's
 *             held, so every holder's max sees it.
 *   charged   frames a client pays for, the measure of its min: each held
 *             frame is charged to exactly one client - the one that took
 *             it from the free list (ALLOC) or back from the cache
 *             (LOOKUP of a cached frame).  A shared hold on a frame
 *             charged to someone else charges nothing.  The charge stays
 *             with the client while anybody holds the frame, even after
 *             the client itself let go (the memory cgroup's rule for
 *             shared page cache); it ends when the last hold goes (the
 *             frame becomes free or cached), or moves to a remaining
 *             holder when the charged client detaches.  So a client's
 *             charge only falls when free + cached frames rise by as much,
 *             which is what keeps every granted min coverable.
 *   min       frames guaranteed to a client: while it is charged for
 *             fewer, the difference is kept out of every other client's
 *             reach
 *   max       frames a client may hold at most
 *   unmet     max(0, min - charged): frames reserved for the client
 *   cached    published frames nobody holds: on the LRU, reclaimable
 *   available what a client may still take: free + cached frames less
 *             the other clients' unmet minimums, and no more than
 *             max - held
 *
 * Invariants (kva_core_check()): free + cached + held + absent = the
 * table's frames, with held the frames with at least one holder; the
 * sum of the unmet minimums is at most free + cached; every cached frame
 * is published (has exactly one key); no key names two frames.
 *
 * Resizing.  The capacity is the table's frames less the absent ones:
 * frames taken out by kva_core_shrink(), whose memory the owner gives
 * back, until kva_core_grow() brings them in again (with new memory).
 * A shrink takes free frames first, then cached ones, never a held one,
 * and never a frame that an unmet minimum counts on; what it cannot take
 * at once it waits for (@shrink_pending), keeping that many out of every
 * client's reach, and takes each frame as it comes free or would be
 * cached.  The owner hears of every frame taken out through @retired.
 *
 * The prefix cache.  PUBLISH puts a frame the caller holds under a key;
 * the caller keeps its hold.  LOOKUP walks a chain of keys and takes a
 * shared hold on each frame of the longest leading run that is present.
 * A published frame nobody holds is cached: it keeps its key and its
 * contents, sits on an LRU list (newest at the tail), and is reclaimed
 * oldest first, whole, when an ALLOC needs more frames than are free -
 * which also covers the unmet minimums, since those count cached frames
 * as reclaimable.  A held frame is never reclaimed.  A frame has at most
 * one key and keeps it until it is reclaimed.
 *
 * Cache domains.  Each client belongs to one domain (struct
 * kva_core_domain, the owner's choice; NULL is a domain too).  A key is
 * published in its publisher's domain and found only by clients of the
 * same domain: the same key in two domains is two entries, and a frame is
 * only ever held by clients of one domain at a time, the one its @dom
 * names.
 *
 * Which frame wins when a key is published twice: the first.  The frame
 * already under the key stays; the second one is left unpublished (the
 * caller still holds it as a private frame) and the entry says so
 * (KVA_PREFIX_EXISTED).  A key names the contents (a hash of the tokens
 * before and in the frame), so both frames hold the same KV and nothing
 * is gained by replacing; the first may already be mapped by other
 * clients, and keeping it makes PUBLISH idempotent and lets two engines
 * that computed the same prefix at once race harmlessly.
 *
 * Handles of a published frame keep their generation while the frame
 * stays published, held or cached: every LOOKUP of the key returns the
 * same handle.  The generation moves when the frame returns to the free
 * list (FREE of an unpublished frame, or reclaim).  Rights come from
 * holding, never from knowing a handle: a client that let go of a frame
 * gets -ENOENT or -EPERM for its old handle even while it is unchanged.
 *
 * Costs: ALLOC, FREE and LOOKUP cost O(1) per frame, except that finding
 * one client's hold on a shared frame walks the frame's holders (as many
 * as the clients that hold it at once); a key costs O(1) expected (a
 * chained hash table with a bucket per frame, keyed by a per-arena seed so
 * that keys cannot be chosen offline to collide).  Release of a client is
 * O(frames it holds or is charged for).
 */
#ifndef KVA_CORE_H
#define KVA_CORE_H

#include "core_shim.h"

#define KVA_NIL		0xffffffffu	/* no frame or record: end of a list */
#define KVA_RECLAIM_RANKS 3		/* struct kva_core.reclaim_rank */
#define KVA_RECLAIM_SCAN 1024		/* frames a ranked pass looks at */
#define KVA_KEY_LEN	32		/* bytes of a prefix key */

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
#define KVA_FRAME_CHARGE_HELD	(1u << 0) /* the charged client holds it */
#define KVA_FRAME_MARK		(1u << 1) /* seen in the batch at hand */
#define KVA_FRAME_PUBLISHED	(1u << 2) /* under a key in the index */
#define KVA_FRAME_CACHED	(1u << 3) /* published, unheld, on the LRU */
#define KVA_FRAME_CLEANING	(1u << 4) /* free, off the lists, being cleared */
#define KVA_FRAME_ABSENT	(1u << 5) /* taken out of the arena (resize) */
#define KVA_FRAME_LENT		(1u << 6) /* held, lent to the owner: kva_core_lend() */

/**
 * struct kva_core_domain - a cache domain: the clients that see one
 * another's published keys, and whose data a frame may carry.
 * @id:		the owner's name for it: keys of two domains never meet.
 * @refs:	clients in it and frames tagged with it (struct kva_frame.dom);
 *		at zero the core hands it back (struct kva_core.dom_release).
 * @published:	its frames in the key index, held or cached.
 * @cached:	its frames on the LRU.
 * @nr_dirty:	free frames that still carry its data.
 * @dirty_head:	the first of them (LIFO), KVA_NIL if none.
 * @lru_head:	its oldest cached frame, KVA_NIL if none (the domain's own
 *		LRU, linked by struct kva_frame.dnext/dprev).
 * @lru_tail:	its newest cached frame.
 * @dnext:	next domain with dirty frames (struct kva_core.dirty).
 * @dprev:	previous one.
 * @hits:	keys its clients' LOOKUPs found, ever.
 * @misses:	keys its clients' LOOKUPs did not find, ever.
 * @reclaims:	its cached frames reclaimed, ever.
 *
 * Embedded in the owner's object, as struct kva_core_client is.
 */
struct kva_core_domain {
	u64 id;
	u32 refs;
	u32 published;
	u32 cached;
	u32 nr_dirty;
	u32 dirty_head;
	u32 lru_head;
	u32 lru_tail;
	struct kva_core_domain *dnext;
	struct kva_core_domain *dprev;
	u64 hits;
	u64 misses;
	u64 reclaims;
};

/* struct kva_core.clear: what a frame needs between holders. */
enum kva_clear {
	KVA_CLEAR_NONE = 0,	/* nothing: handed on as it is */
	KVA_CLEAR_DOMAIN = 1,	/* cleared before another domain gets it */
	KVA_CLEAR_ALWAYS = 2,	/* cleared before anyone gets it again */
};

/**
 * struct kva_frame - one frame of the table.
 * @gen:	generation of the current (or next) handle; moves when the
 *		frame returns to the free list.
 * @flags:	KVA_FRAME_*.
 * @next:	next frame on the free list, on the charged client's list or
 *		on the LRU (newer).
 * @prev:	previous frame on the charged client's list or on the LRU
 *		(older); unused while free.
 * @refs:	clients holding the frame (0 while free or cached).
 * @holds:	first hold record of a holder other than the charged client
 *		(struct kva_hold.fnext links the rest), KVA_NIL if none.
 * @hnext:	next frame in the key index's bucket, while published.
 * @tag:	the owner's mark on the frame's tenure (kva_core_tag()), 0
 *		for none: counted in struct kva_core.tag_ended and cleared
 *		when the tenure ends.
 * @charge:	the client charged for the frame, NULL while free or cached.
 * @dom:	the domain whose data the frame may carry: its holders' (set
 *		when a client takes it from the free lists), kept while it is
 *		cached and while it waits free on that domain's dirty list;
 *		NULL once clean.  Its key belongs to this domain.
 * @dnext:	next newer cached frame of @dom, while cached.
 * @dprev:	next older one.
 */
struct kva_frame {
	u32 gen;
	u32 flags;
	u32 next;
	u32 prev;
	u32 refs;
	u32 holds;
	u32 hnext;
	u32 tag;
	struct kva_core_client *charge;
	struct kva_core_domain *dom;
	u32 dnext;
	u32 dprev;
};

/**
 * struct kva_hold - one client's hold on a frame charged to another.
 * @client:	the holder; NULL while the record is unused.
 * @frame:	the frame's index.
 * @fnext:	next record of the frame (or of the unused records).
 * @fprev:	previous record of the frame.
 * @cnext:	next record of the client.
 * @cprev:	previous record of the client.
 *
 * Records live in one array (struct kva_core.holds) and link by index.
 */
struct kva_hold {
	struct kva_core_client *client;
	u32 frame;
	u32 fnext;
	u32 fprev;
	u32 cnext;
	u32 cprev;
};

/**
 * struct kva_core_client - a client's share of the arena.
 * @min:		guaranteed frames (against @charged).
 * @max:		limit (against @held).
 * @held:		frames held now, shared ones included.
 * @charged:		frames charged to the client (see the words above).
 * @shared:		frames held that other clients hold too.
 * @peak:		highest @held.
 * @head:		first frame charged to the client, KVA_NIL if none.
 * @holds:		first hold record of the client, KVA_NIL if none.
 * @next:		next attached client (for kva_core_check()).
 * @prev:		previous attached client.
 * @alloc_calls:	kva_core_alloc() calls.
 * @free_calls:		kva_core_free() calls.
 * @alloc_failures:	kva_core_alloc() calls that returned -ENOSPC.
 * @dom:		its cache domain, NULL for none (one shared namespace);
 *			set by the owner before kva_core_attach(), constant
 *			after.
 *
 * Embedded in the owner's client object; the core never allocates it.
 */
struct kva_core_client {
	u32 min;
	u32 max;
	u32 held;
	u32 charged;
	u32 shared;
	u32 peak;
	u32 head;
	u32 holds;
	struct kva_core_client *next;
	struct kva_core_client *prev;
	u64 alloc_calls;
	u64 free_calls;
	u64 alloc_failures;
	struct kva_core_domain *dom;
};

/**
 * struct kva_core_prefix - one link of a PUBLISH or LOOKUP chain.
 * @key:	the key.
 * @handle:	PUBLISH: in, a frame the client holds; LOOKUP: out.
 * @flags:	out: KVA_PREFIX_EXISTED (PUBLISH), KVA_PREFIX_HELD (LOOKUP).
 * @reserved:	not read.
 *
 * The same layout as struct kvarena_prefix_entry, so the module passes
 * the user's array through.
 */
struct kva_core_prefix {
	u8 key[KVA_KEY_LEN];
	u64 handle;
	u32 flags;
	u32 reserved;
};

/* struct kva_core_prefix.flags */
#define KVA_PREFIX_EXISTED	(1u << 0) /* publish: the key has another frame */
#define KVA_PREFIX_HELD		(1u << 1) /* lookup: held already, no new hold */

struct kva_core;

/**
 * struct kva_core_events - what the core tells its owner about the prefix
 * cache, as it happens (under the caller's lock; nothing may sleep).
 * @stored:	@cl's PUBLISH put frame @idx under c->keys[idx], entry
 *		@entry of its chain; @parent is the key of the entry before
 *		it, NULL for the first.
 * @removed:	cached frame @idx is reclaimed for an allocation; its key
 *		is still in c->keys[idx] during the call.  (Dropping the
 *		whole cache, kva_core_drop_cache(), reports nothing.)
 */
struct kva_core_events {
	void (*stored)(struct kva_core *c, struct kva_core_client *cl,
		       u32 idx, const u8 *parent, u32 entry);
	void (*removed)(struct kva_core *c, u32 idx);
};

/**
 * struct kva_core - one arena's frames.
 * @frames:		the frame table, @nr_frames entries.
 * @keys:		@nr_frames keys: frame i's while it is published.
 * @buckets:		the key index, @hash_mask + 1 chains of frames.
 * @holds:		@nr_holds hold records.
 * @clients:		attached clients (struct kva_core_client.next).
 * @seed:		keys the index's hash; random at init.
 * @nr_frames:		the table's frames: the capacity, absent frames
 *			included (kva_core_capacity()).
 * @nr_free:		frames no client holds that are not cached: on the
 *			clean list, on a domain's dirty list or being
 *			cleared.
 * @nr_cached:		frames on the LRU.
 * @nr_published:	frames in the key index (held and cached).
 * @free_head:		top of the clean list (LIFO: recently freed frames,
 *			still warm in caches and TLBs, go out first).
 * @lru_head:		oldest cached frame, KVA_NIL if none.
 * @lru_tail:		newest cached frame.
 * @hash_mask:		buckets - 1 (a power of two at least @nr_frames).
 * @nr_holds:		hold records in @holds.
 * @holds_free:		first unused record, KVA_NIL if none.
 * @holds_used:		records in use.
 * @unmet_min:		sum of the clients' unmet minimums.
 * @nr_clients:		clients attached.
 * @peak_held:		highest held frame count.
 * @alloc_calls:	kva_core_alloc() calls, all clients.
 * @free_calls:		kva_core_free() calls, all clients.
 * @alloc_failures:	kva_core_alloc() calls that returned -ENOSPC.
 * @frames_allocated:	frames taken from the free list, ever.
 * @frames_freed:	frames returned to the free list, ever (free,
 *			detach, reclaim), or taken out by a shrink as
 *			they were.
 * @cache_hits:		keys LOOKUP found (frames it returned), ever.
 * @cache_misses:	keys LOOKUP was asked for and did not return.
 * @cache_reclaims:	cached frames reclaimed for allocations (and for
 *			shrinks), ever.
 * @events:		NULL, or who to tell about the prefix cache.
 * @clear:		enum kva_clear, set by the owner after init (none by
 *			default: every free frame is clean).
 * @nr_dirty:		free frames on domains' dirty lists.
 * @nr_cleaning:	free frames taken by kva_core_take_dirty() and not
 *			given back yet.
 * @dirty:		domains with dirty frames.
 * @frames_cleaned:	frames given back clean, ever.
 * @dom_cached_max:	at most this many cached frames per domain (0: no
 *			cap): a domain past it loses its own oldest first.
 * @dom_release:	called when a domain's last reference goes.
 * @may_clear:		NULL, or says whether dirty frame @idx may be taken
 *			to be cleared now (kva_core_take_dirty() leaves the
 *			others on their domain's dirty list).
 * @nr_absent:		frames taken out (KVA_FRAME_ABSENT), on the absent
 *			list: not part of the capacity.
 * @absent_head:	the absent list (LIFO, by struct kva_frame.next and
 *			.prev).
 * @shrink_pending:	frames a shrink still waits for: kept from every
 *			client, taken as they come free.
 * @frames_retired:	frames taken out, ever.
 * @retired:		NULL, or told of each frame taken out, as it is
 *			(under the caller's lock: nothing may sleep); its
 *			memory is the owner's to give back.
 * @reclaim_rank:	NULL, or how much the owner wants cached frame @idx
 *			kept, 0 (not at all) to KVA_RECLAIM_RANKS - 1: an
 *			allocation's reclaim takes the oldest frames of the
 *			lowest rank first, and the others only when those
 *			run out (a rank orders, it never refuses: cached
 *			frames stay what every minimum counts on).  @seq
 *			moves with each reclaim, so the owner may keep an
 *			answer for the rest of it.  Under the caller's lock.
 * @reclaim_seq:	the last @seq given.
 * @tag_ended:		NULL, or the owner's counters, one per tag
 *			(kva_core_tag()): a tagged frame that goes back to
 *			the free list (or out of the arena through it) - the
 *			end of the tenure that kva_core_alloc() began,
 *			whatever ended it: FREE, release, reclaim of a cached
 *			frame, a shrink - adds one to its tag's counter and
 *			loses its tag, so each tenure is counted once.  The
 *			owner's per-tenure accounting (the dmem cgroup's
 *			charge) reads and zeroes them under the caller's lock
 *			when it likes: no call per frame.
 * @nr_tags:		entries of @tag_ended.
 * @tags_ended:		tenures counted in @tag_ended since the owner last
 *			zeroed it.
 */
struct kva_core {
	struct kva_frame *frames;
	u8 (*keys)[KVA_KEY_LEN];
	u32 *buckets;
	struct kva_hold *holds;
	struct kva_core_client *clients;
	u64 seed;
	u32 nr_frames;
	u32 nr_free;
	u32 nr_cached;
	u32 nr_published;
	u32 free_head;
	u32 lru_head;
	u32 lru_tail;
	u32 hash_mask;
	u32 nr_holds;
	u32 holds_free;
	u32 holds_used;
	u32 unmet_min;
	u32 nr_clients;
	u32 peak_held;
	u64 alloc_calls;
	u64 free_calls;
	u64 alloc_failures;
	u64 frames_allocated;
	u64 frames_freed;
	u64 cache_hits;
	u64 cache_misses;
	u64 cache_reclaims;
	const struct kva_core_events *events;
	u32 clear;
	u32 nr_dirty;
	u32 nr_cleaning;
	struct kva_core_domain *dirty;
	u64 frames_cleaned;
	u32 dom_cached_max;
	void (*dom_release)(struct kva_core *c, struct kva_core_domain *d);
	bool (*may_clear)(struct kva_core *c, u32 idx);
	u32 nr_absent;
	u32 absent_head;
	u32 shrink_pending;
	u64 frames_retired;
	void (*retired)(struct kva_core *c, u32 idx);
	u32 (*reclaim_rank)(struct kva_core *c, u32 idx, u64 seq);
	u64 reclaim_seq;
	u32 *tag_ended;
	u32 nr_tags;
	u32 tags_ended;
};

int kva_core_init(struct kva_core *c, u32 nr_frames);
int kva_core_init_max(struct kva_core *c, u32 nr_frames, u32 max_frames);
u64 kva_core_table_bytes(u32 nr_frames);
void kva_core_fini(struct kva_core *c);

int kva_core_attach(struct kva_core *c, struct kva_core_client *cl,
		    u32 min, u32 max);
int kva_core_attach_domain(struct kva_core *c, struct kva_core_client *cl,
			   u32 min, u32 max, struct kva_core_domain *dom);
u32 kva_core_detach(struct kva_core *c, struct kva_core_client *cl);
int kva_core_set_limits(struct kva_core *c, struct kva_core_client *cl,
			u32 min, u32 max);

u32 kva_core_available(const struct kva_core *c,
		       const struct kva_core_client *cl);
u32 kva_core_usable(const struct kva_core *c,
		    const struct kva_core_client *cl);
void kva_core_tag(struct kva_core *c, const u64 *handles, u32 n, u32 tag);
int kva_core_alloc(struct kva_core *c, struct kva_core_client *cl,
		   u64 *handles, u32 n, bool partial);
int kva_core_free(struct kva_core *c, struct kva_core_client *cl,
		  const u64 *handles, u32 n);
int kva_core_lookup(const struct kva_core *c,
		    const struct kva_core_client *cl, u64 handle);

/* What kva_core_frame_access() says a client may do with a frame. */
enum kva_access {
	KVA_ACCESS_NONE = 0,	/* not the client's: no mapping at all */
	KVA_ACCESS_READ = 1,	/* published (shared): map read-only */
	KVA_ACCESS_WRITE = 2,	/* the client's own: map read-write */
};

enum kva_access kva_core_frame_access(const struct kva_core *c,
				      const struct kva_core_client *cl,
				      u32 idx);

int kva_core_publish(struct kva_core *c, struct kva_core_client *cl,
		     struct kva_core_prefix *chain, u32 n);
int kva_core_prefix_lookup(struct kva_core *c, struct kva_core_client *cl,
			   struct kva_core_prefix *chain, u32 n);
u32 kva_core_reclaim(struct kva_core *c, u32 n);
int kva_core_reclaim_frame(struct kva_core *c, u32 idx);
u32 kva_core_find(const struct kva_core *c, const u8 *key,
		  const struct kva_core_domain *dom);
s64 kva_core_take_cached(struct kva_core *c, struct kva_core_client *cl,
			 u32 idx);
u32 kva_core_drop_cache(struct kva_core *c);
u32 kva_core_trim_domain(struct kva_core *c, struct kva_core_domain *d);

/*
 * Lending.  A frame a client took (ALLOC) may be lent to the owner's own
 * work on it - a copy into it that the client must not see half done (a
 * lower tier's promotion).  It stays held by and charged to the client,
 * so every limit and count sees it, but the client can neither map, free
 * nor publish it (kva_core_lookup() says -EBUSY) until the owner takes it
 * back with kva_core_unlend(), or hands it to another client of the same
 * domain with kva_core_hand_over() - which it must do before the client
 * lets go of everything it holds (kva_core_detach()).
 */
int kva_core_lend(struct kva_core *c, const struct kva_core_client *cl,
		  u64 handle);
void kva_core_unlend(struct kva_core *c, u64 handle);
int kva_core_hand_over(struct kva_core *c, struct kva_core_client *from,
		       struct kva_core_client *to, u64 handle);

/*
 * Clearing (struct kva_core.clear).  A frame freed by a client of domain
 * D keeps D's data: it waits on D's dirty list, where D's clients may
 * take it again as it is (KVA_CLEAR_DOMAIN), and nobody else may.  When
 * an allocation cannot be made of clean frames and the caller's own
 * dirty ones, kva_core_alloc() says -EAGAIN and takes nothing; the caller
 * (or a worker, ahead of need) takes dirty frames with
 * kva_core_take_dirty(), clears them with its lock dropped, and gives
 * them back with kva_core_put_clean().  Frames being cleared still count
 * as free, so nothing else in the accounting moves.
 */
u32 kva_core_take_dirty(struct kva_core *c, const struct kva_core_client *cl,
			u32 *idx, u32 n);
void kva_core_put_clean(struct kva_core *c, const u32 *idx, u32 n);
u32 kva_core_quarantine(struct kva_core *c,
			bool (*pick)(const void *arg, u32 idx), const void *arg);

/*
 * Hold records.  A LOOKUP of n keys needs up to n unused records.  The
 * caller asks kva_core_holds_need() under its lock; if it says a number,
 * the caller drops the lock, gets that many records with
 * kva_core_holds_alloc() (which may sleep), takes the lock again and hands
 * them in with kva_core_holds_grow(), then frees what that returns, after
 * dropping the lock.  The core then has at least as many records as were
 * asked for, whatever happened meanwhile.
 */
u32 kva_core_holds_need(const struct kva_core *c, u32 n);
struct kva_hold *kva_core_holds_alloc(u32 nr);
struct kva_hold *kva_core_holds_grow(struct kva_core *c,
				     struct kva_hold *recs, u32 nr);
void kva_core_holds_free(struct kva_hold *recs);

int kva_core_shrink(struct kva_core *c, u32 n, u32 *taken);
u32 kva_core_shrink_cancel(struct kva_core *c);
u32 kva_core_grow(struct kva_core *c, u32 n, u32 *idx);
int kva_core_grow_frames(struct kva_core *c, const u32 *idx, u32 n);

int kva_core_check(const struct kva_core *c);

/*
 * The arena's frames: the table's less those taken out and those a
 * shrink still waits for (the size it is becoming).
 */
static inline u32 kva_core_capacity(const struct kva_core *c)
{
	return c->nr_frames - c->nr_absent - c->shrink_pending;
}

/* Frames with at least one holder. */
static inline u32 kva_core_held(const struct kva_core *c)
{
	return c->nr_frames - c->nr_free - c->nr_cached - c->nr_absent;
}

/*
 * Frames a client without a guarantee could still get: free and cached
 * frames less every unmet minimum and what a shrink waits for (the
 * pressure measure).
 */
static inline u32 kva_core_headroom(const struct kva_core *c)
{
	u32 kept = c->unmet_min + c->shrink_pending;

	return c->nr_free + c->nr_cached > kept ?
	       c->nr_free + c->nr_cached - kept : 0;
}

/* Free frames anyone may take as they are. */
static inline u32 kva_core_clean(const struct kva_core *c)
{
	return c->nr_free - c->nr_dirty - c->nr_cleaning;
}

#endif /* KVA_CORE_H */
