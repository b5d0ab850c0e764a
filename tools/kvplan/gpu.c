// SPDX-License-Identifier: GPL-2.0
/*
 * kvplan gpu - one GPU, several engines, one kvarena arena for their KV:
 * what the arena can have once every engine has its own memory.
 *
 *   kvplan gpu --gpu-mem-gib 80 --engine llama-3-8b --engine qwen2.5-7b
 *
 * Each engine is a process with its weights, its activations and
 * workspaces (--overhead-gib, each) and its CUDA context (--cuda-context-
 * gib, each), none of which the arena can have:
 *
 *   arena budget = gpu_mem * util - sum(weights + overhead + context)
 *   frames       = floor(budget / frame_size)
 *
 * and each engine, with its own geometry, holds T_f = floor(frame_size /
 * bytes_per_token) tokens in a frame.  Frames are what `kvarenactl create`
 * takes (a power of two from 4K to 1G); the command that makes the arena
 * is printed.  An engine is a preset or a Hugging Face config.json (with
 * the weights of the checkpoint beside it), and MODEL:GIB gives its
 * weights.  Amounts are computed exactly in integers from the decimal GiB
 * given, as the single-engine plan does.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <kvarena/layout.h>
#include <linux/kvarena.h>

#include "kvplan.h"

#define MAX_ENGINES	16
#define GIB_SHIFT	30

enum { OPT_GPU = 256, OPT_UTIL, OPT_ENGINE, OPT_OVERHEAD, OPT_CONTEXT,
       OPT_FRAME, OPT_JSON };

static const struct option gpu_options[] = {
	{ "gpu-mem-gib",      required_argument, NULL, OPT_GPU },
	{ "util",             required_argument, NULL, OPT_UTIL },
	{ "engine",           required_argument, NULL, OPT_ENGINE },
	{ "overhead-gib",     required_argument, NULL, OPT_OVERHEAD },
	{ "cuda-context-gib", required_argument, NULL, OPT_CONTEXT },
	{ "frame-size",       required_argument, NULL, OPT_FRAME },
	{ "json",             no_argument,       NULL, OPT_JSON },
	{ "help",             no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct engine {
	const char *spec;
	struct kvt_model model;		/* a copy: config.json's is static */
	char name[64];			/* model.name's, for the same reason */
	int weights_given;
	uint64_t weights_fx;
	struct kva_geometry g;
	uint64_t weights, need;		/* bytes */
};

struct gpu_plan {
	struct engine e[MAX_ENGINES];
	int n;
	uint64_t gpu_fx, util_fx, overhead_fx, context_fx, frame_size;
	int gpu_set, json;
	uint64_t gpu_bytes, usable, overhead, context, budget, frames;
};

static void gpu_help(FILE *f)
{
	fputs(
"Usage: kvplan gpu --gpu-mem-gib X --engine MODEL[:GIB] ... [options] [--json]\n"
"One GPU, several engines, one kvarena arena for their KV cache.\n"
"\n"
"      --engine M[:GIB]    an engine: a preset (llama-3-8b, llama-3-70b,\n"
"                          qwen2.5-7b, mistral-7b) or a config.json path;\n"
"                          GIB its weights (default: the preset's in bf16,\n"
"                          or the checkpoint beside config.json); 1 to 16\n"
"      --gpu-mem-gib X     GPU memory, GiB (required)\n"
"      --util F            share of it to use, in (0, 1] (default 0.9)\n"
"      --overhead-gib X    each engine's activations and workspaces, GiB\n"
"                          (default 1)\n"
"      --cuda-context-gib X  each engine's CUDA context, GiB (default 0.5)\n"
"      --frame-size S      a power of 2, 4K-1G (default 2M)\n"
"      --json              one JSON object, numbers as numbers\n"
"Exit status: 0 ok, 1 impossible plan, 2 usage error.\n", f);
}

static uint64_t gib_bytes(uint64_t fx)
{
	return (uint64_t)(((unsigned __int128)fx << GIB_SHIFT) / KVT_FIX_SCALE);
}

/* MODEL[:GIB]: a preset, or a path to a config.json. */
static int take_engine(struct gpu_plan *p, char *spec)
{
	struct engine *e;
	char *colon = strrchr(spec, ':');
	const struct kvt_model *m;

	if (p->n == MAX_ENGINES)
		return kvt_bad("--engine", "at most 16 engines", spec);
	e = &p->e[p->n];
	e->spec = spec;
	if (colon) {
		*colon = 0;
		if (kvp_get_gib("--engine's weights", colon + 1, &e->weights_fx))
			return KVP_EXIT_USAGE;
		e->weights_given = 1;
	}
	m = kvt_model_find(spec);
	if (m) {
		e->model = *m;
	} else if (strchr(spec, '/') || strstr(spec, ".json")) {
		if (kvt_model_config(spec, &e->model))
			return KVP_EXIT_USAGE;
		snprintf(e->name, sizeof(e->name), "%s", e->model.name);
		e->model.name = e->name;
	} else {
		return kvt_bad("--engine", KVT_MODEL_NAMES " or a config.json path", spec);
	}
	if (!e->weights_given && !e->model.params && !e->model.weights_bytes) {
		fprintf(stderr, "%s: --engine %s: no model.safetensors.index.json or model.safetensors beside it: give its weights, %s:GIB\n",
			kvt_prog, spec, spec);
		kvt_usage_hint();
		return KVP_EXIT_USAGE;
	}
	p->n++;
	return 0;
}

