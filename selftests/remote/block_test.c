// SPDX-License-Identifier: GPL-2.0
/*
 * The remote tier's block format (tools/common/kvblock.c) and the
 * cluster client's key slots (tools/common/rcluster.c), natively, also
 * under ASan/UBSan: the published test vectors of CRC32C, CRC16/XMODEM
 * and HMAC-SHA256 (RFC 4231) and the key slots Redis's cluster
 * specification gives; store keys that differ by domain and by geometry;
 * a value written and read back whole; and every way a value can fail -
 * another domain's, another geometry's, another key's, a flipped payload
 * byte, cut short, grown, another version, not a block - each a miss of
 * its own reason.
 */
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "kvblock.h"
#include "rcluster.h"

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

/* The bitwise CRC32C, the definition the fast paths must agree with. */
static uint32_t crc_ref(const uint8_t *p, size_t len)
{
	uint32_t c = ~0u;

	while (len--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
	}
	return ~c;
}

TEST(crc32c_vectors)
{
	uint8_t buf[4099];

	EXPECT_EQ(0xe3069283u, kvb_crc32c(0, "123456789", 9));
	/* iSCSI's (RFC 3720, B.4): 32 bytes of zeros, of 0xff. */
	memset(buf, 0, 32);
	EXPECT_EQ(0x8a9136aau, kvb_crc32c(0, buf, 32));
	memset(buf, 0xff, 32);
	EXPECT_EQ(0x62a8ab43u, kvb_crc32c(0, buf, 32));
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + (i >> 7));
	/* Every alignment and length near the 8-byte steps. */
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; len < 40; len++)
			ASSERT_EQ(crc_ref(buf + off, len),
				  kvb_crc32c(0, buf + off, len));
	ASSERT_EQ(crc_ref(buf + 3, 4093), kvb_crc32c(0, buf + 3, 4093));
	/* In pieces: the result carries on. */
	EXPECT_EQ(kvb_crc32c(0, buf, 4099),
		  kvb_crc32c(kvb_crc32c(0, buf, 1000), buf + 1000, 3099));
}

TEST(hmac_sha256_rfc4231)
{
	uint8_t key[131], mac[32];
	char out[65];

	kvb_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac);
	hex(mac, 32, out);
	EXPECT_STREQ("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", out);
	memset(key, 0x0b, 20);
	kvb_hmac_sha256(key, 20, "Hi There", 8, mac);
	hex(mac, 32, out);
	EXPECT_STREQ("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", out);
	/* A key longer than a block is hashed first. */
	memset(key, 0xaa, sizeof(key));
	kvb_hmac_sha256(key, sizeof(key),
			"Test Using Larger Than Block-Size Key - Hash Key First",
			54, mac);
	hex(mac, 32, out);
	EXPECT_STREQ("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", out);
}

TEST(key_slots)
{
	EXPECT_EQ(0x31c3, rc_crc16("123456789", 9));
	EXPECT_EQ(12182u, rc_key_slot("foo", 3));
	EXPECT_EQ(rc_key_slot("user1000", 8),
		  rc_key_slot("{user1000}.following", 20));
	EXPECT_EQ(rc_key_slot("{user1000}.following", 20),
		  rc_key_slot("{user1000}.followers", 20));
	/* An empty tag: the whole key.  The first '{' and the next '}'. */
	EXPECT_EQ(rc_crc16("foo{}{bar}", 10) & 16383,
		  rc_key_slot("foo{}{bar}", 10));
	EXPECT_EQ(rc_key_slot("{bar", 4), rc_key_slot("foo{{bar}}zap", 13));
	EXPECT_EQ(rc_key_slot("bar", 3), rc_key_slot("foo{bar}{zap}", 13));
}

#define FS	(64 * 1024)

struct fix {
	struct kvb_secret a, b;
	struct kvb_geometry g;
	uint8_t chain[32], parent[32];
	uint8_t *val;
};

