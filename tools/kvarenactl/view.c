// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl - the viewing commands: stat (a free -h for an arena),
 * clients (one row per client) and top (both, refreshed).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "kvarenactl.h"

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* "host", "cuda:1", "file"; a gang's "gang of 4 host arenas". */
static char *mem_desc(char buf[64], const struct kvactl_arena *a)
{
	const struct kvarena_stat *s = &a->st;

	if (kvactl_is_gang(&a->gang))
		snprintf(buf, 64, "gang of %u %s arenas", a->gang.nr_members,
			 kvactl_mem_kind(s->mem_kind));
	else if (s->mem_kind == KVARENA_MEM_CUDA)
		snprintf(buf, 64, "cuda:%u", s->mem_dev);
	else
		snprintf(buf, 64, "%s", kvactl_mem_kind(s->mem_kind));
	return buf;
}

/*
 * The levels of the view, in frames where a level is whole frames.
 * capacity = held + cached + free + unbacked + ganged; available = free -
 * reserved + cached, and none while any frame has no memory, or while
 * the arena is a gang's member (its frames serve the gang: ganged).
 */
struct levels {
	uint64_t capacity, held, cached, free, unbacked, available, ganged;
};

static struct levels frame_levels(const struct kvactl_arena *a)
{
	const struct kvarena_stat *s = &a->st;
	uint32_t ganged = kvactl_ganged(s, &a->gang);

	return (struct levels){
		.capacity = s->nr_frames,
		.held = s->nr_held,
		.cached = s->nr_cached,
		.free = kvactl_free(s) - ganged,
		.unbacked = kvactl_unbacked(s),
		.available = ganged ? 0 : kvactl_available(s),
		.ganged = ganged,
	};
}

/*
 * Bytes of one frame: STAT's frame size, the members' together for a
 * gang (its frame is one frame in every member), and its tokens.
 */
static uint64_t frame_bytes(const struct kvactl_arena *a)
{
	return kvactl_frame_bytes(&a->st, a->gang.nr_members);
}

static uint64_t tokens_per_frame(const struct kvactl_arena *a)
{
	return kvactl_gang_tokens_per_frame(&a->st, a->gang.nr_members);
}

/* Held bytes that hold no token: the internal fragmentation. */
static uint64_t unfilled(uint64_t held_bytes, uint64_t filled_bytes)
{
	return held_bytes > filled_bytes ? held_bytes - filled_bytes : 0;
}

/*
 * Who may view and attach, and what a client without CAP_SYS_ADMIN gets:
 * "access: owner root, group kvarena, mode 0660; clients: no guarantee,
 * max 4096 by default, at most 8192".  Said only where the arena is not
 * the module's default (mode 0666, no client policy): anyone who may open
 * /dev/kvarena may use it then.
 */
/* "uid 1001", "gid 100", "arena", "named 7", "private 3". */
static const char *fmt_domain(char *buf, size_t size, uint64_t d)
{
	static const char *const kind[] = {
		[KVARENA_DOMAIN_KIND_UID] = "uid",
		[KVARENA_DOMAIN_KIND_GID] = "gid",
		[KVARENA_DOMAIN_KIND_ARENA] = "arena",
		[KVARENA_DOMAIN_KIND_NAMED] = "named",
		[KVARENA_DOMAIN_KIND_PRIVATE] = "private",
	};
	uint32_t k = KVARENA_DOMAIN_KIND(d);

	if (k == KVARENA_DOMAIN_KIND_ARENA)
		snprintf(buf, size, "arena");
	else if (k < sizeof(kind) / sizeof(kind[0]) && kind[k])
		snprintf(buf, size, "%s %llu", kind[k],
			 (unsigned long long)KVARENA_DOMAIN_NR(d));
	else
		snprintf(buf, size, "%#llx", (unsigned long long)d);
	return buf;
}

static const char *const domain_rules[] = {
	[KVARENA_DOMAINS_UID] = "uid",
	[KVARENA_DOMAINS_GID] = "gid",
	[KVARENA_DOMAINS_ARENA] = "arena",
};

static const char *domain_rule(uint32_t r)
{
	return r <= KVARENA_DOMAINS_ARENA ? domain_rules[r] : "?";
}

/*
 * Which clients share prefixes, and the frames cleared between them:
 * "cache domains: one per gid; 16 frames cleared between domains, 2 free
 * with a domain's data".  Said only where the rule is not the default (one
 * per uid) or frames were cleared.
 */
static void print_domains(FILE *f, const struct kvarena_stat *s)
{
	static const char *const rule[] = {
		[KVARENA_DOMAINS_UID] = "one per uid",
		[KVARENA_DOMAINS_GID] = "one per gid",
		[KVARENA_DOMAINS_ARENA] = "one for the whole arena",
	};

	if (s->cache_domains == KVARENA_DOMAINS_UID && !s->frames_cleared &&
	    !s->domain_cached_max)
		return;
	fprintf(f, "cache domains: %s", s->cache_domains <= KVARENA_DOMAINS_ARENA ?
		rule[s->cache_domains] : "?");
	if (s->domain_cached_max)
		fprintf(f, ", at most %u cached %s each", s->domain_cached_max,
			plural(s->domain_cached_max, "frame", "frames"));
	fprintf(f, "; %llu %s cleared between domains, %u free with a domain's data",
		(unsigned long long)s->frames_cleared,
		plural(s->frames_cleared, "frame", "frames"), s->nr_dirty);
	/* CUDA: imported by a process that lives, or otherwise still held. */
	if (s->nr_quarantined)
		fprintf(f, " (%u of them still mapped or imported)",
			s->nr_quarantined);
	fputc('\n', f);
}

static void print_access(FILE *f, const struct kvarena_stat *s)
{
	char u[KVACTL_NUM_LEN], g[KVACTL_NUM_LEN];

	if (s->mode == KVARENA_MODE_DEFAULT && !s->client_min_limit &&
	    !s->client_max_default && !s->client_max_limit)
		return;
	fprintf(f, "access: owner %s, group %s, mode %04o; clients: ",
		kvactl_id_name(u, s->owner_uid, false),
		kvactl_id_name(g, s->owner_gid, true), s->mode);
	if (s->client_min_limit)
		fprintf(f, "guarantees up to %u %s per user, ",
			s->client_min_limit,
			plural(s->client_min_limit, "frame", "frames"));
	else
		fputs("no guarantee, ", f);
	if (s->client_max_default && s->client_max_limit)
		fprintf(f, "max %u by default, at most %u\n",
			s->client_max_default, s->client_max_limit);
	else if (s->client_max_default)
		fprintf(f, "max %u by default\n", s->client_max_default);
	else if (s->client_max_limit)
		fprintf(f, "max %u\n", s->client_max_limit);
	else
		fputs("max the whole arena\n", f);
}

