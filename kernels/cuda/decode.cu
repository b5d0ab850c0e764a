// SPDX-License-Identifier: MIT
/*
 * decode.cu - flash-decoding over the frame layout.
 *
 * Grid: (sequence x split, KV head x head group); 128 threads, the
 * sequences in grid.x (up to 2^31 - 1 blocks) rather than grid.z, which
 * stops at 65535.  A block takes one piece of split_tokens tokens of one
 * sequence for up to GM query heads sharing one KV head, so every K and V
 * byte is read once per block and used by the whole group.  A sequence
 * longer than the plan's
 * max_tokens is cut into longer pieces, as many as the plan has blocks, so
 * any length is computed (tokens below 2^32), only on fewer blocks per
 * token than a plan for it would give.
 *
 * Within a warp, LPR lanes share one token's row, each loading NB bytes
 * (NV loads of them for wide rows), so a warp reads RPW = 32 / LPR rows
 * per step and U steps are loaded before any is used: U * NV * 2 loads in
 * flight per lane.  The dot product is summed over the LPR lanes
 * with shuffles; the running max is kept equal across the warp, so the
 * per-subgroup sums can be added at the end.  The four warps' states are
 * merged through shared memory with kva_softmax_merge(), then either
 * written (a sequence with one piece) or left in the workspace, where the
 * last block of the (sequence, KV head, group) to finish, counted by an
 * atomic ticket, merges all partials in order and writes the output.
 *
 * Registers: q and the accumulator of GM heads take 2 * GM * EL floats
 * per lane, EL = elements per lane.  8-head blocks halve NB, so EL too
 * where a row is under 32 loads wide (head_dim 64 and 128), and load
 * U = 2 steps ahead instead of 4: sm_90 ptxas gives them 128 registers,
 * as the 4-head blocks, where holding 8 heads like 4 took 254 (head_dim
 * 256 keeps EL = 8: 218).
 */
#include "common.cuh"

namespace kva {

struct decode_args {
	kva_walk w;
	const kva_attn_seq *seqs;
	const void *q;
	void *out;
	const float *kv_scale;		/* fp8: [2][kv_heads], or NULL */
	unsigned int *tickets;		/* [seq][kv_heads * hgroups] */
	float *ws_ml;			/* [seq][q_heads][splits][2] */
	float *ws_acc;			/* [seq][q_heads][splits][D] */
	uint32_t q_heads, kv_heads, group, hgroups, splits;
	uint32_t split_tokens, qo;
	float scale;
};

constexpr int WARPS = 4;

/*
 * The shape of a block's work: a lane loads NB bytes of a row at a time
 * (EPV elements), LPR lanes share a row, NV loads per lane cover it, a
 * warp takes RPW rows per step and loads U steps before using any.  The
 * registers a lane needs grow with GM * EL (q and the accumulator of each
 * head), so 8-head blocks load half as many bytes per lane as the others
 * and hold the same number of floats.
 */
template <int DT, int D, int GM>
struct decode_shape {
	static constexpr int NB = (GM > 4 ? 8 : 16) / (DT == FP8 ? 2 : 1);
	static constexpr int EPV = NB / elem_bytes<DT>();
	static constexpr int VPR = D / EPV;		/* loads per row */
	static constexpr int LPR = VPR < 32 ? VPR : 32;	/* lanes per row */
	static constexpr int NV = VPR / LPR;		/* loads per lane */
	static constexpr int RPW = 32 / LPR;		/* rows per warp step */
	static constexpr int U = GM > 4 ? 2 : 4;	/* steps in flight */
	static constexpr int EL = NV * EPV;		/* elements per lane */
	static constexpr uint32_t STEP = RPW * U;
};

/* Shared memory of a block. */
template <int D, int GM>
struct decode_smem {
	float ml[WARPS][GM][2];
	float acc[WARPS][GM][D];	/* the combine: weights, CH a head */
	float fin[GM][2];		/* the combine: m and l of all pieces */
	int last;
};

/* Pieces whose weights the combine holds at once, per head. */
template <int D>
struct combine_shape {
	static constexpr uint32_t CH = WARPS * D;
};

/* Lock-step merge of (m, l) across a warp's lanes. */
__device__ __forceinline__ void warp_merge(kva_softmax *t)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) {
		kva_softmax p = { __shfl_xor_sync(FULL, t->m, o),
				  __shfl_xor_sync(FULL, t->l, o) };
		float wa, wb;

		kva_softmax_merge(t, &p, &wa, &wb);
	}
}

