// SPDX-License-Identifier: GPL-2.0
/*
 * Native tests of libkvarena's prefix sharing on an embedded arena with
 * the host backend: SHA-256 against the FIPS 180-4 examples, the key
 * chain against an independent computation, kva_seq_publish() and
 * kva_seq_attach_prefix() (same frames, same data, read-only mappings,
 * copy-on-write of a published frame, the cache and its reclaim), and
 * their argument checks.  Device mode runs in the VM (vm_prefix_test.c).
 * Built against the KVA_TESTING objects, plain and under ASan/UBSan.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"

#include "common.h"
#include "hooks.h"
#include "internal.h"	/* kva_sha256_*() */

#define FS	4096u		/* frame size: 16 tokens of small_geometry */
#define TPF	16u
#define NR	64u

static void hex(const uint8_t *d, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void sha256_hex(const void *data, size_t n, char out[65])
{
	struct kva_sha256 s;
	uint8_t d[32];

	kva_sha256_init(&s);
	kva_sha256_update(&s, data, n);
	kva_sha256_final(&s, d);
	hex(d, 32, out);
}

/* ---- SHA-256 ------------------------------------------------------------ */

TEST(sha256_matches_the_fips_180_4_examples)
{
	static const char *const msg448 =
		"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	static const char *const msg896 =
		"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
		"hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
	struct kva_sha256 s;
	char out[65], chunk[1000];
	uint8_t d[32];
	int i;

	sha256_hex("abc", 3, out);
	EXPECT_STREQ("ba7816bf8f01cfea414140de5dae2223"
		     "b00361a396177a9cb410ff61f20015ad", out);
	sha256_hex("", 0, out);
	EXPECT_STREQ("e3b0c44298fc1c149afbf4c8996fb924"
		     "27ae41e4649b934ca495991b7852b855", out);
	sha256_hex(msg448, strlen(msg448), out);
	EXPECT_STREQ("248d6a61d20638b8e5c026930c3e6039"
		     "a33ce45964ff2167f6ecedd419db06c1", out);
	sha256_hex(msg896, strlen(msg896), out);
	EXPECT_STREQ("cf5b16a778af8380036ce59e7b049237"
		     "0b249b11e8f07a51afac45037afee9d1", out);
	/* One million 'a', a thousand at a time. */
	memset(chunk, 'a', sizeof(chunk));
	kva_sha256_init(&s);
	for (i = 0; i < 1000; i++)
		kva_sha256_update(&s, chunk, sizeof(chunk));
	kva_sha256_final(&s, d);
	hex(d, 32, out);
	EXPECT_STREQ("cdc76e5c9914fb9281a1c7e284d73e67"
		     "f1809a48a497200e046d39ccc7112cd0", out);
}

TEST(sha256_is_the_same_however_the_input_is_split)
{
	uint8_t msg[300], one[32], split[32];
	size_t len, i, step;

	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 151 + 7);
	/* Every length around the padding boundaries (55, 56, 63, 64...). */
	for (len = 0; len <= sizeof(msg); len++) {
		struct kva_sha256 s;

		kva_sha256_init(&s);
		kva_sha256_update(&s, msg, len);
		kva_sha256_final(&s, one);
		for (step = 1; step <= 65; step += 16) {
			kva_sha256_init(&s);
			for (i = 0; i < len; i += step)
				kva_sha256_update(&s, msg + i,
						  len - i < step ? len - i : step);
			kva_sha256_final(&s, split);
			ASSERT_EQ(0, memcmp(one, split, 32));
		}
	}
}

/* ---- the key chain -------------------------------------------------------- */

static uint32_t tok(uint64_t i)
{
	return (uint32_t)(i * 7919 + 13);
}

static void tokens(uint32_t *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		t[i] = tok(i);
}

