// SPDX-License-Identifier: GPL-2.0
/*
 * kvbench frames: the cost of frame operations (ALLOC + FREE of one frame,
 * and of batches) through each path a runtime can take, against the
 * cheapest thing each path must do, measured in the same run:
 *
 *   null syscall     getppid(): the floor under any ioctl
 *   embedded         kva_alloc() + kva_free() on libkvarena's embedded
 *                    arena: the core allocator under a mutex, no syscall
 *   ioctl x1         raw ALLOC 1 + FREE 1: two syscalls, ratio to 2 null
 *   ioctl x64        raw ALLOC 64 + FREE 64, per frame: batching amortises
 *   uring x64        64 ALLOC SQEs + 64 FREE SQEs, one io_uring_enter each
 *   lib ioctl/uring  kva_alloc() + kva_free() of one frame in device mode
 *                    over each transport: the library's cost on top
 *   host x1          ALLOC 1 + FREE 1 on a host arena with memory behind
 *                    it, one cache domain: its own frames come back
 *                    uncleared, so the ratio to ioctl x1 is the cost of
 *                    the dirty lists
 *   cleared          two clients in two private domains taking the whole
 *                    host arena in turn, so every frame is cleared
 *                    between them: frames and bytes a second, and the
 *                    ratio to memset() over as many bytes in this process
 *   gang of N        ioctl x1 and io_uring 64 SQEs on a client of a gang
 *                    of N accounting-only members (N = 2, 4, 8): one
 *                    ALLOC takes a frame in every member, so the ratio to
 *                    the solo arena's line says what the gang costs
 *   rank map         a rank of a gang of 2 host members sees a frame its
 *                    client just took: FRAME_FD + mmap() + first touch +
 *                    munmap(), against the client of a solo host arena
 *                    doing the same with its own frame
 *   dmem             ioctl x1, io_uring 64 SQEs and ioctl batches of 64
 *                    on an arena that charges
 *                    its frames to the dmem cgroup controller (the
 *                    benchmark in a cgroup of its own), against an arena
 *                    made with the module's dmem parameter off, in turn
 *                    in the same run, and a second uncharged arena
 *                    against the first as the control (kernels with the
 *                    controller only; --dmem runs this alone)
 *
 * The device paths need /dev/kvarena and CAP_SYS_ADMIN (the benchmark makes
 * its own accounting-only arena, kvbench-<pid>, and destroys it); without
 * them only the first two lines are printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <kvarena.h>
#include <liburing.h>
#include <linux/kvarena.h>

#define BATCH		64
#define ARENA_FRAMES	1024
#define HOST_FRAMES	16		/* the host arena: 32 MiB */
#define HOST_FSIZE	(2u << 20)

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Best of @reps runs of @iters iterations: noise only ever adds time. */
#define BEST_NS(reps, iters, body) ({					\
	double best_ = 1e300;						\
	for (int r_ = 0; r_ < (reps); r_++) {				\
		double t0_ = now_ns();					\
		for (long i_ = 0; i_ < (iters); i_++) { body; }		\
		double t_ = (now_ns() - t0_) / (iters);			\
		if (t_ < best_)						\
			best_ = t_;					\
	}								\
	best_;								\
})

struct frames_result {
	double null_syscall_ns;
	double embedded_ns;		/* per alloc+free of one frame */
	int have_device;
	double ioctl1_ns;		/* per alloc+free of one frame */
	double ioctl_batch_ns;		/* per frame, batches of BATCH */
	double uring_batch_ns;		/* per frame, BATCH SQEs per enter */
	double lib_ioctl_ns;		/* kva_alloc+kva_free, one frame */
	double lib_uring_ns;
	int have_host;			/* host1_ns */
	int have_clear;			/* clear_ns, memset_ns */
	double host1_ns;		/* alloc+free of one host frame */
	double clear_ns;		/* per frame cleared between domains */
	double memset_ns;		/* memset() of HOST_FSIZE bytes */
	int have_gang;
	double gang_ioctl1_ns[3];	/* gangs of 2, 4, 8 */
	double gang_uring_ns[3];
	double gang_solo_ioctl1_ns[3];	/* the solo arena, in turn with each */
	double gang_solo_uring_ns[3];
	int have_rank;
	double rank_map_ns;		/* a rank maps its client's frame */
	double solo_map_ns;		/* a client maps its own */
	int have_dmem;
	const char *dmem_why;		/* why not */
	double dmem_ioctl1_ns;		/* the arena that charges */
	double dmem_uring_ns;
	double dmem_batch_ns;		/* per frame, ALLOC 64 + FREE 64 */
	double plain_ioctl1_ns;		/* the one that does not */
	double plain_uring_ns;
	double plain_batch_ns;
	double control[3];		/* two uncharged arenas: x1, uring, batch */
};

static const int gang_sizes[3] = { 2, 4, 8 };

/* kva_alloc() + kva_free() of one frame, best of @reps; -1 on failure. */
static double bench_lib(struct kva_arena *a, long iters, int reps)
{
	uint64_t h;
	int bad = 0;
	double ns = BEST_NS(reps, iters, {
		bad |= kva_alloc(a, &h, 1, 0) != 1;
		bad |= kva_free(a, &h, 1);
	});

	return bad ? -1 : ns;
}

