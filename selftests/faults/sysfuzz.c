// SPDX-License-Identifier: GPL-2.0
/*
 * sysfuzz - random and mutated kvarena commands, over ioctl() and
 * IORING_OP_URING_CMD, from several processes at once, seeded and
 * reproducible.
 *
 * Runs as root in the VM with kvarena.ko loaded.  Each process gets its
 * own seed, derived from the run's seed and its index, and makes its
 * calls from it alone, so a process's sequence of calls is the same on
 * every run with that seed: `sysfuzz --seed S --procs 1` replays process
 * 0 of run S call by call, without the other processes' interleaving
 * (`--only P` replays process P).  The last process drops to uid 65534
 * after opening its files, so the unprivileged paths are fuzzed too.
 *
 * Each call is a command built from what the process knows (its arenas,
 * clients, held, freed and other processes' handles, a pool of files of
 * every kind for SET_BACKING), then, often, broken: unknown numbers,
 * wrong sizes or directions in the command number, bad, unaligned,
 * read-only, straddling and kernel pointers, zero and huge counts,
 * non-zero reserved fields and flags, stale, foreign, forged and repeated
 * handles, double frees, names and labels without a NUL.
 *
 * What is checked, call by call:
 *   - the result is 0 or an errno the command's table in the uapi header
 *     allows (unknown commands: -ENOTTY; -EAGAIN reaches no caller but
 *     PROMOTE's, whose own it is);
 *   - a command with a non-zero reserved field or an unknown flag never
 *     succeeds;
 *   - FREE of a batch holding another process's, a forged, a freed or a
 *     repeated handle never succeeds;
 *   - EVICT of one of its own clients returns the frames it held, and
 *     every client command on that client's file then fails with
 *     -ESHUTDOWN (and on no other file);
 *   - what the process holds, by the module's CLIENTS table, is what its
 *     own successful ALLOCs, LOOKUPs and FREEs say (checked every 64
 *     calls, or every N with --check-every N; a difference is reported
 *     with the process's last 32 calls);
 *   - a STAT's counts add up (free, cached and held frames are the
 *     arena's; it and its absent frames are the table), and STAT of the
 *     struct of before KVARENA_FEAT_RESIZE writes no more than that;
 *   - ARENA_RESIZE never leaves a shrink waiting for every frame, and of
 *     an arena of the process's own (nobody else's to resize) leaves it
 *     becoming the size asked for, or with no shrink waiting after a
 *     cancel;
 *   - lower tiers (ARENA_SET_TIER) link a process's own arenas only, so
 *     that it is the only agent (TIER) and the only PROMOTE caller of
 *     each: every job a take hands out is given back at once, with -EIO
 *     (after, now and then, a DONE with one bad job, which must give
 *     nothing back), or its file is closed with the jobs taken (an agent
 *     killed mid-copy), so no copy is under way between two calls; a DONE
 *     of jobs never taken fails; a PROMOTE's run is held as a LOOKUP's;
 *     LOOKUP with KVARENA_LOOKUP_LOWER counts no more keys than it had
 *     left, none without the flag and none in fz-shared, which STAT
 *     shows with no tier;
 *   - gangs (GANG_CREATE) of a process's own arenas, made now and then to
 *     fit (host memory backed from a memfd it keeps, or none; 8 or 16
 *     frames): over 2-4 that fit, as STAT and the process's picture say,
 *     GANG_CREATE must work, and with one thing wrong (a member twice,
 *     missing, not fitting, fz-shared, the gang itself; a count out of
 *     range; no names, unreadable ones) fail as the header says; the new
 *     gang has its member 0's size and policy, no client, sysfs names
 *     its members in order and the gang in each; while ganged a member's
 *     own table is idle (STAT: no client, nothing held or reserved) and
 *     no ATTACH, DESTROY, SET_BACKING, RESIZE or SET_TIER of it works,
 *     nor SET_BACKING, RESIZE or SET_TIER of the gang; DESTROY of the
 *     gang sets its members free (sysfs names no gang);
 *   - a gang client's GANG_TOKEN works and gives the same token for its
 *     life (another client's is -EOPNOTSUPP), its own FRAME_FD is
 *     -EOPNOTSUPP; JOIN of a file that is nothing yet with its id, token
 *     and a rank of the gang works and says the member's name and size,
 *     with a wrong token, id or rank, or of a client gone, it is
 *     -ENOENT, of a name that is no gang -EINVAL, of a file that is a
 *     client or rank already -EBUSY; a rank's client commands but
 *     FRAME_FD are -EPERM, its FRAME_FD of a frame its client holds
 *     works (and maps, at the frame's offset, the very memory of its
 *     member - read back from the member's memfd - and no other
 *     member's), and is -ENOLINK once its client is gone;
 *   - a rank closed evicts its client if the client's last GANG_TOKEN
 *     asked for RANKS_FATAL (its commands are -ESHUTDOWN), else leaves
 *     it alone; once a gang's last client goes (closed, evicted), the
 *     gang holds nothing and its members are idle;
 * and at the end, once every process is gone, every tier can be taken
 * away (no copy left under way), every gang is quiet and goes first
 * (its members idle, then free), every arena is quiet (nothing held,
 * counts add up) and every arena the fuzzer made is gone.
 * The kernel log is checked by the VM runner.
 *
 *   sysfuzz [--calls N] [--procs N] [--seed S] [--only P] [--verbose]
 *           [--check-every N]
 *
 * Prints "sysfuzz: N calls ... seed S ... F failures, L frames lost".
 */
#include <getopt.h>
#include <stddef.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include "faults.h"

/* Why no call goes over io_uring on this kernel, or NULL (main sets it). */
static const char *no_ring;

#define FS		(64u << 10)
#define NR_SHARED	256u
#define NR_OWN		64u
#define MAX_PROCS	16
#define NFD		8	/* /dev/kvarena files per process */
#define HELD		256	/* handles remembered per file */
#define POOL		128	/* stale and foreign handles remembered */
#define MAX_ARENAS	4	/* arenas a process made, alive at once */
#define NR_NAMES	8	/* its own names: fz<idx>-0..7 */
#define MAX_GANGS	4	/* its gangs: fz<idx>-g0..3 */
#define SLOT		4096	/* bytes of one argument buffer */
#define STAT_V1_TAIL	32	/* bytes past a STAT_V1 struct that must stay */

static const char *const shared_name = "fz-shared";

/* Calls between two comparisons with the module's CLIENTS (--check-every). */
static unsigned long check_every = 64;

/* ---- what every process sees: other processes' handles ---------------- */

struct shared {
	uint64_t foreign[MAX_PROCS][POOL];	/* handles of fz-shared */
	unsigned long calls[MAX_PROCS], urings[MAX_PROCS];
};

static struct shared *shm;

/* ---- one process's state ---------------------------------------------- */

struct kfile {
	int fd;
	bool rdonly;
	bool attached;
	bool desync;		/* our picture of it went wrong: stop checking */
	bool evicted;		/* its client was evicted (by us) */
	char arena[KVARENA_NAME_LEN];
	uint32_t tag;		/* which arena, which incarnation: arena_tag() */
	uint32_t client_id;
	uint64_t held[HELD];
	unsigned int n;
	uint64_t alloc_calls, free_calls;	/* not used for checks */
	uint32_t serial;	/* which open of the file this is */
	/*
	 * Gangs: @gang is 1 + the slot of the gang of ours it is a client
	 * (attached) or a rank (@rank) of, @gang_serial that gang's.  A
	 * client's @token (0 before GANG_TOKEN) and @ranks_fatal; a rank's
	 * client is file @leader (-1: none of ours) as it was at open
	 * @leader_serial, and @rank_nr its member.  A rank is not
	 * @attached: it holds nothing and is no client.
	 */
	int gang;
	uint32_t gang_serial;
	uint64_t token;
	bool ranks_fatal;
	bool rank;
	int leader;
	uint32_t leader_serial;
	uint32_t rank_nr;
};

/*
 * A gang a process made (GANG_CREATE) over arenas of its own names,
 * member r of which is own name @member[r] (-1: not one of ours).
 */
struct gang {
	bool alive;
	char name[KVARENA_NAME_LEN];
	uint32_t serial;
	unsigned int n;
	int member[KVARENA_GANG_MAX];
	char mname[KVARENA_GANG_MAX][KVARENA_NAME_LEN];
	uint32_t nr_frames;
	uint64_t frame_size;
	bool backed;		/* host members with memory: ranks map */
	bool memfds;		/* every member's memfd kept: contents checked */
	bool open;		/* mode 0666 as made: anyone may attach */
};

struct proc {
	struct fz_rng r;
	int idx;
	bool admin;
	bool verbose;
	struct kfile f[NFD];
	char arenas[MAX_ARENAS][KVARENA_NAME_LEN];
	unsigned int arena_seq;
	uint64_t stale[POOL];
	uint32_t stale_tag[POOL];	/* the arena each came from */
	unsigned int nstale;
	uint32_t incarnation[8];	/* of our arenas fz<idx>-0..7 */
	/* Of each own name, when we made it: its flags, its memory. */
	bool own_known[NR_NAMES];
	uint32_t own_flags[NR_NAMES];
	bool own_touched[NR_NAMES];	/* a policy of its own (ACCESS, SET_POLICY) */
	int own_memfd[NR_NAMES];	/* its whole backing, -1: none kept */
	struct gang gang[MAX_GANGS];
	uint32_t gang_serial, file_serial;
	uint64_t marks;			/* words written through ranks */
	struct gone_client {		/* gang clients gone: JOIN finds none */
		int gang;
		uint32_t gang_serial, id;
		uint64_t token;
	} gone[4];
	unsigned int ngone;
	struct {
		unsigned long made, destroyed, attached, tokens, joins,
			      rank_maps, contents, fatal, rank_closes,
			      leader_closes;
	} gs;
	struct io_uring ring;
	/* pointers of every kind */
	uint8_t *buf;		/* SLOT-byte argument buffers, read-write */
	uint64_t *hbuf;		/* room for KVARENA_MAX_BATCH handles */
	uint8_t *ro;		/* a read-only page */
	uint8_t *hole;		/* an unmapped page */
	uint8_t *edge;		/* the last page before an unmapped one */
	/* files for SET_BACKING */
	int fdpool[12];
	unsigned int nfdpool;
	/* results */
	unsigned long calls, ioctls, urings, failures;
	unsigned long by_errno[140];
	struct trail {		/* the last calls, for a failure's report */
		unsigned long call;
		int known, ret;
		bool uring, good_arg;
		int file;		/* index into f[] */
		uint32_t client_id;
		uint32_t count, done;	/* done: nr_done of ALLOC/FREE/LOOKUP */
		unsigned int n_before, n_after;
		uint64_t h0;
	} trail[32];
	unsigned int ntrail;
};

/* How a call was built: what the oracle needs to know. */
struct call {
	uint32_t cmd;
	int known;		/* index into cmds[], or -1 */
	bool uring;
	bool must_fail;		/* a mutation no command may accept */
	const char *why;	/* ... and which */
	void *arg;
	struct kfile *kf;
	/* ALLOC/FREE: where the handles were */
	uint64_t *handles;
	uint32_t count;
	bool valid_handles_ptr;
	uint64_t uring_reserved;	/* struct kvarena_uring_cmd.reserved */
	bool back;		/* ARENA_CREATE: back it all at once */
	/*
	 * What it must give when its struct is read as built: E(0) for
	 * success, E(errno) for each error (0: no promise), and why.
	 */
	unsigned __int128 want;
	const char *want_why;
	unsigned __int128 extra;	/* errnos past its table's, this time */
	int leader;		/* JOIN: the file of ours it joins, or -1 */
	int gang;		/* GANG_CREATE: the slot it makes, or -1 */
};

/* ---- the command table: who, how big, which errors -------------------- */

#define E(x) ((unsigned __int128)1 << (x))
#define E_ANY (E(EINVAL) | E(EFAULT))

struct cmd_desc {
	const char *name;
	uint32_t cmd;
	size_t size;
	unsigned __int128 errs;	/* errnos the uapi header allows */
	unsigned int weight;
	void (*build)(struct proc *p, struct call *c);
};

static void build_version(struct proc *p, struct call *c);
static void build_create(struct proc *p, struct call *c);
static void build_destroy(struct proc *p, struct call *c);
static void build_backing(struct proc *p, struct call *c);
static void build_attach(struct proc *p, struct call *c);
static void build_alloc(struct proc *p, struct call *c);
static void build_free(struct proc *p, struct call *c);
static void build_frame_fd(struct proc *p, struct call *c);
static void build_usage(struct proc *p, struct call *c);
static void build_stat(struct proc *p, struct call *c);
static void build_clients(struct proc *p, struct call *c);
static void build_limits(struct proc *p, struct call *c);
static void build_policy(struct proc *p, struct call *c);
static void build_evict(struct proc *p, struct call *c);
static void build_events_fd(struct proc *p, struct call *c);
static uint32_t arena_tag(struct proc *p, const char *name);
static void reopen(struct proc *p, struct kfile *f);
static void build_publish(struct proc *p, struct call *c);
static void build_lookup(struct proc *p, struct call *c);
static void build_scrub(struct proc *p, struct call *c);
static void build_resize(struct proc *p, struct call *c);
static void build_imports_dropped(struct proc *p, struct call *c);
static void build_set_tier(struct proc *p, struct call *c);
static void build_tier(struct proc *p, struct call *c);
static void build_promote(struct proc *p, struct call *c);
static void build_gang_create(struct proc *p, struct call *c);
static void build_gang_token(struct proc *p, struct call *c);
static void build_join(struct proc *p, struct call *c);

#define ADMIN_ERRS (E_ANY | E(EPERM) | E(EBADF) | E(ENOENT) | E(ENOMEM))
/* Client commands: ENOTCONN marks them (see one_call()). */
#define CLIENT_ERRS (E_ANY | E(EBADF) | E(ENOTCONN) | E(ESHUTDOWN) | E(ENOMEM))

static const struct cmd_desc cmds[] = {
	{ "VERSION", KVARENA_IOC_VERSION, sizeof(struct kvarena_version),
	  E_ANY, 1, build_version },
	{ "ARENA_CREATE", KVARENA_IOC_ARENA_CREATE,
	  sizeof(struct kvarena_arena_create),
	  ADMIN_ERRS | E(EEXIST), 3, build_create },
	{ "ARENA_DESTROY", KVARENA_IOC_ARENA_DESTROY,
	  sizeof(struct kvarena_arena_destroy),
	  ADMIN_ERRS | E(EBUSY), 2, build_destroy },
	{ "ARENA_SET_BACKING", KVARENA_IOC_ARENA_SET_BACKING,
	  sizeof(struct kvarena_set_backing),
	  ADMIN_ERRS | E(EBUSY), 3, build_backing },
	{ "ATTACH", KVARENA_IOC_ATTACH, sizeof(struct kvarena_attach),
	  E_ANY | E(EBADF) | E(ENOENT) | E(EACCES) | E(EPERM) | E(EBUSY) |
	  E(ENOSPC) | E(ENODATA) | E(ENOMEM), 3, build_attach },
	/* ALLOC, PUBLISH, LOOKUP: -EOPNOTSUPP on a file arena */
	{ "ALLOC", KVARENA_IOC_ALLOC, sizeof(struct kvarena_frames),
	  CLIENT_ERRS | E(ENOSPC) | E(EOPNOTSUPP), 10, build_alloc },
	{ "FREE", KVARENA_IOC_FREE, sizeof(struct kvarena_frames),
	  CLIENT_ERRS | E(ESTALE) | E(EPERM) | E(ENOENT), 10, build_free },
	{ "FRAME_FD", KVARENA_IOC_FRAME_FD, sizeof(struct kvarena_frame_fd),
	  CLIENT_ERRS | E(ESTALE) | E(EPERM) | E(ENOENT) | E(ENODATA) |
	  E(EMFILE), 4, build_frame_fd },
	{ "SET_USAGE", KVARENA_IOC_SET_USAGE, sizeof(struct kvarena_usage),
	  CLIENT_ERRS, 3, build_usage },
	{ "STAT", KVARENA_IOC_STAT, sizeof(struct kvarena_stat),
	  E_ANY | E(ENOENT) | E(EACCES), 3, build_stat },
	{ "STAT_V1", KVARENA_IOC_STAT_V1, KVARENA_STAT_SIZE_V1,
	  E_ANY | E(ENOENT) | E(EACCES), 1, build_stat },
	{ "CLIENTS", KVARENA_IOC_CLIENTS, sizeof(struct kvarena_clients),
	  E_ANY | E(ENOENT) | E(EACCES) | E(ENOMEM), 3, build_clients },
	{ "SET_LIMITS", KVARENA_IOC_SET_LIMITS, sizeof(struct kvarena_limits),
	  ADMIN_ERRS | E(ENOSPC), 3, build_limits },
	{ "ARENA_SET_POLICY", KVARENA_IOC_ARENA_SET_POLICY,
	  sizeof(struct kvarena_arena_policy), ADMIN_ERRS, 2, build_policy },
	{ "EVICT", KVARENA_IOC_EVICT, sizeof(struct kvarena_evict),
	  ADMIN_ERRS | E(EOPNOTSUPP), 1, build_evict },
	{ "EVENTS_FD", KVARENA_IOC_EVENTS_FD, sizeof(struct kvarena_events_fd),
	  E_ANY | E(ENOENT) | E(EACCES) | E(EOPNOTSUPP) | E(EMFILE) |
	  E(ENOMEM), 1, build_events_fd },
	{ "PUBLISH", KVARENA_IOC_PUBLISH, sizeof(struct kvarena_prefix),
	  CLIENT_ERRS | E(ESTALE) | E(EPERM) | E(ENOENT) | E(EBUSY) |
	  E(EOPNOTSUPP), 5, build_publish },
	{ "LOOKUP", KVARENA_IOC_LOOKUP, sizeof(struct kvarena_prefix),
	  CLIENT_ERRS | E(ENOSPC) | E(EOPNOTSUPP), 5, build_lookup },
	{ "SCRUB", KVARENA_IOC_SCRUB, sizeof(struct kvarena_scrub),
	  CLIENT_ERRS | E(EOPNOTSUPP) | E(EPERM) | E(ENOENT) | E(ESTALE) |
	  E(EINTR), 2, build_scrub },
	/* -EOPNOTSUPP: a file arena (struct kvarena_arena_create.mem_kind) */
	{ "ARENA_RESIZE", KVARENA_IOC_ARENA_RESIZE,
	  sizeof(struct kvarena_arena_resize),
	  ADMIN_ERRS | E(EBUSY) | E(ENODATA) | E(EINTR) | E(EOPNOTSUPP), 2,
	  build_resize },
	{ "IMPORTS_DROPPED", KVARENA_IOC_IMPORTS_DROPPED,
	  sizeof(struct kvarena_imports_dropped), CLIENT_ERRS, 1,
	  build_imports_dropped },
	{ "ARENA_SET_TIER", KVARENA_IOC_ARENA_SET_TIER,
	  sizeof(struct kvarena_arena_tier),
	  ADMIN_ERRS | E(EEXIST) | E(EBUSY), 2, build_set_tier },
	{ "TIER", KVARENA_IOC_TIER, sizeof(struct kvarena_tier),
	  CLIENT_ERRS | E(EOPNOTSUPP) | E(EPERM) | E(ENOENT) | E(EINTR), 3,
	  build_tier },
	/*
	 * PROMOTE's -EAGAIN is its own ("when its frame must be cleared
	 * first (try again)"), over ioctl() too; -EIO and -EEXIST come with
	 * an agent's copies, which no other process makes here.
	 */
	{ "PROMOTE", KVARENA_IOC_PROMOTE, sizeof(struct kvarena_promote),
	  CLIENT_ERRS | E(EOPNOTSUPP) | E(ENODEV) | E(ENOSPC) | E(EAGAIN) |
	  E(EIO) | E(EEXIST) | E(ETIMEDOUT) | E(EINTR), 2,
	  build_promote },
	/*
	 * "-EINVAL for a mismatch, -EBUSY for a member in use, -ENOENT for a
	 * name no arena has, -EEXIST if @name is taken, -EOPNOTSUPP for CUDA
	 * or file members."
	 */
	{ "GANG_CREATE", KVARENA_IOC_GANG_CREATE,
	  sizeof(struct kvarena_gang_create),
	  ADMIN_ERRS | E(EEXIST) | E(EBUSY) | E(EOPNOTSUPP), 2,
	  build_gang_create },
	/*
	 * "-ENOTCONN for a file not attached, -EOPNOTSUPP for a client of
	 * an arena that is not a gang, -EPERM for a rank" (a rank's EPERM
	 * is allowed call by call: one_call()).
	 */
	{ "GANG_TOKEN", KVARENA_IOC_GANG_TOKEN,
	  sizeof(struct kvarena_gang_token), CLIENT_ERRS | E(EOPNOTSUPP), 2,
	  build_gang_token },
	/*
	 * "-EACCES, -EPERM, or -ENOENT for a client id, token or rank that
	 * does not match ... -EBUSY for a file attached or joined already,
	 * -EINVAL for a name that is not a gang."
	 */
	{ "JOIN", KVARENA_IOC_JOIN, sizeof(struct kvarena_join),
	  E_ANY | E(EBADF) | E(ENOENT) | E(EACCES) | E(EPERM) | E(EBUSY) |
	  E(ENOMEM), 3, build_join },
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

/* ---- pieces of arguments ------------------------------------------------ */

static void fail(struct proc *p, const struct call *c, const char *fmt, ...)
{
	va_list ap;

	p->failures++;
	printf("# sysfuzz: process %d call %lu: %s 0x%08x over %s: ", p->idx,
	       p->calls, c->known >= 0 ? cmds[c->known].name : "unknown",
	       c->cmd, c->uring ? "io_uring" : "ioctl");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static struct kfile *pick_file(struct proc *p)
{
	return &p->f[fz_below(&p->r, NFD)];
}

static struct kfile *attached_file(struct proc *p)
{
	unsigned int i, k = fz_below(&p->r, NFD);

	for (i = 0; i < NFD; i++) {
		struct kfile *f = &p->f[(k + i) % NFD];

		/* An evicted one too, until it is reopened; and ranks. */
		if ((f->attached || f->evicted || f->rank) && f->fd >= 0)
			return f;
	}
	return pick_file(p);
}

/* ---- gangs: what the process knows of its own ---------------------------- */

static void print_trail(const struct proc *p);

/* A failure found between calls: said with the last calls. */
static void gfail(struct proc *p, const char *fmt, ...)
{
	va_list ap;

	p->failures++;
	printf("# sysfuzz: process %d after call %lu: ", p->idx, p->calls);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	print_trail(p);
	fflush(stdout);
}

static void own_name(const struct proc *p, unsigned int s, char *name)
{
	fz_name(name, "fz%d-%u", p->idx, s);
}

/* "1-31 characters of [A-Za-z0-9_.-]", not starting with a dot. */
static bool name_ok(const char *name)
{
	size_t i;

	for (i = 0; i < KVARENA_NAME_LEN && name[i]; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
		      (ch == '.' && i)))
			return false;
	}
	return i >= 1 && i < KVARENA_NAME_LEN;
}

