// SPDX-License-Identifier: GPL-2.0
/*
 * Native tests of libkvarena on an embedded arena with the host backend:
 * choosing the arena, geometry, sequences (grow, batch, shrink, fork and
 * copy-on-write, free), usage accounting, raw frames, and every error
 * path that must leave the sequences as they were (fault injection at the
 * backend's mmap sites).  Built against the KVA_TESTING objects, plain and
 * under ASan/UBSan.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "kselftest_harness.h"

#include "common.h"
#include "hooks.h"

#define FS	4096u		/* frame size: 16 tokens of small_geometry */
#define TPF	16u
#define NR	64u

static int open_embedded(struct kva_arena **a, uint32_t nr, uint64_t fs,
			 uint32_t flags)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_EMBEDDED,
		.flags = flags,
		.name = "test",
		.nr_frames = nr,
		.frame_size = fs,
		.mem_kind = KVA_BACKEND_HOST,
	};

	return kva_open(&o, a);
}

FIXTURE(seq) {
	struct kva_arena *a;
	struct kva_geometry g;
};

FIXTURE_SETUP(seq)
{
	hooks_reset();
	ASSERT_EQ(0, open_embedded(&self->a, NR, FS, 0));
	self->g = small_geometry(FS);
	ASSERT_EQ(TPF, self->g.tokens_per_frame);
}

FIXTURE_TEARDOWN(seq)
{
	kva_close(self->a);
}

static struct kva_seq *new_seq(struct __test_metadata *_metadata,
			       struct kva_arena *a,
			       const struct kva_geometry *g, uint64_t max)
{
	struct kva_seq *s = NULL;

	EXPECT_EQ(0, kva_seq_create(a, g, max, &s));
	return s;
}

/* ---- choosing the arena ---- */

TEST(auto_mode_picks_embedded_when_device_node_is_absent)
{
	struct kva_open_opts o = { .nr_frames = 4, .frame_size = FS };
	struct kva_arena_info info;
	struct kva_arena *a;

	setenv("KVA_DEVICE", "/nonexistent/kvarena", 1);
	unsetenv("KVA_MODE");
	ASSERT_EQ(0, kva_open(&o, &a));
	ASSERT_EQ(0, kva_arena_info(a, &info));
	EXPECT_EQ(KVA_MODE_EMBEDDED, info.mode);
	EXPECT_STREQ("device node absent", info.mode_reason);
	EXPECT_EQ(KVA_BACKEND_HOST, info.backend);
	EXPECT_EQ(KVA_TRANSPORT_NONE, info.transport);
	EXPECT_EQ(4, info.nr_frames);
	EXPECT_EQ(FS, info.frame_size);
	EXPECT_STREQ("embedded", info.name);
	kva_close(a);
}

TEST(auto_mode_picks_device_when_node_is_present)
{
	struct kva_open_opts o = { .name = "x", .nr_frames = 4,
				   .frame_size = FS };
	struct kva_arena *a = NULL;

	/* /dev/null exists but is no kvarena device: device mode, -ENODEV. */
	setenv("KVA_DEVICE", "/dev/null", 1);
	unsetenv("KVA_MODE");
	EXPECT_EQ(-ENODEV, kva_open(&o, &a));
	EXPECT_EQ(NULL, a);
}

TEST(kva_mode_env_forces_embedded_over_a_present_node)
{
	struct kva_open_opts o = { .nr_frames = 4, .frame_size = FS };
	struct kva_arena_info info;
	struct kva_arena *a;

	setenv("KVA_DEVICE", "/dev/null", 1);
	setenv("KVA_MODE", "embedded", 1);
	ASSERT_EQ(0, kva_open(&o, &a));
	ASSERT_EQ(0, kva_arena_info(a, &info));
	EXPECT_EQ(KVA_MODE_EMBEDDED, info.mode);
	EXPECT_STREQ("KVA_MODE=embedded", info.mode_reason);
	kva_close(a);
}

TEST(kva_mode_env_forces_device_and_fails_without_node)
{
	struct kva_open_opts o = { .name = "x", .nr_frames = 4,
				   .frame_size = FS };
	struct kva_arena *a;

	setenv("KVA_DEVICE", "/nonexistent/kvarena", 1);
	setenv("KVA_MODE", "device", 1);
	EXPECT_EQ(-ENODEV, kva_open(&o, &a));
}

TEST(mode_option_wins_over_environment)
{
	struct kva_open_opts o = { .mode = KVA_MODE_EMBEDDED, .nr_frames = 4,
				   .frame_size = FS };
	struct kva_arena_info info;
	struct kva_arena *a;

	setenv("KVA_MODE", "device", 1);
	ASSERT_EQ(0, kva_open(&o, &a));
	ASSERT_EQ(0, kva_arena_info(a, &info));
	EXPECT_EQ(KVA_MODE_EMBEDDED, info.mode);
	EXPECT_STREQ("requested by kva_open_opts.mode", info.mode_reason);
	kva_close(a);

	o.mode = KVA_MODE_DEVICE;
	o.name = "x";
	setenv("KVA_MODE", "embedded", 1);
	setenv("KVA_DEVICE", "/nonexistent/kvarena", 1);
	EXPECT_EQ(-ENODEV, kva_open(&o, &a));
}

TEST(unknown_kva_mode_value_is_einval)
{
	struct kva_open_opts o = { .nr_frames = 4, .frame_size = FS };
	struct kva_arena *a;

	setenv("KVA_MODE", "gpu", 1);
	EXPECT_EQ(-EINVAL, kva_open(&o, &a));
}

TEST(device_mode_needs_an_arena_name)
{
	struct kva_open_opts o = { .mode = KVA_MODE_DEVICE };
	struct kva_arena *a;

	unsetenv("KVA_ARENA");
	setenv("KVA_DEVICE", "/nonexistent/kvarena", 1);
	EXPECT_EQ(-EINVAL, kva_open(&o, &a));
	o.name = "bad name";
	EXPECT_EQ(-EINVAL, kva_open(&o, &a));
}

TEST(open_rejects_bad_options)
{
	struct kva_open_opts ok = { .mode = KVA_MODE_EMBEDDED, .nr_frames = 4,
				    .frame_size = FS };
	struct kva_open_opts o;
	struct kva_arena *a;

	EXPECT_EQ(-EINVAL, kva_open(NULL, &a));
	EXPECT_EQ(-EINVAL, kva_open(&ok, NULL));
	o = ok; o.nr_frames = 0;
	EXPECT_EQ(-EINVAL, kva_open(&o, &a));
	o = ok; o.nr_frames = (1u << 24) + 1;
	EXPECT_EQ(-EINVAL, kva_open(&o, &a));
	o = ok; o.frame_size = 3 * 4096;
	EXPECT_EQ(-EINVAL, kva_open(&o, &a));
	o = ok; o.frame_size = 2048;
	EXPECT_EQ(-EINVAL, kva_open(&o, &a));
	o = ok; o.flags = 1u << 31;
	EXPECT_EQ(-EINVAL, kva_open(&o, &a));
	o = ok; o.reserved[2] = 1;
	EXPECT_EQ(-EINVAL, kva_open(&o, &a));
	o = ok; o.reserved0 = 1;
	EXPECT_EQ(-EINVAL, kva_open(&o, &a));
	o = ok; o.mem_kind = 7;
	EXPECT_EQ(-EINVAL, kva_open(&o, &a));
	o = ok; o.mode = 9;
	EXPECT_EQ(-EINVAL, kva_open(&o, &a));
	o = ok; o.transport = 9;
	EXPECT_EQ(-EINVAL, kva_open(&o, &a));
	o = ok; o.min_frames = 3; o.max_frames = 2;
	EXPECT_EQ(-EINVAL, kva_open(&o, &a));
	o = ok; o.max_frames = 5;
	EXPECT_EQ(-EINVAL, kva_open(&o, &a));
	o = ok; o.name = "a-name-that-is-far-too-long-for-an-arena";
	EXPECT_EQ(-EINVAL, kva_open(&o, &a));
}

/*
 * kva_arena_create()/destroy() refuse bad arguments before they look for
 * the device (they run against the module in lib_vm_device_test).
 */
