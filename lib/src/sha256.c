// SPDX-License-Identifier: MIT
/*
 * SHA-256 (FIPS 180-4), for the prefix keys: one frame's key is the hash
 * of the key before it, the caller's namespace and the frame's tokens
 * (prefix.c).  Plain and portable; a key costs one or two compression
 * rounds per 64 bytes of input, far below the cost of the KV it names.
 */
#include <string.h>

#include "sha256.h"

static const uint32_t k256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, unsigned int n)
{
	return (x >> n) | (x << (32 - n));
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* One 64-byte block into the state (FIPS 180-4, 6.2.2). */
static void compress(uint32_t h[8], const uint8_t *block)
{
	uint32_t w[64], a, b, c, d, e, f, g, hh, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = be32(block + 4 * i);
	for (i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^
			      (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^
			      (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = h[0]; b = h[1]; c = h[2]; d = h[3];
	e = h[4]; f = h[5]; g = h[6]; hh = h[7];
	for (i = 0; i < 64; i++) {
		t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +
		     ((e & f) ^ (~e & g)) + k256[i] + w[i];
		t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) +
		     ((a & b) ^ (a & c) ^ (b & c));
		hh = g; g = f; f = e; e = d + t1;
		d = c; c = b; b = a; a = t1 + t2;
	}
	h[0] += a; h[1] += b; h[2] += c; h[3] += d;
	h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void kva_sha256_init(struct kva_sha256 *s)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
}

void kva_sha256_update(struct kva_sha256 *s, const void *data, size_t n)
{
	const uint8_t *p = data;
	size_t used = s->len % 64;

	if (!n)
		return;		/* @data may be NULL then */
	s->len += n;
	if (used) {
		size_t take = 64 - used < n ? 64 - used : n;

		memcpy(s->buf + used, p, take);
		p += take;
		n -= take;
		if (used + take < 64)
			return;
		compress(s->h, s->buf);
	}
	for (; n >= 64; p += 64, n -= 64)
		compress(s->h, p);
	memcpy(s->buf, p, n);
}

void kva_sha256_final(struct kva_sha256 *s, uint8_t out[32])
{
	uint64_t bits = s->len * 8;
	size_t used = s->len % 64;
	int i;

	/* 0x80, zeros to 56 mod 64, the length in bits, big-endian. */
	s->buf[used++] = 0x80;
	if (used > 56) {
		memset(s->buf + used, 0, 64 - used);
		compress(s->h, s->buf);
		used = 0;
	}
	memset(s->buf + used, 0, 56 - used);
	for (i = 0; i < 8; i++)
		s->buf[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
	compress(s->h, s->buf);
	for (i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(s->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)s->h[i];
	}
}
