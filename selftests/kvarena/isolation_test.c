// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko isolation selftests: what one client of an arena can and
 * cannot do to another, as ordinary users (uid 65534) beside root.
 *
 * Runs as root inside the VM.  /dev/kvarena is made mode 0666 for the
 * duration (as a udev rule giving serving processes the node would), and
 * each hostile or unprivileged step runs in a child that dropped to
 * uid/gid 65534 with no supplementary groups.  A child reports the line of
 * its first failed check as its exit code (0: all held), so that the
 * parent's assertion names it.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kva_test.h"
#include "kva_tenant.h"
#include "kva_uring.h"

#define NR	16
#define FSIZE	(64 * 1024)
#define NOBODY	65534
#define VICTIM	1001

/* A host arena of NR frames, every frame backed; returns 0 or -errno. */
static int make_host_arena(int admin, const char *name, __u32 low_watermark)
{
	int mfd = kva_sealed_memfd(NR * FSIZE), ret;

	if (mfd < 0)
		return -errno;
	ret = kva_create_flags(admin, name, NR, FSIZE, low_watermark, 0);
	if (!ret)
		ret = kva_set_backing(admin, name, 0, NR, mfd, 0);
	close(mfd);		/* the module holds it now */
	return ret;
}

static int set_policy(int admin, const char *name, __u32 uid, __u32 gid,
		      __u32 mode, __u32 min_limit, __u32 max_default,
		      __u32 max_limit)
{
	struct kvarena_arena_policy p = {
		.owner_uid = uid, .owner_gid = gid, .mode = mode,
		.client_min_limit = min_limit,
		.client_max_default = max_default,
		.client_max_limit = max_limit,
	};

	snprintf(p.name, sizeof(p.name), "%s", name);
	return kva_ioctl(admin, KVARENA_IOC_ARENA_SET_POLICY, &p);
}

/* Map @n frames from frame @idx of the client's frames file. */
static void *map_frames(int ffd, __u32 idx, __u32 n, int prot)
{
	return mmap(NULL, (size_t)n * FSIZE, prot, MAP_SHARED, ffd,
		    (off_t)idx * FSIZE);
}

/*
 * A host arena, made by root, which ordinary users may open: the node is
 * 0666 for the test and the arena keeps its default mode (0666).
 */
FIXTURE(iso) {
	int admin;
	char name[32];
};

FIXTURE_SETUP(iso)
{
	snprintf(self->name, sizeof(self->name), "iso%d", getpid());
	ASSERT_EQ(0, chmod(KVARENA_DEVICE, 0666));
	self->admin = kva_open(O_RDWR);
	ASSERT_LE(0, self->admin);
	ASSERT_EQ(0, make_host_arena(self->admin, self->name, 0));
}

FIXTURE_TEARDOWN(iso)
{
	EXPECT_EQ(0, kva_wait_no_clients(self->admin, self->name));
	EXPECT_EQ(0, kva_destroy(self->admin, self->name));
	close(self->admin);
	chmod(KVARENA_DEVICE, 0660);
}

/* ---- guarantees: nobody locks the arena away ---------------------------- */

TEST_F(iso, unprivileged_client_cannot_guarantee_itself_the_arena)
{
	const char *name = self->name;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int a, b;
		__u64 h[NR];

		drop_to(NOBODY);
		a = kva_open(O_RDWR);
		b = kva_open(O_RDWR);
		/* The default policy leaves guarantees to the admin. */
		CHECK_EQ(-EPERM, kva_attach(a, name, "greedy", NR, 0, NULL));
		CHECK_EQ(-EPERM, kva_attach(a, name, "greedy", 1, 0, NULL));
		CHECK_EQ(0, kva_attach(a, name, "greedy", 0, 0, NULL));
		CHECK_EQ(0, kva_attach(b, name, "other", 0, 0, NULL));
		/* So everyone else can still allocate. */
		CHECK_EQ(NR, kva_alloc(b, h, NR, 0));
		_exit(0);
	}
	EXPECT_EQ(0, reap(pid));
}

TEST_F(iso, guarantee_limit_is_per_uid_so_more_files_gain_nothing)
{
	const char *name = self->name;
	struct kvarena_stat s;
	pid_t pid;

	ASSERT_EQ(0, set_policy(self->admin, name, 0, 0, 0666, 4, 0, 0));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int a, b, c;

		drop_to(NOBODY);
		a = kva_open(O_RDWR);
		b = kva_open(O_RDWR);
		c = kva_open(O_RDWR);
		CHECK_EQ(-EPERM, kva_attach(a, name, "a", 5, 0, NULL));
		CHECK_EQ(0, kva_attach(a, name, "a", 3, 0, NULL));
		/* A second file of the same uid has 1 left of the 4. */
		CHECK_EQ(-EPERM, kva_attach(b, name, "b", 2, 0, NULL));
		CHECK_EQ(0, kva_attach(b, name, "b", 1, 0, NULL));
		CHECK_EQ(-EPERM, kva_attach(c, name, "c", 1, 0, NULL));
		CHECK_EQ(0, kva_attach(c, name, "c", 0, 0, NULL));
		/* Closing one gives its share back to the uid. */
		close(a);
		a = kva_open(O_RDWR);
		CHECK_EQ(0, kva_attach(a, name, "a2", 3, 0, NULL));
		_exit(0);
	}
	EXPECT_EQ(0, reap(pid));
	ASSERT_EQ(0, kva_stat(self->admin, name, &s));
	EXPECT_EQ(0, s.nr_clients);
	EXPECT_EQ(4, s.client_min_limit);
}

TEST_F(iso, max_default_and_limit_apply_to_every_attach)
{
	const char *name = self->name;
	pid_t pid;

	ASSERT_EQ(0, set_policy(self->admin, name, 0, 0, 0666, 0, 4, 8));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kvarena_attach at;
		__u64 h[NR];
		int a, b;

		drop_to(NOBODY);
		a = kva_open(O_RDWR);
		b = kva_open(O_RDWR);
		CHECK_EQ(-EPERM, kva_attach(a, name, "a", 0, 9, NULL));
		CHECK_EQ(0, kva_attach(a, name, "a", 0, 0, &at));
		CHECK_EQ(4, at.max_frames);		/* the default */
		CHECK_EQ(-ENOSPC, kva_alloc(a, h, 5, 0));
		CHECK_EQ(4, kva_alloc(a, h, 4, 0));
		CHECK_EQ(0, kva_attach(b, name, "b", 0, 8, &at));
		CHECK_EQ(8, at.max_frames);
		_exit(0);
	}
	EXPECT_EQ(0, reap(pid));
}

TEST_F(iso, admin_gives_guarantees_over_ioctl_only)
{
	const char *no_ring = kva_uring_missing();
	struct kvarena_attach at = { .min_frames = NR };
	struct io_uring ring;
	int c = kva_open(O_RDWR);

	ASSERT_LE(0, c);
	/* Root over io_uring is an ordinary client: the policy holds. */
	if (!no_ring) {
		ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
		snprintf(at.name, sizeof(at.name), "%s", self->name);
		EXPECT_EQ(-EPERM, kva_uring_one(&ring, c, KVARENA_IOC_ATTACH,
						&at, 0));
		io_uring_queue_exit(&ring);
	}
	/* Over ioctl() CAP_SYS_ADMIN may guarantee what is free. */
	EXPECT_EQ(0, kva_attach(c, self->name, "admin-given", NR, 0, &at));
	EXPECT_EQ(NR, at.max_frames);
	close(c);
	KVA_URING_PART_SKIPPED(no_ring);
}

