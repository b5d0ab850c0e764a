// SPDX-License-Identifier: GPL-2.0
/*
 * libkvarena's device path against the real kvarena.ko, in the VM (static,
 * KTAP), built from the library's KVA_TESTING objects: attaching and its
 * errors, the transport choice, one ALLOC per batch carrying the usage,
 * FRAME_FD asked once per frame with one fd kept per backing file, a
 * refused FREE retried, failures unwound, kva_arena_create() for host
 * memory.  Every test of the "dev" fixture runs twice: over ioctl() and
 * over io_uring.
 *
 * Counts come from the module where it keeps them (STAT's alloc_calls,
 * free_calls, alloc_failures; the CLIENTS rows), and from the library's
 * pass-count sites (hooks.h) for commands it does not count (SET_USAGE,
 * FRAME_FD, SET_BACKING, submissions).  Failures are the module's or the
 * kernel's own: -ENOSPC by exhaustion, -EMFILE from FRAME_FD and from the
 * ring under RLIMIT_NOFILE, -EFBIG from the memfd under RLIMIT_FSIZE.
 * The one exception is a FREE refused, injected at the library's dev.free
 * site: the module takes back every frame its client holds.
 *
 * Needs: root, kvarena.ko loaded, /dev/kvarena.  Each test makes its own
 * arenas, named after its pid, and destroys them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/kvarena.h>

#include "kselftest_harness.h"

#include "common.h"
#include "hooks.h"
#include "module.h"

#define FS	4096u
#define TPF	16u		/* small_geometry in 4 KiB */
#define NR	32u

static int open_device(struct kva_arena **a, const char *name,
		       uint32_t transport)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_DEVICE, .name = name, .label = "test",
		.transport = transport,
	};

	return kva_open(&o, a);
}

static int create_host_arena(const char *name, uint32_t nr)
{
	struct kva_arena_params p = {
		.name = name, .nr_frames = nr, .frame_size = FS,
		.mem_kind = KVA_BACKEND_HOST,
	};

	return kva_arena_create(&p);
}

static int destroy_arena(const char *name)
{
	struct kva_arena_params p = { .name = name };

	return kva_arena_destroy(&p);
}

FIXTURE(dev) {
	char name[KVARENA_NAME_LEN];
	struct kva_arena *a;
	struct kva_geometry g;
};

FIXTURE_VARIANT(dev) {
	uint32_t transport;
};

FIXTURE_VARIANT_ADD(dev, ioctl) {
	.transport = KVA_TRANSPORT_IOCTL,
};

FIXTURE_VARIANT_ADD(dev, uring) {
	.transport = KVA_TRANSPORT_URING,
};

FIXTURE_SETUP(dev)
{
	KVA_SETUP_NEED_TRANSPORT(variant->transport);
	unsetenv("KVA_DEVICE");
	unsetenv("KVA_TRANSPORT");
	unsetenv("KVA_MODE");
	unsetenv("KVA_ARENA");
	hooks_reset();
	pid_name(self->name, "dev");
	ASSERT_EQ(0, create_host_arena(self->name, NR));
	ASSERT_EQ(0, open_device(&self->a, self->name, variant->transport));
	self->g = small_geometry(FS);
}

FIXTURE_TEARDOWN(dev)
{
	kva_close(self->a);
	EXPECT_EQ(0, module_stat(self->name).nr_clients);
	EXPECT_EQ(0, destroy_arena(self->name));
}

TEST_F(dev, open_attaches_and_reports_device_mode)
{
	struct kvarena_stat s = module_stat(self->name);
	struct kvarena_client_info row;
	struct kva_arena_info info;

	ASSERT_EQ(0, kva_arena_info(self->a, &info));
	EXPECT_EQ(KVA_MODE_DEVICE, info.mode);
	EXPECT_STREQ("requested by kva_open_opts.mode", info.mode_reason);
	EXPECT_EQ(KVA_BACKEND_HOST, info.backend);
	EXPECT_EQ(variant->transport, info.transport);
	EXPECT_STREQ(self->name, info.name);
	EXPECT_EQ(NR, info.nr_frames);
	EXPECT_EQ(FS, info.frame_size);
	EXPECT_NE(0, info.client_id);
	EXPECT_EQ(1, s.nr_clients);
	EXPECT_EQ(NR, s.nr_backed);
	/* The module's table shows this process under its label. */
	ASSERT_EQ(0, module_client(self->name, info.client_id, &row));
	EXPECT_EQ(getpid(), row.pid);
	EXPECT_STREQ("test", row.label);
}

