// SPDX-License-Identifier: MIT
/*
 * The host VMM backend: frames are page ranges of memfd (shmem) files.
 *
 * A sequence's range is reserved as PROT_NONE anonymous memory; mapping a
 * frame is mmap(MAP_FIXED | MAP_SHARED) of its file range over part of the
 * reservation, and unmapping puts PROT_NONE anonymous memory back, so the
 * range stays ours throughout (never a hole another mmap could land in).
 *
 * Embedded arenas own one memfd for all frames.  Device arenas learn each
 * frame's file and offset once, with FRAME_FD, and keep one fd per
 * distinct file: the module gives each client one frames file, in which a
 * frame's offset never changes, so every later mapping of that frame is a
 * plain mmap with no ioctl.  The module zaps such a mapping when the frame
 * is freed; the runtime has always unmapped it before.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23	/* Linux 5.14 */
#endif
#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB	(21 << 26)
#endif

#define HUGE_2M		(2ull << 20)

struct host_file {
	int fd;
	dev_t dev;
	ino_t ino;
};

struct kva_host {
	struct host_file *files;
	uint32_t nr_files;
	int map_flags;
};

static struct kva_host *host(struct kva_arena *a)
{
	return a->vmm_priv;
}

static int fail(struct kva_arena *a, int err)
{
	if (a)
		a->backend_error = err;
	return -err;
}

/*
 * Allocate and clear every page of @fd now.  First touch of a shmem page
 * allocates and zeroes it (1-2.5 GB/s here); fallocate() alone only
 * allocates, leaving the zeroing to the first fault.  Writing through a
 * temporary mapping (MADV_POPULATE_WRITE, or a store per page before
 * Linux 5.14) makes every later fault a minor one, and lets
 * KVA_OPEN_POPULATE map frames with no fault at all.
 */
static int prefault(int fd, uint64_t size, uint32_t flags)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), off;
	char *p;
	int ret = 0;

	/*
	 * hugetlb: reserve first, so that a short pool fails here cleanly
	 * (-ENOSPC) rather than by SIGBUS at first touch.
	 */
	if ((flags & KVA_OPEN_HUGETLB) && fallocate(fd, 0, 0, (off_t)size))
		return -errno;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (madvise(p, size, MADV_POPULATE_WRITE)) {
		if (errno != EINVAL) {
			ret = -errno;
		} else if (fallocate(fd, 0, 0, (off_t)size)) {
			ret = -errno;
		} else {
			if (flags & KVA_OPEN_HUGETLB)
				page = HUGE_2M;
			for (off = 0; off < size; off += page)
				((volatile char *)p)[off] = 0;
		}
	}
	munmap(p, size);
	return ret;
}

/* One memfd of @size bytes, pre-faulted if asked. */
/* A memfd of @size bytes, its first @used allocated if @flags say so. */
static int host_memfd(const char *name, uint64_t size, uint64_t used,
		      uint32_t flags, int *out)
{
	char label[64];
	unsigned int mfd = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	int fd, ret;

	if (flags & KVA_OPEN_HUGETLB)
		mfd |= MFD_HUGETLB | MFD_HUGE_2MB;
	snprintf(label, sizeof(label), "kvarena:%s", name);
	ret = KVA_FAULT("host.memfd");
	if (ret)
		return ret;
	fd = memfd_create(label, mfd);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size)) {
		ret = -errno;
		goto err_close;
	}
	if (flags & (KVA_OPEN_PREFAULT | KVA_OPEN_HUGETLB)) {
		ret = prefault(fd, used, flags);
		if (ret)
			goto err_close;
	}
	/*
	 * The module takes only memory nobody can shrink under a mapping
	 * (and the embedded arena keeps to the same rule).
	 */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW)) {
		ret = -errno;
		goto err_close;
	}
	*out = fd;
	return 0;

err_close:
	close(fd);
	return ret;
}

static int check_flags(uint64_t frame_size, uint32_t flags)
{
	if ((flags & KVA_OPEN_HUGETLB) && frame_size % HUGE_2M)
		return -EINVAL;
	return 0;
}

