// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl apply - the arenas a configuration file lists, made: what
 * kvarena.service runs at boot and on reload.
 *
 *   # /etc/kvarena/arenas.conf
 *   arena llama      --frames 4096 --backend cuda:0 --group kvarena --mode 0660
 *   arena llama-host --frames 16384
 *   tier  llama      --lower llama-host --free-target 128
 *
 * A line is a keyword, an arena's name and options: "arena NAME ..." takes
 * what `kvarenactl create NAME` takes, "tier NAME ..." what `kvarenactl
 * tier NAME` takes; '#' starts a comment, and words are separated by
 * blanks (no quoting).  Every line is read and checked by the command
 * line's own parser (cmdline.c) before anything is done, so a wrong line
 * is named with the same message the command would give, and nothing is
 * made.
 *
 * Then the arenas are compared with those the module has: one of the
 * file's names that exists with the same frame size, frames and memory
 * is kept as it is - its clients go on - and gets the file's policy
 * (owner, group, mode, client limits, cache domains; as `limit NAME`
 * sets it); one that exists otherwise is an error, before anything is
 * made.  The missing ones are made in file order, then the tiers set; if
 * one fails, what this run made is destroyed again, newest first, so a
 * run makes all or nothing.  Arenas the file does not name are left
 * alone, and said.  Exit status 0, 1 (the device or a creation failed;
 * nothing left made), or 2 (the file is wrong; nothing done).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvarenactl.h"

#define MAX_WORDS	64		/* words on a line */
#define MAX_ENTRIES	256		/* lines with an arena or a tier */

struct entry {
	int line;
	bool tier;			/* "tier", else "arena" */
	char *argv[MAX_WORDS + 3];	/* "kvarenactl", the command, words */
	int argc;
	struct kvactl_opts o;
	const struct kvactl_arena *now;	/* the module's arena of the name */
	bool keep;			/* the tier is there already */
	bool made;			/* by this run */
};

struct conf {
	const char *path;
	char *text;			/* the file, cut into words in place */
	struct entry e[MAX_ENTRIES];
	int n;
	int errors;
};

static struct conf *the_conf;
static int err_line;

static void line_err(const char *msg)
{
	fprintf(stderr, KVACTL_PROG ": %s:%d: %s\n", the_conf->path, err_line,
		msg);
	the_conf->errors++;
}

