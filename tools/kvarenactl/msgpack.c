// SPDX-License-Identifier: GPL-2.0
/*
 * The msgpack encoder of kvarenactl events --zmq: the part of the format
 * (github.com/msgpack/msgpack/blob/master/spec.md) vLLM's KV events use -
 * nil, booleans, integers, float64, str, bin, arrays and maps - each value in
 * its shortest form, as msgpack-c and msgspec write them.  Tested against
 * Debian's python3-msgpack (selftests/kvarenactl/msgpack_check.py).
 */
#include <stdlib.h>
#include <string.h>

#include "events.h"

void kvactl_mp_init(struct kvactl_mp *m)
{
	memset(m, 0, sizeof(*m));
}

void kvactl_mp_free(struct kvactl_mp *m)
{
	free(m->buf);
	memset(m, 0, sizeof(*m));
}

static void put(struct kvactl_mp *m, const void *p, size_t n)
{
	if (m->oom)
		return;
	if (m->len + n > m->cap) {
		size_t cap = m->cap ? m->cap : 256;
		uint8_t *b;

		while (cap < m->len + n)
			cap *= 2;
		b = realloc(m->buf, cap);
		if (!b) {
			m->oom = true;
			return;
		}
		m->buf = b;
		m->cap = cap;
	}
	memcpy(m->buf + m->len, p, n);
	m->len += n;
}

static void put_u8(struct kvactl_mp *m, uint8_t v)
{
	put(m, &v, 1);
}

/* A marker byte, then @v in @bytes big-endian bytes. */
static void put_be(struct kvactl_mp *m, uint8_t marker, uint64_t v,
		   unsigned int bytes)
{
	uint8_t b[9];
	unsigned int i;

	b[0] = marker;
	for (i = 0; i < bytes; i++)
		b[1 + i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
	put(m, b, 1 + bytes);
}

void kvactl_mp_nil(struct kvactl_mp *m)
{
	put_u8(m, 0xc0);
}

void kvactl_mp_bool(struct kvactl_mp *m, bool v)
{
	put_u8(m, v ? 0xc3 : 0xc2);
}

void kvactl_mp_uint(struct kvactl_mp *m, uint64_t v)
{
	if (v < 0x80)
		put_u8(m, (uint8_t)v);			/* positive fixint */
	else if (v <= 0xff)
		put_be(m, 0xcc, v, 1);
	else if (v <= 0xffff)
		put_be(m, 0xcd, v, 2);
	else if (v <= 0xffffffffu)
		put_be(m, 0xce, v, 4);
	else
		put_be(m, 0xcf, v, 8);
}

void kvactl_mp_int(struct kvactl_mp *m, int64_t v)
{
	if (v >= 0)
		kvactl_mp_uint(m, (uint64_t)v);
	else if (v >= -32)
		put_u8(m, (uint8_t)(0xe0 | (v + 32)));	/* negative fixint */
	else if (v >= INT8_MIN)
		put_be(m, 0xd0, (uint64_t)v, 1);
	else if (v >= INT16_MIN)
		put_be(m, 0xd1, (uint64_t)v, 2);
	else if (v >= INT32_MIN)
		put_be(m, 0xd2, (uint64_t)v, 4);
	else
		put_be(m, 0xd3, (uint64_t)v, 8);
}

void kvactl_mp_f64(struct kvactl_mp *m, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	put_be(m, 0xcb, bits, 8);
}

/* A length-prefixed family: str (fix 0xa0, 8 bit 0xd9) or bin (0xc4). */
static void put_len(struct kvactl_mp *m, size_t n, bool str)
{
	if (str && n < 32)
		put_u8(m, (uint8_t)(0xa0 | n));
	else if (n <= 0xff)
		put_be(m, str ? 0xd9 : 0xc4, n, 1);
	else if (n <= 0xffff)
		put_be(m, str ? 0xda : 0xc5, n, 2);
	else
		put_be(m, str ? 0xdb : 0xc6, n, 4);
}

void kvactl_mp_str(struct kvactl_mp *m, const char *s, size_t n)
{
	put_len(m, n, true);
	put(m, s, n);
}

void kvactl_mp_bin(struct kvactl_mp *m, const void *p, size_t n)
{
	put_len(m, n, false);
	put(m, p, n);
}

void kvactl_mp_array(struct kvactl_mp *m, uint32_t n)
{
	if (n < 16)
		put_u8(m, (uint8_t)(0x90 | n));
	else if (n <= 0xffff)
		put_be(m, 0xdc, n, 2);
	else
		put_be(m, 0xdd, n, 4);
}

void kvactl_mp_map(struct kvactl_mp *m, uint32_t n)
{
	if (n < 16)
		put_u8(m, (uint8_t)(0x80 | n));
	else if (n <= 0xffff)
		put_be(m, 0xde, n, 2);
	else
		put_be(m, 0xdf, n, 4);
}
