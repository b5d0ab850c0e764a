// SPDX-License-Identifier: GPL-2.0
/*
 * kvserve - the model step's attention on the CPU kernels (kvattn.h).
 *
 * There are no weights: each layer's new K and V and its queries are
 * random numbers drawn once, so the cost is the attention's - the reads
 * of every cached token each decode step, the causal products of each
 * prefill - and the writes of the new K/V into the sequences' frames.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvattn.h"
#include "kvserve.h"

/* Tokens of random K/V kept; longer appends reuse them. */
#define SRC_TOKENS	256

struct cpu {
	struct kva_attn *attn;
	struct kva_geometry g;
	uint32_t q_heads;
	float *k, *v;			/* [SRC_TOKENS][kv_heads][dim] */
	float *q, *out;			/* rows of q_heads * head_dim */
	uint64_t rows;			/* rows q and out hold */
	struct kva_attn_seq *dseq;
	struct kva_prefill_seq *pseq;
	uint32_t nr_seq;
	uint64_t rng;
	char desc[64];
	/* --check (cpu_check()): content-defined inputs, a digest */
	int check;
	uint64_t seed;
	uint32_t kv0, q0;		/* global index of our first heads */
	const uint64_t *tags;		/* the batch's requests */
	uint64_t digest;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * The check mode's numbers: element @d of head @h (global) of the K (@what
 * 0), V (1) or query (2) of layer @l at position @p of request @tag, under
 * --seed @seed, in [-0.5, 0.5).  The same in every process, whatever slice of the heads
 * it computes.
 */
static float cval(uint64_t seed, uint64_t tag, uint64_t p, uint32_t l,
		  uint32_t what, uint32_t h, uint32_t d)
{
	uint64_t x = mix64(mix64(seed ^ (tag * 0x9e3779b97f4a7c15ull + p)) ^
			   ((uint64_t)l << 40 | (uint64_t)what << 32 |
			    (uint64_t)h << 16 | d));

	return (float)(x >> 40) / 16777216.0f - 0.5f;
}

static float rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((*s >> 40) & 0xffffff) / 16777216.0f - 0.5f;
}

static void fill(float *p, uint64_t n, uint64_t *s)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		p[i] = rnd(s);
}

static int cpu_init(void **state, const struct kva_geometry *g,
		    uint32_t q_heads, unsigned int threads, uint64_t seed)
{
	struct kva_attn_config cfg = { .threads = threads };
	size_t kv = (size_t)SRC_TOKENS * g->kv_heads * g->head_dim;
	struct cpu *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	c->g = *g;
	c->q_heads = q_heads;
	c->rng = seed ? seed : 1;
	c->seed = seed;
	c->k = malloc(kv * sizeof(float));
	c->v = malloc(kv * sizeof(float));
	if (!c->k || !c->v) {
		err = -ENOMEM;
		goto err;
	}
	fill(c->k, kv, &c->rng);
	fill(c->v, kv, &c->rng);
	err = kva_attn_create(&c->attn, &cfg);
	if (err)
		goto err;
	snprintf(c->desc, sizeof(c->desc), "cpu %s, %u thread%s",
		 kva_isa_name(kva_attn_isa(c->attn)), kva_attn_threads(c->attn),
		 kva_attn_threads(c->attn) > 1 ? "s" : "");
	*state = c;
	return 0;
err:
	free(c->k);
	free(c->v);
	free(c);
	return err;
}

static int need_rows(struct cpu *c, uint64_t rows)
{
	size_t w = (size_t)c->q_heads * c->g.head_dim;
	float *q, *o;

	if (rows <= c->rows)
		return 0;
	q = realloc(c->q, rows * w * sizeof(float));
	if (!q)
		return -ENOMEM;
	c->q = q;
	o = realloc(c->out, rows * w * sizeof(float));
	if (!o)
		return -ENOMEM;
	c->out = o;
	fill(c->q + c->rows * w, (rows - c->rows) * w, &c->rng);
	c->rows = rows;
	return 0;
}

