// SPDX-License-Identifier: GPL-2.0
/*
 * rcluster - a Redis Cluster client on hiredis (rcluster.h).
 *
 * The cluster specification (Redis's cluster-spec) is what this follows:
 * key slots are CRC16/XMODEM of the key - or of the part between the first
 * '{' and the next '}', when that is not empty - modulo 16384; a node that
 * does not serve a key's slot answers "-MOVED SLOT HOST:PORT" (the slot is
 * elsewhere now: correct the map) or "-ASK SLOT HOST:PORT" (the slot is
 * being migrated and this key is already there: send ASKING and the
 * command to that node, once, and leave the map alone).
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include "rcluster.h"

/* What a node owes a reply for, in the order it was sent. */
enum { OUT_CMD, OUT_ASKING, OUT_AUTH, OUT_RAW };

struct rc_out {
	int kind;
	int idx;	/* the batch's command (OUT_CMD, OUT_RAW) */
};

#define RC_READ_CHUNK	(256u << 10)	/* bytes one read() takes at most */

struct rc_node {
	char host[256];
	int port;
	redisContext *ctx;	/* non-blocking */
	bool connecting;	/* connect() not finished */
	bool writing;		/* output not all written */
	bool fresh;		/* connected in this batch */
	uint64_t down_until;	/* ms, monotonic: not tried before */
	struct rc_out *out;	/* replies owed: [head, nout) */
	unsigned int head, nout, cap;
};

struct rcluster {
	struct rc_node nodes[RC_MAX_NODES];
	unsigned int nr_nodes;
	int16_t slot[RC_SLOTS];		/* master's node index, -1 none */
	bool standalone;
	bool stale;			/* take CLUSTER SLOTS before the next batch */
	unsigned int timeout_ms;
	char *user, *password;
	struct rc_stats st;
	char err[256];
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- slots --------------------------------------------------------------- */

uint16_t rc_crc16(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint16_t crc = 0;

	while (len--) {
		crc ^= (uint16_t)(*p++ << 8);
		for (int i = 0; i < 8; i++)
			crc = crc & 0x8000 ? (uint16_t)(crc << 1) ^ 0x1021 :
			      (uint16_t)(crc << 1);
	}
	return crc;
}

unsigned int rc_key_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len), *close;

	if (open) {
		size_t rest = len - (size_t)(open - key) - 1;

		close = memchr(open + 1, '}', rest);
		if (close && close > open + 1) {
			key = open + 1;
			len = (size_t)(close - key);
		}
	}
	return rc_crc16(key, len) & (RC_SLOTS - 1);
}

/* ---- nodes --------------------------------------------------------------- */

static void set_err(struct rcluster *c, const struct rc_node *n,
		    const char *what)
{
	snprintf(c->err, sizeof(c->err), "%s:%d: %s", n->host, n->port, what);
}

static int node_find(struct rcluster *c, const char *host, size_t host_len,
		     int port)
{
	unsigned int i;

	if (!host_len || host_len >= sizeof(c->nodes[0].host))
		return -1;
	for (i = 0; i < c->nr_nodes; i++)
		if (c->nodes[i].port == port &&
		    strlen(c->nodes[i].host) == host_len &&
		    !memcmp(c->nodes[i].host, host, host_len))
			return (int)i;
	if (c->nr_nodes == RC_MAX_NODES)
		return -1;
	memset(&c->nodes[i], 0, sizeof(c->nodes[i]));
	memcpy(c->nodes[i].host, host, host_len);
	c->nodes[i].port = port;
	c->nr_nodes++;
	return (int)i;
}

/*
 * Let go of node @i's connection; with @down, do not try it again for
 * RC_DOWN_MS.  Its replies still owed are the caller's to fail.
 */
static void node_drop(struct rcluster *c, int i, bool down)
{
	struct rc_node *n = &c->nodes[i];

	if (n->ctx)
		redisFree(n->ctx);
	n->ctx = NULL;
	n->connecting = false;
	n->writing = false;
	n->nout = n->head = 0;
	if (down)
		n->down_until = now_ms() + RC_DOWN_MS;
	c->stale = true;
}

