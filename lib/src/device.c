// SPDX-License-Identifier: MIT
/*
 * The device provider: frames from /dev/kvarena.
 *
 * Commands go out as ioctl(2) or, where the module offers it, as
 * IORING_OP_URING_CMD: a batch of commands (an ALLOC and the usage report
 * that follows it, a usage report and a FREE) then costs one
 * io_uring_enter().  Both carry the same structs; only the submission
 * differs.  Also here: kva_arena_create()/kva_arena_destroy(), the
 * administrator's side.
 *
 * Built without liburing (KVA_NO_URING, lib/lib.mk decides), commands go
 * out as ioctl(2) only, and asking for the uring transport is
 * -EOPNOTSUPP, as on a module without it.
 */
#include <fcntl.h>
#ifndef KVA_NO_URING
#include <liburing.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <kvarena/remote.h>
#include <linux/kvarena.h>

#include "internal.h"

#define RING_ENTRIES	8

struct kva_device {
	int fd;
#ifndef KVA_NO_URING
	struct io_uring ring;
#endif
	bool ring_live;
	bool imports_dropped;	/* the module takes IMPORTS_DROPPED */
	uint32_t promote_ms;	/* 0: no promotions from a lower tier */
	uint32_t remote_ms;	/* 0: never ask the remote tier's agent */
	uint64_t remote_after;	/* CLOCK_MONOTONIC ns: no agent before */
};

static struct kva_device *dev(struct kva_arena *a)
{
	return a->prov_priv;
}

static int dev_ioctl(int fd, unsigned long nr, void *arg)
{
	return ioctl(fd, nr, arg) ? -errno : 0;
}

struct dev_cmd {
	unsigned long nr;
	void *arg;
	int res;
};

/*
 * Run @n commands; each one's result lands in its ->res.  With @chain,
 * a command runs only if the one before it succeeded (-ECANCELED
 * otherwise).  Return: 0, or an error of the submission itself.
 */
static int dev_submit(struct kva_arena *a, struct dev_cmd *c, unsigned int n,
		      bool chain)
{
	struct kva_device *d = dev(a);
#ifndef KVA_NO_URING
	struct io_uring_cqe *cqe;
	unsigned int submitted;
	int ret;
#endif
	unsigned int i;

	KVA_PASS("dev.submit");
	if (a->transport != KVA_TRANSPORT_URING) {
		for (i = 0; i < n; i++) {
			c[i].res = chain && i && c[i - 1].res ? -ECANCELED :
				dev_ioctl(d->fd, c[i].nr, c[i].arg);
		}
		return 0;
	}
#ifdef KVA_NO_URING
	return -EOPNOTSUPP;		/* never chosen without liburing */
#else

	for (i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&d->ring);
		struct kvarena_uring_cmd *cmd;

		if (!sqe)
			return -EBUSY;	/* n > RING_ENTRIES: a bug */
		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = IORING_OP_URING_CMD;
		sqe->fd = d->fd;
		sqe->cmd_op = (__u32)c[i].nr;
		sqe->user_data = i;
		if (chain && i + 1 < n)
			sqe->flags |= IOSQE_IO_LINK;
		cmd = (struct kvarena_uring_cmd *)sqe->cmd;
		cmd->arg = (__u64)(uintptr_t)c[i].arg;
		cmd->reserved = 0;
		c[i].res = -ECANCELED;
	}
	ret = io_uring_submit_and_wait(&d->ring, n);
	if (ret < 0)
		return ret;
	submitted = ret;
	/* Every submitted SQE completes, cancelled links included. */
	for (i = 0; i < submitted; i++) {
		ret = io_uring_wait_cqe(&d->ring, &cqe);
		if (ret)
			return ret;
		if (cqe->user_data < n)
			c[cqe->user_data].res = cqe->res;
		io_uring_cqe_seen(&d->ring, cqe);
	}
	return 0;
#endif
}

