// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * kvarena: the argument checks of every command - see check.h.  Built
 * into kvarena.ko and, unchanged, into the native fuzz target.
 */
#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/string.h>
#else
#include <errno.h>
#include <string.h>
#endif

#include "check.h"

/**
 * kva_cmd_need() - who may run @cmd.
 * @cmd:	a command number, not trusted.
 *
 * Return: enum kva_need, or -ENOTTY for a number no command has (another
 * struct size, direction or type is another number).
 */
int kva_cmd_need(unsigned int cmd)
{
	switch (cmd) {
	case KVARENA_IOC_VERSION:
	case KVARENA_IOC_STAT:
	case KVARENA_IOC_STAT_V1:
	case KVARENA_IOC_CLIENTS:
	case KVARENA_IOC_EVENTS_FD:
		return KVA_ANYONE;
	case KVARENA_IOC_ATTACH:
	case KVARENA_IOC_JOIN:
		return KVA_WRITER;
	case KVARENA_IOC_ARENA_CREATE:
	case KVARENA_IOC_ARENA_DESTROY:
	case KVARENA_IOC_ARENA_SET_BACKING:
	case KVARENA_IOC_ARENA_SET_POLICY:
	case KVARENA_IOC_ARENA_RESIZE:
	case KVARENA_IOC_ARENA_SET_TIER:
	case KVARENA_IOC_SET_LIMITS:
	case KVARENA_IOC_EVICT:
	case KVARENA_IOC_GANG_CREATE:
		return KVA_ADMIN;
	case KVARENA_IOC_ALLOC:
	case KVARENA_IOC_FREE:
	case KVARENA_IOC_FRAME_FD:
	case KVARENA_IOC_SET_USAGE:
	case KVARENA_IOC_PUBLISH:
	case KVARENA_IOC_LOOKUP:
	case KVARENA_IOC_SCRUB:
	case KVARENA_IOC_IMPORTS_DROPPED:
	case KVARENA_IOC_TIER:
	case KVARENA_IOC_PROMOTE:
	case KVARENA_IOC_GANG_TOKEN:
		return KVA_CLIENT;
	default:
		return -ENOTTY;
	}
}

/**
 * kva_cmd_nonblock() - may @cmd run under io_uring's non-blocking issue?
 * @cmd:	a command number.
 *
 * The hot commands are written to take no sleeping lock, allocate nothing
 * that sleeps and touch user memory only with page faults disabled.  The
 * others sleep (an fd to install, a table to allocate, kva_arenas_lock)
 * and go to io_uring's worker at once.
 *
 * Return: true for those that may.
 */
bool kva_cmd_nonblock(unsigned int cmd)
{
	switch (cmd) {
	case KVARENA_IOC_VERSION:
	case KVARENA_IOC_ALLOC:
	case KVARENA_IOC_FREE:
	case KVARENA_IOC_SET_USAGE:
	case KVARENA_IOC_PUBLISH:
	case KVARENA_IOC_LOOKUP:
		return true;
	}
	return false;
}

static bool all_zero(const void *p, size_t size)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < size; i++)
		if (b[i])
			return false;
	return true;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/**
 * kva_name_valid() - check an arena name from userspace.
 * @name:	KVARENA_NAME_LEN bytes.
 *
 * Valid names are 1-31 characters of [A-Za-z0-9_.-], NUL-terminated
 * within KVARENA_NAME_LEN, not starting with '.'.
 *
 * Return: 0 or -EINVAL.
 */
int kva_name_valid(const char *name)
{
	size_t len = strnlen(name, KVARENA_NAME_LEN), i;

	if (!len || len == KVARENA_NAME_LEN || name[0] == '.')
		return -EINVAL;
	for (i = 0; i < len; i++)
		if (!name_char(name[i]))
			return -EINVAL;
	return 0;
}

static bool power_of_2(u64 n)
{
	return n && !(n & (n - 1));
}

int kva_check_version(const struct kvarena_version *v)
{
	if (v->reserved0 || !all_zero(v->reserved, sizeof(v->reserved)))
		return -EINVAL;
	return 0;
}

