// SPDX-License-Identifier: GPL-2.0
/*
 * kvbench resize: what ARENA_RESIZE costs against the work underneath it,
 * measured in the same run on memory of the same size.
 *
 *   shrink      ARENA_RESIZE of a host arena of --mib MiB (every frame
 *               free) down to one frame: every other frame's pages
 *               unpinned and punched out of the arena's memfd, before the
 *               call returns
 *   raw punch   fallocate(FALLOC_FL_PUNCH_HOLE) of as many bytes of a
 *               memfd whose pages are allocated: what shmem does to free
 *               them, the floor of a shrink
 *   grow        ARENA_RESIZE back to --mib MiB: the frames' pages
 *               allocated, zeroed and pinned again
 *   raw populate  mmap() of as many bytes of a memfd and
 *               MADV_POPULATE_WRITE over them, then munmap(): the pages
 *               allocated and zeroed, the floor of a grow
 *
 * Each figure is the best of --reps rounds (noise only adds time), the
 * module and the raw calls in turns, printed in GB/s of memory given back
 * or taken, with the module's time over the raw one.  Needs /dev/kvarena
 * and CAP_SYS_ADMIN: the arena (kvbench-resize-<pid>) is made and
 * destroyed here.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/falloc.h>
#include <linux/kvarena.h>

#include "kvbench.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23		/* Linux 5.14 */
#endif

struct resize_result {
	double shrink_s, punch_s, grow_s, populate_s;
	uint64_t bytes;			/* given back and taken again */
};

static int sealed_memfd(uint64_t size)
{
	int fd = memfd_create("kvbench-resize", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd >= 0 && (ftruncate(fd, (off_t)size) ||
			fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW))) {
		close(fd);
		return -1;
	}
	return fd;
}

static int resize(int fd, const char *name, uint32_t nr)
{
	struct kvarena_arena_resize r = { .nr_frames = nr };

	snprintf(r.name, sizeof(r.name), "%s", name);
	if (ioctl(fd, KVARENA_IOC_ARENA_RESIZE, &r))
		return -errno;
	/* Every frame is free: nothing may be left to wait for. */
	return r.out_frames == nr && !r.out_shrinking ? 0 : -EIO;
}

/* The raw peer: allocate and zero @len bytes of @mfd, as a grow does. */
static int populate(int mfd, uint64_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	int ret = 0;

	if (p == MAP_FAILED)
		return -errno;
	if (madvise(p, len, MADV_POPULATE_WRITE))
		ret = -errno;
	munmap(p, len);
	return ret;
}

static int bench(uint64_t frame_size, uint32_t nr, int reps,
		 struct resize_result *r, const char **why)
{
	struct kvarena_arena_create c = { .frame_size = frame_size,
					  .nr_frames = nr,
					  .mem_kind = KVARENA_MEM_HOST };
	struct kvarena_set_backing b = { .nr_frames = nr };
	struct kvarena_arena_destroy d = { 0 };
	uint64_t size = frame_size * nr;
	int admin, mfd = -1, peer = -1, i, ret = -1;
	double t;

	r->bytes = size - frame_size;
	r->shrink_s = r->punch_s = r->grow_s = r->populate_s = 1e300;
	admin = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	if (admin < 0) {
		*why = "no /dev/kvarena";
		return -1;
	}
	snprintf(c.name, sizeof(c.name), "kvbench-resize-%d", getpid());
	memcpy(d.name, c.name, sizeof(d.name));
	memcpy(b.name, c.name, sizeof(b.name));
	if (ioctl(admin, KVARENA_IOC_ARENA_CREATE, &c)) {
		*why = errno == EPERM ? "creating an arena needs CAP_SYS_ADMIN"
				      : "ARENA_CREATE failed";
		close(admin);
		return -1;
	}
	*why = "no memory for the arena or its peer";
	mfd = sealed_memfd(size);
	peer = sealed_memfd(size);
	if (mfd < 0 || peer < 0)
		goto out;
	b.fd = mfd;
	if (ioctl(admin, KVARENA_IOC_ARENA_SET_BACKING, &b))
		goto out;
	*why = "a resize or a raw call failed during the run";
	for (i = 0; i < reps; i++) {
		t = kvb_now_s();
		if (resize(admin, c.name, 1))
			goto out;
		kvb_keep_best(&r->shrink_s, t);
		if (populate(peer, size))
			goto out;
		t = kvb_now_s();
		if (fallocate(peer, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)frame_size, (off_t)r->bytes))
			goto out;
		kvb_keep_best(&r->punch_s, t);
		t = kvb_now_s();
		if (resize(admin, c.name, nr))
			goto out;
		kvb_keep_best(&r->grow_s, t);
		if (fallocate(peer, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      0, (off_t)size))
			goto out;
		t = kvb_now_s();
		if (populate(peer, r->bytes))
			goto out;
		kvb_keep_best(&r->populate_s, t);
	}
	ret = 0;
