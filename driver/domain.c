// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: cache domains - which clients see one another's prefixes,
 * whose figures and events a viewer sees, and the clearing of host
 * frames between domains.
 *
 * Every client belongs to one domain, fixed at ATTACH: by the arena's
 * rule (one per uid by default, one per gid, or one for the whole arena),
 * a private one of its own (KVARENA_ATTACH_PRIVATE), or one the arena's
 * owner or an administrator names (KVARENA_ATTACH_DOMAIN).  The core
 * files keys per domain and keeps each frame within one domain at a time
 * (core.h); this file keeps the domain objects, which live while a client
 * is in them or a frame carries their data, and clears host frames.
 *
 * Clearing.  A host frame freed by a client of domain D waits on D's
 * dirty list: D's clients take it again as it is, anyone else gets a
 * cleared frame.  A worker clears dirty frames ahead of need, keeping a
 * stock of clean frames; an ALLOC that finds too few clears what it needs
 * itself.  Frames are cleared while they belong to nobody (the core's
 * kva_core_take_dirty()), so no mapping can see one half-cleared.  A
 * CUDA arena's memory is not the module's to touch: its dirty frames wait
 * for a scrubber, a process of the arena's owner (scrub.c).
 */
#include <linux/cred.h>
#include <linux/highmem.h>
#include <linux/list.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "kva.h"

struct kva_domain {
	struct kva_core_domain core;
	struct list_head node;		/* kva_arena.domains */
	u64 copies[3];			/* kva_domain_copied() */
};

/* The core let go of @d's last reference (arena locked). */
static void kva_domain_release(struct kva_core *c, struct kva_core_domain *d)
{
	struct kva_domain *dom = container_of(d, struct kva_domain, core);

	list_del(&dom->node);
	kfree(dom);
}

/**
 * kva_domains_init() - an arena's domains and clearing, at create.
 * @a:	the arena, not yet visible.
 */
void kva_domains_init(struct kva_arena *a)
{
	INIT_LIST_HEAD(&a->domains);
	INIT_WORK(&a->clear_work, kva_clear_work);
	a->core.dom_release = kva_domain_release;
	/*
	 * A file arena's frames are read by the agent alone, and one is
	 * published only once a copy has written all of it: nobody can
	 * see what another domain left there.
	 */
	if (!(a->flags & KVARENA_CREATE_NO_BACKING) &&
	    a->mem_kind != KVARENA_MEM_FILE)
		a->core.clear = (a->flags & KVARENA_CREATE_CLEAR_ALWAYS) ?
				KVA_CLEAR_ALWAYS : KVA_CLEAR_DOMAIN;
	kva_clean_target_update(a);
}

/*
 * The stock of clean frames the worker keeps, when it can: set at create,
 * and again when a resize changed the arena's capacity.
 */
void kva_clean_target_update(struct kva_arena *a)
{
	a->clean_target = max3(a->low_watermark,
			       kva_core_capacity(&a->core) / 16, 1u);
}

/* kva_domains_fini() - the arena is being freed: every domain goes. */
void kva_domains_fini(struct kva_arena *a)
{
	struct kva_domain *dom, *tmp;

	list_for_each_entry_safe(dom, tmp, &a->domains, node)
		kfree(dom);
	INIT_LIST_HEAD(&a->domains);
}

u64 kva_domain_id(const struct kva_core_domain *d)
{
	return d ? d->id : 0;
}

/**
 * kva_domain_copied() - a tier copy of a frame of domain @id ended (the
 * upper arena locked): counted for the domain's viewers while it lives.
 * @a:		the upper arena.
 * @id:		the domain.
 * @which:	0: copied down, 1: copied up, 2: failed or lost.
 */
void kva_domain_copied(struct kva_arena *a, u64 id, int which)
{
	struct kva_core_domain *d = kva_domain_find(a, id);

	if (d)
		container_of(d, struct kva_domain, core)->copies[which]++;
}

/* The copies of domain @d's frames kva_domain_copied() counted. */
u64 kva_domain_copies(const struct kva_core_domain *d, int which)
{
	return container_of(d, struct kva_domain, core)->copies[which];
}

