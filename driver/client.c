// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: clients - attach, frames, usage, the CLIENTS table, limits,
 * and release, which returns everything a client held.
 */
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "kva.h"

/* Handles up to this many go through a buffer on the stack. */
#define KVA_SMALL_BATCH	16

struct kva_client *kva_client_new(void)
{
	struct kva_client *cl = kzalloc(sizeof(*cl), GFP_KERNEL_ACCOUNT);

	if (cl) {
		INIT_LIST_HEAD(&cl->node);
		INIT_LIST_HEAD(&cl->ranks);
		INIT_LIST_HEAD(&cl->rank_node);
		init_waitqueue_head(&cl->attach_wq);
	}
	return cl;
}

/*
 * Take @cl out of @a: its frames and guarantee back to the arena, its
 * usage out of the sums, its frames file unable to map anything.
 */
static void kva_client_detach(struct kva_arena *a, struct kva_client *cl)
{
	lockdep_assert_held(&a->lock);
	kva_core_detach(&a->core, &cl->core);
	kva_fmap_detach(cl);
	kva_gang_leader_gone(a, cl);
	kva_scrub_detach(a, cl);
	list_del(&cl->node);
	idr_remove(&a->client_ids, cl->id);
	a->nr_clients--;
	a->filled_bytes -= cl->filled_bytes;
	a->filled_tokens -= cl->filled_tokens;
	cl->filled_bytes = 0;
	cl->filled_tokens = 0;
	kva_arena_update_pressure(a);
	kva_clear_kick(a);
}

/**
 * kva_client_lock() - take the arena lock for a command of attached
 * client @cl, as kva_lock_arena() does.
 * @cl:		the client.
 * @how:	KVA_HOW_*.
 *
 * Return: 0 with the lock held, or -EAGAIN, or -ESHUTDOWN (lock not held)
 * if an administrator evicted the client.
 */
int kva_client_lock(struct kva_client *cl, unsigned int how)
{
	int ret = kva_lock_arena(cl->arena, how);

	if (!ret && cl->evicted) {
		mutex_unlock(&cl->arena->lock);
		ret = -ESHUTDOWN;
	}
	return ret;
}

/*
 * The file is going away (close of its last reference, or its process
 * died, SIGKILL included): free every frame the client held, zap every
 * mapping of them, take its usage out of the arena's sums, and drop its
 * arena reference.
 */
void kva_client_release(struct kva_client *cl)
{
	struct kva_arena *a = cl->arena;

	if (a && cl->is_rank) {
		kva_rank_release(cl);
	} else if (a) {
		/* An agent's copies end before its frames go. */
		kva_tier_agent_gone(cl);
		kva_fmap_revoke_begin(cl, false);
		kva_fmap_zap(cl, KVA_FMAP_ALL);
		mutex_lock(&a->lock);
		/* An evicted client left the arena already. */
		if (!cl->evicted) {
			kva_tier_client_gone(cl);
			kva_client_detach(a, cl);
		}
		mutex_unlock(&a->lock);
		kva_fmap_revoke_end(cl);
		kva_fmap_put_all(cl);
		kva_arena_put(a);
	}
	put_pid(cl->pid);
	kfree(cl);
}

/*
 * What a client without CAP_SYS_ADMIN over ioctl() may ask for at ATTACH:
 * a minimum within what the arena's policy leaves to its uid (the sum over
 * the uid's clients, so that opening more files gains nothing), a maximum
 * within the policy's limit; 0 asks for the policy's default.
 */
static int kva_attach_policy(struct kva_arena *a, struct kvarena_attach *at)
{
	const struct kva_policy *p = &a->policy;
	kuid_t uid = current_euid();
	struct kva_client *other;
	u64 mins = at->min_frames;

	lockdep_assert_held(&a->lock);
	list_for_each_entry(other, &a->clients, node)
		if (uid_eq(other->uid, uid))
			mins += other->core.min;
	if (mins > p->client_min_limit)
		return -EPERM;
	if (p->client_max_limit && at->max_frames > p->client_max_limit)
		return -EPERM;
	if (!at->max_frames)
		at->max_frames = p->client_max_default ?: p->client_max_limit;
	return 0;
}

