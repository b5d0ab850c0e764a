// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: arenas - create, destroy, backing, lookup and STAT.
 */
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/wait_bit.h>

#include "compat.h"
#include "kva.h"

DEFINE_MUTEX(kva_arenas_lock);
static LIST_HEAD(kva_arenas);	/* protected by kva_arenas_lock */
/*
 * Arenas not yet released.  The release (kva_arena_free()) is module code
 * and may come after ARENA_DESTROY has dropped the arena's module
 * reference - seconds after, under DEBUG_KOBJECT_RELEASE - so the module's
 * exit waits for every one (kva_arenas_wait_released()).
 */
static atomic_t kva_nr_arenas = ATOMIC_INIT(0);

/*
 * Bytes of arena tables that exist (kva_arena_table_bytes() of each arena
 * not yet released), at most an eighth of the machine's RAM.  Real arenas
 * need far less - about 100 bytes a frame, some 200 MiB for the 2.2 M frames of
 * 64 KiB in a 141 GB GPU - so more means a wrong size, and the rest of the
 * machine needs its memory.
 */
static atomic64_t kva_table_bytes = ATOMIC64_INIT(0);

static bool kva_table_reserve(u64 bytes)
{
	u64 budget = ((u64)totalram_pages() << PAGE_SHIFT) / 8;

	if (bytes > budget)
		return false;
	if ((u64)atomic64_add_return(bytes, &kva_table_bytes) > budget) {
		atomic64_sub(bytes, &kva_table_bytes);
		return false;
	}
	return true;
}

static void kva_table_unreserve(u64 bytes)
{
	atomic64_sub(bytes, &kva_table_bytes);
}

/**
 * kva_arena_table_grow() - reserve more tables for an arena.
 * @a:		the arena, not yet visible.
 * @bytes:	what its new tables take (given back with the rest when it
 *		is released).
 *
 * Return: 0, or -ENOMEM past the budget.
 */
int kva_arena_table_grow(struct kva_arena *a, u64 bytes)
{
	if (!kva_table_reserve(bytes))
		return -ENOMEM;
	a->table_bytes += bytes;
	return 0;
}

static struct kva_arena *kva_arena_find(const char *name)
{
	struct kva_arena *a;

	lockdep_assert_held(&kva_arenas_lock);
	list_for_each_entry(a, &kva_arenas, node)
		if (!strcmp(a->name, name))
			return a;
	return NULL;
}

/**
 * kva_arena_get_locked() - find a live arena by name and take a reference;
 * the caller holds kva_arenas_lock.
 * @name:	arena name.
 *
 * Return: the arena, or NULL if there is none of that name.
 */
struct kva_arena *kva_arena_get_locked(const char *name)
{
	struct kva_arena *a = kva_arena_find(name);

	if (a)
		kobject_get(&a->kobj);
	return a;
}

/**
 * kva_arena_get() - kva_arena_get_locked() without the lock held.
 * @name:	arena name.
 *
 * Return: the arena with a reference taken, or NULL.
 */
struct kva_arena *kva_arena_get(const char *name)
{
	struct kva_arena *a;

	mutex_lock(&kva_arenas_lock);
	a = kva_arena_get_locked(name);
	mutex_unlock(&kva_arenas_lock);
	return a;
}

void kva_arena_put(struct kva_arena *a)
{
	kobject_put(&a->kobj);
}

/* kobject release: the last reference is gone (list, clients, sysfs). */
void kva_arena_free(struct kva_arena *a)
{
	idr_destroy(&a->client_ids);
	kva_gang_free(a);
	kva_tier_free(a);
	kva_events_put(a);
	kva_dmem_fini(a);
	kva_core_fini(&a->core);
	kva_domains_fini(a);
	kva_scrub_fini(a);
	kvfree(a->pages);
	kvfree(a->backing);
	kva_table_unreserve(a->table_bytes);
	kfree(a);
	if (atomic_dec_and_test(&kva_nr_arenas))
		wake_up_var(&kva_nr_arenas);
}

/* The module is going: wait until every arena's release has run. */
void kva_arenas_wait_released(void)
{
	wait_var_event(&kva_nr_arenas, !atomic_read(&kva_nr_arenas));
}

