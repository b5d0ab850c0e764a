// SPDX-License-Identifier: GPL-2.0
/*
 * Native tests of the core allocator (driver/core.c), the same code that
 * runs in kvarena.ko.  Built twice: plain and under ASan/UBSan.
 */
#include <stdint.h>
#include <string.h>

#include "kselftest_harness.h"

#include "core.h"

#define NR 64

FIXTURE(core) {
	struct kva_core c;
	struct kva_core_client a, b;
	u64 h[2 * NR];
};

FIXTURE_SETUP(core)
{
	ASSERT_EQ(0, kva_core_init(&self->c, NR));
	ASSERT_EQ(0, kva_core_attach(&self->c, &self->a, 0, 0));
	ASSERT_EQ(0, kva_core_attach(&self->c, &self->b, 0, 0));
}

FIXTURE_TEARDOWN(core)
{
	EXPECT_EQ(0, kva_core_check(&self->c));
	kva_core_detach(&self->c, &self->a);
	kva_core_detach(&self->c, &self->b);
	EXPECT_EQ(NR, self->c.nr_free);
	EXPECT_EQ(0, kva_core_check(&self->c));
	kva_core_fini(&self->c);
}

TEST(init_rejects_zero_and_nil_frame_counts)
{
	struct kva_core c;

	EXPECT_EQ(-EINVAL, kva_core_init(&c, 0));
	EXPECT_EQ(-EINVAL, kva_core_init(&c, KVA_NIL));
}

TEST_F(core, alloc_to_exhaustion_and_free_back_to_full)
{
	u64 one;

	ASSERT_EQ(NR, kva_core_alloc(&self->c, &self->a, self->h, NR, false));
	EXPECT_EQ(0, self->c.nr_free);
	EXPECT_EQ(NR, self->a.held);
	EXPECT_EQ(-ENOSPC, kva_core_alloc(&self->c, &self->a, &one, 1, false));
	EXPECT_EQ(-ENOSPC, kva_core_alloc(&self->c, &self->b, &one, 1, true));
	EXPECT_EQ(0, kva_core_check(&self->c));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, self->h, NR));
	EXPECT_EQ(NR, self->c.nr_free);
	EXPECT_EQ(0, self->a.held);
	EXPECT_EQ(NR, self->a.peak);
	EXPECT_EQ(NR, self->c.peak_held);
}

TEST_F(core, handles_are_distinct_and_never_zero)
{
	int i, j;

	ASSERT_EQ(NR, kva_core_alloc(&self->c, &self->a, self->h, NR, false));
	for (i = 0; i < NR; i++) {
		EXPECT_NE(0, self->h[i]);
		EXPECT_LT(KVA_HANDLE_IDX(self->h[i]), NR);
		for (j = 0; j < i; j++)
			ASSERT_NE(KVA_HANDLE_IDX(self->h[i]),
				  KVA_HANDLE_IDX(self->h[j]));
	}
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, self->h, NR));
}

TEST_F(core, alloc_is_all_or_nothing)
{
	ASSERT_EQ(NR - 3, kva_core_alloc(&self->c, &self->a, self->h, NR - 3,
					 false));
	EXPECT_EQ(-ENOSPC, kva_core_alloc(&self->c, &self->b, self->h + NR - 3,
					  4, false));
	EXPECT_EQ(3, self->c.nr_free);
	EXPECT_EQ(0, self->b.held);
	EXPECT_EQ(1, self->b.alloc_failures);
	EXPECT_EQ(1, self->c.alloc_failures);
}

TEST_F(core, alloc_partial_takes_what_is_free)
{
	ASSERT_EQ(NR - 3, kva_core_alloc(&self->c, &self->a, self->h, NR - 3,
					 false));
	EXPECT_EQ(3, kva_core_alloc(&self->c, &self->b, self->h + NR - 3, 4,
				    true));
	EXPECT_EQ(0, self->c.nr_free);
	EXPECT_EQ(3, self->b.held);
	EXPECT_EQ(0, self->b.alloc_failures);
}

TEST_F(core, alloc_of_zero_frames_is_einval)
{
	EXPECT_EQ(-EINVAL, kva_core_alloc(&self->c, &self->a, self->h, 0,
					  false));
}

