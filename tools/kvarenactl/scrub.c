// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl scrub NAME: clear a CUDA arena's frames between cache
 * domains, as the arena's owner, with libkvarena's kva_scrub() (which
 * loads the CUDA driver as libkvarena does: libcuda.so.1, or
 * $KVA_CUDA_LIBRARY).  Without a scrubber, frames of a CUDA arena never
 * go from one cache domain to another; see Documentation/operators.rst.
 *
 * Runs until SIGINT or SIGTERM, until -n COUNT frames are cleared, or
 * until --wait SECONDS go by with nothing to clear (--wait 0: clear what
 * is wanted now, then exit).  Prints what it cleared when it stops.  The
 * statically linked build (for the test VM) cannot load libcuda.so.1 and
 * says so.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "kvarenactl.h"

#ifdef KVACTL_STATIC

int kvactl_cmd_scrub(const struct kvactl_opts *o)
{
	kvactl_err("scrub: this kvarenactl is statically linked and cannot load libcuda.so.1");
	return KVACTL_FAIL;
}

#else

#include <kvarena.h>

/* How long one kva_scrub() waits at most: signals and limits are seen. */
#define SLICE_MS	250u

static volatile sig_atomic_t stopped;

static void on_stop(int sig)
{
	(void)sig;
	stopped = 1;
}

static int open_arena(const char *name, struct kva_arena **a)
{
	struct kva_open_opts oo = {
		.mode = KVA_MODE_DEVICE, .name = name, .label = "scrub",
		.device = kvactl_device(), .transport = KVA_TRANSPORT_IOCTL,
	};
	int fd = kvactl_open(false, "scrub"), ret;

	/* No module, no node, another ABI: said as every command says it. */
	if (fd < 0)
		return -ENODEV;
	close(fd);
	ret = kva_open(&oo, a);
	if (ret == -ENOENT)
		kvactl_err("scrub: no arena named \"%s\"", name);
	else if (ret == -ENODEV)
		kvactl_err("scrub: %s is not a kvarena device", kvactl_device());
	else if (ret == -EACCES || ret == -EPERM)
		kvactl_err("scrub: permission denied: the arena's owner or CAP_SYS_ADMIN");
	else if (ret == -ELIBACC)
		kvactl_err("scrub: cannot load the CUDA driver (libcuda.so.1, or $KVA_CUDA_LIBRARY)");
	else if (ret)
		kvactl_err("scrub: attaching to \"%s\": %s", name, strerror(-ret));
	return ret;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int kvactl_cmd_scrub(const struct kvactl_opts *o)
{
	const char *name = o->args[0];
	bool wait = kvactl_given(o, OPT_WAIT), count = kvactl_given(o,
							OPT_ITERATIONS);
	struct sigaction sa = { .sa_handler = on_stop };
	uint64_t total = 0, idle_since, t0;
	char size[KVACTL_NUM_LEN];
	struct kva_arena_info info;
	struct kva_arena *a;
	int ret = 0;

	if (open_arena(name, &a))
		return KVACTL_FAIL;
	kva_arena_info(a, &info);
	/* No SA_RESTART: a signal ends the module's wait at once. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	t0 = idle_since = now_ms();
	while (!stopped) {
		unsigned int max = 65536, slice = SLICE_MS;
		uint64_t idle = now_ms() - idle_since;

		if (count && o->iterations - total < max)
			max = (unsigned int)(o->iterations - total);
		if (wait && o->wait_ms - idle < slice)
			slice = o->wait_ms > idle ? (unsigned int)(o->wait_ms - idle) : 0;
		ret = kva_scrub(a, max, (int)slice);
		if (ret == -EINTR)
			continue;
		if (ret < 0)
			break;
		total += (uint64_t)ret;
		if (ret)
			idle_since = now_ms();
		if (count && total >= o->iterations)
			break;
		if (wait && !ret && now_ms() - idle_since >= o->wait_ms)
			break;
	}
	if (ret == -EOPNOTSUPP)
		kvactl_err("scrub: \"%s\" is a %s arena: the module clears its frames itself",
			   name, info.backend == KVA_BACKEND_CUDA ? "cuda" : "host");
	else if (ret == -EPERM)
		kvactl_err("scrub: permission denied: only the owner of \"%s\" or CAP_SYS_ADMIN may scrub it",
			   name);
	else if (ret < 0 && ret != -EINTR)
		kvactl_err("scrub: \"%s\": %s", name, strerror(-ret));
	printf("%s: %llu frames cleared (%s) in %.1f s\n", name,
	       (unsigned long long)total,
	       kvactl_fmt_size(size, total * info.frame_size, o->exact_bytes),
	       (double)(now_ms() - t0) / 1000);
	kva_close(a);
	return ret < 0 && ret != -EINTR ? KVACTL_FAIL : KVACTL_OK;
}

#endif /* KVACTL_STATIC */
