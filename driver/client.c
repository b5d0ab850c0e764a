// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: clients - attach, frames, usage, the CLIENTS table, limits,
 * and release, which returns everything a client held.
 */
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "kva.h"

/* Handles up to this many go through a buffer on the stack. */
#define KVA_SMALL_BATCH	16

struct kva_client *kva_client_new(void)
{
	struct kva_client *cl = kzalloc(sizeof(*cl), GFP_KERNEL);

	if (cl)
		INIT_LIST_HEAD(&cl->node);
	return cl;
}

/*
 * The file is going away (close of its last reference, or its process
 * died, SIGKILL included): free every frame the client held, take its
 * usage out of the arena's sums, and drop its arena reference.
 */
void kva_client_release(struct kva_client *cl)
{
	struct kva_arena *a = cl->arena;

	if (a) {
		mutex_lock(&a->lock);
		kva_core_detach(&a->core, &cl->core);
		list_del(&cl->node);
		a->nr_clients--;
		a->filled_bytes -= cl->filled_bytes;
		a->filled_tokens -= cl->filled_tokens;
		kva_arena_update_pressure(a);
		mutex_unlock(&a->lock);
		kva_arena_put(a);
	}
	put_pid(cl->pid);
	kfree(cl);
}

long kva_ioc_attach(struct kva_client *cl, void __user *argp)
{
	struct kvarena_attach at;
	struct kva_arena *a;
	int ret;

	if (copy_from_user(&at, argp, sizeof(at)))
		return -EFAULT;
	if (at.flags || !kva_all_zero(at.reserved, sizeof(at.reserved)) ||
	    kva_name_valid(at.name) ||
	    strnlen(at.label, KVARENA_LABEL_LEN) == KVARENA_LABEL_LEN)
		return -EINVAL;

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
	mutex_lock(&a->lock);
	/* Every frame a client can get has memory behind it. */
	if (!(a->flags & KVARENA_CREATE_NO_BACKING) &&
	    a->nr_backed < a->core.nr_frames)
		ret = -ENODATA;
	else
		ret = kva_core_attach(&a->core, &cl->core, at.min_frames,
				      at.max_frames);
	if (ret) {
		mutex_unlock(&a->lock);
		kva_arena_put(a);
		goto out_unlock;
	}
	cl->id = ++a->next_client_id;
	cl->pid = get_pid(task_tgid(current));
	cl->uid = current_euid();
	strscpy(cl->label, at.label, sizeof(cl->label));
	list_add_tail(&cl->node, &a->clients);
	a->nr_clients++;
	at.client_id = cl->id;
	at.max_frames = cl->core.max;
	mutex_unlock(&a->lock);
	/* Publish the attached client; pairs with smp_load_acquire() readers. */
	smp_store_release(&cl->arena, a);

	at.nr_frames = a->core.nr_frames;
	at.mem_kind = a->mem_kind;
	at.frame_size = a->frame_size;
	at.bytes_per_token = a->bytes_per_token;
out_unlock:
	mutex_unlock(&kva_arenas_lock);
	if (ret)
		return ret;
	/*
	 * The file stays attached even if the result cannot be written back:
	 * CLIENTS shows it, and its release cleans it up as always.
	 */
	return copy_to_user(argp, &at, sizeof(at)) ? -EFAULT : 0;
}

static int check_frames(const struct kvarena_frames *f, u32 flags_ok)
{
	if ((f->flags & ~flags_ok) || f->reserved0 ||
	    !kva_all_zero(f->reserved, sizeof(f->reserved)))
		return -EINVAL;
	if (!f->count || f->count > KVARENA_MAX_BATCH)
		return -EINVAL;
	return 0;
}

static u64 *handles_buf(u64 *small, u32 count)
{
	if (count <= KVA_SMALL_BATCH)
		return small;
	return kvmalloc_array(count, sizeof(u64), GFP_KERNEL);
}

static void handles_buf_free(u64 *small, u64 *buf)
{
	if (buf != small)
		kvfree(buf);
}

long kva_ioc_alloc(struct kva_client *cl, void __user *argp)
{
	struct kvarena_frames __user *uf = argp;
	struct kva_arena *a = cl->arena;
	u64 small[KVA_SMALL_BATCH], *buf;
	struct kvarena_frames f;
	int n;

	if (copy_from_user(&f, argp, sizeof(f)))
		return -EFAULT;
	n = check_frames(&f, KVARENA_ALLOC_PARTIAL);
	if (n)
		return n;
	buf = handles_buf(small, f.count);
	if (!buf)
		return -ENOMEM;

	mutex_lock(&a->lock);
	n = kva_core_alloc(&a->core, &cl->core, buf, f.count,
			   f.flags & KVARENA_ALLOC_PARTIAL);
	if (n > 0)
		kva_arena_update_pressure(a);
	mutex_unlock(&a->lock);
	if (n < 0)
		goto out_free;

	if (copy_to_user(u64_to_user_ptr(f.handles), buf, n * sizeof(u64)) ||
	    put_user((u32)n, &uf->nr_done)) {
		/*
		 * The caller cannot learn the handles: take them back, one by
		 * one, since another thread of the client may have guessed and
		 * freed some meanwhile.  Any left over go at release.
		 */
		int i;

		mutex_lock(&a->lock);
		for (i = 0; i < n; i++)
			kva_core_free(&a->core, &cl->core, &buf[i], 1);
		kva_arena_update_pressure(a);
		mutex_unlock(&a->lock);
		n = -EFAULT;
		goto out_free;
	}
	n = 0;
out_free:
	handles_buf_free(small, buf);
	return n;
}

