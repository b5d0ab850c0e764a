// SPDX-License-Identifier: GPL-2.0
/*
 * kill_storm - SIGKILL at random moments, many times over, and not one
 * frame lost.
 *
 * Runs as root in the VM with kvarena.ko loaded.  Workers, each in a
 * process group of its own, do what serving processes do, in loops:
 *
 *   ioctl     ALLOC and FREE batches, FRAME_FD and mmap of the frames,
 *             writes into them, SET_USAGE, fork() of a child that goes on
 *             with the same client (the file is shared across the fork)
 *   uring     rings of ALLOC/FREE/SET_USAGE SQEs submitted and left in
 *             flight (some forced to io_uring's workers with IOSQE_ASYNC),
 *             reaped only now and then
 *   runtime   libkvarena: sequences created, grown (frames mapped),
 *             forked (frames shared), written, shrunk and freed, over
 *             ioctl or io_uring
 *   prefix    chains of keys PUBLISHed over frames it allocates, chains
 *             LOOKUPed (the frames found held, freed now and then)
 *
 * The driver keeps a few workers alive and kills one process group every
 * few milliseconds with SIGKILL, after a random delay (sometimes none:
 * killed while attaching), and starts another.  Now and then, as an
 * administrator would, it EVICTs a random client instead, whatever it is
 * doing: its frames go back, its mappings are zapped, its commands fail
 * with ESHUTDOWN (and a worker that sees that exits, or dies of SIGBUS
 * touching a revoked mapping, and is replaced).  And now and then it
 * resizes an arena (ARENA_RESIZE) to a random size, shrinking it under
 * frames the workers hold (the shrink waits for them) or growing it back,
 * sometimes cancelling a shrink that waits.  After every kill and
 * every eviction it checks the counts that hold at any moment; at the end
 * it kills the rest, grows every arena back to its size at create, waits
 * for every client to be gone (a killed process's io_uring is torn down by
 * a kernel worker, after the process is reaped) and checks every arena:
 * nothing held, reserved or filled, nothing absent or awaited by a
 * shrink, free + cached = capacity, as many
 * keys published as frames cached, frames_allocated - frames_freed =
 * held + cached.  The kernel log is checked by
 * the VM runner.
 *
 *   kill_storm [--kills N] [--workers N] [--delay-ms N] [--evict-every N]
 *              [--resize-every N] [--seed S]
 *
 * Prints "kill storm: N kills, E evictions, M frames lost" (M must be 0).
 */
#include <getopt.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include <kvarena.h>

#include "faults.h"

#define FS		(64u << 10)	/* frame size */
#define NR_HOST		96u		/* frames of the mapped arena */
#define NR_ACCT		512u		/* frames of the accounting arena */
#define MAX_WORKERS	16

static const char *const arena_host = "storm-host";
static const char *const arena_acct = "storm-acct";

enum { W_IOCTL, W_URING, W_RUNTIME, W_PREFIX, W_KINDS };

static int dev_open(void)
{
	int fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		_exit(100);
	return fd;
}

/*
 * A worker's command: an evicted client's commands fail with ESHUTDOWN
 * from then on, and the worker gives up, as a serving process would.
 */
static int wcall(int fd, unsigned long cmd, void *arg)
{
	int ret = fz_ioctl(fd, cmd, arg);

	if (ret == -ESHUTDOWN)
		_exit(0);
	return ret;
}

/*
 * ATTACH, with a guarantee of @min frames if the arena can give it now:
 * when every frame is held (ENOSPC), without one, as a serving process
 * would start.  Any other error ends the worker, which fails the run.
 */
static void attach(int fd, const char *name, uint32_t min, uint32_t max)
{
	struct kvarena_attach a = { .min_frames = min, .max_frames = max };
	int ret;

	fz_name(a.name, "%s", name);
	fz_name(a.label, "storm-%d", getpid());
	ret = fz_ioctl(fd, KVARENA_IOC_ATTACH, &a);
	if (ret == -ENOSPC && min) {
		a.min_frames = 0;
		ret = fz_ioctl(fd, KVARENA_IOC_ATTACH, &a);
	}
	if (ret) {
		/* Not printf(): the driver's buffer would come along. */
		dprintf(1, "# worker %d: ATTACH to %s (min %u max %u): %s\n",
			getpid(), name, a.min_frames, max, strerror(-ret));
		_exit(101);
	}
}

