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
	/* Published frames outlive their clients, as cached frames. */
	EXPECT_EQ(NR, self->c.nr_free + self->c.nr_cached);
	EXPECT_EQ(self->c.nr_published, self->c.nr_cached);
	EXPECT_EQ(0, kva_core_check(&self->c));
	EXPECT_EQ(self->c.nr_cached, kva_core_drop_cache(&self->c));
	EXPECT_EQ(NR, self->c.nr_free);
	EXPECT_EQ(0, self->c.nr_published);
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

/*
 * A lent frame stays the holder's in every count, but the holder can
 * neither free, publish nor map it until the owner takes it back.
 */
TEST_F(core, a_lent_frame_counts_for_its_holder_who_cannot_touch_it)
{
	struct kva_core_prefix e = { .key = { 7 } };
	u32 idx;

	ASSERT_EQ(1, kva_core_alloc(&self->c, &self->a, self->h, 1, false));
	idx = KVA_HANDLE_IDX(self->h[0]);
	ASSERT_EQ(0, kva_core_lend(&self->c, &self->a, self->h[0]));
	EXPECT_EQ(1, self->a.held);
	EXPECT_EQ(1, self->a.charged);
	EXPECT_EQ(NR - 1, self->c.nr_free);
	EXPECT_EQ(-EBUSY, kva_core_free(&self->c, &self->a, self->h, 1));
	EXPECT_EQ(-EBUSY, kva_core_lookup(&self->c, &self->a, self->h[0]));
	e.handle = self->h[0];
	EXPECT_EQ(-EBUSY, kva_core_publish(&self->c, &self->a, &e, 1));
	EXPECT_EQ(KVA_ACCESS_NONE, kva_core_frame_access(&self->c, &self->a, idx));
	EXPECT_EQ(-EPERM, kva_core_free(&self->c, &self->b, self->h, 1));
	/* Lent once: lending again is refused. */
	EXPECT_EQ(-EBUSY, kva_core_lend(&self->c, &self->a, self->h[0]));
	EXPECT_EQ(0, kva_core_check(&self->c));
	kva_core_unlend(&self->c, self->h[0]);
	EXPECT_EQ(KVA_ACCESS_WRITE, kva_core_frame_access(&self->c, &self->a, idx));
	EXPECT_EQ(0, kva_core_free(&self->c, &self->a, self->h, 1));
	EXPECT_EQ(NR, self->c.nr_free);
}

/* Only a frame held alone and unpublished can be lent, by its holder. */
TEST_F(core, lend_refuses_shared_published_and_foreign_frames)
{
	struct kva_core_prefix e = { .key = { 9 } };

	ASSERT_EQ(2, kva_core_alloc(&self->c, &self->a, self->h, 2, false));
	EXPECT_EQ(-EPERM, kva_core_lend(&self->c, &self->b, self->h[0]));
	e.handle = self->h[1];
	ASSERT_EQ(1, kva_core_publish(&self->c, &self->a, &e, 1));
	EXPECT_EQ(-EBUSY, kva_core_lend(&self->c, &self->a, self->h[1]));
	EXPECT_EQ(0, kva_core_check(&self->c));
	EXPECT_EQ(0, kva_core_free(&self->c, &self->a, self->h, 2));
}

/*
 * Handed over, a lent frame is the other client's: held and charged
 * there, no longer lent; the first client's counts fall by one.
 */
TEST_F(core, hand_over_moves_a_lent_frame_and_its_charge)
{
	struct kva_core_client c1 = { 0 };
	u32 idx;

	ASSERT_EQ(0, kva_core_attach(&self->c, &c1, 0, 1));
	ASSERT_EQ(2, kva_core_alloc(&self->c, &self->a, self->h, 2, false));
	idx = KVA_HANDLE_IDX(self->h[0]);
	/* Not lent: nothing to hand over. */
	EXPECT_EQ(-EINVAL, kva_core_hand_over(&self->c, &self->a, &c1,
					      self->h[0]));
	ASSERT_EQ(0, kva_core_lend(&self->c, &self->a, self->h[0]));
	ASSERT_EQ(0, kva_core_hand_over(&self->c, &self->a, &c1, self->h[0]));
	EXPECT_EQ(1, self->a.held);
	EXPECT_EQ(1, self->a.charged);
	EXPECT_EQ(1, c1.held);
	EXPECT_EQ(1, c1.charged);
	EXPECT_EQ(KVA_ACCESS_WRITE, kva_core_frame_access(&self->c, &c1, idx));
	EXPECT_EQ(KVA_ACCESS_NONE, kva_core_frame_access(&self->c, &self->a, idx));
	/* A full taker refuses a second. */
	ASSERT_EQ(0, kva_core_lend(&self->c, &self->a, self->h[1]));
	EXPECT_EQ(-EINVAL, kva_core_hand_over(&self->c, &self->a, &c1,
					      self->h[1]));
	kva_core_unlend(&self->c, self->h[1]);
	EXPECT_EQ(0, kva_core_check(&self->c));
	EXPECT_EQ(1, kva_core_detach(&self->c, &c1));
	EXPECT_EQ(0, kva_core_free(&self->c, &self->a, &self->h[1], 1));
	EXPECT_EQ(NR, self->c.nr_free);
}

/* A holder with a guarantee cannot hand over: its charge would fall. */
TEST(hand_over_needs_the_giver_without_a_minimum)
{
	struct kva_core c;
	struct kva_core_client a = { 0 }, b = { 0 };
	u64 h;

	ASSERT_EQ(0, kva_core_init(&c, 4));
	ASSERT_EQ(0, kva_core_attach(&c, &a, 2, 0));
	ASSERT_EQ(0, kva_core_attach(&c, &b, 0, 1));
	ASSERT_EQ(1, kva_core_alloc(&c, &a, &h, 1, false));
	ASSERT_EQ(0, kva_core_lend(&c, &a, h));
	EXPECT_EQ(-EINVAL, kva_core_hand_over(&c, &a, &b, h));
	ASSERT_EQ(0, kva_core_set_limits(&c, &a, 0, 0));
	EXPECT_EQ(0, kva_core_hand_over(&c, &a, &b, h));
	EXPECT_EQ(0, kva_core_check(&c));
	kva_core_detach(&c, &a);
	kva_core_detach(&c, &b);
	EXPECT_EQ(4, c.nr_free);
	kva_core_fini(&c);
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


/* ---- the prefix cache ------------------------------------------------------ */

/* Key number @i: never all zeros. */
static void set_key(u8 *k, u32 i)
{
	memset(k, 0, KVA_KEY_LEN);
	k[0] = 0xa5;
	memcpy(k + 1, &i, sizeof(i));
	k[KVA_KEY_LEN - 1] = (u8)(i * 37);
}

/* Publish handles[0..n) under keys first, first + 1, ... */
static int publish(struct kva_core *c, struct kva_core_client *cl,
		   u32 first, const u64 *handles, u32 n, u32 *flags)
{
	struct kva_core_prefix e[NR];
	u32 i;
	int ret;

	for (i = 0; i < n; i++) {
		set_key(e[i].key, first + i);
		e[i].handle = handles[i];
		e[i].flags = 0xdead;
	}
	ret = kva_core_publish(c, cl, e, n);
	for (i = 0; flags && i < n; i++)
		flags[i] = e[i].flags;
	return ret;
}

/* Look up keys[0..n); the run's handles go to @out. */
static int lookup(struct kva_core *c, struct kva_core_client *cl,
		  const u32 *keys, u32 n, u64 *out)
{
	struct kva_core_prefix e[NR];
	u32 i;
	int ret;

	if (kva_core_holds_need(c, n)) {
		u32 want = kva_core_holds_need(c, n);

		kva_core_holds_free(kva_core_holds_grow(
			c, kva_core_holds_alloc(want), want));
	}
	for (i = 0; i < n; i++)
		set_key(e[i].key, keys[i]);
	ret = kva_core_prefix_lookup(c, cl, e, n);
	for (i = 0; ret > 0 && i < (u32)ret; i++)
		out[i] = e[i].handle;
	return ret;
}

/* Keys first, first + 1, ..., n of them. */
static int lookup_run(struct kva_core *c, struct kva_core_client *cl,
		      u32 first, u32 n, u64 *out)
{
	u32 keys[NR], i;

	for (i = 0; i < n; i++)
		keys[i] = first + i;
	return lookup(c, cl, keys, n, out);
}

TEST_F(core, publish_keeps_the_hold_and_the_last_free_makes_it_cached)
{
	u64 h[4];

	ASSERT_EQ(4, kva_core_alloc(&self->c, &self->a, h, 4, false));
	ASSERT_EQ(4, publish(&self->c, &self->a, 100, h, 4, NULL));
	EXPECT_EQ(4, self->c.nr_published);
	EXPECT_EQ(4, self->a.held);
	EXPECT_EQ(0, self->c.nr_cached);
	/* From publication on, even its publisher only reads it. */
	EXPECT_EQ(KVA_ACCESS_READ, kva_core_frame_access(&self->c, &self->a,
							 KVA_HANDLE_IDX(h[0])));
	EXPECT_EQ(KVA_ACCESS_NONE, kva_core_frame_access(&self->c, &self->b,
							 KVA_HANDLE_IDX(h[0])));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, h, 4));
	EXPECT_EQ(4, self->c.nr_cached);
	EXPECT_EQ(NR - 4, self->c.nr_free);
	EXPECT_EQ(0, kva_core_held(&self->c));
	EXPECT_EQ(0, self->a.held);
	EXPECT_EQ(0, self->a.charged);
	EXPECT_EQ(4, self->c.nr_published);
	/* Nobody holds a cached frame: its handle gives nothing. */
	EXPECT_EQ(-ENOENT, kva_core_lookup(&self->c, &self->a, h[0]));
	EXPECT_EQ(KVA_ACCESS_NONE, kva_core_frame_access(&self->c, &self->a,
							 KVA_HANDLE_IDX(h[0])));
	EXPECT_EQ(-ENOENT, kva_core_free(&self->c, &self->a, h, 1));
	EXPECT_EQ(0, kva_core_check(&self->c));
}

TEST_F(core, lookup_of_cached_frames_returns_the_same_handles_charged_to_the_caller)
{
	u64 h[4], got[4];
	int i;

	ASSERT_EQ(4, kva_core_alloc(&self->c, &self->a, h, 4, false));
	ASSERT_EQ(4, publish(&self->c, &self->a, 7, h, 4, NULL));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, h, 4));
	ASSERT_EQ(4, lookup_run(&self->c, &self->b, 7, 4, got));
	for (i = 0; i < 4; i++)
		EXPECT_EQ(h[i], got[i]);
	EXPECT_EQ(0, self->c.nr_cached);
	EXPECT_EQ(4, self->b.held);
	EXPECT_EQ(4, self->b.charged);
	EXPECT_EQ(0, self->b.shared);
	EXPECT_EQ(4, kva_core_held(&self->c));
	EXPECT_EQ(4, self->c.cache_hits);
	EXPECT_EQ(0, self->c.cache_misses);
	EXPECT_EQ(KVA_HANDLE_IDX(h[2]),
		  kva_core_lookup(&self->c, &self->b, got[2]));
	/* Still published: freeing caches them again. */
	ASSERT_EQ(0, kva_core_free(&self->c, &self->b, got, 4));
	EXPECT_EQ(4, self->c.nr_cached);
}

