/* SPDX-License-Identifier: GPL-2.0 */
/*
 * svg.h - the tools' pictures (kvsim --svg, the main job's run.svg): a
 * page, panels with axes in their own units, polylines and text.
 */
#ifndef KVT_SVG_H
#define KVT_SVG_H

#include <stdio.h>

#define SVG_NR_COLORS	10
extern const char *const svg_colors[SVG_NR_COLORS];

/*
 * A plot area on the page: @left, @top, @width and @height in pixels;
 * the data run from 0 to @xmax and from 0 to @ymax.
 */
struct svg_panel {
	int left, top, width, height;
	double xmax, ymax;
};

/* A round tick step giving about five ticks up to @max. */
double svg_tick(double max);
/* @max rounded up to a whole tick. */
double svg_round_up(double max);

void svg_begin(FILE *f, int width, int height);	/* white page */
void svg_end(FILE *f);
/* @s with '<' and '&' escaped. */
void svg_escape(FILE *f, const char *s);
/* A <text> at (@x, @y) with extra @attrs (may be ""), printf-style. */
void svg_text(FILE *f, double x, double y, const char *attrs,
	      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Page coordinates of a data point. */
double svg_x(const struct svg_panel *p, double x);
double svg_y(const struct svg_panel *p, double y);
/* The panel's frame, grid, tick labels and rotated @ylabel. */
void svg_axes(FILE *f, const struct svg_panel *p, const char *ylabel,
	      double xtick);

/* A polyline: begin, svg_point() for each point (@first for the first), end. */
void svg_polyline_begin(FILE *f, const char *color, double width,
			const char *attrs);
void svg_point(FILE *f, const struct svg_panel *p, double x, double y,
	       int first);
void svg_polyline_end(FILE *f);

/* A legend entry: a short thick line in @color and @label after it. */
void svg_legend(FILE *f, int x, int y, const char *color, const char *attrs,
		const char *label);

#endif /* KVT_SVG_H */
