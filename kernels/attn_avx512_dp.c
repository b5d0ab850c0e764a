// SPDX-License-Identifier: MIT
/*
 * attn_avx512_dp.c - decode over fp8 (e4m3) and bf16 caches on the
 * vdpbf16ps dot product, with AVX-512 and its VBMI and BF16 extensions
 * (Sapphire Rapids and Zen 4 have both).  Compiled with those -m flags
 * alone; attn_avx512.c calls in only when the CPU has them and head_dim
 * is a multiple of 64; otherwise attn_simd.h's decode runs.
 *
 * The walk is attn_simd.h's decode (read its comment first): tiles of
 * 16 tokens, every head's K block then every head's V block, the two
 * prefetch steps.  What differs is the arithmetic: widening every element
 * to fp32 for an FMA, as attn_simd.h does, made the fp8 decode compute
 * bound at 0.4 of the read bandwidth (1.1 times bf16's tokens per
 * second), and left the bf16 decode compute bound in cache.  Here:
 *
 *  - e4m3 becomes bf16 through a table: vpermi2b looks up the low and the
 *    high byte of the bf16 of each 7-bit magnitude (128 entries, two
 *    registers each; kva_e4m3_bf16_lut), one ternary-logic op puts the
 *    sign back, and two byte unpacks make the bf16 words.  bf16 holds
 *    every e4m3 value exactly, subnormals and NaN included, so the
 *    widening is exact.
 *  - q . K with vdpbf16ps, 32 multiply-adds an instruction against an
 *    FMA's 16, with tokens in the lanes: eight rows' 64-byte units are
 *    transposed in 128-bit lanes as 16-bit pairs of elements (three
 *    levels of unpacks), so that after the table a dword lane holds one
 *    token's elements (d, d + 1), each 128-bit lane its own pair of
 *    elements; q comes as matching vectors of pairs.  The four lanes'
 *    sums are folded once per tile (two levels of 128-bit shuffles)
 *    instead of a 16-way transpose-add tree per token, which cost more
 *    than the products.  A bf16 row needs no table and no byte unpacks:
 *    its vectors hold pairs 4L .. 4L + 3 in lane L already, and a 4 x 4
 *    transpose of dwords per lane puts four rows' pair 4L + i in lane L.
 *  - p . V with vdpbf16ps over pairs of tokens: the two V rows' bytes are
 *    interleaved before the table, so the table's words come out as
 *    (V[t][d], V[t+1][d]) pairs, and the weights of the two tokens as one
 *    bf16 pair (for bf16 rows, a word unpack of the two rows makes the
 *    pairs).  l sums the rounded weights, so that the normalisation
 *    matches what was multiplied (as the CUDA prefill does).
 *
 * q is rounded to bf16 once per span (exact when the engine gives bf16)
 * and the weights once per tile: 2^-9 relative, the one difference from
 * the fp32 arithmetic of the other kernels, bounded by the tests
 * (tol_for() in selftests/kernels/test_attn.c), small beside fp8's own
 * 2^-4 and equal to the rounding of bf16 K and V themselves.  The
 * products are exact and summed in fp32; vdpbf16ps treats bf16
 * subnormals (below 2^-126) as zero: no e4m3 value is one, and a bf16
 * cache's are below any score or output that matters.  The scale
 * and the K scale multiply the tile's scores; the V scale multiplies the
 * accumulator at the end of the span.
 */
#include <string.h>

#include "attn_avx512.h"
#include "tile_math.h"

#define UNIT	64u	/* elements per unit: a line of an fp8 row, two of bf16 */
#define PAIRS	(UNIT / 2)
#define SGB	4u	/* query heads per register block */
#define LAZY	8.0f	/* score rise that moves the running max */

enum { BF16 = KVA_DTYPE_BF16, FP8 = KVA_DTYPE_FP8 };

