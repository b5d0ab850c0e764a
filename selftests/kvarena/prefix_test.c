// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko selftests of the prefix cache: PUBLISH and LOOKUP across
 * processes, shared holds, cached frames and their reclaim, and every
 * argument rule over ioctl and io_uring.  Runs as root inside the VM
 * (selftests/vm/run.sh) with the module loaded; each test makes its own
 * arena and leaves none.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <liburing.h>

#include "kselftest_harness.h"
#include "kva_test.h"
#include "kva_uring.h"

#define NR	32
#define FSIZE	(64 * 1024)

/* A backed host arena of NR frames, and its name. */
static int make_arena(int admin, const char *name)
{
	int mfd = kva_sealed_memfd(NR * FSIZE), ret;

	if (mfd < 0)
		return -errno;
	ret = kva_create_flags(admin, name, NR, FSIZE, 0, 0);
	if (!ret)
		ret = kva_set_backing(admin, name, 0, NR, mfd, 0);
	close(mfd);	/* the module holds the memory now */
	return ret;
}

static unsigned char pattern(__u32 tag, __u32 frame, size_t off)
{
	return (unsigned char)(tag * 131 + frame * 31 + off * 7 + off / 4096);
}

static void fill_frame(unsigned char *p, __u32 tag, __u32 frame)
{
	size_t i;

	for (i = 0; i < FSIZE; i++)
		p[i] = pattern(tag, frame, i);
}

/* Bytes of the frame that differ from (tag, frame)'s pattern. */
static size_t frame_diff(const unsigned char *p, __u32 tag, __u32 frame)
{
	size_t i, bad = 0;

	for (i = 0; i < FSIZE; i++)
		bad += p[i] != pattern(tag, frame, i);
	return bad;
}

/* The CLIENTS row of client @id. */
static int client_row(int fd, const char *name, __u32 id,
		      struct kvarena_client_info *out)
{
	struct kvarena_client_info rows[8];
	struct kvarena_clients c = { .clients = (__u64)(unsigned long)rows,
				     .count = 8 };
	__u32 i;
	int ret;

	snprintf(c.name, sizeof(c.name), "%s", name);
	ret = kva_ioctl(fd, KVARENA_IOC_CLIENTS, &c);
	if (ret)
		return ret;
	for (i = 0; i < c.nr_clients && i < 8; i++) {
		if (rows[i].client_id == id) {
			*out = rows[i];
			return 0;
		}
	}
	return -ENOENT;
}

FIXTURE(prefix) {
	int admin;
	char name[32];
	int a, b;		/* two clients */
	__u32 id_a, id_b;
	__u64 h[NR], g[NR];
};

FIXTURE_SETUP(prefix)
{
	struct kvarena_attach at;

	snprintf(self->name, sizeof(self->name), "p%d", getpid());
	self->admin = kva_open(O_RDWR);
	ASSERT_LE(0, self->admin);
	ASSERT_EQ(0, make_arena(self->admin, self->name));
	self->a = kva_open(O_RDWR);
	self->b = kva_open(O_RDWR);
	ASSERT_LE(0, self->a);
	ASSERT_LE(0, self->b);
	ASSERT_EQ(0, kva_attach(self->a, self->name, "a", 0, 0, &at));
	self->id_a = at.client_id;
	ASSERT_EQ(0, kva_attach(self->b, self->name, "b", 0, 0, &at));
	self->id_b = at.client_id;
}

FIXTURE_TEARDOWN(prefix)
{
	if (self->a >= 0)
		close(self->a);
	if (self->b >= 0)
		close(self->b);
	EXPECT_EQ(0, kva_destroy(self->admin, self->name));
	close(self->admin);
}

/* ---- across processes -------------------------------------------------- */

TEST_F(prefix, published_prefix_outlives_its_process_and_reads_back_exact)
{
	struct kvarena_stat s;
	int status, i;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* Process A: compute a 4-frame prefix, publish it, exit. */
		int fd = kva_open(O_RDWR), bad = 0;
		__u64 h[4];

		if (fd < 0 || kva_attach(fd, self->name, "writer", 0, 0, NULL) ||
		    kva_alloc(fd, h, 4, 0) != 4)
			_exit(10);
		for (i = 0; i < 4; i++) {
			unsigned char *p = kva_map_frame(fd, h[i],
						     PROT_READ | PROT_WRITE);

			if (p == MAP_FAILED)
				_exit(11);
			fill_frame(p, 77, i);
			munmap(p, FSIZE);
		}
		bad |= publish(fd, 77, h, 4) != 4;
		_exit(bad);	/* no FREE, no close: exit releases */
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));

	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(4, s.nr_cached);
	EXPECT_EQ(4, s.nr_published);
	EXPECT_EQ(0, s.nr_held);
	EXPECT_EQ(NR - 4, s.nr_free);
	EXPECT_EQ(2, s.nr_clients);

	/* Process B (this one) finds it and reads the same bytes. */
	ASSERT_EQ(4, lookup(self->b, 77, 0, 4, self->h));
	for (i = 0; i < 4; i++) {
		unsigned char *p = kva_map_frame(self->b, self->h[i], PROT_READ);

		ASSERT_NE(MAP_FAILED, p);
		EXPECT_EQ(0, frame_diff(p, 77, i));
		munmap(p, FSIZE);
	}
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(0, s.nr_cached);
	EXPECT_EQ(4, s.nr_held);
	EXPECT_EQ(4, s.cache_hits);
	EXPECT_EQ(0, s.cache_misses);
	/* Letting go caches it again. */
	ASSERT_EQ(0, kva_free(self->b, self->h, 4));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(4, s.nr_cached);
}

