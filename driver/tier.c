// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: a lower tier for an arena's prefix cache.
 *
 * An arena (the upper one) may name a host arena below it
 * (ARENA_SET_TIER).  Cached frames the upper arena would drop are copied
 * down instead, and copied back up on request, by an agent: a process of
 * the arena's owner (kvarenactl agent) that asks for jobs (TIER), copies
 * each frame with whatever the memory needs (memcpy between two host
 * mappings; cuMemcpy for a CUDA arena) and gives the jobs back.  The
 * module never copies: it decides what moves, keeps both ends of a copy
 * still while it runs, and makes the result visible only once the agent
 * says the whole frame is there.
 *
 * A job holds its two frames through two clients of its own (struct
 * kva_tier_job.ucl and .lcl: core clients of the frame's cache domain,
 * on no arena's client list), so the core's rules keep them: a held
 * frame is neither reclaimed nor taken by a shrink, and a frame coming
 * back from a job is cached or freed as any other.  The agent reaches
 * the frames through grants (struct kva_tier_grant), which FRAME_FD and
 * the frames files' faults consult after the core's own answer; a grant
 * goes, and the agent's PTEs of the frame are zapped, before the job's
 * frames can move anywhere.
 *
 *   demotion   the upper arena's oldest cached frame, taken from the LRU
 *              by the job's upper client (read by the agent), and a fresh
 *              lower frame of the same domain (written by it).  Done: the
 *              lower frame is published under the key and left cached;
 *              the upper frame is reclaimed unless a LOOKUP holds it now.
 *              Failed or agent gone: the lower frame is freed and the
 *              upper one is cached again - never lost, never torn.
 *   promotion  PROMOTE's caller waits; a fresh upper frame (written by the
 *              agent) and the cached lower frame (read).  The upper frame
 *              is the caller's from the start - taken as an ALLOC of its
 *              would be, within its max, in its held and charge - but
 *              lent to the job (the core's kva_core_lend()), so the
 *              caller can neither map nor free it half written.  Done:
 *              the upper frame is published and the caller keeps it, as
 *              a LOOKUP of a cached frame would give it; the lower frame
 *              is cached again.  Agent gone: the job waits for the next
 *              agent.  The caller's wait over (timeout, signal): a job no
 *              agent took ends at once, its frame back to the arena; one
 *              an agent has runs on, still charged to the caller, and its
 *              frame ends up cached.  The caller gone (release, EVICT):
 *              its jobs no agent took end, and the frames of those an
 *              agent has pass to the jobs' own clients (kva_tier_job.ucl)
 *              until the agent gives them back - charged to no tenant,
 *              and never torn from under the agent.
 *
 * Locks: kva_arenas_lock (the link), then the upper arena's lock, then
 * the lower arena's.  An arena with a lower tier is below no other and
 * its lower arena has none, so the order has no cycle.  The job lists and
 * counters are under the upper arena's lock; each arena's grants under its
 * own.
 */
#include <linux/file.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kva.h"

/*
 * Demotions under way per tier, and promotions one PROMOTE asks for; a
 * client's promotions under way are bounded by its max.
 */
#define KVA_TIER_MAX_JOBS	256u
/* An agent with nothing to do looks again this often. */
#define KVA_TIER_RECHECK	HZ

struct kva_tier_grant {
	struct list_head node;		/* arena->tier_grants */
	struct kva_client *cl;		/* the agent's client of that arena */
	u64 handle;
	enum kva_access acc;
};

/* A PROMOTE waiting for its copies (on its caller's stack). */
struct kva_tier_call {
	struct kva_client *cl;
	u32 pending;			/* jobs not finished */
	s64 *res;			/* per entry: the handle, or -errno */
};

struct kva_tier_job {
	struct list_head node;		/* tier->queued, ->taken or ->ending */
	struct list_head lnode;		/* a list of the one ending it */
	u32 op;				/* KVARENA_TIER_* */
	bool on_list;
	struct kva_client *agent;	/* taken: the agent's upper client */
	struct file *lfile;		/* taken: its lower client's file */
	/*
	 * A promotion: @owner, the client that lent its upper frame (NULL
	 * once gone: the frame is @ucl's); @call, its PROMOTE while that
	 * waits for the job, else NULL.
	 */
	struct kva_client *owner;
	struct kva_tier_call *call;
	u32 slot;			/* its entry in @call */
	int result;			/* given back: the agent's result */
	u64 upper;			/* the upper frame's handle */
	u64 lower;			/* the lower frame's handle */
	u8 key[KVA_KEY_LEN];
	struct kva_tier_grant ug;	/* the agent's way to the upper frame */
	struct kva_tier_grant lg;	/* and to the lower one */
	struct kva_client ucl;		/* the job's hold in the upper arena */
	struct kva_client lcl;		/* and in the lower arena */
};

/* The core client that holds promotion @job's upper frame. */
static struct kva_core_client *job_holder(struct kva_tier_job *job)
{
	return job->owner ? &job->owner->core : &job->ucl.core;
}

/*
 * The upper arena's side (struct kva_arena.tier).  Made at the first
 * SET_TIER and kept until the arena is freed, so an agent may wait on it
 * while the tier is taken away.
 */
struct kva_tier {
	struct kva_arena *lower;	/* a reference; NULL: no tier now */
	u32 free_target;
	u32 nr_jobs;
	u32 nr_demoting;		/* demotions taken, not given back */
	bool agent_seen;		/* a TIER take since the link */
	struct list_head queued;	/* promotions no agent has taken */
	struct list_head taken;		/* jobs agents have */
	struct list_head ending;	/* jobs given back, locks dropped to zap */
	wait_queue_head_t agent_wq;	/* agents waiting for work */
	u64 seq;			/* moves whenever there may be work */
	wait_queue_head_t done_wq;	/* PROMOTEs waiting for copies */
	u64 demoted;			/* frames copied down, ever */
	u64 promoted;			/* frames copied up, ever */
	u64 failed;			/* copies given back failed or lost */
};

static bool tier_linked(const struct kva_arena *a)
{
	return a->tier && a->tier->lower;
}

static u32 free_target(const struct kva_arena *a)
{
	u32 t = a->tier->free_target ?: a->low_watermark;

	return t ?: 1;
}

/* Tell waiting agents to look again (upper arena locked). */
static void agent_kick(struct kva_tier *t)
{
	t->seq++;
	wake_up_interruptible(&t->agent_wq);
}

/**
 * kva_tier_pressure() - the upper arena's free frames changed: wake an
 * agent if cached frames should go down now.
 * @a:	an arena, locked.
 */
void kva_tier_pressure(struct kva_arena *a)
{
	lockdep_assert_held(&a->lock);
	if (tier_linked(a) && a->core.nr_cached &&
	    a->core.nr_free + a->tier->nr_demoting < free_target(a) &&
	    wq_has_sleeper(&a->tier->agent_wq))
		agent_kick(a->tier);
}

/* ---- grants: the agent's way to a job's frames ------------------------ */

static void grant_add(struct kva_arena *a, struct kva_tier_grant *g,
		      struct kva_client *cl, u64 handle, enum kva_access acc)
{
	g->cl = cl;
	g->handle = handle;
	g->acc = acc;
	list_add_tail(&g->node, &a->tier_grants);
}

static void grant_del(struct kva_tier_grant *g)
{
	if (g->cl)
		list_del(&g->node);
	g->cl = NULL;
}

static struct kva_tier_grant *grant_find(struct kva_arena *a,
					 struct kva_client *cl, u32 idx)
{
	struct kva_tier_grant *g;

	list_for_each_entry(g, &a->tier_grants, node)
		if (g->cl == cl && KVA_HANDLE_IDX(g->handle) == idx)
			return g;
	return NULL;
}

/**
 * kva_frame_access() - what client @cl may do with frame @idx of @a: the
 * core's answer, or what a tier job grants its agent.
 * @a:		the arena, locked.
 * @cl:		the client.
 * @idx:	frame index, not trusted.
 *
 * Return: enum kva_access.
 */
enum kva_access kva_frame_access(struct kva_arena *a, struct kva_client *cl,
				 u32 idx)
{
	enum kva_access acc = kva_core_frame_access(&a->core, &cl->core, idx);
	struct kva_tier_grant *g;

	lockdep_assert_held(&a->lock);
	if (acc != KVA_ACCESS_NONE || list_empty(&a->tier_grants))
		return acc;
	g = grant_find(a, cl, idx);
	return g ? g->acc : KVA_ACCESS_NONE;
}

/**
 * kva_tier_granted() - is @handle a frame a tier job lets agent @cl map?
 * @a:		the arena, locked.
 * @cl:		the client.
 * @handle:	the handle, not trusted.
 * @acc:	set to the access granted.
 *
 * Return: the frame's index, or -ENOENT.
 */
int kva_tier_granted(struct kva_arena *a, struct kva_client *cl, u64 handle,
		     enum kva_access *acc)
{
	struct kva_tier_grant *g;

	lockdep_assert_held(&a->lock);
	if (list_empty(&a->tier_grants))
		return -ENOENT;
	g = grant_find(a, cl, KVA_HANDLE_IDX(handle));
	if (!g || g->handle != handle)
		return -ENOENT;
	*acc = g->acc;
	return (int)KVA_HANDLE_IDX(handle);
}

/* ---- jobs ------------------------------------------------------------- */

static struct kva_tier_job *job_alloc(void)
{
	struct kva_tier_job *job = kzalloc(sizeof(*job), GFP_KERNEL_ACCOUNT);

	if (job) {
		INIT_LIST_HEAD(&job->node);
		INIT_LIST_HEAD(&job->lnode);
		INIT_LIST_HEAD(&job->ucl.node);
		INIT_LIST_HEAD(&job->lcl.node);
	}
	return job;
}

/* A job's client of @a, in domain @dom: it holds one frame at most. */
static int job_attach(struct kva_arena *a, struct kva_client *jc,
		      struct kva_core_domain *dom)
{
	int ret = kva_core_attach_domain(&a->core, &jc->core, 0, 1, dom);

	if (!ret)
		jc->arena = a;
	return ret;
}

/* Let go of what a job's client of its arena holds (arena locked). */
static void job_detach(struct kva_client *jc)
{
	if (!jc->arena)
		return;
	kva_core_detach(&jc->arena->core, &jc->core);
	jc->arena = NULL;
}

/* Remove @job from its tier's lists and counts (upper arena locked). */
static void job_unlist(struct kva_tier *t, struct kva_tier_job *job)
{
	if (job->on_list) {
		list_del(&job->node);
		job->on_list = false;
	}
}

/*
 * The end of promotion @job's upper frame (upper arena locked, grants
 * gone, the agent's PTEs zapped): published and its caller's if @ok and
 * the caller still waits, published and cached if nobody waits, back to
 * the arena if not @ok.  Returns the handle the caller now holds, or
 * -errno.
 */
static s64 promote_finish(struct kva_arena *ua, struct kva_tier_job *job,
			  bool ok)
{
	struct kva_core_client *cc = job_holder(job);
	struct kva_core_prefix e = { .handle = job->upper };
	struct kva_core *c = &ua->core;
	u32 pidx;
	s64 res;

	if (job->owner)
		kva_core_unlend(c, job->upper);
	memcpy(e.key, job->key, KVA_KEY_LEN);
	if (ok)
		ok = kva_core_publish(c, cc, &e, 1) >= 0;
	if (job->call && ok && !(e.flags & KVA_PREFIX_EXISTED))
		return job->upper;
	/* Published: cached now; not: free. */
	if (job->owner)
		kva_core_free(c, cc, &job->upper, 1);
	else
		job_detach(&job->ucl);
	if (!ok)
		return -EIO;
	if (!job->call)
		return -ECANCELED;
	/* The key came into the arena meanwhile: that frame, then. */
	pidx = kva_core_find(c, job->key, cc->dom);
	res = pidx == KVA_NIL ? -ENOENT : kva_core_take_cached(c, cc, pidx);
	/* Held by others (LOOKUP shares it), or gone again. */
	if (res == -ENOENT)
		res = pidx != KVA_NIL ? -EEXIST : -ENOSPC;
	return res;
}

/*
 * The end of @job (both arenas locked, grants gone, the agent's PTEs
 * zapped): use its copy if @ok, else undo it.  The job is freed by the
 * caller, after the locks (its lower file reference goes then).
 */
static void job_finish(struct kva_arena *ua, struct kva_tier_job *job,
		       bool ok)
{
	struct kva_tier *t = ua->tier;
	struct kva_arena *la = t->lower;
	struct kva_core_prefix e = { .handle = 0 };
	struct kva_tier_call *call = job->call;
	u32 uidx = KVA_HANDLE_IDX(job->upper);
	s64 res = -EIO;
	/* Whose copy, for its domain's figures (figures.c). */
	u64 dom = kva_domain_id(job->op == KVARENA_TIER_DEMOTE ?
				job->ucl.core.dom : job_holder(job)->dom);

	job_unlist(t, job);
	if (job->op == KVARENA_TIER_DEMOTE) {
		memcpy(e.key, job->key, KVA_KEY_LEN);
		t->nr_demoting--;
		if (ok) {
			/* Below first: the key is never in neither tier. */
			e.handle = job->lower;
			ok = kva_core_publish(&la->core, &job->lcl.core, &e,
					      1) >= 0;
		}
		job_detach(&job->lcl);
		job_detach(&job->ucl);
		if (ok && ua->core.frames[uidx].gen ==
			  KVA_HANDLE_GEN(job->upper))
			kva_core_reclaim_frame(&ua->core, uidx);
	} else {
		job_detach(&job->lcl);
		res = promote_finish(ua, job, ok);
		ok = res != -EIO;
	}
	/* A promotion no agent took was never tried: not counted. */
	if (job->agent || job->op == KVARENA_TIER_DEMOTE || ok) {
		if (ok)
			job->op == KVARENA_TIER_DEMOTE ? t->demoted++ :
							 t->promoted++;
		else
			t->failed++;
		kva_domain_copied(ua, dom, !ok ? 2 :
				  job->op == KVARENA_TIER_DEMOTE ? 0 : 1);
	}
	if (call) {
		call->res[job->slot] = res;
		call->pending--;
		wake_up_all(&t->done_wq);
	}
	t->nr_jobs--;
	kva_arena_update_pressure(ua);
	kva_arena_update_pressure(la);
}

static void job_free(struct kva_tier_job *job)
{
	if (job->lfile)
		fput(job->lfile);
	kfree(job);
}

/* The agent's lower client of a taken job. */
static struct kva_client *job_lagent(const struct kva_tier_job *job)
{
	return job->lfile->private_data;
}

/*
 * Zap what the agent may have mapped of a job's frames; the grants are
 * gone already, so nothing maps them again.  No arena lock held.
 */
static void job_zap(struct kva_tier_job *job, bool upper_too)
{
	struct kva_client *lcl = job_lagent(job);

	if (upper_too && job->agent->fmap_file) {
		kva_fmap_revoke_begin(job->agent, false);
		kva_fmap_zap(job->agent, KVA_HANDLE_IDX(job->upper));
		kva_fmap_revoke_end(job->agent);
	}
	if (lcl->fmap_file) {
		kva_fmap_revoke_begin(lcl, false);
		kva_fmap_zap(lcl, KVA_HANDLE_IDX(job->lower));
		kva_fmap_revoke_end(lcl);
	}
}

/* Lock the upper arena and, if it still has one, its lower arena. */
static struct kva_arena *lock_both(struct kva_arena *ua)
{
	mutex_lock(&ua->lock);
	if (!tier_linked(ua))
		return NULL;
	mutex_lock_nested(&ua->tier->lower->lock, SINGLE_DEPTH_NESTING);
	return ua->tier->lower;
}

static void unlock_both(struct kva_arena *ua, struct kva_arena *la)
{
	if (la)
		mutex_unlock(&la->lock);
	mutex_unlock(&ua->lock);
}

/*
 * lock_both() for a command of client @cl: 0 with *@la set (NULL if the
 * arena has no tier now), or -ESHUTDOWN (nothing locked) once an
 * administrator evicted it.
 */
static int client_lock_both(struct kva_client *cl, struct kva_arena **la)
{
	int ret = kva_client_lock(cl, 0);

	if (ret)
		return ret;
	mutex_unlock(&cl->arena->lock);
	*la = lock_both(cl->arena);
	return 0;
}

/*
 * Whether a domain's keys may go below.  A private domain's number means
 * one client of one arena (KVARENA_ATTACH_PRIVATE): in the lower arena
 * the same number may be someone else's, so its frames stay above.
 */
static bool tierable(const struct kva_core_domain *dom)
{
	return KVARENA_DOMAIN_KIND(kva_domain_id(dom)) !=
	       KVARENA_DOMAIN_KIND_PRIVATE;
}

/* Cached frames looked at for one demotion, at most: private ones stay. */
#define KVA_TIER_SCAN	64

/*
 * Set @job up as a demotion of the upper arena's oldest cached frame that
 * may go below (both arenas locked).  Returns 1 with @job set up, 0 if
 * the frame needed no copy (its key is below already: reclaimed at once),
 * -errno if nothing more can go down now.
 */
static int demote_one(struct kva_arena *ua, struct kva_arena *la,
		      struct kva_tier_job *job, struct kva_domain **spare)
{
	struct kva_core *uc = &ua->core;
	struct kva_core_domain *dom, *ldom;
	u32 idx = uc->lru_head, lidx, n;
	bool made = false;
	s64 h;
	u64 lh;
	int ret;

	for (n = 0; idx != KVA_NIL && !tierable(uc->frames[idx].dom); n++) {
		if (n == KVA_TIER_SCAN)
			return -ENOENT;
		idx = uc->frames[idx].next;	/* the LRU, newer */
	}
	if (idx == KVA_NIL)
		return -ENOENT;
	dom = uc->frames[idx].dom;
	ldom = kva_domain_find(la, kva_domain_id(dom));
	lidx = ldom ? kva_core_find(&la->core, uc->keys[idx], ldom) : KVA_NIL;
	if (lidx != KVA_NIL) {
		/* Already below: the copy there is the same KV. */
		kva_core_reclaim_frame(uc, idx);
		return 0;
	}
	if (!ldom) {
		if (!*spare)
			return -ENOMEM;
		ldom = kva_domain_get(la, kva_domain_id(dom), spare);
		made = true;
	}

	/*
	 * The lower frame first: where none can be had, the upper frame
	 * stays where it is on the LRU.
	 */
	ret = job_attach(la, &job->lcl, ldom);
	if (ret) {
		if (made)
			kva_domain_put_unused(la, ldom);
		return ret;
	}
	/* Charged to the agent's dmem cgroup: the copy is its work. */
	ret = kva_dmem_alloc(la, &job->lcl.core, &lh, 1, false, 0);
	if (ret != 1) {
		if (ret == -EDQUOT)
			ret = -ENOSPC;
		/* Frames to clear first: the lower arena's worker does it. */
		if (ret == -EAGAIN)
			kva_clear_kick(la);
		ret = ret < 0 ? ret : -ENOSPC;
		goto err_detach;
	}
	ret = job_attach(ua, &job->ucl, dom);
	if (ret)
		goto err_detach;
	h = kva_core_take_cached(uc, &job->ucl.core, idx);
	if (h < 0) {
		ret = h;
		goto err_detach;
	}
	job->upper = h;
	job->lower = lh;
	memcpy(job->key, uc->keys[idx], KVA_KEY_LEN);
	job->op = KVARENA_TIER_DEMOTE;
	return 1;

err_detach:
	/* Detaching drops the domain's last reference, if it was made. */
	job_detach(&job->ucl);
	job_detach(&job->lcl);
	return ret;
}

/* Hand @job to agent @cl: its grants, its place on the taken list. */
static void job_give(struct kva_arena *ua, struct kva_arena *la,
		     struct kva_tier_job *job, struct kva_client *cl,
		     struct file *lfile)
{
	bool down = job->op == KVARENA_TIER_DEMOTE;

	job->agent = cl;
	job->lfile = get_file(lfile);
	grant_add(ua, &job->ug, cl, job->upper,
		  down ? KVA_ACCESS_READ : KVA_ACCESS_WRITE);
	grant_add(la, &job->lg, lfile->private_data, job->lower,
		  down ? KVA_ACCESS_WRITE : KVA_ACCESS_READ);
	list_add_tail(&job->node, &ua->tier->taken);
	job->on_list = true;
}

/* The lower arena's client behind @fd, the caller's. */
static struct file *lower_file(struct kva_arena *ua, int fd)
{
	struct file *f = fget(fd);
	struct kva_client *lcl;
	struct kva_arena *la;

	if (!f)
		return ERR_PTR(-EBADF);
	lcl = f->f_op == &kva_fops ? f->private_data : NULL;
	/* Pairs with smp_store_release() in kva_ioc_attach(). */
	la = lcl ? smp_load_acquire(&lcl->arena) : NULL;
	if (!la || la->upper != ua || READ_ONCE(lcl->evicted)) {
		fput(f);
		return ERR_PTR(-EINVAL);
	}
	return f;
}

#define KVA_TIER_TAKE_MAX	64u	/* jobs one take hands out */

static void job_ending(struct kva_tier *t, struct kva_tier_job *job,
		       struct list_head *mine);
static void jobs_end(struct kva_arena *ua, struct list_head *mine,
		     bool requeue);

/*
 * A take whose jobs the agent cannot learn (a bad pointer): those jobs
 * end undone, or wait for another agent; the agent's others go on.
 */
static void take_undo(struct kva_client *cl, struct kva_tier_job **given,
		      u32 n)
{
	struct kva_arena *ua = cl->arena, *la;
	struct kva_tier *t = ua->tier;
	struct kva_tier_job *job, *tmp;
	LIST_HEAD(mine);
	u32 i;

	la = lock_both(ua);
	list_for_each_entry_safe(job, tmp, &t->taken, node) {
		for (i = 0; i < n; i++) {
			if (job == given[i] && job->agent == cl) {
				job->result = -EFAULT;
				job_ending(t, job, &mine);
				break;
			}
		}
	}
	unlock_both(ua, la);
	jobs_end(ua, &mine, true);
}

static long tier_take(struct kva_client *cl, struct kvarena_tier *tr,
		      struct kvarena_tier __user *ut)
{
	struct kva_arena *ua = cl->arena, *la;
	struct kva_tier *t = ua->tier;
	unsigned long deadline = jiffies + msecs_to_jiffies(tr->timeout_ms);
	u32 want = min(tr->count, KVA_TIER_TAKE_MAX), n = 0, i;
	struct kva_tier_job **jobs = NULL, **given = NULL;
	struct kvarena_tier_job *out = NULL;
	struct kva_domain **spares = NULL;
	struct file *lfile;
	long ret = -ENOMEM;

	lfile = lower_file(ua, tr->lower_fd);
	if (IS_ERR(lfile))
		return PTR_ERR(lfile);
	out = kcalloc(want, sizeof(*out), GFP_KERNEL_ACCOUNT);
	jobs = kcalloc(want, sizeof(*jobs), GFP_KERNEL_ACCOUNT);
	given = kcalloc(want, sizeof(*given), GFP_KERNEL_ACCOUNT);
	spares = kcalloc(want, sizeof(*spares), GFP_KERNEL_ACCOUNT);
	if (!out || !jobs || !given || !spares)
		goto out_free;
	for (i = 0; i < want; i++) {
		jobs[i] = job_alloc();
		if (!jobs[i])
			goto out_free;
	}

	for (;;) {
		struct kva_tier_job *job, *tmp;
		long left, slept;
		bool dirty;
		u64 seq;

		/* Spare domains, again where a failed demotion used one. */
		for (i = n; i < want; i++) {
			if (!spares[i])
				spares[i] = kva_domain_alloc();
			if (!spares[i]) {
				ret = -ENOMEM;
				goto out_free;
			}
		}
		ret = client_lock_both(cl, &la);
		if (ret)
			goto out_free;
		if (!la)
			ret = -EOPNOTSUPP;
		else if (la != ((struct kva_client *)lfile->private_data)->arena)
			ret = -EINVAL;	/* a new lower tier since */
		else if (cl->evicted)
			ret = -ESHUTDOWN;
		if (ret) {
			unlock_both(ua, la);
			goto out_free;
		}
		t->agent_seen = true;
		list_for_each_entry_safe(job, tmp, &t->queued, node) {
			if (n == want)
				break;
			list_del(&job->node);
			job->on_list = false;
			job_give(ua, la, job, cl, lfile);
			given[n] = job;
			out[n++] = (struct kvarena_tier_job){
				.upper = job->upper, .lower = job->lower,
				.op = job->op };
		}
		dirty = false;
		while (n < want && t->nr_demoting < KVA_TIER_MAX_JOBS &&
		       ua->core.nr_free + t->nr_demoting < free_target(ua)) {
			struct kva_tier_job *nj = jobs[n];
			int r = demote_one(ua, la, nj, &spares[n]);

			dirty = r == -EAGAIN;
			if (r < 0)
				break;
			if (!r)
				continue;
			jobs[n] = NULL;
			t->nr_jobs++;
			t->nr_demoting++;
			job_give(ua, la, nj, cl, lfile);
			given[n] = nj;
			out[n++] = (struct kvarena_tier_job){
				.upper = nj->upper, .lower = nj->lower,
				.op = nj->op };
		}
		if (n) {
			kva_arena_update_pressure(ua);
			kva_arena_update_pressure(la);
		}
		seq = t->seq;
		if (dirty && !n)
			kobject_get(&la->kobj);
		unlock_both(ua, la);
		/*
		 * The lower arena's free frames hold other domains' data:
		 * clear some, in the agent's time, and look again.
		 */
		if (dirty && !n) {
			u32 cleared = kva_clear_some(la);

			kva_arena_put(la);
			if (cleared)
				continue;
		}
		if (n || !tr->timeout_ms)
			break;
		left = (long)(deadline - jiffies);
		if (left <= 0)
			break;
		slept = wait_event_interruptible_timeout(t->agent_wq,
				READ_ONCE(t->seq) != seq,
				min_t(long, left, KVA_TIER_RECHECK));
		if (slept < 0) {
			ret = -EINTR;
			goto out_free;
		}
	}
	ret = n ? kva_copy_out(u64_to_user_ptr(tr->jobs), out,
			       n * sizeof(*out), 0) : 0;
	if (!ret)
		ret = kva_copy_out(&ut->nr_done, &n, sizeof(n), 0);
	if (ret && n)
		take_undo(cl, given, n);
out_free:
	for (i = 0; jobs && i < want; i++)
		kfree(jobs[i]);
	for (i = 0; spares && i < want; i++)
		kva_domain_free(spares[i]);
	kfree(spares);
	kfree(given);
	kfree(jobs);
	kfree(out);
	fput(lfile);
	return ret;
}

/*
 * Set a taken job aside for its end (both arenas locked): its grants go,
 * and it waits on t->ending - where promote_abandon() still finds it -
 * while the locks are dropped to zap the agent's PTEs.
 */
static void job_ending(struct kva_tier *t, struct kva_tier_job *job,
		       struct list_head *mine)
{
	grant_del(&job->ug);
	grant_del(&job->lg);
	list_move_tail(&job->node, &t->ending);
	list_add_tail(&job->lnode, mine);
}

/*
 * End the jobs on @mine (set aside by job_ending(), no lock held): zap
 * what the agent may map of their frames, then use each copy whose
 * result is 0 and undo the others - but with @requeue a promotion whose
 * caller still waits goes back to the queue for the next agent.
 */
static void jobs_end(struct kva_arena *ua, struct list_head *mine,
		     bool requeue)
{
	struct kva_tier_job *job, *tmp;
	struct kva_tier *t = ua->tier;
	struct kva_arena *la;
	LIST_HEAD(dead);

	list_for_each_entry(job, mine, lnode)
		job_zap(job, true);
	la = lock_both(ua);
	list_for_each_entry_safe(job, tmp, mine, lnode) {
		list_del_init(&job->lnode);
		if (requeue && job->op == KVARENA_TIER_PROMOTE && job->call) {
			/* The frames stay put; the next agent copies. */
			fput(job->lfile);
			job->lfile = NULL;
			job->agent = NULL;
			list_move_tail(&job->node, &t->queued);
			agent_kick(t);
			continue;
		}
		job_finish(ua, job, job->result == 0);
		list_add_tail(&job->lnode, &dead);
	}
	unlock_both(ua, la);
	list_for_each_entry_safe(job, tmp, &dead, lnode)
		job_free(job);
}

static long tier_done(struct kva_client *cl, struct kvarena_tier *tr,
		      struct kvarena_tier __user *ut)
{
	struct kva_arena *ua = cl->arena, *la;
	struct kva_tier *t = ua->tier;
	struct kvarena_tier_job *in;
	struct kva_tier_job **jobs;
	u32 n = tr->count, i, j;
	LIST_HEAD(mine);
	long ret;

	in = kvmalloc_array(n, sizeof(*in), GFP_KERNEL_ACCOUNT);
	jobs = kvmalloc_array(n, sizeof(*jobs), GFP_KERNEL_ACCOUNT);
	ret = -ENOMEM;
	if (!in || !jobs)
		goto out_free;
	ret = kva_copy_in(in, u64_to_user_ptr(tr->jobs), n * sizeof(*in), 0);
	if (ret)
		goto out_free;
	ret = client_lock_both(cl, &la);
	if (ret)
		goto out_free;
	/* All or nothing: find every job before any ends. */
	for (i = 0; i < n && !ret; i++) {
		struct kva_tier_job *job;

		jobs[i] = NULL;
		list_for_each_entry(job, &t->taken, node) {
			if (job->agent == cl && job->upper == in[i].upper &&
			    job->lower == in[i].lower && job->op == in[i].op) {
				jobs[i] = job;
				break;
			}
		}
		if (!jobs[i] || in[i].result > 0)
			ret = jobs[i] ? -EINVAL : -ENOENT;
		for (j = 0; j < i && !ret; j++)
			if (jobs[j] == jobs[i])
				ret = -EINVAL;
	}
	for (i = 0; !ret && i < n; i++) {
		jobs[i]->result = in[i].result;
		job_ending(t, jobs[i], &mine);
	}
	unlock_both(ua, la);
	if (ret)
		goto out_free;
	jobs_end(ua, &mine, false);
	ret = kva_copy_out(&ut->nr_done, &n, sizeof(n), 0);
out_free:
	kvfree(jobs);
	kvfree(in);
	return ret;
}

/**
 * kva_ioc_tier() - TIER: an agent takes copies to make, or gives them
 * back done.
 * @cl:		the agent's client of the upper arena.
 * @argp:	struct kvarena_tier.
 * @how:	KVA_HOW_*.
 *
 * Return: 0 or -errno (see the uapi header).
 */
long kva_ioc_tier(struct kva_client *cl, void __user *argp, unsigned int how)
{
	struct kva_arena *a = cl->arena;
	struct kvarena_tier tr;
	long ret;

	if (how & KVA_HOW_URING)
		return -EPERM;
	ret = kva_copy_in(&tr, argp, sizeof(tr), how);
	if (ret)
		return ret;
	if (kva_check_tier(&tr))
		return -EINVAL;
	ret = kva_client_lock(cl, how);
	if (ret)
		return ret;
	if (!tier_linked(a))
		ret = -EOPNOTSUPP;
	else if (!kva_arena_owner(a, how))
		ret = -EPERM;
	mutex_unlock(&a->lock);
	if (ret)
		return ret;
	return (tr.flags & KVARENA_TIER_DONE) ? tier_done(cl, &tr, argp) :
					       tier_take(cl, &tr, argp);
}

/**
 * kva_tier_agent_gone() - agent @cl's file is going: its demotions end
 * undone, its promotions wait for the next agent.
 * @cl:	a client of an arena, no lock held.
 */
void kva_tier_agent_gone(struct kva_client *cl)
{
	struct kva_arena *ua = cl->arena, *la;
	struct kva_tier_job *job, *tmp;
	struct kva_tier *t = ua->tier;
	LIST_HEAD(mine);

	if (!t)
		return;
	la = lock_both(ua);
	list_for_each_entry_safe(job, tmp, &t->taken, node) {
		if (job->agent != cl)
			continue;
		job->result = -ECANCELED;
		job_ending(t, job, &mine);
	}
	unlock_both(ua, la);
	if (!list_empty(&mine))
		jobs_end(ua, &mine, true);
}

/* ---- PROMOTE ---------------------------------------------------------- */

/*
 * Queue promotions of the leading run of @e that is below and cached
 * there (both arenas locked): each lower frame held by its job, each
 * upper frame taken by the caller - one allocation, within its max - and
 * lent to the job.  @uh: room for @count handles.  Returns how many, or
 * -errno for none.
 */
static int promote_queue(struct kva_client *cl, struct kva_arena *la,
			 struct kva_core_prefix *e, u32 count, u64 *uh,
			 struct kva_tier_job **jobs, struct kva_tier_call *call)
{
	struct kva_arena *ua = cl->arena;
	struct kva_tier *t = ua->tier;
	struct kva_core_domain *dom = cl->core.dom;
	struct kva_core_domain *ldom;
	u32 n, i, got;
	int ret;

	ldom = tierable(dom) ? kva_domain_find(la, kva_domain_id(dom)) : NULL;
	for (n = 0; n < count; n++) {
		struct kva_tier_job *job = jobs[n];
		u32 lidx = ldom ? kva_core_find(&la->core, e[n].key, ldom) :
			   KVA_NIL;
		s64 lh;

		if (lidx == KVA_NIL ||
		    kva_core_find(&ua->core, e[n].key, dom) != KVA_NIL)
			break;
		if (job_attach(la, &job->lcl, ldom))
			break;
		/* Not cached: another PROMOTE has it (or a key given twice). */
		lh = kva_core_take_cached(&la->core, &job->lcl.core, lidx);
		if (lh < 0) {
			job_detach(&job->lcl);
			break;
		}
		job->lower = lh;
	}
	if (!n)
		return 0;
	ret = kva_dmem_alloc(ua, &cl->core, uh, n, true, 0);
	if (ret == -EDQUOT)
		ret = -ENOSPC;
	/* Frames to clear first: the arena's worker does it. */
	if (ret == -EAGAIN)
		kva_clear_kick(ua);
	got = ret > 0 ? ret : 0;
	for (i = got; i < n; i++)
		job_detach(&jobs[i]->lcl);
	if (!got)
		return ret;

	for (i = 0; i < got; i++) {
		struct kva_tier_job *job = jobs[i];

		WARN_ON_ONCE(kva_core_lend(&ua->core, &cl->core, uh[i]));
		job->upper = uh[i];
		memcpy(job->key, e[i].key, KVA_KEY_LEN);
		job->op = KVARENA_TIER_PROMOTE;
		job->owner = cl;
		job->call = call;
		job->slot = i;
		list_add_tail(&job->node, &t->queued);
		job->on_list = true;
		jobs[i] = NULL;
		t->nr_jobs++;
		call->pending++;
	}
	agent_kick(t);
	kva_arena_update_pressure(ua);
	kva_arena_update_pressure(la);
	return got;
}

/* Its caller no longer waits for @job, with @res (upper arena locked). */
static void job_unwait(struct kva_tier *t, struct kva_tier_job *job, s64 res)
{
	job->call->res[job->slot] = res;
	job->call->pending--;
	job->call = NULL;
	wake_up_all(&t->done_wq);
}

/*
 * The jobs of @owner, or of its PROMOTE @call, no agent has taken end:
 * their frames go back (both arenas locked).
 */
static void promote_drop(struct kva_arena *ua, struct kva_client *owner,
			 struct kva_tier_call *call)
{
	struct kva_tier *t = ua->tier;
	struct kva_tier_job *job, *tmp;

	list_for_each_entry_safe(job, tmp, &t->queued, node) {
		if (job->op != KVARENA_TIER_PROMOTE ||
		    (call ? job->call != call : job->owner != owner))
			continue;
		job_finish(ua, job, false);
		job_free(job);
	}
}

/**
 * kva_tier_client_gone() - client @cl leaves its arena (its file's
 * release, EVICT), before its frames go: its promotions no agent took
 * end, and the frames of those an agent has pass to the jobs' own
 * clients, so that nothing is taken from under the agent; a PROMOTE of
 * it still waiting ends with -ESHUTDOWN.
 * @cl:	a client of an arena, which is locked; its guarantee is dropped
 *	if it has promotions under way (it leaves).
 */
void kva_tier_client_gone(struct kva_client *cl)
{
	struct kva_arena *ua = cl->arena, *la;
	struct kva_tier *t = ua->tier;
	struct kva_tier_job *job;
	struct list_head *lists[2];
	bool mine = false;
	u32 i;

	lockdep_assert_held(&ua->lock);
	if (!t || !t->lower)
		return;
	lists[0] = &t->taken;
	lists[1] = &t->ending;
	la = t->lower;
	mutex_lock_nested(&la->lock, SINGLE_DEPTH_NESTING);
	promote_drop(ua, cl, NULL);
	for (i = 0; i < ARRAY_SIZE(lists); i++) {
		list_for_each_entry(job, lists[i], node) {
			if (job->op != KVARENA_TIER_PROMOTE || job->owner != cl)
				continue;
			if (!mine) {
				/* As kva_core_detach() would, first. */
				kva_core_set_limits(&ua->core, &cl->core, 0,
						    cl->core.max);
				mine = true;
			}
			/* Its STORED event still names the caller. */
			job->ucl.id = cl->id;
			if (!job_attach(ua, &job->ucl, cl->core.dom))
				WARN_ON_ONCE(kva_core_hand_over(&ua->core,
						&cl->core, &job->ucl.core,
						job->upper));
			job->owner = NULL;
			if (job->call)
				job_unwait(t, job, -ESHUTDOWN);
		}
	}
	mutex_unlock(&la->lock);
	kva_arena_update_pressure(ua);
}

/**
 * kva_ioc_promote() - PROMOTE: bring keys from the lower tier back into
 * the arena, held by the caller.
 * @cl:		the client.
 * @argp:	struct kvarena_promote.
 * @how:	KVA_HOW_*.
 *
 * Return: 0 or -errno (see the uapi header).
 */
long kva_ioc_promote(struct kva_client *cl, void __user *argp,
		     unsigned int how)
{
	struct kvarena_promote __user *up = argp;
	struct kva_arena *ua = cl->arena, *la;
	struct kva_tier_call call = { .cl = cl };
	struct kva_tier_job **jobs = NULL;
	struct kva_core_prefix *e = NULL;
	struct kva_tier_job *job, *tmp;
	struct kvarena_promote p;
	u32 i, n, done = 0, queued = 0;
	u64 *uh = NULL;
	long ret, left;

	/*
	 * Over io_uring PROMOTE never runs inline (kva_cmd_nonblock()): it
	 * waits in io_uring's worker, whose cancellation (the ring's exit,
	 * IORING_OP_ASYNC_CANCEL) is a signal that ends the wait.
	 */
	ret = kva_copy_in(&p, argp, sizeof(p), how);
	if (ret)
		return ret;
	if (kva_check_promote(&p))
		return -EINVAL;
	n = min(p.count, KVA_TIER_MAX_JOBS);
	e = kvmalloc_array(n, sizeof(*e), GFP_KERNEL_ACCOUNT);
	jobs = kcalloc(n, sizeof(*jobs), GFP_KERNEL_ACCOUNT);
	uh = kvmalloc_array(n, sizeof(*uh), GFP_KERNEL_ACCOUNT);
	call.res = kvmalloc_array(n, sizeof(*call.res), GFP_KERNEL_ACCOUNT);
	ret = -ENOMEM;
	if (!e || !jobs || !uh || !call.res)
		goto out_free;
	ret = kva_copy_in(e, u64_to_user_ptr(p.entries), n * sizeof(*e), 0);
	if (ret)
		goto out_free;
	ret = -EINVAL;
	for (i = 0; i < n; i++) {
		if (e[i].reserved || !memchr_inv(e[i].key, 0, KVA_KEY_LEN))
			goto out_free;
		e[i].flags = 0;
		call.res[i] = -ECANCELED;
	}
	ret = -ENOMEM;
	for (i = 0; i < n; i++) {
		jobs[i] = job_alloc();
		if (!jobs[i])
			goto out_free;
	}

	ret = client_lock_both(cl, &la);
	if (ret)
		goto out_free;
	if (!la)
		ret = -EOPNOTSUPP;
	else if (!ua->tier->agent_seen)
		ret = -ENODEV;
	else if (cl->evicted)
		ret = -ESHUTDOWN;
	else
		ret = promote_queue(cl, la, e, n, uh, jobs, &call);
	unlock_both(ua, la);
	if (ret <= 0)
		goto out_done;
	queued = ret;

	left = wait_event_interruptible_timeout(ua->tier->done_wq,
			READ_ONCE(call.pending) == 0,
			msecs_to_jiffies(p.timeout_ms));
	ret = left < 0 ? -EINTR : 0;
	la = lock_both(ua);
	if (call.pending) {
		/*
		 * Given up: what no agent took ends now; what an agent has
		 * runs on without the caller and ends up cached.
		 */
		promote_drop(ua, NULL, &call);
		list_for_each_entry_safe(job, tmp, &ua->tier->taken, node)
			if (job->call == &call)
				job_unwait(ua->tier, job, -ECANCELED);
		list_for_each_entry_safe(job, tmp, &ua->tier->ending, node)
			if (job->call == &call)
				job_unwait(ua->tier, job, -ECANCELED);
		if (!ret)
			ret = -ETIMEDOUT;
	}
	/* EVICT took the caller and what it held. */
	if (cl->evicted) {
		queued = 0;
		ret = -ESHUTDOWN;
	}
	/* The leading run the caller holds; it lets go of the rest. */
	while (done < queued && call.res[done] >= 0)
		done++;
	for (i = done; i < queued; i++) {
		if (call.res[i] >= 0) {
			u64 h = call.res[i];

			kva_core_free(&ua->core, &cl->core, &h, 1);
		}
	}
	for (i = 0; i < done; i++)
		e[i].handle = call.res[i];
	kva_arena_update_pressure(ua);
	unlock_both(ua, la);
	if (done)
		ret = 0;
	else if (!ret)
		ret = call.res[0];
out_done:
	if (!ret) {
		ret = done ? kva_copy_out(u64_to_user_ptr(p.entries), e,
					  done * sizeof(*e), 0) : 0;
		if (!ret)
			ret = kva_copy_out(&up->nr_done, &done, sizeof(done),
					   0);
		if (ret && done && !kva_client_lock(cl, 0)) {
			/* The caller cannot learn the handles: let go. */
			for (i = 0; i < done; i++)
				kva_core_free(&ua->core, &cl->core,
					      &e[i].handle, 1);
			kva_arena_update_pressure(ua);
			mutex_unlock(&ua->lock);
		}
	}
out_free:
	for (i = 0; jobs && i < n; i++)
		kfree(jobs[i]);
	kfree(jobs);
	kvfree(call.res);
	kvfree(uh);
	kvfree(e);
	return ret;
}

/**
 * kva_tier_count_lower() - how many of @e's keys, in order, the lower tier
 * holds in @cl's domain (LOOKUP with KVARENA_LOOKUP_LOWER).
 * @cl:		the client, whose arena is locked.
 * @e:		the keys after the run found above.
 * @n:		how many.
 *
 * Return: the count (0 without a tier).
 */
u32 kva_tier_count_lower(struct kva_client *cl,
			 const struct kva_core_prefix *e, u32 n)
{
	struct kva_arena *ua = cl->arena, *la;
	struct kva_core_domain *ldom;
	u32 i = 0;

	lockdep_assert_held(&ua->lock);
	if (!tier_linked(ua) || !n)
		return 0;
	la = ua->tier->lower;
	mutex_lock_nested(&la->lock, SINGLE_DEPTH_NESTING);
	ldom = tierable(cl->core.dom) ?
	       kva_domain_find(la, kva_domain_id(cl->core.dom)) : NULL;
	while (ldom && i < n &&
	       kva_core_find(&la->core, e[i].key, ldom) != KVA_NIL)
		i++;
	mutex_unlock(&la->lock);
	return i;
}

/* ---- the link ----------------------------------------------------------- */

static struct kva_tier *tier_new(void)
{
	struct kva_tier *t = kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);

	if (t) {
		INIT_LIST_HEAD(&t->queued);
		INIT_LIST_HEAD(&t->taken);
		INIT_LIST_HEAD(&t->ending);
		init_waitqueue_head(&t->agent_wq);
		init_waitqueue_head(&t->done_wq);
	}
	return t;
}

