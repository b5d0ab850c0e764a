// SPDX-License-Identifier: MIT
/*
 * test_attn.c - every CPU kernel against the reference, on many shapes,
 * and the pieces they are built from (conversions, the online softmax,
 * the layout walk, the write side).  Output is KTAP.
 *
 *   test_attn [--isa scalar|avx2|avx512]... [--quick] [--list]
 *
 * Without --isa every ISA this CPU supports is tested.  --quick drops the
 * long (>= 8k token) cases, for the sanitizer build.
 *
 * Tolerances.  The reference computes in double; the kernels in fp32.
 * Both widen K and V exactly, so the cache dtype does not change how far
 * apart they may be: what differs is the fp32 rounding of the dot
 * products, of exp() and of the sums over up to ~8k keys.  With q, K, V
 * uniform in [-1, 1) (so |out| < 1) the bound asserted, absolute, is
 * tol_for() below: 2e-5 for the CPU kernels, for every dtype.  The
 * sharp-softmax cases (K scaled by 8, scores up to ~+-90) keep the same
 * bound: the running max keeps every exp() argument <= 0.
 *
 * The one exception is the AVX-512 dot-product decode of fp8 and bf16
 * caches, which rounds q and the softmax weights to bf16 for vdpbf16ps
 * (attn_avx512_dp.c): its bound is DP_TOL, derived there and measured
 * here.  fp8 against an fp32 cache
 * of the same values (what quantising costs) is fp8_vs_fp32_*, with the
 * bounds of Documentation/kernels.rst.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_internal.h"
#include "decode_split.h"
#include "fixture.h"
#include "tile_math.h"

static int nr_tests, nr_failed;
static bool quick;
static bool isa_on[KVA_ISA_COUNT];

static void report(bool ok, const char *fmt, ...)
{
	va_list ap;

	nr_tests++;
	if (!ok)
		nr_failed++;
	printf("%s %d ", ok ? "ok" : "not ok", nr_tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/*
 * AVX-512 dot-product decode (fp8, bf16): q and each weight p rounded to bf16, relative error
 * 2^-9 each.  The weights' error moves the output by at most 2^-9 of a
 * convex combination of V (|V| < 1 here, or 8 for the sharp cases' K,
 * which only scales the scores), the scores' error e moves the weights by
 * a factor within e^(+-2e); with |q|, |K| < 1 and scale 1/sqrt(D), the
 * sum of |q K| over D elements is below sqrt(D), so e <= 2^-9 sqrt(D) =
 * 0.022 for D = 128 (0.18 for the sharp cases' K times 8) at worst, and
 * in fact a random walk of 2^-9 |q K| terms: measured below 1e-3.  The
 * bound asserted is 6e-3.
 */
#define DP_TOL 6e-3f

/* Whether @isa runs the dot-product decode of @dt for head_dim @D. */
static bool dp_decode(enum kva_isa isa, enum kva_dtype dt, uint32_t D)
{
	return isa == KVA_ISA_AVX512 && D % 64 == 0 &&
	       (dt == KVA_DTYPE_FP8 || dt == KVA_DTYPE_BF16) &&
	       __builtin_cpu_supports("avx512vbmi") &&
	       __builtin_cpu_supports("avx512bf16");
}

static float tol_for(enum kva_dtype dt, enum kva_isa isa, uint32_t D,
		     bool decode)
{
	if (decode && dp_decode(isa, dt, D))
		return DP_TOL;
	return 2e-5f;
}

/* Largest |a - b|; NaN anywhere counts as infinitely far. */
static float max_err(const float *a, const float *b, size_t n)
{
	float e = 0.0f;

	for (size_t i = 0; i < n; i++) {
		float d = fabsf(a[i] - b[i]);

		if (isnan(d))
			return INFINITY;
		if (d > e)
			e = d;
	}
	return e;
}

/* ---- conversions -------------------------------------------------------- */

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("f16c"))) static uint16_t hw_f32_to_fp16(float f)
{
	return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}

__attribute__((target("f16c"))) static float hw_fp16_to_f32(uint16_t h)
{
	return _cvtsh_ss(h);
}
#endif

static void test_fp16_widen_matches_hardware_for_every_value(void)
{
	bool ok = true;

#if defined(__x86_64__)
	if (!__builtin_cpu_supports("f16c")) {
		printf("# SKIP no F16C\n");
		return;
	}
	for (uint32_t h = 0; h < 65536; h++) {
		float a = kva_fp16_to_f32((uint16_t)h), b = hw_fp16_to_f32(h);

		if (kva_f32_bits(a) != kva_f32_bits(b) &&
		    !(isnan(a) && isnan(b)))
			ok = false;
	}
#endif
	report(ok, "fp16_widen_matches_hardware_for_every_value");
}

static void test_fp16_narrow_rounds_like_hardware(void)
{
	struct fx_rng rng = { 1 };
	bool ok = true;
	uint32_t bad = 0;

#if defined(__x86_64__)
	if (!__builtin_cpu_supports("f16c")) {
		printf("# SKIP no F16C\n");
		return;
	}
	for (uint32_t i = 0; i < 4000000 && ok; i++) {
		/* random bits, and values clustered around the fp16 range,
		 * its subnormals and its rounding ties */
		uint32_t x = (uint32_t)fx_next(&rng);
		float f;

		if (i & 1)
			x = (x & 0x87ffffffu) | (0x30000000u + (i % 24) *
						 0x00800000u);
		if ((i & 3) == 2)
			x &= ~0xfffu, x |= 0x1000u * (i & 1);
		f = kva_bits_f32(x);
		if (isnan(f))
			continue;
		if (kva_f32_to_fp16(f) != hw_f32_to_fp16(f)) {
			bad = x;
			ok = false;
		}
	}
#endif
	report(ok, "fp16_narrow_rounds_like_hardware%s",
	       ok ? "" : " (first mismatch below)");
	if (!ok)
		printf("# f32 bits %08x\n", bad);
}

static void test_bf16_roundtrip_and_ties_to_even(void)
{
	bool ok = true;

	for (uint32_t h = 0; h < 65536; h++) {
		float f = kva_bf16_to_f32((uint16_t)h);

		if (!isnan(f) && kva_f32_to_bf16(f) != h)
			ok = false;
	}
	/* 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even is 1 */
	ok &= kva_f32_to_bf16(1.00390625f) == 0x3f80;
	/* 1 + 3 * 2^-8 is a tie between 1 + 2^-7 and 1 + 2^-6: even up */
	ok &= kva_f32_to_bf16(1.01171875f) == 0x3f82;
	ok &= kva_f32_to_bf16(3.4e38f) == 0x7f80;	/* rounds to inf */
	ok &= isnan(kva_bf16_to_f32(kva_f32_to_bf16(NAN)));
	report(ok, "bf16_roundtrip_and_ties_to_even");
}

