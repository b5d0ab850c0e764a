// SPDX-License-Identifier: GPL-2.0
/*
 * stress - threads in several processes hammer one arena over ioctl() and
 * io_uring at once, while an administrator changes their limits and
 * processes attach, work and die under them; then the module's counters
 * must say exactly what the clients did.
 *
 * Runs as root in the VM with kvarena.ko loaded.  Each worker process has
 * THREADS threads; threads 0 and 1 share one client (one file), the others
 * have one each.  A thread allocates, frees, maps (FRAME_FD, mmap, a write,
 * munmap) and reports usage, each command over ioctl() or as an
 * IORING_OP_URING_CMD of its own ring, and counts what it did: ALLOC
 * calls, frames got, ALLOC calls refused with -ENOSPC, FREE calls, frames
 * freed.  Before exiting - with frames still held, which its release must
 * return - a process checks its clients' rows in CLIENTS against its
 * counts, exactly, and adds them to the run's totals.  Meanwhile the
 * parent sets random limits (min and max) on whichever clients it finds.
 *
 * At the end the arena must be quiet (nothing held, reserved or filled;
 * free = capacity) and its totals must equal the clients' sums:
 * alloc_calls, alloc_failures, free_calls, frames_allocated, and
 * frames_freed = frames freed by FREE + frames held at exit.
 *
 *   stress [--lives N] [--procs N] [--iters N] [--seed S]
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>

#include "faults.h"

#define FS		(64u << 10)
#define NR		192u
#define THREADS		4
#define HELD		24
#define MAX_PROCS	8

static const char *const arena = "stress";

struct tally {
	uint64_t alloc_calls, alloc_failures, frames_got;
	uint64_t free_calls, frames_freed, held_at_exit;
};

struct totals {
	pthread_mutex_t lock;		/* process-shared */
	struct tally t;
	unsigned long lives, checks_failed;
};

static struct totals *tot;

struct thread {
	pthread_t tid;
	int fd;
	struct fz_rng r;
	struct io_uring ring;
	unsigned long iters;
	uint64_t held[HELD];
	unsigned int n;
	struct tally t;
};

/* Why no command goes over io_uring on this kernel, or NULL (main sets it). */
static const char *no_ring;

static int cmd(struct thread *t, bool uring, uint32_t c, void *arg)
{
	return uring ? fz_uring(&t->ring, t->fd, c, arg, 0) :
		       fz_ioctl(t->fd, c, arg);
}

static void *thread_main(void *arg)
{
	struct thread *t = arg;
	unsigned long i;

	for (i = 0; i < t->iters; i++) {
		bool uring = !no_ring && fz_one_in(&t->r, 2);
		unsigned int op = fz_below(&t->r, 8);

		if (op < 4 && t->n < HELD) {
			uint64_t h[8];
			uint32_t want = 1 + fz_below(&t->r, 8);
			struct kvarena_frames f = {
				.handles = (uintptr_t)h,
				.count = want < HELD - t->n ? want : HELD - t->n,
				.flags = fz_one_in(&t->r, 2) ?
					 KVARENA_ALLOC_PARTIAL : 0,
			};
			int ret = cmd(t, uring, KVARENA_IOC_ALLOC, &f);

			if (!ret || ret == -ENOSPC)
				t->t.alloc_calls++;
			if (ret == -ENOSPC)
				t->t.alloc_failures++;
			if (!ret) {
				memcpy(t->held + t->n, h, f.nr_done * 8);
				t->n += f.nr_done;
				t->t.frames_got += f.nr_done;
			}
		} else if (op < 7 && t->n) {
			uint32_t k = 1 + fz_below(&t->r, t->n);
			struct kvarena_frames f = {
				.handles = (uintptr_t)(t->held + t->n - k),
				.count = k,
			};

			if (cmd(t, uring, KVARENA_IOC_FREE, &f)) {
				printf("# stress: FREE of our own frames failed\n");
				abort();
			}
			t->n -= k;
			t->t.free_calls++;
			t->t.frames_freed += k;
		} else if (t->n) {
			struct kvarena_frame_fd ff = {
				.handle = t->held[fz_below(&t->r, t->n)] };
			struct kvarena_usage u = {
				.filled_tokens = t->n * 16,
				.filled_bytes = FS / 2 };

			/* FRAME_FD is ioctl()-only in spirit: it installs an fd. */
			if (!cmd(t, uring, KVARENA_IOC_FRAME_FD, &ff)) {
				uint8_t *m = mmap(NULL, FS, PROT_READ | PROT_WRITE,
						  MAP_SHARED, ff.fd, ff.offset);

				if (m != MAP_FAILED) {
					m[fz_below(&t->r, FS)] = 1;
					munmap(m, FS);
				}
				close(ff.fd);
			}
			cmd(t, uring, KVARENA_IOC_SET_USAGE, &u);
		}
	}
	return NULL;
}