TEST_F(core, lookup_returns_only_the_leading_run_that_is_present)
{
	static const u32 chain[] = { 1, 2, 99, 4 };
	u64 h[4], got[4];

	ASSERT_EQ(4, kva_core_alloc(&self->c, &self->a, h, 4, false));
	ASSERT_EQ(4, publish(&self->c, &self->a, 1, h, 4, NULL));
	ASSERT_EQ(2, lookup(&self->c, &self->b, chain, 4, got));
	EXPECT_EQ(h[0], got[0]);
	EXPECT_EQ(h[1], got[1]);
	EXPECT_EQ(2, self->b.held);
	EXPECT_EQ(2, self->c.cache_hits);
	EXPECT_EQ(2, self->c.cache_misses);
	/* A chain that misses at once takes nothing and is no error. */
	ASSERT_EQ(0, lookup_run(&self->c, &self->b, 50, 3, got));
	EXPECT_EQ(2, self->b.held);
	EXPECT_EQ(5, self->c.cache_misses);
	ASSERT_EQ(0, kva_core_free(&self->c, &self->b, got, 2));
}

TEST_F(core, lookup_of_a_held_frame_is_a_shared_hold_charged_once)
{
	struct kva_core_client c3;
	u64 h[2], got[2], got3[2];

	ASSERT_EQ(0, kva_core_attach(&self->c, &c3, 0, 0));
	ASSERT_EQ(2, kva_core_alloc(&self->c, &self->a, h, 2, false));
	ASSERT_EQ(2, publish(&self->c, &self->a, 10, h, 2, NULL));
	ASSERT_EQ(2, lookup_run(&self->c, &self->b, 10, 2, got));
	ASSERT_EQ(2, lookup_run(&self->c, &c3, 10, 2, got3));
	EXPECT_EQ(2, kva_core_held(&self->c));
	EXPECT_EQ(NR - 2, self->c.nr_free);
	EXPECT_EQ(2, self->a.held);
	EXPECT_EQ(2, self->b.held);
	EXPECT_EQ(2, c3.held);
	EXPECT_EQ(2, self->a.charged);
	EXPECT_EQ(0, self->b.charged);
	EXPECT_EQ(2, self->a.shared);
	EXPECT_EQ(2, self->b.shared);
	EXPECT_EQ(2, c3.shared);
	EXPECT_EQ(4, self->c.holds_used);
	EXPECT_EQ(0, kva_core_check(&self->c));
	/* Shared holders read; nobody writes a published frame. */
	EXPECT_EQ(KVA_ACCESS_READ, kva_core_frame_access(&self->c, &c3,
							 KVA_HANDLE_IDX(h[1])));

	/* b lets go of one: three holders become two, then one. */
	ASSERT_EQ(0, kva_core_free(&self->c, &self->b, got, 1));
	EXPECT_EQ(1, self->b.held);
	EXPECT_EQ(1, self->b.shared);
	EXPECT_EQ(2, self->a.shared);
	ASSERT_EQ(0, kva_core_free(&self->c, &c3, got3, 1));
	EXPECT_EQ(1, self->a.shared);
	EXPECT_EQ(1, c3.shared);
	/* Freeing a frame another client holds is refused as before. */
	EXPECT_EQ(-EPERM, kva_core_free(&self->c, &self->b, got, 1));
	EXPECT_EQ(0, kva_core_check(&self->c));
	EXPECT_EQ(1, kva_core_detach(&self->c, &c3));
	EXPECT_EQ(1, self->a.shared);	/* the second frame, with b */
	EXPECT_EQ(1, self->b.shared);
}

TEST_F(core, lookup_of_a_frame_already_held_takes_no_second_hold)
{
	static const u32 twice[] = { 5, 5, 6 };
	u64 h[2], got[3];

	ASSERT_EQ(2, kva_core_alloc(&self->c, &self->a, h, 2, false));
	ASSERT_EQ(2, publish(&self->c, &self->a, 5, h, 2, NULL));
	ASSERT_EQ(3, lookup(&self->c, &self->a, twice, 3, got));
	EXPECT_EQ(h[0], got[0]);
	EXPECT_EQ(h[0], got[1]);
	EXPECT_EQ(h[1], got[2]);
	EXPECT_EQ(2, self->a.held);
	EXPECT_EQ(0, self->c.holds_used);
	/* One FREE lets it go. */
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, h, 2));
	EXPECT_EQ(2, self->c.nr_cached);
}

TEST_F(core, lookup_flags_the_entries_that_took_no_hold)
{
	struct kva_core_prefix e[3];
	u64 h[2];

	ASSERT_EQ(2, kva_core_alloc(&self->c, &self->a, h, 2, false));
	ASSERT_EQ(2, publish(&self->c, &self->a, 5, h, 2, NULL));
	set_key(e[0].key, 6);
	set_key(e[1].key, 5);
	set_key(e[2].key, 6);
	/* b: two new holds, the third entry repeats the first. */
	ASSERT_EQ(3, kva_core_prefix_lookup(&self->c, &self->b, e, 3));
	EXPECT_EQ(0, e[0].flags);
	EXPECT_EQ(0, e[1].flags);
	EXPECT_EQ(KVA_PREFIX_HELD, e[2].flags);
	EXPECT_EQ(2, self->b.held);
	/* Again: b holds both already. */
	ASSERT_EQ(3, kva_core_prefix_lookup(&self->c, &self->b, e, 3));
	EXPECT_EQ(KVA_PREFIX_HELD, e[0].flags);
	EXPECT_EQ(KVA_PREFIX_HELD, e[1].flags);
	EXPECT_EQ(KVA_PREFIX_HELD, e[2].flags);
	EXPECT_EQ(2, self->b.held);
	ASSERT_EQ(0, kva_core_free(&self->c, &self->b, h, 2));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, h, 2));
}

TEST_F(core, alloc_reclaims_cached_frames_oldest_first_before_enospc)
{
	u64 h[NR], old[3], young[3], got[3], one;

	ASSERT_EQ(3, kva_core_alloc(&self->c, &self->a, old, 3, false));
	ASSERT_EQ(3, kva_core_alloc(&self->c, &self->a, young, 3, false));
	ASSERT_EQ(3, publish(&self->c, &self->a, 0, old, 3, NULL));
	ASSERT_EQ(3, publish(&self->c, &self->a, 10, young, 3, NULL));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, old, 3));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, young, 3));
	EXPECT_EQ(6, self->c.nr_cached);
	EXPECT_EQ(NR, kva_core_available(&self->c, &self->b));
	/* Everything free, and two of the cached frames. */
	ASSERT_EQ(NR - 4, kva_core_alloc(&self->c, &self->b, h, NR - 4,
					 false));
	EXPECT_EQ(2, self->c.cache_reclaims);
	EXPECT_EQ(4, self->c.nr_cached);
	EXPECT_EQ(4, self->c.nr_published);
	/* The oldest two went: the chain now misses at its first key. */
	EXPECT_EQ(0, lookup_run(&self->c, &self->a, 0, 3, got));
	/* The reclaimed frames' old handles are stale. */
	EXPECT_EQ(-ESTALE, kva_core_lookup(&self->c, &self->b, old[0]));
	EXPECT_EQ(-ESTALE, kva_core_lookup(&self->c, &self->b, old[1]));
	/* The rest: all of it, then nothing but ENOSPC. */
	ASSERT_EQ(4, kva_core_alloc(&self->c, &self->b, h + NR - 4, 4, false));
	EXPECT_EQ(0, self->c.nr_cached);
	EXPECT_EQ(6, self->c.cache_reclaims);
	EXPECT_EQ(-ENOSPC, kva_core_alloc(&self->c, &self->b, &one, 1, true));
	EXPECT_EQ(0, lookup_run(&self->c, &self->a, 10, 3, got));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->b, h, NR));
}

/* Ranks for the test below: by frame, set by the test; seqs seen. */
static u32 rank_of[NR];
static u64 rank_seq_last;
static u32 rank_seq_moves;

static u32 test_rank(struct kva_core *c, u32 idx, u64 seq)
{
	(void)c;
	if (seq != rank_seq_last) {
		rank_seq_last = seq;
		rank_seq_moves++;
	}
	return rank_of[idx];
}

/*
 * With the owner's ranks, an allocation reclaims the oldest cached frames
 * of the lowest rank first, then the next rank, and every cached frame
 * still, when nothing else is left: a rank orders, it never refuses.
 */
TEST_F(core, reclaim_takes_the_lowest_rank_first_and_every_rank_at_last)
{
	u64 old[3], mid[3], young[3], h[NR], got[3];
	u32 i;

	ASSERT_EQ(3, kva_core_alloc(&self->c, &self->a, old, 3, false));
	ASSERT_EQ(3, kva_core_alloc(&self->c, &self->a, mid, 3, false));
	ASSERT_EQ(3, kva_core_alloc(&self->c, &self->a, young, 3, false));
	ASSERT_EQ(3, publish(&self->c, &self->a, 0, old, 3, NULL));
	ASSERT_EQ(3, publish(&self->c, &self->a, 10, mid, 3, NULL));
	ASSERT_EQ(3, publish(&self->c, &self->a, 20, young, 3, NULL));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, old, 3));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, mid, 3));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, young, 3));
	memset(rank_of, 0, sizeof(rank_of));
	for (i = 0; i < 3; i++) {
		rank_of[KVA_HANDLE_IDX(old[i])] = 2;
		rank_of[KVA_HANDLE_IDX(mid[i])] = 1;
	}
	self->c.reclaim_rank = test_rank;
	rank_seq_moves = 0;

	/* Two of rank 0 (the youngest chain), oldest first. */
	ASSERT_EQ(NR - 7, kva_core_alloc(&self->c, &self->b, h, NR - 7,
					 false));
	EXPECT_EQ(1, rank_seq_moves);
	EXPECT_EQ(0, lookup_run(&self->c, &self->a, 20, 3, got));
	EXPECT_EQ(3, lookup_run(&self->c, &self->a, 0, 3, got));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, got, 3));
	EXPECT_EQ(3, lookup_run(&self->c, &self->a, 10, 3, got));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, got, 3));
	/* The last of rank 0, then rank 1's, then one of rank 2. */
	ASSERT_EQ(5, kva_core_alloc(&self->c, &self->b, h + NR - 7, 5, false));
	EXPECT_EQ(2, rank_seq_moves);
	EXPECT_EQ(0, lookup_run(&self->c, &self->a, 10, 3, got));
	EXPECT_EQ(2, self->c.nr_cached);
	/* Rank 2's, oldest first: keys 1 and 2 stay. */
	EXPECT_EQ(0, lookup_run(&self->c, &self->a, 0, 1, got));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->b, h, NR - 2));
	self->c.reclaim_rank = NULL;
}

