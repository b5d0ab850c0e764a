// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: gangs - one arena over the memories of N arenas, for
 * tensor-parallel engines (one worker process per GPU, each holding a
 * slice of every token's KV).
 *
 * A gang is an arena of its own (struct kva_arena, with its core, clients,
 * policy, domains, events and sysfs directory) whose frame i is frame i of
 * every member at once.  So an ALLOC by a gang client is one core
 * allocation, charged once, all or nothing in every member by
 * construction, and its handle is valid in each; FREE, limits, pressure,
 * the prefix cache and eviction are the gang's, unchanged.  The members
 * keep their memory (backing, pinned pages) and give up their clients:
 * while ganged they take no ATTACH, backing, resize or tier, and their own
 * cores sit idle.
 *
 * Ranks.  The engine's worker processes JOIN a gang client (its id and
 * the secret GANG_TOKEN gave it) as rank r: a file that holds nothing and
 * may map, in member r, the frames that client holds.  The client has one
 * frames file per member (frames.c), all under one semaphore; a rank's
 * FRAME_FD hands it file r.  Whatever revokes the client's right to a
 * frame zaps it in every member's file, and so in every rank, before the
 * core lets the frame go; the client's release or eviction detaches every
 * file, so each rank's next touch is SIGBUS.  With KVARENA_GANG_RANKS_FATAL
 * a rank's release evicts the client: one dead worker takes the
 * engine's KV with it, instead of leaving the others computing on a
 * slice that nobody keeps up.
 *
 * CUDA members.  The module cannot revoke an import of GPU memory nor
 * clear it, so a CUDA gang works as a CUDA arena does (scrub.c): a rank's
 * FRAME_FD gives it its member's backing file of the frame, and the
 * import is noted in that member's table, keeping the frame in its
 * domain until the rank's process exits; the gang's dirty frames wait
 * for a scrubber - the gang's client takes them with SCRUB, its ranks
 * FRAME_FD and clear them each in its member, and it gives them back.
 * What a CUDA member's tenants left becomes frames for the gang's
 * scrubbers as it joins (take_over()), and what the gang's tenants left,
 * frames for the member's own scrubber as the gang goes (hand_back()).
 *
 * Locking: kva_arenas_lock, then a member's or the gang's lock, one at a
 * time (never two arena locks here).  A member's scrubbing table is the
 * gang's, under the gang's lock, while it is in the gang (its own lock
 * guards nothing that moves then).  A client's @ranks and a rank's
 * @leader are under the gang's lock.
 */
#include <linux/bitmap.h>
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "kva.h"

/* Member @r's pinned pages (host members), NULL for accounting ones. */
struct page **kva_member_pages(struct kva_arena *a, u32 r)
{
	return a->members[r]->pages;
}

/*
 * May @m join gang @g now?  Under @m's lock and kva_arenas_lock.
 * Return: 0, -EINVAL (does not fit), -EBUSY (in use) or -EOPNOTSUPP.
 */
static int member_fits(struct kva_arena *g, struct kva_arena *m)
{
	char tier[KVARENA_NAME_LEN];

	lockdep_assert_held(&m->lock);
	if (m->dead)
		return -ENOENT;
	if (m->mem_kind == KVARENA_MEM_FILE)
		return -EOPNOTSUPP;
	if (m->members || m->gang || m->nr_clients || m->backing_busy ||
	    kva_tier_busy(m) || kva_tier_name(m, tier) ||
	    m->core.shrink_pending)
		return -EBUSY;
	/* KVARENA_CREATE_ACCESS only said how the policy was given. */
	if (m->mem_kind != g->mem_kind || m->frame_size != g->frame_size ||
	    (m->flags ^ g->flags) & ~KVARENA_CREATE_ACCESS ||
	    m->core.nr_frames != g->core.nr_frames ||
	    m->core.nr_absent || m->nr_unready)
		return -EINVAL;
	return 0;
}

/*
 * Clear every frame of @a that holds a tenant's data - its cached frames
 * first dropped, then each dirty one cleared (a gang's in every member) -
 * with its clearing worker stopped, so that the memory changes hands
 * holding nothing of anyone's: a member's frames as the gang takes them,
 * the gang's as the members get them back.  No client, no lock held but
 * kva_arenas_lock.
 */
static void drain(struct kva_arena *a)
{
	mutex_lock(&a->lock);
	kva_core_drop_cache(&a->core);
	mutex_unlock(&a->lock);
	cancel_work_sync(&a->clear_work);
	while (kva_clear_some(a))
		cond_resched();
}

