// SPDX-License-Identifier: GPL-2.0
/*
 * The cuda backend in device mode against the real kvarena.ko, in the VM
 * (static, KTAP): kva_arena_create() making and exporting one allocation
 * per frame and registering each with the module, clients importing the
 * frames the module hands back (FRAME_FD) and keeping the imports, and a
 * failed create undone.  The driver is the test double (cuda_double.c,
 * linked in; cuda_static.c gives the library its entry points), since the
 * VM has no GPU; the module is the real one.  The client test runs over
 * ioctl() and over io_uring.
 *
 * Needs: root, kvarena.ko loaded, /dev/kvarena.
 */
#include <cuda.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/kvarena.h>

#include "kselftest_harness.h"

#include "common.h"
#include "cuda_double.h"
#include "hooks.h"
#include "module.h"

#define FS	(64u << 10)	/* the double's granularity */
#define TPF	256u		/* small_geometry in 64 KiB */

static bool all_released(void)
{
	struct cuda_double_live l;

	cuda_double_live(&l);
	return !l.allocs && !l.reservations && !l.mappings && !l.ctx_refs;
}

FIXTURE(gpu) {
	char name[KVARENA_NAME_LEN];
};

FIXTURE_VARIANT(gpu) {
	uint32_t transport;
};

FIXTURE_VARIANT_ADD(gpu, ioctl) {
	.transport = KVA_TRANSPORT_IOCTL,
};

FIXTURE_VARIANT_ADD(gpu, uring) {
	.transport = KVA_TRANSPORT_URING,
};

FIXTURE_SETUP(gpu)
{
	unsetenv("KVA_DEVICE");
	unsetenv("KVA_TRANSPORT");
	pid_name(self->name, "gpu");
	cuda_double_set_granularity(FS);
	cuda_double_reset();
	hooks_reset();
}

FIXTURE_TEARDOWN(gpu)
{
	EXPECT_EQ(0, cuda_double_ctx_depth());
}

TEST_F(gpu, device_arena_exports_every_frame_and_clients_import_them)
{
	struct kva_arena_params p = {
		.name = self->name, .nr_frames = 4, .frame_size = FS,
		.mem_kind = KVA_BACKEND_CUDA,
	};
	struct kva_open_opts o = { .mode = KVA_MODE_DEVICE, .name = self->name,
				   .transport = variant->transport };
	struct kva_geometry g = small_geometry(FS);
	struct kva_arena_info info;
	struct kvarena_stat st;
	struct kva_arena *a;
	struct kva_seq *s;
	uint64_t h[2], off;
	int i, fd;

	ASSERT_EQ(0, kva_arena_create(&p));
	EXPECT_EQ(4, cuda_double_count("cuMemCreate"));
	EXPECT_EQ(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
		  cuda_double_find("cuMemCreate", 0)->b);
	EXPECT_EQ(4, cuda_double_count("cuMemExportToShareableHandle"));
	EXPECT_EQ(4, cuda_double_count("cuMemRelease"));
	/* One registration per frame: cuMemMap() maps whole allocations. */
	EXPECT_EQ(4, hooks_count("dev.set_backing"));
	st = module_stat(self->name);
	EXPECT_EQ(KVARENA_MEM_CUDA, st.mem_kind);
	EXPECT_EQ(4, st.nr_backed);
	/* The module's file references are all that keep the memory. */
	EXPECT_TRUE(all_released());

	cuda_double_reset();
	hooks_reset();
	ASSERT_EQ(0, kva_open(&o, &a));
	ASSERT_EQ(0, kva_arena_info(a, &info));
	EXPECT_EQ(KVA_BACKEND_CUDA, info.backend);
	EXPECT_EQ(KVA_MODE_DEVICE, info.mode);
	EXPECT_EQ(variant->transport, info.transport);
	ASSERT_EQ(0, kva_seq_create(a, &g, 4 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, TPF + 1));
	EXPECT_EQ(2, hooks_count("dev.frame_fd"));
	EXPECT_EQ(2, cuda_double_count("cuMemImportFromShareableHandle"));
	EXPECT_EQ(0, cuda_double_count("cuMemCreate"));
	EXPECT_EQ(2, cuda_double_count("cuMemMap"));
	EXPECT_EQ(1, cuda_double_count("cuMemSetAccess"));
	EXPECT_EQ(2, module_stat(self->name).nr_held);
	/* What the range shows is what the module's backing holds. */
	fill_tokens(s, 7, 0, TPF + 1);
	ASSERT_EQ(2, kva_seq_handles(s, h, 2));
	for (i = 0; i < 2; i++) {
		static char buf[FS];

		fd = module_frame_fd(h[i], &off);
		ASSERT_LE(0, fd);
		EXPECT_EQ(0, off);
		ASSERT_EQ(FS, pread(fd, buf, FS, 0));
		EXPECT_EQ(0, memcmp(buf, (void *)(uintptr_t)(s->base + i * FS),
				    FS));
		close(fd);
	}
	/* Imports are kept: the same frames again cost no FRAME_FD. */
	ASSERT_EQ(0, kva_seq_shrink(s, 0));
	ASSERT_EQ(0, kva_seq_grow(s, TPF + 1));
	EXPECT_EQ(2, hooks_count("dev.frame_fd"));
	EXPECT_EQ(2, cuda_double_count("cuMemImportFromShareableHandle"));
	kva_close(a);
	EXPECT_EQ(0, module_stat(self->name).nr_clients);
	ASSERT_EQ(0, kva_arena_destroy(&p));
	EXPECT_TRUE(all_released());
}

