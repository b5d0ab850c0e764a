/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tools share: strict number parsing and formatting (num.c), the
 * model table and the geometry options (model.c), and the request-trace
 * reader (trace.c).  kvplan, kvsim and kvserve link these files; each
 * defines kvt_prog, the name its messages start with.
 *
 * Exit codes of the tools: KVT_EXIT_OK, KVT_EXIT_IMPOSSIBLE (the input was
 * read but cannot work: a token does not fit a frame, one request does
 * not fit the memory), KVT_EXIT_USAGE (a bad command line, or a trace
 * that cannot be read).
 */
#ifndef KVTOOLS_H
#define KVTOOLS_H

#include <stdint.h>
#include <stdio.h>

#include <kvarena/layout.h>

enum {
	KVT_EXIT_OK = 0,
	KVT_EXIT_IMPOSSIBLE = 1,
	KVT_EXIT_USAGE = 2,
};

/* Set by each tool: "kvplan", "kvsim", ... */
extern const char *kvt_prog;

/*
 * num.c - decimal quantities (GiB, util) are kept exactly, as an integer
 * count of 10^-9 units, so that 80 GiB x 0.9 is 72 GiB to the byte.
 */
#define KVT_FIX_SCALE	1000000000ull
#define KVT_FIX_DIGITS	9

/* Largest memory size accepted, in GiB: 1 PiB. */
#define KVT_MAX_GIB	(1ull << 20)

int kvt_parse_u64(const char *s, uint64_t *out);
int kvt_parse_fixed(const char *s, uint64_t *out);
int kvt_parse_size(const char *s, uint64_t *out);
int kvt_parse_list(const char *s, uint64_t *vals, int max, int *n,
		   uint64_t lo, uint64_t hi);
void kvt_fmt_fixed(char *buf, size_t len, uint64_t v);
void kvt_fmt_bytes(char *buf, size_t len, uint64_t bytes);
void kvt_json_str(FILE *f, const char *s);

/* "Try 'PROG --help'." on stderr. */
void kvt_usage_hint(void);
/* "PROG: OPT must be WHAT: got ARG" and the hint; returns KVT_EXIT_USAGE. */
int kvt_bad(const char *opt, const char *what, const char *arg);

/*
 * model.c - the model presets and the geometry options every tool takes:
 *
 *   -m, --model NAME   a preset; the options below override its fields
 *   --model-config FILE   a Hugging Face config.json instead of a preset
 *   --layers N  --kv-heads N  --head-dim N  --dtype fp16|bf16|fp32|fp8
 */
struct kvt_model {
	const char *name;
	uint32_t layers, kv_heads, head_dim, q_heads;
	enum kva_dtype dtype;
	uint64_t params;	/* exact parameter count; 0: not known */
	uint64_t weights_bytes;	/* the checkpoint's bytes; 0: params x 2 */
};

/*
 * kvt_model_config() - @m from a Hugging Face config.json at @path
 * (hfconfig.c), with the weights' bytes from the checkpoint beside it.
 * Returns 0, or KVT_EXIT_USAGE after saying what was wrong.
 */
int kvt_model_config(const char *path, struct kvt_model *m);

#define KVT_MODEL_NAMES	"llama-3-8b, llama-3-70b, qwen2.5-7b or mistral-7b"

const struct kvt_model *kvt_model_find(const char *name);

enum {
	KVT_OPT_LAYERS = 0x1000,
	KVT_OPT_KV_HEADS,
	KVT_OPT_HEAD_DIM,
	KVT_OPT_DTYPE,
	KVT_OPT_MODEL_CONFIG,
	KVT_OPT_GEOM_END,	/* a tool's own options may start here */
};