struct dp_scratch {
	__m512i *qv;		/* [q_heads][D / 8] q as bf16 pairs, each
				 * 128-bit lane one pair four times */
	float *qf;		/* [q_heads] scale * K scale */
	float *acc;		/* [q_heads][D] value order */
	float *lv;		/* [q_heads][16] l, by lane */
	float *m;		/* [q_heads] */
	uint32_t *pw;		/* [q_heads][8] bf16 weight pairs of the tile */
	float *alpha;		/* [q_heads] */
	uint64_t *off;		/* [2][TILE] row offsets: this tile's (past
				 * its n rows, its last again), and the rows
				 * to prefetch (past those, this tile's) */
	__m512i lut[4];		/* kva_e4m3_bf16_lut */
};

static size_t dp_layout(const struct kva_attn_shape *sh, void *base,
			struct dp_scratch *s)
{
	size_t qd = (size_t)sh->q_heads * sh->head_dim;
	uint8_t *p = base;
	size_t o = 0;

#define PLACE(field, bytes) \
	do { if (s) s->field = (void *)(p + o); o += kva_align64(bytes); } \
	while (0)
	PLACE(qv, qd / 8 * sizeof(__m512i));
	PLACE(qf, sh->q_heads * sizeof(float));
	PLACE(acc, qd * sizeof(float));
	PLACE(lv, (size_t)sh->q_heads * 16 * sizeof(float));
	PLACE(m, sh->q_heads * sizeof(float));
	PLACE(pw, (size_t)sh->q_heads * 8 * sizeof(uint32_t));
	PLACE(alpha, sh->q_heads * sizeof(float));
	PLACE(off, 2 * TILE * sizeof(uint64_t));
#undef PLACE
	return o;
}

/*
 * The bf16 low and high bytes of 64 e4m3 codes, with the codes' signs:
 * the table is indexed by the low 7 bits (vpermi2b ignores the eighth).
 */
AI void widen_bytes(const struct dp_scratch *s, __m512i x, __m512i *lo,
		    __m512i *hi)
{
	*lo = _mm512_permutex2var_epi8(s->lut[0], x, s->lut[1]);
	/* hi | (x & 0x80) */
	*hi = _mm512_ternarylogic_epi32(
		_mm512_permutex2var_epi8(s->lut[2], x, s->lut[3]), x,
		_mm512_set1_epi8((char)0x80), 0xf8);
}

AI void pf_far(const uint8_t *p)
{
	_mm_prefetch((const char *)p, _MM_HINT_T2);
}

AI void pf_near(const uint8_t *p)
{
	_mm_prefetch((const char *)p, _MM_HINT_T0);
}

/*
 * Eight rows' unit u, transposed in 128-bit lanes as 16-bit pairs of
 * elements: c[i] (i = 0..3) lane L holds pairs 8L + 2i and 8L + 2i + 1 of
 * rows 0..3, c[4 + i] the same of rows 4..7.  The byte unpacks after the
 * table then split each into rows 0..3 (or 4..7) of one pair apiece.
 */
AI void transpose8(const __m512i *r, __m512i *c)
{
	__m512i a[8];

	UNROLL
	for (int i = 0; i < 4; i++) {
		a[2 * i] = _mm512_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
		a[2 * i + 1] = _mm512_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
	}
	UNROLL
	for (int i = 0; i < 2; i++) {
		/* rows 4i .. 4i + 3: a[4i] pairs 0-3 of rows 4i, 4i + 1 */
		c[4 * i] = _mm512_unpacklo_epi32(a[4 * i], a[4 * i + 2]);
		c[4 * i + 1] = _mm512_unpackhi_epi32(a[4 * i], a[4 * i + 2]);
		c[4 * i + 2] = _mm512_unpacklo_epi32(a[4 * i + 1], a[4 * i + 3]);
		c[4 * i + 3] = _mm512_unpackhi_epi32(a[4 * i + 1], a[4 * i + 3]);
	}
}