/*
 * An arena that may grow, was shrunk, or is shrinking: "resize: 8 of at
 * most 32 frames (512Ki of 2.0Mi), 24 absent; shrinking to 5, 3 frames
 * still held; 40 frames taken out by shrinks".
 */
static void print_resize(FILE *f, const struct kvarena_stat *s, bool exact)
{
	uint32_t table = kvactl_max_frames(s);
	char b[2][KVACTL_NUM_LEN];

	if (!kvactl_resizable(s))
		return;
	fprintf(f, "resize: %u of at most %u frames (%s of %s), %u absent",
		s->nr_frames, table,
		kvactl_fmt_size(b[0], (uint64_t)s->nr_frames * s->frame_size, exact),
		kvactl_fmt_size(b[1], (uint64_t)table * s->frame_size, exact),
		table - s->nr_frames);
	if (s->nr_shrinking)
		fprintf(f, "; shrinking to %u, %u %s still held",
			s->nr_frames - s->nr_shrinking, s->nr_shrinking,
			plural(s->nr_shrinking, "frame", "frames"));
	fprintf(f, "; %llu %s taken out by shrinks\n",
		(unsigned long long)s->frames_retired,
		plural(s->frames_retired, "frame", "frames"));
}

/*
 * An arena with a lower tier, or one: "tier: lower tier host0 (cached
 * frames go there; kvarenactl agent copies them)", "tier: the lower tier
 * of gpu0".
 */
static void print_tier(FILE *f, const struct kvarena_stat *s)
{
	char name[KVARENA_NAME_LEN + 1];

	/* An arena's name, as the module takes them: nothing to quote. */
	memcpy(name, s->tier_name, KVARENA_NAME_LEN);
	name[KVARENA_NAME_LEN] = 0;
	if (s->tier == KVARENA_STAT_TIER_LOWER)
		fprintf(f, "tier: lower tier %s (cached frames go there; kvarenactl agent copies them)\n",
			name);
	else if (s->tier == KVARENA_STAT_TIER_UPPER)
		fprintf(f, "tier: the lower tier of %s\n", name);
}

/*
 * A gang's members, in rank order: "gang: 2 members in rank order, gpu0
 * gpu1; a frame is 64Ki in each of them, and the bytes above count them
 * all".
 */
static void print_gang(FILE *f, const struct kvactl_arena *a, bool exact)
{
	char b[KVACTL_NUM_LEN];

	if (!kvactl_is_gang(&a->gang))
		return;
	fprintf(f, "gang: %u members in rank order,", a->gang.nr_members);
	for (uint32_t r = 0; r < a->gang.nr_members; r++)
		fprintf(f, " %s", a->gang.members[r]);
	fprintf(f, "; a frame is %s%s in each of them, and the bytes above count them all\n",
		kvactl_fmt_size(b, a->st.frame_size, exact),
		exact ? " bytes" : "");
}

/*
 * A member of a gang: its own figures stand still (the gang's clients
 * hold its frames through the gang), so the view says where they are
 * instead of showing them free.
 */
static void print_member(FILE *f, const struct kvactl_arena *a, bool exact)
{
	const struct kvarena_stat *s = &a->st;
	uint64_t tpf = kvactl_tokens_per_frame(s);
	char b[2][64];

	fprintf(f, "arena %s: %s, %u %s of %s%s", s->name, mem_desc(b[0], a),
		s->nr_frames, plural(s->nr_frames, "frame", "frames"),
		kvactl_fmt_size(b[1], s->frame_size, exact),
		exact ? " bytes" : "");
	if (tpf)
		fprintf(f, ", %llu %s/frame", (unsigned long long)tpf,
			plural(tpf, "token", "tokens"));
	if (a->gang.rank >= 0)
		fprintf(f, ", rank %d of gang %s\n", a->gang.rank, a->gang.gang);
	else
		fprintf(f, ", member of gang %s\n", a->gang.gang);
	fprintf(f, "member of gang %s: its %u %s serve the gang, whose clients hold them (kvarenactl stat %s); it takes no client of its own until %s is destroyed\n",
		a->gang.gang, s->nr_frames,
		plural(s->nr_frames, "frame", "frames"), a->gang.gang,
		a->gang.gang);
}

