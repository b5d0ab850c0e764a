// SPDX-License-Identifier: MIT
/*
 * The arena handle: choosing device or embedded mode, the frame table,
 * frame take/put with deferred retries, the reservation cache, and the
 * handle-level calls (info, stat, raw alloc/free).  Usage is in usage.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

void kva_lock(struct kva_arena *a)
{
	pthread_mutex_lock(&a->lock);
}

void kva_unlock(struct kva_arena *a)
{
	pthread_mutex_unlock(&a->lock);
}

/* Environment is read with secure_getenv(): a set-id program ignores it. */
const char *kva_env(const char *name)
{
	const char *v = secure_getenv(name);

	return v && *v ? v : NULL;
}

const char *kva_device_path(const char *opt)
{
	const char *env = kva_env("KVA_DEVICE");

	return opt ? opt : env ? env : "/dev/kvarena";
}

const char *kva_mode_name(enum kva_mode mode)
{
	switch (mode) {
	case KVA_MODE_AUTO:	return "auto";
	case KVA_MODE_DEVICE:	return "device";
	case KVA_MODE_EMBEDDED:	return "embedded";
	}
	return "?";
}

const char *kva_backend_name(enum kva_backend backend)
{
	switch (backend) {
	case KVA_BACKEND_HOST:	return "host";
	case KVA_BACKEND_CUDA:	return "cuda";
	}
	return "?";
}

const char *kva_transport_name(enum kva_transport transport)
{
	switch (transport) {
	case KVA_TRANSPORT_AUTO:	return "auto";
	case KVA_TRANSPORT_IOCTL:	return "ioctl";
	case KVA_TRANSPORT_URING:	return "uring";
	case KVA_TRANSPORT_NONE:	return "none";
	}
	return "?";
}

/*
 * Device or embedded: an explicit option wins, then $KVA_MODE, then the
 * presence of the device node.  @reason says which, for kva_arena_info().
 */
static int choose_mode(const struct kva_open_opts *o, const char *path,
		       uint32_t *mode, const char **reason)
{
	const char *env;

	switch (o->mode) {
	case KVA_MODE_DEVICE:
		*mode = KVA_MODE_DEVICE;
		*reason = "requested by kva_open_opts.mode";
		return 0;
	case KVA_MODE_EMBEDDED:
		*mode = KVA_MODE_EMBEDDED;
		*reason = "requested by kva_open_opts.mode";
		return 0;
	case KVA_MODE_AUTO:
		break;
	default:
		return -EINVAL;
	}

	env = kva_env("KVA_MODE");
	if (env && !strcmp(env, "device")) {
		*mode = KVA_MODE_DEVICE;
		*reason = "KVA_MODE=device";
		return 0;
	}
	if (env && !strcmp(env, "embedded")) {
		*mode = KVA_MODE_EMBEDDED;
		*reason = "KVA_MODE=embedded";
		return 0;
	}
	if (env && strcmp(env, "auto"))
		return -EINVAL;

	if (access(path, F_OK) == 0) {
		*mode = KVA_MODE_DEVICE;
		*reason = "device node present";
	} else {
		*mode = KVA_MODE_EMBEDDED;
		*reason = "device node absent";
	}
	return 0;
}

/*
 * kva_open() and kva_rank_open(): a new handle, in device mode a client
 * of the module (ATTACH), or a rank of one (JOIN) when @r is given.
 */
static int open_handle(const struct kva_open_opts *o,
		       const struct kva_rank_opts *r, struct kva_arena **out)
{
	const char *path;
	struct kva_arena *a;
	int ret;

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->td_work, NULL);
	pthread_cond_init(&a->td_done, NULL);
	list_init(&a->seqs);
	list_init(&a->cow_seqs);
	a->flags = o->flags;
	if (a->flags & KVA_OPEN_HUGETLB)
		a->flags |= KVA_OPEN_PREFAULT;

	path = kva_device_path(o->device);
	ret = choose_mode(o, path, &a->mode, &a->mode_reason);
	if (ret)
		goto err_free;
	if (r)
		ret = kva_device_join(a, r, path);
	else if (a->mode == KVA_MODE_DEVICE)
		ret = kva_device_open(a, o, path);
	else
		ret = kva_embedded_open(a, o);
	if (ret)
		goto err_free;

	a->frames = calloc(a->nr_frames, sizeof(*a->frames));
	if (!a->frames) {
		ret = -ENOMEM;
		goto err_close_prov;
	}
	/* A gang's scheduler maps nothing: its ranks do. */
	a->vmm = a->gang_members ? &kva_track_vmm :
		 a->backend == KVA_BACKEND_CUDA ? &kva_cuda_vmm : &kva_host_vmm;
	ret = a->vmm->init(a, o);
	if (ret)
		goto err_free_frames;
	*out = a;
	return 0;

