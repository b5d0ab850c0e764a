/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers for the kvarena selftests: each wraps one ioctl and
 * returns 0 or -errno, so tests can assert the exact error.
 */
#ifndef KVA_TEST_H
#define KVA_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/kvarena.h>

/*
 * A child's exit code from waitpid()'s @status, or 1000 + the signal that
 * killed it: never WEXITSTATUS() of a child that did not exit.
 */
static inline int kva_exited(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 1000 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static inline int kva_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static inline int kva_open(int flags)
{
	return open(KVARENA_DEVICE, flags | O_CLOEXEC);
}

/* An arena of @flags; kva_create() makes an accounting-only one. */
static inline int kva_create_flags(int fd, const char *name, __u32 nr_frames,
				   __u64 frame_size, __u32 low_watermark,
				   __u32 flags)
{
	struct kvarena_arena_create c = {
		.frame_size = frame_size,
		.nr_frames = nr_frames,
		.mem_kind = KVARENA_MEM_HOST,
		.low_watermark = low_watermark,
		.bytes_per_token = 1024,
		.flags = flags,
	};

	snprintf(c.name, sizeof(c.name), "%s", name);
	return kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c);
}

static inline int kva_create(int fd, const char *name, __u32 nr_frames,
			     __u64 frame_size, __u32 low_watermark)
{
	return kva_create_flags(fd, name, nr_frames, frame_size, low_watermark,
				KVARENA_CREATE_NO_BACKING);
}

static inline int kva_destroy(int fd, const char *name)
{
	struct kvarena_arena_destroy d = { 0 };

	snprintf(d.name, sizeof(d.name), "%s", name);
	return kva_ioctl(fd, KVARENA_IOC_ARENA_DESTROY, &d);
}

static inline int kva_attach(int fd, const char *name, const char *label,
			     __u32 min, __u32 max, struct kvarena_attach *out)
{
	struct kvarena_attach a = { .min_frames = min, .max_frames = max };
	int ret;

	snprintf(a.name, sizeof(a.name), "%s", name);
	snprintf(a.label, sizeof(a.label), "%s", label);
	ret = kva_ioctl(fd, KVARENA_IOC_ATTACH, &a);
	if (out)
		*out = a;
	return ret;
}

/* Returns frames taken (>= 0) or -errno. */
static inline int kva_alloc(int fd, __u64 *handles, __u32 count, __u32 flags)
{
	struct kvarena_frames f = {
		.handles = (__u64)(unsigned long)handles,
		.count = count,
		.flags = flags,
	};
	int ret = kva_ioctl(fd, KVARENA_IOC_ALLOC, &f);

	return ret ? ret : (int)f.nr_done;
}

static inline int kva_free(int fd, const __u64 *handles, __u32 count)
{
	struct kvarena_frames f = {
		.handles = (__u64)(unsigned long)handles,
		.count = count,
	};

	return kva_ioctl(fd, KVARENA_IOC_FREE, &f);
}

static inline int kva_stat(int fd, const char *name, struct kvarena_stat *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	return kva_ioctl(fd, KVARENA_IOC_STAT, s);
}

static inline int kva_set_usage(int fd, __u64 tokens, __u64 bytes)
{
	struct kvarena_usage u = { .filled_tokens = tokens,
				   .filled_bytes = bytes };

	return kva_ioctl(fd, KVARENA_IOC_SET_USAGE, &u);
}

static inline int kva_set_limits(int fd, const char *name, __u32 id,
				 __u32 min, __u32 max)
{
	struct kvarena_limits l = { .client_id = id, .min_frames = min,
				    .max_frames = max };

	snprintf(l.name, sizeof(l.name), "%s", name);
	return kva_ioctl(fd, KVARENA_IOC_SET_LIMITS, &l);
}

static inline int kva_set_backing(int fd, const char *name, __u32 first,
				  __u32 n, int file_fd, __u64 offset)
{
	struct kvarena_set_backing b = { .first_frame = first, .nr_frames = n,
					 .fd = file_fd, .offset = offset };

	snprintf(b.name, sizeof(b.name), "%s", name);
	return kva_ioctl(fd, KVARENA_IOC_ARENA_SET_BACKING, &b);
}

static inline int kva_frame_fd(int fd, __u64 handle,
			       struct kvarena_frame_fd *out)
{
	struct kvarena_frame_fd f = { .handle = handle };
	int ret = kva_ioctl(fd, KVARENA_IOC_FRAME_FD, &f);

	if (out)
		*out = f;
	return ret;
}

/*
 * Host backing as the module takes it: a memfd of @size bytes, sealed
 * against shrinking (and growing); -1 on failure.
 */
