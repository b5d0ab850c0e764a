// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl remote NAME [--config FILE] [-n COUNT] - the remote tier's
 * agent: a node's side of a prefix store that every node reaches, on a
 * Redis cluster (or one redis-server).  Documentation/remote.rst.
 *
 * The agent works on NAME's host memory: NAME itself if it is a host
 * arena, else its lower tier (a host arena below a CUDA arena).  It holds
 * one client of that arena in each cache domain the configuration gives a
 * secret for (ATTACH with KVARENA_ATTACH_DOMAIN, which the arena's owner
 * or an administrator may do), and
 *
 *  - stores: every frame published there in such a domain (the arena's
 *    STORED events, which the owner reads for every domain) is looked up
 *    by its key in that domain, mapped read-only and written to the
 *    cluster as one value (tools/common/kvblock.c: the store key from the
 *    domain's secret, a MAC'd header, a CRC32C of the payload), with the
 *    domain's TTL; the domain's index (a sorted set of its keys by last
 *    use) keeps it within its budget, oldest out first;
 *  - fetches: an engine whose LOOKUP missed asks, on the agent's socket
 *    (include/kvarena/remote.h), for the keys after the run it found;
 *    the agent reads them from the cluster, keeps the leading run of
 *    values that pass every check (a value that fails one is a miss,
 *    counted by its reason and said on standard error, never KV), and
 *    publishes them in that arena in the caller's domain - the caller's
 *    next LOOKUP finds them, or its LOOKUP_LOWER and PROMOTE bring them
 *    up, the existing path.  Who asks is checked: the client id must be
 *    one the asking process (SO_PEERCRED) attached, and its domain is the
 *    one served.
 *
 *  - tells (--zmq): the blocks it stored and the ones its budget evicted
 *    are published as vLLM's KV events are (zmq.c, the medium REMOTE),
 *    for a router to know what the cluster holds.
 *
 * A cluster that does not answer costs a fetch its timeout and a miss; a
 * store that fails is tried once more, then counted and dropped (the
 * block stays in the arena).
 * Runs until SIGINT or SIGTERM, or -n COUNT blocks stored and fetched,
 * then prints what it did on one line.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <kvarena/layout.h>
#include <kvarena/remote.h>

#include "events.h"
#include "kvarenactl.h"

#ifndef KVACTL_REMOTE

int kvactl_cmd_remote(const struct kvactl_opts *o)
{
	kvactl_err("remote: this kvarenactl was built without hiredis (Debian's libhiredis-dev), which the remote tier needs%s",
#ifdef KVACTL_STATIC
		   " - the static build never has it; use the installed kvarenactl"
#else
		   ""
#endif
		   );
	return KVACTL_FAIL;
}

#else

#include "kvblock.h"
#include "rcluster.h"

#define REMOTE_MAX_DOMAINS	64
#define STORE_QUEUE		4096u	/* STORED events waiting to be stored */
#define STORE_BATCH		16u	/* values one SET batch carries */
#define RETRY_QUEUE		1024u	/* failed stores waiting for their retry */
#define RETRY_MS		1500u	/* ...this long: past a down master's second */
#define MAX_CONNS		32
#define EV_BUF			(256u << 10)

struct rdomain {
	uint64_t domain;
	struct kvb_secret secret;
	uint64_t ttl_ms;		/* 0: none */
	uint64_t budget;		/* bytes in the cluster; 0: none */
	int fd;				/* the agent's client in it */
	uint32_t client_id;
	char name[32];			/* uid:1001 */
	char index_key[48];		/* kva1:idx:{<domain id>} */
	uint64_t stored, fetched, requests;
	uint64_t miss[KVB_MISS_COUNT];
	time_t said[KVB_MISS_COUNT];
};

struct rconf {
	char seeds[1024];
	char password[256];
	bool has_password;
	unsigned int timeout_ms;
	char socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char node[KVB_WRITER_LEN];
	uint32_t layers, kv_heads, head_dim, dtype;
	bool has_geometry;
	struct rdomain dom[REMOTE_MAX_DOMAINS];
	unsigned int nr_dom;
};

struct store_job {
	uint64_t domain;
	uint64_t at;			/* a retry: not before (monotonic ms) */
	struct kvarena_event *ev;	/* --zmq: its STORED record, to tell */
	uint8_t key[KVARENA_KEY_LEN];
	uint8_t parent[KVARENA_KEY_LEN];
	bool has_parent;
	bool retry;			/* its second try */
};

struct ragent {
	const char *name;		/* the arena engines attach to */
	char local[KVARENA_NAME_LEN + 1]; /* its host memory: NAME or its lower */
	struct rconf *conf;
	struct kvb_geometry geo;
	struct rcluster *rc;
	int ctl, evfd, lsock;
	struct store_job *queue;
	unsigned int q_head, q_len;
	struct store_job *retry;	/* failed once, in order of .at */
	unsigned int r_head, r_len;
	uint64_t dropped, store_failed, store_retried, lost_events, unshared;
	time_t store_said;
	uint64_t done, limit;		/* blocks stored + fetched; -n */
	uint64_t last_score;		/* the index's latest: scores only grow */
	uint8_t *vals;			/* STORE_BATCH values */
	struct kvactl_zpub *zpub;	/* --zmq: the stream, or NULL */
	struct kvactl_ev_ctx evc;	/* how its events are told */
	uint64_t told, tell_failed;	/* events published; batches not */
};

/* ---- telling (--zmq) ------------------------------------------------------ */

/* Publish @n records as one batch of the stream. */
static void tell(struct ragent *ag, const struct kvarena_event **ev, size_t n)
{
	if (!ag->zpub || !n)
		return;
	if (kvactl_zpub_send(ag->zpub, &ag->evc, ev, n))
		ag->tell_failed++;
	else
		ag->told += n;
}

static void job_free(struct store_job *j)
{
	free(j->ev);
	j->ev = NULL;
}

static volatile sig_atomic_t stopped;

