// SPDX-License-Identifier: GPL-2.0
/*
 * Frames charged to the dmem cgroup controller, against the real module
 * and the kernel's own controller in the VM (CONFIG_CGROUP_DMEM: the debug
 * kernel; every other kernel SKIPs with the reason).
 *
 * Each test works in cgroups of its own under /sys/fs/cgroup and reads
 * only their files (dmem.current of a cgroup only this test's processes
 * are in), never a machine-wide figure.
 */
#include <liburing.h>
#include <signal.h>
#include <stdint.h>

#include "kselftest_harness.h"
#include "kva_test.h"
#include "kva_tenant.h"
#include "kva_uring.h"

#define FSIZE	(64u << 10)
#define NR	32
/* Cgroups charging one arena at once in many_cgroups_... */
#define NCG	20

/* Why this kernel's kvarena charges no dmem cgroup, or NULL. */
static const char *dmem_missing(void)
{
	struct kvarena_version v = { 0 };
	int fd = kva_open(O_RDONLY), ret;

	if (fd < 0)
		return "/dev/kvarena cannot be opened";
	ret = kva_ioctl(fd, KVARENA_IOC_VERSION, &v);
	close(fd);
	if (ret)
		return "KVARENA_IOC_VERSION failed";
	if (!(v.features & KVARENA_FEAT_DMEM))
		return "kvarena.ko charges no dmem cgroup on this kernel (CONFIG_CGROUP_DMEM with the 7.x region interface; Debian's kernels have it off)";
	if (access(KVA_CGROUP_ROOT "/cgroup.controllers", F_OK) &&
	    mount("cgroup2", KVA_CGROUP_ROOT, "cgroup2", 0, NULL))
		return "cgroup2 cannot be mounted";
	if (kva_write_file(KVA_CGROUP_ROOT "/cgroup.subtree_control", "+dmem"))
		return "the dmem controller cannot be enabled (cgroup_disable=dmem?)";
	return NULL;
}

#define NEED_DMEM()							\
	do {								\
		const char *why_ = dmem_missing();			\
		if (why_)						\
			SKIP(return, "%s", why_);			\
	} while (0)

/* A cgroup @leaf under the test's own, made (with dmem for children). */
static void cg_path(char *path, size_t len, const char *leaf)
{
	snprintf(path, len, KVA_CGROUP_ROOT "/kvadmem%d%s%s", (int)getpid(),
		 leaf ? "/" : "", leaf ? leaf : "");
}

