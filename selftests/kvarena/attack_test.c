// SPDX-License-Identifier: GPL-2.0
/*
 * Attacks of one tenant on another, one named test each, on every ABI
 * surface that more than one tenant reaches: cache domains, figures
 * (sysfs and STAT), events, the lower tier, gangs, resizing and CUDA
 * scrubbing.  The attacker is uid 1001, its victim uid 1002, both
 * unprivileged; root is the arena's owner and, where the surface needs
 * one, its agent or scrubber.  Each attack runs as a race of the two (or
 * as rounds of it) KVA_ATTACK_ROUNDS times - 100 by default, as make
 * check runs it; make stress runs 1,000 - and fails the moment the
 * attack succeeds: a key found, a byte of the victim's read, a figure of
 * the victim's work seen move, an event of its keys read, a frame held
 * past a limit or left held, a gang joined.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "kva_test.h"
#include "kva_tenant.h"

#define ATTACKER	1001
#define VICTIM		1002
#define NR		16		/* frames of the arenas */
#define FSIZE		4096u		/* small frames: many rounds */
#define TAG		0xa77		/* the victim's key chain */
#define VBYTE		0x5a		/* the victim's bytes */
#define ABYTE		0xa5		/* the attacker's */
#define SYSFS_ARENAS	"/sys/class/misc/kvarena/arenas"
/* Each attack's bound, for 1,000 rounds under emulation; a hang is one. */
#define ATTACK_TIMEOUT	1800

static int rounds(void)
{
	const char *s = getenv("KVA_ATTACK_ROUNDS");
	int n = s ? atoi(s) : 0;

	return n > 0 ? n : 100;
}

/* A host arena of @nr frames (up to @max), backed by a fresh memfd. */
static int host_arena(int admin, const char *name, __u32 nr, __u32 max)
{
	struct kvarena_arena_create c = {
		.frame_size = FSIZE, .nr_frames = nr, .max_frames = max,
		.mem_kind = KVARENA_MEM_HOST,
	};
	int mfd = kva_sealed_memfd((size_t)(max ? max : nr) * FSIZE), ret;

	if (mfd < 0)
		return -errno;
	snprintf(c.name, sizeof(c.name), "%s", name);
	ret = kva_ioctl(admin, KVARENA_IOC_ARENA_CREATE, &c);
	if (!ret)
		ret = kva_set_backing(admin, name, 0, max ? max : nr, mfd, 0);
	close(mfd);
	return ret;
}

/* A client of @name as the caller (who has dropped to its uid), or exit. */
static int client(const char *name, const char *label, __u32 max)
{
	int fd = kva_open(O_RDWR);

	CHECK(fd >= 0);
	CHECK_EQ(0, kva_attach(fd, name, label, 0, max, NULL));
	return fd;
}

static unsigned char *map(int fd, __u64 h)
{
	void *p = kva_map_frame(fd, h, PROT_READ | PROT_WRITE);

	return p == MAP_FAILED ? NULL : p;
}

/* Write @byte over frames @h[0..n), or exit. */
static void fill(int fd, const __u64 *h, int n, unsigned char byte)
{
	for (int i = 0; i < n; i++) {
		unsigned char *p = map(fd, h[i]);

		CHECK(p);
		memset(p, byte, FSIZE);
		munmap(p, FSIZE);
	}
}

/* Whether @p holds only zeros and @own: nothing anybody else wrote. */
static bool only(const unsigned char *p, size_t n, unsigned char own)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] && p[i] != own)
			return false;
	return true;
}

/* Counts an attacker's round down; whether rounds are left. */
static bool tries_left(int *left)
{
	return --*left > 0;
}

/* Has the parent closed @fd (the victim is done)? */
static bool hung_up(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

/*
 * Fork a child that closes @shut (unless negative), becomes @uid and
 * runs @fn(@a, @b); its pid.
 */
static pid_t spawn_closing(uid_t uid, int (*fn)(const char *, int),
			   const char *a, int b, int shut)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (shut >= 0)
			close(shut);
		drop_to(uid);
		_exit(fn(a, b));
	}
	return pid;
}

static pid_t spawn(uid_t uid, int (*fn)(const char *, int), const char *a,
		   int b)
{
	return spawn_closing(uid, fn, a, b, -1);
}

FIXTURE(atk) {
	int admin;
	mode_t mode;
	char name[32];
};

FIXTURE_SETUP(atk)
{
	struct stat st;

	snprintf(self->name, sizeof(self->name), "atk%d", getpid());
	self->admin = kva_open(O_RDWR);
	ASSERT_LE(0, self->admin);
	ASSERT_EQ(0, host_arena(self->admin, self->name, NR, NR));
	ASSERT_EQ(0, stat(KVARENA_DEVICE, &st));
	self->mode = st.st_mode & 07777;
	ASSERT_EQ(0, chmod(KVARENA_DEVICE, 0666));
	srand(getpid());
}