void kvactl_print_stat(FILE *f, const struct kvactl_arena *a, bool exact)
{
	const struct kvarena_stat *s = &a->st;
	struct levels fr = frame_levels(a);
	uint64_t fs = frame_bytes(a), tpf = tokens_per_frame(a);
	uint64_t held_bytes = fr.held * fs;
	char b[8][KVACTL_NUM_LEN], kind[64];
	struct kvactl_table t;
	int i;

	if (kvactl_is_member(&a->gang)) {
		print_member(f, a, exact);
		return;
	}
	fprintf(f, "arena %s: %s, %u %s of ", s->name, mem_desc(kind, a),
		s->nr_frames, plural(s->nr_frames, "frame", "frames"));
	/* A gang's frame: one frame in each member. */
	if (kvactl_is_gang(&a->gang))
		fprintf(f, "%u x ", a->gang.nr_members);
	fprintf(f, "%s%s", kvactl_fmt_size(b[1], s->frame_size, exact),
		exact ? " bytes" : "");
	if (tpf)
		fprintf(f, ", %llu %s/frame", (unsigned long long)tpf,
			plural(tpf, "token", "tokens"));
	fprintf(f, ", %u %s", s->nr_clients,
		plural(s->nr_clients, "client", "clients"));
	/* A viewer but the owner: its own cache domain's (figures.c). */
	if (s->domain)
		fprintf(f, " of cache domain %s",
			fmt_domain(b[1], sizeof(b[1]), s->domain));
	if (s->low_watermark)
		fprintf(f, ", low watermark %u", s->low_watermark);
	if (s->state & KVARENA_STATE_PRESSURE)
		fputs(", UNDER PRESSURE", f);
	if (s->nr_shrinking)
		fprintf(f, ", SHRINKING to %u", s->nr_frames - s->nr_shrinking);
	if (s->state & KVARENA_STATE_NO_BACKING)
		fputs(", accounting only (no memory)", f);
	else if (fr.unbacked)
		fprintf(f, ", only %u of %u frames backed", s->nr_backed,
			s->nr_frames);
	putc('\n', f);

	/* The unbacked column is there only when some frame is. */
	kvactl_table_init(&t, fr.unbacked ? 8 : 7, "lrrrrrrr");
	kvactl_table_add(&t, "%s", "");
	kvactl_table_add(&t, "capacity");
	kvactl_table_add(&t, "held");
	kvactl_table_add(&t, "filled");
	kvactl_table_add(&t, "cached");
	kvactl_table_add(&t, "free");
	if (fr.unbacked)
		kvactl_table_add(&t, "unbacked");
	kvactl_table_add(&t, "available");

	kvactl_table_add(&t, "bytes");
	kvactl_table_add(&t, "%s", kvactl_fmt_size(b[0], fr.capacity * fs, exact));
	kvactl_table_add(&t, "%s", kvactl_fmt_size(b[1], held_bytes, exact));
	kvactl_table_add(&t, "%s", kvactl_fmt_size(b[2], s->filled_bytes, exact));
	kvactl_table_add(&t, "%s", kvactl_fmt_size(b[3], fr.cached * fs, exact));
	kvactl_table_add(&t, "%s", kvactl_fmt_size(b[4], fr.free * fs, exact));
	if (fr.unbacked)
		kvactl_table_add(&t, "%s", kvactl_fmt_size(b[6], fr.unbacked * fs,
							   exact));
	kvactl_table_add(&t, "%s", kvactl_fmt_size(b[5], fr.available * fs, exact));

	kvactl_table_add(&t, "frames");
	kvactl_table_add(&t, "%llu", (unsigned long long)fr.capacity);
	kvactl_table_add(&t, "%llu", (unsigned long long)fr.held);
	kvactl_table_add(&t, "%s", kvactl_fmt_ratio(b[0], s->filled_bytes, fs));
	kvactl_table_add(&t, "%llu", (unsigned long long)fr.cached);
	kvactl_table_add(&t, "%llu", (unsigned long long)fr.free);
	if (fr.unbacked)
		kvactl_table_add(&t, "%llu", (unsigned long long)fr.unbacked);
	kvactl_table_add(&t, "%llu", (unsigned long long)fr.available);

	/* Tokens: whole frames hold T_f each; filled is what clients said. */
	kvactl_table_add(&t, "tokens");
	{
		const uint64_t v[7] = { fr.capacity, fr.held, 0, fr.cached,
					fr.free, fr.unbacked, fr.available };

		for (i = 0; i < 7; i++) {
			if (i == 5 && !fr.unbacked)
				continue;
			if (i == 2)
				kvactl_table_add(&t, "%llu", (unsigned long long)
						 s->filled_tokens);
			else if (tpf)
				kvactl_table_add(&t, "%llu", (unsigned long long)
						 (v[i] * tpf));
			else
				kvactl_table_add(&t, "-");
		}
	}
	kvactl_table_print(&t, f);
	kvactl_table_free(&t);

	/* Held is every domain's, filled the viewer's: no sum to make. */
	if (s->domain)
		fputs("internal fragmentation: per client in kvarenactl clients (held here is every domain's, filled this user's)\n",
		      f);
	else if (held_bytes)
		fprintf(f, "internal fragmentation: %s (%s%s held but not filled)\n",
			kvactl_fmt_pct(b[0], unfilled(held_bytes, s->filled_bytes),
				       held_bytes),
			kvactl_fmt_size(b[1], unfilled(held_bytes, s->filled_bytes),
					exact), exact ? " bytes" : "");
	else
		fputs("internal fragmentation: - (nothing held)\n", f);
	fprintf(f, "reserved for minimums: %u %s, peak held: %u %s, failed allocations: %llu of %llu\n",
		s->nr_reserved, plural(s->nr_reserved, "frame", "frames"),
		s->peak_held, plural(s->peak_held, "frame", "frames"),
		(unsigned long long)s->alloc_failures,
		(unsigned long long)s->alloc_calls);
	/*
	 * LOOKUP's keys found of keys asked for: the cache's hit rate.  A
	 * viewer who is not the owner sees its own cache domain's figures.
	 */
	if (s->domain)
		fprintf(f, "prefix cache of cache domain %s (this user's; root and the owner see all): ",
			fmt_domain(b[1], sizeof(b[1]), s->domain));
	else
		fputs("prefix cache: ", f);
	fprintf(f, "%u published %s, %u cached, hit rate %s (%llu of %llu keys), %llu reclaimed\n",
		s->nr_published, plural(s->nr_published, "frame", "frames"),
		s->domain ? s->dom_cached : s->nr_cached,
		kvactl_fmt_pct(b[0], s->cache_hits,
			       s->cache_hits + s->cache_misses),
		(unsigned long long)s->cache_hits,
		(unsigned long long)(s->cache_hits + s->cache_misses),
		(unsigned long long)s->cache_reclaims);
	print_domains(f, s);
	print_access(f, s);
	print_resize(f, s, exact);
	print_tier(f, s);
	print_gang(f, a, exact);
	if (fr.unbacked)
		fprintf(f, "half made: %llu %s no memory yet, so no client can attach (ENODATA).\n"
			"If the kvarenactl create that registers its memory is still running, let it\n"
			"finish; if it was killed, remove the arena and make it again:\n"
			"  kvarenactl destroy %s\n",
			(unsigned long long)fr.unbacked,
			plural(fr.unbacked, "frame has", "frames have"), s->name);
}

/*
 * The levels in one unit, @unit bytes or tokens per frame; ganged only
 * for a gang's member.
 */
static void json_levels(struct kvactl_json *j, const char *key,
			const struct levels *fr, uint64_t unit,
			bool has_filled, uint64_t filled)
{
	kvactl_json_obj(j, key);
	kvactl_json_u64(j, "capacity", fr->capacity * unit);
	kvactl_json_u64(j, "held", fr->held * unit);
	if (has_filled)
		kvactl_json_u64(j, "filled", filled);
	kvactl_json_u64(j, "cached", fr->cached * unit);
	kvactl_json_u64(j, "free", fr->free * unit);
	kvactl_json_u64(j, "unbacked", fr->unbacked * unit);
	kvactl_json_u64(j, "available", fr->available * unit);
	if (fr->ganged)
		kvactl_json_u64(j, "ganged", fr->ganged * unit);
	kvactl_json_end(j);
}

/*
 * A gang: "gang": {"members": [...], "frame_bytes": N}; a member:
 * "member_of": {"gang": NAME, "rank": R or null}.
 */
static void json_gang(struct kvactl_json *j, const struct kvactl_arena *a)
{
	if (kvactl_is_gang(&a->gang)) {
		kvactl_json_obj(j, "gang");
		kvactl_json_arr(j, "members");
		for (uint32_t r = 0; r < a->gang.nr_members; r++)
			kvactl_json_str(j, NULL, a->gang.members[r]);
		kvactl_json_end(j);
		kvactl_json_u64(j, "frame_bytes", frame_bytes(a));
		kvactl_json_end(j);
	} else if (kvactl_is_member(&a->gang)) {
		kvactl_json_obj(j, "member_of");
		kvactl_json_str(j, "gang", a->gang.gang);
		if (a->gang.rank >= 0)
			kvactl_json_u64(j, "rank", (uint64_t)a->gang.rank);
		else
			kvactl_json_null(j, "rank");
		kvactl_json_end(j);
	}
}

