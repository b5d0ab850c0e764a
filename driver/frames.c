// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: the memory of host arenas, and the revocable per-client
 * mappings that FRAME_FD hands out.
 *
 * Pinning.  ARENA_SET_BACKING pins every page of the registered range of
 * the backing file (shmem or hugetlbfs) for as long as the arena lives,
 * the way a GPU's memory is resident: the module maps those pages by PFN
 * and must know that they stay where they are.  The pages stay the
 * backing file's own; nothing is copied.
 *
 * Mapping.  Each client gets one file of its own on a small pseudo
 * filesystem (the "frames file"), with its own inode and so its own
 * address_space, as DRM gives each object a fake offset.  Frame i lies at
 * offset i * frame_size of it; mmap() of a range succeeds only over frames
 * the client holds, read-write only where it holds them alone.  Faults map
 * the pinned pages by PFN (VM_PFNMAP), a whole frame's part of the VMA at
 * once, so get_user_pages(), vmsplice() and friends cannot take a page
 * reference that would outlive the client's hold.  When the client frees a
 * frame, or is released, the module zaps that range of the client's own
 * address_space: the next touch is SIGBUS, and another client's mapping of
 * the same memory is not disturbed.
 *
 * Locking: fault -> fmap->sem (read) -> arena->lock, to ask the core;
 * revocation holds fmap->sem for writing while the core drops the frames,
 * so that no fault that saw a frame as held can still be inserting PTEs
 * when the zap runs after it.  The zap itself runs with no lock of ours.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hugetlb.h>
#include <linux/magic.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/sched/mm.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>

#include "compat.h"
#include "kva.h"

static struct vfsmount *kva_mnt;

static int kva_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, KVA_FS_MAGIC) ? 0 : -ENOMEM;
}

/* Never registered: it exists only as kva_mnt, for the frames files. */
static struct file_system_type kva_fs_type = {
	.name		 = "kvarena",
	.init_fs_context = kva_fs_init_fs_context,
	.kill_sb	 = kill_anon_super,
};

int kva_frames_init(void)
{
	kva_mnt = kern_mount(&kva_fs_type);
	return PTR_ERR_OR_ZERO(kva_mnt);
}

/* Every frames file holds a module reference: none is left. */
void kva_frames_exit(void)
{
	kern_unmount(kva_mnt);
}

/* ---- backing: which files, and pinning their pages ---------------------- */

static unsigned int kva_file_seals(struct file *file)
{
	struct inode *inode = file_inode(file);

	if (inode->i_sb->s_magic == TMPFS_MAGIC)
		return SHMEM_I(inode)->seals;
#ifdef CONFIG_HUGETLBFS
	if (inode->i_sb->s_magic == HUGETLBFS_MAGIC)
		return HUGETLBFS_I(inode)->seals;
#endif
	return 0;
}

static bool kva_file_mappable(struct file *file)
{
#ifdef KVA_HAVE_MMAP_PREPARE
	if (file->f_op->mmap_prepare)
		return true;
#endif
	return file->f_op->mmap;
}

/**
 * kva_check_host_backing() - is @file memory a host arena can use?
 * @a:		the arena.
 * @file:	the candidate.
 * @offset:	where the range starts in it.
 * @len:	bytes of the range.
 *
 * Host memory is a shmem (memfd, tmpfs) or hugetlbfs file, open for
 * reading and writing, mappable, long enough, and sealed against
 * shrinking, so that nobody can take pages from under a mapping.
 * hugetlbfs ranges start and frames end on huge page boundaries.
 *
 * Return: 0 or -EINVAL.
 */
int kva_check_host_backing(struct kva_arena *a, struct file *file,
			   u64 offset, u64 len)
{
	struct inode *inode = file_inode(file);
	unsigned long magic = inode->i_sb->s_magic;
	u64 end;

	if (!S_ISREG(inode->i_mode) ||
	    (magic != TMPFS_MAGIC && magic != HUGETLBFS_MAGIC) ||
	    !kva_file_mappable(file) ||
	    (file->f_mode & (FMODE_READ | FMODE_WRITE)) !=
	    (FMODE_READ | FMODE_WRITE))
		return -EINVAL;
	if (!(kva_file_seals(file) & F_SEAL_SHRINK))
		return -EINVAL;
	if (check_add_overflow(offset, len, &end) ||
	    end > (u64)i_size_read(inode))
		return -EINVAL;
#ifdef CONFIG_HUGETLBFS
	if (magic == HUGETLBFS_MAGIC) {
		u64 hsize = huge_page_size(hstate_file(file));

		if (offset % hsize || a->frame_size % hsize)
			return -EINVAL;
	}
#endif
	return 0;
}

