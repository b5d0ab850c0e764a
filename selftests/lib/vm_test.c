// SPDX-License-Identifier: GPL-2.0
/*
 * libkvarena against the real kvarena.ko, in the VM (static, KTAP).
 *
 * Needs: root, kvarena.ko loaded, /dev/kvarena, no arenas required at
 * start.  Each test makes its own host arena (named after its pid) with
 * a memfd it keeps, registered as the backing with ARENA_SET_BACKING, so
 * that a second process can map the same frames straight from the memfd,
 * and destroys it at the end.  Small: 32 frames of 64 KiB per arena (the
 * VM has 1 GiB and an emulated CPU).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/kvarena.h>

#include "kselftest_harness.h"

#include "common.h"
#include "module.h"

#define FS	(64u << 10)
#define TPF	256u		/* small_geometry in 64 KiB */
#define NR	32u

static int dev_ioctl(unsigned long nr, void *arg)
{
	int fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = ioctl(fd, nr, arg) ? -errno : 0;
	close(fd);
	return ret;
}

static struct kvarena_stat arena_stat(const char *name, int *err)
{
	struct kvarena_stat s = { 0 };

	strcpy(s.name, name);
	*err = dev_ioctl(KVARENA_IOC_STAT, &s);
	return s;
}

/* An arena of @nr frames backed by one memfd, which is returned. */
static int make_arena(const char *name, uint32_t nr, int *memfd)
{
	struct kvarena_arena_create c = { .frame_size = FS, .nr_frames = nr,
					  .mem_kind = KVARENA_MEM_HOST };
	struct kvarena_set_backing b = { .nr_frames = nr };
	int ret;

	strcpy(c.name, name);
	strcpy(b.name, name);
	ret = dev_ioctl(KVARENA_IOC_ARENA_CREATE, &c);
	if (ret)
		return ret;
	*memfd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*memfd < 0 || ftruncate(*memfd, (off_t)nr * FS) ||
	    fcntl(*memfd, F_ADD_SEALS, F_SEAL_SHRINK))
		return -errno;
	b.fd = *memfd;
	return dev_ioctl(KVARENA_IOC_ARENA_SET_BACKING, &b);
}

static int destroy_arena(const char *name)
{
	struct kvarena_arena_destroy d = { 0 };

	strcpy(d.name, name);
	return dev_ioctl(KVARENA_IOC_ARENA_DESTROY, &d);
}

static int open_arena(struct kva_arena **a, const char *name,
		      uint32_t transport)
{
	struct kva_open_opts o = { .name = name, .label = "lib_vm_test",
				   .transport = transport };

	return kva_open(&o, a);
}

FIXTURE(vm) {
	char name[KVARENA_NAME_LEN];
	int memfd;
	struct kva_arena *a;
	struct kva_geometry g;
};

FIXTURE_SETUP(vm)
{
	int err;

	unsetenv("KVA_MODE");
	unsetenv("KVA_DEVICE");
	unsetenv("KVA_TRANSPORT");
	snprintf(self->name, sizeof(self->name), "libvm-%d", getpid());
	ASSERT_EQ(0, make_arena(self->name, NR, &self->memfd));
	ASSERT_EQ(0, open_arena(&self->a, self->name, KVA_TRANSPORT_AUTO));
	self->g = small_geometry(FS);
	arena_stat(self->name, &err);
	ASSERT_EQ(0, err);
}

FIXTURE_TEARDOWN(vm)
{
	int err;

	kva_close(self->a);
	EXPECT_EQ(0, arena_stat(self->name, &err).nr_held);
	EXPECT_EQ(0, destroy_arena(self->name));
	close(self->memfd);
}

TEST_F(vm, auto_mode_attaches_to_the_device)
{
	struct kva_arena_info info;
	int err;

	ASSERT_EQ(0, kva_arena_info(self->a, &info));
	EXPECT_EQ(KVA_MODE_DEVICE, info.mode);
	EXPECT_STREQ("device node present", info.mode_reason);
	EXPECT_EQ(KVA_BACKEND_HOST, info.backend);
	EXPECT_EQ(NR, info.nr_frames);
	EXPECT_EQ(FS, info.frame_size);
	EXPECT_EQ(1, arena_stat(self->name, &err).nr_clients);
	TH_LOG("transport %s", kva_transport_name(info.transport));
}

/* Frame @i of the sequence, mapped straight from the memfd. */
static void *map_backing(int memfd, uint64_t handle)
{
	void *p = mmap(NULL, FS, PROT_READ | PROT_WRITE, MAP_SHARED, memfd,
		       (off_t)KVARENA_HANDLE_IDX(handle) * FS);

	return p == MAP_FAILED ? NULL : p;
}