TEST(arena_create_and_destroy_check_their_arguments_first)
{
	struct kva_arena_params p = { .name = "three", .nr_frames = 4,
				      .frame_size = FS };

	setenv("KVA_DEVICE", "/nonexistent/kvarena", 1);
	EXPECT_EQ(-EINVAL, kva_arena_create(NULL));
	EXPECT_EQ(-EINVAL, kva_arena_destroy(NULL));
	p.name = "bad/name";
	EXPECT_EQ(-EINVAL, kva_arena_create(&p));
	EXPECT_EQ(-EINVAL, kva_arena_destroy(&p));
	p.name = "three";
	p.flags = KVA_OPEN_POPULATE;
	EXPECT_EQ(-EINVAL, kva_arena_create(&p));
	p.flags = 0;
	p.nr_frames = 0;
	EXPECT_EQ(-EINVAL, kva_arena_create(&p));
	p.nr_frames = 4;
	p.mem_kind = 7;
	EXPECT_EQ(-EINVAL, kva_arena_create(&p));
	p.mem_kind = KVA_BACKEND_HOST;
	p.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, kva_arena_create(&p));
	p.reserved[0] = 0;
	p.max_frames = 3;		/* below nr_frames */
	EXPECT_EQ(-EINVAL, kva_arena_create(&p));
	p.max_frames = 0;
	/* Good arguments: now the device is missing, or is not kvarena. */
	EXPECT_EQ(-ENODEV, kva_arena_create(&p));
	EXPECT_EQ(-ENODEV, kva_arena_destroy(&p));
	p.device = "/dev/null";
	EXPECT_EQ(-ENODEV, kva_arena_create(&p));
	EXPECT_EQ(-ENODEV, kva_arena_destroy(&p));
}

TEST(names_of_modes_backends_and_transports)
{
	EXPECT_STREQ("auto", kva_mode_name(KVA_MODE_AUTO));
	EXPECT_STREQ("device", kva_mode_name(KVA_MODE_DEVICE));
	EXPECT_STREQ("embedded", kva_mode_name(KVA_MODE_EMBEDDED));
	EXPECT_STREQ("?", kva_mode_name((enum kva_mode)7));
	EXPECT_STREQ("host", kva_backend_name(KVA_BACKEND_HOST));
	EXPECT_STREQ("cuda", kva_backend_name(KVA_BACKEND_CUDA));
	EXPECT_STREQ("?", kva_backend_name((enum kva_backend)7));
	EXPECT_STREQ("auto", kva_transport_name(KVA_TRANSPORT_AUTO));
	EXPECT_STREQ("ioctl", kva_transport_name(KVA_TRANSPORT_IOCTL));
	EXPECT_STREQ("uring", kva_transport_name(KVA_TRANSPORT_URING));
	EXPECT_STREQ("none", kva_transport_name(KVA_TRANSPORT_NONE));
	EXPECT_STREQ("?", kva_transport_name((enum kva_transport)7));
}

TEST_F(seq, embedded_arena_has_no_pressure_fd)
{
	EXPECT_EQ(-EOPNOTSUPP, kva_poll_fd(self->a));
	EXPECT_EQ(-EINVAL, kva_poll_fd(NULL));
}

/* ---- geometry ---- */

TEST(geometry_gives_tokens_per_frame_and_bytes_per_token)
{
	struct kva_geometry g = { .layers = 32, .kv_heads = 8,
				  .head_dim = 128, .dtype = KVA_DTYPE_FP16,
				  .frame_size = 2u << 20 };
	char buf[256];

	ASSERT_EQ(0, kva_geometry_explain(&g, buf, sizeof(buf)));
	EXPECT_STREQ("32 layers x 8 KV heads x 128 x fp16: 128 KiB per "
		     "token, 16 tokens per 2 MiB frame, 0 bytes unused per "
		     "frame", buf);
	ASSERT_EQ(0, kva_geometry_init(&g));
	EXPECT_EQ(131072, g.bytes_per_token);
	EXPECT_EQ(16, g.tokens_per_frame);

	g.dtype = KVA_DTYPE_BF16;
	ASSERT_EQ(0, kva_geometry_init(&g));
	EXPECT_EQ(16, g.tokens_per_frame);
	g.dtype = KVA_DTYPE_FP32;
	ASSERT_EQ(0, kva_geometry_init(&g));
	EXPECT_EQ(262144, g.bytes_per_token);
	EXPECT_EQ(8, g.tokens_per_frame);

	/* 3 x 2 x 1 x 64 x fp32 = 1536 bytes: 2 per 4 KiB, 1024 unused. */
	g = (struct kva_geometry){ .layers = 3, .kv_heads = 1, .head_dim = 64,
				   .dtype = KVA_DTYPE_FP32, .frame_size = 4096 };
	ASSERT_EQ(0, kva_geometry_explain(&g, buf, sizeof(buf)));
	EXPECT_STREQ("3 layers x 1 KV heads x 64 x fp32: 1536 bytes per "
		     "token, 2 tokens per 4 KiB frame, 1 KiB unused per "
		     "frame", buf);
}

TEST(token_larger_than_a_frame_is_rejected_with_the_sizes)
{
	struct kva_geometry g = { .layers = 80, .kv_heads = 8,
				  .head_dim = 128, .dtype = KVA_DTYPE_FP32,
				  .frame_size = 64u << 10 };
	struct kva_arena *a;
	struct kva_seq *s;
	char buf[256];

	EXPECT_EQ(-E2BIG, kva_geometry_explain(&g, buf, sizeof(buf)));
	EXPECT_STREQ("one token needs 640 KiB of KV (2 x 80 layers x 8 KV "
		     "heads x 128 x fp32), more than a 64 KiB frame holds; "
		     "frames of 1 MiB or more fit at least one", buf);
	ASSERT_EQ(0, open_embedded(&a, 4, 64u << 10, 0));
	EXPECT_EQ(-E2BIG, kva_seq_create(a, &g, 100, &s));
	kva_close(a);
}

TEST(invalid_geometry_is_einval_with_the_reason)
{
	struct kva_geometry g = { .layers = 0, .kv_heads = 8, .head_dim = 128,
				  .dtype = KVA_DTYPE_FP16, .frame_size = 4096 };
	char buf[256];

	EXPECT_EQ(-EINVAL, kva_geometry_explain(&g, buf, sizeof(buf)));
	EXPECT_STREQ("layers, kv_heads, head_dim and frame_size must all be "
		     "non-zero", buf);
	g.layers = 1;
	g.dtype = 5;
	EXPECT_EQ(-EINVAL, kva_geometry_explain(&g, buf, sizeof(buf)));
	EXPECT_STREQ("dtype 5 is not fp32 (0), fp16 (1), bf16 (2), fp8 (3) "
		     "or raw (255)", buf);
	g.dtype = KVA_DTYPE_RAW;
	g.kv_heads = 8;
	EXPECT_EQ(-EINVAL, kva_geometry_explain(&g, buf, sizeof(buf)));
	EXPECT_STREQ("a raw geometry has one layer and one KV head (1 and 8 "
		     "given); its head_dim is the bytes per row", buf);
	g.dtype = KVA_DTYPE_FP16;
	g.layers = 1u << 20;
	EXPECT_EQ(-EINVAL, kva_geometry_explain(&g, buf, sizeof(buf)));
	EXPECT_EQ(0, strncmp(buf, "out of range", 12));
	EXPECT_EQ(-EINVAL, kva_geometry_explain(NULL, buf, sizeof(buf)));
}

/* ---- raw rows: an engine that owns its layout ---- */

