/* SPDX-License-Identifier: MIT */
/*
 * kvattn_cuda.h - attention over the kvarena frame layout, on an NVIDIA
 * GPU (sm_80 and newer).  What is computed, and the layouts of q, out and
 * the sequence descriptors, are those of kvattn.h; this header says only
 * what differs on the device.
 *
 *  - Every pointer is a device pointer: the caches (struct kva_attn_seq.base),
 *    the descriptor arrays, q, out, the workspace.  The descriptors live on
 *    the device so that a serving loop can update them without a copy.
 *  - Calls are asynchronous on @stream (NULL: the legacy default stream);
 *    argument errors come back at once, launch errors as -EIO with the CUDA
 *    error kept for kva_cuda_last_error().  A fault inside a kernel shows
 *    at the next synchronisation, as always with CUDA.
 *  - head_dim is 64, 128 or 256 (else -ENOTSUP); the frame size and the
 *    workspace are 16-byte aligned and the descriptor arrays aligned for
 *    their type (else -EINVAL, at the call).  Each sequence's base must
 *    be 16-byte aligned too, and so every row is; the descriptors live on
 *    the device, where the call does not read them, so a misaligned base
 *    is not an -EINVAL but a misaligned-address fault at the next
 *    synchronisation.  (Frames and ranges from libkvarena are aligned to
 *    the frame size.)
 *  - q and out may be fp32, fp16 or bf16 (kva_attn_params.qo_dtype).
 *  - Decode reads K and V in their dtype (fp8 widened exactly to fp16,
 *    then fp32) and computes in fp32, as the CPU kernels do.  Prefill of
 *    fp16, bf16 and fp8 caches runs on the tensor cores (wmma, fp32
 *    accumulation; fp8 staged as fp16): q and the softmax weights are
 *    rounded to fp16/bf16 before the two matrix products, so its error
 *    bound is that dtype's (see selftests/gpu/); fp32 caches take an fp32
 *    path.
 *  - Batches of any size up to 2^31 - 1 blocks: the sequences go in grid.x
 *    with their pieces, not in grid.z, which stops at 65535
 *    (kernels/decode_split.h).
 *
 * Decode is flash-decoding: each (sequence, KV head) is split into pieces
 * of plan.split_tokens tokens, one thread block each, which leave an
 * online-softmax partial in the workspace; the last block of a sequence to
 * finish merges its partials (kernels/tile_math.h) and writes the output.
 * A sequence longer than the plan's max_tokens is cut into longer pieces,
 * never more than the plan has blocks (kva_split_piece()), so its result
 * is complete and the workspace stays ready; it only runs on fewer blocks
 * per token than a plan for that length would.
 *
 * Thread-safety: the functions keep no state but a thread-local error; a
 * workspace serves one decode in flight at a time.
 */
#ifndef KVA_KVATTN_CUDA_H
#define KVA_KVATTN_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "kvattn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cudaStream_t, without the CUDA headers. */
struct CUstream_st;

/**
 * struct kva_cuda_decode_plan - how a decode is cut, from
 * kva_cuda_decode_plan().
 * @splits:          blocks per (sequence, KV head)
 * @split_tokens:    tokens per block, a multiple of 64
 * @max_tokens:      the longest sequence the plan is cut for (longer ones
 *                   are computed, on the same blocks)
 * @nr_seqs:         the largest batch the plan allows
 * @workspace_bytes: device memory kva_cuda_attn_decode() needs
 */
struct kva_cuda_decode_plan {
	uint32_t splits;
	uint32_t split_tokens;
	uint64_t max_tokens;
	uint32_t nr_seqs;
	uint32_t reserved;
	size_t workspace_bytes;
};

/**
 * kva_cuda_decode_plan() - cut a decode of up to @nr_seqs sequences of up
 * to @max_tokens tokens for the current device, so that the blocks fill
 * every multiprocessor once, with as many as it holds of the kernel for
 * this shape (cudaOccupancyMaxActiveBlocksPerMultiprocessor).
 *
 * Returns 0, -EINVAL (also for @max_tokens above KVA_SPLIT_MAX_TOKENS,
 * 2^32 - 64, or a batch the grid cannot hold), -ENOTSUP (head_dim) or
 * -EIO (no device).
 */
int kva_cuda_decode_plan(const struct kva_attn_params *p, uint32_t nr_seqs,
			 uint64_t max_tokens,
			 struct kva_cuda_decode_plan *plan);

/**
 * kva_cuda_attn_decode() - as kva_attn_decode(), on the device.
 * @plan:      from kva_cuda_decode_plan() for these params, with
 *             nr_seqs <= plan->nr_seqs; every tokens at most 2^32 - 64,
 *             best at most plan->max_tokens
 * @workspace: plan->workspace_bytes of device memory, zeroed once before
 *             its first use (cudaMemset); every decode leaves it zeroed
 *
 * Returns 0, -EINVAL or -EIO.
 */
int kva_cuda_attn_decode(const struct kva_attn_params *p,
			 const struct kva_cuda_decode_plan *plan,
			 const struct kva_attn_seq *seqs, uint32_t nr_seqs,
			 const void *q, void *out, void *workspace,
			 struct CUstream_st *stream);

/**
 * kva_cuda_attn_prefill() - as kva_attn_prefill(), on the device.
 * @max_q_tokens: at least every sequence's q_tokens (sizes the grid)
 *
 * Returns 0, -EINVAL, -ENOTSUP or -EIO.
 */
int kva_cuda_attn_prefill(const struct kva_attn_params *p,
			  const struct kva_prefill_seq *seqs, uint32_t nr_seqs,
			  uint32_t max_q_tokens, const void *q, void *out,
			  struct CUstream_st *stream);

/**
 * kva_cuda_kv_append() - as kva_kv_append(), on the device: @base, @k and
 * @v are device pointers.
 *
 * Returns 0, -EINVAL or -EIO.
 */
int kva_cuda_kv_append(const struct kva_geometry *g, uint32_t layer,
		       void *base, uint64_t pos, uint32_t n,
		       enum kva_dtype src_dtype, const void *k, const void *v,
		       struct CUstream_st *stream);

/**
 * kva_cuda_kv_append_scaled() - as kva_kv_append_scaled(), on the device:
 * @base, @k, @v and @kv_scale are device pointers; the bytes written are
 * those the CPU function writes.
 *
 * Returns 0, -EINVAL or -EIO.
 */
int kva_cuda_kv_append_scaled(const struct kva_geometry *g, uint32_t layer,
			      void *base, uint64_t pos, uint32_t n,
			      enum kva_dtype src_dtype, const void *k,
			      const void *v, const float *kv_scale,
			      struct CUstream_st *stream);

/** kva_cuda_last_error() - the cudaError_t behind this thread's last -EIO. */
int kva_cuda_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* KVA_KVATTN_CUDA_H */