/* ---- the ioctl worker ------------------------------------------------- */

#define HELD_MAX 64

static void worker_ioctl(struct fz_rng *r)
{
	bool host = fz_one_in(r, 2);
	const char *name = host ? arena_host : arena_acct;
	uint32_t nr = host ? NR_HOST : NR_ACCT;
	uint64_t held[HELD_MAX];
	unsigned int n = 0, forks = 0;
	int fd = dev_open();
	void *map = NULL;

	/* Guarantees too, so that release must give back a reservation. */
	attach(fd, name, fz_below(r, 3), fz_one_in(r, 2) ? 0 : nr / 3);
	for (;;) {
		uint32_t want = 1 + fz_below(r, 8);
		struct kvarena_frames f = {
			.handles = (uintptr_t)(held + n),
			.count = want, .flags = KVARENA_ALLOC_PARTIAL,
		};

		if (n + want <= HELD_MAX &&
		    !wcall(fd, KVARENA_IOC_ALLOC, &f))
			n += f.nr_done;
		if (host && n && fz_one_in(r, 2)) {
			struct kvarena_frame_fd ff = {
				.handle = held[fz_below(r, n)] };

			if (!wcall(fd, KVARENA_IOC_FRAME_FD, &ff)) {
				map = mmap(NULL, ff.size, PROT_READ | PROT_WRITE,
					   MAP_SHARED, ff.fd, ff.offset);
				if (map != MAP_FAILED)
					memset(map, 0x5a, 4096);
				close(ff.fd);
				/* Left mapped: release must zap it. */
			}
		}
		if (n) {
			struct kvarena_usage u = {
				.filled_tokens = n * 16,
				.filled_bytes = (uint64_t)n * FS / 2 };

			wcall(fd, KVARENA_IOC_SET_USAGE, &u);
		}
		if (n && fz_one_in(r, 2)) {
			uint32_t k = 1 + fz_below(r, n);
			struct kvarena_frames fr = {
				.handles = (uintptr_t)(held + n - k), .count = k };

			if (!wcall(fd, KVARENA_IOC_FREE, &fr))
				n -= k;
		}
		/*
		 * A child that goes on with the same client: the file is
		 * shared, so both now allocate and free through it.  Few, so
		 * that the group stays small.
		 */
		if (forks < 2 && fz_one_in(r, 64)) {
			pid_t pid = fork();

			if (pid == 0) {
				fz_seed(r, fz_next(r) ^ (uint64_t)getpid());
				n = 0;
				forks = 2;
			} else if (pid > 0) {
				forks++;
			}
		}
	}
}

/* ---- the io_uring worker ---------------------------------------------- */

#define RING	64
#define SLOTS	RING

struct slot {
	struct kvarena_frames f;
	struct kvarena_usage u;
	uint64_t h[8];
	bool busy, alloc;
};

static void queue(struct io_uring *ring, int fd, uint32_t cmd, void *arg,
		  uint64_t tag, bool async)
{
	struct kvarena_uring_cmd uc = { .arg = (uintptr_t)arg };
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return;
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = cmd;
	memcpy(sqe->cmd, &uc, sizeof(uc));
	sqe->user_data = tag;
	if (async)
		sqe->flags |= IOSQE_ASYNC;
}