TEST(prefix_keys_match_an_independent_computation)
{
	/*
	 * From Python's hashlib with the formula of kvarena.h:
	 * root = sha256(b"kvarena prefix v1" + pack("<QIIII", 4096, 2, 2,
	 * 16, 1)); key[i] = sha256(prev + pack("<I", 7) + b"model-x" +
	 * pack("<I", 16) + tokens[16 i .. 16 i + 15] as "<I"), tokens[j] =
	 * j * 7919 + 13.
	 */
	static const char *const want[3] = {
		"10ad143b24aa3d78c3c4bda6a42ddbac250248e1c301d8e8dc285ce67d994214",
		"a071eabd0d6b7168d364e669fc647227625a64c1f7d7ec1a127acaee0cb28d74",
		"9ffaec176b2b9323f64af93a3493a4cc2dbe5b3eac6c033ba3ce2f26e72bde1e",
	};
	struct kva_geometry g = small_geometry(FS);
	struct kva_key k[4];
	uint32_t t[50];
	char out[65];
	int i;

	tokens(t, 50);
	/* 50 tokens: three full frames; the partial fourth has no key. */
	ASSERT_EQ(3, kva_prefix_keys(&g, "model-x", 7, t, 50, k, 4));
	for (i = 0; i < 3; i++) {
		hex(k[i].b, KVA_KEY_LEN, out);
		EXPECT_STREQ(want[i], out);
	}
}

TEST(prefix_keys_chain_so_a_token_changes_its_frame_and_all_after)
{
	struct kva_geometry g = small_geometry(FS);
	struct kva_key a[4], b[4];
	uint32_t t[64];

	tokens(t, 64);
	ASSERT_EQ(4, kva_prefix_keys(&g, "m", 1, t, 64, a, 4));
	t[TPF + 3]++;
	ASSERT_EQ(4, kva_prefix_keys(&g, "m", 1, t, 64, b, 4));
	EXPECT_EQ(0, memcmp(&a[0], &b[0], sizeof(a[0])));
	EXPECT_NE(0, memcmp(&a[1], &b[1], sizeof(a[1])));
	EXPECT_NE(0, memcmp(&a[2], &b[2], sizeof(a[2])));
	EXPECT_NE(0, memcmp(&a[3], &b[3], sizeof(a[3])));
	/* Keys of distinct frames differ even for equal tokens. */
	memset(t, 0, sizeof(t));
	ASSERT_EQ(4, kva_prefix_keys(&g, "m", 1, t, 64, a, 4));
	EXPECT_NE(0, memcmp(&a[0], &a[1], sizeof(a[0])));
}

TEST(prefix_keys_depend_on_the_namespace_and_the_layout)
{
	struct kva_geometry g = small_geometry(FS), g2 = g;
	struct kva_key a, b;
	uint32_t t[TPF];

	tokens(t, TPF);
	ASSERT_EQ(1, kva_prefix_keys(&g, "model-a", 7, t, TPF, &a, 1));
	ASSERT_EQ(1, kva_prefix_keys(&g, "model-b", 7, t, TPF, &b, 1));
	EXPECT_NE(0, memcmp(&a, &b, sizeof(a)));
	/* Lengths are hashed too: "ab" + tokens is not "a" + "b"... */
	ASSERT_EQ(1, kva_prefix_keys(&g, "model-a", 6, t, TPF, &b, 1));
	EXPECT_NE(0, memcmp(&a, &b, sizeof(a)));
	ASSERT_EQ(1, kva_prefix_keys(&g, NULL, 0, t, TPF, &b, 1));
	EXPECT_NE(0, memcmp(&a, &b, sizeof(a)));
	/* Another KV dtype, same tokens per frame: another key. */
	g2.dtype = KVA_DTYPE_BF16;
	ASSERT_EQ(0, kva_geometry_init(&g2));
	ASSERT_EQ(TPF, g2.tokens_per_frame);
	ASSERT_EQ(1, kva_prefix_keys(&g2, "model-a", 7, t, TPF, &b, 1));
	EXPECT_NE(0, memcmp(&a, &b, sizeof(a)));
}

TEST(prefix_keys_check_their_arguments)
{
	struct kva_geometry g = small_geometry(FS), bad = g;
	struct kva_key k[2];
	uint32_t t[3 * TPF];

	tokens(t, 3 * TPF);
	EXPECT_EQ(-EINVAL, kva_prefix_keys(NULL, "m", 1, t, TPF, k, 2));
	EXPECT_EQ(-EINVAL, kva_prefix_keys(&g, NULL, 1, t, TPF, k, 2));
	EXPECT_EQ(-EINVAL, kva_prefix_keys(&g, "m", 1, NULL, TPF, k, 2));
	EXPECT_EQ(-EINVAL, kva_prefix_keys(&g, "m", 1, t, TPF, NULL, 2));
	bad.head_dim = 0;
	EXPECT_EQ(-EINVAL, kva_prefix_keys(&bad, "m", 1, t, TPF, k, 2));
	/* No full frame, no key; max_keys caps. */
	EXPECT_EQ(0, kva_prefix_keys(&g, "m", 1, t, TPF - 1, k, 2));
	EXPECT_EQ(2, kva_prefix_keys(&g, "m", 1, t, 3 * TPF, k, 2));
	EXPECT_EQ(0, kva_prefix_keys(&g, "m", 1, t, 3 * TPF, NULL, 0));
}