static int bench_embedded(long iters, int reps, struct frames_result *r)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_EMBEDDED,
		.nr_frames = ARENA_FRAMES,
		.mem_kind = KVA_BACKEND_HOST,
		.frame_size = 64 << 10,
	};
	struct kva_arena *a;

	if (kva_open(&o, &a))
		return -1;
	r->embedded_ns = bench_lib(a, iters, reps);
	kva_close(a);
	return r->embedded_ns < 0 ? -1 : 0;
}

/* The library in device mode on arena @name over @transport. */
static double bench_lib_device(const char *name, uint32_t transport,
			       long iters, int reps)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_DEVICE,
		.name = name,
		.label = "kvbench-lib",
		.transport = transport,
	};
	struct kva_arena *a;
	double ns;

	if (kva_open(&o, &a))
		return -1;
	ns = bench_lib(a, iters, reps);
	kva_close(a);
	return ns;
}

static void queue_cmd(struct io_uring *ring, int fd, __u32 cmd, void *arg)
{
	struct kvarena_uring_cmd uc = { .arg = (__u64)(unsigned long)arg };
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = cmd;
	memcpy(sqe->cmd, &uc, sizeof(uc));
}

/* Submit what is queued, reap @n completions; -1 on any failure. */
static int uring_run(struct io_uring *ring, int n)
{
	struct io_uring_cqe *cqe;
	int i, bad = 0;

	if (io_uring_submit_and_wait(ring, n) != n)
		return -1;
	for (i = 0; i < n; i++) {
		if (io_uring_wait_cqe(ring, &cqe))
			return -1;
		bad |= cqe->res != 0;
		io_uring_cqe_seen(ring, cqe);
	}
	return bad ? -1 : 0;
}

static int bench_device(long iters, int reps, struct frames_result *r,
			const char **why)
{
	struct kvarena_arena_create cr = { .frame_size = 64 << 10,
					   .nr_frames = ARENA_FRAMES,
					   .flags = KVARENA_CREATE_NO_BACKING };
	struct kvarena_arena_destroy d = { 0 };
	struct kvarena_attach at = { .label = "kvbench" };
	struct kvarena_frames one[BATCH], fr[BATCH], batch;
	__u64 h[BATCH];
	struct io_uring ring;
	int admin, fd, i, bad = 0;

	admin = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	if (admin < 0) {
		*why = "no /dev/kvarena";
		return -1;
	}
	snprintf(cr.name, sizeof(cr.name), "kvbench-%d", getpid());
	memcpy(d.name, cr.name, sizeof(d.name));
	memcpy(at.name, cr.name, sizeof(at.name));
	if (ioctl(admin, KVARENA_IOC_ARENA_CREATE, &cr)) {
		*why = errno == EPERM ? "creating an arena needs CAP_SYS_ADMIN"
				      : "ARENA_CREATE failed";
		close(admin);
		return -1;
	}
	fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, KVARENA_IOC_ATTACH, &at)) {
		*why = "ATTACH failed";
		goto out_destroy;
	}

	batch = (struct kvarena_frames){ .handles = (__u64)(unsigned long)h };
	r->ioctl1_ns = BEST_NS(reps, iters, {
		batch.count = 1;
		bad |= ioctl(fd, KVARENA_IOC_ALLOC, &batch);
		bad |= ioctl(fd, KVARENA_IOC_FREE, &batch);
	});
	r->ioctl_batch_ns = BEST_NS(reps, iters / BATCH + 1, {
		batch.count = BATCH;
		bad |= ioctl(fd, KVARENA_IOC_ALLOC, &batch);
		bad |= ioctl(fd, KVARENA_IOC_FREE, &batch);
	}) / BATCH;

	if (io_uring_queue_init(2 * BATCH, &ring, 0)) {
		*why = "io_uring_queue_init failed";
		goto out_close;
	}
	for (i = 0; i < BATCH; i++) {
		one[i] = (struct kvarena_frames){
			.handles = (__u64)(unsigned long)&h[i], .count = 1 };
		fr[i] = one[i];
	}
	r->uring_batch_ns = BEST_NS(reps, iters / BATCH + 1, {
		for (i = 0; i < BATCH; i++)
			queue_cmd(&ring, fd, KVARENA_IOC_ALLOC, &one[i]);
		bad |= uring_run(&ring, BATCH);
		for (i = 0; i < BATCH; i++)
			queue_cmd(&ring, fd, KVARENA_IOC_FREE, &fr[i]);
		bad |= uring_run(&ring, BATCH);
	}) / BATCH;
	io_uring_queue_exit(&ring);
	r->lib_ioctl_ns = bench_lib_device(cr.name, KVA_TRANSPORT_IOCTL,
					   iters, reps);
	r->lib_uring_ns = bench_lib_device(cr.name, KVA_TRANSPORT_URING,
					   iters, reps);
	if (bad || r->lib_ioctl_ns < 0 || r->lib_uring_ns < 0) {
		*why = "a frame operation failed during the run";
		goto out_close;
	}
	r->have_device = 1;
out_close:
	close(fd);
out_destroy:
	if (ioctl(admin, KVARENA_IOC_ARENA_DESTROY, &d))
		perror("kvbench frames: ARENA_DESTROY");
	close(admin);
	return r->have_device ? 0 : -1;
}

/*
 * A client of arena @name, in a private cache domain of its own if
 * @private; -1.
 */