static void usage_cmd(struct kvarena_usage *k,
		      const struct kva_usage_report *u)
{
	KVA_PASS("dev.set_usage");
	*k = (struct kvarena_usage){
		.filled_tokens = u->tokens,
		.filled_bytes = u->bytes,
	};
}

static int dev_alloc(struct kva_arena *a, uint64_t *h, uint32_t n,
		     bool partial, const struct kva_usage_report *usage)
{
	struct kvarena_frames f = {
		.handles = (__u64)(uintptr_t)h,
		.count = n,
		.flags = partial ? KVARENA_ALLOC_PARTIAL : 0,
	};
	struct kvarena_usage k;
	struct dev_cmd c[2] = {
		{ KVARENA_IOC_ALLOC, &f, 0 },
		{ KVARENA_IOC_SET_USAGE, &k, 0 },
	};
	int ret, refused = 0;

	if (usage) {
		usage_cmd(&k, usage);
		/* Test build only: the report refused, the ALLOC sent alone. */
		refused = KVA_FAULT("dev.usage");
	}
	ret = dev_submit(a, c, usage && !refused ? 2 : 1, true);
	if (ret)
		return ret;
	if (c[0].res)
		return c[0].res;
	/* A failed report loses no frames: the next one corrects it. */
	if (usage && (refused || c[1].res))
		a->reported_valid = false;
	return partial ? (int)f.nr_done : (int)n;
}

static int dev_free(struct kva_arena *a, const uint64_t *h, uint32_t n,
		    const struct kva_usage_report *usage)
{
	struct kvarena_frames f = {
		.handles = (__u64)(uintptr_t)h,
		.count = n,
	};
	struct kvarena_usage k;
	/* The report's values hold before and after the FREE: no order. */
	struct dev_cmd c[2] = {
		{ KVARENA_IOC_FREE, &f, 0 },
		{ KVARENA_IOC_SET_USAGE, &k, 0 },
	};
	int ret;

	if (usage)
		usage_cmd(&k, usage);
	ret = KVA_FAULT("dev.free");
	if (!ret)
		ret = dev_submit(a, c, usage ? 2 : 1, false);
	if (ret)
		return ret;
	if (usage && c[1].res)
		a->reported_valid = false;
	return c[0].res;
}

static int dev_report(struct kva_arena *a, const struct kva_usage_report *u)
{
	struct kvarena_usage k;
	struct dev_cmd c = { KVARENA_IOC_SET_USAGE, &k, 0 };
	int ret;

	usage_cmd(&k, u);
	ret = dev_submit(a, &c, 1, false);
	return ret ? ret : c.res;
}

/*
 * STAT; a module from before KVARENA_FEAT_RESIZE knows only the struct's
 * first KVARENA_STAT_SIZE_V1 bytes (the rest stays zero).
 */
static int stat_by_name(int fd, const char *name, struct kvarena_stat *s)
{
	int ret;

	*s = (struct kvarena_stat){ 0 };
	snprintf(s->name, sizeof(s->name), "%s", name);
	ret = dev_ioctl(fd, KVARENA_IOC_STAT, s);
	if (ret == -ENOTTY)
		ret = dev_ioctl(fd, KVARENA_IOC_STAT_V1, s);
	return ret;
}

static int dev_stat(struct kva_arena *a, struct kva_stat *st)
{
	struct kvarena_stat s;
	int ret = stat_by_name(dev(a)->fd, a->name, &s);

	if (ret)
		return ret;
	st->frame_size = s.frame_size;
	st->nr_frames = s.nr_frames;
	st->nr_free = s.nr_free;
	st->nr_held = s.nr_held;
	st->nr_clients = s.nr_clients;
	st->filled_tokens = s.filled_tokens;
	st->filled_bytes = s.filled_bytes;
	st->alloc_calls = s.alloc_calls;
	st->free_calls = s.free_calls;
	st->nr_cached = s.nr_cached;
	st->nr_published = s.nr_published;
	st->cache_hits = s.cache_hits;
	st->cache_misses = s.cache_misses;
	st->nr_shrinking = s.nr_shrinking;
	st->max_frames = s.max_frames ? s.max_frames : s.nr_frames;
	return 0;
}