void kvactl_json_stat(struct kvactl_json *j, const struct kvactl_arena *a)
{
	const struct kvarena_stat *s = &a->st;
	struct levels fr = frame_levels(a);
	uint64_t tpf = tokens_per_frame(a), fs = frame_bytes(a);

	kvactl_json_obj(j, NULL);
	kvactl_json_str(j, "name", s->name);
	kvactl_json_str(j, "mem_kind", kvactl_mem_kind(s->mem_kind));
	kvactl_json_u64(j, "mem_dev", s->mem_dev);
	kvactl_json_u64(j, "frame_size", s->frame_size);
	/* Unknown figures are null, not 0. */
	if (s->bytes_per_token)
		kvactl_json_u64(j, "bytes_per_token", s->bytes_per_token);
	else
		kvactl_json_null(j, "bytes_per_token");
	if (tpf)
		kvactl_json_u64(j, "tokens_per_frame", tpf);
	else
		kvactl_json_null(j, "tokens_per_frame");
	kvactl_json_u64(j, "clients", s->nr_clients);
	kvactl_json_u64(j, "low_watermark", s->low_watermark);
	kvactl_json_bool(j, "pressure", s->state & KVARENA_STATE_PRESSURE);
	kvactl_json_bool(j, "accounting_only",
			 s->state & KVARENA_STATE_NO_BACKING);

	kvactl_json_obj(j, "frames");
	kvactl_json_u64(j, "capacity", fr.capacity);
	kvactl_json_u64(j, "held", fr.held);
	kvactl_json_u64(j, "cached", fr.cached);
	kvactl_json_u64(j, "free", fr.free);
	kvactl_json_u64(j, "unbacked", fr.unbacked);
	kvactl_json_u64(j, "available", fr.available);
	if (fr.ganged)
		kvactl_json_u64(j, "ganged", fr.ganged);
	kvactl_json_u64(j, "reserved", s->nr_reserved);
	kvactl_json_u64(j, "backed", s->nr_backed);
	kvactl_json_u64(j, "peak_held", s->peak_held);
	kvactl_json_end(j);

	json_levels(j, "bytes", &fr, fs, true, s->filled_bytes);
	if (tpf) {
		json_levels(j, "tokens", &fr, tpf, true, s->filled_tokens);
	} else {
		/* Only what the clients reported is known. */
		kvactl_json_obj(j, "tokens");
		kvactl_json_null(j, "capacity");
		kvactl_json_null(j, "held");
		kvactl_json_u64(j, "filled", s->filled_tokens);
		kvactl_json_null(j, "cached");
		kvactl_json_null(j, "free");
		kvactl_json_null(j, "unbacked");
		kvactl_json_null(j, "available");
		if (fr.ganged)
			kvactl_json_null(j, "ganged");
		kvactl_json_end(j);
	}
	kvactl_json_pct(j, "fragmentation_pct",
			unfilled(fr.held * fs, s->filled_bytes), fr.held * fs);
	kvactl_json_u64(j, "alloc_calls", s->alloc_calls);
	kvactl_json_u64(j, "free_calls", s->free_calls);
	kvactl_json_u64(j, "alloc_failures", s->alloc_failures);
	kvactl_json_u64(j, "frames_allocated", s->frames_allocated);
	kvactl_json_u64(j, "frames_freed", s->frames_freed);
	kvactl_json_obj(j, "prefix_cache");
	kvactl_json_u64(j, "published", s->nr_published);
	kvactl_json_u64(j, "cached", s->nr_cached);
	kvactl_json_u64(j, "hits", s->cache_hits);
	kvactl_json_u64(j, "misses", s->cache_misses);
	kvactl_json_pct(j, "hit_rate_pct", s->cache_hits,
			s->cache_hits + s->cache_misses);
	kvactl_json_u64(j, "reclaims", s->cache_reclaims);
	if (s->domain) {
		char d[48];

		kvactl_json_str(j, "domain", fmt_domain(d, sizeof(d),
							s->domain));
	} else {
		kvactl_json_null(j, "domain");
	}
	kvactl_json_end(j);
	kvactl_json_obj(j, "clearing");
	kvactl_json_u64(j, "dirty", s->nr_dirty);
	kvactl_json_u64(j, "cleared", s->frames_cleared);
	kvactl_json_u64(j, "quarantined", s->nr_quarantined);
	kvactl_json_end(j);
	kvactl_json_obj(j, "access");
	kvactl_json_u64(j, "owner_uid", s->owner_uid);
	kvactl_json_u64(j, "owner_gid", s->owner_gid);
	{
		char m[8];

		snprintf(m, sizeof(m), "%04o", s->mode);
		kvactl_json_str(j, "mode", m);
	}
	kvactl_json_u64(j, "client_min_limit", s->client_min_limit);
	kvactl_json_u64(j, "client_max_default", s->client_max_default);
	kvactl_json_u64(j, "client_max_limit", s->client_max_limit);
	kvactl_json_str(j, "cache_domains", domain_rule(s->cache_domains));
	kvactl_json_u64(j, "domain_cached_max", s->domain_cached_max);
	kvactl_json_end(j);
	if (s->tier == KVARENA_STAT_TIER_LOWER ||
	    s->tier == KVARENA_STAT_TIER_UPPER) {
		char name[KVARENA_NAME_LEN + 1];

		memcpy(name, s->tier_name, KVARENA_NAME_LEN);
		name[KVARENA_NAME_LEN] = 0;
		kvactl_json_str(j, s->tier == KVARENA_STAT_TIER_LOWER ?
				"lower_tier" : "lower_tier_of", name);
	}
	if (kvactl_resizable(s)) {
		kvactl_json_obj(j, "resize");
		kvactl_json_u64(j, "max_frames", kvactl_max_frames(s));
		kvactl_json_u64(j, "absent", kvactl_max_frames(s) - s->nr_frames);
		kvactl_json_u64(j, "shrinking", s->nr_shrinking);
		kvactl_json_u64(j, "retired", s->frames_retired);
		kvactl_json_end(j);
	}
	json_gang(j, a);
	kvactl_json_end(j);
}

int kvactl_cmd_stat(const struct kvactl_opts *o)
{
	const char *name = o->nargs ? o->args[0] : NULL;
	struct kvactl_snap snap;
	int fd, ret = KVACTL_FAIL;
	size_t i;

	fd = kvactl_open(false, o->cmd);
	if (fd < 0)
		return KVACTL_FAIL;
	if (kvactl_snap_read(fd, o->cmd, name, false, &snap))
		goto out_close;
	if (o->json) {
		struct kvactl_json j;

		kvactl_json_init(&j, stdout, o->pretty);
		kvactl_json_arr(&j, NULL);
		for (i = 0; i < snap.nr; i++)
			kvactl_json_stat(&j, &snap.arenas[i]);
		kvactl_json_end(&j);
		kvactl_json_done(&j);
	} else if (!snap.nr) {
		puts("no arenas");
	} else {
		for (i = 0; i < snap.nr; i++) {
			if (i)
				putchar('\n');
			kvactl_print_stat(stdout, &snap.arenas[i],
					  o->exact_bytes);
		}
	}
	kvactl_snap_free(&snap);
	ret = KVACTL_OK;
out_close:
	close(fd);
	return ret;
}

