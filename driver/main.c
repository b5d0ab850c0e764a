// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: /dev/kvarena, the file operations and the one dispatcher
 * that both ioctl() and IORING_OP_URING_CMD go through.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/uaccess.h>
#include <linux/user_namespace.h>

#include "version.h"
#include "compat.h"
#include "kva.h"

/**
 * kva_copy_in() - copy_from_user(), or under io_uring's non-blocking issue
 * its non-faulting form: a page that is not present then gives -EAGAIN,
 * and io_uring retries the command from a worker, where it may fault.
 * @dst:	kernel buffer.
 * @src:	user pointer, not trusted.
 * @n:		bytes.
 * @how:	KVA_HOW_*.
 *
 * Return: 0, -EFAULT or -EAGAIN.
 */
int kva_copy_in(void *dst, const void __user *src, size_t n,
		unsigned int how)
{
	unsigned long left;

	if (!(how & KVA_HOW_NONBLOCK))
		return copy_from_user(dst, src, n) ? -EFAULT : 0;
	pagefault_disable();
	left = copy_from_user(dst, src, n);
	pagefault_enable();
	return left ? -EAGAIN : 0;
}

/* kva_copy_in()'s other direction. */
int kva_copy_out(void __user *dst, const void *src, size_t n,
		 unsigned int how)
{
	unsigned long left;

	if (!(how & KVA_HOW_NONBLOCK))
		return copy_to_user(dst, src, n) ? -EFAULT : 0;
	pagefault_disable();
	left = copy_to_user(dst, src, n);
	pagefault_enable();
	return left ? -EAGAIN : 0;
}

/* Take arena->lock, or -EAGAIN if it is busy and we may not sleep. */
int kva_lock_arena(struct kva_arena *a, unsigned int how)
{
	if (!(how & KVA_HOW_NONBLOCK)) {
		mutex_lock(&a->lock);
		return 0;
	}
	return mutex_trylock(&a->lock) ? 0 : -EAGAIN;
}

/*
 * Is the caller an administrator for this command?  Privilege counts over
 * ioctl() only: a ring may be shared, and its SQEs need not come from the
 * task that holds the privilege.
 */
bool kva_admin(unsigned int how)
{
	return !(how & KVA_HOW_URING) &&
	       ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN);
}

static long kva_ioc_version(void __user *argp, unsigned int how)
{
	struct kvarena_version v;
	int ret;

	ret = kva_copy_in(&v, argp, sizeof(v), how);
	if (ret)
		return ret;
	ret = kva_check_version(&v);
	if (ret)
		return ret;
	v.abi_version = KVARENA_ABI_VERSION;
	v.features = KVARENA_FEAT_POLL | KVARENA_FEAT_POLLOUT |
		     KVARENA_FEAT_DOMAINS | KVARENA_FEAT_CLEAR |
		     KVARENA_FEAT_SCRUB | KVARENA_FEAT_RESIZE |
		     KVARENA_FEAT_IMPORTS_DROPPED | KVARENA_FEAT_TIER |
		     KVARENA_FEAT_FILE | KVARENA_FEAT_GANG |
		     KVARENA_FEAT_SYSFS |
		     KVARENA_FEAT_PREFIX | KVARENA_FEAT_EVENTS;
#ifdef KVA_URING_CMD
	v.features |= KVARENA_FEAT_URING_CMD;
#endif
	if (kva_dmem_enabled())
		v.features |= KVARENA_FEAT_DMEM;
	return kva_copy_out(argp, &v, sizeof(v), how);
}

/*
 * Every arena holds a reference to the module, as every open file does, so
 * rmmod is refused (EBUSY, "in use") while any arena exists: an arena and
 * its memory are made on purpose and kept until destroy, and unloading the
 * module must not be a second, silent way to destroy them.  @ret is the
 * result of ARENA_CREATE or ARENA_DESTROY.
 */
static long kva_arena_hold_module(long ret)
{
	if (!ret)
		__module_get(THIS_MODULE);
	return ret;
}

static long kva_arena_release_module(long ret)
{
	if (!ret)
		module_put(THIS_MODULE);
	return ret;
}

/**
 * kva_dispatch() - run one command, from ioctl() or uring_cmd.
 * @file:	the /dev/kvarena file.
 * @cmd:	KVARENA_IOC_* number.
 * @argp:	user pointer to the command's struct.
 * @how:	KVA_HOW_* of the path it came by.
 *
 * Every permission and state check lives here, so the two paths cannot
 * drift apart.  The command number encodes the struct size, so a caller
 * built against another layout gets -ENOTTY, not a misread struct.
 * Administrative commands are taken over ioctl() only (-EPERM over
 * io_uring, whoever submits).
 */
