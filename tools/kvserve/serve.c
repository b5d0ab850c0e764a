// SPDX-License-Identifier: GPL-2.0
/*
 * kvserve - the serving loop.
 *
 * Requests arrive at their (time-compressed) trace times.  Every step:
 *
 *  1. decode: every running sequence grows by one token - one
 *     kva_seq_grow_batch() for all of them, so the step's new frames are
 *     one ALLOC (one io_uring submission on a device arena) - then its
 *     new K/V is written and decode attention runs over all of them, layer
 *     by layer.  When the batch cannot get its frames, the newest running
 *     sequence is preempted (its sequence freed, the request put back at
 *     the front of the queue for recompute - or, with --preempt swap, its
 *     KV copied to host memory first: kva_seq_swap_out()) and the batch
 *     retried;
 *  2. admission, unless this step preempted: swapped requests at the
 *     front of the queue come back first (kva_seq_swap_in(): new frames,
 *     the KV copied back, no prefill); then requests from the front of
 *     the queue, first come first served, get a sequence reserved for
 *     their whole length, their prompt's cached prefix attached, and the
 *     rest of the prompt (plus what they had generated before a
 *     preemption) in one more grow batch, then prefill attention; their
 *     prompts' full frames are published.  While the arena is under
 *     pressure (poll() on kva_poll_fd() reports POLLPRI) only what fits in
 *     this client's guarantee (--min-frames) is admitted - and, when
 *     nothing runs, the request at the front, so that no process starves;
 *  3. the filled tokens are reported to the module (kva_sync_usage()).
 *
 * A process with nothing to run and no frames to be had sleeps: in poll()
 * for POLLOUT, which the module reports once the frames of the refused
 * allocation could be had, or until the next request arrives.  It never
 * spins; the JSON's "steps" counts the steps that did work, "waits" the
 * sleeps.
 *
 * Nothing is simulated: frames come from the arena, K/V is written into
 * them and attention reads it back.  Only the model's weights are left
 * out: K, V and queries are random.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kvarena.h>

#include "kvserve.h"

struct sreq {
	const struct request *r;
	struct kva_seq *seq;		/* NULL while waiting, unless swapped */
	void *swap;			/* its KV while swapped out, or NULL */
	uint64_t swapped;		/* tokens in @swap */
	uint32_t generated;
	uint32_t hit;			/* prompt tokens from the cache */
	bool admitted;
	double t_first, t_done;
};

struct server {
	const struct options *o;
	struct kva_arena *a;
	struct kva_arena_info info;
	const struct compute_ops *cops;
	void *cstate;
	int pfd;

	struct sreq *rq;
	uint32_t next;
	struct sreq **waiting;
	uint32_t wait_head, nr_waiting;
	struct sreq **running;
	uint32_t nr_running;

	/* scratch, one entry per sequence of a step */
	struct kva_grow *grow;
	uint64_t *base, *from, *to;
	uint64_t *tags;			/* the requests' numbers (--check) */
	struct kva_seq **seqs;
	uint32_t *tok;			/* a prompt's token ids */
	struct kva_key *keys;		/* its frames' keys */
	uint64_t uid;			/* this process's own text */

