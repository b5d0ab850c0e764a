// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: resizing an arena (ARENA_RESIZE) and giving back the memory
 * of the frames it takes out.
 *
 * An arena's table is made for its max_frames at create; the frames
 * beyond its size are absent (the core's KVA_FRAME_ABSENT).  A shrink
 * asks the core to take frames out (kva_core_shrink()): free ones at
 * once, cached ones reclaimed, held ones as they are freed - at any later
 * FREE, LOOKUP, release or eviction, under the arena lock.  Each frame
 * taken out is told to kva_resize_retired(), which cannot sleep: it puts
 * the frame on the arena's release list and kicks @release_work.  Giving
 * the memory back (kva_release()) sleeps, so it runs with only the
 * arena's resize_lock: a host frame's pages are unpinned and punched out
 * of the backing file, so that shmem frees them; a CUDA frame's backing
 * file is let go (the driver frees the allocation when its last holder
 * does).  A grow first gives back what is still on the list, then pins
 * the pages of the absent frames it brings in - shmem allocates them
 * anew, zeroed - and only then, under the arena lock, makes them free
 * frames (kva_core_grow_frames()): no frame is ever allocatable without
 * its memory, and none brings back data of before.
 *
 * resize_lock also keeps SET_BACKING (which pins only frames in the
 * arena) and the worker out of each other's way.  backing_busy keeps
 * ARENA_DESTROY away while a resize runs (kva_resize_begin()); the worker
 * needs none, since ARENA_DESTROY stops it (kva_resize_kill()) before it
 * unpins everything itself.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/file.h>
#include <linux/fs.h>
#include <linux/falloc.h>
#include <linux/jiffies.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "kva.h"

/* The core took frame @idx out (arena locked, nothing may sleep). */
static void kva_resize_retired(struct kva_core *c, u32 idx)
{
	struct kva_arena *a = container_of(c, struct kva_arena, core);

	if (!(a->flags & KVARENA_CREATE_NO_BACKING)) {
		a->backing[idx].releasing = true;
		a->backing[idx].release_next = a->release_head;
		a->release_head = idx;
		queue_work(system_unbound_wq, &a->release_work);
	}
	wake_up_all(&a->resize_wq);
}

/*
 * Frame @idx (absent) keeps no memory: a grow into it needs SET_BACKING
 * first.  Takes the arena lock.
 */
static void kva_backing_drop(struct kva_arena *a, u32 idx)
{
	struct kva_backing *bk = &a->backing[idx];
	struct file *file;

	mutex_lock(&a->lock);
	bk->releasing = false;
	file = bk->file;
	bk->file = NULL;
	if (file) {
		a->nr_backed--;
		if (bk->nr_refs > 1) {
			u32 i;

			/* Frames that one SET_BACKING gave the file lose one. */
			for (i = 0; i < a->core.nr_frames; i++) {
				if (a->backing[i].file == file)
					a->backing[i].nr_refs--;
				if (!(i % 65536))
					cond_resched();
			}
		}
	}
	mutex_unlock(&a->lock);
	if (file)
		fput(file);
}

/* Give frame @idx's memory back (resize_lock held, not the arena lock). */
static void kva_release_frame(struct kva_arena *a, u32 idx)
{
	struct kva_backing *bk = &a->backing[idx];
	bool absent;
	int ret;

	mutex_lock(&a->lock);
	absent = a->core.frames[idx].flags & KVA_FRAME_ABSENT;
	if (a->pages)
		bk->releasing = false;
	mutex_unlock(&a->lock);
	/* A grow takes no frame whose memory is still to be given back. */
	if (WARN_ON_ONCE(!absent))
		return;
	if (a->pages) {
		kva_unpin_frame(a, idx);
		/* The pages were ours alone to keep: now nobody's. */
		ret = vfs_fallocate(bk->file,
				    FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				    bk->offset, a->frame_size);
		if (ret) {
			/*
			 * Its pages keep what they held: a grow must not pin
			 * them again for another holder.
			 */
			pr_warn_ratelimited("arena %s: frame %u: memory not returned: %d; the frame keeps none until ARENA_SET_BACKING\n",
					    a->name, idx, ret);
			kva_backing_drop(a, idx);
		}
		return;
	}
	/*
	 * CUDA: the frame's backing goes; a grow needs new memory, which
	 * its importers must not outlive (kva_scrub_old_imports()).
	 */
	kva_backing_drop(a, idx);
}

/* Give back the memory of every frame taken out so far (resize_lock held). */
static void kva_release(struct kva_arena *a)
{
	u32 idx, next;

	lockdep_assert_held(&a->resize_lock);
	mutex_lock(&a->lock);
	idx = a->release_head;
	a->release_head = KVA_NIL;
	mutex_unlock(&a->lock);
	/* Off the list, the frames stay absent: only we could bring them in. */
	for (; idx != KVA_NIL; idx = next) {
		next = a->backing[idx].release_next;
		kva_release_frame(a, idx);
		cond_resched();
	}
}

static void kva_release_work(struct work_struct *work)
{
	struct kva_arena *a = container_of(work, struct kva_arena,
					   release_work);

	mutex_lock(&a->resize_lock);
	kva_release(a);
	mutex_unlock(&a->resize_lock);
}

/**
 * kva_resize_init() - an arena's resizing, at create.
 * @a:	the arena, not yet visible.
 */
void kva_resize_init(struct kva_arena *a)
{
	mutex_init(&a->resize_lock);
	a->release_head = KVA_NIL;
	INIT_WORK(&a->release_work, kva_release_work);
	init_waitqueue_head(&a->resize_wq);
	a->core.retired = kva_resize_retired;
}

/**
 * kva_resize_kill() - the arena is being destroyed (marked dead, with no
 * client): stop the worker.  What it did not give back, the destroy's
 * unpinning and fput()s do.
 * @a:	the arena.
 */
void kva_resize_kill(struct kva_arena *a)
{
	cancel_work_sync(&a->release_work);
	wake_up_all(&a->resize_wq);
}

/*
 * Pin the pages of the @n frames @idx of a host arena, a run of adjacent
 * frames of one file at a time; on failure none stays pinned.
 */
static int kva_pin_frames(struct kva_arena *a, const u32 *idx, u32 n)
{
	u32 i = 0, run, done;
	int ret = 0;

	while (i < n && !ret) {
		const struct kva_backing *bk = &a->backing[idx[i]];

		for (run = 1; i + run < n; run++) {
			const struct kva_backing *nb = &a->backing[idx[i + run]];

			if (idx[i + run] != idx[i] + run || nb->file != bk->file ||
			    nb->offset != bk->offset + (u64)run * a->frame_size)
				break;
		}
		ret = kva_pin_backing(a, bk->file, bk->offset, idx[i], run);
		if (!ret)
			i += run;
	}
	if (ret)
		for (done = 0; done < i; done++)
			kva_unpin_frame(a, idx[done]);
	return ret;
}

/*
 * Grow to @target frames, more than the arena is becoming (resize_lock
 * held, arena unlocked): cut the shrink that waits, then bring in absent
 * frames that have memory, lowest first.  The cut comes first, so that
 * no frame is taken out while the pages are pinned: the arena's size
 * stays put until the frames come in.
 */
static int kva_grow(struct kva_arena *a, u32 target)
{
	struct kva_core *c = &a->core;
	u32 becoming, cut, need, n = 0, i, unused, tries, cut_done = 0;
	u32 *idx = NULL;
	int ret = 0;

	/*
	 * Frames taken out whose memory is not given back yet are still
	 * pinned, and hold what they held: give it back before any of them
	 * comes in again.
	 */
	kva_release(a);
	mutex_lock(&a->lock);
	becoming = c->nr_frames - c->nr_absent - c->shrink_pending;
	mutex_unlock(&a->lock);
	/* At most what is absent: the caller checked @target is in the table. */
	need = target - becoming;
	idx = kvmalloc_array(need, sizeof(*idx), GFP_KERNEL);
	if (!idx)
		return -ENOMEM;

	/*
	 * Only resizes change what has backing and bring frames in, but
	 * frames go on going out while a shrink waits: those not given back
	 * yet (@releasing) are not taken.  Once the shrink is cut no more go
	 * out, so what was chosen stays absent and off the release list.  A
	 * look that finds frames half given back cuts the shrink at once
	 * (@cut_done), gives them back and looks again: then none can be.
	 */
	for (tries = 0; ; tries++) {
		bool skipped = false;

		mutex_lock(&a->lock);
		cut = min(c->shrink_pending, need - cut_done);
		for (i = 0, n = 0;
		     i < c->nr_frames && n < need - cut_done - cut; i++) {
			if (!(c->frames[i].flags & KVA_FRAME_ABSENT))
				continue;
			if (a->backing[i].releasing)
				skipped = true;
			else if ((a->flags & KVARENA_CREATE_NO_BACKING) ||
				 a->backing[i].file)
				idx[n++] = i;
		}
		if (n == need - cut_done - cut)
			break;
		if (!skipped || tries == 2) {
			/* What this grow cut, the shrink waits for again. */
			if (cut_done && !kva_core_shrink(c, cut_done, &unused))
				kva_arena_update_pressure(a);
			mutex_unlock(&a->lock);
			ret = -ENODATA;
			goto out;
		}
		/* @cut <= shrink_pending: all cut, no frame brought in. */
		kva_core_grow(c, cut, &unused);
		cut_done += cut;
		kva_arena_update_pressure(a);
		mutex_unlock(&a->lock);
		kva_release(a);
	}
	/* @cut <= shrink_pending: all cut, no frame brought in, none written. */
	kva_core_grow(c, cut, &unused);
	cut += cut_done;
	kva_arena_update_pressure(a);
	mutex_unlock(&a->lock);

	if (n && a->pages)
		ret = kva_pin_frames(a, idx, n);

	mutex_lock(&a->lock);
	if (ret) {
		/*
		 * The shrink waits again for what was cut, as it was - unless
		 * a guarantee given meanwhile needs those frames (-EBUSY):
		 * then it stays cut, as the header says.
		 */
		if (cut && !kva_core_shrink(c, cut, &unused))
			kva_arena_update_pressure(a);
	} else if (n) {
		ret = kva_core_grow_frames(c, idx, n);
		/* Checked absent under this same resize_lock. */
		WARN_ON_ONCE(ret);
		kva_arena_update_pressure(a);
		kva_clear_kick(a);
	}
	mutex_unlock(&a->lock);
	wake_up_all(&a->resize_wq);
out:
	kvfree(idx);
	return ret;
}

/*
 * Keep ARENA_DESTROY from unpinning and dropping the backing under us:
 * -ENOENT once it has begun.
 */
static int kva_resize_begin(struct kva_arena *a)
{
	int ret = 0;

	mutex_lock(&a->lock);
	if (a->dead)
		ret = -ENOENT;
	else
		a->backing_busy++;
	mutex_unlock(&a->lock);
	return ret;
}

static void kva_resize_end(struct kva_arena *a)
{
	mutex_lock(&a->lock);
	a->backing_busy--;
	mutex_unlock(&a->lock);
}

/* Fill the out fields (arena locked). */
static void kva_resize_report(struct kva_arena *a,
			      struct kvarena_arena_resize *r)
{
	const struct kva_core *c = &a->core;

	r->out_frames = c->nr_frames - c->nr_absent;
	r->out_shrinking = c->shrink_pending;
	r->out_absent = c->nr_absent;
}

long kva_ioc_arena_resize(void __user *argp)
{
	struct kvarena_arena_resize r;
	struct kva_core *c;
	struct kva_arena *a;
	u32 becoming, taken;
	int ret = 0;

	if (copy_from_user(&r, argp, sizeof(r)))
		return -EFAULT;
	if (kva_check_resize(&r))
		return -EINVAL;
	a = kva_arena_get(r.name);
	if (!a)
		return -ENOENT;
	c = &a->core;
	/*
	 * A file arena's frames are a tier's: its size is the file's.  A
	 * gang's frames are its members' (gang.c).
	 */
	if (a->mem_kind == KVARENA_MEM_FILE || a->members) {
		ret = -EOPNOTSUPP;
		goto out_put;
	}

	if (mutex_lock_killable(&a->resize_lock)) {
		ret = -EINTR;
		goto out_put;
	}
	ret = kva_resize_begin(a);
	if (ret)
		goto out_unlock;
	mutex_lock(&a->lock);
	if (a->gang)
		ret = -EBUSY;
	else if (a->nr_unready)
		ret = -ENODATA;
	else if (r.nr_frames > c->nr_frames)
		ret = -EINVAL;
	becoming = c->nr_frames - c->nr_absent - c->shrink_pending;
	if (ret) {
		mutex_unlock(&a->lock);
		goto out_end;
	}
	if (r.flags & KVARENA_RESIZE_CANCEL) {
		kva_core_shrink_cancel(c);
		kva_arena_update_pressure(a);
	} else if (r.nr_frames < becoming) {
		ret = kva_core_shrink(c, becoming - r.nr_frames, &taken);
		kva_arena_update_pressure(a);
	}
	mutex_unlock(&a->lock);
	if (!ret && r.nr_frames > becoming)
		ret = kva_grow(a, r.nr_frames);
	/* What went out now has its memory back before the call returns. */
	kva_release(a);
	kva_resize_end(a);
	mutex_unlock(&a->resize_lock);
	/* A cancel or a grow may have ended other callers' waits. */
	wake_up_all(&a->resize_wq);
	if (ret)
		goto out_put;

	if (r.timeout_ms) {
		/* A signal or the time ends the wait, not the shrink. */
		wait_event_interruptible_timeout(a->resize_wq,
				!READ_ONCE(c->shrink_pending) || READ_ONCE(a->dead),
				msecs_to_jiffies(r.timeout_ms));
		if (!mutex_lock_killable(&a->resize_lock)) {
			if (!kva_resize_begin(a)) {
				kva_release(a);
				kva_resize_end(a);
			}
			mutex_unlock(&a->resize_lock);
		}
	}
	mutex_lock(&a->lock);
	kva_clean_target_update(a);
	kva_resize_report(a, &r);
	mutex_unlock(&a->lock);
	ret = copy_to_user(argp, &r, sizeof(r)) ? -EFAULT : 0;
	goto out_put;

out_end:
	kva_resize_end(a);
out_unlock:
	mutex_unlock(&a->resize_lock);
out_put:
	kva_arena_put(a);
	return ret;
}
