// SPDX-License-Identifier: GPL-2.0
/*
 * kvserve - serve a request trace with libkvarena and the attention
 * kernels.  See kvserve.h for the pieces, serve.c for the loop and
 * Documentation/kvsim.rst for figures.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kvarena.h>

#include "kvserve.h"

const char *kvt_prog = "kvserve";

static void help(FILE *f)
{
	fputs(
"Usage: kvserve --trace FILE [-m MODEL] [GEOMETRY] [options]\n"
"Serve a request trace: every sequence's KV in a kvarena sequence, real\n"
"prefill and decode attention every step, random weights.\n"
"\n"
"  -t, --trace FILE        Azure CSV or Mooncake JSONL\n"
"      --slice I/N         the I-th (from 1) of N equal slices of its time\n"
"      --requests N        at most N requests (from the slice's start)\n"
"      --time-scale X      replay X times faster (default 1)\n"
"  -m, --model NAME        llama-3-8b, llama-3-70b, qwen2.5-7b or mistral-7b;\n"
"                          --layers N --kv-heads N --head-dim N --dtype T\n"
"                          override its geometry\n"
"      --q-heads N         query heads (default: the model's, else KV heads)\n"
"      --frame-size S      bytes per frame (default 2M; the arena's)\n"
"      --arena NAME        attach to this arena of /dev/kvarena; without it,\n"
"                          or without the device, an embedded arena of\n"
"      --frames N          N frames (default 1024)\n"
"      --label L           the client's label (kvarenactl clients)\n"
"      --min-frames N      frames guaranteed to this client (device)\n"
"      --max-frames N      the most this client may hold\n"
"      --private           share no prefix with other clients: a cache\n"
"                          domain of its own (device)\n"
"      --max-model-len N   longest sequence (default: the longest request)\n"
"      --max-seqs N        running sequences at most (default: any)\n"
"      --prefill-budget T  prompt tokens prefilled per step (default: any)\n"
"      --preempt P         a preempted sequence's KV: recompute (default:\n"
"                          freed, its prefill done again) or swap (copied\n"
"                          to host memory, copied back when it resumes)\n"
"      --shared-prefix N   every prompt starts with the same N tokens\n"
"      --backend B         cpu (default) or cuda\n"
"      --threads N         CPU attention threads (default 1)\n"
"      --seed N            random K/V and queries (default 1)\n"
"      --tp N              tensor parallelism: N rank processes, each the\n"
"                          attention of 1/N of the heads, over --arena, a\n"
"                          gang of N members (kvarenactl create --gang); the\n"
"                          frame size is the members'\n"
"      --check             K/V and queries drawn from (request, position,\n"
"                          layer, head), no prefix sharing, and a digest of\n"
"                          every decode output: equal for any --tp\n"
"      --max-seconds S     stop after S seconds\n"
"      --report-every S    a progress line every S seconds\n"
"      --json              the summary as one JSON object\n"
"  -h, --help\n"
"Exit status: 0 served, 1 a failure while serving, 2 usage error or\n"
"unreadable trace.\n",
	      f);
}

enum {
	OPT_SLICE = KVT_OPT_GEOM_END, OPT_REQUESTS, OPT_SCALE, OPT_QHEADS,
	OPT_FRAME, OPT_ARENA, OPT_FRAMES, OPT_LABEL, OPT_MIN, OPT_MAX,
	OPT_MAXLEN, OPT_MAXSEQS, OPT_PREFILL, OPT_PREEMPT, OPT_SHARED, OPT_BACKEND,
	OPT_THREADS, OPT_SEED, OPT_SECONDS, OPT_REPORT, OPT_JSON, OPT_PRIVATE,
	OPT_TP, OPT_CHECK,
};

static const struct option options[] = {
	{ "trace",          required_argument, NULL, 't' },
	{ "slice",          required_argument, NULL, OPT_SLICE },
	{ "requests",       required_argument, NULL, OPT_REQUESTS },
	{ "time-scale",     required_argument, NULL, OPT_SCALE },
	KVT_GEOM_OPTIONS,
	{ "q-heads",        required_argument, NULL, OPT_QHEADS },
	{ "frame-size",     required_argument, NULL, OPT_FRAME },
	{ "arena",          required_argument, NULL, OPT_ARENA },
	{ "frames",         required_argument, NULL, OPT_FRAMES },
	{ "label",          required_argument, NULL, OPT_LABEL },
	{ "min-frames",     required_argument, NULL, OPT_MIN },
	{ "max-frames",     required_argument, NULL, OPT_MAX },
	{ "max-model-len",  required_argument, NULL, OPT_MAXLEN },
	{ "max-seqs",       required_argument, NULL, OPT_MAXSEQS },
	{ "prefill-budget", required_argument, NULL, OPT_PREFILL },
	{ "preempt",        required_argument, NULL, OPT_PREEMPT },
	{ "shared-prefix",  required_argument, NULL, OPT_SHARED },
	{ "backend",        required_argument, NULL, OPT_BACKEND },
	{ "threads",        required_argument, NULL, OPT_THREADS },
	{ "seed",           required_argument, NULL, OPT_SEED },
	{ "max-seconds",    required_argument, NULL, OPT_SECONDS },
	{ "report-every",   required_argument, NULL, OPT_REPORT },
	{ "json",           no_argument,       NULL, OPT_JSON },
	{ "private",        no_argument,       NULL, OPT_PRIVATE },
	{ "tp",             required_argument, NULL, OPT_TP },
	{ "check",          no_argument,       NULL, OPT_CHECK },
	{ "help",           no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct args {
	struct kvt_geom_opts geo;
	uint64_t slice, nr_slices, requests, scale_fx, frame_size;
	uint64_t q_heads, frames, min, max, max_len, max_seqs, prefill;
	uint64_t shared, threads, seed, seconds_fx, report_fx, tp;
};

static int get_u64(const char *opt, const char *arg, uint64_t lo,
		   uint64_t hi, uint64_t *out)
{
	char what[96];

	if (!kvt_parse_u64(arg, out) && *out >= lo && *out <= hi)
		return 0;
	snprintf(what, sizeof(what), "a whole number from %llu to %llu",
		 (unsigned long long)lo, (unsigned long long)hi);
	return kvt_bad(opt, what, arg);
}

static int get_secs(const char *opt, const char *arg, uint64_t *out)
{
	if (kvt_parse_fixed(arg, out) || !*out ||
	    *out > 1000000000ull * KVT_FIX_SCALE)
		return kvt_bad(opt, "a positive number", arg);
	return 0;
}

static int get_slice(const char *arg, struct args *a)
{
	const char *slash = strchr(arg, '/');
	char buf[32];

	if (slash && (size_t)(slash - arg) < sizeof(buf)) {
		memcpy(buf, arg, (size_t)(slash - arg));
		buf[slash - arg] = '\0';
		if (!kvt_parse_u64(buf, &a->slice) &&
		    !kvt_parse_u64(slash + 1, &a->nr_slices) &&
		    a->nr_slices && a->nr_slices <= 1000 && a->slice &&
		    a->slice <= a->nr_slices)
			return 0;
	}
	return kvt_bad("--slice", "I/N with 1 <= I <= N <= 1000", arg);
}

static int usage_err(const char *msg)
{
	fprintf(stderr, "%s: %s\n", kvt_prog, msg);
	kvt_usage_hint();
	return KVT_EXIT_USAGE;
}

static int bad_option(int c, char **argv)
{
	if (c == ':')
		fprintf(stderr, "%s: %s needs a value\n", kvt_prog,
			argv[optind - 1]);
	else if (optopt)
		fprintf(stderr, "%s: unknown option -%c\n", kvt_prog, optopt);
	else
		fprintf(stderr, "%s: unknown option %s\n", kvt_prog,
			argv[optind - 1]);
	kvt_usage_hint();
	return KVT_EXIT_USAGE;
}

static int parse(struct options *o, struct args *a, int argc, char **argv)
{
	int c, err;

	a->scale_fx = KVT_FIX_SCALE;
	a->frame_size = 2ull << 20;
	a->frames = 1024;
	a->threads = 1;
	a->seed = 1;
	a->tp = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":t:m:h", options, NULL)) != -1) {
		err = 0;
		switch (c) {
		case 't':
			o->trace = optarg;
			break;
		case OPT_SLICE:
			err = get_slice(optarg, a);
			break;
		case OPT_REQUESTS:
			err = get_u64("--requests", optarg, 1, 1u << 30,
				      &a->requests);
			break;
		case OPT_SCALE:
			err = get_secs("--time-scale", optarg, &a->scale_fx);
			break;
		case OPT_QHEADS:
			err = get_u64("--q-heads", optarg, 1, 65536,
				      &a->q_heads);
			break;
		case OPT_FRAME:
			if (kvt_parse_size(optarg, &a->frame_size) ||
			    a->frame_size < 4096 || a->frame_size > (1u << 30) ||
			    (a->frame_size & (a->frame_size - 1)))
				err = kvt_bad("--frame-size",
					      "a power of two from 4K to 1G",
					      optarg);
			break;
		case OPT_ARENA:
			o->arena = optarg;
			break;
		case OPT_FRAMES:
			err = get_u64("--frames", optarg, 1, 1u << 24,
				      &a->frames);
			break;
		case OPT_LABEL:
			o->label = optarg;
			break;
		case OPT_MIN:
			err = get_u64("--min-frames", optarg, 0, 1u << 24,
				      &a->min);
			break;
		case OPT_MAX:
			err = get_u64("--max-frames", optarg, 1, 1u << 24,
				      &a->max);
			break;
		case OPT_MAXLEN:
			err = get_u64("--max-model-len", optarg, 1, 1u << 30,
				      &a->max_len);
			break;
		case OPT_MAXSEQS:
			err = get_u64("--max-seqs", optarg, 1, 1u << 20,
				      &a->max_seqs);
			break;
		case OPT_PREFILL:
			err = get_u64("--prefill-budget", optarg, 1, 1u << 30,
				      &a->prefill);
			break;
		case OPT_PREEMPT:
			if (!strcmp(optarg, "recompute"))
				o->preempt_swap = 0;
			else if (!strcmp(optarg, "swap"))
				o->preempt_swap = 1;
			else
				err = kvt_bad("--preempt", "recompute or swap",
					      optarg);
			break;
		case OPT_SHARED:
			err = get_u64("--shared-prefix", optarg, 1, 1u << 20,
				      &a->shared);
			break;
		case OPT_BACKEND:
			if (!strcmp(optarg, "cpu"))
				o->backend = COMPUTE_CPU;
			else if (!strcmp(optarg, "cuda"))
				o->backend = COMPUTE_CUDA;
			else
				err = kvt_bad("--backend", "cpu or cuda",
					      optarg);
			break;
		case OPT_THREADS:
			err = get_u64("--threads", optarg, 1, 1024,
				      &a->threads);
			break;
		case OPT_SEED:
			err = get_u64("--seed", optarg, 0, UINT64_MAX,
				      &a->seed);
			break;
		case OPT_SECONDS:
			err = get_secs("--max-seconds", optarg, &a->seconds_fx);
			break;
		case OPT_REPORT:
			err = get_secs("--report-every", optarg, &a->report_fx);
			break;
		case OPT_JSON:
			o->json = 1;
			break;
		case OPT_PRIVATE:
			o->private_domain = 1;
			break;
		case OPT_TP:
			err = get_u64("--tp", optarg, 1, 16,
				      &a->tp);
			break;
		case OPT_CHECK:
			o->check = 1;
			break;
		case 'h':
			return -1;
		default:
			err = kvt_geom_option(&a->geo, c, optarg);
			if (err < 0)
				return bad_option(c, argv);
			break;
		}
		if (err)
			return err;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", kvt_prog,
			argv[optind]);
		kvt_usage_hint();
		return KVT_EXIT_USAGE;
	}
	if (!o->trace)
		return usage_err("--trace FILE is required");
	if (o->backend == COMPUTE_CUDA && !compute_cuda_ops) {
		fprintf(stderr, "%s: --backend cuda: this kvserve was built without CUDA (no nvcc at build time)\n",
			kvt_prog);
		return KVT_EXIT_USAGE;
	}
	o->tp = (uint32_t)a->tp;
	if (o->tp > 1 && (!o->arena || o->backend != COMPUTE_CPU ||
			  o->preempt_swap))
		return usage_err("--tp needs --arena (a gang), the cpu backend and --preempt recompute");
	if (o->check && (o->backend != COMPUTE_CPU))
		return usage_err("--check needs the cpu backend");
	return 0;
}

static int geometry(struct options *o, struct args *a)
{
	int err = kvt_geom_resolve(&a->geo, &o->g);
	char why[160];

	if (err)
		return err;
	o->g.frame_size = a->frame_size;
	err = kva_geometry_init(&o->g);
	if (err) {
		kva_geometry_explain(&o->g, why, sizeof(why));
		fprintf(stderr, "%s: the geometry does not fit the frames: %s\n",
			kvt_prog, why);
		return KVT_EXIT_USAGE;
	}
	o->q_heads = a->q_heads ? (uint32_t)a->q_heads :
		     a->geo.model && !a->geo.layers && !a->geo.kv_heads &&
		     !a->geo.head_dim ? a->geo.model->q_heads : o->g.kv_heads;
	if (o->q_heads % o->g.kv_heads) {
		fprintf(stderr, "%s: --q-heads %u is not a multiple of the %u KV heads\n",
			kvt_prog, o->q_heads, o->g.kv_heads);
		return KVT_EXIT_USAGE;
	}
	/* --tp: every process, scheduler included, has one rank's slice. */
	if (o->tp > 1) {
		if (o->g.kv_heads % o->tp) {
			fprintf(stderr, "%s: --tp %u does not divide the %u KV heads\n",
				kvt_prog, o->tp, o->g.kv_heads);
			return KVT_EXIT_USAGE;
		}
		o->g.kv_heads /= o->tp;
		o->q_heads /= o->tp;
		err = kva_geometry_init(&o->g);
		if (err) {
			kva_geometry_explain(&o->g, why, sizeof(why));
			fprintf(stderr, "%s: a rank's slice does not fit the frames: %s\n",
				kvt_prog, why);
			return KVT_EXIT_USAGE;
		}
	}
	return 0;
}

