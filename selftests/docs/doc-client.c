// SPDX-License-Identifier: GPL-2.0
/*
 * doc-client - a stand-in serving process for the documented examples
 * (selftests/docs): it attaches to an arena, takes frames, reports usage
 * and holds them in a process of its own until it is killed.
 *
 *   doc-client [-p PID] [-f] [-x | -X N] ARENA LABEL MIN MAX FRAMES TOKENS
 *   doc-client -H ARENA FRAMES BACKED
 *   doc-client -C ARENA FRAMES
 *
 *   -p PID  the process that holds the client gets PID (through
 *           /proc/sys/kernel/ns_last_pid: the documented examples run in a
 *           pid namespace of their own, so that the PIDs they show are
 *           the PIDs a run shows)
 *   -f      the attacher forks the holder and exits, as a server that
 *           attaches and then forks its workers does; without it the
 *           holder attaches itself
 *   -x      after the usage report, ask for MAX more frames: one
 *           allocation refused for lack of frames (ENOSPC)
 *   -X N    the same, for N more frames (refused by a limit that is not
 *           the client's max: its cgroup's dmem.max)
 *
 * The client reports TOKENS tokens at the arena's bytes per token.  The
 * holder's /dev/kvarena file is fd 3.  doc-client returns once the holder
 * is ready, with status 0, or 1 after saying what failed.
 *
 * -H makes a half-made host arena instead, as a create killed while it
 * registers memory leaves one: FRAMES frames of 64 KiB, 1 KiB per token,
 * of which the first BACKED get memory (a sealed memfd).
 *
 * -C leaves FRAMES frames of ARENA cached, as an engine that published a
 * prompt's prefix and exited does: it attaches, takes them, publishes them
 * under keys of its own and exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/kvarena.h>

struct args {
	pid_t pid;
	int fork_away, refused;
	unsigned int more;		/* -X: frames asked for after */
	const char *arena, *label;
	unsigned int min, max, frames;
	unsigned long long tokens;
};

static int fail(const struct args *a, const char *what)
{
	fprintf(stderr, "doc-client %s: %s: %s\n", a->label, what,
		strerror(errno));
	return -1;
}

/* Attach on fd 3, allocate, report usage: 0 or -1. */
static int attach(const struct args *a)
{
	struct kvarena_attach at = { .min_frames = a->min,
				     .max_frames = a->max };
	struct kvarena_frames f = { 0 };
	struct kvarena_usage u = { .filled_tokens = a->tokens };
	__u64 *h = calloc(a->frames + a->max + a->more + 1, sizeof(*h));
	int fd = open(KVARENA_DEVICE, O_RDWR);

	if (fd < 0 || !h)
		return fail(a, "open " KVARENA_DEVICE);
	if (fd != 3 && (dup2(fd, 3) < 0 || close(fd)))
		return fail(a, "dup2");
	snprintf(at.name, sizeof(at.name), "%s", a->arena);
	snprintf(at.label, sizeof(at.label), "%s", a->label);
	if (ioctl(3, KVARENA_IOC_ATTACH, &at))
		return fail(a, "ATTACH");
	f.handles = (__u64)(unsigned long)h;
	f.count = a->frames;
	if (a->frames && ioctl(3, KVARENA_IOC_ALLOC, &f))
		return fail(a, "ALLOC");
	u.filled_bytes = a->tokens * at.bytes_per_token;
	if (ioctl(3, KVARENA_IOC_SET_USAGE, &u))
		return fail(a, "SET_USAGE");
	f.handles = (__u64)(unsigned long)(h + a->frames);
	f.count = a->more ? a->more : at.max_frames;
	if ((a->refused || a->more) &&
	    (!ioctl(3, KVARENA_IOC_ALLOC, &f) || errno != ENOSPC))
		return fail(a, "ALLOC past the max: want ENOSPC");
	return 0;
}

/* ARENA_CREATE, and memory for the first @backed frames only. */
static int half_made(const char *name, unsigned int frames,
		     unsigned int backed)
{
	struct kvarena_arena_create c = { .frame_size = 65536,
					  .nr_frames = frames,
					  .mem_kind = KVARENA_MEM_HOST,
					  .bytes_per_token = 1024 };
	struct kvarena_set_backing b = { .nr_frames = backed };
	int fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC), mfd;

	snprintf(c.name, sizeof(c.name), "%s", name);
	snprintf(b.name, sizeof(b.name), "%s", name);
	if (fd < 0 || ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c)) {
		perror("doc-client: ARENA_CREATE");
		return 1;
	}
	if (!backed)
		return 0;
	mfd = memfd_create("half", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	b.fd = mfd;
	if (mfd < 0 || ftruncate(mfd, (off_t)backed * 65536) ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) ||
	    ioctl(fd, KVARENA_IOC_ARENA_SET_BACKING, &b)) {
		perror("doc-client: ARENA_SET_BACKING");
		return 1;
	}
	return 0;
}

