// SPDX-License-Identifier: GPL-2.0
/*
 * kvbench attn - the CPU attention kernels against the machine's own read
 * bandwidth, both measured in this run.
 *
 * Geometry: Llama-3-8B (32 layers, 32 query heads, 8 KV heads, head_dim
 * 128) with bf16 KV in 2 MiB frames, so T_f = 16 and one token of one
 * layer is 4 KiB of K and V.  --dtype adds caches of other dtypes (fp8:
 * T_f = 32, 2 KiB per token and layer), each case run for bf16 too, so
 * that tokens per second can be compared in the same run.
 *
 * Bandwidth: a STREAM-like read (vector loads summed into eight
 * accumulators) of the very bytes the 8k-token batch-1 decode reads: that
 * case's KV arena, slice by slice in the same order, on one thread and on
 * all of them.  Its passes alternate with that decode's passes, so that
 * the two see the machine in the same state (on a shared machine the
 * bandwidth drifts by 20% from minute to minute).  With several dtypes,
 * each has its own peer (a read of its own cache's bytes), and the passes
 * of every dtype's read and decode alternate in one loop.
 *
 * Decode: one query token per sequence for each layer in turn, as a model
 * step does.  A case cycles through as many layers as fit in --mem (at
 * least one, at most all 32), so that the bytes read each pass are not a
 * cache's worth; only those layers' pages are ever touched.  kv_gbs counts
 * the K and V bytes read; ratio divides it by the read bandwidth of the
 * same dtype's bytes on the same number of threads; tokens_per_s is the
 * batch over the time of one model step (all 32 layers), and vs_bf16 that
 * over the bf16 case's.
 *
 * Prefill: a chunk of query tokens at the end of the context, causal;
 * GFLOP/s counts 4 * head_dim flops per (query row, visible key).
 *
 * Times are the best of repeated passes (at least --time seconds of them),
 * for the peer and for the kernels alike.
 *
 * --peer FILE: another library's decode (tools/kvbench/peer.h; ggml's,
 * built by tools/ggml-peer/build.sh from a tree the user gives) on the
 * same shapes - each dtype beside its counterpart, fp8 beside q8_0, and
 * bf16 beside the peer's f16 too - cold (--mem) and hot (32 MiB), its
 * passes alternating with the kernels' on the same layers, and the ratio
 * of tokens per second; and the prefill's, in GFLOP/s.
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kvattn.h"
#include "kvbench.h"
#include "peer.h"

#define MAX_LIST 8

static double kvbench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define MAX_DTYPES 4

struct opts {
	bool json;
	enum kva_dtype dtypes[MAX_DTYPES];	/* bf16 first */
	unsigned int nr_dtypes;
	unsigned int threads;
	enum kva_isa isa;
	uint64_t tokens[MAX_LIST];
	unsigned int nr_tokens;
	uint32_t batch[MAX_LIST];
	unsigned int nr_batch;
	uint64_t mem;
	double min_time;
	bool prefill;
	uint32_t chunk;
	const char *peer;
	bool mixed;
	bool huge;
};

static const uint32_t q_heads = 32;

static void geometry(struct kva_geometry *g, enum kva_dtype dt)
{
	memset(g, 0, sizeof(*g));
	g->layers = 32;
	g->kv_heads = 8;
	g->head_dim = 128;
	g->dtype = dt;
	g->frame_size = 2u << 20;
	kva_geometry_init(g);
}

/* ---- the KV arena of one case ------------------------------------------- */

struct arena {
	struct kva_geometry g;
	uint8_t *mem;
	size_t bytes;
	size_t seq_bytes;
	uint32_t nr_seqs;
	uint64_t tokens;
	uint32_t layers;		/* layers 0 .. layers - 1 hold data */
	struct kva_attn_seq *seqs;
};

/* Bytes of one layer's K and V in one frame: its slice. */
static size_t slice_bytes(const struct kva_geometry *g)
{
	return 2ull * g->kv_heads * g->head_stride;
}

static uint8_t *slice(const struct arena *a, uint32_t s, uint32_t l,
		      uint64_t frame)
{
	return a->mem + (size_t)s * a->seq_bytes +
	       kva_kv_offset(&a->g, l, KVA_K, 0,
			     frame * a->g.tokens_per_frame);
}

static uint64_t arena_frames(const struct arena *a)
{
	return kva_frames_for(&a->g, a->tokens);
}

static void arena_free(struct arena *a)
{
	if (a->mem)
		munmap(a->mem, a->bytes);
	free(a->seqs);
	memset(a, 0, sizeof(*a));
}

/*
 * Random values in +-[0.5, 1) in every element of a 64-bit word: bf16
 * sign and exponent 126 over random mantissas; e4m3 sign and exponent 6
 * (bias 7) over random mantissas; fp16 exponent 14; fp32 exponent 126.
 */
static uint64_t fill_word(enum kva_dtype dt, uint64_t r)
{
	switch (dt) {
	case KVA_DTYPE_FP8:
		return (r & 0x8787878787878787ull) | 0x3030303030303030ull;
	case KVA_DTYPE_FP16:
		return (r & 0x83ff83ff83ff83ffull) | 0x3800380038003800ull;
	case KVA_DTYPE_FP32:
		return (r & 0x807fffff807fffffull) | 0x3f0000003f000000ull;
	default:
		return (r & 0x807f807f807f807full) | 0x3f003f003f003f00ull;
	}
}

/*
 * Mixed lengths (--mixed): sequence @s of @n holds one of n lengths spread
 * evenly over [tokens / 4, tokens], in an order that is no order (a
 * stride of 7919, prime and above any batch, through them), as a batch
 * of requests admitted at different times has.
 */
