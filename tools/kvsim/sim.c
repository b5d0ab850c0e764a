// SPDX-License-Identifier: GPL-2.0
/*
 * kvsim - the step loop.
 *
 * Every engine runs the same step, at the same simulated time t, every
 * step_us (20 ms by default):
 *
 *  1. arrivals: requests whose arrival time is at most t join the back
 *     of the waiting queue (a request that could never fit the engine's
 *     memory is rejected instead);
 *  2. decode: every running sequence, oldest first, grows by one token.
 *     When one cannot, the newest running sequence is preempted - its
 *     memory freed, the request put back at the front of the queue, to be
 *     recomputed - until it can, or until it is itself the newest and is
 *     preempted (vLLM's recompute preemption).  A sequence that reaches
 *     its output length completes and frees its memory;
 *  3. admission: requests are admitted from the front of the queue while
 *     memory (and the prefill token budget, and the running limit)
 *     allow, first come first served: the first that does not fit stops
 *     admission.  An engine that preempted in this step admits nothing
 *     in it (vLLM's rule, which keeps a preempted request from being
 *     readmitted into the memory it just gave up).  An admitted
 *     request's prompt (and, after a preemption, the tokens it had
 *     generated) is prefilled in this step: its KV is held from now on,
 *     less what the prefix cache already holds;
 *  4. figures: running sequences, bytes held by sequences and bytes
 *     holding tokens are added up, once per step, weighted by the
 *     step's time.
 *
 * A step takes step_us, or with the timing model (cost.c) step_us plus
 * the prefill the engines computed in it and the copies between their
 * arenas and lower tiers.  A request's first token comes at the end of
 * the step that admitted it.
 *
 * When no engine has anything running or waiting, time jumps to the next
 * arrival.  The engines take turns going first in each phase, so that
 * none is favoured in a shared arena.
 *
 * Nodes (--nodes, LAYOUT_NODES) are engines on GPUs of their own: each
 * has its own clock and steps at its own pace, its step's time its own
 * prefill and copies.  The node whose clock is earliest takes the next
 * step, so that what one node stores into the remote tier is there for
 * the others from that time on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvsim.h"

static void waiting_push_back(struct engine *e, struct seq *s)
{
	e->waiting[(e->wait_head + e->nr_waiting++) % e->cap_waiting] = s;
}

static void waiting_push_front(struct engine *e, struct seq *s)
{
	e->wait_head = (e->wait_head + e->cap_waiting - 1) % e->cap_waiting;
	e->waiting[e->wait_head] = s;
	e->nr_waiting++;
}

static struct seq *waiting_front(const struct engine *e)
{
	return e->waiting[e->wait_head];
}

static void waiting_pop(struct engine *e)
{
	e->wait_head = (e->wait_head + 1) % e->cap_waiting;
	e->nr_waiting--;
}

static void arrivals(struct engine *e, int64_t t, uint32_t *left)
{
	while (e->next_arrival < e->w->nr &&
	       e->w->req[e->next_arrival].arrival_us <= t) {
		struct seq *s = &e->seqs[e->next_arrival++];

		if (!e->ops->fits(e, s->req)) {
			e->st.rejected++;
			(*left)--;
			continue;
		}
		waiting_push_back(e, s);
	}
}

static void complete(struct engine *e, struct seq *s, uint32_t *left)
{
	e->ops->release(e, s);
	s->tokens = 0;
	e->st.completed++;
	(*left)--;
}

static void preempt(struct engine *e, struct seq *s)
{
	if (e->ops->swap_out)
		e->ops->swap_out(e, s);
	if (s->swapped)
		e->st.swaps++;
	e->ops->release(e, s);
	s->tokens = 0;
	waiting_push_front(e, s);
	e->st.preemptions++;
}

/* Returns whether anything was preempted. */
static bool decode(struct engine *e, uint32_t *left)
{
	uint32_t i, j = 0, n = e->nr_running;
	bool preempted = false;

	for (i = 0; i < n; i++) {
		struct seq *s = e->running[i];
		bool gone = false;

		while (e->ops->grow(e, s)) {
			struct seq *victim = e->running[--n];

			preempt(e, victim);
			preempted = true;
			if (victim == s) {
				gone = true;
				break;
			}
		}
		if (gone)
			break;
		s->tokens++;
		s->generated++;
		if (s->generated >= s->req->output)
			complete(e, s, left);
		else
			e->running[j++] = s;
	}
	e->nr_running = j;
	return preempted;
}