static void on_stop(int sig)
{
	(void)sig;
	stopped = 1;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the configuration --------------------------------------------------- */

static int conf_err(const char *file, unsigned int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int conf_err(const char *file, unsigned int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	kvactl_err("remote: %s:%u: %s", file, line, msg);
	return -EINVAL;
}

/*
 * A duration: seconds as kvarenactl takes them (1.5), or a number with a
 * unit: 300ms, 30s, 10m, 12h, 7d.  In ms.
 */
static int parse_duration(const char *s, uint64_t *ms)
{
	static const struct { const char *unit; uint64_t ms; } units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
		{ "d", 86400000 },
	};
	size_t n = strspn(s, "0123456789");
	char num[24];
	uint64_t v;

	for (size_t i = 0; n && n < sizeof(num) && i < 5; i++) {
		if (strcmp(s + n, units[i].unit))
			continue;
		memcpy(num, s, n);
		num[n] = '\0';
		if (kvactl_parse_u64(num, &v) || v > UINT64_MAX / units[i].ms)
			return -ERANGE;
		*ms = v * units[i].ms;
		return 0;
	}
	return kvactl_parse_seconds(s, ms);
}

/* "uid:1001", "gid:100", "named:7", "arena": the module's domain. */
static int parse_domain(const char *s, uint64_t *d)
{
	static const struct { const char *word; uint32_t kind; } kinds[] = {
		{ "uid", KVARENA_DOMAIN_KIND_UID },
		{ "gid", KVARENA_DOMAIN_KIND_GID },
		{ "named", KVARENA_DOMAIN_KIND_NAMED },
	};
	uint64_t nr;

	if (!strcmp(s, "arena")) {
		*d = KVARENA_DOMAIN(KVARENA_DOMAIN_KIND_ARENA, 0);
		return 0;
	}
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t n = strlen(kinds[i].word);

		if (strncmp(s, kinds[i].word, n) || s[n] != ':')
			continue;
		if (kvactl_parse_u64(s + n + 1, &nr) || nr > KVARENA_DOMAIN_NR_MASK)
			return -EINVAL;
		*d = KVARENA_DOMAIN(kinds[i].kind, nr);
		return 0;
	}
	return -EINVAL;
}

/*
 * A secret file: its bytes, KVB_SECRET_MIN..MAX of them (a trailing
 * newline is not part of it), readable by its owner alone.
 */
static int read_secret(const char *file, unsigned int line, const char *path,
		       struct kvb_secret *s)
{
	uint8_t buf[KVB_SECRET_MAX + 2];
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return conf_err(file, line, "secret %s: %s", path, strerror(errno));
	if (fstat(fd, &st) || (st.st_mode & 077)) {
		close(fd);
		return conf_err(file, line, "secret %s: readable by others than its owner (chmod 600 it)",
				path);
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n < (ssize_t)KVB_SECRET_MIN || n > (ssize_t)KVB_SECRET_MAX)
		return conf_err(file, line, "secret %s: %zd bytes; it must hold %u to %u",
				path, n < 0 ? (ssize_t)0 : n, KVB_SECRET_MIN,
				KVB_SECRET_MAX);
	return kvb_secret_init(s, buf, (size_t)n);
}

static int parse_dtype_word(const char *s, uint32_t *dt)
{
	static const char *const names[] = { "fp32", "fp16", "bf16", "fp8" };

	for (uint32_t i = 0; i < 4; i++)
		if (!strcmp(s, names[i])) {
			*dt = i;
			return 0;
		}
	return -EINVAL;
}

/* KEY=VALUE words after a line's first two. */
static int conf_domain(const char *file, unsigned int line, struct rconf *c,
		       char **w, int nw)
{
	struct rdomain *d = &c->dom[c->nr_dom];
	bool secret = false;

	if (c->nr_dom == REMOTE_MAX_DOMAINS)
		return conf_err(file, line, "more than %d domains", REMOTE_MAX_DOMAINS);
	memset(d, 0, sizeof(*d));
	d->fd = -1;
	d->ttl_ms = 24ull * 3600 * 1000;
	if (nw < 2 || parse_domain(w[1], &d->domain))
		return conf_err(file, line, "domain needs uid:N, gid:N, named:N or arena: got \"%s\"",
				nw < 2 ? "" : w[1]);
	snprintf(d->name, sizeof(d->name), "%s", w[1]);
	for (unsigned int i = 0; i < c->nr_dom; i++)
		if (c->dom[i].domain == d->domain)
			return conf_err(file, line, "domain %s twice", w[1]);
	for (int i = 2; i < nw; i++) {
		char *eq = strchr(w[i], '=');

		if (!eq)
			return conf_err(file, line, "\"%s\" is not KEY=VALUE", w[i]);
		*eq++ = '\0';
		if (!strcmp(w[i], "secret")) {
			if (read_secret(file, line, eq, &d->secret))
				return -EINVAL;
			secret = true;
		} else if (!strcmp(w[i], "ttl")) {
			if (parse_duration(eq, &d->ttl_ms))
				return conf_err(file, line, "ttl must be a duration (90s, 12h, 7d; 0: none): got \"%s\"", eq);
		} else if (!strcmp(w[i], "budget")) {
			if (kvactl_parse_size(eq, &d->budget))
				return conf_err(file, line, "budget must be a size (64Gi; 0: none): got \"%s\"", eq);
		} else {
			return conf_err(file, line, "unknown domain setting \"%s\" (secret, ttl, budget)", w[i]);
		}
	}
	if (!secret)
		return conf_err(file, line, "domain %s has no secret=FILE", d->name);
	c->nr_dom++;
	return 0;
}

