// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: sysfs.  Each arena is a directory
 * /sys/class/misc/kvarena/arenas/<name>/ with one read-only value per file,
 * the same totals as KVARENA_IOC_STAT, for scripts and exporters.  The
 * files are world-readable, but like STAT they answer only those whom the
 * arena's mode lets view it (-EACCES for the others), and like STAT they
 * show a reader who is not the arena's owner or an administrator its own
 * cache domain's activity only, the domain the arena's rule gives the
 * reader (figures.c): the reader's credentials at the time of the read
 * decide, as they decide whether it may read at all.
 *
 * One difference: "free" counts only frames that have memory.  STAT's
 * nr_free counts every frame no client holds, and a half-made arena's
 * frames without memory are in it; here they are "unbacked", so that
 * free + cached + held + unbacked = nr_frames and nobody reading free
 * takes a half-made arena for an empty one.  nr_frames is the arena's
 * size now, absent the frames a shrink took out (nr_frames + absent =
 * max_frames), shrinking those it still waits for.
 */
#include <linux/kobject.h>
#include <linux/sysfs.h>

#include "kva.h"

static struct kobject *kva_arenas_kobj;

#define to_arena(k) container_of(k, struct kva_arena, kobj)

/* Frames in the arena without memory: none in an accounting-only one. */
static u32 kva_unbacked(struct kva_arena *a)
{
	lockdep_assert_held(&a->lock);
	return a->nr_unready;
}

/* Constant after create: no lock needed. */
#define KVA_CONST_ATTR(field, fmt)					\
static ssize_t field##_show(struct kobject *k, struct kobj_attribute *attr, \
			    char *buf)					\
{									\
	if (!kva_arena_permits(to_arena(k), KVARENA_ACC_VIEW, 0))	\
		return -EACCES;						\
	return sysfs_emit(buf, fmt "\n", to_arena(k)->field);		\
}									\
static struct kobj_attribute field##_attr = __ATTR_RO(field)

/* A figure as the reader may see it (figures.c), under the arena lock. */
#define KVA_FIGURE_ATTR(name, fmt, expr)				\
static ssize_t name##_show(struct kobject *k, struct kobj_attribute *attr, \
			   char *buf)					\
{									\
	struct kva_arena *a = to_arena(k);				\
	struct kva_figures f;						\
	ssize_t n;							\
									\
	if (!kva_arena_permits(a, KVARENA_ACC_VIEW, 0))			\
		return -EACCES;						\
	mutex_lock(&a->lock);						\
	kva_figures(a, kva_viewer_domain(a, NULL, 0), &f);		\
	n = sysfs_emit(buf, fmt "\n", expr);				\
	mutex_unlock(&a->lock);						\
	return n;							\
}									\
static struct kobj_attribute name##_attr = __ATTR_RO(name)

/* Changing values, read under the arena lock. */
#define KVA_LOCKED_ATTR(name, fmt, expr)				\
static ssize_t name##_show(struct kobject *k, struct kobj_attribute *attr, \
			   char *buf)					\
{									\
	struct kva_arena *a = to_arena(k);				\
	ssize_t n;							\
									\
	if (!kva_arena_permits(a, KVARENA_ACC_VIEW, 0))			\
		return -EACCES;						\
	mutex_lock(&a->lock);						\
	n = sysfs_emit(buf, fmt "\n", expr);				\
	mutex_unlock(&a->lock);						\
	return n;							\
}									\
static struct kobj_attribute name##_attr = __ATTR_RO(name)

KVA_CONST_ATTR(frame_size, "%llu");
KVA_CONST_ATTR(bytes_per_token, "%llu");
KVA_CONST_ATTR(low_watermark, "%u");
KVA_CONST_ATTR(mem_dev, "%u");
KVA_LOCKED_ATTR(mem_kind, "%s",
		a->mem_kind == KVARENA_MEM_CUDA ? "cuda" :
		a->mem_kind == KVARENA_MEM_FILE ? "file" : "host");
KVA_LOCKED_ATTR(nr_frames, "%u", a->core.nr_frames - a->core.nr_absent);
KVA_LOCKED_ATTR(max_frames, "%u", a->core.nr_frames);
KVA_LOCKED_ATTR(absent, "%u", a->core.nr_absent);
KVA_LOCKED_ATTR(shrinking, "%u", a->core.shrink_pending);
KVA_LOCKED_ATTR(frames_retired, "%llu", a->core.frames_retired);
/* Free frames with memory; a client never holds one without. */
KVA_FIGURE_ATTR(free, "%u",
		f.free > kva_unbacked(a) ? f.free - kva_unbacked(a) : 0);