int kva_check_create(const struct kvarena_arena_create *c)
{
	u32 table;

	if ((c->flags & ~(KVARENA_CREATE_NO_BACKING | KVARENA_CREATE_ACCESS |
			  KVARENA_CREATE_CLEAR_ALWAYS)) ||
	    c->cache_domains > KVARENA_DOMAINS_ARENA ||
	    !all_zero(c->reserved, sizeof(c->reserved)))
		return -EINVAL;
	/* Frames with no memory behind them have nothing to clear. */
	if ((c->flags & KVARENA_CREATE_CLEAR_ALWAYS) &&
	    (c->flags & KVARENA_CREATE_NO_BACKING))
		return -EINVAL;
	if (!(c->flags & KVARENA_CREATE_ACCESS) &&
	    (c->owner_uid || c->owner_gid || c->mode))
		return -EINVAL;
	if (kva_name_valid(c->name))
		return -EINVAL;
	if (!power_of_2(c->frame_size) || c->frame_size < KVA_CHECK_PAGE_SIZE ||
	    c->frame_size < KVARENA_MIN_FRAME_SIZE ||
	    c->frame_size > KVARENA_MAX_FRAME_SIZE)
		return -EINVAL;
	if (!c->nr_frames || c->nr_frames > KVARENA_MAX_FRAMES)
		return -EINVAL;
	if (c->max_frames &&
	    (c->max_frames < c->nr_frames || c->max_frames > KVARENA_MAX_FRAMES))
		return -EINVAL;
	if (c->mem_kind != KVARENA_MEM_HOST &&
	    c->mem_kind != KVARENA_MEM_CUDA && c->mem_kind != KVARENA_MEM_FILE)
		return -EINVAL;
	if (c->mem_kind != KVARENA_MEM_CUDA &&
	    (c->mem_dev || !all_zero(c->mem_uuid, sizeof(c->mem_uuid))))
		return -EINVAL;
	/* A file arena is a tier on a disk: backed, never cleared or resized. */
	if (c->mem_kind == KVARENA_MEM_FILE &&
	    ((c->flags & (KVARENA_CREATE_NO_BACKING |
			  KVARENA_CREATE_CLEAR_ALWAYS)) ||
	     (c->max_frames && c->max_frames != c->nr_frames)))
		return -EINVAL;
	/* Limits in frames are against the most the arena may become. */
	table = c->max_frames ? c->max_frames : c->nr_frames;
	if (c->low_watermark > table || c->domain_cached_max > table)
		return -EINVAL;
	return 0;
}

/* The size against the arena's table is the command's to check. */
int kva_check_resize(const struct kvarena_arena_resize *r)
{
	if ((r->flags & ~KVARENA_RESIZE_CANCEL) || r->reserved0 ||
	    r->reserved1 || !all_zero(r->reserved, sizeof(r->reserved)) ||
	    kva_name_valid(r->name))
		return -EINVAL;
	if (r->flags & KVARENA_RESIZE_CANCEL ?
	    r->nr_frames || r->timeout_ms : !r->nr_frames)
		return -EINVAL;
	return 0;
}

int kva_check_destroy(const struct kvarena_arena_destroy *d)
{
	if (d->flags || d->reserved0 ||
	    !all_zero(d->reserved, sizeof(d->reserved)) ||
	    kva_name_valid(d->name))
		return -EINVAL;
	return 0;
}

/* The range against the arena's size is the command's to check. */
int kva_check_set_backing(const struct kvarena_set_backing *b)
{
	if (b->flags || !all_zero(b->reserved, sizeof(b->reserved)) ||
	    kva_name_valid(b->name) || !b->nr_frames ||
	    b->offset % KVA_CHECK_PAGE_SIZE)
		return -EINVAL;
	return 0;
}

int kva_check_policy(const struct kvarena_arena_policy *p)
{
	if (p->flags || p->cache_domains > KVARENA_DOMAINS_ARENA ||
	    p->reserved0 || !all_zero(p->reserved, sizeof(p->reserved)) ||
	    kva_name_valid(p->name))
		return -EINVAL;
	return 0;
}

/**
 * kva_check_policy_values() - the parts of an arena policy that need no
 * user namespace: the mode bits and the client limits of an arena of
 * @nr_frames frames.
 * @mode:	KVARENA_ACC_* bits.
 * @min_limit:	client_min_limit.
 * @max_default: client_max_default.
 * @max_limit:	client_max_limit (0: the arena's size).
 * @nr_frames:	the arena's size.
 *
 * Return: 0, or -EINVAL for mode bits outside KVARENA_MODE_MASK or limits
 * larger than the arena or out of order.
 */
