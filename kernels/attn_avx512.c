// SPDX-License-Identifier: MIT
/*
 * attn_avx512.c - AVX-512 kernels (F, BW, DQ, VL).  Compiled with those
 * -m flags alone; attn_cpu.c calls in only when the CPU has them.
 *
 * Decode (memory bound: every K/V byte is used once per query head of the
 * group).  A span walks its tokens in tiles of 16 and, within a tile,
 * every KV head in turn, so it reads each frame's slice of the layer front
 * to back.  A head's K rows of one frame are one 4 KiB run, and the
 * hardware prefetchers stop at page ends, so the kernel prefetches in two
 * steps: the rows of a later tile from memory into L2, and the next
 * head's block of this tile from L2 into L1.  Per tile and head:
 *
 *  - scores: each K row is widened in 32-element chunks and multiplied
 *    into one accumulator per query head; the 16 rows' accumulators are
 *    then summed across lanes by one transpose-add tree (tree16), which
 *    leaves the tile's 16 scores in one vector in token order.
 *  - softmax: running max per query head, exp of the 16 scores at once,
 *    the row sum l kept as 16 lanes until the span ends.
 *  - values: the accumulator (head_dim floats per query head) is updated
 *    a 32-element chunk at a time for up to 8 query heads, so that each
 *    V chunk is widened once and used by the whole group.
 *
 * bf16 is widened by shifts: a 32-bit lane holding elements 2i and 2i+1
 * gives element 2i as lane << 16 and element 2i+1 as lane & 0xffff0000.
 * The chunk's two vectors so hold the even and the odd elements; q is
 * stored permuted the same way and the accumulator is un-permuted at the
 * end, which costs nothing per token.
 *
 * Prefill (compute bound).  A block of up to 64 query rows (query tokens
 * x the group's heads) against tiles of 32 keys: the scores are computed
 * transposed, S^T[key][row], from q^T (transposed once per block) and the
 * widened K rows, so that a vector holds 16 rows and the online softmax
 * is vertical, with no horizontal sums; then O[row][:] += P V with the
 * weights broadcast from S^T.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "attn_internal.h"
#include "tile_math.h"
#include "attn_avx512.h"

#define CHUNK	32u	/* decode: elements widened per step */
#define KT	32u	/* prefill: keys per tile */

enum { FP32 = KVA_DTYPE_FP32, FP16 = KVA_DTYPE_FP16, BF16 = KVA_DTYPE_BF16,
       FP8 = KVA_DTYPE_FP8 };

/* ---- helpers ---------------------------------------------------------- */

/* Chunk c (32 elements) of a row, widened, in register order. */
AI void load_chunk(const uint8_t *row, uint32_t c, int dt, __m512 *lo,
		   __m512 *hi)
{
	if (dt == FP32) {
		*lo = _mm512_loadu_ps(row + c * 128);
		*hi = _mm512_loadu_ps(row + c * 128 + 64);
	} else if (dt == FP16) {
		*lo = _mm512_cvtph_ps(_mm256_loadu_si256(
			(const __m256i *)(row + c * 64)));
		*hi = _mm512_cvtph_ps(_mm256_loadu_si256(
			(const __m256i *)(row + c * 64 + 32)));
	} else {
		__m512i x = _mm512_loadu_si512(row + c * 64);

		*lo = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
		*hi = _mm512_castsi512_ps(_mm512_and_si512(
			x, _mm512_set1_epi32((int)0xffff0000u)));
	}
}

/* Register position of element e of a chunk, for dtype dt. */
static inline uint32_t reg_pos(uint32_t e, int dt)
{
	uint32_t c = e / CHUNK * CHUNK, i = e % CHUNK;

	if (dt != BF16)
		return e;
	return c + (i & 1) * 16 + i / 2;
}

/*
 * 16 elements from @row + 16 * i, widened, in natural order.  e4m3 (for
 * prefill; attn_avx512_fp8.c decodes) as attn_avx2.c's e4m3_lanes(): the
 * code's bits in an fp32 are the value times 2^-120, NaN codes aside.
 */
