// SPDX-License-Identifier: GPL-2.0
/*
 * kvbench tier: what an arena's lower tier costs (ARENA_SET_TIER, TIER,
 * PROMOTE) against memcpy() of the same bytes, measured in the same run.
 *
 * Two host arenas of --frame-size frames: an upper one of --mib MiB and a
 * lower one of --lower-mib MiB below it, demoting whatever is cached (free
 * target: every frame).  The agent is a process of its own, as kvarenactl
 * agent is, and does what it does with raw ioctls: TIER takes of up to 64
 * jobs, each job's two frames mapped through FRAME_FD (the source
 * read-only, the destination writable), memcpy(), munmap(), TIER DONE.
 * A client publishes the --mib MiB in frames filled with data, each round
 * under keys of its own, and:
 *
 *   memcpy      memcpy() of as many bytes between two mappings of memfds
 *               whose pages are there (MAP_POPULATE): the copy itself,
 *               the floor of both directions
 *   map+copy    per frame, mmap(MAP_POPULATE) of a frame's bytes of each
 *               memfd, memcpy(), munmap() of both: a copy through fresh
 *               mappings of shmem, as the agent makes per job
 *   demote      from the client's FREE of its published frames (they
 *               become cached, and the upper arena wants them down) until
 *               the agent has given the last of them back done: the upper
 *               arena has them free, the lower one cached
 *   promote     PROMOTE of the keys (256 a call), the agent copying
 *               meanwhile, until the call returns the frames held
 *
 * each the best of --reps rounds, in turns; then the latency of PROMOTE of
 * one frame (median and p99 of --lat-reps, the agent asleep before each)
 * against memcpy() of one frame, in turns.  Where the agent's time goes
 * (FRAME_FD, mmap, the faults that map the source and the destination,
 * the copy, munmap, the TIER calls) is measured in the agent and shown
 * per frame; faults are its minor faults (getrusage).  It touches each
 * frame before the memcpy() to tell faults from copying: one read of the
 * source, one write per page of the destination.
 *
 * The break-even: promoting F frames costs a call's own time (the
 * one-frame latency less one frame's copy at the promote bandwidth) plus
 * F frames at that bandwidth; recomputing them costs their tokens at
 * --prefill-tps.  The geometry is Llama-3-8B's (--bytes-per-token, 128
 * KiB in fp16); the default prefill rate is kvsim's timing model's (400
 * TFLOP/s, about 40% of an H100/H200's dense bf16 peak, over 2 x 8.03 B
 * parameters a token: Documentation/kvsim.rst), not a measurement of this
 * machine.  The copies here are host to host: a GPU arena's promotions
 * copy over PCIe instead.
 *
 * --file PATH: the lower arena is a file arena (KVARENA_MEM_FILE) on a
 * new file PATH, and the agent is kvarenactl agent itself (--agent), so
 * that what is measured is the tool that runs; the peers add the file's
 * own write and read of as many frames (PATH.peer), by the agent's file
 * engine (tools/common/fileio.c), against which demote and promote are
 * put.  The agent's time is not broken down then.  Both files go after.
 *
 * Needs /dev/kvarena and CAP_SYS_ADMIN: the arenas (kvbench-tu-<pid>,
 * kvbench-tl-<pid>) are made and destroyed here.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/kvarena.h>

#include "fileio.h"
#include "kvbench.h"

#define AGENT_BATCH	64u	/* jobs one take asks for (kvarenactl agent's) */
#define AGENT_SLICE_MS	100u	/* a take's wait: the stop flag is seen */
#define PROMOTE_CALL	256u	/* keys one PROMOTE brings up */
#define WAIT_S		120.0	/* longest wait for the agent or the arena */

/* The default prefill rate: kvsim's timing model (Documentation/kvsim.rst). */
#define GPU_TFLOPS	400.0
#define LLAMA3_8B_PARAMS 8.03026e9
#define DEFAULT_PREFILL_TPS (GPU_TFLOPS * 1e12 / (2 * LLAMA3_8B_PARAMS))
#define DEFAULT_PREFILL_SRC \
	"kvsim's timing model, 400 TFLOP/s over 2 x 8.03 B parameters a token"

/* Where the agent's time goes. */
enum {
	PH_FD,		/* FRAME_FD of both frames, and closing the fds */
	PH_MMAP,	/* mmap() of both */
	PH_FAULT_SRC,	/* the first read of the source */
	PH_FAULT_DST,	/* a write to each page of the destination */
	PH_COPY,	/* memcpy() */
	PH_MUNMAP,	/* munmap() of both */
	PH_TAKE,	/* TIER takes that gave jobs, from the window's start */
	PH_DONE,	/* TIER DONE */
	PH_NR
};

static const char *const ph_name[PH_NR] = {
	"FRAME_FD x2", "mmap x2", "fault: source", "fault: destination",
	"memcpy", "munmap x2", "TIER take", "TIER done",
};

static const char *const ph_json[PH_NR] = {
	"frame_fd_s", "mmap_s", "fault_src_s", "fault_dst_s", "memcpy_s",
	"munmap_s", "take_s", "done_s",
};

struct phases {
	double s[PH_NR];
	uint64_t jobs;
	uint64_t flt_src, flt_dst;	/* minor faults */
};

/* Shared by the benchmark and its agent (MAP_SHARED | MAP_ANONYMOUS). */
struct shared {
	int stop;		/* the agent stops at its next take */
	uint64_t goal;		/* demotions at which to say so; 0: none */
	uint64_t win_ns;	/* when the window being measured began */
	uint64_t goal_ns;	/* when the demotions reached @goal */
	uint64_t demoted, promoted, failed;
	struct phases ph[2];	/* demotions, promotions */
};

struct tier_opts {
	uint64_t frame_size;
	uint32_t nr;		/* frames moved, and of the upper arena */
	uint32_t lower_nr;	/* frames of the lower arena */
	int reps, lat_reps;
	uint64_t bytes_per_token;
	double prefill_tps;
	bool prefill_given;
	const char *file;	/* the lower arena a file arena here */
	const char *agent;	/* kvarenactl, its agent then */
};

struct lat {
	double med, p99;
};

struct tier_result {
	uint64_t bytes;
	double memcpy_s, map_s, demote_s, promote_s;
	double fwrite_s, fread_s;	/* --file: the file's own speed */
	bool direct;			/* --file: with O_DIRECT */
	struct lat promote1, memcpy1, map1;
	struct phases ph[2];	/* summed over the rounds' windows */
	double window_s[2];	/* the windows' time, summed */
	/* The break-even. */
	uint32_t tokens_per_frame;
	double call_s;		/* a PROMOTE's own time */
	double copy_frame_s;	/* a frame at the promote bandwidth */
	double recompute_frame_s;
	uint64_t even_frames;	/* 0: never */
};

/* ---- the ioctls ---------------------------------------------------------- */

static int xioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static int kv_open(void)
{
	return open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
}

static int attach(int fd, const char *name, const char *label)
{
	struct kvarena_attach at = { 0 };

	snprintf(at.name, sizeof(at.name), "%s", name);
	snprintf(at.label, sizeof(at.label), "%s", label);
	return xioctl(fd, KVARENA_IOC_ATTACH, &at);
}