static int need_seqs(struct cpu *c, uint32_t n)
{
	struct kva_attn_seq *d;
	struct kva_prefill_seq *p;

	if (n <= c->nr_seq)
		return 0;
	d = realloc(c->dseq, n * sizeof(*d));
	if (!d)
		return -ENOMEM;
	c->dseq = d;
	p = realloc(c->pseq, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	c->pseq = p;
	c->nr_seq = n;
	return 0;
}

/* Check mode: K and V of tokens [@from, @from + @n) of request @tag. */
static void check_kv(struct cpu *c, uint64_t tag, uint32_t layer,
		     uint64_t from, uint32_t n)
{
	uint32_t kvh = c->g.kv_heads, dim = c->g.head_dim, t, h, d;

	for (t = 0; t < n; t++)
		for (h = 0; h < kvh; h++)
			for (d = 0; d < dim; d++) {
				size_t i = ((size_t)t * kvh + h) * dim + d;

				c->k[i] = cval(c->seed, tag, from + t, layer,
					       0, c->kv0 + h, d);
				c->v[i] = cval(c->seed, tag, from + t, layer,
					       1, c->kv0 + h, d);
			}
}

/* Check mode: the query row of position @p of request @tag. */
static void check_q(struct cpu *c, float *row, uint64_t tag, uint64_t p,
		    uint32_t layer)
{
	uint32_t dim = c->g.head_dim, h, d;

	for (h = 0; h < c->q_heads; h++)
		for (d = 0; d < dim; d++)
			row[h * dim + d] = cval(c->seed, tag, p, layer, 2,
						c->q0 + h, d);
}

/* Check mode: decode output row @row, of position @p of @tag, hashed in. */
static void check_out(struct cpu *c, const float *row, uint64_t tag,
		      uint64_t p, uint32_t layer)
{
	uint32_t dim = c->g.head_dim, h, d;

	for (h = 0; h < c->q_heads; h++) {
		uint64_t x = 0xcbf29ce484222325ull;

		for (d = 0; d < dim; d++) {
			uint32_t bits;

			memcpy(&bits, &row[h * dim + d], sizeof(bits));
			x = (x ^ bits) * 0x100000001b3ull;
		}
		c->digest += mix64(x ^ mix64(tag * 0x9e3779b97f4a7c15ull + p) ^
				   ((uint64_t)layer << 32 | (c->q0 + h)));
	}
}

static int append(struct cpu *c, uint32_t layer, uint64_t base, uint64_t from,
		  uint64_t to, uint64_t tag)
{
	while (from < to) {
		uint32_t n = to - from < SRC_TOKENS ? (uint32_t)(to - from) :
			     SRC_TOKENS;
		int err;

		if (c->check)
			check_kv(c, tag, layer, from, n);
		err = kva_kv_append(&c->g, layer, (void *)(uintptr_t)base,
				    from, n, KVA_DTYPE_FP32, c->k, c->v);

		if (err)
			return err;
		from += n;
	}
	return 0;
}

static struct kva_attn_params params(const struct cpu *c, uint32_t layer)
{
	return (struct kva_attn_params){
		.geom = &c->g,
		.layer = layer,
		.q_heads = c->q_heads,
		.scale = 1.0f / sqrtf((float)c->g.head_dim),
	};
}

static int cpu_prefill(void *state, const uint64_t *base,
		       const uint64_t *from, const uint64_t *to, uint32_t n)
{
	struct cpu *c = state;
	uint64_t rows = 0;
	uint32_t i, l;
	int err;

	for (i = 0; i < n; i++)
		rows += to[i] - from[i];
	if (!rows)
		return 0;
	err = need_rows(c, rows) ?: need_seqs(c, n);
	if (err)
		return err;
	rows = 0;
	for (i = 0; i < n; i++) {
		c->pseq[i] = (struct kva_prefill_seq){
			.base = (const void *)(uintptr_t)base[i],
			.tokens = to[i],
			.q_tokens = (uint32_t)(to[i] - from[i]),
			.q_start = (uint32_t)rows,
		};
		rows += to[i] - from[i];
	}
	for (l = 0; l < c->g.layers; l++) {
		struct kva_attn_params p = params(c, l);
		size_t w = (size_t)c->q_heads * c->g.head_dim;

		for (i = 0; i < n; i++) {
			uint64_t tag = c->check ? c->tags[i] : 0, t;

			err = append(c, l, base[i], from[i], to[i], tag);
			if (err)
				return err;
			for (t = from[i]; c->check && t < to[i]; t++)
				check_q(c, c->q + (c->pseq[i].q_start +
						   t - from[i]) * w,
					tag, t, l);
		}
		err = kva_attn_prefill(c->attn, &p, c->pseq, n, c->q, c->out);
		if (err)
			return err;
	}
	return 0;
}

static int cpu_decode(void *state, const uint64_t *base,
		      const uint64_t *tokens, uint32_t n)
{
	struct cpu *c = state;
	uint32_t i, l;
	int err;

	if (!n)
		return 0;
	err = need_rows(c, n) ?: need_seqs(c, n);
	if (err)
		return err;
	for (i = 0; i < n; i++)
		c->dseq[i] = (struct kva_attn_seq){
			.base = (const void *)(uintptr_t)base[i],
			.tokens = tokens[i],
		};
	for (l = 0; l < c->g.layers; l++) {
		struct kva_attn_params p = params(c, l);
		size_t w = (size_t)c->q_heads * c->g.head_dim;

		for (i = 0; i < n; i++) {
			uint64_t tag = c->check ? c->tags[i] : 0;

			err = append(c, l, base[i], tokens[i] - 1, tokens[i],
				     tag);
			if (err)
				return err;
			if (c->check)
				check_q(c, c->q + i * w, tag, tokens[i] - 1, l);
		}
		err = kva_attn_decode(c->attn, &p, c->dseq, n, c->q, c->out);
		if (err)
			return err;
		for (i = 0; c->check && i < n; i++)
			check_out(c, c->out + i * w, c->tags[i], tokens[i] - 1,
				  l);
	}
	return 0;
}

/*
 * The check mode.  The kernels' split of a sequence into pieces is fixed
 * too (not taken from the batch), so that a sequence's sums run in the
 * same order whatever else is in the batch.
 */
static int cpu_check(void *state, uint32_t kv_head0, uint32_t q_head0)
{
	struct cpu *c = state;
	struct kva_attn_config cfg = { .threads = kva_attn_threads(c->attn),
				       .split_tokens = 512 };
	struct kva_attn *attn;
	int err = kva_attn_create(&attn, &cfg);

	if (err)
		return err;
	kva_attn_destroy(c->attn);
	c->attn = attn;
	c->check = 1;
	c->kv0 = kv_head0;
	c->q0 = q_head0;
	return 0;
}

static void cpu_batch(void *state, struct kva_seq *const *seqs,
		      const uint64_t *tags, uint32_t n)
{
	(void)seqs;
	(void)n;
	((struct cpu *)state)->tags = tags;
}

static uint64_t cpu_digest(void *state)
{
	return ((struct cpu *)state)->digest;
}

static int cpu_sync(void *state)
{
	return 0;
}

static void cpu_fini(void *state)
{
	struct cpu *c = state;

	if (!c)
		return;
	kva_attn_destroy(c->attn);
	free(c->k);
	free(c->v);
	free(c->q);
	free(c->out);
	free(c->dseq);
	free(c->pseq);
	free(c);
}

static const char *cpu_describe(void *state)
{
	return ((struct cpu *)state)->desc;
}

const struct compute_ops compute_cpu_ops = {
	.init = cpu_init,
	.prefill = cpu_prefill,
	.decode = cpu_decode,
	.sync = cpu_sync,
	.fini = cpu_fini,
	.describe = cpu_describe,
	.check = cpu_check,
	.batch = cpu_batch,
	.digest = cpu_digest,
};
