// SPDX-License-Identifier: GPL-2.0
/*
 * Scrubbing a CUDA arena's frames between cache domains, against the real
 * module in the VM.  The VM has no GPU, so the arena is a CUDA arena whose
 * frames are memfds (one a frame, as CUDA exports one allocation a frame),
 * and "importing" a frame is mapping its fd: like a CUDA import, the
 * module cannot revoke that mapping.  The scrubber here is the arena
 * owner's own code (root), clearing with memset() through the fd
 * FRAME_FD gave it - what `kvarenactl scrub` does with cuMemsetD8Async().
 *
 * A victim (uid 1001) and an attacker (uid 65534), as in tenancy_test:
 * the attacker never gets a byte of the victim's, neither before the
 * frame is scrubbed nor while a victim's process that imported it lives.
 */
#include <liburing.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "kva_test.h"
#include "kva_tenant.h"
#include "kva_uring.h"

#define NR	8
#define FSIZE	(64u << 10)
#define VICTIM	1001
#define NOBODY	65534
#define ARENA	"scrub"

static const char secret[] = "my SSN is 078-05-1120";

static int scrub_cmd(int fd, __u64 *h, __u32 count, __u32 flags,
		     __u32 timeout_ms, __u32 *done)
{
	struct kvarena_scrub s = { .handles = (uintptr_t)h, .count = count,
				   .flags = flags, .timeout_ms = timeout_ms,
				   .nr_done = 0xdead };
	int ret = kva_ioctl(fd, KVARENA_IOC_SCRUB, &s);

	if (done)
		*done = s.nr_done;
	return ret ? ret : (int)s.nr_done;
}

/* Take up to @count frames to clear; the number taken or -errno. */
static int scrub_take(int fd, __u64 *h, __u32 count, __u32 timeout_ms)
{
	return scrub_cmd(fd, h, count, 0, timeout_ms, NULL);
}

static int scrub_done(int fd, const __u64 *h, __u32 count)
{
	return scrub_cmd(fd, (__u64 *)h, count, KVARENA_SCRUB_DONE, 0, NULL);
}

/* A client of the arena, or exit. */
static int attach(const char *label)
{
	struct kvarena_attach a = { 0 };
	int fd = kva_open(O_RDWR);

	CHECK_EQ(1, fd >= 0);
	strcpy(a.name, ARENA);
	snprintf(a.label, sizeof(a.label), "%s", label);
	CHECK_EQ(0, kva_ioctl(fd, KVARENA_IOC_ATTACH, &a));
	return fd;
}

/* Import frame @h: map the fd FRAME_FD gives, as cuMemImport... would. */
static unsigned char *import(int fd, __u64 h)
{
	struct kvarena_frame_fd ff;
	void *p;

	CHECK_EQ(0, kva_frame_fd(fd, h, &ff));
	CHECK_EQ(FSIZE, ff.size);
	p = mmap(NULL, FSIZE, PROT_READ | PROT_WRITE, MAP_SHARED, ff.fd,
		 ff.offset);
	close(ff.fd);
	CHECK_EQ(1, p != MAP_FAILED);
	return p;
}

/* Clear frames @h[0..n) as a scrubber does, and give them back. */
static int clear_and_give_back(int fd, const __u64 *h, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		unsigned char *p = import(fd, h[i]);

		memset(p, 0, FSIZE);
		munmap(p, FSIZE);
	}
	return scrub_done(fd, h, n);
}

/* Scrub until the module offers nothing more; the frames cleared. */
static int scrub_all(int fd)
{
	__u64 h[NR];
	int n, total = 0;

	while ((n = scrub_take(fd, h, NR, 0)) > 0) {
		if (clear_and_give_back(fd, h, n) != n)
			return -1;
		total += n;
	}
	return n < 0 ? n : total;
}

FIXTURE(scrub) {
	int admin;
	int owner;	/* the scrubber's client: root, the arena's owner */
	mode_t mode;
};

static int make_cuda_arena(int admin, __u32 flags)
{
	struct kvarena_arena_create c = { .frame_size = FSIZE, .nr_frames = NR,
					  .mem_kind = KVARENA_MEM_CUDA,
					  .flags = flags };
	int i, mfd, ret;

	strcpy(c.name, ARENA);
	ret = kva_ioctl(admin, KVARENA_IOC_ARENA_CREATE, &c);
	for (i = 0; !ret && i < NR; i++) {
		mfd = memfd_create("frame", MFD_CLOEXEC);
		if (mfd < 0 || ftruncate(mfd, FSIZE))
			return -errno;
		ret = kva_set_backing(admin, ARENA, i, 1, mfd, 0);
		close(mfd);
	}
	return ret;
}

