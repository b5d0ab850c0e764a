/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvblock - the remote tier's block format, version 1: how a published
 * frame is named and stored in a key-value store that every node reaches
 * (a Redis cluster).  Documentation/remote.rst is the specification; this
 * is kvarena's implementation of it.
 *
 * A block is one frame's KV under one prefix key (kva_prefix_keys()'s
 * chain key, which hashes the model geometry, the engine's namespace and
 * every token up to the frame's end).  Its store key is
 *
 *   "kva1:" || hex(HMAC-SHA256(secret, "kvarena remote key v1" ||
 *            LE64(frame_size) || LE32(layers) || LE32(kv_heads) ||
 *            LE32(head_dim) || LE32(dtype) || chain_key))
 *
 * with the cache domain's secret: a node without that secret can neither
 * name a domain's blocks nor find them.  Its value is one string, written
 * with one SET: a 192-byte header (struct kvb_header, little-endian) and
 * the frame's bytes.  The header carries the format version, the
 * geometry, the token count, the chain key and its parent, the writer,
 * the payload's CRC32C and, last, an HMAC-SHA256 of the header's first
 * 160 bytes with the domain's secret, which binds the value to its domain
 * and its key.  A value that fails any check is a miss (enum kvb_miss),
 * never KV.
 *
 * Thread safety: every function touches only its arguments.
 */
#ifndef KVBLOCK_H
#define KVBLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KVB_VERSION		1u
#define KVB_HEADER_SIZE		192u
#define KVB_MAC_OFFSET		160u	/* the MAC covers bytes [0, 160) */
#define KVB_KEY_PREFIX		"kva1:"
/* "kva1:" and 64 hex digits, and a NUL. */
#define KVB_KEY_LEN		70u
#define KVB_CHAIN_LEN		32u
#define KVB_WRITER_LEN		24u
#define KVB_SECRET_MIN		16u	/* bytes of secret at least */
#define KVB_SECRET_MAX		256u

extern const uint8_t kvb_magic[8];	/* "KVABLOCK" */

/* struct kvb_header.flags */
#define KVB_F_PARENT	(1u << 0)	/* @parent is set */

/*
 * The header as it lies in the value, every integer little-endian (the
 * struct is that layout on a little-endian machine; kvb_encode() and
 * kvb_check() read and write the bytes, not the struct).
 */
struct kvb_header {
	uint8_t  magic[8];		/*   0 "KVABLOCK" */
	uint16_t version;		/*   8 KVB_VERSION */
	uint16_t header_size;		/*  10 KVB_HEADER_SIZE */
	uint32_t flags;			/*  12 KVB_F_* */
	uint64_t payload_size;		/*  16 the frame size */
	uint32_t layers;		/*  24 */
	uint32_t kv_heads;		/*  28 */
	uint32_t head_dim;		/*  32 */
	uint32_t dtype;			/*  36 enum kva_dtype */
	uint32_t tokens;		/*  40 tokens the payload holds */
	uint32_t payload_crc;		/*  44 CRC32C of the payload */
	uint8_t  chain[KVB_CHAIN_LEN];	/*  48 the block's prefix key */
	uint8_t  parent[KVB_CHAIN_LEN];	/*  80 the key before it, or zeros */
	uint64_t written_ms;		/* 112 Unix time of the write, ms */
	char     writer[KVB_WRITER_LEN];/* 120 node name, NUL-padded */
	uint8_t  domain_id[8];		/* 144 kvb_domain_id() */
	uint8_t  reserved[8];		/* 152 zero */
	uint8_t  mac[32];		/* 160 HMAC-SHA256(secret, [0, 160)) */
};

/* The geometry a store holds blocks of (checked on every read). */
struct kvb_geometry {
	uint64_t frame_size;
	uint32_t layers;
	uint32_t kv_heads;
	uint32_t head_dim;
	uint32_t dtype;
	uint32_t tokens;	/* tokens per frame */
};

/* A cache domain's secret: the same bytes on every node that serves it. */
struct kvb_secret {
	uint8_t  bytes[KVB_SECRET_MAX];
	uint32_t len;
	uint8_t  id[8];		/* kvb_domain_id(), filled by kvb_secret_init() */
};

/* Why a value read back is not a block (a miss), or KVB_OK. */
enum kvb_miss {
	KVB_OK = 0,
	KVB_MISS_ABSENT,	/* no value under the key */
	KVB_MISS_SIZE,		/* shorter than a header, or not header + payload */
	KVB_MISS_MAGIC,		/* not a kvarena block */
	KVB_MISS_VERSION,	/* another format version */
	KVB_MISS_MAC,		/* another domain's, or altered */
	KVB_MISS_GEOMETRY,	/* another geometry or frame size */
	KVB_MISS_KEY,		/* another chain key's block */
	KVB_MISS_CHECKSUM,	/* the payload's CRC32C does not match */
	KVB_MISS_ERROR,		/* the store did not answer (timeout, down) */
	KVB_MISS_COUNT
};

const char *kvb_miss_name(enum kvb_miss m);

/* Secret from @len bytes (KVB_SECRET_MIN..MAX): 0, or -EINVAL. */
int kvb_secret_init(struct kvb_secret *s, const void *bytes, size_t len);

/*
 * The domain's public id: the first 8 bytes of
 * HMAC-SHA256(secret, "kvarena remote domain v1").  Names the domain in
 * the store's index keys and in logs without giving its secret away.
 */
void kvb_domain_id(const struct kvb_secret *s, uint8_t id[8]);

/* The store key of @chain (KVB_KEY_LEN bytes with the NUL). */
void kvb_key(const struct kvb_secret *s, const struct kvb_geometry *g,
	     const uint8_t chain[KVB_CHAIN_LEN], char key[KVB_KEY_LEN]);

/*
 * Fill @hdr (KVB_HEADER_SIZE bytes) for @payload (g->frame_size bytes):
 * @parent may be NULL.  The value is @hdr followed by @payload.
 */
void kvb_encode(uint8_t *hdr, const struct kvb_secret *s,
		const struct kvb_geometry *g,
		const uint8_t chain[KVB_CHAIN_LEN],
		const uint8_t *parent, const char *writer,
		uint64_t written_ms, const void *payload);

/*
 * Check a value read under @chain's key: KVB_OK when it is that block,
 * whole (its payload at @val + KVB_HEADER_SIZE), else why not.  With
 * @hdr non-NULL, the header decoded once its MAC held.
 */
enum kvb_miss kvb_check(const uint8_t *val, size_t len,
			const struct kvb_secret *s,
			const struct kvb_geometry *g,
			const uint8_t chain[KVB_CHAIN_LEN],
			struct kvb_header *hdr);

/*
 * A value's header alone (its first KVB_HEADER_SIZE bytes at least, as
 * GETRANGE reads them): KVB_OK and *@hdr when its magic, version and MAC
 * (under @s) hold - the chain key in it is then the writer's -, else why
 * not.  The payload is not checked.
 */
enum kvb_miss kvb_header_read(const uint8_t *val, size_t len,
			      const struct kvb_secret *s,
			      struct kvb_header *hdr);

/* HMAC-SHA256 (RFC 2104), and CRC32C (Castagnoli, reflected, as iSCSI). */
void kvb_hmac_sha256(const void *key, size_t key_len, const void *msg,
		     size_t msg_len, uint8_t out[32]);
uint32_t kvb_crc32c(uint32_t crc, const void *buf, size_t len);

#endif /* KVBLOCK_H */