/* Which of our own names @name is, or -1. */
static int own_slot(const struct proc *p, const char *name)
{
	char own[KVARENA_NAME_LEN];
	unsigned int s;

	for (s = 0; s < NR_NAMES; s++) {
		own_name(p, s, own);
		if (!strncmp(name, own, KVARENA_NAME_LEN))
			return (int)s;
	}
	return -1;
}

/* Our live gang named @name, or -1. */
static int gang_by_name(const struct proc *p, const char *name)
{
	unsigned int i;

	for (i = 0; i < MAX_GANGS; i++)
		if (p->gang[i].alive &&
		    !strncmp(name, p->gang[i].name, KVARENA_NAME_LEN))
			return (int)i;
	return -1;
}

/* Is @name a member of a live gang of ours? */
static bool gang_member(const struct proc *p, const char *name)
{
	unsigned int i, r;

	for (i = 0; i < MAX_GANGS; i++)
		for (r = 0; p->gang[i].alive && r < p->gang[i].n; r++)
			if (!strncmp(name, p->gang[i].mname[r], KVARENA_NAME_LEN))
				return true;
	return false;
}

static struct gang *gang_of(struct proc *p, const struct kfile *f)
{
	struct gang *g;

	if (!f->gang)
		return NULL;
	g = &p->gang[f->gang - 1];
	return g->alive && g->serial == f->gang_serial ? g : NULL;
}

/* A client of a gang of ours, not evicted. */
static bool gang_client(struct proc *p, const struct kfile *f)
{
	return f->attached && !f->evicted && !f->rank && gang_of(p, f);
}

/* The file of the client rank @f joined, while that client lives. */
static struct kfile *leader_of(struct proc *p, const struct kfile *f)
{
	struct kfile *l;

	if (!f->rank || f->leader < 0)
		return NULL;
	l = &p->f[f->leader];
	return l->serial == f->leader_serial && l->attached && !l->evicted ?
	       l : NULL;
}

/* A writable file that is nothing yet, else any. */
static struct kfile *free_file(struct proc *p)
{
	unsigned int i, k = fz_below(&p->r, NFD);

	for (i = 0; i < NFD; i++) {
		struct kfile *f = &p->f[(k + i) % NFD];

		if (!f->rdonly && f->fd >= 0 && !f->attached && !f->evicted &&
		    !f->rank)
			return f;
	}
	return pick_file(p);
}

/* A live gang of ours at random, or -1. */
static int pick_gang(struct proc *p)
{
	unsigned int i, k = fz_below(&p->r, MAX_GANGS);

	for (i = 0; i < MAX_GANGS; i++)
		if (p->gang[(k + i) % MAX_GANGS].alive)
			return (int)((k + i) % MAX_GANGS);
	return -1;
}

/* A live client of a gang of ours at random, or NULL. */
static struct kfile *pick_gang_client(struct proc *p)
{
	unsigned int i, k = fz_below(&p->r, NFD);

	for (i = 0; i < NFD; i++)
		if (gang_client(p, &p->f[(k + i) % NFD]))
			return &p->f[(k + i) % NFD];
	return NULL;
}

/* /sys/class/misc/kvarena/arenas/@name/@attr, its first line ("": none). */
static void sysfs_line(const char *name, const char *attr, char *buf,
		       size_t len)
{
	char path[128];
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/sys/class/misc/kvarena/arenas/%.32s/%s",
		 name, attr);
	f = fopen(path, "r");
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/*
 * A member's own table while it is in a gang, or after: nobody attached,
 * nothing held or reserved, its counts adding up; its sysfs "gang" names
 * @gang (NULL: none).
 */
static void member_check(struct proc *p, const char *member, const char *gang)
{
	struct kvarena_stat s;
	char line[64];
	int ret = fz_stat(p->f[NFD - 1].fd, member, &s);

	if (ret) {
		gfail(p, "STAT of %.32s, a member of %s: %s", member,
		      gang ? gang : "a gang gone", strerror(-ret));
		return;
	}
	if (s.nr_clients || s.nr_held || s.nr_reserved ||
	    (uint64_t)s.nr_free + s.nr_cached != s.nr_frames)
		gfail(p, "%.32s, %s: clients %u held %u reserved %u, free %u "
		      "+ cached %u of %u", member, gang ? "a member" :
		      "a member of a gang gone", s.nr_clients, s.nr_held,
		      s.nr_reserved, s.nr_free, s.nr_cached, s.nr_frames);
	sysfs_line(member, "gang", line, sizeof(line));
	if (strncmp(line, gang ? gang : "", KVARENA_NAME_LEN))
		gfail(p, "%.32s: sysfs gang \"%s\", not \"%s\"", member, line,
		      gang ? gang : "");
}

/*
 * No client of ours is left in gang @gi: once the module has let the
 * last go (a file's release may trail its close a little), the gang
 * holds nothing, and its members' own tables are idle still.
 */
static void gang_check_gone(struct proc *p, int gi, const char *after)
{
	struct gang *g = &p->gang[gi];
	struct kvarena_stat s;
	double t0 = fz_now();
	unsigned int i;
	int ret;

	if (!g->alive)
		return;
	for (i = 0; i < NFD; i++)
		if (gang_client(p, &p->f[i]) && p->f[i].gang == gi + 1)
			return;
	for (;;) {
		ret = fz_stat(p->f[NFD - 1].fd, g->name, &s);
		if (ret) {
			gfail(p, "STAT of gang %s: %s", g->name, strerror(-ret));
			return;
		}
		if (!s.nr_clients || fz_now() - t0 > 5)
			break;
		usleep(1000);
	}
	if (s.nr_clients || s.nr_held || s.nr_reserved ||
	    (uint64_t)s.nr_free + s.nr_cached != s.nr_frames ||
	    s.frames_allocated - s.frames_freed != s.nr_cached)
		gfail(p, "gang %s after %s, its last client: clients %u held "
		      "%u reserved %u, free %u + cached %u of %u, %llu "
		      "allocated - %llu freed", g->name, after, s.nr_clients,
		      s.nr_held, s.nr_reserved, s.nr_free, s.nr_cached,
		      s.nr_frames, (unsigned long long)s.frames_allocated,
		      (unsigned long long)s.frames_freed);
	for (i = 0; i < g->n; i++)
		member_check(p, g->mname[i], g->name);
}

/* Client @f of gang @gi goes (closed, evicted): JOINs of it find none. */
static void gang_client_gone(struct proc *p, const struct kfile *f)
{
	struct gone_client *g = &p->gone[p->ngone++ % 4];

	g->gang = f->gang;
	g->gang_serial = f->gang_serial;
	g->id = f->client_id;
	g->token = f->token;
}

/*
 * An arena name: a gang of ours, our own, the shared one, a plausible
 * one, or junk.
 */
static void pick_name(struct proc *p, char *name)
{
	unsigned int i;
	int g;

	switch (fz_below(&p->r, 11)) {
	case 10:
		g = pick_gang(p);
		if (g >= 0) {
			memcpy(name, p->gang[g].name, KVARENA_NAME_LEN);
			return;
		}
		/* fall through */
	case 0: case 1: case 2: case 3:
		i = fz_below(&p->r, MAX_ARENAS);
		if (p->arenas[i][0]) {
			memcpy(name, p->arenas[i], KVARENA_NAME_LEN);
			return;
		}
		/* fall through */
	case 4: case 5:
		fz_name(name, "%s", shared_name);
		return;
	case 6:
		fz_name(name, "fz%d-%u", p->idx, fz_below(&p->r, 8));
		return;
	case 7:		/* 32 characters, no NUL */
		memset(name, 'a' + fz_below(&p->r, 26), KVARENA_NAME_LEN);
		return;
	case 8:		/* empty, or a dot first, or a bad character */
		fz_name(name, "%s", (const char *[]){ "", ".x", "a/b", "a b",
			"..", "\xff" }[fz_below(&p->r, 6)]);
		return;
	default:	/* random bytes */
		for (i = 0; i < KVARENA_NAME_LEN; i++)
			name[i] = (char)fz_next(&p->r);
		return;
	}
}

static uint32_t pick_count(struct proc *p, uint32_t room)
{
	switch (fz_below(&p->r, 12)) {
	case 0: return 0;
	case 1: return KVARENA_MAX_BATCH;
	case 2: return KVARENA_MAX_BATCH + 1;
	case 3: return (uint32_t)fz_next(&p->r);
	default: return 1 + fz_below(&p->r, room ? room : 1);
	}
}

/* A handle and what it is: ours (index into held), stale, foreign, forged. */
enum { H_OURS, H_STALE, H_FOREIGN, H_FORGED, H_ZERO, H_OTHER };

static bool held_by(const struct kfile *f, uint64_t h)
{
	unsigned int i;

	for (i = 0; i < f->n; i++)
		if (f->held[i] == h)
			return true;
	return false;
}

static uint64_t pick_handle_any(struct proc *p, struct kfile *f, int *kind,
				int *ours_idx);

/*
 * A handle this file's client may hold after all (a shared frame keeps
 * its handle for every holder) counts as ours.
 */
static uint64_t pick_handle(struct proc *p, struct kfile *f, int *kind,
			    int *ours_idx)
{
	uint64_t h = pick_handle_any(p, f, kind, ours_idx);

	if (*kind != H_OURS && held_by(f, h))
		*kind = H_OURS;
	return h;
}

static uint64_t pick_handle_any(struct proc *p, struct kfile *f, int *kind,
				int *ours_idx)
{
	unsigned int k;
	uint64_t h;
	int o;

	*ours_idx = -1;
	switch (fz_below(&p->r, 10)) {
	case 0: case 1: case 2: case 3: case 4:
		if (f->n) {
			*ours_idx = fz_below(&p->r, f->n);
			*kind = H_OURS;
			return f->held[*ours_idx];
		}
		/* fall through */
	case 5: case 6:
		if (p->nstale) {
			k = fz_below(&p->r, p->nstale < POOL ? p->nstale : POOL);
			/*
			 * Stale only in the arena it came from: elsewhere
			 * (another arena, or the same name made anew) the
			 * same numbers may name a frame we hold.
			 */
			*kind = p->stale_tag[k] == f->tag && f->attached ?
				H_STALE : H_OTHER;
			return p->stale[k];
		}
		/* fall through */
	case 7:
		o = fz_below(&p->r, MAX_PROCS);
		h = shm->foreign[o][fz_below(&p->r, POOL)];
		if (o != p->idx && h) {
			*kind = f->attached && f->tag == 0 ? H_FOREIGN : H_OTHER;
			return h;
		}
		/* fall through */
	case 8:
		/* Generations never reach 2^31 here; indices past any arena. */
		*kind = H_FORGED;
		if (fz_one_in(&p->r, 2))
			return KVARENA_HANDLE(0x80000000u | (uint32_t)fz_next(&p->r),
					      fz_below(&p->r, NR_SHARED));
		return KVARENA_HANDLE(1 + fz_below(&p->r, 4),
				      KVARENA_MAX_FRAMES + fz_below(&p->r, 1u << 20));
	default:
		*kind = H_ZERO;
		return 0;
	}
}

/*
 * Where the command's struct (or an array it points to) goes: mostly a
 * good buffer, else NULL, a hole, read-only memory (the command's output
 * cannot be written), a struct that runs off the end of the mapping,
 * an odd address, or the kernel's half of the address space.
 */
enum { PTR_GOOD, PTR_RO, PTR_EDGE, PTR_BAD };

static void *pick_ptr(struct proc *p, void *good, size_t size, int *kind)
{
	*kind = PTR_BAD;
	switch (fz_below(&p->r, 40)) {
	case 0: return NULL;
	case 1: return p->hole + fz_below(&p->r, 4096);
	case 2:
		/* Reads as zeros; nothing can be written back. */
		*kind = PTR_RO;
		return p->ro;
	case 3:
		/* Its first half is good memory, the rest is not. */
		*kind = PTR_EDGE;
		return p->edge + 4096 - (size > 8 ? size / 2 : 4);
	case 4: return (void *)(uintptr_t)0xffff888000000000ull;
	case 5: return (void *)(uintptr_t)(fz_next(&p->r) | 1);
	case 6:
		*kind = PTR_GOOD;
		memmove((uint8_t *)good + 1, good, size);
		return (uint8_t *)good + 1;
	default:
		*kind = PTR_GOOD;
		return good;
	}
}

static void *slot(struct proc *p, int i)
{
	return p->buf + i * SLOT;
}

/*
 * Break a command's struct now and then: non-zero reserved bytes or an
 * unknown flag (must_fail), or a random byte anywhere (no promise).
 */
static void mutate(struct proc *p, struct call *c, void *arg, size_t off,
		   size_t len, const char *what)
{
	if (len && fz_one_in(&p->r, 12)) {
		uint8_t *b = (uint8_t *)arg + off + fz_below(&p->r, len);

		*b |= (uint8_t)(1u << fz_below(&p->r, 8));
		c->must_fail = true;
		c->why = what;
	}
}

/*
 * The byte may be one a must_fail rests on (a flag, a reserved byte, a
 * size against another): the call may then go either way.
 */
static void scribble(struct proc *p, struct call *c, void *arg, size_t size)
{
	if (fz_one_in(&p->r, 16)) {
		((uint8_t *)arg)[fz_below(&p->r, size)] = (uint8_t)fz_next(&p->r);
		c->must_fail = false;
	}
}