static int out_push(struct rc_node *n, int kind, int idx)
{
	if (n->nout == n->cap) {
		unsigned int cap = n->cap ? 2 * n->cap : 16;
		struct rc_out *o = realloc(n->out, cap * sizeof(*o));

		if (!o)
			return -ENOMEM;
		n->out = o;
		n->cap = cap;
	}
	n->out[n->nout++] = (struct rc_out){ .kind = kind, .idx = idx };
	n->writing = true;
	return 0;
}

/*
 * Start a connection to node @i if it has none (non-blocking: run()
 * finishes it), AUTH queued first: 0, or -ECONNREFUSED (marked down, or
 * refused at once) or -ENOMEM.
 */
static int node_start(struct rcluster *c, int i)
{
	struct rc_node *n = &c->nodes[i];

	if (n->ctx)
		return 0;
	if (n->down_until > now_ms()) {
		set_err(c, n, "down (not tried again yet)");
		return -ECONNREFUSED;
	}
	n->ctx = redisConnectNonBlock(n->host, n->port);
	if (!n->ctx || n->ctx->err) {
		set_err(c, n, n->ctx ? n->ctx->errstr : "out of memory");
		node_drop(c, i, true);
		return -ECONNREFUSED;
	}
	c->st.connects++;
	n->connecting = true;
	n->fresh = true;
	/* Keep the reader's buffer between replies of a few MiB each. */
	n->ctx->reader->maxbuf = 0;
	if (c->password) {
		const char *argv[3] = { "AUTH" };
		int argc = 1;

		if (c->user)
			argv[argc++] = c->user;
		argv[argc++] = c->password;
		if (redisAppendCommandArgv(n->ctx, argc, argv, NULL) != REDIS_OK ||
		    out_push(n, OUT_AUTH, -1)) {
			node_drop(c, i, false);
			return -ENOMEM;
		}
	}
	return 0;
}

/* Queue @cmd on node @i (ASKING first if it was asked to): 0 or an errno. */
static int node_send(struct rcluster *c, int i, struct rc_cmd *cmd, int idx,
		     int kind)
{
	struct rc_node *n = &c->nodes[i];
	int err = node_start(c, i);

	if (err)
		return err;
	if (cmd->asking && (redisAppendCommand(n->ctx, "ASKING") != REDIS_OK ||
			    out_push(n, OUT_ASKING, idx)))
		return -ENOMEM;
	if (redisAppendCommandArgv(n->ctx, cmd->argc, cmd->argv,
				   cmd->argvlen) != REDIS_OK ||
	    out_push(n, kind, idx))
		return -ENOMEM;
	return 0;
}

/* ---- replies ------------------------------------------------------------- */

static bool starts(const char *s, const char *word)
{
	return !strncmp(s, word, strlen(word));
}

/* "MOVED 3999 127.0.0.1:6381": the node, or -1. */
static int redirect_target(struct rcluster *c, const char *msg, int from)
{
	const char *addr = strchr(msg, ' '), *colon;
	char *end;
	long port;

	if (!addr || !(addr = strchr(addr + 1, ' ')))
		return -1;
	addr++;
	colon = strrchr(addr, ':');
	if (!colon)
		return -1;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || *end || port < 1 || port > 65535)
		return -1;
	if (colon == addr)	/* ":PORT": the same host */
		return node_find(c, c->nodes[from].host,
				 strlen(c->nodes[from].host), (int)port);
	if (*addr == '[' && colon[-1] == ']')
		return node_find(c, addr + 1, (size_t)(colon - addr - 2),
				 (int)port);
	return node_find(c, addr, (size_t)(colon - addr), (int)port);
}

/*
 * The reply to @cmd from node @i: true when @cmd is done (a reply, or an
 * error that ends it), false when it goes round again (redirected).
 */
static bool settle(struct rcluster *c, struct rc_cmd *cmd, int i,
		   redisReply *r)
{
	c->st.commands++;
	if (r->type == REDIS_REPLY_ERROR && r->str) {
		bool moved = starts(r->str, "MOVED "), ask = starts(r->str, "ASK ");

		if (moved || ask) {
			int to = redirect_target(c, r->str, i);
			unsigned long slot = strtoul(r->str + (moved ? 6 : 4),
						     NULL, 10);

			freeReplyObject(r);
			if (to < 0 || slot >= RC_SLOTS) {
				cmd->err = -EPROTO;
				return true;
			}
			if (++cmd->hops > RC_MAX_REDIRECTS) {
				cmd->err = -ELOOP;
				return true;
			}
			if (moved) {
				/* This slot now; the others at the refresh. */
				c->slot[slot] = (int16_t)to;
				c->st.moved++;
				c->stale = true;
			} else {
				c->st.ask++;
			}
			cmd->node = to;
			cmd->asking = ask;
			return false;
		}
		if (starts(r->str, "TRYAGAIN") || starts(r->str, "CLUSTERDOWN") ||
		    starts(r->str, "LOADING") || starts(r->str, "MASTERDOWN")) {
			snprintf(c->err, sizeof(c->err), "%s", r->str);
			freeReplyObject(r);
			c->st.busy++;
			cmd->err = -EAGAIN;
			return true;
		}
	}
	cmd->reply = r;
	return true;
}