out:
	if (mfd >= 0)
		close(mfd);
	if (peer >= 0)
		close(peer);
	if (ioctl(admin, KVARENA_IOC_ARENA_DESTROY, &d))
		perror("kvbench resize: ARENA_DESTROY");
	close(admin);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kvbench resize [--json] [--mib N] [--frame-size BYTES] [--reps N]\n"
		"  ARENA_RESIZE of a host arena of N MiB (default 256) down to one\n"
		"  frame and back, against fallocate(PUNCH_HOLE) and\n"
		"  MADV_POPULATE_WRITE of as many bytes of a memfd: GB/s and the\n"
		"  ratios.  Needs /dev/kvarena and CAP_SYS_ADMIN.\n");
}

int kvbench_resize_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json",       no_argument,       NULL, 'j' },
		{ "mib",        required_argument, NULL, 'm' },
		{ "frame-size", required_argument, NULL, 'f' },
		{ "reps",       required_argument, NULL, 'r' },
		{ "help",       no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct resize_result r = { 0 };
	uint64_t frame_size = 2u << 20, mib = 256;
	const char *why = NULL;
	int reps = 10, json = 0, c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'm': mib = strtoull(optarg, NULL, 0); break;
		case 'f': frame_size = strtoull(optarg, NULL, 0); break;
		case 'r': reps = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (reps < 1 || frame_size < 4096 || (frame_size & (frame_size - 1)) ||
	    frame_size > KVARENA_MAX_FRAME_SIZE || !mib || mib > (1u << 20) ||
	    (mib << 20) / frame_size < 2 ||
	    (mib << 20) / frame_size > KVARENA_MAX_FRAMES ||
	    (mib << 20) % frame_size) {
		fprintf(stderr, "kvbench resize: --reps >= 1; --frame-size a power of two from 4096; --mib a whole number of at least two frames\n");
		return 2;
	}
	if (bench(frame_size, (uint32_t)((mib << 20) / frame_size), reps, &r,
		  &why)) {
		fprintf(stderr, "kvbench resize: %s\n", why);
		return 1;
	}
	if (json) {
		printf("{\"kind\":\"resize\",\"bytes\":%llu,\"frame_size\":%llu,"
		       "\"shrink_s\":%.6f,\"punch_s\":%.6f,\"grow_s\":%.6f,"
		       "\"populate_s\":%.6f,\"shrink_vs_punch\":%.3f,"
		       "\"grow_vs_populate\":%.3f}\n",
		       (unsigned long long)r.bytes,
		       (unsigned long long)frame_size, r.shrink_s, r.punch_s,
		       r.grow_s, r.populate_s, r.shrink_s / r.punch_s,
		       r.grow_s / r.populate_s);
		return 0;
	}
	printf("resize of %llu MiB in frames of %llu KiB, down to one frame and back (best of %d, in turns)\n",
	       (unsigned long long)(r.bytes >> 20),
	       (unsigned long long)(frame_size >> 10), reps);
	kvb_line_gbs("raw punch", r.punch_s, r.bytes, 0, NULL);
	kvb_line_gbs("shrink", r.shrink_s, r.bytes, r.punch_s, "raw punch");
	kvb_line_gbs("raw populate", r.populate_s, r.bytes, 0, NULL);
	kvb_line_gbs("grow", r.grow_s, r.bytes, r.populate_s, "raw populate");
	return 0;
}
