// SPDX-License-Identifier: GPL-2.0
/*
 * ARENA_RESIZE: an arena shrinks and grows at runtime.  The memory of the
 * frames a shrink takes out goes back - measured on the arena's own
 * backing file (its allocated blocks), which nothing else on the machine
 * moves - and comes back, zeroed, when it grows; a held frame is never
 * taken, and a shrink waits for it; clients allocating and looking up
 * meanwhile see a consistent arena.
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "kselftest_harness.h"
#include "kva_test.h"
#include "kva_tenant.h"
#include "kva_uring.h"

#define NR	64			/* frames at create */
#define MAX	128			/* the table */
#define FSIZE	(64 * 1024)

/* Bytes of memory the backing file has now. */
static long long backing_bytes(int mfd)
{
	struct stat st;

	return fstat(mfd, &st) ? -1 : (long long)st.st_blocks * 512;
}

static int create_max(int fd, const char *name, __u32 nr, __u32 max,
		      __u32 flags, __u32 low_watermark)
{
	struct kvarena_arena_create c = {
		.frame_size = FSIZE,
		.nr_frames = nr,
		.max_frames = max,
		.mem_kind = KVARENA_MEM_HOST,
		.low_watermark = low_watermark,
		.flags = flags,
	};

	snprintf(c.name, sizeof(c.name), "%s", name);
	return kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c);
}

/* RESIZE to @nr (or cancel); the out fields go to @out if given. */
static int resize(int fd, const char *name, __u32 nr, __u32 flags,
		  __u32 timeout_ms, struct kvarena_arena_resize *out)
{
	struct kvarena_arena_resize r = { .nr_frames = nr, .flags = flags,
					  .timeout_ms = timeout_ms };
	int ret;

	snprintf(r.name, sizeof(r.name), "%s", name);
	ret = kva_ioctl(fd, KVARENA_IOC_ARENA_RESIZE, &r);
	if (out)
		*out = r;
	return ret;
}

/* Map frame @h of client @fd, or NULL. */
static char *map_frame(int fd, __u64 h, int prot)
{
	void *p = kva_map_frame(fd, h, prot);

	return p == MAP_FAILED ? NULL : p;
}

/* Write @tag over frame @h; 0 or -1. */
static int fill(int fd, __u64 h, int tag)
{
	char *p = map_frame(fd, h, PROT_READ | PROT_WRITE);

	if (!p)
		return -1;
	memset(p, tag, FSIZE);
	munmap(p, FSIZE);
	return 0;
}

/* Whether every byte of frame @h is @tag. */
static bool holds(int fd, __u64 h, int tag)
{
	char *p = map_frame(fd, h, PROT_READ);
	bool ok = p != NULL;
	size_t i;

	for (i = 0; ok && i < FSIZE; i++)
		ok = p[i] == (char)tag;
	if (p)
		munmap(p, FSIZE);
	return ok;
}

/*
 * A host arena of NR frames in a table of MAX, every frame of the table
 * given backing in one memfd (only those in the arena have pages), and
 * one client.
 */
FIXTURE(rz) {
	int admin;
	int cl;
	int mfd;
	char name[32];
	__u64 h[MAX];
};

FIXTURE_SETUP(rz)
{
	snprintf(self->name, sizeof(self->name), "rz%d", getpid());
	self->admin = kva_open(O_RDWR);
	ASSERT_LE(0, self->admin);
	self->mfd = kva_sealed_memfd((size_t)MAX * FSIZE);
	ASSERT_LE(0, self->mfd);
	ASSERT_EQ(0, create_max(self->admin, self->name, NR, MAX, 0, 8));
	ASSERT_EQ(0, kva_set_backing(self->admin, self->name, 0, MAX,
				     self->mfd, 0));
	self->cl = kva_open(O_RDWR);
	ASSERT_LE(0, self->cl);
	ASSERT_EQ(0, kva_attach(self->cl, self->name, "rz", 0, 0, NULL));
}

FIXTURE_TEARDOWN(rz)
{
	close(self->cl);
	EXPECT_EQ(0, kva_wait_no_clients(self->admin, self->name));
	EXPECT_EQ(0, kva_destroy(self->admin, self->name));
	close(self->mfd);
	close(self->admin);
}

/* STAT's levels add up. */
static bool add_up(const struct kvarena_stat *s)
{
	if (s->nr_free + s->nr_cached + s->nr_held == s->nr_frames &&
	    s->nr_frames + s->nr_absent == s->max_frames &&
	    s->nr_shrinking <= s->nr_frames)
		return true;
	fprintf(stderr, "# levels: free %u cached %u held %u frames %u absent %u max %u shrinking %u\n",
		s->nr_free, s->nr_cached, s->nr_held, s->nr_frames,
		s->nr_absent, s->max_frames, s->nr_shrinking);
	return false;
}

static bool sums(int fd, const char *name)
{
	struct kvarena_stat s;

	return !kva_stat(fd, name, &s) && add_up(&s);
}

/* STAT's levels add up, and say @frames, @absent, @shrinking. */
static bool levels(int fd, const char *name, __u32 frames, __u32 absent,
		   __u32 shrinking)
{
	struct kvarena_stat s;

	if (kva_stat(fd, name, &s) || !add_up(&s))
		return false;
	if (s.nr_frames != frames || s.nr_absent != absent ||
	    s.nr_shrinking != shrinking) {
		fprintf(stderr, "# levels: frames %u absent %u shrinking %u, want %u %u %u\n",
			s.nr_frames, s.nr_absent, s.nr_shrinking, frames,
			absent, shrinking);
		return false;
	}
	return true;
}

