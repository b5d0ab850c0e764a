// SPDX-License-Identifier: MIT
/*
 * attn_cpu.c - the CPU attention entry points: ISA choice, argument
 * checks, cutting a call into pieces for the thread pool, the split-K
 * merge, and the write side (kva_kv_append).
 *
 * Decode cuts each sequence's context into pieces of split_tokens tokens
 * (all heads of a piece together, so that a piece reads each frame's
 * layer slice front to back).  Every piece leaves an online-softmax
 * partial; the thread that finishes a sequence's last piece merges its
 * partials in piece order (so the result does not depend on which thread
 * ran what) and writes the output.
 *
 * Prefill cuts each sequence's chunk into blocks of query tokens per KV
 * head; a block covers every key it may see, so it writes its output
 * rows directly.  Blocks are queued latest first: causal blocks late in a
 * chunk see the most keys.
 */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attn_internal.h"
#include "pool.h"
#include "tile_math.h"

struct kva_attn {
	struct kva_pool *pool;
	enum kva_isa isa;
	const struct kva_isa_ops *ops;
	uint32_t split_tokens;		/* 0: auto */

	/* grown on demand; owned by the one caller of the moment */
	void *scratch;			/* threads * scratch_stride */
	size_t scratch_stride;
	void *work;
	size_t work_bytes;
	float *qo;			/* fp32 q and out of a bf16/fp16 call */
	size_t qo_bytes;
};

/*
 * kva_e4m3_bf16_lut - the bf16 of each e4m3 magnitude (codes 0x00-0x7f,
 * sign 0): 128 low bytes, then 128 high bytes.  The fp8 AVX-512 decode
 * widens through it (vpermi2b); selftests/kernels checks every entry
 * against kva_f32_to_bf16(kva_e4m3_to_f32(code)).
 */
const uint8_t kva_e4m3_bf16_lut[256] __attribute__((aligned(64))) = {
	0x00, 0x00, 0x80, 0xc0, 0x00, 0x20, 0x40, 0x60, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
	0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
	0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
	0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
	0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
	0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
	0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
	0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xc0,
	0x00, 0x3b, 0x3b, 0x3b, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c,
	0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d,
	0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e,
	0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f,
	0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40,
	0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41,
	0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42,
	0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x7f
};

/* ---- ISA choice ------------------------------------------------------- */

static const char *const isa_names[KVA_ISA_COUNT] = {
	[KVA_ISA_AUTO] = "auto",
	[KVA_ISA_SCALAR] = "scalar",
	[KVA_ISA_AVX2] = "avx2",
	[KVA_ISA_AVX512] = "avx512",
};

const char *kva_isa_name(enum kva_isa isa)
{
	return (unsigned int)isa < KVA_ISA_COUNT ? isa_names[isa] : "?";
}

int kva_isa_parse(const char *name, enum kva_isa *isa)
{
	for (int i = 0; i < KVA_ISA_COUNT; i++)
		if (name && !strcmp(name, isa_names[i])) {
			*isa = (enum kva_isa)i;
			return 0;
		}
	return -EINVAL;
}

bool kva_isa_supported(enum kva_isa isa)
{
	switch (isa) {
	case KVA_ISA_AUTO:
	case KVA_ISA_SCALAR:
		return true;
#ifdef KVK_X86_SIMD
	case KVA_ISA_AVX2:
		return __builtin_cpu_supports("avx2") &&
		       __builtin_cpu_supports("fma") &&
		       __builtin_cpu_supports("f16c");
	case KVA_ISA_AVX512:
		return __builtin_cpu_supports("avx512f") &&
		       __builtin_cpu_supports("avx512bw") &&
		       __builtin_cpu_supports("avx512dq") &&
		       __builtin_cpu_supports("avx512vl");
#endif
	default:
		return false;
	}
}

