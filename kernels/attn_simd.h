/* SPDX-License-Identifier: MIT */
/*
 * attn_simd.h - the CPU decode and prefill algorithms, written once over a
 * small vector abstraction and compiled per ISA.  attn_avx2.c (8 lanes)
 * and attn_avx512.c (16 lanes) each define the vector types, the
 * primitives and the tuning below, then include this file, which defines
 * the kernels and simd_decode(), simd_prefill(), simd_scratch() and
 * simd_supports() for the ISA's struct kva_isa_ops.  A fix to an
 * algorithm so lands in every ISA at once; what an ISA file holds is what
 * really differs between them: instructions, register budgets, prefetch.
 *
 * What an ISA file defines before including this one:
 *
 *   macros   AI (always_inline), UNROLL (a loop over a register block)
 *   types    vf (VW floats), vi (VW 32-bit ints), vm (a lane mask)
 *   VW       lanes per vector; TILE, decode tokens per tile, is VW
 *   tuning   GB: query heads per decode register block (4 or 8; blocks
 *            of 4 and of 1-3 cover the rest of a group)
 *            PF_TILES: decode tiles prefetched ahead; PF_FAR_HINT: the
 *            hint of that prefetch; PF_NEAR: whether the next head's
 *            block of this tile is brought into L1 as well
 *            PS_KEYS: keys per prefill score block; PV_NB: vectors of
 *            head_dim per row of a prefill P.V block
 *   floats   v_zero v_set1 v_load v_loadu v_store v_storeu v_add v_sub v_mul v_max
 *            v_fma (a * b + c) v_exp v_tree (lane j = sum of v[j]'s lanes,
 *            over VW vectors) v_hmax v_hsum v_cast (vi bits as vf)
 *   masks    m_below(n) (lanes < n) m_eq m_neq (ordered compares of vf)
 *            m_lt_i (vi a < vi b) m_eqi (vi a == vi b) m_andnot (~a & b)
 *            m_all v_sel(m, a, b) (m ? a : b) v_keep(m, a) (m ? a : 0)
 *   ints     vi_set1 vi_load vi_slli(x, bits) vi_and
 *   loads    ld_w32(p): VW 32-bit lanes as they lie (a bf16 chunk)
 *            ld_i8x2(p): 2 VW bytes sign-extended, one per 16-bit half
 *            ld_i8(p): VW bytes sign-extended to 32 bits
 *            ld_u16(p): VW 16-bit words zero-extended to 32 bits
 *            ld_f16(p): VW fp16 values widened
 *            nan_any(p, bytes): whether bytes at p (a multiple of 16)
 *            hold an e4m3 NaN code (0x7f or 0xff)
 *
 * Decode (memory bound: every K/V byte is used once per query head of the
 * group).  A span walks its tokens in tiles of VW and, within a tile,
 * every KV head in turn, so it reads each frame's slice of the layer front
 * to back.  A head's K rows of one frame are one 4 KiB run, and the
 * hardware prefetchers stop at page ends, so the kernel prefetches every
 * line of the rows of a later tile itself (into L2 on AVX-512, whose
 * tile's slice is larger than L1) and, where PF_NEAR, the next head's
 * block of this tile from L2 into L1.  Per tile and head:
 *
 *  - scores: each K row is widened in chunks of 2 VW elements and
 *    multiplied into one accumulator per query head; the VW rows'
 *    accumulators are then summed across lanes by one transpose-add tree
 *    (v_tree), which leaves the tile's scores in one vector in token
 *    order.
 *  - softmax: running max per query head, exp of the VW scores at once,
 *    the row sum l kept as VW lanes until the span ends.
 *  - values: the accumulator (head_dim floats per query head) is updated
 *    a chunk at a time for up to GB query heads, so that each V chunk is
 *    widened once and used by the whole group.
 *
 * bf16 and fp8 are widened by shifts: a 32-bit lane holding elements 2i
 * and 2i + 1 gives element 2i from its low half and 2i + 1 from its high
 * half.  The chunk's two vectors so hold the even and the odd elements; q
 * is stored permuted the same way (reg_pos()) and the accumulator is
 * un-permuted at the end, which costs nothing per token.  e4m3 is exact:
 * the code's bits placed at the top of an fp32 (sign at bit 31, exponent
 * and mantissa at bits 20-26) make the value times 2^-120, subnormals
 * included, multiplied back by one v_mul; the NaN codes, which would read
 * as 480, are made NaN, except in tiles nan_any() found none in (FP8N).
 * An fp8 head's K scale is folded into q, its V scale into the output.
 *
 * Prefill (compute bound).  A block of up to 64 query rows (query tokens x
 * the group's heads) against tiles of 32 keys: the scores are computed
 * transposed, S^T[key][row], from q^T (transposed once per block) and the
 * widened K rows, so that a vector holds VW rows and the online softmax is
 * vertical, with no horizontal sums; then O[row][:] += P V with the
 * weights broadcast from S^T.
 */