/**
 * kva_arena_update_pressure() - recompute the pressure state after the
 * frames a client could get changed (ALLOC, FREE, LOOKUP, ATTACH,
 * SET_LIMITS, release), and wake poll() waiters when it flips or when
 * frames came back.
 * @a:	the arena, locked.
 *
 * What counts is what a client without a guarantee could still get: the
 * free and cached frames less those reserved for other clients' unmet
 * minimums.  When that rises, a client waiting for EPOLLOUT after an
 * ALLOC refused with -ENOSPC may now get its frames: the waiters look
 * again (a frame a guaranteed client frees below its minimum stays its
 * own, and the measure does not move).
 */
void kva_arena_update_pressure(struct kva_arena *a)
{
	u32 h = kva_core_headroom(&a->core);
	bool p = h < a->low_watermark, rose = h > a->headroom;

	lockdep_assert_held(&a->lock);
	/* The dmem cgroups see the frames that came back, as waiters do. */
	kva_dmem_flush(a);
	a->headroom = h;
	kva_tier_pressure(a);
	if (p != a->pressure) {
		WRITE_ONCE(a->pressure, p);
		wake_up_interruptible_all(&a->pressure_wq);
	} else if (rose && wq_has_sleeper(&a->pressure_wq)) {
		wake_up_interruptible_all(&a->pressure_wq);
	}
}

/**
 * kva_policy_from_user() - check and convert an arena policy from userspace.
 * @p:		the policy to fill.
 * @uid:	owner, in the caller's user namespace.
 * @gid:	group, likewise.
 * @mode:	KVARENA_ACC_* bits.
 * @min_limit:	client_min_limit.
 * @max_default: client_max_default.
 * @max_limit:	client_max_limit.
 * @nr_frames:	the arena's size.
 *
 * Return: 0, or -EINVAL for ids with no mapping in the caller's user
 * namespace, mode bits outside KVARENA_MODE_MASK, or limits larger than
 * the arena or out of order.
 */
int kva_policy_from_user(struct kva_policy *p, u32 uid, u32 gid, u32 mode,
			 u32 min_limit, u32 max_default, u32 max_limit,
			 u32 nr_frames)
{
	struct user_namespace *ns = current_user_ns();

	p->uid = make_kuid(ns, uid);
	p->gid = make_kgid(ns, gid);
	if (!uid_valid(p->uid) || !gid_valid(p->gid))
		return -EINVAL;
	if (kva_check_policy_values(mode, min_limit, max_default, max_limit,
				    nr_frames))
		return -EINVAL;
	p->mode = mode;
	p->client_min_limit = min_limit;
	p->client_max_default = max_default;
	p->client_max_limit = max_limit;
	return 0;
}

/**
 * kva_arena_permits() - may the caller view (KVARENA_ACC_VIEW) or attach to
 * (KVARENA_ACC_ATTACH) @a?
 * @a:		the arena.
 * @acc:	one KVARENA_ACC_* bit.
 * @how:	KVA_HOW_* of the command.
 *
 * The arena's mode, like a file's: the owner's bits if the caller's fsuid
 * owns it, else the group's if the caller is in its group, else the
 * others'.  CAP_SYS_ADMIN over ioctl() may do anything.
 *
 * Return: true if permitted.
 */
bool kva_arena_permits(struct kva_arena *a, u32 acc, unsigned int how)
{
	u32 mode;
	kuid_t uid;
	kgid_t gid;

	mutex_lock(&a->lock);
	mode = a->policy.mode;
	uid = a->policy.uid;
	gid = a->policy.gid;
	mutex_unlock(&a->lock);

	if (uid_eq(current_fsuid(), uid))
		mode >>= 6;
	else if (in_group_p(gid))
		mode >>= 3;
	return (mode & acc) || kva_admin(how);
}

static_assert(sizeof(struct kva_backing) == 24);

/* The frames of the arena's table: what it may grow to. */
static u32 kva_create_table(const struct kvarena_arena_create *c)
{
	return c->max_frames ? c->max_frames : c->nr_frames;
}

/*
 * Bytes of the tables that an arena of kva_create_table() frames
 * allocates at ARENA_CREATE: the core's (frame table, key slots, key
 * index), each frame's backing and, for host memory, a page pointer per
 * page.
 */
static u64 kva_arena_table_bytes(const struct kvarena_arena_create *c)
{
	u32 table = kva_create_table(c);
	u64 bytes = kva_core_table_bytes(table) +
		    (u64)table * sizeof(struct kva_backing);

	if (c->mem_kind == KVARENA_MEM_HOST &&
	    !(c->flags & KVARENA_CREATE_NO_BACKING))
		bytes += (u64)table * (c->frame_size >> PAGE_SHIFT) *
			 sizeof(struct page *);
	return bytes + kva_scrub_table_bytes(c);
}

