// SPDX-License-Identifier: GPL-2.0
/*
 * Gangs: one arena over N member arenas (one per GPU of a tensor-parallel
 * engine; host arenas stand in for GPUs here).  One ALLOC takes a frame in
 * every member at once, all or nothing, and one handle is valid in each;
 * rank processes JOIN the gang client and map, each in its own member,
 * only what the client holds; the client's death (or a rank's, if asked)
 * returns every member's frames and revokes every rank's mapping.  Each
 * member's memory is checked through its own backing file, which the test
 * keeps: a rank's bytes land in its member and nowhere else.
 */
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "kva_test.h"
#include "kva_tenant.h"
#include "kva_uring.h"

#define NR	16			/* frames per member */
#define FSIZE	(64 * 1024)
#define GANG	"gang"
#define TENANT	1001			/* an unprivileged tenant */
#define OTHER	1002			/* another one */

static void member_name(char *buf, int r)
{
	snprintf(buf, KVARENA_NAME_LEN, "gm%d", r);
}

static int gang_create(int fd, const char *name, int n, const char *first)
{
	char names[KVARENA_GANG_MAX][KVARENA_NAME_LEN];
	struct kvarena_gang_create g = {
		.members = (__u64)(unsigned long)names,
		.nr_members = n,
	};
	int r;

	memset(names, 0, sizeof(names));
	for (r = 0; r < n && r < KVARENA_GANG_MAX; r++)
		member_name(names[r], r);
	if (first)
		snprintf(names[0], KVARENA_NAME_LEN, "%s", first);
	snprintf(g.name, sizeof(g.name), "%s", name);
	return kva_ioctl(fd, KVARENA_IOC_GANG_CREATE, &g);
}

static int gang_token(int fd, __u32 flags, __u64 *token)
{
	struct kvarena_gang_token t = { .flags = flags };
	int ret = kva_ioctl(fd, KVARENA_IOC_GANG_TOKEN, &t);

	if (token)
		*token = t.token;
	return ret;
}

static int join(int fd, __u32 client_id, __u32 rank, __u64 token,
		struct kvarena_join *out)
{
	struct kvarena_join j = { .client_id = client_id, .rank = rank,
				  .token = token };
	int ret;

	snprintf(j.name, sizeof(j.name), GANG);
	snprintf(j.label, sizeof(j.label), "rank%u", rank);
	ret = kva_ioctl(fd, KVARENA_IOC_JOIN, &j);
	if (out)
		*out = j;
	return ret;
}

