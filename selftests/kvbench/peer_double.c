// SPDX-License-Identifier: GPL-2.0
/*
 * A test double of a kvbench attn peer (tools/kvbench/peer.h), standing
 * in for a peer library (ggml) that CI does not have: it keeps the case's
 * K and V bytes (as the peer's dtype sizes them) and reads them all each
 * pass.  Built twice: as itself, and with -DWRONG_ABI, whose kvb_peer_v1
 * kvbench must refuse.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"

struct dpeer {
	unsigned char *mem;
	uint64_t bytes;
	volatile uint64_t sum;
};

static void *dp_open(const struct kvb_peer_case *c, char *why, size_t len)
{
	/* f16, bf16: 2 bytes an element; q8_0: 34 bytes a block of 32. */
	uint64_t row = c->dtype == KVB_PEER_Q8_0 ? c->head_dim / 32 * 34 :
		       c->head_dim * 2ull;
	struct dpeer *d;

	if (!c->head_dim || !c->kv_heads || !c->q_heads || !c->batch ||
	    !c->tokens || !c->layers || !c->threads || !(c->scale > 0)) {
		snprintf(why, len, "a case with a zero in it");
		return NULL;
	}
	if (c->q_tokens > c->tokens || (c->q_tokens && c->batch != 1)) {
		snprintf(why, len, "a prefill of %u query tokens of %llu, batch %u",
			 c->q_tokens, (unsigned long long)c->tokens, c->batch);
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->bytes = 2 * row * c->tokens * c->kv_heads * c->batch * c->layers;
	d->mem = malloc(d->bytes);
	if (!d->mem) {
		snprintf(why, len, "out of memory");
		free(d);
		return NULL;
	}
	memset(d->mem, 1, d->bytes);
	return d;
}

static uint64_t dp_bytes(void *h)
{
	return ((struct dpeer *)h)->bytes;
}

static int dp_pass(void *h)
{
	struct dpeer *d = h;
	uint64_t s = 0;

	for (uint64_t i = 0; i < d->bytes; i += 64)
		s += d->mem[i];
	d->sum = s;
	return 0;
}

static void dp_close(void *h)
{
	struct dpeer *d = h;

	free(d->mem);
	free(d);
}

const struct kvb_peer kvb_peer_v1 = {
#ifdef WRONG_ABI
	.abi = KVB_PEER_ABI + 1,
#else
	.abi = KVB_PEER_ABI,
#endif
	.name = "double",
	.version = "test double 1",
	.open = dp_open,
	.bytes = dp_bytes,
	.pass = dp_pass,
	.close = dp_close,
};