FIXTURE_SETUP(scrub)
{
	struct stat st;

	self->admin = kva_open(O_RDWR);
	ASSERT_LE(0, self->admin);
	kva_destroy(self->admin, ARENA);
	ASSERT_EQ(0, make_cuda_arena(self->admin, 0));
	self->owner = kva_open(O_RDWR);
	ASSERT_LE(0, self->owner);
	ASSERT_EQ(0, kva_attach(self->owner, ARENA, "scrubber", 0, 0, NULL));
	ASSERT_EQ(0, stat(KVARENA_DEVICE, &st));
	self->mode = st.st_mode & 07777;
	ASSERT_EQ(0, chmod(KVARENA_DEVICE, 0666));
}

FIXTURE_TEARDOWN(scrub)
{
	chmod(KVARENA_DEVICE, self->mode);
	close(self->owner);
	EXPECT_EQ(0, kva_wait_no_clients(self->admin, ARENA));
	EXPECT_EQ(0, kva_destroy(self->admin, ARENA));
	close(self->admin);
}

/* Every frame imported, filled with the secret, freed; then it exits. */
static int victim_fills_and_frees(void *arg)
{
	int fd = attach("victim"), i, n = arg ? *(int *)arg : NR;
	__u64 h[NR];

	CHECK_EQ(n, kva_alloc(fd, h, n, 0));
	for (i = 0; i < n; i++) {
		unsigned char *p = import(fd, h[i]);

		memset(p, 0x5a, FSIZE);
		memcpy(p, secret, sizeof(secret));
		munmap(p, FSIZE);
	}
	CHECK_EQ(0, kva_free(fd, h, n));
	return 0;
}

/* Refused: nothing clean; and poll() does not promise what it cannot give. */
static int attacker_is_refused(void *arg)
{
	int fd = attach("attacker");
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	__u64 h[NR];

	(void)arg;
	CHECK_EQ(-ENOSPC, kva_alloc(fd, h, NR, 0));
	CHECK_EQ(0, poll(&pfd, 1, 0));
	return 0;
}

/* Takes the whole arena: every byte must be zero. */
static int attacker_reads_everything(void *arg)
{
	int fd = attach("attacker"), i;
	__u64 h[NR];

	(void)arg;
	CHECK_EQ(NR, kva_alloc(fd, h, NR, 0));
	for (i = 0; i < NR; i++) {
		unsigned char *p = import(fd, h[i]);

		CHECK_EQ(1, all_zero(p, FSIZE));
		munmap(p, FSIZE);
	}
	return 0;
}

TEST_F(scrub, frames_reach_another_domain_only_through_the_scrubber)
{
	struct kvarena_stat s;

	ASSERT_EQ(0, as_uid(VICTIM, victim_fills_and_frees, NULL));
	ASSERT_EQ(0, kva_stat(self->admin, ARENA, &s));
	EXPECT_EQ(NR, s.nr_free);
	EXPECT_EQ(NR, s.nr_dirty);
	EXPECT_EQ(0, s.nr_quarantined);
	EXPECT_EQ(0, as_uid(NOBODY, attacker_is_refused, NULL));
	EXPECT_EQ(NR, scrub_all(self->owner));
	ASSERT_EQ(0, kva_stat(self->admin, ARENA, &s));
	EXPECT_EQ(0, s.nr_dirty);
	EXPECT_EQ(NR, s.frames_cleared);
	EXPECT_EQ(0, as_uid(NOBODY, attacker_reads_everything, NULL));
}

/* The victim again: its own dirty frames come back as they were. */
static int victim_gets_its_own_back(void *arg)
{
	int fd = attach("victim"), i, kept = 0;
	__u64 h[NR];

	(void)arg;
	CHECK_EQ(NR, kva_alloc(fd, h, NR, 0));
	for (i = 0; i < NR; i++) {
		unsigned char *p = import(fd, h[i]);

		kept += !memcmp(p, secret, sizeof(secret));
		munmap(p, FSIZE);
	}
	CHECK_EQ(NR, kept);
	return 0;
}

