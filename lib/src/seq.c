// SPDX-License-Identifier: MIT
/*
 * Sequences: one reserved virtual range each, frames mapped behind it in
 * order, the frame layout of <kvarena/layout.h> across them.
 *
 * Frame slot i of a sequence holds tokens [i * T_f, (i + 1) * T_f).  The
 * mapped slots are [0, nr_mapped); mapping ahead of need makes nr_mapped
 * run past the last filled token.  After a fork, slots [0, nr_cow) may be
 * shared with other sequences (a frame's refs says by how many), and
 * published frames (prefix.c: kva_seq_publish(), kva_seq_attach_prefix())
 * are shared with whatever process looks their key up; a slot is only
 * ever written after it is private, which the slow path ensures by
 * copying it first (FRAME_SHARED).  Everything past the slot that holds the next
 * token is private, so the fast path's limit (room) is either the end of
 * the mapped frames or, while that slot is shared, the current length.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static struct kva_frame_rec *slot_frame(struct kva_seq_impl *s, uint32_t i)
{
	return &s->arena->frames[s->slot[i]];
}

static uint64_t slot_va(const struct kva_seq_impl *s, uint32_t i)
{
	return s->pub.base + (uint64_t)i * s->arena->frame_size;
}

uint64_t kva_seq_slot_va(const struct kva_seq_impl *s, uint32_t i)
{
	return slot_va(s, i);
}

static void set_tokens(struct kva_seq_impl *s, uint64_t tokens)
{
	__atomic_store_n(&s->pub.tokens, tokens, __ATOMIC_RELAXED);
}

/* Slot the next token goes to, if that slot is shared; else -1. */
static int64_t shared_write_slot(struct kva_seq_impl *s)
{
	uint64_t k = s->pub.tokens / s->pub.geo.tokens_per_frame;

	if (k < s->nr_cow && k < s->nr_mapped && FRAME_SHARED(slot_frame(s, k)))
		return (int64_t)k;
	return -1;
}

static void set_room(struct kva_seq_impl *s)
{
	uint64_t cap = (uint64_t)s->nr_mapped * s->pub.geo.tokens_per_frame;

	if (shared_write_slot(s) >= 0)
		s->pub.room = s->pub.tokens;
	else
		s->pub.room = min_u64(cap, s->pub.max_tokens);
}

void kva_seq_set_room(struct kva_seq_impl *s)
{
	set_room(s);
}

int kva_seq_create(struct kva_arena *a, const struct kva_geometry *g,
		   uint64_t max_tokens, struct kva_seq **out)
{
	struct kva_seq_impl *s;
	struct kva_geometry geo;
	uint64_t frames, got;
	int ret;

	if (!a || !g || !out || !max_tokens)
		return -EINVAL;
	if (a->no_memory)
		return -ENODATA;
	geo = *g;
	ret = kva_geometry_init(&geo);
	if (ret)
		return ret;
	if (geo.frame_size != a->frame_size)
		return -EINVAL;
	frames = kva_frames_for(&geo, max_tokens);
	if (frames > UINT32_MAX || frames > (1ull << 47) / a->frame_size)
		return -EINVAL;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->slot = calloc(frames, sizeof(*s->slot));
	if (!s->slot) {
		ret = -ENOMEM;
		goto err_free;
	}
	s->arena = a;
	s->nr_slots = (uint32_t)frames;
	s->pub.max_tokens = max_tokens;
	s->pub.geo = geo;

	kva_lock(a);
	ret = kva_resv_get(a, frames * a->frame_size, &s->pub.base, &got);
	if (ret) {
		kva_unlock(a);
		goto err_free;
	}
	s->va_size = got;
	list_add_tail(&s->link, &a->seqs);
	a->nr_seqs++;
	kva_unlock(a);
	*out = &s->pub;
	return 0;

err_free:
	free(s->slot);
	free(s);
	return ret;
}