static int frames_op(int fd, unsigned long cmd, uint64_t *h, uint32_t n)
{
	struct kvarena_frames f = { .handles = (uint64_t)(uintptr_t)h,
				    .count = n };
	int err = xioctl(fd, cmd, &f);

	return err ? err : f.nr_done == n ? 0 : -EIO;
}

static int stat_arena(int fd, const char *name, struct kvarena_stat *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	return xioctl(fd, KVARENA_IOC_STAT, s);
}

static int frame_fd(int fd, uint64_t h, struct kvarena_frame_fd *ff)
{
	memset(ff, 0, sizeof(*ff));
	ff->handle = h;
	return xioctl(fd, KVARENA_IOC_FRAME_FD, ff);
}

static void *map_frame(int fd, uint64_t h, int prot, uint64_t size)
{
	struct kvarena_frame_fd ff;
	void *p;

	if (frame_fd(fd, h, &ff))
		return NULL;
	p = ff.size == size ? mmap(NULL, size, prot, MAP_SHARED, ff.fd,
				   (off_t)ff.offset) : MAP_FAILED;
	close(ff.fd);
	return p == MAP_FAILED ? NULL : p;
}

static int sealed_memfd(const char *name, uint64_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd >= 0 && (ftruncate(fd, (off_t)size) ||
			fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW))) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * A host arena of @nr frames over a memfd of its own: the memfd or -errno;
 * *@made once the arena exists.
 */
/*
 * A new file of @size bytes at @path, preallocated where the filesystem
 * can: the fd, or -errno (-EEXIST: kvbench makes the file and removes it,
 * so it never takes one that is there).
 */
static int new_file(const char *path, uint64_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	if (fallocate(fd, 0, 0, (off_t)size) &&
	    (errno != EOPNOTSUPP || ftruncate(fd, (off_t)size))) {
		int err = -errno;

		close(fd);
		unlink(path);
		return err;
	}
	return fd;
}

/* A host arena, or with @file a file arena backed by a new @file. */
static int make_arena(int admin, const char *name, uint64_t frame_size,
		      uint32_t nr, const char *file, bool *made)
{
	struct kvarena_arena_create c = {
		.frame_size = frame_size, .nr_frames = nr,
		.mem_kind = file ? KVARENA_MEM_FILE : KVARENA_MEM_HOST,
	};
	struct kvarena_set_backing b = { .nr_frames = nr };
	int err, mfd;

	snprintf(c.name, sizeof(c.name), "%s", name);
	err = xioctl(admin, KVARENA_IOC_ARENA_CREATE, &c);
	if (err)
		return err;
	*made = true;
	mfd = file ? new_file(file, frame_size * nr) :
		     sealed_memfd(name, frame_size * nr);
	if (mfd < 0)
		return file ? mfd : -ENOMEM;
	memcpy(b.name, c.name, sizeof(b.name));
	b.fd = mfd;
	err = xioctl(admin, KVARENA_IOC_ARENA_SET_BACKING, &b);
	if (err) {
		close(mfd);
		if (file)
			unlink(file);
		return err;
	}
	return mfd;
}

/* Destroy @name; the agent's files may take a moment to go. */
static int destroy(int admin, const char *name)
{
	struct kvarena_arena_destroy d = { 0 };
	int err = 0;

	snprintf(d.name, sizeof(d.name), "%s", name);
	for (int i = 0; i < 1000; i++) {
		err = xioctl(admin, KVARENA_IOC_ARENA_DESTROY, &d);
		if (err != -EBUSY)
			break;
		usleep(10000);
	}
	return err;
}

/* ---- the agent ------------------------------------------------------------ */

/* CLOCK_MONOTONIC in ns: kvb_now_s()'s clock, shared by both processes. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct agent {
	struct shared *sh;
	int up, lo;
	long page;
};

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* Add the time since *@t to @ph's phase @i; *@t moves on. */
static void lap(struct phases *ph, int i, double *t)
{
	double now = kvb_now_s();

	ph->s[i] += now - *t;
	*t = now;
}

/* Job @j's copy, as kvarenactl agent makes it: its result, 0 or -errno. */
static int agent_copy(struct agent *ag, const struct kvarena_tier_job *j,
		      struct phases *ph)
{
	bool down = j->op == KVARENA_TIER_DEMOTE;
	struct kvarena_frame_fd sf, df;
	char *src, *dst;
	double t = kvb_now_s();
	long f0, f1, f2;
	int err;

	if (!down && j->op != KVARENA_TIER_PROMOTE)
		return -EINVAL;
	err = frame_fd(down ? ag->up : ag->lo, down ? j->upper : j->lower,
		       &sf);
	if (err)
		return err;
	err = frame_fd(down ? ag->lo : ag->up, down ? j->lower : j->upper,
		       &df);
	if (err) {
		close(sf.fd);
		return err;
	}
	lap(ph, PH_FD, &t);
	src = mmap(NULL, sf.size, PROT_READ, MAP_SHARED, sf.fd,
		   (off_t)sf.offset);
	dst = mmap(NULL, df.size, PROT_READ | PROT_WRITE, MAP_SHARED, df.fd,
		   (off_t)df.offset);
	lap(ph, PH_MMAP, &t);
	close(sf.fd);
	close(df.fd);
	lap(ph, PH_FD, &t);
	if (src == MAP_FAILED || dst == MAP_FAILED || sf.size != df.size) {
		err = src == MAP_FAILED || dst == MAP_FAILED ? -ENOMEM : -EINVAL;
		goto out;
	}
	f0 = minor_faults();
	t = kvb_now_s();
	(void)*(volatile const char *)src;
	lap(ph, PH_FAULT_SRC, &t);
	f1 = minor_faults();
	t = kvb_now_s();
	for (uint64_t off = 0; off < df.size; off += (uint64_t)ag->page)
		((volatile char *)dst)[off] = 0;
	lap(ph, PH_FAULT_DST, &t);
	f2 = minor_faults();
	ph->flt_src += (uint64_t)(f1 - f0);
	ph->flt_dst += (uint64_t)(f2 - f1);
	t = kvb_now_s();
	memcpy(dst, src, sf.size);
	lap(ph, PH_COPY, &t);
	ph->jobs++;
out:
	if (src != MAP_FAILED)
		munmap(src, sf.size);
	if (dst != MAP_FAILED)
		munmap(dst, df.size);
	lap(ph, PH_MUNMAP, &t);
	return err;
}

