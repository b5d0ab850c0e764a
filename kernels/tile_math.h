/* SPDX-License-Identifier: MIT */
/*
 * tile_math.h - the per-tile arithmetic of attention, shared by the CPU
 * kernels (C11) and the CUDA kernels (where every function is
 * __host__ __device__), so that the CPU tests exercise the very arithmetic
 * the GPU runs.
 *
 * Three things live here:
 *
 *  - element conversion between the cache dtypes (bf16, fp16, fp8 e4m3)
 *    and fp32.  Widening is exact.  Narrowing rounds to nearest, ties to
 *    even, as the hardware instructions do (F16C vcvtps2ph with imm 0,
 *    CUDA __float2half_rn / __float2bfloat16_rn, and for e4m3 the
 *    saturating cvt.rn.satfinite.e4m3x2.f32 of sm_89+); NaN stays NaN
 *    (quieted).  An fp8 element's scale is not applied here: the kernels
 *    fold it into q (K) and into the output (V).
 *
 *  - the online-softmax state of one query row (Milakov & Gimelshein,
 *    "Online normalizer calculation for softmax", 2018): the running max
 *    m of the scores seen so far and the sum l of exp(score - m).  Feeding
 *    a tile of scores rescales what was summed before by
 *    alpha = exp(m_old - m_new); the caller multiplies its output
 *    accumulator by the same alpha.
 *
 *  - the merge of two partial states over disjoint key ranges: the split-K
 *    reduction of flash-decoding, and of the CPU's split contexts.
 *
 * A key that is masked out (causal mask, padding lane) has score -INFINITY
 * and weight exactly 0.  A row that has seen no key at all has m = -INF,
 * l = 0 and, by the convention of this project, output 0.
 */
#ifndef KVA_TILE_MATH_H
#define KVA_TILE_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define KVA_TILE_FN static __host__ __device__ __forceinline__
#else
#define KVA_TILE_FN static inline
#endif

/* ---- bit casts ------------------------------------------------------ */

KVA_TILE_FN uint32_t kva_f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

KVA_TILE_FN float kva_bits_f32(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* ---- bf16 ----------------------------------------------------------- */

/** kva_bf16_to_f32() - exact: a bf16 is the top half of an fp32. */
KVA_TILE_FN float kva_bf16_to_f32(uint16_t h)
{
	return kva_bits_f32((uint32_t)h << 16);
}

/** kva_f32_to_bf16() - round to nearest even; NaN stays a quiet NaN. */
KVA_TILE_FN uint16_t kva_f32_to_bf16(float f)
{
	uint32_t x = kva_f32_bits(f);

	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x0040u);
	/* Adding 0x7fff plus the lowest kept bit rounds half to even; a carry
	 * out of the mantissa bumps the exponent, up to infinity. */
	return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* ---- fp16 (IEEE binary16) -------------------------------------------- */

/** kva_fp16_to_f32() - exact, subnormals, infinities and NaN included. */
KVA_TILE_FN float kva_fp16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu;
	uint32_t mant = h & 0x3ffu;

	if (exp == 0) {
		/* zero or subnormal: mant * 2^-24, exact in fp32 */
		float v = (float)mant * 5.9604644775390625e-8f;

		return sign ? -v : v;
	}
	if (exp == 31)
		return kva_bits_f32(sign | 0x7f800000u | (mant << 13));
	return kva_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

/**
 * kva_f32_to_fp16() - round to nearest even; values from 65520 up become
 * infinity, values below the smallest subnormal round to (signed) zero.
 */
KVA_TILE_FN uint16_t kva_f32_to_fp16(float f)
{
	uint32_t x = kva_f32_bits(f);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);

	x &= 0x7fffffffu;
	if (x > 0x7f800000u)			/* NaN */
		return (uint16_t)(sign | 0x7e00u | ((x >> 13) & 0x3ffu));
	if (x >= 0x477ff000u)			/* >= 65520: rounds to inf */
		return (uint16_t)(sign | 0x7c00u);
	if (x < 0x38800000u) {			/* below 2^-14: subnormal */
		uint32_t e = x >> 23;
		uint32_t mant = (x & 0x7fffffu) | 0x800000u;
		uint32_t shift = 126u - e;	/* value * 2^24 = mant >> shift */
		uint32_t r, rem, half;

		if (e == 0 || shift > 24)	/* below half the least subnormal */
			return sign;
		r = mant >> shift;
		rem = mant & ((1u << shift) - 1u);
		half = 1u << (shift - 1u);
		if (rem > half || (rem == half && (r & 1u)))
			r++;
		return (uint16_t)(sign | r);	/* r == 0x400 is 2^-14: right */
	}
	x -= 0x38000000u;			/* rebias: 127 - 15 = 112 */
	return (uint16_t)(sign | ((x + 0xfffu + ((x >> 13) & 1u)) >> 13));
}