TEST_F(prefix, two_clients_hold_one_prefix_charged_once_and_append_apart)
{
	struct kvarena_client_info ra, rb;
	unsigned char *pa, *pb, *shared;
	struct kvarena_stat s;
	__u64 own_a, own_b;

	ASSERT_EQ(4, kva_alloc(self->a, self->h, 4, 0));
	shared = kva_map_frame(self->a, self->h[3], PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, shared);
	fill_frame(shared, 5, 3);
	munmap(shared, FSIZE);
	ASSERT_EQ(4, publish(self->a, 5, self->h, 4));
	ASSERT_EQ(4, lookup(self->b, 5, 0, 4, self->g));
	ASSERT_EQ(0, memcmp(self->h, self->g, sizeof(__u64) * 4));

	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(4, s.nr_held);
	EXPECT_EQ(NR - 4, s.nr_free);
	ASSERT_EQ(0, client_row(self->admin, self->name, self->id_a, &ra));
	ASSERT_EQ(0, client_row(self->admin, self->name, self->id_b, &rb));
	EXPECT_EQ(4, ra.held);
	EXPECT_EQ(4, ra.shared);
	EXPECT_EQ(4, ra.charged);
	EXPECT_EQ(4, rb.held);
	EXPECT_EQ(4, rb.shared);
	EXPECT_EQ(0, rb.charged);
	/* Four frames of 64 KiB, for procfs readers too. */
	EXPECT_TRUE(kva_fdinfo_has(self->b, "kvarena-memory-shared:\t256 KiB\n"));
	EXPECT_TRUE(kva_fdinfo_has(self->a, "kvarena-memory-shared:\t256 KiB\n"));

	/* Each appends into a frame of its own: neither sees the other's. */
	ASSERT_EQ(1, kva_alloc(self->a, &own_a, 1, 0));
	ASSERT_EQ(1, kva_alloc(self->b, &own_b, 1, 0));
	EXPECT_NE(own_a, own_b);
	pa = kva_map_frame(self->a, own_a, PROT_READ | PROT_WRITE);
	pb = kva_map_frame(self->b, own_b, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, pa);
	ASSERT_NE(MAP_FAILED, pb);
	fill_frame(pa, 1, 4);
	fill_frame(pb, 2, 4);
	EXPECT_EQ(0, frame_diff(pa, 1, 4));
	EXPECT_EQ(0, frame_diff(pb, 2, 4));
	munmap(pa, FSIZE);
	munmap(pb, FSIZE);
	/* And the shared frame is as it was, for both. */
	shared = kva_map_frame(self->b, self->g[3], PROT_READ);
	ASSERT_NE(MAP_FAILED, shared);
	EXPECT_EQ(0, frame_diff(shared, 5, 3));
	munmap(shared, FSIZE);

	/* The charged client goes: the charge moves to b, nothing is cached. */
	close(self->a);
	self->a = -1;
	ASSERT_EQ(0, client_row(self->admin, self->name, self->id_b, &rb));
	EXPECT_EQ(5, rb.held);
	EXPECT_EQ(0, rb.shared);
	EXPECT_EQ(5, rb.charged);
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(5, s.nr_held);
	EXPECT_EQ(0, s.nr_cached);
	close(self->b);
	self->b = -1;
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(4, s.nr_cached);
	EXPECT_EQ(NR - 4, s.nr_free);
}

TEST_F(prefix, first_publisher_keeps_the_key)
{
	struct kvarena_prefix_entry e[1];
	struct kvarena_stat s;
	__u32 done;

	ASSERT_EQ(1, kva_alloc(self->a, self->h, 1, 0));
	ASSERT_EQ(1, kva_alloc(self->b, self->g, 1, 0));
	ASSERT_EQ(1, publish(self->a, 9, self->h, 1));
	chain(e, 1, 9, 0, self->g);
	e[0].flags = 0xffffffff;	/* an out field: ignored */
	ASSERT_EQ(0, prefix_cmd(self->b, KVARENA_IOC_PUBLISH, e, 1, &done));
	EXPECT_EQ(0, done);
	EXPECT_EQ(KVARENA_PREFIX_EXISTED, e[0].flags);
	ASSERT_EQ(1, lookup(self->b, 9, 0, 1, self->g + 1));
	EXPECT_EQ(self->h[0], self->g[1]);
	/* b's own frame stayed private: freeing it frees it. */
	ASSERT_EQ(0, kva_free(self->b, self->g, 1));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(NR - 1, s.nr_free);
	EXPECT_EQ(1, s.nr_published);
}

TEST_F(prefix, a_published_frame_is_read_only_to_all_its_publisher_too)
{
	struct kvarena_frame_fd ff;
	unsigned char *p;
	int status;
	pid_t pid;

	ASSERT_EQ(1, kva_alloc(self->a, self->h, 1, 0));
	ASSERT_EQ(0, kva_frame_fd(self->a, self->h[0], &ff));
	EXPECT_EQ(KVARENA_ACCESS_READ | KVARENA_ACCESS_WRITE, ff.access);
	p = mmap(NULL, FSIZE, PROT_READ | PROT_WRITE, MAP_SHARED, ff.fd,
		 ff.offset);
	close(ff.fd);
	ASSERT_NE(MAP_FAILED, p);
	fill_frame(p, 33, 0);
	ASSERT_EQ(1, publish(self->a, 33, self->h, 1));
	/* The mapping made before still reads... */
	EXPECT_EQ(0, frame_diff(p, 33, 0));
	/* ...but writes, in place or after a fork, fault. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		((volatile unsigned char *)p)[FSIZE / 2] ^= 1;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(SIGBUS, WTERMSIG(status));
	EXPECT_EQ(0, frame_diff(p, 33, 0));
	/* New mappings: read-only or nothing, for every holder. */
	ASSERT_EQ(0, kva_frame_fd(self->a, self->h[0], &ff));
	EXPECT_EQ(KVARENA_ACCESS_READ, ff.access);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, FSIZE, PROT_READ | PROT_WRITE,
				   MAP_SHARED, ff.fd, ff.offset));
	EXPECT_EQ(EACCES, errno);
	close(ff.fd);
	ASSERT_EQ(1, lookup(self->b, 33, 0, 1, self->g));
	ASSERT_EQ(0, kva_frame_fd(self->b, self->g[0], &ff));
	EXPECT_EQ(KVARENA_ACCESS_READ, ff.access);
	close(ff.fd);
	munmap(p, FSIZE);
}

