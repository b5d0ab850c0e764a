// SPDX-License-Identifier: GPL-2.0
/*
 * A lower tier (ARENA_SET_TIER, TIER, PROMOTE): cached frames of an arena
 * are copied down by an agent instead of dropped, LOOKUP counts what is
 * below, and PROMOTE brings it back, byte for byte, to another process of
 * the same cache domain and to nobody else's.  The agent here is the
 * test's own: a root process that does what kvarenactl agent does (map
 * both frames of a job, memcpy, give it back), so that it can also be
 * killed in the middle of a copy - after which nothing is lost or torn.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "kva_test.h"
#include "kva_tenant.h"
#include "kva_uring.h"

#define UP_NR	16			/* frames of the upper arena */
#define LO_NR	32			/* of the lower one */
#define FSIZE	(64 * 1024)
#define TAG	0x7e1			/* the test's key chain */

/* Byte @j of the frame with key @i of chain @tag: no two frames alike. */
static unsigned char pat(__u32 tag, __u32 i, size_t j)
{
	return (unsigned char)(tag * 131 + i * 29 + j * 7 + (j >> 12));
}

static char *map_frame(int fd, __u64 h, int prot)
{
	void *p = kva_map_frame(fd, h, prot);

	return p == MAP_FAILED ? NULL : p;
}

static int fill(int fd, __u64 h, __u32 tag, __u32 i)
{
	unsigned char *p = (unsigned char *)map_frame(fd, h,
						      PROT_READ | PROT_WRITE);

	if (!p)
		return -1;
	for (size_t j = 0; j < FSIZE; j++)
		p[j] = pat(tag, i, j);
	munmap(p, FSIZE);
	return 0;
}

/* Whether frame @h holds key @i's bytes, every one of them. */
static bool intact(int fd, __u64 h, __u32 tag, __u32 i)
{
	unsigned char *p = (unsigned char *)map_frame(fd, h, PROT_READ);
	bool ok = p != NULL;

	for (size_t j = 0; ok && j < FSIZE; j++)
		ok = p[j] == pat(tag, i, j);
	if (p)
		munmap(p, FSIZE);
	return ok;
}

static int create_kind(int fd, const char *name, __u32 nr, __u32 kind,
		       __u32 flags, __u32 max)
{
	struct kvarena_arena_create c = {
		.frame_size = FSIZE, .nr_frames = nr, .mem_kind = kind,
		.flags = flags, .max_frames = max,
	};

	snprintf(c.name, sizeof(c.name), "%s", name);
	return kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c);
}

static int create(int fd, const char *name, __u32 nr)
{
	return create_kind(fd, name, nr, KVARENA_MEM_HOST, 0, 0);
}

/* The lower arena is a file arena: the test's agents use its file. */
static bool file_tier;

/* A file arena's frame @h: the file (a new fd) and *@off, or -1. */
static int file_frame(int fd, __u64 h, off_t *off)
{
	struct kvarena_frame_fd ff = { .handle = h };

	if (kva_ioctl(fd, KVARENA_IOC_FRAME_FD, &ff))
		return -1;
	*off = (off_t)ff.offset;
	return ff.fd;
}

/* copy() with the lower frame in a file: pwrite() down, pread() up. */
static int copy_file(int up, int lo, const struct kvarena_tier_job *j,
		     size_t bytes)
{
	bool down = j->op == KVARENA_TIER_DEMOTE;
	char *p = map_frame(up, j->upper, down ? PROT_READ :
						PROT_READ | PROT_WRITE);
	off_t off = 0;
	int fd = file_frame(lo, j->lower, &off);
	ssize_t n = -1;

	if (p && fd >= 0)
		n = down ? pwrite(fd, p, bytes, off) : pread(fd, p, bytes, off);
	if (p)
		munmap(p, FSIZE);
	if (fd >= 0)
		close(fd);
	return n == (ssize_t)bytes ? 0 : -1;
}

static int set_tier(int fd, const char *name, const char *lower,
		    __u32 target)
{
	struct kvarena_arena_tier t = { .free_target = target };

	snprintf(t.name, sizeof(t.name), "%s", name);
	snprintf(t.lower, sizeof(t.lower), "%s", lower);
	return kva_ioctl(fd, KVARENA_IOC_ARENA_SET_TIER, &t);
}

/* TIER take: jobs taken (>= 0) or -errno. */
static int take(int up, int lo, struct kvarena_tier_job *j, __u32 n,
		__u32 timeout_ms)
{
	struct kvarena_tier t = {
		.jobs = (__u64)(unsigned long)j, .count = n,
		.timeout_ms = timeout_ms, .lower_fd = lo,
	};
	int ret = kva_ioctl(up, KVARENA_IOC_TIER, &t);

	return ret ? ret : (int)t.nr_done;
}

static int done(int up, struct kvarena_tier_job *j, __u32 n)
{
	struct kvarena_tier t = {
		.jobs = (__u64)(unsigned long)j, .count = n,
		.flags = KVARENA_TIER_DONE,
	};
	int ret = kva_ioctl(up, KVARENA_IOC_TIER, &t);

	return ret ? ret : (int)t.nr_done;
}

/*
 * Copy job @j's frame, as an agent does; @bytes of it only (the rest is
 * left as it was).  0 or -1.
 */
static int copy(int up, int lo, const struct kvarena_tier_job *j,
		size_t bytes)
{
	if (file_tier)
		return copy_file(up, lo, j, bytes);

	bool down = j->op == KVARENA_TIER_DEMOTE;
	char *src = down ? map_frame(up, j->upper, PROT_READ) :
			   map_frame(lo, j->lower, PROT_READ);
	char *dst = down ? map_frame(lo, j->lower, PROT_READ | PROT_WRITE) :
			   map_frame(up, j->upper, PROT_READ | PROT_WRITE);
	int ret = src && dst ? 0 : -1;

	if (!ret)
		memcpy(dst, src, bytes);
	if (src)
		munmap(src, FSIZE);
	if (dst)
		munmap(dst, FSIZE);
	return ret;
}

/* A root agent of both arenas: its upper and lower clients. */
static void agent_open(const char *up_name, const char *lo_name, int *up,
		       int *lo)
{
	*up = kva_open(O_RDWR);
	*lo = kva_open(O_RDWR);
	CHECK(*up >= 0 && *lo >= 0);
	CHECK_EQ(0, kva_attach(*up, up_name, "agent", 0, 0, NULL));
	CHECK_EQ(0, kva_attach(*lo, lo_name, "agent", 0, 0, NULL));
}

/*
 * Run an agent in a child until it is killed: take, copy, give back.
 * Returns its pid.
 */
static pid_t agent_start(const char *up_name, const char *lo_name)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	int up, lo;

	agent_open(up_name, lo_name, &up, &lo);
	for (;;) {
		struct kvarena_tier_job j[8];
		int n = take(up, lo, j, 8, 100);

		CHECK(n >= 0);
		for (int i = 0; i < n; i++)
			j[i].result = copy(up, lo, &j[i], FSIZE) ? -EIO : 0;
		if (n)
			CHECK_EQ(n, done(up, j, n));
	}
}

static int agent_stop(pid_t pid)
{
	kill(pid, SIGKILL);
	return reap(pid);
}

