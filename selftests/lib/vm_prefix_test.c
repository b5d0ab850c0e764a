// SPDX-License-Identifier: GPL-2.0
/*
 * libkvarena's prefix sharing in device mode against the real kvarena.ko,
 * in the VM (static, KTAP), built from the library's KVA_TESTING objects:
 * a sequence's prefix published by a process that then exits, attached by
 * another and read back byte-exact; two processes on one prefix, each
 * appending its own tail; the read-only mapping and the copy before a
 * write; what the module counts.  Every test of the "dev" fixture runs
 * over ioctl() and over io_uring, with host memory; with a CUDA toolkit at
 * build time the cuda backend runs the first case too, against the test
 * double of the driver linked in (cuda_static.c).
 *
 * Needs: root, kvarena.ko loaded, /dev/kvarena.  Each test makes its own
 * arenas, named after its pid, and destroys them.
 */
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/kvarena.h>

#include "kselftest_harness.h"

#include "common.h"
#include "hooks.h"
#include "module.h"
#ifdef KVA_TEST_CUDA
#include <cuda.h>
#include "cuda_double.h"
#endif

#define FS	(64u << 10)	/* the CUDA double's granularity */
#define TPF	256u		/* small_geometry in 64 KiB */
#define NR	16u

static int open_device(struct kva_arena **a, const char *name,
		       uint32_t transport, const char *label)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_DEVICE, .name = name, .label = label,
		.transport = transport,
	};

	return kva_open(&o, a);
}

static int create_arena(const char *name, uint32_t kind)
{
	struct kva_arena_params p = {
		.name = name, .nr_frames = NR, .frame_size = FS,
		.mem_kind = kind,
	};

	return kva_arena_create(&p);
}

static int destroy_arena(const char *name)
{
	struct kva_arena_params p = { .name = name };

	return kva_arena_destroy(&p);
}

/* The keys of a prompt of @n tokens (token i is i * 31 + 7). */
static int prompt_keys(const struct kva_geometry *g, uint64_t n,
		       struct kva_key *k, unsigned int max)
{
	static uint32_t t[8 * TPF];
	uint64_t i;

	for (i = 0; i < n; i++)
		t[i] = (uint32_t)(i * 31 + 7);
	return kva_prefix_keys(g, "vm-model", 8, t, n, k, max);
}

/*
 * In a child process: open the arena, compute a prompt of @tokens tokens
 * of @tag's pattern, publish its full frames, and exit without closing
 * anything.  Returns the child's exit status (0: published).
 */