TEST_F(prefix, lookup_of_a_frame_held_already_takes_no_second_hold)
{
	struct kvarena_prefix_entry e[3];
	struct kvarena_client_info r;
	__u32 done;

	ASSERT_EQ(2, kva_alloc(self->a, self->h, 2, 0));
	ASSERT_EQ(2, publish(self->a, 3, self->h, 2));
	chain(e, 3, 3, 0, NULL);
	set_key(e[2].key, 3, 0);
	ASSERT_EQ(0, prefix_cmd(self->a, KVARENA_IOC_LOOKUP, e, 3, &done));
	EXPECT_EQ(3, done);
	EXPECT_EQ(KVARENA_PREFIX_HELD, e[0].flags);
	EXPECT_EQ(KVARENA_PREFIX_HELD, e[1].flags);
	EXPECT_EQ(KVARENA_PREFIX_HELD, e[2].flags);
	ASSERT_EQ(0, prefix_cmd(self->b, KVARENA_IOC_LOOKUP, e, 3, &done));
	EXPECT_EQ(3, done);
	EXPECT_EQ(0, e[0].flags);
	EXPECT_EQ(0, e[1].flags);
	EXPECT_EQ(KVARENA_PREFIX_HELD, e[2].flags);
	ASSERT_EQ(0, client_row(self->admin, self->name, self->id_b, &r));
	EXPECT_EQ(2, r.held);
	ASSERT_EQ(0, client_row(self->admin, self->name, self->id_a, &r));
	EXPECT_EQ(2, r.held);
}

/* ---- reclaim -------------------------------------------------------------- */

TEST_F(prefix, pressure_loop_reclaims_cached_frames_and_never_held_ones)
{
	int c = kva_open(O_RDWR), round, i;
	unsigned char *held[4];
	struct kvarena_stat s;
	__u64 got[NR];

	ASSERT_LE(0, c);
	ASSERT_EQ(0, kva_attach(c, self->name, "c", 0, 0, NULL));
	/* b holds a 4-frame prefix a published and let go of, mapped. */
	ASSERT_EQ(4, kva_alloc(self->a, self->h, 4, 0));
	for (i = 0; i < 4; i++) {
		unsigned char *p = kva_map_frame(self->a, self->h[i],
					     PROT_READ | PROT_WRITE);

		ASSERT_NE(MAP_FAILED, p);
		fill_frame(p, 40, i);
		munmap(p, FSIZE);
	}
	ASSERT_EQ(4, publish(self->a, 40, self->h, 4));
	ASSERT_EQ(4, lookup(self->b, 40, 0, 4, self->g));
	ASSERT_EQ(0, kva_free(self->a, self->h, 4));
	for (i = 0; i < 4; i++) {
		held[i] = kva_map_frame(self->b, self->g[i], PROT_READ);
		ASSERT_NE(MAP_FAILED, held[i]);
	}

	for (round = 0; round < 20; round++) {
		int n, want;

		/* a fills a few frames, publishes them, lets go: cached. */
		n = kva_alloc(self->a, self->h, 1 + round % 6,
			      KVARENA_ALLOC_PARTIAL);
		ASSERT_LT(0, n);
		ASSERT_EQ(n, publish(self->a, 100 + round, self->h, n));
		ASSERT_EQ(0, kva_free(self->a, self->h, n));
		/* c wants everything: free first, then the cache, oldest first. */
		ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
		want = s.nr_free + s.nr_cached;
		EXPECT_EQ(NR - 4, want);
		EXPECT_EQ(-ENOSPC, kva_alloc(c, got, want + 1, 0));
		ASSERT_EQ(want, kva_alloc(c, got, want, 0));
		ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
		EXPECT_EQ(0, s.nr_cached);
		EXPECT_EQ(0, s.nr_free);
		EXPECT_EQ(NR, s.nr_held);
		/* Nothing left but held frames: ENOSPC, and they stay. */
		EXPECT_EQ(-ENOSPC, kva_alloc(c, got + want, 1,
					     KVARENA_ALLOC_PARTIAL));
		EXPECT_EQ(-ENOSPC, kva_alloc(self->a, self->h, 1, 0));
		EXPECT_EQ(0, lookup(self->a, 100 + round, 0, n, self->h));
		for (i = 0; i < 4; i++)
			ASSERT_EQ(0, frame_diff(held[i], 40, i));
		ASSERT_EQ(4, lookup(self->a, 40, 0, 4, self->h));
		ASSERT_EQ(0, memcmp(self->h, self->g, 4 * sizeof(__u64)));
		ASSERT_EQ(0, kva_free(self->a, self->h, 4));
		ASSERT_EQ(0, kva_free(c, got, want));
	}
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_LT(20, s.cache_reclaims);
	EXPECT_EQ(4, s.nr_held);
	for (i = 0; i < 4; i++)
		munmap(held[i], FSIZE);
	close(c);
}

