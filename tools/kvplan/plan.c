// SPDX-License-Identifier: GPL-2.0
/*
 * kvplan - the capacity plan: how many blocks or frames, tokens and
 * sequences of KV cache fit in what one GPU has left after the weights.
 *
 *   KV budget  = gpu_mem * util - weights - overhead
 *   blocks     = floor(KV budget / bytes_per_block)
 *   tokens     = blocks * tokens_per_block
 *   max_seqs   = floor(blocks / ceil(max_seq_len / tokens_per_block))
 *   waste      = (B - 1) / (2L + B - 1) at mean length L
 *
 * A block is either B tokens (--block-tokens, the paged allocators' unit)
 * or one kvarena frame of --frame-size bytes, which holds
 * T_f = floor(frame_size / bytes_per_token) tokens and leaves the rest of
 * the frame unused (include/kvarena/layout.h).  The budget is computed
 * exactly, in integers, from the decimal GiB and util given.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <string.h>

#include <kvarena/layout.h>
#include <linux/kvarena.h>

#include "kvplan.h"

/* Above this expected waste, kvplan says so. */
#define WASTE_WARN	0.10

#define GIB_SHIFT	30

#define GEOM_MAX	(1u << 16)	/* layout.h's bound on each field */
#define LEN_MAX		(1ull << 32)

struct plan {
	struct kvt_geom_opts geo;
	const struct kvt_model *preset;
	struct kva_geometry g;

	/* inputs, in 10^-9 units; weights in bytes when from the preset */
	int gpu_set, weights_set;
	uint64_t gpu_fx, util_fx, weights_fx, overhead_fx;
	uint64_t weights_bytes;

	uint64_t block_tokens;		/* 0: frame sizing */
	uint64_t frame_size;
	uint64_t max_len;		/* 0: not asked */
	uint64_t avg_fx;		/* 0: not asked */
	int json;

	/* results */
	uint64_t bytes_per_block, tail_bytes;
	uint64_t gpu_bytes, usable_bytes, overhead_bytes; /* rounded down */
	uint64_t budget, blocks, tokens;
	uint64_t blocks_per_seq, max_seqs;
	double waste;
};

enum {
	OPT_GPU = KVT_OPT_GEOM_END, OPT_UTIL, OPT_WEIGHTS, OPT_OVERHEAD, OPT_BLOCK, OPT_FRAME, OPT_MAXLEN,
	OPT_AVGLEN, OPT_JSON,
};