static int cg_make(const char *leaf, char *path, size_t len)
{
	char top[256], ctl[300];

	cg_path(top, sizeof(top), NULL);
	if (mkdir(top, 0755) && errno != EEXIST)
		return -errno;
	snprintf(ctl, sizeof(ctl), "%s/cgroup.subtree_control", top);
	if (kva_write_file(ctl, "+dmem"))
		return -EIO;
	cg_path(path, len, leaf);
	if (leaf && mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Move process @pid (0: this one) into the cgroup at @path. */
static int cg_enter(const char *path, pid_t pid)
{
	char procs[300], text[32];

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
	snprintf(text, sizeof(text), "%d", pid ? (int)pid : (int)getpid());
	return kva_write_file(procs, text);
}

/* Back to the root cgroup and the test's cgroups removed. */
static void cg_cleanup(void)
{
	static const char *const leaves[] = { "a", "b", "p/a", "p/b", "p" };
	char path[256], leaf[16];
	unsigned int i;

	cg_enter(KVA_CGROUP_ROOT, 0);
	for (i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		cg_path(path, sizeof(path), leaves[i]);
		rmdir(path);
	}
	for (i = 0; i < NCG; i++) {
		snprintf(leaf, sizeof(leaf), "m%u", i);
		cg_path(path, sizeof(path), leaf);
		rmdir(path);
	}
	cg_path(path, sizeof(path), NULL);
	rmdir(path);
}

/* Write "kvarena/<arena> <value>" to @file of the cgroup at @path. */
static int cg_set(const char *path, const char *file, const char *arena,
		  const char *value)
{
	char name[300], text[128];

	snprintf(name, sizeof(name), "%s/%s", path, file);
	snprintf(text, sizeof(text), "kvarena/%s %s", arena, value);
	return kva_write_file(name, text);
}

/*
 * The figure for kvarena/<arena> in @file ("dmem.current", "dmem.capacity"
 * of the root): bytes, or -1 if the region is not listed.
 */
static long long cg_get(const char *path, const char *file, const char *arena)
{
	char name[300], want[80], line[160];
	long long v = -1;
	FILE *f;

	snprintf(name, sizeof(name), "%s/%s", path, file);
	snprintf(want, sizeof(want), "kvarena/%s ", arena);
	f = fopen(name, "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, want, strlen(want))) {
			v = atoll(line + strlen(want));
			break;
		}
	if (f)
		fclose(f);
	return v;
}

#define FRAMES(n)	((long long)(n) * FSIZE)

/* This client's row of CLIENTS (the only one in @arena). */
static int client_row(int fd, const char *arena, struct kvarena_client_info *ci)
{
	struct kvarena_clients c = { .clients = (uintptr_t)ci, .count = 1 };

	snprintf(c.name, sizeof(c.name), "%s", arena);
	memset(ci, 0, sizeof(*ci));
	return kva_ioctl(fd, KVARENA_IOC_CLIENTS, &c);
}

/*
 * Take @n frames on client @fd, publish them under chain @tag and free
 * them: left cached, charged to the caller's cgroup.  0 or -errno.
 */
static int leave_cached(int fd, __u32 tag, int n)
{
	__u64 h[NR];
	int r;

	r = kva_alloc(fd, h, n, 0);
	if (r != n)
		return r < 0 ? r : -EIO;
	r = publish(fd, tag, h, n);
	if (r != n)
		return r < 0 ? r : -EIO;
	return kva_free(fd, h, n);
}

FIXTURE(dm) {
	char name[KVARENA_NAME_LEN];
	int admin;
	int cl;
};

FIXTURE_SETUP(dm)
{
	snprintf(self->name, sizeof(self->name), "dm%d", getpid());
	self->admin = kva_open(O_RDWR);
	ASSERT_LE(0, self->admin);
	ASSERT_EQ(0, kva_create(self->admin, self->name, NR, FSIZE, 0));
	self->cl = -1;
}

FIXTURE_TEARDOWN(dm)
{
	if (self->cl >= 0)
		close(self->cl);
	EXPECT_EQ(0, kva_wait_no_clients(self->admin, self->name));
	EXPECT_EQ(0, kva_destroy(self->admin, self->name));
	close(self->admin);
	cg_cleanup();
}

/* A client of the arena opened by this process (in its cgroup now). */
static int attach(const char *name)
{
	int fd = kva_open(O_RDWR);

	if (fd < 0 || kva_attach(fd, name, "dmem", 0, 0, NULL))
		return -1;
	return fd;
}

/* dmem.capacity names the arena with its bytes, until it is destroyed. */
TEST_F(dm, capacity_lists_the_arena)
{
	NEED_DMEM();
	EXPECT_EQ(FRAMES(NR), cg_get(KVA_CGROUP_ROOT, "dmem.capacity",
				     self->name));
	ASSERT_EQ(0, kva_destroy(self->admin, self->name));
	EXPECT_EQ(-1, cg_get(KVA_CGROUP_ROOT, "dmem.capacity", self->name));
	/* A new arena of the name registers its own region. */
	ASSERT_EQ(0, kva_create(self->admin, self->name, NR / 2, FSIZE, 0));
	EXPECT_EQ(FRAMES(NR / 2), cg_get(KVA_CGROUP_ROOT, "dmem.capacity",
					 self->name));
}

/* ALLOC over io_uring (@ring) or ioctl() (NULL): frames taken or -errno. */
static int alloc_via(struct io_uring *ring, int fd, __u64 *h, __u32 n, __u32 fl)
{
	struct kvarena_frames f = { .handles = (uintptr_t)h, .count = n,
				    .flags = fl };
	int r = ring ? kva_uring_one(ring, fd, KVARENA_IOC_ALLOC, &f, 0) :
		       kva_ioctl(fd, KVARENA_IOC_ALLOC, &f);

	return r ? r : (int)f.nr_done;
}

/*
 * dmem.max of the client's cgroup holds for ALLOC, whole and partial, over
 * ioctl() or io_uring (@ring), and the refused ALLOCs are counted.
 */
static void limit_holds(struct __test_metadata *_metadata,
			FIXTURE_DATA(dm) *self, struct io_uring *ring)
{
	struct kvarena_client_info ci;
	char cg[256];
	__u64 h[8];
	int i;

	ASSERT_EQ(0, cg_make("a", cg, sizeof(cg)));
	ASSERT_EQ(0, cg_set(cg, "dmem.max", self->name, "262144"));
	ASSERT_EQ(0, cg_enter(cg, 0));
	self->cl = attach(self->name);
	ASSERT_LE(0, self->cl);

	EXPECT_EQ(3, alloc_via(ring, self->cl, h, 3, 0));
	EXPECT_EQ(FRAMES(3), cg_get(cg, "dmem.current", self->name));
	/* Two more pass the limit of four: refused, nothing taken. */
	EXPECT_EQ(-ENOSPC, alloc_via(ring, self->cl, h + 3, 2, 0));
	EXPECT_EQ(FRAMES(3), cg_get(cg, "dmem.current", self->name));
	ASSERT_EQ(0, client_row(self->cl, self->name, &ci));
	EXPECT_EQ(3, ci.held);
	EXPECT_EQ(1, ci.dmem_refused);
	EXPECT_EQ(1, ci.alloc_failures);
	/* A partial ALLOC takes what fits. */
	EXPECT_EQ(1, alloc_via(ring, self->cl, h + 3, 4, KVARENA_ALLOC_PARTIAL));
	EXPECT_EQ(FRAMES(4), cg_get(cg, "dmem.current", self->name));
	EXPECT_EQ(-ENOSPC, alloc_via(ring, self->cl, h + 4, 1, KVARENA_ALLOC_PARTIAL));
	/* Frames given back make room again, one by one. */
	EXPECT_EQ(0, kva_free(self->cl, h, 2));
	EXPECT_EQ(FRAMES(2), cg_get(cg, "dmem.current", self->name));
	EXPECT_EQ(2, alloc_via(ring, self->cl, h + 4, 4, KVARENA_ALLOC_PARTIAL));
	EXPECT_EQ(FRAMES(4), cg_get(cg, "dmem.current", self->name));
	for (i = 2; i < 6; i++) {
		EXPECT_EQ(0, kva_free(self->cl, &h[i], 1));
		EXPECT_EQ(FRAMES(5 - i), cg_get(cg, "dmem.current",
						self->name));
	}
	/* The arena's other frames were never the limit. */
	EXPECT_EQ(0, cg_set(cg, "dmem.max", self->name, "max"));
	EXPECT_EQ(8, alloc_via(ring, self->cl, h, 8, 0));
	EXPECT_EQ(FRAMES(8), cg_get(cg, "dmem.current", self->name));
	ASSERT_EQ(0, client_row(self->cl, self->name, &ci));
	EXPECT_EQ(2, ci.dmem_refused);
	close(self->cl);
	self->cl = -1;
	EXPECT_EQ(0, kva_wait_no_clients(self->admin, self->name));
	EXPECT_EQ(0, cg_get(cg, "dmem.current", self->name));
}

TEST_F(dm, max_holds_for_alloc_over_ioctl)
{
	NEED_DMEM();
	limit_holds(_metadata, self, NULL);
}

TEST_F(dm, max_holds_for_alloc_over_io_uring)
{
	struct io_uring ring;

	NEED_DMEM();
	KVA_NEED_URING();
	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	limit_holds(_metadata, self, &ring);
	io_uring_queue_exit(&ring);
}

/* A child in cgroup @cg that takes @n frames, says so, and waits. */
static pid_t holder(const char *name, const char *cg, int n, int *ready)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		__u64 h[NR];
		int fd;

		close(p[0]);
		if (cg_enter(cg, 0))
			_exit(2);
		fd = attach(name);
		if (fd < 0 || kva_alloc(fd, h, n, 0) != n)
			_exit(3);
		c = 1;
		if (write(p[1], &c, 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(p[1]);
	*ready = read(p[0], &c, 1) == 1;
	close(p[0]);
	return pid;
}

/* A killed process's frames come back, and so does its charge. */
TEST_F(dm, killed_process_charge_returns_to_zero)
{
	char cg[256];
	int ready, st;
	pid_t pid;

	NEED_DMEM();
	ASSERT_EQ(0, cg_make("a", cg, sizeof(cg)));
	pid = holder(self->name, cg, 8, &ready);
	ASSERT_LT(0, pid);
	ASSERT_TRUE(ready);
	EXPECT_EQ(FRAMES(8), cg_get(cg, "dmem.current", self->name));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_EQ(0, kva_wait_no_clients(self->admin, self->name));
	EXPECT_EQ(0, cg_get(cg, "dmem.current", self->name));
}

/*
 * A kill storm: processes take frames and are killed at random; at every
 * check, the cgroup's dmem.current is the arena's held frames (all held
 * by processes of that cgroup) times the frame size.  A check counts only
 * when the held frames read the same before and after dmem.current.
 */
TEST_F(dm, current_is_held_frames_through_a_kill_storm)
{
	pid_t pids[8] = { 0 };
	unsigned int seed = 0x5eed, checks = 0, round;
	struct kvarena_stat s1, s2;
	char cg[256];
	int ready, st, i;

	NEED_DMEM();
	ASSERT_EQ(0, cg_make("a", cg, sizeof(cg)));
	for (round = 0; round < 64; round++) {
		long long cur;

		i = rand_r(&seed) % 8;
		if (pids[i]) {
			kill(pids[i], SIGKILL);
			ASSERT_EQ(pids[i], waitpid(pids[i], &st, 0));
			pids[i] = 0;
		} else {
			pids[i] = holder(self->name, cg, 1 + rand_r(&seed) % 3,
					 &ready);
			ASSERT_LT(0, pids[i]);
			ASSERT_TRUE(ready);
		}
		ASSERT_EQ(0, kva_stat(self->admin, self->name, &s1));
		cur = cg_get(cg, "dmem.current", self->name);
		ASSERT_EQ(0, kva_stat(self->admin, self->name, &s2));
		if (s1.nr_held != s2.nr_held)
			continue;	/* a release ran in between */
		EXPECT_EQ(FRAMES(s1.nr_held), cur);
		checks++;
	}
	for (i = 0; i < 8; i++)
		if (pids[i]) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], &st, 0);
		}
	ASSERT_EQ(0, kva_wait_no_clients(self->admin, self->name));
	EXPECT_EQ(0, cg_get(cg, "dmem.current", self->name));
	/* Most checks must have counted, or the test proved little. */
	EXPECT_LE(32, checks);
}

