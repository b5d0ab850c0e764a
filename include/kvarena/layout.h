/* SPDX-License-Identifier: MIT */
/*
 * kvarena/layout.h - the frame layout: the contract between the runtime
 * (libkvarena, which maps frames behind one contiguous virtual range per
 * sequence) and the attention kernels (which read that range with address
 * arithmetic alone).
 *
 * One frame holds all layers of T_f consecutive tokens of one sequence:
 *
 *   frame = [layer][K|V][kv_head][token_in_frame][head_dim]   dtype elements
 *   T_f   = floor(frame_size / bytes_per_token)
 *   bytes_per_token = 2 * layers * kv_heads * head_dim * dtype_size
 *
 *   offset(l, kv, h, t) = (t / T_f) * frame_size
 *       + ((((l * 2 + kv) * kv_heads + h) * T_f + t % T_f) * head_dim)
 *         * dtype_size
 *
 * Where frame_size is not a multiple of bytes_per_token, the tail of every
 * frame (frame_size - T_f * bytes_per_token bytes) is unused.
 *
 * An fp8 cache (KVA_DTYPE_FP8) holds one byte per element, so a frame
 * holds twice the tokens of a bf16 one.  The byte is an E4M3 code c and
 * the element's value is e4m3(c) * scale[kv][head]: one scale per K|V and
 * KV head of each layer, chosen by the caller (calibrated, or the largest
 * magnitude / 448) and passed to the writer and the kernels; the frame
 * holds no scales, so the layout is the same as for the other dtypes.
 *
 * An engine that owns its layout (llama.cpp's per-layer K and V tensors,
 * say) asks for rows instead: KVA_DTYPE_RAW with layers = kv_heads = 1 and
 * head_dim = bytes per row.  A raw frame is [token][head_dim] bytes, one
 * row per token and nothing else, so where frame_size is a multiple of
 * the row the range is an array of rows as long as the sequence, with no
 * gap at frame boundaries; what a row means is the engine's.  The
 * attention kernels take no raw geometry.
 *
 * Header-only, C99 and C++, no dependencies beyond the C library, so the
 * runtime, the CPU kernels, the CUDA kernels (host side) and the tools all
 * use the same arithmetic.
 */
#ifndef KVARENA_LAYOUT_H
#define KVARENA_LAYOUT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** enum kva_dtype - element type of the K and V caches. */
enum kva_dtype {
	KVA_DTYPE_FP32 = 0,
	KVA_DTYPE_FP16 = 1,	/* IEEE 754 binary16 */
	KVA_DTYPE_BF16 = 2,	/* bfloat16: the top half of an fp32 */
	KVA_DTYPE_FP8 = 3,	/* OCP FP8 E4M3 ("e4m3fn": bias 7, no
				 * infinities, +-448 largest, S.1111.111
				 * NaN), times a per-(layer, K|V, KV head)
				 * scale the caller keeps: see below */
	KVA_DTYPE_COUNT,	/* the kernels' dtypes end here */
	KVA_DTYPE_RAW = 255,	/* opaque rows of head_dim bytes: above */
};

/** K and V index of the second layout dimension. */
enum { KVA_K = 0, KVA_V = 1 };

static inline size_t kva_dtype_size(enum kva_dtype dt)
{
	return dt == KVA_DTYPE_FP32 ? 4 :
	       dt == KVA_DTYPE_FP8 || dt == KVA_DTYPE_RAW ? 1 : 2;
}

static inline const char *kva_dtype_name(enum kva_dtype dt)
{
	switch (dt) {
	case KVA_DTYPE_FP32: return "fp32";
	case KVA_DTYPE_FP16: return "fp16";
	case KVA_DTYPE_BF16: return "bf16";
	case KVA_DTYPE_FP8:  return "fp8";
	case KVA_DTYPE_RAW:  return "raw";
	default:             return "?";
	}
}

/**
 * struct kva_geometry - model KV geometry and the frame size it is laid
 * out in.  Fill the first five fields and call kva_geometry_init(), which
 * checks them and derives the rest.
 */
struct kva_geometry {
	uint32_t layers;		/* transformer layers (raw: 1) */
	uint32_t kv_heads;		/* KV heads per layer (raw: 1) */
	uint32_t head_dim;		/* elements per head (raw: bytes per
					 * row) */
	uint32_t dtype;			/* enum kva_dtype */
	uint64_t frame_size;		/* bytes per frame */