static int publish_and_exit(const char *name, uint32_t transport,
			    uint32_t tag, uint64_t tokens)
{
	uint32_t clients = module_stat(name).nr_clients;
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct kva_geometry g = small_geometry(FS);
		struct kva_key k[8];
		struct kva_arena *a;
		struct kva_seq *s;
		int n;

		if (open_device(&a, name, transport, "writer") ||
		    kva_seq_create(a, &g, 8 * TPF, &s) ||
		    kva_seq_grow(s, tokens))
			_exit(10);
		fill_tokens(s, tag, 0, tokens);
		n = prompt_keys(&g, tokens, k, 8);
		if (n < 1 || kva_seq_publish(s, k, (unsigned int)n) != n)
			_exit(11);
		_exit(0);	/* process death releases the client */
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	/* Its client goes with it, io_uring's hold on the file too. */
	if (module_wait_clients(name, clients) != clients)
		return 129;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

FIXTURE(dev) {
	char name[KVARENA_NAME_LEN];
	struct kva_geometry g;
	struct kva_key k[8];
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
	pid_name(self->name, "pfx");
	self->g = small_geometry(FS);
	ASSERT_EQ(TPF, self->g.tokens_per_frame);
	ASSERT_EQ(4, prompt_keys(&self->g, 4 * TPF, self->k, 8));
	ASSERT_EQ(0, create_arena(self->name, KVA_BACKEND_HOST));
	hooks_reset();
}

FIXTURE_TEARDOWN(dev)
{
	EXPECT_EQ(0, destroy_arena(self->name));
}

TEST_F(dev, prefix_of_an_exited_process_reads_back_byte_exact)
{
	struct kvarena_stat st;
	struct kva_arena *a;
	struct kva_stat ks;
	struct kva_seq *s;

	ASSERT_EQ(0, publish_and_exit(self->name, variant->transport, 21,
				      3 * TPF + 9));
	st = module_stat(self->name);
	EXPECT_EQ(3, st.nr_cached);
	EXPECT_EQ(3, st.nr_published);
	EXPECT_EQ(0, st.nr_held);
	EXPECT_EQ(0, st.nr_clients);

	ASSERT_EQ(0, open_device(&a, self->name, variant->transport, "reader"));
	ASSERT_EQ(0, kva_seq_create(a, &self->g, 8 * TPF, &s));
	hooks_reset();
	ASSERT_EQ(3, kva_seq_attach_prefix(s, self->k, 4));
	EXPECT_EQ(1, hooks_count("dev.lookup"));
	EXPECT_EQ(3 * TPF, s->tokens);
	EXPECT_EQ(0, check_tokens(s, 21, 0, 3 * TPF));
	st = module_stat(self->name);
	EXPECT_EQ(0, st.nr_cached);
	EXPECT_EQ(3, st.nr_held);
	EXPECT_EQ(3, st.cache_hits);
	EXPECT_EQ(1, st.cache_misses);
	/* The usage went with it: three frames of tokens. */
	EXPECT_EQ(3 * TPF, st.filled_tokens);
	ASSERT_EQ(0, kva_stat(a, &ks));
	EXPECT_EQ(3, ks.cache_hits);
	EXPECT_EQ(3, ks.nr_published);
	/* Appending goes to a frame of our own. */
	ASSERT_EQ(0, kva_seq_grow(s, 5));
	fill_tokens(s, 22, 3 * TPF, 3 * TPF + 5);
	EXPECT_EQ(0, check_tokens(s, 21, 0, 3 * TPF));
	kva_close(a);
	EXPECT_EQ(3, module_stat(self->name).nr_cached);
}

TEST_F(dev, attached_frames_cannot_be_written_in_place)
{
	struct kva_arena *a;
	struct kva_seq *s;
	int status;
	pid_t pid;

	ASSERT_EQ(0, publish_and_exit(self->name, variant->transport, 23,
				      2 * TPF));
	ASSERT_EQ(0, open_device(&a, self->name, variant->transport, "r"));
	ASSERT_EQ(0, kva_seq_create(a, &self->g, 8 * TPF, &s));
	ASSERT_EQ(2, kva_seq_attach_prefix(s, self->k, 2));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		*(volatile uint16_t *)kva_seq_kv_ptr(s, 0, 0, 0, 1) = 1;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(SIGSEGV, WTERMSIG(status));
	/* Through the copy-on-write path it works, and copies. */
	ASSERT_EQ(0, kva_seq_shrink(s, 2 * TPF - 1));
	ASSERT_EQ(0, kva_seq_grow(s, 1));
	fill_tokens(s, 24, 2 * TPF - 1, 2 * TPF);
	EXPECT_EQ(0, check_tokens(s, 23, 0, 2 * TPF - 1));
	EXPECT_EQ(0, check_tokens(s, 24, 2 * TPF - 1, 2 * TPF));
	kva_close(a);
	/* The published frame kept its bytes for the next reader. */
	ASSERT_EQ(0, open_device(&a, self->name, variant->transport, "r2"));
	ASSERT_EQ(0, kva_seq_create(a, &self->g, 8 * TPF, &s));
	ASSERT_EQ(2, kva_seq_attach_prefix(s, self->k, 2));
	EXPECT_EQ(0, check_tokens(s, 23, 0, 2 * TPF));
	kva_close(a);
}

TEST_F(dev, the_publisher_reads_on_and_copies_before_rewriting)
{
	struct kvarena_frame_fd ff = { 0 };
	struct kva_arena *a;
	struct kva_seq *s;
	uint64_t h[3], h2[3];

	ASSERT_EQ(0, open_device(&a, self->name, variant->transport, "pub"));
	ASSERT_EQ(0, kva_seq_create(a, &self->g, 8 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 2 * TPF + 3));
	fill_tokens(s, 30, 0, 2 * TPF + 3);
	ASSERT_EQ(2, kva_seq_publish(s, self->k, 2));
	/* The module made the frames read-only: ours, mapped before, too. */
	ASSERT_EQ(3, kva_seq_handles(s, h, 3));
	ff.handle = h[0];
	ASSERT_LE(0, client_fd());
	ASSERT_EQ(0, ioctl(client_fd(), KVARENA_IOC_FRAME_FD, &ff));
	EXPECT_EQ(KVARENA_ACCESS_READ, ff.access);
	close(ff.fd);
	ff = (struct kvarena_frame_fd){ .handle = h[2] };
	ASSERT_EQ(0, ioctl(client_fd(), KVARENA_IOC_FRAME_FD, &ff));
	EXPECT_EQ(KVARENA_ACCESS_READ | KVARENA_ACCESS_WRITE, ff.access);
	close(ff.fd);
	/* Reading goes on; the partial frame is ours to write. */
	EXPECT_EQ(0, check_tokens(s, 30, 0, 2 * TPF + 3));
	ASSERT_EQ(0, kva_seq_grow(s, 4));
	fill_tokens(s, 31, 2 * TPF + 3, 2 * TPF + 7);
	EXPECT_EQ(0, check_tokens(s, 31, 2 * TPF + 3, 2 * TPF + 7));
	/* Rewriting a published token goes through a copy. */
	ASSERT_EQ(0, kva_seq_shrink(s, 2 * TPF - 1));
	ASSERT_EQ(0, kva_seq_grow(s, 1));
	fill_tokens(s, 32, 2 * TPF - 1, 2 * TPF);
	ASSERT_EQ(2, kva_seq_handles(s, h2, 3));
	EXPECT_EQ(h[0], h2[0]);
	EXPECT_NE(h[1], h2[1]);
	EXPECT_EQ(0, check_tokens(s, 30, 0, 2 * TPF - 1));
	EXPECT_EQ(0, check_tokens(s, 32, 2 * TPF - 1, 2 * TPF));
	/* The published frame went back to the cache, as it was. */
	EXPECT_EQ(1, module_stat(self->name).nr_cached);
	kva_close(a);
	ASSERT_EQ(0, open_device(&a, self->name, variant->transport, "r"));
	ASSERT_EQ(0, kva_seq_create(a, &self->g, 8 * TPF, &s));
	ASSERT_EQ(2, kva_seq_attach_prefix(s, self->k, 2));
	EXPECT_EQ(0, check_tokens(s, 30, 0, 2 * TPF));
	kva_close(a);
}

TEST_F(dev, two_processes_hold_one_prefix_and_append_apart)
{
	int go[2], done[2], status;
	struct kvarena_client_info row;
	struct kva_arena_info info;
	struct kva_arena *a;
	struct kva_seq *s;
	pid_t pid;
	char c;

	ASSERT_EQ(0, publish_and_exit(self->name, variant->transport, 25,
				      4 * TPF));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kva_arena *b;
		struct kva_seq *t;
		int bad = 0;

		if (open_device(&b, self->name, variant->transport, "b") ||
		    kva_seq_create(b, &self->g, 8 * TPF, &t) ||
		    kva_seq_attach_prefix(t, self->k, 4) != 4 ||
		    kva_seq_grow(t, 10))
			_exit(10);
		fill_tokens(t, 26, 4 * TPF, 4 * TPF + 10);
		if (write(done[1], "b", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(11);
		/* After the parent wrote its own tail. */
		bad |= check_tokens(t, 25, 0, 4 * TPF) != 0;
		bad |= (check_tokens(t, 26, 4 * TPF, 4 * TPF + 10) != 0) << 1;
		kva_close(b);
		_exit(bad);
	}
	ASSERT_EQ(1, read(done[0], &c, 1));
	ASSERT_EQ(0, open_device(&a, self->name, variant->transport, "c"));
	ASSERT_EQ(0, kva_seq_create(a, &self->g, 8 * TPF, &s));
	ASSERT_EQ(4, kva_seq_attach_prefix(s, self->k, 4));
	ASSERT_EQ(0, kva_seq_grow(s, 10));
	fill_tokens(s, 27, 4 * TPF, 4 * TPF + 10);
	/* Charged once: four shared frames and two tails. */
	EXPECT_EQ(6, module_stat(self->name).nr_held);
	ASSERT_EQ(0, kva_arena_info(a, &info));
	ASSERT_EQ(0, module_client(self->name, info.client_id, &row));
	EXPECT_EQ(5, row.held);
	EXPECT_EQ(4, row.shared);
	EXPECT_EQ(1, row.charged);
	ASSERT_EQ(1, write(go[1], "c", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(1, module_wait_clients(self->name, 1));
	EXPECT_EQ(0, check_tokens(s, 25, 0, 4 * TPF));
	EXPECT_EQ(0, check_tokens(s, 27, 4 * TPF, 4 * TPF + 10));
	kva_close(a);
	EXPECT_EQ(4, module_stat(self->name).nr_cached);
	EXPECT_EQ(0, module_stat(self->name).nr_held);
}

TEST_F(dev, a_second_publisher_of_the_same_prompt_keeps_its_frames_private)
{
	struct kva_arena *a;
	struct kva_seq *s;

	ASSERT_EQ(0, publish_and_exit(self->name, variant->transport, 28,
				      2 * TPF));
	ASSERT_EQ(0, open_device(&a, self->name, variant->transport, "late"));
	ASSERT_EQ(0, kva_seq_create(a, &self->g, 8 * TPF, &s));
	ASSERT_EQ(0, kva_seq_grow(s, 2 * TPF));
	fill_tokens(s, 28, 0, 2 * TPF);
	EXPECT_EQ(0, kva_seq_publish(s, self->k, 2));
	EXPECT_EQ(2, module_stat(self->name).nr_published);
	kva_close(a);
	/* The late copies were never published: freed, not cached. */
	EXPECT_EQ(2, module_stat(self->name).nr_cached);
	EXPECT_EQ(NR - 2, module_stat(self->name).nr_free);
}

/*
 * The copying agent of arena @name's lower tier, kva_tier_agent() in a
 * loop as kvarenactl agent runs it: in a child until killed.  Returns
 * its pid.
 */
static pid_t tier_agent(const char *name, const char *lower)
{
	struct kva_open_opts uo = { .mode = KVA_MODE_DEVICE, .name = name,
				    .label = "agent" };
	struct kva_open_opts lo = { .mode = KVA_MODE_DEVICE, .name = lower,
				    .label = "agent" };
	struct kva_arena *ua, *la;
	pid_t pid = fork();

	if (pid)
		return pid;
	if (kva_open(&uo, &ua) || kva_open(&lo, &la))
		_exit(20);
	for (;;)
		if (kva_tier_agent(ua, la, 8, 100, NULL) < 0)
			_exit(22);
}

static int set_tier(const char *name, const char *lower, uint32_t target)
{
	struct kvarena_arena_tier t = { .free_target = target };

	snprintf(t.name, sizeof(t.name), "%s", name);
	snprintf(t.lower, sizeof(t.lower), "%s", lower);
	return module_ioctl(O_RDWR, KVARENA_IOC_ARENA_SET_TIER, &t);
}

/* Wait up to 5 s for arena @name to have @cached cached frames. */
static bool cached_becomes(const char *name, uint32_t cached)
{
	for (int i = 0; i < 500; i++) {
		if (module_stat(name).nr_cached == cached)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * A prefix the arena dropped to its lower tier comes back through
 * kva_seq_attach_prefix(): LOOKUP counts it below, PROMOTE brings it up
 * (the agent copies), and the sequence reads it byte-exact.
 */
TEST_F(dev, a_prefix_in_the_lower_tier_comes_back_through_attach_prefix)
{
	/*
	 * The agent's copy up may take long on a slow kernel (the debug
	 * kernel's KASAN under TCG took more than the default second): this
	 * test is of what comes back, so it waits for as long as it takes.
	 */
	struct kva_open_opts o = {
		.mode = KVA_MODE_DEVICE, .name = self->name,
		.label = "reader", .transport = variant->transport,
		.promote_ms = 60000,
	};
	char lower[KVARENA_NAME_LEN];
	struct kva_arena *a;
	struct kva_seq *s;
	pid_t agent;
	int status;

	pid_name(lower, "pfxlo");
	ASSERT_EQ(0, create_arena(lower, KVA_BACKEND_HOST));
	/* Demote whatever is cached: keep every frame free. */
	ASSERT_EQ(0, set_tier(self->name, lower, NR));
	ASSERT_EQ(0, publish_and_exit(self->name, variant->transport, 23,
				      3 * TPF + 9));
	agent = tier_agent(self->name, lower);
	ASSERT_LT(0, agent);
	EXPECT_TRUE(cached_becomes(lower, 3));
	EXPECT_TRUE(cached_becomes(self->name, 0));

	ASSERT_EQ(0, kva_open(&o, &a));
	ASSERT_EQ(0, kva_seq_create(a, &self->g, 8 * TPF, &s));
	hooks_reset();
	ASSERT_EQ(3, kva_seq_attach_prefix(s, self->k, 4));
	EXPECT_EQ(1, hooks_count("dev.promote"));
	EXPECT_EQ(3 * TPF, s->tokens);
	EXPECT_EQ(0, check_tokens(s, 23, 0, 3 * TPF));
	EXPECT_EQ(3, module_stat(self->name).nr_held);
	kva_close(a);
	kill(agent, SIGKILL);
	ASSERT_EQ(agent, waitpid(agent, &status, 0));
	EXPECT_EQ(0, module_wait_clients(self->name, 0));
	EXPECT_EQ(0, module_wait_clients(lower, 0));
	/* The lower arena goes once it is no arena's tier. */
	EXPECT_EQ(-EBUSY, destroy_arena(lower));
	EXPECT_EQ(0, set_tier(self->name, "", 0));
	EXPECT_EQ(0, destroy_arena(lower));
}

/* Without promotions (KVA_OPEN_NO_PROMOTE) the run stops at the tier. */
TEST_F(dev, no_promote_leaves_the_lower_tier_alone)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_DEVICE, .name = self->name, .label = "np",
		.transport = variant->transport, .flags = KVA_OPEN_NO_PROMOTE,
	};
	char lower[KVARENA_NAME_LEN];
	struct kva_arena *a;
	struct kva_seq *s;
	pid_t agent;
	int status;

	pid_name(lower, "pfxlo");
	ASSERT_EQ(0, create_arena(lower, KVA_BACKEND_HOST));
	ASSERT_EQ(0, set_tier(self->name, lower, NR));
	ASSERT_EQ(0, publish_and_exit(self->name, variant->transport, 24,
				      2 * TPF));
	agent = tier_agent(self->name, lower);
	ASSERT_LT(0, agent);
	EXPECT_TRUE(cached_becomes(lower, 2));
	ASSERT_EQ(0, kva_open(&o, &a));
	ASSERT_EQ(0, kva_seq_create(a, &self->g, 8 * TPF, &s));
	hooks_reset();
	EXPECT_EQ(0, kva_seq_attach_prefix(s, self->k, 4));
	EXPECT_EQ(0, hooks_count("dev.promote"));
	kva_close(a);
	kill(agent, SIGKILL);
	ASSERT_EQ(agent, waitpid(agent, &status, 0));
	EXPECT_EQ(0, module_wait_clients(self->name, 0));
	EXPECT_EQ(0, set_tier(self->name, "", 0));
	EXPECT_EQ(0, destroy_arena(lower));
}

#ifdef KVA_TEST_CUDA
TEST_F(dev, a_private_handle_shares_no_prefix_either_way)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_DEVICE, .name = self->name,
		.label = "private", .transport = variant->transport,
		.flags = KVA_OPEN_PRIVATE,
	};
	struct kva_arena_info info;
	struct kva_arena *a, *b;
	struct kva_seq *s, *t;

	ASSERT_EQ(0, publish_and_exit(self->name, variant->transport, 31,
				      2 * TPF));
	ASSERT_EQ(0, kva_open(&o, &a));
	ASSERT_EQ(0, kva_arena_info(a, &info));
	EXPECT_EQ(KVARENA_DOMAIN_KIND_PRIVATE, KVARENA_DOMAIN_KIND(info.domain));
	ASSERT_EQ(0, kva_seq_create(a, &self->g, 8 * TPF, &s));
	/* The uid's prefix is not there for it... */
	EXPECT_EQ(0, kva_seq_attach_prefix(s, self->k, 4));
	/* ...and what it publishes is not there for the uid's other clients. */
	ASSERT_EQ(0, kva_seq_grow(s, 2 * TPF));
	fill_tokens(s, 32, 0, 2 * TPF);
	ASSERT_EQ(2, kva_seq_publish(s, self->k, 2));
	ASSERT_EQ(0, open_device(&b, self->name, variant->transport, "reader"));
	ASSERT_EQ(0, kva_arena_info(b, &info));
	EXPECT_EQ(KVARENA_DOMAIN(KVARENA_DOMAIN_KIND_UID, 0), info.domain);
	ASSERT_EQ(0, kva_seq_create(b, &self->g, 8 * TPF, &t));
	ASSERT_EQ(2, kva_seq_attach_prefix(t, self->k, 4));
	EXPECT_EQ(0, check_tokens(t, 31, 0, 2 * TPF));
	kva_close(b);
	kva_close(a);
}

TEST(cuda_prefix_of_an_exited_process_reads_back_byte_exact)
{
	struct kva_geometry g = small_geometry(FS);
	char name[KVARENA_NAME_LEN];
	struct kva_arena *a;
	struct kva_key k[4];
	struct kva_seq *s;

	cuda_double_set_granularity(FS);
	pid_name(name, "pfxcu");
	ASSERT_EQ(0, create_arena(name, KVA_BACKEND_CUDA));
	ASSERT_EQ(3, prompt_keys(&g, 3 * TPF, k, 4));
	ASSERT_EQ(0, publish_and_exit(name, KVA_TRANSPORT_IOCTL, 29,
				      3 * TPF));
	EXPECT_EQ(3, module_stat(name).nr_cached);
	ASSERT_EQ(0, open_device(&a, name, KVA_TRANSPORT_AUTO, "gpu"));
	ASSERT_EQ(0, kva_seq_create(a, &g, 8 * TPF, &s));
	cuda_double_reset();
	ASSERT_EQ(3, kva_seq_attach_prefix(s, k, 3));
	EXPECT_EQ(3, cuda_double_count("cuMemImportFromShareableHandle"));
	EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READ, cuda_double_access(s->base));
	EXPECT_EQ(0, check_tokens(s, 29, 0, 3 * TPF));
	ASSERT_EQ(0, kva_seq_shrink(s, 3 * TPF - 1));
	ASSERT_EQ(0, kva_seq_grow(s, 1));
	EXPECT_EQ(1, cuda_double_count("cuMemcpyDtoDAsync_v2"));
	EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
		  cuda_double_access(s->base + 2 * FS));
	EXPECT_EQ(0, check_tokens(s, 29, 0, 3 * TPF));
	kva_close(a);
	EXPECT_EQ(0, destroy_arena(name));
}
#endif