/*
 * The kernel's rule: a charge stays with the cgroup that made it.  A
 * process moved to another cgroup pays there for what it takes next, and
 * its earlier frames come back to the first cgroup when freed.
 */
TEST_F(dm, moved_process_keeps_its_charges_where_they_were_made)
{
	char a[256], b[256];
	__u64 h[6], x[2];

	NEED_DMEM();
	ASSERT_EQ(0, cg_make("a", a, sizeof(a)));
	ASSERT_EQ(0, cg_make("b", b, sizeof(b)));
	ASSERT_EQ(0, cg_enter(a, 0));
	self->cl = attach(self->name);
	ASSERT_LE(0, self->cl);
	ASSERT_EQ(4, kva_alloc(self->cl, h, 4, 0));
	ASSERT_EQ(0, cg_enter(b, 0));
	ASSERT_EQ(2, kva_alloc(self->cl, h + 4, 2, 0));
	EXPECT_EQ(FRAMES(4), cg_get(a, "dmem.current", self->name));
	EXPECT_EQ(FRAMES(2), cg_get(b, "dmem.current", self->name));
	/* b's limit does not see a's frames. */
	ASSERT_EQ(0, cg_set(b, "dmem.max", self->name, "196608"));
	EXPECT_EQ(1, kva_alloc(self->cl, x, 1, 0));
	EXPECT_EQ(-ENOSPC, kva_alloc(self->cl, x + 1, 1, 0));
	EXPECT_EQ(0, kva_free(self->cl, x, 1));
	EXPECT_EQ(0, kva_free(self->cl, h, 3));
	EXPECT_EQ(FRAMES(1), cg_get(a, "dmem.current", self->name));
	EXPECT_EQ(FRAMES(2), cg_get(b, "dmem.current", self->name));
	EXPECT_EQ(0, kva_free(self->cl, h + 3, 3));
	EXPECT_EQ(0, cg_get(a, "dmem.current", self->name));
	EXPECT_EQ(0, cg_get(b, "dmem.current", self->name));
}