static bool frame_marked(const void *mark, u32 idx)
{
	return test_bit(idx, mark);
}

static bool every_frame(const void *arg, u32 idx)
{
	return true;
}

/*
 * CUDA members join (kva_arenas_lock held, the gang not yet visible).
 * Their memory is not the module's to clear: each member's frames that
 * carry a tenant's data - cached, dirty, or left by a scrubber - become
 * frames for a scrubber in the member (orphans, scrub.c), and their
 * frames in the gang too, for the gang's scrubbers to clear before anyone
 * has them.  The imports of them noted in the members' tables hold them
 * back as they would have in the member.
 */
static int take_over(struct kva_arena *a)
{
	unsigned long *mark;
	u32 i, r, n;

	mark = bitmap_zalloc(a->core.nr_frames, GFP_KERNEL);
	if (!mark)
		return -ENOMEM;
	for (r = 0; r < a->nr_members; r++) {
		struct kva_arena *m = a->members[r];

		mutex_lock(&m->lock);
		kva_core_drop_cache(&m->core);
		m->nr_orphans += kva_core_quarantine(&m->core, NULL, NULL);
		for (i = 0; i < m->core.nr_frames; i++)
			if (m->core.frames[i].flags & KVA_FRAME_CLEANING)
				__set_bit(i, mark);
		mutex_unlock(&m->lock);
	}
	mutex_lock(&a->lock);
	n = kva_core_quarantine(&a->core, frame_marked, mark);
	a->nr_orphans += n;
	kva_arena_update_pressure(a);
	mutex_unlock(&a->lock);
	bitmap_free(mark);
	return 0;
}

/*
 * A CUDA gang goes (no client, kva_arenas_lock held): the members get
 * back their frames as the gang has them.  Those that carry a tenant's
 * data - cached, dirty or being scrubbed - become frames for the member's
 * scrubber (orphans), nobody's until cleared; the imports of them the
 * ranks made stay noted in the members' tables.  Those the gang's
 * scrubbers cleared are clean in the member too.  Without memory for the
 * marks, every frame goes through the members' scrubbers.
 */
static void hand_back(struct kva_arena *a)
{
	struct kva_core *c = &a->core;
	unsigned long *mark;
	u32 i, r;

	mark = bitmap_zalloc(c->nr_frames, GFP_KERNEL);
	mutex_lock(&a->lock);
	kva_core_drop_cache(c);
	for (i = 0; mark && i < c->nr_frames; i++)
		if (c->frames[i].dom || (c->frames[i].flags & KVA_FRAME_CLEANING))
			__set_bit(i, mark);
	mutex_unlock(&a->lock);
	for (r = 0; r < a->nr_members; r++) {
		struct kva_arena *m = a->members[r];
		struct kva_core *mc = &m->core;

		mutex_lock(&m->lock);
		m->nr_orphans += kva_core_quarantine(mc, mark ? frame_marked :
						     every_frame, mark);
		for (i = 0; mark && i < mc->nr_frames; i++) {
			if (test_bit(i, mark) ||
			    mc->frames[i].flags != KVA_FRAME_CLEANING)
				continue;
			kva_core_put_clean(mc, &i, 1);
			m->nr_orphans--;
		}
		kva_scrub_kick(m);
		kva_arena_update_pressure(m);
		mutex_unlock(&m->lock);
	}
	bitmap_free(mark);
}

/* Set the members free again (kva_arenas_lock held). */
static void members_release(struct kva_arena *g, u32 n)
{
	u32 r;

	for (r = 0; r < n; r++) {
		struct kva_arena *m = g->members[r];

		mutex_lock(&m->lock);
		if (m->gang == g)
			m->gang = NULL;
		mutex_unlock(&m->lock);
	}
}

/* The gang's description: member 0's policy and size, the sum of bytes. */
static void gang_describe(struct kvarena_arena_create *c,
			  const struct kvarena_gang_create *g,
			  struct kva_arena **m, u32 n)
{
	struct kva_arena *m0 = m[0];
	u32 r;