TEST_F(iso, arena_mode_decides_who_views_and_attaches)
{
	const char *name = self->name;
	char path[128];
	pid_t pid;

	/* Owner root: owner may do anything, group views, others nothing. */
	ASSERT_EQ(0, set_policy(self->admin, name, 0, 4242, 0640, 0, 0, 0));
	snprintf(path, sizeof(path), "/sys/class/misc/kvarena/arenas/%s/free",
		 name);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kvarena_stat s = { .flags = KVARENA_STAT_BY_INDEX };
		struct kvarena_clients cl = { 0 };
		char buf[32];
		int rw, ro, i, sfd;

		drop_to(NOBODY);
		rw = kva_open(O_RDWR);
		ro = kva_open(O_RDONLY);
		CHECK_EQ(-EACCES, kva_attach(rw, name, "x", 0, 0, NULL));
		CHECK_EQ(-EACCES, kva_stat(ro, name, &s));
		snprintf(cl.name, sizeof(cl.name), "%s", name);
		CHECK_EQ(-EACCES, kva_ioctl(ro, KVARENA_IOC_CLIENTS, &cl));
		sfd = open(path, O_RDONLY);
		CHECK(sfd >= 0);
		CHECK_EQ(-1, read(sfd, buf, sizeof(buf)));
		CHECK_EQ(EACCES, errno);
		/* Walking by index does not show it at all. */
		for (i = 0; ; i++) {
			memset(&s, 0, sizeof(s));
			s.flags = KVARENA_STAT_BY_INDEX;
			s.index = i;
			if (kva_ioctl(ro, KVARENA_IOC_STAT, &s))
				break;
			CHECK(strcmp(s.name, name));
		}
		_exit(0);
	}
	EXPECT_EQ(0, reap(pid));

	/* Group 4242 may view, not attach. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		gid_t g = 4242;
		struct kvarena_stat s;
		int rw;

		if (setgroups(1, &g) || setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(250);
		rw = kva_open(O_RDWR);
		CHECK_EQ(0, kva_stat(rw, name, &s));
		CHECK_EQ(0640, s.mode);
		CHECK_EQ(4242, s.owner_gid);
		CHECK_EQ(-EACCES, kva_attach(rw, name, "x", 0, 0, NULL));
		_exit(0);
	}
	EXPECT_EQ(0, reap(pid));

	/* Owned by nobody, 0600: nobody may attach. */
	ASSERT_EQ(0, set_policy(self->admin, name, NOBODY, NOBODY, 0600, 0, 0,
				0));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int rw;

		drop_to(NOBODY);
		rw = kva_open(O_RDWR);
		CHECK_EQ(0, kva_attach(rw, name, "owner", 0, 0, NULL));
		_exit(0);
	}
	EXPECT_EQ(0, reap(pid));
}

TEST_F(iso, policy_changes_need_the_admin_and_sane_values)
{
	struct kvarena_arena_policy p = { .mode = 0666 };
	struct kvarena_stat s;
	pid_t pid;

	snprintf(p.name, sizeof(p.name), "%s", self->name);
	p.mode = 0777;				/* x bits mean nothing */
	EXPECT_EQ(-EINVAL, kva_ioctl(self->admin, KVARENA_IOC_ARENA_SET_POLICY, &p));
	p.mode = 0666;
	p.client_max_limit = NR + 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->admin, KVARENA_IOC_ARENA_SET_POLICY, &p));
	p.client_max_limit = 4;
	p.client_min_limit = 5;			/* above the max limit */
	EXPECT_EQ(-EINVAL, kva_ioctl(self->admin, KVARENA_IOC_ARENA_SET_POLICY, &p));
	p.client_min_limit = 0;
	p.client_max_default = 5;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->admin, KVARENA_IOC_ARENA_SET_POLICY, &p));
	p.client_max_default = 0;
	p.flags = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->admin, KVARENA_IOC_ARENA_SET_POLICY, &p));
	p.flags = 0;
	p.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->admin, KVARENA_IOC_ARENA_SET_POLICY, &p));
	p.reserved[0] = 0;
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(KVARENA_MODE_DEFAULT, s.mode);
	EXPECT_EQ(0, s.owner_uid);
	EXPECT_EQ(0, s.client_max_limit);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int rw;

		drop_to(NOBODY);
		rw = kva_open(O_RDWR);
		CHECK_EQ(-EPERM, kva_ioctl(rw, KVARENA_IOC_ARENA_SET_POLICY, &p));
		_exit(0);
	}
	EXPECT_EQ(0, reap(pid));
}

TEST(create_takes_owner_mode_and_limits)
{
	struct kvarena_arena_create c = {
		.frame_size = FSIZE, .nr_frames = 8,
		.mem_kind = KVARENA_MEM_HOST,
		.flags = KVARENA_CREATE_NO_BACKING | KVARENA_CREATE_ACCESS,
		.owner_uid = 1000, .owner_gid = 100, .mode = 0660,
		.client_min_limit = 2, .client_max_default = 3,
		.client_max_limit = 6,
	};
	int fd = kva_open(O_RDWR);
	struct kvarena_stat s;

	ASSERT_LE(0, fd);
	strcpy(c.name, "owned");
	ASSERT_EQ(0, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	ASSERT_EQ(0, kva_stat(fd, "owned", &s));
	EXPECT_EQ(1000, s.owner_uid);
	EXPECT_EQ(100, s.owner_gid);
	EXPECT_EQ(0660, s.mode);
	EXPECT_EQ(2, s.client_min_limit);
	EXPECT_EQ(3, s.client_max_default);
	EXPECT_EQ(6, s.client_max_limit);
	EXPECT_EQ(0, kva_destroy(fd, "owned"));
	/* Without the flag, owner and mode must be left zero. */
	c.flags = KVARENA_CREATE_NO_BACKING;
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	c.owner_uid = c.owner_gid = c.mode = 0;
	ASSERT_EQ(0, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	ASSERT_EQ(0, kva_stat(fd, "owned", &s));
	EXPECT_EQ(0, s.owner_uid);		/* the creator */
	EXPECT_EQ(KVARENA_MODE_DEFAULT, s.mode);
	EXPECT_EQ(0, kva_destroy(fd, "owned"));
	c.flags |= KVARENA_CREATE_ACCESS;
	c.mode = 01666;
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	c.mode = 0666;
	c.client_max_limit = 9;			/* past the arena */
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	c.client_max_limit = 0;
	c.cache_domains = KVARENA_DOMAINS_ARENA + 1;	/* no such rule */
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	c.cache_domains = 0;
	c.mem_uuid[3] = 1;			/* a host arena has no GPU */
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	close(fd);
}

/* ---- frames: only what you hold, and not after you gave it back ------ */

TEST_F(iso, frames_file_maps_only_frames_the_client_holds)
{
	const char *name = self->name;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kvarena_frame_fd ff;
		__u64 ha[2], hb[1];
		__u32 ia, ib, unheld = NR;
		struct stat st;
		char *m, buf[16] = "overwrite";
		__u32 i;
		int a, b;

		drop_to(NOBODY);
		a = kva_open(O_RDWR);
		b = kva_open(O_RDWR);
		CHECK_EQ(0, kva_attach(a, name, "victim", 0, 0, NULL));
		CHECK_EQ(0, kva_attach(b, name, "hostile", 0, 0, NULL));
		CHECK_EQ(2, kva_alloc(a, ha, 2, 0));
		CHECK_EQ(1, kva_alloc(b, hb, 1, 0));
		ia = KVARENA_HANDLE_IDX(ha[0]);
		ib = KVARENA_HANDLE_IDX(hb[0]);
		for (i = 0; i < NR && unheld == NR; i++)
			if (i != ia && i != KVARENA_HANDLE_IDX(ha[1]) && i != ib)
				unheld = i;

		/* B asks about A's frame: refused, no fd. */
		CHECK_EQ(-EPERM, kva_frame_fd(b, ha[0], &ff));
		CHECK_EQ(0, kva_frame_fd(b, hb[0], &ff));
		CHECK_EQ(KVARENA_ACCESS_READ | KVARENA_ACCESS_WRITE, ff.access);
		CHECK_EQ((__u64)ib * FSIZE, ff.offset);
		/* Its own frame maps; A's and an unheld one do not. */
		m = map_frames(ff.fd, ib, 1, PROT_READ | PROT_WRITE);
		CHECK(m != MAP_FAILED);
		m[0] = 'b';
		CHECK(map_frames(ff.fd, ia, 1, PROT_READ) == MAP_FAILED);
		CHECK_EQ(EACCES, errno);
		CHECK(map_frames(ff.fd, unheld, 1, PROT_READ) == MAP_FAILED);
		CHECK_EQ(EACCES, errno);
		/* Nor a range that starts in its frame and runs on. */
		CHECK(mmap(NULL, 2 * FSIZE, PROT_READ, MAP_SHARED, ff.fd,
			   (off_t)ib * FSIZE) == MAP_FAILED);
		CHECK(map_frames(ff.fd, NR, 1, PROT_READ) == MAP_FAILED);
		CHECK_EQ(EINVAL, errno);
		CHECK(mmap(NULL, FSIZE, PROT_READ, MAP_PRIVATE, ff.fd,
			   (off_t)ib * FSIZE) == MAP_FAILED);
		CHECK_EQ(EINVAL, errno);
		CHECK(map_frames(ff.fd, ib, 1, PROT_READ | PROT_EXEC) ==
		      MAP_FAILED);
		CHECK_EQ(EPERM, errno);
		/* The file is not the memory: no write, punch or truncate. */
		CHECK_EQ(-1, pwrite(ff.fd, buf, sizeof(buf), (off_t)ia * FSIZE));
		CHECK_EQ(-1, write(ff.fd, buf, sizeof(buf)));
		CHECK_EQ(-1, pread(ff.fd, buf, sizeof(buf), (off_t)ia * FSIZE));
		CHECK_EQ(-1, fallocate(ff.fd, FALLOC_FL_PUNCH_HOLE |
				       FALLOC_FL_KEEP_SIZE, 0, NR * FSIZE));
		CHECK_EQ(-1, ftruncate(ff.fd, 0));
		CHECK_EQ(0, fstat(ff.fd, &st));
		CHECK(!S_ISREG(st.st_mode));
		/* A's frame still holds what A wrote. */
		close(ff.fd);
		CHECK_EQ(0, kva_frame_fd(a, ha[0], &ff));
		m = map_frames(ff.fd, ia, 1, PROT_READ | PROT_WRITE);
		CHECK(m != MAP_FAILED);
		m[5] = 'a';
		CHECK_EQ('a', m[5]);
		_exit(0);
	}
	EXPECT_EQ(0, reap(pid));
}

TEST_F(iso, freed_frame_is_gone_from_its_old_holders_mappings)
{
	const char *name = self->name;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kvarena_frame_fd fa, fb;
		volatile char *ma, *mb;
		__u64 h, hb;
		int a, b;

		drop_to(NOBODY);
		a = kva_open(O_RDWR);
		b = kva_open(O_RDWR);
		CHECK_EQ(0, kva_attach(a, name, "old", 0, 0, NULL));
		CHECK_EQ(0, kva_attach(b, name, "next", 0, 0, NULL));
		CHECK_EQ(1, kva_alloc(a, &h, 1, 0));
		CHECK_EQ(0, kva_frame_fd(a, h, &fa));
		ma = map_frames(fa.fd, KVARENA_HANDLE_IDX(h), 1,
				PROT_READ | PROT_WRITE);
		CHECK(ma != MAP_FAILED);
		ma[0] = 'A';
		CHECK_EQ(0, kva_free(a, &h, 1));
		/* The old mapping is zapped: reads and writes are SIGBUS. */
		CHECK(touch_gets_sigbus(ma, false));
		CHECK(touch_gets_sigbus(ma, true));
		/* And the file does not map the frame again. */
		CHECK(map_frames(fa.fd, KVARENA_HANDLE_IDX(h), 1, PROT_READ) ==
		      MAP_FAILED);
		CHECK_EQ(EACCES, errno);
		/* The next holder writes its KV; the old one sees none of it. */
		CHECK_EQ(1, kva_alloc(b, &hb, 1, 0));
		CHECK_EQ(KVARENA_HANDLE_IDX(h), KVARENA_HANDLE_IDX(hb));
		CHECK_EQ(0, kva_frame_fd(b, hb, &fb));
		mb = map_frames(fb.fd, KVARENA_HANDLE_IDX(hb), 1,
				PROT_READ | PROT_WRITE);
		CHECK(mb != MAP_FAILED);
		CHECK_EQ('A', mb[0]);	/* the memory is the same, unwiped */
		mb[1] = 'B';
		CHECK(touch_gets_sigbus(ma, false));
		CHECK(map_frames(fa.fd, KVARENA_HANDLE_IDX(h), 1, PROT_READ) ==
		      MAP_FAILED);
		_exit(0);
	}
	EXPECT_EQ(0, reap(pid));
}