static void test_fp16_edges(void)
{
	bool ok = true;

	ok &= kva_f32_to_fp16(65504.0f) == 0x7bff;
	ok &= kva_f32_to_fp16(65519.0f) == 0x7bff;
	ok &= kva_f32_to_fp16(65520.0f) == 0x7c00;
	ok &= kva_f32_to_fp16(-INFINITY) == 0xfc00;
	ok &= kva_f32_to_fp16(5.9604644775390625e-8f) == 0x0001;
	ok &= kva_f32_to_fp16(2.98023223876953125e-8f) == 0x0000; /* tie */
	ok &= kva_f32_to_fp16(-0.0f) == 0x8000;
	ok &= kva_fp16_to_f32(0x0001) == 5.9604644775390625e-8f;
	ok &= (kva_f32_to_fp16(NAN) & 0x7c00) == 0x7c00 &&
	      (kva_f32_to_fp16(NAN) & 0x3ff);
	report(ok, "fp16_edges_overflow_subnormal_nan");
}

/* The e4m3 value of code @c, from the format's definition. */
static double e4m3_value(uint8_t c)
{
	int e = (c >> 3) & 15, m = c & 7;
	double v = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m, -9);

	return c & 0x80 ? -v : v;
}

/*
 * The code nearest @f by search over every finite code (ties to the even
 * code), +-448 for anything larger: what kva_f32_to_e4m3() must give.
 */
static uint8_t e4m3_nearest(float f)
{
	uint8_t sign = signbit(f) ? 0x80 : 0, best = 0;
	double a = fabs((double)f), bestd = INFINITY;

	if (isnan(f))
		return sign | 0x7f;
	if (a >= 448.0)
		return sign | 0x7e;
	for (uint8_t c = 0; c < 0x7f; c++) {
		double d = fabs(e4m3_value(c) - a);

		if (d < bestd || (d == bestd && !(c & 1))) {
			best = c;
			bestd = d;
		}
	}
	return sign | best;
}

static void test_e4m3_widen_is_exact_for_every_code(void)
{
	bool ok = true;

	for (uint32_t c = 0; c < 256; c++) {
		float f = kva_e4m3_to_f32((uint8_t)c);

		if ((c & 0x7f) == 0x7f)
			ok &= isnan(f) && !!signbit(f) == !!(c & 0x80);
		else
			ok &= (double)f == e4m3_value((uint8_t)c) &&
			      !!signbit(f) == !!(c & 0x80);
	}
	ok &= kva_e4m3_to_f32(0x7e) == 448.0f;
	ok &= kva_e4m3_to_f32(0x01) == 0.001953125f;	/* 2^-9 */
	ok &= kva_e4m3_to_f32(0x08) == 0.015625f;	/* 2^-6 */
	report(ok, "e4m3_widen_is_exact_for_every_code");
}

static void test_e4m3_narrow_is_nearest_even_and_saturates(void)
{
	struct fx_rng rng = { 9 };
	uint32_t bad = 0;
	bool ok = true;

	/* every code, and the midpoints between neighbouring codes */
	for (uint32_t c = 0; c < 0x7e && ok; c++) {
		float f = (float)e4m3_value((uint8_t)c);
		float mid = (float)((e4m3_value((uint8_t)c) +
				     e4m3_value((uint8_t)(c + 1))) / 2);

		ok &= kva_f32_to_e4m3(f) == c && kva_f32_to_e4m3(-f) ==
		      (c ? (c | 0x80) : 0x80);
		ok &= kva_f32_to_e4m3(mid) == e4m3_nearest(mid);
		if (!ok)
			bad = kva_f32_bits(f);
	}
	/* random values over the whole range, 2^-12 .. 2^10, and beyond */
	for (uint32_t i = 0; i < 1000000 && ok; i++) {
		uint32_t x = (uint32_t)fx_next(&rng);
		float f;

		x = (x & 0x807fffffu) | ((115u + x % 24u) << 23);
		if (i % 7 == 0)		/* ties: the bits below 3 kept zero */
			x &= ~0x7ffffu;
		f = kva_bits_f32(x);
		if (kva_f32_to_e4m3(f) != e4m3_nearest(f)) {
			bad = x;
			ok = false;
		}
	}
	ok &= kva_f32_to_e4m3(448.0f) == 0x7e;
	ok &= kva_f32_to_e4m3(465.0f) == 0x7e;		/* saturates */
	ok &= kva_f32_to_e4m3(-INFINITY) == 0xfe;
	ok &= kva_f32_to_e4m3(NAN) == 0x7f;
	ok &= kva_f32_to_e4m3(0.0009765625f) == 0x00;	/* 2^-10: tie, even */
	ok &= kva_f32_to_e4m3(0.0029296875f) == 0x02;	/* 1.5 * 2^-9: tie */
	ok &= kva_f32_to_e4m3(-0.0f) == 0x80;
	report(ok, "e4m3_narrow_is_nearest_even_and_saturates%s",
	       ok ? "" : " (first mismatch below)");
	if (!ok)
		printf("# f32 bits %08x\n", bad);
}

static void test_e4m3_bf16_table_matches_conversion(void)
{
	bool ok = true;

	for (uint32_t c = 0; c < 128; c++) {
		uint16_t b = kva_f32_to_bf16(kva_e4m3_to_f32((uint8_t)c));

		ok &= kva_e4m3_bf16_lut[c] == (uint8_t)b &&
		      kva_e4m3_bf16_lut[128 + c] == (uint8_t)(b >> 8);
		/* bf16 holds every e4m3 value exactly */
		ok &= (c == 0x7f) || kva_bf16_to_f32(b) ==
				      kva_e4m3_to_f32((uint8_t)c);
	}
	report(ok, "e4m3_bf16_table_matches_conversion");
}

/* ---- online softmax ------------------------------------------------------ */

/* Softmax-weighted sum of v over scores s[0..n), online, in tiles of
 * @tile, with tile_math.h; returns the result. */
static float online_sum(const float *s, const float *v, int n, int tile,
			struct kva_softmax *st, float *acc)
{
	kva_softmax_init(st);
	*acc = 0.0f;
	for (int t = 0; t < n; t += tile) {
		float tmax = -INFINITY;

		for (int j = t; j < t + tile && j < n; j++)
			tmax = fmaxf(tmax, s[j]);
		*acc *= kva_softmax_rescale(st, tmax);
		for (int j = t; j < t + tile && j < n; j++) {
			float w = kva_softmax_weight(st, s[j]);

			kva_softmax_add(st, w);
			*acc += w * v[j];
		}
	}
	return *acc * kva_softmax_norm(st);
}

static void test_online_softmax_and_merge_match_two_pass(void)
{
	struct fx_rng rng = { 7 };
	float s[300], v[300];
	double max = -INFINITY, sum = 0, o = 0;
	bool ok = true;

	for (int i = 0; i < 300; i++) {
		/* rising scores: the max moves on almost every tile */
		s[i] = (float)i * 0.2f + fx_unit(&rng) * 3.0f;
		v[i] = fx_unit(&rng);
		if (i == 17)
			s[i] = -INFINITY;	/* a masked key */
	}
	for (int i = 0; i < 300; i++)
		max = fmax(max, s[i]);
	for (int i = 0; i < 300; i++) {
		sum += exp(s[i] - max);
		o += exp(s[i] - max) * v[i];
	}
	o /= sum;
	for (int tile = 1; tile <= 64; tile *= 4) {
		struct kva_softmax a, b;
		float acc_a, acc_b, wa, wb, one, merged;

		one = online_sum(s, v, 300, tile, &a, &acc_a);
		ok &= fabs(one - o) < 1e-6;
		/* split-K: keys [0, 123) and [123, 300), merged */
		online_sum(s, v, 123, tile, &a, &acc_a);
		online_sum(s + 123, v + 123, 177, tile, &b, &acc_b);
		kva_softmax_merge(&a, &b, &wa, &wb);
		merged = (acc_a * wa + acc_b * wb) * kva_softmax_norm(&a);
		ok &= fabs(merged - o) < 1e-6;
	}
	report(ok, "online_softmax_and_merge_match_two_pass");
}