/* ---- sequences ----------------------------------------------------------- */

FIXTURE(prefix) {
	struct kva_arena *a;
	struct kva_geometry g;
	struct kva_key k[8];
};

FIXTURE_SETUP(prefix)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_EMBEDDED, .name = "prefix", .nr_frames = NR,
		.frame_size = FS, .mem_kind = KVA_BACKEND_HOST,
	};
	uint32_t t[8 * TPF];

	hooks_reset();
	ASSERT_EQ(0, kva_open(&o, &self->a));
	self->g = small_geometry(FS);
	tokens(t, 8 * TPF);
	ASSERT_EQ(8, kva_prefix_keys(&self->g, "ns", 2, t, 8 * TPF, self->k,
				     8));
}

FIXTURE_TEARDOWN(prefix)
{
	kva_close(self->a);
}

/* A sequence of @tokens tokens of @tag's pattern. */
static struct kva_seq *filled(struct __test_metadata *_metadata,
			      struct kva_arena *a, const struct kva_geometry *g,
			      uint32_t tag, uint64_t tokens, uint64_t max)
{
	struct kva_seq *s = NULL;

	EXPECT_EQ(0, kva_seq_create(a, g, max, &s));
	if (s && tokens) {
		EXPECT_EQ(0, kva_seq_grow(s, tokens));
		fill_tokens(s, tag, 0, tokens);
	}
	return s;
}

static struct kva_stat arena_stat(struct kva_arena *a)
{
	struct kva_stat st;

	kva_stat(a, &st);
	return st;
}

TEST_F(prefix, attach_maps_the_frames_a_sequence_published)
{
	struct kva_seq *a = filled(_metadata, self->a, &self->g, 1,
				   3 * TPF + 5, 8 * TPF);
	struct kva_seq *b = filled(_metadata, self->a, &self->g, 0, 0,
				   8 * TPF);
	uint64_t ha[4], hb[4];
	struct kva_stat st;

	ASSERT_EQ(3, kva_seq_publish(a, self->k, 3));
	ASSERT_EQ(3, kva_seq_attach_prefix(b, self->k, 8));
	EXPECT_EQ(3 * TPF, b->tokens);
	EXPECT_EQ(3 * TPF, b->room);
	EXPECT_EQ(0, check_tokens(b, 1, 0, 3 * TPF));
	ASSERT_EQ(4, kva_seq_handles(a, ha, 4));
	ASSERT_EQ(3, kva_seq_handles(b, hb, 4));
	EXPECT_EQ(0, memcmp(ha, hb, 3 * sizeof(ha[0])));
	/* Shared, not copied: no frame more than a's four. */
	st = arena_stat(self->a);
	EXPECT_EQ(4, st.held);
	EXPECT_EQ(4, st.nr_held);
	EXPECT_EQ(3, st.nr_published);
	EXPECT_EQ(3, st.cache_hits);
	EXPECT_EQ(5, st.cache_misses);
	/* b goes on in a frame of its own; a's tail is untouched. */
	ASSERT_EQ(0, kva_seq_grow(b, 7));
	fill_tokens(b, 2, 3 * TPF, 3 * TPF + 7);
	EXPECT_EQ(0, check_tokens(a, 1, 0, 3 * TPF + 5));
	EXPECT_EQ(0, check_tokens(b, 1, 0, 3 * TPF));
	EXPECT_EQ(0, check_tokens(b, 2, 3 * TPF, 3 * TPF + 7));
	EXPECT_EQ(5, arena_stat(self->a).held);
	kva_seq_free(a);
	kva_seq_free(b);
}