TEST_F(prefix, chain_whose_middle_was_reclaimed_returns_the_leading_part)
{
	struct kvarena_stat s;
	__u64 got[NR];

	ASSERT_EQ(6, kva_alloc(self->a, self->h, 6, 0));
	ASSERT_EQ(6, publish(self->a, 12, self->h, 6));
	/* The third frame is cached first, so it is the oldest. */
	ASSERT_EQ(0, kva_free(self->a, self->h + 2, 1));
	ASSERT_EQ(0, kva_free(self->a, self->h, 2));
	ASSERT_EQ(0, kva_free(self->a, self->h + 3, 3));
	ASSERT_EQ(NR - 6 + 1, kva_alloc(self->b, got, NR - 6 + 1, 0));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(1, s.cache_reclaims);
	EXPECT_EQ(5, s.nr_published);
	ASSERT_EQ(2, lookup(self->a, 12, 0, 6, self->g));
	EXPECT_EQ(self->h[0], self->g[0]);
	EXPECT_EQ(self->h[1], self->g[1]);
	/* The keys after the hole are still there, for a chain of their own. */
	ASSERT_EQ(3, lookup(self->a, 12, 3, 3, self->g + 2));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(5, s.cache_hits);
	EXPECT_EQ(4, s.cache_misses);
	/* The reclaimed frame's handle is stale. */
	EXPECT_EQ(-ESTALE, kva_frame_fd(self->a, self->h[2], NULL));
}

TEST_F(prefix, cached_frames_count_for_a_min_and_go_to_it)
{
	int g = kva_open(O_RDWR);
	struct kvarena_stat s;

	ASSERT_EQ(NR, kva_alloc(self->a, self->h, NR, 0));
	ASSERT_EQ(NR / 2, publish(self->a, 20, self->h, NR / 2));
	ASSERT_EQ(0, kva_free(self->a, self->h, NR / 2));
	EXPECT_EQ(-ENOSPC, kva_attach(g, self->name, "g", NR / 2 + 1, 0, NULL));
	ASSERT_EQ(0, kva_attach(g, self->name, "g", NR / 2, 0, NULL));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(NR / 2, s.nr_reserved);
	/* The reserved cache is nobody else's to revive or reclaim. */
	EXPECT_EQ(-ENOSPC, lookup(self->b, 20, 0, 1, self->g));
	EXPECT_EQ(-ENOSPC, kva_alloc(self->b, self->g, 1, 0));
	ASSERT_EQ(NR / 2, kva_alloc(g, self->g, NR / 2, 0));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(NR / 2, s.cache_reclaims);
	EXPECT_EQ(0, s.nr_reserved);
	close(g);
}

/* ---- refusals ------------------------------------------------------------- */

TEST_F(prefix, publishing_a_frame_not_held_is_refused)
{
	__u64 stale, nobody = KVARENA_HANDLE(1, NR - 1);
	struct kvarena_stat s;

	ASSERT_EQ(1, kva_alloc(self->a, self->h, 1, 0));
	ASSERT_EQ(1, kva_alloc(self->a, &stale, 1, 0));
	ASSERT_EQ(0, kva_free(self->a, &stale, 1));
	EXPECT_EQ(-EPERM, publish(self->b, 1, self->h, 1));
	EXPECT_EQ(-ESTALE, publish(self->a, 1, &stale, 1));
	EXPECT_EQ(-ENOENT, publish(self->a, 1, &nobody, 1));
	/* A batch with one bad handle publishes nothing. */
	self->h[1] = stale;
	EXPECT_EQ(-ESTALE, publish(self->a, 1, self->h, 2));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(0, s.nr_published);
	/* Cached: nobody holds it, so nobody may publish it. */
	ASSERT_EQ(1, publish(self->a, 1, self->h, 1));
	ASSERT_EQ(0, kva_free(self->a, self->h, 1));
	EXPECT_EQ(-ENOENT, publish(self->a, 2, self->h, 1));
	EXPECT_EQ(-ENOENT, publish(self->b, 2, self->h, 1));
}

TEST_F(prefix, a_frame_has_one_key)
{
	struct kvarena_stat s;

	ASSERT_EQ(1, kva_alloc(self->a, self->h, 1, 0));
	ASSERT_EQ(1, publish(self->a, 1, self->h, 1));
	EXPECT_EQ(-EBUSY, publish(self->a, 2, self->h, 1));
	/* Under its own key again: nothing changes, and it is reported so. */
	EXPECT_EQ(1, publish(self->a, 1, self->h, 1));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(1, s.nr_published);
}

TEST_F(prefix, lookup_beyond_max_is_enospc_and_takes_nothing)
{
	int l = kva_open(O_RDWR);
	struct kvarena_stat s;

	ASSERT_EQ(0, kva_attach(l, self->name, "limited", 0, 3, NULL));
	ASSERT_EQ(4, kva_alloc(self->a, self->h, 4, 0));
	ASSERT_EQ(4, publish(self->a, 8, self->h, 4));
	EXPECT_EQ(-ENOSPC, lookup(l, 8, 0, 4, self->g));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(0, s.cache_hits);
	EXPECT_EQ(3, lookup(l, 8, 0, 3, self->g));
	close(l);
}

TEST(a_key_from_one_arena_is_invisible_in_another)
{
	int admin = kva_open(O_RDWR), x = kva_open(O_RDWR), y = kva_open(O_RDWR);
	struct kvarena_stat s;
	__u64 h[2], got[2];

	ASSERT_LE(0, admin);
	ASSERT_EQ(0, make_arena(admin, "px"));
	ASSERT_EQ(0, make_arena(admin, "py"));
	ASSERT_EQ(0, kva_attach(x, "px", "x", 0, 0, NULL));
	ASSERT_EQ(0, kva_attach(y, "py", "y", 0, 0, NULL));
	ASSERT_EQ(2, kva_alloc(x, h, 2, 0));
	ASSERT_EQ(2, publish(x, 4, h, 2));
	EXPECT_EQ(0, lookup(y, 4, 0, 2, got));
	ASSERT_EQ(0, kva_stat(admin, "py", &s));
	EXPECT_EQ(0, s.nr_published);
	EXPECT_EQ(2, s.cache_misses);
	/* The same keys in y's arena are y's own. */
	ASSERT_EQ(2, kva_alloc(y, got, 2, 0));
	EXPECT_EQ(2, publish(y, 4, got, 2));
	ASSERT_EQ(0, kva_stat(admin, "px", &s));
	EXPECT_EQ(2, s.nr_published);
	EXPECT_EQ(0, s.cache_misses);
	close(x);
	close(y);
	EXPECT_EQ(0, kva_destroy(admin, "px"));
	EXPECT_EQ(0, kva_destroy(admin, "py"));
	close(admin);
}