/* A new file joined as @rank of client @id; -errno on failure. */
static int rank_open(__u32 id, __u32 rank, __u64 token)
{
	int fd = kva_open(O_RDWR), ret;

	if (fd < 0)
		return -errno;
	ret = join(fd, id, rank, token, NULL);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

static __u32 gang_held(int fd)
{
	struct kvarena_stat s;

	if (kva_stat(fd, GANG, &s))
		return ~0u;
	return s.nr_held;
}

FIXTURE(gang) {
	int fd;			/* root's */
	int n;
	int mfd[KVARENA_GANG_MAX];
	unsigned char *mem[KVARENA_GANG_MAX];	/* each member's backing */
};

FIXTURE_VARIANT(gang) {
	int members;
};

FIXTURE_VARIANT_ADD(gang, of_2) { .members = 2 };
FIXTURE_VARIANT_ADD(gang, of_4) { .members = 4 };

FIXTURE_SETUP(gang)
{
	char name[KVARENA_NAME_LEN];
	int r;

	self->n = variant->members;
	self->fd = kva_open(O_RDWR);
	ASSERT_LE(0, self->fd);
	/* What a failed test before may have left: the gang goes first. */
	kva_wait_no_clients(self->fd, GANG);
	kva_destroy(self->fd, GANG);
	for (r = 0; r < KVARENA_GANG_MAX; r++) {
		member_name(name, r);
		kva_destroy(self->fd, name);
	}
	for (r = 0; r < self->n; r++) {
		member_name(name, r);
		ASSERT_EQ(0, kva_create_flags(self->fd, name, NR, FSIZE, 2, 0));
		self->mfd[r] = kva_sealed_memfd((size_t)NR * FSIZE);
		ASSERT_LE(0, self->mfd[r]);
		ASSERT_EQ(0, kva_set_backing(self->fd, name, 0, NR,
					     self->mfd[r], 0));
		self->mem[r] = mmap(NULL, (size_t)NR * FSIZE, PROT_READ,
				    MAP_SHARED, self->mfd[r], 0);
		ASSERT_NE(MAP_FAILED, self->mem[r]);
	}
	ASSERT_EQ(0, gang_create(self->fd, GANG, self->n, NULL));
}

FIXTURE_TEARDOWN(gang)
{
	char name[KVARENA_NAME_LEN];
	int r;

	kva_wait_no_clients(self->fd, GANG);
	EXPECT_EQ(0, kva_destroy(self->fd, GANG));
	for (r = 0; r < self->n; r++) {
		member_name(name, r);
		EXPECT_EQ(0, kva_destroy(self->fd, name));
		munmap(self->mem[r], (size_t)NR * FSIZE);
		close(self->mfd[r]);
	}
	close(self->fd);
}

/* Frame @idx of member @r as its memory holds it: all @tag? */
static bool member_frame_is(FIXTURE_DATA(gang) *self, int r, __u32 idx,
			    unsigned char tag)
{
	const unsigned char *p = self->mem[r] + (size_t)idx * FSIZE;
	size_t i;

	for (i = 0; i < FSIZE; i++)
		if (p[i] != tag)
			return false;
	return true;
}

TEST_F(gang, one_alloc_is_a_frame_in_every_member_and_each_rank_writes_its_own)
{
	struct kvarena_attach at;
	int leader = kva_open(O_RDWR), ranks[KVARENA_GANG_MAX], r;
	struct kvarena_join j;
	__u64 h[3], token;

	ASSERT_LE(0, leader);
	ASSERT_EQ(0, kva_attach(leader, GANG, "engine", 0, 0, &at));
	EXPECT_EQ(NR, at.nr_frames);
	EXPECT_EQ(FSIZE, at.frame_size);
	/* The gang's bytes per token are its members' together. */
	EXPECT_EQ(1024ull * self->n, at.bytes_per_token);
	ASSERT_EQ(0, gang_token(leader, 0, &token));
	EXPECT_NE(0, token);
	ASSERT_EQ(3, kva_alloc(leader, h, 3, 0));
	/* Charged once, whatever the members. */
	EXPECT_EQ(3, gang_held(self->fd));

	for (r = 0; r < self->n; r++) {
		char *p;

		ranks[r] = kva_open(O_RDWR);
		ASSERT_LE(0, ranks[r]);
		ASSERT_EQ(0, join(ranks[r], at.client_id, r, token, &j));
		EXPECT_EQ(KVARENA_MEM_HOST, j.mem_kind);
		EXPECT_EQ(FSIZE, j.frame_size);
		EXPECT_EQ(NR, j.nr_frames);
		do {
			char want[KVARENA_NAME_LEN];

			member_name(want, r);
			EXPECT_STREQ(want, j.member);
		} while (0);
		p = kva_map_frame(ranks[r], h[1], PROT_READ | PROT_WRITE);
		ASSERT_NE(MAP_FAILED, p);
		memset(p, 0x40 + r, FSIZE);
		munmap(p, FSIZE);
		EXPECT_TRUE(kva_fdinfo_has(ranks[r], "kvarena-rank:\t"));
	}
	/* Each rank's bytes are in its own member's memory, and only there. */
	for (r = 0; r < self->n; r++) {
		EXPECT_TRUE(member_frame_is(self, r, KVARENA_HANDLE_IDX(h[1]),
					    0x40 + r));
		EXPECT_TRUE(member_frame_is(self, r, KVARENA_HANDLE_IDX(h[0]),
					    0));
	}
	/* The members' own tables are idle: the gang holds. */
	do {
		struct kvarena_stat s;
		char name[KVARENA_NAME_LEN];

		member_name(name, 0);
		ASSERT_EQ(0, kva_stat(self->fd, name, &s));
		EXPECT_EQ(0, s.nr_clients);
	} while (0);
	EXPECT_EQ(0, kva_free(leader, h, 3));
	EXPECT_EQ(0, gang_held(self->fd));
	for (r = 0; r < self->n; r++)
		close(ranks[r]);
	close(leader);
}

TEST_F(gang, an_alloc_that_cannot_be_had_changes_nothing_in_any_member)
{
	struct kvarena_attach a1, a2;
	int l1 = kva_open(O_RDWR), l2 = kva_open(O_RDWR), rk, r;
	__u64 h[NR], more[4], token;
	struct kvarena_stat before, after;
	char *p;

	ASSERT_LE(0, l1);
	ASSERT_LE(0, l2);
	ASSERT_EQ(0, kva_attach(l1, GANG, "a", 0, 0, &a1));
	/* Four frames kept for the other client: its guarantee. */
	ASSERT_EQ(0, kva_attach(l2, GANG, "b", 4, 0, &a2));
	ASSERT_EQ(NR - 4, kva_alloc(l1, h, NR - 4, 0));
	ASSERT_EQ(0, gang_token(l1, 0, &token));
	rk = rank_open(a1.client_id, self->n - 1, token);
	ASSERT_LE(0, rk);
	p = kva_map_frame(rk, h[0], PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 0x5a, FSIZE);

	ASSERT_EQ(0, kva_stat(self->fd, GANG, &before));
	EXPECT_EQ(-ENOSPC, kva_alloc(l1, more, 1, 0));
	EXPECT_EQ(-ENOSPC, kva_alloc(l2, more, 5, 0));
	ASSERT_EQ(0, kva_stat(self->fd, GANG, &after));
	EXPECT_EQ(before.nr_free, after.nr_free);
	EXPECT_EQ(before.frames_allocated, after.frames_allocated);
	/* What the frames hold in every member is as it was. */
	EXPECT_TRUE(member_frame_is(self, self->n - 1,
				    KVARENA_HANDLE_IDX(h[0]), 0x5a));
	for (r = 0; r < self->n - 1; r++)
		EXPECT_TRUE(member_frame_is(self, r, KVARENA_HANDLE_IDX(h[0]),
					    0));
	/* The guarantee is had whole. */
	EXPECT_EQ(4, kva_alloc(l2, more, 4, 0));
	EXPECT_EQ(NR, gang_held(self->fd));
	munmap(p, FSIZE);
	close(rk);
	close(l1);
	close(l2);
	EXPECT_EQ(0, kva_wait_no_clients(self->fd, GANG));
	EXPECT_EQ(0, gang_held(self->fd));
}

TEST_F(gang, a_rank_loses_its_mapping_when_the_client_frees_publishes_or_goes)
{
	struct kvarena_attach at;
	int leader = kva_open(O_RDWR), rk;
	__u64 h[2], token;
	char *p, *q;

	ASSERT_LE(0, leader);
	ASSERT_EQ(0, kva_attach(leader, GANG, "engine", 0, 0, &at));
	ASSERT_EQ(0, gang_token(leader, 0, &token));
	ASSERT_EQ(2, kva_alloc(leader, h, 2, 0));
	rk = rank_open(at.client_id, 0, token);
	ASSERT_LE(0, rk);
	p = kva_map_frame(rk, h[0], PROT_READ | PROT_WRITE);
	q = kva_map_frame(rk, h[1], PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_NE(MAP_FAILED, q);
	p[0] = 1;
	q[0] = 1;

	/* FREE by the client: the rank's next touch is SIGBUS. */
	ASSERT_EQ(0, kva_free(leader, &h[0], 1));
	EXPECT_TRUE(touch_gets_sigbus(p, false));
	EXPECT_EQ(-ESTALE, kva_frame_fd(rk, h[0], NULL));
	/* PUBLISH: read-only for the rank too. */
	ASSERT_EQ(1, publish(leader, 7, &h[1], 1));
	EXPECT_TRUE(touch_gets_sigbus(q, true));
	EXPECT_FALSE(touch_gets_sigbus(q, false));
	EXPECT_EQ(MAP_FAILED, kva_map_frame(rk, h[1], PROT_READ | PROT_WRITE));
	do {
		struct kvarena_frame_fd ff;

		ASSERT_EQ(0, kva_frame_fd(rk, h[1], &ff));
		EXPECT_EQ(KVARENA_ACCESS_READ, ff.access);
		close(ff.fd);
	} while (0);
	/* The client goes: everything, and the rank is told. */
	close(leader);
	EXPECT_EQ(0, kva_wait_no_clients(self->fd, GANG));
	EXPECT_TRUE(touch_gets_sigbus(q, false));
	EXPECT_EQ(-ENOLINK, kva_frame_fd(rk, h[1], NULL));
	do {
		struct pollfd pfd = { .fd = rk, .events = POLLIN };

		EXPECT_EQ(1, poll(&pfd, 1, 0));
		EXPECT_TRUE(pfd.revents & POLLHUP);
	} while (0);
	EXPECT_EQ(0, gang_held(self->fd));
	munmap(p, FSIZE);
	munmap(q, FSIZE);
	close(rk);
}

/* A leader in a process of its own: allocates, then waits to be killed. */
static pid_t leader_process(__u32 *id, __u64 *token, __u64 *h, int n,
			    __u32 flags)
{
	int pipefd[2];
	pid_t pid;
	struct {
		__u32 id;
		__u64 token;
		__u64 h[NR];
	} msg;

	if (pipe(pipefd))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct kvarena_attach at;
		int fd = kva_open(O_RDWR);

		close(pipefd[0]);
		memset(&msg, 0, sizeof(msg));
		if (fd < 0 || kva_attach(fd, GANG, "leader", 0, 0, &at) ||
		    gang_token(fd, flags, &msg.token) ||
		    kva_alloc(fd, msg.h, n, 0) != n)
			_exit(1);
		msg.id = at.client_id;
		if (write(pipefd[1], &msg, sizeof(msg)) != sizeof(msg))
			_exit(2);
		for (;;)
			pause();
	}
	close(pipefd[1]);
	if (pid > 0 && read(pipefd[0], &msg, sizeof(msg)) != sizeof(msg)) {
		kill(pid, SIGKILL);
		reap(pid);
		pid = -1;
	}
	close(pipefd[0]);
	*id = msg.id;
	*token = msg.token;
	memcpy(h, msg.h, n * sizeof(*h));
	return pid;
}

TEST_F(gang, a_killed_leader_returns_every_members_frames)
{
	int rk[KVARENA_GANG_MAX], r;
	char *map[KVARENA_GANG_MAX];
	__u64 h[NR], token;
	__u32 id;
	pid_t pid;

	pid = leader_process(&id, &token, h, 6, 0);
	ASSERT_LT(0, pid);
	EXPECT_EQ(6, gang_held(self->fd));
	for (r = 0; r < self->n; r++) {
		rk[r] = rank_open(id, r, token);
		ASSERT_LE(0, rk[r]);
		map[r] = kva_map_frame(rk[r], h[5], PROT_READ | PROT_WRITE);
		ASSERT_NE(MAP_FAILED, map[r]);
		map[r][0] = 1;
	}
	kill(pid, SIGKILL);
	EXPECT_EQ(1000 + SIGKILL, reap(pid));
	EXPECT_EQ(0, kva_wait_no_clients(self->fd, GANG));
	EXPECT_EQ(0, gang_held(self->fd));
	for (r = 0; r < self->n; r++) {
		EXPECT_TRUE(touch_gets_sigbus(map[r], false));
		EXPECT_EQ(-ENOLINK, kva_frame_fd(rk[r], h[5], NULL));
		munmap(map[r], FSIZE);
		close(rk[r]);
	}
}

TEST_F(gang, a_killed_rank_evicts_the_client_only_when_asked)
{
	__u64 h[NR], token;
	__u32 id;
	pid_t leader, rank;
	int r, rk;

	for (r = 0; r < 2; r++) {
		__u32 flags = r ? KVARENA_GANG_RANKS_FATAL : 0;

		leader = leader_process(&id, &token, h, 4, flags);
		ASSERT_LT(0, leader);
		rk = rank_open(id, 0, token);	/* a rank that stays */
		ASSERT_LE(0, rk);
		rank = fork();
		if (rank == 0) {
			int fd = rank_open(id, self->n - 1, token);
			char *p;

			if (fd < 0)
				_exit(1);
			p = kva_map_frame(fd, h[0], PROT_READ | PROT_WRITE);
			if (p == MAP_FAILED)
				_exit(2);
			p[0] = 1;
			kill(getpid(), SIGKILL);
			_exit(3);
		}
		EXPECT_EQ(1000 + SIGKILL, reap(rank));
		if (flags) {
			/* The client is out of the gang, its frames back. */
			EXPECT_EQ(0, kva_wait_no_clients(self->fd, GANG) ?:
				  gang_held(self->fd));
			EXPECT_EQ(-ENOLINK, kva_frame_fd(rk, h[0], NULL));
		} else {
			EXPECT_EQ(4, gang_held(self->fd));
			do {
				struct kvarena_frame_fd ff;

				EXPECT_EQ(0, kva_frame_fd(rk, h[0], &ff));
				close(ff.fd);
			} while (0);
		}
		close(rk);
		kill(leader, SIGKILL);
		reap(leader);
		EXPECT_EQ(0, kva_wait_no_clients(self->fd, GANG));
		EXPECT_EQ(0, gang_held(self->fd));
	}
}

/* A tenant's file is opened by root and passed, as a launcher would. */
struct join_args {
	int fd;
	__u32 id;
	__u32 rank;
	__u64 token;
};

static int join_as(void *arg)
{
	struct join_args *ja = arg;

	return -join(ja->fd, ja->id, ja->rank, ja->token, NULL);
}

TEST_F(gang, ranks_do_only_what_a_rank_may)
{
	struct kvarena_attach at, solo;
	int leader = kva_open(O_RDWR), rk, other;
	struct join_args ja;
	__u64 h[2], token, x;

	ASSERT_LE(0, leader);
	ASSERT_EQ(0, kva_attach(leader, GANG, "engine", 0, 0, &at));
	ASSERT_EQ(0, gang_token(leader, 0, &token));
	ASSERT_EQ(1, kva_alloc(leader, h, 1, 0));

	/* Wrong id, token or rank: one answer. */
	EXPECT_EQ(-ENOENT, rank_open(at.client_id + 1, 0, token));
	EXPECT_EQ(-ENOENT, rank_open(at.client_id, 0, token + 1));
	EXPECT_EQ(-ENOENT, rank_open(at.client_id, self->n, token));
	EXPECT_EQ(-EINVAL, rank_open(at.client_id, KVARENA_GANG_MAX, token));
	/* Another uid with the right token is refused; the same uid is not. */
	ja = (struct join_args){ kva_open(O_RDWR), at.client_id, 0, token };
	ASSERT_LE(0, ja.fd);
	EXPECT_EQ(EPERM, as_uid(TENANT, join_as, &ja));
	close(ja.fd);

	rk = rank_open(at.client_id, 0, token);
	ASSERT_LE(0, rk);
	/* Joined already, or attached: -EBUSY. */
	EXPECT_EQ(-EBUSY, join(rk, at.client_id, 0, token, NULL));
	EXPECT_EQ(-EBUSY, kva_attach(rk, GANG, "x", 0, 0, NULL));
	EXPECT_EQ(-EBUSY, join(leader, at.client_id, 0, token, NULL));
	/* A rank takes, frees, publishes and finds nothing. */
	EXPECT_EQ(-EPERM, kva_alloc(rk, &x, 1, 0));
	EXPECT_EQ(-EPERM, kva_free(rk, h, 1));
	EXPECT_EQ(-EPERM, publish(rk, 1, h, 1));
	EXPECT_EQ(-EPERM, lookup(rk, 1, 0, 1, &x));
	EXPECT_EQ(-EPERM, kva_set_usage(rk, 1, 1));
	EXPECT_EQ(-EPERM, gang_token(rk, 0, NULL));
	/* A frame the client does not hold is not the rank's to map. */
	EXPECT_EQ(-ENOENT, kva_frame_fd(rk, h[0] + 1, NULL));
	do {
		struct kvarena_frame_fd ff;
		void *p;

		ASSERT_EQ(0, kva_frame_fd(rk, h[0], &ff));
		/* The neighbour frame of the same file: -EACCES. */
		p = mmap(NULL, FSIZE, PROT_READ, MAP_SHARED, ff.fd,
			 ff.offset ? 0 : FSIZE);
		EXPECT_EQ(MAP_FAILED, p);
		EXPECT_EQ(EACCES, errno);
		/* Past the gang: -EINVAL. */
		p = mmap(NULL, FSIZE, PROT_READ, MAP_SHARED, ff.fd,
			 (off_t)NR * FSIZE);
		EXPECT_EQ(MAP_FAILED, p);
		close(ff.fd);
	} while (0);
	/* The gang client maps through its ranks. */
	EXPECT_EQ(-EOPNOTSUPP, kva_frame_fd(leader, h[0], NULL));
	/* A client of an arena that is no gang has no token. */
	ASSERT_EQ(0, kva_create(self->fd, "solo", 4, FSIZE, 0));
	other = kva_open(O_RDWR);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, kva_attach(other, "solo", "solo", 0, 0, &solo));
	EXPECT_EQ(-EOPNOTSUPP, gang_token(other, 0, NULL));
	close(other);
	other = kva_open(O_RDWR);
	ASSERT_LE(0, other);
	do {
		struct kvarena_join j = { .client_id = solo.client_id };

		snprintf(j.name, sizeof(j.name), "solo");
		EXPECT_EQ(-EINVAL, kva_ioctl(other, KVARENA_IOC_JOIN, &j));
		j.flags = 1;
		snprintf(j.name, sizeof(j.name), GANG);
		EXPECT_EQ(-EINVAL, kva_ioctl(other, KVARENA_IOC_JOIN, &j));
	} while (0);
	close(other);
	EXPECT_EQ(0, kva_wait_no_clients(self->fd, "solo"));
	EXPECT_EQ(0, kva_destroy(self->fd, "solo"));
	close(rk);
	close(leader);
}

