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
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
	KVA_SETUP_NEED_TRANSPORT(variant->transport);
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

/*
 * A client keeps the import of each frame it has had, so that getting it
 * again costs no FRAME_FD.  Once an administrator's shrink took frames
 * out, kva_sync_usage() lets go of the imports of every frame the client
 * does not hold - the GPU memory of the frames out is freed only when
 * every importer has let go - and says so to the module, once.
 */
TEST_F(gpu, a_shrink_makes_clients_let_go_of_the_imports_of_frames_they_do_not_hold)
{
	struct kva_arena_params p = {
		.name = self->name, .nr_frames = 4, .frame_size = FS,
		.mem_kind = KVA_BACKEND_CUDA, .max_frames = 4,
	};
	struct kva_open_opts o = { .mode = KVA_MODE_DEVICE, .name = self->name,
				   .transport = variant->transport };
	struct kvarena_arena_resize r = { .nr_frames = 1 };
	struct kva_geometry g = small_geometry(FS);
	struct cuda_double_live l;
	struct kva_arena *a;
	struct kva_seq *s;

	ASSERT_EQ(0, kva_arena_create(&p));
	ASSERT_EQ(0, kva_open(&o, &a));
	ASSERT_EQ(0, kva_seq_create(a, &g, 4 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF + 1));
	ASSERT_EQ(0, kva_seq_shrink(s, TPF));
	cuda_double_reset();
	hooks_reset();
	/* Nothing went out: every import is kept. */
	ASSERT_EQ(0, kva_sync_usage(a));
	EXPECT_EQ(0, cuda_double_count("cuMemRelease"));
	EXPECT_EQ(0, hooks_count("dev.imports_dropped"));
	cuda_double_live(&l);
	EXPECT_EQ(4, l.allocs);

	/* The three free frames go out; the held one stays, imported. */
	snprintf(r.name, sizeof(r.name), "%s", self->name);
	ASSERT_EQ(0, module_ioctl(O_RDWR, KVARENA_IOC_ARENA_RESIZE, &r));
	EXPECT_EQ(0, r.out_shrinking);
	EXPECT_EQ(3, r.out_absent);
	ASSERT_EQ(0, kva_sync_usage(a));
	EXPECT_EQ(3, cuda_double_count("cuMemRelease"));
	EXPECT_EQ(1, hooks_count("dev.imports_dropped"));
	cuda_double_live(&l);
	EXPECT_EQ(1, l.allocs);
	/* Said once per change. */
	ASSERT_EQ(0, kva_sync_usage(a));
	EXPECT_EQ(1, hooks_count("dev.imports_dropped"));
	EXPECT_EQ(3, cuda_double_count("cuMemRelease"));
	/* The frame held still maps. */
	fill_tokens(s, 3, 0, TPF);
	kva_seq_free(s);
	kva_close(a);
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

/*
 * A gang of two CUDA arenas on one GPU (what a one-GPU machine runs for a
 * tensor-parallel engine of two ranks): the scheduler's client takes the
 * frames and maps nothing; each rank finds its member's GPU by UUID,
 * imports its member's frame for each new handle once, and writes its
 * slice through one range; a frame the scheduler gives back and takes
 * again costs the rank a FRAME_FD and no second import.
 */
TEST(a_gang_of_cuda_arenas_ranks_import_their_members_frames)
{
	char gang[KVARENA_NAME_LEN], member[2][KVARENA_NAME_LEN];
	struct kvarena_gang_create gc = {
		.members = (__u64)(uintptr_t)member, .nr_members = 2,
	};
	struct kva_arena_params p = {
		.nr_frames = 4, .frame_size = FS,
		.mem_kind = KVA_BACKEND_CUDA, .bytes_per_token = 1024,
	};
	struct kva_open_opts o = { .mode = KVA_MODE_DEVICE, .name = gang };
	struct kva_geometry g = small_geometry(FS);
	struct kva_arena *sched, *rank[2], *again;
	struct kva_seq *s[2], *check;
	struct kva_arena_info info;
	uint64_t h[3], token;
	unsigned int imports;
	uint32_t members;
	int r;

	cuda_double_set_granularity(FS);
	pid_name(gang, "cgang");
	for (r = 0; r < 2; r++) {
		char prefix[8];

		snprintf(prefix, sizeof(prefix), "cgm%d", r);
		p.name = pid_name(member[r], prefix);
		ASSERT_EQ(0, kva_arena_create(&p));
	}
	memcpy(gc.name, gang, sizeof(gc.name));
	ASSERT_EQ(0, module_ioctl(O_RDWR, KVARENA_IOC_GANG_CREATE, &gc));

	cuda_double_reset();
	hooks_reset();
	ASSERT_EQ(0, kva_open(&o, &sched));
	ASSERT_EQ(0, kva_arena_info(sched, &info));
	ASSERT_EQ(0, kva_gang_token(sched, 0, &token, &members));
	EXPECT_EQ(2, members);
	ASSERT_EQ(3, kva_alloc(sched, h, 3, 0));
	/* The scheduler touched no GPU. */
	EXPECT_EQ(0, cuda_double_count("cuInit"));
	for (r = 0; r < 2; r++) {
		struct kva_rank_opts ro = { .name = gang, .label = "rank",
					    .client_id = info.client_id,
					    .rank = r, .token = token };
		struct kva_arena_info ri;
		char mname[KVARENA_NAME_LEN];

		memcpy(mname, member[r], sizeof(mname));
		ASSERT_EQ(0, kva_rank_open(&ro, &rank[r]));
		ASSERT_EQ(0, kva_arena_info(rank[r], &ri));
		EXPECT_EQ(KVA_BACKEND_CUDA, ri.backend);
		EXPECT_EQ(0, memcmp(module_stat(mname).mem_uuid, ri.mem_uuid,
				    16));
		ASSERT_EQ(0, kva_seq_create(rank[r], &g, 3 * TPF, &s[r]));
		ASSERT_EQ(0, kva_seq_mirror(s[r], h, 3, 2 * TPF + 1));
		fill_tokens(s[r], 100 + r, 0, 2 * TPF + 1);
	}
	EXPECT_EQ(6, cuda_double_count("cuMemImportFromShareableHandle"));
	EXPECT_EQ(6, hooks_count("dev.frame_fd"));
	/* Each rank's bytes are in its member: another handle reads them. */
	for (r = 0; r < 2; r++) {
		struct kva_rank_opts ro = { .name = gang, .label = "check",
					    .client_id = info.client_id,
					    .rank = r, .token = token };

		ASSERT_EQ(0, kva_rank_open(&ro, &again));
		ASSERT_EQ(0, kva_seq_create(again, &g, 3 * TPF, &check));
		ASSERT_EQ(0, kva_seq_mirror(check, h, 3, 2 * TPF + 1));
		EXPECT_EQ(0, check_tokens(check, 100 + r, 0, 2 * TPF + 1));
		EXPECT_NE(0, check_tokens(check, 100 + (r ^ 1), 0, TPF));
		kva_close(again);
	}
	/* The last frame freed and taken again: a new handle, same memory. */
	ASSERT_EQ(0, kva_free(sched, &h[2], 1));
	ASSERT_EQ(1, kva_alloc(sched, &h[2], 1, 0));
	hooks_reset();
	imports = cuda_double_count("cuMemImportFromShareableHandle");
	for (r = 0; r < 2; r++) {
		ASSERT_EQ(0, kva_seq_mirror(s[r], h, 3, 2 * TPF + 1));
		EXPECT_EQ(0, check_tokens(s[r], 100 + r, 0, 2 * TPF));
	}
	EXPECT_EQ(2, hooks_count("dev.frame_fd"));
	EXPECT_EQ(imports, cuda_double_count("cuMemImportFromShareableHandle"));

	/*
	 * Another domain's client gets none of the frames the scheduler
	 * frees: dirty, and imported by the ranks, which keep their imports
	 * until they close.  Once they have, the scheduler takes them, ranks
	 * that join anew clear their members' memory of them, the scheduler
	 * gives them back, and they reach the other domain zeroed.
	 */
	do {
		struct kva_open_opts po = { .mode = KVA_MODE_DEVICE,
					    .name = gang,
					    .flags = KVA_OPEN_PRIVATE };
		struct kva_arena *other, *cl[2];
		uint64_t t[3], oh[3];
		int got = 0, k;

		ASSERT_EQ(0, kva_open(&po, &other));
		ASSERT_EQ(0, kva_free(sched, h, 3));
		EXPECT_EQ(-ENOSPC, kva_alloc(other, oh, 3, 0));
		EXPECT_EQ(0, kva_scrub_take(sched, t, 3, 0));
		for (r = 0; r < 2; r++) {
			kva_seq_free(s[r]);
			kva_close(rank[r]);
		}
		for (k = 0; k < 10 && got < 3; k++) {
			int n = kva_scrub_take(sched, t + got, 3 - got, 100);

			ASSERT_LE(0, n);
			got += n;
		}
		ASSERT_EQ(3, got);
		for (r = 0; r < 2; r++) {
			struct kva_rank_opts ro = {
				.name = gang, .client_id = info.client_id,
				.rank = r, .token = token };

			ASSERT_EQ(0, kva_rank_open(&ro, &cl[r]));
		}
		EXPECT_EQ(-EPERM, kva_scrub_take(cl[0], oh, 3, 0));
		EXPECT_EQ(-EPERM, kva_rank_clear(sched, t, 1));
		/* Until the ranks have let go, the frames are not given back. */
		ASSERT_EQ(0, kva_rank_clear(cl[0], t, 3));
		ASSERT_EQ(0, kva_rank_clear(cl[1], t, 3));
		EXPECT_EQ(3, kva_scrub_give(sched, t, 3, 0));
		EXPECT_EQ(-ENOENT, kva_scrub_give(sched, t, 3, 0));
		EXPECT_EQ(3, kva_alloc(other, oh, 3, 0));
		/* Zeroed in both members: the other client's ranks read them. */
		for (r = 0; r < 2; r++) {
			static const char zero[FS];
			struct kva_arena_info oi;
			struct kva_rank_opts ro;
			uint64_t ot;

			ASSERT_EQ(0, kva_arena_info(other, &oi));
			ASSERT_EQ(0, kva_gang_token(other, 0, &ot, NULL));
			ro = (struct kva_rank_opts){ .name = gang,
						     .client_id = oi.client_id,
						     .rank = r, .token = ot };
			ASSERT_EQ(0, kva_rank_open(&ro, &again));
			ASSERT_EQ(0, kva_seq_create(again, &g, 3 * TPF, &check));
			ASSERT_EQ(0, kva_seq_mirror(check, oh, 3, 3 * TPF));
			for (k = 0; k < 3; k++)
				EXPECT_EQ(0, memcmp(zero,
					(void *)(uintptr_t)(check->base +
							    (uint64_t)k * FS),
					FS));
			kva_close(again);
			/* The ranks of the scheduler, for what follows. */
			rank[r] = cl[r];
			ASSERT_EQ(0, kva_seq_create(rank[r], &g, 3 * TPF,
						    &s[r]));
		}
		kva_close(other);
		/* What is clean now: the frame nobody has used. */
		ASSERT_EQ(1, kva_alloc(sched, h, 1, 0));
	} while (0);
	/* The scheduler gone, a rank's mirror is refused. */
	kva_close(sched);
	EXPECT_EQ(-ENOLINK, kva_seq_mirror(s[0], h + 1, 2, TPF));
	EXPECT_EQ(-ENOLINK, kva_rank_clear(rank[0], h, 1));
	for (r = 0; r < 2; r++) {
		kva_seq_free(s[r]);
		kva_close(rank[r]);
	}
	p.name = gang;
	ASSERT_EQ(0, kva_arena_destroy(&p));
	for (r = 0; r < 2; r++) {
		p.name = member[r];
		ASSERT_EQ(0, kva_arena_destroy(&p));
	}
	EXPECT_EQ(0, cuda_double_violations());
	EXPECT_TRUE(all_released());
}

/* Send @n fds over @sock; 0 or -1. */
static int send_fds(int sock, const int *fds, int n)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 4)] = { 0 };
	struct iovec iov = { &n, sizeof(n) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = CMSG_SPACE(sizeof(int) * n),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
	return sendmsg(sock, &msg, 0) == sizeof(n) ? 0 : -1;
}

