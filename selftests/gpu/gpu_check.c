// SPDX-License-Identifier: MIT
/*
 * gpu_check.c - every CUDA kernel against the CPU reference, then decode
 * bandwidth against the card's own device-to-device copy bandwidth.
 *
 *   gpu_check [--probe | --check-only [GROUP] | --bench-only]
 *
 * GROUP is fp32, fp16, bf16 or fp8 (that KV dtype's checks) or other (the
 * big batch and fp8 against an fp32 cache): run.sh runs each group in its
 * own process, so that a CUDA error, which ends the process that met it
 * (its context is lost), costs only that group's checks.  A CUDA error
 * prints {"kind":"error","call":...,"error":...,"where":...} first.
 *
 * The check part prints KTAP, and after each result the same as one JSON
 * object ({"kind":"check",...}) for selftests/gpu/run.sh to collect.
 * Tolerances, absolute, with q, K, V uniform in [-1, 1) (so |out| < 1):
 *
 *   decode, every dtype         5e-5   fp32 arithmetic, as on the CPU
 *                                      (fp8 widened exactly)
 *   prefill, fp32 cache         5e-5   fp32 arithmetic
 *   prefill, fp16, fp8 cache    2e-3   q and P rounded to fp16 (2^-11);
 *                                      fp8 is staged as fp16, exactly
 *   prefill, bf16 cache         1.6e-2 q and P rounded to bf16 (2^-8)
 *   q and out in fp16/bf16      the above, plus one unit in the last
 *                               place of the output's dtype
 *   fp8 against an fp32 cache   the CPU's bounds (FP8_Q_MAX, FP8_Q_RMS,
 *                               selftests/kernels/test_attn.c)
 *
 * Besides the shapes (head_dim 64, 128, 256; 1, 2, 3, 4, 8 and 16 query
 * heads per KV head; lengths around a frame boundary, ragged batches),
 * the defects fixed before the first GPU run each have a check: a
 * sequence longer than the decode plan's max_tokens (the output was left
 * unwritten and the workspace's tickets poisoned), a batch of more than
 * 65535 sequences (grid.z), fp8 append bytes equal to the CPU's.
 *
 * The bench part prints one JSON object per line: "copy" (read + written
 * bytes over time, as cudaMemcpy device to device), then "decode" cases
 * for Llama-3-8B geometry with bf16 and fp8 KV (and 64 query heads per 8
 * KV heads, Llama-3-70B's group of 8), each with kv_gbs (K and V bytes
 * read over time), ratio = kv_gbs / copy_gbs and tokens_per_s (batch over
 * a 32-layer step; vs_bf16 beside it for fp8), then "prefill" GFLOP/s.
 * Each case cycles through enough layers to read at least 1 GiB per pass,
 * far more than the L2, and times 20 passes with events (best pass).
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_split.h"
#include "fixture.h"
#include "kvattn_cuda.h"
#include "tile_math.h"

/* As selftests/kernels/test_attn.c: fp8 against an fp32 cache. */
#define FP8_Q_MAX	0.045f
#define FP8_Q_RMS	0.012f

static int nr_tests, nr_failed;

#define CK(call) do {							\
	cudaError_t e_ = (call);					\
	if (e_ != cudaSuccess)						\
		cuda_failed(#call, e_, __FILE__, __LINE__);		\
} while (0)

/* A CUDA error leaves the context unusable: say so as JSON, and end. */
static void __attribute__((noreturn))
cuda_failed(const char *call, cudaError_t e, const char *file, int line)
{
	fprintf(stderr, "%s:%d: %s: %s\n", file, line, call,
		cudaGetErrorString(e));
	printf("{\"kind\":\"error\",\"call\":\"");
	for (; *call; call++)
		putchar(*call == '"' || *call == '\\' ? '\'' : *call);
	printf("\",\"error\":\"%s\",\"code\":%d,\"where\":\"%s:%d\"}\n",
	       cudaGetErrorString(e), (int)e, file, line);
	fflush(stdout);
	exit(1);
}

/* A KTAP line, then the same as JSON: {"kind":"check",...}. */
static void report(bool ok, double err, const char *fmt, ...)
{
	char name[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	nr_tests++;
	nr_failed += !ok;
	printf("%s %d %s # err %.2g\n", ok ? "ok" : "not ok", nr_tests, name,
	       err);
	printf("{\"kind\":\"check\",\"name\":\"%s\",\"ok\":%s,\"err\":%.3g}\n",
	       name, ok ? "true" : "false", isfinite(err) ? err : -1.0);
	fflush(stdout);
}

static float max_err(const float *a, const float *b, size_t n)
{
	float e = 0.0f;

	for (size_t i = 0; i < n; i++) {
		float d = fabsf(a[i] - b[i]);

		if (isnan(d))
			return INFINITY;
		e = d > e ? d : e;
	}
	return e;
}

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

static void *upload(const void *src, size_t bytes)
{
	void *d;

	CK(cudaMalloc(&d, bytes ? bytes : 16));
	if (bytes)
		CK(cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice));
	return d;
}

/* ---- checks ------------------------------------------------------------- */

#define MAX_KV_HEADS 4

struct shape {
	uint32_t kv_heads, group, head_dim;
	enum kva_dtype dtype;
	uint32_t tpf;
	float kscale;
	uint32_t qo;			/* dtype of q and out */
};

