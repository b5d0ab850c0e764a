// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the argument checks of every command
 * (driver/check.c, the very file kvarena.ko is built from) and for the
 * table of who may run which command.
 *
 * The input picks a command and gives its struct's bytes.  The struct
 * lies in a heap block of exactly its size, so ASan catches any read past
 * it (a name or label without a NUL, say).  The result must be what the
 * uapi header (include/uapi/linux/kvarena.h, the spec) says, restated
 * here field by field from the header's words: every reserved field zero,
 * only the flags it defines, names of 1-31 characters of [A-Za-z0-9_.-]
 * not starting with '.', labels NUL-terminated, counts and sizes in their
 * ranges - 0 when all hold, -EINVAL when any does not.  For command
 * numbers: every number the header defines has the struct size, type and
 * direction it should and the permission the header's table gives it,
 * every other number is -ENOTTY, and only the hot commands may run under
 * io_uring's non-blocking issue.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define CLIENTS_MAX	65536u		/* any value: it is passed in */

#define FAIL(...) do {							\
	fprintf(stderr, "fuzz_args: " __VA_ARGS__);			\
	fprintf(stderr, "\n");						\
	abort();							\
} while (0)

/* ---- the spec: reading of the uapi header -------------------------------- */

static bool zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		if (*b++)
			return false;
	return true;
}

/* "1-31 characters of [A-Za-z0-9_.-]" (+ kvarena.rst: not starting with .) */
static bool spec_name(const char *n)
{
	size_t i;

	for (i = 0; i < KVARENA_NAME_LEN && n[i]; i++) {
		unsigned char c = (unsigned char)n[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' ||
		      (c == '.' && i)))
			return false;
	}
	return i >= 1 && i <= KVARENA_NAME_LEN - 1;
}

/* "NUL-terminated within their fixed-size arrays" */
static bool spec_label(const char *l)
{
	return memchr(l, 0, KVARENA_LABEL_LEN) != NULL;
}

#define RSV(s, f)	zero(&(s)->f, sizeof((s)->f))

static bool spec_version(const struct kvarena_version *v)
{
	return RSV(v, reserved0) && RSV(v, reserved);
}

static bool spec_create(const struct kvarena_arena_create *c)
{
	uint64_t fs = c->frame_size;
	bool access = c->flags & KVARENA_CREATE_ACCESS;
	/* "the table (@max_frames, or @nr_frames)" */
	uint32_t table = c->max_frames ? c->max_frames : c->nr_frames;

	return RSV(c, reserved) &&
	       !(c->flags & ~(KVARENA_CREATE_NO_BACKING | KVARENA_CREATE_ACCESS |
			      KVARENA_CREATE_CLEAR_ALWAYS)) &&
	       /* "not with KVARENA_CREATE_NO_BACKING" */
	       (!(c->flags & KVARENA_CREATE_CLEAR_ALWAYS) ||
		!(c->flags & KVARENA_CREATE_NO_BACKING)) &&
	       /* KVARENA_DOMAINS_* */
	       c->cache_domains <= KVARENA_DOMAINS_ARENA &&
	       /* "at most the table" */
	       c->domain_cached_max <= table &&
	       spec_name(c->name) &&
	       /* a power of two, at least max(4096, PAGE_SIZE), at most 1 GiB */
	       fs && !(fs & (fs - 1)) && fs >= KVARENA_MIN_FRAME_SIZE &&
	       fs >= KVA_CHECK_PAGE_SIZE && fs <= KVARENA_MAX_FRAME_SIZE &&
	       c->nr_frames >= 1 && c->nr_frames <= KVARENA_MAX_FRAMES &&
	       /* "@nr_frames..KVARENA_MAX_FRAMES (0: @nr_frames ...)" */
	       (!c->max_frames || (c->max_frames >= c->nr_frames &&
				   c->max_frames <= KVARENA_MAX_FRAMES)) &&
	       (c->mem_kind == KVARENA_MEM_HOST ||
		c->mem_kind == KVARENA_MEM_CUDA ||
		c->mem_kind == KVARENA_MEM_FILE) &&
	       /* "0 for host", "zero for host and file arenas" */
	       (c->mem_kind == KVARENA_MEM_CUDA ||
		(!c->mem_dev && RSV(c, mem_uuid))) &&
	       /* "A file arena takes neither flag", "is not resized" */
	       (c->mem_kind != KVARENA_MEM_FILE ||
		(!(c->flags & (KVARENA_CREATE_NO_BACKING |
			       KVARENA_CREATE_CLEAR_ALWAYS)) &&
		 (!c->max_frames || c->max_frames == c->nr_frames))) &&
	       /* "At most the table" */
	       c->low_watermark <= table &&
	       /* owner and mode only "with KVARENA_CREATE_ACCESS" */
	       (access || (!c->owner_uid && !c->owner_gid && !c->mode));
}

