// SPDX-License-Identifier: MIT
/*
 * kva_scrub(): the arena owner's side of the module's SCRUB command,
 * which clears a CUDA arena's frames between cache domains.
 *
 * A round takes the frames the module wants cleared, imports each
 * (FRAME_FD gives a scrubber the frames it took, which nobody holds),
 * maps them into a range from the reservation cache, zeroes them on the
 * device and waits for it, unmaps them only then, lets go of the imports
 * (the module does not hand on a frame whose memory anyone still holds),
 * and gives them back.  Frames that could not be cleared are abandoned
 * (KVARENA_SCRUB_ABANDON): the next take, this client's or another
 * scrubber's, gets them first.
 */
#include "internal.h"

/* Frames mapped and cleared at once. */
#define SCRUB_BATCH	64u

/* Clear frames @h[0..n), which the module gave this client to scrub. */
static int clear_frames(struct kva_arena *a, const uint64_t *h, uint32_t n)
{
	uint32_t idx[SCRUB_BATCH], i, k;
	uint64_t va, got;
	int ret = 0, uret;

	for (k = 0; k < n && !ret; k++) {
		struct kva_frame_rec *f;

		idx[k] = handle_idx(h[k]);
		f = idx[k] < a->nr_frames ? &a->frames[idx[k]] : NULL;
		/* Nobody holds a frame being scrubbed: not this handle either. */
		if (!f || f->handle) {
			ret = -EPROTO;
			break;
		}
		/* What it was when this handle last held it does not matter. */
		f->flags &= ~FRAME_PUBLISHED;
		if (!(f->flags & FRAME_RESOLVED)) {
			f->handle = h[k];
			ret = a->vmm->resolve(a, idx[k]);
			f->handle = 0;
		}
	}
	if (!ret)
		ret = kva_resv_get(a, (uint64_t)n * a->frame_size, &va, &got);
	if (!ret) {
		ret = a->vmm->map(a, va, idx, n);
		if (!ret) {
			ret = a->vmm->clear(a, va, n);
			/* Only after the device is done with them. */
			uret = a->vmm->unmap(a, va, n);
			ret = ret ? ret : uret;
		}
		kva_resv_put(a, va, got);
	}
	/* An import kept would keep the frame in its domain (the module's rule). */
	for (i = 0; i < k; i++)
		a->vmm->forget(a, idx[i]);
	return ret;
}

int kva_scrub(struct kva_arena *a, unsigned int max, int timeout_ms)
{
	uint64_t h[SCRUB_BATCH];
	unsigned int done = 0;
	int n, ret;

	if (!a || !max || max > KVA_MAX_BATCH)
		return -EINVAL;
	if (a->mode != KVA_MODE_DEVICE || !a->prov->scrub || !a->vmm->clear ||
	    !a->vmm->forget)
		return -EOPNOTSUPP;
	while (done < max) {
		uint32_t want = max - done < SCRUB_BATCH ? max - done :
			       SCRUB_BATCH;

		/* Only the first take waits. */
		n = a->prov->scrub(a, h, want, 0, done || timeout_ms < 0 ? 0 :
				   (uint32_t)timeout_ms);
		if (n <= 0) {
			ret = n;
			break;
		}
		kva_lock(a);
		ret = clear_frames(a, h, (uint32_t)n);
		kva_unlock(a);
		if (!ret)
			ret = a->prov->scrub(a, h, (uint32_t)n,
					     KVARENA_SCRUB_DONE, 0);
		if (ret < 0) {
			/* Not cleared, or still held: the next take retries. */
			a->prov->scrub(a, h, (uint32_t)n, KVARENA_SCRUB_DONE |
				       KVARENA_SCRUB_ABANDON, 0);
			break;
		}
		done += (unsigned int)n;
		if ((uint32_t)n < want)
			break;
	}
	return done ? (int)done : ret;
}

int kva_scrub_take(struct kva_arena *a, uint64_t *h, unsigned int max,
		   int timeout_ms)
{
	if (!a || !h || !max || max > KVA_MAX_BATCH)
		return -EINVAL;
	if (a->rank)
		return -EPERM;
	if (a->mode != KVA_MODE_DEVICE || !a->prov->scrub)
		return -EOPNOTSUPP;
	return a->prov->scrub(a, h, max, 0,
			      timeout_ms < 0 ? 0 : (uint32_t)timeout_ms);
}

int kva_scrub_give(struct kva_arena *a, const uint64_t *h, unsigned int n,
		   unsigned int flags)
{
	if (!a || !h || !n || n > KVA_MAX_BATCH ||
	    (flags & ~KVA_SCRUB_UNCLEARED))
		return -EINVAL;
	if (a->rank)
		return -EPERM;
	if (a->mode != KVA_MODE_DEVICE || !a->prov->scrub)
		return -EOPNOTSUPP;
	return a->prov->scrub(a, (uint64_t *)h, n, KVARENA_SCRUB_DONE |
			      (flags & KVA_SCRUB_UNCLEARED ?
			       KVARENA_SCRUB_ABANDON : 0), 0);
}

int kva_rank_clear(struct kva_arena *a, const uint64_t *h, unsigned int n)
{
	unsigned int done = 0;
	int ret = 0;

	if (!a || !h || !n || n > KVA_MAX_BATCH)
		return -EINVAL;
	if (!a->rank)
		return -EPERM;
	if (!a->vmm->clear || !a->vmm->forget)
		return -EOPNOTSUPP;
	kva_lock(a);
	while (done < n && !ret) {
		uint32_t m = n - done < SCRUB_BATCH ? n - done : SCRUB_BATCH;

		ret = clear_frames(a, h + done, m);
		done += m;
	}
	kva_unlock(a);
	return ret;
}