/*
 * Pages pinned per window: the file is mapped into the caller's address
 * space a window at a time, so that the page tables GUP builds stay small
 * whatever the arena's size.
 */
#define KVA_PIN_WINDOW	(64ul << 20)
#define KVA_PIN_BATCH	512

static void kva_unpin(struct page **pages, unsigned long n)
{
	unsigned long done;

	/* In batches: a big arena would otherwise hog the CPU. */
	for (done = 0; done < n; done += KVA_PIN_BATCH) {
		unpin_user_pages_dirty_lock(pages + done,
					    min_t(unsigned long, KVA_PIN_BATCH,
						  n - done), true);
		cond_resched();
	}
}

/**
 * kva_pin_backing() - pin the pages of frames [@first, @first + @nr) of
 * @a, which are @file from @offset on, into a->pages.
 * @a:		the arena (a host arena; a->pages allocated).
 * @file:	the backing file, checked by kva_check_host_backing().
 * @offset:	byte offset of frame @first in @file.
 * @first:	first frame.
 * @nr:		frames.
 *
 * Runs in the caller's context (ARENA_SET_BACKING over ioctl()): maps
 * @file into the caller's address space a window at a time and pins the
 * pages with FOLL_LONGTERM, which also allocates any not yet allocated
 * (charged to the caller's memory cgroup).  Nothing is left pinned or
 * mapped on error.
 *
 * Return: 0 or a negative errno.
 */
int kva_pin_backing(struct kva_arena *a, struct file *file, u64 offset,
		    u32 first, u32 nr)
{
	unsigned long ppf = a->frame_size >> PAGE_SHIFT;
	unsigned long total = nr * ppf, done = 0;
	struct page **pages = a->pages + (unsigned long)first * ppf;
	unsigned long window = max_t(unsigned long, KVA_PIN_WINDOW,
				     a->frame_size);
	int ret = 0;

	if (!current->mm)
		return -EINVAL;
	while (done < total) {
		unsigned long len = min(window, (total - done) << PAGE_SHIFT);
		unsigned long addr, off;

		addr = vm_mmap(file, 0, len, PROT_READ | PROT_WRITE,
			       MAP_SHARED, offset + (done << PAGE_SHIFT));
		if (IS_ERR_VALUE(addr)) {
			ret = (int)addr;
			break;
		}
		for (off = 0; off < len && !ret; ) {
			int n = min_t(unsigned long, KVA_PIN_BATCH,
				      (len - off) >> PAGE_SHIFT);
			int got = pin_user_pages_fast(addr + off, n,
						      FOLL_WRITE | FOLL_LONGTERM,
						      pages + done);

			if (got > 0) {
				done += got;
				off += (unsigned long)got << PAGE_SHIFT;
			}
			if (got != n)
				ret = got < 0 ? got : -EFAULT;
			cond_resched();
		}
		vm_munmap(addr, len);
		if (ret)
			break;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
	}
	if (ret) {
		kva_unpin(pages, done);
		memset(pages, 0, done * sizeof(*pages));
	}
	return ret;
}

/**
 * kva_unpin_frame() - drop the pins of frame @idx's pages, which no client
 * can reach (absent, or never in the arena).
 * @a:		the host arena.
 * @idx:	the frame.
 */
void kva_unpin_frame(struct kva_arena *a, u32 idx)
{
	unsigned long ppf = a->frame_size >> PAGE_SHIFT;
	struct page **p = a->pages + (unsigned long)idx * ppf;

	if (!p[0])
		return;
	kva_unpin(p, ppf);
	memset(p, 0, ppf * sizeof(*p));
}

/* Drop the pins of every backed frame; the arena is dying. */
void kva_unpin_backing(struct kva_arena *a)
{
	u32 i;

	if (!a->pages)
		return;
	for (i = 0; i < a->core.nr_frames; i++)
		kva_unpin_frame(a, i);
	kvfree(a->pages);
	a->pages = NULL;
}

