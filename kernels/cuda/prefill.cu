// SPDX-License-Identifier: MIT
/*
 * prefill.cu - causal prefill over the frame layout.
 *
 * Grid: (block of 64 query rows, KV head, sequence); 128 threads, each
 * warp owning 16 of the rows.  A row is one (query token, query head of
 * the group), so the group's heads share every K/V tile.  The keys are
 * walked in tiles of 32: the block loads the tile's K and V rows into
 * shared memory, then each warp
 *
 *   S = Q K^T               (16 x 32; wmma on fp16/bf16, fp32 FMAs else)
 *   online softmax          two lanes per row, tile_math.h's state
 *   O = alpha O + P V       (16 x head_dim, kept in shared memory)
 *
 * For fp16/bf16 caches Q and P are rounded to the cache's dtype for the
 * tensor cores, which accumulate in fp32; l sums the rounded P, so the
 * normalisation matches what was multiplied.  An fp8 cache is widened to
 * fp16 as its tiles are staged (exact: fp16 holds every e4m3 value) and
 * then takes the fp16 path; its K scale multiplies the scores, its V
 * scale the output.  The sequences are in grid.x (up to 2^31 - 1 blocks)
 * rather than grid.z, which stops at 65535.
 */
#include <mma.h>

#include "common.cuh"

