// SPDX-License-Identifier: MIT
/*
 * attn_avx2.c - AVX2 + FMA + F16C kernels: attn_simd.h's decode and
 * prefill over 8-lane primitives.  Compiled with those -m flags alone;
 * attn_cpu.c calls in only when the CPU has them.
 *
 * With 16 vector registers, a decode register block holds 4 query heads
 * and a prefill score block 4 keys; the decode prefetches 4 tiles ahead
 * into L1 (a tile's slice of 8 tokens fits there).
 */
#include <immintrin.h>
#include <stdbool.h>

#include "attn_internal.h"

#define AI static inline __attribute__((always_inline))
/* Loops over register blocks must unroll, or the blocks live on the stack. */
#define UNROLL _Pragma("GCC unroll 16")

#define VW	8u	/* lanes */
#define TILE	VW	/* decode: tokens per tile, one score vector */
#define GB	4u	/* decode: query heads per register block */
#define PF_TILES 4u	/* decode: prefetch this many tiles ahead */
#define PF_FAR_HINT _MM_HINT_T0
#define PF_NEAR	0
#define PS_KEYS	4u	/* prefill: keys per score block */
#define PV_NB	2u	/* prefill: 16 elements per row of a P.V block */

typedef __m256 vf;
typedef __m256i vi;
typedef __m256 vm;	/* all-ones lanes */

AI vf v_zero(void) { return _mm256_setzero_ps(); }
AI vf v_set1(float x) { return _mm256_set1_ps(x); }
AI vf v_load(const float *p) { return _mm256_load_ps(p); }
AI vf v_loadu(const void *p) { return _mm256_loadu_ps((const float *)p); }
AI void v_store(float *p, vf x) { _mm256_store_ps(p, x); }
AI void v_storeu(float *p, vf x) { _mm256_storeu_ps(p, x); }
AI vf v_add(vf a, vf b) { return _mm256_add_ps(a, b); }
AI vf v_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
AI vf v_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
AI vf v_max(vf a, vf b) { return _mm256_max_ps(a, b); }
AI vf v_fma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
AI vf v_cast(vi x) { return _mm256_castsi256_ps(x); }

AI vm m_below(uint32_t n)
{
	return _mm256_castsi256_ps(_mm256_cmpgt_epi32(
		_mm256_set1_epi32((int)n),
		_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}
AI vm m_all(void) { return _mm256_castsi256_ps(_mm256_set1_epi32(-1)); }
AI vm m_eq(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
AI vm m_neq(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_NEQ_OQ); }
AI vm m_eqi(vi a, vi b) { return v_cast(_mm256_cmpeq_epi32(a, b)); }
AI vm m_lt_i(vi a, vi b) { return v_cast(_mm256_cmpgt_epi32(b, a)); }
AI vm m_andnot(vm a, vm b) { return _mm256_andnot_ps(a, b); }
AI vf v_sel(vm m, vf a, vf b) { return _mm256_blendv_ps(b, a, m); }
AI vf v_keep(vm m, vf a) { return _mm256_and_ps(m, a); }

AI vi vi_set1(int x) { return _mm256_set1_epi32(x); }
AI vi vi_load(const int32_t *p) { return _mm256_load_si256((const vi *)p); }
AI vi vi_slli(vi x, unsigned int n) { return _mm256_slli_epi32(x, (int)n); }
AI vi vi_and(vi a, vi b) { return _mm256_and_si256(a, b); }

AI vi ld_w32(const uint8_t *p) { return _mm256_loadu_si256((const vi *)p); }
AI vi ld_i8x2(const uint8_t *p)
{
	return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p));
}
AI vi ld_i8(const uint8_t *p)
{
	return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p));
}
AI vi ld_u16(const uint8_t *p)
{
	return _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
}
AI vf ld_f16(const uint8_t *p)
{
	return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/*
 * Whether the bytes at @p (a multiple of 16) hold an e4m3 NaN code (0x7f
 * or 0xff): a compare per 32 bytes, so that widening rows that hold none
 * needs three instructions per eight elements instead of seven.
 */
AI bool nan_any(const uint8_t *p, uint32_t bytes)
{
	const __m256i m = _mm256_set1_epi8(0x7f);
	__m256i any = _mm256_setzero_si256();
	uint32_t o = 0;

	for (; o + 32 <= bytes; o += 32)
		any = _mm256_or_si256(any, _mm256_cmpeq_epi8(_mm256_and_si256(
			_mm256_loadu_si256((const __m256i *)(p + o)), m), m));
	if (o < bytes)
		any = _mm256_or_si256(any, _mm256_cmpeq_epi8(_mm256_and_si256(
			_mm256_castsi128_si256(_mm_loadu_si128(
				(const __m128i *)(p + o))), m), m));
	return !_mm256_testz_si256(any, any);
}

/* e^x, relative error below 2e-7 for x in [-87, 88]; exactly 0 below;
 * NaN stays NaN. */
AI vf v_exp(vf x)
{
	const __m256 lim = _mm256_set1_ps(-87.0f);
	__m256 tiny = _mm256_cmp_ps(x, lim, _CMP_LT_OQ);
	__m256 n, r, p;
	__m256i e;

	/* limits first: max/min return their second operand for NaN */
	x = _mm256_max_ps(lim, x);
	x = _mm256_min_ps(_mm256_set1_ps(88.0f), x);
	n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
			    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860682030941723e-6f), r);
	p = _mm256_set1_ps(1.0f / 720);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	/* 2^n for n in [-126, 127]: the exponent field alone */
	e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n),
					       _mm256_set1_epi32(127)), 23);
	p = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
	return _mm256_andnot_ps(tiny, p);
}

/* Lane sums of 8 vectors: result lane j = sum of v[j]'s lanes. */
AI vf v_tree(const vf *v)
{
	__m256 c[4], e[2];

	UNROLL
	for (int i = 0; i < 4; i++)
		c[i] = _mm256_add_ps(_mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]),
				     _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]));
	UNROLL
	for (int i = 0; i < 2; i++) {
		__m256d a = _mm256_castps_pd(c[2 * i]);
		__m256d b = _mm256_castps_pd(c[2 * i + 1]);

		e[i] = _mm256_add_ps(
			_mm256_castpd_ps(_mm256_unpacklo_pd(a, b)),
			_mm256_castpd_ps(_mm256_unpackhi_pd(a, b)));
	}
	return _mm256_add_ps(_mm256_permute2f128_ps(e[0], e[1], 0x20),
			     _mm256_permute2f128_ps(e[0], e[1], 0x31));
}

AI float v_hmax(vf v)
{
	__m128 x = _mm_max_ps(_mm256_castps256_ps128(v),
			      _mm256_extractf128_ps(v, 1));

	x = _mm_max_ps(x, _mm_movehl_ps(x, x));
	x = _mm_max_ss(x, _mm_movehdup_ps(x));
	return _mm_cvtss_f32(x);
}

AI float v_hsum(vf v)
{
	__m128 x = _mm_add_ps(_mm256_castps256_ps128(v),
			      _mm256_extractf128_ps(v, 1));

	x = _mm_add_ps(x, _mm_movehl_ps(x, x));
	x = _mm_add_ss(x, _mm_movehdup_ps(x));
	return _mm_cvtss_f32(x);
}

#include "attn_simd.h"

const struct kva_isa_ops kva_ops_avx2 = {
	.decode = simd_decode,
	.prefill = simd_prefill,
	.scratch_bytes = simd_scratch,
	.supports = simd_supports,
};