static uint64_t mixed_tokens(uint64_t tokens, uint32_t s, uint32_t n)
{
	uint64_t lo = tokens / 4 ? tokens / 4 : 1;
	uint32_t k = n > 1 ? (uint32_t)(((uint64_t)s * 7919) % n) : 0;

	return n > 1 ? lo + (tokens - lo) * k / (n - 1) : tokens;
}

/* --huge: every arena on transparent huge pages */
static bool huge_pages;

/*
 * Reserves nr_seqs ranges of tokens each and fills the slices of layers
 * 0 .. layers - 1 with values in +-[0.5, 1); the other layers' pages stay
 * untouched and take no memory.
 */
static int arena_make(struct arena *a, enum kva_dtype dt, uint64_t tokens,
		      uint32_t nr_seqs, uint32_t layers, bool mixed)
{
	uint64_t state = 0x9e3779b97f4a7c15ull;

	memset(a, 0, sizeof(*a));
	geometry(&a->g, dt);
	a->tokens = tokens;
	a->nr_seqs = nr_seqs;
	a->layers = layers;
	a->seq_bytes = kva_frames_for(&a->g, tokens) * a->g.frame_size;
	a->bytes = a->seq_bytes * nr_seqs;
	a->mem = mmap(NULL, a->bytes, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	a->seqs = calloc(nr_seqs, sizeof(*a->seqs));
	if (a->mem != MAP_FAILED && huge_pages &&
	    madvise(a->mem, a->bytes, MADV_HUGEPAGE)) {
		fprintf(stderr, "kvbench attn: --huge: madvise: %s\n",
			strerror(errno));
		munmap(a->mem, a->bytes);
		a->mem = MAP_FAILED;
	}
	if (a->mem == MAP_FAILED || !a->seqs) {
		if (a->mem == MAP_FAILED)
			a->mem = NULL;
		arena_free(a);
		return -ENOMEM;
	}
	for (uint32_t s = 0; s < nr_seqs; s++) {
		a->seqs[s].base = a->mem + (size_t)s * a->seq_bytes;
		a->seqs[s].tokens = mixed ? mixed_tokens(tokens, s, nr_seqs) :
				    tokens;
		for (uint32_t l = 0; l < layers; l++)
			for (uint64_t f = 0; f < arena_frames(a); f++) {
				uint64_t *p = (uint64_t *)slice(a, s, l, f);

				for (size_t i = 0; i < slice_bytes(&a->g) / 8;
				     i++) {
					state ^= state << 13;
					state ^= state >> 7;
					state ^= state << 17;
					p[i] = fill_word(dt, state);
				}
			}
	}
	return 0;
}

/* ---- the read peer ------------------------------------------------------ */

#if defined(__x86_64__)
__attribute__((target("avx512f")))
static float read_avx512(const uint8_t *p, size_t n)
{
	__m512 a[8];

	for (int i = 0; i < 8; i++)
		a[i] = _mm512_setzero_ps();
	for (size_t o = 0; o + 512 <= n; o += 512)
		for (int i = 0; i < 8; i++)
			a[i] = _mm512_add_ps(a[i], _mm512_load_ps(
				(const float *)(p + o + 64 * i)));
	for (int i = 1; i < 8; i++)
		a[0] = _mm512_add_ps(a[0], a[i]);
	return _mm512_reduce_add_ps(a[0]);
}

__attribute__((target("avx2")))
static float read_avx2(const uint8_t *p, size_t n)
{
	__m256 a[8];
	float out[8];

	for (int i = 0; i < 8; i++)
		a[i] = _mm256_setzero_ps();
	for (size_t o = 0; o + 256 <= n; o += 256)
		for (int i = 0; i < 8; i++)
			a[i] = _mm256_add_ps(a[i], _mm256_load_ps(
				(const float *)(p + o + 32 * i)));
	for (int i = 1; i < 8; i++)
		a[0] = _mm256_add_ps(a[0], a[i]);
	_mm256_storeu_ps(out, a[0]);
	return out[0];
}
#endif

static float read_plain(const uint8_t *p, size_t n)
{
	uint64_t a[8] = { 0 };

	for (size_t o = 0; o + 64 <= n; o += 64)
		for (int i = 0; i < 8; i++)
			a[i] += ((const uint64_t *)(p + o))[i];
	return (float)(a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7]);
}

/* The widest loads the kernels of @isa use. */
static float read_bytes(enum kva_isa isa, const uint8_t *p, size_t n)
{
#if defined(__x86_64__)
	if (isa == KVA_ISA_AVX512)
		return read_avx512(p, n);
	if (isa == KVA_ISA_AVX2)
		return read_avx2(p, n);
#endif
	return read_plain(p, n);
}

struct reader {
	const struct arena *a;
	enum kva_isa isa;
	uint64_t f0, f1;		/* frames [f0, f1) of every sequence */
	pthread_barrier_t *start;
	volatile float sink;
};

/* Reads the decode's slices of frames [f0, f1) in the decode's order. */
static void read_part(struct reader *r)
{
	const struct arena *a = r->a;
	size_t n = slice_bytes(&a->g);
	float sum = 0.0f;

	for (uint32_t l = 0; l < a->layers; l++)
		for (uint32_t s = 0; s < a->nr_seqs; s++)
			for (uint64_t f = r->f0; f < r->f1; f++)
				sum += read_bytes(r->isa, slice(a, s, l, f), n);
	r->sink = sum;
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;

	pthread_barrier_wait(r->start);
	read_part(r);
	return NULL;
}