/* PUBLISH or LOOKUP of a chain: one command, on the arena's transport. */
static int dev_prefix(struct kva_arena *a, unsigned long nr,
		      struct kvarena_prefix_entry *e, uint32_t n,
		      const uint32_t *tokens, uint32_t per_entry)
{
	struct kvarena_prefix p = {
		.entries = (__u64)(uintptr_t)e,
		.count = n,
		.flags = tokens ? KVARENA_PUBLISH_TOKENS : 0,
		.tokens_per_entry = tokens ? per_entry : 0,
		.tokens = (__u64)(uintptr_t)tokens,
	};
	struct dev_cmd c = { nr, &p, 0 };
	int ret = dev_submit(a, &c, 1, false);

	if (!ret)
		ret = c.res;
	return ret ? ret : (int)p.nr_done;
}

static int dev_publish(struct kva_arena *a, struct kvarena_prefix_entry *e,
		       uint32_t n, const uint32_t *tokens, uint32_t per_entry)
{
	KVA_PASS("dev.publish");
	return dev_prefix(a, KVARENA_IOC_PUBLISH, e, n, tokens, per_entry);
}

/*
 * LOOKUP, and where the arena has a lower tier, PROMOTE of the keys
 * found there right after the run found above: those come back held, as
 * LOOKUP's would.  A promotion that cannot be had (no agent, no room, too
 * slow) leaves the run as LOOKUP found it: the caller computes the rest.
 * How many of @e[0..n) are held now, or a negative errno.  A PROMOTE
 * whose wait was interrupted - by a signal, or by io_uring's task
 * work for this thread (TIF_NOTIFY_SIGNAL makes it look like one) - left
 * its copies to the agent: they land above later, and a PROMOTE of the
 * same keys meanwhile returns at once with none done.  So after an
 * interrupted wait it looks again (over ioctl: no io_uring completion of
 * its own to interrupt the next wait), and asks again, pausing while
 * nothing moves, until the run is whole or promote_ms has passed.
 */
static int lookup_promote(struct kva_arena *a, struct kvarena_prefix_entry *e,
			  uint32_t n)
{
	uint64_t deadline = kva_mono_ns() + (uint64_t)dev(a)->promote_ms * 1000000;
	bool interrupted = false;
	uint32_t done = 0, pause_ms = 1;
	int ret;

	KVA_PASS("dev.lookup");
	if (!dev(a)->promote_ms)
		return dev_prefix(a, KVARENA_IOC_LOOKUP, e, n, NULL, 0);
	for (;;) {
		uint32_t left = n - done;
		struct kvarena_prefix p = {
			.entries = (__u64)(uintptr_t)(e + done),
			.count = left, .flags = KVARENA_LOOKUP_LOWER,
		};
		struct kvarena_promote pr = { .timeout_ms = dev(a)->promote_ms };
		struct dev_cmd c = { KVARENA_IOC_LOOKUP, &p, 0 };

		if (interrupted) {
			ret = dev_ioctl(dev(a)->fd, KVARENA_IOC_LOOKUP, &p);
		} else {
			ret = dev_submit(a, &c, 1, false);
			if (!ret)
				ret = c.res;
		}
		if (ret)
			return done ? (int)done : ret;
		done += p.nr_done;
		if (!p.nr_lower || p.nr_done + p.nr_lower > left)
			return (int)done;
		/* One promotion, however often an interrupted wait asks again. */
		if (!interrupted)
			KVA_PASS("dev.promote");
		pr.entries = (__u64)(uintptr_t)(e + done);
		pr.count = p.nr_lower;
		ret = dev_ioctl(dev(a)->fd, KVARENA_IOC_PROMOTE, &pr);
		if (!ret) {
			done += pr.nr_done;
			if (!interrupted || pr.nr_done == pr.count)
				return (int)done;
		} else if (ret == -EINTR) {
			interrupted = true;
		} else {
			return (int)done;
		}
		if (kva_mono_ns() >= deadline)
			return (int)done;
		if (!ret && !pr.nr_done) {
			/* The agent's copies still in flight: wait a little. */
			usleep(pause_ms * 1000);
			pause_ms = pause_ms < 32 ? 2 * pause_ms : 64;
		}
	}
}

