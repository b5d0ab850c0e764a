// SPDX-License-Identifier: GPL-2.0
/*
 * Tenants of one arena: a victim (uid 1001) and an attacker (uid 65534)
 * on a host arena that root made with the default policy, as a hostile
 * neighbour would try it.  Frames reach another uid cleared, keys and
 * hits stay within a uid's cache domain, and an unprivileged viewer sees
 * neither another uid's events nor its counters move.  Private, named and
 * arena-wide domains do what they say.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kva_test.h"
#include "kva_tenant.h"

#define NR	8
#define FSIZE	(64u << 10)
#define VICTIM	1001
#define NOBODY	65534

static const char secret[] = "my SSN is 078-05-1120";

/* A client of arena "tenancy", or exit. */
static int attach(const char *label, __u32 flags, __u64 domain,
		  struct kvarena_attach *out)
{
	struct kvarena_attach a = { .flags = flags, .domain = domain };
	int fd = kva_open(O_RDWR);

	CHECK_EQ(1, fd >= 0);
	strcpy(a.name, "tenancy");
	snprintf(a.label, sizeof(a.label), "%s", label);
	CHECK_EQ(0, kva_ioctl(fd, KVARENA_IOC_ATTACH, &a));
	if (out)
		*out = a;
	return fd;
}

static unsigned char *map(int fd, __u64 h, int prot)
{
	struct kvarena_frame_fd ff;
	void *p;

	CHECK_EQ(0, kva_frame_fd(fd, h, &ff));
	p = mmap(NULL, ff.size, prot, MAP_SHARED, ff.fd, ff.offset);
	close(ff.fd);
	CHECK_EQ(1, p != MAP_FAILED);
	return p;
}

/* Every frame of @h filled with 0x5a and the secret at its start. */
static void write_secrets(int fd, const __u64 *h, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		unsigned char *p = map(fd, h[i], PROT_READ | PROT_WRITE);

		memset(p, 0x5a, FSIZE);
		memcpy(p, secret, sizeof(secret));
		munmap(p, FSIZE);
	}
}

FIXTURE(ten) {
	int admin;
	mode_t mode;
};

FIXTURE_SETUP(ten)
{
	struct stat st;
	int mfd;

	self->admin = kva_open(O_RDWR);
	ASSERT_LE(0, self->admin);
	kva_destroy(self->admin, "tenancy");
	mfd = memfd_create("tenancy", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	ASSERT_LE(0, mfd);
	ASSERT_EQ(0, ftruncate(mfd, NR * FSIZE));
	ASSERT_EQ(0, fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK));
	ASSERT_EQ(0, kva_create_flags(self->admin, "tenancy", NR, FSIZE, 0,
				      0));
	ASSERT_EQ(0, kva_set_backing(self->admin, "tenancy", 0, NR, mfd, 0));
	close(mfd);
	ASSERT_EQ(0, stat(KVARENA_DEVICE, &st));
	self->mode = st.st_mode & 07777;
	ASSERT_EQ(0, chmod(KVARENA_DEVICE, 0666));
}

FIXTURE_TEARDOWN(ten)
{
	chmod(KVARENA_DEVICE, self->mode);
	EXPECT_EQ(0, kva_wait_no_clients(self->admin, "tenancy"));
	EXPECT_EQ(0, kva_destroy(self->admin, "tenancy"));
	close(self->admin);
}

/* ---- frames ------------------------------------------------------------- */

/* Writes the secret into every frame; frees half, dies holding the rest. */
static int victim_dies_holding(void *arg)
{
	int fd = attach("victim", 0, 0, NULL);
	__u64 h[NR];

	(void)arg;
	CHECK_EQ(NR, kva_alloc(fd, h, NR, 0));
	write_secrets(fd, h, NR);
	CHECK_EQ(0, kva_free(fd, h, NR / 2));
	raise(SIGKILL);
	return 99;
}