static int host_init(struct kva_arena *a, const struct kva_open_opts *o)
{
	struct kva_host *h;
	int ret, fd;

	ret = check_flags(a->frame_size, a->flags);
	if (ret)
		return ret;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->map_flags = MAP_SHARED | MAP_FIXED;
	if (a->flags & KVA_OPEN_POPULATE)
		h->map_flags |= MAP_POPULATE;

	if (a->mode == KVA_MODE_EMBEDDED) {
		h->files = calloc(1, sizeof(*h->files));
		if (!h->files) {
			ret = -ENOMEM;
			goto err_free;
		}
		ret = host_memfd(a->name, a->frame_size * a->nr_frames,
				 a->frame_size * a->nr_frames,
				 a->flags, &fd);
		if (ret)
			goto err_free;
		h->files[0].fd = fd;
		h->nr_files = 1;
	}
	a->vmm_priv = h;
	return 0;

err_free:
	free(h->files);
	free(h);
	return ret;
}

static void host_fini(struct kva_arena *a)
{
	struct kva_host *h = host(a);
	uint32_t i;

	for (i = 0; i < h->nr_files; i++)
		close(h->files[i].fd);
	free(h->files);
	free(h);
	a->vmm_priv = NULL;
}

/* Device mode: which file, and where in it, is frame @idx? */
static int host_resolve(struct kva_arena *a, uint32_t idx)
{
	struct kva_frame_rec *f = &a->frames[idx];
	struct kva_host *h = host(a);
	struct host_file *files;
	uint64_t offset;
	struct stat st;
	uint32_t i;
	int fd, ret;

	if (a->mode == KVA_MODE_EMBEDDED) {
		f->file = 0;
		f->mem = (uint64_t)idx * a->frame_size;
		f->flags |= FRAME_RESOLVED;
		return 0;
	}

	ret = a->prov->frame_fd(a, f->handle, &fd, &offset);
	if (ret)
		return ret;
	if (fstat(fd, &st)) {
		ret = fail(a, errno);
		goto err_close;
	}
	if (offset % (uint64_t)sysconf(_SC_PAGESIZE)) {
		ret = -EPROTO;
		goto err_close;
	}
	for (i = 0; i < h->nr_files; i++)
		if (h->files[i].dev == st.st_dev && h->files[i].ino == st.st_ino)
			break;
	if (i < h->nr_files) {
		close(fd);
	} else {
		files = realloc(h->files, (i + 1) * sizeof(*files));
		if (!files) {
			ret = -ENOMEM;
			goto err_close;
		}
		h->files = files;
		h->files[i] = (struct host_file){ fd, st.st_dev, st.st_ino };
		h->nr_files++;
	}
	f->file = i;
	f->mem = offset;
	f->flags |= FRAME_RESOLVED;
	return 0;

err_close:
	close(fd);
	return ret;
}

