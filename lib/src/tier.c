// SPDX-License-Identifier: MIT
/*
 * kva_tier_agent(): the agent's side of the module's TIER command, which
 * copies frames between an arena and the host arena below it.
 *
 * A round takes the copies the module has waiting (each names a frame of
 * the upper arena, a frame of the lower one and a direction), learns the
 * frames' memory (FRAME_FD: the module grants the agent the frames of the
 * jobs it took, the one copied from read-only), maps the batch's upper
 * frames into one range of the upper arena's and its lower frames into
 * one range of the lower arena's, copies, waits for the copies, unmaps,
 * lets go of the upper frames' imports (a CUDA import kept would keep the
 * frame's memory after the module hands the frame on), and gives the jobs
 * back with their results.  The module makes a copy visible only once it
 * is given back done, so a failed or abandoned copy is never seen.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* Copies taken, mapped and made at once. */
#define TIER_BATCH	64u

/* The frame records of job @j, or -EPROTO (a frame this handle holds). */
static int job_frames(struct kva_arena *a, struct kva_arena *lower,
		      const struct kvarena_tier_job *j, uint32_t *ui,
		      uint32_t *li)
{
	*ui = handle_idx(j->upper);
	*li = handle_idx(j->lower);
	if (j->op != KVARENA_TIER_DEMOTE && j->op != KVARENA_TIER_PROMOTE)
		return -EPROTO;
	if (*ui >= a->nr_frames || *li >= lower->nr_frames)
		return -ERANGE;
	/* Nobody holds a frame being copied: not this process either. */
	if (a->frames[*ui].handle || lower->frames[*li].handle)
		return -EPROTO;
	return 0;
}

/*
 * Frame @idx of @a, with the access the job grants (read-only: the side
 * copied from), its memory learnt through FRAME_FD with handle @h.
 */
static int job_resolve(struct kva_arena *a, uint32_t idx, uint64_t h,
		       bool ro)
{
	struct kva_frame_rec *f = &a->frames[idx];
	int ret = 0;

	if (ro)
		f->flags |= FRAME_PUBLISHED;
	else
		f->flags &= ~FRAME_PUBLISHED;
	if (!(f->flags & FRAME_RESOLVED)) {
		f->handle = h;
		ret = a->vmm->resolve(a, idx);
		f->handle = 0;
	}
	return ret;
}

/* Done with a job's frames: as scrub.c, no import outlives the job. */
static void let_go(struct kva_arena *a, struct kva_arena *lower, uint32_t ui,
		   uint32_t li)
{
	if (a->vmm->forget)
		a->vmm->forget(a, ui);
	a->frames[ui].flags &= ~FRAME_PUBLISHED;
	lower->frames[li].flags &= ~FRAME_PUBLISHED;
}

/* Map frames @idx[0..n) of @a into a range of its own; 0 or -errno. */
static int map_batch(struct kva_arena *a, const uint32_t *idx, uint32_t n,
		     uint64_t *va, uint64_t *got)
{
	int ret = kva_resv_get(a, (uint64_t)n * a->frame_size, va, got);

	if (ret)
		return ret;
	ret = a->vmm->map(a, *va, idx, n);
	if (ret)
		kva_resv_put(a, *va, *got);
	return ret;
}

/*
 * Unmap a batch; a range that cannot be unmapped is not reused, and its
 * copies fail: the agent must not keep a mapping of a frame it gives back.
 */
static int unmap_batch(struct kva_arena *a, uint64_t va, uint64_t got,
		       uint32_t n)
{
	int ret = a->vmm->unmap(a, va, n);

	if (!ret)
		kva_resv_put(a, va, got);
	return ret;
}

/*
 * Make the copies of jobs @j[0..n) that can be made, writing each job's
 * result; both arenas locked.
 */