static uint64_t frame_for(const struct shape *s)
{
	/* 2 layers; 64 spare bytes keep the frame 16-byte aligned */
	return (uint64_t)s->tpf * 2 * 2 * s->kv_heads * s->head_dim *
	       kva_dtype_size(s->dtype) + 64;
}

/* Per-head fp8 scales as the CPU tests choose them; NULL for others. */
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

static float prefill_tol(enum kva_dtype dt)
{
	return dt == KVA_DTYPE_BF16 ? 1.6e-2f :
	       dt == KVA_DTYPE_FP16 || dt == KVA_DTYPE_FP8 ? 2e-3f : 5e-5f;
}

/* q as the shape's qo dtype: @q rounded in place, and its bytes. */
static void *q_bytes(const struct shape *sh, float *q, size_t n, size_t *bytes)
{
	size_t esz = kva_dtype_size((enum kva_dtype)sh->qo);
	uint8_t *b = malloc(n * esz);

	for (size_t i = 0; b && i < n; i++) {
		kva_elem_from_f32(b, 0, sh->qo, q[i]);
		q[i] = kva_elem_to_f32(b, 0, sh->qo);
		memcpy(b + i * esz, b, esz);
	}
	*bytes = n * esz;
	return b;
}

/* out (the shape's qo dtype) on the device, back as floats. */
static void out_floats(const struct shape *sh, const void *dout, float *out,
		       size_t n)
{
	size_t esz = kva_dtype_size((enum kva_dtype)sh->qo);
	uint8_t *b = malloc(n * esz);

	CK(cudaMemcpy(b, dout, n * esz, cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < n; i++)
		out[i] = kva_elem_to_f32(b + i * esz, 0, sh->qo);
	free(b);
}

/* Tolerance @tol plus one unit in the last place of the qo dtype. */
static bool within(const struct shape *sh, const float *out,
		   const float *ref, size_t n, float tol, float *err)
{
	float rel = sh->qo == KVA_DTYPE_BF16 ? 0x1p-7f :
		    sh->qo == KVA_DTYPE_FP16 ? 0x1p-10f : 0.0f;
	bool ok = true;

	*err = max_err(out, ref, n);
	for (size_t i = 0; i < n; i++) {
		float d = fabsf(out[i] - ref[i]);

		ok &= !isnan(d) && d <= tol + rel * fabsf(ref[i]) * 1.01f;
	}
	return ok;
}

/*
 * Decode of a ragged batch against the reference, twice on one workspace
 * (the second run checks the workspace was left ready).  A plan for
 * @plan_tokens (0: the longest sequence) below the longest sequence is a
 * sequence the plan was not cut for.
 */
static void check_decode(const struct shape *sh, const uint64_t *lens,
			 uint32_t nr, uint64_t plan_tokens, const char *name)
{
	struct kva_geometry g;
	struct fx_rng rng = { 17 + lens[0] + sh->group };
	struct fx_seq *fs = calloc(nr, sizeof(*fs));
	struct kva_attn_seq *hseq = calloc(nr, sizeof(*hseq));
	struct kva_attn_seq *dseq = calloc(nr, sizeof(*dseq));
	uint32_t qh = sh->kv_heads * sh->group;
	size_t n = (size_t)nr * qh * sh->head_dim, qb;
	float *q, *ref = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
	float err = INFINITY, err2 = INFINITY, sbuf[2 * MAX_KV_HEADS], *dks = NULL;
	const float *ks = scales_for(sh, sbuf);
	struct kva_cuda_decode_plan plan = { 0 };
	struct kva_attn_seq *dseqs;
	uint64_t max_tokens = 1;
	void *ws, *dq, *dout, *qhost;
	bool ok;

	geom(&g, 2, sh->kv_heads, sh->head_dim, sh->dtype, frame_for(sh));
	for (uint32_t i = 0; i < nr; i++) {
		fx_seq_fill_scaled(&fs[i], &g, lens[i], sh->kscale, &rng, ks);
		hseq[i].base = fs[i].mem;
		hseq[i].tokens = lens[i];
		dseq[i].base = upload(fs[i].mem, fs[i].bytes);
		dseq[i].tokens = lens[i];
		if (lens[i] > max_tokens)
			max_tokens = lens[i];
	}
	q = fx_randf(n, &rng);
	qhost = q_bytes(sh, q, n, &qb);
	if (ks)
		dks = upload(ks, 2 * sh->kv_heads * sizeof(float));
	struct kva_attn_params p = {
		.geom = &g, .layer = 1, .q_heads = qh,
		.scale = 1.0f / sqrtf((float)sh->head_dim), .kv_scale = ks,
	};

	kva_attn_decode_ref(&p, hseq, nr, q, ref);
	p.qo_dtype = sh->qo;
	p.kv_scale = dks;
	dseqs = upload(dseq, nr * sizeof(*dseq));
	dq = upload(qhost, qb);
	CK(cudaMalloc(&dout, qb));
	ok = kva_cuda_decode_plan(&p, nr, plan_tokens ? plan_tokens : max_tokens,
				  &plan) == 0;
	CK(cudaMalloc(&ws, ok ? plan.workspace_bytes : 16));
	CK(cudaMemset(ws, 0, ok ? plan.workspace_bytes : 16));
	for (int run = 0; ok && run < 2; run++) {
		CK(cudaMemset(dout, 0xff, qb));
		ok = kva_cuda_attn_decode(&p, &plan, dseqs, nr, dq, dout, ws,
					  NULL) == 0;
		CK(cudaDeviceSynchronize());
		out_floats(sh, dout, out, n);
		ok = ok && within(sh, out, ref, n, 5e-5f, run ? &err2 : &err);
	}
	report(ok, fmaxf(err, err2),
	       "cuda_decode_matches_reference_%s_q%s_d%u_g%u_%s_splits%u",
	       kva_dtype_name(sh->dtype), kva_dtype_name(sh->qo),
	       sh->head_dim, sh->group, name, plan.splits);
	for (uint32_t i = 0; i < nr; i++) {
		fx_seq_free(&fs[i]);
		cudaFree((void *)dseq[i].base);
	}
	cudaFree(dseqs);
	cudaFree(dq);
	cudaFree(dout);
	cudaFree(ws);
	cudaFree(dks);
	free(qhost);
	free(q);
	free(ref);
	free(out);
	free(fs);
	free(hseq);
	free(dseq);
}

static void check_prefill(const struct shape *sh, const uint64_t *prefix,
			  const uint32_t *chunk, uint32_t nr, const char *name)
{
	struct kva_geometry g;
	struct fx_rng rng = { 29 + prefix[0] + chunk[0] + sh->group };
	struct fx_seq fs[8];
	struct kva_prefill_seq hseq[8], dseq[8];
	uint32_t qh = sh->kv_heads * sh->group, rows = 0, max_q = 0;
	float *q, *ref, *out, err = INFINITY, sbuf[2 * MAX_KV_HEADS];
	float *dks = NULL;
	const float *ks = scales_for(sh, sbuf);
	struct kva_prefill_seq *dseqs;
	void *dq, *dout, *qhost;
	size_t n, qb;
	bool ok;

	geom(&g, 2, sh->kv_heads, sh->head_dim, sh->dtype, frame_for(sh));
	for (uint32_t i = 0; i < nr; i++) {
		fx_seq_fill_scaled(&fs[i], &g, prefix[i] + chunk[i], sh->kscale,
				   &rng, ks);
		hseq[i].base = fs[i].mem;
		hseq[i].tokens = prefix[i] + chunk[i];
		hseq[i].q_tokens = chunk[i];
		hseq[i].q_start = rows;
		dseq[i] = hseq[i];
		dseq[i].base = upload(fs[i].mem, fs[i].bytes);
		rows += chunk[i];
		if (chunk[i] > max_q)
			max_q = chunk[i];
	}
	n = (size_t)rows * qh * sh->head_dim;
	q = fx_randf(n, &rng);
	qhost = q_bytes(sh, q, n, &qb);
	ref = malloc(n * sizeof(float));
	out = malloc(n * sizeof(float));
	if (ks)
		dks = upload(ks, 2 * sh->kv_heads * sizeof(float));
	struct kva_attn_params p = {
		.geom = &g, .layer = 0, .q_heads = qh,
		.scale = 1.0f / sqrtf((float)sh->head_dim), .kv_scale = ks,
	};

	kva_attn_prefill_ref(&p, hseq, nr, q, ref);
	p.qo_dtype = sh->qo;
	p.kv_scale = dks;
	dseqs = upload(dseq, nr * sizeof(*dseq));
	dq = upload(qhost, qb);
	CK(cudaMalloc(&dout, qb));
	CK(cudaMemset(dout, 0xff, qb));
	ok = kva_cuda_attn_prefill(&p, dseqs, nr, max_q, dq, dout, NULL) == 0;
	CK(cudaDeviceSynchronize());
	out_floats(sh, dout, out, n);
	ok = ok && within(sh, out, ref, n, prefill_tol(sh->dtype), &err);
	report(ok, err, "cuda_prefill_matches_reference_%s_q%s_d%u_g%u_%s",
	       kva_dtype_name(sh->dtype), kva_dtype_name(sh->qo),
	       sh->head_dim, sh->group, name);
	for (uint32_t i = 0; i < nr; i++) {
		fx_seq_free(&fs[i]);
		cudaFree((void *)dseq[i].base);
	}
	cudaFree(dseqs);
	cudaFree(dq);
	cudaFree(dout);
	cudaFree(dks);
	free(qhost);
	free(q);
	free(ref);
	free(out);
}

/* Append from @src into a cache of @dt: the bytes the CPU writes. */
static void check_append(enum kva_dtype dt, enum kva_dtype src)
{
	struct kva_geometry g;
	struct fx_rng rng = { 5 };
	float ks[4] = { 0.5f / 448, 1.0f / 448, 0.75f / 448, 2.0f / 448 };
	const float *kvs = dt == KVA_DTYPE_FP8 ? ks : NULL;
	size_t bytes, sn = 40 * 2 * 64, ssz = kva_dtype_size(src);
	uint8_t *host, *back, *k, *v;
	void *dev, *dk, *dv, *dks = NULL;
	bool ok;

	geom(&g, 3, 2, 64, dt, 1 << 16);
	bytes = 4 * g.frame_size;
	host = malloc(bytes);
	back = malloc(bytes);
	k = malloc(sn * ssz);
	v = malloc(sn * ssz);
	memset(host, 0xab, bytes);
	for (size_t i = 0; i < sn; i++) {
		kva_elem_from_f32(k, (uint32_t)i, src, fx_unit(&rng));
		kva_elem_from_f32(v, (uint32_t)i, src, fx_unit(&rng));
	}
	dev = upload(host, bytes);
	dk = upload(k, sn * ssz);
	dv = upload(v, sn * ssz);
	if (kvs)
		dks = upload(kvs, sizeof(ks));
	/* 40 tokens from position T_f - 3: across a frame boundary */
	kva_kv_append_scaled(&g, 1, host, g.tokens_per_frame - 3, 40, src, k,
			     v, kvs);
	ok = kva_cuda_kv_append_scaled(&g, 1, dev, g.tokens_per_frame - 3, 40,
				       src, dk, dv, dks, NULL) == 0;
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(back, dev, bytes, cudaMemcpyDeviceToHost));
	ok = ok && !memcmp(host, back, bytes);
	report(ok, 0, "cuda_append_writes_the_bytes_the_cpu_writes_%s_from_%s",
	       kva_dtype_name(dt), kva_dtype_name(src));
	cudaFree(dev);
	cudaFree(dk);
	cudaFree(dv);
	cudaFree(dks);
	free(host);
	free(back);
	free(k);
	free(v);
}

