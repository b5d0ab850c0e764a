/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the fault campaign's VM programs share: a seeded generator, the
 * commands as plain calls returning 0 or -errno (over ioctl() or one
 * io_uring SQE), backing memory, and the invariants every arena must
 * satisfy once its clients are gone.
 */
#ifndef KVA_FAULTS_H
#define KVA_FAULTS_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <linux/kvarena.h>

#include "../kvarena/kva_uring.h"

/* ---- a seeded generator: splitmix64 seeds xoshiro256** --------------- */

struct fz_rng {
	uint64_t s[4];
};

static inline uint64_t fz_splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline void fz_seed(struct fz_rng *r, uint64_t seed)
{
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = fz_splitmix(&seed);
}

static inline uint64_t fz_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t fz_next(struct fz_rng *r)
{
	uint64_t *s = r->s, res = fz_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = fz_rotl(s[3], 45);
	return res;
}

/* Uniform in [0, n), n > 0 (the modulo bias is irrelevant here). */
static inline uint32_t fz_below(struct fz_rng *r, uint32_t n)
{
	return (uint32_t)(fz_next(r) % n);
}

/* True with probability 1/n. */
static inline bool fz_one_in(struct fz_rng *r, uint32_t n)
{
	return fz_below(r, n) == 0;
}

/* A seed from the clock, for runs that are not given one. */
static inline uint64_t fz_clock_seed(void)
{
	struct timespec ts;
	uint64_t x;

	clock_gettime(CLOCK_REALTIME, &ts);
	x = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^
	    ((uint64_t)getpid() << 32);
	return fz_splitmix(&x);
}

static inline double fz_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- commands --------------------------------------------------------- */

static inline int fz_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

/*
 * One command as one IORING_OP_URING_CMD SQE, waited for: 0 or -errno.
 * @reserved goes in the command area's reserved field (0 to be valid).
 */
static inline int fz_uring(struct io_uring *ring, int fd, uint32_t cmd,
			   void *arg, uint64_t reserved)
{
	struct kvarena_uring_cmd uc = { .arg = (uint64_t)(uintptr_t)arg,
					.reserved = reserved };
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -EBUSY;
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = cmd;
	memcpy(sqe->cmd, &uc, sizeof(uc));
	ret = io_uring_submit_and_wait(ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return ret;
}

static inline void fz_name(char *dst, const char *fmt, ...)
{
	va_list ap;

	memset(dst, 0, KVARENA_NAME_LEN);
	va_start(ap, fmt);
	vsnprintf(dst, KVARENA_NAME_LEN, fmt, ap);
	va_end(ap);
}

/* Backing memory as the module wants it: a memfd sealed against shrinking. */
static inline int fz_memfd(size_t size)
{
	int fd = memfd_create("kvarena-faults", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd >= 0 && (ftruncate(fd, size) ||
			fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW))) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * An arena of @nr frames of @fsize bytes: accounting-only, or host memory
 * from one memfd, which is closed again before returning (the module
 * keeps its own reference).
 */
static inline int fz_arena_create(int fd, const char *name, uint32_t nr,
				  uint64_t fsize, bool backed)
{
	struct kvarena_arena_create c = {
		.frame_size = fsize, .nr_frames = nr,
		.mem_kind = KVARENA_MEM_HOST, .bytes_per_token = 1024,
		.flags = backed ? 0 : KVARENA_CREATE_NO_BACKING,
	};
	struct kvarena_set_backing b = { .nr_frames = nr };
	int ret, mfd;

	fz_name(c.name, "%s", name);
	ret = fz_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c);
	if (ret || !backed)
		return ret;
	mfd = fz_memfd(nr * fsize);
	if (mfd < 0)
		return -errno;
	fz_name(b.name, "%s", name);
	b.fd = mfd;
	ret = fz_ioctl(fd, KVARENA_IOC_ARENA_SET_BACKING, &b);
	close(mfd);
	return ret;
}

static inline int fz_arena_destroy(int fd, const char *name)
{
	struct kvarena_arena_destroy d = { 0 };

	fz_name(d.name, "%s", name);
	return fz_ioctl(fd, KVARENA_IOC_ARENA_DESTROY, &d);
}

static inline int fz_stat(int fd, const char *name, struct kvarena_stat *s)
{
	memset(s, 0, sizeof(*s));
	fz_name(s->name, "%s", name);
	return fz_ioctl(fd, KVARENA_IOC_STAT, s);
}

/* ---- invariants ------------------------------------------------------- */

/*
 * What must hold of an arena at any moment: capacity is free + held
 * (+ cached), and the counters add up: frames handed out less frames
 * returned is what is held (+ cached: published frames nobody holds,
 * which are not back on the free list).  Prints what broke, prefixed @who.
 */
