// SPDX-License-Identifier: GPL-2.0
/*
 * kvserve --tp N: tensor parallelism over a gang of N member arenas.
 *
 * The scheduler is serve.c, unchanged: its arena is the gang, and its
 * sequences track frames without mapping them (libkvarena's track
 * backend), with the geometry of one rank's slice (the KV heads divided
 * by N), so that a frame holds as many tokens in every member.  Each step
 * it sends every rank the batch - for each sequence its handles
 * (kva_seq_handles()), the tokens to append and the request's number -
 * and waits for all of them: the ranks run in lockstep, as a tensor-
 * parallel engine's workers do between two all-reduces.
 *
 * Rank r is a process of its own, forked before the scheduler opens the
 * gang (it must not inherit the scheduler's client): it joins the client
 * with kva_rank_open(), keeps one sequence per scheduler sequence, made to
 * map the batch's handles with kva_seq_mirror(), and runs the CPU
 * attention (compute.c) of its slice - KV heads [r * kv/N, (r + 1) * kv/N)
 * and the query heads over them - through those ranges.  With --check the
 * inputs are drawn from (request, position, layer, global head), so the
 * sum of the ranks' output digests equals --tp 1's.
 *
 * The wire: a socketpair per rank, messages of u64 words.  The
 * scheduler's client is made with KVARENA_GANG_RANKS_FATAL: a rank that
 * dies takes the client's frames with it, and the scheduler's next
 * command fails; a scheduler that dies leaves the ranks an end of file.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kvarena.h>
#include <linux/kvarena.h>

#include "kvserve.h"

#define TP_MAX		16		/* KVARENA_GANG_MAX */

enum { MSG_HELLO = 1, MSG_PREFILL, MSG_DECODE, MSG_CHECK, MSG_STOP };

/* Sequences a rank keeps for sequences not seen in this many steps go. */
#define RANK_IDLE_STEPS	256

static struct {
	uint32_t n;
	pid_t pid[TP_MAX];
	int fd[TP_MAX];
} ranks;

/* ---- the wire ----------------------------------------------------------- */

static int put_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int get_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A message: its length in words, then the words. */
static int put_msg(int fd, const uint64_t *w, uint64_t n)
{
	return put_all(fd, &n, sizeof(n)) ?: put_all(fd, w, n * sizeof(*w));
}