/*
 * More sequences than grid.z holds (65535): 70000 of 0 to 4 tokens, all
 * in one arena of frames of one token's worth each, against the
 * reference; decode and prefill.
 */
static void check_big_batch(void)
{
	const uint32_t nr = 70000, qh = 2, D = 64;
	struct shape sh = { .kv_heads = 1, .group = 2, .head_dim = D,
			    .dtype = KVA_DTYPE_BF16, .tpf = 4, .kscale = 1 };
	struct kva_geometry g;
	struct fx_rng rng = { 99 };
	struct kva_attn_seq *hs = calloc(nr, sizeof(*hs)), *ds = calloc(nr, sizeof(*ds));
	struct kva_prefill_seq *hp = calloc(nr, sizeof(*hp)), *dp = calloc(nr, sizeof(*dp));
	size_t n = (size_t)nr * qh * D, per;
	float *q = fx_randf(n, &rng), *ref = malloc(n * sizeof(float));
	float *out = malloc(n * sizeof(float)), err = INFINITY;
	struct kva_cuda_decode_plan plan;
	uint8_t *mem, *dmem;
	void *dq, *dout, *ws, *dsq, *dpq;
	uint32_t rows = 0;
	bool ok;

	geom(&g, 1, 1, D, KVA_DTYPE_BF16, frame_for(&sh));
	per = kva_frames_for(&g, 4) * g.frame_size;
	mem = malloc(per * nr);
	for (size_t i = 0; i < per * nr / 2; i++)
		((uint16_t *)mem)[i] = kva_f32_to_bf16(fx_unit(&rng));
	dmem = upload(mem, per * nr);
	for (uint32_t i = 0; i < nr; i++) {
		hs[i] = (struct kva_attn_seq){ mem + per * i, i % 5 };
		ds[i] = (struct kva_attn_seq){ dmem + per * i, i % 5 };
		hp[i] = (struct kva_prefill_seq){ mem + per * i, 1 + i % 4, 1,
						  rows };
		dp[i] = hp[i];
		dp[i].base = dmem + per * i;
		rows++;
	}
	struct kva_attn_params p = {
		.geom = &g, .layer = 0, .q_heads = qh, .scale = 0.125f,
	};
	kva_attn_decode_ref(&p, hs, nr, q, ref);
	dsq = upload(ds, nr * sizeof(*ds));
	dq = upload(q, n * sizeof(float));
	CK(cudaMalloc(&dout, n * sizeof(float)));
	CK(cudaMemset(dout, 0xff, n * sizeof(float)));
	ok = kva_cuda_decode_plan(&p, nr, 4, &plan) == 0;
	CK(cudaMalloc(&ws, ok ? plan.workspace_bytes : 16));
	CK(cudaMemset(ws, 0, ok ? plan.workspace_bytes : 16));
	ok = ok && kva_cuda_attn_decode(&p, &plan, dsq, nr, dq, dout, ws,
					NULL) == 0;
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(out, dout, n * sizeof(float), cudaMemcpyDeviceToHost));
	err = max_err(out, ref, n);
	report(ok && err <= 5e-5f, err,
	       "cuda_decode_of_70000_sequences_writes_every_output");

	kva_attn_prefill_ref(&p, hp, nr, q, ref);
	dpq = upload(dp, nr * sizeof(*dp));
	CK(cudaMemset(dout, 0xff, n * sizeof(float)));
	ok = kva_cuda_attn_prefill(&p, dpq, nr, 1, dq, dout, NULL) == 0;
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(out, dout, n * sizeof(float), cudaMemcpyDeviceToHost));
	err = max_err(out, ref, n);
	report(ok && err <= prefill_tol(KVA_DTYPE_BF16), err,
	       "cuda_prefill_of_70000_sequences_writes_every_output");
	cudaFree(dmem);
	cudaFree(dsq);
	cudaFree(dpq);
	cudaFree(dq);
	cudaFree(dout);
	cudaFree(ws);
	free(mem);
	free(hs);
	free(ds);
	free(hp);
	free(dp);
	free(q);
	free(ref);
	free(out);
}

