// SPDX-License-Identifier: GPL-2.0
/*
 * Whole frames read from and written to files, several in flight at
 * once: a tier agent's copies to and from a file arena (kvarenactl
 * agent, kvbench tier --file).
 *
 * Each slot has a buffer of one frame, page-aligned: O_DIRECT wants
 * aligned memory, and a frame's own mapping cannot be given to it (the
 * frames files map VM_PFNMAP, which direct I/O cannot pin).  The caller
 * queues a slot's read or write, then reaps the slots as their I/O ends.
 *
 * The I/O goes on an io_uring of one entry per slot: what is queued is
 * submitted together when the caller reaps, and ends in any order.  Built
 * without liburing, or where the kernel refuses a ring (io_uring_disabled,
 * a seccomp filter), each read or write is made as it is queued, with
 * pread() or pwrite(), and reaped in turn: the caller cannot tell.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef KVT_URING
#include <liburing.h>
#endif

#include "fileio.h"

/* The slots' buffers together: at most this much, but one slot at least. */
#define FIO_BUF_BYTES	(64u << 20)

struct kvt_fio {
	uint64_t frame_size;
	unsigned int depth;		/* slots */
	void *buf[KVT_FIO_MAX_DEPTH];
#ifdef KVT_URING
	struct io_uring ring;
	bool ring_ok;			/* else pread() and pwrite() */
#endif
	/* Without a ring: the slots done, in the order they were queued. */
	unsigned int done[KVT_FIO_MAX_DEPTH];
	int res[KVT_FIO_MAX_DEPTH];
	unsigned int head, nr_done;
};

#ifdef KVT_URING

static int ring_open(struct kvt_fio *f)
{
	int err = io_uring_queue_init(f->depth, &f->ring, 0);

	f->ring_ok = !err;
	return err;
}

static void ring_close(struct kvt_fio *f)
{
	if (f->ring_ok)
		io_uring_queue_exit(&f->ring);
}

static int ring_queue(struct kvt_fio *f, unsigned int slot, bool write,
		      int fd, uint64_t off)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&f->ring);

	/* Never: no more are queued or in flight than the ring has entries. */
	if (!sqe)
		return -EBUSY;
	if (write)
		io_uring_prep_write(sqe, fd, f->buf[slot],
				    (unsigned int)f->frame_size, off);
	else
		io_uring_prep_read(sqe, fd, f->buf[slot],
				   (unsigned int)f->frame_size, off);
	io_uring_sqe_set_data(sqe, (void *)(uintptr_t)slot);
	return 0;
}

/* What is queued submitted, and the first slot whose I/O has ended. */
static int ring_reap(struct kvt_fio *f, unsigned int *slot, int *res)
{
	struct io_uring_cqe *cqe;
	int err;

	while (io_uring_peek_cqe(&f->ring, &cqe)) {
		err = io_uring_submit_and_wait(&f->ring, 1);
		/* A signal, or a shortage that passes: look again. */
		if (err < 0 && err != -EINTR && err != -EAGAIN &&
		    err != -EBUSY)
			return err;
	}
	*slot = (unsigned int)(uintptr_t)io_uring_cqe_get_data(cqe);
	*res = cqe->res;
	io_uring_cqe_seen(&f->ring, cqe);
	return 0;
}

#else

static int ring_open(struct kvt_fio *f)
{
	(void)f;
	return 0;
}

static void ring_close(struct kvt_fio *f)
{
	(void)f;
}

#endif

int kvt_fio_open(struct kvt_fio **fp, uint64_t frame_size, int *ring_err)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t depth = FIO_BUF_BYTES / frame_size;
	struct kvt_fio *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->frame_size = frame_size;
	f->depth = depth < 1 ? 1 : depth > KVT_FIO_MAX_DEPTH ?
		   KVT_FIO_MAX_DEPTH : (unsigned int)depth;
	for (unsigned int i = 0; i < f->depth; i++) {
		if (posix_memalign(&f->buf[i], (size_t)page, frame_size)) {
			f->buf[i] = NULL;
			kvt_fio_close(f);
			return -ENOMEM;
		}
	}
	*ring_err = ring_open(f);
	*fp = f;
	return 0;
}

void kvt_fio_close(struct kvt_fio *f)
{
	if (!f)
		return;
	ring_close(f);
	for (unsigned int i = 0; i < f->depth; i++)
		free(f->buf[i]);
	free(f);
}

unsigned int kvt_fio_depth(const struct kvt_fio *f)
{
	return f->depth;
}

void *kvt_fio_buf(struct kvt_fio *f, unsigned int slot)
{
	return f->buf[slot];
}

int kvt_fio_direct(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0)
		return -errno;
	if (flags & O_DIRECT)
		return 0;
	return fcntl(fd, F_SETFL, flags | O_DIRECT) ? -errno : 0;
}

int kvt_fio_queue(struct kvt_fio *f, unsigned int slot, bool write,
		     int fd, uint64_t off)
{
	unsigned int tail = (f->head + f->nr_done) % f->depth;
	ssize_t n;

#ifdef KVT_URING
	if (f->ring_ok)
		return ring_queue(f, slot, write, fd, off);
#endif
	n = write ? pwrite(fd, f->buf[slot], f->frame_size, (off_t)off) :
		    pread(fd, f->buf[slot], f->frame_size, (off_t)off);
	f->done[tail] = slot;
	f->res[tail] = n < 0 ? -errno : (int)n;
	f->nr_done++;
	return 0;
}

int kvt_fio_reap(struct kvt_fio *f, unsigned int *slot, int *res)
{
#ifdef KVT_URING
	if (f->ring_ok)
		return ring_reap(f, slot, res);
#endif
	if (!f->nr_done)
		return -EINVAL;		/* nothing queued */
	*slot = f->done[f->head];
	*res = f->res[f->head];
	f->head = (f->head + 1) % f->depth;
	f->nr_done--;
	return 0;
}