long kva_dispatch(struct file *file, unsigned int cmd, void __user *argp,
		  unsigned int how)
{
	struct kva_client *cl = file->private_data;
	int need = kva_cmd_need(cmd);

	if (need < 0)
		return need;
	if (need != KVA_ANYONE && !(file->f_mode & FMODE_WRITE))
		return -EBADF;
	if (need == KVA_ADMIN &&
	    ((how & KVA_HOW_URING) || !capable(CAP_SYS_ADMIN)))
		return -EPERM;
	/* Pairs with smp_store_release() in kva_ioc_attach(). */
	if (need == KVA_CLIENT && !smp_load_acquire(&cl->arena))
		return -ENOTCONN;
	/* A hint: each client command checks again under the arena lock. */
	if (need == KVA_CLIENT && READ_ONCE(cl->evicted))
		return -ESHUTDOWN;
	/*
	 * A file arena's frames are its tier's (tier.c's own clients): a
	 * client of it takes, publishes and finds none, so that nobody can
	 * put a key below that no copy wrote, or get a frame another domain
	 * left, as they are never cleared.
	 */
	if (need == KVA_CLIENT &&
	    (cmd == KVARENA_IOC_ALLOC || cmd == KVARENA_IOC_PUBLISH ||
	     cmd == KVARENA_IOC_LOOKUP) &&
	    cl->arena->mem_kind == KVARENA_MEM_FILE)
		return -EOPNOTSUPP;
	/* A rank holds nothing: it maps what its gang client holds. */
	if (need == KVA_CLIENT && cl->is_rank && cmd != KVARENA_IOC_FRAME_FD)
		return -EPERM;
	if ((how & KVA_HOW_NONBLOCK) && !kva_cmd_nonblock(cmd))
		return -EAGAIN;

	switch (cmd) {
	case KVARENA_IOC_VERSION:
		return kva_ioc_version(argp, how);
	case KVARENA_IOC_ARENA_CREATE:
		return kva_arena_hold_module(kva_ioc_arena_create(argp));
	case KVARENA_IOC_ARENA_DESTROY:
		return kva_arena_release_module(kva_ioc_arena_destroy(argp));
	case KVARENA_IOC_ARENA_SET_BACKING:
		return kva_ioc_set_backing(argp);
	case KVARENA_IOC_ARENA_SET_POLICY:
		return kva_ioc_set_policy(argp);
	case KVARENA_IOC_ATTACH:
		return kva_ioc_attach(cl, argp, how);
	case KVARENA_IOC_ALLOC:
		return kva_ioc_alloc(cl, argp, how);
	case KVARENA_IOC_FREE:
		return kva_ioc_free(cl, argp, how);
	case KVARENA_IOC_FRAME_FD:
		return kva_ioc_frame_fd(cl, argp, how);
	case KVARENA_IOC_SET_USAGE:
		return kva_ioc_set_usage(cl, argp, how);
	case KVARENA_IOC_STAT:
	case KVARENA_IOC_STAT_V1:
		return kva_ioc_stat(cl, argp, _IOC_SIZE(cmd), how);
	case KVARENA_IOC_CLIENTS:
		return kva_ioc_clients(cl, argp, how);
	case KVARENA_IOC_SET_LIMITS:
		return kva_ioc_set_limits(argp);
	case KVARENA_IOC_PUBLISH:
		return kva_ioc_publish(cl, argp, how);
	case KVARENA_IOC_LOOKUP:
		return kva_ioc_lookup(cl, argp, how);
	case KVARENA_IOC_EVICT:
		return kva_ioc_evict(argp);
	case KVARENA_IOC_EVENTS_FD:
		return kva_ioc_events_fd(cl, argp, how);
	case KVARENA_IOC_SCRUB:
		return kva_ioc_scrub(cl, argp, how);
	case KVARENA_IOC_ARENA_RESIZE:
		return kva_ioc_arena_resize(argp);
	case KVARENA_IOC_IMPORTS_DROPPED:
		return kva_ioc_imports_dropped(cl, argp, how);
	case KVARENA_IOC_ARENA_SET_TIER:
		return kva_ioc_arena_set_tier(argp);
	case KVARENA_IOC_TIER:
		return kva_ioc_tier(cl, argp, how);
	case KVARENA_IOC_PROMOTE:
		return kva_ioc_promote(cl, argp, how);
	case KVARENA_IOC_GANG_CREATE:
		return kva_arena_hold_module(kva_ioc_gang_create(argp));
	case KVARENA_IOC_GANG_TOKEN:
		return kva_ioc_gang_token(cl, argp);
	case KVARENA_IOC_JOIN:
		return kva_ioc_join(cl, argp, how);
	}
	return -ENOTTY;
}

static long kva_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	return kva_dispatch(file, cmd, (void __user *)arg, 0);
}

static int kva_open(struct inode *inode, struct file *file)
{
	struct kva_client *cl = kva_client_new();

	if (!cl)
		return -ENOMEM;
	file->private_data = cl;
	return nonseekable_open(inode, file);
}

