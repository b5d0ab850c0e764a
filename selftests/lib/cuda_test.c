// SPDX-License-Identifier: GPL-2.0
/*
 * Native tests of libkvarena's cuda backend against libcuda_double.so, a
 * test double of the driver's virtual memory entry points over host
 * memory: the call sequences (one cuMemSetAccess per run of frames, one
 * cuMemCreate per frame ever, context pushed and popped around every
 * call), the unwinding of every failure, data written through the
 * ranges, and, on a device that runs queued work only when waited for
 * (the async tests, and the whole file again under CUDA_DOUBLE_ASYNC=1),
 * that nothing is unmapped under the engine's queued kernels.  Device
 * mode, with the real module, is lib_vm_cuda_test's.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "common.h"
#include "cuda_double.h"

#define FS	(64u << 10)	/* the double's granularity */
#define TPF	256u		/* small_geometry in 64 KiB */

/* The double is linked into this test; point the library at that file. */
static const char *double_path(void)
{
	Dl_info info;

	if (!dladdr((void *)cuda_double_reset, &info))
		return NULL;
	return info.dli_fname;
}

static int open_cuda(struct kva_arena **a, uint32_t nr, const char *lib)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_EMBEDDED,
		.nr_frames = nr,
		.frame_size = FS,
		.mem_kind = KVA_BACKEND_CUDA,
		.cuda_library = lib,
	};

	return kva_open(&o, a);
}

static bool all_released(void)
{
	struct cuda_double_live l;

	cuda_double_live(&l);
	return !l.allocs && !l.reservations && !l.mappings && !l.ctx_refs;
}

/*
 * Publish a two-frame prefix (tokens 0 to 2 * TPF - 1, namespace "m",
 * its keys in @k) from a sequence filled with @tag, and free that
 * sequence: the frames stay in the arena's cache.  Returns 0 or -1.
 */
static int publish_two(struct kva_arena *a, const struct kva_geometry *g,
		       uint32_t tag, struct kva_key k[2])
{
	uint32_t t[2 * TPF];
	struct kva_seq *s;
	int ret = -1;

	for (uint32_t i = 0; i < 2 * TPF; i++)
		t[i] = i;
	if (kva_prefix_keys(g, "m", 1, t, 2 * TPF, k, 2) != 2 ||
	    kva_seq_create(a, g, 4 * TPF, &s))
		return -1;
	if (!kva_seq_grow(s, 2 * TPF)) {
		fill_tokens(s, tag, 0, 2 * TPF);
		ret = kva_seq_publish(s, k, 2) == 2 ? 0 : -1;
	}
	kva_seq_free(s);
	return ret;
}

FIXTURE(cuda) {
	struct kva_arena *a;
	struct kva_geometry g;
};

FIXTURE_SETUP(cuda)
{
	cuda_double_set_granularity(FS);
	ASSERT_EQ(0, open_cuda(&self->a, 32, double_path()));
	self->g = small_geometry(FS);
	ASSERT_EQ(TPF, self->g.tokens_per_frame);
	cuda_double_reset();
}

FIXTURE_TEARDOWN(cuda)
{
	EXPECT_EQ(0, cuda_double_ctx_depth());
	kva_close(self->a);
	EXPECT_TRUE(all_released());
	/* nothing unmapped under queued work, in either model */
	EXPECT_STREQ("", cuda_double_violation());
	EXPECT_EQ(0, cuda_double_faults());
}

TEST(open_loads_the_driver_and_retains_the_primary_context)
{
	unsigned char uuid[16];
	struct kva_arena_info info;
	struct kva_arena *a;

	cuda_double_reset();
	ASSERT_EQ(0, open_cuda(&a, 8, double_path()));
	EXPECT_STREQ("cuInit cuDeviceGet cuDevicePrimaryCtxRetain "
		     "cuCtxPushCurrent_v2 cuMemGetAllocationGranularity "
		     "cuCtxPopCurrent_v2 cuDeviceGetUuid_v2", cuda_double_trace());
	ASSERT_EQ(0, kva_arena_info(a, &info));
	EXPECT_EQ(KVA_BACKEND_CUDA, info.backend);
	EXPECT_EQ(KVA_MODE_EMBEDDED, info.mode);
	/* the GPU's UUID, as every process sees it */
	cuda_double_uuid(0, uuid);
	EXPECT_EQ(0, memcmp(uuid, info.mem_uuid, 16));
	/* Embedded allocations are not made exportable. */
	cuda_double_reset();
	kva_close(a);
	/* whatever is still queued may read what is unmapped next */
	EXPECT_STREQ("cuCtxPushCurrent_v2 cuCtxSynchronize cuCtxPopCurrent_v2 "
		     "cuCtxPushCurrent_v2 cuCtxPopCurrent_v2 "
		     "cuDevicePrimaryCtxRelease_v2", cuda_double_trace());
	EXPECT_TRUE(all_released());
}

TEST(library_path_comes_from_the_environment)
{
	struct kva_arena *a;

	setenv("KVA_CUDA_LIBRARY", double_path(), 1);
	ASSERT_EQ(0, open_cuda(&a, 8, NULL));
	kva_close(a);
	setenv("KVA_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
	EXPECT_EQ(-ELIBACC, open_cuda(&a, 8, NULL));
}

/*
 * libcuda must not be unloaded once cuInit() has run (its threads and
 * handlers would outlive its code): kva_close() leaves it loaded.  The
 * copy of the double next to this test's is one the test does not link,
 * so only the library's dlopen() holds it.
 */
TEST(close_leaves_the_driver_loaded)
{
	char path[4096];
	struct kva_arena *a;
	void *h;

	ASSERT_LT(0, snprintf(path, sizeof(path), "%s", double_path()));
	strcpy(strrchr(path, '/') + 1, "libcuda_double_unlinked.so");
	ASSERT_EQ(NULL, dlopen(path, RTLD_NOW | RTLD_NOLOAD));
	ASSERT_EQ(0, open_cuda(&a, 8, path));
	kva_close(a);
	h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	EXPECT_NE(NULL, h);
	if (h)
		dlclose(h);
}

TEST(missing_driver_or_entry_point_is_reported)
{
	struct kva_arena *a;

	EXPECT_EQ(-ELIBACC, open_cuda(&a, 8, "/nonexistent/libcuda.so.1"));
	/* A library that loads but is no CUDA driver. */
	EXPECT_EQ(-ELIBBAD, open_cuda(&a, 8, "libm.so.6"));
}

TEST(frame_size_off_the_granularity_is_einval)
{
	struct kva_arena *a;

	cuda_double_set_granularity(2u << 20);
	EXPECT_EQ(-EINVAL, open_cuda(&a, 8, double_path()));
	cuda_double_set_granularity(FS);
	EXPECT_TRUE(all_released());
}

TEST(missing_device_is_enodev)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_EMBEDDED, .nr_frames = 8, .frame_size = FS,
		.mem_kind = KVA_BACKEND_CUDA, .mem_dev = 3,
		.cuda_library = double_path(),
	};
	struct kva_arena *a;

	EXPECT_EQ(-ENODEV, kva_open(&o, &a));
	EXPECT_TRUE(all_released());
}