/* ---- the frames file ----------------------------------------------------- */

/*
 * One per client, made at its ATTACH.  It can outlive the client (open
 * fds, mappings): then @cl is NULL and every fault is SIGBUS.  A client
 * of a gang has one frames file per member arena, which map that
 * member's memory (@view[r], the private data of file r) under one
 * semaphore, so that revocation holds off every member's faults at once;
 * a solo client has one view.  The files hold @refs.
 */
struct kva_fmap;

struct kva_fmap_view {
	struct kva_fmap *fm;
	struct page **pages;		/* the memory: a->pages, or a member's */
};

struct kva_fmap {
	struct kva_arena *arena;	/* a reference */
	struct kva_client *cl;		/* arena->lock; NULL once released */
	bool evicted;			/* arena->lock; its client was */
	struct rw_semaphore sem;	/* faults read, revocation writes */
	refcount_t refs;		/* files made of it */
	u32 nr_views;
	struct kva_fmap_view view[];
};

static struct kva_fmap *fmap_of(struct file *file)
{
	return ((struct kva_fmap_view *)file->private_data)->fm;
}

static vm_fault_t kva_fmap_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct kva_fmap_view *view = vma->vm_file->private_data;
	struct kva_fmap *fm = view->fm;
	struct kva_arena *a = fm->arena;
	unsigned long ppf = a->frame_size >> PAGE_SHIFT;
	unsigned long idx = vmf->pgoff / ppf;
	unsigned long first, last, pg;
	enum kva_access acc = KVA_ACCESS_NONE;
	vm_fault_t ret = VM_FAULT_SIGBUS;
	pgprot_t prot;

	down_read(&fm->sem);
	mutex_lock(&a->lock);
	if (fm->cl && idx < a->core.nr_frames)
		acc = kva_frame_access(a, fm->cl, idx);
	mutex_unlock(&a->lock);
	if (acc == KVA_ACCESS_NONE ||
	    ((vmf->flags & FAULT_FLAG_WRITE) && acc != KVA_ACCESS_WRITE))
		goto out;

	/*
	 * A frame shared with others is read-only, whatever the VMA says.
	 * One the client may write is mapped writable at once, as the VMA
	 * allows: vm_page_prot lacks the write bit (pfn_mkwrite asks for
	 * write notifications), which would cost a second fault for every
	 * page written.  The PTEs go whenever the right goes - PUBLISH,
	 * FREE and revocation zap them - so the next touch asks again.
	 */
	prot = vm_get_page_prot(acc == KVA_ACCESS_WRITE ? vma->vm_flags :
				vma->vm_flags & ~(VM_WRITE | VM_MAYWRITE));
	/* The whole frame's part of this VMA: one fault per frame. */
	first = max(idx * ppf, vma->vm_pgoff);
	last = min((idx + 1) * ppf, vma->vm_pgoff + vma_pages(vma));
	ret = VM_FAULT_NOPAGE;
	for (pg = first; pg < last; pg++) {
		unsigned long addr = vma->vm_start +
				     ((pg - vma->vm_pgoff) << PAGE_SHIFT);
		vm_fault_t r = vmf_insert_pfn_prot(vma, addr,
						   page_to_pfn(view->pages[pg]),
						   prot);

		/* Only the page asked for must succeed; others can refault. */
		if ((r & VM_FAULT_ERROR) && pg == vmf->pgoff) {
			ret = r;
			break;
		}
	}
out:
	up_read(&fm->sem);
	return ret;
}

/*
 * A write through a read-only PTE of a writable mapping: a frame that was
 * published, and so became read-only, after the mapping was made.  The
 * kernel would make the PTE writable by itself (a shared PFN mapping has
 * no page to copy); it may only while the client may still write.
 */
static vm_fault_t kva_fmap_pfn_mkwrite(struct vm_fault *vmf)
{
	struct kva_fmap *fm = fmap_of(vmf->vma->vm_file);
	struct kva_arena *a = fm->arena;
	unsigned long idx = vmf->pgoff / (a->frame_size >> PAGE_SHIFT);
	enum kva_access acc = KVA_ACCESS_NONE;

	down_read(&fm->sem);
	mutex_lock(&a->lock);
	if (fm->cl && idx < a->core.nr_frames)
		acc = kva_frame_access(a, fm->cl, idx);
	mutex_unlock(&a->lock);
	up_read(&fm->sem);
	return acc == KVA_ACCESS_WRITE ? 0 : VM_FAULT_SIGBUS;
}

