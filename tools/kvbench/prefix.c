// SPDX-License-Identifier: GPL-2.0
/*
 * kvbench prefix: what a prefix hit costs against computing the frames'
 * home from scratch - LOOKUP of a 64-frame key chain against ALLOC of 64
 * frames, each followed by the FREE that returns them, measured in the
 * same run:
 *
 *   core ALLOC          kva_core_alloc() + kva_core_free() of 64 frames:
 *                       the allocator itself, no lock, no system call
 *   core LOOKUP shared  kva_core_prefix_lookup() of a 64-key chain whose
 *                       frames another client holds (64 shared holds),
 *                       + kva_core_free()
 *   core LOOKUP cached  the same chain with nobody holding it: the frames
 *                       come back from the LRU, charged to the caller
 *   core LOOKUP 2^20    shared, in an index of 2^20 published frames
 *                       rather than 64: a key costs about the same however
 *                       many there are (a bucket per frame)
 *   key chain           kva_prefix_keys() of the chain's 64 frames of 16
 *                       tokens (Llama-3-8B's fp16 KV in 2 MiB frames):
 *                       what the runtime computes before a LOOKUP
 *   ioctl ALLOC         ALLOC 64 + FREE 64 on /dev/kvarena
 *   ioctl LOOKUP        LOOKUP of the chain + FREE 64, shared and cached
 *
 * Ratios are to the ALLOC of the same path.  A LOOKUP does more than an
 * ALLOC (it hashes and compares 64 keys) and saves far more: a hit stands
 * for 64 frames of KV that need not be computed.  The device paths need
 * /dev/kvarena and CAP_SYS_ADMIN (an accounting-only arena,
 * kvbench-prefix-<pid>, made and destroyed here); without them only the
 * core lines are printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <kvarena.h>
#include <linux/kvarena.h>

#include "core.h"

#define CHAIN		64
#define ARENA_FRAMES	1024
#define BIG_INDEX	(1u << 20)

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/*
 * One run of @iters iterations into *@best, which keeps the lowest:
 * noise only ever adds time.  The figures compared are measured in turns,
 * run after run, so that a busy spell of the machine hits them alike.
 */
#define RUN_NS(best, iters, body) do {					\
	double t0_ = now_ns(), t_;					\
	for (long i_ = 0; i_ < (iters); i_++) { body; }			\
	t_ = (now_ns() - t0_) / (iters);				\
	if (t_ < *(best))						\
		*(best) = t_;						\
} while (0)

struct prefix_result {
	double core_alloc_ns;		/* per ALLOC 64 + FREE 64 */
	double core_shared_ns;		/* per LOOKUP 64 + FREE 64 */
	double core_cached_ns;
	double core_big_ns;		/* shared, index of 2^20 */
	double keys_ns;			/* kva_prefix_keys(), 64 frames */
	int have_device;
	double ioctl_alloc_ns;
	double ioctl_shared_ns;
	double ioctl_cached_ns;
};

/* The key of frame @i of chain @tag: any bytes but zeros. */
static void set_key(uint8_t *key, uint32_t tag, uint32_t i)
{
	memset(key, 0, KVA_KEY_LEN);
	key[0] = 0x5a;
	memcpy(key + 1, &tag, sizeof(tag));
	memcpy(key + 5, &i, sizeof(i));
}

/* ---- the core, natively --------------------------------------------------- */

struct core_bench {
	struct kva_core c;
	struct kva_core_client pub, user;
	struct kva_core_prefix chain[CHAIN];
	u64 h[CHAIN];
};

/*
 * An arena of @nr frames with @published of them under keys (chain 0 is
 * the first CHAIN of them), held by the publisher if @held.
 */