#define MUTATE_FIELD(p, c, s, field) \
	mutate(p, c, s, (uint8_t *)&(s)->field - (uint8_t *)(s), \
	       sizeof((s)->field), #field)

/* ---- builders, one per command ----------------------------------------- */

static void build_version(struct proc *p, struct call *c)
{
	struct kvarena_version *v = slot(p, 0);

	memset(v, 0, sizeof(*v));
	MUTATE_FIELD(p, c, v, reserved0);
	MUTATE_FIELD(p, c, v, reserved);
}

static void build_create(struct proc *p, struct call *c)
{
	static const uint64_t sizes[] = { 4096, 65536, 2u << 20, 1u << 30,
					  4095, 8192 + 4096, 0, 1ull << 31,
					  1ull << 40 };
	struct kvarena_arena_create *a = slot(p, 0);
	unsigned int i;

	memset(a, 0, sizeof(*a));
	/*
	 * One in three an arena a gang can be made of: our own name, host
	 * memory (backed at once, from a memfd we keep: account()) or none,
	 * 8 or 16 frames of FS, no policy of its own.
	 */
	if (fz_one_in(&p->r, 3)) {
		own_name(p, p->arena_seq++ % NR_NAMES, a->name);
		a->frame_size = FS;
		a->nr_frames = fz_one_in(&p->r, 4) ? 16 : 8;
		a->mem_kind = KVARENA_MEM_HOST;
		a->flags = fz_one_in(&p->r, 4) ? KVARENA_CREATE_NO_BACKING : 0;
		a->low_watermark = fz_below(&p->r, 3);
		a->bytes_per_token = 512;
		c->back = !(a->flags & KVARENA_CREATE_NO_BACKING);
		MUTATE_FIELD(p, c, a, reserved);
		return;
	}
	i = fz_below(&p->r, MAX_ARENAS);
	if (!p->arenas[i][0] || fz_one_in(&p->r, 4))
		fz_name(a->name, "fz%d-%u", p->idx, p->arena_seq++ % 8);
	else
		pick_name(p, a->name);
	a->frame_size = fz_one_in(&p->r, 2) ? FS :
			sizes[fz_below(&p->r, sizeof(sizes) / sizeof(sizes[0]))];
	switch (fz_below(&p->r, 8)) {
	case 0: a->nr_frames = 0; break;
	case 1: a->nr_frames = KVARENA_MAX_FRAMES + 1; break;
	/*
	 * Random, but past the limit: a valid arena of millions of frames
	 * is hundreds of MiB of tables, which a 1 GiB VM cannot spare for
	 * four processes at once.
	 */
	case 2:
		a->nr_frames = KVARENA_MAX_FRAMES + 1 +
			       fz_below(&p->r, 0xffffffffu - KVARENA_MAX_FRAMES);
		break;
	/* Large, but not so large that a 1 GiB VM goes short. */
	case 3: a->nr_frames = 1 + fz_below(&p->r, 65536); break;
	default: a->nr_frames = 1 + fz_below(&p->r, NR_OWN); break;
	}
	a->mem_kind = fz_one_in(&p->r, 8) ? fz_below(&p->r, 4) :
					     KVARENA_MEM_HOST;
	a->low_watermark = fz_below(&p->r, 8);
	a->flags = fz_one_in(&p->r, 2) ? KVARENA_CREATE_NO_BACKING : 0;
	if (fz_one_in(&p->r, 4)) {
		a->flags |= KVARENA_CREATE_ACCESS;
		a->owner_uid = fz_one_in(&p->r, 2) ? 0 : 65534;
		a->owner_gid = fz_one_in(&p->r, 2) ? 0 : (uint32_t)fz_next(&p->r);
		a->mode = fz_one_in(&p->r, 4) ? (uint32_t)fz_next(&p->r) : 0640;
		a->client_min_limit = fz_below(&p->r, 4);
		a->client_max_limit = fz_below(&p->r, 8);
		a->client_max_default = fz_below(&p->r, 8);
	}
	if (fz_one_in(&p->r, 16))
		a->mem_uuid[fz_below(&p->r, 16)] = 1;
	/* Cleared between any two holders: host memory only. */
	if (fz_one_in(&p->r, 8))
		a->flags |= KVARENA_CREATE_CLEAR_ALWAYS;
	if (fz_one_in(&p->r, 16)) {
		a->flags |= 1u << (3 + fz_below(&p->r, 29));
		c->must_fail = true;
		c->why = "an unknown create flag";
	}
	a->domain_cached_max = fz_one_in(&p->r, 8) ? fz_below(&p->r, 4) : 0;
	/* A table to grow into now and then, a few times the arena at most. */
	if (a->nr_frames && a->nr_frames <= KVARENA_MAX_FRAMES) {
		switch (fz_below(&p->r, 12)) {
		case 0: case 1: case 2:
			a->max_frames = a->nr_frames +
				fz_below(&p->r, 3 * (a->nr_frames < NR_OWN ?
						     a->nr_frames : NR_OWN) + 1);
			break;
		case 3:
			if (a->nr_frames < 2)
				break;
			a->max_frames = 1 + fz_below(&p->r, a->nr_frames - 1);
			c->must_fail = true;
			c->why = "max_frames below nr_frames";
			break;
		case 4:
			a->max_frames = KVARENA_MAX_FRAMES + 1 +
				fz_below(&p->r, 0xffffffffu - KVARENA_MAX_FRAMES);
			c->must_fail = true;
			c->why = "max_frames past KVARENA_MAX_FRAMES";
			break;
		}
	}
	MUTATE_FIELD(p, c, a, reserved);
	scribble(p, c, a, sizeof(*a));
}

static void build_destroy(struct proc *p, struct call *c)
{
	struct kvarena_arena_destroy *d = slot(p, 0);
	int i;

	memset(d, 0, sizeof(*d));
	i = pick_gang(p);
	if (i >= 0 && fz_one_in(&p->r, 10))
		memcpy(d->name, p->gang[i].name, KVARENA_NAME_LEN);
	else
		pick_name(p, d->name);
	/* The shared arena stays, so that its handles mean one thing. */
	if (!strcmp(d->name, shared_name))
		d->name[0] = 'x';
	MUTATE_FIELD(p, c, d, flags);
	MUTATE_FIELD(p, c, d, reserved0);
	MUTATE_FIELD(p, c, d, reserved);
}

static void build_backing(struct proc *p, struct call *c)
{
	struct kvarena_set_backing *b = slot(p, 0);

	memset(b, 0, sizeof(*b));
	pick_name(p, b->name);
	b->first_frame = fz_one_in(&p->r, 4) ? (uint32_t)fz_next(&p->r) :
			 fz_below(&p->r, NR_OWN);
	b->nr_frames = fz_one_in(&p->r, 4) ? (uint32_t)fz_next(&p->r) :
		       fz_below(&p->r, NR_OWN + 1);
	switch (fz_below(&p->r, 6)) {
	case 0: b->fd = -1; break;
	case 1: b->fd = 1000 + fz_below(&p->r, 100); break;
	case 2: b->fd = pick_file(p)->fd; break;
	default: b->fd = p->fdpool[fz_below(&p->r, p->nfdpool)]; break;
	}
	b->offset = fz_one_in(&p->r, 2) ? 0 :
		    fz_one_in(&p->r, 2) ? (uint64_t)fz_below(&p->r, 64) * 4096 :
					   fz_next(&p->r);
	MUTATE_FIELD(p, c, b, flags);
	MUTATE_FIELD(p, c, b, reserved);
}

static void build_attach(struct proc *p, struct call *c)
{
	struct kvarena_attach *a = slot(p, 0);
	int g = pick_gang(p);

	memset(a, 0, sizeof(*a));
	/* Clients for our gangs, on files that are nothing yet. */
	if (g >= 0 && fz_one_in(&p->r, 2)) {
		c->kf = free_file(p);
		memcpy(a->name, p->gang[g].name, KVARENA_NAME_LEN);
	} else {
		c->kf = pick_file(p);
		pick_name(p, a->name);
	}
	if (fz_one_in(&p->r, 8))
		memset(a->label, 'l', KVARENA_LABEL_LEN);	/* no NUL */
	else
		fz_name(a->label, "fz%d", p->idx);
	a->min_frames = fz_one_in(&p->r, 4) ? fz_below(&p->r, 8) :
			fz_one_in(&p->r, 8) ? (uint32_t)fz_next(&p->r) : 0;
	a->max_frames = fz_one_in(&p->r, 2) ? 0 :
			fz_one_in(&p->r, 8) ? (uint32_t)fz_next(&p->r) :
					      fz_below(&p->r, NR_SHARED);
	/* Outputs are ignored on input. */
	a->client_id = (uint32_t)fz_next(&p->r);
	/* A domain of its own now and then; a domain to join is the owner's. */
	if (fz_one_in(&p->r, 8))
		a->flags = KVARENA_ATTACH_PRIVATE;
	if (fz_one_in(&p->r, 16)) {
		a->flags |= KVARENA_ATTACH_DOMAIN;
		a->domain = KVARENA_DOMAIN(KVARENA_DOMAIN_KIND_NAMED,
					   fz_below(&p->r, 4));
	}
	if (fz_one_in(&p->r, 16)) {
		a->flags |= 1u << (2 + fz_below(&p->r, 30));
		c->must_fail = true;
		c->why = "an unknown attach flag";
	}
	MUTATE_FIELD(p, c, a, reserved);
}

static void build_alloc(struct proc *p, struct call *c)
{
	struct kvarena_frames *f = slot(p, 0);
	uint64_t *h = p->hbuf;
	int kind;

	memset(f, 0, sizeof(*f));
	c->kf = attached_file(p);
	f->count = pick_count(p, 16);
	f->flags = fz_one_in(&p->r, 2) ? KVARENA_ALLOC_PARTIAL : 0;
	c->handles = pick_ptr(p, h, f->count <= 16 ? f->count * 8 : 8, &kind);
	/* A partial ALLOC may take few enough to fit before the edge. */
	c->valid_handles_ptr = kind == PTR_GOOD || kind == PTR_EDGE;
	if (kind != PTR_GOOD &&
	    !(kind == PTR_EDGE && (f->flags & KVARENA_ALLOC_PARTIAL))) {
		/* The handles cannot be written: nothing may be taken. */
		c->must_fail = true;
		c->why = "handles that cannot be written";
	}
	c->count = f->count;
	f->handles = (uintptr_t)c->handles;
	if (fz_one_in(&p->r, 16)) {
		f->flags |= 1u << (1 + fz_below(&p->r, 31));
		c->must_fail = true;
		c->why = "an unknown alloc flag";
	}
	MUTATE_FIELD(p, c, f, reserved0);
	MUTATE_FIELD(p, c, f, reserved);
}

static void build_free(struct proc *p, struct call *c)
{
	struct kvarena_frames *f = slot(p, 0);
	uint64_t *h = p->hbuf;
	unsigned int n, i;
	int kind;

	memset(f, 0, sizeof(*f));
	c->kf = attached_file(p);
	n = fz_one_in(&p->r, 16) ? pick_count(p, 16) : 1 + fz_below(&p->r, 8);
	for (i = 0; i < n && i < 64; i++) {
		int hkind, idx;

		h[i] = pick_handle(p, c->kf, &hkind, &idx);
		if (hkind != H_OURS && hkind != H_OTHER) {
			c->must_fail = true;
			c->why = "a handle not ours";
		}
		/* The same handle twice in one batch. */
		if (i && fz_one_in(&p->r, 16)) {
			h[i] = h[fz_below(&p->r, i)];
			c->must_fail = true;
			c->why = "a handle twice";
		}
	}
	/* Our own handles, but none twice: a batch that must work. */
	if (!c->must_fail && n <= c->kf->n && fz_one_in(&p->r, 2)) {
		unsigned int first = fz_below(&p->r, c->kf->n - n + 1);

		memcpy(h, c->kf->held + first, n * sizeof(*h));
	}
	f->count = n;
	c->count = n;
	c->handles = pick_ptr(p, h, n <= 64 ? n * 8 : 8, &kind);
	c->valid_handles_ptr = kind == PTR_GOOD && n <= 64;
	if (kind != PTR_GOOD) {
		/* Unreadable, or zeros (handle 0 is never valid). */
		c->must_fail = true;
		c->why = "handles that cannot be read";
	}
	f->handles = (uintptr_t)c->handles;
	if (fz_one_in(&p->r, 16)) {
		f->flags = 1u << fz_below(&p->r, 32);
		c->must_fail = true;
		c->why = "a free flag";
	}
	MUTATE_FIELD(p, c, f, reserved0);
	MUTATE_FIELD(p, c, f, reserved);
}

/*
 * FRAME_FD: of a frame the file's client holds, or not.  A rank's is of
 * a frame its client holds (its member's view), which must work while
 * the client lives and the frame is held, and be -ENOLINK once the
 * client is gone; a gang client maps nothing itself (-EOPNOTSUPP: its
 * ranks do).
 */
static void build_frame_fd(struct proc *p, struct call *c)
{
	struct kvarena_frame_fd *ff = slot(p, 0);
	struct kfile *l;
	struct gang *g;
	int kind, idx;
	bool args_bad;

	memset(ff, 0, sizeof(*ff));
	c->kf = attached_file(p);
	/* Ranks map often: that is all they do. */
	if (!c->kf->rank && fz_one_in(&p->r, 2)) {
		unsigned int i, k = fz_below(&p->r, NFD);

		for (i = 0; i < NFD; i++)
			if (p->f[(k + i) % NFD].rank && p->f[(k + i) % NFD].fd >= 0)
				c->kf = &p->f[(k + i) % NFD];
	}
	MUTATE_FIELD(p, c, ff, flags);
	MUTATE_FIELD(p, c, ff, access);
	MUTATE_FIELD(p, c, ff, reserved0);
	MUTATE_FIELD(p, c, ff, reserved);
	args_bad = c->must_fail;
	if (c->kf->rank) {
		l = leader_of(p, c->kf);
		g = gang_of(p, c->kf);
		if (l && l->n && !fz_one_in(&p->r, 4)) {
			ff->handle = l->held[fz_below(&p->r, l->n)];
		} else {
			ff->handle = pick_handle(p, c->kf, &kind, &idx);
			if (kind == H_FORGED || kind == H_ZERO) {
				c->must_fail = true;
				c->why = "a handle nobody holds";
			}
		}
		if (args_bad)
			return;
		if (!l && c->kf->leader >= 0) {
			c->want = E(ENOLINK);
			c->want_why = "a rank whose client is gone";
		} else if (l && !l->desync && held_by(l, ff->handle)) {
			c->want = g && g->backed ?
				  E(0) | E(EMFILE) | E(ENOMEM) : E(ENODATA);
			c->want_why = g && g->backed ?
				      "a frame its client holds" :
				      "an accounting gang's frame";
		}
		return;
	}
	ff->handle = pick_handle(p, c->kf, &kind, &idx);
	if (kind != H_OURS && kind != H_OTHER) {
		c->must_fail = true;
		c->why = "a handle not ours";
	}
	if (gang_client(p, c->kf) && !args_bad) {
		c->want = E(EOPNOTSUPP);
		c->want_why = "FRAME_FD of a gang client itself";
	}
}

static void build_usage(struct proc *p, struct call *c)
{
	struct kvarena_usage *u = slot(p, 0);

	memset(u, 0, sizeof(*u));
	c->kf = attached_file(p);
	u->filled_tokens = fz_one_in(&p->r, 4) ? fz_next(&p->r) :
			   fz_below(&p->r, 10000);
	u->filled_bytes = fz_one_in(&p->r, 4) ? fz_next(&p->r) :
			  (uint64_t)fz_below(&p->r, c->kf->n + 1) * FS;
	MUTATE_FIELD(p, c, u, flags);
	MUTATE_FIELD(p, c, u, reserved0);
	MUTATE_FIELD(p, c, u, reserved);
}

static void build_stat(struct proc *p, struct call *c)
{
	struct kvarena_stat *s = slot(p, 0);

	memset(s, 0, sizeof(*s));
	if (fz_one_in(&p->r, 3)) {
		s->flags = KVARENA_STAT_BY_INDEX;
		s->index = fz_one_in(&p->r, 4) ? (uint32_t)fz_next(&p->r) :
			   fz_below(&p->r, 8);
	} else {
		pick_name(p, s->name);
	}
	/* Outputs are ignored on input. */
	s->nr_free = (uint32_t)fz_next(&p->r);
	s->nr_quarantined = (uint32_t)fz_next(&p->r);
	/* Past the struct of before: to stay as it is (check_stat()). */
	if (c->cmd == KVARENA_IOC_STAT_V1)
		memset((uint8_t *)s + KVARENA_STAT_SIZE_V1, 0xa5,
		       STAT_V1_TAIL + 1);
	else
		s->nr_shrinking = (uint32_t)fz_next(&p->r);
}

static void build_clients(struct proc *p, struct call *c)
{
	struct kvarena_clients *cl = slot(p, 0);
	int kind;

	memset(cl, 0, sizeof(*cl));
	pick_name(p, cl->name);
	cl->count = fz_one_in(&p->r, 8) ? (uint32_t)fz_next(&p->r) :
		    fz_below(&p->r, 20);
	cl->clients = (uintptr_t)pick_ptr(p, slot(p, 1),
					  sizeof(struct kvarena_client_info),
					  &kind);
	if (cl->count > SLOT / sizeof(struct kvarena_client_info) &&
	    cl->clients == (uintptr_t)slot(p, 1))
		cl->count = SLOT / sizeof(struct kvarena_client_info);
	MUTATE_FIELD(p, c, cl, flags);
	MUTATE_FIELD(p, c, cl, reserved0);
	MUTATE_FIELD(p, c, cl, reserved);
}

static void build_limits(struct proc *p, struct call *c)
{
	struct kvarena_limits *l = slot(p, 0);
	struct kfile *f = attached_file(p);

	memset(l, 0, sizeof(*l));
	if (f->attached && fz_one_in(&p->r, 2)) {
		memcpy(l->name, f->arena, KVARENA_NAME_LEN);
		l->client_id = f->client_id;
	} else {
		pick_name(p, l->name);
		l->client_id = fz_one_in(&p->r, 2) ? fz_below(&p->r, 64) :
						      (uint32_t)fz_next(&p->r);
	}
	l->min_frames = fz_one_in(&p->r, 2) ? 0 : fz_below(&p->r, 16);
	l->max_frames = fz_one_in(&p->r, 3) ? 0 :
			fz_one_in(&p->r, 8) ? (uint32_t)fz_next(&p->r) :
					      fz_below(&p->r, NR_SHARED + 2);
	MUTATE_FIELD(p, c, l, flags);
	MUTATE_FIELD(p, c, l, reserved);
}

static void build_policy(struct proc *p, struct call *c)
{
	struct kvarena_arena_policy *a = slot(p, 0);

	memset(a, 0, sizeof(*a));
	pick_name(p, a->name);
	/* Never lock the shared arena against the unprivileged process. */
	if (!strcmp(a->name, shared_name))
		a->name[0] = 'x';
	a->owner_uid = fz_one_in(&p->r, 4) ? (uint32_t)fz_next(&p->r) : 0;
	a->owner_gid = fz_one_in(&p->r, 4) ? (uint32_t)fz_next(&p->r) : 0;
	a->mode = fz_one_in(&p->r, 4) ? (uint32_t)fz_next(&p->r) : 0666;
	a->client_min_limit = fz_below(&p->r, 70);
	a->client_max_default = fz_below(&p->r, 70);
	a->client_max_limit = fz_below(&p->r, 70);
	/* A domain rule and a cap on each domain's cached frames, now and then. */
	a->cache_domains = fz_below(&p->r, 3);
	a->domain_cached_max = fz_one_in(&p->r, 4) ? fz_below(&p->r, 8) : 0;
	MUTATE_FIELD(p, c, a, flags);
	MUTATE_FIELD(p, c, a, reserved0);
	MUTATE_FIELD(p, c, a, reserved);
}

/*
 * EVICT: of one of our own clients, which then answers every client
 * command with ESHUTDOWN; else of a client that is not there, by name
 * and id: small ids only in arenas of ours, which only we attach to, so
 * that no other process's client goes (its picture would go wrong).
 */
static void build_evict(struct proc *p, struct call *c)
{
	struct kvarena_evict *e = slot(p, 0);
	struct kfile *f = attached_file(p);
	uint32_t t;

	memset(e, 0, sizeof(*e));
	if (f->attached && fz_one_in(&p->r, 3)) {
		memcpy(e->name, f->arena, KVARENA_NAME_LEN);
		e->client_id = f->client_id;
	} else {
		pick_name(p, e->name);
		t = arena_tag(p, e->name);
		e->client_id = t && t != 0xffffffffu && fz_one_in(&p->r, 2) ?
			       fz_below(&p->r, 64) :
			       0x80000000u | (uint32_t)fz_next(&p->r);
	}
	/* Outputs are ignored on input. */
	e->nr_frames = (uint32_t)fz_next(&p->r);
	MUTATE_FIELD(p, c, e, flags);
	MUTATE_FIELD(p, c, e, reserved0);
	MUTATE_FIELD(p, c, e, reserved);
}

/* EVENTS_FD: an arena's events; read (if it cannot block) and closed. */
static void build_events_fd(struct proc *p, struct call *c)
{
	struct kvarena_events_fd *e = slot(p, 0);

	memset(e, 0, sizeof(*e));
	pick_name(p, e->name);
	e->flags = fz_below(&p->r, 4);	/* OLDEST, NONBLOCK */
	/* Outputs are ignored on input. */
	e->fd = (int32_t)fz_next(&p->r);
	if (fz_one_in(&p->r, 12)) {
		e->flags |= 1u << (2 + fz_below(&p->r, 30));
		c->must_fail = true;
		c->why = "an unknown events flag";
	}
	MUTATE_FIELD(p, c, e, reserved);
}

/*
 * Prefix keys from a small space that every process shares, so that
 * lookups find what others published; now and then junk, or the all-zero
 * key that no entry may have.
 */
static void pick_key(struct proc *p, uint8_t *key, struct call *c)
{
	unsigned int i;

	memset(key, 0, KVARENA_KEY_LEN);
	switch (fz_below(&p->r, 16)) {
	case 0:
		c->must_fail = true;
		c->why = "an all-zero key";
		return;
	case 1:
		for (i = 0; i < KVARENA_KEY_LEN; i++)
			key[i] = (uint8_t)fz_next(&p->r);
		return;
	default:
		key[0] = 1 + fz_below(&p->r, 48);
		memcpy(key + 1, "fz-prefix", 9);
		return;
	}
}

static void build_prefix(struct proc *p, struct call *c, bool publish)
{
	struct kvarena_prefix *x = slot(p, 0);
	struct kvarena_prefix_entry *e = (void *)p->hbuf;
	unsigned int n, i, j;
	int kind, idx;

	memset(x, 0, sizeof(*x));
	c->kf = attached_file(p);
	n = fz_one_in(&p->r, 16) ? pick_count(p, 8) : 1 + fz_below(&p->r, 8);
	for (i = 0; i < n && i < 64; i++) {
		memset(&e[i], 0, sizeof(e[i]));
		pick_key(p, e[i].key, c);
		/* Outputs are ignored on input. */
		e[i].flags = (uint32_t)fz_next(&p->r);
		if (!publish) {
			e[i].handle = fz_next(&p->r);
			continue;
		}
		e[i].handle = pick_handle(p, c->kf, &kind, &idx);
		if (kind != H_OURS && kind != H_OTHER) {
			c->must_fail = true;
			c->why = "a handle not ours";
		}
		for (j = 0; j < i; j++) {
			if (e[j].handle == e[i].handle) {
				c->must_fail = true;
				c->why = "a frame twice";
			}
		}
		if (fz_one_in(&p->r, 32)) {
			e[i].reserved = 1u << fz_below(&p->r, 32);
			c->must_fail = true;
			c->why = "an entry's reserved field";
		}
	}
	x->count = n;
	c->count = n;
	x->entries = (uintptr_t)pick_ptr(p, e, n <= 64 ? n * sizeof(*e) :
					 sizeof(*e), &kind);
	c->handles = (uint64_t *)(uintptr_t)x->entries;
	c->valid_handles_ptr = kind == PTR_GOOD && n <= 64;
	if (kind != PTR_GOOD) {
		c->must_fail = true;
		c->why = "entries that cannot be read";
	}
	/* A flag it does not take: the other command's, or nobody's. */
	if (fz_one_in(&p->r, 12)) {
		x->flags = fz_one_in(&p->r, 3) ?
			   (publish ? KVARENA_LOOKUP_LOWER : KVARENA_PUBLISH_TOKENS) :
			   1u << (2 + fz_below(&p->r, 30));
		c->must_fail = true;
		c->why = "a prefix flag it does not take";
	}
	MUTATE_FIELD(p, c, x, nr_lower);
	MUTATE_FIELD(p, c, x, reserved);
	if (fz_one_in(&p->r, 32)) {
		/* Token fields without KVARENA_PUBLISH_TOKENS. */
		x->tokens_per_entry = 1 + fz_below(&p->r, 4);
		c->must_fail = true;
		c->why = "token ids without the flag";
	}
}

static void build_publish(struct proc *p, struct call *c)
{
	struct kvarena_prefix *x = slot(p, 0);
	uint32_t *ids = slot(p, 3);
	unsigned int i;

	build_prefix(p, c, true);
	if (x->flags || x->tokens_per_entry || !fz_one_in(&p->r, 4))
		return;
	/* Token ids for the events: in range, or not. */
	x->flags = KVARENA_PUBLISH_TOKENS;
	x->tokens_per_entry = fz_one_in(&p->r, 8) ?
			      (fz_one_in(&p->r, 2) ? 0 : KVARENA_EVENT_MAX_TOKENS + 1) :
			      1 + fz_below(&p->r, 16);
	if (!x->tokens_per_entry ||
	    x->tokens_per_entry > KVARENA_EVENT_MAX_TOKENS) {
		c->must_fail = true;
		c->why = "token ids per entry out of range";
	}
	for (i = 0; i < SLOT / sizeof(*ids); i++)
		ids[i] = (uint32_t)fz_next(&p->r);
	x->tokens = (uintptr_t)ids;
	if (fz_one_in(&p->r, 16)) {
		x->tokens = (uintptr_t)p->hole;
		c->must_fail = true;
		c->why = "token ids that cannot be read";
	}
}

static void build_lookup(struct proc *p, struct call *c)
{
	struct kvarena_prefix *x = slot(p, 0);

	build_prefix(p, c, false);
	/* The keys after the run found, counted in the lower tier too. */
	if (fz_one_in(&p->r, 2))
		x->flags |= KVARENA_LOOKUP_LOWER;
}

/*
 * A scrubber's take (frames this process never gives back: they go to
 * the next scrubber when its file goes), or a DONE of handles it never
 * took, which must fail.
 */
static void build_scrub(struct proc *p, struct call *c)
{
	struct kvarena_scrub *sc = slot(p, 0);
	uint64_t *h = p->hbuf;
	unsigned int i;
	int kind, idx;

	memset(sc, 0, sizeof(*sc));
	c->kf = attached_file(p);
	sc->count = pick_count(p, 16);
	if (fz_one_in(&p->r, 2)) {
		sc->flags = KVARENA_SCRUB_DONE |
			    (fz_one_in(&p->r, 4) ? KVARENA_SCRUB_ABANDON : 0);
		for (i = 0; i < sc->count && i < 64; i++)
			h[i] = pick_handle(p, c->kf, &kind, &idx);
		c->must_fail = true;
		c->why = "a DONE of frames never taken";
	} else {
		sc->timeout_ms = fz_one_in(&p->r, 4) ? 1 : 0;
	}
	c->count = sc->count;
	c->handles = pick_ptr(p, h, sc->count <= 16 ? sc->count * 8 : 8,
			      &kind);
	c->valid_handles_ptr = kind == PTR_GOOD;
	sc->handles = (uintptr_t)c->handles;
	if (fz_one_in(&p->r, 16)) {
		sc->flags |= 1u << (2 + fz_below(&p->r, 30));
		c->must_fail = true;
		c->why = "an unknown scrub flag";
	}
	MUTATE_FIELD(p, c, sc, reserved);
}

/* IMPORTS_DROPPED: of the process's imports of frames out of the arena. */
static void build_imports_dropped(struct proc *p, struct call *c)
{
	struct kvarena_imports_dropped *d = slot(p, 0);

	memset(d, 0, sizeof(*d));
	c->kf = attached_file(p);
	/* Outputs are ignored on input. */
	d->nr_done = (uint32_t)fz_next(&p->r);
	MUTATE_FIELD(p, c, d, flags);
	MUTATE_FIELD(p, c, d, reserved);
}

/*
 * ARENA_RESIZE: shrinks and grows within the table or past it, or a
 * cancel; waits of a few milliseconds at most, so that nobody stalls.
 */
static void build_resize(struct proc *p, struct call *c)
{
	struct kvarena_arena_resize *r = slot(p, 0);

	memset(r, 0, sizeof(*r));
	pick_name(p, r->name);
	switch (fz_below(&p->r, 10)) {
	case 0:
		r->flags = KVARENA_RESIZE_CANCEL;
		break;
	case 1:
		c->must_fail = true;
		c->why = "a size of 0";
		break;
	case 2:
		r->nr_frames = KVARENA_MAX_FRAMES + 1 +
			       fz_below(&p->r, 0xffffffffu - KVARENA_MAX_FRAMES);
		c->must_fail = true;
		c->why = "a size past KVARENA_MAX_FRAMES";
		break;
	case 3: case 4:
		/* The shared arena's table and past it. */
		r->nr_frames = 1 + fz_below(&p->r, NR_SHARED + NR_OWN);
		break;
	default:
		r->nr_frames = 1 + fz_below(&p->r, 4 * NR_OWN);
		break;
	}
	r->timeout_ms = fz_one_in(&p->r, 4) ? fz_below(&p->r, 21) : 0;
	if ((r->flags & KVARENA_RESIZE_CANCEL) && r->timeout_ms) {
		c->must_fail = true;
		c->why = "a cancel that would wait";
	}
	if ((r->flags & KVARENA_RESIZE_CANCEL) && fz_one_in(&p->r, 4)) {
		r->nr_frames = 1 + fz_below(&p->r, NR_SHARED);
		c->must_fail = true;
		c->why = "a cancel with a size";
	}
	/* Outputs are ignored on input. */
	r->out_frames = (uint32_t)fz_next(&p->r);
	r->out_shrinking = (uint32_t)fz_next(&p->r);
	r->out_absent = (uint32_t)fz_next(&p->r);
	if (fz_one_in(&p->r, 16)) {
		r->flags |= 1u << (1 + fz_below(&p->r, 31));
		c->must_fail = true;
		c->why = "an unknown resize flag";
	}
	MUTATE_FIELD(p, c, r, reserved0);
	MUTATE_FIELD(p, c, r, reserved1);
	MUTATE_FIELD(p, c, r, reserved);
}

/*
 * ARENA_SET_TIER: a lower tier for an arena, mostly one of ours below
 * another of ours, or taken away.  Never for fz-shared, as upper or
 * lower: the arenas of a tier are then ours alone (nobody else names
 * them), so this process is the only one that can be the tier's agent
 * or PROMOTE into it, one call at a time, and no other process's
 * picture changes with it.
 */
static void build_set_tier(struct proc *p, struct call *c)
{
	struct kvarena_arena_tier *t = slot(p, 0);
	unsigned int i;

	memset(t, 0, sizeof(*t));
	i = fz_below(&p->r, MAX_ARENAS);
	if (p->arenas[i][0] && !fz_one_in(&p->r, 4))
		memcpy(t->name, p->arenas[i], KVARENA_NAME_LEN);
	else
		pick_name(p, t->name);
	switch (fz_below(&p->r, 8)) {
	case 0: case 1:
		break;		/* empty: the tier goes */
	case 2:
		pick_name(p, t->lower);
		break;
	case 3:
		memcpy(t->lower, t->name, KVARENA_NAME_LEN);
		c->must_fail = true;
		c->why = "an arena as its own lower tier";
		break;
	default:
		i = fz_below(&p->r, MAX_ARENAS);
		if (p->arenas[i][0])
			memcpy(t->lower, p->arenas[i], KVARENA_NAME_LEN);
		else
			pick_name(p, t->lower);
		break;
	}
	if (!strncmp(t->name, shared_name, KVARENA_NAME_LEN))
		t->name[0] = 'x';
	if (!strncmp(t->lower, shared_name, KVARENA_NAME_LEN))
		t->lower[0] = 'x';
	/* An empty name with bytes after its NUL: no promise either way. */
	if (!t->lower[0] && fz_one_in(&p->r, 32))
		t->lower[1 + fz_below(&p->r, KVARENA_NAME_LEN - 1)] = 'j';
	t->free_target = fz_one_in(&p->r, 8) ? (uint32_t)fz_next(&p->r) :
			 fz_below(&p->r, 17);
	if (fz_one_in(&p->r, 16)) {
		t->flags = 1u << fz_below(&p->r, 32);
		c->must_fail = true;
		c->why = "a set_tier flag";
	}
	MUTATE_FIELD(p, c, t, reserved);
}

/*
 * For a take: mostly a file of ours attached to the lower tier of @kf's
 * arena (STAT names it), else any file of ours, or no kvarena file.
 */
static int32_t pick_lower_fd(struct proc *p, const struct kfile *kf)
{
	struct kvarena_stat *s = slot(p, 2);
	unsigned int i, k;

	switch (fz_below(&p->r, 8)) {
	case 0: return -1;
	case 1: return p->fdpool[fz_below(&p->r, p->nfdpool)];
	case 2: return pick_file(p)->fd;
	}
	if (!kf->attached || fz_stat(kf->fd, kf->arena, s) ||
	    s->tier != KVARENA_STAT_TIER_LOWER)
		return pick_file(p)->fd;
	k = fz_below(&p->r, NFD);
	for (i = 0; i < NFD; i++) {
		const struct kfile *f = &p->f[(k + i) % NFD];

		if (f->attached && f->fd >= 0 &&
		    !strncmp(f->arena, s->tier_name, KVARENA_NAME_LEN))
			return f->fd;
	}
	return pick_file(p)->fd;
}

/*
 * TIER: a take that waits for nothing (what it hands out goes back at
 * once: account_tier()), or a DONE of jobs never taken - none is taken
 * between two calls, and a forged lower handle names no job anyway -
 * which must fail and give nothing back.
 */
static void build_tier(struct proc *p, struct call *c)
{
	struct kvarena_tier *t = slot(p, 0);
	struct kvarena_tier_job *j = (void *)p->hbuf;
	unsigned int i;
	int kind, idx;

	memset(t, 0, sizeof(*t));
	c->kf = attached_file(p);
	t->count = pick_count(p, 8);
	if (fz_one_in(&p->r, 3)) {
		t->flags = KVARENA_TIER_DONE;
		for (i = 0; i < t->count && i < 64; i++) {
			j[i].upper = pick_handle(p, c->kf, &kind, &idx);
			/* Generations never reach 2^31 here. */
			j[i].lower = KVARENA_HANDLE(0x80000000u |
						    (uint32_t)fz_next(&p->r),
						    fz_below(&p->r, NR_SHARED));
			j[i].op = fz_one_in(&p->r, 8) ? (uint32_t)fz_next(&p->r) :
				  1 + fz_below(&p->r, 2);
			j[i].result = fz_one_in(&p->r, 4) ?
				      (int32_t)fz_next(&p->r) : -EIO;
		}
		c->must_fail = true;
		c->why = "a DONE of jobs never taken";
		/* "Must be 0 with KVARENA_TIER_DONE": fails all the same. */
		if (fz_one_in(&p->r, 8))
			t->timeout_ms = 1 + fz_below(&p->r, 20);
		if (fz_one_in(&p->r, 8))
			t->lower_fd = c->kf->fd;
	} else {
		t->lower_fd = pick_lower_fd(p, c->kf);
	}
	c->count = t->count;
	/* A take writes nothing when it hands out nothing: no promise. */
	c->handles = pick_ptr(p, j, t->count <= 64 ? t->count * sizeof(*j) :
			      sizeof(*j), &kind);
	c->valid_handles_ptr = kind == PTR_GOOD;
	t->jobs = (uintptr_t)c->handles;
	/* Outputs are ignored on input. */
	t->nr_done = (uint32_t)fz_next(&p->r);
	if (fz_one_in(&p->r, 16)) {
		t->flags |= 1u << (1 + fz_below(&p->r, 31));
		c->must_fail = true;
		c->why = "an unknown tier flag";
	}
	MUTATE_FIELD(p, c, t, reserved0);
	MUTATE_FIELD(p, c, t, reserved);
}

/*
 * PROMOTE: keys from the space PUBLISH and LOOKUP share, brought up from
 * the lower tier of the file's arena, if it has one, within a short wait:
 * nobody can be its agent meanwhile (build_set_tier()).
 */
static void build_promote(struct proc *p, struct call *c)
{
	struct kvarena_promote *x = slot(p, 0);
	struct kvarena_prefix_entry *e = (void *)p->hbuf;
	unsigned int n, i;
	int kind;

	memset(x, 0, sizeof(*x));
	c->kf = attached_file(p);
	n = fz_one_in(&p->r, 16) ? pick_count(p, 8) : 1 + fz_below(&p->r, 8);
	for (i = 0; i < n && i < 64; i++) {
		memset(&e[i], 0, sizeof(e[i]));
		pick_key(p, e[i].key, c);
		/* Outputs are ignored on input. */
		e[i].handle = fz_next(&p->r);
		e[i].flags = (uint32_t)fz_next(&p->r);
		if (fz_one_in(&p->r, 32)) {
			e[i].reserved = 1u << fz_below(&p->r, 32);
			c->must_fail = true;
			c->why = "an entry's reserved field";
		}
	}
	x->count = n;
	c->count = n;
	x->entries = (uintptr_t)pick_ptr(p, e, n <= 64 ? n * sizeof(*e) :
					 sizeof(*e), &kind);
	c->handles = (uint64_t *)(uintptr_t)x->entries;
	/* Only the run brought up is written back, where it was read. */
	c->valid_handles_ptr = kind == PTR_GOOD;
	if (kind != PTR_GOOD) {
		c->must_fail = true;
		c->why = "entries that cannot be read";
	}
	switch (fz_below(&p->r, 16)) {
	case 0:
		c->must_fail = true;
		c->why = "a wait of 0 ms";
		break;
	case 1:
		x->timeout_ms = KVARENA_PROMOTE_MAX_MS + 1 +
				fz_below(&p->r, 0xffffffffu - KVARENA_PROMOTE_MAX_MS);
		c->must_fail = true;
		c->why = "a wait past KVARENA_PROMOTE_MAX_MS";
		break;
	default:
		x->timeout_ms = 1 + fz_below(&p->r, 20);
		break;
	}
	/* Outputs are ignored on input. */
	x->nr_done = (uint32_t)fz_next(&p->r);
	if (fz_one_in(&p->r, 16)) {
		x->flags = 1u << fz_below(&p->r, 32);
		c->must_fail = true;
		c->why = "a promote flag";
	}
	MUTATE_FIELD(p, c, x, reserved);
}

/*
 * GANG_CREATE of gang fz<idx>-g<k>: mostly over 2-4 arenas of our own
 * names that fit together - host memory, the same flags (as we made
 * them), frame size and count, every frame backed, none out, no client,
 * tier, shrink or gang, as STAT and our own picture say - which must
 * work, or with one thing wrong, which must fail as the header says;
 * else over any of our names, with no promise.  Never over fz-shared
 * where it could fit (it must stay the one arena every process shares).
 */
static void build_gang_create(struct proc *p, struct call *c)
{
	struct kvarena_gang_create *g = slot(p, 0);
	char (*names)[KVARENA_NAME_LEN] = slot(p, 1);
	unsigned int s, n = 0, i, k, ng = 0, other = NR_NAMES;
	unsigned int group[NR_NAMES];
	uint64_t fsz[NR_NAMES];
	uint32_t nfr[NR_NAMES];
	bool ok[NR_NAMES], seen[NR_NAMES], good = false, argbad, late = false;
	struct kvarena_stat st;
	char nm[KVARENA_NAME_LEN];
	const char *why0;

	memset(g, 0, sizeof(*g));
	memset(names, 0, KVARENA_GANG_MAX * KVARENA_NAME_LEN);
	c->gang = (int)fz_below(&p->r, MAX_GANGS);
	fz_name(g->name, "fz%d-g%d", p->idx, c->gang);
	g->members = (uintptr_t)names;
	for (s = 0; s < NR_NAMES; s++) {
		own_name(p, s, nm);
		seen[s] = p->own_known[s] && !fz_stat(p->f[NFD - 1].fd, nm, &st);
		ok[s] = seen[s] && !gang_member(p, nm) &&
			st.mem_kind == KVARENA_MEM_HOST && !st.nr_clients &&
			!st.nr_absent && !st.nr_shrinking && !st.tier &&
			((p->own_flags[s] & KVARENA_CREATE_NO_BACKING) ||
			 st.nr_backed == st.nr_frames);
		fsz[s] = st.frame_size;
		nfr[s] = st.nr_frames;
	}
	/* A group of two or more that fit together, from a random first. */
	k = fz_below(&p->r, NR_NAMES);
	for (i = 0; i < NR_NAMES && ng < 2; i++) {
		unsigned int a = (k + i) % NR_NAMES, b;

		ng = 0;
		if (!ok[a])
			continue;
		for (b = 0; b < NR_NAMES; b++)
			if (ok[b] && fsz[b] == fsz[a] && nfr[b] == nfr[a] &&
			    p->own_flags[b] == p->own_flags[a])
				group[ng++] = b;
	}
	if (ng >= 2) {
		/* In a random order: member 0 is whichever comes first. */
		for (i = ng - 1; i > 0; i--) {
			unsigned int j = fz_below(&p->r, i + 1), t = group[i];

			group[i] = group[j];
			group[j] = t;
		}
		n = 2 + fz_below(&p->r, (ng < 4 ? ng : 4) - 1);
		for (i = 0; i < n; i++)
			own_name(p, group[i], names[i]);
		/*
		 * An own name that does not fit with them, if there is one,
		 * by what no other process can change before the call: its
		 * frame size or flags (as we made it).  Clients, absent
		 * frames, a shrink or the frame count (a resize) may change
		 * in between, and then it fits.
		 */
		for (s = 0; s < NR_NAMES; s++)
			if (seen[s] && (fsz[s] != fsz[group[0]] ||
					p->own_flags[s] != p->own_flags[group[0]]))
				other = s;
		good = p->admin && !p->gang[c->gang].alive;
	} else {
		n = 2 + fz_below(&p->r, 3);
		for (i = 0; i < n; i++) {
			pick_name(p, names[i]);
			if (!strncmp(names[i], shared_name, KVARENA_NAME_LEN))
				names[i][0] = 'x';
		}
	}
	g->nr_members = n;
	c->want = good ? E(0) | E(ENOMEM) : 0;
	c->want_why = "members that fit";
	if (ng >= 2 && fz_one_in(&p->r, 3)) {
		c->must_fail = true;
		switch (fz_below(&p->r, 8)) {
		case 0:
			memcpy(names[n - 1], names[0], KVARENA_NAME_LEN);
			c->why = "a member twice";
			c->want = E(EINVAL);
			break;
		case 1:
			fz_name(names[1 + fz_below(&p->r, n - 1)], "fz%d-x%u",
				p->idx, fz_below(&p->r, 8));
			c->why = "a member no arena is";
			c->want = E(ENOENT);
			break;
		case 2:
			memcpy(names[fz_below(&p->r, n)], g->name,
			       KVARENA_NAME_LEN);
			c->why = "the gang among its members";
			c->want = E(EINVAL);
			break;
		case 3:
			g->nr_members = fz_one_in(&p->r, 2) ? fz_below(&p->r, 2) :
					KVARENA_GANG_MAX + 1 + fz_below(&p->r, 100);
			c->why = "a member count out of range";
			c->want = E(EINVAL);
			break;
		case 4:
			/* After member 0, whose kind and size it is checked by. */
			if (other == NR_NAMES) {
				c->must_fail = false;
				break;
			}
			own_name(p, other, names[1 + fz_below(&p->r, n - 1)]);
			c->why = "a member that does not fit";
			late = true;
			/* Gone, in use, or of another kind or size. */
			c->want = E(ENOENT) | E(EBUSY) | E(EINVAL) |
				  E(EOPNOTSUPP);
			break;
		case 5:
			/* Clients it has, or another size than member 0's. */
			if (nfr[group[0]] == NR_SHARED) {
				c->must_fail = false;
				break;
			}
			fz_name(names[1 + fz_below(&p->r, n - 1)], "%s",
				shared_name);
			c->why = "fz-shared among the members";
			late = true;
			c->want = E(EBUSY) | E(EINVAL);
			break;
		case 6:
			g->members = 0;
			c->why = "no member names";
			c->want = E(EINVAL);
			break;
		default:
			g->members = (uintptr_t)p->hole;
			c->why = "member names that cannot be read";
			c->want = E(EFAULT);
			break;
		}
		/*
		 * Names are checked, then looked up, then the gang's name,
		 * then each member in turn: a gang of that name there already
		 * comes before a member that does not fit.
		 */
		if (late)
			c->want |= E(ENOMEM) |
				   (p->gang[c->gang].alive ? E(EEXIST) : 0);
		if (c->must_fail)
			c->want_why = c->why;
		if (!p->admin)
			c->want = 0;
	}
	why0 = c->why;
	if (fz_one_in(&p->r, 16)) {
		g->flags = 1u << fz_below(&p->r, 32);
		c->must_fail = true;
		c->why = "a gang_create flag";
	}
	MUTATE_FIELD(p, c, g, reserved);
	argbad = c->why != why0;
	if (argbad)
		c->want = p->admin ? E(EINVAL) : 0;
}

/*
 * GANG_TOKEN: mostly of a client of a gang of ours, which must work and
 * give the same token every time; of another arena's client it is
 * -EOPNOTSUPP, of a rank -EPERM (one_call()).  RANKS_FATAL one time in
 * two: the last call's flags hold (reopen() counts on them).
 */
static void build_gang_token(struct proc *p, struct call *c)
{
	struct kvarena_gang_token *t = slot(p, 0);
	struct kfile *f = fz_one_in(&p->r, 4) ? NULL : pick_gang_client(p);
	const char *why0 = c->why;

	memset(t, 0, sizeof(*t));
	c->kf = f ? f : attached_file(p);
	t->flags = fz_one_in(&p->r, 2) ? KVARENA_GANG_RANKS_FATAL : 0;
	/* Outputs are ignored on input. */
	t->token = fz_next(&p->r);
	t->nr_members = (uint32_t)fz_next(&p->r);
	if (fz_one_in(&p->r, 16)) {
		t->flags |= 1u << (1 + fz_below(&p->r, 31));
		c->must_fail = true;
		c->why = "an unknown gang_token flag";
	}
	MUTATE_FIELD(p, c, t, reserved0);
	MUTATE_FIELD(p, c, t, reserved1);
	MUTATE_FIELD(p, c, t, reserved);
	f = c->kf;
	if (!f->attached || f->evicted || f->rank)
		return;
	if (c->why != why0) {
		c->want = E(EINVAL);
		c->want_why = "a reserved field or flag";
	} else if (gang_client(p, f)) {
		c->want = E(0);
		c->want_why = "a client of a gang";
	} else {
		c->want = E(EOPNOTSUPP);
		c->want_why = "a client of an arena that is no gang";
	}
}

/*
 * JOIN: mostly a file that is nothing yet joins a client of a gang of
 * ours (whose token it takes first if it has none, as an engine would
 * hand it out) as one of its ranks, which must work; or with a wrong
 * token, client id or rank, or a client gone (-ENOENT, all alike), a
 * name that is no gang (-EINVAL), a file that is something already
 * (-EBUSY); or a guess, with no client of ours to join.
 */
static void build_join(struct proc *p, struct call *c)
{
	struct kvarena_join *j = slot(p, 0);
	struct kfile *l = pick_gang_client(p);
	struct gang *g = l ? gang_of(p, l) : NULL;
	const char *bad = NULL, *why0 = c->why;
	bool not_gang = false;
	unsigned int i;

	memset(j, 0, sizeof(*j));
	c->kf = fz_one_in(&p->r, 6) ? pick_file(p) : free_file(p);
	c->leader = -1;
	fz_name(j->label, "fz%dr", p->idx);
	if (l && !l->token) {
		struct kvarena_gang_token t = {
			.flags = fz_one_in(&p->r, 2) ? KVARENA_GANG_RANKS_FATAL : 0 };
		int ret = fz_ioctl(l->fd, KVARENA_IOC_GANG_TOKEN, &t);

		if (ret || !t.token || t.nr_members != g->n) {
			gfail(p, "GANG_TOKEN of client %u of %s: %d, token "
			      "0x%llx, %u members of %u", l->client_id, g->name,
			      ret, (unsigned long long)t.token, t.nr_members,
			      g->n);
			l = NULL;
		} else {
			l->token = t.token;
			l->ranks_fatal = t.flags & KVARENA_GANG_RANKS_FATAL;
			p->gs.tokens++;
		}
	}
	if (l) {
		memcpy(j->name, g->name, KVARENA_NAME_LEN);
		j->client_id = l->client_id;
		j->token = l->token;
		j->rank = fz_below(&p->r, g->n);
		c->leader = (int)(l - p->f);
		switch (fz_below(&p->r, 12)) {
		case 0:
			j->token ^= 1ull << fz_below(&p->r, 64);
			bad = "a wrong token";
			break;
		case 1:
			j->client_id ^= 1 + fz_below(&p->r, 7);
			bad = "another client id";
			break;
		case 2:
			if (g->n == KVARENA_GANG_MAX)
				break;
			j->rank = g->n + fz_below(&p->r, KVARENA_GANG_MAX - g->n);
			bad = "a rank past the gang's members";
			break;
		case 3:
			for (i = 0; i < 4 && i < p->ngone; i++) {
				const struct gone_client *o = &p->gone[i];

				if (o->gang == l->gang && o->token &&
				    o->gang_serial == l->gang_serial) {
					j->client_id = o->id;
					j->token = o->token;
					bad = "a client gone";
					break;
				}
			}
			break;
		case 4:
			memcpy(j->name, g->mname[fz_below(&p->r, g->n)],
			       KVARENA_NAME_LEN);
			bad = "a member's name, no gang's";
			not_gang = true;
			break;
		case 5:
			fz_name(j->name, "%s", shared_name);
			bad = "fz-shared, no gang";
			not_gang = true;
			break;
		}
	} else {
		pick_name(p, j->name);
		j->client_id = fz_below(&p->r, 64);
		j->token = fz_next(&p->r);
		j->rank = fz_below(&p->r, 4);
		bad = "a guessed token";
	}
	if (bad) {
		c->must_fail = true;
		c->why = bad;
	}
	if (fz_one_in(&p->r, 16)) {
		j->rank = KVARENA_GANG_MAX + fz_below(&p->r, 1000);
		c->must_fail = true;
		c->why = "a rank no gang has";
	}
	if (fz_one_in(&p->r, 16)) {
		memset(j->label, 'l', KVARENA_LABEL_LEN);
		c->must_fail = true;
		c->why = "a label without a NUL";
	}
	/* Outputs are ignored on input. */
	j->mem_kind = (uint32_t)fz_next(&p->r);
	j->frame_size = fz_next(&p->r);
	j->nr_frames = (uint32_t)fz_next(&p->r);
	j->mem_dev = (uint32_t)fz_next(&p->r);
	j->mem_uuid[fz_below(&p->r, 16)] = 1;
	memset(j->member, 'm', KVARENA_NAME_LEN);
	MUTATE_FIELD(p, c, j, flags);
	MUTATE_FIELD(p, c, j, reserved);

	/* What it must give (read as built, on a writable file). */
	if ((c->why != why0 && c->why != bad) || !name_ok(j->name)) {
		c->want = E(EINVAL);
		c->want_why = "a bad rank, label, flag or reserved field";
	} else if (c->kf->attached || c->kf->evicted || c->kf->rank) {
		c->want = E(EBUSY);
		c->want_why = "a file that is a client or a rank already";
	} else if (!l) {
		return;
	} else if (not_gang) {
		c->want = E(EINVAL);
		c->want_why = "a name that is no gang";
	} else if (bad) {
		c->want = E(ENOENT) | (g->open ? 0 : E(EACCES));
		c->want_why = "no such client, token or rank";
	} else {
		c->want = E(0) | E(ENOMEM) | (g->open ? 0 : E(EACCES));
		c->want_why = "its client's id, token and a rank of the gang";
	}
}

/* ---- one call ------------------------------------------------------------ */

static int pick_cmd(struct proc *p)
{
	unsigned int total = 0, i, x;

	for (i = 0; i < NCMDS; i++)
		total += cmds[i].weight;
	x = fz_below(&p->r, total);
	for (i = 0; i < NCMDS; i++) {
		if (x < cmds[i].weight)
			return i;
		x -= cmds[i].weight;
	}
	return 0;
}

static bool is_known(uint32_t cmd)
{
	unsigned int i;

	for (i = 0; i < NCMDS; i++)
		if (cmds[i].cmd == cmd)
			return true;
	return false;
}

/* A command number no command has: another size, direction, type or nr. */
static uint32_t break_cmd(struct proc *p, uint32_t cmd)
{
	switch (fz_below(&p->r, 5)) {
	case 0:
		return _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd),
			    (_IOC_SIZE(cmd) + 8 * (1 + fz_below(&p->r, 8))) &
			    _IOC_SIZEMASK);
	case 1:
		return _IOC(fz_below(&p->r, 3), _IOC_TYPE(cmd), _IOC_NR(cmd),
			    _IOC_SIZE(cmd));
	case 2:
		return _IOC(_IOC_DIR(cmd), 'K' + 1 + fz_below(&p->r, 8),
			    _IOC_NR(cmd), _IOC_SIZE(cmd));
	case 3:
		return _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd),
			    0x0c + fz_below(&p->r, 0x30), _IOC_SIZE(cmd));
	default:
		return (uint32_t)fz_next(&p->r);
	}
}

