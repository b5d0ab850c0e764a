// SPDX-License-Identifier: GPL-2.0
/*
 * libkvarena's cuda backend on a real GPU (KTAP): an embedded arena on
 * device 0, sequences written and read with cuMemcpy, copy-on-write
 * checked on the device, and the costs of mapping a frame and of a copy
 * printed for Documentation/libkvarena.rst.
 *
 * Built in every build (linked against the CUDA stub driver, so the
 * CUDA pieces are proven to link); run only where a GPU and its driver
 * are: selftests/gpu runs it.  The library itself loads libcuda.so.1 at
 * run time; this program links it only for its own cuMemcpy calls.
 */
#include <cuda.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kselftest_harness.h"

#include "common.h"

#define FS	(2u << 20)

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Llama-3-8B's KV in fp16: 128 KiB per token, 16 per 2 MiB frame. */
static struct kva_geometry llama(void)
{
	struct kva_geometry g = { .layers = 32, .kv_heads = 8,
				  .head_dim = 128, .dtype = KVA_DTYPE_FP16,
				  .frame_size = FS };

	kva_geometry_init(&g);
	return g;
}

FIXTURE(gpu) {
	CUcontext ctx;
	CUdevice dev;
	struct kva_arena *a;
	struct kva_geometry g;
	unsigned char *host;
};

FIXTURE_SETUP(gpu)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_EMBEDDED, .nr_frames = 64, .frame_size = FS,
		.mem_kind = KVA_BACKEND_CUDA,
	};

	ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
	ASSERT_EQ(CUDA_SUCCESS, cuDeviceGet(&self->dev, 0));
	ASSERT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&self->ctx,
							 self->dev));
	ASSERT_EQ(CUDA_SUCCESS, cuCtxSetCurrent(self->ctx));
	ASSERT_EQ(0, kva_open(&o, &self->a));
	self->g = llama();
	self->host = malloc(4 * FS);
	ASSERT_NE(NULL, self->host);
}

FIXTURE_TEARDOWN(gpu)
{
	kva_close(self->a);
	free(self->host);
	cuDevicePrimaryCtxRelease(self->dev);
}

static void pattern_bytes(unsigned char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 31 + i * 7 + (i >> 12));
}

TEST_F(gpu, frames_mapped_behind_a_range_hold_what_is_copied_in)
{
	struct kva_seq *s;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 4096, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 3 * 16));
	pattern_bytes(self->host, 3 * FS, 1);
	ASSERT_EQ(CUDA_SUCCESS, cuMemcpyHtoD(s->base, self->host, 3 * FS));
	memset(self->host, 0, 3 * FS);
	ASSERT_EQ(CUDA_SUCCESS, cuMemcpyDtoH(self->host, s->base, 3 * FS));
	pattern_bytes(self->host + 3 * FS, 3 * FS, 1);
	EXPECT_EQ(0, memcmp(self->host, self->host + 3 * FS, 3 * FS));
	kva_seq_free(s);
}

TEST_F(gpu, copy_on_write_never_changes_the_parent)
{
	unsigned char *want = self->host + 2 * FS;
	struct kva_seq *p, *c;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 4096, &p));
	ASSERT_EQ(0, kva_seq_grow(p, 16 + 5));
	pattern_bytes(self->host, 2 * FS, 2);
	ASSERT_EQ(CUDA_SUCCESS, cuMemcpyHtoD(p->base, self->host, 2 * FS));
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	ASSERT_EQ(0, kva_seq_grow(c, 1));
	/* The child's frame 1 is a copy; overwrite it there. */
	ASSERT_EQ(CUDA_SUCCESS, cuMemsetD8(c->base + FS, 0xab, FS));
	ASSERT_EQ(CUDA_SUCCESS, cuCtxSynchronize());
	ASSERT_EQ(CUDA_SUCCESS, cuMemcpyDtoH(want, p->base, 2 * FS));
	EXPECT_EQ(0, memcmp(want, self->host, 2 * FS));
	ASSERT_EQ(CUDA_SUCCESS, cuMemcpyDtoH(want, c->base, FS));
	EXPECT_EQ(0, memcmp(want, self->host, FS));
	kva_seq_free(p);
	kva_seq_free(c);
}

TEST_F(gpu, costs_of_mapping_and_copying_a_frame)
{
	double t0, map_us, cow_us;
	struct kva_seq *s, *p, *c;
	int i, n = 200;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 4096, &s));
	/* Every frame's allocation made once, before timing. */
	ASSERT_EQ(0, kva_seq_grow(s, 64 * 16));
	ASSERT_EQ(0, kva_seq_shrink(s, 0));
	t0 = now_us();
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, kva_seq_grow(s, 16));
		ASSERT_EQ(0, kva_seq_shrink(s, 0));
	}
	map_us = (now_us() - t0) / n;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 4096, &p));
	ASSERT_EQ(0, kva_seq_grow(p, 8));
	t0 = now_us();
	for (i = 0; i < 20; i++) {
		ASSERT_EQ(0, kva_seq_fork(p, &c));
		ASSERT_EQ(0, kva_seq_grow(c, 1));
		kva_seq_free(c);
	}
	cow_us = (now_us() - t0) / 20;
	printf("# gpu: map+unmap of one 2 MiB frame %.1f us; fork + first "
	       "append (copy of a 2 MiB frame) + free %.1f us\n",
	       map_us, cow_us);
	kva_seq_free(p);
	kva_seq_free(s);
}

TEST_HARNESS_MAIN