TEST_F(gang, members_serve_the_gang_alone_until_it_goes)
{
	char name[KVARENA_NAME_LEN], tname[128];
	struct kvarena_arena_resize rs = { .nr_frames = NR - 1 };
	struct kvarena_arena_tier t = { 0 };
	int c = kva_open(O_RDWR);

	ASSERT_LE(0, c);
	member_name(name, 1);
	EXPECT_EQ(-EBUSY, kva_attach(c, name, "x", 0, 0, NULL));
	EXPECT_EQ(-EBUSY, kva_destroy(self->fd, name));
	snprintf(rs.name, sizeof(rs.name), "%s", name);
	EXPECT_EQ(-EBUSY, kva_ioctl(self->fd, KVARENA_IOC_ARENA_RESIZE, &rs));
	snprintf(rs.name, sizeof(rs.name), GANG);
	EXPECT_EQ(-EOPNOTSUPP,
		  kva_ioctl(self->fd, KVARENA_IOC_ARENA_RESIZE, &rs));
	EXPECT_EQ(-EOPNOTSUPP, kva_set_backing(self->fd, GANG, 0, 1,
					       self->mfd[0], 0));
	EXPECT_EQ(-EBUSY, kva_set_backing(self->fd, name, 0, 1,
					  self->mfd[0], 0));
	/* No tier above or below a gang or a member. */
	ASSERT_EQ(0, kva_create_flags(self->fd, "below", NR, FSIZE, 0,
				      KVARENA_CREATE_NO_BACKING));
	snprintf(t.name, sizeof(t.name), GANG);
	snprintf(t.lower, sizeof(t.lower), "below");
	EXPECT_EQ(-EOPNOTSUPP,
		  kva_ioctl(self->fd, KVARENA_IOC_ARENA_SET_TIER, &t));
	snprintf(t.name, sizeof(t.name), "%s", name);
	EXPECT_EQ(-EBUSY, kva_ioctl(self->fd, KVARENA_IOC_ARENA_SET_TIER, &t));
	EXPECT_EQ(0, kva_destroy(self->fd, "below"));
	/* A member is in one gang; a gang is nobody's member. */
	EXPECT_EQ(-EBUSY, gang_create(self->fd, "gang2", self->n, NULL));
	EXPECT_EQ(-EBUSY, gang_create(self->fd, "gang2", 2, GANG));
	/* Destroyed with a client: -EBUSY; without: members free again. */
	ASSERT_EQ(0, kva_attach(c, GANG, "engine", 0, 0, NULL));
	EXPECT_EQ(-EBUSY, kva_destroy(self->fd, GANG));
	close(c);
	EXPECT_EQ(0, kva_wait_no_clients(self->fd, GANG));
	ASSERT_EQ(0, kva_destroy(self->fd, GANG));
	c = kva_open(O_RDWR);
	ASSERT_LE(0, c);
	EXPECT_EQ(0, kva_attach(c, name, "solo", 0, 0, NULL));
	/* A member with a client cannot be ganged; nothing changed. */
	EXPECT_EQ(-EBUSY, gang_create(self->fd, GANG, self->n, NULL));
	snprintf(tname, sizeof(tname), "/sys/class/misc/kvarena/arenas/%s",
		 GANG);
	EXPECT_NE(0, access(tname, F_OK));
	close(c);
	EXPECT_EQ(0, kva_wait_no_clients(self->fd, name));
	ASSERT_EQ(0, gang_create(self->fd, GANG, self->n, NULL));
}