TEST_F(rz, only_frames_in_the_arena_have_memory)
{
	struct kvarena_attach at;
	struct kvarena_stat s;
	int c2 = kva_open(O_RDWR);

	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(NR, s.nr_frames);
	EXPECT_EQ(MAX, s.max_frames);
	EXPECT_EQ(MAX - NR, s.nr_absent);
	EXPECT_EQ(0, s.nr_shrinking);
	EXPECT_EQ(MAX, s.nr_backed);
	EXPECT_EQ((long long)NR * FSIZE, backing_bytes(self->mfd));
	ASSERT_EQ(0, kva_attach(c2, self->name, "c2", 0, 0, &at));
	EXPECT_EQ(NR, at.nr_frames);
	close(c2);
	/* No handle of a frame outside the arena is ever given. */
	ASSERT_EQ(NR, kva_alloc(self->cl, self->h, NR, 0));
	EXPECT_EQ(-ENOSPC, kva_alloc(self->cl, self->h + NR, 1, 0));
	for (int i = 0; i < NR; i++)
		EXPECT_GT(NR, KVARENA_HANDLE_IDX(self->h[i]));
}

TEST_F(rz, shrink_by_half_returns_the_memory_and_grow_brings_it_back)
{
	struct kvarena_arena_resize r;
	int i;

	ASSERT_EQ(8, kva_alloc(self->cl, self->h, 8, 0));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, fill(self->cl, self->h[i], 0x40 + i));
	ASSERT_EQ((long long)NR * FSIZE, backing_bytes(self->mfd));

	ASSERT_EQ(0, resize(self->admin, self->name, NR / 2, 0, 0, &r));
	EXPECT_EQ(NR / 2, r.out_frames);
	EXPECT_EQ(0, r.out_shrinking);
	EXPECT_EQ(MAX - NR / 2, r.out_absent);
	EXPECT_TRUE(levels(self->admin, self->name, NR / 2, MAX - NR / 2, 0));
	/* Half the memory is back with the machine, by the call's return. */
	EXPECT_EQ((long long)NR / 2 * FSIZE, backing_bytes(self->mfd));
	/* Held frames stayed where they were, whole. */
	for (i = 0; i < 8; i++)
		EXPECT_TRUE(holds(self->cl, self->h[i], 0x40 + i));
	/* The client sees the new size at its next ALLOC. */
	EXPECT_EQ(-ENOSPC, kva_alloc(self->cl, self->h + 8, NR / 2 - 7, 0));
	ASSERT_EQ(NR / 2 - 8, kva_alloc(self->cl, self->h + 8, NR / 2 - 8, 0));
	ASSERT_EQ(0, kva_free(self->cl, self->h + 8, NR / 2 - 8));

	/* Beyond the size at create, to the table. */
	ASSERT_EQ(0, resize(self->admin, self->name, MAX, 0, 0, &r));
	EXPECT_EQ(MAX, r.out_frames);
	EXPECT_EQ(0, r.out_absent);
	EXPECT_TRUE(levels(self->admin, self->name, MAX, 0, 0));
	EXPECT_EQ((long long)MAX * FSIZE, backing_bytes(self->mfd));
	/* A max of 0 at ATTACH keeps up with the arena. */
	ASSERT_EQ(MAX - 8, kva_alloc(self->cl, self->h + 8, MAX - 8, 0));
	for (i = 0; i < 8; i++)
		EXPECT_TRUE(holds(self->cl, self->h[i], 0x40 + i));
	ASSERT_EQ(0, kva_free(self->cl, self->h, MAX));
}

TEST_F(rz, no_data_outlives_a_shrink)
{
	struct kvarena_attach a = { .flags = KVARENA_ATTACH_PRIVATE };
	int other = kva_open(O_RDWR), i, kept = 0, zero = 0;
	__u64 h2[NR];

	ASSERT_EQ(NR, kva_alloc(self->cl, self->h, NR, 0));
	for (i = 0; i < NR; i++)
		ASSERT_EQ(0, fill(self->cl, self->h[i], 0x5a));
	ASSERT_EQ(0, kva_free(self->cl, self->h, NR));
	/*
	 * Every frame holds the client's data; 60 go out and come back.
	 * Frames the clearing worker has in hand go out as it gives them
	 * back: the wait covers them.
	 */
	ASSERT_EQ(0, resize(self->admin, self->name, 4, 0, 10000, NULL));
	EXPECT_EQ(4LL * FSIZE, backing_bytes(self->mfd));
	ASSERT_EQ(0, resize(self->admin, self->name, NR, 0, 0, NULL));
	/*
	 * Within its own domain a client may get its freed frames back as
	 * they are (unless the worker cleared them meanwhile): at most the 4
	 * that stayed in.  The 60 that went out are new memory.
	 */
	ASSERT_EQ(NR, kva_alloc(self->cl, self->h, NR, 0));
	for (i = 0; i < NR; i++) {
		kept += holds(self->cl, self->h[i], 0x5a);
		zero += holds(self->cl, self->h[i], 0);
	}
	EXPECT_GE(4, kept);
	EXPECT_EQ(NR, kept + zero);
	ASSERT_EQ(0, kva_free(self->cl, self->h, NR));
	/* Another domain gets every frame zeroed. */
	snprintf(a.name, sizeof(a.name), "%s", self->name);
	ASSERT_EQ(0, kva_ioctl(other, KVARENA_IOC_ATTACH, &a));
	ASSERT_EQ(NR, kva_alloc(other, h2, NR, 0));
	for (i = 0; i < NR; i++)
		EXPECT_TRUE(holds(other, h2[i], 0));
	close(other);
}