static const struct option plan_options[] = {
	KVT_GEOM_OPTIONS,
	{ "gpu-mem-gib",  required_argument, NULL, OPT_GPU },
	{ "util",         required_argument, NULL, OPT_UTIL },
	{ "weights-gib",  required_argument, NULL, OPT_WEIGHTS },
	{ "overhead-gib", required_argument, NULL, OPT_OVERHEAD },
	{ "block-tokens", required_argument, NULL, OPT_BLOCK },
	{ "frame-size",   required_argument, NULL, OPT_FRAME },
	{ "max-seq-len",  required_argument, NULL, OPT_MAXLEN },
	{ "avg-len",      required_argument, NULL, OPT_AVGLEN },
	{ "json",         no_argument,       NULL, OPT_JSON },
	{ "help",         no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int kvp_get_gib(const char *opt, const char *arg, uint64_t *out)
{
	if (kvt_parse_fixed(arg, out) || *out > KVT_MAX_GIB * KVT_FIX_SCALE)
		return kvt_bad(opt, "a size in GiB from 0 to 1048576", arg);
	return 0;
}

int kvp_get_gpu_mem(const char *arg, uint64_t *out)
{
	int err = kvp_get_gib("--gpu-mem-gib", arg, out);

	if (!err && !*out)
		err = kvt_bad("--gpu-mem-gib", "above 0", arg);
	return err;
}

int kvp_get_util(const char *arg, uint64_t *out)
{
	if (kvt_parse_fixed(arg, out) || !*out || *out > KVT_FIX_SCALE)
		return kvt_bad("--util", "in (0, 1]", arg);
	return 0;
}

/* What kvarenactl create takes (the module's rule). */
int kvp_get_frame_size(const char *arg, uint64_t *out)
{
	if (kvt_parse_size(arg, out) || *out < KVARENA_MIN_FRAME_SIZE ||
	    *out > KVARENA_MAX_FRAME_SIZE || (*out & (*out - 1)))
		return kvt_bad("--frame-size",
			       "a power of two from 4K to 1G, as kvarenactl create takes (64K, 2M, ...)",
			       arg);
	return 0;
}

static int parse_args(struct plan *p, int argc, char **argv)
{
	int c, err = 0, block_set = 0, frame_set = 0;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":m:h", plan_options, NULL)) != -1) {
		switch (c) {
		case OPT_GPU:
			err = kvp_get_gpu_mem(optarg, &p->gpu_fx);
			p->gpu_set = 1;
			break;
		case OPT_UTIL:
			err = kvp_get_util(optarg, &p->util_fx);
			break;
		case OPT_WEIGHTS:
			err = kvp_get_gib("--weights-gib", optarg, &p->weights_fx);
			p->weights_set = 1;
			break;
		case OPT_OVERHEAD:
			err = kvp_get_gib("--overhead-gib", optarg, &p->overhead_fx);
			break;
		case OPT_BLOCK:
			if (kvt_parse_u64(optarg, &p->block_tokens) ||
			    !p->block_tokens || p->block_tokens > GEOM_MAX)
				err = kvt_bad("--block-tokens",
					      "a whole number from 1 to 65536",
					      optarg);
			block_set = 1;
			break;
		case OPT_FRAME:
			err = kvp_get_frame_size(optarg, &p->frame_size);
			frame_set = 1;
			break;
		case OPT_MAXLEN:
			if (kvt_parse_u64(optarg, &p->max_len) ||
			    !p->max_len || p->max_len > LEN_MAX)
				err = kvt_bad("--max-seq-len",
					      "a token count from 1 to 4294967296",
					      optarg);
			break;
		case OPT_AVGLEN:
			if (kvt_parse_fixed(optarg, &p->avg_fx) || !p->avg_fx ||
			    p->avg_fx > LEN_MAX * KVT_FIX_SCALE)
				err = kvt_bad("--avg-len",
					      "a token count above 0", optarg);
			break;
		case OPT_JSON:
			p->json = 1;
			break;
		case 'h':
			return -1;
		default:
			err = kvt_geom_option(&p->geo, c, optarg);
			if (err < 0)
				return kvp_bad_option(c, argv, NULL);
			break;
		}
		if (err)
			return err;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", kvt_prog,
			argv[optind]);
		kvt_usage_hint();
		return KVP_EXIT_USAGE;
	}

	/* Options override the preset, field by field. */
	p->preset = p->geo.model;
	err = kvt_geom_resolve(&p->geo, &p->g);
	if (err)
		return err;
	if (!p->gpu_set) {
		fprintf(stderr, "%s: --gpu-mem-gib is required\n", kvt_prog);
		kvt_usage_hint();
		return KVP_EXIT_USAGE;
	}
	if (!p->weights_set && !p->preset) {
		fprintf(stderr, "%s: --weights-gib is required without --model\n",
			kvt_prog);
		kvt_usage_hint();
		return KVP_EXIT_USAGE;
	}
	if (!p->weights_set && !p->preset->params &&
	    !p->preset->weights_bytes) {
		fprintf(stderr, "%s: --weights-gib is required: no model.safetensors.index.json or model.safetensors beside the --model-config to take the weights' size from\n",
			kvt_prog);
		kvt_usage_hint();
		return KVP_EXIT_USAGE;
	}
	if (block_set && frame_set) {
		fprintf(stderr, "%s: --block-tokens and --frame-size exclude each other\n",
			kvt_prog);
		kvt_usage_hint();
		return KVP_EXIT_USAGE;
	}
	if (!block_set && !frame_set)
		p->frame_size = 2ull << 20;	/* the arena's default frame */
	return 0;
}

/*
 * The frame geometry through layout.h.  With --block-tokens B the block
 * is laid out as a frame of exactly B tokens.
 */