static inline int kva_sealed_memfd(size_t size)
{
	int fd = memfd_create("kvarena-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd >= 0 && (ftruncate(fd, size) ||
			fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Map frame @h (held by @fd's client) with @prot, or MAP_FAILED. */
static inline void *kva_map_frame(int fd, __u64 h, int prot)
{
	struct kvarena_frame_fd ff;
	void *p;

	if (kva_frame_fd(fd, h, &ff))
		return MAP_FAILED;
	p = mmap(NULL, ff.size, prot, MAP_SHARED, ff.fd, ff.offset);
	close(ff.fd);
	return p;
}

/* Whether /proc/self/fdinfo/@fd has @line. */
static inline bool kva_fdinfo_has(int fd, const char *line)
{
	char path[64], buf[2048];
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return false;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, line) != NULL;
}

/*
 * A client file used with io_uring may be released a little after its
 * last close (or its process's exit): io_uring drops its own references to
 * the file after posting the completions.  Wait for that, boundedly.
 */
static inline int kva_wait_no_clients(int fd, const char *name)
{
	struct kvarena_stat s;
	int i;

	for (i = 0; i < 2000; i++) {
		if (kva_stat(fd, name, &s))
			return -1;
		if (!s.nr_clients)
			return 0;
		usleep(5000);
	}
	return (int)s.nr_clients;
}

/*
 * Memory a test made, measured where nothing else moves it: a memory
 * cgroup of the test's own, whose memory.stat counts the shmem pages that
 * processes in it allocated (children inherit it) and nobody else's.
 * Machine-wide counters (/proc/meminfo) move with everything the system
 * does and make flaky tests.
 */
#define KVA_CGROUP_ROOT	"/sys/fs/cgroup"

static inline int kva_write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		ret = -errno;
	close(fd);
	return ret;
}

/* Move this process into a new cgroup @name; its path goes to @path. */
static inline int kva_memcg_enter(const char *name, char *path, size_t len)
{
	char procs[256], pid[32];
	int ret;

	if (access(KVA_CGROUP_ROOT "/cgroup.controllers", F_OK) &&
	    mount("cgroup2", KVA_CGROUP_ROOT, "cgroup2", 0, NULL))
		return -errno;
	ret = kva_write_file(KVA_CGROUP_ROOT "/cgroup.subtree_control",
			     "+memory");
	if (ret)
		return ret;
	snprintf(path, len, "%s/%s", KVA_CGROUP_ROOT, name);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	return kva_write_file(procs, pid);
}

/* Back to the root cgroup, and the test's cgroup removed. */
static inline void kva_memcg_leave(const char *path)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	kva_write_file(KVA_CGROUP_ROOT "/cgroup.procs", pid);
	rmdir(path);
}

/* KiB of shmem charged to the cgroup at @path, or -1. */
static inline long kva_memcg_shmem_kib(const char *path)
{
	char file[256], line[128];
	long long bytes = -1;
	FILE *f;

	snprintf(file, sizeof(file), "%s/memory.stat", path);
	f = fopen(file, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "shmem %lld", &bytes) == 1)
			break;
	if (f)
		fclose(f);
	return bytes < 0 ? -1 : (long)(bytes / 1024);
}

/* ---- prefix chains --------------------------------------------------------- */

/* Entries a publish() or lookup() takes at most. */
#define KVA_TEST_CHAIN	64

/* Key @i of chain @tag: never all zeros. */
static inline void set_key(__u8 *key, __u32 tag, __u32 i)
{
	memset(key, 0, KVARENA_KEY_LEN);
	key[0] = 0x6b;
	memcpy(key + 1, &tag, sizeof(tag));
	memcpy(key + 5, &i, sizeof(i));
}

/* Entries for keys (tag, first), (tag, first + 1), ... with handles @h. */
static inline void chain(struct kvarena_prefix_entry *e, __u32 n,
			 __u32 tag, __u32 first, const __u64 *h)
{
	__u32 i;

	memset(e, 0, n * sizeof(*e));
	for (i = 0; i < n; i++) {
		set_key(e[i].key, tag, first + i);
		if (h)
			e[i].handle = h[i];
	}
}

static inline int prefix_cmd(int fd, unsigned long cmd,
			     struct kvarena_prefix_entry *e, __u32 n,
			     __u32 *done)
{
	struct kvarena_prefix p = {
		.entries = (__u64)(unsigned long)e,
		.count = n,
		.nr_done = 0xdead,
	};
	int ret = kva_ioctl(fd, cmd, &p);

	if (done)
		*done = p.nr_done;
	return ret;
}

/* PUBLISH handles @h under chain @tag; returns frames published or -errno. */
static inline int publish(int fd, __u32 tag, const __u64 *h, __u32 n)
{
	struct kvarena_prefix_entry e[KVA_TEST_CHAIN];
	__u32 done;
	int ret;

	if (n > KVA_TEST_CHAIN)
		return -E2BIG;
	chain(e, n, tag, 0, h);
	ret = prefix_cmd(fd, KVARENA_IOC_PUBLISH, e, n, &done);
	return ret ? ret : (int)done;
}

/* LOOKUP chain @tag from key @first; the run's handles go to @out. */
static inline int lookup(int fd, __u32 tag, __u32 first, __u32 n, __u64 *out)
{
	struct kvarena_prefix_entry e[KVA_TEST_CHAIN];
	__u32 done, i;
	int ret;

	if (n > KVA_TEST_CHAIN)
		return -E2BIG;
	chain(e, n, tag, first, NULL);
	ret = prefix_cmd(fd, KVARENA_IOC_LOOKUP, e, n, &done);
	if (ret)
		return ret;
	for (i = 0; i < done && out; i++)
		out[i] = e[i].handle;
	return (int)done;
}

#endif /* KVA_TEST_H */