static bool stat_is(int fd, const char *name, __u32 free, __u32 cached,
		    __u32 held)
{
	struct kvarena_stat s;

	if (kva_stat(fd, name, &s))
		return false;
	if (s.nr_free == free && s.nr_cached == cached && s.nr_held == held)
		return true;
	fprintf(stderr, "# %s: free %u cached %u held %u, want %u %u %u\n",
		name, s.nr_free, s.nr_cached, s.nr_held, free, cached, held);
	return false;
}

/* Wait up to 5 s for the levels (an agent is working meanwhile). */
static bool settles(int fd, const char *name, __u32 free, __u32 cached,
		    __u32 held)
{
	for (int i = 0; i < 500; i++) {
		struct kvarena_stat s;

		if (!kva_stat(fd, name, &s) && s.nr_free == free &&
		    s.nr_cached == cached && s.nr_held == held)
			return true;
		usleep(10000);
	}
	return stat_is(fd, name, free, cached, held);
}

/* A tenant of @uid that publishes @n filled frames and lets them go. */
static int publish_and_leave(const char *name, uid_t uid, __u32 n)
{
	__u64 h[UP_NR];
	int fd = kva_open(O_RDWR);

	drop_to(uid);
	CHECK(fd >= 0);
	CHECK_EQ(0, kva_attach(fd, name, "tenant", 0, 0, NULL));
	CHECK_EQ((int)n, kva_alloc(fd, h, n, 0));
	for (__u32 i = 0; i < n; i++)
		CHECK_EQ(0, fill(fd, h[i], TAG, i));
	CHECK_EQ((int)n, publish(fd, TAG, h, n));
	CHECK_EQ(0, kva_free(fd, h, n));
	close(fd);
	return 0;
}

/* LOOKUP with KVARENA_LOOKUP_LOWER: the run found, and what is below. */
static int lookup_lower(int fd, __u32 n, __u32 *found, __u32 *below)
{
	struct kvarena_prefix_entry e[KVA_TEST_CHAIN];
	struct kvarena_prefix p = {
		.entries = (__u64)(unsigned long)e, .count = n,
		.flags = KVARENA_LOOKUP_LOWER,
	};
	int ret;

	chain(e, n, TAG, 0, NULL);
	ret = kva_ioctl(fd, KVARENA_IOC_LOOKUP, &p);
	*found = p.nr_done;
	*below = p.nr_lower;
	return ret;
}

static int promote(int fd, __u32 first, __u32 n, __u64 *h, __u32 timeout_ms)
{
	struct kvarena_prefix_entry e[KVA_TEST_CHAIN];
	struct kvarena_promote p = {
		.entries = (__u64)(unsigned long)e, .count = n,
		.timeout_ms = timeout_ms,
	};
	int ret;

	chain(e, n, TAG, first, NULL);
	ret = kva_ioctl(fd, KVARENA_IOC_PROMOTE, &p);
	for (__u32 i = 0; !ret && i < p.nr_done; i++)
		h[i] = e[i].handle;
	return ret ? ret : (int)p.nr_done;
}

FIXTURE(tier) {
	int admin;
	int umfd;
	int lmfd;
	char up[32];
	char lo[32];
};

FIXTURE_SETUP(tier)
{
	snprintf(self->up, sizeof(self->up), "tu%d", getpid());
	snprintf(self->lo, sizeof(self->lo), "tl%d", getpid());
	self->admin = kva_open(O_RDWR);
	ASSERT_LE(0, self->admin);
	self->umfd = kva_sealed_memfd((size_t)UP_NR * FSIZE);
	self->lmfd = kva_sealed_memfd((size_t)LO_NR * FSIZE);
	ASSERT_LE(0, self->umfd);
	ASSERT_LE(0, self->lmfd);
	ASSERT_EQ(0, create(self->admin, self->up, UP_NR));
	ASSERT_EQ(0, create(self->admin, self->lo, LO_NR));
	ASSERT_EQ(0, kva_set_backing(self->admin, self->up, 0, UP_NR,
				     self->umfd, 0));
	ASSERT_EQ(0, kva_set_backing(self->admin, self->lo, 0, LO_NR,
				     self->lmfd, 0));
	/* Demote whatever is cached: keep every frame free. */
	ASSERT_EQ(0, set_tier(self->admin, self->up, self->lo, UP_NR));
}

FIXTURE_TEARDOWN(tier)
{
	EXPECT_EQ(0, kva_wait_no_clients(self->admin, self->up));
	EXPECT_EQ(0, kva_wait_no_clients(self->admin, self->lo));
	/* The lower arena goes with the upper one's tier, not before. */
	EXPECT_EQ(-EBUSY, kva_destroy(self->admin, self->lo));
	EXPECT_EQ(0, kva_destroy(self->admin, self->up));
	EXPECT_EQ(0, kva_destroy(self->admin, self->lo));
	close(self->umfd);
	close(self->lmfd);
	close(self->admin);
}

/*
 * uid 1001 publishes 8 frames and leaves; the agent moves them down; a
 * second process of uid 1001 finds them below and promotes them back,
 * byte for byte.  uid 1002 finds nothing below: the tier keeps domains.
 */
TEST_F(tier, a_prefix_goes_down_and_comes_back_byte_exact_in_another_process)
{
	pid_t agent, p;

	p = fork();
	ASSERT_LE(0, p);
	if (!p)
		_exit(publish_and_leave(self->up, 1001, 8));
	ASSERT_EQ(0, reap(p));
	EXPECT_TRUE(stat_is(self->admin, self->up, UP_NR - 8, 8, 0));

	agent = agent_start(self->up, self->lo);
	ASSERT_LT(0, agent);
	/* Down: the upper arena's frames free, the lower arena's cached. */
	EXPECT_TRUE(settles(self->admin, self->up, UP_NR, 0, 0));
	EXPECT_TRUE(settles(self->admin, self->lo, LO_NR - 8, 8, 0));

	p = fork();
	ASSERT_LE(0, p);
	if (!p) {
		__u32 found, below;
		__u64 h[8];
		int fd = kva_open(O_RDWR);

		drop_to(1002);
		CHECK_EQ(0, kva_attach(fd, self->up, "other", 0, 0, NULL));
		CHECK_EQ(0, lookup_lower(fd, 8, &found, &below));
		CHECK_EQ(0, found);
		CHECK_EQ(0, below);
		CHECK_EQ(0, promote(fd, 0, 8, h, 5000));
		_exit(0);
	}
	EXPECT_EQ(0, reap(p));

	p = fork();
	ASSERT_LE(0, p);
	if (!p) {
		__u32 found, below;
		__u64 h[8];
		int fd = kva_open(O_RDWR);

		drop_to(1001);
		CHECK_EQ(0, kva_attach(fd, self->up, "again", 0, 0, NULL));
		CHECK_EQ(0, lookup_lower(fd, 8, &found, &below));
		CHECK_EQ(0, found);
		CHECK_EQ(8, below);
		CHECK_EQ(8, promote(fd, 0, 8, h, 5000));
		for (int i = 0; i < 8; i++) {
			CHECK(intact(fd, h[i], TAG, i));
			/* Published: read-only, as a LOOKUP hit is. */
			CHECK(!map_frame(fd, h[i], PROT_READ | PROT_WRITE));
		}
		/* Now above: LOOKUP finds them, held already. */
		CHECK_EQ(8, lookup(fd, TAG, 0, 8, NULL));
		_exit(0);
	}
	EXPECT_EQ(0, reap(p));
	/* The copies below stay; the frames above went back down (no copy). */
	EXPECT_TRUE(settles(self->admin, self->up, UP_NR, 0, 0));
	EXPECT_TRUE(settles(self->admin, self->lo, LO_NR - 8, 8, 0));
	EXPECT_EQ(0, agent_stop(agent) == 1000 + SIGKILL ? 0 : 1);
}

