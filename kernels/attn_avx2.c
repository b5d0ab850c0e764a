// SPDX-License-Identifier: MIT
/*
 * attn_avx2.c - AVX2 + FMA + F16C kernels.  The same algorithms as
 * attn_avx512.c (read that file's comment first), 8 lanes wide:
 *
 * Decode: tiles of 8 tokens, 16-element chunks (bf16 as even/odd halves
 * of one 256-bit load), up to 4 query heads per register block, and an
 * 8-way transpose-add tree for the scores.
 *
 * Prefill: scores computed transposed, S^T[key][row], 8 rows a vector,
 * then O += P V, 4 rows x 16 elements per register block.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "attn_internal.h"
#include "tile_math.h"

#define AI static inline __attribute__((always_inline))
/* Loops over register blocks must unroll, or the blocks live on the stack. */
#define UNROLL _Pragma("GCC unroll 16")

#define TILE	8u	/* decode: tokens per tile, one score vector */
#define CHUNK	16u	/* decode: elements widened per step */
#define GB	4u	/* decode: query heads per register block */
#define PF_TILES 4u	/* decode: prefetch this many tiles ahead */
#define KT	32u	/* prefill: keys per tile */

/* FP8N: fp8 rows known to hold no NaN code (the decode checks each tile) */
enum { FP32 = KVA_DTYPE_FP32, FP16 = KVA_DTYPE_FP16, BF16 = KVA_DTYPE_BF16,
       FP8 = KVA_DTYPE_FP8, FP8N = 16 };

/* ---- helpers ---------------------------------------------------------- */

/* e^x, relative error below 2e-7 for x in [-87, 88]; exactly 0 below;
 * NaN stays NaN. */
AI __m256 exp256(__m256 x)
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
AI __m256 tree8(const __m256 *v)
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

AI float hmax8(__m256 v)
{
	__m128 x = _mm_max_ps(_mm256_castps256_ps128(v),
			      _mm256_extractf128_ps(v, 1));

	x = _mm_max_ps(x, _mm_movehl_ps(x, x));
	x = _mm_max_ss(x, _mm_movehdup_ps(x));
	return _mm_cvtss_f32(x);
}

AI float hsum8(__m256 v)
{
	__m128 x = _mm_add_ps(_mm256_castps256_ps128(v),
			      _mm256_extractf128_ps(v, 1));

	x = _mm_add_ps(x, _mm_movehl_ps(x, x));
	x = _mm_add_ss(x, _mm_movehdup_ps(x));
	return _mm_cvtss_f32(x);
}