/* The agent's life: take, copy, give back, until told to stop. */
static int agent_run(struct shared *sh, const char *upper, const char *lower,
		     int wfd)
{
	struct agent ag = { .sh = sh, .page = sysconf(_SC_PAGESIZE) };
	struct kvarena_tier_job jobs[AGENT_BATCH];
	char c = 'R';

	ag.up = kv_open();
	ag.lo = kv_open();
	if (ag.up < 0 || ag.lo < 0 || attach(ag.up, upper, "kvbench-agent") ||
	    attach(ag.lo, lower, "kvbench-agent"))
		return 1;
	if (write(wfd, &c, 1) != 1)
		return 1;
	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		struct kvarena_tier t = {
			.jobs = (uint64_t)(uintptr_t)jobs,
			.count = AGENT_BATCH, .timeout_ms = AGENT_SLICE_MS,
			.lower_fd = ag.lo,
		};
		double t0 = kvb_now_s(), t1, w0;
		struct phases *ph;
		uint64_t goal;
		uint32_t ok = 0, down = 0, n;
		int err;

		memset(jobs, 0, sizeof(jobs));
		err = xioctl(ag.up, KVARENA_IOC_TIER, &t);
		if (err == -EINTR)
			continue;
		if (err) {
			fprintf(stderr, "kvbench tier: agent: TIER: %s\n",
				strerror(-err));
			return 1;
		}
		n = t.nr_done;
		if (!n)
			continue;
		t1 = kvb_now_s();
		/* A take that waited: its time counts from the window's start. */
		w0 = (double)__atomic_load_n(&sh->win_ns, __ATOMIC_ACQUIRE) *
		     1e-9;
		ph = &sh->ph[jobs[0].op == KVARENA_TIER_PROMOTE];
		ph->s[PH_TAKE] += t1 - (w0 > t0 ? w0 : t0);
		for (uint32_t i = 0; i < n; i++) {
			jobs[i].result = agent_copy(&ag, &jobs[i],
				&sh->ph[jobs[i].op == KVARENA_TIER_PROMOTE]);
			ok += !jobs[i].result;
			down += !jobs[i].result &&
				jobs[i].op == KVARENA_TIER_DEMOTE;
		}
		t = (struct kvarena_tier){ .jobs = (uint64_t)(uintptr_t)jobs,
					   .count = n,
					   .flags = KVARENA_TIER_DONE };
		t1 = kvb_now_s();
		err = xioctl(ag.up, KVARENA_IOC_TIER, &t);
		ph->s[PH_DONE] += kvb_now_s() - t1;
		if (err) {
			fprintf(stderr, "kvbench tier: agent: TIER DONE: %s\n",
				strerror(-err));
			return 1;
		}
		__atomic_add_fetch(&sh->failed, n - ok, __ATOMIC_RELEASE);
		__atomic_add_fetch(&sh->promoted, ok - down, __ATOMIC_RELEASE);
		goal = __atomic_load_n(&sh->goal, __ATOMIC_ACQUIRE);
		if (__atomic_add_fetch(&sh->demoted, down, __ATOMIC_ACQ_REL) >=
		    goal && goal) {
			__atomic_store_n(&sh->goal_ns, now_ns(),
					 __ATOMIC_RELEASE);
			__atomic_store_n(&sh->goal, 0, __ATOMIC_RELEASE);
			c = 'D';
			if (write(wfd, &c, 1) != 1)
				return 1;
		}
		if (n != ok) {
			fprintf(stderr, "kvbench tier: agent: %u of %u copies failed\n",
				n - ok, n);
			return 1;
		}
	}
	return 0;
}

/* ---- the benchmark --------------------------------------------------------- */

struct bench {
	const struct tier_opts *o;
	struct tier_result *r;
	struct shared *sh;
	int admin, client, rfd;
	pid_t agent;
	char up[KVARENA_NAME_LEN], lo[KVARENA_NAME_LEN];
	uint64_t *h;			/* the client's frames */
	struct kvarena_prefix_entry *e;
	char *psrc, *pdst;		/* the memcpy peer's mappings */
	int msrc, mdst;			/* and their memfds */
	struct kvt_fio *fio;		/* --file: the file peer's I/O */
	int pfd;			/* and its file */
	char ppath[4096];
	const char **why;
};

static void key(uint8_t k[KVARENA_KEY_LEN], uint32_t round, uint32_t i)
{
	uint32_t w[3] = { (uint32_t)getpid(), round, i };

	memset(k, 0, KVARENA_KEY_LEN);
	memcpy(k, "kvbt", 4);
	memcpy(k + 4, w, sizeof(w));
}

static uint64_t tag(uint32_t round, uint32_t i)
{
	return 0x6b76627400000000ull ^ ((uint64_t)round << 20) ^ i;
}

static uint8_t fill_byte(uint32_t round, uint32_t i)
{
	return (uint8_t)(0x5a ^ (round * 37) ^ (i * 11));
}

/* Frame @i of round @round: its byte, and its tag at both ends. */
static int fill(struct bench *b, uint32_t round, uint32_t i)
{
	uint64_t fs = b->o->frame_size, t = tag(round, i);
	char *p = map_frame(b->client, b->h[i], PROT_READ | PROT_WRITE, fs);

	if (!p)
		return -1;
	memset(p, fill_byte(round, i), fs);
	memcpy(p, &t, sizeof(t));
	memcpy(p + fs - sizeof(t), &t, sizeof(t));
	munmap(p, fs);
	return 0;
}

static bool intact(struct bench *b, uint64_t h, uint32_t round, uint32_t i)
{
	uint64_t fs = b->o->frame_size, t = tag(round, i), a, z;
	char *p = map_frame(b->client, h, PROT_READ, fs);
	bool ok;

	if (!p)
		return false;
	memcpy(&a, p, sizeof(a));
	memcpy(&z, p + fs - sizeof(z), sizeof(z));
	ok = a == t && z == t && (uint8_t)p[fs / 2] == fill_byte(round, i) &&
	     (uint8_t)p[sizeof(t)] == fill_byte(round, i);
	munmap(p, fs);
	return ok;
}

/* The client's N frames, filled and published under round @round's keys. */
static int publish_round(struct bench *b, uint32_t round)
{
	uint32_t n = b->o->nr;
	struct kvarena_prefix p = { .entries = (uint64_t)(uintptr_t)b->e,
				    .count = n };

	*b->why = "ALLOC of the client's frames failed";
	if (frames_op(b->client, KVARENA_IOC_ALLOC, b->h, n))
		return -1;
	*b->why = "filling the client's frames failed";
	for (uint32_t i = 0; i < n; i++) {
		if (fill(b, round, i))
			return -1;
		memset(&b->e[i], 0, sizeof(b->e[i]));
		key(b->e[i].key, round, i);
		b->e[i].handle = b->h[i];
	}
	*b->why = "PUBLISH failed";
	if (xioctl(b->client, KVARENA_IOC_PUBLISH, &p) || p.nr_done != n)
		return -1;
	return 0;
}

/* Wait for the agent's byte: 0, or -1 (it stopped, or never said). */
static int agent_says(struct bench *b, char want)
{
	struct pollfd pfd = { .fd = b->rfd, .events = POLLIN };
	char c;

	if (poll(&pfd, 1, (int)(WAIT_S * 1000)) != 1 ||
	    read(b->rfd, &c, 1) != 1 || c != want) {
		*b->why = "the agent stopped, or did not copy in time";
		return -1;
	}
	return 0;
}

