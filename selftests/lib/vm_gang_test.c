// SPDX-License-Identifier: GPL-2.0
/*
 * libkvarena on a gang, against the real kvarena.ko in the VM (static,
 * KTAP): the scheduler of a tensor-parallel engine takes frames with
 * kva_alloc() and ranks mirror its block tables with kva_seq_mirror(),
 * each writing its slice of the KV through one contiguous range in its
 * own member arena; what each rank wrote is read back through another
 * handle of the same rank and never seen by another rank; the
 * scheduler's frees and death reach every rank.  Host member arenas stand
 * in for the GPUs.
 *
 * Needs: root, kvarena.ko loaded, /dev/kvarena.  Each test makes its own
 * arenas, named after its pid, and destroys them.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/kvarena.h>

#include "kselftest_harness.h"

#include "common.h"
#include "module.h"

#define FS	(64u << 10)
#define NR	16u
#define RANKS	2

FIXTURE(gang) {
	char gang[KVARENA_NAME_LEN];
	char member[RANKS][KVARENA_NAME_LEN];
	struct kva_geometry geo;	/* one rank's slice of the heads */
};

FIXTURE_SETUP(gang)
{
	char names[RANKS][KVARENA_NAME_LEN];
	struct kvarena_gang_create g = {
		.members = (__u64)(uintptr_t)names, .nr_members = RANKS,
	};
	int r;

	pid_name(self->gang, "gang");
	for (r = 0; r < RANKS; r++) {
		struct kva_arena_params p = {
			.nr_frames = NR, .frame_size = FS,
			.mem_kind = KVA_BACKEND_HOST,
			.bytes_per_token = 1024,
		};
		char prefix[16];

		snprintf(prefix, sizeof(prefix), "gm%d", r);
		pid_name(self->member[r], prefix);
		p.name = self->member[r];
		ASSERT_EQ(0, kva_arena_create(&p));
		memcpy(names[r], self->member[r], KVARENA_NAME_LEN);
	}
	memcpy(g.name, self->gang, sizeof(g.name));
	ASSERT_EQ(0, module_ioctl(O_RDWR, KVARENA_IOC_GANG_CREATE, &g));
	self->geo = small_geometry(FS);
}

FIXTURE_TEARDOWN(gang)
{
	struct kva_arena_params p = { .name = self->gang };
	int r;

	EXPECT_EQ(0, kva_arena_destroy(&p));
	for (r = 0; r < RANKS; r++) {
		p.name = self->member[r];
		EXPECT_EQ(0, kva_arena_destroy(&p));
	}
}

static int open_scheduler(const char *gang, struct kva_arena **a,
			  uint32_t *id, uint64_t *token, uint32_t flags)
{
	struct kva_open_opts o = { .mode = KVA_MODE_DEVICE, .name = gang,
				   .label = "scheduler" };
	struct kva_arena_info info;
	uint32_t members = 0;
	int ret = kva_open(&o, a);

	if (ret)
		return ret;
	kva_arena_info(*a, &info);
	*id = info.client_id;
	ret = kva_gang_token(*a, flags, token, &members);
	if (!ret && members != RANKS)
		ret = -EPROTO;
	return ret;
}

static int open_rank(const char *gang, uint32_t id, uint64_t token,
		     uint32_t rank, struct kva_arena **a)
{
	struct kva_rank_opts r = { .name = gang, .label = "rank",
				   .client_id = id, .rank = rank,
				   .token = token };

	return kva_rank_open(&r, a);
}

