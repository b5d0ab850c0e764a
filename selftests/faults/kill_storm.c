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
 *   gang      an engine on storm-gang, a gang of two host arenas
 *             (storm-gm0, storm-gm1), or on storm-cgang, a gang of two
 *             CUDA arenas (storm-cm0, storm-cm1; a memfd a frame, a
 *             rank's mapping of it standing for an import, which nothing
 *             revokes), one or the other at random: the leader is the
 *             gang's client -
 *             ALLOC, FREE, PUBLISH, LOOKUP, SET_USAGE, a FRAME_FD of its
 *             own that must be -EOPNOTSUPP - and tells its two ranks,
 *             processes of their own, what it holds; each rank JOINs the
 *             leader's client (GANG_TOKEN's secret) and maps and touches
 *             those frames in its member, some left mapped, a revoked one
 *             (SIGBUS) survived.  Half the leaders ask for RANKS_FATAL.
 *             A leader whose rank ends checks that it is evicted if it
 *             asked (the rank's file is released before it is reaped),
 *             and otherwise starts another rank.
 *   tier      on storm-up, whose lower tier is storm-low (ARENA_SET_TIER):
 *             frames filled with what their key says (any process can
 *             check a frame from its key), published as chains, LOOKUPed with
 *             KVARENA_LOOKUP_LOWER, and what is below PROMOTEd (short
 *             timeouts; over ioctl or io_uring); a few read the lower
 *             arena's copies directly.
 *             Every frame that comes back is checked byte for byte.
 *
 * Beside them run a few tier agents (root, as kvarenactl agent): they
 * take jobs (TIER), check the frame they copy from, copy it through
 * FRAME_FD mappings of both frames - pausing somewhere, now and then
 * over half a destination they first fill with garbage (a torn copy),
 * now and then giving one back failed over a torn destination - and give
 * the jobs back.  The upper arena's free target (a quarter to three
 * quarters of it, by the seed) makes demotions happen often, and the
 * lower arena is smaller than the keys, so keys go down, are dropped
 * below and go down again.  Evictions and resizes take the tier's two
 * arenas too, now and then.
 *
 * The driver keeps a few workers alive and kills one process group every
 * few milliseconds with SIGKILL, after a random delay (sometimes none:
 * killed while attaching), and starts another.  A gang engine, half the
 * time, loses a part only: its leader alone - whose client must then
 * leave the gang, and whose ranks must find it gone (-ENOLINK) and end
 * by themselves, as the driver, their subreaper, sees - or one rank -
 * with RANKS_FATAL the leader's client must leave the gang (the leader,
 * evicted, ends by itself), without it stay.  Now and then, as an
 * administrator would, it EVICTs a random client instead, whatever it is
 * doing: its frames go back, its mappings are zapped, its commands fail
 * with ESHUTDOWN (and a worker that sees that exits, or dies of SIGBUS
 * touching a revoked mapping, and is replaced); the gang's clients too,
 * whose ranks then lose them.  And now and then it
 * resizes an arena (ARENA_RESIZE) to a random size, shrinking it under
 * frames the workers hold (the shrink waits for them) or growing it back,
 * sometimes cancelling a shrink that waits.  Now and then it kills a tier
 * agent too, at a moment picked by what the agent says it is doing
 * (waiting for jobs, holding them, copying, over a torn destination):
 * stopped (SIGSTOP) so that its jobs stand still, then killed.  Each key
 * it was copying must then be cached above or whole below - unless an
 * event says the key was reclaimed since - and is checked byte for byte
 * where it is.  After every kill and
 * every eviction it checks the counts that hold at any moment (of the
 * gang too, and that each member's own table is idle: no client, nothing
 * held, every frame free, all backed); at the end
 * it kills the rest, grows every arena back to its size at create, waits
 * for every client to be gone (a killed process's io_uring is torn down by
 * a kernel worker, after the process is reaped) and checks every arena:
 * nothing held, reserved or filled, nothing absent or awaited by a
 * shrink, free + cached = capacity, as many
 * keys published as frames cached, frames_allocated - frames_freed =
 * held + cached.  Before that it takes the tier away (which no copy may
 * be under way for: every agent and every PROMOTE's caller is gone), and
 * looks up every key in both arenas: each cached frame must be whole.
 * The gang goes last: quiet, every frame back, destroyed, then its
 * members, free again (sysfs names no gang), all their frames there and
 * backed, quiet too.
 * The kernel log is checked by the VM runner.
 *
 *   kill_storm [--kills N] [--workers N] [--delay-ms N] [--evict-every N]
 *              [--resize-every N] [--agents N] [--agent-kill-every N]
 *              [--seed S]
 *
 * Prints "kill storm: N kills, E evictions, R resizes, A agents killed,
 * D frames demoted, P promoted, V verified, M frames lost" (M must be 0,
 * the gang's and its members' counted in).
 */
#include <getopt.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include <kvarena.h>

#include "faults.h"

/* Why no worker uses io_uring on this kernel, or NULL (main sets it). */
static const char *no_ring;

#define FS		(64u << 10)	/* frame size */
#define NR_HOST		96u		/* frames of the mapped arena */
#define NR_ACCT		512u		/* frames of the accounting arena */
#define MAX_WORKERS	16
#define TFS		(16u << 10)	/* frame size of the tier's arenas */
#define NR_UP		48u		/* frames of the arena with a lower tier */
#define NR_LOW		64u		/* frames of its lower tier */
#define NKEYS		128u		/* keys the tier workers use: more than
					   the lower tier holds */
#define TIER_MAX	16u		/* a tier worker's max */
#define MAX_AGENTS	4
#define AGENT_BATCH	8		/* jobs an agent takes at once, at most */

static const char *const arena_host = "storm-host";
static const char *const arena_acct = "storm-acct";
static const char *const arena_up = "storm-up";
static const char *const arena_low = "storm-low";

/* W_AGENT is no kind a worker's place is given at random. */
enum { W_IOCTL, W_URING, W_RUNTIME, W_PREFIX, W_TIER, W_GANG, W_KINDS,
       W_AGENT = W_KINDS };

/* What an agent says it is doing (struct agent_rec.phase). */
enum { PH_START, PH_WAIT, PH_HOLD, PH_COPY, PH_TORN, PH_DONE, PH_N };

static const char *const phase_name[PH_N] = {
	"attaching", "waiting for jobs", "holding jobs", "mid-copy",
	"over a torn destination", "giving jobs back",
};

/*
 * An agent's record, in memory shared with the driver: read only while
 * the agent is stopped, so it stands still.  The jobs are valid in
 * PH_HOLD, PH_COPY and PH_TORN (taken, none given back yet); a job's key
 * is known once the agent has read the frame it copies from.
 */
struct agent_rec {
	int phase;
	int njobs;
	struct {
		uint32_t op;
		int32_t key;
	} job[AGENT_BATCH];
};

#define GANG_N		2		/* members, and ranks of an engine */
#define NR_GANG		32u		/* frames of each member, and the gang */
#define GANG_HELD	16		/* a leader's frames at most */
#define NKEYS_GANG	16u		/* prefix keys the leaders share */

/*
 * Two gangs: of host arenas, and of CUDA arenas (each frame a memfd of
 * its own, as CUDA exports one allocation a frame; a rank's mapping of it
 * stands for an import, which nothing revokes).  A gang worker picks one.
 */
struct storm_gang {
	const char *name;
	const char *member_fmt;
	uint32_t mem_kind;
};

static const struct storm_gang gangs[2] = {
	{ "storm-gang", "storm-gm%u", KVARENA_MEM_HOST },
	{ "storm-cgang", "storm-cm%u", KVARENA_MEM_CUDA },
};

static const char *const arena_gang = "storm-gang";

static void member_name(const struct storm_gang *sg, char *name,
			unsigned int r)
{
	fz_name(name, sg->member_fmt, r);
}

/* A gang worker's record, in the shared memory, by its worker place. */
struct gang_rec {
	int cuda;			/* its gang: gangs[cuda] */
	int ready;			/* the fields below are written */
	uint32_t client_id;
	uint64_t token;
	int fatal;			/* it asked for RANKS_FATAL */
	pid_t rank_pid[GANG_N];		/* 0: none now */
	int joined[GANG_N];		/* that rank's JOIN is done */
	uint32_t n;			/* what it holds: held[0..n) */
	uint64_t held[GANG_HELD];
};

/* Counts every process adds to, and the agents' and gang workers' records. */
struct shared {
	struct agent_rec ag[MAX_AGENTS];
	unsigned long verified_hit;	/* LOOKUP hits above, checked */
	unsigned long verified_promoted; /* PROMOTEd frames, checked */
	unsigned long verified_lower;	/* read below by a worker, checked */
	unsigned long verified_source;	/* frames an agent copied from */
	unsigned long promote_calls, promote_frames, promote_timeouts;
	unsigned long promote_uring;	/* of the calls, over io_uring */
	unsigned long promote_failed;	/* -EIO: a copy given back failed */
	unsigned long copies_torn;	/* destinations filled with garbage */
	unsigned long copies_failed;	/* jobs given back failed on purpose */
	struct gang_rec gw[MAX_WORKERS];	/* by worker place */
	unsigned long gang_touches;	/* frames a rank mapped and touched */
	unsigned long gang_sigbus;	/* ... whose mapping was revoked first */
	unsigned long gang_map_refused;	/* mmap() of a frame refused */
	unsigned long gang_engines[2];	/* engines started on gangs[i] */
};

static struct shared *sh;

#define SH_ADD(field, n) __atomic_fetch_add(&sh->field, (n), __ATOMIC_RELAXED)

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
		.transport = !no_ring && fz_one_in(r, 2) ? KVA_TRANSPORT_URING :
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

/* ---- frames whose contents their key says ------------------------------ */

#define PAT_WORDS	(TFS / 8)
#define PAT_TAG		0x544945524b450000ull	/* "TIERKE", then the key */
#define GARBAGE		0xee			/* what a torn copy holds */
#define GARBAGE_WORD	0xeeeeeeeeeeeeeeeeull

/*
 * Word @i of the frame of key @k; word 0 names the key.  Cheap (the VM
 * runs under TCG), and no two words of the frames of the keys alike.
 */
static uint64_t pat_word(uint32_t k, uint32_t i)
{
	return i ? (uint64_t)(k + 1) << 48 ^ (i * 0x9e3779b97f4a7c15ull) >> 16 :
		   (PAT_TAG & ~0xffffull) | k;
}