static int parse(struct gpu_plan *p, int argc, char **argv)
{
	int c, err = 0;

	p->util_fx = KVT_FIX_SCALE / 10 * 9;
	p->overhead_fx = KVT_FIX_SCALE;
	p->context_fx = KVT_FIX_SCALE / 2;
	p->frame_size = 2u << 20;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", gpu_options, NULL)) != -1) {
		switch (c) {
		case OPT_GPU:
			err = kvp_get_gpu_mem(optarg, &p->gpu_fx);
			p->gpu_set = 1;
			break;
		case OPT_UTIL:
			err = kvp_get_util(optarg, &p->util_fx);
			break;
		case OPT_ENGINE:
			err = take_engine(p, optarg);
			break;
		case OPT_OVERHEAD:
			err = kvp_get_gib("--overhead-gib", optarg, &p->overhead_fx);
			break;
		case OPT_CONTEXT:
			err = kvp_get_gib("--cuda-context-gib", optarg, &p->context_fx);
			break;
		case OPT_FRAME:
			err = kvp_get_frame_size(optarg, &p->frame_size);
			break;
		case OPT_JSON:
			p->json = 1;
			break;
		case 'h':
			gpu_help(stdout);
			return -1;
		default:
			return kvp_bad_option(c, argv, "gpu");
		}
		if (err)
			return err;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: gpu: unexpected argument '%s'\n", kvt_prog,
			argv[optind]);
		kvt_usage_hint();
		return KVP_EXIT_USAGE;
	}
	if (!p->gpu_set || !p->n) {
		fprintf(stderr, "%s: gpu: %s is required\n", kvt_prog,
			!p->gpu_set ? "--gpu-mem-gib" : "--engine");
		kvt_usage_hint();
		return KVP_EXIT_USAGE;
	}
	return 0;
}

static int compute(struct gpu_plan *p)
{
	unsigned __int128 need = 0;
	char a[32], b[32];

	p->gpu_bytes = gib_bytes(p->gpu_fx);
	p->usable = (uint64_t)((((unsigned __int128)p->gpu_fx * p->util_fx)
				<< GIB_SHIFT) / KVT_FIX_SCALE / KVT_FIX_SCALE);
	p->overhead = gib_bytes(p->overhead_fx);
	p->context = gib_bytes(p->context_fx);
	for (int i = 0; i < p->n; i++) {
		struct engine *e = &p->e[i];
		const struct kvt_model *m = &e->model;
		int err;

		e->g = (struct kva_geometry){
			.layers = m->layers, .kv_heads = m->kv_heads,
			.head_dim = m->head_dim, .dtype = m->dtype,
			.frame_size = p->frame_size,
		};
		err = kva_geometry_init(&e->g);
		if (err) {
			fprintf(stderr, "%s: gpu: engine %d (%s): %s\n", kvt_prog,
				i + 1, e->spec, err == -E2BIG ?
				"one token does not fit in a frame: give a larger --frame-size" :
				"beyond the frame layout's limits");
			return err == -E2BIG ? KVP_EXIT_IMPOSSIBLE : KVP_EXIT_USAGE;
		}
		e->weights = e->weights_given ? gib_bytes(e->weights_fx) :
			     m->weights_bytes ? m->weights_bytes :
			     m->params * kva_dtype_size(KVA_DTYPE_BF16);
		e->need = e->weights + p->overhead + p->context;
		need += e->need;
	}
	if (need >= p->usable) {
		kvt_fmt_bytes(a, sizeof(a), p->usable);
		kvt_fmt_bytes(b, sizeof(b), (uint64_t)need);
		fprintf(stderr, "%s: gpu: nothing left for the arena: %s usable, the engines take %s\n",
			kvt_prog, a, b);
		return KVP_EXIT_IMPOSSIBLE;
	}
	p->budget = p->usable - (uint64_t)need;
	p->frames = p->budget / p->frame_size;
	if (!p->frames) {
		fprintf(stderr, "%s: gpu: not one frame fits in what the engines leave\n",
			kvt_prog);
		return KVP_EXIT_IMPOSSIBLE;
	}
	if (p->frames > KVARENA_MAX_FRAMES) {
		fprintf(stderr, "%s: gpu: %llu frames are more than an arena takes (%u): give a larger --frame-size\n",
			kvt_prog, (unsigned long long)p->frames,
			(unsigned int)KVARENA_MAX_FRAMES);
		return KVP_EXIT_IMPOSSIBLE;
	}
	return 0;
}