/* ---- clients --------------------------------------------------------------- */

static uint64_t client_held_bytes(const struct kvactl_arena *a,
				  const struct kvarena_client_info *c)
{
	return (uint64_t)c->held * frame_bytes(a);
}

/* At most this many PIDs in a table cell; JSON has them all. */
#define PIDS_SHOWN 4

#define PIDS_LEN (PIDS_SHOWN * 12 + 16)

/* "1181,1207", or the first PIDS_SHOWN and ",+N" for the rest. */
static const char *pids_str(char buf[PIDS_LEN], const struct kvactl_hold *hold)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < hold->n && i < PIDS_SHOWN; i++)
		o += (size_t)snprintf(buf + o, PIDS_LEN - o, "%s%d",
				      i ? "," : "", (int)hold->pids[i]);
	if (hold->n > PIDS_SHOWN)
		snprintf(buf + o, PIDS_LEN - o, ",+%zu", hold->n - PIDS_SHOWN);
	return buf;
}

/*
 * The PIDS cell: the processes holding the client's file, "-" where none
 * does by a descriptor, "?" where kvarenactl could not read every
 * process's files (then it sets *@unknown).
 */
static void pids_cell(struct kvactl_table *t, const struct kvactl_holders *h,
		      const char *arena, uint32_t id, bool *unknown)
{
	const struct kvactl_hold *hold = kvactl_holders_find(h, arena, id);
	char buf[PIDS_LEN];

	if (!hold) {
		bool maybe = h->unreadable || h->other_pidns;

		*unknown |= maybe;
		kvactl_table_add(t, "%s", maybe ? "?" : "-");
		return;
	}
	kvactl_table_add(t, "%s", pids_str(buf, hold));
}

/*
 * Evicted clients are out of the table, but their files may still be
 * open: they hold nothing, yet keep the module loaded until closed.
 */
static void print_evicted(FILE *f, const struct kvactl_snap *snap,
			  const struct kvactl_holders *h)
{
	const struct kvactl_hold *e;
	char buf[PIDS_LEN];

	for (size_t i = 0; i < snap->nr; i++) {
		const char *arena = snap->arenas[i].st.name;

		for (size_t k = 0; (e = kvactl_holders_evicted(h, arena, k));
		     k++)
			fprintf(f, "evicted client %u (%s) of arena \"%s\" is still open in %s: kvarenactl kill %s --id %u\n",
				e->id, e->label, arena, pids_str(buf, e),
				arena, e->id);
	}
}

/* The ranks joined to client @c of gang @a, as a cell: "2/4", "?", "-". */
static void ranks_cell(struct kvactl_table *t, const struct kvactl_holders *h,
		       const struct kvactl_arena *a,
		       const struct kvarena_client_info *c, bool *unknown)
{
	bool seen[KVARENA_GANG_MAX] = { false };
	const struct kvactl_rank_hold *r;
	uint32_t n = 0;

	if (!kvactl_is_gang(&a->gang)) {
		kvactl_table_add(t, "-");
		return;
	}
	for (size_t i = 0; (r = kvactl_holders_rank(h, a->st.name,
						    c->client_id, i)); i++)
		if (r->rank < KVARENA_GANG_MAX && !seen[r->rank]) {
			seen[r->rank] = true;
			n++;
		}
	/* None found where kvarenactl could not look everywhere: unknown. */
	if (!n && (h->unreadable || h->other_pidns)) {
		*unknown = true;
		kvactl_table_add(t, "?");
		return;
	}
	kvactl_table_add(t, "%u/%u", n, a->gang.nr_members);
}

/*
 * Ranks whose gang client is gone (released or evicted) map nothing, but
 * keep the gang until their processes close them.
 */
static void print_orphan_ranks(FILE *f, const struct kvactl_snap *snap,
			       const struct kvactl_holders *h)
{
	const struct kvactl_rank_hold *r;
	char buf[PIDS_LEN];

	for (size_t i = 0; i < snap->nr; i++) {
		const char *arena = snap->arenas[i].st.name;

		for (size_t k = 0; (r = kvactl_holders_rank(h, arena, 0, k));
		     k++) {
			struct kvactl_hold hold = { .pids = r->pids, .n = r->n };

			fprintf(f, "rank %u (%s) of gang \"%s\" is still open in %s, its client gone: it maps nothing\n",
				r->rank, r->member, arena, pids_str(buf, &hold));
		}
	}
}

/* The clients table's columns; USER and RANKS only where they say something. */
enum client_col {
	CC_ARENA, CC_ID, CC_PIDS, CC_RANKS, CC_LABEL, CC_USER, CC_CGROUP,
	CC_MIN, CC_MAX, CC_HELD, CC_SHARED, CC_FILLED, CC_TOKENS, CC_FRAG,
	CC_PEAK, CC_FAILS,
	NR_CC
};

/* A client's cgroup ("?" where its process is not to be seen). */
static const char *client_cgroup(char *buf, size_t len,
				 const struct kvarena_client_info *c)
{
	if (kvactl_cgroup_of(c->pid, buf, len))
		snprintf(buf, len, "?");
	return buf;
}

/*
 * After the table: each client some of whose ALLOCs a dmem.max refused,
 * and the limit that binds it now - the cgroup and its figures.
 */
static void print_dmem_refusals(FILE *f, const struct kvactl_snap *snap,
				bool exact)
{
	char cg[4096], at[4096], b[2][KVACTL_NUM_LEN];
	uint64_t max, cur;
	size_t i, k;

	for (i = 0; i < snap->nr; i++) {
		const struct kvactl_arena *a = &snap->arenas[i];

		for (k = 0; k < a->nr_clients; k++) {
			const struct kvarena_client_info *c = &a->clients[k];

			if (!c->dmem_refused)
				continue;
			fprintf(f, "client %u of %s: %u %s refused by the dmem cgroup controller",
				c->client_id, a->st.name, c->dmem_refused,
				plural(c->dmem_refused, "ALLOC", "ALLOCs"));
			client_cgroup(cg, sizeof(cg), c);
			if (cg[0] == '?' ||
			    kvactl_dmem_limit(cg, a->st.name, a->st.frame_size,
					      at, sizeof(at), &max, &cur)) {
				fprintf(f, " (its cgroup %s has no dmem.max for kvarena/%s now)\n",
					cg, a->st.name);
				continue;
			}
			fprintf(f, ": cgroup %s has dmem.max %s for kvarena/%s, dmem.current %s%s%s\n",
				at, kvactl_fmt_size(b[0], max, exact),
				a->st.name, kvactl_fmt_size(b[1], cur, exact),
				strcmp(at, cg) ? ", the client's cgroup is " : "",
				strcmp(at, cg) ? cg : "");
		}
	}
}