enum kva_isa kva_isa_best(void)
{
	if (kva_isa_supported(KVA_ISA_AVX512))
		return KVA_ISA_AVX512;
	if (kva_isa_supported(KVA_ISA_AVX2))
		return KVA_ISA_AVX2;
	return KVA_ISA_SCALAR;
}

static const struct kva_isa_ops *isa_ops(enum kva_isa isa)
{
	switch (isa) {
#ifdef KVK_X86_SIMD
	case KVA_ISA_AVX512:
		return &kva_ops_avx512;
	case KVA_ISA_AVX2:
		return &kva_ops_avx2;
#endif
	default:
		return &kva_ops_scalar;
	}
}

/* ---- handle ------------------------------------------------------------ */

int kva_attn_create(struct kva_attn **out, const struct kva_attn_config *cfg)
{
	struct kva_attn_config def = { 0 };
	struct kva_attn *a;
	unsigned int threads;
	enum kva_isa isa;
	int err;

	if (!out)
		return -EINVAL;
	if (!cfg)
		cfg = &def;
	if ((unsigned int)cfg->isa >= KVA_ISA_COUNT)
		return -EINVAL;
	isa = cfg->isa;
	if (isa == KVA_ISA_AUTO) {
		const char *env = getenv("KVA_KERNELS_ISA");

		if (env && *env) {
			if (kva_isa_parse(env, &isa))
				return -EINVAL;
		}
		if (isa == KVA_ISA_AUTO)
			isa = kva_isa_best();
	}
	if (!kva_isa_supported(isa))
		return -ENOTSUP;

	threads = cfg->threads;
	if (!threads) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		threads = n > 0 ? (unsigned int)n : 1;
	}
	if (threads > 1024)
		return -EINVAL;

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->isa = isa;
	a->ops = isa_ops(isa);
	a->split_tokens = cfg->split_tokens;
	err = kva_pool_create(&a->pool, threads);
	if (err) {
		free(a);
		return err;
	}
	*out = a;
	return 0;
}

void kva_attn_destroy(struct kva_attn *a)
{
	if (!a)
		return;
	kva_pool_destroy(a->pool);
	free(a->scratch);
	free(a->work);
	free(a->qo);
	free(a);
}

enum kva_isa kva_attn_isa(const struct kva_attn *a)
{
	return a->isa;
}

unsigned int kva_attn_threads(const struct kva_attn *a)
{
	return kva_pool_threads(a->pool);
}

/* Spare room per worker, so that neighbouring scratch areas do not share
 * cache lines or an adjacent-line prefetch pair. */
static const size_t stride_slack = 128;

/* Grows *buf to at least @bytes, 64-byte aligned; contents not kept. */
static int grow(void **buf, size_t *have, size_t bytes)
{
	void *p;

	if (*have >= bytes)
		return 0;
	bytes = kva_align64(bytes + bytes / 4);
	p = aligned_alloc(64, bytes);
	if (!p)
		return -ENOMEM;
	free(*buf);
	*buf = p;
	*have = bytes;
	return 0;
}

static int grow_scratch(struct kva_attn *a, const struct kva_isa_ops *ops,
			const struct kva_attn_shape *sh)
{
	size_t stride = kva_align64(ops->scratch_bytes(sh) + stride_slack);
	void *p;

	if (stride <= a->scratch_stride)
		return 0;
	p = aligned_alloc(64, stride * kva_attn_threads(a));
	if (!p)
		return -ENOMEM;
	free(a->scratch);
	a->scratch = p;
	a->scratch_stride = stride;
	return 0;
}

static void *worker_scratch(struct kva_attn *a, unsigned int worker)
{
	return (uint8_t *)a->scratch + (size_t)worker * a->scratch_stride;
}

/* ---- checks ------------------------------------------------------------ */

