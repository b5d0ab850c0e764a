/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers for the kvarena selftests: each wraps one ioctl and
 * returns 0 or -errno, so tests can assert the exact error.
 */
#ifndef KVA_TEST_H
#define KVA_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kvarena.h>

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

#endif /* KVA_TEST_H */