namespace kva {

constexpr int BM = 64, BN = 32, PWARPS = 4;

struct prefill_args {
	kva_walk w;
	const kva_prefill_seq *seqs;
	const void *q;
	void *out;
	const float *kv_scale;		/* fp8: [2][kv_heads], or NULL */
	uint32_t row_blocks;		/* grid.x blocks per sequence */
	uint32_t q_heads, kv_heads, group, qo;
	float scale;
};

/* What a tile is staged as in shared memory. */
template <int DT> struct elem { using type = float; };
template <> struct elem<FP16> { using type = __half; };
template <> struct elem<BF16> { using type = __nv_bfloat16; };
template <> struct elem<FP8> { using type = __half; };

template <typename T> __device__ __forceinline__ T to_t(float f);
template <> __device__ __forceinline__ float to_t<float>(float f) { return f; }
template <> __device__ __forceinline__ __half to_t<__half>(float f)
{
	return __float2half_rn(f);
}
template <> __device__ __forceinline__ __nv_bfloat16 to_t<__nv_bfloat16>(float f)
{
	return __float2bfloat16_rn(f);
}

__device__ __forceinline__ float to_f(float f) { return f; }
__device__ __forceinline__ float to_f(__half h) { return __half2float(h); }
__device__ __forceinline__ float to_f(__nv_bfloat16 h)
{
	return __bfloat162float(h);
}

template <int DT, int D>
__host__ __device__ constexpr size_t prefill_smem()
{
	using T = typename elem<DT>::type;

	return (size_t)(BM * D + 2 * BN * D + BM * BN) * sizeof(T) +
	       (size_t)(BM * BN + BM * D) * sizeof(float);
}

/* S[16][BN] = Q[16][D] K[BN][D]^T for one warp. */
template <int DT, int D>
__device__ __forceinline__ void warp_scores(const typename elem<DT>::type *Qw,
					    const typename elem<DT>::type *Ks,
					    float *Sw, uint32_t lane)
{
	if constexpr (DT == FP32) {
		/* lane = key; rotate d by lane to spread the banks */
		for (int r = 0; r < 16; r++) {
			float dot = 0.0f;

			for (int i = 0; i < D; i++) {
				int d = (i + lane) % D;

				dot = fmaf(Qw[r * D + d], Ks[lane * D + d], dot);
			}
			Sw[r * BN + lane] = dot;
		}
	} else {
		using namespace nvcuda;
		using T = typename elem<DT>::type;
		wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
		wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb;
		wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;

#pragma unroll
		for (int nb = 0; nb < BN / 16; nb++) {
			wmma::fill_fragment(fc, 0.0f);
#pragma unroll
			for (int kd = 0; kd < D / 16; kd++) {
				wmma::load_matrix_sync(fa, Qw + kd * 16, D);
				/* K^T is K read column-major */
				wmma::load_matrix_sync(fb, Ks + nb * 16 * D +
						       kd * 16, D);
				wmma::mma_sync(fc, fa, fb, fc);
			}
			wmma::store_matrix_sync(Sw + nb * 16, fc, BN,
						wmma::mem_row_major);
		}
	}
}

/* O[16][D] += P[16][BN] V[BN][D] for one warp. */
template <int DT, int D>
__device__ __forceinline__ void warp_pv(const typename elem<DT>::type *Pw,
					const typename elem<DT>::type *Vs,
					float *Ow, uint32_t lane)
{
	if constexpr (DT == FP32) {
		for (int d = lane; d < D; d += 32)
			for (int r = 0; r < 16; r++) {
				float o = Ow[r * D + d];

				for (int j = 0; j < BN; j++)
					o = fmaf(Pw[r * BN + j], Vs[j * D + d], o);
				Ow[r * D + d] = o;
			}
	} else {
		using namespace nvcuda;
		using T = typename elem<DT>::type;
		wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
		wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
		wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;

#pragma unroll
		for (int db = 0; db < D / 16; db++) {
			wmma::load_matrix_sync(fc, Ow + db * 16, D,
					       wmma::mem_row_major);
#pragma unroll
			for (int kb = 0; kb < BN / 16; kb++) {
				wmma::load_matrix_sync(fa, Pw + kb * 16, BN);
				wmma::load_matrix_sync(fb, Vs + kb * 16 * D +
						       db * 16, D);
				wmma::mma_sync(fc, fa, fb, fc);
			}
			wmma::store_matrix_sync(Ow + db * 16, fc, D,
						wmma::mem_row_major);
		}
	}
}

/*
 * 16 bytes of the staged tile (VE elements of T) from the cache row at
 * @src, element c * VE: a plain copy, or for fp8, 8 codes widened to
 * fp16.
 */
template <int DT>
__device__ __forceinline__ uint4 stage16(const uint8_t *src, uint32_t c)
{
	if constexpr (DT == FP8) {
		uint2 x = __ldg((const uint2 *)(src + c * 8));
		const uint32_t w[2] = { x.x, x.y };
		uint32_t h[4];

#pragma unroll
		for (int i = 0; i < 4; i++) {
			__half2_raw r = __nv_cvt_fp8x2_to_halfraw2(
				(__nv_fp8x2_storage_t)(w[i / 2] >> (16 * (i % 2))),
				__NV_E4M3);

			h[i] = (uint32_t)r.x | (uint32_t)r.y << 16;
		}
		return make_uint4(h[0], h[1], h[2], h[3]);
	} else {
		return __ldg((const uint4 *)(src + c * 16));
	}
}

template <int DT, int D>
__global__ void __launch_bounds__(PWARPS * 32)
prefill_kernel(const prefill_args a)
{
	extern __shared__ __align__(128) unsigned char smem[];
	const uint32_t seq = blockIdx.x / a.row_blocks;
	using T = typename elem<DT>::type;
	constexpr int VPR = D * (int)sizeof(T) / 16;	/* vectors per row */
	T *Qs = (T *)smem;			/* [BM][D] */
	T *Ks = Qs + BM * D;			/* [BN][D] */
	T *Vs = Ks + BN * D;			/* [BN][D] */
	T *Ps = Vs + BN * D;			/* [BM][BN] */
	float *Ss = (float *)(Ps + BM * BN);	/* [BM][BN] */
	float *Os = Ss + BM * BN;		/* [BM][D] */

	const kva_prefill_seq s = a.seqs[seq];
	const uint32_t kvh = blockIdx.y, G = a.group;
	const uint32_t rows = s.q_tokens * G;
	const uint32_t r0 = blockIdx.x % a.row_blocks * BM;
	const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const uint64_t prefix = s.tokens - s.q_tokens;
	const float kf = kv_factor(a.kv_scale, a.kv_heads, 0, kvh) * a.scale;
	const float vf = kv_factor(a.kv_scale, a.kv_heads, 1, kvh);

	if (r0 >= rows)
		return;

	for (uint32_t i = threadIdx.x; i < BM * D; i += blockDim.x) {
		uint32_t r = r0 + i / D, d = i % D;
		float v = 0.0f;

		if (r < rows)
			v = q_get(a.q, ((size_t)(s.q_start + r / G) * a.q_heads +
					kvh * G + r % G) * D + d, a.qo);
		Qs[i] = to_t<T>(v);
		Os[i] = 0.0f;
	}

	/* this lane's row: two lanes per row, each half the tile's keys */
	const uint32_t lrow = warp * 16 + lane / 2, half = lane & 1;
	const uint32_t row = r0 + lrow;
	const bool live = row < rows;
	const uint64_t pos = live ? prefix + row / G : 0;
	const uint32_t last = min(r0 + BM, rows) - 1;
	const uint64_t kend = prefix + last / G + 1;
	const uint8_t *kb = (const uint8_t *)s.base + a.w.kv_off[KVA_K] +
			    (uint64_t)kvh * a.w.head_stride;
	const uint8_t *vb = (const uint8_t *)s.base + a.w.kv_off[KVA_V] +
			    (uint64_t)kvh * a.w.head_stride;
	kva_softmax st;

	kva_softmax_init(&st);
	for (uint64_t k0 = 0; k0 < kend; k0 += BN) {
		__syncthreads();	/* the last tile is used up */
		for (uint32_t i = threadIdx.x; i < BN * VPR; i += blockDim.x) {
			uint32_t j = i / VPR, c = i % VPR;
			uint4 kx = make_uint4(0, 0, 0, 0), vx = kx;

			if (k0 + j < kend) {
				uint64_t off = walk_tok(a.w, (uint32_t)(k0 + j));

				kx = stage16<DT>(kb + off, c);
				vx = stage16<DT>(vb + off, c);
			}
			((uint4 *)Ks)[i] = kx;
			((uint4 *)Vs)[i] = vx;
		}
		__syncthreads();

		warp_scores<DT, D>(Qs + warp * 16 * D, Ks, Ss + warp * 16 * BN,
				   lane);
		__syncwarp();

		float sc[BN / 2], tmax = -INFINITY, alpha;
		const float *srow = Ss + lrow * BN + half * (BN / 2);
		T *prow = Ps + lrow * BN + half * (BN / 2);
		float *orow = Os + lrow * D;

#pragma unroll
		for (int c = 0; c < BN / 2; c++) {
			uint64_t key = k0 + half * (BN / 2) + c;

			sc[c] = live && key <= pos ? srow[c] * kf
						   : -INFINITY;
			tmax = fmaxf(tmax, sc[c]);
		}
		tmax = fmaxf(tmax, __shfl_xor_sync(FULL, tmax, 1));
		alpha = kva_softmax_rescale(&st, tmax);
#pragma unroll
		for (int c = 0; c < BN / 2; c++) {
			T p = to_t<T>(kva_softmax_weight(&st, sc[c]));

			prow[c] = p;
			kva_softmax_add(&st, to_f(p));
		}
		if (alpha != 1.0f)
			for (uint32_t d = half; d < D; d += 2)
				orow[d] *= alpha;
		__syncwarp();

		warp_pv<DT, D>(Ps + warp * 16 * BN, Vs, Os + warp * 16 * D,
			       lane);
		__syncwarp();
	}

	/* the two lanes of a row each summed half its weights */
	kva_softmax fin = { st.m, st.l + __shfl_xor_sync(FULL, st.l, 1) };
	float norm = kva_softmax_norm(&fin);

	if (live) {
		size_t o = ((size_t)(s.q_start + row / G) * a.q_heads +
			    kvh * G + row % G) * D;

		for (uint32_t d = half; d < D; d += 2)
			out_put(a.out, o + d, a.qo, Os[lrow * D + d] * norm * vf);
	}
}

template <int DT, int D>
static int launch(dim3 grid, cudaStream_t stream, const prefill_args &a)
{
	constexpr size_t smem = prefill_smem<DT, D>();
	int dev, optin;

	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&optin,
				   cudaDevAttrMaxSharedMemoryPerBlockOptin,
				   dev) != cudaSuccess)
		return fail(cudaGetLastError());
	if (smem > (size_t)optin)
		return -ENOTSUP;
	if (cudaFuncSetAttribute(prefill_kernel<DT, D>,
				 cudaFuncAttributeMaxDynamicSharedMemorySize,
				 (int)smem) != cudaSuccess)
		return fail(cudaGetLastError());
	prefill_kernel<DT, D><<<grid, PWARPS * 32, smem, stream>>>(a);
	return launched();
}