/*
 * e^x for the weights, which are rounded to bf16 (2^-9) right after:
 * degree-4 Taylor after the Cody-Waite reduction, relative error below
 * 5e-5 for x in [-87, 0]; ~0 far below.
 */
AI __m512 exp512_bf16(__m512 x)
{
	__m512 n, r, p;

	x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);	/* NaN stays NaN */
	n = _mm512_roundscale_ps(_mm512_mul_ps(x,
				 _mm512_set1_ps(1.44269504088896341f)),
				 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723e-6f), r);
	p = _mm512_set1_ps(1.0f / 24);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	return _mm512_scalef_ps(p, n);
}

/*
 * One unit of eight rows from j0 (fp8: 64 bytes a row) into the scores of
 * gb heads: acc[g][0] takes rows 0-3, acc[g][1] rows 4-7, q the unit's
 * vectors of head 0, vpq apart from head to head.  Each prefetches the
 * unit's lines of the rows PF_TILES ahead (far) and of the next block
 * (near, @nu8), one row's line at a time, spread out.
 */
AI void f8_unit_scores(const struct dp_scratch *s, const uint8_t *ku,
		       const uint8_t *nu8, uint32_t j0, const __m512i *q,
		       uint32_t vpq, const uint32_t gb, __m512 acc[][2])
{
	__m512i r[8], c[8];

	UNROLL
	for (uint32_t i = 0; i < 8; i++)
		r[i] = _mm512_loadu_si512(ku + s->off[j0 + i]);
	transpose8(r, c);
	/*
	 * Rows 0-3 and 4-7 alternate (k = 0, 4, 1, 5, ...): each accumulator
	 * takes two dependent vdpbf16ps per k, so taking them in order left
	 * four chains of eight waiting on latency.
	 */
	UNROLL
	for (uint32_t kk = 0; kk < 8; kk++) {
		uint32_t k = (kk >> 1) + 4 * (kk & 1);
		uint32_t i = k % 4;
		__m512i lo, hi, w0, w1;

		pf_far(ku + s->off[TILE + j0 + k]);
		pf_near(nu8 + s->off[j0 + k]);
		/* w0: pair 2i of four rows, w1: 2i + 1 */
		widen_bytes(s, c[k], &lo, &hi);
		w0 = _mm512_unpacklo_epi8(lo, hi);
		w1 = _mm512_unpackhi_epi8(lo, hi);
		UNROLL
		for (uint32_t g = 0; g < gb; g++) {
			const __m512i *qg = q + (size_t)g * vpq;
			__m512 *a = &acc[g][k / 4];

			*a = _mm512_dpbf16_ps(*a, (__m512bh)w0,
					      (__m512bh)qg[2 * i]);
			*a = _mm512_dpbf16_ps(*a, (__m512bh)w1,
					      (__m512bh)qg[2 * i + 1]);
		}
	}
}

/*
 * The same for bf16 (128 bytes a row, two vectors z): a vector of a row
 * holds pairs 4L .. 4L + 3 in 128-bit lane L, so a 4 x 4 transpose of
 * dwords in each lane (transpose4) gives, in c[i], pair 4L + i of four
 * rows, with no widening: the elements are bf16 already.
 */
AI void transpose4(const __m512i *x, __m512i *c)
{
	__m512i t0 = _mm512_unpacklo_epi32(x[0], x[1]);
	__m512i t1 = _mm512_unpackhi_epi32(x[0], x[1]);
	__m512i t2 = _mm512_unpacklo_epi32(x[2], x[3]);
	__m512i t3 = _mm512_unpackhi_epi32(x[2], x[3]);

	c[0] = _mm512_unpacklo_epi64(t0, t2);
	c[1] = _mm512_unpackhi_epi64(t0, t2);
	c[2] = _mm512_unpacklo_epi64(t1, t3);
	c[3] = _mm512_unpackhi_epi64(t1, t3);
}