	memset(c, 0, sizeof(*c));
	strscpy(c->name, g->name, sizeof(c->name));
	c->frame_size = m0->frame_size;
	c->mem_kind = m0->mem_kind;
	/* The gang's own table: frames are handles; memory is the members'. */
	c->flags = KVARENA_CREATE_NO_BACKING | KVARENA_CREATE_ACCESS;
	mutex_lock(&m0->lock);
	c->nr_frames = m0->core.nr_frames;
	c->low_watermark = m0->low_watermark;
	c->owner_uid = from_kuid_munged(current_user_ns(), m0->policy.uid);
	c->owner_gid = from_kgid_munged(current_user_ns(), m0->policy.gid);
	c->mode = m0->policy.mode;
	c->client_min_limit = m0->policy.client_min_limit;
	c->client_max_default = m0->policy.client_max_default;
	c->client_max_limit = m0->policy.client_max_limit;
	c->cache_domains = m0->policy.cache_domains;
	c->domain_cached_max = m0->policy.domain_cached_max;
	mutex_unlock(&m0->lock);
	for (r = 0; r < n; r++)
		c->bytes_per_token += m[r]->bytes_per_token;
}

long kva_ioc_gang_create(void __user *argp)
{
	struct kva_arena *m[KVARENA_GANG_MAX] = { NULL };
	char (*names)[KVARENA_NAME_LEN] = NULL;
	struct kvarena_arena_create c;
	struct kvarena_gang_create g;
	struct kva_arena *a = NULL, *other;
	u32 r, s, fitted = 0;
	int ret;

	if (copy_from_user(&g, argp, sizeof(g)))
		return -EFAULT;
	if (kva_check_gang_create(&g))
		return -EINVAL;
	names = memdup_user(u64_to_user_ptr(g.members),
			    (size_t)g.nr_members * KVARENA_NAME_LEN);
	if (IS_ERR(names))
		return PTR_ERR(names);
	ret = -EINVAL;
	for (r = 0; r < g.nr_members; r++) {
		if (kva_name_valid(names[r]) || !strcmp(names[r], g.name))
			goto out_free;
		for (s = 0; s < r; s++)
			if (!strcmp(names[r], names[s]))
				goto out_free;
	}

	mutex_lock(&kva_arenas_lock);
	ret = -ENOENT;
	for (r = 0; r < g.nr_members; r++) {
		m[r] = kva_arena_get_locked(names[r]);
		if (!m[r])
			break;
	}
	if (r == g.nr_members) {
		gang_describe(&c, &g, m, g.nr_members);
		ret = 0;
	}
	mutex_unlock(&kva_arenas_lock);
	if (ret)
		goto out_put;

	/* The policy is member 0's as its owner set it: no check to redo. */
	ret = kva_arena_make(&c, &a);
	if (ret)
		goto out_put;
	/* Frames are the members': cleared as theirs would be. */
	a->flags = m[0]->flags;
	a->core.clear = m[0]->core.clear;
	a->nr_backed = m[0]->nr_backed;
	/* CUDA memory: its scrubbers' table (the imports are the members'). */
	c.flags = a->flags;
	ret = kva_arena_table_grow(a, kva_scrub_table_bytes(&c));
	if (!ret)
		ret = kva_scrub_init(a);
	if (ret)
		goto out_put_gang;
	a->members = kcalloc(g.nr_members, sizeof(*a->members), GFP_KERNEL);
	if (!a->members) {
		ret = -ENOMEM;
		goto out_put_gang;
	}

	mutex_lock(&kva_arenas_lock);
	other = kva_arena_get_locked(g.name);
	if (other) {
		kva_arena_put(other);
		ret = -EEXIST;
		goto out_unlock;
	}
	/*
	 * Each member is checked and claimed under its own lock, so that a
	 * SET_BACKING or RESIZE that starts after sees @gang; one that does
	 * not fit sets the ones before it free again.
	 */
	for (r = 0; r < g.nr_members; r++) {
		a->members[r] = m[r];
		mutex_lock(&m[r]->lock);
		ret = member_fits(a, m[r]);
		if (!ret)
			m[r]->gang = a;
		mutex_unlock(&m[r]->lock);
		if (ret)
			break;
		fitted++;
	}
	if (!ret) {
		a->nr_members = g.nr_members;
		/* What the members' tenants left, gone before the gang's come. */
		if (a->scrub)
			ret = take_over(a);
		for (r = 0; !a->scrub && r < g.nr_members; r++)
			drain(m[r]);
	}
	if (!ret)
		ret = kva_arena_insert_locked(a);
	if (ret) {
		members_release(a, fitted);
		goto out_unlock;
	}
	mutex_unlock(&kva_arenas_lock);
	/* The gang keeps the member references; the list keeps the gang. */
	kfree(names);
	return 0;

out_unlock:
	mutex_unlock(&kva_arenas_lock);
	/* The gang's release must not put references it never took. */
	memset(a->members, 0, g.nr_members * sizeof(*a->members));
out_put_gang:
	kobject_put(&a->kobj);
out_put:
	for (r = 0; r < g.nr_members; r++)
		if (m[r])
			kva_arena_put(m[r]);
out_free:
	kfree(names);
	return ret;
}