long kva_ioc_attach(struct kva_client *cl, void __user *argp,
		    unsigned int how)
{
	struct kva_core_domain *dom = NULL;
	struct kva_domain *spare;
	struct kvarena_attach at;
	struct kva_arena *a;
	int ret = 0, id;

	if (copy_from_user(&at, argp, sizeof(at)))
		return -EFAULT;
	if (kva_check_attach(&at))
		return -EINVAL;
	/* The client's domain may be new: its object is made before locking. */
	spare = kva_domain_alloc();
	if (!spare)
		return -ENOMEM;

	/*
	 * Under kva_arenas_lock: two threads attaching one file cannot both
	 * succeed, and ARENA_DESTROY cannot slip in between.
	 */
	mutex_lock(&kva_arenas_lock);
	if (cl->arena) {
		ret = -EBUSY;
		goto out_unlock;
	}
	a = kva_arena_get_locked(at.name);
	if (!a) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (!kva_arena_permits(a, KVARENA_ACC_ATTACH, how)) {
		ret = -EACCES;
		goto err_put_arena;
	}
	/* A member of a gang serves the gang's clients only. */
	if (a->gang) {
		ret = -EBUSY;
		goto err_put_arena;
	}
	/* The frames file first: it must exist before the client is seen. */
	if (a->pages)
		ret = kva_fmap_create(cl, a);
	else if (a->members && kva_member_pages(a, 0))
		ret = kva_fmap_create_gang(cl, a);
	if (ret)
		goto err_put_arena;
	if (a->members)
		cl->token = get_random_u64() ?: 1;
	mutex_lock(&a->lock);
	/* Every frame a client can get has memory behind it. */
	if (a->nr_unready) {
		ret = -ENODATA;
		goto err_unlock_arena;
	}
	if (!kva_admin(how)) {
		ret = kva_attach_policy(a, &at);
		if (ret)
			goto err_unlock_arena;
	}
	/* A client may narrow itself; only the owner may name a domain. */
	if (at.flags & KVARENA_ATTACH_DOMAIN) {
		ret = -EPERM;
		if (!kva_arena_owner(a, how))
			goto err_unlock_arena;
	} else if (at.flags & KVARENA_ATTACH_PRIVATE) {
		at.domain = KVARENA_DOMAIN(KVARENA_DOMAIN_KIND_PRIVATE,
					   ++a->next_private);
	} else {
		at.domain = kva_domain_by_rule(a);
	}
	dom = kva_domain_get(a, at.domain, &spare);
	/* Ids go up and wrap only after 2^31, skipping live ones. */
	id = idr_alloc_cyclic(&a->client_ids, cl, 1, 0, GFP_KERNEL_ACCOUNT);
	if (id < 0) {
		ret = id;
		goto err_unlock_arena;
	}
	ret = kva_core_attach_domain(&a->core, &cl->core, at.min_frames,
				     at.max_frames, dom);
	if (ret) {
		idr_remove(&a->client_ids, id);
		goto err_unlock_arena;
	}
	cl->id = id;
	cl->pid = get_pid(task_tgid(current));
	cl->uid = current_euid();
	strscpy(cl->label, at.label, sizeof(cl->label));
	list_add_tail(&cl->node, &a->clients);
	a->nr_clients++;
	kva_arena_update_pressure(a);
	/* Its first non-blocking ALLOC should not have to make its pool. */
	if (!(how & KVA_HOW_NONBLOCK))
		kva_dmem_attach(a);
	at.client_id = cl->id;
	at.max_frames = cl->core.max;
	mutex_unlock(&a->lock);
	/* Publish the attached client; pairs with smp_load_acquire() readers. */
	smp_store_release(&cl->arena, a);
	wake_up_interruptible_all(&cl->attach_wq);

	at.nr_frames = a->core.nr_frames - a->core.nr_absent;
	at.mem_kind = a->mem_kind;
	at.frame_size = a->frame_size;
	at.bytes_per_token = a->bytes_per_token;
	mutex_unlock(&kva_arenas_lock);
	kva_domain_free(spare);
	/*
	 * The file stays attached even if the result cannot be written back:
	 * CLIENTS shows it, and its release cleans it up as always.
	 */
	return copy_to_user(argp, &at, sizeof(at)) ? -EFAULT : 0;

err_unlock_arena:
	kva_domain_put_unused(a, dom);
	mutex_unlock(&a->lock);
	kva_fmap_put_all(cl);
	cl->token = 0;
err_put_arena:
	kva_arena_put(a);
out_unlock:
	mutex_unlock(&kva_arenas_lock);
	kva_domain_free(spare);
	return ret;
}