/*
 * What fp8 costs on the device: the same K and V in an fp32 and an fp8
 * cache (per-head scales of the largest magnitude / 448), the reference
 * over the first against the kernels over the second.
 */
static void check_fp8_vs_fp32(bool decode)
{
	static const uint32_t lens[] = { 1, 16, 300, 2000 };
	const uint32_t D = 128, H = 2, qh = 8;
	struct kva_geometry g32, g8;
	struct fx_rng rng = { 2024 };
	float max = 0.0f;
	double sq = 0.0;
	size_t cnt = 0;
	bool ok = geom(&g32, 1, H, D, KVA_DTYPE_FP32, 1 << 20) == 0 &&
		  geom(&g8, 1, H, D, KVA_DTYPE_FP8, 1 << 18) == 0;

	for (uint32_t li = 0; ok && li < 4; li++) {
		uint32_t T = lens[li], rows = decode ? 1 : (T < 64 ? T : 64);
		size_t kvn = (size_t)T * H * D, qn = (size_t)rows * qh * D;
		size_t b32 = kva_frames_for(&g32, T) * g32.frame_size;
		size_t b8 = kva_frames_for(&g8, T) * g8.frame_size;
		float *k = fx_randf(kvn, &rng), *v = fx_randf(kvn, &rng);
		float *q = fx_randf(qn, &rng), kvs[4];
		float *out = malloc(qn * sizeof(float)), *ref = malloc(qn * sizeof(float));
		uint8_t *m32 = calloc(1, b32), *m8 = calloc(1, b8);
		void *d8, *dq, *dout, *dks, *dsq;

		for (uint32_t i = 0; i < 2 * H; i++) {
			const float *x = i < H ? k : v;
			float amax = 0.0f;

			for (size_t t = 0; t < T; t++)
				for (uint32_t d = 0; d < D; d++)
					amax = fmaxf(amax, fabsf(x[(t * H +
						i % H) * D + d]));
			kvs[i] = amax / 448.0f;
		}
		kva_kv_append(&g32, 0, m32, 0, T, KVA_DTYPE_FP32, k, v);
		kva_kv_append_scaled(&g8, 0, m8, 0, T, KVA_DTYPE_FP32, k, v, kvs);
		d8 = upload(m8, b8);
		dq = upload(q, qn * sizeof(float));
		dks = upload(kvs, sizeof(kvs));
		CK(cudaMalloc(&dout, qn * sizeof(float)));
		struct kva_attn_params p32 = {
			.geom = &g32, .layer = 0, .q_heads = qh,
			.scale = 1.0f / sqrtf((float)D),
		};
		struct kva_attn_params p8 = p32;

		p8.geom = &g8;
		p8.kv_scale = dks;
		if (decode) {
			struct kva_attn_seq s32 = { m32, T }, s8 = { d8, T };
			struct kva_cuda_decode_plan plan;
			void *ws;

			kva_attn_decode_ref(&p32, &s32, 1, q, ref);
			dsq = upload(&s8, sizeof(s8));
			ok = kva_cuda_decode_plan(&p8, 1, T, &plan) == 0;
			CK(cudaMalloc(&ws, ok ? plan.workspace_bytes : 16));
			CK(cudaMemset(ws, 0, ok ? plan.workspace_bytes : 16));
			ok = ok && kva_cuda_attn_decode(&p8, &plan, dsq, 1, dq,
							dout, ws, NULL) == 0;
			CK(cudaDeviceSynchronize());
			cudaFree(ws);
		} else {
			struct kva_prefill_seq s32 = { m32, T, rows, 0 };
			struct kva_prefill_seq s8 = { d8, T, rows, 0 };

			kva_attn_prefill_ref(&p32, &s32, 1, q, ref);
			dsq = upload(&s8, sizeof(s8));
			ok = kva_cuda_attn_prefill(&p8, dsq, 1, rows, dq, dout,
						   NULL) == 0;
			CK(cudaDeviceSynchronize());
		}
		CK(cudaMemcpy(out, dout, qn * sizeof(float),
			      cudaMemcpyDeviceToHost));
		for (size_t i = 0; i < qn; i++) {
			float d = fabsf(out[i] - ref[i]);

			max = fmaxf(max, isnan(d) ? INFINITY : d);
			sq += (double)d * d;
			cnt++;
		}
		cudaFree(d8);
		cudaFree(dq);
		cudaFree(dks);
		cudaFree(dout);
		cudaFree(dsq);
		free(m32);
		free(m8);
		free(k);
		free(v);
		free(q);
		free(out);
		free(ref);
	}
	ok = ok && max <= FP8_Q_MAX && sqrt(sq / cnt) <= FP8_Q_RMS;
	report(ok, max, "cuda_fp8_%s_against_fp32_cache_within_bounds_rms_%.3g",
	       decode ? "decode" : "prefill", cnt ? sqrt(sq / cnt) : 0.0);
}