/*
 * Take @ua's lower tier away (kva_arenas_lock held).  Returns the lower
 * arena, whose reference the caller drops, or ERR_PTR(-ENOENT) if there
 * is no tier, ERR_PTR(-EBUSY) while copies are under way.
 */
static struct kva_arena *tier_unlink(struct kva_arena *ua)
{
	struct kva_arena *la;

	lockdep_assert_held(&kva_arenas_lock);
	la = lock_both(ua);
	if (!la || ua->tier->nr_jobs) {
		unlock_both(ua, la);
		return ERR_PTR(la ? -EBUSY : -ENOENT);
	}
	ua->tier->lower = NULL;
	la->upper = NULL;
	agent_kick(ua->tier);
	mutex_unlock(&la->lock);
	mutex_unlock(&ua->lock);
	return la;
}

/**
 * kva_ioc_arena_set_tier() - ARENA_SET_TIER: give an arena a lower tier,
 * or take it away.
 * @argp:	struct kvarena_arena_tier.
 *
 * Return: 0 or -errno (see the uapi header).
 */
long kva_ioc_arena_set_tier(void __user *argp)
{
	struct kva_arena *ua, *la = NULL, *put = NULL;
	struct kvarena_arena_tier tr;
	struct kva_tier *spare;
	long ret = 0;

	if (copy_from_user(&tr, argp, sizeof(tr)))
		return -EFAULT;
	if (kva_check_set_tier(&tr))
		return -EINVAL;
	spare = tier_new();
	if (!spare)
		return -ENOMEM;

	mutex_lock(&kva_arenas_lock);
	ua = kva_arena_get_locked(tr.name);
	if (!ua) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (!tr.lower[0]) {
		put = tier_unlink(ua);
		if (IS_ERR(put)) {
			ret = PTR_ERR(put);
			put = NULL;
		}
		goto out_unlock;
	}
	la = kva_arena_get_locked(tr.lower);
	if (!la) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (tier_linked(ua)) {
		ret = -EEXIST;
		goto out_unlock;
	}
	/* Gangs and their members take no tier (gang.c). */
	if (ua->members || la->members) {
		ret = -EOPNOTSUPP;
		goto out_unlock;
	}
	if (ua->gang || la->gang) {
		ret = -EBUSY;
		goto out_unlock;
	}
	/* Host memory below anything; a file below host memory. */
	if (la == ua || ua->mem_kind == KVARENA_MEM_FILE ||
	    !(la->mem_kind == KVARENA_MEM_HOST ||
			  (la->mem_kind == KVARENA_MEM_FILE &&
			   ua->mem_kind == KVARENA_MEM_HOST)) ||
	    la->frame_size != ua->frame_size || tier_linked(la) ||
	    la->upper || ua->upper) {
		ret = -EINVAL;
		goto out_unlock;
	}
	mutex_lock(&ua->lock);
	mutex_lock_nested(&la->lock, SINGLE_DEPTH_NESTING);
	if (!ua->tier) {
		ua->tier = spare;
		spare = NULL;
	}
	ua->tier->lower = la;
	ua->tier->free_target = tr.free_target;
	ua->tier->agent_seen = false;
	la->upper = ua;
	la = NULL;			/* the tier keeps the reference */
	kva_tier_pressure(ua);
	mutex_unlock(&ua->tier->lower->lock);
	mutex_unlock(&ua->lock);
out_unlock:
	mutex_unlock(&kva_arenas_lock);
	if (la)
		kva_arena_put(la);
	if (put)
		kva_arena_put(put);
	if (ua)
		kva_arena_put(ua);
	kfree(spare);
	return ret;
}