/*
 * ALLOC's copy-out can fault the frame it just took into an old mapping
 * of the caller's (handles written into a frame it freed before, which
 * ALLOC then takes again); when writing nr_done fails, the undo must take
 * that mapping away too, or the caller keeps a window on a frame the next
 * holder fills.
 */
/*
 * The attack of a failed ALLOC: an attacker (uid 65534) frees a frame it
 * mapped, then ALLOCs with the handles pointing into the old mapping and
 * nr_done on a read-only page, so that the copy-out faults the frame back
 * into the old mapping and then fails.  The undo must take the mapping
 * back too: the victim (uid 1001) gets the frame next (the free list is
 * LIFO) and writes a secret, which the attacker must not read, and the
 * attacker's writes must not reach the victim.
 */
/* In a child, as @uid: a client of @name that takes a frame and maps it. */
static volatile char *new_mapped_frame(uid_t uid, const char *name,
				       const char *label, int *fd, __u64 *h)
{
	struct kvarena_frame_fd ff;
	volatile char *m;

	drop_to(uid);
	*fd = kva_open(O_RDWR);
	CHECK_EQ(0, kva_attach(*fd, name, label, 0, 0, NULL));
	CHECK_EQ(1, kva_alloc(*fd, h, 1, 0));
	CHECK_EQ(0, kva_frame_fd(*fd, *h, &ff));
	m = map_frames(ff.fd, KVARENA_HANDLE_IDX(*h), 1,
		       PROT_READ | PROT_WRITE);
	CHECK(m != MAP_FAILED);
	return m;
}

static int victim_writes_the_next_frame(const char *name, int wrote, int quit)
{
	volatile char *m;
	__u64 h;
	char c;
	int v;

	m = new_mapped_frame(VICTIM, name, "victim", &v, &h);
	/* Nothing of the attacker's: the frame was cleared for this uid. */
	CHECK_EQ(0, m[0]);
	strcpy((char *)m, "my SSN is 078-05-1120");
	/* Holding it while the attacker tries its old mapping. */
	CHECK_EQ(1, write(wrote, "w", 1));
	CHECK_EQ(0, read(quit, &c, 1));
	CHECK_EQ(0, strcmp((char *)m, "my SSN is 078-05-1120"));
	return 0;
}

TEST_F(iso, a_failed_alloc_takes_back_the_mapping_its_copy_out_made)
{
	const char *name = self->name;
	int go[2], done[2], wrote[2], quit[2];
	pid_t pid, victim;
	char c;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	ASSERT_EQ(0, pipe(wrote));
	ASSERT_EQ(0, pipe(quit));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kvarena_frames *f;
		struct kvarena_stat s;
		volatile char *m;
		__u64 h;
		int a;

		close(go[0]);
		close(done[1]);
		m = new_mapped_frame(NOBODY, name, "undo", &a, &h);
		m[0] = 1;
		CHECK_EQ(0, kva_free(a, &h, 1));
		CHECK(touch_gets_sigbus(m, false));
		/* The handles into the old mapping, nr_done on a read-only page. */
		f = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(f != MAP_FAILED);
		f->handles = (__u64)(unsigned long)m;
		f->count = 1;
		CHECK_EQ(0, mprotect(f, 4096, PROT_READ));
		CHECK_EQ(-EFAULT, kva_ioctl(a, KVARENA_IOC_ALLOC, f));
		CHECK_EQ(0, kva_stat(a, name, &s));
		CHECK_EQ(0, s.nr_held);
		/* Taken back, and so is the mapping the copy-out made. */
		CHECK(touch_gets_sigbus(m, false));
		CHECK(touch_gets_sigbus(m, true));
		/* The victim takes the frame and writes; still nothing here. */
		CHECK_EQ(1, write(go[1], "g", 1));
		CHECK_EQ(1, read(done[0], &c, 1));
		CHECK(touch_gets_sigbus(m, false));
		CHECK(touch_gets_sigbus(m, true));
		_exit(0);
	}
	close(go[1]);
	close(done[0]);
	ASSERT_EQ(1, read(go[0], &c, 1));
	victim = fork();
	ASSERT_LE(0, victim);
	if (victim == 0) {
		close(quit[1]);
		_exit(victim_writes_the_next_frame(name, wrote[1], quit[0]));
	}
	close(quit[0]);
	close(wrote[1]);
	EXPECT_EQ(1, read(wrote[0], &c, 1));
	ASSERT_EQ(1, write(done[1], "d", 1));
	EXPECT_EQ(0, reap(pid));
	close(quit[1]);
	EXPECT_EQ(0, reap(victim));
	close(go[0]);
	close(done[1]);
	close(wrote[0]);
}

/*
 * The window between FREE and the zap.  An attacker (uid 65534) holds
 * RACE_FRAMES frames mapped, with a thread reading the last of them
 * without pause; one FREE of them all gives that frame (the free list is
 * LIFO) to a victim (uid 1001) spinning on ALLOC, which writes a secret
 * into it at once.  The reader must never see the secret: the attacker's
 * PTEs of every frame are gone before the core can hand one on (zapping
 * after the free would leave the last frame's PTE live while the others
 * are zapped).  Round after round.
 */