/*
 * Fail every reply node @i still owes with @err, and let it go.  A
 * connection from an earlier batch that is found lost (-EIO: the server
 * restarted, a proxy or an idle timeout closed it) is not the node's
 * fault: its commands go round once more, on a new connection, and the
 * node is not marked down.
 */
static void node_fail(struct rcluster *c, int i, struct rc_cmd *cmds,
		      bool *done, int err)
{
	struct rc_node *n = &c->nodes[i];
	bool stale = err == -EIO && !n->fresh;

	for (unsigned int k = n->head; k < n->nout; k++) {
		const struct rc_out *o = &n->out[k];

		if (o->kind != OUT_CMD && o->kind != OUT_RAW)
			continue;
		if (stale && o->kind == OUT_CMD && !cmds[o->idx].retried) {
			cmds[o->idx].retried = 1;
			continue;
		}
		cmds[o->idx].err = err;
		done[o->idx] = true;
		if (err == -ETIMEDOUT)
			c->st.timeouts++;
		else
			c->st.failures++;
	}
	node_drop(c, i, !stale);
}

/* The replies node @i has read: false if the connection must go. */
static bool node_take(struct rcluster *c, int i, struct rc_cmd *cmds,
		      bool *done)
{
	struct rc_node *n = &c->nodes[i];

	while (n->head < n->nout) {
		struct rc_out *o = &n->out[n->head];
		redisReply *r = NULL;

		if (redisReaderGetReply(n->ctx->reader, (void **)&r) != REDIS_OK) {
			set_err(c, n, "a reply this client cannot read");
			return false;
		}
		if (!r)
			return true;
		n->head++;
		if (o->kind == OUT_AUTH) {
			bool ok = r->type != REDIS_REPLY_ERROR;

			if (!ok)
				snprintf(c->err, sizeof(c->err), "%s:%d: AUTH: %s",
					 n->host, n->port, r->str);
			freeReplyObject(r);
			if (!ok)
				return false;
		} else if (o->kind == OUT_ASKING) {
			freeReplyObject(r);
		} else if (o->kind == OUT_RAW) {
			cmds[o->idx].reply = r;
			done[o->idx] = true;
		} else {
			done[o->idx] = settle(c, &cmds[o->idx], i, r);
		}
	}
	n->head = n->nout = 0;
	return true;
}

/*
 * What node @n's socket has, into its reader: hiredis's own read takes 16
 * KiB a call, a value of a few MiB wants fewer calls.  0, or -EIO (@c->err
 * says why).
 */
static int node_read(struct rcluster *c, struct rc_node *n)
{
	static __thread char buf[RC_READ_CHUNK];
	ssize_t got;

	for (;;) {
		got = read(n->ctx->fd, buf, sizeof(buf));
		if (got > 0)
			break;
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		set_err(c, n, got ? strerror(errno) : "the server closed the connection");
		return -EIO;
	}
	if (redisReaderFeed(n->ctx->reader, buf, (size_t)got) != REDIS_OK) {
		set_err(c, n, "a reply this client cannot read");
		return -EIO;
	}
	return 0;
}

/*
 * Drive every node that owes replies - connect, write, read - until none
 * does or @deadline passes: one poll() over all of them, so that a slow
 * or silent node costs the batch no more than the deadline, and the
 * others' replies are read meanwhile.
 */