static void row(const char *label, uint64_t v, const char *note)
{
	char a[32];

	kvt_fmt_bytes(a, sizeof(a), v);
	printf("%-18s %14llu  %s%s%s\n", label, (unsigned long long)v, a,
	       note ? ": " : "", note ? note : "");
}

/* A frame size as kvarenactl takes it: 64K, 2M, 1G. */
static void fmt_frame(char *buf, size_t len, uint64_t v)
{
	if (!(v & ((1ull << 30) - 1)))
		snprintf(buf, len, "%lluG", (unsigned long long)(v >> 30));
	else if (!(v & ((1ull << 20) - 1)))
		snprintf(buf, len, "%lluM", (unsigned long long)(v >> 20));
	else
		snprintf(buf, len, "%lluK", (unsigned long long)(v >> 10));
}

static void print_human(const struct gpu_plan *p)
{
	char u[32], label[48], sz[32], fs[32];

	for (int i = 0; i < p->n; i++) {
		const struct engine *e = &p->e[i];

		snprintf(label, sizeof(label), "engine %d", i + 1);
		printf("%-18s %14s  %u layers, %u KV heads, head dim %u, %s; %u tokens a frame\n",
		       label, e->model.name, e->g.layers, e->g.kv_heads,
		       e->g.head_dim, kva_dtype_name((enum kva_dtype)e->g.dtype),
		       e->g.tokens_per_frame);
		row(" weights", e->weights, e->weights_given ? "as given" :
		    e->model.weights_bytes ? "the checkpoint's tensors" :
		    "its parameters in bf16");
		row(" overhead", p->overhead, "activations, workspaces");
		row(" CUDA context", p->context, NULL);
	}
	row("GPU memory", p->gpu_bytes, NULL);
	kvt_fmt_fixed(u, sizeof(u), p->util_fx);
	snprintf(label, sizeof(label), " x util %s", u);
	row(label, p->usable, NULL);
	row(" - engines", p->usable - p->budget, NULL);
	row("arena budget", p->budget, NULL);
	kvt_fmt_bytes(sz, sizeof(sz), p->frame_size);
	fmt_frame(fs, sizeof(fs), p->frame_size);
	printf("%-18s %14llu  of %s: kvarenactl create ARENA --frames %llu --frame-size %s --backend cuda:DEV\n",
	       "frames", (unsigned long long)p->frames, sz,
	       (unsigned long long)p->frames, fs);
	for (int i = 0; i < p->n; i++) {
		snprintf(label, sizeof(label), " engine %d tokens", i + 1);
		printf("%-18s %14llu  with every frame\n", label,
		       (unsigned long long)(p->frames *
					    p->e[i].g.tokens_per_frame));
	}
}

static void print_json(const struct gpu_plan *p)
{
	char u[32];

	kvt_fmt_fixed(u, sizeof(u), p->util_fx);
	printf("{\"engines\":[");
	for (int i = 0; i < p->n; i++) {
		const struct engine *e = &p->e[i];

		printf("%s{\"model\":", i ? "," : "");
		kvt_json_str(stdout, e->model.name);
		printf(",\"layers\":%u,\"kv_heads\":%u,\"head_dim\":%u,\"dtype\":\"%s\",\"bytes_per_token\":%llu,\"tokens_per_frame\":%u,\"weights_bytes\":%llu,\"tokens\":%llu}",
		       e->g.layers, e->g.kv_heads, e->g.head_dim,
		       kva_dtype_name((enum kva_dtype)e->g.dtype),
		       (unsigned long long)e->g.bytes_per_token,
		       e->g.tokens_per_frame, (unsigned long long)e->weights,
		       (unsigned long long)(p->frames * e->g.tokens_per_frame));
	}
	printf("],\"gpu_mem_bytes\":%llu,\"util\":%s,\"usable_bytes\":%llu,\"overhead_bytes\":%llu,\"cuda_context_bytes\":%llu,\"arena_budget_bytes\":%llu,\"frame_size\":%llu,\"frames\":%llu}\n",
	       (unsigned long long)p->gpu_bytes, u,
	       (unsigned long long)p->usable, (unsigned long long)p->overhead,
	       (unsigned long long)p->context, (unsigned long long)p->budget,
	       (unsigned long long)p->frame_size,
	       (unsigned long long)p->frames);
}

int kvp_cmd_gpu(int argc, char **argv)
{
	struct gpu_plan *p = calloc(1, sizeof(*p));
	int ret;

	if (!p) {
		fprintf(stderr, "%s: out of memory\n", kvt_prog);
		return KVP_EXIT_USAGE;
	}
	ret = parse(p, argc, argv);
	if (ret < 0) {
		ret = KVP_EXIT_OK;	/* --help */
	} else if (!ret) {
		ret = compute(p);
		if (!ret && p->json)
			print_json(p);
		else if (!ret)
			print_human(p);
	}
	free(p);
	return ret;
}