static int get_msg(int fd, uint64_t **w, uint64_t *cap, uint64_t *n)
{
	int ret = get_all(fd, n, sizeof(*n));

	if (ret)
		return ret;
	if (*n > (1ull << 28))
		return -EPROTO;
	if (*n > *cap) {
		uint64_t *p = realloc(*w, *n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*w = p;
		*cap = *n;
	}
	return get_all(fd, *w, *n * sizeof(**w));
}

/* ---- a rank ------------------------------------------------------------- */

struct rseq {
	uint64_t key;			/* the scheduler's sequence (its base) */
	uint64_t max_tokens;
	uint64_t last;			/* the step it was last in */
	struct kva_seq *seq;
};

struct rank {
	uint32_t r, n;
	struct kva_arena *a;
	struct kva_geometry g;
	void *cstate;
	struct rseq *seqs;
	uint32_t nr_seqs, cap_seqs;
	uint64_t step;
	uint64_t *base, *from, *to, *tags;
	uint32_t cap;
};

static struct rseq *rank_seq(struct rank *rk, uint64_t key, uint64_t max)
{
	struct rseq *s;
	uint32_t i;

	for (i = 0; i < rk->nr_seqs; i++) {
		s = &rk->seqs[i];
		if (s->key != key)
			continue;
		if (s->max_tokens >= max)
			return s;
		/* The scheduler reused the address for a longer sequence. */
		kva_seq_free(s->seq);
		s->seq = NULL;
		break;
	}
	if (i == rk->nr_seqs) {
		if (rk->nr_seqs == rk->cap_seqs) {
			uint32_t cap = rk->cap_seqs ? 2 * rk->cap_seqs : 64;
			struct rseq *p = realloc(rk->seqs, cap * sizeof(*p));

			if (!p)
				return NULL;
			rk->seqs = p;
			rk->cap_seqs = cap;
		}
		rk->nr_seqs++;
	}
	s = &rk->seqs[i];
	s->key = key;
	s->max_tokens = max;
	if (kva_seq_create(rk->a, &rk->g, max, &s->seq)) {
		rk->seqs[i] = rk->seqs[--rk->nr_seqs];
		return NULL;
	}
	return s;
}

/* Sequences the scheduler has not sent for a while: unmapped, freed. */
static void rank_trim(struct rank *rk)
{
	uint32_t i = 0;

	while (i < rk->nr_seqs) {
		if (rk->step - rk->seqs[i].last > RANK_IDLE_STEPS) {
			kva_seq_free(rk->seqs[i].seq);
			rk->seqs[i] = rk->seqs[--rk->nr_seqs];
		} else {
			i++;
		}
	}
}

static int rank_need(struct rank *rk, uint32_t n)
{
	if (n <= rk->cap)
		return 0;
	rk->base = realloc(rk->base, n * sizeof(uint64_t));
	rk->from = realloc(rk->from, n * sizeof(uint64_t));
	rk->to = realloc(rk->to, n * sizeof(uint64_t));
	rk->tags = realloc(rk->tags, n * sizeof(uint64_t));
	if (!rk->base || !rk->from || !rk->to || !rk->tags)
		return -ENOMEM;
	rk->cap = n;
	return 0;
}

/*
 * A step: [op, n, then per sequence: key, max_tokens, tag, from, to,
 * frames, handles...].  Mirror each, then compute.
 */
static int rank_step(struct rank *rk, const uint64_t *w, uint64_t nw)
{
	uint64_t op = w[0], n = w[1], at = 2, i;
	int ret;

	if (n > UINT32_MAX || rank_need(rk, (uint32_t)n))
		return -ENOMEM;
	rk->step++;
	for (i = 0; i < n; i++) {
		struct rseq *s;
		uint64_t frames;

		if (at + 6 > nw)
			return -EPROTO;
		frames = w[at + 5];
		if (at + 6 + frames > nw)
			return -EPROTO;
		s = rank_seq(rk, w[at], w[at + 1]);
		if (!s)
			return -ENOMEM;
		s->last = rk->step;
		rk->tags[i] = w[at + 2];
		rk->from[i] = w[at + 3];
		rk->to[i] = w[at + 4];
		ret = kva_seq_mirror(s->seq, w + at + 6, (unsigned int)frames,
				     rk->to[i]);
		if (ret)
			return ret;
		rk->base[i] = s->seq->base;
		at += 6 + frames;
	}
	compute_cpu_ops.batch(rk->cstate, NULL, rk->tags, (uint32_t)n);
	if (op == MSG_PREFILL)
		ret = compute_cpu_ops.prefill(rk->cstate, rk->base, rk->from,
					      rk->to, (uint32_t)n);
	else
		ret = compute_cpu_ops.decode(rk->cstate, rk->base, rk->to,
					     (uint32_t)n);
	rank_trim(rk);
	return ret;
}

/*
 * HELLO: [gang name (4 words), client id, token, layers, kv_heads (the
 * slice), head_dim, dtype, frame_size, q_heads (the slice), threads,
 * seed].
 */
static int rank_hello(struct rank *rk, const uint64_t *w, uint64_t nw)
{
	char gang[KVARENA_NAME_LEN + 1] = { 0 };
	struct kva_rank_opts ro = { 0 };
	char label[32];
	int ret;

	if (nw < 16)
		return -EPROTO;
	memcpy(gang, w + 1, KVARENA_NAME_LEN);
	snprintf(label, sizeof(label), "kvserve-rank%u", rk->r);
	ro.name = gang;
	ro.label = label;
	ro.client_id = (uint32_t)w[5];
	ro.rank = rk->r;
	ro.token = w[6];
	ro.flags = KVA_OPEN_POPULATE;
	ret = kva_rank_open(&ro, &rk->a);
	if (ret)
		return ret;
	rk->g = (struct kva_geometry){
		.layers = (uint32_t)w[7], .kv_heads = (uint32_t)w[8],
		.head_dim = (uint32_t)w[9], .dtype = (uint32_t)w[10],
		.frame_size = w[11],
	};
	ret = kva_geometry_init(&rk->g);
	if (ret)
		return ret;
	return compute_cpu_ops.init(&rk->cstate, &rk->g, (uint32_t)w[12],
				    (unsigned int)w[13], w[14]);
}

/* The rank's process: answer [status, digest] to every message. */
static int rank_main(int fd, uint32_t r, uint32_t n)
{
	struct rank rk = { .r = r, .n = n };
	uint64_t *w = NULL, cap = 0, nw, reply[2];
	int ret = 0;

	for (;;) {
		if (get_msg(fd, &w, &cap, &nw) || !nw)
			break;
		switch (w[0]) {
		case MSG_HELLO:
			ret = rank_hello(&rk, w, nw);
			break;
		case MSG_CHECK:
			ret = nw < 3 ? -EPROTO :
			      compute_cpu_ops.check(rk.cstate, (uint32_t)w[1],
						    (uint32_t)w[2]);
			break;
		case MSG_PREFILL:
		case MSG_DECODE:
			ret = rk.cstate ? rank_step(&rk, w, nw) : -EPROTO;
			break;
		case MSG_STOP:
			goto out;
		default:
			ret = -EPROTO;
		}
		reply[0] = (uint64_t)(int64_t)ret;
		reply[1] = rk.cstate ? compute_cpu_ops.digest(rk.cstate) : 0;
		if (put_msg(fd, reply, 2) || ret)
			break;
	}
out:
	free(w);
	for (uint32_t i = 0; i < rk.nr_seqs; i++)
		kva_seq_free(rk.seqs[i].seq);
	free(rk.seqs);
	free(rk.base);
	free(rk.from);
	free(rk.to);
	free(rk.tags);
	if (rk.cstate)
		compute_cpu_ops.fini(rk.cstate);
	kva_close(rk.a);
	return ret ? 1 : 0;
}

/* ---- the scheduler's side ----------------------------------------------- */

int tp_spawn(const struct options *o)
{
	uint32_t r;

	if (o->tp > TP_MAX)
		return -EINVAL;
	for (r = 0; r < o->tp; r++) {
		int sv[2];
		pid_t pid;

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
			return -errno;
		fflush(NULL);
		pid = fork();
		if (pid < 0)
			return -errno;
		if (!pid) {
			/* Only its own end: the others are the scheduler's. */
			for (uint32_t q = 0; q < r; q++)
				close(ranks.fd[q]);
			close(sv[0]);
			_exit(rank_main(sv[1], r, o->tp));
		}
		close(sv[1]);
		ranks.fd[r] = sv[0];
		ranks.pid[r] = pid;
		ranks.n = r + 1;
	}
	return 0;
}

/* Send @w to every rank and gather the answers; the digests summed. */
static int tp_round(const uint64_t *w, uint64_t n, uint64_t *digest)
{
	uint64_t reply[2], *rw = reply, cap = 2, nw, sum = 0;
	uint32_t r;
	int ret = 0, err;

	for (r = 0; r < ranks.n; r++) {
		err = put_msg(ranks.fd[r], w, n);
		if (err && !ret)
			ret = err;
	}
	for (r = 0; r < ranks.n; r++) {
		err = get_msg(ranks.fd[r], &rw, &cap, &nw);
		if (!err && nw < 2)
			err = -EPROTO;
		if (!err && rw[0])
			err = (int)(int64_t)rw[0];
		if (!err)
			sum += rw[1];
		if (err && !ret)
			ret = err;
	}
	if (rw != reply)
		free(rw);
	if (!ret && digest)
		*digest = sum;
	return ret;
}

struct tp {
	struct kva_geometry g;		/* a rank's slice */
	uint32_t q_heads;		/* a rank's */
	struct kva_seq *const *seqs;
	const uint64_t *tags;
	uint64_t *w, cap;
	uint64_t *handles;
	uint64_t nr_handles;
	uint64_t digest;
	char desc[64];
};

static struct {
	const char *gang;
	uint32_t id;
	uint64_t token;
} hello;

int tp_hello(struct kva_arena *a, const char *gang)
{
	struct kva_arena_info info;
	uint32_t members = 0;
	int ret;

	kva_arena_info(a, &info);
	ret = kva_gang_token(a, KVA_GANG_RANKS_FATAL, &hello.token, &members);
	if (ret)
		return ret;
	if (members != ranks.n) {
		fprintf(stderr, "%s: --tp %u: the gang '%s' has %u members\n",
			kvt_prog, ranks.n, gang, members);
		return -EINVAL;
	}
	hello.gang = gang;
	hello.id = info.client_id;
	return 0;
}

static int tp_init(void **state, const struct kva_geometry *g,
		   uint32_t q_heads, unsigned int threads, uint64_t seed)
{
	uint64_t w[16] = { MSG_HELLO };
	struct tp *t = calloc(1, sizeof(*t));
	int ret;

	if (!t)
		return -ENOMEM;
	*state = t;
	t->g = *g;
	t->q_heads = q_heads;
	strncpy((char *)(w + 1), hello.gang, KVARENA_NAME_LEN);
	w[5] = hello.id;
	w[6] = hello.token;
	w[7] = g->layers;
	w[8] = g->kv_heads;
	w[9] = g->head_dim;
	w[10] = g->dtype;
	w[11] = g->frame_size;
	w[12] = q_heads;
	w[13] = threads;
	w[14] = seed;
	ret = tp_round(w, 16, NULL);
	snprintf(t->desc, sizeof(t->desc), "cpu, %u ranks of %u thread%s",
		 ranks.n, threads, threads > 1 ? "s" : "");
	return ret;
}

/* Rank r's slice starts at head r * (the slice's heads). */
static int tp_check(void *state, uint32_t kv_head0, uint32_t q_head0)
{
	struct tp *t = state;
	uint32_t r;
	int ret = 0;

	(void)kv_head0;
	(void)q_head0;
	for (r = 0; r < ranks.n && !ret; r++) {
		uint64_t w[3] = { MSG_CHECK, (uint64_t)r * t->g.kv_heads,
				  (uint64_t)r * t->q_heads };
		uint64_t reply[2], *rw = reply, cap = 2, nw;

		ret = put_msg(ranks.fd[r], w, 3) ?:
		      get_msg(ranks.fd[r], &rw, &cap, &nw);
		if (!ret && (nw < 2 || rw[0]))
			ret = nw < 2 ? -EPROTO : (int)(int64_t)rw[0];
		if (rw != reply)
			free(rw);
	}
	return ret;
}

static void tp_batch(void *state, struct kva_seq *const *seqs,
		     const uint64_t *tags, uint32_t n)
{
	struct tp *t = state;

	(void)n;
	t->seqs = seqs;
	t->tags = tags;
}

static int tp_need(struct tp *t, uint64_t words)
{
	uint64_t *p;

	if (words <= t->cap)
		return 0;
	p = realloc(t->w, words * sizeof(*p));
	if (!p)
		return -ENOMEM;
	t->w = p;
	t->cap = words;
	return 0;
}

/* One step for every rank: the batch's tables, then the attention. */
static int tp_step(struct tp *t, uint64_t op, const uint64_t *from,
		   const uint64_t *to, uint32_t n)
{
	uint64_t at = 2, i;
	int ret;

	ret = tp_need(t, 2);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		struct kva_seq *s = t->seqs[i];
		int frames = kva_seq_handles(s, NULL, 0);

		if (frames < 0)
			return frames;
		ret = tp_need(t, at + 6 + (uint64_t)frames);
		if (ret)
			return ret;
		t->w[at] = s->base;
		t->w[at + 1] = s->max_tokens;
		t->w[at + 2] = t->tags[i];
		t->w[at + 3] = from ? from[i] : to[i] - 1;
		t->w[at + 4] = to[i];
		t->w[at + 5] = (uint64_t)kva_seq_handles(s, t->w + at + 6,
							  (unsigned int)frames);
		at += 6 + t->w[at + 5];
	}
	t->w[0] = op;
	t->w[1] = n;
	return tp_round(t->w, at, &t->digest);
}