TEST(failed_driver_calls_during_open_release_what_was_taken)
{
	static const char *const fn[] = {
		"cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain",
		"cuCtxPushCurrent_v2", "cuMemGetAllocationGranularity",
	};
	struct kva_arena *a;
	unsigned int i;

	for (i = 0; i < 5; i++) {
		cuda_double_fail(fn[i], 1, CUDA_ERROR_OUT_OF_MEMORY);
		EXPECT_EQ(-ENOMEM, open_cuda(&a, 8, double_path()));
		EXPECT_TRUE(all_released());
	}
}

TEST_F(cuda, create_reserves_a_frame_aligned_range)
{
	const struct cuda_double_call *c;
	struct kva_seq *s;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 10 * TPF, &s));
	EXPECT_STREQ("cuCtxPushCurrent_v2 cuMemAddressReserve "
		     "cuCtxPopCurrent_v2", cuda_double_trace());
	c = cuda_double_find("cuMemAddressReserve", 0);
	ASSERT_NE(NULL, c);
	EXPECT_EQ(10 * FS, c->a);
	EXPECT_EQ(FS, c->b);
	EXPECT_EQ(0, s->base % FS);
	kva_seq_free(s);
}

TEST_F(cuda, grow_maps_a_run_and_sets_access_once)
{
	const struct cuda_double_call *c;
	struct kva_seq *s;
	int i;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 10 * TPF, &s));
	cuda_double_reset();
	ASSERT_EQ(0, kva_seq_grow(s, 4 * TPF));
	EXPECT_EQ(4, cuda_double_count("cuMemCreate"));
	EXPECT_EQ(4, cuda_double_count("cuMemMap"));
	EXPECT_EQ(1, cuda_double_count("cuMemSetAccess"));
	c = cuda_double_find("cuMemSetAccess", 0);
	ASSERT_NE(NULL, c);
	EXPECT_EQ(s->base, c->a);
	EXPECT_EQ(4 * FS, c->b);
	for (i = 0; i < 4; i++) {
		c = cuda_double_find("cuMemMap", i);
		ASSERT_NE(NULL, c);
		EXPECT_EQ(s->base + i * FS, c->a);
		EXPECT_EQ(FS, c->b);
	}
	/* The double's memory is host memory: the layout is checkable. */
	fill_tokens(s, 1, 0, 4 * TPF);
	EXPECT_EQ(0, check_tokens(s, 1, 0, 4 * TPF));
	kva_seq_free(s);
}

/*
 * A raw sequence's new frames are cleared on the device before the grow
 * returns, so that what another sequence left in them never shows.
 */
TEST_F(cuda, raw_frames_are_cleared_on_the_device_when_mapped)
{
	const struct cuda_double_call *c;
	struct kva_geometry g;
	struct kva_seq *k, *s;
	const unsigned char *p;
	uint64_t i;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 4 * TPF, &k));
	ASSERT_EQ(0, kva_seq_grow(k, 4 * TPF));
	fill_tokens(k, 3, 0, 4 * TPF);
	kva_seq_free(k);
	ASSERT_EQ(0, kva_arena_sync(self->a));

	ASSERT_EQ(0, kva_geometry_raw(&g, 64, FS));
	ASSERT_EQ(0, kva_seq_create(self->a, &g, 4 * FS / 64, &s));
	cuda_double_reset();
	ASSERT_EQ(0, kva_seq_grow(s, 2 * FS / 64));
	EXPECT_EQ(1, cuda_double_count("cuMemsetD8Async"));
	c = cuda_double_find("cuMemsetD8Async", 0);
	ASSERT_NE(NULL, c);
	EXPECT_EQ(s->base, c->a);
	EXPECT_EQ(0, c->b);
	EXPECT_EQ(2 * FS, c->c);
	/* waited for: the double's memory is the host's */
	p = (const unsigned char *)(uintptr_t)s->base;
	for (i = 0; i < 2 * FS; i++)
		if (p[i])
			break;
	EXPECT_EQ(2 * FS, i);
	kva_seq_free(s);
}

TEST_F(cuda, allocations_are_made_once_and_reused)
{
	struct kva_seq *s;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 10 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF));
	ASSERT_EQ(0, kva_seq_shrink(s, 0));
	EXPECT_EQ(3, cuda_double_count("cuMemUnmap"));
	cuda_double_reset();
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF));
	EXPECT_EQ(0, cuda_double_count("cuMemCreate"));
	EXPECT_EQ(3, cuda_double_count("cuMemMap"));
	EXPECT_EQ(1, cuda_double_count("cuMemSetAccess"));
	kva_seq_free(s);
}

TEST_F(cuda, failed_map_unmaps_the_frames_before_it)
{
	struct kva_arena_info info;
	struct cuda_double_live l;
	struct kva_seq *s;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 10 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 10));
	cuda_double_reset();
	cuda_double_fail("cuMemMap", 3, CUDA_ERROR_OUT_OF_MEMORY);
	EXPECT_EQ(-ENOMEM, kva_seq_grow(s, 4 * TPF));
	EXPECT_EQ(3, cuda_double_count("cuMemMap"));
	EXPECT_EQ(2, cuda_double_count("cuMemUnmap"));
	EXPECT_EQ(0, cuda_double_count("cuMemSetAccess"));
	EXPECT_EQ(s->base + FS, cuda_double_find("cuMemUnmap", 0)->a);
	EXPECT_EQ(s->base + 2 * FS, cuda_double_find("cuMemUnmap", 1)->a);
	EXPECT_EQ(10, s->tokens);
	EXPECT_EQ(TPF, s->room);
	EXPECT_EQ(1, held_frames(self->a));
	cuda_double_live(&l);
	EXPECT_EQ(1, l.mappings);
	ASSERT_EQ(0, kva_arena_info(self->a, &info));
	EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, info.backend_error);
	ASSERT_EQ(0, kva_seq_grow(s, 4 * TPF));
	kva_seq_free(s);
}

TEST_F(cuda, failed_set_access_unmaps_the_whole_run)
{
	struct cuda_double_live l;
	struct kva_seq *s;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 10 * TPF, &s));
	cuda_double_fail("cuMemSetAccess", 1, CUDA_ERROR_INVALID_VALUE);
	EXPECT_EQ(-EINVAL, kva_seq_grow(s, 3 * TPF));
	EXPECT_EQ(3, cuda_double_count("cuMemUnmap"));
	EXPECT_EQ(0, s->tokens);
	EXPECT_EQ(0, held_frames(self->a));
	cuda_double_live(&l);
	EXPECT_EQ(0, l.mappings);
	kva_seq_free(s);
}