/* Wait until the upper arena is all free: what came up went down again. */
static int upper_settles(struct bench *b)
{
	double t0 = kvb_now_s();
	struct kvarena_stat s;

	while (kvb_now_s() - t0 < WAIT_S) {
		if (stat_arena(b->admin, b->up, &s))
			break;
		if (s.nr_free == b->o->nr)
			return 0;
		usleep(100);
	}
	*b->why = "the upper arena's frames did not come back free";
	return -1;
}

static void phases_add(struct phases *sum, const struct phases *now,
		       const struct phases *before)
{
	for (int i = 0; i < PH_NR; i++)
		sum->s[i] += now->s[i] - before->s[i];
	sum->jobs += now->jobs - before->jobs;
	sum->flt_src += now->flt_src - before->flt_src;
	sum->flt_dst += now->flt_dst - before->flt_dst;
}

static void window_begin(struct bench *b, int which, struct phases *before,
			 double *t0)
{
	uint64_t ns = now_ns();

	*before = b->sh->ph[which];
	*t0 = (double)ns * 1e-9;
	__atomic_store_n(&b->sh->win_ns, ns, __ATOMIC_RELEASE);
}

/*
 * --file: the client's frames go cached, and kvarenactl agent takes them
 * down; done when the upper arena has them all free again (looked at
 * every 50 us).
 */
static int demote_round_file(struct bench *b)
{
	struct tier_result *r = b->r;
	uint32_t n = b->o->nr;
	struct kvarena_stat su, sl;
	double t0 = kvb_now_s(), t;

	*b->why = "FREE of the client's frames failed";
	if (frames_op(b->client, KVARENA_IOC_FREE, b->h, n))
		return -1;
	*b->why = "the agent did not copy in time";
	for (;;) {
		if (stat_arena(b->admin, b->up, &su))
			return -1;
		t = kvb_now_s() - t0;
		if (su.nr_free == n)
			break;
		if (t > WAIT_S)
			return -1;
		usleep(50);
	}
	if (t < r->demote_s)
		r->demote_s = t;
	r->window_s[0] += t;
	*b->why = "after the demotions, the arenas are not as they should be";
	if (stat_arena(b->admin, b->lo, &sl) || su.nr_cached || su.nr_held ||
	    sl.nr_cached < n)
		return -1;
	return 0;
}

/* The client's frames go cached; the agent takes them down. */
static int demote_round(struct bench *b)
{
	struct tier_result *r = b->r;
	uint32_t n = b->o->nr;
	struct kvarena_stat su, sl;
	struct phases before;
	double t0, t;

	if (b->o->file)
		return demote_round_file(b);
	__atomic_store_n(&b->sh->goal,
			 __atomic_load_n(&b->sh->demoted, __ATOMIC_ACQUIRE) + n,
			 __ATOMIC_RELEASE);
	window_begin(b, 0, &before, &t0);
	*b->why = "FREE of the client's frames failed";
	if (frames_op(b->client, KVARENA_IOC_FREE, b->h, n))
		return -1;
	if (agent_says(b, 'D'))
		return -1;
	t = (double)__atomic_load_n(&b->sh->goal_ns, __ATOMIC_ACQUIRE) * 1e-9 -
	    t0;
	if (t < r->demote_s)
		r->demote_s = t;
	r->window_s[0] += t;
	phases_add(&r->ph[0], &b->sh->ph[0], &before);
	*b->why = "after the demotions, the arenas are not as they should be";
	if (stat_arena(b->admin, b->up, &su) || stat_arena(b->admin, b->lo, &sl))
		return -1;
	if (su.nr_free != n || su.nr_cached || su.nr_held || sl.nr_cached < n)
		return -1;
	return 0;
}

/* PROMOTE of @n keys of round @round from @first; their handles in b->h. */
static int promote(struct bench *b, uint32_t round, uint32_t first,
		   uint32_t n)
{
	for (uint32_t done = 0; done < n;) {
		uint32_t c = n - done < PROMOTE_CALL ? n - done : PROMOTE_CALL;
		struct kvarena_promote p = {
			.entries = (uint64_t)(uintptr_t)b->e, .count = c,
			.timeout_ms = (uint32_t)(WAIT_S * 1000),
		};
		int err;

		for (uint32_t i = 0; i < c; i++) {
			memset(&b->e[i], 0, sizeof(b->e[i]));
			key(b->e[i].key, round, first + done + i);
		}
		err = xioctl(b->client, KVARENA_IOC_PROMOTE, &p);
		if (err || p.nr_done != c) {
			/* What it holds goes with the client's file. */
			*b->why = err ? "PROMOTE failed" :
				  "PROMOTE brought up fewer keys than asked";
			return -1;
		}
		for (uint32_t i = 0; i < c; i++)
			b->h[done + i] = b->e[i].handle;
		done += c;
	}
	return 0;
}

static int promote_round(struct bench *b, uint32_t round)
{
	struct tier_result *r = b->r;
	uint32_t n = b->o->nr;
	struct phases before;
	double t0, t;

	window_begin(b, 1, &before, &t0);
	if (promote(b, round, 0, n))
		return -1;
	t = kvb_now_s() - t0;
	if (t < r->promote_s)
		r->promote_s = t;
	r->window_s[1] += t;
	phases_add(&r->ph[1], &b->sh->ph[1], &before);
	*b->why = "a promoted frame does not hold its bytes";
	for (uint32_t i = 0; i < n; i++)
		if (!intact(b, b->h[i], round, i))
			return -1;
	*b->why = "FREE of the promoted frames failed";
	if (frames_op(b->client, KVARENA_IOC_FREE, b->h, n))
		return -1;
	return upper_settles(b);
}

/* memcpy() of @bytes between the peer's mappings; its time. */
static double peer_memcpy(struct bench *b, uint64_t bytes)
{
	double t = kvb_now_s();

	memcpy(b->pdst, b->psrc, bytes);
	return kvb_now_s() - t;
}