TEST(raw_geometry_is_rows_of_head_dim_bytes)
{
	struct kva_geometry g;
	char buf[256];

	ASSERT_EQ(0, kva_geometry_raw(&g, 96, 4096));
	EXPECT_EQ(96, g.bytes_per_token);
	EXPECT_EQ(42, g.tokens_per_frame);
	EXPECT_EQ(0, kva_geometry_explain(&g, buf, sizeof(buf)));
	EXPECT_STREQ("raw rows of 96 bytes: 42 rows per 4 KiB frame, 64 bytes "
		     "unused per frame", buf);
	/* Row t: t / T_f frames on, t % T_f rows into the frame. */
	EXPECT_EQ(4096 + 5 * 96, kva_kv_offset(&g, 0, KVA_K, 0, 47));
	EXPECT_EQ(-E2BIG, kva_geometry_raw(&g, 8192, 4096));
	EXPECT_EQ(-E2BIG, kva_geometry_explain(&g, buf, sizeof(buf)));
	EXPECT_STREQ("a raw row of 8 KiB is more than a 4 KiB frame holds",
		     buf);
}

/* Rows that divide the frame make one array as long as the sequence. */
TEST_F(seq, raw_rows_are_one_array_across_frames)
{
	struct kva_geometry g;
	struct kva_seq *s;
	uint32_t *row;
	uint64_t t;

	ASSERT_EQ(0, kva_geometry_raw(&g, 64, FS));
	ASSERT_EQ(0, kva_seq_create(self->a, &g, 1000, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 200));	/* 64 rows a frame: 4 frames */
	row = (uint32_t *)(uintptr_t)s->base;
	for (t = 0; t < 200; t++)
		row[t * 16] = (uint32_t)t + 1;
	for (t = 0; t < 200; t++)
		ASSERT_EQ(t + 1, *(uint32_t *)kva_seq_kv_ptr(s, 0, KVA_K, 0, t));
	EXPECT_EQ(4, kva_seq_handles(s, NULL, 0));
	kva_seq_free(s);
}

static int all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		if (*b++)
			return 0;
	return 1;
}

/*
 * A frame given back by one sequence comes to the next raw sequence
 * zeroed, whether grown or copied on write: an engine that reads rows it
 * has not written (masked cells) sees zeros, never another request's KV.
 */
TEST_F(seq, raw_frames_never_show_what_was_there_before)
{
	struct kva_seq *k = new_seq(_metadata, self->a, &self->g, 16 * TPF);
	struct kva_seq *s, *c;
	struct kva_geometry g;

	/* Fill every frame of the arena with a kernel layout's KV. */
	ASSERT_EQ(0, kva_seq_grow(k, 16 * TPF));
	memset((void *)(uintptr_t)k->base, 0x5a, 16 * FS);
	kva_seq_free(k);
	ASSERT_EQ(0, kva_geometry_raw(&g, 64, FS));
	ASSERT_EQ(0, kva_seq_create(self->a, &g, 64 * 16, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 70));
	EXPECT_TRUE(all_zero((void *)(uintptr_t)s->base, 2 * FS));
	memset((void *)(uintptr_t)s->base, 0x33, 70 * 64);
	/* Back to 3 rows and out again: the second frame is a new one. */
	ASSERT_EQ(0, kva_seq_shrink(s, 3));
	ASSERT_EQ(0, kva_seq_grow(s, 67));
	EXPECT_TRUE(all_zero((void *)(uintptr_t)(s->base + FS), FS));
	/* A fork's copy holds the rows it shares and zeros past them. */
	memset((void *)(uintptr_t)(s->base + FS), 0x44, 6 * 64);
	ASSERT_EQ(0, kva_seq_fork(s, &c));
	ASSERT_EQ(0, kva_seq_grow(c, 1));
	EXPECT_EQ(0x44, *(unsigned char *)(uintptr_t)(c->base + FS + 6 * 64 - 1));
	EXPECT_TRUE(all_zero((void *)(uintptr_t)(c->base + FS + 6 * 64),
			     FS - 6 * 64));
	/* and the parent keeps its frame as it was */
	EXPECT_EQ(0x44, *(unsigned char *)(uintptr_t)(s->base + FS));
	kva_seq_free(c);
	kva_seq_free(s);
}

TEST_F(seq, create_rejects_other_frame_sizes_and_zero_length)
{
	struct kva_geometry g = small_geometry(2 * FS);
	struct kva_seq *s;

	EXPECT_EQ(-EINVAL, kva_seq_create(self->a, &g, 100, &s));
	EXPECT_EQ(-EINVAL, kva_seq_create(self->a, &self->g, 0, &s));
	EXPECT_EQ(-EINVAL, kva_seq_create(NULL, &self->g, 1, &s));
	EXPECT_EQ(-EINVAL, kva_seq_create(self->a, NULL, 1, &s));
	EXPECT_EQ(-EINVAL, kva_seq_create(self->a, &self->g, 1, NULL));
}

/* ---- growing ---- */

TEST_F(seq, create_reserves_an_aligned_range_without_frames)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 1000);

	ASSERT_NE(NULL, s);
	EXPECT_EQ(0, s->base % FS);
	EXPECT_EQ(0, s->tokens);
	EXPECT_EQ(0, s->room);
	EXPECT_EQ(1000, s->max_tokens);
	EXPECT_EQ(TPF, s->geo.tokens_per_frame);
	EXPECT_EQ(0, held_frames(self->a));
	kva_seq_free(s);
}

TEST_SIGNAL(reserved_but_unmapped_range_faults, SIGSEGV)
{
	struct kva_geometry g = small_geometry(FS);
	struct kva_arena *a;
	struct kva_seq *s;

	ASSERT_EQ(0, open_embedded(&a, 4, FS, 0));
	ASSERT_EQ(0, kva_seq_create(a, &g, 64, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 1));
	signal(SIGSEGV, SIG_DFL);	/* not the sanitizer's report */
	*(volatile char *)(uintptr_t)s->base = 1;	/* mapped */
	*(volatile char *)(uintptr_t)(s->base + FS) = 1; /* not */
}

TEST_F(seq, grow_maps_one_frame_per_tokens_per_frame)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 1000);

	ASSERT_EQ(0, kva_seq_grow(s, 1));
	EXPECT_EQ(1, s->tokens);
	EXPECT_EQ(TPF, s->room);
	EXPECT_EQ(1, held_frames(self->a));
	ASSERT_EQ(0, kva_seq_grow(s, TPF - 1));
	EXPECT_EQ(TPF, s->tokens);
	EXPECT_EQ(1, held_frames(self->a));
	ASSERT_EQ(0, kva_seq_grow(s, 1));
	EXPECT_EQ(TPF + 1, s->tokens);
	EXPECT_EQ(2 * TPF, s->room);
	EXPECT_EQ(2, held_frames(self->a));
	/* Many frames at once: the rest of the way in one call. */
	ASSERT_EQ(0, kva_seq_grow(s, 1000 - s->tokens));
	EXPECT_EQ(1000, s->tokens);
	EXPECT_EQ(1000, s->room);
	EXPECT_EQ(63, held_frames(self->a));
	kva_seq_free(s);
	EXPECT_EQ(0, held_frames(self->a));
}

TEST_F(seq, grow_within_mapped_room_calls_nothing)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 1000);
	struct kva_grow r = { .seq = s, .tokens = 1, .ahead = 4 * TPF };
	struct kva_stat before, after;
	int i;

	ASSERT_EQ(0, kva_seq_grow_batch(self->a, &r, 1));
	EXPECT_EQ(1, s->tokens);
	EXPECT_EQ(5 * TPF, s->room);
	ASSERT_EQ(0, kva_stat(self->a, &before));
	for (i = 0; i < 5 * TPF - 1; i++)
		ASSERT_EQ(0, kva_seq_grow(s, 1));
	ASSERT_EQ(0, kva_stat(self->a, &after));
	EXPECT_EQ(before.alloc_calls, after.alloc_calls);
	EXPECT_EQ(before.free_calls, after.free_calls);
	EXPECT_EQ(5, after.held);
	EXPECT_EQ(5 * TPF, s->tokens);
	kva_seq_free(s);
}