static const enum kva_dtype check_dts[] = {
	KVA_DTYPE_FP32, KVA_DTYPE_FP16, KVA_DTYPE_BF16, KVA_DTYPE_FP8,
};

/* The checks of group @only (NULL: every group); false if none is. */
static bool checks(const char *only)
{
	static const enum kva_dtype *const dts = check_dts;
	static const uint32_t groups[] = { 1, 2, 3, 4, 8, 16 };
	bool any = !only;

	for (int di = 0; di < 4; di++) {
		if (only && strcmp(only, kva_dtype_name(dts[di])))
			continue;
		any = true;
		check_append(dts[di], KVA_DTYPE_FP32);
		if (dts[di] == KVA_DTYPE_FP8) {
			check_append(dts[di], KVA_DTYPE_BF16);
			check_append(dts[di], KVA_DTYPE_FP16);
		}
		for (uint32_t hd = 64; hd <= 256; hd *= 2)
			for (int gi = 0; gi < 6; gi++) {
				struct shape sh = {
					.kv_heads = 2, .group = groups[gi],
					.head_dim = hd, .dtype = dts[di],
					.tpf = 16, .kscale = 1.0f,
				};
				uint64_t lens[] = { 1, 15, 16, 17, 300 };
				uint64_t ragged[] = { 17, 0, 1, 1000, 16, 3 };
				uint64_t pre[] = { 0, 15, 37, 0 };
				uint32_t chk[] = { 17, 1, 70, 100 };
				static const char *const ln[] = {
					"len_1", "len_tf_minus_1", "len_tf",
					"len_tf_plus_1", "len_300",
				};

				for (int li = 0; li < 5; li++)
					check_decode(&sh, &lens[li], 1, 0, ln[li]);
				check_decode(&sh, ragged, 6, 0, "ragged");
				check_prefill(&sh, &pre[0], &chk[0], 1,
					      "chunk_tf_plus_1_no_prefix");
				check_prefill(&sh, &pre[1], &chk[1], 1,
					      "chunk_1_after_tf_minus_1");
				check_prefill(&sh, pre, chk, 4, "ragged");
			}
		{
			struct shape sh = {
				.kv_heads = 2, .group = 4, .head_dim = 128,
				.dtype = dts[di], .tpf = 16, .kscale = 2.0f,
			};
			uint64_t lens[] = { 8195, 9000 }, pre = 8200;
			uint32_t chk = 64;

			check_decode(&sh, lens, 2, 0, "long");
			/* a plan cut for 300 tokens, sequences of 9000 */
			check_decode(&sh, lens, 2, 300,
				     "longer_than_the_plan");
			check_prefill(&sh, &pre, &chk, 1, "chunk_64_after_8200");
			/* q and out in fp16 and bf16 */
			for (uint32_t qo = KVA_DTYPE_FP16; qo <= KVA_DTYPE_BF16;
			     qo++) {
				uint64_t ragged[] = { 17, 0, 300 };
				uint64_t pp[] = { 0, 15 };
				uint32_t pc[] = { 17, 40 };

				sh.qo = qo;
				check_decode(&sh, ragged, 3, 0, "ragged");
				check_prefill(&sh, pp, pc, 2, "ragged");
			}
		}
	}
	if (only && strcmp(only, "other"))
		return any;
	check_big_batch();
	check_fp8_vs_fp32(true);
	check_fp8_vs_fp32(false);
	return true;
}