static int core_setup(struct core_bench *b, uint32_t nr, uint32_t published,
		      bool held)
{
	struct kva_core_prefix *e;
	u64 *h;
	uint32_t i, done;
	int ret = -1;

	h = calloc(published, sizeof(*h));
	e = calloc(CHAIN, sizeof(*e));
	if (!h || !e || kva_core_init(&b->c, nr) ||
	    kva_core_attach(&b->c, &b->pub, 0, 0) ||
	    kva_core_attach(&b->c, &b->user, 0, 0) ||
	    kva_core_alloc(&b->c, &b->pub, h, published, false) !=
	    (int)published)
		goto out;
	for (done = 0; done < published; done += CHAIN) {
		for (i = 0; i < CHAIN; i++) {
			set_key(e[i].key, done / CHAIN, i);
			e[i].handle = h[done + i];
		}
		if (kva_core_publish(&b->c, &b->pub, e, CHAIN) != CHAIN)
			goto out;
	}
	if (!held && kva_core_free(&b->c, &b->pub, h, published))
		goto out;
	for (i = 0; i < CHAIN; i++)
		set_key(b->chain[i].key, 0, i);
	/* Hold records for every lookup to come, made now. */
	if (kva_core_holds_need(&b->c, CHAIN)) {
		uint32_t need = kva_core_holds_need(&b->c, CHAIN);

		kva_core_holds_free(kva_core_holds_grow(
			&b->c, kva_core_holds_alloc(need), need));
	}
	ret = 0;
out:
	free(h);
	free(e);
	return ret;
}

static void core_teardown(struct core_bench *b)
{
	kva_core_detach(&b->c, &b->user);
	kva_core_detach(&b->c, &b->pub);
	kva_core_drop_cache(&b->c);
	kva_core_fini(&b->c);
}

/* LOOKUP of the chain + FREE of what it found; false on any failure. */
static bool core_lookup(struct core_bench *b)
{
	int k;

	if (kva_core_prefix_lookup(&b->c, &b->user, b->chain, CHAIN) != CHAIN)
		return false;
	for (k = 0; k < CHAIN; k++)
		b->h[k] = b->chain[k].handle;
	return !kva_core_free(&b->c, &b->user, b->h, CHAIN);
}

static bool core_alloc(struct core_bench *b)
{
	return kva_core_alloc(&b->c, &b->user, b->h, CHAIN, false) == CHAIN &&
	       !kva_core_free(&b->c, &b->user, b->h, CHAIN);
}

/* The key chain of a 64-frame prompt of Llama-3-8B in fp16. */
struct keys_bench {
	struct kva_geometry g;
	uint32_t tokens[CHAIN * 16];
	struct kva_key keys[CHAIN];
};

static bool keys_setup(struct keys_bench *k)
{
	int i;

	k->g = (struct kva_geometry){
		.layers = 32, .kv_heads = 8, .head_dim = 128,
		.dtype = KVA_DTYPE_FP16, .frame_size = 2u << 20,
	};
	for (i = 0; i < CHAIN * 16; i++)
		k->tokens[i] = (uint32_t)(i * 7919);
	return !kva_geometry_init(&k->g) && k->g.tokens_per_frame == 16;
}

static bool keys_run(struct keys_bench *k)
{
	return kva_prefix_keys(&k->g, "Meta-Llama-3-8B", 15, k->tokens,
			       CHAIN * 16, k->keys, CHAIN) == CHAIN;
}

/* Shared, cached and in a big index, against ALLOC, in turns. */
static int bench_core(long iters, int reps, struct prefix_result *r)
{
	struct core_bench *b = calloc(3, sizeof(*b));
	struct keys_bench *k = calloc(1, sizeof(*k));
	int ok = 1, n = 0, i;

	if (!b || !k || !keys_setup(k))
		goto out;
	if (core_setup(&b[0], ARENA_FRAMES, CHAIN, true))
		goto out;
	n++;
	if (core_setup(&b[1], ARENA_FRAMES, CHAIN, false))
		goto out;
	n++;
	if (core_setup(&b[2], BIG_INDEX, BIG_INDEX, true))
		goto out;
	n++;
	r->core_alloc_ns = r->core_shared_ns = 1e300;
	r->core_cached_ns = r->core_big_ns = r->keys_ns = 1e300;
	for (i = 0; i < reps; i++) {
		RUN_NS(&r->keys_ns, iters / 16 + 1, ok &= keys_run(k));
		RUN_NS(&r->core_alloc_ns, iters, ok &= core_alloc(&b[0]));
		RUN_NS(&r->core_shared_ns, iters, ok &= core_lookup(&b[0]));
		RUN_NS(&r->core_cached_ns, iters, ok &= core_lookup(&b[1]));
		RUN_NS(&r->core_big_ns, iters, ok &= core_lookup(&b[2]));
	}
out:
	while (n--)
		core_teardown(&b[n]);
	free(b);
	free(k);
	return ok && r->core_big_ns < 1e300 ? 0 : -1;
}