TEST_F(rz, shrink_never_takes_a_held_frame_and_waits_for_it)
{
	struct kvarena_arena_resize r;
	struct kvarena_stat s;
	int i, status;
	pid_t pid;

	ASSERT_EQ(NR - 4, kva_alloc(self->cl, self->h, NR - 4, 0));
	for (i = 0; i < NR - 4; i++)
		ASSERT_EQ(0, fill(self->cl, self->h[i], i));
	/* 48 asked for, 4 free: 4 now, 44 awaited; no wait asked for. */
	ASSERT_EQ(0, resize(self->admin, self->name, 16, 0, 0, &r));
	EXPECT_EQ(NR - 4, r.out_frames);
	EXPECT_EQ(44, r.out_shrinking);
	EXPECT_TRUE(levels(self->admin, self->name, NR - 4, MAX - NR + 4, 44));
	EXPECT_EQ((long long)(NR - 4) * FSIZE, backing_bytes(self->mfd));
	for (i = 0; i < NR - 4; i++)
		EXPECT_TRUE(holds(self->cl, self->h[i], i));
	/* Pressure: nothing can be had, and the clients are told so. */
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(KVARENA_STATE_PRESSURE, s.state & KVARENA_STATE_PRESSURE);
	EXPECT_EQ(-ENOSPC, kva_alloc(self->cl, self->h + NR, 1, 0));
	/* Each frame freed goes out at once. */
	ASSERT_EQ(0, kva_free(self->cl, self->h, 20));
	EXPECT_TRUE(levels(self->admin, self->name, NR - 24, MAX - NR + 24,
			   24));
	/* A waiting RESIZE returns when the last one comes. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int a = kva_open(O_RDWR);

		if (resize(a, self->name, 16, 0, 20000, &r))
			_exit(1);
		_exit(r.out_shrinking || r.out_frames != 16 ? 2 : 0);
	}
	usleep(200 * 1000);
	ASSERT_EQ(0, kva_free(self->cl, self->h + 20, NR - 24 - 16));
	ASSERT_EQ(0, kva_free(self->cl, self->h + NR - 20, 16));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, kva_exited(status));
	EXPECT_TRUE(levels(self->admin, self->name, 16, MAX - 16, 0));
	EXPECT_EQ(16LL * FSIZE, backing_bytes(self->mfd));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(0, s.state & KVARENA_STATE_PRESSURE);
	EXPECT_EQ(MAX - 16 - (MAX - NR), s.frames_retired);
}

/*
 * Frames a shrink takes out as they are freed give their memory back
 * from a worker; a grow right after must not bring one in before that,
 * nor have the worker take back one it brought in.
 */
TEST_F(rz, a_grow_right_after_frames_went_out_gets_fresh_memory)
{
	int round, i, bad = 0;

	for (round = 0; round < 40 && !bad; round++) {
		ASSERT_EQ(NR, kva_alloc(self->cl, self->h, NR, 0));
		ASSERT_EQ(0, resize(self->admin, self->name, NR / 2, 0, 0, NULL));
		ASSERT_EQ(0, kva_free(self->cl, self->h, NR));
		ASSERT_EQ(0, resize(self->admin, self->name, NR, 0, 0, NULL));
		ASSERT_EQ(NR, kva_alloc(self->cl, self->h, NR, 0));
		for (i = 0; i < NR && !bad; i++)
			bad = fill(self->cl, self->h[i], round) ||
			      !holds(self->cl, self->h[i], round);
		ASSERT_EQ(0, kva_free(self->cl, self->h, NR));
	}
	EXPECT_EQ(0, bad);
	EXPECT_TRUE(levels(self->admin, self->name, NR, MAX - NR, 0));
	EXPECT_EQ((long long)NR * FSIZE, backing_bytes(self->mfd));
}

/* Whether STAT says @frames in the arena and @shrinking awaited. */
static bool quiet_levels(int fd, const char *name, __u32 frames,
			 __u32 shrinking)
{
	struct kvarena_stat s;

	return !kva_stat(fd, name, &s) && s.nr_frames == frames &&
	       s.nr_shrinking == shrinking;
}

/* A tenant of @uid, unprivileged: attach, take @n frames, fill them. */
static int tenant(const char *name, uid_t uid, __u64 *h, int n, int tag)
{
	int fd = kva_open(O_RDWR);

	drop_to(uid);
	CHECK(fd >= 0);
	CHECK_EQ(0, kva_attach(fd, name, "tenant", 0, 0, NULL));
	if (n)
		CHECK_EQ(n, kva_alloc(fd, h, n, 0));
	for (int i = 0; i < n; i++)
		CHECK_EQ(0, fill(fd, h[i], tag));
	return fd;
}

/*
 * Tenants of two other uids, without privileges: a shrink waits for the
 * frames one of them holds and leaves their contents alone, it sees the
 * target in STAT, it may not resize; and after a grow a third uid gets
 * none of their data.
 */
TEST_F(rz, tenants_of_other_uids_keep_their_frames_and_see_the_target)
{
	int go[2], ready[2], i;
	pid_t a, b, c;
	char byte;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	b = fork();
	ASSERT_LE(0, b);
	if (!b) {
		int fd = tenant(self->name, 1002, self->h, 10, 0xb2);

		CHECK_EQ(0, kva_free(fd, self->h, 10));
		_exit(0);
	}
	ASSERT_EQ(0, reap(b));
	a = fork();
	ASSERT_LE(0, a);
	if (!a) {
		int fd = tenant(self->name, 1001, self->h, 40, 0xa1);
		struct kvarena_stat st;

		CHECK_EQ(1, write(ready[1], "r", 1));
		CHECK_EQ(1, read(go[0], &byte, 1));
		for (i = 0; i < 40; i++)
			CHECK(holds(fd, self->h[i], 0xa1));
		CHECK_EQ(0, kva_stat(fd, self->name, &st));
		CHECK_EQ(24, st.nr_shrinking);
		CHECK_EQ(-ENOSPC, kva_alloc(fd, self->h + 40, 1, 0));
		CHECK_EQ(-EPERM, resize(fd, self->name, NR, 0, 0, NULL));
		CHECK_EQ(0, kva_free(fd, self->h, 40));
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &byte, 1));
	/*
	 * 40 held by uid 1001, 24 free (10 with uid 1002's data): to 16.
	 * Frames the clearing worker has in hand go out as it gives them
	 * back: a moment, at most.
	 */
	ASSERT_EQ(0, resize(self->admin, self->name, 16, 0, 0, NULL));
	for (i = 0; i < 500 && !quiet_levels(self->admin, self->name, 40, 24); i++)
		usleep(10000);
	EXPECT_TRUE(levels(self->admin, self->name, 40, MAX - 40, 24));
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(0, reap(a));
	EXPECT_TRUE(levels(self->admin, self->name, 16, MAX - 16, 0));
	ASSERT_EQ(0, resize(self->admin, self->name, NR, 0, 10000, NULL));
	c = fork();
	ASSERT_LE(0, c);
	if (!c) {
		int fd = tenant(self->name, 1003, self->h, 0, 0);

		CHECK_EQ(NR, kva_alloc(fd, self->h, NR, 0));
		for (i = 0; i < NR; i++)
			CHECK(holds(fd, self->h[i], 0));
		_exit(0);
	}
	EXPECT_EQ(0, reap(c));
	close(go[0]);
	close(go[1]);
	close(ready[0]);
	close(ready[1]);
}

