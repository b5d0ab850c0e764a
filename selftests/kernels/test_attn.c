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
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_internal.h"
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

static float tol_for(enum kva_dtype dt)
{
	switch (dt) {
	case KVA_DTYPE_FP32:
	case KVA_DTYPE_FP16:
	case KVA_DTYPE_BF16:
	default:
		return 2e-5f;
	}
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
	struct kva_seq *seqs = calloc(nr, sizeof(*seqs));
	uint32_t qh = sh->kv_heads * sh->group, layers = 2;
	size_t n = (size_t)nr * qh * sh->head_dim;
	float *q = NULL, *out = malloc(n * sizeof(float)),
	      *ref = malloc(n * sizeof(float)), err = INFINITY;
	struct kva_attn *a = make(isa, threads, split);
	bool ok = a && fs && seqs && out && ref;
	char buf[32];

	ok = ok && geom(&g, layers, sh->kv_heads, sh->head_dim, sh->dtype,
			sh->frame_size) == 0;
	for (uint32_t i = 0; ok && i < nr; i++) {
		ok = fx_seq_fill(&fs[i], &g, lens[i], sh->kscale, &rng) == 0;
		seqs[i].base = fs[i].mem;
		seqs[i].tokens = lens[i];
	}
	if (ok) {
		struct kva_attn_params p = {
			.geom = &g, .layer = 1, .q_heads = qh,
			.scale = 1.0f / sqrtf((float)sh->head_dim),
		};

		q = fx_randf(n, &rng);
		memset(out, 0x7f, n * sizeof(float));
		ok = q && kva_attn_decode(a, &p, seqs, nr, q, out) == 0 &&
		     kva_attn_decode_ref(&p, seqs, nr, q, ref) == 0;
		if (ok)
			err = max_err(out, ref, n);
		ok = ok && err <= tol_for(sh->dtype);
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
	size_t n;

	ok = ok && geom(&g, 2, sh->kv_heads, sh->head_dim, sh->dtype,
			sh->frame_size) == 0;
	for (uint32_t i = 0; ok && i < nr; i++) {
		ok = fx_seq_fill(&fs[i], &g, prefix[i] + chunk[i], sh->kscale,
				 &rng) == 0;
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
		ok = ok && err <= tol_for(sh->dtype);
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
		KVA_DTYPE_FP32, KVA_DTYPE_FP16, KVA_DTYPE_BF16,
	};
	static const uint32_t groups[] = { 1, 2, 3, 4, 8 };

	for (int di = 0; di < 3; di++) {
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

	for (int di = 0; di < 3; di++) {
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

static void test_bad_arguments_return_einval(void)
{
	struct kva_geometry g;
	struct kva_attn *a = make(KVA_ISA_SCALAR, 1, 0);
	struct kva_seq s = { NULL, 0 };
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
	test_online_softmax_and_merge_match_two_pass();
	test_merge_with_empty_partial_is_identity();
	test_walk_matches_kva_kv_offset();
	test_append_writes_only_its_rows();
	test_bad_arguments_return_einval();
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
	}
	printf("1..%d\n# %d failed\n", nr_tests, nr_failed);
	return nr_failed ? 1 : 0;
}