/* The client's row in CLIENTS must say what its threads did. */
static int check_client(int fd, uint32_t id, const struct tally *t,
			uint32_t held)
{
	struct kvarena_client_info rows[64];
	struct kvarena_clients c = { .clients = (uintptr_t)rows, .count = 64 };
	unsigned int i;

	fz_name(c.name, "%s", arena);
	if (fz_ioctl(fd, KVARENA_IOC_CLIENTS, &c))
		return 1;
	for (i = 0; i < c.nr_clients && i < 64; i++) {
		const struct kvarena_client_info *r = &rows[i];

		if (r->client_id != id)
			continue;
		if (r->held == held && r->alloc_calls == t->alloc_calls &&
		    r->alloc_failures == t->alloc_failures &&
		    r->free_calls == t->free_calls)
			return 0;
		printf("# stress: client %u: module says held %u alloc_calls %"
		       PRIu64 " failures %" PRIu64 " free_calls %" PRIu64
		       "; its threads say %u %" PRIu64 " %" PRIu64 " %" PRIu64
		       "\n", id, r->held, (uint64_t)r->alloc_calls,
		       (uint64_t)r->alloc_failures, (uint64_t)r->free_calls,
		       held, t->alloc_calls, t->alloc_failures, t->free_calls);
		return 1;
	}
	printf("# stress: client %u not in CLIENTS\n", id);
	return 1;
}

static void add(struct tally *to, const struct tally *t)
{
	to->alloc_calls += t->alloc_calls;
	to->alloc_failures += t->alloc_failures;
	to->frames_got += t->frames_got;
	to->free_calls += t->free_calls;
	to->frames_freed += t->frames_freed;
	to->held_at_exit += t->held_at_exit;
}

/* One process's life: attach, work, check, die holding frames. */
static int life(uint64_t seed, unsigned long iters)
{
	struct thread th[THREADS];
	pthread_attr_t attr;
	struct tally client[THREADS - 1] = { 0 };
	uint32_t id[THREADS - 1], held[THREADS - 1] = { 0 };
	struct fz_rng r;
	int i, bad = 0;

	fz_seed(&r, seed);
	/*
	 * Nothing of ours may fault under io_uring's inline issue: a copy
	 * that faults there is undone and retried, and counted twice.
	 */
	mlockall(MCL_CURRENT | MCL_FUTURE);
	for (i = 0; i < THREADS - 1; i++) {
		struct kvarena_attach a = { .min_frames = fz_below(&r, 3) };
		int fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);

		fz_name(a.name, "%s", arena);
		fz_name(a.label, "stress-%d", getpid());
		/* A guarantee may not fit just now: then none. */
		if (fz_ioctl(fd, KVARENA_IOC_ATTACH, &a)) {
			a.min_frames = 0;
			if (fz_ioctl(fd, KVARENA_IOC_ATTACH, &a))
				return 10;
		}
		id[i] = a.client_id;
		/* Threads 0 and 1 share client 0. */
		th[i ? i + 1 : 0].fd = fd;
		if (!i)
			th[1].fd = fd;
	}
	pthread_attr_init(&attr);
	/* Small stacks: mlockall() makes every page of them resident. */
	pthread_attr_setstacksize(&attr, 256 << 10);
	for (i = 0; i < THREADS; i++) {
		memset(&th[i].t, 0, sizeof(th[i].t));
		th[i].n = 0;
		th[i].iters = iters;
		fz_seed(&th[i].r, fz_next(&r));
		if (!no_ring && io_uring_queue_init(4, &th[i].ring, 0))
			return 11;
		if (pthread_create(&th[i].tid, &attr, thread_main, &th[i]))
			return 13;
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i].tid, NULL);
	for (i = 0; i < THREADS; i++) {
		int c = i ? i - 1 : 0;

		th[i].t.held_at_exit = th[i].n;
		add(&client[c], &th[i].t);
		held[c] += th[i].n;
	}
	for (i = 0; i < THREADS - 1; i++)
		bad += check_client(th[i ? i + 1 : 0].fd, id[i], &client[i],
				    held[i]);
	pthread_mutex_lock(&tot->lock);
	for (i = 0; i < THREADS - 1; i++)
		add(&tot->t, &client[i]);
	tot->lives++;
	tot->checks_failed += bad;
	pthread_mutex_unlock(&tot->lock);
	/* exit() with the frames still held: the release returns them. */
	return bad ? 12 : 0;
}