static bool spec_destroy(const struct kvarena_arena_destroy *d)
{
	return !d->flags && RSV(d, reserved0) && RSV(d, reserved) &&
	       spec_name(d->name);
}

/*
 * "@nr_frames: the size to become, 1..the arena's max_frames; 0 with
 * KVARENA_RESIZE_CANCEL" (the table is the command's to check).  A
 * cancel waits for nothing: @timeout_ms 0 with it (check.c's rule).
 */
static bool spec_resize(const struct kvarena_arena_resize *r)
{
	bool cancel = r->flags & KVARENA_RESIZE_CANCEL;

	/* The out fields are not looked at. */
	return !(r->flags & ~KVARENA_RESIZE_CANCEL) && RSV(r, reserved0) &&
	       RSV(r, reserved1) && RSV(r, reserved) && spec_name(r->name) &&
	       (cancel ? !r->nr_frames && !r->timeout_ms : r->nr_frames >= 1);
}

static bool spec_backing(const struct kvarena_set_backing *b)
{
	return !b->flags && RSV(b, reserved) && spec_name(b->name) &&
	       b->nr_frames >= 1 && b->offset % KVA_CHECK_PAGE_SIZE == 0;
}

static bool spec_policy(const struct kvarena_arena_policy *p)
{
	return !p->flags && RSV(p, reserved0) && RSV(p, reserved) &&
	       p->cache_domains <= KVARENA_DOMAINS_ARENA &&
	       spec_name(p->name);
}

static bool spec_attach(const struct kvarena_attach *a)
{
	uint32_t kind = KVARENA_DOMAIN_KIND(a->domain);

	/* Outputs (client_id, nr_frames, ...) are not looked at. */
	if ((a->flags & ~(KVARENA_ATTACH_PRIVATE | KVARENA_ATTACH_DOMAIN)) ||
	    /* "At most one of them." */
	    a->flags == (KVARENA_ATTACH_PRIVATE | KVARENA_ATTACH_DOMAIN) ||
	    !RSV(a, reserved) || !spec_name(a->name) || !spec_label(a->label))
		return false;
	/* "@domain: in: with KVARENA_ATTACH_DOMAIN, ... else zero" */
	if (!(a->flags & KVARENA_ATTACH_DOMAIN))
		return !a->domain;
	/* "of kind UID, GID, ARENA or NAMED"; the arena domain is number 0 */
	if (kind == KVARENA_DOMAIN_KIND_ARENA)
		return !KVARENA_DOMAIN_NR(a->domain);
	return kind == KVARENA_DOMAIN_KIND_UID ||
	       kind == KVARENA_DOMAIN_KIND_GID ||
	       kind == KVARENA_DOMAIN_KIND_NAMED;
}

static bool spec_frames(const struct kvarena_frames *f, uint32_t flags_ok)
{
	return !(f->flags & ~flags_ok) && RSV(f, reserved0) &&
	       RSV(f, reserved) && f->count >= 1 &&
	       f->count <= KVARENA_MAX_BATCH;
}

static bool spec_frame_fd(const struct kvarena_frame_fd *ff)
{
	/* "@access ... Must be zero on input." */
	return !ff->flags && !ff->access && RSV(ff, reserved0) &&
	       RSV(ff, reserved);
}

