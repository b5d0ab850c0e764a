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

#define NONE	KVSIM_NONE

static void *grow_or_die(void *p, size_t size)
{
	p = realloc(p, size);
	if (!p) {
		fprintf(stderr, "%s: out of memory\n", kvt_prog);
		exit(KVT_EXIT_IMPOSSIBLE);
	}
	return p;
}

static uint64_t *keys_buf(uint32_t n)
{
	static uint64_t *buf;
	static uint32_t cap;

	if (n > cap) {
		buf = grow_or_die(buf, n * sizeof(*buf));
		cap = n;
	}
	return buf;
}

static void seq_reserve(struct seq *s, uint32_t n)
{
	uint32_t cap;

	if (n <= s->cap_ids)
		return;
	cap = s->cap_ids ? s->cap_ids : 16;
	while (cap < n)
		cap *= 2;
	s->ids = grow_or_die(s->ids, cap * sizeof(*s->ids));
	s->shared = grow_or_die(s->shared, cap);
	s->cap_ids = cap;
}

/* Scratch handles: an admission's new blocks, or its shared ones. */
static uint64_t *ids_buf(uint32_t n)
{
	static uint64_t *buf;
	static uint32_t cap;

	if (n > cap) {
		cap = n > 2 * cap ? n : 2 * cap;
		buf = grow_or_die(buf, cap * sizeof(*buf));
	}
	return buf;
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

/*
 * The prefix cache's run for @keys: the arena's leading run, then, with a
 * lower tier, the keys below that follow it (in the host tier or on the
 * disk under it), then the arena's again past them, and so on while any
 * has the next key.  Blocks of the arena's runs are held (@s->shared);
 * keys below are made the newest where they are, to be copied up into
 * new blocks.  Returns the run's length; *@below: how many of it are
 * below, *@disk: how many of those on the disk, *@remote: how many in
 * the remote tier (fetched into the host tier now).
 */
static uint32_t lookup_run(struct engine *e, struct seq *s,
			   const uint64_t *keys, uint32_t nk, uint32_t *below,
			   uint32_t *disk, uint32_t *remote)
{
	struct pool *p = e->pool;
	struct tier *t = p->tier;
	uint32_t pos = 0, i, k;
	int lv;

	*below = 0;
	*disk = 0;
	*remote = 0;
	while (pos < nk) {
		k = p->ops->lookup(p, e->client, keys + pos, nk - pos,
				   s->ids + pos);
		for (i = pos; i < pos + k; i++)
			s->shared[i] = 1;
		s->nr_hit += k;
		pos += k;
		if (!t)
			break;
		for (k = pos; k < nk && (lv = tier_level(t, keys[k])); k++) {
			tier_touch(t, keys[k]);
			*disk += lv == 2;
			*remote += lv == 3;
		}
		if (k == pos)
			break;
		*below += k - pos;
		pos = k;
	}
	return pos;
}

/* Let go of the arena's blocks @s->shared marks in its first @n. */
static void put_shared(struct engine *e, struct seq *s, uint32_t n)
{
	uint64_t *held = ids_buf(s->nr_hit);
	uint32_t i, k = 0;

	for (i = 0; i < n; i++)
		if (s->shared[i])
			held[k++] = s->ids[i];
	if (k)
		e->pool->ops->put(e->pool, e->client, held, k);
}

/*
 * A sequence swapped out after a preemption left its keyed prompt
 * blocks to the prefix cache and its other blocks in the swap space
 * (blk_swap_out()); it comes back as the keys found, the swapped blocks
 * copied up, and what lies between them computed again.
 */
static int blk_admit(struct engine *e, struct seq *s, uint32_t tokens,
		     struct admission *a)
{
	struct pool *p = e->pool;
	uint32_t B = p->block_tokens, nb = (uint32_t)blocks_for(p, tokens);
	uint32_t run = 0, below = 0, disk = 0, remote = 0, nk = 0, fresh = 0;
	uint32_t i, k;
	uint64_t *ids;

	seq_reserve(s, nb + 1);
	memset(s->shared, 0, nb);
	s->nr_hit = 0;
	if (p->ops->lookup && s->req->nr_hash) {
		uint64_t *keys = keys_buf(nb + 1);

		nk = seq_prompt_keys(s, B, keys, nb);
		if (nk)
			run = lookup_run(e, s, keys, nk, &below, &disk,
					 &remote);
	}
	if (nb > s->nr_hit) {
		ids = ids_buf(nb - s->nr_hit);
		if (p->ops->alloc(p, e->client, ids, nb - s->nr_hit)) {
			put_shared(e, s, run);
			s->nr_hit = 0;
			return -ENOSPC;
		}
		for (i = 0; i < nb; i++) {
			uint64_t left = tokens - (uint64_t)i * B;

			if (s->shared[i])
				continue;
			s->ids[i] = ids[fresh++];
			p->fill[(uint32_t)s->ids[i]] = left < B ? (uint32_t)left :
							B;
		}
	}
	for (i = 0; i < nb; i++)
		map(e, s->ids[i]);
	s->nr_ids = nb;
	memset(a, 0, sizeof(*a));
	s->nr_found = run;
	a->hit = run * B;
	a->hit_host = (below - disk - remote) * B;
	a->hit_disk = disk * B;
	a->hit_remote = remote * B;
	a->compute_from = run * B;
	a->compute_to = tokens;
	if (below)
		tier_promote(p->tier, below, disk, remote);
	if (s->swapped) {
		k = nb - s->swapped;	/* the keyed blocks before them */
		tier_swap_in(p->tier, s->swapped);
		a->swapped = s->swapped_tokens;
		a->compute_to = k * B > a->compute_from ? k * B :
			       a->compute_from;
		s->swapped = 0;
		s->swapped_tokens = 0;
	}
	return 0;
}

static void blk_prefilled(struct engine *e, struct seq *s)
{
	struct pool *p = e->pool;
	uint64_t *keys;
	uint32_t nk, i, j;

	if (!p->ops->publish || !s->req->nr_hash)
		return;
	keys = keys_buf(s->nr_ids + 1);
	nk = seq_prompt_keys(s, p->block_tokens, keys, s->nr_ids);
	/* Each run of blocks this sequence wrote. */
	for (i = 0; i < nk; i = j) {
		for (; i < nk && s->shared[i]; i++)
			;
		for (j = i; j < nk && !s->shared[j]; j++)
			;
		if (j > i)
			p->ops->publish(p, e->client, keys + i, s->ids + i,
					j - i);
	}
	/* Written through to the remote tier: the blocks it computed. */
	if (p->tier && p->tier->remote && !p->tier->store_on_demote)
		for (i = s->nr_found; i < nk; i++)
			tier_store(p->tier->remote, keys[i]);
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

/*
 * Preempted: with a lower tier that takes swaps (kvarena+swap), the
 * blocks past the keyed prompt blocks - which the prefix cache keeps,
 * and demotes rather than drops - are copied down to be copied back at
 * readmission instead of recomputed.  Without room below, the sequence
 * is recomputed as it would be without the tier.
 */
static void blk_swap_out(struct engine *e, struct seq *s)
{
	struct pool *p = e->pool;
	uint32_t B = p->block_tokens, nk = 0, n;

	if (!p->tier || !(p->pol->flags & POL_SWAP) || !s->nr_ids)
		return;
	if (s->req->nr_hash)
		nk = s->req->prompt / B < s->nr_ids ? s->req->prompt / B :
		     s->nr_ids;
	n = s->nr_ids - nk;
	if (!n || !tier_swap_out(p->tier, n))
		return;
	s->swapped = n;
	s->swapped_tokens = s->tokens - nk * B;
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
	.swap_out = blk_swap_out,
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

/* ---- key index and LRU lists (paged:B's cache, the lower tier) -------- */

int keyidx_init(struct keyidx *x, uint32_t entries, const uint64_t *key)
{
	uint64_t slots = 2;

	while (slots < 2ull * entries)
		slots *= 2;
	x->mask = slots - 1;
	x->key = key;
	x->table = calloc(slots, sizeof(*x->table));
	return x->table ? 0 : -ENOMEM;
}

void keyidx_fini(struct keyidx *x)
{
	free(x->table);
	x->table = NULL;
}

/* The slot holding @key, or the empty slot where it would go. */
static uint64_t slot_of(const struct keyidx *x, uint64_t key)
{
	uint64_t i = key & x->mask;

	while (x->table[i] && x->key[x->table[i] - 1] != key)
		i = (i + 1) & x->mask;
	return i;
}

uint32_t keyidx_get(const struct keyidx *x, uint64_t key)
{
	uint64_t pos = slot_of(x, key);

	return x->table[pos] ? x->table[pos] - 1 : NONE;
}

/* @key must already be in @x->key[@entry]. */
void keyidx_put(struct keyidx *x, uint64_t key, uint32_t entry)
{
	x->table[slot_of(x, key)] = entry + 1;
}

/* Linear probing's deletion: shift the following run back. */
void keyidx_del(struct keyidx *x, uint64_t key)
{
	uint64_t i = slot_of(x, key), j, home;

	if (!x->table[i])
		return;
	x->table[i] = 0;
	for (j = (i + 1) & x->mask; x->table[j]; j = (j + 1) & x->mask) {
		home = x->key[x->table[j] - 1] & x->mask;
		/* Move it back if its home is not in (i, j]. */
		if ((j > i && (home <= i || home > j)) ||
		    (j < i && home <= i && home > j)) {
			x->table[i] = x->table[j];
			x->table[j] = 0;
			i = j;
		}
	}
}

int lru_init(struct lru *l, uint32_t entries)
{
	l->prev = calloc(entries ? entries : 1, sizeof(*l->prev));
	l->next = calloc(entries ? entries : 1, sizeof(*l->next));
	l->head = l->tail = NONE;
	l->nr = 0;
	return l->prev && l->next ? 0 : -ENOMEM;
}

void lru_fini(struct lru *l)
{
	free(l->prev);
	free(l->next);
	l->prev = l->next = NULL;
}

void lru_unlink(struct lru *l, uint32_t e)
{
	uint32_t p = l->prev[e], n = l->next[e];

	if (p != NONE)
		l->next[p] = n;
	else
		l->head = n;
	if (n != NONE)
		l->prev[n] = p;
	else
		l->tail = p;
	l->nr--;
}

void lru_push(struct lru *l, uint32_t e)
{
	l->prev[e] = l->tail;
	l->next[e] = NONE;
	if (l->tail != NONE)
		l->next[l->tail] = e;
	else
		l->head = e;
	l->tail = e;
	l->nr++;
}

/* ---- paged:B's own pool and prefix cache -------------------------------- */

/**
 * struct paged - vLLM's block pool.
 * @users:	sequences using each block.
 * @key:	each block's key while @keyed.
 * @lru:	the LRU of cached blocks (keyed, no user).
 * @free:	stack of blocks with no user and no key, @nr_free of them.
 * @idx:	the index of keyed blocks by key.
 */
struct paged {
	uint32_t *users;
	uint64_t *key;
	uint8_t *keyed;
	struct lru lru;
	uint32_t *free;
	uint32_t nr_free;
	struct keyidx idx;
};

static struct paged *paged(struct pool *p)
{
	return p->priv;
}

static int paged_alloc(struct pool *p, int eng, uint64_t *ids, uint32_t n)
{
	struct paged *pg = paged(p);
	uint32_t i, b;

	if ((uint64_t)pg->nr_free + pg->lru.nr < n)
		return -ENOSPC;
	for (i = 0; i < n; i++) {
		if (pg->nr_free) {
			b = pg->free[--pg->nr_free];
		} else {
			b = pg->lru.head;
			lru_unlink(&pg->lru, b);
			keyidx_del(&pg->idx, pg->key[b]);
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
			lru_push(&pg->lru, b);
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
		uint32_t b = keyidx_get(&pg->idx, keys[i]);

		if (b == NONE)
			break;
		if (!pg->users[b]++)
			lru_unlink(&pg->lru, b);
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

		if (pg->keyed[b] || keyidx_get(&pg->idx, keys[i]) != NONE)
			continue;
		pg->key[b] = keys[i];
		pg->keyed[b] = 1;
		keyidx_put(&pg->idx, keys[i], b);
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
	lru_fini(&pg->lru);
	free(pg->free);
	keyidx_fini(&pg->idx);
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
	uint64_t nb = p->bytes / (B * cfg->g.bytes_per_token);
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
	pg->users = calloc(nt, sizeof(*pg->users));
	pg->key = calloc(nt, sizeof(*pg->key));
	pg->keyed = calloc(nt, 1);
	pg->free = calloc(nt, sizeof(*pg->free));
	if (!pg->users || !pg->key || !pg->keyed || !pg->free ||
	    lru_init(&pg->lru, nt) || keyidx_init(&pg->idx, nt, pg->key))
		return -ENOMEM;
	/* Block 0 goes out first. */
	for (i = 0; i < nt; i++)
		pg->free[i] = nt - 1 - i;
	pg->nr_free = nt;
	return bpool_common_init(p);
}
