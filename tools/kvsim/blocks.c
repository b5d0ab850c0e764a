// SPDX-License-Identifier: GPL-2.0
/*
 * kvsim - the block-granular policies.
 *
 * A sequence holds a table of blocks of B tokens (paged:B) or of frames
 * of T_f tokens (kvarena); a new one is taken when the last is full.  At
 * admission the prompt's full blocks are first looked up in the prefix
 * cache, the leading run found there is shared, and only the rest is
 * allocated; once the prompt is prefilled its full blocks are published.
 * The pool's allocator (struct bpool_ops) is paged:B's own, below, or the
 * kvarena core (arena.c).
 *
 * Accounting: a block counts as held while some sequence maps it, once
 * however many do, and holds the tokens written in it (shared blocks are
 * full prompt blocks).  The pool keeps that count over all its engines,
 * each engine over its own sequences.
 *
 * paged:B models vLLM's block manager with automatic prefix caching:
 * blocks with no user and no key go back on a free list; blocks with a
 * key (full prompt blocks) stay cached when their last user lets go, on an
 * LRU list, and are evicted oldest first when the free list is empty.  A
 * lookup takes cached blocks back off the LRU.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim.h"

#define NONE	0xffffffffu

static uint64_t *scratch_keys;
static uint32_t scratch_cap;

static uint64_t *keys_buf(uint32_t n)
{
	if (n > scratch_cap) {
		uint64_t *k = realloc(scratch_keys, n * sizeof(*k));

		if (!k) {
			fprintf(stderr, "%s: out of memory\n", kvt_prog);
			exit(KVT_EXIT_IMPOSSIBLE);
		}
		scratch_keys = k;
		scratch_cap = n;
	}
	return scratch_keys;
}

static void seq_reserve(struct seq *s, uint32_t n)
{
	uint64_t *ids;
	uint32_t cap;

	if (n <= s->cap_ids)
		return;
	cap = s->cap_ids ? s->cap_ids : 16;
	while (cap < n)
		cap *= 2;
	ids = realloc(s->ids, cap * sizeof(*ids));
	if (!ids) {
		fprintf(stderr, "%s: out of memory\n", kvt_prog);
		exit(KVT_EXIT_IMPOSSIBLE);
	}
	s->ids = ids;
	s->cap_ids = cap;
}

static uint64_t blocks_for(const struct pool *p, uint64_t tokens)
{
	return (tokens + p->block_tokens - 1) / p->block_tokens;
}

uint32_t seq_prompt_keys(const struct seq *s, uint32_t block_tokens,
			 uint64_t *keys, uint32_t max)
{
	uint32_t n = s->req->prompt / block_tokens, j;

	if (!s->req->nr_hash)
		return 0;
	if (n > max)
		n = max;
	for (j = 0; j < n; j++)
		keys[j] = key_of_block(s->req, block_tokens, j);
	return n;
}

static void map(struct engine *e, uint64_t id)
{
	struct pool *p = e->pool;
	uint32_t idx = (uint32_t)id;

	if (e->refs[idx]++ == 0) {
		e->held_blocks++;
		e->filled_tokens += p->fill[idx];
	}
	if (p->refs[idx]++ == 0) {
		p->held_blocks++;
		p->filled_tokens += p->fill[idx];
	}
}

static void unmap(struct engine *e, uint64_t id)
{
	struct pool *p = e->pool;
	uint32_t idx = (uint32_t)id;

	if (--e->refs[idx] == 0) {
		e->held_blocks--;
		e->filled_tokens -= p->fill[idx];
	}
	if (--p->refs[idx] == 0) {
		p->held_blocks--;
		p->filled_tokens -= p->fill[idx];
	}
}

static bool blk_fits(const struct engine *e, const struct req *q)
{
	return blocks_for(e->pool, (uint64_t)q->prompt + q->output) <=
	       e->max_blocks;
}

static int blk_admit(struct engine *e, struct seq *s, uint32_t tokens,
		     uint32_t *hit)
{
	struct pool *p = e->pool;
	uint32_t B = p->block_tokens, nb = (uint32_t)blocks_for(p, tokens);
	uint32_t h = 0, nk, i;

	seq_reserve(s, nb + 1);
	if (p->ops->lookup && s->req->nr_hash) {
		uint64_t *keys = keys_buf(nb + 1);

		nk = seq_prompt_keys(s, B, keys, nb);
		if (nk)
			h = p->ops->lookup(p, e->client, keys, nk, s->ids);
	}
	if (nb > h && p->ops->alloc(p, e->client, s->ids + h, nb - h)) {
		if (h)
			p->ops->put(p, e->client, s->ids, h);
		return -ENOSPC;
	}
	for (i = h; i < nb; i++) {
		uint64_t left = tokens - (uint64_t)i * B;

		p->fill[(uint32_t)s->ids[i]] = left < B ? (uint32_t)left : B;
	}
	for (i = 0; i < nb; i++)
		map(e, s->ids[i]);
	s->nr_ids = nb;
	s->nr_hit = h;
	*hit = h * B;
	return 0;
}

static void blk_prefilled(struct engine *e, struct seq *s)
{
	struct pool *p = e->pool;
	uint64_t *keys;
	uint32_t nk;

	if (!p->ops->publish || !s->req->nr_hash)
		return;
	keys = keys_buf(s->nr_ids + 1);
	nk = seq_prompt_keys(s, p->block_tokens, keys, s->nr_ids);
	if (nk > s->nr_hit)
		p->ops->publish(p, e->client, keys + s->nr_hit,
				s->ids + s->nr_hit, nk - s->nr_hit);
}

static int blk_grow(struct engine *e, struct seq *s)
{
	struct pool *p = e->pool;
	uint32_t idx;

	if (s->tokens == (uint64_t)s->nr_ids * p->block_tokens) {
		seq_reserve(s, s->nr_ids + 1);
		if (p->ops->alloc(p, e->client, s->ids + s->nr_ids, 1))
			return -ENOSPC;
		p->fill[(uint32_t)s->ids[s->nr_ids]] = 0;
		map(e, s->ids[s->nr_ids++]);
	}
	/* The last block is partly filled, so only this sequence maps it. */
	idx = (uint32_t)s->ids[s->nr_ids - 1];
	p->fill[idx]++;
	e->filled_tokens++;
	p->filled_tokens++;
	return 0;
}