static int conf_line(const char *file, unsigned int line, struct rconf *c,
		     char **w, int nw)
{
	const char *k = w[0];
	uint64_t ms;

	if (!strcmp(k, "domain"))
		return conf_domain(file, line, c, w, nw);
	if (nw != 2 && strcmp(k, "geometry"))
		return conf_err(file, line, "%s takes one value", k);
	if (!strcmp(k, "redis")) {
		snprintf(c->seeds, sizeof(c->seeds), "%s", w[1]);
	} else if (!strcmp(k, "password-file")) {
		FILE *f = fopen(w[1], "re");
		size_t n;

		if (!f)
			return conf_err(file, line, "password-file %s: %s", w[1], strerror(errno));
		n = fread(c->password, 1, sizeof(c->password) - 1, f);
		fclose(f);
		c->password[n] = '\0';
		c->password[strcspn(c->password, "\r\n")] = '\0';
		c->has_password = true;
	} else if (!strcmp(k, "timeout")) {
		if (parse_duration(w[1], &ms) || ms < 1 || ms > 600000)
			return conf_err(file, line, "timeout must be 1ms to 600s (200ms, 0.2): got \"%s\"", w[1]);
		c->timeout_ms = (unsigned int)ms;
	} else if (!strcmp(k, "socket")) {
		if (strlen(w[1]) >= sizeof(c->socket) || w[1][0] != '/')
			return conf_err(file, line, "socket must be an absolute path of at most %zu bytes",
					sizeof(c->socket) - 1);
		snprintf(c->socket, sizeof(c->socket), "%s", w[1]);
	} else if (!strcmp(k, "node")) {
		if (strlen(w[1]) >= KVB_WRITER_LEN)
			return conf_err(file, line, "node: at most %u bytes", KVB_WRITER_LEN - 1);
		snprintf(c->node, sizeof(c->node), "%s", w[1]);
	} else if (!strcmp(k, "geometry")) {
		for (int i = 1; i < nw; i++) {
			char *eq = strchr(w[i], '=');
			uint32_t *f = NULL;

			if (!eq)
				return conf_err(file, line, "\"%s\" is not KEY=VALUE", w[i]);
			*eq++ = '\0';
			if (!strcmp(w[i], "dtype")) {
				if (parse_dtype_word(eq, &c->dtype))
					return conf_err(file, line, "dtype must be fp32, fp16, bf16 or fp8: got \"%s\"", eq);
				continue;
			}
			if (!strcmp(w[i], "layers"))
				f = &c->layers;
			else if (!strcmp(w[i], "kv-heads"))
				f = &c->kv_heads;
			else if (!strcmp(w[i], "head-dim"))
				f = &c->head_dim;
			if (!f)
				return conf_err(file, line, "unknown geometry setting \"%s\" (layers, kv-heads, head-dim, dtype)", w[i]);
			if (kvactl_parse_u32(eq, f) || !*f || *f > 65536)
				return conf_err(file, line, "%s must be 1 to 65536: got \"%s\"", w[i], eq);
		}
		if (!c->layers || !c->kv_heads || !c->head_dim)
			return conf_err(file, line, "geometry needs layers=, kv-heads=, head-dim= and dtype=");
		c->has_geometry = true;
	} else {
		return conf_err(file, line, "unknown setting \"%s\" (redis, password-file, timeout, socket, node, geometry, domain)", k);
	}
	return 0;
}

static int conf_read(const char *file, struct rconf *c)
{
	char buf[2048], *w[16];
	unsigned int line = 0;
	FILE *f;
	int ret = 0;

	memset(c, 0, sizeof(*c));
	c->timeout_ms = 200;
	c->dtype = KVA_DTYPE_FP16;
	f = fopen(file, "re");
	if (!f) {
		kvactl_err("remote: %s: %s", file, strerror(errno));
		return -errno;
	}
	while (!ret && fgets(buf, sizeof(buf), f)) {
		int nw = 0;
		char *p = buf, *save;

		line++;
		p[strcspn(p, "#\r\n")] = '\0';
		for (char *t = strtok_r(p, " \t", &save); t && nw < 16;
		     t = strtok_r(NULL, " \t", &save))
			w[nw++] = t;
		if (nw)
			ret = conf_line(file, line, c, w, nw);
	}
	fclose(f);
	if (ret)
		return ret;
	if (!c->seeds[0])
		return conf_err(file, line, "no redis HOST:PORT[,HOST:PORT...] line");
	if (!c->has_geometry)
		return conf_err(file, line, "no geometry line (layers= kv-heads= head-dim= dtype=, the model's)");
	if (!c->nr_dom)
		return conf_err(file, line, "no domain line: the agent would share nothing");
	if (!c->node[0] && gethostname(c->node, sizeof(c->node) - 1))
		snprintf(c->node, sizeof(c->node), "?");
	return 0;
}

/* ---- the arena ----------------------------------------------------------- */

static struct rdomain *dom_of(struct ragent *ag, uint64_t domain)
{
	for (unsigned int i = 0; i < ag->conf->nr_dom; i++)
		if (ag->conf->dom[i].domain == domain)
			return &ag->conf->dom[i];
	return NULL;
}

static bool own_client(struct ragent *ag, uint32_t client_id)
{
	for (unsigned int i = 0; i < ag->conf->nr_dom; i++)
		if (ag->conf->dom[i].client_id == client_id)
			return true;
	return false;
}

static int attach_domain(struct ragent *ag, struct rdomain *d)
{
	struct kvarena_attach at = { 0 };
	static const uint8_t hex[] = "0123456789abcdef";
	char id[17];
	int err;

	d->fd = kvactl_open(true, "remote");
	if (d->fd < 0)
		return -EIO;
	kvactl_name_copy(at.name, ag->local);
	snprintf(at.label, sizeof(at.label), "remote");
	at.flags = KVARENA_ATTACH_DOMAIN;
	at.domain = d->domain;
	at.max_frames = 2 * KVA_REMOTE_MAX_KEYS;
	err = kvactl_ioctl(d->fd, KVARENA_IOC_ATTACH, &at);
	if (err == -ENOSPC || err == -EINVAL) {
		at.max_frames = 0;
		err = kvactl_ioctl(d->fd, KVARENA_IOC_ATTACH, &at);
	}
	if (err) {
		kvactl_err("remote: cannot join domain %s of \"%s\": %s%s", d->name,
			   ag->local, strerror(-err),
			   err == -EPERM ? " (the arena's owner or root may)" : "");
		return err;
	}
	d->client_id = at.client_id;
	for (int i = 0; i < 8; i++) {
		id[2 * i] = (char)hex[d->secret.id[i] >> 4];
		id[2 * i + 1] = (char)hex[d->secret.id[i] & 15];
	}
	id[16] = '\0';
	snprintf(d->index_key, sizeof(d->index_key), "kva1:idx:{%s}", id);
	return 0;
}

/* Frame @h of client file @fd mapped; NULL on failure (errno set). */
static void *map_frame(int fd, uint64_t h, uint64_t size, int prot)
{
	struct kvarena_frame_fd ff = { .handle = h };
	void *p;
	int err;

	err = kvactl_ioctl(fd, KVARENA_IOC_FRAME_FD, &ff);
	if (err) {
		errno = -err;
		return NULL;
	}
	if (ff.size != size) {
		close(ff.fd);
		errno = EPROTO;
		return NULL;
	}
	p = mmap(NULL, size, prot, MAP_SHARED, ff.fd, (off_t)ff.offset);
	close(ff.fd);
	return p == MAP_FAILED ? NULL : p;
}

static void free_handles(int fd, __u64 *h, uint32_t n)
{
	struct kvarena_frames f = { .handles = (uint64_t)(uintptr_t)h,
				    .count = n };

	if (n)
		kvactl_ioctl(fd, KVARENA_IOC_FREE, &f);
}

/* ---- storing ------------------------------------------------------------- */