TEST_F(cuda, failed_create_returns_the_frames)
{
	struct kva_seq *s;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 10 * TPF, &s));
	cuda_double_fail("cuMemCreate", 2, CUDA_ERROR_OUT_OF_MEMORY);
	EXPECT_EQ(-ENOMEM, kva_seq_grow(s, 3 * TPF));
	EXPECT_EQ(0, cuda_double_count("cuMemMap"));
	EXPECT_EQ(0, held_frames(self->a));
	EXPECT_EQ(0, s->room);
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF));
	kva_seq_free(s);
}

TEST_F(cuda, fork_maps_the_same_allocations)
{
	const struct cuda_double_call *p0, *c0;
	struct kva_seq *p, *c;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 10 * TPF, &p));
	ASSERT_EQ(0, kva_seq_grow(p, 2 * TPF));
	fill_tokens(p, 2, 0, 2 * TPF);
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	p0 = cuda_double_find("cuMemMap", 0);
	c0 = cuda_double_find("cuMemMap", 2);
	ASSERT_NE(NULL, c0);
	EXPECT_EQ(p0->c, c0->c);
	EXPECT_EQ(c->base, c0->a);
	EXPECT_EQ(2, cuda_double_count("cuMemSetAccess"));
	EXPECT_EQ(0, check_tokens(c, 2, 0, 2 * TPF));
	kva_seq_free(p);
	kva_seq_free(c);
}

TEST_F(cuda, copy_on_write_copies_device_to_device_and_spares_the_parent)
{
	const struct cuda_double_call *cp;
	struct kva_seq *p, *c;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 10 * TPF, &p));
	ASSERT_EQ(0, kva_seq_grow(p, TPF + 10));
	fill_tokens(p, 3, 0, TPF + 10);
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	cuda_double_reset();
	ASSERT_EQ(0, kva_seq_grow(c, 1));
	/*
	 * Scratch range, new frame there, copy (on the legacy stream: no
	 * stream named) and wait for the whole context, whose kernels may
	 * still read the slot, unmap the scratch, swap the slot.
	 */
	EXPECT_STREQ("cuCtxPushCurrent_v2 cuMemCreate cuCtxPopCurrent_v2 "
		     "cuCtxPushCurrent_v2 cuMemAddressReserve cuCtxPopCurrent_v2 "
		     "cuCtxPushCurrent_v2 cuMemMap cuMemSetAccess cuCtxPopCurrent_v2 "
		     "cuCtxPushCurrent_v2 cuMemcpyDtoDAsync_v2 cuCtxSynchronize "
		     "cuCtxPopCurrent_v2 "
		     "cuCtxPushCurrent_v2 cuMemUnmap cuCtxPopCurrent_v2 "
		     "cuCtxPushCurrent_v2 cuMemUnmap cuCtxPopCurrent_v2 "
		     "cuCtxPushCurrent_v2 cuMemMap cuMemSetAccess cuCtxPopCurrent_v2",
		     cuda_double_trace());
	cp = cuda_double_find("cuMemcpyDtoDAsync_v2", 0);
	ASSERT_NE(NULL, cp);
	EXPECT_EQ(0, cp->stream);
	EXPECT_EQ(c->base + FS, cp->b);
	EXPECT_EQ(FS, cp->c);
	EXPECT_EQ(3, held_frames(self->a));
	fill_tokens(c, 4, TPF, TPF + 11);
	EXPECT_EQ(0, check_tokens(p, 3, 0, TPF + 10));
	EXPECT_EQ(0, check_tokens(c, 3, 0, TPF));
	EXPECT_EQ(0, check_tokens(c, 4, TPF, TPF + 11));
	kva_seq_free(p);
	kva_seq_free(c);
	EXPECT_EQ(0, held_frames(self->a));
}

TEST_F(cuda, failed_copy_on_write_leaves_both_sequences_as_they_were)
{
	static const char *const fn[] = {
		"cuMemcpyDtoDAsync_v2", "cuCtxSynchronize", "cuMemSetAccess",
		"cuMemMap",
	};
	/* The swap's cuMemMap is the second; its failure maps the
	 * shared frame back (the third). */
	static const unsigned int nth[] = { 1, 1, 2, 2 };
	struct cuda_double_live l;
	struct kva_seq *p, *c;
	uint64_t hp[2], hc[2];
	unsigned int i;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 10 * TPF, &p));
	ASSERT_EQ(0, kva_seq_grow(p, TPF + 10));
	fill_tokens(p, 5, 0, TPF + 10);
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	for (i = 0; i < 4; i++) {
		cuda_double_reset();
		cuda_double_fail(fn[i], nth[i], CUDA_ERROR_UNKNOWN);
		EXPECT_EQ(-EIO, kva_seq_grow(c, 1));
		EXPECT_EQ(TPF + 10, c->tokens);
		EXPECT_EQ(TPF + 10, c->room);
		EXPECT_EQ(2, held_frames(self->a));
		ASSERT_EQ(2, kva_seq_handles(p, hp, 2));
		ASSERT_EQ(2, kva_seq_handles(c, hc, 2));
		EXPECT_EQ(0, memcmp(hp, hc, sizeof(hp)));
		EXPECT_EQ(0, check_tokens(c, 5, 0, TPF + 10));
		cuda_double_live(&l);
		EXPECT_EQ(4, l.mappings);
	}
	ASSERT_EQ(0, kva_seq_grow(c, 1));
	kva_seq_free(p);
	kva_seq_free(c);
}

/*
 * With the engine's stream named, freeing a sequence in a decode step
 * records an event and returns: no cuMemUnmap (which waits for the
 * device) on the engine's thread.  The arena's thread unmaps once the
 * stream has passed the event, never before, and only then are the
 * frames back in the arena.
 */
TEST_F(cuda, free_with_a_stream_never_waits_on_the_driver)
{
	unsigned long me = (unsigned long)pthread_self();
	void *stream = (void *)(uintptr_t)0x5;
	const struct cuda_double_call *c;
	struct kva_stat st;
	struct kva_seq *s;
	unsigned int i;

	ASSERT_EQ(0, kva_arena_set_stream(self->a, stream));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 8 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF));
	cuda_double_stream_hold();	/* kernels still reading the frames */
	cuda_double_reset();
	kva_seq_free(s);
	/* this thread: an event on the stream, nothing that waits */
	EXPECT_STREQ("cuCtxPushCurrent_v2 cuEventCreate cuEventRecord "
		     "cuCtxPopCurrent_v2", cuda_double_trace_mine());
	c = cuda_double_find("cuEventRecord", 0);
	ASSERT_NE(NULL, c);
	EXPECT_EQ((uintptr_t)stream, c->b);
	/* the stream has not passed it: nothing unmapped, nothing returned */
	EXPECT_EQ(0, cuda_double_count("cuMemUnmap"));
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(29, st.nr_free);
	EXPECT_EQ(0, st.nr_seqs);

	cuda_double_stream_release();
	ASSERT_EQ(0, kva_arena_sync(self->a));
	EXPECT_EQ(3, cuda_double_count("cuMemUnmap"));
	for (i = 0; i < cuda_double_count("cuMemUnmap"); i++)
		EXPECT_NE(me, cuda_double_find("cuMemUnmap", i)->thread);
	for (i = 0; i < cuda_double_count("cuEventSynchronize"); i++)
		EXPECT_NE(me, cuda_double_find("cuEventSynchronize", i)->thread);
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(32, st.nr_free);
}