/**
 * struct grow_plan - what kva_seq_grow_batch() does to one sequence.
 * @tokens:	the sequence's length afterwards.
 * @need:	frames to map after the mapped ones.
 * @first:	index of the first of them in the batch's frame array; the
 *		copy-on-write frame, if any, follows them.
 * @cow_slot:	slot to replace with a private copy, or -1.
 * @cow_tokens:	tokens to copy into it.
 * @saved_cow:	usage_after()'s copy of the sequence's nr_cow.
 * @mapped, @swapped: progress, for the undo.
 * @cow_drop:	after the commit: the frame the copy replaced, which no
 *		sequence maps any more, or UINT32_MAX.
 */
struct grow_plan {
	struct kva_seq_impl *s;
	uint64_t tokens;
	uint32_t need;
	uint32_t first;
	int64_t cow_slot;
	uint32_t cow_tokens;
	uint32_t saved_cow;
	bool mapped;
	bool swapped;
	uint32_t cow_drop;
};

static uint32_t cow_frame(const struct grow_plan *p, const uint32_t *idx)
{
	return idx[p->first + p->need];
}

static int plan_one(struct kva_arena *a, const struct kva_grow *r,
		    struct grow_plan *p)
{
	struct kva_seq_impl *s;
	uint64_t t, want, frames;
	int64_t k;

	if (!r->seq)
		return -EINVAL;
	s = seq_impl(r->seq);
	if (s->arena != a || s->in_batch)
		return -EINVAL;
	t = s->pub.tokens;
	if (r->tokens > s->pub.max_tokens - t)
		return -EFBIG;

	s->in_batch = true;
	*p = (struct grow_plan){ .s = s, .tokens = t + r->tokens,
				 .cow_drop = UINT32_MAX };
	want = p->tokens + min_u64(r->ahead, s->pub.max_tokens - p->tokens);
	frames = kva_frames_for(&s->pub.geo, want);
	p->need = frames > s->nr_mapped ? (uint32_t)(frames - s->nr_mapped) : 0;
	k = r->tokens ? shared_write_slot(s) : -1;
	p->cow_slot = k;
	p->cow_tokens = k < 0 ? 0 :
		(uint32_t)(t - (uint64_t)k * s->pub.geo.tokens_per_frame);
	return 0;
}

/*
 * Sequences sharing a frame may all append into it in one batch: each
 * before the last takes a copy, the last keeps the frame, which would
 * otherwise be left to nobody - unless it is published: its contents
 * are its key's, so every writer copies, and the frame goes back to the
 * arena (and its cache) when the last copy is made.
 */
static void cow_last_sharer(struct grow_plan *p, unsigned int i)
{
	uint32_t f, copies = 0;
	unsigned int j;

	if (p[i].cow_slot < 0)
		return;
	f = p[i].s->slot[p[i].cow_slot];
	for (j = 0; j < i; j++)
		copies += p[j].cow_slot >= 0 &&
			  p[j].s->slot[p[j].cow_slot] == f;
	if (p[i].s->arena->frames[f].refs - copies <= 1 &&
	    !(p[i].s->arena->frames[f].flags & FRAME_PUBLISHED)) {
		p[i].cow_slot = -1;
		p[i].cow_tokens = 0;
	}
}

/*
 * The usage the batch leaves behind, worked out before it runs so that it
 * can go to the module with the ALLOC: apply the new lengths and the
 * copy-on-write hand-overs, walk, put everything back.  No trimming of
 * shared prefixes here: the state walked is hypothetical.
 */
static void usage_after(struct kva_arena *a, struct grow_plan *p,
			unsigned int nr, struct kva_usage_report *u)
{
	struct kva_seq_impl *s;
	unsigned int i;
	uint64_t t;

	for (i = 0; i < nr; i++) {
		s = p[i].s;
		t = s->pub.tokens;
		set_tokens(s, p[i].tokens);
		p[i].tokens = t;
		p[i].saved_cow = s->nr_cow;
		if (p[i].cow_slot >= 0) {
			slot_frame(s, p[i].cow_slot)->refs--;
			if (s->nr_cow > p[i].cow_slot)
				s->nr_cow = (uint32_t)p[i].cow_slot;
		}
		kva_acct_update(a, s);
	}
	kva_usage_compute(a, u, false);
	for (i = 0; i < nr; i++) {
		s = p[i].s;
		t = s->pub.tokens;
		set_tokens(s, p[i].tokens);
		p[i].tokens = t;
		s->nr_cow = p[i].saved_cow;
		if (p[i].cow_slot >= 0)
			slot_frame(s, p[i].cow_slot)->refs++;
		kva_acct_update(a, s);
	}
}

