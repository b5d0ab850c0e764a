// SPDX-License-Identifier: GPL-2.0
/*
 * The model presets and the geometry options of the tools.
 */
#include <string.h>

#include "kvtools.h"

#define GEOM_MAX	(1u << 16)	/* layout.h's bound on each field */

/*
 * Published geometry of the presets (config.json of each model: layers,
 * KV heads, head dim, attention heads, torch_dtype) and the exact
 * parameter count, which gives kvplan's default weight size in bf16.
 */
static const struct kvt_model models[] = {
	{ "llama-3-8b",  32, 8, 128, 32, KVA_DTYPE_BF16,  8030261248ull, 0 },
	{ "llama-3-70b", 80, 8, 128, 64, KVA_DTYPE_BF16, 70553706496ull, 0 },
	{ "qwen2.5-7b",  28, 4, 128, 28, KVA_DTYPE_BF16,  7615616512ull, 0 },
	{ "mistral-7b",  32, 8, 128, 32, KVA_DTYPE_BF16,  7241732096ull, 0 },
};

const struct kvt_model *kvt_model_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(models) / sizeof(models[0]); i++)
		if (!strcmp(name, models[i].name))
			return &models[i];
	return NULL;
}

static int get_count(const char *opt, const char *arg, uint32_t *out)
{
	uint64_t v;

	if (kvt_parse_u64(arg, &v) || !v || v > GEOM_MAX)
		return kvt_bad(opt, "a whole number from 1 to 65536", arg);
	*out = (uint32_t)v;
	return 0;
}

static int get_dtype(const char *arg, uint32_t *out)
{
	uint32_t dt;

	for (dt = 0; dt < KVA_DTYPE_COUNT; dt++) {
		if (!strcmp(arg, kva_dtype_name((enum kva_dtype)dt))) {
			*out = dt;
			return 0;
		}
	}
	return kvt_bad("--dtype", "fp16, bf16, fp32 or fp8", arg);
}

int kvt_geom_option(struct kvt_geom_opts *o, int c, const char *arg)
{
	switch (c) {
	case 'm':
		o->model = kvt_model_find(arg);
		return o->model ? 0 : kvt_bad("--model", KVT_MODEL_NAMES, arg);
	case KVT_OPT_LAYERS:
		return get_count("--layers", arg, &o->layers);
	case KVT_OPT_KV_HEADS:
		return get_count("--kv-heads", arg, &o->kv_heads);
	case KVT_OPT_HEAD_DIM:
		return get_count("--head-dim", arg, &o->head_dim);
	case KVT_OPT_DTYPE:
		o->dtype_set = 1;
		return get_dtype(arg, &o->dtype);
	case KVT_OPT_MODEL_CONFIG: {
		static struct kvt_model conf;

		if (kvt_model_config(arg, &conf))
			return KVT_EXIT_USAGE;
		o->model = &conf;
		return 0;
	}
	default:
		return -1;
	}
}

int kvt_geom_resolve(const struct kvt_geom_opts *o, struct kva_geometry *g)
{
	if (o->model) {
		g->layers = o->model->layers;
		g->kv_heads = o->model->kv_heads;
		g->head_dim = o->model->head_dim;
		g->dtype = o->model->dtype;
	} else {
		g->dtype = KVA_DTYPE_FP16;
	}
	if (o->layers)
		g->layers = o->layers;
	if (o->kv_heads)
		g->kv_heads = o->kv_heads;
	if (o->head_dim)
		g->head_dim = o->head_dim;
	if (o->dtype_set)
		g->dtype = o->dtype;

	if (!g->layers || !g->kv_heads || !g->head_dim) {
		fprintf(stderr, "%s: %s is required without --model\n",
			kvt_prog, !g->layers ? "--layers" :
			!g->kv_heads ? "--kv-heads" : "--head-dim");
		kvt_usage_hint();
		return KVT_EXIT_USAGE;
	}
	return 0;
}
