// SPDX-License-Identifier: MIT
/*
 * kva_geometry_explain(): the frame layout's figures for a model, or why
 * a model does not fit a frame, in words a tool can print as they are.
 */
#include <inttypes.h>
#include <stdio.h>

#include "internal.h"

/* "2 MiB" for exact binary multiples, "3000 bytes" otherwise. */
static const char *fmt_bytes(uint64_t n, char *buf, size_t size)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB" };
	int u = -1;

	while (n && !(n & 1023) && u < 3) {
		n >>= 10;
		u++;
	}
	if (u < 0)
		snprintf(buf, size, "%" PRIu64 " bytes", n);
	else
		snprintf(buf, size, "%" PRIu64 " %s", n, unit[u]);
	return buf;
}

int kva_geometry_explain(const struct kva_geometry *g, char *buf, size_t size)
{
	struct kva_geometry c;
	char b1[32], b2[32], b3[32];
	uint64_t bpt, fit;
	int ret;

	if (!g || (!buf && size))
		return -EINVAL;
	c = *g;
	ret = kva_geometry_init(&c);
	if (ret == -EINVAL) {
		if (!g->layers || !g->kv_heads || !g->head_dim ||
		    !g->frame_size)
			snprintf(buf, size, "layers, kv_heads, head_dim and "
				 "frame_size must all be non-zero");
		else if (g->dtype == KVA_DTYPE_RAW)
			snprintf(buf, size, "a raw geometry has one layer and "
				 "one KV head (%" PRIu32 " and %" PRIu32 " "
				 "given); its head_dim is the bytes per row",
				 g->layers, g->kv_heads);
		else if (g->dtype >= KVA_DTYPE_COUNT)
			snprintf(buf, size, "dtype %" PRIu32 " is not fp32 (0), "
				 "fp16 (1), bf16 (2), fp8 (3) or raw (255)",
				 g->dtype);
		else
			snprintf(buf, size, "out of range: layers, kv_heads "
				 "and head_dim go up to 65536, frame_size to "
				 "1 TiB, tokens per frame to 2^32 - 1");
		return ret;
	}
	if (ret == -E2BIG && g->dtype == KVA_DTYPE_RAW) {
		snprintf(buf, size, "a raw row of %s is more than a %s frame "
			 "holds", fmt_bytes(g->head_dim, b1, sizeof(b1)),
			 fmt_bytes(g->frame_size, b2, sizeof(b2)));
		return ret;
	}
	if (ret == -E2BIG) {
		bpt = 2ull * g->layers * g->kv_heads * g->head_dim *
		      kva_dtype_size((enum kva_dtype)g->dtype);
		for (fit = 4096; fit < bpt; fit <<= 1)
			;
		snprintf(buf, size, "one token needs %s of KV (2 x %" PRIu32
			 " layers x %" PRIu32 " KV heads x %" PRIu32 " x %s), "
			 "more than a %s frame holds; frames of %s or more "
			 "fit at least one",
			 fmt_bytes(bpt, b1, sizeof(b1)), g->layers,
			 g->kv_heads, g->head_dim,
			 kva_dtype_name((enum kva_dtype)g->dtype),
			 fmt_bytes(g->frame_size, b2, sizeof(b2)),
			 fmt_bytes(fit, b3, sizeof(b3)));
		return ret;
	}
	if (c.dtype == KVA_DTYPE_RAW) {
		snprintf(buf, size, "raw rows of %s: %" PRIu32 " rows per %s "
			 "frame, %s unused per frame",
			 fmt_bytes(c.bytes_per_token, b1, sizeof(b1)),
			 c.tokens_per_frame,
			 fmt_bytes(c.frame_size, b2, sizeof(b2)),
			 fmt_bytes(c.frame_size - (uint64_t)c.tokens_per_frame *
				   c.bytes_per_token, b3, sizeof(b3)));
		return 0;
	}
	snprintf(buf, size, "%" PRIu32 " layers x %" PRIu32 " KV heads x %"
		 PRIu32 " x %s: %s per token, %" PRIu32 " tokens per %s frame, "
		 "%s unused per frame",
		 c.layers, c.kv_heads, c.head_dim,
		 kva_dtype_name((enum kva_dtype)c.dtype),
		 fmt_bytes(c.bytes_per_token, b1, sizeof(b1)),
		 c.tokens_per_frame, fmt_bytes(c.frame_size, b2, sizeof(b2)),
		 fmt_bytes(c.frame_size - (uint64_t)c.tokens_per_frame *
			   c.bytes_per_token, b3, sizeof(b3)));
	return 0;
}