static void pat_fill(uint64_t *p, uint32_t k)
{
	uint32_t i;

	for (i = 0; i < PAT_WORDS; i++)
		p[i] = pat_word(k, i);
}

/* The key a frame's first word names, or -1. */
static int pat_key(const uint64_t *p)
{
	uint64_t w = p[0];

	if ((w & ~0xffffull) != (PAT_TAG & ~0xffffull) || (w & 0xffff) >= NKEYS)
		return -1;
	return (int)(w & 0xffff);
}

/*
 * Whether @p holds key @k's frame, every byte of it: 0, or -1 with what
 * is wrong in @why.
 */
static int pat_check(const uint64_t *p, uint32_t k, char *why, size_t len)
{
	uint32_t i, first = 0, bad = 0, junk = 0;
	char begins[48] = "";
	uint64_t got = 0;
	int other;

	for (i = 0; i < PAT_WORDS; i++) {
		if (p[i] == pat_word(k, i))
			continue;
		if (!bad++) {
			first = i;
			got = p[i];
		}
		junk += p[i] == GARBAGE_WORD;
	}
	if (!bad)
		return 0;
	other = pat_key(p);
	if (other >= 0 && (uint32_t)other != k)
		snprintf(begins, sizeof(begins), "; it begins as key %d's", other);
	snprintf(why, len, "%u of %u words wrong, the first at byte %u "
		 "(0x%016" PRIx64 ", want 0x%016" PRIx64 "); %u words of an "
		 "agent's garbage (a torn copy)%s", bad, (unsigned int)PAT_WORDS,
		 first * 8, got, pat_word(k, first), junk, begins);
	return -1;
}

static void tier_key(uint8_t *key, uint32_t k)
{
	memset(key, 0, KVARENA_KEY_LEN);
	key[0] = 0xa5;
	key[1] = (uint8_t)k;
	key[2] = (uint8_t)(k >> 8);
	memcpy(key + 3, "kill-storm-tier", 15);
}

/* The tier workers' key that @key is, or -1. */
static int tier_key_of(const uint8_t *key)
{
	uint8_t want[KVARENA_KEY_LEN];
	uint32_t k = key[1] | (uint32_t)key[2] << 8;

	if (k >= NKEYS)
		return -1;
	tier_key(want, k);
	return memcmp(key, want, KVARENA_KEY_LEN) ? -1 : (int)k;
}

/*
 * Map frame @h of the client on @fd: the mapping, or NULL with -errno in
 * @err (FRAME_FD's, or mmap()'s).
 */
static uint64_t *map_frame(int fd, uint64_t h, int prot, int *err)
{
	struct kvarena_frame_fd ff = { .handle = h };
	void *p;

	*err = fz_ioctl(fd, KVARENA_IOC_FRAME_FD, &ff);
	if (*err)
		return NULL;
	p = mmap(NULL, TFS, prot, MAP_SHARED, ff.fd, (off_t)ff.offset);
	*err = p == MAP_FAILED ? -errno : 0;
	close(ff.fd);
	return p == MAP_FAILED ? NULL : p;
}

/*
 * Check frame @h (held by the client on @fd) against key @k: 0 when whole,
 * -1 when not (said on stdout, as @who saw it, @what it was), or -errno
 * when it could not be mapped.
 */
static int verify(int fd, uint64_t h, uint32_t k, const char *who,
		  const char *what)
{
	char why[256];
	uint64_t *p;
	int err, ret;

	p = map_frame(fd, h, PROT_READ, &err);
	if (!p)
		return err;
	ret = pat_check(p, k, why, sizeof(why));
	munmap(p, TFS);
	if (ret)
		dprintf(1, "# %s %d: TORN OR WRONG FRAME: key %u, %s (handle "
			"0x%" PRIx64 "): %s\n", who, getpid(), k, what, h, why);
	return ret;
}

/* ---- the tier worker: publish, look up above and below, promote -------- */

#define TIER_HELD	64

/* A tier worker's end on a command that failed: given up, or failed. */
static void tier_fail(const char *what, int err)
{
	if (err == -ESHUTDOWN)
		_exit(0);
	dprintf(1, "# tier worker %d: %s: %s\n", getpid(), what,
		strerror(-err));
	_exit(111);
}

/* Verify, or end the worker: 110 for a torn or wrong frame. */
static void tier_verify(int fd, uint64_t h, uint32_t k, const char *what)
{
	int ret = verify(fd, h, k, "tier worker", what);

	if (ret == -1)
		_exit(110);
	if (ret)
		tier_fail("FRAME_FD and mmap of a frame it holds", ret);
}

/* Fill @len new frames with keys @first.. and publish them as a chain. */
static unsigned int tier_publish(int fd, struct kvarena_prefix_entry *e,
				 uint32_t first, uint32_t len, uint64_t *held)
{
	struct kvarena_frames f = { .handles = (uintptr_t)held, .count = len };
	struct kvarena_prefix x = { .entries = (uintptr_t)e, .count = len };
	uint32_t i;
	int err;

	if (wcall(fd, KVARENA_IOC_ALLOC, &f))
		return 0;	/* -ENOSPC: frames held, or a shrink */
	for (i = 0; i < len; i++) {
		uint64_t *p = map_frame(fd, held[i], PROT_READ | PROT_WRITE,
					&err);

		if (!p)
			tier_fail("FRAME_FD and mmap of a frame it allocated",
				  err);
		pat_fill(p, first + i);
		munmap(p, TFS);
		e[i].handle = held[i];
	}
	/* Keys published already keep their frame; ours stay private. */
	err = wcall(fd, KVARENA_IOC_PUBLISH, &x);
	if (err && err != -ENOMEM)
		tier_fail("PUBLISH of frames it filled", err);
	return len;
}

/*
 * PROMOTE over ioctl() or, one time in two, over io_uring, where it waits
 * in io_uring's worker: a worker killed then has its ring's release
 * cancel the wait.
 */
static int promote_call(struct fz_rng *r, int fd, struct kvarena_promote *pr)
{
	static struct io_uring ring;
	static int have_ring;		/* 0: not tried, 1: made, -1: none */
	int ret;

	if (!have_ring)
		have_ring = no_ring || io_uring_queue_init(2, &ring, 0) ? -1 : 1;
	if (have_ring < 0 || fz_one_in(r, 2))
		return wcall(fd, KVARENA_IOC_PROMOTE, pr);
	SH_ADD(promote_uring, 1);
	ret = fz_uring(&ring, fd, KVARENA_IOC_PROMOTE, pr, 0);
	if (ret == -ESHUTDOWN)
		_exit(0);
	return ret;
}

/*
 * LOOKUP keys @first.. with KVARENA_LOOKUP_LOWER, check what is found,
 * and now and then PROMOTE what is below, and check that.  Returns how
 * many new holds it adds to @held.
 */
static unsigned int tier_lookup(struct fz_rng *r, int fd,
				struct kvarena_prefix_entry *e, uint32_t first,
				uint32_t len, uint64_t *held, unsigned int room)
{
	struct kvarena_prefix x = { .entries = (uintptr_t)e, .count = len,
				    .flags = KVARENA_LOOKUP_LOWER };
	struct kvarena_promote pr = { 0 };
	unsigned int n = 0;
	uint32_t i, run;
	int ret;

	ret = wcall(fd, KVARENA_IOC_LOOKUP, &x);
	if (ret == -ENOSPC || ret == -ENOMEM)
		return 0;
	if (ret)
		tier_fail("LOOKUP with KVARENA_LOOKUP_LOWER", ret);
	run = x.nr_done;
	if (run > len || x.nr_lower > len - run) {
		dprintf(1, "# tier worker %d: LOOKUP of %u keys: %u found, %u "
			"below\n", getpid(), len, run, x.nr_lower);
		_exit(111);
	}
	for (i = 0; i < run; i++) {
		tier_verify(fd, e[i].handle, first + i, "found by LOOKUP above");
		SH_ADD(verified_hit, 1);
		if (!(e[i].flags & KVARENA_PREFIX_HELD))
			held[n++] = e[i].handle;
	}
	if (!x.nr_lower || fz_one_in(r, 4))
		return n;
	/* The keys after the run, as many as are below (or one more). */
	pr.entries = (uintptr_t)(e + run);
	pr.count = x.nr_lower + (run + x.nr_lower < len && fz_one_in(r, 4));
	pr.timeout_ms = 5 + fz_below(r, 150);
	for (i = run; i < run + pr.count; i++) {
		e[i].handle = 0;
		e[i].flags = 0;
	}
	SH_ADD(promote_calls, 1);
	ret = promote_call(r, fd, &pr);
	switch (ret) {
	case 0:
		break;
	case -ETIMEDOUT:
		SH_ADD(promote_timeouts, 1);
		return n;
	case -EIO:
		SH_ADD(promote_failed, 1);
		return n;
	/* Documented, and nothing wrong in a storm. */
	case -ENODEV: case -ENOSPC: case -EAGAIN: case -EEXIST:
	case -EINTR: case -ENOMEM:
		return n;
	default:
		tier_fail("PROMOTE", ret);
	}
	if (pr.nr_done > pr.count || n + pr.nr_done > room) {
		dprintf(1, "# tier worker %d: PROMOTE of %u keys brought %u up "
			"(%u held, max %u)\n", getpid(), pr.count, pr.nr_done,
			n, TIER_MAX);
		_exit(111);
	}
	for (i = run; i < run + pr.nr_done; i++) {
		tier_verify(fd, e[i].handle, first + i,
			    "brought up by PROMOTE");
		held[n++] = e[i].handle;
	}
	SH_ADD(promote_frames, pr.nr_done);
	SH_ADD(verified_promoted, pr.nr_done);
	return n;
}

