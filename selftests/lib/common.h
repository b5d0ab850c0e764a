/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the libkvarena tests: a small model geometry and a
 * data pattern written and checked through a sequence's range with the
 * frame layout's address arithmetic.
 */
#ifndef KVA_SELFTEST_COMMON_H
#define KVA_SELFTEST_COMMON_H

#include <stdint.h>
#include <string.h>

#include "kvarena.h"

/*
 * 2 layers x 2 KV heads x 16 x fp16 = 256 bytes per token: 16 tokens in a
 * 4 KiB frame, 256 in a 64 KiB one.
 */
static inline struct kva_geometry small_geometry(uint64_t frame_size)
{
	struct kva_geometry g = {
		.layers = 2, .kv_heads = 2, .head_dim = 16,
		.dtype = KVA_DTYPE_FP16, .frame_size = frame_size,
	};

	kva_geometry_init(&g);
	return g;
}

static inline uint16_t pattern(uint32_t tag, uint64_t t, uint32_t l,
			       uint32_t kv, uint32_t h, uint32_t d)
{
	return (uint16_t)(tag * 7919u + t * 131u + l * 31u + kv * 17u +
			  h * 5u + d + 1);
}

/* Write tokens [from, to) of @s with @tag's pattern, through @s's range. */
static inline void fill_tokens(const struct kva_seq *s, uint32_t tag,
			       uint64_t from, uint64_t to)
{
	const struct kva_geometry *g = &s->geo;
	uint32_t l, kv, h, d;
	uint64_t t;

	for (t = from; t < to; t++)
		for (l = 0; l < g->layers; l++)
			for (kv = 0; kv < 2; kv++)
				for (h = 0; h < g->kv_heads; h++) {
					uint16_t *p = kva_seq_kv_ptr(s, l, kv,
								     h, t);

					for (d = 0; d < g->head_dim; d++)
						p[d] = pattern(tag, t, l, kv,
							       h, d);
				}
}

/* How many elements of tokens [from, to) differ from @tag's pattern. */
static inline uint64_t check_tokens(const struct kva_seq *s, uint32_t tag,
				    uint64_t from, uint64_t to)
{
	const struct kva_geometry *g = &s->geo;
	uint32_t l, kv, h, d;
	uint64_t t, bad = 0;

	for (t = from; t < to; t++)
		for (l = 0; l < g->layers; l++)
			for (kv = 0; kv < 2; kv++)
				for (h = 0; h < g->kv_heads; h++) {
					const uint16_t *p =
						kva_seq_kv_ptr(s, l, kv, h, t);

					for (d = 0; d < g->head_dim; d++)
						bad += p[d] != pattern(tag, t,
								       l, kv,
								       h, d);
				}
	return bad;
}

/* Elements of tokens [from, to) that are not zero. */
static inline uint64_t nonzero_tokens(const struct kva_seq *s, uint64_t from,
				      uint64_t to)
{
	const struct kva_geometry *g = &s->geo;
	uint32_t l, kv, h, d;
	uint64_t t, n = 0;

	for (t = from; t < to; t++)
		for (l = 0; l < g->layers; l++)
			for (kv = 0; kv < 2; kv++)
				for (h = 0; h < g->kv_heads; h++) {
					const uint16_t *p =
						kva_seq_kv_ptr(s, l, kv, h, t);

					for (d = 0; d < g->head_dim; d++)
						n += p[d] != 0;
				}
	return n;
}

static inline uint32_t held_frames(struct kva_arena *a)
{
	struct kva_stat st;

	if (kva_stat(a, &st))
		return UINT32_MAX;
	return st.held;
}

#endif
