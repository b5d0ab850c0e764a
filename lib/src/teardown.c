// SPDX-License-Identifier: MIT
/*
 * Stream-ordered teardown: kva_seq_free() without waiting on the driver.
 *
 * cuMemUnmap() does not wait for the device: unmapping memory that a
 * kernel queued earlier still reads makes that kernel fault (or read
 * whatever is mapped there next), and a frame must not go back to the
 * arena, where another sequence or process may write it, while such a
 * kernel may still read it.  So every unmap waits for the device first.
 * Without a stream named that is kva_quiesce() on the calling thread:
 * cuCtxSynchronize(), everything in the context.  Once the engine names
 * its stream (kva_arena_set_stream()), kva_seq_free() records an event
 * on that stream and hands the range and the frames to a worker thread;
 * the worker waits for the event, unmaps, and only then gives the range
 * to the reservation cache and the frames to the provider.  The engine's
 * thread makes two driver calls (cuEventCreate, cuEventRecord), neither
 * of which waits.
 *
 * The same queue serves a kva_seq_shrink() (seq.c), which hands over the
 * dropped tail of a sequence's range (its frames, not the range, which
 * stays the sequence's: va_size 0).  One worker takes them in order, so
 * a frame two of them map is returned only after the later one's unmap.
 * Copy-on-write cannot be deferred: the slot the engine reads must map
 * the copy when the grow returns, so it waits on the calling thread for
 * the engine's stream (seq.c, swap_slot()).
 *
 * Until the worker is through, the frames are still held: an allocation
 * that finds the arena full waits for pending teardowns before it fails
 * (kva_frames_take()), and kva_arena_sync() waits for all of them.
 *
 * Locking: the queue and its counters are under a->lock; the worker
 * waits for events and unmaps without it.
 */
#include <stdlib.h>

#include "internal.h"

struct kva_teardown {
	struct kva_teardown *next;
	void *fence;
	uint64_t va, va_size;	/* va_size 0: the range is not ours */
	uint32_t nr_mapped;	/* frames mapped at va */
	uint32_t nr;		/* frames to return: h[0, nr) */
	uint64_t h[];
};

/* Lock held.  Waits until no teardown is queued or running. */
void kva_teardown_wait_locked(struct kva_arena *a)
{
	while (a->td_pending)
		pthread_cond_wait(&a->td_done, &a->lock);
}

static void finish(struct kva_arena *a, struct kva_teardown *t, int unmapped)
{
	uint32_t i;

	kva_lock(a);
	if (unmapped) {
		/* still mapped: keep the frames, give up the range */
		for (i = 0; i < t->nr; i++)
			a->frames[handle_idx(t->h[i])].flags |= FRAME_STUCK;
		if (t->va_size)
			a->vmm->release(a, t->va, t->va_size);
	} else {
		if (t->va_size)
			kva_resv_put(a, t->va, t->va_size);
		kva_frames_put(a, t->h, t->nr);
	}
	a->td_pending--;
	pthread_cond_broadcast(&a->td_done);
	kva_unlock(a);
	free(t);
}

static void *worker(void *arg)
{
	struct kva_arena *a = arg;
	struct kva_teardown *t;
	int ret;

	kva_lock(a);
	for (;;) {
		while (!a->td_head && !a->td_stop)
			pthread_cond_wait(&a->td_work, &a->lock);
		t = a->td_head;
		if (!t)
			break;		/* stopping, and nothing left */
		a->td_head = t->next;
		if (!a->td_head)
			a->td_tail = NULL;
		kva_unlock(a);
		/*
		 * Once the stream has passed the free nothing reads them.  A
		 * failed wait means a broken context: unmap all the same.
		 */
		a->vmm->fence_wait(a, t->fence);
		ret = t->nr_mapped ? a->vmm->unmap(a, t->va, t->nr_mapped) : 0;
		finish(a, t, ret);
		kva_lock(a);
	}
	kva_unlock(a);
	return NULL;
}

int kva_arena_set_stream(struct kva_arena *a, void *stream)
{
	int ret = 0;

	if (!a)
		return -EINVAL;
	if (!a->vmm->fence)
		return -EOPNOTSUPP;
	kva_lock(a);
	if (!a->td_live) {
		ret = -pthread_create(&a->td_thread, NULL, worker, a);
		a->td_live = !ret;
	}
	if (!ret) {
		a->td_stream = stream;
		a->td_on = true;
	}
	kva_unlock(a);
	return ret;
}

int kva_arena_sync(struct kva_arena *a)
{
	if (!a)
		return -EINVAL;
	kva_lock(a);
	kva_teardown_wait_locked(a);
	kva_unlock(a);
	return 0;
}

/*
 * Lock held.  A teardown of @nr_mapped frames mapped at @va (a range of
 * @va_size bytes to give back, or 0) with room for @room frames to
 * return: to fill and queue (kva_teardown_queue()), or NULL when teardown
 * is not stream-ordered (or the event could not be recorded: the caller
 * then tears down at once, as without a stream).
 */
struct kva_teardown *kva_teardown_new(struct kva_arena *a, uint64_t va,
				      uint64_t va_size, uint32_t nr_mapped,
				      uint32_t room)
{
	struct kva_teardown *t;

	if (!a->td_on || a->closing)
		return NULL;
	t = calloc(1, sizeof(*t) + room * sizeof(t->h[0]));
	if (!t)
		return NULL;
	if (a->vmm->fence(a, a->td_stream, &t->fence)) {
		free(t);
		return NULL;
	}
	t->va = va;
	t->va_size = va_size;
	t->nr_mapped = nr_mapped;
	return t;
}

/* Room for the handles of the frames to return: @room of them. */
uint64_t *kva_teardown_handles(struct kva_teardown *t)
{
	return t->h;
}

/* Lock held.  Queue @t, with its first @nr handles to return. */
void kva_teardown_queue(struct kva_arena *a, struct kva_teardown *t,
			uint32_t nr)
{
	t->nr = nr;
	if (a->td_tail)
		a->td_tail->next = t;
	else
		a->td_head = t;
	a->td_tail = t;
	a->td_pending++;
	pthread_cond_signal(&a->td_work);
}

/*
 * Lock held.  Wait until the device is done with what may read this
 * process's mappings (struct kva_vmm.quiesce), before an unmap that
 * cannot be left to the worker.  kva_close() waited for everything
 * already.  A failed wait means a broken context, whose kernels no
 * longer run: the caller unmaps all the same.
 */
int kva_quiesce(struct kva_arena *a)
{
	if (!a->vmm->quiesce || a->closing)
		return 0;
	return a->vmm->quiesce(a, false);
}

/* kva_close(), before anything else: finish every teardown, stop. */
void kva_teardown_stop(struct kva_arena *a)
{
	if (!a->td_live)
		return;
	kva_lock(a);
	a->td_stop = true;
	pthread_cond_signal(&a->td_work);
	kva_unlock(a);
	pthread_join(a->td_thread, NULL);
	a->td_live = false;
}