/* Per frame: mmap(MAP_POPULATE) of both memfds' bytes, memcpy(), munmap(). */
static double peer_map_copy(struct bench *b, uint32_t frames)
{
	uint64_t fs = b->o->frame_size;
	double t = kvb_now_s();

	for (uint32_t i = 0; i < frames; i++) {
		void *s = mmap(NULL, fs, PROT_READ, MAP_SHARED | MAP_POPULATE,
			       b->msrc, (off_t)(i * fs));
		void *d = mmap(NULL, fs, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_POPULATE, b->mdst,
			       (off_t)(i * fs));

		if (s == MAP_FAILED || d == MAP_FAILED)
			return -1;
		memcpy(d, s, fs);
		munmap(s, fs);
		munmap(d, fs);
	}
	return kvb_now_s() - t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct lat lat_of(double *v, int n)
{
	int i99 = (99 * n + 99) / 100 - 1;

	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return (struct lat){ .med = n % 2 ? v[n / 2] :
				    (v[n / 2 - 1] + v[n / 2]) / 2,
			     .p99 = v[i99 < 0 ? 0 : i99] };
}

/* PROMOTE of one frame, the agent asleep before each; memcpy() in turns. */
static int latency(struct bench *b, uint32_t round)
{
	int n = b->o->lat_reps;
	double *v = calloc(3 * (size_t)n, sizeof(*v)), t;
	int ret = -1;

	*b->why = "no memory";
	if (!v)
		return -1;
	for (int i = 0; i < n; i++) {
		v[n + i] = peer_memcpy(b, b->o->frame_size);
		v[2 * n + i] = peer_map_copy(b, 1);
		*b->why = "the map+copy peer failed";
		if (v[2 * n + i] < 0)
			goto out;
		t = kvb_now_s();
		if (promote(b, round, (uint32_t)i % b->o->nr, 1))
			goto out;
		v[i] = kvb_now_s() - t;
		*b->why = "FREE of a promoted frame failed";
		if (frames_op(b->client, KVARENA_IOC_FREE, b->h, 1) ||
		    upper_settles(b))
			goto out;
	}
	b->r->promote1 = lat_of(v, n);
	b->r->memcpy1 = lat_of(v + n, n);
	b->r->map1 = lat_of(v + 2 * n, n);
	ret = 0;
out:
	free(v);
	return ret;
}

/* The peer's memory: two memfds, mapped with their pages there. */
static int peer_setup(struct bench *b, uint64_t bytes)
{
	b->msrc = memfd_create("kvbench-tier-src", MFD_CLOEXEC);
	b->mdst = memfd_create("kvbench-tier-dst", MFD_CLOEXEC);
	if (b->msrc < 0 || b->mdst < 0 || ftruncate(b->msrc, (off_t)bytes) ||
	    ftruncate(b->mdst, (off_t)bytes))
		return -1;
	b->psrc = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, b->msrc, 0);
	b->pdst = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, b->mdst, 0);
	if (b->psrc == MAP_FAILED || b->pdst == MAP_FAILED) {
		b->psrc = b->psrc == MAP_FAILED ? NULL : b->psrc;
		b->pdst = b->pdst == MAP_FAILED ? NULL : b->pdst;
		return -1;
	}
	memset(b->psrc, 0x3c, bytes);
	memset(b->pdst, 0, bytes);
	return 0;
}

static int start_agent(struct bench *b, int umfd, int lmfd)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return -1;
	b->agent = fork();
	if (b->agent < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (!b->agent) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		close(b->admin);
		close(umfd);
		close(lmfd);
		_exit(agent_run(b->sh, b->up, b->lo, p[1]));
	}
	close(p[1]);
	b->rfd = p[0];
	return agent_says(b, 'R');
}

static int stop_agent(struct bench *b)
{
	int st = 0;

	if (b->agent <= 0)
		return 0;
	__atomic_store_n(&b->sh->stop, 1, __ATOMIC_RELEASE);
	if (b->o->file)
		kill(b->agent, SIGTERM);	/* kvarenactl agent stops */
	for (int i = 0; i < 1000; i++) {
		if (waitpid(b->agent, &st, WNOHANG) == b->agent) {
			b->agent = 0;
			return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -1;
		}
		usleep(10000);
	}
	kill(b->agent, SIGKILL);
	waitpid(b->agent, &st, 0);
	b->agent = 0;
	return -1;
}

/*
 * --file: the file's own speed, the floor of the agent's copies to it: a
 * file of as many frames next to --file, written and read whole by the
 * agent's engine (tools/common/fileio.c: io_uring, frames in flight
 * together, O_DIRECT where the filesystem takes it).
 */
static int peer_file_setup(struct bench *b)
{
	int ring_err = 0;

	snprintf(b->ppath, sizeof(b->ppath), "%s.peer", b->o->file);
	b->pfd = new_file(b->ppath, b->o->frame_size * b->o->nr);
	if (b->pfd < 0) {
		b->ppath[0] = 0;
		return -1;
	}
	if (kvt_fio_open(&b->fio, b->o->frame_size, &ring_err))
		return -1;
	b->r->direct = !kvt_fio_direct(b->pfd);
	for (unsigned int i = 0; i < kvt_fio_depth(b->fio); i++)
		memset(kvt_fio_buf(b->fio, i), 0x3c + i, b->o->frame_size);
	return 0;
}

/* Every frame of the peer's file written (@write) or read; the time. */
static double peer_file(struct bench *b, bool write)
{
	unsigned int depth = kvt_fio_depth(b->fio), busy = 0, slot;
	uint64_t fs = b->o->frame_size;
	double t = kvb_now_s();
	uint32_t next = 0;
	int res;

	for (slot = 0; slot < depth && next < b->o->nr; slot++, next++, busy++)
		if (kvt_fio_queue(b->fio, slot, write, b->pfd, next * fs))
			return -1;
	while (busy) {
		if (kvt_fio_reap(b->fio, &slot, &res) || res != (int)fs)
			return -1;
		busy--;
		if (next < b->o->nr) {
			if (kvt_fio_queue(b->fio, slot, write, b->pfd,
					  next++ * fs))
				return -1;
			busy++;
		}
	}
	return kvb_now_s() - t;
}

/*
 * --file: the agent is kvarenactl agent itself (--agent), so that what is
 * measured is the tool that runs; ready once it is a client of the lower
 * arena.
 */
static int start_kvarenactl(struct bench *b)
{
	double t0 = kvb_now_s();
	struct kvarena_stat s;

	b->agent = fork();
	if (b->agent < 0)
		return -1;
	if (!b->agent) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (null >= 0)
			dup2(null, 1);
		execlp(b->o->agent, b->o->agent, "agent", b->up, (char *)NULL);
		fprintf(stderr, "kvbench tier: %s: %s\n", b->o->agent,
			strerror(errno));
		_exit(127);
	}
	while (kvb_now_s() - t0 < WAIT_S) {
		if (waitpid(b->agent, NULL, WNOHANG) == b->agent) {
			b->agent = 0;
			return -1;
		}
		if (!stat_arena(b->admin, b->lo, &s) && s.nr_clients)
			return 0;
		usleep(1000);
	}
	return -1;
}

/* The break-even of promoting against recomputing, in whole frames. */
static void break_even(const struct tier_opts *o, struct tier_result *r)
{
	double bw = (double)r->bytes / r->promote_s, gain;

	r->tokens_per_frame = (uint32_t)(o->frame_size / o->bytes_per_token);
	r->copy_frame_s = (double)o->frame_size / bw;
	r->call_s = r->promote1.med - r->copy_frame_s;
	if (r->call_s < 0)
		r->call_s = 0;
	r->recompute_frame_s = r->tokens_per_frame / o->prefill_tps;
	/*
	 * F frames: call + F * copy (one call per 256 frames) against
	 * F * recompute; the first F where promoting costs less.
	 */
	gain = r->recompute_frame_s - r->copy_frame_s -
	       r->call_s / PROMOTE_CALL;
	r->even_frames = gain > 0 ? (uint64_t)(r->call_s / gain) + 1 : 0;
	while (r->even_frames > 1) {
		uint64_t f = r->even_frames - 1;
		double calls = (double)((f + PROMOTE_CALL - 1) / PROMOTE_CALL);

		if (calls * r->call_s + f * r->copy_frame_s >=
		    f * r->recompute_frame_s)
			break;
		r->even_frames = f;
	}
}

