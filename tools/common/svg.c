// SPDX-License-Identifier: GPL-2.0
/*
 * svg.c - the few SVG pieces the tools' pictures are made of: a page, a
 * panel with its axes, escaped text, polylines in the panel's units.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "svg.h"

const char *const svg_colors[SVG_NR_COLORS] = {
	"#d62728", "#ff7f0e", "#9467bd", "#1f77b4", "#2ca02c", "#8c564b",
	"#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};

double svg_tick(double max)
{
	double raw = max / 5, p, m;

	if (raw <= 0)
		return 1;
	p = pow(10, floor(log10(raw)));
	m = raw / p;
	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

double svg_round_up(double max)
{
	double t = svg_tick(max);

	return ceil(max / t) * t;
}

void svg_begin(FILE *f, int width, int height)
{
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
		width, height, width, height);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
}

void svg_end(FILE *f)
{
	fprintf(f, "</svg>\n");
}

void svg_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else
			fputc(*s, f);
	}
}

void svg_text(FILE *f, double x, double y, const char *attrs,
	      const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(f, "<text x=\"%g\" y=\"%g\"%s%s>", x, y, *attrs ? " " : "",
		attrs);
	svg_escape(f, buf);
	fprintf(f, "</text>\n");
}

double svg_x(const struct svg_panel *p, double x)
{
	return p->left + x / p->xmax * p->width;
}

double svg_y(const struct svg_panel *p, double y)
{
	return p->top + p->height - y / p->ymax * p->height;
}

void svg_axes(FILE *f, const struct svg_panel *p, const char *ylabel,
	      double xtick)
{
	double ytick = svg_tick(p->ymax), v;
	int x1 = p->left + p->width, bottom = p->top + p->height;

	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n",
		p->left, p->top, p->width, p->height);
	for (v = 0; v <= p->ymax * 1.0001; v += ytick) {
		double y = svg_y(p, v);

		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
			p->left, y, x1, y);
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
			p->left - 6, y + 4, v);
	}
	for (v = 0; v <= p->xmax * 1.0001; v += xtick) {
		double x = svg_x(p, v);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#333\"/>\n",
			x, bottom, x, bottom + 4);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
			x, bottom + 17, v);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" transform=\"rotate(-90 %d %d)\" text-anchor=\"middle\">%s</text>\n",
		18, p->top + p->height / 2, 18, p->top + p->height / 2,
		ylabel);
}

void svg_polyline_begin(FILE *f, const char *color, double width,
			const char *attrs)
{
	fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%g\"%s points=\"",
		color, width, attrs);
}

void svg_point(FILE *f, const struct svg_panel *p, double x, double y,
	       int first)
{
	fprintf(f, "%s%.1f,%.1f", first ? "" : " ", svg_x(p, x), svg_y(p, y));
}

void svg_polyline_end(FILE *f)
{
	fprintf(f, "\"/>\n");
}

void svg_legend(FILE *f, int x, int y, const char *color, const char *attrs,
		const char *label)
{
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"%s/>\n",
		x, y, x + 24, y, color, attrs);
	fprintf(f, "<text x=\"%d\" y=\"%d\">", x + 30, y + 4);
	svg_escape(f, label);
	fprintf(f, "</text>\n");
}