FIXTURE_TEARDOWN(atk)
{
	chmod(KVARENA_DEVICE, self->mode);
	EXPECT_EQ(0, kva_wait_no_clients(self->admin, self->name));
	EXPECT_EQ(0, kva_destroy(self->admin, self->name));
	close(self->admin);
}

/*
 * Run @attacker (uid 1001) beside @victim (uid 1002): the attacker starts
 * first and goes on until the victim's rounds are done (its argument is a
 * descriptor that reads as hung up then).  Both exit codes must be 0.
 */
static void race(struct __test_metadata *_metadata, const char *name,
		 int (*attacker)(const char *, int),
		 int (*victim)(const char *, int))
{
	int stop[2];
	pid_t a, v;

	ASSERT_EQ(0, pipe(stop));
	a = spawn_closing(ATTACKER, attacker, name, stop[0], stop[1]);
	ASSERT_LE(0, a);
	close(stop[0]);
	v = spawn_closing(VICTIM, victim, name, rounds(), stop[1]);
	ASSERT_LE(0, v);
	EXPECT_EQ(0, reap(v));
	close(stop[1]);
	EXPECT_EQ(0, reap(a));
}

/* ---- cache domains ------------------------------------------------------- */

/*
 * The victim's rounds: allocate, write its bytes, publish the chain (the
 * first time), look it up (its own keys: hits), miss a key, be refused
 * an ALLOC, report usage, free.
 */
static int victim_works(const char *name, int n)
{
	int fd = client(name, "victim", NR / 2);
	__u64 h[NR], got[3];

	for (int r = 0; r < n; r++) {
		CHECK_EQ(2, kva_alloc(fd, h, 2, 0));
		fill(fd, h, 2, VBYTE);
		CHECK(publish(fd, TAG, h, 2) >= 0);
		CHECK_EQ(0, kva_free(fd, h, 2));
		CHECK_EQ(2, lookup(fd, TAG, 0, 3, got));
		CHECK_EQ(-ENOSPC, kva_alloc(fd, h, NR, 0));
		CHECK_EQ(0, kva_set_usage(fd, r % 64 + 1, (r % 64 + 1) * 64));
		CHECK_EQ(0, kva_free(fd, got, 2));
	}
	close(fd);
	return 0;
}

static int attacker_looks_up(const char *name, int stop)
{
	int left = rounds();
	int fd = client(name, "attacker", 0);
	long tries = 0;
	__u64 got[2];

	do {
		CHECK_EQ(0, lookup(fd, TAG, 0, 2, got));
		tries++;
	} while (tries_left(&left) || !hung_up(stop));
	fprintf(stderr, "# %ld LOOKUPs of the victim's keys, all missed\n",
		tries);
	close(fd);
	return 0;
}

TEST_F_TIMEOUT(atk, domains_lookups_never_hit_another_uids_keys, ATTACK_TIMEOUT)
{
	race(_metadata, self->name, attacker_looks_up, victim_works);
}

/* The victim's rounds: as many frames as it may take, filled, freed. */
static int victim_fills(const char *name, int n)
{
	/* Half the arena each: both always find frames. */
	int fd = client(name, "victim", NR / 2);
	__u64 h[NR];

	for (int r = 0; r < n; r++) {
		int got = kva_alloc(fd, h, NR, KVARENA_ALLOC_PARTIAL);

		CHECK(got > 0 || got == -ENOSPC || got == -EAGAIN);
		fill(fd, h, got, VBYTE);
		if (got > 0)
			CHECK_EQ(0, kva_free(fd, h, got));
	}
	close(fd);
	return 0;
}

static int attacker_reads_frames(const char *name, int stop)
{
	int left = rounds();
	int fd = client(name, "attacker", NR / 2);
	long frames = 0;
	__u64 h[NR];

	do {
		int got = kva_alloc(fd, h, NR, KVARENA_ALLOC_PARTIAL);

		CHECK(got > 0 || got == -ENOSPC || got == -EAGAIN);
		for (int i = 0; i < got; i++) {
			unsigned char *p = map(fd, h[i]);

			CHECK(p);
			CHECK(only(p, FSIZE, ABYTE));
			memset(p, ABYTE, FSIZE);
			munmap(p, FSIZE);
		}
		if (got > 0)
			CHECK_EQ(0, kva_free(fd, h, got));
		frames += got > 0 ? got : 0;
	} while (tries_left(&left) || !hung_up(stop));
	fprintf(stderr, "# %ld frames read beside the victim, none with its bytes\n",
		frames);
	close(fd);
	return 0;
}