/*
 * Ask the arena's remote agent (kvarenactl remote; include/kvarena/
 * remote.h) to bring the @n keys at @e from the cluster: how many it
 * published in the arena (or its lower tier), 0 when there is no agent or
 * it found nothing, or a negative errno.  One connection per question,
 * each way bounded by remote_ms: an agent that is gone costs a failed
 * connect(), a stuck one the timeout.
 */
static int remote_fetch(struct kva_arena *a,
			const struct kvarena_prefix_entry *e, uint32_t n)
{
	uint8_t buf[sizeof(struct kva_remote_req) + 32 * KVA_REMOTE_MAX_KEYS];
	struct kva_remote_req req = {
		.magic = KVA_REMOTE_MAGIC, .version = KVA_REMOTE_VERSION,
		.client_id = a->client_id,
	};
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint32_t ms = dev(a)->remote_ms;
	struct timeval tv = { .tv_sec = ms / 1000,
			      .tv_usec = (suseconds_t)(ms % 1000) * 1000 };
	const char *path = getenv("KVA_REMOTE_SOCKET");
	struct kva_remote_rep rep;
	uint64_t now = kva_mono_ns();
	ssize_t got;
	int fd, ret;

	/* No agent a moment ago: none now (a miss costs no connect()). */
	if (now < dev(a)->remote_after)
		return 0;
	if (n > KVA_REMOTE_MAX_KEYS)
		n = KVA_REMOTE_MAX_KEYS;
	if (path && *path)
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	else
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s.sock",
			 KVA_REMOTE_SOCKET_DIR, a->name);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		/* No agent: do not look again for a second. */
		dev(a)->remote_after = now + 1000000000u;
		return 0;
	}
	KVA_PASS("dev.remote");
	req.nr = n;
	memcpy(buf, &req, sizeof(req));
	for (uint32_t i = 0; i < n; i++)
		memcpy(buf + sizeof(req) + 32 * i, e[i].key, 32);
	ret = 0;
	if (send(fd, buf, sizeof(req) + 32 * (size_t)n, MSG_NOSIGNAL) < 0)
		ret = -errno;
	if (!ret) {
		got = recv(fd, &rep, sizeof(rep), 0);
		if (got < 0)
			ret = errno == EAGAIN ? -ETIMEDOUT : -errno;
		else if (got != sizeof(rep) || rep.magic != KVA_REMOTE_MAGIC)
			ret = -EPROTO;
		else
			ret = rep.status < 0 ? rep.status : (int)rep.nr_fetched;
	}
	close(fd);
	return ret;
}

/*
 * lookup_promote(), and where it did not find all @n keys, the remote
 * tier: what its agent fetched is found by a second lookup_promote() of
 * the keys after the run, in this arena or its lower tier.
 */
static int dev_lookup(struct kva_arena *a, struct kvarena_prefix_entry *e,
		      uint32_t n)
{
	int got = lookup_promote(a, e, n), more;

	if (got < 0 || (uint32_t)got >= n || !dev(a)->remote_ms)
		return got;
	if (remote_fetch(a, e + got, n - (uint32_t)got) <= 0)
		return got;
	more = lookup_promote(a, e + got, n - (uint32_t)got);
	return more > 0 ? got + more : got;
}

/* $KVA_REMOTE_MS, 1 to 600000; 1000 without it (0: no remote tier). */
static uint32_t remote_ms(void)
{
	const char *s = getenv("KVA_REMOTE_MS");
	char *end;
	unsigned long v;

	if (!s || !*s)
		return 1000;
	v = strtoul(s, &end, 10);
	if (*end || v > KVARENA_PROMOTE_MAX_MS)
		return 1000;
	return (uint32_t)v;
}