static void miss_said(struct ragent *ag, struct rdomain *d, enum kvb_miss m,
		      const char *key, const struct kvb_header *h)
{
	time_t now = time(NULL);
	char who[KVB_WRITER_LEN] = "";

	d->miss[m]++;
	if (m == KVB_MISS_ABSENT || m == KVB_MISS_ERROR || d->said[m] == now)
		return;
	d->said[m] = now;
	/* The writer's name only from a header whose MAC held, printable. */
	if (h && m > KVB_MISS_MAC)
		for (size_t i = 0; i + 1 < sizeof(who) && h->writer[i]; i++)
			who[i] = h->writer[i] >= 0x20 && h->writer[i] < 0x7f ?
				 h->writer[i] : '?';
	kvactl_err("remote: %s: domain %s: the value under %.21s... failed its %s check%s%s: a miss, not used",
		   ag->name, d->name, key, kvb_miss_name(m),
		   who[0] ? "; written by " : "", who);
}

/*
 * One block of the queue read into @val (a header and the frame): false
 * if it is gone from the arena meanwhile (reclaimed: nothing to store).
 */
static bool store_read(struct ragent *ag, struct rdomain *d,
		       const struct store_job *j, uint8_t *val)
{
	struct kvarena_prefix_entry e = { 0 };
	struct kvarena_prefix p = { .entries = (uint64_t)(uintptr_t)&e,
				    .count = 1 };
	void *src;

	memcpy(e.key, j->key, KVARENA_KEY_LEN);
	if (kvactl_ioctl(d->fd, KVARENA_IOC_LOOKUP, &p) || p.nr_done != 1)
		return false;
	src = map_frame(d->fd, e.handle, ag->geo.frame_size, PROT_READ);
	if (src) {
		memcpy(val + KVB_HEADER_SIZE, src, ag->geo.frame_size);
		munmap(src, ag->geo.frame_size);
	}
	if (!(e.flags & KVARENA_PREFIX_HELD))
		free_handles(d->fd, &e.handle, 1);
	if (!src)
		return false;
	kvb_encode(val, &d->secret, &ag->geo, j->key,
		   j->has_parent ? j->parent : NULL, ag->conf->node, wall_ms(),
		   val + KVB_HEADER_SIZE);
	return true;
}

/*
 * The @n keys a ZPOPMIN reply @r took out of domain @d's index, about to
 * be unlinked: told as removed.  Their chain keys are in their values'
 * headers (GETRANGE, one batch), MAC-checked with the domain's secret and
 * against the store key; a value gone already (its TTL) or not the
 * domain's is not told.
 */
static void tell_evicted(struct ragent *ag, struct rdomain *d,
			 const redisReply *r, size_t n)
{
	struct rc_cmd *cmds = calloc(n, sizeof(*cmds));
	const char **argv = calloc(4 * n, sizeof(*argv));
	struct kvarena_event *evs = calloc(n, sizeof(*evs));
	const struct kvarena_event **ev = calloc(n, sizeof(*ev));
	char end[16];
	size_t k = 0;

	snprintf(end, sizeof(end), "%d", KVB_HEADER_SIZE - 1);
	for (size_t i = 0; cmds && argv && evs && ev && i < n; i++) {
		argv[4 * i] = "GETRANGE";
		argv[4 * i + 1] = r->element[2 * i]->str;
		argv[4 * i + 2] = "0";
		argv[4 * i + 3] = end;
		cmds[i] = (struct rc_cmd){ .argc = 4, .argv = argv + 4 * i,
					   .key_arg = 1 };
	}
	if (cmds && argv && evs && ev) {
		rc_exec(ag->rc, cmds, (unsigned int)n);
		for (size_t i = 0; i < n; i++) {
			const redisReply *v = cmds[i].reply;
			struct kvb_header h;
			char key[KVB_KEY_LEN];

			if (v && v->type == REDIS_REPLY_STRING &&
			    kvb_header_read((const uint8_t *)v->str, v->len,
					    &d->secret, &h) == KVB_OK) {
				kvb_key(&d->secret, &ag->geo, h.chain, key);
				if (!strcmp(key, r->element[2 * i]->str)) {
					evs[k].type = KVARENA_EVENT_REMOVED;
					evs[k].size = sizeof(evs[k]);
					evs[k].time_ns = wall_ms() * 1000000;
					evs[k].domain = d->domain;
					memcpy(evs[k].key, h.chain,
					       KVARENA_KEY_LEN);
					ev[k] = &evs[k];
					k++;
				}
			}
			freeReplyObject(cmds[i].reply);
		}
		tell(ag, ev, k);
	}
	free(cmds);
	free(argv);
	free(evs);
	free(ev);
}

/*
 * Keep domain @d within its budget: its index holds its keys by last
 * use; the oldest beyond the budget go, from the index and the cluster.
 */
static void budget_trim(struct ragent *ag, struct rdomain *d)
{
	uint64_t vsize = KVB_HEADER_SIZE + ag->geo.frame_size;
	uint64_t keep = d->budget / vsize;
	char count[24];
	struct rc_cmd cmd;
	const char *argv[3];
	redisReply *r;
	long long over;

	if (!d->budget)
		return;
	argv[0] = "ZCARD";
	argv[1] = d->index_key;
	cmd = (struct rc_cmd){ .argc = 2, .argv = argv, .key_arg = 1 };
	rc_exec(ag->rc, &cmd, 1);
	r = cmd.reply;
	over = r && r->type == REDIS_REPLY_INTEGER ? r->integer - (long long)keep : 0;
	freeReplyObject(r);
	if (over <= 0)
		return;
	snprintf(count, sizeof(count), "%lld", over);
	argv[0] = "ZPOPMIN";
	argv[2] = count;
	cmd = (struct rc_cmd){ .argc = 3, .argv = argv, .key_arg = 1 };
	rc_exec(ag->rc, &cmd, 1);
	r = cmd.reply;
	if (r && r->type == REDIS_REPLY_ARRAY) {
		size_t n = r->elements / 2;
		struct rc_cmd *dels = calloc(n ? n : 1, sizeof(*dels));
		const char **dargv = calloc(2 * (n ? n : 1), sizeof(*dargv));

		if (ag->zpub && dels && dargv)
			tell_evicted(ag, d, r, n);
		for (size_t i = 0; dels && dargv && i < n; i++) {
			dargv[2 * i] = "UNLINK";
			dargv[2 * i + 1] = r->element[2 * i]->str;
			dels[i] = (struct rc_cmd){ .argc = 2,
						   .argv = dargv + 2 * i,
						   .key_arg = 1 };
		}
		if (dels && dargv) {
			rc_exec(ag->rc, dels, (unsigned int)n);
			for (size_t i = 0; i < n; i++)
				freeReplyObject(dels[i].reply);
		}
		free(dels);
		free(dargv);
	}
	freeReplyObject(r);
}