AI void b16_unit_scores(const struct dp_scratch *s, const uint8_t *ku,
			const uint8_t *nu8, uint32_t j0, const __m512i *q,
			uint32_t vpq, const uint32_t gb, __m512 acc[][2])
{
	UNROLL
	for (uint32_t z = 0; z < 2; z++) {
		__m512i r[8], c[8];

		UNROLL
		for (uint32_t i = 0; i < 8; i++) {
			r[i] = _mm512_loadu_si512(ku + s->off[j0 + i] + 64 * z);
			pf_far(ku + s->off[TILE + j0 + i] + 64 * z);
			pf_near(nu8 + s->off[j0 + i] + 64 * z);
		}
		transpose4(r, c);
		transpose4(r + 4, c + 4);
		/* rows 0-3 and 4-7 alternate, as in f8_unit_scores() */
		UNROLL
		for (uint32_t i = 0; i < 4; i++)
			UNROLL
			for (uint32_t h = 0; h < 2; h++)
				UNROLL
				for (uint32_t g = 0; g < gb; g++)
					acc[g][h] = _mm512_dpbf16_ps(acc[g][h],
						(__m512bh)c[4 * h + i],
						(__m512bh)q[(size_t)g * vpq +
							    4 * z + i]);
	}
}

/*
 * Scores of one tile for gb query heads from qh0 against the K block kb:
 * two halves of eight tokens; per half and unit, the rows transposed and
 * widened, then for each head a vdpbf16ps per pair of elements and four
 * tokens (acc[g][0]: tokens 0-3 of the half, [1]: 4-7), summed over the
 * 128-bit lanes at the end.  Then the online-softmax update, as in
 * attn_simd.h, leaving bf16 weight pairs in pw and alpha.
 */
AI void dp_scores(const struct dp_scratch *s, const uint8_t *kb,
		  const uint8_t *nb, uint32_t n, uint32_t qh0,
		  const uint32_t nu, const uint32_t gb, const int dt)
{
	const uint32_t vpq = nu * PAIRS / 4;	/* q vectors per head */
	const __m512i *qv = s->qv + (size_t)qh0 * vpq;
	__mmask16 valid = (__mmask16)((1u << n) - 1);
	__m512 x[2][SGB];

	/* Loops over halves and units stay loops: the code is large. */
#pragma GCC unroll 1
	for (uint32_t h = 0; h < 2; h++) {
		uint32_t j0 = h * 8;
		__m512 acc[SGB][2];

		UNROLL
		for (uint32_t g = 0; g < gb; g++)
			acc[g][0] = acc[g][1] = _mm512_setzero_ps();
		if (j0 < n) {
#pragma GCC unroll 1
			for (uint32_t u = 0; u < nu; u++) {
				const __m512i *q = qv + u * 8;

				if (dt == BF16)
					b16_unit_scores(s, kb + u * UNIT * 2,
						(nb ? nb : kb) + u * UNIT * 2,
						j0, q, vpq, gb, acc);
				else
					f8_unit_scores(s, kb + u * UNIT,
						(nb ? nb : kb) + u * UNIT,
						j0, q, vpq, gb, acc);
			}
		}
		/*
		 * The first fold of the lane sums now, so that the second
		 * half's loop holds four vectors of this one, not eight
		 * (with eight it spilled).
		 */
		UNROLL
		for (uint32_t g = 0; g < gb; g++)
			x[h][g] = _mm512_add_ps(
				_mm512_shuffle_f32x4(acc[g][0], acc[g][1], 0x88),
				_mm512_shuffle_f32x4(acc[g][0], acc[g][1], 0xdd));
	}

	UNROLL
	for (uint32_t g = 0; g < gb; g++) {
		uint32_t qh = qh0 + g;
		__m512 sc, lv, p;
		float tmax, alpha = 1.0f;

		__m256bh pb;

		/* lane sums: 128-bit lane i of sc = tokens 4i .. 4i + 3 */
		sc = _mm512_add_ps(
			_mm512_shuffle_f32x4(x[0][g], x[1][g], 0x88),
			_mm512_shuffle_f32x4(x[0][g], x[1][g], 0xdd));
		sc = _mm512_mul_ps(sc, _mm512_set1_ps(s->qf[qh]));
		lv = _mm512_load_ps(s->lv + (size_t)qh * 16);
		/*
		 * The running max moves only when a score passes it by more
		 * than LAZY: the weights stay below e^LAZY, far from any
		 * overflow, and most tiles need no rescaling at all.
		 */
		if (_mm512_mask_cmp_ps_mask(valid, sc,
				_mm512_set1_ps(s->m[qh] + LAZY), _CMP_GT_OQ)) {
			tmax = _mm512_mask_reduce_max_ps(valid, sc);
			alpha = expf(s->m[qh] - tmax);
			s->m[qh] = tmax;
			lv = _mm512_mul_ps(lv, _mm512_set1_ps(alpha));
		}
		p = _mm512_maskz_mov_ps(valid, exp512_bf16(_mm512_sub_ps(
					sc, _mm512_set1_ps(s->m[qh]))));
		/* tokens 2i and 2i + 1 make dword i, as the values want */
		pb = _mm512_cvtneps_pbh(p);
		_mm256_store_si256((__m256i *)(s->pw + (size_t)qh * 8),
				   (__m256i)pb);
		_mm512_store_ps(s->lv + (size_t)qh * 16, _mm512_add_ps(lv,
				_mm512_cvtpbh_ps(pb)));
		s->alpha[qh] = alpha;
	}
}