TEST_F(gang, gang_create_refuses_what_does_not_fit)
{
	char names[2][KVARENA_NAME_LEN] = { "gm0", "gm0" };
	struct kvarena_gang_create g = {
		.members = (__u64)(unsigned long)names,
		.nr_members = 2,
	};
	struct kvarena_arena_create cu = {
		.frame_size = FSIZE, .nr_frames = NR,
		.mem_kind = KVARENA_MEM_CUDA,
	};

	ASSERT_EQ(0, kva_destroy(self->fd, GANG));
	snprintf(g.name, sizeof(g.name), "g2");
	/* The same arena twice, one member, too many, bad flags. */
	EXPECT_EQ(-EINVAL, kva_ioctl(self->fd, KVARENA_IOC_GANG_CREATE, &g));
	g.nr_members = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->fd, KVARENA_IOC_GANG_CREATE, &g));
	g.nr_members = KVARENA_GANG_MAX + 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->fd, KVARENA_IOC_GANG_CREATE, &g));
	g.nr_members = 2;
	g.flags = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->fd, KVARENA_IOC_GANG_CREATE, &g));
	g.flags = 0;
	g.members = 8;		/* a bad pointer */
	EXPECT_EQ(-EFAULT, kva_ioctl(self->fd, KVARENA_IOC_GANG_CREATE, &g));
	g.members = (__u64)(unsigned long)names;
	/* A member that does not exist. */
	snprintf(names[1], sizeof(names[1]), "nosuch");
	EXPECT_EQ(-ENOENT, kva_ioctl(self->fd, KVARENA_IOC_GANG_CREATE, &g));
	/* A member of another size, another kind, another flag. */
	ASSERT_EQ(0, kva_create_flags(self->fd, "odd", NR / 2, FSIZE, 0,
				      KVARENA_CREATE_NO_BACKING));
	snprintf(names[1], sizeof(names[1]), "odd");
	EXPECT_EQ(-EINVAL, kva_ioctl(self->fd, KVARENA_IOC_GANG_CREATE, &g));
	EXPECT_EQ(0, kva_destroy(self->fd, "odd"));
	ASSERT_EQ(0, kva_create_flags(self->fd, "odd", NR, FSIZE, 0,
				      KVARENA_CREATE_NO_BACKING));
	EXPECT_EQ(-EINVAL, kva_ioctl(self->fd, KVARENA_IOC_GANG_CREATE, &g));
	EXPECT_EQ(0, kva_destroy(self->fd, "odd"));
	snprintf(cu.name, sizeof(cu.name), "odd");
	ASSERT_EQ(0, kva_ioctl(self->fd, KVARENA_IOC_ARENA_CREATE, &cu));
	/* A CUDA arena beside host ones. */
	EXPECT_EQ(-EINVAL, kva_ioctl(self->fd, KVARENA_IOC_GANG_CREATE, &g));
	EXPECT_EQ(0, kva_destroy(self->fd, "odd"));
	/* A name that is taken. */
	snprintf(names[1], sizeof(names[1]), "gm1");
	snprintf(g.name, sizeof(g.name), "gm1");
	EXPECT_EQ(-EINVAL, kva_ioctl(self->fd, KVARENA_IOC_GANG_CREATE, &g));
	ASSERT_EQ(0, kva_create(self->fd, "taken", 1, FSIZE, 0));
	snprintf(g.name, sizeof(g.name), "taken");
	EXPECT_EQ(-EEXIST, kva_ioctl(self->fd, KVARENA_IOC_GANG_CREATE, &g));
	EXPECT_EQ(0, kva_destroy(self->fd, "taken"));
	/* Nothing was left half-made: the members gang up as before. */
	ASSERT_EQ(0, gang_create(self->fd, GANG, self->n, NULL));
}

