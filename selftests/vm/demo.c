// SPDX-License-Identifier: GPL-2.0
/*
 * The main job, run by `make demo` inside the VM: create a host arena
 * backed by a memfd, attach two serving clients with guarantees and
 * limits, allocate for each, report filled tokens, and print the arena's
 * STAT totals and CLIENTS table as the module reports them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/kvarena.h>

#define ARENA		"demo"
#define NR_FRAMES	64
#define FRAME_SIZE	(2u << 20)
#define BYTES_PER_TOKEN	(128u << 10)	/* Llama-3-8B, fp16 */

static void die(const char *what)
{
	fprintf(stderr, "demo: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int attach(const char *label, __u32 min, __u32 max)
{
	struct kvarena_attach at = { .name = ARENA, .min_frames = min,
				     .max_frames = max };
	int fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		die("open " KVARENA_DEVICE);
	snprintf(at.label, sizeof(at.label), "%s", label);
	if (ioctl(fd, KVARENA_IOC_ATTACH, &at))
		die("ATTACH");
	printf("attached %-8s client %u  min %2u  max %2u\n", label,
	       at.client_id, min, at.max_frames);
	return fd;
}

/* Allocate @n frames and report @tokens of them filled. */
static void serve(int fd, const char *label, __u32 n, __u64 tokens)
{
	__u64 handles[NR_FRAMES];
	struct kvarena_frames f = { .handles = (__u64)(unsigned long)handles,
				    .count = n };
	struct kvarena_usage u = { .filled_tokens = tokens,
				   .filled_bytes = tokens * BYTES_PER_TOKEN };

	if (ioctl(fd, KVARENA_IOC_ALLOC, &f))
		die("ALLOC");
	if (ioctl(fd, KVARENA_IOC_SET_USAGE, &u))
		die("SET_USAGE");
	printf("%-8s allocated %u frames, first handle %#llx, %llu tokens filled\n",
	       label, f.nr_done, (unsigned long long)handles[0],
	       (unsigned long long)tokens);
}

static void print_stat(int fd)
{
	struct kvarena_stat s = { .name = ARENA };
	struct kvarena_client_info rows[8];
	struct kvarena_clients c = { .name = ARENA,
				     .clients = (__u64)(unsigned long)rows,
				     .count = 8 };
	double mib = FRAME_SIZE / 1048576.0;
	__u32 i;

	if (ioctl(fd, KVARENA_IOC_STAT, &s))
		die("STAT");
	if (ioctl(fd, KVARENA_IOC_CLIENTS, &c))
		die("CLIENTS");
	printf("\narena %s: %u frames of %.0f MiB, %u backed, %u clients\n",
	       s.name, s.nr_frames, mib, s.nr_backed, s.nr_clients);
	printf("  %-10s %8s %10s\n", "", "frames", "MiB");
	printf("  %-10s %8u %10.0f\n", "capacity", s.nr_frames, s.nr_frames * mib);
	printf("  %-10s %8u %10.0f\n", "held", s.nr_held, s.nr_held * mib);
	printf("  %-10s %8s %10.1f  (%llu tokens)\n", "filled", "",
	       s.filled_bytes / 1048576.0, (unsigned long long)s.filled_tokens);
	printf("  %-10s %8u %10.0f\n", "cached", s.nr_cached, s.nr_cached * mib);
	printf("  %-10s %8u %10.0f  (%u reserved for unmet minimums)\n",
	       "free", s.nr_free, s.nr_free * mib, s.nr_reserved);
	printf("  held - filled: %.1f%% of held\n",
	       s.nr_held ? 100.0 * (1.0 - (double)s.filled_bytes /
				    ((double)s.nr_held * FRAME_SIZE)) : 0.0);
	printf("  calls: %llu alloc, %llu free, %llu failed; peak held %u\n",
	       (unsigned long long)s.alloc_calls,
	       (unsigned long long)s.free_calls,
	       (unsigned long long)s.alloc_failures, s.peak_held);
	printf("\n  %4s %6s %-10s %4s %4s %5s %5s %10s\n", "id", "pid",
	       "label", "min", "max", "held", "peak", "filled");
	for (i = 0; i < c.nr_clients && i < 8; i++)
		printf("  %4u %6d %-10s %4u %4u %5u %5u %9.1fM\n",
		       rows[i].client_id, rows[i].pid, rows[i].label,
		       rows[i].min_frames, rows[i].max_frames, rows[i].held,
		       rows[i].peak, rows[i].filled_bytes / 1048576.0);
}

int main(void)
{
	struct kvarena_arena_create cr = {
		.name = ARENA, .frame_size = FRAME_SIZE,
		.nr_frames = NR_FRAMES, .mem_kind = KVARENA_MEM_HOST,
		.low_watermark = 8, .bytes_per_token = BYTES_PER_TOKEN,
	};
	struct kvarena_set_backing b = { .name = ARENA,
					 .nr_frames = NR_FRAMES };
	struct kvarena_arena_destroy d = { .name = ARENA };
	struct kvarena_version v = { 0 };
	int admin, a, c, mfd;
	__u64 extra[64];
	struct kvarena_frames f = { .handles = (__u64)(unsigned long)extra,
				    .count = 30 };

	admin = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	if (admin < 0)
		die("open " KVARENA_DEVICE);
	if (ioctl(admin, KVARENA_IOC_VERSION, &v))
		die("VERSION");
	printf("kvarena ABI %u, features %#llx\n", v.abi_version,
	       (unsigned long long)v.features);
	if (ioctl(admin, KVARENA_IOC_ARENA_CREATE, &cr))
		die("ARENA_CREATE");
	mfd = memfd_create("kvarena-demo", MFD_CLOEXEC);
	if (mfd < 0 || ftruncate(mfd, (off_t)NR_FRAMES * FRAME_SIZE))
		die("memfd");
	b.fd = mfd;
	if (ioctl(admin, KVARENA_IOC_ARENA_SET_BACKING, &b))
		die("ARENA_SET_BACKING");
	close(mfd);
	printf("created arena %s: %u x %u MiB host frames, memfd backing\n",
	       ARENA, NR_FRAMES, FRAME_SIZE >> 20);

	a = attach("serve-a", 8, 40);
	c = attach("serve-b", 8, 40);
	serve(a, "serve-a", 24, 24 * 16 - 9);
	serve(c, "serve-b", 16, 16 * 16 - 100);
	/* serve-b wants 30 more: past its max of 40, refused whole. */
	if (ioctl(c, KVARENA_IOC_ALLOC, &f) == 0 || errno != ENOSPC)
		die("ALLOC beyond max should fail with ENOSPC");
	printf("serve-b asked for 30 more frames: %s (max 40)\n",
	       strerror(errno));
	print_stat(admin);

	close(a);
	close(c);
	if (ioctl(admin, KVARENA_IOC_ARENA_DESTROY, &d))
		die("ARENA_DESTROY");
	printf("\nclients closed, arena destroyed\n");
	return 0;
}