static uint32_t unknown_cmd(struct proc *p, uint32_t cmd)
{
	uint32_t n;

	do
		n = break_cmd(p, cmd);
	while (is_known(n));
	return n;
}

static int run_call(struct proc *p, struct call *c, int fd)
{
	int ret;

	if (c->uring) {
		p->urings++;
		ret = fz_uring(&p->ring, fd, c->cmd, c->arg, c->uring_reserved);
	} else {
		p->ioctls++;
		ret = fz_ioctl(fd, c->cmd, c->arg);
	}
	p->calls++;
	return ret;
}

static void stale_add(struct proc *p, const struct kfile *f, uint64_t h)
{
	p->stale_tag[p->nstale % POOL] = f->tag;
	p->stale[p->nstale++ % POOL] = h;
}

/*
 * Which arena a file is attached to, as far as handles go: 0 for the
 * shared one (never destroyed while the fuzzer runs), else one of our own
 * names and how many times we made it.  0xffffffff: none we know.
 */
static uint32_t arena_tag(struct proc *p, const char *name)
{
	char own[KVARENA_NAME_LEN];
	unsigned int s;

	if (!strncmp(name, shared_name, KVARENA_NAME_LEN))
		return 0;
	/* A gang of ours: its slot and which one it is there. */
	for (s = 0; s < MAX_GANGS; s++)
		if (p->gang[s].alive &&
		    !strncmp(name, p->gang[s].name, KVARENA_NAME_LEN))
			return 0x40000000u | s << 16 |
			       (p->gang[s].serial & 0xffff);
	for (s = 0; s < 8; s++) {
		fz_name(own, "fz%d-%u", p->idx, s);
		if (!strncmp(name, own, KVARENA_NAME_LEN))
			return 1 + s + 8 * p->incarnation[s];
	}
	return 0xffffffffu;
}