TEST_F_TIMEOUT(atk, domains_frames_reach_another_uid_only_cleared, ATTACK_TIMEOUT)
{
	race(_metadata, self->name, attacker_reads_frames, victim_fills);
}

/* ---- figures --------------------------------------------------------------- */

/* The figures that are the viewer's domain's (Documentation/kvarena.rst). */
static const char *const dom_files[] = {
	"cached", "published", "cache_hits", "cache_misses", "cache_reclaims",
	"clients", "filled_bytes", "filled_tokens", "alloc_calls",
	"free_calls", "alloc_failures", "frames_allocated", "frames_freed",
	"tier_demoted", "tier_promoted", "tier_failed",
};

#define NR_DOM_FILES	(sizeof(dom_files) / sizeof(dom_files[0]))

/* The domain figures as sysfs and STAT show them to the caller. */
static int dom_figures(int fd, const char *name, long long *v)
{
	struct kvarena_stat s;
	char path[256], buf[64];
	size_t i;

	for (i = 0; i < NR_DOM_FILES; i++) {
		ssize_t n;
		int f;

		snprintf(path, sizeof(path), "%s/%s/%s", SYSFS_ARENAS, name,
			 dom_files[i]);
		f = open(path, O_RDONLY);
		if (f < 0)
			return -1;
		n = read(f, buf, sizeof(buf) - 1);
		close(f);
		if (n <= 0)
			return -1;
		buf[n] = 0;
		v[i] = atoll(buf);
	}
	if (kva_stat(fd, name, &s))
		return -1;
	v[i++] = s.nr_cached;
	v[i++] = s.nr_published;
	v[i++] = s.cache_hits;
	v[i++] = s.cache_misses;
	v[i++] = s.cache_reclaims;
	v[i++] = s.nr_clients;
	v[i++] = s.filled_bytes;
	v[i++] = s.filled_tokens;
	v[i++] = s.alloc_calls;
	v[i++] = s.free_calls;
	v[i++] = s.alloc_failures;
	v[i++] = s.frames_allocated;
	v[i++] = s.frames_freed;
	v[i++] = s.nr_dirty;
	return 0;
}

#define NR_FIGURES	(NR_DOM_FILES + 14)

static int attacker_watches(const char *name, int stop)
{
	int left = rounds();
	long long first[NR_FIGURES], now[NR_FIGURES];
	int fd = kva_open(O_RDONLY);
	long samples = 0;

	CHECK(fd >= 0);
	CHECK_EQ(0, dom_figures(fd, name, first));
	do {
		CHECK_EQ(0, dom_figures(fd, name, now));
		for (size_t i = 0; i < NR_FIGURES; i++) {
			if (now[i] == first[i])
				continue;
			fprintf(stderr, "figure %zu moved: %lld -> %lld\n", i,
				first[i], now[i]);
			_exit(1);
		}
		samples++;
	} while (tries_left(&left) || !hung_up(stop));
	fprintf(stderr, "# %ld samples of %zu figures beside the victim's work, none moved\n",
		samples, NR_FIGURES);
	close(fd);
	return 0;
}

TEST_F_TIMEOUT(atk, figures_never_move_with_another_uids_work, ATTACK_TIMEOUT)
{
	race(_metadata, self->name, attacker_watches, victim_works);
}

/* ---- events ---------------------------------------------------------------- */

static int attacker_reads_events(const char *name, int stop)
{
	struct kvarena_events_fd e = { .flags = KVARENA_EVENTS_NONBLOCK };
	int fd = kva_open(O_RDONLY), left = rounds();
	long records = 0;
	bool last = false;
	char buf[8192];

	CHECK(fd >= 0);
	snprintf(e.name, sizeof(e.name), "%s", name);
	CHECK_EQ(0, kva_ioctl(fd, KVARENA_IOC_EVENTS_FD, &e));
	for (;;) {
		ssize_t n = read(e.fd, buf, sizeof(buf));

		for (ssize_t off = 0; n > 0 && off < n;) {
			const struct kvarena_event *ev = (void *)(buf + off);

			CHECK(ev->type == KVARENA_EVENT_LOST);
			records++;
			off += ev->size;
		}
		CHECK(n >= 0 || errno == EAGAIN);
		if (last)
			break;
		last = !tries_left(&left) && hung_up(stop);
	}
	fprintf(stderr, "# events read beside the victim's work: %ld, none of its keys\n",
		records);
	close(e.fd);
	close(fd);
	return 0;
}