static void *release_later(void *arg)
{
	usleep(20000);
	cuda_double_stream_release();
	return arg;
}

/*
 * Frames a stream-ordered free has not returned yet are held only until
 * the stream passes: a grow that needs them waits, and does not fail.
 */
TEST_F(cuda, grow_into_a_full_arena_waits_for_pending_frees)
{
	struct kva_seq *s, *t;
	pthread_t th;

	ASSERT_EQ(0, kva_arena_set_stream(self->a, NULL));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 32 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 32 * TPF));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 32 * TPF, &t));
	EXPECT_EQ(-ENOSPC, kva_seq_grow(t, 1));
	cuda_double_stream_hold();
	kva_seq_free(s);
	ASSERT_EQ(0, pthread_create(&th, NULL, release_later, NULL));
	EXPECT_EQ(0, kva_seq_grow(t, 32 * TPF));
	pthread_join(th, NULL);
	kva_seq_free(t);
}

/*
 * A frame a fork shares stays mapped in a freed sequence until its
 * stream-ordered teardown is through: the other sequence's shrink, also
 * stream-ordered, must not return it to the arena before then.  The
 * worker takes teardowns in order, so the parent's unmaps come first.
 */
TEST_F(cuda, shrink_of_a_fork_returns_shared_frames_after_its_parents_unmap)
{
	unsigned long me = (unsigned long)pthread_self();
	const struct cuda_double_call *u;
	struct kva_seq *p, *c;
	struct kva_stat st;
	uint64_t pbase;
	unsigned int i;

	ASSERT_EQ(0, kva_arena_set_stream(self->a, NULL));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 4 * TPF, &p));
	ASSERT_EQ(0, kva_seq_grow(p, TPF + 5));
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	pbase = p->base;
	cuda_double_stream_hold();
	cuda_double_reset();
	kva_seq_free(p);		/* both frames still c's too */
	ASSERT_EQ(0, kva_seq_shrink(c, 0));
	EXPECT_EQ(0, cuda_double_count("cuMemUnmap"));
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(30, st.nr_free);
	cuda_double_stream_release();
	ASSERT_EQ(0, kva_arena_sync(self->a));
	/* the parent's two frames, then the fork's two, on the arena's thread */
	ASSERT_EQ(4, cuda_double_count("cuMemUnmap"));
	for (i = 0; i < 4; i++) {
		u = cuda_double_find("cuMemUnmap", i);
		EXPECT_NE(me, u->thread);
		EXPECT_EQ((i < 2 ? pbase : c->base) + (i % 2) * FS, u->a);
	}
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(32, st.nr_free);
	kva_seq_free(c);
}

/*
 * kva_seq_shrink() in a decode step, the stream named: the tail is
 * unmapped by the arena's thread once the stream has passed the shrink,
 * and only then are its frames free; the engine's thread records an
 * event and nothing else.
 */
TEST_F(cuda, shrink_with_a_stream_never_waits_on_the_driver)
{
	unsigned long me = (unsigned long)pthread_self();
	void *stream = (void *)(uintptr_t)0x7;
	const struct cuda_double_call *c;
	struct kva_stat st;
	struct kva_seq *s;
	unsigned int i;

	ASSERT_EQ(0, kva_arena_set_stream(self->a, stream));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 8 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF));
	fill_tokens(s, 6, 0, 3 * TPF);
	cuda_double_stream_hold();
	cuda_double_reset();
	ASSERT_EQ(0, kva_seq_shrink(s, TPF - 1));
	EXPECT_STREQ("cuCtxPushCurrent_v2 cuEventCreate cuEventRecord "
		     "cuCtxPopCurrent_v2", cuda_double_trace_mine());
	c = cuda_double_find("cuEventRecord", 0);
	ASSERT_NE(NULL, c);
	EXPECT_EQ((uintptr_t)stream, c->b);
	EXPECT_EQ(TPF - 1, s->tokens);
	EXPECT_EQ(TPF, s->room);
	/* held until the stream gets there */
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(29, st.nr_free);

	cuda_double_stream_release();
	ASSERT_EQ(0, kva_arena_sync(self->a));
	ASSERT_EQ(2, cuda_double_count("cuMemUnmap"));
	for (i = 0; i < 2; i++) {
		EXPECT_NE(me, cuda_double_find("cuMemUnmap", i)->thread);
		EXPECT_EQ(s->base + (1 + i) * FS,
			  cuda_double_find("cuMemUnmap", i)->a);
	}
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(31, st.nr_free);
	EXPECT_EQ(0, check_tokens(s, 6, 0, TPF - 1));
	kva_seq_free(s);
}

/*
 * The range a stream-ordered shrink dropped stays the sequence's, still
 * mapped until the worker gets to it: growing back into it waits for
 * that (the double refuses a map over a mapping), and does not fail.
 */
TEST_F(cuda, grow_back_after_a_shrink_with_a_stream_waits_for_its_unmap)
{
	struct kva_seq *s;
	pthread_t th;

	ASSERT_EQ(0, kva_arena_set_stream(self->a, NULL));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 8 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF));
	cuda_double_stream_hold();
	ASSERT_EQ(0, kva_seq_shrink(s, TPF));
	ASSERT_EQ(0, pthread_create(&th, NULL, release_later, NULL));
	EXPECT_EQ(0, kva_seq_grow(s, 2 * TPF));	/* back to three frames */
	pthread_join(th, NULL);
	fill_tokens(s, 7, 0, 3 * TPF);
	EXPECT_EQ(0, check_tokens(s, 7, 0, 3 * TPF));
	kva_seq_free(s);
}

/*
 * A sequence shrunk to nothing and freed while the shrink's unmap is
 * still queued: its range must go back only after that unmap, or the
 * next sequence given the range maps over the old mappings (the double
 * refuses).  The free waits for nothing either.
 */
TEST_F(cuda, free_after_a_shrink_with_a_stream_returns_the_range_after_its_unmap)
{
	struct kva_seq *s, *t;
	struct kva_stat st;

	ASSERT_EQ(0, kva_arena_set_stream(self->a, NULL));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 4 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 2 * TPF));
	cuda_double_stream_hold();
	ASSERT_EQ(0, kva_seq_shrink(s, 0));
	cuda_double_reset();
	kva_seq_free(s);
	EXPECT_STREQ("cuCtxPushCurrent_v2 cuEventCreate cuEventRecord "
		     "cuCtxPopCurrent_v2", cuda_double_trace_mine());
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 4 * TPF, &t));
	EXPECT_EQ(0, kva_seq_grow(t, 2 * TPF));
	cuda_double_stream_release();
	ASSERT_EQ(0, kva_arena_sync(self->a));
	kva_seq_free(t);
	ASSERT_EQ(0, kva_arena_sync(self->a));
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(32, st.nr_free);
}

