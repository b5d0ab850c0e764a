// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl events NAME: an arena's KV events, read from the module
 * (KVARENA_IOC_EVENTS_FD) and written as JSON lines, or published on
 * ZeroMQ as vLLM publishes its KV events (--zmq; zmq.c).
 *
 * The vLLM side: vllm/distributed/kv_events.py; zmq.c has the layouts,
 * Documentation/events.rst which router reads which.
 *
 * A kvarena key is 32 bytes; as a block hash it is, like vLLM's own
 * (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES), the integer of its last 8 bytes,
 * big-endian - or with --hashes bytes the 32 bytes themselves - with the
 * block's cache domain mixed in (kvactl_block_hash()).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events.h"
#include "kvarenactl.h"

#define EV_HDR		sizeof(struct kvarena_event)
#define EV_BUF		(256u << 10)	/* a read's worth of records */

static volatile sig_atomic_t ev_stop;

static void ev_on_signal(int sig)
{
	(void)sig;
	ev_stop = 1;
}

static void ev_signals(void)
{
	struct sigaction sa = { .sa_handler = ev_on_signal };

	/* No SA_RESTART: a blocked read() or poll() returns EINTR. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

uint64_t kvactl_key_hash(const uint8_t key[KVARENA_KEY_LEN])
{
	uint64_t h = 0;

	for (int i = KVARENA_KEY_LEN - 8; i < KVARENA_KEY_LEN; i++)
		h = h << 8 | key[i];
	return h;
}

/* A bijective mix of the 64 bits (splitmix64's finalizer); 0 stays 0. */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t domain_mix(uint64_t domain, bool no_salt)
{
	char buf[48];

	return no_salt || !kvactl_domain_salt(domain, buf) ? 0 : mix64(domain);
}

uint64_t kvactl_block_hash(const uint8_t key[KVARENA_KEY_LEN], uint64_t domain,
			   bool no_salt)
{
	return kvactl_key_hash(key) ^ domain_mix(domain, no_salt);
}

void kvactl_block_bytes(uint8_t out[KVARENA_KEY_LEN],
			const uint8_t key[KVARENA_KEY_LEN], uint64_t domain,
			bool no_salt)
{
	uint64_t h = kvactl_block_hash(key, domain, no_salt);

	memcpy(out, key, KVARENA_KEY_LEN - 8);
	for (int i = 0; i < 8; i++)
		out[KVARENA_KEY_LEN - 8 + i] = (uint8_t)(h >> (56 - 8 * i));
}

static void key_hex(char out[2 * KVARENA_KEY_LEN + 1],
		    const uint8_t key[KVARENA_KEY_LEN])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < KVARENA_KEY_LEN; i++) {
		out[2 * i] = hex[key[i] >> 4];
		out[2 * i + 1] = hex[key[i] & 15];
	}
	out[2 * KVARENA_KEY_LEN] = 0;
}

const uint32_t *kvactl_event_tokens(const struct kvarena_event *ev)
{
	return (const uint32_t *)((const uint8_t *)ev + EV_HDR);
}

static const char *ev_type_name(uint16_t type)
{
	switch (type) {
	case KVARENA_EVENT_STORED: return "BlockStored";
	case KVARENA_EVENT_REMOVED: return "BlockRemoved";
	case KVARENA_EVENT_CLEARED: return "AllBlocksCleared";
	case KVARENA_EVENT_LOST: return "Lost";
	default: return "Unknown";
	}
}

