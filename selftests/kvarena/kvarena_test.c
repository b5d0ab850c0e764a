// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko selftests: every command's success path and every error the
 * uapi header promises.  Runs as root inside the VM (selftests/vm/run.sh)
 * with the module loaded; each test makes its own arena and leaves none.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kva_test.h"
#include "kva_uring.h"

#define NR	32
#define FSIZE	(64 * 1024)

/* An accounting-only arena (no backing) with two clients attached. */
FIXTURE(arena) {
	int fd;			/* admin, attached as client "a" */
	int fd2;		/* attached as client "b" */
	char name[32];
	__u32 id, id2;
	__u64 h[2 * NR];
};

FIXTURE_SETUP(arena)
{
	struct kvarena_attach at;

	snprintf(self->name, sizeof(self->name), "t%d", getpid());
	self->fd = kva_open(O_RDWR);
	ASSERT_LE(0, self->fd);
	self->fd2 = kva_open(O_RDWR);
	ASSERT_LE(0, self->fd2);
	ASSERT_EQ(0, kva_create(self->fd, self->name, NR, FSIZE, 4));
	ASSERT_EQ(0, kva_attach(self->fd, self->name, "a", 0, 0, &at));
	self->id = at.client_id;
	ASSERT_EQ(0, kva_attach(self->fd2, self->name, "b", 0, 0, &at));
	self->id2 = at.client_id;
}

FIXTURE_TEARDOWN(arena)
{
	int admin = kva_open(O_RDWR);

	close(self->fd);
	close(self->fd2);
	EXPECT_EQ(0, kva_wait_no_clients(admin, self->name));
	EXPECT_EQ(0, kva_destroy(admin, self->name));
	close(admin);
}

static int arena_free(struct __test_metadata *_metadata, int fd,
		      const char *name)
{
	struct kvarena_stat s;

	EXPECT_EQ(0, kva_stat(fd, name, &s));
	return s.nr_free;
}

/* ---- ABI basics ---------------------------------------------------- */

/*
 * KVARENA_FEAT_URING_CMD where the running kernel's io_uring has
 * IORING_OP_URING_CMD (5.19+), as io_uring's own probe says, else 0.
 */
static __u64 uring_cmd_feature(void)
{
	struct io_uring_probe *p = io_uring_get_probe();
	bool have = p && io_uring_opcode_supported(p, IORING_OP_URING_CMD);

	if (p)
		io_uring_free_probe(p);
	return have ? KVARENA_FEAT_URING_CMD : 0;
}

/*
 * KVARENA_FEAT_DMEM where the running kernel has the dmem cgroup
 * controller, as its own /proc/cgroups lists it, and the module's dmem
 * parameter is on (the kernels tested with the controller all have the
 * 7.x interface the module charges through), else 0.
 */
static __u64 dmem_feature(void)
{
	char line[128], param[8] = "";
	bool have = false;
	FILE *f = fopen("/proc/cgroups", "re");

	while (f && fgets(line, sizeof(line), f))
		have |= !strncmp(line, "dmem\t", 5);
	if (f)
		fclose(f);
	f = fopen("/sys/module/kvarena/parameters/dmem", "re");
	if (f && !fgets(param, sizeof(param), f))
		param[0] = '\0';
	if (f)
		fclose(f);
	return have && param[0] == 'Y' ? KVARENA_FEAT_DMEM : 0;
}

TEST(version_reports_abi_and_features)
{
	struct kvarena_version v = { 0 };
	int fd = kva_open(O_RDONLY);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kva_ioctl(fd, KVARENA_IOC_VERSION, &v));
	EXPECT_EQ(KVARENA_ABI_VERSION, v.abi_version);
	EXPECT_EQ(uring_cmd_feature() | KVARENA_FEAT_POLL |
		  KVARENA_FEAT_SYSFS | KVARENA_FEAT_PREFIX | KVARENA_FEAT_EVENTS |
		  KVARENA_FEAT_POLLOUT | KVARENA_FEAT_DOMAINS |
		  KVARENA_FEAT_CLEAR | KVARENA_FEAT_SCRUB | KVARENA_FEAT_RESIZE |
		  KVARENA_FEAT_IMPORTS_DROPPED | KVARENA_FEAT_TIER |
		  KVARENA_FEAT_FILE | KVARENA_FEAT_GANG | dmem_feature(),
		  v.features);
	v.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_VERSION, &v));
	close(fd);
}

TEST(unknown_command_or_size_is_enotty)
{
	char buf[256] = { 0 };
	int fd = kva_open(O_RDWR);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENOTTY, kva_ioctl(fd, _IOWR('K', 0x3f, buf), buf));
	/* PUBLISH's number with another struct is another command. */
	EXPECT_EQ(-ENOTTY, kva_ioctl(fd, _IOWR('K', 0x0c, buf), buf));
	/* A known number with another struct size is another command. */
	EXPECT_EQ(-ENOTTY, kva_ioctl(fd, _IOWR('K', 0x09, char[8]), buf));
	EXPECT_EQ(-ENOTTY, kva_ioctl(fd, _IOWR('X', 0x00, struct kvarena_version), buf));
	close(fd);
}

TEST(bad_user_pointer_is_efault)
{
	int fd = kva_open(O_RDWR);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EFAULT, kva_ioctl(fd, KVARENA_IOC_VERSION, (void *)8));
	EXPECT_EQ(-EFAULT, kva_ioctl(fd, KVARENA_IOC_STAT, NULL));
	EXPECT_EQ(-EFAULT, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, (void *)-1L));
	close(fd);
}

TEST(device_node_is_mode_0660)
{
	struct stat st;

	ASSERT_EQ(0, stat(KVARENA_DEVICE, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0660, st.st_mode & 0777);
}

/* ---- arenas --------------------------------------------------------- */

TEST(create_and_destroy_arena)
{
	struct kvarena_stat s;
	int fd = kva_open(O_RDWR);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kva_create(fd, "cd-arena", 10, 2 << 20, 3));
	ASSERT_EQ(0, kva_stat(fd, "cd-arena", &s));
	EXPECT_EQ(10, s.nr_frames);
	EXPECT_EQ(10, s.nr_free);
	EXPECT_EQ(0, s.nr_held);
	EXPECT_EQ(2 << 20, s.frame_size);
	EXPECT_EQ(3, s.low_watermark);
	EXPECT_EQ(1024, s.bytes_per_token);
	EXPECT_EQ(KVARENA_MEM_HOST, s.mem_kind);
	EXPECT_EQ(0, kva_destroy(fd, "cd-arena"));
	EXPECT_EQ(-ENOENT, kva_stat(fd, "cd-arena", &s));
	close(fd);
}

TEST(create_duplicate_name_is_eexist)
{
	int fd = kva_open(O_RDWR);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kva_create(fd, "dup", 4, FSIZE, 0));
	EXPECT_EQ(-EEXIST, kva_create(fd, "dup", 8, FSIZE, 0));
	EXPECT_EQ(0, kva_destroy(fd, "dup"));
	close(fd);
}

TEST(create_with_bad_name_is_einval)
{
	struct kvarena_arena_create c = { .frame_size = FSIZE, .nr_frames = 4 };
	int fd = kva_open(O_RDWR);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, kva_create(fd, "", 4, FSIZE, 0));
	EXPECT_EQ(-EINVAL, kva_create(fd, "a/b", 4, FSIZE, 0));
	EXPECT_EQ(-EINVAL, kva_create(fd, ".hidden", 4, FSIZE, 0));
	EXPECT_EQ(-EINVAL, kva_create(fd, "sp ace", 4, FSIZE, 0));
	memset(c.name, 'x', sizeof(c.name));	/* no NUL */
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	close(fd);
}