/* Receive up to 4 fds from @sock; how many, or -1. */
static int recv_fds(int sock, int *fds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 4)];
	int n = 0;
	struct iovec iov = { &n, sizeof(n) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != sizeof(n) || n < 1 ||
	    n > 4)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(sizeof(int) * n))
		return -1;
	memcpy(fds, CMSG_DATA(cm), sizeof(int) * n);
	return n;
}

/*
 * The way several serving processes share a CUDA arena's frames: one
 * client takes two frames, writes them, asks the module for their fds
 * (FRAME_FD: for a CUDA arena, the exported allocation itself), passes
 * them over SCM_RIGHTS and exits; a process that never attached imports
 * them, maps them, reads the exporter's bytes, writes and reads back.
 * Imported GPU memory cannot be revoked: it lives as long as the fds do,
 * which is why a CUDA arena's clients are one trust domain.
 */
TEST(frames_passed_between_processes_outlive_their_exporter)
{
	char name[KVARENA_NAME_LEN];
	struct kva_arena_params p = {
		.name = pid_name(name, "gpux"), .nr_frames = 4,
		.frame_size = FS, .mem_kind = KVA_BACKEND_CUDA,
	};
	struct kva_geometry g = small_geometry(FS);
	struct kva_seq view = { .geo = g };
	CUmemAccessDesc acc = {
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
		.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
	};
	CUmemGenericAllocationHandle mh[2];
	int sv[2], fds[4], n, status = -1, i, tries;
	CUdeviceptr va;
	CUcontext ctx;
	CUdevice dev;
	pid_t pid;

	cuda_double_set_granularity(FS);
	ASSERT_EQ(0, kva_arena_create(&p));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kva_open_opts o = { .mode = KVA_MODE_DEVICE,
					   .name = name };
		struct kva_arena *a;
		struct kva_seq *s;
		uint64_t h[2], off;

		close(sv[0]);
		if (kva_open(&o, &a) || kva_seq_create(a, &g, 4 * TPF, &s) ||
		    kva_seq_grow(s, TPF + 1))
			_exit(2);
		fill_tokens(s, 9, 0, TPF + 1);
		if (kva_seq_handles(s, h, 2) != 2)
			_exit(3);
		for (i = 0; i < 2; i++) {
			fds[i] = module_frame_fd(h[i], &off);
			if (fds[i] < 0 || off)
				_exit(4);
		}
		/* exit with the arena open: the release returns the frames */
		_exit(send_fds(sv[1], fds, 2) ? 5 : 0);
	}
	close(sv[1]);
	n = recv_fds(sv[0], fds);
	close(sv[0]);
	waitpid(pid, &status, 0);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(2, n);

	/* the exporter is gone; only these fds hold the memory */
	ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
	ASSERT_EQ(CUDA_SUCCESS, cuDeviceGet(&dev, 0));
	ASSERT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&ctx, dev));
	ASSERT_EQ(CUDA_SUCCESS, cuCtxPushCurrent(ctx));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(CUDA_SUCCESS, cuMemImportFromShareableHandle(&mh[i],
			(void *)(intptr_t)fds[i],
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
		close(fds[i]);
	}
	ASSERT_EQ(CUDA_SUCCESS, cuMemAddressReserve(&va, 2 * FS, FS, 0, 0));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(CUDA_SUCCESS, cuMemMap(va + i * FS, FS, 0, mh[i], 0));
	ASSERT_EQ(CUDA_SUCCESS, cuMemSetAccess(va, 2 * FS, &acc, 1));
	view.base = va;
	EXPECT_EQ(0, check_tokens(&view, 9, 0, TPF + 1));
	fill_tokens(&view, 10, 0, TPF + 1);
	EXPECT_EQ(0, check_tokens(&view, 10, 0, TPF + 1));
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(CUDA_SUCCESS, cuMemUnmap(va + i * FS, FS));
		EXPECT_EQ(CUDA_SUCCESS, cuMemRelease(mh[i]));
	}
	EXPECT_EQ(CUDA_SUCCESS, cuMemAddressFree(va, 2 * FS));
	EXPECT_EQ(CUDA_SUCCESS, cuCtxPopCurrent(&ctx));
	EXPECT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(dev));
	/* the exporter's release may trail its exit by a moment */
	for (tries = 0; tries < 500 && kva_arena_destroy(&p) == -EBUSY; tries++)
		usleep(10000);
	EXPECT_EQ(-ENOENT, kva_arena_destroy(&p));
	EXPECT_TRUE(all_released());
}

