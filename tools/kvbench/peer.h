/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvbench attn --peer FILE: another library's CPU attention, loaded with
 * dlopen(), timed pass for pass beside kvarena's kernels on the same
 * shapes.  The shared object exports kvb_peer_v1; it is built outside the
 * project's build, from a tree the user gives (tools/ggml-peer/build.sh
 * for ggml), so that nothing of the peer is a dependency of kvarena.
 */
#ifndef KVB_PEER_H
#define KVB_PEER_H

#include <stddef.h>
#include <stdint.h>

#define KVB_PEER_ABI	1

/* The cache's element type on the peer's side. */
enum kvb_peer_dtype {
	KVB_PEER_F16,
	KVB_PEER_BF16,
	KVB_PEER_Q8_0,		/* 8-bit blocks of 32 with an fp16 scale */
};

/**
 * struct kvb_peer_case - one case: @batch sequences of @tokens tokens,
 * @q_heads over @kv_heads of @head_dim; @layers layers of K and V, all
 * run in turn by one pass (as a model step runs its layers), so that the
 * bytes a pass reads can exceed the caches; @threads threads.  A decode
 * (@q_tokens 0): one query token a sequence, seeing every key.  A prefill
 * (@q_tokens > 0): the last @q_tokens of the @tokens, causal - query i
 * sees the keys up to its own position, tokens - q_tokens + i.
 */
struct kvb_peer_case {
	uint32_t head_dim;
	uint32_t kv_heads;
	uint32_t q_heads;
	uint32_t batch;
	uint64_t tokens;
	uint32_t layers;
	uint32_t threads;
	enum kvb_peer_dtype dtype;
	float scale;
	uint32_t q_tokens;
};

/**
 * struct kvb_peer - what the peer object exports as kvb_peer_v1.
 * @abi:	KVB_PEER_ABI.
 * @name:	the peer ("ggml").
 * @version:	its build, as a reader can find it again (a commit).
 * @open:	set up a case; NULL and a reason in @why if it cannot.
 * @bytes:	the K and V bytes one pass reads.
 * @pass:	one decode of every layer: 0, or a negative errno.
 * @close:	free the case.
 */
struct kvb_peer {
	uint32_t abi;
	const char *name;
	const char *version;
	void *(*open)(const struct kvb_peer_case *c, char *why, size_t len);
	uint64_t (*bytes)(void *h);
	int (*pass)(void *h);
	void (*close)(void *h);
};

#endif /* KVB_PEER_H */