TEST_F(dev, auto_mode_and_arena_name_from_the_environment)
{
	struct kva_open_opts o = { 0 };
	struct kva_arena_info info;
	struct kva_arena *b;

	setenv("KVA_ARENA", self->name, 1);
	setenv("KVA_TRANSPORT", kva_transport_name(variant->transport), 1);
	ASSERT_EQ(0, kva_open(&o, &b));
	ASSERT_EQ(0, kva_arena_info(b, &info));
	EXPECT_EQ(KVA_MODE_DEVICE, info.mode);
	EXPECT_STREQ("device node present", info.mode_reason);
	EXPECT_EQ(variant->transport, info.transport);
	EXPECT_EQ(2, module_stat(self->name).nr_clients);
	kva_close(b);
	EXPECT_EQ(1, module_stat(self->name).nr_clients);
}

TEST(transport_follows_the_option_the_environment_and_the_ring)
{
	char name[KVARENA_NAME_LEN];
	struct kva_open_opts o = { .mode = KVA_MODE_DEVICE,
				   .name = pid_name(name, "tr") };
	struct kva_arena_info info;
	/* io_uring by default where the module offers it, else ioctl(). */
	const char *no_ring = kva_uring_missing();
	const uint32_t dflt = no_ring ? KVA_TRANSPORT_IOCTL : KVA_TRANSPORT_URING;
	struct fd_limit l;
	struct kva_arena *b;

	if (no_ring)
		TH_LOG("%s: every open falls back to ioctl()", no_ring);
	unsetenv("KVA_TRANSPORT");
	ASSERT_EQ(0, create_host_arena(name, NR));
	ASSERT_EQ(0, kva_open(&o, &b));
	ASSERT_EQ(0, kva_arena_info(b, &info));
	EXPECT_EQ(dflt, info.transport);
	/* Why: the default, or why the ring is not there. */
	if (no_ring) {
		EXPECT_TRUE(info.transport_reason &&
			    strstr(info.transport_reason, "io_uring"))
			TH_LOG("%s", info.transport_reason);
	} else {
		EXPECT_STREQ("the default", info.transport_reason);
	}
	kva_close(b);
	setenv("KVA_TRANSPORT", "ioctl", 1);
	ASSERT_EQ(0, kva_open(&o, &b));
	ASSERT_EQ(0, kva_arena_info(b, &info));
	EXPECT_EQ(KVA_TRANSPORT_IOCTL, info.transport);
	EXPECT_STREQ("KVA_TRANSPORT=ioctl", info.transport_reason);
	kva_close(b);
	/* The option wins over the environment. */
	setenv("KVA_TRANSPORT", "uring", 1);
	o.transport = KVA_TRANSPORT_IOCTL;
	ASSERT_EQ(0, kva_open(&o, &b));
	ASSERT_EQ(0, kva_arena_info(b, &info));
	EXPECT_EQ(KVA_TRANSPORT_IOCTL, info.transport);
	kva_close(b);
	o.transport = KVA_TRANSPORT_AUTO;
	if (no_ring) {
		/* Asked for by name, a ring that is not there is an error. */
		EXPECT_EQ(-EOPNOTSUPP, kva_open(&o, &b));
		unsetenv("KVA_TRANSPORT");
	}
	ASSERT_EQ(0, kva_open(&o, &b));
	ASSERT_EQ(0, kva_arena_info(b, &info));
	EXPECT_EQ(dflt, info.transport);
	kva_close(b);
	setenv("KVA_TRANSPORT", "carrier-pigeon", 1);
	EXPECT_EQ(-EINVAL, kva_open(&o, &b));

	/*
	 * No ring can be made (the one fd left goes to the device): asking
	 * for io_uring fails, by option or by environment; AUTO falls back
	 * to ioctl().
	 */
	ASSERT_EQ(0, fd_limit_set(&l, 1));
	setenv("KVA_TRANSPORT", "uring", 1);
	EXPECT_EQ(-EOPNOTSUPP, kva_open(&o, &b));
	unsetenv("KVA_TRANSPORT");
	o.transport = KVA_TRANSPORT_URING;
	EXPECT_EQ(-EOPNOTSUPP, kva_open(&o, &b));
	o.transport = KVA_TRANSPORT_AUTO;
	EXPECT_EQ(0, kva_open(&o, &b));
	fd_limit_undo(&l);
	ASSERT_EQ(0, kva_arena_info(b, &info));
	EXPECT_EQ(KVA_TRANSPORT_IOCTL, info.transport);
	kva_close(b);

	/* A failed open leaves no client behind. */
	EXPECT_EQ(0, module_stat(name).nr_clients);
	EXPECT_EQ(0, destroy_arena(name));
}

