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
	return 0;
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
	return 0;

err_fini:
	kva_core_fini(&e->core);
err_free:
	free(e);
	return ret;
}