KVA_LOCKED_ATTR(unbacked, "%u", kva_unbacked(a));
KVA_FIGURE_ATTR(held, "%u", f.held);
KVA_FIGURE_ATTR(cached, "%u", f.cached);
KVA_FIGURE_ATTR(published, "%u", f.published);
KVA_FIGURE_ATTR(cache_hits, "%llu", f.hits);
KVA_FIGURE_ATTR(cache_misses, "%llu", f.misses);
KVA_FIGURE_ATTR(cache_reclaims, "%llu", f.reclaims);
KVA_LOCKED_ATTR(backed, "%u", a->nr_backed);
KVA_FIGURE_ATTR(reserved, "%u", f.reserved);
KVA_FIGURE_ATTR(clients, "%u", f.clients);
KVA_FIGURE_ATTR(peak_held, "%u", f.peak_held);
KVA_LOCKED_ATTR(pressure, "%d", a->pressure);
KVA_FIGURE_ATTR(filled_bytes, "%llu", f.filled_bytes);
KVA_FIGURE_ATTR(filled_tokens, "%llu", f.filled_tokens);
KVA_FIGURE_ATTR(alloc_calls, "%llu", f.alloc_calls);
KVA_FIGURE_ATTR(free_calls, "%llu", f.free_calls);
KVA_FIGURE_ATTR(alloc_failures, "%llu", f.alloc_failures);
KVA_FIGURE_ATTR(frames_allocated, "%llu", f.frames_allocated);
KVA_FIGURE_ATTR(frames_freed, "%llu", f.frames_freed);
KVA_FIGURE_ATTR(tier_demoted, "%llu", f.demoted);
KVA_FIGURE_ATTR(tier_promoted, "%llu", f.promoted);
KVA_FIGURE_ATTR(tier_failed, "%llu", f.failed);

/* The arena's lower tier (@upper false) or the arena above it: a name. */
static ssize_t tier_show(struct kobject *k, char *buf, bool upper)
{
	struct kva_arena *a = to_arena(k);
	char name[KVARENA_NAME_LEN];
	u32 t;

	if (!kva_arena_permits(a, KVARENA_ACC_VIEW, 0))
		return -EACCES;
	mutex_lock(&a->lock);
	t = kva_tier_name(a, name);
	mutex_unlock(&a->lock);
	if (t != (upper ? KVARENA_STAT_TIER_UPPER : KVARENA_STAT_TIER_LOWER))
		name[0] = 0;
	return sysfs_emit(buf, "%s\n", name);
}

static ssize_t lower_show(struct kobject *k, struct kobj_attribute *attr,
			  char *buf)
{
	return tier_show(k, buf, false);
}
static struct kobj_attribute lower_attr = __ATTR_RO(lower);

static ssize_t upper_show(struct kobject *k, struct kobj_attribute *attr,
			  char *buf)
{
	return tier_show(k, buf, true);
}
static struct kobj_attribute upper_attr = __ATTR_RO(upper);

/* A member: the gang it is in, or nothing. */
static ssize_t gang_show(struct kobject *k, struct kobj_attribute *attr,
			 char *buf)
{
	struct kva_arena *a = to_arena(k);
	char name[KVARENA_NAME_LEN] = "";

	if (!kva_arena_permits(a, KVARENA_ACC_VIEW, 0))
		return -EACCES;
	mutex_lock(&a->lock);
	if (a->gang)
		strscpy(name, a->gang->name, sizeof(name));
	mutex_unlock(&a->lock);
	return sysfs_emit(buf, "%s\n", name);
}
static struct kobj_attribute gang_attr = __ATTR_RO(gang);

/* A gang: its members in rank order, one line; nothing for the others. */
static ssize_t members_show(struct kobject *k, struct kobj_attribute *attr,
			    char *buf)
{
	struct kva_arena *a = to_arena(k);
	ssize_t n = 0;
	u32 r;

	if (!kva_arena_permits(a, KVARENA_ACC_VIEW, 0))
		return -EACCES;
	/* Constant from GANG_CREATE on. */
	for (r = 0; r < a->nr_members; r++)
		n += sysfs_emit_at(buf, n, "%s%s", r ? " " : "",
				   a->members[r]->name);
	return n + sysfs_emit_at(buf, n, "\n");
}
static struct kobj_attribute members_attr = __ATTR_RO(members);

static struct attribute *kva_arena_attrs[] = {
	&frame_size_attr.attr,
	&bytes_per_token_attr.attr,
	&low_watermark_attr.attr,
	&mem_dev_attr.attr,
	&mem_kind_attr.attr,
	&nr_frames_attr.attr,
	&free_attr.attr,
	&unbacked_attr.attr,
	&held_attr.attr,
	&cached_attr.attr,
	&published_attr.attr,
	&cache_hits_attr.attr,
	&cache_misses_attr.attr,
	&cache_reclaims_attr.attr,
	&backed_attr.attr,
	&reserved_attr.attr,
	&clients_attr.attr,
	&peak_held_attr.attr,
	&pressure_attr.attr,
	&filled_bytes_attr.attr,
	&filled_tokens_attr.attr,
	&alloc_calls_attr.attr,
	&free_calls_attr.attr,
	&alloc_failures_attr.attr,
	&frames_allocated_attr.attr,
	&frames_freed_attr.attr,
	&max_frames_attr.attr,
	&absent_attr.attr,
	&shrinking_attr.attr,
	&frames_retired_attr.attr,
	&lower_attr.attr,
	&upper_attr.attr,
	&tier_demoted_attr.attr,
	&tier_promoted_attr.attr,
	&tier_failed_attr.attr,
	&gang_attr.attr,
	&members_attr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(kva_arena);

static void kva_arena_release(struct kobject *k)
{
	kva_arena_free(to_arena(k));
}

const struct kobj_type kva_arena_ktype = {
	.release	= kva_arena_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= kva_arena_groups,
};

/* The arena's kobject is initialised; give it its directory. */
int kva_sysfs_add_arena(struct kva_arena *a)
{
	return kobject_add(&a->kobj, kva_arenas_kobj, "%s", a->name);
}

int kva_sysfs_init(struct kobject *parent)
{
	kva_arenas_kobj = kobject_create_and_add("arenas", parent);
	return kva_arenas_kobj ? 0 : -ENOMEM;
}

void kva_sysfs_exit(void)
{
	kobject_put(kva_arenas_kobj);
}