/*
 * The agent killed after it took its jobs and wrote half of each copy:
 * the upper frames are cached again, whole, and nothing is published or
 * held below; the next agent moves them down whole.
 */
TEST_F(tier, an_agent_killed_mid_copy_loses_nothing)
{
	pid_t agent, p;

	p = fork();
	ASSERT_LE(0, p);
	if (!p)
		_exit(publish_and_leave(self->up, 1001, 4));
	ASSERT_EQ(0, reap(p));

	agent = fork();
	ASSERT_LE(0, agent);
	if (!agent) {
		struct kvarena_tier_job j[8];
		int up, lo, n;

		agent_open(self->up, self->lo, &up, &lo);
		n = take(up, lo, j, 8, 1000);
		CHECK_EQ(4, n);
		for (int i = 0; i < n; i++)
			CHECK_EQ(0, copy(up, lo, &j[i], FSIZE / 2));
		raise(SIGKILL);
	}
	ASSERT_EQ(1000 + SIGKILL, reap(agent));
	EXPECT_TRUE(settles(self->admin, self->up, UP_NR - 4, 4, 0));
	EXPECT_TRUE(settles(self->admin, self->lo, LO_NR, 0, 0));

	p = fork();
	ASSERT_LE(0, p);
	if (!p) {
		__u32 found, below;
		__u64 h[4];
		int fd = kva_open(O_RDWR);

		drop_to(1001);
		CHECK_EQ(0, kva_attach(fd, self->up, "check", 0, 0, NULL));
		CHECK_EQ(0, lookup_lower(fd, 4, &found, &below));
		CHECK_EQ(4, found);
		CHECK_EQ(0, below);
		CHECK_EQ(4, lookup(fd, TAG, 0, 4, h));
		for (int i = 0; i < 4; i++)
			CHECK(intact(fd, h[i], TAG, i));
		_exit(0);
	}
	EXPECT_EQ(0, reap(p));

	agent = agent_start(self->up, self->lo);
	EXPECT_TRUE(settles(self->admin, self->up, UP_NR, 0, 0));
	EXPECT_TRUE(settles(self->admin, self->lo, LO_NR - 4, 4, 0));
	p = fork();
	ASSERT_LE(0, p);
	if (!p) {
		__u64 h[4];
		int fd = kva_open(O_RDWR);

		drop_to(1001);
		CHECK_EQ(0, kva_attach(fd, self->up, "check", 0, 0, NULL));
		CHECK_EQ(4, promote(fd, 0, 4, h, 5000));
		for (int i = 0; i < 4; i++)
			CHECK(intact(fd, h[i], TAG, i));
		_exit(0);
	}
	EXPECT_EQ(0, reap(p));
	agent_stop(agent);
}

/*
 * A promotion whose agent dies mid-copy waits for the next agent, which
 * copies it whole.
 */
TEST_F(tier, a_promotion_outlives_its_agent)
{
	pid_t agent, p, killer;
	int ready[2];
	char byte;

	p = fork();
	ASSERT_LE(0, p);
	if (!p)
		_exit(publish_and_leave(self->up, 1001, 2));
	ASSERT_EQ(0, reap(p));
	agent = agent_start(self->up, self->lo);
	EXPECT_TRUE(settles(self->admin, self->lo, LO_NR - 2, 2, 0));
	agent_stop(agent);
	ASSERT_EQ(0, pipe(ready));

	/* An agent that writes garbage over half of each frame, then dies. */
	killer = fork();
	ASSERT_LE(0, killer);
	if (!killer) {
		struct kvarena_tier_job j[8];
		int up, lo, n = 0;

		agent_open(self->up, self->lo, &up, &lo);
		CHECK_EQ(1, write(ready[1], "r", 1));
		while (!n)
			n = take(up, lo, j, 8, 1000);
		CHECK(n > 0);
		for (int i = 0; i < n; i++) {
			char *d = map_frame(up, j[i].upper,
					    PROT_READ | PROT_WRITE);

			CHECK(d);
			memset(d, 0xee, FSIZE / 2);
		}
		raise(SIGKILL);
	}
	ASSERT_EQ(1, read(ready[0], &byte, 1));
	p = fork();
	ASSERT_LE(0, p);
	if (!p) {
		__u64 h[2];
		int fd = kva_open(O_RDWR);

		drop_to(1001);
		CHECK_EQ(0, kva_attach(fd, self->up, "waiter", 0, 0, NULL));
		CHECK_EQ(2, promote(fd, 0, 2, h, 20000));
		for (int i = 0; i < 2; i++)
			CHECK(intact(fd, h[i], TAG, i));
		_exit(0);
	}
	EXPECT_EQ(1000 + SIGKILL, reap(killer));
	agent = agent_start(self->up, self->lo);
	EXPECT_EQ(0, reap(p));
	agent_stop(agent);
	close(ready[0]);
	close(ready[1]);
}

/*
 * While a copy is under way neither arena may go, nor the tier; a PROMOTE
 * that gives up waiting leaves its copy to end up cached.
 */
TEST_F(tier, copies_under_way_hold_the_tier_and_outlive_their_caller)
{
	struct kvarena_tier_job j[8];
	int up, lo, n, go[2];
	char byte;
	pid_t p;

	p = fork();
	ASSERT_LE(0, p);
	if (!p)
		_exit(publish_and_leave(self->up, 1001, 2));
	ASSERT_EQ(0, reap(p));
	up = kva_open(O_RDWR);
	lo = kva_open(O_RDWR);
	ASSERT_EQ(0, kva_attach(up, self->up, "agent", 0, 0, NULL));
	ASSERT_EQ(0, kva_attach(lo, self->lo, "agent", 0, 0, NULL));
	ASSERT_EQ(2, take(up, lo, j, 8, 1000));
	EXPECT_EQ(-EBUSY, set_tier(self->admin, self->up, "", 0));
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, copy(up, lo, &j[i], FSIZE));
	ASSERT_EQ(2, done(up, j, 2));
	EXPECT_TRUE(stat_is(self->admin, self->lo, LO_NR - 2, 2, 0));

	/* A caller that stops waiting while the agent copies. */
	ASSERT_EQ(0, pipe(go));
	p = fork();
	ASSERT_LE(0, p);
	if (!p) {
		__u64 h[2];
		int fd = kva_open(O_RDWR);

		drop_to(1001);
		CHECK_EQ(0, kva_attach(fd, self->up, "impatient", 0, 0, NULL));
		CHECK_EQ(-ETIMEDOUT, promote(fd, 0, 2, h, 1000));
		CHECK_EQ(1, write(go[1], "t", 1));
		_exit(0);
	}
	n = 0;
	while (!n)
		n = take(up, lo, j, 8, 1000);
	ASSERT_EQ(2, n);
	EXPECT_EQ(KVARENA_TIER_PROMOTE, j[0].op);
	/* The caller is waiting on these: the upper arena cannot go. */
	EXPECT_EQ(-EBUSY, kva_destroy(self->admin, self->up));
	ASSERT_EQ(1, read(go[0], &byte, 1));
	EXPECT_EQ(0, reap(p));
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, copy(up, lo, &j[i], FSIZE));
	ASSERT_EQ(2, done(up, j, 2));
	/* Nobody took them: cached above, and still below. */
	EXPECT_TRUE(stat_is(self->admin, self->up, UP_NR - 2, 2, 0));
	EXPECT_TRUE(stat_is(self->admin, self->lo, LO_NR - 2, 2, 0));
	close(up);
	close(lo);
	close(go[0]);
	close(go[1]);
}