/*
 * The last block of a (sequence, KV head, head group) merges the nsplit
 * partials in the workspace and writes the output, in parallel rather
 * than as one chain of merges per output element:
 *
 *  1. m and l of all pieces, per head: the block's threads fold a strided
 *     share of the pieces' (m, l) each, then across the warp and the
 *     warps (M = max m_p, L = sum l_p * exp(m_p - M));
 *  2. per chunk of CH pieces, the weights w_p = exp(m_p - M), one expf
 *     per (head, piece) into shared memory, then every output element
 *     sums acc_p * w_p over the chunk: FMAs over coalesced loads, no expf;
 *  3. out = sum / L, times the V scale.
 *
 * The same sum as the chain of kva_softmax_merge() it replaces, each
 * partial scaled once by its own weight instead of by the product of the
 * merges after it; selftests/kernels/test_attn.c checks the two on the
 * CPU against each other (kva_softmax_combine_weight()).
 */
template <int D, int GM>
__device__ __forceinline__ void combine(const decode_args &a,
					decode_smem<D, GM> &sm, size_t slot0,
					size_t orow, uint32_t gn,
					uint32_t nsplit, float vf)
{
	constexpr uint32_t CH = combine_shape<D>::CH;
	constexpr uint32_t NT = WARPS * 32;
	constexpr uint32_t NE = (GM * D + NT - 1) / NT;
	const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	float *w = &sm.acc[0][0][0];
	float o[NE];

	for (uint32_t g = 0; g < gn; g++) {
		const size_t slot = slot0 + (size_t)g * a.splits;
		kva_softmax t;

		kva_softmax_init(&t);
		for (uint32_t p = threadIdx.x; p < nsplit; p += NT) {
			kva_softmax ps = { __ldcg(&a.ws_ml[(slot + p) * 2]),
					   __ldcg(&a.ws_ml[(slot + p) * 2 + 1]) };
			float wa, wb;

			kva_softmax_merge(&t, &ps, &wa, &wb);
		}
		warp_merge(&t);
		if (lane == 0) {
			sm.ml[warp][g][0] = t.m;
			sm.ml[warp][g][1] = t.l;
		}
	}
	__syncthreads();
	if (threadIdx.x < gn) {
		uint32_t g = threadIdx.x;
		kva_softmax t = { sm.ml[0][g][0], sm.ml[0][g][1] };

		for (int i = 1; i < WARPS; i++) {
			kva_softmax ps = { sm.ml[i][g][0], sm.ml[i][g][1] };
			float wa, wb;

			kva_softmax_merge(&t, &ps, &wa, &wb);
		}
		sm.fin[g][0] = t.m;
		sm.fin[g][1] = t.l;
	}
#pragma unroll
	for (uint32_t k = 0; k < NE; k++)
		o[k] = 0.0f;
	for (uint32_t c0 = 0; c0 < nsplit; c0 += CH) {
		const uint32_t cn = min(CH, nsplit - c0);

		__syncthreads();	/* fin written; the last chunk's w read */
		for (uint32_t j = threadIdx.x; j < gn * cn; j += NT) {
			uint32_t g = j / cn, p = j % cn;
			size_t slot = slot0 + (size_t)g * a.splits + c0 + p;

			w[g * CH + p] = kva_softmax_combine_weight(
				__ldcg(&a.ws_ml[slot * 2]), sm.fin[g][0]);
		}
		__syncthreads();
#pragma unroll
		for (uint32_t k = 0; k < NE; k++) {
			uint32_t i = threadIdx.x + k * NT, g = i / D, d = i % D;
			const float *acc, *wg;
			float sum = o[k];

			if (i >= gn * D)
				continue;
			acc = a.ws_acc + (slot0 + (size_t)g * a.splits + c0) * D + d;
			wg = w + g * CH;
#pragma unroll 4
			for (uint32_t p = 0; p < cn; p++)
				sum = fmaf(__ldcg(acc + (size_t)p * D), wg[p], sum);
			o[k] = sum;
		}
	}
#pragma unroll
	for (uint32_t k = 0; k < NE; k++) {
		uint32_t i = threadIdx.x + k * NT, g = i / D;
		kva_softmax bs = { sm.fin[g < GM ? g : 0][0],
				   sm.fin[g < GM ? g : 0][1] };

		if (i < gn * D)
			out_put(a.out, orow + i, a.qo,
				o[k] * kva_softmax_norm(&bs) * vf);
	}
}