/* ---- bandwidth ------------------------------------------------------------ */

static double copy_gbs(void)
{
	size_t bytes = 2ull << 30;
	cudaEvent_t a, b;
	float ms, best = INFINITY;
	void *x, *y;

	CK(cudaMalloc(&x, bytes));
	CK(cudaMalloc(&y, bytes));
	CK(cudaMemset(x, 1, bytes));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	for (int i = 0; i < 12; i++) {
		CK(cudaEventRecord(a, 0));
		CK(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, 0));
		CK(cudaEventRecord(b, 0));
		CK(cudaEventSynchronize(b));
		CK(cudaEventElapsedTime(&ms, a, b));
		if (i >= 2 && ms < best)
			best = ms;
	}
	cudaFree(x);
	cudaFree(y);
	cudaEventDestroy(a);
	cudaEventDestroy(b);
	return 2.0 * bytes / (best * 1e-3) / 1e9;
}

/* Llama-3-8B's KV: 32 layers, 8 KV heads, head_dim 128, 2 MiB frames. */
static void llama(struct kva_geometry *g, enum kva_dtype dt)
{
	geom(g, 32, 8, 128, dt, 2u << 20);
}

/*
 * Decode of @batch sequences of @tokens, @q_heads query heads (32: the
 * group of 4 of Llama-3-8B; 64: the group of 8 of Llama-3-70B), KV of
 * @dt.  Returns tokens per second (batch over a 32-layer step); @bf16_tps
 * (if > 0) is the bf16 case's, for vs_bf16.
 */
static double bench_decode(uint64_t tokens, uint32_t batch, uint32_t q_heads,
			   enum kva_dtype dt, double copy, double bf16_tps)
{
	struct kva_geometry g;
	struct kva_cuda_decode_plan plan, old;
	struct kva_attn_seq *hs = calloc(batch, sizeof(*hs)), *ds;
	size_t seq_bytes, per_layer, n = (size_t)batch * q_heads * 128;
	uint32_t layers;
	uint8_t *mem;
	float *q, *out, ms, best = INFINITY, best_old = INFINITY;
	uint32_t group = q_heads / 8, gm, scale;
	int sms;
	void *ws;
	cudaEvent_t a, b;
	double gbs, tps;

