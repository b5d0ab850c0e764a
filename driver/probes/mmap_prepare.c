// SPDX-License-Identifier: GPL-2.0
/* file_operations.mmap_prepare: mappable files may have it instead of mmap. */
#include <linux/fs.h>

int kva_probe_mmap_prepare(const struct file_operations *fops);
int kva_probe_mmap_prepare(const struct file_operations *fops)
{
	return fops->mmap_prepare != NULL;
}