static void admit(struct engine *e, const struct config *cfg, int64_t t,
		  uint32_t *left)
{
	uint64_t used = 0;

	while (e->nr_waiting) {
		struct seq *s = waiting_front(e);
		uint32_t need = s->req->prompt + s->generated;
		uint32_t cached = s->swapped_tokens;
		struct admission a;

		if (cfg->max_seqs && e->nr_running >= cfg->max_seqs)
			break;
		if (cfg->prefill_budget && used &&
		    used + need - cached > cfg->prefill_budget)
			break;
		if (e->ops->admit(e, s, need, &a))
			break;
		waiting_pop(e);
		s->tokens = need;
		if (!s->admitted) {
			s->admitted = true;
			e->first[e->nr_first++] = e->st.nr_delay;
			e->st.ttft_us[e->st.nr_delay] = t - s->req->arrival_us;
			e->st.delay_us[e->st.nr_delay++] =
				t - s->req->arrival_us;
			e->st.prompt_tokens += s->req->prompt;
			e->st.hit_tokens += a.hit;
			e->st.hit_host_tokens += a.hit_host;
			e->st.hit_disk_tokens += a.hit_disk;
			e->st.hit_remote_tokens += a.hit_remote;
		} else {
			e->st.recomputed_tokens += a.compute_to -
						   a.compute_from;
			e->st.swapped_tokens += a.swapped;
		}
		e->st.computed_tokens += a.compute_to - a.compute_from;
		e->step_flops += cost_prefill_flops(cfg, a.compute_from,
						    a.compute_to);
		used += need - a.hit - a.swapped;
		e->ops->prefilled(e, s);
		if (s->generated >= s->req->output)
			complete(e, s, left);
		else
			e->running[e->nr_running++] = s;
	}
}

static uint64_t engine_held_bytes(const struct engine *e)
{
	if (e->pool->ops)
		return e->held_blocks * e->pool->block_bytes;
	return e->held_tokens_resv * e->pool->block_bytes;
}

static uint64_t engine_filled_bytes(const struct engine *e,
				    const struct config *cfg)
{
	if (e->pool->ops)
		return e->filled_tokens * cfg->g.bytes_per_token;
	return e->filled_tokens_resv * cfg->g.bytes_per_token;
}

static uint64_t pool_held_bytes(const struct pool *p)
{
	if (p->ops)
		return p->held_blocks * p->block_bytes;
	return p->used_tokens * p->block_bytes;
}

static uint64_t pool_filled_bytes(const struct run *r, const struct pool *p)
{
	uint64_t tok = 0;
	int i;

	if (p->ops)
		return p->filled_tokens * r->cfg->g.bytes_per_token;
	for (i = 0; i < r->nr_engines; i++)
		if (r->eng[i].pool == p)
			tok += r->eng[i].filled_tokens_resv;
	return tok * r->cfg->g.bytes_per_token;
}

