// SPDX-License-Identifier: MIT
/*
 * attn_avx512.c - AVX-512 kernels (F, BW, DQ, VL): attn_simd.h's decode
 * and prefill over attn_avx512.h's 16-lane primitives.  Compiled with
 * those -m flags alone; attn_cpu.c calls in only when the CPU has them.
 *
 * fp8 and bf16 decode run attn_avx512_dp.c's dot-product kernel where
 * the CPU has VBMI and BF16 and head_dim is a multiple of 64, and
 * attn_simd.h's elsewhere; prefill always runs attn_simd.h's.
 */
#include <immintrin.h>

#include "attn_avx512.h"
#include "attn_simd.h"

static void avx512_decode(const struct kva_decode_span *sp)
{
	const struct kva_attn_shape *sh = sp->sh;

	if (kva_avx512_dp_supported(sh))
		kva_avx512_dp_decode(sp);
	else
		simd_decode(sp);
}

static size_t avx512_scratch(const struct kva_attn_shape *sh)
{
	size_t s = simd_scratch(sh);

	if (kva_avx512_dp_supported(sh)) {
		size_t f = kva_avx512_dp_scratch_bytes(sh);

		s = f > s ? f : s;
	}
	return s;
}

const struct kva_isa_ops kva_ops_avx512 = {
	.decode = avx512_decode,
	.prefill = simd_prefill,
	.scratch_bytes = avx512_scratch,
	.supports = simd_supports,
};