TEST_F(prefix, bad_arguments_are_einval_and_change_nothing)
{
	struct kvarena_prefix_entry e[2];
	struct kvarena_prefix p;
	struct kvarena_stat s;
	unsigned long cmds[2] = { KVARENA_IOC_PUBLISH, KVARENA_IOC_LOOKUP };
	int i;

	ASSERT_EQ(2, kva_alloc(self->a, self->h, 2, 0));
	for (i = 0; i < 2; i++) {
		chain(e, 2, 6, 0, self->h);
		p = (struct kvarena_prefix){
			.entries = (__u64)(unsigned long)e, .count = 2 };
		p.flags = 1u << 31;
		EXPECT_EQ(-EINVAL, kva_ioctl(self->a, cmds[i], &p));
		p.flags = 0;
		/* Token ids only with KVARENA_PUBLISH_TOKENS, and PUBLISH only. */
		p.tokens_per_entry = 1;
		EXPECT_EQ(-EINVAL, kva_ioctl(self->a, cmds[i], &p));
		p.tokens_per_entry = 0;
		p.reserved = 1;
		EXPECT_EQ(-EINVAL, kva_ioctl(self->a, cmds[i], &p));
		p.reserved = 0;
		/* nr_lower is out only. */
		p.nr_lower = 1;
		EXPECT_EQ(-EINVAL, kva_ioctl(self->a, cmds[i], &p));
		p.nr_lower = 0;
		p.count = 0;
		EXPECT_EQ(-EINVAL, kva_ioctl(self->a, cmds[i], &p));
		p.count = KVARENA_MAX_BATCH + 1;
		EXPECT_EQ(-EINVAL, kva_ioctl(self->a, cmds[i], &p));
		p.count = 2;
		e[1].reserved = 1;
		EXPECT_EQ(-EINVAL, kva_ioctl(self->a, cmds[i], &p));
		e[1].reserved = 0;
		memset(e[1].key, 0, KVARENA_KEY_LEN);
		EXPECT_EQ(-EINVAL, kva_ioctl(self->a, cmds[i], &p));
		/* User pointers are never trusted. */
		p.entries = 0;
		EXPECT_EQ(-EFAULT, kva_ioctl(self->a, cmds[i], &p));
		p.entries = (__u64)-4096;
		EXPECT_EQ(-EFAULT, kva_ioctl(self->a, cmds[i], &p));
		/* And the command's own struct. */
		EXPECT_EQ(-EFAULT, kva_ioctl(self->a, cmds[i], (void *)8));
	}
	/* A frame twice. */
	chain(e, 2, 6, 0, self->h);
	e[1].handle = self->h[0];
	EXPECT_EQ(-EINVAL, prefix_cmd(self->a, KVARENA_IOC_PUBLISH, e, 2, NULL));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(0, s.nr_published);
	EXPECT_EQ(0, s.cache_hits + s.cache_misses);
}

TEST_F(prefix, chain_spanning_an_unmapped_page_is_efault)
{
	long page = sysconf(_SC_PAGESIZE);
	struct kvarena_prefix_entry *e;
	struct kvarena_stat s;
	char *m;

	ASSERT_EQ(1, kva_alloc(self->a, self->h, 1, 0));
	m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, m);
	ASSERT_EQ(0, munmap(m + page, page));
	/* Entry 0 ends the page; entry 1 would be in the hole. */
	e = (struct kvarena_prefix_entry *)(m + page) - 1;
	chain(e, 1, 2, 0, self->h);
	EXPECT_EQ(-EFAULT, prefix_cmd(self->a, KVARENA_IOC_PUBLISH, e, 2, NULL));
	EXPECT_EQ(-EFAULT, prefix_cmd(self->a, KVARENA_IOC_LOOKUP, e, 2, NULL));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(0, s.nr_published);
	/* A read-only chain: PUBLISH cannot write its flags back. */
	ASSERT_EQ(0, mprotect(m, page, PROT_READ));
	EXPECT_EQ(-EFAULT, prefix_cmd(self->a, KVARENA_IOC_PUBLISH, e, 1, NULL));
	munmap(m, page);
}

TEST_F(prefix, lookup_that_cannot_write_back_takes_no_hold)
{
	struct kvarena_prefix_entry *e;
	struct kvarena_client_info r;
	struct kvarena_stat s;
	long page = sysconf(_SC_PAGESIZE);

	ASSERT_EQ(2, kva_alloc(self->a, self->h, 2, 0));
	ASSERT_EQ(2, publish(self->a, 31, self->h, 2));
	e = mmap(NULL, page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, e);
	chain(e, 2, 31, 0, NULL);
	ASSERT_EQ(0, mprotect(e, page, PROT_READ));
	EXPECT_EQ(-EFAULT, prefix_cmd(self->b, KVARENA_IOC_LOOKUP, e, 2, NULL));
	ASSERT_EQ(0, client_row(self->admin, self->name, self->id_b, &r));
	EXPECT_EQ(0, r.held);
	/* a still holds its two: the undo dropped only b's new holds. */
	EXPECT_EQ(-EFAULT, prefix_cmd(self->a, KVARENA_IOC_LOOKUP, e, 2, NULL));
	ASSERT_EQ(0, client_row(self->admin, self->name, self->id_a, &r));
	EXPECT_EQ(2, r.held);
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(2, s.nr_held);
	munmap(e, page);
}

