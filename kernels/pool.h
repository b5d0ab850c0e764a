/* SPDX-License-Identifier: MIT */
/*
 * pool.h - a small fork-join pool: the caller and nr_threads - 1 workers
 * pull task indices from one counter until none are left.
 */
#ifndef KVA_POOL_H
#define KVA_POOL_H

struct kva_pool;

/* Runs task @idx; @worker is 0 for the caller, 1 .. nr_threads - 1 else. */
typedef void kva_pool_fn(void *arg, unsigned int idx, unsigned int worker);

/* Returns 0, -ENOMEM or the error of pthread_create(). */
int kva_pool_create(struct kva_pool **out, unsigned int nr_threads);
void kva_pool_destroy(struct kva_pool *p);
unsigned int kva_pool_threads(const struct kva_pool *p);

/*
 * Runs fn(arg, i, worker) for every i < nr_tasks and returns when all have
 * returned.  One caller at a time.
 */
void kva_pool_run(struct kva_pool *p, kva_pool_fn *fn, void *arg,
		  unsigned int nr_tasks);

#endif /* KVA_POOL_H */
