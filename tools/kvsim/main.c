// SPDX-License-Identifier: GPL-2.0
/*
 * kvsim - replay request traces through a step-level model of continuous
 * batching and compare how KV allocation policies use the memory.
 * See kvsim.h for the pieces and Documentation/kvsim.rst for the model.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim.h"

const char *kvt_prog = "kvsim";

#define GIB_SHIFT	30
#define MAX_TRACES	KVSIM_MAX_ENGINES
#define LEN_MAX		(1ull << 31)

static void help(FILE *f)
{
	fputs(
"Usage: kvsim --trace FILE... [-m MODEL] [GEOMETRY] --kv-gib X [options]\n"
"Replay request traces through a step-level model of continuous batching\n"
"and compare KV-cache allocation policies.\n"
"\n"
"  -t, --trace FILE        Azure CSV or Mooncake JSONL; several: one per engine\n"
"  -m, --model NAME        llama-3-8b, llama-3-70b, qwen2.5-7b or mistral-7b;\n"
"                          --layers N --kv-heads N --head-dim N --dtype T\n"
"                          override its geometry\n"
"      --frame-size S      kvarena frames of S bytes (default 2M)\n"
"      --kv-gib X          KV memory of all engines together, GiB, or\n"
"      --kv-bytes S        the same in bytes: 4096, 64K, 2M, 1G (one is required)\n"
"      --max-model-len N   longest sequence (default: the longest request)\n"
"      --policy LIST       contiguous-max,contiguous-oracle,pow2,paged:B,kvarena\n"
"                          (default: all five, paged:16); kvarena+host,\n"
"                          kvarena+swap, kvarena+host+swap: kvarena over a\n"
"                          lower tier of host memory that keeps reclaimed\n"
"                          cached frames (+host) and preempted sequences (+swap);\n"
"                          kvarena+host+remote, kvarena+host+swap+remote: and\n"
"                          a remote tier below that every node shares\n"
"      --host-gib X        the lower tier's size, GiB, or\n"
"      --host-bytes S      the same in bytes (all engines together)\n"
"      --disk-gib X        a disk below the host tier of kvarena+host, GiB, or\n"
"      --disk-bytes S      the same in bytes: what the host tier drops goes there\n"
"      --remote-gib X      kvarena+host+remote: a remote tier every node shares\n"
"      --remote-bytes S    (a Redis cluster's), GiB or bytes\n"
"      --remote-write W    demote (default: blocks reach it when host memory\n"
"                          takes them, as below a GPU arena) or publish\n"
"      --gpu-tflops R      timing model: a step takes --step-ms plus its prefill\n"
"                          at R TFLOP/s plus its copies between the tiers\n"
"      --copy-gbs G        arena <-> host copies' rate, GB/s (default 50)\n"
"      --disk-gbs G        host <-> disk copies' rate, GB/s (default 6)\n"
"      --remote-gbs G      a node's fetches from the remote tier, GB/s (default 10)\n"
"      --remote-ms MS      one fetch's round trip (default 1)\n"
"      --params N          the model's parameter count (default: the model's)\n"
"      --step-ms MS        time of one step (default 20)\n"
"      --prefill-budget T  prompt tokens prefilled per step (default: any)\n"
"      --max-seqs N        running sequences per engine (default: any)\n"
"      --engines N         N engines, static split against a shared arena;\n"
"                          one trace is cut into N slices of its time span\n"
"      --round-robin       or dealt out request by request, as a load\n"
"                          balancer in front of the engines does\n"
"      --nodes N           N nodes, each one engine with --kv-gib and\n"
"                          --host-gib of its own and a clock of its own,\n"
"                          the trace dealt out round-robin\n"
"      --engine-min-gib X  shared arena: guaranteed to each engine (default 0)\n"
"      --engine-max-gib X  shared arena: limit of each engine (default: all)\n"
"      --tp LIST           each engine's tensor parallelism, 1 or G (G GPUs,\n"
"                          --kv-gib over all of them): 2,2,1,1 is two engines\n"
"                          over both GPUs and one on each; kvarena shares a\n"
"                          gang among the first and an arena per GPU among\n"
"                          the others\n"
"      --requests N        only the first N requests of each trace\n"
"      --time-scale F      arrivals F times as far apart (2: half the rate)\n"
"      --json              one JSON object per line, per policy (and engine)\n"
"      --svg FILE          running sequences and memory over time, as SVG\n"
"  -h, --help\n"
"Exit status: 0 ok; 1 the memory cannot hold one block; 2 usage error,\n"
"unreadable trace, or a memory of 2^32 - 1 blocks or more.\n",
	      f);
}

enum {
	OPT_FRAME = KVT_OPT_GEOM_END, OPT_KV, OPT_KV_BYTES, OPT_MAXLEN,
	OPT_POLICY,
	OPT_STEP, OPT_PREFILL, OPT_MAXSEQS, OPT_ENGINES, OPT_EMIN, OPT_EMAX,
	OPT_REQUESTS, OPT_JSON, OPT_SVG, OPT_RR, OPT_HOST, OPT_HOST_BYTES,
	OPT_TFLOPS, OPT_COPY, OPT_PARAMS, OPT_TSCALE, OPT_DISK, OPT_DISK_BYTES,
	OPT_DISK_GBS, OPT_TP, OPT_NODES, OPT_REMOTE, OPT_REMOTE_BYTES,
	OPT_REMOTE_GBS, OPT_REMOTE_MS, OPT_REMOTE_WRITE,
};

static const struct option options[] = {
	{ "trace",          required_argument, NULL, 't' },
	KVT_GEOM_OPTIONS,
	{ "frame-size",     required_argument, NULL, OPT_FRAME },
	{ "kv-gib",         required_argument, NULL, OPT_KV },
	{ "kv-bytes",       required_argument, NULL, OPT_KV_BYTES },
	{ "max-model-len",  required_argument, NULL, OPT_MAXLEN },
	{ "policy",         required_argument, NULL, OPT_POLICY },
	{ "step-ms",        required_argument, NULL, OPT_STEP },
	{ "prefill-budget", required_argument, NULL, OPT_PREFILL },
	{ "max-seqs",       required_argument, NULL, OPT_MAXSEQS },
	{ "engines",        required_argument, NULL, OPT_ENGINES },
	{ "engine-min-gib", required_argument, NULL, OPT_EMIN },
	{ "engine-max-gib", required_argument, NULL, OPT_EMAX },
	{ "requests",       required_argument, NULL, OPT_REQUESTS },
	{ "round-robin",    no_argument,       NULL, OPT_RR },
	{ "json",           no_argument,       NULL, OPT_JSON },
	{ "svg",            required_argument, NULL, OPT_SVG },
	{ "host-gib",       required_argument, NULL, OPT_HOST },
	{ "host-bytes",     required_argument, NULL, OPT_HOST_BYTES },
	{ "gpu-tflops",     required_argument, NULL, OPT_TFLOPS },
	{ "copy-gbs",       required_argument, NULL, OPT_COPY },
	{ "params",         required_argument, NULL, OPT_PARAMS },
	{ "time-scale",     required_argument, NULL, OPT_TSCALE },
	{ "disk-gib",       required_argument, NULL, OPT_DISK },
	{ "disk-bytes",     required_argument, NULL, OPT_DISK_BYTES },
	{ "disk-gbs",       required_argument, NULL, OPT_DISK_GBS },
	{ "tp",             required_argument, NULL, OPT_TP },
	{ "nodes",          required_argument, NULL, OPT_NODES },
	{ "remote-gib",     required_argument, NULL, OPT_REMOTE },
	{ "remote-bytes",   required_argument, NULL, OPT_REMOTE_BYTES },
	{ "remote-gbs",     required_argument, NULL, OPT_REMOTE_GBS },
	{ "remote-ms",      required_argument, NULL, OPT_REMOTE_MS },
	{ "remote-write",   required_argument, NULL, OPT_REMOTE_WRITE },
	{ "help",           no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct args {
	const char *trace[MAX_TRACES];
	int nr_traces;
	struct kvt_geom_opts geo;
	uint64_t frame_size;
	uint64_t kv_fx, kv_bytes, emin_fx, emax_fx;
	int kv_set, emax_set;
	const char *kv_opt, *kv_arg;	/* the memory as given */
	uint64_t max_len;
	uint64_t step_fx;
	uint64_t prefill, max_seqs, requests;
	uint64_t engines;
	struct policy pol[KVSIM_MAX_POLICIES];
	int nr_pol;
	int json;
	int round_robin;
	const char *svg;
	uint64_t host_fx, host_bytes;
	int host_set;
	uint64_t tflops_fx, copy_fx, params, tscale_fx;
	uint64_t disk_fx, disk_bytes, disk_gbs_fx;
	int disk_set;
	uint32_t tp[KVSIM_MAX_ENGINES];	/* --tp, @nr_tp of them */
	int nr_tp;
	uint32_t gpus;			/* the largest of them */
	uint64_t nodes;			/* --nodes; 0: none */
	uint64_t remote_fx, remote_bytes, remote_gbs_fx, remote_ms_fx;
	int remote_set, remote_ms_set, remote_write, remote_write_set;
};

