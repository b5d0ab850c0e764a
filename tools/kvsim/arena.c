// SPDX-License-Identifier: GPL-2.0
/*
 * kvsim - the kvarena policy's pool: the core allocator of the module and
 * of libkvarena (driver/core.c, compiled in), one core client per engine
 * with its min and max, and frames of the geometry's T_f tokens.  Frame
 * handles are what the core hands out; kvsim keeps them in its block
 * tables as the runtime does.
 *
 * The prefix cache is the core's own: LOOKUP (kva_core_prefix_lookup())
 * takes a hold on the longest run of published frames, PUBLISH
 * (kva_core_publish()) puts a prompt's full frames under their keys,
 * and a published frame nobody holds stays cached on the core's LRU until
 * an allocation reclaims it.  The core holds a frame once per client, as
 * the module does per open file; like libkvarena, this adapter counts the
 * engine's sequences that map each frame and lets the core's hold go with
 * the last of them.
 *
 * With a lower tier (kvarena+host, kvarena+swap), the core's report of
 * each cached frame it reclaims for an allocation demotes the frame's
 * key into the tier (tier.c) - what kvarenactl agent does for an arena
 * that names a lower tier.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#include "kvsim.h"

struct arena {
	struct kva_core core;
	struct tier tier;
	struct tier disk;
	bool has_tier, has_disk;
	struct kva_core_client cl[KVSIM_MAX_ENGINES];
	int nr_clients;
	uint32_t *uses[KVSIM_MAX_ENGINES];	/* sequences of the engine
						 * mapping each frame */
	uint64_t *batch;			/* frames to let go of */
	uint32_t batch_cap;
	struct kva_core_prefix *chain;
	uint32_t chain_cap;
};

static struct arena *arena(struct pool *p)
{
	return p->priv;
}

static void *grow_array(void *p, uint32_t *cap, uint32_t n, size_t size)
{
	uint32_t c = *cap ? *cap : 64;

	if (n <= *cap)
		return p;
	while (c < n)
		c *= 2;
	p = realloc(p, c * size);
	if (!p) {
		fprintf(stderr, "%s: out of memory\n", kvt_prog);
		exit(KVT_EXIT_IMPOSSIBLE);
	}
	*cap = c;
	return p;
}

/* A refusal of the core for handles it gave out is kvsim's bug. */
static void core_bug(const char *what, int ret)
{
	fprintf(stderr, "%s: the core refused %s: %d\n", kvt_prog, what, ret);
	abort();
}

static int arena_alloc(struct pool *p, int eng, uint64_t *ids, uint32_t n)
{
	struct arena *a = arena(p);
	int ret = kva_core_alloc(&a->core, &a->cl[eng], ids, n, false);
	uint32_t i;

	if (ret < 0)
		return ret;
	for (i = 0; i < n; i++)
		a->uses[eng][KVA_HANDLE_IDX(ids[i])] = 1;
	return 0;
}