/*
 * Index @n keys of domain @d as used now (one ZADD), in their order: a
 * key's score is the time in microseconds, or one more than the last
 * score if that is later (a batch within one ms keeps its order).
 */
static void index_touch(struct ragent *ag, struct rdomain *d,
			char (*keys)[KVB_KEY_LEN], unsigned int n)
{
	char (*score)[24];
	const char **argv;
	struct rc_cmd cmd;
	uint64_t now = wall_ms();

	if (!d->budget || !n)
		return;
	argv = calloc(2 + 2 * (size_t)n, sizeof(*argv));
	score = calloc(n, sizeof(*score));
	if (!argv || !score) {
		free(argv);
		free(score);
		return;
	}
	argv[0] = "ZADD";
	argv[1] = d->index_key;
	for (unsigned int i = 0; i < n; i++) {
		ag->last_score = now * 1000 > ag->last_score ? now * 1000 :
				 ag->last_score + 1;
		snprintf(score[i], sizeof(score[i]), "%llu",
			 (unsigned long long)ag->last_score);
		argv[2 + 2 * i] = score[i];
		argv[3 + 2 * i] = keys[i];
	}
	cmd = (struct rc_cmd){ .argc = 2 + 2 * (int)n, .argv = argv,
			       .key_arg = 1 };
	rc_exec(ag->rc, &cmd, 1);
	freeReplyObject(cmd.reply);
	free(argv);
	free(score);
}

/*
 * A store of domain @d that failed (@why): the job goes round once more,
 * RETRY_MS later - past the second a failed master is left alone, and the
 * slot map is taken again meanwhile (a failover, a slow moment) -, or is
 * dropped if it had its retry.  Said on standard error once a second.
 */
static void store_retry(struct ragent *ag, const struct rdomain *d,
			 struct store_job *j, const char *why)
{
	time_t now = time(NULL);
	bool again = !j->retry && ag->r_len < RETRY_QUEUE;

	if (again) {
		struct store_job *r;

		r = &ag->retry[(ag->r_head + ag->r_len++) % RETRY_QUEUE];
		*r = *j;
		r->retry = true;
		r->at = mono_ms() + RETRY_MS;
		ag->store_retried++;
	} else {
		ag->store_failed++;
		free(j->ev);
	}
	if (ag->store_said == now)
		return;
	ag->store_said = now;
	kvactl_err("remote: %s: domain %s: storing a block failed (%s): %s",
		   ag->name, d->name, why,
		   again ? "tried again in a moment" :
		   "dropped; the block stays in the arena");
}

/* The next job to store, from the retries whose time came, then the queue. */
static bool store_next(struct ragent *ag, uint64_t now, struct store_job *j)
{
	if (ag->r_len && ag->retry[ag->r_head].at <= now) {
		*j = ag->retry[ag->r_head];
		ag->r_head = (ag->r_head + 1) % RETRY_QUEUE;
		ag->r_len--;
		return true;
	}
	if (!ag->q_len)
		return false;
	*j = ag->queue[ag->q_head];
	ag->q_head = (ag->q_head + 1) % STORE_QUEUE;
	ag->q_len--;
	return true;
}

/* Store up to STORE_BATCH queued blocks. */
static void store_some(struct ragent *ag)
{
	uint64_t vsize = KVB_HEADER_SIZE + ag->geo.frame_size;
	uint64_t now = mono_ms();
	struct rc_cmd cmds[STORE_BATCH];
	const char *argv[STORE_BATCH][5];
	size_t argvlen[STORE_BATCH][5];
	char keys[STORE_BATCH][KVB_KEY_LEN], ttl[STORE_BATCH][24];
	struct store_job jobs[STORE_BATCH];
	struct rdomain *doms[STORE_BATCH];
	const struct kvarena_event *told[STORE_BATCH];
	unsigned int n = 0, nt = 0;

	while (n < STORE_BATCH && store_next(ag, now, &jobs[n])) {
		struct store_job *j = &jobs[n];
		struct rdomain *d = dom_of(ag, j->domain);
		uint8_t *val = ag->vals + n * vsize;

		if (!d || !store_read(ag, d, j, val)) {
			job_free(j);
			continue;
		}
		kvb_key(&d->secret, &ag->geo, j->key, keys[n]);
		argv[n][0] = "SET";
		argv[n][1] = keys[n];
		argv[n][2] = (const char *)val;
		argvlen[n][0] = 3;
		argvlen[n][1] = strlen(keys[n]);
		argvlen[n][2] = vsize;
		cmds[n] = (struct rc_cmd){ .argc = 3, .argv = argv[n],
					   .argvlen = argvlen[n], .key_arg = 1 };
		if (d->ttl_ms) {
			snprintf(ttl[n], sizeof(ttl[n]), "%llu",
				 (unsigned long long)d->ttl_ms);
			argv[n][3] = "PX";
			argv[n][4] = ttl[n];
			argvlen[n][3] = 2;
			argvlen[n][4] = strlen(ttl[n]);
			cmds[n].argc = 5;
		}
		doms[n++] = d;
	}
	if (!n)
		return;
	rc_exec(ag->rc, cmds, n);
	for (unsigned int i = 0; i < n; i++) {
		redisReply *r = cmds[i].reply;

		if (r && r->type == REDIS_REPLY_STATUS) {
			doms[i]->stored++;
			ag->done++;
			index_touch(ag, doms[i], &keys[i], 1);
			if (jobs[i].ev)
				told[nt++] = jobs[i].ev;
		} else {
			store_retry(ag, doms[i], &jobs[i],
				    r && r->type == REDIS_REPLY_ERROR ? r->str :
				    rc_error(ag->rc));
		}
		freeReplyObject(r);
	}
	/* Stored, so told: one batch, in the order of the arena's events. */
	tell(ag, told, nt);
	for (unsigned int i = 0; i < nt; i++)
		free((void *)told[i]);
	for (unsigned int i = 0; i < ag->conf->nr_dom; i++)
		budget_trim(ag, &ag->conf->dom[i]);
}