static void held_remove(struct kfile *f, uint64_t h)
{
	unsigned int i;

	for (i = 0; i < f->n; i++) {
		if (f->held[i] == h) {
			f->held[i] = f->held[--f->n];
			return;
		}
	}
}

static void publish_foreign(struct proc *p, struct kfile *f)
{
	if (f->n && f->tag == 0)
		shm->foreign[p->idx][fz_below(&p->r, POOL)] =
			f->held[fz_below(&p->r, f->n)];
}

/* Our client @e named is gone: its frames went back to the arena. */
static void account_evict(struct proc *p, const struct call *c,
			  const struct kvarena_evict *e)
{
	unsigned int i, j;

	for (i = 0; i < NFD; i++) {
		struct kfile *f = &p->f[i];

		if (!f->attached || f->client_id != e->client_id ||
		    strncmp(f->arena, e->name, KVARENA_NAME_LEN))
			continue;
		if (!f->desync && e->nr_frames != f->n)
			fail(p, c, "EVICT returned %u frames, the client held %u",
			     e->nr_frames, f->n);
		for (j = 0; j < f->n; j++)
			stale_add(p, f, f->held[j]);
		f->n = 0;
		f->attached = false;
		f->evicted = true;
		/* Its ranks lose it; with nobody else there the gang is idle. */
		if (gang_of(p, f)) {
			gang_client_gone(p, f);
			gang_check_gone(p, f->gang - 1, "EVICT");
		}
		return;
	}
	fail(p, c, "EVICT of client %u of %.32s, none of ours", e->client_id,
	     e->name);
}

/*
 * A STAT is taken under the arena's lock: its counts add up.  The struct
 * of before KVARENA_FEAT_RESIZE is written no further than its size.
 */
static void check_stat(struct proc *p, const struct call *c,
		       const struct kvarena_stat *s)
{
	static const char no_name[KVARENA_NAME_LEN];
	const uint8_t *tail = (const uint8_t *)s + KVARENA_STAT_SIZE_V1;
	unsigned int i;

	if ((uint64_t)s->nr_free + s->nr_cached + s->nr_held != s->nr_frames)
		fail(p, c, "%.32s: free %u + cached %u + held %u != %u frames",
		     s->name, s->nr_free, s->nr_cached, s->nr_held,
		     s->nr_frames);
	if (c->cmd == KVARENA_IOC_STAT_V1) {
		for (i = 0; i < STAT_V1_TAIL; i++) {
			if (tail[i] != 0xa5) {
				fail(p, c, "wrote byte %u past its %u bytes",
				     i, KVARENA_STAT_SIZE_V1);
				return;
			}
		}
		return;
	}
	if ((uint64_t)s->nr_frames + s->nr_absent != s->max_frames ||
	    s->max_frames > KVARENA_MAX_FRAMES ||
	    s->nr_shrinking >= s->nr_frames)
		fail(p, c, "%.32s: %u frames + %u absent, table %u, %u going",
		     s->name, s->nr_frames, s->nr_absent, s->max_frames,
		     s->nr_shrinking);
	/* "0 (and @tier_name empty) if neither", else the other arena. */
	if (s->tier > KVARENA_STAT_TIER_UPPER ||
	    (s->tier ? !s->tier_name[0] ||
		       !memchr(s->tier_name, 0, KVARENA_NAME_LEN) ||
		       !strncmp(s->tier_name, s->name, KVARENA_NAME_LEN) :
		       memcmp(s->tier_name, no_name, KVARENA_NAME_LEN)))
		fail(p, c, "%.32s: tier %u \"%.32s\"", s->name, s->tier,
		     s->tier_name);
	/* Nobody gives fz-shared a tier (build_set_tier()). */
	else if (s->tier && !strncmp(s->name, shared_name, KVARENA_NAME_LEN))
		fail(p, c, "%s: tier %u \"%.32s\"", shared_name, s->tier,
		     s->tier_name);
	/* A member's own table is idle while it is in a gang. */
	if (gang_member(p, s->name) &&
	    (s->nr_clients || s->nr_held || s->nr_reserved))
		fail(p, c, "%.32s, a member of a gang: clients %u held %u "
		     "reserved %u", s->name, s->nr_clients, s->nr_held,
		     s->nr_reserved);
	/*
	 * A gang with no client holds nothing, and takes no tier.  The
	 * clients are all of them to its owner and administrators only
	 * (@domain 0); another viewer - root over io_uring, where nobody is
	 * an administrator, of a gang a SET_POLICY gave another owner -
	 * counts its own domain's, beside the whole arena's held frames.
	 */
	if (gang_by_name(p, s->name) >= 0 &&
	    ((!s->domain && !s->nr_clients && (s->nr_held || s->nr_reserved)) ||
	     s->tier))
		fail(p, c, "gang %.32s: clients %u held %u reserved %u, tier %u (the viewer's domain %#llx)",
		     s->name, s->nr_clients, s->nr_held, s->nr_reserved,
		     s->tier, (unsigned long long)s->domain);
}

