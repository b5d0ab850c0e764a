// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: IORING_OP_URING_CMD.  The SQE carries the command number in
 * cmd_op and struct kvarena_uring_cmd in its command area; the command runs
 * through the same dispatcher as ioctl() and completes inline, so a ring
 * of N SQEs is N commands for one io_uring_enter().
 *
 * Inline issue is non-blocking (IO_URING_F_NONBLOCK): a command that would
 * sleep - a busy lock, a user page not present, an allocation, or a
 * command that always sleeps - answers -EAGAIN, and io_uring issues it
 * again from its worker thread, blocking.
 */
#include "compat.h"
#include "kva.h"

#ifdef KVA_URING_CMD
int kva_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	const struct kvarena_uring_cmd *area = kva_uring_cmd_area(ioucmd);
	/* The area may sit in the shared SQ ring: read each field once. */
	u64 arg = READ_ONCE(area->arg);

	if (READ_ONCE(area->reserved))
		return -EINVAL;
	return kva_dispatch(ioucmd->file, ioucmd->cmd_op,
			    u64_to_user_ptr(arg),
			    KVA_HOW_URING |
			    ((issue_flags & IO_URING_F_NONBLOCK) ?
			     KVA_HOW_NONBLOCK : 0));
}
#endif