/* All-ones in lanes below n. */
AI __m256 lanes_below(uint32_t n)
{
	return _mm256_castsi256_ps(_mm256_cmpgt_epi32(
		_mm256_set1_epi32((int)n),
		_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}

/*
 * e4m3 in the low 8 bits of each 32-bit lane (sign-extended, or in bits
 * 16-23 when @odd), widened exactly: the code's bits placed in an fp32
 * make the value times 2^-120 (subnormals included), multiplied back
 * here; the NaN codes, which would read as 480, are made NaN.
 */
AI __m256 e4m3_lanes(__m256i x, int odd, int dt)
{
	__m256i v = _mm256_and_si256(_mm256_slli_epi32(x, odd ? 4 : 20),
				     _mm256_set1_epi32((int)0x87f00000u));
	__m256i nan;

	if (dt == FP8N)
		return _mm256_mul_ps(_mm256_castsi256_ps(v),
				     _mm256_set1_ps(0x1p120f));
	nan = _mm256_cmpeq_epi32(
		_mm256_and_si256(v, _mm256_set1_epi32(0x7ff00000)),
		_mm256_set1_epi32(0x07f00000));

	return _mm256_or_ps(_mm256_mul_ps(_mm256_castsi256_ps(v),
					  _mm256_set1_ps(0x1p120f)),
			    _mm256_castsi256_ps(_mm256_and_si256(nan,
				_mm256_set1_epi32(0x7fc00000))));
}

/* Chunk c (16 elements) of a row, widened, in register order. */
AI void load_chunk(const uint8_t *row, uint32_t c, int dt, __m256 *lo,
		   __m256 *hi)
{
	if (dt == FP8 || dt == FP8N) {
		/* as bf16: even elements in lo, odd in hi */
		__m256i x = _mm256_cvtepi8_epi16(_mm_loadu_si128(
			(const __m128i *)(row + c * 16)));

		*lo = e4m3_lanes(x, 0, dt);
		*hi = e4m3_lanes(x, 1, dt);
	} else if (dt == FP32) {
		*lo = _mm256_loadu_ps((const float *)(row + c * 64));
		*hi = _mm256_loadu_ps((const float *)(row + c * 64 + 32));
	} else if (dt == FP16) {
		*lo = _mm256_cvtph_ps(_mm_loadu_si128(
			(const __m128i *)(row + c * 32)));
		*hi = _mm256_cvtph_ps(_mm_loadu_si128(
			(const __m128i *)(row + c * 32 + 16)));
	} else {
		__m256i x = _mm256_loadu_si256((const __m256i *)(row + c * 32));

		*lo = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
		*hi = _mm256_castsi256_ps(_mm256_and_si256(
			x, _mm256_set1_epi32((int)0xffff0000u)));
	}
}

/* Register position of element e of a chunk, for dtype dt. */
static inline uint32_t reg_pos(uint32_t e, int dt)
{
	uint32_t c = e / CHUNK * CHUNK, i = e % CHUNK;

	if (dt != BF16 && dt != FP8 && dt != FP8N)
		return e;
	return c + (i & 1) * 8 + i / 2;
}

/* 8 elements from @row + 8 * i, widened, in natural order. */
AI __m256 load8(const uint8_t *row, uint32_t i, int dt)
{
	if (dt == FP8 || dt == FP8N)
		return e4m3_lanes(_mm256_cvtepi8_epi32(_mm_loadl_epi64(
			(const __m128i *)(row + i * 8))), 0, dt);
	if (dt == FP32)
		return _mm256_loadu_ps((const float *)(row + i * 32));
	if (dt == FP16)
		return _mm256_cvtph_ps(_mm_loadu_si128(
			(const __m128i *)(row + i * 16)));
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(
		_mm_loadu_si128((const __m128i *)(row + i * 16))), 16));
}

static inline void prefetch_row(const uint8_t *p, uint32_t bytes)
{
	for (uint32_t o = 0; o < bytes; o += 64)
		_mm_prefetch((const char *)p + o, _MM_HINT_T0);
}

/* ---- decode ------------------------------------------------------------ */

struct dec_scratch {
	__m256 *sp;		/* [GB][8] score partials */
	float *qp;		/* [q_heads][D] scale * q, register order */
	float *acc;		/* [q_heads][D] register order */
	float *lv;		/* [q_heads][8] l, by lane */
	float *m;		/* [q_heads] */
	float *pw;		/* [q_heads][8] weights of the tile */
	float *alpha;		/* [q_heads] */
	uint64_t *off;		/* [2][TILE] this tile, the one prefetched */
	uint32_t npf;
	uint32_t row_bytes;
};

static size_t dec_layout(const struct kva_attn_shape *sh, void *base,
			 struct dec_scratch *s)
{
	size_t qd = (size_t)sh->q_heads * sh->head_dim * sizeof(float);
	uint8_t *p = base;
	size_t o = 0;

#define PLACE(field, bytes) \
	do { if (s) s->field = (void *)(p + o); o += kva_align64(bytes); } \
	while (0)
	PLACE(sp, GB * 8 * sizeof(__m256));
	PLACE(qp, qd);
	PLACE(acc, qd);
	PLACE(lv, (size_t)sh->q_heads * 8 * sizeof(float));
	PLACE(m, sh->q_heads * sizeof(float));
	PLACE(pw, (size_t)sh->q_heads * 8 * sizeof(float));
	PLACE(alpha, sh->q_heads * sizeof(float));
	PLACE(off, 2 * TILE * sizeof(uint64_t));
#undef PLACE
	return o;
}