/*
 * Copy-on-write in a decode step, the stream named: the copy goes on
 * that stream, after the kernels that wrote the shared frame and before
 * those that read the copy, and the grow waits for the stream (the slot
 * the kernels read is swapped next, and a mapping cannot be replaced
 * without an unmap, which does not wait for the device).  Everything on
 * the engine's thread, nothing left to the arena's.
 */
TEST_F(cuda, copy_on_write_with_a_stream_copies_on_it_and_waits_before_the_swap)
{
	unsigned long me = (unsigned long)pthread_self();
	void *stream = (void *)(uintptr_t)0x9;
	const struct cuda_double_call *cp, *sy;
	struct kva_seq *p, *c;
	unsigned int i;

	ASSERT_EQ(0, kva_arena_set_stream(self->a, stream));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 10 * TPF, &p));
	ASSERT_EQ(0, kva_seq_grow(p, TPF + 10));
	fill_tokens(p, 3, 0, TPF + 10);
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	cuda_double_reset();
	ASSERT_EQ(0, kva_seq_grow(c, 1));	/* into the shared frame */
	ASSERT_EQ(1, cuda_double_count("cuMemcpyDtoDAsync_v2"));
	cp = cuda_double_find("cuMemcpyDtoDAsync_v2", 0);
	EXPECT_EQ((uintptr_t)stream, cp->stream);
	EXPECT_EQ(FS, cp->c);
	EXPECT_EQ(c->base + FS, cp->b);		/* from the shared slot */
	ASSERT_EQ(1, cuda_double_count("cuStreamSynchronize"));
	sy = cuda_double_find("cuStreamSynchronize", 0);
	EXPECT_EQ((uintptr_t)stream, sy->stream);
	EXPECT_EQ(0, cuda_double_count("cuCtxSynchronize"));
	EXPECT_LT(cp, sy);
	/* the scratch's unmap, then the slot's, both after the wait */
	ASSERT_EQ(2, cuda_double_count("cuMemUnmap"));
	for (i = 0; i < 2; i++) {
		EXPECT_LT(sy, cuda_double_find("cuMemUnmap", i));
		EXPECT_EQ(me, cuda_double_find("cuMemUnmap", i)->thread);
	}
	EXPECT_EQ(c->base + FS, cuda_double_find("cuMemUnmap", 1)->a);
	EXPECT_EQ(3, held_frames(self->a));
	fill_tokens(c, 4, TPF + 10, TPF + 11);
	EXPECT_EQ(0, check_tokens(p, 3, 0, TPF + 10));
	EXPECT_EQ(0, check_tokens(c, 3, 0, TPF + 10));
	EXPECT_EQ(0, check_tokens(c, 4, TPF + 10, TPF + 11));
	kva_seq_free(p);
	kva_seq_free(c);
	ASSERT_EQ(0, kva_arena_sync(self->a));
	EXPECT_EQ(0, held_frames(self->a));
}

/*
 * The same failures with the stream named: the queued path unwinds as
 * the waiting one does, and the copy's range goes (no mapping left over,
 * no copy run into unmapped memory).
 */
TEST_F(cuda, failed_copy_on_write_with_a_stream_leaves_both_sequences_as_they_were)
{
	static const char *const fn[] = {
		"cuMemcpyDtoDAsync_v2", "cuStreamSynchronize", "cuMemSetAccess",
		"cuMemMap",
	};
	/* as without a stream: the swap's cuMemMap is the second */
	static const unsigned int nth[] = { 1, 1, 1, 2 };
	struct cuda_double_live l;
	struct kva_seq *p, *c;
	uint64_t hp[2], hc[2];
	unsigned int i;

	ASSERT_EQ(0, kva_arena_set_stream(self->a, NULL));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 10 * TPF, &p));
	ASSERT_EQ(0, kva_seq_grow(p, TPF + 10));
	fill_tokens(p, 5, 0, TPF + 10);
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	for (i = 0; i < 4; i++) {
		cuda_double_reset();
		cuda_double_fail(fn[i], nth[i], CUDA_ERROR_UNKNOWN);
		EXPECT_EQ(-EIO, kva_seq_grow(c, 1));
		ASSERT_EQ(0, kva_arena_sync(self->a));
		EXPECT_EQ(TPF + 10, c->tokens);
		EXPECT_EQ(TPF + 10, c->room);
		EXPECT_EQ(2, held_frames(self->a));
		ASSERT_EQ(2, kva_seq_handles(p, hp, 2));
		ASSERT_EQ(2, kva_seq_handles(c, hc, 2));
		EXPECT_EQ(0, memcmp(hp, hc, sizeof(hp)));
		EXPECT_EQ(0, check_tokens(c, 5, 0, TPF + 10));
		cuda_double_live(&l);
		EXPECT_EQ(4, l.mappings);
	}
	EXPECT_EQ(0, cuda_double_faults());
	ASSERT_EQ(0, kva_seq_grow(c, 1));
	kva_seq_free(p);
	kva_seq_free(c);
}

TEST_F(cuda, free_unmaps_frame_by_frame_and_close_releases_everything)
{
	struct kva_seq *s;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 10 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 5 * TPF));
	cuda_double_reset();
	kva_seq_free(s);
	EXPECT_EQ(5, cuda_double_count("cuMemUnmap"));
	/* The range is kept for the next sequence. */
	EXPECT_EQ(0, cuda_double_count("cuMemAddressFree"));
	EXPECT_EQ(0, cuda_double_count("cuMemRelease"));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 10 * TPF, &s));
	EXPECT_EQ(0, cuda_double_count("cuMemAddressReserve"));
	kva_seq_free(s);
}

TEST(close_releases_allocations_ranges_and_context)
{
	struct kva_geometry g = small_geometry(FS);
	struct kva_seq *s, *c;
	struct kva_arena *a;

	ASSERT_EQ(0, open_cuda(&a, 16, double_path()));
	ASSERT_EQ(0, kva_seq_create(a, &g, 10 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF + 1));
	ASSERT_EQ(0, kva_seq_fork(s, &c));
	ASSERT_EQ(0, kva_seq_grow(c, 1));
	cuda_double_reset();
	kva_close(a);
	/* Five frames made (four and a copy); two ranges and scratch. */
	EXPECT_EQ(5, cuda_double_count("cuMemRelease"));
	EXPECT_EQ(3, cuda_double_count("cuMemAddressFree"));
	EXPECT_EQ(1, cuda_double_count("cuDevicePrimaryCtxRelease_v2"));
	EXPECT_TRUE(all_released());
}