/* The gang is destroyed (kva_arenas_lock held): its members are free. */
void kva_gang_kill(struct kva_arena *a)
{
	u32 r;

	lockdep_assert_held(&kva_arenas_lock);

	if (!a->members)
		return;
	/*
	 * The gang's tenants' data, cleared in every member first (CUDA
	 * members: left to their scrubbers) - unless a member is gone
	 * already (the module unloading: nobody gets the memory again).
	 */
	for (r = 0; r < a->nr_members && !a->members[r]->dead; r++)
		;
	if (r == a->nr_members && a->scrub)
		hand_back(a);
	else if (r == a->nr_members)
		drain(a);
	members_release(a, a->nr_members);
}

/* The gang is freed: its member references go. */
void kva_gang_free(struct kva_arena *a)
{
	u32 r;

	if (!a->members)
		return;
	for (r = 0; r < a->nr_members; r++)
		if (a->members[r])
			kva_arena_put(a->members[r]);
	kfree(a->members);
	a->members = NULL;
}

long kva_ioc_gang_token(struct kva_client *cl, void __user *argp)
{
	struct kva_arena *a = cl->arena;
	struct kvarena_gang_token t;
	int ret;

	if (copy_from_user(&t, argp, sizeof(t)))
		return -EFAULT;
	if (kva_check_gang_token(&t))
		return -EINVAL;
	if (cl->is_rank)
		return -EPERM;
	if (!a->members)
		return -EOPNOTSUPP;
	ret = kva_client_lock(cl, 0);
	if (ret)
		return ret;
	cl->ranks_fatal = t.flags & KVARENA_GANG_RANKS_FATAL;
	t.token = cl->token;
	t.nr_members = a->nr_members;
	mutex_unlock(&a->lock);
	return copy_to_user(argp, &t, sizeof(t)) ? -EFAULT : 0;
}

static struct kva_client *gang_client(struct kva_arena *a, u32 id)
{
	lockdep_assert_held(&a->lock);
	return id <= INT_MAX ? idr_find(&a->client_ids, id) : NULL;
}

long kva_ioc_join(struct kva_client *cl, void __user *argp, unsigned int how)
{
	struct kva_client *leader;
	struct kvarena_join j;
	struct kva_arena *a, *m;
	int ret;

	if (copy_from_user(&j, argp, sizeof(j)))
		return -EFAULT;
	if (kva_check_join(&j))
		return -EINVAL;

	mutex_lock(&kva_arenas_lock);
	if (cl->arena) {
		ret = -EBUSY;
		goto out_unlock;
	}
	a = kva_arena_get_locked(j.name);
	if (!a) {
		ret = -ENOENT;
		goto out_unlock;
	}
	ret = -EINVAL;
	if (!a->members)
		goto err_put;
	ret = -EACCES;
	if (!kva_arena_permits(a, KVARENA_ACC_ATTACH, how))
		goto err_put;
	mutex_lock(&a->lock);
	leader = gang_client(a, j.client_id);
	/* One answer for a wrong id, token or rank: a guess learns nothing. */
	ret = -ENOENT;
	if (!leader || leader->evicted || leader->token != j.token ||
	    j.rank >= a->nr_members)
		goto err_unlock;
	ret = -EPERM;
	if (!uid_eq(leader->uid, current_euid()) && !kva_admin(how))
		goto err_unlock;
	cl->is_rank = true;
	cl->rank = j.rank;
	cl->leader = leader;
	list_add_tail(&cl->rank_node, &leader->ranks);
	cl->pid = get_pid(task_tgid(current));
	cl->uid = current_euid();
	strscpy(cl->label, j.label, sizeof(cl->label));
	mutex_unlock(&a->lock);
	/* Pairs with smp_load_acquire() readers, as for ATTACH. */
	smp_store_release(&cl->arena, a);
	wake_up_interruptible_all(&cl->attach_wq);

	m = a->members[j.rank];
	j.mem_kind = m->mem_kind;
	j.frame_size = a->frame_size;
	j.nr_frames = a->core.nr_frames;
	j.mem_dev = m->mem_dev;
	memcpy(j.mem_uuid, m->mem_uuid, sizeof(j.mem_uuid));
	strscpy(j.member, m->name, sizeof(j.member));
	mutex_unlock(&kva_arenas_lock);
	/* Joined even if the answer cannot be written, as ATTACH is. */
	return copy_to_user(argp, &j, sizeof(j)) ? -EFAULT : 0;

err_unlock:
	mutex_unlock(&a->lock);
err_put:
	kva_arena_put(a);
out_unlock:
	mutex_unlock(&kva_arenas_lock);
	return ret;
}