int kva_attn_shape_init(struct kva_attn_shape *sh,
			const struct kva_attn_params *p)
{
	const struct kva_geometry *g;

	if (!p || !p->geom)
		return -EINVAL;
	g = p->geom;
	if (!g->tokens_per_frame || g->dtype >= KVA_DTYPE_COUNT ||
	    !g->kv_heads || !g->head_dim ||
	    g->head_dim > KVA_ATTN_MAX_HEAD_DIM || p->layer >= g->layers ||
	    !p->q_heads || p->q_heads % g->kv_heads || !isfinite(p->scale) ||
	    (p->qo_dtype != KVA_DTYPE_FP32 && p->qo_dtype != KVA_DTYPE_FP16 &&
	     p->qo_dtype != KVA_DTYPE_BF16) ||
	    (p->kv_scale && g->dtype != KVA_DTYPE_FP8))
		return -EINVAL;
	sh->kscale = sh->vscale = NULL;
	if (p->kv_scale) {
		for (uint32_t i = 0; i < 2 * g->kv_heads; i++)
			if (!isfinite(p->kv_scale[i]))
				return -EINVAL;
		sh->kscale = p->kv_scale;
		sh->vscale = p->kv_scale + g->kv_heads;
	}
	kva_walk_init(&sh->walk, g, p->layer);
	sh->head_dim = g->head_dim;
	sh->kv_heads = g->kv_heads;
	sh->q_heads = p->q_heads;
	sh->group = p->q_heads / g->kv_heads;
	sh->dtype = g->dtype;
	sh->scale = p->scale;
	return 0;
}

/*
 * The ISA's kernels, or the next narrower ones that take the shape (a
 * head_dim its vectors do not divide; fp8 on AVX-512 without VBMI and
 * BF16), down to the scalar ones, which take every shape.
 */
static const struct kva_isa_ops *call_ops(const struct kva_attn *a,
					  const struct kva_attn_shape *sh)
{
	switch (a->isa) {
#ifdef KVK_X86_SIMD
	case KVA_ISA_AVX512:
		if (kva_ops_avx512.supports(sh))
			return &kva_ops_avx512;
		__attribute__((fallthrough));
	case KVA_ISA_AVX2:
		if (kva_isa_supported(KVA_ISA_AVX2) &&
		    kva_ops_avx2.supports(sh))
			return &kva_ops_avx2;
		break;
#endif
	default:
		break;
	}
	return &kva_ops_scalar;
}

/* ---- q and out in fp16 or bf16 ------------------------------------------- */

/*
 * A call with q and out in fp16 or bf16 runs on fp32 copies: q widened
 * (exactly) before, out rounded after.  They are a small part of a call's
 * traffic next to the cache.
 */
static int qo_buffers(struct kva_attn *a, size_t rows, uint32_t D,
		      float **q, float **out)
{
	size_t n = rows * D;

	if (n > SIZE_MAX / 2 / sizeof(float) ||
	    grow((void **)&a->qo, &a->qo_bytes, 2 * n * sizeof(float)))
		return -ENOMEM;
	*q = a->qo;
	*out = a->qo + n;
	return 0;
}

static void qo_widen(const void *src, uint32_t dt, float *dst, size_t n)
{
	const uint16_t *h = src;

	for (size_t i = 0; i < n; i++)
		dst[i] = dt == KVA_DTYPE_FP16 ? kva_fp16_to_f32(h[i]) :
						kva_bf16_to_f32(h[i]);
}

static void qo_narrow(const float *src, uint32_t dt, void *dst, size_t n)
{
	uint16_t *h = dst;

	for (size_t i = 0; i < n; i++)
		h[i] = dt == KVA_DTYPE_FP16 ? kva_f32_to_fp16(src[i]) :
					      kva_f32_to_bf16(src[i]);
}

/* ---- decode ------------------------------------------------------------ */

struct decode_piece {
	uint32_t seq;
	uint32_t first;			/* the sequence's first piece */
	uint32_t count;			/* pieces of the sequence */
	uint64_t t0, t1;
};