TEST_F(rz, a_wait_ends_at_its_timeout_and_the_shrink_goes_on)
{
	struct kvarena_arena_resize r;
	struct timespec t0, t1;
	long ms;

	ASSERT_EQ(NR, kva_alloc(self->cl, self->h, NR, 0));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_EQ(0, resize(self->admin, self->name, NR - 10, 0, 300, &r));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	EXPECT_LE(250, ms);
	EXPECT_EQ(NR, r.out_frames);
	EXPECT_EQ(10, r.out_shrinking);
	ASSERT_EQ(0, kva_free(self->cl, self->h, 12));
	EXPECT_TRUE(levels(self->admin, self->name, NR - 10, MAX - NR + 10, 0));
	/* The other two are free again, in the arena. */
	EXPECT_EQ(2, kva_alloc(self->cl, self->h, 3, KVARENA_ALLOC_PARTIAL));
}

TEST_F(rz, cancel_keeps_what_was_taken_out)
{
	struct kvarena_arena_resize r;

	ASSERT_EQ(NR - 4, kva_alloc(self->cl, self->h, NR - 4, 0));
	ASSERT_EQ(0, resize(self->admin, self->name, 16, 0, 0, &r));
	EXPECT_EQ(44, r.out_shrinking);
	ASSERT_EQ(0, resize(self->admin, self->name, 0, KVARENA_RESIZE_CANCEL,
			    0, &r));
	EXPECT_EQ(NR - 4, r.out_frames);
	EXPECT_EQ(0, r.out_shrinking);
	EXPECT_TRUE(levels(self->admin, self->name, NR - 4, MAX - NR + 4, 0));
	/* Freed frames stay in: nothing waits for them now. */
	ASSERT_EQ(0, kva_free(self->cl, self->h, NR - 4));
	EXPECT_TRUE(levels(self->admin, self->name, NR - 4, MAX - NR + 4, 0));
	ASSERT_EQ(NR - 4, kva_alloc(self->cl, self->h, NR - 4, 0));
}

/*
 * A cancel ends another caller's wait at once, and so does a grow that
 * cuts the shrink it waits for: nothing would ever end it otherwise but
 * its timeout (here a minute; the test's own limit is less).
 */
TEST_F_TIMEOUT(rz, a_cancel_or_a_grow_ends_another_callers_wait, 50)
{
	struct kvarena_arena_resize r;
	int how;

	ASSERT_EQ(NR, kva_alloc(self->cl, self->h, NR, 0));
	for (how = 0; how < 2; how++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (!pid) {
			CHECK_EQ(0, resize(self->admin, self->name, 16, 0,
					   60000, &r));
			CHECK_EQ(0, r.out_shrinking);
			_exit(0);
		}
		/* Once its shrink waits (48 held frames), end it. */
		while (!quiet_levels(self->admin, self->name, NR, 48))
			usleep(1000);
		ASSERT_EQ(0, how ? resize(self->admin, self->name, NR, 0, 0, &r) :
				   resize(self->admin, self->name, 0,
					  KVARENA_RESIZE_CANCEL, 0, &r));
		EXPECT_EQ(0, r.out_shrinking);
		EXPECT_EQ(0, reap(pid));
	}
}