/*
 * A lower arena with no frame to give: nothing goes down, nothing moves
 * above; a private domain's frames never go down.
 */
TEST_F(tier, no_room_below_and_private_domains_keep_frames_above)
{
	struct kvarena_tier_job j[8];
	__u64 hold[LO_NR];
	int up, lo, hog;
	pid_t p;

	hog = kva_open(O_RDWR);
	ASSERT_EQ(0, kva_attach(hog, self->lo, "hog", 0, 0, NULL));
	ASSERT_EQ(LO_NR, kva_alloc(hog, hold, LO_NR, 0));
	p = fork();
	ASSERT_LE(0, p);
	if (!p)
		_exit(publish_and_leave(self->up, 1001, 3));
	ASSERT_EQ(0, reap(p));
	up = kva_open(O_RDWR);
	lo = kva_open(O_RDWR);
	ASSERT_EQ(0, kva_attach(up, self->up, "agent", 0, 0, NULL));
	ASSERT_EQ(0, kva_attach(lo, self->lo, "agent", 0, 0, NULL));
	/* Twice: the first demotion of a domain makes its domain below. */
	EXPECT_EQ(0, take(up, lo, j, 8, 0));
	EXPECT_EQ(0, take(up, lo, j, 8, 0));
	EXPECT_TRUE(stat_is(self->admin, self->up, UP_NR - 3, 3, 0));
	ASSERT_EQ(0, kva_free(hog, hold, LO_NR));
	close(hog);
	/* The lower frames hold root's data: cleared as the agent asks. */
	for (int k = 0, got = 0; got < 3 && k < 50; k++) {
		int n = take(up, lo, j + got, 8 - got, 100);

		ASSERT_LE(0, n);
		got += n;
		if (got == 3) {
			for (int i = 0; i < 3; i++)
				j[i].result = -EIO;
			ASSERT_EQ(3, done(up, j, 3));
		}
	}
	/* Failed copies: all of it still above, nothing below. */
	EXPECT_TRUE(stat_is(self->admin, self->up, UP_NR - 3, 3, 0));
	EXPECT_TRUE(stat_is(self->admin, self->lo, LO_NR, 0, 0));

	p = fork();
	ASSERT_LE(0, p);
	if (!p) {
		struct kvarena_attach at = { .flags = KVARENA_ATTACH_PRIVATE };
		__u64 h[2];
		int fd = kva_open(O_RDWR);

		drop_to(1002);
		snprintf(at.name, sizeof(at.name), "%s", self->up);
		CHECK_EQ(0, kva_ioctl(fd, KVARENA_IOC_ATTACH, &at));
		CHECK_EQ(2, kva_alloc(fd, h, 2, 0));
		CHECK_EQ(2, publish(fd, TAG + 1, h, 2));
		CHECK_EQ(0, kva_free(fd, h, 2));
		/* Its own cache domain dies with it: keep it open. */
		pause();
		_exit(0);
	}
	/* uid 1001's three go down; the private two stay. */
	for (int k = 0; k < 100; k++) {
		int n = take(up, lo, j, 8, 100);

		ASSERT_LE(0, n);
		for (int i = 0; i < n; i++)
			ASSERT_EQ(0, copy(up, lo, &j[i], FSIZE));
		if (n)
			ASSERT_EQ(n, done(up, j, n));
		if (!n && stat_is(self->admin, self->lo, LO_NR - 3, 3, 0))
			break;
	}
	EXPECT_TRUE(stat_is(self->admin, self->up, UP_NR - 2, 2, 0));
	EXPECT_TRUE(stat_is(self->admin, self->lo, LO_NR - 3, 3, 0));
	kill(p, SIGKILL);
	EXPECT_EQ(1000 + SIGKILL, reap(p));
	close(up);
	close(lo);
}

/*
 * An agent EVICT took out keeps its copies until its file goes: neither
 * arena can be destroyed meanwhile, nor can it copy; then all is undone.
 */
TEST_F(tier, an_evicted_agent_holds_the_tier_until_its_file_goes)
{
	struct kvarena_tier_job j[8];
	struct kvarena_attach at;
	struct kvarena_evict ev = { 0 };
	int up, lo;
	pid_t p;

	p = fork();
	ASSERT_LE(0, p);
	if (!p)
		_exit(publish_and_leave(self->up, 1001, 2));
	ASSERT_EQ(0, reap(p));
	up = kva_open(O_RDWR);
	lo = kva_open(O_RDWR);
	ASSERT_EQ(0, kva_attach(up, self->up, "agent", 0, 0, &at));
	ASSERT_EQ(0, kva_attach(lo, self->lo, "agent", 0, 0, NULL));
	ASSERT_EQ(2, take(up, lo, j, 8, 1000));
	snprintf(ev.name, sizeof(ev.name), "%s", self->up);
	ev.client_id = at.client_id;
	ASSERT_EQ(0, kva_ioctl(self->admin, KVARENA_IOC_EVICT, &ev));
	EXPECT_EQ(-EBUSY, kva_destroy(self->admin, self->up));
	EXPECT_EQ(-EBUSY, set_tier(self->admin, self->up, "", 0));
	EXPECT_EQ(-ESHUTDOWN, done(up, j, 2));
	EXPECT_EQ(-ESHUTDOWN, take(up, lo, j, 8, 0));
	close(up);
	close(lo);
	/* Undone: the frames cached above again, nothing below. */
	EXPECT_TRUE(settles(self->admin, self->up, UP_NR - 2, 2, 0));
	EXPECT_TRUE(settles(self->admin, self->lo, LO_NR, 0, 0));
}