static void test_merge_with_empty_partial_is_identity(void)
{
	struct kva_softmax a = { 2.0f, 3.0f }, e, e2;
	float wa, wb;
	bool ok = true;

	kva_softmax_init(&e);
	kva_softmax_merge(&a, &e, &wa, &wb);
	ok &= wa == 1.0f && wb == 0.0f && a.m == 2.0f && a.l == 3.0f;
	kva_softmax_merge(&e, &a, &wa, &wb);
	ok &= wa == 0.0f && wb == 1.0f && e.m == 2.0f && e.l == 3.0f;
	kva_softmax_init(&e);
	kva_softmax_init(&e2);
	kva_softmax_merge(&e, &e2, &wa, &wb);
	ok &= wa == 0.0f && wb == 0.0f && kva_softmax_norm(&e) == 0.0f;
	ok &= kva_softmax_rescale(&e2, -INFINITY) == 1.0f;
	report(ok, "merge_with_empty_partial_is_identity");
}

/* ---- layout and the write side ------------------------------------------ */

static int geom(struct kva_geometry *g, uint32_t layers, uint32_t kv_heads,
		uint32_t head_dim, enum kva_dtype dt, uint64_t frame_size)
{
	memset(g, 0, sizeof(*g));
	g->layers = layers;
	g->kv_heads = kv_heads;
	g->head_dim = head_dim;
	g->dtype = dt;
	g->frame_size = frame_size;
	return kva_geometry_init(g);
}

static void test_walk_matches_kva_kv_offset(void)
{
	struct kva_geometry g;
	struct kva_walk w;
	bool ok = geom(&g, 3, 2, 64, KVA_DTYPE_BF16, 40000) == 0;

	/* 40000 / (2*3*2*64*2 = 1536) = 26 tokens, 64 bytes unused */
	ok &= g.tokens_per_frame == 26;
	for (uint32_t l = 0; l < 3 && ok; l++) {
		kva_walk_init(&w, &g, l);
		for (uint32_t kv = 0; kv < 2; kv++)
			for (uint32_t h = 0; h < 2; h++)
				for (uint64_t t = 0; t < 100; t++)
					ok &= w.kv_off[kv] +
					      (uint64_t)h * w.head_stride +
					      kva_walk_tok(&w, t) ==
					      kva_kv_offset(&g, l, kv, h, t);
	}
	report(ok, "walk_matches_kva_kv_offset");
}

static void test_append_writes_only_its_rows(void)
{
	struct kva_geometry g;
	struct fx_rng rng = { 3 };
	bool ok = geom(&g, 2, 2, 64, KVA_DTYPE_FP16, 32768) == 0;
	uint64_t frames = 3, bytes = frames * g.frame_size;
	uint8_t *mem = malloc(bytes), *expect = malloc(bytes);
	float *k = fx_randf(5 * 2 * 64, &rng), *v = fx_randf(5 * 2 * 64, &rng);

	memset(mem, 0xff, bytes);
	memset(expect, 0xff, bytes);
	/* tokens 30..34 of layer 1 cross the frame boundary at T_f = 32 */
	ok &= g.tokens_per_frame == 32;
	ok &= kva_kv_append(&g, 1, mem, 30, 5, KVA_DTYPE_FP32, k, v) == 0;
	for (uint32_t i = 0; i < 5; i++)
		for (uint32_t h = 0; h < 2; h++)
			for (uint32_t d = 0; d < 64; d++) {
				size_t src = ((size_t)i * 2 + h) * 64 + d;

				kva_elem_from_f32(expect + kva_kv_offset(&g, 1,
						  KVA_K, h, 30 + i), d,
						  KVA_DTYPE_FP16, k[src]);
				kva_elem_from_f32(expect + kva_kv_offset(&g, 1,
						  KVA_V, h, 30 + i), d,
						  KVA_DTYPE_FP16, v[src]);
			}
	ok &= memcmp(mem, expect, bytes) == 0;
	ok &= kva_kv_append(&g, 2, mem, 0, 1, KVA_DTYPE_FP32, k, v) == -EINVAL;
	ok &= kva_kv_append(&g, 0, NULL, 0, 1, KVA_DTYPE_FP32, k, v) ==
	      -EINVAL;
	report(ok, "append_writes_only_its_rows_and_rounds_to_dtype");
	free(mem);
	free(expect);
	free(k);
	free(v);
}

/* ---- attention against the reference ----------------------------------- */

struct shape {
	uint32_t kv_heads, group, head_dim;
	enum kva_dtype dtype;
	uint64_t frame_size;
	float kscale;
};

#define MAX_KV_HEADS 8

/*
 * Per-head fp8 scales for K values up to kscale and V up to 1: a little
 * above the largest magnitude / 448 and different for every head, so a
 * kernel that takes another head's scale shows.  NULL for other dtypes.
 */
static const float *scales_for(const struct shape *sh, float *buf)
{
	if (sh->dtype != KVA_DTYPE_FP8)
		return NULL;
	for (uint32_t h = 0; h < sh->kv_heads; h++) {
		buf[h] = sh->kscale * (1.0f + 0.25f * h) / 448.0f;
		buf[sh->kv_heads + h] = (1.0f + 0.5f * h) / 448.0f;
	}
	return buf;
}

static const char *len_name(uint64_t n, uint32_t tpf, char *buf)
{
	if (n == tpf)
		return "tf";
	if (n + 1 == tpf)
		return "tf_minus_1";
	if (n == (uint64_t)tpf + 1)
		return "tf_plus_1";
	sprintf(buf, "%llu", (unsigned long long)n);
	return buf;
}

static struct kva_attn *make(enum kva_isa isa, unsigned int threads,
			     uint32_t split)
{
	struct kva_attn_config cfg = {
		.threads = threads, .isa = isa, .split_tokens = split,
	};
	struct kva_attn *a = NULL;

	if (kva_attn_create(&a, &cfg))
		return NULL;
	return a;
}

/*
 * Decode over a ragged batch with lengths @lens, checked against the
 * reference for the given ISA, threads and split.
 */