TEST_F(prefix, published_frames_outlive_their_sequence_as_cached)
{
	struct kva_seq *a = filled(_metadata, self->a, &self->g, 3,
				   4 * TPF, 8 * TPF), *b;
	struct kva_stat st;

	ASSERT_EQ(4, kva_seq_publish(a, self->k, 4));
	kva_seq_free(a);
	st = arena_stat(self->a);
	EXPECT_EQ(0, st.held);
	EXPECT_EQ(4, st.nr_cached);
	EXPECT_EQ(NR - 4, st.nr_free);
	b = filled(_metadata, self->a, &self->g, 0, 0, 8 * TPF);
	ASSERT_EQ(4, kva_seq_attach_prefix(b, self->k, 4));
	EXPECT_EQ(0, check_tokens(b, 3, 0, 4 * TPF));
	st = arena_stat(self->a);
	EXPECT_EQ(0, st.nr_cached);
	EXPECT_EQ(4, st.held);
	EXPECT_EQ(4 * TPF, st.my_filled_tokens);
	kva_seq_free(b);
	EXPECT_EQ(4, arena_stat(self->a).nr_cached);
}

TEST_SIGNAL(attached_frames_are_mapped_read_only, SIGSEGV)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_EMBEDDED, .nr_frames = NR, .frame_size = FS,
	};
	struct kva_geometry g = small_geometry(FS);
	struct kva_seq *a, *b;
	struct kva_arena *ar;
	struct kva_key k[2];
	uint32_t t[2 * TPF];
	uint16_t *p;

	tokens(t, 2 * TPF);
	ASSERT_EQ(2, kva_prefix_keys(&g, NULL, 0, t, 2 * TPF, k, 2));
	ASSERT_EQ(0, kva_open(&o, &ar));
	ASSERT_EQ(0, kva_seq_create(ar, &g, 4 * TPF, &a));
	ASSERT_EQ(0, kva_seq_create(ar, &g, 4 * TPF, &b));
	ASSERT_EQ(0, kva_seq_grow(a, 2 * TPF));
	ASSERT_EQ(2, kva_seq_publish(a, k, 2));
	ASSERT_EQ(2, kva_seq_attach_prefix(b, k, 2));
	p = kva_seq_kv_ptr(b, 0, 0, 0, 5);
	EXPECT_EQ(0, p[0]);		/* readable... */
	signal(SIGSEGV, SIG_DFL);	/* not the sanitizer's report */
	*(volatile uint16_t *)p = 1;	/* ...but not writable */
}

TEST_F(prefix, growing_into_an_attached_frame_copies_it_first)
{
	struct kva_seq *a = filled(_metadata, self->a, &self->g, 4,
				   3 * TPF, 8 * TPF);
	struct kva_seq *b = filled(_metadata, self->a, &self->g, 0, 0,
				   8 * TPF), *c;
	uint64_t ha[3], hb[3];

	ASSERT_EQ(3, kva_seq_publish(a, self->k, 3));
	ASSERT_EQ(3, kva_seq_attach_prefix(b, self->k, 3));
	/* Recompute the last token: shrink by one, grow by one. */
	ASSERT_EQ(0, kva_seq_shrink(b, 3 * TPF - 1));
	EXPECT_EQ(3 * TPF - 1, b->room);	/* the fast path stops there */
	ASSERT_EQ(0, kva_seq_grow(b, 1));
	fill_tokens(b, 5, 3 * TPF - 1, 3 * TPF);
	ASSERT_EQ(3, kva_seq_handles(a, ha, 3));
	ASSERT_EQ(3, kva_seq_handles(b, hb, 3));
	EXPECT_EQ(ha[0], hb[0]);
	EXPECT_EQ(ha[1], hb[1]);
	EXPECT_NE(ha[2], hb[2]);
	EXPECT_EQ(0, check_tokens(b, 4, 0, 3 * TPF - 1));
	EXPECT_EQ(0, check_tokens(b, 5, 3 * TPF - 1, 3 * TPF));
	/* The published frame is as it was, for a and for a new reader. */
	EXPECT_EQ(0, check_tokens(a, 4, 0, 3 * TPF));
	c = filled(_metadata, self->a, &self->g, 0, 0, 8 * TPF);
	ASSERT_EQ(3, kva_seq_attach_prefix(c, self->k, 3));
	EXPECT_EQ(0, check_tokens(c, 4, 0, 3 * TPF));
	EXPECT_EQ(4, arena_stat(self->a).held);
	kva_seq_free(a);
	kva_seq_free(b);
	kva_seq_free(c);
}