static int gang_create_as_tenant(void *arg)
{
	return -gang_create(*(int *)arg, "g3", 2, NULL);
}

TEST_F(gang, only_an_administrator_makes_a_gang)
{
	int fd = kva_open(O_RDWR);

	ASSERT_LE(0, fd);
	EXPECT_EQ(EPERM, as_uid(TENANT, gang_create_as_tenant, &fd));
	close(fd);
}

TEST_F(gang, frames_are_cleared_in_every_member_before_another_domain)
{
	struct kvarena_attach a1 = { .flags = KVARENA_ATTACH_PRIVATE }, a2;
	int l1 = kva_open(O_RDWR), l2 = kva_open(O_RDWR), r;
	__u64 h[NR], t1, t2;
	int rk;

	ASSERT_LE(0, l1);
	ASSERT_LE(0, l2);
	snprintf(a1.name, sizeof(a1.name), GANG);
	a2 = a1;
	/* Each in a domain of its own. */
	ASSERT_EQ(0, kva_ioctl(l1, KVARENA_IOC_ATTACH, &a1));
	ASSERT_EQ(0, kva_ioctl(l2, KVARENA_IOC_ATTACH, &a2));
	ASSERT_EQ(0, gang_token(l1, 0, &t1));
	ASSERT_EQ(0, gang_token(l2, 0, &t2));
	ASSERT_EQ(NR, kva_alloc(l1, h, NR, 0));
	for (r = 0; r < self->n; r++) {
		char *p;
		int i;

		rk = rank_open(a1.client_id, r, t1);
		ASSERT_LE(0, rk);
		for (i = 0; i < NR; i++) {
			p = kva_map_frame(rk, h[i], PROT_READ | PROT_WRITE);
			ASSERT_NE(MAP_FAILED, p);
			memset(p, 0x77, FSIZE);
			munmap(p, FSIZE);
		}
		close(rk);
	}
	ASSERT_EQ(0, kva_free(l1, h, NR));
	/* Another domain gets all of them: clean in every member. */
	ASSERT_EQ(NR, kva_alloc(l2, h, NR, 0));
	for (r = 0; r < self->n; r++) {
		int i;

		rk = rank_open(a2.client_id, r, t2);
		ASSERT_LE(0, rk);
		for (i = 0; i < NR; i++) {
			unsigned char *p = kva_map_frame(rk, h[i], PROT_READ);

			ASSERT_NE(MAP_FAILED, p);
			EXPECT_TRUE(all_zero(p, FSIZE));
			munmap(p, FSIZE);
		}
		close(rk);
	}
	close(l1);
	close(l2);
}