/*
 * A buffer for @count handles: @small for a few, else from the allocator
 * (without sleeping under io_uring's non-blocking issue: NULL then, and
 * the caller says -EAGAIN so that io_uring retries from a worker).
 */
static u64 *handles_buf(u64 *small, u32 count, unsigned int how)
{
	gfp_t gfp = (how & KVA_HOW_NONBLOCK) ?
		    GFP_NOWAIT | __GFP_NOWARN | __GFP_ACCOUNT :
		    GFP_KERNEL_ACCOUNT;

	if (count <= KVA_SMALL_BATCH)
		return small;
	if (how & KVA_HOW_NONBLOCK)
		return kmalloc_array(count, sizeof(u64), gfp);
	return kvmalloc_array(count, sizeof(u64), gfp);
}

static void handles_buf_free(u64 *small, u64 *buf)
{
	if (buf != small)
		kvfree(buf);
}

static int nomem(unsigned int how)
{
	return (how & KVA_HOW_NONBLOCK) ? -EAGAIN : -ENOMEM;
}

/* Write ALLOC's results: handles, then nr_done. */
static int alloc_copy_out(struct kvarena_frames __user *uf,
			  const struct kvarena_frames *f, const u64 *buf,
			  u32 n, unsigned int how)
{
	u32 done = n;
	int ret;

	ret = kva_copy_out(u64_to_user_ptr(f->handles), buf, n * sizeof(u64),
			   how);
	if (!ret)
		ret = kva_copy_out(&uf->nr_done, &done, sizeof(done), how);
	return ret;
}

long kva_ioc_alloc(struct kva_client *cl, void __user *argp,
		   unsigned int how)
{
	struct kvarena_frames __user *uf = argp;
	struct kva_arena *a = cl->arena;
	bool nonblock = how & KVA_HOW_NONBLOCK;
	u64 small[KVA_SMALL_BATCH], *buf;
	struct kvarena_frames f;
	int n, ret;

	ret = kva_copy_in(&f, argp, sizeof(f), how);
	if (ret)
		return ret;
	ret = kva_check_frames(&f, KVARENA_ALLOC_PARTIAL);
	if (ret)
		return ret;
	buf = handles_buf(small, f.count, how);
	if (!buf)
		return nomem(how);
	ret = kva_client_lock(cl, how);
	if (ret)
		goto out_free;
	for (;;) {
		n = kva_dmem_alloc(a, &cl->core, buf, f.count,
				   f.flags & KVARENA_ALLOC_PARTIAL, how);
		if (n != -EAGAIN)
			break;
		if (a->scrub) {
			/*
			 * A CUDA arena: only a scrubber clears.  A partial
			 * ALLOC takes what may be had as it is; else wait.
			 */
			u32 ok = kva_core_usable(&a->core, &cl->core);

			if ((f.flags & KVARENA_ALLOC_PARTIAL) && ok)
				n = kva_dmem_alloc(a, &cl->core, buf, ok,
						   true, how);
			if (n == -EAGAIN)
				n = kva_scrub_short(cl, f.count);
			break;
		}
		/*
		 * Enough frames are free, but some hold another domain's
		 * data: clear them first, or have io_uring's worker do it.
		 */
		ret = nonblock ? -EAGAIN : kva_clear_for(cl);
		/* EVICT may have come in while the lock was dropped. */
		if (!ret && cl->evicted)
			ret = -ESHUTDOWN;
		if (ret) {
			mutex_unlock(&a->lock);
			goto out_free;
		}
	}
	if (n == -EDQUOT) {
		/*
		 * The cgroup's dmem.max, not the arena: counted as a refused
		 * ALLOC, and no EPOLLOUT promised (frames coming free in the
		 * arena would not make room under the limit).
		 */
		a->core.alloc_calls++;
		a->core.alloc_failures++;
		cl->core.alloc_calls++;
		cl->core.alloc_failures++;
		cl->dmem_refused++;
		n = -ENOSPC;
		WRITE_ONCE(cl->want, 0);
	} else {
		/* What EPOLLOUT waits for; read without the lock by kva_poll(). */
		WRITE_ONCE(cl->want, n != -ENOSPC ? 0 :
			   f.flags & KVARENA_ALLOC_PARTIAL ? 1 : f.count);
	}
	if (n < 0) {
		mutex_unlock(&a->lock);
		ret = n;
		goto out_free;
	}
	/*
	 * Non-blocking: the results go out under the lock, with page faults
	 * disabled, and a fault undoes the allocation (io_uring retries it
	 * from a worker).  Blocking: after the lock, since a fault may land
	 * in one of our own mappings and need arena->lock itself.
	 */
	ret = nonblock ? alloc_copy_out(uf, &f, buf, n, how) : 0;
	if (ret)
		kva_core_free(&a->core, &cl->core, buf, n);
	kva_arena_update_pressure(a);
	kva_clear_kick(a);
	mutex_unlock(&a->lock);
	if (ret || nonblock)
		goto out_free;

	ret = alloc_copy_out(uf, &f, buf, n, how);
	if (ret) {
		/*
		 * The caller cannot learn the handles: take them back, one by
		 * one, since another thread of the client may have guessed and
		 * freed some meanwhile.  Any left over go at release.  The
		 * copy-out may itself have faulted them into an old mapping
		 * of the client's (the handles written into a frame it freed
		 * before): zap that first.
		 */
		int i;

		kva_fmap_revoke_begin(cl, false);
		for (i = 0; i < n; i++)
			kva_fmap_zap(cl, KVA_HANDLE_IDX(buf[i]));
		if (!kva_client_lock(cl, 0)) {
			for (i = 0; i < n; i++)
				kva_core_free(&a->core, &cl->core, &buf[i], 1);
			kva_arena_update_pressure(a);
			mutex_unlock(&a->lock);
		}
		kva_fmap_revoke_end(cl);
	}
out_free:
	handles_buf_free(small, buf);
	return ret;
}