/*
 * One (sequence, piece) of the block's (KV head, head group).  Every
 * branch that returns is the same for the whole block.
 */
template <int DT, int D, int GM>
__device__ __forceinline__ void decode_one(const decode_args &a,
					   decode_smem<D, GM> &sm,
					   uint32_t seq, uint32_t split)
{
	using S = decode_shape<DT, D, GM>;
	using V = lane_vec<S::NB>;
	constexpr int EPV = S::EPV, LPR = S::LPR, NV = S::NV, RPW = S::RPW;
	constexpr int U = S::U, EL = S::EL, NB = S::NB;
	constexpr uint32_t STEP = S::STEP;

	const uint32_t kvh = blockIdx.y / a.hgroups;
	const uint32_t g0 = blockIdx.y % a.hgroups * GM;
	const uint32_t gn = min((uint32_t)GM, a.group - g0);
	const uint32_t qh0 = kvh * a.group + g0;
	const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const uint32_t sub = lane / LPR, lr = lane % LPR;
	const uint64_t tokens = a.seqs[seq].tokens;
	const uint8_t *base = (const uint8_t *)a.seqs[seq].base;
	/*
	 * Pieces of the plan's size, or, for a sequence longer than the plan
	 * was cut for, larger ones, so that its a.splits blocks cover it.
	 */
	const uint32_t st = kva_split_piece(tokens, a.splits, a.split_tokens);
	const uint32_t nsplit = kva_split_count(tokens, st);
	const size_t orow = ((size_t)seq * a.q_heads + qh0) * D;
	const float kf = kv_factor(a.kv_scale, a.kv_heads, 0, kvh) * a.scale;
	const float vf = kv_factor(a.kv_scale, a.kv_heads, 1, kvh);

	if (tokens == 0) {		/* no key: the output is 0 */
		if (split == 0)
			for (uint32_t i = threadIdx.x; i < gn * D;
			     i += blockDim.x)
				out_put(a.out, orow + i, a.qo, 0.0f);
		return;
	}
	if (split >= nsplit)
		return;

	float q[GM][EL], acc[GM][EL];
	kva_softmax ss[GM];

#pragma unroll
	for (int g = 0; g < GM; g++) {
		size_t qrow = ((size_t)seq * a.q_heads + qh0 +
			       min((uint32_t)g, gn - 1)) * D;

		kva_softmax_init(&ss[g]);
#pragma unroll
		for (int v = 0; v < NV; v++)
#pragma unroll
			for (int e = 0; e < EPV; e++) {
				q[g][v * EPV + e] = q_get(a.q, qrow +
					(v * LPR + lr) * EPV + e, a.qo) * kf;
				acc[g][v * EPV + e] = 0.0f;
			}
	}

	const uint8_t *kb = base + a.w.kv_off[KVA_K] +
			    (uint64_t)kvh * a.w.head_stride + lr * NB;
	const uint8_t *vb = base + a.w.kv_off[KVA_V] +
			    (uint64_t)kvh * a.w.head_stride + lr * NB;
	const uint32_t t0 = split * st;
	const uint32_t t1 = (uint32_t)min((uint64_t)t0 + st, tokens);

	/* the same trip count for every warp: its tail rows are masked */
	for (uint32_t tb = t0; tb < t1; tb += WARPS * STEP) {
		const uint32_t t = tb + warp * STEP;
		V kx[U][NV], vx[U][NV];
		float s[U][GM];

#pragma unroll
		for (int u = 0; u < U; u++) {
			uint32_t tok = t + u * RPW + sub;

#pragma unroll
			for (int v = 0; v < NV; v++) {
				kx[u][v] = V{};
				vx[u][v] = V{};
			}
			if (tok < t1) {
				uint64_t off = walk_tok(a.w, tok);

#pragma unroll
				for (int v = 0; v < NV; v++) {
					size_t o = off + v * LPR * NB;

					kx[u][v] = __ldg((const V *)(kb + o));
					vx[u][v] = __ldg((const V *)(vb + o));
				}
			}
		}

#pragma unroll
		for (int u = 0; u < U; u++) {
			float k[EL];
			bool ok = t + u * RPW + sub < t1;

#pragma unroll
			for (int v = 0; v < NV; v++)
				widen<DT, NB>(kx[u][v], &k[v * EPV]);
#pragma unroll
			for (int g = 0; g < GM; g++) {
				float dot = 0.0f;

#pragma unroll
				for (int e = 0; e < EL; e++)
					dot = fmaf(q[g][e], k[e], dot);
#pragma unroll
				for (int o = LPR / 2; o > 0; o >>= 1)
					dot += __shfl_xor_sync(FULL, dot, o);
				s[u][g] = ok ? dot : -INFINITY;
			}
		}

#pragma unroll
		for (int g = 0; g < GM; g++) {
			float tmax = s[0][g], alpha;

#pragma unroll
			for (int u = 1; u < U; u++)
				tmax = fmaxf(tmax, s[u][g]);
#pragma unroll
			for (int o = LPR; o < 32; o <<= 1)
				tmax = fmaxf(tmax, __shfl_xor_sync(FULL,
								   tmax, o));
			alpha = kva_softmax_rescale(&ss[g], tmax);
#pragma unroll
			for (int e = 0; e < EL; e++)
				acc[g][e] *= alpha;
		}

#pragma unroll
		for (int u = 0; u < U; u++) {
			float vv[EL];

#pragma unroll
			for (int v = 0; v < NV; v++)
				widen<DT, NB>(vx[u][v], &vv[v * EPV]);
#pragma unroll
			for (int g = 0; g < GM; g++) {
				float w = kva_softmax_weight(&ss[g],
							     s[u][g]);

				kva_softmax_add(&ss[g], w);
#pragma unroll
				for (int e = 0; e < EL; e++)
					acc[g][e] = fmaf(w, vv[e],
							 acc[g][e]);
			}
		}
	}

	/* the subgroups of a warp share m: add their l and acc */
#pragma unroll
	for (int g = 0; g < GM; g++)
#pragma unroll
		for (int o = LPR; o < 32; o <<= 1) {
			ss[g].l += __shfl_xor_sync(FULL, ss[g].l, o);
#pragma unroll
			for (int e = 0; e < EL; e++)
				acc[g][e] += __shfl_xor_sync(FULL, acc[g][e], o);
		}
	if (sub == 0)
#pragma unroll
		for (int g = 0; g < GM; g++)
#pragma unroll
			for (int v = 0; v < NV; v++)
#pragma unroll
				for (int e = 0; e < EPV; e++)
					sm.acc[warp][g][(v * LPR + lr) * EPV + e] =
						acc[g][v * EPV + e];
	if (lane == 0)
#pragma unroll
		for (int g = 0; g < GM; g++) {
			sm.ml[warp][g][0] = ss[g].m;
			sm.ml[warp][g][1] = ss[g].l;
		}
	__syncthreads();

	/* the block's state, one (head, element) per thread and loop */
	const size_t slot0 = ((size_t)seq * a.q_heads + qh0) * a.splits;

	for (uint32_t i = threadIdx.x; i < gn * D; i += blockDim.x) {
		uint32_t g = i / D, d = i % D;
		kva_softmax bs = { sm.ml[0][g][0], sm.ml[0][g][1] };
		float o = sm.acc[0][g][d];

		for (int w = 1; w < WARPS; w++) {
			kva_softmax ws = { sm.ml[w][g][0], sm.ml[w][g][1] };
			float wa, wb;

			kva_softmax_merge(&bs, &ws, &wa, &wb);
			o = o * wa + sm.acc[w][g][d] * wb;
		}
		if (nsplit == 1) {
			out_put(a.out, orow + i, a.qo,
				o * kva_softmax_norm(&bs) * vf);
			continue;
		}
		size_t slot = slot0 + (size_t)g * a.splits + split;

		a.ws_acc[slot * D + d] = o;
		if (d == 0) {
			a.ws_ml[slot * 2] = bs.m;
			a.ws_ml[slot * 2 + 1] = bs.l;
		}
	}
	if (nsplit == 1)
		return;

	/* publish the partial, then take a ticket */
	__threadfence();
	__syncthreads();
	unsigned int *ticket = &a.tickets[(size_t)seq * gridDim.y + blockIdx.y];

	if (threadIdx.x == 0)
		sm.last = atomicAdd(ticket, 1u) == nsplit - 1;
	__syncthreads();
	if (!sm.last)
		return;
	__threadfence();
	combine<D, GM>(a, sm, slot0, orow, gn, nsplit, vf);
	if (threadIdx.x == 0)
		*ticket = 0;		/* ready for the next decode */
}