/* Seconds for one read of the arena's data on @threads threads. */
static double read_once(const struct arena *a, enum kva_isa isa,
			unsigned int threads)
{
	struct reader r[threads];
	pthread_t tid[threads];
	pthread_barrier_t start;
	uint64_t frames = arena_frames(a);
	double t;

	pthread_barrier_init(&start, NULL, threads);
	for (unsigned int i = 0; i < threads; i++) {
		r[i].a = a;
		r[i].isa = isa;
		r[i].f0 = frames * i / threads;
		r[i].f1 = frames * (i + 1) / threads;
		r[i].start = &start;
		if (i)
			pthread_create(&tid[i], NULL, reader_main, &r[i]);
	}
	pthread_barrier_wait(&start);
	t = kvbench_now();
	read_part(&r[0]);
	for (unsigned int i = 1; i < threads; i++)
		pthread_join(tid[i], NULL);
	t = kvbench_now() - t;
	pthread_barrier_destroy(&start);
	return t;
}

static double arena_data_bytes(const struct arena *a)
{
	double frames = 0;

	for (uint32_t s = 0; s < a->nr_seqs; s++)
		frames += (double)kva_frames_for(&a->g, a->seqs[s].tokens);
	return frames * a->layers * slice_bytes(&a->g);
}

/* ---- the kernels ----------------------------------------------------------- */

/* q and out for a decode of the arena's batch. */
struct decode_io {
	float *q, *out;
};