static bool spec_usage(const struct kvarena_usage *u)
{
	return !u->flags && RSV(u, reserved0) && RSV(u, reserved);
}

static bool spec_stat(const struct kvarena_stat *s)
{
	if (s->flags & ~KVARENA_STAT_BY_INDEX)
		return false;
	/* "@index: in: with KVARENA_STAT_BY_INDEX"; the name otherwise. */
	if (s->flags & KVARENA_STAT_BY_INDEX)
		return true;
	return !s->index && spec_name(s->name);
}

static bool spec_clients(const struct kvarena_clients *c)
{
	return !c->flags && RSV(c, reserved0) && RSV(c, reserved) &&
	       spec_name(c->name) && c->count <= CLIENTS_MAX;
}

static bool spec_limits(const struct kvarena_limits *l)
{
	return !l->flags && RSV(l, reserved) && spec_name(l->name);
}

/*
 * "@flags: PUBLISH: KVARENA_PUBLISH_TOKENS, or zero.  LOOKUP:
 * KVARENA_LOOKUP_LOWER, or zero."  "@tokens_per_entry: with
 * KVARENA_PUBLISH_TOKENS: token ids per entry, 1..KVARENA_EVENT_MAX_TOKENS,
 * at most KVARENA_PUBLISH_MAX_TOKENS in all; otherwise zero."  "@tokens:
 * ... otherwise zero."  "@nr_lower: zero in."  "@reserved: must be zero."
 */
static bool spec_prefix(const struct kvarena_prefix *p, uint32_t flags_ok)
{
	uint64_t ids = (uint64_t)p->count * p->tokens_per_entry;

	if ((p->flags & ~flags_ok) || !RSV(p, nr_lower) || !RSV(p, reserved) ||
	    p->count < 1 || p->count > KVARENA_MAX_BATCH)
		return false;
	if (!(p->flags & KVARENA_PUBLISH_TOKENS))
		return !p->tokens_per_entry && !p->tokens;
	return p->tokens_per_entry >= 1 &&
	       p->tokens_per_entry <= KVARENA_EVENT_MAX_TOKENS &&
	       ids <= KVARENA_PUBLISH_MAX_TOKENS;
}

static bool spec_publish(const struct kvarena_prefix *p)
{
	return spec_prefix(p, KVARENA_PUBLISH_TOKENS);
}

static bool spec_lookup(const struct kvarena_prefix *p)
{
	return spec_prefix(p, KVARENA_LOOKUP_LOWER);
}

static bool spec_events_fd(const struct kvarena_events_fd *e)
{
	/* @fd is an output. */
	return !(e->flags & ~(KVARENA_EVENTS_OLDEST | KVARENA_EVENTS_NONBLOCK)) &&
	       RSV(e, reserved) && spec_name(e->name);
}

static bool spec_evict(const struct kvarena_evict *e)
{
	/* Any client id; nr_frames is an output. */
	return !e->flags && RSV(e, reserved0) && RSV(e, reserved) &&
	       spec_name(e->name);
}

static bool spec_imports_dropped(const struct kvarena_imports_dropped *d)
{
	/* nr_done is an output. */
	return !d->flags && RSV(d, reserved);
}

static bool spec_scrub(const struct kvarena_scrub *sc)
{
	/* "1..KVARENA_MAX_BATCH"; "Must be 0 with KVARENA_SCRUB_DONE". */
	bool done = sc->flags & KVARENA_SCRUB_DONE;

	return !(sc->flags & ~(KVARENA_SCRUB_DONE | KVARENA_SCRUB_ABANDON)) &&
	       /* "KVARENA_SCRUB_DONE | KVARENA_SCRUB_ABANDON" */
	       (done || !(sc->flags & KVARENA_SCRUB_ABANDON)) &&
	       RSV(sc, reserved) && sc->count >= 1 &&
	       sc->count <= KVARENA_MAX_BATCH && (!done || !sc->timeout_ms);
}