/* Takes the whole arena: every byte must be zero. */
static int attacker_reads_everything(void *arg)
{
	int fd = attach("attacker", 0, 0, NULL);
	__u64 h[NR];
	int i;

	(void)arg;
	CHECK_EQ(NR, kva_alloc(fd, h, NR, 0));
	for (i = 0; i < NR; i++) {
		unsigned char *p = map(fd, h[i], PROT_READ | PROT_WRITE);

		CHECK_EQ(1, all_zero(p, FSIZE));
		strcpy((char *)p, "ATTACKER-WROTE-THIS");
		munmap(p, FSIZE);
	}
	return 0;
}

TEST_F(ten, frames_freed_or_left_by_one_uid_reach_another_cleared)
{
	struct kvarena_stat s;

	EXPECT_EQ(1000 + SIGKILL, as_uid(VICTIM, victim_dies_holding, NULL));
	ASSERT_EQ(0, kva_wait_no_clients(self->admin, "tenancy"));
	ASSERT_EQ(0, kva_stat(self->admin, "tenancy", &s));
	EXPECT_EQ(NR, s.nr_free);
	EXPECT_EQ(0, as_uid(NOBODY, attacker_reads_everything, NULL));
	ASSERT_EQ(0, kva_stat(self->admin, "tenancy", &s));
	/* The owner sees the clearing; every frame was cleared once at least. */
	EXPECT_LE(NR, s.frames_cleared);
	EXPECT_EQ(0, s.domain);
}

/* The victim again: its own frames come back as they were. */
static int victim_gets_its_own_back(void *arg)
{
	int fd = attach("victim", 0, 0, NULL);
	__u64 h[NR];
	int i, kept = 0;

	(void)arg;
	CHECK_EQ(NR, kva_alloc(fd, h, NR, 0));
	write_secrets(fd, h, NR);
	CHECK_EQ(0, kva_free(fd, h, NR));
	CHECK_EQ(NR, kva_alloc(fd, h, NR, 0));
	for (i = 0; i < NR; i++) {
		unsigned char *p = map(fd, h[i], PROT_READ);

		kept += !memcmp(p, secret, sizeof(secret));
		munmap(p, FSIZE);
	}
	/* The clearing worker keeps one clean frame in stock here. */
	CHECK_EQ(1, kept >= NR - 1);
	return 0;
}

TEST_F(ten, reuse_within_a_uid_needs_no_clearing)
{
	EXPECT_EQ(0, as_uid(VICTIM, victim_gets_its_own_back, NULL));
}

/* ---- keys ------------------------------------------------------------------ */

static int victim_publishes(void *arg)
{
	int fd = attach("victim", 0, 0, NULL);
	__u64 h[2];
	int i;

	(void)arg;
	CHECK_EQ(2, kva_alloc(fd, h, 2, 0));
	for (i = 0; i < 2; i++) {
		unsigned char *p = map(fd, h[i], PROT_READ | PROT_WRITE);

		strcpy((char *)p, "victim KV");
		munmap(p, FSIZE);
	}
	CHECK_EQ(2, publish(fd, 5, h, 2));
	return 0;	/* the frames stay cached */
}

static int attacker_guesses_the_key(void *arg)
{
	struct kvarena_clients c = { .name = "tenancy" };
	struct kvarena_attach at;
	struct kvarena_stat s;
	int fd = attach("attacker", 0, 0, &at);
	__u64 h[2], got[2];

	(void)arg;
	CHECK_EQ(KVARENA_DOMAIN(KVARENA_DOMAIN_KIND_UID, NOBODY), at.domain);
	/* The victim's key is not there for it: no hit, no frame. */
	CHECK_EQ(0, lookup(fd, 5, 0, 2, got));
	CHECK_EQ(0, kva_stat(fd, "tenancy", &s));
	CHECK_EQ(at.domain, s.domain);
	CHECK_EQ(0, s.cache_hits);
	CHECK_EQ(2, s.cache_misses);
	CHECK_EQ(0, s.nr_published);
	/* Its own publication of the same key is an entry of its own. */
	CHECK_EQ(2, kva_alloc(fd, h, 2, 0));
	CHECK_EQ(2, publish(fd, 5, h, 2));
	CHECK_EQ(2, lookup(fd, 5, 0, 2, got));
	CHECK_EQ(h[0], got[0]);
	/* And the table shows it alone. */
	CHECK_EQ(0, kva_ioctl(fd, KVARENA_IOC_CLIENTS, &c));
	CHECK_EQ(1, c.nr_clients);
	return 0;
}