long kva_ioc_free(struct kva_client *cl, void __user *argp)
{
	struct kvarena_frames __user *uf = argp;
	struct kva_arena *a = cl->arena;
	u64 small[KVA_SMALL_BATCH], *buf;
	struct kvarena_frames f;
	int ret;

	if (copy_from_user(&f, argp, sizeof(f)))
		return -EFAULT;
	ret = check_frames(&f, 0);
	if (ret)
		return ret;
	buf = handles_buf(small, f.count);
	if (!buf)
		return -ENOMEM;
	ret = -EFAULT;
	if (copy_from_user(buf, u64_to_user_ptr(f.handles),
			   f.count * sizeof(u64)))
		goto out_free;

	mutex_lock(&a->lock);
	ret = kva_core_free(&a->core, &cl->core, buf, f.count);
	if (!ret)
		kva_arena_update_pressure(a);
	mutex_unlock(&a->lock);
	/* Success is the return value; nr_done only repeats it. */
	if (!ret && put_user(f.count, &uf->nr_done))
		ret = -EFAULT;
out_free:
	handles_buf_free(small, buf);
	return ret;
}

long kva_ioc_frame_fd(struct kva_client *cl, void __user *argp)
{
	struct kva_arena *a = cl->arena;
	struct kvarena_frame_fd ff;
	struct file *file;
	int ret, fd;

	if (copy_from_user(&ff, argp, sizeof(ff)))
		return -EFAULT;
	if (ff.flags || !kva_all_zero(ff.reserved, sizeof(ff.reserved)))
		return -EINVAL;

	mutex_lock(&a->lock);
	ret = kva_core_lookup(&a->core, &cl->core, ff.handle);
	if (ret >= 0) {
		struct kva_backing *bk = &a->backing[ret];

		if (bk->file) {
			file = get_file(bk->file);
			ff.offset = bk->offset;
			ret = 0;
		} else {
			ret = -ENODATA;
		}
	}
	mutex_unlock(&a->lock);
	if (ret)
		return ret;

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_put_file;
	}
	ff.fd = fd;
	ff.size = a->frame_size;
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

long kva_ioc_set_usage(struct kva_client *cl, void __user *argp)
{
	struct kva_arena *a = cl->arena;
	struct kvarena_usage u;
	int ret = 0;

	if (copy_from_user(&u, argp, sizeof(u)))
		return -EFAULT;
	if (u.flags || u.reserved0 ||
	    !kva_all_zero(u.reserved, sizeof(u.reserved)))
		return -EINVAL;

	mutex_lock(&a->lock);
	/* held <= 2^24 frames of <= 2^30 bytes: the product fits in u64. */
	if (u.filled_bytes > (u64)cl->core.held * a->frame_size) {
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
	struct kva_client *cl;

	lockdep_assert_held(&a->lock);
	list_for_each_entry(cl, &a->clients, node)
		if (cl->id == id)
			return cl;
	return NULL;
}

static void fill_info(struct kvarena_client_info *ci,
		      const struct kva_client *cl)
{
	memset(ci, 0, sizeof(*ci));
	ci->client_id = cl->id;
	ci->pid = pid_vnr(cl->pid);
	strscpy(ci->label, cl->label, sizeof(ci->label));
	ci->min_frames = cl->core.min;
	ci->max_frames = cl->core.max;
	ci->held = cl->core.held;
	ci->peak = cl->core.peak;
	ci->uid = from_kuid_munged(current_user_ns(), cl->uid);
	ci->filled_bytes = cl->filled_bytes;
	ci->filled_tokens = cl->filled_tokens;
	ci->alloc_calls = cl->core.alloc_calls;
	ci->free_calls = cl->core.free_calls;
	ci->alloc_failures = cl->core.alloc_failures;
}

/* Rows per CLIENTS call; the table is read in one locked pass. */
#define KVA_CLIENTS_MAX	65536u

long kva_ioc_clients(void __user *argp)
{
	struct kvarena_clients __user *uc = argp;
	struct kvarena_client_info *rows = NULL;
	struct kvarena_clients c;
	struct kva_client *cl;
	struct kva_arena *a;
	u32 n = 0;
	int ret = 0;

	if (copy_from_user(&c, argp, sizeof(c)))
		return -EFAULT;
	if (c.flags || c.reserved0 ||
	    !kva_all_zero(c.reserved, sizeof(c.reserved)) ||
	    kva_name_valid(c.name) || c.count > KVA_CLIENTS_MAX)
		return -EINVAL;

	a = kva_arena_get(c.name);
	if (!a)
		return -ENOENT;
	/*
	 * Rows for the clients there are, not for what was asked: a reader
	 * should not make the kernel allocate megabytes for nothing.  Clients
	 * attaching meanwhile show in nr_clients, and the caller asks again.
	 */
	c.count = min(c.count, READ_ONCE(a->nr_clients));
	if (c.count) {
		rows = kvcalloc(c.count, sizeof(*rows), GFP_KERNEL);
		if (!rows) {
			ret = -ENOMEM;
			goto out_put;
		}
	}
	mutex_lock(&a->lock);
	list_for_each_entry(cl, &a->clients, node) {
		if (n >= c.count)
			break;
		fill_info(&rows[n++], cl);
	}
	c.nr_clients = a->nr_clients;
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

long kva_ioc_set_limits(void __user *argp)
{
	struct kvarena_limits l;
	struct kva_client *cl;
	struct kva_arena *a;
	int ret;

	if (copy_from_user(&l, argp, sizeof(l)))
		return -EFAULT;
	if (l.flags || !kva_all_zero(l.reserved, sizeof(l.reserved)) ||
	    kva_name_valid(l.name))
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
	mutex_unlock(&a->lock);
	kva_arena_put(a);
	return ret;
}