TEST_F(seq, data_written_through_the_range_follows_the_layout)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 1000);

	ASSERT_EQ(0, kva_seq_grow(s, 40));
	fill_tokens(s, 1, 0, 40);
	EXPECT_EQ(0, check_tokens(s, 1, 0, 40));
	/* Token t + T_f is one frame further on, same block and row. */
	EXPECT_EQ(FS, kva_seq_kv_addr(s, 1, KVA_V, 1, 3 + TPF) -
		      kva_seq_kv_addr(s, 1, KVA_V, 1, 3));
	/* Within a frame: [layer][K|V][head][token][dim]. */
	EXPECT_EQ(s->geo.head_stride,
		  kva_seq_kv_addr(s, 0, KVA_K, 1, 0) -
		  kva_seq_kv_addr(s, 0, KVA_K, 0, 0));
	EXPECT_EQ(32, kva_seq_kv_addr(s, 0, KVA_K, 0, 1) -
		      kva_seq_kv_addr(s, 0, KVA_K, 0, 0));
	kva_seq_free(s);
}

TEST_F(seq, grow_past_max_tokens_is_efbig_and_changes_nothing)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 20);

	ASSERT_EQ(0, kva_seq_grow(s, 18));
	EXPECT_EQ(-EFBIG, kva_seq_grow(s, 3));
	EXPECT_EQ(-EFBIG, kva_seq_grow(s, UINT64_MAX));
	EXPECT_EQ(18, s->tokens);
	EXPECT_EQ(20, s->room);
	EXPECT_EQ(2, held_frames(self->a));
	ASSERT_EQ(0, kva_seq_grow(s, 2));
	EXPECT_EQ(20, s->tokens);
	kva_seq_free(s);
}

TEST_F(seq, grow_with_the_arena_full_is_enospc_and_changes_nothing)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 5000);
	uint64_t raw[NR];
	struct kva_stat st;

	ASSERT_EQ(0, kva_seq_grow(s, 20));
	fill_tokens(s, 2, 0, 20);
	ASSERT_EQ(NR - 4, kva_alloc(self->a, raw, NR - 4, 0));
	EXPECT_EQ(-ENOSPC, kva_seq_grow(s, 3 * TPF));
	EXPECT_EQ(20, s->tokens);
	EXPECT_EQ(2 * TPF, s->room);
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(NR - 2, st.held);
	EXPECT_EQ(2, st.nr_free);
	EXPECT_EQ(0, check_tokens(s, 2, 0, 20));
	ASSERT_EQ(0, kva_free(self->a, raw, NR - 4));
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF));
	EXPECT_EQ(5, held_frames(self->a));
	kva_seq_free(s);
}

/* ---- swapping a preempted sequence out and back in ---- */

TEST_F(seq, swap_out_gives_the_frames_back_and_swap_in_brings_the_kv_back)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 1000);
	uint64_t saved = 0, bytes;
	void *buf;

	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF + 5));
	fill_tokens(s, 7, 0, 3 * TPF + 5);
	bytes = kva_seq_swap_bytes(s);
	EXPECT_EQ(4 * FS, bytes);
	buf = malloc(bytes);
	ASSERT_NE(NULL, buf);
	EXPECT_EQ(-EINVAL, kva_seq_swap_out(s, buf, bytes - 1, &saved));
	EXPECT_EQ(4, held_frames(self->a));
	ASSERT_EQ(0, kva_seq_swap_out(s, buf, bytes, &saved));
	EXPECT_EQ(3 * TPF + 5, saved);
	EXPECT_EQ(0, s->tokens);
	EXPECT_EQ(0, held_frames(self->a));
	/* Another sequence takes (and dirties) the frames meanwhile. */
	{
		struct kva_seq *o = new_seq(_metadata, self->a, &self->g, 1000);

		ASSERT_EQ(0, kva_seq_grow(o, 4 * TPF));
		fill_tokens(o, 9, 0, 4 * TPF);
		kva_seq_free(o);
	}
	ASSERT_EQ(0, kva_seq_swap_in(s, buf, saved));
	EXPECT_EQ(saved, s->tokens);
	EXPECT_EQ(4, held_frames(self->a));
	EXPECT_EQ(0, check_tokens(s, 7, 0, saved));
	/* It grows on from there as if it had never left. */
	ASSERT_EQ(0, kva_seq_grow(s, TPF));
	fill_tokens(s, 7, saved, saved + TPF);
	EXPECT_EQ(0, check_tokens(s, 7, 0, saved + TPF));
	EXPECT_EQ(-EBUSY, kva_seq_swap_in(s, buf, saved));
	free(buf);
	kva_seq_free(s);
}

TEST_F(seq, swap_in_without_room_is_enospc_and_holds_nothing)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 5000);
	uint64_t raw[NR], saved = 0;
	char buf[3 * FS];

	ASSERT_EQ(0, kva_seq_grow(s, 2 * TPF + 1));
	fill_tokens(s, 3, 0, 2 * TPF + 1);
	ASSERT_EQ(0, kva_seq_swap_out(s, buf, sizeof(buf), &saved));
	ASSERT_EQ(NR - 2, kva_alloc(self->a, raw, NR - 2, 0));
	EXPECT_EQ(-ENOSPC, kva_seq_swap_in(s, buf, saved));
	EXPECT_EQ(0, s->tokens);
	EXPECT_EQ(NR - 2, held_frames(self->a));
	EXPECT_EQ(-EINVAL, kva_seq_swap_in(s, buf, 0));
	EXPECT_EQ(-EINVAL, kva_seq_swap_in(s, buf, 5001));
	EXPECT_EQ(-EINVAL, kva_seq_swap_in(s, NULL, saved));
	ASSERT_EQ(0, kva_free(self->a, raw, 1));
	ASSERT_EQ(0, kva_seq_swap_in(s, buf, saved));
	EXPECT_EQ(0, check_tokens(s, 3, 0, saved));
	ASSERT_EQ(0, kva_free(self->a, raw + 1, NR - 3));
	kva_seq_free(s);
}

TEST_F(seq, swap_out_of_a_fork_leaves_the_other_side_whole)
{
	struct kva_seq *p = new_seq(_metadata, self->a, &self->g, 1000);
	struct kva_seq *c = NULL;
	uint64_t saved = 0;
	char buf[2 * FS];

	ASSERT_EQ(0, kva_seq_grow(p, TPF + 3));
	fill_tokens(p, 5, 0, TPF + 3);
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	ASSERT_EQ(0, kva_seq_swap_out(c, buf, sizeof(buf), &saved));
	EXPECT_EQ(TPF + 3, saved);
	/* The shared frames stay the parent's. */
	EXPECT_EQ(2, held_frames(self->a));
	EXPECT_EQ(0, check_tokens(p, 5, 0, TPF + 3));
	ASSERT_EQ(0, kva_seq_swap_in(c, buf, saved));
	EXPECT_EQ(4, held_frames(self->a));
	EXPECT_EQ(0, check_tokens(c, 5, 0, saved));
	kva_seq_free(c);
	kva_seq_free(p);
	/* A sequence with no token saves nothing. */
	p = new_seq(_metadata, self->a, &self->g, 10);
	EXPECT_EQ(0, kva_seq_swap_bytes(p));
	ASSERT_EQ(0, kva_seq_swap_out(p, NULL, 0, &saved));
	EXPECT_EQ(0, saved);
	EXPECT_EQ(-EINVAL, kva_seq_swap_out(NULL, buf, sizeof(buf), &saved));
	kva_seq_free(p);
}

TEST_F(seq, grow_batch_takes_every_frame_in_one_allocator_call)
{
	struct kva_seq *s[4];
	struct kva_grow r[4];
	struct kva_stat before, after;
	int i;

	for (i = 0; i < 4; i++) {
		s[i] = new_seq(_metadata, self->a, &self->g, 1000);
		r[i] = (struct kva_grow){ .seq = s[i], .tokens = 10 + i * 10,
					  .ahead = TPF };
	}
	ASSERT_EQ(0, kva_stat(self->a, &before));
	ASSERT_EQ(0, kva_seq_grow_batch(self->a, r, 4));
	ASSERT_EQ(0, kva_stat(self->a, &after));
	EXPECT_EQ(before.alloc_calls + 1, after.alloc_calls);
	/* ceil((10 + 16) / 16), ceil(36 / 16), ceil(46 / 16), ceil(56/16) */
	EXPECT_EQ(2 + 3 + 3 + 4, after.held);
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(10 + i * 10, s[i]->tokens);
		fill_tokens(s[i], i, 0, s[i]->tokens);
	}
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, check_tokens(s[i], i, 0, s[i]->tokens));
	EXPECT_EQ(2 * TPF, s[0]->room);
	EXPECT_EQ(4 * TPF, s[3]->room);
	for (i = 0; i < 4; i++)
		kva_seq_free(s[i]);
	EXPECT_EQ(0, held_frames(self->a));
}