static void arena_put(struct pool *p, int eng, const uint64_t *ids,
		      uint32_t n)
{
	struct arena *a = arena(p);
	uint32_t i, k = 0;
	int ret;

	a->batch = grow_array(a->batch, &a->batch_cap, n, sizeof(*a->batch));
	for (i = 0; i < n; i++)
		if (--a->uses[eng][KVA_HANDLE_IDX(ids[i])] == 0)
			a->batch[k++] = ids[i];
	if (!k)
		return;
	ret = kva_core_free(&a->core, &a->cl[eng], a->batch, k);
	if (ret)
		core_bug("to free frames", ret);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The core's 32-byte key from kvsim's 64-bit one; never all zeros. */
static void set_key(u8 *out, uint64_t key)
{
	uint64_t w[KVA_KEY_LEN / 8];
	size_t i;

	for (i = 0; i < KVA_KEY_LEN / 8; i++)
		w[i] = i ? mix(key + i) : key;
	w[KVA_KEY_LEN / 8 - 1] |= 1;
	memcpy(out, w, KVA_KEY_LEN);
}

static struct kva_core_prefix *chain_of(struct arena *a, const uint64_t *keys,
					uint32_t n)
{
	uint32_t i;

	a->chain = grow_array(a->chain, &a->chain_cap, n, sizeof(*a->chain));
	memset(a->chain, 0, n * sizeof(*a->chain));
	for (i = 0; i < n; i++)
		set_key(a->chain[i].key, keys[i]);
	return a->chain;
}

static uint32_t arena_lookup(struct pool *p, int eng, const uint64_t *keys,
			     uint32_t n, uint64_t *ids)
{
	struct arena *a = arena(p);
	struct kva_core_prefix *chain = chain_of(a, keys, n);
	u32 need = kva_core_holds_need(&a->core, n);
	int ret, i;

	if (need) {
		struct kva_hold *recs = kva_core_holds_alloc(need);

		if (!recs) {
			fprintf(stderr, "%s: out of memory\n", kvt_prog);
			exit(KVT_EXIT_IMPOSSIBLE);
		}
		kva_core_holds_free(kva_core_holds_grow(&a->core, recs, need));
	}
	ret = kva_core_prefix_lookup(&a->core, &a->cl[eng], chain, n);
	/* -ENOSPC: the run would take the engine past its limits. */
	if (ret < 0)
		return 0;
	for (i = 0; i < ret; i++) {
		ids[i] = chain[i].handle;
		a->uses[eng][KVA_HANDLE_IDX(ids[i])]++;
	}
	return (uint32_t)ret;
}

static void arena_publish(struct pool *p, int eng, const uint64_t *keys,
			  const uint64_t *ids, uint32_t n)
{
	struct arena *a = arena(p);
	struct kva_core_prefix *chain = chain_of(a, keys, n);
	uint32_t i;
	int ret;

	for (i = 0; i < n; i++)
		chain[i].handle = ids[i];
	ret = kva_core_publish(&a->core, &a->cl[eng], chain, n);
	if (ret < 0)
		core_bug("to publish frames", ret);
}

static void arena_fini(struct pool *p)
{
	struct arena *a = arena(p);
	int i;

	if (!a)
		return;
	for (i = 0; i < a->nr_clients; i++) {
		kva_core_detach(&a->core, &a->cl[i]);
		free(a->uses[i]);
	}
	kva_core_fini(&a->core);
	if (a->has_tier)
		tier_fini(&a->tier);
	if (a->has_disk)
		tier_fini(&a->disk);
	free(a->batch);
	free(a->chain);
	free(a);
	p->priv = NULL;
}

/* kvsim's 64-bit key back from the core's 32 bytes (set_key()). */
static void arena_removed(struct kva_core *c, u32 idx)
{
	struct arena *a = (struct arena *)c;	/* core is its first member */
	uint64_t key;

	memcpy(&key, c->keys[idx], sizeof(key));
	if (a->has_tier)
		tier_demote(&a->tier, key);
}

static void arena_stored(struct kva_core *c, struct kva_core_client *cl,
			 u32 idx, const u8 *parent, u32 entry)
{
}

static const struct kva_core_events arena_events = {
	.stored = arena_stored,
	.removed = arena_removed,
};

static const struct bpool_ops arena_ops = {
	.alloc = arena_alloc,
	.put = arena_put,
	.lookup = arena_lookup,
	.publish = arena_publish,
	.fini = arena_fini,
};

/*
 * arena_pool_init() - an arena of p->bytes / frame_size frames with
 * @nr_engines clients, each guaranteed @min_frames and limited to
 * @max_frames (0: the arena), client i serving the requests of @w[i].
 * A gang's (p->width GPUs): frames of p->width times the bytes and the
 * tokens, one frame on each GPU.
 *
 * The core is made with no more frames than those requests could make it
 * use, so that a memory far beyond the trace costs what the trace does:
 * what they hold at their full lengths (pool_reach()), and the engines'
 * minimums, which the core keeps from the others until they are used.
 * Then no allocation and no lookup fails for want of frames, and the core
 * pops from its free list the same frames, in the same order, as it would
 * in the whole arena, and never reclaims.  A limit below the requests'
 * reach can preempt a sequence, which then allocates again: what is not
 * free is then at most what the sequences hold plus one cached frame per
 * key, so the keyed prompt frames are added too.
 */
int arena_pool_init(struct pool *p, const struct config *cfg,
		    int nr_engines, uint32_t min_frames, uint32_t max_frames,
		    const struct workload *w)
{
	uint64_t width = p->width ? p->width : 1;
	uint64_t nr = p->bytes / (cfg->g.frame_size * width), keyed, reach;
	uint32_t nt, tpf = cfg->g.tokens_per_frame * (uint32_t)width;
	struct arena *a;
	int i, err;

	if (!nr)
		return -ENOSPC;
	if (nr >= KVA_NIL)
		return -EFBIG;
	reach = pool_reach(w, nr_engines, tpf, &keyed);
	if (max_frames && max_frames < reach)
		reach += keyed;
	reach += (uint64_t)min_frames * nr_engines;
	nt = reach < nr ? (reach ? (uint32_t)reach : 1) : (uint32_t)nr;
	/* A limit the trace cannot reach is no limit; one past nr is refused. */
	if (max_frames > nt && max_frames <= nr)
		max_frames = nt;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	p->priv = a;
	p->ops = &arena_ops;
	p->nr_blocks = (uint32_t)nr;
	p->nr_tracked = nt;
	p->block_tokens = tpf;
	p->block_bytes = cfg->g.frame_size * width;
	err = kva_core_init(&a->core, nt);
	if (err) {
		free(a);
		p->priv = NULL;
		return err;
	}
	if (p->pol->flags & (POL_HOST | POL_SWAP)) {
		a->has_tier = true;
		/* Swapped frames are bounded by reach, cached ones by keys. */
		err = tier_init(&a->tier, p->host_bytes, cfg->g.frame_size,
				keyed ? keyed : 1);
		if (err)
			return err;
		p->tier = &a->tier;
		if (p->pol->flags & POL_HOST)
			a->core.events = &arena_events;
	}
	if ((p->pol->flags & POL_HOST) && p->disk_bytes) {
		a->has_disk = true;
		err = tier_init(&a->disk, p->disk_bytes, cfg->g.frame_size,
				keyed ? keyed : 1);
		if (err)
			return err;
		a->tier.below = &a->disk;
	}
	for (i = 0; i < nr_engines; i++) {
		err = kva_core_attach(&a->core, &a->cl[i], min_frames,
				      max_frames);
		if (err)
			return err;
		a->nr_clients++;
		a->uses[i] = calloc(nt, sizeof(*a->uses[i]));
		if (!a->uses[i])
			return -ENOMEM;
	}
	return bpool_common_init(p);
}