/* ---- kva_scrub(): a CUDA arena's frames between two uids --------------- */

#define VICTIM	1001
#define NOBODY	65534

/* Run @fn(@name) in a child as @uid; its exit code, or 1000 + signal. */
static int run_as(uid_t uid, int (*fn)(const char *), const char *name)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
		    setresuid(uid, uid, uid))
			_exit(250);
		_exit(fn(name));
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	/* Its client may outlive it a moment (io_uring's task work). */
	module_wait_clients(name, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) :
	       1000 + WTERMSIG(status);
}

static int open_device(const char *name, struct kva_arena **a)
{
	struct kva_open_opts o = { .mode = KVA_MODE_DEVICE, .name = name };

	cuda_double_set_granularity(FS);
	return kva_open(&o, a);
}

/* Fills the whole arena with its tokens, then closes (its frames go). */
static int victim_fills_the_arena(const char *name)
{
	struct kva_geometry g = small_geometry(FS);
	struct kva_arena *a;
	struct kva_seq *s;

	if (open_device(name, &a) || kva_seq_create(a, &g, 4 * TPF, &s) ||
	    kva_seq_grow(s, 4 * TPF))
		return 2;
	fill_tokens(s, 11, 0, 4 * TPF);
	kva_close(a);
	return 0;
}

