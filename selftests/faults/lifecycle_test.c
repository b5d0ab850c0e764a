// SPDX-License-Identifier: GPL-2.0
/*
 * Lifecycle of the module and of arenas: what keeps them alive, what may
 * end them, and what happens to whoever still holds a piece.
 *
 * Runs as root in the VM (selftests/vm/run.sh), where the module was
 * loaded from /kvarena.ko; the unload tests load it again from there.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"

/*
 * On the debug kernel of make check-debug (KASAN, lockdep, kmemleak, and
 * DEBUG_KOBJECT_RELEASE delaying each release by up to 4 s, which an
 * unload waits for) the unload test takes about the harness's default 30
 * s, and was cut short there.  TEST() reads the value where it expands.
 */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 180
#include "faults.h"

#define FS	(64u << 10)
#define NR	16u
#define MODULE_KO	"/kvarena.ko"
#define SYSFS_ARENAS	"/sys/class/misc/kvarena/arenas"

static int unload(void)
{
	return syscall(SYS_delete_module, "kvarena", O_NONBLOCK) ? -errno : 0;
}

static int load(void)
{
	int fd = open(MODULE_KO, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	return ret;
}

static int dev(void)
{
	return open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
}

static int attach(int fd, const char *name)
{
	struct kvarena_attach a = { 0 };

	fz_name(a.name, "%s", name);
	fz_name(a.label, "lifecycle");
	return fz_ioctl(fd, KVARENA_IOC_ATTACH, &a);
}

static int alloc(int fd, uint64_t *h, uint32_t n)
{
	struct kvarena_frames f = { .handles = (uintptr_t)h, .count = n };

	return fz_ioctl(fd, KVARENA_IOC_ALLOC, &f);
}

/* Map frame @h of the client on @fd; its frames file fd goes to *@ffd. */
static void *map_frame(int fd, uint64_t h, int *ffd)
{
	struct kvarena_frame_fd ff = { .handle = h };
	void *m;

	if (fz_ioctl(fd, KVARENA_IOC_FRAME_FD, &ff))
		return MAP_FAILED;
	m = mmap(NULL, ff.size, PROT_READ | PROT_WRITE, MAP_SHARED, ff.fd,
		 ff.offset);
	*ffd = ff.fd;
	return m;
}

static sigjmp_buf bus_jmp;

static void on_bus(int sig)
{
	siglongjmp(bus_jmp, 1);
}

/* Does reading @p raise SIGBUS? */
static bool touch_bus(volatile uint8_t *p)
{
	struct sigaction sa = { .sa_handler = on_bus }, old;
	bool bus = false;

	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(bus_jmp, 1))
		bus = true;
	else
		(void)p[0];
	sigaction(SIGBUS, &old, NULL);
	return bus;
}

/* ---- unload --------------------------------------------------------- */

TEST(unload_is_refused_while_a_client_is_attached)
{
	char name[32];
	uint64_t h[4];
	int fd, raw;

	snprintf(name, sizeof(name), "lc-att-%d", getpid());
	fd = dev();
	ASSERT_LE(0, fd);
	/* Only a file open, not attached yet: refused already. */
	EXPECT_EQ(-EWOULDBLOCK, unload());
	ASSERT_EQ(0, fz_arena_create(fd, name, NR, FS, false));
	ASSERT_EQ(0, attach(fd, name));
	ASSERT_EQ(0, alloc(fd, h, 4));
	EXPECT_EQ(-EWOULDBLOCK, unload());
	/* A read-only open counts as much. */
	raw = open(KVARENA_DEVICE, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, raw);
	close(fd);
	EXPECT_EQ(-EWOULDBLOCK, unload());
	fd = raw;
	EXPECT_EQ(0, access(KVARENA_DEVICE, F_OK));
	close(fd);
	fd = dev();
	EXPECT_EQ(0, fz_arena_destroy(fd, name));
	close(fd);
}

