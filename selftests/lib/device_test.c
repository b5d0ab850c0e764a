// SPDX-License-Identifier: GPL-2.0
/*
 * Native tests of libkvarena's device path against fake_module.c, an
 * in-process stand-in for kvarena.ko behind the KVA_TESTING ioctl hook:
 * attaching, the transport choice, one ALLOC per batch with the usage
 * report, FRAME_FD asked once per frame with one fd kept per backing
 * file, refused FREEs retried, kva_arena_create() for host and (with the
 * CUDA double) CUDA memory.  The real module is exercised by
 * lib_vm_test in the VM.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/kvarena.h>

#include "kselftest_harness.h"

#include "common.h"
#include "fake_module.h"
#include "hooks.h"

#define FS	4096u
#define TPF	16u
#define NR	32u

static unsigned int open_fds(void)
{
	unsigned int n = 0;
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static int open_device(struct kva_arena **a, const char *name)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_DEVICE, .name = name, .label = "test",
	};

	return kva_open(&o, a);
}

static int create_host_arena(const char *name, uint32_t nr)
{
	struct kva_arena_params p = {
		.name = name, .nr_frames = nr, .frame_size = FS,
		.mem_kind = KVA_BACKEND_HOST,
	};

	return kva_arena_create(&p);
}

FIXTURE(dev) {
	struct kva_arena *a;
	struct kva_geometry g;
};

FIXTURE_SETUP(dev)
{
	setenv("KVA_DEVICE", "/dev/null", 1);
	unsetenv("KVA_TRANSPORT");
	unsetenv("KVA_MODE");
	hooks_reset();
	fake_module_install();
	ASSERT_EQ(0, create_host_arena("host0", NR));
	ASSERT_EQ(0, open_device(&self->a, "host0"));
	self->g = small_geometry(FS);
}

FIXTURE_TEARDOWN(dev)
{
	kva_close(self->a);
	EXPECT_EQ(0, fake_module_clients());
	fake_module_remove();
}

static struct kvarena_stat module_stat(const char *name)
{
	struct kvarena_stat s = { 0 };

	strcpy(s.name, name);
	kva_testing_ioctl(-1, KVARENA_IOC_STAT, &s);
	return s;
}

TEST_F(dev, open_attaches_and_reports_device_mode)
{
	struct kva_arena_info info;
	struct kvarena_stat s = module_stat("host0");

	ASSERT_EQ(0, kva_arena_info(self->a, &info));
	EXPECT_EQ(KVA_MODE_DEVICE, info.mode);
	EXPECT_STREQ("requested by kva_open_opts.mode", info.mode_reason);
	EXPECT_EQ(KVA_BACKEND_HOST, info.backend);
	EXPECT_EQ(KVA_TRANSPORT_IOCTL, info.transport);
	EXPECT_STREQ("host0", info.name);
	EXPECT_EQ(NR, info.nr_frames);
	EXPECT_EQ(FS, info.frame_size);
	EXPECT_NE(0, info.client_id);
	EXPECT_EQ(1, s.nr_clients);
	EXPECT_EQ(NR, s.nr_backed);
}

TEST_F(dev, auto_mode_and_arena_name_from_the_environment)
{
	struct kva_open_opts o = { 0 };
	struct kva_arena_info info;
	struct kva_arena *b;

	setenv("KVA_ARENA", "host0", 1);
	ASSERT_EQ(0, kva_open(&o, &b));
	ASSERT_EQ(0, kva_arena_info(b, &info));
	EXPECT_EQ(KVA_MODE_DEVICE, info.mode);
	EXPECT_STREQ("device node present", info.mode_reason);
	EXPECT_EQ(2, fake_module_clients());
	kva_close(b);
	EXPECT_EQ(1, fake_module_clients());
}

TEST_F(dev, transport_follows_the_option_the_environment_and_the_module)
{
	struct kva_open_opts o = { .mode = KVA_MODE_DEVICE, .name = "host0",
				   .transport = KVA_TRANSPORT_URING };
	struct kva_arena *b;

	/* The module does not offer io_uring: asking for it fails. */
	EXPECT_EQ(-EOPNOTSUPP, kva_open(&o, &b));
	o.transport = KVA_TRANSPORT_AUTO;
	setenv("KVA_TRANSPORT", "uring", 1);
	EXPECT_EQ(-EOPNOTSUPP, kva_open(&o, &b));
	setenv("KVA_TRANSPORT", "carrier-pigeon", 1);
	EXPECT_EQ(-EINVAL, kva_open(&o, &b));
	setenv("KVA_TRANSPORT", "ioctl", 1);
	ASSERT_EQ(0, kva_open(&o, &b));
	kva_close(b);
	/* A failed open leaves no client behind. */
	EXPECT_EQ(1, fake_module_clients());
}