err_free_frames:
	free(a->frames);
err_close_prov:
	a->prov->close(a);
err_free:
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->td_work);
	pthread_cond_destroy(&a->td_done);
	free(a);
	return ret;
}

int kva_open(const struct kva_open_opts *o, struct kva_arena **out)
{
	if (!o || !out)
		return -EINVAL;
	if ((o->flags & ~KVA_OPEN_ALL) || o->reserved0 ||
	    !kva_all_zero(o->reserved, ARRAY_SIZE(o->reserved)) ||
	    o->transport > KVA_TRANSPORT_URING ||
	    o->mem_kind > KVA_BACKEND_CUDA)
		return -EINVAL;
	return open_handle(o, NULL, out);
}

int kva_rank_open(const struct kva_rank_opts *r, struct kva_arena **out)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_DEVICE,
		.flags = r ? r->flags : 0,
		.name = r ? r->name : NULL,
		.label = r ? r->label : NULL,
		.device = r ? r->device : NULL,
		.cuda_library = r ? r->cuda_library : NULL,
		.transport = KVA_TRANSPORT_IOCTL,
	};

	if (!r || !out || !r->name || (r->flags & ~KVA_OPEN_POPULATE) ||
	    r->reserved0 || !kva_all_zero(r->reserved, ARRAY_SIZE(r->reserved)))
		return -EINVAL;
	return open_handle(&o, r, out);
}

int kva_gang_token(struct kva_arena *a, uint32_t flags, uint64_t *token,
		   uint32_t *nr_members)
{
	int ret;

	if (!a || !token || (flags & ~KVA_GANG_RANKS_FATAL))
		return -EINVAL;
	if (a->rank)
		return -EPERM;
	kva_lock(a);
	ret = kva_device_gang_token(a, flags, token, nr_members);
	kva_unlock(a);
	return ret;
}

void kva_close(struct kva_arena *a)
{
	uint32_t i;

	if (!a)
		return;
	/* every stream-ordered teardown finished first */
	kva_teardown_stop(a);
	kva_lock(a);
	/*
	 * Whatever the engine still has queued may read the ranges about to
	 * be unmapped: wait for all of it, once (not the named stream, which
	 * the engine may have destroyed by now).
	 */
	if (a->vmm->quiesce)
		a->vmm->quiesce(a, true);
	/* Closing the provider returns every frame at once. */
	a->closing = true;
	while (a->seqs.next != &a->seqs)
		kva_seq_destroy_locked(container_of(a->seqs.next,
						    struct kva_seq_impl, link));
	for (i = 0; i < a->nr_resv; i++)
		a->vmm->release(a, a->resv[i].va, a->resv[i].size);
	a->nr_resv = 0;
	if (a->scratch_va)
		a->vmm->release(a, a->scratch_va, a->frame_size);
	a->vmm->fini(a);
	a->prov->close(a);
	kva_unlock(a);
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->td_work);
	pthread_cond_destroy(&a->td_done);
	free(a->deferred);
	free(a->frames);
	free(a);
}

int kva_arena_info(struct kva_arena *a, struct kva_arena_info *info)
{
	if (!a || !info)
		return -EINVAL;
	kva_lock(a);
	*info = (struct kva_arena_info){
		.mode = a->mode,
		.backend = a->backend,
		.transport = a->transport,
		.flags = a->flags,
		.mode_reason = a->mode_reason,
		.transport_reason = a->transport_reason,
		.frame_size = a->frame_size,
		.nr_frames = a->nr_frames,
		.client_id = a->client_id,
		.domain = a->domain,
		.mem_dev = a->mem_dev,
		.backend_error = a->backend_error,
	};
	memcpy(info->name, a->name, sizeof(info->name));
	memcpy(info->mem_uuid, a->mem_uuid, sizeof(info->mem_uuid));
	kva_unlock(a);
	return 0;
}

int kva_poll_fd(struct kva_arena *a)
{
	if (!a)
		return -EINVAL;
	/* The descriptor is fixed from kva_open() to kva_close(). */
	return a->prov->poll_fd ? a->prov->poll_fd(a) : -EOPNOTSUPP;
}