int kva_check_policy_values(u32 mode, u32 min_limit, u32 max_default,
			    u32 max_limit, u32 nr_frames)
{
	u32 max = max_limit ? max_limit : nr_frames;

	if (mode & ~KVARENA_MODE_MASK)
		return -EINVAL;
	if (max_limit > nr_frames || min_limit > max || max_default > max)
		return -EINVAL;
	return 0;
}

/* The member names are the command's to read and check. */
int kva_check_gang_create(const struct kvarena_gang_create *g)
{
	if (g->flags || !all_zero(g->reserved, sizeof(g->reserved)) ||
	    kva_name_valid(g->name) || !g->members ||
	    g->nr_members < 2 || g->nr_members > KVARENA_GANG_MAX)
		return -EINVAL;
	return 0;
}

int kva_check_gang_token(const struct kvarena_gang_token *t)
{
	if ((t->flags & ~KVARENA_GANG_RANKS_FATAL) || t->reserved0 ||
	    t->reserved1 || !all_zero(t->reserved, sizeof(t->reserved)))
		return -EINVAL;
	return 0;
}

/* Only the inputs: the out fields are written over. */
int kva_check_join(const struct kvarena_join *j)
{
	if (j->flags || !all_zero(j->reserved, sizeof(j->reserved)) ||
	    kva_name_valid(j->name) ||
	    strnlen(j->label, KVARENA_LABEL_LEN) == KVARENA_LABEL_LEN ||
	    j->rank >= KVARENA_GANG_MAX)
		return -EINVAL;
	return 0;
}

int kva_check_attach(const struct kvarena_attach *a)
{
	u32 kind = KVARENA_DOMAIN_KIND(a->domain);

	if ((a->flags & ~(KVARENA_ATTACH_PRIVATE | KVARENA_ATTACH_DOMAIN)) ||
	    a->flags == (KVARENA_ATTACH_PRIVATE | KVARENA_ATTACH_DOMAIN) ||
	    !all_zero(a->reserved, sizeof(a->reserved)) ||
	    kva_name_valid(a->name) ||
	    strnlen(a->label, KVARENA_LABEL_LEN) == KVARENA_LABEL_LEN)
		return -EINVAL;
	/*
	 * A domain to join is named only with ATTACH_DOMAIN, and a private
	 * one is nobody's to join.
	 */
	if (!(a->flags & KVARENA_ATTACH_DOMAIN))
		return a->domain ? -EINVAL : 0;
	if (kind != KVARENA_DOMAIN_KIND_UID && kind != KVARENA_DOMAIN_KIND_GID &&
	    kind != KVARENA_DOMAIN_KIND_ARENA && kind != KVARENA_DOMAIN_KIND_NAMED)
		return -EINVAL;
	if (kind == KVARENA_DOMAIN_KIND_ARENA && KVARENA_DOMAIN_NR(a->domain))
		return -EINVAL;
	return 0;
}

/* ALLOC (@flags_ok KVARENA_ALLOC_PARTIAL) and FREE (0). */
int kva_check_frames(const struct kvarena_frames *f, u32 flags_ok)
{
	if ((f->flags & ~flags_ok) || f->reserved0 ||
	    !all_zero(f->reserved, sizeof(f->reserved)))
		return -EINVAL;
	if (!f->count || f->count > KVARENA_MAX_BATCH)
		return -EINVAL;
	return 0;
}

int kva_check_scrub(const struct kvarena_scrub *s)
{
	if ((s->flags & ~(KVARENA_SCRUB_DONE | KVARENA_SCRUB_ABANDON)) ||
	    !all_zero(s->reserved, sizeof(s->reserved)))
		return -EINVAL;
	if ((s->flags & KVARENA_SCRUB_ABANDON) &&
	    !(s->flags & KVARENA_SCRUB_DONE))
		return -EINVAL;
	if (!s->count || s->count > KVARENA_MAX_BATCH)
		return -EINVAL;
	if ((s->flags & KVARENA_SCRUB_DONE) && s->timeout_ms)
		return -EINVAL;
	return 0;
}

int kva_check_imports_dropped(const struct kvarena_imports_dropped *d)
{
	if (d->flags || !all_zero(d->reserved, sizeof(d->reserved)))
		return -EINVAL;
	return 0;
}