TEST_F(gang, ranks_mirror_the_scheduler_and_each_writes_its_own_slice)
{
	struct kva_arena *sched, *rank[RANKS], *again;
	struct kva_seq *s[RANKS], *check, *tmp;
	uint64_t token, h[4], saved;
	void *buf;
	uint32_t id, tpf = self->geo.tokens_per_frame;
	int r;

	ASSERT_EQ(0, open_scheduler(self->gang, &sched, &id, &token, 0));
	/*
	 * The scheduler's sequences track frames and map nothing: its
	 * ranks do.  What needs the bytes is the ranks' to do.
	 */
	ASSERT_EQ(0, kva_seq_create(sched, &self->geo, 4 * tpf, &tmp));
	ASSERT_EQ(0, kva_seq_grow(tmp, tpf + 1));
	EXPECT_EQ(2, kva_seq_handles(tmp, NULL, 0));
	EXPECT_EQ(2, module_stat(self->gang).nr_held);
	buf = malloc(2 * FS);
	ASSERT_NE(NULL, buf);
	EXPECT_EQ(-EOPNOTSUPP, kva_seq_swap_out(tmp, buf, 2 * FS, &saved));
	free(buf);
	kva_seq_free(tmp);
	EXPECT_EQ(0, module_stat(self->gang).nr_held);
	ASSERT_EQ(3, kva_alloc(sched, h, 3, 0));
	for (r = 0; r < RANKS; r++) {
		ASSERT_EQ(0, open_rank(self->gang, id, token, r, &rank[r]));
		ASSERT_EQ(0, kva_seq_create(rank[r], &self->geo, 4 * tpf,
					    &s[r]));
		ASSERT_EQ(0, kva_seq_mirror(s[r], h, 3, 2 * tpf + 5));
		EXPECT_EQ(2 * tpf + 5, s[r]->tokens);
		fill_tokens(s[r], 100 + r, 0, s[r]->tokens);
	}
	/* Read back through another handle of each rank. */
	for (r = 0; r < RANKS; r++) {
		ASSERT_EQ(0, open_rank(self->gang, id, token, r, &again));
		ASSERT_EQ(0, kva_seq_create(again, &self->geo, 4 * tpf,
					    &check));
		ASSERT_EQ(0, kva_seq_mirror(check, h, 3, 2 * tpf + 5));
		EXPECT_EQ(0, check_tokens(check, 100 + r, 0, 2 * tpf + 5));
		/* Not the other rank's: each member has its own memory. */
		EXPECT_NE(0, check_tokens(check, 100 + (r ^ 1), 0, tpf));
		kva_close(again);
	}
	/* The table grows: the frames mapped stay, one more comes. */
	ASSERT_EQ(1, kva_alloc(sched, &h[3], 1, 0));
	for (r = 0; r < RANKS; r++) {
		uint64_t base = s[r]->base;

		ASSERT_EQ(0, kva_seq_mirror(s[r], h, 4, 3 * tpf + 1));
		EXPECT_EQ(base, s[r]->base);
		EXPECT_EQ(0, check_tokens(s[r], 100 + r, 0, 2 * tpf + 5));
		fill_tokens(s[r], 100 + r, 2 * tpf + 5, 3 * tpf + 1);
		EXPECT_EQ(0, check_tokens(s[r], 100 + r, 0, 3 * tpf + 1));
		/* And shrinks. */
		ASSERT_EQ(0, kva_seq_mirror(s[r], h, 1, tpf));
		EXPECT_EQ(0, check_tokens(s[r], 100 + r, 0, tpf));
	}
	/* A rank takes, gives and tells nothing. */
	EXPECT_EQ(-EPERM, kva_alloc(rank[0], h, 1, 0));
	EXPECT_EQ(-EPERM, kva_gang_token(rank[0], 0, &token, NULL));
	for (r = 0; r < RANKS; r++) {
		kva_seq_free(s[r]);
		kva_close(rank[r]);
	}
	/* The frames are the scheduler's, all four. */
	EXPECT_EQ(4, module_stat(self->gang).nr_held);
	kva_close(sched);
	EXPECT_EQ(0, module_stat(self->gang).nr_held);
}