#ifndef KVA_ATTN_SIMD_H
#define KVA_ATTN_SIMD_H

#include <math.h>
#include <string.h>

#include "attn_internal.h"
#include "tile_math.h"

#if TILE != VW
#error "a decode tile is one score vector: TILE must be VW"
#endif
#define CHUNK	(2 * VW)	/* decode: elements widened per step */
#define KT	32u		/* prefill: keys per tile */

/* FP8N: fp8 rows known to hold no NaN code (the decode checks each tile) */
enum { FP32 = KVA_DTYPE_FP32, FP16 = KVA_DTYPE_FP16, BF16 = KVA_DTYPE_BF16,
       FP8 = KVA_DTYPE_FP8, FP8N = 16 };

/* ---- widening --------------------------------------------------------- */

/*
 * e4m3 in bits 0-7 of each 32-bit lane (sign-extended; or in bits 16-23
 * when @odd), widened exactly; see the comment at the top.
 */
AI vf e4m3_lanes(vi x, int odd, int dt)
{
	vi v = vi_and(vi_slli(x, odd ? 4 : 20), vi_set1((int)0x87f00000u));
	vf f = v_mul(v_cast(v), v_set1(0x1p120f));

	if (dt == FP8N)
		return f;
	return v_sel(m_eqi(vi_and(v, vi_set1(0x7ff00000)),
			   vi_set1(0x07f00000)), v_set1(NAN), f);
}

/* Chunk c (2 VW elements) of a row, widened, in register order. */
AI void load_chunk(const uint8_t *row, uint32_t c, int dt, vf *lo, vf *hi)
{
	if (dt == FP8 || dt == FP8N) {
		vi x = ld_i8x2(row + c * CHUNK);

		*lo = e4m3_lanes(x, 0, dt);
		*hi = e4m3_lanes(x, 1, dt);
	} else if (dt == FP32) {
		*lo = v_loadu(row + c * CHUNK * 4);
		*hi = v_loadu(row + c * CHUNK * 4 + VW * 4);
	} else if (dt == FP16) {
		*lo = ld_f16(row + c * CHUNK * 2);
		*hi = ld_f16(row + c * CHUNK * 2 + VW * 2);
	} else {
		vi x = ld_w32(row + c * CHUNK * 2);

		*lo = v_cast(vi_slli(x, 16));
		*hi = v_cast(vi_and(x, vi_set1((int)0xffff0000u)));
	}
}

/* Register position of element e of a row, for dtype dt. */
static inline uint32_t reg_pos(uint32_t e, int dt)
{
	uint32_t c = e / CHUNK * CHUNK, i = e % CHUNK;

	if (dt != BF16 && dt != FP8 && dt != FP8N)
		return e;
	return c + (i & 1) * VW + i / 2;
}

/* VW elements from @row + VW * i, widened, in natural order. */
AI vf load_w(const uint8_t *row, uint32_t i, int dt)
{
	if (dt == FP8 || dt == FP8N)
		return e4m3_lanes(ld_i8(row + i * VW), 0, dt);
	if (dt == FP32)
		return v_loadu(row + i * VW * 4);
	if (dt == FP16)
		return ld_f16(row + i * VW * 2);
	return v_cast(vi_slli(ld_u16(row + i * VW * 2), 16));
}

/*
 * Every line of a row: the hardware prefetchers stop at page ends, and
 * every head's block of a frame is its own page or two.  One row is
 * prefetched per row worked on, which keeps the misses spread out rather
 * than in bursts that fill the line-fill buffers.  On AVX-512, measured
 * on the 8k-token decode against T0 alone: 0.64 -> 0.68 of the read
 * bandwidth for T2, -> 0.70 with the L1 step as well.
 */