TEST(create_with_bad_geometry_is_einval)
{
	int fd = kva_open(O_RDWR);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, kva_create(fd, "g", 4, 0, 0));
	EXPECT_EQ(-EINVAL, kva_create(fd, "g", 4, 3 * 4096, 0));
	EXPECT_EQ(-EINVAL, kva_create(fd, "g", 4, 2048, 0));
	EXPECT_EQ(-EINVAL, kva_create(fd, "g", 4, 2ull << 30, 0));
	EXPECT_EQ(-EINVAL, kva_create(fd, "g", 0, FSIZE, 0));
	EXPECT_EQ(-EINVAL, kva_create(fd, "g", KVARENA_MAX_FRAMES + 1, FSIZE, 0));
	EXPECT_EQ(-EINVAL, kva_create(fd, "g", 4, FSIZE, 5));	/* watermark */
	close(fd);
}

TEST(create_with_unknown_flags_kind_or_reserved_is_einval)
{
	struct kvarena_arena_create c = { .name = "f", .frame_size = FSIZE,
					  .nr_frames = 4 };
	int fd = kva_open(O_RDWR);

	ASSERT_LE(0, fd);
	c.flags = 1u << 5;
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	c.flags = KVARENA_CREATE_NO_BACKING;
	c.reserved[2] = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	c.reserved[2] = 0;
	c.cache_domains = KVARENA_DOMAINS_ARENA + 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	c.cache_domains = 0;
	/* Frames with no memory behind them have nothing to clear. */
	c.flags |= KVARENA_CREATE_CLEAR_ALWAYS;
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	c.flags &= ~KVARENA_CREATE_CLEAR_ALWAYS;
	c.mem_kind = 7;
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	c.mem_kind = KVARENA_MEM_HOST;
	c.mem_dev = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	c.mem_dev = 0;
	ASSERT_EQ(0, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	EXPECT_EQ(0, kva_destroy(fd, "f"));
	close(fd);
}

TEST(destroy_unknown_arena_is_enoent)
{
	int fd = kva_open(O_RDWR);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENOENT, kva_destroy(fd, "no-such-arena"));
	close(fd);
}

TEST_F(arena, destroy_with_clients_attached_is_ebusy)
{
	struct kvarena_stat s;

	EXPECT_EQ(-EBUSY, kva_destroy(self->fd, self->name));
	ASSERT_EQ(0, kva_stat(self->fd, self->name, &s));
	EXPECT_EQ(2, s.nr_clients);
}

TEST(non_admin_is_refused_admin_commands)
{
	struct kvarena_attach at;
	int fd = kva_open(O_RDWR), cl = kva_open(O_RDWR);
	pid_t pid;
	int status;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kva_create(fd, "adm", 4, FSIZE, 0));
	ASSERT_EQ(0, kva_attach(cl, "adm", "c", 0, 0, &at));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int mfd = memfd_create("m", 0), bad = 0;

		if (ftruncate(mfd, 4 * FSIZE) || setresuid(65534, 65534, 65534))
			_exit(100);
		/* The open file is still read-write: only the capability is gone. */
		bad |= kva_create(fd, "adm2", 4, FSIZE, 0) != -EPERM;
		bad |= kva_destroy(fd, "adm") != -EPERM;
		bad |= kva_set_backing(fd, "adm", 0, 4, mfd, 0) != -EPERM;
		bad |= kva_set_limits(fd, "adm", at.client_id, 1, 2) != -EPERM;
		/* Clients need no capability. */
		bad |= kva_alloc(cl, (__u64[1]){ 0 }, 1, 0) != 1;
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, kva_exited(status));
	close(cl);
	EXPECT_EQ(0, kva_destroy(fd, "adm"));
	close(fd);
}

/* ---- attach ---------------------------------------------------------- */

TEST_F(arena, attach_returns_client_id_and_geometry)
{
	struct kvarena_attach at;
	int fd = kva_open(O_RDWR), fd2 = kva_open(O_RDWR);

	ASSERT_EQ(0, kva_attach(fd, self->name, "c", 1, 5, &at));
	EXPECT_EQ(self->id2 + 1, at.client_id);
	EXPECT_NE(self->id, self->id2);
	EXPECT_EQ(NR, at.nr_frames);
	EXPECT_EQ(FSIZE, at.frame_size);
	EXPECT_EQ(1024, at.bytes_per_token);
	EXPECT_EQ(KVARENA_MEM_HOST, at.mem_kind);
	EXPECT_EQ(5, at.max_frames);
	ASSERT_EQ(0, kva_attach(fd2, self->name, "d", 0, 0, &at));
	EXPECT_EQ(NR, at.max_frames);	/* 0 means the arena's size */
	close(fd2);
	close(fd);
}

TEST_F(arena, attach_twice_is_ebusy)
{
	EXPECT_EQ(-EBUSY, kva_attach(self->fd, self->name, "again", 0, 0, NULL));
}

TEST_F(arena, attach_unknown_arena_or_bad_fields_is_refused)
{
	struct kvarena_attach at = { 0 };
	int fd = kva_open(O_RDWR);

	EXPECT_EQ(-ENOENT, kva_attach(fd, "nope", "c", 0, 0, NULL));
	EXPECT_EQ(-EINVAL, kva_attach(fd, self->name, "c", 5, 4, NULL));
	EXPECT_EQ(-EINVAL, kva_attach(fd, self->name, "c", 0, NR + 1, NULL));
	snprintf(at.name, sizeof(at.name), "%s", self->name);
	memset(at.label, 'l', sizeof(at.label));	/* no NUL */
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ATTACH, &at));
	at.label[0] = 0;
	at.flags = 2;
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ATTACH, &at));
	at.flags = 0;
	at.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ATTACH, &at));
	/* None of the refusals attached the file. */
	EXPECT_EQ(0, kva_attach(fd, self->name, "c", 0, 0, NULL));
	close(fd);
}

TEST_F(arena, attach_min_beyond_unreserved_frames_is_enospc)
{
	int g = kva_open(O_RDWR), h = kva_open(O_RDWR);

	ASSERT_EQ(0, kva_attach(g, self->name, "g", NR - 2, 0, NULL));
	EXPECT_EQ(-ENOSPC, kva_attach(h, self->name, "h", 3, 0, NULL));
	EXPECT_EQ(0, kva_attach(h, self->name, "h", 2, 0, NULL));
	close(g);
	close(h);
}

TEST(client_commands_before_attach_are_enotconn)
{
	struct kvarena_frame_fd ff;
	__u64 h = KVARENA_HANDLE(1, 0);
	int fd = kva_open(O_RDWR);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENOTCONN, kva_alloc(fd, &h, 1, 0));
	EXPECT_EQ(-ENOTCONN, kva_free(fd, &h, 1));
	EXPECT_EQ(-ENOTCONN, kva_frame_fd(fd, h, &ff));
	EXPECT_EQ(-ENOTCONN, kva_set_usage(fd, 1, 1));
	close(fd);
}

/* ---- read-only opens --------------------------------------------------- */