/* Resolve and map plan @p's new frames after its mapped ones. */
static int map_new(struct kva_arena *a, struct grow_plan *p,
		   const uint32_t *idx)
{
	uint32_t j;
	int ret;

	for (j = 0; j < p->need; j++) {
		if (a->frames[idx[p->first + j]].flags & FRAME_RESOLVED)
			continue;
		ret = a->vmm->resolve(a, idx[p->first + j]);
		if (ret)
			return ret;
	}
	ret = a->vmm->map(a, slot_va(p->s, p->s->nr_mapped), idx + p->first,
			  p->need);
	if (ret)
		return ret;
	p->mapped = true;
	/* A raw sequence's engine may read rows it never wrote. */
	if (p->need && p->s->pub.geo.dtype == KVA_DTYPE_RAW && a->vmm->zero)
		ret = a->vmm->zero(a, slot_va(p->s, p->s->nr_mapped), p->need);
	return ret;
}

/* Fill plan @p's new private frame with the shared slot's tokens. */
static int cow_copy(struct kva_arena *a, struct grow_plan *p,
		    const uint32_t *idx)
{
	uint32_t nf = cow_frame(p, idx);
	uint64_t scratch;
	int ret;

	if (!(a->frames[nf].flags & FRAME_RESOLVED)) {
		ret = a->vmm->resolve(a, nf);
		if (ret)
			return ret;
	}
	if (!p->cow_tokens)
		return 0;
	ret = kva_scratch(a, &scratch);
	if (ret)
		return ret;
	ret = a->vmm->map(a, scratch, &nf, 1);
	if (ret)
		return ret;
	/* The copy's rows are all a raw frame may show of its past. */
	if (p->s->pub.geo.dtype == KVA_DTYPE_RAW && a->vmm->zero)
		ret = a->vmm->zero(a, scratch, 1);
	/* done, and so is what the engine queued before: see swap_slot() */
	if (!ret)
		ret = a->vmm->copy(a, scratch, slot_va(p->s, p->cow_slot),
				   &p->s->pub.geo, p->cow_tokens);
	/* The scratch mapping must go even if the copy failed. */
	if (a->vmm->unmap(a, scratch, 1) && !ret)
		ret = -EIO;
	return ret;
}

/*
 * Map frame @to at slot @k in place of frame @from.  Kernels the engine
 * queued earlier may read the slot, and a mapping cannot be replaced
 * (cuMemMap), only unmapped first, which does not wait for the device:
 * the caller has waited for the engine's stream (kva_quiesce(), or the
 * copy's wait) before the first swap.  On failure the slot
 * maps @from again; should even that fail, the slot is left unmapped and
 * the result is -EIO (the backend's own error is in backend_error), or
 * -ESHUTDOWN if the module refused because the client was evicted: then
 * every frame of it is gone anyway, and that is what the caller must
 * hear.
 */
static int swap_slot(struct kva_arena *a, struct kva_seq_impl *s, uint32_t k,
		     uint32_t from, uint32_t to)
{
	uint64_t va = slot_va(s, k);
	int ret;

	if (!a->vmm->map_replaces) {
		ret = a->vmm->unmap(a, va, 1);
		if (ret)
			return ret;
	}
	ret = a->vmm->map(a, va, &to, 1);
	if (ret && a->vmm->map(a, va, &from, 1))
		return ret == -ESHUTDOWN ? ret : -EIO;
	return ret;
}

/*
 * Undo a failed batch: put the shared frames back where copies went in,
 * unmap the new frames, return them.  A frame that cannot be unmapped
 * must not go back to the arena while mapped here: it stays held, marked
 * stuck, until kva_close().
 */