/* ---- fp8 e4m3 (OCP "e4m3fn") ------------------------------------------ */

/*
 * S.EEEE.MMM, bias 7: normal values (1 + M/8) * 2^(E-7) for E = 1..15,
 * subnormal M * 2^-9 for E = 0, no infinities, S.1111.111 is NaN, so the
 * largest finite value is 1.75 * 2^8 = 448.
 */

/** kva_e4m3_to_f32() - exact, subnormals and NaN included. */
KVA_TILE_FN float kva_e4m3_to_f32(uint8_t c)
{
	uint32_t sign = (uint32_t)(c & 0x80u) << 24;
	uint32_t exp = (c >> 3) & 0xfu;
	uint32_t mant = c & 7u;

	if ((c & 0x7fu) == 0x7fu)
		return kva_bits_f32(sign | 0x7fc00000u);
	if (exp == 0) {
		float v = (float)mant * 0.001953125f;	/* 2^-9 */

		return sign ? -v : v;
	}
	return kva_bits_f32(sign | ((exp + 120u) << 23) | (mant << 20));
}

/**
 * kva_f32_to_e4m3() - round to nearest even, saturating: every finite or
 * infinite value of magnitude 448 and above becomes +-448 (0x7e), below
 * half the least subnormal (2^-10) (signed) zero; NaN becomes 0x7f.
 */
KVA_TILE_FN uint8_t kva_f32_to_e4m3(float f)
{
	uint32_t x = kva_f32_bits(f);
	uint8_t sign = (uint8_t)((x >> 24) & 0x80u);

	x &= 0x7fffffffu;
	if (x > 0x7f800000u)			/* NaN */
		return (uint8_t)(sign | 0x7fu);
	if (x >= 0x43e00000u)			/* >= 448, inf included */
		return (uint8_t)(sign | 0x7eu);
	if (x < 0x3c800000u) {			/* below 2^-6: subnormal */
		uint32_t e = x >> 23;
		uint32_t mant = (x & 0x7fffffu) | 0x800000u;
		uint32_t shift = 141u - e;	/* value * 2^9 = mant >> shift */
		uint32_t r, rem, half;

		if (e == 0 || shift > 24)	/* below half the least subnormal */
			return sign;
		r = mant >> shift;
		rem = mant & ((1u << shift) - 1u);
		half = 1u << (shift - 1u);
		if (rem > half || (rem == half && (r & 1u)))
			r++;
		return (uint8_t)(sign | r);	/* r == 8 is 2^-6: right */
	}
	x -= 0x3c000000u;			/* rebias: 127 - 7 = 120 */
	return (uint8_t)(sign | ((x + 0x7ffffu + ((x >> 20) & 1u)) >> 20));
}

/* ---- one cache element ----------------------------------------------- */

/**
 * kva_elem_to_f32() - element @i of a row stored as @dtype (enum
 * kva_dtype); for fp8 the code's value, before its scale.
 */
KVA_TILE_FN float kva_elem_to_f32(const void *row, uint32_t i, uint32_t dtype)
{
	if (dtype == 0)				/* KVA_DTYPE_FP32 */
		return ((const float *)row)[i];
	if (dtype == 1)				/* KVA_DTYPE_FP16 */
		return kva_fp16_to_f32(((const uint16_t *)row)[i]);
	if (dtype == 3)				/* KVA_DTYPE_FP8 */
		return kva_e4m3_to_f32(((const uint8_t *)row)[i]);
	return kva_bf16_to_f32(((const uint16_t *)row)[i]);
}