static int io_make(struct decode_io *io, const struct arena *a)
{
	size_t n = (size_t)a->nr_seqs * q_heads * a->g.head_dim;

	io->q = malloc(n * sizeof(*io->q));
	io->out = malloc(n * sizeof(*io->out));
	if (!io->q || !io->out) {
		free(io->q);
		free(io->out);
		io->q = io->out = NULL;
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		io->q[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
	return 0;
}

static void io_free(struct decode_io *io)
{
	free(io->q);
	free(io->out);
}

/* One decode pass over the arena's layers: seconds, or -1 on error. */
static double decode_pass(struct kva_attn *h, const struct arena *a,
			  const struct decode_io *io, int *err)
{
	double t = kvbench_now();

	for (uint32_t l = 0; l < a->layers; l++) {
		struct kva_attn_params p = {
			.geom = &a->g, .layer = l, .q_heads = q_heads,
			.scale = 1.0f / sqrtf((float)a->g.head_dim),
		};

		*err = kva_attn_decode(h, &p, a->seqs, a->nr_seqs, io->q,
				       io->out);
		if (*err)
			return -1.0;
	}
	return kvbench_now() - t;
}

/* Best-of seconds for one decode pass (the first pass warms up). */
static int decode_time(struct kva_attn *h, const struct arena *a,
		       double min_time, double *best)
{
	struct decode_io io;
	double spent = 0.0;
	int err = io_make(&io, a);

	*best = INFINITY;
	for (int pass = 0; !err && (pass < 3 || spent < min_time); pass++) {
		double t = decode_pass(h, a, &io, &err);

		spent += t;
		if (pass && t < *best)
			*best = t;
	}
	io_free(&io);
	return err;
}

/*
 * The peers and the decodes of @n arenas (one per dtype), pass for pass
 * in turn, so that all see the machine in the same state: best-of read
 * GB/s and best-of decode seconds of each.
 */
static int paired(struct kva_attn *h, struct arena *const *a, unsigned int n,
		  enum kva_isa isa, double min_time, double *gbs, double *best)
{
	unsigned int threads = kva_attn_threads(h);
	struct decode_io io[MAX_DTYPES];
	double spent = 0.0, rbest[MAX_DTYPES];
	unsigned int k, made = 0;
	int err = 0;

	for (k = 0; k < n && !err; k++, made++) {
		err = io_make(&io[k], a[k]);
		rbest[k] = best[k] = INFINITY;
	}
	for (int pass = 0; !err && (pass < 4 || spent < 2 * n * min_time);
	     pass++)
		for (k = 0; k < n && !err; k++) {
			double r = read_once(a[k], isa, threads);
			double t = decode_pass(h, a[k], &io[k], &err);

			spent += r + t;
			if (pass && r < rbest[k])
				rbest[k] = r;
			if (pass && t < best[k])
				best[k] = t;
		}
	for (k = 0; k < made; k++) {
		if (k < n && !err)
			gbs[k] = arena_data_bytes(a[k]) / rbest[k] / 1e9;
		io_free(&io[k]);
	}
	return err;
}

/*
 * Best-of seconds of the kernels' prefill of @chunk query tokens at the
 * end of @a's first sequence (causal, one layer), and the flops counted;
 * with a peer (@p, @ph), the peer's pass after each of theirs, its
 * best-of in *@pbest.
 */
static int prefill_time(struct kva_attn *h, const struct arena *a,
			uint32_t chunk, double min_time, double *best,
			double *flops, const struct kvb_peer *p, void *ph,
			double *pbest)
{
	size_t n = (size_t)chunk * q_heads * a->g.head_dim;
	float *q = malloc(n * sizeof(*q)), *out = malloc(n * sizeof(*out));
	struct kva_prefill_seq s = {
		.base = a->seqs[0].base, .tokens = a->tokens,
		.q_tokens = chunk, .q_start = 0,
	};
	struct kva_attn_params pp = {
		.geom = &a->g, .layer = 0, .q_heads = q_heads,
		.scale = 1.0f / sqrtf((float)a->g.head_dim),
	};
	double spent = 0.0;
	int err = 0;

	if (!q || !out) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		q[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
	/* keys seen: prefix + i + 1 for query i */
	*flops = 4.0 * a->g.head_dim * q_heads *
		 ((double)chunk * (a->tokens - chunk) +
		  (double)chunk * (chunk + 1) / 2);
	*best = INFINITY;
	if (p)
		*pbest = INFINITY;
	for (int pass = 0; !err && (pass < 2 || spent < min_time); pass++) {
		double t = kvbench_now();

		err = kva_attn_prefill(h, &pp, &s, 1, q, out);
		t = kvbench_now() - t;
		spent += t;
		if (t < *best)
			*best = t;
		if (!err && p) {
			double u = kvbench_now();

			err = p->pass(ph);
			u = kvbench_now() - u;
			spent += u;
			if (u < *pbest)
				*pbest = u;
		}
	}
out:
	free(q);
	free(out);
	return err;
}

/* ---- the run ------------------------------------------------------------------ */

static int parse_list(const char *arg, uint64_t *v, unsigned int *n)
{
	char *end;

	*n = 0;
	do {
		if (*n == MAX_LIST)
			return -1;
		v[(*n)++] = strtoull(arg, &end, 10);
		if (end == arg || !v[*n - 1])
			return -1;
		arg = end + 1;
	} while (*end == ',');
	return *end ? -1 : 0;
}

/* "fp8,fp16": bf16 first, then the others, each once. */
static int parse_dtypes(const char *arg, struct opts *o)
{
	char buf[64], *tok, *save = NULL;

	if (strlen(arg) >= sizeof(buf))
		return -1;
	strcpy(buf, arg);
	o->dtypes[0] = KVA_DTYPE_BF16;
	o->nr_dtypes = 1;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned int d, i;

		for (d = 0; d < KVA_DTYPE_COUNT; d++)
			if (!strcmp(tok, kva_dtype_name((enum kva_dtype)d)))
				break;
		if (d == KVA_DTYPE_COUNT)
			return -1;
		for (i = 0; i < o->nr_dtypes; i++)
			if (o->dtypes[i] == d)
				break;
		if (i == o->nr_dtypes)
			o->dtypes[o->nr_dtypes++] = (enum kva_dtype)d;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: kvbench attn [--json] [--threads N] [--isa scalar|avx2|avx512]\n"
"                    [--dtype bf16,fp8] [--tokens 1024,8192,32768]\n"
"                    [--batch 1,16] [--mem MIB] [--time SEC] [--chunk N]\n"
"                    [--no-prefill] [--mixed] [--huge] [--peer FILE]\n"
"\n"
"Decode and prefill attention, Llama-3-8B geometry (32 q heads, 8 KV heads,\n"
"head_dim 128, 2 MiB frames), against the read bandwidth of the same bytes\n"
"measured in the same run.\n"
"  --dtype L    cache dtypes (fp32, fp16, bf16, fp8); bf16 always runs too,\n"
"               as the peer of the others' tokens per second (default bf16)\n"
"  --threads N  threads of the all-thread runs (default: online CPUs)\n"
"  --mem MIB    KV bytes each decode case cycles through (default 1024)\n"
"  --time SEC   least time spent on each measurement (default 0.5)\n"
"  --chunk N    prefill query tokens per sequence (default 512)\n"
"  --mixed      batches of several sequences hold lengths spread evenly\n"
"               over [tokens / 4, tokens] (the decodes; not the peer's)\n"
"  --huge       the KV on transparent huge pages (madvise MADV_HUGEPAGE),\n"
"               to see what the page walks of 4 KiB pages cost\n"
"  --peer FILE  another library's decode beside the kernels, pass for pass\n"
"               (a kvb_peer_v1 object: tools/ggml-peer/build.sh GGML_DIR)\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "dtype", required_argument, NULL, 'd' },
		{ "threads", required_argument, NULL, 't' },
		{ "isa", required_argument, NULL, 'i' },
		{ "tokens", required_argument, NULL, 'T' },
		{ "batch", required_argument, NULL, 'b' },
		{ "mem", required_argument, NULL, 'm' },
		{ "time", required_argument, NULL, 's' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "no-prefill", no_argument, NULL, 'P' },
		{ "peer", required_argument, NULL, 'p' },
		{ "mixed", no_argument, NULL, 'M' },
		{ "huge", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	uint64_t list[MAX_LIST];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int c;

	*o = (struct opts){
		.dtypes = { KVA_DTYPE_BF16 }, .nr_dtypes = 1,
		.threads = ncpu > 0 ? (unsigned int)ncpu : 1,
		.isa = KVA_ISA_AUTO,
		.tokens = { 1024, 8192, 32768 }, .nr_tokens = 3,
		.batch = { 1, 16 }, .nr_batch = 2,
		.mem = 1024ull << 20, .min_time = 0.5, .prefill = true,
		.chunk = 512,
	};
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 'd':
			if (parse_dtypes(optarg, o))
				goto bad;
			break;
		case 't':
			o->threads = (unsigned int)strtoul(optarg, NULL, 10);
			if (!o->threads || o->threads > 1024)
				goto bad;
			break;
		case 'i':
			if (kva_isa_parse(optarg, &o->isa))
				goto bad;
			break;
		case 'T':
			if (parse_list(optarg, o->tokens, &o->nr_tokens))
				goto bad;
			break;
		case 'b':
			if (parse_list(optarg, list, &o->nr_batch))
				goto bad;
			for (unsigned int i = 0; i < o->nr_batch; i++) {
				if (list[i] > 4096)
					goto bad;
				o->batch[i] = (uint32_t)list[i];
			}
			break;
		case 'm':
			o->mem = strtoull(optarg, NULL, 10) << 20;
			if (!o->mem)
				goto bad;
			break;
		case 's':
			o->min_time = strtod(optarg, NULL);
			if (!(o->min_time >= 0))
				goto bad;
			break;
		case 'c':
			o->chunk = (uint32_t)strtoul(optarg, NULL, 10);
			if (!o->chunk)
				goto bad;
			break;
		case 'P':
			o->prefill = false;
			break;
		case 'p':
			o->peer = optarg;
			break;
		case 'H':
			o->huge = true;
			huge_pages = true;
			break;
		case 'M':
			o->mixed = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc)
		goto bad;
	return 0;
bad:
	fprintf(stderr, "kvbench attn: bad option or value%s%s\n",
		optind <= argc && optarg ? ": " : "", optarg ? optarg : "");
	usage(stderr);
	return 2;
}

/* Layers a decode case cycles through: its bytes within --mem. */
static uint32_t layers_for(const struct opts *o, uint64_t tokens,
			   uint32_t batch, const struct kva_geometry *g)
{
	uint64_t per_layer = tokens * batch *
			     (slice_bytes(g) / g->tokens_per_frame);
	uint64_t l = o->mem / per_layer;

	return l < 1 ? 1 : l > g->layers ? g->layers : (uint32_t)l;
}

/* Tokens per second of a decode that took @t seconds for @layers layers. */
static double tokens_per_s(const struct arena *a, double t)
{
	return a->nr_seqs / (t / a->layers * a->g.layers);
}

/* One decode case: tokens x batch on one handle, for every dtype. */
struct case_row {
	const char *dtype;
	unsigned int threads;
	double kv_gbs, ratio, tps, vs_bf16;
	uint32_t layers;
};

static void print_row(const struct opts *o, const struct kva_attn *h,
		      uint64_t tokens, uint32_t batch, const struct case_row *r)
{
	if (o->json) {
		printf("{\"kind\":\"decode\",\"tokens\":%llu,\"batch\":%u,"
		       "\"threads\":%u,\"dtype\":\"%s\",\"isa\":\"%s\","
		       "\"layers\":%u,\"kv_gbs\":%.3f,\"ratio\":%.3f,"
		       "\"tokens_per_s\":%.1f",
		       (unsigned long long)tokens, batch, r->threads, r->dtype,
		       kva_isa_name(kva_attn_isa(h)), r->layers, r->kv_gbs,
		       r->ratio, r->tps);
		if (r->vs_bf16 > 0)
			printf(",\"vs_bf16\":%.3f", r->vs_bf16);
		if (o->mixed && batch > 1)
			printf(",\"mixed\":true");
		printf("}\n");
	} else {
		char b[16];

		snprintf(b, sizeof(b), "%u%s", batch,
			 o->mixed && batch > 1 ? "m" : "");
		printf("%8llu %6s %8u %6s %7u %9.2f %8.0f%% %10.1f",
		       (unsigned long long)tokens, b, r->threads, r->dtype,
		       r->layers, r->kv_gbs, 100 * r->ratio, r->tps);
		if (r->vs_bf16 > 0)
			printf(" %7.2fx", r->vs_bf16);
		printf("\n");
	}
	fflush(stdout);
}

/* ---- a peer's decode beside the kernels' (--peer) ------------------------ */

/* The bytes a hot case cycles through. */
#define PEER_HOT	(32ull << 20)

/* Each kvarena dtype beside the peer's counterparts. */
static const struct {
	enum kva_dtype dt;
	enum kvb_peer_dtype pdt;
	const char *pname;
} peer_pairs[] = {
	{ KVA_DTYPE_FP16, KVB_PEER_F16, "f16" },
	{ KVA_DTYPE_BF16, KVB_PEER_BF16, "bf16" },
	{ KVA_DTYPE_BF16, KVB_PEER_F16, "f16" },
	{ KVA_DTYPE_FP8, KVB_PEER_Q8_0, "q8_0" },
};

/* The peer object @path: its kvb_peer_v1, or NULL (said). */
static const struct kvb_peer *peer_load(const char *path)
{
#ifdef KVB_NO_PEER
	fprintf(stderr, "kvbench attn: --peer %s: not in this static build\n",
		path);
	return NULL;
#else
	const struct kvb_peer *p;
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!dl) {
		fprintf(stderr, "kvbench attn: --peer %s: %s\n", path,
			dlerror());
		return NULL;
	}
	p = dlsym(dl, "kvb_peer_v1");
	if (!p || p->abi != KVB_PEER_ABI || !p->open || !p->pass ||
	    !p->bytes || !p->close) {
		fprintf(stderr, "kvbench attn: --peer %s: no kvb_peer_v1 of ABI %u\n",
			path, KVB_PEER_ABI);
		return NULL;
	}
	return p;
#endif
}

/*
 * The kernels' decode of @a and the peer's of the same case, pass for
 * pass in turn: best-of seconds of each.
 */
static int peer_paired(struct kva_attn *h, const struct arena *a,
		       const struct kvb_peer *p, void *ph, double min_time,
		       double *kt, double *pt)
{
	struct decode_io io;
	double spent = 0.0;
	int err = io_make(&io, a);

	*kt = *pt = INFINITY;
	for (int pass = 0; !err && (pass < 3 || spent < 2 * min_time);
	     pass++) {
		double t = decode_pass(h, a, &io, &err), u;

		if (err)
			break;
		u = kvbench_now();
		err = p->pass(ph);
		u = kvbench_now() - u;
		spent += t + u;
		if (pass && t < *kt)
			*kt = t;
		if (pass && u < *pt)
			*pt = u;
	}
	io_free(&io);
	return err;
}

static int peer_prefill(const struct opts *o, const struct kvb_peer *p,
			struct kva_attn *const *hs, unsigned int tcount)
{
	if (!o->json)
		printf("\npeer prefill: %u query tokens at the end of the "
		       "context, causal, batch 1, one layer\n"
		       "%8s %8s %6s %6s %10s %10s %8s\n", o->chunk, "tokens",
		       "threads", "dtype", "peer", "GFLOP/s", "peer", "x peer");
	for (unsigned int ti = 0; ti < o->nr_tokens; ti++)
	for (unsigned int pi = 0; pi < sizeof(peer_pairs) / sizeof(peer_pairs[0]);
	     pi++) {
		uint64_t tokens = o->tokens[ti];
		struct arena a;
		unsigned int d;
		int err;

		if (tokens > 8192 || tokens < o->chunk)
			continue;	/* minutes, or no prefix */
		for (d = 0; d < o->nr_dtypes; d++)
			if (o->dtypes[d] == peer_pairs[pi].dt)
				break;
		if (d == o->nr_dtypes)
			continue;
		err = arena_make(&a, peer_pairs[pi].dt, tokens, 1, 1, false);
		if (err)
			return err;
		for (unsigned int k = 0; k < tcount && !err; k++) {
			struct kvb_peer_case pc = {
				.head_dim = a.g.head_dim,
				.kv_heads = a.g.kv_heads, .q_heads = q_heads,
				.batch = 1, .tokens = tokens, .layers = 1,
				.threads = kva_attn_threads(hs[k]),
				.dtype = peer_pairs[pi].pdt,
				.scale = 1.0f / sqrtf((float)a.g.head_dim),
				.q_tokens = o->chunk,
			};
			char why[160] = "";
			void *ph = p->open(&pc, why, sizeof(why));
			double kt, pt, flops;

			if (!ph) {
				fprintf(stderr, "kvbench attn: peer %s: %s\n",
					p->name, why);
				err = -EINVAL;
				break;
			}
			err = prefill_time(hs[k], &a, o->chunk, o->min_time,
					   &kt, &flops, p, ph, &pt);
			if (!err && o->json)
				printf("{\"kind\":\"peer_prefill\",\"peer\":\"%s\","
				       "\"version\":\"%s\",\"tokens\":%llu,"
				       "\"batch\":1,\"threads\":%u,"
				       "\"dtype\":\"%s\",\"peer_dtype\":\"%s\","
				       "\"q_tokens\":%u,\"gflops\":%.2f,"
				       "\"peer_gflops\":%.2f,\"vs_peer\":%.3f}\n",
				       p->name, p->version,
				       (unsigned long long)tokens, pc.threads,
				       kva_dtype_name(peer_pairs[pi].dt),
				       peer_pairs[pi].pname, o->chunk,
				       flops / kt / 1e9, flops / pt / 1e9,
				       pt / kt);
			else if (!err)
				printf("%8llu %8u %6s %6s %10.2f %10.2f %7.2fx\n",
				       (unsigned long long)tokens, pc.threads,
				       kva_dtype_name(peer_pairs[pi].dt),
				       peer_pairs[pi].pname, flops / kt / 1e9,
				       flops / pt / 1e9, pt / kt);
			fflush(stdout);
			p->close(ph);
		}
		arena_free(&a);
		if (err)
			return err;
	}
	return 0;
}

static int peer_run(const struct opts *o, const struct kvb_peer *p,
		    struct kva_attn *const *hs, unsigned int tcount)
{
	static const char *const cache[2] = { "cold", "hot" };
	int err = 0;

	if (!o->json) {
		printf("\npeer: %s (%s), decode, 32 q heads, 8 KV heads, "
		       "head_dim 128; cold: %llu MiB cycled, hot: 32 MiB; "
		       "passes alternate\n", p->name, p->version,
		       (unsigned long long)(o->mem >> 20));
		printf("%5s %8s %6s %8s %6s %6s %7s %10s %9s %10s %9s %8s\n",
		       "cache", "tokens", "batch", "threads", "dtype", "peer",
		       "layers", "tokens/s", "KV GB/s", "peer t/s", "peer GB/s",
		       "x peer");
	}
	for (unsigned int c = 0; c < 2; c++)
	for (unsigned int ti = 0; ti < o->nr_tokens; ti++)
	for (unsigned int bi = 0; bi < o->nr_batch; bi++)
	for (unsigned int pi = 0; pi < sizeof(peer_pairs) / sizeof(peer_pairs[0]);
	     pi++) {
		uint64_t tokens = o->tokens[ti];
		uint32_t batch = o->batch[bi], layers;
		struct kva_geometry g;
		struct arena a;
		unsigned int d;

		for (d = 0; d < o->nr_dtypes; d++)
			if (o->dtypes[d] == peer_pairs[pi].dt)
				break;
		if (d == o->nr_dtypes)
			continue;
		geometry(&g, peer_pairs[pi].dt);
		if (c) {
			struct opts hot = *o;

			/* Hot: what one layer of the case is too big for. */
			if (tokens * batch * (slice_bytes(&g) /
					      g.tokens_per_frame) > PEER_HOT)
				continue;
			hot.mem = PEER_HOT;
			layers = layers_for(&hot, tokens, batch, &g);
		} else {
			layers = layers_for(o, tokens, batch, &g);
		}
		err = arena_make(&a, peer_pairs[pi].dt, tokens, batch, layers,
				 false);
		if (err)
			return err;
		for (unsigned int k = 0; k < tcount && !err; k++) {
			struct kvb_peer_case pc = {
				.head_dim = g.head_dim, .kv_heads = g.kv_heads,
				.q_heads = q_heads, .batch = batch,
				.tokens = tokens, .layers = layers,
				.threads = kva_attn_threads(hs[k]),
				.dtype = peer_pairs[pi].pdt,
				.scale = 1.0f / sqrtf((float)g.head_dim),
			};
			char why[160] = "";
			void *ph = p->open(&pc, why, sizeof(why));
			double kt, pt;

			if (!ph) {
				fprintf(stderr, "kvbench attn: peer %s: %s\n",
					p->name, why);
				err = -EINVAL;
				break;
			}
			err = peer_paired(hs[k], &a, p, ph, o->min_time, &kt,
					  &pt);
			if (!err && o->json)
				printf("{\"kind\":\"peer\",\"peer\":\"%s\","
				       "\"version\":\"%s\",\"cache\":\"%s\","
				       "\"tokens\":%llu,\"batch\":%u,"
				       "\"threads\":%u,\"dtype\":\"%s\","
				       "\"peer_dtype\":\"%s\",\"layers\":%u,"
				       "\"tokens_per_s\":%.1f,\"kv_gbs\":%.3f,"
				       "\"peer_tokens_per_s\":%.1f,"
				       "\"peer_kv_gbs\":%.3f,\"vs_peer\":%.3f}\n",
				       p->name, p->version, cache[c],
				       (unsigned long long)tokens, batch,
				       pc.threads,
				       kva_dtype_name(peer_pairs[pi].dt),
				       peer_pairs[pi].pname, layers,
				       tokens_per_s(&a, kt),
				       arena_data_bytes(&a) / kt / 1e9,
				       tokens_per_s(&a, pt),
				       (double)p->bytes(ph) / pt / 1e9, pt / kt);
			else if (!err)
				printf("%5s %8llu %6u %8u %6s %6s %7u %10.1f "
				       "%9.2f %10.1f %9.2f %7.2fx\n", cache[c],
				       (unsigned long long)tokens, batch,
				       pc.threads,
				       kva_dtype_name(peer_pairs[pi].dt),
				       peer_pairs[pi].pname, layers,
				       tokens_per_s(&a, kt),
				       arena_data_bytes(&a) / kt / 1e9,
				       tokens_per_s(&a, pt),
				       (double)p->bytes(ph) / pt / 1e9, pt / kt);
			fflush(stdout);
			p->close(ph);
		}
		arena_free(&a);
		if (err)
			return err;
	}
	return o->prefill ? peer_prefill(o, p, hs, tcount) : 0;
}

int kvbench_attn_main(int argc, char **argv)
{
	struct kva_attn *h1 = NULL, *hn = NULL;
	struct kva_attn_config cfg = { .threads = 1 };
	const struct kvb_peer *peer = NULL;
	struct arena bw[MAX_DTYPES] = { 0 };
	struct arena *bwp[MAX_DTYPES] = { 0 };
	double bwr[2][MAX_DTYPES], bw_dec[2][MAX_DTYPES];
	struct kva_geometry g;
	struct opts o;
	unsigned int tcount, nd, d;
	int err;

	err = parse(argc, argv, &o);
	if (err)
		return err;
	/* A peer that does not load is refused before anything runs. */
	if (o.peer) {
		peer = peer_load(o.peer);
		if (!peer)
			return 1;
	}
	nd = o.nr_dtypes;
	cfg.isa = o.isa;
	err = kva_attn_create(&h1, &cfg);
	cfg.threads = o.threads;
	if (!err)
		err = kva_attn_create(&hn, &cfg);
	if (err) {
		fprintf(stderr, "kvbench attn: kernels (isa %s): %s\n",
			kva_isa_name(o.isa), strerror(-err));
		goto out;
	}
	tcount = o.threads > 1 ? 2 : 1;

	/*
	 * The peers: a read of each dtype's 8k-token batch-1 decode bytes,
	 * taken in turn with those decodes' passes.
	 */
	for (d = 0; d < nd; d++) {
		geometry(&g, o.dtypes[d]);
		err = arena_make(&bw[d], o.dtypes[d], 8192, 1,
				 layers_for(&o, 8192, 1, &g), false);
		if (err) {
			fprintf(stderr, "kvbench attn: arena: %s\n",
				strerror(-err));
			goto out;
		}
		bwp[d] = &bw[d];
	}
	err = paired(h1, bwp, nd, kva_attn_isa(h1), o.min_time, bwr[0],
		     bw_dec[0]);
	if (!err && tcount > 1)
		err = paired(hn, bwp, nd, kva_attn_isa(h1), o.min_time, bwr[1],
			     bw_dec[1]);
	else
		memcpy(bwr[1], bwr[0], sizeof(bwr[0]));
	if (err) {
		fprintf(stderr, "kvbench attn: decode: %s\n", strerror(-err));
		goto out;
	}
	for (d = 0; d < nd; d++) {
		if (o.json) {
			printf("{\"kind\":\"bandwidth\",\"dtype\":\"%s\","
			       "\"read_gbs_1t\":%.3f,\"read_gbs_all\":%.3f,"
			       "\"threads\":%u,\"bytes\":%.0f,"
			       "\"huge_pages\":%s}\n",
			       kva_dtype_name(o.dtypes[d]), bwr[0][d],
			       bwr[1][d], o.threads, arena_data_bytes(&bw[d]),
			       o.huge ? "true" : "false");
		} else {
			printf("read bandwidth (%.0f MiB: the 8k-token %s "
			       "decode's KV%s): %.2f GB/s on 1 thread, %.2f GB/s "
			       "on %u\n", arena_data_bytes(&bw[d]) / (1 << 20),
			       kva_dtype_name(o.dtypes[d]),
			       o.huge ? ", huge pages" : "", bwr[0][d],
			       bwr[1][d], o.threads);
		}
	}
	if (!o.json) {
		printf("\ndecode: 32 q heads, 8 KV heads, head_dim 128, "
		       "isa %s%s\n", kva_isa_name(kva_attn_isa(h1)),
		       o.mixed ? "; batch Bm: B sequences of lengths spread "
		       "over [tokens / 4, tokens]" : "");
		printf("%8s %6s %8s %6s %7s %9s %9s %10s %8s\n", "tokens",
		       "batch", "threads", "dtype", "layers", "KV GB/s",
		       "of read", "tokens/s", "x bf16");
	}
	fflush(stdout);

	for (unsigned int ti = 0; ti < o.nr_tokens; ti++)
		for (unsigned int bi = 0; bi < o.nr_batch; bi++) {
			uint64_t tokens = o.tokens[ti];
			uint32_t batch = o.batch[bi];
			struct case_row rows[2][MAX_DTYPES];

			for (d = 0; d < nd && !err; d++) {
				struct arena a = { 0 }, *ap = &a;

				geometry(&g, o.dtypes[d]);
				if (tokens == bw[d].tokens && batch == 1)
					ap = &bw[d];
				else
					err = arena_make(&a, o.dtypes[d], tokens,
						batch, layers_for(&o, tokens,
								  batch, &g),
						o.mixed && batch > 1);
				if (err) {
					fprintf(stderr, "kvbench attn: arena of %llu x %u tokens: %s\n",
						(unsigned long long)tokens,
						batch, strerror(-err));
					goto out;
				}
				for (unsigned int k = 0; k < tcount; k++) {
					struct kva_attn *hh = k ? hn : h1;
					struct case_row *r = &rows[k][d];
					double t;

					if (ap == &bw[d])
						t = bw_dec[k][d];
					else
						err = decode_time(hh, ap, o.min_time,
								  &t);
					if (err) {
						fprintf(stderr, "kvbench attn: decode: %s\n",
							strerror(-err));
						arena_free(&a);
						goto out;
					}
					r->dtype = kva_dtype_name(o.dtypes[d]);
					r->threads = kva_attn_threads(hh);
					r->layers = ap->layers;
					r->kv_gbs = arena_data_bytes(ap) / t / 1e9;
					r->ratio = r->kv_gbs / bwr[k][d];
					r->tps = tokens_per_s(ap, t);
					r->vs_bf16 = d ? r->tps / rows[k][0].tps :
							 0;
				}
				arena_free(&a);
			}
			for (unsigned int k = 0; k < tcount; k++)
				for (d = 0; d < nd; d++)
					print_row(&o, k ? hn : h1, tokens, batch,
						  &rows[k][d]);
		}

	if (peer) {
		struct kva_attn *hs[2] = { h1, hn };

		err = peer_run(&o, peer, hs, tcount);
		if (err) {
			fprintf(stderr, "kvbench attn: peer: %s\n",
				strerror(-err));
			goto out;
		}
	}
	if (o.prefill) {
		if (!o.json)
			printf("\nprefill: %u query tokens at the end of the "
			       "context, causal, batch 1\n%8s %6s %8s %6s %8s %10s\n",
			       o.chunk, "tokens", "batch", "threads", "dtype",
			       "q_tokens", "GFLOP/s");
		for (unsigned int ti = 0; ti < o.nr_tokens; ti++) {
			uint64_t tokens = o.tokens[ti];

			if (tokens > 8192 || tokens < o.chunk)
				continue;	/* minutes, or no prefix */
			for (d = 0; d < nd; d++) {
				struct arena a;

				err = arena_make(&a, o.dtypes[d], tokens, 1, 1,
						 false);
				if (err) {
					fprintf(stderr, "kvbench attn: arena: %s\n",
						strerror(-err));
					goto out;
				}
				for (unsigned int k = 0; k < tcount; k++) {
					struct kva_attn *hh = k ? hn : h1;
					double t, flops;

					err = prefill_time(hh, &a, o.chunk,
							   o.min_time, &t,
							   &flops, NULL, NULL,
							   NULL);
					if (err) {
						fprintf(stderr, "kvbench attn: prefill: %s\n",
							strerror(-err));
						arena_free(&a);
						goto out;
					}
					if (o.json)
						printf("{\"kind\":\"prefill\",\"tokens\":%llu,"
						       "\"batch\":1,\"threads\":%u,"
						       "\"dtype\":\"%s\",\"isa\":\"%s\","
						       "\"q_tokens\":%u,\"gflops\":%.2f}\n",
						       (unsigned long long)tokens,
						       kva_attn_threads(hh),
						       kva_dtype_name(o.dtypes[d]),
						       kva_isa_name(kva_attn_isa(hh)),
						       o.chunk, flops / t / 1e9);
					else
						printf("%8llu %6u %8u %6s %8u %10.2f\n",
						       (unsigned long long)tokens, 1,
						       kva_attn_threads(hh),
						       kva_dtype_name(o.dtypes[d]),
						       o.chunk, flops / t / 1e9);
					fflush(stdout);
				}
				arena_free(&a);
			}
		}
	}
out:
	for (d = 0; d < MAX_DTYPES; d++)
		arena_free(&bw[d]);
	kva_attn_destroy(h1);
	kva_attn_destroy(hn);
	return err ? 1 : 0;
}
