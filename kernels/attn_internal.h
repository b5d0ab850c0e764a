/* SPDX-License-Identifier: MIT */
/*
 * attn_internal.h - what the CPU dispatcher (attn_cpu.c) hands to the
 * per-ISA kernels (attn_scalar.c; attn_simd.h, compiled by attn_avx2.c
 * and attn_avx512.c).
 */
#ifndef KVA_ATTN_INTERNAL_H
#define KVA_ATTN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kvattn.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct kva_walk - the strides of one layer of the frame layout, all
 * derived from kva_kv_offset() so that layout.h stays the one definition:
 *
 *   row(kv, h, t) = base + kv_off[kv] + h * head_stride
 *                   + (t / tpf) * frame_size + (t % tpf) * row_bytes
 */
struct kva_walk {
	uint64_t frame_size;
	uint64_t kv_off[2];	/* head 0, token 0 of K and of V */
	uint32_t head_stride;	/* from one head's block to the next */
	uint32_t row_bytes;	/* from one token's row to the next */
	uint32_t tpf;		/* tokens per frame, T_f */
	uint32_t kv_heads;
};

static inline void kva_walk_init(struct kva_walk *w,
				 const struct kva_geometry *g, uint32_t layer)
{
	uint64_t k0 = kva_kv_offset(g, layer, KVA_K, 0, 0);

	w->kv_off[KVA_K] = k0;
	w->kv_off[KVA_V] = kva_kv_offset(g, layer, KVA_V, 0, 0);
	w->frame_size = kva_kv_offset(g, layer, KVA_K, 0, g->tokens_per_frame) -
			k0;
	w->head_stride = g->head_stride;
	w->row_bytes = g->head_dim *
		       (uint32_t)kva_dtype_size((enum kva_dtype)g->dtype);
	w->tpf = g->tokens_per_frame;
	w->kv_heads = g->kv_heads;
}

/** kva_walk_tok() - offset of token @t's row from head 0's row of token 0. */
static inline uint64_t kva_walk_tok(const struct kva_walk *w, uint64_t t)
{
	return (t / w->tpf) * w->frame_size + (t % w->tpf) * w->row_bytes;
}

/** kva_walk_rows() - offsets of tokens t .. t + n - 1, one division. */
static inline void kva_walk_rows(const struct kva_walk *w, uint64_t t,
				 uint32_t n, uint64_t *off)
{
	uint64_t f = t / w->tpf;
	uint32_t i = (uint32_t)(t - f * w->tpf);
	uint64_t frame = f * w->frame_size;

	for (uint32_t j = 0; j < n; j++) {
		off[j] = frame + (uint64_t)i * w->row_bytes;
		if (++i == w->tpf) {
			i = 0;
			frame += w->frame_size;
		}
	}
}

/**
 * kva_walk_tile() - a decode tile: the offsets of its rows, tokens t ..
 * t + n - 1 with n = min(@tile, @end - t), in off[0 .. n), and of the
 * rows of the tile @lead tokens later, which the kernel prefetches meanwhile,
 * in off[@tile ..]; returns n and leaves the rows to prefetch in *@npf.
 */
static inline uint32_t kva_walk_tile(const struct kva_walk *w, uint64_t t,
				     uint64_t end, uint32_t tile,
				     uint64_t lead, uint64_t *off,
				     uint32_t *npf)
{
	uint32_t n = end - t < tile ? (uint32_t)(end - t) : tile;
	uint64_t tp = t + lead;

	*npf = tp < end ? (end - tp < tile ? (uint32_t)(end - tp) : tile) : 0;
	kva_walk_rows(w, t, n, off);
	kva_walk_rows(w, tp, *npf, off + tile);
	return n;
}

/** Everything about a call that is the same for every piece of work. */
struct kva_attn_shape {
	struct kva_walk walk;
	uint32_t head_dim;
	uint32_t kv_heads;
	uint32_t q_heads;
	uint32_t group;		/* q_heads / kv_heads */
	uint32_t dtype;		/* enum kva_dtype */
	float scale;
	/* fp8: per KV head factors of K and V (NULL: 1); else NULL */
	const float *kscale, *vscale;
};