AI void dec_scores(const struct dec_scratch *s, const uint8_t *kb,
		   uint32_t n, uint32_t qh0, const uint32_t nc, const uint32_t gb,
		   const int dt)
{
	const uint32_t D = nc * CHUNK;
	__m256 valid = lanes_below(n);

	for (uint32_t j = 0; j < TILE; j++) {
		__m256 a[GB];

		UNROLL
		for (uint32_t g = 0; g < gb; g++)
			a[g] = _mm256_setzero_ps();
		if (j < s->npf)
			prefetch_row(kb + s->off[TILE + j], s->row_bytes);
		if (j < n) {
			const uint8_t *row = kb + s->off[j];

			UNROLL
			for (uint32_t c = 0; c < nc; c++) {
				__m256 lo, hi;

				load_chunk(row, c, dt, &lo, &hi);
				UNROLL
				for (uint32_t g = 0; g < gb; g++) {
					const float *q = s->qp +
						(size_t)(qh0 + g) * D + c * CHUNK;

					a[g] = _mm256_fmadd_ps(lo,
						_mm256_load_ps(q), a[g]);
					a[g] = _mm256_fmadd_ps(hi,
						_mm256_load_ps(q + 8), a[g]);
				}
			}
		}
		UNROLL
		for (uint32_t g = 0; g < gb; g++)
			s->sp[g * 8 + j] = a[g];
	}

	UNROLL
	for (uint32_t g = 0; g < gb; g++) {
		uint32_t qh = qh0 + g;
		__m256 sc = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY),
					     tree8(&s->sp[g * 8]), valid);
		float tmax = hmax8(sc), alpha = 1.0f;
		__m256 lv = _mm256_load_ps(s->lv + (size_t)qh * 8), p;

		if (tmax > s->m[qh]) {
			alpha = expf(s->m[qh] - tmax);
			s->m[qh] = tmax;
			lv = _mm256_mul_ps(lv, _mm256_set1_ps(alpha));
		}
		p = _mm256_and_ps(valid, exp256(_mm256_sub_ps(
					sc, _mm256_set1_ps(s->m[qh]))));
		_mm256_store_ps(s->lv + (size_t)qh * 8, _mm256_add_ps(lv, p));
		_mm256_store_ps(s->pw + (size_t)qh * 8, p);
		s->alpha[qh] = alpha;
	}
}

AI void dec_values(const struct dec_scratch *s, const uint8_t *vb,
		   uint32_t n, uint32_t qh0, const uint32_t nc, const uint32_t gb,
		   const int dt)
{
	const uint32_t D = nc * CHUNK;

	UNROLL
	for (uint32_t c = 0; c < nc; c++) {
		__m256 A[GB][2];

		UNROLL
		for (uint32_t g = 0; g < gb; g++) {
			float *acc = s->acc + (size_t)(qh0 + g) * D + c * CHUNK;
			__m256 al = _mm256_set1_ps(s->alpha[qh0 + g]);

			A[g][0] = _mm256_mul_ps(_mm256_load_ps(acc), al);
			A[g][1] = _mm256_mul_ps(_mm256_load_ps(acc + 8), al);
		}
		for (uint32_t j = 0; j < n; j++) {
			__m256 lo, hi;

			if (c == 0 && j < s->npf)
				prefetch_row(vb + s->off[TILE + j],
					     s->row_bytes);
			load_chunk(vb + s->off[j], c, dt, &lo, &hi);
			UNROLL
			for (uint32_t g = 0; g < gb; g++) {
				__m256 w = _mm256_broadcast_ss(
					&s->pw[(size_t)(qh0 + g) * 8 + j]);

				A[g][0] = _mm256_fmadd_ps(w, lo, A[g][0]);
				A[g][1] = _mm256_fmadd_ps(w, hi, A[g][1]);
			}
		}
		UNROLL
		for (uint32_t g = 0; g < gb; g++) {
			float *acc = s->acc + (size_t)(qh0 + g) * D + c * CHUNK;

			_mm256_store_ps(acc, A[g][0]);
			_mm256_store_ps(acc + 8, A[g][1]);
		}
	}
}