/**
 * kva_elem_from_f32() - store @v as element @i of a row of @dtype; for
 * fp8, @v is the value already divided by its scale.
 */
KVA_TILE_FN void kva_elem_from_f32(void *row, uint32_t i, uint32_t dtype,
				   float v)
{
	if (dtype == 0)
		((float *)row)[i] = v;
	else if (dtype == 1)
		((uint16_t *)row)[i] = kva_f32_to_fp16(v);
	else if (dtype == 3)
		((uint8_t *)row)[i] = kva_f32_to_e4m3(v);
	else
		((uint16_t *)row)[i] = kva_f32_to_bf16(v);
}

/* ---- online softmax ---------------------------------------------------- */

/**
 * struct kva_softmax - running state of one query row.
 * @m: the largest score admitted so far (-INFINITY before the first)
 * @l: sum of exp(score - m) over the admitted scores
 */
struct kva_softmax {
	float m;
	float l;
};

KVA_TILE_FN void kva_softmax_init(struct kva_softmax *s)
{
	s->m = -INFINITY;
	s->l = 0.0f;
}

/**
 * kva_softmax_rescale() - admit a tile whose largest score is @tile_max.
 *
 * Raises the running max and returns alpha = exp(m_old - m_new), the
 * factor by which l (done here) and the caller's output accumulator (the
 * caller's job) must be multiplied before this tile's weights are added.
 * While every score seen is masked (m stays -INF) alpha is 1.
 */
KVA_TILE_FN float kva_softmax_rescale(struct kva_softmax *s, float tile_max)
{
	float m = fmaxf(s->m, tile_max);
	float alpha;

	if (m == -INFINITY)
		return 1.0f;
	alpha = expf(s->m - m);		/* m_old == -INF gives exactly 0 */
	s->m = m;
	s->l *= alpha;
	return alpha;
}

/**
 * kva_softmax_weight() - exp(score - m) under the running max, 0 for a
 * masked score.  Call after kva_softmax_rescale() of the tile holding
 * @score; the caller adds the weight to l (kva_softmax_add) and weight *
 * value to its accumulator.
 */
KVA_TILE_FN float kva_softmax_weight(const struct kva_softmax *s, float score)
{
	return score == -INFINITY ? 0.0f : expf(score - s->m);
}

KVA_TILE_FN void kva_softmax_add(struct kva_softmax *s, float weight)
{
	s->l += weight;
}

/**
 * kva_softmax_merge() - fold the state @b of a disjoint key range into @a.
 *
 * Sets *@wa and *@wb to the factors by which the two unnormalised output
 * accumulators must be multiplied before they are added:
 *   acc = acc_a * wa + acc_b * wb.
 * An empty side (m == -INF) gets weight 0, so merging with an empty
 * partial leaves the other unchanged.
 */
KVA_TILE_FN void kva_softmax_merge(struct kva_softmax *a,
				   const struct kva_softmax *b,
				   float *wa, float *wb)
{
	float m = fmaxf(a->m, b->m);

	if (m == -INFINITY) {
		*wa = 0.0f;
		*wb = 0.0f;
		return;
	}
	*wa = a->m == -INFINITY ? 0.0f : expf(a->m - m);
	*wb = b->m == -INFINITY ? 0.0f : expf(b->m - m);
	a->l = a->l * *wa + b->l * *wb;
	a->m = m;
}

/**
 * kva_softmax_combine_weight() - the factor on a partial of running max
 * @m when partials are combined at once under their common max @max
 * (the largest m of them): exp(m - max), 0 for an empty partial.  The sum
 * of l * weight over the partials is the combined l; the CUDA decode's
 * split-K combine sums acc * weight the same way.
 */
KVA_TILE_FN float kva_softmax_combine_weight(float m, float max)
{
	return m == -INFINITY ? 0.0f : expf(m - max);
}

/**
 * kva_softmax_norm() - factor that turns the accumulator into the output:
 * 1 / l, or 0 for a row that saw no key.
 */
KVA_TILE_FN float kva_softmax_norm(const struct kva_softmax *s)
{
	return s->l > 0.0f ? 1.0f / s->l : 0.0f;
}

#endif /* KVA_TILE_MATH_H */
