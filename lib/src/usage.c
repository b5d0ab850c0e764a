// SPDX-License-Identifier: MIT
/*
 * Usage: the distinct tokens (and their bytes) in a handle's frames, what
 * SET_USAGE reports as the arena's "filled" level.
 *
 * A sequence's tokens split at its shared prefix: slots [0, nr_cow) may
 * be shared with forked sequences, the rest are its own.  The tokens past
 * the prefix are kept as a running sum over all sequences (acct_*),
 * updated whenever a sequence's frames change - so a frame operation
 * costs nothing per other sequence.  The tokens in shared prefixes are
 * counted by walking only the sequences that have one (the cow list):
 * a shared frame holds as many tokens as the sharer with the most in it,
 * counted once by marking it with the walk's number.
 *
 * The fast path moves tokens without telling anyone, so the running sum
 * holds each sequence's length as of its last frame operation;
 * kva_sync_usage() brings every sequence up to date.  Lock held
 * throughout.
 */
#include "internal.h"

static uint32_t tokens_in_frame(uint64_t tokens, uint32_t i, uint32_t tpf)
{
	uint64_t start = (uint64_t)i * tpf;

	if (tokens <= start)
		return 0;
	return tokens - start >= tpf ? tpf : (uint32_t)(tokens - start);
}

/* Bring @s's share of the running sum, and its cow-list place, up to date. */
void kva_acct_update(struct kva_arena *a, struct kva_seq_impl *s)
{
	uint64_t t = __atomic_load_n(&s->pub.tokens, __ATOMIC_RELAXED);
	uint64_t shared = (uint64_t)s->nr_cow * s->pub.geo.tokens_per_frame;
	uint64_t own = t > shared ? t - shared : 0;

	a->acct.tokens += own - s->acct_tokens;
	a->acct.bytes += own * s->pub.geo.bytes_per_token - s->acct_bytes;
	s->acct_tokens = own;
	s->acct_bytes = own * s->pub.geo.bytes_per_token;
	if (s->nr_cow && !s->on_cow_list)
		list_add_tail(&s->cow_link, &a->cow_seqs);
	else if (!s->nr_cow && s->on_cow_list)
		list_del(&s->cow_link);
	s->on_cow_list = s->nr_cow;
}

void kva_acct_remove(struct kva_arena *a, struct kva_seq_impl *s)
{
	a->acct.tokens -= s->acct_tokens;
	a->acct.bytes -= s->acct_bytes;
	s->acct_tokens = s->acct_bytes = 0;
	if (s->on_cow_list)
		list_del(&s->cow_link);
	s->on_cow_list = false;
}

/*
 * @u = the running sum + the walk over shared prefixes.  With @trim, a
 * sequence's prefix loses trailing frames no other sequence maps any
 * more and that are not published (and its running share grows by their
 * tokens); without, the state
 * may be a hypothetical one (kva_seq_grow_batch()) and is left alone.
 */
void kva_usage_compute(struct kva_arena *a, struct kva_usage_report *u,
		       bool trim)
{
	struct list_node *n, *next;
	uint32_t walk, i;

	walk = ++a->walk;
	if (!walk) {
		for (i = 0; i < a->nr_frames; i++)
			a->frames[i].mark = 0;
		walk = a->walk = 1;
	}
	if (trim) {
		for (n = a->cow_seqs.next; n != &a->cow_seqs; n = next) {
			struct kva_seq_impl *s =
				container_of(n, struct kva_seq_impl, cow_link);
			uint32_t pre = s->nr_cow;

			next = n->next;
			while (pre && !FRAME_SHARED(&a->frames[s->slot[pre - 1]]))
				pre--;
			if (pre != s->nr_cow) {
				s->nr_cow = pre;
				kva_acct_update(a, s);
			}
		}
	}

	*u = a->acct;
	for (n = a->cow_seqs.next; n != &a->cow_seqs; n = n->next) {
		struct kva_seq_impl *s = container_of(n, struct kva_seq_impl,
						      cow_link);
		uint64_t t = __atomic_load_n(&s->pub.tokens, __ATOMIC_RELAXED);
		uint32_t tpf = s->pub.geo.tokens_per_frame;
		uint64_t bpt = s->pub.geo.bytes_per_token;

		for (i = 0; i < s->nr_cow; i++) {
			struct kva_frame_rec *f = &a->frames[s->slot[i]];
			uint32_t in = tokens_in_frame(t, i, tpf), add;

			if (f->refs <= 1) {
				add = in;
			} else if (f->mark != walk) {
				f->mark = walk;
				f->fill = in;
				add = in;
			} else {
				add = in > f->fill ? in - f->fill : 0;
				f->fill += add;
			}
			u->tokens += add;
			u->bytes += add * bpt;
		}
	}
}

/* Bring every sequence's share up to date: the fast path's tokens too. */
void kva_usage_refresh(struct kva_arena *a)
{
	struct list_node *n;

	for (n = a->seqs.next; n != &a->seqs; n = n->next)
		kva_acct_update(a, container_of(n, struct kva_seq_impl, link));
}

/* Report usage if it changed since the last report. */
int kva_usage_report(struct kva_arena *a)
{
	struct kva_usage_report u;
	int ret;

	kva_usage_refresh(a);
	kva_usage_compute(a, &u, true);
	if (a->reported_valid && u.tokens == a->reported.tokens &&
	    u.bytes == a->reported.bytes)
		return 0;
	ret = a->prov->report(a, &u);
	if (ret)
		return ret;
	a->reported = u;
	a->reported_valid = true;
	return 0;
}

/*
 * Device mode, CUDA: once shrinks took frames out of the arena, let go of
 * the import of every frame this handle does not hold - the GPU memory of
 * a frame taken out is freed only when every importer has let go - and
 * tell the module, which gives such a frame new memory only then.  A
 * frame this handle gets again is imported again.  Locked.
 */
static void drop_stale_imports(struct kva_arena *a)
{
	uint64_t retired;
	uint32_t i;

	if (!a->vmm->forget || !a->prov->retired ||
	    a->prov->retired(a, &retired) || retired == a->retired_seen)
		return;
	for (i = 0; i < a->nr_frames; i++) {
		const struct kva_frame_rec *f = &a->frames[i];

		if ((f->flags & FRAME_RESOLVED) && !f->handle && !f->refs)
			a->vmm->forget(a, i);
	}
	if (!a->prov->imports_dropped(a))
		a->retired_seen = retired;
}

int kva_sync_usage(struct kva_arena *a)
{
	int ret;

	if (!a)
		return -EINVAL;
	kva_lock(a);
	ret = kva_usage_report(a);
	drop_stale_imports(a);
	kva_unlock(a);
	return ret;
}