TEST_F(dev, attach_errors_come_from_the_module)
{
	char nope[KVARENA_NAME_LEN];
	struct kva_open_opts o = { .mode = KVA_MODE_DEVICE,
				   .name = pid_name(nope, "nope"),
				   .transport = variant->transport };
	struct kva_arena *b;
	uint64_t h;

	EXPECT_EQ(-ENOENT, kva_open(&o, &b));
	o.name = self->name;
	o.min_frames = NR + 1;
	o.max_frames = NR + 1;
	EXPECT_EQ(-EINVAL, kva_open(&o, &b));
	/* A guarantee of every frame while one is held elsewhere. */
	ASSERT_EQ(1, kva_alloc(self->a, &h, 1, 0));
	o.min_frames = NR;
	o.max_frames = 0;
	EXPECT_EQ(-ENOSPC, kva_open(&o, &b));
	o.min_frames = 0;
	o.label = "a label that is longer than thirty-one characters";
	EXPECT_EQ(-EINVAL, kva_open(&o, &b));
	EXPECT_EQ(1, module_stat(self->name).nr_clients);
}

TEST_F(dev, attach_waits_until_every_frame_has_memory)
{
	char name[KVARENA_NAME_LEN];
	int fd = memfd_create("half", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	struct kva_arena *x;

	pid_name(name, "half");
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, 4 * FS));
	ASSERT_EQ(0, fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK));
	ASSERT_EQ(0, module_create(name, FS, 4, 0));
	ASSERT_EQ(0, module_set_backing(name, 0, 2, fd, 0));
	EXPECT_EQ(-ENODATA, open_device(&x, name, variant->transport));
	ASSERT_EQ(0, module_set_backing(name, 2, 2, fd, 2 * FS));
	ASSERT_EQ(0, open_device(&x, name, variant->transport));
	kva_close(x);
	close(fd);
	EXPECT_EQ(0, module_destroy(name));
}

TEST_F(dev, accounting_only_arenas_give_frames_but_no_sequences)
{
	char name[KVARENA_NAME_LEN];
	struct kva_arena *x;
	struct kva_seq *s;
	uint64_t h[4];

	pid_name(name, "acct");
	ASSERT_EQ(0, module_create(name, FS, 4, KVARENA_CREATE_NO_BACKING));
	ASSERT_EQ(0, open_device(&x, name, variant->transport));
	EXPECT_EQ(-ENODATA, kva_seq_create(x, &self->g, 100, &s));
	ASSERT_EQ(4, kva_alloc(x, h, 4, 0));
	EXPECT_EQ(4, module_stat(name).nr_held);
	ASSERT_EQ(0, kva_free(x, h, 4));
	EXPECT_EQ(0, module_stat(name).nr_held);
	kva_close(x);
	EXPECT_EQ(0, module_destroy(name));
}