static int usage_err(const char *msg);

/* --tp LIST: degrees of 1 to 16, one per engine. */
static int parse_tp(struct args *a, const char *arg)
{
	const char *p = arg;

	a->nr_tp = 0;
	a->gpus = 1;
	for (;;) {
		char num[16], *end;
		size_t len = strcspn(p, ",");
		uint64_t v;

		if (a->nr_tp == KVSIM_MAX_ENGINES || !len ||
		    len >= sizeof(num))
			return kvt_bad("--tp", "a list of 1 to 16 degrees from 1 to 16",
				       arg);
		memcpy(num, p, len);
		num[len] = 0;
		v = strtoull(num, &end, 10);
		if (*end || num[0] == '-' || v < 1 || v > KVSIM_MAX_ENGINES)
			return kvt_bad("--tp", "a list of 1 to 16 degrees from 1 to 16",
				       arg);
		a->tp[a->nr_tp++] = (uint32_t)v;
		if (v > a->gpus)
			a->gpus = (uint32_t)v;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

/* The --tp rules: one G, as many engines of degree 1 on each GPU. */
static int check_tp(struct args *a)
{
	uint64_t engines = a->engines ? a->engines :
			   a->nr_traces > 1 ? (uint64_t)a->nr_traces : 0;
	uint32_t one = 0;
	int i;

	if (!a->nr_tp)
		return 0;
	if (engines && engines != (uint64_t)a->nr_tp) {
		fprintf(stderr, "%s: --tp gives %d degrees for %llu engines: give one per engine\n",
			kvt_prog, a->nr_tp, (unsigned long long)engines);
		kvt_usage_hint();
		return KVT_EXIT_USAGE;
	}
	a->engines = (uint64_t)a->nr_tp;
	if (a->gpus < 2)
		return usage_err("--tp needs an engine of degree 2 or more (the others 1)");
	for (i = 0; i < a->nr_tp; i++) {
		if (a->tp[i] != 1 && a->tp[i] != a->gpus)
			return usage_err("--tp: every degree is 1 or the largest, the number of GPUs");
		one += a->tp[i] == 1;
	}
	if (one % a->gpus)
		return usage_err("--tp: the engines of degree 1 must be a multiple of the GPUs (as many on each)");
	if (a->host_set || a->disk_set || a->tflops_fx)
		return usage_err("--tp is modelled without a lower tier and without the timing model");
	if (a->emin_fx || a->emax_set)
		return usage_err("--tp is modelled without --engine-min-gib and --engine-max-gib");
	return 0;
}

static int parse_policies(struct args *a, const char *arg)
{
	char buf[256], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf))
		goto bad;
	strcpy(buf, arg);
	a->nr_pol = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		struct policy *p = &a->pol[a->nr_pol];
		uint64_t B;

		if (a->nr_pol == KVSIM_MAX_POLICIES)
			goto bad;
		memset(p, 0, sizeof(*p));
		if (!strcmp(tok, "contiguous-max")) {
			p->kind = POL_CONTIG_MAX;
		} else if (!strcmp(tok, "contiguous-oracle")) {
			p->kind = POL_CONTIG_ORACLE;
		} else if (!strcmp(tok, "pow2")) {
			p->kind = POL_POW2;
		} else if (!strcmp(tok, "kvarena")) {
			p->kind = POL_KVARENA;
		} else if (!strcmp(tok, "kvarena+host")) {
			p->kind = POL_KVARENA;
			p->flags = POL_HOST;
		} else if (!strcmp(tok, "kvarena+swap")) {
			p->kind = POL_KVARENA;
			p->flags = POL_SWAP;
		} else if (!strcmp(tok, "kvarena+host+swap")) {
			p->kind = POL_KVARENA;
			p->flags = POL_HOST | POL_SWAP;
		} else if (!strcmp(tok, "kvarena+host+remote")) {
			p->kind = POL_KVARENA;
			p->flags = POL_HOST | POL_REMOTE;
		} else if (!strcmp(tok, "kvarena+host+swap+remote")) {
			p->kind = POL_KVARENA;
			p->flags = POL_HOST | POL_SWAP | POL_REMOTE;
		} else if (!strncmp(tok, "kvarena+", 8) &&
			   strstr(tok, "+remote") && !strstr(tok, "+host")) {
			return usage_err("a remote tier needs a host tier (kvarena+host+remote): its blocks come and go through host memory");
		} else if (!strncmp(tok, "paged:", 6) &&
			   !kvt_parse_u64(tok + 6, &B) && B && B <= 65536) {
			p->kind = POL_PAGED;
			p->block_tokens = (uint32_t)B;
		} else {
			goto bad;
		}
		snprintf(p->name, sizeof(p->name), "%s", tok);
		a->nr_pol++;
	}
	if (a->nr_pol)
		return 0;