/* Wants the whole arena: refused until the frames are scrubbed. */
static int other_uid_is_refused(const char *name)
{
	struct kva_geometry g = small_geometry(FS);
	struct kva_arena *a;
	struct kva_seq *s;
	int ret;

	if (open_device(name, &a) || kva_seq_create(a, &g, 4 * TPF, &s))
		return 2;
	ret = kva_seq_grow(s, 4 * TPF);
	/* and it may not scrub them itself */
	if (kva_scrub(a, 4, 0) != -EPERM)
		return 3;
	kva_close(a);
	return ret == -ENOSPC ? 0 : 4;
}

/* Gets the whole arena: every byte zero. */
static int other_uid_reads_zeros(const char *name)
{
	struct kva_geometry g = small_geometry(FS);
	struct kva_arena *a;
	struct kva_seq *s;
	const unsigned char *p;
	uint64_t i;

	if (open_device(name, &a) || kva_seq_create(a, &g, 4 * TPF, &s) ||
	    kva_seq_grow(s, 4 * TPF))
		return 2;
	p = (const unsigned char *)(uintptr_t)s->base;
	for (i = 0; i < 4ull * FS; i++)
		if (p[i])
			return 3;
	kva_close(a);
	return 0;
}

/* Not a module arena: nothing to scrub. */
TEST(kva_scrub_refuses_an_embedded_arena)
{
	struct kva_open_opts e = { .mode = KVA_MODE_EMBEDDED, .nr_frames = 2,
				   .frame_size = 4096 };
	struct kva_arena *a;

	ASSERT_EQ(0, kva_open(&e, &a));
	EXPECT_EQ(-EOPNOTSUPP, kva_scrub(a, 1, 0));
	EXPECT_EQ(-EINVAL, kva_scrub(a, 0, 0));
	EXPECT_EQ(-EINVAL, kva_scrub(NULL, 1, 0));
	kva_close(a);
}

