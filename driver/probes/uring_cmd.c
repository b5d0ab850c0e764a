// SPDX-License-Identifier: GPL-2.0
/* file_operations.uring_cmd with the (cmd, issue_flags) signature (6.0+). */
#include <linux/fs.h>

static int kva_probe_cmd(struct io_uring_cmd *c, unsigned int issue_flags)
{
	return 0;
}

const struct file_operations kva_probe_fops = {
	.uring_cmd = kva_probe_cmd,
};