#define RACE_ROUNDS	1000
#define RACE_FRAMES	8
#define RACE_SECRET	0x5345435245540000ull	/* "SECRET" and the round */

struct race_reader {
	volatile __u64 *volatile p;	/* the frame */
	volatile int go, started, idle, quit, seen, bus;
};

static __thread sigjmp_buf race_jb;

static void race_sigbus(int sig)
{
	siglongjmp(race_jb, 1);
}

static void *race_read(void *arg)
{
	struct race_reader *r = arg;

	for (;;) {
		while (!r->go && !r->quit)
			;
		if (r->quit)
			return NULL;
		r->started = 1;
		if (!sigsetjmp(race_jb, 1)) {
			while (r->go) {
				__u64 v = *r->p;

				if ((v & ~0xffffull) == RACE_SECRET)
					r->seen++;
			}
		} else {
			/* Zapped: the frame is not ours any more. */
			r->bus++;
			while (r->go)
				;
		}
		r->idle = 1;	/* the mapping may go */
	}
}

static void race_attacker(const char *name, int to_victim, int from_victim)
{
	struct sigaction sa = { .sa_handler = race_sigbus };
	volatile __u64 *m[RACE_FRAMES];
	struct race_reader r = { 0 };
	struct kvarena_frame_fd ff;
	__u64 h[RACE_FRAMES];
	pthread_t t;
	int a, i, k;
	char b;

	drop_to(NOBODY);
	sigaction(SIGBUS, &sa, NULL);
	a = kva_open(O_RDWR);
	CHECK_EQ(0, kva_attach(a, name, "attacker", 0, 0, NULL));
	CHECK_EQ(0, pthread_create(&t, NULL, race_read, &r));
	for (i = 0; i < RACE_ROUNDS; i++) {
		CHECK_EQ(RACE_FRAMES, kva_alloc(a, h, RACE_FRAMES, 0));
		for (k = 0; k < RACE_FRAMES; k++) {
			CHECK_EQ(0, kva_frame_fd(a, h[k], &ff));
			m[k] = map_frames(ff.fd, KVARENA_HANDLE_IDX(h[k]), 1,
					  PROT_READ | PROT_WRITE);
			CHECK(m[k] != MAP_FAILED);
			close(ff.fd);
			m[k][0] = 0;	/* no secret of this round yet */
		}
		r.p = m[RACE_FRAMES - 1];
		r.idle = 0;
		r.started = 0;
		r.go = 1;
		/* The reader is reading when the frames go. */
		while (!r.started)
			;
		CHECK(write(to_victim, "g", 1) == 1);
		CHECK_EQ(0, kva_free(a, h, RACE_FRAMES));
		/* The victim has written its secret and freed the frame. */
		CHECK(read(from_victim, &b, 1) == 1);
		r.go = 0;
		while (!r.idle)
			;
		for (k = 0; k < RACE_FRAMES; k++)
			munmap((void *)m[k], FSIZE);
	}
	r.quit = 1;
	pthread_join(t, NULL);
	fprintf(stderr, "# %d rounds: the reader was cut off %d times, saw the victim's secret %d times\n",
		RACE_ROUNDS, r.bus, r.seen);
	CHECK_EQ(0, r.seen);
	_exit(0);
}

static void race_victim(const char *name, int from_attacker, int to_attacker)
{
	struct kvarena_frame_fd ff;
	int v, i, n;
	char b;

	drop_to(1001);
	v = kva_open(O_RDWR);
	CHECK_EQ(0, kva_attach(v, name, "victim", 0, 0, NULL));
	for (i = 0; i < RACE_ROUNDS; i++) {
		volatile __u64 *m;
		__u64 h;

		CHECK(read(from_attacker, &b, 1) == 1);
		/* The only free frame is about to be freed: take it at once. */
		while ((n = kva_alloc(v, &h, 1, 0)) == -ENOSPC)
			;
		CHECK_EQ(1, n);
		CHECK_EQ(0, kva_frame_fd(v, h, &ff));
		m = map_frames(ff.fd, KVARENA_HANDLE_IDX(h), 1,
			       PROT_READ | PROT_WRITE);
		CHECK(m != MAP_FAILED);
		close(ff.fd);
		m[0] = RACE_SECRET | (i & 0xffff);
		CHECK_EQ(0, kva_free(v, &h, 1));
		munmap((void *)m, FSIZE);
		CHECK(write(to_attacker, "d", 1) == 1);
	}
	_exit(0);
}

TEST_F_TIMEOUT(iso, no_reader_sees_the_next_holders_data_through_a_freed_frame, 300)
{
	int a2v[2], v2a[2], filler = kva_open(O_RDWR);
	pid_t attacker, victim;
	__u64 h[NR];

	/*
	 * Reader, victim and the freeing thread must run at once for the
	 * window to be tried: make check-vm boots this test a second time
	 * with four CPUs.
	 */
	if (sysconf(_SC_NPROCESSORS_ONLN) < 3)
		SKIP(close(filler); return,
		     "%ld CPUs: the race needs 3 (check-vm runs it on 4)",
		     sysconf(_SC_NPROCESSORS_ONLN));
	/* The rest held: the victim can only get the attacker's frames. */
	ASSERT_EQ(0, kva_attach(filler, self->name, "filler", 0, 0, NULL));
	ASSERT_EQ(NR - RACE_FRAMES,
		  kva_alloc(filler, h, NR - RACE_FRAMES, 0));
	ASSERT_EQ(0, pipe(a2v));
	ASSERT_EQ(0, pipe(v2a));
	victim = fork();
	ASSERT_LE(0, victim);
	if (victim == 0)
		race_victim(self->name, a2v[0], v2a[1]);
	attacker = fork();
	ASSERT_LE(0, attacker);
	if (attacker == 0)
		race_attacker(self->name, a2v[1], v2a[0]);
	EXPECT_EQ(0, reap(attacker));
	EXPECT_EQ(0, reap(victim));
	close(filler);
}

TEST_F(iso, release_zaps_every_mapping_the_client_had)
{
	const char *name = self->name;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kvarena_frame_fd ff;
		volatile char *m;
		__u64 h[4];
		pid_t c;
		int a;

		drop_to(NOBODY);
		a = kva_open(O_RDWR);
		CHECK_EQ(0, kva_attach(a, name, "dies", 0, 0, NULL));
		CHECK_EQ(4, kva_alloc(a, h, 4, 0));
		CHECK_EQ(0, kva_frame_fd(a, h[2], &ff));
		m = map_frames(ff.fd, KVARENA_HANDLE_IDX(h[2]), 1,
			       PROT_READ | PROT_WRITE);
		CHECK(m != MAP_FAILED);
		m[0] = 1;
		/* A forked child shares the mapping, and loses it too. */
		c = fork();
		if (c == 0) {
			sleep(60);	/* holding the device file open */
			_exit(0);
		}
		/* Closing the device file releases the client... */
		close(a);
		/* ...but the child still has it open: nothing yet. */
		CHECK_EQ(1, m[0]);
		kill(c, SIGKILL);
		CHECK_EQ(1000 + SIGKILL, reap(c));
		/* Now the client is gone, and so is the frame, for everyone. */
		CHECK(touch_gets_sigbus(m, false));
		CHECK(map_frames(ff.fd, KVARENA_HANDLE_IDX(h[2]), 1,
				 PROT_READ) == MAP_FAILED);
		_exit(0);
	}
	EXPECT_EQ(0, reap(pid));
}

TEST_F(iso, free_of_a_mapped_frame_over_io_uring_zaps_it_too)
{
	struct kvarena_frames f = { .count = 1 };
	struct kvarena_frame_fd ff;
	volatile char *m;
	struct io_uring ring;
	int a = kva_open(O_RDWR);
	__u64 h;

	KVA_NEED_URING();
	ASSERT_EQ(0, kva_attach(a, self->name, "ring", 0, 0, NULL));
	ASSERT_EQ(1, kva_alloc(a, &h, 1, 0));
	ASSERT_EQ(0, kva_frame_fd(a, h, &ff));
	m = map_frames(ff.fd, KVARENA_HANDLE_IDX(h), 1, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, m);
	m[0] = 7;
	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	f.handles = (__u64)(unsigned long)&h;
	/* Inline it would have to sleep to zap: io_uring's worker does it. */
	EXPECT_EQ(0, kva_uring_one(&ring, a, KVARENA_IOC_FREE, &f, 0));
	EXPECT_EQ(1, f.nr_done);
	EXPECT_TRUE(touch_gets_sigbus(m, false));
	io_uring_queue_exit(&ring);
	munmap((void *)m, FSIZE);
	close(ff.fd);
	close(a);
}

