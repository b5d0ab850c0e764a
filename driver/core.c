// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * kvarena core allocator - see core.h for the words and the locking rule.
 *
 * Frames live in one table.  A free frame sits on a singly linked LIFO
 * free list; a held frame sits on its holder's doubly linked list, so that
 * freeing a handle and releasing a whole client are both proportional to
 * the frames involved, never to the arena.  All links are frame indices.
 */
#include "core.h"

static u32 unmet(const struct kva_core_client *cl)
{
	return cl->min > cl->held ? cl->min - cl->held : 0;
}

/**
 * kva_core_init() - set up @c with @nr_frames free frames.
 * @c:		the core to set up.
 * @nr_frames:	its capacity.
 *
 * Return: 0, -EINVAL for a zero or too large @nr_frames, -ENOMEM.
 */
int kva_core_init(struct kva_core *c, u32 nr_frames)
{
	u32 i;

	*c = (struct kva_core){ 0 };
	if (!nr_frames || nr_frames == KVA_NIL)
		return -EINVAL;
	c->frames = kva_shim_calloc(nr_frames, sizeof(*c->frames));
	if (!c->frames)
		return -ENOMEM;
	for (i = 0; i < nr_frames; i++) {
		c->frames[i].gen = 1;
		c->frames[i].next = i + 1 < nr_frames ? i + 1 : KVA_NIL;
		c->frames[i].prev = KVA_NIL;
	}
	c->nr_frames = nr_frames;
	c->nr_free = nr_frames;
	c->free_head = 0;
	return 0;
}

/**
 * kva_core_fini() - free the frame table; no client may be attached.
 * @c:	the core.
 */
void kva_core_fini(struct kva_core *c)
{
	KVA_WARN_ON(c->nr_clients);
	kva_shim_free(c->frames);
	c->frames = NULL;
}

static int check_limits(const struct kva_core *c, u32 min, u32 *max)
{
	if (!*max)
		*max = c->nr_frames;
	if (*max > c->nr_frames || min > *max)
		return -EINVAL;
	return 0;
}

/**
 * kva_core_attach() - add a client with a guarantee of @min frames and a
 * limit of @max (0: the arena's size).
 * @c:		the core.
 * @cl:		the client, owned by the caller; initialised here.
 * @min:	guaranteed frames.
 * @max:	limit.
 *
 * Return: 0; -EINVAL if @min > @max or @max exceeds the arena; -ENOSPC if
 * the free frames not already reserved for others cannot cover @min.
 */
int kva_core_attach(struct kva_core *c, struct kva_core_client *cl,
		    u32 min, u32 max)
{
	int ret = check_limits(c, min, &max);

	if (ret)
		return ret;
	if (min > c->nr_free - c->unmet_min)
		return -ENOSPC;
	*cl = (struct kva_core_client){ .min = min, .max = max,
					.head = KVA_NIL };
	c->unmet_min += min;
	c->nr_clients++;
	return 0;
}

static void frame_release(struct kva_core *c, u32 idx)
{
	struct kva_frame *f = &c->frames[idx];

	f->holder = NULL;
	f->flags = 0;
	f->prev = KVA_NIL;
	/* A handle names one tenure of a frame: the next one gets a new gen. */
	if (++f->gen == 0)
		f->gen = 1;
	f->next = c->free_head;
	c->free_head = idx;
	c->nr_free++;
	c->frames_freed++;
}

/**
 * kva_core_detach() - remove a client, freeing every frame it holds.
 * @c:	the core.
 * @cl:	the client.
 *
 * Return: the number of frames freed.
 */
u32 kva_core_detach(struct kva_core *c, struct kva_core_client *cl)
{
	u32 idx = cl->head, n = 0;

	while (idx != KVA_NIL) {
		u32 next = c->frames[idx].next;

		KVA_WARN_ON(c->frames[idx].holder != cl);
		frame_release(c, idx);
		idx = next;
		if (!(++n % 4096))
			kva_shim_cond_resched();
	}
	KVA_WARN_ON(n != cl->held);
	c->unmet_min -= unmet(cl);
	c->nr_clients--;
	cl->head = KVA_NIL;
	cl->held = 0;
	return n;
}