TEST_F(rz, grow_cuts_a_waiting_shrink_first)
{
	struct kvarena_arena_resize r;

	ASSERT_EQ(NR, kva_alloc(self->cl, self->h, NR, 0));
	ASSERT_EQ(0, resize(self->admin, self->name, 16, 0, 0, &r));
	EXPECT_EQ(48, r.out_shrinking);
	ASSERT_EQ(0, resize(self->admin, self->name, 40, 0, 0, &r));
	EXPECT_EQ(NR, r.out_frames);
	EXPECT_EQ(24, r.out_shrinking);
	ASSERT_EQ(0, resize(self->admin, self->name, NR + 8, 0, 0, &r));
	EXPECT_EQ(NR + 8, r.out_frames);
	EXPECT_EQ(0, r.out_shrinking);
	EXPECT_EQ(MAX - NR - 8, r.out_absent);
	EXPECT_EQ((long long)(NR + 8) * FSIZE, backing_bytes(self->mfd));
	EXPECT_EQ(8, kva_alloc(self->cl, self->h + NR, 9, KVARENA_ALLOC_PARTIAL));
}

TEST_F(rz, cached_frames_go_out_oldest_first_and_are_reported)
{
	struct kvarena_events_fd ev = { .flags = KVARENA_EVENTS_NONBLOCK };
	struct kvarena_event *e;
	char buf[4096];
	__u64 again[4];
	ssize_t n;
	int removed = 0;

	snprintf(ev.name, sizeof(ev.name), "%s", self->name);
	ASSERT_EQ(0, kva_ioctl(self->admin, KVARENA_IOC_EVENTS_FD, &ev));
	ASSERT_EQ(NR, kva_alloc(self->cl, self->h, NR, 0));
	ASSERT_EQ(4, publish(self->cl, 7, self->h, 4));
	ASSERT_EQ(4, publish(self->cl, 8, self->h + 4, 4));
	/* Chain 7 is cached first, so it is older. */
	ASSERT_EQ(0, kva_free(self->cl, self->h, 8));
	/* 56 held, 8 cached: a shrink by 4 takes chain 7. */
	ASSERT_EQ(0, resize(self->admin, self->name, NR - 4, 0, 0, NULL));
	EXPECT_TRUE(levels(self->admin, self->name, NR - 4, MAX - NR + 4, 0));
	EXPECT_EQ(0, lookup(self->cl, 7, 0, 4, again));
	EXPECT_EQ(4, lookup(self->cl, 8, 0, 4, again));
	n = read(ev.fd, buf, sizeof(buf));
	for (ssize_t off = 0; n > 0 && off < n; off += e->size) {
		e = (struct kvarena_event *)(buf + off);
		removed += e->type == KVARENA_EVENT_REMOVED;
	}
	EXPECT_EQ(4, removed);
	close(ev.fd);
}

TEST_F(rz, bad_resizes_are_refused_and_change_nothing)
{
	const char *no_ring = kva_uring_missing();
	struct kvarena_arena_resize r = { .nr_frames = 8 };
	struct io_uring ring;
	int ro, c2 = kva_open(O_RDWR), status;
	pid_t pid;

	EXPECT_EQ(-EINVAL, resize(self->admin, self->name, 0, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, resize(self->admin, self->name, MAX + 1, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, resize(self->admin, self->name, 8, 1u << 5, 0, NULL));
	EXPECT_EQ(-EINVAL, resize(self->admin, self->name, 8,
				  KVARENA_RESIZE_CANCEL, 0, NULL));
	EXPECT_EQ(-EINVAL, resize(self->admin, self->name, 0,
				  KVARENA_RESIZE_CANCEL, 10, NULL));
	snprintf(r.name, sizeof(r.name), "%s", self->name);
	r.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->admin, KVARENA_IOC_ARENA_RESIZE, &r));
	r.reserved[1] = 0;
	r.reserved0 = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->admin, KVARENA_IOC_ARENA_RESIZE, &r));
	EXPECT_EQ(-EFAULT, kva_ioctl(self->admin, KVARENA_IOC_ARENA_RESIZE,
				     (void *)8));
	EXPECT_EQ(-ENOENT, resize(self->admin, "no-such-arena", 8, 0, 0, NULL));
	/* Guarantees count: 40 guaranteed does not fit in 32. */
	ASSERT_EQ(0, kva_attach(c2, self->name, "min", 40, 0, NULL));
	EXPECT_EQ(-EBUSY, resize(self->admin, self->name, 32, 0, 0, NULL));
	EXPECT_EQ(0, resize(self->admin, self->name, 40, 0, 0, NULL));
	close(c2);
	EXPECT_TRUE(levels(self->admin, self->name, 40, MAX - 40, 0));
	/* Only administrators, only over ioctl(), only on a writable open. */
	ro = kva_open(O_RDONLY);
	EXPECT_EQ(-EBADF, resize(ro, self->name, 8, 0, 0, NULL));
	close(ro);
	if (!no_ring) {
		ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
		r.reserved0 = 0;
		EXPECT_EQ(-EPERM, kva_uring_one(&ring, self->admin,
						KVARENA_IOC_ARENA_RESIZE, &r, 0));
		io_uring_queue_exit(&ring);
	}
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = kva_open(O_RDWR);

		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(3);
		_exit(resize(fd, self->name, 8, 0, 0, NULL) == -EPERM ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, kva_exited(status));
	EXPECT_TRUE(levels(self->admin, self->name, 40, MAX - 40, 0));
	KVA_URING_PART_SKIPPED(no_ring);
}