static int dev_frame_fd(struct kva_arena *a, uint64_t handle, int *fd,
			uint64_t *offset)
{
	struct kvarena_frame_fd f = { .handle = handle };
	int ret;

	KVA_PASS("dev.frame_fd");
	ret = dev_ioctl(dev(a)->fd, KVARENA_IOC_FRAME_FD, &f);
	if (ret)
		return ret;
	if (f.size != a->frame_size) {
		close(f.fd);
		return -EPROTO;
	}
	/*
	 * A rank learns here whether its client published the frame: it
	 * maps it read-only then, as the client's own would be.
	 */
	if (a->rank && handle_idx(handle) < a->nr_frames) {
		struct kva_frame_rec *fr = &a->frames[handle_idx(handle)];

		if (f.access & KVARENA_ACCESS_WRITE)
			fr->flags &= ~FRAME_PUBLISHED;
		else
			fr->flags |= FRAME_PUBLISHED;
	}
	*fd = f.fd;
	*offset = f.offset;
	return 0;
}

static int dev_scrub(struct kva_arena *a, uint64_t *h, uint32_t n,
		     uint32_t flags, uint32_t timeout_ms)
{
	struct kvarena_scrub s = {
		.handles = (uintptr_t)h, .count = n, .flags = flags,
		.timeout_ms = timeout_ms,
	};
	int ret;

	KVA_PASS("dev.scrub");
	ret = dev_ioctl(dev(a)->fd, KVARENA_IOC_SCRUB, &s);
	return ret ? ret : (int)s.nr_done;
}

/* Frames shrinks took out of the arena, ever (0 before resizing). */
static int dev_retired(struct kva_arena *a, uint64_t *n)
{
	struct kvarena_stat s;
	int ret = stat_by_name(dev(a)->fd, a->name, &s);

	if (!ret)
		*n = s.frames_retired;
	return ret;
}

static int dev_imports_dropped(struct kva_arena *a)
{
	struct kvarena_imports_dropped d = { 0 };

	if (!dev(a)->imports_dropped)
		return 0;
	KVA_PASS("dev.imports_dropped");
	return dev_ioctl(dev(a)->fd, KVARENA_IOC_IMPORTS_DROPPED, &d);
}

static int dev_poll_fd(struct kva_arena *a)
{
	return dev(a)->fd;
}

static void dev_close_provider(struct kva_arena *a)
{
	struct kva_device *d = dev(a);

#ifndef KVA_NO_URING
	if (d->ring_live)
		io_uring_queue_exit(&d->ring);
#endif
	/* Release returns every frame this client held. */
	close(d->fd);
	free(d);
	a->prov_priv = NULL;
}

/*
 * TIER: a take (the lower frames through @lower's client, a device
 * arena's too: kva_tier_agent() checks) or the jobs given back.
 */
static int dev_tier(struct kva_arena *a, struct kvarena_tier_job *jobs,
		    uint32_t n, uint32_t flags, uint32_t timeout_ms,
		    struct kva_arena *lower)
{
	struct kvarena_tier t = {
		.jobs = (uintptr_t)jobs, .count = n, .flags = flags,
		.timeout_ms = timeout_ms,
		.lower_fd = flags & KVARENA_TIER_DONE ? 0 : dev(lower)->fd,
	};
	int ret;

	KVA_PASS("dev.tier");
	ret = dev_ioctl(dev(a)->fd, KVARENA_IOC_TIER, &t);
	return ret ? ret : (int)t.nr_done;
}

const struct kva_provider kva_device_provider = {
	.alloc = dev_alloc,
	.free = dev_free,
	.report = dev_report,
	.stat = dev_stat,
	.frame_fd = dev_frame_fd,
	.poll_fd = dev_poll_fd,
	.publish = dev_publish,
	.lookup = dev_lookup,
	.scrub = dev_scrub,
	.retired = dev_retired,
	.imports_dropped = dev_imports_dropped,
	.tier = dev_tier,
	.close = dev_close_provider,
};