static const struct vm_operations_struct kva_fmap_vm_ops = {
	.fault = kva_fmap_fault,
	.pfn_mkwrite = kva_fmap_pfn_mkwrite,
};

/*
 * Only MAP_SHARED, only frames the client holds, writable only where it
 * holds them alone, never executable: -EINVAL for a private mapping or a
 * range past the arena, -EACCES for a frame the client does not hold (any
 * more) or PROT_WRITE over a frame it shares, -EPERM for PROT_EXEC,
 * -ESHUTDOWN once an administrator evicted the client (as for its
 * commands: what it held is gone, and so is the client).
 */
static int kva_fmap_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct kva_fmap *fm = fmap_of(file);
	struct kva_arena *a = fm->arena;
	unsigned long ppf = a->frame_size >> PAGE_SHIFT;
	unsigned long start = vma->vm_pgoff, pages = vma_pages(vma), end, i;
	bool shared_frame = false;
	int ret = 0;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	/* KV is data: never code. */
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	if (check_add_overflow(start, pages, &end) ||
	    end > (unsigned long)a->core.nr_frames * ppf)
		return -EINVAL;

	mutex_lock(&a->lock);
	if (fm->evicted)
		ret = -ESHUTDOWN;
	for (i = start / ppf; !ret && i <= (end - 1) / ppf; i++) {
		enum kva_access acc = KVA_ACCESS_NONE;

		if (fm->cl)
			acc = kva_frame_access(a, fm->cl, i);
		if (acc == KVA_ACCESS_NONE ||
		    (acc != KVA_ACCESS_WRITE && (vma->vm_flags & VM_WRITE))) {
			ret = -EACCES;
			break;
		}
		shared_frame |= acc != KVA_ACCESS_WRITE;
	}
	mutex_unlock(&a->lock);
	if (ret)
		return ret;

	kva_vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
	kva_vm_flags_clear(vma, VM_MAYEXEC);
	if (shared_frame)
		kva_vm_flags_clear(vma, VM_MAYWRITE);
	vma->vm_ops = &kva_fmap_vm_ops;
	return 0;
}

static int kva_fmap_release(struct inode *inode, struct file *file)
{
	struct kva_fmap *fm = fmap_of(file);

	if (refcount_dec_and_test(&fm->refs)) {
		kva_arena_put(fm->arena);
		kfree(fm);
	}
	return 0;
}

/* No read, write, fallocate or truncate: a frames file only maps. */
static const struct file_operations kva_fmap_fops = {
	.owner		= THIS_MODULE,
	.mmap		= kva_fmap_mmap,
	.release	= kva_fmap_release,
	.llseek		= noop_llseek,
};

/* A file of @view, holding a reference of fm->refs (taken by the caller). */
static struct file *fmap_file_new(struct kva_fmap_view *view)
{
	struct inode *inode;
	struct file *file;

	inode = alloc_anon_inode(kva_mnt->mnt_sb);
	if (IS_ERR(inode))
		return ERR_CAST(inode);
	/* The file's release (fops_put()) drops this. */
	if (!try_module_get(THIS_MODULE)) {
		iput(inode);
		return ERR_PTR(-ENODEV);
	}
	file = alloc_file_pseudo(inode, kva_mnt, "kvarena-frames", O_RDWR,
				 &kva_fmap_fops);
	if (IS_ERR(file)) {
		module_put(THIS_MODULE);
		iput(inode);
		return file;
	}
	file->private_data = view;
	return file;
}

/*
 * Files for the views of a new fmap over @pages[0..n): each its own
 * inode and address_space.  On error nothing is left.
 */
static int fmap_make(struct kva_client *cl, struct kva_arena *a,
		     struct page **const *pages, u32 n, struct file **files)
{
	struct kva_fmap *fm;
	u32 i;