TEST_F(scrub, reuse_within_a_domain_needs_no_scrubber)
{
	ASSERT_EQ(0, as_uid(VICTIM, victim_fills_and_frees, NULL));
	EXPECT_EQ(0, as_uid(VICTIM, victim_gets_its_own_back, NULL));
}

/*
 * A victim's process keeps its import of a frame it freed (a CUDA import
 * survives the free); it says so on @ready and exits when @go closes.
 */
static pid_t victim_keeps_an_import(int *ready_rd, int *go_wr)
{
	int ready[2], go[2];
	pid_t pid;

	if (pipe(ready) || pipe(go))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct kvarena_imports_dropped d = { 0 };
		unsigned char *p, c;
		__u64 h;
		int fd;

		close(ready[0]);
		close(go[1]);
		drop_to(VICTIM);
		fd = attach("victim");
		CHECK_EQ(1, kva_alloc(fd, &h, 1, 0));
		p = import(fd, h);
		memcpy(p, secret, sizeof(secret));
		CHECK_EQ(0, kva_free(fd, &h, 1));
		/* A lie, and of a frame in the arena: it changes nothing. */
		CHECK_EQ(0, kva_ioctl(fd, KVARENA_IOC_IMPORTS_DROPPED, &d));
		CHECK_EQ(0, d.nr_done);
		close(fd);
		CHECK_EQ(1, write(ready[1], "r", 1));
		/* Until told: then the mapping must still hold the secret. */
		CHECK_EQ(0, read(go[0], &c, 1));
		CHECK_EQ(0, memcmp(p, secret, sizeof(secret)));
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	*ready_rd = ready[0];
	*go_wr = go[1];
	return pid;
}

TEST_F(scrub, a_frame_stays_in_its_domain_while_its_importer_lives)
{
	struct kvarena_stat s;
	int ready, go, i;
	__u64 h[NR];
	char c;
	pid_t pid;

	pid = victim_keeps_an_import(&ready, &go);
	ASSERT_LT(0, pid);
	ASSERT_EQ(1, read(ready, &c, 1));
	/* The victim's client is gone, its process and its import are not. */
	ASSERT_EQ(0, kva_stat(self->admin, ARENA, &s));
	EXPECT_EQ(1, s.nr_dirty);
	EXPECT_EQ(1, s.nr_quarantined);
	EXPECT_EQ(0, as_uid(NOBODY, attacker_is_refused, NULL));
	/* Asked for, but not to be had: the scrubber gets nothing. */
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, scrub_take(self->owner, h, NR, 20));
	close(go);
	EXPECT_EQ(0, reap(pid));
	close(ready);
	ASSERT_EQ(0, kva_stat(self->admin, ARENA, &s));
	EXPECT_EQ(0, s.nr_quarantined);
	EXPECT_EQ(1, scrub_all(self->owner));
	EXPECT_EQ(0, as_uid(NOBODY, attacker_reads_everything, NULL));
}

/*
 * Whatever still maps a frame's memory keeps it in its domain, the
 * owner's mapping too; the owner's process itself is not held to its
 * exit, as it is trusted to let go.
 */
TEST_F(scrub, a_live_mapping_holds_a_frame_back_the_owners_process_does_not)
{
	struct kvarena_stat s;
	unsigned char *p;
	__u64 h;

	ASSERT_EQ(1, kva_alloc(self->owner, &h, 1, 0));
	p = import(self->owner, h);
	ASSERT_EQ(0, kva_free(self->owner, &h, 1));
	ASSERT_EQ(0, kva_stat(self->admin, ARENA, &s));
	EXPECT_EQ(1, s.nr_dirty);
	EXPECT_EQ(1, s.nr_quarantined);
	munmap(p, FSIZE);
	ASSERT_EQ(0, kva_stat(self->admin, ARENA, &s));
	EXPECT_EQ(1, s.nr_dirty);
	EXPECT_EQ(0, s.nr_quarantined);
}

static int nobody_may_not_scrub(void *arg)
{
	int fd = attach("nobody");
	__u64 h[NR];

	(void)arg;
	CHECK_EQ(-EPERM, scrub_take(fd, h, NR, 0));
	CHECK_EQ(-EPERM, scrub_done(fd, h, 1));
	return 0;
}

