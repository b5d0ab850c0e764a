// SPDX-License-Identifier: MIT
/*
 * gpu_check.c - every CUDA kernel against the CPU reference, then decode
 * bandwidth against the card's own device-to-device copy bandwidth.
 *
 *   gpu_check [--check-only | --bench-only]
 *
 * The check part prints KTAP.  Tolerances, absolute, with q, K, V uniform
 * in [-1, 1) (so |out| < 1):
 *
 *   decode, every dtype         5e-5   fp32 arithmetic, as on the CPU
 *   prefill, fp32 cache         5e-5   fp32 arithmetic
 *   prefill, fp16 cache         2e-3   q and P rounded to fp16 (2^-11)
 *   prefill, bf16 cache         1.6e-2 q and P rounded to bf16 (2^-8)
 *
 * The bench part prints one JSON object per line: "copy" (read + written
 * bytes over time, as cudaMemcpy device to device), then "decode" cases
 * for Llama-3-8B geometry with bf16 KV, each with kv_gbs (K and V bytes
 * read over time) and ratio = kv_gbs / copy_gbs, then "prefill" GFLOP/s.
 * Each case cycles through enough layers to read at least 1 GiB per pass,
 * far more than the L2, and times 20 passes with events (best pass).
 */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "kvattn_cuda.h"

static int nr_tests, nr_failed;

#define CK(call) do {							\
	cudaError_t e_ = (call);					\
	if (e_ != cudaSuccess) {					\
		fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__,	\
			#call, cudaGetErrorString(e_));			\
		exit(1);						\
	}								\
} while (0)