/**
 * kva_arena_make() - make an arena as @c describes, not yet visible.
 * @c:		the checked description (names, policy, sizes).
 * @out:	the arena, with the one reference the list will own.
 *
 * Return: 0 or a negative errno; on error nothing is left.
 */
int kva_arena_make(const struct kvarena_arena_create *c,
		   struct kva_arena **out)
{
	struct kva_arena *a;
	u64 table_bytes;
	u32 table;
	int ret;

	table = kva_create_table(c);
	table_bytes = kva_arena_table_bytes(c);
	if (!kva_table_reserve(table_bytes))
		return -ENOMEM;
	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a) {
		kva_table_unreserve(table_bytes);
		return -ENOMEM;
	}
	a->table_bytes = table_bytes;
	ret = kva_policy_from_user(&a->policy, c->owner_uid, c->owner_gid,
				   c->mode, c->client_min_limit,
				   c->client_max_default, c->client_max_limit,
				   table);
	if (ret)
		goto err_free_arena;
	memcpy(a->mem_uuid, c->mem_uuid, sizeof(a->mem_uuid));
	strscpy(a->name, c->name, sizeof(a->name));
	a->frame_size = c->frame_size;
	a->bytes_per_token = c->bytes_per_token;
	a->mem_kind = c->mem_kind;
	a->mem_dev = c->mem_dev;
	a->low_watermark = c->low_watermark;
	a->flags = c->flags;
	a->policy.cache_domains = c->cache_domains;
	a->policy.domain_cached_max = c->domain_cached_max;
	mutex_init(&a->lock);
	INIT_LIST_HEAD(&a->clients);
	INIT_LIST_HEAD(&a->tier_grants);
	idr_init(&a->client_ids);
	init_waitqueue_head(&a->pressure_wq);
	ret = kva_core_init_max(&a->core, c->nr_frames, table);
	if (ret)
		goto err_free_arena;
	ret = kva_dmem_init(a);
	if (ret)
		goto err_fini_core;
	kva_domains_init(a);
	kva_resize_init(a);
	a->core.dom_cached_max = c->domain_cached_max;
	if (!(c->flags & KVARENA_CREATE_NO_BACKING))
		a->nr_unready = c->nr_frames;
	a->backing = kvcalloc(table, sizeof(*a->backing), KVA_GFP_TABLE);
	if (!a->backing) {
		ret = -ENOMEM;
		goto err_fini_core;
	}
	if (c->mem_kind == KVARENA_MEM_HOST &&
	    !(c->flags & KVARENA_CREATE_NO_BACKING)) {
		/* Host memory the machine has not got cannot be pinned. */
		u64 ppf = c->frame_size >> PAGE_SHIFT;

		ret = -ENOMEM;
		if (c->nr_frames * ppf > totalram_pages())
			goto err_free_backing;
		a->pages = kvcalloc(table * ppf, sizeof(*a->pages),
				    KVA_GFP_TABLE);
		if (!a->pages)
			goto err_free_backing;
	}
	ret = kva_scrub_init(a);
	if (ret)
		goto err_free_backing;
	kva_kobject_init(&a->kobj, &kva_arena_ktype);
	atomic_inc(&kva_nr_arenas);
	/* From here on the kobject release frees the arena. */
	ret = kva_events_init(a);
	if (ret) {
		kobject_put(&a->kobj);
		return ret;
	}
	*out = a;
	return 0;

err_free_backing:
	kvfree(a->pages);
	kvfree(a->backing);
err_fini_core:
	kva_dmem_fini(a);
	kva_core_fini(&a->core);
err_free_arena:
	kfree(a);
	kva_table_unreserve(table_bytes);
	return ret;
}

/**
 * kva_arena_insert_locked() - make a made arena visible: its name, its
 * sysfs directory, the list (which owns the reference made with it).
 * @a:	the arena, from kva_arena_make().
 *
 * Return: 0, or -EEXIST (or a sysfs error); the caller then puts @a.
 */
int kva_arena_insert_locked(struct kva_arena *a)
{
	int ret;

	lockdep_assert_held(&kva_arenas_lock);
	if (kva_arena_find(a->name))
		return -EEXIST;
	ret = kva_sysfs_add_arena(a);
	if (ret)
		return ret;
	list_add_tail(&a->node, &kva_arenas);
	return 0;
}