/*
 * Twenty cgroups charge one arena through one client: each pays for the
 * frames taken while the process was in it, and one FREE of frames of
 * all of them gives each its own bytes back (the arena keeps a record per
 * cgroup's pool, more than it first makes room for).
 */
TEST_F(dm, many_cgroups_each_pay_for_their_own_frames)
{
	__u64 h[2 * NCG], first[NCG], second[NCG];
	char leaf[16], cg[NCG][256];
	int i, n2 = 0;

	NEED_DMEM();
	for (i = 0; i < NCG; i++) {
		snprintf(leaf, sizeof(leaf), "m%d", i);
		ASSERT_EQ(0, cg_make(leaf, cg[i], sizeof(cg[i])));
	}
	self->cl = attach(self->name);
	ASSERT_LE(0, self->cl);
	/* Cgroup i takes 1 + i % 2 frames. */
	for (i = 0; i < NCG; i++) {
		ASSERT_EQ(0, cg_enter(cg[i], 0));
		ASSERT_EQ(1 + i % 2, kva_alloc(self->cl, h + 2 * i, 1 + i % 2, 0));
		first[i] = h[2 * i];
		if (i % 2)
			second[n2++] = h[2 * i + 1];
	}
	ASSERT_EQ(0, cg_enter(KVA_CGROUP_ROOT, 0));
	for (i = 0; i < NCG; i++)
		EXPECT_EQ(FRAMES(1 + i % 2),
			  cg_get(cg[i], "dmem.current", self->name));
	ASSERT_EQ(0, kva_free(self->cl, first, NCG));
	for (i = 0; i < NCG; i++)
		EXPECT_EQ(FRAMES(i % 2), cg_get(cg[i], "dmem.current", self->name));
	ASSERT_EQ(0, kva_free(self->cl, second, n2));
	for (i = 0; i < NCG; i++)
		EXPECT_EQ(0, cg_get(cg[i], "dmem.current", self->name));
	/* Again, now that the records are there. */
	for (i = 0; i < NCG; i++) {
		ASSERT_EQ(0, cg_enter(cg[NCG - 1 - i], 0));
		ASSERT_EQ(1, kva_alloc(self->cl, h + i, 1, 0));
	}
	ASSERT_EQ(0, cg_enter(KVA_CGROUP_ROOT, 0));
	for (i = 0; i < NCG; i++)
		EXPECT_EQ(FRAMES(1), cg_get(cg[i], "dmem.current", self->name));
	ASSERT_EQ(0, kva_free(self->cl, h, NCG));
	for (i = 0; i < NCG; i++)
		EXPECT_EQ(0, cg_get(cg[i], "dmem.current", self->name));
}