/*
 * The clients table, in @cols columns when that is not 0 (top): the
 * columns an operator can best do without are left out first, and the
 * table says which.
 */
static void print_clients(FILE *f, const struct kvactl_snap *snap,
			  const struct kvactl_holders *h, bool exact,
			  unsigned int cols)
{
	static const enum client_col drop_order[] = {
		CC_CGROUP, CC_USER, CC_SHARED, CC_PEAK, CC_TOKENS, CC_RANKS,
		CC_MIN, CC_FRAG, CC_FILLED, CC_MAX, CC_LABEL,
	};
	static const char *const head[NR_CC] = {
		"ARENA", "ID", "PIDS", "RANKS", "LABEL", "USER", "CGROUP",
		"MIN", "MAX", "HELD", "SHARED", "FILLED", "TOKENS", "FRAG",
		"PEAK", "FAILS",
	};
	static const char align[NR_CC + 1] = "lrrrlllrrrrrrrrr";
	struct kvactl_table t;
	char b[2][KVACTL_NUM_LEN], label[4 * KVARENA_LABEL_LEN], cg[4096];
	char aligns[NR_CC + 1];
	bool unknown = false, on[NR_CC];
	int col[NR_CC], drop[NR_CC + 1], ncols = 0, nd = 0;
	size_t i, k;

	for (k = 0; k < NR_CC; k++)
		on[k] = k != CC_USER && k != CC_RANKS && k != CC_CGROUP;
	/*
	 * The USER column is there when some client is not root's, CGROUP
	 * when some client is not in the root cgroup, RANKS when some arena
	 * is a gang.
	 */
	for (i = 0; i < snap->nr; i++) {
		on[CC_RANKS] |= kvactl_is_gang(&snap->arenas[i].gang);
		for (k = 0; k < snap->arenas[i].nr_clients; k++) {
			const struct kvarena_client_info *c =
				&snap->arenas[i].clients[k];

			on[CC_USER] |= c->uid != 0;
			on[CC_CGROUP] |= !kvactl_cgroup_of(c->pid, cg,
							   sizeof(cg)) &&
					 strcmp(cg, "/");
		}
	}
	for (k = 0; k < NR_CC; k++) {
		col[k] = on[k] ? ncols : -1;
		if (on[k])
			aligns[ncols++] = align[k];
	}
	aligns[ncols] = '\0';
	for (k = 0; k < sizeof(drop_order) / sizeof(drop_order[0]); k++)
		if (col[drop_order[k]] >= 0)
			drop[nd++] = col[drop_order[k]];
	drop[nd] = -1;
	kvactl_table_init(&t, (unsigned int)ncols, aligns);
	for (k = 0; k < NR_CC; k++)
		if (on[k])
			kvactl_table_add(&t, "%s", head[k]);
	for (i = 0; i < snap->nr; i++) {
		const struct kvactl_arena *a = &snap->arenas[i];

		for (k = 0; k < a->nr_clients; k++) {
			const struct kvarena_client_info *c = &a->clients[k];
			uint64_t hb = client_held_bytes(a, c);

			kvactl_fmt_label(label, sizeof(label), c->label);
			kvactl_table_add(&t, "%s", a->st.name);
			kvactl_table_add(&t, "%u", c->client_id);
			pids_cell(&t, h, a->st.name, c->client_id, &unknown);
			if (on[CC_RANKS])
				ranks_cell(&t, h, a, c, &unknown);
			kvactl_table_add(&t, "%s", label);
			if (on[CC_USER])
				kvactl_table_add(&t, "%s",
						 kvactl_id_name(b[0], c->uid,
								false));
			if (on[CC_CGROUP])
				kvactl_table_add(&t, "%s",
						 client_cgroup(cg, sizeof(cg),
							       c));
			kvactl_table_add(&t, "%u", c->min_frames);
			kvactl_table_add(&t, "%u", c->max_frames);
			kvactl_table_add(&t, "%u", c->held);
			kvactl_table_add(&t, "%u", c->shared);
			kvactl_table_add(&t, "%s",
					 kvactl_fmt_size(b[0], c->filled_bytes,
							 exact));
			kvactl_table_add(&t, "%llu",
					 (unsigned long long)c->filled_tokens);
			kvactl_table_add(&t, "%s",
					 kvactl_fmt_pct(b[1],
							unfilled(hb, c->filled_bytes),
							hb));
			kvactl_table_add(&t, "%u", c->peak);
			kvactl_table_add(&t, "%llu",
					 (unsigned long long)c->alloc_failures);
		}
	}
	kvactl_table_print_fit(&t, f, cols, drop);
	kvactl_table_free(&t);
	print_dmem_refusals(f, snap, exact);
	/*
	 * CLIENTS shows a viewer who is not the owner its own domain only,
	 * and how many others there are is not its to know (figures.c).
	 */
	for (i = 0; i < snap->nr; i++) {
		const struct kvactl_arena *a = &snap->arenas[i];
		char d[64];

		if (a->st.domain)
			fprintf(f, "%s: the clients of cache domain %s only; root and the arena's owner see every client\n",
				a->st.name,
				fmt_domain(d, sizeof(d), a->st.domain));
	}
	if (unknown && h->other_pidns)
		fprintf(f, "%s ?: the processes of other pid namespaces are not visible here\n",
			on[CC_RANKS] ? "PIDS, RANKS" : "PIDS");
	else if (unknown)
		fprintf(f, "%s ?: this user cannot read the open files of %u %s; root can\n",
			on[CC_RANKS] ? "PIDS, RANKS" : "PIDS", h->unreadable,
			h->unreadable == 1 ? "process" : "processes");
}

/*
 * A gang client's ranks: [{"rank": 0, "member": "gpu0", "pids": [...]},
 * ...] in rank order; null where kvarenactl could not look everywhere
 * and found none.
 */
static void json_ranks(struct kvactl_json *j, const struct kvactl_arena *a,
		       const struct kvarena_client_info *c,
		       const struct kvactl_holders *h)
{
	const struct kvactl_rank_hold *r;
	bool any = kvactl_holders_rank(h, a->st.name, c->client_id, 0);

	if (!any && (h->unreadable || h->other_pidns)) {
		kvactl_json_null(j, "ranks");
		return;
	}
	kvactl_json_arr(j, "ranks");
	for (uint32_t rank = 0; rank < a->gang.nr_members; rank++) {
		for (size_t i = 0; (r = kvactl_holders_rank(h, a->st.name,
							    c->client_id, i));
		     i++) {
			if (r->rank != rank)
				continue;
			kvactl_json_obj(j, NULL);
			kvactl_json_u64(j, "rank", r->rank);
			kvactl_json_str(j, "member", r->member);
			kvactl_json_arr(j, "pids");
			for (size_t p = 0; p < r->n; p++)
				kvactl_json_i64(j, NULL, r->pids[p]);
			kvactl_json_end(j);
			kvactl_json_end(j);
		}
	}
	kvactl_json_end(j);
}