struct decode_call {
	struct kva_attn *a;
	const struct kva_isa_ops *ops;
	const struct kva_attn_shape *sh;
	const struct kva_attn_seq *seqs;
	const float *q;
	float *out;
	struct decode_piece *pieces;
	atomic_uint *left;		/* per sequence: pieces not done */
	float *part_ml;			/* [piece][2][q_heads] */
	float *part_acc;		/* [piece][q_heads][head_dim] */
};

static float *piece_m(const struct decode_call *c, uint32_t i)
{
	return c->part_ml + (size_t)i * 2 * c->sh->q_heads;
}

static float *piece_acc(const struct decode_call *c, uint32_t i)
{
	return c->part_acc + (size_t)i * c->sh->q_heads * c->sh->head_dim;
}

/* Merges the partials of pieces [first, first + count) into out. */
static void decode_finish(const struct decode_call *c,
			  const struct decode_piece *pc)
{
	const struct kva_attn_shape *sh = c->sh;
	uint32_t D = sh->head_dim, h, j, d;
	float *out = c->out + (size_t)pc->seq * sh->q_heads * D;

	for (h = 0; h < sh->q_heads; h++) {
		const float *ml = piece_m(c, pc->first);
		struct kva_softmax st = { ml[h], ml[sh->q_heads + h] };
		float *o = out + (size_t)h * D;
		float norm;

		memcpy(o, piece_acc(c, pc->first) + (size_t)h * D,
		       D * sizeof(*o));
		for (j = 1; j < pc->count; j++) {
			const float *bml = piece_m(c, pc->first + j);
			const float *bacc = piece_acc(c, pc->first + j) +
					    (size_t)h * D;
			struct kva_softmax b = { bml[h], bml[sh->q_heads + h] };
			float wa, wb;

			kva_softmax_merge(&st, &b, &wa, &wb);
			for (d = 0; d < D; d++)
				o[d] = o[d] * wa + bacc[d] * wb;
		}
		norm = kva_softmax_norm(&st);
		for (d = 0; d < D; d++)
			o[d] *= norm;
	}
}

static void decode_task(void *arg, unsigned int idx, unsigned int worker)
{
	const struct decode_call *c = arg;
	const struct decode_piece *pc = &c->pieces[idx];
	const struct kva_attn_shape *sh = c->sh;
	float *ml = piece_m(c, idx);
	struct kva_decode_span s = {
		.sh = sh,
		.base = c->seqs[pc->seq].base,
		.t0 = pc->t0,
		.t1 = pc->t1,
		.q = c->q + (size_t)pc->seq * sh->q_heads * sh->head_dim,
		.m = ml,
		.l = ml + sh->q_heads,
		.acc = piece_acc(c, idx),
		.scratch = worker_scratch(c->a, worker),
	};

	c->ops->decode(&s);
	/* acq_rel: the last one to finish sees every other piece's partial. */
	if (atomic_fetch_sub_explicit(&c->left[pc->seq], 1,
				      memory_order_acq_rel) == 1)
		decode_finish(c, &c->pieces[pc->first]);
}

static uint32_t decode_split(const struct kva_attn *a,
			     const struct kva_attn_seq *seqs, uint32_t nr_seqs)
{
	unsigned int threads = kva_attn_threads(a);
	uint64_t total = 0, split;

	if (a->split_tokens)
		return a->split_tokens;
	if (threads == 1)
		return UINT32_MAX;
	for (uint32_t i = 0; i < nr_seqs; i++)
		total += seqs[i].tokens;
	/* About four pieces per thread, none so short that its partial
	 * and merge cost more than its keys. */
	split = total / (4ull * threads) + 1;
	if (split < 512)
		split = 512;
	split = (split + 63) & ~63ull;
	return split > UINT32_MAX ? UINT32_MAX : (uint32_t)split;
}