static inline void prefetch_far(const uint8_t *p, uint32_t bytes)
{
	for (uint32_t o = 0; o < bytes; o += 64)
		_mm_prefetch((const char *)p + o, PF_FAR_HINT);
}

static inline void prefetch_near(const uint8_t *p, uint32_t bytes)
{
	for (uint32_t o = 0; o < bytes; o += 64)
		_mm_prefetch((const char *)p + o, _MM_HINT_T0);
}

/* ---- decode ------------------------------------------------------------ */

struct dec_scratch {
	vf *sp;			/* [GB][VW] score partials */
	float *qp;		/* [q_heads][D] scale * q, register order */
	float *acc;		/* [q_heads][D] register order */
	float *lv;		/* [q_heads][VW] l, by lane */
	float *m;		/* [q_heads] */
	float *pw;		/* [q_heads][VW] weights of the tile */
	float *alpha;		/* [q_heads] rescale of the tile */
	uint64_t *off;		/* [2][TILE] row offsets: this tile, the
				 * one prefetched */
	uint32_t npf;		/* rows of the tile prefetched */
	uint32_t row_bytes;
};

#define PLACE(field, bytes) \
	do { if (s) s->field = (void *)(p + o); o += kva_align64(bytes); } \
	while (0)

static size_t dec_layout(const struct kva_attn_shape *sh, void *base,
			 struct dec_scratch *s)
{
	size_t qd = (size_t)sh->q_heads * sh->head_dim * sizeof(float);
	uint8_t *p = base;
	size_t o = 0;

	PLACE(sp, GB * VW * sizeof(vf));
	PLACE(qp, qd);
	PLACE(acc, qd);
	PLACE(lv, (size_t)sh->q_heads * VW * sizeof(float));
	PLACE(m, sh->q_heads * sizeof(float));
	PLACE(pw, (size_t)sh->q_heads * VW * sizeof(float));
	PLACE(alpha, sh->q_heads * sizeof(float));
	PLACE(off, 2 * TILE * sizeof(uint64_t));
	return o;
}

/*
 * Scores of one tile of n tokens (row offsets off[]) in the K block kb for
 * gb query heads from qh0, and their online-softmax update: leaves the
 * weights in pw[qh][VW] and the rescale factors in alpha[qh].  nb, if not
 * NULL, is the block to bring into L1 meanwhile.
 */