TEST_F(dev, batch_is_one_alloc_command_carrying_the_usage)
{
	struct kvarena_stat before, st;
	struct kvarena_client_info row;
	struct kva_arena_info info;
	struct kva_seq *s[3];
	struct kva_grow r[3];
	int i;

	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 500, &s[i]));
		r[i] = (struct kva_grow){ .seq = s[i], .tokens = 20 + i,
					  .ahead = TPF };
	}
	before = module_stat(self->name);
	hooks_reset();
	ASSERT_EQ(0, kva_seq_grow_batch(self->a, r, 3));
	st = module_stat(self->name);
	EXPECT_EQ(before.alloc_calls + 1, st.alloc_calls);
	EXPECT_EQ(1, hooks_count("dev.set_usage"));
	/* Both in one submission: one io_uring_enter on the ring. */
	EXPECT_EQ(1, hooks_count("dev.submit"));
	EXPECT_EQ(9, st.nr_held);
	EXPECT_EQ(63, st.filled_tokens);
	EXPECT_EQ(63 * 256, st.filled_bytes);
	ASSERT_EQ(0, kva_arena_info(self->a, &info));
	ASSERT_EQ(0, module_client(self->name, info.client_id, &row));
	EXPECT_EQ(1, row.alloc_calls);
	EXPECT_EQ(9, row.held);
	EXPECT_EQ(63, row.filled_tokens);
	/* Appends on the fast path reach the module with the next sync. */
	ASSERT_EQ(0, kva_seq_grow(s[0], 5));
	EXPECT_EQ(63, module_stat(self->name).filled_tokens);
	ASSERT_EQ(0, kva_sync_usage(self->a));
	EXPECT_EQ(68, module_stat(self->name).filled_tokens);
	for (i = 0; i < 3; i++)
		kva_seq_free(s[i]);
	st = module_stat(self->name);
	EXPECT_EQ(0, st.nr_held);
	EXPECT_EQ(0, st.filled_tokens);
}

TEST_F(dev, refused_usage_report_is_sent_again_by_the_next_sync)
{
	struct kva_seq *s;
	struct kva_grow r;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 500, &s));
	r = (struct kva_grow){ .seq = s, .tokens = 20, .ahead = TPF };
	hooks_fail("dev.usage", 1, EINVAL);
	ASSERT_EQ(0, kva_seq_grow_batch(self->a, &r, 1));
	EXPECT_EQ(0, module_stat(self->name).filled_tokens);
	EXPECT_LT(0, module_stat(self->name).nr_held);
	/* Nothing changed since, but the module never took the report. */
	ASSERT_EQ(0, kva_sync_usage(self->a));
	EXPECT_EQ(20, module_stat(self->name).filled_tokens);
	kva_seq_free(s);
	EXPECT_EQ(0, module_stat(self->name).filled_tokens);
}

TEST_F(dev, frame_fd_is_asked_once_per_frame_and_one_fd_kept_per_file)
{
	unsigned int fds = open_fds();
	struct kva_seq *s;
	uint64_t h[4], off;
	int i, fd;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 500, &s));
	hooks_reset();
	ASSERT_EQ(0, kva_seq_grow(s, 4 * TPF));
	EXPECT_EQ(4, hooks_count("dev.frame_fd"));
	/* One memfd behind every frame: one fd kept. */
	EXPECT_EQ(fds + 1, open_fds());
	ASSERT_EQ(0, kva_seq_shrink(s, 0));
	ASSERT_EQ(0, kva_seq_grow(s, 4 * TPF));
	EXPECT_EQ(4, hooks_count("dev.frame_fd"));
	EXPECT_EQ(fds + 1, open_fds());

	/* What the range shows is what the module's backing holds. */
	fill_tokens(s, 1, 0, 4 * TPF);
	ASSERT_EQ(4, kva_seq_handles(s, h, 4));
	for (i = 0; i < 4; i++) {
		char buf[FS];

		void *m;

		fd = module_frame_fd(h[i], &off);
		ASSERT_LE(0, fd);
		/* The test's own client holds the frames: it may map them. */
		m = mmap(NULL, FS, PROT_READ, MAP_SHARED, fd, (off_t)off);
		ASSERT_NE(MAP_FAILED, m);
		memcpy(buf, m, FS);
		munmap(m, FS);
		EXPECT_EQ(0, memcmp(buf, (void *)(uintptr_t)(s->base + i * FS),
				    FS));
		close(fd);
	}
	kva_seq_free(s);
}

