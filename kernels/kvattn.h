/* SPDX-License-Identifier: MIT */
/*
 * kvattn.h - attention over the kvarena frame layout, on the CPU.
 *
 * A sequence's KV cache is one contiguous virtual range laid out as
 * include/kvarena/layout.h describes: frame after frame, each frame holding
 * all layers of T_f consecutive tokens.  The kernels need nothing but the
 * range's base address, the sequence's token count and the geometry: no
 * block tables.
 *
 * What is computed, for one layer, query head h (KV head h / G, where
 * G = q_heads / kv_heads is the GQA group size) and one query token at
 * position p (0-based, counting every token of the sequence):
 *
 *     s_t   = scale * dot(q, K[t])              for t = 0 .. p
 *     out   = sum_t softmax(s)_t * V[t]
 *
 * in fp32 arithmetic whatever the cache dtype (K and V are widened exactly
 * to fp32 on load), with the running-max ("online") softmax of
 * kernels/tile_math.h.  A query that sees no key (a sequence of 0 tokens)
 * gets an output of zeros.
 *
 * fp8 caches (KVA_DTYPE_FP8, e4m3) come with a scale per K|V and KV head
 * of the layer (struct kva_attn_params.kv_scale): K[t] and V[t] are the
 * codes' values times their head's scale.  The AVX-512 fp8 decode rounds
 * q and the softmax weights to bf16 for its dot-product instructions;
 * everything else is as above.  Documentation/kernels.rst gives the error
 * bounds, against the same cache and against an fp32 one.
 *
 * Buffers.  q and out hold one row of head_dim elements per (query
 * token, query head), heads innermost, in the dtype kva_attn_params.
 * qo_dtype names (fp32, the default, fp16 or bf16):
 *
 *   decode:   q[(s * q_heads + h) * head_dim + d]     s: index in the batch
 *   prefill:  q[(r * q_heads + h) * head_dim + d]     r = seqs[s].q_start + i
 *
 * out has the same layout as q and must not overlap it or the caches.
 *
 * Order of calls in a model step: append the step's new K/V of the layer
 * with kva_kv_append(), then run decode or prefill over token counts that
 * include them.  Decode is prefill with one query token (the last).
 *
 * Errors are negative errno values; nothing is written to out on an
 * argument error.
 *
 * Thread-safety: a struct kva_attn owns a pool of worker threads and
 * scratch memory: one caller at a time per handle (use one handle per
 * calling thread).  The reference functions and kva_kv_append() are
 * reentrant.
 */
#ifndef KVA_KVATTN_H
#define KVA_KVATTN_H

#include <stdbool.h>
#include <stdint.h>

#include <kvarena/layout.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Largest head_dim any kernel accepts. */
#define KVA_ATTN_MAX_HEAD_DIM 256u

/**
 * struct kva_attn_seq - one sequence's KV cache, for decode.
 * @base:   start of the sequence's contiguous virtual KV range (token 0
 *          of frame 0); any alignment, page-aligned is fastest.  With
 *          libkvarena this is (void *)kva_seq->base (<kvarena.h>).
 * @tokens: tokens held for this layer, the current one included; the
 *          query is the token at position tokens - 1
 */
struct kva_attn_seq {
	const void *base;
	uint64_t tokens;
};

/**
 * struct kva_prefill_seq - one sequence's chunk of query tokens.
 * @base:     as in struct kva_attn_seq
 * @tokens:   tokens held after this chunk was appended: an already cached
 *            prefix of tokens - q_tokens, then the chunk
 * @q_tokens: query tokens in the chunk; query i sits at position
 *            tokens - q_tokens + i and attends causally to positions
 *            0 .. tokens - q_tokens + i
 * @q_start:  row of the chunk's first query token in q and out
 */
struct kva_prefill_seq {
	const void *base;
	uint64_t tokens;
	uint32_t q_tokens;
	uint32_t q_start;
};

/**
 * struct kva_attn_params - what one call computes.
 * @geom:     the cache geometry, as filled by kva_geometry_init()
 * @layer:    layer to read, < geom->layers
 * @q_heads:  query heads, a non-zero multiple of geom->kv_heads
 * @scale:    factor on q.k, finite (usually 1 / sqrt(head_dim))
 * @qo_dtype: enum kva_dtype of q and out: KVA_DTYPE_FP32 (0, what a
 *            zeroed struct gives), KVA_DTYPE_FP16 or KVA_DTYPE_BF16
 *            (out rounded to nearest even)
 * @kv_scale: fp8 caches: 2 * kv_heads finite factors for this layer, the
 *            K heads' then the V heads' (an element is its e4m3 code's
 *            value times its head's factor); NULL for all 1.  Must be
 *            NULL for the other dtypes.  A device pointer for the CUDA
 *            functions.
 */
struct kva_attn_params {
	const struct kva_geometry *geom;
	uint32_t layer;
	uint32_t q_heads;
	float scale;
	uint32_t qo_dtype;
	const float *kv_scale;
};

/** enum kva_isa - CPU code path. */
enum kva_isa {
	KVA_ISA_AUTO = 0,	/* best the CPU supports, or $KVA_KERNELS_ISA */
	KVA_ISA_SCALAR,		/* portable C */
	KVA_ISA_AVX2,		/* AVX2 + FMA + F16C */
	KVA_ISA_AVX512,		/* AVX-512 F/BW/VL/DQ */
	KVA_ISA_COUNT
};