TEST_F(core, reclaim_never_takes_a_held_frame)
{
	u64 h[NR], got[8], one;
	int i;

	/* Half the arena published and held by a, a quarter shared by b. */
	ASSERT_EQ(NR / 2, kva_core_alloc(&self->c, &self->a, h, NR / 2, false));
	ASSERT_EQ(NR / 2, publish(&self->c, &self->a, 0, h, NR / 2, NULL));
	ASSERT_EQ(8, lookup_run(&self->c, &self->b, 0, 8, got));
	EXPECT_EQ(NR / 2, kva_core_available(&self->c, &self->b));
	ASSERT_EQ(NR / 2, kva_core_alloc(&self->c, &self->b, h + NR / 2,
					 NR / 2, false));
	EXPECT_EQ(-ENOSPC, kva_core_alloc(&self->c, &self->b, &one, 1, false));
	EXPECT_EQ(0, kva_core_reclaim(&self->c, NR));
	EXPECT_EQ(0, self->c.cache_reclaims);
	EXPECT_EQ(NR / 2, self->c.nr_published);
	/* a lets go: the frames b shares stay, the others are cached. */
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, h, NR / 2));
	EXPECT_EQ(NR / 2 - 8, self->c.nr_cached);
	ASSERT_EQ(NR / 2 - 8, kva_core_alloc(&self->c, &self->a, h, NR, true));
	EXPECT_EQ(NR / 2 - 8, self->c.cache_reclaims);
	for (i = 0; i < 8; i++)
		EXPECT_LE(0, kva_core_lookup(&self->c, &self->b, got[i]));
	EXPECT_EQ(8, lookup_run(&self->c, &self->a, 0, 8, h + NR / 2));
	EXPECT_EQ(0, kva_core_check(&self->c));
}

TEST_F(core, first_published_frame_wins_a_key)
{
	u64 first, second, got;
	u32 flags;

	ASSERT_EQ(1, kva_core_alloc(&self->c, &self->a, &first, 1, false));
	ASSERT_EQ(1, kva_core_alloc(&self->c, &self->b, &second, 1, false));
	ASSERT_EQ(1, publish(&self->c, &self->a, 42, &first, 1, &flags));
	EXPECT_EQ(0, flags);
	ASSERT_EQ(0, publish(&self->c, &self->b, 42, &second, 1, &flags));
	EXPECT_EQ(KVA_PREFIX_EXISTED, flags);
	EXPECT_EQ(1, self->c.nr_published);
	EXPECT_EQ(KVA_ACCESS_WRITE, kva_core_frame_access(
			  &self->c, &self->b, KVA_HANDLE_IDX(second)));
	ASSERT_EQ(1, lookup_run(&self->c, &self->b, 42, 1, &got));
	EXPECT_EQ(first, got);
	/* The loser is a private frame: it goes back to the free list. */
	ASSERT_EQ(0, kva_core_free(&self->c, &self->b, &second, 1));
	EXPECT_EQ(NR - 1, self->c.nr_free);
	/* Publishing a frame again under its own key changes nothing. */
	ASSERT_EQ(0, publish(&self->c, &self->a, 42, &first, 1, &flags));
	EXPECT_EQ(0, flags);
	EXPECT_EQ(1, self->c.nr_published);
	ASSERT_EQ(0, kva_core_free(&self->c, &self->b, &got, 1));
}

TEST_F(core, publish_of_a_frame_not_held_is_refused)
{
	u64 h, other, stale;

	ASSERT_EQ(1, kva_core_alloc(&self->c, &self->a, &h, 1, false));
	ASSERT_EQ(1, kva_core_alloc(&self->c, &self->a, &stale, 1, false));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, &stale, 1));
	EXPECT_EQ(-EPERM, publish(&self->c, &self->b, 1, &h, 1, NULL));
	EXPECT_EQ(-ESTALE, publish(&self->c, &self->a, 1, &stale, 1, NULL));
	other = KVA_HANDLE(1, NR - 1);	/* never handed out */
	EXPECT_EQ(-ENOENT, publish(&self->c, &self->a, 1, &other, 1, NULL));
	other = KVA_HANDLE(1, NR + 5);
	EXPECT_EQ(-ENOENT, publish(&self->c, &self->a, 1, &other, 1, NULL));
	EXPECT_EQ(0, self->c.nr_published);
	/* Cached: nobody holds it. */
	ASSERT_EQ(1, publish(&self->c, &self->a, 1, &h, 1, NULL));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, &h, 1));
	EXPECT_EQ(-ENOENT, publish(&self->c, &self->a, 1, &h, 1, NULL));
}

TEST_F(core, publish_errors_change_nothing)
{
	struct kva_core_prefix e[3];
	u64 h[3];

	ASSERT_EQ(3, kva_core_alloc(&self->c, &self->a, h, 3, false));
	ASSERT_EQ(1, publish(&self->c, &self->a, 1, h, 1, NULL));
	/* h[0] again under another key: EBUSY, and h[1], h[2] untouched. */
	set_key(e[0].key, 2);
	e[0].handle = h[1];
	set_key(e[1].key, 3);
	e[1].handle = h[2];
	set_key(e[2].key, 4);
	e[2].handle = h[0];
	EXPECT_EQ(-EBUSY, kva_core_publish(&self->c, &self->a, e, 3));
	EXPECT_EQ(1, self->c.nr_published);
	/* A frame twice. */
	e[2].handle = h[1];
	EXPECT_EQ(-EINVAL, kva_core_publish(&self->c, &self->a, e, 3));
	/* A key of zeros. */
	e[2].handle = h[0];
	memset(e[1].key, 0, KVA_KEY_LEN);
	EXPECT_EQ(-EINVAL, kva_core_publish(&self->c, &self->a, e, 3));
	EXPECT_EQ(-EINVAL, kva_core_publish(&self->c, &self->a, e, 0));
	EXPECT_EQ(-EINVAL, kva_core_prefix_lookup(&self->c, &self->a, e, 2));
	EXPECT_EQ(-EINVAL, kva_core_prefix_lookup(&self->c, &self->a, e, 0));
	EXPECT_EQ(1, self->c.nr_published);
	EXPECT_EQ(KVA_ACCESS_WRITE, kva_core_frame_access(
			  &self->c, &self->a, KVA_HANDLE_IDX(h[1])));
	EXPECT_EQ(0, kva_core_check(&self->c));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, h, 3));
}

TEST_F(core, lookup_beyond_max_is_enospc_and_takes_nothing)
{
	struct kva_core_client l;
	u64 h[4], got[4];

	ASSERT_EQ(0, kva_core_attach(&self->c, &l, 0, 3));
	ASSERT_EQ(4, kva_core_alloc(&self->c, &self->a, h, 4, false));
	ASSERT_EQ(4, publish(&self->c, &self->a, 20, h, 4, NULL));
	ASSERT_EQ(1, kva_core_alloc(&self->c, &l, got, 1, false));
	EXPECT_EQ(-ENOSPC, lookup_run(&self->c, &l, 20, 3, got + 1));
	EXPECT_EQ(1, l.held);
	EXPECT_EQ(0, self->c.holds_used);
	EXPECT_EQ(0, self->c.cache_hits);
	EXPECT_EQ(2, lookup_run(&self->c, &l, 20, 2, got + 1));
	EXPECT_EQ(3, l.held);
	EXPECT_EQ(0, kva_core_check(&self->c));
	kva_core_detach(&self->c, &l);
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, h, 4));
}

TEST_F(core, cached_frames_cover_a_min_and_are_reclaimed_for_it)
{
	struct kva_core_client g;
	u64 h[NR], got[NR];

	ASSERT_EQ(NR, kva_core_alloc(&self->c, &self->a, h, NR, false));
	ASSERT_EQ(NR / 2, publish(&self->c, &self->a, 0, h, NR / 2, NULL));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, h, NR / 2));
	EXPECT_EQ(0, self->c.nr_free);
	/* Half the arena is cached: a min of half is granted at once. */
	EXPECT_EQ(-ENOSPC, kva_core_attach(&self->c, &g, NR / 2 + 1, 0));
	ASSERT_EQ(0, kva_core_attach(&self->c, &g, NR / 2, 0));
	/* Nobody else may revive or reclaim the reserved frames... */
	EXPECT_EQ(0, kva_core_available(&self->c, &self->b));
	EXPECT_EQ(-ENOSPC, lookup_run(&self->c, &self->b, 0, 1, got));
	/* ...but the guaranteed client gets them, reviving and reclaiming. */
	ASSERT_EQ(4, lookup_run(&self->c, &g, 0, 4, got));
	EXPECT_EQ(NR / 2 - 4, self->c.unmet_min);
	ASSERT_EQ(NR / 2 - 4, kva_core_alloc(&self->c, &g, got + 4,
					     NR / 2 - 4, false));
	EXPECT_EQ(NR / 2 - 4, self->c.cache_reclaims);
	EXPECT_EQ(0, self->c.unmet_min);
	EXPECT_EQ(0, kva_core_check(&self->c));
	kva_core_detach(&self->c, &g);
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, h + NR / 2, NR / 2));
}

TEST_F(core, the_charge_stays_while_others_hold_the_frame)
{
	struct kva_core_client g;
	u64 h[4], got[NR], one;

	ASSERT_EQ(0, kva_core_attach(&self->c, &g, 4, 0));
	ASSERT_EQ(4, kva_core_alloc(&self->c, &g, h, 4, false));
	ASSERT_EQ(4, publish(&self->c, &g, 0, h, 4, NULL));
	ASSERT_EQ(4, lookup_run(&self->c, &self->b, 0, 4, got));
	/* g lets go, but b still uses the frames g brought in. */
	ASSERT_EQ(0, kva_core_free(&self->c, &g, h, 4));
	EXPECT_EQ(0, g.held);
	EXPECT_EQ(4, g.charged);
	EXPECT_EQ(0, self->c.unmet_min);
	/* The rest of the arena is for others: g's min is spent on them. */
	EXPECT_EQ(NR - 4, kva_core_available(&self->c, &self->a));
	ASSERT_EQ(NR - 4, kva_core_alloc(&self->c, &self->a, got, NR - 4,
					 false));
	EXPECT_EQ(0, kva_core_check(&self->c));
	/* b lets go: the frames are cached and g's min is reserved again. */
	ASSERT_EQ(0, kva_core_free(&self->c, &self->b,
				   (u64[]){ h[0], h[1], h[2], h[3] }, 4));
	EXPECT_EQ(0, g.charged);
	EXPECT_EQ(4, self->c.unmet_min);
	EXPECT_EQ(4, self->c.nr_cached);
	EXPECT_EQ(-ENOSPC, kva_core_alloc(&self->c, &self->a, &one, 1, false));
	ASSERT_EQ(4, kva_core_alloc(&self->c, &g, h, 4, false));
	EXPECT_EQ(4, self->c.cache_reclaims);
	EXPECT_EQ(0, kva_core_check(&self->c));
	kva_core_detach(&self->c, &g);
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, got, NR - 4));
}

TEST_F(core, detach_moves_the_charge_to_a_remaining_holder)
{
	struct kva_core_client d, g;
	u64 h[3], got[3];

	ASSERT_EQ(0, kva_core_attach(&self->c, &d, 0, 0));
	ASSERT_EQ(0, kva_core_attach(&self->c, &g, 5, 0));
	ASSERT_EQ(3, kva_core_alloc(&self->c, &d, h, 3, false));
	ASSERT_EQ(3, publish(&self->c, &d, 0, h, 3, NULL));
	ASSERT_EQ(2, lookup_run(&self->c, &g, 0, 2, got));
	EXPECT_EQ(0, g.charged);
	EXPECT_EQ(5, self->c.unmet_min);
	EXPECT_EQ(3, kva_core_detach(&self->c, &d));
	/* g holds two: now charged for them; the third is cached. */
	EXPECT_EQ(2, g.charged);
	EXPECT_EQ(2, g.held);
	EXPECT_EQ(0, g.shared);
	EXPECT_EQ(3, self->c.unmet_min);
	EXPECT_EQ(1, self->c.nr_cached);
	EXPECT_EQ(0, self->c.holds_used);
	EXPECT_EQ(0, kva_core_check(&self->c));
	EXPECT_EQ(2, kva_core_detach(&self->c, &g));
	EXPECT_EQ(3, self->c.nr_cached);
	EXPECT_EQ(0, self->c.unmet_min);
}