TEST_F_TIMEOUT(atk, events_never_carry_another_uids_keys, ATTACK_TIMEOUT)
{
	race(_metadata, self->name, attacker_reads_events, victim_works);
}

/* ---- the lower tier -------------------------------------------------------- */

#define LO_NR	(2 * NR)
#define HOLD	8		/* frames the victim holds throughout */
#define KEYS	4		/* the attacker's keys below */

struct tier {
	char up[32], lo[32];
	pid_t agent;
	int victim[2];		/* the victim holds HOLD frames until EOF */
	pid_t vpid;
};

static int tier_set(int admin, const char *up, const char *lo, __u32 target)
{
	struct kvarena_arena_tier t = { .free_target = target };

	snprintf(t.name, sizeof(t.name), "%s", up);
	snprintf(t.lower, sizeof(t.lower), "%s", lo);
	return kva_ioctl(admin, KVARENA_IOC_ARENA_SET_TIER, &t);
}

/* Copy job @j with memcpy between the two frames, as an agent does. */
static int agent_copy(int up, int lo, const struct kvarena_tier_job *j)
{
	bool down = j->op == KVARENA_TIER_DEMOTE;
	void *u = kva_map_frame(up, j->upper, down ? PROT_READ :
					     PROT_READ | PROT_WRITE);
	void *l = kva_map_frame(lo, j->lower, down ? PROT_READ | PROT_WRITE :
					      PROT_READ);
	int ret = u != MAP_FAILED && l != MAP_FAILED ? 0 : -EIO;

	if (!ret)
		memcpy(down ? l : u, down ? u : l, FSIZE);
	if (u != MAP_FAILED)
		munmap(u, FSIZE);
	if (l != MAP_FAILED)
		munmap(l, FSIZE);
	return ret;
}

/* Root's agent: take, copy, give back, until killed. */
static pid_t agent_run(const char *up_name, const char *lo_name)
{
	pid_t pid = fork();
	int up, lo;

	if (pid)
		return pid;
	up = kva_open(O_RDWR);
	lo = kva_open(O_RDWR);
	CHECK(up >= 0 && lo >= 0);
	CHECK_EQ(0, kva_attach(up, up_name, "agent", 0, 0, NULL));
	CHECK_EQ(0, kva_attach(lo, lo_name, "agent", 0, 0, NULL));
	for (;;) {
		struct kvarena_tier_job j[8];
		struct kvarena_tier t = {
			.jobs = (__u64)(uintptr_t)j, .count = 8,
			.timeout_ms = 100, .lower_fd = lo,
		};

		CHECK_EQ(0, kva_ioctl(up, KVARENA_IOC_TIER, &t));
		for (__u32 i = 0; i < t.nr_done; i++)
			j[i].result = agent_copy(up, lo, &j[i]);
		if (t.nr_done) {
			struct kvarena_tier d = {
				.jobs = (__u64)(uintptr_t)j, .count = t.nr_done,
				.flags = KVARENA_TIER_DONE,
			};

			CHECK_EQ(0, kva_ioctl(up, KVARENA_IOC_TIER, &d));
		}
	}
}

static int held(int admin, const char *name)
{
	struct kvarena_stat s;

	return kva_stat(admin, name, &s) ? -1 : (int)s.nr_held;
}

/* Wait up to 5 s for @name's held frames to be @n. */
static bool held_settles(int admin, const char *name, int n)
{
	for (int i = 0; i < 500 && held(admin, name) != n; i++)
		usleep(10000);
	return held(admin, name) == n;
}

/* Wait up to 5 s for @name's cached frames to be @n. */
static bool cached_settles(int admin, const char *name, __u32 n)
{
	struct kvarena_stat s;

	for (int i = 0; i < 500; i++) {
		if (!kva_stat(admin, name, &s) && s.nr_cached == n)
			return true;
		usleep(10000);
	}
	return false;
}

/* The attacker's keys: published, let go, and (by the agent) below. */
static int attacker_publishes(const char *name, int n)
{
	int fd = client(name, "attacker", 0);
	__u64 h[KEYS];

	CHECK_EQ(KEYS, kva_alloc(fd, h, KEYS, 0));
	fill(fd, h, KEYS, ABYTE);
	CHECK_EQ(KEYS, publish(fd, TAG, h, KEYS));
	CHECK_EQ(0, kva_free(fd, h, KEYS));
	close(fd);
	return 0;
}

/* The victim: HOLD frames held until its pipe closes. */
static int victim_holds(const char *name, int wait)
{
	int fd = client(name, "victim", 0);
	__u64 h[HOLD];
	char b;

	CHECK_EQ(HOLD, kva_alloc(fd, h, HOLD, 0));
	CHECK_EQ(0, read(wait, &b, 1));
	close(fd);
	return 0;
}

