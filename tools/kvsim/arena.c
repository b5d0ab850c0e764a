// SPDX-License-Identifier: GPL-2.0
/*
 * kvsim - the kvarena policy's pool: the core allocator of the module and
 * of libkvarena (driver/core.c, compiled in), one core client per engine
 * with its min and max, and frames of the geometry's T_f tokens.  Frame
 * handles are what the core hands out; kvsim keeps them in its block
 * tables as the runtime does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core.h"

#include "kvsim.h"

struct arena {
	struct kva_core core;
	struct kva_core_client cl[KVSIM_MAX_ENGINES];
	int nr_clients;
};

static struct arena *arena(struct pool *p)
{
	return p->priv;
}

static int arena_alloc(struct pool *p, int eng, uint64_t *ids, uint32_t n)
{
	struct arena *a = arena(p);
	int ret = kva_core_alloc(&a->core, &a->cl[eng], ids, n, false);

	return ret < 0 ? ret : 0;
}

static void arena_put(struct pool *p, int eng, const uint64_t *ids,
		      uint32_t n)
{
	struct arena *a = arena(p);
	int ret = kva_core_free(&a->core, &a->cl[eng], ids, n);

	/* The handles came from the core: a refusal is kvsim's bug. */
	if (ret) {
		fprintf(stderr, "%s: the core refused to free %u frames: %d\n",
			kvt_prog, n, ret);
		abort();
	}
}

static void arena_fini(struct pool *p)
{
	struct arena *a = arena(p);
	int i;

	if (!a)
		return;
	for (i = 0; i < a->nr_clients; i++)
		kva_core_detach(&a->core, &a->cl[i]);
	kva_core_fini(&a->core);
	free(a);
	p->priv = NULL;
}

static const struct bpool_ops arena_ops = {
	.alloc = arena_alloc,
	.put = arena_put,
	.fini = arena_fini,
};

bool arena_has_prefix_cache(void)
{
	return false;
}

/*
 * arena_pool_init() - an arena of p->bytes / frame_size frames with
 * @nr_engines clients, each guaranteed @min_frames and limited to
 * @max_frames (0: the arena).
 */
int arena_pool_init(struct pool *p, const struct config *cfg,
		    int nr_engines, uint32_t min_frames, uint32_t max_frames)
{
	uint64_t nr = p->bytes / cfg->g.frame_size;
	struct arena *a;
	int i, err;

	if (!nr)
		return -ENOSPC;
	if (nr >= KVA_NIL)
		return -EFBIG;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	p->priv = a;
	p->ops = &arena_ops;
	p->nr_blocks = (uint32_t)nr;
	p->block_tokens = cfg->g.tokens_per_frame;
	p->block_bytes = cfg->g.frame_size;
	err = kva_core_init(&a->core, (uint32_t)nr);
	if (err) {
		free(a);
		p->priv = NULL;
		return err;
	}
	for (i = 0; i < nr_engines; i++) {
		err = kva_core_attach(&a->core, &a->cl[i], min_frames,
				      max_frames);
		if (err)
			return err;
		a->nr_clients++;
	}
	return bpool_common_init(p);
}