TEST_F(dev, refused_free_is_retried_with_the_next_frame_operation)
{
	struct kvarena_stat before, st;
	struct kva_stat ks;
	struct kva_seq *s;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 500, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF));
	before = module_stat(self->name);
	hooks_fail("dev.free", 1, EIO);
	kva_seq_free(s);
	/* Still held by this client, not lost. */
	st = module_stat(self->name);
	EXPECT_EQ(3, st.nr_held);
	EXPECT_EQ(before.free_calls, st.free_calls);
	ASSERT_EQ(0, kva_stat(self->a, &ks));
	EXPECT_EQ(3, ks.held);
	EXPECT_EQ(0, ks.nr_seqs);
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 500, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 1));
	st = module_stat(self->name);
	EXPECT_EQ(1, st.nr_held);
	EXPECT_EQ(before.free_calls + 1, st.free_calls);
	ASSERT_EQ(0, kva_stat(self->a, &ks));
	EXPECT_EQ(1, ks.held);
	kva_seq_free(s);
}

TEST_F(dev, failed_frame_fd_fails_the_grow_and_returns_the_frames)
{
	struct fd_limit l;
	struct kva_seq *s;
	int ret;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 500, &s));
	/*
	 * Room for the one fd kept for the backing file: the module's
	 * FRAME_FD for the second frame finds no fd to install.
	 */
	ASSERT_EQ(0, fd_limit_set(&l, 1));
	hooks_reset();
	ret = kva_seq_grow(s, 3 * TPF);
	fd_limit_undo(&l);
	EXPECT_EQ(-EMFILE, ret);
	EXPECT_EQ(2, hooks_count("dev.frame_fd"));
	EXPECT_EQ(0, s->tokens);
	EXPECT_EQ(0, module_stat(self->name).nr_held);
	EXPECT_EQ(0, held_frames(self->a));
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF));
	EXPECT_EQ(3, module_stat(self->name).nr_held);
	kva_seq_free(s);
}

/* What the eviction hook needs: the arena and the client. */
struct evict_arg {
	const char *name;
	uint32_t client_id;
	int ret;
};

/* An administrator's EVICT of the client, from its own open file. */
static void evict_now(void *p)
{
	struct evict_arg *e = p;
	struct kvarena_evict ev = { .client_id = e->client_id };
	int fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);

	snprintf(ev.name, sizeof(ev.name), "%s", e->name);
	e->ret = fd < 0 ? -errno :
		 ioctl(fd, KVARENA_IOC_EVICT, &ev) ? -errno : 0;
	if (fd >= 0)
		close(fd);
}

/*
 * Evicted between the copy of a shared frame and the copy taking the
 * shared frame's place: the module refuses the mapping with ESHUTDOWN,
 * which the grow passes on, and the slot - whose old mapping a refused
 * mmap(MAP_FIXED) may have removed (Linux 6.1 does) - is still the
 * sequence's: nothing else can be mapped there.
 */