TEST_F(core, a_published_frame_keeps_its_handle_until_reclaimed)
{
	u64 h, got, all[NR];

	ASSERT_EQ(1, kva_core_alloc(&self->c, &self->a, &h, 1, false));
	ASSERT_EQ(1, publish(&self->c, &self->a, 3, &h, 1, NULL));
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, &h, 1));
	ASSERT_EQ(1, lookup_run(&self->c, &self->a, 3, 1, &got));
	EXPECT_EQ(h, got);
	ASSERT_EQ(0, kva_core_free(&self->c, &self->a, &got, 1));
	ASSERT_EQ(NR, kva_core_alloc(&self->c, &self->b, all, NR, false));
	EXPECT_EQ(1, self->c.cache_reclaims);
	EXPECT_EQ(-ESTALE, kva_core_lookup(&self->c, &self->b, h));
	EXPECT_EQ(0, self->c.nr_published);
	ASSERT_EQ(0, kva_core_free(&self->c, &self->b, all, NR));
}

TEST_F(core, hold_records_grow_through_the_caller)
{
	struct kva_core_client cl[8];
	struct kva_core_prefix e[NR];
	struct kva_hold *recs, *ret;
	u64 h[NR];
	u32 i, j, need, before = self->c.nr_holds;

	ASSERT_EQ(NR, kva_core_alloc(&self->c, &self->a, h, NR, false));
	ASSERT_EQ(NR, publish(&self->c, &self->a, 0, h, NR, NULL));
	/* The first 64 records are made at init. */
	EXPECT_EQ(64, before);
	EXPECT_EQ(0, kva_core_holds_need(&self->c, 64));
	for (j = 0; j < NR; j++)
		set_key(e[j].key, j);
	ASSERT_EQ(NR, kva_core_prefix_lookup(&self->c, &self->b, e, NR));
	need = kva_core_holds_need(&self->c, NR);
	EXPECT_EQ(128, need);
	ASSERT_EQ(0, kva_core_attach(&self->c, &cl[0], 0, 0));
	/* Without records, LOOKUP refuses and changes nothing. */
	EXPECT_EQ(-ENOMEM, kva_core_prefix_lookup(&self->c, &cl[0], e, NR));
	EXPECT_EQ(0, cl[0].held);
	/* A grow that lost a race hands its memory back. */
	recs = kva_core_holds_alloc(32);
	ASSERT_NE(NULL, recs);
	EXPECT_EQ(recs, kva_core_holds_grow(&self->c, recs, 32));
	kva_core_holds_free(recs);
	recs = kva_core_holds_alloc(need);
	ASSERT_NE(NULL, recs);
	ret = kva_core_holds_grow(&self->c, recs, need);
	EXPECT_NE(recs, ret);
	kva_core_holds_free(ret);
	EXPECT_EQ(0, kva_core_check(&self->c));
	ASSERT_EQ(NR, kva_core_prefix_lookup(&self->c, &cl[0], e, NR));
	for (i = 1; i < 8; i++) {
		ASSERT_EQ(0, kva_core_attach(&self->c, &cl[i], 0, 0));
		ASSERT_EQ(NR, lookup_run(&self->c, &cl[i], 0, NR, h));
	}
	EXPECT_EQ(9 * NR, self->c.holds_used);
	EXPECT_EQ(NR, kva_core_held(&self->c));
	EXPECT_EQ(0, kva_core_check(&self->c));
	for (i = 0; i < 8; i++)
		EXPECT_EQ(NR, kva_core_detach(&self->c, &cl[i]));
	EXPECT_EQ(NR, self->c.holds_used);
	EXPECT_EQ(NR, self->b.shared);
}

/* ---- cache domains and clearing --------------------------------------------- */

/* Two clients in domains 1 and 2, with the clearing rule @clear. */
struct doms {
	struct kva_core c;
	struct kva_core_domain d1, d2;
	struct kva_core_client x, y;
	u32 released;
};

static void doms_release(struct kva_core *c, struct kva_core_domain *d)
{
	struct doms *t = (struct doms *)c;

	t->released++;
	(void)d;
}

static int doms_init(struct doms *t, u32 clear)
{
	memset(t, 0, sizeof(*t));
	if (kva_core_init(&t->c, NR))
		return -1;
	t->c.clear = clear;
	t->c.dom_release = doms_release;
	t->d1 = (struct kva_core_domain){ .id = 1, .dirty_head = KVA_NIL,
					  .lru_head = KVA_NIL,
					  .lru_tail = KVA_NIL };
	t->d2 = (struct kva_core_domain){ .id = 2, .dirty_head = KVA_NIL,
					  .lru_head = KVA_NIL,
					  .lru_tail = KVA_NIL };
	if (kva_core_attach_domain(&t->c, &t->x, 0, 0, &t->d1) ||
	    kva_core_attach_domain(&t->c, &t->y, 0, 0, &t->d2))
		return -1;
	return 0;
}

TEST(the_same_key_in_two_domains_is_two_entries)
{
	struct doms t;
	u64 hx[2], hy[2], got[2];
	u32 flags[2];

	ASSERT_EQ(0, doms_init(&t, KVA_CLEAR_NONE));
	ASSERT_EQ(2, kva_core_alloc(&t.c, &t.x, hx, 2, false));
	ASSERT_EQ(2, publish(&t.c, &t.x, 500, hx, 2, NULL));
	/* Another domain finds nothing, and counts a miss of its own. */
	EXPECT_EQ(0, lookup_run(&t.c, &t.y, 500, 2, got));
	EXPECT_EQ(0, t.d2.hits);
	EXPECT_EQ(2, t.d2.misses);
	EXPECT_EQ(0, t.d1.misses);
	/* Its own publication of the key is a second entry, not EXISTED. */
	ASSERT_EQ(2, kva_core_alloc(&t.c, &t.y, hy, 2, false));
	ASSERT_EQ(2, publish(&t.c, &t.y, 500, hy, 2, flags));
	EXPECT_EQ(0, flags[0]);
	EXPECT_EQ(4, t.c.nr_published);
	EXPECT_EQ(2, t.d1.published);
	EXPECT_EQ(2, t.d2.published);
	/* Each domain finds its own frames. */
	ASSERT_EQ(2, lookup_run(&t.c, &t.y, 500, 2, got));
	EXPECT_EQ(hy[0], got[0]);
	EXPECT_EQ(2, t.d2.hits);
	ASSERT_EQ(0, kva_core_free(&t.c, &t.x, hx, 2));
	EXPECT_EQ(2, t.d1.cached);
	EXPECT_EQ(0, kva_core_check(&t.c));
	kva_core_detach(&t.c, &t.x);
	kva_core_detach(&t.c, &t.y);
	EXPECT_EQ(0, kva_core_check(&t.c));
	/* Cached frames keep their domain alive; dropping them lets go. */
	EXPECT_EQ(0, t.released);
	kva_core_drop_cache(&t.c);
	EXPECT_EQ(2, t.released);
	EXPECT_EQ(0, kva_core_check(&t.c));
	kva_core_fini(&t.c);
}

TEST(a_dirty_frame_goes_back_to_its_domain_and_to_no_other_uncleared)
{
	struct doms t;
	u64 h[NR], one;
	u32 idx[NR], n;

	ASSERT_EQ(0, doms_init(&t, KVA_CLEAR_DOMAIN));
	ASSERT_EQ(NR, kva_core_alloc(&t.c, &t.x, h, NR, false));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.x, h, NR));
	EXPECT_EQ(NR, t.c.nr_free);
	EXPECT_EQ(NR, t.c.nr_dirty);
	EXPECT_EQ(0, kva_core_clean(&t.c));
	EXPECT_EQ(0, kva_core_check(&t.c));
	/* Its own domain takes them as they are, the last freed first. */
	ASSERT_EQ(1, kva_core_alloc(&t.c, &t.x, &one, 1, false));
	EXPECT_EQ(KVA_HANDLE_IDX(h[NR - 1]), KVA_HANDLE_IDX(one));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.x, &one, 1));
	/* Another domain must wait for clearing, and takes nothing. */
	EXPECT_EQ(-EAGAIN, kva_core_alloc(&t.c, &t.y, &one, 1, false));
	EXPECT_EQ(0, t.y.held);
	EXPECT_EQ(0, t.c.alloc_calls - t.x.alloc_calls);
	/* What a clearer takes is not its own domain's... */
	EXPECT_EQ(0, kva_core_take_dirty(&t.c, &t.x, idx, NR));
	/* ...and stays free meanwhile. */
	n = kva_core_take_dirty(&t.c, &t.y, idx, 3);
	ASSERT_EQ(3, n);
	EXPECT_EQ(NR, t.c.nr_free);
	EXPECT_EQ(3, t.c.nr_cleaning);
	EXPECT_EQ(0, kva_core_check(&t.c));
	EXPECT_EQ(-EAGAIN, kva_core_alloc(&t.c, &t.y, &one, 1, false));
	kva_core_put_clean(&t.c, idx, n);
	EXPECT_EQ(3, kva_core_clean(&t.c));
	EXPECT_EQ(3, t.c.frames_cleaned);
	ASSERT_EQ(3, kva_core_alloc(&t.c, &t.y, h, 3, false));
	EXPECT_EQ(-EAGAIN, kva_core_alloc(&t.c, &t.y, &one, 1, true));
	EXPECT_EQ(0, kva_core_check(&t.c));
	/* Freed by y, they are y's dirty frames now. */
	ASSERT_EQ(0, kva_core_free(&t.c, &t.y, h, 3));
	EXPECT_EQ(3, t.d2.nr_dirty);
	EXPECT_EQ(NR - 3, t.d1.nr_dirty);
	/* An anonymous clearer (the worker) takes any domain's. */
	EXPECT_EQ(NR, kva_core_take_dirty(&t.c, NULL, idx, NR));
	kva_core_put_clean(&t.c, idx, NR);
	EXPECT_EQ(NR, kva_core_clean(&t.c));
	EXPECT_EQ(0, kva_core_check(&t.c));
	kva_core_detach(&t.c, &t.x);
	kva_core_detach(&t.c, &t.y);
	EXPECT_EQ(2, t.released);
	kva_core_fini(&t.c);
}

static bool pick_even(const void *arg, u32 idx)
{
	(void)arg;
	return !(idx % 2);
}

static bool never_clear(struct kva_core *c, u32 idx)
{
	(void)c;
	(void)idx;
	return false;
}