TEST_F(arena, read_only_open_is_refused_every_mutating_command)
{
	struct kvarena_frame_fd ff;
	int ro = kva_open(O_RDONLY);
	__u64 h = KVARENA_HANDLE(1, 0);
	int mfd = memfd_create("m", 0);

	ASSERT_LE(0, ro);
	ASSERT_EQ(0, ftruncate(mfd, NR * FSIZE));
	EXPECT_EQ(-EBADF, kva_create(ro, "ro", 4, FSIZE, 0));
	EXPECT_EQ(-EBADF, kva_destroy(ro, self->name));
	EXPECT_EQ(-EBADF, kva_set_backing(ro, self->name, 0, NR, mfd, 0));
	EXPECT_EQ(-EBADF, kva_attach(ro, self->name, "ro", 0, 0, NULL));
	EXPECT_EQ(-EBADF, kva_alloc(ro, &h, 1, 0));
	EXPECT_EQ(-EBADF, kva_free(ro, &h, 1));
	EXPECT_EQ(-EBADF, kva_frame_fd(ro, h, &ff));
	EXPECT_EQ(-EBADF, kva_set_usage(ro, 0, 0));
	EXPECT_EQ(-EBADF, kva_set_limits(ro, self->name, self->id, 0, 0));
	close(mfd);
	close(ro);
}

TEST_F(arena, read_only_open_may_stat_and_list_clients)
{
	struct kvarena_client_info rows[4];
	struct kvarena_clients c = { .clients = (__u64)(unsigned long)rows,
				     .count = 4 };
	struct kvarena_stat s;
	int ro = kva_open(O_RDONLY);

	ASSERT_LE(0, ro);
	ASSERT_EQ(0, kva_stat(ro, self->name, &s));
	EXPECT_EQ(NR, s.nr_frames);
	snprintf(c.name, sizeof(c.name), "%s", self->name);
	ASSERT_EQ(0, kva_ioctl(ro, KVARENA_IOC_CLIENTS, &c));
	EXPECT_EQ(2, c.nr_clients);
	close(ro);
}

/* ---- alloc and free ---------------------------------------------------- */

TEST_F(arena, alloc_to_exhaustion_and_free_back_to_full)
{
	struct kvarena_stat s;
	__u64 one;

	ASSERT_EQ(NR, kva_alloc(self->fd, self->h, NR, 0));
	EXPECT_EQ(-ENOSPC, kva_alloc(self->fd2, &one, 1, 0));
	ASSERT_EQ(0, kva_stat(self->fd, self->name, &s));
	EXPECT_EQ(0, s.nr_free);
	EXPECT_EQ(NR, s.nr_held);
	ASSERT_EQ(0, kva_free(self->fd, self->h, NR));
	ASSERT_EQ(0, kva_stat(self->fd, self->name, &s));
	EXPECT_EQ(NR, s.nr_free);
	EXPECT_EQ(NR, s.peak_held);
}

TEST_F(arena, alloc_is_all_or_nothing)
{
	ASSERT_EQ(NR - 2, kva_alloc(self->fd, self->h, NR - 2, 0));
	EXPECT_EQ(-ENOSPC, kva_alloc(self->fd2, self->h + NR, 3, 0));
	EXPECT_EQ(2, arena_free(_metadata, self->fd, self->name));
}

TEST_F(arena, alloc_partial_takes_what_is_free)
{
	ASSERT_EQ(NR - 2, kva_alloc(self->fd, self->h, NR - 2, 0));
	EXPECT_EQ(2, kva_alloc(self->fd2, self->h + NR, 3,
			       KVARENA_ALLOC_PARTIAL));
	EXPECT_EQ(0, arena_free(_metadata, self->fd, self->name));
	EXPECT_EQ(-ENOSPC, kva_alloc(self->fd2, self->h + NR, 1,
				     KVARENA_ALLOC_PARTIAL));
}

TEST_F(arena, alloc_with_bad_count_or_flags_is_einval)
{
	struct kvarena_frames f = { .handles = (__u64)(unsigned long)self->h,
				    .count = 1 };

	EXPECT_EQ(-EINVAL, kva_alloc(self->fd, self->h, 0, 0));
	EXPECT_EQ(-EINVAL, kva_alloc(self->fd, self->h, KVARENA_MAX_BATCH + 1, 0));
	EXPECT_EQ(-EINVAL, kva_alloc(self->fd, self->h, 1, 1u << 7));
	f.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->fd, KVARENA_IOC_ALLOC, &f));
	f.reserved[1] = 0;
	f.reserved0 = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->fd, KVARENA_IOC_ALLOC, &f));
	EXPECT_EQ(-EINVAL, kva_free(self->fd, self->h, 0));
	EXPECT_EQ(NR, arena_free(_metadata, self->fd, self->name));
}

TEST_F(arena, alloc_to_bad_pointer_is_efault_and_keeps_nothing)
{
	struct kvarena_stat s;

	EXPECT_EQ(-EFAULT, kva_alloc(self->fd, (__u64 *)8, 4, 0));
	/* Also past the small on-stack batch. */
	EXPECT_EQ(-EFAULT, kva_alloc(self->fd, (__u64 *)8, NR, 0));
	ASSERT_EQ(0, kva_stat(self->fd, self->name, &s));
	EXPECT_EQ(NR, s.nr_free);
	EXPECT_EQ(2, s.alloc_calls);
}

TEST_F(arena, free_from_bad_pointer_is_efault)
{
	ASSERT_EQ(2, kva_alloc(self->fd, self->h, 2, 0));
	EXPECT_EQ(-EFAULT, kva_free(self->fd, (__u64 *)8, 2));
	EXPECT_EQ(NR - 2, arena_free(_metadata, self->fd, self->name));
	EXPECT_EQ(0, kva_free(self->fd, self->h, 2));
}

TEST_F(arena, free_stale_handle_is_estale)
{
	__u64 old;

	ASSERT_EQ(1, kva_alloc(self->fd, &old, 1, 0));
	ASSERT_EQ(0, kva_free(self->fd, &old, 1));
	ASSERT_EQ(1, kva_alloc(self->fd2, self->h, 1, 0));
	EXPECT_EQ(KVARENA_HANDLE_IDX(old), KVARENA_HANDLE_IDX(self->h[0]));
	EXPECT_EQ(-ESTALE, kva_free(self->fd, &old, 1));
	EXPECT_EQ(-ESTALE, kva_free(self->fd2, &old, 1));
	EXPECT_EQ(-ESTALE, kva_frame_fd(self->fd2, old, NULL));
	EXPECT_EQ(NR - 1, arena_free(_metadata, self->fd, self->name));
}

TEST_F(arena, double_free_is_estale)
{
	ASSERT_EQ(3, kva_alloc(self->fd, self->h, 3, 0));
	ASSERT_EQ(0, kva_free(self->fd, self->h, 3));
	EXPECT_EQ(-ESTALE, kva_free(self->fd, self->h + 1, 1));
	EXPECT_EQ(NR, arena_free(_metadata, self->fd, self->name));
}

TEST_F(arena, free_of_other_clients_frame_is_eperm)
{
	ASSERT_EQ(1, kva_alloc(self->fd, self->h, 1, 0));
	EXPECT_EQ(-EPERM, kva_free(self->fd2, self->h, 1));
	EXPECT_EQ(-EPERM, kva_frame_fd(self->fd2, self->h[0], NULL));
	EXPECT_EQ(NR - 1, arena_free(_metadata, self->fd, self->name));
}

TEST_F(arena, free_of_handle_nobody_holds_is_enoent)
{
	__u64 h = KVARENA_HANDLE(1, NR - 1);	/* never handed out */

	EXPECT_EQ(-ENOENT, kva_free(self->fd, &h, 1));
	h = KVARENA_HANDLE(1, NR + 100);	/* no such frame */
	EXPECT_EQ(-ENOENT, kva_free(self->fd, &h, 1));
}