/** kva_isa_name() - "auto", "scalar", "avx2", "avx512". */
const char *kva_isa_name(enum kva_isa isa);

/**
 * kva_isa_parse() - the ISA named @name (as kva_isa_name() spells it).
 * Returns 0 or -EINVAL.
 */
int kva_isa_parse(const char *name, enum kva_isa *isa);

/** kva_isa_supported() - whether this CPU and build can run @isa. */
bool kva_isa_supported(enum kva_isa isa);

/** kva_isa_best() - the fastest ISA this CPU supports. */
enum kva_isa kva_isa_best(void);

/**
 * struct kva_attn_config - how a handle runs.
 * @threads:      threads working on each call, the caller's included;
 *                0 means one per online CPU
 * @isa:          code path; KVA_ISA_AUTO takes $KVA_KERNELS_ISA when set
 *                (scalar|avx2|avx512), else kva_isa_best()
 * @split_tokens: decode splits a sequence's context into pieces of this
 *                many tokens, worked on in parallel and merged (split-K);
 *                0 chooses from the batch and the thread count
 */
struct kva_attn_config {
	unsigned int threads;
	enum kva_isa isa;
	uint32_t split_tokens;
};

struct kva_attn;

/**
 * kva_attn_create() - a handle with its worker threads.
 * @cfg may be NULL for all defaults.
 *
 * Returns 0 and sets *@out, -EINVAL for a bad field or an unknown
 * $KVA_KERNELS_ISA, -ENOTSUP when the ISA asked for is not supported
 * here, -ENOMEM, or the error of pthread_create().
 */
int kva_attn_create(struct kva_attn **out, const struct kva_attn_config *cfg);

/** kva_attn_destroy() - stop the workers and free the handle; NULL is ok. */
void kva_attn_destroy(struct kva_attn *a);

/** kva_attn_isa() - the code path the handle runs (never AUTO). */
enum kva_isa kva_attn_isa(const struct kva_attn *a);

/** kva_attn_threads() - threads the handle runs with. */
unsigned int kva_attn_threads(const struct kva_attn *a);

/**
 * kva_attn_decode() - one query token per sequence over a ragged batch.
 * @seqs, @nr_seqs: the batch; q and out hold nr_seqs * q_heads rows
 *
 * Returns 0, -EINVAL (NULL pointer, bad geometry or params, head_dim above
 * KVA_ATTN_MAX_HEAD_DIM) or -ENOMEM.
 */
int kva_attn_decode(struct kva_attn *a, const struct kva_attn_params *p,
		    const struct kva_attn_seq *seqs, uint32_t nr_seqs,
		    const void *q, void *out);

/**
 * kva_attn_prefill() - a causal chunk of query tokens per sequence, after
 * an already cached prefix.  q and out rows are addressed through each
 * sequence's q_start; rows of different sequences must not overlap.
 *
 * Returns 0, -EINVAL (as for decode, or q_tokens > tokens) or -ENOMEM.
 */
int kva_attn_prefill(struct kva_attn *a, const struct kva_attn_params *p,
		     const struct kva_prefill_seq *seqs, uint32_t nr_seqs,
		     const void *q, void *out);

/**
 * kva_attn_decode_ref(), kva_attn_prefill_ref() - the reference: plain C,
 * one query row at a time, scores and softmax in double precision with
 * the textbook two-pass formula.  Slow; for tests and checks.  Same
 * arguments and errors as the fast versions.
 */
int kva_attn_decode_ref(const struct kva_attn_params *p,
			const struct kva_attn_seq *seqs, uint32_t nr_seqs,
			const void *q, void *out);
int kva_attn_prefill_ref(const struct kva_attn_params *p,
			 const struct kva_prefill_seq *seqs, uint32_t nr_seqs,
			 const void *q, void *out);

/**
 * kva_kv_append() - write @n tokens of K and V of layer @layer into the
 * cache of the sequence at @base, at positions @pos .. @pos + n - 1.
 * @k, @v: [n][kv_heads][head_dim] elements of @src_dtype (fp32, fp16 or
 *         bf16); they are rounded to nearest even into a narrower cache,
 *         and any other combination goes through fp32 (exact when
 *         widening)
 *
 * The frames holding those positions must be mapped.  An fp8 cache is
 * written with every scale 1 (kva_kv_append_scaled() takes the scales).
 * Returns 0 or -EINVAL.
 */
int kva_kv_append(const struct kva_geometry *g, uint32_t layer, void *base,
		  uint64_t pos, uint32_t n, enum kva_dtype src_dtype,
		  const void *k, const void *v);

/**
 * kva_kv_append_scaled() - kva_kv_append() into an fp8 cache with the
 * layer's per-head scales: element x of K head h is stored as the e4m3
 * code nearest x / kv_scale[h] (ties to even, saturating at +-448; NaN
 * stays NaN), and of V head h as that of x / kv_scale[kv_heads + h].
 * @kv_scale: 2 * kv_heads finite, non-zero factors, as in struct
 *            kva_attn_params; NULL for all 1.  Must be NULL for the other
 *            cache dtypes.
 *
 * Returns 0 or -EINVAL.
 */
int kva_kv_append_scaled(const struct kva_geometry *g, uint32_t layer,
			 void *base, uint64_t pos, uint32_t n,
			 enum kva_dtype src_dtype, const void *k,
			 const void *v, const float *kv_scale);

#ifdef __cplusplus
}
#endif

#endif /* KVA_KVATTN_H */