static int tp_prefill(void *state, const uint64_t *base, const uint64_t *from,
		      const uint64_t *to, uint32_t n)
{
	(void)base;
	return n ? tp_step(state, MSG_PREFILL, from, to, n) : 0;
}

static int tp_decode(void *state, const uint64_t *base,
		     const uint64_t *tokens, uint32_t n)
{
	(void)base;
	return n ? tp_step(state, MSG_DECODE, NULL, tokens, n) : 0;
}

static int tp_sync(void *state)
{
	(void)state;
	return 0;
}

/* Stop the ranks and reap them (also when nothing else was set up). */
static void tp_fini(void *state)
{
	struct tp *t = state;
	uint64_t stop = MSG_STOP;
	uint32_t r;

	for (r = 0; r < ranks.n; r++)
		put_msg(ranks.fd[r], &stop, 1);
	for (r = 0; r < ranks.n; r++) {
		close(ranks.fd[r]);
		waitpid(ranks.pid[r], NULL, 0);
	}
	ranks.n = 0;
	if (t) {
		free(t->w);
		free(t);
	}
}

static const char *tp_describe(void *state)
{
	return ((struct tp *)state)->desc;
}

static uint64_t tp_digest(void *state)
{
	return ((struct tp *)state)->digest;
}

const struct compute_ops compute_tp_ops = {
	.init = tp_init,
	.prefill = tp_prefill,
	.decode = tp_decode,
	.sync = tp_sync,
	.fini = tp_fini,
	.describe = tp_describe,
	.check = tp_check,
	.batch = tp_batch,
	.digest = tp_digest,
};