/* FRAMES frames published and let go: cached. */
static int cached(const char *name, unsigned int frames)
{
	struct kvarena_attach at = { 0 };
	struct kvarena_prefix_entry *e = calloc(frames + 1, sizeof(*e));
	__u64 *h = calloc(frames + 1, sizeof(*h));
	struct kvarena_frames f = { .handles = (__u64)(unsigned long)h,
				    .count = frames };
	struct kvarena_prefix p = { .entries = (__u64)(unsigned long)e,
				    .count = frames };
	int fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	unsigned int i;

	snprintf(at.name, sizeof(at.name), "%s", name);
	snprintf(at.label, sizeof(at.label), "prefill");
	if (fd < 0 || !e || !h || ioctl(fd, KVARENA_IOC_ATTACH, &at) ||
	    ioctl(fd, KVARENA_IOC_ALLOC, &f)) {
		perror("doc-client: ALLOC");
		return 1;
	}
	for (i = 0; i < frames; i++) {
		e[i].key[0] = 0x64;
		memcpy(e[i].key + 1, &i, sizeof(i));
		e[i].handle = h[i];
	}
	if (ioctl(fd, KVARENA_IOC_PUBLISH, &p) || p.nr_done != frames) {
		perror("doc-client: PUBLISH");
		return 1;
	}
	return 0;		/* exit: the frames stay cached */
}

/* The next process made gets @pid. */
static int next_pid(const struct args *a)
{
	FILE *f;

	if (!a->pid)
		return 0;
	f = fopen("/proc/sys/kernel/ns_last_pid", "w");
	if (!f || fprintf(f, "%d", (int)a->pid - 1) < 0 || fclose(f))
		return fail(a, "ns_last_pid");
	return 0;
}

int main(int argc, char **argv)
{
	struct args a = { 0 };
	int opt, ready[2], status;
	char ok = 0;
	pid_t holder;

	if (argc == 5 && !strcmp(argv[1], "-H"))
		return half_made(argv[2], (unsigned int)atoi(argv[3]),
				 (unsigned int)atoi(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "-C"))
		return cached(argv[2], (unsigned int)atoi(argv[3]));
	while ((opt = getopt(argc, argv, "p:fxX:")) != -1) {
		if (opt == 'p')
			a.pid = (pid_t)atoi(optarg);
		else if (opt == 'f')
			a.fork_away = 1;
		else if (opt == 'x')
			a.refused = 1;
		else if (opt == 'X')
			a.more = (unsigned int)atoi(optarg);
		else
			return 2;
	}
	if (argc - optind != 6) {
		fprintf(stderr, "usage: doc-client [-p PID] [-f] [-x | -X N] ARENA LABEL MIN MAX FRAMES TOKENS\n");
		return 2;
	}
	a.arena = argv[optind];
	a.label = argv[optind + 1];
	a.min = (unsigned int)strtoul(argv[optind + 2], NULL, 0);
	a.max = (unsigned int)strtoul(argv[optind + 3], NULL, 0);
	a.frames = (unsigned int)strtoul(argv[optind + 4], NULL, 0);
	a.tokens = strtoull(argv[optind + 5], NULL, 0);

	/* Nothing but the client's file beyond 0, 1 and 2. */
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	if (pipe(ready))
		return 1;
	if (dup2(ready[0], 10) < 0 || dup2(ready[1], 11) < 0)
		return 1;
	close(ready[0]);
	close(ready[1]);
	if (a.fork_away && attach(&a))
		return 1;
	if (next_pid(&a))
		return 1;
	holder = fork();
	if (holder < 0)
		return 1;
	if (holder == 0) {
		close(10);
		if (!a.fork_away && attach(&a))
			_exit(1);
		ok = 1;
		if (write(11, &ok, 1) != 1)
			_exit(1);
		close(11);
		/* Nothing of the caller's: its output is done when we are ready. */
		opt = open("/dev/null", O_RDWR);
		if (opt < 0 || dup2(opt, 0) < 0 || dup2(opt, 1) < 0 ||
		    dup2(opt, 2) < 0)
			_exit(1);
		if (opt > 3)
			close(opt);
		for (;;)
			pause();
	}
	close(11);
	if (a.fork_away)
		close(3);		/* the attacher lets go: the child holds it */
	if (read(10, &ok, 1) != 1 || !ok) {
		waitpid(holder, &status, 0);
		return 1;
	}
	return 0;
}