/*
 * Cached frames (published, nobody holds them) stay charged to the cgroup
 * that computed them, as page cache stays with its memory cgroup; an
 * ALLOC at the cgroup's limit reclaims its own cache, oldest first.
 */
TEST_F(dm, limit_reclaims_the_cgroups_own_cache)
{
	char cg[256];
	__u64 h[8], got[8];

	NEED_DMEM();
	ASSERT_EQ(0, cg_make("a", cg, sizeof(cg)));
	ASSERT_EQ(0, cg_enter(cg, 0));
	self->cl = attach(self->name);
	ASSERT_LE(0, self->cl);
	ASSERT_EQ(4, kva_alloc(self->cl, h, 4, 0));
	ASSERT_EQ(4, publish(self->cl, 7, h, 4));
	ASSERT_EQ(0, kva_free(self->cl, h, 4));
	EXPECT_EQ(FRAMES(4), cg_get(cg, "dmem.current", self->name));
	ASSERT_EQ(0, cg_set(cg, "dmem.max", self->name, "262144"));
	ASSERT_EQ(2, kva_alloc(self->cl, h, 2, 0));
	EXPECT_EQ(FRAMES(4), cg_get(cg, "dmem.current", self->name));
	/* The chain's first two frames went; the last two are cached still. */
	EXPECT_EQ(0, lookup(self->cl, 7, 0, 4, got));
	EXPECT_EQ(2, lookup(self->cl, 7, 2, 2, got));
	/* Now all four are held: nothing left to reclaim. */
	EXPECT_EQ(-ENOSPC, kva_alloc(self->cl, h + 2, 1, 0));
}

/*
 * Under a parent's dmem.max, dmem.min keeps a child's cached frames from
 * a sibling's reclaim: the sibling loses its own instead, although the
 * protected child's frames are the older.
 */
TEST_F(dm, min_protects_a_cgroups_cache_from_its_siblings)
{
	char p[256], a[256], b[256], ctl[300];
	__u64 h[8], got[8];
	int fd;

	NEED_DMEM();
	ASSERT_EQ(0, cg_make("p", p, sizeof(p)));
	snprintf(ctl, sizeof(ctl), "%s/cgroup.subtree_control", p);
	ASSERT_EQ(0, kva_write_file(ctl, "+dmem"));
	ASSERT_EQ(0, cg_make("p/a", a, sizeof(a)));
	ASSERT_EQ(0, cg_make("p/b", b, sizeof(b)));
	ASSERT_EQ(0, cg_set(p, "dmem.max", self->name, "393216"));
	ASSERT_EQ(0, cg_set(a, "dmem.min", self->name, "196608"));

	/* a computes three frames and leaves them cached. */
	ASSERT_EQ(0, cg_enter(a, 0));
	fd = attach(self->name);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, leave_cached(fd, 1, 3));
	close(fd);
	ASSERT_EQ(0, kva_wait_no_clients(self->admin, self->name));

	/* b does the same, then needs three more: p is at its max. */
	ASSERT_EQ(0, cg_enter(b, 0));
	self->cl = attach(self->name);
	ASSERT_LE(0, self->cl);
	ASSERT_EQ(0, leave_cached(self->cl, 2, 3));
	EXPECT_EQ(FRAMES(6), cg_get(p, "dmem.current", self->name));
	ASSERT_EQ(3, kva_alloc(self->cl, h, 3, 0));
	EXPECT_EQ(FRAMES(3), cg_get(a, "dmem.current", self->name));
	EXPECT_EQ(FRAMES(3), cg_get(b, "dmem.current", self->name));
	EXPECT_EQ(3, lookup(self->cl, 1, 0, 3, got));
	EXPECT_EQ(0, lookup(self->cl, 2, 0, 3, got));
	/* a's frames, now held, are charged to a still. */
	EXPECT_EQ(FRAMES(3), cg_get(a, "dmem.current", self->name));
	EXPECT_EQ(0, kva_free(self->cl, got, 3));
	EXPECT_EQ(0, kva_free(self->cl, h, 3));
	EXPECT_EQ(0, cg_get(b, "dmem.current", self->name));
}