/* A PROT_NONE range aligned to the frame size (huge pages need it). */
static int host_reserve(struct kva_arena *a, uint64_t size, uint64_t *va)
{
	uint64_t align = a->frame_size, start, end, base;
	void *p;
	int ret;

	ret = KVA_FAULT("host.reserve");
	if (ret)
		return ret;
	p = mmap(NULL, size + align, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return fail(a, errno);
	start = (uint64_t)(uintptr_t)p;
	base = (start + align - 1) & ~(align - 1);
	end = start + size + align;
	if (base > start)
		munmap(p, base - start);
	if (end > base + size)
		munmap((void *)(uintptr_t)(base + size), end - base - size);
	*va = base;
	return 0;
}

static void host_release(struct kva_arena *a, uint64_t va, uint64_t size)
{
	munmap((void *)(uintptr_t)va, size);
}

/* Put reservation back over [va, va + len). */
static int host_unmap_bytes(struct kva_arena *a, uint64_t va, uint64_t len)
{
	void *p;
	int ret;

	ret = KVA_FAULT("host.unmap");
	if (ret)
		return ret;
	p = mmap((void *)(uintptr_t)va, len, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? fail(a, errno) : 0;
}

/* Published frames are read-only to everyone: see FRAME_PUBLISHED. */
static int host_prot(const struct kva_frame_rec *f)
{
	return f->flags & FRAME_PUBLISHED ? PROT_READ : PROT_READ | PROT_WRITE;
}

/*
 * Map frames @idx[0..n) at @va: one mmap per run of frames that lie next
 * to each other in one file (frames handed out together often do).
 */
static int host_map(struct kva_arena *a, uint64_t va, const uint32_t *idx,
		    uint32_t n)
{
	struct kva_host *h = host(a);
	uint64_t fs = a->frame_size;
	uint32_t i = 0, j;
	int ret;

	while (i < n) {
		const struct kva_frame_rec *f = &a->frames[idx[i]];
		void *want = (void *)(uintptr_t)(va + i * fs), *p;

		for (j = i + 1; j < n; j++) {
			const struct kva_frame_rec *g = &a->frames[idx[j]];

			if (g->file != f->file ||
			    g->mem != f->mem + (j - i) * fs ||
			    host_prot(g) != host_prot(f))
				break;
		}
		ret = KVA_FAULT("host.map");
		if (ret)
			goto err_unmap;
		p = mmap(want, (j - i) * fs, host_prot(f), h->map_flags,
			 h->files[f->file].fd, (off_t)f->mem);
		if (p == MAP_FAILED) {
			ret = fail(a, errno);
			/*
			 * MAP_FIXED may have unmapped what was there before
			 * the file refused (Linux before 6.12 does): the
			 * run's range is reserved again too, never a hole
			 * that another mmap() could take.
			 */
			i = j;
			goto err_unmap;
		}
		i = j;
	}
	return 0;

err_unmap:
	if (i)
		host_unmap_bytes(a, va, i * fs);
	return ret;
}

static int host_unmap(struct kva_arena *a, uint64_t va, uint32_t n)
{
	return host_unmap_bytes(a, va, n * a->frame_size);
}

/* Copy only the filled part of each [token][head_dim] block. */
static int host_copy(struct kva_arena *a, uint64_t dst, uint64_t src,
		     const struct kva_geometry *g, uint32_t tokens)
{
	uint64_t blocks = kva_geometry_blocks(g), b;
	size_t len = (size_t)tokens * g->head_dim *
		     kva_dtype_size((enum kva_dtype)g->dtype);

	for (b = 0; b < blocks; b++)
		memcpy((char *)(uintptr_t)dst + b * g->head_stride,
		       (const char *)(uintptr_t)src + b * g->head_stride, len);
	return 0;
}

/* A raw sequence's new frames: zeroed before the engine can read them. */
static int host_zero(struct kva_arena *a, uint64_t va, uint32_t n)
{
	memset((void *)(uintptr_t)va, 0, (size_t)n * a->frame_size);
	return 0;
}

static int host_xfer(struct kva_arena *a, uint64_t va, void *host,
		     uint64_t len, bool out)
{
	if (out)
		memcpy(host, (const void *)(uintptr_t)va, len);
	else
		memcpy((void *)(uintptr_t)va, host, len);
	return 0;
}

/* A tier agent's copies (tier.c): memcpy() is done when it returns. */
static int host_tier_xfer(struct kva_arena *a, uint64_t va, void *host,
			  const bool *out, uint32_t n)
{
	uint64_t fs = a->frame_size;
	uint32_t i;

	for (i = 0; i < n; i++)
		host_xfer(a, va + i * fs, (char *)host + i * fs, fs, out[i]);
	return 0;
}

const struct kva_vmm kva_host_vmm = {
	.map_replaces = true,
	.init = host_init,
	.fini = host_fini,
	.resolve = host_resolve,
	.reserve = host_reserve,
	.release = host_release,
	.map = host_map,
	.unmap = host_unmap,
	.copy = host_copy,
	.zero = host_zero,
	.xfer = host_xfer,
	.tier_xfer = host_tier_xfer,
};

/*
 * kva_arena_create(): one memfd behind every frame of the table; the
 * module pins the pages of the frames in the arena only.
 */
int kva_host_provision(int dev_fd, const struct kva_arena_params *p)
{
	uint32_t table = p->max_frames ? p->max_frames : p->nr_frames;
	int ret, fd;

	ret = check_flags(p->frame_size, p->flags);
	if (ret)
		return ret;
	ret = host_memfd(p->name, p->frame_size * table,
			 p->frame_size * p->nr_frames, p->flags, &fd);
	if (ret)
		return ret;
	/* The module takes its own reference to the file. */
	ret = kva_device_set_backing(dev_fd, p->name, 0, table, fd, 0);
	close(fd);
	return ret;
}