static int cmp_req(const void *x, const void *y)
{
	const struct kvt_req *a = x, *b = y;

	if (a->arrival_us != b->arrival_us)
		return a->arrival_us < b->arrival_us ? -1 : 1;
	return a->line < b->line ? -1 : a->line > b->line;
}

/* The slice's requests, rebased to its start and time-compressed. */
static int requests(struct options *o, const struct args *a,
		    struct kvt_trace *t)
{
	double scale = (double)a->scale_fx / KVT_FIX_SCALE;
	int64_t t0, from = 0, to = INT64_MAX;
	uint64_t max_len = a->max_len;
	size_t i;

	qsort(t->req, t->nr, sizeof(*t->req), cmp_req);
	t0 = t->req[0].arrival_us;
	if (a->nr_slices) {
		int64_t len = t->req[t->nr - 1].arrival_us - t0 + 1;
		int64_t width = (len + (int64_t)a->nr_slices - 1) /
				(int64_t)a->nr_slices;

		from = width * (int64_t)(a->slice - 1);
		to = from + width;
	}
	o->req = calloc(t->nr, sizeof(*o->req));
	if (!o->req)
		return -ENOMEM;
	if (!max_len)
		for (i = 0; i < t->nr; i++)
			if (t->req[i].ctx + a->shared + t->req[i].gen > max_len)
				max_len = t->req[i].ctx + a->shared +
					  t->req[i].gen;
	o->max_len = max_len;
	for (i = 0; i < t->nr; i++) {
		const struct kvt_req *q = &t->req[i];
		int64_t at = q->arrival_us - t0;
		uint64_t prompt = q->ctx + a->shared;
		struct request *r;

		if (at < from || at >= to)
			continue;
		if (a->requests && o->nr_req + o->refused >= a->requests)
			break;
		if (prompt > max_len) {
			o->refused++;
			continue;
		}
		r = &o->req[o->nr_req++];
		r->arrival_s = (double)(at - from) / 1e6 / scale;
		r->prompt = (uint32_t)prompt;
		r->output = (uint32_t)(q->gen < max_len - prompt ? q->gen :
				       max_len - prompt);
		r->nr_hash = q->nr_hash;
		r->hash = q->nr_hash ? t->hash + q->hash : NULL;
	}
	o->shared_prefix = (uint32_t)a->shared;
	return 0;
}

