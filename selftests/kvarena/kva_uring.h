/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvarena commands over io_uring for the selftests: IORING_OP_URING_CMD
 * SQEs with struct kvarena_uring_cmd in the command area.
 */
#ifndef KVA_URING_H
#define KVA_URING_H

#include <errno.h>
#include <string.h>

#include <liburing.h>
#include <linux/kvarena.h>

/* Queue one kvarena command; its completion lands in res[@slot]. */
static inline void kva_queue_cmd(struct io_uring *ring, int slot, int fd,
				 __u32 cmd, void *arg, __u64 reserved,
				 __u8 sqe_flags)
{
	struct kvarena_uring_cmd uc = { .arg = (__u64)(unsigned long)arg,
					.reserved = reserved };
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = cmd;
	memcpy(sqe->cmd, &uc, sizeof(uc));
	sqe->user_data = slot;
	sqe->flags |= sqe_flags;
}

/*
 * Submit the @n commands queued and wait for their completions into @res.
 * The count io_uring_submit_and_wait() returns is not checked against @n:
 * with SQPOLL it counts only what the kernel thread had not yet taken.
 */
static inline int kva_submit_and_reap(struct io_uring *ring, int n, int *res)
{
	struct io_uring_cqe *cqe;
	int i, ret = io_uring_submit_and_wait(ring, n);

	if (ret < 0)
		return ret;
	for (i = 0; i < n; i++) {
		ret = io_uring_wait_cqe(ring, &cqe);
		if (ret)
			return ret;
		res[cqe->user_data] = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	}
	return 0;
}

/* One command through @ring, like ioctl(): 0 or -errno. */
static inline int kva_uring_one(struct io_uring *ring, int fd, __u32 cmd,
				void *arg, __u8 sqe_flags)
{
	int res = -EIO, ret;

	kva_queue_cmd(ring, 0, fd, cmd, arg, 0, sqe_flags);
	ret = kva_submit_and_reap(ring, 1, &res);
	return ret ? ret : res;
}

#endif /* KVA_URING_H */
