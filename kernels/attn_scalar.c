// SPDX-License-Identifier: MIT
/*
 * attn_scalar.c - the portable kernels: the tile structure of the SIMD
 * ones in plain C, and the fallback for any CPU or head_dim.
 *
 * Both walk the keys in tiles of TILE tokens: widen the tile's K and V
 * rows to fp32 once, then for every query row take the tile's scores,
 * rescale the running state by the tile's max, and add the weighted V
 * rows (kernels/tile_math.h does the softmax bookkeeping).
 */
#include <stdlib.h>
#include <string.h>

#include "attn_internal.h"
#include "tile_math.h"

#define TILE 16u

static uint32_t max_rows(const struct kva_attn_shape *sh)
{
	uint32_t rows = kva_prefill_block_tokens(sh->group) * sh->group;

	return rows > sh->group ? rows : sh->group;
}

static size_t scalar_scratch(const struct kva_attn_shape *sh)
{
	size_t rows = max_rows(sh);

	return 2 * TILE * sh->head_dim * sizeof(float) +	/* kf, vf */
	       TILE * sizeof(float) +				/* scores */
	       rows * sizeof(struct kva_softmax) +		/* states */
	       rows * sh->head_dim * sizeof(float);		/* acc */
}

/*
 * Widens rows [t, t + n) of one head's K or V to fp32 dst[n][D]; an fp8
 * row's codes are multiplied by the head's factor @f.
 */
static void load_tile(const struct kva_attn_shape *sh, const uint8_t *blk,
		      uint64_t t, uint32_t n, float f, float *dst)
{
	uint32_t D = sh->head_dim;

	for (uint32_t j = 0; j < n; j++) {
		const uint8_t *row = blk + kva_walk_tok(&sh->walk, t + j);
		const uint16_t *h = (const uint16_t *)row;
		float *o = dst + (size_t)j * D;

		/* the dtype decided once per row, not per element */
		switch (sh->dtype) {
		case KVA_DTYPE_FP32:
			memcpy(o, row, D * sizeof(float));
			break;
		case KVA_DTYPE_FP16:
			for (uint32_t d = 0; d < D; d++)
				o[d] = kva_fp16_to_f32(h[d]);
			break;
		case KVA_DTYPE_FP8:
			for (uint32_t d = 0; d < D; d++)
				o[d] = kva_e4m3_to_f32(row[d]) * f;
			break;
		default:
			for (uint32_t d = 0; d < D; d++)
				o[d] = kva_bf16_to_f32(h[d]);
			break;
		}
	}
}

/*
 * Admits tile keys [0, n) into one query row: scores s[j] (-INF where
 * masked) against kf, weights times vf into acc.
 */
static void row_tile(const struct kva_attn_shape *sh, const float *q,
		     const float *kf, const float *vf, uint32_t n,
		     uint32_t visible, float *s, struct kva_softmax *st,
		     float *acc)
{
	uint32_t D = sh->head_dim, j, d;
	float tmax = -INFINITY, alpha;

	for (j = 0; j < n; j++) {
		float dot = 0.0f;

		if (j >= visible) {
			s[j] = -INFINITY;
			continue;
		}
		for (d = 0; d < D; d++)
			dot += q[d] * kf[j * D + d];
		s[j] = dot * sh->scale;
		tmax = fmaxf(tmax, s[j]);
	}
	alpha = kva_softmax_rescale(st, tmax);
	if (alpha != 1.0f)
		for (d = 0; d < D; d++)
			acc[d] *= alpha;
	for (j = 0; j < n; j++) {
		float w = kva_softmax_weight(st, s[j]);

		if (w == 0.0f)
			continue;
		kva_softmax_add(st, w);
		for (d = 0; d < D; d++)
			acc[d] += w * vf[j * D + d];
	}
}

/* The fp8 factors of KV head @h: K's in f[0], V's in f[1]. */
static void head_factors(const struct kva_attn_shape *sh, uint32_t h,
			 float *f)
{
	f[0] = sh->kscale ? sh->kscale[h] : 1.0f;
	f[1] = sh->vscale ? sh->vscale[h] : 1.0f;
}