TEST(kva_scrub_clears_a_cuda_arenas_frames_for_another_uid)
{
	char name[KVARENA_NAME_LEN];
	struct kva_arena_params p = {
		.name = pid_name(name, "gpus"), .nr_frames = 4,
		.frame_size = FS, .mem_kind = KVA_BACKEND_CUDA,
	};
	struct kvarena_stat st;
	struct kva_arena *a;
	const char *trace;
	struct stat dev;

	cuda_double_set_granularity(FS);
	ASSERT_EQ(0, kva_arena_create(&p));
	ASSERT_EQ(0, stat(KVARENA_DEVICE, &dev));
	ASSERT_EQ(0, chmod(KVARENA_DEVICE, 0666));
	EXPECT_EQ(0, run_as(VICTIM, victim_fills_the_arena, name));
	st = module_stat(name);
	EXPECT_EQ(4, st.nr_dirty);
	EXPECT_EQ(0, st.nr_quarantined);
	EXPECT_EQ(0, run_as(NOBODY, other_uid_is_refused, name));

	/* The owner (root here) scrubs: one batch, waited for, then unmapped. */
	ASSERT_EQ(0, open_device(name, &a));
	cuda_double_reset();
	EXPECT_EQ(4, kva_scrub(a, 16, 0));
	EXPECT_EQ(1, cuda_double_count("cuMemsetD8Async"));
	trace = cuda_double_trace();
	ASSERT_NE(NULL, strstr(trace, "cuMemsetD8Async cuStreamSynchronize"));
	EXPECT_LT(strstr(trace, "cuStreamSynchronize"),
		  strstr(trace, "cuMemUnmap"));
	/* Its imports are let go of: nothing holds the frames' memory now. */
	EXPECT_EQ(4, cuda_double_count("cuMemRelease"));
	EXPECT_EQ(0, kva_scrub(a, 16, 0));
	st = module_stat(name);
	EXPECT_EQ(0, st.nr_dirty);
	EXPECT_EQ(4, st.frames_cleared);
	kva_close(a);
	EXPECT_EQ(0, run_as(NOBODY, other_uid_reads_zeros, name));

	chmod(KVARENA_DEVICE, dev.st_mode & 07777);
	ASSERT_EQ(0, module_wait_clients(name, 0));
	ASSERT_EQ(0, kva_arena_destroy(&p));
	EXPECT_TRUE(all_released());
}