/* Look keys up in the lower arena itself, check and let go of them. */
static void tier_read_lower(int lfd, struct kvarena_prefix_entry *e,
			    uint32_t first, uint32_t len)
{
	struct kvarena_prefix x = { .entries = (uintptr_t)e, .count = len };
	uint64_t h[8];
	uint32_t i, n = 0;
	int ret;

	ret = wcall(lfd, KVARENA_IOC_LOOKUP, &x);
	if (ret == -ENOSPC || ret == -ENOMEM)
		return;
	if (ret)
		tier_fail("LOOKUP in the lower arena", ret);
	for (i = 0; i < x.nr_done; i++) {
		tier_verify(lfd, e[i].handle, first + i,
			    "found below by a LOOKUP in the lower arena");
		SH_ADD(verified_lower, 1);
		if (!(e[i].flags & KVARENA_PREFIX_HELD))
			h[n++] = e[i].handle;
	}
	if (n) {
		struct kvarena_frames f = { .handles = (uintptr_t)h,
					    .count = n };

		ret = wcall(lfd, KVARENA_IOC_FREE, &f);
		if (ret)
			tier_fail("FREE of frames found below", ret);
	}
}

static void worker_tier(struct fz_rng *r)
{
	struct kvarena_prefix_entry e[8];
	uint64_t held[TIER_HELD];
	unsigned int n = 0, i;
	int fd = dev_open(), lfd = -1;

	attach(fd, arena_up, 0, TIER_MAX);
	if (fz_one_in(r, 3)) {
		lfd = dev_open();
		attach(lfd, arena_low, 0, 8);
	}
	for (;;) {
		uint32_t len = 1 + fz_below(r, 6);
		uint32_t first = fz_below(r, NKEYS - len + 1);

		memset(e, 0, sizeof(e));
		for (i = 0; i < len; i++)
			tier_key(e[i].key, first + i);
		switch (fz_below(r, lfd >= 0 ? 4 : 3)) {
		case 0:
			if (n + len <= TIER_MAX)
				n += tier_publish(fd, e, first, len, held + n);
			break;
		case 1:
			n += tier_lookup(r, fd, e, first, len, held + n,
					 TIER_HELD - n);
			break;
		case 2:
			if (n) {
				uint32_t k = 1 + fz_below(r, n);
				struct kvarena_frames f = {
					.handles = (uintptr_t)(held + n - k),
					.count = k };

				if (!wcall(fd, KVARENA_IOC_FREE, &f))
					n -= k;
			}
			break;
		default:
			tier_read_lower(lfd, e, first, len);
			break;
		}
		/*
		 * A serving process does other things too: every frame it
		 * publishes goes down, and the VM has two CPUs for all.
		 */
		usleep(fz_below(r, 1000));
	}
}

/* ---- the tier agent ----------------------------------------------------- */

/* An agent's end on a command that failed: given up, or failed. */
static void agent_fail(const char *what, int err)
{
	if (err == -ESHUTDOWN)
		_exit(0);
	dprintf(1, "# agent %d: %s: %s\n", getpid(), what, strerror(-err));
	_exit(111);
}

/*
 * Copy job @j, the @ji-th of agent record @a's, as an agent does: check
 * the frame it copies from (and note its key), now and then fill half the
 * destination with garbage first, copy (pausing somewhere), and now and
 * then give it back failed over a torn destination.  Returns the job's
 * result.
 */
static int agent_copy(struct fz_rng *r, int up, int lo,
		      const struct kvarena_tier_job *j,
		      volatile struct agent_rec *a, int ji)
{
	bool down = j->op == KVARENA_TIER_DEMOTE;
	bool torn = fz_one_in(r, 3), fail = fz_one_in(r, 12);
	int sfd = down ? up : lo, dfd = down ? lo : up, err, key;
	uint64_t sfh = down ? j->upper : j->lower;
	uint64_t dfh = down ? j->lower : j->upper;
	uint64_t *src, *dst;
	char why[256];
	uint32_t c, chunks = 16, pause_at = fz_below(r, 16);
	size_t cs = TFS / chunks;

	if (j->op != KVARENA_TIER_DEMOTE && j->op != KVARENA_TIER_PROMOTE) {
		dprintf(1, "# agent %d: a job of op %u\n", getpid(), j->op);
		_exit(111);
	}
	src = map_frame(sfd, sfh, PROT_READ, &err);
	if (!src)
		agent_fail("FRAME_FD and mmap of a job's source", err);
	/* A frame published above or below is whole, whoever copied it. */
	key = pat_key(src);
	if (key < 0 || pat_check(src, key, why, sizeof(why))) {
		if (key < 0)
			snprintf(why, sizeof(why), "names no key (0x%016"
				 PRIx64 ")", src[0]);
		dprintf(1, "# agent %d: TORN OR WRONG FRAME: the %s frame "
			"(handle 0x%" PRIx64 ") it is to copy %s: %s\n",
			getpid(), down ? "upper" : "lower", sfh,
			down ? "down" : "up", why);
		_exit(110);
	}
	SH_ADD(verified_source, 1);
	a->job[ji].key = key;
	dst = map_frame(dfd, dfh, PROT_READ | PROT_WRITE, &err);
	if (!dst)
		agent_fail("FRAME_FD and mmap of a job's destination", err);
	a->phase = PH_COPY;
	if (torn) {
		a->phase = PH_TORN;
		memset(dst, GARBAGE, TFS / 2);
		SH_ADD(copies_torn, 1);
	}
	for (c = 0; c < chunks; c++) {
		if (fail && c == chunks / 2) {
			/* Half copied, the rest garbage: given back failed. */
			a->phase = PH_TORN;
			memset((char *)dst + c * cs, GARBAGE, TFS - c * cs);
			usleep(fz_below(r, 3000));
			break;
		}
		/*
		 * A copy takes a while (a GPU's would): a window to die in,
		 * and fewer copies in all, asleep (the VM has two CPUs).
		 */
		if (c == pause_at)
			usleep(fz_below(r, 3000));
		memcpy((char *)dst + c * cs, (char *)src + c * cs, cs);
		if (torn && (c + 1) * cs >= TFS / 2)
			a->phase = PH_COPY;
	}
	munmap(src, TFS);
	munmap(dst, TFS);
	a->phase = PH_HOLD;
	if (fail)
		SH_ADD(copies_failed, 1);
	return fail ? -EIO : 0;
}

static void agent(struct fz_rng *r, int slot)
{
	volatile struct agent_rec *a = &sh->ag[slot];
	int up, lo;

	/* Its record starts as the driver left it: attaching, no jobs. */
	up = dev_open();
	lo = dev_open();
	attach(up, arena_up, 0, 0);
	attach(lo, arena_low, 0, 0);
	for (;;) {
		struct kvarena_tier_job j[AGENT_BATCH];
		struct kvarena_tier t = {
			.jobs = (uintptr_t)j, .count = 1 + fz_below(r, AGENT_BATCH),
			.timeout_ms = 1 + fz_below(r, 40), .lower_fd = lo,
		};
		int ret, i;

		a->phase = PH_WAIT;
		ret = fz_ioctl(up, KVARENA_IOC_TIER, &t);
		if (ret == -EINTR)
			continue;
		if (ret == -EINVAL) {
			/* Its lower client evicted?  Its commands say so. */
			struct kvarena_usage u = { 0 };

			if (fz_ioctl(lo, KVARENA_IOC_SET_USAGE, &u) == -ESHUTDOWN)
				_exit(0);
		}
		if (ret)
			agent_fail("TIER take", ret);
		if (!t.nr_done)
			continue;
		if (t.nr_done > t.count) {
			dprintf(1, "# agent %d: took %u jobs of %u\n", getpid(),
				t.nr_done, t.count);
			_exit(111);
		}
		for (i = 0; i < (int)t.nr_done; i++) {
			a->job[i].op = j[i].op;
			a->job[i].key = -1;
		}
		a->njobs = (int)t.nr_done;
		a->phase = PH_HOLD;
		for (i = 0; i < (int)t.nr_done; i++)
			j[i].result = agent_copy(r, up, lo, &j[i], a, i);
		/* Now and then it sits on its jobs a while. */
		if (fz_one_in(r, 6))
			usleep(fz_below(r, 2000));
		a->phase = PH_DONE;
		t = (struct kvarena_tier){ .jobs = (uintptr_t)j,
					   .count = t.nr_done,
					   .flags = KVARENA_TIER_DONE };
		ret = fz_ioctl(up, KVARENA_IOC_TIER, &t);
		if (ret)
			agent_fail("TIER done", ret);
		if (t.nr_done != t.count) {
			dprintf(1, "# agent %d: gave back %u jobs of %u\n",
				getpid(), t.nr_done, t.count);
			_exit(111);
		}
		a->njobs = 0;
		/*
		 * A rest between batches: demotions would take every CPU
		 * cycle the VM's two have, and the other workers need some.
		 */
		a->phase = PH_WAIT;
		usleep(fz_below(r, 1000));
	}
}

/* ---- the gang worker: a leader and its ranks ----------------------------- */

/*
 * An engine of GANG_N ranks over a gang of GANG_N host arenas: the leader
 * (the worker) is the gang's client - it allocates, frees, publishes and
 * looks up, and tells its ranks what it holds through shared memory; each
 * rank is a process of its own that JOINs the leader's client and maps
 * and touches, in its member, the frames the leader holds (reading what
 * it may only read).  Half the leaders ask for RANKS_FATAL.  The driver
 * kills the whole engine, or its leader alone (the ranks must then find
 * their client gone, -ENOLINK, and end), or one rank (with RANKS_FATAL
 * the leader's client is evicted with it; without, the leader starts
 * another rank).
 */
static sigjmp_buf rank_jmp;
static volatile sig_atomic_t rank_touching;

/* A revoked mapping touched: "each rank's next touch is SIGBUS". */
static void rank_sigbus(int sig)
{
	if (rank_touching)
		siglongjmp(rank_jmp, 1);
	_exit(112);
}

static void gang_key(uint8_t *key, uint32_t k)
{
	memset(key, 0, KVARENA_KEY_LEN);
	key[0] = 0x9a;
	key[1] = (uint8_t)k;
	memcpy(key + 2, "kill-storm-gang", 15);
}