static int victim_finds_its_own(void *arg)
{
	int fd = attach("victim-2", 0, 0, NULL);
	__u64 got[2];
	unsigned char *p;

	(void)arg;
	CHECK_EQ(2, lookup(fd, 5, 0, 2, got));
	p = map(fd, got[0], PROT_READ);
	CHECK_EQ(0, strcmp((char *)p, "victim KV"));
	return 0;
}

TEST_F(ten, a_key_is_found_only_within_the_uid_that_published_it)
{
	struct kvarena_stat s;

	ASSERT_EQ(0, as_uid(VICTIM, victim_publishes, NULL));
	EXPECT_EQ(0, as_uid(NOBODY, attacker_guesses_the_key, NULL));
	EXPECT_EQ(0, as_uid(VICTIM, victim_finds_its_own, NULL));
	ASSERT_EQ(0, kva_stat(self->admin, "tenancy", &s));
	EXPECT_EQ(4, s.nr_published);
	EXPECT_EQ(4, s.cache_hits);
}

/* ---- what a viewer sees ----------------------------------------------------- */

struct watch {
	int ready[2];
	int go[2];
};

/* An unattached viewer as uid 65534: nothing of the victim's moves. */
static int attacker_watches(void *arg)
{
	struct watch *w = arg;
	struct kvarena_events_fd e = { .name = "tenancy",
				       .flags = KVARENA_EVENTS_NONBLOCK };
	struct kvarena_clients c = { .name = "tenancy" };
	struct kvarena_stat before, after;
	int fd = kva_open(O_RDONLY);
	char buf[4096], b;

	CHECK_EQ(0, kva_ioctl(fd, KVARENA_IOC_EVENTS_FD, &e));
	CHECK_EQ(0, kva_stat(fd, "tenancy", &before));
	CHECK_EQ(1, write(w->ready[1], "r", 1));
	CHECK_EQ(1, read(w->go[0], &b, 1));
	CHECK_EQ(0, kva_stat(fd, "tenancy", &after));
	CHECK_EQ(KVARENA_DOMAIN(KVARENA_DOMAIN_KIND_UID, NOBODY), after.domain);
	CHECK_EQ(before.cache_hits, after.cache_hits);
	CHECK_EQ(before.cache_misses, after.cache_misses);
	CHECK_EQ(before.nr_published, after.nr_published);
	CHECK_EQ(before.dom_cached, after.dom_cached);
	CHECK_EQ(before.alloc_calls, after.alloc_calls);
	CHECK_EQ(before.free_calls, after.free_calls);
	CHECK_EQ(before.frames_allocated, after.frames_allocated);
	CHECK_EQ(before.frames_freed, after.frames_freed);
	CHECK_EQ(0, kva_ioctl(fd, KVARENA_IOC_CLIENTS, &c));
	CHECK_EQ(0, c.nr_clients);
	/* Not one event: no STORED, no REMOVED, no token id. */
	CHECK_EQ(-1, read(e.fd, buf, sizeof(buf)));
	CHECK_EQ(EAGAIN, errno);
	return 0;
}