static void check_decode(const struct shape *sh, const uint64_t *lens,
			 uint32_t nr, enum kva_isa isa, unsigned int threads,
			 uint32_t split, const char *what)
{
	struct kva_geometry g;
	struct fx_rng rng = { 11 + lens[0] * 31 + sh->group };
	struct fx_seq *fs = calloc(nr, sizeof(*fs));
	struct kva_attn_seq *seqs = calloc(nr, sizeof(*seqs));
	uint32_t qh = sh->kv_heads * sh->group, layers = 2;
	size_t n = (size_t)nr * qh * sh->head_dim;
	float *q = NULL, *out = malloc(n * sizeof(float)),
	      *ref = malloc(n * sizeof(float)), err = INFINITY;
	struct kva_attn *a = make(isa, threads, split);
	bool ok = a && fs && seqs && out && ref;
	float scale_buf[2 * MAX_KV_HEADS];
	const float *kvs = scales_for(sh, scale_buf);
	char buf[32];

	ok = ok && geom(&g, layers, sh->kv_heads, sh->head_dim, sh->dtype,
			sh->frame_size) == 0;
	for (uint32_t i = 0; ok && i < nr; i++) {
		ok = fx_seq_fill_scaled(&fs[i], &g, lens[i], sh->kscale, &rng,
					kvs) == 0;
		seqs[i].base = fs[i].mem;
		seqs[i].tokens = lens[i];
	}
	if (ok) {
		struct kva_attn_params p = {
			.geom = &g, .layer = 1, .q_heads = qh,
			.scale = 1.0f / sqrtf((float)sh->head_dim),
			.kv_scale = kvs,
		};

		q = fx_randf(n, &rng);
		memset(out, 0x7f, n * sizeof(float));
		ok = q && kva_attn_decode(a, &p, seqs, nr, q, out) == 0 &&
		     kva_attn_decode_ref(&p, seqs, nr, q, ref) == 0;
		if (ok)
			err = max_err(out, ref, n);
		ok = ok && err <= tol_for(sh->dtype, isa, sh->head_dim, true);
	}
	report(ok, "decode_matches_reference_%s_%s_d%u_g%u_%s_t%u%s%s # err %.2g",
	       kva_dtype_name(sh->dtype), kva_isa_name(isa), sh->head_dim,
	       sh->group, nr == 1 ? len_name(lens[0], g.tokens_per_frame, buf)
				  : "ragged", threads, split ? "_split" : "",
	       what, (double)err);
	for (uint32_t i = 0; fs && i < nr; i++)
		fx_seq_free(&fs[i]);
	free(fs);
	free(seqs);
	free(q);
	free(out);
	free(ref);
	kva_attn_destroy(a);
}

/*
 * Prefill of chunks @chunk[i] after prefixes @prefix[i], checked against
 * the reference.  Rows are packed in batch order.
 */
static void check_prefill(const struct shape *sh, const uint64_t *prefix,
			  const uint32_t *chunk, uint32_t nr,
			  enum kva_isa isa, unsigned int threads,
			  const char *name)
{
	struct kva_geometry g;
	struct fx_rng rng = { 5 + prefix[0] * 7 + chunk[0] + sh->group };
	struct fx_seq *fs = calloc(nr, sizeof(*fs));
	struct kva_prefill_seq *seqs = calloc(nr, sizeof(*seqs));
	uint32_t qh = sh->kv_heads * sh->group, rows = 0;
	struct kva_attn *a = make(isa, threads, 0);
	float *q = NULL, *out = NULL, *ref = NULL, err = INFINITY;
	bool ok = a && fs && seqs;
	float scale_buf[2 * MAX_KV_HEADS];
	const float *kvs = scales_for(sh, scale_buf);
	size_t n;

	ok = ok && geom(&g, 2, sh->kv_heads, sh->head_dim, sh->dtype,
			sh->frame_size) == 0;
	for (uint32_t i = 0; ok && i < nr; i++) {
		ok = fx_seq_fill_scaled(&fs[i], &g, prefix[i] + chunk[i],
					sh->kscale, &rng, kvs) == 0;
		seqs[i].base = fs[i].mem;
		seqs[i].tokens = prefix[i] + chunk[i];
		seqs[i].q_tokens = chunk[i];
		seqs[i].q_start = rows;
		rows += chunk[i];
	}
	n = (size_t)rows * qh * sh->head_dim;
	if (ok) {
		struct kva_attn_params p = {
			.geom = &g, .layer = 0, .q_heads = qh,
			.scale = 1.0f / sqrtf((float)sh->head_dim),
			.kv_scale = kvs,
		};

		q = fx_randf(n, &rng);
		out = malloc(n * sizeof(float) + 1);
		ref = malloc(n * sizeof(float) + 1);
		ok = q && out && ref;
		if (ok)
			memset(out, 0x7f, n * sizeof(float));
		ok = ok && kva_attn_prefill(a, &p, seqs, nr, q, out) == 0 &&
		     kva_attn_prefill_ref(&p, seqs, nr, q, ref) == 0;
		if (ok)
			err = max_err(out, ref, n);
		ok = ok && err <= tol_for(sh->dtype, isa, sh->head_dim, false);
	}
	report(ok, "prefill_matches_reference_%s_%s_d%u_g%u_%s_t%u # err %.2g",
	       kva_dtype_name(sh->dtype), kva_isa_name(isa), sh->head_dim,
	       sh->group, name, threads, (double)err);
	for (uint32_t i = 0; fs && i < nr; i++)
		fx_seq_free(&fs[i]);
	free(fs);
	free(seqs);
	free(q);
	free(out);
	free(ref);
	kva_attn_destroy(a);
}

/* A frame size that gives T_f tokens per frame for this shape. */
static uint64_t frame_for(uint32_t kv_heads, uint32_t head_dim,
			  enum kva_dtype dt, uint32_t tpf, uint32_t waste)
{
	return (uint64_t)tpf * 2 * 2 * kv_heads * head_dim *
	       kva_dtype_size(dt) + waste;
}