/* A rank: its own process, joined to the leader's client as rank @rank. */
static void gang_rank(struct fz_rng *r, volatile struct gang_rec *g,
		      unsigned int rank)
{
	struct kvarena_join j = { .client_id = g->client_id, .rank = rank,
				  .token = g->token };
	struct sigaction sa = { .sa_handler = rank_sigbus };
	char want[KVARENA_NAME_LEN];
	void *maps[4] = { 0 };
	unsigned int nmaps = 0;
	int fd = dev_open(), ret;

	const struct storm_gang *sg = &gangs[g->cuda];

	fz_name(j.name, "%s", sg->name);
	fz_name(j.label, "storm-rank%u", rank);
	ret = fz_ioctl(fd, KVARENA_IOC_JOIN, &j);
	/* Its client gone (killed, evicted) before it could join. */
	if (ret == -ENOENT)
		_exit(0);
	member_name(sg, want, rank);
	if (ret || strcmp(j.member, want) || j.nr_frames != NR_GANG ||
	    j.frame_size != TFS || j.mem_kind != sg->mem_kind) {
		dprintf(1, "# gang rank %d: JOIN of client %u as rank %u: %s, "
			"member %.32s, %u frames of %llu\n", getpid(),
			j.client_id, rank, strerror(-ret), j.member,
			j.nr_frames, (unsigned long long)j.frame_size);
		_exit(113);
	}
	g->joined[rank] = 1;
	sigaction(SIGBUS, &sa, NULL);
	for (;;) {
		uint32_t n = g->n;
		struct kvarena_frame_fd ff = { 0 };
		volatile uint8_t *p;
		bool w;

		usleep(fz_below(r, 800));
		if (!n || n > GANG_HELD)
			continue;
		ff.handle = g->held[fz_below(r, n)];
		ret = fz_ioctl(fd, KVARENA_IOC_FRAME_FD, &ff);
		/* "Once the client is gone ... FRAME_FD is -ENOLINK." */
		if (ret == -ENOLINK)
			_exit(0);
		/* Freed since it was told (and maybe another's now). */
		if (ret == -ESTALE || ret == -ENOENT || ret == -EPERM)
			continue;
		if (ret) {
			dprintf(1, "# gang rank %d: FRAME_FD of 0x%llx: %s\n",
				getpid(), (unsigned long long)ff.handle,
				strerror(-ret));
			_exit(113);
		}
		w = ff.access & KVARENA_ACCESS_WRITE;
		p = mmap(NULL, ff.size, PROT_READ | (w ? PROT_WRITE : 0),
			 MAP_SHARED, ff.fd, (off_t)ff.offset);
		close(ff.fd);
		if (p == MAP_FAILED) {
			SH_ADD(gang_map_refused, 1);
			continue;
		}
		/* A CUDA frame's memory: its own memfd, at offset 0. */
		if (!sigsetjmp(rank_jmp, 1)) {
			rank_touching = 1;
			if (w)
				memset((void *)p, 0x40 + rank, 4096);
			else
				(void)p[fz_below(r, TFS)];
			rank_touching = 0;
			SH_ADD(gang_touches, 1);
		} else {
			rank_touching = 0;
			SH_ADD(gang_sigbus, 1);
		}
		/* A few stay mapped: the client's FREE or end must zap them. */
		if (maps[nmaps % 4])
			munmap(maps[nmaps % 4], TFS);
		maps[nmaps++ % 4] = (void *)p;
	}
}

/* Start rank @rank of leader @g (the leader's own file @lfd not kept). */
static pid_t gang_rank_spawn(struct fz_rng *r, volatile struct gang_rec *g,
			     unsigned int rank, int lfd)
{
	uint64_t seed = fz_next(r);
	pid_t pid;

	g->joined[rank] = 0;
	pid = fork();
	if (pid == 0) {
		struct fz_rng rr;

		/* Its client's file is the leader's alone. */
		close(lfd);
		fz_seed(&rr, seed);
		gang_rank(&rr, g, rank);
		_exit(0);
	}
	return pid > 0 ? pid : 0;
}

/* The leader's end on a command that failed: given up, or failed. */
static void leader_fail(const char *what, int err)
{
	if (err == -ESHUTDOWN)
		_exit(0);
	dprintf(1, "# gang leader %d: %s: %s\n", getpid(), what,
		strerror(-err));
	_exit(114);
}

/* Tell the ranks what the leader holds (racy: they check with FRAME_FD). */
static void leader_tell(volatile struct gang_rec *g, const uint64_t *held,
			uint32_t n)
{
	uint32_t i;

	if (n < g->n)
		g->n = n;
	for (i = 0; i < n; i++)
		g->held[i] = held[i];
	g->n = n;
}

/* A rank of ours ended with @status: start another, or go. */
static void leader_reaped(struct fz_rng *r, volatile struct gang_rec *g,
			  int fd, unsigned int i, int status, uint32_t flags)
{
	struct kvarena_gang_token t = { .flags = flags };
	bool joined = g->joined[i];
	int ret;

	g->rank_pid[i] = 0;
	if (WIFEXITED(status) && WEXITSTATUS(status)) {
		dprintf(1, "# gang leader %d: rank %u exited %d\n", getpid(), i,
			WEXITSTATUS(status));
		_exit(114);
	}
	/* The same flags: a look that changes nothing.  Evicted: go. */
	ret = wcall(fd, KVARENA_IOC_GANG_TOKEN, &t);
	if (ret)
		leader_fail("GANG_TOKEN after a rank ended", ret);
	/*
	 * "KVARENA_GANG_RANKS_FATAL: ... the release of any rank that joined
	 * this client ... evicts this client": the rank's file was released
	 * before it could be reaped.
	 */
	if ((flags & KVARENA_GANG_RANKS_FATAL) && joined) {
		dprintf(1, "# gang leader %d: rank %u (joined) ended (%s %d) "
			"with RANKS_FATAL, and client %u is still there\n",
			getpid(), i, WIFEXITED(status) ? "exit" : "signal",
			WIFEXITED(status) ? WEXITSTATUS(status) :
			WTERMSIG(status), g->client_id);
		_exit(114);
	}
	/*
	 * A rank gives up (-ENOENT at JOIN, -ENOLINK after) only with its
	 * client gone, which it is not.
	 */
	if (WIFEXITED(status)) {
		dprintf(1, "# gang leader %d: rank %u gave up (%s), client %u "
			"there\n", getpid(), i, joined ? "joined" : "at JOIN",
			g->client_id);
		_exit(114);
	}
	g->rank_pid[i] = gang_rank_spawn(r, g, i, fd);
}

static void worker_gang(struct fz_rng *r, int slot)
{
	volatile struct gang_rec *g = &sh->gw[slot];
	struct kvarena_attach a = {
		.min_frames = fz_below(r, 3),
		.max_frames = fz_one_in(r, 2) ? 0 : NR_GANG / 2 };
	struct kvarena_gang_token t = {
		.flags = fz_one_in(r, 2) ? KVARENA_GANG_RANKS_FATAL : 0 };
	uint32_t flags = t.flags;
	uint64_t held[GANG_HELD];
	unsigned int n = 0, i;
	int fd = dev_open(), ret, status;
	pid_t pid;

	g->cuda = (int)fz_below(r, 2);
	SH_ADD(gang_engines[g->cuda], 1);
	fz_name(a.name, "%s", gangs[g->cuda].name);
	fz_name(a.label, "storm-leader-%d", getpid());
	ret = fz_ioctl(fd, KVARENA_IOC_ATTACH, &a);
	if (ret == -ENOSPC && a.min_frames) {
		a.min_frames = 0;
		ret = fz_ioctl(fd, KVARENA_IOC_ATTACH, &a);
	}
	if (ret)
		leader_fail("ATTACH to the gang", ret);
	ret = wcall(fd, KVARENA_IOC_GANG_TOKEN, &t);
	if (ret || !t.token || t.nr_members != GANG_N)
		leader_fail("GANG_TOKEN", ret ? ret : -EPROTO);
	g->client_id = a.client_id;
	g->token = t.token;
	g->fatal = !!flags;
	for (i = 0; i < GANG_N; i++)
		g->rank_pid[i] = gang_rank_spawn(r, g, i, fd);
	__atomic_store_n(&g->ready, 1, __ATOMIC_RELEASE);
	for (;;) {
		uint32_t want = 1 + fz_below(r, 4);
		struct kvarena_frames f = { .handles = (uintptr_t)(held + n),
					    .count = want,
					    .flags = KVARENA_ALLOC_PARTIAL };

		while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
			for (i = 0; i < GANG_N; i++)
				if (g->rank_pid[i] == pid)
					leader_reaped(r, g, fd, i, status, flags);
		for (i = 0; i < GANG_N; i++)
			if (!g->rank_pid[i])
				g->rank_pid[i] = gang_rank_spawn(r, g, i, fd);
		if (n + want <= GANG_HELD && !wcall(fd, KVARENA_IOC_ALLOC, &f))
			n += f.nr_done;
		/* A gang's frames are mapped by its ranks, not by it. */
		if (n && fz_one_in(r, 64)) {
			struct kvarena_frame_fd ff = { .handle = held[0] };

			ret = wcall(fd, KVARENA_IOC_FRAME_FD, &ff);
			if (ret != -EOPNOTSUPP)
				leader_fail("FRAME_FD of the gang client itself "
					    "(not -EOPNOTSUPP)", ret ? ret : -EPROTO);
		}
		if (n && fz_one_in(r, 8)) {
			/* Published: read-only for its ranks from now on. */
			struct kvarena_prefix_entry e = { .handle = held[n - 1] };
			struct kvarena_prefix x = { .entries = (uintptr_t)&e,
						    .count = 1 };

			gang_key(e.key, fz_below(r, NKEYS_GANG));
			wcall(fd, KVARENA_IOC_PUBLISH, &x);
		}
		if (n < GANG_HELD && fz_one_in(r, 8)) {
			/* Another leader's frame, maybe: shared, read-only. */
			struct kvarena_prefix_entry e = { 0 };
			struct kvarena_prefix x = { .entries = (uintptr_t)&e,
						    .count = 1 };

			gang_key(e.key, fz_below(r, NKEYS_GANG));
			if (!wcall(fd, KVARENA_IOC_LOOKUP, &x) && x.nr_done &&
			    !(e.flags & KVARENA_PREFIX_HELD))
				held[n++] = e.handle;
		}
		leader_tell(g, held, n);
		if (n) {
			struct kvarena_usage u = { .filled_tokens = n * 8,
						   .filled_bytes = (uint64_t)n * TFS };

			wcall(fd, KVARENA_IOC_SET_USAGE, &u);
		}
		if (n && fz_one_in(r, 2)) {
			uint32_t k = 1 + fz_below(r, n);
			struct kvarena_frames fr = {
				.handles = (uintptr_t)(held + n - k), .count = k };

			/* The ranks are told first: fewer maps of freed frames. */
			leader_tell(g, held, n - k);
			ret = wcall(fd, KVARENA_IOC_FREE, &fr);
			if (ret)
				leader_fail("FREE of frames it holds", ret);
			n -= k;
		}
		usleep(fz_below(r, 1500));
	}
}