int kva_check_set_tier(const struct kvarena_arena_tier *t)
{
	if (t->flags || !all_zero(t->reserved, sizeof(t->reserved)) ||
	    kva_name_valid(t->name))
		return -EINVAL;
	/* An empty name takes the tier away. */
	if (t->lower[0] && kva_name_valid(t->lower))
		return -EINVAL;
	return 0;
}

int kva_check_tier(const struct kvarena_tier *t)
{
	if ((t->flags & ~KVARENA_TIER_DONE) || t->reserved0 ||
	    !all_zero(t->reserved, sizeof(t->reserved)) ||
	    !t->count || t->count > KVARENA_MAX_BATCH)
		return -EINVAL;
	if ((t->flags & KVARENA_TIER_DONE) && (t->timeout_ms || t->lower_fd))
		return -EINVAL;
	return 0;
}

int kva_check_promote(const struct kvarena_promote *p)
{
	if (p->flags || !all_zero(p->reserved, sizeof(p->reserved)) ||
	    !p->count || p->count > KVARENA_MAX_BATCH ||
	    !p->timeout_ms || p->timeout_ms > KVARENA_PROMOTE_MAX_MS)
		return -EINVAL;
	return 0;
}

int kva_check_frame_fd(const struct kvarena_frame_fd *ff)
{
	if (ff->flags || ff->access || ff->reserved0 ||
	    !all_zero(ff->reserved, sizeof(ff->reserved)))
		return -EINVAL;
	return 0;
}

/* Whether the bytes fit in what the client holds is the command's. */
int kva_check_usage(const struct kvarena_usage *u)
{
	if (u->flags || u->reserved0 ||
	    !all_zero(u->reserved, sizeof(u->reserved)))
		return -EINVAL;
	return 0;
}

int kva_check_stat(const struct kvarena_stat *s)
{
	if (s->flags & ~KVARENA_STAT_BY_INDEX)
		return -EINVAL;
	if (!(s->flags & KVARENA_STAT_BY_INDEX) &&
	    (s->index || kva_name_valid(s->name)))
		return -EINVAL;
	return 0;
}

/* @max_rows: the most rows one call may ask for. */
int kva_check_clients(const struct kvarena_clients *c, u32 max_rows)
{
	if (c->flags || c->reserved0 ||
	    !all_zero(c->reserved, sizeof(c->reserved)) ||
	    kva_name_valid(c->name) || c->count > max_rows)
		return -EINVAL;
	return 0;
}

int kva_check_limits(const struct kvarena_limits *l)
{
	if (l->flags || !all_zero(l->reserved, sizeof(l->reserved)) ||
	    kva_name_valid(l->name))
		return -EINVAL;
	return 0;
}

/*
 * PUBLISH (@flags_ok KVARENA_PUBLISH_TOKENS) and LOOKUP
 * (KVARENA_LOOKUP_LOWER).  Each
 * entry's reserved field is the command's to check, once copied in.
 */
int kva_check_prefix(const struct kvarena_prefix *p, u32 flags_ok)
{
	if ((p->flags & ~flags_ok) || p->nr_lower || p->reserved ||
	    !p->count || p->count > KVARENA_MAX_BATCH)
		return -EINVAL;
	if (!(p->flags & KVARENA_PUBLISH_TOKENS))
		return p->tokens_per_entry || p->tokens ? -EINVAL : 0;
	if (!p->tokens_per_entry ||
	    p->tokens_per_entry > KVARENA_EVENT_MAX_TOKENS ||
	    (u64)p->count * p->tokens_per_entry > KVARENA_PUBLISH_MAX_TOKENS)
		return -EINVAL;
	return 0;
}

int kva_check_events_fd(const struct kvarena_events_fd *e)
{
	if ((e->flags & ~(KVARENA_EVENTS_OLDEST | KVARENA_EVENTS_NONBLOCK)) ||
	    !all_zero(e->reserved, sizeof(e->reserved)) ||
	    kva_name_valid(e->name))
		return -EINVAL;
	return 0;
}

/* Whether the client is there, and may be evicted, is the command's. */
int kva_check_evict(const struct kvarena_evict *e)
{
	if (e->flags || e->reserved0 ||
	    !all_zero(e->reserved, sizeof(e->reserved)) ||
	    kva_name_valid(e->name))
		return -EINVAL;
	return 0;
}