TEST_F(vm, data_written_through_a_sequence_reads_back_in_another_process)
{
	struct kva_seq *s;
	uint64_t h[3];
	int status, i;
	pid_t pid;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 10 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 2 * TPF + 7));
	fill_tokens(s, 1, 0, s->tokens);
	ASSERT_EQ(3, kva_seq_handles(s, h, 3));

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* Another process: the frames from the backing file, with
		 * no libkvarena; compare, then write token 0 of frame 1. */
		int bad = 0;

		for (i = 0; i < 3; i++) {
			char *p = map_backing(self->memfd, h[i]);

			if (!p)
				_exit(2);
			bad |= memcmp(p, (void *)(uintptr_t)(s->base + i * FS),
				      FS) != 0;
			if (i == 1)
				memset(p + kva_kv_offset(&self->g, 1, KVA_V, 1,
							 0), 0x5a, 32);
		}
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0x5a5a, *(uint16_t *)kva_seq_kv_ptr(s, 1, KVA_V, 1, TPF));
	kva_seq_free(s);
}

TEST_F(vm, copy_on_write_never_changes_the_parent_frames)
{
	struct kva_seq *p, *c;
	uint64_t hp[2], hc[2];
	char *before, *after;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 10 * TPF, &p));
	ASSERT_EQ(0, kva_seq_grow(p, TPF + 9));
	fill_tokens(p, 2, 0, p->tokens);
	ASSERT_EQ(2, kva_seq_handles(p, hp, 2));
	before = malloc(FS);
	ASSERT_EQ(FS, pread(self->memfd, before, FS,
			    (off_t)KVARENA_HANDLE_IDX(hp[1]) * FS));
	ASSERT_EQ(0, kva_seq_fork(p, &c));
	ASSERT_EQ(0, kva_seq_grow(c, 5));
	fill_tokens(c, 3, TPF, c->tokens);
	ASSERT_EQ(2, kva_seq_handles(c, hc, 2));
	EXPECT_EQ(hp[0], hc[0]);
	EXPECT_NE(hp[1], hc[1]);
	after = malloc(FS);
	ASSERT_EQ(FS, pread(self->memfd, after, FS,
			    (off_t)KVARENA_HANDLE_IDX(hp[1]) * FS));
	EXPECT_EQ(0, memcmp(before, after, FS));
	EXPECT_EQ(0, check_tokens(p, 2, 0, p->tokens));
	EXPECT_EQ(0, check_tokens(c, 2, 0, TPF));
	EXPECT_EQ(0, check_tokens(c, 3, TPF, c->tokens));
	free(before);
	free(after);
	kva_seq_free(p);
	kva_seq_free(c);
}

TEST_F(vm, batch_is_one_alloc_and_usage_reaches_the_module)
{
	struct kvarena_stat before, st;
	struct kva_seq *s[4], *c;
	struct kva_grow r[4];
	int i, err;

	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 10 * TPF, &s[i]));
		r[i] = (struct kva_grow){ .seq = s[i], .tokens = 100 + i,
					  .ahead = TPF };
	}
	before = arena_stat(self->name, &err);
	ASSERT_EQ(0, kva_seq_grow_batch(self->a, r, 4));
	st = arena_stat(self->name, &err);
	EXPECT_EQ(before.alloc_calls + 1, st.alloc_calls);
	EXPECT_EQ(8, st.nr_held);
	EXPECT_EQ(406, st.filled_tokens);
	EXPECT_EQ(406 * 256, st.filled_bytes);
	ASSERT_EQ(0, kva_seq_fork(s[0], &c));
	ASSERT_EQ(0, kva_seq_grow(c, 1));
	ASSERT_EQ(0, kva_sync_usage(self->a));
	st = arena_stat(self->name, &err);
	EXPECT_EQ(9, st.nr_held);
	EXPECT_EQ(406 + 101, st.filled_tokens);
	kva_seq_free(c);
	for (i = 0; i < 4; i++)
		kva_seq_free(s[i]);
	st = arena_stat(self->name, &err);
	EXPECT_EQ(0, st.nr_held);
	EXPECT_EQ(0, st.filled_tokens);
}

TEST_F(vm, ioctl_and_uring_transports_give_the_same_results)
{
	uint32_t t[2] = { KVA_TRANSPORT_IOCTL, KVA_TRANSPORT_URING };
	struct kva_arena_info info;
	struct kvarena_version v = { 0 };
	struct kva_seq *s;
	struct kva_arena *a;
	int i, err;

	ASSERT_EQ(0, dev_ioctl(KVARENA_IOC_VERSION, &v));
	for (i = 0; i < 2; i++) {
		if (t[i] == KVA_TRANSPORT_URING &&
		    !(v.features & KVARENA_FEAT_URING_CMD)) {
			EXPECT_EQ(-EOPNOTSUPP, open_arena(&a, self->name, t[i]));
			KVA_URING_PART_SKIPPED(kva_uring_missing());
			return;
		}
		ASSERT_EQ(0, open_arena(&a, self->name, t[i]));
		ASSERT_EQ(0, kva_arena_info(a, &info));
		EXPECT_EQ(t[i], info.transport);
		ASSERT_EQ(0, kva_seq_create(a, &self->g, 10 * TPF, &s));
		ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF));
		EXPECT_EQ(3, arena_stat(self->name, &err).nr_held);
		EXPECT_EQ(3 * TPF, arena_stat(self->name, &err).filled_tokens);
		ASSERT_EQ(0, kva_seq_shrink(s, TPF));
		EXPECT_EQ(1, arena_stat(self->name, &err).nr_held);
		EXPECT_EQ(TPF, arena_stat(self->name, &err).filled_tokens);
		kva_seq_free(s);
		EXPECT_EQ(0, arena_stat(self->name, &err).nr_held);
		kva_close(a);
	}
}

