// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl metrics - every arena and client in the Prometheus text
 * exposition format (version 0.0.4), for a node exporter's textfile
 * collector or any scraper that runs a command.
 *
 * One family per metric, every arena's samples under its HELP and TYPE
 * lines.  kvarena_frames{state} partitions the capacity: held + cached +
 * reserved + free + unbacked = nr_frames, so "free" there is the free
 * frames with memory not reserved for clients' unmet minimums.  A gang's
 * member has a sixth state, "ganged": its frames that serve the gang
 * (which STAT counts free, its own figures standing still), and nothing
 * free; kvarena_gang_member_info names each gang's members and ranks.
 */
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "kvarenactl.h"

/* A number read straight out of a struct the module filled. */
struct field_metric {
	const char *name;
	const char *type;
	const char *help;
	size_t off;
	size_t size;		/* 4 or 8 */
	bool zero_unknown;	/* 0 means not known: no sample */
};

#define STAT_FIELD(n, t, h, f) \
	{ n, t, h, offsetof(struct kvarena_stat, f), \
	  sizeof(((struct kvarena_stat *)0)->f), false }
#define STAT_FIELD_KNOWN(n, t, h, f) \
	{ n, t, h, offsetof(struct kvarena_stat, f), \
	  sizeof(((struct kvarena_stat *)0)->f), true }
#define CLIENT_FIELD(n, t, h, f) \
	{ n, t, h, offsetof(struct kvarena_client_info, f), \
	  sizeof(((struct kvarena_client_info *)0)->f), false }

static const struct field_metric arena_metrics[] = {
	STAT_FIELD("kvarena_frame_size_bytes", "gauge",
		   "Bytes per frame.", frame_size),
	STAT_FIELD_KNOWN("kvarena_bytes_per_token", "gauge",
			 "KV bytes per token the arena is sized for; no sample if not given.",
			 bytes_per_token),
	STAT_FIELD("kvarena_backed_frames", "gauge",
		   "Frames with memory registered.", nr_backed),
	STAT_FIELD("kvarena_low_watermark_frames", "gauge",
		   "Pressure threshold: free plus cached frames below it is pressure.",
		   low_watermark),
	STAT_FIELD("kvarena_peak_held_frames", "gauge",
		   "Most frames held at once since the arena was created.",
		   peak_held),
	STAT_FIELD("kvarena_clients", "gauge",
		   "Clients attached.", nr_clients),
	STAT_FIELD("kvarena_filled_bytes", "gauge",
		   "Bytes of held frames holding KV state, as the clients report.",
		   filled_bytes),
	STAT_FIELD("kvarena_filled_tokens", "gauge",
		   "Tokens of KV state held, as the clients report.",
		   filled_tokens),
	STAT_FIELD("kvarena_alloc_calls_total", "counter",
		   "Frame allocation commands.", alloc_calls),
	STAT_FIELD("kvarena_free_calls_total", "counter",
		   "Frame free commands.", free_calls),
	STAT_FIELD("kvarena_alloc_failures_total", "counter",
		   "Frame allocations refused for lack of frames (ENOSPC).",
		   alloc_failures),
	STAT_FIELD("kvarena_frames_allocated_total", "counter",
		   "Frames handed out.", frames_allocated),
	STAT_FIELD("kvarena_frames_freed_total", "counter",
		   "Frames returned, by free or by a client's exit.",
		   frames_freed),
	STAT_FIELD("kvarena_published_frames", "gauge",
		   "Frames under a prefix key, held or cached.", nr_published),
	STAT_FIELD("kvarena_cache_hits_total", "counter",
		   "Prefix keys LOOKUP found.", cache_hits),
	STAT_FIELD("kvarena_cache_misses_total", "counter",
		   "Prefix keys LOOKUP was given and did not return.",
		   cache_misses),
	STAT_FIELD("kvarena_cache_reclaims_total", "counter",
		   "Cached frames reclaimed for allocations.", cache_reclaims),
};