/* EVICT takes a client's frames back, and its charge with them. */
TEST_F(dm, evicted_client_charge_returns_to_zero)
{
	struct kvarena_evict e = { 0 };
	struct kvarena_attach at;
	char cg[256];
	__u64 h[5];

	NEED_DMEM();
	ASSERT_EQ(0, cg_make("a", cg, sizeof(cg)));
	ASSERT_EQ(0, cg_enter(cg, 0));
	self->cl = kva_open(O_RDWR);
	ASSERT_LE(0, self->cl);
	ASSERT_EQ(0, kva_attach(self->cl, self->name, "ev", 0, 0, &at));
	ASSERT_EQ(5, kva_alloc(self->cl, h, 5, 0));
	EXPECT_EQ(FRAMES(5), cg_get(cg, "dmem.current", self->name));
	snprintf(e.name, sizeof(e.name), "%s", self->name);
	e.client_id = at.client_id;
	ASSERT_EQ(0, kva_ioctl(self->admin, KVARENA_IOC_EVICT, &e));
	EXPECT_EQ(5, e.nr_frames);
	/* The file is still open: the frames are back all the same. */
	EXPECT_EQ(0, cg_get(cg, "dmem.current", self->name));
	EXPECT_EQ(-ESHUTDOWN, kva_alloc(self->cl, h, 1, 0));
}

/*
 * A shrink takes free frames first, then cached ones: those were still
 * charged to the cgroup that computed them, and are not after.
 */
TEST_F(dm, shrink_uncharges_the_cached_frames_it_takes)
{
	struct kvarena_arena_resize r = { .nr_frames = NR - 4 };
	struct kvarena_stat s;
	char cg[256];
	__u64 h[NR];

	NEED_DMEM();
	ASSERT_EQ(0, cg_make("a", cg, sizeof(cg)));
	ASSERT_EQ(0, cg_enter(cg, 0));
	self->cl = attach(self->name);
	ASSERT_LE(0, self->cl);
	ASSERT_EQ(4, kva_alloc(self->cl, h, 4, 0));
	ASSERT_EQ(4, publish(self->cl, 3, h, 4));
	ASSERT_EQ(0, kva_free(self->cl, h, 4));
	ASSERT_EQ(NR - 6, kva_alloc(self->cl, h, NR - 6, 0));
	EXPECT_EQ(FRAMES(NR - 2), cg_get(cg, "dmem.current", self->name));
	snprintf(r.name, sizeof(r.name), "%s", self->name);
	ASSERT_EQ(0, kva_ioctl(self->admin, KVARENA_IOC_ARENA_RESIZE, &r));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(2, s.nr_cached);
	EXPECT_EQ(FRAMES(NR - 4), cg_get(cg, "dmem.current", self->name));
	EXPECT_EQ(0, kva_free(self->cl, h, NR - 6));
	EXPECT_EQ(FRAMES(2), cg_get(cg, "dmem.current", self->name));
}

/*
 * The arena's own reclaim (an ALLOC the free frames cannot cover) takes
 * the cached frames of a cgroup within its dmem.low after the others',
 * although they are older - and still takes them when nothing else is
 * left: the arena's order, not a refusal.
 */
TEST_F(dm, low_orders_the_arenas_reclaim_without_refusing_it)
{
	char top[256], a[256], b[256];
	__u64 h[NR], got[3];
	int fd;

	NEED_DMEM();
	ASSERT_EQ(0, cg_make("a", a, sizeof(a)));
	ASSERT_EQ(0, cg_make("b", b, sizeof(b)));
	cg_path(top, sizeof(top), NULL);
	/* Protection counts where every ancestor grants it too. */
	ASSERT_EQ(0, cg_set(top, "dmem.low", self->name, "196608"));
	ASSERT_EQ(0, cg_set(a, "dmem.low", self->name, "196608"));

	ASSERT_EQ(0, cg_enter(a, 0));
	fd = attach(self->name);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, leave_cached(fd, 1, 3));
	close(fd);
	ASSERT_EQ(0, kva_wait_no_clients(self->admin, self->name));

	ASSERT_EQ(0, cg_enter(b, 0));
	self->cl = attach(self->name);
	ASSERT_LE(0, self->cl);
	ASSERT_EQ(0, leave_cached(self->cl, 2, 3));
	/* 26 free frames and 3 of the 6 cached ones: b's. */
	ASSERT_EQ(NR - 3, kva_alloc(self->cl, h, NR - 3, 0));
	EXPECT_EQ(FRAMES(3), cg_get(a, "dmem.current", self->name));
	EXPECT_EQ(0, lookup(self->cl, 2, 0, 3, got));
	ASSERT_EQ(3, lookup(self->cl, 1, 0, 3, got));
	EXPECT_EQ(0, kva_free(self->cl, got, 3));
	EXPECT_EQ(0, kva_free(self->cl, h, NR - 3));
	/* Nothing else left: a's frames go too. */
	ASSERT_EQ(NR, kva_alloc(self->cl, h, NR, 0));
	EXPECT_EQ(0, cg_get(a, "dmem.current", self->name));
	EXPECT_EQ(FRAMES(NR), cg_get(b, "dmem.current", self->name));
	EXPECT_EQ(0, kva_free(self->cl, h, NR));
}