/*
 * Whether rows 0 .. n - 1 of the block at @b hold an e4m3 NaN code (0x7f
 * or 0xff): a compare per 32 bytes, so that widening rows that hold none
 * needs three instructions per eight elements instead of seven.
 */
static inline bool rows_have_nan(const struct dec_scratch *s,
				 const uint8_t *b, uint32_t n)
{
	const __m256i m = _mm256_set1_epi8(0x7f);
	__m256i any = _mm256_setzero_si256();
	uint32_t o;

	/* rows are a multiple of 16 bytes: the last 16 on their own */
	for (uint32_t j = 0; j < n; j++) {
		const uint8_t *row = b + s->off[j];

		for (o = 0; o + 32 <= s->row_bytes; o += 32)
			any = _mm256_or_si256(any, _mm256_cmpeq_epi8(
				_mm256_and_si256(_mm256_loadu_si256(
					(const __m256i *)(row + o)), m), m));
		if (o < s->row_bytes)
			any = _mm256_or_si256(any, _mm256_cmpeq_epi8(
				_mm256_and_si256(_mm256_castsi128_si256(
					_mm_loadu_si128((const __m128i *)(row + o))),
					m), m));
	}
	return !_mm256_testz_si256(any, any);
}

AI void dec_scores_g(const struct dec_scratch *s, const uint8_t *k,
		     uint32_t n, uint32_t qh0, const uint32_t nc, uint32_t gb,
		     const int dt)
{
	switch (gb) {
	case 1: dec_scores(s, k, n, qh0, nc, 1, dt); break;
	case 2: dec_scores(s, k, n, qh0, nc, 2, dt); break;
	case 3: dec_scores(s, k, n, qh0, nc, 3, dt); break;
	default: dec_scores(s, k, n, qh0, nc, 4, dt); break;
	}
}

AI void dec_values_g(const struct dec_scratch *s, const uint8_t *v,
		     uint32_t n, uint32_t qh0, const uint32_t nc, uint32_t gb,
		     const int dt)
{
	switch (gb) {
	case 1: dec_values(s, v, n, qh0, nc, 1, dt); break;
	case 2: dec_values(s, v, n, qh0, nc, 2, dt); break;
	case 3: dec_values(s, v, n, qh0, nc, 3, dt); break;
	default: dec_values(s, v, n, qh0, nc, 4, dt); break;
	}
}

/* One tile of every head: K blocks in address order, then V blocks. */
AI void dec_tile(const struct dec_scratch *s, const uint8_t *kb,
		 const uint8_t *vb, uint32_t hs, uint32_t heads, uint32_t G,
		 uint32_t n, const uint32_t nc, const int dt)
{
	for (uint32_t h = 0; h < heads; h++) {
		const uint8_t *k = kb + (size_t)h * hs;
		bool fast = dt == FP8 && !rows_have_nan(s, k, n);

		for (uint32_t g0 = 0; g0 < G; g0 += GB) {
			uint32_t qh0 = h * G + g0, gb = G - g0;

			if (fast)
				dec_scores_g(s, k, n, qh0, nc, gb, FP8N);
			else
				dec_scores_g(s, k, n, qh0, nc, gb, dt);
		}
	}
	for (uint32_t h = 0; h < heads; h++) {
		const uint8_t *v = vb + (size_t)h * hs;
		bool fast = dt == FP8 && !rows_have_nan(s, v, n);

		for (uint32_t g0 = 0; g0 < G; g0 += GB) {
			uint32_t qh0 = h * G + g0, gb = G - g0;

			if (fast)
				dec_values_g(s, v, n, qh0, nc, gb, FP8N);
			else
				dec_values_g(s, v, n, qh0, nc, gb, dt);
		}
	}
}