	llama(&g, dt);
	seq_bytes = kva_frames_for(&g, tokens) * g.frame_size;
	per_layer = (size_t)batch * tokens * 2 * 8 * 128 * kva_dtype_size(dt);
	layers = (uint32_t)((1ull << 30) / per_layer);
	layers = layers < 1 ? 1 : layers > 32 ? 32 : layers;
	CK(cudaMalloc((void **)&mem, seq_bytes * batch));
	/* bf16 0x3c3c, e4m3 0x3c: finite values, no NaN */
	CK(cudaMemset(mem, 0x3c, seq_bytes * batch));
	for (uint32_t i = 0; i < batch; i++) {
		hs[i].base = mem + (size_t)i * seq_bytes;
		hs[i].tokens = tokens;
	}
	ds = upload(hs, batch * sizeof(*hs));
	CK(cudaMalloc((void **)&q, n * sizeof(float)));
	CK(cudaMemset(q, 0, n * sizeof(float)));
	CK(cudaMalloc((void **)&out, n * sizeof(float)));
	struct kva_attn_params p = {
		.geom = &g, .layer = 0, .q_heads = q_heads, .scale = 0.08838835f,
	};
	if (kva_cuda_decode_plan(&p, batch, tokens, &plan)) {
		fprintf(stderr, "decode plan failed\n");
		exit(1);
	}
	/*
	 * The plan as it was before the occupancy query, four blocks a
	 * multiprocessor whatever the kernel, run in alternate passes as the
	 * peer of the same run.  The workspace grows linearly with the
	 * pieces, so scaling it covers the old plan's.
	 */
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	gm = group <= 1 ? 1 : group <= 2 ? 2 : group <= 4 ? 4 : 8;
	old = plan;
	kva_split_plan(4ull * (uint32_t)sms,
		       (uint64_t)batch * 8 * ((group + gm - 1) / gm), tokens,
		       &old.splits, &old.split_tokens);
	scale = (old.splits + plan.splits - 1) / plan.splits;
	old.workspace_bytes = plan.workspace_bytes * (scale ? scale : 1);
	CK(cudaMalloc(&ws, old.workspace_bytes));
	CK(cudaMemset(ws, 0, old.workspace_bytes));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	for (int pass = 0; pass < 44; pass++) {
		const struct kva_cuda_decode_plan *pl = pass & 1 ? &old : &plan;

		CK(cudaEventRecord(a, 0));
		for (uint32_t l = 0; l < layers; l++) {
			p.layer = l;
			if (kva_cuda_attn_decode(&p, pl, ds, batch, q, out, ws,
						 NULL)) {
				fprintf(stderr, "decode: %s\n", cudaGetErrorString(
					(cudaError_t)kva_cuda_last_error()));
				exit(1);
			}
		}
		CK(cudaEventRecord(b, 0));
		CK(cudaEventSynchronize(b));
		CK(cudaEventElapsedTime(&ms, a, b));
		if (pass >= 4 && (pass & 1) && ms < best_old)
			best_old = ms;
		else if (pass >= 4 && !(pass & 1) && ms < best)
			best = ms;
	}
	gbs = (double)per_layer * layers / (best * 1e-3) / 1e9;
	tps = batch / (best * 1e-3 / layers * 32);
	printf("{\"kind\":\"decode\",\"tokens\":%llu,\"batch\":%u,"
	       "\"q_heads\":%u,\"dtype\":\"%s\",\"layers\":%u,"
	       "\"splits\":%u,\"us_per_layer\":%.2f,\"kv_gbs\":%.1f,"
	       "\"ratio\":%.3f,\"tokens_per_s\":%.1f",
	       (unsigned long long)tokens, batch, q_heads, kva_dtype_name(dt),
	       layers, plan.splits, best * 1e3 / layers, gbs, gbs / copy, tps);
	if (bf16_tps > 0)
		printf(",\"vs_bf16\":%.3f", tps / bf16_tps);
	/* > 1: the occupancy plan is faster than four a multiprocessor */
	printf(",\"splits_4_per_sm\":%u,\"vs_4_per_sm\":%.3f}\n", old.splits,
	       best_old / best);
	fflush(stdout);
	cudaFree(mem);
	cudaFree(ds);
	cudaFree(q);
	cudaFree(out);
	cudaFree(ws);
	cudaEventDestroy(a);
	cudaEventDestroy(b);
	free(hs);
	return tps;
}