TEST_F(iso, free_reports_success_even_when_nr_done_cannot_be_written)
{
	struct kvarena_frames *f;
	struct kvarena_stat s;
	int a = kva_open(O_RDWR);
	__u64 *h;

	ASSERT_EQ(0, kva_attach(a, self->name, "ro-args", 0, 0, NULL));
	f = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, f);
	h = (__u64 *)(f + 1);
	ASSERT_EQ(3, kva_alloc(a, h, 3, 0));
	f->handles = (__u64)(unsigned long)h;
	f->count = 3;
	ASSERT_EQ(0, mprotect(f, 4096, PROT_READ));
	/* Freed: that is the answer, whether or not nr_done can be set. */
	EXPECT_EQ(0, kva_ioctl(a, KVARENA_IOC_FREE, f));
	ASSERT_EQ(0, kva_stat(a, self->name, &s));
	EXPECT_EQ(NR, s.nr_free);
	EXPECT_EQ(-ESTALE, kva_ioctl(a, KVARENA_IOC_FREE, f));
	munmap(f, 4096);
	close(a);
}

static int evict(int admin, const char *name, __u32 id, __u32 *nr)
{
	struct kvarena_evict e = { .client_id = id };
	int ret;

	snprintf(e.name, sizeof(e.name), "%s", name);
	ret = kva_ioctl(admin, KVARENA_IOC_EVICT, &e);
	if (nr)
		*nr = e.nr_frames;
	return ret;
}

TEST_F(iso, evicted_client_loses_its_mappings_and_frames_and_gets_eshutdown)
{
	int p2c[2], c2p[2];
	struct kvarena_stat s;
	__u32 nr = 0, id;
	pid_t pid;
	char b;

	ASSERT_EQ(0, pipe(p2c));
	ASSERT_EQ(0, pipe(c2p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kvarena_frames f = { .count = 1 };
		struct kvarena_usage u = { 0 };
		struct kvarena_frame_fd ff;
		struct kvarena_attach at;
		volatile char *m;
		__u64 h[3];
		int a;

		drop_to(NOBODY);
		a = kva_open(O_RDWR);
		CHECK_EQ(0, kva_attach(a, self->name, "runaway", 0, 0, &at));
		CHECK_EQ(3, kva_alloc(a, h, 3, 0));
		CHECK_EQ(0, kva_frame_fd(a, h[1], &ff));
		m = map_frames(ff.fd, KVARENA_HANDLE_IDX(h[1]), 1,
			       PROT_READ | PROT_WRITE);
		CHECK(m != MAP_FAILED);
		m[0] = 1;
		id = at.client_id;
		CHECK(write(c2p[1], &id, sizeof(id)) == sizeof(id));
		CHECK(read(p2c[0], &b, 1) == 1);	/* evicted now */
		CHECK(touch_gets_sigbus(m, false));
		CHECK(map_frames(ff.fd, KVARENA_HANDLE_IDX(h[1]), 1,
				 PROT_READ) == MAP_FAILED);
		CHECK_EQ(ESHUTDOWN, errno);
		CHECK_EQ(-ESHUTDOWN, kva_alloc(a, h, 1, 0));
		f.handles = (__u64)(unsigned long)h;
		CHECK_EQ(-ESHUTDOWN, kva_ioctl(a, KVARENA_IOC_FREE, &f));
		CHECK_EQ(-ESHUTDOWN, kva_frame_fd(a, h[0], &ff));
		CHECK_EQ(-ESHUTDOWN, kva_ioctl(a, KVARENA_IOC_SET_USAGE, &u));
		/* Its fdinfo says so, to its own unprivileged reader. */
		CHECK(kva_fdinfo_has(a, "\nkvarena-frames-held:\t0\n"));
		CHECK(kva_fdinfo_has(a, "\nkvarena-evicted:\t1\n"));
		/* Not a client any more, and it cannot become one again. */
		CHECK_EQ(-EBUSY, kva_attach(a, self->name, "again", 0, 0, NULL));
		close(a);
		_exit(0);
	}
	ASSERT_EQ(sizeof(id), read(c2p[0], &id, sizeof(id)));
	EXPECT_EQ(0, evict(self->admin, self->name, id, &nr));
	EXPECT_EQ(3, nr);
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(0, s.nr_held);
	EXPECT_EQ(0, s.nr_clients);
	ASSERT_EQ(1, write(p2c[1], "e", 1));
	EXPECT_EQ(0, reap(pid));
	/* Twice: gone. */
	EXPECT_EQ(-ENOENT, evict(self->admin, self->name, id, &nr));
}

TEST_F(iso, evict_is_the_admins_over_ioctl_and_checks_its_arguments)
{
	const char *no_ring = kva_uring_missing();
	struct kvarena_evict e = { 0 };
	struct kvarena_attach at;
	struct io_uring ring;
	int c = kva_open(O_RDWR);
	__u32 nr = 7;
	__u64 h[2];
	pid_t pid;

	ASSERT_EQ(0, kva_attach(c, self->name, "victim", 0, 0, &at));
	ASSERT_EQ(2, kva_alloc(c, h, 2, 0));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int rw;

		drop_to(NOBODY);
		rw = kva_open(O_RDWR);
		CHECK_EQ(-EPERM, evict(rw, self->name, at.client_id, NULL));
		_exit(0);
	}
	EXPECT_EQ(0, reap(pid));
	snprintf(e.name, sizeof(e.name), "%s", self->name);
	e.client_id = at.client_id;
	if (!no_ring) {
		ASSERT_EQ(0, io_uring_queue_init(2, &ring, 0));
		EXPECT_EQ(-EPERM, kva_uring_one(&ring, self->admin,
						KVARENA_IOC_EVICT, &e, 0));
		io_uring_queue_exit(&ring);
	}
	e.flags = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->admin, KVARENA_IOC_EVICT, &e));
	e.flags = 0;
	e.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->admin, KVARENA_IOC_EVICT, &e));
	EXPECT_EQ(-ENOENT, evict(self->admin, self->name, at.client_id + 99, NULL));
	EXPECT_EQ(-ENOENT, evict(self->admin, "no-such-arena", 1, NULL));
	EXPECT_EQ(0, evict(self->admin, self->name, at.client_id, &nr));
	EXPECT_EQ(2, nr);
	/* The file is open still; the arena can go. */
	EXPECT_EQ(-ESHUTDOWN, kva_free(c, h, 2));
	EXPECT_EQ(0, kva_destroy(self->admin, self->name));
	ASSERT_EQ(0, make_host_arena(self->admin, self->name, 0));
	close(c);
	KVA_URING_PART_SKIPPED(no_ring);
}

/* ---- the permission matrix ------------------------------------------------ */

enum role { RO_OPEN, USER_RW, ADMIN, NR_ROLES };
enum frame_kind { OWN, OTHERS, UNHELD, NR_KINDS };

static const char *const role_name[] = { "read-only open", "uid 65534",
					 "CAP_SYS_ADMIN" };

/*
 * Every command as each role over @uring, against the arena @name where a
 * client "other" (root) holds frame @other and frame @unheld is free.
 * Returns 0 or the line of the first unexpected answer.
 */
