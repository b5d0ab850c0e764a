// SPDX-License-Identifier: GPL-2.0
/*
 * kvblock - the remote tier's block format, version 1 (kvblock.h;
 * Documentation/remote.rst is the specification).
 */
#include <errno.h>
#include <string.h>

#include "kvblock.h"
#include "sha256.h"

const uint8_t kvb_magic[8] = { 'K', 'V', 'A', 'B', 'L', 'O', 'C', 'K' };

static const char *const miss_names[KVB_MISS_COUNT] = {
	[KVB_OK]		= "ok",
	[KVB_MISS_ABSENT]	= "absent",
	[KVB_MISS_SIZE]		= "size",
	[KVB_MISS_MAGIC]	= "magic",
	[KVB_MISS_VERSION]	= "version",
	[KVB_MISS_MAC]		= "mac",
	[KVB_MISS_GEOMETRY]	= "geometry",
	[KVB_MISS_KEY]		= "key",
	[KVB_MISS_CHECKSUM]	= "checksum",
	[KVB_MISS_ERROR]	= "error",
};

const char *kvb_miss_name(enum kvb_miss m)
{
	return (unsigned int)m < KVB_MISS_COUNT ? miss_names[m] : "?";
}

/* ---- little-endian fields ------------------------------------------------ */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* ---- HMAC-SHA256 ---------------------------------------------------------- */

struct hmac {
	struct kva_sha256 inner, outer;
};

static void hmac_init(struct hmac *h, const void *key, size_t key_len)
{
	uint8_t k[64] = { 0 }, pad[64];

	if (key_len > sizeof(k)) {
		struct kva_sha256 s;

		kva_sha256_init(&s);
		kva_sha256_update(&s, key, key_len);
		kva_sha256_final(&s, k);
	} else if (key_len) {
		memcpy(k, key, key_len);
	}
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	kva_sha256_init(&h->inner);
	kva_sha256_update(&h->inner, pad, sizeof(pad));
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	kva_sha256_init(&h->outer);
	kva_sha256_update(&h->outer, pad, sizeof(pad));
}

static void hmac_update(struct hmac *h, const void *msg, size_t len)
{
	kva_sha256_update(&h->inner, msg, len);
}

static void hmac_final(struct hmac *h, uint8_t out[32])
{
	uint8_t in[32];

	kva_sha256_final(&h->inner, in);
	kva_sha256_update(&h->outer, in, sizeof(in));
	kva_sha256_final(&h->outer, out);
}

void kvb_hmac_sha256(const void *key, size_t key_len, const void *msg,
		     size_t msg_len, uint8_t out[32])
{
	struct hmac h;

	hmac_init(&h, key, key_len);
	hmac_update(&h, msg, msg_len);
	hmac_final(&h, out);
}

/* ---- CRC32C --------------------------------------------------------------- */

/*
 * Reflected polynomial 0x82F63B78, init and final xor ~0 (the caller's
 * @crc is the previous result, 0 to start).  Slice-by-8 tables; where the
 * CPU has SSE 4.2 (checked when it runs: the VM's CPU has not), its crc32
 * instruction, 8 bytes a step.
 */
static uint32_t crc_tab[8][256];

static void crc_tables(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^
					crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

static uint32_t crc_soft(uint32_t c, const uint8_t *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		len--;
	}
	while (len >= 8) {
		uint32_t lo = c ^ get32(p), hi = get32(p + 4);

		c = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		    crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
		    crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
		    crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t c, const uint8_t *p, size_t len)
{
	uint64_t c64;

	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi(c, *p++);
		len--;
	}
	c64 = c;
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c64 = __builtin_ia32_crc32di(c64, v);
		p += 8;
		len -= 8;
	}
	c = (uint32_t)c64;
	while (len--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}
#endif

static uint32_t (*crc_fn)(uint32_t, const uint8_t *, size_t);

__attribute__((constructor))
static void crc_setup(void)
{
	crc_tables();
	crc_fn = crc_soft;
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2"))
		crc_fn = crc_hw;
#endif
}

uint32_t kvb_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return ~crc_fn(~crc, buf, len);
}

/* ---- keys and values ------------------------------------------------------ */

int kvb_secret_init(struct kvb_secret *s, const void *bytes, size_t len)
{
	memset(s, 0, sizeof(*s));
	if (!bytes || len < KVB_SECRET_MIN || len > KVB_SECRET_MAX)
		return -EINVAL;
	memcpy(s->bytes, bytes, len);
	s->len = (uint32_t)len;
	kvb_domain_id(s, s->id);
	return 0;
}

void kvb_domain_id(const struct kvb_secret *s, uint8_t id[8])
{
	static const char label[] = "kvarena remote domain v1";
	uint8_t mac[32];

	kvb_hmac_sha256(s->bytes, s->len, label, sizeof(label) - 1, mac);
	memcpy(id, mac, 8);
}

static void geometry_bytes(uint8_t out[24], const struct kvb_geometry *g)
{
	put64(out, g->frame_size);
	put32(out + 8, g->layers);
	put32(out + 12, g->kv_heads);
	put32(out + 16, g->head_dim);
	put32(out + 20, g->dtype);
}