/*
 * acc = alpha * acc + sum_j pw[j] * V[j] for gb query heads from qh0.
 * A unit's four accumulators hold, in 128-bit lane L, elements
 * 16L + 4k + 0..3 (accumulator k): the order the byte unpacks leave.
 */
AI void dp_values(const struct dp_scratch *s, const uint8_t *vb,
		  const uint8_t *nb, uint32_t n, uint32_t qh0,
		  const uint32_t nu, const uint32_t gb, const int dt)
{
	const uint32_t D = nu * UNIT;
	const uint32_t *pw = s->pw + (size_t)qh0 * 8;

#pragma GCC unroll 1
	for (uint32_t u = 0; u < nu; u++) {
		uint32_t ub = dt == BF16 ? UNIT * 2 : UNIT;	/* bytes */
		float *acc = s->acc + (size_t)qh0 * D + u * UNIT;
		const uint8_t *vu = vb + u * ub;
		const uint8_t *nu8 = (nb ? nb : vb) + u * ub;
		__m512 A[SGB][4];

		UNROLL
		for (uint32_t g = 0; g < gb; g++) {
			float al = s->alpha[qh0 + g];

			UNROLL
			for (uint32_t k = 0; k < 4; k++) {
				A[g][k] = _mm512_load_ps(acc + g * D + k * 16);
				if (al != 1.0f)
					A[g][k] = _mm512_mul_ps(A[g][k],
						_mm512_set1_ps(al));
			}
		}
		/* an odd n pairs its last row with itself, at weight 0 */
		for (uint32_t j = 0; j < n; j += 2) {
			__m512i b0, b1, pr[2], v[4];

			UNROLL
			for (uint32_t o = 0; o < ub; o += 64) {
				pf_far(vu + s->off[TILE + j] + o);
				pf_far(vu + s->off[TILE + j + 1] + o);
				pf_near(nu8 + s->off[j] + o);
				pf_near(nu8 + s->off[j + 1] + o);
			}
			if (dt == BF16) {
				/*
				 * (V[t][e], V[t + 1][e]) word pairs: v[k]
				 * lane L holds elements 32 (k / 2) + 8L +
				 * 4 (k % 2) + 0..3
				 */
				UNROLL
				for (uint32_t z = 0; z < 2; z++) {
					b0 = _mm512_loadu_si512(vu + s->off[j] +
								64 * z);
					b1 = _mm512_loadu_si512(vu +
						s->off[j + 1] + 64 * z);
					v[2 * z] = _mm512_unpacklo_epi16(b0, b1);
					v[2 * z + 1] =
						_mm512_unpackhi_epi16(b0, b1);
				}
			} else {
				b0 = _mm512_loadu_si512(vu + s->off[j]);
				b1 = _mm512_loadu_si512(vu + s->off[j + 1]);
				/* (V[t][e], V[t + 1][e]) byte pairs */
				pr[0] = _mm512_unpacklo_epi8(b0, b1);
				pr[1] = _mm512_unpackhi_epi8(b0, b1);
				UNROLL
				for (uint32_t i = 0; i < 2; i++) {
					__m512i lo, hi;

					widen_bytes(s, pr[i], &lo, &hi);
					v[2 * i] = _mm512_unpacklo_epi8(lo, hi);
					v[2 * i + 1] =
						_mm512_unpackhi_epi8(lo, hi);
				}
			}
			UNROLL
			for (uint32_t g = 0; g < gb; g++) {
				__m512bh w = (__m512bh)_mm512_set1_epi32(
					(int)pw[g * 8 + j / 2]);

				UNROLL
				for (uint32_t k = 0; k < 4; k++)
					A[g][k] = _mm512_dpbf16_ps(A[g][k],
						(__m512bh)v[k], w);
			}
		}
		UNROLL
		for (uint32_t g = 0; g < gb; g++)
			UNROLL
			for (uint32_t k = 0; k < 4; k++)
				_mm512_store_ps(acc + g * D + k * 16, A[g][k]);
	}
}

