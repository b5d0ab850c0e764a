// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl events --zmq: an arena's events published as vLLM publishes
 * its KV events (vllm/distributed/kv_events.py, ZmqEventPublisher), for
 * the routers that consume them (Dynamo, llm-d; Documentation/events.rst
 * says which version reads which layout):
 *
 *  - an XPUB socket (to a subscriber the same as vLLM's PUB: XPUB only
 *    lets --wait-subscribers see subscriptions come) that binds when the
 *    endpoint has a wildcard ("*" or "::") or is ipc:// or inproc://, and
 *    connects otherwise, as vLLM decides; --bind and --connect overrule;
 *  - each message three frames: the topic, the sequence number as 8 bytes
 *    big-endian (0 for the first message, then consecutive), and a msgpack
 *    event batch;
 *  - with --replay, a ROUTER socket (always bound) that answers a request
 *    [identity, "", start as 8 bytes big-endian] with every batch kept
 *    (the last 10000, as vLLM keeps) from start on, then an end marker of
 *    sequence number -1: [identity, "", topic, seq, batch] and [identity,
 *    "", "", -1, ""] as current vLLM frames them, [identity, "", seq,
 *    batch] and [identity, "", -1, ""] with the older layouts, as vLLM
 *    did before it added the topic.
 *
 * The layouts (--layout), as vLLM's msgspec structs encode them:
 *
 *  vllm         [ts, [event...], rank], each event a map, "type" first:
 *               {"type": "BlockStored", "block_hashes", "parent_block_hash",
 *                "token_ids", "block_size", "lora_id", "medium",
 *                "lora_name", "extra_keys", "cache_salt", "group_idx",
 *                "kv_cache_spec_kind"} (extra_keys and cache_salt for
 *                a block of a tenant's cache domain only)
 *               {"type": "BlockRemoved", "block_hashes", "medium",
 *                "group_idx"}
 *               {"type": "AllBlocksCleared"}
 *  vllm-array   [ts, [event...], rank], tagged arrays:
 *               ["BlockStored", hashes, parent, tokens, block_size,
 *                lora_id, medium, lora_name]
 *               ["BlockRemoved", hashes, medium]  ["AllBlocksCleared"]
 *  vllm-medium  the same without lora_name
 *  vllm-first   [ts, [event...]]: ["BlockStored", hashes, parent, tokens,
 *               block_size, lora_id]  ["BlockRemoved", hashes]
 *
 * Each read() of the module's events - all it had ready - becomes one
 * batch, as each scheduler step is one in vLLM.  Consecutive STORED
 * events that chain (each one's parent the one before, same client) are
 * one BlockStored, consecutive REMOVED ones of one domain one
 * BlockRemoved.  A LOST record (this reader fell behind the module's
 * ring) becomes AllBlocksCleared: a router forgets what it knew of the
 * arena rather than keep blocks that may be gone; and the arena's end
 * (CLEARED) is one too, after which kvarenactl answers replay requests
 * for --linger seconds (default 5) and exits.
 *
 * The cache domain of a block (its tenant: Documentation/kvarena.rst)
 * travels as vLLM carries a request's cache_salt, in the first block's
 * extra_keys, and as Dynamo reads one, in a cache_salt entry (vllm
 * layout, unless --salt none), so that a router that hashes the salt
 * into its keys never matches one tenant's prefix for another; and it is
 * mixed into the block hashes (every layout, unless --salt none), so that
 * two tenants' copies of one prefix are two blocks to a router.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events.h"
#include "kvarenactl.h"

#ifndef KVACTL_ZMQ

int kvactl_events_zmq(const struct kvactl_opts *o, struct kvactl_ev_ctx *c)
{
	(void)o;
	(void)c;
	kvactl_err("events: --zmq: this kvarenactl was built without ZeroMQ (build it with libzmq3-dev installed)");
	return KVACTL_FAIL;
}

struct kvactl_zpub *kvactl_zpub_open(const struct kvactl_opts *o,
				     const char *who)
{
	(void)o;
	kvactl_err("%s: --zmq: this kvarenactl was built without ZeroMQ (build it with libzmq3-dev installed)",
		   who);
	return NULL;
}

int kvactl_zpub_send(struct kvactl_zpub *z, const struct kvactl_ev_ctx *c,
		     const struct kvarena_event **ev, size_t n)
{
	(void)z;
	(void)c;
	(void)ev;
	(void)n;
	return -1;
}

int kvactl_zpub_fds(struct kvactl_zpub *z, int fds[2])
{
	(void)z;
	(void)fds;
	return 0;
}

void kvactl_zpub_service(struct kvactl_zpub *z)
{
	(void)z;
}

void kvactl_zpub_close(struct kvactl_zpub *z)
{
	(void)z;
}

#else

#include <time.h>
#include <zmq.h>

#define EV_HDR		sizeof(struct kvarena_event)
#define EV_BUF		(256u << 10)
#define REPLAY_KEEP	10000u		/* batches kept, as vLLM's buffer_steps */
#define PUB_HWM		100000		/* as vLLM's hwm */
#define LINGER_MS	5000		/* what close waits to send */

struct kept {
	uint64_t seq;
	uint8_t *buf;
	size_t len;
};

struct zpub {
	const char *who;		/* the command, in messages */
	void *ctx, *pub, *replay;
	const char *topic;
	bool topic_replay;		/* replies carry the topic (vllm) */
	uint32_t subscribed;		/* subscriptions the XPUB has seen */
	uint64_t seq;			/* the next message's */
	struct kept *keep;		/* REPLAY_KEEP slots, by seq % */
};

static void be64(uint8_t out[8], uint64_t v)
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint64_t from_be64(const uint8_t in[8])
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | in[i];
	return v;
}

/* vLLM's rule: bind "stable" endpoints, connect "volatile" ones. */
static bool binds(const char *ep)
{
	return strchr(ep, '*') || strstr(ep, "::") ||
	       !strncmp(ep, "ipc://", 6) || !strncmp(ep, "inproc://", 9);
}

static int zopen(struct zpub *z, const struct kvactl_opts *o)
{
	int hwm = PUB_HWM, linger = LINGER_MS, verbose = 1;
	bool bind = o->zmq_bind || (!o->zmq_connect && binds(o->zmq));

	if (!z->who)
		z->who = "events";
	z->topic = o->topic ? o->topic : "";
	z->topic_replay = o->layout == KVACTL_LAYOUT_VLLM;
	z->ctx = zmq_ctx_new();
	z->keep = calloc(REPLAY_KEEP, sizeof(*z->keep));
	if (!z->ctx || !z->keep) {
		kvactl_err("%s: out of memory", z->who);
		return -1;
	}
	/* Every subscription passed up, for --wait-subscribers to count. */
	z->pub = zmq_socket(z->ctx, ZMQ_XPUB);
	if (!z->pub ||
	    zmq_setsockopt(z->pub, ZMQ_SNDHWM, &hwm, sizeof(hwm)) ||
	    zmq_setsockopt(z->pub, ZMQ_LINGER, &linger, sizeof(linger)) ||
	    zmq_setsockopt(z->pub, ZMQ_XPUB_VERBOSE, &verbose, sizeof(verbose)) ||
	    (bind ? zmq_bind(z->pub, o->zmq) : zmq_connect(z->pub, o->zmq))) {
		kvactl_err("%s: --zmq %s: %s", z->who, o->zmq,
			   zmq_strerror(zmq_errno()));
		return -1;
	}
	if (!o->replay)
		return 0;
	/* No high-water mark: a request may be answered with every batch kept. */
	linger = 0;
	hwm = 0;
	z->replay = zmq_socket(z->ctx, ZMQ_ROUTER);
	if (!z->replay ||
	    zmq_setsockopt(z->replay, ZMQ_LINGER, &linger, sizeof(linger)) ||
	    zmq_setsockopt(z->replay, ZMQ_SNDHWM, &hwm, sizeof(hwm)) ||
	    zmq_bind(z->replay, o->replay)) {
		kvactl_err("%s: --replay %s: %s", z->who, o->replay,
			   zmq_strerror(zmq_errno()));
		return -1;
	}
	return 0;
}

/*
 * Take the subscription messages waiting on the XPUB socket (one frame
 * each: 1 and the topic filter to subscribe, 0 to unsubscribe), counting
 * the subscriptions.
 */
static void zsubscriptions(struct zpub *z)
{
	uint8_t msg[256];
	int n;

	while ((n = zmq_recv(z->pub, msg, sizeof(msg), ZMQ_DONTWAIT)) >= 0)
		if (n > 0 && msg[0] == 1)
			z->subscribed++;
		else if (n > 0 && msg[0] == 0 && z->subscribed)
			z->subscribed--;
}

static void zclose(struct zpub *z)
{
	if (z->replay)
		zmq_close(z->replay);
	if (z->pub)
		zmq_close(z->pub);		/* lingers: queued batches go out */
	if (z->ctx)
		zmq_ctx_term(z->ctx);
	if (z->keep)
		for (unsigned int i = 0; i < REPLAY_KEEP; i++)
			free(z->keep[i].buf);
	free(z->keep);
}

static int send3(void *s, const void *a, size_t alen, const void *b,
		 size_t blen, const void *c, size_t clen)
{
	if (zmq_send(s, a, alen, ZMQ_SNDMORE) < 0 ||
	    zmq_send(s, b, blen, ZMQ_SNDMORE) < 0 ||
	    zmq_send(s, c, clen, 0) < 0)
		return -1;
	return 0;
}

/* Publish one batch (@m) and keep it for replay. */
static int zsend(struct zpub *z, const struct kvactl_mp *m)
{
	struct kept *k = &z->keep[z->seq % REPLAY_KEEP];
	uint8_t seq[8];

	be64(seq, z->seq);
	if (send3(z->pub, z->topic, strlen(z->topic), seq, 8, m->buf, m->len)) {
		kvactl_err("%s: publishing: %s", z->who,
			   zmq_strerror(zmq_errno()));
		return -1;
	}
	free(k->buf);
	k->buf = malloc(m->len);
	k->len = k->buf ? m->len : 0;
	k->seq = k->buf ? z->seq : UINT64_MAX;
	if (k->buf)
		memcpy(k->buf, m->buf, m->len);
	z->seq++;
	return 0;
}

/*
 * One reply to the requester @id: [id, "", topic, seq, payload], or
 * without the topic for the layouts of vLLMs that sent none.
 */
static void reply(struct zpub *z, zmq_msg_t *id, const char *topic,
		  const uint8_t seq[8], const void *buf, size_t len)
{
	zmq_send(z->replay, zmq_msg_data(id), zmq_msg_size(id), ZMQ_SNDMORE);
	zmq_send(z->replay, "", 0, ZMQ_SNDMORE);
	if (z->topic_replay)
		zmq_send(z->replay, topic, strlen(topic), ZMQ_SNDMORE);
	zmq_send(z->replay, seq, 8, ZMQ_SNDMORE);
	zmq_send(z->replay, buf, len, 0);
}

/* Answer the replay requests waiting, as vLLM's _service_replay() does. */
static void zreplay(struct zpub *z)
{
	for (;;) {
		zmq_msg_t part[3], extra;
		uint64_t start, s, first;
		int i, n = 0, more = 1;
		uint8_t end[8];

		for (i = 0; i < 3; i++)
			zmq_msg_init(&part[i]);
		while (more) {
			zmq_msg_t *msg = n < 3 ? &part[n] : &extra;
			size_t sz = sizeof(more);

			if (n >= 3)
				zmq_msg_init(&extra);
			if (zmq_msg_recv(msg, z->replay, ZMQ_DONTWAIT) < 0) {
				if (n >= 3)
					zmq_msg_close(&extra);
				for (i = 0; i < 3; i++)
					zmq_msg_close(&part[i]);
				return;		/* nothing (more) waiting */
			}
			if (n >= 3)
				zmq_msg_close(&extra);
			n++;
			zmq_getsockopt(z->replay, ZMQ_RCVMORE, &more, &sz);
		}
		if (n != 3 || zmq_msg_size(&part[2]) != 8) {
			kvactl_err("%s: --replay: a request of %d frames, not [identity, \"\", 8-byte start]; ignored",
				   z->who, n);
			for (i = 0; i < 3; i++)
				zmq_msg_close(&part[i]);
			continue;
		}
		start = from_be64(zmq_msg_data(&part[2]));
		first = z->seq > REPLAY_KEEP ? z->seq - REPLAY_KEEP : 0;
		for (s = start > first ? start : first; s < z->seq; s++) {
			const struct kept *k = &z->keep[s % REPLAY_KEEP];
			uint8_t seq[8];

			if (k->seq != s)
				continue;
			be64(seq, s);
			reply(z, &part[0], z->topic, seq, k->buf, k->len);
		}
		memset(end, 0xff, sizeof(end));		/* -1, signed */
		reply(z, &part[0], "", end, "", 0);
		for (i = 0; i < 3; i++)
			zmq_msg_close(&part[i]);
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Answer replay requests for @ms milliseconds. */
static void zlinger(struct zpub *z, unsigned int ms)
{
	uint64_t end = now_ms() + ms, t;

	while (!kvactl_events_stopped() && (t = now_ms()) < end) {
		zmq_pollitem_t it = { .socket = z->replay, .events = ZMQ_POLLIN };

		if (zmq_poll(&it, 1, end - t < 1000 ? (long)(end - t) : 1000) > 0)
			zreplay(z);
	}
}

static void hash_out(struct kvactl_mp *m, const struct kvactl_ev_ctx *c,
		     const uint8_t key[KVARENA_KEY_LEN], uint64_t domain)
{
	uint8_t b[KVARENA_KEY_LEN];

	if (c->hash_bytes) {
		kvactl_block_bytes(b, key, domain, c->no_salt);
		kvactl_mp_bin(m, b, KVARENA_KEY_LEN);
	} else {
		kvactl_mp_uint(m, kvactl_block_hash(key, domain, c->no_salt));
	}
}

static void str_out(struct kvactl_mp *m, const char *s)
{
	kvactl_mp_str(m, s, strlen(s));
}

/* Does @b continue the chain @a ends, for one BlockStored? */
static bool chains(const struct kvarena_event *a, const struct kvarena_event *b)
{
	return b->type == KVARENA_EVENT_STORED &&
	       (b->flags & KVARENA_EVENT_PARENT) &&
	       b->client_id == a->client_id && b->nr_tokens == a->nr_tokens &&
	       !memcmp(b->parent, a->key, KVARENA_KEY_LEN);
}

/*
 * Where the event starting at @ev[i] ends: chained STOREDs and
 * consecutive REMOVEDs make one event each, anything else stands alone.
 */
static size_t run_end(const struct kvarena_event **ev, size_t i, size_t n)
{
	size_t j = i + 1;

	if (ev[i]->type == KVARENA_EVENT_STORED)
		while (j < n && chains(ev[j - 1], ev[j]))
			j++;
	else if (ev[i]->type == KVARENA_EVENT_REMOVED)
		while (j < n && ev[j]->type == KVARENA_EVENT_REMOVED &&
		       ev[j]->domain == ev[i]->domain)
			j++;
	return j;
}

/* The layout's events: maps (vllm) or tagged arrays (the others). */
static bool maps(const struct kvactl_ev_ctx *c)
{
	return c->layout == KVACTL_LAYOUT_VLLM;
}

/*
 * An event's head: the tag, as the first element of a tagged array, or
 * as the "type" entry of a map of @n fields besides it.
 */
static void ev_head(struct kvactl_mp *m, const struct kvactl_ev_ctx *c,
		    const char *tag, uint32_t n)
{
	if (maps(c)) {
		kvactl_mp_map(m, n + 1);
		str_out(m, "type");
	} else {
		kvactl_mp_array(m, n + 1);
	}
	str_out(m, tag);
}

/* A field: its name first in a map, nothing in an array. */
static void field(struct kvactl_mp *m, const struct kvactl_ev_ctx *c,
		  const char *name)
{
	if (maps(c))
		str_out(m, name);
}

/*
 * vLLM's fields of BlockStored after block_size, per layout: lora_id and
 * medium, lora_name, then (vllm) the defaulted ones it sends set:
 * extra_keys when there is a cache salt, group_idx 0 and the kind of KV
 * cache (every arena's frames are full attention's).
 */
static uint32_t stored_fields(const struct kvactl_ev_ctx *c, bool salted)
{
	switch (c->layout) {
	case KVACTL_LAYOUT_VLLM:
		return 9 + 2 * salted;
	case KVACTL_LAYOUT_ARRAY:
		return 7;
	case KVACTL_LAYOUT_MEDIUM:
		return 6;
	default:
		return 5;
	}
}

static void ev_stored(struct kvactl_mp *m, const struct kvactl_ev_ctx *c,
		      const struct kvarena_event **ev, size_t i, size_t j)
{
	char sbuf[48];
	const char *salt = maps(c) && !c->no_salt ?
			   kvactl_domain_salt(ev[i]->domain, sbuf) : NULL;
	bool first = !(ev[i]->flags & KVARENA_EVENT_PARENT);
	size_t k;

	ev_head(m, c, "BlockStored", stored_fields(c, salt));
	field(m, c, "block_hashes");
	kvactl_mp_array(m, (uint32_t)(j - i));
	for (k = i; k < j; k++)
		hash_out(m, c, ev[k]->key, ev[k]->domain);
	field(m, c, "parent_block_hash");
	if (!first)
		hash_out(m, c, ev[i]->parent, ev[i]->domain);
	else
		kvactl_mp_nil(m);
	field(m, c, "token_ids");
	kvactl_mp_array(m, (uint32_t)((j - i) * ev[i]->nr_tokens));
	for (k = i; k < j; k++)
		for (uint32_t t = 0; t < ev[k]->nr_tokens; t++)
			kvactl_mp_uint(m, kvactl_event_tokens(ev[k])[t]);
	field(m, c, "block_size");
	kvactl_mp_uint(m, kvactl_ev_block_size(c, ev[i]));
	field(m, c, "lora_id");
	kvactl_mp_nil(m);
	if (c->layout == KVACTL_LAYOUT_FIRST)
		return;
	field(m, c, "medium");
	str_out(m, c->medium);
	if (c->layout == KVACTL_LAYOUT_MEDIUM)
		return;
	field(m, c, "lora_name");
	kvactl_mp_nil(m);
	if (!maps(c))
		return;
	if (salt) {
		/*
		 * As vLLM's generate_block_hash_extra_keys(): one entry per
		 * block, the salt in the entry of a request's first block.
		 */
		field(m, c, "extra_keys");
		kvactl_mp_array(m, (uint32_t)(j - i));
		for (k = i; k < j; k++) {
			if (k == i && first) {
				kvactl_mp_array(m, 1);
				str_out(m, salt);
			} else {
				kvactl_mp_nil(m);
			}
		}
		/* Not vLLM's: where Dynamo takes a block's cache salt. */
		field(m, c, "cache_salt");
		str_out(m, salt);
	}
	field(m, c, "group_idx");
	kvactl_mp_uint(m, 0);
	field(m, c, "kv_cache_spec_kind");
	str_out(m, "full_attention");
}

static void ev_removed(struct kvactl_mp *m, const struct kvactl_ev_ctx *c,
		       const struct kvarena_event **ev, size_t i, size_t j)
{
	uint32_t n = c->layout == KVACTL_LAYOUT_VLLM ? 3 :
		     c->layout == KVACTL_LAYOUT_FIRST ? 1 : 2;

	ev_head(m, c, "BlockRemoved", n);
	field(m, c, "block_hashes");
	kvactl_mp_array(m, (uint32_t)(j - i));
	for (; i < j; i++)
		hash_out(m, c, ev[i]->key, ev[i]->domain);
	if (n < 2)
		return;
	field(m, c, "medium");
	str_out(m, c->medium);
	if (n < 3)
		return;
	field(m, c, "group_idx");
	kvactl_mp_uint(m, 0);
}

/*
 * The batch of one read's records @ev[0..n): [ts, [event...], rank], or
 * [ts, [event...]] for vllm-first.  Sets @end when the arena's CLEARED is
 * among them.
 */
static void batch(struct kvactl_mp *m, const struct kvactl_ev_ctx *c,
		  const struct kvarena_event **ev, size_t n, bool *end)
{
	size_t i, j, nev = 0;

	/* Count the events first: msgpack arrays say their length. */
	for (i = 0; i < n; i = run_end(ev, i, n))
		nev++;
	kvactl_mp_array(m, c->layout == KVACTL_LAYOUT_FIRST ? 2 : 3);
	kvactl_mp_f64(m, (double)ev[0]->time_ns / 1e9);
	kvactl_mp_array(m, (uint32_t)nev);
	for (i = 0; i < n; i = j) {
		j = run_end(ev, i, n);
		switch (ev[i]->type) {
		case KVARENA_EVENT_STORED:
			ev_stored(m, c, ev, i, j);
			break;
		case KVARENA_EVENT_REMOVED:
			ev_removed(m, c, ev, i, j);
			break;
		case KVARENA_EVENT_LOST:
			kvactl_err("events: %llu events were lost (this reader fell behind the module's ring); publishing AllBlocksCleared",
				   (unsigned long long)ev[i]->lost);
			ev_head(m, c, "AllBlocksCleared", 0);
			break;
		case KVARENA_EVENT_CLEARED:
			*end = true;
			ev_head(m, c, "AllBlocksCleared", 0);
			break;
		}
	}
	if (c->layout != KVACTL_LAYOUT_FIRST)
		kvactl_mp_uint(m, c->dp_rank);
}

int kvactl_events_zmq(const struct kvactl_opts *o, struct kvactl_ev_ctx *c)
{
	const struct kvarena_event **ev = NULL;
	size_t cap = EV_BUF / EV_HDR;
	struct zpub z = { 0 };
	int ret = KVACTL_FAIL;
	uint64_t seen = 0;
	uint8_t *buf;
	bool end = false, started = false;
	int fd = -1;

	buf = malloc(EV_BUF);
	ev = calloc(cap, sizeof(*ev));
	if (!buf || !ev) {
		kvactl_err("events: out of memory");
		goto out;
	}
	if (zopen(&z, o))
		goto out;
	fd = kvactl_events_open(c, o);
	if (fd < 0)
		goto out;
	while (!end && !kvactl_events_stopped()) {
		/*
		 * Events wait in the module's ring until enough subscribed;
		 * once they have, for good (a router's restart does not stop
		 * the others' stream).
		 */
		bool ready = started = started ||
				       z.subscribed >= o->wait_subscribers;
		zmq_pollitem_t it[3] = {
			{ .socket = z.pub, .events = ZMQ_POLLIN },
			{ .socket = z.replay, .events = ZMQ_POLLIN },
			{ .fd = fd, .events = ready ? ZMQ_POLLIN : 0 },
		};
		const struct kvarena_event *e;
		struct kvactl_mp m;
		size_t off = 0, n = 0;
		ssize_t len;

		if (!z.replay)
			it[1] = it[2];
		/* A second at most: a signal between the check and the poll. */
		if (zmq_poll(it, z.replay ? 3 : 2, 1000) < 0) {
			if (zmq_errno() == EINTR)
				continue;
			kvactl_err("events: poll: %s", zmq_strerror(zmq_errno()));
			goto out;
		}
		if (it[0].revents & ZMQ_POLLIN)
			zsubscriptions(&z);
		if (z.replay && (it[1].revents & ZMQ_POLLIN))
			zreplay(&z);
		if (!ready || !(it[z.replay ? 2 : 1].revents & ZMQ_POLLIN))
			continue;
		len = read(fd, buf, EV_BUF);
		if (len < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (len < 0) {
			kvactl_err("events: reading: %s", strerror(errno));
			goto out;
		}
		if (!len)
			break;
		e = NULL;
		while (kvactl_ev_next(buf, len, &off, &e) && n < cap)
			if (e->type >= KVARENA_EVENT_STORED &&
			    e->type <= KVARENA_EVENT_LOST)
				ev[n++] = e;	/* newer types: not vLLM's */
		if (!e)
			goto out;		/* malformed: said so */
		if (!n)
			continue;
		kvactl_mp_init(&m);
		batch(&m, c, ev, n, &end);
		if (m.oom || zsend(&z, &m)) {
			if (m.oom)
				kvactl_err("events: out of memory");
			kvactl_mp_free(&m);
			goto out;
		}
		kvactl_mp_free(&m);
		seen += n;
		if (o->iterations && seen >= o->iterations)
			break;
	}
	/*
	 * The arena is gone; a subscriber that missed its last batches may
	 * still ask for them: answer for --linger seconds more.
	 */
	if (end && z.replay && o->linger_ms)
		zlinger(&z, o->linger_ms);
	ret = KVACTL_OK;
out:
	if (fd >= 0)
		close(fd);
	zclose(&z);
	free(ev);
	free(buf);
	return ret;
}

/* ---- a publisher of batches for another command (kvarenactl remote) ----- */

struct kvactl_zpub {
	struct zpub z;
};

struct kvactl_zpub *kvactl_zpub_open(const struct kvactl_opts *o,
				     const char *who)
{
	struct kvactl_zpub *p = calloc(1, sizeof(*p));

	if (!p) {
		kvactl_err("%s: out of memory", who);
		return NULL;
	}
	p->z.who = who;
	if (zopen(&p->z, o)) {
		zclose(&p->z);
		free(p);
		return NULL;
	}
	return p;
}

int kvactl_zpub_send(struct kvactl_zpub *p, const struct kvactl_ev_ctx *c,
		     const struct kvarena_event **ev, size_t n)
{
	struct kvactl_mp m;
	bool end = false;
	int ret;

	if (!n)
		return 0;
	kvactl_mp_init(&m);
	batch(&m, c, ev, n, &end);
	ret = m.oom ? -1 : zsend(&p->z, &m);
	if (m.oom)
		kvactl_err("%s: out of memory", p->z.who);
	kvactl_mp_free(&m);
	return ret;
}

/* The sockets' ZMQ_FDs, to poll() beside the caller's own: how many. */
int kvactl_zpub_fds(struct kvactl_zpub *p, int fds[2])
{
	void *socks[2] = { p->z.pub, p->z.replay };
	int n = 0;

	for (int i = 0; i < 2; i++) {
		size_t sz = sizeof(fds[n]);

		if (socks[i] && !zmq_getsockopt(socks[i], ZMQ_FD, &fds[n], &sz))
			n++;
	}
	return n;
}

/*
 * Subscriptions and replay requests waiting: taken, answered.  Asking
 * for ZMQ_EVENTS last lets each socket's ZMQ_FD (edge-triggered: it
 * says "look again", not "readable") quiet down until something new.
 */
void kvactl_zpub_service(struct kvactl_zpub *p)
{
	void *socks[2] = { p->z.pub, p->z.replay };

	zsubscriptions(&p->z);
	if (p->z.replay)
		zreplay(&p->z);
	for (int i = 0; i < 2; i++) {
		int ev;
		size_t sz = sizeof(ev);

		if (socks[i])
			zmq_getsockopt(socks[i], ZMQ_EVENTS, &ev, &sz);
	}
}

void kvactl_zpub_close(struct kvactl_zpub *p)
{
	if (!p)
		return;
	zclose(&p->z);
	free(p);
}

#endif /* KVACTL_ZMQ */