AI void decode_dt(const struct kva_decode_span *sp, const int dt)
{
	const struct kva_attn_shape *sh = sp->sh;
	const struct kva_walk *w = &sh->walk;
	uint32_t D = sh->head_dim, G = sh->group, QH = sh->q_heads;
	uint64_t pf_lead = (uint64_t)PF_TILES * TILE;
	const uint8_t *kb0 = sp->base + w->kv_off[KVA_K];
	const uint8_t *vb0 = sp->base + w->kv_off[KVA_V];
	uint32_t hs = w->head_stride, heads = sh->kv_heads, nc = D / CHUNK;
	struct dec_scratch s;

	dec_layout(sh, sp->scratch, &s);
	s.row_bytes = w->row_bytes;
	for (uint32_t h = 0; h < QH; h++) {
		float f = sh->scale * (sh->kscale ? sh->kscale[h / G] : 1.0f);

		for (uint32_t e = 0; e < D; e++)
			s.qp[(size_t)h * D + reg_pos(e, dt)] =
				sp->q[(size_t)h * D + e] * f;
		s.m[h] = -INFINITY;
	}
	memset(s.acc, 0, (size_t)QH * D * sizeof(float));
	memset(s.lv, 0, (size_t)QH * 8 * sizeof(float));

	for (uint64_t t = sp->t0; t < sp->t1; t += TILE) {
		uint32_t n = sp->t1 - t < TILE ? (uint32_t)(sp->t1 - t) : TILE;
		uint64_t tp = t + pf_lead;

		s.npf = tp < sp->t1 ? (sp->t1 - tp < TILE ?
				(uint32_t)(sp->t1 - tp) : TILE) : 0;
		kva_walk_rows(w, t, n, s.off);
		kva_walk_rows(w, tp, s.npf, s.off + TILE);
		switch (nc) {
		case 4: dec_tile(&s, kb0, vb0, hs, heads, G, n, 4, dt); break;
		case 8: dec_tile(&s, kb0, vb0, hs, heads, G, n, 8, dt); break;
		default: dec_tile(&s, kb0, vb0, hs, heads, G, n, nc, dt); break;
		}
	}

	for (uint32_t h = 0; h < QH; h++) {
		float f = sh->vscale ? sh->vscale[h / G] : 1.0f;

		sp->m[h] = s.m[h];
		sp->l[h] = hsum8(_mm256_load_ps(s.lv + (size_t)h * 8));
		for (uint32_t e = 0; e < D; e++)
			sp->acc[(size_t)h * D + e] =
				s.acc[(size_t)h * D + reg_pos(e, dt)] * f;
	}
}

/* One function per dtype: each is large enough on its own. */
static __attribute__((noinline)) void decode_f32(const struct kva_decode_span *sp)
{
	decode_dt(sp, FP32);
}

static __attribute__((noinline)) void decode_f16(const struct kva_decode_span *sp)
{
	decode_dt(sp, FP16);
}

static __attribute__((noinline)) void decode_b16(const struct kva_decode_span *sp)
{
	decode_dt(sp, BF16);
}

static __attribute__((noinline)) void decode_e4m3(const struct kva_decode_span *sp)
{
	decode_dt(sp, FP8);
}

static void avx2_decode(const struct kva_decode_span *sp)
{
	switch (sp->sh->dtype) {
	case FP8: decode_e4m3(sp); break;
	case FP32: decode_f32(sp); break;
	case FP16: decode_f16(sp); break;
	default:   decode_b16(sp); break;
	}
}

/* ---- prefill ------------------------------------------------------------ */

struct pre_scratch {
	float *qt;		/* [D][RP] scale * q, transposed */
	float *kf, *vf;		/* [KT][D] the tile, widened */
	float *st;		/* [KT][RP] scores, then weights */
	float *o;		/* [R][D] */
	float *m, *l, *alpha;	/* [RP] */
	int32_t *qi;		/* [RP] query token of each row */
};

