/* SPDX-License-Identifier: MIT */
/*
 * decode_split.h - how the CUDA decode cuts sequences into pieces and
 * lays its blocks out in the grid.  Plain arithmetic, compiled by nvcc
 * for the kernels and by the C compiler for selftests/kernels, so the
 * CPU tests check the very numbers the device uses:
 *
 *  - kva_split_plan(): the plan's pieces for a batch and a longest
 *    sequence, enough blocks to fill the device's resident block slots
 *    (multiprocessors times the kernel's occupancy) once;
 *  - kva_split_piece(): the piece length of one sequence; one longer than
 *    the plan was cut for gets longer pieces, never more of them than the
 *    plan has blocks (more would fall outside grid.x: their output never
 *    written, the ticket of the sequence left non-zero);
 *  - kva_attn_grid(): the grid, sequences and pieces in x (up to
 *    2^31 - 1 blocks), KV heads and head groups in y; grid.z, which
 *    stops at 65535, is left at 1.
 */
#ifndef KVA_DECODE_SPLIT_H
#define KVA_DECODE_SPLIT_H

#include <errno.h>
#include <stdint.h>

#ifdef __CUDACC__
#define KVA_SPLIT_FN static __host__ __device__ __forceinline__
#else
#define KVA_SPLIT_FN static inline
#endif

/* Tokens in a piece are a multiple of this. */
#define KVA_SPLIT_ALIGN		64u
/* The longest sequence: pieces, multiples of 64, stay below 2^32. */
#define KVA_SPLIT_MAX_TOKENS	0xffffffc0ull
/* The most blocks grid.y and grid.z take; grid.x takes 2^31 - 1. */
#define KVA_GRID_YZ_MAX		65535u
#define KVA_GRID_X_MAX		2147483647u

/**
 * kva_split_plan() - pieces for @blocks (sequence, KV head, head group)
 * triples whose longest sequence has @max_tokens tokens, on a device that
 * runs @slots blocks of the kernel at once (multiprocessors times the
 * blocks of it one holds): enough pieces to fill every slot, each of at
 * least 64 tokens.  Sets *@splits (>= 1) and *@split_tokens (a multiple
 * of 64).  @max_tokens is at most KVA_SPLIT_MAX_TOKENS.
 */
KVA_SPLIT_FN void kva_split_plan(uint64_t slots, uint64_t blocks,
				 uint64_t max_tokens, uint32_t *splits,
				 uint32_t *split_tokens)
{
	uint64_t n, st;

	n = blocks ? (slots + blocks - 1) / blocks : 1;
	if (n > (max_tokens + KVA_SPLIT_ALIGN - 1) / KVA_SPLIT_ALIGN)
		n = (max_tokens + KVA_SPLIT_ALIGN - 1) / KVA_SPLIT_ALIGN;
	if (!n)
		n = 1;
	st = ((max_tokens + n - 1) / n + KVA_SPLIT_ALIGN - 1) &
	     ~(uint64_t)(KVA_SPLIT_ALIGN - 1);
	if (!st)
		st = KVA_SPLIT_ALIGN;
	n = (max_tokens + st - 1) / st;
	*splits = n ? (uint32_t)n : 1;
	*split_tokens = (uint32_t)st;
}

/**
 * kva_split_piece() - tokens per piece of a sequence of @tokens tokens
 * under a plan of @splits pieces of @split_tokens: the plan's, or for a
 * longer sequence the multiple of 64 that cuts it into at most @splits
 * pieces.  @tokens is at most KVA_SPLIT_MAX_TOKENS.
 */
KVA_SPLIT_FN uint32_t kva_split_piece(uint64_t tokens, uint32_t splits,
				      uint32_t split_tokens)
{
	uint64_t p;

	if (tokens <= (uint64_t)split_tokens * splits)
		return split_tokens;
	p = ((tokens + splits - 1) / splits + KVA_SPLIT_ALIGN - 1) &
	    ~(uint64_t)(KVA_SPLIT_ALIGN - 1);
	return (uint32_t)(p < KVA_SPLIT_MAX_TOKENS ? p : KVA_SPLIT_MAX_TOKENS);
}

/** kva_split_count() - the pieces of @tokens tokens at @piece per piece. */
KVA_SPLIT_FN uint32_t kva_split_count(uint64_t tokens, uint32_t piece)
{
	return (uint32_t)((tokens + piece - 1) / piece);
}

/**
 * kva_attn_grid() - the grid of the decode (or prefill) for @nr_seqs
 * sequences of @splits pieces (prefill: row blocks) and @kv_heads KV
 * heads of @hgroups head groups each (prefill: 1).
 *
 * Returns 0 and sets @x and @y, or -EINVAL when the grid cannot hold
 * them (more than 2^31 - 1 (sequence, piece) pairs, or more than 65535
 * (KV head, head group) pairs).
 */
KVA_SPLIT_FN int kva_attn_grid(uint32_t nr_seqs, uint32_t splits,
				 uint32_t kv_heads, uint32_t hgroups,
				 uint32_t *x, uint32_t *y)
{
	uint64_t gx = (uint64_t)nr_seqs * splits;
	uint64_t gy = (uint64_t)kv_heads * hgroups;

	if (!gx || !gy || gx > KVA_GRID_X_MAX || gy > KVA_GRID_YZ_MAX)
		return -EINVAL;
	*x = (uint32_t)gx;
	*y = (uint32_t)gy;
	return 0;
}

#endif /* KVA_DECODE_SPLIT_H */