static void attention_tests(enum kva_isa isa)
{
	static const enum kva_dtype dts[] = {
		KVA_DTYPE_FP32, KVA_DTYPE_FP16, KVA_DTYPE_BF16, KVA_DTYPE_FP8,
	};
	static const uint32_t groups[] = { 1, 2, 3, 4, 8 };

	for (int di = 0; di < 4; di++) {
		enum kva_dtype dt = dts[di];

		for (uint32_t hd = 64; hd <= 128; hd += 64)
			for (int gi = 0; gi < 5; gi++) {
				/* T_f = 16 with 64 spare bytes per frame */
				uint32_t tpf = 16;
				struct shape sh = {
					.kv_heads = 2, .group = groups[gi],
					.head_dim = hd, .dtype = dt,
					.frame_size = frame_for(2, hd, dt, tpf,
								64),
					.kscale = 1.0f,
				};
				uint64_t lens[] = { 1, tpf - 1, tpf, tpf + 1,
						    3 * tpf + 5 };

				for (int li = 0; li < 5; li++)
					check_decode(&sh, &lens[li], 1, isa, 1,
						     0, "");
			}
		/* ragged batches, threads, split-K, sharp softmax */
		for (uint32_t hd = 64; hd <= 128; hd += 64) {
			struct shape sh = {
				.kv_heads = 2, .group = 4, .head_dim = hd,
				.dtype = dt,
				.frame_size = frame_for(2, hd, dt, 13, 0),
				.kscale = 1.0f,
			};
			uint64_t ragged[] = { 1, 13, 12, 14, 0, 700, 27, 300 };

			check_decode(&sh, ragged, 8, isa, 1, 0, "");
			check_decode(&sh, ragged, 8, isa, 3, 0, "");
			check_decode(&sh, ragged, 8, isa, 2, 40, "");
			sh.kscale = 8.0f;
			check_decode(&sh, ragged, 8, isa, 2, 100, "_sharp");
		}
		{
			/* MQA-like: 16 query heads per KV head */
			struct shape sh = {
				.kv_heads = 1, .group = 16, .head_dim = 128,
				.dtype = dt,
				.frame_size = frame_for(1, 128, dt, 16, 64),
				.kscale = 1.0f,
			};
			uint64_t ragged[] = { 5, 16, 33, 200 };

			check_decode(&sh, ragged, 4, isa, 2, 0, "_mqa");
			/* head_dim 96: a multiple of 32, not of 64 */
			sh.kv_heads = 2;
			sh.group = 4;
			sh.head_dim = 96;
			sh.frame_size = frame_for(2, 96, dt, 16, 0);
			check_decode(&sh, ragged, 4, isa, 1, 0, "");
		}
		if (!quick) {
			/* long contexts, with and without split-K */
			struct shape sh = {
				.kv_heads = 2, .group = 4, .head_dim = 128,
				.dtype = dt,
				.frame_size = frame_for(2, 128, dt, 16, 0),
				.kscale = 2.0f,
			};
			uint64_t lens[] = { 8195, 1000 };

			check_decode(&sh, lens, 2, isa, 1, 0, "_long");
			check_decode(&sh, lens, 2, isa, 2, 1024, "_long");
		}
	}

	for (int di = 0; di < 4; di++) {
		enum kva_dtype dt = dts[di];

		for (uint32_t hd = 64; hd <= 128; hd += 64)
			for (int gi = 0; gi < 5; gi++) {
				uint32_t tpf = 16;
				struct shape sh = {
					.kv_heads = 2, .group = groups[gi],
					.head_dim = hd, .dtype = dt,
					.frame_size = frame_for(2, hd, dt, tpf,
								64),
					.kscale = 1.0f,
				};
				uint64_t pre[] = { 0, 0, tpf - 1, 37, 5 };
				uint32_t chk[] = { 1, tpf + 1, 1, 70, 33 };

				check_prefill(&sh, &pre[0], &chk[0], 1, isa,
					      1, "chunk_1_no_prefix");
				check_prefill(&sh, &pre[1], &chk[1], 1, isa,
					      1, "chunk_tf_plus_1_no_prefix");
				check_prefill(&sh, &pre[2], &chk[2], 1, isa,
					      1, "chunk_1_after_tf_minus_1");
				check_prefill(&sh, &pre[3], &chk[3], 1, isa,
					      2, "chunk_70_after_37");
				check_prefill(&sh, pre, chk, 5, isa, 2,
					      "ragged_batch");
			}
		if (!quick) {
			struct shape sh = {
				.kv_heads = 1, .group = 4, .head_dim = 128,
				.dtype = dt,
				.frame_size = frame_for(1, 128, dt, 16, 0),
				.kscale = 2.0f,
			};
			uint64_t pre = 8200;
			uint32_t chk = 40;

			check_prefill(&sh, &pre, &chk, 1, isa, 2,
				      "chunk_40_after_8200");
		}
	}
}


/* ---- q and out in fp16 and bf16 ------------------------------------------ */

/*
 * Kernel against reference with q and out in @qo: both round the same
 * fp32 results, so they may differ by the fp32 tolerance plus one unit in
 * the last place of @qo (2^-7 relative for bf16, 2^-10 for fp16).
 */
static bool qo_close(const void *a, const void *b, size_t n, uint32_t qo,
		     float tol, float *err)
{
	float rel = qo == KVA_DTYPE_BF16 ? 0x1p-7f : 0x1p-10f;

	*err = 0.0f;
	for (size_t i = 0; i < n; i++) {
		float x = kva_elem_to_f32(a, (uint32_t)i, qo);
		float y = kva_elem_to_f32(b, (uint32_t)i, qo);
		float d = fabsf(x - y);

		if (isnan(d) || d > tol + rel * fmaxf(fabsf(x), fabsf(y)))
			return false;
		if (d > *err)
			*err = d;
	}
	return true;
}

static void check_qo(enum kva_isa isa, enum kva_dtype cache, uint32_t qo)
{
	struct kva_geometry g;
	struct fx_rng rng = { 41 + qo };
	struct shape sh = { .kv_heads = 2, .group = 4, .head_dim = 128,
			    .dtype = cache, .kscale = 1.0f };
	float scale_buf[2 * MAX_KV_HEADS], err = INFINITY, *qf;
	const float *kvs = scales_for(&sh, scale_buf);
	uint64_t lens[3] = { 1, 17, 300 };
	struct fx_seq fs[3];
	struct kva_attn_seq ds[3];
	struct kva_prefill_seq ps[3];
	uint32_t qh = 8, rows = 0;
	size_t row = (size_t)qh * 128, n;
	uint16_t *q, *out, *ref;
	struct kva_attn *a = make(isa, 2, 0);
	bool ok = a != NULL, gap = true;

	ok = ok && geom(&g, 1, 2, 128, cache, frame_for(2, 128, cache, 16, 0))
		   == 0;
	/* prefill: chunks of 1, 5 and 9 after their prefixes, a row gap */
	for (uint32_t i = 0; ok && i < 3; i++) {
		ok = fx_seq_fill_scaled(&fs[i], &g, lens[i] + 9, 1.0f, &rng,
					kvs) == 0;
		ds[i] = (struct kva_attn_seq){ fs[i].mem, lens[i] };
		ps[i] = (struct kva_prefill_seq){ fs[i].mem, lens[i] + 9,
						  1 + 4 * i, rows };
		rows += 1 + 4 * i + (i == 0);
	}
	n = rows * row;
	qf = fx_randf(n, &rng);
	q = malloc(n * 2);
	out = malloc(n * 2);
	ref = malloc(n * 2);
	ok = ok && qf && q && out && ref;
	for (size_t i = 0; ok && i < n; i++)
		kva_elem_from_f32(q, (uint32_t)i, qo, qf[i]);
	if (ok) {
		struct kva_attn_params p = {
			.geom = &g, .layer = 0, .q_heads = qh,
			.scale = 1.0f / sqrtf(128.0f), .qo_dtype = qo,
			.kv_scale = kvs,
		};
		float tol = tol_for(cache, isa, 128, true);

		ok = kva_attn_decode(a, &p, ds, 3, q, out) == 0 &&
		     kva_attn_decode_ref(&p, ds, 3, q, ref) == 0 &&
		     qo_close(out, ref, 3 * row, qo, tol, &err);
		memset(out, 0x5a, n * 2);
		ok = ok && kva_attn_prefill(a, &p, ps, 3, q, out) == 0 &&
		     kva_attn_prefill_ref(&p, ps, 3, q, ref) == 0;
		for (uint32_t i = 0; ok && i < 3; i++) {
			float e;

			ok = qo_close(out + ps[i].q_start * row,
				      ref + ps[i].q_start * row,
				      ps[i].q_tokens * row, qo, 2e-5f, &e);
			err = fmaxf(err, e);
		}
		/* the row between the first and second chunk: untouched */
		for (size_t i = 0; i < row; i++)
			gap &= out[1 * row + i] == 0x5a5a;
		ok = ok && gap;
	}
	report(ok, "%s_cache_with_q_and_out_in_%s_matches_reference_%s # err %.2g",
	       kva_dtype_name(cache), kva_dtype_name(qo), kva_isa_name(isa),
	       (double)err);
	for (uint32_t i = 0; i < 3; i++)
		fx_seq_free(&fs[i]);
	free(qf);
	free(q);
	free(out);
	free(ref);
	kva_attn_destroy(a);
}

