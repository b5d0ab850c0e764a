/* SPDX-License-Identifier: MIT */
/*
 * attn_avx512.h - what the AVX-512 decode kernels share: attn_avx512.c
 * (fp32, fp16, bf16 caches) and attn_avx512_fp8.c (fp8 caches, with the
 * VBMI and BF16 extensions).  Read attn_avx512.c's comment first.
 */
#ifndef KVA_ATTN_AVX512_H
#define KVA_ATTN_AVX512_H

#include <immintrin.h>
#include <math.h>

#include "attn_internal.h"

#define AI static inline __attribute__((always_inline))
/* Loops over register blocks must unroll, or the blocks live on the stack. */
#define UNROLL _Pragma("GCC unroll 16")

#define TILE	16u	/* decode: tokens per tile, one score vector */
#define GB	8u	/* decode: query heads per register block (scores) */
#define PF_TILES 2u	/* decode: prefetch into L2 this many tiles ahead */

/* e^x, relative error below 2e-7 for x in [-87, 88]; ~0 far below; NaN
 * stays NaN, so that a NaN score makes the output NaN. */
AI __m512 exp512(__m512 x)
{
	const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
	const __m512 ln2_hi = _mm512_set1_ps(0.693145751953125f);
	const __m512 ln2_lo = _mm512_set1_ps(1.42860682030941723e-6f);
	__m512 n, r, p;

	/* limits first: max/min return their second operand for NaN */
	x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
	x = _mm512_min_ps(_mm512_set1_ps(88.7f), x);
	n = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e),
				 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	r = _mm512_fnmadd_ps(n, ln2_hi, x);
	r = _mm512_fnmadd_ps(n, ln2_lo, r);	/* |r| <= ln2 / 2 */
	/* Taylor to degree 6: the r^7/7! remainder is < 1.2e-7 */
	p = _mm512_set1_ps(1.0f / 720);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	return _mm512_scalef_ps(p, n);
}

/*
 * Lane sums of 16 vectors: result lane j = sum of v[j]'s lanes.  Pairs
 * are folded level by level (32-bit, 64-bit, then 128-bit interleaves),
 * each level halving the vectors and doubling the tokens per vector.
 */
AI __m512 tree16(const __m512 *v)
{
	__m512 c[8], e[4], f[2];

	UNROLL
	for (int i = 0; i < 8; i++)
		c[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]),
				     _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
	UNROLL
	for (int i = 0; i < 4; i++) {
		__m512d a = _mm512_castps_pd(c[2 * i]);
		__m512d b = _mm512_castps_pd(c[2 * i + 1]);

		e[i] = _mm512_add_ps(
			_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
			_mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
	}
	UNROLL
	for (int i = 0; i < 2; i++)
		f[i] = _mm512_add_ps(
			_mm512_shuffle_f32x4(e[2 * i], e[2 * i + 1], 0x88),
			_mm512_shuffle_f32x4(e[2 * i], e[2 * i + 1], 0xdd));
	return _mm512_add_ps(_mm512_shuffle_f32x4(f[0], f[1], 0x88),
			     _mm512_shuffle_f32x4(f[0], f[1], 0xdd));
}

/*
 * Every line of a row: the hardware prefetchers stop at page ends, and
 * every head's block of a frame is its own page or two.  One row is
 * prefetched per row worked on, which keeps the misses spread out rather
 * than in bursts that fill the line-fill buffers.
 *
 * From memory, the rows of the tile PF_TILES ahead go to L2 only (T2): a
 * tile's slice is larger than L1, and T0 lines evicted before use cost
 * the line-fill buffers for nothing.  From L2, the rows of the next block
 * of this tile (the next head's, in address order) go to L1 (T0), so the
 * loads of the arithmetic hit L1 and wait on no fill.  Measured on the
 * 8k-token decode against T0 alone: 0.64 -> 0.68 of the read bandwidth
 * for T2, -> 0.70 with the L1 step as well.
 */
static inline void prefetch_far(const uint8_t *p, uint32_t bytes)
{
	for (uint32_t o = 0; o < bytes; o += 64)
		_mm_prefetch((const char *)p + o, _MM_HINT_T2);
}

static inline void prefetch_near(const uint8_t *p, uint32_t bytes)
{
	for (uint32_t o = 0; o < bytes; o += 64)
		_mm_prefetch((const char *)p + o, _MM_HINT_T0);
}

/*
 * Query heads in the next register block, out of @left: 8, 4, or what is
 * left below 4, so that five block sizes cover every group.
 */
static inline uint32_t block_heads(uint32_t left)
{
	return left >= 8 ? 8 : left >= 4 ? 4 : left;
}

#endif /* KVA_ATTN_AVX512_H */