/*
 * "@lower: the arena to become its lower tier; an empty name takes the
 * lower tier away."  "@free_target: ... 0: the arena's low watermark"
 * (any value).  "@flags: must be zero."  "@reserved: must be zero."
 * Which arenas may be linked is the command's to check.
 *
 * "An empty name": its first byte is the NUL; what follows it is not
 * read, as for any other name.
 */
static bool spec_set_tier(const struct kvarena_arena_tier *t)
{
	bool empty = !t->lower[0];

	return !t->flags && RSV(t, reserved) && spec_name(t->name) &&
	       (empty || spec_name(t->lower));
}

/*
 * "@count: jobs in the array, 1..KVARENA_MAX_BATCH."  "@flags: 0 to take
 * jobs; KVARENA_TIER_DONE to give back jobs taken before".  "@timeout_ms:
 * ... Must be 0 with KVARENA_TIER_DONE."  "@lower_fd: ... Must be 0 with
 * KVARENA_TIER_DONE."  "@reserved0: must be zero."  "@reserved: must be
 * zero."  A take may wait any time; the fd is the command's to check.
 */
static bool spec_tier(const struct kvarena_tier *t)
{
	bool done = t->flags & KVARENA_TIER_DONE;

	/* @jobs is a pointer, @nr_done an output: not looked at. */
	return !(t->flags & ~KVARENA_TIER_DONE) && RSV(t, reserved0) &&
	       RSV(t, reserved) && t->count >= 1 &&
	       t->count <= KVARENA_MAX_BATCH &&
	       (!done || (!t->timeout_ms && !t->lower_fd));
}

/*
 * "@count: entries, 1..KVARENA_MAX_BATCH."  "@flags: must be zero."
 * "@timeout_ms: how long to wait for the copies, 1..600000 ms."
 * "@reserved: must be zero."
 */
static bool spec_promote(const struct kvarena_promote *p)
{
	/* @entries is a pointer, @nr_done an output: not looked at. */
	return !p->flags && RSV(p, reserved) && p->count >= 1 &&
	       p->count <= KVARENA_MAX_BATCH && p->timeout_ms >= 1 &&
	       p->timeout_ms <= 600000u;
}

/*
 * GANG_CREATE: "@name: the gang's name, an arena name (1-31 characters of
 * [A-Za-z0-9_.-])"; "@members: user pointer to @nr_members arena names"
 * (NULL points to none: check.c refuses it before reading, as it does a
 * count out of range); "@nr_members: 2..KVARENA_GANG_MAX"; "@flags: must
 * be zero."; "@reserved: must be zero."  The member names, and whether
 * they fit, are the command's to read and check.
 */
static bool spec_gang_create(const struct kvarena_gang_create *g)
{
	return !g->flags && RSV(g, reserved) && spec_name(g->name) &&
	       g->members && g->nr_members >= 2 &&
	       g->nr_members <= KVARENA_GANG_MAX;
}

/*
 * GANG_TOKEN: "@flags: in: KVARENA_GANG_RANKS_FATAL"; "@reserved0: must
 * be zero."; "@reserved: must be zero." (and reserved1 with them).
 * @token and @nr_members are outputs: not looked at.
 */
static bool spec_gang_token(const struct kvarena_gang_token *t)
{
	return !(t->flags & ~KVARENA_GANG_RANKS_FATAL) && RSV(t, reserved0) &&
	       RSV(t, reserved1) && RSV(t, reserved);
}

/*
 * JOIN: "@name: the gang" (an arena name); "@label: free-form label of
 * the rank (may be empty)", NUL-terminated as every label; "@rank: the
 * member whose memory this rank maps, 0..members-1", and a gang has
 * KVARENA_GANG_MAX members at most, so a rank past that is no rank of any
 * gang (-EINVAL; one past this gang's members is the command's -ENOENT);
 * "@flags: must be zero."; "@reserved: must be zero."  @client_id and
 * @token may be anything (the command's -ENOENT); @mem_kind, @frame_size,
 * @nr_frames, @mem_dev, @mem_uuid and @member are outputs: not looked at.
 */