static void grow_undo(struct kva_arena *a, struct grow_plan *p,
		      unsigned int nr, uint64_t *h, uint32_t *idx,
		      uint32_t total)
{
	uint32_t j, n = 0;
	unsigned int i;

	for (i = nr; i-- > 0;) {
		struct kva_seq_impl *s = p[i].s;

		/* The copy may still be mapped if this fails: keep it. */
		if (p[i].swapped &&
		    swap_slot(a, s, (uint32_t)p[i].cow_slot,
			      cow_frame(&p[i], idx), s->slot[p[i].cow_slot]))
			a->frames[cow_frame(&p[i], idx)].flags |= FRAME_STUCK;
		if (p[i].mapped &&
		    a->vmm->unmap(a, slot_va(s, s->nr_mapped), p[i].need))
			for (j = 0; j < p[i].need; j++)
				a->frames[idx[p[i].first + j]].flags |=
					FRAME_STUCK;
	}
	for (j = 0; j < total; j++)
		if (!(a->frames[idx[j]].flags & FRAME_STUCK))
			h[n++] = h[j];
	kva_frames_put(a, h, n);
}

static void grow_commit(struct kva_arena *a, struct grow_plan *p,
			const uint32_t *idx)
{
	struct kva_seq_impl *s = p->s;
	uint32_t j;

	for (j = 0; j < p->need; j++) {
		s->slot[s->nr_mapped + j] = idx[p->first + j];
		a->frames[idx[p->first + j]].refs = 1;
	}
	s->nr_mapped += p->need;
	if (p->cow_slot >= 0) {
		uint32_t k = (uint32_t)p->cow_slot;

		if (!--slot_frame(s, k)->refs)
			p->cow_drop = s->slot[k];
		s->slot[k] = cow_frame(p, idx);
		slot_frame(s, k)->refs = 1;
		if (s->nr_cow > k)
			s->nr_cow = k;
	}
	set_tokens(s, p->tokens);
	set_room(s);
	kva_acct_update(a, s);
}

/* Small batches (a decode step's slow paths) need no heap. */
#define GROW_STACK	8

static int grow_batch_once(struct kva_arena *a, const struct kva_grow *reqs,
			   unsigned int nr)
{
	struct grow_plan stack_plan[GROW_STACK], *p = stack_plan;
	uint64_t stack_h[GROW_STACK], *h = stack_h;
	uint32_t stack_idx[GROW_STACK], *idx = stack_idx;
	struct kva_usage_report u;
	uint64_t total = 0;
	unsigned int i, planned = 0, cows = 0;
	bool drained = false;
	int ret = 0;

	if (!a || (nr && !reqs))
		return -EINVAL;
	if (!nr)
		return 0;
	if (nr > GROW_STACK) {
		p = calloc(nr, sizeof(*p));
		if (!p)
			return -ENOMEM;
	}

	kva_lock(a);
	/* A range a stream-ordered shrink is still unmapping: wait first. */
	for (i = 0; i < nr; i++)
		if (reqs[i].seq && seq_impl(reqs[i].seq)->unmapping) {
			kva_teardown_wait_locked(a);
			break;
		}
	for (; i < nr; i++)
		if (reqs[i].seq)
			seq_impl(reqs[i].seq)->unmapping = false;
	for (i = 0; i < nr; i++) {
		ret = plan_one(a, &reqs[i], &p[i]);
		if (ret)
			goto out_unmark;
		planned++;
		cow_last_sharer(p, i);
		p[i].first = (uint32_t)total;
		total += p[i].need + (p[i].cow_slot >= 0);
	}
	if (total > a->nr_frames) {
		ret = -ENOSPC;
		goto out_unmark;
	}
	if (total > GROW_STACK) {
		h = malloc(total * sizeof(*h));
		idx = malloc(total * sizeof(*idx));
		if (!h || !idx) {
			ret = -ENOMEM;
			goto out_free;
		}
	}

	if (total) {
		usage_after(a, p, nr, &u);
		ret = kva_frames_take(a, h, (uint32_t)total, &u);
		if (ret)
			goto out_free;
		for (i = 0; i < total; i++)
			idx[i] = handle_idx(h[i]);
	}

	/* New frames first: they touch nothing a sequence uses yet. */
	for (i = 0; i < nr; i++) {
		if (p[i].need) {
			ret = map_new(a, &p[i], idx);
			if (ret)
				goto err_undo;
		}
		if (p[i].cow_slot >= 0) {
			ret = cow_copy(a, &p[i], idx);
			if (ret)
				goto err_undo;
			drained |= p[i].cow_tokens > 0;
			cows++;
		}
	}
	/*
	 * Then the copies take the shared frames' places, once the device is
	 * through with what the engine queued before (swap_slot()).
	 */
	if (cows && !drained) {
		ret = kva_quiesce(a) ? -EIO : 0;
		if (ret)
			goto err_undo;
	}
	for (i = 0; i < nr; i++) {
		if (p[i].cow_slot < 0)
			continue;
		ret = swap_slot(a, p[i].s, (uint32_t)p[i].cow_slot,
				p[i].s->slot[p[i].cow_slot],
				cow_frame(&p[i], idx));
		if (ret)
			goto err_undo;
		p[i].swapped = true;
	}
	for (i = 0; i < nr; i++)
		grow_commit(a, &p[i], idx);
	/*
	 * Published frames every sharer copied go back to the arena: no
	 * sequence maps them, and the device is done with them.
	 */
	for (i = 0; i < nr; i++) {
		if (p[i].cow_drop != UINT32_MAX) {
			uint64_t drop = a->frames[p[i].cow_drop].handle;

			kva_frames_put(a, &drop, 1);
		}
	}
	goto out_free;

err_undo:
	grow_undo(a, p, nr, h, idx, (uint32_t)total);
out_free:
	if (h != stack_h)
		free(h);
	if (idx != stack_idx)
		free(idx);
out_unmark:
	for (i = 0; i < planned; i++)
		p[i].s->in_batch = false;
	kva_unlock(a);
	if (p != stack_plan)
		free(p);
	return ret;
}