AI void dec_scores(const struct dec_scratch *s, const uint8_t *kb,
		   const uint8_t *nb, uint32_t n, uint32_t qh0,
		   const uint32_t nc, const uint32_t gb, const int dt)
{
	const uint32_t D = nc * CHUNK;
	vm valid = m_below(n);

	for (uint32_t j = 0; j < TILE; j++) {
		vf a[GB];

		UNROLL
		for (uint32_t g = 0; g < gb; g++)
			a[g] = v_zero();
		if (j < s->npf)
			prefetch_far(kb + s->off[TILE + j], s->row_bytes);
		if (PF_NEAR && nb && j < n)
			prefetch_near(nb + s->off[j], s->row_bytes);
		if (j < n) {
			const uint8_t *row = kb + s->off[j];

			UNROLL
			for (uint32_t c = 0; c < nc; c++) {
				vf lo, hi;

				load_chunk(row, c, dt, &lo, &hi);
				UNROLL
				for (uint32_t g = 0; g < gb; g++) {
					const float *q = s->qp +
						(size_t)(qh0 + g) * D + c * CHUNK;

					a[g] = v_fma(lo, v_load(q), a[g]);
					a[g] = v_fma(hi, v_load(q + VW), a[g]);
				}
			}
		}
		UNROLL
		for (uint32_t g = 0; g < gb; g++)
			s->sp[g * VW + j] = a[g];
	}

	UNROLL
	for (uint32_t g = 0; g < gb; g++) {
		uint32_t qh = qh0 + g;
		vf sc = v_sel(valid, v_tree(&s->sp[g * VW]),
			      v_set1(-INFINITY));
		float tmax = v_hmax(sc), alpha = 1.0f;
		vf lv = v_load(s->lv + (size_t)qh * VW), p;

		if (tmax > s->m[qh]) {
			alpha = expf(s->m[qh] - tmax);
			s->m[qh] = tmax;
			lv = v_mul(lv, v_set1(alpha));
		}
		p = v_keep(valid, v_exp(v_sub(sc, v_set1(s->m[qh]))));
		v_store(s->lv + (size_t)qh * VW, v_add(lv, p));
		v_store(s->pw + (size_t)qh * VW, p);
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
		vf A[GB][2];

		UNROLL
		for (uint32_t g = 0; g < gb; g++) {
			float *acc = s->acc + (size_t)(qh0 + g) * D + c * CHUNK;
			vf al = v_set1(s->alpha[qh0 + g]);

			A[g][0] = v_mul(v_load(acc), al);
			A[g][1] = v_mul(v_load(acc + VW), al);
		}
		for (uint32_t j = 0; j < n; j++) {
			vf lo, hi;

			if (c == 0 && j < s->npf)
				prefetch_far(vb + s->off[TILE + j],
					     s->row_bytes);
			if (PF_NEAR && nb && c == nc / 2)
				prefetch_near(nb + s->off[j], s->row_bytes);
			load_chunk(vb + s->off[j], c, dt, &lo, &hi);
			UNROLL
			for (uint32_t g = 0; g < gb; g++) {
				vf w = v_set1(s->pw[(size_t)(qh0 + g) * VW + j]);

				A[g][0] = v_fma(w, lo, A[g][0]);
				A[g][1] = v_fma(w, hi, A[g][1]);
			}
		}
		UNROLL
		for (uint32_t g = 0; g < gb; g++) {
			float *acc = s->acc + (size_t)(qh0 + g) * D + c * CHUNK;

			v_store(acc, A[g][0]);
			v_store(acc + VW, A[g][1]);
		}
	}
}

/*
 * Query heads in the next register block, out of @left: GB, 4, or what is
 * left below 4, so that at most five block sizes cover every group.
 */
static inline uint32_t block_heads(uint32_t left)
{
	return left >= GB ? GB : left >= 4 ? 4 : left;
}

/* The K (@values false) or V block of one head, for every head block. */
AI void dec_head(const struct dec_scratch *s, const uint8_t *b,
		 const uint8_t *nb, uint32_t n, uint32_t qh0, uint32_t G,
		 const uint32_t nc, const bool values, const int dt)
{
	for (uint32_t g0 = 0, gb; g0 < G; g0 += gb, nb = NULL) {
		gb = block_heads(G - g0);
#define DEC_BLOCK(w) \
	(values ? dec_values(s, b, nb, n, qh0 + g0, nc, w, dt) : \
		  dec_scores(s, b, nb, n, qh0 + g0, nc, w, dt))
		switch (gb) {
		case 1: DEC_BLOCK(1); break;
		case 2: DEC_BLOCK(2); break;
		case 3: DEC_BLOCK(3); break;
		case 4: DEC_BLOCK(4); break;
		default: DEC_BLOCK(GB); break;
		}
#undef DEC_BLOCK
	}
}

/* One head's K or V block: fp8 without the NaN check where it has none. */
AI void dec_block(const struct dec_scratch *s, const uint8_t *b,
		  const uint8_t *nb, uint32_t n, uint32_t qh0, uint32_t G,
		  const uint32_t nc, const bool values, const int dt)
{
	bool fast = dt == FP8;

	for (uint32_t j = 0; fast && j < n; j++)
		fast = !nan_any(b + s->off[j], s->row_bytes);
	if (fast)
		dec_head(s, b, nb, n, qh0, G, nc, values, FP8N);
	else
		dec_head(s, b, nb, n, qh0, G, nc, values, dt);
}

/*
 * One tile of every head: first the scores of all heads, walking the
 * frame's K blocks in address order, then the values, walking its V
 * blocks in address order, so that the tile's slice of the frame is read
 * front to back.  The first register block of each head brings the next
 * block in that order (the last K block's is V head 0's) into L1.  (Two
 * loops, not one over K and V: with the kind a variable, the fp16 decode
 * ran 15% slower.)
 */