TEST_F(core, free_after_free_is_estale)
{
	ASSERT_EQ(1, kva_core_alloc(&self->c, &self->a, self->h, 1, false));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, self->h, 1));
	EXPECT_EQ(-ESTALE, kva_core_free(&self->c, &self->a, self->h, 1));
	EXPECT_EQ(NR, self->c.nr_free);
}

TEST_F(core, stale_handle_never_reaches_the_next_holder)
{
	u64 old;

	ASSERT_EQ(1, kva_core_alloc(&self->c, &self->a, &old, 1, false));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, &old, 1));
	/* LIFO: b gets the same frame with a new generation. */
	ASSERT_EQ(1, kva_core_alloc(&self->c, &self->b, self->h, 1, false));
	EXPECT_EQ(KVA_HANDLE_IDX(old), KVA_HANDLE_IDX(self->h[0]));
	EXPECT_EQ(KVA_HANDLE_GEN(old) + 1, KVA_HANDLE_GEN(self->h[0]));
	EXPECT_EQ(-ESTALE, kva_core_free(&self->c, &self->a, &old, 1));
	EXPECT_EQ(-ESTALE, kva_core_lookup(&self->c, &self->b, old));
	EXPECT_EQ(1, self->b.held);
}

TEST_F(core, free_of_other_clients_frame_is_eperm)
{
	ASSERT_EQ(1, kva_core_alloc(&self->c, &self->a, self->h, 1, false));
	EXPECT_EQ(-EPERM, kva_core_free(&self->c, &self->b, self->h, 1));
	EXPECT_EQ(-EPERM, kva_core_lookup(&self->c, &self->b, self->h[0]));
	EXPECT_EQ(1, self->a.held);
}

TEST_F(core, frame_access_is_write_for_the_holder_only_until_free)
{
	u32 idx;

	ASSERT_EQ(1, kva_core_alloc(&self->c, &self->a, self->h, 1, false));
	idx = KVA_HANDLE_IDX(self->h[0]);
	EXPECT_EQ(KVA_ACCESS_WRITE, kva_core_frame_access(&self->c, &self->a, idx));
	EXPECT_EQ(KVA_ACCESS_NONE, kva_core_frame_access(&self->c, &self->b, idx));
	EXPECT_EQ(KVA_ACCESS_NONE, kva_core_frame_access(&self->c, &self->a, NR));
	EXPECT_EQ(KVA_ACCESS_NONE,
		  kva_core_frame_access(&self->c, &self->a, 0xffffffffu));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, self->h, 1));
	EXPECT_EQ(KVA_ACCESS_NONE, kva_core_frame_access(&self->c, &self->a, idx));
}

TEST_F(core, handle_of_unheld_frame_is_enoent)
{
	u64 forged = KVA_HANDLE(1, 5);	/* gen 1 of a never-used frame */

	EXPECT_EQ(-ENOENT, kva_core_free(&self->c, &self->a, &forged, 1));
	forged = KVA_HANDLE(1, NR);	/* past the table */
	EXPECT_EQ(-ENOENT, kva_core_free(&self->c, &self->a, &forged, 1));
	forged = KVA_HANDLE(1, 0xffffffffu);
	EXPECT_EQ(-ENOENT, kva_core_lookup(&self->c, &self->a, forged));
	forged = 0;
	EXPECT_EQ(-ESTALE, kva_core_lookup(&self->c, &self->a, forged));
}

TEST_F(core, free_batch_with_duplicate_is_einval_and_frees_nothing)
{
	ASSERT_EQ(4, kva_core_alloc(&self->c, &self->a, self->h, 4, false));
	self->h[4] = self->h[1];
	EXPECT_EQ(-EINVAL, kva_core_free(&self->c, &self->a, self->h, 5));
	EXPECT_EQ(4, self->a.held);
	EXPECT_EQ(0, kva_core_check(&self->c));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, self->h, 4));
}

TEST_F(core, free_batch_with_one_bad_handle_frees_nothing)
{
	ASSERT_EQ(4, kva_core_alloc(&self->c, &self->a, self->h, 4, false));
	ASSERT_EQ(1, kva_core_alloc(&self->c, &self->b, self->h + 4, 1,
				    false));
	EXPECT_EQ(-EPERM, kva_core_free(&self->c, &self->a, self->h, 5));
	EXPECT_EQ(4, self->a.held);
	EXPECT_EQ(1, self->b.held);
	EXPECT_EQ(0, kva_core_check(&self->c));
	/* The marks of the checked handles were cleared: a retry works. */
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, self->h, 4));
}