TEST_F(arena, free_batch_with_a_bad_handle_frees_nothing)
{
	ASSERT_EQ(4, kva_alloc(self->fd, self->h, 4, 0));
	self->h[4] = self->h[2];
	EXPECT_EQ(-EINVAL, kva_free(self->fd, self->h, 5));
	self->h[4] = self->h[2] ^ (1ull << 32);
	EXPECT_EQ(-ESTALE, kva_free(self->fd, self->h, 5));
	EXPECT_EQ(NR - 4, arena_free(_metadata, self->fd, self->name));
	EXPECT_EQ(0, kva_free(self->fd, self->h, 4));
}

TEST_F(arena, alloc_beyond_max_returns_enospc)
{
	int l = kva_open(O_RDWR);

	ASSERT_EQ(0, kva_attach(l, self->name, "limited", 0, 3, NULL));
	ASSERT_EQ(3, kva_alloc(l, self->h, 3, 0));
	EXPECT_EQ(-ENOSPC, kva_alloc(l, self->h + 3, 1, 0));
	EXPECT_EQ(-ENOSPC, kva_alloc(l, self->h + 3, 1, KVARENA_ALLOC_PARTIAL));
	EXPECT_EQ(NR - 3, arena_free(_metadata, self->fd, self->name));
	close(l);
}

TEST_F(arena, min_guarantee_holds_between_two_clients)
{
	int g = kva_open(O_RDWR);

	ASSERT_EQ(0, kva_attach(g, self->name, "guaranteed", 8, 0, NULL));
	/* Others can take all but the eight reserved frames. */
	EXPECT_EQ(-ENOSPC, kva_alloc(self->fd, self->h, NR - 7, 0));
	ASSERT_EQ(NR - 8, kva_alloc(self->fd, self->h, NR - 7,
				    KVARENA_ALLOC_PARTIAL));
	EXPECT_EQ(-ENOSPC, kva_alloc(self->fd2, self->h + NR, 1, 0));
	ASSERT_EQ(8, kva_alloc(g, self->h + NR, 8, 0));
	EXPECT_EQ(0, arena_free(_metadata, self->fd, self->name));
	close(g);
	EXPECT_EQ(8, arena_free(_metadata, self->fd, self->name));
}

TEST_F(arena, set_limits_changes_min_and_max_live)
{
	struct kvarena_client_info row;
	struct kvarena_clients c = { .clients = (__u64)(unsigned long)&row,
				     .count = 1 };
	struct kvarena_stat s;

	ASSERT_EQ(4, kva_alloc(self->fd, self->h, 4, 0));
	ASSERT_EQ(0, kva_set_limits(self->fd, self->name, self->id, 6, 10));
	snprintf(c.name, sizeof(c.name), "%s", self->name);
	ASSERT_EQ(0, kva_ioctl(self->fd, KVARENA_IOC_CLIENTS, &c));
	EXPECT_EQ(6, row.min_frames);
	EXPECT_EQ(10, row.max_frames);
	ASSERT_EQ(0, kva_stat(self->fd, self->name, &s));
	EXPECT_EQ(2, s.nr_reserved);
	EXPECT_EQ(-ENOSPC, kva_alloc(self->fd, self->h + 4, 7, 0));
	/* Below what is held: nothing is taken away, nothing more given. */
	ASSERT_EQ(0, kva_set_limits(self->fd, self->name, self->id, 0, 2));
	EXPECT_EQ(NR - 4, arena_free(_metadata, self->fd, self->name));
	EXPECT_EQ(-ENOSPC, kva_alloc(self->fd, self->h + 4, 1, 0));
}

TEST_F(arena, set_limits_errors_change_nothing)
{
	EXPECT_EQ(-ENOENT, kva_set_limits(self->fd, self->name, 9999, 0, 0));
	EXPECT_EQ(-ENOENT, kva_set_limits(self->fd, "nope", self->id, 0, 0));
	EXPECT_EQ(-EINVAL, kva_set_limits(self->fd, self->name, self->id, 5, 4));
	EXPECT_EQ(-EINVAL, kva_set_limits(self->fd, self->name, self->id, 0,
					  NR + 1));
	ASSERT_EQ(0, kva_set_limits(self->fd, self->name, self->id2, NR - 1, 0));
	EXPECT_EQ(-ENOSPC, kva_set_limits(self->fd, self->name, self->id, 2, 0));
	EXPECT_EQ(1, kva_alloc(self->fd, self->h, 2, KVARENA_ALLOC_PARTIAL));
}

/* ---- release ------------------------------------------------------------ */

TEST_F(arena, close_returns_all_frames)
{
	int c = kva_open(O_RDWR);

	ASSERT_EQ(0, kva_attach(c, self->name, "closer", 0, 0, NULL));
	ASSERT_EQ(20, kva_alloc(c, self->h, 20, 0));
	ASSERT_EQ(0, kva_set_usage(c, 100, 100 * 1024));
	EXPECT_EQ(NR - 20, arena_free(_metadata, self->fd, self->name));
	close(c);
	EXPECT_EQ(NR, arena_free(_metadata, self->fd, self->name));
}

TEST_F(arena, sigkill_returns_all_frames)
{
	struct kvarena_stat s;
	int p[2], status;
	pid_t pid;
	char ok;

	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int c = kva_open(O_RDWR);
		__u64 h[NR];

		if (kva_attach(c, self->name, "victim", 2, 0, NULL) ||
		    kva_alloc(c, h, 25, 0) != 25 ||
		    kva_set_usage(c, 10, 10 * 1024))
			_exit(1);
		if (write(p[1], "k", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(p[0], &ok, 1));
	ASSERT_EQ(0, kva_stat(self->fd, self->name, &s));
	EXPECT_EQ(25, s.nr_held);
	EXPECT_EQ(10 * 1024, s.filled_bytes);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(0, kva_stat(self->fd, self->name, &s));
	EXPECT_EQ(NR, s.nr_free);
	EXPECT_EQ(0, s.nr_held);
	EXPECT_EQ(0, s.nr_reserved);
	EXPECT_EQ(0, s.filled_bytes);
	EXPECT_EQ(0, s.filled_tokens);
	EXPECT_EQ(2, s.nr_clients);
}

TEST_F(arena, killed_mid_calls_loses_nothing)
{
	struct kvarena_stat s;
	int i, status;
	pid_t pid[3];

	for (i = 0; i < 3; i++) {
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (pid[i] == 0) {
			int c = kva_open(O_RDWR);
			__u64 h[8];

			if (kva_attach(c, self->name, "churn", 0, 0, NULL))
				_exit(1);
			for (;;) {
				int n = kva_alloc(c, h, 8, KVARENA_ALLOC_PARTIAL);

				if (n > 0)
					kva_free(c, h, n);
			}
		}
	}
	usleep(200 * 1000);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, kill(pid[i], SIGKILL));
		ASSERT_EQ(pid[i], waitpid(pid[i], &status, 0));
	}
	ASSERT_EQ(0, kva_stat(self->fd, self->name, &s));
	EXPECT_EQ(NR, s.nr_free);
	EXPECT_EQ(2, s.nr_clients);
	EXPECT_EQ(s.frames_allocated, s.frames_freed);
	EXPECT_LT(0, s.alloc_calls);
}

/* ---- backing and FRAME_FD ------------------------------------------------ */

/*
 * A memfd-backed arena: created, backed in two ranges, then one client
 * attached.  The test keeps the memfd open to look at the frames directly.
 */
FIXTURE(backed) {
	int fd;
	int mfd;
	char name[32];
	__u64 h[NR];
};

