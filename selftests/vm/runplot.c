// SPDX-License-Identifier: GPL-2.0
/*
 * runplot - the main job's picture: frames held by each process over
 * time, the arena's total, its guarantee and pressure, the kill and the
 * frames coming back, from the timeline main-job.sh leaves in /out:
 *
 *   A FRAMES LOW_WATERMARK MIN        the arena and each one's guarantee
 *   S TIME HELD CACHED FREE PRESSURE  the arena, as kvarenactl top saw it
 *   C TIME LABEL HELD                 one client in that sample
 *   E TIME WHAT [N]                   start, kill LABEL, back N, done
 *
 * TIME is seconds since the VM booted.
 *
 *   runplot TIMELINE SVG
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svg.h"

#define MAX_SAMPLES	100000
#define MAX_LABELS	8
#define LABEL_LEN	64

struct sample {
	double t;
	unsigned int held, cached, free;
	int pressure;
	int client[MAX_LABELS];		/* held, or -1: not attached */
};

struct timeline {
	unsigned int frames, watermark, min;
	struct sample *s;
	unsigned int nr;
	char label[MAX_LABELS][LABEL_LEN];
	unsigned int nr_labels;
	double t_start, t_kill, t_done;
	char killed[LABEL_LEN];
	unsigned int back;
};

/* Labels in order of their names, so that a process keeps its colour. */
static int label_idx(struct timeline *tl, const char *l)
{
	unsigned int i, j, k;

	for (i = 0; i < tl->nr_labels; i++) {
		int c = strcmp(tl->label[i], l);

		if (!c)
			return (int)i;
		if (c > 0)
			break;
	}
	if (tl->nr_labels == MAX_LABELS)
		return -1;
	/* Make room at i, in the labels and in every sample so far. */
	memmove(tl->label[i + 1], tl->label[i],
		(tl->nr_labels - i) * sizeof(tl->label[0]));
	for (j = 0; j < tl->nr; j++)
		for (k = tl->nr_labels; k > i; k--)
			tl->s[j].client[k] = tl->s[j].client[k - 1];
	for (j = 0; j < tl->nr; j++)
		tl->s[j].client[i] = -1;
	snprintf(tl->label[i], LABEL_LEN, "%s", l);
	tl->nr_labels++;
	return (int)i;
}

static int read_timeline(FILE *f, struct timeline *tl)
{
	char line[512], what[LABEL_LEN], arg[LABEL_LEN];
	unsigned int a, b, c, i;
	double t;
	int p;

	while (fgets(line, sizeof(line), f)) {
		struct sample *s = tl->nr ? &tl->s[tl->nr - 1] : NULL;

		if (sscanf(line, "A %u %u %u", &a, &b, &c) == 3) {
			tl->frames = a;
			tl->watermark = b;
			tl->min = c;
		} else if (sscanf(line, "S %lf %u %u %u %d", &t, &a, &b, &c,
				  &p) == 5) {
			if (tl->nr == MAX_SAMPLES)
				return -E2BIG;
			s = &tl->s[tl->nr++];
			*s = (struct sample){ .t = t, .held = a, .cached = b,
					      .free = c, .pressure = p };
			for (i = 0; i < MAX_LABELS; i++)
				s->client[i] = -1;
		} else if (sscanf(line, "C %lf %63s %u", &t, what, &a) == 3) {
			int k = label_idx(tl, what);

			if (s && k >= 0)
				s->client[k] = (int)a;
		} else if (sscanf(line, "E %lf %63s %63s", &t, what, arg) >= 2) {
			if (!strcmp(what, "start")) {
				tl->t_start = t;
			} else if (!strcmp(what, "kill")) {
				tl->t_kill = t;
				snprintf(tl->killed, LABEL_LEN, "%s", arg);
			} else if (!strcmp(what, "back")) {
				tl->back = (unsigned int)strtoul(arg, NULL, 10);
			} else if (!strcmp(what, "done")) {
				tl->t_done = t;
			}
		} else if (line[0] != '\n') {
			return -EINVAL;
		}
	}
	return tl->nr && tl->frames ? 0 : -ENODATA;
}

/* The vertical line of an event at @t, with @text beside it. */
static void mark(FILE *f, const struct svg_panel *p, double t,
		 const char *color, const char *text, int row)
{
	double x = svg_x(p, t);
	/* Past the middle the text goes left of the line. */
	int left = x > p->left + p->width / 2;

	fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"1.5\"/>\n",
		x, p->top, x, p->top + p->height, color);
	svg_text(f, left ? x - 4 : x + 4, p->top + 14 + 14 * row,
		 left ? "text-anchor=\"end\"" : "", "%s", text);
}