TEST(growing_into_frames_without_memory_is_enodata)
{
	int admin = kva_open(O_RDWR), cl = kva_open(O_RDWR);
	int mfd = kva_sealed_memfd((size_t)MAX * FSIZE);
	struct kvarena_arena_resize r;

	ASSERT_LE(0, mfd);
	ASSERT_EQ(0, create_max(admin, "rz-unbacked", NR, MAX, 0, 0));
	EXPECT_EQ(-ENODATA, resize(admin, "rz-unbacked", NR / 2, 0, 0, NULL));
	ASSERT_EQ(0, kva_set_backing(admin, "rz-unbacked", 0, NR, mfd, 0));
	/* Ready with the frames in the arena backed; absent ones need none. */
	ASSERT_EQ(0, kva_attach(cl, "rz-unbacked", "c", 0, 0, NULL));
	EXPECT_EQ((long long)NR * FSIZE, backing_bytes(mfd));
	EXPECT_EQ(-ENODATA, resize(admin, "rz-unbacked", NR + 1, 0, 0, NULL));
	EXPECT_TRUE(levels(admin, "rz-unbacked", NR, MAX - NR, 0));
	/* Memory given to absent frames is not pinned until they come in. */
	ASSERT_EQ(0, kva_set_backing(admin, "rz-unbacked", NR, 8, mfd,
				     (__u64)NR * FSIZE));
	EXPECT_EQ((long long)NR * FSIZE, backing_bytes(mfd));
	EXPECT_EQ(-ENODATA, resize(admin, "rz-unbacked", NR + 9, 0, 0, NULL));
	ASSERT_EQ(0, resize(admin, "rz-unbacked", NR + 8, 0, 0, &r));
	EXPECT_EQ(NR + 8, r.out_frames);
	EXPECT_EQ((long long)(NR + 8) * FSIZE, backing_bytes(mfd));
	close(cl);
	EXPECT_EQ(0, kva_wait_no_clients(admin, "rz-unbacked"));
	EXPECT_EQ(0, kva_destroy(admin, "rz-unbacked"));
	close(mfd);
	close(admin);
}

TEST(an_accounting_arena_resizes_without_memory)
{
	int admin = kva_open(O_RDWR), cl = kva_open(O_RDWR);
	__u64 h[MAX];

	ASSERT_EQ(0, create_max(admin, "rz-acct", NR, MAX,
				KVARENA_CREATE_NO_BACKING, 0));
	ASSERT_EQ(0, kva_attach(cl, "rz-acct", "c", 0, 0, NULL));
	ASSERT_EQ(0, resize(admin, "rz-acct", MAX, 0, 0, NULL));
	ASSERT_EQ(MAX, kva_alloc(cl, h, MAX, 0));
	ASSERT_EQ(0, kva_free(cl, h, MAX));
	ASSERT_EQ(0, resize(admin, "rz-acct", 1, 0, 0, NULL));
	EXPECT_TRUE(levels(admin, "rz-acct", 1, MAX - 1, 0));
	EXPECT_EQ(-ENOSPC, kva_alloc(cl, h, 2, 0));
	close(cl);
	EXPECT_EQ(0, kva_destroy(admin, "rz-acct"));
	close(admin);
}

TEST(stat_of_the_struct_before_resize_still_answers)
{
	int admin = kva_open(O_RDWR);
	unsigned char buf[sizeof(struct kvarena_stat) + 16];
	struct kvarena_stat *s = (struct kvarena_stat *)buf;
	size_t i;

	ASSERT_EQ(0, create_max(admin, "rz-v1", NR, MAX,
				KVARENA_CREATE_NO_BACKING, 0));
	memset(buf, 0xa5, sizeof(buf));
	memset(buf, 0, KVARENA_STAT_SIZE_V1);
	snprintf(s->name, sizeof(s->name), "rz-v1");
	ASSERT_EQ(0, kva_ioctl(admin, KVARENA_IOC_STAT_V1, buf));
	EXPECT_EQ(NR, s->nr_frames);
	EXPECT_EQ(NR, s->nr_free);
	/* Not a byte past the old struct is written. */
	for (i = KVARENA_STAT_SIZE_V1; i < sizeof(buf); i++)
		ASSERT_EQ(0xa5, buf[i]);
	EXPECT_EQ(0, kva_destroy(admin, "rz-v1"));
	close(admin);
}

/* A CUDA arena's frame @i gets memory of its own: a memfd, as in scrub_test. */
static int cuda_frame_memory(int admin, const char *name, __u32 i)
{
	int mfd = memfd_create("frame", MFD_CLOEXEC), ret;

	if (mfd < 0 || ftruncate(mfd, FSIZE))
		return -errno;
	ret = kva_set_backing(admin, name, i, 1, mfd, 0);
	close(mfd);
	return ret;
}

/* SET_BACKING of new memory that worked, frame by frame. */
static int cuda_frames_given_memory(int admin, const char *name, __u32 n)
{
	int took = 0;

	for (__u32 i = 0; i < n; i++)
		took += !cuda_frame_memory(admin, name, i);
	return took;
}

/*
 * The importer: takes all @n frames of "rz-cuda", imports each (FRAME_FD,
 * mapped), frees them while a shrink waits; with @drop, later lets go of
 * its imports and says so (IMPORTS_DROPPED).  Steps on the pipes.
 */