FIXTURE_SETUP(backed)
{
	snprintf(self->name, sizeof(self->name), "b%d", getpid());
	self->fd = kva_open(O_RDWR);
	ASSERT_LE(0, self->fd);
	self->mfd = kva_sealed_memfd(NR * FSIZE);
	ASSERT_LE(0, self->mfd);
	ASSERT_EQ(0, kva_create_flags(self->fd, self->name, NR, FSIZE, 0, 0));
	ASSERT_EQ(0, kva_set_backing(self->fd, self->name, 0, NR / 2,
				     self->mfd, 0));
	ASSERT_EQ(0, kva_set_backing(self->fd, self->name, NR / 2, NR / 2,
				     self->mfd, NR / 2 * FSIZE));
	ASSERT_EQ(0, kva_attach(self->fd, self->name, "a", 0, 0, NULL));
}

FIXTURE_TEARDOWN(backed)
{
	int admin = kva_open(O_RDWR);

	close(self->fd);
	close(self->mfd);
	EXPECT_EQ(0, kva_destroy(admin, self->name));
	close(admin);
}

TEST(attach_before_every_frame_is_backed_is_eagain)
{
	int fd = kva_open(O_RDWR), c = kva_open(O_RDWR);
	int mfd = kva_sealed_memfd(4 * FSIZE);
	struct kvarena_stat s;

	ASSERT_LE(0, mfd);
	ASSERT_EQ(0, kva_create_flags(fd, "half", 4, FSIZE, 0, 0));
	EXPECT_EQ(-ENODATA, kva_attach(c, "half", "early", 0, 0, NULL));
	ASSERT_EQ(0, kva_set_backing(fd, "half", 0, 3, mfd, 0));
	EXPECT_EQ(-ENODATA, kva_attach(c, "half", "early", 0, 0, NULL));
	ASSERT_EQ(0, kva_stat(fd, "half", &s));
	EXPECT_EQ(3, s.nr_backed);
	EXPECT_EQ(0, s.state);
	ASSERT_EQ(0, kva_set_backing(fd, "half", 3, 1, mfd, 3 * FSIZE));
	EXPECT_EQ(0, kva_attach(c, "half", "ready", 0, 0, NULL));
	close(c);
	EXPECT_EQ(0, kva_destroy(fd, "half"));
	close(mfd);
	close(fd);
}

TEST_F(arena, accounting_only_arena_refuses_backing)
{
	int mfd = kva_sealed_memfd(NR * FSIZE);
	struct kvarena_stat s;

	ASSERT_LE(0, mfd);
	EXPECT_EQ(-EINVAL, kva_set_backing(self->fd, self->name, 0, NR, mfd, 0));
	ASSERT_EQ(0, kva_stat(self->fd, self->name, &s));
	EXPECT_EQ(KVARENA_STATE_NO_BACKING, s.state);
	EXPECT_EQ(0, s.nr_backed);
	close(mfd);
}

TEST_F(backed, frame_fd_maps_the_frame_at_its_offset)
{
	struct kvarena_frame_fd ff;
	struct kvarena_stat s;
	char *direct, *via;
	__u32 idx;

	ASSERT_EQ(0, kva_stat(self->fd, self->name, &s));
	EXPECT_EQ(NR, s.nr_backed);
	ASSERT_EQ(3, kva_alloc(self->fd, self->h, 3, 0));
	idx = KVARENA_HANDLE_IDX(self->h[2]);
	ASSERT_EQ(0, kva_frame_fd(self->fd, self->h[2], &ff));
	EXPECT_LE(0, ff.fd);
	EXPECT_EQ((__u64)idx * FSIZE, ff.offset);
	EXPECT_EQ(FSIZE, ff.size);
	EXPECT_EQ(FD_CLOEXEC, fcntl(ff.fd, F_GETFD) & FD_CLOEXEC);
	via = mmap(NULL, FSIZE, PROT_READ | PROT_WRITE, MAP_SHARED, ff.fd,
		   ff.offset);
	ASSERT_NE(MAP_FAILED, via);
	direct = mmap(NULL, NR * FSIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		      self->mfd, 0);
	ASSERT_NE(MAP_FAILED, direct);
	strcpy(via, "frame data");
	EXPECT_STREQ("frame data", direct + (size_t)idx * FSIZE);
	munmap(via, FSIZE);
	munmap(direct, NR * FSIZE);
	close(ff.fd);
}

TEST_F(backed, memfd_frames_mapped_in_two_processes_see_each_others_writes)
{
	int p2c[2], c2p[2], status;
	struct kvarena_frame_fd ff;
	volatile char *m;
	pid_t pid;
	char b;

	close(self->mfd);	/* the module holds the memory now */
	self->mfd = -1;
	ASSERT_EQ(1, kva_alloc(self->fd, self->h, 1, 0));
	ASSERT_EQ(0, pipe(p2c));
	ASSERT_EQ(0, pipe(c2p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* The child maps the frame through its own FRAME_FD call. */
		if (kva_frame_fd(self->fd, self->h[0], &ff))
			_exit(1);
		m = mmap(NULL, FSIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
			 ff.fd, ff.offset);
		if (m == MAP_FAILED || read(p2c[0], &b, 1) != 1)
			_exit(2);
		if (strcmp((const char *)m, "from parent"))
			_exit(3);
		strcpy((char *)m + 100, "from child");
		_exit(write(c2p[1], "c", 1) != 1);
	}
	ASSERT_EQ(0, kva_frame_fd(self->fd, self->h[0], &ff));
	m = mmap(NULL, FSIZE, PROT_READ | PROT_WRITE, MAP_SHARED, ff.fd,
		 ff.offset);
	ASSERT_NE(MAP_FAILED, m);
	strcpy((char *)m, "from parent");
	ASSERT_EQ(1, write(p2c[1], "p", 1));
	ASSERT_EQ(1, read(c2p[0], &b, 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, kva_exited(status));
	EXPECT_STREQ("from child", (const char *)m + 100);
	munmap((void *)m, FSIZE);
	close(ff.fd);
}

TEST(set_backing_errors_change_nothing)
{
	struct kvarena_set_backing b = { .nr_frames = 1 };
	int mfd = kva_sealed_memfd(NR * FSIZE), small = kva_sealed_memfd(FSIZE);
	int ro = open("/proc/self/exe", O_RDONLY), sock[2];
	struct kvarena_stat s;
	const char *name = "backing-errors";
	int fd = kva_open(O_RDWR);

	ASSERT_LE(0, mfd);
	ASSERT_EQ(0, kva_create_flags(fd, name, NR, FSIZE, 0, 0));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sock));
	EXPECT_EQ(-EBADF, kva_set_backing(fd, name, 0, 1, 999, 0));
	EXPECT_EQ(-ENOENT, kva_set_backing(fd, "nope", 0, 1, mfd, 0));
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 0, mfd, 0));
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, NR, 1, mfd, 0));
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 1, NR, mfd, 0));
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 1, mfd, 100));
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 2, small, 0));
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 1, ro, 0));
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 1, sock[0], 0));
	EXPECT_EQ(-EINVAL, kva_set_backing(fd, name, 0, 1, fd, 0));
	snprintf(b.name, sizeof(b.name), "%s", name);
	b.fd = mfd;
	b.flags = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ARENA_SET_BACKING, &b));
	b.flags = 0;
	b.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_ARENA_SET_BACKING, &b));
	/* Frames 4..7 backed; a range overlapping them is refused whole. */
	ASSERT_EQ(0, kva_set_backing(fd, name, 4, 4, mfd, 4 * FSIZE));
	EXPECT_EQ(-EBUSY, kva_set_backing(fd, name, 0, 5, mfd, 0));
	ASSERT_EQ(0, kva_stat(fd, name, &s));
	EXPECT_EQ(4, s.nr_backed);
	EXPECT_EQ(0, kva_destroy(fd, name));
	close(fd);
	close(sock[0]);
	close(sock[1]);
	close(ro);
	close(small);
	close(mfd);
}