static void plot(FILE *f, const struct timeline *tl)
{
	const double t0 = tl->t_start ? tl->t_start : tl->s[0].t;
	struct svg_panel p = { .left = 70, .top = 60, .width = 670,
			       .height = 400 };
	unsigned int i, k;
	int lx = p.left + p.width + 16, ly = p.top + 10;
	char text[128];

	p.xmax = svg_round_up(tl->s[tl->nr - 1].t - t0);
	p.ymax = tl->frames * 1.08;
	svg_begin(f, 960, 520);
	svg_text(f, p.left, 24, "font-size=\"15\"",
		 "kvarena main job: %u processes share one arena of %u frames",
		 tl->nr_labels, tl->frames);
	svg_text(f, p.left, p.top - 8, "",
		 "frames held, as kvarenactl top saw them twice a second");

	/* Under pressure: one band from each sample that saw it start. */
	for (i = 0; i + 1 < tl->nr; i++) {
		unsigned int j = i;
		double x0, x1;

		if (!tl->s[i].pressure)
			continue;
		while (j + 1 < tl->nr && tl->s[j].pressure)
			j++;
		x0 = svg_x(&p, tl->s[i].t - t0);
		x1 = svg_x(&p, tl->s[j].t - t0);
		fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#fde0dc\"/>\n",
			x0, p.top, x1 - x0, p.height);
		i = j;
	}
	svg_axes(f, &p, "frames", svg_tick(p.xmax));
	svg_text(f, p.left + p.width / 2.0, p.top + p.height + 36,
		 "text-anchor=\"middle\"", "time, s");

	/* The arena's size and each process's guarantee. */
	svg_polyline_begin(f, "#333", 1.3, " stroke-dasharray=\"8 4\"");
	svg_point(f, &p, 0, tl->frames, 1);
	svg_point(f, &p, p.xmax, tl->frames, 0);
	svg_polyline_end(f);
	if (tl->min) {
		svg_polyline_begin(f, "#888", 1.3, " stroke-dasharray=\"3 3\"");
		svg_point(f, &p, 0, tl->min, 1);
		svg_point(f, &p, p.xmax, tl->min, 0);
		svg_polyline_end(f);
	}

	/* Held by all, then by each process while it is attached. */
	svg_polyline_begin(f, "#000", 2, "");
	for (i = 0; i < tl->nr; i++)
		svg_point(f, &p, tl->s[i].t - t0, tl->s[i].held, !i);
	svg_polyline_end(f);
	for (k = 0; k < tl->nr_labels; k++) {
		int first = 1, was = 0;

		svg_polyline_begin(f, svg_colors[k % SVG_NR_COLORS], 1.3, "");
		for (i = 0; i < tl->nr; i++) {
			int h = tl->s[i].client[k];

			/* Gone: its frames are no longer its own. */
			if (h < 0 && was) {
				svg_point(f, &p, tl->s[i].t - t0, 0, 0);
				break;
			}
			if (h < 0)
				continue;
			svg_point(f, &p, tl->s[i].t - t0, h, first);
			first = 0;
			was = 1;
		}
		svg_polyline_end(f);
	}

	if (tl->t_kill) {
		snprintf(text, sizeof(text), "SIGKILL %s: %u frames back",
			 tl->killed, tl->back);
		mark(f, &p, tl->t_kill - t0, "#000", text, 0);
	}
	if (tl->t_done)
		mark(f, &p, tl->t_done - t0, "#555", "the others done", 2);

	/* The legend. */
	svg_legend(f, lx, ly, "#000", "", "held, all");
	for (k = 0; k < tl->nr_labels; k++)
		svg_legend(f, lx, ly + 20 * (int)(k + 1),
			   svg_colors[k % SVG_NR_COLORS], "", tl->label[k]);
	ly += 20 * (int)(tl->nr_labels + 1);
	svg_legend(f, lx, ly, "#333", " stroke-dasharray=\"8 4\"",
		   "arena capacity");
	if (tl->min) {
		snprintf(text, sizeof(text), "guaranteed to each (%u)",
			 tl->min);
		svg_legend(f, lx, ly + 20, "#888", " stroke-dasharray=\"3 3\"",
			   text);
	}
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"24\" height=\"12\" fill=\"#fde0dc\"/>\n",
		lx, ly + 34);
	svg_text(f, lx + 30, ly + 44, "", "under pressure:");
	snprintf(text, sizeof(text), "under %u frames left", tl->watermark);
	svg_text(f, lx + 30, ly + 58, "", "%s", text);
	svg_text(f, lx + 30, ly + 72, "", "beyond the guarantees");
	svg_end(f);
}

int main(int argc, char **argv)
{
	struct timeline tl = { 0 };
	FILE *in, *out;
	int ret;

	if (argc != 3) {
		fprintf(stderr, "usage: runplot TIMELINE SVG\n");
		return 2;
	}
	in = fopen(argv[1], "r");
	if (!in) {
		fprintf(stderr, "runplot: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	tl.s = calloc(MAX_SAMPLES, sizeof(*tl.s));
	if (!tl.s)
		return 1;
	ret = read_timeline(in, &tl);
	fclose(in);
	if (ret) {
		fprintf(stderr, "runplot: %s: %s\n", argv[1],
			ret == -ENODATA ? "no samples" :
			ret == -E2BIG ? "too many samples" : "not a timeline");
		return 1;
	}
	out = fopen(argv[2], "w");
	if (!out) {
		fprintf(stderr, "runplot: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	plot(out, &tl);
	if (fclose(out)) {
		fprintf(stderr, "runplot: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	free(tl.s);
	return 0;
}