TEST(quarantine_takes_every_dirty_frame_and_the_clean_ones_picked)
{
	struct doms t;
	u64 h[NR], one;
	u32 idx[NR], n, i, clean;

	ASSERT_EQ(0, doms_init(&t, KVA_CLEAR_DOMAIN));
	ASSERT_EQ(3, kva_core_alloc(&t.c, &t.x, h, 3, false));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.x, h, 3));
	/* may_clear() says no: a quarantine takes them all the same. */
	t.c.may_clear = never_clear;
	EXPECT_EQ(0, kva_core_take_dirty(&t.c, NULL, idx, NR));
	clean = kva_core_clean(&t.c);
	n = kva_core_quarantine(&t.c, NULL, NULL);
	EXPECT_EQ(3, n);
	EXPECT_EQ(0, t.c.nr_dirty);
	EXPECT_EQ(3, t.c.nr_cleaning);
	EXPECT_EQ(clean, kva_core_clean(&t.c));
	EXPECT_EQ(NR, t.c.nr_free);
	EXPECT_EQ(0, kva_core_check(&t.c));
	/* Then the clean frames picked: the even ones not taken yet. */
	n = kva_core_quarantine(&t.c, pick_even, NULL);
	for (i = 0, clean = 0; i < NR; i++)
		clean += t.c.frames[i].flags != KVA_FRAME_CLEANING;
	EXPECT_EQ(NR - 3 - n, clean);
	for (i = 0; i < NR; i++)
		if (!(i % 2))
			EXPECT_EQ(KVA_FRAME_CLEANING, t.c.frames[i].flags);
	EXPECT_EQ(0, kva_core_check(&t.c));
	/* Nobody gets them until they are given back clean. */
	EXPECT_EQ(clean, kva_core_clean(&t.c));
	for (i = 0, n = 0; i < NR; i++)
		if (t.c.frames[i].flags == KVA_FRAME_CLEANING)
			idx[n++] = i;
	kva_core_put_clean(&t.c, idx, n);
	EXPECT_EQ(NR, kva_core_clean(&t.c));
	ASSERT_EQ(1, kva_core_alloc(&t.c, &t.y, &one, 1, false));
	EXPECT_EQ(0, kva_core_check(&t.c));
	kva_core_detach(&t.c, &t.x);
	kva_core_detach(&t.c, &t.y);
	kva_core_fini(&t.c);
}

TEST(a_reclaimed_frame_is_dirty_for_other_domains)
{
	struct doms t;
	u64 h[NR], got[NR];
	u32 idx[NR];

	ASSERT_EQ(0, doms_init(&t, KVA_CLEAR_DOMAIN));
	ASSERT_EQ(NR, kva_core_alloc(&t.c, &t.x, h, NR, false));
	ASSERT_EQ(NR, publish(&t.c, &t.x, 700, h, NR, NULL));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.x, h, NR));
	EXPECT_EQ(NR, t.c.nr_cached);
	/* y's ALLOC reclaims them, but may not have them as they are. */
	EXPECT_EQ(-EAGAIN, kva_core_alloc(&t.c, &t.y, got, 2, false));
	EXPECT_EQ(NR - 2, t.c.nr_cached);
	EXPECT_EQ(2, t.d1.reclaims);
	EXPECT_EQ(2, t.c.nr_dirty);
	EXPECT_EQ(2, kva_core_take_dirty(&t.c, &t.y, idx, NR));
	kva_core_put_clean(&t.c, idx, 2);
	ASSERT_EQ(2, kva_core_alloc(&t.c, &t.y, got, 2, false));
	EXPECT_EQ(0, kva_core_check(&t.c));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.y, got, 2));
	kva_core_detach(&t.c, &t.x);
	kva_core_detach(&t.c, &t.y);
	kva_core_drop_cache(&t.c);
	EXPECT_EQ(0, kva_core_check(&t.c));
	kva_core_fini(&t.c);
}

TEST(a_domain_past_its_cache_cap_loses_its_own_oldest_first)
{
	struct doms t;
	u64 hx[8], hy[2], got[2];

	ASSERT_EQ(0, doms_init(&t, KVA_CLEAR_NONE));
	t.c.dom_cached_max = 4;
	/* y's two cached frames, older than anything of x's. */
	ASSERT_EQ(2, kva_core_alloc(&t.c, &t.y, hy, 2, false));
	ASSERT_EQ(2, publish(&t.c, &t.y, 900, hy, 2, NULL));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.y, hy, 2));
	/* x caches eight: its first four go, y's stay. */
	ASSERT_EQ(8, kva_core_alloc(&t.c, &t.x, hx, 8, false));
	ASSERT_EQ(8, publish(&t.c, &t.x, 800, hx, 8, NULL));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.x, hx, 8));
	EXPECT_EQ(4, t.d1.cached);
	EXPECT_EQ(2, t.d2.cached);
	EXPECT_EQ(4, t.d1.reclaims);
	EXPECT_EQ(0, t.d2.reclaims);
	EXPECT_EQ(0, lookup_run(&t.c, &t.x, 800, 2, got));
	EXPECT_EQ(2, lookup_run(&t.c, &t.x, 804, 2, got));
	EXPECT_EQ(2, lookup_run(&t.c, &t.y, 900, 2, got));
	EXPECT_EQ(0, kva_core_check(&t.c));
	/* A lower cap trims at once. */
	t.c.dom_cached_max = 1;
	EXPECT_EQ(1, kva_core_trim_domain(&t.c, &t.d1));
	EXPECT_EQ(1, t.d1.cached);
	kva_core_detach(&t.c, &t.x);
	kva_core_detach(&t.c, &t.y);
	EXPECT_EQ(0, kva_core_trim_domain(&t.c, &t.d2));
	t.c.dom_cached_max = 0;
	kva_core_drop_cache(&t.c);
	EXPECT_EQ(0, kva_core_check(&t.c));
	kva_core_fini(&t.c);
}

TEST(clear_always_clears_within_a_domain_too)
{
	struct doms t;
	u64 h[4];
	u32 idx[4];

	ASSERT_EQ(0, doms_init(&t, KVA_CLEAR_ALWAYS));
	ASSERT_EQ(4, kva_core_alloc(&t.c, &t.x, h, 4, false));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.x, h, 4));
	/* NR - 4 clean ones first, then nothing until these are cleared. */
	ASSERT_EQ(NR - 4, kva_core_alloc(&t.c, &t.x, (u64[NR]){ 0 }, NR - 4,
					 false));
	EXPECT_EQ(-EAGAIN, kva_core_alloc(&t.c, &t.x, h, 1, false));
	EXPECT_EQ(4, kva_core_take_dirty(&t.c, &t.x, idx, 4));
	kva_core_put_clean(&t.c, idx, 4);
	EXPECT_EQ(1, kva_core_alloc(&t.c, &t.x, h, 1, false));
	EXPECT_EQ(0, kva_core_check(&t.c));
	kva_core_detach(&t.c, &t.x);
	kva_core_detach(&t.c, &t.y);
	kva_core_fini(&t.c);
}

/* ---- resizing ----------------------------------------------------------------- */

struct resize {
	struct kva_core c;
	struct kva_core_client a, b;
	u32 retired[NR];
	u32 nr_retired;
};

static void resize_retired(struct kva_core *c, u32 idx)
{
	struct resize *t = (struct resize *)c;

	t->retired[t->nr_retired++] = idx;
}

static int resize_init(struct resize *t, u32 min_a)
{
	memset(t, 0, sizeof(*t));
	if (kva_core_init(&t->c, NR))
		return -1;
	t->c.retired = resize_retired;
	if (kva_core_attach(&t->c, &t->a, min_a, 0) ||
	    kva_core_attach(&t->c, &t->b, 0, 0))
		return -1;
	return 0;
}

/* kva_core_shrink(): the frames taken out now, or its error. */
static int shrink(struct kva_core *c, u32 n)
{
	u32 taken = 0;
	int ret = kva_core_shrink(c, n, &taken);

	return ret ? ret : (int)taken;
}

/* Detach both, check that every frame is back, free the core. */
static int resize_fini(struct resize *t)
{
	u32 idx[NR];
	int ret = 0;

	kva_core_detach(&t->c, &t->a);
	kva_core_detach(&t->c, &t->b);
	kva_core_shrink_cancel(&t->c);
	kva_core_grow(&t->c, NR, idx);
	kva_core_drop_cache(&t->c);
	if (t->c.nr_free != NR || t->c.nr_absent || kva_core_check(&t->c))
		ret = -1;
	kva_core_fini(&t->c);
	return ret;
}

TEST(shrink_takes_free_frames_at_once_and_grow_brings_them_back)
{
	struct resize t;
	u32 idx[NR], i;
	u64 h[NR];

	ASSERT_EQ(0, resize_init(&t, 0));
	ASSERT_EQ(NR / 2, shrink(&t.c, NR / 2));
	EXPECT_EQ(NR / 2, t.nr_retired);
	EXPECT_EQ(NR / 2, t.c.nr_absent);
	EXPECT_EQ(NR / 2, kva_core_capacity(&t.c));
	EXPECT_EQ(0, t.c.shrink_pending);
	EXPECT_EQ(0, kva_core_check(&t.c));
	/* The arena is half as large: half can be had, no more. */
	EXPECT_EQ(NR / 2, kva_core_available(&t.c, &t.a));
	EXPECT_EQ(-ENOSPC, kva_core_alloc(&t.c, &t.a, h, NR / 2 + 1, false));
	ASSERT_EQ(NR / 2, kva_core_alloc(&t.c, &t.a, h, NR / 2, false));
	/* No frame taken out is handed out. */
	for (i = 0; i < NR / 2; i++)
		EXPECT_EQ(KVA_FRAME_ABSENT, t.c.frames[t.retired[i]].flags);
	ASSERT_EQ(0, kva_core_free(&t.c, &t.a, h, NR / 2));
	/* Grow: the same frames come back, free. */
	ASSERT_EQ(NR / 2, kva_core_grow(&t.c, NR / 2, idx));
	EXPECT_EQ(NR, kva_core_capacity(&t.c));
	EXPECT_EQ(NR, t.c.nr_free);
	EXPECT_EQ(0, kva_core_check(&t.c));
	ASSERT_EQ(NR, kva_core_alloc(&t.c, &t.b, h, NR, false));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.b, h, NR));
	/* No more than the table: nothing to bring back. */
	EXPECT_EQ(0, kva_core_grow(&t.c, 1, idx));
	EXPECT_EQ(0, resize_fini(&t));
}