TEST_F(prefix, the_last_user_copying_a_published_frame_returns_it_to_the_cache)
{
	struct kva_seq *a = filled(_metadata, self->a, &self->g, 6,
				   2 * TPF, 8 * TPF);
	struct kva_seq *b = filled(_metadata, self->a, &self->g, 0, 0,
				   8 * TPF), *c = NULL;
	struct kva_grow r[2];
	struct kva_stat st;

	ASSERT_EQ(2, kva_seq_publish(a, self->k, 2));
	kva_seq_free(a);
	ASSERT_EQ(2, kva_seq_attach_prefix(b, self->k, 2));
	ASSERT_EQ(0, kva_seq_fork(b, &c));
	ASSERT_EQ(0, kva_seq_shrink(b, 2 * TPF - 3));
	ASSERT_EQ(0, kva_seq_shrink(c, 2 * TPF - 3));
	/* Both append into the published frame: both copy, in one batch. */
	r[0] = (struct kva_grow){ b, 1, 0 };
	r[1] = (struct kva_grow){ c, 1, 0 };
	ASSERT_EQ(0, kva_seq_grow_batch(self->a, r, 2));
	fill_tokens(b, 7, 2 * TPF - 3, 2 * TPF - 2);
	fill_tokens(c, 8, 2 * TPF - 3, 2 * TPF - 2);
	EXPECT_EQ(0, check_tokens(b, 6, 0, 2 * TPF - 3));
	EXPECT_EQ(0, check_tokens(c, 6, 0, 2 * TPF - 3));
	EXPECT_EQ(0, check_tokens(b, 7, 2 * TPF - 3, 2 * TPF - 2));
	EXPECT_EQ(0, check_tokens(c, 8, 2 * TPF - 3, 2 * TPF - 2));
	st = arena_stat(self->a);
	/* Frame 0 shared, two copies of frame 1; frame 1 back in the cache. */
	EXPECT_EQ(3, st.held);
	EXPECT_EQ(1, st.nr_cached);
	kva_seq_free(b);
	kva_seq_free(c);
	st = arena_stat(self->a);
	EXPECT_EQ(2, st.nr_cached);
	EXPECT_EQ(0, st.held);
}

TEST_F(prefix, the_first_publisher_keeps_the_key)
{
	struct kva_seq *a = filled(_metadata, self->a, &self->g, 9,
				   2 * TPF, 8 * TPF);
	struct kva_seq *a2 = filled(_metadata, self->a, &self->g, 9,
				    2 * TPF, 8 * TPF);
	uint64_t h[2], h2[2];

	ASSERT_EQ(2, kva_seq_publish(a, self->k, 2));
	ASSERT_EQ(0, kva_seq_publish(a2, self->k, 2));
	/* Again, same keys: nothing new. */
	ASSERT_EQ(0, kva_seq_publish(a, self->k, 2));
	EXPECT_EQ(2, arena_stat(self->a).nr_published);
	/* a2's frames stayed private: rewriting one copies nothing. */
	ASSERT_EQ(2, kva_seq_handles(a2, h, 2));
	ASSERT_EQ(0, kva_seq_shrink(a2, 2 * TPF - 1));
	ASSERT_EQ(0, kva_seq_grow(a2, 1));
	ASSERT_EQ(2, kva_seq_handles(a2, h2, 2));
	EXPECT_EQ(h[1], h2[1]);
	fill_tokens(a2, 10, 2 * TPF - 1, 2 * TPF);
	EXPECT_EQ(0, check_tokens(a, 9, 0, 2 * TPF));
	kva_seq_free(a);
	kva_seq_free(a2);
	EXPECT_EQ(2, arena_stat(self->a).nr_cached);
	EXPECT_EQ(NR - 2, arena_stat(self->a).nr_free);
}