long kva_ioc_arena_create(void __user *argp)
{
	struct kvarena_arena_create c;
	struct kva_arena *a;
	int ret;

	if (copy_from_user(&c, argp, sizeof(c)))
		return -EFAULT;
	ret = kva_check_create(&c);
	if (ret)
		return ret;
	if (!(c.flags & KVARENA_CREATE_ACCESS)) {
		c.owner_uid = from_kuid_munged(current_user_ns(), current_fsuid());
		c.owner_gid = from_kgid_munged(current_user_ns(), current_fsgid());
		c.mode = KVARENA_MODE_DEFAULT;
	}
	ret = kva_arena_make(&c, &a);
	if (ret)
		return ret;
	mutex_lock(&kva_arenas_lock);
	ret = kva_arena_insert_locked(a);
	mutex_unlock(&kva_arenas_lock);
	if (ret)
		kobject_put(&a->kobj);
	return ret;
}

/* Drop the backing references and the list's reference of a dead arena. */
static void kva_arena_kill(struct kva_arena *a)
{
	struct kva_arena *other;
	u32 i;

	lockdep_assert_held(&kva_arenas_lock);
	list_del(&a->node);
	kva_gang_kill(a);
	other = kva_tier_kill(a);
	if (other)
		kva_arena_put(other);
	mutex_lock(&a->lock);
	a->dead = true;
	kva_events_clear(a);
	kva_core_drop_cache(&a->core);
	a->nr_backed = 0;
	mutex_unlock(&a->lock);
	/* The clearing worker sees @dead and takes no more frames. */
	cancel_work_sync(&a->clear_work);
	kva_resize_kill(a);
	kva_dmem_kill(a);
	/*
	 * No client, no SET_BACKING in flight, no clearing, and no new ones:
	 * nothing can touch the pages or the files any more.
	 */
	kva_unpin_backing(a);
	for (i = 0; i < a->core.nr_frames; i++) {
		if (a->backing[i].file)
			fput(a->backing[i].file);
		a->backing[i].file = NULL;
		if (!(i % 4096))
			cond_resched();
	}
	kobject_del(&a->kobj);
	kobject_put(&a->kobj);
}

long kva_ioc_arena_destroy(void __user *argp)
{
	struct kvarena_arena_destroy d;
	struct kva_arena *a;
	int ret = 0;

	if (copy_from_user(&d, argp, sizeof(d)))
		return -EFAULT;
	if (kva_check_destroy(&d))
		return -EINVAL;

	mutex_lock(&kva_arenas_lock);
	a = kva_arena_find(d.name);
	if (!a) {
		ret = -ENOENT;
		goto out_unlock;
	}
	/* Clients attach under kva_arenas_lock, so this cannot go stale. */
	mutex_lock(&a->lock);
	/*
	 * A lower tier goes with its upper arena, or is taken away first;
	 * a member with its gang.
	 */
	if (a->nr_clients || a->backing_busy || kva_tier_busy(a) || a->gang)
		ret = -EBUSY;
	mutex_unlock(&a->lock);
	if (!ret)
		kva_arena_kill(a);
out_unlock:
	mutex_unlock(&kva_arenas_lock);
	return ret;
}

void kva_arenas_destroy_all(void)
{
	struct kva_arena *a, *tmp;

	mutex_lock(&kva_arenas_lock);
	list_for_each_entry_safe(a, tmp, &kva_arenas, node)
		kva_arena_kill(a);
	mutex_unlock(&kva_arenas_lock);
}

/*
 * A file arena's backing: a regular file of a filesystem on a block
 * device, or of tmpfs, that the agent reads and writes through FRAME_FD
 * (so open both ways: -EBADF), long enough for the range.  Not a pseudo
 * filesystem's (proc, sysfs, debugfs: their regular files are not
 * storage), nor one of kvarena's own files or an anonymous inode (whose
 * files are regular on Linux 6.15 and later).
 */