static int derive_geometry(struct plan *p)
{
	uint64_t bpt = 2ull * p->g.layers * p->g.kv_heads * p->g.head_dim *
		       kva_dtype_size((enum kva_dtype)p->g.dtype);
	const char *unit = p->block_tokens ? "block" : "frame";
	char fs[32];
	int err = 0;

	/* Each field is at most 2^16, so bpt is below 2^52. */
	if (!p->block_tokens)
		p->g.frame_size = p->frame_size;
	else if (p->block_tokens <= (1ull << 40) / bpt)
		p->g.frame_size = p->block_tokens * bpt;
	else
		err = -EINVAL;
	if (!err)
		err = kva_geometry_init(&p->g);
	if (err == -E2BIG) {
		kvt_fmt_bytes(fs, sizeof(fs), p->g.frame_size);
		fprintf(stderr,
			"%s: one token does not fit in a frame: %llu bytes of KV per token, frames of %llu bytes (%s); T_f would be 0\n",
			kvt_prog, (unsigned long long)bpt,
			(unsigned long long)p->g.frame_size, fs);
		return KVP_EXIT_IMPOSSIBLE;
	}
	if (err) {
		fprintf(stderr,
			"%s: this %s is beyond the frame layout's limits: at most 1 TiB, under 2^32 tokens and under 4 GiB per head\n",
			kvt_prog, unit);
		return KVP_EXIT_USAGE;
	}
	p->bytes_per_block = p->g.frame_size;
	p->tail_bytes = p->g.frame_size -
			(uint64_t)p->g.tokens_per_frame * p->g.bytes_per_token;
	return 0;
}

/*
 * The KV budget in bytes, exactly: every term is scaled to bytes * 10^18
 * (GiB * util carries two 10^-9 factors) and only the result is rounded
 * down.  The largest term, 2^20 GiB * 1 * 2^30 * 10^18, is below 2^126.
 */
static int compute_budget(struct plan *p)
{
	const unsigned __int128 e9 = KVT_FIX_SCALE;
	unsigned __int128 have, need;

	have = ((unsigned __int128)p->gpu_fx * p->util_fx) << GIB_SHIFT;
	if (p->weights_set) {
		need = ((unsigned __int128)p->weights_fx * e9) << GIB_SHIFT;
		p->weights_bytes = (uint64_t)(((unsigned __int128)p->weights_fx
					       << GIB_SHIFT) / e9);
	} else {
		p->weights_bytes = p->preset->weights_bytes ?:
				   p->preset->params *
				   kva_dtype_size(KVA_DTYPE_BF16);
		need = (unsigned __int128)p->weights_bytes * e9 * e9;
	}
	need += ((unsigned __int128)p->overhead_fx * e9) << GIB_SHIFT;
	p->gpu_bytes = (uint64_t)(((unsigned __int128)p->gpu_fx << GIB_SHIFT)
				  / e9);
	p->usable_bytes = (uint64_t)(have / (e9 * e9));
	p->overhead_bytes = (uint64_t)(((unsigned __int128)p->overhead_fx
					<< GIB_SHIFT) / e9);

	if (have <= need) {
		char g[32], u[32], h[32], w[32], o[32];

		kvt_fmt_fixed(g, sizeof(g), p->gpu_fx);
		kvt_fmt_fixed(u, sizeof(u), p->util_fx);
		kvt_fmt_bytes(h, sizeof(h), p->usable_bytes);
		kvt_fmt_bytes(w, sizeof(w), p->weights_bytes);
		kvt_fmt_bytes(o, sizeof(o), p->overhead_bytes);
		fprintf(stderr,
			"%s: nothing left for the KV cache: %s GiB * %s = %s, weights %s + overhead %s\n",
			kvt_prog, g, u, h, w, o);
		return KVP_EXIT_IMPOSSIBLE;
	}
	p->budget = (uint64_t)((have - need) / (e9 * e9));
	return 0;
}

static const char *unit_name(const struct plan *p)
{
	return p->block_tokens ? "block" : "frame";
}