/* Open the node and check that it is a kvarena device we can talk to. */
static int open_device(const char *path, int flags, __u64 *features)
{
	struct kvarena_version v = { 0 };
	int fd, ret;

	fd = open(path, flags | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENXIO ? -ENODEV : -errno;
	ret = dev_ioctl(fd, KVARENA_IOC_VERSION, &v);
	if (ret) {
		close(fd);
		return ret == -ENOTTY || ret == -EINVAL ? -ENODEV : ret;
	}
	if (v.abi_version != KVARENA_ABI_VERSION) {
		close(fd);
		return -EPROTO;
	}
	if (features)
		*features = v.features;
	return fd;
}

static int check_name(const char *name)
{
	size_t i, n = name ? strlen(name) : 0;

	if (!n || n >= KVARENA_NAME_LEN)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' ||
		      ch == '-'))
			return -EINVAL;
	}
	return 0;
}

static int choose_transport(struct kva_arena *a, const struct kva_open_opts *o,
			    __u64 features)
{
	struct kva_device *d = dev(a);
	uint32_t t = o->transport;
	const char *env, *why = "asked for";
	int ret;

	if (t == KVA_TRANSPORT_AUTO) {
		env = kva_env("KVA_TRANSPORT");
		why = "the default";
		if (env && !strcmp(env, "ioctl"))
			t = KVA_TRANSPORT_IOCTL, why = "KVA_TRANSPORT=ioctl";
		else if (env && !strcmp(env, "uring"))
			t = KVA_TRANSPORT_URING, why = "KVA_TRANSPORT=uring";
		else if (env)
			return -EINVAL;
	}
	a->transport_reason = why;
	if (t == KVA_TRANSPORT_IOCTL) {
		a->transport = t;
		return 0;
	}
#ifndef KVA_NO_URING
	if (!(features & KVARENA_FEAT_URING_CMD)) {
		why = "this kernel has no io_uring commands for kvarena (IORING_OP_URING_CMD for character devices: 5.19+)";
	} else {
		ret = io_uring_queue_init(RING_ENTRIES, &d->ring, 0);
		if (!ret) {
			d->ring_live = true;
			a->transport = KVA_TRANSPORT_URING;
			return 0;
		}
		why = ret == -EPERM ? "io_uring is switched off (kernel.io_uring_disabled)" :
		      ret == -ENOSYS ? "io_uring is not in this kernel" :
				       "no io_uring instance could be made";
	}
#else
	(void)d;
	(void)features;
	(void)ret;
	why = "libkvarena was built without liburing";
#endif
	a->transport_reason = why;
	if (t == KVA_TRANSPORT_URING)
		return -EOPNOTSUPP;
	a->transport = KVA_TRANSPORT_IOCTL;
	return 0;
}