	/* derived by kva_geometry_init() */
	uint64_t bytes_per_token;	/* K and V of all layers (raw: the
					 * row) */
	uint32_t tokens_per_frame;	/* T_f */
	uint32_t head_stride;		/* bytes of one [token][head_dim] block
					 * of one (layer, K|V, head): T_f *
					 * head_dim * dtype_size */
};

/** kva_geometry_blocks() - the [token][head_dim] blocks of one frame. */
static inline uint64_t kva_geometry_blocks(const struct kva_geometry *g)
{
	return g->dtype == KVA_DTYPE_RAW ? 1 : 2ull * g->layers * g->kv_heads;
}

/**
 * kva_geometry_init() - check a geometry and derive its frame figures.
 *
 * Returns 0, -EINVAL for a zero or out-of-range field, an unknown dtype or
 * a raw geometry of more than one layer or head, or -E2BIG when one token
 * does not fit in a frame (T_f would be 0).
 */
static inline int kva_geometry_init(struct kva_geometry *g)
{
	uint64_t bpt, tpf, hs;

	if (!g->layers || !g->kv_heads || !g->head_dim || !g->frame_size ||
	    (g->dtype >= KVA_DTYPE_COUNT && g->dtype != KVA_DTYPE_RAW))
		return -EINVAL;
	if (g->dtype == KVA_DTYPE_RAW && (g->layers != 1 || g->kv_heads != 1))
		return -EINVAL;
	/* Keep every product below 2^63 whatever the inputs. */
	if (g->layers > (1u << 16) || g->kv_heads > (1u << 16) ||
	    g->head_dim > (1u << 16) || g->frame_size > (1ull << 40))
		return -EINVAL;
	bpt = kva_geometry_blocks(g) * g->head_dim *
	      kva_dtype_size((enum kva_dtype)g->dtype);
	tpf = g->frame_size / bpt;
	if (tpf == 0)
		return -E2BIG;
	if (tpf > UINT32_MAX)
		return -EINVAL;
	hs = tpf * g->head_dim * kva_dtype_size((enum kva_dtype)g->dtype);
	if (hs > UINT32_MAX)
		return -EINVAL;
	g->bytes_per_token = bpt;
	g->tokens_per_frame = (uint32_t)tpf;
	g->head_stride = (uint32_t)hs;
	return 0;
}

/**
 * kva_geometry_raw() - a raw geometry of @row_bytes per token for frames
 * of @frame_size bytes, checked and derived (kva_geometry_init()'s
 * result).
 */
static inline int kva_geometry_raw(struct kva_geometry *g, uint32_t row_bytes,
				   uint64_t frame_size)
{
	g->layers = 1;
	g->kv_heads = 1;
	g->head_dim = row_bytes;
	g->dtype = KVA_DTYPE_RAW;
	g->frame_size = frame_size;
	return kva_geometry_init(g);
}

/**
 * kva_kv_offset() - byte offset, from a sequence's base, of element 0 of
 * head @head of the K (@kv == KVA_K) or V cache of layer @layer at token
 * @token.  Element d lies d * dtype_size bytes further on.  A raw
 * geometry's row of @token is at kva_kv_offset(g, 0, KVA_K, 0, token).
 */
static inline uint64_t kva_kv_offset(const struct kva_geometry *g,
				     uint32_t layer, uint32_t kv,
				     uint32_t head, uint64_t token)
{
	uint64_t frame = token / g->tokens_per_frame;
	uint64_t t = token % g->tokens_per_frame;
	uint64_t block = ((uint64_t)layer * 2 + kv) * g->kv_heads + head;

	return frame * g->frame_size + block * g->head_stride +
	       t * g->head_dim * kva_dtype_size((enum kva_dtype)g->dtype);
}

/** kva_frames_for() - frames needed to hold @tokens tokens. */
static inline uint64_t kva_frames_for(const struct kva_geometry *g,
				      uint64_t tokens)
{
	return (tokens + g->tokens_per_frame - 1) / g->tokens_per_frame;
}

#ifdef __cplusplus
}
#endif

#endif /* KVARENA_LAYOUT_H */