/* One event as a JSON line. */
static void ev_json(const struct kvactl_ev_ctx *c,
		    const struct kvarena_event *ev)
{
	char hex[2 * KVARENA_KEY_LEN + 1], sbuf[48];
	struct kvactl_json j;
	const char *salt;
	uint32_t i;

	kvactl_json_init(&j, stdout, false);
	kvactl_json_obj(&j, NULL);
	kvactl_json_str(&j, "arena", c->arena);
	kvactl_json_u64(&j, "seq", ev->seq);
	kvactl_json_u64(&j, "time_ns", ev->time_ns);
	kvactl_json_str(&j, "type", ev_type_name(ev->type));
	switch (ev->type) {
	case KVARENA_EVENT_STORED:
	case KVARENA_EVENT_REMOVED:
		kvactl_json_arr(&j, "block_hashes");
		kvactl_json_u64(&j, NULL,
				kvactl_block_hash(ev->key, ev->domain, false));
		kvactl_json_end(&j);
		key_hex(hex, ev->key);
		kvactl_json_str(&j, "key", hex);
		kvactl_json_u64(&j, "frame", ev->frame);
		salt = kvactl_domain_salt(ev->domain, sbuf);
		if (salt)
			kvactl_json_str(&j, "cache_salt", salt);
		else
			kvactl_json_null(&j, "cache_salt");
		if (ev->type == KVARENA_EVENT_REMOVED) {
			kvactl_json_str(&j, "medium", c->medium);
			break;
		}
		if (ev->flags & KVARENA_EVENT_PARENT) {
			kvactl_json_u64(&j, "parent_block_hash",
					kvactl_block_hash(ev->parent, ev->domain,
							  false));
			key_hex(hex, ev->parent);
			kvactl_json_str(&j, "parent_key", hex);
		} else {
			kvactl_json_null(&j, "parent_block_hash");
			kvactl_json_null(&j, "parent_key");
		}
		kvactl_json_arr(&j, "token_ids");
		for (i = 0; i < ev->nr_tokens; i++)
			kvactl_json_u64(&j, NULL, kvactl_event_tokens(ev)[i]);
		kvactl_json_end(&j);
		kvactl_json_u64(&j, "block_size", kvactl_ev_block_size(c, ev));
		kvactl_json_null(&j, "lora_id");
		kvactl_json_str(&j, "medium", c->medium);
		kvactl_json_u64(&j, "client", ev->client_id);
		break;
	case KVARENA_EVENT_LOST:
		kvactl_json_u64(&j, "lost", ev->lost);
		break;
	}
	kvactl_json_end(&j);
	kvactl_json_done(&j);
}

static const char *const layout_names[KVACTL_NR_LAYOUTS] = {
	[KVACTL_LAYOUT_VLLM] = "vllm",
	[KVACTL_LAYOUT_ARRAY] = "vllm-array",
	[KVACTL_LAYOUT_MEDIUM] = "vllm-medium",
	[KVACTL_LAYOUT_FIRST] = "vllm-first",
};

int kvactl_layout_by_name(const char *name)
{
	for (int i = 0; i < KVACTL_NR_LAYOUTS; i++)
		if (!strcmp(name, layout_names[i]))
			return i;
	return -1;
}

const char *kvactl_domain_salt(uint64_t domain, char buf[48])
{
	static const char *const kinds[] = {
		[KVARENA_DOMAIN_KIND_UID] = "uid",
		[KVARENA_DOMAIN_KIND_GID] = "gid",
		[KVARENA_DOMAIN_KIND_NAMED] = "named",
		[KVARENA_DOMAIN_KIND_PRIVATE] = "private",
	};
	uint32_t kind = KVARENA_DOMAIN_KIND(domain);

	/* 0: a module without cache domains, one domain for all. */
	if (!domain || kind == KVARENA_DOMAIN_KIND_ARENA)
		return NULL;
	if (kind < sizeof(kinds) / sizeof(kinds[0]) && kinds[kind])
		snprintf(buf, 48, "kvarena-%s-%llu", kinds[kind],
			 (unsigned long long)KVARENA_DOMAIN_NR(domain));
	else
		snprintf(buf, 48, "kvarena-%llx", (unsigned long long)domain);
	return buf;
}

uint32_t kvactl_ev_block_size(const struct kvactl_ev_ctx *c,
			      const struct kvarena_event *ev)
{
	return ev->nr_tokens ? ev->nr_tokens : c->tokens_per_frame;
}

/*
 * Walk the records of one read(); returns false on a malformed one (the
 * module and this tool disagree: stop rather than guess).
 */
bool kvactl_ev_next(const uint8_t *buf, size_t len, size_t *off,
		    const struct kvarena_event **ev)
{
	const struct kvarena_event *e;

	if (*off == len)
		return false;
	e = (const struct kvarena_event *)(buf + *off);
	if (len - *off < EV_HDR || e->size < EV_HDR || e->size % 8 ||
	    e->size > len - *off ||
	    (uint64_t)e->nr_tokens * 4 > e->size - EV_HDR) {
		kvactl_err("events: a malformed record at byte %zu of a read", *off);
		*off = len;
		*ev = NULL;
		return false;
	}
	*ev = e;
	*off += e->size;
	return true;
}