static int cuda_importer(int n, int ready, int go, bool drop)
{
	struct kvarena_imports_dropped d = { .nr_done = 0xdead };
	int fd = tenant("rz-cuda", 1001, NULL, 0, 0);
	__u64 h[8];
	void *m[8];
	char b;

	CHECK_EQ(n, kva_alloc(fd, h, n, 0));
	for (int i = 0; i < n; i++) {
		struct kvarena_frame_fd ff = { .handle = h[i] };

		CHECK_EQ(0, kva_ioctl(fd, KVARENA_IOC_FRAME_FD, &ff));
		m[i] = mmap(NULL, FSIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
			    ff.fd, 0);
		CHECK(m[i] != MAP_FAILED);
		close(ff.fd);
	}
	CHECK_EQ(1, write(ready, "i", 1));
	CHECK_EQ(1, read(go, &b, 1));
	/* Freed while a shrink waits: all but one go out; still imported. */
	CHECK_EQ(0, kva_free(fd, h, n));
	CHECK_EQ(1, write(ready, "f", 1));
	CHECK_EQ(1, read(go, &b, 1));
	if (drop) {
		for (int i = 0; i < n; i++)
			CHECK_EQ(0, munmap(m[i], FSIZE));
		CHECK_EQ(0, kva_ioctl(fd, KVARENA_IOC_IMPORTS_DROPPED, &d));
		CHECK_EQ(n - 1, d.nr_done);
		/* Said twice: nothing more to forget. */
		CHECK_EQ(0, kva_ioctl(fd, KVARENA_IOC_IMPORTS_DROPPED, &d));
		CHECK_EQ(0, d.nr_done);
		CHECK_EQ(1, write(ready, "d", 1));
		CHECK_EQ(1, read(go, &b, 1));
	}
	return 0;
}

/*
 * A CUDA frame that a shrink took out lost its memory; a process that
 * imported that memory (FRAME_FD, mapped: what the GPU driver's import
 * is, and libkvarena keeps a frame's import until it lets go after a
 * shrink or kva_close()) would map it again, not the frame's new memory,
 * when it got the frame back.  So the frame takes new memory only once
 * every such process has exited (@drop false) or said it let go
 * (IMPORTS_DROPPED, @drop true).  The VM has no GPU: each frame's memory
 * is a memfd, and an import is a mapping of it (as in scrub_test).
 */
static void cuda_regrow(struct __test_metadata *_metadata, bool drop)
{
	enum { N = 4 };
	struct kvarena_arena_create c = { .frame_size = FSIZE, .nr_frames = N,
					  .max_frames = N,
					  .mem_kind = KVARENA_MEM_CUDA };
	int admin = kva_open(O_RDWR), ready[2], go[2];
	struct kvarena_arena_resize r;
	pid_t pid;
	char b;

	snprintf(c.name, sizeof(c.name), "rz-cuda");
	ASSERT_EQ(0, kva_ioctl(admin, KVARENA_IOC_ARENA_CREATE, &c));
	for (__u32 i = 0; i < N; i++)
		ASSERT_EQ(0, cuda_frame_memory(admin, "rz-cuda", i));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(cuda_importer(N, ready[1], go[0], drop));
	ASSERT_EQ(1, read(ready[0], &b, 1));
	ASSERT_EQ(0, resize(admin, "rz-cuda", 1, 0, 0, &r));
	EXPECT_EQ(N - 1, r.out_shrinking);
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(1, read(ready[0], &b, 1));
	/* Done now, and the memory of the frames taken out let go. */
	ASSERT_EQ(0, resize(admin, "rz-cuda", 1, 0, 0, &r));
	EXPECT_EQ(0, r.out_shrinking);
	EXPECT_EQ(N - 1, r.out_absent);
	/* Their importer holds their old memory: none takes new memory. */
	EXPECT_EQ(0, cuda_frames_given_memory(admin, "rz-cuda", N));
	EXPECT_EQ(-ENODATA, resize(admin, "rz-cuda", N, 0, 0, NULL));
	ASSERT_EQ(1, write(go[1], "g", 1));
	if (drop) {
		ASSERT_EQ(1, read(ready[0], &b, 1));
	} else {
		EXPECT_EQ(0, reap(pid));
	}
	/* Let go, or gone: the frames out take new memory, and come in. */
	EXPECT_EQ(N - 1, cuda_frames_given_memory(admin, "rz-cuda", N));
	ASSERT_EQ(0, resize(admin, "rz-cuda", N, 0, 0, &r));
	EXPECT_EQ(N, r.out_frames);
	EXPECT_EQ(0, r.out_absent);
	if (drop) {
		ASSERT_EQ(1, write(go[1], "g", 1));
		EXPECT_EQ(0, reap(pid));
	}
	EXPECT_EQ(0, kva_wait_no_clients(admin, "rz-cuda"));
	EXPECT_EQ(0, kva_destroy(admin, "rz-cuda"));
	close(admin);
}

TEST(cuda_frames_take_new_memory_once_their_importers_have_exited)
{
	cuda_regrow(_metadata, false);
}

TEST(cuda_frames_take_new_memory_once_their_importers_let_go)
{
	cuda_regrow(_metadata, true);
}

/* IMPORTS_DROPPED by a tenant of uid 65534: taken, nothing to forget. */
static int unprivileged_drops_nothing(const char *name)
{
	struct kvarena_imports_dropped d = { .nr_done = 7 };
	int fd = tenant(name, 65534, NULL, 0, 0);

	CHECK_EQ(0, kva_ioctl(fd, KVARENA_IOC_IMPORTS_DROPPED, &d));
	CHECK_EQ(0, d.nr_done);
	return 0;
}

/*
 * IMPORTS_DROPPED's refusals: a file not attached, a read-only one, an
 * unknown flag, a reserved field, a bad pointer, an evicted client; over
 * io_uring as over ioctl(); an unprivileged tenant may say it too.
 */