/* The link: one arena below, a host one, of the same frame size, no chains. */
TEST_F(tier, set_tier_refuses_what_it_cannot_do)
{
	struct kvarena_arena_tier t = { .flags = 1 };
	char other[32];
	pid_t x;

	snprintf(other, sizeof(other), "tx%d", getpid());
	EXPECT_EQ(-EEXIST, set_tier(self->admin, self->up, self->lo, 0));
	EXPECT_EQ(-ENOENT, set_tier(self->admin, self->up, "no-such", 0));
	EXPECT_EQ(-EINVAL, set_tier(self->admin, self->lo, self->lo, 0));
	EXPECT_EQ(-EINVAL, set_tier(self->admin, self->lo, self->up, 0));
	ASSERT_EQ(0, create(self->admin, other, 4));
	EXPECT_EQ(-EINVAL, set_tier(self->admin, other, self->lo, 0));
	EXPECT_EQ(-EINVAL, set_tier(self->admin, self->lo, other, 0));
	EXPECT_EQ(-ENOENT, set_tier(self->admin, other, "", 0));
	snprintf(t.name, sizeof(t.name), "%s", other);
	EXPECT_EQ(-EINVAL, kva_ioctl(self->admin, KVARENA_IOC_ARENA_SET_TIER,
				     &t));
	t.flags = 0;
	t.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->admin, KVARENA_IOC_ARENA_SET_TIER,
				     &t));
	EXPECT_EQ(-EFAULT, kva_ioctl(self->admin, KVARENA_IOC_ARENA_SET_TIER,
				     (void *)8));
	EXPECT_EQ(0, kva_destroy(self->admin, other));
	x = fork();
	ASSERT_LE(0, x);
	if (!x) {
		int fd = kva_open(O_RDWR);

		drop_to(65534);
		CHECK_EQ(-EPERM, set_tier(fd, self->up, "", 0));
		_exit(0);
	}
	EXPECT_EQ(0, reap(x));
}

/* An agent is the owner's (or root's), over ioctl(), with a lower client. */
TEST_F(tier, tier_refuses_bad_agents_and_unknown_jobs)
{
	const char *no_ring = kva_uring_missing();
	struct kvarena_tier_job j[2] = { { 0 } };
	struct kvarena_tier t = {
		.jobs = (__u64)(unsigned long)j, .count = 2,
	};
	struct io_uring ring;
	int up, lo;
	pid_t x;

	x = fork();
	ASSERT_LE(0, x);
	if (!x) {
		int fd = kva_open(O_RDWR), fl = kva_open(O_RDWR);

		drop_to(65534);
		CHECK_EQ(0, kva_attach(fd, self->up, "nobody", 0, 0, NULL));
		CHECK_EQ(0, kva_attach(fl, self->lo, "nobody", 0, 0, NULL));
		CHECK_EQ(-EPERM, take(fd, fl, j, 2, 0));
		_exit(0);
	}
	EXPECT_EQ(0, reap(x));

	up = kva_open(O_RDWR);
	lo = kva_open(O_RDWR);
	ASSERT_EQ(0, kva_attach(up, self->up, "agent", 0, 0, NULL));
	/* lower_fd: not a client of the lower arena, or not kvarena at all. */
	EXPECT_EQ(-EINVAL, take(up, lo, j, 2, 0));
	EXPECT_EQ(-EINVAL, take(up, up, j, 2, 0));
	EXPECT_EQ(-EINVAL, take(up, self->umfd, j, 2, 0));
	EXPECT_EQ(-EBADF, take(up, 999, j, 2, 0));
	ASSERT_EQ(0, kva_attach(lo, self->lo, "agent", 0, 0, NULL));
	/* Nothing cached: nothing to do. */
	EXPECT_EQ(0, take(up, lo, j, 2, 0));
	/* The lower arena has no tier of its own. */
	EXPECT_EQ(-EOPNOTSUPP, take(lo, up, j, 2, 0));

	t.lower_fd = lo;
	t.count = 0;
	EXPECT_EQ(-EINVAL, kva_ioctl(up, KVARENA_IOC_TIER, &t));
	t.count = 2;
	t.flags = 1u << 5;
	EXPECT_EQ(-EINVAL, kva_ioctl(up, KVARENA_IOC_TIER, &t));
	t.flags = KVARENA_TIER_DONE;
	EXPECT_EQ(-EINVAL, kva_ioctl(up, KVARENA_IOC_TIER, &t));
	t.lower_fd = 0;
	t.reserved0 = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(up, KVARENA_IOC_TIER, &t));
	t.reserved0 = 0;
	/* A job nobody gave. */
	j[0] = (struct kvarena_tier_job){ .upper = 1, .lower = 1,
					  .op = KVARENA_TIER_DEMOTE };
	t.count = 1;
	EXPECT_EQ(-ENOENT, kva_ioctl(up, KVARENA_IOC_TIER, &t));
	t.jobs = 8;
	EXPECT_EQ(-EFAULT, kva_ioctl(up, KVARENA_IOC_TIER, &t));

	t = (struct kvarena_tier){ .jobs = (__u64)(unsigned long)j,
				   .count = 2, .lower_fd = lo };
	if (!no_ring) {
		ASSERT_EQ(0, io_uring_queue_init(2, &ring, 0));
		EXPECT_EQ(-EPERM, kva_uring_one(&ring, up, KVARENA_IOC_TIER, &t, 0));
		io_uring_queue_exit(&ring);
	}
	close(up);
	close(lo);
	KVA_URING_PART_SKIPPED(no_ring);
}

TEST_F(tier, promote_refuses_bad_input_and_misses_quietly)
{
	const char *no_ring = kva_uring_missing();
	struct kvarena_prefix_entry e[2];
	struct kvarena_promote pr = {
		.entries = (__u64)(unsigned long)e, .count = 2,
		.timeout_ms = 100,
	};
	struct kvarena_tier_job j[2];
	struct io_uring ring;
	int up, lo, cl;
	pid_t x;

	/* No agent has asked for work yet: nothing would copy. */
	x = fork();
	ASSERT_LE(0, x);
	if (!x) {
		__u64 h[2];
		int fd = kva_open(O_RDWR);

		drop_to(65534);
		CHECK_EQ(0, kva_attach(fd, self->up, "nobody", 0, 0, NULL));
		CHECK_EQ(-ENODEV, promote(fd, 0, 2, h, 100));
		_exit(0);
	}
	EXPECT_EQ(0, reap(x));
	up = kva_open(O_RDWR);
	lo = kva_open(O_RDWR);
	cl = kva_open(O_RDWR);
	ASSERT_EQ(0, kva_attach(up, self->up, "agent", 0, 0, NULL));
	ASSERT_EQ(0, kva_attach(lo, self->lo, "agent", 0, 0, NULL));
	ASSERT_EQ(0, kva_attach(cl, self->up, "client", 0, 0, NULL));
	EXPECT_EQ(0, take(up, lo, j, 2, 0));

	chain(e, 2, TAG, 0, NULL);
	pr.timeout_ms = 0;
	EXPECT_EQ(-EINVAL, kva_ioctl(cl, KVARENA_IOC_PROMOTE, &pr));
	pr.timeout_ms = KVARENA_PROMOTE_MAX_MS + 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(cl, KVARENA_IOC_PROMOTE, &pr));
	pr.timeout_ms = 100;
	pr.flags = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(cl, KVARENA_IOC_PROMOTE, &pr));
	pr.flags = 0;
	pr.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(cl, KVARENA_IOC_PROMOTE, &pr));
	pr.reserved[0] = 0;
	e[1].reserved = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(cl, KVARENA_IOC_PROMOTE, &pr));
	e[1].reserved = 0;
	memset(e[1].key, 0, sizeof(e[1].key));
	EXPECT_EQ(-EINVAL, kva_ioctl(cl, KVARENA_IOC_PROMOTE, &pr));
	pr.entries = 8;
	EXPECT_EQ(-EFAULT, kva_ioctl(cl, KVARENA_IOC_PROMOTE, &pr));
	/* Nothing below: a miss, not an error. */
	chain(e, 2, TAG, 0, NULL);
	pr.entries = (__u64)(unsigned long)e;
	pr.nr_done = 7;
	EXPECT_EQ(0, kva_ioctl(cl, KVARENA_IOC_PROMOTE, &pr));
	EXPECT_EQ(0, pr.nr_done);
	/* Over io_uring too: from its worker, a miss all the same. */
	if (!no_ring) {
		ASSERT_EQ(0, io_uring_queue_init(2, &ring, 0));
		pr.nr_done = 7;
		EXPECT_EQ(0, kva_uring_one(&ring, cl, KVARENA_IOC_PROMOTE, &pr, 0));
		EXPECT_EQ(0, pr.nr_done);
		pr.flags = 1;
		EXPECT_EQ(-EINVAL, kva_uring_one(&ring, cl, KVARENA_IOC_PROMOTE, &pr,
						 0));
		io_uring_queue_exit(&ring);
	}
	close(cl);
	close(up);
	close(lo);
	KVA_URING_PART_SKIPPED(no_ring);
}

