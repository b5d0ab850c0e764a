/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvarenactl events: an arena's KV events from /dev/kvarena, as JSON lines
 * or published on ZeroMQ in vLLM's wire format.
 *
 *   events.c   the command: reading the events fd, JSON lines
 *   zmq.c      the ZeroMQ publisher and its replay socket
 *   msgpack.c  the msgpack encoder
 *
 * See Documentation/events.rst.
 */
#ifndef KVARENACTL_EVENTS_H
#define KVARENACTL_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/kvarena.h>

struct kvactl_opts;

/* ---- the command (events.c) -------------------------------------------------- */

/*
 * --layout: which vLLM's messages --zmq sends (zmq.c has each one's
 * fields; Documentation/events.rst which consumer decodes which).
 */
enum kvactl_layout {
	KVACTL_LAYOUT_VLLM,	/* current: [ts, [{"type": ...}], rank] */
	KVACTL_LAYOUT_ARRAY,	/* tagged arrays with lora_name, rank */
	KVACTL_LAYOUT_MEDIUM,	/* tagged arrays with medium, rank */
	KVACTL_LAYOUT_FIRST,	/* vLLM's first: [ts, [[tag, ...]]] */
	KVACTL_NR_LAYOUTS
};

/* The layout named @name, or -1. */
int kvactl_layout_by_name(const char *name);

/* What an event is told with: the arena, and how to write its blocks. */
struct kvactl_ev_ctx {
	const char *arena;
	const char *medium;		/* vLLM's medium: "GPU", "CPU", "DISK" */
	uint32_t tokens_per_frame;	/* block_size; 0 if the arena lacks it */
	bool hash_bytes;		/* block hashes as 32 bytes, not ints */
	enum kvactl_layout layout;
	bool no_salt;			/* --salt none */
	uint32_t dp_rank;		/* the batches' data_parallel_rank */
};

/*
 * The cache salt of events of @domain, as a router keeps tenants apart
 * with it (vLLM's cache_salt): "kvarena-uid-1001" and so on; NULL for the
 * arena-wide domain, whose clients all share their prefixes.
 */
const char *kvactl_domain_salt(uint64_t domain, char buf[48]);

/* The arena's events fd (after its STAT), and signals that stop the loop;
 * -1 after saying why not. */
int kvactl_events_open(struct kvactl_ev_ctx *c, const struct kvactl_opts *o);
bool kvactl_events_stopped(void);
void kvactl_events_stop(void);
/* The next record of a read() of @len bytes at *@off; false at the end or
 * on a malformed record (said so; *@ev is NULL then). */
bool kvactl_ev_next(const uint8_t *buf, size_t len, size_t *off,
		    const struct kvarena_event **ev);
/* The token ids after a STORED record's header. */
const uint32_t *kvactl_event_tokens(const struct kvarena_event *ev);
/* A key as vLLM's integer block hash: its last 8 bytes, big-endian. */
uint64_t kvactl_key_hash(const uint8_t key[KVARENA_KEY_LEN]);
/*
 * What a block of cache domain @domain is told as: the key's hash, with
 * the domain mixed in (unless @no_salt, or the domain is arena-wide), so
 * that two tenants' copies of one prefix are two blocks to a router, as
 * two requests' of different cache salts are to vLLM.
 */
uint64_t kvactl_block_hash(const uint8_t key[KVARENA_KEY_LEN], uint64_t domain,
			   bool no_salt);
/* The same as 32 bytes: the key, its last 8 bytes that hash. */
void kvactl_block_bytes(uint8_t out[KVARENA_KEY_LEN],
			const uint8_t key[KVARENA_KEY_LEN], uint64_t domain,
			bool no_salt);
uint32_t kvactl_ev_block_size(const struct kvactl_ev_ctx *c,
			      const struct kvarena_event *ev);

/* zmq.c: the loop of --zmq. */
int kvactl_events_zmq(const struct kvactl_opts *o, struct kvactl_ev_ctx *c);

/*
 * zmq.c: a publisher of batches of records for another command (the
 * remote agent's stream): the sockets of --zmq and --replay as events
 * makes them, each kvactl_zpub_send() one batch of @ev[0..@n) told with
 * @c, as events --zmq makes of one read.  Open says why not (messages
 * start with @who) and returns NULL.  kvactl_zpub_fds() gives the
 * sockets' ZMQ_FDs to poll(); kvactl_zpub_service() takes what they have
 * (subscriptions, replay requests) whenever the caller wakes.
 */
struct kvactl_zpub;
struct kvactl_zpub *kvactl_zpub_open(const struct kvactl_opts *o,
				     const char *who);
int kvactl_zpub_send(struct kvactl_zpub *z, const struct kvactl_ev_ctx *c,
		     const struct kvarena_event **ev, size_t n);
int kvactl_zpub_fds(struct kvactl_zpub *z, int fds[2]);
void kvactl_zpub_service(struct kvactl_zpub *z);
void kvactl_zpub_close(struct kvactl_zpub *z);

/* ---- msgpack (msgpack.c) --------------------------------------------------- */

/* A growing buffer of msgpack; @oom is set (and sticks) when it could not
 * grow. */
struct kvactl_mp {
	uint8_t *buf;
	size_t len, cap;
	bool oom;
};

void kvactl_mp_init(struct kvactl_mp *m);
void kvactl_mp_free(struct kvactl_mp *m);
void kvactl_mp_nil(struct kvactl_mp *m);
void kvactl_mp_bool(struct kvactl_mp *m, bool v);
void kvactl_mp_uint(struct kvactl_mp *m, uint64_t v);
void kvactl_mp_int(struct kvactl_mp *m, int64_t v);
void kvactl_mp_f64(struct kvactl_mp *m, double v);
void kvactl_mp_str(struct kvactl_mp *m, const char *s, size_t n);
void kvactl_mp_bin(struct kvactl_mp *m, const void *p, size_t n);
/* An array header: the next @n values are its elements. */
void kvactl_mp_array(struct kvactl_mp *m, uint32_t n);
/* A map header: the next 2 * @n values are its keys and values. */
void kvactl_mp_map(struct kvactl_mp *m, uint32_t n);

#endif /* KVARENACTL_EVENTS_H */