AI void dec_tile(const struct dec_scratch *s, const uint8_t *kb,
		 const uint8_t *vb, uint32_t hs, uint32_t heads, uint32_t G,
		 uint32_t n, const uint32_t nc, const int dt)
{
	for (uint32_t h = 0; h < heads; h++)
		dec_block(s, kb + (size_t)h * hs, h + 1 < heads ?
			  kb + (size_t)(h + 1) * hs : vb, n, h * G, G, nc,
			  false, dt);
	for (uint32_t h = 0; h < heads; h++)
		dec_block(s, vb + (size_t)h * hs, h + 1 < heads ?
			  vb + (size_t)(h + 1) * hs : NULL, n, h * G, G, nc,
			  true, dt);
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
	memset(s.lv, 0, (size_t)QH * VW * sizeof(float));

	for (uint64_t t = sp->t0; t < sp->t1; t += TILE) {
		uint32_t n = kva_walk_tile(w, t, sp->t1, TILE, pf_lead, s.off,
					   &s.npf);

		/* head_dim 64 and 128 fully unrolled */
		switch (D) {
		case 64: dec_tile(&s, kb0, vb0, hs, heads, G, n, 64 / CHUNK, dt);
			break;
		case 128: dec_tile(&s, kb0, vb0, hs, heads, G, n, 128 / CHUNK, dt);
			break;
		default: dec_tile(&s, kb0, vb0, hs, heads, G, n, nc, dt);
			break;
		}
	}

	for (uint32_t h = 0; h < QH; h++) {
		float f = sh->vscale ? sh->vscale[h / G] : 1.0f;

		sp->m[h] = s.m[h];
		sp->l[h] = v_hsum(v_load(s.lv + (size_t)h * VW));
		for (uint32_t e = 0; e < D; e++)
			sp->acc[(size_t)h * D + e] =
				s.acc[(size_t)h * D + reg_pos(e, dt)] * f;
	}
}

/*
 * One function per dtype (each is large enough on its own), and the
 * switch between them: simd_decode() and simd_prefill().
 */
#define NOINLINE static __attribute__((noinline))
#define PER_DTYPE(fn, arg_t)						\
	NOINLINE void fn##_f32(const arg_t *a) { fn##_dt(a, FP32); }	\
	NOINLINE void fn##_f16(const arg_t *a) { fn##_dt(a, FP16); }	\
	NOINLINE void fn##_b16(const arg_t *a) { fn##_dt(a, BF16); }	\
	NOINLINE void fn##_e4m3(const arg_t *a) { fn##_dt(a, FP8); }	\
	static void simd_##fn(const arg_t *a)				\
	{								\
		switch (a->sh->dtype) {					\
		case FP8: fn##_e4m3(a); break;				\
		case FP32: fn##_f32(a); break;				\
		case FP16: fn##_f16(a); break;				\
		default:   fn##_b16(a); break;				\
		}							\
	}

PER_DTYPE(decode, struct kva_decode_span)

/* ---- prefill ------------------------------------------------------------ */

struct pre_scratch {
	float *qt;		/* [D][RP] scale * q, transposed */
	float *kt, *vt;		/* [KT][D] the tile, widened */
	float *st;		/* [KT][RP] scores, then weights */
	float *o;		/* [RP][D] */
	float *m, *l, *alpha;	/* [RP] */
	int32_t *qi;		/* [RP] query token of each row */
};

/* Rows of a block, padded to whole vectors. */
static inline uint32_t pre_pad(uint32_t rows)
{
	return (rows + VW - 1) / VW * VW;
}

static size_t pre_layout(const struct kva_attn_shape *sh, void *base,
			 struct pre_scratch *s)
{
	size_t RP = pre_pad(kva_prefill_block_tokens(sh->group) * sh->group);
	size_t D = sh->head_dim;
	uint8_t *p = base;
	size_t o = 0;

	PLACE(qt, D * RP * sizeof(float));
	PLACE(kt, KT * D * sizeof(float));
	PLACE(vt, KT * D * sizeof(float));
	PLACE(st, KT * RP * sizeof(float));
	PLACE(o, RP * D * sizeof(float));
	PLACE(m, RP * sizeof(float));
	PLACE(l, RP * sizeof(float));
	PLACE(alpha, RP * sizeof(float));
	PLACE(qi, RP * sizeof(int32_t));
	return o;
}
#undef PLACE