static int decode_f32(struct kva_attn *a, const struct kva_attn_shape *shp,
		      const struct kva_attn_seq *seqs, uint32_t nr_seqs,
		      const float *q, float *out)
{
	struct kva_attn_shape sh = *shp;
	struct decode_call c = { 0 };
	const struct kva_isa_ops *ops;
	uint64_t nr_pieces = 0, split;
	size_t off_left, off_ml, off_acc, bytes;
	uint32_t i, n;

	split = decode_split(a, seqs, nr_seqs);
	for (i = 0; i < nr_seqs; i++) {
		if (seqs[i].tokens && !seqs[i].base)
			return -EINVAL;
		nr_pieces += (seqs[i].tokens + split - 1) / split;
	}
	if (nr_pieces > UINT32_MAX)
		return -EINVAL;

	ops = call_ops(a, &sh);
	if (grow_scratch(a, ops, &sh))
		return -ENOMEM;
	off_left = kva_align64(nr_pieces * sizeof(struct decode_piece));
	off_ml = off_left + kva_align64(nr_seqs * sizeof(atomic_uint));
	off_acc = off_ml + kva_align64(nr_pieces * 2 * sh.q_heads *
				       sizeof(float));
	bytes = off_acc + nr_pieces * sh.q_heads * sh.head_dim * sizeof(float);
	if (grow(&a->work, &a->work_bytes, bytes))
		return -ENOMEM;

	c.a = a;
	c.ops = ops;
	c.sh = &sh;
	c.seqs = seqs;
	c.q = q;
	c.out = out;
	c.pieces = a->work;
	c.left = (atomic_uint *)((uint8_t *)a->work + off_left);
	c.part_ml = (float *)((uint8_t *)a->work + off_ml);
	c.part_acc = (float *)((uint8_t *)a->work + off_acc);

	for (i = 0, n = 0; i < nr_seqs; i++) {
		uint64_t t = 0, first = n, count;

		count = (seqs[i].tokens + split - 1) / split;
		atomic_init(&c.left[i], (unsigned int)count);
		if (!count)	/* no key: the output is 0 */
			memset(out + (size_t)i * sh.q_heads * sh.head_dim, 0,
			       sh.q_heads * sh.head_dim * sizeof(*out));
		for (; t < seqs[i].tokens; t += split, n++) {
			c.pieces[n].seq = i;
			c.pieces[n].first = (uint32_t)first;
			c.pieces[n].count = (uint32_t)count;
			c.pieces[n].t0 = t;
			c.pieces[n].t1 = t + split < seqs[i].tokens ?
					 t + split : seqs[i].tokens;
		}
	}
	kva_pool_run(a->pool, decode_task, &c, n);
	return 0;
}

int kva_attn_decode(struct kva_attn *a, const struct kva_attn_params *p,
		    const struct kva_attn_seq *seqs, uint32_t nr_seqs,
		    const void *q, void *out)
{
	struct kva_attn_shape sh;
	size_t rows;
	float *qf, *of;
	int err;

	if (!a)
		return -EINVAL;
	err = kva_attn_shape_init(&sh, p);
	if (err)
		return err;
	if (!nr_seqs)
		return 0;
	if (!seqs || !q || !out)
		return -EINVAL;
	if (p->qo_dtype == KVA_DTYPE_FP32)
		return decode_f32(a, &sh, seqs, nr_seqs, q, out);
	for (uint32_t i = 0; i < nr_seqs; i++)
		if (seqs[i].tokens && !seqs[i].base)
			return -EINVAL;
	rows = (size_t)nr_seqs * sh.q_heads;
	if (qo_buffers(a, rows, sh.head_dim, &qf, &of))
		return -ENOMEM;
	qo_widen(q, p->qo_dtype, qf, rows * sh.head_dim);
	err = decode_f32(a, &sh, seqs, nr_seqs, qf, of);
	if (!err)
		qo_narrow(of, p->qo_dtype, out, rows * sh.head_dim);
	return err;
}

/* ---- prefill ------------------------------------------------------------ */

struct prefill_item {
	uint32_t seq;
	uint32_t kv_head;
	uint32_t i0;			/* first query token, in the chunk */
	uint32_t nq;
	uint64_t pos0;			/* its position */
};