TEST_F(scrub, only_the_owner_may_scrub_and_bad_arguments_are_refused)
{
	const char *no_ring = kva_uring_missing();
	struct kvarena_scrub s = { 0 };
	struct io_uring ring;
	__u64 h[NR];
	int ro, unattached, host;

	EXPECT_EQ(0, as_uid(NOBODY, nobody_may_not_scrub, NULL));
	/* Not over io_uring, whoever submits. */
	s.handles = (uintptr_t)h;
	s.count = NR;
	if (!no_ring) {
		ASSERT_EQ(0, io_uring_queue_init(2, &ring, 0));
		EXPECT_EQ(-EPERM, kva_uring_one(&ring, self->owner,
						KVARENA_IOC_SCRUB, &s, 0));
		io_uring_queue_exit(&ring);
	}
	/* Arguments. */
	EXPECT_EQ(-EINVAL, scrub_take(self->owner, h, 0, 0));
	EXPECT_EQ(-EINVAL, scrub_take(self->owner, h, KVARENA_MAX_BATCH + 1,
				      0));
	EXPECT_EQ(-EINVAL, scrub_cmd(self->owner, h, 1, 1u << 1, 0, NULL));
	EXPECT_EQ(-EINVAL, scrub_cmd(self->owner, h, 1, KVARENA_SCRUB_DONE,
				     5, NULL));
	s.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->owner, KVARENA_IOC_SCRUB, &s));
	s.reserved[1] = 0;
	EXPECT_EQ(-EFAULT, scrub_done(self->owner, (__u64 *)8, 1));
	/* Unattached, read-only. */
	unattached = kva_open(O_RDWR);
	ro = kva_open(O_RDONLY);
	ASSERT_LE(0, unattached);
	ASSERT_LE(0, ro);
	EXPECT_EQ(-ENOTCONN, kva_ioctl(unattached, KVARENA_IOC_SCRUB, &s));
	EXPECT_EQ(-EBADF, kva_ioctl(ro, KVARENA_IOC_SCRUB, &s));
	close(ro);
	/* Nothing for a scrubber on an arena that is not CUDA memory. */
	ASSERT_EQ(0, kva_create(self->admin, "scrub-host", 4, FSIZE, 0));
	ASSERT_EQ(0, kva_attach(unattached, "scrub-host", "x", 0, 0, NULL));
	EXPECT_EQ(-EOPNOTSUPP, scrub_take(unattached, h, 1, 0));
	close(unattached);
	host = kva_wait_no_clients(self->admin, "scrub-host");
	EXPECT_EQ(0, host);
	EXPECT_EQ(0, kva_destroy(self->admin, "scrub-host"));
	KVA_URING_PART_SKIPPED(no_ring);
}

TEST_F(scrub, done_with_a_handle_not_taken_gives_nothing_back)
{
	struct kvarena_stat s;
	__u64 h[NR], bad[2];
	__u32 done, x;
	int n;

	ASSERT_EQ(0, as_uid(VICTIM, victim_fills_and_frees, NULL));
	ASSERT_EQ(0, as_uid(NOBODY, attacker_is_refused, NULL));
	n = scrub_take(self->owner, h, 2, 0);
	ASSERT_EQ(2, n);
	/* One never taken: nothing is given back. */
	bad[0] = h[0];
	for (x = 0; x == (__u32)h[0] || x == (__u32)h[1]; x++)
		;
	bad[1] = (h[1] & ~0xffffffffull) | x;
	EXPECT_EQ(-ENOENT, scrub_cmd(self->owner, bad, 2, KVARENA_SCRUB_DONE,
				     0, &done));
	EXPECT_EQ(0, done);
	/* The same one twice. */
	bad[1] = h[0];
	EXPECT_EQ(-EINVAL, scrub_done(self->owner, bad, 2));
	/* A stale generation. */
	bad[1] = h[1] + (1ull << 32);
	EXPECT_EQ(-ESTALE, scrub_done(self->owner, bad, 2));
	ASSERT_EQ(0, kva_stat(self->admin, ARENA, &s));
	EXPECT_EQ(0, s.frames_cleared);
	/* A frame it did not take may not be mapped through it. */
	EXPECT_EQ(2, clear_and_give_back(self->owner, h, 2));
	EXPECT_EQ(-ENOENT, scrub_done(self->owner, h, 1));
	EXPECT_EQ(-ENOENT, kva_frame_fd(self->owner, h[0], NULL));
	ASSERT_EQ(0, kva_stat(self->admin, ARENA, &s));
	EXPECT_EQ(2, s.frames_cleared);
	EXPECT_EQ(NR - 2, scrub_all(self->owner));
}

