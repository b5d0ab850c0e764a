// SPDX-License-Identifier: GPL-2.0
/*
 * kvsim - prefix keys.
 *
 * A Mooncake trace names each 512-token block of a prompt with a hash id;
 * equal ids at the same position mean the same prefix.  A block of B
 * tokens of the KV cache holds the same KV in two requests exactly when
 * the prompts agree up to its last token, so its key is the chain of hash
 * ids up to the 512-token block holding that token, and its index:
 *
 *   chain[0] = mix(seed ^ id[0]),  chain[i] = mix(chain[i-1] ^ id[i])
 *   key(j)   = mix(chain[(j + 1) * B - 1) / 512] + j)
 *
 * Only full blocks of the prompt get keys.  The keys are 64-bit; the
 * chance that two of the trace's few hundred thousand prefixes collide is
 * below 10^-8.
 */
#include <stdlib.h>

#include "kvsim.h"

#define KEY_SEED	0x6b7673696d2d6b76ull	/* "kvsim-kv" */

/* splitmix64's finaliser: a bijection that mixes every input bit. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

void keys_chain(struct req *r)
{
	uint64_t h = KEY_SEED;
	uint32_t i;

	for (i = 0; i < r->nr_hash; i++) {
		h = mix(h ^ r->hash[i]);
		r->chain[i] = h;
	}
}

uint64_t key_of_block(const struct req *r, uint32_t block_tokens, uint32_t j)
{
	uint64_t last = ((uint64_t)j + 1) * block_tokens - 1;

	return mix(r->chain[last / KVT_HASH_BLOCK] + j);
}
