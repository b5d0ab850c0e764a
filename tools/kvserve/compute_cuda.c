// SPDX-License-Identifier: GPL-2.0
/*
 * kvserve --backend cuda: the model step's attention on the CUDA kernels
 * (kvattn_cuda.h), over sequences whose ranges libkvarena maps on the GPU
 * (a CUDA arena: cuMemCreate'd frames behind cuMemAddressReserve'd
 * ranges).  The K/V sources, queries, outputs, descriptors and decode
 * workspace live on the device; each step copies its descriptors up and
 * launches, layer by layer, the appends and one attention call on one
 * stream.  cudart is linked statically: kvserve still starts on a machine
 * without a GPU, and only --backend cuda needs one.
 *
 * The runtime uses the device's primary context, which libkvarena's CUDA
 * backend retains too, so both see the same mappings.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "kvattn_cuda.h"
#include "kvserve.h"

#define SRC_TOKENS	256

struct gpu {
	struct kva_geometry g;
	uint32_t q_heads;
	cudaStream_t stream;
	float *k, *v;				/* device */
	float *q, *out;				/* device */
	uint64_t rows;
	struct kva_attn_seq *dseq, *h_dseq;		/* device, host */
	struct kva_prefill_seq *pseq, *h_pseq;
	uint32_t nr_seq;
	struct kva_cuda_decode_plan plan;
	void *ws;
	uint64_t seed;
	char desc[96];
};

static int cuda_fail(const char *what, cudaError_t e)
{
	fprintf(stderr, "%s: CUDA: %s: %s\n", kvt_prog, what,
		cudaGetErrorString(e));
	return -EIO;
}

#define CK(call) do {							\
	cudaError_t e_ = (call);					\
	if (e_ != cudaSuccess)						\
		return cuda_fail(#call, e_);				\
} while (0)

static float rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((*s >> 40) & 0xffffff) / 16777216.0f - 0.5f;
}

/* @n random floats at device address @dst. */
static int fill_device(float *dst, uint64_t n, uint64_t *seed)
{
	float *h = malloc(n * sizeof(float));
	cudaError_t e;
	uint64_t i;

	if (!h)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		h[i] = rnd(seed);
	e = cudaMemcpy(dst, h, n * sizeof(float), cudaMemcpyHostToDevice);
	free(h);
	return e == cudaSuccess ? 0 : cuda_fail("cudaMemcpy", e);
}

static int gpu_init(void **state, const struct kva_geometry *g,
		    uint32_t q_heads, unsigned int threads, uint64_t seed)
{
	size_t kv = (size_t)SRC_TOKENS * g->kv_heads * g->head_dim;
	struct cudaDeviceProp prop;
	struct gpu *c;
	int dev, err;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	*state = c;
	c->g = *g;
	c->q_heads = q_heads;
	c->seed = seed ? seed : 1;
	CK(cudaGetDevice(&dev));
	CK(cudaGetDeviceProperties(&prop, dev));
	snprintf(c->desc, sizeof(c->desc), "cuda %.80s", prop.name);
	CK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
	CK(cudaMalloc((void **)&c->k, kv * sizeof(float)));
	CK(cudaMalloc((void **)&c->v, kv * sizeof(float)));
	err = fill_device(c->k, kv, &c->seed);
	if (!err)
		err = fill_device(c->v, kv, &c->seed);
	return err;
}

static int need_rows(struct gpu *c, uint64_t rows)
{
	size_t w = (size_t)c->q_heads * c->g.head_dim;
	uint64_t n = c->rows ? c->rows : 64;

	if (rows <= c->rows)
		return 0;
	while (n < rows)
		n *= 2;
	cudaFree(c->q);
	cudaFree(c->out);
	c->q = c->out = NULL;
	c->rows = 0;
	CK(cudaMalloc((void **)&c->q, n * w * sizeof(float)));
	CK(cudaMalloc((void **)&c->out, n * w * sizeof(float)));
	c->rows = n;
	return fill_device(c->q, n * w, &c->seed);
}

static int need_seqs(struct gpu *c, uint32_t nr)
{
	uint32_t n = c->nr_seq ? c->nr_seq : 64;

	if (nr <= c->nr_seq)
		return 0;
	while (n < nr)
		n *= 2;
	cudaFree(c->dseq);
	cudaFree(c->pseq);
	free(c->h_dseq);
	free(c->h_pseq);
	c->dseq = NULL;
	c->pseq = NULL;
	c->nr_seq = 0;
	c->h_dseq = calloc(n, sizeof(*c->h_dseq));
	c->h_pseq = calloc(n, sizeof(*c->h_pseq));
	if (!c->h_dseq || !c->h_pseq)
		return -ENOMEM;
	CK(cudaMalloc((void **)&c->dseq, n * sizeof(*c->dseq)));
	CK(cudaMalloc((void **)&c->pseq, n * sizeof(*c->pseq)));
	c->nr_seq = n;
	return 0;
}

static struct kva_attn_params params(const struct gpu *c, uint32_t layer)
{
	return (struct kva_attn_params){
		.geom = &c->g,
		.layer = layer,
		.q_heads = c->q_heads,
		.scale = 1.0f / sqrtf((float)c->g.head_dim),
	};
}

