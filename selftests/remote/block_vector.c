// SPDX-License-Identifier: GPL-2.0
/*
 * block_vector encode FILE | check FILE - one block of fixed inputs
 * written by tools/common/kvblock.c (its store key on standard output,
 * the value in FILE), or a value read from FILE checked by it (the miss
 * reason, or "ok", on standard output).  spec_check.py does the same
 * with kvblock_spec.py, written from Documentation/remote.rst, and each
 * side reads the other's: two implementations of one specification.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvblock.h"
#include "sha256.h"

#define FS	65536u

static void digest(const char *s, uint8_t out[32])
{
	struct kva_sha256 h;

	kva_sha256_init(&h);
	kva_sha256_update(&h, s, strlen(s));
	kva_sha256_final(&h, out);
}

int main(int argc, char **argv)
{
	static const char secret[] = "spec-test-secret-0123456789";
	const struct kvb_geometry g = { .frame_size = FS, .layers = 2,
					.kv_heads = 2, .head_dim = 16,
					.dtype = 1, .tokens = 256 };
	uint8_t chain[32], parent[32], *val = malloc(KVB_HEADER_SIZE + FS);
	struct kvb_secret s;
	char key[KVB_KEY_LEN];
	size_t n;
	FILE *f;

	if (argc != 3 || !val)
		return 2;
	kvb_secret_init(&s, secret, strlen(secret));
	digest("chain", chain);
	digest("parent", parent);
	if (!strcmp(argv[1], "encode")) {
		for (size_t i = 0; i < FS; i++)
			val[KVB_HEADER_SIZE + i] = (uint8_t)(i * 7 + 3);
		kvb_encode(val, &s, &g, chain, parent, "node-c", 1234567,
			   val + KVB_HEADER_SIZE);
		kvb_key(&s, &g, chain, key);
		f = fopen(argv[2], "wb");
		if (!f || fwrite(val, 1, KVB_HEADER_SIZE + FS, f) !=
			  KVB_HEADER_SIZE + FS || fclose(f)) {
			free(val);
			return 1;
		}
		printf("%s\n", key);
		free(val);
		return 0;
	}
	f = fopen(argv[2], "rb");
	if (!f) {
		free(val);
		return 1;
	}
	n = fread(val, 1, KVB_HEADER_SIZE + FS, f);
	fclose(f);
	printf("%s\n", kvb_miss_name(kvb_check(val, n, &s, &g, chain, NULL)));
	free(val);
	return 0;
}