TEST_F(dev, attach_errors_come_from_the_module)
{
	struct kva_open_opts o = { .mode = KVA_MODE_DEVICE, .name = "nope" };
	struct kva_arena *b;
	uint64_t h;

	EXPECT_EQ(-ENOENT, kva_open(&o, &b));
	o.name = "host0";
	o.min_frames = NR + 1;
	o.max_frames = NR + 1;
	EXPECT_EQ(-EINVAL, kva_open(&o, &b));
	/* A guarantee of every frame while one is held elsewhere. */
	ASSERT_EQ(1, kva_alloc(self->a, &h, 1, 0));
	o.min_frames = NR;
	o.max_frames = 0;
	EXPECT_EQ(-ENOSPC, kva_open(&o, &b));
	o.min_frames = 0;
	o.label = "a label that is longer than thirty-one characters";
	EXPECT_EQ(-EINVAL, kva_open(&o, &b));
	EXPECT_EQ(1, fake_module_clients());
}

TEST_F(dev, attach_waits_until_every_frame_has_memory)
{
	struct kvarena_arena_create c = { .name = "half", .frame_size = FS,
					  .nr_frames = 4 };
	struct kvarena_set_backing b = { .name = "half", .nr_frames = 2 };
	struct kva_arena *x;
	int fd = memfd_create("half", MFD_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, 4 * FS));
	b.fd = fd;
	ASSERT_EQ(0, kva_testing_ioctl(-1, KVARENA_IOC_ARENA_CREATE, &c));
	ASSERT_EQ(0, kva_testing_ioctl(-1, KVARENA_IOC_ARENA_SET_BACKING, &b));
	EXPECT_EQ(-EAGAIN, open_device(&x, "half"));
	b.first_frame = 2;
	ASSERT_EQ(0, kva_testing_ioctl(-1, KVARENA_IOC_ARENA_SET_BACKING, &b));
	ASSERT_EQ(0, open_device(&x, "half"));
	kva_close(x);
	close(fd);
}

TEST_F(dev, accounting_only_arenas_give_frames_but_no_sequences)
{
	struct kvarena_arena_create c = { .name = "acct", .frame_size = FS,
					  .nr_frames = 4,
					  .flags = KVARENA_CREATE_NO_BACKING };
	struct kva_arena *x;
	struct kva_seq *s;
	uint64_t h[4];

	ASSERT_EQ(0, kva_testing_ioctl(-1, KVARENA_IOC_ARENA_CREATE, &c));
	ASSERT_EQ(0, open_device(&x, "acct"));
	EXPECT_EQ(-ENODATA, kva_seq_create(x, &self->g, 100, &s));
	ASSERT_EQ(4, kva_alloc(x, h, 4, 0));
	ASSERT_EQ(0, kva_free(x, h, 4));
	kva_close(x);
}

TEST_F(dev, other_abi_versions_are_refused)
{
	struct kva_arena *b;

	fake_module_set_version(KVARENA_ABI_VERSION + 1, 0);
	EXPECT_EQ(-EPROTO, open_device(&b, "host0"));
	EXPECT_EQ(-EPROTO, create_host_arena("other", 4));
}