TEST_F(scrub, a_done_waits_for_the_scrubber_to_let_go_and_abandon_leaves_frames_for_the_next)
{
	const char *no_ring = kva_uring_missing();
	struct kvarena_frame_fd ff = { 0 };
	struct kvarena_stat s;
	struct io_uring ring;
	unsigned char *p;
	__u64 h[NR], again[NR];
	__u32 done;

	ASSERT_EQ(0, as_uid(VICTIM, victim_fills_and_frees, NULL));
	ASSERT_EQ(0, as_uid(NOBODY, attacker_is_refused, NULL));
	ASSERT_EQ(2, scrub_take(self->owner, h, 2, 0));
	/* Its own mapping still holds the first: nothing is given back. */
	p = import(self->owner, h[0]);
	memset(p, 0, FSIZE);
	EXPECT_EQ(-EBUSY, scrub_cmd(self->owner, h, 2, KVARENA_SCRUB_DONE, 0,
				    &done));
	EXPECT_EQ(0, done);
	munmap(p, FSIZE);
	/* Only over ioctl(): a ring may be shared with anyone. */
	if (!no_ring) {
		ASSERT_EQ(0, io_uring_queue_init(2, &ring, 0));
		ff.handle = h[1];
		EXPECT_EQ(-ENOENT, kva_uring_one(&ring, self->owner,
						 KVARENA_IOC_FRAME_FD, &ff, 0));
		io_uring_queue_exit(&ring);
	}
	/* Given up on, uncleared: the next take has them first. */
	EXPECT_EQ(2, scrub_cmd(self->owner, h, 2,
			       KVARENA_SCRUB_DONE | KVARENA_SCRUB_ABANDON, 0,
			       NULL));
	EXPECT_EQ(-ENOENT, scrub_done(self->owner, h, 1));
	EXPECT_EQ(-EINVAL, scrub_cmd(self->owner, h, 1, KVARENA_SCRUB_ABANDON,
				     0, NULL));
	ASSERT_EQ(0, kva_stat(self->admin, ARENA, &s));
	EXPECT_EQ(0, s.frames_cleared);
	EXPECT_EQ(NR, s.nr_dirty);
	EXPECT_EQ(0, as_uid(NOBODY, attacker_is_refused, NULL));
	ASSERT_EQ(2, scrub_take(self->owner, again, 2, 0));
	EXPECT_EQ(1, (again[0] == h[0] && again[1] == h[1]) ||
		     (again[0] == h[1] && again[1] == h[0]));
	EXPECT_EQ(2, clear_and_give_back(self->owner, again, 2));
	EXPECT_EQ(NR - 2, scrub_all(self->owner));
	EXPECT_EQ(0, as_uid(NOBODY, attacker_reads_everything, NULL));
	KVA_URING_PART_SKIPPED(no_ring);
}

/* Takes frames to clear and dies before giving them back. */
static int scrubber_dies_mid_scrub(void *arg)
{
	int fd = attach("scrubber");
	__u64 h[NR];
	int n = scrub_take(fd, h, 3, 0);

	(void)arg;
	CHECK_EQ(3, n);
	memset(import(fd, h[0]), 0, FSIZE / 2);	/* half cleared */
	raise(SIGKILL);
	return 99;
}

TEST_F(scrub, a_scrubber_that_dies_leaves_its_frames_to_the_next)
{
	struct kvarena_stat s;
	__u64 h[NR];

	ASSERT_EQ(0, as_uid(VICTIM, victim_fills_and_frees, NULL));
	ASSERT_EQ(0, as_uid(NOBODY, attacker_is_refused, NULL));
	EXPECT_EQ(1000 + SIGKILL, as_uid(0, scrubber_dies_mid_scrub, NULL));
	ASSERT_EQ(0, kva_stat(self->admin, ARENA, &s));
	EXPECT_EQ(NR, s.nr_dirty);
	EXPECT_EQ(0, s.frames_cleared);
	EXPECT_EQ(0, as_uid(NOBODY, attacker_is_refused, NULL));
	/* The next scrubber gets the three first. */
	EXPECT_EQ(3, scrub_take(self->owner, h, 3, 0));
	EXPECT_EQ(3, clear_and_give_back(self->owner, h, 3));
	EXPECT_EQ(NR - 3, scrub_all(self->owner));
	EXPECT_EQ(0, as_uid(NOBODY, attacker_reads_everything, NULL));
}