static void blk_release(struct engine *e, struct seq *s)
{
	uint32_t i;

	for (i = 0; i < s->nr_ids; i++)
		unmap(e, s->ids[i]);
	if (s->nr_ids)
		e->pool->ops->put(e->pool, e->client, s->ids, s->nr_ids);
	s->nr_ids = 0;
	s->nr_hit = 0;
}

const struct pol_ops blocks_ops = {
	.fits = blk_fits,
	.admit = blk_admit,
	.prefilled = blk_prefilled,
	.grow = blk_grow,
	.release = blk_release,
};

/**
 * pool_reach() - the blocks a pool's requests could ever make it use.
 * @w:		the workloads of the engines drawing on the pool.
 * @nr_w:	how many.
 * @block_tokens: tokens per block.
 * @keyed:	if not NULL, set to the full prompt blocks that have keys:
 *		at least as many as the distinct keys a prefix cache could
 *		ever keep.
 *
 * Every request at its full length (prompt and output), all of them at
 * once.  A pool that hands out untouched blocks only when no block was
 * given back, and evicts a cached block only when none is free, never
 * goes past this many while no allocation fails: each block it has
 * touched was taken by one allocation of a request, and a request that
 * is never preempted takes each of its blocks once at most.  A larger
 * pool hands out the same blocks, so a pool of this many stands for any
 * larger one (arena_pool_init() adds what the core's minimums and limits
 * need).
 *
 * Return: the sum over the requests of their blocks.
 */
uint64_t pool_reach(const struct workload *w, int nr_w,
		    uint32_t block_tokens, uint64_t *keyed)
{
	uint64_t n = 0, k = 0;
	uint32_t i;
	int j;

	for (j = 0; j < nr_w; j++) {
		for (i = 0; i < w[j].nr; i++) {
			const struct req *q = &w[j].req[i];
			uint64_t len = (uint64_t)q->prompt + q->output;

			n += (len + block_tokens - 1) / block_tokens;
			if (q->nr_hash)
				k += q->prompt / block_tokens;
		}
	}
	if (keyed)
		*keyed = k;
	return n;
}