/*
 * dmem.max written below dmem.current: the cgroup's cached frames are
 * reclaimed, oldest first, as far as they go; held frames stay, and the
 * next ALLOC is refused until the cgroup is under the limit.
 */
TEST_F(dm, lowering_max_reclaims_the_cgroups_cache)
{
	struct kvarena_stat s;
	char cg[256];
	__u64 h[6], got[4];

	NEED_DMEM();
	ASSERT_EQ(0, cg_make("a", cg, sizeof(cg)));
	ASSERT_EQ(0, cg_enter(cg, 0));
	self->cl = attach(self->name);
	ASSERT_LE(0, self->cl);
	ASSERT_EQ(6, kva_alloc(self->cl, h, 6, 0));
	ASSERT_EQ(4, publish(self->cl, 5, h + 2, 4));
	ASSERT_EQ(0, kva_free(self->cl, h + 2, 4));
	EXPECT_EQ(FRAMES(6), cg_get(cg, "dmem.current", self->name));
	/* Down to four frames: the two oldest cached go. */
	ASSERT_EQ(0, cg_set(cg, "dmem.max", self->name, "262144"));
	EXPECT_EQ(FRAMES(4), cg_get(cg, "dmem.current", self->name));
	EXPECT_EQ(0, lookup(self->cl, 5, 0, 4, got));
	EXPECT_EQ(2, lookup(self->cl, 5, 2, 2, got));
	EXPECT_EQ(0, kva_free(self->cl, got, 2));
	/* Below what it holds: every cached frame goes, the held stay. */
	ASSERT_EQ(0, cg_set(cg, "dmem.max", self->name, "65536"));
	EXPECT_EQ(FRAMES(2), cg_get(cg, "dmem.current", self->name));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(0, s.nr_cached);
	EXPECT_EQ(2, s.nr_held);
	EXPECT_EQ(-ENOSPC, kva_alloc(self->cl, got, 1, 0));
	EXPECT_EQ(0, kva_free(self->cl, h, 1));
	EXPECT_EQ(-ENOSPC, kva_alloc(self->cl, got, 1, 0));
	EXPECT_EQ(0, kva_free(self->cl, h + 1, 1));
	EXPECT_EQ(1, kva_alloc(self->cl, got, 1, 0));
	EXPECT_EQ(FRAMES(1), cg_get(cg, "dmem.current", self->name));
	EXPECT_EQ(0, kva_free(self->cl, got, 1));
}

/* A tenant without privileges, in a cgroup limited to 4 frames. */
struct tenant_args {
	const char *name;
	const char *cg;
};

static int limited_tenant(void *p)
{
	const struct tenant_args *t = p;
	struct kvarena_frames f;
	struct io_uring ring;
	char file[300], text[64];
	__u64 h[8];
	int fd = attach(t->name), fd2;

	CHECK(fd >= 0);
	CHECK_EQ(4, kva_alloc(fd, h, 4, 0));
	CHECK_EQ(-ENOSPC, kva_alloc(fd, h + 4, 1, 0));
	CHECK_EQ(-ENOSPC, kva_alloc(fd, h + 4, 4, KVARENA_ALLOC_PARTIAL));
	if (!kva_uring_missing() && !io_uring_queue_init(2, &ring, 0)) {
		f = (struct kvarena_frames){ .handles = (uintptr_t)(h + 4),
					     .count = 1 };
		CHECK_EQ(-ENOSPC, kva_uring_one(&ring, fd, KVARENA_IOC_ALLOC,
						&f, 0));
		io_uring_queue_exit(&ring);
	}
	/* A second client of its own pays into the same cgroup. */
	fd2 = attach(t->name);
	CHECK(fd2 >= 0);
	CHECK_EQ(-ENOSPC, kva_alloc(fd2, h + 4, 1, 0));
	/* Its limit and its cgroup are root's to change. */
	snprintf(file, sizeof(file), "%s/dmem.max", t->cg);
	snprintf(text, sizeof(text), "kvarena/%s max", t->name);
	CHECK_EQ(-EACCES, kva_write_file(file, text));
	snprintf(text, sizeof(text), "%d", (int)getpid());
	CHECK_EQ(-EACCES, kva_write_file(KVA_CGROUP_ROOT "/cgroup.procs", text));
	CHECK_EQ(-ENOSPC, kva_alloc(fd2, h + 4, 1, 0));
	/* Freeing makes room for itself, no more. */
	CHECK_EQ(0, kva_free(fd, h, 1));
	CHECK_EQ(1, kva_alloc(fd2, h + 4, 1, 0));
	CHECK_EQ(-ENOSPC, kva_alloc(fd2, h + 5, 1, 0));
	return 0;
}