static void worker_uring(struct fz_rng *r)
{
	static struct slot slots[SLOTS];
	uint64_t held[256];
	unsigned int n = 0, i;
	struct io_uring ring;
	int fd = dev_open();

	attach(fd, arena_acct, fz_below(r, 4), 0);
	if (io_uring_queue_init(RING, &ring, 0))
		_exit(102);
	for (;;) {
		unsigned int q = 1 + fz_below(r, 16);
		struct io_uring_cqe *cqe;

		for (i = 0; i < SLOTS && q; i++) {
			struct slot *s = &slots[i];
			bool async = fz_one_in(r, 4);

			if (s->busy)
				continue;
			q--;
			s->busy = true;
			memset(&s->f, 0, sizeof(s->f));
			s->f.handles = (uintptr_t)s->h;
			if (n >= 8 && fz_one_in(r, 2)) {
				unsigned int k = 1 + fz_below(r, 8);

				/* Off our list now: a handle is freed once. */
				n -= k;
				memcpy(s->h, held + n, k * sizeof(*s->h));
				s->f.count = k;
				s->alloc = false;
				queue(&ring, fd, KVARENA_IOC_FREE, &s->f, i, async);
			} else if (fz_one_in(r, 8)) {
				s->u.filled_tokens = fz_below(r, 1000);
				s->u.filled_bytes = 0;
				s->alloc = false;
				queue(&ring, fd, KVARENA_IOC_SET_USAGE, &s->u, i,
				      async);
			} else {
				s->f.count = 1 + fz_below(r, 8);
				s->f.flags = KVARENA_ALLOC_PARTIAL;
				s->alloc = true;
				queue(&ring, fd, KVARENA_IOC_ALLOC, &s->f, i, async);
			}
		}
		/* Submitted, not waited for: these are in flight. */
		io_uring_submit(&ring);
		if (!fz_one_in(r, 3))
			continue;
		while (!io_uring_peek_cqe(&ring, &cqe)) {
			struct slot *s = &slots[cqe->user_data];

			if (cqe->res == -ESHUTDOWN)
				_exit(0);
			if (s->alloc && cqe->res == 0 &&
			    n + s->f.nr_done <= 256) {
				memcpy(held + n, s->h,
				       s->f.nr_done * sizeof(*s->h));
				n += s->f.nr_done;
			}
			s->busy = false;
			io_uring_cqe_seen(&ring, cqe);
		}
	}
}

/* ---- the runtime worker (libkvarena) ---------------------------------- */

/* The library passes the module's ESHUTDOWN on: evicted, give up. */
static int gone(int ret)
{
	if (ret == -ESHUTDOWN)
		_exit(0);
	return ret;
}

static void worker_runtime(struct fz_rng *r)
{
	struct kva_geometry g = { .layers = 2, .kv_heads = 2, .head_dim = 16,
				  .dtype = KVA_DTYPE_FP16, .frame_size = FS };
	struct kva_open_opts o = {
		.mode = KVA_MODE_DEVICE, .name = arena_host,
		.label = "storm-runtime",
		.transport = fz_one_in(r, 2) ? KVA_TRANSPORT_URING :
					      KVA_TRANSPORT_IOCTL,
	};
	struct kva_seq *seq[4] = { 0 };
	struct kva_arena *a;
	int ret;

	ret = kva_geometry_init(&g);
	if (!ret)
		ret = kva_open(&o, &a);
	if (ret) {
		dprintf(1, "# worker %d: kva_open: %s\n", getpid(),
			strerror(-ret));
		_exit(103);
	}
	for (;;) {
		unsigned int i = fz_below(r, 4);
		struct kva_seq *s = seq[i];

		if (!s) {
			gone(kva_seq_create(a, &g, 16 * g.tokens_per_frame,
					    &seq[i]));
			continue;
		}
		switch (fz_below(r, 5)) {
		case 0:
		case 1: {	/* grow, and write the new tokens */
			uint64_t t = s->tokens, add = 1 + fz_below(r, 300);

			if (t + add > s->max_tokens ||
			    gone(kva_seq_grow(s, add)))
				break;
			memset(kva_seq_kv_ptr(s, 0, KVA_K, 0, t), 0x33,
			       g.head_dim * 2);
			break;
		}
		case 2: {	/* fork into a free place */
			unsigned int j = fz_below(r, 4);

			if (!seq[j])
				gone(kva_seq_fork(s, &seq[j]));
			break;
		}
		case 3:
			kva_seq_shrink(s, s->tokens / 2);
			break;
		case 4:
			kva_seq_free(s);
			seq[i] = NULL;
			break;
		}
	}
}