TEST_F(prefix, attach_stops_at_the_first_missing_key)
{
	struct kva_seq *a = filled(_metadata, self->a, &self->g, 11,
				   4 * TPF, 8 * TPF);
	struct kva_seq *b = filled(_metadata, self->a, &self->g, 0, 0,
				   8 * TPF);
	struct kva_key other[4];
	uint32_t t[4 * TPF];

	ASSERT_EQ(4, kva_seq_publish(a, self->k, 4));
	/* The same prompt but for one token of the second frame. */
	tokens(t, 4 * TPF);
	t[TPF + 2] = 0;
	ASSERT_EQ(4, kva_prefix_keys(&self->g, "ns", 2, t, 4 * TPF, other, 4));
	ASSERT_EQ(1, kva_seq_attach_prefix(b, other, 4));
	EXPECT_EQ(TPF, b->tokens);
	EXPECT_EQ(0, check_tokens(b, 11, 0, TPF));
	kva_seq_free(b);
	/* Another namespace finds nothing, and maps nothing. */
	ASSERT_EQ(4, kva_prefix_keys(&self->g, "other", 5, t, 4 * TPF, other,
				     4));
	b = filled(_metadata, self->a, &self->g, 0, 0, 8 * TPF);
	ASSERT_EQ(0, kva_seq_attach_prefix(b, other, 4));
	EXPECT_EQ(0, b->tokens);
	EXPECT_EQ(0, kva_seq_handles(b, NULL, 0));
	kva_seq_free(a);
	kva_seq_free(b);
}

TEST_F(prefix, attach_takes_only_the_whole_frames_max_tokens_holds)
{
	struct kva_seq *a = filled(_metadata, self->a, &self->g, 12,
				   4 * TPF, 8 * TPF);
	struct kva_seq *b = filled(_metadata, self->a, &self->g, 0, 0,
				   2 * TPF + 3);

	ASSERT_EQ(4, kva_seq_publish(a, self->k, 4));
	ASSERT_EQ(2, kva_seq_attach_prefix(b, self->k, 4));
	EXPECT_EQ(2 * TPF, b->tokens);
	ASSERT_EQ(0, kva_seq_grow(b, 3));
	EXPECT_EQ(-EFBIG, kva_seq_grow(b, 1));
	kva_seq_free(a);
	kva_seq_free(b);
}

TEST_F(prefix, reclaim_takes_the_oldest_cached_frame_first)
{
	struct kva_seq *a = filled(_metadata, self->a, &self->g, 13,
				   3 * TPF, 8 * TPF), *b;
	uint64_t h[NR];

	ASSERT_EQ(3, kva_seq_publish(a, self->k, 3));
	kva_seq_free(a);
	EXPECT_EQ(3, arena_stat(self->a).nr_cached);
	/* Everything free and one cached frame: the first one cached. */
	ASSERT_EQ(NR - 2, kva_alloc(self->a, h, NR - 2, 0));
	EXPECT_EQ(2, arena_stat(self->a).nr_cached);
	b = filled(_metadata, self->a, &self->g, 0, 0, 8 * TPF);
	EXPECT_EQ(0, kva_seq_attach_prefix(b, self->k, 3));
	/* The rest of the chain is still there, on its own. */
	EXPECT_EQ(2, kva_seq_attach_prefix(b, self->k + 1, 2));
	/* A full arena: the next frame is -ENOSPC, held frames stay. */
	EXPECT_EQ(-ENOSPC, kva_seq_grow(b, 1));
	EXPECT_EQ(2 * TPF, b->tokens);
	ASSERT_EQ(0, kva_free(self->a, h, NR - 2));
	kva_seq_free(b);
}

TEST_F(prefix, forks_share_an_attached_prefix)
{
	struct kva_seq *a = filled(_metadata, self->a, &self->g, 14,
				   2 * TPF, 8 * TPF);
	struct kva_seq *b = filled(_metadata, self->a, &self->g, 0, 0,
				   8 * TPF), *c;

	ASSERT_EQ(2, kva_seq_publish(a, self->k, 2));
	ASSERT_EQ(2, kva_seq_attach_prefix(b, self->k, 2));
	ASSERT_EQ(0, kva_seq_fork(b, &c));
	EXPECT_EQ(2 * TPF, c->tokens);
	EXPECT_EQ(0, check_tokens(c, 14, 0, 2 * TPF));
	EXPECT_EQ(2, arena_stat(self->a).held);
	kva_seq_free(a);
	kva_seq_free(b);
	EXPECT_EQ(0, check_tokens(c, 14, 0, 2 * TPF));
	kva_seq_free(c);
	EXPECT_EQ(2, arena_stat(self->a).nr_cached);
}