/* The administrator: new limits for whichever clients are there. */
static void set_limits(int fd, struct fz_rng *r)
{
	struct kvarena_client_info rows[64];
	struct kvarena_clients c = { .clients = (uintptr_t)rows, .count = 64 };
	struct kvarena_limits l = { 0 };

	fz_name(c.name, "%s", arena);
	if (fz_ioctl(fd, KVARENA_IOC_CLIENTS, &c) || !c.nr_clients)
		return;
	fz_name(l.name, "%s", arena);
	l.client_id = rows[fz_below(r, c.nr_clients < 64 ? c.nr_clients : 64)]
		      .client_id;
	l.min_frames = fz_below(r, 6);
	l.max_frames = fz_one_in(r, 3) ? 0 : l.min_frames + fz_below(r, 40);
	fz_ioctl(fd, KVARENA_IOC_SET_LIMITS, &l);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "lives", 1, NULL, 'l' }, { "procs", 1, NULL, 'p' },
		{ "iters", 1, NULL, 'i' }, { "seed", 1, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long lives = 24, nprocs = 4, iters = 300, started = 0;
	unsigned long limit_changes = 0;
	uint64_t seed = fz_clock_seed();
	pid_t pids[MAX_PROCS] = { 0 };
	pthread_mutexattr_t ma;
	struct kvarena_stat s;
	int fd, c, failures = 0, live = 0;
	struct fz_rng r;
	uint32_t lost = 0;
	double t0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'l': lives = strtoul(optarg, NULL, 0); break;
		case 'p': nprocs = strtoul(optarg, NULL, 0); break;
		case 'i': iters = strtoul(optarg, NULL, 0); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: stress [--lives N] [--procs N] [--iters N] [--seed S]\n");
			return 2;
		}
	}
	if (!nprocs || nprocs > MAX_PROCS)
		nprocs = MAX_PROCS;
	printf("TAP version 13\n1..1\n");
	printf("# stress: seed 0x%016" PRIx64 ", %lu process lives, %lu at "
	       "once, %d threads each, %lu iterations per thread\n", seed,
	       lives, nprocs, THREADS, iters);
	no_ring = kva_uring_missing();
	if (no_ring)
		printf("# stress: every command over ioctl: %s\n", no_ring);
	fflush(stdout);
	fz_seed(&r, seed);

	tot = mmap(NULL, sizeof(*tot), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&tot->lock, &ma);
	fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0 || fz_arena_create(fd, arena, NR, FS, true)) {
		printf("# cannot set up: %s\n", strerror(errno));
		fz_ktap_result("stress", 1);
		return 1;
	}
	t0 = fz_now();
	while (started < lives || live) {
		unsigned long i;
		int status;
		pid_t pid;

		for (i = 0; i < nprocs && started < lives; i++) {
			uint64_t ps = fz_next(&r);

			if (pids[i])
				continue;
			pids[i] = fork();
			if (pids[i] == 0) {
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				_exit(life(ps, iters));
			}
			started++;
			live++;
		}
		set_limits(fd, &r);
		limit_changes++;
		pid = waitpid(-1, &status, WNOHANG);
		if (pid <= 0) {
			usleep(2000);
			continue;
		}
		for (i = 0; i < nprocs; i++)
			if (pids[i] == pid)
				pids[i] = 0;
		live--;
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			printf("# stress: process %d ended with status 0x%x\n",
			       pid, status);
			failures++;
		}
	}

	if (fz_wait_no_clients(fd, arena, 30) < 0)
		failures++;
	failures += fz_check_quiet(fd, arena, &lost);
	if (!fz_stat(fd, arena, &s)) {
		const struct tally *t = &tot->t;

		if (s.alloc_calls != t->alloc_calls ||
		    s.alloc_failures != t->alloc_failures ||
		    s.free_calls != t->free_calls ||
		    s.frames_allocated != t->frames_got ||
		    s.frames_freed != t->frames_freed + t->held_at_exit) {
			printf("# stress: arena says alloc_calls %" PRIu64
			       " failures %" PRIu64 " free_calls %" PRIu64
			       " allocated %" PRIu64 " freed %" PRIu64 "\n",
			       (uint64_t)s.alloc_calls, (uint64_t)s.alloc_failures,
			       (uint64_t)s.free_calls,
			       (uint64_t)s.frames_allocated,
			       (uint64_t)s.frames_freed);
			printf("# stress: clients say %" PRIu64 " %" PRIu64 " %"
			       PRIu64 " %" PRIu64 " %" PRIu64 " (+ %" PRIu64
			       " held at exit)\n", t->alloc_calls,
			       t->alloc_failures, t->free_calls, t->frames_got,
			       t->frames_freed, t->held_at_exit);
			failures++;
		}
		printf("# stress: %" PRIu64 " ALLOC (%" PRIu64 " refused), %"
		       PRIu64 " FREE, %" PRIu64 " frames handed out, %" PRIu64
		       " returned at exit; %lu limit changes; %.1f s\n",
		       t->alloc_calls, t->alloc_failures, t->free_calls,
		       t->frames_got, t->held_at_exit, limit_changes,
		       fz_now() - t0);
	} else {
		failures++;
	}
	failures += tot->checks_failed ? 1 : 0;
	if (fz_arena_destroy(fd, arena))
		failures++;
	close(fd);
	printf("stress: %lu process lives, %s, %u frames lost\n", tot->lives,
	       failures ? "counters DISAGREE" : "counters agree", lost);
	fz_ktap_result("stress", failures || lost);
	return failures || lost;
}