/*
 * Blocks a multiprocessor must hold of the kernel, where ptxas left to
 * itself gives away occupancy the kernel had before the split-K combine
 * came in (Documentation/kernels.rst), on sm_90, where those figures are
 * from: the one-head blocks of 16-bit caches at 64 registers (8 blocks,
 * not 7), fp8's one- and two-head blocks at 48 and 72 (10 and 7, not 8
 * and 5).  The 16-bit two-head blocks would spill at their old 80, so
 * they take 96 (5 blocks, from 6); sm_80, which widens fp8 without the
 * instructions for it, would spill under any of these.  The others take
 * what they need (0: no minimum, which is not the same to ptxas as a
 * minimum of 1).
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define KVA_DECODE_BOUNDS	0
#else
#define KVA_DECODE_BOUNDS	1
#endif

template <int DT, int GM>
struct decode_occupancy {
	static constexpr int MIN = !KVA_DECODE_BOUNDS || DT == FP32 ||
				   GM > 2 ? 0 :
				   DT == FP8 ? (GM == 1 ? 10 : 7) :
				   GM == 1 ? 8 : 0;
};

template <int DT, int D, int GM>
__global__ void __launch_bounds__(WARPS * 32, decode_occupancy<DT, GM>::MIN)
decode_kernel(const decode_args a)
{
	__shared__ decode_smem<D, GM> sm;

	decode_one<DT, D, GM>(a, sm, blockIdx.x / a.splits,
			      blockIdx.x % a.splits);
}

/* Query heads per block: the group, rounded up to 1, 2, 4 or 8. */
static uint32_t heads_per_block(uint32_t group)
{
	return group <= 1 ? 1 : group <= 2 ? 2 : group <= 4 ? 4 : 8;
}