int main(int argc, char **argv)
{
	struct options o;
	struct args a;
	struct kvt_trace t;
	int err;

	memset(&o, 0, sizeof(o));
	memset(&a, 0, sizeof(a));
	err = parse(&o, &a, argc, argv);
	if (err < 0) {
		help(stdout);
		return KVT_EXIT_OK;
	}
	if (err)
		return err;
	err = geometry(&o, &a);
	if (err)
		return err;
	if (kvt_trace_read(o.trace, KVT_TRACE_TIMES | KVT_TRACE_HASHES, &t))
		return KVT_EXIT_USAGE;
	err = requests(&o, &a, &t);
	if (err) {
		fprintf(stderr, "%s: out of memory\n", kvt_prog);
		kvt_trace_free(&t);
		return KVT_EXIT_IMPOSSIBLE;
	}
	if (!o.nr_req) {
		fprintf(stderr, "%s: %s: no request to serve in this slice\n",
			kvt_prog, o.trace);
		free(o.req);
		kvt_trace_free(&t);
		return KVT_EXIT_USAGE;
	}
	o.frames = (uint32_t)a.frames;
	o.min_frames = (uint32_t)a.min;
	o.max_frames = (uint32_t)a.max;
	o.max_seqs = (uint32_t)a.max_seqs;
	o.prefill_budget = a.prefill;
	o.threads = (unsigned int)a.threads;
	o.seed = a.seed;
	o.max_seconds = (double)a.seconds_fx / KVT_FIX_SCALE;
	o.report_every = (double)a.report_fx / KVT_FIX_SCALE;
	err = serve(&o);
	free(o.req);
	kvt_trace_free(&t);
	return err;
}