static bool spec_join(const struct kvarena_join *j)
{
	return !j->flags && RSV(j, reserved) && spec_name(j->name) &&
	       spec_label(j->label) && j->rank < KVARENA_GANG_MAX;
}

/* ---- commands --------------------------------------------------------- */

struct cmd {
	const char *name;
	uint32_t nr;
	size_t size;
	int need;
	bool nonblock;
	int (*check)(const void *arg);
	bool (*spec)(const void *arg);
};

/* Adapters: each check and spec takes the struct as void *. */
#define ADAPT(name, type, call, spec_call)				\
static int chk_##name(const void *a) { return call((const type *)a); } \
static bool spc_##name(const void *a) { return spec_call((const type *)a); }

static int check_alloc(const struct kvarena_frames *f)
{
	return kva_check_frames(f, KVARENA_ALLOC_PARTIAL);
}

static int check_free(const struct kvarena_frames *f)
{
	return kva_check_frames(f, 0);
}

static bool spec_alloc(const struct kvarena_frames *f)
{
	return spec_frames(f, KVARENA_ALLOC_PARTIAL);
}

static bool spec_free(const struct kvarena_frames *f)
{
	return spec_frames(f, 0);
}

/* With the flags driver/prefix.c passes for each. */
static int check_publish(const struct kvarena_prefix *p)
{
	return kva_check_prefix(p, KVARENA_PUBLISH_TOKENS);
}

static int check_lookup(const struct kvarena_prefix *p)
{
	return kva_check_prefix(p, KVARENA_LOOKUP_LOWER);
}

static int check_clients(const struct kvarena_clients *c)
{
	return kva_check_clients(c, CLIENTS_MAX);
}

ADAPT(version, struct kvarena_version, kva_check_version, spec_version)
ADAPT(create, struct kvarena_arena_create, kva_check_create, spec_create)
ADAPT(destroy, struct kvarena_arena_destroy, kva_check_destroy, spec_destroy)
ADAPT(resize, struct kvarena_arena_resize, kva_check_resize, spec_resize)
ADAPT(backing, struct kvarena_set_backing, kva_check_set_backing, spec_backing)
ADAPT(attach, struct kvarena_attach, kva_check_attach, spec_attach)
ADAPT(alloc, struct kvarena_frames, check_alloc, spec_alloc)
ADAPT(free, struct kvarena_frames, check_free, spec_free)
ADAPT(frame_fd, struct kvarena_frame_fd, kva_check_frame_fd, spec_frame_fd)
ADAPT(usage, struct kvarena_usage, kva_check_usage, spec_usage)
ADAPT(stat, struct kvarena_stat, kva_check_stat, spec_stat)
ADAPT(clients, struct kvarena_clients, check_clients, spec_clients)
ADAPT(limits, struct kvarena_limits, kva_check_limits, spec_limits)
ADAPT(policy, struct kvarena_arena_policy, kva_check_policy, spec_policy)
ADAPT(evict, struct kvarena_evict, kva_check_evict, spec_evict)
ADAPT(scrub, struct kvarena_scrub, kva_check_scrub, spec_scrub)
ADAPT(imports_dropped, struct kvarena_imports_dropped,
      kva_check_imports_dropped, spec_imports_dropped)
ADAPT(publish, struct kvarena_prefix, check_publish, spec_publish)
ADAPT(lookup, struct kvarena_prefix, check_lookup, spec_lookup)
ADAPT(events_fd, struct kvarena_events_fd, kva_check_events_fd, spec_events_fd)
ADAPT(set_tier, struct kvarena_arena_tier, kva_check_set_tier, spec_set_tier)
ADAPT(tier, struct kvarena_tier, kva_check_tier, spec_tier)
ADAPT(promote, struct kvarena_promote, kva_check_promote, spec_promote)
ADAPT(gang_create, struct kvarena_gang_create, kva_check_gang_create,
      spec_gang_create)