TEST_F(core, free_in_any_order_keeps_lists_whole)
{
	static const int order[] = { 3, 0, 7, 5, 1, 6, 2, 4 };
	int i;

	ASSERT_EQ(8, kva_core_alloc(&self->c, &self->a, self->h, 8, false));
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, kva_core_free(&self->c, &self->a,
					   &self->h[order[i]], 1));
		ASSERT_EQ(0, kva_core_check(&self->c));
		EXPECT_EQ(7 - i, self->a.held);
	}
	EXPECT_EQ(KVA_NIL, self->a.head);
}

TEST_F(core, min_guarantee_keeps_frames_from_other_clients)
{
	struct kva_core_client g;
	u64 one;

	ASSERT_EQ(0, kva_core_attach(&self->c, &g, 10, 0));
	EXPECT_EQ(10, self->c.unmet_min);
	EXPECT_EQ(NR - 10, kva_core_available(&self->c, &self->a));
	EXPECT_EQ(-ENOSPC, kva_core_alloc(&self->c, &self->a, self->h,
					  NR - 9, false));
	ASSERT_EQ(NR - 10, kva_core_alloc(&self->c, &self->a, self->h,
					  NR - 9, true));
	EXPECT_EQ(-ENOSPC, kva_core_alloc(&self->c, &self->b, &one, 1, false));
	/* The guaranteed client still gets all ten. */
	ASSERT_EQ(10, kva_core_alloc(&self->c, &g, self->h + NR - 10, 10,
				     false));
	EXPECT_EQ(0, self->c.unmet_min);
	EXPECT_EQ(0, kva_core_check(&self->c));
	EXPECT_EQ(10, kva_core_detach(&self->c, &g));
}

TEST_F(core, freeing_below_min_reserves_the_frames_again)
{
	struct kva_core_client g;
	u64 one;

	ASSERT_EQ(0, kva_core_attach(&self->c, &g, 4, 0));
	ASSERT_EQ(6, kva_core_alloc(&self->c, &g, self->h, 6, false));
	EXPECT_EQ(0, self->c.unmet_min);
	ASSERT_EQ(NR - 6, kva_core_alloc(&self->c, &self->a, self->h + 6,
					 NR - 6, false));
	ASSERT_EQ(0, kva_core_free(&self->c, &g, self->h, 3));
	EXPECT_EQ(1, self->c.unmet_min);
	/* Two of the three freed frames are open to others, one is not. */
	EXPECT_EQ(2, kva_core_alloc(&self->c, &self->b, self->h, 3, true));
	EXPECT_EQ(-ENOSPC, kva_core_alloc(&self->c, &self->b, &one, 1, false));
	ASSERT_EQ(1, kva_core_alloc(&self->c, &g, &one, 1, false));
	EXPECT_EQ(0, kva_core_check(&self->c));
	kva_core_detach(&self->c, &g);
}

TEST_F(core, attach_with_min_beyond_unreserved_frames_is_enospc)
{
	struct kva_core_client g1, g2;

	ASSERT_EQ(0, kva_core_attach(&self->c, &g1, NR / 2, 0));
	EXPECT_EQ(-ENOSPC, kva_core_attach(&self->c, &g2, NR / 2 + 1, 0));
	ASSERT_EQ(0, kva_core_attach(&self->c, &g2, NR / 2, 0));
	EXPECT_EQ(NR, self->c.unmet_min);
	EXPECT_EQ(0, kva_core_available(&self->c, &self->a));
	kva_core_detach(&self->c, &g2);
	kva_core_detach(&self->c, &g1);
	EXPECT_EQ(0, self->c.unmet_min);
}

TEST_F(core, alloc_beyond_max_is_enospc)
{
	struct kva_core_client l;

	ASSERT_EQ(0, kva_core_attach(&self->c, &l, 0, 5));
	ASSERT_EQ(5, kva_core_alloc(&self->c, &l, self->h, 5, false));
	EXPECT_EQ(-ENOSPC, kva_core_alloc(&self->c, &l, self->h + 5, 1,
					  false));
	EXPECT_EQ(-ENOSPC, kva_core_alloc(&self->c, &l, self->h + 5, 1, true));
	EXPECT_EQ(5, l.held);
	EXPECT_EQ(2, l.alloc_failures);
	kva_core_detach(&self->c, &l);
}