struct prefill_call {
	struct kva_attn *a;
	const struct kva_isa_ops *ops;
	const struct kva_attn_shape *sh;
	const struct kva_prefill_seq *seqs;
	const float *q;
	float *out;
	struct prefill_item *items;
};

static void prefill_task(void *arg, unsigned int idx, unsigned int worker)
{
	const struct prefill_call *c = arg;
	const struct prefill_item *it = &c->items[idx];
	const struct kva_attn_shape *sh = c->sh;
	const struct kva_prefill_seq *s = &c->seqs[it->seq];
	size_t row = ((size_t)s->q_start + it->i0) * sh->q_heads * sh->head_dim;
	struct kva_prefill_block b = {
		.sh = sh,
		.base = s->base,
		.kv_head = it->kv_head,
		.pos0 = it->pos0,
		.nq = it->nq,
		.q = c->q + row,
		.out = c->out + row,
		.scratch = worker_scratch(c->a, worker),
	};

	c->ops->prefill(&b);
}

static int later_first(const void *pa, const void *pb)
{
	const struct prefill_item *x = pa, *y = pb;
	uint64_t ex = x->pos0 + x->nq, ey = y->pos0 + y->nq;

	return ex < ey ? 1 : ex > ey ? -1 : 0;
}

static int prefill_f32(struct kva_attn *a, const struct kva_attn_shape *shp,
		       const struct kva_prefill_seq *seqs, uint32_t nr_seqs,
		       const float *q, float *out)
{
	struct kva_attn_shape sh = *shp;
	struct prefill_call c = { 0 };
	const struct kva_isa_ops *ops;
	uint64_t nr_items = 0;
	uint32_t i, h, j, bt, n = 0;

	bt = kva_prefill_block_tokens(sh.group);
	for (i = 0; i < nr_seqs; i++) {
		if (seqs[i].q_tokens > seqs[i].tokens ||
		    (seqs[i].tokens && !seqs[i].base))
			return -EINVAL;
		nr_items += (uint64_t)sh.kv_heads *
			    ((seqs[i].q_tokens + bt - 1) / bt);
	}
	if (nr_items > UINT32_MAX)
		return -EINVAL;
	ops = call_ops(a, &sh);
	if (grow_scratch(a, ops, &sh) ||
	    grow(&a->work, &a->work_bytes, nr_items * sizeof(*c.items)))
		return -ENOMEM;

	c.a = a;
	c.ops = ops;
	c.sh = &sh;
	c.seqs = seqs;
	c.q = q;
	c.out = out;
	c.items = a->work;
	for (i = 0; i < nr_seqs; i++) {
		uint64_t prefix = seqs[i].tokens - seqs[i].q_tokens;

		for (j = 0; j < seqs[i].q_tokens; j += bt)
			for (h = 0; h < sh.kv_heads; h++) {
				struct prefill_item *it = &c.items[n++];

				it->seq = i;
				it->kv_head = h;
				it->i0 = j;
				it->nq = seqs[i].q_tokens - j < bt ?
					 seqs[i].q_tokens - j : bt;
				it->pos0 = prefix + j;
			}
	}
	if (kva_attn_threads(a) > 1)
		qsort(c.items, n, sizeof(*c.items), later_first);
	kva_pool_run(a->pool, prefill_task, &c, n);
	return 0;
}