/* How long the main loop may sleep: the queue's or a retry's time. */
static int store_wait_ms(const struct ragent *ag)
{
	uint64_t now, at;

	if (ag->q_len)
		return 0;
	if (!ag->r_len)
		return 1000;
	now = mono_ms();
	at = ag->retry[ag->r_head].at;
	return at <= now ? 0 : at - now > 1000 ? 1000 : (int)(at - now);
}

static void queue_event(struct ragent *ag, const struct kvarena_event *ev)
{
	struct store_job *j;

	if (ev->type == KVARENA_EVENT_LOST) {
		ag->lost_events += ev->lost;
		return;
	}
	if (ev->type != KVARENA_EVENT_STORED || own_client(ag, ev->client_id))
		return;
	if (!dom_of(ag, ev->domain)) {
		ag->unshared++;
		return;
	}
	if (ag->q_len == STORE_QUEUE) {	/* the oldest waiting goes */
		job_free(&ag->queue[ag->q_head]);
		ag->q_head = (ag->q_head + 1) % STORE_QUEUE;
		ag->q_len--;
		ag->dropped++;
	}
	j = &ag->queue[(ag->q_head + ag->q_len++) % STORE_QUEUE];
	memset(j, 0, sizeof(*j));
	j->domain = ev->domain;
	memcpy(j->key, ev->key, KVARENA_KEY_LEN);
	j->has_parent = ev->flags & KVARENA_EVENT_PARENT;
	if (j->has_parent)
		memcpy(j->parent, ev->parent, KVARENA_KEY_LEN);
	/* The record as read, token ids and all (a failed copy: untold). */
	if (ag->zpub) {
		j->ev = malloc(ev->size);
		if (j->ev)
			memcpy(j->ev, ev, ev->size);
	}
}

static int read_events(struct ragent *ag, uint8_t *buf)
{
	for (;;) {
		const struct kvarena_event *ev;
		ssize_t n = read(ag->evfd, buf, EV_BUF);
		size_t off = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0) {
			kvactl_err("remote: reading the events of \"%s\": %s",
				   ag->local, strerror(errno));
			return -errno;
		}
		if (!n) {
			kvactl_err("remote: \"%s\" was destroyed", ag->local);
			return -ENOENT;
		}
		while (kvactl_ev_next(buf, (size_t)n, &off, &ev))
			queue_event(ag, ev);
	}
}

/* ---- fetching ------------------------------------------------------------ */

/* The client row @id of NAME, if process @pid attached it. */
static int client_check(struct ragent *ag, uint32_t id, pid_t pid, uid_t uid,
			uint64_t *domain)
{
	struct kvarena_client_info *rows = NULL;
	struct kvarena_clients c;
	uint32_t want = 64;
	int err;

	for (;;) {
		free(rows);
		rows = calloc(want, sizeof(*rows));
		if (!rows)
			return -ENOMEM;
		memset(&c, 0, sizeof(c));
		kvactl_name_copy(c.name, ag->name);
		c.clients = (uint64_t)(uintptr_t)rows;
		c.count = want;
		err = kvactl_ioctl(ag->ctl, KVARENA_IOC_CLIENTS, &c);
		if (err || c.nr_clients <= want)
			break;
		want = c.nr_clients + 16;
	}
	for (uint32_t i = 0; !err && i < c.nr_clients; i++) {
		if (rows[i].client_id != id)
			continue;
		if (rows[i].pid != pid && uid != 0)
			err = -EPERM;
		else
			*domain = rows[i].domain;
		free(rows);
		return err;
	}
	free(rows);
	return err ? err : -ENOENT;
}

/*
 * The leading run of @keys that the cluster holds whole, published in the
 * arena in @d: how many were new there; *@found the run's length.
 */
static int fetch(struct ragent *ag, struct rdomain *d, const uint8_t *keys,
		 uint32_t nr, uint32_t *found)
{
	uint64_t fs = ag->geo.frame_size;
	struct kvarena_prefix_entry e[KVA_REMOTE_MAX_KEYS];
	__u64 h[KVA_REMOTE_MAX_KEYS];
	struct rc_cmd cmds[KVA_REMOTE_MAX_KEYS];
	const char *argv[KVA_REMOTE_MAX_KEYS][2];
	char skeys[KVA_REMOTE_MAX_KEYS][KVB_KEY_LEN];
	struct kvarena_frames fr = { 0 };
	struct kvarena_prefix p = { 0 };
	uint32_t run = 0, got, i;
	int err = 0;

	for (i = 0; i < nr; i++) {
		kvb_key(&d->secret, &ag->geo, keys + 32 * i, skeys[i]);
		argv[i][0] = "GET";
		argv[i][1] = skeys[i];
		cmds[i] = (struct rc_cmd){ .argc = 2, .argv = argv[i],
					   .key_arg = 1 };
	}
	rc_exec(ag->rc, cmds, nr);
	for (i = 0; i < nr; i++) {
		redisReply *r = cmds[i].reply;
		struct kvb_header hdr;
		enum kvb_miss m;

		if (!r)
			m = KVB_MISS_ERROR;
		else if (r->type == REDIS_REPLY_NIL)
			m = KVB_MISS_ABSENT;
		else if (r->type != REDIS_REPLY_STRING)
			m = KVB_MISS_ERROR;
		else
			m = kvb_check((const uint8_t *)r->str, r->len,
				      &d->secret, &ag->geo, keys + 32 * i, &hdr);
		if (m == KVB_OK && run == i)
			run++;
		else if (m != KVB_OK)
			miss_said(ag, d, m, skeys[i], m > KVB_MISS_MAC ? &hdr : NULL);
	}
	*found = run;
	if (!run)
		goto out;
	/* Frames for the run; as many as the arena gives. */
	fr.handles = (uint64_t)(uintptr_t)h;
	fr.count = run;
	fr.flags = KVARENA_ALLOC_PARTIAL;
	err = kvactl_ioctl(d->fd, KVARENA_IOC_ALLOC, &fr);
	if (err || !fr.nr_done) {
		err = err ? err : -ENOSPC;
		goto out;
	}
	got = fr.nr_done;
	memset(e, 0, sizeof(e));
	for (i = 0; i < got; i++) {
		void *dst = map_frame(d->fd, h[i], fs, PROT_READ | PROT_WRITE);

		if (!dst)
			break;
		memcpy(dst, cmds[i].reply->str + KVB_HEADER_SIZE, fs);
		munmap(dst, fs);
		memcpy(e[i].key, keys + 32 * i, KVARENA_KEY_LEN);
		e[i].handle = h[i];
	}
	if (i) {
		p.entries = (uint64_t)(uintptr_t)e;
		p.count = i;
		err = kvactl_ioctl(d->fd, KVARENA_IOC_PUBLISH, &p);
	}
	free_handles(d->fd, h, got);
	if (!err && p.nr_done) {
		d->fetched += p.nr_done;
		ag->done += p.nr_done;
		index_touch(ag, d, skeys, i);
	}
out:
	for (i = 0; i < nr; i++)
		freeReplyObject(cmds[i].reply);
	return err ? err : (int)p.nr_done;
}