/*
 * PROMOTE over io_uring is asynchronous: the submission returns while no
 * agent runs, the submitter goes on, and the completion comes once an
 * agent has made the copies - byte-exact.  A submitter that exits with
 * its PROMOTE still waiting ends it (the ring's release cancels it):
 * nothing stays held or queued, and the tier is free to go.
 */
TEST_F(tier, a_promotion_over_io_uring_completes_when_the_agent_copies)
{
	int go[2], status;
	pid_t agent, p;
	char c = 0;

	KVA_NEED_URING();
	p = fork();
	ASSERT_LE(0, p);
	if (!p)
		_exit(publish_and_leave(self->up, 1001, 4));
	ASSERT_EQ(0, reap(p));
	agent = agent_start(self->up, self->lo);
	ASSERT_LT(0, agent);
	EXPECT_TRUE(settles(self->admin, self->lo, LO_NR - 4, 4, 0));
	EXPECT_EQ(0, agent_stop(agent) == 1000 + SIGKILL ? 0 : 1);

	/* Submitted with no agent: no completion until one runs. */
	ASSERT_EQ(0, pipe(go));
	p = fork();
	ASSERT_LE(0, p);
	if (!p) {
		struct kvarena_prefix_entry e[4];
		struct kvarena_promote pr = {
			.entries = (__u64)(unsigned long)e, .count = 4,
			.timeout_ms = 20000,
		};
		struct io_uring_cqe *cqe;
		struct io_uring ring;
		int fd = kva_open(O_RDWR);

		close(go[0]);
		drop_to(1001);
		CHECK_EQ(0, kva_attach(fd, self->up, "async", 0, 0, NULL));
		chain(e, 4, TAG, 0, NULL);
		CHECK_EQ(0, io_uring_queue_init(2, &ring, 0));
		kva_queue_cmd(&ring, 0, fd, KVARENA_IOC_PROMOTE, &pr, 0, 0);
		CHECK_EQ(1, io_uring_submit(&ring));
		usleep(200000);
		CHECK_EQ(-EAGAIN, io_uring_peek_cqe(&ring, &cqe));
		CHECK_EQ(1, write(go[1], &c, 1));
		CHECK_EQ(0, io_uring_wait_cqe(&ring, &cqe));
		CHECK_EQ(0, cqe->res);
		CHECK_EQ(4, pr.nr_done);
		for (int i = 0; i < 4; i++)
			CHECK(intact(fd, e[i].handle, TAG, i));
		_exit(0);
	}
	close(go[1]);
	ASSERT_EQ(1, read(go[0], &c, 1));
	close(go[0]);
	agent = agent_start(self->up, self->lo);
	ASSERT_LT(0, agent);
	EXPECT_EQ(0, reap(p));
	/* Their holder gone, the frames above go (their keys are below). */
	EXPECT_TRUE(settles(self->admin, self->up, UP_NR, 0, 0));
	EXPECT_EQ(0, agent_stop(agent) == 1000 + SIGKILL ? 0 : 1);

	/* A submitter that exits with its PROMOTE waiting. */
	p = fork();
	ASSERT_LE(0, p);
	if (!p) {
		struct kvarena_prefix_entry e[4];
		struct kvarena_promote pr = {
			.entries = (__u64)(unsigned long)e, .count = 4,
			.timeout_ms = 600000,
		};
		struct io_uring ring;
		int fd = kva_open(O_RDWR);

		drop_to(1001);
		CHECK_EQ(0, kva_attach(fd, self->up, "gone", 0, 0, NULL));
		chain(e, 4, TAG, 0, NULL);
		CHECK_EQ(0, io_uring_queue_init(2, &ring, 0));
		kva_queue_cmd(&ring, 0, fd, KVARENA_IOC_PROMOTE, &pr, 0, 0);
		CHECK_EQ(1, io_uring_submit(&ring));
		usleep(100000);
		_exit(0);
	}
	ASSERT_EQ(p, waitpid(p, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	EXPECT_EQ(0, kva_wait_no_clients(self->admin, self->up));
	EXPECT_TRUE(settles(self->admin, self->lo, LO_NR - 4, 4, 0));
	EXPECT_EQ(0, set_tier(self->admin, self->up, "", 0));
	EXPECT_EQ(0, set_tier(self->admin, self->up, self->lo, UP_NR));
}

/*
 * A file arena (KVARENA_MEM_FILE) below a host arena: a prefix goes down
 * into the file - its bytes are in the file, each frame whole - and comes
 * back byte-exact to another process of the same uid.  The file is the
 * agent's alone: a client of the file arena gets no FRAME_FD of it.  And
 * what a file arena refuses: a backing not open both ways or too short,
 * flags it cannot honour, a resize, being anything's upper tier.
 */
TEST_F(tier, a_file_below_a_host_arena_keeps_a_prefix_byte_exact)
{
	char tf[32], path[64];
	unsigned char *buf;
	pid_t agent, p;
	int bfd, ro, found = 0;

	snprintf(tf, sizeof(tf), "tf%d", getpid());
	snprintf(path, sizeof(path), "/tmp/kvarena-tier-%d", getpid());
	bfd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ASSERT_LE(0, bfd);
	ASSERT_EQ(0, ftruncate(bfd, (off_t)LO_NR * FSIZE));
	EXPECT_EQ(-EINVAL, create_kind(self->admin, tf, LO_NR,
				       KVARENA_MEM_FILE,
				       KVARENA_CREATE_NO_BACKING, 0));
	EXPECT_EQ(-EINVAL, create_kind(self->admin, tf, LO_NR,
				       KVARENA_MEM_FILE,
				       KVARENA_CREATE_CLEAR_ALWAYS, 0));
	EXPECT_EQ(-EINVAL, create_kind(self->admin, tf, LO_NR,
				       KVARENA_MEM_FILE, 0, 2 * LO_NR));
	ASSERT_EQ(0, create_kind(self->admin, tf, LO_NR, KVARENA_MEM_FILE, 0,
				 LO_NR));
	ro = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, ro);
	EXPECT_EQ(-EBADF, kva_set_backing(self->admin, tf, 0, LO_NR, ro, 0));
	close(ro);
	EXPECT_EQ(-EINVAL, kva_set_backing(self->admin, tf, 0, LO_NR, bfd,
					   FSIZE));
	/* Storage only: not a pseudo filesystem's file, not an anon inode. */
	ro = eventfd(0, EFD_CLOEXEC);
	ASSERT_LE(0, ro);
	EXPECT_EQ(-EINVAL, kva_set_backing(self->admin, tf, 0, LO_NR, ro, 0));
	close(ro);
	ASSERT_EQ(0, kva_set_backing(self->admin, tf, 0, LO_NR, bfd, 0));
	close(bfd);			/* the module keeps the file */
	{
		struct kvarena_arena_resize r = { .nr_frames = LO_NR / 2 };

		snprintf(r.name, sizeof(r.name), "%s", tf);
		EXPECT_EQ(-EOPNOTSUPP, kva_ioctl(self->admin,
						 KVARENA_IOC_ARENA_RESIZE, &r));
	}

	/* The file below the host arena; never a tier of its own. */
	ASSERT_EQ(0, set_tier(self->admin, self->up, "", 0));
	EXPECT_EQ(-EINVAL, set_tier(self->admin, tf, self->lo, 0));
	ASSERT_EQ(0, set_tier(self->admin, self->up, tf, UP_NR));

	p = fork();
	ASSERT_LE(0, p);
	if (!p)
		_exit(publish_and_leave(self->up, 1001, 4));
	ASSERT_EQ(0, reap(p));
	file_tier = true;
	agent = agent_start(self->up, tf);
	file_tier = false;
	ASSERT_LT(0, agent);
	EXPECT_TRUE(settles(self->admin, self->up, UP_NR, 0, 0));
	EXPECT_TRUE(settles(self->admin, tf, LO_NR - 4, 4, 0));

	p = fork();
	ASSERT_LE(0, p);
	if (!p) {
		__u32 found_above, below;
		__u64 h[4];
		off_t off;
		int fd = kva_open(O_RDWR), t = kva_open(O_RDWR);

		drop_to(1001);
		CHECK_EQ(0, kva_attach(fd, self->up, "back", 0, 0, NULL));
		CHECK_EQ(0, lookup_lower(fd, 4, &found_above, &below));
		CHECK_EQ(0, found_above);
		CHECK_EQ(4, below);
		CHECK_EQ(4, promote(fd, 0, 4, h, 5000));
		for (int i = 0; i < 4; i++)
			CHECK(intact(fd, h[i], TAG, i));
		/*
		 * A client of the file arena takes, files and finds nothing
		 * there (its frames are the tier's, never cleared), and gets
		 * no frame's file.
		 */
		CHECK_EQ(0, kva_attach(t, tf, "tenant", 0, 0, NULL));
		CHECK_EQ(-EOPNOTSUPP, kva_alloc(t, h, 1, 0));
		CHECK_EQ(-EOPNOTSUPP, publish(t, TAG, h, 1));
		CHECK_EQ(-EOPNOTSUPP, lookup(t, TAG, 0, 4, NULL));
		CHECK_EQ(-1, file_frame(t, h[0], &off));
		_exit(0);
	}
	EXPECT_EQ(0, reap(p));
	EXPECT_EQ(0, agent_stop(agent) == 1000 + SIGKILL ? 0 : 1);

	/* On the disk: each key's frame whole in the file. */
	bfd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, bfd);
	buf = malloc(FSIZE);
	ASSERT_NE(NULL, buf);
	for (int slot = 0; slot < LO_NR; slot++) {
		ASSERT_EQ(FSIZE, pread(bfd, buf, FSIZE, (off_t)slot * FSIZE));
		for (__u32 i = 0; i < 4; i++) {
			size_t j = 0;

			while (j < FSIZE && buf[j] == pat(TAG, i, j))
				j++;
			found += j == FSIZE;
		}
	}
	free(buf);
	close(bfd);
	EXPECT_EQ(4, found);

	EXPECT_EQ(0, kva_wait_no_clients(self->admin, self->up));
	EXPECT_EQ(0, kva_wait_no_clients(self->admin, tf));
	EXPECT_EQ(-EBUSY, kva_destroy(self->admin, tf));
	ASSERT_EQ(0, set_tier(self->admin, self->up, "", 0));
	EXPECT_EQ(0, kva_destroy(self->admin, tf));
	EXPECT_EQ(0, set_tier(self->admin, self->up, self->lo, UP_NR));
	unlink(path);
}