/**
 * kva_rank_frame_fd() - FRAME_FD of a rank: its member's memory of a frame
 * the client holds - host members: the client's frames file of the
 * rank's member; CUDA members: the member's backing file, an import the
 * module cannot revoke, noted in the member's table (scrub.c) - or of a
 * frame the client is scrubbing, to clear it.
 * @cl:		the rank.
 * @ff:		the command; offset written.
 * @how:	KVA_HOW_* of the command.
 * @file:	out: a reference to the file.
 * @acc:	out: what the client may do with the frame.
 *
 * Return: 0, -ENOLINK once the client is gone, -ENODATA for members
 * without memory, -ENOMEM, or the core's answer for the handle.
 */
long kva_rank_frame_fd(struct kva_client *cl, struct kvarena_frame_fd *ff,
		       unsigned int how, struct file **file,
		       enum kva_access *acc)
{
	struct kva_arena *a = cl->arena;
	struct kva_client *leader;
	struct kva_backing *bk;
	bool scrubbing = false;
	int ret, idx;

	mutex_lock(&a->lock);
	leader = cl->leader;
	ret = -ENOLINK;
	if (!leader)
		goto out;
	ret = kva_core_lookup(&a->core, &leader->core, ff->handle);
	if (ret < 0 && a->scrub) {
		idx = kva_scrub_holds(leader, ff->handle, how);
		if (idx >= 0) {
			ret = idx;
			scrubbing = true;
		}
	}
	if (ret < 0)
		goto out;
	idx = ret;
	*acc = scrubbing ? KVA_ACCESS_WRITE : kva_frame_access(a, leader, idx);
	if (leader->gang_fmaps) {
		ff->offset = (u64)idx * a->frame_size;
		*file = get_file(leader->gang_fmaps[cl->rank]);
		ret = 0;
		goto out;
	}
	/* A member's backing is constant while it is in the gang. */
	bk = &a->members[cl->rank]->backing[idx];
	ret = -ENODATA;
	if (!a->scrub || !bk->file)
		goto out;
	ret = scrubbing ? 0 : kva_scrub_note_member_import(a,
				a->members[cl->rank], idx, how);
	if (ret)
		goto out;
	ff->offset = bk->offset;
	*file = get_file(bk->file);
out:
	mutex_unlock(&a->lock);
	return ret;
}

/*
 * Client @cl leaves gang @a (release or eviction; a->lock held): its
 * ranks lose it.  Their mappings are its frames files', detached and
 * zapped by the caller; poll() tells them (EPOLLHUP).
 */
void kva_gang_leader_gone(struct kva_arena *a, struct kva_client *cl)
{
	struct kva_client *r, *tmp;

	lockdep_assert_held(&a->lock);
	if (list_empty(&cl->ranks))
		return;
	list_for_each_entry_safe(r, tmp, &cl->ranks, rank_node) {
		WRITE_ONCE(r->leader, NULL);
		list_del_init(&r->rank_node);
	}
	wake_up_interruptible_all(&a->pressure_wq);
}

/*
 * A rank's file is released: it leaves its client; with
 * KVARENA_GANG_RANKS_FATAL the client is evicted with it.
 */
void kva_rank_release(struct kva_client *cl)
{
	struct kva_arena *a = cl->arena;
	struct kva_client *leader;
	bool fatal = false;
	u32 id = 0, held;

	mutex_lock(&a->lock);
	leader = cl->leader;
	if (leader) {
		fatal = leader->ranks_fatal && !leader->evicted;
		id = leader->id;
		list_del_init(&cl->rank_node);
		cl->leader = NULL;
	}
	mutex_unlock(&a->lock);
	if (fatal && !kva_evict_client(a, id, &held))
		pr_debug("kvarena: %s: rank %u gone, client %u evicted (%u frames)\n",
			 a->name, cl->rank, id, held);
	kva_arena_put(a);
}