/* ---- the prefix worker: publish and look up chains of keys ------------ */

static void prefix_key(uint8_t *key, unsigned int k)
{
	memset(key, 0, KVARENA_KEY_LEN);
	key[0] = 1 + k;
	memcpy(key + 1, "storm", 5);
}

static void worker_prefix(struct fz_rng *r)
{
	struct kvarena_prefix_entry e[8];
	uint64_t held[HELD_MAX];
	unsigned int n = 0, i;
	int fd = dev_open();

	attach(fd, arena_host, 0, NR_HOST / 2);
	for (;;) {
		unsigned int len = 1 + fz_below(r, 8), first = fz_below(r, 24);
		struct kvarena_prefix x = { .entries = (uintptr_t)e,
					    .count = len };

		memset(e, 0, sizeof(e));
		for (i = 0; i < len; i++)
			prefix_key(e[i].key, first + i);
		if (fz_one_in(r, 2)) {
			/* Look the chain up: new holds come back. */
			if (!wcall(fd, KVARENA_IOC_LOOKUP, &x))
				for (i = 0; i < x.nr_done; i++)
					if (!(e[i].flags & KVARENA_PREFIX_HELD) &&
					    n < HELD_MAX)
						held[n++] = e[i].handle;
		} else if (n + len <= HELD_MAX) {
			/* Fill frames of our own and publish them as the chain. */
			struct kvarena_frames f = { .handles = (uintptr_t)(held + n),
						    .count = len };

			if (!wcall(fd, KVARENA_IOC_ALLOC, &f)) {
				for (i = 0; i < len; i++)
					e[i].handle = held[n + i];
				n += len;
				wcall(fd, KVARENA_IOC_PUBLISH, &x);
			}
		}
		if (n && fz_one_in(r, 3)) {
			uint32_t k = 1 + fz_below(r, n);
			struct kvarena_frames fr = {
				.handles = (uintptr_t)(held + n - k), .count = k };

			if (!wcall(fd, KVARENA_IOC_FREE, &fr))
				n -= k;
		}
	}
}

/* ---- the driver --------------------------------------------------------- */

struct worker {
	pid_t pid;
	int kind;
	bool evicted;		/* its client was: it may exit by itself */
};

static pid_t spawn(int kind, uint64_t seed)
{
	pid_t pid = fork();
	struct fz_rng r;

	if (pid)
		return pid;
	setpgid(0, 0);
	/* Should the driver die, so do its workers. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	fz_seed(&r, seed);
	switch (kind) {
	case W_IOCTL:
		worker_ioctl(&r);
		break;
	case W_URING:
		worker_uring(&r);
		break;
	case W_PREFIX:
		worker_prefix(&r);
		break;
	default:
		worker_runtime(&r);
		break;
	}
	_exit(0);
}

struct evictions {
	unsigned long done, raced, frames;	/* raced: it left first */
	unsigned long gave_up, sigbus;		/* how its worker ended */
};

/*
 * A worker was reaped with @status: 1 if our SIGKILL ended it, 0 if it
 * ended by itself as only an evicted one may (it gives up on ESHUTDOWN,
 * or dies of SIGBUS touching a revoked mapping), -1 otherwise.
 */
