// SPDX-License-Identifier: GPL-2.0
/*
 * demo-client - a stand-in serving process for the main job (`make demo`):
 *
 *   demo-client ARENA LABEL MIN MAX FRAMES TOKENS
 *
 * attaches to ARENA as client LABEL with a guarantee of MIN frames and a
 * limit of MAX, allocates FRAMES frames in one ALLOC, maps the first one
 * through FRAME_FD and writes to it, reports TOKENS tokens filled at the
 * arena's bytes per token, asks for MAX more frames (refused whole:
 * -ENOSPC), prints what it did and "ready", then holds everything until it
 * is killed - when the module takes it all back.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/kvarena.h>

static void die(const char *label, const char *what)
{
	fprintf(stderr, "demo-client %s: %s: %s\n", label, what,
		strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	struct kvarena_attach at = { 0 };
	struct kvarena_frames f = { 0 };
	struct kvarena_frame_fd ff = { 0 };
	struct kvarena_usage u = { 0 };
	const char *label;
	__u64 *handles;
	__u32 n;
	char *m;
	int fd;

	if (argc != 7) {
		fprintf(stderr, "usage: demo-client ARENA LABEL MIN MAX FRAMES TOKENS\n");
		return 2;
	}
	label = argv[2];
	snprintf(at.name, sizeof(at.name), "%s", argv[1]);
	snprintf(at.label, sizeof(at.label), "%s", label);
	at.min_frames = strtoul(argv[3], NULL, 0);
	at.max_frames = strtoul(argv[4], NULL, 0);
	n = strtoul(argv[5], NULL, 0);
	u.filled_tokens = strtoull(argv[6], NULL, 0);

	fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die(label, "open " KVARENA_DEVICE);
	if (ioctl(fd, KVARENA_IOC_ATTACH, &at))
		die(label, "ATTACH");
	handles = calloc(n + at.max_frames, sizeof(*handles));
	if (!handles)
		die(label, "calloc");
	f.handles = (__u64)(unsigned long)handles;
	f.count = n;
	if (ioctl(fd, KVARENA_IOC_ALLOC, &f))
		die(label, "ALLOC");

	ff.handle = handles[0];
	if (ioctl(fd, KVARENA_IOC_FRAME_FD, &ff))
		die(label, "FRAME_FD");
	m = mmap(NULL, ff.size, PROT_READ | PROT_WRITE, MAP_SHARED, ff.fd,
		 ff.offset);
	if (m == MAP_FAILED)
		die(label, "mmap");
	snprintf(m, ff.size, "KV of %s", label);

	u.filled_bytes = u.filled_tokens * at.bytes_per_token;
	if (ioctl(fd, KVARENA_IOC_SET_USAGE, &u))
		die(label, "SET_USAGE");

	f.handles = (__u64)(unsigned long)(handles + n);
	f.count = at.max_frames;
	if (ioctl(fd, KVARENA_IOC_ALLOC, &f) == 0 || errno != ENOSPC)
		die(label, "ALLOC past max should be refused with ENOSPC");

	printf("%-8s client %u: %u frames (first %#llx, mapped at offset %llu),"
	       " %llu tokens; %u more: %s\n",
	       label, at.client_id, n, (unsigned long long)handles[0],
	       (unsigned long long)ff.offset,
	       (unsigned long long)u.filled_tokens, at.max_frames,
	       strerror(ENOSPC));
	printf("%s ready\n", label);
	fflush(stdout);
	for (;;)
		pause();
}
