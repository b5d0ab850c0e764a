// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: /dev/kvarena, the file operations and the one dispatcher
 * that both ioctl() and IORING_OP_URING_CMD go through.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "kva.h"

static long kva_ioc_version(void __user *argp)
{
	struct kvarena_version v;

	if (copy_from_user(&v, argp, sizeof(v)))
		return -EFAULT;
	if (v.reserved0 || !kva_all_zero(v.reserved, sizeof(v.reserved)))
		return -EINVAL;
	v.abi_version = KVARENA_ABI_VERSION;
	v.features = KVARENA_FEAT_POLL | KVARENA_FEAT_SYSFS;
#ifdef KVA_URING_CMD
	v.features |= KVARENA_FEAT_URING_CMD;
#endif
	return copy_to_user(argp, &v, sizeof(v)) ? -EFAULT : 0;
}

/* Who may run a command: the table of uapi/linux/kvarena.h. */
enum kva_need {
	KVA_ANYONE,		/* read-only opens too */
	KVA_WRITER,		/* file open for writing */
	KVA_ADMIN,		/* writer with CAP_SYS_ADMIN */
	KVA_CLIENT,		/* writer attached to an arena */
};

static int kva_cmd_need(unsigned int cmd)
{
	switch (cmd) {
	case KVARENA_IOC_VERSION:
	case KVARENA_IOC_STAT:
	case KVARENA_IOC_CLIENTS:
		return KVA_ANYONE;
	case KVARENA_IOC_ATTACH:
		return KVA_WRITER;
	case KVARENA_IOC_ARENA_CREATE:
	case KVARENA_IOC_ARENA_DESTROY:
	case KVARENA_IOC_ARENA_SET_BACKING:
	case KVARENA_IOC_SET_LIMITS:
		return KVA_ADMIN;
	case KVARENA_IOC_ALLOC:
	case KVARENA_IOC_FREE:
	case KVARENA_IOC_FRAME_FD:
	case KVARENA_IOC_SET_USAGE:
		return KVA_CLIENT;
	default:
		return -ENOTTY;
	}
}

/**
 * kva_dispatch() - run one command, from ioctl() or uring_cmd.
 * @file:	the /dev/kvarena file.
 * @cmd:	KVARENA_IOC_* number.
 * @argp:	user pointer to the command's struct.
 *
 * Every permission and state check lives here, so the two paths cannot
 * drift apart.  The command number encodes the struct size, so a caller
 * built against another layout gets -ENOTTY, not a misread struct.
 */
long kva_dispatch(struct file *file, unsigned int cmd, void __user *argp)
{
	struct kva_client *cl = file->private_data;
	int need = kva_cmd_need(cmd);

	if (need < 0)
		return need;
	if (need != KVA_ANYONE && !(file->f_mode & FMODE_WRITE))
		return -EBADF;
	if (need == KVA_ADMIN && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	/* Pairs with smp_store_release() in kva_ioc_attach(). */
	if (need == KVA_CLIENT && !smp_load_acquire(&cl->arena))
		return -ENOTCONN;

	switch (cmd) {
	case KVARENA_IOC_VERSION:
		return kva_ioc_version(argp);
	case KVARENA_IOC_ARENA_CREATE:
		return kva_ioc_arena_create(argp);
	case KVARENA_IOC_ARENA_DESTROY:
		return kva_ioc_arena_destroy(argp);
	case KVARENA_IOC_ARENA_SET_BACKING:
		return kva_ioc_set_backing(argp);
	case KVARENA_IOC_ATTACH:
		return kva_ioc_attach(cl, argp);
	case KVARENA_IOC_ALLOC:
		return kva_ioc_alloc(cl, argp);
	case KVARENA_IOC_FREE:
		return kva_ioc_free(cl, argp);
	case KVARENA_IOC_FRAME_FD:
		return kva_ioc_frame_fd(cl, argp);
	case KVARENA_IOC_SET_USAGE:
		return kva_ioc_set_usage(cl, argp);
	case KVARENA_IOC_STAT:
		return kva_ioc_stat(argp);
	case KVARENA_IOC_CLIENTS:
		return kva_ioc_clients(argp);
	case KVARENA_IOC_SET_LIMITS:
		return kva_ioc_set_limits(argp);
	}
	return -ENOTTY;
}

static long kva_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	return kva_dispatch(file, cmd, (void __user *)arg);
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
 * EPOLLPRI while the client's arena is under pressure (free + cached
 * frames below its low watermark); EPOLLERR on a file not attached.
 */
static __poll_t kva_poll(struct file *file, poll_table *wait)
{
	struct kva_client *cl = file->private_data;
	/* Pairs with smp_store_release() in kva_ioc_attach(). */
	struct kva_arena *a = smp_load_acquire(&cl->arena);

	if (!a)
		return EPOLLERR;
	poll_wait(file, &a->pressure_wq, wait);
	return READ_ONCE(a->pressure) ? EPOLLPRI : 0;
}

const struct file_operations kva_fops = {
	.owner		= THIS_MODULE,
	.open		= kva_open,
	.release	= kva_release,
	.unlocked_ioctl	= kva_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.poll		= kva_poll,
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

static int __init kva_init(void)
{
	int ret;

	ret = misc_register(&kva_misc);
	if (ret)
		return ret;
	ret = kva_sysfs_init(&kva_misc.this_device->kobj);
	if (ret)
		goto err_deregister;
	pr_info("ABI %d, /dev/kvarena ready\n", KVARENA_ABI_VERSION);
	return 0;

err_deregister:
	misc_deregister(&kva_misc);
	return ret;
}

static void __exit kva_exit(void)
{
	/* No file is open (each holds a module reference): no clients. */
	kva_arenas_destroy_all();
	kva_sysfs_exit();
	misc_deregister(&kva_misc);
}

module_init(kva_init);
module_exit(kva_exit);

MODULE_DESCRIPTION("kvarena: a shared arena of KV-cache frames");
MODULE_LICENSE("GPL");