long kva_ioc_free(struct kva_client *cl, void __user *argp,
		  unsigned int how)
{
	struct kvarena_frames __user *uf = argp;
	struct kva_arena *a = cl->arena;
	bool nonblock = how & KVA_HOW_NONBLOCK;
	u64 small[KVA_SMALL_BATCH], *buf;
	struct kvarena_frames f;
	int ret;
	u32 i;

	ret = kva_copy_in(&f, argp, sizeof(f), how);
	if (ret)
		return ret;
	ret = kva_check_frames(&f, 0);
	if (ret)
		return ret;
	buf = handles_buf(small, f.count, how);
	if (!buf)
		return nomem(how);
	ret = kva_copy_in(buf, u64_to_user_ptr(f.handles),
			  f.count * sizeof(u64), how);
	if (ret)
		goto out_free;

	/* The client's PTEs go before the core can hand the frames on. */
	ret = kva_fmap_revoke_begin(cl, nonblock);
	if (ret)
		goto out_free;
	for (i = 0; i < f.count; i++)
		kva_fmap_zap(cl, KVA_HANDLE_IDX(buf[i]));
	ret = kva_client_lock(cl, how);
	if (!ret) {
		ret = kva_core_free(&a->core, &cl->core, buf, f.count);
		if (!ret) {
			kva_arena_update_pressure(a);
			kva_clear_kick(a);
		}
		mutex_unlock(&a->lock);
	}
	kva_fmap_revoke_end(cl);
	if (ret)
		goto out_free;
	/*
	 * Success is the return value; nr_done only repeats it, and a FREE
	 * that freed never reports an error.
	 */
	kva_copy_out(&uf->nr_done, &f.count, sizeof(f.count), how);
out_free:
	handles_buf_free(small, buf);
	return ret;
}

/*
 * Host arenas: the client's own frames file (frames.c), which maps the
 * frames it holds and nothing else, at offset index * frame_size.  CUDA
 * arenas: the backing file itself, the exported allocation, which only the
 * GPU driver can map and the module cannot revoke - so the frame stays in
 * the caller's domain until its process has exited (scrub.c).  A scrubber
 * gets the frames it is clearing, writable.
 */