/* Waits for frames to clear, clears them, and says how many. */
static int scrubber_waits(void *arg)
{
	int fd = attach("scrubber"), n;
	__u64 h[NR];

	(void)arg;
	n = scrub_take(fd, h, NR, 20000);
	CHECK_EQ(1, n > 0);
	CHECK_EQ(n, clear_and_give_back(fd, h, n));
	return n;
}

/* Refused, then POLLOUT once the scrubber has cleared enough: all zero. */
static int attacker_waits_for_pollout(void *arg)
{
	int fd = attach("attacker"), i;
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	__u64 h[2];

	(void)arg;
	CHECK_EQ(-ENOSPC, kva_alloc(fd, h, 2, 0));
	CHECK_EQ(1, poll(&pfd, 1, 20000));
	CHECK_EQ(POLLOUT, pfd.revents & POLLOUT);
	CHECK_EQ(2, kva_alloc(fd, h, 2, 0));
	for (i = 0; i < 2; i++)
		CHECK_EQ(1, all_zero(import(fd, h[i]), FSIZE));
	return 0;
}

TEST_F(scrub, a_refused_alloc_wakes_the_scrubber_and_pollout_follows)
{
	pid_t scrubber, attacker;
	__u64 h[NR];
	int n;

	ASSERT_EQ(0, as_uid(VICTIM, victim_fills_and_frees, NULL));
	/* The stock of clean frames (one here) first: then nothing is asked. */
	ASSERT_EQ(1, scrub_take(self->owner, h, NR, 0));
	ASSERT_EQ(1, clear_and_give_back(self->owner, h, 1));
	ASSERT_EQ(0, scrub_take(self->owner, h, NR, 0));
	scrubber = fork();
	ASSERT_LE(0, scrubber);
	if (!scrubber)
		_exit(scrubber_waits(NULL));
	attacker = fork();
	ASSERT_LE(0, attacker);
	if (!attacker) {
		drop_to(NOBODY);
		_exit(attacker_waits_for_pollout(NULL));
	}
	/* Exactly what the refused ALLOC wanted. */
	n = reap(scrubber);
	EXPECT_EQ(2, n);
	EXPECT_EQ(0, reap(attacker));
}

static int partial_takes_the_clean(void *arg)
{
	int fd = attach("attacker"), i;
	struct kvarena_frames f = { 0 };
	__u64 h[NR];

	(void)arg;
	f.handles = (uintptr_t)h;
	f.count = NR;
	f.flags = KVARENA_ALLOC_PARTIAL;
	CHECK_EQ(0, kva_ioctl(fd, KVARENA_IOC_ALLOC, &f));
	CHECK_EQ(NR / 2, f.nr_done);
	for (i = 0; i < NR / 2; i++)
		CHECK_EQ(1, all_zero(import(fd, h[i]), FSIZE));
	return 0;
}

TEST_F(scrub, a_partial_alloc_takes_only_the_clean_frames)
{
	int half = NR / 2;

	ASSERT_EQ(0, as_uid(VICTIM, victim_fills_and_frees, &half));
	EXPECT_EQ(0, as_uid(NOBODY, partial_takes_the_clean, NULL));
}

TEST_F(scrub, clear_always_sends_even_one_domain_through_the_scrubber)
{
	struct kvarena_stat s;
	__u64 h[NR];

	close(self->owner);
	ASSERT_EQ(0, kva_wait_no_clients(self->admin, ARENA));
	ASSERT_EQ(0, kva_destroy(self->admin, ARENA));
	ASSERT_EQ(0, make_cuda_arena(self->admin, KVARENA_CREATE_CLEAR_ALWAYS));
	self->owner = kva_open(O_RDWR);
	ASSERT_EQ(0, kva_attach(self->owner, ARENA, "scrubber", 0, 0, NULL));
	ASSERT_EQ(0, as_uid(VICTIM, victim_fills_and_frees, NULL));
	/* Its own uid is refused too, until the scrubber has been. */
	EXPECT_EQ(0, as_uid(VICTIM, attacker_is_refused, NULL));
	EXPECT_EQ(NR, scrub_all(self->owner));
	ASSERT_EQ(0, kva_stat(self->admin, ARENA, &s));
	EXPECT_EQ(0, s.nr_dirty);
	EXPECT_EQ(0, as_uid(VICTIM, attacker_reads_everything, NULL));
	(void)h;
}

TEST_HARNESS_MAIN