/* S^T[key][rows] for PS_KEYS keys from kb and rb row vectors from rv. */
AI void pre_scores(const struct pre_scratch *s, uint32_t D, uint32_t RP,
		   uint32_t kb, uint32_t rv, const uint32_t rb)
{
	vf a[2][PS_KEYS];

	UNROLL
	for (uint32_t r = 0; r < rb; r++)
		UNROLL
		for (uint32_t k = 0; k < PS_KEYS; k++)
			a[r][k] = v_zero();
	for (uint32_t d = 0; d < D; d++) {
		vf q[2];

		UNROLL
		for (uint32_t r = 0; r < rb; r++)
			q[r] = v_load(s->qt + (size_t)d * RP + (rv + r) * VW);
		UNROLL
		for (uint32_t k = 0; k < PS_KEYS; k++) {
			vf b = v_set1(s->kt[(size_t)(kb + k) * D + d]);

			UNROLL
			for (uint32_t r = 0; r < rb; r++)
				a[r][k] = v_fma(q[r], b, a[r][k]);
		}
	}
	UNROLL
	for (uint32_t r = 0; r < rb; r++)
		UNROLL
		for (uint32_t k = 0; k < PS_KEYS; k++)
			v_store(s->st + (size_t)(kb + k) * RP + (rv + r) * VW,
				a[r][k]);
}

/* O[r0 .. r0 + rb)[d0 .. d0 + VW nb) = alpha * O + P V over n keys. */
AI void pre_pv(const struct pre_scratch *s, uint32_t D, uint32_t RP,
	       uint32_t n, uint32_t r0, uint32_t d0, const uint32_t rb,
	       const uint32_t nb)
{
	vf A[4][PV_NB];

	UNROLL
	for (uint32_t r = 0; r < rb; r++) {
		vf al = v_set1(s->alpha[r0 + r]);

		UNROLL
		for (uint32_t b = 0; b < nb; b++)
			A[r][b] = v_mul(al, v_load(s->o + (size_t)(r0 + r) * D +
						   d0 + b * VW));
	}
	for (uint32_t j = 0; j < n; j++) {
		vf v[PV_NB];

		UNROLL
		for (uint32_t b = 0; b < nb; b++)
			v[b] = v_load(s->vt + (size_t)j * D + d0 + b * VW);
		UNROLL
		for (uint32_t r = 0; r < rb; r++) {
			vf w = v_set1(s->st[(size_t)j * RP + r0 + r]);

			UNROLL
			for (uint32_t b = 0; b < nb; b++)
				A[r][b] = v_fma(w, v[b], A[r][b]);
		}
	}
	UNROLL
	for (uint32_t r = 0; r < rb; r++)
		UNROLL
		for (uint32_t b = 0; b < nb; b++)
			v_store(s->o + (size_t)(r0 + r) * D + d0 + b * VW,
				A[r][b]);
}

/* P V for rb rows from r0 over the whole head_dim. */
AI void pre_pv_rows(const struct pre_scratch *s, uint32_t D, uint32_t RP,
		    uint32_t n, uint32_t r0, const uint32_t rb)
{
	uint32_t d0 = 0;

	for (; d0 + PV_NB * VW <= D; d0 += PV_NB * VW)
		pre_pv(s, D, RP, n, r0, d0, rb, PV_NB);
	for (; d0 < D; d0 += VW)
		pre_pv(s, D, RP, n, r0, d0, rb, 1);
}

/* The tile's rows widened (times @f, an fp8 head's factor), 0 past n. */
AI void pre_widen(const uint8_t *blk, const struct kva_walk *w, uint64_t k0,
		  uint32_t n, uint32_t D, float f, float *dst, const int dt)
{
	for (uint32_t j = 0; j < KT; j++) {
		const uint8_t *row = blk + kva_walk_tok(w, k0 + j);

		for (uint32_t i = 0; i < D / VW; i++) {
			vf x = v_zero();

			if (j < n)
				x = load_w(row, i, dt);
			if (dt == FP8)
				x = v_mul(x, v_set1(f));
			v_store(dst + (size_t)j * D + i * VW, x);
		}
	}
}

/*
 * The online softmax of one tile, VW rows per vector: a row that has seen
 * no key keeps m = -INF, l = 0 and alpha 1; a row seeing its first keys
 * gets alpha 0 (its accumulator is 0 anyway).  Leaves the weights in S^T.
 */