static void json_client(struct kvactl_json *j, const struct kvactl_arena *a,
			const struct kvarena_client_info *c,
			const struct kvactl_holders *h)
{
	const char *arena = a->st.name;
	const struct kvactl_hold *hold = kvactl_holders_find(h, arena,
							    c->client_id);

	kvactl_json_obj(j, NULL);
	kvactl_json_str(j, "arena", arena);
	kvactl_json_u64(j, "id", c->client_id);
	/* Every holder; null if some may be where kvarenactl cannot look. */
	if (hold) {
		kvactl_json_arr(j, "pids");
		for (size_t i = 0; i < hold->n; i++)
			kvactl_json_i64(j, NULL, hold->pids[i]);
		kvactl_json_end(j);
	} else if (h->unreadable || h->other_pidns) {
		kvactl_json_null(j, "pids");
	} else {
		kvactl_json_arr(j, "pids");
		kvactl_json_end(j);
	}
	/* 0: gone, or not in kvarenactl's pid namespace. */
	if (c->pid > 0)
		kvactl_json_i64(j, "attach_pid", c->pid);
	else
		kvactl_json_null(j, "attach_pid");
	kvactl_json_str(j, "label", c->label);
	kvactl_json_u64(j, "uid", c->uid);
	kvactl_json_u64(j, "min_frames", c->min_frames);
	kvactl_json_u64(j, "max_frames", c->max_frames);
	kvactl_json_u64(j, "held_frames", c->held);
	kvactl_json_u64(j, "shared_frames", c->shared);
	kvactl_json_u64(j, "charged_frames", c->charged);
	kvactl_json_u64(j, "peak_frames", c->peak);
	kvactl_json_u64(j, "filled_bytes", c->filled_bytes);
	kvactl_json_u64(j, "filled_tokens", c->filled_tokens);
	kvactl_json_u64(j, "alloc_calls", c->alloc_calls);
	kvactl_json_u64(j, "free_calls", c->free_calls);
	kvactl_json_u64(j, "alloc_failures", c->alloc_failures);
	kvactl_json_u64(j, "dmem_refused", c->dmem_refused);
	{
		char cg[4096];

		if (kvactl_cgroup_of(c->pid, cg, sizeof(cg)))
			kvactl_json_null(j, "cgroup");
		else
			kvactl_json_str(j, "cgroup", cg);
	}
	{
		char d[48];

		kvactl_json_str(j, "domain", fmt_domain(d, sizeof(d),
							c->domain));
	}
	if (kvactl_is_gang(&a->gang))
		json_ranks(j, a, c, h);
	kvactl_json_end(j);
}

static void json_clients(struct kvactl_json *j, const char *key,
			 const struct kvactl_snap *snap,
			 const struct kvactl_holders *h)
{
	kvactl_json_arr(j, key);
	for (size_t i = 0; i < snap->nr; i++)
		for (uint32_t k = 0; k < snap->arenas[i].nr_clients; k++)
			json_client(j, &snap->arenas[i],
				    &snap->arenas[i].clients[k], h);
	kvactl_json_end(j);
}

/* The holders, or none found and unknown, if /proc cannot be read. */
static void scan_holders(struct kvactl_holders *h, int fd)
{
	if (kvactl_holders_scan(h, fd)) {
		memset(h, 0, sizeof(*h));
		h->unreadable = 1;
	}
}

int kvactl_cmd_clients(const struct kvactl_opts *o)
{
	const char *name = o->nargs ? o->args[0] : NULL;
	struct kvactl_holders h;
	struct kvactl_snap snap;
	int fd, ret = KVACTL_FAIL;

	fd = kvactl_open(false, o->cmd);
	if (fd < 0)
		return KVACTL_FAIL;
	if (kvactl_snap_read(fd, o->cmd, name, true, &snap))
		goto out_close;
	scan_holders(&h, fd);
	if (o->json) {
		struct kvactl_json j;

		kvactl_json_init(&j, stdout, o->pretty);
		json_clients(&j, NULL, &snap, &h);
		kvactl_json_done(&j);
	} else {
		print_clients(stdout, &snap, &h, o->exact_bytes, 0);
		print_evicted(stdout, &snap, &h);
		print_orphan_ranks(stdout, &snap, &h);
	}
	kvactl_holders_free(&h);
	kvactl_snap_free(&snap);
	ret = KVACTL_OK;
out_close:
	close(fd);
	return ret;
}

/* ---- top -------------------------------------------------------------------- */

static volatile sig_atomic_t top_quit;

static void top_signal(int sig)
{
	top_quit = sig;
}

static struct termios top_saved_tty;
static bool top_tty_saved, top_screen;

static void top_restore(void)
{
	if (top_tty_saved)
		tcsetattr(STDIN_FILENO, TCSANOW, &top_saved_tty);
	top_tty_saved = false;
	if (top_screen) {
		fputs("\033[?25h", stdout);	/* the cursor back */
		fflush(stdout);
	}
	top_screen = false;
}

/* Keys without Enter, no echo; Ctrl-C still sends SIGINT. */
static void top_raw_keys(void)
{
	struct termios t;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &top_saved_tty))
		return;
	t = top_saved_tty;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	if (!tcsetattr(STDIN_FILENO, TCSANOW, &t))
		top_tty_saved = true;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What top remembers of the last frame, for the rates. */
struct top_prev {
	char name[KVARENA_NAME_LEN];
	uint64_t allocated, freed, failures;
};

static void top_activity(FILE *f, const struct kvarena_stat *s,
			 const struct top_prev *prev, size_t nprev,
			 double dt)
{
	for (size_t i = 0; i < nprev; i++) {
		const struct top_prev *p = &prev[i];

		if (strncmp(p->name, s->name, KVARENA_NAME_LEN) ||
		    s->frames_allocated < p->allocated ||
		    s->frames_freed < p->freed ||
		    s->alloc_failures < p->failures || dt <= 0)
			continue;
		fprintf(f, "activity: %.1f frames/s allocated, %.1f frames/s freed, %.1f failed allocations/s\n",
			(double)(s->frames_allocated - p->allocated) / dt,
			(double)(s->frames_freed - p->freed) / dt,
			(double)(s->alloc_failures - p->failures) / dt);
		return;
	}
	fputs("activity: -\n", f);
}