static void run(struct rcluster *c, struct rc_cmd *cmds, bool *done,
		uint64_t deadline)
{
	struct pollfd pfd[RC_MAX_NODES];
	int who[RC_MAX_NODES];

	for (;;) {
		unsigned int nr = 0;
		uint64_t now = now_ms();
		int ret;

		for (unsigned int i = 0; i < c->nr_nodes; i++) {
			struct rc_node *n = &c->nodes[i];

			if (!n->ctx || n->head == n->nout)
				continue;
			pfd[nr].fd = n->ctx->fd;
			pfd[nr].events = n->connecting ? POLLOUT :
					 POLLIN | (n->writing ? POLLOUT : 0);
			pfd[nr].revents = 0;
			who[nr++] = (int)i;
		}
		if (!nr)
			return;
		if (now >= deadline) {
			for (unsigned int k = 0; k < nr; k++) {
				set_err(c, &c->nodes[who[k]], "timed out");
				node_fail(c, who[k], cmds, done, -ETIMEDOUT);
			}
			return;
		}
		ret = poll(pfd, nr, (int)(deadline - now));
		if (ret < 0 && errno != EINTR)
			ret = 0;
		for (unsigned int k = 0; ret > 0 && k < nr; k++) {
			struct rc_node *n = &c->nodes[who[k]];
			short ev = pfd[k].revents;
			int done_w = 0, soerr = 0;
			socklen_t sl = sizeof(soerr);

			if (!ev)
				continue;
			if (n->connecting) {
				if (getsockopt(n->ctx->fd, SOL_SOCKET, SO_ERROR,
					       &soerr, &sl) || soerr) {
					set_err(c, n, strerror(soerr ? soerr : errno));
					node_fail(c, who[k], cmds, done,
						  soerr == ETIMEDOUT ? -ETIMEDOUT :
						  -ECONNREFUSED);
					continue;
				}
				n->connecting = false;
				continue;
			}
			if ((ev & POLLOUT) &&
			    redisBufferWrite(n->ctx, &done_w) != REDIS_OK) {
				set_err(c, n, n->ctx->errstr);
				node_fail(c, who[k], cmds, done, -EIO);
				continue;
			}
			if (ev & POLLOUT)
				n->writing = !done_w;
			if (!(ev & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (node_read(c, n)) {
				node_fail(c, who[k], cmds, done, -EIO);
				continue;
			}
			if (!node_take(c, who[k], cmds, done))
				node_fail(c, who[k], cmds, done, -EIO);
		}
	}
}

/* One command to node @i on its own: its reply, or NULL (@c->err says). */
static redisReply *node_call(struct rcluster *c, int i, uint64_t deadline,
			     int argc, const char **argv, int *err)
{
	struct rc_cmd cmd = { .argc = argc, .argv = argv, .node = i };
	bool done = false;

	*err = node_send(c, i, &cmd, 0, OUT_RAW);
	if (*err) {
		if (c->nodes[i].ctx)
			node_drop(c, i, false);
		return NULL;
	}
	run(c, &cmd, &done, deadline);
	*err = cmd.reply ? 0 : cmd.err ? cmd.err : -EIO;
	return cmd.reply;
}

/* ---- the slot map -------------------------------------------------------- */

static bool is_int(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_INTEGER;
}

/* CLUSTER SLOTS's answer from node @from into the map: 0 or -EPROTO. */
static int slots_take(struct rcluster *c, int from, const redisReply *r)
{
	static int16_t map[RC_SLOTS];

	if (r->type != REDIS_REPLY_ARRAY)
		return -EPROTO;
	for (unsigned int s = 0; s < RC_SLOTS; s++)
		map[s] = -1;
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *e = r->element[i], *m;
		const char *host;
		size_t host_len;
		int node;

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    !is_int(e->element[0]) || !is_int(e->element[1]))
			return -EPROTO;
		m = e->element[2];
		if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
		    m->element[0]->type != REDIS_REPLY_STRING ||
		    !is_int(m->element[1]))
			return -EPROTO;
		host = m->element[0]->str;
		host_len = m->element[0]->len;
		/* "" or "?": the node's address is the one we asked. */
		if (!host_len || !strcmp(host, "?")) {
			host = c->nodes[from].host;
			host_len = strlen(host);
		}
		node = node_find(c, host, host_len, (int)m->element[1]->integer);
		if (node < 0)
			return -EPROTO;
		for (long long s = e->element[0]->integer;
		     s <= e->element[1]->integer && s < RC_SLOTS; s++)
			if (s >= 0)
				map[s] = (int16_t)node;
	}
	memcpy(c->slot, map, sizeof(map));
	c->standalone = false;
	return 0;
}