static void fix_init(struct fix *f)
{
	memset(f, 0, sizeof(*f));
	kvb_secret_init(&f->a, "tenant-a secret bytes", 21);
	kvb_secret_init(&f->b, "tenant-b secret bytes", 21);
	f->g = (struct kvb_geometry){ .frame_size = FS, .layers = 2,
				      .kv_heads = 2, .head_dim = 64,
				      .dtype = 1, .tokens = 64 };
	for (int i = 0; i < 32; i++) {
		f->chain[i] = (uint8_t)(i * 7 + 1);
		f->parent[i] = (uint8_t)(i * 5 + 3);
	}
	f->val = malloc(KVB_HEADER_SIZE + FS);
	for (size_t j = 0; j < FS; j++)
		f->val[KVB_HEADER_SIZE + j] = (uint8_t)(j * 13 + (j >> 9));
	kvb_encode(f->val, &f->a, &f->g, f->chain, f->parent, "node-a",
		   1700000000123ull, f->val + KVB_HEADER_SIZE);
}

TEST(secrets_are_checked)
{
	struct kvb_secret s;
	uint8_t big[KVB_SECRET_MAX + 1] = { 0 };

	EXPECT_EQ(-EINVAL, kvb_secret_init(&s, "short", 5));
	EXPECT_EQ(-EINVAL, kvb_secret_init(&s, big, sizeof(big)));
	EXPECT_EQ(-EINVAL, kvb_secret_init(&s, NULL, 16));
	EXPECT_EQ(0, kvb_secret_init(&s, big, KVB_SECRET_MIN));
}

TEST(keys_differ_by_domain_and_geometry)
{
	char ka[KVB_KEY_LEN], kb[KVB_KEY_LEN], kg[KVB_KEY_LEN], k2[KVB_KEY_LEN];
	struct kvb_geometry g2;
	struct fix f;

	fix_init(&f);
	kvb_key(&f.a, &f.g, f.chain, ka);
	kvb_key(&f.b, &f.g, f.chain, kb);
	g2 = f.g;
	g2.frame_size *= 2;
	kvb_key(&f.a, &g2, f.chain, kg);
	kvb_key(&f.a, &f.g, f.chain, k2);
	EXPECT_EQ(KVB_KEY_LEN - 1, strlen(ka));
	EXPECT_EQ(0, strncmp(ka, "kva1:", 5));
	EXPECT_STREQ(ka, k2);
	EXPECT_STRNE(ka, kb);
	EXPECT_STRNE(ka, kg);
	EXPECT_NE(0, memcmp(f.a.id, f.b.id, 8));
	free(f.val);
}

TEST(a_block_reads_back_whole)
{
	struct kvb_header h;
	struct fix f;

	fix_init(&f);
	ASSERT_EQ(KVB_OK, kvb_check(f.val, KVB_HEADER_SIZE + FS, &f.a, &f.g,
				    f.chain, &h));
	EXPECT_EQ(KVB_VERSION, h.version);
	EXPECT_EQ(KVB_F_PARENT, h.flags);
	EXPECT_EQ(64u, h.tokens);
	EXPECT_EQ(0, memcmp(h.parent, f.parent, 32));
	EXPECT_STREQ("node-a", h.writer);
	EXPECT_EQ(1700000000123ull, h.written_ms);
	EXPECT_EQ(0, memcmp(h.domain_id, f.a.id, 8));
	free(f.val);
}

/* A header alone (the agent's GETRANGE before an eviction) names its block. */
TEST(a_header_alone_names_its_block)
{
	struct kvb_header h;
	struct fix f;

	fix_init(&f);
	memset(&h, 0, sizeof(h));
	ASSERT_EQ(KVB_OK, kvb_header_read(f.val, KVB_HEADER_SIZE, &f.a, &h));
	EXPECT_EQ(0, memcmp(h.chain, f.chain, 32));
	EXPECT_EQ(0, memcmp(h.parent, f.parent, 32));
	EXPECT_EQ(KVB_MISS_MAC, kvb_header_read(f.val, KVB_HEADER_SIZE, &f.b, &h));
	EXPECT_EQ(KVB_MISS_SIZE, kvb_header_read(f.val, KVB_HEADER_SIZE - 1,
						 &f.a, &h));
	EXPECT_EQ(KVB_MISS_ABSENT, kvb_header_read(NULL, 0, &f.a, &h));
	f.val[60] ^= 1;		/* the chain key: the MAC no longer holds */
	EXPECT_EQ(KVB_MISS_MAC, kvb_header_read(f.val, KVB_HEADER_SIZE, &f.a, &h));
	f.val[60] ^= 1;
	f.val[8] = 9;		/* another version */
	EXPECT_EQ(KVB_MISS_VERSION, kvb_header_read(f.val, KVB_HEADER_SIZE,
						    &f.a, &h));
	free(f.val);
}