/* ---- the driver --------------------------------------------------------- */

struct worker {
	pid_t pid;
	int kind;
	bool evicted;		/* its client was: it may exit by itself */
};

static void orphans_add(pid_t pgid, bool gang);

static pid_t spawn(int kind, uint64_t seed, int slot)
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
	case W_TIER:
		worker_tier(&r);
		break;
	case W_AGENT:
		agent(&r, slot);
		break;
	case W_GANG:
		worker_gang(&r, slot);
		break;
	default:
		worker_runtime(&r);
		break;
	}
	_exit(0);
}

/*
 * Start place @i's process again: a worker of a random kind, or in the
 * places after @nworkers, an agent.
 */
static void respawn(struct worker *w, unsigned long i, unsigned long nworkers,
		    struct fz_rng *r)
{
	/*
	 * Not the agent before's record: a new agent killed before it ran
	 * at all would show that one's jobs, long ended.
	 */
	if (i >= nworkers) {
		sh->ag[i - nworkers].njobs = 0;
		sh->ag[i - nworkers].phase = PH_START;
	} else {
		/* Nor a gang worker's: its ranks are not the new one's. */
		memset((void *)&sh->gw[i], 0, sizeof(sh->gw[i]));
	}
	w[i].kind = i < nworkers ? (int)fz_below(r, W_KINDS) : W_AGENT;
	if (w[i].kind == W_URING && no_ring)
		w[i].kind = W_IOCTL;
	w[i].pid = spawn(w[i].kind, fz_next(r), w[i].kind == W_AGENT ?
			 (int)(i - nworkers) : (int)i);
	w[i].evicted = false;
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
	printf("# %s %d (kind %d, %s) ended by itself: %s %d%s\n",
	       w->kind == W_AGENT ? "agent" : "worker", w->pid,
	       w->kind, w->evicted ? "evicted" : "not evicted",
	       WIFEXITED(status) ? "exit" : "signal",
	       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
	       WIFEXITED(status) && WEXITSTATUS(status) == 110 ?
	       " (a torn or wrong frame, said above)" : "");
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
	/* Its forks (a gang worker's ranks) are ours to reap. */
	orphans_add(w->pid, w->kind == W_GANG);
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
static int replace_ended(struct worker *w, unsigned long nall,
			 unsigned long nworkers, struct fz_rng *r,
			 struct evictions *ev)
{
	unsigned long i;
	int status, bad = 0;