/* ---- kva_tier_agent(): a CUDA arena's prefix down to host memory and back */

#define TIER_TAG	31

static struct kva_key tier_keys[2];

/* The keys of the tier test's prompt: token i is i * 17 + 3. */
static int tier_prompt_keys(void)
{
	struct kva_geometry g = small_geometry(FS);
	static uint32_t t[2 * TPF];

	for (uint32_t i = 0; i < 2 * TPF; i++)
		t[i] = i * 17 + 3;
	return kva_prefix_keys(&g, "tier", 4, t, 2 * TPF, tier_keys, 2);
}

/* Publishes two frames of the prompt and exits: they stay cached. */
static int publisher(const char *name)
{
	struct kva_geometry g = small_geometry(FS);
	struct kva_arena *a;
	struct kva_seq *s;

	if (open_device(name, &a) || kva_seq_create(a, &g, 4 * TPF, &s) ||
	    kva_seq_grow(s, 2 * TPF))
		return 2;
	fill_tokens(s, TIER_TAG, 0, 2 * TPF);
	if (kva_seq_publish(s, tier_keys, 2) != 2)
		return 3;
	kva_close(a);
	return 0;
}

/* Finds the prompt below and has it promoted: reads it byte-exact. */
static int reader(const char *name)
{
	struct kva_open_opts o = { .mode = KVA_MODE_DEVICE, .name = name,
				   .label = "reader", .promote_ms = 20000 };
	struct kva_geometry g = small_geometry(FS);
	struct kva_arena *a;
	struct kva_seq *s;

	cuda_double_set_granularity(FS);
	if (kva_open(&o, &a) || kva_seq_create(a, &g, 4 * TPF, &s))
		return 2;
	if (kva_seq_attach_prefix(s, tier_keys, 2) != 2)
		return 3;
	if (check_tokens(s, TIER_TAG, 0, 2 * TPF))
		return 4;
	kva_close(a);
	return 0;
}