static int matrix(enum role role, bool uring, const char *name, __u64 other,
		  __u64 unheld)
{
	int rw, ro, fd;
	int eperm_admin = (role == ADMIN && !uring) ? 0 : -EPERM;
	struct kvarena_arena_create cr = { .frame_size = FSIZE, .nr_frames = 2,
					   .flags = KVARENA_CREATE_NO_BACKING };
	struct kvarena_arena_destroy de = { 0 };
	struct kvarena_set_backing sb = { .nr_frames = 1, .fd = -1 };
	struct kvarena_arena_policy po = { .mode = 0666 };
	struct kvarena_limits li = { .client_id = 999999 };
	struct kvarena_evict ev = { .client_id = 999999 };
	struct kvarena_attach at = { 0 };
	struct kvarena_version v = { 0 };
	struct kvarena_stat st = { 0 };
	struct kvarena_clients cl = { 0 };
	struct kvarena_usage us = { 0 };
	__u64 h[3] = { 0 }, own;
	struct kvarena_frames fr = { .handles = (__u64)(unsigned long)h,
				     .count = 1 };
	struct kvarena_frame_fd ff = { 0 };
	struct io_uring ring;
	enum frame_kind k;
	char xname[32];
	int mfd = kva_sealed_memfd(FSIZE);

#define RUN(cmd, arg) (uring ? kva_uring_one(&ring, fd, cmd, arg, 0) :	\
		       kva_ioctl(fd, cmd, arg))

	if (role != ADMIN)
		drop_to(NOBODY);
	rw = kva_open(O_RDWR);
	ro = kva_open(O_RDONLY);
	fd = role == RO_OPEN ? ro : rw;
	if (rw < 0 || ro < 0 || mfd < 0)
		return __LINE__;
	if (uring && io_uring_queue_init(8, &ring, 0))
		return __LINE__;
	snprintf(xname, sizeof(xname), "x%d", getpid());
	strcpy(cr.name, xname);
	strcpy(de.name, xname);
	strcpy(sb.name, name);
	sb.fd = mfd;
	strcpy(po.name, name);
	strcpy(li.name, name);
	strcpy(ev.name, name);
	strcpy(at.name, name);
	strcpy(st.name, name);
	strcpy(cl.name, name);

	if (RUN(KVARENA_IOC_VERSION, &v) || v.abi_version != KVARENA_ABI_VERSION)
		return __LINE__;
	if (RUN(KVARENA_IOC_STAT, &st) || st.nr_frames != NR)
		return __LINE__;
	/* The client "other" is root's: only root sees it. */
	if (RUN(KVARENA_IOC_CLIENTS, &cl) || cl.nr_clients != (role == ADMIN))
		return __LINE__;

	/* Admin commands: writers only, CAP_SYS_ADMIN, ioctl() only. */
	if (RUN(KVARENA_IOC_ARENA_CREATE, &cr) !=
	    (role == RO_OPEN ? -EBADF : eperm_admin))
		return __LINE__;
	if (RUN(KVARENA_IOC_ARENA_DESTROY, &de) !=
	    (role == RO_OPEN ? -EBADF : eperm_admin))
		return __LINE__;
	/* Every frame is backed already: the admin gets -EBUSY. */
	if (RUN(KVARENA_IOC_ARENA_SET_BACKING, &sb) !=
	    (role == RO_OPEN ? -EBADF : eperm_admin ?: -EBUSY))
		return __LINE__;
	if (RUN(KVARENA_IOC_ARENA_SET_POLICY, &po) !=
	    (role == RO_OPEN ? -EBADF : eperm_admin))
		return __LINE__;
	if (RUN(KVARENA_IOC_SET_LIMITS, &li) !=
	    (role == RO_OPEN ? -EBADF : eperm_admin ?: -ENOENT))
		return __LINE__;
	if (RUN(KVARENA_IOC_EVICT, &ev) !=
	    (role == RO_OPEN ? -EBADF : eperm_admin ?: -ENOENT))
		return __LINE__;

	/* Client commands before ATTACH. */
	if (RUN(KVARENA_IOC_ALLOC, &fr) !=
	    (role == RO_OPEN ? -EBADF : -ENOTCONN))
		return __LINE__;
	if (RUN(KVARENA_IOC_SET_USAGE, &us) !=
	    (role == RO_OPEN ? -EBADF : -ENOTCONN))
		return __LINE__;
	if (RUN(KVARENA_IOC_ATTACH, &at) != (role == RO_OPEN ? -EBADF : 0))
		return __LINE__;
	if (role == RO_OPEN)
		return 0;

	if (RUN(KVARENA_IOC_ALLOC, &fr) || fr.nr_done != 1)
		return __LINE__;
	own = h[0];
	for (k = OWN; k < NR_KINDS; k++) {
		__u64 hk = k == OWN ? own : k == OTHERS ? other : unheld;
		int want = k == OWN ? 0 : k == OTHERS ? -EPERM : -ENOENT;

		ff = (struct kvarena_frame_fd){ .handle = hk };
		if (RUN(KVARENA_IOC_FRAME_FD, &ff) != want)
			return __LINE__;
		if (!want) {
			void *m = map_frames(ff.fd, KVARENA_HANDLE_IDX(hk), 1,
					     PROT_READ | PROT_WRITE);

			if (m == MAP_FAILED)
				return __LINE__;
			munmap(m, FSIZE);
		} else if (ff.fd) {
			return __LINE__;	/* no fd on a refusal */
		}
		if (k == OWN)
			continue;
		h[0] = hk;
		fr.nr_done = 0;
		if (RUN(KVARENA_IOC_FREE, &fr) != want)
			return __LINE__;
	}
	us.filled_tokens = 1;
	us.filled_bytes = FSIZE;
	if (RUN(KVARENA_IOC_SET_USAGE, &us))
		return __LINE__;
	h[0] = own;
	if (RUN(KVARENA_IOC_FREE, &fr) || fr.nr_done != 1)
		return __LINE__;
	/* Stale now, and a double free is refused the same way. */
	if (RUN(KVARENA_IOC_FREE, &fr) != -ESTALE)
		return __LINE__;
	ff = (struct kvarena_frame_fd){ .handle = own };
	if (RUN(KVARENA_IOC_FRAME_FD, &ff) != -ESTALE)
		return __LINE__;
	if (uring)
		io_uring_queue_exit(&ring);
	return 0;
#undef RUN
}

TEST_F(iso, permission_matrix_of_every_command_role_and_frame)
{
	struct kvarena_frame_fd ff;
	struct kvarena_stat s;
	int other = kva_open(O_RDWR);
	__u64 h[NR], unheld;
	const char *no_ring = kva_uring_missing();
	enum role role;
	int uring;

	ASSERT_EQ(0, kva_attach(other, self->name, "other", 0, 0, NULL));
	ASSERT_EQ(NR, kva_alloc(other, h, NR, 0));
	/*
	 * Frame of h[1] published and let go: a cached frame nobody holds,
	 * whose handle stays as it is and that no ALLOC takes while free
	 * frames are left.
	 */
	ASSERT_EQ(1, publish(other, 77, h + 1, 1));
	ASSERT_EQ(0, kva_free(other, h + 1, 1));
	unheld = h[1];
	ASSERT_EQ(0, kva_free(other, h + 2, NR - 2));
	ASSERT_EQ(0, kva_frame_fd(other, h[0], &ff));
	for (uring = 0; uring < (no_ring ? 1 : 2); uring++) {
		for (role = RO_OPEN; role < NR_ROLES; role++) {
			pid_t pid = fork();

			ASSERT_LE(0, pid);
			if (pid == 0)
				_exit(matrix(role, uring, self->name, h[0],
					     unheld) & 0xff);
			EXPECT_EQ(0, reap(pid))
				TH_LOG("%s over %s: failed at line %d (mod 256)",
				       role_name[role],
				       uring ? "io_uring" : "ioctl",
				       reap(pid));
		}
	}
	/* Nobody took or freed the other client's frame. */
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(1, s.nr_held);
	EXPECT_EQ(1, s.nr_clients);
	close(ff.fd);
	close(other);
	KVA_URING_PART_SKIPPED(no_ring);
}

/* ---- io_uring: async workers and SQPOLL ---------------------------------- */

static int ring_batch(struct io_uring *ring, int fd, __u8 sqe_flags)
{
	struct kvarena_frames a = { .count = 4 }, f = { .count = 4 };
	struct kvarena_usage u = { .filled_tokens = 3, .filled_bytes = 3 };
	struct kvarena_frame_fd ff = { 0 };
	struct kvarena_version v = { 0 };
	__u64 h[4];
	int res[4], ret;

	a.handles = f.handles = (__u64)(unsigned long)h;
	kva_queue_cmd(ring, 0, fd, KVARENA_IOC_VERSION, &v, 0, sqe_flags);
	kva_queue_cmd(ring, 1, fd, KVARENA_IOC_ALLOC, &a, 0,
		      sqe_flags | IOSQE_IO_LINK);
	kva_queue_cmd(ring, 2, fd, KVARENA_IOC_SET_USAGE, &u, 0, sqe_flags);
	ret = kva_submit_and_reap(ring, 3, res);
	if (ret || res[0] || res[1] || res[2] || a.nr_done != 4 ||
	    v.abi_version != KVARENA_ABI_VERSION)
		return __LINE__;
	ff.handle = h[3];
	kva_queue_cmd(ring, 0, fd, KVARENA_IOC_FRAME_FD, &ff, 0,
		      sqe_flags | IOSQE_IO_LINK);
	kva_queue_cmd(ring, 1, fd, KVARENA_IOC_FREE, &f, 0, sqe_flags);
	ret = kva_submit_and_reap(ring, 2, res);
	if (ret || res[0] || res[1] || f.nr_done != 4 || ff.fd <= 0)
		return __LINE__;
	close(ff.fd);
	return 0;
}