static const struct field_metric client_metrics[] = {
	CLIENT_FIELD("kvarena_client_min_frames", "gauge",
		     "Frames guaranteed to the client.", min_frames),
	CLIENT_FIELD("kvarena_client_max_frames", "gauge",
		     "Most frames the client may hold.", max_frames),
	CLIENT_FIELD("kvarena_client_held_frames", "gauge",
		     "Frames the client holds.", held),
	CLIENT_FIELD("kvarena_client_shared_frames", "gauge",
		     "Frames the client holds that other clients hold too.",
		     shared),
	CLIENT_FIELD("kvarena_client_charged_frames", "gauge",
		     "Frames charged to the client, what its min is measured against.",
		     charged),
	CLIENT_FIELD("kvarena_client_peak_frames", "gauge",
		     "Most frames the client held at once.", peak),
	CLIENT_FIELD("kvarena_client_filled_bytes", "gauge",
		     "Bytes of the client's frames holding KV state, as it reports.",
		     filled_bytes),
	CLIENT_FIELD("kvarena_client_filled_tokens", "gauge",
		     "Tokens of KV state the client holds, as it reports.",
		     filled_tokens),
	CLIENT_FIELD("kvarena_client_alloc_calls_total", "counter",
		     "The client's frame allocation commands.", alloc_calls),
	CLIENT_FIELD("kvarena_client_free_calls_total", "counter",
		     "The client's frame free commands.", free_calls),
	CLIENT_FIELD("kvarena_client_alloc_failures_total", "counter",
		     "The client's allocations refused for lack of frames.",
		     alloc_failures),
	CLIENT_FIELD("kvarena_client_dmem_refused_total", "counter",
		     "The client's allocations refused by its cgroup's dmem.max (also in alloc failures).",
		     dmem_refused),
};

static uint64_t field(const void *base, const struct field_metric *m)
{
	const char *p = (const char *)base + m->off;
	uint32_t v32;
	uint64_t v64;

	if (m->size == 4) {
		memcpy(&v32, p, 4);
		return v32;
	}
	memcpy(&v64, p, 8);
	return v64;
}

/*
 * A label value: backslash, double quote and line feed escaped, as the
 * format wants; bytes that are not UTF-8 become U+FFFD.
 */
static void label_value(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	putc('"', f);
	while (*s) {
		size_t n = kvactl_utf8_len(s);

		if (!n) {
			fputs("\xef\xbf\xbd", f);
			s++;
		} else if (*s == '\\' || *s == '"') {
			fprintf(f, "\\%c", *s++);
		} else if (*s == '\n') {
			fputs("\\n", f);
			s++;
		} else {
			fwrite(s, 1, n, f);
			s += n;
		}
	}
	putc('"', f);
}