	/* figures */
	double t0;
	uint64_t steps, pressure_steps, waits;
	bool starved;			/* the last admission got -ENOSPC */
	uint32_t completed, preemptions;
	uint32_t limit;			/* frames this client may hold */
	uint32_t too_long;		/* requests refused for it */
	uint64_t output_tokens, prompt_tokens, recomputed_tokens;
	uint64_t swapped_tokens;	/* swapped out and back in */
	uint32_t swaps;
	uint64_t hit_tokens, first_prompt_tokens;
	double held_bytes_steps, filled_bytes_steps;
	uint32_t peak_held;
	double *tpot, *ttft;
	uint32_t nr_tpot, nr_ttft;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double elapsed(const struct server *sv)
{
	return now_s() - sv->t0;
}

static void waiting_push_back(struct server *sv, struct sreq *s)
{
	sv->waiting[(sv->wait_head + sv->nr_waiting++) % sv->o->nr_req] = s;
}

static void waiting_push_front(struct server *sv, struct sreq *s)
{
	sv->wait_head = (sv->wait_head + sv->o->nr_req - 1) % sv->o->nr_req;
	sv->waiting[sv->wait_head] = s;
	sv->nr_waiting++;
}

static struct sreq *waiting_at(const struct server *sv, uint32_t k)
{
	return sv->waiting[(sv->wait_head + k) % sv->o->nr_req];
}

static void waiting_pop(struct server *sv, uint32_t k)
{
	sv->wait_head = (sv->wait_head + k) % sv->o->nr_req;
	sv->nr_waiting -= k;
}

/* ---- prefixes ----------------------------------------------------------- */

/*
 * The trace has lengths, not tokens, so kvserve makes the token ids up -
 * the same ones wherever the trace says the text is the same:
 *
 *  - the first --shared-prefix tokens of every prompt, in every process:
 *    a system prompt;
 *  - a Mooncake prompt's 512-token block with hash id h: ids drawn from h
 *    and the position in the block;
 *  - anything else: ids drawn from this process and the request, which no
 *    other prompt has.
 *
 * The keys of the prompt's full frames up to where the shared text ends
 * come from kva_prefix_keys() over those ids; the new sequence attaches
 * the longest run of them the arena has (kva_seq_attach_prefix()), and
 * after prefill they are published (kva_seq_publish()) for everyone else.
 */
#define PREFIX_NS	"kvserve: random weights"

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Prompt tokens whose text other prompts may share. */
static uint64_t shareable(const struct sreq *s, uint32_t shared)
{
	if (s->r->nr_hash)
		return s->r->prompt;
	return shared < s->r->prompt ? shared : s->r->prompt;
}

static uint32_t token_id(const struct server *sv, const struct sreq *s,
			 uint64_t p)
{
	uint32_t shared = sv->o->shared_prefix;

	if (p < shared)
		return (uint32_t)mix64(0x5359535445ull + p);
	p -= shared;
	if (s->r->nr_hash && p / KVT_HASH_BLOCK < s->r->nr_hash)
		return (uint32_t)mix64(s->r->hash[p / KVT_HASH_BLOCK] *
				       0x9e3779b97f4a7c15ull +
				       p % KVT_HASH_BLOCK);
	return (uint32_t)mix64(sv->uid ^ ((uint64_t)(s - sv->rq) << 24) ^ p);
}

/* The keys of @s's shareable full frames into sv->keys; their number. */
static unsigned int prompt_keys(struct server *sv, const struct sreq *s)
{
	const struct kva_geometry *g = &sv->o->g;
	uint64_t n = shareable(s, sv->o->shared_prefix), p;
	unsigned int frames = (unsigned int)(n / g->tokens_per_frame);
	int ret;

	if (!frames)
		return 0;
	n = (uint64_t)frames * g->tokens_per_frame;
	for (p = 0; p < n; p++)
		sv->tok[p] = token_id(sv, s, p);
	ret = kva_prefix_keys(g, PREFIX_NS, strlen(PREFIX_NS), sv->tok, n,
			      sv->keys, frames);
	return ret > 0 ? (unsigned int)ret : 0;
}

/* The prompt tokens attached from the arena's cache. */
static uint32_t prefix_attach(struct server *sv, struct sreq *s)
{
	unsigned int nk = sv->o->check ? 0 : prompt_keys(sv, s);
	uint64_t need = (uint64_t)s->r->prompt + s->generated;
	int ret;

	/* --check: K/V are the request's own, shared with nobody. */
	if (!nk)
		return 0;
	ret = kva_seq_attach_prefix(s->seq, sv->keys, nk);
	if (ret <= 0)
		return 0;
	/*
	 * The last prompt token is computed again, for its logits.  With
	 * ranks (--tp), the whole last frame: writing into a published
	 * frame takes a copy, which the scheduler cannot make.
	 */
	if (s->seq->tokens >= need &&
	    kva_seq_shrink(s->seq, sv->o->tp > 1 ?
			   (need - 1) / sv->o->g.tokens_per_frame *
			   sv->o->g.tokens_per_frame : need - 1))
		return 0;
	return (uint32_t)s->seq->tokens;
}

static void prefix_publish(struct server *sv, struct sreq *s)
{
	unsigned int nk = sv->o->check ? 0 : prompt_keys(sv, s);

	if (nk)
		kva_seq_publish(s->seq, sv->keys, nk);
}

static int prefix_init(struct server *sv)
{
	uint64_t longest = 0;
	uint32_t i;

	for (i = 0; i < sv->o->nr_req; i++)
		if (sv->o->req[i].prompt > longest)
			longest = sv->o->req[i].prompt;
	sv->uid = mix64((uint64_t)getpid() << 32 ^ (uint64_t)time(NULL));
	sv->tok = calloc(longest + 1, sizeof(*sv->tok));
	sv->keys = calloc(longest / sv->o->g.tokens_per_frame + 1,
			  sizeof(*sv->keys));
	return sv->tok && sv->keys ? 0 : -ENOMEM;
}

static void prefix_fini(struct server *sv)
{
	free(sv->tok);
	free(sv->keys);
}

/* ---- the step ----------------------------------------------------------- */

static bool under_pressure(struct server *sv)
{
	struct pollfd p = { .fd = sv->pfd, .events = POLLPRI };

	if (sv->pfd < 0)
		return false;
	return poll(&p, 1, 0) > 0 && (p.revents & POLLPRI);
}

static void complete(struct server *sv, struct sreq *s, double t)
{
	s->t_done = t;
	if (s->r->output >= 2)
		sv->tpot[sv->nr_tpot++] = (s->t_done - s->t_first) /
					  (s->r->output - 1);
	kva_seq_free(s->seq);
	s->seq = NULL;
	sv->completed++;
}

/*
 * A preempted sequence's KV goes to host memory (--preempt swap): the
 * sequence keeps its range, holding no frame, until kva_seq_swap_in().
 * Returns false (and nothing is kept) if it cannot be copied.
 */
static bool swap_out(struct sreq *s)
{
	uint64_t bytes = kva_seq_swap_bytes(s->seq);

	s->swap = malloc(bytes ? bytes : 1);
	if (s->swap && !kva_seq_swap_out(s->seq, s->swap, bytes, &s->swapped))
		return true;
	free(s->swap);
	s->swap = NULL;
	return false;
}

static void preempt(struct server *sv, struct sreq *s)
{
	if (!sv->o->preempt_swap || !swap_out(s)) {
		kva_seq_free(s->seq);
		s->seq = NULL;
	}
	s->hit = 0;
	waiting_push_front(sv, s);
	sv->preemptions++;
}

static int fatal(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", kvt_prog, what, strerror(-err));
	return -err;
}

/* Returns 1 if it preempted, 0, or a negative errno. */
static int decode(struct server *sv)
{
	uint32_t n = sv->nr_running, i, j = 0;
	int ret, preempted = 0;
	double t;

	if (!n)
		return 0;
	for (i = 0; i < n; i++)
		sv->grow[i] = (struct kva_grow){ .seq = sv->running[i]->seq,
						 .tokens = 1 };
	for (;;) {
		ret = kva_seq_grow_batch(sv->a, sv->grow, n);
		if (ret != -ENOSPC)
			break;
		preempt(sv, sv->running[--n]);
		preempted = 1;
		if (!n)
			break;
	}
	if (ret && ret != -ENOSPC)
		return fatal("growing the running sequences", ret);
	sv->nr_running = n;
	for (i = 0; i < n; i++) {
		sv->base[i] = sv->running[i]->seq->base;
		sv->to[i] = sv->running[i]->seq->tokens;
		sv->seqs[i] = sv->running[i]->seq;
		sv->tags[i] = (uint64_t)(sv->running[i] - sv->rq);
	}
	if (sv->cops->batch)
		sv->cops->batch(sv->cstate, sv->seqs, sv->tags, n);
	ret = sv->cops->decode(sv->cstate, sv->base, sv->to, n);
	if (!ret)
		ret = sv->cops->sync(sv->cstate);
	if (ret)
		return fatal("decode attention", ret);
	t = elapsed(sv);
	for (i = 0; i < n; i++) {
		struct sreq *s = sv->running[i];

		if (!s->generated++ && !s->t_first) {
			s->t_first = t;
			sv->ttft[sv->nr_ttft++] = t - s->r->arrival_s;
		}
		sv->output_tokens++;
		if (s->generated >= s->r->output)
			complete(sv, s, t);
		else
			sv->running[j++] = s;
	}
	sv->nr_running = j;
	return preempted;
}

/*
 * Frames admission may take now: any while the arena is not under
 * pressure; under it, what is left of this client's guarantee - or, when
 * nothing runs, as many as the request at the front needs.
 */
static uint64_t admit_room(struct server *sv)
{
	const struct sreq *front = waiting_at(sv, 0);
	uint64_t room = 0, need;
	uint32_t min = sv->o->min_frames;
	struct kva_stat st;

	if (!under_pressure(sv))
		return UINT64_MAX;
	sv->pressure_steps++;
	if (min && !kva_stat(sv->a, &st) && st.held < min)
		room = min - st.held;
	need = kva_frames_for(&sv->o->g, (uint64_t)front->r->prompt +
			      front->generated);
	if (!sv->nr_running && need > room)
		room = need;
	return room;
}

/*
 * Swapped requests at the front of the queue resume first, each into new
 * frames with its KV copied back (no prefill), while frames can be had -
 * under pressure only when nothing runs.  Returns how many resumed, or a
 * negative errno; sets @starved when the front one could not.
 */
static int swap_in(struct server *sv)
{
	uint32_t k = 0;
	int ret;

	while (sv->nr_waiting && waiting_at(sv, 0)->swap) {
		struct sreq *s = waiting_at(sv, 0);

		if ((sv->o->max_seqs && sv->nr_running >= sv->o->max_seqs) ||
		    (sv->nr_running && under_pressure(sv)))
			break;
		ret = kva_seq_swap_in(s->seq, s->swap, s->swapped);
		if (ret == -ENOSPC || ret == -ENOMEM) {
			sv->starved = true;
			break;
		}
		if (ret)
			return fatal("swapping a sequence back in", ret);
		free(s->swap);
		s->swap = NULL;
		sv->swapped_tokens += s->swapped;
		sv->swaps++;
		sv->running[sv->nr_running++] = s;
		waiting_pop(sv, 1);
		k++;
	}
	return (int)k;
}

/* Returns the number of requests admitted, or a negative errno. */
static int admit(struct server *sv)
{
	const struct options *o = sv->o;
	uint64_t used = 0, room, frames = 0;
	uint32_t k = 0, i;
	int ret, resumed;

	sv->starved = false;
	resumed = swap_in(sv);
	if (resumed < 0)
		return resumed;
	/* First come, first served: nobody overtakes a swapped request. */
	if (!sv->nr_waiting || waiting_at(sv, 0)->swap)
		return resumed;
	room = admit_room(sv);
	while (k < sv->nr_waiting &&
	       (!o->max_seqs || sv->nr_running + k < o->max_seqs)) {
		struct sreq *s = waiting_at(sv, k);
		uint64_t need = (uint64_t)s->r->prompt + s->generated;

		if (o->prefill_budget && used &&
		    used + need > o->prefill_budget)
			break;
		frames += kva_frames_for(&o->g, need);
		if (frames > room)
			break;
		ret = kva_seq_create(sv->a, &o->g,
				     (uint64_t)s->r->prompt + s->r->output,
				     &s->seq);
		if (ret == -ENOMEM || ret == -ENOSPC)
			break;
		if (ret)
			return fatal("reserving a sequence", ret);
		s->hit = prefix_attach(sv, s);
		sv->grow[k] = (struct kva_grow){ .seq = s->seq,
						 .tokens = need - s->hit };
		used += need;
		k++;
	}
	for (;;) {
		if (!k)
			return resumed;
		ret = kva_seq_grow_batch(sv->a, sv->grow, k);
		if (ret != -ENOSPC)
			break;
		sv->starved = true;
		/* The last one waits: it goes back as it was. */
		k--;
		kva_seq_free(waiting_at(sv, k)->seq);
		waiting_at(sv, k)->seq = NULL;
		waiting_at(sv, k)->hit = 0;
	}
	if (ret)
		return fatal("growing the admitted sequences", ret);

	for (i = 0; i < k; i++) {
		struct sreq *s = waiting_at(sv, i);

		sv->base[i] = s->seq->base;
		sv->from[i] = s->hit;
		sv->to[i] = s->seq->tokens;
		sv->seqs[i] = s->seq;
		sv->tags[i] = (uint64_t)(s - sv->rq);
	}
	if (sv->cops->batch)
		sv->cops->batch(sv->cstate, sv->seqs, sv->tags, k);
	ret = sv->cops->prefill(sv->cstate, sv->base, sv->from, sv->to, k);
	if (!ret)
		ret = sv->cops->sync(sv->cstate);
	if (ret)
		return fatal("prefill attention", ret);
	for (i = 0; i < k; i++) {
		struct sreq *s = waiting_at(sv, i);

		sv->prompt_tokens += s->seq->tokens - s->hit;
		if (!s->admitted) {
			s->admitted = true;
			sv->first_prompt_tokens += s->r->prompt;
			sv->hit_tokens += s->hit;
		} else {
			sv->recomputed_tokens += s->seq->tokens - s->hit;
		}
		prefix_publish(sv, s);
		if (s->generated >= s->r->output)
			complete(sv, s, elapsed(sv));
		else
			sv->running[sv->nr_running++] = s;
	}
	waiting_pop(sv, k);
	return resumed + (int)k;
}

static void account(struct server *sv)
{
	struct kva_stat st;

	if (kva_stat(sv->a, &st))
		return;
	sv->held_bytes_steps += (double)st.held * (double)st.frame_size;
	sv->filled_bytes_steps += (double)st.my_filled_bytes;
	if (st.held > sv->peak_held)
		sv->peak_held = st.held;
}

/* ---- figures ------------------------------------------------------------ */

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

static double pct_ms(double *v, uint32_t n, double q)
{
	uint64_t rank;

	if (!n)
		return 0;
	rank = (uint64_t)(q * n + 0.999999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1] * 1000.0;
}

static void report(struct server *sv, double secs, bool progress)
{
	const struct options *o = sv->o;
	double tps = secs > 0 ? (double)sv->output_tokens / secs : 0;
	double share = sv->held_bytes_steps > 0 ?
		       sv->filled_bytes_steps / sv->held_bytes_steps : 0;
	double hits = sv->first_prompt_tokens ?
		      (double)sv->hit_tokens /
		      (double)sv->first_prompt_tokens : 0;
	const char *label = o->label ? o->label : "kvserve";

	if (progress) {
		printf("%s: %6.1f s  running %3u  waiting %3u  done %u/%u  preempted %u  %.0f tokens/s\n",
		       label, secs, sv->nr_running, sv->nr_waiting,
		       sv->completed - sv->too_long, o->nr_req,
		       sv->preemptions, tps);
		fflush(stdout);
		return;
	}
	qsort(sv->tpot, sv->nr_tpot, sizeof(double), cmp_double);
	qsort(sv->ttft, sv->nr_ttft, sizeof(double), cmp_double);
	if (o->json) {
		printf("{\"label\":");
		kvt_json_str(stdout, label);
		printf(",\"mode\":\"%s\",\"backend\":\"%s\",\"transport\":\"%s\",\"arena\":",
		       kva_mode_name(sv->info.mode),
		       kva_backend_name(sv->info.backend),
		       kva_transport_name(sv->info.transport));
		kvt_json_str(stdout, sv->info.name);
		printf(",\"compute\":");
		kvt_json_str(stdout, sv->cops->describe(sv->cstate));
		printf(",\"requests\":%u,\"refused\":%u,\"completed\":%u,\"preemptions\":%u",
		       o->nr_req + o->refused, o->refused + sv->too_long,
		       sv->completed - sv->too_long, sv->preemptions);
		printf(",\"output_tokens\":%llu,\"prefilled_tokens\":%llu,\"recomputed_tokens\":%llu",
		       (unsigned long long)sv->output_tokens,
		       (unsigned long long)sv->prompt_tokens,
		       (unsigned long long)sv->recomputed_tokens);
		printf(",\"preempt\":\"%s\",\"swaps\":%u,\"swapped_tokens\":%llu",
		       o->preempt_swap ? "swap" : "recompute", sv->swaps,
		       (unsigned long long)sv->swapped_tokens);
		printf(",\"seconds\":%.3f,\"steps\":%llu,\"waits\":%llu,\"tokens_per_s\":%.1f",
		       secs, (unsigned long long)sv->steps,
		       (unsigned long long)sv->waits, tps);
		printf(",\"tpot_p50_ms\":%.3f,\"tpot_p99_ms\":%.3f,\"ttft_p50_ms\":%.3f,\"ttft_p99_ms\":%.3f",
		       pct_ms(sv->tpot, sv->nr_tpot, 0.5),
		       pct_ms(sv->tpot, sv->nr_tpot, 0.99),
		       pct_ms(sv->ttft, sv->nr_ttft, 0.5),
		       pct_ms(sv->ttft, sv->nr_ttft, 0.99));
		printf(",\"token_share\":%.6f,\"peak_held_frames\":%u,\"frame_size\":%llu,\"tokens_per_frame\":%u",
		       share, sv->peak_held,
		       (unsigned long long)sv->info.frame_size,
		       o->g.tokens_per_frame);
		printf(",\"prefix_sharing\":%s", o->check ? "false" : "true");
		if (o->tp > 1)
			printf(",\"tp\":%u", o->tp);
		if (o->check)
			printf(",\"digest\":\"%016llx\"",
			       (unsigned long long)sv->cops->digest(sv->cstate));
		printf(",\"prefix_hit_tokens\":%llu,\"prefix_hit_share\":%.6f,\"pressure_steps\":%llu}\n",
		       (unsigned long long)sv->hit_tokens, hits,
		       (unsigned long long)sv->pressure_steps);
		return;
	}
	printf("%s: %s arena '%s' (%s; %s, %s), %u frames of %llu bytes, %u tokens each; %s\n",
	       label, kva_mode_name(sv->info.mode), sv->info.name,
	       sv->info.mode_reason ? sv->info.mode_reason : "",
	       kva_backend_name(sv->info.backend),
	       kva_transport_name(sv->info.transport), sv->info.nr_frames,
	       (unsigned long long)sv->info.frame_size, o->g.tokens_per_frame,
	       sv->cops->describe(sv->cstate));
	printf("  requests       %u served of %u (%u refused), %u preemptions\n",
	       sv->completed - sv->too_long, o->nr_req + o->refused,
	       o->refused + sv->too_long, sv->preemptions);
	printf("  tokens         %llu generated in %.1f s: %.0f tokens/s; %llu prefilled (%llu recomputed)",
	       (unsigned long long)sv->output_tokens, secs, tps,
	       (unsigned long long)sv->prompt_tokens,
	       (unsigned long long)sv->recomputed_tokens);
	if (o->preempt_swap)
		printf("; %llu swapped back in (%u swaps)",
		       (unsigned long long)sv->swapped_tokens, sv->swaps);
	putchar('\n');
	printf("  time/token     p50 %.2f ms, p99 %.2f ms; first token p50 %.1f ms, p99 %.1f ms\n",
	       pct_ms(sv->tpot, sv->nr_tpot, 0.5),
	       pct_ms(sv->tpot, sv->nr_tpot, 0.99),
	       pct_ms(sv->ttft, sv->nr_ttft, 0.5),
	       pct_ms(sv->ttft, sv->nr_ttft, 0.99));
	printf("  memory         token share %.4f, peak %u frames held; %llu steps under pressure\n",
	       share, sv->peak_held, (unsigned long long)sv->pressure_steps);
	printf("  prefix hits    %llu of %llu prompt tokens (%.4f)\n",
	       (unsigned long long)sv->hit_tokens,
	       (unsigned long long)sv->first_prompt_tokens, hits);
	if (o->check)
		printf("  check          digest %016llx of every decode output%s\n",
		       (unsigned long long)sv->cops->digest(sv->cstate),
		       o->tp > 1 ? ", over the ranks" : "");
}

/* ---- set-up and the loop ------------------------------------------------ */

static int open_arena(struct server *sv)
{
	const struct options *o = sv->o;
	struct kva_open_opts oo = {
		/* --arena: the device's, or embedded where there is none. */
		.mode = o->arena ? KVA_MODE_AUTO : KVA_MODE_EMBEDDED,
		.name = o->arena,
		.label = o->label ? o->label : "kvserve",
		.min_frames = o->min_frames,
		.max_frames = o->max_frames,
		.nr_frames = o->frames,
		.frame_size = o->g.frame_size,
		.mem_kind = o->backend == COMPUTE_CUDA ? KVA_BACKEND_CUDA :
			    KVA_BACKEND_HOST,
		.flags = KVA_OPEN_POPULATE |
			 (o->private_domain ? KVA_OPEN_PRIVATE : 0),
	};
	int ret = kva_open(&oo, &sv->a);

	if (ret) {
		fprintf(stderr, "%s: opening the arena%s%s: %s%s\n", kvt_prog,
			o->arena ? " " : "", o->arena ? o->arena : "",
			strerror(-ret),
			ret == -ELIBACC ? " (the CUDA driver, libcuda.so.1)" :
			ret == -ENODEV ? " (is kvarena.ko loaded?)" : "");
		return ret;
	}
	kva_arena_info(sv->a, &sv->info);
	if (sv->info.frame_size != o->g.frame_size) {
		fprintf(stderr, "%s: the arena's frames are %llu bytes, the geometry's %llu: give --frame-size %llu\n",
			kvt_prog, (unsigned long long)sv->info.frame_size,
			(unsigned long long)o->g.frame_size,
			(unsigned long long)sv->info.frame_size);
		return -EINVAL;
	}
	sv->pfd = kva_poll_fd(sv->a);
	sv->limit = o->max_frames && o->max_frames < sv->info.nr_frames ?
		    o->max_frames : sv->info.nr_frames;
	return 0;
}

static int alloc_server(struct server *sv)
{
	uint32_t n = sv->o->nr_req ? sv->o->nr_req : 1, i;

	sv->rq = calloc(n, sizeof(*sv->rq));
	sv->waiting = calloc(n, sizeof(*sv->waiting));
	sv->running = calloc(n, sizeof(*sv->running));
	sv->grow = calloc(n, sizeof(*sv->grow));
	sv->base = calloc(n, sizeof(*sv->base));
	sv->from = calloc(n, sizeof(*sv->from));
	sv->to = calloc(n, sizeof(*sv->to));
	sv->tags = calloc(n, sizeof(*sv->tags));
	sv->seqs = calloc(n, sizeof(*sv->seqs));
	sv->tpot = calloc(n, sizeof(*sv->tpot));
	sv->ttft = calloc(n, sizeof(*sv->ttft));
	if (!sv->rq || !sv->waiting || !sv->running || !sv->grow ||
	    !sv->base || !sv->from || !sv->to || !sv->tpot || !sv->ttft ||
	    !sv->tags || !sv->seqs)
		return -ENOMEM;
	for (i = 0; i < sv->o->nr_req; i++)
		sv->rq[i].r = &sv->o->req[i];
	return 0;
}

static void free_server(struct server *sv)
{
	for (uint32_t i = 0; sv->rq && i < sv->o->nr_req; i++)
		free(sv->rq[i].swap);
	free(sv->rq);
	free(sv->waiting);
	free(sv->running);
	free(sv->grow);
	free(sv->base);
	free(sv->from);
	free(sv->to);
	free(sv->tpot);
	free(sv->ttft);
}

/*
 * Nothing runs and nothing could be admitted: sleep until the frames the
 * module refused could be had (POLLOUT), the next request arrives, or a
 * second has passed (for the progress line and --max-seconds).  A refusal
 * that was not for frames (an embedded arena, a reservation that failed)
 * waits a little, never spins.
 */
static void wait_for_frames(struct server *sv, double t)
{
	const struct options *o = sv->o;
	struct pollfd p = { .fd = sv->pfd, .events = POLLOUT };
	double wait = 1;
	int ms;

	if (sv->next < o->nr_req && o->req[sv->next].arrival_s - t < wait)
		wait = o->req[sv->next].arrival_s - t;
	if (o->max_seconds && o->max_seconds - t < wait)
		wait = o->max_seconds - t;
	if (!sv->starved || sv->pfd < 0)
		wait = wait < 0.01 ? wait : 0.01;
	ms = wait > 0 ? (int)(wait * 1000) + 1 : 0;
	sv->waits++;
	if (sv->starved && sv->pfd >= 0)
		poll(&p, 1, ms);
	else if (ms)
		usleep((useconds_t)ms * 1000);
}

int serve(const struct options *o)
{
	struct server sv = { .o = o, .pfd = -1 };
	struct sigaction sa = { .sa_handler = on_signal };
	double last_report = 0;
	uint32_t worked;
	int ret;

	sv.cops = o->tp > 1 ? &compute_tp_ops :
		  o->backend == COMPUTE_CUDA ? compute_cuda_ops :
		  &compute_cpu_ops;
	ret = alloc_server(&sv);
	if (!ret)
		ret = prefix_init(&sv);
	if (ret) {
		fprintf(stderr, "%s: out of memory\n", kvt_prog);
		goto out;
	}
	/* The ranks first: they must not inherit the scheduler's client. */
	if (o->tp > 1 && tp_spawn(o)) {
		ret = 1;
		goto out;
	}
	ret = open_arena(&sv);
	if (ret)
		goto out;
	if (o->tp > 1) {
		ret = tp_hello(sv.a, o->arena);
		if (ret) {
			fatal("starting the ranks", ret);
			goto out_fini;
		}
	}
	ret = sv.cops->init(&sv.cstate, &o->g, o->q_heads, o->threads,
			    o->seed);
	if (!ret && o->check)
		ret = sv.cops->check(sv.cstate, 0, 0);
	if (ret) {
		fatal("setting up the attention", ret);
		goto out_fini;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	sv.t0 = now_s();
	while (sv.completed < o->nr_req && !stop) {
		double t = elapsed(&sv);

		if (o->max_seconds && t >= o->max_seconds)
			break;
		while (sv.next < o->nr_req && o->req[sv.next].arrival_s <= t) {
			struct sreq *s = &sv.rq[sv.next++];

			/* One that could never fit would wait for ever. */
			if (kva_frames_for(&o->g, (uint64_t)s->r->prompt +
					   s->r->output) > sv.limit) {
				sv.too_long++;
				sv.completed++;
				continue;
			}
			waiting_push_back(&sv, s);
		}
		if (!sv.nr_running && !sv.nr_waiting) {
			double wait = sv.next < o->nr_req ?
				      o->req[sv.next].arrival_s - t : 0;
			struct timespec ts;

			if (wait > 0.05)
				wait = 0.05;
			ts.tv_sec = 0;
			ts.tv_nsec = (long)(wait * 1e9);
			nanosleep(&ts, NULL);
			continue;
		}
		worked = sv.nr_running;
		ret = decode(&sv);
		if (ret < 0)
			goto out_fini;
		if (!ret) {
			ret = admit(&sv);
			if (ret < 0)
				goto out_fini;
			worked += (uint32_t)ret;
		}
		if (worked) {
			kva_sync_usage(sv.a);
			account(&sv);
			sv.steps++;
		} else {
			wait_for_frames(&sv, t);
		}
		if (o->report_every && t - last_report >= o->report_every) {
			last_report = t;
			report(&sv, t, true);
		}
	}
	report(&sv, elapsed(&sv), false);
	ret = 0;
out_fini:
	sv.cops->fini(sv.cstate);
	kva_close(sv.a);
out:
	prefix_fini(&sv);
	free_server(&sv);
	return ret ? 1 : 0;
}