TEST_F(cuda, attached_prefix_frames_are_read_only_and_copied_before_a_write)
{
	struct kva_seq *b;
	struct kva_key k[2];
	uint64_t ha[2], hb[2];

	ASSERT_EQ(0, publish_two(self->a, &self->g, 3, k));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 4 * TPF, &b));
	cuda_double_reset();
	ASSERT_EQ(2, kva_seq_attach_prefix(b, k, 2));
	/* Mapped again, read-only: one access call over the pair. */
	EXPECT_EQ(2, cuda_double_count("cuMemMap"));
	EXPECT_EQ(1, cuda_double_count("cuMemSetAccess"));
	EXPECT_EQ(0, cuda_double_count("cuMemCreate"));
	EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READ, cuda_double_access(b->base));
	EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READ,
		  cuda_double_access(b->base + FS));
	EXPECT_EQ(0, check_tokens(b, 3, 0, 2 * TPF));
	/* A new frame after the prefix is read-write. */
	ASSERT_EQ(0, kva_seq_grow(b, 1));
	EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
		  cuda_double_access(b->base + 2 * FS));
	/* Rewriting the last token copies its frame, device to device. */
	ASSERT_EQ(0, kva_seq_shrink(b, 2 * TPF - 1));
	ASSERT_EQ(2, kva_seq_handles(b, ha, 2));
	cuda_double_reset();
	ASSERT_EQ(0, kva_seq_grow(b, 1));
	EXPECT_EQ(1, cuda_double_count("cuMemcpyDtoDAsync_v2"));
	ASSERT_EQ(2, kva_seq_handles(b, hb, 2));
	EXPECT_EQ(ha[0], hb[0]);
	EXPECT_NE(ha[1], hb[1]);
	EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READ, cuda_double_access(b->base));
	EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
		  cuda_double_access(b->base + FS));
	fill_tokens(b, 4, 2 * TPF - 1, 2 * TPF);
	EXPECT_EQ(0, check_tokens(b, 3, 0, 2 * TPF - 1));
	EXPECT_EQ(0, check_tokens(b, 4, 2 * TPF - 1, 2 * TPF));
	kva_seq_free(b);
}

/*
 * A driver that refuses read-only access: published frames are mapped
 * read-write from then on, the arena says so, and they are still copied
 * before a write.
 */
TEST_F(cuda, a_driver_that_refuses_read_only_access_gets_read_write_and_it_is_reported)
{
	struct kva_arena_info info;
	struct kva_seq *b, *c;
	struct kva_key k[2];
	uint64_t ha[2], hb[2];

	ASSERT_EQ(0, publish_two(self->a, &self->g, 3, k));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 4 * TPF, &b));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 4 * TPF, &c));
	ASSERT_EQ(0, kva_arena_info(self->a, &info));
	EXPECT_EQ(0, info.flags & KVA_INFO_SHARED_RW);
	cuda_double_reset();
	cuda_double_fail("cuMemSetAccess", 1, CUDA_ERROR_NOT_SUPPORTED);
	ASSERT_EQ(2, kva_seq_attach_prefix(b, k, 2));
	EXPECT_EQ(2, cuda_double_count("cuMemSetAccess"));
	EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, cuda_double_access(b->base));
	ASSERT_EQ(0, kva_arena_info(self->a, &info));
	EXPECT_EQ(KVA_INFO_SHARED_RW, info.flags & KVA_INFO_SHARED_RW);
	/* no second try at read-only */
	cuda_double_reset();
	ASSERT_EQ(2, kva_seq_attach_prefix(c, k, 2));
	EXPECT_EQ(1, cuda_double_count("cuMemSetAccess"));
	EXPECT_EQ(0, check_tokens(c, 3, 0, 2 * TPF));
	/* still copied before a write */
	ASSERT_EQ(0, kva_seq_shrink(b, 2 * TPF - 1));
	ASSERT_EQ(2, kva_seq_handles(b, ha, 2));
	ASSERT_EQ(0, kva_seq_grow(b, 1));
	ASSERT_EQ(2, kva_seq_handles(b, hb, 2));
	EXPECT_NE(ha[1], hb[1]);
	fill_tokens(b, 4, 2 * TPF - 1, 2 * TPF);
	EXPECT_EQ(0, check_tokens(c, 3, 0, 2 * TPF));
	kva_seq_free(b);
	kva_seq_free(c);
}

/*
 * The last user of a published frame copies it before a write, and the
 * frame goes back to the arena's cache: with the stream named, once the
 * copy on that stream, which the grow waits for, is done.
 */
TEST_F(cuda, published_frame_copied_with_a_stream_is_cached_after_the_copy)
{
	struct kva_seq *b;
	struct kva_key k[2];
	struct kva_stat st;

	ASSERT_EQ(0, kva_arena_set_stream(self->a, NULL));
	ASSERT_EQ(0, publish_two(self->a, &self->g, 3, k));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 4 * TPF, &b));
	ASSERT_EQ(0, kva_arena_sync(self->a));
	ASSERT_EQ(2, kva_seq_attach_prefix(b, k, 2));
	ASSERT_EQ(0, kva_seq_shrink(b, 2 * TPF - 1));
	ASSERT_EQ(0, kva_arena_sync(self->a));
	cuda_double_reset();
	ASSERT_EQ(0, kva_seq_grow(b, 1));	/* copies frame 1 */
	EXPECT_EQ(1, cuda_double_count("cuStreamSynchronize"));
	EXPECT_EQ(0, cuda_double_queued());
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(1, st.nr_cached);
	fill_tokens(b, 4, 2 * TPF - 1, 2 * TPF);
	EXPECT_EQ(0, check_tokens(b, 3, 0, 2 * TPF - 1));
	EXPECT_EQ(0, check_tokens(b, 4, 2 * TPF - 1, 2 * TPF));
	kva_seq_free(b);
}

/*
 * Attaching a prefix to a sequence shrunk to nothing maps at the start
 * of its range, which the shrink's queued unmap may still hold: it
 * waits for that, and does not fail.
 */
TEST_F(cuda, attach_after_a_shrink_with_a_stream_waits_for_its_unmap)
{
	struct kva_seq *b;
	struct kva_key k[2];
	pthread_t th;

	ASSERT_EQ(0, kva_arena_set_stream(self->a, NULL));
	ASSERT_EQ(0, publish_two(self->a, &self->g, 3, k));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 4 * TPF, &b));
	ASSERT_EQ(0, kva_seq_grow(b, 2 * TPF));
	cuda_double_stream_hold();
	ASSERT_EQ(0, kva_seq_shrink(b, 0));
	ASSERT_EQ(0, pthread_create(&th, NULL, release_later, NULL));
	EXPECT_EQ(2, kva_seq_attach_prefix(b, k, 2));
	pthread_join(th, NULL);
	EXPECT_EQ(0, check_tokens(b, 3, 0, 2 * TPF));
	kva_seq_free(b);
}

/*
 * The asynchronous model (cuda_double.c): queued work runs only when
 * something waits for it, as a GPU a step behind the engine's thread
 * would run it, and an unmap under queued work is a violation.  The
 * engine's kernels are the double's stand-ins, reading a sequence's
 * range on the engine's stream; each test checks that the kernel ran
 * over the memory as it was, and that nothing was unmapped under it.
 */