static void tier_setup(struct __test_metadata *_metadata, int admin,
		       struct tier *t)
{
	pid_t p;

	snprintf(t->up, sizeof(t->up), "atu%d", getpid());
	snprintf(t->lo, sizeof(t->lo), "atl%d", getpid());
	ASSERT_EQ(0, host_arena(admin, t->up, NR, 0));
	ASSERT_EQ(0, host_arena(admin, t->lo, LO_NR, 0));
	/* Everything cached goes down at once. */
	ASSERT_EQ(0, tier_set(admin, t->up, t->lo, NR));
	t->agent = agent_run(t->up, t->lo);
	ASSERT_LE(0, t->agent);
	p = spawn(ATTACKER, attacker_publishes, t->up, 0);
	ASSERT_EQ(0, reap(p));
	ASSERT_TRUE(cached_settles(admin, t->lo, KEYS));
	ASSERT_TRUE(held_settles(admin, t->up, 0));
	ASSERT_EQ(0, pipe(t->victim));
	t->vpid = spawn_closing(VICTIM, victim_holds, t->up, t->victim[0],
				t->victim[1]);
	ASSERT_TRUE(held_settles(admin, t->up, HOLD));
}

static void tier_teardown(struct __test_metadata *_metadata, int admin,
			  struct tier *t)
{
	close(t->victim[1]);
	EXPECT_EQ(0, reap(t->vpid));
	close(t->victim[0]);
	kill(t->agent, SIGKILL);
	reap(t->agent);
	EXPECT_EQ(0, kva_wait_no_clients(admin, t->up));
	EXPECT_EQ(0, kva_wait_no_clients(admin, t->lo));
	EXPECT_EQ(0, kva_destroy(admin, t->up));
	EXPECT_EQ(0, kva_destroy(admin, t->lo));
}

/* PROMOTE @n keys from @first; the frames promoted (handles in @h). */
static int promote(int fd, __u32 first, __u32 n, __u32 timeout_ms, __u64 *h)
{
	struct kvarena_prefix_entry e[KEYS];
	struct kvarena_promote p = {
		.entries = (__u64)(uintptr_t)e, .count = n,
		.timeout_ms = timeout_ms,
	};
	int ret;

	chain(e, n, TAG, first, NULL);
	ret = kva_ioctl(fd, KVARENA_IOC_PROMOTE, &p);
	for (__u32 i = 0; !ret && h && i < p.nr_done; i++)
		h[i] = e[i].handle;
	return ret ? ret : (int)p.nr_done;
}

/*
 * One round of the attacker, max 1: a PROMOTE of each of its keys at
 * once, from four processes sharing the client; whoever gets its frame
 * lets it go again (it goes back below).
 */
static int attacker_promotes(const char *name, int unused)
{
	int fd = client(name, "attacker", 1);
	pid_t kid[KEYS];

	for (int i = 0; i < KEYS; i++) {
		kid[i] = fork();
		CHECK(kid[i] >= 0);
		if (!kid[i]) {
			__u64 h;
			int r = promote(fd, i, 1, 5000, &h);

			if (r != 1) {
				if (r == 0 || r == -ENOSPC || r == -EAGAIN)
					_exit(0);
				fprintf(stderr, "PROMOTE: %s\n", strerror(-r));
				_exit(1);
			}
			CHECK_EQ(0, kva_free(fd, &h, 1));
			_exit(0);
		}
	}
	for (int i = 0; i < KEYS; i++)
		CHECK_EQ(0, reap(kid[i]));
	close(fd);
	return 0;
}

TEST_F_TIMEOUT(atk, tier_concurrent_promotes_never_hold_past_max, ATTACK_TIMEOUT)
{
	int n = rounds(), worst = 0;
	struct tier t;

	tier_setup(_metadata, self->admin, &t);
	for (int r = 0; r < n; r++) {
		pid_t a = spawn(ATTACKER, attacker_promotes, t.up, 0);
		int status, h;

		ASSERT_LE(0, a);
		/* The arena's held frames, sampled as long as the round runs. */
		while (waitpid(a, &status, WNOHANG) == 0) {
			h = held(self->admin, t.up);
			worst = h > worst ? h : worst;
		}
		ASSERT_EQ(0, kva_exited(status)) TH_LOG("round %d", r);
		ASSERT_TRUE(held_settles(self->admin, t.up, HOLD))
			TH_LOG("round %d: %d held", r, held(self->admin, t.up));
	}
	TH_LOG("%d rounds of %d PROMOTEs at once by a client of max 1: at most %d frames held, %d of them the victim's",
	       n, KEYS, worst, HOLD);
	EXPECT_GE(HOLD + 1, worst);
	tier_teardown(_metadata, self->admin, &t);
}