static void report(bool ok, const char *fmt, ...)
{
	va_list ap;

	nr_tests++;
	nr_failed += !ok;
	printf("%s %d ", ok ? "ok" : "not ok", nr_tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
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

struct shape {
	uint32_t kv_heads, group, head_dim;
	enum kva_dtype dtype;
	uint32_t tpf;
	float kscale;
};

static uint64_t frame_for(const struct shape *s)
{
	/* 2 layers; 64 spare bytes keep the frame 16-byte aligned */
	return (uint64_t)s->tpf * 2 * 2 * s->kv_heads * s->head_dim *
	       kva_dtype_size(s->dtype) + 64;
}

static float prefill_tol(enum kva_dtype dt)
{
	return dt == KVA_DTYPE_BF16 ? 1.6e-2f : dt == KVA_DTYPE_FP16 ? 2e-3f
								     : 5e-5f;
}

static void check_decode(const struct shape *sh, const uint64_t *lens,
			 uint32_t nr, const char *name)
{
	struct kva_geometry g;
	struct fx_rng rng = { 17 + lens[0] + sh->group };
	struct fx_seq fs[16];
	struct kva_attn_seq hseq[16], dseq[16];
	uint32_t qh = sh->kv_heads * sh->group;
	size_t n = (size_t)nr * qh * sh->head_dim;
	float *q, *ref = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
	float *dq, *dout, err = INFINITY, err2 = INFINITY;
	struct kva_cuda_decode_plan plan;
	struct kva_attn_seq *dseqs;
	uint64_t max_tokens = 1;
	void *ws;
	bool ok;

	geom(&g, 2, sh->kv_heads, sh->head_dim, sh->dtype, frame_for(sh));
	for (uint32_t i = 0; i < nr; i++) {
		fx_seq_fill(&fs[i], &g, lens[i], sh->kscale, &rng);
		hseq[i].base = fs[i].mem;
		hseq[i].tokens = lens[i];
		dseq[i].base = upload(fs[i].mem, fs[i].bytes);
		dseq[i].tokens = lens[i];
		if (lens[i] > max_tokens)
			max_tokens = lens[i];
	}
	q = fx_randf(n, &rng);
	struct kva_attn_params p = {
		.geom = &g, .layer = 1, .q_heads = qh,
		.scale = 1.0f / sqrtf((float)sh->head_dim),
	};

	kva_attn_decode_ref(&p, hseq, nr, q, ref);
	dseqs = upload(dseq, nr * sizeof(*dseq));
	dq = upload(q, n * sizeof(float));
	CK(cudaMalloc((void **)&dout, n * sizeof(float)));
	ok = kva_cuda_decode_plan(&p, nr, max_tokens, &plan) == 0;
	CK(cudaMalloc(&ws, plan.workspace_bytes));
	CK(cudaMemset(ws, 0, plan.workspace_bytes));
	/* twice: the second run checks the workspace was left ready */
	for (int run = 0; ok && run < 2; run++) {
		CK(cudaMemset(dout, 0xff, n * sizeof(float)));
		ok = kva_cuda_attn_decode(&p, &plan, dseqs, nr, dq, dout, ws,
					  NULL) == 0;
		CK(cudaDeviceSynchronize());
		CK(cudaMemcpy(out, dout, n * sizeof(float),
			      cudaMemcpyDeviceToHost));
		*(run ? &err2 : &err) = max_err(out, ref, n);
	}
	ok = ok && err <= 5e-5f && err2 <= 5e-5f;
	report(ok, "cuda_decode_matches_reference_%s_d%u_g%u_%s # err %.2g, splits %u",
	       kva_dtype_name(sh->dtype), sh->head_dim, sh->group, name,
	       (double)fmaxf(err, err2), plan.splits);
	for (uint32_t i = 0; i < nr; i++) {
		fx_seq_free(&fs[i]);
		cudaFree((void *)dseq[i].base);
	}
	cudaFree(dseqs);
	cudaFree(dq);
	cudaFree(dout);
	cudaFree(ws);
	free(q);
	free(ref);
	free(out);
}

static void check_prefill(const struct shape *sh, const uint64_t *prefix,
			  const uint32_t *chunk, uint32_t nr, const char *name)
{
	struct kva_geometry g;
	struct fx_rng rng = { 29 + prefix[0] + chunk[0] + sh->group };
	struct fx_seq fs[8];
	struct kva_prefill_seq hseq[8], dseq[8];
	uint32_t qh = sh->kv_heads * sh->group, rows = 0, max_q = 0;
	float *q, *ref, *out, *dq, *dout, err = INFINITY;
	struct kva_prefill_seq *dseqs;
	size_t n;
	bool ok;

	geom(&g, 2, sh->kv_heads, sh->head_dim, sh->dtype, frame_for(sh));
	for (uint32_t i = 0; i < nr; i++) {
		fx_seq_fill(&fs[i], &g, prefix[i] + chunk[i], sh->kscale, &rng);
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
	ref = malloc(n * sizeof(float));
	out = malloc(n * sizeof(float));
	struct kva_attn_params p = {
		.geom = &g, .layer = 0, .q_heads = qh,
		.scale = 1.0f / sqrtf((float)sh->head_dim),
	};

	kva_attn_prefill_ref(&p, hseq, nr, q, ref);
	dseqs = upload(dseq, nr * sizeof(*dseq));
	dq = upload(q, n * sizeof(float));
	CK(cudaMalloc((void **)&dout, n * sizeof(float)));
	CK(cudaMemset(dout, 0xff, n * sizeof(float)));
	ok = kva_cuda_attn_prefill(&p, dseqs, nr, max_q, dq, dout, NULL) == 0;
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(out, dout, n * sizeof(float), cudaMemcpyDeviceToHost));
	err = max_err(out, ref, n);
	ok = ok && err <= prefill_tol(sh->dtype);
	report(ok, "cuda_prefill_matches_reference_%s_d%u_g%u_%s # err %.2g",
	       kva_dtype_name(sh->dtype), sh->head_dim, sh->group, name,
	       (double)err);
	for (uint32_t i = 0; i < nr; i++) {
		fx_seq_free(&fs[i]);
		cudaFree((void *)dseq[i].base);
	}
	cudaFree(dseqs);
	cudaFree(dq);
	cudaFree(dout);
	free(q);
	free(ref);
	free(out);
}

static void check_append(enum kva_dtype dt)
{
	struct kva_geometry g;
	struct fx_rng rng = { 5 };
	size_t bytes;
	uint8_t *host, *back;
	void *dev, *dk, *dv;
	float *k, *v;
	bool ok;

	geom(&g, 3, 2, 64, dt, 1 << 16);
	bytes = 4 * g.frame_size;
	host = malloc(bytes);
	back = malloc(bytes);
	memset(host, 0xab, bytes);
	k = fx_randf(40 * 2 * 64, &rng);
	v = fx_randf(40 * 2 * 64, &rng);
	dev = upload(host, bytes);
	dk = upload(k, 40 * 2 * 64 * sizeof(float));
	dv = upload(v, 40 * 2 * 64 * sizeof(float));
	/* 40 tokens from position T_f - 3: across a frame boundary */
	kva_kv_append(&g, 1, host, g.tokens_per_frame - 3, 40, KVA_DTYPE_FP32,
		      k, v);
	ok = kva_cuda_kv_append(&g, 1, dev, g.tokens_per_frame - 3, 40,
				KVA_DTYPE_FP32, dk, dv, NULL) == 0;
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(back, dev, bytes, cudaMemcpyDeviceToHost));
	ok = ok && !memcmp(host, back, bytes);
	report(ok, "cuda_append_writes_the_bytes_the_cpu_writes_%s",
	       kva_dtype_name(dt));
	cudaFree(dev);
	cudaFree(dk);
	cudaFree(dv);
	free(host);
	free(back);
	free(k);
	free(v);
}

static void checks(void)
{
	static const enum kva_dtype dts[] = {
		KVA_DTYPE_FP32, KVA_DTYPE_FP16, KVA_DTYPE_BF16,
	};
	static const uint32_t groups[] = { 1, 2, 3, 4, 8 };

	for (int di = 0; di < 3; di++) {
		check_append(dts[di]);
		for (uint32_t hd = 64; hd <= 256; hd *= 2)
			for (int gi = 0; gi < 5; gi++) {
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
					check_decode(&sh, &lens[li], 1, ln[li]);
				check_decode(&sh, ragged, 6, "ragged");
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

			check_decode(&sh, lens, 2, "long");
			check_prefill(&sh, &pre, &chk, 1, "chunk_64_after_8200");
		}
	}
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

static void llama(struct kva_geometry *g)
{
	geom(g, 32, 8, 128, KVA_DTYPE_BF16, 2u << 20);
}

static void bench_decode(uint64_t tokens, uint32_t batch, double copy)
{
	struct kva_geometry g;
	struct kva_cuda_decode_plan plan;
	struct kva_attn_seq *hs = calloc(batch, sizeof(*hs)), *ds;
	size_t seq_bytes, per_layer, n = (size_t)batch * 32 * 128;
	uint32_t layers;
	uint8_t *mem;
	float *q, *out, ms, best = INFINITY;
	void *ws;
	cudaEvent_t a, b;

	llama(&g);
	seq_bytes = kva_frames_for(&g, tokens) * g.frame_size;
	per_layer = (size_t)batch * tokens * 2 * 8 * 128 * 2;
	layers = (uint32_t)((1ull << 30) / per_layer);
	layers = layers < 1 ? 1 : layers > 32 ? 32 : layers;
	CK(cudaMalloc((void **)&mem, seq_bytes * batch));
	CK(cudaMemset(mem, 0x3c, seq_bytes * batch));	/* bf16 0x3c3c */
	for (uint32_t i = 0; i < batch; i++) {
		hs[i].base = mem + (size_t)i * seq_bytes;
		hs[i].tokens = tokens;
	}
	ds = upload(hs, batch * sizeof(*hs));
	CK(cudaMalloc((void **)&q, n * sizeof(float)));
	CK(cudaMemset(q, 0, n * sizeof(float)));
	CK(cudaMalloc((void **)&out, n * sizeof(float)));
	struct kva_attn_params p = {
		.geom = &g, .layer = 0, .q_heads = 32, .scale = 0.08838835f,
	};
	if (kva_cuda_decode_plan(&p, batch, tokens, &plan)) {
		fprintf(stderr, "decode plan failed\n");
		exit(1);
	}
	CK(cudaMalloc(&ws, plan.workspace_bytes));
	CK(cudaMemset(ws, 0, plan.workspace_bytes));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	for (int pass = 0; pass < 22; pass++) {
		CK(cudaEventRecord(a, 0));
		for (uint32_t l = 0; l < layers; l++) {
			p.layer = l;
			if (kva_cuda_attn_decode(&p, &plan, ds, batch, q, out, ws,
						 NULL)) {
				fprintf(stderr, "decode: %s\n", cudaGetErrorString(
					(cudaError_t)kva_cuda_last_error()));
				exit(1);
			}
		}
		CK(cudaEventRecord(b, 0));
		CK(cudaEventSynchronize(b));
		CK(cudaEventElapsedTime(&ms, a, b));
		if (pass >= 2 && ms < best)
			best = ms;
	}
	double gbs = (double)per_layer * layers / (best * 1e-3) / 1e9;

	printf("{\"kind\":\"decode\",\"tokens\":%llu,\"batch\":%u,"
	       "\"dtype\":\"bf16\",\"layers\":%u,\"splits\":%u,"
	       "\"us_per_layer\":%.2f,\"kv_gbs\":%.1f,\"ratio\":%.3f}\n",
	       (unsigned long long)tokens, batch, layers, plan.splits,
	       best * 1e3 / layers, gbs, gbs / copy);
	fflush(stdout);
	cudaFree(mem);
	cudaFree(ds);
	cudaFree(q);
	cudaFree(out);
	cudaFree(ws);
	cudaEventDestroy(a);
	cudaEventDestroy(b);
	free(hs);
}

static void bench_prefill(uint64_t tokens, uint32_t chunk)
{
	struct kva_geometry g;
	struct kva_prefill_seq hs, *ds;
	size_t seq_bytes, n = (size_t)chunk * 32 * 128;
	uint8_t *mem;
	float *q, *out, ms, best = INFINITY;
	cudaEvent_t a, b;
	double flops;

	llama(&g);
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
	       "\"q_tokens\":%u,\"dtype\":\"bf16\",\"gflops\":%.1f}\n",
	       (unsigned long long)tokens, chunk, flops / (best * 1e-3) / 1e9);
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
	bench_decode(1024, 1, copy);
	bench_decode(8192, 1, copy);
	bench_decode(8192, 16, copy);
	bench_decode(32768, 1, copy);
	bench_decode(32768, 16, copy);
	bench_prefill(1024, 1024);
	bench_prefill(8192, 1024);
}

int main(int argc, char **argv)
{
	bool do_check = true, do_bench = true;
	int n;

	if (argc > 1 && !strcmp(argv[1], "--check-only"))
		do_bench = false;
	else if (argc > 1 && !strcmp(argv[1], "--bench-only"))
		do_check = false;
	else if (argc > 1) {
		fprintf(stderr, "usage: %s [--check-only | --bench-only]\n",
			argv[0]);
		return 2;
	}
	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
		printf("# SKIP no CUDA device\n");
		return 4;
	}
	if (do_check) {
		printf("KTAP version 1\n");
		checks();
		printf("1..%d\n# %d failed\n", nr_tests, nr_failed);
	}
	if (do_bench)
		bench();
	return nr_failed ? 1 : 0;
}
