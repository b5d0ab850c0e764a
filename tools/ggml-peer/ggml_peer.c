// SPDX-License-Identifier: GPL-2.0
/*
 * ggml as kvbench attn's peer (tools/kvbench/peer.h): a case is one ggml
 * graph of ggml_flash_attn_ext() nodes, one per layer, each over that
 * layer's K and V tensors [head_dim, tokens, kv_heads, batch] of the
 * case's type, computed by ggml's CPU backend on a thread pool made once;
 * a prefill's queries see the keys through an F16 causal mask, 0 or -inf.
 * Only ggml's public API is used; build.sh links this against a ggml tree
 * the user gives.
 *
 * Values: K and V in +-[0.5, 1), as kvbench fills its own caches; q8_0
 * quantized from such floats by ggml_quantize_chunk().  The precision is
 * GGML_PREC_F32, as llama.cpp asks of its flash attention.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml-cpu.h"

#include "peer.h"

#ifndef KVB_PEER_VERSION
#define KVB_PEER_VERSION "unknown"
#endif

struct gpeer {
	struct ggml_context *ctx;
	struct ggml_cgraph *gf;
	struct ggml_threadpool *tp;
	struct ggml_cplan plan;
	void *work;
	uint64_t bytes;
};

static enum ggml_type type_of(enum kvb_peer_dtype d)
{
	switch (d) {
	case KVB_PEER_F16:
		return GGML_TYPE_F16;
	case KVB_PEER_BF16:
		return GGML_TYPE_BF16;
	default:
		return GGML_TYPE_Q8_0;
	}
}

/* Fill @t (@type) with values in +-[0.5, 1), row by row through @row. */
static void fill(struct ggml_tensor *t, float *row, uint64_t *state)
{
	int64_t n = t->ne[0], rows = ggml_nrows(t);
	size_t rb = ggml_row_size(t->type, n);
	char *dst = t->data;

	for (int64_t r = 0; r < rows; r++) {
		for (int64_t i = 0; i < n; i++) {
			uint64_t x = *state;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			*state = x;
			row[i] = (0.5f + (float)(x >> 41) / (float)(1u << 24)) *
				 ((x & 1) ? -1.0f : 1.0f);
		}
		if (t->type == GGML_TYPE_F16)
			ggml_fp32_to_fp16_row(row, (ggml_fp16_t *)(dst + r * rb), n);
		else if (t->type == GGML_TYPE_BF16)
			ggml_fp32_to_bf16_row(row, (ggml_bf16_t *)(dst + r * rb), n);
		else
			ggml_quantize_chunk(t->type, row, dst + r * rb, 0, 1, n,
					    NULL);
	}
}

static void gp_close(void *h)
{
	struct gpeer *g = h;

	if (!g)
		return;
	if (g->tp)
		ggml_threadpool_free(g->tp);
	free(g->work);
	if (g->ctx)
		ggml_free(g->ctx);
	free(g);
}