static int ev_open(struct kvactl_ev_ctx *c, const struct kvactl_opts *o)
{
	struct kvarena_events_fd e = {
		.flags = o->events_oldest ? KVARENA_EVENTS_OLDEST : 0,
	};
	struct kvarena_stat st = { 0 };
	struct kvactl_gang g;
	int fd, err;

	fd = kvactl_open(false, "events");
	if (fd < 0)
		return -1;
	kvactl_name_copy(st.name, c->arena);
	err = kvactl_ioctl(fd, KVARENA_IOC_STAT, &st);
	if (!err) {
		kvactl_name_copy(e.name, c->arena);
		err = kvactl_ioctl(fd, KVARENA_IOC_EVENTS_FD, &e);
	}
	close(fd);
	if (err == -ENOENT) {
		kvactl_err("events: no arena \"%s\"", c->arena);
		return -1;
	}
	if (err == -EACCES) {
		kvactl_err("events: arena \"%s\": permission denied (its mode does not let you view it)",
			   c->arena);
		return -1;
	}
	if (err == -EOPNOTSUPP || err == -ENOTTY) {
		kvactl_err("events: the module keeps no events (kvarena.ko's events_ring_kib is 0, or it predates them)");
		return -1;
	}
	if (err) {
		kvactl_err("events: arena \"%s\": %s", c->arena, strerror(-err));
		return -1;
	}
	/* A gang's frame is a frame in each member: its tokens are theirs. */
	kvactl_gang_read(st.name, &g);
	c->tokens_per_frame = (uint32_t)kvactl_gang_tokens_per_frame(&st,
								     g.nr_members);
	/* Where the blocks are: GPU, CPU or DISK. */
	if (!c->medium && st.mem_kind == KVARENA_MEM_CUDA)
		c->medium = "GPU";
	else if (!c->medium)
		c->medium = st.mem_kind == KVARENA_MEM_FILE ? "DISK" : "CPU";
	return e.fd;
}

int kvactl_cmd_events(const struct kvactl_opts *o)
{
	struct kvactl_ev_ctx c = {
		.arena = o->args[0],
		.medium = o->medium,
		.hash_bytes = o->hash_bytes,
		.layout = (enum kvactl_layout)o->layout,
		.dp_rank = o->dp_rank,
		.no_salt = o->no_salt,
	};
	uint64_t seen = 0;
	int ret = KVACTL_OK;
	struct pollfd p;
	uint8_t *buf;
	ssize_t n;

	if (o->zmq)
		return kvactl_events_zmq(o, &c);
	buf = malloc(EV_BUF);
	if (!buf) {
		kvactl_err("events: out of memory");
		return KVACTL_FAIL;
	}
	p.fd = ev_open(&c, o);
	if (p.fd < 0) {
		free(buf);
		return KVACTL_FAIL;
	}
	p.events = POLLIN;
	ev_signals();
	while (!ev_stop) {
		const struct kvarena_event *ev;
		size_t off = 0;

		n = read(p.fd, buf, EV_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			kvactl_err("events: reading: %s", strerror(errno));
			ret = KVACTL_FAIL;
			break;
		}
		if (!n)		/* the arena is gone */
			break;
		while (kvactl_ev_next(buf, n, &off, &ev)) {
			ev_json(&c, ev);
			if (ev->type == KVARENA_EVENT_LOST)
				kvactl_err("events: %llu events were lost (this reader fell behind the module's ring)",
					   (unsigned long long)ev->lost);
			if (o->iterations && ++seen == o->iterations)
				ev_stop = 1;
			if (ev_stop)
				break;
		}
		if (!ev)
			ret = KVACTL_FAIL;
		if (fflush(stdout) || ret)
			break;
	}
	close(p.fd);
	free(buf);
	return ret;
}

int kvactl_events_open(struct kvactl_ev_ctx *c, const struct kvactl_opts *o)
{
	int fd = ev_open(c, o);

	if (fd >= 0)
		ev_signals();
	return fd;
}

bool kvactl_events_stopped(void)
{
	return ev_stop;
}

void kvactl_events_stop(void)
{
	ev_stop = 1;
}