/* The domain the arena's rule gives the caller (arena locked). */
u64 kva_domain_by_rule(struct kva_arena *a)
{
	lockdep_assert_held(&a->lock);
	switch (a->policy.cache_domains) {
	case KVARENA_DOMAINS_GID:
		return KVARENA_DOMAIN(KVARENA_DOMAIN_KIND_GID,
				      (u64)__kgid_val(current_egid()));
	case KVARENA_DOMAINS_ARENA:
		return KVARENA_DOMAIN(KVARENA_DOMAIN_KIND_ARENA, 0);
	default:
		return KVARENA_DOMAIN(KVARENA_DOMAIN_KIND_UID,
				      (u64)__kuid_val(current_euid()));
	}
}

/* @id's domain object, or NULL (arena locked). */
struct kva_core_domain *kva_domain_find(struct kva_arena *a, u64 id)
{
	struct kva_domain *dom;

	lockdep_assert_held(&a->lock);
	list_for_each_entry(dom, &a->domains, node)
		if (dom->core.id == id)
			return &dom->core;
	return NULL;
}

/**
 * kva_domain_get() - @id's domain, made from @spare if it has none yet.
 * @a:		the arena, locked.
 * @id:		the domain.
 * @spare:	a zeroed object the caller allocated; set to NULL when used.
 *
 * The domain holds no reference for the caller: kva_core_attach_domain()
 * takes the client's.  One made here and then not attached to must go
 * with kva_domain_put_unused().
 */
struct kva_core_domain *kva_domain_get(struct kva_arena *a, u64 id,
				       struct kva_domain **spare)
{
	struct kva_core_domain *d = kva_domain_find(a, id);
	struct kva_domain *dom = *spare;

	if (d)
		return d;
	*spare = NULL;
	dom->core.id = id;
	dom->core.dirty_head = KVA_NIL;
	dom->core.lru_head = KVA_NIL;
	dom->core.lru_tail = KVA_NIL;
	list_add_tail(&dom->node, &a->domains);
	return &dom->core;
}

struct kva_domain *kva_domain_alloc(void)
{
	return kzalloc(sizeof(struct kva_domain), GFP_KERNEL_ACCOUNT);
}

void kva_domain_free(struct kva_domain *dom)
{
	kfree(dom);
}

/* A domain kva_domain_get() gave that nobody took a reference to. */
void kva_domain_put_unused(struct kva_arena *a, struct kva_core_domain *d)
{
	if (d && !d->refs)
		kva_domain_release(&a->core, d);
}

/**
 * kva_domains_set_cap() - a new cap on each domain's cached frames; those
 * past it lose their oldest at once.
 * @a:		the arena, locked.
 * @max:	the cap, 0 for none.
 */
void kva_domains_set_cap(struct kva_arena *a, u32 max)
{
	struct kva_domain *dom, *tmp;

	lockdep_assert_held(&a->lock);
	a->core.dom_cached_max = max;
	/* A domain trimmed to nothing may be released: walk safely. */
	list_for_each_entry_safe(dom, tmp, &a->domains, node)
		kva_core_trim_domain(&a->core, &dom->core);
}

/* Is the caller the arena's owner or an administrator? */
bool kva_arena_owner(struct kva_arena *a, unsigned int how)
{
	return uid_eq(current_fsuid(), a->policy.uid) || kva_admin(how);
}

/**
 * kva_viewer_domain() - whose figures, clients and events a viewer sees.
 * @a:		the arena, locked.
 * @cl:		the viewer's /dev/kvarena file, or NULL (sysfs).
 * @how:	KVA_HOW_*.
 *
 * Return: 0 (everything) for the arena's owner and administrators; else
 * the domain of the viewer's client if its file is attached to @a, else
 * the domain the arena's rule would give the viewer.
 */
u64 kva_viewer_domain(struct kva_arena *a, struct kva_client *cl,
		      unsigned int how)
{
	lockdep_assert_held(&a->lock);
	if (kva_arena_owner(a, how))
		return 0;
	/* Pairs with smp_store_release() in kva_ioc_attach(). */
	if (cl && smp_load_acquire(&cl->arena) == a && !cl->evicted &&
	    cl->core.dom)
		return cl->core.dom->id;
	return kva_domain_by_rule(a);
}

/* ---- clearing ------------------------------------------------------------- */