/* ---- fp8: NaN, and the cost of quantising -------------------------------- */

/*
 * A NaN code in one KV head's K makes the outputs of that head's query
 * heads NaN, and one in its V the same element of those outputs, as the
 * reference's do; no other output changes.
 */
static void check_fp8_nan(enum kva_isa isa, uint32_t D, int kv)
{
	struct kva_geometry g;
	struct fx_rng rng = { 77 };
	struct shape sh = { .kv_heads = 2, .group = 4, .head_dim = D,
			    .dtype = KVA_DTYPE_FP8, .kscale = 1.0f };
	float scale_buf[2 * MAX_KV_HEADS], out[8 * 128], ref[8 * 128], *q;
	const float *kvs = scales_for(&sh, scale_buf);
	struct kva_attn *a = make(isa, 1, 0);
	struct fx_seq fs;
	bool ok = a != NULL;

	ok = ok && geom(&g, 1, 2, D, KVA_DTYPE_FP8,
			frame_for(2, D, KVA_DTYPE_FP8, 16, 0)) == 0 &&
	     fx_seq_fill_scaled(&fs, &g, 40, 1.0f, &rng, kvs) == 0;
	q = fx_randf(8 * D, &rng);
	if (ok && q) {
		struct kva_attn_seq s = { fs.mem, 40 };
		struct kva_attn_params p = {
			.geom = &g, .layer = 0, .q_heads = 8,
			.scale = 1.0f / sqrtf((float)D), .kv_scale = kvs,
		};
		uint32_t head = kv == KVA_K ? 0 : 1;

		fs.mem[kva_kv_offset(&g, 0, kv, head, 21) + 3] = 0xff;
		ok = kva_attn_decode(a, &p, &s, 1, q, out) == 0 &&
		     kva_attn_decode_ref(&p, &s, 1, q, ref) == 0;
		for (uint32_t h = 0; ok && h < 8; h++)
			for (uint32_t d = 0; d < D; d++) {
				float x = out[h * D + d], y = ref[h * D + d];

				if (h / 4 == head && (kv == KVA_K || d == 3))
					ok &= isnan(x) && isnan(y);
				else
					ok &= fabsf(x - y) <= tol_for(
						KVA_DTYPE_FP8, isa, D, true);
			}
		fx_seq_free(&fs);
	}
	report(ok, "fp8_nan_in_%s_reaches_only_its_heads_%s_d%u",
	       kv == KVA_K ? "k" : "v", kva_isa_name(isa), D);
	free(q);
	kva_attn_destroy(a);
}

/*
 * What fp8 costs: the same K and V (q, K, V uniform in [-1, 1)) written
 * to an fp32 cache and to an fp8 cache with per-head scales of the
 * largest magnitude / 448, the reference over the first against the
 * kernels over the second.  The bounds, derived in
 * Documentation/kernels.rst: e4m3 rounds to 2^-4 relative, so a V
 * element of |v| < 1 moves by at most 16 / 448 = 0.036; at one token
 * the output is that row, so the worst element's error is about that;
 * over many tokens the rounding errors average out.  K's rounding moves
 * each score by a random walk of D such terms times 1/sqrt(D): about
 * 0.01, which moves the weights by about 1%.
 */
#define FP8_Q_MAX	0.045f	/* largest |error| of any element */
#define FP8_Q_RMS	0.012f	/* root mean square over all of them */

static void check_fp8_vs_fp32(enum kva_isa isa, bool decode)
{
	static const uint32_t lens[] = { 1, 16, 300, 2000 };
	struct kva_geometry g32, g8;
	struct fx_rng rng = { 2024 };
	uint32_t D = 128, H = 2, qh = 8;
	float kvs[4], *k = NULL, *v = NULL, *q = NULL, *out = NULL;
	float *ref = NULL, max = 0.0f;
	double sq = 0.0;
	size_t cnt = 0;
	struct kva_attn *a = make(isa, 2, 0);
	bool ok = a != NULL;

	ok = ok && geom(&g32, 1, H, D, KVA_DTYPE_FP32, 1 << 20) == 0 &&
	     geom(&g8, 1, H, D, KVA_DTYPE_FP8, 1 << 18) == 0;
	for (uint32_t li = 0; ok && li < 4; li++) {
		uint32_t T = lens[li], rows = decode ? 1 : (T < 64 ? T : 64);
		size_t kvn = (size_t)T * H * D, qn = (size_t)rows * qh * D;
		uint8_t *m32 = NULL, *m8 = NULL;

		k = fx_randf(kvn, &rng);
		v = fx_randf(kvn, &rng);
		q = fx_randf(qn, &rng);
		out = malloc(qn * sizeof(float));
		ref = malloc(qn * sizeof(float));
		m32 = aligned_alloc(4096, kva_frames_for(&g32, T) * g32.frame_size);
		m8 = aligned_alloc(4096, kva_frames_for(&g8, T) * g8.frame_size);
		ok = k && v && q && out && ref && m32 && m8;
		/* per head: the largest magnitude / 448 */
		for (uint32_t i = 0; ok && i < 2 * H; i++) {
			const float *x = i < H ? k : v;
			float amax = 0.0f;

			for (size_t t = 0; t < T; t++)
				for (uint32_t d = 0; d < D; d++)
					amax = fmaxf(amax, fabsf(x[(t * H +
						i % H) * D + d]));
			kvs[i] = amax / 448.0f;
		}
		ok = ok && kva_kv_append(&g32, 0, m32, 0, T, KVA_DTYPE_FP32,
					 k, v) == 0 &&
		     kva_kv_append_scaled(&g8, 0, m8, 0, T, KVA_DTYPE_FP32, k,
					  v, kvs) == 0;
		if (ok) {
			struct kva_attn_params p32 = {
				.geom = &g32, .layer = 0, .q_heads = qh,
				.scale = 1.0f / sqrtf((float)D),
			};
			struct kva_attn_params p8 = p32;

			p8.geom = &g8;
			p8.kv_scale = kvs;
			if (decode) {
				struct kva_attn_seq s32 = { m32, T }, s8 = { m8, T };

				ok = kva_attn_decode_ref(&p32, &s32, 1, q, ref) == 0 &&
				     kva_attn_decode(a, &p8, &s8, 1, q, out) == 0;
			} else {
				struct kva_prefill_seq s32 = { m32, T, rows, 0 };
				struct kva_prefill_seq s8 = { m8, T, rows, 0 };

				ok = kva_attn_prefill_ref(&p32, &s32, 1, q, ref) == 0 &&
				     kva_attn_prefill(a, &p8, &s8, 1, q, out) == 0;
			}
			for (size_t i = 0; ok && i < qn; i++) {
				float d = fabsf(out[i] - ref[i]);

				if (isnan(d))
					d = INFINITY;
				max = fmaxf(max, d);
				sq += (double)d * d;
				cnt++;
			}
		}
		free(m32);
		free(m8);
		free(k);
		free(v);
		free(q);
		free(out);
		free(ref);
	}
	ok = ok && max <= FP8_Q_MAX && sqrt(sq / cnt) <= FP8_Q_RMS;
	report(ok, "fp8_%s_against_fp32_cache_within_bounds_%s # max %.3g rms %.3g",
	       decode ? "decode" : "prefill", kva_isa_name(isa), (double)max,
	       cnt ? sqrt(sq / cnt) : 0.0);
	kva_attn_destroy(a);
}

