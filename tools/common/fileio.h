/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whole frames of a file read and written, several in flight (fileio.c):
 * a tier agent's copies to and from a file arena.
 */
#ifndef KVT_FILEIO_H
#define KVT_FILEIO_H

#include <stdbool.h>
#include <stdint.h>

#define KVT_FIO_MAX_DEPTH	8	/* reads and writes in flight */

struct kvt_fio;

/*
 * Slots of one @frame_size buffer each, page-aligned (up to
 * KVT_FIO_MAX_DEPTH, fewer for large frames), and an io_uring for them
 * where there is one: *@ring_err is 0, or why the kernel refused a ring
 * (-errno; then pread() and pwrite(), which the caller cannot tell
 * apart but may say).  0, or -ENOMEM.
 */
int kvt_fio_open(struct kvt_fio **f, uint64_t frame_size, int *ring_err);
void kvt_fio_close(struct kvt_fio *f);
unsigned int kvt_fio_depth(const struct kvt_fio *f);
void *kvt_fio_buf(struct kvt_fio *f, unsigned int slot);
/* O_DIRECT on the open file of @fd: 0, or -errno where it takes none. */
int kvt_fio_direct(int fd);
/*
 * Slot @slot's buffer written to (@write) or read from @fd at @off, a
 * whole frame, once reaped: 0, or -errno.  The slot must not be in
 * flight.
 */
int kvt_fio_queue(struct kvt_fio *f, unsigned int slot, bool write, int fd,
		  uint64_t off);
/*
 * Submits what is queued and waits for one slot's I/O to end: *@slot and
 * its result *@res (bytes, or -errno).  0, or -errno where the ring
 * itself failed.
 */
int kvt_fio_reap(struct kvt_fio *f, unsigned int *slot, int *res);

#endif /* KVT_FILEIO_H */
