// SPDX-License-Identifier: MIT
/*
 * append.cu - kva_cuda_kv_append(): new tokens' K and V of one layer into
 * the frame layout; one thread per element, converted through fp32 with
 * tile_math.h's rounding (for fp8, of x * (1 / scale), as the CPU's
 * kva_kv_append_scaled() does, so both write the same bytes).  Also the
 * thread-local error.
 */
#include "common.cuh"

namespace kva {

static thread_local int last_error;

int fail(cudaError_t err)
{
	last_error = (int)err;
	return -EIO;
}

__global__ void append_kernel(kva_walk w, uint32_t kv_heads,
			      uint32_t head_dim, uint32_t dtype, uint8_t *base,
			      uint64_t pos, uint32_t n, uint32_t src_dtype,
			      const uint8_t *k, const uint8_t *v,
			      const float *kv_scale)
{
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	uint64_t per_kv = (uint64_t)n * kv_heads * head_dim;
	uint32_t kv, h, d, t;
	size_t ssz = src_dtype == FP32 ? 4 : 2;
	const uint8_t *src;
	uint8_t *row;

	if (i >= 2 * per_kv)
		return;
	kv = (uint32_t)(i / per_kv);
	i %= per_kv;			/* [n][kv_heads][head_dim] */
	d = (uint32_t)(i % head_dim);
	h = (uint32_t)(i / head_dim % kv_heads);
	t = (uint32_t)(i / head_dim / kv_heads);
	src = (kv ? v : k) + ((size_t)t * kv_heads + h) * head_dim * ssz;
	row = base + w.kv_off[kv] + (uint64_t)h * w.head_stride +
	      (pos + t) / w.tpf * w.frame_size +
	      (pos + t) % w.tpf * w.row_bytes;
	kva_elem_from_f32(row, d, dtype, kva_elem_to_f32(src, d, src_dtype) *
			  (kv_scale ? 1.0f / kv_scale[kv * kv_heads + h] :
				      1.0f));
}

} /* namespace kva */

extern "C" int kva_cuda_last_error(void)
{
	return kva::last_error;
}

extern "C" int kva_cuda_kv_append_scaled(const struct kva_geometry *g,
					 uint32_t layer, void *base,
					 uint64_t pos, uint32_t n,
					 enum kva_dtype src_dtype,
					 const void *k, const void *v,
					 const float *kv_scale,
					 struct CUstream_st *stream)
{
	kva_walk w;
	uint64_t total;

	if (!g || !g->tokens_per_frame || g->dtype >= KVA_DTYPE_COUNT ||
	    layer >= g->layers || (unsigned int)src_dtype >= KVA_DTYPE_COUNT ||
	    src_dtype == KVA_DTYPE_FP8 ||
	    (kv_scale && g->dtype != KVA_DTYPE_FP8))
		return -EINVAL;
	if (!n)
		return 0;
	if (!base || !k || !v || (uintptr_t)base % 16)
		return -EINVAL;
	kva_walk_init(&w, g, layer);
	total = 2ull * n * g->kv_heads * g->head_dim;
	if ((total + 255) / 256 > INT32_MAX)
		return -EINVAL;
	kva::append_kernel<<<(unsigned int)((total + 255) / 256), 256, 0,
			     stream>>>(w, g->kv_heads, g->head_dim, g->dtype,
				       (uint8_t *)base, pos, n, src_dtype,
				       (const uint8_t *)k, (const uint8_t *)v,
				       kv_scale);
	return kva::launched();
}

extern "C" int kva_cuda_kv_append(const struct kva_geometry *g,
				  uint32_t layer, void *base, uint64_t pos,
				  uint32_t n, enum kva_dtype src_dtype,
				  const void *k, const void *v,
				  struct CUstream_st *stream)
{
	return kva_cuda_kv_append_scaled(g, layer, base, pos, n, src_dtype, k,
					 v, NULL, stream);
}