static void family(FILE *f, const char *name, const char *type,
		   const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void arena_label(FILE *f, const char *name)
{
	fputs("arena=", f);
	label_value(f, name);
}

static void client_labels(FILE *f, const char *arena,
			  const struct kvarena_client_info *c)
{
	arena_label(f, arena);
	fprintf(f, ",client=\"%u\",label=", c->client_id);
	label_value(f, c->label);
	/* No pid label for a process outside our pid namespace. */
	if (c->pid > 0)
		fprintf(f, ",pid=\"%d\"", c->pid);
}

/*
 * The arenas that may grow, were shrunk or are shrinking: their table,
 * absent and awaited frames, and frames retired.  Families without such
 * an arena are left out, so that fixed arenas read as before.
 */
static void print_resize_metrics(FILE *f, const struct kvactl_snap *snap)
{
	static const struct {
		const char *name, *type, *help;
	} fam[] = {
		{ "kvarena_max_frames", "gauge",
		  "Frames the arena may grow to (resize), its table." },
		{ "kvarena_absent_frames", "gauge",
		  "Frames out of the arena, their memory given back." },
		{ "kvarena_shrinking_frames", "gauge",
		  "Frames a shrink still waits for clients to free." },
		{ "kvarena_frames_retired_total", "counter",
		  "Frames taken out of the arena by shrinks." },
	};
	size_t i, k, any = 0;

	for (i = 0; i < snap->nr; i++)
		any += kvactl_resizable(&snap->arenas[i].st);
	if (!any)
		return;
	for (k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
		family(f, fam[k].name, fam[k].type, fam[k].help);
		for (i = 0; i < snap->nr; i++) {
			const struct kvarena_stat *s = &snap->arenas[i].st;
			const uint64_t v[4] = {
				kvactl_max_frames(s),
				kvactl_max_frames(s) - s->nr_frames,
				s->nr_shrinking, s->frames_retired,
			};

			if (!kvactl_resizable(s))
				continue;
			fprintf(f, "%s{", fam[k].name);
			arena_label(f, s->name);
			fprintf(f, "} %llu\n", (unsigned long long)v[k]);
		}
	}
}

/*
 * Each arena with a lower tier: one sample naming the tier, so that a
 * dashboard can join the two arenas' figures.  Left out where none has.
 */
static void print_tier_metrics(FILE *f, const struct kvactl_snap *snap)
{
	size_t i, any = 0;

	for (i = 0; i < snap->nr; i++)
		any += snap->arenas[i].st.tier == KVARENA_STAT_TIER_LOWER;
	if (!any)
		return;
	family(f, "kvarena_lower_tier_info", "gauge",
	       "An arena's lower tier, where its cached frames go. Always 1.");
	for (i = 0; i < snap->nr; i++) {
		const struct kvarena_stat *s = &snap->arenas[i].st;
		char name[KVARENA_NAME_LEN + 1];

		if (s->tier != KVARENA_STAT_TIER_LOWER)
			continue;
		memcpy(name, s->tier_name, KVARENA_NAME_LEN);
		name[KVARENA_NAME_LEN] = 0;
		fputs("kvarena_lower_tier_info{", f);
		arena_label(f, s->name);
		fputs(",lower=", f);
		label_value(f, name);
		fputs("} 1\n", f);
	}
}

/*
 * Each gang's members, one sample per rank, so that a dashboard can join
 * a gang's figures with its members'.  Left out where there is no gang.
 */
static void print_gang_metrics(FILE *f, const struct kvactl_snap *snap)
{
	size_t i, any = 0;

	for (i = 0; i < snap->nr; i++)
		any += kvactl_is_gang(&snap->arenas[i].gang);
	if (!any)
		return;
	family(f, "kvarena_gang_member_info", "gauge",
	       "A member arena of a gang and its rank; the gang's frame i is frame i of every member. Always 1.");
	for (i = 0; i < snap->nr; i++) {
		const struct kvactl_arena *a = &snap->arenas[i];

		for (uint32_t r = 0; r < a->gang.nr_members; r++) {
			fputs("kvarena_gang_member_info{", f);
			arena_label(f, a->st.name);
			fputs(",member=", f);
			label_value(f, a->gang.members[r]);
			fprintf(f, ",rank=\"%u\"} 1\n", r);
		}
	}
}

static bool same_label(const struct kvarena_client_info *a,
		       const struct kvarena_client_info *b)
{
	return !strncmp(a->label, b->label, sizeof(a->label));
}

/* Client @k is the first of its label in @a: its label's series is made. */
static bool first_of_label(const struct kvactl_arena *a, size_t k)
{
	for (size_t j = 0; j < k; j++)
		if (same_label(&a->clients[j], &a->clients[k]))
			return false;
	return true;
}

static void label_labels(FILE *f, const char *arena,
			 const struct kvarena_client_info *c)
{
	arena_label(f, arena);
	fputs(",label=", f);
	label_value(f, c->label);
}

/*
 * The clients' families summed per (arena, label), and the clients each
 * label has: series that outlive an engine's restart.  A counter of a
 * client that left leaves the sum with it, which Prometheus's rate()
 * takes for a reset.
 */
static void print_label_metrics(FILE *f, const struct kvactl_snap *snap)
{
	size_t i, k, j, m;

	family(f, "kvarena_label_clients", "gauge",
	       "Clients attached under the label (the client figures below are summed over them).");
	for (i = 0; i < snap->nr; i++) {
		const struct kvactl_arena *a = &snap->arenas[i];

		for (k = 0; k < a->nr_clients; k++) {
			uint64_t n = 0;

			if (!first_of_label(a, k))
				continue;
			for (j = k; j < a->nr_clients; j++)
				n += same_label(&a->clients[j], &a->clients[k]);
			fputs("kvarena_label_clients{", f);
			label_labels(f, a->st.name, &a->clients[k]);
			fprintf(f, "} %llu\n", (unsigned long long)n);
		}
	}
	for (m = 0; m < sizeof(client_metrics) / sizeof(client_metrics[0]); m++) {
		const struct field_metric *fm = &client_metrics[m];

		fprintf(f, "# HELP %s %s Summed over the clients of a label.\n# TYPE %s %s\n",
			fm->name, fm->help, fm->name, fm->type);
		for (i = 0; i < snap->nr; i++) {
			const struct kvactl_arena *a = &snap->arenas[i];

			for (k = 0; k < a->nr_clients; k++) {
				uint64_t v = 0;

				if (!first_of_label(a, k))
					continue;
				for (j = k; j < a->nr_clients; j++)
					if (same_label(&a->clients[j], &a->clients[k]))
						v += field(&a->clients[j], fm);
				fprintf(f, "%s{", fm->name);
				label_labels(f, a->st.name, &a->clients[k]);
				fprintf(f, "} %llu\n", (unsigned long long)v);
			}
		}
	}
}

void kvactl_print_metrics(FILE *f, const struct kvactl_snap *snap,
			  bool by_label)
{
	static const char *const states[] = { "held", "cached", "reserved",
					      "free", "unbacked", "ganged" };
	size_t i, m, k;

	family(f, "kvarena_arena_info", "gauge",
	       "An arena: where its frames live. Always 1.");
	for (i = 0; i < snap->nr; i++) {
		const struct kvarena_stat *s = &snap->arenas[i].st;

		fputs("kvarena_arena_info{", f);
		arena_label(f, s->name);
		fprintf(f, ",mem_kind=\"%s\",mem_dev=\"%u\"} 1\n",
			kvactl_mem_kind(s->mem_kind), s->mem_dev);
	}

	family(f, "kvarena_frames", "gauge",
	       "Frames by state; the states add up to the capacity (free excludes reserved and unbacked).");
	for (i = 0; i < snap->nr; i++) {
		const struct kvarena_stat *s = &snap->arenas[i].st;
		uint64_t ganged = kvactl_ganged(s, &snap->arenas[i].gang);
		uint64_t free = kvactl_free(s) - ganged;
		uint64_t reserved = s->nr_reserved < free ? s->nr_reserved : free;
		const uint64_t v[6] = { s->nr_held, s->nr_cached, reserved,
					free - reserved, kvactl_unbacked(s),
					ganged };

		/* "ganged" only for a member: other arenas read as before. */
		for (k = 0; k < (kvactl_is_member(&snap->arenas[i].gang) ? 6u : 5u);
		     k++) {
			fputs("kvarena_frames{", f);
			arena_label(f, s->name);
			fprintf(f, ",state=\"%s\"} %llu\n", states[k],
				(unsigned long long)v[k]);
		}
	}

	for (m = 0; m < sizeof(arena_metrics) / sizeof(arena_metrics[0]); m++) {
		const struct field_metric *fm = &arena_metrics[m];

		family(f, fm->name, fm->type, fm->help);
		for (i = 0; i < snap->nr; i++) {
			uint64_t v = field(&snap->arenas[i].st, fm);

			if (fm->zero_unknown && !v)
				continue;
			fprintf(f, "%s{", fm->name);
			arena_label(f, snap->arenas[i].st.name);
			fprintf(f, "} %llu\n", (unsigned long long)v);
		}
	}

	print_resize_metrics(f, snap);
	print_tier_metrics(f, snap);
	print_gang_metrics(f, snap);

	family(f, "kvarena_pressure", "gauge",
	       "1 while free plus cached frames are below the low watermark.");
	for (i = 0; i < snap->nr; i++) {
		fputs("kvarena_pressure{", f);
		arena_label(f, snap->arenas[i].st.name);
		fprintf(f, "} %d\n",
			!!(snap->arenas[i].st.state & KVARENA_STATE_PRESSURE));
	}

	if (by_label) {
		print_label_metrics(f, snap);
		return;
	}
	for (m = 0; m < sizeof(client_metrics) / sizeof(client_metrics[0]); m++) {
		const struct field_metric *fm = &client_metrics[m];

		family(f, fm->name, fm->type, fm->help);
		for (i = 0; i < snap->nr; i++) {
			const struct kvactl_arena *a = &snap->arenas[i];

			for (k = 0; k < a->nr_clients; k++) {
				fprintf(f, "%s{", fm->name);
				client_labels(f, a->st.name, &a->clients[k]);
				fprintf(f, "} %llu\n", (unsigned long long)
					field(&a->clients[k], fm));
			}
		}
	}
}

int kvactl_cmd_metrics(const struct kvactl_opts *o)
{
	const char *name = o->nargs ? o->args[0] : NULL;
	struct kvactl_snap snap;
	int fd, ret = KVACTL_FAIL;

	fd = kvactl_open(false, o->cmd);
	if (fd < 0)
		return KVACTL_FAIL;
	if (!kvactl_snap_read(fd, o->cmd, name, true, &snap)) {
		kvactl_print_metrics(stdout, &snap, o->by_label);
		kvactl_snap_free(&snap);
		ret = KVACTL_OK;
	}
	close(fd);
	return ret;
}