static size_t pre_layout(const struct kva_attn_shape *sh, void *base,
			 struct pre_scratch *s)
{
	uint32_t rows = kva_prefill_block_tokens(sh->group) * sh->group;
	size_t RP = (rows + 7) & ~7u, D = sh->head_dim;
	uint8_t *p = base;
	size_t o = 0;

#define PLACE(field, bytes) \
	do { if (s) s->field = (void *)(p + o); o += kva_align64(bytes); } \
	while (0)
	PLACE(qt, D * RP * sizeof(float));
	PLACE(kf, KT * D * sizeof(float));
	PLACE(vf, KT * D * sizeof(float));
	PLACE(st, KT * RP * sizeof(float));
	PLACE(o, RP * D * sizeof(float));
	PLACE(m, RP * sizeof(float));
	PLACE(l, RP * sizeof(float));
	PLACE(alpha, RP * sizeof(float));
	PLACE(qi, RP * sizeof(int32_t));
#undef PLACE
	return o;
}

/* S^T[key][rows] for 4 keys from kb and rb row vectors from rv. */
AI void pre_scores(const struct pre_scratch *s, uint32_t D, uint32_t RP,
		   uint32_t kb, uint32_t rv, const uint32_t rb)
{
	__m256 a[2][4];

	UNROLL
	for (uint32_t r = 0; r < rb; r++)
		UNROLL
		for (uint32_t k = 0; k < 4; k++)
			a[r][k] = _mm256_setzero_ps();
	for (uint32_t d = 0; d < D; d++) {
		__m256 q[2];

		UNROLL
		for (uint32_t r = 0; r < rb; r++)
			q[r] = _mm256_load_ps(s->qt + (size_t)d * RP +
					      (rv + r) * 8);
		UNROLL
		for (uint32_t k = 0; k < 4; k++) {
			__m256 b = _mm256_broadcast_ss(
				&s->kf[(size_t)(kb + k) * D + d]);

			UNROLL
			for (uint32_t r = 0; r < rb; r++)
				a[r][k] = _mm256_fmadd_ps(q[r], b, a[r][k]);
		}
	}
	UNROLL
	for (uint32_t r = 0; r < rb; r++)
		UNROLL
		for (uint32_t k = 0; k < 4; k++)
			_mm256_store_ps(s->st + (size_t)(kb + k) * RP +
					(rv + r) * 8, a[r][k]);
}

/* O[r0 .. r0 + rb)[d0 .. d0 + 16) = alpha * O + P V over n keys. */
AI void pre_pv(const struct pre_scratch *s, uint32_t D, uint32_t RP,
	       uint32_t n, uint32_t r0, uint32_t d0, const uint32_t rb)
{
	__m256 A[4][2];

	UNROLL
	for (uint32_t r = 0; r < rb; r++) {
		__m256 al = _mm256_broadcast_ss(&s->alpha[r0 + r]);
		const float *o = s->o + (size_t)(r0 + r) * D + d0;

		A[r][0] = _mm256_mul_ps(al, _mm256_load_ps(o));
		A[r][1] = _mm256_mul_ps(al, _mm256_load_ps(o + 8));
	}
	for (uint32_t j = 0; j < n; j++) {
		const float *v = s->vf + (size_t)j * D + d0;
		__m256 v0 = _mm256_load_ps(v), v1 = _mm256_load_ps(v + 8);

		UNROLL
		for (uint32_t r = 0; r < rb; r++) {
			__m256 w = _mm256_broadcast_ss(
				&s->st[(size_t)j * RP + r0 + r]);

			A[r][0] = _mm256_fmadd_ps(w, v0, A[r][0]);
			A[r][1] = _mm256_fmadd_ps(w, v1, A[r][1]);
		}
	}
	UNROLL
	for (uint32_t r = 0; r < rb; r++) {
		float *o = s->o + (size_t)(r0 + r) * D + d0;

		_mm256_store_ps(o, A[r][0]);
		_mm256_store_ps(o + 8, A[r][1]);
	}
}