TEST_F(dev, batch_is_one_alloc_command_carrying_the_usage)
{
	struct kva_seq *s[3];
	struct kva_grow r[3];
	struct kvarena_stat st;
	unsigned int allocs, usages;
	int i;

	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 500, &s[i]));
		r[i] = (struct kva_grow){ .seq = s[i], .tokens = 20 + i,
					  .ahead = TPF };
	}
	allocs = fake_module_calls(KVARENA_IOC_ALLOC);
	usages = fake_module_calls(KVARENA_IOC_SET_USAGE);
	ASSERT_EQ(0, kva_seq_grow_batch(self->a, r, 3));
	EXPECT_EQ(allocs + 1, fake_module_calls(KVARENA_IOC_ALLOC));
	EXPECT_EQ(usages + 1, fake_module_calls(KVARENA_IOC_SET_USAGE));
	st = module_stat("host0");
	EXPECT_EQ(9, st.nr_held);
	EXPECT_EQ(63, st.filled_tokens);
	EXPECT_EQ(63 * 256, st.filled_bytes);
	/* Appends on the fast path reach the module with the next sync. */
	ASSERT_EQ(0, kva_seq_grow(s[0], 5));
	EXPECT_EQ(63, module_stat("host0").filled_tokens);
	ASSERT_EQ(0, kva_sync_usage(self->a));
	EXPECT_EQ(68, module_stat("host0").filled_tokens);
	for (i = 0; i < 3; i++)
		kva_seq_free(s[i]);
	st = module_stat("host0");
	EXPECT_EQ(0, st.nr_held);
	EXPECT_EQ(0, st.filled_tokens);
}

TEST_F(dev, frame_fd_is_asked_once_per_frame_and_one_fd_kept_per_file)
{
	unsigned int fds = open_fds(), calls;
	struct kva_seq *s;
	uint64_t h[4], off;
	int i, fd;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 500, &s));
	calls = fake_module_calls(KVARENA_IOC_FRAME_FD);
	ASSERT_EQ(0, kva_seq_grow(s, 4 * TPF));
	EXPECT_EQ(calls + 4, fake_module_calls(KVARENA_IOC_FRAME_FD));
	/* One memfd behind every frame: one fd kept. */
	EXPECT_EQ(fds + 1, open_fds());
	ASSERT_EQ(0, kva_seq_shrink(s, 0));
	ASSERT_EQ(0, kva_seq_grow(s, 4 * TPF));
	EXPECT_EQ(calls + 4, fake_module_calls(KVARENA_IOC_FRAME_FD));

	/* What the range shows is what the module's backing holds. */
	fill_tokens(s, 1, 0, 4 * TPF);
	ASSERT_EQ(4, kva_seq_handles(s, h, 4));
	for (i = 0; i < 4; i++) {
		char buf[FS];

		fd = fake_module_backing("host0", KVARENA_HANDLE_IDX(h[i]),
					 &off);
		ASSERT_LE(0, fd);
		ASSERT_EQ(FS, pread(fd, buf, FS, (off_t)off));
		EXPECT_EQ(0, memcmp(buf, (void *)(uintptr_t)(s->base + i * FS),
				    FS));
	}
	kva_seq_free(s);
}

TEST_F(dev, refused_free_is_retried_with_the_next_frame_operation)
{
	struct kva_seq *s;
	struct kva_stat st;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 500, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF));
	fake_module_fail(KVARENA_IOC_FREE, 1, EIO);
	kva_seq_free(s);
	/* Still held by this client, not lost. */
	EXPECT_EQ(3, module_stat("host0").nr_held);
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(3, st.held);
	EXPECT_EQ(0, st.nr_seqs);
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 500, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 1));
	EXPECT_EQ(1, module_stat("host0").nr_held);
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(1, st.held);
	kva_seq_free(s);
}

TEST_F(dev, failed_frame_fd_fails_the_grow_and_returns_the_frames)
{
	struct kva_seq *s;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 500, &s));
	fake_module_fail(KVARENA_IOC_FRAME_FD, 2, EPERM);
	EXPECT_EQ(-EPERM, kva_seq_grow(s, 3 * TPF));
	EXPECT_EQ(0, s->tokens);
	EXPECT_EQ(0, module_stat("host0").nr_held);
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF));
	kva_seq_free(s);
}

TEST_F(dev, failed_alloc_changes_nothing)
{
	struct kva_seq *s;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 5000, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 5));
	EXPECT_EQ(-ENOSPC, kva_seq_grow(s, NR * TPF));
	EXPECT_EQ(5, s->tokens);
	EXPECT_EQ(1, module_stat("host0").nr_held);
	EXPECT_EQ(5, module_stat("host0").filled_tokens);
	kva_seq_free(s);
}