AI __m512 load16(const uint8_t *row, uint32_t i, int dt)
{
	if (dt == FP8) {
		__m512i v = _mm512_and_si512(_mm512_slli_epi32(
			_mm512_cvtepi8_epi32(_mm_loadu_si128(
				(const __m128i *)(row + i * 16))), 20),
			_mm512_set1_epi32((int)0x87f00000u));
		__mmask16 nan = _mm512_cmpeq_epi32_mask(_mm512_and_si512(v,
			_mm512_set1_epi32(0x7ff00000)),
			_mm512_set1_epi32(0x07f00000));

		return _mm512_mask_mov_ps(_mm512_mul_ps(
			_mm512_castsi512_ps(v), _mm512_set1_ps(0x1p120f)),
			nan, _mm512_set1_ps(NAN));
	}
	if (dt == FP32)
		return _mm512_loadu_ps(row + i * 64);
	if (dt == FP16)
		return _mm512_cvtph_ps(_mm256_loadu_si256(
			(const __m256i *)(row + i * 32)));
	return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(
		_mm256_loadu_si256((const __m256i *)(row + i * 32))), 16));
}

/* ---- decode ------------------------------------------------------------ */

struct dec_scratch {
	float *qp;		/* [q_heads][D] scale * q, register order */
	float *acc;		/* [q_heads][D] register order */
	float *lv;		/* [q_heads][16] l, by lane */
	float *m;		/* [q_heads] */
	__m512 *sp;		/* [GB][16] score partials */
	float *pw;		/* [q_heads][16] weights of the tile */
	float *alpha;		/* [q_heads] rescale of the tile */
	uint64_t *off;		/* [2][TILE] row offsets: this tile, the
				 * one prefetched */
	uint32_t npf;		/* rows of the tile prefetched */
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
	PLACE(sp, GB * 16 * sizeof(__m512));
	PLACE(qp, qd);
	PLACE(acc, qd);
	PLACE(lv, (size_t)sh->q_heads * 16 * sizeof(float));
	PLACE(m, sh->q_heads * sizeof(float));
	PLACE(pw, (size_t)sh->q_heads * 16 * sizeof(float));
	PLACE(alpha, sh->q_heads * sizeof(float));
	PLACE(off, 2 * TILE * sizeof(uint64_t));
#undef PLACE
	return o;
}

/*
 * Scores of one tile of n tokens (row offsets off[]) in the K block kb for
 * gb query heads from qh0, and their online-softmax update: leaves the
 * weights in pw[qh][16] and the rescale factors in alpha[qh].  nb, if not
 * NULL, is the block to bring into L1 meanwhile.
 */
AI void dec_scores(const struct dec_scratch *s, const uint8_t *kb,
		   const uint8_t *nb, uint32_t n, uint32_t qh0,
		   const uint32_t nc, const uint32_t gb, const int dt)
{
	const uint32_t D = nc * CHUNK;
	__mmask16 valid = (__mmask16)((1u << n) - 1);

	for (uint32_t j = 0; j < TILE; j++) {
		__m512 a[GB];

		UNROLL
		for (uint32_t g = 0; g < gb; g++)
			a[g] = _mm512_setzero_ps();
		if (j < s->npf)
			prefetch_far(kb + s->off[TILE + j], s->row_bytes);
		if (nb && j < n)
			prefetch_near(nb + s->off[j], s->row_bytes);
		if (j < n) {
			const uint8_t *row = kb + s->off[j];

			UNROLL
			for (uint32_t c = 0; c < nc; c++) {
				__m512 lo, hi;

				load_chunk(row, c, dt, &lo, &hi);
				UNROLL
				for (uint32_t g = 0; g < gb; g++) {
					const float *q = s->qp +
						(size_t)(qh0 + g) * D + c * CHUNK;

					a[g] = _mm512_fmadd_ps(lo,
						_mm512_load_ps(q), a[g]);
					a[g] = _mm512_fmadd_ps(hi,
						_mm512_load_ps(q + 16), a[g]);
				}
			}
		}
		UNROLL
		for (uint32_t g = 0; g < gb; g++)
			s->sp[g * 16 + j] = a[g];
	}

	UNROLL
	for (uint32_t g = 0; g < gb; g++) {
		uint32_t qh = qh0 + g;
		__m512 sc = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), valid,
					       tree16(&s->sp[g * 16]));
		float tmax = _mm512_reduce_max_ps(sc), alpha = 1.0f;
		__m512 lv = _mm512_load_ps(s->lv + (size_t)qh * 16), p;

		if (tmax > s->m[qh]) {
			alpha = expf(s->m[qh] - tmax);
			s->m[qh] = tmax;
			lv = _mm512_mul_ps(lv, _mm512_set1_ps(alpha));
		}
		p = _mm512_maskz_mov_ps(valid, exp512(_mm512_sub_ps(
					sc, _mm512_set1_ps(s->m[qh]))));
		_mm512_store_ps(s->lv + (size_t)qh * 16, _mm512_add_ps(lv, p));
		_mm512_store_ps(s->pw + (size_t)qh * 16, p);
		s->alpha[qh] = alpha;
	}
}