void kvb_key(const struct kvb_secret *s, const struct kvb_geometry *g,
	     const uint8_t chain[KVB_CHAIN_LEN], char key[KVB_KEY_LEN])
{
	static const char label[] = "kvarena remote key v1";
	static const char hex[] = "0123456789abcdef";
	uint8_t geo[24], mac[32];
	struct hmac h;
	size_t n = strlen(KVB_KEY_PREFIX);

	geometry_bytes(geo, g);
	hmac_init(&h, s->bytes, s->len);
	hmac_update(&h, label, sizeof(label) - 1);
	hmac_update(&h, geo, sizeof(geo));
	hmac_update(&h, chain, KVB_CHAIN_LEN);
	hmac_final(&h, mac);
	memcpy(key, KVB_KEY_PREFIX, n);
	for (int i = 0; i < 32; i++) {
		key[n + 2 * i] = hex[mac[i] >> 4];
		key[n + 2 * i + 1] = hex[mac[i] & 15];
	}
	key[n + 64] = '\0';
}

void kvb_encode(uint8_t *hdr, const struct kvb_secret *s,
		const struct kvb_geometry *g,
		const uint8_t chain[KVB_CHAIN_LEN],
		const uint8_t *parent, const char *writer,
		uint64_t written_ms, const void *payload)
{
	memset(hdr, 0, KVB_HEADER_SIZE);
	memcpy(hdr, kvb_magic, sizeof(kvb_magic));
	put16(hdr + 8, KVB_VERSION);
	put16(hdr + 10, KVB_HEADER_SIZE);
	put32(hdr + 12, parent ? KVB_F_PARENT : 0);
	put64(hdr + 16, g->frame_size);
	put32(hdr + 24, g->layers);
	put32(hdr + 28, g->kv_heads);
	put32(hdr + 32, g->head_dim);
	put32(hdr + 36, g->dtype);
	put32(hdr + 40, g->tokens);
	put32(hdr + 44, kvb_crc32c(0, payload, g->frame_size));
	memcpy(hdr + 48, chain, KVB_CHAIN_LEN);
	if (parent)
		memcpy(hdr + 80, parent, KVB_CHAIN_LEN);
	put64(hdr + 112, written_ms);
	if (writer)
		strncpy((char *)hdr + 120, writer, KVB_WRITER_LEN - 1);
	memcpy(hdr + 144, s->id, 8);
	kvb_hmac_sha256(s->bytes, s->len, hdr, KVB_MAC_OFFSET,
			hdr + KVB_MAC_OFFSET);
}

static void decode(const uint8_t *v, struct kvb_header *h)
{
	memcpy(h->magic, v, 8);
	h->version = get16(v + 8);
	h->header_size = get16(v + 10);
	h->flags = get32(v + 12);
	h->payload_size = get64(v + 16);
	h->layers = get32(v + 24);
	h->kv_heads = get32(v + 28);
	h->head_dim = get32(v + 32);
	h->dtype = get32(v + 36);
	h->tokens = get32(v + 40);
	h->payload_crc = get32(v + 44);
	memcpy(h->chain, v + 48, KVB_CHAIN_LEN);
	memcpy(h->parent, v + 80, KVB_CHAIN_LEN);
	h->written_ms = get64(v + 112);
	memcpy(h->writer, v + 120, KVB_WRITER_LEN);
	h->writer[KVB_WRITER_LEN - 1] = '\0';
	memcpy(h->domain_id, v + 144, 8);
	memcpy(h->reserved, v + 152, 8);
	memcpy(h->mac, v + 160, 32);
}

/* Constant time: a MAC compare must not say how much of it matched. */
static bool mac_equal(const uint8_t *a, const uint8_t *b)
{
	uint8_t d = 0;

	for (int i = 0; i < 32; i++)
		d |= a[i] ^ b[i];
	return !d;
}

enum kvb_miss kvb_header_read(const uint8_t *val, size_t len,
			      const struct kvb_secret *s,
			      struct kvb_header *hdr)
{
	uint8_t mac[32];

	if (!val)
		return KVB_MISS_ABSENT;
	/* The version first: a later format may have another header. */
	if (len < 12)
		return KVB_MISS_SIZE;
	if (memcmp(val, kvb_magic, sizeof(kvb_magic)))
		return KVB_MISS_MAGIC;
	if (get16(val + 8) != KVB_VERSION || get16(val + 10) != KVB_HEADER_SIZE)
		return KVB_MISS_VERSION;
	if (len < KVB_HEADER_SIZE)
		return KVB_MISS_SIZE;
	kvb_hmac_sha256(s->bytes, s->len, val, KVB_MAC_OFFSET, mac);
	if (!mac_equal(mac, val + KVB_MAC_OFFSET))
		return KVB_MISS_MAC;
	decode(val, hdr);
	return KVB_OK;
}

enum kvb_miss kvb_check(const uint8_t *val, size_t len,
			const struct kvb_secret *s,
			const struct kvb_geometry *g,
			const uint8_t chain[KVB_CHAIN_LEN],
			struct kvb_header *hdr)
{
	struct kvb_header h;
	enum kvb_miss m = kvb_header_read(val, len, s, &h);

	if (m != KVB_OK)
		return m;
	if (hdr)
		*hdr = h;
	if (h.payload_size != g->frame_size || h.layers != g->layers ||
	    h.kv_heads != g->kv_heads || h.head_dim != g->head_dim ||
	    h.dtype != g->dtype || h.tokens != g->tokens)
		return KVB_MISS_GEOMETRY;
	if (memcmp(h.chain, chain, KVB_CHAIN_LEN))
		return KVB_MISS_KEY;
	if (len - KVB_HEADER_SIZE != h.payload_size)
		return KVB_MISS_SIZE;
	if (kvb_crc32c(0, val + KVB_HEADER_SIZE, h.payload_size) !=
	    h.payload_crc)
		return KVB_MISS_CHECKSUM;
	return KVB_OK;
}
