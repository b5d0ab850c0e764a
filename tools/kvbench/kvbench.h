/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvbench subcommands.  Each takes the arguments after its name (argv[0]
 * is the subcommand) and returns the exit status: 0, 1 when the run
 * failed, 2 for a usage error.
 */
#ifndef KVBENCH_H
#define KVBENCH_H

#include <stdint.h>

/* Seconds of CLOCK_MONOTONIC. */
double kvb_now_s(void);
/* Keep in *@best the lowest time since @t0 (noise only adds time). */
void kvb_keep_best(double *best, double t0);
/* "  what   12.345 ms   1.23 GB/s   1.05x to": @s seconds for @bytes. */
void kvb_line_gbs(const char *what, double s, uint64_t bytes, double peer,
		  const char *to);

int kvbench_map_main(int argc, char **argv);
int kvbench_frames_main(int argc, char **argv);
int kvbench_attn_main(int argc, char **argv);
int kvbench_prefix_main(int argc, char **argv);
int kvbench_resize_main(int argc, char **argv);
int kvbench_swap_main(int argc, char **argv);
int kvbench_tier_main(int argc, char **argv);
int kvbench_remote_main(int argc, char **argv);

#endif