TEST(a_table_larger_than_the_arena_grows_into_chosen_frames)
{
	struct kva_core_client cl;
	struct kva_core c;
	u32 idx[4], rest[NR], i;
	u64 h[NR];

	EXPECT_EQ(-EINVAL, kva_core_init_max(&c, NR + 1, NR));
	EXPECT_EQ(-EINVAL, kva_core_init_max(&c, 0, NR));
	ASSERT_EQ(0, kva_core_init_max(&c, NR / 2, NR));
	EXPECT_EQ(NR, c.nr_frames);
	EXPECT_EQ(NR / 2, c.nr_absent);
	EXPECT_EQ(NR / 2, kva_core_capacity(&c));
	EXPECT_EQ(0, kva_core_check(&c));
	/* A max of 0 is the table, so a client keeps up with a grow. */
	ASSERT_EQ(0, kva_core_attach(&c, &cl, 0, 0));
	EXPECT_EQ(NR, cl.max);
	ASSERT_EQ(NR / 2, kva_core_alloc(&c, &cl, h, NR / 2, false));
	for (i = 0; i < NR / 2; i++)
		EXPECT_GT(NR / 2, KVA_HANDLE_IDX(h[i]));
	EXPECT_EQ(-ENOSPC, kva_core_alloc(&c, &cl, h + NR / 2, 1, false));
	/* Chosen frames, not the list's order; a bad list changes nothing. */
	idx[0] = NR - 1;
	idx[1] = NR / 2 + 3;
	idx[2] = NR - 1;
	EXPECT_EQ(-EINVAL, kva_core_grow_frames(&c, idx, 3));
	idx[2] = 0;			/* held, not absent */
	EXPECT_EQ(-EINVAL, kva_core_grow_frames(&c, idx, 3));
	idx[2] = NR;			/* past the table */
	EXPECT_EQ(-EINVAL, kva_core_grow_frames(&c, idx, 3));
	EXPECT_EQ(NR / 2, c.nr_absent);
	EXPECT_EQ(0, kva_core_check(&c));
	ASSERT_EQ(0, kva_core_grow_frames(&c, idx, 2));
	EXPECT_EQ(NR / 2 - 2, c.nr_absent);
	EXPECT_EQ(0, kva_core_check(&c));
	ASSERT_EQ(2, kva_core_alloc(&c, &cl, h + NR / 2, 2, false));
	EXPECT_EQ(NR / 2 + 3, KVA_HANDLE_IDX(h[NR / 2]));
	EXPECT_EQ(NR - 1, KVA_HANDLE_IDX(h[NR / 2 + 1]));
	/* The rest by the list: every absent frame, none twice. */
	ASSERT_EQ(NR / 2 - 2, kva_core_grow(&c, NR, rest));
	EXPECT_EQ(0, kva_core_check(&c));
	ASSERT_EQ(NR / 2 - 2,
		  kva_core_alloc(&c, &cl, h + NR / 2 + 2, NR / 2 - 2, false));
	EXPECT_EQ(NR, cl.held);
	ASSERT_EQ(0, kva_core_free(&c, &cl, h, NR));
	kva_core_detach(&c, &cl);
	EXPECT_EQ(0, kva_core_check(&c));
	kva_core_fini(&c);
}

TEST(shrink_never_takes_a_held_frame_and_waits_for_it)
{
	struct resize t;
	u64 h[NR], one;
	u32 i;

	ASSERT_EQ(0, resize_init(&t, 0));
	ASSERT_EQ(NR - 4, kva_core_alloc(&t.c, &t.a, h, NR - 4, false));
	/* 8 asked for, 4 free: 4 now, 4 awaited. */
	ASSERT_EQ(4, shrink(&t.c, 8));
	EXPECT_EQ(4, t.c.shrink_pending);
	EXPECT_EQ(NR - 8, kva_core_capacity(&t.c));
	for (i = 0; i < t.nr_retired; i++)
		EXPECT_EQ(0, t.c.frames[t.retired[i]].refs);
	EXPECT_EQ(0, kva_core_check(&t.c));
	/* What is awaited is nobody's to take. */
	EXPECT_EQ(0, kva_core_available(&t.c, &t.b));
	EXPECT_EQ(0, kva_core_headroom(&t.c));
	/* Frames freed go to the shrink until it is done, then back free. */
	ASSERT_EQ(0, kva_core_free(&t.c, &t.a, h, 3));
	EXPECT_EQ(1, t.c.shrink_pending);
	EXPECT_EQ(0, t.c.nr_free);
	EXPECT_EQ(-ENOSPC, kva_core_alloc(&t.c, &t.b, &one, 1, true));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.a, h + 3, 2));
	EXPECT_EQ(0, t.c.shrink_pending);
	EXPECT_EQ(1, t.c.nr_free);
	EXPECT_EQ(8, t.c.nr_absent);
	EXPECT_EQ(8, t.nr_retired);
	EXPECT_EQ(0, kva_core_check(&t.c));
	/* Their handles are stale, and stay so after a grow. */
	EXPECT_EQ(-ESTALE, kva_core_free(&t.c, &t.a, h, 1));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.a, h + 5, NR - 9));
	EXPECT_EQ(0, resize_fini(&t));
}

TEST(shrink_takes_cached_frames_after_free_ones_and_as_they_come)
{
	struct resize t;
	u64 mine[4], got[4];

	ASSERT_EQ(0, resize_init(&t, 0));
	ASSERT_EQ(4, kva_core_alloc(&t.c, &t.a, mine, 4, false));
	ASSERT_EQ(4, publish(&t.c, &t.a, 0, mine, 4, NULL));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.a, mine, 2));
	EXPECT_EQ(2, t.c.nr_cached);
	/* NR - 4 free, 2 cached: the free go first, then the oldest cached. */
	ASSERT_EQ(NR - 3, shrink(&t.c, NR - 3));
	EXPECT_EQ(0, t.c.nr_free);
	EXPECT_EQ(1, t.c.nr_cached);
	EXPECT_EQ(1, t.c.cache_reclaims);
	EXPECT_EQ(0, lookup_run(&t.c, &t.b, 0, 1, got));
	ASSERT_EQ(1, lookup_run(&t.c, &t.b, 1, 1, got));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.b, got, 1));
	EXPECT_EQ(1, t.c.nr_cached);
	/* Capacity 3, a holds 2: the cached one goes, the next is awaited. */
	ASSERT_EQ(1, shrink(&t.c, 2));
	EXPECT_EQ(0, t.c.nr_cached);
	EXPECT_EQ(1, t.c.shrink_pending);
	EXPECT_EQ(1, kva_core_capacity(&t.c));
	/* A frame that would be cached goes to the shrink instead. */
	ASSERT_EQ(0, kva_core_free(&t.c, &t.a, mine + 2, 1));
	EXPECT_EQ(0, t.c.shrink_pending);
	EXPECT_EQ(0, t.c.nr_cached);
	EXPECT_EQ(3, t.c.cache_reclaims);
	EXPECT_EQ(1, t.c.nr_published);
	EXPECT_EQ(NR - 1, t.c.nr_absent);
	EXPECT_EQ(NR - 1, t.nr_retired);
	EXPECT_EQ(0, kva_core_check(&t.c));
	/* The last one, published and held, stays cached when let go. */
	ASSERT_EQ(0, kva_core_free(&t.c, &t.a, mine + 3, 1));
	EXPECT_EQ(1, t.c.nr_cached);
	EXPECT_EQ(0, resize_fini(&t));
}

TEST(shrink_keeps_the_frames_an_unmet_minimum_counts_on)
{
	struct kva_core_client extra;
	struct resize t;
	u64 h[NR];

	/* a is guaranteed 16 and holds none: 16 free frames are its. */
	ASSERT_EQ(0, resize_init(&t, 16));
	EXPECT_EQ(-EBUSY, shrink(&t.c, NR - 15));
	EXPECT_EQ(0, t.c.nr_absent);
	EXPECT_EQ(-EINVAL, shrink(&t.c, NR));
	EXPECT_EQ(-EINVAL, shrink(&t.c, 0));
	ASSERT_EQ(0, kva_core_check(&t.c));
	/* b holds 40: of the 24 free, 16 are a's; 8 go now, 8 are awaited. */
	ASSERT_EQ(40, kva_core_alloc(&t.c, &t.b, h, 40, false));
	ASSERT_EQ(8, shrink(&t.c, 16));
	EXPECT_EQ(8, t.c.shrink_pending);
	EXPECT_EQ(16, t.c.nr_free);
	EXPECT_EQ(16, kva_core_available(&t.c, &t.a));
	EXPECT_EQ(0, kva_core_available(&t.c, &t.b));
	EXPECT_EQ(0, kva_core_check(&t.c));
	/* A minimum that the shrink's frames would have to cover: refused. */
	EXPECT_EQ(-ENOSPC, kva_core_attach(&t.c, &extra, 1, 0));
	EXPECT_EQ(0, kva_core_attach(&t.c, &extra, 0, 0));
	kva_core_detach(&t.c, &extra);
	/* a's minimum lowered: its free frames go to the shrink at once. */
	ASSERT_EQ(0, kva_core_set_limits(&t.c, &t.a, 8, 0));
	EXPECT_EQ(0, t.c.shrink_pending);
	EXPECT_EQ(8, t.c.nr_free);
	EXPECT_EQ(NR - 16, kva_core_capacity(&t.c));
	EXPECT_EQ(0, kva_core_check(&t.c));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.b, h, 40));
	EXPECT_EQ(0, resize_fini(&t));
}

TEST(limits_change_while_a_shrink_waits)
{
	struct resize t;
	u64 h[NR];

	ASSERT_EQ(0, resize_init(&t, 16));
	ASSERT_EQ(40, kva_core_alloc(&t.c, &t.b, h, 40, false));
	/* 24 free, 16 of them a's: 8 now, 9 awaited. */
	ASSERT_EQ(8, shrink(&t.c, 17));
	EXPECT_EQ(9, t.c.shrink_pending);
	/* Only b's max: nothing to reserve, so no room needed. */
	EXPECT_EQ(0, kva_core_set_limits(&t.c, &t.b, 0, 50));
	/* a's minimum lowered by less than what is awaited: 8 more go. */
	EXPECT_EQ(0, kva_core_set_limits(&t.c, &t.a, 8, 0));
	EXPECT_EQ(1, t.c.shrink_pending);
	EXPECT_EQ(8, t.c.nr_free);
	/* Raised again: the frames went to the shrink, none is left. */
	EXPECT_EQ(-ENOSPC, kva_core_set_limits(&t.c, &t.a, 9, 0));
	EXPECT_EQ(0, kva_core_check(&t.c));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.b, h, 40));
	EXPECT_EQ(0, t.c.shrink_pending);
	EXPECT_EQ(0, resize_fini(&t));
}

TEST(a_waiting_shrink_takes_the_oldest_cached_frame)
{
	u64 h[NR], mine[2], got[1];
	struct resize t;

	/* a's minimum of 2 is covered by its 2 cached frames. */
	ASSERT_EQ(0, resize_init(&t, 2));
	ASSERT_EQ(2, kva_core_alloc(&t.c, &t.a, mine, 2, false));
	ASSERT_EQ(2, publish(&t.c, &t.a, 0, mine, 2, NULL));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.a, mine, 2));
	ASSERT_EQ(NR - 2, kva_core_alloc(&t.c, &t.b, h, NR - 2, false));
	ASSERT_EQ(1, publish(&t.c, &t.b, 9, h, 1, NULL));
	ASSERT_EQ(0, shrink(&t.c, 1));
	EXPECT_EQ(1, t.c.shrink_pending);
	/* b's frame is cached, and the oldest, key 0, goes. */
	ASSERT_EQ(0, kva_core_free(&t.c, &t.b, h, 1));
	EXPECT_EQ(0, t.c.shrink_pending);
	EXPECT_EQ(2, t.c.nr_cached);
	/* Looked up by a, whose minimum the cached frames cover. */
	EXPECT_EQ(0, lookup_run(&t.c, &t.a, 0, 1, got));
	ASSERT_EQ(1, lookup_run(&t.c, &t.a, 9, 1, got));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.a, got, 1));
	EXPECT_EQ(0, kva_core_check(&t.c));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.b, h + 1, NR - 3));
	EXPECT_EQ(0, resize_fini(&t));
}