TEST_F(prefix, read_only_or_unattached_files_are_refused)
{
	struct kvarena_prefix_entry e[1];
	int ro = kva_open(O_RDONLY), un = kva_open(O_RDWR);

	ASSERT_LE(0, ro);
	ASSERT_LE(0, un);
	chain(e, 1, 1, 0, NULL);
	EXPECT_EQ(-EBADF, prefix_cmd(ro, KVARENA_IOC_PUBLISH, e, 1, NULL));
	EXPECT_EQ(-EBADF, prefix_cmd(ro, KVARENA_IOC_LOOKUP, e, 1, NULL));
	EXPECT_EQ(-ENOTCONN, prefix_cmd(un, KVARENA_IOC_PUBLISH, e, 1, NULL));
	EXPECT_EQ(-ENOTCONN, prefix_cmd(un, KVARENA_IOC_LOOKUP, e, 1, NULL));
	close(ro);
	close(un);
}

/* ---- release, evict and destroy ----------------------------------------- */

TEST_F(prefix, sigkill_drops_holds_and_leaves_what_was_published_cached)
{
	struct kvarena_stat s;
	int p[2], status;
	pid_t pid;
	char c;

	ASSERT_EQ(3, kva_alloc(self->a, self->h, 3, 0));
	ASSERT_EQ(3, publish(self->a, 50, self->h, 3));
	ASSERT_EQ(0, kva_free(self->a, self->h, 3));
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = kva_open(O_RDWR);
		__u64 h[NR];

		if (kva_attach(fd, self->name, "victim", 0, 0, NULL) ||
		    lookup(fd, 50, 0, 3, h) != 3 ||
		    kva_alloc(fd, h + 3, 5, 0) != 5 ||
		    publish(fd, 51, h + 3, 2) != 2)
			_exit(1);
		if (write(p[1], "r", 1) != 1)
			_exit(2);
		pause();
		_exit(3);
	}
	ASSERT_EQ(1, read(p[0], &c, 1));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(8, s.nr_held);
	EXPECT_EQ(0, s.nr_cached);
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(0, s.nr_held);
	EXPECT_EQ(5, s.nr_cached);
	EXPECT_EQ(5, s.nr_published);
	EXPECT_EQ(NR - 5, s.nr_free);
	EXPECT_EQ(2, s.nr_clients);
	close(p[0]);
	close(p[1]);
}

/* EVICT client @id of arena @name; its frames go to *@nr. */
static int evict(int admin, const char *name, __u32 id, __u32 *nr)
{
	struct kvarena_evict e;
	int ret;

	memset(&e, 0, sizeof(e));
	snprintf(e.name, sizeof(e.name), "%s", name);
	e.client_id = id;
	ret = kva_ioctl(admin, KVARENA_IOC_EVICT, &e);
	if (!ret && nr)
		*nr = e.nr_frames;
	return ret;
}

TEST_F(prefix, evict_drops_shared_holds_and_leaves_what_was_published_cached)
{
	const char *no_ring = kva_uring_missing();
	struct kvarena_prefix_entry e[2];
	struct kvarena_prefix pub = { .entries = (__u64)(unsigned long)e,
				      .count = 1 };
	struct kvarena_prefix look = {
		.entries = (__u64)(unsigned long)(e + 1), .count = 1 };
	struct kvarena_client_info row;
	struct kvarena_stat s;
	unsigned char *p, *q;
	struct io_uring ring;
	__u32 nr = 0;
	int res[2];

	/* a publishes 4 frames it keeps; b holds them too, and 3 of its own. */
	ASSERT_EQ(4, kva_alloc(self->a, self->h, 4, 0));
	p = kva_map_frame(self->a, self->h[0], PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);
	fill_frame(p, 80, 0);
	ASSERT_EQ(0, munmap(p, FSIZE));
	ASSERT_EQ(4, publish(self->a, 80, self->h, 4));
	ASSERT_EQ(4, lookup(self->b, 80, 0, 4, self->g));
	ASSERT_EQ(3, kva_alloc(self->b, self->g + 4, 3, 0));
	ASSERT_EQ(2, publish(self->b, 81, self->g + 4, 2));
	q = kva_map_frame(self->b, self->g[0], PROT_READ);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0, frame_diff(q, 80, 0));
	ASSERT_EQ(0, client_row(self->admin, self->name, self->id_a, &row));
	EXPECT_EQ(4, row.shared);
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(7, s.nr_held);

	ASSERT_EQ(0, evict(self->admin, self->name, self->id_b, &nr));
	EXPECT_EQ(7, nr);
	/* a's frames stay a's, now its alone; b's published ones are cached. */
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(4, s.nr_held);
	EXPECT_EQ(2, s.nr_cached);
	EXPECT_EQ(6, s.nr_published);
	EXPECT_EQ(NR - 6, s.nr_free);
	EXPECT_EQ(1, s.nr_clients);
	ASSERT_EQ(0, client_row(self->admin, self->name, self->id_a, &row));
	EXPECT_EQ(4, row.held);
	EXPECT_EQ(0, row.shared);
	EXPECT_EQ(-ENOENT, client_row(self->admin, self->name, self->id_b,
				      &row));
	p = kva_map_frame(self->a, self->h[0], PROT_READ);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, frame_diff(p, 80, 0));
	EXPECT_EQ(0, munmap(p, FSIZE));
	/* q was zapped with the rest of b's mappings; it is not touched. */
	EXPECT_EQ(0, munmap(q, FSIZE));

	/* b is out: no PUBLISH or LOOKUP, over ioctl or io_uring. */
	EXPECT_EQ(-ESHUTDOWN, publish(self->b, 82, self->g + 6, 1));
	EXPECT_EQ(-ESHUTDOWN, lookup(self->b, 80, 0, 4, NULL));
	if (!no_ring) {
		ASSERT_EQ(0, io_uring_queue_init(2, &ring, 0));
		chain(e, 1, 82, 0, self->g + 6);
		chain(e + 1, 1, 80, 0, NULL);
		kva_queue_cmd(&ring, 0, self->b, KVARENA_IOC_PUBLISH, &pub, 0, 0);
		kva_queue_cmd(&ring, 1, self->b, KVARENA_IOC_LOOKUP, &look, 0, 0);
		ASSERT_EQ(0, kva_submit_and_reap(&ring, 2, res));
		EXPECT_EQ(-ESHUTDOWN, res[0]);
		EXPECT_EQ(-ESHUTDOWN, res[1]);
		io_uring_queue_exit(&ring);
	}

	/* What b published is there for the next one to look up. */
	ASSERT_EQ(2, lookup(self->a, 81, 0, 2, self->g));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(6, s.nr_held);
	EXPECT_EQ(0, s.nr_cached);
	EXPECT_EQ(6, s.nr_published);
	KVA_URING_PART_SKIPPED(no_ring);
}