/* The tile's rows widened (times @f, an fp8 head's factor), 0 past n. */
AI void pre_widen(const uint8_t *blk, const struct kva_walk *w, uint64_t k0,
		  uint32_t n, uint32_t D, float f, float *dst, const int dt)
{
	for (uint32_t j = 0; j < KT; j++) {
		const uint8_t *row = blk + kva_walk_tok(w, k0 + j);

		for (uint32_t i = 0; i < D / 8; i++) {
			__m256 x = _mm256_setzero_ps();

			if (j < n)
				x = load8(row, i, dt);
			if (dt == FP8)
				x = _mm256_mul_ps(x, _mm256_set1_ps(f));
			_mm256_store_ps(dst + (size_t)j * D + i * 8, x);
		}
	}
}

AI void prefill_dt(const struct kva_prefill_block *b, const int dt)
{
	const struct kva_attn_shape *sh = b->sh;
	const struct kva_walk *w = &sh->walk;
	uint32_t D = sh->head_dim, G = sh->group, R = b->nq * G;
	uint32_t RP = (R + 7) & ~7u, nrv = RP / 8;
	size_t qstride = (size_t)sh->q_heads * D;
	const uint8_t *kb = b->base + w->kv_off[KVA_K] +
			    (uint64_t)b->kv_head * w->head_stride;
	const uint8_t *vb = b->base + w->kv_off[KVA_V] +
			    (uint64_t)b->kv_head * w->head_stride;
	uint64_t end = b->pos0 + b->nq;
	const __m256 ninf = _mm256_set1_ps(-INFINITY);
	float kf = sh->kscale ? sh->kscale[b->kv_head] : 1.0f;
	float vf = sh->vscale ? sh->vscale[b->kv_head] : 1.0f;
	struct pre_scratch s;

	pre_layout(sh, b->scratch, &s);
	for (uint32_t r = 0; r < RP; r++) {
		const float *q = b->q + (r / G) * qstride +
				 (size_t)(b->kv_head * G + r % G) * D;

		for (uint32_t d = 0; d < D; d++)
			s.qt[(size_t)d * RP + r] = r < R ? q[d] * sh->scale : 0;
		s.qi[r] = r < R ? (int32_t)(r / G) : INT32_MAX;
		s.m[r] = -INFINITY;
		s.l[r] = 0.0f;
	}
	memset(s.o, 0, (size_t)RP * D * sizeof(float));

	for (uint64_t k0 = 0; k0 < end; k0 += KT) {
		uint32_t n = end - k0 < KT ? (uint32_t)(end - k0) : KT;

		pre_widen(kb, w, k0, n, D, kf, s.kf, dt);
		pre_widen(vb, w, k0, n, D, vf, s.vf, dt);
		for (uint32_t kk = 0; kk < n; kk += 4) {
			uint32_t rv = 0;

			for (; rv + 2 <= nrv; rv += 2)
				pre_scores(&s, D, RP, kk, rv, 2);
			if (rv < nrv)
				pre_scores(&s, D, RP, kk, rv, 1);
		}
		for (uint32_t j = 0; j < KT; j++) {
			int64_t need = (int64_t)(k0 + j) - (int64_t)b->pos0;

			if (j < n && need <= 0)
				continue;
			for (uint32_t rv = 0; rv < nrv; rv++) {
				__m256i qi = _mm256_load_si256(
					(const __m256i *)(s.qi + rv * 8));
				__m256 hide = j >= n ?
					_mm256_castsi256_ps(_mm256_set1_epi32(-1)) :
					_mm256_castsi256_ps(_mm256_cmpgt_epi32(
						_mm256_set1_epi32((int32_t)need), qi));
				float *st = s.st + (size_t)j * RP + rv * 8;

				_mm256_store_ps(st, _mm256_blendv_ps(
					_mm256_load_ps(st), ninf, hide));
			}
		}
		for (uint32_t rv = 0; rv < nrv; rv++) {
			__m256 m = _mm256_load_ps(s.m + rv * 8), mx = m, al, sum;
			__m256 none, was_none;

			for (uint32_t j = 0; j < n; j++)
				mx = _mm256_max_ps(mx, _mm256_load_ps(
					s.st + (size_t)j * RP + rv * 8));
			none = _mm256_cmp_ps(mx, ninf, _CMP_EQ_OQ);
			was_none = _mm256_cmp_ps(m, ninf, _CMP_EQ_OQ);
			/* exp256 gives exactly 0 for m = -INF < mx */
			al = _mm256_blendv_ps(exp256(_mm256_sub_ps(m, mx)),
					      _mm256_set1_ps(1.0f), none);
			al = _mm256_blendv_ps(al, _mm256_setzero_ps(),
					      _mm256_andnot_ps(none, was_none));
			sum = _mm256_mul_ps(_mm256_load_ps(s.l + rv * 8), al);
			for (uint32_t j = 0; j < n; j++) {
				float *st = s.st + (size_t)j * RP + rv * 8;
				__m256 x = _mm256_load_ps(st);
				__m256 live = _mm256_cmp_ps(x, ninf, _CMP_NEQ_OQ);
				__m256 p = _mm256_and_ps(live, exp256(
					_mm256_sub_ps(x, mx)));

				_mm256_store_ps(st, p);
				sum = _mm256_add_ps(sum, p);
			}
			_mm256_store_ps(s.l + rv * 8, sum);
			_mm256_store_ps(s.m + rv * 8, mx);
			_mm256_store_ps(s.alpha + rv * 8, al);
		}
		for (uint32_t r0 = 0; r0 < R; r0 += 4)
			for (uint32_t d0 = 0; d0 < D; d0 += 16) {
				switch (R - r0) {
				case 1: pre_pv(&s, D, RP, n, r0, d0, 1); break;
				case 2: pre_pv(&s, D, RP, n, r0, d0, 2); break;
				case 3: pre_pv(&s, D, RP, n, r0, d0, 3); break;
				default: pre_pv(&s, D, RP, n, r0, d0, 4); break;
				}
			}
	}

	for (uint32_t r = 0; r < R; r++) {
		struct kva_softmax st = { s.m[r], s.l[r] };
		__m256 norm = _mm256_set1_ps(kva_softmax_norm(&st));
		float *o = b->out + (r / G) * qstride +
			   (size_t)(b->kv_head * G + r % G) * D;

		for (uint32_t d = 0; d < D; d += 8)
			_mm256_storeu_ps(o + d, _mm256_mul_ps(norm,
				_mm256_load_ps(s.o + (size_t)r * D + d)));
	}
}