int kva_device_open(struct kva_arena *a, const struct kva_open_opts *o,
		    const char *path)
{
	const char *name = o->name ? o->name : kva_env("KVA_ARENA");
	struct kvarena_attach at = { 0 };
	struct kvarena_stat st;
	struct kva_device *d;
	__u64 features = 0;
	int ret;

	if (check_name(name) ||
	    (o->label && strlen(o->label) >= KVARENA_LABEL_LEN))
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	ret = open_device(path, O_RDWR, &features);
	if (ret < 0)
		goto err_free;
	d->fd = ret;

	strcpy(at.name, name);
	if (o->label)
		strcpy(at.label, o->label);
	at.min_frames = o->min_frames;
	at.max_frames = o->max_frames;
	if (o->flags & KVA_OPEN_PRIVATE)
		at.flags = KVARENA_ATTACH_PRIVATE;
	ret = dev_ioctl(d->fd, KVARENA_IOC_ATTACH, &at);
	if (ret)
		goto err_close;
	/* A file arena's frames are a tier's, read and written by its agent. */
	ret = -EOPNOTSUPP;
	if (at.mem_kind == KVARENA_MEM_FILE)
		goto err_close;
	if (at.mem_kind > KVARENA_MEM_CUDA || !at.nr_frames ||
	    at.frame_size < 4096 || (at.frame_size & (at.frame_size - 1))) {
		ret = -EPROTO;
		goto err_close;
	}
	/* ATTACH does not say which GPU; STAT does. */
	ret = stat_by_name(d->fd, name, &st);
	if (ret)
		goto err_close;

	a->prov = &kva_device_provider;
	a->prov_priv = d;
	strcpy(a->name, name);
	a->frame_size = at.frame_size;
	/* Handles index the table, which a resize may fill up to its max. */
	a->nr_frames = st.max_frames > at.nr_frames ? st.max_frames :
		       at.nr_frames;
	a->backend = at.mem_kind == KVARENA_MEM_CUDA ? KVA_BACKEND_CUDA :
		KVA_BACKEND_HOST;
	a->mem_dev = st.mem_dev;
	memcpy(a->mem_uuid, st.mem_uuid, sizeof(a->mem_uuid));
	a->no_memory = st.state & KVARENA_STATE_NO_BACKING;
	a->client_id = at.client_id;
	a->domain = at.domain;
	/* Frames out before we came were never imported by us. */
	a->retired_seen = st.frames_retired;
	d->imports_dropped = features & KVARENA_FEAT_IMPORTS_DROPPED;
	if ((features & KVARENA_FEAT_TIER) && !(o->flags & KVA_OPEN_NO_PROMOTE))
		d->promote_ms = o->promote_ms ? o->promote_ms : 1000;
	if (d->promote_ms > KVARENA_PROMOTE_MAX_MS)
		d->promote_ms = KVARENA_PROMOTE_MAX_MS;
	if (!(o->flags & KVA_OPEN_NO_REMOTE))
		d->remote_ms = remote_ms();
	ret = choose_transport(a, o, features);
	if (ret)
		goto err_close;
	/*
	 * A gang's client maps nothing itself (its ranks do): its sequences
	 * track frames only (track.c).
	 */
	if (features & KVARENA_FEAT_GANG) {
		struct kvarena_gang_token t = { 0 };

		if (!dev_ioctl(d->fd, KVARENA_IOC_GANG_TOKEN, &t))
			a->gang_members = t.nr_members;
	}
	return 0;

err_close:
	close(d->fd);
err_free:
	free(d);
	a->prov = NULL;
	a->prov_priv = NULL;
	return ret;
}

int kva_device_gang_token(struct kva_arena *a, uint32_t flags,
			  uint64_t *token, uint32_t *nr_members)
{
	struct kvarena_gang_token t = { .flags = flags };
	int ret;

	if (a->prov != &kva_device_provider)
		return -EOPNOTSUPP;
	ret = dev_ioctl(dev(a)->fd, KVARENA_IOC_GANG_TOKEN, &t);
	if (ret)
		return ret;
	*token = t.token;
	if (nr_members)
		*nr_members = t.nr_members;
	return 0;
}

/* kva_rank_open(): JOIN instead of ATTACH; the rest as kva_device_open(). */
int kva_device_join(struct kva_arena *a, const struct kva_rank_opts *r,
		    const char *path)
{
	struct kvarena_join j = { 0 };
	struct kva_device *d;
	__u64 features = 0;
	int ret;

	if (check_name(r->name) ||
	    (r->label && strlen(r->label) >= KVARENA_LABEL_LEN))
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	ret = open_device(path, O_RDWR, &features);
	if (ret < 0)
		goto err_free;
	d->fd = ret;
	ret = -EOPNOTSUPP;
	if (!(features & KVARENA_FEAT_GANG))
		goto err_close;

	strcpy(j.name, r->name);
	if (r->label)
		strcpy(j.label, r->label);
	j.client_id = r->client_id;
	j.rank = r->rank;
	j.token = r->token;
	ret = dev_ioctl(d->fd, KVARENA_IOC_JOIN, &j);
	if (ret)
		goto err_close;
	ret = -EOPNOTSUPP;
	if (j.mem_kind != KVARENA_MEM_HOST && j.mem_kind != KVARENA_MEM_CUDA)
		goto err_close;
	ret = -EPROTO;
	if (!j.nr_frames || j.frame_size < 4096 ||
	    (j.frame_size & (j.frame_size - 1)))
		goto err_close;

	a->prov = &kva_device_provider;
	a->prov_priv = d;
	a->rank = true;
	strcpy(a->name, r->name);
	a->frame_size = j.frame_size;
	a->nr_frames = j.nr_frames;
	/* A CUDA member's GPU is found by its UUID (cuda.c). */
	a->backend = j.mem_kind == KVARENA_MEM_CUDA ? KVA_BACKEND_CUDA :
		     KVA_BACKEND_HOST;
	a->mem_dev = j.mem_dev;
	memcpy(a->mem_uuid, j.mem_uuid, sizeof(a->mem_uuid));
	a->client_id = r->client_id;
	/* Frame commands are the client's: one ioctl each is all a rank sends. */
	a->transport = KVA_TRANSPORT_IOCTL;
	return 0;

err_close:
	close(d->fd);
err_free:
	free(d);
	return ret;
}