AI void pre_softmax(const struct pre_scratch *s, uint32_t RP, uint32_t n)
{
	const vf ninf = v_set1(-INFINITY);

	for (uint32_t rv = 0; rv < RP / VW; rv++) {
		vf m = v_load(s->m + rv * VW), mx = m, al, sum;
		vm none;

		for (uint32_t j = 0; j < n; j++)
			mx = v_max(mx, v_load(s->st + (size_t)j * RP + rv * VW));
		none = m_eq(mx, ninf);
		al = v_sel(none, v_set1(1.0f), v_exp(v_sub(m, mx)));
		al = v_sel(m_andnot(none, m_eq(m, ninf)), v_zero(), al);
		sum = v_mul(v_load(s->l + rv * VW), al);
		for (uint32_t j = 0; j < n; j++) {
			float *st = s->st + (size_t)j * RP + rv * VW;
			vf x = v_load(st);
			vf p = v_keep(m_neq(x, ninf), v_exp(v_sub(x, mx)));

			v_store(st, p);
			sum = v_add(sum, p);
		}
		v_store(s->l + rv * VW, sum);
		v_store(s->m + rv * VW, mx);
		v_store(s->alpha + rv * VW, al);
	}
}

AI void prefill_dt(const struct kva_prefill_block *b, const int dt)
{
	const struct kva_attn_shape *sh = b->sh;
	const struct kva_walk *w = &sh->walk;
	uint32_t D = sh->head_dim, G = sh->group, R = b->nq * G;
	uint32_t RP = pre_pad(R), nrv = RP / VW;
	size_t qstride = (size_t)sh->q_heads * D;
	const uint8_t *kb = b->base + w->kv_off[KVA_K] +
			    (uint64_t)b->kv_head * w->head_stride;
	const uint8_t *vb = b->base + w->kv_off[KVA_V] +
			    (uint64_t)b->kv_head * w->head_stride;
	uint64_t end = b->pos0 + b->nq;
	float kf = sh->kscale ? sh->kscale[b->kv_head] : 1.0f;
	float vfac = sh->vscale ? sh->vscale[b->kv_head] : 1.0f;
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

		pre_widen(kb, w, k0, n, D, kf, s.kt, dt);
		pre_widen(vb, w, k0, n, D, vfac, s.vt, dt);
		for (uint32_t kk = 0; kk < n; kk += PS_KEYS) {
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
				vm hide = j >= n ? m_all() :
					m_lt_i(vi_load(s.qi + rv * VW),
					       vi_set1((int32_t)need));
				float *st = s.st + (size_t)j * RP + rv * VW;

				v_store(st, v_sel(hide, v_set1(-INFINITY),
						  v_load(st)));
			}
		}
		pre_softmax(&s, RP, n);
		for (uint32_t r0 = 0; r0 < R; r0 += 4) {
			switch (R - r0) {
			case 1: pre_pv_rows(&s, D, RP, n, r0, 1); break;
			case 2: pre_pv_rows(&s, D, RP, n, r0, 2); break;
			case 3: pre_pv_rows(&s, D, RP, n, r0, 3); break;
			default: pre_pv_rows(&s, D, RP, n, r0, 4); break;
			}
		}
	}

	for (uint32_t r = 0; r < R; r++) {
		struct kva_softmax st = { s.m[r], s.l[r] };
		vf norm = v_set1(kva_softmax_norm(&st));
		float *o = b->out + (r / G) * qstride +
			   (size_t)(b->kv_head * G + r % G) * D;

		for (uint32_t d = 0; d < D; d += VW)
			v_storeu(o + d, v_mul(norm,
					      v_load(s.o + (size_t)r * D + d)));
	}
}

PER_DTYPE(prefill, struct kva_prefill_block)

static size_t simd_scratch(const struct kva_attn_shape *sh)
{
	size_t d = dec_layout(sh, NULL, NULL), p = pre_layout(sh, NULL, NULL);

	return d > p ? d : p;
}

static bool simd_supports(const struct kva_attn_shape *sh)
{
	return sh->head_dim % CHUNK == 0;
}

#endif /* KVA_ATTN_SIMD_H */