/* ---- the module ----------------------------------------------------------- */

static int dev_prefix(int fd, unsigned long cmd,
		      struct kvarena_prefix_entry *e)
{
	struct kvarena_prefix p = { .entries = (__u64)(unsigned long)e,
				    .count = CHAIN };

	if (ioctl(fd, cmd, &p))
		return -errno;
	return (int)p.nr_done;
}

static int dev_frames(int fd, unsigned long cmd, __u64 *h)
{
	struct kvarena_frames f = { .handles = (__u64)(unsigned long)h,
				    .count = CHAIN };

	return ioctl(fd, cmd, &f) ? -errno : 0;
}

/* LOOKUP of the chain @e + FREE of what it found; false on failure. */
static bool dev_lookup(int fd, struct kvarena_prefix_entry *e)
{
	__u64 h[CHAIN];
	int k;

	if (dev_prefix(fd, KVARENA_IOC_LOOKUP, e) != CHAIN)
		return false;
	for (k = 0; k < CHAIN; k++)
		h[k] = e[k].handle;
	return !dev_frames(fd, KVARENA_IOC_FREE, h);
}

/* Chain @tag of the publisher's frames @ph, published; the entries. */
static bool dev_publish(int pub, __u32 tag, const __u64 *ph,
			struct kvarena_prefix_entry *e)
{
	int i;

	memset(e, 0, CHAIN * sizeof(*e));
	for (i = 0; i < CHAIN; i++) {
		set_key(e[i].key, tag, i);
		e[i].handle = ph[i];
	}
	return dev_prefix(pub, KVARENA_IOC_PUBLISH, e) == CHAIN;
}