/* Clear frames @idx[0..n) of the host memory @base. */
static void kva_clear_pages(struct page **base, u64 ppf, const u32 *idx,
			    u32 n)
{
	u32 i;
	u64 p;

	for (i = 0; i < n; i++) {
		struct page **pages = base + idx[i] * ppf;

		for (p = 0; p < ppf; p++)
			clear_highpage(pages[p]);
		cond_resched();
	}
}

/*
 * Clear host frames @idx[0..n) (no lock held; they belong to nobody): a
 * gang's in every member.
 */
static void kva_clear_frames(struct kva_arena *a, const u32 *idx, u32 n)
{
	u64 ppf = a->frame_size >> PAGE_SHIFT;
	u32 r;

	if (!a->members) {
		kva_clear_pages(a->pages, ppf, idx, n);
		return;
	}
	for (r = 0; r < a->nr_members; r++)
		kva_clear_pages(kva_member_pages(a, r), ppf, idx, n);
}

#define KVA_CLEAR_BATCH	16

/**
 * kva_clear_work() - the worker: clear dirty frames until the arena has
 * its stock of clean ones, or none are dirty.
 * @work:	the arena's clear_work.
 */
void kva_clear_work(struct work_struct *work)
{
	struct kva_arena *a = container_of(work, struct kva_arena, clear_work);
	u32 idx[KVA_CLEAR_BATCH], n;

	for (;;) {
		u32 clean, want = 0;

		mutex_lock(&a->lock);
		clean = kva_core_clean(&a->core);
		/*
		 * Only the stock: a domain may still take its own as they are.
		 * A gang's member has nothing of its own to clear: its memory
		 * is the gang's (gang.c).
		 */
		if (!a->dead && !a->gang && clean < a->clean_target)
			want = min(a->clean_target - clean, KVA_CLEAR_BATCH);
		n = want ? kva_core_take_dirty(&a->core, NULL, idx, want) : 0;
		mutex_unlock(&a->lock);
		if (!n)
			return;
		kva_clear_frames(a, idx, n);
		mutex_lock(&a->lock);
		kva_core_put_clean(&a->core, idx, n);
		mutex_unlock(&a->lock);
	}
}

/*
 * Frames were freed: start the worker (on a CUDA arena, wake the
 * scrubbers) if the clean stock runs low (locked).
 */
void kva_clear_kick(struct kva_arena *a)
{
	lockdep_assert_held(&a->lock);
	if (!a->core.nr_dirty || a->dead ||
	    kva_core_clean(&a->core) >= a->clean_target)
		return;
	if (a->scrub)
		kva_scrub_kick(a);
	else
		queue_work(system_unbound_wq, &a->clear_work);
}

/**
 * kva_clear_for() - an ALLOC of @cl's found too few frames it may take as
 * they are: clear some of the others' dirty ones for it.
 * @cl:	the client, whose arena lock the caller holds; it is dropped
 *	while clearing and held again on return.
 *
 * Return: 0 (try again), or -EINTR for a fatal signal.
 */
int kva_clear_for(struct kva_client *cl)
{
	struct kva_arena *a = cl->arena;
	u32 idx[KVA_CLEAR_BATCH], n;

	n = kva_core_take_dirty(&a->core, &cl->core, idx, KVA_CLEAR_BATCH);
	mutex_unlock(&a->lock);
	if (n)
		kva_clear_frames(a, idx, n);
	else
		/* Another thread is clearing the ones there are. */
		schedule_timeout_uninterruptible(1);
	mutex_lock(&a->lock);
	kva_core_put_clean(&a->core, idx, n);
	return fatal_signal_pending(current) ? -EINTR : 0;
}

/**
 * kva_clear_some() - clear a batch of a host arena's dirty frames now, in
 * the caller's time (a tier agent's, whose demotions need them).
 * @a:	the arena, not locked.
 *
 * Return: the frames cleared.
 */
u32 kva_clear_some(struct kva_arena *a)
{
	u32 idx[KVA_CLEAR_BATCH], n;

	mutex_lock(&a->lock);
	n = a->dead ? 0 : kva_core_take_dirty(&a->core, NULL, idx,
					       KVA_CLEAR_BATCH);
	mutex_unlock(&a->lock);
	if (!n)
		return 0;
	kva_clear_frames(a, idx, n);
	mutex_lock(&a->lock);
	kva_core_put_clean(&a->core, idx, n);
	kva_arena_update_pressure(a);
	mutex_unlock(&a->lock);
	return n;
}
