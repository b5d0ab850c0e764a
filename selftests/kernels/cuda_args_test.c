// SPDX-License-Identifier: MIT
/*
 * cuda_args_test.c - the CUDA kernels' argument checks, which come back
 * before anything reaches the device, so this runs in every build where
 * nvcc is, with no GPU and no driver.  Nothing here may launch: every
 * call is given one thing wrong (with a driver missing, a launch would
 * come back as -EIO, not the error checked).
 */
#include <errno.h>
#include <stdint.h>

#include "kselftest_harness.h"

#include "kvattn_cuda.h"

/* Device pointers the calls never follow: each is only checked. */
#define DEV(addr)	((void *)(uintptr_t)(addr))

FIXTURE(args) {
	struct kva_geometry g;
	struct kva_attn_params p;
	struct kva_cuda_decode_plan plan;
};

FIXTURE_SETUP(args)
{
	self->g = (struct kva_geometry){ .layers = 2, .kv_heads = 2,
					 .head_dim = 128,
					 .dtype = KVA_DTYPE_BF16,
					 .frame_size = 2u << 20 };
	ASSERT_EQ(0, kva_geometry_init(&self->g));
	self->p = (struct kva_attn_params){ .geom = &self->g, .layer = 1,
					    .q_heads = 8, .scale = 0.125f };
	self->plan = (struct kva_cuda_decode_plan){ .splits = 1,
		.split_tokens = 64, .max_tokens = 64, .nr_seqs = 4,
		.workspace_bytes = 4096 };
}

FIXTURE_TEARDOWN(args)
{
}

TEST_F(args, decode_refuses_a_misaligned_workspace_or_descriptor_array)
{
	EXPECT_EQ(-EINVAL, kva_cuda_attn_decode(&self->p, &self->plan,
		  DEV(0x10000), 2, DEV(0x20000), DEV(0x30000), DEV(0x40008),
		  NULL));
	EXPECT_EQ(-EINVAL, kva_cuda_attn_decode(&self->p, &self->plan,
		  DEV(0x10004), 2, DEV(0x20000), DEV(0x30000), DEV(0x40000),
		  NULL));
}

TEST_F(args, decode_refuses_a_batch_beyond_the_plan_and_missing_buffers)
{
	EXPECT_EQ(-EINVAL, kva_cuda_attn_decode(&self->p, &self->plan,
		  DEV(0x10000), 5, DEV(0x20000), DEV(0x30000), DEV(0x40000),
		  NULL));
	EXPECT_EQ(-EINVAL, kva_cuda_attn_decode(&self->p, &self->plan,
		  DEV(0x10000), 2, NULL, DEV(0x30000), DEV(0x40000), NULL));
	EXPECT_EQ(-EINVAL, kva_cuda_attn_decode(&self->p, NULL, DEV(0x10000),
		  2, DEV(0x20000), DEV(0x30000), DEV(0x40000), NULL));
	/* nothing to do is not an error */
	EXPECT_EQ(0, kva_cuda_attn_decode(&self->p, &self->plan, NULL, 0,
		  NULL, NULL, NULL, NULL));
}

TEST_F(args, head_dims_the_kernels_lack_are_enotsup)
{
	struct kva_geometry g = self->g;
	struct kva_attn_params p = self->p;

	g.head_dim = 96;
	ASSERT_EQ(0, kva_geometry_init(&g));
	p.geom = &g;
	EXPECT_EQ(-ENOTSUP, kva_cuda_attn_decode(&p, &self->plan, DEV(0x10000),
		  2, DEV(0x20000), DEV(0x30000), DEV(0x40000), NULL));
	EXPECT_EQ(-ENOTSUP, kva_cuda_attn_prefill(&p, DEV(0x10000), 2, 16,
		  DEV(0x20000), DEV(0x30000), NULL));
}

TEST_F(args, prefill_refuses_a_misaligned_descriptor_array)
{
	EXPECT_EQ(-EINVAL, kva_cuda_attn_prefill(&self->p, DEV(0x10004), 2, 16,
		  DEV(0x20000), DEV(0x30000), NULL));
	EXPECT_EQ(-EINVAL, kva_cuda_attn_prefill(&self->p, NULL, 2, 16,
		  DEV(0x20000), DEV(0x30000), NULL));
}

TEST_F(args, append_refuses_a_misaligned_base)
{
	EXPECT_EQ(-EINVAL, kva_cuda_kv_append(&self->g, 0, DEV(0x100008), 0, 4,
		  KVA_DTYPE_FP32, DEV(0x20000), DEV(0x30000), NULL));
	EXPECT_EQ(-EINVAL, kva_cuda_kv_append(&self->g, 2, DEV(0x100000), 0, 4,
		  KVA_DTYPE_FP32, DEV(0x20000), DEV(0x30000), NULL));
	EXPECT_EQ(0, kva_cuda_kv_append(&self->g, 0, DEV(0x100008), 0, 0,
		  KVA_DTYPE_FP32, NULL, NULL, NULL));
}

TEST_HARNESS_MAIN
