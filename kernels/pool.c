// SPDX-License-Identifier: MIT
/*
 * pool.c - the fork-join pool behind struct kva_attn.
 *
 * A run publishes (fn, arg, nr_tasks) under the lock and bumps the
 * generation; every thread, the caller included, then claims indices from
 * an atomic counter.  A worker joins a run under the lock (busy++) and
 * leaves it under the lock (busy--) once the counter is spent, so when the
 * caller has found the counter spent and busy at zero every task has
 * returned.  A worker that wakes late may join a run whose counter is
 * already spent; it claims nothing, and the next run waits for it to
 * leave before it resets the counter.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "pool.h"

struct kva_pool {
	pthread_mutex_t lock;
	pthread_cond_t work_cv;		/* generation moved, or stop */
	pthread_cond_t idle_cv;		/* busy fell to 0 */
	/* protected by lock */
	unsigned long gen;
	unsigned int busy;
	bool stop;
	kva_pool_fn *fn;
	void *arg;
	unsigned int nr_tasks;
	/* claimed without the lock while a run is on */
	atomic_uint next;

	unsigned int nr_threads;
	unsigned int nr_started;
	pthread_t *threads;
};

struct worker_arg {
	struct kva_pool *pool;
	unsigned int id;
};

static void claim_tasks(struct kva_pool *p, kva_pool_fn *fn, void *arg,
			unsigned int nr_tasks, unsigned int worker)
{
	unsigned int i;

	while ((i = atomic_fetch_add_explicit(&p->next, 1,
					      memory_order_relaxed)) < nr_tasks)
		fn(arg, i, worker);
}

static void *worker_main(void *data)
{
	struct worker_arg *wa = data;
	struct kva_pool *p = wa->pool;
	unsigned int id = wa->id;
	unsigned long seen = 0;

	free(wa);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		kva_pool_fn *fn;
		void *arg;
		unsigned int n;

		while (p->gen == seen && !p->stop)
			pthread_cond_wait(&p->work_cv, &p->lock);
		if (p->stop)
			break;
		seen = p->gen;
		fn = p->fn;
		arg = p->arg;
		n = p->nr_tasks;
		p->busy++;
		pthread_mutex_unlock(&p->lock);

		claim_tasks(p, fn, arg, n, id);

		pthread_mutex_lock(&p->lock);
		if (--p->busy == 0)
			pthread_cond_signal(&p->idle_cv);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int kva_pool_create(struct kva_pool **out, unsigned int nr_threads)
{
	struct kva_pool *p;
	unsigned int i;
	int err;

	if (!nr_threads)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->nr_threads = nr_threads;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work_cv, NULL);
	pthread_cond_init(&p->idle_cv, NULL);
	atomic_init(&p->next, 0);
	if (nr_threads > 1) {
		p->threads = calloc(nr_threads - 1, sizeof(*p->threads));
		if (!p->threads) {
			kva_pool_destroy(p);
			return -ENOMEM;
		}
	}
	for (i = 1; i < nr_threads; i++) {
		struct worker_arg *wa = malloc(sizeof(*wa));

		if (!wa) {
			kva_pool_destroy(p);
			return -ENOMEM;
		}
		wa->pool = p;
		wa->id = i;
		err = pthread_create(&p->threads[i - 1], NULL, worker_main, wa);
		if (err) {
			free(wa);
			kva_pool_destroy(p);
			return -err;
		}
		p->nr_started++;
	}
	*out = p;
	return 0;
}

void kva_pool_destroy(struct kva_pool *p)
{
	unsigned int i;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work_cv);
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < p->nr_started; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->idle_cv);
	pthread_cond_destroy(&p->work_cv);
	pthread_mutex_destroy(&p->lock);
	free(p->threads);
	free(p);
}

unsigned int kva_pool_threads(const struct kva_pool *p)
{
	return p->nr_threads;
}

void kva_pool_run(struct kva_pool *p, kva_pool_fn *fn, void *arg,
		  unsigned int nr_tasks)
{
	if (p->nr_threads == 1 || nr_tasks <= 1) {
		for (unsigned int i = 0; i < nr_tasks; i++)
			fn(arg, i, 0);
		return;
	}
	pthread_mutex_lock(&p->lock);
	/* A worker that woke late for the last run may still be on its way
	 * out of it: the counter must not restart under it. */
	while (p->busy)
		pthread_cond_wait(&p->idle_cv, &p->lock);
	p->fn = fn;
	p->arg = arg;
	p->nr_tasks = nr_tasks;
	atomic_store_explicit(&p->next, 0, memory_order_relaxed);
	p->gen++;
	pthread_cond_broadcast(&p->work_cv);
	pthread_mutex_unlock(&p->lock);

	claim_tasks(p, fn, arg, nr_tasks, 0);

	pthread_mutex_lock(&p->lock);
	while (p->busy)
		pthread_cond_wait(&p->idle_cv, &p->lock);
	pthread_mutex_unlock(&p->lock);
}