/* A client of @name in a domain of its own; -errno. */
static int private_client(const char *name, struct kvarena_attach *at)
{
	int fd = kva_open(O_RDWR);

	memset(at, 0, sizeof(*at));
	at->flags = KVARENA_ATTACH_PRIVATE;
	snprintf(at->name, sizeof(at->name), "%s", name);
	if (fd < 0 || kva_ioctl(fd, KVARENA_IOC_ATTACH, at)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Every frame of member @r's memory zero? */
static bool member_clean(FIXTURE_DATA(gang) *self, int r)
{
	return all_zero(self->mem[r], (size_t)NR * FSIZE);
}

TEST_F(gang, memory_changes_hands_holding_nothing_of_anyone)
{
	struct kvarena_attach at;
	__u64 h[NR], token, x;
	int c, rk, i;
	char *p;

	/* A tenant of member 0 alone leaves its data and a prefix there. */
	ASSERT_EQ(0, kva_destroy(self->fd, GANG));
	c = private_client("gm0", &at);
	ASSERT_LE(0, c);
	ASSERT_EQ(NR, kva_alloc(c, h, NR, 0));
	for (i = 0; i < NR; i++) {
		p = kva_map_frame(c, h[i], PROT_READ | PROT_WRITE);
		ASSERT_NE(MAP_FAILED, p);
		memset(p, 0x11, FSIZE);
		munmap(p, FSIZE);
	}
	ASSERT_EQ(1, publish(c, 5, h, 1));
	ASSERT_EQ(0, kva_free(c, h, NR));
	close(c);
	ASSERT_EQ(0, kva_wait_no_clients(self->fd, "gm0"));
	EXPECT_FALSE(member_clean(self, 0));
	/* The gang takes the memory clean. */
	ASSERT_EQ(0, gang_create(self->fd, GANG, self->n, NULL));
	EXPECT_TRUE(member_clean(self, 0));
	c = private_client(GANG, &at);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, gang_token(c, 0, &token));
	ASSERT_EQ(NR, kva_alloc(c, h, NR, 0));
	rk = rank_open(at.client_id, 0, token);
	ASSERT_LE(0, rk);
	for (i = 0; i < NR; i++) {
		p = kva_map_frame(rk, h[i], PROT_READ | PROT_WRITE);
		ASSERT_NE(MAP_FAILED, p);
		EXPECT_TRUE(all_zero((unsigned char *)p, FSIZE));
		memset(p, 0x22, FSIZE);
		munmap(p, FSIZE);
	}
	ASSERT_EQ(1, publish(c, 6, h, 1));
	close(rk);
	close(c);
	ASSERT_EQ(0, kva_wait_no_clients(self->fd, GANG));
	/* The members get it back clean, and the old prefix is gone. */
	ASSERT_EQ(0, kva_destroy(self->fd, GANG));
	for (i = 0; i < self->n; i++)
		EXPECT_TRUE(member_clean(self, i));
	c = private_client("gm0", &at);
	ASSERT_LE(0, c);
	EXPECT_EQ(0, lookup(c, 5, 0, 1, &x));
	close(c);
	EXPECT_EQ(0, kva_wait_no_clients(self->fd, "gm0"));
	ASSERT_EQ(0, gang_create(self->fd, GANG, self->n, NULL));
}

TEST_F(gang, alloc_and_free_over_io_uring)
{
	struct kvarena_frames f;
	struct io_uring ring;
	int leader = kva_open(O_RDWR);
	__u64 h[8];

	KVA_NEED_URING();
	ASSERT_LE(0, leader);
	ASSERT_EQ(0, kva_attach(leader, GANG, "engine", 0, 0, NULL));
	ASSERT_EQ(0, io_uring_queue_init(8, &ring, 0));
	f = (struct kvarena_frames){ .handles = (__u64)(unsigned long)h,
				     .count = 8 };
	EXPECT_EQ(0, kva_uring_one(&ring, leader, KVARENA_IOC_ALLOC, &f, 0));
	EXPECT_EQ(8, f.nr_done);
	EXPECT_EQ(8, gang_held(self->fd));
	f.count = NR;
	EXPECT_EQ(-ENOSPC, kva_uring_one(&ring, leader, KVARENA_IOC_ALLOC,
					 &f, 0));
	f = (struct kvarena_frames){ .handles = (__u64)(unsigned long)h,
				     .count = 8 };
	EXPECT_EQ(0, kva_uring_one(&ring, leader, KVARENA_IOC_FREE, &f, 0));
	EXPECT_EQ(0, gang_held(self->fd));
	io_uring_queue_exit(&ring);
	close(leader);
}

TEST_F(gang, sysfs_names_the_members_and_the_gang)
{
	char path[128], buf[256], want[256] = "";
	int f, r;
	ssize_t n;

	snprintf(path, sizeof(path),
		 "/sys/class/misc/kvarena/arenas/%s/members", GANG);
	f = open(path, O_RDONLY);
	ASSERT_LE(0, f);
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	ASSERT_LT(0, n);
	buf[n] = 0;
	for (r = 0; r < self->n; r++) {
		char name[KVARENA_NAME_LEN];

		member_name(name, r);
		strcat(want, r ? " " : "");
		strcat(want, name);
	}
	strcat(want, "\n");
	EXPECT_STREQ(want, buf);
	snprintf(path, sizeof(path),
		 "/sys/class/misc/kvarena/arenas/gm%d/gang", self->n - 1);
	f = open(path, O_RDONLY);
	ASSERT_LE(0, f);
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	ASSERT_LT(0, n);
	buf[n] = 0;
	EXPECT_STREQ(GANG "\n", buf);
}

/*
 * CUDA members.  The VM has no GPU: as in scrub_test, a CUDA arena's
 * frames are memfds, one a frame as CUDA exports one allocation a frame,
 * and importing one is mapping its fd - which the module cannot revoke.
 */
#define CNR	4
#define CGANG	"cgang"

static void cmember_name(char *buf, int r)
{
	snprintf(buf, KVARENA_NAME_LEN, "cm%d", r);
}

/*
 * The test keeps no fd of the members' memory: a frame whose file anything
 * but the arena holds is never scrubbed.  What a member's memory holds is
 * read through the scrubbers that clear it.
 */
FIXTURE(cuda_gang) {
	int fd;
};

static int cgang_create(int fd)
{
	char names[2][KVARENA_NAME_LEN];
	struct kvarena_gang_create g = {
		.members = (__u64)(unsigned long)names,
		.nr_members = 2,
	};

	memset(names, 0, sizeof(names));
	cmember_name(names[0], 0);
	cmember_name(names[1], 1);
	snprintf(g.name, sizeof(g.name), CGANG);
	return kva_ioctl(fd, KVARENA_IOC_GANG_CREATE, &g);
}

FIXTURE_SETUP(cuda_gang)
{
	struct kvarena_arena_create c = { .frame_size = FSIZE,
					  .nr_frames = CNR,
					  .mem_kind = KVARENA_MEM_CUDA,
					  .bytes_per_token = 1024 };
	int r, i, mfd;

	self->fd = kva_open(O_RDWR);
	ASSERT_LE(0, self->fd);
	kva_wait_no_clients(self->fd, CGANG);
	kva_destroy(self->fd, CGANG);
	for (r = 0; r < 2; r++) {
		cmember_name(c.name, r);
		kva_destroy(self->fd, c.name);
		ASSERT_EQ(0, kva_ioctl(self->fd, KVARENA_IOC_ARENA_CREATE, &c));
		for (i = 0; i < CNR; i++) {
			mfd = memfd_create("frame", MFD_CLOEXEC);
			ASSERT_LE(0, mfd);
			ASSERT_EQ(0, ftruncate(mfd, FSIZE));
			ASSERT_EQ(0, kva_set_backing(self->fd, c.name, i, 1,
						     mfd, 0));
			close(mfd);
		}
	}
	ASSERT_EQ(0, cgang_create(self->fd));
}

FIXTURE_TEARDOWN(cuda_gang)
{
	char name[KVARENA_NAME_LEN];
	int r;

	kva_wait_no_clients(self->fd, CGANG);
	EXPECT_EQ(0, kva_destroy(self->fd, CGANG));
	for (r = 0; r < 2; r++) {
		cmember_name(name, r);
		EXPECT_EQ(0, kva_wait_no_clients(self->fd, name));
		EXPECT_EQ(0, kva_destroy(self->fd, name));
	}
	close(self->fd);
}

/* Is every byte of @p[0..n) @tag? */
static bool all_are(const unsigned char *p, size_t n, unsigned char tag)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != tag)
			return false;
	return true;
}