/*
 * A full arena with stream-ordered teardowns still running (teardown.c)
 * is full only until they finish: wait for them and try once more.
 */
int kva_seq_grow_batch(struct kva_arena *a, const struct kva_grow *reqs,
		       unsigned int nr)
{
	int ret = grow_batch_once(a, reqs, nr);
	bool pending;

	if (ret != -ENOSPC || !a)
		return ret;
	kva_lock(a);
	pending = a->td_pending;
	kva_teardown_wait_locked(a);
	kva_unlock(a);
	return pending ? grow_batch_once(a, reqs, nr) : ret;
}

int kva_seq_grow_slow(struct kva_seq *seq, uint64_t n)
{
	struct kva_grow r = { .seq = seq, .tokens = n };

	if (!seq)
		return -EINVAL;
	return kva_seq_grow_batch(seq_impl(seq)->arena, &r, 1);
}

/*
 * Drop slots [from, nr_mapped): the frames no other sequence maps go to
 * @h (room for nr_mapped - from handles), or are marked stuck if @stuck.
 * Returns how many went to @h.
 */
static uint32_t drop_slots(struct kva_seq_impl *s, uint32_t from, uint64_t *h,
			   bool stuck)
{
	uint32_t i, n = 0;

	for (i = from; i < s->nr_mapped; i++) {
		struct kva_frame_rec *f = slot_frame(s, i);

		if (--f->refs)
			continue;
		if (stuck)
			f->flags |= FRAME_STUCK;
		else
			h[n++] = f->handle;
	}
	s->nr_mapped = from;
	if (s->nr_cow > from)
		s->nr_cow = from;
	return n;
}