static int check_file_backing(struct file *file, u64 offset, u64 len)
{
	struct inode *inode = file_inode(file);
	struct super_block *sb = inode->i_sb;
	u64 end;

	if (!S_ISREG(inode->i_mode) || file->f_op == &kva_fops ||
	    sb->s_magic == KVA_FS_MAGIC || sb->s_magic == ANON_INODE_FS_MAGIC)
		return -EINVAL;
	if (!(sb->s_type->fs_flags & FS_REQUIRES_DEV) &&
	    sb->s_magic != TMPFS_MAGIC)
		return -EINVAL;
	if ((file->f_mode & (FMODE_READ | FMODE_WRITE)) !=
	    (FMODE_READ | FMODE_WRITE))
		return -EBADF;
	if (check_add_overflow(offset, len, &end) ||
	    end > (u64)i_size_read(inode))
		return -EINVAL;
	return 0;
}

/*
 * A backing file must be memory the runtime can map or import, and must not
 * be able to hold a reference back to a kvarena file: the module keeps it
 * until ARENA_DESTROY, and ARENA_DESTROY waits for every client to go.
 * Host memory: see kva_check_host_backing().  Device memory is whatever
 * file the GPU driver exports (a character device or an anonymous inode;
 * shmem for the driver's test double), so only what is obviously not
 * memory is refused: sockets (which can carry fds in flight), directories,
 * pipes, io_uring instances, kvarena's own files, and regular files of
 * any filesystem that is not memory.
 */
static int check_backing_file(struct kva_arena *a, struct file *file,
			      u64 offset, u32 nr_frames)
{
	struct inode *inode = file_inode(file);
	unsigned long magic = inode->i_sb->s_magic;
	u64 len;

	if (check_mul_overflow((u64)nr_frames, a->frame_size, &len))
		return -EINVAL;
	if (a->mem_kind == KVARENA_MEM_HOST)
		return kva_check_host_backing(a, file, offset, len);
	if (a->mem_kind == KVARENA_MEM_FILE)
		return check_file_backing(file, offset, len);
	/* cuMemMap() maps whole allocations: one per frame, from its start. */
	if (nr_frames != 1 || offset)
		return -EINVAL;
	if (file->f_op == &kva_fops || magic == KVA_FS_MAGIC ||
	    S_ISSOCK(inode->i_mode) || S_ISDIR(inode->i_mode) ||
	    S_ISFIFO(inode->i_mode) || S_ISLNK(inode->i_mode))
		return -EINVAL;
	if (S_ISREG(inode->i_mode) && magic != TMPFS_MAGIC &&
	    magic != HUGETLBFS_MAGIC)
		return -EINVAL;
	if (magic == ANON_INODE_FS_MAGIC &&
	    !strcmp(file->f_path.dentry->d_name.name, "[io_uring]"))
		return -EINVAL;
	return 0;
}

/* Frame @i of @a is in the arena (not absent); arena locked. */
static bool kva_frame_present(struct kva_arena *a, u32 i)
{
	lockdep_assert_held(&a->lock);
	return !(a->core.frames[i].flags & KVA_FRAME_ABSENT);
}

/*
 * Pin the pages of the frames of [@first, @first + @nr) that are in the
 * arena, a run at a time; on failure none stays pinned.  resize_lock
 * held: no frame comes in meanwhile, and none of these goes out - a
 * frame in the arena without backing keeps nr_unready up, and with it
 * every resize, so no shrink waits to take one.
 */
static int kva_pin_present(struct kva_arena *a, u32 first, u32 nr)
{
	u32 i = first, end = first + nr, run, j;
	int ret = 0;

	if (!a->pages)
		return 0;
	while (i < end && !ret) {
		mutex_lock(&a->lock);
		while (i < end && !kva_frame_present(a, i))
			i++;
		for (run = 0; i + run < end && kva_frame_present(a, i + run); run++)
			;
		mutex_unlock(&a->lock);
		if (!run)
			break;
		ret = kva_pin_backing(a, a->backing[i].file,
				      a->backing[i].offset, i, run);
		if (!ret)
			i += run;
	}
	if (ret)
		for (j = first; j < i; j++)
			kva_unpin_frame(a, j);
	return ret;
}