bad:
	return kvt_bad("--policy",
		       "a list of contiguous-max, contiguous-oracle, pow2, paged:B (B from 1 to 65536) and kvarena (kvarena+host, kvarena+swap, kvarena+host+swap, kvarena+host+remote, kvarena+host+swap+remote)",
		       arg);
}

static int get_gib(const char *opt, const char *arg, uint64_t *out)
{
	if (kvt_parse_fixed(arg, out) || *out > KVT_MAX_GIB * KVT_FIX_SCALE)
		return kvt_bad(opt, "a size in GiB from 0 to 1048576", arg);
	return 0;
}

static int get_count(const char *opt, const char *arg, uint64_t lo,
		     uint64_t hi, uint64_t *out, const char *what)
{
	if (kvt_parse_u64(arg, out) || *out < lo || *out > hi)
		return kvt_bad(opt, what, arg);
	return 0;
}

/* A tier's size: --X-gib into *@fx, or --X-bytes into *@bytes. */
static int get_tier_size(const char *opt, const char *arg, uint64_t *fx,
			 uint64_t *bytes)
{
	*fx = 0;
	*bytes = 0;
	if (strstr(opt, "-gib"))
		return get_gib(opt, arg, fx);
	if (kvt_parse_size(arg, bytes) || *bytes > (KVT_MAX_GIB << 30))
		return kvt_bad(opt, "a size from 0 to 1024T (4096, 64K, 2M, 1G, ...)",
			       arg);
	return 0;
}

