// SPDX-License-Identifier: GPL-2.0
/* io_uring_sqe_cmd(): the command area is reached through ioucmd->sqe. */
#include <linux/io_uring/cmd.h>

const void *kva_probe(struct io_uring_cmd *c);
const void *kva_probe(struct io_uring_cmd *c)
{
	return io_uring_sqe_cmd(c->sqe);
}