TEST_F(core, limits_are_checked)
{
	struct kva_core_client l;

	EXPECT_EQ(-EINVAL, kva_core_attach(&self->c, &l, 6, 5));
	EXPECT_EQ(-EINVAL, kva_core_attach(&self->c, &l, 0, NR + 1));
	ASSERT_EQ(0, kva_core_attach(&self->c, &l, 0, 0));
	EXPECT_EQ(NR, l.max);
	EXPECT_EQ(-EINVAL, kva_core_set_limits(&self->c, &l, 3, 2));
	ASSERT_EQ(1, kva_core_alloc(&self->c, &self->a, &self->h[NR], 1,
				    false));
	EXPECT_EQ(-ENOSPC, kva_core_set_limits(&self->c, &l, NR, NR));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, &self->h[NR], 1));
	ASSERT_EQ(0, kva_core_set_limits(&self->c, &l, 8, 16));
	EXPECT_EQ(8, self->c.unmet_min);
	ASSERT_EQ(16, kva_core_alloc(&self->c, &l, self->h, 16, false));
	EXPECT_EQ(0, self->c.unmet_min);
	/* A max below held takes nothing away but stops new allocations. */
	ASSERT_EQ(0, kva_core_set_limits(&self->c, &l, 0, 4));
	EXPECT_EQ(16, l.held);
	EXPECT_EQ(0, kva_core_available(&self->c, &l));
	EXPECT_EQ(-ENOSPC, kva_core_alloc(&self->c, &l, self->h + 16, 1,
					  false));
	EXPECT_EQ(16, kva_core_detach(&self->c, &l));
}

TEST_F(core, set_limits_failure_changes_nothing)
{
	struct kva_core_client g, l;

	ASSERT_EQ(0, kva_core_attach(&self->c, &g, NR - 4, 0));
	ASSERT_EQ(0, kva_core_attach(&self->c, &l, 2, 10));
	EXPECT_EQ(-ENOSPC, kva_core_set_limits(&self->c, &l, 5, 10));
	EXPECT_EQ(2, l.min);
	EXPECT_EQ(10, l.max);
	EXPECT_EQ(NR - 2, self->c.unmet_min);
	kva_core_detach(&self->c, &l);
	kva_core_detach(&self->c, &g);
}

TEST_F(core, detach_returns_every_frame)
{
	struct kva_core_client d;

	ASSERT_EQ(0, kva_core_attach(&self->c, &d, 3, 0));
	ASSERT_EQ(20, kva_core_alloc(&self->c, &d, self->h, 20, false));
	ASSERT_EQ(5, kva_core_alloc(&self->c, &self->a, self->h + 20, 5,
				    false));
	ASSERT_EQ(0, kva_core_free(&self->c, &d, self->h + 7, 2));
	EXPECT_EQ(18, kva_core_detach(&self->c, &d));
	EXPECT_EQ(NR - 5, self->c.nr_free);
	EXPECT_EQ(0, self->c.unmet_min);
	EXPECT_EQ(2, self->c.nr_clients);
	EXPECT_EQ(0, kva_core_check(&self->c));
	EXPECT_EQ(-ESTALE, kva_core_lookup(&self->c, &self->a, self->h[0]));
}

TEST_F(core, counters_count_calls_frames_and_failures)
{
	u64 one;

	ASSERT_EQ(10, kva_core_alloc(&self->c, &self->a, self->h, 10, false));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, self->h, 4));
	EXPECT_EQ(-ESTALE, kva_core_free(&self->c, &self->a, self->h, 1));
	ASSERT_EQ(NR - 6, kva_core_alloc(&self->c, &self->b, self->h + 10,
					 NR - 6, false));
	EXPECT_EQ(-ENOSPC, kva_core_alloc(&self->c, &self->b, &one, 1, false));
	EXPECT_EQ(3, self->c.alloc_calls);
	EXPECT_EQ(2, self->c.free_calls);
	EXPECT_EQ(1, self->c.alloc_failures);
	EXPECT_EQ(10 + NR - 6, self->c.frames_allocated);
	EXPECT_EQ(4, self->c.frames_freed);
	EXPECT_EQ(NR, self->c.peak_held);
	EXPECT_EQ(2, self->b.alloc_calls);
	EXPECT_EQ(1, self->b.alloc_failures);
	EXPECT_EQ(2, self->a.free_calls);
}