static int sample_add(struct run *r, int64_t t, int64_t dur, double running,
		      double held, double filled)
{
	const double gib = 1024.0 * 1024.0 * 1024.0;
	uint64_t b;
	double w;

	if (!r->cfg->bucket_us)
		return 0;
	b = (uint64_t)t / r->cfg->bucket_us;
	w = (double)dur / (double)r->cfg->bucket_us;
	if (b >= r->nr_samples) {
		uint32_t n = r->nr_samples ? r->nr_samples : 256;
		struct sample *ns;

		while (n <= b)
			n *= 2;
		ns = realloc(r->samples, n * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		memset(ns + r->nr_samples, 0,
		       (n - r->nr_samples) * sizeof(*ns));
		r->samples = ns;
		r->nr_samples = n;
	}
	r->samples[b].running += (float)(running * w);
	r->samples[b].held_gib += (float)(held / gib * w);
	r->samples[b].filled_gib += (float)(filled / gib * w);
	return 0;
}

/* The figures of the step at @t, which took @dur. */
static int account(struct run *r, int64_t t, int64_t dur)
{
	double running = 0, held = 0, filled = 0;
	double w = (double)dur / (double)r->cfg->step_us;
	int i;

	for (i = 0; i < r->nr_engines; i++) {
		struct engine *e = &r->eng[i];

		e->st.steps++;
		e->st.sum_running += e->nr_running * w;
		e->st.sum_held += (double)engine_held_bytes(e) * w;
		e->st.sum_filled += (double)engine_filled_bytes(e, r->cfg) * w;
		if (e->nr_running > e->st.peak_running)
			e->st.peak_running = e->nr_running;
		running += e->nr_running;
	}
	for (i = 0; i < r->nr_pools; i++) {
		held += (double)pool_held_bytes(&r->pools[i]);
		filled += (double)pool_filled_bytes(r, &r->pools[i]);
	}
	r->total.steps++;
	r->total.sum_running += running * w;
	r->total.sum_held += held * w;
	r->total.sum_filled += filled * w;
	if (running > r->total.peak_running)
		r->total.peak_running = (uint32_t)running;
	return sample_add(r, t, dur, running, held, filled);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest value at or above share @q of them. */
static double percentile_ms(const int64_t *v, uint32_t n, double q)
{
	uint64_t rank;

	if (!n)
		return 0;
	rank = (uint64_t)(q * n + 0.999999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return (double)v[rank - 1] / 1000.0;
}

void stats_finish(struct stats *st, double span_s)
{
	qsort(st->delay_us, st->nr_delay, sizeof(*st->delay_us), cmp_i64);
	st->admit_p50_ms = percentile_ms(st->delay_us, st->nr_delay, 0.50);
	st->admit_p99_ms = percentile_ms(st->delay_us, st->nr_delay, 0.99);
	qsort(st->ttft_us, st->nr_delay, sizeof(*st->ttft_us), cmp_i64);
	st->ttft_p50_ms = percentile_ms(st->ttft_us, st->nr_delay, 0.50);
	st->ttft_p99_ms = percentile_ms(st->ttft_us, st->nr_delay, 0.99);
	st->span_s = span_s;
	st->token_share = st->sum_held > 0 ? st->sum_filled / st->sum_held : 0;
	st->prefix_hit_share = st->prompt_tokens ?
		(double)st->hit_tokens / (double)st->prompt_tokens : 0;
	st->host_hit_share = st->prompt_tokens ?
		(double)st->hit_host_tokens / (double)st->prompt_tokens : 0;
	st->disk_hit_share = st->prompt_tokens ?
		(double)st->hit_disk_tokens / (double)st->prompt_tokens : 0;
	st->remote_hit_share = st->prompt_tokens ?
		(double)st->hit_remote_tokens / (double)st->prompt_tokens : 0;
}

static int engine_init(struct engine *e, const struct workload *w)
{
	uint32_t i;

	e->w = w;
	e->seqs = calloc(w->nr ? w->nr : 1, sizeof(*e->seqs));
	e->waiting = calloc(w->nr ? w->nr : 1, sizeof(*e->waiting));
	e->running = calloc(w->nr ? w->nr : 1, sizeof(*e->running));
	e->st.delay_us = calloc(w->nr ? w->nr : 1, sizeof(*e->st.delay_us));
	e->st.ttft_us = calloc(w->nr ? w->nr : 1, sizeof(*e->st.ttft_us));
	e->first = calloc(w->nr ? w->nr : 1, sizeof(*e->first));
	if (!e->seqs || !e->waiting || !e->running || !e->st.delay_us ||
	    !e->st.ttft_us || !e->first)
		return -ENOMEM;
	e->cap_waiting = w->nr ? w->nr : 1;
	for (i = 0; i < w->nr; i++)
		e->seqs[i].req = &w->req[i];
	e->st.rejected = w->rejected;
	return 0;
}

static void engine_fini(struct engine *e)
{
	uint32_t i;

	if (e->seqs)
		for (i = 0; i < e->w->nr; i++) {
			free(e->seqs[i].ids);
			free(e->seqs[i].shared);
		}
	free(e->seqs);
	free(e->waiting);
	free(e->running);
	free(e->st.delay_us);
	free(e->st.ttft_us);
	free(e->first);
	free(e->refs);
	e->seqs = NULL;
	e->waiting = e->running = NULL;
	e->st.delay_us = e->st.ttft_us = NULL;
	e->first = NULL;
	e->refs = NULL;
}

/*
 * What the tiers below @e's pool have moved so far: bytes between the
 * arena and host memory, host memory and the disk, fetched from the
 * remote tier, and the remote tier's round trips.  The step loop charges
 * an engine what they move while it decodes and admits.
 */
struct meter {
	uint64_t copy, disk, net, rtt;
};

static struct meter meter_read(const struct engine *e)
{
	const struct tier *t = e->pool->tier;
	struct meter m = { 0 };

	if (!t)
		return m;
	m.copy = t->copy_bytes;
	if (t->below)
		m.disk = t->below->copy_bytes;
	if (t->remote) {
		m.net = t->remote->copy_bytes;
		m.rtt = t->remote->fetches;
	}
	return m;
}

static void meter_charge(struct engine *e, const struct meter *m0)
{
	struct meter m = meter_read(e);

	e->step_copy += m.copy - m0->copy;
	e->step_disk += m.disk - m0->disk;
	e->step_net += m.net - m0->net;
	e->step_rtt += m.rtt - m0->rtt;
}

/* @e's own step time: its prefill and what its tiers moved. */
static int64_t engine_step_us(const struct config *cfg,
			      const struct engine *e)
{
	return cost_step_us(cfg, e->step_flops, e->step_copy, e->step_disk,
			    e->step_net, e->step_rtt);
}

/* @e's step, which took @dur, is done: its figures; a new step begins. */
static void engine_step_done(struct engine *e, const struct config *cfg,
			     int64_t dur)
{
	uint32_t j;

	for (j = 0; j < e->nr_first; j++)
		e->st.ttft_us[e->first[j]] += dur;
	e->nr_first = 0;
	e->st.copy_bytes += e->step_copy;
	e->st.disk_bytes += e->step_disk;
	e->st.remote_bytes += e->step_net;
	e->st.busy_s += (double)(engine_step_us(cfg, e) - cfg->step_us) /
			1e6;
	e->step_flops = 0;
	e->step_copy = 0;
	e->step_disk = 0;
	e->step_net = 0;
	e->step_rtt = 0;
}

/*
 * The step at @t is done: its time from the engines' prefill and copies;
 * the first tokens of the requests it admitted come at its end.
 */
static int64_t step_end(struct run *r, int64_t t)
{
	const struct config *cfg = r->cfg;
	double flops = 0;
	uint64_t copy = 0, disk = 0, net = 0, rtt = 0;
	int64_t dur;
	int i;

	for (i = 0; i < r->nr_engines; i++) {
		flops += r->eng[i].step_flops;
		copy += r->eng[i].step_copy;
		disk += r->eng[i].step_disk;
		net += r->eng[i].step_net;
		rtt += r->eng[i].step_rtt;
	}
	dur = cost_step_us(cfg, flops, copy, disk, net, rtt);
	for (i = 0; i < r->nr_engines; i++)
		engine_step_done(&r->eng[i], cfg, dur);
	r->total.busy_s += (double)(dur - cfg->step_us) / 1e6;
	return dur;
}

/*
 * The figures of node @e's step at @t, which took @dur: the node's own,
 * added to the run's (its samples weighted by the step's time, as
 * account() does for engines that share a step).
 */
static int account_node(struct run *r, struct engine *e, int64_t t,
			int64_t dur)
{
	double w = (double)dur / (double)r->cfg->step_us;
	double held = (double)engine_held_bytes(e);
	double filled = (double)engine_filled_bytes(e, r->cfg);
	uint32_t now = 0;
	int i;

	/* The nodes' running sequences as of their latest steps. */
	for (i = 0; i < r->nr_engines; i++)
		now += r->eng[i].nr_running;
	if (now > r->total.peak_running)
		r->total.peak_running = now;
	e->st.steps++;
	e->st.sum_running += e->nr_running * w;
	e->st.sum_held += held * w;
	e->st.sum_filled += filled * w;
	if (e->nr_running > e->st.peak_running)
		e->st.peak_running = e->nr_running;
	r->total.steps++;
	r->total.sum_running += e->nr_running * w;
	r->total.sum_held += held * w;
	r->total.sum_filled += filled * w;
	return sample_add(r, t, dur, e->nr_running, held, filled);
}

/*
 * The nodes' loop: the node with the earliest clock steps next.  Returns
 * the time the last request completed, or -ENOMEM.
 */
static int64_t run_nodes(struct run *r)
{
	const struct config *cfg = r->cfg;
	int64_t clock[KVSIM_MAX_ENGINES], last_done = 0;
	uint32_t left[KVSIM_MAX_ENGINES];
	int i, n = r->nr_engines;

	for (i = 0; i < n; i++) {
		left[i] = r->eng[i].w->nr;
		clock[i] = left[i] ? r->eng[i].w->req[0].arrival_us : 0;
	}
	for (;;) {
		struct engine *e;
		struct meter m0;
		uint32_t before;
		int64_t t, dur;
		int k = -1;

		for (i = 0; i < n; i++)
			if (left[i] && (k < 0 || clock[i] < clock[k]))
				k = i;
		if (k < 0)
			break;
		e = &r->eng[k];
		t = clock[k];
		before = left[k];
		arrivals(e, t, &left[k]);
		m0 = meter_read(e);
		e->preempted = decode(e, &left[k]);
		if (!e->preempted)
			admit(e, cfg, t, &left[k]);
		meter_charge(e, &m0);
		dur = engine_step_us(cfg, e);
		r->total.busy_s += (double)(dur - cfg->step_us) / 1e6;
		engine_step_done(e, cfg, dur);
		if (left[k] != before && t + dur > last_done)
			last_done = t + dur;
		if (e->nr_running || e->nr_waiting) {
			if (account_node(r, e, t, dur))
				return -ENOMEM;
			clock[k] = t + dur;
		} else if (left[k]) {
			int64_t next = e->w->req[e->next_arrival].arrival_us;

			clock[k] = next > t ? next : t + cfg->step_us;
		}
	}
	return last_done;
}

/*
 * sim_run() - run @r->pol over @r->nr_engines engines, engine i taking
 * the requests of @w[i]; the pools and engines' ops are set up by the
 * caller.  Returns 0 or -ENOMEM.
 */
int sim_run(struct run *r, const struct workload *w)
{
	int64_t t = 0, step = r->cfg->step_us, last_done = 0;
	uint32_t left = 0, prev_left;
	uint64_t nstep = 0;
	int i, k, n = r->nr_engines, err;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++) {
		err = engine_init(&r->eng[i], &w[i]);
		if (err)
			return err;
		left += w[i].nr;
	}
	if (r->layout == LAYOUT_NODES) {
		last_done = run_nodes(r);
		if (last_done < 0)
			return (int)last_done;
		left = 0;
	}

	while (left) {
		bool busy = false;
		int64_t next = INT64_MAX;

		int64_t dur;

		prev_left = left;
		for (k = 0; k < n; k++)
			arrivals(&r->eng[(nstep + k) % n], t, &left);
		for (k = 0; k < n; k++) {
			struct engine *e = &r->eng[(nstep + k) % n];
			struct meter m0 = meter_read(e);

			e->preempted = decode(e, &left);
			meter_charge(e, &m0);
		}
		for (k = 0; k < n; k++) {
			struct engine *e = &r->eng[(nstep + k) % n];
			struct meter m0 = meter_read(e);

			if (!e->preempted)
				admit(e, r->cfg, t, &left);
			meter_charge(e, &m0);
		}
		dur = step_end(r, t);
		for (i = 0; i < n; i++) {
			struct engine *e = &r->eng[i];

			if (e->nr_running || e->nr_waiting)
				busy = true;
			if (e->next_arrival < e->w->nr &&
			    e->w->req[e->next_arrival].arrival_us < next)
				next = e->w->req[e->next_arrival].arrival_us;
		}
		if (left != prev_left)
			last_done = t + dur;
		if (busy) {
			err = account(r, t, dur);
			if (err)
				return err;
			t += dur;
			nstep++;
		} else if (left) {
			t = next > t ? next : t + step;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r->wall_s = (double)(t1.tv_sec - t0.tv_sec) +
		    (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;

	/* Figures: per engine, then all engines together. */
	for (i = 0; i < n; i++) {
		struct engine *e = &r->eng[i];
		struct stats *st = &e->st, *tot = &r->total;

		tot->completed += st->completed;
		tot->rejected += st->rejected;
		tot->preemptions += st->preemptions;
		tot->recomputed_tokens += st->recomputed_tokens;
		tot->prompt_tokens += st->prompt_tokens;
		tot->hit_tokens += st->hit_tokens;
		tot->hit_host_tokens += st->hit_host_tokens;
		tot->hit_disk_tokens += st->hit_disk_tokens;
		tot->hit_remote_tokens += st->hit_remote_tokens;
		tot->computed_tokens += st->computed_tokens;
		tot->swaps += st->swaps;
		tot->swapped_tokens += st->swapped_tokens;
		tot->copy_bytes += st->copy_bytes;
		tot->disk_bytes += st->disk_bytes;
		tot->remote_bytes += st->remote_bytes;
		tot->nr_delay += st->nr_delay;
	}
	r->total.delay_us = malloc((r->total.nr_delay ? r->total.nr_delay : 1) *
				   sizeof(int64_t));
	r->total.ttft_us = malloc((r->total.nr_delay ? r->total.nr_delay : 1) *
				  sizeof(int64_t));
	if (!r->total.delay_us || !r->total.ttft_us)
		return -ENOMEM;
	r->total.nr_delay = 0;
	for (i = 0; i < n; i++) {
		struct stats *st = &r->eng[i].st;

		memcpy(r->total.delay_us + r->total.nr_delay, st->delay_us,
		       st->nr_delay * sizeof(int64_t));
		memcpy(r->total.ttft_us + r->total.nr_delay, st->ttft_us,
		       st->nr_delay * sizeof(int64_t));
		r->total.nr_delay += st->nr_delay;
		st->mean_running = last_done ?
			st->sum_running * (double)step / (double)last_done : 0;
		stats_finish(st, (double)last_done / 1e6);
	}
	r->total.mean_running = last_done ?
		r->total.sum_running * (double)step / (double)last_done : 0;
	stats_finish(&r->total, (double)last_done / 1e6);
	if (r->nr_samples) {
		uint32_t used = (uint32_t)((uint64_t)last_done /
					   r->cfg->bucket_us) + 1;

		if (used < r->nr_samples)
			r->nr_samples = used;
	}
	return 0;
}

void sim_free(struct run *r)
{
	int i;

	for (i = 0; i < r->nr_engines; i++)
		engine_fini(&r->eng[i]);
	for (i = 0; i < r->nr_pools; i++) {
		struct pool *p = &r->pools[i];

		if (p->ops && p->ops->fini)
			p->ops->fini(p);
		bpool_common_fini(p);
	}
	if (r->has_remote)
		tier_fini(&r->remote);
	r->has_remote = false;
	free(r->total.delay_us);
	free(r->total.ttft_us);
	free(r->samples);
	r->total.delay_us = NULL;
	r->total.ttft_us = NULL;
	r->samples = NULL;
}