long kva_ioc_frame_fd(struct kva_client *cl, void __user *argp,
		      unsigned int how)
{
	struct kva_arena *a = cl->arena;
	struct kvarena_frame_fd ff;
	enum kva_access acc;
	struct file *file = NULL;
	bool scrubbing = false, granted = false;
	int ret, fd;

	if (copy_from_user(&ff, argp, sizeof(ff)))
		return -EFAULT;
	if (kva_check_frame_fd(&ff))
		return -EINVAL;
	/* A gang's frames are mapped by its ranks, each in its member. */
	if (cl->is_rank) {
		ret = kva_rank_frame_fd(cl, &ff, how, &file, &acc);
		if (ret)
			return ret;
		goto install;
	}
	if (a->members)
		return -EOPNOTSUPP;

	ret = kva_client_lock(cl, 0);
	if (ret)
		return ret;
	ret = kva_core_lookup(&a->core, &cl->core, ff.handle);
	/* A scrubber writes the frames it took, which nobody holds. */
	if (ret < 0 && a->scrub) {
		int idx = kva_scrub_holds(cl, ff.handle, how);

		if (idx >= 0) {
			ret = idx;
			scrubbing = true;
		}
	}
	/* A tier agent maps the frames of the copies it makes. */
	if (ret < 0) {
		int idx = kva_tier_granted(a, cl, ff.handle, &acc);

		if (idx >= 0) {
			ret = idx;
			granted = true;
		}
	} else {
		acc = scrubbing ? KVA_ACCESS_WRITE :
		      kva_frame_access(a, cl, ret);
	}
	if (ret >= 0) {
		u32 idx = ret;
		struct kva_backing *bk = &a->backing[idx];

		ret = 0;
		if (!bk->file) {
			ret = -ENODATA;
		} else if (a->mem_kind == KVARENA_MEM_FILE && !granted &&
			   !kva_arena_owner(a, how)) {
			/* The file holds every frame: the agent's alone. */
			ret = -EPERM;
		} else if (cl->fmap_file) {
			file = get_file(cl->fmap_file);
			ff.offset = (u64)idx * a->frame_size;
		} else {
			/* Until this process exits, the frame is its domain's. */
			ret = kva_scrub_note_import(cl, idx, how);
			if (!ret)
				file = get_file(bk->file);
			ff.offset = bk->offset;
		}
	}
	mutex_unlock(&a->lock);
	if (ret)
		return ret;
	/*
	 * A file arena's: an open file of its own, on which the agent may
	 * set O_DIRECT without changing the module's, under the credentials
	 * of whoever gave the backing.
	 */
	if (a->mem_kind == KVARENA_MEM_FILE) {
		struct file *own = dentry_open(&file->f_path,
					       O_RDWR | O_LARGEFILE,
					       file->f_cred);

		fput(file);
		if (IS_ERR(own))
			return PTR_ERR(own);
		file = own;
	}

install:
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_put_file;
	}
	ff.fd = fd;
	ff.size = a->frame_size;
	ff.access = acc == KVA_ACCESS_WRITE ?
		    KVARENA_ACCESS_READ | KVARENA_ACCESS_WRITE :
		    KVARENA_ACCESS_READ;
	if (copy_to_user(argp, &ff, sizeof(ff))) {
		ret = -EFAULT;
		goto err_put_fd;
	}
	fd_install(fd, file);
	return 0;

err_put_fd:
	put_unused_fd(fd);
err_put_file:
	fput(file);
	return ret;
}

long kva_ioc_set_usage(struct kva_client *cl, void __user *argp,
		       unsigned int how)
{
	struct kva_arena *a = cl->arena;
	struct kvarena_usage u;
	int ret;

	ret = kva_copy_in(&u, argp, sizeof(u), how);
	if (ret)
		return ret;
	ret = kva_check_usage(&u);
	if (ret)
		return ret;

	ret = kva_client_lock(cl, how);
	if (ret)
		return ret;
	/*
	 * held <= 2^24 frames of <= 2^30 bytes, in at most 16 members: the
	 * product fits in u64.  A gang's bytes are its members' together.
	 */
	if (u.filled_bytes > (u64)cl->core.held * a->frame_size *
			     (a->members ? a->nr_members : 1)) {
		ret = -EINVAL;
	} else {
		a->filled_bytes += u.filled_bytes - cl->filled_bytes;
		a->filled_tokens += u.filled_tokens - cl->filled_tokens;
		cl->filled_bytes = u.filled_bytes;
		cl->filled_tokens = u.filled_tokens;
	}
	mutex_unlock(&a->lock);
	return ret;
}