static void copy_batch(struct kva_arena *a, struct kva_arena *lower,
		       struct kvarena_tier_job *j, uint32_t n)
{
	uint32_t ui[TIER_BATCH], li[TIER_BATCH], at[TIER_BATCH], m = 0, i;
	uint64_t uva, ugot, lva, lgot;
	bool out[TIER_BATCH];
	int ret, uret;

	for (i = 0; i < n; i++) {
		bool down = j[i].op == KVARENA_TIER_DEMOTE;
		int err = job_frames(a, lower, &j[i], &ui[m], &li[m]);

		if (!err) {
			err = job_resolve(a, ui[m], j[i].upper, down);
			if (!err)
				err = job_resolve(lower, li[m], j[i].lower,
						  !down);
			if (err)
				let_go(a, lower, ui[m], li[m]);
		}
		j[i].result = err;
		if (err)
			continue;
		out[m] = down;
		at[m++] = i;
	}
	if (m) {
		ret = map_batch(a, ui, m, &uva, &ugot);
		if (!ret) {
			ret = map_batch(lower, li, m, &lva, &lgot);
			if (!ret) {
				ret = a->vmm->tier_xfer(a, uva,
							(void *)(uintptr_t)lva,
							out, m);
				uret = unmap_batch(lower, lva, lgot, m);
				ret = ret ? ret : uret;
			}
			/* tier_xfer waited: nothing reads the range now. */
			uret = unmap_batch(a, uva, ugot, m);
			ret = ret ? ret : uret;
		}
		for (i = 0; i < m; i++)
			j[at[i]].result = ret;
	}
	for (i = 0; i < m; i++)
		let_go(a, lower, ui[i], li[i]);
}

int kva_tier_agent(struct kva_arena *a, struct kva_arena *lower,
		   unsigned int max, int timeout_ms,
		   struct kva_tier_counts *counts)
{
	struct kvarena_tier_job j[TIER_BATCH];
	unsigned int done = 0;
	int n, ret = 0;

	if (!a || !lower || a == lower || !max || max > KVA_MAX_BATCH)
		return -EINVAL;
	if (a->mode != KVA_MODE_DEVICE || lower->mode != KVA_MODE_DEVICE ||
	    !a->prov->tier || !a->vmm->tier_xfer)
		return -EOPNOTSUPP;
	if (lower->vmm != &kva_host_vmm || lower->frame_size != a->frame_size)
		return -EINVAL;
	while (done < max) {
		uint32_t want = max - done < TIER_BATCH ? max - done :
			       TIER_BATCH, made = 0, down = 0, i;
		uint64_t t0;

		memset(j, 0, sizeof(j));
		/* Only the first take waits. */
		n = a->prov->tier(a, j, want, 0, done || timeout_ms < 0 ? 0 :
				  (uint32_t)timeout_ms, lower);
		if (n <= 0) {
			ret = n;
			break;
		}
		t0 = kva_mono_ns();
		kva_lock(a);
		kva_lock(lower);
		copy_batch(a, lower, j, (uint32_t)n);
		kva_unlock(lower);
		kva_unlock(a);
		if (counts)
			counts->copy_ns += kva_mono_ns() - t0;
		for (i = 0; i < (uint32_t)n; i++) {
			made += !j[i].result;
			down += !j[i].result && j[i].op == KVARENA_TIER_DEMOTE;
		}
		ret = a->prov->tier(a, j, (uint32_t)n, KVARENA_TIER_DONE, 0,
				    lower);
		if (ret < 0) {
			/* Not taken back: they end undone with our file. */
			if (counts)
				counts->failed += (uint32_t)n;
			break;
		}
		if (counts) {
			counts->demoted += down;
			counts->promoted += made - down;
			counts->failed += (uint32_t)n - made;
		}
		done += (unsigned int)n;
		if (!made) {
			/* The next take would hand the same frames. */
			ret = -EIO;
			break;
		}
		ret = 0;
		if ((uint32_t)n < want)
			break;
	}
	return ret < 0 ? ret : (int)done;
}