static __attribute__((noinline)) void prefill_f32(const struct kva_prefill_block *b)
{
	prefill_dt(b, FP32);
}

static __attribute__((noinline)) void prefill_f16(const struct kva_prefill_block *b)
{
	prefill_dt(b, FP16);
}

static __attribute__((noinline)) void prefill_b16(const struct kva_prefill_block *b)
{
	prefill_dt(b, BF16);
}

static __attribute__((noinline)) void prefill_e4m3(const struct kva_prefill_block *b)
{
	prefill_dt(b, FP8);
}

static void avx2_prefill(const struct kva_prefill_block *b)
{
	switch (b->sh->dtype) {
	case FP8: prefill_e4m3(b); break;
	case FP32: prefill_f32(b); break;
	case FP16: prefill_f16(b); break;
	default:   prefill_b16(b); break;
	}
}

static size_t avx2_scratch(const struct kva_attn_shape *sh)
{
	size_t d = dec_layout(sh, NULL, NULL), p = pre_layout(sh, NULL, NULL);

	return d > p ? d : p;
}

static bool avx2_supports(const struct kva_attn_shape *sh)
{
	return sh->head_dim % CHUNK == 0;
}

const struct kva_isa_ops kva_ops_avx2 = {
	.decode = avx2_decode,
	.prefill = avx2_prefill,
	.scratch_bytes = avx2_scratch,
	.supports = avx2_supports,
};