TEST_F(prefix, arguments_are_checked_and_errors_change_nothing)
{
	struct kva_seq *a = filled(_metadata, self->a, &self->g, 15,
				   2 * TPF + 5, 8 * TPF);
	struct kva_seq *b = filled(_metadata, self->a, &self->g, 0, 0,
				   8 * TPF);
	uint64_t h[2];

	/* Only full frames. */
	EXPECT_EQ(-EINVAL, kva_seq_publish(a, self->k, 3));
	EXPECT_EQ(0, arena_stat(self->a).nr_published);
	EXPECT_EQ(-EINVAL, kva_seq_publish(NULL, self->k, 1));
	EXPECT_EQ(-EINVAL, kva_seq_publish(a, NULL, 1));
	EXPECT_EQ(0, kva_seq_publish(a, NULL, 0));
	/* A frame has one key. */
	ASSERT_EQ(2, kva_seq_publish(a, self->k, 2));
	EXPECT_EQ(-EBUSY, kva_seq_publish(a, self->k + 2, 1));
	/* Attach needs an empty sequence. */
	EXPECT_EQ(-EINVAL, kva_seq_attach_prefix(a, self->k, 2));
	EXPECT_EQ(-EINVAL, kva_seq_attach_prefix(NULL, self->k, 2));
	EXPECT_EQ(-EINVAL, kva_seq_attach_prefix(b, NULL, 2));
	ASSERT_EQ(0, kva_seq_attach_prefix(b, self->k, 0));
	ASSERT_EQ(2, kva_seq_attach_prefix(b, self->k, 2));
	EXPECT_EQ(-EINVAL, kva_seq_attach_prefix(b, self->k, 2));
	/* A sequence's frames are not raw frames to free. */
	ASSERT_EQ(2, kva_seq_handles(b, h, 2));
	EXPECT_EQ(-EBUSY, kva_free(self->a, h, 1));
	EXPECT_EQ(0, check_tokens(b, 15, 0, 2 * TPF));
	kva_seq_free(a);
	kva_seq_free(b);
}

TEST_F(prefix, publish_tokens_publishes_as_publish_does)
{
	struct kva_seq *a = filled(_metadata, self->a, &self->g, 1,
				   2 * TPF, 8 * TPF);
	struct kva_seq *b = filled(_metadata, self->a, &self->g, 0, 0,
				   8 * TPF);
	uint32_t t[2 * TPF];

	tokens(t, 2 * TPF);
	EXPECT_EQ(-EINVAL, kva_seq_publish_tokens(a, self->k, 2, NULL));
	EXPECT_EQ(0, arena_stat(self->a).nr_published);
	/* Embedded arenas have no events: the ids change nothing else. */
	ASSERT_EQ(2, kva_seq_publish_tokens(a, self->k, 2, t));
	EXPECT_EQ(2, arena_stat(self->a).nr_published);
	EXPECT_EQ(0, kva_seq_publish_tokens(a, self->k, 2, t));
	ASSERT_EQ(2, kva_seq_attach_prefix(b, self->k, 2));
	EXPECT_EQ(0, check_tokens(b, 1, 0, 2 * TPF));
	kva_seq_free(a);
	kva_seq_free(b);
}

TEST_F(prefix, attach_beyond_the_handle_max_is_enospc)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_EMBEDDED, .nr_frames = NR, .frame_size = FS,
		.max_frames = 2,
	};
	struct kva_arena *small;
	struct kva_seq *a, *b;

	ASSERT_EQ(0, kva_open(&o, &small));
	ASSERT_EQ(0, kva_seq_create(small, &self->g, 8 * TPF, &a));
	ASSERT_EQ(0, kva_seq_create(small, &self->g, 8 * TPF, &b));
	ASSERT_EQ(0, kva_seq_grow(a, 2 * TPF));
	ASSERT_EQ(2, kva_seq_publish(a, self->k, 2));
	kva_seq_shrink(a, 0);
	EXPECT_EQ(2, arena_stat(small).nr_cached);
	ASSERT_EQ(1, kva_alloc(small, (uint64_t[1]){ 0 }, 1, 0));
	EXPECT_EQ(-ENOSPC, kva_seq_attach_prefix(b, self->k, 2));
	EXPECT_EQ(0, b->tokens);
	EXPECT_EQ(2, arena_stat(small).nr_cached);
	EXPECT_EQ(1, kva_seq_attach_prefix(b, self->k, 1));
	kva_close(small);
}

TEST_HARNESS_MAIN