template <int DT>
static int launch_dt(uint32_t head_dim, dim3 grid, cudaStream_t stream,
		     const prefill_args &a)
{
	switch (head_dim) {
	case 64: return launch<DT, 64>(grid, stream, a);
	case 128: return launch<DT, 128>(grid, stream, a);
	default: return launch<DT, 256>(grid, stream, a);
	}
}

} /* namespace kva */

using namespace kva;

extern "C" int kva_cuda_attn_prefill(const struct kva_attn_params *p,
				     const struct kva_prefill_seq *seqs,
				     uint32_t nr_seqs, uint32_t max_q_tokens,
				     const void *q, void *out,
				     struct CUstream_st *stream)
{
	kva_attn_shape sh;
	prefill_args a;
	uint64_t blocks;
	uint32_t gx, gy;
	int err;

	err = device_shape(&sh, p);
	if (err)
		return err;
	if (!nr_seqs || !max_q_tokens)
		return 0;
	if (!seqs || !q || !out ||
	    (uintptr_t)seqs % alignof(struct kva_prefill_seq))
		return -EINVAL;
	blocks = ((uint64_t)max_q_tokens * sh.group + BM - 1) / BM;
	if (blocks > UINT32_MAX ||
	    kva_attn_grid(nr_seqs, (uint32_t)blocks, sh.kv_heads, 1, &gx, &gy))
		return -EINVAL;
	a.w = sh.walk;
	a.seqs = seqs;
	a.q = q;
	a.out = out;
	a.kv_scale = p->kv_scale;
	a.row_blocks = (uint32_t)blocks;
	a.q_heads = sh.q_heads;
	a.kv_heads = sh.kv_heads;
	a.group = sh.group;
	a.qo = p->qo_dtype;
	a.scale = sh.scale;

	dim3 grid(gx, gy);

	switch (sh.dtype) {
	case FP32: return launch_dt<FP32>(sh.head_dim, grid, stream, a);
	case FP16: return launch_dt<FP16>(sh.head_dim, grid, stream, a);
	case FP8: return launch_dt<FP8>(sh.head_dim, grid, stream, a);
	default: return launch_dt<BF16>(sh.head_dim, grid, stream, a);
	}
}