/*
 * An unprivileged tenant can neither pass its cgroup's limit - over
 * ioctl() or io_uring, from one client or two - nor lift it, nor leave
 * the cgroup; and what it took comes back when it exits.
 */
TEST_F(dm, unprivileged_tenant_cannot_pass_or_lift_its_limit)
{
	struct tenant_args t = { .name = self->name };
	struct stat st;
	char cg[256];

	NEED_DMEM();
	ASSERT_EQ(0, cg_make("a", cg, sizeof(cg)));
	ASSERT_EQ(0, cg_set(cg, "dmem.max", self->name, "262144"));
	t.cg = cg;
	/* The node as a machine's group would have it: open to the tenant. */
	ASSERT_EQ(0, stat(KVARENA_DEVICE, &st));
	ASSERT_EQ(0, chmod(KVARENA_DEVICE, 0666));
	ASSERT_EQ(0, cg_enter(cg, 0));
	EXPECT_EQ(0, as_uid(1001, limited_tenant, &t));
	chmod(KVARENA_DEVICE, st.st_mode & 07777);
	ASSERT_EQ(0, cg_enter(KVA_CGROUP_ROOT, 0));
	EXPECT_EQ(0, kva_wait_no_clients(self->admin, self->name));
	EXPECT_EQ(0, cg_get(cg, "dmem.current", self->name));
	EXPECT_EQ(262144, cg_get(cg, "dmem.max", self->name));
}

/*
 * A gang is an arena of its own: its frames are charged to its region
 * (kvarena/<gang>, a member's bytes per frame), its members' regions
 * charge nothing while they serve it, and a killed client of the gang
 * leaves nothing charged.
 */
TEST_F(dm, gang_frames_are_charged_to_the_gangs_region)
{
	char cg[256], gang[KVARENA_NAME_LEN], m[2][KVARENA_NAME_LEN];
	char names[KVARENA_GANG_MAX][KVARENA_NAME_LEN];
	struct kvarena_gang_create g = {
		.members = (__u64)(unsigned long)names, .nr_members = 2 };
	int ready, st, r;
	pid_t pid;

	NEED_DMEM();
	memset(names, 0, sizeof(names));
	snprintf(gang, sizeof(gang), "dg%d", getpid());
	for (r = 0; r < 2; r++) {
		snprintf(m[r], sizeof(m[r]), "dg%dm%d", getpid(), r);
		snprintf(names[r], KVARENA_NAME_LEN, "%s", m[r]);
		ASSERT_EQ(0, kva_create(self->admin, m[r], NR, FSIZE, 0));
	}
	snprintf(g.name, sizeof(g.name), "%s", gang);
	ASSERT_EQ(0, kva_ioctl(self->admin, KVARENA_IOC_GANG_CREATE, &g));
	EXPECT_EQ(FRAMES(NR), cg_get(KVA_CGROUP_ROOT, "dmem.capacity", gang));
	ASSERT_EQ(0, cg_make("a", cg, sizeof(cg)));
	pid = holder(gang, cg, 5, &ready);
	ASSERT_LT(0, pid);
	ASSERT_TRUE(ready);
	EXPECT_EQ(FRAMES(5), cg_get(cg, "dmem.current", gang));
	EXPECT_EQ(0, cg_get(cg, "dmem.current", m[0]));
	EXPECT_EQ(0, cg_get(cg, "dmem.current", m[1]));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_EQ(0, kva_wait_no_clients(self->admin, gang));
	EXPECT_EQ(0, cg_get(cg, "dmem.current", gang));
	EXPECT_EQ(0, kva_destroy(self->admin, gang));
	EXPECT_EQ(-1, cg_get(KVA_CGROUP_ROOT, "dmem.capacity", gang));
	EXPECT_EQ(0, kva_destroy(self->admin, m[0]));
	EXPECT_EQ(0, kva_destroy(self->admin, m[1]));
}

TEST_HARNESS_MAIN