/**
 * kva_core_set_limits() - change a client's guarantee and limit.
 * @c:		the core.
 * @cl:		the client.
 * @min:	new guarantee.
 * @max:	new limit, 0 for the arena's size.  Lowering it below what the
 *		client holds takes nothing away; it only stops further
 *		allocations.
 *
 * Return: 0, -EINVAL as for attach, -ENOSPC if the new @min cannot be
 * covered now.  On error nothing changes.
 */
int kva_core_set_limits(struct kva_core *c, struct kva_core_client *cl,
			u32 min, u32 max)
{
	u32 old_unmet = unmet(cl), new_unmet;
	int ret = check_limits(c, min, &max);

	if (ret)
		return ret;
	new_unmet = min > cl->held ? min - cl->held : 0;
	if (new_unmet > c->nr_free - (c->unmet_min - old_unmet))
		return -ENOSPC;
	c->unmet_min = c->unmet_min - old_unmet + new_unmet;
	cl->min = min;
	cl->max = max;
	return 0;
}

/**
 * kva_core_available() - frames a client could allocate now.
 * @c:	the core.
 * @cl:	the client.
 *
 * Return: the free frames less the other clients' unmet minimums, and no
 * more than the client's room below its max.
 */
u32 kva_core_available(const struct kva_core *c,
		       const struct kva_core_client *cl)
{
	/* Others' unmet minimums are off limits; our own is ours to take. */
	u32 avail = c->nr_free - (c->unmet_min - unmet(cl));
	u32 room = cl->max > cl->held ? cl->max - cl->held : 0;

	return avail < room ? avail : room;
}

/**
 * kva_core_alloc() - take frames for a client, writing their handles.
 * @c:		the core.
 * @cl:		the client.
 * @handles:	@n entries: the new handles.
 * @n:		frames wanted.
 * @partial:	take as many as available (at least one) instead of all @n.
 *
 * Return: the number of frames taken (@n unless @partial), or -ENOSPC
 * (nothing taken), -EINVAL for @n == 0.
 */
int kva_core_alloc(struct kva_core *c, struct kva_core_client *cl,
		   u64 *handles, u32 n, bool partial)
{
	u32 avail, i, before;

	if (!n)
		return -EINVAL;
	c->alloc_calls++;
	cl->alloc_calls++;
	avail = kva_core_available(c, cl);
	if (n > avail) {
		if (!partial || !avail) {
			c->alloc_failures++;
			cl->alloc_failures++;
			return -ENOSPC;
		}
		n = avail;
	}

	before = unmet(cl);
	for (i = 0; i < n; i++) {
		u32 idx = c->free_head;
		struct kva_frame *f = &c->frames[idx];

		c->free_head = f->next;
		f->holder = cl;
		f->flags = KVA_FRAME_HELD;
		f->prev = KVA_NIL;
		f->next = cl->head;
		if (cl->head != KVA_NIL)
			c->frames[cl->head].prev = idx;
		cl->head = idx;
		handles[i] = KVA_HANDLE(f->gen, idx);
	}
	c->nr_free -= n;
	cl->held += n;
	c->unmet_min -= before - unmet(cl);
	c->frames_allocated += n;
	if (cl->held > cl->peak)
		cl->peak = cl->held;
	if (kva_core_held(c) > c->peak_held)
		c->peak_held = kva_core_held(c);
	return n;
}

/**
 * kva_core_lookup() - check that a handle names a frame the client holds.
 * @c:		the core.
 * @cl:		the client.
 * @handle:	the handle.
 *
 * Return: the frame index, or -ENOENT (no such frame, or nobody holds it),
 * -ESTALE (the frame was freed since the handle was issued), -EPERM (held
 * by another client).
 */
int kva_core_lookup(const struct kva_core *c,
		    const struct kva_core_client *cl, u64 handle)
{
	u32 idx = KVA_HANDLE_IDX(handle);
	const struct kva_frame *f;

	if (idx >= c->nr_frames)
		return -ENOENT;
	f = &c->frames[idx];
	if (f->gen != KVA_HANDLE_GEN(handle))
		return -ESTALE;
	if (!(f->flags & KVA_FRAME_HELD))
		return -ENOENT;
	if (f->holder != cl)
		return -EPERM;
	return (int)idx;
}

/**
 * kva_core_frame_access() - what a client may do with frame @idx now: the
 * question a mapping of the frame asks at every fault.
 * @c:		the core.
 * @cl:		the client.
 * @idx:	frame index, not trusted.
 *
 * Return: KVA_ACCESS_WRITE for a frame the client holds alone,
 * KVA_ACCESS_READ for one it holds with others, KVA_ACCESS_NONE otherwise
 * (including an index out of range).
 */