#define ENGINE	((void *)(uintptr_t)0x21)	/* the engine's stream */

TEST(the_async_double_catches_an_unmap_under_a_queued_kernel)
{
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE },
	};
	CUmemAccessDesc rw = { .location = prop.location,
			       .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	CUmemGenericAllocationHandle h;
	CUcontext ctx, prev;
	CUdeviceptr va;
	uint64_t sum = 0;

	cuda_double_set_granularity(FS);
	ASSERT_EQ(0, cuInit(0));
	cuda_double_set_async(true);
	ASSERT_EQ(0, cuDevicePrimaryCtxRetain(&ctx, 0));
	ASSERT_EQ(0, cuCtxPushCurrent(ctx));
	ASSERT_EQ(0, cuMemAddressReserve(&va, FS, FS, 0, 0));
	ASSERT_EQ(0, cuMemCreate(&h, FS, &prop, 0));
	ASSERT_EQ(0, cuMemMap(va, FS, 0, h, 0));
	ASSERT_EQ(0, cuMemSetAccess(va, FS, &rw, 1));
	ASSERT_EQ(0, cuda_double_launch_read(ENGINE, va, FS, &sum));
	EXPECT_EQ(1, cuda_double_queued());
	ASSERT_EQ(0, cuMemUnmap(va, FS));	/* the driver does not wait */
	EXPECT_EQ(1, cuda_double_violations());
	EXPECT_NE(NULL, strstr(cuda_double_violation(), "kernel reading"));
	ASSERT_EQ(0, cuStreamSynchronize(ENGINE));
	EXPECT_EQ(1, cuda_double_faults());	/* it found the memory gone */
	EXPECT_EQ(0, sum);
	ASSERT_EQ(0, cuMemRelease(h));
	ASSERT_EQ(0, cuMemAddressFree(va, FS));
	ASSERT_EQ(0, cuCtxPopCurrent(&prev));
	ASSERT_EQ(0, cuDevicePrimaryCtxRelease(0));
}

FIXTURE(async) {
	struct kva_arena *a;
	struct kva_geometry g;
};

FIXTURE_SETUP(async)
{
	cuda_double_set_granularity(FS);
	ASSERT_EQ(0, open_cuda(&self->a, 32, double_path()));
	cuda_double_set_async(true);
	self->g = small_geometry(FS);
	cuda_double_reset();
}

FIXTURE_TEARDOWN(async)
{
	EXPECT_EQ(0, cuda_double_ctx_depth());
	kva_close(self->a);
	EXPECT_TRUE(all_released());
	EXPECT_EQ(0, cuda_double_queued());
	EXPECT_STREQ("", cuda_double_violation());
	EXPECT_EQ(0, cuda_double_faults());
}

/* Queue a kernel reading frames [first, first + n) of @s; the hash the
 * bytes there have now goes to *@want. */
static int read_kernel(const struct kva_seq *s, uint32_t first, uint32_t n,
		       uint64_t *sum, uint64_t *want)
{
	uint64_t va = s->base + (uint64_t)first * FS;

	*sum = 0;
	*want = cuda_double_sum((const void *)(uintptr_t)va, (uint64_t)n * FS);
	return cuda_double_launch_read(ENGINE, va, (uint64_t)n * FS, sum);
}

/* The first call of @before in the log comes before the first of @after. */
static bool called_before(const char *before, const char *after)
{
	const struct cuda_double_call *b = cuda_double_find(before, 0);
	const struct cuda_double_call *a = cuda_double_find(after, 0);

	return b && a && b < a;
}

TEST_F(async, free_without_a_stream_waits_for_the_kernels_reading_the_range)
{
	uint64_t sum, want;
	struct kva_seq *s;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 8 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF));
	fill_tokens(s, 1, 0, 3 * TPF);
	ASSERT_EQ(0, read_kernel(s, 0, 3, &sum, &want));
	kva_seq_free(s);
	EXPECT_EQ(0, cuda_double_violations());
	EXPECT_TRUE(called_before("cuCtxSynchronize", "cuMemUnmap"));
	EXPECT_EQ(want, sum);
}

TEST_F(async, shrink_without_a_stream_waits_for_the_kernels_reading_the_tail)
{
	uint64_t sum, want;
	struct kva_seq *s;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 8 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF));
	fill_tokens(s, 2, 0, 3 * TPF);
	ASSERT_EQ(0, read_kernel(s, 1, 2, &sum, &want));
	ASSERT_EQ(0, kva_seq_shrink(s, TPF - 1));
	EXPECT_EQ(0, cuda_double_violations());
	EXPECT_TRUE(called_before("cuCtxSynchronize", "cuMemUnmap"));
	EXPECT_EQ(want, sum);
	kva_seq_free(s);
}

/*
 * A forked sequence's first append into the shared frame: the kernels
 * queued before read the slot, which the grow swaps to the copy; a
 * kernel queued after reads the copy, which holds the shared tokens.
 */
static void cow_under_kernels(struct __test_metadata *_metadata,
			      struct kva_arena *a, const struct kva_geometry *g)
{
	uint64_t sum, want, sum2 = 0, want2;
	struct kva_seq *p, *c;

	ASSERT_EQ(0, kva_seq_create(a, g, 10 * TPF, &p));
	ASSERT_EQ(0, kva_seq_grow(p, TPF + 10));
	fill_tokens(p, 3, 0, TPF + 10);
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	ASSERT_EQ(0, read_kernel(c, 0, 2, &sum, &want));
	ASSERT_EQ(0, kva_seq_grow(c, 1));
	EXPECT_EQ(0, cuda_double_violations());
	EXPECT_EQ(want, sum);
	/* the copy is the whole frame: it reads as the parent's does */
	want2 = cuda_double_sum((const void *)(uintptr_t)(p->base + FS), FS);
	ASSERT_EQ(0, cuda_double_launch_read(ENGINE, c->base + FS, FS, &sum2));
	cuda_double_progress();
	EXPECT_EQ(want2, sum2);
	EXPECT_EQ(0, check_tokens(c, 3, 0, TPF + 10));
	kva_seq_free(p);
	kva_seq_free(c);
	EXPECT_EQ(0, kva_arena_sync(a));
}

TEST_F(async, copy_on_write_without_a_stream_waits_for_the_kernels_reading_the_slot)
{
	cow_under_kernels(_metadata, self->a, &self->g);
	EXPECT_TRUE(called_before("cuCtxSynchronize", "cuMemUnmap"));
}

TEST_F(async, copy_on_write_with_a_stream_comes_between_the_kernels_before_and_after)
{
	ASSERT_EQ(0, kva_arena_set_stream(self->a, ENGINE));
	cow_under_kernels(_metadata, self->a, &self->g);
	EXPECT_TRUE(called_before("cuStreamSynchronize", "cuMemUnmap"));
	EXPECT_EQ((uintptr_t)ENGINE,
		  cuda_double_find("cuMemcpyDtoDAsync_v2", 0)->stream);
}