static int compute_plan(struct plan *p)
{
	uint64_t B = p->g.tokens_per_frame;
	char bb[32], kb[32];

	p->blocks = p->budget / p->bytes_per_block;
	if (!p->blocks) {
		kvt_fmt_bytes(bb, sizeof(bb), p->bytes_per_block);
		kvt_fmt_bytes(kb, sizeof(kb), p->budget);
		fprintf(stderr, "%s: not one %s fits: the KV budget is %s, a %s is %s\n",
			kvt_prog, unit_name(p), kb, unit_name(p), bb);
		return KVP_EXIT_IMPOSSIBLE;
	}
	p->tokens = p->blocks * B;

	if (p->max_len) {
		p->blocks_per_seq = kva_frames_for(&p->g, p->max_len);
		p->max_seqs = p->blocks / p->blocks_per_seq;
		if (!p->max_seqs) {
			fprintf(stderr,
				"%s: one %llu-token sequence does not fit: it needs %llu %ss, %llu fit\n",
				kvt_prog, (unsigned long long)p->max_len,
				(unsigned long long)p->blocks_per_seq,
				unit_name(p), (unsigned long long)p->blocks);
			return KVP_EXIT_IMPOSSIBLE;
		}
	}

	/*
	 * A sequence of mean length L holds on average L + (B - 1) / 2 token
	 * slots; a frame also loses its tail.  Waste is the share of bytes
	 * allocated that hold no token.
	 */
	if (p->avg_fx) {
		double L = (double)p->avg_fx / KVT_FIX_SCALE;
		double filled = (double)(B * p->g.bytes_per_token) /
				(double)p->bytes_per_block;

		p->waste = 1.0 - (1.0 - kvp_waste_estimate(L, B)) * filled;
	}
	return 0;
}

static void print_json(const struct plan *p)
{
	char u[32];

	kvt_fmt_fixed(u, sizeof(u), p->util_fx);
	printf("{\"model\":");
	if (p->preset)
		kvt_json_str(stdout, p->preset->name);
	else
		printf("null");
	printf(",\"layers\":%u,\"kv_heads\":%u,\"head_dim\":%u,\"dtype\":\"%s\"",
	       p->g.layers, p->g.kv_heads, p->g.head_dim,
	       kva_dtype_name((enum kva_dtype)p->g.dtype));
	printf(",\"bytes_per_token\":%llu,\"sizing\":\"%s\"",
	       (unsigned long long)p->g.bytes_per_token, unit_name(p));
	printf(",\"tokens_per_block\":%u,\"bytes_per_block\":%llu,\"tail_bytes\":%llu",
	       p->g.tokens_per_frame, (unsigned long long)p->bytes_per_block,
	       (unsigned long long)p->tail_bytes);
	printf(",\"gpu_mem_bytes\":%llu,\"util\":%s,\"usable_bytes\":%llu",
	       (unsigned long long)p->gpu_bytes, u,
	       (unsigned long long)p->usable_bytes);
	printf(",\"weights_bytes\":%llu,\"overhead_bytes\":%llu",
	       (unsigned long long)p->weights_bytes,
	       (unsigned long long)p->overhead_bytes);
	printf(",\"kv_budget_bytes\":%llu,\"blocks\":%llu,\"tokens\":%llu",
	       (unsigned long long)p->budget, (unsigned long long)p->blocks,
	       (unsigned long long)p->tokens);
	if (p->max_len)
		printf(",\"max_seq_len\":%llu,\"blocks_per_seq\":%llu,\"max_seqs\":%llu",
		       (unsigned long long)p->max_len,
		       (unsigned long long)p->blocks_per_seq,
		       (unsigned long long)p->max_seqs);
	else
		printf(",\"max_seq_len\":null,\"blocks_per_seq\":null,\"max_seqs\":null");
	if (p->avg_fx) {
		char a[32];

		kvt_fmt_fixed(a, sizeof(a), p->avg_fx);
		printf(",\"avg_len\":%s,\"expected_waste\":%.6f}\n", a,
		       p->waste);
	} else {
		printf(",\"avg_len\":null,\"expected_waste\":null}\n");
	}
}