static int bench(const struct tier_opts *o, struct tier_result *r,
		 const char **why)
{
	struct kvarena_arena_tier tl = { .free_target = o->nr };
	struct kvarena_stat s;
	struct bench b = { .o = o, .r = r, .admin = -1, .client = -1,
			   .rfd = -1, .msrc = -1, .mdst = -1, .pfd = -1,
			   .why = why };
	uint64_t bytes = o->frame_size * o->nr;
	int umfd = -1, lmfd = -1, ret = -1, err;
	bool made_up = false, made_lo = false;
	double t;

	memset(r, 0, sizeof(*r));
	r->bytes = bytes;
	r->memcpy_s = r->map_s = r->demote_s = r->promote_s = 1e300;
	r->fwrite_s = r->fread_s = 1e300;
	b.h = calloc(o->nr, sizeof(*b.h));
	b.e = calloc(o->nr, sizeof(*b.e));
	b.sh = mmap(NULL, sizeof(*b.sh), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	*why = "no memory";
	if (!b.h || !b.e || b.sh == MAP_FAILED) {
		b.sh = NULL;
		goto out;
	}
	memset(b.sh, 0, sizeof(*b.sh));
	b.admin = kv_open();
	if (b.admin < 0) {
		*why = "no /dev/kvarena";
		goto out;
	}
	snprintf(b.up, sizeof(b.up), "kvbench-tu-%d", (int)getpid());
	snprintf(b.lo, sizeof(b.lo), "kvbench-tl-%d", (int)getpid());
	umfd = make_arena(b.admin, b.up, o->frame_size, o->nr, NULL,
			  &made_up);
	if (umfd >= 0)
		lmfd = make_arena(b.admin, b.lo, o->frame_size, o->lower_nr,
				  o->file, &made_lo);
	err = umfd < 0 ? umfd : lmfd;
	if (err < 0) {
		*why = err == -EPERM ? "creating an arena needs CAP_SYS_ADMIN" :
		       err == -ENOMEM ? "no memory for the arenas" :
		       err == -EEXIST && o->file ?
		       "--file: the file is there already (kvbench makes it, and removes it after)" :
		       err == -EINVAL && o->file ?
		       "a file arena refused: a module without KVARENA_MEM_FILE?" :
		       "ARENA_CREATE or ARENA_SET_BACKING failed";
		goto out;
	}
	if (stat_arena(b.admin, b.up, &s) ||
	    !(s.tier == 0 && s.nr_frames == o->nr)) {
		*why = "STAT of the new arena failed";
		goto out;
	}
	snprintf(tl.name, sizeof(tl.name), "%s", b.up);
	snprintf(tl.lower, sizeof(tl.lower), "%s", b.lo);
	err = xioctl(b.admin, KVARENA_IOC_ARENA_SET_TIER, &tl);
	if (err) {
		*why = err == -ENOTTY || err == -EINVAL ?
		       "ARENA_SET_TIER failed: a module without lower tiers?" :
		       "ARENA_SET_TIER failed";
		goto out;
	}
	*why = o->file ? "kvarenactl agent did not start (--agent)" :
		 "the agent did not start";
	if (o->file ? start_kvarenactl(&b) : start_agent(&b, umfd, lmfd))
		goto out;
	*why = "no memory for the memcpy peer";
	if (peer_setup(&b, bytes))
		goto out;
	*why = "the file peer (next to --file) could not be made";
	if (o->file && peer_file_setup(&b))
		goto out;
	b.client = kv_open();
	*why = "ATTACH of the client failed";
	if (b.client < 0 || attach(b.client, b.up, "kvbench-client"))
		goto out;

	for (int i = 0; i < o->reps; i++) {
		if (publish_round(&b, (uint32_t)i))
			goto out;
		t = peer_memcpy(&b, bytes);
		if (t < r->memcpy_s)
			r->memcpy_s = t;
		if (demote_round(&b))
			goto out;
		t = peer_map_copy(&b, o->nr);
		*why = "the map+copy peer failed";
		if (t < 0)
			goto out;
		if (t < r->map_s)
			r->map_s = t;
		t = peer_memcpy(&b, bytes);
		if (t < r->memcpy_s)
			r->memcpy_s = t;
		if (o->file) {
			*why = "the file peer failed";
			t = peer_file(&b, true);
			if (t < 0)
				goto out;
			if (t < r->fwrite_s)
				r->fwrite_s = t;
			t = peer_file(&b, false);
			if (t < 0)
				goto out;
			if (t < r->fread_s)
				r->fread_s = t;
		}
		if (promote_round(&b, (uint32_t)i))
			goto out;
	}
	if (latency(&b, (uint32_t)o->reps - 1))
		goto out;
	*why = "a copy failed";
	if (__atomic_load_n(&b.sh->failed, __ATOMIC_ACQUIRE))
		goto out;
	*why = "the agent failed";
	close(b.client);
	b.client = -1;
	if (stop_agent(&b))
		goto out;
	break_even(o, r);
	ret = 0;
out:
	if (b.client >= 0)
		close(b.client);
	if (b.agent > 0) {
		kill(b.agent, SIGKILL);
		waitpid(b.agent, NULL, 0);
	}
	if (b.rfd >= 0)
		close(b.rfd);
	if (b.psrc)
		munmap(b.psrc, bytes);
	if (b.pdst)
		munmap(b.pdst, bytes);
	if (b.msrc >= 0)
		close(b.msrc);
	if (b.mdst >= 0)
		close(b.mdst);
	kvt_fio_close(b.fio);
	if (b.pfd >= 0)
		close(b.pfd);
	if (b.ppath[0])
		unlink(b.ppath);
	/* The upper arena first: the tier goes with it. */
	if (made_up && (err = destroy(b.admin, b.up)))
		fprintf(stderr, "kvbench tier: ARENA_DESTROY %s: %s\n", b.up,
			strerror(-err));
	if (made_lo && (err = destroy(b.admin, b.lo)))
		fprintf(stderr, "kvbench tier: ARENA_DESTROY %s: %s\n", b.lo,
			strerror(-err));
	if (umfd >= 0)
		close(umfd);
	if (lmfd >= 0) {
		close(lmfd);
		if (o->file)
			unlink(o->file);
	}
	if (b.admin >= 0)
		close(b.admin);
	if (b.sh)
		munmap(b.sh, sizeof(*b.sh));
	free(b.e);
	free(b.h);
	return ret;
}

/* ---- output ---------------------------------------------------------------- */

static void print_lat(const char *what, const struct lat *l,
		      const struct lat *peer, const char *to)
{
	printf("  %-14s %9.3f ms  p99 %9.3f ms", what, l->med * 1e3,
	       l->p99 * 1e3);
	if (peer)
		printf("   %5.2fx %s", l->med / peer->med, to);
	putchar('\n');
}

static void print_phases(const char *what, const struct phases *ph,
			 double window)
{
	double sum = 0, per = ph->jobs ? 1e6 / (double)ph->jobs : 0;

	printf("  %s: %llu frames, %.1f us a frame in all\n", what,
	       (unsigned long long)ph->jobs, window * per);
	for (int i = 0; i < PH_NR; i++) {
		sum += ph->s[i];
		printf("    %-20s %9.1f us  %5.1f%%", ph_name[i],
		       ph->s[i] * per, 100 * ph->s[i] / window);
		if (i == PH_FAULT_SRC)
			printf("   %.1f faults a frame",
			       ph->jobs ? (double)ph->flt_src / ph->jobs : 0);
		if (i == PH_FAULT_DST)
			printf("   %.1f faults a frame",
			       ph->jobs ? (double)ph->flt_dst / ph->jobs : 0);
		putchar('\n');
	}
	printf("    %-20s %9.1f us  %5.1f%%\n", "the rest",
	       (window - sum) * per, 100 * (window - sum) / window);
}

static void print_json_phases(const char *what, const struct phases *ph,
			      double window)
{
	printf("\"%s\":{\"frames\":%llu,\"window_s\":%.6f", what,
	       (unsigned long long)ph->jobs, window);
	for (int i = 0; i < PH_NR; i++)
		printf(",\"%s\":%.6f", ph_json[i], ph->s[i]);
	printf(",\"faults_src\":%llu,\"faults_dst\":%llu}",
	       (unsigned long long)ph->flt_src,
	       (unsigned long long)ph->flt_dst);
}

static void print_json(const struct tier_opts *o, const struct tier_result *r)
{
	printf("{\"kind\":\"tier\",\"bytes\":%llu,\"frame_size\":%llu,"
	       "\"frames\":%u,\"lower_frames\":%u,\"reps\":%d,"
	       "\"memcpy_s\":%.6f,\"map_memcpy_s\":%.6f,\"demote_s\":%.6f,"
	       "\"promote_s\":%.6f,\"memcpy_gbs\":%.3f,\"demote_gbs\":%.3f,"
	       "\"promote_gbs\":%.3f,\"demote_vs_memcpy\":%.3f,"
	       "\"promote_vs_memcpy\":%.3f,\"map_memcpy_vs_memcpy\":%.3f,",
	       (unsigned long long)r->bytes,
	       (unsigned long long)o->frame_size, o->nr, o->lower_nr, o->reps,
	       r->memcpy_s, r->map_s, r->demote_s, r->promote_s,
	       r->bytes / r->memcpy_s / 1e9, r->bytes / r->demote_s / 1e9,
	       r->bytes / r->promote_s / 1e9, r->demote_s / r->memcpy_s,
	       r->promote_s / r->memcpy_s, r->map_s / r->memcpy_s);
	printf("\"lat_reps\":%d,\"promote1_median_s\":%.6f,"
	       "\"promote1_p99_s\":%.6f,\"memcpy1_median_s\":%.6f,"
	       "\"memcpy1_p99_s\":%.6f,\"map_memcpy1_median_s\":%.6f,"
	       "\"map_memcpy1_p99_s\":%.6f,\"promote1_vs_memcpy1\":%.3f,",
	       o->lat_reps, r->promote1.med, r->promote1.p99, r->memcpy1.med,
	       r->memcpy1.p99, r->map1.med, r->map1.p99,
	       r->promote1.med / r->memcpy1.med);
	if (o->file) {
		printf("\"lower\":\"file\",\"o_direct\":%s,"
		       "\"file_write_s\":%.6f,\"file_read_s\":%.6f,"
		       "\"file_write_gbs\":%.3f,\"file_read_gbs\":%.3f,"
		       "\"demote_vs_file_write\":%.3f,"
		       "\"promote_vs_file_read\":%.3f,\"agent\":null",
		       r->direct ? "true" : "false", r->fwrite_s, r->fread_s,
		       r->bytes / r->fwrite_s / 1e9, r->bytes / r->fread_s / 1e9,
		       r->demote_s / r->fwrite_s, r->promote_s / r->fread_s);
	} else {
		printf("\"lower\":\"host\",\"agent\":{");
		print_json_phases("demote", &r->ph[0], r->window_s[0]);
		putchar(',');
		print_json_phases("promote", &r->ph[1], r->window_s[1]);
		putchar('}');
	}
	printf(",\"bytes_per_token\":%llu,\"tokens_per_frame\":%u,"
	       "\"prefill_tps\":%.1f,\"prefill_source\":\"%s\","
	       "\"promote_call_s\":%.6f,\"promote_frame_s\":%.6f,"
	       "\"recompute_frame_s\":%.6f,",
	       (unsigned long long)o->bytes_per_token, r->tokens_per_frame,
	       o->prefill_tps,
	       o->prefill_given ? "--prefill-tps" : DEFAULT_PREFILL_SRC,
	       r->call_s, r->copy_frame_s, r->recompute_frame_s);
	if (r->even_frames)
		printf("\"break_even_frames\":%llu,\"break_even_tokens\":%llu}\n",
		       (unsigned long long)r->even_frames,
		       (unsigned long long)(r->even_frames *
					    r->tokens_per_frame));
	else
		printf("\"break_even_frames\":null,\"break_even_tokens\":null}\n");
}

static void print_text(const struct tier_opts *o, const struct tier_result *r)
{
	uint64_t tokens;

	if (o->file)
		printf("tier: %u frames of %llu KiB (%llu MiB) demoted to a file arena (%s, %s) and promoted back (best of %d, in turns; the agent %s agent)\n",
		       o->nr, (unsigned long long)(o->frame_size >> 10),
		       (unsigned long long)(r->bytes >> 20), o->file,
		       r->direct ? "O_DIRECT" : "no O_DIRECT: the page cache",
		       o->reps, o->agent);
	else
		printf("tier: %u frames of %llu KiB (%llu MiB) demoted to a lower host arena and promoted back (best of %d, in turns; the agent a process of its own, as kvarenactl agent)\n",
		       o->nr, (unsigned long long)(o->frame_size >> 10),
		       (unsigned long long)(r->bytes >> 20), o->reps);
	kvb_line_gbs("memcpy", r->memcpy_s, r->bytes, 0, NULL);
	kvb_line_gbs("map+copy", r->map_s, r->bytes, r->memcpy_s, "memcpy");
	if (o->file) {
		kvb_line_gbs("file write", r->fwrite_s, r->bytes, 0, NULL);
		kvb_line_gbs("file read", r->fread_s, r->bytes, 0, NULL);
		kvb_line_gbs("demote", r->demote_s, r->bytes, r->fwrite_s,
			     "file write");
		kvb_line_gbs("promote", r->promote_s, r->bytes, r->fread_s,
			     "file read");
	} else {
		kvb_line_gbs("demote", r->demote_s, r->bytes, r->memcpy_s,
			     "memcpy");
		kvb_line_gbs("promote", r->promote_s, r->bytes, r->memcpy_s,
			     "memcpy");
	}
	printf("one frame, median and p99 of %d (the agent asleep before each PROMOTE), in turns\n",
	       o->lat_reps);
	print_lat("memcpy", &r->memcpy1, NULL, NULL);
	print_lat("map+copy", &r->map1, &r->memcpy1, "memcpy");
	print_lat("promote", &r->promote1, &r->memcpy1, "memcpy");
	if (o->file) {
		printf("where the time goes: not measured (the agent is %s agent)\n",
		       o->agent);
	} else {
		printf("where the time goes, from the agent (every round's window; %% of it)\n");
		print_phases("demote", &r->ph[0], r->window_s[0]);
		print_phases("promote", &r->ph[1], r->window_s[1]);
	}
	printf("break-even: %llu KiB a token, %u tokens a frame; recompute at %.0f tokens/s (%s)\n",
	       (unsigned long long)(o->bytes_per_token >> 10),
	       r->tokens_per_frame, o->prefill_tps,
	       o->prefill_given ? "--prefill-tps" : DEFAULT_PREFILL_SRC);
	printf("  a frame: recompute %.1f us, promote %.1f us (%.2f GB/s) + %.1f us a call\n",
	       r->recompute_frame_s * 1e6, r->copy_frame_s * 1e6,
	       r->bytes / r->promote_s / 1e9, r->call_s * 1e6);
	if (!r->even_frames) {
		printf("  promoting never beats recomputing here: it would need more than %.2f GB/s\n",
		       (double)o->frame_size / r->recompute_frame_s / 1e9);
		return;
	}
	tokens = r->even_frames * r->tokens_per_frame;
	printf("  promoting beats recomputing from %llu tokens (%llu %s) up\n",
	       (unsigned long long)tokens,
	       (unsigned long long)r->even_frames,
	       r->even_frames == 1 ? "frame" : "frames");
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kvbench tier [--json] [--mib N] [--lower-mib N] [--frame-size BYTES]\n"
		"                    [--reps N] [--lat-reps N] [--bytes-per-token N]\n"
		"                    [--prefill-tps N] [--file PATH [--agent KVARENACTL]]\n"
		"  N MiB (default 128) of published frames demoted to a lower host arena\n"
		"  (of --lower-mib MiB, default N) by an agent process and promoted back\n"
		"  (PROMOTE), against memcpy() of the same bytes: GB/s and the ratios\n"
		"  (best of --reps, default 5); PROMOTE of one frame, median and p99 of\n"
		"  --lat-reps (default 200), against memcpy() of one frame; where the\n"
		"  agent's time goes; and the number of tokens from which promoting\n"
		"  beats recomputing, with --bytes-per-token (default 131072: Llama-3-8B,\n"
		"  fp16) and --prefill-tps tokens a second (default %.0f:\n"
		"  %s,\n"
		"  Documentation/kvsim.rst; not measured here).\n"
		"  --file PATH: the lower arena a file arena on a new file PATH (and\n"
		"  PATH.peer for the file's own write and read speed, against which\n"
		"  demote and promote are put), the agent kvarenactl agent itself\n"
		"  (--agent, default the kvarenactl next to kvbench); both files\n"
		"  are removed after.\n"
		"  Needs /dev/kvarena and CAP_SYS_ADMIN.\n",
		DEFAULT_PREFILL_TPS, DEFAULT_PREFILL_SRC);
}