static int victim_works(void *arg)
{
	__u32 tokens[2] = { 4242, 4343 };
	struct kvarena_prefix_entry ent[2];
	struct kvarena_prefix p = {
		.entries = (__u64)(unsigned long)ent, .count = 2,
		.flags = KVARENA_PUBLISH_TOKENS, .tokens_per_entry = 1,
		.tokens = (__u64)(unsigned long)tokens,
	};
	int fd = attach("victim", 0, 0, NULL);
	__u64 h[NR], got[2];

	(void)arg;
	CHECK_EQ(NR, kva_alloc(fd, h, NR, 0));
	CHECK_EQ(0, kva_set_usage(fd, 100, FSIZE));
	chain(ent, 2, 8, 0, h);
	CHECK_EQ(0, kva_ioctl(fd, KVARENA_IOC_PUBLISH, &p));
	CHECK_EQ(2, lookup(fd, 8, 0, 2, got));
	CHECK_EQ(0, lookup(fd, 9, 0, 1, got));
	CHECK_EQ(0, kva_free(fd, h, NR));
	/* A reclaim: a REMOVED event of its domain. */
	CHECK_EQ(NR, kva_alloc(fd, h, NR, 0));
	return 0;
}

TEST_F(ten, another_uids_events_and_counters_stay_out_of_view)
{
	struct kvarena_events_fd e = { .name = "tenancy",
				       .flags = KVARENA_EVENTS_NONBLOCK };
	struct kvarena_event *ev;
	struct watch w;
	char b, buf[4096];
	ssize_t n;
	pid_t pid;

	ASSERT_EQ(0, kva_ioctl(self->admin, KVARENA_IOC_EVENTS_FD, &e));
	ASSERT_EQ(0, pipe(w.ready));
	ASSERT_EQ(0, pipe(w.go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		drop_to(NOBODY);
		_exit(attacker_watches(&w));
	}
	ASSERT_EQ(1, read(w.ready[0], &b, 1));
	EXPECT_EQ(0, as_uid(VICTIM, victim_works, NULL));
	ASSERT_EQ(1, write(w.go[1], "g", 1));
	EXPECT_EQ(0, reap(pid));
	/* The owner (root) sees them, with their domain and token ids. */
	n = read(e.fd, buf, sizeof(buf));
	ASSERT_LT(0, n);
	ev = (struct kvarena_event *)buf;
	EXPECT_EQ(KVARENA_EVENT_STORED, ev->type);
	EXPECT_EQ(KVARENA_DOMAIN(KVARENA_DOMAIN_KIND_UID, VICTIM), ev->domain);
	EXPECT_EQ(1, ev->nr_tokens);
	EXPECT_EQ(4242, *(__u32 *)(ev + 1));
	close(e.fd);
}

/*
 * A PUBLISH of a chain: one STORED event a frame, in chain order, each
 * but the first naming the key before it (KVARENA_EVENT_PARENT).
 */
TEST_F(ten, a_chains_stored_events_name_each_frames_parent)
{
	struct kvarena_events_fd e = { .name = "tenancy",
				       .flags = KVARENA_EVENTS_NONBLOCK };
	struct kvarena_event ev[3];
	__u8 key[KVARENA_KEY_LEN];
	__u64 h[3];
	ssize_t n, off = 0;
	char buf[4096];
	int fd = attach("chain", 0, 0, NULL);

	ASSERT_EQ(0, kva_ioctl(self->admin, KVARENA_IOC_EVENTS_FD, &e));
	ASSERT_EQ(3, kva_alloc(fd, h, 3, 0));
	ASSERT_EQ(3, publish(fd, 0xc4a1, h, 3));
	n = read(e.fd, buf, sizeof(buf));
	ASSERT_EQ((ssize_t)(3 * sizeof(ev[0])), n);
	for (int i = 0; i < 3; i++, off += ev[i - 1].size) {
		memcpy(&ev[i], buf + off, sizeof(ev[i]));
		EXPECT_EQ(KVARENA_EVENT_STORED, ev[i].type);
		set_key(key, 0xc4a1, i);
		EXPECT_EQ(0, memcmp(key, ev[i].key, sizeof(key)));
		EXPECT_EQ(i ? KVARENA_EVENT_PARENT : 0, ev[i].flags);
		if (i) {
			set_key(key, 0xc4a1, i - 1);
			EXPECT_EQ(0, memcmp(key, ev[i].parent, sizeof(key)));
		}
	}
	EXPECT_EQ(0, kva_free(fd, h, 3));
	close(e.fd);
	close(fd);
}

/* ---- private, named and arena-wide domains ---------------------------------- */

static int nobody_names_a_domain(void *arg)
{
	struct kvarena_attach a = {
		.name = "tenancy", .flags = KVARENA_ATTACH_DOMAIN,
		.domain = KVARENA_DOMAIN(KVARENA_DOMAIN_KIND_UID, 0),
	};
	int fd = kva_open(O_RDWR);

	(void)arg;
	/* Only the owner or an admin places a client in a domain. */
	CHECK_EQ(-EPERM, kva_ioctl(fd, KVARENA_IOC_ATTACH, &a));
	/* Narrowing itself is anyone's right. */
	a.flags = KVARENA_ATTACH_PRIVATE;
	a.domain = 0;
	CHECK_EQ(0, kva_ioctl(fd, KVARENA_IOC_ATTACH, &a));
	CHECK_EQ(KVARENA_DOMAIN_KIND_PRIVATE, KVARENA_DOMAIN_KIND(a.domain));
	return 0;
}

TEST_F(ten, private_and_named_domains_and_who_may_give_them)
{
	struct kvarena_attach a = { .name = "tenancy" }, b;
	__u64 h[2], got[2];
	int pub, priv, n1, n2;

	pub = attach("root", 0, 0, NULL);
	ASSERT_EQ(2, kva_alloc(pub, h, 2, 0));
	ASSERT_EQ(2, publish(pub, 9, h, 2));
	priv = attach("private", KVARENA_ATTACH_PRIVATE, 0, &b);
	EXPECT_EQ(KVARENA_DOMAIN_KIND_PRIVATE, KVARENA_DOMAIN_KIND(b.domain));
	EXPECT_EQ(0, lookup(priv, 9, 0, 2, got));
	n1 = attach("named-1", KVARENA_ATTACH_DOMAIN,
		    KVARENA_DOMAIN(KVARENA_DOMAIN_KIND_NAMED, 7), NULL);
	n2 = attach("named-2", KVARENA_ATTACH_DOMAIN,
		    KVARENA_DOMAIN(KVARENA_DOMAIN_KIND_NAMED, 7), &b);
	EXPECT_EQ(KVARENA_DOMAIN(KVARENA_DOMAIN_KIND_NAMED, 7), b.domain);
	EXPECT_EQ(0, lookup(n1, 9, 0, 2, got));
	ASSERT_EQ(2, kva_alloc(n1, h, 2, 0));
	ASSERT_EQ(2, publish(n1, 10, h, 2));
	EXPECT_EQ(2, lookup(n2, 10, 0, 2, got));
	EXPECT_EQ(0, lookup(pub, 10, 0, 2, got));
	EXPECT_EQ(0, as_uid(NOBODY, nobody_names_a_domain, NULL));

	/* Bad requests change nothing. */
	a.flags = KVARENA_ATTACH_PRIVATE | KVARENA_ATTACH_DOMAIN;
	EXPECT_EQ(-EINVAL, kva_ioctl(kva_open(O_RDWR), KVARENA_IOC_ATTACH, &a));
	a.flags = KVARENA_ATTACH_DOMAIN;
	a.domain = KVARENA_DOMAIN(KVARENA_DOMAIN_KIND_PRIVATE, 1);
	EXPECT_EQ(-EINVAL, kva_ioctl(kva_open(O_RDWR), KVARENA_IOC_ATTACH, &a));
	a.flags = 0;
	EXPECT_EQ(-EINVAL, kva_ioctl(kva_open(O_RDWR), KVARENA_IOC_ATTACH, &a));
	close(pub);
	close(priv);
	close(n1);
	close(n2);
}

static int nobody_shares_the_arena_domain(void *arg)
{
	struct kvarena_attach at;
	int fd = attach("nobody", 0, 0, &at);
	__u64 got[2];

	(void)arg;
	CHECK_EQ(KVARENA_DOMAIN(KVARENA_DOMAIN_KIND_ARENA, 0), at.domain);
	CHECK_EQ(2, lookup(fd, 12, 0, 2, got));
	return 0;
}

TEST_F(ten, one_domain_for_the_whole_arena_is_an_explicit_opt_in)
{
	struct kvarena_arena_policy p = { .name = "tenancy", .mode = 0666,
					  .cache_domains = KVARENA_DOMAINS_ARENA };
	struct kvarena_stat s;
	__u64 h[2];
	int fd;

	ASSERT_EQ(0, kva_ioctl(self->admin, KVARENA_IOC_ARENA_SET_POLICY, &p));
	ASSERT_EQ(0, kva_stat(self->admin, "tenancy", &s));
	EXPECT_EQ(KVARENA_DOMAINS_ARENA, s.cache_domains);
	fd = attach("root", 0, 0, NULL);
	ASSERT_EQ(2, kva_alloc(fd, h, 2, 0));
	ASSERT_EQ(2, publish(fd, 12, h, 2));
	EXPECT_EQ(0, as_uid(NOBODY, nobody_shares_the_arena_domain, NULL));
	close(fd);
	p.cache_domains = KVARENA_DOMAINS_ARENA + 1;
	EXPECT_EQ(-EINVAL, kva_ioctl(self->admin, KVARENA_IOC_ARENA_SET_POLICY,
				     &p));
}

/* ---- clearing always ---------------------------------------------------------- */

TEST(clear_always_clears_between_two_holders_of_one_uid)
{
	struct kvarena_arena_create c = { .name = "tenancy-ca",
					  .frame_size = FSIZE, .nr_frames = 2,
					  .flags = KVARENA_CREATE_CLEAR_ALWAYS };
	int admin = kva_open(O_RDWR), mfd, fd;
	unsigned char *p;
	__u64 h[2];

	ASSERT_LE(0, admin);
	kva_destroy(admin, c.name);
	mfd = memfd_create("tenancy", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	ASSERT_EQ(0, ftruncate(mfd, 2 * FSIZE));
	ASSERT_EQ(0, fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK));
	ASSERT_EQ(0, kva_ioctl(admin, KVARENA_IOC_ARENA_CREATE, &c));
	ASSERT_EQ(0, kva_set_backing(admin, c.name, 0, 2, mfd, 0));
	close(mfd);
	fd = kva_open(O_RDWR);
	ASSERT_EQ(0, kva_attach(fd, c.name, "one", 0, 0, NULL));
	ASSERT_EQ(2, kva_alloc(fd, h, 2, 0));
	p = map(fd, h[0], PROT_READ | PROT_WRITE);
	memcpy(p, secret, sizeof(secret));
	munmap(p, FSIZE);
	p = map(fd, h[1], PROT_READ | PROT_WRITE);
	memcpy(p, secret, sizeof(secret));
	munmap(p, FSIZE);
	ASSERT_EQ(0, kva_free(fd, h, 2));
	ASSERT_EQ(2, kva_alloc(fd, h, 2, 0));
	p = map(fd, h[0], PROT_READ);
	EXPECT_TRUE(all_zero(p, FSIZE));
	munmap(p, FSIZE);
	p = map(fd, h[1], PROT_READ);
	EXPECT_TRUE(all_zero(p, FSIZE));
	munmap(p, FSIZE);
	close(fd);
	ASSERT_EQ(0, kva_wait_no_clients(admin, c.name));
	EXPECT_EQ(0, kva_destroy(admin, c.name));
	close(admin);
}

TEST_HARNESS_MAIN