/* A decode plan and workspace for @n sequences of up to @tokens. */
static int need_plan(struct gpu *c, uint32_t n, uint64_t tokens)
{
	struct kva_attn_params p = params(c, 0);
	uint64_t t = c->plan.max_tokens ? c->plan.max_tokens : 4096;
	uint32_t s = c->plan.nr_seqs ? c->plan.nr_seqs : 64;
	int err;

	if (c->ws && n <= c->plan.nr_seqs && tokens <= c->plan.max_tokens)
		return 0;
	while (t < tokens)
		t *= 2;
	while (s < n)
		s *= 2;
	err = kva_cuda_decode_plan(&p, s, t, &c->plan);
	if (err)
		return err;
	cudaFree(c->ws);
	c->ws = NULL;
	CK(cudaMalloc(&c->ws, c->plan.workspace_bytes));
	CK(cudaMemset(c->ws, 0, c->plan.workspace_bytes));
	return 0;
}

static int append(struct gpu *c, uint32_t layer, uint64_t base, uint64_t from,
		  uint64_t to)
{
	while (from < to) {
		uint32_t n = to - from < SRC_TOKENS ? (uint32_t)(to - from) :
			     SRC_TOKENS;
		int err = kva_cuda_kv_append(&c->g, layer,
					     (void *)(uintptr_t)base, from, n,
					     KVA_DTYPE_FP32, c->k, c->v,
					     c->stream);

		if (err)
			return err;
		from += n;
	}
	return 0;
}

static int gpu_prefill(void *state, const uint64_t *base,
		       const uint64_t *from, const uint64_t *to, uint32_t n)
{
	struct gpu *c = state;
	uint64_t rows = 0;
	uint32_t i, l, max_q = 0;
	int err;

	for (i = 0; i < n; i++)
		rows += to[i] - from[i];
	if (!rows)
		return 0;
	err = need_rows(c, rows) ?: need_seqs(c, n);
	if (err)
		return err;
	rows = 0;
	for (i = 0; i < n; i++) {
		c->h_pseq[i] = (struct kva_prefill_seq){
			.base = (const void *)(uintptr_t)base[i],
			.tokens = to[i],
			.q_tokens = (uint32_t)(to[i] - from[i]),
			.q_start = (uint32_t)rows,
		};
		if (c->h_pseq[i].q_tokens > max_q)
			max_q = c->h_pseq[i].q_tokens;
		rows += to[i] - from[i];
	}
	CK(cudaMemcpyAsync(c->pseq, c->h_pseq, n * sizeof(*c->pseq),
			   cudaMemcpyHostToDevice, c->stream));
	for (l = 0; l < c->g.layers; l++) {
		struct kva_attn_params p = params(c, l);

		for (i = 0; i < n; i++) {
			err = append(c, l, base[i], from[i], to[i]);
			if (err)
				return err;
		}
		err = kva_cuda_attn_prefill(&p, c->pseq, n, max_q, c->q,
					    c->out, c->stream);
		if (err)
			return err;
	}
	return 0;
}

static int gpu_decode(void *state, const uint64_t *base,
		      const uint64_t *tokens, uint32_t n)
{
	struct gpu *c = state;
	uint64_t longest = 0;
	uint32_t i, l;
	int err;

	if (!n)
		return 0;
	for (i = 0; i < n; i++)
		if (tokens[i] > longest)
			longest = tokens[i];
	err = need_rows(c, n) ?: need_seqs(c, n) ?: need_plan(c, n, longest);
	if (err)
		return err;
	for (i = 0; i < n; i++)
		c->h_dseq[i] = (struct kva_attn_seq){
			.base = (const void *)(uintptr_t)base[i],
			.tokens = tokens[i],
		};
	CK(cudaMemcpyAsync(c->dseq, c->h_dseq, n * sizeof(*c->dseq),
			   cudaMemcpyHostToDevice, c->stream));
	for (l = 0; l < c->g.layers; l++) {
		struct kva_attn_params p = params(c, l);

		for (i = 0; i < n; i++) {
			err = append(c, l, base[i], tokens[i] - 1, tokens[i]);
			if (err)
				return err;
		}
		err = kva_cuda_attn_decode(&p, &c->plan, c->dseq, n, c->q,
					   c->out, c->ws, c->stream);
		if (err)
			return err;
	}
	return 0;
}

static int gpu_sync(void *state)
{
	struct gpu *c = state;

	CK(cudaStreamSynchronize(c->stream));
	return 0;
}

static void gpu_fini(void *state)
{
	struct gpu *c = state;

	if (!c)
		return;
	if (c->stream)
		cudaStreamSynchronize(c->stream);
	cudaFree(c->k);
	cudaFree(c->v);
	cudaFree(c->q);
	cudaFree(c->out);
	cudaFree(c->dseq);
	cudaFree(c->pseq);
	cudaFree(c->ws);
	free(c->h_dseq);
	free(c->h_pseq);
	if (c->stream)
		cudaStreamDestroy(c->stream);
	free(c);
}

static const char *gpu_describe(void *state)
{
	return ((struct gpu *)state)->desc;
}

static const struct compute_ops gpu_ops = {
	.init = gpu_init,
	.prefill = gpu_prefill,
	.decode = gpu_decode,
	.sync = gpu_sync,
	.fini = gpu_fini,
	.describe = gpu_describe,
};

const struct compute_ops *compute_cuda_ops = &gpu_ops;