TEST_F(arena, frame_fd_errors)
{
	struct kvarena_frame_fd ff = { 0 };

	ASSERT_EQ(1, kva_alloc(self->fd, self->h, 1, 0));
	EXPECT_EQ(-ENODATA, kva_frame_fd(self->fd, self->h[0], &ff));
	EXPECT_EQ(-ENOENT, kva_frame_fd(self->fd, KVARENA_HANDLE(1, NR + 1), &ff));
	ff.handle = self->h[0];
	ff.flags = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->fd, KVARENA_IOC_FRAME_FD, &ff));
	ff.flags = 0;
	ff.access = KVARENA_ACCESS_READ;	/* out only */
	EXPECT_EQ(-EINVAL, kva_ioctl(self->fd, KVARENA_IOC_FRAME_FD, &ff));
	ff.access = 0;
	ff.reserved0 = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->fd, KVARENA_IOC_FRAME_FD, &ff));
	ff.reserved0 = 0;
	ff.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->fd, KVARENA_IOC_FRAME_FD, &ff));
}

TEST(backing_memory_lives_until_destroy)
{
	const size_t fs = 4 << 20, size = 4 * fs;
	int fd = kva_open(O_RDWR), mfd;
	long base, filled, kept, after;
	char cg[128];
	void *m;

	ASSERT_EQ(0, kva_memcg_enter("kvarena-backing", cg, sizeof(cg)));
	mfd = kva_sealed_memfd(size);
	ASSERT_LE(0, fd);
	ASSERT_LE(0, mfd);
	base = kva_memcg_shmem_kib(cg);
	ASSERT_LE(0, base);
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ASSERT_NE(MAP_FAILED, m);
	memset(m, 0x5a, size);
	munmap(m, size);
	filled = kva_memcg_shmem_kib(cg);
	EXPECT_LE(base + 15 * 1024, filled);
	ASSERT_EQ(0, kva_create_flags(fd, "bk", 4, fs, 0, 0));
	ASSERT_EQ(0, kva_set_backing(fd, "bk", 0, 4, mfd, 0));
	close(mfd);
	/* The module's references keep the memory... */
	kept = kva_memcg_shmem_kib(cg);
	EXPECT_LE(base + 15 * 1024, kept);
	/* ...until the arena is destroyed. */
	ASSERT_EQ(0, kva_destroy(fd, "bk"));
	after = kva_memcg_shmem_kib(cg);
	EXPECT_GE(base + 2048, after);
	close(fd);
	kva_memcg_leave(cg);
}

/* ---- usage, STAT, CLIENTS, sysfs ----------------------------------------- */

TEST_F(arena, set_usage_updates_client_and_arena_filled)
{
	struct kvarena_client_info rows[2];
	struct kvarena_clients c = { .clients = (__u64)(unsigned long)rows,
				     .count = 2 };
	struct kvarena_stat s;

	ASSERT_EQ(2, kva_alloc(self->fd, self->h, 2, 0));
	ASSERT_EQ(1, kva_alloc(self->fd2, self->h + 2, 1, 0));
	ASSERT_EQ(0, kva_set_usage(self->fd, 70, 70 * 1024));
	ASSERT_EQ(0, kva_set_usage(self->fd2, 5, 5 * 1024));
	ASSERT_EQ(0, kva_set_usage(self->fd, 90, 90 * 1024));	/* replaces */
	ASSERT_EQ(0, kva_stat(self->fd, self->name, &s));
	EXPECT_EQ(95, s.filled_tokens);
	EXPECT_EQ(95 * 1024, s.filled_bytes);
	snprintf(c.name, sizeof(c.name), "%s", self->name);
	ASSERT_EQ(0, kva_ioctl(self->fd, KVARENA_IOC_CLIENTS, &c));
	EXPECT_EQ(90, rows[0].filled_tokens);
	EXPECT_EQ(90 * 1024, rows[0].filled_bytes);
	EXPECT_EQ(5 * 1024, rows[1].filled_bytes);
}

TEST_F(arena, set_usage_beyond_held_or_with_flags_is_einval)
{
	struct kvarena_usage u = { 0 };
	struct kvarena_stat s;

	ASSERT_EQ(1, kva_alloc(self->fd, self->h, 1, 0));
	ASSERT_EQ(0, kva_set_usage(self->fd, 64, FSIZE));
	EXPECT_EQ(-EINVAL, kva_set_usage(self->fd, 65, FSIZE + 1));
	u.flags = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->fd, KVARENA_IOC_SET_USAGE, &u));
	ASSERT_EQ(0, kva_stat(self->fd, self->name, &s));
	EXPECT_EQ(FSIZE, s.filled_bytes);
	EXPECT_EQ(64, s.filled_tokens);
}

TEST_F(arena, stat_counts_calls_frames_failures_and_peak)
{
	struct kvarena_stat s;
	__u64 bad = KVARENA_HANDLE(7, 0);

	ASSERT_EQ(10, kva_alloc(self->fd, self->h, 10, 0));
	ASSERT_EQ(0, kva_free(self->fd, self->h, 4));
	EXPECT_EQ(-ESTALE, kva_free(self->fd, &bad, 1));
	EXPECT_EQ(-ENOSPC, kva_alloc(self->fd2, self->h + 10, NR, 0));
	ASSERT_EQ(5, kva_alloc(self->fd2, self->h + 10, 5, 0));
	ASSERT_EQ(0, kva_stat(self->fd, self->name, &s));
	EXPECT_EQ(3, s.alloc_calls);
	EXPECT_EQ(2, s.free_calls);
	EXPECT_EQ(1, s.alloc_failures);
	EXPECT_EQ(15, s.frames_allocated);
	EXPECT_EQ(4, s.frames_freed);
	EXPECT_EQ(11, s.nr_held);
	EXPECT_EQ(11, s.peak_held);
	EXPECT_EQ(NR - 11, s.nr_free);
	EXPECT_EQ(0, s.nr_cached);
	EXPECT_EQ(KVARENA_STATE_NO_BACKING, s.state);
}

TEST(stat_by_index_walks_every_arena)
{
	int fd = kva_open(O_RDONLY), adm = kva_open(O_RDWR);
	struct kvarena_stat s;
	int seen_a = 0, seen_b = 0;
	__u32 i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kva_create(adm, "idx-a", 2, FSIZE, 0));
	ASSERT_EQ(0, kva_create(adm, "idx-b", 3, FSIZE, 0));
	for (i = 0;; i++) {
		memset(&s, 0, sizeof(s));
		s.flags = KVARENA_STAT_BY_INDEX;
		s.index = i;
		if (kva_ioctl(fd, KVARENA_IOC_STAT, &s))
			break;
		seen_a += !strcmp(s.name, "idx-a") && s.nr_frames == 2;
		seen_b += !strcmp(s.name, "idx-b") && s.nr_frames == 3;
	}
	EXPECT_EQ(-ENOENT, kva_ioctl(fd, KVARENA_IOC_STAT, &s));
	EXPECT_EQ(1, seen_a);
	EXPECT_EQ(1, seen_b);
	memset(&s, 0, sizeof(s));
	s.flags = 2;
	EXPECT_EQ(-EINVAL, kva_ioctl(fd, KVARENA_IOC_STAT, &s));
	EXPECT_EQ(0, kva_destroy(adm, "idx-a"));
	EXPECT_EQ(0, kva_destroy(adm, "idx-b"));
	close(adm);
	close(fd);
}