static int refresh_from(struct rcluster *c, int i, uint64_t deadline)
{
	const char *argv[2] = { "CLUSTER", "SLOTS" };
	redisReply *r;
	int err;

	r = node_call(c, i, deadline, 2, argv, &err);
	if (!r)
		return err;
	c->st.refreshes++;
	if (r->type == REDIS_REPLY_ERROR &&
	    strstr(r->str, "cluster support disabled")) {
		for (unsigned int s = 0; s < RC_SLOTS; s++)
			c->slot[s] = (int16_t)i;
		c->standalone = true;
		err = 0;
	} else if (r->type == REDIS_REPLY_ERROR) {
		snprintf(c->err, sizeof(c->err), "%s:%d: CLUSTER SLOTS: %s",
			 c->nodes[i].host, c->nodes[i].port, r->str);
		err = -EAGAIN;
	} else {
		err = slots_take(c, i, r);
		if (err)
			set_err(c, &c->nodes[i],
				"CLUSTER SLOTS: an answer this client cannot read");
	}
	freeReplyObject(r);
	return err;
}

/* Connected nodes first, then the others, then those marked down. */
static int refresh(struct rcluster *c, uint64_t deadline)
{
	int err = -ECONNREFUSED;

	for (int pass = 0; pass < 3; pass++) {
		for (unsigned int i = 0; i < c->nr_nodes; i++) {
			struct rc_node *n = &c->nodes[i];

			if ((pass == 0) != !!n->ctx)
				continue;
			if (pass == 1 && n->down_until > now_ms())
				continue;
			if (pass == 2) {
				if (n->down_until <= now_ms())
					continue;
				n->down_until = 0;
			}
			err = refresh_from(c, (int)i, deadline);
			if (!err) {
				c->stale = false;
				return 0;
			}
			if (now_ms() >= deadline)
				return err;
		}
	}
	return err;
}

int rc_refresh(struct rcluster *c)
{
	return refresh(c, now_ms() + c->timeout_ms);
}

/* ---- open and close ------------------------------------------------------ */

static int seed_add(struct rcluster *c, const char *s, size_t len)
{
	const char *colon, *host = s;
	size_t host_len;
	char *end, num[8];
	long port;

	if (len && s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (!close || close + 1 >= s + len || close[1] != ':')
			return -EINVAL;
		host = s + 1;
		host_len = (size_t)(close - host);
		colon = close + 1;
	} else {
		colon = NULL;
		for (size_t i = 0; i < len; i++)
			if (s[i] == ':')
				colon = s + i;
		if (!colon)
			return -EINVAL;
		host_len = (size_t)(colon - s);
	}
	if (!host_len || (size_t)(s + len - colon - 1) >= sizeof(num))
		return -EINVAL;
	memcpy(num, colon + 1, (size_t)(s + len - colon - 1));
	num[s + len - colon - 1] = '\0';
	errno = 0;
	port = strtol(num, &end, 10);
	if (errno || end == num || *end || port < 1 || port > 65535)
		return -EINVAL;
	return node_find(c, host, host_len, (int)port) < 0 ? -EINVAL : 0;
}