static int attacker_promotes_and_dies(const char *name, int unused)
{
	int fd = client(name, "attacker", 0);

	promote(fd, 0, KEYS, 5000, NULL);
	pause();
	return 0;
}

/*
 * The attacker killed at a random moment of its PROMOTE of every key:
 * whatever the moment, the frames come back - at once, or when the agent
 * gives the copy under way back - and none stays held.
 */
TEST_F_TIMEOUT(atk, tier_a_promoter_killed_at_any_moment_leaves_nothing_held, ATTACK_TIMEOUT)
{
	int n = rounds();
	struct tier t;

	tier_setup(_metadata, self->admin, &t);
	for (int r = 0; r < n; r++) {
		pid_t a = spawn(ATTACKER, attacker_promotes_and_dies, t.up, 0);

		ASSERT_LE(0, a);
		usleep(rand() % 4000);
		kill(a, SIGKILL);
		ASSERT_EQ(1000 + SIGKILL, reap(a));
		ASSERT_TRUE(held_settles(self->admin, t.up, HOLD))
			TH_LOG("round %d: %d held", r, held(self->admin, t.up));
		ASSERT_TRUE(held_settles(self->admin, t.lo, 0))
			TH_LOG("round %d: %d held below", r,
			       held(self->admin, t.lo));
	}
	tier_teardown(_metadata, self->admin, &t);
}

/* ---- gangs ----------------------------------------------------------------- */

/* The victim: a gang client that hands its id and token out, then waits. */
static int victim_gang_client(const char *name, int out)
{
	struct kvarena_gang_token tok = { 0 };
	struct kvarena_attach at;
	int fd = kva_open(O_RDWR);
	__u64 h[2], msg[2];

	CHECK(fd >= 0);
	CHECK_EQ(0, kva_attach(fd, name, "victim", 0, 0, &at));
	CHECK_EQ(0, kva_ioctl(fd, KVARENA_IOC_GANG_TOKEN, &tok));
	CHECK_EQ(2, kva_alloc(fd, h, 2, 0));
	msg[0] = at.client_id;
	msg[1] = tok.token;
	CHECK_EQ(sizeof(msg), write(out, msg, sizeof(msg)));
	/* Until the test is over and kills it. */
	pause();
	return 0;
}

static int gang_join(const char *gang, __u32 id, __u32 rank, __u64 token)
{
	struct kvarena_join j = { .client_id = id, .rank = rank,
				  .token = token };
	int fd = kva_open(O_RDWR), ret;

	if (fd < 0)
		return -errno;
	snprintf(j.name, sizeof(j.name), "%s", gang);
	ret = kva_ioctl(fd, KVARENA_IOC_JOIN, &j);
	close(fd);
	return ret;
}

/*
 * Guessed tokens, the victim's own token stolen, every rank, over and
 * over: the attacker never joins the victim's gang client, and the
 * client keeps its frames.
 */
TEST_F_TIMEOUT(atk, gang_guessed_or_stolen_tokens_never_join, ATTACK_TIMEOUT)
{
	char m0[32], m1[32], gang[32], names[2][KVARENA_NAME_LEN] = { 0 };
	struct kvarena_gang_create g = {
		.members = (__u64)(uintptr_t)names, .nr_members = 2,
	};
	int n = rounds(), io[2], refused = 0;
	__u64 msg[2];
	pid_t v, a;

	snprintf(m0, sizeof(m0), "agm0%d", getpid());
	snprintf(m1, sizeof(m1), "agm1%d", getpid());
	snprintf(gang, sizeof(gang), "ag%d", getpid());
	ASSERT_EQ(0, host_arena(self->admin, m0, NR, 0));
	ASSERT_EQ(0, host_arena(self->admin, m1, NR, 0));
	memcpy(names[0], m0, strlen(m0));
	memcpy(names[1], m1, strlen(m1));
	snprintf(g.name, sizeof(g.name), "%s", gang);
	ASSERT_EQ(0, kva_ioctl(self->admin, KVARENA_IOC_GANG_CREATE, &g));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, io));
	v = spawn(VICTIM, victim_gang_client, gang, io[1]);
	ASSERT_LE(0, v);
	ASSERT_EQ(sizeof(msg), read(io[0], msg, sizeof(msg)));

	a = fork();
	ASSERT_LE(0, a);
	if (!a) {
		drop_to(ATTACKER);
		for (int r = 0; r < n; r++) {
			__u64 guess = ((__u64)rand() << 32) ^ (__u64)rand();

			for (__u32 rank = 0; rank < 2; rank++) {
				CHECK(gang_join(gang, msg[0], rank, guess) < 0);
				CHECK(gang_join(gang, msg[0], rank, msg[1]) < 0);
				CHECK(gang_join(gang, msg[0] + 1, rank,
						msg[1]) < 0);
			}
		}
		_exit(0);
	}
	EXPECT_EQ(0, reap(a));
	refused = n * 6;
	EXPECT_EQ(2, held(self->admin, gang));
	TH_LOG("%d JOINs of the victim's client refused", refused);
	kill(v, SIGKILL);
	reap(v);
	close(io[0]);
	close(io[1]);
	EXPECT_EQ(0, kva_wait_no_clients(self->admin, gang));
	EXPECT_EQ(0, kva_destroy(self->admin, gang));
	EXPECT_EQ(0, kva_destroy(self->admin, m0));
	EXPECT_EQ(0, kva_destroy(self->admin, m1));
}

