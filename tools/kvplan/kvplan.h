/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvplan - KV-cache capacity planner: shared declarations.
 *
 * Exit codes: KVP_EXIT_OK, KVP_EXIT_IMPOSSIBLE (the numbers were read but
 * the plan cannot work: a token does not fit a frame, nothing is left for
 * the KV cache, one sequence does not fit), KVP_EXIT_USAGE (a bad command
 * line, or a trace that cannot be read).
 */
#ifndef KVPLAN_H
#define KVPLAN_H

#include <stdint.h>
#include <stdio.h>

enum {
	KVP_EXIT_OK = 0,
	KVP_EXIT_IMPOSSIBLE = 1,
	KVP_EXIT_USAGE = 2,
};

/*
 * Decimal quantities (GiB, util) are kept exactly, as an integer count of
 * 10^-9 units, so that 80 GiB x 0.9 is 72 GiB to the byte.
 */
#define KVP_FIX_SCALE	1000000000ull
#define KVP_FIX_DIGITS	9

/* Largest memory size accepted, in GiB: 1 PiB. */
#define KVP_MAX_GIB	(1ull << 20)

/* num.c - strict parsing of command-line numbers */
int kvp_parse_u64(const char *s, uint64_t *out);
int kvp_parse_fixed(const char *s, uint64_t *out);
int kvp_parse_size(const char *s, uint64_t *out);
int kvp_parse_list(const char *s, uint64_t *vals, int max, int *n,
		   uint64_t lo, uint64_t hi);
void kvp_fmt_fixed(char *buf, size_t len, uint64_t v);
void kvp_fmt_bytes(char *buf, size_t len, uint64_t bytes);
void kvp_json_str(FILE *f, const char *s);

/* waste.c - the expected-waste estimate and its measurement on traces */
double kvp_waste_estimate(double avg_len, uint64_t block_tokens);
int kvp_cmd_waste_table(int argc, char **argv);
int kvp_cmd_waste(int argc, char **argv);

/* trace.c - request traces: Azure CSV and Mooncake JSON lines */
struct kvp_trace {
	uint64_t *len;		/* final length: context + generated tokens */
	size_t nr;
	const char *format;	/* "azure-csv" or "mooncake-jsonl" */
};

int kvp_trace_read(const char *path, struct kvp_trace *t);
void kvp_trace_free(struct kvp_trace *t);

/* plan.c */
int kvp_cmd_plan(int argc, char **argv);

/* main.c */
extern const char *kvp_prog;
void kvp_usage_hint(void);
int kvp_bad_option(int c, char **argv, const char *cmd);
void kvp_help(FILE *f);

#endif /* KVPLAN_H */
