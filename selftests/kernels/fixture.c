// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

uint64_t fx_next(struct fx_rng *r)
{
	/* splitmix64 */
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

float fx_unit(struct fx_rng *r)
{
	return (float)(fx_next(r) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

float *fx_randf(size_t n, struct fx_rng *rng)
{
	float *p = malloc((n ? n : 1) * sizeof(*p));

	if (p)
		for (size_t i = 0; i < n; i++)
			p[i] = fx_unit(rng);
	return p;
}

int fx_seq_fill(struct fx_seq *s, const struct kva_geometry *g,
		uint64_t tokens, float kscale, struct fx_rng *rng)
{
	return fx_seq_fill_scaled(s, g, tokens, kscale, rng, NULL);
}

int fx_seq_fill_scaled(struct fx_seq *s, const struct kva_geometry *g,
		       uint64_t tokens, float kscale, struct fx_rng *rng,
		       const float *kv_scale)
{
	uint64_t frames = kva_frames_for(g, tokens ? tokens : 1);
	size_t row = (size_t)g->kv_heads * g->head_dim;
	uint32_t chunk = 256;
	float *k, *v;

	s->bytes = frames * g->frame_size;
	s->tokens = tokens;
	s->mem = aligned_alloc(4096, (s->bytes + 4095) & ~(size_t)4095);
	k = malloc(chunk * row * sizeof(*k));
	v = malloc(chunk * row * sizeof(*v));
	if (!s->mem || !k || !v) {
		free(s->mem);
		free(k);
		free(v);
		s->mem = NULL;
		return -ENOMEM;
	}
	memset(s->mem, 0xff, s->bytes);
	for (uint32_t l = 0; l < g->layers; l++)
		for (uint64_t t = 0; t < tokens; t += chunk) {
			uint32_t n = tokens - t < chunk ? (uint32_t)(tokens - t)
							: chunk;

			for (size_t i = 0; i < n * row; i++) {
				k[i] = fx_unit(rng) * kscale;
				v[i] = fx_unit(rng);
			}
			kva_kv_append_scaled(g, l, s->mem, t, n, KVA_DTYPE_FP32,
					     k, v, kv_scale);
		}
	free(k);
	free(v);
	return 0;
}

void fx_seq_free(struct fx_seq *s)
{
	free(s->mem);
	s->mem = NULL;
}
