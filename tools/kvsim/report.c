// SPDX-License-Identifier: GPL-2.0
/*
 * kvsim - the figures: a table, JSON lines, and an SVG of running
 * sequences and memory over time.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kvsim.h"
#include "svg.h"

static const char *layout_word(enum layout l)
{
	return l == LAYOUT_SHARED ? "shared-arena" :
	       l == LAYOUT_NODES ? "nodes" : "static-split";
}

static double steps_per_s(const struct run *r)
{
	return r->wall_s > 0 ? (double)r->total.steps / r->wall_s : 0;
}

/* A table's row: its label, its figures, and the run's speed or 0. */
typedef void row_fn(const char *label, const struct stats *st, double sps);

/* Each run's row, or with @per_engine each engine's and then all's. */
static void rows(const struct run *runs, int nr, int per_engine, row_fn *fn)
{
	char label[64];
	int i, k;

	for (i = 0; i < nr; i++) {
		const struct run *r = &runs[i];

		if (!per_engine) {
			fn(r->pol->name, &r->total, steps_per_s(r));
			continue;
		}
		for (k = 0; k < r->nr_engines; k++) {
			if (r->layout == LAYOUT_NODES)
				snprintf(label, sizeof(label), "%s node %d",
					 r->pol->name, k);
			else
				snprintf(label, sizeof(label), "%s %s e%d",
					 r->pol->name, layout_word(r->layout),
					 k);
			fn(label, &r->eng[k].st, 0);
		}
		if (r->layout == LAYOUT_NODES)
			snprintf(label, sizeof(label), "%s all nodes",
				 r->pol->name);
		else
			snprintf(label, sizeof(label), "%s %s all",
				 r->pol->name, layout_word(r->layout));
		fn(label, &r->total, steps_per_s(r));
	}
}

static void row(const char *label, const struct stats *st, double sps)
{
	printf("%-30s %6.4f %7.1f %5u %9u %7u %7llu %10llu %8.1f %8.1f %6.4f",
	       label, st->token_share, st->mean_running, st->peak_running,
	       st->completed, st->rejected,
	       (unsigned long long)st->preemptions,
	       (unsigned long long)st->recomputed_tokens, st->admit_p50_ms,
	       st->admit_p99_ms, st->prefix_hit_share);
	if (sps > 0)
		printf(" %9.0f", sps);
	putchar('\n');
}

void report_table(const struct run *runs, int nr, int per_engine)
{
	char label[64];
	int i;

	printf("%-30s %6s %13s %9s %7s %7s %10s %17s %6s %9s\n", "",
	       "token", "running", "", "", "", "recomputed", "admission ms",
	       "prefix", "steps/s");
	printf("%-30s %6s %7s %5s %9s %7s %7s %10s %8s %8s %6s\n", "policy",
	       "share", "mean", "peak", "completed", "refused", "preempt",
	       "tokens", "p50", "p99", "hit");
	rows(runs, nr, per_engine, row);
	putchar('\n');
	for (i = 0; i < nr; i++) {
		const struct run *r = &runs[i];

		if (per_engine)
			snprintf(label, sizeof(label), "%s %s:", r->pol->name,
				 layout_word(r->layout));
		else
			snprintf(label, sizeof(label), "%s:", r->pol->name);
		printf("%-30s %llu steps, %.1f s simulated in %.3f s\n", label,
		       (unsigned long long)r->total.steps, r->total.span_s,
		       r->wall_s);
	}
}

/* The hit share the arena itself served: the rest came from below. */
static double arena_share(const struct stats *st)
{
	return st->prefix_hit_share - st->host_hit_share -
	       st->disk_hit_share - st->remote_hit_share;
}

static void tier_row(const char *label, const struct stats *st, double sps)
{
	const double gib = 1024.0 * 1024.0 * 1024.0;

	printf("%-30s %6.4f %6.4f %6.4f %6.4f %11llu %6llu %9llu %10llu %8.1f %8.1f %9.1f %9.1f\n",
	       label, arena_share(st), st->host_hit_share,
	       st->disk_hit_share, st->prefix_hit_share,
	       (unsigned long long)st->computed_tokens,
	       (unsigned long long)st->swaps,
	       (unsigned long long)st->swapped_tokens,
	       (unsigned long long)st->recomputed_tokens,
	       (double)st->copy_bytes / gib, (double)st->disk_bytes / gib,
	       st->ttft_p50_ms, st->ttft_p99_ms);
}

/* ...with the remote tier's share and the bytes fetched from it. */
static void remote_row(const char *label, const struct stats *st, double sps)
{
	const double gib = 1024.0 * 1024.0 * 1024.0;

	printf("%-30s %6.4f %6.4f %6.4f %6.4f %6.4f %11llu %10llu %8.1f %8.1f %8.1f %9.1f %9.1f\n",
	       label, arena_share(st), st->host_hit_share,
	       st->disk_hit_share, st->remote_hit_share, st->prefix_hit_share,
	       (unsigned long long)st->computed_tokens,
	       (unsigned long long)st->recomputed_tokens,
	       (double)st->copy_bytes / gib, (double)st->disk_bytes / gib,
	       (double)st->remote_bytes / gib, st->ttft_p50_ms,
	       st->ttft_p99_ms);
}

