// SPDX-License-Identifier: GPL-2.0
/*
 * kvbench map: what libkvarena's host backend costs against the system
 * calls underneath it, measured in the same run.
 *
 *   runtime map+unmap   kva_seq_grow() by one frame's tokens, then
 *                       kva_seq_shrink() back to 0: a frame taken from
 *                       the arena, mapped behind the sequence's range,
 *                       unmapped, returned
 *   raw mmap+unmap      the two mmap(MAP_FIXED) calls that do the mapping:
 *                       the frame's memfd range over a PROT_NONE
 *                       reservation, then PROT_NONE back over it
 *   raw mmap+munmap     for reference: map into a hole, munmap it (cheaper,
 *                       but leaves a hole any other mmap could take, so no
 *                       runtime can unmap this way)
 *   grow in frame       kva_seq_grow(s, 1) where the frame is mapped
 *                       already: the inline fast path
 *
 * and, to choose the memory options, the first touch of every page of
 * freshly mapped frames: lazily allocated memfd pages, pre-faulted ones
 * (KVA_OPEN_PREFAULT), and pre-faulted ones mapped with KVA_OPEN_POPULATE
 * (whose map+unmap cost is shown too).
 *
 * Each figure is the best of --reps runs (noise only adds time) of
 * --iters iterations, runs of the runtime and of the raw calls
 * alternating; short runs, many of them, so that some escape preemption
 * on a busy machine.  The arena is embedded
 * unless --arena names a device arena to attach to.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <kvarena.h>

#define AHEAD_FRAMES	32	/* room mapped for the grow loop */
#define TOUCH_FRAMES	16
#define TOUCH_REPS	5	/* each makes an arena: enough for a best */

struct map_opts {
	uint64_t frame_size;
	long iters;
	int reps;
	const char *arena;
};

struct map_result {
	double runtime_us;
	double raw_us;
	double raw_munmap_us;
	double grow_ns;
	double populate_us;
	double touch_gbps[3];		/* lazy, prefault, populate */
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double min_d(double a, double b)
{
	return a < b ? a : b;
}

/* Llama-3-8B in fp16: 128 KiB of KV per token. */
static struct kva_geometry model(uint64_t frame_size)
{
	struct kva_geometry g = { .layers = 32, .kv_heads = 8,
				  .head_dim = 128, .dtype = KVA_DTYPE_FP16,
				  .frame_size = frame_size };