/**
 * kva_tier_kill() - arena @a goes (kva_arenas_lock held, no client
 * attached to it): so does the tier it has or is.
 * @a:	the arena.
 *
 * Return: an arena whose reference the caller drops after
 * kva_arenas_lock, or NULL.
 */
struct kva_arena *kva_tier_kill(struct kva_arena *a)
{
	struct kva_arena *la = NULL;

	lockdep_assert_held(&kva_arenas_lock);
	/* ARENA_DESTROY refused while copies were under way (kva_tier_busy). */
	if (a->upper)
		la = tier_unlink(a->upper);
	else if (a->tier)
		la = tier_unlink(a);
	return IS_ERR(la) ? NULL : la;
}

/**
 * kva_tier_busy() - whether arena @a (locked) has copies under way, or is
 * some arena's lower tier: it may not be destroyed.
 * @a:	the arena.
 *
 * Return: true if so.
 */
bool kva_tier_busy(struct kva_arena *a)
{
	lockdep_assert_held(&a->lock);
	return a->upper || (a->tier && a->tier->nr_jobs);
}

/* The arena is freed: its tier state goes with it. */
void kva_tier_free(struct kva_arena *a)
{
	kfree(a->tier);
	a->tier = NULL;
}

/**
 * kva_tier_name() - the arena @a's tier, for STAT and sysfs.
 * @a:		the arena, locked.
 * @name:	KVARENA_NAME_LEN bytes: set to the other arena's name, or
 *		to zeros.
 *
 * Return: KVARENA_STAT_TIER_LOWER if @name is @a's lower tier,
 * KVARENA_STAT_TIER_UPPER if @a is @name's, else 0.
 */
u32 kva_tier_name(struct kva_arena *a, char *name)
{
	lockdep_assert_held(&a->lock);
	memset(name, 0, KVARENA_NAME_LEN);
	if (tier_linked(a)) {
		strscpy(name, a->tier->lower->name, KVARENA_NAME_LEN);
		return KVARENA_STAT_TIER_LOWER;
	}
	if (a->upper) {
		strscpy(name, a->upper->name, KVARENA_NAME_LEN);
		return KVARENA_STAT_TIER_UPPER;
	}
	return 0;
}

/**
 * kva_tier_copies() - copies the arena's agents made (arena locked).
 * @a:		the arena.
 * @which:	0: frames copied down, 1: copied up, 2: copies that failed
 *		or were lost with their agent; ever.
 *
 * Return: the count; 0 for an arena that never had a lower tier.
 */
u64 kva_tier_copies(struct kva_arena *a, int which)
{
	lockdep_assert_held(&a->lock);
	if (!a->tier)
		return 0;
	return which == 0 ? a->tier->demoted :
	       which == 1 ? a->tier->promoted : a->tier->failed;
}
