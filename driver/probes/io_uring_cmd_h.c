// SPDX-License-Identifier: GPL-2.0
/* <linux/io_uring/cmd.h> holds struct io_uring_cmd (6.6 and later). */
#include <linux/io_uring/cmd.h>

int kva_probe(struct io_uring_cmd *c);
int kva_probe(struct io_uring_cmd *c)
{
	return c->cmd_op;
}
