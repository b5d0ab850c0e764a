// SPDX-License-Identifier: MIT
/*
 * The cuda backend where the library was built without the CUDA toolkit
 * (no cuda.h): CUDA arenas cannot be opened or created.
 */
#include "internal.h"

static int none_init(struct kva_arena *a, const struct kva_open_opts *o)
{
	return -EOPNOTSUPP;
}

const struct kva_vmm kva_cuda_vmm = {
	.init = none_init,
};

int kva_cuda_provision(int dev_fd, const struct kva_arena_params *p)
{
	return -EOPNOTSUPP;
}

int kva_cuda_uuid(const char *lib, uint32_t ordinal, uint8_t uuid[16])
{
	return -EOPNOTSUPP;
}