/* Try again to return frames the provider refused earlier. */
static void retry_deferred(struct kva_arena *a)
{
	uint32_t i;

	if (!a->nr_deferred ||
	    a->prov->free(a, a->deferred, a->nr_deferred, NULL))
		return;
	for (i = 0; i < a->nr_deferred; i++)
		a->frames[handle_idx(a->deferred[i])].handle = 0;
	a->held -= a->nr_deferred;
	a->nr_deferred = 0;
}

static int defer(struct kva_arena *a, const uint64_t *h, uint32_t n)
{
	uint64_t *d = realloc(a->deferred,
			      (a->nr_deferred + n) * sizeof(*d));

	if (!d)
		return -ENOMEM;
	memcpy(d + a->nr_deferred, h, n * sizeof(*h));
	a->deferred = d;
	a->nr_deferred += n;
	return 0;
}

/* @n frames the provider gave this handle, marked @flags. */
void kva_frames_record(struct kva_arena *a, const uint64_t *h, uint32_t n,
		       uint32_t flags)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct kva_frame_rec *f = &a->frames[handle_idx(h[i])];

		f->handle = h[i];
		f->refs = 0;
		f->flags = (f->flags & FRAME_RESOLVED) | flags;
	}
	a->held += n;
}

static bool handles_in_range(struct kva_arena *a, const uint64_t *h,
			     uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (handle_idx(h[i]) >= a->nr_frames)
			return false;
	return true;
}

/*
 * Take @n frames for sequences, all or nothing, in as few provider calls as
 * the batch limit allows (one for any batch up to 65536 frames).  @usage,
 * if not NULL, is what to report once they are taken.  Lock held.
 */
int kva_frames_take(struct kva_arena *a, uint64_t *h, uint32_t n,
		    const struct kva_usage_report *usage)
{
	uint32_t done = 0;
	int ret;

	retry_deferred(a);
	while (done < n) {
		uint32_t chunk = n - done > KVA_MAX_BATCH ? KVA_MAX_BATCH :
			n - done;
		bool last = done + chunk == n;

		/*
		 * The report rides with the last chunk; the provider marks it
		 * invalid if the module refuses it, so that the next
		 * kva_usage_report() sends it again.
		 */
		if (last && usage) {
			a->reported = *usage;
			a->reported_valid = true;
		}
		ret = a->prov->alloc(a, h + done, chunk, false,
				     last ? usage : NULL);
		if (ret >= 0 && !handles_in_range(a, h + done, chunk)) {
			/* A module that hands out frames it does not have. */
			a->prov->free(a, h + done, chunk, NULL);
			ret = -EPROTO;
		}
		if (ret < 0) {
			if (last && usage)
				a->reported_valid = false;
			goto err_put;
		}
		kva_frames_record(a, h + done, chunk, 0);
		done += chunk;
	}
	return 0;

err_put:
	if (done)
		kva_frames_put(a, h, done);
	return ret;
}

/*
 * Return @n frames that no sequence uses any more, reporting the usage
 * that results in the same submission.  Frames the provider refuses stay
 * held and are retried later.  Lock held.
 */
int kva_frames_put(struct kva_arena *a, const uint64_t *h, uint32_t n)
{
	struct kva_usage_report u;
	uint32_t i, done = 0;
	int ret = 0;

	/* A rank holds nothing: its frames are its client's to return. */
	if (a->rank) {
		for (i = 0; i < n; i++) {
			struct kva_frame_rec *f = &a->frames[handle_idx(h[i])];

			f->handle = 0;
			f->flags &= FRAME_RESOLVED;
		}
		return 0;
	}
	if (!n || a->closing)
		return 0;
	retry_deferred(a);
	kva_usage_compute(a, &u, true);
	/* Every chunk carries the report; a refusal marks it invalid. */
	a->reported = u;
	a->reported_valid = true;
	while (done < n) {
		uint32_t chunk = n - done > KVA_MAX_BATCH ? KVA_MAX_BATCH :
			n - done;

		ret = a->prov->free(a, h + done, chunk, &u);
		if (ret) {
			/*
			 * Still held: kept for a retry.  Should even the list
			 * not grow, kva_close() returns them with the rest.
			 */
			defer(a, h + done, chunk);
			done += chunk;
			continue;
		}
		for (i = 0; i < chunk; i++) {
			struct kva_frame_rec *f =
				&a->frames[handle_idx(h[done + i])];

			f->handle = 0;
			f->flags &= FRAME_RESOLVED;
		}
		a->held -= chunk;
		done += chunk;
	}
	return ret;
}