TEST_F(arena, clients_lists_pid_label_limits_and_held)
{
	struct kvarena_client_info rows[3];
	struct kvarena_clients c = { .clients = (__u64)(unsigned long)rows,
				     .count = 3 };
	int g = kva_open(O_RDWR);

	ASSERT_EQ(0, kva_attach(g, self->name, "serve-7b", 2, 9, NULL));
	ASSERT_EQ(3, kva_alloc(g, self->h, 3, 0));
	EXPECT_EQ(-ENOSPC, kva_alloc(g, self->h + 3, 7, 0));
	ASSERT_EQ(0, kva_free(g, self->h, 1));
	snprintf(c.name, sizeof(c.name), "%s", self->name);
	ASSERT_EQ(0, kva_ioctl(self->fd, KVARENA_IOC_CLIENTS, &c));
	ASSERT_EQ(3, c.nr_clients);
	EXPECT_STREQ("a", rows[0].label);
	EXPECT_EQ(self->id, rows[0].client_id);
	EXPECT_STREQ("serve-7b", rows[2].label);
	EXPECT_EQ(getpid(), rows[2].pid);
	EXPECT_EQ(2, rows[2].min_frames);
	EXPECT_EQ(9, rows[2].max_frames);
	EXPECT_EQ(2, rows[2].held);
	EXPECT_EQ(3, rows[2].peak);
	EXPECT_EQ(2, rows[2].alloc_calls);
	EXPECT_EQ(1, rows[2].free_calls);
	EXPECT_EQ(1, rows[2].alloc_failures);
	EXPECT_EQ(0, rows[2].shared);
	close(g);
}

TEST_F(arena, clients_with_small_buffer_reports_the_total)
{
	struct kvarena_client_info row = { .client_id = 12345 };
	struct kvarena_clients c = { .clients = (__u64)(unsigned long)&row };

	snprintf(c.name, sizeof(c.name), "%s", self->name);
	ASSERT_EQ(0, kva_ioctl(self->fd, KVARENA_IOC_CLIENTS, &c));
	EXPECT_EQ(2, c.nr_clients);
	EXPECT_EQ(12345, row.client_id);	/* count 0: nothing written */
	c.count = 1;
	ASSERT_EQ(0, kva_ioctl(self->fd, KVARENA_IOC_CLIENTS, &c));
	EXPECT_EQ(self->id, row.client_id);
	c.clients = 8;
	EXPECT_EQ(-EFAULT, kva_ioctl(self->fd, KVARENA_IOC_CLIENTS, &c));
	c.flags = 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->fd, KVARENA_IOC_CLIENTS, &c));
}

static long read_sysfs(const char *arena, const char *attr)
{
	char path[128], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/misc/kvarena/arenas/%s/%s",
		 arena, attr);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strtol(buf, NULL, 10);
}

TEST_F(arena, sysfs_matches_stat)
{
	struct kvarena_stat s;

	ASSERT_EQ(7, kva_alloc(self->fd, self->h, 7, 0));
	ASSERT_EQ(0, kva_set_usage(self->fd, 3, 3000));
	ASSERT_EQ(0, kva_stat(self->fd, self->name, &s));
	EXPECT_EQ(s.nr_frames, read_sysfs(self->name, "nr_frames"));
	EXPECT_EQ(s.nr_free, read_sysfs(self->name, "free"));
	EXPECT_EQ(s.nr_held, read_sysfs(self->name, "held"));
	EXPECT_EQ(s.frame_size, read_sysfs(self->name, "frame_size"));
	EXPECT_EQ(s.filled_bytes, read_sysfs(self->name, "filled_bytes"));
	EXPECT_EQ(s.nr_clients, read_sysfs(self->name, "clients"));
	EXPECT_EQ(s.alloc_calls, read_sysfs(self->name, "alloc_calls"));
	EXPECT_EQ(s.peak_held, read_sysfs(self->name, "peak_held"));
	EXPECT_EQ(25, read_sysfs(self->name, "free"));
}

/* ---- pressure ------------------------------------------------------------- */

/* What poll() reports of @events on @fd within @ms milliseconds. */
static short poll_for(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };

	return poll(&p, 1, ms) == 1 ? p.revents : 0;
}

static short poll_now(int fd)
{
	return poll_for(fd, POLLPRI, 0);
}

TEST_F(arena, poll_reports_pressure_below_low_watermark)
{
	struct kvarena_stat s;
	int ro = kva_open(O_RDWR);

	/* Watermark 4: pressure while fewer than 4 frames are free. */
	EXPECT_EQ(0, poll_now(ro));	/* not attached: nothing to report */
	EXPECT_EQ(0, poll_now(self->fd));
	ASSERT_EQ(NR - 4, kva_alloc(self->fd, self->h, NR - 4, 0));
	EXPECT_EQ(0, poll_now(self->fd));
	ASSERT_EQ(1, kva_alloc(self->fd2, self->h + NR, 1, 0));
	EXPECT_EQ(POLLPRI, poll_now(self->fd));
	EXPECT_EQ(POLLPRI, poll_now(self->fd2));
	ASSERT_EQ(0, kva_stat(self->fd, self->name, &s));
	EXPECT_EQ(KVARENA_STATE_PRESSURE, s.state & KVARENA_STATE_PRESSURE);
	EXPECT_EQ(1, read_sysfs(self->name, "pressure"));
	ASSERT_EQ(0, kva_free(self->fd2, self->h + NR, 1));
	EXPECT_EQ(0, poll_now(self->fd));
	close(ro);
}

TEST_F(arena, poll_wakes_a_waiter_when_pressure_starts)
{
	int p[2], status;
	pid_t pid;
	char b;

	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct pollfd pf = { .fd = self->fd2, .events = POLLPRI };

		if (write(p[1], "w", 1) != 1)
			_exit(1);
		/* Blocks until the parent pushes the arena under pressure. */
		if (poll(&pf, 1, 20000) != 1 || pf.revents != POLLPRI)
			_exit(2);
		_exit(0);
	}
	ASSERT_EQ(1, read(p[0], &b, 1));
	usleep(100 * 1000);
	ASSERT_EQ(NR - 3, kva_alloc(self->fd, self->h, NR - 3, 0));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, kva_exited(status));
}

static short poll_out(int fd, int ms)
{
	return poll_for(fd, POLLOUT, ms);
}

TEST_F(arena, pollout_after_enospc_waits_for_as_many_frames_as_were_asked)
{
	/* Nothing refused yet: room to grow. */
	EXPECT_EQ(POLLOUT, poll_out(self->fd2, 0));
	ASSERT_EQ(NR, kva_alloc(self->fd, self->h, NR, 0));
	EXPECT_EQ(-ENOSPC, kva_alloc(self->fd2, self->h + NR, 3, 0));
	EXPECT_EQ(0, poll_out(self->fd2, 0));
	/* The other client is not the one waiting. */
	EXPECT_EQ(POLLOUT, poll_out(self->fd, 0));
	ASSERT_EQ(0, kva_free(self->fd, self->h, 2));
	EXPECT_EQ(0, poll_out(self->fd2, 0));	/* 2 of the 3 */
	ASSERT_EQ(0, kva_free(self->fd, self->h + 2, 1));
	EXPECT_EQ(POLLOUT, poll_out(self->fd2, 0));
	/* A smaller refusal asks for less: one frame gone again is enough. */
	ASSERT_EQ(3, kva_alloc(self->fd, self->h, 3, 0));
	EXPECT_EQ(-ENOSPC, kva_alloc(self->fd2, self->h + NR, 1,
				     KVARENA_ALLOC_PARTIAL));
	EXPECT_EQ(0, poll_out(self->fd2, 0));
	ASSERT_EQ(0, kva_free(self->fd, self->h, 1));
	EXPECT_EQ(POLLOUT, poll_out(self->fd2, 0));
	/* Success clears the wait. */
	ASSERT_EQ(1, kva_alloc(self->fd2, self->h + NR, 1, 0));
	EXPECT_EQ(POLLOUT, poll_out(self->fd2, 0));
	ASSERT_EQ(0, kva_free(self->fd, self->h + 1, NR - 1));
	ASSERT_EQ(0, kva_free(self->fd2, self->h + NR, 1));
}