static void scalar_decode(const struct kva_decode_span *s)
{
	const struct kva_attn_shape *sh = s->sh;
	uint32_t D = sh->head_dim, G = sh->group;
	float *kf = s->scratch, *vf = kf + TILE * D, *sc = vf + TILE * D;
	struct kva_softmax *st = (struct kva_softmax *)(sc + TILE);
	float f[2];

	for (uint32_t h = 0; h < sh->kv_heads; h++) {
		const uint8_t *kb = s->base + sh->walk.kv_off[KVA_K] +
				    (uint64_t)h * sh->walk.head_stride;
		const uint8_t *vb = s->base + sh->walk.kv_off[KVA_V] +
				    (uint64_t)h * sh->walk.head_stride;
		float *acc = s->acc + (size_t)h * G * D;

		head_factors(sh, h, f);
		for (uint32_t g = 0; g < G; g++)
			kva_softmax_init(&st[g]);
		memset(acc, 0, (size_t)G * D * sizeof(*acc));
		for (uint64_t t = s->t0; t < s->t1; t += TILE) {
			uint32_t n = s->t1 - t < TILE ? (uint32_t)(s->t1 - t) :
							TILE;

			load_tile(sh, kb, t, n, f[0], kf);
			load_tile(sh, vb, t, n, f[1], vf);
			for (uint32_t g = 0; g < G; g++)
				row_tile(sh, s->q + (size_t)(h * G + g) * D,
					 kf, vf, n, n, sc, &st[g],
					 acc + (size_t)g * D);
		}
		for (uint32_t g = 0; g < G; g++) {
			s->m[h * G + g] = st[g].m;
			s->l[h * G + g] = st[g].l;
		}
	}
}

static void scalar_prefill(const struct kva_prefill_block *b)
{
	const struct kva_attn_shape *sh = b->sh;
	uint32_t D = sh->head_dim, G = sh->group, rows = b->nq * G;
	size_t qstride = (size_t)sh->q_heads * D;
	float *kf = b->scratch, *vf = kf + TILE * D, *sc = vf + TILE * D;
	struct kva_softmax *st = (struct kva_softmax *)(sc + TILE);
	float *acc = (float *)(st + max_rows(sh));
	const uint8_t *kb = b->base + sh->walk.kv_off[KVA_K] +
			    (uint64_t)b->kv_head * sh->walk.head_stride;
	const uint8_t *vb = b->base + sh->walk.kv_off[KVA_V] +
			    (uint64_t)b->kv_head * sh->walk.head_stride;
	uint64_t end = b->pos0 + b->nq;		/* keys any row may see */
	float f[2];

	head_factors(sh, b->kv_head, f);
	for (uint32_t r = 0; r < rows; r++)
		kva_softmax_init(&st[r]);
	memset(acc, 0, (size_t)rows * D * sizeof(*acc));
	for (uint64_t t = 0; t < end; t += TILE) {
		uint32_t n = end - t < TILE ? (uint32_t)(end - t) : TILE;

		load_tile(sh, kb, t, n, f[0], kf);
		load_tile(sh, vb, t, n, f[1], vf);
		for (uint32_t r = 0; r < rows; r++) {
			uint64_t pos = b->pos0 + r / G;
			const float *q = b->q + (r / G) * qstride +
					 (size_t)(b->kv_head * G + r % G) * D;
			uint64_t vis = pos + 1 - t;

			if (pos < t)
				continue;
			row_tile(sh, q, kf, vf, n,
				 vis < n ? (uint32_t)vis : n, sc, &st[r],
				 acc + (size_t)r * D);
		}
	}
	for (uint32_t r = 0; r < rows; r++) {
		float norm = kva_softmax_norm(&st[r]);
		float *o = b->out + (r / G) * qstride +
			   (size_t)(b->kv_head * G + r % G) * D;

		for (uint32_t d = 0; d < D; d++)
			o[d] = acc[(size_t)r * D + d] * norm;
	}
}

static bool scalar_supports(const struct kva_attn_shape *sh)
{
	return true;
}

const struct kva_isa_ops kva_ops_scalar = {
	.decode = scalar_decode,
	.prefill = scalar_prefill,
	.scratch_bytes = scalar_scratch,
	.supports = scalar_supports,
};