static int join_cgang(int fd, __u32 client_id, __u32 rank, __u64 token)
{
	struct kvarena_join j = { .client_id = client_id, .rank = rank,
				  .token = token };

	snprintf(j.name, sizeof(j.name), CGANG);
	return kva_ioctl(fd, KVARENA_IOC_JOIN, &j);
}

/* Map what FRAME_FD of @h on @fd gives (an import), or exit. */
static unsigned char *import(int fd, __u64 h)
{
	struct kvarena_frame_fd ff;
	void *p;

	CHECK_EQ(0, kva_frame_fd(fd, h, &ff));
	CHECK_EQ(FSIZE, ff.size);
	p = mmap(NULL, FSIZE, PROT_READ | PROT_WRITE, MAP_SHARED, ff.fd,
		 ff.offset);
	close(ff.fd);
	CHECK(p != MAP_FAILED);
	return p;
}

/*
 * An engine of uid TENANT: a leader that takes every frame, two ranks that
 * import each frame in their member and fill it with 0xa0 + rank, then the
 * leader frees them all.  It writes the handles to @wr and, unless
 * @stay is false, waits to be killed with its ranks (the imports live).
 */
static pid_t engine(int wr, bool stay)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	setpgid(0, 0);
	do {
		struct kvarena_attach at;
		int fd = kva_open(O_RDWR), go[2], r, i;
		int rfd[2] = { kva_open(O_RDWR), kva_open(O_RDWR) };
		__u64 h[CNR], token;
		char c;

		/* The device's files are root's to open: a launcher's. */
		drop_to(TENANT);
		CHECK_EQ(0, kva_attach(fd, CGANG, "leader", 0, 0, &at));
		CHECK_EQ(0, gang_token(fd, 0, &token));
		CHECK_EQ(CNR, kva_alloc(fd, h, CNR, 0));
		CHECK_EQ(0, pipe(go));
		for (r = 0; r < 2; r++) {
			if (fork())
				continue;
			fd = rfd[r];
			CHECK_EQ(0, join_cgang(fd, at.client_id, r, token));
			for (i = 0; i < CNR; i++)
				memset(import(fd, h[i]), 0xa0 + r, FSIZE);
			CHECK_EQ(1, write(go[1], "x", 1));
			for (;;)
				pause();
		}
		for (r = 0; r < 2; r++)
			CHECK_EQ(1, read(go[0], &c, 1));
		CHECK_EQ(0, kva_free(fd, h, CNR));
		CHECK_EQ(sizeof(h), write(wr, h, sizeof(h)));
		if (!stay) {
			kill(0, SIGKILL);
			_exit(0);
		}
		for (;;)
			pause();
	} while (0);
	_exit(0);
}

/* Kill engine @pid's process group and wait until its leader is gone. */
static void engine_kill(int fd, pid_t pid)
{
	kill(-pid, SIGKILL);
	reap(pid);
	kva_wait_no_clients(fd, CGANG);
}

static int scrub_cmd(int fd, __u64 *h, __u32 count, __u32 flags)
{
	struct kvarena_scrub s = { .handles = (uintptr_t)h, .count = count,
				   .flags = flags };
	int ret = kva_ioctl(fd, KVARENA_IOC_SCRUB, &s);

	return ret ? ret : (int)s.nr_done;
}

/* Take up to @count frames to clear, waiting up to @ms for them. */
static int scrub_take(int fd, __u64 *h, __u32 count, __u32 ms)
{
	struct kvarena_scrub s = { .handles = (uintptr_t)h, .count = count,
				   .timeout_ms = ms };
	int ret = kva_ioctl(fd, KVARENA_IOC_SCRUB, &s);

	return ret ? ret : (int)s.nr_done;
}

/*
 * Rank @r of client @id: each frame @h[0..n) it maps is all @was (a
 * frame's memory in its member), then it writes @now there.  The first
 * mapping is left in *@keep if asked; -line on failure.
 */
static int rank_rewrite(__u32 id, __u64 token, int r, const __u64 *h, int n,
			unsigned char was, unsigned char now,
			unsigned char **keep)
{
	int fd = kva_open(O_RDWR), i;

	if (fd < 0 || join_cgang(fd, id, r, token))
		return -__LINE__;
	for (i = 0; i < n; i++) {
		struct kvarena_frame_fd ff;
		unsigned char *p;

		if (kva_frame_fd(fd, h[i], &ff) || ff.size != FSIZE ||
		    !(ff.access & KVARENA_ACCESS_WRITE))
			return -__LINE__;
		p = mmap(NULL, FSIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
			 ff.fd, ff.offset);
		close(ff.fd);
		if (p == MAP_FAILED)
			return -__LINE__;
		if (!all_are(p, FSIZE, was))
			return -__LINE__;
		memset(p, now, FSIZE);
		if (keep && !i)
			*keep = p;
		else
			munmap(p, FSIZE);
	}
	close(fd);
	return 0;
}