/*
 * The kvarenactl next to this kvbench (kvarenactl-static next to
 * kvbench-static, as the VM has them), else "kvarenactl" from $PATH.
 */
static const char *next_to_me(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	char *slash;
	bool stat_build;

	if (n <= 0)
		return "kvarenactl";
	buf[n] = 0;
	slash = strrchr(buf, '/');
	stat_build = n > 7 && !strcmp(buf + n - 7, "-static");
	if (!slash || (size_t)(slash - buf) + 20 > size)
		return "kvarenactl";
	strcpy(slash + 1, stat_build ? "kvarenactl-static" : "kvarenactl");
	return access(buf, X_OK) ? "kvarenactl" : buf;
}

/* A whole number from @s into *@v, within [@lo, @hi]; 0 or -1. */
static int number(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end || *s == '-' || *v < lo || *v > hi ?
	       -1 : 0;
}

int kvbench_tier_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json",            no_argument,       NULL, 'j' },
		{ "mib",             required_argument, NULL, 'm' },
		{ "lower-mib",       required_argument, NULL, 'l' },
		{ "frame-size",      required_argument, NULL, 'f' },
		{ "reps",            required_argument, NULL, 'r' },
		{ "lat-reps",        required_argument, NULL, 'L' },
		{ "bytes-per-token", required_argument, NULL, 'b' },
		{ "prefill-tps",     required_argument, NULL, 'p' },
		{ "file",            required_argument, NULL, 'F' },
		{ "agent",           required_argument, NULL, 'A' },
		{ "help",            no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct tier_opts o = { .frame_size = 2u << 20, .reps = 5,
			       .lat_reps = 200, .bytes_per_token = 128u << 10,
			       .prefill_tps = DEFAULT_PREFILL_TPS };
	uint64_t mib = 128, lower_mib = 0, v;
	static char agent_path[4096];
	struct tier_result r;
	const char *why = NULL;
	int json = 0, c, bad = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'm': bad |= number(optarg, 1, 1u << 20, &mib); break;
		case 'l': bad |= number(optarg, 1, 1u << 20, &lower_mib); break;
		case 'f':
			bad |= number(optarg, 4096, KVARENA_MAX_FRAME_SIZE, &v);
			o.frame_size = v;
			break;
		case 'r':
			bad |= number(optarg, 1, 1000, &v);
			o.reps = (int)v;
			break;
		case 'L':
			bad |= number(optarg, 1, 100000, &v);
			o.lat_reps = (int)v;
			break;
		case 'b':
			bad |= number(optarg, 1, KVARENA_MAX_FRAME_SIZE,
				      &o.bytes_per_token);
			break;
		case 'p':
			bad |= number(optarg, 1, 1000000000, &v);
			o.prefill_tps = (double)v;
			o.prefill_given = true;
			break;
		case 'F': o.file = optarg; break;
		case 'A': o.agent = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!lower_mib)
		lower_mib = mib;
	if (o.agent && !o.file) {
		fprintf(stderr, "kvbench tier: --agent goes with --file\n");
		return 2;
	}
	if (o.file && !o.agent)
		o.agent = next_to_me(agent_path, sizeof(agent_path));
	if (bad || optind < argc || (o.frame_size & (o.frame_size - 1)) ||
	    (mib << 20) % o.frame_size || (lower_mib << 20) % o.frame_size ||
	    lower_mib < mib || o.bytes_per_token > o.frame_size ||
	    (lower_mib << 20) / o.frame_size > KVARENA_MAX_FRAMES) {
		fprintf(stderr, "kvbench tier: --frame-size a power of two from 4096; --mib and --lower-mib whole numbers of frames, --lower-mib at least --mib; --bytes-per-token at most a frame; --reps 1-1000, --lat-reps 1-100000, --prefill-tps 1-1000000000\n");
		return 2;
	}
	o.nr = (uint32_t)((mib << 20) / o.frame_size);
	o.lower_nr = (uint32_t)((lower_mib << 20) / o.frame_size);
	if (bench(&o, &r, &why)) {
		fprintf(stderr, "kvbench tier: %s\n", why);
		return 1;
	}
	if (json)
		print_json(&o, &r);
	else
		print_text(&o, &r);
	return 0;
}