int kva_stat(struct kva_arena *a, struct kva_stat *st)
{
	struct kva_usage_report u;
	struct list_node *n;
	int ret;

	if (!a || !st)
		return -EINVAL;
	*st = (struct kva_stat){ 0 };
	kva_lock(a);
	ret = a->prov->stat(a, st);
	if (ret)
		goto out;
	st->held = a->held;
	st->nr_seqs = a->nr_seqs;
	for (n = a->seqs.next; n != &a->seqs; n = n->next)
		st->seq_tokens += __atomic_load_n(
			&container_of(n, struct kva_seq_impl, link)->pub.tokens,
			__ATOMIC_RELAXED);
	kva_usage_refresh(a);
	kva_usage_compute(a, &u, true);
	st->my_filled_tokens = u.tokens;
	st->my_filled_bytes = u.bytes;
out:
	kva_unlock(a);
	return ret;
}

int kva_alloc(struct kva_arena *a, uint64_t *handles, unsigned int count,
	      unsigned int flags)
{
	int ret;

	if (!a || !handles || !count || count > KVA_MAX_BATCH ||
	    (flags & ~KVA_ALLOC_PARTIAL))
		return -EINVAL;
	kva_lock(a);
	retry_deferred(a);
	ret = a->prov->alloc(a, handles, count, flags & KVA_ALLOC_PARTIAL,
			     NULL);
	if (ret > 0 && !handles_in_range(a, handles, ret)) {
		a->prov->free(a, handles, ret, NULL);
		ret = -EPROTO;
	}
	if (ret > 0)
		kva_frames_record(a, handles, ret, FRAME_RAW);
	kva_unlock(a);
	return ret;
}

int kva_free(struct kva_arena *a, const uint64_t *handles, unsigned int count)
{
	unsigned int i;
	int ret = 0;

	if (!a || !handles || !count || count > KVA_MAX_BATCH)
		return -EINVAL;
	kva_lock(a);
	/*
	 * Frames of sequences (and ones awaiting a retry) are not the
	 * caller's to free; anything else the provider judges.
	 */
	for (i = 0; i < count; i++) {
		uint32_t idx = handle_idx(handles[i]);

		if (idx < a->nr_frames && a->frames[idx].handle == handles[i] &&
		    !(a->frames[idx].flags & FRAME_RAW)) {
			ret = -EBUSY;
			goto out;
		}
	}
	ret = a->prov->free(a, handles, count, NULL);
	if (ret)
		goto out;
	for (i = 0; i < count; i++) {
		struct kva_frame_rec *f =
			&a->frames[handle_idx(handles[i])];

		f->handle = 0;
		f->flags &= FRAME_RESOLVED;
	}
	a->held -= count;
out:
	kva_unlock(a);
	return ret;
}

/*
 * Reservation cache: a freed sequence's range is kept (up to
 * KVA_RESV_CACHE of them) and handed to the next sequence it is big
 * enough for, the smallest such first.  Lock held.
 */
int kva_resv_get(struct kva_arena *a, uint64_t size, uint64_t *va,
		 uint64_t *got)
{
	uint32_t i, best = UINT32_MAX;
	int ret;

	for (i = 0; i < a->nr_resv; i++)
		if (a->resv[i].size >= size &&
		    (best == UINT32_MAX || a->resv[i].size < a->resv[best].size))
			best = i;
	if (best != UINT32_MAX) {
		*va = a->resv[best].va;
		*got = a->resv[best].size;
		a->resv[best] = a->resv[--a->nr_resv];
		return 0;
	}
	ret = a->vmm->reserve(a, size, va);
	if (ret)
		return ret;
	*got = size;
	return 0;
}

void kva_resv_put(struct kva_arena *a, uint64_t va, uint64_t size)
{
	if (a->nr_resv < KVA_RESV_CACHE && !a->closing) {
		a->resv[a->nr_resv++] = (struct kva_resv){ va, size };
		return;
	}
	a->vmm->release(a, va, size);
}

/* The one-frame range copy-on-write copies go through.  Lock held. */
int kva_scratch(struct kva_arena *a, uint64_t *va)
{
	int ret;

	if (!a->scratch_va) {
		ret = a->vmm->reserve(a, a->frame_size, &a->scratch_va);
		if (ret)
			return ret;
	}
	*va = a->scratch_va;
	return 0;
}