TEST(cancel_and_grow_end_a_shrink_that_waits)
{
	struct resize t;
	u32 idx[NR];
	u64 h[NR];

	ASSERT_EQ(0, resize_init(&t, 0));
	ASSERT_EQ(NR, kva_core_alloc(&t.c, &t.a, h, NR, false));
	ASSERT_EQ(0, shrink(&t.c, 10));
	EXPECT_EQ(10, kva_core_shrink_cancel(&t.c));
	EXPECT_EQ(NR, kva_core_capacity(&t.c));
	ASSERT_EQ(0, shrink(&t.c, 10));
	/* A grow first cuts what the shrink still waits for. */
	EXPECT_EQ(0, kva_core_grow(&t.c, 6, idx));
	EXPECT_EQ(4, t.c.shrink_pending);
	ASSERT_EQ(0, kva_core_free(&t.c, &t.a, h, 6));
	EXPECT_EQ(4, t.c.nr_absent);
	EXPECT_EQ(2, t.c.nr_free);
	ASSERT_EQ(4, kva_core_grow(&t.c, 8, idx));
	EXPECT_EQ(NR, kva_core_capacity(&t.c));
	EXPECT_EQ(0, kva_core_check(&t.c));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.a, h + 6, NR - 6));
	EXPECT_EQ(0, resize_fini(&t));
}

TEST(a_dirty_frame_is_taken_out_with_its_data_and_comes_back_clean)
{
	struct doms t;
	u32 idx[NR];
	u64 h[NR];

	ASSERT_EQ(0, doms_init(&t, KVA_CLEAR_DOMAIN));
	ASSERT_EQ(NR, kva_core_alloc(&t.c, &t.x, h, NR, false));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.x, h, NR));
	EXPECT_EQ(NR, t.c.nr_dirty);
	ASSERT_EQ(NR - 1, shrink(&t.c, NR - 1));
	EXPECT_EQ(1, t.c.nr_dirty);
	EXPECT_EQ(0, kva_core_check(&t.c));
	ASSERT_EQ(NR - 1, kva_core_grow(&t.c, NR - 1, idx));
	/* Back in, no domain's: the other domain may take them at once. */
	EXPECT_EQ(NR - 1, kva_core_clean(&t.c));
	ASSERT_EQ(NR - 1, kva_core_alloc(&t.c, &t.y, h, NR - 1, false));
	EXPECT_EQ(0, kva_core_check(&t.c));
	ASSERT_EQ(0, kva_core_free(&t.c, &t.y, h, NR - 1));
	kva_core_detach(&t.c, &t.x);
	kva_core_detach(&t.c, &t.y);
	EXPECT_EQ(0, kva_core_check(&t.c));
	kva_core_fini(&t.c);
}

TEST(key_index_stays_flat_at_a_million_entries)
{
	const u32 n = 1u << 20, batch = 4096;
	struct kva_core_prefix *e;
	struct kva_core_client cl;
	struct kva_core c;
	u64 *h, probes = 0;
	u32 i, b, idx, len, longest = 0;

	e = calloc(batch, sizeof(*e));
	h = calloc(n, sizeof(*h));
	ASSERT_NE(NULL, e);
	ASSERT_NE(NULL, h);
	ASSERT_EQ(0, kva_core_init(&c, n));
	ASSERT_EQ(n, c.hash_mask + 1);
	c.seed = 0x243f6a8885a308d3ull;	/* a fixed seed: a repeatable test */
	ASSERT_EQ(0, kva_core_attach(&c, &cl, 0, 0));
	ASSERT_EQ((int)n, kva_core_alloc(&c, &cl, h, n, false));
	for (i = 0; i < n; i += batch) {
		u32 j;

		for (j = 0; j < batch; j++) {
			set_key(e[j].key, i + j);
			e[j].handle = h[i + j];
		}
		ASSERT_EQ((int)batch, kva_core_publish(&c, &cl, e, batch));
	}
	EXPECT_EQ(n, c.nr_published);
	/*
	 * A key costs the walk of its bucket: with a bucket per frame that
	 * is 1 + load / 2 probes on average, and the longest chain of 2^20
	 * random keys is about 9.
	 */
	for (b = 0; b <= c.hash_mask; b++) {
		len = 0;
		for (idx = c.buckets[b]; idx != KVA_NIL; idx = c.frames[idx].hnext)
			probes += ++len;
		if (len > longest)
			longest = len;
	}
	EXPECT_LE(longest, 16);
	EXPECT_LT(probes, 2ull * n);
	TH_LOG("2^20 keys: %.3f probes per key found, longest chain %u",
	       (double)probes / n, longest);
	/* And every key finds its frame. */
	for (i = 0; i < n; i += 997) {
		set_key(e[0].key, i);
		ASSERT_EQ(1, kva_core_prefix_lookup(&c, &cl, e, 1));
		ASSERT_EQ(h[i], e[0].handle);
	}
	kva_core_detach(&c, &cl);
	EXPECT_EQ(n, c.nr_cached);
	EXPECT_EQ(n, kva_core_drop_cache(&c));
	kva_core_fini(&c);
	free(e);
	free(h);
}

/*
 * Random walk against a model: three clients with limits, random batch
 * allocs and frees (some with bad handles), publishes, chain lookups,
 * limit changes and re-attaches.  The model predicts every result, and
 * after every step each frame's holders, charge, key and place on the
 * LRU, each client's held, charged and shared counts, and every invariant
 * of kva_core_check() are compared.
 */
#define NCL	3
#define NKEYS	40

struct model {
	struct kva_core c;
	struct kva_core_client cl[NCL];
	u32 holders[NR];	/* bit i: client i holds the frame */
	int charge[NR];		/* client charged, -1 if none */
	int key[NR];		/* key the frame is published under, or -1 */
	int frame_of[NKEYS];	/* frame under the key, or -1 */
	u32 lru[NR];		/* cached frames, oldest first */
	u32 nr_lru;
	u32 seen_shared;	/* steps that ended with a frame shared */
	u32 seen_existed;	/* publishes that found the key taken */
	u32 seen_moved;		/* charges moved at detach */
};

static u64 rng_state = 0x9e3779b97f4a7c15ull;

/*
 * Tenures, as the owner sees them through their tags (kva_core_tag(),
 * struct kva_core.tag_ended): one begins with each frame
 * kva_core_alloc() hands out, tagged with its client's number + 1, and
 * must end exactly once, when the frame is free again (the module's dmem
 * charge).  m_tenure[] is the tag the model expects a frame to carry,
 * m_ended[] the ends it expects counted.
 */
#define M_TAGS (NCL + 1)
static u8 m_tenure[NR];
static u32 m_tag_ended[M_TAGS], m_ended[M_TAGS], m_returns;

static u32 rnd(u32 n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (u32)(rng_state % n);
}

static u32 m_count(const struct model *m, int x, bool charged)
{
	u32 f, n = 0;

	for (f = 0; f < NR; f++)
		n += charged ? m->charge[f] == x :
		     !!(m->holders[f] & (1u << x));
	return n;
}

static u32 m_unmet(const struct model *m, int x)
{
	u32 ch = m_count(m, x, true);

	return m->cl[x].min > ch ? m->cl[x].min - ch : 0;
}

static u32 m_unmet_sum(const struct model *m)
{
	u32 x, sum = 0;

	for (x = 0; x < NCL; x++)
		sum += m_unmet(m, x);
	return sum;
}

static u32 m_free(const struct model *m)
{
	u32 f, n = 0;

	for (f = 0; f < NR; f++)
		n += !m->holders[f] && m->key[f] < 0;
	return n;
}

/* What client @x may take from the free and cached frames. */
static u32 m_pool(const struct model *m, int x)
{
	return m_free(m) + m->nr_lru - (m_unmet_sum(m) - m_unmet(m, x));
}

static u64 m_handle(const struct model *m, u32 f)
{
	return KVA_HANDLE(m->c.frames[f].gen, f);
}

/* Frames @x holds, up to @max of them, in a random order. */
static u32 m_pick_held(const struct model *m, int x, u32 *out, u32 max)
{
	u32 f, n = 0, i;

	for (f = 0; f < NR; f++)
		if (m->holders[f] & (1u << x))
			out[n++] = f;
	for (i = 0; i + 1 < n; i++) {
		u32 j = i + rnd(n - i), t = out[i];

		out[i] = out[j];
		out[j] = t;
	}
	return n < max ? n : max;
}

/* @x's hold on frame @f went; the frame may become cached or free. */
static void m_drop(struct model *m, int x, u32 f)
{
	m->holders[f] &= ~(1u << x);
	if (m->holders[f])
		return;
	m->charge[f] = -1;
	if (m->key[f] >= 0)
		m->lru[m->nr_lru++] = f;
}

static void m_lru_del(struct model *m, u32 f)
{
	u32 i;

	for (i = 0; m->lru[i] != f; i++)
		;
	memmove(&m->lru[i], &m->lru[i + 1], (m->nr_lru - i - 1) * sizeof(u32));
	m->nr_lru--;
}

static void m_alloc(struct __test_metadata *_metadata, struct model *m,
		    int x)
{
	u32 k = 1 + rnd(8), held = m_count(m, x, false), j;
	u32 room = m->cl[x].max > held ? m->cl[x].max - held : 0;
	u32 avail = m_pool(m, x) < room ? m_pool(m, x) : room;
	bool partial = rnd(2);
	u64 buf[8];
	int ret;

	ret = kva_core_alloc(&m->c, &m->cl[x], buf, k, partial);
	if (k > avail && (!partial || !avail)) {
		ASSERT_EQ(-ENOSPC, ret);
		return;
	}
	ASSERT_EQ((int)(k <= avail ? k : avail), ret);
	kva_core_tag(&m->c, buf, ret, x + 1);
	/* What the free list lacked came from the oldest cached frames. */
	while (m_free(m) < (u32)ret) {
		u32 f = m->lru[0];

		m_lru_del(m, f);
		m->frame_of[m->key[f]] = -1;
		m->key[f] = -1;
		/* Its tenure ended there, before the new ones began. */
		m_ended[m_tenure[f]]++;
		m_returns++;
		m_tenure[f] = 0;
	}
	for (j = 0; j < (u32)ret; j++) {
		u32 f = KVA_HANDLE_IDX(buf[j]);

		ASSERT_LT(f, NR);
		ASSERT_EQ(0, m->holders[f]);
		ASSERT_EQ(-1, m->key[f]);
		ASSERT_EQ(0, m_tenure[f]);
		m_tenure[f] = x + 1;
		m->holders[f] = 1u << x;
		m->charge[f] = x;
	}
}

static void m_free_some(struct __test_metadata *_metadata, struct model *m,
			int x)
{
	u32 f[NR], n = m_pick_held(m, x, f, 1 + rnd(6)), i;
	u64 buf[NR];

	if (!n)
		return;
	for (i = 0; i < n; i++)
		buf[i] = m_handle(m, f[i]);
	if (rnd(4) == 0) {
		/* A batch with a bad handle in it changes nothing. */
		buf[n] = buf[0] ^ (1ull << 32);
		ASSERT_EQ(-ESTALE, kva_core_free(&m->c, &m->cl[x], buf, n + 1));
		return;
	}
	ASSERT_EQ(0, kva_core_free(&m->c, &m->cl[x], buf, n));
	for (i = 0; i < n; i++)
		m_drop(m, x, f[i]);
}