TEST_F(dev, stat_combines_the_module_totals_and_this_handle)
{
	struct kva_seq *s, *c;
	struct kva_stat st;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 500, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 40));
	ASSERT_EQ(0, kva_seq_fork(s, &c));
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(NR, st.nr_frames);
	EXPECT_EQ(3, st.nr_held);
	EXPECT_EQ(NR - 3, st.nr_free);
	EXPECT_EQ(1, st.nr_clients);
	EXPECT_EQ(40, st.filled_tokens);
	EXPECT_EQ(3, st.held);
	EXPECT_EQ(80, st.seq_tokens);
	EXPECT_EQ(40, st.my_filled_tokens);
	kva_seq_free(c);
	kva_seq_free(s);
}

TEST_F(dev, raw_frames_go_through_the_module)
{
	uint64_t h[4];

	ASSERT_EQ(4, kva_alloc(self->a, h, 4, 0));
	EXPECT_EQ(4, module_stat("host0").nr_held);
	ASSERT_EQ(0, kva_free(self->a, h, 4));
	EXPECT_EQ(0, module_stat("host0").nr_held);
	EXPECT_EQ(-ESTALE, kva_free(self->a, h, 1));
}

TEST_F(dev, close_returns_every_frame)
{
	struct kva_arena *b;
	struct kva_seq *s;

	ASSERT_EQ(0, open_device(&b, "host0"));
	ASSERT_EQ(0, kva_seq_create(b, &self->g, 500, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 5 * TPF));
	EXPECT_EQ(5, module_stat("host0").nr_held);
	kva_close(b);
	EXPECT_EQ(0, module_stat("host0").nr_held);
	EXPECT_EQ(1, module_stat("host0").nr_clients);
}

TEST_F(dev, arena_create_registers_one_memfd_behind_every_frame)
{
	struct kva_arena_params p = { .name = "host0" };
	uint64_t off;
	struct stat a, b;
	int fd0, fd1;

	fd0 = fake_module_backing("host0", 0, &off);
	EXPECT_EQ(0, off);
	fd1 = fake_module_backing("host0", NR - 1, &off);
	EXPECT_EQ((NR - 1) * FS, off);
	ASSERT_EQ(0, fstat(fd0, &a));
	ASSERT_EQ(0, fstat(fd1, &b));
	EXPECT_EQ(a.st_ino, b.st_ino);
	EXPECT_EQ(NR * FS, a.st_size);
	EXPECT_EQ(-EEXIST, create_host_arena("host0", 4));
	/* Destroy is refused while a client is attached. */
	EXPECT_EQ(-EBUSY, kva_arena_destroy(&p));
}

TEST_F(dev, arena_create_undoes_itself_on_failure)
{
	struct kva_arena_params p = { .name = "two", .nr_frames = 4,
				      .frame_size = FS };
	struct kva_arena *b;

	fake_module_fail(KVARENA_IOC_ARENA_SET_BACKING, 1, ENOMEM);
	EXPECT_EQ(-ENOMEM, kva_arena_create(&p));
	EXPECT_EQ(-ENOENT, open_device(&b, "two"));
	ASSERT_EQ(0, kva_arena_create(&p));
	ASSERT_EQ(0, kva_arena_destroy(&p));
	EXPECT_EQ(-ENOENT, kva_arena_destroy(&p));
}

TEST_F(dev, arena_create_checks_its_parameters)
{
	struct kva_arena_params p = { .name = "three", .nr_frames = 4,
				      .frame_size = FS };

	EXPECT_EQ(-EINVAL, kva_arena_create(NULL));
	p.name = "bad/name";
	EXPECT_EQ(-EINVAL, kva_arena_create(&p));
	p.name = "three";
	p.flags = KVA_OPEN_POPULATE;
	EXPECT_EQ(-EINVAL, kva_arena_create(&p));
	p.flags = KVA_OPEN_HUGETLB;
	EXPECT_EQ(-EINVAL, kva_arena_create(&p));
	p.flags = 0;
	p.nr_frames = 0;
	EXPECT_EQ(-EINVAL, kva_arena_create(&p));
	p.nr_frames = 4;
	p.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, kva_arena_create(&p));
	p.reserved[0] = 0;
	p.device = "/nonexistent/kvarena";
	EXPECT_EQ(-ENODEV, kva_arena_create(&p));
	EXPECT_EQ(-ENODEV, kva_arena_destroy(&p));
	p.device = NULL;
	p.flags = KVA_OPEN_PREFAULT;
	ASSERT_EQ(0, kva_arena_create(&p));
	EXPECT_EQ(0, kva_arena_destroy(&p));
}

TEST_HARNESS_MAIN
