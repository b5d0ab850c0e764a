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
 * each frame points at its record, and a frame's return is noted in the
 * record (@pending) and given back to the controller at the next
 * kva_dmem_flush() - called with every pressure update, i.e. after every
 * command that let frames go - in one uncharge per record.  A record
 * that would give back bytes with its last reference while it still has
 * frames takes another reference first (dmem_cgroup_get_common_ancestor()
 * of the pool with itself).  Everything is under the arena's lock.
 */
#include <linux/list.h>
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
 * @pool:	the pool (a cgroup's share of the region).
 * @frames:	frames of the arena charged there and not returned.
 * @pending:	frames returned (or charged and not taken) whose bytes
 *		the next flush gives back.
 * @refs:	references on @pool held: one per charge not yet matched by
 *		an uncharge, at least one while the record has frames or
 *		bytes to give back; none while it is empty (@pool is then
 *		only compared).
 * @rank:	its frames' rank in the reclaim numbered @rank_seq.
 * @rank_seq:	struct kva_core.reclaim_seq when @rank was found.
 * @node:	on struct kva_dmem.recs.
 */
struct kva_dmem_rec {
	struct dmem_cgroup_pool_state *pool;
	u32 frames;
	u32 pending;
	u32 refs;
	u32 rank;
	u64 rank_seq;
	struct list_head node;
};

/**
 * struct kva_dmem - an arena's region and records.
 * @region:	the registered region; NULL once the arena is destroyed
 *		(no charges after that: its frames are uncharged).
 * @frame:	the record of each frame of the table, NULL while free or
 *		uncharged.
 * @recs:	the records.
 * @nr_pending:	records with frames to give back.
 * @nr_empty:	records kept with no frames and no reference.
 */
struct kva_dmem {
	struct dmem_cgroup_region *region;
	struct kva_dmem_rec **frame;
	struct list_head recs;
	u32 nr_pending;
	u32 nr_empty;
};

/* Empty records kept for the next charge of their pool. */
#define KVA_DMEM_EMPTY_KEPT	8

/* struct kva_core.returned: frame @idx is free again (core_shim.h). */
void kva_dmem_returned(struct kva_core *c, u32 idx)
{
	struct kva_arena *a = container_of(c, struct kva_arena, core);
	struct kva_dmem *d = a->dmem;
	struct kva_dmem_rec *rec = d->frame[idx];

	if (!rec)
		return;
	d->frame[idx] = NULL;
	if (KVA_WARN_ON(!rec->frames))
		return;
	rec->frames--;
	if (!rec->pending++)
		d->nr_pending++;
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
	struct kva_dmem_rec *rec = a->dmem->frame[idx];
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
	struct kva_dmem_rec *rec, *tmp;

	lockdep_assert_held(&a->lock);
	if (!d || !d->nr_pending)
		return;
	list_for_each_entry_safe(rec, tmp, &d->recs, node) {
		rec_flush(a, rec);
		/*
		 * A few empty records stay, with no reference (their pool is
		 * only compared, never touched): a client's last frame comes
		 * and goes.
		 */
		if (!rec->refs && d->nr_empty > KVA_DMEM_EMPTY_KEPT) {
			list_del(&rec->node);
			kfree(rec);
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
	struct kva_dmem *d = a->dmem;
	bool ignore_low = false, hit_low = false;
	u32 done = 0, idx, next;

again:
	for (idx = c->lru_head; idx != KVA_NIL && done < want; idx = next) {
		struct kva_dmem_rec *rec = d->frame[idx];

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
 * @table:	frames of its table.
 *
 * Return: 0 (also when there is nothing to do) or -ENOMEM.  A kernel
 * whose controller is off (cgroup_disable=dmem) registers nothing and
 * charges nothing.
 */
int kva_dmem_init(struct kva_arena *a, u32 table)
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
	d->frame = kvcalloc(table, sizeof(*d->frame), KVA_GFP_TABLE);
	if (!d->frame)
		goto err_free;
	region = dmem_cgroup_register_region(&init, "kvarena/%s", a->name);
	if (IS_ERR_OR_NULL(region))
		goto err_free_table;
	d->region = region;
	INIT_LIST_HEAD(&d->recs);
	a->dmem = d;
	a->core.returned = kva_dmem_returned;
	a->core.reclaim_rank = kva_dmem_rank;
	return 0;

err_free_table:
	kvfree(d->frame);
err_free:
	kfree(d);
	return -ENOMEM;
}

/* The record of @pool, or a new one (taking the reference given). */
static struct kva_dmem_rec *rec_get(struct kva_arena *a,
				    struct dmem_cgroup_pool_state *pool,
				    unsigned int how)
{
	struct kva_dmem *d = a->dmem;
	struct kva_dmem_rec *rec;

	/*
	 * Each charge's reference is kept: the uncharge of a later return
	 * uses it, so that a steady ALLOC and FREE costs one call each way.
	 */
	list_for_each_entry(rec, &d->recs, node) {
		if (rec->pool != pool)
			continue;
		if (!rec->refs++) {
			/* An empty one: the pool may be another at that address. */
			d->nr_empty--;
			rec->rank_seq = 0;
		}
		return rec;
	}
	rec = kzalloc(sizeof(*rec), (how & KVA_HOW_NONBLOCK) ?
		      GFP_NOWAIT | __GFP_NOWARN | __GFP_ACCOUNT :
		      GFP_KERNEL_ACCOUNT);
	if (!rec)
		return NULL;
	rec->pool = pool;
	rec->refs = 1;
	list_add_tail(&rec->node, &d->recs);
	return rec;
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
	u32 avail, i;
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
	rec = rec_get(a, pool, how);
	if (!rec) {
		dmem_cgroup_uncharge(pool, (u64)n * a->frame_size);
		return (how & KVA_HOW_NONBLOCK) ? -EAGAIN : -ENOMEM;
	}

	got = kva_core_alloc(&a->core, cl, handles, n, partial);
	for (i = 0; got > 0 && i < got; i++)
		d->frame[KVA_HANDLE_IDX(handles[i])] = rec;
	rec->frames += got > 0 ? got : 0;
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
	struct kva_dmem *d = a->dmem;
	struct kva_dmem_rec *rec, *tmp;
	u32 i;

	if (!d)
		return;
	/* No client is left: what is still charged can only be cached. */
	for (i = 0; i < a->core.nr_frames; i++)
		WARN_ON_ONCE(d->frame[i] &&
			     !(a->core.frames[i].flags & KVA_FRAME_CACHED));
	list_for_each_entry_safe(rec, tmp, &d->recs, node) {
		if (rec->frames) {
			if (!rec->pending)
				d->nr_pending++;
			rec->pending += rec->frames;
			rec->frames = 0;
		}
		rec_flush(a, rec);
		WARN_ON(rec->refs);
		list_del(&rec->node);
		kfree(rec);
	}
	WARN_ON(d->nr_pending);
	dmem_cgroup_unregister_region(d->region);
	kvfree(d->frame);
	kfree(d);
	a->dmem = NULL;
}

#else /* !KVA_DMEM */

/* Never a core's hook without the controller; core_shim.h names it. */
void kva_dmem_returned(struct kva_core *c, u32 idx)
{
}

#endif /* KVA_DMEM */