/* ---- resizing ---------------------------------------------------------------- */

static int arena_resize(int admin, const char *name, __u32 nr)
{
	struct kvarena_arena_resize r = { .nr_frames = nr };

	snprintf(r.name, sizeof(r.name), "%s", name);
	return kva_ioctl(admin, KVARENA_IOC_ARENA_RESIZE, &r);
}

/* One step of a tenant, told by a byte on @io: fill (v) or read (a). */
static int tenant_steps(const char *name, int io)
{
	bool victim = geteuid() == VICTIM;
	int fd = client(name, victim ? "victim" : "attacker", 0);
	__u64 h[NR];
	char b;

	while (read(io, &b, 1) == 1) {
		int got = kva_alloc(fd, h, NR, KVARENA_ALLOC_PARTIAL);

		CHECK(got > 0);
		for (int i = 0; i < got; i++) {
			unsigned char *p = map(fd, h[i]);

			CHECK(p);
			if (victim) {
				memset(p, VBYTE, FSIZE);
			} else {
				CHECK(only(p, FSIZE, ABYTE));
				memset(p, ABYTE, FSIZE);
			}
			munmap(p, FSIZE);
		}
		CHECK_EQ(0, kva_free(fd, h, got));
		CHECK_EQ(1, write(io, &b, 1));
	}
	close(fd);
	return 0;
}

/*
 * Round after round the victim fills every frame and frees them, the
 * arena shrinks to one frame and grows back (the memory given back and
 * taken anew), and the attacker takes every frame: never a byte of the
 * victim's.
 */
TEST_F_TIMEOUT(atk, resize_never_hands_a_frames_old_bytes_to_another_uid, ATTACK_TIMEOUT)
{
	int n = rounds(), vio[2], aio[2];
	pid_t v, a;
	char b = 's';

	/* Each child alone holds its end: a child's death is an EOF here. */
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, vio));
	v = spawn_closing(VICTIM, tenant_steps, self->name, vio[1], vio[0]);
	ASSERT_LE(0, v);
	close(vio[1]);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, aio));
	a = spawn_closing(ATTACKER, tenant_steps, self->name, aio[1], aio[0]);
	ASSERT_LE(0, a);
	close(aio[1]);
	for (int r = 0; r < n; r++) {
		ASSERT_EQ(1, write(vio[0], &b, 1));
		ASSERT_EQ(1, read(vio[0], &b, 1)) TH_LOG("round %d", r);
		ASSERT_EQ(0, arena_resize(self->admin, self->name, 1));
		ASSERT_EQ(0, arena_resize(self->admin, self->name, NR));
		ASSERT_EQ(1, write(aio[0], &b, 1));
		ASSERT_EQ(1, read(aio[0], &b, 1)) TH_LOG("round %d", r);
	}
	close(vio[0]);
	close(aio[0]);
	EXPECT_EQ(0, reap(v));
	EXPECT_EQ(0, reap(a));
}

/* ---- CUDA scrubbing ------------------------------------------------------------ */

#define SC_NR	8

static int cuda_arena(int admin, const char *name)
{
	struct kvarena_arena_create c = { .frame_size = FSIZE,
					  .nr_frames = SC_NR,
					  .mem_kind = KVARENA_MEM_CUDA };
	int ret;

	snprintf(c.name, sizeof(c.name), "%s", name);
	ret = kva_ioctl(admin, KVARENA_IOC_ARENA_CREATE, &c);
	/* No GPU here: a memfd a frame, as CUDA exports one allocation. */
	for (int i = 0; !ret && i < SC_NR; i++) {
		int mfd = memfd_create("frame", MFD_CLOEXEC);

		if (mfd < 0 || ftruncate(mfd, FSIZE))
			return -errno;
		ret = kva_set_backing(admin, name, i, 1, mfd, 0);
		close(mfd);
	}
	return ret;
}

