/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvplan - KV-cache capacity planner: shared declarations.
 *
 * Exit codes: KVP_EXIT_OK, KVP_EXIT_IMPOSSIBLE (the numbers were read but
 * the plan cannot work: a token does not fit a frame, nothing is left for
 * the KV cache, one sequence does not fit), KVP_EXIT_USAGE (a bad command
 * line, or a trace that cannot be read).  Number parsing, the model table
 * and the trace reader are shared with the other tools (tools/common/).
 */
#ifndef KVPLAN_H
#define KVPLAN_H

#include <stdint.h>
#include <stdio.h>

#include "kvtools.h"

enum {
	KVP_EXIT_OK = KVT_EXIT_OK,
	KVP_EXIT_IMPOSSIBLE = KVT_EXIT_IMPOSSIBLE,
	KVP_EXIT_USAGE = KVT_EXIT_USAGE,
};

/* waste.c - the expected-waste estimate and its measurement on traces */
double kvp_waste_estimate(double avg_len, uint64_t block_tokens);
int kvp_cmd_waste_table(int argc, char **argv);
int kvp_cmd_waste(int argc, char **argv);

/* plan.c; the option values both plans take, 0 or said and the usage
 * exit status */
int kvp_cmd_plan(int argc, char **argv);
int kvp_get_gib(const char *opt, const char *arg, uint64_t *out);
int kvp_get_gpu_mem(const char *arg, uint64_t *out);
int kvp_get_util(const char *arg, uint64_t *out);
int kvp_get_frame_size(const char *arg, uint64_t *out);

/* gpu.c - several engines on one GPU, one arena */
int kvp_cmd_gpu(int argc, char **argv);

/* main.c */
int kvp_bad_option(int c, char **argv, const char *cmd);
void kvp_help(FILE *f);

#endif /* KVPLAN_H */