static int attach_host(const char *name, bool private)
{
	struct kvarena_attach at = { .label = "kvbench-clear",
				     .flags = private ? KVARENA_ATTACH_PRIVATE :
							0 };
	int fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);

	memcpy(at.name, name, sizeof(at.name));
	if (fd >= 0 && ioctl(fd, KVARENA_IOC_ATTACH, &at)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* All HOST_FRAMES frames for @fd's client, then back. */
static int take_all(int fd, __u64 *h)
{
	struct kvarena_frames f = { .handles = (__u64)(unsigned long)h,
				    .count = HOST_FRAMES };

	return ioctl(fd, KVARENA_IOC_ALLOC, &f) || f.nr_done != HOST_FRAMES ||
	       ioctl(fd, KVARENA_IOC_FREE, &f);
}

/*
 * A host arena with memory: one domain's ALLOC+FREE, and frames cleared
 * between two domains against memset() in this process.
 */
static int bench_host(long iters, int reps, struct frames_result *r,
		      const char **why)
{
	struct kvarena_arena_create cr = { .frame_size = HOST_FSIZE,
					   .nr_frames = HOST_FRAMES };
	struct kvarena_arena_destroy d = { 0 };
	struct kvarena_set_backing sb = { .nr_frames = HOST_FRAMES };
	size_t bytes = (size_t)HOST_FRAMES * HOST_FSIZE;
	long rounds = iters / 1000 + 4;
	int admin, mfd, a = -1, b = -1, bad = 0;
	__u64 h[HOST_FRAMES];
	unsigned char *buf;

	admin = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	if (admin < 0)
		return -1;
	snprintf(cr.name, sizeof(cr.name), "kvbench-host-%d", getpid());
	memcpy(d.name, cr.name, sizeof(d.name));
	memcpy(sb.name, cr.name, sizeof(sb.name));
	mfd = memfd_create("kvbench", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0 || ftruncate(mfd, bytes) ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK) ||
	    ioctl(admin, KVARENA_IOC_ARENA_CREATE, &cr)) {
		*why = "no host arena";
		goto out_close;
	}
	sb.fd = mfd;
	if (ioctl(admin, KVARENA_IOC_ARENA_SET_BACKING, &sb)) {
		*why = "ARENA_SET_BACKING failed";
		goto out_destroy;
	}
	a = attach_host(cr.name, true);
	b = attach_host(cr.name, true);
	/* A module without cache domains: its ALLOC+FREE, for comparison. */
	if (a < 0 && errno == EINVAL)
		a = attach_host(cr.name, false);
	if (a < 0) {
		*why = "ATTACH to the host arena failed";
		goto out_destroy;
	}
	{
		struct kvarena_frames one = {
			.handles = (__u64)(unsigned long)h, .count = 1 };

		r->host1_ns = BEST_NS(reps, iters, {
			bad |= ioctl(a, KVARENA_IOC_ALLOC, &one);
			bad |= ioctl(a, KVARENA_IOC_FREE, &one);
		});
	}
	if (b < 0) {
		*why = "ATTACH with KVARENA_ATTACH_PRIVATE failed (a module without cache domains?)";
		r->have_host = !bad;
		goto out_destroy;
	}
	/* Each round clears the whole arena twice: a's frames for b, and back. */
	r->clear_ns = BEST_NS(reps, rounds, {
		bad |= take_all(a, h);
		bad |= take_all(b, h);
	}) / (2 * HOST_FRAMES);
	buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (buf == MAP_FAILED) {
		*why = "no memory for the memset() peer";
		goto out_destroy;
	}
	r->memset_ns = BEST_NS(reps, rounds, {
		memset(buf, (int)i_, bytes);
		__asm__ volatile("" : : "r"(buf) : "memory");
	}) / HOST_FRAMES;
	munmap(buf, bytes);
	if (bad)
		*why = "a host frame operation failed during the run";
	else
		r->have_host = r->have_clear = 1;
out_destroy:
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	/* The last clients' release may still be under way. */
	for (int t = 0; t < 100 && ioctl(admin, KVARENA_IOC_ARENA_DESTROY, &d) &&
	     errno == EBUSY; t++)
		usleep(10000);
out_close:
	if (mfd >= 0)
		close(mfd);
	close(admin);
	return r->have_host ? 0 : -1;
}

/* An arena of @nr frames of @fsize, backed by @mfd (-1: none); 0 or -1. */
static int make_arena(int admin, const char *name, uint32_t nr, uint32_t fsize,
		      int mfd)
{
	struct kvarena_arena_create cr = { .frame_size = fsize,
					   .nr_frames = nr,
					   .flags = mfd < 0 ?
						KVARENA_CREATE_NO_BACKING : 0 };
	struct kvarena_set_backing sb = { .nr_frames = nr, .fd = mfd };

	snprintf(cr.name, sizeof(cr.name), "%s", name);
	memcpy(sb.name, cr.name, sizeof(sb.name));
	if (ioctl(admin, KVARENA_IOC_ARENA_CREATE, &cr))
		return -1;
	return mfd < 0 ? 0 : ioctl(admin, KVARENA_IOC_ARENA_SET_BACKING, &sb);
}

static void destroy_arena(int admin, const char *name)
{
	struct kvarena_arena_destroy d = { 0 };

	snprintf(d.name, sizeof(d.name), "%s", name);
	/* The last clients' release may still be under way. */
	for (int t = 0; t < 100 && ioctl(admin, KVARENA_IOC_ARENA_DESTROY, &d) &&
	     errno == EBUSY; t++)
		usleep(10000);
}