static int set_tier(const char *name, const char *lower, uint32_t target)
{
	struct kvarena_arena_tier t = { .free_target = target };

	snprintf(t.name, sizeof(t.name), "%s", name);
	snprintf(t.lower, sizeof(t.lower), "%s", lower);
	return module_ioctl(O_RDWR, KVARENA_IOC_ARENA_SET_TIER, &t);
}

/* The agent's loop: until @c has @down demotions and @up promotions. */
static int agent_until(struct kva_arena *a, struct kva_arena *lo,
		       struct kva_tier_counts *c, uint64_t down, uint64_t up)
{
	int i, ret = 0;

	for (i = 0; i < 200 && (c->demoted < down || c->promoted < up); i++) {
		ret = kva_tier_agent(a, lo, 16, 100, c);
		if (ret < 0)
			return ret;
	}
	return c->demoted == down && c->promoted == up ? 0 : -ETIME;
}

TEST(kva_tier_agent_moves_a_cuda_prefix_to_host_memory_and_back)
{
	char name[KVARENA_NAME_LEN], lower[KVARENA_NAME_LEN];
	struct kva_arena_params up = {
		.name = pid_name(name, "tgpu"), .nr_frames = 4,
		.frame_size = FS, .mem_kind = KVA_BACKEND_CUDA,
	};
	struct kva_arena_params lp = {
		.name = pid_name(lower, "thost"), .nr_frames = 4,
		.frame_size = FS, .mem_kind = KVA_BACKEND_HOST,
	};
	struct kva_open_opts lo_o = { .mode = KVA_MODE_DEVICE, .name = lower,
				      .label = "agent" };
	struct kva_tier_counts c = { 0 };
	struct kva_arena *a, *lo;
	const char *trace;
	int status;
	pid_t pid;

	ASSERT_EQ(2, tier_prompt_keys());
	cuda_double_set_granularity(FS);
	ASSERT_EQ(0, kva_arena_create(&up));
	ASSERT_EQ(0, kva_arena_create(&lp));
	/* Demote whatever is cached: keep every frame free. */
	ASSERT_EQ(0, set_tier(name, lower, 4));
	EXPECT_EQ(0, run_as(0, publisher, name));
	EXPECT_EQ(2, module_stat(name).nr_cached);

	ASSERT_EQ(0, open_device(name, &a));
	ASSERT_EQ(0, kva_open(&lo_o, &lo));
	EXPECT_EQ(-EINVAL, kva_tier_agent(a, a, 1, 0, &c));
	EXPECT_EQ(-EINVAL, kva_tier_agent(a, lo, 0, 0, &c));
	/* The lower arena must be host memory. */
	EXPECT_EQ(-EINVAL, kva_tier_agent(lo, a, 1, 0, &c));

	/*
	 * Down: the device gets to the copies only when the agent waits
	 * (asynchronous model), and the agent waits before unmapping.
	 */
	cuda_double_reset();
	cuda_double_set_async(true);
	ASSERT_EQ(0, agent_until(a, lo, &c, 2, 0));
	cuda_double_set_async(false);
	EXPECT_EQ(0, c.failed);
	EXPECT_EQ(2, cuda_double_count("cuMemcpyDtoHAsync_v2"));
	EXPECT_EQ(1, cuda_double_count("cuStreamCreate"));
	trace = cuda_double_trace();
	ASSERT_NE(NULL, strstr(trace, "cuMemcpyDtoHAsync_v2 cuStreamSynchronize"));
	EXPECT_LT(strstr(trace, "cuStreamSynchronize"),
		  strstr(trace, "cuMemUnmap"));
	/* its imports let go of, the source mapped read-only, no fault */
	EXPECT_EQ(2, cuda_double_count("cuMemRelease"));
	EXPECT_EQ(0, cuda_double_faults());
	EXPECT_EQ(0, cuda_double_violations());
	EXPECT_EQ(0, module_stat(name).nr_cached);
	EXPECT_EQ(2, module_stat(lower).nr_cached);

	/* Up: a reader's PROMOTE, copied by the agent while it waits. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(reader(name));
	cuda_double_reset();
	cuda_double_set_async(true);
	EXPECT_EQ(0, agent_until(a, lo, &c, 2, 2));
	cuda_double_set_async(false);
	EXPECT_EQ(2, cuda_double_count("cuMemcpyHtoDAsync_v2"));
	EXPECT_EQ(0, cuda_double_faults());
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, c.failed);

	kva_close(lo);
	kva_close(a);
	ASSERT_EQ(0, module_wait_clients(name, 0));
	ASSERT_EQ(0, module_wait_clients(lower, 0));
	EXPECT_EQ(0, set_tier(name, "", 0));
	ASSERT_EQ(0, kva_arena_destroy(&up));
	ASSERT_EQ(0, kva_arena_destroy(&lp));
	EXPECT_TRUE(all_released());
}

/* Without a lower tier, or as no arena's agent, nothing is taken. */
TEST(kva_tier_agent_refusals)
{
	struct kva_open_opts e = { .mode = KVA_MODE_EMBEDDED, .nr_frames = 2,
				   .frame_size = 4096 };
	char name[KVARENA_NAME_LEN], lower[KVARENA_NAME_LEN];
	struct kva_arena_params up = {
		.name = pid_name(name, "tnot"), .nr_frames = 2,
		.frame_size = FS, .mem_kind = KVA_BACKEND_CUDA,
	};
	struct kva_arena_params lp = {
		.name = pid_name(lower, "tnotl"), .nr_frames = 2,
		.frame_size = FS, .mem_kind = KVA_BACKEND_HOST,
	};
	struct kva_open_opts lo_o = { .mode = KVA_MODE_DEVICE, .name = lower };
	struct kva_arena *emb, *a, *lo;

	ASSERT_EQ(0, kva_open(&e, &emb));
	EXPECT_EQ(-EINVAL, kva_tier_agent(NULL, emb, 1, 0, NULL));
	EXPECT_EQ(-EINVAL, kva_tier_agent(emb, NULL, 1, 0, NULL));
	cuda_double_set_granularity(FS);
	ASSERT_EQ(0, kva_arena_create(&up));
	ASSERT_EQ(0, kva_arena_create(&lp));
	ASSERT_EQ(0, open_device(name, &a));
	ASSERT_EQ(0, kva_open(&lo_o, &lo));
	EXPECT_EQ(-EOPNOTSUPP, kva_tier_agent(emb, lo, 1, 0, NULL));
	/* no tier yet: the module says so */
	EXPECT_EQ(-EOPNOTSUPP, kva_tier_agent(a, lo, 1, 0, NULL));
	ASSERT_EQ(0, set_tier(name, lower, 0));
	EXPECT_EQ(0, kva_tier_agent(a, lo, 1, 0, NULL));
	kva_close(lo);
	kva_close(a);
	kva_close(emb);
	ASSERT_EQ(0, module_wait_clients(name, 0));
	ASSERT_EQ(0, module_wait_clients(lower, 0));
	EXPECT_EQ(0, set_tier(name, "", 0));
	ASSERT_EQ(0, kva_arena_destroy(&up));
	ASSERT_EQ(0, kva_arena_destroy(&lp));
	EXPECT_TRUE(all_released());
}

TEST_HARNESS_MAIN