TEST_F(seq, grow_batch_is_all_or_nothing)
{
	struct kva_seq *s[3];
	struct kva_grow r[3];
	struct kva_stat before, after;
	int i;

	for (i = 0; i < 3; i++) {
		s[i] = new_seq(_metadata, self->a, &self->g, 5000);
		ASSERT_EQ(0, kva_seq_grow(s[i], 5));
	}
	for (i = 0; i < 3; i++)
		r[i] = (struct kva_grow){ .seq = s[i], .tokens = 22 * TPF };
	ASSERT_EQ(0, kva_stat(self->a, &before));
	EXPECT_EQ(-ENOSPC, kva_seq_grow_batch(self->a, r, 3));
	ASSERT_EQ(0, kva_stat(self->a, &after));
	EXPECT_EQ(before.held, after.held);
	EXPECT_EQ(before.nr_free, after.nr_free);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(5, s[i]->tokens);
		EXPECT_EQ(TPF, s[i]->room);
	}
	r[2].tokens = 10 * TPF;
	ASSERT_EQ(0, kva_seq_grow_batch(self->a, r, 3));
	for (i = 0; i < 3; i++)
		kva_seq_free(s[i]);
}

TEST_F(seq, grow_batch_rejects_duplicates_and_foreign_sequences)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 100);
	struct kva_seq *t = new_seq(_metadata, self->a, &self->g, 100);
	struct kva_arena *b;
	struct kva_seq *u;
	struct kva_grow r[2] = { { .seq = s, .tokens = 1 },
				 { .seq = s, .tokens = 1 } };

	EXPECT_EQ(-EINVAL, kva_seq_grow_batch(self->a, r, 2));
	EXPECT_EQ(0, s->tokens);
	r[1].seq = NULL;
	EXPECT_EQ(-EINVAL, kva_seq_grow_batch(self->a, r, 2));
	EXPECT_EQ(-EINVAL, kva_seq_grow_batch(self->a, NULL, 2));
	EXPECT_EQ(-EINVAL, kva_seq_grow_batch(NULL, r, 1));
	EXPECT_EQ(0, kva_seq_grow_batch(self->a, NULL, 0));

	ASSERT_EQ(0, open_embedded(&b, 4, FS, 0));
	ASSERT_EQ(0, kva_seq_create(b, &self->g, 10, &u));
	r[1].seq = u;
	EXPECT_EQ(-EINVAL, kva_seq_grow_batch(self->a, r, 2));
	/* The flags the failed plans set are cleared: this works now. */
	r[1].seq = t;
	EXPECT_EQ(0, kva_seq_grow_batch(self->a, r, 2));
	EXPECT_EQ(1, s->tokens);
	EXPECT_EQ(1, t->tokens);
	kva_close(b);
	kva_seq_free(s);
	kva_seq_free(t);
}

TEST_F(seq, large_batch_goes_through_the_heap_path)
{
	struct kva_seq *s[20];
	struct kva_grow r[20];
	struct kva_stat st;
	int i;

	for (i = 0; i < 20; i++) {
		s[i] = new_seq(_metadata, self->a, &self->g, 100);
		r[i] = (struct kva_grow){ .seq = s[i], .tokens = 2 * TPF + 1 };
	}
	ASSERT_EQ(0, kva_seq_grow_batch(self->a, r, 20));
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(60, st.held);
	EXPECT_EQ(1, st.alloc_calls);
	for (i = 0; i < 20; i++)
		fill_tokens(s[i], i, 0, s[i]->tokens);
	for (i = 0; i < 20; i++) {
		EXPECT_EQ(0, check_tokens(s[i], i, 0, s[i]->tokens));
		kva_seq_free(s[i]);
	}
}

TEST_F(seq, ahead_maps_room_without_adding_tokens)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 100);
	struct kva_grow r = { .seq = s, .ahead = 40 };

	ASSERT_EQ(0, kva_seq_grow_batch(self->a, &r, 1));
	EXPECT_EQ(0, s->tokens);
	EXPECT_EQ(3 * TPF, s->room);
	EXPECT_EQ(3, held_frames(self->a));
	/* Room stops at max_tokens, whatever is asked. */
	r.ahead = UINT64_MAX;
	ASSERT_EQ(0, kva_seq_grow_batch(self->a, &r, 1));
	EXPECT_EQ(100, s->room);
	EXPECT_EQ(7, held_frames(self->a));
	kva_seq_free(s);
}

/* ---- shrinking and freeing ---- */

TEST_F(seq, shrink_returns_frames_past_the_last_token)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 1000);
	struct kva_grow r = { .seq = s, .tokens = 40, .ahead = 2 * TPF };

	ASSERT_EQ(0, kva_seq_grow_batch(self->a, &r, 1));
	EXPECT_EQ(5, held_frames(self->a));
	fill_tokens(s, 3, 0, 40);
	ASSERT_EQ(0, kva_seq_shrink(s, 17));
	EXPECT_EQ(17, s->tokens);
	EXPECT_EQ(2 * TPF, s->room);
	EXPECT_EQ(2, held_frames(self->a));
	EXPECT_EQ(0, check_tokens(s, 3, 0, 17));
	EXPECT_EQ(-EINVAL, kva_seq_shrink(s, 18));
	ASSERT_EQ(0, kva_seq_shrink(s, 16));
	EXPECT_EQ(1, held_frames(self->a));
	EXPECT_EQ(TPF, s->room);
	/* Growing again maps fresh frames behind the same range. */
	ASSERT_EQ(0, kva_seq_grow(s, 24));
	fill_tokens(s, 4, 16, 40);
	EXPECT_EQ(0, check_tokens(s, 3, 0, 16));
	EXPECT_EQ(0, check_tokens(s, 4, 16, 40));
	ASSERT_EQ(0, kva_seq_shrink(s, 0));
	EXPECT_EQ(0, held_frames(self->a));
	EXPECT_EQ(0, s->room);
	EXPECT_EQ(-EINVAL, kva_seq_shrink(NULL, 0));
	kva_seq_free(s);
}

TEST_SIGNAL(shrunk_frames_are_unmapped, SIGSEGV)
{
	struct kva_geometry g = small_geometry(FS);
	struct kva_arena *a;
	struct kva_seq *s;

	ASSERT_EQ(0, open_embedded(&a, 4, FS, 0));
	ASSERT_EQ(0, kva_seq_create(a, &g, 64, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 2 * TPF));
	ASSERT_EQ(0, kva_seq_shrink(s, TPF));
	signal(SIGSEGV, SIG_DFL);
	*(volatile char *)(uintptr_t)s->base = 1;
	*(volatile char *)(uintptr_t)(s->base + FS) = 1;
}

TEST_F(seq, free_returns_every_frame_and_the_range_is_reused)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 1000);
	struct kva_stat st;
	uint64_t base = s->base;

	ASSERT_EQ(0, kva_seq_grow(s, 100));
	EXPECT_EQ(7, held_frames(self->a));
	kva_seq_free(s);
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(0, st.held);
	EXPECT_EQ(0, st.nr_seqs);
	EXPECT_EQ(NR, st.nr_free);
	/* A range freed earlier serves the next sequence that fits in it. */
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 500, &s));
	EXPECT_EQ(base, s->base);
	ASSERT_EQ(0, kva_seq_grow(s, 20));
	fill_tokens(s, 5, 0, 20);
	EXPECT_EQ(0, check_tokens(s, 5, 0, 20));
	kva_seq_free(s);
	kva_seq_free(NULL);
}