/* Gang @gang over @n arenas named @gang-m<r>; 0 or -1. */
static int make_gang(int admin, const char *gang, int n)
{
	char names[KVARENA_GANG_MAX][KVARENA_NAME_LEN];
	struct kvarena_gang_create g = {
		.members = (__u64)(unsigned long)names, .nr_members = n };

	memset(names, 0, sizeof(names));
	for (int r = 0; r < n; r++)
		snprintf(names[r], KVARENA_NAME_LEN, "%.16s-m%d", gang, r);
	snprintf(g.name, sizeof(g.name), "%s", gang);
	return ioctl(admin, KVARENA_IOC_GANG_CREATE, &g) ? -1 : 0;
}

static void unmake_gang(int admin, const char *gang, int n)
{
	char name[KVARENA_NAME_LEN];

	destroy_arena(admin, gang);
	for (int r = 0; r < n; r++) {
		snprintf(name, sizeof(name), "%.16s-m%d", gang, r);
		destroy_arena(admin, name);
	}
}

/* ALLOC+FREE of one frame, @iters times, on client @fd: ns per pair. */
static double one_run(int fd, long iters, int *bad)
{
	__u64 h;
	struct kvarena_frames f = { .handles = (__u64)(unsigned long)&h,
				    .count = 1 };
	double t0 = now_ns();

	for (long i = 0; i < iters; i++) {
		*bad |= ioctl(fd, KVARENA_IOC_ALLOC, &f);
		*bad |= ioctl(fd, KVARENA_IOC_FREE, &f);
	}
	return (now_ns() - t0) / iters;
}

/* 64 ALLOC SQEs and 64 FREE SQEs, @rounds times: ns per frame. */
static double uring_rounds(struct io_uring *ring, int fd, long rounds,
			   int *bad)
{
	struct kvarena_frames one[BATCH];
	__u64 h[BATCH];
	double t0 = now_ns();
	int i;

	for (i = 0; i < BATCH; i++)
		one[i] = (struct kvarena_frames){
			.handles = (__u64)(unsigned long)&h[i], .count = 1 };
	for (long k = 0; k < rounds; k++) {
		for (i = 0; i < BATCH; i++)
			queue_cmd(ring, fd, KVARENA_IOC_ALLOC, &one[i]);
		*bad |= uring_run(ring, BATCH);
		for (i = 0; i < BATCH; i++)
			queue_cmd(ring, fd, KVARENA_IOC_FREE, &one[i]);
		*bad |= uring_run(ring, BATCH);
	}
	return (now_ns() - t0) / (rounds * BATCH);
}

/*
 * Solo client @solo and gang client @gang, measured in turn within each
 * repetition (best of @reps each), so that the machine's drift hits both,
 * and each first in every other repetition, so that going first or second
 * does not favour one.
 */
static int bench_pair(int solo, int gang, long iters, int reps, double *ns)
{
	struct io_uring ring;
	int bad = 0;

	ns[0] = ns[1] = ns[2] = ns[3] = 1e300;
	if (io_uring_queue_init(2 * BATCH, &ring, 0))
		return -1;
	for (int r = 0; r < reps; r++) {
		/* Every other repetition the second goes first. */
		int fd[2] = { solo, gang }, o = r & 1;
		double t;

		for (int i = 0; i < 2; i++) {
			t = one_run(fd[i ^ o], iters, &bad);
			ns[i ^ o] = t < ns[i ^ o] ? t : ns[i ^ o];
		}
		for (int i = 0; i < 2; i++) {
			t = uring_rounds(&ring, fd[i ^ o], iters / BATCH + 1,
					 &bad);
			ns[2 + (i ^ o)] = t < ns[2 + (i ^ o)] ?
					  t : ns[2 + (i ^ o)];
		}
	}
	io_uring_queue_exit(&ring);
	return bad ? -1 : 0;
}