int kva_seq_shrink(struct kva_seq *seq, uint64_t tokens)
{
	uint64_t stack_h[GROW_STACK], *h = stack_h;
	struct kva_teardown *t;
	struct kva_seq_impl *s;
	struct kva_arena *a;
	uint32_t keep, drop, n;
	int ret = 0;

	if (!seq)
		return -EINVAL;
	s = seq_impl(seq);
	a = s->arena;
	kva_lock(a);
	if (tokens > s->pub.tokens) {
		ret = -EINVAL;
		goto out;
	}
	keep = (uint32_t)kva_frames_for(&s->pub.geo, tokens);
	drop = s->nr_mapped > keep ? s->nr_mapped - keep : 0;
	/*
	 * Stream-ordered: the worker unmaps the tail once the stream has
	 * passed this point and only then returns its frames; the range
	 * stays this sequence's, and a grow waits before mapping there.
	 */
	t = drop ? kva_teardown_new(a, slot_va(s, keep), 0, drop, drop) :
	    NULL;
	if (t) {
		n = drop_slots(s, keep, kva_teardown_handles(t), false);
		kva_teardown_queue(a, t, n);
		s->unmapping = true;
		n = 0;
		goto done;
	}
	/*
	 * A frame shared with a sequence whose stream-ordered free is still
	 * pending is mapped there until that teardown is through: it must
	 * not go back to the arena before.
	 */
	if (a->td_pending && s->nr_cow > keep)
		kva_teardown_wait_locked(a);
	if (drop > GROW_STACK) {
		h = malloc(drop * sizeof(*h));
		if (!h) {
			ret = -ENOMEM;
			goto out;
		}
	}
	if (drop) {
		/* kernels queued before may still read the tail */
		kva_quiesce(a);
		ret = a->vmm->unmap(a, slot_va(s, keep), drop);
		if (ret)
			goto out;
	}
	n = drop ? drop_slots(s, keep, h, false) : 0;
done:
	set_tokens(s, tokens);
	set_room(s);
	kva_acct_update(a, s);
	kva_frames_put(a, h, n);
out:
	kva_unlock(a);
	if (h != stack_h)
		free(h);
	return ret;
}

int kva_seq_swap_out(struct kva_seq *seq, void *buf, uint64_t size,
		     uint64_t *tokens)
{
	struct kva_arena *a;
	uint64_t bytes;
	int ret;

	if (!seq || !tokens || (!buf && seq->tokens))
		return -EINVAL;
	bytes = kva_seq_swap_bytes(seq);
	if (size < bytes)
		return -EINVAL;
	a = seq_impl(seq)->arena;
	/* The frames up to the tokens are mapped: the range is the seq's. */
	ret = bytes ? a->vmm->xfer(a, seq->base, buf, bytes, true) : 0;
	if (ret)
		return ret;
	*tokens = seq->tokens;
	return kva_seq_shrink(seq, 0);
}

int kva_seq_swap_in(struct kva_seq *seq, const void *buf, uint64_t tokens)
{
	struct kva_arena *a;
	int ret;

	if (!seq || !buf || !tokens || tokens > seq->max_tokens)
		return -EINVAL;
	if (seq->tokens)
		return -EBUSY;
	a = seq_impl(seq)->arena;
	/* From no token, a grow maps new frames, private to this sequence. */
	ret = kva_seq_grow_slow(seq, tokens);
	if (ret)
		return ret;
	ret = a->vmm->xfer(a, seq->base, (void *)buf,
			   kva_seq_swap_bytes(seq), false);
	if (ret)
		kva_seq_shrink(seq, 0);
	return ret;
}

int kva_seq_fork(struct kva_seq *parent, struct kva_seq **out)
{
	struct kva_seq_impl *p, *c;
	struct kva_arena *a;
	uint64_t got;
	uint32_t n, i;
	int ret;

	if (!parent || !out)
		return -EINVAL;
	p = seq_impl(parent);
	a = p->arena;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->slot = calloc(p->nr_slots, sizeof(*c->slot));
	if (!c->slot) {
		ret = -ENOMEM;
		goto err_free;
	}
	c->arena = a;
	c->nr_slots = p->nr_slots;
	c->pub = p->pub;

	kva_lock(a);
	ret = kva_resv_get(a, (uint64_t)p->nr_slots * a->frame_size,
			   &c->pub.base, &got);
	if (ret)
		goto err_unlock;
	c->va_size = got;
	/* The frames that hold tokens; mapped-ahead ones stay the parent's. */
	n = (uint32_t)kva_frames_for(&p->pub.geo, p->pub.tokens);
	if (n) {
		memcpy(c->slot, p->slot, n * sizeof(*c->slot));
		ret = a->vmm->map(a, c->pub.base, c->slot, n);
		if (ret) {
			kva_resv_put(a, c->pub.base, c->va_size);
			goto err_unlock;
		}
	}
	for (i = 0; i < n; i++)
		slot_frame(c, i)->refs++;
	c->nr_mapped = n;
	c->nr_cow = n;
	if (p->nr_cow < n)
		p->nr_cow = n;
	set_room(c);
	set_room(p);
	list_add_tail(&c->link, &a->seqs);
	a->nr_seqs++;
	kva_acct_update(a, c);
	kva_acct_update(a, p);
	kva_unlock(a);
	*out = &c->pub;
	return 0;

err_unlock:
	kva_unlock(a);
err_free:
	free(c->slot);
	free(c);
	return ret;
}