TEST_F(gang, a_mirror_is_checked_by_the_module)
{
	struct kva_arena *sched, *rk, *solo;
	struct kva_seq *s, *t;
	uint64_t token, h[2], bad;
	uint32_t id, tpf = self->geo.tokens_per_frame;
	struct kva_open_opts o = { .mode = KVA_MODE_DEVICE,
				   .name = self->member[0] };
	struct kva_open_opts e = { .mode = KVA_MODE_EMBEDDED,
				   .nr_frames = 2, .frame_size = FS };

	ASSERT_EQ(0, open_scheduler(self->gang, &sched, &id, &token, 0));
	ASSERT_EQ(2, kva_alloc(sched, h, 2, 0));
	ASSERT_EQ(0, open_rank(self->gang, id, token, 1, &rk));
	ASSERT_EQ(0, kva_seq_create(rk, &self->geo, 2 * tpf, &s));
	/* Bad arguments. */
	EXPECT_EQ(-EINVAL, kva_seq_mirror(s, h, 3, tpf));
	EXPECT_EQ(-EINVAL, kva_seq_mirror(s, h, 1, tpf + 1));
	EXPECT_EQ(-EINVAL, kva_seq_mirror(s, NULL, 1, 0));
	/* A frame the scheduler does not hold, or no longer. */
	bad = h[1] + 1;
	EXPECT_EQ(-ENOENT, kva_seq_mirror(s, &bad, 1, 1));
	ASSERT_EQ(0, kva_seq_mirror(s, h, 2, 2 * tpf));
	fill_tokens(s, 7, 0, 2 * tpf);
	ASSERT_EQ(0, kva_free(sched, &h[1], 1));
	/*
	 * Slots that keep their handle cost nothing (the module zapped the
	 * freed one already); a frame mapped anew is asked about.
	 */
	EXPECT_EQ(0, kva_seq_mirror(s, h, 2, 2 * tpf));
	ASSERT_EQ(0, kva_seq_create(rk, &self->geo, 2 * tpf, &t));
	EXPECT_EQ(-ESTALE, kva_seq_mirror(t, h, 2, 2 * tpf));
	kva_seq_free(t);
	ASSERT_EQ(0, kva_seq_mirror(s, h, 1, tpf));
	EXPECT_EQ(0, check_tokens(s, 7, 0, tpf));
	/* Bad joins: wrong token, wrong rank. */
	EXPECT_EQ(-ENOENT, open_rank(self->gang, id, token + 1, 0, &solo));
	EXPECT_EQ(-ENOENT, open_rank(self->gang, id, token, RANKS, &solo));
	/* A member serves its gang alone; a seq of another arena mirrors not. */
	EXPECT_EQ(-EBUSY, kva_open(&o, &solo));
	ASSERT_EQ(0, kva_open(&e, &solo));
	ASSERT_EQ(0, kva_seq_create(solo, &self->geo, tpf, &t));
	EXPECT_EQ(-EOPNOTSUPP, kva_seq_mirror(t, h, 1, 1));
	kva_close(solo);
	kva_close(rk);
	kva_close(sched);
}

TEST_F(gang, the_schedulers_death_reaches_every_rank)
{
	struct kva_arena *rk[RANKS];
	struct kva_seq *s[RANKS];
	uint32_t tpf = self->geo.tokens_per_frame;
	int pipefd[2], r;
	struct {
		uint32_t id;
		uint64_t token;
		uint64_t h[2];
	} msg;
	pid_t pid;

	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kva_arena *sched;

		if (open_scheduler(self->gang, &sched, &msg.id, &msg.token,
				   0) ||
		    kva_alloc(sched, msg.h, 2, 0) != 2 ||
		    write(pipefd[1], &msg, sizeof(msg)) != sizeof(msg))
			_exit(1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(sizeof(msg), read(pipefd[0], &msg, sizeof(msg)));
	for (r = 0; r < RANKS; r++) {
		ASSERT_EQ(0, open_rank(self->gang, msg.id, msg.token, r,
				       &rk[r]));
		ASSERT_EQ(0, kva_seq_create(rk[r], &self->geo, 2 * tpf, &s[r]));
		ASSERT_EQ(0, kva_seq_mirror(s[r], msg.h, 2, 2 * tpf));
		fill_tokens(s[r], 9, 0, 2 * tpf);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (r = 0; r < RANKS; r++) {
		pid_t c = fork();
		int status;

		if (c == 0) {
			/* Its mapping is revoked: the touch is SIGBUS. */
			(void)*(volatile char *)(uintptr_t)s[r]->base;
			_exit(0);
		}
		ASSERT_EQ(c, waitpid(c, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS);
		/* Anything mapped anew is refused: the client is gone. */
		EXPECT_EQ(-ENOLINK, kva_seq_mirror(s[r], msg.h, 1, tpf) ?:
			  kva_seq_mirror(s[r], msg.h, 2, 2 * tpf));
		kva_close(rk[r]);
	}
	EXPECT_EQ(0, module_stat(self->gang).nr_held);
	close(pipefd[0]);
	close(pipefd[1]);
}

TEST_HARNESS_MAIN
