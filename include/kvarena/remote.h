/* SPDX-License-Identifier: MIT */
/*
 * The remote tier's fetch protocol: how an engine whose LOOKUP missed
 * asks its node's remote agent (kvarenactl remote NAME) to bring the keys
 * after the run it found from the cluster into the arena, where LOOKUP
 * (or LOOKUP_LOWER and PROMOTE) then finds them.  libkvarena speaks it
 * from kva_seq_attach_prefix(); Documentation/remote.rst describes it for
 * other runtimes.
 *
 * One SOCK_SEQPACKET connection to the agent's socket
 * (KVA_REMOTE_SOCKET_DIR "/" NAME ".sock", or $KVA_REMOTE_SOCKET), one
 * request (this header and @nr keys of 32 bytes, chain order), one reply.
 * The agent serves the cache domain of the caller's client of the arena:
 * @client_id must name a client of NAME that the connecting process
 * attached (the agent checks it against CLIENTS and SO_PEERCRED), so that
 * nobody fetches into another domain than its own.  Integers are in the
 * machine's byte order: both ends are on one machine.
 */
#ifndef KVARENA_REMOTE_H
#define KVARENA_REMOTE_H

#include <stdint.h>

#define KVA_REMOTE_SOCKET_DIR	"/run/kvarena/remote"
#define KVA_REMOTE_MAGIC	0x4b565246u	/* "KVRF" */
#define KVA_REMOTE_VERSION	1u
#define KVA_REMOTE_MAX_KEYS	64u		/* keys one request may ask */

struct kva_remote_req {
	uint32_t magic;		/* KVA_REMOTE_MAGIC */
	uint16_t version;	/* KVA_REMOTE_VERSION */
	uint16_t flags;		/* zero */
	uint32_t client_id;	/* the caller's client of the arena */
	uint32_t nr;		/* keys that follow, 1..KVA_REMOTE_MAX_KEYS */
	/* uint8_t keys[nr][32]; */
};

/*
 * The reply.  @status: 0, or -EPERM (the client is not the caller's),
 * -ENOENT (no such client), -ENOKEY (the agent has no secret for the
 * client's cache domain: it shares nothing there), -EINVAL (a malformed
 * request), -ENOSPC (the arena had no room for what was found), -EIO
 * (the cluster could not be asked).  @nr_fetched: the leading keys
 * published in the arena now (or its lower tier) that were not before.
 * @nr_found: keys the cluster held of the leading run, whole.
 */
struct kva_remote_rep {
	uint32_t magic;		/* KVA_REMOTE_MAGIC */
	uint16_t version;	/* KVA_REMOTE_VERSION */
	uint16_t flags;		/* zero */
	int32_t  status;
	uint32_t nr_fetched;
	uint32_t nr_found;
	uint32_t reserved;
};

#endif /* KVARENA_REMOTE_H */