/*
 * Frames taken out later leave the size it is becoming as it is; only a
 * resize changes that, and an arena of ours is nobody else's to resize.
 */
static void check_resize(struct proc *p, const struct call *c,
			 const struct kvarena_arena_resize *r)
{
	uint32_t t = arena_tag(p, r->name);
	bool cancel = r->flags & KVARENA_RESIZE_CANCEL;

	if (r->out_shrinking >= r->out_frames ||
	    (uint64_t)r->out_frames + r->out_absent > KVARENA_MAX_FRAMES) {
		fail(p, c, "%.32s: %u frames, %u going, %u absent", r->name,
		     r->out_frames, r->out_shrinking, r->out_absent);
		return;
	}
	if (!t || t == 0xffffffffu)
		return;
	if (cancel ? r->out_shrinking != 0 :
		     r->out_frames - r->out_shrinking != r->nr_frames)
		fail(p, c, "%.32s: %s %u, now %u frames, %u going", r->name,
		     cancel ? "cancelled, size" : "resized to",
		     r->nr_frames, r->out_frames, r->out_shrinking);
}

/*
 * A take that succeeded: we copy nothing, so every job goes back at once
 * with -EIO - after, now and then, a DONE with one bad job, which must
 * give nothing back - or its file is closed with the jobs taken (an
 * agent killed mid-copy: they end undone).  Either way no copy is under
 * way between two calls.  A job's frames are held by the job, not by
 * the agent's client: its own count does not move.
 */
static void account_tier(struct proc *p, struct call *c,
			 const struct kvarena_tier *t)
{
	struct kvarena_tier_job *j = (void *)c->handles, keep;
	struct kvarena_tier done = { .jobs = (uintptr_t)c->handles,
				     .flags = KVARENA_TIER_DONE };
	uint32_t n = t->nr_done, i, k;
	int ret;

	/* A DONE that worked is failed already (must_fail). */
	if (t->flags & KVARENA_TIER_DONE)
		return;
	if (n > c->count) {
		fail(p, c, "TIER took %u of %u", n, c->count);
		return;
	}
	if (!n)
		return;
	for (i = 0; i < n; i++) {
		/* "@result: ... zero from a take." */
		if ((j[i].op != KVARENA_TIER_DEMOTE &&
		     j[i].op != KVARENA_TIER_PROMOTE) || j[i].result)
			fail(p, c, "TIER job %u of %u: op %u result %d", i, n,
			     j[i].op, j[i].result);
		j[i].result = -EIO;
	}
	if (p->admin && fz_one_in(&p->r, 8)) {
		reopen(p, c->kf);
		return;
	}
	done.count = n;
	if (fz_one_in(&p->r, 4)) {
		/* All or nothing: one bad job, and none goes back. */
		k = fz_below(&p->r, n);
		keep = j[k];
		switch (fz_below(&p->r, 3)) {
		case 0:
			j[k].result = 1 + fz_below(&p->r, 1000);
			break;
		case 1:
			j[k].op ^= KVARENA_TIER_DEMOTE | KVARENA_TIER_PROMOTE;
			break;
		default:
			if (n > 1)
				j[k] = j[(k + 1) % n];	/* a job twice */
			else
				j[k].lower ^= 1ull << 63;
			break;
		}
		ret = fz_ioctl(c->kf->fd, KVARENA_IOC_TIER, &done);
		if (!ret)
			fail(p, c, "TIER DONE of %u jobs, one bad, gave %u back",
			     n, done.nr_done);
		j[k] = keep;
	}
	done.nr_done = 0;
	ret = fz_ioctl(c->kf->fd, KVARENA_IOC_TIER, &done);
	if (ret || done.nr_done != n)
		fail(p, c, "TIER DONE of %u jobs just taken: %d, %u given back",
		     n, ret, done.nr_done);
}

/*
 * Own name @s was made (ARENA_CREATE): note its flags; one to make gangs
 * of is backed at once, all of it, from a memfd we keep (to read what
 * ranks write into it).
 */
static void own_made(struct proc *p, const struct call *c, int s,
		     const struct kvarena_arena_create *a)
{
	struct kvarena_set_backing b = { .nr_frames = a->nr_frames };
	int mfd, ret;

	p->own_known[s] = true;
	p->own_flags[s] = a->flags;
	p->own_touched[s] = a->flags & KVARENA_CREATE_ACCESS;
	if (p->own_memfd[s] >= 0)
		close(p->own_memfd[s]);
	p->own_memfd[s] = -1;
	if (!c->back)
		return;
	mfd = fz_memfd((size_t)a->nr_frames * a->frame_size);
	if (mfd < 0) {
		fail(p, c, "memfd of %u frames: %s", a->nr_frames,
		     strerror(errno));
		return;
	}
	memcpy(b.name, a->name, KVARENA_NAME_LEN);
	b.fd = mfd;
	ret = fz_ioctl(p->f[0].fd, KVARENA_IOC_ARENA_SET_BACKING, &b);
	if (ret) {
		fail(p, c, "SET_BACKING of all of %.32s, just made: %s",
		     a->name, strerror(-ret));
		close(mfd);
		return;
	}
	p->own_memfd[s] = mfd;
}

/*
 * A gang was made: note it, and check it as the header says it is - its
 * frames its members', its policy member 0's, no client, and each
 * member's own table idle, sysfs naming the gang in each member and the
 * members, in rank order, in the gang.
 */
static void gang_made(struct proc *p, const struct call *c,
		      const struct kvarena_gang_create *gc)
{
	const char (*names)[KVARENA_NAME_LEN] = (const void *)(uintptr_t)gc->members;
	struct gang *g = &p->gang[c->gang];
	struct kvarena_stat st, m0;
	char line[KVARENA_GANG_MAX * KVARENA_NAME_LEN + 16] = "", want[sizeof(line)] = "";
	unsigned int i;
	int ret;

	if (strncmp(gc->name, "fz", 2) || c->gang < 0) {
		fail(p, c, "GANG_CREATE of %.32s succeeded, unplanned", gc->name);
		return;
	}
	if (g->alive) {
		fail(p, c, "GANG_CREATE of %s, alive already, succeeded", g->name);
		return;
	}
	memset(g, 0, sizeof(*g));
	memcpy(g->name, gc->name, KVARENA_NAME_LEN);
	g->serial = ++p->gang_serial;
	g->n = gc->nr_members;
	g->alive = true;
	g->memfds = true;
	for (i = 0; i < g->n && i < KVARENA_GANG_MAX; i++) {
		memcpy(g->mname[i], names[i], KVARENA_NAME_LEN);
		g->member[i] = own_slot(p, names[i]);
		if (g->member[i] < 0 || p->own_memfd[g->member[i]] < 0)
			g->memfds = false;
		snprintf(want + strlen(want), sizeof(want) - strlen(want),
			 "%s%.32s", i ? " " : "", names[i]);
	}
	g->backed = g->member[0] >= 0 &&
		    !(p->own_flags[g->member[0]] & KVARENA_CREATE_NO_BACKING);
	g->open = g->member[0] >= 0 && !p->own_touched[g->member[0]];
	p->gs.made++;
	ret = fz_stat(p->f[NFD - 1].fd, g->name, &st);
	if (!ret)
		ret = fz_stat(p->f[NFD - 1].fd, g->mname[0], &m0);
	if (ret) {
		fail(p, c, "STAT of new gang %s or its member 0: %s", g->name,
		     strerror(-ret));
		return;
	}
	g->nr_frames = st.nr_frames;
	g->frame_size = st.frame_size;
	/* "policy ... starts as member 0's"; frames are member 0's. */
	if (st.nr_frames != m0.nr_frames || st.frame_size != m0.frame_size ||
	    st.mem_kind != m0.mem_kind || st.mode != m0.mode ||
	    st.owner_uid != m0.owner_uid || st.nr_clients || st.nr_held ||
	    st.nr_free + st.nr_cached != st.nr_frames)
		fail(p, c, "new gang %s: %u frames of %llu, kind %u, mode 0%o "
		     "owner %u, clients %u held %u free %u; member 0 %.32s: %u "
		     "frames of %llu, kind %u, mode 0%o owner %u", g->name,
		     st.nr_frames, (unsigned long long)st.frame_size,
		     st.mem_kind, st.mode, st.owner_uid, st.nr_clients,
		     st.nr_held, st.nr_free, g->mname[0], m0.nr_frames,
		     (unsigned long long)m0.frame_size, m0.mem_kind, m0.mode,
		     m0.owner_uid);
	sysfs_line(g->name, "members", line, sizeof(line));
	if (strcmp(line, want))
		fail(p, c, "new gang %s: sysfs members \"%s\", not \"%s\"",
		     g->name, line, want);
	for (i = 0; i < g->n; i++)
		member_check(p, g->mname[i], g->name);
}

/*
 * A file joined a client of ours: it is a rank now, and what JOIN said
 * of its member must be so.
 */
static void joined(struct proc *p, struct call *c, const struct kvarena_join *j)
{
	struct kfile *kf = c->kf, *l = c->leader >= 0 ? &p->f[c->leader] : NULL;
	struct gang *g = l ? gang_of(p, l) : NULL;
	static const uint8_t no_uuid[16];

	kf->rank = true;
	kf->leader = -1;
	if (!l || !g || !gang_client(p, l)) {
		fail(p, c, "JOIN succeeded with no client of ours to join");
		return;
	}
	kf->leader = c->leader;
	kf->leader_serial = l->serial;
	kf->gang = l->gang;
	kf->gang_serial = l->gang_serial;
	kf->rank_nr = j->rank;
	memcpy(kf->arena, g->name, KVARENA_NAME_LEN);
	p->gs.joins++;
	if (j->rank >= g->n || j->nr_frames != g->nr_frames ||
	    j->frame_size != g->frame_size || j->mem_kind != KVARENA_MEM_HOST ||
	    j->mem_dev || memcmp(j->mem_uuid, no_uuid, 16) ||
	    strncmp(j->member, g->mname[j->rank % KVARENA_GANG_MAX],
		    KVARENA_NAME_LEN))
		fail(p, c, "JOIN of %s as rank %u of %u: member \"%.32s\" "
		     "(want %.32s), %u frames of %llu, kind %u, dev %u",
		     g->name, j->rank, g->n, j->member,
		     g->mname[j->rank % KVARENA_GANG_MAX], j->nr_frames,
		     (unsigned long long)j->frame_size, j->mem_kind,
		     j->mem_dev);
}

/*
 * A rank's FRAME_FD gave a file: its client must live and hold the frame,
 * the file map the frame at its index; mapped, written if it may be, and
 * read back from the member's own memory (the memfd we backed it with) -
 * and from no other member's.
 */
static void rank_map(struct proc *p, const struct call *c,
		     const struct kvarena_frame_fd *ff)
{
	struct kfile *kf = c->kf, *l = leader_of(p, kf);
	struct gang *g = gang_of(p, kf);
	uint32_t idx = KVARENA_HANDLE_IDX(ff->handle), r;
	bool w = ff->access & KVARENA_ACCESS_WRITE;
	volatile uint64_t *m;
	uint64_t word, mem, mark = 0;

	if (ff->fd < 0)
		return;
	p->gs.rank_maps++;
	if (!l && kf->leader >= 0)
		fail(p, c, "a rank whose client is gone got a frames file");
	else if (l && !l->desync && !held_by(l, ff->handle))
		fail(p, c, "a rank got a frames file of 0x%llx, which its "
		     "client does not hold", (unsigned long long)ff->handle);
	if (g && (ff->size != g->frame_size ||
		  ff->offset != (uint64_t)idx * g->frame_size)) {
		fail(p, c, "a rank's frame %u: offset %llu size %llu", idx,
		     (unsigned long long)ff->offset,
		     (unsigned long long)ff->size);
		close(ff->fd);
		return;
	}
	m = mmap(NULL, ff->size, PROT_READ | (w ? PROT_WRITE : 0), MAP_SHARED,
		 ff->fd, ff->offset);
	close(ff->fd);
	if (m == MAP_FAILED) {
		fail(p, c, "mmap of a rank's frame %u (%s): %s", idx,
		     w ? "read-write" : "read-only", strerror(errno));
		return;
	}
	if (w) {
		mark = 0x52414e4b00000000ull | (++p->marks & 0xffffffffull);
		m[0] = mark;
	}
	word = m[0];
	munmap((void *)m, ff->size);
	if (!g || !g->memfds || !l)
		return;
	for (r = 0; r < g->n; r++) {
		int mfd = p->own_memfd[g->member[r]];

		if (pread(mfd, &mem, 8, (off_t)ff->offset) != 8) {
			fail(p, c, "pread of member %.32s: %s", g->mname[r],
			     strerror(errno));
			return;
		}
		if (r == kf->rank_nr && mem != word)
			fail(p, c, "rank %u of %s read 0x%016llx from frame %u, "
			     "its member %.32s holds 0x%016llx", kf->rank_nr,
			     g->name, (unsigned long long)word, idx,
			     g->mname[r], (unsigned long long)mem);
		if (r != kf->rank_nr && w && mem == mark)
			fail(p, c, "rank %u of %s wrote frame %u of member "
			     "%.32s (rank %u's)", kf->rank_nr, g->name, idx,
			     g->mname[r], r);
	}
	p->gs.contents++;
}