static void m_publish(struct __test_metadata *_metadata, struct model *m,
		      int x)
{
	struct kva_core_prefix e[4];
	u32 f[NR], n = m_pick_held(m, x, f, 1 + rnd(4)), i, want = 0;
	int ret, frame_of[NKEYS], busy = 0;

	if (!n)
		return;
	memcpy(frame_of, m->frame_of, sizeof(frame_of));
	for (i = 0; i < n; i++) {
		int k = (int)rnd(NKEYS);

		/* Mostly the frame's own key when it has one. */
		if (m->key[f[i]] >= 0 && rnd(4))
			k = m->key[f[i]];
		set_key(e[i].key, k);
		e[i].handle = m_handle(m, f[i]);
		busy |= m->key[f[i]] >= 0 && m->key[f[i]] != k;
	}
	ret = kva_core_publish(&m->c, &m->cl[x], e, n);
	if (busy) {
		ASSERT_EQ(-EBUSY, ret);
		return;
	}
	for (i = 0; i < n; i++) {
		int k;

		memcpy(&k, e[i].key + 1, sizeof(k));
		if (m->key[f[i]] == k) {
			ASSERT_EQ(0, e[i].flags);
		} else if (frame_of[k] >= 0) {
			ASSERT_EQ(KVA_PREFIX_EXISTED, e[i].flags);
			m->seen_existed++;
		} else {
			ASSERT_EQ(0, e[i].flags);
			frame_of[k] = (int)f[i];
			m->key[f[i]] = k;
			want++;
		}
	}
	memcpy(m->frame_of, frame_of, sizeof(frame_of));
	ASSERT_EQ((int)want, ret);
}

static void m_lookup(struct __test_metadata *_metadata, struct model *m,
		     int x)
{
	u32 n = 1 + rnd(6), keys[6], i, run, take = 0, revive = 0;
	u32 held = m_count(m, x, false), room;
	u32 start = rnd(NKEYS);
	u64 out[6];
	int ret;

	for (i = 0; i < n; i++)
		keys[i] = rnd(5) ? (start + i) % NKEYS : rnd(NKEYS);
	for (run = 0; run < n && m->frame_of[keys[run]] >= 0; run++) {
		u32 f = (u32)m->frame_of[keys[run]];

		for (i = 0; i < run; i++)
			if (m->frame_of[keys[i]] == (int)f)
				break;
		if (i < run)
			continue;	/* a key twice */
		if (!m->holders[f]) {
			revive++;
			take++;
		} else if (!(m->holders[f] & (1u << x))) {
			take++;
		}
	}
	room = m->cl[x].max > held ? m->cl[x].max - held : 0;
	ret = lookup(&m->c, &m->cl[x], keys, n, out);
	if (take > room || revive > m_pool(m, x)) {
		ASSERT_EQ(-ENOSPC, ret);
		return;
	}
	ASSERT_EQ((int)run, ret);
	for (i = 0; i < run; i++) {
		u32 f = (u32)m->frame_of[keys[i]];

		ASSERT_EQ(f, KVA_HANDLE_IDX(out[i]));
		if (!m->holders[f]) {
			m_lru_del(m, f);
			m->charge[f] = x;
		}
		m->holders[f] |= 1u << x;
	}
}

static void m_reattach(struct __test_metadata *_metadata, struct model *m,
		       int x)
{
	u32 f, i, old_lru = m->nr_lru, min, max, idx;
	int ret;

	ASSERT_EQ(m_count(m, x, false), kva_core_detach(&m->c, &m->cl[x]));
	m->cl[x].min = 0;
	for (f = 0; f < NR; f++) {
		if (!(m->holders[f] & (1u << x)) && m->charge[f] != x)
			continue;
		m->holders[f] &= ~(1u << x);
		if (m->holders[f]) {
			/* The charge went to one of the remaining holders. */
			struct kva_core_client *to = m->c.frames[f].charge;

			if (m->charge[f] != x)
				continue;
			for (i = 0; i < NCL && to != &m->cl[i]; i++)
				;
			ASSERT_LT(i, NCL);
			ASSERT_TRUE(m->holders[f] & (1u << i));
			m->charge[f] = (int)i;
			m->seen_moved++;
		} else {
			m->charge[f] = -1;
			if (m->key[f] >= 0)
				m->lru[m->nr_lru++] = f;
		}
	}
	/*
	 * The frames cached now follow the ones cached before, in an order
	 * of the core's lists: take it from the core.
	 */
	for (i = 0, idx = m->c.lru_head; i < m->nr_lru;
	     i++, idx = m->c.frames[idx].next) {
		ASSERT_NE(KVA_NIL, idx);
		if (i < old_lru) {
			ASSERT_EQ(m->lru[i], idx);
		} else {
			ASSERT_TRUE(!m->holders[idx] && m->key[idx] >= 0);
		}
	}
	for (i = 0, idx = m->c.lru_head; i < m->nr_lru;
	     i++, idx = m->c.frames[idx].next)
		m->lru[i] = idx;
	min = rnd(12);
	max = rnd(3) ? 0 : min + rnd(NR - min + 1);
	ret = kva_core_attach(&m->c, &m->cl[x], min, max);
	if (min > m_pool(m, x)) {
		ASSERT_EQ(-ENOSPC, ret);
		ASSERT_EQ(0, kva_core_attach(&m->c, &m->cl[x], 0, max));
	} else {
		ASSERT_EQ(0, ret);
	}
}

static void m_set_limits(struct __test_metadata *_metadata, struct model *m,
			 int x)
{
	u32 min = rnd(16), max = min + rnd(NR - min + 1);
	u32 ch = m_count(m, x, true), need = min > ch ? min - ch : 0;
	int ret = kva_core_set_limits(&m->c, &m->cl[x], min, max);

	if (need > m_pool(m, x)) {
		ASSERT_EQ(-ENOSPC, ret);
	} else {
		ASSERT_EQ(0, ret);
		ASSERT_EQ(min, m->cl[x].min);
	}
}

static void m_compare(struct __test_metadata *_metadata, struct model *m)
{
	u32 f, x, idx, i, cached = 0, published = 0;
	bool shared_now = false;

	ASSERT_EQ(0, kva_core_check(&m->c));
	for (f = 0; f < NR; f++) {
		const struct kva_frame *fr = &m->c.frames[f];
		u8 k[KVA_KEY_LEN];

		ASSERT_EQ(__builtin_popcount(m->holders[f]), fr->refs);
		ASSERT_EQ(m->charge[f] < 0 ? NULL : &m->cl[m->charge[f]],
			  fr->charge);
		ASSERT_EQ(m->key[f] >= 0,
			  !!(fr->flags & KVA_FRAME_PUBLISHED));
		ASSERT_EQ(m->key[f] >= 0 && !m->holders[f],
			  !!(fr->flags & KVA_FRAME_CACHED));
		if (__builtin_popcount(m->holders[f]) > 1)
			shared_now = true;
		for (x = 0; x < NCL; x++)
			ASSERT_EQ(!(m->holders[f] & (1u << x)) ? KVA_ACCESS_NONE :
				  m->key[f] >= 0 ? KVA_ACCESS_READ :
				  KVA_ACCESS_WRITE,
				  kva_core_frame_access(&m->c, &m->cl[x], f));
		if (m->key[f] >= 0) {
			set_key(k, m->key[f]);
			ASSERT_EQ(0, memcmp(k, m->c.keys[f], KVA_KEY_LEN));
			ASSERT_EQ((int)f, m->frame_of[m->key[f]]);
			published++;
			cached += !m->holders[f];
		}
	}
	for (i = 0, idx = m->c.lru_head; i < m->nr_lru;
	     i++, idx = m->c.frames[idx].next)
		ASSERT_EQ(m->lru[i], idx);
	ASSERT_EQ(KVA_NIL, idx);
	for (x = 0; x < NCL; x++) {
		u32 shared = 0;

		for (f = 0; f < NR; f++)
			shared += (m->holders[f] & (1u << x)) &&
				  __builtin_popcount(m->holders[f]) > 1;
		ASSERT_EQ(m_count(m, x, false), m->cl[x].held);
		ASSERT_EQ(m_count(m, x, true), m->cl[x].charged);
		ASSERT_EQ(shared, m->cl[x].shared);
	}
	ASSERT_EQ(cached, m->nr_lru);
	ASSERT_EQ(cached, m->c.nr_cached);
	ASSERT_EQ(published, m->c.nr_published);
	ASSERT_EQ(m_free(m), m->c.nr_free);
	ASSERT_EQ(m_unmet_sum(m), m->c.unmet_min);
	/*
	 * A frame is in a tenure while held or published, and only then:
	 * those that left one since the last step are counted once each,
	 * under the tag they had.
	 */
	for (f = 0; f < NR; f++) {
		if (m_tenure[f] && !(m->holders[f] || m->key[f] >= 0)) {
			m_ended[m_tenure[f]]++;
			m_returns++;
			m_tenure[f] = 0;
		}
		ASSERT_EQ(m_tenure[f], m->c.frames[f].tag);
	}
	for (f = 0; f < M_TAGS; f++)
		ASSERT_EQ(m_ended[f], m_tag_ended[f]);
	ASSERT_EQ(m_returns, m->c.tags_ended);
	m->seen_shared += shared_now;
}

TEST(random_walk_matches_model)
{
	static const u32 mins[NCL] = { 8, 0, 4 }, maxs[NCL] = { 40, 0, 20 };
	struct model *m = calloc(1, sizeof(*m));
	int step, x;
	u32 f;

	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, kva_core_init(&m->c, NR));
	m->c.tag_ended = m_tag_ended;
	m->c.nr_tags = M_TAGS;
	for (x = 0; x < NCL; x++)
		ASSERT_EQ(0, kva_core_attach(&m->c, &m->cl[x], mins[x],
					     maxs[x]));
	for (f = 0; f < NR; f++) {
		m->charge[f] = -1;
		m->key[f] = -1;
	}
	for (f = 0; f < NKEYS; f++)
		m->frame_of[f] = -1;

	for (step = 0; step < 100000; step++) {
		x = (int)rnd(NCL);
		switch (rnd(16)) {
		case 0: case 1: case 2: case 3: case 4:
			m_alloc(_metadata, m, x);
			break;
		case 5: case 6: case 7: case 8:
			m_free_some(_metadata, m, x);
			break;
		case 9: case 10: case 11:
			m_publish(_metadata, m, x);
			break;
		case 12: case 13: case 14:
			m_lookup(_metadata, m, x);
			break;
		case 15:
			if (rnd(4))
				m_set_limits(_metadata, m, x);
			else
				m_reattach(_metadata, m, x);
			break;
		}
		m_compare(_metadata, m);
	}
	TH_LOG("%llu hits, %llu misses, %llu reclaims; %u steps with a shared frame, %u keys taken, %u charges moved",
	       (unsigned long long)m->c.cache_hits,
	       (unsigned long long)m->c.cache_misses,
	       (unsigned long long)m->c.cache_reclaims, m->seen_shared,
	       m->seen_existed, m->seen_moved);
	/* The walk went everywhere the model can check. */
	EXPECT_LT(0, m->c.cache_reclaims);
	EXPECT_LT(0, m->c.cache_hits);
	EXPECT_LT(0, m->seen_shared);
	EXPECT_LT(0, m->seen_existed);
	EXPECT_LT(0, m->seen_moved);
	for (x = 0; x < NCL; x++)
		kva_core_detach(&m->c, &m->cl[x]);
	ASSERT_EQ(NR, m->c.nr_free + m->c.nr_cached);
	ASSERT_EQ(0, kva_core_check(&m->c));
	kva_core_drop_cache(&m->c);
	/* Every tenure ended, once: as many ends as frames handed out. */
	for (f = 0; f < NR; f++)
		EXPECT_EQ(0, m->c.frames[f].tag);
	EXPECT_EQ(m->c.frames_allocated, m->c.tags_ended);
	kva_core_fini(&m->c);
	free(m);
}

TEST_HARNESS_MAIN