static int ended(struct worker *w, int status, struct evictions *ev)
{
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		return 1;
	if (w->evicted && WIFEXITED(status) && !WEXITSTATUS(status)) {
		ev->gave_up++;
		return 0;
	}
	if (w->evicted && WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) {
		ev->sigbus++;
		return 0;
	}
	printf("# worker %d (kind %d, %s) ended by itself: %s %d\n", w->pid,
	       w->kind, w->evicted ? "evicted" : "not evicted",
	       WIFEXITED(status) ? "exit" : "signal",
	       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return -1;
}

/*
 * Kill a worker's whole group (its forked children too) and reap it.
 * Returns what ended() says.
 */
static int kill_worker(struct worker *w, struct evictions *ev)
{
	int status, ret;

	kill(-w->pid, SIGKILL);
	kill(w->pid, SIGKILL);
	waitpid(w->pid, &status, 0);
	ret = ended(w, status, ev);
	w->pid = 0;
	w->evicted = false;
	return ret;
}

/*
 * EVICT a random client of @name, whatever it is doing, as an
 * administrator would, and mark its worker.  Returns 0, or 1 for an
 * error no eviction may give.
 */
static int evict_one(int fd, const char *name, struct worker *w,
		     unsigned long nworkers, struct fz_rng *r,
		     struct evictions *ev)
{
	static struct kvarena_client_info rows[64];
	struct kvarena_clients c = { .clients = (uintptr_t)rows, .count = 64 };
	struct kvarena_evict e = { 0 };
	unsigned long i;
	uint32_t n;
	int ret;
	pid_t pid;

	fz_name(c.name, "%s", name);
	ret = fz_ioctl(fd, KVARENA_IOC_CLIENTS, &c);
	if (ret) {
		printf("# %s: CLIENTS: %s\n", name, strerror(-ret));
		return 1;
	}
	n = c.nr_clients < c.count ? c.nr_clients : c.count;
	if (!n)
		return 0;
	i = fz_below(r, n);
	fz_name(e.name, "%s", name);
	e.client_id = rows[i].client_id;
	pid = rows[i].pid;
	ret = fz_ioctl(fd, KVARENA_IOC_EVICT, &e);
	if (ret == -ENOENT) {
		ev->raced++;
		return 0;
	}
	if (ret) {
		printf("# %s: EVICT of client %u: %s\n", name, e.client_id,
		       strerror(-ret));
		return 1;
	}
	ev->done++;
	ev->frames += e.nr_frames;
	for (i = 0; i < nworkers; i++)
		if (pid && w[i].pid == pid)
			w[i].evicted = true;
	return 0;
}

/*
 * Replace the workers that ended by themselves.  Returns the number that
 * should not have.
 */
static int replace_ended(struct worker *w, unsigned long nworkers,
			 struct fz_rng *r, struct evictions *ev)
{
	unsigned long i;
	int status, bad = 0;

	for (i = 0; i < nworkers; i++) {
		if (waitpid(w[i].pid, &status, WNOHANG) != w[i].pid)
			continue;
		/* Its forked children, if any are left. */
		kill(-w[i].pid, SIGKILL);
		bad += ended(&w[i], status, ev) != 0;
		w[i].kind = fz_below(r, W_KINDS);
		w[i].pid = spawn(w[i].kind, fz_next(r));
		w[i].evicted = false;
	}
	return bad;
}

static void reap_orphans(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

struct resizes {
	unsigned long done, shrinks, grows, cancels, waiting, refused;
};

/*
 * ARENA_RESIZE @name (of @nr frames at create) to a random size from a
 * quarter of it to all of it, or cancel a waiting shrink.  Returns 0, or
 * 1 for an error no resize may give (a shrink below the clients'
 * minimums is refused, and is not one).
 */
static int resize_one(int fd, const char *name, uint32_t nr,
		      struct fz_rng *r, struct resizes *rs)
{
	struct kvarena_arena_resize z = { 0 };
	struct kvarena_stat s;
	int ret;

	fz_name(z.name, "%s", name);
	if (fz_stat(fd, name, &s))
		return 1;
	if (s.nr_shrinking && fz_one_in(r, 2)) {
		z.flags = KVARENA_RESIZE_CANCEL;
		rs->cancels++;
	} else {
		z.nr_frames = nr / 4 + fz_below(r, nr - nr / 4 + 1);
		if (z.nr_frames < s.nr_frames - s.nr_shrinking)
			rs->shrinks++;
		else
			rs->grows++;
	}
	ret = fz_ioctl(fd, KVARENA_IOC_ARENA_RESIZE, &z);
	if (ret == -EBUSY && !z.flags) {
		rs->refused++;
		return 0;
	}
	if (ret) {
		printf("# %s: RESIZE to %u (flags %u): %s\n", name, z.nr_frames,
		       z.flags, strerror(-ret));
		return 1;
	}
	rs->done++;
	rs->waiting += z.out_shrinking != 0;
	/* Now and then an administrator thinks better of a shrink at once. */
	if (z.out_shrinking && fz_one_in(r, 3)) {
		z.flags = KVARENA_RESIZE_CANCEL;
		z.nr_frames = 0;
		ret = fz_ioctl(fd, KVARENA_IOC_ARENA_RESIZE, &z);
		if (ret) {
			printf("# %s: RESIZE cancel: %s\n", name, strerror(-ret));
			return 1;
		}
		rs->cancels++;
	}
	if (z.out_frames + z.out_absent != nr ||
	    (z.flags && z.out_shrinking)) {
		printf("# %s: RESIZE to %u (flags %u): %u frames, %u absent, "
		       "%u awaited\n", name, z.nr_frames, z.flags, z.out_frames,
		       z.out_absent, z.out_shrinking);
		return 1;
	}
	return 0;
}

/* Back to @nr frames, nothing awaited; 0 or 1. */
static int resize_back(int fd, const char *name, uint32_t nr)
{
	struct kvarena_arena_resize z = { .nr_frames = nr };
	int ret;

	fz_name(z.name, "%s", name);
	ret = fz_ioctl(fd, KVARENA_IOC_ARENA_RESIZE, &z);
	if (ret || z.out_frames != nr || z.out_absent || z.out_shrinking) {
		printf("# %s: RESIZE back to %u: %s, %u frames, %u absent, "
		       "%u awaited\n", name, nr, strerror(-ret), z.out_frames,
		       z.out_absent, z.out_shrinking);
		return 1;
	}
	return 0;
}

static int check_now(int fd, const char *name)
{
	struct kvarena_stat s;

	if (fz_stat(fd, name, &s)) {
		printf("# %s: STAT failed\n", name);
		return 1;
	}
	return fz_check_counts(name, &s);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "kills", 1, NULL, 'k' }, { "workers", 1, NULL, 'w' },
		{ "delay-ms", 1, NULL, 'd' }, { "seed", 1, NULL, 's' },
		{ "evict-every", 1, NULL, 'e' },
		{ "resize-every", 1, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long kills = 1000, nworkers = 6, delay_ms = 8, done = 0;
	unsigned long evict_every = 4, resize_every = 4;
	struct evictions ev = { 0 };
	struct resizes rs = { 0 };
	unsigned long by_kind[W_KINDS] = { 0 };
	struct worker w[MAX_WORKERS] = { 0 };
	uint64_t seed = fz_clock_seed();
	uint32_t lost_host = 0, lost_acct = 0;
	double t0, settle_host, settle_acct;
	int fd, c, failures = 0, refs;
	struct fz_rng r;
	unsigned long i;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'k': kills = strtoul(optarg, NULL, 0); break;
		case 'w': nworkers = strtoul(optarg, NULL, 0); break;
		case 'd': delay_ms = strtoul(optarg, NULL, 0); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'e': evict_every = strtoul(optarg, NULL, 0); break;
		case 'r': resize_every = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: kill_storm [--kills N] [--workers N] [--delay-ms N] [--evict-every N] [--resize-every N] [--seed S]\n");
			return 2;
		}
	}
	if (!nworkers || nworkers > MAX_WORKERS)
		nworkers = MAX_WORKERS;
	printf("TAP version 13\n1..1\n");
	printf("# kill storm: seed 0x%016" PRIx64 ", %lu kills, %lu workers, "
	       "delays up to %lu ms, an eviction every %lu kills or so, "
	       "a resize every %lu\n",
	       seed, kills, nworkers, delay_ms, evict_every, resize_every);
	fflush(stdout);
	fz_seed(&r, seed);

	fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	refs = fz_module_refs();
	if (fd < 0 || fz_arena_create(fd, arena_host, NR_HOST, FS, true) ||
	    fz_arena_create(fd, arena_acct, NR_ACCT, FS, false)) {
		printf("# cannot set up the arenas: %s\n", strerror(errno));
		fz_ktap_result("kill_storm", 1);
		return 1;
	}

	t0 = fz_now();
	for (i = 0; i < nworkers; i++) {
		w[i].kind = fz_below(&r, W_KINDS);
		w[i].pid = spawn(w[i].kind, fz_next(&r));
	}
	while (done < kills && !failures) {
		struct worker *v;
		int k;

		failures += replace_ended(w, nworkers, &r, &ev);
		v = &w[fz_below(&r, nworkers)];
		/* Now and then at once: killed while attaching. */
		if (!fz_one_in(&r, 8))
			usleep(fz_below(&r, delay_ms * 1000 + 1));
		if (evict_every && fz_one_in(&r, evict_every)) {
			const char *name = fz_one_in(&r, 2) ? arena_host :
							      arena_acct;

			failures += evict_one(fd, name, w, nworkers, &r, &ev);
			failures += check_now(fd, name);
		}
		if (resize_every && fz_one_in(&r, resize_every)) {
			bool host = fz_one_in(&r, 2);

			failures += resize_one(fd, host ? arena_host : arena_acct,
					       host ? NR_HOST : NR_ACCT, &r, &rs);
		}
		/* Only a kill of a live worker counts: it may be evicted and gone. */
		k = kill_worker(v, &ev);
		if (k > 0) {
			by_kind[v->kind]++;
			done++;
		}
		failures += k < 0;
		failures += check_now(fd, arena_host);
		failures += check_now(fd, arena_acct);
		v->kind = fz_below(&r, W_KINDS);
		v->pid = spawn(v->kind, fz_next(&r));
	}
	for (i = 0; i < nworkers; i++)
		if (w[i].pid)
			failures += kill_worker(&w[i], &ev) < 0;
	reap_orphans();
	failures += resize_back(fd, arena_host, NR_HOST);
	failures += resize_back(fd, arena_acct, NR_ACCT);

	settle_host = fz_wait_no_clients(fd, arena_host, 60);
	settle_acct = fz_wait_no_clients(fd, arena_acct, 60);
	failures += settle_host < 0 || settle_acct < 0;
	failures += fz_check_quiet(fd, arena_host, &lost_host);
	failures += fz_check_quiet(fd, arena_acct, &lost_acct);
	if (fz_arena_destroy(fd, arena_host) || fz_arena_destroy(fd, arena_acct)) {
		printf("# destroying the arenas failed: %s\n", strerror(errno));
		failures++;
	}
	/* Every worker's file closed, an evicted one's too: nothing left. */
	if (refs >= 0)
		failures += fz_wait_module_refs(refs, 60) < 0;
	close(fd);

	printf("# kills by worker: ioctl %lu, uring %lu, runtime %lu",
	       by_kind[W_IOCTL], by_kind[W_URING], by_kind[W_RUNTIME]);
	printf(", prefix %lu", by_kind[W_PREFIX]);
	printf("; %.1f s; clients gone %.2f s after the last kill\n",
	       fz_now() - t0, settle_host > settle_acct ? settle_host :
	       settle_acct);
	printf("# evictions: %lu (%lu frames taken back; %lu clients left "
	       "first); evicted workers that gave up on ESHUTDOWN %lu, died of "
	       "SIGBUS %lu\n", ev.done, ev.frames, ev.raced, ev.gave_up,
	       ev.sigbus);
	printf("# resizes: %lu (%lu shrinks, %lu of them left waiting for "
	       "held frames, %lu grows, %lu cancels; %lu below the minimums "
	       "refused)\n", rs.done, rs.shrinks, rs.waiting, rs.grows,
	       rs.cancels, rs.refused);
	printf("kill storm: %lu kills, %lu evictions, %lu resizes, %u frames "
	       "lost\n", done, ev.done, rs.done, lost_host + lost_acct);
	fz_ktap_result("kill_storm", failures || lost_host || lost_acct ||
			done < kills);
	return failures || lost_host || lost_acct || done < kills;
}
