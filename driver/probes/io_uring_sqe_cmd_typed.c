// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring_sqe_cmd(sqe, type) (6.18+): the macro takes the command area's
 * type and checks its size at build time.
 */
#include <linux/io_uring/cmd.h>

const u64 *kva_probe(struct io_uring_cmd *c);
const u64 *kva_probe(struct io_uring_cmd *c)
{
	return io_uring_sqe_cmd(c->sqe, u64);
}