/*
 * acc = alpha * acc + sum_j pw[j] * V[j] for gb query heads from qh0;
 * nb as for dec_scores().
 */
AI void dec_values(const struct dec_scratch *s, const uint8_t *vb,
		   const uint8_t *nb, uint32_t n, uint32_t qh0,
		   const uint32_t nc, const uint32_t gb, const int dt)
{
	const uint32_t D = nc * CHUNK;

	UNROLL
	for (uint32_t c = 0; c < nc; c++) {
		__m512 A[GB][2];

		UNROLL
		for (uint32_t g = 0; g < gb; g++) {
			float *acc = s->acc + (size_t)(qh0 + g) * D + c * CHUNK;
			__m512 al = _mm512_set1_ps(s->alpha[qh0 + g]);

			A[g][0] = _mm512_mul_ps(_mm512_load_ps(acc), al);
			A[g][1] = _mm512_mul_ps(_mm512_load_ps(acc + 16), al);
		}
		for (uint32_t j = 0; j < n; j++) {
			__m512 lo, hi;

			if (c == 0 && j < s->npf)
				prefetch_far(vb + s->off[TILE + j],
					     s->row_bytes);
			if (nb && c == nc / 2)
				prefetch_near(nb + s->off[j], s->row_bytes);
			load_chunk(vb + s->off[j], c, dt, &lo, &hi);
			UNROLL
			for (uint32_t g = 0; g < gb; g++) {
				__m512 w = _mm512_set1_ps(
					s->pw[(size_t)(qh0 + g) * 16 + j]);

				A[g][0] = _mm512_fmadd_ps(w, lo, A[g][0]);
				A[g][1] = _mm512_fmadd_ps(w, hi, A[g][1]);
			}
		}
		UNROLL
		for (uint32_t g = 0; g < gb; g++) {
			float *acc = s->acc + (size_t)(qh0 + g) * D + c * CHUNK;

			_mm512_store_ps(acc, A[g][0]);
			_mm512_store_ps(acc + 16, A[g][1]);
		}
	}
}

/*
 * One tile of every head: first the scores of all heads, walking the
 * frame's K blocks in address order, then the values, walking its V
 * blocks in address order, so that the tile's slice of the frame is read
 * front to back.  The first register block of each head brings the next
 * block in that order (the last K block's is V head 0's) into L1.
 */