TEST_F(dev, eviction_in_a_copy_on_write_grow_is_eshutdown_and_leaves_no_hole)
{
	struct evict_arg e = { .name = self->name, .ret = 1 };
	struct kva_arena_info info;
	struct kva_seq *s, *c;
	void *p, *slot;

	ASSERT_EQ(0, kva_arena_info(self->a, &info));
	e.client_id = info.client_id;
	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 4 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, TPF + TPF / 2));
	ASSERT_EQ(0, kva_seq_fork(s, &c));
	/* Its next token goes to the shared frame: copied first. */
	hooks_reset();
	hooks_call("host.map", 2, evict_now, &e);
	EXPECT_EQ(-ESHUTDOWN, kva_seq_grow(c, 1));
	EXPECT_EQ(0, e.ret);
	/* The copy's scratch mapping, the swap, the way back. */
	EXPECT_EQ(3, hooks_count("host.map"));
	EXPECT_EQ(TPF + TPF / 2, c->tokens);
	slot = (void *)(uintptr_t)(c->base + FS);
	p = mmap(slot, FS, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_FIXED_NOREPLACE, -1, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EEXIST, errno);
	if (p != MAP_FAILED)
		munmap(p, FS);
	EXPECT_EQ(0, module_stat(self->name).nr_clients);
	kva_seq_free(c);
	kva_seq_free(s);
}

TEST_F(dev, failed_alloc_changes_nothing)
{
	struct kvarena_stat before, st;
	struct kva_seq *s;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 5000, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 5));
	before = module_stat(self->name);
	EXPECT_EQ(-ENOSPC, kva_seq_grow(s, NR * TPF));
	EXPECT_EQ(5, s->tokens);
	st = module_stat(self->name);
	/* The module refused it: 32 more frames with 31 free. */
	EXPECT_EQ(before.alloc_failures + 1, st.alloc_failures);
	EXPECT_EQ(1, st.nr_held);
	EXPECT_EQ(5, st.filled_tokens);
	kva_seq_free(s);
}

TEST_F(dev, stat_combines_the_module_totals_and_this_handle)
{
	struct kva_seq *s, *c;
	struct kva_stat st;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 500, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 40));
	ASSERT_EQ(0, kva_seq_fork(s, &c));
	ASSERT_EQ(0, kva_stat(self->a, &st));
	EXPECT_EQ(NR, st.nr_frames);
	EXPECT_EQ(3, st.nr_held);
	EXPECT_EQ(NR - 3, st.nr_free);
	EXPECT_EQ(1, st.nr_clients);
	EXPECT_EQ(40, st.filled_tokens);
	EXPECT_EQ(3, st.held);
	EXPECT_EQ(80, st.seq_tokens);
	EXPECT_EQ(40, st.my_filled_tokens);
	kva_seq_free(c);
	kva_seq_free(s);
}

TEST_F(dev, raw_frames_go_through_the_module)
{
	uint64_t h[4];

	ASSERT_EQ(4, kva_alloc(self->a, h, 4, 0));
	EXPECT_EQ(4, module_stat(self->name).nr_held);
	ASSERT_EQ(0, kva_free(self->a, h, 4));
	EXPECT_EQ(0, module_stat(self->name).nr_held);
	EXPECT_EQ(-ESTALE, kva_free(self->a, h, 1));
}

TEST_F(dev, close_returns_every_frame)
{
	struct kva_arena *b;
	struct kva_seq *s;

	ASSERT_EQ(0, open_device(&b, self->name, variant->transport));
	ASSERT_EQ(0, kva_seq_create(b, &self->g, 500, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 5 * TPF));
	EXPECT_EQ(5, module_stat(self->name).nr_held);
	kva_close(b);
	EXPECT_EQ(0, module_stat(self->name).nr_held);
	EXPECT_EQ(1, module_stat(self->name).nr_clients);
}

/*
 * A preempted sequence swapped out: its frames go back to the module, and
 * another client takes and writes them; swapped in, it reads its own KV
 * again, in frames the module hands it anew.
 */