TEST(unload_is_refused_while_a_frames_file_or_its_mapping_lives)
{
	char name[32];
	uint8_t *m;
	uint64_t h;
	int fd, ffd;

	snprintf(name, sizeof(name), "lc-map-%d", getpid());
	fd = dev();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fz_arena_create(fd, name, NR, FS, true));
	ASSERT_EQ(0, attach(fd, name));
	ASSERT_EQ(0, alloc(fd, &h, 1));
	m = map_frame(fd, h, &ffd);
	ASSERT_NE(MAP_FAILED, m);
	m[0] = 7;
	/*
	 * The client is released (its mapping is zapped) and the arena
	 * destroyed: the frames file stays, and holds the module.
	 */
	close(fd);
	EXPECT_TRUE(touch_bus(m));
	fd = dev();
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, fz_arena_destroy(fd, name));
	close(fd);
	EXPECT_EQ(-EWOULDBLOCK, unload());
	close(ffd);
	/* The mapping alone holds the frames file, and so the module. */
	EXPECT_EQ(-EWOULDBLOCK, unload());
	munmap(m, FS);
}

/*
 * An arena holds the module: unload is refused until every arena is
 * destroyed (pinned backing pages, sysfs directories, one of them held
 * open), then the module unloads and loads again.
 */
TEST(unload_waits_for_every_arena_and_the_module_loads_again)
{
	char path[128], buf[32];
	struct stat st;
	uint64_t h[4];
	int fd, sfd, i;

	if (access(MODULE_KO, R_OK))
		SKIP(return, MODULE_KO " is not here to load again");
	fd = dev();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fz_arena_create(fd, "lc-unload-host", NR, FS, true));
	/*
	 * Several, so that under DEBUG_KOBJECT_RELEASE (1-4 s at random)
	 * some release is likely to come after the module's own kobject's.
	 */
	for (i = 0; i < 8; i++) {
		snprintf(path, sizeof(path), "lc-unload-acct%d", i);
		ASSERT_EQ(0, fz_arena_create(fd, path, NR, FS, false));
	}
	ASSERT_EQ(0, attach(fd, "lc-unload-host"));
	ASSERT_EQ(0, alloc(fd, h, 4));
	snprintf(path, sizeof(path), SYSFS_ARENAS "/lc-unload-host/held");
	sfd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(2, pread(sfd, buf, sizeof(buf), 0));
	EXPECT_EQ(0, memcmp(buf, "4\n", 2));
	close(fd);
	/* Arenas left, no file open: still refused. */
	EXPECT_EQ(-EWOULDBLOCK, unload());
	fd = dev();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fz_arena_destroy(fd, "lc-unload-host"));
	for (i = 0; i < 8; i++) {
		snprintf(path, sizeof(path), "lc-unload-acct%d", i);
		ASSERT_EQ(0, fz_arena_destroy(fd, path));
	}
	close(fd);
	/* A sysfs file open across the destroy reads nothing, safely. */
	EXPECT_EQ(-1, pread(sfd, buf, sizeof(buf), 0));
	EXPECT_EQ(ENODEV, errno);

	ASSERT_EQ(0, unload());
	EXPECT_EQ(-1, stat(KVARENA_DEVICE, &st));
	EXPECT_EQ(-1, access(SYSFS_ARENAS, F_OK));
	EXPECT_EQ(-1, pread(sfd, buf, sizeof(buf), 0));
	close(sfd);
	/*
	 * DEBUG_KOBJECT_RELEASE delays the last kobject_put()'s release by
	 * up to 4 s: a release that runs module code must have run before
	 * the module went, or it runs now, in freed memory.
	 */
	sleep(5);

	for (i = 0; i < 2; i++) {
		int tries = 0;

		ASSERT_EQ(0, load());
		/* devtmpfs makes the node, perhaps a moment later. */
		while ((fd = dev()) < 0 && errno == ENOENT && tries++ < 1000)
			usleep(1000);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, fz_arena_create(fd, "lc-unload-host", NR, FS, true));
		ASSERT_EQ(0, fz_arena_destroy(fd, "lc-unload-host"));
		close(fd);
		if (i == 0) {
			ASSERT_EQ(0, unload());
			sleep(5);
		}
	}
}