/* One line of the human view: label, right-aligned figure, comment. */
static void row(const char *label, uint64_t v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void row(const char *label, uint64_t v, const char *fmt, ...)
{
	va_list ap;

	printf("%-16s %14llu", label, (unsigned long long)v);
	if (fmt && *fmt) {
		printf("  ");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	putchar('\n');
}

static void print_human(const struct plan *p)
{
	char a[32], b[32];
	const char *unit = unit_name(p);
	char label[48];

	printf("%-16s %14s  %u layers, %u KV heads, head dim %u, %s\n",
	       "model", p->preset ? p->preset->name : "custom", p->g.layers,
	       p->g.kv_heads, p->g.head_dim,
	       kva_dtype_name((enum kva_dtype)p->g.dtype));
	kvt_fmt_bytes(a, sizeof(a), p->g.bytes_per_token);
	row("bytes per token", p->g.bytes_per_token, "%s", a);
	snprintf(label, sizeof(label), "tokens per %s", unit);
	row(label, p->g.tokens_per_frame, NULL);
	kvt_fmt_bytes(a, sizeof(a), p->bytes_per_block);
	snprintf(label, sizeof(label), "bytes per %s", unit);
	row(label, p->bytes_per_block, "%s", a);
	if (!p->block_tokens) {
		kvt_fmt_bytes(a, sizeof(a), p->tail_bytes);
		row("frame tail", p->tail_bytes, "%s unused in every frame (%.1f%%)",
		    a, 100.0 * (double)p->tail_bytes /
		    (double)p->bytes_per_block);
	}

	kvt_fmt_bytes(a, sizeof(a), p->gpu_bytes);
	row("GPU memory", p->gpu_bytes, "%s", a);
	kvt_fmt_fixed(b, sizeof(b), p->util_fx);
	snprintf(label, sizeof(label), " x util %s", b);
	kvt_fmt_bytes(a, sizeof(a), p->usable_bytes);
	row(label, p->usable_bytes, "%s", a);
	kvt_fmt_bytes(a, sizeof(a), p->weights_bytes);
	if (p->weights_set)
		row(" - weights", p->weights_bytes, "%s", a);
	else if (p->preset->weights_bytes)
		row(" - weights", p->weights_bytes, "%s: the checkpoint's tensors",
		    a);
	else
		row(" - weights", p->weights_bytes, "%s: %.2fB parameters in bf16",
		    a, (double)p->preset->params / 1e9);
	kvt_fmt_bytes(a, sizeof(a), p->overhead_bytes);
	row(" - overhead", p->overhead_bytes, "%s", a);
	kvt_fmt_bytes(a, sizeof(a), p->budget);
	row("KV budget", p->budget, "%s", a);
	snprintf(label, sizeof(label), "%ss", unit);
	row(label, p->blocks, NULL);
	row("tokens", p->tokens, NULL);
	if (p->max_len)
		row("max seqs", p->max_seqs, "of %llu tokens, %llu %ss each",
		    (unsigned long long)p->max_len,
		    (unsigned long long)p->blocks_per_seq, unit);
	if (p->avg_fx) {
		kvt_fmt_fixed(a, sizeof(a), p->avg_fx);
		snprintf(b, sizeof(b), "%.1f%%", 100.0 * p->waste);
		printf("%-16s %14s  at mean length %s (last %s half empty%s)\n",
		       "expected waste", b, a, unit,
		       p->tail_bytes ? ", plus frame tails" : "");
	}
}

static void warn_waste(const struct plan *p)
{
	double tail = (double)p->tail_bytes / (double)p->bytes_per_block;
	char a[32];

	if (p->avg_fx && p->waste > WASTE_WARN) {
		kvt_fmt_fixed(a, sizeof(a), p->avg_fx);
		fprintf(stderr,
			"%s: warning: high waste: %.1f%% of KV memory holds no token at mean length %s with %u-token %ss\n",
			kvt_prog, 100.0 * p->waste, a, p->g.tokens_per_frame,
			unit_name(p));
	} else if (!p->avg_fx && tail > WASTE_WARN) {
		fprintf(stderr,
			"%s: warning: high waste: %.1f%% of every frame is an unused tail\n",
			kvt_prog, 100.0 * tail);
	}
}

int kvp_cmd_plan(int argc, char **argv)
{
	struct plan p;
	int err;

	memset(&p, 0, sizeof(p));
	p.util_fx = KVT_FIX_SCALE * 9 / 10;	/* vLLM's default */
	err = parse_args(&p, argc, argv);
	if (err < 0) {
		kvp_help(stdout);
		return KVP_EXIT_OK;
	}
	if (err)
		return err;
	err = derive_geometry(&p);
	if (!err)
		err = compute_budget(&p);
	if (!err)
		err = compute_plan(&p);
	if (err)
		return err;
	if (p.json)
		print_json(&p);
	else
		print_human(&p);
	warn_waste(&p);
	return KVP_EXIT_OK;
}