TEST_F(dev, swap_out_returns_the_frames_to_the_module_and_swap_in_restores)
{
	struct kva_seq *s, *o;
	struct kva_arena *b;
	uint64_t saved = 0;
	char *buf;

	ASSERT_EQ(0, kva_seq_create(self->a, &self->g, 500, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 3 * TPF + 2));
	fill_tokens(s, 6, 0, 3 * TPF + 2);
	buf = malloc(kva_seq_swap_bytes(s));
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, kva_seq_swap_out(s, buf, kva_seq_swap_bytes(s), &saved));
	EXPECT_EQ(0, module_stat(self->name).nr_held);
	/* Another client takes every frame and writes them. */
	ASSERT_EQ(0, open_device(&b, self->name, variant->transport));
	ASSERT_EQ(0, kva_seq_create(b, &self->g, NR * TPF, &o));
	ASSERT_EQ(0, kva_seq_grow(o, NR * TPF));
	fill_tokens(o, 8, 0, NR * TPF);
	EXPECT_EQ(-ENOSPC, kva_seq_swap_in(s, buf, saved));
	EXPECT_EQ(0, s->tokens);
	kva_seq_free(o);
	kva_close(b);
	ASSERT_EQ(0, kva_seq_swap_in(s, buf, saved));
	EXPECT_EQ(4, module_stat(self->name).nr_held);
	EXPECT_EQ(0, check_tokens(s, 6, 0, saved));
	free(buf);
	kva_seq_free(s);
}

TEST(arena_create_registers_one_memfd_behind_every_frame)
{
	char name[KVARENA_NAME_LEN];
	struct kvarena_attach at = { 0 };
	struct kvarena_frames f = { .count = NR };
	struct stat st;
	ino_t ino = 0;
	uint64_t h[NR];
	uint32_t i;
	int dev;

	pid_name(name, "mem");
	hooks_reset();
	ASSERT_EQ(0, create_host_arena(name, NR));
	EXPECT_EQ(1, hooks_count("dev.set_backing"));
	EXPECT_EQ(NR, module_stat(name).nr_backed);
	EXPECT_EQ(-EEXIST, create_host_arena(name, 4));

	/* A client of its own takes every frame and asks where each is. */
	dev = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, dev);
	strcpy(at.name, name);
	ASSERT_EQ(0, ioctl(dev, KVARENA_IOC_ATTACH, &at));
	f.handles = (__u64)(uintptr_t)h;
	ASSERT_EQ(0, ioctl(dev, KVARENA_IOC_ALLOC, &f));
	for (i = 0; i < NR; i++) {
		struct kvarena_frame_fd ff = { .handle = h[i] };

		ASSERT_EQ(0, ioctl(dev, KVARENA_IOC_FRAME_FD, &ff));
		EXPECT_EQ((uint64_t)KVARENA_HANDLE_IDX(h[i]) * FS, ff.offset);
		ASSERT_EQ(0, fstat(ff.fd, &st));
		close(ff.fd);
		/* One frames file for the client, whatever the frame. */
		if (!i)
			ino = st.st_ino;
		EXPECT_EQ(ino, st.st_ino);
	}
	/* Destroy is refused while a client is attached. */
	EXPECT_EQ(-EBUSY, destroy_arena(name));
	close(dev);
	EXPECT_EQ(0, destroy_arena(name));
}

/* ARENA_RESIZE of @name to @nr frames, by an administrator's open. */
static int resize_arena(const char *name, uint32_t nr)
{
	struct kvarena_arena_resize r = { .nr_frames = nr };
	int dev = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC), ret;

	if (dev < 0)
		return -errno;
	strcpy(r.name, name);
	ret = ioctl(dev, KVARENA_IOC_ARENA_RESIZE, &r) ? -errno : 0;
	close(dev);
	return ret;
}