ADAPT(gang_token, struct kvarena_gang_token, kva_check_gang_token,
      spec_gang_token)
ADAPT(join, struct kvarena_join, kva_check_join, spec_join)

#define CMD(n, NR, type, need, nb) \
	{ #n, NR, sizeof(type), need, nb, chk_##n, spc_##n }

/* The header's "Who may do what", command by command. */
static const struct cmd cmds[] = {
	CMD(version, KVARENA_IOC_VERSION, struct kvarena_version, KVA_ANYONE, true),
	CMD(create, KVARENA_IOC_ARENA_CREATE, struct kvarena_arena_create, KVA_ADMIN, false),
	CMD(destroy, KVARENA_IOC_ARENA_DESTROY, struct kvarena_arena_destroy, KVA_ADMIN, false),
	CMD(backing, KVARENA_IOC_ARENA_SET_BACKING, struct kvarena_set_backing, KVA_ADMIN, false),
	CMD(attach, KVARENA_IOC_ATTACH, struct kvarena_attach, KVA_WRITER, false),
	CMD(alloc, KVARENA_IOC_ALLOC, struct kvarena_frames, KVA_CLIENT, true),
	CMD(free, KVARENA_IOC_FREE, struct kvarena_frames, KVA_CLIENT, true),
	CMD(frame_fd, KVARENA_IOC_FRAME_FD, struct kvarena_frame_fd, KVA_CLIENT, false),
	CMD(usage, KVARENA_IOC_SET_USAGE, struct kvarena_usage, KVA_CLIENT, true),
	CMD(stat, KVARENA_IOC_STAT, struct kvarena_stat, KVA_ANYONE, false),
	/* "the struct before it (KVARENA_STAT_SIZE_V1 bytes) is still taken" */
	{ "stat_v1", KVARENA_IOC_STAT_V1, KVARENA_STAT_SIZE_V1, KVA_ANYONE, false,
	  chk_stat, spc_stat },
	CMD(clients, KVARENA_IOC_CLIENTS, struct kvarena_clients, KVA_ANYONE, false),
	CMD(limits, KVARENA_IOC_SET_LIMITS, struct kvarena_limits, KVA_ADMIN, false),
	CMD(policy, KVARENA_IOC_ARENA_SET_POLICY, struct kvarena_arena_policy, KVA_ADMIN, false),
	CMD(evict, KVARENA_IOC_EVICT, struct kvarena_evict, KVA_ADMIN, false),
	CMD(publish, KVARENA_IOC_PUBLISH, struct kvarena_prefix, KVA_CLIENT, true),
	CMD(lookup, KVARENA_IOC_LOOKUP, struct kvarena_prefix, KVA_CLIENT, true),
	CMD(events_fd, KVARENA_IOC_EVENTS_FD, struct kvarena_events_fd, KVA_ANYONE, false),
	CMD(scrub, KVARENA_IOC_SCRUB, struct kvarena_scrub, KVA_CLIENT, false),
	CMD(resize, KVARENA_IOC_ARENA_RESIZE, struct kvarena_arena_resize, KVA_ADMIN, false),
	CMD(imports_dropped, KVARENA_IOC_IMPORTS_DROPPED,
	    struct kvarena_imports_dropped, KVA_CLIENT, false),
	/*
	 * Not in the header's table (yet): its structs say "ARENA_SET_TIER,
	 * CAP_SYS_ADMIN"; TIER "a client of the upper arena", "-EPERM ...
	 * over io_uring"; PROMOTE "client", "waits in io_uring's worker"
	 * (so never inline).
	 */
	CMD(set_tier, KVARENA_IOC_ARENA_SET_TIER, struct kvarena_arena_tier,
	    KVA_ADMIN, false),
	CMD(tier, KVARENA_IOC_TIER, struct kvarena_tier, KVA_CLIENT, false),
	CMD(promote, KVARENA_IOC_PROMOTE, struct kvarena_promote, KVA_CLIENT,
	    false),
	/*
	 * Gangs, not in the table either: GANG_CREATE "CAP_SYS_ADMIN";
	 * GANG_TOKEN "client of a gang"; JOIN "O_RDWR opener", a file not
	 * attached yet (it becomes a rank).  None is a hot command.
	 */
	CMD(gang_create, KVARENA_IOC_GANG_CREATE, struct kvarena_gang_create,
	    KVA_ADMIN, false),
	CMD(gang_token, KVARENA_IOC_GANG_TOKEN, struct kvarena_gang_token,
	    KVA_CLIENT, false),
	CMD(join, KVARENA_IOC_JOIN, struct kvarena_join, KVA_WRITER, false),
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void check_struct(const struct cmd *c, const uint8_t *data, size_t size)
{
	/* Exactly the struct's size: a read past it is ASan's to catch. */
	void *arg = malloc(c->size);
	bool want;
	int ret;

	memset(arg, 0, c->size);
	memcpy(arg, data, size < c->size ? size : c->size);
	ret = c->check(arg);
	want = c->spec(arg);
	if (ret != (want ? 0 : -EINVAL))
		FAIL("%s: the check says %d, the header %s", c->name, ret,
		     want ? "0" : "-EINVAL");
	free(arg);
}

static void check_number(uint32_t nr)
{
	const struct cmd *c = NULL;
	unsigned int i;
	int need;

	for (i = 0; i < NCMDS; i++)
		if (cmds[i].nr == nr)
			c = &cmds[i];
	need = kva_cmd_need(nr);
	if (!c) {
		if (need != -ENOTTY || kva_cmd_nonblock(nr))
			FAIL("0x%08x is no command, yet need %d nonblock %d", nr,
			     need, kva_cmd_nonblock(nr));
		return;
	}
	if (need != c->need || kva_cmd_nonblock(nr) != c->nonblock)
		FAIL("%s: need %d nonblock %d, the header says %d %d", c->name,
		     need, kva_cmd_nonblock(nr), c->need, c->nonblock);
	if (_IOC_TYPE(nr) != KVARENA_IOC_MAGIC || _IOC_SIZE(nr) != c->size ||
	    _IOC_DIR(nr) != (_IOC_READ | _IOC_WRITE))
		FAIL("%s: the number 0x%08x does not encode its struct", c->name,
		     nr);
	/* Nothing that sleeps unconditionally, no admin, inline. */
	if (c->nonblock && c->need == KVA_ADMIN)
		FAIL("%s: an admin command would run inline", c->name);
}

static void check_policy_values(const uint8_t *d, size_t size)
{
	uint32_t v[5] = { 0 }, max;
	bool want;
	int ret;

	memcpy(v, d, size < sizeof(v) ? size : sizeof(v));
	/* Small arenas too, so that the orderings come up. */
	if (v[4] & 0x80000000u)
		v[4] &= 0xff;
	ret = kva_check_policy_values(v[0], v[1], v[2], v[3], v[4]);
	/* "0: the arena's size"; limits no larger than it, and in order. */
	max = v[3] ? v[3] : v[4];
	want = !(v[0] & ~KVARENA_MODE_MASK) && v[3] <= v[4] && v[1] <= max &&
	       v[2] <= max;
	if (ret != (want ? 0 : -EINVAL))
		FAIL("policy values mode 0%o min %u default %u limit %u of %u: "
		     "%d", v[0], v[1], v[2], v[3], v[4], ret);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t nr;
	uint8_t sel;

	if (size < 1)
		return 0;
	sel = data[0];
	data++;
	size--;
	if (sel < 0xe0) {
		check_struct(&cmds[sel % NCMDS], data, size);
	} else if (sel < 0xf0) {
		/* A command number: raw, or a known one with one part changed. */
		memcpy(&nr, data, size < 4 ? size : 4);
		if (size < 4)
			nr = cmds[nr % NCMDS].nr;
		check_number(nr);
		check_number(cmds[sel % NCMDS].nr ^ (nr & 0xffff0000u));
	} else {
		check_policy_values(data, size);
	}
	return 0;
}
