// SPDX-License-Identifier: GPL-2.0
/*
 * kvbench: kvarena's microbenchmarks.  Every figure is printed next to a
 * peer or a limit measured in the same run (a raw system call, the
 * machine's bandwidth), since absolute times on a shared machine say
 * little; --json gives the same figures to scripts.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kvbench.h"

static const struct kvbench_cmd {
	const char *name;
	int (*main)(int argc, char **argv);
	const char *help;
} cmds[] = {
	{ "map",    kvbench_map_main,
	  "map+unmap of a frame through libkvarena vs raw mmap; grow cost" },
	{ "frames", kvbench_frames_main,
	  "frame ALLOC+FREE: embedded, ioctl, batched, io_uring" },
	{ "attn",   kvbench_attn_main,
	  "attention KV read GB/s vs the machine's read bandwidth; GFLOP/s" },
	{ "prefix", kvbench_prefix_main,
	  "LOOKUP of a 64-frame prefix chain vs ALLOC of 64 frames" },
	{ "resize", kvbench_resize_main,
	  "ARENA_RESIZE down and back vs punching and populating a memfd" },
	{ "swap",   kvbench_swap_main,
	  "a preempted sequence swapped out and back in vs memcpy" },
	{ "tier",   kvbench_tier_main,
	  "a lower tier's demotions and PROMOTE vs memcpy; break-even" },
	{ "remote", kvbench_remote_main,
	  "a block fetched from Redis vs recomputed; vs redis-benchmark" },
};

double kvb_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void kvb_keep_best(double *best, double t0)
{
	double t = kvb_now_s() - t0;

	if (t < *best)
		*best = t;
}

void kvb_line_gbs(const char *what, double s, uint64_t bytes, double peer,
		  const char *to)
{
	printf("  %-14s %9.3f ms  %7.2f GB/s", what, s * 1e3, bytes / s / 1e9);
	if (peer > 0)
		printf("   %5.2fx %s", s / peer, to);
	putchar('\n');
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: kvbench COMMAND [--json] [OPTIONS]\n\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\n'kvbench COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].main(argc - 1, argv + 1);
	fprintf(stderr, "kvbench: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return 2;
}