/* ---- a promotion's frames are its caller's (issue: PROMOTE past max) ---- */

/* The arena's held frames now, by STAT (the admin sees every domain). */
static int held_now(int fd, const char *name)
{
	struct kvarena_stat s;

	return kva_stat(fd, name, &s) ? -1 : (int)s.nr_held;
}

/* Wait up to 5 s for the arena's held frames to reach @n. */
static bool held_reaches(int fd, const char *name, int n)
{
	for (int i = 0; i < 500 && held_now(fd, name) != n; i++)
		usleep(10000);
	return held_now(fd, name) == n;
}

/* CLIENTS: client @id's held frames, or -1 if it is not listed. */
static int client_held(int admin, const char *name, __u32 id)
{
	struct kvarena_client_info rows[16];
	struct kvarena_clients c = {
		.clients = (__u64)(unsigned long)rows, .count = 16 };

	snprintf(c.name, sizeof(c.name), "%s", name);
	if (kva_ioctl(admin, KVARENA_IOC_CLIENTS, &c))
		return -1;
	for (__u32 i = 0; i < c.nr_clients && i < 16; i++)
		if (rows[i].client_id == id)
			return (int)rows[i].held;
	return -1;
}

/* uid 1001 publishes @n frames; an agent moves them all down and stops. */
static bool all_below(const char *up, const char *lo, __u32 n)
{
	int v = kva_open(O_RDONLY);
	pid_t agent, p = fork();
	bool ok;

	if (!p)
		_exit(publish_and_leave(up, 1001, n));
	ok = v >= 0 && p > 0 && reap(p) == 0;
	agent = agent_start(up, lo);
	ok = ok && settles(v, lo, LO_NR - n, n, 0);
	agent_stop(agent);
	ok = ok && stat_is(v, up, UP_NR, 0, 0);
	close(v);
	return ok;
}

/*
 * A client whose max is 1 asks for six keys at once, six PROMOTEs with no
 * agent running: the first one's frame is held by the client from the
 * start (CLIENTS says so), the other five are refused at once, and
 * another uid can still have every other frame of the arena.
 */