/* Entries for a getopt_long() table ('m' goes in the short options). */
#define KVT_GEOM_OPTIONS						\
	{ "model",    required_argument, NULL, 'm' },			\
	{ "layers",   required_argument, NULL, KVT_OPT_LAYERS },	\
	{ "kv-heads", required_argument, NULL, KVT_OPT_KV_HEADS },	\
	{ "head-dim", required_argument, NULL, KVT_OPT_HEAD_DIM },	\
	{ "dtype",    required_argument, NULL, KVT_OPT_DTYPE },		\
	{ "model-config", required_argument, NULL, KVT_OPT_MODEL_CONFIG }

/* The geometry options as given; zero-initialise. */
struct kvt_geom_opts {
	const struct kvt_model *model;
	uint32_t layers, kv_heads, head_dim, dtype;
	int dtype_set;
};

/*
 * kvt_geom_option() - take option @c with @arg if it is a geometry
 * option.  Returns 0 when taken, -1 when @c is not one, or
 * KVT_EXIT_USAGE after saying what was wrong.
 */
int kvt_geom_option(struct kvt_geom_opts *o, int c, const char *arg);

/*
 * kvt_geom_resolve() - the model's fields overridden by the options, into
 * @g's layers, kv_heads, head_dim and dtype (fp16 without a model).
 * Returns 0, or KVT_EXIT_USAGE when a field has no value.
 */
int kvt_geom_resolve(const struct kvt_geom_opts *o, struct kva_geometry *g);

/*
 * trace.c - request traces.  Two formats, told apart by the first
 * non-blank line:
 *
 *   Azure LLM inference trace, CSV with a header naming the columns:
 *       TIMESTAMP,ContextTokens,GeneratedTokens
 *       2023-11-16 18:15:46.6805900,374,44
 *   Mooncake, one JSON object per line:
 *       {"timestamp": 0, "input_length": 40160, "output_length": 6,
 *        "hash_ids": [0, 1, ...]}
 *   with timestamps in milliseconds and hash_ids naming the prompt's
 *   512-token blocks.
 */
#define KVT_HASH_BLOCK	512	/* tokens per Mooncake hash_ids entry */

/* kvt_trace_read() flags */
#define KVT_TRACE_TIMES		(1u << 0) /* every request needs a valid
					   * timestamp; without the flag
					   * the field is not looked at */
#define KVT_TRACE_HASHES	(1u << 1) /* keep hash_ids where present */

/**
 * struct kvt_req - one request.
 * @arrival_us:	arrival, microseconds since the Unix epoch (Azure) or
 *		since the trace's origin (Mooncake); 0 without
 *		KVT_TRACE_TIMES.
 * @ctx:	prompt tokens (ContextTokens, input_length).
 * @gen:	generated tokens (GeneratedTokens, output_length).
 * @hash:	index of the first of its @nr_hash ids in kvt_trace.hash.
 * @nr_hash:	hash_ids entries, 0 if none.
 * @line:	line of the trace file it came from.
 */
struct kvt_req {
	int64_t arrival_us;
	uint64_t ctx;
	uint64_t gen;
	uint64_t hash;
	uint32_t nr_hash;
	uint32_t line;
};

/**
 * struct kvt_trace - a trace, in file order.
 * @path:	the file it was read from.
 * @req:	@nr requests.
 * @hash:	every request's hash_ids, one after another.
 * @format:	"azure-csv" or "mooncake-jsonl".
 * @has_hash:	every request has hash_ids (KVT_TRACE_HASHES only).
 */
struct kvt_trace {
	const char *path;
	struct kvt_req *req;
	size_t nr;
	uint64_t *hash;
	size_t nr_hash;
	const char *format;
	int has_hash;
};

/*
 * kvt_trace_read() - read @path.  Blank lines are skipped; CRLF line ends
 * and a last line without a newline are accepted.  Anything else is an
 * error naming the file, the line and the field, printed before the
 * function returns.
 *
 * Returns 0, or -errno after printing what was wrong; @t is then empty.
 */
int kvt_trace_read(const char *path, unsigned int flags, struct kvt_trace *t);
void kvt_trace_free(struct kvt_trace *t);

#endif /* KVTOOLS_H */
