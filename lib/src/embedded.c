// SPDX-License-Identifier: MIT
/*
 * The embedded arena: the module's own core allocator (driver/core.c),
 * run in process under the arena's lock, with this handle as its one
 * client.  Used where there is no /dev/kvarena.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#include "internal.h"

/* The module's entries are the core's (driver/prefix.c checks the same). */
_Static_assert(sizeof(struct kvarena_prefix_entry) ==
	       sizeof(struct kva_core_prefix), "prefix entry layout");
_Static_assert(offsetof(struct kvarena_prefix_entry, handle) ==
	       offsetof(struct kva_core_prefix, handle), "prefix entry layout");
_Static_assert(offsetof(struct kvarena_prefix_entry, flags) ==
	       offsetof(struct kva_core_prefix, flags), "prefix entry layout");

struct kva_embedded {
	struct kva_core core;
	struct kva_core_client client;
	struct kva_usage_report usage;
};

static struct kva_embedded *emb(struct kva_arena *a)
{
	return a->prov_priv;
}

static int emb_alloc(struct kva_arena *a, uint64_t *h, uint32_t n,
		     bool partial, const struct kva_usage_report *usage)
{
	struct kva_embedded *e = emb(a);
	int ret = kva_core_alloc(&e->core, &e->client, h, n, partial);

	if (ret > 0 && usage)
		e->usage = *usage;
	return ret;
}

static int emb_free(struct kva_arena *a, const uint64_t *h, uint32_t n,
		    const struct kva_usage_report *usage)
{
	struct kva_embedded *e = emb(a);

	if (usage)
		e->usage = *usage;
	return kva_core_free(&e->core, &e->client, h, n);
}

static int emb_report(struct kva_arena *a, const struct kva_usage_report *u)
{
	emb(a)->usage = *u;
	return 0;
}

static int emb_stat(struct kva_arena *a, struct kva_stat *st)
{
	struct kva_embedded *e = emb(a);

	st->frame_size = a->frame_size;
	st->nr_frames = e->core.nr_frames;
	st->nr_free = e->core.nr_free;
	st->nr_held = kva_core_held(&e->core);
	st->nr_clients = e->core.nr_clients;
	st->filled_tokens = e->usage.tokens;
	st->filled_bytes = e->usage.bytes;
	st->alloc_calls = e->core.alloc_calls;
	st->free_calls = e->core.free_calls;
	st->nr_cached = e->core.nr_cached;
	st->nr_published = e->core.nr_published;
	st->cache_hits = e->core.cache_hits;
	st->cache_misses = e->core.cache_misses;
	st->max_frames = e->core.nr_frames;
	return 0;
}

static int emb_publish(struct kva_arena *a, struct kvarena_prefix_entry *ent,
		       uint32_t n, const uint32_t *tokens, uint32_t per_entry)
{
	struct kva_embedded *e = emb(a);

	return kva_core_publish(&e->core, &e->client,
				(struct kva_core_prefix *)ent, n);
}

static int emb_lookup(struct kva_arena *a, struct kvarena_prefix_entry *ent,
		      uint32_t n)
{
	struct kva_embedded *e = emb(a);
	uint32_t need = kva_core_holds_need(&e->core, n);

	/* One client: shared holds are rare, but the core asks all the same. */
	if (need) {
		struct kva_hold *recs = kva_core_holds_alloc(need);

		if (!recs)
			return -ENOMEM;
		kva_core_holds_free(kva_core_holds_grow(&e->core, recs, need));
	}
	return kva_core_prefix_lookup(&e->core, &e->client,
				      (struct kva_core_prefix *)ent, n);
}

static void emb_close(struct kva_arena *a)
{
	struct kva_embedded *e = emb(a);

	kva_core_detach(&e->core, &e->client);
	kva_core_fini(&e->core);
	free(e);
	a->prov_priv = NULL;
}

const struct kva_provider kva_embedded_provider = {
	.alloc = emb_alloc,
	.free = emb_free,
	.report = emb_report,
	.stat = emb_stat,
	.publish = emb_publish,
	.lookup = emb_lookup,
	.close = emb_close,
};

int kva_embedded_open(struct kva_arena *a, const struct kva_open_opts *o)
{
	const char *name = o->name ? o->name : "embedded";
	struct kva_embedded *e;
	int ret;

	/* The module's limits, so that code moves between modes unchanged. */
	if (!o->nr_frames || o->nr_frames > (1u << 24) ||
	    o->frame_size < 4096 || o->frame_size > (1ull << 30) ||
	    (o->frame_size & (o->frame_size - 1)) ||
	    strlen(name) >= sizeof(a->name))
		return -EINVAL;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	ret = kva_core_init(&e->core, o->nr_frames);
	if (ret)
		goto err_free;
	ret = kva_core_attach(&e->core, &e->client, o->min_frames,
			      o->max_frames);
	if (ret)
		goto err_fini;

	strcpy(a->name, name);
	a->prov = &kva_embedded_provider;
	a->prov_priv = e;
	a->frame_size = o->frame_size;
	a->nr_frames = o->nr_frames;
	a->backend = o->mem_kind;
	a->mem_dev = o->mem_dev;
	a->transport = KVA_TRANSPORT_NONE;
	a->transport_reason = "embedded: no module";
	return 0;

err_fini:
	kva_core_fini(&e->core);
err_free:
	free(e);
	return ret;
}