/* ---- destroy ------------------------------------------------------------ */

TEST(destroy_is_refused_while_clients_are_attached)
{
	struct kvarena_stat s;
	int fd, c, status;
	char name[32];
	uint64_t h[2];
	pid_t pid;

	snprintf(name, sizeof(name), "lc-des-%d", getpid());
	fd = dev();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fz_arena_create(fd, name, NR, FS, true));
	c = dev();
	ASSERT_EQ(0, attach(c, name));
	ASSERT_EQ(0, alloc(c, h, 2));
	EXPECT_EQ(-EBUSY, fz_arena_destroy(fd, name));
	ASSERT_EQ(0, fz_stat(fd, name, &s));
	EXPECT_EQ(1, s.nr_clients);
	EXPECT_EQ(2, s.nr_held);
	close(c);

	/* A client in a process that dies holds it just as long. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		c = dev();
		if (attach(c, name) || alloc(c, h, 2))
			_exit(1);
		pause();
		_exit(0);
	}
	while (!fz_stat(fd, name, &s) && s.nr_held != 2)
		usleep(1000);
	EXPECT_EQ(-EBUSY, fz_arena_destroy(fd, name));
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	EXPECT_EQ(0, fz_arena_destroy(fd, name));
	EXPECT_EQ(-ENOENT, fz_stat(fd, name, &s));
	close(fd);
}

/* A frames file kept past its client and its arena maps nothing, safely. */
TEST(frames_file_outlives_its_arena_and_maps_nothing)
{
	char name[32];
	uint8_t *m, *m2;
	int fd, ffd;
	uint64_t h;

	snprintf(name, sizeof(name), "lc-fm-%d", getpid());
	fd = dev();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fz_arena_create(fd, name, NR, FS, true));
	ASSERT_EQ(0, attach(fd, name));
	ASSERT_EQ(0, alloc(fd, &h, 1));
	m = map_frame(fd, h, &ffd);
	ASSERT_NE(MAP_FAILED, m);
	m[1] = 1;
	close(fd);
	fd = dev();
	ASSERT_EQ(0, fz_arena_destroy(fd, name));
	/* Arena gone: the old mapping faults, a new one is refused. */
	EXPECT_TRUE(touch_bus(m));
	m2 = mmap(NULL, FS, PROT_READ, MAP_SHARED, ffd, 0);
	EXPECT_EQ(MAP_FAILED, m2);
	EXPECT_EQ(EACCES, errno);
	munmap(m, FS);
	close(ffd);
	/* The name is free again. */
	EXPECT_EQ(0, fz_arena_create(fd, name, NR, FS, false));
	EXPECT_EQ(0, fz_arena_destroy(fd, name));
	close(fd);
}

/* ---- backing ------------------------------------------------------------ */

/*
 * The provider makes the memory, registers it and goes away; the
 * module's references keep the memory, and clients use it.
 */
TEST(arena_whose_backing_files_were_closed_by_their_creator_keeps_working)
{
	char name[32];
	uint8_t *m[2];
	uint64_t h[NR];
	int fd, ffd[2], status, i;
	pid_t pid;

	snprintf(name, sizeof(name), "lc-bk-%d", getpid());
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int a = dev();

		/* fz_arena_create() closes the memfd once registered. */
		_exit(a < 0 || fz_arena_create(a, name, NR, FS, true));
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);

	fd = dev();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, attach(fd, name));
	ASSERT_EQ(0, alloc(fd, h, NR));
	for (i = 0; i < (int)NR; i++) {
		m[0] = map_frame(fd, h[i], &ffd[0]);
		ASSERT_NE(MAP_FAILED, m[0]);
		memset(m[0], 0x40 + i, FS);
		munmap(m[0], FS);
		close(ffd[0]);
	}
	/* Each frame kept what was written into it: real, separate memory. */
	for (i = 0; i < (int)NR; i++) {
		m[1] = map_frame(fd, h[i], &ffd[1]);
		ASSERT_NE(MAP_FAILED, m[1]);
		EXPECT_EQ(0x40 + i, m[1][0]);
		EXPECT_EQ(0x40 + i, m[1][FS - 1]);
		munmap(m[1], FS);
		close(ffd[1]);
	}
	close(fd);
	fd = dev();
	EXPECT_EQ(0, fz_arena_destroy(fd, name));
	close(fd);
}