static void top_frame(FILE *f, const struct kvactl_opts *o,
		      const struct kvactl_snap *snap,
		      const struct kvactl_holders *h,
		      const struct top_prev *prev, size_t nprev, double dt,
		      unsigned int cols)
{
	char clock[16];
	time_t t = time(NULL);
	struct tm tm;

	if (o->json) {
		struct kvactl_json j;

		kvactl_json_init(&j, f, o->pretty);
		kvactl_json_obj(&j, NULL);
		kvactl_json_u64(&j, "time", (uint64_t)t);
		kvactl_json_arr(&j, "arenas");
		for (size_t i = 0; i < snap->nr; i++)
			kvactl_json_stat(&j, &snap->arenas[i]);
		kvactl_json_end(&j);
		json_clients(&j, "clients", snap, h);
		kvactl_json_end(&j);
		kvactl_json_done(&j);
		return;
	}
	localtime_r(&t, &tm);
	strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
	fprintf(f, "kvarenactl top - %s, every %gs, q quits\n\n", clock,
		o->interval_ms / 1000.0);
	if (!snap->nr)
		fputs("no arenas\n", f);
	for (size_t i = 0; i < snap->nr; i++) {
		kvactl_print_stat(f, &snap->arenas[i], o->exact_bytes);
		top_activity(f, &snap->arenas[i].st, prev, nprev, dt);
		putc('\n', f);
	}
	print_clients(f, snap, h, o->exact_bytes, cols);
}

/*
 * The screen's size: -w, else $COLUMNS, else what the terminal says; 0
 * where nothing says (a console that reports no size, or a pipe): then
 * lines are not cut, they wrap.  Rows likewise from $LINES or the
 * terminal.
 */
static unsigned int env_num(const char *name)
{
	const char *v = getenv(name);
	uint32_t n;

	return v && !kvactl_parse_u32(v, &n) && n < 100000 ? n : 0;
}

static void screen_size(const struct kvactl_opts *o, unsigned int *cols,
			unsigned int *rows)
{
	struct winsize ws = { 0 };
	bool tty = !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws);

	*cols = o->width ? o->width : env_num("COLUMNS");
	if (!*cols && tty)
		*cols = ws.ws_col;
	*rows = env_num("LINES");
	if (!*rows && tty)
		*rows = ws.ws_row;
}

/*
 * Lines longer than @cols (0: any) end in '>' where they are cut, never
 * inside a UTF-8 sequence; with @rows (0: any) the last row says how many
 * lines did not fit.  @redraw: in place, on a terminal.
 */
static void top_draw(const char *buf, unsigned int cols, unsigned int rows,
		     bool redraw)
{
	unsigned int row = 0, total = 0;
	const char *p;

	for (p = buf; *p; p += strcspn(p, "\n"), p += *p == '\n')
		total++;
	if (redraw)
		fputs("\033[H", stdout);
	for (p = buf; *p && (!rows || row < rows); row++) {
		size_t len = strcspn(p, "\n"), w = 0, n = 0;

		if (rows && row == rows - 1 && total > rows) {
			printf("... %u more lines: a taller screen, or top NAME for one arena",
			       total - row);
			if (redraw)
				fputs("\033[K", stdout);
			else
				putchar('\n');
			break;
		}
		/* Count characters, not bytes. */
		while (n < len) {
			n++;
			while (n < len && ((unsigned char)p[n] & 0xc0) == 0x80)
				n++;
			w++;
		}
		if (cols && w > cols) {
			for (n = 0, w = 0; w + 1 < cols; w++) {
				n++;
				while (((unsigned char)p[n] & 0xc0) == 0x80)
					n++;
			}
			fwrite(p, 1, n, stdout);
			putchar('>');
		} else {
			fwrite(p, 1, len, stdout);
		}
		if (redraw)
			fputs("\033[K", stdout);
		p += len;
		if (*p == '\n')
			p++;
		/* The last row of a screen ends without one: no scrolling. */
		if (!redraw || !rows || row + 1 < rows)
			putchar('\n');
	}
	if (redraw)
		fputs("\033[J", stdout);
	fflush(stdout);
}

/* Wait @ms for a key; true when it is time to stop. */
static bool top_wait(unsigned int ms)
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	double end = now_s() + ms / 1000.0;

	while (!top_quit) {
		double left = end - now_s();
		int n;

		if (left <= 0)
			return false;
		n = poll(&pfd, top_tty_saved ? 1 : 0, (int)(left * 1000) + 1);
		if (n > 0) {
			char c;

			if (read(STDIN_FILENO, &c, 1) == 1 &&
			    (c == 'q' || c == 'Q'))
				return true;
			if (pfd.revents & (POLLHUP | POLLERR))
				pfd.fd = -1;
		}
	}
	return true;
}

int kvactl_cmd_top(const struct kvactl_opts *o)
{
	const char *name = o->nargs ? o->args[0] : NULL;
	struct sigaction sa = { .sa_handler = top_signal };
	struct top_prev *prev = NULL;
	size_t nprev = 0;
	uint64_t n = 0;
	double last = 0;
	int fd, ret = KVACTL_OK;

	fd = kvactl_open(false, o->cmd);
	if (fd < 0)
		return KVACTL_FAIL;
	/* No SA_RESTART: a signal ends the wait at once. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	top_screen = isatty(STDOUT_FILENO) && !o->json;
	if (top_screen)
		fputs("\033[?25l\033[H\033[2J", stdout);
	top_raw_keys();
	atexit(top_restore);

	while (!top_quit) {
		struct kvactl_snap snap;
		double t = now_s();
		unsigned int cols, rows;
		struct kvactl_holders h;
		char *buf = NULL;
		size_t len = 0;
		FILE *mf;

		if (kvactl_snap_read(fd, o->cmd, name, true, &snap)) {
			ret = KVACTL_FAIL;
			break;
		}
		mf = open_memstream(&buf, &len);
		if (!mf)
			abort();
		screen_size(o, &cols, &rows);
		scan_holders(&h, fd);
		top_frame(mf, o, &snap, &h, prev, nprev, t - last, cols);
		kvactl_holders_free(&h);
		fclose(mf);
		if (o->json) {
			fputs(buf, stdout);
			fflush(stdout);
		} else {
			/* Batch: every line, each frame after a blank line. */
			top_draw(buf, cols, top_screen ? rows : 0, top_screen);
			if (!top_screen)
				putchar('\n');
			fflush(stdout);
		}
		free(buf);

		free(prev);
		prev = calloc(snap.nr ? snap.nr : 1, sizeof(*prev));
		if (!prev)
			abort();
		for (nprev = 0; nprev < snap.nr; nprev++) {
			const struct kvarena_stat *s = &snap.arenas[nprev].st;

			memcpy(prev[nprev].name, s->name, KVARENA_NAME_LEN);
			prev[nprev].allocated = s->frames_allocated;
			prev[nprev].freed = s->frames_freed;
			prev[nprev].failures = s->alloc_failures;
		}
		last = t;
		kvactl_snap_free(&snap);
		if (o->iterations && ++n >= o->iterations)
			break;
		if (top_wait(o->interval_ms))
			break;
	}
	if (top_screen)
		putchar('\n');
	top_restore();
	free(prev);
	close(fd);
	return ret;
}