static void isa_extra_tests(enum kva_isa isa)
{
	check_qo(isa, KVA_DTYPE_BF16, KVA_DTYPE_BF16);
	check_qo(isa, KVA_DTYPE_BF16, KVA_DTYPE_FP16);
	check_qo(isa, KVA_DTYPE_FP8, KVA_DTYPE_BF16);
	check_fp8_nan(isa, 128, KVA_K);
	check_fp8_nan(isa, 128, KVA_V);
	check_fp8_nan(isa, 96, KVA_K);
	check_fp8_vs_fp32(isa, true);
	check_fp8_vs_fp32(isa, false);
}

/*
 * The CUDA decode's pieces (decode_split.h, the arithmetic the device
 * runs): for plans on 1 to 132 multiprocessors, batches of 1 to 70000
 * and every kind of length up to and far beyond the plan's max_tokens,
 * a sequence is cut into pieces of a multiple of 64 tokens that cover it
 * and are never more than the plan's blocks (more fell outside grid.x:
 * their output was never written and their ticket poisoned the
 * workspace).
 */
static void test_cuda_decode_pieces_cover_any_length_within_the_plan(void)
{
	static const uint32_t sms[] = { 1, 108, 132 };
	static const uint64_t blocks[] = { 1, 8, 16, 512, 70000 };
	static const uint64_t maxes[] = {
		1, 63, 64, 65, 300, 8192, 131072, KVA_SPLIT_MAX_TOKENS,
	};
	static const uint64_t lens[] = {
		1, 63, 64, 65, 299, 300, 301, 1000, 8191, 8192, 8193, 9000,
		131073, 1000000, KVA_SPLIT_MAX_TOKENS,
	};
	bool ok = true;

	for (int si = 0; si < 3; si++)
		for (int bi = 0; bi < 5; bi++)
			for (int mi = 0; mi < 8; mi++) {
				uint32_t splits, st;

				kva_split_plan(4ull * sms[si], blocks[bi],
					       maxes[mi], &splits, &st);
				ok &= splits >= 1 && st >= 64 && st % 64 == 0;
				/* the plan's own length fits it exactly */
				ok &= (uint64_t)splits * st >= maxes[mi] &&
				      (uint64_t)(splits - 1) * st < maxes[mi];
				for (int li = 0; li < 15; li++) {
					uint64_t t = lens[li];
					uint32_t p = kva_split_piece(t, splits, st);
					uint32_t n = kva_split_count(t, p);

					ok &= p % 64 == 0 && p >= st;
					ok &= n >= 1 && n <= splits;
					ok &= (uint64_t)n * p >= t &&
					      (uint64_t)(n - 1) * p < t;
					if (t <= maxes[mi])
						ok &= p == st;
				}
			}
	report(ok, "cuda_decode_pieces_cover_any_length_within_the_plan");
}

/*
 * The CUDA grid (decode_split.h): 70000 sequences (more than grid.z's
 * 65535) fit, in x; y and z stay within 65535; what cannot fit is
 * -EINVAL, never a launch that fails or wraps.
 */
static void test_cuda_grid_holds_batches_beyond_65535(void)
{
	uint32_t x = 0, y = 0;
	bool ok = true;

	ok &= kva_attn_grid(70000, 3, 8, 1, &x, &y) == 0 &&
	      x == 210000 && y == 8;
	ok &= kva_attn_grid(65536, 1, 1, 1, &x, &y) == 0 && x == 65536;
	ok &= y <= KVA_GRID_YZ_MAX;
	ok &= kva_attn_grid(0xffffffffu, 1, 1, 1, &x, &y) == -EINVAL;
	ok &= kva_attn_grid(1u << 20, 1u << 11, 1, 1, &x, &y) == -EINVAL;
	ok &= kva_attn_grid(1u << 20, (1u << 11) - 1, 1, 1, &x, &y) == 0;
	ok &= kva_attn_grid(1, 1, 65535, 1, &x, &y) == 0 && y == 65535;
	ok &= kva_attn_grid(1, 1, 65536, 1, &x, &y) == -EINVAL;
	ok &= kva_attn_grid(1, 1, 32768, 2, &x, &y) == -EINVAL;
	ok &= kva_attn_grid(0, 1, 1, 1, &x, &y) == -EINVAL;
	report(ok, "cuda_grid_holds_batches_beyond_65535");
}

/*
 * The CUDA decode's split-K combine (kernels/cuda/decode.cu, combine()):
 * all partials scaled at once by kva_softmax_combine_weight() under their
 * common max gives what the chain of kva_softmax_merge() it replaced
 * gave, for 2 to 600 pieces (more than one chunk of the kernel's weights
 * for head_dim 64), far-apart maxima and empty pieces.
 */
static void test_cuda_split_combine_matches_the_chain_of_merges(void)
{
	static const uint32_t counts[] = { 2, 3, 64, 255, 256, 257, 600 };
	enum { D = 8, MAXP = 600 };
	static float m[MAXP], l[MAXP], acc[MAXP][D];
	double worst = 0.0;
	uint32_t seed = 7;
	bool ok = true;

	for (int ci = 0; ci < 7; ci++) {
		uint32_t n = counts[ci];
		struct kva_softmax chain, all;
		float oc[D], oa[D];

		for (uint32_t p = 0; p < n; p++) {
			seed = seed * 1664525u + 1013904223u;
			/* one piece in 16 empty; maxima spread over 60 */
			m[p] = (seed >> 28) == 3 ? -INFINITY :
			       (float)(seed >> 8) / (1u << 24) * 60.0f - 30.0f;
			l[p] = m[p] == -INFINITY ? 0.0f :
			       1.0f + (float)(seed & 0xff) / 16.0f;
			for (int d = 0; d < D; d++)
				acc[p][d] = m[p] == -INFINITY ? 0.0f :
					    l[p] * ((float)((seed >> d) & 0xf) /
						    8.0f - 1.0f);
		}
		chain = (struct kva_softmax){ m[0], l[0] };
		for (int d = 0; d < D; d++)
			oc[d] = acc[0][d];
		for (uint32_t p = 1; p < n; p++) {
			struct kva_softmax b = { m[p], l[p] };
			float wa, wb;

			kva_softmax_merge(&chain, &b, &wa, &wb);
			for (int d = 0; d < D; d++)
				oc[d] = oc[d] * wa + acc[p][d] * wb;
		}
		kva_softmax_init(&all);
		for (uint32_t p = 0; p < n; p++) {
			struct kva_softmax b = { m[p], l[p] };
			float wa, wb;

			kva_softmax_merge(&all, &b, &wa, &wb);
		}
		for (int d = 0; d < D; d++) {
			oa[d] = 0.0f;
			for (uint32_t p = 0; p < n; p++)
				oa[d] = fmaf(acc[p][d],
					     kva_softmax_combine_weight(m[p],
									all.m),
					     oa[d]);
		}
		ok &= all.m == chain.m;
		ok &= fabsf(all.l - chain.l) <= 1e-5f * chain.l;
		for (int d = 0; d < D; d++) {
			double e = fabs((double)oa[d] * kva_softmax_norm(&all) -
					(double)oc[d] * kva_softmax_norm(&chain));

			worst = e > worst ? e : worst;
		}
	}
	ok &= worst <= 1e-6;
	report(ok, "cuda_split_combine_matches_the_chain_of_merges # err %.2g",
	       worst);
}

