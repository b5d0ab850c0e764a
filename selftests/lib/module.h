/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the libkvarena tests that run against the real kvarena.ko
 * (in the VM): the module's own view of an arena (STAT, CLIENTS, the
 * backing behind a frame), arena names that are unique per test process,
 * and limits on the fds a test may open.
 */
#ifndef KVA_SELFTEST_MODULE_H
#define KVA_SELFTEST_MODULE_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <linux/kvarena.h>

#include "../kvarena/kva_uring.h"

#ifdef SKIP
/*
 * First thing in a FIXTURE_SETUP whose variant asks for @transport: SKIP
 * the test when that is io_uring and there is none.  The harness runs the
 * test body after a SKIP in the setup, so this leaves the setup as a
 * failed ASSERT does, through the harness's own jump (no teardown: the
 * setup made nothing yet).
 */
#define KVA_SETUP_NEED_TRANSPORT(transport)				\
	do {								\
		const char *kva_why_ = (transport) == KVA_TRANSPORT_URING ? \
				       kva_uring_missing() : NULL;	\
		if (kva_why_)						\
			SKIP(longjmp(_metadata->env, 1), "%s", kva_why_); \
	} while (0)
#endif

/* @prefix-<pid>: the harness runs every test in a process of its own. */
static inline const char *pid_name(char buf[KVARENA_NAME_LEN],
				   const char *prefix)
{
	snprintf(buf, KVARENA_NAME_LEN, "%s-%d", prefix, (int)getpid());
	return buf;
}

/* One command on a new open of /dev/kvarena (O_RDONLY or O_RDWR). */
static inline int module_ioctl(int flags, unsigned long nr, void *arg)
{
	int fd = open(KVARENA_DEVICE, flags | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = ioctl(fd, nr, arg) ? -errno : 0;
	close(fd);
	return ret;
}

/* STAT of arena @name, as anyone may ask; 0 or -errno in *@err. */
static inline struct kvarena_stat module_stat_err(const char *name, int *err)
{
	struct kvarena_stat s = { 0 };

	snprintf(s.name, sizeof(s.name), "%s", name);
	*err = module_ioctl(O_RDONLY, KVARENA_IOC_STAT, &s);
	return s;
}

static inline struct kvarena_stat module_stat(const char *name)
{
	int err;

	return module_stat_err(name, &err);
}

/*
 * The clients of arena @name, once there are @n or fewer, waiting up to
 * 10 s.  A process that used the io_uring transport may leave its client
 * for a moment after it was reaped: requests that io_uring's workers ran
 * are freed by task work, which an exiting process hands to a kernel work
 * item, and each holds the client's file until then.
 */
static inline uint32_t module_wait_clients(const char *name, uint32_t n)
{
	struct kvarena_stat s;
	int err, i;

	for (i = 0; i < 2000; i++) {
		s = module_stat_err(name, &err);
		if (err || s.nr_clients <= n)
			break;
		usleep(5000);
	}
	return s.nr_clients;
}

/* The CLIENTS row of client @id of arena @name. */
static inline int module_client(const char *name, uint32_t id,
				struct kvarena_client_info *row)
{
	struct kvarena_client_info rows[8];
	struct kvarena_clients c = {
		.clients = (__u64)(uintptr_t)rows,
		.count = 8,
	};
	uint32_t i;
	int ret;

	snprintf(c.name, sizeof(c.name), "%s", name);
	ret = module_ioctl(O_RDONLY, KVARENA_IOC_CLIENTS, &c);
	if (ret)
		return ret;
	for (i = 0; i < c.nr_clients && i < c.count; i++)
		if (rows[i].client_id == id) {
			*row = rows[i];
			return 0;
		}
	return -ENOENT;
}

/* An arena made with raw commands, as an administrator's tool would. */
static inline int module_create(const char *name, uint64_t frame_size,
				uint32_t nr_frames, uint32_t flags)
{
	struct kvarena_arena_create c = {
		.frame_size = frame_size, .nr_frames = nr_frames,
		.mem_kind = KVARENA_MEM_HOST, .flags = flags,
	};

	snprintf(c.name, sizeof(c.name), "%s", name);
	return module_ioctl(O_RDWR, KVARENA_IOC_ARENA_CREATE, &c);
}

static inline int module_set_backing(const char *name, uint32_t first,
				     uint32_t nr, int fd, uint64_t offset)
{
	struct kvarena_set_backing b = {
		.first_frame = first, .nr_frames = nr, .fd = fd,
		.offset = offset,
	};

	snprintf(b.name, sizeof(b.name), "%s", name);
	return module_ioctl(O_RDWR, KVARENA_IOC_ARENA_SET_BACKING, &b);
}

static inline int module_destroy(const char *name)
{
	struct kvarena_arena_destroy d = { 0 };

	snprintf(d.name, sizeof(d.name), "%s", name);
	return module_ioctl(O_RDWR, KVARENA_IOC_ARENA_DESTROY, &d);
}

/*
 * The fd of the one /dev/kvarena file this process has open (the client
 * a struct kva_arena holds), or -1 if there is not exactly one.
 */
static inline int client_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int fd = -1, n = 0;
	char link[64];
	ssize_t len;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		len = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		if (len < 0)
			continue;
		link[len] = 0;
		if (!strcmp(link, KVARENA_DEVICE)) {
			fd = atoi(e->d_name);
			n++;
		}
	}
	closedir(d);
	return n == 1 ? fd : -1;
}

