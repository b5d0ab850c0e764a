// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: scrubbing CUDA frames between cache domains.
 *
 * The module clears a host arena's frames itself (domain.c).  A CUDA
 * arena's memory is GPU memory it cannot touch, so its dirty frames -
 * free, but still holding one domain's data - are cleared by a scrubber:
 * a client of the arena's owner (or an administrator) that takes them
 * with KVARENA_IOC_SCRUB, clears them on the GPU, and gives them back.
 * While a frame is being scrubbed it belongs to nobody (the core's
 * KVA_FRAME_CLEANING) and only its scrubber may FRAME_FD it.  A scrubber
 * that goes away with frames not given back, or abandons them
 * (KVARENA_SCRUB_ABANDON), leaves them to the next one (orphans): they
 * are not clean, so nobody else gets them.  A DONE is refused while
 * anything - the scrubber's own mapping or import included - still holds
 * a frame's memory.
 *
 * Imports.  A CUDA frame's fd, once imported by a process, gives that
 * process the memory for as long as it lives: the driver has no way to
 * revoke an import.  So each process other than the owner's that FRAME_FD
 * gave a frame to is recorded against the frame, and the frame is not
 * scrubbed - so never leaves its domain - until all of them have exited,
 * nor while anything but the arena holds a reference to its file: an fd
 * kept open, inherited or passed on, a mapping, an import that keeps the
 * file (the core's may_clear).  Meanwhile its own domain may still take
 * it.  What this cannot see: a process that got the fd from a holder
 * (fork, SCM_RIGHTS), imported it with a driver whose imports keep no
 * file reference, and closed the fd (Documentation/kvarena.rst).
 *
 * Everything here runs under the arena lock, except the scrubber's wait.
 */
#include <linux/fs.h>
#include <linux/pid.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>

#include "kva.h"

/* The processes that imported one frame, other than the owner's. */
struct kva_importers {
	u32 nr;
	u32 cap;
	struct pid *pid[];
};

/* One frame of a CUDA arena. */
struct kva_scrub_frame {
	struct kva_client *by;		/* its scrubber while CLEANING */
	struct kva_importers *imp;	/* NULL: none recorded */
};

/* How long a scrubber's wait sleeps before it looks at the imports again. */
#define KVA_SCRUB_RECHECK	(HZ / 10)

static bool kva_scrubbed(u32 mem_kind, u32 flags)
{
	return mem_kind == KVARENA_MEM_CUDA &&
	       !(flags & KVARENA_CREATE_NO_BACKING);
}

/* What kva_scrub_init() will allocate for an arena made by @c. */
u64 kva_scrub_table_bytes(const struct kvarena_arena_create *c)
{
	if (!kva_scrubbed(c->mem_kind, c->flags))
		return 0;
	return (u64)(c->max_frames ? c->max_frames : c->nr_frames) *
	       sizeof(struct kva_scrub_frame);
}

/* The arena's scrubbing, at create: only a CUDA arena with memory has it. */
int kva_scrub_init(struct kva_arena *a)
{
	init_waitqueue_head(&a->scrub_wq);
	if (!kva_scrubbed(a->mem_kind, a->flags))
		return 0;
	a->scrub = kvcalloc(a->core.nr_frames, sizeof(*a->scrub),
			    KVA_GFP_TABLE);
	if (!a->scrub)
		return -ENOMEM;
	a->core.may_clear = kva_scrub_may_clear;
	return 0;
}

static void importers_free(struct kva_importers *imp)
{
	u32 i;

	if (!imp)
		return;
	for (i = 0; i < imp->nr; i++)
		put_pid(imp->pid[i]);
	kfree(imp);
}

/* The arena is being freed. */
void kva_scrub_fini(struct kva_arena *a)
{
	u32 i;

	if (!a->scrub)
		return;
	for (i = 0; i < a->core.nr_frames; i++)
		importers_free(a->scrub[i].imp);
	kvfree(a->scrub);
	a->scrub = NULL;
}

/*
 * Has the process @pid (a thread group) exited?  A zombie has: its memory
 * and files, the driver's imports among them, are gone before its
 * exit_state is set.
 */
static bool process_gone(struct pid *pid)
{
	struct task_struct *t;
	bool gone;

	rcu_read_lock();
	t = pid_task(pid, PIDTYPE_TGID);
	gone = !t || (READ_ONCE(t->exit_state) && thread_group_empty(t));
	rcu_read_unlock();
	return gone;
}

/* Forget importer @i of @imp (the last one takes its place). */
static void importer_del(struct kva_importers *imp, u32 i)
{
	put_pid(imp->pid[i]);
	imp->pid[i] = imp->pid[--imp->nr];
}

/* Forget the importers of frame @idx that have exited; true if none is left. */
static bool importers_gone(struct kva_arena *a, u32 idx)
{
	struct kva_importers *imp = a->scrub[idx].imp;
	u32 i = 0;

	if (!imp)
		return true;
	while (i < imp->nr) {
		if (process_gone(imp->pid[i]))
			importer_del(imp, i);
		else
			i++;
	}
	if (imp->nr)
		return false;
	kfree(imp);
	a->scrub[idx].imp = NULL;
	return true;
}

/**
 * kva_scrub_old_imports() - does a process still hold an import of frame
 * @idx's memory?  After a shrink took the frame out, that is its memory
 * of before: a process that imported it maps that, not new memory, when
 * it gets the frame again (libkvarena keeps a frame's import until
 * kva_close()), so the frame takes no new memory until they have exited.
 * @a:		the arena (locked).
 * @idx:	the frame.
 */
bool kva_scrub_old_imports(struct kva_arena *a, u32 idx)
{
	lockdep_assert_held(&a->lock);
	return a->scrub && !importers_gone(a, idx);
}

/* Does anything but the arena hold the file of a frame's memory? */
static bool held_elsewhere(const struct kva_backing *bk)
{
	return bk->file && file_count(bk->file) > bk->nr_refs;
}

/*
 * struct kva_core.may_clear: a frame leaves its domain once nobody keeps
 * it - no process FRAME_FD gave it to lives, and nothing but the arena
 * holds its file (no fd, no mapping, no import that keeps the file).  A
 * gang's frame is its frame in every member, whose tables keep its
 * imports (gang.c).
 */
bool kva_scrub_may_clear(struct kva_core *c, u32 idx)
{
	struct kva_arena *a = container_of(c, struct kva_arena, core);
	u32 r;

	if (!a->members)
		return !held_elsewhere(&a->backing[idx]) &&
		       importers_gone(a, idx);
	for (r = 0; r < a->nr_members; r++) {
		struct kva_arena *m = a->members[r];

		if (held_elsewhere(&m->backing[idx]) || !importers_gone(m, idx))
			return false;
	}
	return true;
}

/*
 * Is the caller trusted as the owner's (a scrubber, or a process whose
 * imports need not hold a frame back)?  The arena's owner or an
 * administrator, over ioctl() only: a ring may be shared, and its SQEs
 * need not come from the owner's process.
 */
static bool kva_scrub_trusted(struct kva_arena *a, unsigned int how)
{
	return !(how & KVA_HOW_URING) && kva_arena_owner(a, how);
}

/**
 * kva_scrub_note_import() - FRAME_FD gives frame @idx to the calling
 * process: unless it is the owner's, it keeps the frame in its domain
 * until it exits.
 * @cl:		the client, whose arena lock the caller holds.
 * @idx:	the frame.
 * @how:	KVA_HOW_* of the FRAME_FD.
 *
 * Return: 0, or -ENOMEM.
 */
int kva_scrub_note_import(struct kva_client *cl, u32 idx, unsigned int how)
{
	lockdep_assert_held(&cl->arena->lock);
	return kva_scrub_note_member_import(cl->arena, cl->arena, idx, how);
}

/**
 * kva_scrub_note_member_import() - as kva_scrub_note_import(), for a
 * rank of gang @a given frame @idx of member @m: noted in @m's table,
 * which the gang keeps (under its own lock) while @m is in it, and which
 * keeps the import when @m leaves.
 * @a:		the arena whose owner is trusted (locked).
 * @m:		the arena whose table keeps the import: @a, or its member.
 * @idx:	the frame.
 * @how:	KVA_HOW_* of the FRAME_FD.
 *
 * Return: 0, or -ENOMEM.
 */
int kva_scrub_note_member_import(struct kva_arena *a, struct kva_arena *m,
				 u32 idx, unsigned int how)
{
	struct kva_importers *imp, *grown;
	struct pid *me = task_tgid(current);
	u32 i, cap;

	lockdep_assert_held(&a->lock);
	if (!m->scrub || kva_scrub_trusted(a, how))
		return 0;
	importers_gone(m, idx);
	imp = m->scrub[idx].imp;
	for (i = 0; imp && i < imp->nr; i++)
		if (imp->pid[i] == me)
			return 0;
	if (!imp || imp->nr == imp->cap) {
		cap = imp ? imp->cap * 2 : 2;
		grown = krealloc(imp, struct_size(imp, pid, cap),
				 GFP_KERNEL_ACCOUNT);
		if (!grown)
			return -ENOMEM;
		if (!imp)
			grown->nr = 0;
		grown->cap = cap;
		imp = grown;
		m->scrub[idx].imp = imp;
	}
	imp->pid[imp->nr++] = get_pid(me);
	return 0;
}

/**
 * kva_scrub_holds() - is @handle a frame @cl took to scrub, and may the
 * caller map it (the owner's process, over ioctl())?
 * @cl:		the client, whose arena lock the caller holds.
 * @handle:	the handle, not trusted.
 * @how:	KVA_HOW_* of the command.
 *
 * Return: the frame index, or -ENOENT.
 */
int kva_scrub_holds(struct kva_client *cl, u64 handle, unsigned int how)
{
	struct kva_arena *a = cl->arena;
	u32 idx = KVA_HANDLE_IDX(handle);

	if (!a->scrub || !kva_scrub_trusted(a, how) ||
	    idx >= a->core.nr_frames ||
	    a->scrub[idx].by != cl ||
	    a->core.frames[idx].gen != KVA_HANDLE_GEN(handle))
		return -ENOENT;
	return idx;
}

/* Wake the scrubbers: frames may need them (arena locked). */
void kva_scrub_kick(struct kva_arena *a)
{
	lockdep_assert_held(&a->lock);
	a->scrub_seq++;
	wake_up_interruptible_all(&a->scrub_wq);
}

/*
 * kva_scrub_short() - an ALLOC of @cl's found enough frames free, but not
 * enough clean ones: count it refused, ask the scrubbers for @n.
 */
int kva_scrub_short(struct kva_client *cl, u32 n)
{
	struct kva_arena *a = cl->arena;

	a->core.alloc_calls++;
	cl->core.alloc_calls++;
	a->core.alloc_failures++;
	cl->core.alloc_failures++;
	a->scrub_need = max(a->scrub_need, n);
	kva_scrub_kick(a);
	return -ENOSPC;
}

/* @cl leaves its arena: frames it was scrubbing wait for the next scrubber. */
void kva_scrub_detach(struct kva_arena *a, struct kva_client *cl)
{
	u32 i;

	lockdep_assert_held(&a->lock);
	if (!cl->nr_scrubbing)
		return;
	/* The whole table: no frame may keep a pointer to a freed client. */
	for (i = 0; i < a->core.nr_frames; i++) {
		if (a->scrub[i].by != cl)
			continue;
		a->scrub[i].by = NULL;
		a->nr_orphans++;
	}
	cl->nr_scrubbing = 0;
	kva_scrub_kick(a);
}

/* Dirty frames that may not leave their domain yet (arena locked). */
u32 kva_scrub_quarantined(struct kva_arena *a)
{
	struct kva_core *c = &a->core;
	struct kva_core_domain *d;
	u32 n = 0, i;

	lockdep_assert_held(&a->lock);
	if (!a->scrub)
		return 0;
	for (d = c->dirty; d; d = d->dnext)
		for (i = d->dirty_head; i != KVA_NIL; i = c->frames[i].next)
			n += !kva_scrub_may_clear(c, i);
	return n;
}

/* Take up to @n frames to scrub for @cl, writing their indices (locked). */
static u32 scrub_take(struct kva_client *cl, u32 *idx, u32 n)
{
	struct kva_arena *a = cl->arena;
	struct kva_core *c = &a->core;
	u32 got = 0, i, clean, want;

	/* First those a scrubber left: they are nobody's until cleared. */
	for (i = 0; a->nr_orphans && i < c->nr_frames && got < n; i++) {
		if (a->scrub[i].by || c->frames[i].flags != KVA_FRAME_CLEANING)
			continue;
		a->scrub[i].by = cl;
		a->nr_orphans--;
		idx[got++] = i;
	}
	/* Then the stock of clean frames, and what refused ALLOCs wanted. */
	clean = kva_core_clean(c);
	want = (clean < a->clean_target ? a->clean_target - clean : 0) +
	       a->scrub_need;
	if (got < n && want) {
		u32 k = kva_core_take_dirty(c, NULL, idx + got,
					    min(n - got, want));

		a->scrub_need -= min(a->scrub_need, k);
		for (i = got; i < got + k; i++)
			a->scrub[idx[i]].by = cl;
		got += k;
	}
	cl->nr_scrubbing += got;
	return got;
}

/*
 * Frames of @handles[0..n) that @cl still has go back to the orphans,
 * uncleared (locked).  Checked one by one: another thread of the client
 * may have given some back meanwhile, and another scrubber taken them.
 */
static void scrub_orphan(struct kva_client *cl, const u64 *handles, u32 n)
{
	struct kva_arena *a = cl->arena;
	struct kva_core *c = &a->core;
	u32 i, x;

	for (i = 0; i < n; i++) {
		x = KVA_HANDLE_IDX(handles[i]);
		if (x >= c->nr_frames || a->scrub[x].by != cl ||
		    c->frames[x].gen != KVA_HANDLE_GEN(handles[i]))
			continue;
		a->scrub[x].by = NULL;
		cl->nr_scrubbing--;
		a->nr_orphans++;
	}
	kva_scrub_kick(a);
}

static long scrub_take_cmd(struct kva_client *cl, struct kvarena_scrub *s,
			   struct kvarena_scrub __user *us, u64 *handles,
			   u32 *idx)
{
	struct kva_arena *a = cl->arena;
	unsigned long deadline = jiffies + msecs_to_jiffies(s->timeout_ms);
	u32 n, i;
	int ret;

	for (;;) {
		long left, slept;
		u64 seq;

		ret = kva_client_lock(cl, 0);
		if (ret)
			return ret;
		n = scrub_take(cl, idx, s->count);
		for (i = 0; i < n; i++)
			handles[i] = KVA_HANDLE(a->core.frames[idx[i]].gen,
						idx[i]);
		seq = a->scrub_seq;
		mutex_unlock(&a->lock);
		if (n || !s->timeout_ms)
			break;
		left = (long)(deadline - jiffies);
		if (left <= 0)
			break;
		/*
		 * Woken when frames are freed, a client leaves or an ALLOC
		 * runs short; an importer's exit wakes nobody, so look again
		 * every KVA_SCRUB_RECHECK.
		 */
		slept = wait_event_interruptible_timeout(a->scrub_wq,
				READ_ONCE(a->scrub_seq) != seq,
				min_t(long, left, KVA_SCRUB_RECHECK));
		if (slept < 0)
			return -EINTR;
	}
	ret = n ? kva_copy_out(u64_to_user_ptr(s->handles), handles,
			       n * sizeof(u64), 0) : 0;
	if (!ret)
		ret = kva_copy_out(&us->nr_done, &n, sizeof(n), 0);
	if (ret && n && !kva_client_lock(cl, 0)) {
		/* The caller cannot learn them: the next scrubber will. */
		scrub_orphan(cl, handles, n);
		mutex_unlock(&a->lock);
	}
	return ret;
}

static long scrub_done_cmd(struct kva_client *cl, struct kvarena_scrub *s,
			   struct kvarena_scrub __user *us, u64 *handles,
			   u32 *idx)
{
	bool abandon = s->flags & KVARENA_SCRUB_ABANDON;
	struct kva_arena *a = cl->arena;
	struct kva_core *c = &a->core;
	u32 i, n = s->count;
	int ret;

	ret = kva_copy_in(handles, u64_to_user_ptr(s->handles),
			  n * sizeof(u64), 0);
	if (ret)
		return ret;
	ret = kva_client_lock(cl, 0);
	if (ret)
		return ret;
	/* All or nothing: check every handle, marking, before any goes. */
	for (i = 0; i < n; i++) {
		u32 x = KVA_HANDLE_IDX(handles[i]);

		if (x >= c->nr_frames || a->scrub[x].by != cl) {
			ret = -ENOENT;
		} else if (c->frames[x].gen != KVA_HANDLE_GEN(handles[i])) {
			ret = -ESTALE;
		} else if (c->frames[x].flags & KVA_FRAME_MARK) {
			ret = -EINVAL;
		} else if (!abandon && !kva_scrub_may_clear(c, x)) {
			/* Its memory is still mapped or imported somewhere. */
			ret = -EBUSY;
		} else {
			c->frames[x].flags |= KVA_FRAME_MARK;
			idx[i] = x;
			continue;
		}
		break;
	}
	while (i--)
		c->frames[idx[i]].flags &= ~KVA_FRAME_MARK;
	if (!ret && abandon) {
		scrub_orphan(cl, handles, n);
	} else if (!ret) {
		for (i = 0; i < n; i++)
			a->scrub[idx[i]].by = NULL;
		cl->nr_scrubbing -= n;
		kva_core_put_clean(c, idx, n);
		kva_arena_update_pressure(a);
		/* Clean frames: an ALLOC refused for want of them may go on. */
		wake_up_interruptible_all(&a->pressure_wq);
	}
	mutex_unlock(&a->lock);
	if (ret)
		n = 0;
	if (kva_copy_out(&us->nr_done, &n, sizeof(n), 0))
		pr_debug("scrub: nr_done not written\n");
	return ret;
}

/*
 * KVARENA_IOC_SCRUB: a take (frames to clear) or a DONE (cleared ones
 * back), by a client of a CUDA arena that is its owner or an administrator.
 */
long kva_ioc_scrub(struct kva_client *cl, void __user *argp, unsigned int how)
{
	struct kvarena_scrub __user *us = argp;
	struct kva_arena *a = cl->arena;
	struct kvarena_scrub s;
	u64 *handles;
	u32 *idx;
	long ret;

	if (how & KVA_HOW_URING)
		return -EPERM;
	ret = kva_copy_in(&s, argp, sizeof(s), how);
	if (ret)
		return ret;
	ret = kva_check_scrub(&s);
	if (ret)
		return ret;
	if (!a->scrub)
		return -EOPNOTSUPP;
	if (!kva_scrub_trusted(a, how))
		return -EPERM;
	handles = kvmalloc_array(s.count, sizeof(*handles), GFP_KERNEL_ACCOUNT);
	idx = kvmalloc_array(s.count, sizeof(*idx), GFP_KERNEL_ACCOUNT);
	ret = -ENOMEM;
	if (handles && idx)
		ret = (s.flags & KVARENA_SCRUB_DONE) ?
		      scrub_done_cmd(cl, &s, us, handles, idx) :
		      scrub_take_cmd(cl, &s, us, handles, idx);
	kvfree(idx);
	kvfree(handles);
	return ret;
}

/* Forget @pid as an importer of frame @idx; true if it was one. */
static bool importer_remove(struct kva_arena *a, u32 idx, struct pid *pid)
{
	struct kva_importers *imp = a->scrub[idx].imp;
	u32 i;

	for (i = 0; imp && i < imp->nr; i++) {
		if (imp->pid[i] == pid) {
			importer_del(imp, i);
			/* Frees the record once nobody is left in it. */
			importers_gone(a, idx);
			return true;
		}
	}
	return false;
}

/**
 * kva_ioc_imports_dropped() - IMPORTS_DROPPED: the calling process holds
 * no import of a frame taken out of the arena, so those frames may take
 * new memory as far as it is concerned.  Frames in the arena keep it as
 * an importer until it exits.
 * @cl:		the client.
 * @argp:	struct kvarena_imports_dropped.
 * @how:	KVA_HOW_*.
 *
 * Return: 0, or -EFAULT, -EINVAL, -ESHUTDOWN.
 */
long kva_ioc_imports_dropped(struct kva_client *cl, void __user *argp,
			     unsigned int how)
{
	struct kvarena_imports_dropped __user *ud = argp;
	struct pid *me = task_tgid(current);
	struct kva_arena *a = cl->arena;
	struct kvarena_imports_dropped d;
	u32 idx, done = 0, steps = 0;
	long ret;

	ret = kva_copy_in(&d, argp, sizeof(d), how);
	if (ret)
		return ret;
	if (kva_check_imports_dropped(&d))
		return -EINVAL;
	ret = kva_client_lock(cl, how);
	if (ret)
		return ret;
	for (idx = a->core.absent_head; a->scrub && idx != KVA_NIL;
	     idx = a->core.frames[idx].next) {
		done += importer_remove(a, idx, me);
		/* An arena of millions of frames out lets others run. */
		if (!(++steps % 4096))
			cond_resched();
	}
	mutex_unlock(&a->lock);
	return kva_copy_out(&ud->nr_done, &done, sizeof(done), how);
}