TEST_F(cuda_gang, a_ranks_import_keeps_its_frames_in_its_domain_until_it_exits)
{
	int wr[2], other, sc, r, n, i;
	struct kvarena_attach at, ot;
	__u64 h[CNR], th[CNR], token, otoken;
	unsigned char *kept = NULL;
	pid_t pid;

	ASSERT_EQ(0, pipe(wr));
	pid = engine(wr[1], true);
	ASSERT_LT(0, pid);
	ASSERT_EQ(sizeof(h), read(wr[0], h, sizeof(h)));
	/* Another domain (root's) gets none: dirty, and still imported. */
	other = kva_open(O_RDWR);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, kva_attach(other, CGANG, "other", 0, 0, &ot));
	ASSERT_EQ(0, gang_token(other, 0, &otoken));
	EXPECT_EQ(-ENOSPC, kva_alloc(other, th, CNR, 0));
	/* The scrubber (the owner's) may not take them while they live... */
	sc = kva_open(O_RDWR);
	ASSERT_LE(0, sc);
	ASSERT_EQ(0, kva_attach(sc, CGANG, "scrubber", 0, 0, &at));
	ASSERT_EQ(0, gang_token(sc, 0, &token));
	EXPECT_EQ(0, scrub_take(sc, th, CNR, 0));
	/* ...and takes every one once the engine's processes are gone. */
	engine_kill(self->fd, pid);
	/* An importer's exit is seen within 100 ms of it: 30 s at most. */
	for (n = 0, i = 0; n < CNR && i < 6; i++) {
		r = scrub_take(sc, th + n, CNR - n, 5000);
		ASSERT_LE(0, r);
		n += r;
	}
	ASSERT_EQ(CNR, n);
	/*
	 * Its ranks find each rank's bytes in their own member's memory,
	 * and clear them.
	 */
	for (r = 0; r < 2; r++)
		ASSERT_EQ(0, rank_rewrite(at.client_id, token, r, th, CNR,
					  0xa0 + r, 0, r ? NULL : &kept));
	/* A DONE waits for the scrubber's own ranks to let go. */
	EXPECT_EQ(-EBUSY, scrub_cmd(sc, th, CNR, KVARENA_SCRUB_DONE));
	munmap(kept, FSIZE);
	EXPECT_EQ(CNR, scrub_cmd(sc, th, CNR, KVARENA_SCRUB_DONE));
	/* The other domain now gets them, cleared in both members. */
	ASSERT_EQ(CNR, kva_alloc(other, th, CNR, 0));
	for (r = 0; r < 2; r++)
		EXPECT_EQ(0, rank_rewrite(ot.client_id, otoken, r, th, CNR,
					  0, 1, NULL));
	close(sc);
	close(other);
	close(wr[0]);
	close(wr[1]);
}

/*
 * Scrub member @r with a client of root's, as `kvarenactl scrub` would:
 * each frame it takes must hold @was.  The frames cleared, or -line.
 */
static int cmember_scrub(int r, unsigned char was)
{
	char name[KVARENA_NAME_LEN];
	__u64 h[CNR];
	int fd = kva_open(O_RDWR), n, i, total = 0;

	cmember_name(name, r);
	if (fd < 0 || kva_attach(fd, name, "scrubber", 0, 0, NULL))
		return -__LINE__;
	while ((n = scrub_take(fd, h, CNR, 0)) > 0) {
		for (i = 0; i < n; i++) {
			unsigned char *p = import(fd, h[i]);

			if (!all_are(p, FSIZE, was))
				return -__LINE__;
			memset(p, 0, FSIZE);
			munmap(p, FSIZE);
		}
		/*
		 * Until the engine's killed ranks have exited, their
		 * imports hold the frames: 30 s at most.
		 */
		for (i = 0; scrub_cmd(fd, h, n, KVARENA_SCRUB_DONE) != n; i++) {
			if (i == 300)
				return -__LINE__;
			usleep(100 * 1000);
		}
		total += n;
	}
	close(fd);
	return n < 0 ? n : total;
}

TEST_F(cuda_gang, members_get_the_gangs_data_back_for_their_own_scrubbers)
{
	char name[KVARENA_NAME_LEN];
	__u64 h[CNR];
	int wr[2], other, r, i;

	ASSERT_EQ(0, pipe(wr));
	ASSERT_EQ(1000 + SIGKILL, reap(engine(wr[1], false)));
	ASSERT_EQ(sizeof(h), read(wr[0], h, sizeof(h)));
	ASSERT_EQ(0, kva_wait_no_clients(self->fd, CGANG));
	ASSERT_EQ(0, kva_destroy(self->fd, CGANG));
	/* Not clean: no other domain gets them. */
	for (r = 0; r < 2; r++) {
		cmember_name(name, r);
		other = kva_open(O_RDWR);
		ASSERT_LE(0, other);
		ASSERT_EQ(0, kva_attach(other, name, "other", 0, 0, NULL));
		EXPECT_EQ(-ENOSPC, kva_alloc(other, h, 1, 0));
		/* Each member's own scrubber clears them... */
		EXPECT_EQ(CNR, cmember_scrub(r, 0xa0 + r));
		/* ...and they reach the other domain clean. */
		ASSERT_EQ(CNR, kva_alloc(other, h, CNR, 0));
		for (i = 0; i < CNR; i++) {
			unsigned char *p = import(other, h[i]);

			EXPECT_TRUE(all_are(p, FSIZE, 0));
			/* Its own data, which a gang must not hand on. */
			memset(p, 0x50 + r, FSIZE);
			munmap(p, FSIZE);
		}
		close(other);
		ASSERT_EQ(0, kva_wait_no_clients(self->fd, name));
	}
	/* A gang takes them again, to be scrubbed first (the test below). */
	EXPECT_EQ(0, cgang_create(self->fd));
	close(wr[0]);
	close(wr[1]);
}

TEST_F(cuda_gang, a_gang_takes_what_its_members_tenants_left_to_its_scrubbers)
{
	struct kvarena_attach at;
	char name[KVARENA_NAME_LEN];
	__u64 h[CNR], token;
	int c, r, i, n;

	/* Tenants of the members leave their data there. */
	ASSERT_EQ(0, kva_destroy(self->fd, CGANG));
	for (r = 0; r < 2; r++) {
		cmember_name(name, r);
		c = kva_open(O_RDWR);
		ASSERT_LE(0, c);
		ASSERT_EQ(0, kva_attach(c, name, "tenant", 0, 0, NULL));
		ASSERT_EQ(CNR, kva_alloc(c, h, CNR, 0));
		for (i = 0; i < CNR; i++) {
			unsigned char *p = import(c, h[i]);

			memset(p, 0x50 + r, FSIZE);
			munmap(p, FSIZE);
		}
		close(c);
		ASSERT_EQ(0, kva_wait_no_clients(self->fd, name));
	}
	/* The gang takes it, but its clients get none until scrubbed... */
	ASSERT_EQ(0, cgang_create(self->fd));
	c = kva_open(O_RDWR);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, kva_attach(c, CGANG, "engine", 0, 0, &at));
	ASSERT_EQ(0, gang_token(c, 0, &token));
	EXPECT_EQ(-ENOSPC, kva_alloc(c, h, 1, 0));
	/* ...by its own scrubber, with ranks finding each member's data. */
	for (n = 0; n < CNR; n += r) {
		r = scrub_take(c, h + n, CNR - n, 0);
		ASSERT_LT(0, r);
	}
	for (r = 0; r < 2; r++)
		ASSERT_EQ(0, rank_rewrite(at.client_id, token, r, h, CNR,
					  0x50 + r, 0, NULL));
	EXPECT_EQ(CNR, scrub_cmd(c, h, CNR, KVARENA_SCRUB_DONE));
	ASSERT_EQ(CNR, kva_alloc(c, h, CNR, 0));
	for (r = 0; r < 2; r++)
		EXPECT_EQ(0, rank_rewrite(at.client_id, token, r, h, CNR,
					  0, 1, NULL));
	close(c);
}

TEST_HARNESS_MAIN