static int attach_fd(const char *name)
{
	struct kvarena_attach at = { .label = "kvbench-gang" };
	int fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);

	snprintf(at.name, sizeof(at.name), "%s", name);
	if (fd >= 0 && ioctl(fd, KVARENA_IOC_ATTACH, &at)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* FRAME_FD of @h through @fd, mmap(), touch, munmap(); -1 on failure. */
static int map_touch(int fd, __u64 h)
{
	struct kvarena_frame_fd ff = { .handle = h };
	volatile char *p;

	if (ioctl(fd, KVARENA_IOC_FRAME_FD, &ff))
		return -1;
	p = mmap(NULL, ff.size, PROT_READ | PROT_WRITE, MAP_SHARED, ff.fd,
		 ff.offset);
	close(ff.fd);
	if (p == MAP_FAILED)
		return -1;
	p[0] = 1;
	munmap((void *)p, ff.size);
	return 0;
}

/*
 * Gangs: the client's frame operations against the solo arena's of the
 * same run, and what a rank pays to see a frame its client took.
 */
static int bench_gang(long iters, int reps, struct frames_result *r,
		      const char **why)
{
	char gang[KVARENA_NAME_LEN], name[KVARENA_NAME_LEN];
	int admin, fd = -1, rank = -1, mfd[3] = { -1, -1, -1 }, bad = 0;
	int solo;
	size_t bytes = (size_t)HOST_FRAMES * (64 << 10);
	__u64 h, hs;

	admin = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	if (admin < 0)
		return -1;
	snprintf(name, sizeof(name), "kvbench-gs-%d", getpid());
	if (make_arena(admin, name, ARENA_FRAMES, 64 << 10, -1)) {
		*why = "no solo arena";
		goto out;
	}
	solo = attach_fd(name);
	for (int k = 0; k < 3 && solo >= 0; k++) {
		int n = gang_sizes[k];
		double ns[4];

		snprintf(gang, sizeof(gang), "kvbench-g%d-%d", n, getpid());
		for (int m = 0; m < n; m++) {
			snprintf(name, sizeof(name), "%.16s-m%d", gang, m);
			bad |= make_arena(admin, name, ARENA_FRAMES, 64 << 10,
					  -1);
		}
		bad |= make_gang(admin, gang, n);
		fd = bad ? -1 : attach_fd(gang);
		if (fd >= 0 && !bench_pair(solo, fd, iters, reps, ns)) {
			r->gang_solo_ioctl1_ns[k] = ns[0];
			r->gang_ioctl1_ns[k] = ns[1];
			r->gang_solo_uring_ns[k] = ns[2];
			r->gang_uring_ns[k] = ns[3];
		} else {
			bad = 1;
		}
		if (fd >= 0)
			close(fd);
		unmake_gang(admin, gang, n);
		if (bad)
			break;
	}
	if (solo >= 0)
		close(solo);
	snprintf(name, sizeof(name), "kvbench-gs-%d", getpid());
	destroy_arena(admin, name);
	if (bad || solo < 0) {
		*why = "a gang frame operation failed";
		goto out;
	}
	r->have_gang = 1;

	/* A gang of 2 host members and a solo host arena, 64 KiB frames. */
	snprintf(gang, sizeof(gang), "kvbench-gh-%d", getpid());
	for (int m = 0; m < 3; m++) {
		mfd[m] = memfd_create("kvbench", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (mfd[m] < 0 || ftruncate(mfd[m], bytes) ||
		    fcntl(mfd[m], F_ADD_SEALS, F_SEAL_SHRINK))
			bad = 1;
		if (m < 2)
			snprintf(name, sizeof(name), "%.16s-m%d", gang, m);
		else
			snprintf(name, sizeof(name), "%.16s-solo", gang);
		bad |= make_arena(admin, name, HOST_FRAMES, 64 << 10, mfd[m]);
	}
	bad |= make_gang(admin, gang, 2);
	if (!bad) {
		struct kvarena_attach at = { .label = "kvbench-gang" };
		struct kvarena_gang_token tok = { 0 };
		struct kvarena_join j = { .rank = 1 };
		struct kvarena_frames f = { .handles = (__u64)(unsigned long)&h,
					    .count = 1 };
		struct kvarena_frames fs = {
			.handles = (__u64)(unsigned long)&hs, .count = 1 };

		memcpy(at.name, gang, sizeof(at.name));
		fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
		rank = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
		bad = fd < 0 || rank < 0 || ioctl(fd, KVARENA_IOC_ATTACH, &at) ||
		      ioctl(fd, KVARENA_IOC_GANG_TOKEN, &tok);
		memcpy(j.name, gang, sizeof(j.name));
		j.client_id = at.client_id;
		j.token = tok.token;
		bad = bad || ioctl(rank, KVARENA_IOC_JOIN, &j) ||
		      ioctl(fd, KVARENA_IOC_ALLOC, &f);
		snprintf(name, sizeof(name), "%.16s-solo", gang);
		solo = bad ? -1 : attach_fd(name);
		bad = bad || solo < 0 || ioctl(solo, KVARENA_IOC_ALLOC, &fs);
		/*
		 * A step: the rank maps the frame its client holds, the client
		 * frees it and takes one again; the solo client the same with
		 * its own.  In turn, best of @reps each.
		 */
		r->rank_map_ns = r->solo_map_ns = 1e300;
		for (int k = 0; !bad && k < reps; k++) {
			long n = iters / 16 + 1;
			double t0 = now_ns(), t;

			for (long i = 0; i < n; i++) {
				bad |= map_touch(rank, h);
				bad |= ioctl(fd, KVARENA_IOC_FREE, &f);
				bad |= ioctl(fd, KVARENA_IOC_ALLOC, &f);
			}
			t = (now_ns() - t0) / n;
			r->rank_map_ns = t < r->rank_map_ns ? t : r->rank_map_ns;
			t0 = now_ns();
			for (long i = 0; i < n; i++) {
				bad |= map_touch(solo, hs);
				bad |= ioctl(solo, KVARENA_IOC_FREE, &fs);
				bad |= ioctl(solo, KVARENA_IOC_ALLOC, &fs);
			}
			t = (now_ns() - t0) / n;
			r->solo_map_ns = t < r->solo_map_ns ? t : r->solo_map_ns;
		}
		if (solo >= 0)
			close(solo);
		solo = -1;
		r->have_rank = !bad;
	}
	if (!r->have_rank)
		*why = "the rank's mapping failed";
	if (fd >= 0)
		close(fd);
	if (rank >= 0)
		close(rank);
	unmake_gang(admin, gang, 2);
	snprintf(name, sizeof(name), "%.16s-solo", gang);
	destroy_arena(admin, name);
out:
	for (int m = 0; m < 3; m++)
		if (mfd[m] >= 0)
			close(mfd[m]);
	close(admin);
	return r->have_gang ? 0 : -1;
}

/* ALLOC 64 + FREE 64 on client @fd, @rounds times: ns per frame. */
static double batch_run(int fd, long rounds, int *bad)
{
	__u64 h[BATCH];
	struct kvarena_frames f = { .handles = (__u64)(unsigned long)h,
				    .count = BATCH };
	double t0 = now_ns();

	for (long i = 0; i < rounds; i++) {
		*bad |= ioctl(fd, KVARENA_IOC_ALLOC, &f);
		*bad |= ioctl(fd, KVARENA_IOC_FREE, &f);
	}
	return (now_ns() - t0) / (rounds * BATCH);
}

/* Write @text to the file at @path; 0 or -1. */
static int put_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = -1;

	if (fd < 0)
		return -1;
	if (write(fd, text, strlen(text)) == (ssize_t)strlen(text))
		ret = 0;
	close(fd);
	return ret;
}

#define DMEM_PARAM	"/sys/module/kvarena/parameters/dmem"
#define CGROUP_ROOT	"/sys/fs/cgroup"

/*
 * dmem: the same frame operations on an arena that charges the dmem
 * cgroup controller and on one that does not (made with the module's
 * parameter off, which is put back as it was), in turn.  A second
 * uncharged arena measured the same way against the first is the
 * control: its ratios are the benchmark's own spread, what the charging
 * ratios must be read against.  The benchmark runs in a cgroup of its own
 * under the root, as a tenant would.
 */
static int bench_dmem(long iters, int reps, struct frames_result *r,
		      const char **why)
{
	struct kvarena_version v = { 0 };
	char on_name[KVARENA_NAME_LEN], off_name[KVARENA_NAME_LEN];
	char ctl_name[KVARENA_NAME_LEN];
	char cg[128], procs[160], pid[32], prev[8] = "Y";
	int admin, on = -1, off = -1, ctl = -1, bad = 0, fd;
	bool in_cg = false;
	double ns[4], cns[4], batch[3];
	ssize_t n;

	admin = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	if (admin < 0) {
		*why = "no /dev/kvarena";
		return -1;
	}
	if (ioctl(admin, KVARENA_IOC_VERSION, &v) ||
	    !(v.features & KVARENA_FEAT_DMEM)) {
		*why = "kvarena.ko charges no dmem cgroup on this kernel (CONFIG_CGROUP_DMEM)";
		close(admin);
		return -1;
	}
	fd = open(DMEM_PARAM, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, prev, sizeof(prev) - 1);
	if (fd >= 0)
		close(fd);
	if (n < 1) {
		*why = "cannot read " DMEM_PARAM;
		close(admin);
		return -1;
	}
	prev[1] = '\0';
	snprintf(on_name, sizeof(on_name), "kvbench-dm-%d", getpid());
	snprintf(off_name, sizeof(off_name), "kvbench-nodm-%d", getpid());
	snprintf(ctl_name, sizeof(ctl_name), "kvbench-ctl-%d", getpid());
	bad |= put_file(DMEM_PARAM, "Y");
	bad |= make_arena(admin, on_name, ARENA_FRAMES, 64 << 10, -1);
	bad |= put_file(DMEM_PARAM, "N");
	bad |= make_arena(admin, off_name, ARENA_FRAMES, 64 << 10, -1);
	bad |= make_arena(admin, ctl_name, ARENA_FRAMES, 64 << 10, -1);
	put_file(DMEM_PARAM, prev);
	if (bad) {
		*why = "the three arenas could not be made (root, and the module's dmem parameter)";
		goto out;
	}
	snprintf(cg, sizeof(cg), CGROUP_ROOT "/kvbench-%d", getpid());
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	snprintf(pid, sizeof(pid), "%d", getpid());
	if (access(CGROUP_ROOT "/cgroup.controllers", F_OK))
		mount("cgroup2", CGROUP_ROOT, "cgroup2", 0, NULL);
	put_file(CGROUP_ROOT "/cgroup.subtree_control", "+dmem");
	in_cg = !mkdir(cg, 0755) && !put_file(procs, pid);
	on = attach_fd(on_name);
	off = attach_fd(off_name);
	ctl = attach_fd(ctl_name);
	/*
	 * Batches of 64 each way, in turn, each arena first in one
	 * repetition of three: one charge per ALLOC command.
	 */
	batch[0] = batch[1] = batch[2] = 1e300;
	for (int k = 0; on >= 0 && off >= 0 && ctl >= 0 && k < reps; k++) {
		const int fds[3] = { off, on, ctl };

		for (int i = 0; i < 3; i++) {
			int j = (i + k) % 3;
			double t = batch_run(fds[j], iters / BATCH + 1, &bad);

			batch[j] = t < batch[j] ? t : batch[j];
		}
	}
	if (on < 0 || off < 0 || ctl < 0 || bad ||
	    bench_pair(off, on, iters, reps, ns) ||
	    bench_pair(off, ctl, iters, reps, cns)) {
		*why = "a frame operation failed";
		bad = 1;
	} else {
		r->plain_batch_ns = batch[0];
		r->dmem_batch_ns = batch[1];
		r->control[2] = batch[2] / batch[0];
		r->control[0] = cns[1] / cns[0];
		r->control[1] = cns[3] / cns[2];
		r->plain_ioctl1_ns = ns[0];
		r->dmem_ioctl1_ns = ns[1];
		r->plain_uring_ns = ns[2];
		r->dmem_uring_ns = ns[3];
		r->have_dmem = in_cg;
		if (!in_cg)
			*why = "no cgroup of its own could be made";
	}
	if (on >= 0)
		close(on);
	if (off >= 0)
		close(off);
	if (ctl >= 0)
		close(ctl);
	if (in_cg)
		put_file(CGROUP_ROOT "/cgroup.procs", pid);
out:
	destroy_arena(admin, on_name);
	destroy_arena(admin, off_name);
	destroy_arena(admin, ctl_name);
	rmdir(cg);
	close(admin);
	return r->have_dmem ? 0 : -1;
}

static void print_dmem(const struct frames_result *r)
{
	printf("dmem cgroup charging: the same commands on an arena that does not charge\n");
	printf("  %-22s %10.1f ns   %5.2fx without dmem (%.1f ns)\n",
	       "dmem, ioctl x1", r->dmem_ioctl1_ns,
	       r->dmem_ioctl1_ns / r->plain_ioctl1_ns, r->plain_ioctl1_ns);
	printf("  %-22s %10.1f ns   %5.2fx without dmem (%.1f ns), per frame\n",
	       "dmem, io_uring 64 SQEs", r->dmem_uring_ns,
	       r->dmem_uring_ns / r->plain_uring_ns, r->plain_uring_ns);
	printf("  %-22s %10.1f ns   %5.2fx without dmem (%.1f ns), per frame\n",
	       "dmem, ioctl x64 batch", r->dmem_batch_ns,
	       r->dmem_batch_ns / r->plain_batch_ns, r->plain_batch_ns);
	printf("  %-22s %5.2fx x1, %5.2fx io_uring, %5.2fx batch: a second\n"
	       "  %-22s uncharged arena against the first, the same way\n",
	       "control", r->control[0], r->control[1], r->control[2], "");
}

static void json_dmem(const struct frames_result *r)
{
	if (!r->have_dmem)
		return;
	printf(",\"dmem_ioctl1_ns\":%.1f,\"dmem_vs_plain_ioctl1\":%.3f,"
	       "\"dmem_uring_batch%d_ns\":%.1f,\"dmem_vs_plain_uring\":%.3f,"
	       "\"dmem_ioctl_batch%d_ns\":%.1f,\"dmem_vs_plain_batch\":%.3f",
	       r->dmem_ioctl1_ns, r->dmem_ioctl1_ns / r->plain_ioctl1_ns, BATCH,
	       r->dmem_uring_ns, r->dmem_uring_ns / r->plain_uring_ns, BATCH,
	       r->dmem_batch_ns, r->dmem_batch_ns / r->plain_batch_ns);
	printf(",\"dmem_control_ioctl1\":%.3f,\"dmem_control_uring\":%.3f,"
	       "\"dmem_control_batch\":%.3f",
	       r->control[0], r->control[1], r->control[2]);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kvbench frames [--json] [--iters N] [--reps N] [--dmem]\n"
		"  Frame ALLOC+FREE cost: embedded core, ioctl, batched ioctl and\n"
		"  io_uring, with ratios to a null syscall measured in the same run.\n"
		"  The device paths need /dev/kvarena and CAP_SYS_ADMIN.\n"
		"  --dmem: only the dmem cgroup controller's cost (ALLOC+FREE with\n"
		"  charging against without, same run).\n");
}