TEST_F(arena, pollout_counts_the_waiters_limit_and_others_guarantees)
{
	int admin = kva_open(O_RDWR);

	ASSERT_LE(0, admin);
	/* b may hold 2: a refusal of 3 never becomes possible by frees. */
	ASSERT_EQ(0, kva_set_limits(admin, self->name, self->id2, 0, 2));
	EXPECT_EQ(-ENOSPC, kva_alloc(self->fd2, self->h + NR, 3, 0));
	EXPECT_EQ(0, poll_out(self->fd2, 0));
	/* Raising the limit is what it waits for. */
	ASSERT_EQ(0, kva_set_limits(admin, self->name, self->id2, 0, NR));
	EXPECT_EQ(POLLOUT, poll_out(self->fd2, 0));
	/* Frames a guaranteed client frees below its min stay its own. */
	ASSERT_EQ(0, kva_set_limits(admin, self->name, self->id, NR - 2, NR));
	ASSERT_EQ(NR - 2, kva_alloc(self->fd, self->h, NR - 2, 0));
	EXPECT_EQ(-ENOSPC, kva_alloc(self->fd2, self->h + NR, 3, 0));
	ASSERT_EQ(0, kva_free(self->fd, self->h, 4));
	EXPECT_EQ(0, poll_out(self->fd2, 0));
	/* Its guarantee dropped, they are anyone's. */
	ASSERT_EQ(0, kva_set_limits(admin, self->name, self->id, 0, NR));
	EXPECT_EQ(POLLOUT, poll_out(self->fd2, 0));
	ASSERT_EQ(0, kva_free(self->fd, self->h + 4, NR - 6));
	close(admin);
}

TEST_F(arena, pollout_wakes_a_sleeping_waiter_when_frames_come_back)
{
	int p[2], status;
	pid_t pid;
	char b;

	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(NR, kva_alloc(self->fd, self->h, NR, 0));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		__u64 h[4];

		if (kva_alloc(self->fd2, h, 4, 0) != -ENOSPC)
			_exit(1);
		if (write(p[1], "w", 1) != 1)
			_exit(2);
		/* Sleeps until the parent frees enough. */
		if (poll_out(self->fd2, 20000) != POLLOUT)
			_exit(3);
		_exit(kva_alloc(self->fd2, h, 4, 0) == 4 ? 0 : 4);
	}
	ASSERT_EQ(1, read(p[0], &b, 1));
	usleep(100 * 1000);
	ASSERT_EQ(0, kva_free(self->fd, self->h, 2));
	usleep(100 * 1000);
	/* Two frames back are not four: still asleep. */
	EXPECT_EQ(0, waitpid(pid, &status, WNOHANG));
	ASSERT_EQ(0, kva_free(self->fd, self->h + 2, 2));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, kva_exited(status));
	ASSERT_EQ(0, kva_free(self->fd, self->h + 4, NR - 4));
}

/* ---- io_uring ------------------------------------------------------------- */

TEST_F(arena, uring_cmd_runs_a_batch_of_commands)
{
	struct kvarena_frames a1 = { .handles = (__u64)(unsigned long)self->h,
				     .count = 5 };
	struct kvarena_frames a2 = { .handles = (__u64)(unsigned long)(self->h + 5),
				     .count = 3 };
	struct kvarena_frames bad = { .handles = (__u64)(unsigned long)self->h,
				      .count = NR + 1 };
	struct kvarena_version v = { 0 };
	struct io_uring ring;
	int res[4];

	KVA_NEED_URING();
	ASSERT_EQ(0, io_uring_queue_init(8, &ring, 0));
	kva_queue_cmd(&ring, 0, self->fd, KVARENA_IOC_VERSION, &v, 0, 0);
	kva_queue_cmd(&ring, 1, self->fd, KVARENA_IOC_ALLOC, &a1, 0, 0);
	kva_queue_cmd(&ring, 2, self->fd, KVARENA_IOC_ALLOC, &a2, 0, 0);
	kva_queue_cmd(&ring, 3, self->fd, KVARENA_IOC_ALLOC, &bad, 0, 0);
	/* Four commands, one io_uring_enter(). */
	ASSERT_EQ(0, kva_submit_and_reap(&ring, 4, res));
	EXPECT_EQ(0, res[0]);
	EXPECT_EQ(KVARENA_ABI_VERSION, v.abi_version);
	EXPECT_EQ(0, res[1]);
	EXPECT_EQ(5, a1.nr_done);
	EXPECT_EQ(0, res[2]);
	EXPECT_EQ(3, a2.nr_done);
	EXPECT_EQ(-ENOSPC, res[3]);
	EXPECT_EQ(NR - 8, arena_free(_metadata, self->fd, self->name));

	/* Free the eight through the ring too, then once more: stale. */
	a1.count = 8;
	kva_queue_cmd(&ring, 0, self->fd, KVARENA_IOC_FREE, &a1, 0, 0);
	ASSERT_EQ(0, kva_submit_and_reap(&ring, 1, res));
	EXPECT_EQ(0, res[0]);
	kva_queue_cmd(&ring, 0, self->fd, KVARENA_IOC_FREE, &a1, 0, 0);
	ASSERT_EQ(0, kva_submit_and_reap(&ring, 1, res));
	EXPECT_EQ(-ESTALE, res[0]);
	EXPECT_EQ(NR, arena_free(_metadata, self->fd, self->name));
	io_uring_queue_exit(&ring);
}

TEST_F(arena, uring_cmd_has_the_same_checks_as_ioctl)
{
	struct kvarena_frames a = { .handles = (__u64)(unsigned long)self->h,
				    .count = 1 };
	struct kvarena_version v = { 0 };
	int ro = kva_open(O_RDONLY), res[4];
	struct io_uring ring;

	KVA_NEED_URING();
	ASSERT_EQ(0, io_uring_queue_init(8, &ring, 0));
	kva_queue_cmd(&ring, 0, ro, KVARENA_IOC_ALLOC, &a, 0, 0);
	kva_queue_cmd(&ring, 1, self->fd, KVARENA_IOC_VERSION, &v, 1, 0);
	kva_queue_cmd(&ring, 2, self->fd, _IOWR('K', 0x3f, int), &v, 0, 0);
	kva_queue_cmd(&ring, 3, self->fd, KVARENA_IOC_ALLOC, (void *)8, 0, 0);
	ASSERT_EQ(0, kva_submit_and_reap(&ring, 4, res));
	EXPECT_EQ(-EBADF, res[0]);
	EXPECT_EQ(-EINVAL, res[1]);
	EXPECT_EQ(-ENOTTY, res[2]);
	EXPECT_EQ(-EFAULT, res[3]);
	EXPECT_EQ(NR, arena_free(_metadata, self->fd, self->name));
	io_uring_queue_exit(&ring);
	close(ro);
}

TEST_HARNESS_MAIN
