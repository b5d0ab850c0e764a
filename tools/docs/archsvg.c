// SPDX-License-Identifier: GPL-2.0
/*
 * archsvg - Documentation/architecture.svg, kvarena's parts and what
 * passes between them, drawn from the two tables below.
 *
 *   archsvg > architecture.svg
 *
 * make builds it into $(B)/doc/architecture.svg, and check-docs fails
 * when Documentation/architecture.svg is not what it draws (so the
 * picture in the tree cannot drift from this source).
 */
#include <stdio.h>
#include <string.h>

#include "svg.h"

#define W	980
#define H	640
#define LINE	16		/* text line height */

enum { K_USER, K_KERNEL, K_MEM, K_PEER };

struct box {
	const char *id;
	int x, y, w, h;
	int kind;
	const char *title;
	const char *lines[5];
};

struct arrow {
	const char *from, *to;
	const char *label;
	int both;		/* arrowheads at both ends */
	int dx1, dx2;		/* offsets of the ends along x */
};

static const struct box boxes[] = {
	{ "eng", 30, 70, 300, 150, K_USER, "Serving engines (one process each)",
	  { "llama.cpp (patched), kvserve, Python",
	    "libkvarena: one contiguous virtual KV",
	    "range per sequence; attention kernels",
	    "read it by address arithmetic" } },
	{ "ctl", 360, 70, 260, 150, K_USER, "kvarenactl",
	  { "stat, clients, top, limit, kill",
	    "apply (arenas.conf, kvarena.service)",
	    "exporter (HTTP /metrics)",
	    "events (ZeroMQ), agent, scrub" } },
	{ "plan", 650, 70, 300, 150, K_USER, "Planning",
	  { "kvplan: frames, tokens, sequences",
	    "per GPU", "kvsim: request traces replayed",
	    "against allocation policies" } },
	{ "mod", 30, 290, 920, 130, K_KERNEL, "kvarena.ko  -  /dev/kvarena",
	  { "arenas of equal frames; per client: guaranteed minimum, limit, held, filled",
	    "published prefixes shared across processes (cache domains); pressure; KV events",
	    "a dead process's frames returned; frames charged to the dmem cgroup",
	    "lower tiers, resize, tensor-parallel gangs" } },
	{ "gpu", 30, 490, 300, 110, K_MEM, "GPU memory",
	  { "one cuMemCreate allocation per frame,",
	    "exported to the module, mapped by each",
	    "process with cuMemMap" } },
	{ "host", 360, 490, 260, 110, K_MEM, "Host memory and files",
	  { "memfd frames mapped with mmap;",
	    "a file arena as the lower tier" } },
	{ "peers", 650, 490, 300, 110, K_PEER, "Outside",
	  { "Prometheus: scrapes the exporter",
	    "routers (llm-d, Dynamo): KV events",
	    "cgroups: dmem.max on kvarena/ARENA" } },
};

static const struct arrow arrows[] = {
	{ "eng", "mod", "ioctl, io_uring: ALLOC, FREE, PUBLISH, LOOKUP", 1, 0, -300 },
	{ "ctl", "mod", "STAT, CLIENTS, CREATE, LIMIT, EVENTS", 1, 0, 10 },
	{ "mod", "gpu", "frame handles", 0, -300, 0 },
	{ "mod", "host", "frames, copies", 0, 10, 0 },
	{ "mod", "peers", "", 0, 320, 0 },
};

static const char *const fills[] = {
	[K_USER] = "#eef4fb", [K_KERNEL] = "#fdf1e3", [K_MEM] = "#eef7ee",
	[K_PEER] = "#f3f0f7",
};

static const struct box *find(const char *id)
{
	for (size_t i = 0; i < sizeof(boxes) / sizeof(boxes[0]); i++)
		if (!strcmp(boxes[i].id, id))
			return &boxes[i];
	return NULL;
}

static void draw_box(const struct box *b)
{
	printf("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"8\" fill=\"%s\" stroke=\"#555\"/>\n",
	       b->x, b->y, b->w, b->h, fills[b->kind]);
	svg_text(stdout, b->x + 12, b->y + 24, "font-weight=\"bold\" font-size=\"15\"",
		 "%s", b->title);
	for (int i = 0; i < 5 && b->lines[i]; i++)
		svg_text(stdout, b->x + 12, b->y + 50 + i * LINE,
			 "font-size=\"12.5\"", "%s", b->lines[i]);
}

/* From the bottom of @a to the top of @b, at their centres plus offsets. */
static void draw_arrow(const struct arrow *r)
{
	const struct box *a = find(r->from), *b = find(r->to);
	double x1, y1, x2, y2;

	if (!a || !b)
		return;
	x1 = a->x + a->w / 2.0 + r->dx1;
	y1 = a->y + a->h;
	x2 = b->x + b->w / 2.0 + r->dx2;
	y2 = b->y;
	if (b->y < a->y) {
		y1 = a->y;
		y2 = b->y + b->h;
	}
	printf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"1.6\" marker-end=\"url(#head)\"%s/>\n",
	       x1, y1 + 2, x2, y2 - 2, r->both ? " marker-start=\"url(#tail)\"" : "");
	if (r->label[0])
		svg_text(stdout, (x1 + x2) / 2 + 8, (y1 + y2) / 2 + 4,
			 "font-size=\"12\" font-style=\"italic\"", "%s", r->label);
}

int main(void)
{
	svg_begin(stdout, W, H);
	printf("<defs>\n"
	       "<marker id=\"head\" markerWidth=\"10\" markerHeight=\"8\" refX=\"9\" refY=\"4\" orient=\"auto\"><path d=\"M0,0 L10,4 L0,8 z\" fill=\"#333\"/></marker>\n"
	       "<marker id=\"tail\" markerWidth=\"10\" markerHeight=\"8\" refX=\"1\" refY=\"4\" orient=\"auto\"><path d=\"M10,0 L0,4 L10,8 z\" fill=\"#333\"/></marker>\n"
	       "</defs>\n");
	svg_text(stdout, 30, 40, "font-size=\"20\" font-weight=\"bold\"",
		 "kvarena: several serving processes, one GPU's KV memory");
	svg_text(stdout, W - 30, 40, "font-size=\"12\" text-anchor=\"end\"",
		 "user space above, the kernel in the middle, memory below");
	for (size_t i = 0; i < sizeof(boxes) / sizeof(boxes[0]); i++)
		draw_box(&boxes[i]);
	for (size_t i = 0; i < sizeof(arrows) / sizeof(arrows[0]); i++)
		draw_arrow(&arrows[i]);
	svg_end(stdout);
	return ferror(stdout) ? 1 : 0;
}