TEST(close_with_open_sequences_releases_everything)
{
	struct kva_geometry g = small_geometry(FS);
	struct kva_seq *s, *c;
	struct kva_arena *a;

	ASSERT_EQ(0, open_embedded(&a, 16, FS, 0));
	ASSERT_EQ(0, kva_seq_create(a, &g, 200, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 40));
	ASSERT_EQ(0, kva_seq_fork(s, &c));
	ASSERT_EQ(0, kva_seq_grow(c, 1));
	/* ASan's leak check at exit sees whatever is left behind. */
	kva_close(a);
	kva_close(NULL);
}

/* ---- fork and copy-on-write ---- */

TEST_F(seq, fork_shares_every_frame_that_holds_tokens)
{
	struct kva_seq *p = new_seq(_metadata, self->a, &self->g, 1000);
	struct kva_grow r = { .seq = p, .tokens = 40, .ahead = 2 * TPF };
	uint64_t hp[8], hc[8];
	struct kva_seq *c;

	ASSERT_EQ(0, kva_seq_grow_batch(self->a, &r, 1));
	fill_tokens(p, 6, 0, 40);
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	EXPECT_EQ(5, held_frames(self->a));
	EXPECT_NE(p->base, c->base);
	EXPECT_EQ(40, c->tokens);
	EXPECT_EQ(1000, c->max_tokens);
	EXPECT_EQ(0, check_tokens(c, 6, 0, 40));
	/* The child maps the three frames with tokens, not the spare two. */
	EXPECT_EQ(5, kva_seq_handles(p, hp, 8));
	EXPECT_EQ(3, kva_seq_handles(c, hc, 8));
	EXPECT_EQ(0, memcmp(hp, hc, 3 * sizeof(*hp)));
	/* Both must copy the shared partial frame before appending. */
	EXPECT_EQ(40, p->room);
	EXPECT_EQ(40, c->room);
	kva_seq_free(p);
	kva_seq_free(c);
	EXPECT_EQ(0, held_frames(self->a));
}

TEST_F(seq, child_append_copies_the_partial_frame_and_never_changes_parent)
{
	struct kva_seq *p = new_seq(_metadata, self->a, &self->g, 1000);
	uint64_t hp[4], hc[4];
	struct kva_seq *c;

	ASSERT_EQ(0, kva_seq_grow(p, 40));
	fill_tokens(p, 7, 0, 40);
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	ASSERT_EQ(0, kva_seq_grow(c, 1));
	EXPECT_EQ(4, held_frames(self->a));
	EXPECT_EQ(3 * TPF, c->room);
	fill_tokens(c, 8, 40, 41);
	/* Overwrite the copied tokens in the child: still private. */
	fill_tokens(c, 9, 32, 40);
	EXPECT_EQ(0, check_tokens(p, 7, 0, 40));
	EXPECT_EQ(0, nonzero_tokens(p, 40, 48));
	EXPECT_EQ(0, check_tokens(c, 7, 0, 32));
	EXPECT_EQ(0, check_tokens(c, 9, 32, 40));
	EXPECT_EQ(0, check_tokens(c, 8, 40, 41));
	ASSERT_EQ(3, kva_seq_handles(p, hp, 4));
	ASSERT_EQ(3, kva_seq_handles(c, hc, 4));
	EXPECT_EQ(hp[0], hc[0]);
	EXPECT_EQ(hp[1], hc[1]);
	EXPECT_NE(hp[2], hc[2]);
	/* The parent's frame is private again: no copy for its append. */
	ASSERT_EQ(0, kva_seq_grow(p, 1));
	EXPECT_EQ(4, held_frames(self->a));
	fill_tokens(p, 10, 40, 41);
	EXPECT_EQ(0, check_tokens(c, 8, 40, 41));
	kva_seq_free(c);
	EXPECT_EQ(3, held_frames(self->a));
	EXPECT_EQ(0, check_tokens(p, 7, 0, 40));
	kva_seq_free(p);
}

TEST_F(seq, parent_append_first_takes_the_copy)
{
	struct kva_seq *p = new_seq(_metadata, self->a, &self->g, 1000);
	struct kva_seq *c;

	ASSERT_EQ(0, kva_seq_grow(p, 20));
	fill_tokens(p, 11, 0, 20);
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	ASSERT_EQ(0, kva_seq_grow(p, 5));
	EXPECT_EQ(3, held_frames(self->a));
	fill_tokens(p, 12, 16, 25);
	EXPECT_EQ(0, check_tokens(c, 11, 0, 20));
	EXPECT_EQ(0, nonzero_tokens(c, 20, 32));
	ASSERT_EQ(0, kva_seq_grow(c, 5));
	EXPECT_EQ(3, held_frames(self->a));
	kva_seq_free(p);
	EXPECT_EQ(2, held_frames(self->a));
	EXPECT_EQ(0, check_tokens(c, 11, 0, 20));
	kva_seq_free(c);
}

TEST_F(seq, fork_at_a_frame_boundary_needs_no_copy)
{
	struct kva_seq *p = new_seq(_metadata, self->a, &self->g, 1000);
	struct kva_seq *c;

	ASSERT_EQ(0, kva_seq_grow(p, 2 * TPF));
	fill_tokens(p, 13, 0, 2 * TPF);
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	EXPECT_EQ(2 * TPF, c->room);
	ASSERT_EQ(0, kva_seq_grow(c, 1));
	EXPECT_EQ(3, held_frames(self->a));
	ASSERT_EQ(0, kva_seq_grow(p, 1));
	EXPECT_EQ(4, held_frames(self->a));
	fill_tokens(c, 14, 2 * TPF, 2 * TPF + 1);
	fill_tokens(p, 15, 2 * TPF, 2 * TPF + 1);
	EXPECT_EQ(0, check_tokens(c, 14, 2 * TPF, 2 * TPF + 1));
	EXPECT_EQ(0, check_tokens(p, 15, 2 * TPF, 2 * TPF + 1));
	kva_seq_free(p);
	kva_seq_free(c);
	EXPECT_EQ(0, held_frames(self->a));
}

TEST_F(seq, shared_frames_return_when_the_last_user_lets_go)
{
	struct kva_seq *p = new_seq(_metadata, self->a, &self->g, 1000);
	struct kva_seq *c;

	ASSERT_EQ(0, kva_seq_grow(p, 40));
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	ASSERT_EQ(0, kva_seq_grow(c, 1));
	EXPECT_EQ(4, held_frames(self->a));
	kva_seq_free(p);
	EXPECT_EQ(3, held_frames(self->a));
	ASSERT_EQ(0, kva_seq_shrink(c, 10));
	EXPECT_EQ(1, held_frames(self->a));
	kva_seq_free(c);
	EXPECT_EQ(0, held_frames(self->a));
}

TEST_F(seq, shrink_into_a_shared_prefix_then_append_copies_that_frame)
{
	struct kva_seq *p = new_seq(_metadata, self->a, &self->g, 1000);
	struct kva_seq *c;

	ASSERT_EQ(0, kva_seq_grow(p, 40));
	fill_tokens(p, 16, 0, 40);
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	ASSERT_EQ(0, kva_seq_shrink(c, 20));
	EXPECT_EQ(3, held_frames(self->a));
	EXPECT_EQ(20, c->room);
	ASSERT_EQ(0, kva_seq_grow(c, 1));
	EXPECT_EQ(4, held_frames(self->a));
	fill_tokens(c, 17, 20, 21);
	EXPECT_EQ(0, check_tokens(p, 16, 0, 40));
	EXPECT_EQ(0, check_tokens(c, 16, 0, 20));
	EXPECT_EQ(0, check_tokens(c, 17, 20, 21));
	kva_seq_free(c);
	kva_seq_free(p);
	EXPECT_EQ(0, held_frames(self->a));
}