/*
 * A file arena (KVARENA_MEM_FILE) is a lower tier's frames on a disk: no
 * sequence maps them, and kva_open() says so rather than attach.
 */
TEST(kva_open_refuses_a_file_arena)
{
	char name[KVARENA_NAME_LEN], path[64];
	struct kvarena_arena_create c = {
		.frame_size = FS, .nr_frames = 2,
		.mem_kind = KVARENA_MEM_FILE,
	};
	struct kvarena_set_backing b = { .nr_frames = 2 };
	struct kva_open_opts o = { .mode = KVA_MODE_DEVICE, .name = name };
	struct kva_arena *a = NULL;
	int fd;

	pid_name(name, "pfile");
	snprintf(path, sizeof(path), "/tmp/kvarena-pfile-%d", getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, 2 * FS));
	snprintf(c.name, sizeof(c.name), "%s", name);
	ASSERT_EQ(0, module_ioctl(O_RDWR, KVARENA_IOC_ARENA_CREATE, &c));
	snprintf(b.name, sizeof(b.name), "%s", name);
	b.fd = fd;
	ASSERT_EQ(0, module_ioctl(O_RDWR, KVARENA_IOC_ARENA_SET_BACKING, &b));
	close(fd);
	EXPECT_EQ(-EOPNOTSUPP, kva_open(&o, &a));
	EXPECT_EQ(NULL, a);
	EXPECT_EQ(0, module_wait_clients(name, 0));
	EXPECT_EQ(0, destroy_arena(name));
	unlink(path);
}

TEST_HARNESS_MAIN