/*
 * The module's answer to FRAME_FD for @handle, asked on the client's own
 * file: a new fd for the frame's backing (and its offset in *@offset), or
 * -errno.  What a range shows can be checked against it byte for byte.
 */
static inline int module_frame_fd(uint64_t handle, uint64_t *offset)
{
	struct kvarena_frame_fd f = { .handle = handle };
	int fd = client_fd();

	*offset = 0;
	if (fd < 0)
		return -EBADF;
	if (ioctl(fd, KVARENA_IOC_FRAME_FD, &f))
		return -errno;
	*offset = f.offset;
	return f.fd;
}

static inline unsigned int open_fds(void)
{
	unsigned int n = 0;
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the directory's own */
}

/*
 * RLIMIT_NOFILE, and the free fd slots under it, set so that exactly
 * @spare more files can be opened; fd_limit_undo() puts both back.
 */
struct fd_limit {
	struct rlimit old;
	int fill[256];
	unsigned int nr;
};

static inline int highest_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int max = -1, fd;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		fd = atoi(e->d_name);
		if (fd != dirfd(d) && fd > max)
			max = fd;
	}
	closedir(d);
	return max;
}

static inline void fd_limit_undo(struct fd_limit *l)
{
	while (l->nr)
		close(l->fill[--l->nr]);
	setrlimit(RLIMIT_NOFILE, &l->old);
}

static inline int fd_limit_set(struct fd_limit *l, unsigned int spare)
{
	struct rlimit r;
	int fd;

	l->nr = 0;
	if (getrlimit(RLIMIT_NOFILE, &l->old))
		return -errno;
	r = l->old;
	r.rlim_cur = (rlim_t)(highest_fd() + 1) + spare;
	if (setrlimit(RLIMIT_NOFILE, &r))
		return -errno;
	/* Take every slot under the limit, then give back @spare. */
	while ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0) {
		if (l->nr == sizeof(l->fill) / sizeof(l->fill[0])) {
			close(fd);
			fd_limit_undo(l);
			return -E2BIG;
		}
		l->fill[l->nr++] = fd;
	}
	if (errno != EMFILE || l->nr < spare) {
		fd_limit_undo(l);
		return -EIO;
	}
	while (spare--)
		close(l->fill[--l->nr]);
	return 0;
}

#endif