int rc_open(struct rcluster **out, const char *seeds, unsigned int timeout_ms,
	    const char *user, const char *password, char *err, size_t err_len)
{
	struct rcluster *c;
	const char *p;
	int ret;

	*out = NULL;
	if (!seeds || !*seeds || timeout_ms < 1 || timeout_ms > 600000) {
		snprintf(err, err_len, "no servers given, or a timeout outside 1..600000 ms");
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	c->timeout_ms = timeout_ms;
	for (unsigned int s = 0; s < RC_SLOTS; s++)
		c->slot[s] = -1;
	for (p = seeds; *p;) {
		size_t len = strcspn(p, ",");

		if (seed_add(c, p, len)) {
			snprintf(err, err_len, "\"%.*s\" is not HOST:PORT", (int)len, p);
			rc_close(c);
			return -EINVAL;
		}
		p += len;
		if (*p)
			p++;
	}
	if ((user && !(c->user = strdup(user))) ||
	    (password && !(c->password = strdup(password)))) {
		snprintf(err, err_len, "out of memory");
		rc_close(c);
		return -ENOMEM;
	}
	ret = rc_refresh(c);
	if (ret) {
		snprintf(err, err_len, "%s", c->err[0] ? c->err : strerror(-ret));
		rc_close(c);
		return ret;
	}
	*out = c;
	return 0;
}

void rc_close(struct rcluster *c)
{
	if (!c)
		return;
	for (unsigned int i = 0; i < c->nr_nodes; i++) {
		if (c->nodes[i].ctx)
			redisFree(c->nodes[i].ctx);
		free(c->nodes[i].out);
	}
	free(c->user);
	free(c->password);
	free(c);
}

/* ---- batches ------------------------------------------------------------- */

static int cmd_slot(const struct rc_cmd *cmd)
{
	const char *key = cmd->argv[cmd->key_arg];
	size_t len = cmd->argvlen ? cmd->argvlen[cmd->key_arg] : strlen(key);

	return (int)rc_key_slot(key, len);
}

/*
 * Commands whose master could not be reached: where CLUSTER SLOTS, taken
 * again now, names another master for their slot (a failover the map
 * had not seen), they go round once more, to it.  True if any does.
 */
static bool reroute(struct rcluster *c, struct rc_cmd *cmds, unsigned int n,
		    bool *done, uint64_t deadline)
{
	bool any = false;
	unsigned int k;

	for (k = 0; k < n; k++)
		if (cmds[k].err == -ECONNREFUSED || cmds[k].err == -EIO)
			break;
	if (k == n || refresh(c, deadline))
		return false;
	for (k = 0; k < n; k++) {
		int to;

		if (cmds[k].err != -ECONNREFUSED && cmds[k].err != -EIO)
			continue;
		to = c->slot[cmd_slot(&cmds[k])];
		if (to < 0 || to == cmds[k].node)
			continue;
		cmds[k].node = to;
		cmds[k].err = 0;
		cmds[k].asking = 0;
		done[k] = false;
		any = true;
	}
	return any;
}

unsigned int rc_exec(struct rcluster *c, struct rc_cmd *cmds, unsigned int n)
{
	uint64_t deadline = now_ms() + c->timeout_ms;
	unsigned int k, got = 0;
	bool *done, left = true, rerouted = false;

	done = calloc(n ? n : 1, sizeof(*done));
	if (!done) {
		for (k = 0; k < n; k++) {
			cmds[k].reply = NULL;
			cmds[k].err = -ENOMEM;
		}
		return 0;
	}
	for (k = 0; k < c->nr_nodes; k++)
		c->nodes[k].fresh = false;
	if (c->stale)
		refresh(c, deadline);
	for (k = 0; k < n; k++) {
		cmds[k].reply = NULL;
		cmds[k].err = 0;
		cmds[k].asking = 0;
		cmds[k].hops = 0;
		cmds[k].retried = 0;
		cmds[k].node = c->slot[cmd_slot(&cmds[k])];
	}
	/* Each round sends what is not done, then reads until it is. */
	while (left) {
		for (k = 0; k < n; k++) {
			int err;

			if (done[k])
				continue;
			if (cmds[k].node < 0) {
				snprintf(c->err, sizeof(c->err),
					 "no master serves the slot of a key");
				err = -EAGAIN;
				c->st.busy++;
				c->stale = true;
			} else {
				err = node_send(c, cmds[k].node, &cmds[k],
						(int)k, OUT_CMD);
				if (!err)
					continue;
				if (err == -ECONNREFUSED)
					c->st.failures++;
			}
			cmds[k].err = err;
			done[k] = true;
		}
		run(c, cmds, done, deadline);
		left = false;
		for (k = 0; k < n; k++)
			left |= !done[k];
		if (!left && !rerouted)
			left = rerouted = reroute(c, cmds, n, done, deadline);
	}
	for (k = 0; k < n; k++)
		got += !!cmds[k].reply;
	free(done);
	return got;
}

int rc_standalone(const struct rcluster *c)
{
	return c->standalone;
}

unsigned int rc_masters(const struct rcluster *c)
{
	bool seen[RC_MAX_NODES] = { false };
	unsigned int nr = 0;

	for (unsigned int s = 0; s < RC_SLOTS; s++)
		if (c->slot[s] >= 0 && !seen[c->slot[s]]) {
			seen[c->slot[s]] = true;
			nr++;
		}
	return nr;
}

const struct rc_stats *rc_stats(const struct rcluster *c)
{
	return &c->st;
}

const char *rc_error(const struct rcluster *c)
{
	return c->err;
}