TEST_F(vm, every_sequence_path_returns_every_frame)
{
	struct kva_seq *s[6] = { 0 };
	unsigned int i, step, seed = 1;
	int err;

	for (step = 0; step < 300; step++) {
		seed = seed * 1103515245 + 12345;
		i = (seed >> 16) % 6;
		switch ((seed >> 8) % 5) {
		case 0:
			if (!s[i])
				ASSERT_EQ(0, kva_seq_create(self->a, &self->g,
							    4 * TPF, &s[i]));
			break;
		case 1:
			if (s[i] && s[i]->tokens + 100 <= s[i]->max_tokens) {
				err = kva_seq_grow(s[i], 100);
				ASSERT_TRUE(!err || err == -ENOSPC);
			}
			break;
		case 2:
			if (s[i])
				ASSERT_EQ(0, kva_seq_shrink(s[i],
							    s[i]->tokens / 3));
			break;
		case 3:
			if (s[i] && !s[(i + 1) % 6]) {
				err = kva_seq_fork(s[i], &s[(i + 1) % 6]);
				ASSERT_EQ(0, err);
			}
			break;
		case 4:
			kva_seq_free(s[i]);
			s[i] = NULL;
			break;
		}
	}
	for (i = 0; i < 6; i++)
		kva_seq_free(s[i]);
	EXPECT_EQ(0, arena_stat(self->name, &err).nr_held);
}

TEST_F(vm, killed_process_returns_all_frames)
{
	int pipefd[2], status, err;
	struct kvarena_stat st;
	char ready;
	pid_t pid;

	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct kva_arena *a;
		struct kva_seq *s, *c;

		if (open_arena(&a, self->name, KVA_TRANSPORT_AUTO) ||
		    kva_seq_create(a, &self->g, 20 * TPF, &s) ||
		    kva_seq_grow(s, 8 * TPF + 1) || kva_seq_fork(s, &c) ||
		    kva_seq_grow(c, 1))
			_exit(1);
		if (write(pipefd[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &ready, 1));
	st = arena_stat(self->name, &err);
	EXPECT_EQ(10, st.nr_held);
	EXPECT_EQ(2, st.nr_clients);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	/* Over io_uring, the default, its client may outlive it a moment. */
	module_wait_clients(self->name, 1);
	st = arena_stat(self->name, &err);
	EXPECT_EQ(0, st.nr_held);
	EXPECT_EQ(1, st.nr_clients);
	EXPECT_EQ(0, st.filled_tokens);
	close(pipefd[0]);
}

TEST(arena_create_provides_memory_and_destroy_removes_it)
{
	struct kva_arena_params p = { .nr_frames = 8, .frame_size = FS,
				      .mem_kind = KVA_BACKEND_HOST,
				      .flags = KVA_OPEN_PREFAULT };
	struct kva_geometry g = small_geometry(FS);
	struct kvarena_stat st;
	struct kva_arena *a;
	struct kva_seq *s;
	char name[KVARENA_NAME_LEN];
	int err;

	snprintf(name, sizeof(name), "libvm-c-%d", getpid());
	p.name = name;
	ASSERT_EQ(0, kva_arena_create(&p));
	EXPECT_EQ(-EEXIST, kva_arena_create(&p));
	st = arena_stat(name, &err);
	ASSERT_EQ(0, err);
	EXPECT_EQ(8, st.nr_backed);
	ASSERT_EQ(0, open_arena(&a, name, KVA_TRANSPORT_AUTO));
	ASSERT_EQ(0, kva_seq_create(a, &g, 8 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 8 * TPF));
	fill_tokens(s, 9, 0, s->tokens);
	EXPECT_EQ(0, check_tokens(s, 9, 0, s->tokens));
	EXPECT_EQ(-EBUSY, kva_arena_destroy(&p));
	kva_close(a);
	ASSERT_EQ(0, kva_arena_destroy(&p));
	arena_stat(name, &err);
	EXPECT_EQ(-ENOENT, err);
}

TEST_HARNESS_MAIN