/* What a successful call changed, in the process's own picture. */
static void account(struct proc *p, struct call *c, int ret)
{
	const struct cmd_desc *d = &cmds[c->known];
	unsigned int i;

	if (ret)
		return;
	if (d->cmd == KVARENA_IOC_ATTACH) {
		const struct kvarena_attach *a = c->arg;

		int gi = gang_by_name(p, a->name);

		c->kf->attached = true;
		memcpy(c->kf->arena, a->name, KVARENA_NAME_LEN);
		c->kf->client_id = a->client_id;
		c->kf->tag = arena_tag(p, a->name);
		if (gi >= 0) {
			struct gang *g = &p->gang[gi];

			c->kf->gang = gi + 1;
			c->kf->gang_serial = g->serial;
			p->gs.attached++;
			/* The gang's frames are its members'. */
			if (a->nr_frames != g->nr_frames ||
			    a->frame_size != g->frame_size ||
			    a->mem_kind != KVARENA_MEM_HOST)
				fail(p, c, "ATTACH to gang %s: %u frames of %llu "
				     "bytes, kind %u; its members have %u of %llu",
				     g->name, a->nr_frames,
				     (unsigned long long)a->frame_size,
				     a->mem_kind, g->nr_frames,
				     (unsigned long long)g->frame_size);
		}
	} else if (d->cmd == KVARENA_IOC_ALLOC) {
		const struct kvarena_frames *f = c->arg;
		uint32_t n = f->nr_done;

		if (n > c->count || !c->valid_handles_ptr) {
			fail(p, c, "ALLOC took %u of %u, from %s", n, c->count,
			     c->valid_handles_ptr ? "a good buffer" :
						    "a bad buffer");
			return;
		}
		for (i = 0; i < n && c->kf->n < HELD; i++)
			memcpy(&c->kf->held[c->kf->n++],
			       (uint8_t *)c->handles + i * 8, 8);
		if (i < n) {
			/* Too many to remember: give the rest back now. */
			struct kvarena_frames fr = {
				.handles = (uintptr_t)c->handles + i * 8,
				.count = n - i };
			uint64_t h;

			if (fz_ioctl(c->kf->fd, KVARENA_IOC_FREE, &fr))
				fail(p, c, "FREE of fresh handles failed");
			for (; i < n; i++) {
				memcpy(&h, (uint8_t *)c->handles + i * 8, 8);
				stale_add(p, c->kf, h);
			}
		}
		publish_foreign(p, c->kf);
	} else if (d->cmd == KVARENA_IOC_FREE) {
		for (i = 0; i < c->count; i++) {
			uint64_t h;

			memcpy(&h, (uint8_t *)c->handles + i * 8, 8);
			held_remove(c->kf, h);
			stale_add(p, c->kf, h);
		}
	} else if (d->cmd == KVARENA_IOC_FRAME_FD) {
		const struct kvarena_frame_fd *ff = c->arg;

		if (c->kf->rank) {
			rank_map(p, c, ff);
		} else if (ff->fd >= 0) {
			/*
			 * Map it, touch it, and let it go: written only if
			 * it is ours to write (not published).
			 */
			bool w = ff->access & KVARENA_ACCESS_WRITE;
			volatile uint8_t *m = mmap(NULL, ff->size, PROT_READ |
						   (w ? PROT_WRITE : 0),
						   MAP_SHARED, ff->fd, ff->offset);

			if (m != MAP_FAILED) {
				if (w)
					m[0] = 1;
				else
					(void)m[0];
				munmap((void *)m, ff->size);
			}
			close(ff->fd);
		}
	} else if (d->cmd == KVARENA_IOC_SCRUB) {
		/* A take: the frames are ours to give back (or to leave). */
		const struct kvarena_scrub *sc = c->arg;
		struct kvarena_scrub done = {
			.handles = (uintptr_t)c->handles, .count = sc->nr_done,
			.flags = KVARENA_SCRUB_DONE };

		if (sc->nr_done > c->count) {
			fail(p, c, "SCRUB took %u of %u", sc->nr_done, c->count);
			return;
		}
		if (sc->nr_done && c->valid_handles_ptr &&
		    fz_one_in(&p->r, 2) &&
		    fz_ioctl(c->kf->fd, KVARENA_IOC_SCRUB, &done))
			fail(p, c, "SCRUB DONE of %u frames just taken failed",
			     sc->nr_done);
	} else if (d->cmd == KVARENA_IOC_LOOKUP) {
		/* New holds, on frames that keep their handles. */
		const struct kvarena_prefix *x = c->arg;
		const struct kvarena_prefix_entry *e = (const void *)c->handles;

		if (x->nr_done > c->count || !c->valid_handles_ptr) {
			fail(p, c, "LOOKUP found %u of %u", x->nr_done, c->count);
			return;
		}
		/*
		 * "@nr_lower: ... how many of the keys after the run found
		 * are, in order, in the arena's lower tier ...; otherwise 0"
		 * (it went in as 0 unless must_fail, reported already);
		 * fz-shared has no lower tier.
		 */
		if (!c->must_fail && (x->nr_lower > c->count - x->nr_done ||
		    (x->nr_lower && (!(x->flags & KVARENA_LOOKUP_LOWER) ||
				     c->kf->tag == 0))))
			fail(p, c, "LOOKUP found %u of %u, %u more below%s",
			     x->nr_done, c->count, x->nr_lower,
			     c->kf->tag ? "" : " fz-shared");
		for (i = 0; i < x->nr_done; i++) {
			struct kvarena_frames fr = {
				.handles = (uintptr_t)&e[i].handle, .count = 1 };

			if (e[i].flags & KVARENA_PREFIX_HELD)
				continue;
			if (c->kf->n < HELD) {
				c->kf->held[c->kf->n++] = e[i].handle;
			} else if (fz_ioctl(c->kf->fd, KVARENA_IOC_FREE, &fr)) {
				fail(p, c, "FREE of a looked-up frame failed");
			}
		}
	} else if (d->cmd == KVARENA_IOC_PROMOTE) {
		/*
		 * "published under the key and held by the caller, as a
		 * LOOKUP hit would be": new holds, each on a fresh frame.
		 */
		const struct kvarena_promote *x = c->arg;
		const struct kvarena_prefix_entry *e = (const void *)c->handles;

		if (x->nr_done > c->count ||
		    (x->nr_done && !c->valid_handles_ptr)) {
			fail(p, c, "PROMOTE brought %u of %u up", x->nr_done,
			     c->count);
			return;
		}
		for (i = 0; i < x->nr_done; i++) {
			struct kvarena_frames fr = {
				.handles = (uintptr_t)&e[i].handle, .count = 1 };

			if (c->kf->n < HELD) {
				c->kf->held[c->kf->n++] = e[i].handle;
			} else if (fz_ioctl(c->kf->fd, KVARENA_IOC_FREE, &fr)) {
				fail(p, c, "FREE of a promoted frame failed");
			}
		}
	} else if (d->cmd == KVARENA_IOC_TIER) {
		account_tier(p, c, c->arg);
	} else if (d->cmd == KVARENA_IOC_ARENA_CREATE) {
		const struct kvarena_arena_create *a = c->arg;
		int s = own_slot(p, a->name);

		if (s >= 0) {
			p->incarnation[s]++;
			own_made(p, c, s, a);
		}
		i = fz_below(&p->r, MAX_ARENAS);
		/* A name we forget now is destroyed at the end by pattern. */
		memcpy(p->arenas[i], a->name, KVARENA_NAME_LEN);
	} else if (d->cmd == KVARENA_IOC_EVENTS_FD) {
		const struct kvarena_events_fd *e = c->arg;
		ssize_t n;

		if (e->flags & KVARENA_EVENTS_NONBLOCK) {
			n = read(e->fd, slot(p, 3), SLOT);
			if (n < 0 && errno != EAGAIN)
				fail(p, c, "read of an events fd: %s",
				     strerror(errno));
		}
		close(e->fd);
	} else if (d->cmd == KVARENA_IOC_EVICT) {
		account_evict(p, c, c->arg);
	} else if (d->cmd == KVARENA_IOC_STAT || d->cmd == KVARENA_IOC_STAT_V1) {
		check_stat(p, c, c->arg);
	} else if (d->cmd == KVARENA_IOC_ARENA_RESIZE) {
		check_resize(p, c, c->arg);
	} else if (d->cmd == KVARENA_IOC_ARENA_DESTROY) {
		const struct kvarena_arena_destroy *a = c->arg;
		int s = own_slot(p, a->name), gi = gang_by_name(p, a->name);

		for (i = 0; i < MAX_ARENAS; i++)
			if (!memcmp(p->arenas[i], a->name, KVARENA_NAME_LEN))
				p->arenas[i][0] = 0;
		if (s >= 0) {
			p->own_known[s] = false;
			if (p->own_memfd[s] >= 0)
				close(p->own_memfd[s]);
			p->own_memfd[s] = -1;
		}
		if (gi >= 0) {
			struct gang *g = &p->gang[gi];

			/* "sets the members free again, as they were" */
			g->alive = false;
			p->gs.destroyed++;
			for (i = 0; i < g->n; i++)
				member_check(p, g->mname[i], NULL);
		}
	} else if (d->cmd == KVARENA_IOC_ARENA_SET_POLICY) {
		const struct kvarena_arena_policy *a = c->arg;
		int s = own_slot(p, a->name), gi = gang_by_name(p, a->name);

		/* Its mode is not 0666 as made any more, maybe. */
		if (s >= 0)
			p->own_touched[s] = true;
		if (gi >= 0)
			p->gang[gi].open = false;
	} else if (d->cmd == KVARENA_IOC_GANG_CREATE) {
		gang_made(p, c, c->arg);
	} else if (d->cmd == KVARENA_IOC_GANG_TOKEN) {
		const struct kvarena_gang_token *t = c->arg;
		struct gang *g = gang_of(p, c->kf);

		if (!gang_client(p, c->kf)) {
			fail(p, c, "GANG_TOKEN of a client of no gang of ours "
			     "gave token 0x%llx", (unsigned long long)t->token);
			return;
		}
		/* "the same for the client's whole life, never 0" */
		if (!t->token || t->nr_members != g->n ||
		    (c->kf->token && c->kf->token != t->token))
			fail(p, c, "GANG_TOKEN of client %u of %s: token 0x%llx "
			     "(0x%llx before), %u members of %u",
			     c->kf->client_id, g->name,
			     (unsigned long long)t->token,
			     (unsigned long long)c->kf->token, t->nr_members,
			     g->n);
		c->kf->token = t->token;
		c->kf->ranks_fatal = t->flags & KVARENA_GANG_RANKS_FATAL;
		p->gs.tokens++;
	} else if (d->cmd == KVARENA_IOC_JOIN) {
		joined(p, c, c->arg);
	}
}

/*
 * The errors a command may give past its table this time, by what the
 * file and the names are: a rank's client commands are -EPERM and its
 * FRAME_FD -ENOLINK once its client is gone; a gang client's FRAME_FD is
 * -EOPNOTSUPP (its ranks map); a gang takes no SET_BACKING or SET_TIER
 * (-EOPNOTSUPP).
 */
static unsigned __int128 gang_errs(struct proc *p, const struct call *c)
{
	const struct kvarena_arena_tier *t = slot(p, 0);
	const char *name = slot(p, 0);
	unsigned __int128 x = 0;

	if (c->kf->rank && (cmds[c->known].errs & E(ENOTCONN)))
		x |= E(EPERM) | (c->cmd == KVARENA_IOC_FRAME_FD ? E(ENOLINK) : 0);
	if (c->cmd == KVARENA_IOC_FRAME_FD && c->kf->attached && gang_of(p, c->kf))
		x |= E(EOPNOTSUPP);
	if (c->cmd == KVARENA_IOC_ARENA_SET_BACKING && gang_by_name(p, name) >= 0)
		x |= E(EOPNOTSUPP);
	if (c->cmd == KVARENA_IOC_ARENA_SET_TIER &&
	    (gang_by_name(p, t->name) >= 0 || gang_by_name(p, t->lower) >= 0))
		x |= E(EOPNOTSUPP);
	return x;
}

/*
 * "While ganged a member takes no ATTACH, SET_BACKING, RESIZE, SET_TIER
 * or DESTROY (-EBUSY); the gang takes no SET_BACKING, RESIZE or SET_TIER
 * (-EOPNOTSUPP)."  Before the call is accounted: as things were.
 */
static void gang_rules(struct proc *p, const struct call *c, int ret)
{
	const struct kvarena_arena_tier *t = c->arg;
	const char *name = c->arg;	/* each struct here begins with it */
	const char *cmd = cmds[c->known].name;

	if (ret)
		return;
	switch (c->cmd) {
	case KVARENA_IOC_ATTACH:
	case KVARENA_IOC_ARENA_DESTROY:
	case KVARENA_IOC_ARENA_SET_BACKING:
	case KVARENA_IOC_ARENA_RESIZE:
		if (gang_member(p, name))
			fail(p, c, "%s of %.32s, a member of a gang, succeeded",
			     cmd, name);
		if ((c->cmd == KVARENA_IOC_ARENA_SET_BACKING ||
		     c->cmd == KVARENA_IOC_ARENA_RESIZE) &&
		    gang_by_name(p, name) >= 0)
			fail(p, c, "%s of gang %.32s succeeded", cmd, name);
		break;
	case KVARENA_IOC_ARENA_SET_TIER:
		if (gang_member(p, t->name) || gang_by_name(p, t->name) >= 0 ||
		    (t->lower[0] && (gang_member(p, t->lower) ||
				     gang_by_name(p, t->lower) >= 0)))
			fail(p, c, "SET_TIER of %.32s over %.32s, a gang or a "
			     "member, succeeded", t->name, t->lower);
		break;
	}
}

/* Does the command's struct begin with an arena's name? */
static bool names_first(uint32_t cmd)
{
	switch (cmd) {
	case KVARENA_IOC_ARENA_CREATE: case KVARENA_IOC_ARENA_DESTROY:
	case KVARENA_IOC_ARENA_SET_BACKING: case KVARENA_IOC_ATTACH:
	case KVARENA_IOC_ARENA_RESIZE: case KVARENA_IOC_ARENA_SET_TIER:
	case KVARENA_IOC_ARENA_SET_POLICY: case KVARENA_IOC_GANG_CREATE:
	case KVARENA_IOC_JOIN: case KVARENA_IOC_EVICT:
	case KVARENA_IOC_SET_LIMITS:
		return true;
	}
	return false;
}

/* The first 8 bytes at @ptr if they are in a buffer of ours, else 0. */
static uint64_t first_word(const struct proc *p, const void *ptr)
{
	const uint8_t *b = ptr;
	uint64_t w = 0;

	if ((b >= p->buf && b + 8 <= p->buf + 4 * SLOT) ||
	    (b >= (const uint8_t *)p->hbuf &&
	     b + 8 <= (const uint8_t *)p->hbuf + KVARENA_MAX_BATCH * 8))
		memcpy(&w, b, 8);
	return w;
}

static void one_call(struct proc *p)
{
	struct call c = { .known = -1 };
	struct kfile *kf;
	struct trail *t;
	int ret, e, kind;

	c.known = pick_cmd(p);
	c.cmd = cmds[c.known].cmd;
	cmds[c.known].build(p, &c);
	kf = c.kf ? c.kf : pick_file(p);
	c.kf = kf;
	c.uring = !no_ring && fz_one_in(&p->r, 3);
	if (fz_one_in(&p->r, 16)) {
		c.cmd = unknown_cmd(p, c.cmd);
		c.known = -1;
	}
	if (c.known >= 0)
		c.extra = gang_errs(p, &c);
	/* Administrators' commands are -EPERM over io_uring. */
	if (c.uring && c.cmd == KVARENA_IOC_GANG_CREATE)
		c.want = 0;
	c.arg = pick_ptr(p, slot(p, 0), c.known >= 0 ?
			 cmds[c.known].size : 64, &kind);
	if (kind == PTR_BAD || kind == PTR_EDGE) {
		c.must_fail = true;
		c.why = "a bad pointer";
	} else if (kind == PTR_RO) {
		/* The module reads zeros there, not what we built. */
		c.must_fail = false;
	}
	/* The io_uring command area's own reserved field. */
	c.uring_reserved = c.uring && fz_one_in(&p->r, 32) ? fz_next(&p->r) | 1 : 0;

	ret = run_call(p, &c, kf->fd);
	e = ret < 0 ? -ret : 0;
	/*
	 * Zeros read from read-only memory are a valid GANG_TOKEN, taken
	 * (RANKS_FATAL off) before its answer could not be written back.
	 */
	if (kind == PTR_RO && c.known >= 0 && c.cmd == KVARENA_IOC_GANG_TOKEN &&
	    ret == -EFAULT && !c.uring_reserved && gang_client(p, kf))
		kf->ranks_fatal = false;
	t = &p->trail[p->ntrail++ % (sizeof(p->trail) / sizeof(p->trail[0]))];
	*t = (struct trail){ .call = p->calls, .known = c.known, .ret = ret,
			     .uring = c.uring, .good_arg = kind == PTR_GOOD,
			     .file = (int)(kf - p->f), .client_id = kf->client_id,
			     .count = c.count, .n_before = kf->n,
			     .n_after = kf->n,
			     .h0 = first_word(p, c.handles) };
	if (e < 140)
		p->by_errno[e]++;
	if (p->verbose)
		printf("# %d.%lu %s%s cmd 0x%08x fd %d%s%.32s -> %d\n", p->idx,
		       p->calls, c.uring ? "uring " : "", c.known >= 0 ?
		       cmds[c.known].name : "?", c.cmd, kf->fd,
		       kind == PTR_GOOD && names_first(c.cmd) ? " " : "",
		       kind == PTR_GOOD && names_first(c.cmd) ?
		       (const char *)c.arg : "", ret);

	if (c.uring_reserved) {
		if (ret != -EINVAL)
			fail(p, &c, "a non-zero reserved field in the SQE gave %d", ret);
		return;
	}
	if (c.known < 0) {
		if (ret != -ENOTTY)
			fail(p, &c, "unknown command gave %d, not -ENOTTY", ret);
		return;
	}
	if (ret > 0 || (ret < 0 && (e >= 128 ||
				    !((cmds[c.known].errs | c.extra) & E(e))))) {
		fail(p, &c, "returned %d (%s), not in its table", ret,
		     ret < 0 ? strerror(e) : "positive");
		return;
	}
	/* "A rank may STAT, CLIENTS, EVENTS_FD and FRAME_FD; every other
	 * client command is -EPERM." */
	if (kf->rank && (cmds[c.known].errs & E(ENOTCONN)) &&
	    c.cmd != KVARENA_IOC_FRAME_FD && ret != -EPERM) {
		fail(p, &c, "a rank's command gave %d, not -EPERM", ret);
		return;
	}
	if (c.want && kind == PTR_GOOD && !kf->rdonly && !(c.want & E(e))) {
		fail(p, &c, "gave %d (%s) for %s", ret,
		     ret ? strerror(e) : "success", c.want_why ? c.want_why :
		     c.why ? c.why : "what it was given");
		/* Learn what it did anyway, to stay in step. */
	}
	/* An evicted client's file answers client commands with ESHUTDOWN. */
	if ((cmds[c.known].errs & E(ENOTCONN)) &&
	    kf->evicted != (ret == -ESHUTDOWN)) {
		fail(p, &c, "%s client's file gave %d", kf->evicted ?
		     "an evicted" : "a", ret);
		return;
	}
	if (!ret && c.must_fail) {
		fail(p, &c, "succeeded with %s", c.why);
		/* Learn what it did anyway, to stay in step. */
	}
	if (kf->rdonly && !ret && c.cmd != KVARENA_IOC_VERSION &&
	    c.cmd != KVARENA_IOC_STAT && c.cmd != KVARENA_IOC_STAT_V1 &&
	    c.cmd != KVARENA_IOC_CLIENTS && c.cmd != KVARENA_IOC_EVENTS_FD)
		fail(p, &c, "a read-only file was let mutate");
	/* Read-only memory reads as zeros: not the struct we built. */
	if (kind == PTR_GOOD) {
		gang_rules(p, &c, ret);
		account(p, &c, ret);
	}
	t->n_after = kf->n;
	if (kind == PTR_GOOD && (c.cmd == KVARENA_IOC_ALLOC ||
				 c.cmd == KVARENA_IOC_FREE))
		t->done = ((const struct kvarena_frames *)c.arg)->nr_done;
	else if (kind == PTR_GOOD && c.cmd == KVARENA_IOC_LOOKUP)
		t->done = ((const struct kvarena_prefix *)c.arg)->nr_done;
	else if (kind == PTR_GOOD && c.cmd == KVARENA_IOC_PROMOTE)
		t->done = ((const struct kvarena_promote *)c.arg)->nr_done;
}

/* What the process's last calls were, oldest first. */
static void print_trail(const struct proc *p)
{
	unsigned int i, n = sizeof(p->trail) / sizeof(p->trail[0]);

	for (i = p->ntrail > n ? p->ntrail - n : 0; i < p->ntrail; i++) {
		const struct trail *t = &p->trail[i % n];

		printf("#   call %lu, file %d (client %u): %s%s%s -> %d, count %u, done %u, held %u -> %u, "
		       "first handle 0x%llx\n", t->call, t->file, t->client_id, t->uring ? "io_uring " : "",
		       t->known >= 0 ? cmds[t->known].name :
		       t->known == -2 ? "closed and reopened" : "unknown",
		       t->good_arg ? "" : " (arg not good)", t->ret, t->count,
		       t->done, t->n_before, t->n_after, (unsigned long long)t->h0);
	}
}

/* ---- checks against the module's own picture ---------------------------- */

static void check_held(struct proc *p)
{
	struct kvarena_client_info *rows = slot(p, 2);
	unsigned int i, j;

	for (i = 0; i < NFD; i++) {
		struct kfile *f = &p->f[i];
		struct kvarena_clients c = { .clients = (uintptr_t)rows,
					     .count = SLOT / sizeof(*rows) };
		bool found = false;

		if (!f->attached || f->fd < 0 || f->desync)
			continue;
		memcpy(c.name, f->arena, KVARENA_NAME_LEN);
		if (fz_ioctl(f->fd, KVARENA_IOC_CLIENTS, &c))
			continue;	/* a policy change may hide it */
		for (j = 0; j < c.nr_clients && j < c.count; j++) {
			if (rows[j].client_id != f->client_id)
				continue;
			found = true;
			if (rows[j].held != f->n) {
				p->failures++;
				printf("# sysfuzz: process %d after call %lu: "
				       "client %u of %s holds %u, its calls say %u\n",
				       p->idx, p->calls, f->client_id, f->arena,
				       rows[j].held, f->n);
				print_trail(p);
				/* Reported once; churn() puts it right. */
				f->desync = true;
				return;
			}
		}
		if (!found && c.nr_clients <= c.count) {
			p->failures++;
			printf("# sysfuzz: process %d: client %u missing from %s\n",
			       p->idx, f->client_id, f->arena);
		}
	}
}

/*
 * Client @id of gang @name is closed: wait (a little: a file's release
 * may trail its close) until the module has let it go, so that its
 * ranks' FRAME_FD is -ENOLINK from now on.
 */
static void wait_client_gone(struct proc *p, const char *name, uint32_t id)
{
	struct kvarena_client_info *rows = slot(p, 2);
	double t0 = fz_now();
	unsigned int j;

	for (;;) {
		struct kvarena_clients c = { .clients = (uintptr_t)rows,
					     .count = SLOT / sizeof(*rows) };
		bool there = false;
		int ret;

		memcpy(c.name, name, KVARENA_NAME_LEN);
		ret = fz_ioctl(p->f[NFD - 1].fd, KVARENA_IOC_CLIENTS, &c);
		if (ret) {
			gfail(p, "CLIENTS of gang %.32s: %s", name,
			      strerror(-ret));
			return;
		}
		for (j = 0; j < c.nr_clients && j < c.count; j++)
			there |= rows[j].client_id == id;
		if (!there)
			return;
		if (fz_now() - t0 > 5) {
			gfail(p, "client %u of gang %.32s still there 5 s after "
			      "its file was closed", id, name);
			return;
		}
		usleep(1000);
	}
}