/* The victim fills every frame through its import, and exits. */
static int victim_imports(const char *name, int unused)
{
	int fd = client(name, "victim", 0);
	__u64 h[SC_NR];

	CHECK_EQ(SC_NR, kva_alloc(fd, h, SC_NR, 0));
	fill(fd, h, SC_NR, VBYTE);
	CHECK_EQ(0, kva_free(fd, h, SC_NR));
	return 0;
}

static int scrub_cmd(int fd, __u64 *h, __u32 count, __u32 flags,
		     __u32 timeout_ms)
{
	struct kvarena_scrub s = { .handles = (uintptr_t)h, .count = count,
				   .flags = flags, .timeout_ms = timeout_ms };
	int ret = kva_ioctl(fd, KVARENA_IOC_SCRUB, &s);

	return ret ? ret : (int)s.nr_done;
}

/* Before any scrub: refused everything; after: only zeroed frames. */
static int attacker_at_dirty_frames(const char *name, int scrubbed)
{
	int fd = client(name, "attacker", 0);
	__u64 h[SC_NR];

	CHECK_EQ(-EPERM, scrub_cmd(fd, h, SC_NR, 0, 0));
	if (!scrubbed) {
		/* Refused; the scrubber hears that all of them are wanted. */
		CHECK_EQ(-ENOSPC, kva_alloc(fd, h, SC_NR, 0));
		return 0;
	}
	CHECK_EQ(SC_NR, kva_alloc(fd, h, SC_NR, 0));
	for (int i = 0; i < SC_NR; i++) {
		unsigned char *p = map(fd, h[i]);

		CHECK(p);
		CHECK(only(p, FSIZE, 0));
		memset(p, ABYTE, FSIZE);
		munmap(p, FSIZE);
	}
	CHECK_EQ(0, kva_free(fd, h, SC_NR));
	return 0;
}

/*
 * The owner's scrubber: all SC_NR frames (a refused ALLOC asked for them
 * all), zeroed; it waits for those the exited tenant's files still held
 * (their last references go a moment after the process).
 */
static int scrub_everything(int owner)
{
	__u64 h[SC_NR];
	int n, total = 0;

	while (total < SC_NR &&
	       (n = scrub_cmd(owner, h, SC_NR - total, 0, 5000)) > 0) {
		for (int i = 0; i < n; i++) {
			unsigned char *p = map(owner, h[i]);

			if (!p)
				return -1;
			memset(p, 0, FSIZE);
			munmap(p, FSIZE);
		}
		if (scrub_cmd(owner, h, n, KVARENA_SCRUB_DONE, 0) != n)
			return -1;
		total += n;
	}
	return total;
}

/*
 * A CUDA arena's dirty frames: the attacker may not scrub them, gets none
 * while they hold the victim's data, and gets them zeroed after the
 * owner's scrubber ran - round after round.
 */
TEST_F_TIMEOUT(atk, scrub_dirty_frames_reach_another_uid_only_scrubbed, ATTACK_TIMEOUT)
{
	int n = rounds(), owner;
	__u64 h[SC_NR];
	char name[32];

	snprintf(name, sizeof(name), "ats%d", getpid());
	ASSERT_EQ(0, cuda_arena(self->admin, name));
	owner = kva_open(O_RDWR);
	ASSERT_LE(0, owner);
	ASSERT_EQ(0, kva_attach(owner, name, "scrubber", 0, 0, NULL));
	for (int r = 0; r < n; r++) {
		ASSERT_EQ(0, reap(spawn(VICTIM, victim_imports, name, 0)));
		ASSERT_EQ(0, reap(spawn(ATTACKER, attacker_at_dirty_frames,
					name, 0))) TH_LOG("round %d", r);
		ASSERT_EQ(SC_NR, scrub_everything(owner)) TH_LOG("round %d", r);
		ASSERT_EQ(0, reap(spawn(ATTACKER, attacker_at_dirty_frames,
					name, 1))) TH_LOG("round %d", r);
		/* The attacker's frames, for the victim's next round. */
		ASSERT_EQ(-ENOSPC, kva_alloc(owner, h, SC_NR, 0));
		ASSERT_EQ(SC_NR, scrub_everything(owner)) TH_LOG("round %d", r);
	}
	close(owner);
	EXPECT_EQ(0, kva_wait_no_clients(self->admin, name));
	EXPECT_EQ(0, kva_destroy(self->admin, name));
}

TEST_HARNESS_MAIN