	for (i = 0; i < nall; i++) {
		if (waitpid(w[i].pid, &status, WNOHANG) != w[i].pid)
			continue;
		/* Its forked children, if any are left. */
		kill(-w[i].pid, SIGKILL);
		orphans_add(w[i].pid, w[i].kind == W_GANG);
		bad += ended(&w[i], status, ev) != 0;
		respawn(w, i, nworkers, r);
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

/* ---- the tier: events, agents killed, their keys checked --------------- */

/*
 * The REMOVED events of the two tier arenas since the last drain: a key
 * only ever leaves an arena so (reclaimed for an allocation, demoted, or
 * taken out by a shrink).
 */
struct tier_events {
	int fd[2];			/* storm-up, storm-low; -1: none kept */
	bool removed[2][NKEYS];
	bool lost;			/* a reader fell behind: no verdict */
};

static int events_open(int fd, const char *name)
{
	struct kvarena_events_fd e = { .flags = KVARENA_EVENTS_NONBLOCK };

	fz_name(e.name, "%s", name);
	return fz_ioctl(fd, KVARENA_IOC_EVENTS_FD, &e) ? -1 : e.fd;
}

/*
 * Read the events there are (a ring's worth at most: a reader that falls
 * behind is told so); @note: mark what was removed, else forget.
 */
static void events_drain(struct tier_events *te, bool note)
{
	static uint64_t buf[8192];
	int t, reads;

	if (!note) {
		memset(te->removed, 0, sizeof(te->removed));
		te->lost = false;
	}
	for (t = 0; t < 2; t++) {
		ssize_t n = 0, off;

		if (te->fd[t] < 0) {
			te->lost = true;
			continue;
		}
		for (reads = 0; reads < 64 &&
		     (n = read(te->fd[t], buf, sizeof(buf))) > 0; reads++) {
			for (off = 0; off + (ssize_t)sizeof(struct kvarena_event) <= n;) {
				const struct kvarena_event *e =
					(const void *)((char *)buf + off);
				int k;

				if (e->size < sizeof(*e) || off + e->size > n) {
					te->lost = true;
					break;
				}
				off += e->size;
				if (e->type == KVARENA_EVENT_LOST) {
					te->lost = true;
					continue;
				}
				if (e->type != KVARENA_EVENT_REMOVED)
					continue;
				k = tier_key_of(e->key);
				if (k >= 0)
					te->removed[t][k] = true;
			}
		}
		if (reads == 64 || (n < 0 && errno != EAGAIN))
			te->lost = true;
	}
}

/* A client of @name for the driver's own looks, or -1 (said). */
static int check_client(const char *name, const char *label)
{
	struct kvarena_attach a = { 0 };
	int fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC), ret;

	fz_name(a.name, "%s", name);
	fz_name(a.label, "%s", label);
	ret = fd < 0 ? -errno : fz_ioctl(fd, KVARENA_IOC_ATTACH, &a);
	if (ret) {
		printf("# %s: ATTACH of the storm's own client: %s\n", name,
		       strerror(-ret));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/*
 * LOOKUP key @k alone on @fd (@flags): 1 if found (and checked, and let
 * go again), 0 if not, -1 for a failure (said), -2 for ENOSPC (a shrink
 * or the cache's other holders: no verdict).  @below: what LOOKUP_LOWER
 * counted.
 */
static int look_one(int fd, const char *name, uint32_t k, uint32_t flags,
		    uint32_t *below, const char *what)
{
	struct kvarena_prefix_entry e = { .handle = 0 };
	struct kvarena_prefix x = { .entries = (uintptr_t)&e, .count = 1,
				    .flags = flags };
	struct kvarena_frames f = { .handles = (uintptr_t)&e.handle,
				    .count = 1 };
	int ret, bad;

	tier_key(e.key, k);
	ret = fz_ioctl(fd, KVARENA_IOC_LOOKUP, &x);
	if (ret == -ENOSPC)
		return -2;
	if (ret) {
		printf("# %s: LOOKUP of key %u: %s\n", name, k, strerror(-ret));
		return -1;
	}
	if (below)
		*below = x.nr_lower;
	if (!x.nr_done)
		return 0;
	bad = verify(fd, e.handle, k, "kill storm", what);
	if (bad < -1)
		printf("# %s: FRAME_FD and mmap of key %u found: %s\n", name,
		       k, strerror(-bad));
	if (!(e.flags & KVARENA_PREFIX_HELD)) {
		ret = fz_ioctl(fd, KVARENA_IOC_FREE, &f);
		if (ret) {
			printf("# %s: FREE of key %u found: %s\n", name, k,
			       strerror(-ret));
			bad = -1;
		}
	}
	return bad ? -1 : 1;
}

struct agent_kills {
	unsigned long by_phase[PH_N];
	unsigned long keys, above, below, unsure, verified;
};

/*
 * Key @k was in a copy of an agent killed @how: it must be cached above
 * or whole below, or an event must say it was reclaimed since the agent
 * was stopped.  @up: the storm's client of the upper arena; @lo, of the
 * lower one, opened here when first needed.  Returns the failures.
 */
static int check_killed_key(int up, int *lo, uint32_t k, const char *how,
			    struct tier_events *te, struct agent_kills *ak)
{
	char what[192];
	uint32_t below = 0;
	int ret;

	ak->keys++;
	snprintf(what, sizeof(what), "cached above after its agent was "
		 "killed %s", how);
	ret = look_one(up, arena_up, k, KVARENA_LOOKUP_LOWER, &below, what);
	if (ret == 1) {
		ak->above++;
		ak->verified++;
		return 0;
	}
	if (ret == -2) {
		ak->unsure++;
		return 0;
	}
	if (ret < 0)
		return 1;
	if (below) {
		if (*lo < 0)
			*lo = check_client(arena_low, "storm-check");
		if (*lo < 0)
			return 1;
		snprintf(what, sizeof(what), "below after its agent was killed "
			 "%s", how);
		ret = look_one(*lo, arena_low, k, 0, NULL, what);
		if (ret == 1) {
			ak->below++;
			ak->verified++;
			return 0;
		}
		if (ret == -1)
			return 1;
		if (ret == -2) {
			ak->unsure++;
			return 0;
		}
	}
	/* Gone from both: only a reclaim (or a shrink) may have taken it. */
	events_drain(te, true);
	if (te->lost || te->removed[0][k] || te->removed[1][k]) {
		ak->unsure++;
		return 0;
	}
	printf("# FRAME LOST: key %u was in a copy of an agent killed %s; "
	       "now it is %s, and no REMOVED event of either arena says it "
	       "was reclaimed\n", k, how, below ?
	       "counted below by LOOKUP_LOWER but not found there" :
	       "neither cached above nor below");
	return 1;
}

/*
 * Kill agent @slot at a moment picked by what it says it is doing: wait
 * (up to @wait_us) for the phase aimed at - or all of it, for any moment
 * - stop it so that its jobs stand still, read its record, kill it, and
 * check the keys it was copying.  Returns the failures; counts a kill of
 * a live agent in @ak.
 */
static int kill_agent(struct worker *w, unsigned long nworkers, int slot,
		      uint32_t wait_us, struct fz_rng *r,
		      struct evictions *ev, struct tier_events *te,
		      struct agent_kills *ak)
{
	volatile struct agent_rec *a = &sh->ag[slot];
	struct worker *v = &w[nworkers + slot];
	int aim = fz_below(r, 4), phase, njobs, i, j, ret, status, bad = 0;
	double until = fz_now() + wait_us / 1e6, stop_by;
	struct agent_rec rec;
	pid_t pid;

	if (v->pid <= 0) {
		printf("# agent %d: fork() failed\n", slot);
		return 1;
	}
	/* Any moment, or one holding jobs, mid-copy, over a torn copy. */
	while (fz_now() < until) {
		phase = a->phase;
		if ((aim == 1 && phase == PH_HOLD) ||
		    (aim == 2 && phase == PH_COPY) ||
		    (aim == 3 && phase == PH_TORN))
			break;
		usleep(aim ? 50 : wait_us);
	}
	events_drain(te, false);
	kill(v->pid, SIGSTOP);
	stop_by = fz_now() + 10;
	while ((pid = waitpid(v->pid, &status, WUNTRACED | WNOHANG)) == 0) {
		if (fz_now() > stop_by) {
			printf("# agent %d did not stop within 10 s of SIGSTOP\n",
			       v->pid);
			bad++;
			break;
		}
		usleep(20);
	}
	if (pid == v->pid && !WIFSTOPPED(status)) {
		/* It ended first: evicted, it gives up or dies of SIGBUS. */
		ret = ended(v, status, ev);
		respawn(w, nworkers + slot, nworkers, r);
		return bad + (ret < 0);
	}
	memcpy(&rec, (const void *)a, sizeof(rec));
	phase = rec.phase < 0 || rec.phase >= PH_N ? PH_START : rec.phase;
	/* Not stopped: its record may be moving, so no verdict on it. */
	njobs = bad || rec.njobs < 0 || rec.njobs > AGENT_BATCH ? 0 : rec.njobs;
	ret = kill_worker(v, ev);
	if (ret > 0)
		ak->by_phase[phase]++;
	bad += ret < 0;
	/*
	 * Its jobs were taken, none given back: its release ended them
	 * undone (demotions) or left them for the next agent (promotions).
	 */
	if (ret > 0 && (phase == PH_HOLD || phase == PH_COPY ||
			phase == PH_TORN) && njobs && rec.job[0].key >= 0) {
		int up = check_client(arena_up, "storm-check"), lo = -1;

		if (up < 0)
			njobs = 0, bad++;
		for (i = 0; i < njobs; i++) {
			char how[96];

			if (rec.job[i].key < 0 || rec.job[i].key >= (int)NKEYS)
				continue;
			for (j = 0; j < i; j++)
				if (rec.job[j].key == rec.job[i].key)
					break;
			if (j < i)
				continue;
			snprintf(how, sizeof(how), "%s (it had %d %s)",
				 phase_name[phase], njobs,
				 rec.job[i].op == KVARENA_TIER_DEMOTE ?
				 "jobs, this one a demotion" :
				 "jobs, this one a promotion");
			bad += check_killed_key(up, &lo, rec.job[i].key, how,
						te, ak);
		}
		if (up >= 0)
			close(up);
		if (lo >= 0)
			close(lo);
	}
	respawn(w, nworkers + slot, nworkers, r);
	return bad;
}

static int set_tier(int fd, const char *lower, uint32_t target)
{
	struct kvarena_arena_tier t = { .free_target = target };

	fz_name(t.name, "%s", arena_up);
	fz_name(t.lower, "%s", lower);
	return fz_ioctl(fd, KVARENA_IOC_ARENA_SET_TIER, &t);
}

/*
 * Take the tier away: no copy may be under way, and with every agent and
 * every PROMOTE's caller gone none is; a released file's copies end as it
 * goes.  Waits up to 10 s.  0 or 1.
 */
static int tier_unlink(int fd)
{
	double t0 = fz_now();
	int ret;

	while ((ret = set_tier(fd, "", 0)) == -EBUSY && fz_now() - t0 < 10)
		usleep(10 * 1000);
	if (ret) {
		printf("# %s: taking its lower tier away (SET_TIER \"\"): %s, "
		       "%.1f s after every agent and worker was gone\n",
		       arena_up, strerror(-ret), fz_now() - t0);
		return 1;
	}
	return 0;
}

static uint64_t sysfs_u64(const char *name, const char *attr)
{
	char path[128];
	uint64_t v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/misc/kvarena/arenas/%s/%s",
		 name, attr);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%" SCNu64, &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/*
 * Every key in arena @name, once its clients are gone: each one cached
 * must be whole, and they must be every frame it has cached.  Returns
 * the failures; adds the keys checked to @found.
 */
static int verify_cached(int fd, const char *name, unsigned long *found)
{
	struct kvarena_stat s;
	unsigned long n = 0;
	int c = check_client(name, "storm-verify"), bad = 0, ret;
	uint32_t k;

	if (c < 0)
		return 1;
	for (k = 0; k < NKEYS; k++) {
		ret = look_one(c, name, k, 0, NULL, "cached at the end");
		if (ret == -2)
			printf("# %s: LOOKUP of key %u: %s\n", name, k,
			       strerror(ENOSPC));
		if (ret < 0)
			bad++;
		n += ret == 1;
	}
	close(c);
	if (fz_stat(fd, name, &s) || s.nr_cached != n) {
		printf("# %s: %lu keys found whole, %u frames cached\n", name,
		       n, s.nr_cached);
		bad++;
	}
	*found += n;
	return bad;
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

/* ---- the gang's engines killed in part ---------------------------------- */

/*
 * What is left of the process groups of workers gone: a gang worker's
 * ranks outlive a leader killed alone (they must find their client gone
 * and end by themselves), and the driver, their subreaper, reaps them.
 * A rank may end killed, or with exit 0 (it found its client gone);
 * anything else fails the run.
 */
#define MAX_ORPHANS	128

static struct orphan {
	pid_t pgid;
	bool gang;
} orphans[MAX_ORPHANS];
static unsigned int norphans;
static int orphan_failures;
static unsigned long orphan_ranks_ended;	/* exit 0: client gone */

static void orphan_status(const struct orphan *o, pid_t pid, int status)
{
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		return;
	if (WIFEXITED(status) && !WEXITSTATUS(status)) {
		orphan_ranks_ended += o->gang;
		return;
	}
	if (!o->gang)
		return;		/* a worker's fork: nothing promised */
	printf("# gang rank %d of leader %d (gone) ended: %s %d\n", pid,
	       o->pgid, WIFEXITED(status) ? "exit" : "signal",
	       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	orphan_failures++;
}

/* Reap what has ended of them; @all: kill the rest first, and wait. */
static void orphans_reap(bool all)
{
	unsigned int i = 0;

	while (i < norphans) {
		struct orphan *o = &orphans[i];
		int status;
		pid_t pid;

		if (all)
			kill(-o->pgid, SIGKILL);
		while ((pid = waitpid(-o->pgid, &status, all ? 0 : WNOHANG)) > 0)
			orphan_status(o, pid, status);
		if (pid < 0) {		/* ECHILD: the group is empty */
			orphans[i] = orphans[--norphans];
			continue;
		}
		i++;
	}
}

static void orphans_add(pid_t pgid, bool gang)
{
	if (norphans == MAX_ORPHANS)
		orphans_reap(true);
	orphans[norphans].pgid = pgid;
	orphans[norphans++].gang = gang;
}

/* Is client @id (of process @pid) in gang @sg?  -1 if CLIENTS failed. */
static int gang_has_client(int fd, const struct storm_gang *sg, uint32_t id,
			   pid_t pid)
{
	static struct kvarena_client_info rows[64];
	struct kvarena_clients c = { .clients = (uintptr_t)rows, .count = 64 };
	uint32_t i;
	int ret;

	fz_name(c.name, "%s", sg->name);
	ret = fz_ioctl(fd, KVARENA_IOC_CLIENTS, &c);
	if (ret) {
		printf("# %s: CLIENTS: %s\n", sg->name, strerror(-ret));
		return -1;
	}
	for (i = 0; i < c.nr_clients && i < c.count; i++)
		if (rows[i].client_id == id && (pid_t)rows[i].pid == pid)
			return 1;
	return 0;
}

/* Client @id of @pid leaves gang @sg within 5 s: 0, or 1 (said). */
static int gang_client_leaves(int fd, const struct storm_gang *sg,
			      uint32_t id, pid_t pid, const char *why)
{
	double t0 = fz_now();
	int there;

	while ((there = gang_has_client(fd, sg, id, pid)) > 0 &&
	       fz_now() - t0 < 5)
		usleep(1000);
	if (!there)
		return 0;
	printf("# %s: client %u of %d still there %.1f s after %s\n",
	       sg->name, id, pid, fz_now() - t0, why);
	return 1;
}

/* Has process @pid ended (gone, or a zombie)? */
static bool proc_ended(pid_t pid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return true;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return true;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

struct gang_kills {
	unsigned long leaders;		/* leaders killed alone */
	unsigned long ranks;		/* ranks killed */
	unsigned long fatal;		/* ... whose client (RANKS_FATAL) went */
	unsigned long kept;		/* ... whose client (no flag) stayed */
	unsigned long early;		/* ... killed before their JOIN was seen */
};

/*
 * Kill part of gang worker @v, whose record says it is set up: its
 * leader alone - whose client must then leave the gang (its ranks, left
 * behind, must find it gone and end: orphans_reap()) - or one of its
 * ranks: with RANKS_FATAL the leader's client must leave the gang (the
 * leader, evicted, ends by itself), without it stay.  Returns 0 if
 * nothing was done, else bit 0 if the leader's place is free now (it
 * was killed, or had ended) and bit 1 if a live process was killed;
 * adds what went wrong to @bad.
 */
static int kill_gang_part(int fd, struct worker *w, struct worker *v,
			  struct fz_rng *r, struct evictions *ev,
			  struct gang_kills *gk, int *bad)
{
	volatile struct gang_rec *g = &sh->gw[v - w];
	const struct storm_gang *sg;
	pid_t leader = v->pid, pid;
	unsigned int rank;
	bool fatal, joined;
	uint32_t id;
	int ret, status;

	if (!__atomic_load_n(&g->ready, __ATOMIC_ACQUIRE) || v->evicted)
		return 0;
	sg = &gangs[g->cuda];
	id = g->client_id;
	if (fz_one_in(r, 3)) {
		kill(leader, SIGKILL);
		waitpid(leader, &status, 0);
		ret = ended(v, status, ev);
		*bad += ret < 0;
		orphans_add(leader, true);
		v->pid = 0;
		v->evicted = false;
		if (ret <= 0)
			return 1;
		gk->leaders++;
		/* Its file was its own alone: released as it died. */
		*bad += gang_client_leaves(fd, sg, id, leader,
					   "its leader was killed");
		return 3;
	}
	rank = fz_below(r, GANG_N);
	pid = g->rank_pid[rank];
	joined = g->joined[rank];
	fatal = g->fatal;
	if (pid <= 0)
		return 0;
	kill(pid, SIGKILL);
	gk->ranks++;
	if (fatal) {
		/* The leader, evicted, ends by itself (or was, if unjoined). */
		v->evicted = true;
		if (!joined) {
			gk->early++;
			return 2;
		}
		gk->fatal++;
		*bad += gang_client_leaves(fd, sg, id, leader,
					   "a RANKS_FATAL rank was killed");
		return 2;
	}
	/* "Without it, a rank's release only takes that rank away." */
	while (!proc_ended(pid))
		usleep(1000);
	if (v->evicted || proc_ended(leader))
		return 2;
	gk->kept++;
	if (gang_has_client(fd, sg, id, leader) != 1) {
		printf("# %s: client %u of %d gone with a rank of it killed, "
		       "no RANKS_FATAL\n", sg->name, id, leader);
		(*bad)++;
	}
	return 2;
}

/*
 * A gang's frames and its members' at any moment: the gang's counts add
 * up, and each member's own table is idle (no client, nothing held or
 * reserved, every frame free or cached).
 */
static int check_one_gang_now(int fd, const struct storm_gang *sg)
{
	char name[KVARENA_NAME_LEN];
	struct kvarena_stat s;
	int bad = check_now(fd, sg->name);
	unsigned int m;

	for (m = 0; m < GANG_N; m++) {
		member_name(sg, name, m);
		if (fz_stat(fd, name, &s)) {
			printf("# %s: STAT failed\n", name);
			bad++;
			continue;
		}
		if (s.nr_clients || s.nr_held || s.nr_reserved ||
		    (uint64_t)s.nr_free + s.nr_cached != s.nr_frames ||
		    s.nr_frames != NR_GANG || s.nr_backed != NR_GANG) {
			printf("# %s, a member of %s: clients %u held %u "
			       "reserved %u, free %u + cached %u of %u, %u "
			       "backed\n", name, sg->name, s.nr_clients,
			       s.nr_held, s.nr_reserved, s.nr_free, s.nr_cached,
			       s.nr_frames, s.nr_backed);
			bad++;
		}
	}
	return bad;
}

static int check_gang_now(int fd)
{
	return check_one_gang_now(fd, &gangs[0]) +
	       check_one_gang_now(fd, &gangs[1]);
}

/* A CUDA arena of @nr frames of @fsize, each its own memfd: 0 or -errno. */
static int cuda_arena_create(int fd, const char *name, uint32_t nr,
			     uint64_t fsize)
{
	struct kvarena_arena_create c = {
		.frame_size = fsize, .nr_frames = nr,
		.mem_kind = KVARENA_MEM_CUDA, .bytes_per_token = 1024,
	};
	struct kvarena_set_backing b = { .nr_frames = 1 };
	uint32_t i;
	int ret, mfd;

	fz_name(c.name, "%s", name);
	ret = fz_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c);
	for (i = 0; !ret && i < nr; i++) {
		mfd = fz_memfd(fsize);
		if (mfd < 0)
			return -errno;
		fz_name(b.name, "%s", name);
		b.first_frame = i;
		b.fd = mfd;
		ret = fz_ioctl(fd, KVARENA_IOC_ARENA_SET_BACKING, &b);
		close(mfd);
	}
	return ret;
}

/* The gangs over GANG_N arenas of NR_GANG frames each: 0 or -errno. */
static int gang_setup(int fd)
{
	char names[GANG_N][KVARENA_NAME_LEN];
	struct kvarena_gang_create g = { .members = (uintptr_t)names,
					 .nr_members = GANG_N };
	unsigned int m, k;
	int ret;

	for (k = 0; k < 2; k++) {
		const struct storm_gang *sg = &gangs[k];

		for (m = 0; m < GANG_N; m++) {
			member_name(sg, names[m], m);
			ret = sg->mem_kind == KVARENA_MEM_CUDA ?
			      cuda_arena_create(fd, names[m], NR_GANG, TFS) :
			      fz_arena_create(fd, names[m], NR_GANG, TFS, true);
			if (ret)
				return ret;
		}
		fz_name(g.name, "%s", sg->name);
		ret = fz_ioctl(fd, KVARENA_IOC_GANG_CREATE, &g);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * At the end, every process gone: gang @sg is quiet (every frame back),
 * goes, and sets its members free, intact - all their frames there,
 * backed, free or cached, no client - and quiet too (a CUDA member's
 * frames that carry the gang's tenants' data are free, being cleared).  Returns the
 * failures; the frames lost (gang and members) in @lost.
 */
static int one_gang_teardown(int fd, const struct storm_gang *sg,
			     uint32_t *lost)
{
	char name[KVARENA_NAME_LEN], line[64], path[128];
	struct kvarena_stat s;
	uint32_t l = 0;
	int bad = 0, ret;
	unsigned int m;
	FILE *f;

	*lost = 0;
	bad += fz_wait_no_clients(fd, sg->name, 60) < 0;
	bad += fz_check_quiet(fd, sg->name, &l);
	*lost += l;
	ret = fz_arena_destroy(fd, sg->name);
	if (ret) {
		printf("# destroying %s: %s\n", sg->name, strerror(-ret));
		return bad + 1;
	}
	for (m = 0; m < GANG_N; m++) {
		member_name(sg, name, m);
		bad += fz_check_quiet(fd, name, &l);
		*lost += l;
		if (fz_stat(fd, name, &s) || s.nr_frames != NR_GANG ||
		    s.nr_backed != NR_GANG || s.nr_absent) {
			printf("# %s after its gang: %u frames, %u backed, %u "
			       "absent\n", name, s.nr_frames, s.nr_backed,
			       s.nr_absent);
			bad++;
		}
		snprintf(path, sizeof(path),
			 "/sys/class/misc/kvarena/arenas/%s/gang", name);
		f = fopen(path, "r");
		line[0] = 0;
		if (f) {
			if (!fgets(line, sizeof(line), f))
				line[0] = 0;
			fclose(f);
		}
		if (line[0] && line[0] != '\n') {
			printf("# %s: still in gang %s after it went\n", name,
			       line);
			bad++;
		}
		ret = fz_arena_destroy(fd, name);
		if (ret) {
			printf("# destroying %s: %s\n", name, strerror(-ret));
			bad++;
		}
	}
	return bad;
}

static int gang_teardown(int fd, uint32_t *lost)
{
	uint32_t l[2];
	int bad = one_gang_teardown(fd, &gangs[0], &l[0]) +
		  one_gang_teardown(fd, &gangs[1], &l[1]);

	*lost = l[0] + l[1];
	return bad;
}

/*
 * An arena for an eviction or a resize, and its size at create: the
 * tier's two in one case of four.
 */
static void pick_arena(struct fz_rng *r, const char **name, uint32_t *nr)
{
	uint32_t i = fz_below(r, 8);

	if (i < 3) {
		*name = arena_host;
		*nr = NR_HOST;
	} else if (i < 6) {
		*name = arena_acct;
		*nr = NR_ACCT;
	} else if (i == 6) {
		*name = arena_up;
		*nr = NR_UP;
	} else {
		*name = arena_low;
		*nr = NR_LOW;
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "kills", 1, NULL, 'k' }, { "workers", 1, NULL, 'w' },
		{ "delay-ms", 1, NULL, 'd' }, { "seed", 1, NULL, 's' },
		{ "evict-every", 1, NULL, 'e' },
		{ "resize-every", 1, NULL, 'r' },
		{ "agents", 1, NULL, 'a' },
		{ "agent-kill-every", 1, NULL, 'A' },
		{ NULL, 0, NULL, 0 },
	};
	const char *const arenas[] = { arena_host, arena_acct, arena_up,
				       arena_low };
	const uint32_t arena_nr[] = { NR_HOST, NR_ACCT, NR_UP, NR_LOW };
	unsigned long kills = 1000, nworkers = 6, delay_ms = 8, done = 0;
	unsigned long evict_every = 4, resize_every = 4;
	unsigned long nagents = 2, agent_every = 4, nall;
	struct evictions ev = { 0 };
	struct resizes rs = { 0 };
	struct agent_kills ak;
	struct tier_events te = { .fd = { -1, -1 } };
	struct gang_kills gk = { 0 };
	uint32_t gang_lost = 0;
	int part;
	unsigned long by_kind[W_KINDS] = { 0 };
	struct worker w[MAX_WORKERS + MAX_AGENTS] = { 0 };
	uint64_t seed = fz_clock_seed();
	uint64_t demoted = 0, promoted = 0, copies_failed = 0;
	uint32_t lost[4] = { 0 }, free_target;
	unsigned long verified_end = 0, verified, agents_killed = 0;
	double t0, settle[4], settle_max = 0;
	int fd, c, failures = 0, refs;
	struct kvarena_stat st;
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
		case 'a': nagents = strtoul(optarg, NULL, 0); break;
		case 'A': agent_every = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: kill_storm [--kills N] [--workers N] [--delay-ms N] [--evict-every N] [--resize-every N] [--agents N] [--agent-kill-every N] [--seed S]\n");
			return 2;
		}
	}
	if (!nworkers || nworkers > MAX_WORKERS)
		nworkers = MAX_WORKERS;
	if (nagents > MAX_AGENTS)
		nagents = MAX_AGENTS;
	nall = nworkers + nagents;
	memset(&ak, 0, sizeof(ak));
	memset(&st, 0, sizeof(st));
	fz_seed(&r, seed);
	/*
	 * Demote while fewer than a quarter to three quarters of the upper
	 * arena are free: often, and not all the time.
	 */
	free_target = NR_UP / 4 + fz_below(&r, NR_UP / 2 + 1);
	printf("TAP version 13\n1..1\n");
	printf("# kill storm: seed 0x%016" PRIx64 ", %lu kills, %lu workers, "
	       "delays up to %lu ms, an eviction every %lu kills or so, "
	       "a resize every %lu; %lu tier agents, one killed every %lu "
	       "kills or so, demoting below %u free frames of %u\n",
	       seed, kills, nworkers, delay_ms, evict_every, resize_every,
	       nagents, agent_every, free_target, NR_UP);
	no_ring = kva_uring_missing();
	if (no_ring)
		printf("# kill storm: no worker over io_uring: %s\n", no_ring);
	fflush(stdout);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	/* A gang worker's ranks outlive a leader killed alone: ours to reap. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	refs = fz_module_refs();
	c = 0;
	if (sh == MAP_FAILED || fd < 0 ||
	    fz_arena_create(fd, arena_host, NR_HOST, FS, true) ||
	    fz_arena_create(fd, arena_acct, NR_ACCT, FS, false) ||
	    fz_arena_create(fd, arena_up, NR_UP, TFS, true) ||
	    fz_arena_create(fd, arena_low, NR_LOW, TFS, true) ||
	    (c = gang_setup(fd))) {
		printf("# cannot set up the arenas: %s\n", strerror(c ? -c : errno));
		fz_ktap_result("kill_storm", 1);
		return 1;
	}
	c = set_tier(fd, arena_low, free_target);
	if (c || fz_stat(fd, arena_up, &st) || st.tier != KVARENA_STAT_TIER_LOWER ||
	    strcmp(st.tier_name, arena_low)) {
		printf("# %s: SET_TIER with %s below: %s (STAT says tier %u "
		       "\"%s\")\n", arena_up, arena_low, strerror(-c), st.tier,
		       st.tier_name);
		fz_ktap_result("kill_storm", 1);
		return 1;
	}
	/* Without events (events_ring_kib=0) a key gone gets no verdict. */
	te.fd[0] = events_open(fd, arena_up);
	te.fd[1] = events_open(fd, arena_low);

	t0 = fz_now();
	for (i = 0; i < nall; i++)
		respawn(w, i, nworkers, &r);
	while (done < kills && !failures) {
		struct worker *v;
		uint32_t wait_us = 0;
		int k;

		failures += replace_ended(w, nall, nworkers, &r, &ev);
		v = &w[fz_below(&r, nworkers)];
		/* Now and then at once: killed while attaching. */
		if (!fz_one_in(&r, 8))
			wait_us = fz_below(&r, delay_ms * 1000 + 1);
		/* An agent killed meanwhile, at a moment it may aim at. */
		if (nagents && agent_every && fz_one_in(&r, agent_every))
			failures += kill_agent(w, nworkers,
					       (int)fz_below(&r, nagents),
					       wait_us, &r, &ev, &te, &ak);
		else if (wait_us)
			usleep(wait_us);
		if (evict_every && fz_one_in(&r, evict_every)) {
			const char *name;
			uint32_t nr;

			/*
			 * The host gang's clients too: their ranks lose them
			 * (a CUDA gang's client is not evicted: -EOPNOTSUPP).
			 */
			if (fz_one_in(&r, 8)) {
				name = arena_gang;
				failures += evict_one(fd, name, w, nall, &r, &ev);
				failures += check_gang_now(fd);
			} else {
				pick_arena(&r, &name, &nr);
				failures += evict_one(fd, name, w, nall, &r, &ev);
				failures += check_now(fd, name);
			}
		}
		if (resize_every && fz_one_in(&r, resize_every)) {
			const char *name;
			uint32_t nr;

			pick_arena(&r, &name, &nr);
			failures += resize_one(fd, name, nr, &r, &rs);
		}
		/* Only a kill of a live worker counts: it may be evicted and gone. */
		/* A gang engine's leader alone, or one of its ranks, half the time. */
		part = v->kind == W_GANG && fz_one_in(&r, 2) ?
		       kill_gang_part(fd, w, v, &r, &ev, &gk, &failures) : 0;
		if (part) {
			if (part & 2) {
				by_kind[W_GANG]++;
				done++;
			}
			if (part & 1)
				respawn(w, v - w, nworkers, &r);
		} else {
			k = kill_worker(v, &ev);
			if (k > 0) {
				by_kind[v->kind]++;
				done++;
			}
			failures += k < 0;
			respawn(w, v - w, nworkers, &r);
		}
		orphans_reap(false);
		failures += orphan_failures;
		orphan_failures = 0;
		failures += check_gang_now(fd);
		for (c = 0; c < 4; c++)
			failures += check_now(fd, arenas[c]);
	}
	/* The workers first: no PROMOTE waits once they are gone. */
	for (i = 0; i < nall; i++)
		if (w[i].pid)
			failures += kill_worker(&w[i], &ev) < 0;
	orphans_reap(true);
	failures += orphan_failures;
	reap_orphans();
	for (c = 0; c < 4; c++)
		failures += resize_back(fd, arenas[c], arena_nr[c]);
	failures += tier_unlink(fd);
	demoted = sysfs_u64(arena_up, "tier_demoted");
	promoted = sysfs_u64(arena_up, "tier_promoted");
	copies_failed = sysfs_u64(arena_up, "tier_failed");

	for (c = 0; c < 4; c++) {
		settle[c] = fz_wait_no_clients(fd, arenas[c], 60);
		failures += settle[c] < 0;
		if (settle[c] > settle_max)
			settle_max = settle[c];
	}
	/* Every key cached in either tier whole, before the quiet checks. */
	failures += verify_cached(fd, arena_up, &verified_end);
	failures += verify_cached(fd, arena_low, &verified_end);
	for (c = 0; c < 4; c++) {
		failures += fz_wait_no_clients(fd, arenas[c], 60) < 0;
		failures += fz_check_quiet(fd, arenas[c], &lost[c]);
	}
	for (c = 0; c < 2; c++)
		if (te.fd[c] >= 0)
			close(te.fd[c]);
	/* The gang, then its members: every frame of each back, intact. */
	failures += gang_teardown(fd, &gang_lost);
	/* The upper arena first: a lower tier cannot go while linked. */
	if (fz_arena_destroy(fd, arena_up) || fz_arena_destroy(fd, arena_low) ||
	    fz_arena_destroy(fd, arena_host) || fz_arena_destroy(fd, arena_acct)) {
		printf("# destroying the arenas failed: %s\n", strerror(errno));
		failures++;
	}
	/* Every worker's file closed, an evicted one's too: nothing left. */
	if (refs >= 0)
		failures += fz_wait_module_refs(refs, 60) < 0;
	close(fd);

	for (c = 0; c < PH_N; c++)
		agents_killed += ak.by_phase[c];
	verified = sh->verified_hit + sh->verified_promoted +
		   sh->verified_lower + sh->verified_source + ak.verified +
		   verified_end;
	printf("# kills by worker: ioctl %lu, uring %lu, runtime %lu",
	       by_kind[W_IOCTL], by_kind[W_URING], by_kind[W_RUNTIME]);
	printf(", prefix %lu, tier %lu, gang %lu", by_kind[W_PREFIX],
	       by_kind[W_TIER], by_kind[W_GANG]);
	printf("; %.1f s; clients gone %.2f s after the last kill\n",
	       fz_now() - t0, settle_max);
	printf("# evictions: %lu (%lu frames taken back; %lu clients left "
	       "first); evicted workers that gave up on ESHUTDOWN %lu, died of "
	       "SIGBUS %lu\n", ev.done, ev.frames, ev.raced, ev.gave_up,
	       ev.sigbus);
	printf("# resizes: %lu (%lu shrinks, %lu of them left waiting for "
	       "held frames, %lu grows, %lu cancels; %lu below the minimums "
	       "refused)\n", rs.done, rs.shrinks, rs.waiting, rs.grows,
	       rs.cancels, rs.refused);
	printf("# agents killed: %lu (attaching %lu, waiting for jobs %lu, "
	       "holding jobs %lu, mid-copy %lu, over a torn destination %lu, "
	       "giving jobs back %lu); the keys of their copies: %lu, %lu "
	       "cached above, %lu whole below, %lu reclaimed since (no "
	       "verdict)\n", agents_killed, ak.by_phase[PH_START],
	       ak.by_phase[PH_WAIT], ak.by_phase[PH_HOLD], ak.by_phase[PH_COPY],
	       ak.by_phase[PH_TORN], ak.by_phase[PH_DONE], ak.keys, ak.above,
	       ak.below, ak.unsure);
	printf("# tier: %" PRIu64 " frames demoted, %" PRIu64 " promoted, %"
	       PRIu64 " copies failed or lost with their agent; agents "
	       "filled %lu destinations with garbage first and gave %lu back "
	       "failed; PROMOTE: %lu calls (%lu over io_uring), %lu frames, "
	       "%lu timed out, %lu failed copies\n", demoted, promoted,
	       copies_failed, sh->copies_torn, sh->copies_failed,
	       sh->promote_calls, sh->promote_uring, sh->promote_frames, sh->promote_timeouts, sh->promote_failed);
	printf("# verified byte for byte: %lu LOOKUP hits above, %lu "
	       "promoted, %lu read below, %lu copied from by agents, %lu keys "
	       "of killed agents' copies, %lu cached at the end\n",
	       sh->verified_hit, sh->verified_promoted, sh->verified_lower,
	       sh->verified_source, ak.verified, verified_end);
	printf("# gang: engines started on %s %lu, on %s (CUDA members) %lu\n",
	       gangs[0].name, sh->gang_engines[0], gangs[1].name,
	       sh->gang_engines[1]);
	printf("# gang: %lu engines killed whole, %lu leaders killed alone "
	       "(ranks that found their client gone and ended: %lu), %lu ranks killed "
	       "(%lu with RANKS_FATAL took their client, %lu without left it, "
	       "%lu before their JOIN was seen); ranks mapped and touched %lu "
	       "frames, %lu of them revoked under them (SIGBUS), %lu mmap() "
	       "refused; %u frames lost in the gang and its members\n",
	       by_kind[W_GANG] - gk.leaders - gk.ranks, gk.leaders,
	       orphan_ranks_ended, gk.ranks, gk.fatal, gk.kept, gk.early,
	       sh->gang_touches, sh->gang_sigbus, sh->gang_map_refused,
	       gang_lost);
	printf("kill storm: %lu kills, %lu evictions, %lu resizes, %lu agents "
	       "killed, %" PRIu64 " frames demoted, %" PRIu64 " promoted, %lu "
	       "verified, %u frames lost\n", done, ev.done, rs.done,
	       agents_killed, demoted, promoted, verified,
	       lost[0] + lost[1] + lost[2] + lost[3] + gang_lost);
	c = failures || lost[0] || lost[1] || lost[2] || lost[3] ||
	    gang_lost || done < kills;
	fz_ktap_result("kill_storm", c);
	return c;
}