enum kva_access kva_core_frame_access(const struct kva_core *c,
				      const struct kva_core_client *cl,
				      u32 idx)
{
	const struct kva_frame *f;

	if (idx >= c->nr_frames)
		return KVA_ACCESS_NONE;
	f = &c->frames[idx];
	if (!(f->flags & KVA_FRAME_HELD) || f->holder != cl)
		return KVA_ACCESS_NONE;
	return KVA_ACCESS_WRITE;
}

static void unmark(struct kva_core *c, const u64 *handles, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		c->frames[KVA_HANDLE_IDX(handles[i])].flags &= ~KVA_FRAME_MARK;
}

/**
 * kva_core_free() - return frames a client holds.
 * @c:		the core.
 * @cl:		the client.
 * @handles:	@n handles.
 * @n:		how many.
 *
 * All or nothing: every handle is checked before any frame is freed.
 *
 * Return: 0, -EINVAL for @n == 0 or a handle given twice, or the first
 * error of kva_core_lookup().  On error nothing is freed.
 */
int kva_core_free(struct kva_core *c, struct kva_core_client *cl,
		  const u64 *handles, u32 n)
{
	u32 i, before;
	int ret;

	if (!n)
		return -EINVAL;
	c->free_calls++;
	cl->free_calls++;
	for (i = 0; i < n; i++) {
		struct kva_frame *f;

		ret = kva_core_lookup(c, cl, handles[i]);
		if (ret < 0)
			goto err_unmark;
		f = &c->frames[ret];
		if (f->flags & KVA_FRAME_MARK) {
			ret = -EINVAL;
			goto err_unmark;
		}
		f->flags |= KVA_FRAME_MARK;
	}

	before = unmet(cl);
	for (i = 0; i < n; i++) {
		u32 idx = KVA_HANDLE_IDX(handles[i]);
		struct kva_frame *f = &c->frames[idx];

		if (f->prev != KVA_NIL)
			c->frames[f->prev].next = f->next;
		else
			cl->head = f->next;
		if (f->next != KVA_NIL)
			c->frames[f->next].prev = f->prev;
		frame_release(c, idx);
	}
	cl->held -= n;
	c->unmet_min += unmet(cl) - before;
	return 0;

err_unmark:
	unmark(c, handles, i);
	return ret;
}

/**
 * kva_core_check() - verify every invariant (tests and fuzzing).
 * @c:	the core.
 *
 * Walks the free list and checks the counts, links and flags of every
 * frame.  It cannot see the clients' lists as a set, but checks that each
 * held frame's neighbours point back at it and share its holder.
 *
 * Return: 0 or -EUCLEAN with the first broken invariant warned about.
 */
int kva_core_check(const struct kva_core *c)
{
	u32 idx, n = 0, held = 0, i;

	for (idx = c->free_head; idx != KVA_NIL; idx = c->frames[idx].next) {
		if (KVA_WARN_ON(idx >= c->nr_frames) ||
		    KVA_WARN_ON(c->frames[idx].flags) ||
		    KVA_WARN_ON(c->frames[idx].holder) ||
		    KVA_WARN_ON(++n > c->nr_frames))
			return -EUCLEAN;
	}
	if (KVA_WARN_ON(n != c->nr_free) ||
	    KVA_WARN_ON(c->unmet_min > c->nr_free))
		return -EUCLEAN;
	for (i = 0; i < c->nr_frames; i++) {
		const struct kva_frame *f = &c->frames[i];

		if (!f->flags)
			continue;
		held++;
		if (KVA_WARN_ON(f->flags != KVA_FRAME_HELD) ||
		    KVA_WARN_ON(!f->holder) || KVA_WARN_ON(!f->gen) ||
		    KVA_WARN_ON(f->prev == KVA_NIL && f->holder->head != i) ||
		    KVA_WARN_ON(f->prev != KVA_NIL &&
				c->frames[f->prev].next != i) ||
		    KVA_WARN_ON(f->next != KVA_NIL &&
				(c->frames[f->next].prev != i ||
				 c->frames[f->next].holder != f->holder)))
			return -EUCLEAN;
	}
	if (KVA_WARN_ON(held != kva_core_held(c)) ||
	    KVA_WARN_ON(c->frames_allocated - c->frames_freed != held))
		return -EUCLEAN;
	return 0;
}