/* The per-block tables of a block policy's pool, for p->nr_tracked. */
int bpool_common_init(struct pool *p)
{
	p->refs = calloc(p->nr_tracked, sizeof(*p->refs));
	p->fill = calloc(p->nr_tracked, sizeof(*p->fill));
	return p->refs && p->fill ? 0 : -ENOMEM;
}

void bpool_common_fini(struct pool *p)
{
	free(p->refs);
	free(p->fill);
	p->refs = p->fill = NULL;
}

/* ---- paged:B's own pool and prefix cache -------------------------------- */

/**
 * struct paged - vLLM's block pool.
 * @users:	sequences using each block.
 * @key:	each block's key while @keyed.
 * @lru_prev, @lru_next: the LRU of cached blocks (keyed, no user).
 * @free:	stack of blocks with no user and no key, @nr_free of them.
 * @table:	open-addressing index key -> block + 1 (0: empty).
 */
struct paged {
	uint32_t *users;
	uint64_t *key;
	uint8_t *keyed;
	uint32_t *lru_prev, *lru_next;
	uint32_t lru_head, lru_tail, nr_lru;
	uint32_t *free;
	uint32_t nr_free;
	uint32_t *table;
	uint64_t mask;
};

static struct paged *paged(struct pool *p)
{
	return p->priv;
}

/* The slot holding @key, or the empty slot where it would go. */
static uint64_t slot_of(const struct paged *pg, uint64_t key)
{
	uint64_t i = key & pg->mask;

	while (pg->table[i] && pg->key[pg->table[i] - 1] != key)
		i = (i + 1) & pg->mask;
	return i;
}

static uint32_t table_get(const struct paged *pg, uint64_t key)
{
	uint64_t pos = slot_of(pg, key);

	return pg->table[pos] ? pg->table[pos] - 1 : NONE;
}

static void table_put(struct paged *pg, uint64_t key, uint32_t b)
{
	pg->table[slot_of(pg, key)] = b + 1;
}

/* Linear probing's deletion: shift the following run back. */
static void table_del(struct paged *pg, uint64_t key)
{
	uint64_t i = slot_of(pg, key), j, home;

	if (!pg->table[i])
		return;
	pg->table[i] = 0;
	for (j = (i + 1) & pg->mask; pg->table[j]; j = (j + 1) & pg->mask) {
		home = pg->key[pg->table[j] - 1] & pg->mask;
		/* Move it back if its home is not in (i, j]. */
		if ((j > i && (home <= i || home > j)) ||
		    (j < i && home <= i && home > j)) {
			pg->table[i] = pg->table[j];
			pg->table[j] = 0;
			i = j;
		}
	}
}

static void lru_unlink(struct paged *pg, uint32_t b)
{
	uint32_t p = pg->lru_prev[b], n = pg->lru_next[b];

	if (p != NONE)
		pg->lru_next[p] = n;
	else
		pg->lru_head = n;
	if (n != NONE)
		pg->lru_prev[n] = p;
	else
		pg->lru_tail = p;
	pg->nr_lru--;
}

static void lru_push(struct paged *pg, uint32_t b)
{
	pg->lru_prev[b] = pg->lru_tail;
	pg->lru_next[b] = NONE;
	if (pg->lru_tail != NONE)
		pg->lru_next[pg->lru_tail] = b;
	else
		pg->lru_head = b;
	pg->lru_tail = b;
	pg->nr_lru++;
}

static int paged_alloc(struct pool *p, int eng, uint64_t *ids, uint32_t n)
{
	struct paged *pg = paged(p);
	uint32_t i, b;

	if ((uint64_t)pg->nr_free + pg->nr_lru < n)
		return -ENOSPC;
	for (i = 0; i < n; i++) {
		if (pg->nr_free) {
			b = pg->free[--pg->nr_free];
		} else {
			b = pg->lru_head;
			lru_unlink(pg, b);
			table_del(pg, pg->key[b]);
			pg->keyed[b] = 0;
		}
		pg->users[b] = 1;
		ids[i] = b;
	}
	return 0;
}