/*
 * A swap out copies what the engine's kernels wrote, once they ran, and
 * gives the frames back only after; a swap in copies back into new
 * frames before any kernel of the engine can read them.
 */
TEST_F(async, swap_out_waits_for_the_kernels_and_swap_in_copies_back)
{
	uint64_t saved = 0, bytes, bad = 0;
	struct kva_seq *s;
	unsigned char *buf;

	ASSERT_EQ(0, kva_arena_set_stream(self->a, ENGINE));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 8 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 2 * TPF + 1));
	/* The engine writes the KV on its stream; the device lags. */
	ASSERT_EQ(0, cuda_double_launch_write(ENGINE, s->base, 3 * FS, 0x5c));
	EXPECT_EQ(1, cuda_double_queued());
	bytes = kva_seq_swap_bytes(s);
	EXPECT_EQ(3 * FS, bytes);
	buf = malloc(bytes);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, kva_seq_swap_out(s, buf, bytes, &saved));
	EXPECT_EQ(2 * TPF + 1, saved);
	EXPECT_TRUE(called_before("cuStreamSynchronize", "cuMemcpyDtoH_v2"));
	for (uint64_t i = 0; i < bytes; i++)
		bad += buf[i] != 0x5c;
	EXPECT_EQ(0, bad);
	ASSERT_EQ(0, kva_arena_sync(self->a));
	EXPECT_EQ(0, s->tokens);
	ASSERT_EQ(0, kva_seq_swap_in(s, buf, saved));
	EXPECT_EQ(1, cuda_double_count("cuMemcpyHtoD_v2"));
	EXPECT_EQ(0x5c, *(unsigned char *)(uintptr_t)(s->base + 3 * FS - 1));
	EXPECT_EQ(saved, s->tokens);
	free(buf);
	kva_seq_free(s);
	EXPECT_EQ(0, kva_arena_sync(self->a));
	EXPECT_EQ(0, cuda_double_violations());
}

/* The stream-ordered free and shrink, now with a device that lags. */
TEST_F(async, free_and_shrink_with_a_stream_unmap_after_the_kernels)
{
	uint64_t sum[2], want[2];
	struct kva_seq *s, *t;

	ASSERT_EQ(0, kva_arena_set_stream(self->a, ENGINE));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 8 * TPF, &s));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 8 * TPF, &t));
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF));
	ASSERT_EQ(0, kva_seq_grow(t, 3 * TPF));
	fill_tokens(s, 4, 0, 3 * TPF);
	fill_tokens(t, 5, 0, 3 * TPF);
	ASSERT_EQ(0, read_kernel(s, 0, 3, &sum[0], &want[0]));
	ASSERT_EQ(0, read_kernel(t, 1, 2, &sum[1], &want[1]));
	kva_seq_free(s);
	ASSERT_EQ(0, kva_seq_shrink(t, TPF - 1));
	/* the arena's thread waits on the events, and the device catches up */
	ASSERT_EQ(0, kva_arena_sync(self->a));
	EXPECT_EQ(5, cuda_double_count("cuMemUnmap"));
	EXPECT_EQ(0, cuda_double_violations());
	EXPECT_EQ(want[0], sum[0]);
	EXPECT_EQ(want[1], sum[1]);
	kva_seq_free(t);
}

/*
 * An event that cannot be recorded leaves the free or shrink to the
 * calling thread, which must then wait for the stream itself.
 */
TEST_F(async, failed_event_record_falls_back_to_waiting_for_the_stream)
{
	uint64_t sum[2], want[2];
	struct kva_seq *s, *t;

	ASSERT_EQ(0, kva_arena_set_stream(self->a, ENGINE));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 8 * TPF, &s));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 8 * TPF, &t));
	ASSERT_EQ(0, kva_seq_grow(s, 2 * TPF));
	ASSERT_EQ(0, kva_seq_grow(t, 2 * TPF));
	ASSERT_EQ(0, read_kernel(s, 0, 2, &sum[0], &want[0]));
	ASSERT_EQ(0, read_kernel(t, 0, 2, &sum[1], &want[1]));
	cuda_double_fail("cuEventRecord", 1, CUDA_ERROR_UNKNOWN);
	ASSERT_EQ(0, kva_seq_shrink(t, 1));
	cuda_double_fail("cuEventRecord", 1, CUDA_ERROR_UNKNOWN);
	kva_seq_free(s);
	EXPECT_EQ(0, cuda_double_violations());
	EXPECT_TRUE(called_before("cuStreamSynchronize", "cuMemUnmap"));
	EXPECT_EQ(want[0], sum[0]);
	EXPECT_EQ(want[1], sum[1]);
	kva_seq_free(t);
}

/* kva_close() with kernels still queued: it waits for the context. */
TEST_F(async, close_waits_for_everything_queued)
{
	uint64_t sum, want;
	struct kva_seq *s;

	ASSERT_EQ(0, kva_arena_set_stream(self->a, ENGINE));
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 8 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 2 * TPF));
	fill_tokens(s, 6, 0, 2 * TPF);
	ASSERT_EQ(0, read_kernel(s, 0, 2, &sum, &want));
	kva_close(self->a);
	self->a = NULL;
	EXPECT_EQ(0, cuda_double_violations());
	EXPECT_EQ(want, sum);
}

/*
 * A prefix attached from the cache is read-only to the engine's kernels
 * (a write faults, as on a GPU), and a kernel reading it while the
 * sequence is freed finishes first.
 */
TEST(attached_prefix_is_read_only_to_kernels_and_freed_after_them)
{
	uint64_t sum, want, sum2;
	struct kva_geometry g;
	struct kva_arena *ar;
	struct kva_seq *b;
	struct kva_key k[2];

	cuda_double_set_granularity(FS);
	ASSERT_EQ(0, open_cuda(&ar, 8, double_path()));
	cuda_double_set_async(true);
	g = small_geometry(FS);
	ASSERT_EQ(0, publish_two(ar, &g, 7, k));
	ASSERT_EQ(0, kva_seq_create(ar, &g, 4 * TPF, &b));
	ASSERT_EQ(2, kva_seq_attach_prefix(b, k, 2));
	ASSERT_EQ(0, cuda_double_launch_write(ENGINE, b->base, 64, 0x55));
	cuda_double_progress();
	EXPECT_EQ(1, cuda_double_faults());
	EXPECT_EQ(0, check_tokens(b, 7, 0, 2 * TPF));
	ASSERT_EQ(0, read_kernel(b, 0, 2, &sum, &want));
	ASSERT_EQ(0, cuda_double_launch_read(ENGINE, b->base, FS, &sum2));
	kva_seq_free(b);
	EXPECT_EQ(0, cuda_double_violations());
	EXPECT_EQ(want, sum);
	kva_close(ar);
	/* the one write, and no more */
	EXPECT_EQ(1, cuda_double_faults());
	EXPECT_EQ(0, cuda_double_queued());
	EXPECT_TRUE(all_released());
}

TEST_HARNESS_MAIN