template <int DT, int D>
static void launch_d(uint32_t gm, dim3 grid, cudaStream_t s,
		     const decode_args &a)
{
	switch (gm) {
	case 1: decode_kernel<DT, D, 1><<<grid, WARPS * 32, 0, s>>>(a); break;
	case 2: decode_kernel<DT, D, 2><<<grid, WARPS * 32, 0, s>>>(a); break;
	case 4: decode_kernel<DT, D, 4><<<grid, WARPS * 32, 0, s>>>(a); break;
	default: decode_kernel<DT, D, 8><<<grid, WARPS * 32, 0, s>>>(a); break;
	}
}

template <int DT>
static void launch_dt(uint32_t head_dim, uint32_t gm, dim3 grid,
		      cudaStream_t s, const decode_args &a)
{
	switch (head_dim) {
	case 64: launch_d<DT, 64>(gm, grid, s, a); break;
	case 128: launch_d<DT, 128>(gm, grid, s, a); break;
	default: launch_d<DT, 256>(gm, grid, s, a); break;
	}
}

/* The kernel launch_dt() runs for a shape, for the occupancy query. */
template <int DT, int D>
static const void *kernel_d(uint32_t gm)
{
	switch (gm) {
	case 1: return (const void *)decode_kernel<DT, D, 1>;
	case 2: return (const void *)decode_kernel<DT, D, 2>;
	case 4: return (const void *)decode_kernel<DT, D, 4>;
	default: return (const void *)decode_kernel<DT, D, 8>;
	}
}

template <int DT>
static const void *kernel_dt(uint32_t head_dim, uint32_t gm)
{
	switch (head_dim) {
	case 64: return kernel_d<DT, 64>(gm);
	case 128: return kernel_d<DT, 128>(gm);
	default: return kernel_d<DT, 256>(gm);
	}
}

static const void *kernel_for(const kva_attn_shape &sh, uint32_t gm)
{
	switch (sh.dtype) {
	case FP32: return kernel_dt<FP32>(sh.head_dim, gm);
	case FP16: return kernel_dt<FP16>(sh.head_dim, gm);
	case FP8: return kernel_dt<FP8>(sh.head_dim, gm);
	default: return kernel_dt<BF16>(sh.head_dim, gm);
	}
}

struct ws_layout {
	size_t tickets, ml, acc, bytes;
};

static ws_layout layout(const kva_attn_shape &sh, uint32_t nr_seqs,
			uint32_t splits)
{
	uint32_t gm = heads_per_block(sh.group);
	uint32_t hgroups = (sh.group + gm - 1) / gm;
	size_t slots = (size_t)nr_seqs * sh.q_heads * splits;
	ws_layout l;

	l.tickets = 0;
	l.ml = ((size_t)nr_seqs * sh.kv_heads * hgroups * sizeof(unsigned int) +
		255) & ~(size_t)255;
	l.acc = l.ml + ((slots * 2 * sizeof(float) + 255) & ~(size_t)255);
	l.bytes = l.acc + slots * sh.head_dim * sizeof(float);
	return l;
}

} /* namespace kva */