long kva_ioc_set_backing(void __user *argp)
{
	struct kvarena_set_backing b;
	struct kva_arena *a;
	struct file *file;
	u32 i;
	int ret;

	if (copy_from_user(&b, argp, sizeof(b)))
		return -EFAULT;
	if (kva_check_set_backing(&b))
		return -EINVAL;

	a = kva_arena_get(b.name);
	if (!a)
		return -ENOENT;
	/* A gang's memory is its members'; a member's is the gang's now. */
	if (a->members) {
		ret = -EOPNOTSUPP;
		goto err_put_arena;
	}
	if (a->flags & KVARENA_CREATE_NO_BACKING) {
		ret = -EINVAL;
		goto err_put_arena;
	}
	file = fget(b.fd);
	if (!file) {
		ret = -EBADF;
		goto err_put_arena;
	}
	ret = -EINVAL;
	if (b.first_frame >= a->core.nr_frames ||
	    b.nr_frames > a->core.nr_frames - b.first_frame)
		goto err_put_file;
	ret = check_backing_file(a, file, b.offset, b.nr_frames);
	if (ret)
		goto err_put_file;

	/*
	 * Claim the range under the lock, pin the pages of its frames that
	 * are in the arena without it (that can take a while), then count
	 * it as backed.  backing_busy keeps ARENA_DESTROY away meanwhile;
	 * ATTACH waits for nr_unready; resize_lock keeps frames from coming
	 * in or going out of the arena meanwhile (resize.c).
	 */
	mutex_lock(&a->resize_lock);
	mutex_lock(&a->lock);
	if (a->dead) {
		ret = -ENOENT;
		goto err_unlock;
	}
	if (a->gang) {
		ret = -EBUSY;
		goto err_unlock;
	}
	for (i = b.first_frame; i < b.first_frame + b.nr_frames; i++) {
		if (a->backing[i].file || kva_scrub_old_imports(a, i)) {
			ret = -EBUSY;
			goto err_unlock;
		}
	}
	for (i = 0; i < b.nr_frames; i++) {
		struct kva_backing *bk = &a->backing[b.first_frame + i];

		bk->file = get_file(file);
		bk->offset = b.offset + (u64)i * a->frame_size;
		bk->nr_refs = b.nr_frames;
	}
	a->backing_busy++;
	mutex_unlock(&a->lock);

	ret = kva_pin_present(a, b.first_frame, b.nr_frames);

	mutex_lock(&a->lock);
	a->backing_busy--;
	for (i = b.first_frame; i < b.first_frame + b.nr_frames; i++) {
		struct kva_backing *bk = &a->backing[i];

		if (ret) {
			fput(bk->file);
			bk->file = NULL;
		} else if (!(a->core.frames[i].flags & KVA_FRAME_ABSENT)) {
			a->nr_unready--;
		}
	}
	if (!ret)
		a->nr_backed += b.nr_frames;
err_unlock:
	mutex_unlock(&a->lock);
	mutex_unlock(&a->resize_lock);
err_put_file:
	fput(file);
err_put_arena:
	kva_arena_put(a);
	return ret;
}

long kva_ioc_set_policy(void __user *argp)
{
	struct kvarena_arena_policy p;
	struct kva_policy pol;
	struct kva_arena *a;
	int ret;

	if (copy_from_user(&p, argp, sizeof(p)))
		return -EFAULT;
	if (kva_check_policy(&p))
		return -EINVAL;
	a = kva_arena_get(p.name);
	if (!a)
		return -ENOENT;
	ret = kva_policy_from_user(&pol, p.owner_uid, p.owner_gid, p.mode,
				   p.client_min_limit, p.client_max_default,
				   p.client_max_limit, a->core.nr_frames);
	if (!ret) {
		pol.cache_domains = p.cache_domains;
		pol.domain_cached_max = p.domain_cached_max;
		mutex_lock(&a->lock);
		if (pol.domain_cached_max > a->core.nr_frames) {
			ret = -EINVAL;
		} else {
			a->policy = pol;
			kva_domains_set_cap(a, pol.domain_cached_max);
			kva_arena_update_pressure(a);
			kva_clear_kick(a);
		}
		mutex_unlock(&a->lock);
	}
	kva_arena_put(a);
	return ret;
}

/*
 * By name (-EACCES if the caller may not view it), or the @index-th arena
 * the caller may view, in creation order.
 */
static struct kva_arena *kva_arena_get_stat(struct kvarena_stat *s,
					    unsigned int how)
{
	struct kva_arena *a = NULL, *it;
	u32 i = 0;

	if (!(s->flags & KVARENA_STAT_BY_INDEX)) {
		a = kva_arena_get(s->name);
		if (a && !kva_arena_permits(a, KVARENA_ACC_VIEW, how)) {
			kva_arena_put(a);
			return ERR_PTR(-EACCES);
		}
		return a ? a : ERR_PTR(-ENOENT);
	}
	mutex_lock(&kva_arenas_lock);
	list_for_each_entry(it, &kva_arenas, node) {
		if (!kva_arena_permits(it, KVARENA_ACC_VIEW, how))
			continue;
		if (i++ == s->index) {
			a = it;
			kobject_get(&a->kobj);
			break;
		}
	}
	mutex_unlock(&kva_arenas_lock);
	return a ? a : ERR_PTR(-ENOENT);
}