/*
 * The second table, with a lower tier or the timing model: where the
 * prompts' cached tokens came from, what was computed, what preempted
 * sequences cost, what moved between the tiers, time to first token.
 */
void report_tiers(const struct run *runs, int nr, int per_engine)
{
	const double gib = 1024.0 * 1024.0 * 1024.0;
	int i;

	for (i = 0; i < nr && !runs[i].has_remote; i++)
		;
	if (i < nr) {
		/* With a remote tier: its share and traffic; swaps aside. */
		printf("\n%-30s %34s %11s %10s %26s %19s\n", "",
		       "prefix hit share", "prefill", "", "copied GiB",
		       "first token ms");
		printf("%-30s %6s %6s %6s %6s %6s %11s %10s %8s %8s %8s %9s %9s\n",
		       "policy", "arena", "host", "disk", "remote", "all",
		       "computed", "recomputed", "host", "disk", "fetched",
		       "p50", "p99");
		rows(runs, nr, per_engine, remote_row);
		for (i = 0; i < nr; i++)
			if (runs[i].has_remote)
				printf("%-30s the remote tier: %.1f GiB written into it, %.1f GiB fetched in %llu round trips\n",
				       runs[i].pol->name,
				       (double)runs[i].remote.written / gib,
				       (double)runs[i].remote.promoted *
				       (double)runs[i].remote.frame_bytes / gib,
				       (unsigned long long)runs[i].remote.fetches);
		return;
	}
	printf("\n%-30s %27s %11s %30s %17s %19s\n", "", "prefix hit share",
	       "prefill", "preempted: swaps, tokens", "copied GiB",
	       "first token ms");
	printf("%-30s %6s %6s %6s %6s %11s %6s %9s %10s %8s %8s %9s %9s\n",
	       "policy", "arena", "host", "disk", "all", "computed", "swaps",
	       "swapped", "recomputed", "host", "disk", "p50", "p99");
	rows(runs, nr, per_engine, tier_row);
}

static void json_obj(const struct run *r, const struct stats *st, int engine,
		     int per_engine)
{
	printf("{\"policy\":");
	kvt_json_str(stdout, r->pol->name);
	if (per_engine) {
		printf(",\"arena\":\"%s\"", layout_word(r->layout));
		if (engine < 0)
			printf(",\"engine\":null");
		else
			printf(",\"engine\":%d", engine);
	}
	printf(",\"token_share\":%.6f,\"mean_running\":%.3f,\"peak_running\":%u",
	       st->token_share, st->mean_running, st->peak_running);
	printf(",\"completed\":%u,\"rejected\":%u,\"preemptions\":%llu,\"recomputed_tokens\":%llu",
	       st->completed, st->rejected,
	       (unsigned long long)st->preemptions,
	       (unsigned long long)st->recomputed_tokens);
	printf(",\"admit_p50_ms\":%.3f,\"admit_p99_ms\":%.3f,\"prefix_hit_share\":%.6f",
	       st->admit_p50_ms, st->admit_p99_ms, st->prefix_hit_share);
	printf(",\"prefix_cache\":%s",
	       r->pol->kind == POL_PAGED || r->pol->kind == POL_KVARENA ?
	       "true" : "false");
	printf(",\"prompt_tokens\":%llu,\"hit_tokens\":%llu",
	       (unsigned long long)st->prompt_tokens,
	       (unsigned long long)st->hit_tokens);
	printf(",\"hit_host_tokens\":%llu,\"host_hit_share\":%.6f",
	       (unsigned long long)st->hit_host_tokens, st->host_hit_share);
	printf(",\"hit_disk_tokens\":%llu,\"disk_hit_share\":%.6f",
	       (unsigned long long)st->hit_disk_tokens, st->disk_hit_share);
	printf(",\"computed_tokens\":%llu,\"swaps\":%llu,\"swapped_tokens\":%llu,\"copy_bytes\":%llu",
	       (unsigned long long)st->computed_tokens,
	       (unsigned long long)st->swaps,
	       (unsigned long long)st->swapped_tokens,
	       (unsigned long long)st->copy_bytes);
	printf(",\"disk_bytes\":%llu", (unsigned long long)st->disk_bytes);
	if (r->has_remote) {
		printf(",\"hit_remote_tokens\":%llu,\"remote_hit_share\":%.6f,\"remote_bytes\":%llu",
		       (unsigned long long)st->hit_remote_tokens,
		       st->remote_hit_share,
		       (unsigned long long)st->remote_bytes);
		if (engine < 0)
			printf(",\"remote_written_bytes\":%llu,\"remote_fetches\":%llu",
			       (unsigned long long)r->remote.written,
			       (unsigned long long)r->remote.fetches);
	}
	printf(",\"ttft_p50_ms\":%.3f,\"ttft_p99_ms\":%.3f,\"busy_s\":%.3f",
	       st->ttft_p50_ms, st->ttft_p99_ms, st->busy_s);
	printf(",\"steps\":%llu,\"simulated_s\":%.3f",
	       (unsigned long long)st->steps, st->span_s);
	if (engine < 0)
		printf(",\"wall_s\":%.3f,\"steps_per_s\":%.0f", r->wall_s,
		       steps_per_s(r));
	printf("}\n");
}