TEST_F(iso, commands_run_from_io_uring_workers_and_sqpoll)
{
	struct io_uring_params p = { .flags = IORING_SETUP_SQPOLL,
				     .sq_thread_idle = 100 };
	struct kvarena_stat s;
	struct io_uring ring;
	int a = kva_open(O_RDWR), ret;

	KVA_NEED_URING();
	ASSERT_EQ(0, kva_attach(a, self->name, "rings", 0, 0, NULL));
	ASSERT_EQ(0, io_uring_queue_init(8, &ring, 0));
	EXPECT_EQ(0, ring_batch(&ring, a, 0));
	/* IOSQE_ASYNC: every command from io_uring's worker thread. */
	EXPECT_EQ(0, ring_batch(&ring, a, IOSQE_ASYNC));
	io_uring_queue_exit(&ring);
	ret = io_uring_queue_init_params(8, &ring, &p);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(0, ring_batch(&ring, a, 0));
	EXPECT_EQ(0, ring_batch(&ring, a, IOSQE_ASYNC));
	io_uring_queue_exit(&ring);
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(0, s.nr_held);
	EXPECT_EQ(3, s.filled_tokens);
	close(a);
	EXPECT_EQ(0, kva_wait_no_clients(self->admin, self->name));
}

/* Threads of this process that are io_uring workers (comm "iou-wrk-*"). */
static int uring_workers(void)
{
	char path[300], comm[32];
	struct dirent *e;
	int n = 0;
	DIR *d = opendir("/proc/self/task");

	while (d && (e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 e->d_name);
		f = fopen(path, "re");
		if (f && fgets(comm, sizeof(comm), f) &&
		    !strncmp(comm, "iou-wrk-", 8))
			n++;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

/*
 * The hot commands finish inline, without sleeping; whatever would sleep
 * (a user page not yet present, a command that always sleeps) is handed to
 * io_uring's worker, which a fresh process shows as its first iou-wrk
 * thread.
 */
TEST_F(iso, hot_commands_complete_inline_and_the_rest_go_to_a_worker)
{
	const char *name = self->name;
	pid_t pid;

	KVA_NEED_URING();
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kvarena_frames f = { .count = 4 };
		struct kvarena_stat st = { 0 };
		struct io_uring ring;
		int a = kva_open(O_RDWR);
		__u64 h[4], *cold;

		CHECK_EQ(0, kva_attach(a, name, "inline", 0, 0, NULL));
		CHECK_EQ(0, io_uring_queue_init(4, &ring, 0));
		f.handles = (__u64)(unsigned long)h;
		h[0] = 0;	/* present */
		CHECK_EQ(0, kva_uring_one(&ring, a, KVARENA_IOC_ALLOC, &f, 0));
		CHECK_EQ(0, kva_uring_one(&ring, a, KVARENA_IOC_FREE, &f, 0));
		CHECK_EQ(0, uring_workers());
		/* Handles to a page never touched: copied out by a worker. */
		cold = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(cold != MAP_FAILED);
		f.handles = (__u64)(unsigned long)cold;
		CHECK_EQ(0, kva_uring_one(&ring, a, KVARENA_IOC_ALLOC, &f, 0));
		CHECK_EQ(4, f.nr_done);
		CHECK(cold[3] != 0);
		CHECK(uring_workers() >= 1);
		CHECK_EQ(0, kva_uring_one(&ring, a, KVARENA_IOC_FREE, &f, 0));
		snprintf(st.name, sizeof(st.name), "%s", name);
		CHECK_EQ(0, kva_uring_one(&ring, a, KVARENA_IOC_STAT, &st, 0));
		CHECK_EQ(0, st.nr_held);
		_exit(0);
	}
	EXPECT_EQ(0, reap(pid));
}

/* ---- review items ----------------------------------------------------------- */

TEST(host_backing_must_be_sealed_memory)
{
	int fd = kva_open(O_RDWR), loose, mfd, dir, tmp, hfd;
	const char *name = "seal";
	struct kvarena_stat s;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kva_create_flags(fd, name, NR, FSIZE, 0, 0));
	/* A memfd nobody sealed could be shrunk under a mapping. */
	loose = memfd_create("loose", MFD_CLOEXEC);
	ASSERT_EQ(0, ftruncate(loose, NR * FSIZE));
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 1, loose, 0));
	/* A plain tmpfs file cannot be sealed at all. */
	tmp = open("/tmp", O_TMPFILE | O_RDWR, 0600);
	ASSERT_LE(0, tmp);
	ASSERT_EQ(0, ftruncate(tmp, NR * FSIZE));
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 1, tmp, 0));
	/* Not memory at all. */
	dir = open("/", O_RDONLY | O_DIRECTORY);
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 1, dir, 0));
	/* Huge pages: frames of 64 KiB cannot lie on 2 MiB pages. */
	hfd = memfd_create("huge", MFD_CLOEXEC | MFD_HUGETLB |
			   MFD_ALLOW_SEALING);
	if (hfd >= 0 && !ftruncate(hfd, 2 << 20)) {
		EXPECT_EQ(0, fcntl(hfd, F_ADD_SEALS, F_SEAL_SHRINK));
		EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 1, hfd, 0));
	}
	if (hfd >= 0)
		close(hfd);
	mfd = kva_sealed_memfd(NR * FSIZE);
	ASSERT_EQ(0, kva_set_backing(fd, name, 0, NR, mfd, 0));
	ASSERT_EQ(0, kva_stat(fd, name, &s));
	EXPECT_EQ(NR, s.nr_backed);
	EXPECT_EQ(0, kva_destroy(fd, name));
	close(mfd);
	close(dir);
	close(tmp);
	close(loose);
	close(fd);
}

TEST(cuda_backing_refuses_what_is_not_exported_memory)
{
	struct kvarena_arena_create c = { .frame_size = FSIZE, .nr_frames = 8,
					  .mem_kind = KVARENA_MEM_CUDA };
	int fd = kva_open(O_RDWR), sock[2], pipefd[2], dir, sys, null;
	const char *name = "cudachk";
	struct io_uring ring;
	struct kvarena_stat s;

	ASSERT_LE(0, fd);
	strcpy(c.name, name);
	ASSERT_EQ(0, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sock));
	ASSERT_EQ(0, pipe(pipefd));
	ASSERT_EQ(0, io_uring_queue_init(2, &ring, 0));
	dir = open("/", O_RDONLY | O_DIRECTORY);
	sys = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDWR);
	null = open("/dev/null", O_RDWR);
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 1, sock[0], 0));
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 1, pipefd[0], 0));
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 1, dir, 0));
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 1, ring.ring_fd, 0));
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 1, fd, 0));
	if (sys >= 0)	/* a regular file on a filesystem that is not memory */
		EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 1, sys, 0));
	/* One allocation a frame, from its start: what cuMemMap() maps. */
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 2, null, 0));
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 1, null, 4096));
	ASSERT_EQ(0, kva_stat(fd, name, &s));
	EXPECT_EQ(0, s.nr_backed);
	/* A character device is what GPU drivers export: taken. */
	EXPECT_EQ(0, kva_set_backing(fd, name, 0, 1, null, 0));
	EXPECT_EQ(0, kva_destroy(fd, name));
	io_uring_queue_exit(&ring);
	close(null);
	if (sys >= 0)
		close(sys);
	close(dir);
	close(pipefd[0]);
	close(pipefd[1]);
	close(sock[0]);
	close(sock[1]);
	close(fd);
}

TEST_F(iso, pressure_counts_frames_reserved_for_others)
{
	struct kvarena_stat s;
	int a = kva_open(O_RDWR), b = kva_open(O_RDWR);

	/* Watermark 4 on NR free frames: no pressure. */
	ASSERT_EQ(0, kva_destroy(self->admin, self->name));
	ASSERT_EQ(0, make_host_arena(self->admin, self->name, 4));
	ASSERT_EQ(0, kva_stat(a, self->name, &s));
	EXPECT_EQ(0, s.state & KVARENA_STATE_PRESSURE);
	/* A guarantee of NR - 3 leaves 3 for the others: pressure, at once. */
	ASSERT_EQ(0, kva_attach(a, self->name, "guaranteed", NR - 3, 0, NULL));
	ASSERT_EQ(0, kva_stat(b, self->name, &s));
	EXPECT_EQ(KVARENA_STATE_PRESSURE, s.state & KVARENA_STATE_PRESSURE);
	ASSERT_EQ(0, kva_attach(b, self->name, "watcher", 0, 0, NULL));
	/* SET_LIMITS lowering it ends the pressure... */
	ASSERT_EQ(0, kva_set_limits(self->admin, self->name, 1, 2, 0));
	ASSERT_EQ(0, kva_stat(b, self->name, &s));
	EXPECT_EQ(0, s.state & KVARENA_STATE_PRESSURE);
	/* ...raising it starts it, and release ends it. */
	ASSERT_EQ(0, kva_set_limits(self->admin, self->name, 1, NR - 2, 0));
	ASSERT_EQ(0, kva_stat(b, self->name, &s));
	EXPECT_EQ(KVARENA_STATE_PRESSURE, s.state & KVARENA_STATE_PRESSURE);
	close(a);
	ASSERT_EQ(0, kva_stat(b, self->name, &s));
	EXPECT_EQ(0, s.state & KVARENA_STATE_PRESSURE);
	close(b);
}

