// SPDX-License-Identifier: GPL-2.0
/*
 * Writes kvarenactl's msgpack encoding of each case msgpack_check.py
 * lists, in the same order, to stdout: a 4-byte little-endian length,
 * then the bytes.  The script compares them with python3-msgpack's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"

static struct kvactl_mp m;

static void emit(void)
{
	unsigned char len[4];
	size_t n = m.len;

	if (m.oom) {
		fprintf(stderr, "msgpack_test: out of memory\n");
		exit(1);
	}
	for (int i = 0; i < 4; i++)
		len[i] = (unsigned char)(n >> (8 * i));
	fwrite(len, 1, 4, stdout);
	fwrite(m.buf, 1, n, stdout);
	kvactl_mp_free(&m);
	kvactl_mp_init(&m);
}

int main(void)
{
	static const uint64_t u[] = {
		0, 1, 127, 128, 255, 256, 65535, 65536, 0xffffffffull,
		0x100000000ull, UINT64_MAX,
	};
	static const int64_t s[] = {
		-1, -32, -33, -128, -129, -32768, -32769, INT32_MIN,
		(int64_t)INT32_MIN - 1, INT64_MIN,
	};
	static const double f[] = { 0.0, 1.5, 1732968000.123456, -2.5e-300 };
	static const size_t lens[] = { 0, 31, 32, 255, 256, 65535, 65536 };
	static const size_t blens[] = { 0, 1, 32, 255, 256, 65536 };
	static const uint32_t alens[] = { 0, 15, 16, 65535, 65536 };
	char *text = malloc(65536);
	size_t i;
	uint32_t j;

	memset(text, 'a', 65536);
	kvactl_mp_init(&m);
	kvactl_mp_nil(&m); emit();
	kvactl_mp_bool(&m, true); emit();
	kvactl_mp_bool(&m, false); emit();
	for (i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		kvactl_mp_uint(&m, u[i]);
		emit();
	}
	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		kvactl_mp_int(&m, s[i]);
		emit();
	}
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		kvactl_mp_f64(&m, f[i]);
		emit();
	}
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		kvactl_mp_str(&m, text, lens[i]);
		emit();
	}
	for (i = 0; i < sizeof(blens) / sizeof(blens[0]); i++) {
		kvactl_mp_bin(&m, text, blens[i]);
		emit();
	}
	for (i = 0; i < sizeof(alens) / sizeof(alens[0]); i++) {
		kvactl_mp_array(&m, alens[i]);
		for (j = 0; j < alens[i]; j++)
			kvactl_mp_uint(&m, j % 200);
		emit();
	}
	/* Maps: {}, {"k0": 0, ...} of 15 and 16 entries. */
	kvactl_mp_map(&m, 0);
	emit();
	for (j = 15; j <= 16; j++) {
		kvactl_mp_map(&m, j);
		for (uint32_t e = 0; e < j; e++) {
			char key[8];

			snprintf(key, sizeof(key), "k%u", e);
			kvactl_mp_str(&m, key, strlen(key));
			kvactl_mp_uint(&m, e);
		}
		emit();
	}
	/* [[1, [2]], "x"] */
	kvactl_mp_array(&m, 2);
	kvactl_mp_array(&m, 2);
	kvactl_mp_uint(&m, 1);
	kvactl_mp_array(&m, 1);
	kvactl_mp_uint(&m, 2);
	kvactl_mp_str(&m, "x", 1);
	emit();
	/* An event batch as kvarenactl events --zmq sends one. */
	kvactl_mp_array(&m, 2);
	kvactl_mp_f64(&m, 1732968000.5);
	kvactl_mp_array(&m, 3);
	kvactl_mp_array(&m, 7);
	kvactl_mp_str(&m, "BlockStored", 11);
	kvactl_mp_array(&m, 2);
	kvactl_mp_uint(&m, 123);
	kvactl_mp_uint(&m, UINT64_MAX);
	kvactl_mp_nil(&m);
	kvactl_mp_array(&m, 3);
	kvactl_mp_uint(&m, 1);
	kvactl_mp_uint(&m, 2);
	kvactl_mp_uint(&m, 3);
	kvactl_mp_uint(&m, 16);
	kvactl_mp_nil(&m);
	kvactl_mp_str(&m, "GPU", 3);
	kvactl_mp_array(&m, 3);
	kvactl_mp_str(&m, "BlockRemoved", 12);
	kvactl_mp_array(&m, 1);
	kvactl_mp_bin(&m, "\x01\x02", 2);
	kvactl_mp_str(&m, "GPU", 3);
	kvactl_mp_array(&m, 1);
	kvactl_mp_str(&m, "AllBlocksCleared", 16);
	emit();
	/* The same in --layout map, as vLLM's newest releases write it. */
	kvactl_mp_map(&m, 3);
	kvactl_mp_str(&m, "ts", 2);
	kvactl_mp_f64(&m, 1732968000.5);
	kvactl_mp_str(&m, "events", 6);
	kvactl_mp_array(&m, 1);
	kvactl_mp_map(&m, 8);
	kvactl_mp_str(&m, "type", 4);
	kvactl_mp_str(&m, "BlockStored", 11);
	kvactl_mp_str(&m, "block_hashes", 12);
	kvactl_mp_array(&m, 1);
	kvactl_mp_uint(&m, 123);
	kvactl_mp_str(&m, "parent_block_hash", 17);
	kvactl_mp_nil(&m);
	kvactl_mp_str(&m, "token_ids", 9);
	kvactl_mp_array(&m, 0);
	kvactl_mp_str(&m, "block_size", 10);
	kvactl_mp_uint(&m, 16);
	kvactl_mp_str(&m, "lora_id", 7);
	kvactl_mp_nil(&m);
	kvactl_mp_str(&m, "medium", 6);
	kvactl_mp_str(&m, "GPU", 3);
	kvactl_mp_str(&m, "lora_name", 9);
	kvactl_mp_nil(&m);
	kvactl_mp_str(&m, "data_parallel_rank", 18);
	kvactl_mp_uint(&m, 0);
	emit();
	free(text);
	return fflush(stdout) ? 1 : 0;
}