void report_json(const struct run *runs, int nr, int per_engine)
{
	int i, k;

	for (i = 0; i < nr; i++) {
		if (per_engine)
			for (k = 0; k < runs[i].nr_engines; k++)
				json_obj(&runs[i], &runs[i].eng[k].st, k, 1);
		json_obj(&runs[i], &runs[i].total, -1, per_engine);
	}
}

/* ---- SVG ---------------------------------------------------------------- */

#define SVG_W		960
#define SVG_H		600
#define PLOT_L		70
#define PLOT_R		220
#define PANEL_H		210

static void series(FILE *f, const struct run *r, const struct svg_panel *p,
		   int which, const char *color, const char *dash)
{
	double bucket_s = (double)r->cfg->bucket_us / 1e6;
	uint32_t i;

	svg_polyline_begin(f, color, 1.3, dash);
	for (i = 0; i < r->nr_samples; i++) {
		const struct sample *s = &r->samples[i];
		double v = which == 0 ? s->running :
			   which == 1 ? s->held_gib : s->filled_gib;

		svg_point(f, p, (i + 0.5) * bucket_s, v, !i);
	}
	svg_polyline_end(f);
}

int report_svg(const char *path, const struct run *runs, int nr,
	       const char *title)
{
	double run_max = 1, mem_max = 0.001, xmax_s = 1;
	struct svg_panel top = { .left = PLOT_L, .top = 60,
				 .width = SVG_W - PLOT_R - PLOT_L,
				 .height = PANEL_H };
	struct svg_panel bottom = top;
	int i;
	uint32_t j;
	FILE *f;

	for (i = 0; i < nr; i++) {
		const struct run *r = &runs[i];
		double span = r->nr_samples * (double)r->cfg->bucket_us / 1e6;

		if (span > xmax_s)
			xmax_s = span;
		for (j = 0; j < r->nr_samples; j++) {
			if (r->samples[j].running > run_max)
				run_max = r->samples[j].running;
			if (r->samples[j].held_gib > mem_max)
				mem_max = r->samples[j].held_gib;
		}
	}
	top.xmax = bottom.xmax = xmax_s;
	top.ymax = svg_round_up(run_max);
	bottom.ymax = svg_round_up(mem_max);
	bottom.top = top.top + PANEL_H + 60;

	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", kvt_prog, path, strerror(errno));
		return -errno;
	}
	svg_begin(f, SVG_W, SVG_H);
	fprintf(f, "<text x=\"%d\" y=\"24\" font-size=\"15\">kvsim: ", PLOT_L);
	svg_escape(f, title);
	fprintf(f, "</text>\n");
	fprintf(f, "<text x=\"%d\" y=\"%d\">running sequences</text>\n",
		PLOT_L, top.top - 8);
	fprintf(f, "<text x=\"%d\" y=\"%d\">KV memory, GiB: held by sequences (solid), holding tokens (dashed)</text>\n",
		PLOT_L, bottom.top - 8);
	svg_axes(f, &top, "sequences", svg_tick(xmax_s));
	svg_axes(f, &bottom, "GiB", svg_tick(xmax_s));
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time, s</text>\n",
		(SVG_W - PLOT_R + PLOT_L) / 2, bottom.top + PANEL_H + 36);
	for (i = 0; i < nr; i++) {
		const char *c = svg_colors[i % SVG_NR_COLORS];
		char label[64];

		series(f, &runs[i], &top, 0, c, "");
		series(f, &runs[i], &bottom, 1, c, "");
		series(f, &runs[i], &bottom, 2, c,
		       " stroke-dasharray=\"4 3\"");
		if (runs[i].layout == LAYOUT_SINGLE)
			snprintf(label, sizeof(label), "%s", runs[i].pol->name);
		else
			snprintf(label, sizeof(label), "%s %s",
				 runs[i].pol->name, layout_word(runs[i].layout));
		svg_legend(f, SVG_W - PLOT_R + 16, top.top + 10 + 20 * i, c, "",
			   label);
	}
	svg_end(f);
	if (fclose(f)) {
		fprintf(stderr, "%s: %s: %s\n", kvt_prog, path, strerror(errno));
		return -EIO;
	}
	return 0;
}