/* STAT reads @name, @flags and @index, which come first, in two copies. */
static_assert(offsetof(struct kvarena_stat, index) ==
	      offsetof(struct kvarena_stat, flags) + sizeof(__u32));
static_assert(offsetof(struct kvarena_stat, max_frames) ==
	      KVARENA_STAT_SIZE_V1);

/*
 * @size: the struct's size in the command (KVARENA_STAT_SIZE_V1 for the
 * struct of before KVARENA_FEAT_RESIZE): that much is read and written.
 */
long kva_ioc_stat(struct kva_client *cl, void __user *argp, size_t size,
		  unsigned int how)
{
	struct kvarena_stat s = { 0 };
	struct kva_figures f;
	struct kva_arena *a;

	/* Only these are read; every other field is written. */
	if (copy_from_user(s.name, argp, sizeof(s.name)) ||
	    copy_from_user(&s.flags,
			   argp + offsetof(struct kvarena_stat, flags),
			   sizeof(s.flags) + sizeof(s.index)))
		return -EFAULT;
	if (kva_check_stat(&s))
		return -EINVAL;

	a = kva_arena_get_stat(&s, how);
	if (IS_ERR(a))
		return PTR_ERR(a);
	memset(s.name, 0, sizeof(s.name));
	strscpy(s.name, a->name, sizeof(s.name));
	s.frame_size = a->frame_size;
	s.bytes_per_token = a->bytes_per_token;
	s.low_watermark = a->low_watermark;
	s.mem_kind = a->mem_kind;
	s.mem_dev = a->mem_dev;
	memcpy(s.mem_uuid, a->mem_uuid, sizeof(s.mem_uuid));

	mutex_lock(&a->lock);
	s.max_frames = a->core.nr_frames;
	s.nr_frames = a->core.nr_frames - a->core.nr_absent;
	s.nr_absent = a->core.nr_absent;
	s.nr_shrinking = a->core.shrink_pending;
	s.frames_retired = a->core.frames_retired;
	s.tier = kva_tier_name(a, s.tier_name);
	s.nr_backed = a->nr_backed;
	s.state = a->pressure ? KVARENA_STATE_PRESSURE : 0;
	if (a->flags & KVARENA_CREATE_NO_BACKING)
		s.state |= KVARENA_STATE_NO_BACKING;
	/* The figures as this viewer may see them (figures.c). */
	kva_figures(a, kva_viewer_domain(a, cl, how), &f);
	s.domain = f.domain;
	s.nr_free = f.free;
	s.nr_held = f.held;
	s.nr_cached = f.cached;
	s.dom_cached = f.cached;
	s.nr_published = f.published;
	s.cache_hits = f.hits;
	s.cache_misses = f.misses;
	s.cache_reclaims = f.reclaims;
	s.nr_reserved = f.reserved;
	s.nr_clients = f.clients;
	s.peak_held = f.peak_held;
	s.filled_bytes = f.filled_bytes;
	s.filled_tokens = f.filled_tokens;
	s.alloc_calls = f.alloc_calls;
	s.free_calls = f.free_calls;
	s.alloc_failures = f.alloc_failures;
	s.frames_allocated = f.frames_allocated;
	s.frames_freed = f.frames_freed;
	s.nr_dirty = f.dirty;
	s.frames_cleared = f.frames_cleared;
	if (!f.domain)
		s.nr_quarantined = kva_scrub_quarantined(a);
	s.owner_uid = from_kuid_munged(current_user_ns(), a->policy.uid);
	s.owner_gid = from_kgid_munged(current_user_ns(), a->policy.gid);
	s.mode = a->policy.mode;
	s.client_min_limit = a->policy.client_min_limit;
	s.client_max_default = a->policy.client_max_default;
	s.client_max_limit = a->policy.client_max_limit;
	s.cache_domains = a->policy.cache_domains;
	s.domain_cached_max = a->policy.domain_cached_max;
	mutex_unlock(&a->lock);
	kva_arena_put(a);

	return copy_to_user(argp, &s, size) ? -EFAULT : 0;
}
