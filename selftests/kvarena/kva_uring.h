/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvarena commands over io_uring for the selftests: IORING_OP_URING_CMD
 * SQEs with struct kvarena_uring_cmd in the command area.
 */
#ifndef KVA_URING_H
#define KVA_URING_H

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

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

/*
 * Why kvarena commands cannot go over io_uring here, or NULL when they can:
 * the module offers them (KVARENA_FEAT_URING_CMD) where the kernel it was
 * built for has IORING_OP_URING_CMD for character devices (5.19+), and
 * io_uring itself may be compiled out or switched off
 * (kernel.io_uring_disabled).  Tests that need the ring SKIP with this.
 */
static inline const char *kva_uring_missing(void)
{
	struct kvarena_version v = { 0 };
	struct io_uring ring;
	int fd = open("/dev/kvarena", O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return "/dev/kvarena cannot be opened";
	ret = ioctl(fd, KVARENA_IOC_VERSION, &v);
	close(fd);
	if (ret)
		return "KVARENA_IOC_VERSION failed";
	if (!(v.features & KVARENA_FEAT_URING_CMD))
		return "kvarena.ko takes no commands over io_uring on this kernel (IORING_OP_URING_CMD for character devices: 5.19+)";
	ret = io_uring_queue_init(2, &ring, 0);
	if (ret)
		return ret == -EPERM ? "io_uring is switched off (kernel.io_uring_disabled)" :
				       "io_uring is not available in this kernel";
	io_uring_queue_exit(&ring);
	return NULL;
}

#ifdef SKIP
/*
 * In a kselftest test: SKIP the rest of it unless the ring is there (a
 * test that already failed stays failed: the harness would report SKIP).
 */
#define KVA_NEED_URING()						\
	do {								\
		const char *kva_why_ = kva_uring_missing();		\
		if (kva_why_ && !_metadata->passed)			\
			return;						\
		if (kva_why_)						\
			SKIP(return, "%s", kva_why_);			\
	} while (0)

/*
 * Last in a test whose io_uring part was left out (@why, from
 * kva_uring_missing()), after its cleanup: SKIP, saying the rest passed.
 */
#define KVA_URING_PART_SKIPPED(why)					\
	do {								\
		if ((why) && _metadata->passed)				\
			SKIP(return, "the rest passed; the io_uring part did not run: %s", \
			     (why));					\
	} while (0)
#endif

#endif /* KVA_URING_H */