static void serve(struct ragent *ag, int conn)
{
	uint8_t buf[sizeof(struct kva_remote_req) + 32 * KVA_REMOTE_MAX_KEYS];
	struct kva_remote_rep rep = { .magic = KVA_REMOTE_MAGIC,
				      .version = KVA_REMOTE_VERSION };
	struct kva_remote_req req;
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct rdomain *d;
	uint64_t domain;
	ssize_t n;
	int ret;

	n = recv(conn, buf, sizeof(buf), MSG_DONTWAIT);
	if (n <= 0)
		return;
	memcpy(&req, buf, n < (ssize_t)sizeof(req) ? (size_t)n : sizeof(req));
	if (n < (ssize_t)sizeof(req) || req.magic != KVA_REMOTE_MAGIC ||
	    req.version != KVA_REMOTE_VERSION || req.flags ||
	    !req.nr || req.nr > KVA_REMOTE_MAX_KEYS ||
	    (size_t)n != sizeof(req) + 32 * (size_t)req.nr) {
		rep.status = -EINVAL;
		goto reply;
	}
	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &cl)) {
		rep.status = -EPERM;
		goto reply;
	}
	rep.status = client_check(ag, req.client_id, cred.pid, cred.uid, &domain);
	if (rep.status)
		goto reply;
	d = dom_of(ag, domain);
	if (!d) {
		rep.status = -ENOKEY;
		goto reply;
	}
	d->requests++;
	ret = fetch(ag, d, buf + sizeof(req), req.nr, &rep.nr_found);
	if (ret < 0)
		rep.status = ret;
	else
		rep.nr_fetched = (uint32_t)ret;
reply:
	(void)!send(conn, &rep, sizeof(rep), MSG_NOSIGNAL | MSG_DONTWAIT);
}

static int listen_on(struct ragent *ag)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)], *slash;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ag->conf->socket);
	snprintf(dir, sizeof(dir), "%s", ag->conf->socket);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		for (char *p = dir + 1; *p; p++)
			if (*p == '/') {
				*p = '\0';
				mkdir(dir, 0755);
				*p = '/';
			}
		mkdir(dir, 0755);
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(sa.sun_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(sa.sun_path, 0666) || listen(fd, 64)) {
		int err = -errno;

		kvactl_err("remote: socket %s: %s", sa.sun_path, strerror(-err));
		close(fd);
		return err;
	}
	return fd;
}

/* ---- the command --------------------------------------------------------- */

static int setup(struct ragent *ag)
{
	struct kvarena_events_fd ef = { 0 };
	struct kvarena_stat s = { 0 };
	struct rconf *c = ag->conf;
	uint64_t bpt;
	char err[256];
	int ret;

	ag->ctl = kvactl_open(true, "remote");
	if (ag->ctl < 0)
		return -EIO;
	kvactl_name_copy(s.name, ag->name);
	ret = kvactl_ioctl(ag->ctl, KVARENA_IOC_STAT, &s);
	if (ret) {
		kvactl_err(ret == -ENOENT ? "remote: no arena named \"%s\"" :
			   "remote: \"%s\": cannot read it", ag->name);
		return ret;
	}
	if (s.mem_kind == KVARENA_MEM_HOST) {
		snprintf(ag->local, sizeof(ag->local), "%s", ag->name);
	} else if (s.tier == KVARENA_STAT_TIER_LOWER) {
		memcpy(ag->local, s.tier_name, KVARENA_NAME_LEN);
		ag->local[KVARENA_NAME_LEN] = '\0';
		kvactl_name_copy(s.name, ag->local);
		ret = kvactl_ioctl(ag->ctl, KVARENA_IOC_STAT, &s);
		if (ret || s.mem_kind != KVARENA_MEM_HOST) {
			kvactl_err("remote: \"%s\"'s lower tier \"%s\" is not a host arena: the remote tier works on host memory",
				   ag->name, ag->local);
			return -EINVAL;
		}
	} else {
		kvactl_err("remote: \"%s\" is a %s arena without a lower tier: the remote tier works on host memory (kvarenactl tier %s --lower HOSTARENA first)",
			   ag->name, kvactl_mem_kind(s.mem_kind), ag->name);
		return -EINVAL;
	}
	bpt = 2ull * c->layers * c->kv_heads * c->head_dim *
	      kva_dtype_size(c->dtype);
	ag->geo = (struct kvb_geometry){ .frame_size = s.frame_size,
					 .layers = c->layers,
					 .kv_heads = c->kv_heads,
					 .head_dim = c->head_dim,
					 .dtype = c->dtype,
					 .tokens = (uint32_t)(s.frame_size / bpt) };
	if (!ag->geo.tokens) {
		kvactl_err("remote: one token of this geometry (%llu bytes) does not fit in a frame of \"%s\"",
			   (unsigned long long)bpt, ag->local);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < c->nr_dom; i++) {
		ret = attach_domain(ag, &c->dom[i]);
		if (ret)
			return ret;
	}
	kvactl_name_copy(ef.name, ag->local);
	ret = kvactl_ioctl(ag->ctl, KVARENA_IOC_EVENTS_FD, &ef);
	if (ret) {
		kvactl_err("remote: the events of \"%s\": %s", ag->local,
			   strerror(-ret));
		return ret;
	}
	ag->evfd = ef.fd;
	fcntl(ag->evfd, F_SETFL, fcntl(ag->evfd, F_GETFL) | O_NONBLOCK);
	ret = rc_open(&ag->rc, c->seeds, c->timeout_ms, NULL,
		      c->has_password ? c->password : NULL, err, sizeof(err));
	if (ret) {
		kvactl_err("remote: the cluster at %s: %s", c->seeds, err);
		return ret;
	}
	ag->lsock = listen_on(ag);
	if (ag->lsock < 0)
		return ag->lsock;
	ag->queue = calloc(STORE_QUEUE, sizeof(*ag->queue));
	ag->retry = calloc(RETRY_QUEUE, sizeof(*ag->retry));
	ag->vals = malloc(STORE_BATCH * (KVB_HEADER_SIZE + ag->geo.frame_size));
	if (!ag->queue || !ag->retry || !ag->vals)
		return -ENOMEM;
	return 0;
}