static void test_bad_arguments_return_einval(void)
{
	struct kva_geometry g;
	struct kva_attn *a = make(KVA_ISA_SCALAR, 1, 0);
	struct kva_attn_seq s = { NULL, 0 };
	struct kva_prefill_seq ps = { NULL, 1, 2, 0 };
	float q[128], out[128];
	struct kva_attn_params p = {
		.geom = &g, .layer = 0, .q_heads = 3, .scale = 1.0f,
	};
	bool ok = a && geom(&g, 1, 2, 64, KVA_DTYPE_BF16, 1 << 16) == 0;

	ok &= kva_attn_decode(a, &p, &s, 1, q, out) == -EINVAL; /* 3 % 2 */
	p.q_heads = 2;
	p.layer = 1;
	ok &= kva_attn_decode(a, &p, &s, 1, q, out) == -EINVAL;
	p.layer = 0;
	p.scale = NAN;
	ok &= kva_attn_decode(a, &p, &s, 1, q, out) == -EINVAL;
	p.scale = 1.0f;
	ok &= kva_attn_decode(a, &p, NULL, 1, q, out) == -EINVAL;
	ok &= kva_attn_prefill(a, &p, &ps, 1, q, out) == -EINVAL;
	ok &= kva_attn_prefill_ref(&p, &ps, 1, q, out) == -EINVAL;
	/* q/out of fp8, scales for a cache that has none */
	p.qo_dtype = KVA_DTYPE_FP8;
	ok &= kva_attn_decode(a, &p, &s, 1, q, out) == -EINVAL;
	p.qo_dtype = KVA_DTYPE_FP32;
	p.kv_scale = out;
	ok &= kva_attn_decode(a, &p, &s, 1, q, out) == -EINVAL;
	ok &= kva_kv_append_scaled(&g, 0, out, 0, 1, KVA_DTYPE_FP32, q, q,
				   out) == -EINVAL;
	p.kv_scale = NULL;
	ok &= kva_kv_append(&g, 0, out, 0, 1, KVA_DTYPE_FP8, q, q) == -EINVAL;
	/* fp8: a scale that is not finite, or 0 for the writer */
	ok &= geom(&g, 1, 2, 64, KVA_DTYPE_FP8, 1 << 16) == 0;
	{
		float sc[4] = { 1.0f, NAN, 1.0f, 1.0f };

		p.kv_scale = sc;
		ok &= kva_attn_decode(a, &p, &s, 1, q, out) == -EINVAL;
		ok &= kva_kv_append_scaled(&g, 0, out, 0, 1, KVA_DTYPE_FP32, q,
					   q, sc) == -EINVAL;
		sc[1] = 0.0f;
		ok &= kva_kv_append_scaled(&g, 0, out, 0, 1, KVA_DTYPE_FP32, q,
					   q, sc) == -EINVAL;
		p.kv_scale = NULL;
	}
	ok &= geom(&g, 1, 2, 64, KVA_DTYPE_BF16, 1 << 16) == 0;
	/* zero tokens: zero output, no read of base */
	memset(out, 0x7f, sizeof(out));
	ok &= kva_attn_decode(a, &p, &s, 1, q, out) == 0;
	for (int i = 0; i < 128; i++)
		ok &= out[i] == 0.0f;
	report(ok, "bad_arguments_return_einval_and_empty_sequence_gives_zero");
	kva_attn_destroy(a);
}

static void test_isa_names_parse_back(void)
{
	enum kva_isa isa;
	bool ok = true;

	for (int i = 0; i < KVA_ISA_COUNT; i++)
		ok &= kva_isa_parse(kva_isa_name(i), &isa) == 0 && (int)isa == i;
	ok &= kva_isa_parse("sse9", &isa) == -EINVAL;
	report(ok, "isa_names_parse_back");
}

int main(int argc, char **argv)
{
	bool any = false;

	for (int i = 1; i < argc; i++) {
		enum kva_isa isa;

		if (!strcmp(argv[i], "--quick")) {
			quick = true;
		} else if (!strcmp(argv[i], "--isa") && i + 1 < argc &&
			   !kva_isa_parse(argv[++i], &isa) &&
			   isa != KVA_ISA_AUTO) {
			isa_on[isa] = any = true;
		} else {
			fprintf(stderr, "usage: %s [--isa scalar|avx2|avx512]... [--quick]\n",
				argv[0]);
			return 2;
		}
	}
	if (!any)
		for (int i = KVA_ISA_SCALAR; i < KVA_ISA_COUNT; i++)
			isa_on[i] = true;

	printf("KTAP version 1\n");
	test_fp16_widen_matches_hardware_for_every_value();
	test_fp16_narrow_rounds_like_hardware();
	test_bf16_roundtrip_and_ties_to_even();
	test_fp16_edges();
	test_e4m3_widen_is_exact_for_every_code();
	test_e4m3_narrow_is_nearest_even_and_saturates();
	test_e4m3_bf16_table_matches_conversion();
	test_online_softmax_and_merge_match_two_pass();
	test_merge_with_empty_partial_is_identity();
	test_walk_matches_kva_kv_offset();
	test_append_writes_only_its_rows();
	test_bad_arguments_return_einval();
	test_cuda_decode_pieces_cover_any_length_within_the_plan();
	test_cuda_grid_holds_batches_beyond_65535();
	test_cuda_split_combine_matches_the_chain_of_merges();
	test_isa_names_parse_back();
	for (int i = KVA_ISA_SCALAR; i < KVA_ISA_COUNT; i++) {
		if (!isa_on[i])
			continue;
		if (!kva_isa_supported(i)) {
			printf("# SKIP %s: not supported by this CPU\n",
			       kva_isa_name(i));
			continue;
		}
		attention_tests(i);
		isa_extra_tests(i);
	}
	printf("1..%d\n# %d failed\n", nr_tests, nr_failed);
	return nr_failed ? 1 : 0;
}