TEST(destroy_drops_the_cache)
{
	int admin = kva_open(O_RDWR), c = kva_open(O_RDWR);
	struct kvarena_stat s;
	__u64 h[4];

	ASSERT_EQ(0, make_arena(admin, "pdrop"));
	ASSERT_EQ(0, kva_attach(c, "pdrop", "c", 0, 0, NULL));
	ASSERT_EQ(4, kva_alloc(c, h, 4, 0));
	ASSERT_EQ(4, publish(c, 1, h, 4));
	close(c);
	ASSERT_EQ(0, kva_stat(admin, "pdrop", &s));
	EXPECT_EQ(4, s.nr_cached);
	/* Cached frames are no clients: destroy goes ahead. */
	ASSERT_EQ(0, kva_destroy(admin, "pdrop"));
	ASSERT_EQ(0, make_arena(admin, "pdrop"));
	c = kva_open(O_RDWR);
	ASSERT_EQ(0, kva_attach(c, "pdrop", "c", 0, 0, NULL));
	EXPECT_EQ(0, lookup(c, 1, 0, 4, h));
	ASSERT_EQ(0, kva_stat(admin, "pdrop", &s));
	EXPECT_EQ(0, s.nr_cached);
	EXPECT_EQ(NR, s.nr_free);
	close(c);
	EXPECT_EQ(0, kva_destroy(admin, "pdrop"));
	close(admin);
}

/* ---- reporting ------------------------------------------------------------ */

static long read_sysfs(const char *arena, const char *attr)
{
	char path[128], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/misc/kvarena/arenas/%s/%s",
		 arena, attr);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strtol(buf, NULL, 10);
}

TEST_F(prefix, stat_and_sysfs_report_the_cache)
{
	struct kvarena_version v = { 0 };
	struct kvarena_stat s;

	ASSERT_EQ(0, kva_ioctl(self->admin, KVARENA_IOC_VERSION, &v));
	EXPECT_TRUE(v.features & KVARENA_FEAT_PREFIX);
	ASSERT_EQ(6, kva_alloc(self->a, self->h, 6, 0));
	ASSERT_EQ(6, publish(self->a, 70, self->h, 6));
	ASSERT_EQ(0, kva_free(self->a, self->h, 6));
	ASSERT_EQ(3, lookup(self->b, 70, 0, 3, self->g));
	EXPECT_EQ(0, lookup(self->b, 71, 0, 2, self->g + 3));
	ASSERT_EQ(NR - 6 + 1, kva_alloc(self->a, self->h, NR - 6 + 1, 0));
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(NR, s.nr_frames);
	EXPECT_EQ(s.nr_frames, s.nr_free + s.nr_cached + s.nr_held);
	EXPECT_EQ(2, s.nr_cached);
	EXPECT_EQ(5, s.nr_published);
	EXPECT_EQ(3, s.cache_hits);
	EXPECT_EQ(2, s.cache_misses);
	EXPECT_EQ(1, s.cache_reclaims);
	EXPECT_EQ(s.nr_cached, read_sysfs(self->name, "cached"));
	EXPECT_EQ(s.nr_published, read_sysfs(self->name, "published"));
	EXPECT_EQ(s.cache_hits, read_sysfs(self->name, "cache_hits"));
	EXPECT_EQ(s.cache_misses, read_sysfs(self->name, "cache_misses"));
	EXPECT_EQ(s.cache_reclaims, read_sysfs(self->name, "cache_reclaims"));
	/* STAT's outputs are ignored on input: nothing but flags is checked. */
	s.nr_quarantined = 1;
	s.flags = 1u << 7;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->admin, KVARENA_IOC_STAT, &s));
}

/* ---- io_uring ------------------------------------------------------------- */

TEST_F(prefix, uring_publishes_and_looks_up_a_chain_per_sqe)
{
	struct kvarena_prefix_entry pe[4], le[4];
	struct kvarena_prefix pub = { .entries = (__u64)(unsigned long)pe,
				      .count = 4 };
	struct kvarena_prefix look = { .entries = (__u64)(unsigned long)le,
				       .count = 4 };
	struct io_uring ring;
	int res[2], i;

	KVA_NEED_URING();
	ASSERT_EQ(4, kva_alloc(self->a, self->h, 4, 0));
	chain(pe, 4, 90, 0, self->h);
	chain(le, 4, 90, 0, NULL);
	ASSERT_EQ(0, io_uring_queue_init(8, &ring, 0));
	/* Linked: the LOOKUP runs after the PUBLISH, one io_uring_enter. */
	kva_queue_cmd(&ring, 0, self->a, KVARENA_IOC_PUBLISH, &pub, 0,
		      IOSQE_IO_LINK);
	kva_queue_cmd(&ring, 1, self->b, KVARENA_IOC_LOOKUP, &look, 0, 0);
	ASSERT_EQ(0, kva_submit_and_reap(&ring, 2, res));
	EXPECT_EQ(0, res[0]);
	EXPECT_EQ(4, pub.nr_done);
	EXPECT_EQ(0, res[1]);
	EXPECT_EQ(4, look.nr_done);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(self->h[i], le[i].handle);
	io_uring_queue_exit(&ring);
}