static int attach(const char *name, const char *label)
{
	struct kvarena_attach at = { 0 };
	int fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -1;
	snprintf(at.name, sizeof(at.name), "%s", name);
	snprintf(at.label, sizeof(at.label), "%s", label);
	if (ioctl(fd, KVARENA_IOC_ATTACH, &at)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int bench_device(long iters, int reps, struct prefix_result *r,
			const char **why)
{
	struct kvarena_arena_create cr = { .frame_size = 64 << 10,
					   .nr_frames = ARENA_FRAMES,
					   .flags = KVARENA_CREATE_NO_BACKING };
	struct kvarena_arena_destroy d = { 0 };
	struct kvarena_prefix_entry held[CHAIN], cached[CHAIN];
	int admin, pub = -1, user = -1, i, ok = 1;
	__u64 h[CHAIN], ph[CHAIN], pc[CHAIN];

	admin = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	if (admin < 0) {
		*why = "no /dev/kvarena";
		return -1;
	}
	snprintf(cr.name, sizeof(cr.name), "kvbench-prefix-%d", getpid());
	memcpy(d.name, cr.name, sizeof(d.name));
	if (ioctl(admin, KVARENA_IOC_ARENA_CREATE, &cr)) {
		*why = errno == EPERM ? "creating an arena needs CAP_SYS_ADMIN"
				      : "ARENA_CREATE failed";
		close(admin);
		return -1;
	}
	pub = attach(cr.name, "kvbench-publisher");
	user = attach(cr.name, "kvbench");
	/*
	 * Two chains: one the publisher holds (LOOKUP takes shared holds),
	 * one it let go of (LOOKUP takes the frames back from the cache).
	 */
	*why = "ATTACH, ALLOC or PUBLISH failed";
	if (pub < 0 || user < 0 || dev_frames(pub, KVARENA_IOC_ALLOC, ph) ||
	    dev_frames(pub, KVARENA_IOC_ALLOC, pc) ||
	    !dev_publish(pub, 1, ph, held) || !dev_publish(pub, 2, pc, cached) ||
	    dev_frames(pub, KVARENA_IOC_FREE, pc))
		goto out;

	r->ioctl_alloc_ns = r->ioctl_shared_ns = r->ioctl_cached_ns = 1e300;
	for (i = 0; i < reps; i++) {
		RUN_NS(&r->ioctl_alloc_ns, iters,
		       ok &= !dev_frames(user, KVARENA_IOC_ALLOC, h) &&
			     !dev_frames(user, KVARENA_IOC_FREE, h));
		RUN_NS(&r->ioctl_shared_ns, iters, ok &= dev_lookup(user, held));
		RUN_NS(&r->ioctl_cached_ns, iters,
		       ok &= dev_lookup(user, cached));
	}
	if (!ok) {
		*why = "a frame operation failed during the run";
		goto out;
	}
	r->have_device = 1;
out:
	if (pub >= 0)
		close(pub);
	if (user >= 0)
		close(user);
	if (ioctl(admin, KVARENA_IOC_ARENA_DESTROY, &d))
		perror("kvbench prefix: ARENA_DESTROY");
	close(admin);
	return r->have_device ? 0 : -1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kvbench prefix [--json] [--iters N] [--reps N]\n"
		"  LOOKUP of a 64-frame key chain against ALLOC of 64 frames (each\n"
		"  with its FREE): the core allocator natively, and the module over\n"
		"  ioctl, with the ratios.  The device paths need /dev/kvarena and\n"
		"  CAP_SYS_ADMIN.\n");
}

static void line(const char *what, double ns, double peer, const char *to)
{
	printf("  %-26s %10.1f ns  %8.1f ns/frame", what, ns, ns / CHAIN);
	if (peer > 0)
		printf("   %5.2fx %s", ns / peer, to);
	putchar('\n');
}

int kvbench_prefix_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json",  no_argument,       NULL, 'j' },
		{ "iters", required_argument, NULL, 'i' },
		{ "reps",  required_argument, NULL, 'r' },
		{ "help",  no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct prefix_result r = { 0 };
	const char *why = NULL;
	long iters = 500;
	int reps = 20, json = 0, c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'i': iters = strtol(optarg, NULL, 0); break;
		case 'r': reps = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (iters < 1 || reps < 1) {
		fprintf(stderr, "kvbench prefix: --iters and --reps must be >= 1\n");
		return 2;
	}

	if (bench_core(iters, reps, &r)) {
		fprintf(stderr, "kvbench prefix: the core allocator or kva_prefix_keys() failed\n");
		return 1;
	}
	bench_device(iters, reps, &r, &why);

	if (json) {
		printf("{\"kind\":\"prefix\",\"chain\":%d,\"core_alloc_ns\":%.1f,"
		       "\"core_lookup_shared_ns\":%.1f,"
		       "\"core_lookup_cached_ns\":%.1f,"
		       "\"core_lookup_index_2e20_ns\":%.1f,\"keys_ns\":%.1f,"
		       "\"core_lookup_vs_alloc\":%.3f",
		       CHAIN, r.core_alloc_ns, r.core_shared_ns,
		       r.core_cached_ns, r.core_big_ns, r.keys_ns,
		       r.core_shared_ns / r.core_alloc_ns);
		if (r.have_device)
			printf(",\"ioctl_alloc_ns\":%.1f,"
			       "\"ioctl_lookup_shared_ns\":%.1f,"
			       "\"ioctl_lookup_cached_ns\":%.1f,"
			       "\"ioctl_lookup_vs_alloc\":%.3f",
			       r.ioctl_alloc_ns, r.ioctl_shared_ns,
			       r.ioctl_cached_ns,
			       r.ioctl_shared_ns / r.ioctl_alloc_ns);
		printf("}\n");
		return 0;
	}
	printf("%d-frame chain: LOOKUP vs ALLOC, each with its FREE (best of %d x %ld, in turns)\n",
	       CHAIN, reps, iters);
	line("core ALLOC", r.core_alloc_ns, 0, NULL);
	line("core LOOKUP, shared", r.core_shared_ns, r.core_alloc_ns,
	     "core ALLOC");
	line("core LOOKUP, cached", r.core_cached_ns, r.core_alloc_ns,
	     "core ALLOC");
	line("core LOOKUP, 2^20 keys", r.core_big_ns, r.core_shared_ns,
	     "64 keys");
	line("key chain (SHA-256)", r.keys_ns, r.core_shared_ns,
	     "core LOOKUP");
	if (!r.have_device) {
		printf("  device paths skipped: %s\n", why);
		return 0;
	}
	line("ioctl ALLOC", r.ioctl_alloc_ns, r.core_alloc_ns, "core ALLOC");
	line("ioctl LOOKUP, shared", r.ioctl_shared_ns, r.ioctl_alloc_ns,
	     "ioctl ALLOC");
	line("ioctl LOOKUP, cached", r.ioctl_cached_ns, r.ioctl_alloc_ns,
	     "ioctl ALLOC");
	return 0;
}
