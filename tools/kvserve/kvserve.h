/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvserve - a serving loop on libkvarena and the attention kernels.
 *
 *   main.c          options, the trace, the report
 *   serve.c         the loop: admission, growth, preemption, prefixes,
 *                   pressure; every sequence's KV in a kvarena sequence
 *   compute.c       the CPU attention: K/V appends, prefill, decode
 *   compute_cuda.c  the same on a GPU (built where nvcc is)
 *
 * The loop knows sequences (libkvarena's struct kva_seq), the attention
 * knows base addresses and token counts (the kernels' struct
 * kva_attn_seq); they meet here, over the latter.
 */
#ifndef KVSERVE_H
#define KVSERVE_H

#include <stdbool.h>
#include <stdint.h>

#include <kvarena/layout.h>

#include "kvtools.h"

/* One request, from the trace. */
struct request {
	double arrival_s;	/* after the first, time-compressed */
	uint32_t prompt;
	uint32_t output;
	uint32_t nr_hash;
	const uint64_t *hash;	/* the trace's hash_ids */
};

struct kva_seq;

enum compute_backend {
	COMPUTE_CPU,
	COMPUTE_CUDA,
};

/**
 * struct compute_ops - the attention of one model step.
 * @init:	make the state for geometry @g with @q_heads query heads,
 *		@threads threads (CPU), random K/V and queries from @seed.
 * @prefill:	for each of @n sequences: write K/V of tokens
 *		[@from[i], @to[i]) of every layer at @base[i] and run causal
 *		attention for those tokens over [0, @to[i]).
 * @decode:	for each of @n sequences: write K/V of token @tokens[i] - 1
 *		of every layer and run attention for it over its tokens.
 * @sync:	wait for the work above (GPU).
 * @fini:	free the state.
 * @check:	optional: the check mode (--check): K/V and queries drawn from
 *		(request, position, layer, head, element) instead of reused
 *		random rows, so that every output is a function of the
 *		request alone, whatever the batch, the schedule or the
 *		number of ranks; each decode output is hashed into a digest.
 *		@kv_head0 and @q_head0: the global index of this state's
 *		first heads (a rank's slice).  NULL: not offered.
 * @batch:	optional: the next prefill's or decode's sequences (the
 *		scheduler's, for a tensor-parallel step) and their requests'
 *		numbers (@tags), before each call.
 * @digest:	optional: the sum of the decode outputs' hashes so far.
 */
struct compute_ops {
	int (*init)(void **state, const struct kva_geometry *g,
		    uint32_t q_heads, unsigned int threads, uint64_t seed);
	int (*prefill)(void *state, uint64_t const *base, const uint64_t *from,
		       const uint64_t *to, uint32_t n);
	int (*decode)(void *state, uint64_t const *base,
		      const uint64_t *tokens, uint32_t n);
	int (*sync)(void *state);
	void (*fini)(void *state);
	const char *(*describe)(void *state);
	int (*check)(void *state, uint32_t kv_head0, uint32_t q_head0);
	void (*batch)(void *state, struct kva_seq *const *seqs,
		      const uint64_t *tags, uint32_t n);
	uint64_t (*digest)(void *state);
};

extern const struct compute_ops compute_cpu_ops;
extern const struct compute_ops *compute_cuda_ops;	/* NULL: not built */


/* What to serve and how (main.c fills it). */
struct options {
	const char *trace;
	struct request *req;
	uint32_t nr_req;
	uint32_t refused;		/* prompts over max_len */
	struct kva_geometry g;
	uint32_t q_heads;
	const char *arena;		/* device mode: its name */
	const char *label;
	uint32_t frames;		/* embedded arena */
	uint32_t min_frames, max_frames;
	uint32_t max_seqs;
	uint64_t prefill_budget;
	int preempt_swap;		/* --preempt swap, not recompute */
	uint64_t max_len;
	uint32_t shared_prefix;		/* tokens all prompts start with */
	enum compute_backend backend;
	unsigned int threads;
	uint64_t seed;
	double max_seconds;
	double report_every;		/* seconds between progress lines */
	int json;
	int private_domain;		/* --private: KVA_OPEN_PRIVATE */
	uint32_t tp;			/* --tp: ranks (1: none) */
	int check;			/* --check: content-defined, digest */
};

/*
 * tp.c: --tp N, N rank processes over a gang, each the CPU attention of
 * its slice of the heads; the scheduler is serve.c, unchanged.
 */
struct kva_arena;
extern const struct compute_ops compute_tp_ops;
int tp_spawn(const struct options *o);
int tp_hello(struct kva_arena *a, const char *gang);

/* serve.c */
int serve(const struct options *o);

#endif /* KVSERVE_H */
