// SPDX-License-Identifier: GPL-2.0
/*
 * kvsim - the token-granular policies: one contiguous reservation per
 * sequence, taken from the engine's KV memory counted in tokens.
 *
 *   contiguous-max     max_model_len tokens at admission (Orca, and every
 *                      engine that sizes a slab for the longest request)
 *   contiguous-oracle  exactly prompt + output at admission: what a
 *                      scheduler that knew the output length would take
 *   pow2               the next power of two of the tokens held, doubled
 *                      when the sequence outgrows it (a growing array)
 *
 * Memory is a count, not an address range: these figures leave out the
 * external fragmentation a real contiguous allocator would add, so they
 * are the best these policies could do.
 */
#include <errno.h>
#include <string.h>

#include "kvsim.h"

static uint64_t pow2_ceil(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static uint64_t cap_len(const struct engine *e, uint64_t v)
{
	return v < e->pool->cap_tokens && v < e->cfg->max_len ? v :
	       e->cfg->max_len < e->pool->cap_tokens ? e->cfg->max_len :
	       e->pool->cap_tokens;
}

/* Tokens reserved for a sequence holding @tokens tokens of @q. */
static uint64_t reservation(const struct engine *e, const struct req *q,
			    uint64_t tokens)
{
	switch (e->pool->pol->kind) {
	case POL_CONTIG_MAX:
		return e->cfg->max_len;
	case POL_CONTIG_ORACLE:
		return (uint64_t)q->prompt + q->output;
	default:
		return cap_len(e, pow2_ceil(tokens ? tokens : 1));
	}
}

static bool tok_fits(const struct engine *e, const struct req *q)
{
	uint64_t final = (uint64_t)q->prompt + q->output;

	if (e->pool->pol->kind == POL_POW2)
		return final <= e->pool->cap_tokens;
	return reservation(e, q, final) <= e->pool->cap_tokens;
}

static int take(struct engine *e, struct seq *s, uint64_t more)
{
	struct pool *p = e->pool;

	if (more > p->cap_tokens - p->used_tokens)
		return -ENOSPC;
	p->used_tokens += more;
	s->reserved += more;
	e->held_tokens_resv += more;
	return 0;
}

static int tok_admit(struct engine *e, struct seq *s, uint32_t tokens,
		     struct admission *a)
{
	int err = take(e, s, reservation(e, s->req, tokens));

	if (err)
		return err;
	e->filled_tokens_resv += tokens;
	memset(a, 0, sizeof(*a));
	a->compute_to = tokens;
	return 0;
}

static void tok_prefilled(struct engine *e, struct seq *s)
{
}

static int tok_grow(struct engine *e, struct seq *s)
{
	if (s->tokens + 1ull > s->reserved) {
		uint64_t want = cap_len(e, s->reserved * 2);

		if (want <= s->reserved || take(e, s, want - s->reserved))
			return -ENOSPC;
	}
	e->filled_tokens_resv++;
	return 0;
}

static void tok_release(struct engine *e, struct seq *s)
{
	e->pool->used_tokens -= s->reserved;
	e->held_tokens_resv -= s->reserved;
	e->filled_tokens_resv -= s->tokens;
	s->reserved = 0;
}

const struct pol_ops tokens_ops = {
	.fits = tok_fits,
	.admit = tok_admit,
	.prefilled = tok_prefilled,
	.grow = tok_grow,
	.release = tok_release,
};

int tokens_pool_init(struct pool *p, const struct config *cfg)
{
	p->block_bytes = cfg->g.bytes_per_token;
	p->cap_tokens = p->bytes / cfg->g.bytes_per_token;
	p->block_tokens = 1;
	return p->cap_tokens ? 0 : -ENOSPC;
}
