/* SPDX-License-Identifier: MIT */
/*
 * common.cuh - what the CUDA kernels share: widening 16-byte vectors of
 * cache elements, launch checks, the thread-local error.
 */
#ifndef KVA_CUDA_COMMON_CUH
#define KVA_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <errno.h>
#include <stdint.h>

#include "attn_internal.h"
#include "kvattn_cuda.h"
#include "tile_math.h"

namespace kva {

enum { FP32 = KVA_DTYPE_FP32, FP16 = KVA_DTYPE_FP16, BF16 = KVA_DTYPE_BF16 };

constexpr unsigned int FULL = 0xffffffffu;

/* Elements of dtype DT in one 16-byte vector. */
template <int DT> __host__ __device__ constexpr int per_vec()
{
	return DT == FP32 ? 4 : 8;
}

/*
 * Widen one 16-byte vector.  bf16 by shifts as in tile_math.h; fp16 by
 * the hardware conversion, which is exact and so gives the same values
 * as kva_fp16_to_f32().
 */
template <int DT>
__device__ __forceinline__ void widen(const uint4 &v, float *out)
{
	const uint32_t w[4] = { v.x, v.y, v.z, v.w };

	if constexpr (DT == FP32) {
#pragma unroll
		for (int i = 0; i < 4; i++)
			out[i] = __uint_as_float(w[i]);
	} else if constexpr (DT == FP16) {
#pragma unroll
		for (int i = 0; i < 4; i++) {
			__half2 h = *reinterpret_cast<const __half2 *>(&w[i]);
			float2 f = __half22float2(h);

			out[2 * i] = f.x;
			out[2 * i + 1] = f.y;
		}
	} else {
#pragma unroll
		for (int i = 0; i < 4; i++) {
			out[2 * i] = __uint_as_float(w[i] << 16);
			out[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
		}
	}
}

/* Offset of token t's row from head 0's row of token 0 (kva_walk_tok). */
__device__ __forceinline__ uint64_t walk_tok(const kva_walk &w, uint32_t t)
{
	uint32_t f = t / w.tpf;

	return (uint64_t)f * w.frame_size + (uint64_t)(t - f * w.tpf) *
	       w.row_bytes;
}

/* Stores @err as this thread's last error; returns -EIO. */
int fail(cudaError_t err);

/* Checks a launch; 0 or -EIO. */
static inline int launched(void)
{
	cudaError_t err = cudaGetLastError();

	return err == cudaSuccess ? 0 : fail(err);
}

/*
 * Checks the shape for the device kernels: head_dim 64, 128 or 256 and
 * 16-byte rows and frames.
 */
static inline int device_shape(kva_attn_shape *sh, const kva_attn_params *p)
{
	int err = kva_attn_shape_init(sh, p);

	if (err)
		return err;
	if (sh->head_dim != 64 && sh->head_dim != 128 && sh->head_dim != 256)
		return -ENOTSUP;
	if (sh->walk.frame_size % 16 || sh->walk.kv_off[0] % 16 ||
	    sh->walk.kv_off[1] % 16 || sh->walk.head_stride % 16)
		return -EINVAL;
	return 0;
}

} /* namespace kva */

#endif /* KVA_CUDA_COMMON_CUH */