static void conf_err(struct conf *c, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void conf_err(struct conf *c, int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	err_line = line;
	line_err(msg);
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	int ch;

	if (!f) {
		kvactl_err("apply: %s: %s", path, strerror(errno));
		return NULL;
	}
	m = open_memstream(&buf, &len);
	while (m && (ch = getc(f)) != EOF)
		putc(ch, m);
	if (!m || ferror(f) || fclose(m)) {
		kvactl_err("apply: reading %s: %s", path, strerror(errno));
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

/* One line into @e's argv: 0, 1 for a blank line, or -1 (said). */
static int split(struct conf *c, char *s, int line, struct entry *e)
{
	char *words[MAX_WORDS + 1];
	int n = 0;

	for (;;) {
		s += strspn(s, " \t\r");
		if (!*s || *s == '#')
			break;
		if (n == MAX_WORDS + 1) {
			conf_err(c, line, "more than %d words", MAX_WORDS);
			return -1;
		}
		words[n++] = s;
		s += strcspn(s, " \t\r");
		if (*s)
			*s++ = 0;
	}
	if (!n)
		return 1;
	for (int i = 0; i < n; i++) {
		char q[KVACTL_QUOTE_LEN];

		if (strpbrk(words[i], "\"'\\")) {
			conf_err(c, line, "%s: no quoting here (names and options have no blanks)",
				 kvactl_quote(q, words[i]));
			return -1;
		}
		if (!strcmp(words[i], "-h") || !strcmp(words[i], "--help") ||
		    !strcmp(words[i], "-V") || !strcmp(words[i], "--version")) {
			conf_err(c, line, "%s is not an arena's option",
				 words[i]);
			return -1;
		}
	}
	if (strcmp(words[0], "arena") && strcmp(words[0], "tier")) {
		char q[KVACTL_QUOTE_LEN];

		conf_err(c, line, "want \"arena NAME OPTIONS\" or \"tier NAME OPTIONS\", not %s",
			 kvactl_quote(q, words[0]));
		return -1;
	}
	if (n < 2) {
		conf_err(c, line, "%s: no arena name", words[0]);
		return -1;
	}
	if (!strcmp(words[0], "tier")) {
		bool lower = false;

		for (int i = 2; i < n; i++) {
			if (!strcmp(words[i], "--none")) {
				conf_err(c, line, "tier %s --none: leave the line out instead (kvarenactl tier %s --none takes the tier away now)",
					 words[1], words[1]);
				return -1;
			}
			lower |= !strncmp(words[i], "--lower", 7);
		}
		if (!lower) {
			conf_err(c, line, "tier %s: give --lower LOWER", words[1]);
			return -1;
		}
	}
	e->line = line;
	e->tier = !strcmp(words[0], "tier");
	e->argv[0] = KVACTL_PROG;
	e->argv[1] = e->tier ? "tier" : "create";
	for (int i = 1; i < n; i++)
		e->argv[i + 1] = words[i];
	e->argc = n + 1;
	e->argv[e->argc] = NULL;
	return 0;
}

static struct entry *find_arena(struct conf *c, const char *name, int before)
{
	for (int i = 0; i < before; i++)
		if (!c->e[i].tier && !strcmp(c->e[i].o.args[0], name))
			return &c->e[i];
	return NULL;
}

/* Read and check @c->path: every line parsed, names and tiers sound. */
static int parse(struct conf *c)
{
	char *s, *next;
	int line = 0;

	c->text = read_all(c->path);
	if (!c->text)
		return KVACTL_FAIL;
	the_conf = c;
	for (s = c->text; s && *s; s = next) {
		struct entry *e = &c->e[c->n];
		int r;

		line++;
		next = strchr(s, '\n');
		if (next)
			*next++ = 0;
		if (c->n == MAX_ENTRIES) {
			conf_err(c, line, "more than %d arenas and tiers", MAX_ENTRIES);
			break;
		}
		if (split(c, s, line, e))
			continue;
		kvactl_opts_defaults(&e->o);
		err_line = line;
		kvactl_err_hook = line_err;
		r = kvactl_cmdline(e->argc, e->argv, &e->o);
		kvactl_err_hook = NULL;
		if (r >= 0) {
			if (r == KVACTL_OK)	/* not met: help is refused above */
				conf_err(c, line, "not an arena");
			continue;
		}
		if (!e->tier && find_arena(c, e->o.args[0], c->n))
			conf_err(c, line, "arena %s: named on line %d already",
				 e->o.args[0],
				 find_arena(c, e->o.args[0], c->n)->line);
		c->n++;
	}
	for (int i = 0; i < c->n; i++) {
		struct entry *e = &c->e[i];

		for (int j = 0; e->tier && j < i; j++)
			if (c->e[j].tier && !strcmp(c->e[j].o.args[0], e->o.args[0]))
				conf_err(c, e->line, "tier %s: set on line %d already",
					 e->o.args[0], c->e[j].line);
	}
	return c->errors ? KVACTL_USAGE : KVACTL_OK;
}

static const struct kvactl_arena *module_arena(const struct kvactl_snap *snap,
					       const char *name)
{
	for (size_t i = 0; i < snap->nr; i++)
		if (!strncmp(snap->arenas[i].st.name, name, KVARENA_NAME_LEN))
			return &snap->arenas[i];
	return NULL;
}

/* "4096 frames of 2.0Mi, cuda:0" */
static void desc(char *buf, size_t len, uint32_t frames, uint64_t frame_size,
		 uint32_t kind, uint32_t dev)
{
	char sz[KVACTL_NUM_LEN];

	kvactl_fmt_size(sz, frame_size, false);
	if (kind == KVARENA_MEM_CUDA)
		snprintf(buf, len, "%u frames of %s, cuda:%u", frames, sz, dev);
	else
		snprintf(buf, len, "%u frames of %s, %s", frames, sz,
			 kvactl_mem_kind(kind));
}

/* The file's arena @e against the module's @a: 0 if the same, else said. */
static int same_arena(struct conf *c, const struct entry *e,
		      const struct kvactl_arena *a)
{
	const struct kvactl_opts *o = &e->o;
	const struct kvarena_stat *s = &a->st;
	char have[96], want[96];
	uint32_t kind, frames;

	if (o->gang) {
		bool same = a->gang.nr_members == o->nr_members;

		for (uint32_t r = 0; same && r < o->nr_members; r++)
			same = !strncmp(a->gang.members[r], o->members[r],
					KVARENA_NAME_LEN);
		if (same)
			return 0;
		conf_err(c, e->line, "arena %s exists, not as the gang of %s this line makes (kvarenactl destroy %s first)",
			 o->args[0], o->gang, o->args[0]);
		return -1;
	}
	kind = o->cuda ? KVARENA_MEM_CUDA : o->file ? KVARENA_MEM_FILE :
	       KVARENA_MEM_HOST;
	frames = kvactl_given(o, OPT_MAX_FRAMES) ? o->max_frames : o->frames;
	if (!kvactl_is_gang(&a->gang) && s->frame_size == o->frame_size &&
	    kvactl_max_frames(s) == frames && s->mem_kind == kind &&
	    (kind != KVARENA_MEM_CUDA || s->mem_dev == o->cuda_dev))
		return 0;
	if (kvactl_is_gang(&a->gang))
		snprintf(have, sizeof(have), "a gang of %u arenas",
			 a->gang.nr_members);
	else
		desc(have, sizeof(have), kvactl_max_frames(s), s->frame_size,
		     s->mem_kind, s->mem_dev);
	desc(want, sizeof(want), frames, o->frame_size, kind, o->cuda_dev);
	conf_err(c, e->line, "arena %s exists as %s, this line says %s: kvarenactl resize %s, or destroy it, first",
		 o->args[0], have, want, o->args[0]);
	return -1;
}

/* The tier of @e against the module's: 0 to set, 1 if set so, -1 said. */
static int tier_state(struct conf *c, const struct entry *e,
		      const struct kvactl_snap *snap)
{
	const struct kvactl_arena *a = module_arena(snap, e->o.args[0]);
	char lower[KVARENA_NAME_LEN + 1];

	if (!a || a->st.tier != KVARENA_STAT_TIER_LOWER)
		return 0;
	memcpy(lower, a->st.tier_name, KVARENA_NAME_LEN);
	lower[KVARENA_NAME_LEN] = 0;
	if (!strcmp(lower, e->o.lower))
		return 1;
	conf_err(c, e->line, "arena %s has lower tier %s, this line says %s: kvarenactl tier %s --none first",
		 e->o.args[0], lower, e->o.lower, e->o.args[0]);
	return -1;
}

/* Undo what this run made, newest first. */
static void roll_back(struct conf *c)
{
	for (int i = c->n - 1; i >= 0; i--) {
		struct entry *e = &c->e[i];
		struct kvactl_opts o;

		if (!e->made)
			continue;
		kvactl_opts_defaults(&o);
		o.cmd = e->tier ? "tier" : "destroy";
		o.args[0] = e->o.args[0];
		o.nargs = 1;
		if (e->tier) {
			o.tier_none = true;
			kvactl_cmd_tier(&o);
		} else {
			kvactl_cmd_destroy(&o);
		}
	}
}

int kvactl_cmd_apply(const struct kvactl_opts *opts)
{
	struct conf *c = calloc(1, sizeof(*c));
	struct kvactl_snap snap = { 0 };
	int fd, ret, made = 0, kept = 0, tiers = 0;

	if (!c) {
		kvactl_err("apply: out of memory");
		return KVACTL_FAIL;
	}
	c->path = opts->nargs ? opts->args[0] : KVACTL_ARENAS_CONF;
	ret = parse(c);
	if (ret)
		goto out;
	if (opts->check) {
		int nt = 0;

		for (int i = 0; i < c->n; i++)
			nt += c->e[i].tier;
		printf("%s: %d %s, %d %s: ok\n", c->path, c->n - nt,
		       c->n - nt == 1 ? "arena" : "arenas", nt,
		       nt == 1 ? "lower tier" : "lower tiers");
		goto out;
	}

	fd = kvactl_open(true, "apply");
	ret = KVACTL_FAIL;
	if (fd < 0)
		goto out;
	if (kvactl_snap_read(fd, "apply", NULL, false, &snap)) {
		close(fd);
		goto out;
	}
	close(fd);
	for (size_t i = 0; i < snap.nr; i++)
		kvactl_gang_read(snap.arenas[i].st.name, &snap.arenas[i].gang);

	/* What exists must be what the file says, before anything is done. */
	for (int i = 0; i < c->n; i++) {
		struct entry *e = &c->e[i];
		int t;

		if (e->tier) {
			if (!find_arena(c, e->o.args[0], i) &&
			    !module_arena(&snap, e->o.args[0]))
				conf_err(c, e->line, "tier %s: no such arena, here or above",
					 e->o.args[0]);
			t = tier_state(c, e, &snap);
			e->keep = t == 1;
			continue;
		}
		e->now = module_arena(&snap, e->o.args[0]);
		if (e->now)
			same_arena(c, e, e->now);
	}
	if (c->errors) {
		ret = KVACTL_FAIL;
		goto out;
	}

	for (int i = 0; i < c->n; i++) {
		struct entry *e = &c->e[i];
		int r;

		if (e->tier && e->keep) {
			r = KVACTL_OK;
		} else if (e->tier) {
			r = kvactl_cmd_tier(&e->o);
			e->made = !r;
			tiers += !r;
		} else if (e->now) {
			r = kvactl_policy_given(&e->o) ?
			    kvactl_cmd_limit(&e->o) : KVACTL_OK;
			kept++;
		} else {
			r = kvactl_cmd_create(&e->o);
			e->made = !r;
			made += !r;
		}
		if (r) {
			kvactl_err("apply: %s:%d failed: %s",
				   c->path, e->line,
				   made + tiers ? "what this run made is undone" :
				   "nothing was made");
			roll_back(c);
			ret = KVACTL_FAIL;
			goto out;
		}
	}
	for (size_t i = 0; i < snap.nr; i++)
		if (!find_arena(c, snap.arenas[i].st.name, c->n))
			printf("apply: arena %.*s is not in %s: left as it is\n",
			       KVARENA_NAME_LEN, snap.arenas[i].st.name,
			       c->path);
	printf("apply: %s: %d %s made, %d kept, %d %s set\n", c->path,
	       made, made == 1 ? "arena" : "arenas", kept, tiers,
	       tiers == 1 ? "lower tier" : "lower tiers");
	ret = KVACTL_OK;
out:
	kvactl_snap_free(&snap);
	free(c->text);
	free(c);
	return ret;
}