static inline uint32_t heads_in_block(uint32_t left)
{
	return left >= SGB ? SGB : left;
}

/* The K (@values false) or V block of one head, for every head block. */
AI void dp_head(const struct dp_scratch *s, const uint8_t *b,
		const uint8_t *nb, uint32_t n, uint32_t qh0, uint32_t G,
		const uint32_t nu, const bool values, const int dt)
{
	for (uint32_t g0 = 0, gb; g0 < G; g0 += gb, nb = NULL) {
		gb = heads_in_block(G - g0);
#define DP_BLOCK(w) \
	(values ? dp_values(s, b, nb, n, qh0 + g0, nu, w, dt) : \
		  dp_scores(s, b, nb, n, qh0 + g0, nu, w, dt))
		switch (gb) {
		case 1: DP_BLOCK(1); break;
		case 2: DP_BLOCK(2); break;
		case 3: DP_BLOCK(3); break;
		default: DP_BLOCK(SGB); break;
		}
#undef DP_BLOCK
	}
}

/* One tile of every head, as attn_simd.h's dec_tile(). */
AI void dp_tile(const struct dp_scratch *s, const uint8_t *kb,
		const uint8_t *vb, uint32_t hs, uint32_t heads, uint32_t G,
		uint32_t n, const uint32_t nu, const int dt)
{
	for (uint32_t h = 0; h < heads; h++)
		dp_head(s, kb + (size_t)h * hs, h + 1 < heads ?
			kb + (size_t)(h + 1) * hs : vb, n, h * G, G, nu,
			false, dt);
	for (uint32_t h = 0; h < heads; h++)
		dp_head(s, vb + (size_t)h * hs, h + 1 < heads ?
			vb + (size_t)(h + 1) * hs : NULL, n, h * G, G, nu,
			true, dt);
}

bool kva_avx512_dp_supported(const struct kva_attn_shape *sh)
{
	return (sh->dtype == FP8 || sh->dtype == BF16) &&
	       sh->head_dim % UNIT == 0 &&
	       __builtin_cpu_supports("avx512vbmi") &&
	       __builtin_cpu_supports("avx512bf16");
}