/* ---- sysfs against destroy --------------------------------------------- */

struct reader {
	pthread_t t;
	const char *name;
	volatile bool *stop;
	unsigned long ok, gone, bad;
};

static const char *const attrs[] = { "free", "held", "clients", "nr_frames",
				     "frames_allocated", "mem_kind", "cached" };

static void bad(struct reader *r, const char *what, int err)
{
	if (!r->bad++)
		printf("# sysfs %s: %s\n", what, err ? strerror(err) : "short");
}

static void *read_loop(void *arg)
{
	struct reader *r = arg;
	char path[128], buf[64];
	unsigned int i = 0;

	while (!*r->stop) {
		const char *attr = attrs[i++ % (sizeof(attrs) / sizeof(attrs[0]))];
		ssize_t n;
		int fd;

		snprintf(path, sizeof(path), SYSFS_ARENAS "/%s/%s", r->name, attr);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			/* Not there, or being removed (kernfs: -ENODEV). */
			if (errno == ENOENT || errno == ENODEV)
				r->gone++;
			else
				bad(r, "open", errno);
			continue;
		}
		/* Read twice: the second may come after the destroy. */
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n > 0 && buf[n - 1] == '\n')
			r->ok++;
		else if (n < 0 && errno == ENODEV)
			r->gone++;
		else
			bad(r, "read", n < 0 ? errno : 0);
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n < 0 && errno != ENODEV)
			bad(r, "read again", errno);
		close(fd);
	}
	return NULL;
}

TEST(sysfs_reads_racing_arena_destroy_are_safe)
{
	volatile bool stop = false;
	struct reader r[3];
	unsigned long ok = 0, gone = 0, bad = 0;
	char name[32];
	double t0;
	int rounds = 0;
	int fd, i, c;

	snprintf(name, sizeof(name), "lc-sys-%d", getpid());
	fd = dev();
	ASSERT_LE(0, fd);
	for (i = 0; i < 3; i++) {
		r[i] = (struct reader){ .name = name, .stop = &stop };
		ASSERT_EQ(0, pthread_create(&r[i].t, NULL, read_loop, &r[i]));
	}
	/* 300 rounds, or 10 s on a slow (debug, emulated) kernel. */
	t0 = fz_now();
	for (i = 0; i < 300 && fz_now() - t0 < 10; i++, rounds++) {
		ASSERT_EQ(0, fz_arena_create(fd, name, NR, FS, i % 2));
		/* A client now and then, so that the values move. */
		if (i % 3 == 0) {
			uint64_t h[2];

			c = dev();
			ASSERT_EQ(0, attach(c, name));
			ASSERT_EQ(0, alloc(c, h, 2));
			close(c);
		}
		usleep(i % 7 * 100);
		ASSERT_EQ(0, fz_arena_destroy(fd, name));
	}
	stop = true;
	for (i = 0; i < 3; i++) {
		pthread_join(r[i].t, NULL);
		ok += r[i].ok;
		gone += r[i].gone;
		bad += r[i].bad;
	}
	close(fd);
	TH_LOG("%d rounds; %lu reads, %lu found the arena gone", rounds, ok,
	       gone);
	EXPECT_EQ(0, bad);
	/* The race happened: reads both of live and of destroyed arenas. */
	EXPECT_LT(0, ok);
	EXPECT_LT(0, gone);
}

TEST_HARNESS_MAIN