static int kva_release(struct inode *inode, struct file *file)
{
	kva_client_release(file->private_data);
	return 0;
}

/*
 * EPOLLPRI while the client's arena is under pressure (what a client
 * without a guarantee could get is below the low watermark).  EPOLLOUT
 * once the frames of the client's last ALLOC refused with -ENOSPC could be
 * had, and while no ALLOC has been refused since one succeeded.  EPOLLERR
 * once an administrator evicted the client.  A file not attached yet has
 * nothing to report and waits: its ATTACH wakes it, and the next poll()
 * waits on the arena.
 *
 * Lockless, as poll() must not sleep for io_uring: the figures may be
 * read mid-update, and a wrong answer is corrected by the wakeup that
 * kva_arena_update_pressure() gives after the update (this waiter is on
 * the queue before it reads).  A reader may see EPOLLOUT and still get
 * -ENOSPC, as another client can take the frames first: it polls again.
 */
static __poll_t kva_poll(struct file *file, poll_table *wait)
{
	struct kva_client *cl = file->private_data;
	struct kva_arena *a;
	__poll_t mask = 0;
	u32 want, avail = 0;

	poll_wait(file, &cl->attach_wq, wait);
	/* Pairs with smp_store_release() in kva_ioc_attach(). */
	a = smp_load_acquire(&cl->arena);
	if (!a)
		return 0;
	poll_wait(file, &a->pressure_wq, wait);
	if (READ_ONCE(cl->evicted))
		return EPOLLERR;
	/* A rank whose gang client is gone: nothing more to map. */
	if (cl->is_rank && !READ_ONCE(cl->leader))
		return EPOLLHUP;
	if (READ_ONCE(a->pressure))
		mask |= EPOLLPRI;
	want = READ_ONCE(cl->want);
	/*
	 * Where only a scrubber clears frames, dirty ones of other domains
	 * are not to be had until it has (scrub.c).
	 */
	if (want && a->scrub)
		/* Racy on purpose (see above): the next wakeup corrects it. */
		avail = data_race(kva_core_usable(&a->core, &cl->core));
	else if (want)
		/* Racy on purpose (see above): the next wakeup corrects it. */
		avail = data_race(kva_core_available(&a->core, &cl->core));
	if (!want || avail >= want)
		mask |= EPOLLOUT | EPOLLWRNORM;
	return mask;
}

const struct file_operations kva_fops = {
	.owner		= THIS_MODULE,
	.open		= kva_open,
	.release	= kva_release,
	.unlocked_ioctl	= kva_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.poll		= kva_poll,
	.show_fdinfo	= kva_show_fdinfo,
#ifdef KVA_URING_CMD
	.uring_cmd	= kva_uring_cmd,
#endif
};

static struct miscdevice kva_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "kvarena",
	.fops	= &kva_fops,
	.mode	= 0660,
};

/*
 * The sysfs directory lives under the misc device, so the device comes
 * first; kva_arenas_lock, held until sysfs is ready, keeps anyone who
 * opens the node that early from creating an arena with no directory to
 * go in.
 */
static int __init kva_init(void)
{
	int ret;

	ret = kva_frames_init();
	if (ret)
		return ret;
	mutex_lock(&kva_arenas_lock);
	ret = misc_register(&kva_misc);
	if (ret)
		goto err_unlock;
	ret = kva_sysfs_init(&kva_misc.this_device->kobj);
	if (ret)
		goto err_deregister;
	mutex_unlock(&kva_arenas_lock);
#ifdef KVA_URING_CMD
	pr_info("ABI %d, /dev/kvarena ready\n", KVARENA_ABI_VERSION);
#else
	pr_info("ABI %d, /dev/kvarena ready; commands over ioctl() only: this kernel has no io_uring commands for character devices\n",
		KVARENA_ABI_VERSION);
#endif
	return 0;

err_deregister:
	misc_deregister(&kva_misc);
err_unlock:
	mutex_unlock(&kva_arenas_lock);
	kva_frames_exit();
	return ret;
}

/*
 * No file of ours is open and no arena exists: each holds a module
 * reference, /dev/kvarena's files, the frames files and the arenas alike
 * (only a forced unload gets here with arenas, and they go with it).  The
 * node goes first, so nobody opens it while the rest is torn down.
 */
static void __exit kva_exit(void)
{
	misc_deregister(&kva_misc);
	kva_arenas_destroy_all();
	kva_arenas_wait_released();
	kva_sysfs_exit();
	kva_frames_exit();
}

module_init(kva_init);
module_exit(kva_exit);

MODULE_DESCRIPTION("kvarena: a shared arena of KV-cache frames");
MODULE_LICENSE("GPL");
MODULE_VERSION(KVA_MOD_VERSION);