TEST_F(tier, a_promotions_frames_count_against_its_callers_max_at_once)
{
	pid_t tenant, agent, p;
	int ids[2];
	__u32 id;

	ASSERT_TRUE(all_below(self->up, self->lo, 6));
	ASSERT_EQ(0, pipe(ids));
	tenant = fork();
	ASSERT_LE(0, tenant);
	if (!tenant) {
		struct kvarena_attach at;
		pid_t kid[6];
		int fd = kva_open(O_RDWR), got[3] = { 0 };

		drop_to(1001);
		CHECK_EQ(0, kva_attach(fd, self->up, "max1", 0, 1, &at));
		CHECK_EQ(sizeof(at.client_id),
			 write(ids[1], &at.client_id, sizeof(at.client_id)));
		for (int i = 0; i < 6; i++) {
			kid[i] = fork();
			CHECK(kid[i] >= 0);
			if (!kid[i]) {
				__u64 h[1];
				int r = promote(fd, i, 1, h, 20000);

				_exit(r == 1 ? 0 : r == -ENOSPC ? 1 : 2);
			}
		}
		for (int i = 0; i < 6; i++) {
			int r = reap(kid[i]);

			CHECK(r >= 0 && r <= 2);
			got[r]++;
		}
		CHECK_EQ(1, got[0]);
		CHECK_EQ(5, got[1]);
		_exit(0);
	}
	ASSERT_EQ(sizeof(id), read(ids[0], &id, sizeof(id)));
	ASSERT_TRUE(held_reaches(self->admin, self->up, 1));
	/* Time for the other five to queue, were they let in. */
	usleep(300000);
	EXPECT_EQ(1, held_now(self->admin, self->up));
	EXPECT_EQ(1, client_held(self->admin, self->up, id));
	p = fork();
	ASSERT_LE(0, p);
	if (!p) {
		__u64 h[UP_NR];
		int fd = kva_open(O_RDWR);

		drop_to(1002);
		CHECK_EQ(0, kva_attach(fd, self->up, "other", 0, 0, NULL));
		CHECK_EQ(UP_NR - 1, kva_alloc(fd, h, UP_NR - 1, 0));
		_exit(0);
	}
	EXPECT_EQ(0, reap(p));
	agent = agent_start(self->up, self->lo);
	EXPECT_EQ(0, reap(tenant));
	agent_stop(agent);
	close(ids[0]);
	close(ids[1]);
}

static int evict(int admin, const char *name, __u32 id)
{
	struct kvarena_evict e = { .client_id = id };

	snprintf(e.name, sizeof(e.name), "%s", name);
	return kva_ioctl(admin, KVARENA_IOC_EVICT, &e);
}

/*
 * A child as uid 1001, client @label of @up, that writes its client id
 * to @ids and runs PROMOTE of the first two keys (60 s): it expects
 * @want, or with @want 0 nothing (it is killed); then, if @go is not
 * negative, waits for a byte on it before it exits.  Its pid.
 */
static pid_t promoting_tenant(const char *up, const char *label, int ids,
			      int want, int go)
{
	pid_t pid = fork();
	struct kvarena_attach at;
	__u64 h[2];
	char byte;
	int fd, r;

	if (pid)
		return pid;
	fd = kva_open(O_RDWR);
	drop_to(1001);
	CHECK_EQ(0, kva_attach(fd, up, label, 0, 0, &at));
	CHECK_EQ(sizeof(at.client_id),
		 write(ids, &at.client_id, sizeof(at.client_id)));
	r = promote(fd, 0, 2, h, 60000);
	if (want)
		CHECK_EQ(want, r);
	/* Its file stays open meanwhile: EVICT has a client to finish. */
	if (go >= 0)
		CHECK_EQ(1, read(go, &byte, 1));
	_exit(want ? 0 : 1);
}

/*
 * EVICT of a client whose PROMOTE waits for an agent: the call ends at
 * once with -ESHUTDOWN and its frames are back before EVICT returns, not
 * when the call's timeout runs out.
 */
TEST_F(tier, evict_ends_the_callers_promotions_and_takes_their_frames)
{
	int ids[2], go[2];
	pid_t tenant;
	__u32 id;

	ASSERT_TRUE(all_below(self->up, self->lo, 2));
	ASSERT_EQ(0, pipe(ids));
	ASSERT_EQ(0, pipe(go));
	tenant = promoting_tenant(self->up, "evicted", ids[1], -ESHUTDOWN,
				  go[0]);
	ASSERT_LE(0, tenant);
	ASSERT_EQ(sizeof(id), read(ids[0], &id, sizeof(id)));
	ASSERT_TRUE(held_reaches(self->admin, self->up, 2));
	EXPECT_EQ(2, client_held(self->admin, self->up, id));
	ASSERT_EQ(0, evict(self->admin, self->up, id));
	EXPECT_TRUE(stat_is(self->admin, self->up, UP_NR, 0, 0));
	EXPECT_TRUE(stat_is(self->admin, self->lo, LO_NR - 2, 2, 0));
	EXPECT_EQ(-1, client_held(self->admin, self->up, id));
	EXPECT_EQ(1, write(go[1], "g", 1));
	EXPECT_EQ(0, reap(tenant));
	close(ids[0]);
	close(ids[1]);
	close(go[0]);
	close(go[1]);
}

/*
 * A caller killed while the agent holds its copies: its client goes at
 * once, charged with nothing; the copies run on, the agent's mapping of
 * their frames intact, and end up cached.
 */
TEST_F(tier, a_killed_callers_copies_under_way_run_on_charged_to_nobody)
{
	struct kvarena_tier_job j[8];
	int up, lo, n = 0, ids[2];
	pid_t tenant;
	__u32 id;

	ASSERT_TRUE(all_below(self->up, self->lo, 2));
	agent_open(self->up, self->lo, &up, &lo);
	ASSERT_EQ(0, pipe(ids));
	tenant = promoting_tenant(self->up, "killed", ids[1], 0, -1);
	ASSERT_LE(0, tenant);
	ASSERT_EQ(sizeof(id), read(ids[0], &id, sizeof(id)));
	while (n < 2) {
		int r = take(up, lo, j + n, 8 - n, 1000);

		ASSERT_LE(0, r);
		n += r;
	}
	ASSERT_EQ(KVARENA_TIER_PROMOTE, j[0].op);
	EXPECT_EQ(2, client_held(self->admin, self->up, id));
	kill(tenant, SIGKILL);
	EXPECT_EQ(1000 + SIGKILL, reap(tenant));
	EXPECT_EQ(-1, client_held(self->admin, self->up, id));
	/* Held by the copies, which the agent finishes undisturbed. */
	EXPECT_EQ(2, held_now(self->admin, self->up));
	for (int i = 0; i < 2; i++)
		EXPECT_EQ(0, copy(up, lo, &j[i], FSIZE));
	EXPECT_EQ(2, done(up, j, 2));
	EXPECT_TRUE(stat_is(self->admin, self->up, UP_NR - 2, 2, 0));
	EXPECT_TRUE(stat_is(self->admin, self->lo, LO_NR - 2, 2, 0));
	close(up);
	close(lo);
	close(ids[0]);
	close(ids[1]);
}

/* Without a tier: LOOKUP counts nothing below, PROMOTE has nowhere to go. */
TEST_F(tier, a_tier_taken_away_is_gone)
{
	__u32 found = 9, below = 9;
	__u64 h[1];
	int x;

	EXPECT_EQ(0, set_tier(self->admin, self->up, "", 0));
	EXPECT_EQ(-ENOENT, set_tier(self->admin, self->up, "", 0));
	/* Not a lower tier any more: it may go. */
	x = kva_open(O_RDWR);
	ASSERT_EQ(0, kva_attach(x, self->up, "late", 0, 0, NULL));
	EXPECT_EQ(0, lookup_lower(x, 2, &found, &below));
	EXPECT_EQ(0, found);
	EXPECT_EQ(0, below);
	EXPECT_EQ(-EOPNOTSUPP, promote(x, 0, 1, h, 10));
	close(x);
	/* Back, for the teardown. */
	EXPECT_EQ(0, set_tier(self->admin, self->up, self->lo, 0));
}

TEST_HARNESS_MAIN