int kva_device_set_backing(int dev_fd, const char *name, uint32_t first,
			   uint32_t nr, int fd, uint64_t offset)
{
	struct kvarena_set_backing b = {
		.first_frame = first,
		.nr_frames = nr,
		.fd = fd,
		.offset = offset,
	};

	KVA_PASS("dev.set_backing");
	strcpy(b.name, name);
	return dev_ioctl(dev_fd, KVARENA_IOC_ARENA_SET_BACKING, &b);
}

static int destroy(int fd, const char *name)
{
	struct kvarena_arena_destroy d = { 0 };

	strcpy(d.name, name);
	return dev_ioctl(fd, KVARENA_IOC_ARENA_DESTROY, &d);
}

int kva_arena_create(const struct kva_arena_params *p)
{
	struct kvarena_arena_create c = { 0 };
	int fd, ret;

	if (!p || check_name(p->name) || !p->nr_frames ||
	    p->mem_kind > KVA_BACKEND_CUDA ||
	    (p->max_frames && p->max_frames < p->nr_frames) ||
	    (p->flags & ~(KVA_OPEN_PREFAULT | KVA_OPEN_HUGETLB)) ||
	    !kva_all_zero(p->reserved, ARRAY_SIZE(p->reserved)))
		return -EINVAL;
	fd = open_device(kva_device_path(p->device), O_RDWR, NULL);
	if (fd < 0)
		return fd;

	strcpy(c.name, p->name);
	c.frame_size = p->frame_size;
	c.nr_frames = p->nr_frames;
	c.max_frames = p->max_frames;
	c.mem_kind = p->mem_kind == KVA_BACKEND_CUDA ? KVARENA_MEM_CUDA :
		KVARENA_MEM_HOST;
	c.mem_dev = p->mem_dev;
	c.low_watermark = p->low_watermark;
	c.bytes_per_token = p->bytes_per_token;
	/* the GPU by UUID: an ordinal means another one elsewhere */
	ret = p->mem_kind == KVA_BACKEND_CUDA ?
	      kva_cuda_uuid(p->cuda_library, p->mem_dev, c.mem_uuid) : 0;
	if (!ret)
		ret = dev_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c);
	if (ret)
		goto out;

	if (p->mem_kind == KVA_BACKEND_CUDA)
		ret = kva_cuda_provision(fd, p);
	else
		ret = kva_host_provision(fd, p);
	/*
	 * Undo, dropping whatever memory was registered.  No client can have
	 * attached: the module refuses ATTACH (-ENODATA) until every frame
	 * has its backing.
	 */
	if (ret)
		destroy(fd, p->name);
out:
	close(fd);
	return ret;
}

int kva_arena_destroy(const struct kva_arena_params *p)
{
	int fd, ret;

	if (!p || check_name(p->name))
		return -EINVAL;
	fd = open_device(kva_device_path(p->device), O_RDWR, NULL);
	if (fd < 0)
		return fd;
	ret = destroy(fd, p->name);
	close(fd);
	return ret;
}