/* A rate above 0, up to a million @unit. */
static int get_rate(const char *opt, const char *arg, uint64_t *fx,
		    const char *unit)
{
	char what[64];

	if (kvt_parse_fixed(arg, fx) || !*fx ||
	    *fx > 1000000 * KVT_FIX_SCALE) {
		snprintf(what, sizeof(what), "a rate above 0, up to 1000000 %s",
			 unit);
		return kvt_bad(opt, what, arg);
	}
	return 0;
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

static int usage_err(const char *msg)
{
	fprintf(stderr, "%s: %s\n", kvt_prog, msg);
	kvt_usage_hint();
	return KVT_EXIT_USAGE;
}

static int parse_args(struct args *a, int argc, char **argv)
{
	int c, err;

	a->frame_size = 2ull << 20;
	a->step_fx = 20 * KVT_FIX_SCALE;
	a->engines = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":t:m:h", options, NULL)) != -1) {
		err = 0;
		switch (c) {
		case 't':
			if (a->nr_traces == MAX_TRACES)
				return usage_err("at most 16 traces");
			a->trace[a->nr_traces++] = optarg;
			break;
		case OPT_FRAME:
			if (kvt_parse_size(optarg, &a->frame_size) ||
			    !a->frame_size || a->frame_size > (1ull << 40))
				err = kvt_bad("--frame-size",
					      "a size from 1 byte to 1T (64K, 2M, ...)",
					      optarg);
			break;
		case OPT_KV:
			err = get_gib("--kv-gib", optarg, &a->kv_fx);
			if (!err && !a->kv_fx)
				err = kvt_bad("--kv-gib", "above 0", optarg);
			a->kv_set = 1;
			a->kv_bytes = 0;
			a->kv_opt = "--kv-gib";
			a->kv_arg = optarg;
			break;
		case OPT_KV_BYTES:
			if (kvt_parse_size(optarg, &a->kv_bytes) ||
			    !a->kv_bytes || a->kv_bytes > (KVT_MAX_GIB << 30))
				err = kvt_bad("--kv-bytes",
					      "a size from 1 byte to 1024T (4096, 64K, 2M, 1G, ...)",
					      optarg);
			a->kv_set = 1;
			a->kv_fx = 0;
			a->kv_opt = "--kv-bytes";
			a->kv_arg = optarg;
			break;
		case OPT_MAXLEN:
			err = get_count("--max-model-len", optarg, 1, LEN_MAX,
					&a->max_len,
					"a token count from 1 to 2147483648");
			break;
		case OPT_POLICY:
			err = parse_policies(a, optarg);
			break;
		case OPT_STEP:
			if (kvt_parse_fixed(optarg, &a->step_fx) ||
			    a->step_fx < KVT_FIX_SCALE / 1000 ||
			    a->step_fx > 3600000 * KVT_FIX_SCALE)
				err = kvt_bad("--step-ms",
					      "a time from 0.001 to 3600000 ms",
					      optarg);
			break;
		case OPT_PREFILL:
			err = get_count("--prefill-budget", optarg, 1, LEN_MAX,
					&a->prefill,
					"a token count from 1 to 2147483648");
			break;
		case OPT_MAXSEQS:
			err = get_count("--max-seqs", optarg, 1, 1u << 30,
					&a->max_seqs,
					"a whole number from 1 to 1073741824");
			break;
		case OPT_ENGINES:
			err = get_count("--engines", optarg, 1,
					KVSIM_MAX_ENGINES, &a->engines,
					"a whole number from 1 to 16");
			break;
		case OPT_EMIN:
			err = get_gib("--engine-min-gib", optarg, &a->emin_fx);
			break;
		case OPT_EMAX:
			err = get_gib("--engine-max-gib", optarg, &a->emax_fx);
			if (!err && !a->emax_fx)
				err = kvt_bad("--engine-max-gib", "above 0",
					      optarg);
			a->emax_set = 1;
			break;
		case OPT_REQUESTS:
			err = get_count("--requests", optarg, 1, 1u << 31,
					&a->requests,
					"a whole number from 1 to 2147483648");
			break;
		case OPT_JSON:
			a->json = 1;
			break;
		case OPT_RR:
			a->round_robin = 1;
			break;
		case OPT_SVG:
			a->svg = optarg;
			break;
		case OPT_HOST:
		case OPT_HOST_BYTES:
			err = get_tier_size(c == OPT_HOST ? "--host-gib" :
					    "--host-bytes", optarg,
					    &a->host_fx, &a->host_bytes);
			a->host_set = 1;
			break;
		case OPT_DISK:
		case OPT_DISK_BYTES:
			err = get_tier_size(c == OPT_DISK ? "--disk-gib" :
					    "--disk-bytes", optarg,
					    &a->disk_fx, &a->disk_bytes);
			a->disk_set = 1;
			break;
		case OPT_TFLOPS:
			err = get_rate("--gpu-tflops", optarg, &a->tflops_fx,
				       "TFLOP/s");
			break;
		case OPT_COPY:
			err = get_rate("--copy-gbs", optarg, &a->copy_fx, "GB/s");
			break;
		case OPT_DISK_GBS:
			err = get_rate("--disk-gbs", optarg, &a->disk_gbs_fx,
				       "GB/s");
			break;
		case OPT_NODES:
			err = get_count("--nodes", optarg, 1, KVSIM_MAX_ENGINES,
					&a->nodes, "a count from 1 to 16");
			break;
		case OPT_REMOTE:
		case OPT_REMOTE_BYTES:
			err = get_tier_size(c == OPT_REMOTE ? "--remote-gib" :
					    "--remote-bytes", optarg,
					    &a->remote_fx, &a->remote_bytes);
			a->remote_set = 1;
			break;
		case OPT_REMOTE_GBS:
			err = get_rate("--remote-gbs", optarg, &a->remote_gbs_fx,
				       "GB/s");
			break;
		case OPT_REMOTE_MS:
			if (kvt_parse_fixed(optarg, &a->remote_ms_fx) ||
			    a->remote_ms_fx > 60000 * KVT_FIX_SCALE)
				err = kvt_bad("--remote-ms",
					      "a time from 0 to 60000 ms", optarg);
			a->remote_ms_set = 1;
			break;
		case OPT_REMOTE_WRITE:
			if (!strcmp(optarg, "demote"))
				a->remote_write = REMOTE_ON_DEMOTE;
			else if (!strcmp(optarg, "publish"))
				a->remote_write = REMOTE_ON_PUBLISH;
			else
				err = kvt_bad("--remote-write",
					      "demote or publish", optarg);
			a->remote_write_set = 1;
			break;
		case OPT_TP:
			err = parse_tp(a, optarg);
			break;
		case OPT_TSCALE:
			if (kvt_parse_fixed(optarg, &a->tscale_fx) ||
			    a->tscale_fx < KVT_FIX_SCALE / 1000 ||
			    a->tscale_fx > 1000 * KVT_FIX_SCALE)
				err = kvt_bad("--time-scale",
					      "a factor from 0.001 to 1000",
					      optarg);
			break;
		case OPT_PARAMS:
			err = get_count("--params", optarg, 1, 1ull << 50,
					&a->params,
					"a parameter count from 1 to 2^50");
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
	if (!a->nr_traces)
		return usage_err("--trace FILE is required");
	if (!a->kv_set)
		return usage_err("--kv-gib or --kv-bytes is required");
	err = check_tp(a);
	if (err)
		return err;
	if (a->nodes) {
		if (a->engines || a->round_robin || a->nr_tp || a->emin_fx ||
		    a->emax_set || a->nr_traces > 1)
			return usage_err("--nodes takes one trace and deals it out itself: not with --engines, --round-robin, --tp, --engine-min-gib or --engine-max-gib");
		a->engines = a->nodes;
	}
	if (!a->engines)
		a->engines = (uint64_t)a->nr_traces;
	if (a->nr_traces != 1 && (uint64_t)a->nr_traces != a->engines) {
		fprintf(stderr, "%s: %d traces for %llu engines: give one trace, or one per engine\n",
			kvt_prog, a->nr_traces,
			(unsigned long long)a->engines);
		kvt_usage_hint();
		return KVT_EXIT_USAGE;
	}
	if (a->round_robin && (a->engines < 2 || a->nr_traces > 1))
		return usage_err("--round-robin needs one trace and --engines 2 or more");
	if ((a->emin_fx || a->emax_set) && a->engines < 2)
		return usage_err("--engine-min-gib and --engine-max-gib need --engines 2 or more");
	if (!a->nr_pol) {
		static const char *const def = "contiguous-max,contiguous-oracle,pow2,paged:16,kvarena";

		parse_policies(a, def);
	}
	for (c = 0; c < a->nr_pol; c++)
		if (a->pol[c].flags && !a->host_set)
			return usage_err("kvarena+host and kvarena+swap need --host-gib or --host-bytes");
	for (c = 0; c < a->nr_pol; c++)
		if (a->pol[c].flags & POL_REMOTE)
			break;
	if (c < a->nr_pol && !a->remote_set)
		return usage_err("kvarena+host+remote needs --remote-gib or --remote-bytes");
	if (c == a->nr_pol && (a->remote_set || a->remote_gbs_fx ||
			       a->remote_ms_set || a->remote_write_set))
		return usage_err("--remote-gib, --remote-bytes, --remote-gbs, --remote-ms and --remote-write need kvarena+host+remote");
	if ((a->remote_gbs_fx || a->remote_ms_set) && !a->tflops_fx)
		return usage_err("--remote-gbs and --remote-ms need --gpu-tflops (the timing model)");
	if (a->disk_set) {
		for (c = 0; c < a->nr_pol; c++)
			if (a->pol[c].flags & POL_HOST)
				break;
		if (c == a->nr_pol)
			return usage_err("--disk-gib and --disk-bytes need kvarena+host (the disk lies below its host tier)");
	}
	if ((a->copy_fx || a->disk_gbs_fx) && !a->tflops_fx)
		return usage_err("--copy-gbs and --disk-gbs need --gpu-tflops (the timing model)");
	if (a->tflops_fx && !a->params && !a->geo.model)
		return usage_err("--gpu-tflops needs --model or --params (the model's parameter count)");
	return 0;
}

static uint64_t gib_bytes(uint64_t fx)
{
	return (uint64_t)(((unsigned __int128)fx << GIB_SHIFT) /
			  KVT_FIX_SCALE);
}

/* ---- workloads ------------------------------------------------------- */

static int cmp_arrival(const void *x, const void *y)
{
	const struct kvt_req *a = x, *b = y;

	if (a->arrival_us != b->arrival_us)
		return a->arrival_us < b->arrival_us ? -1 : 1;
	return a->line < b->line ? -1 : a->line > b->line;
}

/*
 * Engine @w's requests: those of @t (its first @limit) whose arrival,
 * counted from @t's first, falls in [@from, @to), counted from @from,
 * and whose index is @first modulo @stride.
 * As vLLM does, a prompt longer than @max_len is refused and the output
 * is cut where the sequence would pass @max_len.
 */
static int make_workload(struct workload *w, const struct kvt_trace *t,
			 size_t limit, int64_t from, int64_t to,
			 size_t first, size_t stride, uint64_t max_len)
{
	int64_t t0 = t->req[0].arrival_us;
	size_t i;

	w->req = calloc(limit ? limit : 1, sizeof(*w->req));
	if (!w->req)
		return -ENOMEM;
	for (i = 0; i < limit; i++) {
		const struct kvt_req *q = &t->req[i];
		int64_t at = q->arrival_us - t0;
		struct req *r;

		if (at < from || at >= to || i % stride != first)
			continue;
		if (q->ctx > max_len) {
			w->rejected++;
			continue;
		}
		r = &w->req[w->nr++];
		r->arrival_us = at - from;
		r->prompt = (uint32_t)q->ctx;
		r->output = (uint32_t)(q->gen < max_len - q->ctx ? q->gen :
				       max_len - q->ctx);
		w->prompt_tokens += r->prompt;
		if (q->nr_hash) {
			r->nr_hash = q->nr_hash;
			r->hash = t->hash + q->hash;
			r->chain = malloc(q->nr_hash * sizeof(*r->chain));
			if (!r->chain)
				return -ENOMEM;
			keys_chain(r);
		}
	}
	return 0;
}

static void free_workload(struct workload *w)
{
	uint32_t i;

	for (i = 0; i < w->nr; i++)
		free(w->req[i].chain);
	free(w->req);
}

/* Arrivals @fx / KVT_FIX_SCALE times as far from the first. */
static void scale_arrivals(struct kvt_trace *t, uint64_t fx)
{
	double f = (double)fx / KVT_FIX_SCALE;
	int64_t t0;
	size_t i;

	if (!t->nr)
		return;
	t0 = t->req[0].arrival_us;
	for (i = 0; i < t->nr; i++)
		t->req[i].arrival_us = t0 + (int64_t)((double)(t->req[i].arrival_us - t0) * f + 0.5);
}

/* ---- runs ------------------------------------------------------------ */

/* Pool @p for the @nr_engines engines serving @w[0..@nr_engines). */
static int pool_init(struct pool *p, const struct policy *pol,
		     const struct config *cfg, int nr_engines,
		     uint32_t min_frames, uint32_t max_frames,
		     const struct workload *w)
{
	p->pol = pol;
	p->nr_engines = nr_engines;
	switch (pol->kind) {
	case POL_PAGED:
		return paged_pool_init(p, cfg, pol->block_tokens, w,
				       nr_engines);
	case POL_KVARENA:
		return arena_pool_init(p, cfg, nr_engines, min_frames,
				       max_frames, w);
	default:
		return tokens_pool_init(p, cfg);
	}
}

/*
 * Where engine @i of @n draws its memory under layout @lay: its pool and
 * its client number there, and each pool's size and gang width, in
 * @r->pools (@r->nr_pools of them).
 *
 * Without --tp: a pool per engine of an equal share, or one arena.  With
 * --tp (G GPUs of kv_bytes / G each): an engine of degree G spans every
 * GPU, one of degree 1 runs on GPU k mod G (k: its number among those),
 * and each GPU's memory goes in equal shares to the engines on it.
 * Static split: each engine a pool of its shares.  Shared: a gang over
 * the G GPUs for the engines of degree G (their shares together; a frame
 * of it is a frame on each GPU, and holds G times the tokens) and an
 * arena per GPU for the engines of degree 1 on it - the boundary between
 * the gang's members and the arenas as fixed as a static split's, since
 * a member is the gang's whole (Documentation/kvarena.rst, "Gangs").
 */
static void place_engines(struct run *r, enum layout lay, int n,
			  int *pool_of, int *client_of)
{
	const struct config *cfg = r->cfg;
	uint32_t g = cfg->gpus > 1 ? cfg->gpus : 1, ntp = 0, one = 0, k = 0;
	int i, base = 0, count[KVSIM_MAX_ENGINES] = { 0 };
	uint64_t share;

	for (i = 0; i < n; i++) {
		if (cfg->gpus > 1 && cfg->tp[i] > 1)
			ntp++;
		else
			one++;
	}
	/* One GPU's bytes of one engine. */
	share = cfg->kv_bytes / g / (ntp + one / g);
	if (lay == LAYOUT_NODES) {
		/* A node is a GPU of --kv-gib. */
		r->nr_pools = n;
		for (i = 0; i < n; i++) {
			pool_of[i] = i;
			r->pools[i].width = 1;
			r->pools[i].bytes = cfg->kv_bytes;
		}
	} else if (lay != LAYOUT_SHARED) {
		r->nr_pools = n;
		for (i = 0; i < n; i++) {
			pool_of[i] = i;
			r->pools[i].width = cfg->gpus > 1 && cfg->tp[i] > 1 ?
					    g : 1;
			r->pools[i].bytes = share * r->pools[i].width;
		}
	} else if (g == 1) {
		r->nr_pools = 1;
		r->pools[0].width = 1;
		r->pools[0].bytes = cfg->kv_bytes;
		for (i = 0; i < n; i++)
			pool_of[i] = 0;
	} else {
		if (ntp) {
			r->pools[0].width = g;
			r->pools[0].bytes = share * g * ntp;
			base = 1;
		}
		r->nr_pools = base + (one ? (int)g : 0);
		for (i = base; i < r->nr_pools; i++) {
			r->pools[i].width = 1;
			r->pools[i].bytes = share * (one / g);
		}
		for (i = 0; i < n; i++)
			pool_of[i] = cfg->tp[i] > 1 ? 0 : base + (int)(k++ % g);
	}
	for (i = 0; i < n; i++)
		client_of[i] = count[pool_of[i]]++;
}

static int setup_run(struct run *r, const struct policy *pol,
		     enum layout lay, const struct config *cfg, int n,
		     const struct workload *w)
{
	int pool_of[KVSIM_MAX_ENGINES], client_of[KVSIM_MAX_ENGINES];
	uint32_t min_frames = 0, max_frames = 0;
	int i, j, err;

	r->pol = pol;
	r->layout = lay;
	r->cfg = cfg;
	r->nr_engines = n;
	place_engines(r, lay, n, pool_of, client_of);
	if (lay == LAYOUT_SHARED) {
		min_frames = (uint32_t)(cfg->engine_min / cfg->g.frame_size);
		max_frames = (uint32_t)(cfg->engine_max / cfg->g.frame_size);
	}
	for (i = 0; i < r->nr_pools; i++) {
		/* Its engines' workloads, in client order. */
		struct workload pw[KVSIM_MAX_ENGINES];
		int m = 0;

		for (j = 0; j < n; j++)
			if (pool_of[j] == i)
				pw[m++] = w[j];
		/* A node's host memory and disk are its own. */
		r->pools[i].host_bytes = lay == LAYOUT_NODES ? cfg->host_bytes :
					 cfg->host_bytes / (uint64_t)r->nr_pools;
		r->pools[i].disk_bytes = lay == LAYOUT_NODES ? cfg->disk_bytes :
					 cfg->disk_bytes / (uint64_t)r->nr_pools;
		err = pool_init(&r->pools[i], pol, cfg, m, min_frames,
				max_frames, pw);
		if (err)
			return err;
	}
	if (pol->flags & POL_REMOTE) {
		uint64_t keyed;

		/* One tier for all; its keys: every engine's prompts'. */
		pool_reach(w, n, cfg->g.tokens_per_frame, &keyed);
		r->has_remote = true;
		err = tier_init(&r->remote, cfg->remote_bytes, cfg->g.frame_size,
				keyed ? keyed : 1);
		if (err)
			return err;
		for (i = 0; i < r->nr_pools; i++) {
			r->pools[i].tier->remote = &r->remote;
			r->pools[i].tier->store_on_demote =
				cfg->remote_write == REMOTE_ON_DEMOTE;
		}
	}
	for (i = 0; i < n; i++) {
		struct engine *e = &r->eng[i];
		struct pool *p = &r->pools[pool_of[i]];

		e->id = i;
		e->client = client_of[i];
		e->cfg = cfg;
		e->pool = p;
		e->ops = p->ops ? &blocks_ops : &tokens_ops;
		e->max_blocks = max_frames && max_frames < p->nr_blocks ?
				max_frames : p->nr_blocks;
		if (p->ops) {
			e->refs = calloc(p->nr_tracked, sizeof(*e->refs));
			if (!e->refs)
				return -ENOMEM;
		}
	}
	return 0;
}

/*
 * Why @r's pools could not be made: a memory past what kvsim models (a
 * usage error), one that holds no block, minimums beyond the arena.
 */
static int pool_error(const struct args *a, const struct run *r, int err)
{
	char kv[32], unit[32], most[32];
	const struct config *cfg = r->cfg;
	uint64_t unit_bytes = r->pol->kind == POL_KVARENA ? cfg->g.frame_size :
			      r->pol->kind == POL_PAGED ?
			      r->pol->block_tokens * cfg->g.bytes_per_token :
			      cfg->g.bytes_per_token;

	if (err == -ENOMEM) {
		fprintf(stderr, "%s: out of memory\n", kvt_prog);
		return KVT_EXIT_IMPOSSIBLE;
	}
	kvt_fmt_bytes(kv, sizeof(kv), r->pools[0].bytes);
	kvt_fmt_bytes(unit, sizeof(unit), unit_bytes);
	if (err == -EFBIG) {
		/* Block indices are 32 bits; the core's KVA_NIL ends lists. */
		kvt_fmt_bytes(most, sizeof(most), 0xffffffffull * unit_bytes *
			      (uint64_t)r->nr_pools);
		fprintf(stderr, "%s: %s: %s %s is %llu %s of %s%s; kvsim models fewer than 2^32 - 1 (%s under %s)\n",
			kvt_prog, r->pol->name, a->kv_opt, a->kv_arg,
			(unsigned long long)(r->pools[0].bytes / unit_bytes),
			r->pol->kind == POL_KVARENA ? "frames" : "blocks", unit,
			r->nr_pools > 1 ? " per engine" : "", a->kv_opt, most);
		kvt_usage_hint();
		return KVT_EXIT_USAGE;
	}
	if (err == -ENOSPC && r->layout == LAYOUT_SHARED)
		fprintf(stderr, "%s: %s: the engines' minimums exceed the arena\n",
			kvt_prog, r->pol->name);
	else
		fprintf(stderr, "%s: %s: %s of KV memory per engine holds no block of %s\n",
			kvt_prog, r->pol->name, kv, unit);
	return KVT_EXIT_IMPOSSIBLE;
}

static const char *fmt_gpu(char *buf, size_t size, const struct config *cfg)
{
	kvt_fmt_bytes(buf, size, cfg->kv_bytes / cfg->gpus);
	return buf;
}

static void print_header(const struct args *a, const struct config *cfg,
			 const struct kvt_trace *t, const struct workload *w)
{
	char bpt[32], kv[32], fs[32];
	uint32_t nr = 0, rej = 0;
	uint64_t i;
	int k;

	for (i = 0; i < a->engines; i++) {
		nr += w[i].nr;
		rej += w[i].rejected;
	}
	kvt_fmt_bytes(bpt, sizeof(bpt), cfg->g.bytes_per_token);
	kvt_fmt_bytes(kv, sizeof(kv), cfg->kv_bytes);
	kvt_fmt_bytes(fs, sizeof(fs), cfg->g.frame_size);
	for (k = 0; k < a->nr_traces; k++)
		printf("trace    %s (%s, %zu requests)\n", t[k].path,
		       t[k].format, t[k].nr);
	printf("model    %s: %u layers, %u KV heads, head dim %u, %s, %s per token\n",
	       a->geo.model ? a->geo.model->name : "custom", cfg->g.layers,
	       cfg->g.kv_heads, cfg->g.head_dim,
	       kva_dtype_name((enum kva_dtype)cfg->g.dtype), bpt);
	printf("memory   %s of KV; kvarena frames of %s (%u tokens)\n", kv, fs,
	       cfg->g.tokens_per_frame);
	printf("engines  %llu; %u requests, %u refused (prompt over the max model len, %llu); step %.3g ms\n",
	       (unsigned long long)a->engines, nr + rej, rej,
	       (unsigned long long)cfg->max_len, (double)cfg->step_us / 1000);
	if (cfg->gpus > 1) {
		uint32_t ntp = 0;

		for (k = 0; k < a->nr_tp; k++)
			ntp += a->tp[k] > 1;
		printf("gpus     %u, %s of KV each; tensor parallelism",
		       cfg->gpus, fmt_gpu(kv, sizeof(kv), cfg));
		for (k = 0; k < a->nr_tp; k++)
			printf("%c%u", k ? ',' : ' ', a->tp[k]);
		printf(": static split, each engine an equal share of each GPU it runs on; kvarena shared, %s%s%s\n",
		       ntp ? "a gang over the GPUs for the engines over all of them" : "",
		       ntp && (int)ntp < a->nr_tp ? " and " : "",
		       (int)ntp < a->nr_tp ? "an arena per GPU for the engines on one" : "");
	}
	if (a->host_set) {
		kvt_fmt_bytes(kv, sizeof(kv), cfg->host_bytes);
		printf("tier     %s of host memory below the arena (kvarena+host, kvarena+swap)",
		       kv);
		if (a->disk_set) {
			kvt_fmt_bytes(kv, sizeof(kv), cfg->disk_bytes);
			printf(", %s of disk below it (kvarena+host)", kv);
		}
		putchar('\n');
	}
	if (cfg->flops_per_s > 0) {
		printf("timing   a step: %.3g ms + prefill at %.6g TFLOP/s (%.4g GFLOP a token, %.6g B parameters) + copies at %.6g GB/s",
		       (double)cfg->step_us / 1000, cfg->flops_per_s / 1e12,
		       cost_prefill_flops(cfg, 0, 1) / 1e9, cfg->params / 1e9,
		       cfg->copy_bytes_per_s / 1e9);
		if (a->disk_set)
			printf(", to disk at %.6g GB/s",
			       cfg->disk_bytes_per_s / 1e9);
		putchar('\n');
	}
	putchar('\n');
}

int main(int argc, char **argv)
{
	struct kvt_trace traces[MAX_TRACES];
	struct workload w[KVSIM_MAX_ENGINES];
	struct run *runs = NULL;
	struct args a;
	struct config cfg;
	int i, k, nr_runs = 0, err, ret = KVT_EXIT_OK, nr_loaded = 0;
	int64_t span = 0;

	memset(&a, 0, sizeof(a));
	memset(&cfg, 0, sizeof(cfg));
	memset(w, 0, sizeof(w));
	err = parse_args(&a, argc, argv);
	if (err < 0) {
		help(stdout);
		return KVT_EXIT_OK;
	}
	if (err)
		return err;
	err = kvt_geom_resolve(&a.geo, &cfg.g);
	if (err)
		return err;
	cfg.g.frame_size = a.frame_size;
	err = kva_geometry_init(&cfg.g);
	if (err == -E2BIG) {
		fprintf(stderr, "%s: one token (%llu bytes of KV) does not fit in a frame of %llu bytes\n",
			kvt_prog,
			(unsigned long long)(2ull * cfg.g.layers *
			cfg.g.kv_heads * cfg.g.head_dim *
			kva_dtype_size((enum kva_dtype)cfg.g.dtype)),
			(unsigned long long)a.frame_size);
		return KVT_EXIT_IMPOSSIBLE;
	}
	if (err) {
		fprintf(stderr, "%s: the geometry is beyond the frame layout's limits\n",
			kvt_prog);
		return KVT_EXIT_USAGE;
	}
	cfg.kv_bytes = a.kv_bytes ? a.kv_bytes : gib_bytes(a.kv_fx);
	cfg.engine_min = gib_bytes(a.emin_fx);
	cfg.engine_max = a.emax_set ? gib_bytes(a.emax_fx) : 0;
	cfg.step_us = (int64_t)(a.step_fx / 1000000);
	if (!cfg.step_us)
		cfg.step_us = 1;
	cfg.prefill_budget = a.prefill;
	cfg.max_seqs = (uint32_t)a.max_seqs;
	cfg.host_bytes = a.host_bytes ? a.host_bytes : gib_bytes(a.host_fx);
	cfg.flops_per_s = (double)a.tflops_fx / KVT_FIX_SCALE * 1e12;
	cfg.copy_bytes_per_s = a.copy_fx ?
			       (double)a.copy_fx / KVT_FIX_SCALE * 1e9 : 50e9;
	cfg.disk_bytes = a.disk_bytes ? a.disk_bytes : gib_bytes(a.disk_fx);
	cfg.disk_bytes_per_s = a.disk_gbs_fx ?
			       (double)a.disk_gbs_fx / KVT_FIX_SCALE * 1e9 : 6e9;
	cfg.remote_bytes = a.remote_bytes ? a.remote_bytes :
			   gib_bytes(a.remote_fx);
	cfg.remote_bytes_per_s = a.remote_gbs_fx ?
			(double)a.remote_gbs_fx / KVT_FIX_SCALE * 1e9 : 10e9;
	cfg.remote_rtt_us = a.remote_ms_set ?
			(int64_t)(a.remote_ms_fx * 1000 / KVT_FIX_SCALE) : 1000;
	cfg.remote_write = (enum remote_write)a.remote_write;
	cfg.params = a.params ? (double)a.params :
		     a.geo.model ? (double)a.geo.model->params : 0;
	cfg.q_heads = a.geo.model ? a.geo.model->q_heads : cfg.g.kv_heads;
	if (a.nr_tp) {
		cfg.gpus = a.gpus;
		memcpy(cfg.tp, a.tp, sizeof(cfg.tp));
		if (cfg.g.kv_heads % a.gpus) {
			fprintf(stderr, "%s: --tp: %u KV heads do not split over %u GPUs\n",
				kvt_prog, cfg.g.kv_heads, a.gpus);
			ret = KVT_EXIT_USAGE;
			goto out;
		}
	}

	/* Every trace is read and checked before anything runs. */
	for (k = 0; k < a.nr_traces; k++) {
		if (kvt_trace_read(a.trace[k],
				   KVT_TRACE_TIMES | KVT_TRACE_HASHES,
				   &traces[k])) {
			ret = KVT_EXIT_USAGE;
			goto out;
		}
		nr_loaded++;
		qsort(traces[k].req, traces[k].nr, sizeof(struct kvt_req),
		      cmp_arrival);
		if (a.tscale_fx)
			scale_arrivals(&traces[k], a.tscale_fx);
	}
	cfg.max_len = a.max_len;
	if (!cfg.max_len) {
		for (k = 0; k < a.nr_traces; k++) {
			size_t n = a.requests && a.requests < traces[k].nr ?
				   a.requests : traces[k].nr, j;

			for (j = 0; j < n; j++) {
				uint64_t l = traces[k].req[j].ctx +
					     traces[k].req[j].gen;

				if (l > cfg.max_len)
					cfg.max_len = l < LEN_MAX ? l : LEN_MAX;
			}
		}
	}

	for (i = 0; i < (int)a.engines; i++) {
		const struct kvt_trace *t = &traces[a.nr_traces == 1 ? 0 : i];
		size_t n = a.requests && a.requests < t->nr ? a.requests :
			   t->nr;
		int64_t from = INT64_MIN, to = INT64_MAX;
		size_t first = 0, stride = 1;

		if (a.round_robin || a.nodes) {
			first = (size_t)i;
			stride = (size_t)a.engines;
		} else if (a.nr_traces == 1 && a.engines > 1) {
			int64_t len = t->req[n - 1].arrival_us -
				      t->req[0].arrival_us + 1;
			int64_t width = (len + (int64_t)a.engines - 1) /
					(int64_t)a.engines;

			from = width * i;
			to = from + width;
		}
		if (from == INT64_MIN)
			from = 0;
		err = make_workload(&w[i], t, n, from, to, first, stride,
				    cfg.max_len);
		if (err) {
			fprintf(stderr, "%s: out of memory\n", kvt_prog);
			ret = KVT_EXIT_IMPOSSIBLE;
			goto out;
		}
		if (w[i].nr &&
		    w[i].req[w[i].nr - 1].arrival_us > span)
			span = w[i].req[w[i].nr - 1].arrival_us;
	}
	if (a.svg) {
		int64_t b = span / 600 / cfg.step_us * cfg.step_us;

		cfg.bucket_us = (uint64_t)(b > cfg.step_us ? b : cfg.step_us);
	}
	if (a.engines > 1 && (uint64_t)cfg.engine_min * a.engines >
	    cfg.kv_bytes) {
		fprintf(stderr, "%s: --engine-min-gib times %llu engines is more than --kv-gib\n",
			kvt_prog, (unsigned long long)a.engines);
		ret = KVT_EXIT_USAGE;
		goto out;
	}

	runs = calloc((size_t)a.nr_pol * 2, sizeof(*runs));
	if (!runs) {
		fprintf(stderr, "%s: out of memory\n", kvt_prog);
		ret = KVT_EXIT_IMPOSSIBLE;
		goto out;
	}
	/* Every pool is set up, and so checked, before anything runs. */
	for (k = 0; k < a.nr_pol; k++) {
		enum layout lays[2];
		int nl = 0, l;

		if (a.nodes) {
			lays[nl++] = LAYOUT_NODES;
		} else if (a.engines == 1) {
			lays[nl++] = LAYOUT_SINGLE;
		} else {
			lays[nl++] = LAYOUT_STATIC;
			if (a.pol[k].kind == POL_KVARENA)
				lays[nl++] = LAYOUT_SHARED;
		}
		for (l = 0; l < nl; l++) {
			struct run *r = &runs[nr_runs++];

			err = setup_run(r, &a.pol[k], lays[l], &cfg,
					(int)a.engines, w);
			if (err) {
				ret = pool_error(&a, r, err);
				goto out;
			}
		}
	}
	for (i = 0; i < nr_runs; i++) {
		err = sim_run(&runs[i], w);
		if (err) {
			fprintf(stderr, "%s: out of memory\n", kvt_prog);
			ret = KVT_EXIT_IMPOSSIBLE;
			goto out;
		}
	}

	if (a.json) {
		report_json(runs, nr_runs, a.engines > 1);
	} else {
		print_header(&a, &cfg, traces, w);
		report_table(runs, nr_runs, a.engines > 1);
		if (a.host_set || cfg.flops_per_s > 0)
			report_tiers(runs, nr_runs, a.engines > 1);
	}
	if (a.svg) {
		char title[160];

		const char *base = strrchr(a.trace[0], '/');
		char kv[32];

		kvt_fmt_bytes(kv, sizeof(kv), cfg.kv_bytes);
		snprintf(title, sizeof(title), "%s%s, %s, %s of KV, %llu engine%s",
			 base ? base + 1 : a.trace[0],
			 a.nr_traces > 1 ? " and others" : "",
			 a.geo.model ? a.geo.model->name : "custom geometry",
			 kv, (unsigned long long)a.engines,
			 a.engines > 1 ? "s" : "");
		if (report_svg(a.svg, runs, nr_runs, title))
			ret = KVT_EXIT_USAGE;
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: writing the output: %s\n", kvt_prog,
			strerror(errno));
		ret = KVT_EXIT_USAGE;
	}
out:
	for (i = 0; i < nr_runs; i++)
		sim_free(&runs[i]);
	free(runs);
	for (i = 0; i < KVSIM_MAX_ENGINES; i++)
		free_workload(&w[i]);
	for (k = 0; k < nr_loaded; k++)
		kvt_trace_free(&traces[k]);
	return ret;
}
