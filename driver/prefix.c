// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: the prefix cache - PUBLISH and LOOKUP of frames by key.
 *
 * The rules are the core allocator's (core.h: shared holds, charging,
 * which frame wins a key, the LRU of cached frames); this file copies the
 * chains in and out, checks the arguments, makes the hold records a
 * LOOKUP may need before it takes the arena lock, and keeps mappings in
 * step with kva_core_frame_access(): a frame is read-only to everyone
 * from its publication on, so PUBLISH zaps the publisher's PTEs of it
 * (the next touch faults a read-only one in), and a LOOKUP undone zaps
 * what it gave.
 *
 * Both commands may run under io_uring's non-blocking issue: nothing here
 * sleeps then.  The buffers are taken without sleeping, user memory is
 * touched with page faults disabled, and what would need to sleep (the
 * arena lock when busy, more hold records, zapping mappings) gives
 * -EAGAIN, which sends the command to io_uring's worker.
 */
#include <linux/build_bug.h>
#include <linux/slab.h>
#include <linux/stddef.h>
#include <linux/uaccess.h>

#include "kva.h"

/* The user's entries go to the core as they are. */
static_assert(sizeof(struct kvarena_prefix_entry) ==
	      sizeof(struct kva_core_prefix));
static_assert(offsetof(struct kvarena_prefix_entry, handle) ==
	      offsetof(struct kva_core_prefix, handle));
static_assert(offsetof(struct kvarena_prefix_entry, flags) ==
	      offsetof(struct kva_core_prefix, flags));
static_assert(KVARENA_KEY_LEN == KVA_KEY_LEN);
static_assert(KVARENA_PREFIX_EXISTED == KVA_PREFIX_EXISTED);
static_assert(KVARENA_PREFIX_HELD == KVA_PREFIX_HELD);

/* Chains up to this long go through buffers on the stack. */
#define KVA_SMALL_CHAIN	8

struct kva_chain {
	struct kvarena_prefix p;
	struct kva_core_prefix *e;
	struct kva_core_prefix small[KVA_SMALL_CHAIN];
};

static void *chain_alloc(size_t size, unsigned int how)
{
	if (how & KVA_HOW_NONBLOCK)
		return kmalloc(size, GFP_NOWAIT | __GFP_NOWARN | __GFP_ACCOUNT);
	return kvmalloc(size, GFP_KERNEL_ACCOUNT);
}

static void chain_put(struct kva_chain *ch)
{
	if (ch->e != ch->small)
		kvfree(ch->e);
}

/*
 * Copy in and check the command and its entries; @flags are the ones it
 * takes (kva_check_prefix()).  PUBLISH's token ids themselves are
 * kva_publish_tokens_get()'s.
 */
static int chain_get(struct kva_chain *ch, void __user *argp, u32 flags,
		     unsigned int how)
{
	struct kvarena_prefix *p = &ch->p;
	u32 i;
	int ret;

	ch->e = ch->small;
	ret = kva_copy_in(p, argp, sizeof(*p), how);
	if (ret)
		return ret;
	if (kva_check_prefix(p, flags))
		return -EINVAL;
	if (p->count > KVA_SMALL_CHAIN) {
		ch->e = chain_alloc(p->count * sizeof(*ch->e), how);
		if (!ch->e) {
			ret = (how & KVA_HOW_NONBLOCK) ? -EAGAIN : -ENOMEM;
			goto err_put;
		}
	}
	ret = kva_copy_in(ch->e, u64_to_user_ptr(p->entries),
			  p->count * sizeof(*ch->e), how);
	for (i = 0; !ret && i < p->count; i++)
		if (ch->e[i].reserved)
			ret = -EINVAL;
	if (ret)
		goto err_put;
	return 0;

err_put:
	chain_put(ch);
	return ret;
}

/* Write the first @n entries back, and @nr_done. */
static int chain_done(struct kva_chain *ch, void __user *argp, u32 n,
		      u32 nr_done, unsigned int how)
{
	struct kvarena_prefix __user *up = argp;
	int ret = 0;

	if (n)
		ret = kva_copy_out(u64_to_user_ptr(ch->p.entries), ch->e,
				   n * sizeof(*ch->e), how);
	if (!ret)
		ret = kva_copy_out(&up->nr_done, &nr_done, sizeof(nr_done),
				   how);
	return ret;
}