int kva_attn_prefill(struct kva_attn *a, const struct kva_attn_params *p,
		     const struct kva_prefill_seq *seqs, uint32_t nr_seqs,
		     const void *q, void *out)
{
	struct kva_attn_shape sh;
	size_t rows = 0, esz, row;
	float *qf, *of;
	uint32_t i;
	int err;

	if (!a)
		return -EINVAL;
	err = kva_attn_shape_init(&sh, p);
	if (err)
		return err;
	if (!nr_seqs)
		return 0;
	if (!seqs || !q || !out)
		return -EINVAL;
	if (p->qo_dtype == KVA_DTYPE_FP32)
		return prefill_f32(a, &sh, seqs, nr_seqs, q, out);
	for (i = 0; i < nr_seqs; i++) {
		if (seqs[i].q_tokens > seqs[i].tokens ||
		    (seqs[i].tokens && !seqs[i].base))
			return -EINVAL;
		if ((size_t)seqs[i].q_start + seqs[i].q_tokens > rows)
			rows = (size_t)seqs[i].q_start + seqs[i].q_tokens;
	}
	row = (size_t)sh.q_heads * sh.head_dim;
	esz = kva_dtype_size(p->qo_dtype);
	if (qo_buffers(a, rows, (uint32_t)row, &qf, &of))
		return -ENOMEM;
	/* only the sequences' rows: the caller's others stay untouched */
	for (i = 0; i < nr_seqs; i++)
		qo_widen((const uint8_t *)q + seqs[i].q_start * row * esz,
			 p->qo_dtype, qf + seqs[i].q_start * row,
			 seqs[i].q_tokens * row);
	err = prefill_f32(a, &sh, seqs, nr_seqs, qf, of);
	if (!err)
		for (i = 0; i < nr_seqs; i++)
			qo_narrow(of + seqs[i].q_start * row, p->qo_dtype,
				  (uint8_t *)out + seqs[i].q_start * row * esz,
				  seqs[i].q_tokens * row);
	return err;
}

/* ---- write side -------------------------------------------------------- */

int kva_kv_append_scaled(const struct kva_geometry *g, uint32_t layer,
			 void *base, uint64_t pos, uint32_t n,
			 enum kva_dtype src_dtype, const void *k,
			 const void *v, const float *kv_scale)
{
	size_t dsz, ssz;
	uint32_t i, h, d, kv;

	if (!g || !g->tokens_per_frame || g->dtype >= KVA_DTYPE_COUNT ||
	    layer >= g->layers || (unsigned int)src_dtype >= KVA_DTYPE_COUNT ||
	    src_dtype == KVA_DTYPE_FP8 ||
	    (kv_scale && g->dtype != KVA_DTYPE_FP8))
		return -EINVAL;
	for (i = 0; kv_scale && i < 2 * g->kv_heads; i++)
		if (!isfinite(kv_scale[i]) || kv_scale[i] == 0.0f)
			return -EINVAL;
	if (!n)
		return 0;
	if (!base || !k || !v)
		return -EINVAL;
	dsz = kva_dtype_size(g->dtype);
	ssz = kva_dtype_size(src_dtype);
	for (kv = 0; kv < 2; kv++) {
		const uint8_t *src = kv == KVA_K ? k : v;

		for (i = 0; i < n; i++)
			for (h = 0; h < g->kv_heads; h++) {
				uint8_t *row = (uint8_t *)base +
					kva_kv_offset(g, layer, kv, h, pos + i);
				const uint8_t *in = src +
					((size_t)i * g->kv_heads + h) *
					g->head_dim * ssz;
				float inv = kv_scale ?
					1.0f / kv_scale[kv * g->kv_heads + h] :
					1.0f;

				if ((uint32_t)src_dtype == g->dtype) {
					memcpy(row, in, g->head_dim * dsz);
					continue;
				}
				/*
				 * x / scale as x * (1 / scale): one rounding
				 * more, far below e4m3's, and what the CUDA
				 * append does too.
				 */
				for (d = 0; d < g->head_dim; d++)
					kva_elem_from_f32(row, d, g->dtype,
						kva_elem_to_f32(in, d,
								src_dtype) *
						inv);
			}
	}
	return 0;
}

int kva_kv_append(const struct kva_geometry *g, uint32_t layer, void *base,
		  uint64_t pos, uint32_t n, enum kva_dtype src_dtype,
		  const void *k, const void *v)
{
	return kva_kv_append_scaled(g, layer, base, pos, n, src_dtype, k, v,
				    NULL);
}