static struct kva_client *kva_client_find(struct kva_arena *a, u32 id)
{
	lockdep_assert_held(&a->lock);
	return id <= INT_MAX ? idr_find(&a->client_ids, id) : NULL;
}

static void fill_info(struct kvarena_client_info *ci,
		      const struct kva_client *cl)
{
	memset(ci, 0, sizeof(*ci));
	ci->client_id = cl->id;
	/*
	 * A struct pid keeps its number after the process is reaped, and
	 * the number may be another process's by now: 0 once it has exited.
	 */
	ci->pid = pid_has_task(cl->pid, PIDTYPE_TGID) ? pid_vnr(cl->pid) : 0;
	strscpy(ci->label, cl->label, sizeof(ci->label));
	ci->min_frames = cl->core.min;
	ci->max_frames = cl->core.max;
	ci->held = cl->core.held;
	ci->shared = cl->core.shared;
	ci->charged = cl->core.charged;
	ci->dmem_refused = cl->dmem_refused;
	ci->peak = cl->core.peak;
	ci->uid = from_kuid_munged(current_user_ns(), cl->uid);
	ci->filled_bytes = cl->filled_bytes;
	ci->filled_tokens = cl->filled_tokens;
	ci->alloc_calls = cl->core.alloc_calls;
	ci->free_calls = cl->core.free_calls;
	ci->alloc_failures = cl->core.alloc_failures;
	ci->domain = kva_domain_id(cl->core.dom);
}

/* Rows per CLIENTS call; the table is read in one locked pass. */
#define KVA_CLIENTS_MAX	65536u

long kva_ioc_clients(struct kva_client *cl, void __user *argp,
		     unsigned int how)
{
	struct kvarena_clients __user *uc = argp;
	struct kvarena_client_info *rows = NULL;
	struct kvarena_clients c;
	struct kva_client *it;
	struct kva_arena *a;
	u32 n = 0, seen = 0, cap;
	u64 dom;
	int ret = 0;

	if (copy_from_user(&c, argp, sizeof(c)))
		return -EFAULT;
	if (kva_check_clients(&c, KVA_CLIENTS_MAX))
		return -EINVAL;

	a = kva_arena_get(c.name);
	if (!a)
		return -ENOENT;
	if (!kva_arena_permits(a, KVARENA_ACC_VIEW, how)) {
		ret = -EACCES;
		goto out_put;
	}
	/*
	 * Rows for the clients there are, not for what was asked: a reader
	 * should not make the kernel allocate megabytes for nothing.
	 */
	cap = min(c.count, READ_ONCE(a->nr_clients));
	if (cap) {
		rows = kvcalloc(cap, sizeof(*rows), GFP_KERNEL_ACCOUNT);
		if (!rows) {
			ret = -ENOMEM;
			goto out_put;
		}
	}
	mutex_lock(&a->lock);
	/*
	 * Clients that attached since: rows for them too, or fewer rows
	 * than min(count, nr_clients) would go out, and the caller would
	 * read what its buffer held before as rows.
	 */
	if (c.count > cap && a->nr_clients > cap) {
		kvfree(rows);
		cap = min(c.count, a->nr_clients);
		rows = kvcalloc(cap, sizeof(*rows), GFP_KERNEL_ACCOUNT);
		if (!rows) {
			mutex_unlock(&a->lock);
			ret = -ENOMEM;
			goto out_put;
		}
	}
	/* The owner sees every client; anyone else its own domain's. */
	dom = kva_viewer_domain(a, cl, how);
	list_for_each_entry(it, &a->clients, node) {
		if (dom && kva_domain_id(it->core.dom) != dom)
			continue;
		seen++;
		if (n < cap)
			fill_info(&rows[n++], it);
	}
	c.nr_clients = seen;
	mutex_unlock(&a->lock);

	if ((n && copy_to_user(u64_to_user_ptr(c.clients), rows,
			       n * sizeof(*rows))) ||
	    put_user(c.nr_clients, &uc->nr_clients))
		ret = -EFAULT;
	kvfree(rows);
out_put:
	kva_arena_put(a);
	return ret;
}