static void paged_put(struct pool *p, int eng, const uint64_t *ids,
		      uint32_t n)
{
	struct paged *pg = paged(p);
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint32_t b = (uint32_t)ids[i];

		if (--pg->users[b])
			continue;
		if (pg->keyed[b])
			lru_push(pg, b);
		else
			pg->free[pg->nr_free++] = b;
	}
}

static uint32_t paged_lookup(struct pool *p, int eng, const uint64_t *keys,
			     uint32_t n, uint64_t *ids)
{
	struct paged *pg = paged(p);
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint32_t b = table_get(pg, keys[i]);

		if (b == NONE)
			break;
		if (!pg->users[b]++)
			lru_unlink(pg, b);
		ids[i] = b;
	}
	return i;
}

static void paged_publish(struct pool *p, int eng, const uint64_t *keys,
			  const uint64_t *ids, uint32_t n)
{
	struct paged *pg = paged(p);
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint32_t b = (uint32_t)ids[i];

		if (pg->keyed[b] || table_get(pg, keys[i]) != NONE)
			continue;
		pg->key[b] = keys[i];
		pg->keyed[b] = 1;
		table_put(pg, keys[i], b);
	}
}

static void paged_fini(struct pool *p)
{
	struct paged *pg = paged(p);

	if (!pg)
		return;
	free(pg->users);
	free(pg->key);
	free(pg->keyed);
	free(pg->lru_prev);
	free(pg->lru_next);
	free(pg->free);
	free(pg->table);
	free(pg);
	p->priv = NULL;
}

static const struct bpool_ops paged_ops = {
	.alloc = paged_alloc,
	.put = paged_put,
	.lookup = paged_lookup,
	.publish = paged_publish,
	.fini = paged_fini,
};

/*
 * paged_pool_init() - a pool of p->bytes in blocks of @B tokens for the
 * requests of @w[0..@nr_w): blocks are made only as far as they reach
 * (pool_reach()), the rest of a larger memory could never be used.
 */
int paged_pool_init(struct pool *p, const struct config *cfg, uint32_t B,
		    const struct workload *w, int nr_w)
{
	struct paged *pg;
	uint64_t nb = p->bytes / (B * cfg->g.bytes_per_token), slots = 2;
	uint64_t reach = pool_reach(w, nr_w, B, NULL);
	uint32_t i, nt;

	if (!nb)
		return -ENOSPC;
	if (nb >= NONE)
		return -EFBIG;
	nt = reach < nb ? (reach ? (uint32_t)reach : 1) : (uint32_t)nb;
	p->nr_blocks = (uint32_t)nb;
	p->nr_tracked = nt;
	p->block_tokens = B;
	p->block_bytes = B * cfg->g.bytes_per_token;
	p->ops = &paged_ops;
	pg = calloc(1, sizeof(*pg));
	if (!pg)
		return -ENOMEM;
	p->priv = pg;
	while (slots < 2ull * nt)
		slots *= 2;
	pg->mask = slots - 1;
	pg->users = calloc(nt, sizeof(*pg->users));
	pg->key = calloc(nt, sizeof(*pg->key));
	pg->keyed = calloc(nt, 1);
	pg->lru_prev = calloc(nt, sizeof(*pg->lru_prev));
	pg->lru_next = calloc(nt, sizeof(*pg->lru_next));
	pg->free = calloc(nt, sizeof(*pg->free));
	pg->table = calloc(slots, sizeof(*pg->table));
	if (!pg->users || !pg->key || !pg->keyed || !pg->lru_prev ||
	    !pg->lru_next || !pg->free || !pg->table)
		return -ENOMEM;
	pg->lru_head = pg->lru_tail = NONE;
	/* Block 0 goes out first. */
	for (i = 0; i < nt; i++)
		pg->free[i] = nt - 1 - i;
	pg->nr_free = nt;
	return bpool_common_init(p);
}
