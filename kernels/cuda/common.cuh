/* SPDX-License-Identifier: MIT */
/*
 * common.cuh - what the CUDA kernels share: widening vectors of cache
 * elements, q and out in fp32/fp16/bf16, launch checks, the thread-local
 * error.
 */
#ifndef KVA_CUDA_COMMON_CUH
#define KVA_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <errno.h>
#include <stdint.h>
#include <type_traits>

#include "attn_internal.h"
#include "decode_split.h"
#include "kvattn_cuda.h"
#include "tile_math.h"

namespace kva {

enum { FP32 = KVA_DTYPE_FP32, FP16 = KVA_DTYPE_FP16, BF16 = KVA_DTYPE_BF16,
       FP8 = KVA_DTYPE_FP8 };

constexpr unsigned int FULL = 0xffffffffu;

/*
 * One lane's load of a row: NB bytes (16, 8 or 4) as one vector, for
 * lane_vec<NB>.  The decode picks NB so that a lane holds the number of
 * elements its register budget allows: 8 of 2-byte and 1-byte dtypes (4
 * of fp32) for blocks of up to 4 query heads, half that for 8.
 */
template <int NB> struct lane_vec_of;
template <> struct lane_vec_of<16> { using type = uint4; };
template <> struct lane_vec_of<8> { using type = uint2; };
template <> struct lane_vec_of<4> { using type = uint32_t; };
template <int NB> using lane_vec = typename lane_vec_of<NB>::type;

/* Bytes of one element of dtype DT. */
template <int DT> __host__ __device__ constexpr int elem_bytes()
{
	return DT == FP32 ? 4 : DT == FP8 ? 1 : 2;
}

/* The 32-bit words of a lane_vec. */
__device__ __forceinline__ void words(const uint4 &v, uint32_t *w)
{
	w[0] = v.x;
	w[1] = v.y;
	w[2] = v.z;
	w[3] = v.w;
}

__device__ __forceinline__ void words(const uint2 &v, uint32_t *w)
{
	w[0] = v.x;
	w[1] = v.y;
}

__device__ __forceinline__ void words(const uint32_t &v, uint32_t *w)
{
	w[0] = v;
}

/*
 * Widen one lane_vec of NB bytes to NB / elem_bytes<DT>() floats.  bf16
 * by shifts as in tile_math.h; fp16 and e4m3 by the hardware conversions
 * (e4m3 through fp16: sm_89 and later have the instruction, cuda_fp8.h
 * falls back to code before), which are exact and so give the same
 * values as kva_fp16_to_f32() and kva_e4m3_to_f32().
 */
template <int DT, int NB>
__device__ __forceinline__ void widen(const lane_vec<NB> &v, float *out)
{
	uint32_t w[NB / 4];

	words(v, w);
#pragma unroll
	for (int i = 0; i < NB / 4; i++) {
		if constexpr (DT == FP8) {
#pragma unroll
			for (int j = 0; j < 2; j++) {
				__half2_raw r = __nv_cvt_fp8x2_to_halfraw2(
					(__nv_fp8x2_storage_t)(w[i] >> (16 * j)),
					__NV_E4M3);
				float2 f = __half22float2(
					*reinterpret_cast<__half2 *>(&r));

				out[4 * i + 2 * j] = f.x;
				out[4 * i + 2 * j + 1] = f.y;
			}
		} else if constexpr (DT == FP32) {
			out[i] = __uint_as_float(w[i]);
		} else if constexpr (DT == FP16) {
			__half2 h = *reinterpret_cast<const __half2 *>(&w[i]);
			float2 f = __half22float2(h);

			out[2 * i] = f.x;
			out[2 * i + 1] = f.y;
		} else {
			out[2 * i] = __uint_as_float(w[i] << 16);
			out[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
		}
	}
}

/* Element @i of q (dtype @qo: fp32, fp16, bf16) as a float. */
__device__ __forceinline__ float q_get(const void *q, size_t i, uint32_t qo)
{
	if (qo == FP16)
		return __half2float(((const __half *)q)[i]);
	if (qo == BF16)
		return __bfloat162float(((const __nv_bfloat16 *)q)[i]);
	return ((const float *)q)[i];
}

/* Store @v as element @i of out (dtype @qo), rounded to nearest even. */
__device__ __forceinline__ void out_put(void *out, size_t i, uint32_t qo,
					float v)
{
	if (qo == FP16)
		((__half *)out)[i] = __float2half_rn(v);
	else if (qo == BF16)
		((__nv_bfloat16 *)out)[i] = __float2bfloat16_rn(v);
	else
		((float *)out)[i] = v;
}

/* The fp8 factor of K (kv 0) or V (kv 1) of KV head @h, 1 without. */
__device__ __forceinline__ float kv_factor(const float *kv_scale,
					   uint32_t kv_heads, int kv,
					   uint32_t h)
{
	return kv_scale ? kv_scale[kv * kv_heads + h] : 1.0f;
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
 * 16-byte rows and frames (8-byte for fp8 rows, which are half as wide).
 * kv_scale is a device pointer: its values are not checked here.
 */
static inline int device_shape(kva_attn_shape *sh, const kva_attn_params *p)
{
	kva_attn_params hp;
	int err;

	if (!p)
		return -EINVAL;
	/* the CPU check reads the scales; these live on the device */
	hp = *p;
	hp.kv_scale = NULL;
	err = kva_attn_shape_init(sh, &hp);
	if (err)
		return err;
	if (p->kv_scale && sh->dtype != FP8)
		return -EINVAL;
	sh->kscale = p->kv_scale;
	sh->vscale = p->kv_scale ? p->kv_scale + sh->kv_heads : NULL;
	if (sh->head_dim != 64 && sh->head_dim != 128 && sh->head_dim != 256)
		return -ENOTSUP;
	if (sh->walk.frame_size % 16 || sh->walk.kv_off[0] % 16 ||
	    sh->walk.kv_off[1] % 16 || sh->walk.head_stride % 16)
		return -EINVAL;
	return 0;
}

} /* namespace kva */

#endif /* KVA_CUDA_COMMON_CUH */