int kvbench_frames_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json",  no_argument,       NULL, 'j' },
		{ "iters", required_argument, NULL, 'i' },
		{ "reps",  required_argument, NULL, 'r' },
		{ "dmem",  no_argument,       NULL, 'd' },
		{ "help",  no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct frames_result r = { 0 };
	const char *why = NULL;
	long iters = 20000;
	int reps = 5, json = 0, only_dmem = 0, c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'i': iters = strtol(optarg, NULL, 0); break;
		case 'r': reps = atoi(optarg); break;
		case 'd': only_dmem = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (iters < BATCH || reps < 1) {
		fprintf(stderr, "kvbench frames: --iters must be >= %d and --reps >= 1\n",
			BATCH);
		return 2;
	}

	r.null_syscall_ns = BEST_NS(reps, iters, syscall(SYS_getppid));
	if (only_dmem) {
		if (bench_dmem(iters, reps, &r, &why)) {
			fprintf(stderr, "kvbench frames: dmem: %s\n", why);
			return 1;
		}
		if (json) {
			printf("{\"kind\":\"frames\",\"null_syscall_ns\":%.1f",
			       r.null_syscall_ns);
			json_dmem(&r);
			printf("}\n");
		} else {
			print_dmem(&r);
		}
		return 0;
	}
	if (bench_embedded(iters, reps, &r)) {
		fprintf(stderr, "kvbench frames: embedded core setup failed\n");
		return 1;
	}
	if (!bench_device(iters, reps, &r, &why)) {
		const char *gwhy = NULL;

		const char *dwhy = NULL;

		bench_host(iters, reps, &r, &why);
		if (bench_gang(iters, reps, &r, &gwhy) || !r.have_rank)
			fprintf(stderr, "kvbench frames: gangs: %s\n", gwhy);
		bench_dmem(iters, reps, &r, &dwhy);
		r.dmem_why = dwhy;
	}

	if (json) {
		printf("{\"kind\":\"frames\",\"null_syscall_ns\":%.1f,"
		       "\"embedded_ns\":%.1f", r.null_syscall_ns,
		       r.embedded_ns);
		if (r.have_device)
			printf(",\"ioctl1_ns\":%.1f,\"ioctl_batch%d_ns\":%.1f,"
			       "\"uring_batch%d_ns\":%.1f,"
			       "\"lib_ioctl_ns\":%.1f,\"lib_uring_ns\":%.1f,"
			       "\"ioctl1_vs_2_syscalls\":%.3f",
			       r.ioctl1_ns, BATCH, r.ioctl_batch_ns, BATCH,
			       r.uring_batch_ns, r.lib_ioctl_ns,
			       r.lib_uring_ns,
			       r.ioctl1_ns / (2 * r.null_syscall_ns));
		if (r.have_host)
			printf(",\"host1_ns\":%.1f,\"host1_vs_ioctl1\":%.3f",
			       r.host1_ns, r.host1_ns / r.ioctl1_ns);
		if (r.have_clear)
			printf(",\"cleared_frame_ns\":%.1f,"
			       "\"cleared_frames_per_s\":%.0f,"
			       "\"memset_frame_ns\":%.1f,"
			       "\"clear_vs_memset\":%.3f",
			       r.clear_ns, 1e9 / r.clear_ns, r.memset_ns,
			       r.memset_ns / r.clear_ns);
		for (int k = 0; r.have_gang && k < 3; k++)
			printf(",\"gang%d_ioctl1_ns\":%.1f,"
			       "\"gang%d_vs_solo_ioctl1\":%.3f,"
			       "\"gang%d_uring_batch%d_ns\":%.1f,"
			       "\"gang%d_vs_solo_uring\":%.3f",
			       gang_sizes[k], r.gang_ioctl1_ns[k], gang_sizes[k],
			       r.gang_ioctl1_ns[k] / r.gang_solo_ioctl1_ns[k],
			       gang_sizes[k], BATCH, r.gang_uring_ns[k],
			       gang_sizes[k],
			       r.gang_uring_ns[k] / r.gang_solo_uring_ns[k]);
		if (r.have_rank)
			printf(",\"rank_map_ns\":%.1f,\"solo_map_ns\":%.1f,"
			       "\"rank_vs_solo_map\":%.3f",
			       r.rank_map_ns, r.solo_map_ns,
			       r.rank_map_ns / r.solo_map_ns);
		json_dmem(&r);
		printf("}\n");
		return 0;
	}
	printf("frame ALLOC+FREE, one frame each way (best of %d x %ld)\n",
	       reps, iters);
	printf("  %-22s %10.1f ns\n", "null syscall", r.null_syscall_ns);
	printf("  %-22s %10.1f ns   %5.2fx a null syscall\n",
	       "embedded (libkvarena)", r.embedded_ns,
	       r.embedded_ns / r.null_syscall_ns);
	if (!r.have_device) {
		printf("  device paths skipped: %s\n", why);
		return 0;
	}
	printf("  %-22s %10.1f ns   %5.2fx two null syscalls\n", "ioctl x1",
	       r.ioctl1_ns, r.ioctl1_ns / (2 * r.null_syscall_ns));
	printf("  %-22s %10.1f ns   %5.2fx ioctl x1, per frame\n",
	       "ioctl x64 batch", r.ioctl_batch_ns,
	       r.ioctl_batch_ns / r.ioctl1_ns);
	printf("  %-22s %10.1f ns   %5.2fx ioctl x1, per frame\n",
	       "io_uring 64 SQEs", r.uring_batch_ns,
	       r.uring_batch_ns / r.ioctl1_ns);
	printf("  %-22s %10.1f ns   %5.2fx ioctl x1\n", "libkvarena, ioctl",
	       r.lib_ioctl_ns, r.lib_ioctl_ns / r.ioctl1_ns);
	printf("  %-22s %10.1f ns   %5.2fx ioctl x1\n", "libkvarena, io_uring",
	       r.lib_uring_ns, r.lib_uring_ns / r.ioctl1_ns);
	if (!r.have_host) {
		printf("  host arena skipped: %s\n", why);
		return 0;
	}
	printf("  %-22s %10.1f ns   %5.2fx ioctl x1 (one domain: no clearing)\n",
	       "host x1", r.host1_ns, r.host1_ns / r.ioctl1_ns);
	if (!r.have_clear) {
		printf("  clearing skipped: %s\n", why);
		return 0;
	}
	printf("frames of %u MiB cleared between two cache domains\n",
	       HOST_FSIZE >> 20);
	printf("  %-22s %10.1f ns   %.0f frames/s, %.2f GB/s\n", "cleared",
	       r.clear_ns, 1e9 / r.clear_ns, HOST_FSIZE / r.clear_ns);
	printf("  %-22s %10.1f ns   cleared at %.2fx memset()'s speed\n",
	       "memset, one frame", r.memset_ns, r.memset_ns / r.clear_ns);
	if (!r.have_gang)
		return 0;
	printf("gangs: one ALLOC takes a frame in every member\n");
	for (int k = 0; k < 3; k++) {
		char label[32];

		snprintf(label, sizeof(label), "gang of %d, ioctl x1",
			 gang_sizes[k]);
		printf("  %-22s %10.1f ns   %5.2fx the solo arena's\n", label,
		       r.gang_ioctl1_ns[k],
		       r.gang_ioctl1_ns[k] / r.gang_solo_ioctl1_ns[k]);
		snprintf(label, sizeof(label), "gang of %d, 64 SQEs",
			 gang_sizes[k]);
		printf("  %-22s %10.1f ns   %5.2fx the solo arena's, per frame\n",
		       label, r.gang_uring_ns[k],
		       r.gang_uring_ns[k] / r.gang_solo_uring_ns[k]);
	}
	if (r.have_rank)
		printf("  %-22s %10.1f ns   %5.2fx a solo client mapping its own"
		       " (FRAME_FD, mmap, touch, FREE, ALLOC)\n", "rank maps a frame",
		       r.rank_map_ns, r.rank_map_ns / r.solo_map_ns);
	if (r.have_dmem)
		print_dmem(&r);
	else if (r.dmem_why)
		printf("dmem cgroup charging skipped: %s\n", r.dmem_why);
	return 0;
}