	fm = kzalloc(struct_size(fm, view, n), GFP_KERNEL_ACCOUNT);
	if (!fm)
		return -ENOMEM;
	init_rwsem(&fm->sem);
	/* Held by the maker until every file is made. */
	refcount_set(&fm->refs, 1);
	kobject_get(&a->kobj);
	fm->arena = a;
	fm->cl = cl;
	fm->nr_views = n;
	for (i = 0; i < n; i++) {
		fm->view[i].fm = fm;
		fm->view[i].pages = pages[i];
		refcount_inc(&fm->refs);
		files[i] = fmap_file_new(&fm->view[i]);
		if (IS_ERR(files[i])) {
			int ret = PTR_ERR(files[i]);

			refcount_dec(&fm->refs);
			while (i--)
				fput(files[i]);
			/* The files' releases may run later (fput is deferred). */
			if (refcount_dec_and_test(&fm->refs)) {
				kva_arena_put(a);
				kfree(fm);
			}
			return ret;
		}
	}
	if (refcount_dec_and_test(&fm->refs))
		WARN_ON_ONCE(1);	/* the files hold it */
	return 0;
}

/**
 * kva_fmap_create() - give a client of a host arena its frames file.
 * @cl:	the client, being attached to @a (not yet visible to others).
 * @a:	the arena.
 *
 * Made at ATTACH, so that cl->fmap_file is constant for the client's
 * life and the FREE path never races with its creation.
 *
 * Return: 0 or a negative errno.
 */
int kva_fmap_create(struct kva_client *cl, struct kva_arena *a)
{
	return fmap_make(cl, a, &a->pages, 1, &cl->fmap_file);
}

/**
 * kva_fmap_create_gang() - give a client of a gang of host arenas one
 * frames file per member (cl->gang_fmaps), each mapping that member's
 * memory.
 * @cl:	the client, being attached to gang @a.
 * @a:	the gang.
 *
 * Return: 0 or a negative errno.
 */
int kva_fmap_create_gang(struct kva_client *cl, struct kva_arena *a)
{
	struct page **pages[KVARENA_GANG_MAX];
	struct file **files;
	u32 r;
	int ret;

	files = kcalloc(a->nr_members, sizeof(*files), GFP_KERNEL_ACCOUNT);
	if (!files)
		return -ENOMEM;
	for (r = 0; r < a->nr_members; r++)
		pages[r] = kva_member_pages(a, r);
	ret = fmap_make(cl, a, pages, a->nr_members, files);
	if (ret) {
		kfree(files);
		return ret;
	}
	cl->gang_fmaps = files;
	return 0;
}

/**
 * kva_fmap_files() - the client's frames files (none, its one, or one per
 * member of its gang), without references.
 * @cl:		the client.
 * @files:	KVARENA_GANG_MAX entries.
 *
 * Return: how many.
 */
u32 kva_fmap_files(struct kva_client *cl, struct file **files)
{
	u32 r, n = 0;

	if (cl->fmap_file)
		files[n++] = cl->fmap_file;
	if (cl->gang_fmaps)
		for (r = 0; r < fmap_of(cl->gang_fmaps[0])->nr_views; r++)
			files[n++] = cl->gang_fmaps[r];
	return n;
}

/* The client's files go (its release, or an ATTACH undone). */
void kva_fmap_put_all(struct kva_client *cl)
{
	struct file *files[KVARENA_GANG_MAX];
	u32 i, n = kva_fmap_files(cl, files);

	for (i = 0; i < n; i++)
		fput(files[i]);
	cl->fmap_file = NULL;
	kfree(cl->gang_fmaps);
	cl->gang_fmaps = NULL;
}

/*
 * Revocation.  Whatever takes frames away from a client - FREE, an ALLOC
 * or LOOKUP undone, PUBLISH (its frames turn read-only), EVICT, release -
 * does it in this order, so that no frame is ever reachable through a PTE
 * of a client that no longer holds it (or may no longer write it), not
 * even for an instant:
 *
 *   kva_fmap_revoke_begin()   faults held off (fm->sem, for writing)
 *   kva_fmap_zap()            the client's PTEs of those frames gone
 *   arena->lock, the core's change, unlock
 *   kva_fmap_revoke_end()     faults let in again: they ask the core
 *
 * The zap comes before the core can hand the frame on (or make it
 * findable); a fault that comes meanwhile waits for the semaphore and
 * then finds the frame no longer the client's.  Zapping a frame the core
 * then keeps with the client (a FREE refused) costs a refault, nothing
 * more.  unmap_mapping_range() takes the mapping's i_mmap lock and the
 * page-table locks, never mmap_lock, so it may run under fm->sem, which
 * faults take inside mmap_lock.
 */