TEST(a_handle_grows_with_its_arena_and_sees_a_shrink_wait)
{
	char name[KVARENA_NAME_LEN];
	struct kva_arena_params p = {
		.name = pid_name(name, "grow"), .nr_frames = NR,
		.max_frames = 2 * NR, .frame_size = FS,
		.mem_kind = KVA_BACKEND_HOST, .low_watermark = 1,
	};
	struct pollfd pfd = { .events = POLLPRI };
	struct kva_arena *a;
	struct kva_stat st;
	uint64_t h[2 * NR];

	ASSERT_EQ(0, kva_arena_create(&p));
	/* One memfd over the table; pages only for the frames in the arena. */
	EXPECT_EQ(2 * NR, module_stat(name).nr_backed);
	ASSERT_EQ(0, open_device(&a, name, KVA_TRANSPORT_IOCTL));
	ASSERT_EQ(0, kva_stat(a, &st));
	EXPECT_EQ(NR, st.nr_frames);
	EXPECT_EQ(2 * NR, st.max_frames);
	EXPECT_EQ(0, st.nr_shrinking);
	EXPECT_EQ(-ENOSPC, kva_alloc(a, h, NR + 1, 0));

	/* Grown after the open: frames past the size at open are handles too. */
	ASSERT_EQ(0, resize_arena(name, 2 * NR));
	ASSERT_EQ((int)(2 * NR), kva_alloc(a, h, 2 * NR, 0));
	ASSERT_EQ(0, kva_stat(a, &st));
	EXPECT_EQ(2 * NR, st.nr_frames);
	EXPECT_EQ(2 * NR, st.held);
	ASSERT_EQ(0, kva_free(a, h + 2 * NR - 4, 4));

	/*
	 * Shrunk with all but 4 frames held: those 4 go, the rest is waited
	 * for, and the arena is under pressure until the engine frees them.
	 */
	pfd.fd = kva_poll_fd(a);
	ASSERT_LE(0, pfd.fd);
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	ASSERT_EQ(0, resize_arena(name, NR));
	ASSERT_EQ(0, kva_stat(a, &st));
	EXPECT_EQ(2 * NR - 4, st.nr_frames);
	EXPECT_EQ(NR - 4, st.nr_shrinking);
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLPRI, pfd.revents & POLLPRI);
	ASSERT_EQ(0, kva_free(a, h, NR - 4));
	ASSERT_EQ(0, kva_stat(a, &st));
	EXPECT_EQ(NR, st.nr_frames);
	EXPECT_EQ(0, st.nr_shrinking);
	ASSERT_EQ(0, kva_free(a, h + NR - 4, NR));
	kva_close(a);
	EXPECT_EQ(0, destroy_arena(name));
}

TEST(arena_create_undoes_itself_on_failure)
{
	char name[KVARENA_NAME_LEN];
	struct kva_arena_params p = { .name = pid_name(name, "two"),
				      .nr_frames = 4, .frame_size = FS };
	struct rlimit old, small;
	struct kva_arena *b;
	int ret, err;

	/* The module makes the arena, then the memfd cannot be sized. */
	signal(SIGXFSZ, SIG_IGN);
	ASSERT_EQ(0, getrlimit(RLIMIT_FSIZE, &old));
	small = old;
	small.rlim_cur = FS;
	ASSERT_EQ(0, setrlimit(RLIMIT_FSIZE, &small));
	ret = kva_arena_create(&p);
	ASSERT_EQ(0, setrlimit(RLIMIT_FSIZE, &old));
	EXPECT_EQ(-EFBIG, ret);
	module_stat_err(name, &err);
	EXPECT_EQ(-ENOENT, err);
	EXPECT_EQ(-ENOENT, open_device(&b, name, KVA_TRANSPORT_AUTO));
	ASSERT_EQ(0, kva_arena_create(&p));
	ASSERT_EQ(0, kva_arena_destroy(&p));
	EXPECT_EQ(-ENOENT, kva_arena_destroy(&p));
}

TEST(arena_create_checks_the_memory_after_the_module_made_the_arena)
{
	char name[KVARENA_NAME_LEN];
	struct kva_arena_params p = { .name = pid_name(name, "three"),
				      .nr_frames = 4, .frame_size = FS,
				      .flags = KVA_OPEN_HUGETLB };
	int err;

	/* hugetlb needs 2 MiB frames: found once the arena exists. */
	EXPECT_EQ(-EINVAL, kva_arena_create(&p));
	module_stat_err(name, &err);
	EXPECT_EQ(-ENOENT, err);
	p.flags = KVA_OPEN_PREFAULT;
	ASSERT_EQ(0, kva_arena_create(&p));
	EXPECT_EQ(4, module_stat(name).nr_backed);
	EXPECT_EQ(0, kva_arena_destroy(&p));
}

TEST_HARNESS_MAIN