AI void dec_tile(const struct dec_scratch *s, const uint8_t *kb,
		 const uint8_t *vb, uint32_t hs, uint32_t heads, uint32_t G,
		 uint32_t n, const uint32_t nc, const int dt)
{
	for (uint32_t h = 0; h < heads; h++)
		for (uint32_t g0 = 0, gb; g0 < G; g0 += gb) {
			const uint8_t *k = kb + (size_t)h * hs;
			const uint8_t *nb = g0 ? NULL : h + 1 < heads ? k + hs : vb;
			uint32_t qh0 = h * G + g0;

			gb = block_heads(G - g0);
			switch (gb) {
			case 1: dec_scores(s, k, nb, n, qh0, nc, 1, dt); break;
			case 2: dec_scores(s, k, nb, n, qh0, nc, 2, dt); break;
			case 3: dec_scores(s, k, nb, n, qh0, nc, 3, dt); break;
			case 4: dec_scores(s, k, nb, n, qh0, nc, 4, dt); break;
			default: dec_scores(s, k, nb, n, qh0, nc, 8, dt); break;
			}
		}
	for (uint32_t h = 0; h < heads; h++)
		for (uint32_t g0 = 0, gb; g0 < G; g0 += gb) {
			const uint8_t *v = vb + (size_t)h * hs;
			const uint8_t *nb = g0 || h + 1 == heads ? NULL : v + hs;
			uint32_t qh0 = h * G + g0;

			gb = block_heads(G - g0);
			switch (gb) {
			case 1: dec_values(s, v, nb, n, qh0, nc, 1, dt); break;
			case 2: dec_values(s, v, nb, n, qh0, nc, 2, dt); break;
			case 3: dec_values(s, v, nb, n, qh0, nc, 3, dt); break;
			case 4: dec_values(s, v, nb, n, qh0, nc, 4, dt); break;
			default: dec_values(s, v, nb, n, qh0, nc, 8, dt); break;
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
		for (uint32_t e = 0; e < D; e++)
			s.qp[(size_t)h * D + reg_pos(e, dt)] =
				sp->q[(size_t)h * D + e] * sh->scale;
		s.m[h] = -INFINITY;
	}
	memset(s.acc, 0, (size_t)QH * D * sizeof(float));
	memset(s.lv, 0, (size_t)QH * 16 * sizeof(float));

	for (uint64_t t = sp->t0; t < sp->t1; t += TILE) {
		uint32_t n = sp->t1 - t < TILE ? (uint32_t)(sp->t1 - t) : TILE;
		uint64_t tp = t + pf_lead;
		uint32_t np = tp < sp->t1 ? (sp->t1 - tp < TILE ?
				(uint32_t)(sp->t1 - tp) : TILE) : 0;

		kva_walk_rows(w, t, n, s.off);
		kva_walk_rows(w, tp, np, s.off + TILE);
		s.npf = np;
		/* the common head_dims fully unrolled */
		switch (nc) {
		case 2: dec_tile(&s, kb0, vb0, hs, heads, G, n, 2, dt); break;
		case 4: dec_tile(&s, kb0, vb0, hs, heads, G, n, 4, dt); break;
		default: dec_tile(&s, kb0, vb0, hs, heads, G, n, nc, dt); break;
		}
	}

	for (uint32_t h = 0; h < QH; h++) {
		sp->m[h] = s.m[h];
		sp->l[h] = _mm512_reduce_add_ps(
			_mm512_load_ps(s.lv + (size_t)h * 16));
		for (uint32_t e = 0; e < D; e++)
			sp->acc[(size_t)h * D + e] =
				s.acc[(size_t)h * D + reg_pos(e, dt)];
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

static void avx512_decode(const struct kva_decode_span *sp)
{
	switch (sp->sh->dtype) {
	case FP8: kva_avx512_fp8_decode(sp); break;
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

static uint32_t pre_rows(const struct kva_attn_shape *sh)
{
	uint32_t r = kva_prefill_block_tokens(sh->group) * sh->group;

	return (r + 15) & ~15u;
}

static size_t pre_layout(const struct kva_attn_shape *sh, void *base,
			 struct pre_scratch *s)
{
	size_t RP = pre_rows(sh), D = sh->head_dim;
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

/* S^T[key][rows] for 8 keys from kb and rb row vectors from rv. */
AI void pre_scores(const struct pre_scratch *s, uint32_t D, uint32_t RP,
		   uint32_t kb, uint32_t rv, const uint32_t rb)
{
	__m512 a[2][8];

	UNROLL
	for (uint32_t r = 0; r < rb; r++)
		UNROLL
		for (uint32_t k = 0; k < 8; k++)
			a[r][k] = _mm512_setzero_ps();
	for (uint32_t d = 0; d < D; d++) {
		__m512 q[2];

		UNROLL
		for (uint32_t r = 0; r < rb; r++)
			q[r] = _mm512_load_ps(s->qt + (size_t)d * RP +
					      (rv + r) * 16);
		UNROLL
		for (uint32_t k = 0; k < 8; k++) {
			__m512 b = _mm512_set1_ps(s->kf[(size_t)(kb + k) * D + d]);

			UNROLL
			for (uint32_t r = 0; r < rb; r++)
				a[r][k] = _mm512_fmadd_ps(q[r], b, a[r][k]);
		}
	}
	UNROLL
	for (uint32_t r = 0; r < rb; r++)
		UNROLL
		for (uint32_t k = 0; k < 8; k++)
			_mm512_store_ps(s->st + (size_t)(kb + k) * RP +
					(rv + r) * 16, a[r][k]);
}

/* O[r0 .. r0 + rb)[d0 .. d0 + 16 nb) = alpha * O + P V over n keys. */
AI void pre_pv(const struct pre_scratch *s, uint32_t D, uint32_t RP,
	       uint32_t n, uint32_t r0, uint32_t d0, const uint32_t rb,
	       const uint32_t nb)
{
	__m512 A[4][4];

	UNROLL
	for (uint32_t r = 0; r < rb; r++) {
		__m512 al = _mm512_set1_ps(s->alpha[r0 + r]);

		UNROLL
		for (uint32_t b = 0; b < nb; b++)
			A[r][b] = _mm512_mul_ps(al, _mm512_load_ps(
				s->o + (size_t)(r0 + r) * D + d0 + b * 16));
	}
	for (uint32_t j = 0; j < n; j++) {
		__m512 v[4];

		UNROLL
		for (uint32_t b = 0; b < nb; b++)
			v[b] = _mm512_load_ps(s->vf + (size_t)j * D + d0 + b * 16);
		UNROLL
		for (uint32_t r = 0; r < rb; r++) {
			__m512 w = _mm512_set1_ps(s->st[(size_t)j * RP + r0 + r]);

			UNROLL
			for (uint32_t b = 0; b < nb; b++)
				A[r][b] = _mm512_fmadd_ps(w, v[b], A[r][b]);
		}
	}
	UNROLL
	for (uint32_t r = 0; r < rb; r++)
		UNROLL
		for (uint32_t b = 0; b < nb; b++)
			_mm512_store_ps(s->o + (size_t)(r0 + r) * D + d0 + b * 16,
					A[r][b]);
}

/* The tile's rows widened (times @f, an fp8 head's factor), 0 past n. */
AI void pre_widen(const uint8_t *blk, const struct kva_walk *w, uint64_t k0,
		  uint32_t n, uint32_t D, float f, float *dst, const int dt)
{
	for (uint32_t j = 0; j < KT; j++) {
		const uint8_t *row = blk + kva_walk_tok(w, k0 + j);

		for (uint32_t i = 0; i < D / 16; i++) {
			__m512 x = _mm512_setzero_ps();

			if (j < n)
				x = load16(row, i, dt);
			if (dt == FP8)
				x = _mm512_mul_ps(x, _mm512_set1_ps(f));
			_mm512_store_ps(dst + (size_t)j * D + i * 16, x);
		}
	}
}

AI void prefill_dt(const struct kva_prefill_block *b, const int dt)
{
	const struct kva_attn_shape *sh = b->sh;
	const struct kva_walk *w = &sh->walk;
	uint32_t D = sh->head_dim, G = sh->group, R = b->nq * G;
	uint32_t RP = (R + 15) & ~15u, nrv = RP / 16;
	size_t qstride = (size_t)sh->q_heads * D;
	const uint8_t *kb = b->base + w->kv_off[KVA_K] +
			    (uint64_t)b->kv_head * w->head_stride;
	const uint8_t *vb = b->base + w->kv_off[KVA_V] +
			    (uint64_t)b->kv_head * w->head_stride;
	uint64_t end = b->pos0 + b->nq;
	float kf = sh->kscale ? sh->kscale[b->kv_head] : 1.0f;
	float vf = sh->vscale ? sh->vscale[b->kv_head] : 1.0f;
	struct pre_scratch s;

	pre_layout(sh, b->scratch, &s);
	for (uint32_t r = 0; r < RP; r++) {
		const float *q = b->q + (r / G) * qstride +
				 (size_t)(b->kv_head * G + r % G) * D;

		for (uint32_t d = 0; d < D; d++)
			s.qt[(size_t)d * RP + r] = r < R ? q[d] * sh->scale : 0;
		/* padding rows see every key: finite, never written out */
		s.qi[r] = r < R ? (int32_t)(r / G) : INT32_MAX;
		s.m[r] = -INFINITY;
		s.l[r] = 0.0f;
	}
	memset(s.o, 0, (size_t)RP * D * sizeof(float));

	for (uint64_t k0 = 0; k0 < end; k0 += KT) {
		uint32_t n = end - k0 < KT ? (uint32_t)(end - k0) : KT;

		pre_widen(kb, w, k0, n, D, kf, s.kf, dt);
		pre_widen(vb, w, k0, n, D, vf, s.vf, dt);
		for (uint32_t kk = 0; kk < n; kk += 8) {
			uint32_t rv = 0;

			for (; rv + 2 <= nrv; rv += 2)
				pre_scores(&s, D, RP, kk, rv, 2);
			if (rv < nrv)
				pre_scores(&s, D, RP, kk, rv, 1);
		}
		/* causal mask: key k0 + j is seen by query token i when
		 * k0 + j <= pos0 + i; keys past n are padding */
		for (uint32_t j = 0; j < KT; j++) {
			int64_t need = (int64_t)(k0 + j) - (int64_t)b->pos0;

			if (j < n && need <= 0)
				continue;
			for (uint32_t rv = 0; rv < nrv; rv++) {
				__m512i qi = _mm512_load_si512(s.qi + rv * 16);
				__mmask16 hide = j >= n ? 0xffff :
					_mm512_cmplt_epi32_mask(qi,
						_mm512_set1_epi32((int32_t)need));
				float *st = s.st + (size_t)j * RP + rv * 16;

				_mm512_store_ps(st, _mm512_mask_mov_ps(
					_mm512_load_ps(st), hide,
					_mm512_set1_ps(-INFINITY)));
			}
		}
		/* online softmax, 16 rows per vector */
		for (uint32_t rv = 0; rv < nrv; rv++) {
			__m512 m = _mm512_load_ps(s.m + rv * 16), mx = m, al, sum;
			__m512 ninf = _mm512_set1_ps(-INFINITY);
			__mmask16 none;

			for (uint32_t j = 0; j < n; j++)
				mx = _mm512_max_ps(mx, _mm512_load_ps(
					s.st + (size_t)j * RP + rv * 16));
			none = _mm512_cmp_ps_mask(mx, ninf, _CMP_EQ_OQ);
			al = _mm512_mask_mov_ps(exp512(_mm512_sub_ps(m, mx)),
						none, _mm512_set1_ps(1.0f));
			al = _mm512_mask_mov_ps(al, _mm512_cmp_ps_mask(
					m, ninf, _CMP_EQ_OQ) & ~none,
					_mm512_setzero_ps());
			sum = _mm512_mul_ps(_mm512_load_ps(s.l + rv * 16), al);
			for (uint32_t j = 0; j < n; j++) {
				float *st = s.st + (size_t)j * RP + rv * 16;
				__m512 x = _mm512_load_ps(st);
				__mmask16 live = _mm512_cmp_ps_mask(
					x, ninf, _CMP_NEQ_OQ);
				__m512 p = _mm512_maskz_mov_ps(live, exp512(
					_mm512_sub_ps(x, mx)));

				_mm512_store_ps(st, p);
				sum = _mm512_add_ps(sum, p);
			}
			_mm512_store_ps(s.l + rv * 16, sum);
			_mm512_store_ps(s.m + rv * 16, mx);
			_mm512_store_ps(s.alpha + rv * 16, al);
		}
		for (uint32_t r0 = 0; r0 < R; r0 += 4) {
			uint32_t d0 = 0;

			if (R - r0 >= 4) {
				for (; d0 + 64 <= D; d0 += 64)
					pre_pv(&s, D, RP, n, r0, d0, 4, 4);
				for (; d0 < D; d0 += 16)
					pre_pv(&s, D, RP, n, r0, d0, 4, 1);
			} else {
				for (uint32_t r = r0; r < R; r++) {
					for (d0 = 0; d0 + 64 <= D; d0 += 64)
						pre_pv(&s, D, RP, n, r, d0, 1, 4);
					for (; d0 < D; d0 += 16)
						pre_pv(&s, D, RP, n, r, d0, 1, 1);
				}
			}
		}
	}

	for (uint32_t r = 0; r < R; r++) {
		struct kva_softmax st = { s.m[r], s.l[r] };
		__m512 norm = _mm512_set1_ps(kva_softmax_norm(&st));
		float *o = b->out + (r / G) * qstride +
			   (size_t)(b->kv_head * G + r % G) * D;

		for (uint32_t d = 0; d < D; d += 16)
			_mm512_storeu_ps(o + d, _mm512_mul_ps(norm, _mm512_load_ps(
				s.o + (size_t)r * D + d)));
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

static void avx512_prefill(const struct kva_prefill_block *b)
{
	switch (b->sh->dtype) {
	case FP8: prefill_e4m3(b); break;
	case FP32: prefill_f32(b); break;
	case FP16: prefill_f16(b); break;
	default:   prefill_b16(b); break;
	}
}

static size_t avx512_scratch(const struct kva_attn_shape *sh)
{
	size_t d = sh->dtype == FP8 ? kva_avx512_fp8_scratch_bytes(sh) :
				      dec_layout(sh, NULL, NULL);
	size_t p = pre_layout(sh, NULL, NULL);

	return d > p ? d : p;
}

/* fp8 needs VBMI and BF16 too (attn_avx512_fp8.c), else AVX2 runs it. */
static bool avx512_supports(const struct kva_attn_shape *sh)
{
	if (sh->dtype == FP8)
		return kva_avx512_fp8_supported(sh);
	return sh->head_dim % CHUNK == 0;
}

const struct kva_isa_ops kva_ops_avx512 = {
	.decode = avx512_decode,
	.prefill = avx512_prefill,
	.scratch_bytes = avx512_scratch,
	.supports = avx512_supports,
};