TEST_F(rz, imports_dropped_checks_its_caller_and_its_struct)
{
	const char *no_ring = kva_uring_missing();
	struct kvarena_imports_dropped d = { 0 };
	struct kvarena_evict ev = { 0 };
	struct kvarena_attach at;
	int loose = kva_open(O_RDWR), ro = kva_open(O_RDONLY);
	int victim = kva_open(O_RDWR);
	struct io_uring ring;
	pid_t pid;

	ASSERT_EQ(-ENOTCONN, kva_ioctl(loose, KVARENA_IOC_IMPORTS_DROPPED, &d));
	ASSERT_EQ(-EBADF, kva_ioctl(ro, KVARENA_IOC_IMPORTS_DROPPED, &d));
	d.flags = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->cl, KVARENA_IOC_IMPORTS_DROPPED, &d));
	d.flags = 0;
	d.reserved[2] = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->cl, KVARENA_IOC_IMPORTS_DROPPED, &d));
	d.reserved[2] = 0;
	EXPECT_EQ(-EFAULT, kva_ioctl(self->cl, KVARENA_IOC_IMPORTS_DROPPED, NULL));
	/* A host arena has no imports to forget. */
	d.nr_done = 7;
	EXPECT_EQ(0, kva_ioctl(self->cl, KVARENA_IOC_IMPORTS_DROPPED, &d));
	EXPECT_EQ(0, d.nr_done);
	if (!no_ring) {
		ASSERT_EQ(0, io_uring_queue_init(2, &ring, 0));
		d.nr_done = 7;
		EXPECT_EQ(0, kva_uring_one(&ring, self->cl, KVARENA_IOC_IMPORTS_DROPPED,
					   &d, 0));
		EXPECT_EQ(0, d.nr_done);
		io_uring_queue_exit(&ring);
	}
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(unprivileged_drops_nothing(self->name));
	EXPECT_EQ(0, reap(pid));
	/* An evicted client says nothing any more. */
	ASSERT_EQ(0, kva_attach(victim, self->name, "victim", 0, 0, &at));
	snprintf(ev.name, sizeof(ev.name), "%s", self->name);
	ev.client_id = at.client_id;
	ASSERT_EQ(0, kva_ioctl(self->admin, KVARENA_IOC_EVICT, &ev));
	EXPECT_EQ(-ESHUTDOWN,
		  kva_ioctl(victim, KVARENA_IOC_IMPORTS_DROPPED, &d));
	close(victim);
	close(ro);
	close(loose);
	KVA_URING_PART_SKIPPED(no_ring);
}

/*
 * Clients allocate, write, check, publish, look up and free while the
 * arena shrinks and grows under them: no frame of theirs ever changes,
 * and the levels add up at the end.
 */
#define WORKERS	3
#define ROUNDS	150

static int worker(const char *name, int w)
{
	int fd = kva_open(O_RDWR), round, bad = 0;
	__u64 h[8], got[4];

	if (kva_attach(fd, name, "worker", 0, 0, NULL))
		return 10;
	for (round = 0; round < ROUNDS && !bad; round++) {
		int n = kva_alloc(fd, h, 8, KVARENA_ALLOC_PARTIAL), i;

		if (n == -ENOSPC) {
			usleep(1000);
			continue;
		}
		if (n < 0)
			return 11;
		for (i = 0; i < n && !bad; i++)
			bad = fill(fd, h[i], w * 16 + i) ? 12 : 0;
		for (i = 0; i < n && !bad; i++)
			bad = holds(fd, h[i], w * 16 + i) ? 0 : 13;
		if (!bad && n >= 2 && publish(fd, 1000 * w + round, h, 2) != 2)
			bad = 14;
		if (!bad && kva_free(fd, h, n))
			bad = 15;
		/* The last round's prefix, if it is still cached. */
		n = round ? lookup(fd, 1000 * w + round - 1, 0, 2, got) : 0;
		if (!bad && n < 0 && n != -ENOSPC)
			bad = 16;
		if (!bad && n > 0 && !holds(fd, got[0], w * 16))
			bad = 17;
		if (!bad && n > 0 && kva_free(fd, got, n))
			bad = 18;
	}
	close(fd);
	return bad;
}

TEST_F(rz, clients_work_on_while_the_arena_shrinks_and_grows)
{
	static const __u32 sizes[] = { 16, MAX, 8, NR, 24, MAX / 2, 12, NR };
	pid_t pid[WORKERS];
	int w, status, i = 0;

	for (w = 0; w < WORKERS; w++) {
		pid[w] = fork();
		ASSERT_LE(0, pid[w]);
		if (!pid[w])
			_exit(worker(self->name, w + 1));
	}
	for (;;) {
		bool running = false;

		for (w = 0; w < WORKERS; w++)
			if (pid[w] && waitpid(pid[w], &status, WNOHANG) == pid[w]) {
				EXPECT_EQ(0, kva_exited(status));
				pid[w] = 0;
			}
		for (w = 0; w < WORKERS; w++)
			running |= pid[w] != 0;
		if (!running)
			break;
		EXPECT_EQ(0, resize(self->admin, self->name,
				    sizes[i++ % ARRAY_SIZE(sizes)], 0, 20, NULL));
		EXPECT_TRUE(sums(self->admin, self->name));
	}
	/* Frames the clearing worker holds go out as it gives them back. */
	ASSERT_EQ(0, resize(self->admin, self->name, NR, 0, 10000, NULL));
	EXPECT_LT(4, i);
	EXPECT_TRUE(levels(self->admin, self->name, NR, MAX - NR, 0));
	EXPECT_EQ((long long)NR * FSIZE, backing_bytes(self->mfd));
}

TEST_HARNESS_MAIN