TEST_F(core, generation_wraps_past_zero)
{
	u64 h;

	self->c.frames[self->c.free_head].gen = 0xffffffffu;
	ASSERT_EQ(1, kva_core_alloc(&self->c, &self->a, &h, 1, false));
	EXPECT_EQ(0xffffffffu, KVA_HANDLE_GEN(h));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, &h, 1));
	ASSERT_EQ(1, kva_core_alloc(&self->c, &self->a, &h, 1, false));
	EXPECT_EQ(1, KVA_HANDLE_GEN(h));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, &h, 1));
}

/*
 * Random walk against a model: three clients with limits, random batch
 * allocs and frees (some with bad handles), checking every invariant and
 * every count after every step.
 */
struct model_client {
	struct kva_core_client cl;
	u64 held[NR];
	u32 n;
};

static u64 rng_state = 0x9e3779b97f4a7c15ull;

static u32 rnd(u32 n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (u32)(rng_state % n);
}

TEST(random_walk_matches_model)
{
	struct model_client m[3] = { 0 };
	static const u32 mins[3] = { 8, 0, 4 }, maxs[3] = { 40, 0, 20 };
	struct kva_core c;
	u64 buf[NR];
	int step, i;

	ASSERT_EQ(0, kva_core_init(&c, NR));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, kva_core_attach(&c, &m[i].cl, mins[i], maxs[i]));

	for (step = 0; step < 200000; step++) {
		struct model_client *x = &m[rnd(3)];
		u32 k = 1 + rnd(8), j, unmet_sum = 0, held_sum = 0;
		int ret;

		switch (rnd(4)) {
		case 0:
		case 1: {
			u32 avail = kva_core_available(&c, &x->cl);
			bool partial = rnd(2);

			ret = kva_core_alloc(&c, &x->cl, buf, k, partial);
			if (k <= avail) {
				ASSERT_EQ((int)k, ret);
			} else if (partial && avail) {
				ASSERT_EQ((int)avail, ret);
			} else {
				ASSERT_EQ(-ENOSPC, ret);
			}
			for (j = 0; ret > 0 && j < (u32)ret; j++)
				x->held[x->n++] = buf[j];
			break;
		}
		case 2:
			if (k > x->n)
				k = x->n;
			if (!k)
				break;
			for (j = 0; j < k; j++) {
				u32 pick = rnd(x->n - j);

				buf[j] = x->held[pick];
				x->held[pick] = x->held[x->n - j - 1];
				x->held[x->n - j - 1] = buf[j];
			}
			ASSERT_EQ(0, kva_core_free(&c, &x->cl, buf, k));
			x->n -= k;
			/* Every freed handle is stale from now on. */
			ASSERT_EQ(-ESTALE, kva_core_lookup(&c, &x->cl, buf[0]));
			break;
		case 3:
			/* A batch with a bad handle in it frees nothing. */
			if (!x->n)
				break;
			buf[0] = x->held[rnd(x->n)];
			buf[1] = buf[0] ^ (1ull << 32);
			ASSERT_NE(0, kva_core_free(&c, &x->cl, buf, 2));
			break;
		}
		ASSERT_EQ(0, kva_core_check(&c));
		for (i = 0; i < 3; i++) {
			ASSERT_EQ(m[i].n, m[i].cl.held);
			ASSERT_LE(m[i].cl.held, m[i].cl.max);
			held_sum += m[i].cl.held;
			if (m[i].cl.min > m[i].cl.held)
				unmet_sum += m[i].cl.min - m[i].cl.held;
		}
		ASSERT_EQ(held_sum, kva_core_held(&c));
		ASSERT_EQ(unmet_sum, c.unmet_min);
		ASSERT_LE(unmet_sum, c.nr_free);
	}
	for (i = 0; i < 3; i++)
		ASSERT_EQ(m[i].n, kva_core_detach(&c, &m[i].cl));
	ASSERT_EQ(NR, c.nr_free);
	ASSERT_EQ(0, kva_core_check(&c));
	kva_core_fini(&c);
}

TEST_HARNESS_MAIN