/*
 * EVICT: the client's file stays open, but the client leaves the arena.
 * Its faults are held off (the frames file's lock, taken before the arena
 * lock as a fault takes them) while the core takes everything back, then
 * every mapping of its frames file is zapped.
 */
/**
 * kva_evict_client() - take client @id out of arena @a: EVICT, and the
 * release of a rank whose client asked for KVARENA_GANG_RANKS_FATAL.
 * @a:		the arena, not locked.
 * @id:		the client's id.
 * @held:	out: the frames it held.
 *
 * Return: 0, or -ENOENT if @a has no such client (any more).
 */
int kva_evict_client(struct kva_arena *a, u32 id, u32 *held)
{
	struct file *files[KVARENA_GANG_MAX];
	struct kva_client *cl;
	u32 i, n = 0;
	int ret = -ENOENT;

	mutex_lock(&a->lock);
	cl = kva_client_find(a, id);
	if (cl && !cl->evicted) {
		n = kva_fmap_files(cl, files);
		for (i = 0; i < n; i++)
			get_file(files[i]);
	}
	mutex_unlock(&a->lock);
	if (!cl)
		return -ENOENT;
	if (n)
		kva_fmap_lock_zap(files, n);
	mutex_lock(&a->lock);
	/* Still the same client?  Its frames files cannot be another's. */
	if (kva_client_find(a, id) == cl && !cl->evicted &&
	    (!n || cl->fmap_file == files[0] ||
	     (cl->gang_fmaps && cl->gang_fmaps[0] == files[0]))) {
		/* Its copies under way keep their frames, not it. */
		kva_tier_client_gone(cl);
		*held = cl->core.held;
		kva_client_detach(a, cl);
		WRITE_ONCE(cl->evicted, true);
		if (n)
			kva_fmap_evicted(files[0]);
		/* A poll() of its own wakes to EPOLLERR. */
		wake_up_interruptible_all(&a->pressure_wq);
		ret = 0;
	}
	mutex_unlock(&a->lock);
	if (n) {
		kva_fmap_unlock(files[0]);
		for (i = 0; i < n; i++)
			fput(files[i]);
	}
	return ret;
}

/*
 * EVICT: the client's file stays open, but the client leaves the arena.
 * Its faults are held off (the frames file's lock, taken before the arena
 * lock as a fault takes them) while the core takes everything back, then
 * every mapping of its frames files is zapped.
 */
long kva_ioc_evict(void __user *argp)
{
	struct kvarena_evict __user *ue = argp;
	struct kvarena_evict e;
	struct kva_arena *a;
	u32 held = 0;
	int ret;

	if (copy_from_user(&e, argp, sizeof(e)))
		return -EFAULT;
	if (kva_check_evict(&e))
		return -EINVAL;
	a = kva_arena_get(e.name);
	if (!a)
		return -ENOENT;
	ret = -EOPNOTSUPP;
	if (a->mem_kind == KVARENA_MEM_CUDA &&
	    !(a->flags & KVARENA_CREATE_NO_BACKING))
		goto out_put;
	ret = kva_evict_client(a, e.client_id, &held);
	/* Done is done: like FREE, no error once the client is out. */
	if (!ret && put_user(held, &ue->nr_frames))
		pr_debug("evict: nr_frames not written\n");
out_put:
	kva_arena_put(a);
	return ret;
}

long kva_ioc_set_limits(void __user *argp)
{
	struct kvarena_limits l;
	struct kva_client *cl;
	struct kva_arena *a;
	int ret;

	if (copy_from_user(&l, argp, sizeof(l)))
		return -EFAULT;
	if (kva_check_limits(&l))
		return -EINVAL;

	a = kva_arena_get(l.name);
	if (!a)
		return -ENOENT;
	mutex_lock(&a->lock);
	cl = kva_client_find(a, l.client_id);
	if (cl)
		ret = kva_core_set_limits(&a->core, &cl->core, l.min_frames,
					  l.max_frames);
	else
		ret = -ENOENT;
	if (!ret) {
		kva_arena_update_pressure(a);
		/* Its own room moved: a waiter of its may go on. */
		wake_up_interruptible_all(&a->pressure_wq);
	}
	mutex_unlock(&a->lock);
	kva_arena_put(a);
	return ret;
}