/**
 * struct kva_decode_span - decode of one sequence, every head, over the
 * tokens [t0, t1).  The kernel leaves, per query head h, the state of the
 * online softmax in m[h], l[h] and the unnormalised accumulator
 * acc[h * head_dim ..] (natural element order).
 */
struct kva_decode_span {
	const struct kva_attn_shape *sh;
	const uint8_t *base;
	uint64_t t0, t1;
	const float *q;		/* [q_heads][head_dim] */
	float *m, *l;		/* [q_heads] */
	float *acc;		/* [q_heads][head_dim] */
	void *scratch;		/* kva_isa_ops.scratch_bytes, 64-byte aligned */
};

/**
 * struct kva_prefill_block - prefill of nq consecutive query tokens of one
 * sequence against one KV head: the group's G query heads of each token,
 * nq * G rows in all.  Query token i sits at position pos0 + i and sees
 * keys 0 .. pos0 + i.  The kernel writes normalised output rows.
 */
struct kva_prefill_block {
	const struct kva_attn_shape *sh;
	const uint8_t *base;
	uint32_t kv_head;
	uint64_t pos0;
	uint32_t nq;
	const float *q;		/* query token 0, head 0 of the sequence ... */
	float *out;		/* ... rows q_heads * head_dim apart */
	void *scratch;
};

/** Query-token rows of one prefill block: nq * G <= this, nq >= 1. */
#define KVA_PREFILL_ROWS 64u

struct kva_isa_ops {
	void (*decode)(const struct kva_decode_span *s);
	void (*prefill)(const struct kva_prefill_block *b);
	/* scratch one call of either needs, for this shape */
	size_t (*scratch_bytes)(const struct kva_attn_shape *sh);
	/*
	 * whether these kernels take this shape (head_dim a multiple of
	 * their vectors, and for AVX-512 fp8 the extensions it needs); when
	 * not, the next narrower ISA's run
	 */
	bool (*supports)(const struct kva_attn_shape *sh);
};

extern const struct kva_isa_ops kva_ops_scalar;
extern const struct kva_isa_ops kva_ops_avx2;
extern const struct kva_isa_ops kva_ops_avx512;

/*
 * The x86 SIMD kernels are in: not on another architecture, nor in a
 * build made with KVK_NO_SIMD (make KVK_NO_SIMD=1: the reference and the
 * scalar kernels alone, for a compiler that cannot build the others).
 */
#if (defined(__x86_64__) || defined(__i386__)) && !defined(KVK_NO_SIMD)
#define KVK_X86_SIMD	1
#endif

/* attn_cpu.c: bf16 of the e4m3 magnitudes, low bytes then high bytes */
extern const uint8_t kva_e4m3_bf16_lut[256];

/*
 * attn_avx512_dp.c: decode of fp8 and bf16 caches on vdpbf16ps, with
 * AVX-512 VBMI and BF16
 */
bool kva_avx512_dp_supported(const struct kva_attn_shape *sh);
size_t kva_avx512_dp_scratch_bytes(const struct kva_attn_shape *sh);
void kva_avx512_dp_decode(const struct kva_decode_span *s);

/**
 * kva_attn_shape_init() - check @p and derive the shape of a call.
 * Returns 0 or -EINVAL.  (attn_cpu.c)
 */
int kva_attn_shape_init(struct kva_attn_shape *sh,
			const struct kva_attn_params *p);

static inline size_t kva_align64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

/** Rows of a prefill block of this shape: max(G, floor(64 / G) * G). */
static inline uint32_t kva_prefill_block_tokens(uint32_t group)
{
	uint32_t nq = KVA_PREFILL_ROWS / group;

	return nq ? nq : 1;
}

#ifdef __cplusplus
}
#endif

#endif /* KVA_ATTN_INTERNAL_H */