using namespace kva;

extern "C" int kva_cuda_decode_plan(const struct kva_attn_params *p,
				    uint32_t nr_seqs, uint64_t max_tokens,
				    struct kva_cuda_decode_plan *plan)
{
	kva_attn_shape sh;
	int err, dev, sms, per_sm = 0;
	uint32_t gm, hgroups, gx, gy;

	err = device_shape(&sh, p);
	if (err)
		return err;
	if (!plan || !nr_seqs || max_tokens > KVA_SPLIT_MAX_TOKENS)
		return -EINVAL;
	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) !=
		    cudaSuccess)
		return fail(cudaGetLastError());
	gm = heads_per_block(sh.group);
	hgroups = (sh.group + gm - 1) / gm;
	if ((uint64_t)sh.kv_heads * hgroups > KVA_GRID_YZ_MAX)
		return -EINVAL;
	/* one wave: as many blocks as the device holds of this kernel */
	if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm,
			kernel_for(sh, gm), WARPS * 32, 0) != cudaSuccess)
		return fail(cudaGetLastError());
	if (per_sm < 1)
		per_sm = 1;
	kva_split_plan((uint64_t)sms * (uint32_t)per_sm,
		       (uint64_t)nr_seqs * sh.kv_heads * hgroups,
		       max_tokens, &plan->splits, &plan->split_tokens);
	if (kva_attn_grid(nr_seqs, plan->splits, sh.kv_heads, hgroups, &gx,
			  &gy))
		return -EINVAL;
	plan->max_tokens = max_tokens;
	plan->nr_seqs = nr_seqs;
	plan->reserved = 0;
	plan->workspace_bytes = layout(sh, nr_seqs, plan->splits).bytes;
	return 0;
}

extern "C" int kva_cuda_attn_decode(const struct kva_attn_params *p,
				    const struct kva_cuda_decode_plan *plan,
				    const struct kva_attn_seq *seqs,
				    uint32_t nr_seqs, const void *q,
				    void *out, void *workspace,
				    struct CUstream_st *stream)
{
	kva_attn_shape sh;
	decode_args a;
	ws_layout l;
	uint32_t gm, gx, gy;
	int err;

	err = device_shape(&sh, p);
	if (err)
		return err;
	if (!nr_seqs)
		return 0;
	if (!plan || nr_seqs > plan->nr_seqs || !seqs || !q || !out ||
	    !workspace || !plan->splits || !plan->split_tokens ||
	    (uintptr_t)workspace % 16 ||
	    (uintptr_t)seqs % alignof(struct kva_attn_seq))
		return -EINVAL;
	gm = heads_per_block(sh.group);
	l = layout(sh, plan->nr_seqs, plan->splits);
	a.w = sh.walk;
	a.seqs = seqs;
	a.q = q;
	a.out = out;
	a.kv_scale = p->kv_scale;
	a.tickets = (unsigned int *)((uint8_t *)workspace + l.tickets);
	a.ws_ml = (float *)((uint8_t *)workspace + l.ml);
	a.ws_acc = (float *)((uint8_t *)workspace + l.acc);
	a.q_heads = sh.q_heads;
	a.kv_heads = sh.kv_heads;
	a.group = sh.group;
	a.hgroups = (sh.group + gm - 1) / gm;
	a.splits = plan->splits;
	a.split_tokens = plan->split_tokens;
	a.qo = p->qo_dtype;
	a.scale = sh.scale;
	if (kva_attn_grid(nr_seqs, plan->splits, sh.kv_heads, a.hgroups, &gx,
			  &gy))
		return -EINVAL;

	dim3 grid(gx, gy);

	switch (sh.dtype) {
	case FP32: launch_dt<FP32>(sh.head_dim, gm, grid, stream, a); break;
	case FP16: launch_dt<FP16>(sh.head_dim, gm, grid, stream, a); break;
	case FP8: launch_dt<FP8>(sh.head_dim, gm, grid, stream, a); break;
	default: launch_dt<BF16>(sh.head_dim, gm, grid, stream, a); break;
	}
	return launched();
}