/**
 * kva_fmap_revoke_begin() - hold off the client's faults while the core
 * takes frames away from it; pairs with kva_fmap_revoke_end().
 * @cl:		the client.
 * @nonblock:	do not sleep: return -EAGAIN if the lock is busy, or if
 *		the client has any mapping that would need zapping.
 *
 * Return: 0 or -EAGAIN.
 */
int kva_fmap_revoke_begin(struct kva_client *cl, bool nonblock)
{
	struct file *files[KVARENA_GANG_MAX];
	u32 i, n = kva_fmap_files(cl, files);
	struct kva_fmap *fm;

	if (!n)
		return 0;
	fm = fmap_of(files[0]);
	if (!nonblock) {
		down_write(&fm->sem);
		return 0;
	}
	if (!down_write_trylock(&fm->sem))
		return -EAGAIN;
	/*
	 * With the sem held no fault can insert, and PTEs exist only in
	 * VMAs already linked: a file nobody maps needs no zap.
	 */
	for (i = 0; i < n; i++) {
		if (mapping_mapped(files[i]->f_mapping)) {
			up_write(&fm->sem);
			return -EAGAIN;
		}
	}
	return 0;
}

/* Zap frame @idx (or all) of one frames file. */
static void fmap_zap_file(struct file *file, u64 fs, u32 idx)
{
	struct address_space *mapping = file->f_mapping;

	if (!mapping_mapped(mapping))
		return;
	if (idx == KVA_FMAP_ALL)
		unmap_mapping_range(mapping, 0, 0, 1);
	else
		unmap_mapping_range(mapping, (loff_t)idx * fs, fs, 1);
}

/**
 * kva_fmap_zap() - remove every PTE the client has of frame @idx, or of
 * every frame for KVA_FMAP_ALL, through any of its frames files (every
 * member's, and so every rank's, for a client of a gang); between
 * kva_fmap_revoke_begin() and the core's change, without arena->lock.
 * @cl:		the client.
 * @idx:	the frame (any u32: one past the arena zaps nothing).
 */
void kva_fmap_zap(struct kva_client *cl, u32 idx)
{
	struct file *files[KVARENA_GANG_MAX];
	u32 i, n = kva_fmap_files(cl, files);

	for (i = 0; i < n; i++)
		fmap_zap_file(files[i], cl->arena->frame_size, idx);
}

/**
 * kva_fmap_revoke_end() - let the client's faults in again.
 * @cl:		the client.
 *
 * Call after the core's change, without arena->lock.
 */
void kva_fmap_revoke_end(struct kva_client *cl)
{
	struct file *files[KVARENA_GANG_MAX];

	if (kva_fmap_files(cl, files))
		up_write(&fmap_of(files[0])->sem);
}

/*
 * Revocation by someone else than the client (EVICT): hold off the faults
 * of the client whose frames files @files[0..n) are (references the
 * caller holds) and zap all they map, before the core takes its
 * frames...
 */
void kva_fmap_lock_zap(struct file **files, u32 n)
{
	u32 i;

	down_write(&fmap_of(files[0])->sem);
	for (i = 0; i < n; i++)
		unmap_mapping_range(files[i]->f_mapping, 0, 0, 1);
}

/* ...then let them in again: they find nothing of the client's. */
void kva_fmap_unlock(struct file *file)
{
	up_write(&fmap_of(file)->sem);
}

/* The client is being released: no fault may map anything again. */
void kva_fmap_detach(struct kva_client *cl)
{
	struct file *files[KVARENA_GANG_MAX];

	lockdep_assert_held(&cl->arena->lock);
	if (kva_fmap_files(cl, files))
		fmap_of(files[0])->cl = NULL;
}

/* ...by an administrator's EVICT: an mmap() is refused as it was. */
void kva_fmap_evicted(struct file *file)
{
	struct kva_fmap *fm = fmap_of(file);

	lockdep_assert_held(&fm->arena->lock);
	fm->evicted = true;
}
