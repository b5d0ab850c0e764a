// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: frames charged to the dmem cgroup controller
 * (Documentation/admin-guide/cgroup-v2.rst, "DMEM"), where the kernel has
 * it (CONFIG_CGROUP_DMEM and the interface probes/dmem_cgroup_init.c
 * checks for).
 *
 * Each arena registers a region named "kvarena/<arena>" with its bytes,
 * so dmem.capacity lists it and an operator limits a cgroup's KV with
 * `echo "kvarena/<arena> 8G" > dmem.max`.
 *
 * What is charged, and to whom: a frame's tenure - from the ALLOC (or
 * PROMOTE, or a lower tier's demotion) that takes it off the free list to
 * its return there (FREE of an unpublished frame, reclaim of a cached
 * one, release, eviction, a shrink) - is charged, frame_size bytes, to
 * the dmem cgroup of the task that took it.  That is the kernel's rule
 * for memory (the memory cgroup's for page cache, TTM's for buffer
 * objects): the charge stays with that cgroup for the whole tenure,
 * while the frame is held by others after a LOOKUP, while it is cached,
 * and when the task moves to another cgroup or exits with others still
 * holding the frame.  A process's own frames come back to its cgroup's
 * dmem.current as it frees them or dies.
 *
 * A limit: an ALLOC whose charge would pass a dmem.max first reclaims
 * the cached frames charged within the limited cgroup (oldest first,
 * those dmem.min and then dmem.low do not protect), then, if that was
 * not enough, is refused with -ENOSPC - nothing taken - and counted in
 * the client's dmem_refused.  A partial ALLOC takes what fits.  Writing a
 * dmem.max below the cgroup's dmem.current reclaims its cached frames
 * the same way (the region's reclaim operation); held frames stay, and
 * the cgroup's next ALLOCs are refused until it is under the limit.
 *
 * Protection: when the arena itself runs out of free frames, its reclaim
 * takes cached frames whose cgroup is within its dmem.low after the
 * others, and those within dmem.min after those (kva_dmem_rank()) - an
 * order, not a refusal, since the arena's own client minimums count on
 * every cached frame.
 *
 * The bookkeeping.  dmem_cgroup_try_charge() gives one reference on the
 * charged pool per call, which dmem_cgroup_uncharge() drops; frames are
 * charged per ALLOC and come back one by one, in any order, by any task.
 * So each arena keeps one record per pool it charged (struct
 * kva_dmem_rec: the frames charged there, and the references it holds),
 * numbered from 1; the core carries a frame's record number as its tenure
 * tag (kva_core_tag()) and counts, per number, the tenures that ended
 * (struct kva_core.tag_ended) - no call per frame.  The next
 * kva_dmem_flush() - called with every pressure update, i.e. after every
 * command that let frames go - takes those counts into the records and
 * gives the bytes back to the controller in one uncharge per record.  A
 * record that would give back bytes with its last reference while it
 * still has frames takes another reference first
 * (dmem_cgroup_get_common_ancestor() of the pool with itself).
 * Everything is under the arena's lock.
 */
#include <linux/module.h>
#include <linux/slab.h>

#include "compat.h"
#include "kva.h"

#ifdef KVA_DMEM
#include <linux/cgroup_dmem.h>

static bool dmem = true;
module_param(dmem, bool, 0644);
MODULE_PARM_DESC(dmem,
		 "charge the frames of arenas created from now on to the dmem cgroup controller (default on)");

/* Whether arenas made now charge to the controller (KVARENA_FEAT_DMEM). */
bool kva_dmem_enabled(void)
{
	return READ_ONCE(dmem);
}

/**
 * struct kva_dmem_rec - the frames of one arena charged to one pool.
 * @pool:	the pool (a cgroup's share of the region); NULL while the
 *		record is unused.
 * @frames:	frames of the arena charged there and not returned.
 * @pending:	frames returned (or charged and not taken) whose bytes
 *		the next flush gives back.
 * @refs:	references on @pool held: one per charge not yet matched by
 *		an uncharge, at least one while the record has frames or
 *		bytes to give back; none while it is empty (@pool is then
 *		only compared).
 * @rank:	its frames' rank in the reclaim numbered @rank_seq.
 * @rank_seq:	struct kva_core.reclaim_seq when @rank was found.
 */
struct kva_dmem_rec {
	struct dmem_cgroup_pool_state *pool;
	u32 frames;
	u32 pending;
	u32 refs;
	u32 rank;
	u64 rank_seq;
};

/**
 * struct kva_dmem - an arena's region and records.
 * @region:	the registered region; NULL once the arena is destroyed
 *		(no charges after that: its frames are uncharged).
 * @recs:	the records, by number (the frames' tenure tag); [0] unused.
 *		The core's tag_ended has as many counters (nr_tags).
 * @nr_pending:	records with frames to give back.
 * @nr_empty:	records kept with no frames and no reference.
 */
struct kva_dmem {
	struct dmem_cgroup_region *region;
	struct kva_dmem_rec *recs;
	u32 nr_pending;
	u32 nr_empty;
};

/* Empty records kept for the next charge of their pool. */
#define KVA_DMEM_EMPTY_KEPT	8
/* Records made room for at first (the number 0 is never one). */
#define KVA_DMEM_RECS	8

/* The record frame @idx's tenure is charged to, or NULL. */
static struct kva_dmem_rec *frame_rec(struct kva_arena *a, u32 idx)
{
	u32 tag = a->core.frames[idx].tag;

	return tag ? &a->dmem->recs[tag] : NULL;
}

/* Take the core's counts of tenures ended into the records. */
static void collect(struct kva_arena *a)
{
	struct kva_core *c = &a->core;
	struct kva_dmem *d = a->dmem;
	u32 t, n;

	for (t = 1; c->tags_ended && t < c->nr_tags; t++) {
		struct kva_dmem_rec *rec = &d->recs[t];

		n = c->tag_ended[t];
		if (!n)
			continue;
		c->tag_ended[t] = 0;
		c->tags_ended -= n;
		if (KVA_WARN_ON(n > rec->frames))
			n = rec->frames;
		rec->frames -= n;
		if (!rec->pending)
			d->nr_pending++;
		rec->pending += n;
	}
	KVA_WARN_ON(c->tags_ended);
	c->tags_ended = 0;
}

/*
 * The arena's own reclaim (an ALLOC that needs cached frames): a cached
 * frame whose cgroup is within its dmem.low goes after the others, one
 * within its dmem.min after those (struct kva_core.reclaim_rank), each
 * record asked once a reclaim.  The arena's order, not a refusal: its
 * clients' minimums count on every cached frame.
 */
static u32 kva_dmem_rank(struct kva_core *c, u32 idx, u64 seq)
{
	struct kva_arena *a = container_of(c, struct kva_arena, core);
	struct kva_dmem_rec *rec = frame_rec(a, idx);
	bool low = false;

	if (!rec)
		return 0;
	if (rec->rank_seq != seq) {
		rec->rank_seq = seq;
		if (dmem_cgroup_state_evict_valuable(NULL, rec->pool, false,
						     &low))
			rec->rank = 0;
		else
			rec->rank = low ? 1 : 2;
	}
	return rec->rank;
}

/*
 * Give back @rec's pending bytes; with no frames left, every reference
 * too (it is empty then: kva_dmem_flush() keeps a few).
 */
static void rec_flush(struct kva_arena *a, struct kva_dmem_rec *rec)
{
	struct kva_dmem *d = a->dmem;
	u64 bytes = (u64)rec->pending * a->frame_size;

	if (!rec->pending)
		return;
	if (!rec->frames) {
		/* Its last bytes, with one reference; then the others. */
		dmem_cgroup_uncharge(rec->pool, bytes);
		while (--rec->refs)
			dmem_cgroup_uncharge(rec->pool, 0);
		rec->pending = 0;
		d->nr_pending--;
		d->nr_empty++;
		return;
	}
	if (rec->refs == 1) {
		/* Frames stay charged there: keep a reference for them. */
		struct dmem_cgroup_pool_state *ref =
			dmem_cgroup_get_common_ancestor(rec->pool, rec->pool);

		if (WARN_ON_ONCE(ref != rec->pool)) {
			dmem_cgroup_pool_state_put(ref);
			return;	/* kept pending: the bytes stay charged */
		}
		rec->refs++;
	}
	dmem_cgroup_uncharge(rec->pool, bytes);
	rec->refs--;
	rec->pending = 0;
	d->nr_pending--;
}

/**
 * kva_dmem_flush() - give back the bytes of the frames returned since the
 * last flush.
 * @a:	the arena, locked.
 */
void kva_dmem_flush(struct kva_arena *a)
{
	struct kva_dmem *d = a->dmem;
	u32 t;

	lockdep_assert_held(&a->lock);
	if (!d)
		return;
	if (a->core.tags_ended)
		collect(a);
	for (t = 1; d->nr_pending && t < a->core.nr_tags; t++) {
		struct kva_dmem_rec *rec = &d->recs[t];

		if (!rec->pool)
			continue;
		rec_flush(a, rec);
		/*
		 * A few empty records stay, with no reference (their pool is
		 * only compared, never touched): a client's last frame comes
		 * and goes.
		 */
		if (!rec->refs && d->nr_empty > KVA_DMEM_EMPTY_KEPT) {
			rec->pool = NULL;
			d->nr_empty--;
		}
	}
}

/*
 * Reclaim cached frames charged within @limit's subtree, oldest first,
 * until @want are gone: those dmem.min does not protect, and dmem.low
 * too unless nothing else is left.  Returns how many.
 */
static u32 reclaim_within(struct kva_arena *a,
			  struct dmem_cgroup_pool_state *limit, u32 want)
{
	struct kva_core *c = &a->core;
	bool ignore_low = false, hit_low = false;
	u32 done = 0, idx, next;

again:
	for (idx = c->lru_head; idx != KVA_NIL && done < want; idx = next) {
		struct kva_dmem_rec *rec = frame_rec(a, idx);

		next = c->frames[idx].next;
		if (!rec || !dmem_cgroup_state_evict_valuable(limit, rec->pool,
							      ignore_low,
							      &hit_low))
			continue;
		if (!kva_core_reclaim_frame(c, idx))
			done++;
	}
	if (done < want && hit_low && !ignore_low) {
		ignore_low = true;
		goto again;
	}
	kva_dmem_flush(a);
	return done;
}

/*
 * dmem.max was written below a cgroup's dmem.current: reclaim cached
 * frames charged within it (the controller retries while this makes
 * progress).
 */
static int kva_dmem_reclaim(struct dmem_cgroup_pool_state *pool,
			    u64 target_bytes, void *priv)
{
	struct kva_arena *a = priv;
	u64 want = DIV_ROUND_UP_ULL(target_bytes, a->frame_size);
	u32 done;

	mutex_lock(&a->lock);
	done = reclaim_within(a, pool, min_t(u64, want, U32_MAX));
	kva_arena_update_pressure(a);
	mutex_unlock(&a->lock);
	return done ? 0 : -ENOSPC;
}

static const struct dmem_cgroup_ops kva_dmem_ops = {
	.reclaim = kva_dmem_reclaim,
};

/**
 * kva_dmem_init() - register @a's region, if the module charges to dmem.
 * @a:		an arena being made (its core set up, nothing else).
 *
 * Return: 0 (also when there is nothing to do) or -ENOMEM.  A kernel
 * whose controller is off (cgroup_disable=dmem) registers nothing and
 * charges nothing.
 */
int kva_dmem_init(struct kva_arena *a)
{
	const struct dmem_cgroup_init init = {
		.size = (u64)a->core.nr_frames * a->frame_size,
		.ops = &kva_dmem_ops,
		.reclaim_priv = a,
	};
	struct dmem_cgroup_region *region;
	struct kva_dmem *d;

	if (!READ_ONCE(dmem))
		return 0;
	d = kzalloc(sizeof(*d), GFP_KERNEL_ACCOUNT);
	if (!d)
		return -ENOMEM;
	d->recs = kcalloc(KVA_DMEM_RECS, sizeof(*d->recs), GFP_KERNEL_ACCOUNT);
	a->core.tag_ended = kcalloc(KVA_DMEM_RECS, sizeof(u32),
				    GFP_KERNEL_ACCOUNT);
	if (!d->recs || !a->core.tag_ended)
		goto err_free;
	region = dmem_cgroup_register_region(&init, "kvarena/%s", a->name);
	if (IS_ERR_OR_NULL(region))
		goto err_free;
	d->region = region;
	a->dmem = d;
	a->core.nr_tags = KVA_DMEM_RECS;
	a->core.reclaim_rank = kva_dmem_rank;
	return 0;

err_free:
	kfree(a->core.tag_ended);
	a->core.tag_ended = NULL;
	kfree(d->recs);
	kfree(d);
	return -ENOMEM;
}

/*
 * Room for twice the records: the records and the core's counters move
 * to arrays twice the size (under the arena's lock, as every use).
 */
static int recs_grow(struct kva_arena *a, gfp_t gfp)
{
	struct kva_core *c = &a->core;
	struct kva_dmem *d = a->dmem;
	u32 nr = c->nr_tags * 2;
	struct kva_dmem_rec *recs;
	u32 *ended;

	if (nr > U16_MAX + 1)
		return -ENOSPC;
	recs = kcalloc(nr, sizeof(*recs), gfp);
	ended = kcalloc(nr, sizeof(*ended), gfp);
	if (!recs || !ended) {
		kfree(recs);
		kfree(ended);
		return -ENOMEM;
	}
	memcpy(recs, d->recs, c->nr_tags * sizeof(*recs));
	memcpy(ended, c->tag_ended, c->nr_tags * sizeof(*ended));
	kfree(d->recs);
	kfree(c->tag_ended);
	d->recs = recs;
	c->tag_ended = ended;
	c->nr_tags = nr;
	return 0;
}

/*
 * The number of @pool's record, or of a new one (taking the reference
 * given); 0 when there is no room and none could be made.
 */
static u32 rec_get(struct kva_arena *a, struct dmem_cgroup_pool_state *pool,
		   unsigned int how)
{
	struct kva_dmem *d = a->dmem;
	struct kva_dmem_rec *rec;
	u32 t, unused = 0;

	/*
	 * Each charge's reference is kept: the uncharge of a later return
	 * uses it, so that a steady ALLOC and FREE costs one call each way.
	 */
	for (t = 1; t < a->core.nr_tags; t++) {
		rec = &d->recs[t];
		if (rec->pool != pool) {
			if (!rec->pool && !unused)
				unused = t;
			continue;
		}
		if (!rec->refs++) {
			/* An empty one: the pool may be another at that address. */
			d->nr_empty--;
			rec->rank_seq = 0;
		}
		return t;
	}
	if (!unused) {
		unused = a->core.nr_tags;
		if (recs_grow(a, (how & KVA_HOW_NONBLOCK) ?
			      GFP_NOWAIT | __GFP_NOWARN | __GFP_ACCOUNT :
			      GFP_KERNEL_ACCOUNT))
			return 0;
	}
	d->recs[unused] = (struct kva_dmem_rec){ .pool = pool, .refs = 1 };
	return unused;
}

/**
 * kva_dmem_alloc() - kva_core_alloc(), with the frames charged to the
 * caller's dmem cgroup.
 * @a:		the arena, locked.
 * @cl:		the core client the frames are for.
 * @handles:	out, as kva_core_alloc().
 * @n:		frames asked for.
 * @partial:	as kva_core_alloc(): take what may be had.
 * @how:	KVA_HOW_*: without sleeping under KVA_HOW_NONBLOCK.
 *
 * Return: as kva_core_alloc(), or -EDQUOT when a dmem.max refused the
 * charge (nothing taken, nothing counted), -EAGAIN (non-blocking, no
 * memory for a record) or -ENOMEM.
 */
int kva_dmem_alloc(struct kva_arena *a, struct kva_core_client *cl,
		   u64 *handles, u32 n, bool partial, unsigned int how)
{
	struct kva_dmem *d = a->dmem;
	struct dmem_cgroup_pool_state *pool, *limit;
	struct kva_dmem_rec *rec;
	u32 avail, tag;
	int ret, got;

	lockdep_assert_held(&a->lock);
	if (!d || !d->region || !n)
		return kva_core_alloc(&a->core, cl, handles, n, partial);
	/* What the core will refuse, it refuses uncharged. */
	avail = kva_core_available(&a->core, cl);
	if (!avail || (!partial && n > avail))
		return kva_core_alloc(&a->core, cl, handles, n, partial);
	n = min(n, avail);

	for (;;) {
		ret = dmem_cgroup_try_charge(d->region, (u64)n * a->frame_size,
					     &pool, &limit);
		if (ret != -EAGAIN)
			break;
		got = reclaim_within(a, limit, n);
		dmem_cgroup_pool_state_put(limit);
		if (got)
			continue;
		if (!partial || n == 1)
			return -EDQUOT;
		n /= 2;
	}
	if (ret)
		return ret == -ENOMEM ? ret : kva_core_alloc(&a->core, cl,
							     handles, n,
							     partial);
	tag = rec_get(a, pool, how);
	if (!tag) {
		dmem_cgroup_uncharge(pool, (u64)n * a->frame_size);
		return (how & KVA_HOW_NONBLOCK) ? -EAGAIN : -ENOMEM;
	}

	got = kva_core_alloc(&a->core, cl, handles, n, partial);
	rec = &d->recs[tag];
	if (got > 0) {
		kva_core_tag(&a->core, handles, got, tag);
		rec->frames += got;
	}
	/* Charged and not taken: given back now, with the returns. */
	if (got < (int)n) {
		if (!rec->pending)
			d->nr_pending++;
		rec->pending += n - (got > 0 ? got : 0);
	}
	kva_dmem_flush(a);
	return got;
}

/**
 * kva_dmem_attach() - make the caller's pool of @a's region now, so that
 * its first non-blocking ALLOC does not have to.
 * @a:	the arena, locked.
 */
void kva_dmem_attach(struct kva_arena *a)
{
	struct dmem_cgroup_pool_state *pool;

	lockdep_assert_held(&a->lock);
	if (a->dmem && a->dmem->region &&
	    !dmem_cgroup_try_charge(a->dmem->region, 0, &pool, NULL))
		dmem_cgroup_uncharge(pool, 0);
}

/**
 * kva_dmem_kill() - @a is destroyed: unregister its region (a new arena
 * of the same name registers its own); frames still held stay charged
 * until they come back, and nothing is charged any more.
 * @a:	the arena, unlocked, its cache dropped.
 */
void kva_dmem_kill(struct kva_arena *a)
{
	struct dmem_cgroup_region *region = NULL;

	if (!a->dmem)
		return;
	mutex_lock(&a->lock);
	kva_dmem_flush(a);
	swap(region, a->dmem->region);
	mutex_unlock(&a->lock);
	dmem_cgroup_unregister_region(region);
}

/**
 * kva_dmem_fini() - the arena's last reference went: give back what is
 * still charged (frames left cached, or never taken back) and free the
 * records.
 * @a:	the arena.
 */
void kva_dmem_fini(struct kva_arena *a)
{
	struct kva_core *c = &a->core;
	struct kva_dmem *d = a->dmem;
	u32 i;

	if (!d)
		return;
	collect(a);
	/*
	 * No client is left: what is still charged can only be cached, and
	 * the core counts no tenure after this.
	 */
	for (i = 0; i < c->nr_frames; i++) {
		WARN_ON_ONCE(c->frames[i].tag &&
			     !(c->frames[i].flags & KVA_FRAME_CACHED));
		c->frames[i].tag = 0;
	}
	for (i = 1; i < c->nr_tags; i++) {
		struct kva_dmem_rec *rec = &d->recs[i];

		if (!rec->pool)
			continue;
		if (rec->frames) {
			if (!rec->pending)
				d->nr_pending++;
			rec->pending += rec->frames;
			rec->frames = 0;
		}
		rec_flush(a, rec);
		WARN_ON(rec->refs);
	}
	WARN_ON(d->nr_pending);
	dmem_cgroup_unregister_region(d->region);
	kfree(c->tag_ended);
	c->tag_ended = NULL;
	c->nr_tags = 0;
	kfree(d->recs);
	kfree(d);
	a->dmem = NULL;
}

#endif /* KVA_DMEM */