TEST(every_bad_value_is_a_miss_of_its_own)
{
	size_t len = KVB_HEADER_SIZE + FS;
	struct kvb_geometry g2;
	uint8_t other[32];
	struct fix f;

	fix_init(&f);
	EXPECT_EQ(KVB_MISS_ABSENT, kvb_check(NULL, 0, &f.a, &f.g, f.chain, NULL));
	/* Another domain's secret. */
	EXPECT_EQ(KVB_MISS_MAC, kvb_check(f.val, len, &f.b, &f.g, f.chain, NULL));
	/* Another key's block under this key. */
	memcpy(other, f.chain, 32);
	other[31] ^= 1;
	EXPECT_EQ(KVB_MISS_KEY, kvb_check(f.val, len, &f.a, &f.g, other, NULL));
	/* Another geometry: each field. */
	g2 = f.g;
	g2.kv_heads = 4;
	EXPECT_EQ(KVB_MISS_GEOMETRY, kvb_check(f.val, len, &f.a, &g2, f.chain, NULL));
	g2 = f.g;
	g2.dtype = 2;
	EXPECT_EQ(KVB_MISS_GEOMETRY, kvb_check(f.val, len, &f.a, &g2, f.chain, NULL));
	g2 = f.g;
	g2.tokens = 32;
	EXPECT_EQ(KVB_MISS_GEOMETRY, kvb_check(f.val, len, &f.a, &g2, f.chain, NULL));
	/* Cut, or grown. */
	EXPECT_EQ(KVB_MISS_SIZE, kvb_check(f.val, len - 1, &f.a, &f.g, f.chain, NULL));
	EXPECT_EQ(KVB_MISS_SIZE, kvb_check(f.val, 100, &f.a, &f.g, f.chain, NULL));
	EXPECT_EQ(KVB_MISS_SIZE, kvb_check(f.val, 5, &f.a, &f.g, f.chain, NULL));
	/* A payload byte flipped, anywhere. */
	f.val[KVB_HEADER_SIZE + FS / 2] ^= 0x10;
	EXPECT_EQ(KVB_MISS_CHECKSUM, kvb_check(f.val, len, &f.a, &f.g, f.chain, NULL));
	f.val[KVB_HEADER_SIZE + FS / 2] ^= 0x10;
	f.val[len - 1] ^= 0x80;
	EXPECT_EQ(KVB_MISS_CHECKSUM, kvb_check(f.val, len, &f.a, &f.g, f.chain, NULL));
	f.val[len - 1] ^= 0x80;
	/* A header byte changed: the MAC no longer holds. */
	f.val[40] ^= 1;
	EXPECT_EQ(KVB_MISS_MAC, kvb_check(f.val, len, &f.a, &f.g, f.chain, NULL));
	f.val[40] ^= 1;
	f.val[130] ^= 1;
	EXPECT_EQ(KVB_MISS_MAC, kvb_check(f.val, len, &f.a, &f.g, f.chain, NULL));
	f.val[130] ^= 1;
	/* Another version, not a block. */
	f.val[8] = 2;
	EXPECT_EQ(KVB_MISS_VERSION, kvb_check(f.val, len, &f.a, &f.g, f.chain, NULL));
	f.val[8] = 1;
	f.val[0] = 'k';
	EXPECT_EQ(KVB_MISS_MAGIC, kvb_check(f.val, len, &f.a, &f.g, f.chain, NULL));
	f.val[0] = 'K';
	/* And whole again. */
	EXPECT_EQ(KVB_OK, kvb_check(f.val, len, &f.a, &f.g, f.chain, NULL));
	/* A value of another geometry, properly made, under this key. */
	g2 = f.g;
	g2.head_dim = 32;
	kvb_encode(f.val, &f.a, &g2, f.chain, NULL, "node-x", 1,
		   f.val + KVB_HEADER_SIZE);
	EXPECT_EQ(KVB_MISS_GEOMETRY, kvb_check(f.val, len, &f.a, &f.g, f.chain, NULL));
	free(f.val);
}

TEST_HARNESS_MAIN