static void report(struct ragent *ag)
{
	uint64_t stored = 0, fetched = 0, requests = 0, miss[KVB_MISS_COUNT] = { 0 };

	for (unsigned int i = 0; i < ag->conf->nr_dom; i++) {
		struct rdomain *d = &ag->conf->dom[i];

		stored += d->stored;
		fetched += d->fetched;
		requests += d->requests;
		for (int m = 0; m < KVB_MISS_COUNT; m++)
			miss[m] += d->miss[m];
	}
	printf("remote: %s: stored %llu blocks, fetched %llu for %llu requests; misses",
	       ag->name, (unsigned long long)stored,
	       (unsigned long long)fetched, (unsigned long long)requests);
	for (int m = KVB_MISS_ABSENT; m < KVB_MISS_COUNT; m++)
		printf(" %s %llu", kvb_miss_name(m), (unsigned long long)miss[m]);
	printf("; stores retried %llu, failed %llu, dropped %llu; events lost %llu",
	       (unsigned long long)ag->store_retried,
	       (unsigned long long)ag->store_failed,
	       (unsigned long long)ag->dropped,
	       (unsigned long long)ag->lost_events);
	if (ag->zpub)
		printf("; told %llu, batches not sent %llu",
		       (unsigned long long)ag->told,
		       (unsigned long long)ag->tell_failed);
	putchar('\n');
	fflush(stdout);
}

int kvactl_cmd_remote(const struct kvactl_opts *o)
{
	struct rconf *conf = calloc(1, sizeof(*conf));
	struct ragent ag = { .name = o->args[0], .conf = conf, .ctl = -1,
			     .evfd = -1, .lsock = -1, .limit = o->iterations };
	const char *file = o->config ? o->config : KVACTL_REMOTE_CONF;
	struct pollfd pfd[4 + MAX_CONNS];
	int conns[MAX_CONNS], nconn = 0, ret = KVACTL_FAIL, zfd[2], nz = 0;
	struct sigaction sa = { .sa_handler = on_stop };
	uint8_t *evbuf = malloc(EV_BUF);

	if (!conf || !evbuf) {
		kvactl_err("remote: out of memory");
		goto out;
	}
	if (kvactl_name_check("remote", ag.name, false) || conf_read(file, conf))
		goto out;
	if (!conf->socket[0])
		snprintf(conf->socket, sizeof(conf->socket), "%s/%s.sock",
			 KVA_REMOTE_SOCKET_DIR, ag.name);
	/*
	 * Replies of a frame each, a batch of them at once: keep their memory
	 * in the heap between batches (glibc would map and unmap each one,
	 * and fault it in again: half the fetch's time, kvbench remote).
	 */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	if (setup(&ag))
		goto out;
	if (o->zmq) {
		ag.evc = (struct kvactl_ev_ctx){
			.arena = ag.local,
			.medium = o->medium ? o->medium : "REMOTE",
			.tokens_per_frame = ag.geo.tokens,
			.hash_bytes = o->hash_bytes,
			.layout = (enum kvactl_layout)o->layout,
			.no_salt = o->no_salt,
			.dp_rank = o->dp_rank,
		};
		ag.zpub = kvactl_zpub_open(o, "remote");
		if (!ag.zpub)
			goto out;
		nz = kvactl_zpub_fds(ag.zpub, zfd);
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	printf("remote: %s: blocks of %s (%u domains) to and from %s (%s), %u tokens a block; fetches on %s\n",
	       ag.name, ag.local, conf->nr_dom, conf->seeds,
	       rc_standalone(ag.rc) ? "one server" : "a cluster",
	       ag.geo.tokens, conf->socket);
	fflush(stdout);
	ret = KVACTL_OK;
	while (!stopped && !(ag.limit && ag.done >= ag.limit)) {
		int np = 0;

		pfd[np++] = (struct pollfd){ .fd = ag.evfd, .events = POLLIN };
		pfd[np++] = (struct pollfd){ .fd = ag.lsock, .events = POLLIN };
		for (int i = 0; i < nconn; i++)
			pfd[np++] = (struct pollfd){ .fd = conns[i], .events = POLLIN };
		for (int i = 0; i < nz; i++)
			pfd[np++] = (struct pollfd){ .fd = zfd[i], .events = POLLIN };
		if (poll(pfd, (nfds_t)np, store_wait_ms(&ag)) < 0 &&
		    errno != EINTR)
			break;
		if (ag.zpub)		/* subscriptions, replay requests */
			kvactl_zpub_service(ag.zpub);
		if ((pfd[0].revents & POLLIN) && read_events(&ag, evbuf)) {
			ret = KVACTL_FAIL;
			break;
		}
		for (int i = nconn - 1; i >= 0; i--) {
			short ev = pfd[2 + i].revents;

			if (ev & POLLIN)
				serve(&ag, conns[i]);
			if (ev & (POLLHUP | POLLERR)) {
				close(conns[i]);
				conns[i] = conns[--nconn];
			}
		}
		if (pfd[1].revents & POLLIN) {
			int c = accept4(ag.lsock, NULL, NULL,
					SOCK_CLOEXEC | SOCK_NONBLOCK);

			if (c >= 0 && nconn < MAX_CONNS)
				conns[nconn++] = c;
			else if (c >= 0)
				close(c);
		}
		store_some(&ag);
	}
	report(&ag);
out:
	for (int i = 0; i < nconn; i++)
		close(conns[i]);
	if (ag.lsock >= 0) {
		close(ag.lsock);
		unlink(conf->socket);
	}
	if (ag.evfd >= 0)
		close(ag.evfd);
	if (conf)
		for (unsigned int i = 0; i < conf->nr_dom; i++)
			if (conf->dom[i].fd >= 0)
				close(conf->dom[i].fd);
	if (ag.ctl >= 0)
		close(ag.ctl);
	rc_close(ag.rc);
	for (unsigned int i = 0; ag.queue && i < ag.q_len; i++)
		job_free(&ag.queue[(ag.q_head + i) % STORE_QUEUE]);
	for (unsigned int i = 0; ag.retry && i < ag.r_len; i++)
		job_free(&ag.retry[(ag.r_head + i) % RETRY_QUEUE]);
	kvactl_zpub_close(ag.zpub);
	free(ag.queue);
	free(ag.retry);
	free(ag.vals);
	free(evbuf);
	free(conf);
	return ret;
}

#endif /* KVACTL_REMOTE */