static inline int fz_check_counts(const char *who, const struct kvarena_stat *s)
{
	int bad = 0;

	if ((uint64_t)s->nr_free + s->nr_held + s->nr_cached != s->nr_frames) {
		printf("# %s: %s: free %u + held %u + cached %u != capacity %u\n",
		       who, s->name, s->nr_free, s->nr_held, s->nr_cached,
		       s->nr_frames);
		bad = 1;
	}
	/* A cached frame was handed out and is not back on the free list. */
	if (s->frames_allocated - s->frames_freed !=
	    (uint64_t)s->nr_held + s->nr_cached) {
		printf("# %s: %s: frames_allocated %" PRIu64 " - frames_freed %"
		       PRIu64 " != held %u + cached %u\n", who, s->name,
		       (uint64_t)s->frames_allocated,
		       (uint64_t)s->frames_freed, s->nr_held, s->nr_cached);
		bad = 1;
	}
	/* Every cached frame keeps its key (held ones may have one too). */
	if (s->nr_published < s->nr_cached) {
		printf("# %s: %s: %u frames cached, only %u keys published\n",
		       who, s->name, s->nr_cached, s->nr_published);
		bad = 1;
	}
	return bad;
}

/*
 * Wait (up to @timeout_s) until the arena has no client: a killed
 * process's io_uring instance is torn down by a kernel worker after the
 * process is reaped, and the requests it had in flight hold the file
 * until then.  Returns the seconds it took, or -1.
 */
static inline double fz_wait_no_clients(int fd, const char *name,
					double timeout_s)
{
	double t0 = fz_now();
	struct kvarena_stat s;

	for (;;) {
		if (fz_stat(fd, name, &s))
			return -1;
		if (!s.nr_clients)
			return fz_now() - t0;
		if (fz_now() - t0 > timeout_s) {
			printf("# %s: still %u clients after %.0f s\n", name,
			       s.nr_clients, timeout_s);
			return -1;
		}
		usleep(10 * 1000);
	}
}

/*
 * References to kvarena.ko (/sys/module/kvarena/refcnt): one per open
 * /dev/kvarena file, frames file and arena.  -1 where it cannot be read.
 */
static inline int fz_module_refs(void)
{
	FILE *f = fopen("/sys/module/kvarena/refcnt", "r");
	int n = -1;

	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

/*
 * Wait (up to @timeout_s) until the module's references are down to
 * @refs again: every file the program's children opened is closed, those
 * an io_uring instance keeps past its process's end included.  An evicted
 * client is no longer counted among an arena's clients, yet its file may
 * be open still.  Returns the seconds it took, or -1.
 */
static inline double fz_wait_module_refs(int refs, double timeout_s)
{
	double t0 = fz_now();
	int n;

	while ((n = fz_module_refs()) != refs) {
		if (fz_now() - t0 > timeout_s) {
			printf("# %d references to kvarena.ko after %.0f s, %d "
			       "before\n", n, timeout_s, refs);
			return -1;
		}
		usleep(10 * 1000);
	}
	return fz_now() - t0;
}

/*
 * The arena once every client is gone: nothing held, nothing reserved,
 * nothing filled, every frame free (or cached), and the counters add up.
 * Returns the frames lost (capacity less free and cached) in @lost and
 * the number of broken invariants.
 */
static inline int fz_check_quiet(int fd, const char *name, uint32_t *lost)
{
	struct kvarena_stat s;
	int bad;

	if (fz_stat(fd, name, &s)) {
		printf("# %s: STAT failed\n", name);
		return 1;
	}
	*lost = s.nr_frames - s.nr_free - s.nr_cached;
	bad = fz_check_counts(name, &s);
	/* Nobody holds anything: every published frame is cached, under one key. */
	if (s.nr_published != s.nr_cached) {
		printf("# %s: %u frames cached, %u keys published\n", name,
		       s.nr_cached, s.nr_published);
		bad++;
	}
	if (s.nr_clients || s.nr_held || s.nr_reserved || s.filled_bytes ||
	    s.filled_tokens) {
		printf("# %s: quiet arena has clients %u held %u reserved %u "
		       "filled %" PRIu64 " bytes %" PRIu64 " tokens\n", name,
		       s.nr_clients, s.nr_held, s.nr_reserved,
		       (uint64_t)s.filled_bytes, (uint64_t)s.filled_tokens);
		bad++;
	}
	return bad;
}

/* ---- KTAP ------------------------------------------------------------- */

static inline void fz_ktap_result(const char *test, int failures)
{
	printf("%s 1 %s\n", failures ? "not ok" : "ok", test);
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
	       !failures, !!failures);
	fflush(stdout);
}

#endif /* KVA_FAULTS_H */