/*
 * A rank of client @l (a file of ours, alive) was closed: with
 * RANKS_FATAL, "the release of any rank that joined this client ...
 * evicts this client" - its commands are -ESHUTDOWN from then on, its
 * frames back (the gang idle, if it was our last client there); without
 * it "a rank's release only takes that rank away".
 */
static void rank_closed(struct proc *p, struct kfile *l, bool fatal)
{
	struct kvarena_gang_token t = {
		.flags = fatal ? KVARENA_GANG_RANKS_FATAL : 0 };
	double t0 = fz_now();
	unsigned int j;
	int ret;

	p->gs.rank_closes++;
	/* The same flags as before: a probe that changes nothing. */
	while (!(ret = fz_ioctl(l->fd, KVARENA_IOC_GANG_TOKEN, &t)) && fatal &&
	       fz_now() - t0 < 5)
		usleep(1000);
	if (!fatal) {
		if (ret)
			gfail(p, "a rank of client %u of %.32s was closed, no "
			      "RANKS_FATAL: the client's GANG_TOKEN gave %d",
			      l->client_id, l->arena, ret);
		return;
	}
	if (ret != -ESHUTDOWN) {
		gfail(p, "a rank of client %u of %.32s was closed, RANKS_FATAL: "
		      "the client's GANG_TOKEN gave %d, not -ESHUTDOWN",
		      l->client_id, l->arena, ret);
		if (ret != -ESHUTDOWN)
			return;
	}
	p->gs.fatal++;
	gang_client_gone(p, l);
	for (j = 0; j < l->n; j++)
		stale_add(p, l, l->held[j]);
	l->n = 0;
	l->attached = false;
	l->evicted = true;
	gang_check_gone(p, l->gang - 1, "a RANKS_FATAL rank's close");
}

/* Close a file (its client is released: its handles go stale), reopen. */
static void reopen(struct proc *p, struct kfile *f)
{
	struct kfile *l = leader_of(p, f);
	bool client = gang_client(p, f), fatal = l && l->ranks_fatal;
	char gang[KVARENA_NAME_LEN];
	uint32_t id = f->client_id;
	int gi = f->gang - 1;
	unsigned int i;

	p->trail[p->ntrail++ % (sizeof(p->trail) / sizeof(p->trail[0]))] =
		(struct trail){ .call = p->calls, .known = -2,
				.file = (int)(f - p->f), .client_id = f->client_id,
				.n_before = f->n };
	for (i = 0; i < f->n; i++)
		stale_add(p, f, f->held[i]);
	if (client) {
		gang_client_gone(p, f);
		memcpy(gang, f->arena, KVARENA_NAME_LEN);
	}
	close(f->fd);
	memset(f, 0, sizeof(*f));
	f->fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	f->serial = ++p->file_serial;
	if (client) {
		p->gs.leader_closes++;
		wait_client_gone(p, gang, id);
		gang_check_gone(p, gi, "the close of its client");
	}
	if (l)
		rank_closed(p, l, fatal);
}

static void churn(struct proc *p)
{
	struct kfile *f = &p->f[1 + fz_below(&p->r, NFD - 1)];

	if (!p->admin || f->rdonly) {
		if (f->desync)
			f->attached = false;	/* no more checks */
		return;
	}
	reopen(p, f);
}

/*
 * Now and then, as engines come and go: a rank closed (with RANKS_FATAL
 * its client goes with it), or a gang client (its ranks lose it), so
 * that files come free for new clients and ranks.
 */
static void gang_churn(struct proc *p)
{
	unsigned int i, k = fz_below(&p->r, NFD), busy = 0;

	if (!p->admin)
		return;
	for (i = 0; i < NFD; i++) {
		struct kfile *f = &p->f[(k + i) % NFD];

		if (f->rdonly)
			continue;
		busy += f->attached || f->evicted || f->rank;
		if (!(f->rank || gang_client(p, f)))
			continue;
		if (fz_one_in(&p->r, f->rank ? 2 : 4)) {
			reopen(p, f);
			return;
		}
	}
	/* No file free for a gang's client or rank: one comes free. */
	if (busy == NFD - 1 && pick_gang(p) >= 0)
		reopen(p, &p->f[1 + fz_below(&p->r, NFD - 2)]);
}

/* As a serving process would: an evicted client's file is closed. */
static void reopen_evicted(struct proc *p)
{
	unsigned int i;

	for (i = 0; i < NFD; i++)
		if (p->f[i].evicted)
			reopen(p, &p->f[i]);
}

/* ---- a process ----------------------------------------------------------- */

static void setup_fdpool(struct proc *p)
{
	int sv[2], pp[2], m;

	p->fdpool[p->nfdpool++] = fz_memfd(NR_OWN * FS);	/* good */
	p->fdpool[p->nfdpool++] = fz_memfd(4 * FS);		/* short */
	m = memfd_create("unsealed", MFD_CLOEXEC);
	if (m >= 0 && ftruncate(m, NR_OWN * FS))
		m = -1;
	p->fdpool[p->nfdpool++] = m;
	m = fz_memfd(NR_OWN * FS);
	if (m >= 0) {		/* read-only */
		char path[64];

		snprintf(path, sizeof(path), "/proc/self/fd/%d", m);
		p->fdpool[p->nfdpool++] = open(path, O_RDONLY | O_CLOEXEC);
		close(m);
	}
	if (!pipe2(pp, O_CLOEXEC)) {
		p->fdpool[p->nfdpool++] = pp[0];
		p->fdpool[p->nfdpool++] = pp[1];
	}
	if (!socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		p->fdpool[p->nfdpool++] = sv[0];
	p->fdpool[p->nfdpool++] = eventfd(0, EFD_CLOEXEC);
	p->fdpool[p->nfdpool++] = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	p->fdpool[p->nfdpool++] = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (!no_ring)
		p->fdpool[p->nfdpool++] = p->ring.ring_fd;
}

static int proc_main(int idx, uint64_t seed, unsigned long calls,
		     bool drop, bool verbose)
{
	struct proc *p = calloc(1, sizeof(*p));
	struct kvarena_attach at = { 0 };
	unsigned long i;
	int fd;

	p->idx = idx;
	p->verbose = verbose;
	p->admin = !drop;
	for (i = 0; i < NR_NAMES; i++)
		p->own_memfd[i] = -1;
	fz_seed(&p->r, seed);
	/*
	 * The kernel writes as much as it is asked to: each buffer is
	 * followed by a page nobody can touch, so that a long write stops
	 * there and does not run into other memory of ours.
	 */
	p->buf = mmap(NULL, 4 * SLOT + 4096, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p->hbuf = mmap(NULL, KVARENA_MAX_BATCH * 8 + 4096,
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->buf == MAP_FAILED || p->hbuf == MAP_FAILED ||
	    mprotect(p->buf + 4 * SLOT, 4096, PROT_NONE) ||
	    mprotect((uint8_t *)p->hbuf + KVARENA_MAX_BATCH * 8, 4096,
		     PROT_NONE))
		return 100;
	p->ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p->edge = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->buf == MAP_FAILED || p->ro == MAP_FAILED || p->edge == MAP_FAILED ||
	    (!no_ring && io_uring_queue_init(8, &p->ring, 0)))
		return 100;
	/* Inaccessible, but kept: nothing else may be mapped there. */
	p->hole = p->edge + 4096;
	if (mprotect(p->hole, 4096, PROT_NONE))
		return 100;
	setup_fdpool(p);

	/* Files: unattached, attached to the shared arena, one read-only. */
	for (i = 0; i < NFD; i++) {
		struct kfile *f = &p->f[i];

		f->rdonly = i == NFD - 1;
		f->serial = ++p->file_serial;
		f->fd = open(KVARENA_DEVICE, (f->rdonly ? O_RDONLY : O_RDWR) |
			     O_CLOEXEC);
		if (f->fd < 0)
			return 101;
	}
	fz_name(at.name, "%s", shared_name);
	fz_name(at.label, "fz%d", idx);
	fd = p->f[1].fd;
	if (fz_ioctl(fd, KVARENA_IOC_ATTACH, &at))
		return 102;
	p->f[1].attached = true;
	memcpy(p->f[1].arena, at.name, KVARENA_NAME_LEN);
	p->f[1].client_id = at.client_id;
	p->f[1].tag = 0;

	if (drop && setresuid(65534, 65534, 65534))
		return 103;

	for (i = 0; i < calls; i++) {
		one_call(p);
		if (!(i % check_every))
			check_held(p);
		if (!(i % 64))
			reopen_evicted(p);
		if (!(i % 512))
			churn(p);
		if (i % 64 == 32)
			gang_churn(p);
		if (p->failures > 20)
			break;
	}
	check_held(p);
	shm->calls[idx] = p->calls;
	shm->urings[idx] = p->urings;

	printf("# sysfuzz: process %d%s: %lu calls (%lu ioctl, %lu io_uring), "
	       "%lu failures; results:", idx, drop ? " (uid 65534)" : "",
	       p->calls, p->ioctls, p->urings, p->failures);
	for (i = 0; i < 140; i++)
		if (p->by_errno[i])
			printf(" %s %lu", i ? strerrorname_np(i) : "0",
			       p->by_errno[i]);
	printf("\n# sysfuzz: process %d gangs: %lu made, %lu destroyed; %lu "
	       "clients, %lu tokens, %lu ranks joined, %lu rank frames mapped "
	       "(%lu read back from the members' memory), %lu ranks closed "
	       "(%lu clients evicted by RANKS_FATAL), %lu gang clients "
	       "closed\n", idx, p->gs.made, p->gs.destroyed, p->gs.attached,
	       p->gs.tokens, p->gs.joins, p->gs.rank_maps, p->gs.contents,
	       p->gs.rank_closes, p->gs.fatal, p->gs.leader_closes);
	fflush(stdout);
	return p->failures ? 1 : 0;
}

/* ---- the parent ------------------------------------------------------------ */

/* The arenas there before the run, which the fuzzer leaves alone. */
#define MAX_BEFORE	64
static char before[MAX_BEFORE][KVARENA_NAME_LEN];
static unsigned int nbefore;

static bool arena_by_index(int fd, uint32_t idx, struct kvarena_stat *s)
{
	memset(s, 0, sizeof(*s));
	s->flags = KVARENA_STAT_BY_INDEX;
	s->index = idx;
	return !fz_ioctl(fd, KVARENA_IOC_STAT, s);
}

static void note_arenas_before(int fd)
{
	struct kvarena_stat s;

	while (nbefore < MAX_BEFORE && arena_by_index(fd, nbefore, &s))
		memcpy(before[nbefore++], s.name, KVARENA_NAME_LEN);
}

static bool was_there_before(const char *name)
{
	unsigned int i;

	for (i = 0; i < nbefore; i++)
		if (!strncmp(before[i], name, KVARENA_NAME_LEN))
			return true;
	return false;
}

/*
 * Take away every lower tier the fuzzer gave: a lower tier cannot be
 * destroyed while it is one.  With every process gone (the agents' files
 * too: wait for the upper arena's clients to go) no copy may be under
 * way, so none is -EBUSY.
 */
static int untier(int fd)
{
	struct kvarena_arena_tier t;
	struct kvarena_stat s;
	int failures = 0, ret;
	uint32_t idx;

	for (idx = 0; arena_by_index(fd, idx, &s); idx++) {
		if (s.tier != KVARENA_STAT_TIER_LOWER ||
		    was_there_before(s.name))
			continue;
		if (fz_wait_no_clients(fd, s.name, 30) < 0)
			failures++;
		memset(&t, 0, sizeof(t));
		memcpy(t.name, s.name, KVARENA_NAME_LEN);
		ret = fz_ioctl(fd, KVARENA_IOC_ARENA_SET_TIER, &t);
		if (ret) {
			printf("# sysfuzz: cannot take %.32s's lower tier %.32s "
			       "away: %s\n", s.name, s.tier_name, strerror(-ret));
			failures++;
		}
	}
	return failures;
}

/*
 * The gangs the fuzzer left go first: a member cannot go while its gang
 * is there.  With every process gone, each gang is quiet (nothing held,
 * counts adding up) and each member's own table idle; once the gang is
 * destroyed its members are free again (sysfs names no gang), and are
 * checked and destroyed with the rest.
 */
static int ungang(int fd, int *lost_total)
{
	static char gangs[64][KVARENA_NAME_LEN];
	char members[KVARENA_GANG_MAX * KVARENA_NAME_LEN + 16], line[64];
	char after[sizeof(members)];
	unsigned int n = 0, i;
	struct kvarena_stat s, m;
	int failures = 0;
	uint32_t idx, lost = 0;
	char *tok, *save;

	for (idx = 0; n < 64 && arena_by_index(fd, idx, &s); idx++) {
		sysfs_line(s.name, "members", members, sizeof(members));
		if (members[0] && !was_there_before(s.name))
			memcpy(gangs[n++], s.name, KVARENA_NAME_LEN);
	}
	for (i = 0; i < n; i++) {
		sysfs_line(gangs[i], "members", members, sizeof(members));
		memcpy(after, members, sizeof(after));
		if (fz_wait_no_clients(fd, gangs[i], 30) < 0)
			failures++;
		failures += fz_check_quiet(fd, gangs[i], &lost);
		*lost_total += lost;
		for (tok = strtok_r(members, " ", &save); tok;
		     tok = strtok_r(NULL, " ", &save)) {
			if (fz_stat(fd, tok, &m) || m.nr_clients || m.nr_held ||
			    m.nr_reserved) {
				printf("# sysfuzz: %s, a member of gang %.32s: "
				       "clients %u held %u reserved %u\n", tok,
				       gangs[i], m.nr_clients, m.nr_held,
				       m.nr_reserved);
				failures++;
			}
		}
		if (fz_arena_destroy(fd, gangs[i])) {
			printf("# sysfuzz: cannot destroy gang %.32s: %s\n",
			       gangs[i], strerror(errno));
			failures++;
			continue;
		}
		for (tok = strtok_r(after, " ", &save); tok;
		     tok = strtok_r(NULL, " ", &save)) {
			sysfs_line(tok, "gang", line, sizeof(line));
			if (line[0]) {
				printf("# sysfuzz: %s still in gang \"%s\" after "
				       "%.32s was destroyed\n", tok, line,
				       gangs[i]);
				failures++;
			}
		}
	}
	if (n)
		printf("# sysfuzz: %u gangs left at the end, checked and "
		       "destroyed\n", n);
	return failures;
}

/*
 * Destroy what the fuzzer made and check every arena it leaves: its
 * own, and any a random name made (a valid name of random bytes turns
 * up now and then), which would hold the module after the run.
 */
static int cleanup_and_check(int fd, int *lost_total)
{
	struct kvarena_stat s;
	int failures = untier(fd), idx = 0;
	uint32_t lost = 0;

	failures += ungang(fd, lost_total);

	while (arena_by_index(fd, idx, &s)) {
		if (was_there_before(s.name)) {
			idx++;
			continue;
		}
		if (strncmp(s.name, "fz", 2))
			printf("# sysfuzz: arena \"%.32s\", made from a random "
			       "name, checked and destroyed\n", s.name);
		if (fz_wait_no_clients(fd, s.name, 30) < 0)
			failures++;
		failures += fz_check_quiet(fd, s.name, &lost);
		*lost_total += lost;
		if (fz_arena_destroy(fd, s.name)) {
			printf("# sysfuzz: cannot destroy %s: %s\n", s.name,
			       strerror(errno));
			failures++;
			idx++;
		}
	}
	return failures;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "calls", 1, NULL, 'c' }, { "procs", 1, NULL, 'p' },
		{ "seed", 1, NULL, 's' }, { "only", 1, NULL, 'o' },
		{ "verbose", 0, NULL, 'v' }, { "check-every", 1, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long calls = 200000, nprocs = 4, done = 0, urings = 0;
	uint64_t seed = fz_clock_seed();
	int only = -1, c, i, fd, failures = 0, lost = 0, status, refs;
	bool verbose = false;
	pid_t pids[MAX_PROCS];
	double t0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c': calls = strtoul(optarg, NULL, 0); break;
		case 'p': nprocs = strtoul(optarg, NULL, 0); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'o': only = atoi(optarg); break;
		case 'v': verbose = true; break;
		case 'k': check_every = strtoul(optarg, NULL, 0) ?: 1; break;
		default:
			fprintf(stderr, "usage: sysfuzz [--calls N] [--procs N] [--seed S] [--only P] [--verbose] [--check-every N]\n");
			return 2;
		}
	}
	if (!nprocs || nprocs > MAX_PROCS)
		nprocs = MAX_PROCS;
	printf("TAP version 13\n1..1\n");
	no_ring = kva_uring_missing();
	if (no_ring)
		printf("# sysfuzz: every call over ioctl: %s\n", no_ring);
	printf("# sysfuzz: seed 0x%016" PRIx64 ", %lu calls over %lu processes "
	       "(replay: sysfuzz --seed 0x%016" PRIx64 " --procs %lu)\n", seed,
	       calls, nprocs, seed, nprocs);
	fflush(stdout);

	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	refs = fz_module_refs();
	if (fd >= 0)
		note_arenas_before(fd);
	if (shm == MAP_FAILED || fd < 0 ||
	    fz_arena_create(fd, shared_name, NR_SHARED, FS, true)) {
		printf("# cannot set up: %s\n", strerror(errno));
		fz_ktap_result("sysfuzz", 1);
		return 1;
	}

	t0 = fz_now();
	for (i = 0; i < (int)nprocs; i++) {
		uint64_t x = seed + i;
		uint64_t pseed = fz_splitmix(&x);

		pids[i] = 0;
		if (only >= 0 && i != only)
			continue;
		pids[i] = fork();
		if (pids[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			/* The last of several drops its privileges. */
			_exit(proc_main(i, pseed, calls / nprocs,
					nprocs > 1 && i == (int)nprocs - 1,
					verbose));
		}
	}
	for (i = 0; i < (int)nprocs; i++) {
		if (!pids[i])
			continue;
		waitpid(pids[i], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			printf("# sysfuzz: process %d %s %d\n", i,
			       WIFEXITED(status) ? "exited" : "killed by signal",
			       WIFEXITED(status) ? WEXITSTATUS(status) :
						   WTERMSIG(status));
			failures++;
		}
	}
	failures += cleanup_and_check(fd, &lost);
	/* Nothing left behind: no arena, no file, no reference. */
	if (refs >= 0 && fz_wait_module_refs(refs, 30) < 0)
		failures++;
	close(fd);
	for (i = 0; i < (int)nprocs; i++) {
		done += shm->calls[i];
		urings += shm->urings[i];
	}
	printf("sysfuzz: %lu calls (%lu over io_uring), %lu processes, seed "
	       "0x%016" PRIx64 ", %.1f s, %d failures, %d frames lost\n",
	       done, urings, only >= 0 ? 1 : nprocs, seed, fz_now() - t0,
	       failures, lost);
	/* Too few calls made is a failure too: a process gave up early. */
	if (done < (only >= 0 ? calls / nprocs : calls) - nprocs)
		failures++;
	fz_ktap_result("sysfuzz", failures || lost);
	return failures || lost;
}