long kva_ioc_publish(struct kva_client *cl, void __user *argp,
		     unsigned int how)
{
	struct kva_arena *a = cl->arena;
	struct kva_publish_tokens tok;
	struct kva_chain ch;
	u32 i, n = 0;
	int ret;

	ret = chain_get(&ch, argp, KVARENA_PUBLISH_TOKENS, how);
	if (ret)
		return ret;
	/* Token ids for the events, copied in before any lock. */
	ret = kva_publish_tokens_get(&tok, &ch.p, how);
	if (ret)
		goto out_put;
	/*
	 * Its frames turn read-only and findable: the publisher's writable
	 * PTEs go first, before anyone can look them up.
	 */
	ret = kva_fmap_revoke_begin(cl, how & KVA_HOW_NONBLOCK);
	if (ret)
		goto out_put;
	for (i = 0; i < ch.p.count; i++)
		kva_fmap_zap(cl, KVA_HANDLE_IDX(ch.e[i].handle));
	ret = kva_client_lock(cl, how);
	if (!ret) {
		a->publishing = &tok;
		ret = kva_core_publish(&a->core, &cl->core, ch.e, ch.p.count);
		a->publishing = NULL;
		mutex_unlock(&a->lock);
	}
	for (i = 0; ret >= 0 && i < ch.p.count; i++)
		if (!(ch.e[i].flags & KVA_PREFIX_EXISTED))
			n++;
	/* Out of the fault lock before touching user memory, which may be ours. */
	kva_fmap_revoke_end(cl);
	if (ret < 0)
		goto out_put;
	/*
	 * nr_done counts the entries whose frame is now under their key, new
	 * or not, so that a PUBLISH repeated (after -EFAULT, or by io_uring
	 * after -EAGAIN) says the same; the frames stay published.
	 */
	ret = chain_done(&ch, argp, ch.p.count, n, how);
out_put:
	kva_publish_tokens_put(&tok);
	chain_put(&ch);
	return ret;
}

/*
 * Take the arena lock for client @cl with @n unused hold records in the
 * core, making more with the lock dropped if need be.  Returns 0 locked,
 * or -errno unlocked (-EAGAIN where it would have to sleep, -ESHUTDOWN
 * once @cl was evicted).
 */
static int lock_with_holds(struct kva_client *cl, u32 n, unsigned int how)
{
	struct kva_arena *a = cl->arena;
	struct kva_hold *recs;
	u32 need;
	int ret;

	ret = kva_client_lock(cl, how);
	if (ret)
		return ret;
	while ((need = kva_core_holds_need(&a->core, n))) {
		mutex_unlock(&a->lock);
		if (how & KVA_HOW_NONBLOCK)
			return -EAGAIN;
		recs = kva_core_holds_alloc(need);
		if (!recs)
			return -ENOMEM;
		mutex_lock(&a->lock);
		recs = kva_core_holds_grow(&a->core, recs, need);
		mutex_unlock(&a->lock);
		kva_core_holds_free(recs);
		/* EVICT may have come in while the lock was dropped. */
		ret = kva_client_lock(cl, 0);
		if (ret)
			return ret;
	}
	return 0;
}

/* Let go of the holds the first @n entries took (locked). */
static void lookup_undo(struct kva_arena *a, struct kva_client *cl,
			struct kva_chain *ch, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		if (ch->e[i].flags & KVA_PREFIX_HELD)
			continue;
		/* One by one: another thread of the client may free some. */
		kva_core_free(&a->core, &cl->core, &ch->e[i].handle, 1);
	}
	kva_arena_update_pressure(a);
}

long kva_ioc_lookup(struct kva_client *cl, void __user *argp,
		    unsigned int how)
{
	bool nonblock = how & KVA_HOW_NONBLOCK;
	struct kva_arena *a = cl->arena;
	struct kvarena_prefix __user *up = argp;
	struct kva_chain ch;
	u32 m, lower = 0;
	int ret, n;

	ret = chain_get(&ch, argp, KVARENA_LOOKUP_LOWER, how);
	if (ret)
		return ret;
	/* The lower tier's lock is not taken without sleeping. */
	if ((ch.p.flags & KVARENA_LOOKUP_LOWER) && nonblock) {
		ret = -EAGAIN;
		goto out_put;
	}
	ret = lock_with_holds(cl, ch.p.count, how);
	if (ret)
		goto out_put;
	n = kva_core_prefix_lookup(&a->core, &cl->core, ch.e, ch.p.count);
	if (n < 0) {
		mutex_unlock(&a->lock);
		ret = n;
		goto out_put;
	}
	if (ch.p.flags & KVARENA_LOOKUP_LOWER)
		lower = kva_tier_count_lower(cl, ch.e + n, ch.p.count - n);
	/*
	 * Non-blocking: the results go out under the lock, with page faults
	 * disabled, and a fault undoes the holds before anyone could use
	 * them (io_uring retries from a worker).  Blocking: after the lock,
	 * since a fault may land in one of our own mappings.
	 */
	ret = nonblock ? chain_done(&ch, argp, n, n, how) : 0;
	if (ret)
		lookup_undo(a, cl, &ch, n);
	kva_arena_update_pressure(a);
	mutex_unlock(&a->lock);
	if (ret || nonblock)
		goto out_put;

	ret = chain_done(&ch, argp, n, n, how);
	if (!ret && lower)
		ret = kva_copy_out(&up->nr_lower, &lower, sizeof(lower), how);
	if (ret) {
		/*
		 * The caller cannot learn the handles: let go of the holds
		 * this call took, and of any mapping a guess made of them.
		 */
		kva_fmap_revoke_begin(cl, false);
		for (m = 0; m < (u32)n; m++)
			if (!(ch.e[m].flags & KVA_PREFIX_HELD))
				kva_fmap_zap(cl, KVA_HANDLE_IDX(ch.e[m].handle));
		/* An evicted client's holds went with it. */
		if (!kva_client_lock(cl, 0)) {
			lookup_undo(a, cl, &ch, n);
			mutex_unlock(&a->lock);
		}
		kva_fmap_revoke_end(cl);
	}
out_put:
	chain_put(&ch);
	return ret;
}