static void *gp_open(const struct kvb_peer_case *c, char *why, size_t len)
{
	enum ggml_type kt = type_of(c->dtype);
	struct ggml_threadpool_params tpp;
	struct ggml_init_params ip = { 0 };
	size_t kv = ggml_row_size(kt, c->head_dim) * c->tokens *
		    c->kv_heads * c->batch;
	uint32_t nq = c->q_tokens ? c->q_tokens : 1;
	size_t qb = sizeof(float) * c->head_dim * nq * c->q_heads * c->batch;
	size_t mb = c->q_tokens ? sizeof(ggml_fp16_t) * c->tokens * nq : 0;
	struct ggml_tensor *mask = NULL;
	size_t nodes = 2 * (size_t)c->layers + 8;
	struct ggml_tensor *q;
	struct gpeer *g;
	uint64_t state = 0x9e3779b97f4a7c15ull;
	float *row;

	if (c->head_dim % ggml_blck_size(kt)) {
		snprintf(why, len, "head_dim %u is no whole number of %s blocks",
			 c->head_dim, ggml_type_name(kt));
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	row = malloc(sizeof(float) * c->head_dim);
	if (!g || !row)
		goto nomem;
	ggml_cpu_init();
	if (c->q_tokens > c->tokens) {
		snprintf(why, len, "%u query tokens of %llu", c->q_tokens,
			 (unsigned long long)c->tokens);
		goto fail;
	}
	ip.mem_size = 2 * kv * c->layers + qb * (c->layers + 1) + mb +
		      ggml_tensor_overhead() * (4 * (size_t)c->layers + 8) +
		      ggml_graph_overhead_custom(nodes, false) + (1u << 20);
	g->ctx = ggml_init(ip);
	if (!g->ctx)
		goto nomem;
	g->gf = ggml_new_graph_custom(g->ctx, nodes, false);
	q = ggml_new_tensor_4d(g->ctx, GGML_TYPE_F32, c->head_dim, nq,
			       c->q_heads, c->batch);
	for (int64_t i = 0; i < ggml_nelements(q); i++)
		((float *)q->data)[i] = (float)((i * 2654435761u) % 1000) /
					1000.0f - 0.5f;
	/* Causal: query i sees keys 0 .. tokens - q_tokens + i. */
	if (c->q_tokens) {
		ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f);
		ggml_fp16_t ninf = ggml_fp32_to_fp16(-INFINITY);

		mask = ggml_new_tensor_2d(g->ctx, GGML_TYPE_F16, c->tokens, nq);
		for (uint32_t i = 0; i < nq; i++)
			for (uint64_t j = 0; j < c->tokens; j++)
				((ggml_fp16_t *)mask->data)[i * c->tokens + j] =
					j <= c->tokens - nq + i ? zero : ninf;
	}
	for (uint32_t l = 0; l < c->layers; l++) {
		struct ggml_tensor *k, *v, *o;

		k = ggml_new_tensor_4d(g->ctx, kt, c->head_dim, c->tokens,
				       c->kv_heads, c->batch);
		v = ggml_new_tensor_4d(g->ctx, kt, c->head_dim, c->tokens,
				       c->kv_heads, c->batch);
		fill(k, row, &state);
		fill(v, row, &state);
		g->bytes += ggml_nbytes(k) + ggml_nbytes(v);
		o = ggml_flash_attn_ext(g->ctx, q, k, v, mask, c->scale, 0.0f,
					0.0f);
		ggml_flash_attn_ext_set_prec(o, GGML_PREC_F32);
		ggml_build_forward_expand(g->gf, o);
	}
	/*
	 * Its threads sleep between passes, as kvarena's do: polling ones
	 * would take the cores from the kernels' passes in between.
	 */
	tpp = ggml_threadpool_params_default((int)c->threads);
	tpp.poll = 0;
	g->tp = ggml_threadpool_new(&tpp);
	if (!g->tp) {
		snprintf(why, len, "ggml_threadpool_new of %u threads failed",
			 c->threads);
		goto fail;
	}
	g->plan = ggml_graph_plan(g->gf, (int)c->threads, g->tp);
	if (g->plan.work_size) {
		g->work = malloc(g->plan.work_size);
		if (!g->work)
			goto nomem;
		g->plan.work_data = g->work;
	}
	free(row);
	return g;

nomem:
	snprintf(why, len, "out of memory");
fail:
	free(row);
	gp_close(g);
	return NULL;
}

static uint64_t gp_bytes(void *h)
{
	return ((struct gpeer *)h)->bytes;
}

static int gp_pass(void *h)
{
	struct gpeer *g = h;
	enum ggml_status st = ggml_graph_compute(g->gf, &g->plan);

	/* The next compute resumes it. */
	ggml_threadpool_pause(g->tp);
	return st == GGML_STATUS_SUCCESS ? 0 : -EIO;
}

const struct kvb_peer kvb_peer_v1 = {
	.abi = KVB_PEER_ABI,
	.name = "ggml",
	.version = KVB_PEER_VERSION,
	.open = gp_open,
	.bytes = gp_bytes,
	.pass = gp_pass,
	.close = gp_close,
};
