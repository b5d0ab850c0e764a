// SPDX-License-Identifier: GPL-2.0
/*
 * kvbench swap: what swapping a preempted sequence out and back in costs
 * (kva_seq_swap_out(), kva_seq_swap_in()) against memcpy() of the same
 * bytes between the sequence's mapped range and the same host buffer,
 * measured in the same run:
 *
 *   raw copy out   memcpy() of the sequence's frames to the buffer
 *   swap out       kva_seq_swap_out(): the same copy, then the frames
 *                  unmapped and given back
 *   swap in        kva_seq_swap_in(): new frames taken and mapped, then
 *                  the copy back
 *   raw copy in    memcpy() of the buffer into the mapped frames
 *   raw map+copy   mmap(MAP_POPULATE) of as many bytes of a memfd whose
 *                  pages are there, memcpy() into them, munmap(): what
 *                  copying into memory mapped anew costs by itself, the
 *                  floor of a swap in (its frames are new mappings)
 *
 * Llama-3-8B's KV in fp16 (128 KiB a token) in 2 MiB frames of an
 * embedded host arena, pre-faulted and mapped with MAP_POPULATE (as an
 * engine would run it); each figure the best of --reps rounds, in turns.
 * The ratios are what the arena adds to the copy the swap cannot avoid.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <kvarena.h>

#include "kvbench.h"

#define FRAME	(2u << 20)

struct swap_result {
	double out_s, in_s, raw_out_s, raw_in_s, raw_map_s;
	uint64_t bytes, tokens;
};

static int bench(uint64_t mib, int reps, struct swap_result *r)
{
	struct kva_geometry g = { .layers = 32, .kv_heads = 8,
				  .head_dim = 128, .dtype = KVA_DTYPE_FP16,
				  .frame_size = FRAME };
	struct kva_open_opts o = {
		.mode = KVA_MODE_EMBEDDED,
		.flags = KVA_OPEN_PREFAULT | KVA_OPEN_POPULATE,
		.name = "kvbench-swap",
		.mem_kind = KVA_BACKEND_HOST,
		.frame_size = FRAME,
	};
	struct kva_arena *a = NULL;
	struct kva_seq *s = NULL;
	uint64_t saved;
	char *buf = NULL;
	int i, ret, mfd = -1;
	void *p;
	double t;

	ret = kva_geometry_init(&g);
	if (ret)
		return ret;
	r->tokens = (mib << 20) / g.bytes_per_token;
	o.nr_frames = (uint32_t)kva_frames_for(&g, r->tokens);
	ret = kva_open(&o, &a);
	if (!ret)
		ret = kva_seq_create(a, &g, r->tokens, &s);
	if (!ret)
		ret = kva_seq_grow(s, r->tokens);
	if (ret)
		goto out;
	r->bytes = kva_seq_swap_bytes(s);
	buf = malloc(r->bytes);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	memset((void *)(uintptr_t)s->base, 0x3c, r->bytes);
	memset(buf, 0, r->bytes);
	/* The peer's memory, its pages allocated as the arena's are. */
	mfd = memfd_create("kvbench-swap", MFD_CLOEXEC);
	if (mfd < 0 || ftruncate(mfd, (off_t)r->bytes) ||
	    fallocate(mfd, 0, 0, (off_t)r->bytes)) {
		ret = -ENOMEM;
		goto out;
	}
	r->out_s = r->in_s = r->raw_out_s = r->raw_in_s = 1e300;
	r->raw_map_s = 1e300;
	for (i = 0; i < reps && !ret; i++) {
		t = kvb_now_s();
		memcpy(buf, (const void *)(uintptr_t)s->base, r->bytes);
		kvb_keep_best(&r->raw_out_s, t);
		t = kvb_now_s();
		ret = kva_seq_swap_out(s, buf, r->bytes, &saved);
		kvb_keep_best(&r->out_s, t);
		if (ret)
			break;
		t = kvb_now_s();
		ret = kva_seq_swap_in(s, buf, saved);
		kvb_keep_best(&r->in_s, t);
		if (ret)
			break;
		t = kvb_now_s();
		memcpy((void *)(uintptr_t)s->base, buf, r->bytes);
		kvb_keep_best(&r->raw_in_s, t);
		t = kvb_now_s();
		p = mmap(NULL, r->bytes, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, mfd, 0);
		if (p == MAP_FAILED) {
			ret = -ENOMEM;
			break;
		}
		memcpy(p, buf, r->bytes);
		munmap(p, r->bytes);
		kvb_keep_best(&r->raw_map_s, t);
	}
out:
	if (mfd >= 0)
		close(mfd);
	free(buf);
	kva_seq_free(s);
	kva_close(a);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kvbench swap [--json] [--mib N] [--reps N]\n"
		"  kva_seq_swap_out() and kva_seq_swap_in() of a sequence of N MiB of\n"
		"  KV (default 256) against memcpy() of the same bytes: GB/s and the\n"
		"  ratios.  An embedded arena: no device needed.\n");
}

int kvbench_swap_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument,       NULL, 'j' },
		{ "mib",  required_argument, NULL, 'm' },
		{ "reps", required_argument, NULL, 'r' },
		{ "help", no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct swap_result r = { 0 };
	uint64_t mib = 256;
	int reps = 10, json = 0, c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'm': mib = strtoull(optarg, NULL, 0); break;
		case 'r': reps = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (reps < 1 || mib < 2 || mib > (1u << 16)) {
		fprintf(stderr, "kvbench swap: --reps >= 1, --mib from 2 to 65536\n");
		return 2;
	}
	ret = bench(mib, reps, &r);
	if (ret) {
		fprintf(stderr, "kvbench swap: %s\n", strerror(-ret));
		return 1;
	}
	if (json) {
		printf("{\"kind\":\"swap\",\"bytes\":%llu,\"tokens\":%llu,"
		       "\"swap_out_s\":%.6f,\"swap_in_s\":%.6f,"
		       "\"memcpy_out_s\":%.6f,\"memcpy_in_s\":%.6f,"
		       "\"map_memcpy_in_s\":%.6f,"
		       "\"swap_out_vs_memcpy\":%.3f,"
		       "\"swap_in_vs_map_memcpy\":%.3f}\n",
		       (unsigned long long)r.bytes,
		       (unsigned long long)r.tokens, r.out_s, r.in_s,
		       r.raw_out_s, r.raw_in_s, r.raw_map_s,
		       r.out_s / r.raw_out_s, r.in_s / r.raw_map_s);
		return 0;
	}
	printf("swap of a sequence of %llu tokens, %llu MiB of KV in 2 MiB frames (best of %d, in turns)\n",
	       (unsigned long long)r.tokens,
	       (unsigned long long)(r.bytes >> 20), reps);
	kvb_line_gbs("raw copy out", r.raw_out_s, r.bytes, 0, NULL);
	kvb_line_gbs("swap out", r.out_s, r.bytes, r.raw_out_s, "raw copy out");
	kvb_line_gbs("raw copy in", r.raw_in_s, r.bytes, 0, NULL);
	kvb_line_gbs("raw map+copy", r.raw_map_s, r.bytes, 0, NULL);
	kvb_line_gbs("swap in", r.in_s, r.bytes, r.raw_map_s, "raw map+copy");
	return 0;
}