TEST_F(seq, forks_of_forks_share_and_copy_independently)
{
	struct kva_seq *s[4];
	int i, order[4] = { 1, 3, 0, 2 };

	s[0] = new_seq(_metadata, self->a, &self->g, 1000);
	ASSERT_EQ(0, kva_seq_grow(s[0], 40));
	fill_tokens(s[0], 20, 0, 40);
	ASSERT_EQ(0, kva_seq_fork(s[0], &s[1]));
	ASSERT_EQ(0, kva_seq_fork(s[1], &s[2]));
	ASSERT_EQ(0, kva_seq_fork(s[0], &s[3]));
	EXPECT_EQ(3, held_frames(self->a));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, kva_seq_grow(s[i], 1 + i));
		fill_tokens(s[i], 21 + i, 40, 41 + i);
	}
	/* The last to append finds its frame private: 3 copies, not 4. */
	EXPECT_EQ(6, held_frames(self->a));
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(0, check_tokens(s[i], 20, 0, 40));
		EXPECT_EQ(0, check_tokens(s[i], 21 + i, 40, 41 + i));
	}
	for (i = 0; i < 4; i++)
		kva_seq_free(s[order[i]]);
	EXPECT_EQ(0, held_frames(self->a));
}

TEST_F(seq, sharers_appending_in_one_batch_copy_all_but_the_last)
{
	struct kva_seq *s[3];
	struct kva_grow r[3];
	struct kva_stat st;
	int i;

	s[0] = new_seq(_metadata, self->a, &self->g, 1000);
	ASSERT_EQ(0, kva_seq_grow(s[0], 40));
	fill_tokens(s[0], 22, 0, 40);
	ASSERT_EQ(0, kva_seq_fork(s[0], &s[1]));
	ASSERT_EQ(0, kva_seq_fork(s[0], &s[2]));
	for (i = 0; i < 3; i++)
		r[i] = (struct kva_grow){ .seq = s[i], .tokens = 1 };
	ASSERT_EQ(0, kva_seq_grow_batch(self->a, r, 3));
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(5, st.held);
	EXPECT_EQ(3 * 41 - 2 * 32, st.my_filled_tokens);
	EXPECT_EQ(st.my_filled_tokens, st.filled_tokens);
	for (i = 0; i < 3; i++) {
		fill_tokens(s[i], 23 + i, 40, 41);
		EXPECT_EQ(TPF * 3, s[i]->room);
	}
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(0, check_tokens(s[i], 22, 0, 40));
		EXPECT_EQ(0, check_tokens(s[i], 23 + i, 40, 41));
	}
	for (i = 0; i < 3; i++)
		kva_seq_free(s[i]);
	EXPECT_EQ(0, held_frames(self->a));
}

TEST_F(seq, fork_rejects_null_arguments)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 10), *c;

	EXPECT_EQ(-EINVAL, kva_seq_fork(NULL, &c));
	EXPECT_EQ(-EINVAL, kva_seq_fork(s, NULL));
	/* A fork of an empty sequence maps nothing. */
	ASSERT_EQ(0, kva_seq_fork(s, &c));
	EXPECT_EQ(0, c->tokens);
	EXPECT_EQ(0, kva_seq_handles(c, NULL, 0));
	kva_seq_free(c);
	kva_seq_free(s);
}

/* ---- accounting ---- */

TEST_F(seq, usage_counts_shared_tokens_once)
{
	struct kva_seq *p = new_seq(_metadata, self->a, &self->g, 1000);
	struct kva_seq *c;
	struct kva_stat st;

	ASSERT_EQ(0, kva_seq_grow(p, 40));
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(80, st.seq_tokens);
	EXPECT_EQ(40, st.my_filled_tokens);
	EXPECT_EQ(40 * 256, st.my_filled_bytes);
	EXPECT_EQ(2, st.nr_seqs);
	/* The child's copy of frame 2 holds 8 + 2 tokens of its own. */
	ASSERT_EQ(0, kva_seq_grow(c, 2));
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(82, st.seq_tokens);
	EXPECT_EQ(50, st.my_filled_tokens);
	/* Reported with the ALLOC of the copy, before any sync. */
	EXPECT_EQ(50, st.filled_tokens);
	EXPECT_EQ(50 * 256, st.filled_bytes);
	/* A shrink into the shared prefix: frame 1 still holds 16. */
	ASSERT_EQ(0, kva_seq_shrink(c, 20));
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(40, st.my_filled_tokens);
	EXPECT_EQ(40, st.filled_tokens);
	kva_seq_free(p);
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(20, st.my_filled_tokens);
	EXPECT_EQ(20, st.filled_tokens);
	kva_seq_free(c);
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(0, st.my_filled_tokens);
	EXPECT_EQ(0, st.filled_tokens);
}

TEST_F(seq, fast_path_tokens_are_reported_by_sync_usage)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 1000);
	struct kva_grow r = { .seq = s, .tokens = 3, .ahead = 100 };
	struct kva_stat st;

	ASSERT_EQ(0, kva_seq_grow_batch(self->a, &r, 1));
	ASSERT_EQ(0, kva_seq_grow(s, 50));
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(3, st.filled_tokens);
	EXPECT_EQ(53, st.my_filled_tokens);
	ASSERT_EQ(0, kva_sync_usage(self->a));
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(53, st.filled_tokens);
	EXPECT_EQ(53 * 256, st.filled_bytes);
	EXPECT_EQ(NR, st.nr_frames);
	EXPECT_EQ(FS, st.frame_size);
	EXPECT_EQ(1, st.nr_clients);
	EXPECT_EQ(-EINVAL, kva_sync_usage(NULL));
	EXPECT_EQ(-EINVAL, kva_stat(self->a, NULL));
	kva_seq_free(s);
}

/* ---- raw frames ---- */

TEST_F(seq, raw_alloc_and_free_follow_the_module_rules)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 100);
	uint64_t h[NR], sh[2];

	ASSERT_EQ(5, kva_alloc(self->a, h, 5, 0));
	EXPECT_EQ(5, held_frames(self->a));
	ASSERT_EQ(0, kva_free(self->a, h, 5));
	EXPECT_EQ(0, held_frames(self->a));
	EXPECT_EQ(-ESTALE, kva_free(self->a, h, 1));
	EXPECT_EQ(-EINVAL, kva_alloc(self->a, h, 0, 0));
	EXPECT_EQ(-EINVAL, kva_alloc(self->a, h, 1, 2));
	EXPECT_EQ(-EINVAL, kva_free(self->a, h, 0));

	ASSERT_EQ(0, kva_seq_grow(s, 2 * TPF));
	ASSERT_EQ(2, kva_seq_handles(s, sh, 2));
	EXPECT_EQ(-EBUSY, kva_free(self->a, sh, 1));
	EXPECT_EQ(-ENOSPC, kva_alloc(self->a, h, NR - 1, 0));
	EXPECT_EQ(NR - 2, kva_alloc(self->a, h, NR, KVA_ALLOC_PARTIAL));
	ASSERT_EQ(0, kva_free(self->a, h, NR - 2));
	ASSERT_EQ(1, kva_alloc(self->a, h, 1, 0));
	h[1] = h[0];
	EXPECT_EQ(-EINVAL, kva_free(self->a, h, 2));
	ASSERT_EQ(0, kva_free(self->a, h, 1));
	kva_seq_free(s);
}

/* ---- error paths leave everything as it was ---- */

TEST_F(seq, map_failure_in_a_batch_leaves_every_sequence_unchanged)
{
	struct kva_seq *s[3];
	struct kva_grow r[3];
	struct kva_stat before, after;
	int i;

	for (i = 0; i < 3; i++) {
		s[i] = new_seq(_metadata, self->a, &self->g, 1000);
		ASSERT_EQ(0, kva_seq_grow(s[i], 5));
		fill_tokens(s[i], 30 + i, 0, 5);
		r[i] = (struct kva_grow){ .seq = s[i], .tokens = 40 };
	}
	ASSERT_EQ(0, kva_stat(self->a, &before));
	hooks_reset();
	hooks_fail("host.map", 3, ENOMEM);
	EXPECT_EQ(-ENOMEM, kva_seq_grow_batch(self->a, r, 3));
	EXPECT_EQ(3, hooks_count("host.map"));
	/* Two sequences' new frames were mapped and are unmapped again. */
	EXPECT_EQ(2, hooks_count("host.unmap"));
	ASSERT_EQ(0, kva_stat(self->a, &after));
	EXPECT_EQ(before.held, after.held);
	EXPECT_EQ(before.nr_free, after.nr_free);
	EXPECT_EQ(before.filled_tokens, after.filled_tokens);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(5, s[i]->tokens);
		EXPECT_EQ(TPF, s[i]->room);
		EXPECT_EQ(0, check_tokens(s[i], 30 + i, 0, 5));
	}
	ASSERT_EQ(0, kva_seq_grow_batch(self->a, r, 3));
	for (i = 0; i < 3; i++)
		kva_seq_free(s[i]);
	EXPECT_EQ(0, held_frames(self->a));
}