size_t kva_avx512_dp_scratch_bytes(const struct kva_attn_shape *sh)
{
	return dp_layout(sh, NULL, NULL);
}

/*
 * q of one head as the scores want it, per unit u: 8 vectors, each
 * 128-bit lane L holding one pair (bf16 q[2i], q[2i + 1]) four times:
 * for fp8, vector k holds pair 8L + k of the unit; for bf16, vector
 * 4z + i holds pair 16z + 4L + i.
 */
static void q_vectors(const float *q, uint32_t nu, __m512i *qv, int dt)
{
	for (uint32_t u = 0; u < nu; u++) {
		/* the unit's 32 pairs, in two vectors of 16 */
		__m512i p0 = _mm512_castsi256_si512((__m256i)_mm512_cvtneps_pbh(
			_mm512_loadu_ps(q + u * UNIT)));
		__m512i p1 = _mm512_castsi256_si512((__m256i)_mm512_cvtneps_pbh(
			_mm512_loadu_ps(q + u * UNIT + 32)));

		p0 = _mm512_inserti64x4(p0, (__m256i)_mm512_cvtneps_pbh(
			_mm512_loadu_ps(q + u * UNIT + 16)), 1);
		p1 = _mm512_inserti64x4(p1, (__m256i)_mm512_cvtneps_pbh(
			_mm512_loadu_ps(q + u * UNIT + 48)), 1);
		for (uint32_t k = 0; k < 8; k++) {
			/* the pair of lane L: 8L + k, or 16z + 4L + i */
			uint32_t p = dt == BF16 ? 16 * (k / 4) + k % 4 : k;
			uint32_t step = dt == BF16 ? 4 : 8;
			__m512i idx = _mm512_setr_epi32(
				p, p, p, p, p + step, p + step, p + step,
				p + step, p + 2 * step, p + 2 * step,
				p + 2 * step, p + 2 * step, p + 3 * step,
				p + 3 * step, p + 3 * step, p + 3 * step);

			qv[u * 8 + k] = _mm512_permutex2var_epi32(p0, idx, p1);
		}
	}
}

/*
 * The accumulator of one head back in element order, times @f.  Per unit,
 * fp8: element 16L + 4k + m is in lane 4L + m of accumulator k, so the
 * four accumulators' 128-bit lanes transposed give the unit's four
 * vectors; bf16: element 32z + 8L + 4h + m is in lane 4L + m of
 * accumulator 2z + h, so lanes L of accumulators 2z and 2z + 1 in turn.
 */
static void acc_out(const float *acc, uint32_t nu, float f, float *out,
		    int dt)
{
	__m512 fv = _mm512_set1_ps(f);

	for (uint32_t u = 0; u < nu; u++) {
		const float *a = acc + u * UNIT;
		__m512 a0 = _mm512_load_ps(a), a1 = _mm512_load_ps(a + 16);
		__m512 a2 = _mm512_load_ps(a + 32), a3 = _mm512_load_ps(a + 48);
		/* t0: a0.L0 a0.L1 a1.L0 a1.L1, t1: a0.L2 a0.L3 a1.L2 a1.L3 */
		__m512 t0 = _mm512_shuffle_f32x4(a0, a1, 0x44);
		__m512 t1 = _mm512_shuffle_f32x4(a0, a1, 0xee);
		__m512 t2 = _mm512_shuffle_f32x4(a2, a3, 0x44);
		__m512 t3 = _mm512_shuffle_f32x4(a2, a3, 0xee);
		__m512 o[4];

		if (dt == BF16) {
			/* t0 as a0.L0 a1.L0 a0.L1 a1.L1, and so on */
			o[0] = _mm512_shuffle_f32x4(t0, t0, 0xd8);
			o[1] = _mm512_shuffle_f32x4(t1, t1, 0xd8);
			o[2] = _mm512_shuffle_f32x4(t2, t2, 0xd8);
			o[3] = _mm512_shuffle_f32x4(t3, t3, 0xd8);
		} else {
			/* lane L of a0..a3, in order */
			o[0] = _mm512_shuffle_f32x4(t0, t2, 0x88);
			o[1] = _mm512_shuffle_f32x4(t0, t2, 0xdd);
			o[2] = _mm512_shuffle_f32x4(t1, t3, 0x88);
			o[3] = _mm512_shuffle_f32x4(t1, t3, 0xdd);
		}
		for (int i = 0; i < 4; i++)
			_mm512_storeu_ps(out + u * UNIT + 16 * i,
					 _mm512_mul_ps(fv, o[i]));
	}
}