/* Unmap, drop the frames and free @s.  Lock held. */
void kva_seq_destroy_locked(struct kva_seq_impl *s)
{
	struct kva_arena *a = s->arena;
	uint64_t chunk[256];
	struct kva_teardown *t;
	bool stuck = false;
	uint32_t from, n;

	/*
	 * stream-ordered: the worker unmaps and returns them (teardown.c);
	 * with nothing mapped, still through the worker if a shrink's
	 * unmap is queued, so that the range goes back after it
	 */
	t = s->nr_mapped || s->unmapping ?
	    kva_teardown_new(a, s->pub.base, s->va_size, s->nr_mapped,
			     s->nr_mapped) : NULL;
	if (t) {
		list_del(&s->link);
		a->nr_seqs--;
		kva_acct_remove(a, s);
		n = drop_slots(s, 0, kva_teardown_handles(t), false);
		kva_teardown_queue(a, t, n);
		free(s->slot);
		free(s);
		return;
	}
	/*
	 * as in kva_seq_shrink(): shared frames wait for pending teardowns,
	 * and so does a range a shrink's teardown still unmaps
	 */
	if (a->td_pending && (s->nr_cow || s->unmapping))
		kva_teardown_wait_locked(a);
	/* kernels queued before may still read the range */
	if (s->nr_mapped)
		kva_quiesce(a);
	if (s->nr_mapped && a->vmm->unmap(a, s->pub.base, s->nr_mapped)) {
		/* Still mapped: keep the frames, give up the range. */
		stuck = true;
		a->vmm->release(a, s->pub.base, s->va_size);
	} else {
		kva_resv_put(a, s->pub.base, s->va_size);
	}
	list_del(&s->link);
	a->nr_seqs--;
	kva_acct_remove(a, s);
	/* Return frames in batches, from the end of the range back. */
	while (s->nr_mapped) {
		from = s->nr_mapped > ARRAY_SIZE(chunk) ?
			s->nr_mapped - (uint32_t)ARRAY_SIZE(chunk) : 0;
		n = drop_slots(s, from, chunk, stuck);
		kva_frames_put(a, chunk, n);
	}
	free(s->slot);
	free(s);
}

void kva_seq_free(struct kva_seq *seq)
{
	struct kva_arena *a;

	if (!seq)
		return;
	a = seq_impl(seq)->arena;
	kva_lock(a);
	kva_seq_destroy_locked(seq_impl(seq));
	kva_unlock(a);
}

int kva_seq_handles(struct kva_seq *seq, uint64_t *handles,
		    unsigned int count)
{
	struct kva_seq_impl *s;
	uint32_t i, n;

	if (!seq || (count && !handles))
		return -EINVAL;
	s = seq_impl(seq);
	kva_lock(s->arena);
	n = s->nr_mapped;
	for (i = 0; i < n && i < count; i++)
		handles[i] = slot_frame(s, i)->handle;
	kva_unlock(s->arena);
	return (int)n;
}

/*
 * May a rank map frame @idx under its new handle?  The module says (does
 * the client hold it, is it published).  Host members: the frames file
 * again, whose mappings the module revokes.  CUDA members: the import
 * made the first time is kept until kva_close() - the member's memory of
 * that frame, whatever the handle - and the fd given now is closed.
 */
static int rank_resolve(struct kva_arena *a, uint32_t idx)
{
	struct kva_frame_rec *f = &a->frames[idx];
	uint64_t offset;
	int fd, ret;

	if (a->backend != KVA_BACKEND_CUDA || !(f->flags & FRAME_RESOLVED)) {
		f->flags &= ~FRAME_RESOLVED;
		return a->vmm->resolve(a, idx);
	}
	ret = a->prov->frame_fd(a, f->handle, &fd, &offset);
	if (!ret)
		close(fd);
	return ret;
}

