/* SPDX-License-Identifier: MIT */
/*
 * attn_avx512.h - AVX-512 (F, BW, DQ, VL) for the CPU kernels: the vector
 * primitives attn_simd.h's algorithms are written over (attn_avx512.c
 * compiles them), and what the dot-product decode of attn_avx512_dp.c (VBMI and
 * BF16) shares with them: the tile and the prefetch distance.
 */
#ifndef KVA_ATTN_AVX512_H
#define KVA_ATTN_AVX512_H

#include <immintrin.h>
#include <math.h>
#include <stdbool.h>

#include "attn_internal.h"

#define AI static inline __attribute__((always_inline))
/* Loops over register blocks must unroll, or the blocks live on the stack. */
#define UNROLL _Pragma("GCC unroll 16")

#define VW	16u	/* lanes */
#define TILE	VW	/* decode: tokens per tile, one score vector */
#define GB	8u	/* decode: query heads per register block */
#define PF_TILES 2u	/* decode: prefetch into L2 this many tiles ahead */
/*
 * From memory, the rows of the tile PF_TILES ahead go to L2 only (T2): a
 * tile's slice is larger than L1, and T0 lines evicted before use cost
 * the line-fill buffers for nothing.  From L2, the rows of the next block
 * of this tile (the next head's, in address order) go to L1 (T0), so the
 * loads of the arithmetic hit L1 and wait on no fill.
 */
#define PF_FAR_HINT _MM_HINT_T2
#define PF_NEAR	1
#define PS_KEYS	8u	/* prefill: keys per score block (16 accumulators) */
#define PV_NB	4u	/* prefill: 64 elements per row of a P.V block */

typedef __m512 vf;
typedef __m512i vi;
typedef __mmask16 vm;

/* e^x, relative error below 2e-7 for x in [-87, 88]; ~0 far below; NaN
 * stays NaN, so that a NaN score makes the output NaN. */
AI __m512 v_exp(__m512 x)
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

AI vf v_zero(void) { return _mm512_setzero_ps(); }
AI vf v_set1(float x) { return _mm512_set1_ps(x); }
AI vf v_load(const float *p) { return _mm512_load_ps(p); }
AI vf v_loadu(const void *p) { return _mm512_loadu_ps(p); }
AI void v_store(float *p, vf x) { _mm512_store_ps(p, x); }
AI void v_storeu(float *p, vf x) { _mm512_storeu_ps(p, x); }
AI vf v_add(vf a, vf b) { return _mm512_add_ps(a, b); }
AI vf v_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
AI vf v_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
AI vf v_max(vf a, vf b) { return _mm512_max_ps(a, b); }
AI vf v_fma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
AI vf v_cast(vi x) { return _mm512_castsi512_ps(x); }
AI float v_hmax(vf x) { return _mm512_reduce_max_ps(x); }
AI float v_hsum(vf x) { return _mm512_reduce_add_ps(x); }

AI vm m_below(uint32_t n) { return (vm)((1u << n) - 1); }
AI vm m_all(void) { return (vm)0xffff; }
AI vm m_eq(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
AI vm m_neq(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_NEQ_OQ); }
AI vm m_eqi(vi a, vi b) { return _mm512_cmpeq_epi32_mask(a, b); }
AI vm m_lt_i(vi a, vi b) { return _mm512_cmplt_epi32_mask(a, b); }
AI vm m_andnot(vm a, vm b) { return (vm)(~a & b); }
AI vf v_sel(vm m, vf a, vf b) { return _mm512_mask_mov_ps(b, m, a); }
AI vf v_keep(vm m, vf a) { return _mm512_maskz_mov_ps(m, a); }

AI vi vi_set1(int x) { return _mm512_set1_epi32(x); }
AI vi vi_load(const int32_t *p) { return _mm512_load_si512(p); }
AI vi vi_slli(vi x, unsigned int n) { return _mm512_slli_epi32(x, n); }
AI vi vi_and(vi a, vi b) { return _mm512_and_si512(a, b); }

AI vi ld_w32(const uint8_t *p) { return _mm512_loadu_si512(p); }
AI vi ld_i8x2(const uint8_t *p)
{
	return _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)p));
}
AI vi ld_i8(const uint8_t *p)
{
	return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p));
}
AI vi ld_u16(const uint8_t *p)
{
	return _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
}
AI vf ld_f16(const uint8_t *p)
{
	return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

/* Whether the bytes at @p (a multiple of 16) hold an e4m3 NaN code. */
AI bool nan_any(const uint8_t *p, uint32_t bytes)
{
	const __m512i m = _mm512_set1_epi8(0x7f);
	__mmask64 any = 0;
	uint32_t o = 0;

	for (; o + 64 <= bytes; o += 64)
		any |= _mm512_cmpeq_epi8_mask(_mm512_and_si512(
			_mm512_loadu_si512(p + o), m), m);
	if (o < bytes) {
		__mmask64 tail = (__mmask64)(~0ull >> (64 - (bytes - o)));

		any |= _mm512_cmpeq_epi8_mask(_mm512_and_si512(
			_mm512_maskz_loadu_epi8(tail, p + o), m), m);
	}
	return any != 0;
}

/*
 * Lane sums of 16 vectors: result lane j = sum of v[j]'s lanes.  Pairs
 * are folded level by level (32-bit, 64-bit, then 128-bit interleaves),
 * each level halving the vectors and doubling the tokens per vector.
 */
AI __m512 v_tree(const __m512 *v)
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

#endif /* KVA_ATTN_AVX512_H */
