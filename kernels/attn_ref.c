// SPDX-License-Identifier: MIT
/*
 * attn_ref.c - the reference attention: one query row at a time, every
 * K and V element fetched through kva_kv_offset(), scores and softmax in
 * double precision with the two-pass formula.  Plain on purpose: every
 * other kernel is tested against this one.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "attn_internal.h"
#include "tile_math.h"

static float elem(const struct kva_geometry *g, const void *base,
		  uint32_t layer, uint32_t kv, uint32_t head, uint64_t t,
		  uint32_t d)
{
	const uint8_t *row = (const uint8_t *)base +
			     kva_kv_offset(g, layer, kv, head, t);

	return kva_elem_to_f32(row, d, g->dtype);
}

/* Element @i of q or out (dtype p->qo_dtype) as a double. */
static double qo_get(const struct kva_attn_params *p, const void *row,
		     uint32_t i)
{
	return kva_elem_to_f32(row, i, p->qo_dtype);
}

/*
 * One query row q (head h) over keys 0 .. n - 1; @s is room for n
 * doubles.  Writes head_dim elements to out.
 */
static void ref_row(const struct kva_attn_params *p, const void *base,
		    uint32_t h, uint64_t n, const void *q, void *out,
		    double *s)
{
	const struct kva_geometry *g = p->geom;
	uint32_t kvh = h / (p->q_heads / g->kv_heads);
	double max = -INFINITY, sum = 0.0, ks = 1.0, vs = 1.0;
	uint64_t t;
	uint32_t d;

	if (p->kv_scale) {
		ks = p->kv_scale[kvh];
		vs = p->kv_scale[g->kv_heads + kvh];
	}
	for (t = 0; t < n; t++) {
		double dot = 0.0;

		for (d = 0; d < g->head_dim; d++)
			dot += qo_get(p, q, d) * ks *
			       elem(g, base, p->layer, KVA_K, kvh, t, d);
		s[t] = dot * p->scale;
		if (s[t] > max)
			max = s[t];
	}
	for (t = 0; t < n; t++) {
		s[t] = exp(s[t] - max);
		sum += s[t];
	}
	for (d = 0; d < g->head_dim; d++) {
		double o = 0.0;

		for (t = 0; t < n; t++)
			o += s[t] * vs *
			     elem(g, base, p->layer, KVA_V, kvh, t, d);
		kva_elem_from_f32(out, d, p->qo_dtype,
				  n ? (float)(o / sum) : 0.0f);
	}
}

int kva_attn_decode_ref(const struct kva_attn_params *p,
			const struct kva_attn_seq *seqs, uint32_t nr_seqs,
			const void *q, void *out)
{
	struct kva_attn_shape sh;
	uint64_t max_tokens = 1;
	uint32_t i, h;
	size_t esz;
	double *s;
	int err;

	err = kva_attn_shape_init(&sh, p);
	if (err)
		return err;
	if (nr_seqs && (!seqs || !q || !out))
		return -EINVAL;
	for (i = 0; i < nr_seqs; i++) {
		if (seqs[i].tokens && !seqs[i].base)
			return -EINVAL;
		if (seqs[i].tokens > max_tokens)
			max_tokens = seqs[i].tokens;
	}
	s = malloc(max_tokens * sizeof(*s));
	if (!s)
		return -ENOMEM;
	esz = kva_dtype_size(p->qo_dtype);
	for (i = 0; i < nr_seqs; i++)
		for (h = 0; h < p->q_heads; h++) {
			size_t row = ((size_t)i * p->q_heads + h) * sh.head_dim *
				     esz;

			ref_row(p, seqs[i].base, h, seqs[i].tokens,
				(const uint8_t *)q + row, (uint8_t *)out + row,
				s);
		}
	free(s);
	return 0;
}

int kva_attn_prefill_ref(const struct kva_attn_params *p,
			 const struct kva_prefill_seq *seqs, uint32_t nr_seqs,
			 const void *q, void *out)
{
	struct kva_attn_shape sh;
	uint64_t max_tokens = 1;
	uint32_t i, j, h;
	size_t esz;
	double *s;
	int err;

	err = kva_attn_shape_init(&sh, p);
	if (err)
		return err;
	if (nr_seqs && (!seqs || !q || !out))
		return -EINVAL;
	for (i = 0; i < nr_seqs; i++) {
		if (seqs[i].q_tokens > seqs[i].tokens ||
		    (seqs[i].tokens && !seqs[i].base))
			return -EINVAL;
		if (seqs[i].tokens > max_tokens)
			max_tokens = seqs[i].tokens;
	}
	s = malloc(max_tokens * sizeof(*s));
	if (!s)
		return -ENOMEM;
	esz = kva_dtype_size(p->qo_dtype);
	for (i = 0; i < nr_seqs; i++) {
		uint64_t prefix = seqs[i].tokens - seqs[i].q_tokens;

		for (j = 0; j < seqs[i].q_tokens; j++)
			for (h = 0; h < p->q_heads; h++) {
				size_t row = (((size_t)seqs[i].q_start + j) *
					      p->q_heads + h) * sh.head_dim *
					     esz;

				ref_row(p, seqs[i].base, h, prefix + j + 1,
					(const uint8_t *)q + row,
					(uint8_t *)out + row, s);
			}
	}
	free(s);
	return 0;
}