/*
 * A rank's sequence follows its client's block table (kva_seq_mirror()).
 * A slot keeps its mapping while it names the same handle; every other
 * frame is checked with the module (FRAME_FD: does the client hold it,
 * and may it be written?) and mapped, the run from the first change on in
 * one call.  Frames are not taken or returned: a slot's record counts
 * the rank's slots that map it (refs), so that the records of frames no
 * slot maps any more are let go as kva_frames_put() lets a rank's go.
 */
int kva_seq_mirror(struct kva_seq *seq, const uint64_t *handles,
		   unsigned int n, uint64_t tokens)
{
	uint32_t stack_idx[GROW_STACK], *idx = stack_idx;
	uint64_t stack_h[GROW_STACK], *old = stack_h;
	struct kva_seq_impl *s;
	struct kva_arena *a;
	uint32_t i, first, nold = 0;
	int ret = 0;

	if (!seq || (n && !handles))
		return -EINVAL;
	s = seq_impl(seq);
	a = s->arena;
	if (!a->rank)
		return -EOPNOTSUPP;
	if (n > s->nr_slots || tokens > s->pub.max_tokens ||
	    tokens > (uint64_t)n * s->pub.geo.tokens_per_frame)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (handle_idx(handles[i]) >= a->nr_frames || !handles[i])
			return -EINVAL;
	if (n > GROW_STACK || s->nr_mapped > GROW_STACK) {
		idx = malloc((n > GROW_STACK ? n : GROW_STACK) * sizeof(*idx));
		old = malloc((s->nr_mapped > GROW_STACK ? s->nr_mapped :
			      GROW_STACK) * sizeof(*old));
		if (!idx || !old) {
			ret = -ENOMEM;
			goto out_free;
		}
	}

	kva_lock(a);
	for (first = 0; first < n && first < s->nr_mapped; first++)
		if (slot_frame(s, first)->handle != handles[first] ||
		    s->slot[first] != handle_idx(handles[first]))
			break;
	/* Ask the module about every frame from the first change on. */
	for (i = first; i < n; i++) {
		struct kva_frame_rec *f;

		idx[i] = handle_idx(handles[i]);
		f = &a->frames[idx[i]];
		/*
		 * Another sequence may still map the frame under an older
		 * handle (the client freed it and took it again): the same
		 * memory, revoked and refaulted by the module meanwhile; its
		 * slot is remapped when that sequence is mirrored next.
		 */
		f->handle = handles[i];
		ret = rank_resolve(a, idx[i]);
		if (ret)
			goto out_unlock;
	}
	/* The slots from the first change on go, then the new run comes. */
	if (first < s->nr_mapped) {
		kva_quiesce(a);
		ret = a->vmm->unmap(a, slot_va(s, first), s->nr_mapped - first);
		if (ret)
			goto out_unlock;
		for (i = first; i < s->nr_mapped; i++) {
			struct kva_frame_rec *f = slot_frame(s, i);

			if (!--f->refs)
				old[nold++] = f->handle;
		}
		s->nr_mapped = first;
	}
	if (n > first) {
		ret = a->vmm->map(a, slot_va(s, first), idx + first, n - first);
		if (ret) {
			uint64_t cap = (uint64_t)first *
				       s->pub.geo.tokens_per_frame;

			if (s->pub.tokens > cap)
				set_tokens(s, cap);
			set_room(s);
			goto out_put;
		}
		for (i = first; i < n; i++) {
			s->slot[i] = idx[i];
			a->frames[idx[i]].refs++;
		}
		s->nr_mapped = n;
	}
	set_tokens(s, tokens);
	set_room(s);
out_put:
	/* Records no slot maps any more: a rank lets them go. */
	for (i = 0; i < nold; i++)
		if (!a->frames[handle_idx(old[i])].refs)
			kva_frames_put(a, &old[i], 1);
out_unlock:
	kva_unlock(a);
out_free:
	if (idx != stack_idx)
		free(idx);
	if (old != stack_h)
		free(old);
	return ret;
}
