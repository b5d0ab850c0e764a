// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: what a viewer sees of an arena's figures - the one rule that
 * STAT, sysfs and, through STAT and CLIENTS, every tool follow.
 *
 * The arena's owner and administrators see the arena's figures.  Anyone
 * else who may view the arena sees:
 *
 *  - its settings (sizes, kinds, policy, tiers, gangs, resizing): they
 *    say what the arena is, not what anybody did;
 *  - its capacity levels as every allocator reveals them: frames held
 *    (by anyone), free, reserved for guarantees, the peak, pressure -
 *    with other domains' cached frames counted as free, since an ALLOC
 *    may reclaim them, so that a hit or a publish of another domain looks
 *    like any allocation or free;
 *  - and of all activity - the prefix cache (cached, published, hits,
 *    misses, reclaims, dirty frames, tier copies), the commands (ALLOC,
 *    FREE, failures, frames handed out and back), the clients and what
 *    they filled - its own domain's only.
 *
 * Documentation/kvarena.rst has the table of every figure of every
 * surface with its rule; selftests/kvarena/figures_test walks it.
 */
#include "kva.h"

/* The activity of domain @d (NULL: none yet), added to @f (locked). */
static void figures_of_domain(struct kva_arena *a,
			      const struct kva_core_domain *d,
			      struct kva_figures *f)
{
	struct kva_client *cl;

	if (!d)
		return;
	f->cached = d->cached;
	f->published = d->published;
	f->dirty = d->nr_dirty;
	f->hits = d->hits;
	f->misses = d->misses;
	f->reclaims = d->reclaims;
	f->demoted = kva_domain_copies(d, 0);
	f->promoted = kva_domain_copies(d, 1);
	f->failed = kva_domain_copies(d, 2);
	list_for_each_entry(cl, &a->clients, node) {
		if (cl->core.dom != d)
			continue;
		f->clients++;
		f->filled_bytes += cl->filled_bytes;
		f->filled_tokens += cl->filled_tokens;
		f->alloc_calls += cl->core.alloc_calls;
		f->free_calls += cl->core.free_calls;
		f->alloc_failures += cl->core.alloc_failures;
	}
}

/**
 * kva_figures() - the figures of arena @a that a viewer of domain @dom
 * sees.
 * @a:		the arena, locked.
 * @dom:	0 for the arena's owner and administrators, else the
 *		viewer's domain (kva_viewer_domain()).
 * @f:		out.
 *
 * @f->free + @f->cached + @f->held is the arena's frames either way.
 */
void kva_figures(struct kva_arena *a, u64 dom, struct kva_figures *f)
{
	const struct kva_core *c = &a->core;

	lockdep_assert_held(&a->lock);
	memset(f, 0, sizeof(*f));
	f->domain = dom;
	f->held = kva_core_held(c);
	f->reserved = c->unmet_min;
	f->peak_held = c->peak_held;
	if (dom) {
		figures_of_domain(a, kva_domain_find(a, dom), f);
		/* Others' cached frames: free, as far as this viewer goes. */
		f->free = c->nr_free + c->nr_cached - f->cached;
		return;
	}
	f->free = c->nr_free;
	f->cached = c->nr_cached;
	f->published = c->nr_published;
	f->clients = a->nr_clients;
	f->dirty = c->nr_dirty + c->nr_cleaning;
	f->filled_bytes = a->filled_bytes;
	f->filled_tokens = a->filled_tokens;
	f->hits = c->cache_hits;
	f->misses = c->cache_misses;
	f->reclaims = c->cache_reclaims;
	f->alloc_calls = c->alloc_calls;
	f->free_calls = c->free_calls;
	f->alloc_failures = c->alloc_failures;
	f->frames_allocated = c->frames_allocated;
	f->frames_freed = c->frames_freed;
	f->frames_cleared = c->frames_cleaned;
	f->demoted = kva_tier_copies(a, 0);
	f->promoted = kva_tier_copies(a, 1);
	f->failed = kva_tier_copies(a, 2);
}