AI void dp_decode(const struct kva_decode_span *sp, const int dt)
{
	const struct kva_attn_shape *sh = sp->sh;
	const struct kva_walk *w = &sh->walk;
	uint32_t D = sh->head_dim, G = sh->group, QH = sh->q_heads;
	uint64_t pf_lead = (uint64_t)PF_TILES * TILE;
	const uint8_t *kb0 = sp->base + w->kv_off[KVA_K];
	const uint8_t *vb0 = sp->base + w->kv_off[KVA_V];
	uint32_t hs = w->head_stride, heads = sh->kv_heads, nu = D / UNIT;
	struct dp_scratch s;

	dp_layout(sh, sp->scratch, &s);
	if (dt == FP8)
		for (int i = 0; i < 4; i++)
			s.lut[i] = _mm512_loadu_si512(kva_e4m3_bf16_lut +
						      64 * i);
	for (uint32_t h = 0; h < QH; h++) {
		q_vectors(sp->q + (size_t)h * D, nu, s.qv + (size_t)h * D / 8,
			  dt);
		s.qf[h] = sh->scale * (sh->kscale ? sh->kscale[h / G] : 1.0f);
		s.m[h] = -INFINITY;
	}
	memset(s.acc, 0, (size_t)QH * D * sizeof(float));
	memset(s.lv, 0, (size_t)QH * 16 * sizeof(float));

	for (uint64_t t = sp->t0; t < sp->t1; t += TILE) {
		uint32_t np, n = kva_walk_tile(w, t, sp->t1, TILE, pf_lead,
					       s.off, &np);

		/* the loops then need no bounds: see struct dp_scratch */
		for (uint32_t j = n; j < TILE; j++)
			s.off[j] = s.off[n - 1];
		for (uint32_t j = np; j < TILE; j++)
			s.off[TILE + j] = s.off[j];
		switch (nu) {
		case 1: dp_tile(&s, kb0, vb0, hs, heads, G, n, 1, dt); break;
		case 2: dp_tile(&s, kb0, vb0, hs, heads, G, n, 2, dt); break;
		default: dp_tile(&s, kb0, vb0, hs, heads, G, n, nu, dt); break;
		}
	}

	for (uint32_t h = 0; h < QH; h++) {
		sp->m[h] = s.m[h];
		sp->l[h] = _mm512_reduce_add_ps(
			_mm512_load_ps(s.lv + (size_t)h * 16));
		acc_out(s.acc + (size_t)h * D, nu,
			sh->vscale ? sh->vscale[h / G] : 1.0f,
			sp->acc + (size_t)h * D, dt);
	}
}

static __attribute__((noinline)) void dp_decode_e4m3(
	const struct kva_decode_span *sp)
{
	dp_decode(sp, FP8);
}

static __attribute__((noinline)) void dp_decode_b16(
	const struct kva_decode_span *sp)
{
	dp_decode(sp, BF16);
}

void kva_avx512_dp_decode(const struct kva_decode_span *sp)
{
	if (sp->sh->dtype == FP8)
		dp_decode_e4m3(sp);
	else
		dp_decode_b16(sp);
}