TEST_F(prefix, uring_has_the_same_argument_checks_as_ioctl)
{
	struct kvarena_prefix_entry e[2];
	struct kvarena_prefix flags = { .entries = (__u64)(unsigned long)e,
					.count = 2, .flags = 1u << 31 };
	struct kvarena_prefix rsv = { .entries = (__u64)(unsigned long)e,
				      .count = 2, .reserved = 1 };
	struct kvarena_prefix zero = { .entries = (__u64)(unsigned long)e };
	struct kvarena_prefix big = { .entries = (__u64)(unsigned long)e,
				      .count = KVARENA_MAX_BATCH + 1 };
	struct kvarena_prefix badp = { .entries = 8, .count = 2 };
	struct kvarena_prefix stale = { .entries = (__u64)(unsigned long)e,
					.count = 2 };
	int ro = kva_open(O_RDONLY), res[8], i;
	struct kvarena_stat s;
	struct io_uring ring;

	KVA_NEED_URING();
	ASSERT_EQ(2, kva_alloc(self->a, self->h, 2, 0));
	chain(e, 2, 3, 0, self->h);
	ASSERT_EQ(0, io_uring_queue_init(8, &ring, 0));
	for (i = 0; i < 2; i++) {
		__u32 cmd = i ? KVARENA_IOC_LOOKUP : KVARENA_IOC_PUBLISH;

		kva_queue_cmd(&ring, 0, self->a, cmd, &flags, 0, 0);
		kva_queue_cmd(&ring, 1, self->a, cmd, &rsv, 0, 0);
		kva_queue_cmd(&ring, 2, self->a, cmd, &zero, 0, 0);
		kva_queue_cmd(&ring, 3, self->a, cmd, &big, 0, 0);
		kva_queue_cmd(&ring, 4, self->a, cmd, &badp, 0, 0);
		kva_queue_cmd(&ring, 5, self->a, cmd, (void *)8, 0, 0);
		kva_queue_cmd(&ring, 6, ro, cmd, &stale, 0, 0);
		kva_queue_cmd(&ring, 7, self->b, cmd, i ? &badp : &stale, 0,
			      0);
		ASSERT_EQ(0, kva_submit_and_reap(&ring, 8, res));
		EXPECT_EQ(-EINVAL, res[0]);
		EXPECT_EQ(-EINVAL, res[1]);
		EXPECT_EQ(-EINVAL, res[2]);
		EXPECT_EQ(-EINVAL, res[3]);
		EXPECT_EQ(-EFAULT, res[4]);
		EXPECT_EQ(-EFAULT, res[5]);
		EXPECT_EQ(-EBADF, res[6]);
		/* b does not hold a's frames. */
		EXPECT_EQ(i ? -EFAULT : -EPERM, res[7]);
	}
	ASSERT_EQ(0, kva_stat(self->admin, self->name, &s));
	EXPECT_EQ(0, s.nr_published);
	io_uring_queue_exit(&ring);
	close(ro);
}

/* ---- without privileges ----------------------------------------------------- */

TEST_F(prefix, an_unprivileged_user_publishes_and_looks_up_in_its_own_domain)
{
	struct stat st;
	int status;
	pid_t pid;

	/* The prefix the unprivileged client will find. */
	ASSERT_EQ(2, kva_alloc(self->a, self->h, 2, 0));
	ASSERT_EQ(2, publish(self->a, 61, self->h, 2));
	ASSERT_EQ(0, stat(KVARENA_DEVICE, &st));
	ASSERT_EQ(0, chmod(KVARENA_DEVICE, 0666));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kvarena_prefix_entry e[2];
		__u64 h[4], got[4];
		int fd, bad = 0;

		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(100);
		fd = kva_open(O_RDWR);
		if (fd < 0 || kva_attach(fd, self->name, "nobody", 0, 0, NULL))
			_exit(101);
		bad |= kva_alloc(fd, h, 2, 0) != 2;
		bad |= (publish(fd, 60, h, 2) != 2) << 1;
		/* root's prefix is another cache domain's: not there. */
		bad |= (lookup(fd, 61, 0, 2, got) != 0) << 2;
		/* Its own is, and a published frame keeps its one key. */
		bad |= (lookup(fd, 60, 0, 2, got) != 2) << 2;
		bad |= (publish(fd, 62, got, 1) != -EBUSY) << 3;
		bad |= (kva_free(fd, got, 2) != 0) << 4;
		/* Frames of others stay out of reach. */
		bad |= (publish(fd, 63, (__u64[]){ KVARENA_HANDLE(1, NR - 1) },
				1) != -ENOENT) << 5;
		chain(e, 2, 60, 0, h);
		e[0].reserved = 1;
		bad |= (prefix_cmd(fd, KVARENA_IOC_LOOKUP, e, 2, NULL) !=
			-EINVAL) << 6;
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, chmod(KVARENA_DEVICE, st.st_mode & 07777));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* What it published outlives it, in its domain: root's sees none. */
	EXPECT_EQ(0, lookup(self->b, 60, 0, 2, self->g));
	EXPECT_EQ(2, lookup(self->b, 61, 0, 2, self->g));
}

TEST_HARNESS_MAIN