TEST_F(iso, poll_before_attach_waits_and_attach_wakes_it)
{
	struct kvarena_stat s;
	int holder = kva_open(O_RDWR), late = kva_open(O_RDWR);
	__u64 h[NR];
	pid_t pid;

	ASSERT_EQ(0, kva_destroy(self->admin, self->name));
	ASSERT_EQ(0, make_host_arena(self->admin, self->name, 4));
	ASSERT_EQ(0, kva_attach(holder, self->name, "holder", 0, 0, NULL));
	ASSERT_EQ(NR - 2, kva_alloc(holder, h, NR - 2, 0));
	ASSERT_EQ(0, kva_stat(holder, self->name, &s));
	ASSERT_EQ(KVARENA_STATE_PRESSURE, s.state & KVARENA_STATE_PRESSURE);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct pollfd p = { .fd = late, .events = POLLPRI };

		/* Not attached: nothing to report, so it waits. */
		if (poll(&p, 1, 0) != 0)
			_exit(1);
		if (poll(&p, 1, 20000) != 1 || p.revents != POLLPRI)
			_exit(2);
		_exit(0);
	}
	usleep(200 * 1000);
	/* The child polls the same file: attaching it wakes the child. */
	ASSERT_EQ(0, kva_attach(late, self->name, "late", 0, 0, NULL));
	EXPECT_EQ(0, reap(pid));
	close(late);
	close(holder);
}

/*
 * A tenant refused frames sleeps in poll() until another tenant's frames
 * come back - here when that tenant, of another uid, is killed - and an
 * evicted waiter wakes with POLLERR rather than sleeping on.
 */
TEST_F(iso, a_refused_tenant_sleeps_until_another_uids_frames_come_back)
{
	int ready[2], go[2], all;
	pid_t holder, waiter, late;
	__u64 h[NR];
	__u32 id = 0, nr;
	char b;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	holder = fork();
	ASSERT_LE(0, holder);
	if (holder == 0) {
		int a;

		drop_to(1001);
		a = kva_open(O_RDWR);
		CHECK_EQ(0, kva_attach(a, self->name, "holder", 0, 0, NULL));
		CHECK_EQ(NR, kva_alloc(a, h, NR, 0));
		CHECK(write(ready[1], "h", 1) == 1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &b, 1));
	waiter = fork();
	ASSERT_LE(0, waiter);
	if (waiter == 0) {
		struct pollfd p = { .events = POLLOUT };

		drop_to(NOBODY);
		p.fd = kva_open(O_RDWR);
		CHECK_EQ(0, kva_attach(p.fd, self->name, "waiter", 0, 0, NULL));
		CHECK_EQ(-ENOSPC, kva_alloc(p.fd, h, NR, 0));
		CHECK_EQ(0, poll(&p, 1, 0));
		CHECK(write(ready[1], "w", 1) == 1);
		CHECK_EQ(1, poll(&p, 1, 20000));
		CHECK_EQ(POLLOUT, p.revents);
		CHECK_EQ(NR, kva_alloc(p.fd, h, NR, 0));
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &b, 1));
	usleep(100 * 1000);
	EXPECT_EQ(0, waitpid(waiter, NULL, WNOHANG));	/* still asleep */
	ASSERT_EQ(0, kill(holder, SIGKILL));
	EXPECT_EQ(1000 + SIGKILL, reap(holder));
	EXPECT_EQ(0, reap(waiter));

	/* Refused, asleep, evicted: poll() returns POLLERR. */
	ASSERT_EQ(0, kva_wait_no_clients(self->admin, self->name));
	all = kva_open(O_RDWR);
	ASSERT_EQ(0, kva_attach(all, self->name, "all", 0, 0, NULL));
	ASSERT_EQ(NR, kva_alloc(all, h, NR, 0));
	late = fork();
	ASSERT_LE(0, late);
	if (late == 0) {
		struct pollfd p = { .events = POLLOUT };
		struct kvarena_attach at;

		drop_to(NOBODY);
		p.fd = kva_open(O_RDWR);
		CHECK_EQ(0, kva_attach(p.fd, self->name, "late", 0, 0, &at));
		CHECK_EQ(-ENOSPC, kva_alloc(p.fd, h, 1, 0));
		CHECK(write(go[1], &at.client_id, sizeof(at.client_id)) ==
		      sizeof(at.client_id));
		CHECK_EQ(1, poll(&p, 1, 20000));
		CHECK_EQ(POLLERR, p.revents);
		_exit(0);
	}
	ASSERT_EQ(sizeof(id), read(go[0], &id, sizeof(id)));
	usleep(100 * 1000);
	EXPECT_EQ(0, evict(self->admin, self->name, id, &nr));
	EXPECT_EQ(0, reap(late));
	close(all);
}

TEST_F(iso, client_ids_are_never_reused)
{
	struct kvarena_attach at;
	__u32 last = 0;
	int i;

	for (i = 0; i < 64; i++) {
		int c = kva_open(O_RDWR);

		ASSERT_EQ(0, kva_attach(c, self->name, "churn", 0, 0, &at));
		EXPECT_LT(last, at.client_id);
		last = at.client_id;
		close(c);
	}
}

/*
 * CLIENTS writes min(count, nr_clients) rows, also when clients attach
 * between its reading the arena's client count (to size its buffer) and
 * its walk: a row left unwritten would be whatever the caller's buffer
 * held, read as a client.  A child attaches and lets go of up to 40
 * clients at a time while the parent asks, its buffer filled with a
 * pattern no row has before each call.
 */
TEST_F_TIMEOUT(iso, clients_writes_a_row_for_every_client_it_counts, 300)
{
	enum { ROWS = 64, ROUNDS = 300, AT_ONCE = 40 };
	static struct kvarena_client_info rows[ROWS];
	unsigned long calls = 0, short_rows = 0;
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (!pid) {
		int fds[AT_ONCE], r, i;

		for (r = 0; r < ROUNDS; r++) {
			for (i = 0; i < AT_ONCE; i++) {
				fds[i] = kva_open(O_RDWR);
				if (fds[i] < 0 || kva_attach(fds[i], self->name,
							     "churn", 0, 0, NULL))
					_exit(1);
			}
			for (i = 0; i < AT_ONCE; i++)
				close(fds[i]);
		}
		_exit(0);
	}
	while (waitpid(pid, &status, WNOHANG) == 0) {
		struct kvarena_clients c = {
			.clients = (__u64)(unsigned long)rows, .count = ROWS };
		__u32 n, j;

		memset(rows, 0xa5, sizeof(rows));
		snprintf(c.name, sizeof(c.name), "%s", self->name);
		ASSERT_EQ(0, kva_ioctl(self->admin, KVARENA_IOC_CLIENTS, &c));
		n = c.nr_clients < ROWS ? c.nr_clients : ROWS;
		for (j = 0; j < n; j++)
			if (rows[j].client_id == 0xa5a5a5a5u)
				short_rows++;
		calls++;
	}
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, short_rows);
	TH_LOG("%lu CLIENTS calls beside %d attaches", calls,
	       ROUNDS * AT_ONCE);
}

TEST_F(iso, set_limits_finds_clients_by_id)
{
	struct kvarena_attach at;
	int c = kva_open(O_RDWR);

	ASSERT_EQ(0, kva_attach(c, self->name, "x", 0, 0, &at));
	EXPECT_EQ(0, kva_set_limits(self->admin, self->name, at.client_id, 1, 4));
	EXPECT_EQ(-ENOENT, kva_set_limits(self->admin, self->name,
					  at.client_id + 1, 1, 4));
	EXPECT_EQ(-ENOENT, kva_set_limits(self->admin, self->name,
					  0x80000000u, 1, 4));
	close(c);
	EXPECT_EQ(-ENOENT, kva_set_limits(self->admin, self->name,
					  at.client_id, 1, 4));
}

TEST_HARNESS_MAIN