	return g;
}

static int open_arena(const struct map_opts *o, uint32_t flags,
		      uint32_t nr_frames, struct kva_arena **a)
{
	struct kva_open_opts oo = {
		.mode = o->arena ? KVA_MODE_DEVICE : KVA_MODE_EMBEDDED,
		.flags = flags,
		.name = o->arena ? o->arena : "kvbench-map",
		.label = "kvbench map",
		.nr_frames = nr_frames,
		.frame_size = o->frame_size,
		.mem_kind = KVA_BACKEND_HOST,
	};

	return kva_open(&oo, a);
}

/* Runtime: one frame's tokens on, and off again. */
static int runtime_round(struct kva_seq *s, long iters, double *best)
{
	uint32_t tpf = s->geo.tokens_per_frame;
	double t0 = now_ns();
	long i;

	for (i = 0; i < iters; i++)
		if (kva_seq_grow(s, tpf) || kva_seq_shrink(s, 0))
			return -1;
	*best = min_d(*best, (now_ns() - t0) / iters / 1e3);
	return 0;
}

/* Raw: the same two mmap(MAP_FIXED) calls, nothing else. */
static int raw_round(char *resv, int fd, uint64_t fs, long iters,
		     double *best)
{
	double t0 = now_ns();
	long i;

	for (i = 0; i < iters; i++) {
		if (mmap(resv, fs, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED ||
		    mmap(resv, fs, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
			 MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
			return -1;
	}
	*best = min_d(*best, (now_ns() - t0) / iters / 1e3);
	return 0;
}

static int raw_munmap_round(char *hole, int fd, uint64_t fs, long iters,
			    double *best)
{
	double t0 = now_ns();
	long i;

	for (i = 0; i < iters; i++) {
		if (mmap(hole, fs, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED ||
		    munmap(hole, fs))
			return -1;
	}
	*best = min_d(*best, (now_ns() - t0) / iters / 1e3);
	return 0;
}

static int bench_map(const struct map_opts *o, struct map_result *r)
{
	struct kva_geometry g = model(o->frame_size);
	struct kva_arena *a;
	struct kva_seq *s;
	char *resv, *hole;
	int fd, rep, ret = -1;

	if (open_arena(o, 0, 4, &a))
		return -1;
	kva_geometry_init(&g);
	if (kva_seq_create(a, &g, 4ull * g.tokens_per_frame, &s))
		goto out_close;
	fd = memfd_create("kvbench-map", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)o->frame_size))
		goto out_seq;
	/*
	 * Raw gets what the runtime has: a 4-frame reservation with the frame
	 * going at its start.  The hole is the 8th frame of the range, made
	 * by unmapping it.
	 */
	resv = mmap(NULL, 8 * o->frame_size, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (resv == MAP_FAILED)
		goto out_fd;
	hole = resv + 7 * o->frame_size;
	munmap(hole, o->frame_size);

	r->runtime_us = r->raw_us = r->raw_munmap_us = 1e300;
	for (rep = 0; rep < o->reps; rep++) {
		if (runtime_round(s, o->iters, &r->runtime_us) ||
		    raw_round(resv, fd, o->frame_size, o->iters,
			      &r->raw_us) ||
		    raw_munmap_round(hole, fd, o->frame_size, o->iters,
				     &r->raw_munmap_us))
			goto out_unmap;
	}
	ret = 0;
out_unmap:
	munmap(resv, 8 * o->frame_size);
out_fd:
	close(fd);
out_seq:
	kva_seq_free(s);
out_close:
	kva_close(a);
	return ret;
}

/* The fast path, with the sequence reloaded from memory every time. */
static int bench_grow(const struct map_opts *o, struct map_result *r)
{
	struct kva_geometry g = model(o->frame_size);
	struct kva_arena *a;
	struct kva_seq *s;
	struct kva_grow req;
	uint64_t n, i;
	int rep, ret = -1;

	if (open_arena(o, 0, AHEAD_FRAMES, &a))
		return -1;
	if (kva_seq_create(a, &g, 1u << 20, &s))
		goto out_close;
	req = (struct kva_grow){ .seq = s, .ahead = UINT64_MAX };
	r->grow_ns = 1e300;
	for (rep = 0; rep < o->reps; rep++) {
		double t0;
		int bad = 0;

		/* Room for AHEAD_FRAMES frames, mapped outside the timing. */
		req.ahead = (uint64_t)AHEAD_FRAMES * s->geo.tokens_per_frame;
		if (kva_seq_shrink(s, 0) || kva_seq_grow_batch(a, &req, 1))
			goto out_seq;
		n = s->room - 1;
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			bad |= kva_seq_grow(s, 1);
			__asm__ __volatile__("" : : "r"(s) : "memory");
		}
		r->grow_ns = min_d(r->grow_ns, (now_ns() - t0) / n);
		if (bad || s->tokens != n)
			goto out_seq;
	}
	ret = 0;
out_seq:
	kva_seq_free(s);
out_close:
	kva_close(a);
	return ret;
}

/*
 * Write one byte in every page of TOUCH_FRAMES frames just mapped, in a
 * new arena each run (so that lazy pages are really fresh): GB/s.  With
 * @map_us, also the map+unmap cost under @flags.
 */
static int touch_round(const struct map_opts *o, uint32_t flags,
		       double *gbps, double *map_us)
{
	struct kva_geometry g = model(o->frame_size);
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t off, len = (uint64_t)TOUCH_FRAMES * o->frame_size;
	double t0, best = 1e300;
	struct kva_arena *a;
	struct kva_seq *s;
	volatile char *p;
	int rep, ret = 0;

	if (map_us)
		*map_us = 1e300;
	for (rep = 0; rep < TOUCH_REPS && !ret; rep++) {
		if (open_arena(o, flags, TOUCH_FRAMES, &a))
			return -1;
		ret = kva_seq_create(a, &g, 1u << 20, &s);
		if (!ret && map_us)
			ret = runtime_round(s, o->iters, map_us);
		if (!ret) {
			t0 = now_ns();
			ret = kva_seq_grow(s, (uint64_t)TOUCH_FRAMES *
					      s->geo.tokens_per_frame);
			p = (volatile char *)(uintptr_t)s->base;
			for (off = 0; !ret && off < len; off += page)
				p[off] = 1;
			best = min_d(best, now_ns() - t0);
		}
		kva_close(a);
	}
	*gbps = len / best;
	return ret ? -1 : 0;
}

static int bench_touch(const struct map_opts *o, struct map_result *r)
{
	/*
	 * A device arena's memory is its creator's (allocated up front by
	 * kvarenactl create): only the mapping and its faults are ours.
	 */
	if (o->arena)
		return touch_round(o, 0, &r->touch_gbps[1], NULL) ||
		       touch_round(o, KVA_OPEN_POPULATE, &r->touch_gbps[2],
				   &r->populate_us) ? -1 : 0;
	return touch_round(o, 0, &r->touch_gbps[0], NULL) ||
	       touch_round(o, KVA_OPEN_PREFAULT, &r->touch_gbps[1], NULL) ||
	       touch_round(o, KVA_OPEN_PREFAULT | KVA_OPEN_POPULATE,
			   &r->touch_gbps[2], &r->populate_us) ? -1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kvbench map [--json] [--check] [--frame-size BYTES]\n"
		"                   [--iters N] [--reps N] [--arena NAME]\n"
		"  Map+unmap of one frame through libkvarena against the raw\n"
		"  mmap(MAP_FIXED) calls it makes, measured in the same run, the\n"
		"  cost of growing a sequence by one token inside a mapped frame,\n"
		"  and first-touch bandwidth with and without pre-faulting.\n"
		"  --check exits 1 unless runtime <= 1.3x raw and grow < 100 ns.\n"
		"  --arena attaches to a /dev/kvarena host arena instead of an\n"
		"  embedded one.  Frame size: a power of two, >= 128 KiB (2 MiB).\n");
}

int kvbench_map_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json",       no_argument,       NULL, 'j' },
		{ "check",      no_argument,       NULL, 'c' },
		{ "frame-size", required_argument, NULL, 'f' },
		{ "iters",      required_argument, NULL, 'i' },
		{ "reps",       required_argument, NULL, 'r' },
		{ "arena",      required_argument, NULL, 'a' },
		{ "help",       no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct map_opts o = { .frame_size = 2u << 20, .iters = 200,
			      .reps = 100 };
	struct map_result r = { 0 };
	struct kva_geometry g;
	int json = 0, check = 0, c, ok;
	double ratio;
	char why[256];

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'c': check = 1; break;
		case 'f': o.frame_size = strtoull(optarg, NULL, 0); break;
		case 'i': o.iters = strtol(optarg, NULL, 0); break;
		case 'r': o.reps = atoi(optarg); break;
		case 'a': o.arena = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	g = model(o.frame_size);
	if (o.iters < 10 || o.reps < 1 ||
	    (o.frame_size & (o.frame_size - 1)) ||
	    kva_geometry_explain(&g, why, sizeof(why))) {
		fprintf(stderr, "kvbench map: --iters must be >= 10, --reps "
			">= 1 and the frame size a power of two that fits a "
			"token of the model (%s)\n", why);
		return 2;
	}

	if (bench_map(&o, &r) || bench_grow(&o, &r) || bench_touch(&o, &r)) {
		fprintf(stderr, "kvbench map: %s arena setup or mapping failed "
			"(frame size %llu)\n", o.arena ? o.arena : "embedded",
			(unsigned long long)o.frame_size);
		return 1;
	}
	ratio = r.runtime_us / r.raw_us;
	ok = ratio <= 1.3 && r.grow_ns < 100;

	if (json) {
		printf("{\"kind\":\"map\",\"frame_size\":%llu,"
		       "\"runtime_map_unmap_us\":%.3f,"
		       "\"raw_mmap_unmap_us\":%.3f,"
		       "\"runtime_vs_raw\":%.3f,"
		       "\"raw_mmap_munmap_us\":%.3f,"
		       "\"grow_in_frame_ns\":%.2f",
		       (unsigned long long)o.frame_size, r.runtime_us,
		       r.raw_us, ratio, r.raw_munmap_us, r.grow_ns);
		if (!o.arena)
			printf(",\"touch_lazy_gbps\":%.2f",
			       r.touch_gbps[0]);
		printf(",\"touch_prefault_gbps\":%.2f,"
		       "\"touch_populate_gbps\":%.2f,"
		       "\"populate_map_unmap_us\":%.1f",
		       r.touch_gbps[1], r.touch_gbps[2], r.populate_us);
		printf("}\n");
		return check && !ok;
	}
	printf("map+unmap of one %llu KiB frame (best of %d x %ld)\n",
	       (unsigned long long)o.frame_size >> 10, o.reps, o.iters);
	printf("  %-26s %8.2f us   %5.2fx raw (target <= 1.30)\n",
	       "runtime (grow + shrink)", r.runtime_us, ratio);
	printf("  %-26s %8.2f us\n", "raw mmap(MAP_FIXED) x2", r.raw_us);
	printf("  %-26s %8.2f us   (leaves a hole; reference only)\n",
	       "raw mmap + munmap", r.raw_munmap_us);
	printf("grow by one token inside a mapped frame\n");
	printf("  %-26s %8.2f ns   (target < 100)\n", "kva_seq_grow(s, 1)",
	       r.grow_ns);
	printf("first touch of %d fresh frames, one write per page\n",
	       TOUCH_FRAMES);
	if (!o.arena)
		printf("  %-26s %8.2f GB/s\n", "lazy memfd pages",
		       r.touch_gbps[0]);
	printf("  %-26s %8.2f GB/s\n",
	       o.arena ? "device arena's memory" : "KVA_OPEN_PREFAULT",
	       r.touch_gbps[1]);
	printf("  %-26s %8.2f GB/s   (map+unmap %.1f us)\n",
	       o.arena ? "KVA_OPEN_POPULATE" : "PREFAULT + POPULATE",
	       r.touch_gbps[2], r.populate_us);
	return check && !ok;
}