static void bench_prefill(uint64_t tokens, uint32_t chunk, enum kva_dtype dt)
{
	struct kva_geometry g;
	struct kva_prefill_seq hs, *ds;
	size_t seq_bytes, n = (size_t)chunk * 32 * 128;
	uint8_t *mem;
	float *q, *out, ms, best = INFINITY;
	cudaEvent_t a, b;
	double flops;

	llama(&g, dt);
	seq_bytes = kva_frames_for(&g, tokens) * g.frame_size;
	CK(cudaMalloc((void **)&mem, seq_bytes));
	CK(cudaMemset(mem, 0x3c, seq_bytes));
	hs.base = mem;
	hs.tokens = tokens;
	hs.q_tokens = chunk;
	hs.q_start = 0;
	ds = upload(&hs, sizeof(hs));
	CK(cudaMalloc((void **)&q, n * sizeof(float)));
	CK(cudaMemset(q, 0, n * sizeof(float)));
	CK(cudaMalloc((void **)&out, n * sizeof(float)));
	struct kva_attn_params p = {
		.geom = &g, .layer = 0, .q_heads = 32, .scale = 0.08838835f,
	};
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	for (int pass = 0; pass < 7; pass++) {
		CK(cudaEventRecord(a, 0));
		if (kva_cuda_attn_prefill(&p, ds, 1, chunk, q, out, NULL)) {
			fprintf(stderr, "prefill failed\n");
			exit(1);
		}
		CK(cudaEventRecord(b, 0));
		CK(cudaEventSynchronize(b));
		CK(cudaEventElapsedTime(&ms, a, b));
		if (pass >= 2 && ms < best)
			best = ms;
	}
	flops = 4.0 * 128 * 32 * ((double)chunk * (tokens - chunk) +
				  (double)chunk * (chunk + 1) / 2);
	printf("{\"kind\":\"prefill\",\"tokens\":%llu,\"batch\":1,"
	       "\"q_tokens\":%u,\"dtype\":\"%s\",\"gflops\":%.1f}\n",
	       (unsigned long long)tokens, chunk, kva_dtype_name(dt),
	       flops / (best * 1e-3) / 1e9);
	fflush(stdout);
	cudaFree(mem);
	cudaFree(ds);
	cudaFree(q);
	cudaFree(out);
	cudaEventDestroy(a);
	cudaEventDestroy(b);
}

static void bench(void)
{
	struct cudaDeviceProp prop;
	double copy;
	int dev;

	CK(cudaGetDevice(&dev));
	CK(cudaGetDeviceProperties(&prop, dev));
	copy = copy_gbs();
	printf("{\"kind\":\"copy\",\"device\":\"%s\",\"sms\":%d,"
	       "\"copy_gbs\":%.1f}\n", prop.name, prop.multiProcessorCount,
	       copy);
	fflush(stdout);
	static const uint64_t toks[] = { 1024, 8192, 32768 };
	static const uint32_t batches[] = { 1, 16 };

	for (int ti = 0; ti < 3; ti++)
		for (int bi = 0; bi < 2; bi++) {
			double bf = bench_decode(toks[ti], batches[bi], 32,
						 KVA_DTYPE_BF16, copy, 0);

			bench_decode(toks[ti], batches[bi], 32, KVA_DTYPE_FP8,
				     copy, bf);
		}
	/* Llama-3-70B's group of 8 query heads per KV head */
	bench_decode(8192, 16, 64, KVA_DTYPE_BF16, copy, 0);
	bench_prefill(1024, 1024, KVA_DTYPE_BF16);
	bench_prefill(8192, 1024, KVA_DTYPE_BF16);
	bench_prefill(8192, 1024, KVA_DTYPE_FP8);
}

/*
 * --probe: one JSON line naming device 0 (with its UUID, which names it
 * the same in every process whatever CUDA_VISIBLE_DEVICES says), or
 * "# no CUDA device: why" and 77.
 */
static int probe(void)
{
	struct cudaDeviceProp prop;
	cudaError_t err;
	int n = 0;

	/* cudart says "driver version is insufficient" when there is none */
	void *dl = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);

	if (!dl) {
		printf("# no CUDA device: no NVIDIA driver (libcuda.so.1 does not load)\n");
		return 77;
	}
	err = cudaGetDeviceCount(&n);
	if (err != cudaSuccess || n < 1) {
		printf("# no CUDA device: %s\n", err != cudaSuccess ?
		       cudaGetErrorString(err) : "the driver lists none");
		return 77;
	}
	CK(cudaGetDeviceProperties(&prop, 0));
	printf("{\"kind\":\"device\",\"name\":\"%s\",\"devices\":%d,"
	       "\"cc\":\"%d.%d\",\"sms\":%d,\"memory_gib\":%.1f,\"uuid\":\"",
	       prop.name, n, prop.major, prop.minor, prop.multiProcessorCount,
	       prop.totalGlobalMem / 1073741824.0);
	for (int i = 0; i < 16; i++)
		printf("%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "",
		       (unsigned char)prop.uuid.bytes[i]);
	printf("\"}\n");
	return 0;
}

static int usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--probe | --check-only [fp32|fp16|bf16|"
		"fp8|other] | --bench-only]\n", prog);
	return 2;
}

int main(int argc, char **argv)
{
	bool do_check = true, do_bench = true;
	const char *only = NULL;
	int n;

	if (argc > 1 && !strcmp(argv[1], "--probe"))
		return probe();
	if (argc > 1 && !strcmp(argv[1], "--check-only")) {
		do_bench = false;
		only = argc > 2 ? argv[2] : NULL;
		if (argc > 3)
			return usage(argv[0]);
	} else if (argc > 1 && !strcmp(argv[1], "--bench-only")) {
		do_check = false;
	} else if (argc > 1) {
		return usage(argv[0]);
	}
	if (only) {
		bool known = !strcmp(only, "other");

		for (int i = 0; i < 4; i++)
			known |= !strcmp(only, kva_dtype_name(check_dts[i]));
		if (!known)
			return usage(argv[0]);
	}
	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
		printf("# SKIP no CUDA device\n");
		return 77;
	}
	if (do_check) {
		printf("KTAP version 1\n");
		checks(only);
		printf("1..%d\n# %d failed\n", nr_tests, nr_failed);
	}
	if (do_bench)
		bench();
	return nr_failed ? 1 : 0;
}
