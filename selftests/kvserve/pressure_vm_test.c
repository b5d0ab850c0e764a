// SPDX-License-Identifier: GPL-2.0
/*
 * kva_poll_fd() against the real kvarena.ko, in the VM (static, KTAP):
 * the pressure kvserve watches before admitting, and the POLLOUT it
 * sleeps on when it was refused frames.  An arena of 16 frames
 * with a low watermark of 4: POLLPRI while fewer than 4 frames are free,
 * seen by every client of the arena, and gone when frames come back.
 *
 * Needs: root, kvarena.ko loaded, /dev/kvarena.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <kvarena.h>

#include "kselftest_harness.h"

#define FS	4096u
#define NR	16u
#define LOW	4u

static int pressure(struct kva_arena *a)
{
	struct pollfd p = { .fd = kva_poll_fd(a), .events = POLLPRI };
	int ret;

	if (p.fd < 0)
		return p.fd;
	ret = poll(&p, 1, 0);
	if (ret < 0)
		return -1;
	return ret && (p.revents & POLLPRI);
}

static int open_client(const char *name, const char *label,
		       struct kva_arena **a)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_DEVICE, .name = name, .label = label,
	};

	return kva_open(&o, a);
}

FIXTURE(press) {
	char name[32];
	struct kva_arena *a, *b;
};

FIXTURE_SETUP(press)
{
	struct kva_arena_params p = {
		.name = self->name, .nr_frames = NR, .frame_size = FS,
		.mem_kind = KVA_BACKEND_HOST, .low_watermark = LOW,
	};

	snprintf(self->name, sizeof(self->name), "press-%d", (int)getpid());
	ASSERT_EQ(0, kva_arena_create(&p));
	ASSERT_EQ(0, open_client(self->name, "a", &self->a));
	ASSERT_EQ(0, open_client(self->name, "b", &self->b));
}

FIXTURE_TEARDOWN(press)
{
	struct kva_arena_params p = { .name = self->name };

	kva_close(self->a);
	kva_close(self->b);
	EXPECT_EQ(0, kva_arena_destroy(&p));
}

TEST_F(press, poll_fd_is_the_clients_own_and_stays_the_same)
{
	int fa = kva_poll_fd(self->a);

	ASSERT_LE(0, fa);
	EXPECT_EQ(fa, kva_poll_fd(self->a));
	EXPECT_NE(fa, kva_poll_fd(self->b));
	EXPECT_EQ(0, pressure(self->a));
}

TEST_F(press, pollpri_below_the_low_watermark_for_every_client)
{
	uint64_t h[NR];

	/* 12 taken, 4 free: at the watermark, not below it. */
	ASSERT_EQ(12, kva_alloc(self->a, h, 12, 0));
	EXPECT_EQ(0, pressure(self->a));
	EXPECT_EQ(0, pressure(self->b));
	/* 13 taken, 3 free: below. */
	ASSERT_EQ(1, kva_alloc(self->a, h + 12, 1, 0));
	EXPECT_EQ(1, pressure(self->a));
	EXPECT_EQ(1, pressure(self->b));
	/* Two come back: 5 free. */
	ASSERT_EQ(0, kva_free(self->a, h + 11, 2));
	EXPECT_EQ(0, pressure(self->a));
	EXPECT_EQ(0, pressure(self->b));
	ASSERT_EQ(0, kva_free(self->a, h, 11));
}

TEST_F(press, a_closed_client_takes_the_pressure_with_it)
{
	uint64_t h[NR];

	ASSERT_EQ(14, kva_alloc(self->b, h, 14, 0));
	EXPECT_EQ(1, pressure(self->a));
	kva_close(self->b);
	self->b = NULL;
	EXPECT_EQ(0, pressure(self->a));
}

/*
 * The wait kvserve does with nothing to run: a refused kva_alloc(), then
 * poll() for POLLOUT on kva_poll_fd(), which sleeps until the other
 * client has freed enough, and not before.
 */
TEST_F(press, pollout_sleeps_after_enospc_until_enough_frames_come_back)
{
	struct pollfd p = { .fd = kva_poll_fd(self->b), .events = POLLOUT };
	uint64_t h[NR], g[4];

	ASSERT_LE(0, p.fd);
	EXPECT_EQ(1, poll(&p, 1, 0));		/* nothing refused yet */
	ASSERT_EQ(NR, kva_alloc(self->a, h, NR, 0));
	ASSERT_EQ(-ENOSPC, kva_alloc(self->b, g, 4, 0));
	EXPECT_EQ(0, poll(&p, 1, 0));
	ASSERT_EQ(0, kva_free(self->a, h, 3));
	EXPECT_EQ(0, poll(&p, 1, 50));		/* 3 of the 4 */
	ASSERT_EQ(0, kva_free(self->a, h + 3, 1));
	EXPECT_EQ(1, poll(&p, 1, 0));
	EXPECT_EQ(POLLOUT, p.revents & POLLOUT);
	ASSERT_EQ(4, kva_alloc(self->b, g, 4, 0));
	ASSERT_EQ(0, kva_free(self->b, g, 4));
	ASSERT_EQ(0, kva_free(self->a, h + 4, NR - 4));
}

TEST(embedded_arena_has_no_pressure_fd)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_EMBEDDED, .nr_frames = NR, .frame_size = FS,
	};
	struct kva_arena *a;

	ASSERT_EQ(0, kva_open(&o, &a));
	EXPECT_EQ(-EOPNOTSUPP, kva_poll_fd(a));
	kva_close(a);
}

TEST_HARNESS_MAIN