TEST_F(seq, failed_copy_on_write_leaves_both_sequences_unchanged)
{
	struct kva_seq *p = new_seq(_metadata, self->a, &self->g, 1000);
	uint64_t hp[3], hc[3];
	struct kva_seq *c;
	int nth;

	ASSERT_EQ(0, kva_seq_grow(p, 40));
	fill_tokens(p, 40, 0, 40);
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	/* 1: the copy's scratch mapping; 2: the copy into the child's slot. */
	for (nth = 1; nth <= 2; nth++) {
		hooks_reset();
		hooks_fail("host.map", nth, ENOMEM);
		EXPECT_EQ(-ENOMEM, kva_seq_grow(c, 1));
		EXPECT_EQ(40, c->tokens);
		EXPECT_EQ(40, c->room);
		EXPECT_EQ(3, held_frames(self->a));
		ASSERT_EQ(3, kva_seq_handles(p, hp, 3));
		ASSERT_EQ(3, kva_seq_handles(c, hc, 3));
		EXPECT_EQ(0, memcmp(hp, hc, sizeof(hp)));
		EXPECT_EQ(0, check_tokens(c, 40, 0, 40));
	}
	ASSERT_EQ(0, kva_seq_grow(c, 1));
	fill_tokens(c, 41, 32, 41);
	EXPECT_EQ(0, check_tokens(p, 40, 0, 40));
	kva_seq_free(p);
	kva_seq_free(c);
	EXPECT_EQ(0, held_frames(self->a));
}

TEST_F(seq, failed_unmap_in_shrink_changes_nothing)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 1000);

	ASSERT_EQ(0, kva_seq_grow(s, 40));
	fill_tokens(s, 50, 0, 40);
	hooks_fail("host.unmap", 1, ENOMEM);
	EXPECT_EQ(-ENOMEM, kva_seq_shrink(s, 10));
	EXPECT_EQ(40, s->tokens);
	EXPECT_EQ(3, held_frames(self->a));
	EXPECT_EQ(0, check_tokens(s, 50, 0, 40));
	ASSERT_EQ(0, kva_seq_shrink(s, 10));
	EXPECT_EQ(1, held_frames(self->a));
	kva_seq_free(s);
}

TEST_F(seq, failed_unmap_at_free_keeps_the_frames_out_of_the_arena)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 1000);
	struct kva_stat st;

	ASSERT_EQ(0, kva_seq_grow(s, 40));
	hooks_fail("host.unmap", 1, ENOMEM);
	kva_seq_free(s);
	/* Still mapped somewhere: never handed out again before close. */
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(0, st.nr_seqs);
	EXPECT_EQ(3, st.held);
	EXPECT_EQ(NR - 3, st.nr_free);
}

TEST_F(seq, failed_reservation_fails_create_and_fork)
{
	struct kva_seq *s = new_seq(_metadata, self->a, &self->g, 100), *c;

	ASSERT_EQ(0, kva_seq_grow(s, 20));
	hooks_fail("host.reserve", 1, ENOMEM);
	EXPECT_EQ(-ENOMEM, kva_seq_create(self->a, &self->g, 1000, &c));
	hooks_fail("host.reserve", 1, ENOMEM);
	EXPECT_EQ(-ENOMEM, kva_seq_fork(s, &c));
	hooks_fail("host.map", 1, ENOMEM);
	EXPECT_EQ(-ENOMEM, kva_seq_fork(s, &c));
	EXPECT_EQ(2 * TPF, s->room);
	EXPECT_EQ(2, held_frames(self->a));
	kva_seq_free(s);
}

TEST(failed_memfd_fails_open)
{
	struct kva_arena *a;

	hooks_fail("host.memfd", 1, EMFILE);
	EXPECT_EQ(-EMFILE, open_embedded(&a, 4, FS, 0));
}

/* ---- host memory options ---- */

TEST(prefault_and_populate_keep_the_data_path_working)
{
	struct kva_geometry g = small_geometry(64u << 10);
	struct kva_arena_info info;
	struct kva_arena *a;
	struct kva_seq *s;

	ASSERT_EQ(0, open_embedded(&a, 8, 64u << 10,
				   KVA_OPEN_PREFAULT | KVA_OPEN_POPULATE));
	ASSERT_EQ(0, kva_arena_info(a, &info));
	EXPECT_EQ(KVA_OPEN_PREFAULT | KVA_OPEN_POPULATE, info.flags);
	ASSERT_EQ(0, kva_seq_create(a, &g, 2000, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 600));
	fill_tokens(s, 60, 0, 600);
	EXPECT_EQ(0, check_tokens(s, 60, 0, 600));
	kva_close(a);
}

TEST(hugetlb_needs_2mib_frames_and_reserved_pages)
{
	struct kva_arena *a;
	unsigned long free_pages = 0;
	char line[128];
	FILE *f;
	int ret;

	EXPECT_EQ(-EINVAL, open_embedded(&a, 4, FS, KVA_OPEN_HUGETLB));
	f = fopen("/proc/meminfo", "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		sscanf(line, "HugePages_Free: %lu", &free_pages);
	fclose(f);
	ret = open_embedded(&a, 2, 2u << 20, KVA_OPEN_HUGETLB);
	if (free_pages >= 2) {
		ASSERT_EQ(0, ret);
		kva_close(a);
		return;
	}
	/* No pool: refused when the arena is made, not by SIGBUS later. */
	EXPECT_TRUE(ret == -ENOSPC || ret == -ENOMEM || ret == -EINVAL);
}

/* ---- threads ---- */

struct worker {
	struct kva_arena *a;
	struct kva_geometry g;
	uint32_t tag;
	uint64_t bad;
	int err;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct kva_seq *s, *c;
	int round, ret;

	for (round = 0; round < 50; round++) {
		ret = kva_seq_create(w->a, &w->g, 200, &s);
		if (ret)
			goto fail;
		ret = kva_seq_grow(s, 1 + (w->tag + round) % 40);
		if (!ret)
			ret = kva_seq_fork(s, &c);
		if (ret) {
			kva_seq_free(s);
			goto fail;
		}
		fill_tokens(s, w->tag, 0, s->tokens);
		ret = kva_seq_grow(c, 3);
		if (!ret) {
			fill_tokens(c, w->tag + 1000, c->tokens - 3, c->tokens);
			w->bad += check_tokens(s, w->tag, 0, s->tokens);
			ret = kva_seq_shrink(s, s->tokens / 2);
		}
		kva_seq_free(c);
		kva_seq_free(s);
		if (ret)
			goto fail;
	}
	return NULL;
fail:
	w->err = ret;
	return NULL;
}

TEST_F(seq, threads_use_their_own_sequences_of_one_arena_at_once)
{
	struct worker w[4];
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++) {
		w[i] = (struct worker){ .a = self->a, .g = self->g,
					.tag = 100 + i };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, worker_main, &w[i]));
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, w[i].err);
		EXPECT_EQ(0, w[i].bad);
	}
	EXPECT_EQ(0, held_frames(self->a));
}


TEST(host_arena_refuses_a_stream)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_EMBEDDED, .nr_frames = 4, .frame_size = 4096,
	};
	struct kva_arena *a;

	ASSERT_EQ(0, kva_open(&o, &a));
	EXPECT_EQ(-EOPNOTSUPP, kva_arena_set_stream(a, NULL));
	EXPECT_EQ(0, kva_arena_sync(a));
	EXPECT_EQ(-EINVAL, kva_arena_set_stream(NULL, NULL));
	EXPECT_EQ(-EINVAL, kva_arena_sync(NULL));
	kva_close(a);
}

TEST_HARNESS_MAIN