TEST(device_arena_create_stops_at_the_first_failure)
{
	char name[KVARENA_NAME_LEN];
	struct kva_arena_params p = {
		.name = pid_name(name, "gpu1"), .nr_frames = 4,
		.frame_size = FS, .mem_kind = KVA_BACKEND_CUDA,
	};
	int err;

	cuda_double_set_granularity(FS);
	hooks_reset();
	cuda_double_fail("cuMemExportToShareableHandle", 3,
			 CUDA_ERROR_OUT_OF_MEMORY);
	EXPECT_EQ(-ENOMEM, kva_arena_create(&p));
	/* Two frames were registered; the arena is gone again with them. */
	EXPECT_EQ(2, hooks_count("dev.set_backing"));
	module_stat_err(name, &err);
	EXPECT_EQ(-ENOENT, err);
	EXPECT_EQ(-ENOENT, kva_arena_destroy(&p));
	EXPECT_TRUE(all_released());
}

/*
 * Ordinals depend on CUDA_VISIBLE_DEVICES: the creator's device 1 may be
 * a client's device 0, or not visible to it at all.  The module records
 * the GPU's UUID, and a client finds its device by it.
 */
TEST(clients_find_the_gpu_by_uuid_whatever_their_ordinals)
{
	char name[KVARENA_NAME_LEN];
	struct kva_arena_params p = {
		.name = pid_name(name, "gpuu"), .nr_frames = 2,
		.frame_size = FS, .mem_kind = KVA_BACKEND_CUDA, .mem_dev = 1,
	};
	struct kva_open_opts o = { .mode = KVA_MODE_DEVICE, .name = name };
	static const int creator[] = { 0, 1 }, swapped[] = { 1, 0 };
	static const int other[] = { 0 };
	struct kva_geometry g = small_geometry(FS);
	struct kva_arena_info info;
	struct kvarena_stat st;
	unsigned char uuid1[16];
	struct kva_arena *a;
	struct kva_seq *s;

	cuda_double_set_granularity(FS);
	cuda_double_uuid(1, uuid1);
	/* the creator sees GPUs 0 and 1 and makes the arena on its 1 */
	ASSERT_EQ(0, cuda_double_set_devices(creator, 2));
	ASSERT_EQ(0, kva_arena_create(&p));
	st = module_stat(name);
	EXPECT_EQ(1, st.mem_dev);
	EXPECT_EQ(0, memcmp(uuid1, st.mem_uuid, 16));

	/* a client that sees them the other way round: GPU 1 is its 0 */
	ASSERT_EQ(0, cuda_double_set_devices(swapped, 2));
	cuda_double_reset();
	ASSERT_EQ(0, kva_open(&o, &a));
	ASSERT_EQ(0, kva_arena_info(a, &info));
	EXPECT_EQ(0, info.mem_dev);
	EXPECT_EQ(0, memcmp(uuid1, info.mem_uuid, 16));
	ASSERT_NE(NULL, cuda_double_find("cuDevicePrimaryCtxRetain", 0));
	EXPECT_EQ(0, cuda_double_find("cuDevicePrimaryCtxRetain", 0)->a);
	ASSERT_EQ(0, kva_seq_create(a, &g, 2 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, TPF + 1));
	kva_close(a);

	/* a client that does not see GPU 1 at all */
	ASSERT_EQ(0, cuda_double_set_devices(other, 1));
	EXPECT_EQ(-ENODEV, kva_open(&o, &a));

	ASSERT_EQ(0, cuda_double_set_devices(creator, 1));
	ASSERT_EQ(0, kva_arena_destroy(&p));
	EXPECT_TRUE(all_released());
}

TEST_HARNESS_MAIN
