// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl end to end, inside the VM with kvarena.ko loaded: arenas made
 * by `kvarenactl create`, clients that attach, allocate and report usage
 * with known numbers, and the tool's stat, clients, top, metrics and --json
 * output compared with exactly what those clients did; two arenas linked
 * with tier, and agent copying frames down and up, byte for byte, to
 * host memory and to a file arena's file; a gang over two arenas, with an
 * engine's leader and its ranks, in every view, and what it and its
 * members refuse.  Then
 * the errors: unknown arenas, no permission, no capability, no module, no
 * libcuda, a create that fails half-way and leaves nothing, and what tier
 * and agent refuse.
 *
 * The statically linked kvarenactl is built into this program (KVACTL_BIN,
 * set by the build) and run from a memfd, so the VM needs this one file.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>

#include "kselftest_harness.h"
#include "kva_test.h"

#ifndef KVACTL_BIN
#error "KVACTL_BIN: the path of the static kvarenactl to build in"
#endif

__asm__(".section .rodata\n"
	".balign 16\n"
	"kvactl_bin:\n"
	".incbin \"" KVACTL_BIN "\"\n"
	"kvactl_bin_end:\n"
	".previous\n");
extern const char kvactl_bin[], kvactl_bin_end[];

#ifndef MFD_EXEC
#define MFD_EXEC	0x0010u		/* Linux 6.3 */
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL	0x0008u
#endif

/* ---- running kvarenactl ------------------------------------------------ */

enum who {
	ROOT,		/* as the test runs */
	NOCAP,		/* root without CAP_SYS_ADMIN */
	NOBODY,		/* uid and gid 65534, no groups */
	NOMODULE,	/* empty /dev and /sys, as if kvarena.ko were not loaded */
	NEWPIDNS,	/* in a pid namespace of its own, with its own /proc */
};

struct run {
	int rc;			/* exit status, or 128 + signal */
	char out[1 << 16];
	char err[4096];
};

/* memfd_create() with @extra flags where the kernel knows them. */
static int memfd(const char *name, unsigned int extra)
{
	int fd = memfd_create(name, MFD_CLOEXEC | extra);

	if (fd < 0 && errno == EINVAL)
		fd = memfd_create(name, MFD_CLOEXEC);
	return fd;
}

/* The built-in kvarenactl as an executable memfd, made once per process. */
static int kvactl_exe(void)
{
	static int fd = -1;
	const char *p = kvactl_bin;

	if (fd >= 0)
		return fd;
	fd = memfd("kvarenactl", MFD_EXEC);
	if (fd < 0)
		return -1;
	while (p < kvactl_bin_end) {
		ssize_t n = write(fd, p, (size_t)(kvactl_bin_end - p));

		if (n <= 0) {
			close(fd);
			return fd = -1;
		}
		p += n;
	}
	return fd;
}

static void slurp(int fd, char *buf, size_t size)
{
	ssize_t n = pread(fd, buf, size - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	close(fd);
}

static void become(enum who who)
{
	switch (who) {
	case ROOT:
		break;
	case NOCAP:
		if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0))
			_exit(120);
		break;
	case NOBODY:
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(121);
		break;
	case NOMODULE:
		if (unshare(CLONE_NEWNS) ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("tmpfs", "/dev", "tmpfs", 0, NULL) ||
		    mount("tmpfs", "/sys", "tmpfs", 0, NULL))
			_exit(122);
		break;
	case NEWPIDNS: {
		/* The namespace's first process runs the tool; this one waits. */
		pid_t pid;
		int status;

		if (unshare(CLONE_NEWPID | CLONE_NEWNS))
			_exit(125);
		pid = fork();
		if (pid < 0)
			_exit(126);
		if (pid) {
			if (waitpid(pid, &status, 0) != pid)
				_exit(127);
			_exit(WIFEXITED(status) ? WEXITSTATUS(status) :
			      128 + WTERMSIG(status));
		}
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("proc", "/proc", "proc", 0, NULL))
			_exit(122);
		break;
	}
	}
}

/* Run kvarenactl @argv as @who with environment @env (NULL: ours). */
static void run_as(struct run *r, enum who who, char *const env[],
		   const char *const argv[])
{
	int exe = kvactl_exe(), out = memfd("out", MFD_NOEXEC_SEAL);
	int err = memfd("err", MFD_NOEXEC_SEAL), status;
	pid_t pid;

	r->rc = -1;
	r->out[0] = r->err[0] = '\0';
	if (exe < 0 || out < 0 || err < 0)
		return;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 ||
		    dup2(err, 2) < 0)
			_exit(123);
		become(who);
		fexecve(exe, (char *const *)argv, env ? env : environ);
		_exit(124);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return;
	r->rc = WIFEXITED(status) ? WEXITSTATUS(status) :
		128 + WTERMSIG(status);
	slurp(out, r->out, sizeof(r->out));
	slurp(err, r->err, sizeof(r->err));
}

#define ARGV(...) ((const char *const[]){ "kvarenactl", __VA_ARGS__, NULL })
#define CTL(r, ...) run_as(r, ROOT, NULL, ARGV(__VA_ARGS__))
#define CTL_AS(r, who, ...) run_as(r, who, NULL, ARGV(__VA_ARGS__))

/* @s starts with @prefix. */
static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* @s ends with @suffix. */
static bool ends(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* "text with %d" into a static buffer, for expected output. */
static const char *fmt(const char *f, ...)
{
	static char bufs[4][1 << 16];
	static int i;
	char *b = bufs[i++ % 4];
	va_list ap;

	va_start(ap, f);
	vsnprintf(b, sizeof(bufs[0]), f, ap);
	va_end(ap);
	return b;
}

/* ---- clients: processes that attach and do what they are told ---------------- */

struct client {
	pid_t pid;
	int cmd;		/* commands to it */
	int reply;		/* results from it */
	__u32 id;
};

struct client_cmd {
	char op;		/* 'a' alloc, 'f' free, 'u' usage,
				 * 'p' publish, 'l' lookup */
	__u32 n;
	__u64 tokens, bytes;	/* 'p', 'l': tokens is the chain's tag */
};

/* Keys (tag, 0), (tag, 1), ... for the prefix commands. */
static void client_chain(struct kvarena_prefix_entry *e, __u32 n, __u64 tag,
			 const __u64 *h)
{
	__u32 i;

	memset(e, 0, n * sizeof(*e));
	for (i = 0; i < n; i++) {
		e[i].key[0] = 1;
		memcpy(e[i].key + 1, &tag, sizeof(tag));
		e[i].key[9] = (__u8)i;
		if (h)
			e[i].handle = h[i];
	}
}

/* PUBLISH the last @n of @h, or LOOKUP @n keys into @h; nr_done or -errno. */
static int client_prefix(int fd, char op, __u64 *h, int *nh, __u32 n,
			 __u64 tag)
{
	struct kvarena_prefix_entry e[16];
	struct kvarena_prefix p = { .entries = (__u64)(unsigned long)e,
				    .count = n };
	__u32 i;
	int rc;

	if (n > 16 || (op == 'p' && n > (__u32)*nh))
		return -EINVAL;
	client_chain(e, n, tag, op == 'p' ? h + *nh - n : NULL);
	rc = kva_ioctl(fd, op == 'p' ? KVARENA_IOC_PUBLISH :
		       KVARENA_IOC_LOOKUP, &p);
	if (rc)
		return rc;
	for (i = 0; op == 'l' && i < p.nr_done; i++)
		if (!(e[i].flags & KVARENA_PREFIX_HELD) && *nh < 64)
			h[(*nh)++] = e[i].handle;
	return (int)p.nr_done;
}

static void client_main(int cmd, int reply, const char *arena,
			const char *label, __u32 min, __u32 max)
{
	struct kvarena_attach at = { 0 };
	struct client_cmd c;
	__u64 h[64];
	int nh = 0, fd, rc;

	/*
	 * Other clients' command pipes came along with fork(): close them,
	 * or those clients would never see their end of file.
	 */
	for (fd = 3; fd < 1024; fd++)
		if (fd != cmd && fd != reply)
			close(fd);
	fd = kva_open(O_RDWR);
	rc = fd < 0 ? -errno : kva_attach(fd, arena, label, min, max, &at);
	if (write(reply, &rc, sizeof(rc)) != sizeof(rc) ||
	    write(reply, &at.client_id, sizeof(at.client_id)) !=
	    sizeof(at.client_id) || rc)
		_exit(1);
	while (read(cmd, &c, sizeof(c)) == sizeof(c)) {
		rc = -EINVAL;
		if (c.op == 'a' && nh + c.n <= 64) {
			rc = kva_alloc(fd, h + nh, c.n, 0);
			if (rc > 0)
				nh += rc;
		} else if (c.op == 'f' && c.n <= (__u32)nh) {
			rc = kva_free(fd, h + nh - c.n, c.n);
			if (!rc)
				nh -= c.n;
		} else if (c.op == 'u') {
			rc = kva_set_usage(fd, c.tokens, c.bytes);
		} else if (c.op == 'p' || c.op == 'l') {
			rc = client_prefix(fd, c.op, h, &nh, c.n, c.tokens);
		}
		if (write(reply, &rc, sizeof(rc)) != sizeof(rc))
			_exit(1);
	}
	_exit(0);
}

/* Start a client of @arena; 0 or the attach error. */
static int client_start(struct client *c, const char *arena,
			const char *label, __u32 min, __u32 max)
{
	int to[2], from[2], rc = -EIO;

	if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC))
		return -errno;
	c->pid = fork();
	if (c->pid == 0) {
		close(to[1]);
		close(from[0]);
		client_main(to[0], from[1], arena, label, min, max);
	}
	close(to[0]);
	close(from[1]);
	c->cmd = to[1];
	c->reply = from[0];
	if (read(c->reply, &rc, sizeof(rc)) != sizeof(rc) ||
	    read(c->reply, &c->id, sizeof(c->id)) != sizeof(c->id))
		return -EIO;
	return rc;
}

/* One command; what the ioctl returned. */
static int client_do(struct client *c, char op, __u32 n, __u64 tokens,
		     __u64 bytes)
{
	struct client_cmd cmd = { .op = op, .n = n, .tokens = tokens,
				  .bytes = bytes };
	int rc;

	if (write(c->cmd, &cmd, sizeof(cmd)) != sizeof(cmd) ||
	    read(c->reply, &rc, sizeof(rc)) != sizeof(rc))
		return -EIO;
	return rc;
}

/* Let it exit (closing its file), or kill it with @sig; wait for it. */
static void client_stop(struct client *c, int sig)
{
	if (c->pid <= 0)
		return;
	if (sig)
		kill(c->pid, sig);
	close(c->cmd);
	close(c->reply);
	waitpid(c->pid, NULL, 0);
	c->pid = 0;
}

static int stat_of(const char *name, struct kvarena_stat *s)
{
	int fd = kva_open(O_RDONLY), ret;

	ret = fd < 0 ? -errno : kva_stat(fd, name, s);
	close(fd);
	return ret;
}

static int destroy(const char *name)
{
	int fd = kva_open(O_RDWR), ret;

	ret = fd < 0 ? -errno : kva_destroy(fd, name);
	close(fd);
	return ret;
}

/* kB of shared memory, from /proc/meminfo's @key. */
static long meminfo(const char *key)
{
	char line[128];
	size_t len = strlen(key);
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == ':')
			v = atol(line + len + 1);
	if (f)
		fclose(f);
	return v;
}

/* ---- the arena most tests look at ------------------------------------------------ */

/*
 * Arena "ctl": 16 frames of 64 KiB, 1 KiB per token, so 64 tokens per
 * frame, low watermark 4.  Client A "vllm-a" (min 2, max 8) holds 5 frames
 * and reports 256 tokens, 262144 bytes; client B, labelled sg"b\x to test
 * escaping (min 4, max 0: the arena's 16), holds 3 frames after one
 * refused allocation of 20 and reports 100 tokens, 102400 bytes.
 *
 *   held      5 + 3 = 8 frames = 524288 bytes = 512 tokens
 *   free      16 - 8 = 8, of which 1 reserved (B's min 4 - held 3)
 *   available 8 - 1 + 0 cached = 7 frames = 458752 bytes = 448 tokens
 *   filled    262144 + 102400 = 364544 bytes (356Ki, 5.6 frames), 356 tokens
 *   fragmentation (524288 - 364544) / 524288 = 159744 / 524288 = 30.47%
 *   calls     A: 1 alloc, B: 2 allocs of which 1 failed
 *   per client: A (327680 - 262144) / 327680 = 20.0%,
 *               B (196608 - 102400) / 196608 = 47.9%
 */
#define B_LABEL "sg\"b\\x"

FIXTURE(ctl) {
	struct client a, b, c;
};

FIXTURE_SETUP(ctl)
{
	struct run r;

	destroy("ctl");
	CTL(&r, "create", "ctl", "--frames", "16", "--frame-size", "64K",
	    "--bytes-per-token", "1K", "--low-watermark", "4");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	/* What it made, and the MemAvailable it left (which varies). */
	ASSERT_TRUE(starts(r.out, "arena ctl: 16 frames of 64Ki, 1.0Mi of host memory; "))
		TH_LOG("%s", r.out);
	ASSERT_NE(NULL, strstr(r.out, " of MemAvailable left (headroom "));
	ASSERT_TRUE(ends(r.out, ": 10% of MemTotal)\n")) TH_LOG("%s", r.out);
	/* One line: its only line feed is the last byte. */
	ASSERT_EQ(strlen(r.out) - 1, (size_t)(strchr(r.out, '\n') - r.out));
	ASSERT_STREQ("", r.err);
	ASSERT_EQ(0, client_start(&self->a, "ctl", "vllm-a", 2, 8));
	ASSERT_EQ(5, client_do(&self->a, 'a', 5, 0, 0));
	ASSERT_EQ(0, client_do(&self->a, 'u', 0, 256, 262144));
	ASSERT_EQ(0, client_start(&self->b, "ctl", B_LABEL, 4, 0));
	ASSERT_EQ(3, client_do(&self->b, 'a', 3, 0, 0));
	ASSERT_EQ(-ENOSPC, client_do(&self->b, 'a', 20, 0, 0));
	ASSERT_EQ(0, client_do(&self->b, 'u', 0, 100, 102400));
}

FIXTURE_TEARDOWN(ctl)
{
	chmod(KVARENA_DEVICE, 0660);
	client_stop(&self->a, 0);
	client_stop(&self->b, 0);
	client_stop(&self->c, 0);
	EXPECT_EQ(0, destroy("ctl"));
}

static const char ctl_stat[] =
	"arena ctl: host, 16 frames of 64Ki, 64 tokens/frame, 2 clients, low watermark 4\n"
	"        capacity   held  filled  cached   free  available\n"
	"bytes      1.0Mi  512Ki   356Ki      0B  512Ki      448Ki\n"
	"frames        16      8     5.6       0      8          7\n"
	"tokens      1024    512     356       0    512        448\n"
	"internal fragmentation: 30.5% (156Ki held but not filled)\n"
	"reserved for minimums: 1 frame, peak held: 8 frames, failed allocations: 1 of 3\n"
	"prefix cache: 0 published frames, 0 cached, hit rate - (0 of 0 keys), 0 reclaimed\n";

static const char ctl_stat_json[] =
	"{\"name\":\"ctl\",\"mem_kind\":\"host\",\"mem_dev\":0,"
	"\"frame_size\":65536,\"bytes_per_token\":1024,\"tokens_per_frame\":64,"
	"\"clients\":2,\"low_watermark\":4,\"pressure\":false,\"accounting_only\":false,"
	"\"frames\":{\"capacity\":16,\"held\":8,\"cached\":0,\"free\":8,\"unbacked\":0,"
	"\"available\":7,\"reserved\":1,\"backed\":16,\"peak_held\":8},"
	"\"bytes\":{\"capacity\":1048576,\"held\":524288,\"filled\":364544,"
	"\"cached\":0,\"free\":524288,\"unbacked\":0,\"available\":458752},"
	"\"tokens\":{\"capacity\":1024,\"held\":512,\"filled\":356,"
	"\"cached\":0,\"free\":512,\"unbacked\":0,\"available\":448},"
	"\"fragmentation_pct\":30.5,\"alloc_calls\":3,\"free_calls\":0,"
	"\"alloc_failures\":1,\"frames_allocated\":8,\"frames_freed\":0,"
	"\"prefix_cache\":{\"published\":0,\"cached\":0,\"hits\":0,\"misses\":0,\"hit_rate_pct\":null,\"reclaims\":0,\"domain\":null},"
	"\"clearing\":{\"dirty\":0,\"cleared\":0,\"quarantined\":0},"
	"\"access\":{\"owner_uid\":0,\"owner_gid\":0,\"mode\":\"0666\","
	"\"client_min_limit\":0,\"client_max_default\":0,"
	"\"client_max_limit\":0,\"cache_domains\":\"uid\",\"domain_cached_max\":0}}";

/* The PIDS column's width: its heading, or the longest pid. */
static int pids_width(const struct client *a, const struct client *b)
{
	char pa[16], pb[16];
	size_t w;

	snprintf(pa, sizeof(pa), "%d", a->pid);
	snprintf(pb, sizeof(pb), "%d", b->pid);
	w = strlen(pa) > strlen(pb) ? strlen(pa) : strlen(pb);
	return (int)(w > 4 ? w : 4);
}

/*
 * The clients table; widths follow the widest cell, pids vary.  Each
 * client process holds its own file, so PIDS is its pid.
 */
static const char *ctl_clients(const struct client *a, const struct client *b)
{
	int w = pids_width(a, b);

	return fmt("ARENA  ID  %*s  LABEL   MIN  MAX  HELD  SHARED  FILLED  TOKENS   FRAG  PEAK  FAILS\n"
		   "ctl    %2u  %*d  vllm-a    2    8     5       0   256Ki     256  20.0%%     5      0\n"
		   "ctl    %2u  %*d  " B_LABEL "    4   16     3       0   100Ki     100  47.9%%     3      1\n",
		   w, "PIDS", a->id, w, a->pid, b->id, w, b->pid);
}

static const char *ctl_clients_json(const struct client *a,
				    const struct client *b)
{
	return fmt("[{\"arena\":\"ctl\",\"id\":%u,\"pids\":[%d],\"attach_pid\":%d,\"label\":\"vllm-a\","
		   "\"uid\":0,\"min_frames\":2,\"max_frames\":8,\"held_frames\":5,"
		   "\"shared_frames\":0,\"charged_frames\":5,\"peak_frames\":5,\"filled_bytes\":262144,"
		   "\"filled_tokens\":256,\"alloc_calls\":1,\"free_calls\":0,"
		   "\"alloc_failures\":0,\"dmem_refused\":0,\"cgroup\":\"/\",\"domain\":\"uid 0\"},"
		   "{\"arena\":\"ctl\",\"id\":%u,\"pids\":[%d],\"attach_pid\":%d,\"label\":\"sg\\\"b\\\\x\","
		   "\"uid\":0,\"min_frames\":4,\"max_frames\":16,\"held_frames\":3,"
		   "\"shared_frames\":0,\"charged_frames\":3,\"peak_frames\":3,\"filled_bytes\":102400,"
		   "\"filled_tokens\":100,\"alloc_calls\":2,\"free_calls\":0,"
		   "\"alloc_failures\":1,\"dmem_refused\":0,\"cgroup\":\"/\",\"domain\":\"uid 0\"}]\n",
		   a->id, a->pid, a->pid, b->id, b->pid, b->pid);
}

TEST_F(ctl, stat_shows_what_the_clients_hold_and_filled)
{
	struct run r;

	CTL(&r, "stat", "ctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ(ctl_stat, r.out);
	EXPECT_STREQ("", r.err);
}

TEST_F(ctl, stat_bytes_are_exact_with_b)
{
	struct run r;

	CTL(&r, "-b", "stat", "ctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ("arena ctl: host, 16 frames of 65536 bytes, 64 tokens/frame, 2 clients, low watermark 4\n"
		     "        capacity    held  filled  cached    free  available\n"
		     "bytes    1048576  524288  364544       0  524288     458752\n"
		     "frames        16       8     5.6       0       8          7\n"
		     "tokens      1024     512     356       0     512        448\n"
		     "internal fragmentation: 30.5% (159744 bytes held but not filled)\n"
		     "reserved for minimums: 1 frame, peak held: 8 frames, failed allocations: 1 of 3\n"
		     "prefix cache: 0 published frames, 0 cached, hit rate - (0 of 0 keys), 0 reclaimed\n",
		     r.out);
}

TEST_F(ctl, stat_json_equals_the_clients_numbers)
{
	struct run r;

	CTL(&r, "stat", "ctl", "--json");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ(fmt("[%s]\n", ctl_stat_json), r.out);

	CTL(&r, "-j", "-p", "stat", "ctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_TRUE(starts(r.out, "[\n  {\n    \"name\": \"ctl\",\n    \"mem_kind\": \"host\",\n"))
		TH_LOG("%s", r.out);
}

TEST_F(ctl, clients_lists_each_clients_limits_and_usage)
{
	struct run r;

	CTL(&r, "clients", "ctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ(ctl_clients(&self->a, &self->b), r.out);

	CTL(&r, "clients", "ctl", "--json");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ(ctl_clients_json(&self->a, &self->b), r.out);
}

TEST_F(ctl, views_follow_frees_usage_and_a_killed_client)
{
	struct run r;

	/* A frees 2 of its 5 and reports 150 tokens; B is killed. */
	ASSERT_EQ(0, client_do(&self->a, 'f', 2, 0, 0));
	ASSERT_EQ(0, client_do(&self->a, 'u', 0, 150, 153600));
	client_stop(&self->b, SIGKILL);

	/*
	 * held 3 = 196608 bytes = 192 tokens; free 13, nothing reserved (A
	 * holds above its min 2); filled 153600 bytes (150Ki, 2.3 frames);
	 * fragmentation (196608 - 153600) / 196608 = 21.875%; 8 frames
	 * allocated, 2 freed by A and 3 by B's death.
	 */
	CTL(&r, "stat", "ctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ("arena ctl: host, 16 frames of 64Ki, 64 tokens/frame, 1 client, low watermark 4\n"
		     "        capacity   held  filled  cached   free  available\n"
		     "bytes      1.0Mi  192Ki   150Ki      0B  832Ki      832Ki\n"
		     "frames        16      3     2.3       0     13         13\n"
		     "tokens      1024    192     150       0    832        832\n"
		     "internal fragmentation: 21.9% (42Ki held but not filled)\n"
		     "reserved for minimums: 0 frames, peak held: 8 frames, failed allocations: 1 of 3\n"
		     "prefix cache: 0 published frames, 0 cached, hit rate - (0 of 0 keys), 0 reclaimed\n",
		     r.out);

	CTL(&r, "stat", "--json", "ctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ("[{\"name\":\"ctl\",\"mem_kind\":\"host\",\"mem_dev\":0,"
		     "\"frame_size\":65536,\"bytes_per_token\":1024,\"tokens_per_frame\":64,"
		     "\"clients\":1,\"low_watermark\":4,\"pressure\":false,\"accounting_only\":false,"
		     "\"frames\":{\"capacity\":16,\"held\":3,\"cached\":0,\"free\":13,"
		     "\"unbacked\":0,\"available\":13,\"reserved\":0,\"backed\":16,\"peak_held\":8},"
		     "\"bytes\":{\"capacity\":1048576,\"held\":196608,\"filled\":153600,"
		     "\"cached\":0,\"free\":851968,\"unbacked\":0,\"available\":851968},"
		     "\"tokens\":{\"capacity\":1024,\"held\":192,\"filled\":150,"
		     "\"cached\":0,\"free\":832,\"unbacked\":0,\"available\":832},"
		     "\"fragmentation_pct\":21.9,\"alloc_calls\":3,\"free_calls\":1,"
		     "\"alloc_failures\":1,\"frames_allocated\":8,\"frames_freed\":5,"
		     "\"prefix_cache\":{\"published\":0,\"cached\":0,\"hits\":0,\"misses\":0,\"hit_rate_pct\":null,\"reclaims\":0,\"domain\":null},"
		     "\"clearing\":{\"dirty\":5,\"cleared\":0,\"quarantined\":0},"
		     "\"access\":{\"owner_uid\":0,\"owner_gid\":0,\"mode\":\"0666\","
	"\"client_min_limit\":0,\"client_max_default\":0,"
	"\"client_max_limit\":0,\"cache_domains\":\"uid\",\"domain_cached_max\":0}}]\n",
		     r.out);

	CTL(&r, "clients", "--json", "ctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ(fmt("[{\"arena\":\"ctl\",\"id\":%u,\"pids\":[%d],\"attach_pid\":%d,\"label\":\"vllm-a\","
			 "\"uid\":0,\"min_frames\":2,\"max_frames\":8,\"held_frames\":3,"
			 "\"shared_frames\":0,\"charged_frames\":3,\"peak_frames\":5,\"filled_bytes\":153600,"
			 "\"filled_tokens\":150,\"alloc_calls\":1,\"free_calls\":1,"
			 "\"alloc_failures\":0,\"dmem_refused\":0,\"cgroup\":\"/\",\"domain\":\"uid 0\"}]\n", self->a.id, self->a.pid,
			 self->a.pid),
		     r.out);
}

TEST_F(ctl, pressure_shows_below_the_low_watermark)
{
	struct run r;

	/* C takes 5 of the 7 unreserved frames: 3 free < watermark 4. */
	ASSERT_EQ(0, client_start(&self->c, "ctl", "", 0, 0));
	ASSERT_EQ(5, client_do(&self->c, 'a', 5, 0, 0));
	CTL(&r, "stat", "ctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_TRUE(starts(r.out, "arena ctl: host, 16 frames of 64Ki, 64 tokens/frame, 3 clients, low watermark 4, UNDER PRESSURE\n"))
		TH_LOG("%s", r.out);
	CTL(&r, "stat", "--json", "ctl");
	EXPECT_NE(NULL, strstr(r.out, "\"pressure\":true,"));
	CTL(&r, "metrics", "ctl");
	EXPECT_NE(NULL, strstr(r.out, "\nkvarena_pressure{arena=\"ctl\"} 1\n"));
	/* An empty label shows as "-" in the table, as "" in JSON. */
	CTL(&r, "clients", "ctl");
	EXPECT_NE(NULL, strstr(r.out, fmt("  %d  -  ", self->c.pid))) TH_LOG("%s", r.out);
	CTL(&r, "clients", "--json", "ctl");
	EXPECT_NE(NULL, strstr(r.out, "\"label\":\"\","));
}

TEST_F(ctl, metrics_are_the_prometheus_text_format)
{
	char expect[12288];
	struct run r;

	snprintf(expect, sizeof(expect),
"# HELP kvarena_arena_info An arena: where its frames live. Always 1.\n"
"# TYPE kvarena_arena_info gauge\n"
"kvarena_arena_info{arena=\"ctl\",mem_kind=\"host\",mem_dev=\"0\"} 1\n"
"# HELP kvarena_frames Frames by state; the states add up to the capacity (free excludes reserved and unbacked).\n"
"# TYPE kvarena_frames gauge\n"
"kvarena_frames{arena=\"ctl\",state=\"held\"} 8\n"
"kvarena_frames{arena=\"ctl\",state=\"cached\"} 0\n"
"kvarena_frames{arena=\"ctl\",state=\"reserved\"} 1\n"
"kvarena_frames{arena=\"ctl\",state=\"free\"} 7\n"
"kvarena_frames{arena=\"ctl\",state=\"unbacked\"} 0\n"
"# HELP kvarena_frame_size_bytes Bytes per frame.\n"
"# TYPE kvarena_frame_size_bytes gauge\n"
"kvarena_frame_size_bytes{arena=\"ctl\"} 65536\n"
"# HELP kvarena_bytes_per_token KV bytes per token the arena is sized for; no sample if not given.\n"
"# TYPE kvarena_bytes_per_token gauge\n"
"kvarena_bytes_per_token{arena=\"ctl\"} 1024\n"
"# HELP kvarena_backed_frames Frames with memory registered.\n"
"# TYPE kvarena_backed_frames gauge\n"
"kvarena_backed_frames{arena=\"ctl\"} 16\n"
"# HELP kvarena_low_watermark_frames Pressure threshold: free plus cached frames below it is pressure.\n"
"# TYPE kvarena_low_watermark_frames gauge\n"
"kvarena_low_watermark_frames{arena=\"ctl\"} 4\n"
"# HELP kvarena_peak_held_frames Most frames held at once since the arena was created.\n"
"# TYPE kvarena_peak_held_frames gauge\n"
"kvarena_peak_held_frames{arena=\"ctl\"} 8\n"
"# HELP kvarena_clients Clients attached.\n"
"# TYPE kvarena_clients gauge\n"
"kvarena_clients{arena=\"ctl\"} 2\n"
"# HELP kvarena_filled_bytes Bytes of held frames holding KV state, as the clients report.\n"
"# TYPE kvarena_filled_bytes gauge\n"
"kvarena_filled_bytes{arena=\"ctl\"} 364544\n"
"# HELP kvarena_filled_tokens Tokens of KV state held, as the clients report.\n"
"# TYPE kvarena_filled_tokens gauge\n"
"kvarena_filled_tokens{arena=\"ctl\"} 356\n"
"# HELP kvarena_alloc_calls_total Frame allocation commands.\n"
"# TYPE kvarena_alloc_calls_total counter\n"
"kvarena_alloc_calls_total{arena=\"ctl\"} 3\n"
"# HELP kvarena_free_calls_total Frame free commands.\n"
"# TYPE kvarena_free_calls_total counter\n"
"kvarena_free_calls_total{arena=\"ctl\"} 0\n"
"# HELP kvarena_alloc_failures_total Frame allocations refused for lack of frames (ENOSPC).\n"
"# TYPE kvarena_alloc_failures_total counter\n"
"kvarena_alloc_failures_total{arena=\"ctl\"} 1\n"
"# HELP kvarena_frames_allocated_total Frames handed out.\n"
"# TYPE kvarena_frames_allocated_total counter\n"
"kvarena_frames_allocated_total{arena=\"ctl\"} 8\n"
"# HELP kvarena_frames_freed_total Frames returned, by free or by a client's exit.\n"
"# TYPE kvarena_frames_freed_total counter\n"
"kvarena_frames_freed_total{arena=\"ctl\"} 0\n"
"# HELP kvarena_published_frames Frames under a prefix key, held or cached.\n"
"# TYPE kvarena_published_frames gauge\n"
"kvarena_published_frames{arena=\"ctl\"} 0\n"
"# HELP kvarena_cache_hits_total Prefix keys LOOKUP found.\n"
"# TYPE kvarena_cache_hits_total counter\n"
"kvarena_cache_hits_total{arena=\"ctl\"} 0\n"
"# HELP kvarena_cache_misses_total Prefix keys LOOKUP was given and did not return.\n"
"# TYPE kvarena_cache_misses_total counter\n"
"kvarena_cache_misses_total{arena=\"ctl\"} 0\n"
"# HELP kvarena_cache_reclaims_total Cached frames reclaimed for allocations.\n"
"# TYPE kvarena_cache_reclaims_total counter\n"
"kvarena_cache_reclaims_total{arena=\"ctl\"} 0\n"
"# HELP kvarena_pressure 1 while free plus cached frames are below the low watermark.\n"
"# TYPE kvarena_pressure gauge\n"
"kvarena_pressure{arena=\"ctl\"} 0\n"
"# HELP kvarena_client_min_frames Frames guaranteed to the client.\n"
"# TYPE kvarena_client_min_frames gauge\n"
"kvarena_client_min_frames{arena=\"ctl\",client=\"%1$u\",label=\"vllm-a\",pid=\"%2$d\"} 2\n"
"kvarena_client_min_frames{arena=\"ctl\",client=\"%3$u\",label=\"sg\\\"b\\\\x\",pid=\"%4$d\"} 4\n"
"# HELP kvarena_client_max_frames Most frames the client may hold.\n"
"# TYPE kvarena_client_max_frames gauge\n"
"kvarena_client_max_frames{arena=\"ctl\",client=\"%1$u\",label=\"vllm-a\",pid=\"%2$d\"} 8\n"
"kvarena_client_max_frames{arena=\"ctl\",client=\"%3$u\",label=\"sg\\\"b\\\\x\",pid=\"%4$d\"} 16\n"
"# HELP kvarena_client_held_frames Frames the client holds.\n"
"# TYPE kvarena_client_held_frames gauge\n"
"kvarena_client_held_frames{arena=\"ctl\",client=\"%1$u\",label=\"vllm-a\",pid=\"%2$d\"} 5\n"
"kvarena_client_held_frames{arena=\"ctl\",client=\"%3$u\",label=\"sg\\\"b\\\\x\",pid=\"%4$d\"} 3\n"
"# HELP kvarena_client_shared_frames Frames the client holds that other clients hold too.\n"
"# TYPE kvarena_client_shared_frames gauge\n"
"kvarena_client_shared_frames{arena=\"ctl\",client=\"%1$u\",label=\"vllm-a\",pid=\"%2$d\"} 0\n"
"kvarena_client_shared_frames{arena=\"ctl\",client=\"%3$u\",label=\"sg\\\"b\\\\x\",pid=\"%4$d\"} 0\n"
"# HELP kvarena_client_charged_frames Frames charged to the client, what its min is measured against.\n"
"# TYPE kvarena_client_charged_frames gauge\n"
"kvarena_client_charged_frames{arena=\"ctl\",client=\"%1$u\",label=\"vllm-a\",pid=\"%2$d\"} 5\n"
"kvarena_client_charged_frames{arena=\"ctl\",client=\"%3$u\",label=\"sg\\\"b\\\\x\",pid=\"%4$d\"} 3\n"
"# HELP kvarena_client_peak_frames Most frames the client held at once.\n"
"# TYPE kvarena_client_peak_frames gauge\n"
"kvarena_client_peak_frames{arena=\"ctl\",client=\"%1$u\",label=\"vllm-a\",pid=\"%2$d\"} 5\n"
"kvarena_client_peak_frames{arena=\"ctl\",client=\"%3$u\",label=\"sg\\\"b\\\\x\",pid=\"%4$d\"} 3\n"
"# HELP kvarena_client_filled_bytes Bytes of the client's frames holding KV state, as it reports.\n"
"# TYPE kvarena_client_filled_bytes gauge\n"
"kvarena_client_filled_bytes{arena=\"ctl\",client=\"%1$u\",label=\"vllm-a\",pid=\"%2$d\"} 262144\n"
"kvarena_client_filled_bytes{arena=\"ctl\",client=\"%3$u\",label=\"sg\\\"b\\\\x\",pid=\"%4$d\"} 102400\n"
"# HELP kvarena_client_filled_tokens Tokens of KV state the client holds, as it reports.\n"
"# TYPE kvarena_client_filled_tokens gauge\n"
"kvarena_client_filled_tokens{arena=\"ctl\",client=\"%1$u\",label=\"vllm-a\",pid=\"%2$d\"} 256\n"
"kvarena_client_filled_tokens{arena=\"ctl\",client=\"%3$u\",label=\"sg\\\"b\\\\x\",pid=\"%4$d\"} 100\n"
"# HELP kvarena_client_alloc_calls_total The client's frame allocation commands.\n"
"# TYPE kvarena_client_alloc_calls_total counter\n"
"kvarena_client_alloc_calls_total{arena=\"ctl\",client=\"%1$u\",label=\"vllm-a\",pid=\"%2$d\"} 1\n"
"kvarena_client_alloc_calls_total{arena=\"ctl\",client=\"%3$u\",label=\"sg\\\"b\\\\x\",pid=\"%4$d\"} 2\n"
"# HELP kvarena_client_free_calls_total The client's frame free commands.\n"
"# TYPE kvarena_client_free_calls_total counter\n"
"kvarena_client_free_calls_total{arena=\"ctl\",client=\"%1$u\",label=\"vllm-a\",pid=\"%2$d\"} 0\n"
"kvarena_client_free_calls_total{arena=\"ctl\",client=\"%3$u\",label=\"sg\\\"b\\\\x\",pid=\"%4$d\"} 0\n"
"# HELP kvarena_client_alloc_failures_total The client's allocations refused for lack of frames.\n"
"# TYPE kvarena_client_alloc_failures_total counter\n"
"kvarena_client_alloc_failures_total{arena=\"ctl\",client=\"%1$u\",label=\"vllm-a\",pid=\"%2$d\"} 0\n"
"kvarena_client_alloc_failures_total{arena=\"ctl\",client=\"%3$u\",label=\"sg\\\"b\\\\x\",pid=\"%4$d\"} 1\n"
"# HELP kvarena_client_dmem_refused_total The client's allocations refused by its cgroup's dmem.max (also in alloc failures).\n"
"# TYPE kvarena_client_dmem_refused_total counter\n"
"kvarena_client_dmem_refused_total{arena=\"ctl\",client=\"%1$u\",label=\"vllm-a\",pid=\"%2$d\"} 0\n"
"kvarena_client_dmem_refused_total{arena=\"ctl\",client=\"%3$u\",label=\"sg\\\"b\\\\x\",pid=\"%4$d\"} 0\n",
		 self->a.id, self->a.pid, self->b.id, self->b.pid);

	CTL(&r, "metrics", "ctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ(expect, r.out);
	EXPECT_STREQ("", r.err);
}

TEST_F(ctl, views_show_the_prefix_cache)
{
	struct kvarena_stat s;
	struct run r;

	/*
	 * A publishes its last 2 frames and lets go of them: 2 cached.  B
	 * looks up a chain of 3 whose first 2 are there (2 hits, 1 miss),
	 * taking them from the cache; C then shares them (2 hits more).
	 */
	ASSERT_EQ(2, client_do(&self->a, 'p', 2, 7, 0));
	ASSERT_EQ(0, client_do(&self->a, 'f', 2, 0, 0));
	ASSERT_EQ(0, stat_of("ctl", &s));
	EXPECT_EQ(2, s.nr_cached);
	ASSERT_EQ(2, client_do(&self->b, 'l', 3, 7, 0));
	ASSERT_EQ(0, client_start(&self->c, "ctl", "c", 0, 0));
	ASSERT_EQ(2, client_do(&self->c, 'l', 2, 7, 0));
	CTL(&r, "stat", "ctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_NE(NULL, strstr(r.out, "\nprefix cache: 2 published frames, 0 cached, hit rate 80.0% (4 of 5 keys), 0 reclaimed\n"))
		TH_LOG("%s", r.out);
	CTL(&r, "stat", "--json", "ctl");
	EXPECT_NE(NULL, strstr(r.out, ",\"prefix_cache\":{\"published\":2,\"cached\":0,\"hits\":4,\"misses\":1,\"hit_rate_pct\":80.0,\"reclaims\":0,\"domain\":null},\"clearing\":{"))
		TH_LOG("%s", r.out);
	/* B holds its 3 and the 2 it found, charged for all; C shares. */
	CTL(&r, "clients", "--json", "ctl");
	EXPECT_NE(NULL, strstr(r.out, "\"held_frames\":5,\"shared_frames\":2,\"charged_frames\":5,"))
		TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, "\"held_frames\":2,\"shared_frames\":2,\"charged_frames\":0,"))
		TH_LOG("%s", r.out);
	CTL(&r, "metrics", "ctl");
	EXPECT_NE(NULL, strstr(r.out, "\nkvarena_published_frames{arena=\"ctl\"} 2\n"));
	EXPECT_NE(NULL, strstr(r.out, "\nkvarena_cache_hits_total{arena=\"ctl\"} 4\n"));
	EXPECT_NE(NULL, strstr(r.out, "\nkvarena_cache_misses_total{arena=\"ctl\"} 1\n"));
	EXPECT_NE(NULL, strstr(r.out, "\nkvarena_frames{arena=\"ctl\",state=\"cached\"} 0\n"));
	/* Everyone lets go: the two are cached, then reclaimed for C. */
	client_stop(&self->b, 0);
	client_stop(&self->c, 0);
	ASSERT_EQ(0, client_start(&self->c, "ctl", "c", 0, 0));
	ASSERT_EQ(13, client_do(&self->c, 'a', 13, 0, 0));
	CTL(&r, "stat", "ctl");
	EXPECT_NE(NULL, strstr(r.out, "\nprefix cache: 0 published frames, 0 cached, hit rate 80.0% (4 of 5 keys), 2 reclaimed\n"))
		TH_LOG("%s", r.out);
	CTL(&r, "metrics", "ctl");
	EXPECT_NE(NULL, strstr(r.out, "\nkvarena_cache_reclaims_total{arena=\"ctl\"} 2\n"));
}

TEST_F(ctl, label_with_control_bytes_is_escaped_everywhere)
{
	struct run r;

	ASSERT_EQ(0, client_start(&self->c, "ctl", "new\nline\x1b\xff", 0, 0));
	CTL(&r, "clients", "ctl");
	EXPECT_NE(NULL, strstr(r.out, "  new?line??  ")) TH_LOG("%s", r.out);
	CTL(&r, "clients", "--json", "ctl");
	EXPECT_NE(NULL, strstr(r.out, "\"label\":\"new\\u000aline\\u001b\\ufffd\""));
	CTL(&r, "metrics", "ctl");
	EXPECT_NE(NULL, strstr(r.out, "label=\"new\\nline\x1b\xef\xbf\xbd\""));
}

TEST_F(ctl, top_redraws_stat_and_clients_every_interval)
{
	static const char head_end[] = ", every 0.05s, q quits\n\n";
	const char *clients = ctl_clients(&self->a, &self->b);
	char *f1, *f2;
	struct run r;

	/*
	 * Not a terminal: frames one after the other, as top -b does, each
	 * a heading, the stat view with the allocation rates, the clients
	 * table and a blank line.
	 */
	CTL(&r, "top", "ctl", "-n", "2", "-d", "0.05");
	EXPECT_EQ(0, r.rc);
	ASSERT_TRUE(starts(r.out, "kvarenactl top - ")) TH_LOG("%s", r.out);
	f1 = strstr(r.out, head_end);
	ASSERT_NE(NULL, f1);
	f1 += strlen(head_end);
	f2 = strstr(f1, "kvarenactl top - ");
	ASSERT_NE(NULL, f2);
	f2[-1] = '\0';
	EXPECT_STREQ(fmt("%sactivity: -\n\n%s", ctl_stat, clients), f1);
	f2 = strstr(f2, head_end);
	ASSERT_NE(NULL, f2);
	f2 += strlen(head_end);
	EXPECT_STREQ(fmt("%sactivity: 0.0 frames/s allocated, 0.0 frames/s freed, 0.0 failed allocations/s\n\n%s\n",
			 ctl_stat, clients), f2);

	CTL(&r, "top", "--json", "-n", "1", "ctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_TRUE(starts(r.out, "{\"time\":"));
	f1 = strchr(r.out, ',');
	ASSERT_NE(NULL, f1);
	clients = ctl_clients_json(&self->a, &self->b);
	EXPECT_STREQ(fmt(",\"arenas\":[%s],\"clients\":%.*s}\n", ctl_stat_json,
			 (int)strlen(clients) - 1, clients), f1);
}

/* @text with every line longer than @cols cut to cols - 1 and '>'. */
static const char *cut(const char *text, size_t cols)
{
	static char buf[1 << 16];
	size_t o = 0;

	while (*text && o + cols + 2 < sizeof(buf)) {
		size_t len = strcspn(text, "\n");

		if (len > cols) {
			memcpy(buf + o, text, cols - 1);
			o += cols - 1;
			buf[o++] = '>';
		} else {
			memcpy(buf + o, text, len);
			o += len;
		}
		buf[o++] = '\n';
		text += len + (text[len] == '\n');
	}
	buf[o] = '\0';
	return buf;
}

TEST_F(ctl, top_fits_the_width_it_is_given_and_says_what_it_hides)
{
	static const char head_end[] = ", every 1s, q quits\n\n";
	char env[32], *envp[] = { env, NULL };
	int w = pids_width(&self->a, &self->b);
	const char *want, *rest;
	struct run r;

	/* 79 + w columns in all; in 56, four columns go for w = 4. */
	ASSERT_EQ(4, w);
	want = fmt("%s%s"
		   "ARENA  ID  PIDS  LABEL   MAX  HELD  FILLED   FRAG  FAILS\n"
		   "ctl    %2u  %4d  vllm-a    8     5   256Ki  20.0%%      0\n"
		   "ctl    %2u  %4d  " B_LABEL "   16     3   100Ki  47.9%%      1\n"
		   "hidden: MIN, SHARED, TOKENS, PEAK (-w %d for all)\n\n",
		   cut(ctl_stat, 56), "activity: -\n\n",
		   self->a.id, self->a.pid, self->b.id, self->b.pid, 79 + w);

	CTL(&r, "top", "ctl", "-n", "1", "-w", "56");
	EXPECT_EQ(0, r.rc);
	rest = strstr(r.out, head_end);
	ASSERT_NE(NULL, rest) TH_LOG("%s", r.out);
	EXPECT_STREQ(want, rest + strlen(head_end));

	/* $COLUMNS says the same when -w does not. */
	snprintf(env, sizeof(env), "COLUMNS=56");
	run_as(&r, ROOT, envp, ARGV("top", "ctl", "-n", "1"));
	EXPECT_EQ(0, r.rc);
	rest = strstr(r.out, head_end);
	ASSERT_NE(NULL, rest) TH_LOG("%s", r.out);
	EXPECT_STREQ(want, rest + strlen(head_end));
}

/*
 * From a pid namespace of its own, kvarenactl sees no client's process:
 * the pids are unknown (null, "?", no label), not 0 and not "nobody".
 */
TEST_F(ctl, pids_outside_our_pid_namespace_are_unknown_not_zero)
{
	struct run r;

	CTL_AS(&r, NEWPIDNS, "clients", "--json", "ctl");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_NE(NULL, strstr(r.out, fmt("{\"arena\":\"ctl\",\"id\":%u,\"pids\":null,\"attach_pid\":null,\"label\":\"vllm-a\",",
					  self->a.id)))
		TH_LOG("%s", r.out);
	CTL_AS(&r, NEWPIDNS, "clients", "ctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ(fmt("ARENA  ID  PIDS  LABEL   MIN  MAX  HELD  SHARED  FILLED  TOKENS   FRAG  PEAK  FAILS\n"
			 "ctl    %2u     ?  vllm-a    2    8     5       0   256Ki     256  20.0%%     5      0\n"
			 "ctl    %2u     ?  " B_LABEL "    4   16     3       0   100Ki     100  47.9%%     3      1\n"
			 "PIDS ?: the processes of other pid namespaces are not visible here\n",
			 self->a.id, self->b.id), r.out);
	CTL_AS(&r, NEWPIDNS, "metrics", "ctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_NE(NULL, strstr(r.out, fmt("kvarena_client_held_frames{arena=\"ctl\",client=\"%u\",label=\"vllm-a\"} 5\n",
					  self->a.id)))
		TH_LOG("%s", r.out);
	EXPECT_EQ(NULL, strstr(r.out, "pid=")) TH_LOG("%s", r.out);
}

TEST_F(ctl, limit_changes_min_and_max_by_id_or_label)
{
	struct kvarena_client_info rows[4];
	struct kvarena_clients c = { .name = "ctl",
				     .clients = (__u64)(unsigned long)rows,
				     .count = 4 };
	int fd = kva_open(O_RDONLY);
	struct run r;

	ASSERT_LE(0, fd);
	CTL(&r, "limit", "ctl", fmt("#%u", self->a.id), "--min", "3", "--max", "6");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("", r.out);
	ASSERT_EQ(0, kva_ioctl(fd, KVARENA_IOC_CLIENTS, &c));
	EXPECT_EQ(3, rows[0].min_frames);
	EXPECT_EQ(6, rows[0].max_frames);

	/* By label; the limit not given stays. */
	CTL(&r, "limit", "ctl", "vllm-a", "--max", "0");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	ASSERT_EQ(0, kva_ioctl(fd, KVARENA_IOC_CLIENTS, &c));
	EXPECT_EQ(3, rows[0].min_frames);
	EXPECT_EQ(16, rows[0].max_frames);

	/* A holds 5; a min of 13 needs 8 more, 7 are not B's. */
	CTL(&r, "limit", "ctl", "vllm-a", "--min", "13");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ(fmt("kvarenactl: limit: cannot guarantee 13 frames to client %u: it holds 5 and only 7 free frames are not reserved for others\n",
			 self->a.id), r.err);
	CTL(&r, "limit", "ctl", "vllm-a", "--max", "17");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: limit: --max 17 is above the arena's 16 frames\n", r.err);
	CTL(&r, "limit", "ctl", "vllm-a", "--max", "2");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: limit: --max 2 is below the client's min, 3\n", r.err);
	/* A max below what it holds takes nothing back, and says so. */
	CTL(&r, "limit", "ctl", "vllm-a", "--max", "4");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ(fmt("client %u holds 5 frames, more than its new max of 4: it keeps them, and gets no new frame until it holds fewer than 4\n",
			 self->a.id), r.out);
	EXPECT_EQ(-ENOSPC, client_do(&self->a, 'a', 1, 0, 0));
	ASSERT_EQ(0, client_do(&self->a, 'f', 2, 0, 0));
	EXPECT_EQ(1, client_do(&self->a, 'a', 1, 0, 0));
	EXPECT_EQ(-ENOSPC, client_do(&self->a, 'a', 1, 0, 0));
	CTL(&r, "limit", "ctl", "vllm-a", "--max", "0");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ("", r.out);
	CTL(&r, "limit", "ctl", "#99", "--max", "3");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: limit: arena \"ctl\" has no client 99 (see kvarenactl clients ctl)\n", r.err);
	/* A bare number is a label; the id is --id ID, as the message says. */
	CTL(&r, "limit", "ctl", fmt("%u", self->a.id), "--max", "3");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ(fmt("kvarenactl: limit: arena \"ctl\" has no client labelled \"%u\" (client %u is --id %u)\n",
			 self->a.id, self->a.id, self->a.id), r.err);
	CTL(&r, "limit", "ctl", "nobody", "--max", "3");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: limit: arena \"ctl\" has no client labelled \"nobody\" (see kvarenactl clients ctl)\n", r.err);
	ASSERT_EQ(0, client_start(&self->c, "ctl", "vllm-a", 0, 0));
	CTL(&r, "limit", "ctl", "vllm-a", "--max", "3");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: limit: 2 clients of arena \"ctl\" are labelled \"vllm-a\": name one by its id, --id ID\n", r.err);
	/* Nothing above changed anything. */
	ASSERT_EQ(0, kva_ioctl(fd, KVARENA_IOC_CLIENTS, &c));
	EXPECT_EQ(3, rows[0].min_frames);
	EXPECT_EQ(16, rows[0].max_frames);
	close(fd);
}

TEST_F(ctl, limit_takes_a_label_of_digits_and_an_id_by_id)
{
	struct kvarena_client_info rows[4];
	struct kvarena_clients c = { .name = "ctl",
				     .clients = (__u64)(unsigned long)rows,
				     .count = 4 };
	int fd = kva_open(O_RDONLY);
	struct run r;

	ASSERT_LE(0, fd);
	/* Client C is labelled "1": not client 1, which is A. */
	ASSERT_EQ(0, client_start(&self->c, "ctl", "1", 0, 0));
	ASSERT_EQ(1, self->a.id);
	CTL(&r, "limit", "ctl", "1", "--max", "4");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "limit", "ctl", "--id", "1", "--max", "7");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	ASSERT_EQ(0, kva_ioctl(fd, KVARENA_IOC_CLIENTS, &c));
	ASSERT_EQ(3, c.nr_clients);
	EXPECT_EQ(7, rows[0].max_frames);	/* A, by --id 1 */
	EXPECT_EQ(4, rows[2].max_frames);	/* C, by its label "1" */
	close(fd);
}

TEST_F(ctl, destroy_with_clients_attached_is_refused)
{
	struct kvarena_stat s;
	struct run r;

	CTL(&r, "destroy", "ctl");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: destroy: arena \"ctl\" has 2 clients attached (kvarenactl clients ctl)\n",
		     r.err);
	ASSERT_EQ(0, stat_of("ctl", &s));
	EXPECT_EQ(8, s.nr_held);
}

TEST_F(ctl, create_of_a_taken_name_fails_and_changes_nothing)
{
	struct kvarena_stat s;
	struct run r;

	CTL(&r, "create", "ctl", "--frames", "4");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: create: an arena named \"ctl\" exists already\n", r.err);
	ASSERT_EQ(0, stat_of("ctl", &s));
	EXPECT_EQ(16, s.nr_frames);
	EXPECT_EQ(16, s.nr_backed);
	EXPECT_EQ(2, s.nr_clients);
}

TEST_F(ctl, read_access_is_enough_to_view_but_not_to_change)
{
	struct run root, r;

	CTL(&root, "clients", "ctl");
	ASSERT_EQ(0, chmod(KVARENA_DEVICE, 0664));
	/*
	 * The arena's levels, but the activity of nobody's own cache domain
	 * only: root's clients, their calls, failures, hits and filled
	 * tokens are not its to see.
	 */
	CTL_AS(&r, NOBODY, "stat", "ctl");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("arena ctl: host, 16 frames of 64Ki, 64 tokens/frame, 0 clients of cache domain uid 65534, low watermark 4\n"
		     "        capacity   held  filled  cached   free  available\n"
		     "bytes      1.0Mi  512Ki      0B      0B  512Ki      448Ki\n"
		     "frames        16      8     0.0       0      8          7\n"
		     "tokens      1024    512       0       0    512        448\n"
		     "internal fragmentation: per client in kvarenactl clients (held here is every domain's, filled this user's)\n"
		     "reserved for minimums: 1 frame, peak held: 8 frames, failed allocations: 0 of 0\n"
		     "prefix cache of cache domain uid 65534 (this user's; root and the owner see all): 0 published frames, 0 cached, hit rate - (0 of 0 keys), 0 reclaimed\n",
		     r.out);
	/* No row of root's clients, and a last line says why. */
	CTL_AS(&r, NOBODY, "clients", "ctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ("ARENA  ID  PIDS  LABEL  MIN  MAX  HELD  SHARED  FILLED  TOKENS  FRAG  PEAK  FAILS\n"
		     "ctl: the clients of cache domain uid 65534 only; root and the arena's owner see every client\n",
		     r.out);
	CTL_AS(&r, NOBODY, "clients", "--json", "ctl");
	EXPECT_EQ(NULL, strstr(r.out, "vllm-a")) TH_LOG("%s", r.out);
	/* With one domain for the whole arena (an opt-in), the table is shared. */
	CTL(&r, "limit", "ctl", "--cache-domains", "arena");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	client_stop(&self->a, 0);
	ASSERT_EQ(0, client_start(&self->a, "ctl", "vllm-a", 2, 8));
	ASSERT_EQ(5, client_do(&self->a, 'a', 5, 0, 0));
	/*
	 * The holders are "?" then, since nobody may not read root's
	 * processes' files, and a last line says why.
	 */
	CTL_AS(&r, NOBODY, "clients", "ctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_TRUE(starts(r.out, "ARENA  ID  PIDS  LABEL   MIN  MAX  HELD"))
		TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, fmt("\nctl    %2u     ?  vllm-a    2    8     5  ",
					  self->a.id)))
		TH_LOG("%s", r.out);
	EXPECT_EQ(NULL, strstr(r.out, B_LABEL)) TH_LOG("%s", r.out);
	EXPECT_TRUE(ends(r.out, " processes; root can\n")) TH_LOG("%s", r.out);
	CTL_AS(&r, NOBODY, "clients", "--json", "ctl");
	EXPECT_NE(NULL, strstr(r.out, fmt("\"id\":%u,\"pids\":null,\"attach_pid\":%d,",
					  self->a.id, self->a.pid)));
	CTL_AS(&r, NOBODY, "kill", "ctl", "vllm-a");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ(fmt("kvarenactl: kill: found no process that holds client %u (vllm-a) of arena \"ctl\" among those whose files this user can read (root can read all)\n",
			 self->a.id), r.err);
	CTL_AS(&r, NOBODY, "metrics");
	EXPECT_EQ(0, r.rc);
	CTL_AS(&r, NOBODY, "create", "x", "--frames", "1");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: /dev/kvarena: permission denied (create needs root)\n", r.err);
	CTL_AS(&r, NOBODY, "destroy", "ctl");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: /dev/kvarena: permission denied (destroy needs root)\n", r.err);
	CTL_AS(&r, NOBODY, "limit", "ctl", "1", "--max", "2");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: /dev/kvarena: permission denied (limit needs root)\n", r.err);

	ASSERT_EQ(0, chmod(KVARENA_DEVICE, 0660));
	CTL_AS(&r, NOBODY, "stat");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("", r.out);
	EXPECT_STREQ("kvarenactl: /dev/kvarena: permission denied (viewing needs read access: root or the device's group)\n",
		     r.err);
}

TEST_F(ctl, without_cap_sys_admin_changes_are_refused)
{
	struct kvarena_stat s;
	struct run r;

	CTL_AS(&r, NOCAP, "stat", "ctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ(ctl_stat, r.out);
	CTL_AS(&r, NOCAP, "create", "nocap", "--frames", "1");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: create: permission denied (needs CAP_SYS_ADMIN)\n", r.err);
	EXPECT_EQ(-ENOENT, stat_of("nocap", &s));
	CTL_AS(&r, NOCAP, "destroy", "ctl");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: destroy: permission denied (needs CAP_SYS_ADMIN)\n", r.err);
	CTL_AS(&r, NOCAP, "limit", "ctl", "vllm-a", "--max", "6");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: limit: permission denied (needs CAP_SYS_ADMIN)\n", r.err);
}

/* ---- arenas without clients ------------------------------------------------ */

TEST(unknown_arena_is_named_and_fails)
{
	static const char *const cmds[] = { "stat", "clients", "top",
					    "metrics", "destroy" };
	struct run r;
	size_t i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		CTL(&r, cmds[i], "nope");
		EXPECT_EQ(1, r.rc);
		EXPECT_STREQ("", r.out);
		EXPECT_STREQ(fmt("kvarenactl: %s: no arena named \"nope\"\n",
				 cmds[i]), r.err);
	}
	CTL(&r, "limit", "nope", "1", "--max", "2");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: limit: no arena named \"nope\"\n", r.err);
}

TEST(bad_command_line_is_exit_status_2)
{
	struct run r;

	CTL(&r, "stat", "--frames", "1");
	EXPECT_EQ(2, r.rc);
	EXPECT_STREQ("kvarenactl: stat: --frames does not apply to stat\nTry 'kvarenactl help stat'.\n",
		     r.err);
}

TEST(version_says_how_commands_reach_the_module)
{
	struct kvarena_version v = { 0 };
	char want[1024];
	struct run r;
	int fd = kva_open(O_RDONLY);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kva_ioctl(fd, KVARENA_IOC_VERSION, &v));
	close(fd);
	snprintf(want, sizeof(want),
		 "kvarenactl %s (kvarena ABI %d)\n"
		 "built with: no libmicrohttpd (no exporter), no libzmq (no events --zmq), statically linked (no CUDA: cannot load libcuda.so.1)\n"
		 "kvarena.ko: version %s, ABI %u; commands over %s\nkvarena.ko: %s\n",
		 KVA_VERSION, KVARENA_ABI_VERSION, KVA_VERSION, v.abi_version,
		 v.features & KVARENA_FEAT_URING_CMD ? "ioctl() and io_uring" :
		 "ioctl() only: this kernel has no io_uring commands for character devices (IORING_OP_URING_CMD, 5.19+)",
		 v.features & KVARENA_FEAT_DMEM ?
		 "frames charged to the dmem cgroup controller (dmem.max, dmem.min, dmem.low on kvarena/<arena>)" :
		 "frames charged to no cgroup: this kernel has no dmem cgroup controller kvarena can use (CONFIG_CGROUP_DMEM), or the module's dmem parameter is off");
	CTL(&r, "--version");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ(want, r.out);
}

TEST(no_arenas_is_said_plainly)
{
	struct kvarena_stat s = { .flags = KVARENA_STAT_BY_INDEX };
	int fd = kva_open(O_RDONLY);
	struct run r;

	ASSERT_LE(0, fd);
	if (kva_ioctl(fd, KVARENA_IOC_STAT, &s) != -ENOENT)
		SKIP(close(fd); return, "arena %s exists", s.name);
	close(fd);
	CTL(&r, "stat");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ("no arenas\n", r.out);
	CTL(&r, "stat", "--json");
	EXPECT_STREQ("[]\n", r.out);
	CTL(&r, "clients", "--json");
	EXPECT_STREQ("[]\n", r.out);
}

TEST(views_without_a_name_cover_every_arena_in_creation_order)
{
	static char both[2 * sizeof(((struct run *)0)->out) + 2];
	struct run one, two, all;

	CTL(&one, "create", "zz1", "--frames", "2", "--frame-size", "4K");
	ASSERT_EQ(0, one.rc);
	CTL(&two, "create", "aa2", "--frames", "3", "--frame-size", "8K");
	ASSERT_EQ(0, two.rc);

	CTL(&one, "stat", "zz1");
	CTL(&two, "stat", "aa2");
	CTL(&all, "stat");
	EXPECT_EQ(0, all.rc);
	snprintf(both, sizeof(both), "%s\n%s", one.out, two.out);
	EXPECT_STREQ(both, all.out);
	/* No bytes per token: no token figures but the clients' reports. */
	EXPECT_STREQ("arena zz1: host, 2 frames of 4.0Ki, 0 clients\n"
		     "        capacity  held  filled  cached   free  available\n"
		     "bytes      8.0Ki    0B      0B      0B  8.0Ki      8.0Ki\n"
		     "frames         2     0     0.0       0      2          2\n"
		     "tokens         -     -       0       -      -          -\n"
		     "internal fragmentation: - (nothing held)\n"
		     "reserved for minimums: 0 frames, peak held: 0 frames, failed allocations: 0 of 0\n"
		     "prefix cache: 0 published frames, 0 cached, hit rate - (0 of 0 keys), 0 reclaimed\n",
		     one.out);

	CTL(&one, "stat", "--json", "zz1");
	CTL(&two, "stat", "--json", "aa2");
	CTL(&all, "stat", "--json");
	one.out[strlen(one.out) - 2] = '\0';	/* "]\n" */
	snprintf(both, sizeof(both), "%s,%s", one.out, two.out + 1);
	EXPECT_STREQ(both, all.out);
	EXPECT_NE(NULL, strstr(one.out, "\"tokens\":{\"capacity\":null,\"held\":null,\"filled\":0,\"cached\":null,\"free\":null,\"unbacked\":null,\"available\":null},\"fragmentation_pct\":null,"));
	/* Unknown is null, not 0; and no sample at all in the metrics. */
	EXPECT_NE(NULL, strstr(one.out, "\"frame_size\":4096,\"bytes_per_token\":null,\"tokens_per_frame\":null,"))
		TH_LOG("%s", one.out);
	CTL(&all, "metrics", "zz1");
	EXPECT_NE(NULL, strstr(all.out, "# TYPE kvarena_bytes_per_token gauge\n# HELP kvarena_backed_frames "))
		TH_LOG("%s", all.out);

	EXPECT_EQ(0, destroy("zz1"));
	EXPECT_EQ(0, destroy("aa2"));
}

TEST(create_with_model_geometry_derives_bytes_per_token)
{
	struct kvarena_stat s;
	struct run r;

	/* Llama-3-8B, fp16: 2 * 32 * 8 * 128 * 2 = 131072 B, 16 per 2 MiB. */
	CTL(&r, "create", "geo", "--frames", "2", "--layers", "32",
	    "--kv-heads", "8", "--head-dim", "128", "--dtype", "fp16");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	ASSERT_EQ(0, stat_of("geo", &s));
	EXPECT_EQ(131072, s.bytes_per_token);
	EXPECT_EQ(2 << 20, s.frame_size);
	CTL(&r, "stat", "geo");
	EXPECT_TRUE(starts(r.out, "arena geo: host, 2 frames of 2.0Mi, 16 tokens/frame, 0 clients\n"))
		TH_LOG("%s", r.out);
	CTL(&r, "destroy", "geo");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ("", r.out);
	EXPECT_STREQ("", r.err);
	EXPECT_EQ(-ENOENT, stat_of("geo", &s));
}

TEST(create_fp8_holds_twice_the_tokens_of_fp16)
{
	struct kvarena_stat s;
	struct run r;

	/* Llama-3-8B, fp8: 2 * 32 * 8 * 128 * 1 = 65536 B, 32 per 2 MiB. */
	CTL(&r, "create", "geo8", "--frames", "2", "--layers", "32",
	    "--kv-heads", "8", "--head-dim", "128", "--dtype", "fp8");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	ASSERT_EQ(0, stat_of("geo8", &s));
	EXPECT_EQ(65536, s.bytes_per_token);
	CTL(&r, "stat", "geo8");
	EXPECT_TRUE(starts(r.out, "arena geo8: host, 2 frames of 2.0Mi, 32 tokens/frame, 0 clients\n"))
		TH_LOG("%s", r.out);
	CTL(&r, "destroy", "geo8");
	EXPECT_EQ(0, r.rc);
}

/*
 * The memory is counted in a memory cgroup of the test's own, where the
 * tool's pages are charged and nothing else moves the figure.  The module
 * takes only memory sealed against shrinking, so that the arena exists at
 * all says the tool sealed it.
 */
TEST(create_makes_memory_that_outlives_the_tool_until_destroy)
{
	const size_t fs = 1 << 20;
	struct kvarena_frame_fd ff;
	struct kvarena_stat s;
	long before, made, after;
	char cg[128];
	int fd;
	__u64 h[16];
	struct run r;
	char *m;

	ASSERT_EQ(0, kva_memcg_enter("kvarenactl-create", cg, sizeof(cg)));
	before = kva_memcg_shmem_kib(cg);
	ASSERT_LE(0, before);
	CTL(&r, "create", "mem", "--frames", "16", "--frame-size", "1M");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	/* The tool is gone; the module keeps its memory, allocated. */
	made = kva_memcg_shmem_kib(cg);
	EXPECT_LE(before + 16 * 1024 - 1024, made);
	ASSERT_EQ(0, stat_of("mem", &s));
	EXPECT_EQ(16, s.nr_backed);
	EXPECT_EQ(KVARENA_MEM_HOST, s.mem_kind);

	fd = kva_open(O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kva_attach(fd, "mem", "t", 0, 0, NULL));
	ASSERT_EQ(16, kva_alloc(fd, h, 16, 0));
	ASSERT_EQ(0, kva_frame_fd(fd, h[3], &ff));
	EXPECT_EQ((__u64)KVARENA_HANDLE_IDX(h[3]) * fs, ff.offset);
	EXPECT_EQ(fs, ff.size);
	/* What the client gets maps frames, and can neither shrink nor grow. */
	EXPECT_EQ(-1, ftruncate(ff.fd, fs));
	m = mmap(NULL, fs, PROT_READ | PROT_WRITE, MAP_SHARED, ff.fd,
		 (off_t)ff.offset);
	ASSERT_NE(MAP_FAILED, m);
	memset(m, 0x5a, fs);
	EXPECT_EQ(0x5a, m[fs - 1]);
	munmap(m, fs);
	close(ff.fd);
	close(fd);

	CTL(&r, "destroy", "mem");
	EXPECT_EQ(0, r.rc);
	after = kva_memcg_shmem_kib(cg);
	EXPECT_GE(before + 2048, after);
	kva_memcg_leave(cg);
}

TEST(cuda_backend_without_libcuda_fails_and_creates_nothing)
{
	struct kvarena_stat s;
	struct run r;

	CTL(&r, "create", "g0", "--frames", "2", "--backend", "cuda:0");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("", r.out);
	EXPECT_TRUE(starts(r.err, "kvarenactl: cuda backend: libcuda.so.1 not found: "))
		TH_LOG("%s", r.err);
	EXPECT_EQ(-ENOENT, stat_of("g0", &s));
}

TEST(create_that_fails_after_the_arena_is_made_leaves_nothing)
{
	struct kvarena_stat s;
	struct run r;

	/* No huge pages reserved: the arena is made, its memory is not. */
	ASSERT_EQ(0, kva_write_file("/proc/sys/vm/nr_hugepages", "0"));
	CTL(&r, "create", "hp", "--frames", "2", "--frame-size", "2M",
	    "--hugepages");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: create: cannot allocate 4.0Mi of 2 MiB huge pages: No space left on device (reserve them in /proc/sys/vm/nr_hugepages)\n",
		     r.err);
	EXPECT_EQ(-ENOENT, stat_of("hp", &s));
}

TEST(create_of_more_host_memory_than_available_is_refused)
{
	struct kvarena_stat s;
	struct run r;

	/* 1024 frames of 1 GiB in a VM of 1 GiB. */
	CTL(&r, "create", "big", "--frames", "1024", "--frame-size", "1G");
	EXPECT_EQ(1, r.rc);
	EXPECT_TRUE(starts(r.err, "kvarenactl: create: 1.0Ti of host memory asked for, but MemAvailable is "))
		TH_LOG("%s", r.err);
	EXPECT_TRUE(ends(r.err, " of it free (--headroom: 10% of MemTotal)\n"))
		TH_LOG("%s", r.err);
	EXPECT_EQ(-ENOENT, stat_of("big", &s));

	/* What fits but eats into the headroom is refused too. */
	CTL(&r, "create", "big", "--frames", "1", "--frame-size", "4K",
	    "--headroom", "100%");
	EXPECT_EQ(1, r.rc);
	EXPECT_TRUE(starts(r.err, "kvarenactl: create: 4.0Ki of host memory asked for, but MemAvailable is "))
		TH_LOG("%s", r.err);
	EXPECT_EQ(-ENOENT, stat_of("big", &s));
}

TEST(create_on_hugepages_takes_them_until_destroy)
{
	struct run r;

	ASSERT_EQ(0, kva_write_file("/proc/sys/vm/nr_hugepages", "2"));
	if (meminfo("HugePages_Free") != 2) {
		kva_write_file("/proc/sys/vm/nr_hugepages", "0");
		SKIP(return, "no two 2 MiB pages to reserve");
	}
	CTL(&r, "create", "hp", "--frames", "2", "--frame-size", "2M",
	    "--hugepages");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("arena hp: 2 frames of 2.0Mi, 4.0Mi of 2 MiB huge pages; 0 huge pages left free\n",
		     r.out);
	EXPECT_EQ(0, meminfo("HugePages_Free"));
	CTL(&r, "destroy", "hp");
	EXPECT_EQ(0, r.rc);
	EXPECT_EQ(2, meminfo("HugePages_Free"));
	EXPECT_EQ(0, kva_write_file("/proc/sys/vm/nr_hugepages", "0"));
}

/* ---- who holds a client, and making it let go --------------------------- */

/* /proc/@pid/fdinfo/@fd, or "" */
static const char *fdinfo(pid_t pid, int fd)
{
	static char buf[4096];
	char path[64];
	int f;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	n = f < 0 ? -1 : read(f, buf, sizeof(buf) - 1);
	if (f >= 0)
		close(f);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

TEST(fdinfo_names_the_arena_the_client_and_its_memory)
{
	int fd = kva_open(O_RDWR), free_fd = kva_open(O_RDWR);
	const char *info;
	__u64 h[3];
	struct run r;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, free_fd);
	destroy("fdi");
	CTL(&r, "create", "fdi", "--frames", "8", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	ASSERT_EQ(0, kva_attach(fd, "fdi", "ta\tb\\", 0, 0, NULL));
	ASSERT_EQ(3, kva_alloc(fd, h, 3, 0));
	ASSERT_EQ(0, kva_set_usage(fd, 100, 102400));
	info = fdinfo(getpid(), fd);
	/* After the kernel's own lines (pos, flags, mnt_id, ino). */
	EXPECT_NE(NULL, strstr(info, "\nkvarena-arena:\tfdi\n"
				     "kvarena-client-id:\t1\n"
				     "kvarena-label:\tta\\011b\\134\n"
				     "kvarena-frames-held:\t3\n"
				     "kvarena-memory-held:\t192 KiB\n"
				     "kvarena-memory-shared:\t0\n"
				     "kvarena-memory-filled:\t100 KiB\n"
				     "kvarena-tokens-filled:\t100\n"))
		TH_LOG("%s", info);
	EXPECT_TRUE(ends(info, "kvarena-tokens-filled:\t100\n"));
	/* A byte count that is no whole KiB has no unit. */
	ASSERT_EQ(0, kva_set_usage(fd, 1, 1000));
	EXPECT_NE(NULL, strstr(fdinfo(getpid(), fd),
			       "kvarena-memory-filled:\t1000\n"));
	/* A file not attached shows nothing of ours. */
	EXPECT_EQ(NULL, strstr(fdinfo(getpid(), free_fd), "kvarena-"));
	/* Evicted: it holds nothing and says so. */
	CTL(&r, "evict", "fdi", "--id", "1");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	info = fdinfo(getpid(), fd);
	EXPECT_NE(NULL, strstr(info, "\nkvarena-frames-held:\t0\n")) TH_LOG("%s", info);
	EXPECT_TRUE(ends(info, "kvarena-tokens-filled:\t0\nkvarena-evicted:\t1\n"))
		TH_LOG("%s", info);
	close(fd);
	close(free_fd);
	EXPECT_EQ(0, destroy("fdi"));
}

/*
 * A client whose attacher forked and exited: the attacher attaches to
 * @arena as @label, takes @frames frames, forks @holders children that
 * keep the file and wait for a signal, and exits.  The children's pids go
 * in @pids.  0, or -1.
 */
static int forked_client(const char *arena, const char *label, __u32 frames,
			 int holders, pid_t *pids)
{
	int p[2], status, got = 0;
	pid_t a;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	a = fork();
	if (a == 0) {
		int fd = kva_open(O_RDWR);
		__u64 h[16];

		close(p[0]);
		if (fd < 0 || kva_attach(fd, arena, label, 0, 0, NULL) ||
		    kva_alloc(fd, h, frames, 0) != (int)frames)
			_exit(1);
		for (int i = 0; i < holders; i++) {
			pid_t c = fork();

			if (c < 0)
				_exit(1);
			if (c == 0) {
				/* The holder: the file is all it has of it. */
				pid_t me = getpid();

				if (write(p[1], &me, sizeof(me)) != sizeof(me))
					_exit(1);
				close(p[1]);
				for (;;)
					pause();
			}
		}
		_exit(0);
	}
	close(p[1]);
	if (a > 0 && waitpid(a, &status, 0) == a && kva_exited(status) == 0)
		while (got < holders &&
		       read(p[0], &pids[got], sizeof(*pids)) == sizeof(*pids))
			got++;
	close(p[0]);
	return got == holders ? 0 : -1;
}

/* /proc/@pid/stat's state letter. */
static char proc_state(pid_t pid)
{
	char path[32], buf[512];
	const char *p;
	int f;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = open(path, O_RDONLY | O_CLOEXEC);
	n = f < 0 ? -1 : read(f, buf, sizeof(buf) - 1);
	if (f >= 0)
		close(f);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p ? p[2] : '?';
}

/* Wait up to 5 s for arena @name to have no client; its STAT then. */
static int wait_no_clients(const char *name, struct kvarena_stat *s)
{
	for (int i = 0; i < 500; i++) {
		int err = stat_of(name, s);

		if (err || !s->nr_clients)
			return err;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

static const char *my_comm(void)
{
	static char comm[32];
	int f = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	ssize_t n = f < 0 ? -1 : read(f, comm, sizeof(comm) - 1);

	if (f >= 0)
		close(f);
	comm[n > 0 ? n : 0] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	return comm;
}

TEST(a_client_forked_away_is_listed_with_its_holder_and_killed)
{
	struct kvarena_stat s;
	pid_t holder, two[2];
	struct run r;
	int w;

	destroy("fork");
	CTL(&r, "create", "fork", "--frames", "8", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	ASSERT_EQ(0, forked_client("fork", "worker", 3, 1, &holder));

	/* The attacher is gone: the holder is listed, not its pid. */
	w = snprintf(NULL, 0, "%d", (int)holder);
	w = w > 4 ? w : 4;
	CTL(&r, "clients", "fork");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ(fmt("ARENA  ID  %*s  LABEL   MIN  MAX  HELD  SHARED  FILLED  TOKENS    FRAG  PEAK  FAILS\n"
			 "fork    1  %*d  worker    0    8     3       0      0B       0  100.0%%     3      0\n",
			 w, "PIDS", w, (int)holder), r.out);
	CTL(&r, "clients", "--json", "fork");
	EXPECT_TRUE(starts(r.out, fmt("[{\"arena\":\"fork\",\"id\":1,\"pids\":[%d],\"attach_pid\":null,\"label\":\"worker\",",
				      (int)holder)))
		TH_LOG("%s", r.out);
	CTL(&r, "metrics", "fork");
	EXPECT_NE(NULL, strstr(r.out, "kvarena_client_held_frames{arena=\"fork\",client=\"1\",label=\"worker\"} 3\n"))
		TH_LOG("%s", r.out);

	/* Stopped, it would never act on SIGTERM: kill continues it. */
	ASSERT_EQ(0, kill(holder, SIGSTOP));
	for (int i = 0; i < 500 && proc_state(holder) != 'T'; i++)
		usleep(10000);
	ASSERT_EQ('T', proc_state(holder));
	CTL(&r, "kill", "fork", "worker");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ(fmt("client 1 (worker) of arena \"fork\" is held by 1 process\n"
			 "  sent SIGTERM to %d (%s), and SIGCONT: it was stopped\n",
			 (int)holder, my_comm()), r.out);
	EXPECT_STREQ("", r.err);
	ASSERT_EQ(0, wait_no_clients("fork", &s));
	EXPECT_EQ(0, s.nr_held);
	EXPECT_EQ(3, s.frames_freed);

	/* One client, two holders: both listed, both signalled. */
	ASSERT_EQ(0, forked_client("fork", "pair", 2, 2, two));
	CTL(&r, "clients", "--json", "fork");
	EXPECT_TRUE(starts(r.out, fmt("[{\"arena\":\"fork\",\"id\":2,\"pids\":[%d,%d],\"attach_pid\":null,",
				      (int)(two[0] < two[1] ? two[0] : two[1]),
				      (int)(two[0] < two[1] ? two[1] : two[0]))))
		TH_LOG("%s", r.out);
	CTL(&r, "kill", "fork", "--id", "2", "-s", "KILL");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ(fmt("client 2 (pair) of arena \"fork\" is held by 2 processes\n"
			 "  sent SIGKILL to %d (%s)\n"
			 "  sent SIGKILL to %d (%s)\n",
			 (int)(two[0] < two[1] ? two[0] : two[1]), my_comm(),
			 (int)(two[0] < two[1] ? two[1] : two[0]), my_comm()),
		     r.out);
	ASSERT_EQ(0, wait_no_clients("fork", &s));
	EXPECT_EQ(0, s.nr_held);
	EXPECT_EQ(5, s.frames_freed);

	CTL(&r, "kill", "fork", "worker");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: kill: arena \"fork\" has no client labelled \"worker\" (see kvarenactl clients fork)\n",
		     r.err);
	EXPECT_EQ(0, destroy("fork"));
}

TEST(evict_takes_a_stopped_clients_frames_and_its_holder_lives_on)
{
	struct kvarena_stat s;
	pid_t holder;
	struct run r;

	destroy("ev");
	CTL(&r, "create", "ev", "--frames", "8", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	ASSERT_EQ(0, forked_client("ev", "stuck", 5, 1, &holder));
	ASSERT_EQ(0, kill(holder, SIGSTOP));
	CTL(&r, "evict", "ev", "stuck");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("evicted client 1 (stuck) of arena \"ev\": its 5 frames are back in the arena, its mappings revoked; its processes get ESHUTDOWN and should close the file\n",
		     r.out);
	EXPECT_STREQ("", r.err);
	ASSERT_EQ(0, stat_of("ev", &s));
	EXPECT_EQ(0, s.nr_held);
	EXPECT_EQ(0, s.nr_clients);
	/* The process still holds the file: it lives on. */
	EXPECT_EQ('T', proc_state(holder));
	CTL(&r, "evict", "ev", "stuck");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: evict: arena \"ev\" has no client labelled \"stuck\" (see kvarenactl clients ev)\n",
		     r.err);
	/* Out of the table, but its open file is named, and how to end it. */
	CTL(&r, "clients", "ev");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_TRUE(ends(r.out, fmt("evicted client 1 (stuck) of arena \"ev\" is still open in %d: kvarenactl kill ev --id 1\n",
				    (int)holder)))
		TH_LOG("%s", r.out);
	CTL(&r, "kill", "ev", "--id", "1", "-s", "KILL");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ(fmt("evicted client 1 (stuck) of arena \"ev\" is held by 1 process\n"
			 "  sent SIGKILL to %d (%s)\n", (int)holder, my_comm()),
		     r.out);
	for (int i = 0; i < 500 && kill(holder, 0) == 0 &&
			proc_state(holder) != 'Z'; i++)
		usleep(10000);
	CTL(&r, "clients", "ev");
	EXPECT_EQ(NULL, strstr(r.out, "evicted")) TH_LOG("%s", r.out);
	/* By label too, while one evicted file alone has it. */
	ASSERT_EQ(0, forked_client("ev", "stuck", 2, 1, &holder));
	CTL(&r, "evict", "ev", "stuck");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "kill", "ev", "stuck", "-s", "KILL");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ(fmt("evicted client 2 (stuck) of arena \"ev\" is held by 1 process\n"
			 "  sent SIGKILL to %d (%s)\n", (int)holder, my_comm()),
		     r.out);
	EXPECT_EQ(0, destroy("ev"));
}

TEST(evict_refuses_a_cuda_arena_and_says_why)
{
	struct kvarena_arena_create c = { .frame_size = 64 << 10,
					  .nr_frames = 2,
					  .mem_kind = KVARENA_MEM_CUDA };
	int fd = kva_open(O_RDWR), cl = kva_open(O_RDWR), null;
	struct run r;

	strcpy(c.name, "evg");
	ASSERT_EQ(0, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	null = open("/dev/null", O_RDWR);
	ASSERT_EQ(0, kva_set_backing(fd, "evg", 0, 1, null, 0));
	ASSERT_EQ(0, kva_set_backing(fd, "evg", 1, 1, null, 0));
	ASSERT_EQ(0, kva_attach(cl, "evg", "gpu", 0, 0, NULL));
	CTL(&r, "evict", "evg", "gpu");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: evict: \"evg\" is a CUDA arena: the module cannot revoke GPU memory a client imported; stop its processes instead (kvarenactl kill evg '#1')\n",
		     r.err);
	close(cl);
	close(null);
	EXPECT_EQ(0, kva_destroy(fd, "evg"));
	close(fd);
}

TEST(destroy_waits_for_clients_to_leave)
{
	struct kvarena_stat s;
	pid_t holder, killer;
	struct run r;

	destroy("wait");
	CTL(&r, "create", "wait", "--frames", "4", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	ASSERT_EQ(0, forked_client("wait", "stays", 1, 1, &holder));
	CTL(&r, "destroy", "wait", "--wait", "0.2");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: destroy: arena \"wait\" has 1 client attached after 0.200 s (kvarenactl clients wait)\n",
		     r.err);
	ASSERT_EQ(0, stat_of("wait", &s));

	/* It leaves in 0.3 s; destroy --wait 10 waits for that. */
	killer = fork();
	if (killer == 0) {
		usleep(300000);
		kill(holder, SIGKILL);
		_exit(0);
	}
	CTL(&r, "destroy", "wait", "--wait", "10");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("", r.err);
	EXPECT_EQ(-ENOENT, stat_of("wait", &s));
	waitpid(killer, NULL, 0);
}

/* ---- resize ------------------------------------------------------------------ */

TEST_F(ctl, limit_takes_sizes_in_the_arenas_frames)
{
	struct run r;

	/* 448Ki of 64Ki frames: 7. */
	CTL(&r, "limit", "ctl", "vllm-a", "--max", "448Ki");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "clients", "ctl", "-j");
	EXPECT_NE(NULL, strstr(r.out, "\"min_frames\":2,\"max_frames\":7,"))
		TH_LOG("%s", r.out);
	CTL(&r, "limit", "ctl", "vllm-a", "--max", "100K");
	EXPECT_EQ(2, r.rc);
	EXPECT_STREQ("kvarenactl: limit: --max \"100K\": not a whole number of 64Ki frames\nTry 'kvarenactl help limit'.\n",
		     r.err);
	CTL(&r, "limit", "ctl", "vllm-a", "--min", "1Mi", "--max", "512Ki");
	EXPECT_EQ(2, r.rc);
	EXPECT_STREQ("kvarenactl: limit: --min 16 is above --max 8\nTry 'kvarenactl help limit'.\n",
		     r.err);
	CTL(&r, "limit", "ctl", "vllm-a", "--max", "2Mi");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: limit: --max 32 is above the arena's 16 frames\n",
		     r.err);
	/* A fixed arena's views say nothing of resizing. */
	CTL(&r, "stat", "ctl");
	EXPECT_EQ(NULL, strstr(r.out, "resize")) TH_LOG("%s", r.out);
}

TEST(create_max_frames_and_resize_give_memory_back_and_take_it_again)
{
	struct kvarena_stat s;
	long before, kib;
	char cg[128];
	struct run r;

	destroy("rs");
	ASSERT_EQ(0, kva_memcg_enter("kvarenactl-resize", cg, sizeof(cg)));
	/* The tool's own memfd is shmem of this group too: made first. */
	CTL(&r, "--version");
	ASSERT_EQ(0, r.rc);
	before = kva_memcg_shmem_kib(cg);
	ASSERT_LE(0, before);
	CTL(&r, "create", "rs", "--frames", "8Mi", "--max-frames", "16",
	    "--frame-size", "1M");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_TRUE(starts(r.out, "arena rs: 8 frames of 1.0Mi, up to 16 (resize), 8.0Mi of host memory; "))
		TH_LOG("%s", r.out);
	ASSERT_EQ(0, stat_of("rs", &s));
	EXPECT_EQ(8, s.nr_frames);
	EXPECT_EQ(16, s.max_frames);
	EXPECT_EQ(8, s.nr_absent);
	EXPECT_EQ(8, s.nr_free);
	/* Sparse: pages for the 8 frames in the arena only. */
	kib = kva_memcg_shmem_kib(cg) - before;
	EXPECT_LE(8 * 1024 - 256, kib);
	EXPECT_GE(8 * 1024 + 256, kib);
	CTL(&r, "stat", "rs");
	EXPECT_NE(NULL, strstr(r.out, "\nresize: 8 of at most 16 frames (8.0Mi of 16Mi), 8 absent; 0 frames taken out by shrinks\n"))
		TH_LOG("%s", r.out);

	CTL(&r, "resize", "rs", "--frames", "4");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("resize: rs is 4 frames (4.0Mi); 4 frames (4.0Mi) of memory returned\n",
		     r.out);
	kib = kva_memcg_shmem_kib(cg) - before;
	EXPECT_LE(4 * 1024 - 256, kib);
	EXPECT_GE(4 * 1024 + 256, kib);

	CTL(&r, "resize", "rs", "--bytes", "16Mi");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("resize: rs is 16 frames (16Mi); 12 frames (12Mi) brought in, new memory\n",
		     r.out);
	kib = kva_memcg_shmem_kib(cg) - before;
	EXPECT_LE(16 * 1024 - 256, kib);
	EXPECT_GE(16 * 1024 + 256, kib);
	CTL(&r, "stat", "rs", "-j");
	EXPECT_NE(NULL, strstr(r.out, "\"resize\":{\"max_frames\":16,\"absent\":0,\"shrinking\":0,\"retired\":4}"))
		TH_LOG("%s", r.out);
	CTL(&r, "metrics", "rs");
	EXPECT_NE(NULL, strstr(r.out, "\nkvarena_frames_retired_total{arena=\"rs\"} 4\n"))
		TH_LOG("%s", r.out);

	/* Refusals: beyond the table, not whole frames, no capability. */
	CTL(&r, "resize", "rs", "--frames", "17");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: resize: \"rs\" may grow to 16 frames (16Mi), not 17 (17Mi): its --max-frames at create\n",
		     r.err);
	CTL(&r, "resize", "rs", "--bytes", "1.5Mi");
	EXPECT_EQ(2, r.rc);
	EXPECT_STREQ("kvarenactl: resize: --bytes \"1.5Mi\": not a whole number of 1Mi frames\nTry 'kvarenactl help resize'.\n",
		     r.err);
	CTL_AS(&r, NOCAP, "resize", "rs", "--frames", "2");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: resize: permission denied (needs CAP_SYS_ADMIN)\n",
		     r.err);
	CTL(&r, "resize", "nonesuch", "--frames", "2");
	EXPECT_EQ(1, r.rc);
	EXPECT_TRUE(starts(r.err, "kvarenactl: resize: ")) TH_LOG("%s", r.err);
	EXPECT_EQ(0, destroy("rs"));
	kib = kva_memcg_shmem_kib(cg) - before;
	EXPECT_GE(256, kib);
	kva_memcg_leave(cg);
}

TEST(resize_waits_for_held_frames_and_cancel_stops_it)
{
	struct kvarena_stat s;
	pid_t holder, killer;
	struct run r;

	destroy("rw");
	CTL(&r, "create", "rw", "--frames", "4", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	ASSERT_EQ(0, forked_client("rw", "holds", 3, 1, &holder));

	/* 1 free frame goes at once; 1 of the 3 held is waited for. */
	CTL(&r, "resize", "rw", "--frames", "2", "--wait", "0.2");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("resize: rw is 3 frames (192Ki), shrinking to 2 frames (128Ki); 1 frame (64Ki) of memory returned; 1 frame (64Ki) still held, taken as they are freed\n",
		     r.out);
	EXPECT_STREQ("kvarenactl: resize: after 0.200 s, 1 frame (64Ki) of \"rw\" still held: the shrink goes on as they are freed (kvarenactl resize rw --cancel stops it)\n",
		     r.err);
	ASSERT_EQ(0, stat_of("rw", &s));
	EXPECT_EQ(3, s.nr_frames);
	EXPECT_EQ(1, s.nr_shrinking);
	CTL(&r, "stat", "rw");
	EXPECT_NE(NULL, strstr(r.out, ", SHRINKING to 2\n")) TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, "\nresize: 3 of at most 4 frames (192Ki of 256Ki), 1 absent; shrinking to 2, 1 frame still held; 1 frame taken out by shrinks\n"))
		TH_LOG("%s", r.out);

	/* The holder goes in 0.3 s; --wait 10 sees the shrink done. */
	killer = fork();
	if (killer == 0) {
		usleep(300000);
		kill(holder, SIGKILL);
		_exit(0);
	}
	CTL(&r, "resize", "rw", "--frames", "2", "--wait", "10");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("resize: rw is 2 frames (128Ki); 1 frame (64Ki) of memory returned\n",
		     r.out);
	waitpid(killer, NULL, 0);
	ASSERT_EQ(0, wait_no_clients("rw", &s));
	EXPECT_EQ(2, s.nr_frames);
	EXPECT_EQ(0, s.nr_shrinking);

	/* Both frames held: a shrink to 1 waits until --cancel. */
	ASSERT_EQ(0, forked_client("rw", "holds", 2, 1, &holder));
	CTL(&r, "resize", "rw", "--frames", "1");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("resize: rw is 2 frames (128Ki), shrinking to 1 frame (64Ki); 1 frame (64Ki) still held, taken as they are freed\n",
		     r.out);
	CTL(&r, "resize", "rw", "--cancel");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("resize: rw is 2 frames (128Ki); no shrink waits, the frames still held stay\n",
		     r.out);
	ASSERT_EQ(0, stat_of("rw", &s));
	EXPECT_EQ(2, s.nr_frames);
	EXPECT_EQ(0, s.nr_shrinking);
	kill(holder, SIGKILL);
	ASSERT_EQ(0, wait_no_clients("rw", &s));
	EXPECT_EQ(0, destroy("rw"));
}

TEST(resize_below_the_clients_guarantees_is_refused)
{
	struct client c = { 0 };
	struct kvarena_stat s;
	struct run r;

	destroy("rg");
	CTL(&r, "create", "rg", "--frames", "4", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	ASSERT_EQ(0, client_start(&c, "rg", "min3", 3, 0));
	CTL(&r, "resize", "rg", "--frames", "2");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: resize: the clients' guarantees (--min) of \"rg\" add up to more than 2 frames: lower them first (kvarenactl clients rg)\n",
		     r.err);
	ASSERT_EQ(0, stat_of("rg", &s));
	EXPECT_EQ(4, s.nr_frames);
	client_stop(&c, 0);
	EXPECT_EQ(0, destroy("rg"));
}

/* ---- tier and agent ----------------------------------------------------------- */

#define TIER_FS	(64 * 1024)		/* the tier tests' frame size */

/* Byte @j of the frame with key @i of chain @tag: no two frames alike. */
static unsigned char tier_pat(__u64 tag, __u32 i, size_t j)
{
	return (unsigned char)(tag * 131 + i * 29 + j * 7 + (j >> 12));
}

/* Frame @h of @fd's client holds key @i of chain @tag, every byte. */
static bool tier_intact(int fd, __u64 h, __u64 tag, __u32 i)
{
	unsigned char *p = kva_map_frame(fd, h, PROT_READ);
	bool ok = p != MAP_FAILED;

	for (size_t j = 0; ok && j < TIER_FS; j++)
		ok = p[j] == tier_pat(tag, i, j);
	if (p != MAP_FAILED)
		munmap(p, TIER_FS);
	return ok;
}

/* A child's exit status, or 1000 + its signal; -1 if it never ran. */
static int reap_child(pid_t pid)
{
	int status;

	return pid > 0 && waitpid(pid, &status, 0) == pid ?
	       kva_exited(status) : -1;
}

/*
 * A process of root that publishes @n frames of chain @tag in @arena
 * (filled with tier_pat() where @fill) and lets them go, so that they are
 * cached: 0, or the step that failed.
 */
static int tier_publish(const char *arena, __u64 tag, __u32 n, bool fill)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct kvarena_prefix_entry e[16];
		struct kvarena_prefix p = {
			.entries = (__u64)(unsigned long)e, .count = n,
		};
		__u64 h[16];
		int fd = kva_open(O_RDWR);

		if (fd < 0 || n > 16 ||
		    kva_attach(fd, arena, "publisher", 0, 0, NULL) ||
		    kva_alloc(fd, h, n, 0) != (int)n)
			_exit(1);
		for (__u32 i = 0; fill && i < n; i++) {
			unsigned char *m;

			m = kva_map_frame(fd, h[i], PROT_READ | PROT_WRITE);

			if (m == MAP_FAILED)
				_exit(2);
			for (size_t j = 0; j < TIER_FS; j++)
				m[j] = tier_pat(tag, i, j);
			munmap(m, TIER_FS);
		}
		client_chain(e, n, tag, h);
		if (kva_ioctl(fd, KVARENA_IOC_PUBLISH, &p) || p.nr_done != n ||
		    kva_free(fd, h, n))
			_exit(3);
		_exit(0);
	}
	return reap_child(pid);
}

/*
 * A process of root that finds keys 0..@n-1 of chain @tag in @arena -
 * with LOOKUP, or where @promote with PROMOTE from its lower tier, after
 * LOOKUP found them all below - and checks every byte of them: 0, or the
 * step that failed.
 */
static int tier_check(const char *arena, __u64 tag, __u32 n, bool promote)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct kvarena_prefix_entry e[16];
		struct kvarena_prefix lk = {
			.entries = (__u64)(unsigned long)e, .count = n,
			.flags = promote ? KVARENA_LOOKUP_LOWER : 0,
		};
		struct kvarena_promote pr = {
			.entries = (__u64)(unsigned long)e, .count = n,
			.timeout_ms = 20000,
		};
		int fd = kva_open(O_RDWR);

		if (fd < 0 || n > 16 ||
		    kva_attach(fd, arena, "checker", 0, 0, NULL))
			_exit(1);
		client_chain(e, n, tag, NULL);
		if (kva_ioctl(fd, KVARENA_IOC_LOOKUP, &lk))
			_exit(2);
		if (promote) {
			if (lk.nr_done || lk.nr_lower != n)
				_exit(3);
			client_chain(e, n, tag, NULL);
			if (kva_ioctl(fd, KVARENA_IOC_PROMOTE, &pr) ||
			    pr.nr_done != n)
				_exit(4);
		} else if (lk.nr_done != n) {
			_exit(3);
		}
		for (__u32 i = 0; i < n; i++)
			if (!tier_intact(fd, e[i].handle, tag, i))
				_exit(5);
		_exit(0);
	}
	return reap_child(pid);
}

/* Wait up to 10 s for arena @name to have @free free, @cached cached frames. */
static bool tier_settles(const char *name, __u32 free, __u32 cached)
{
	struct kvarena_stat s = { 0 };

	for (int i = 0; i < 1000; i++) {
		if (!stat_of(name, &s) && s.nr_free == free &&
		    s.nr_cached == cached)
			return true;
		usleep(10000);
	}
	fprintf(stderr, "# %s: %u free, %u cached; want %u, %u\n", name,
		s.nr_free, s.nr_cached, free, cached);
	return false;
}

/* kvarenactl run in the background as root: its pid and its output files. */
struct bg_run {
	pid_t pid;
	int out, err;
};

static void bg_start(struct bg_run *b, const char *const argv[])
{
	int exe = kvactl_exe();

	b->out = memfd("out", MFD_NOEXEC_SEAL);
	b->err = memfd("err", MFD_NOEXEC_SEAL);
	b->pid = -1;
	if (exe < 0 || b->out < 0 || b->err < 0)
		return;
	b->pid = fork();
	if (b->pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		if (null < 0 || dup2(null, 0) < 0 || dup2(b->out, 1) < 0 ||
		    dup2(b->err, 2) < 0)
			_exit(123);
		fexecve(exe, (char *const *)argv, environ);
		_exit(124);
	}
}

/* Send @sig (if any) and wait for it: its exit status and output in @r. */
static void bg_wait(struct bg_run *b, struct run *r, int sig)
{
	r->out[0] = r->err[0] = '\0';
	if (sig && b->pid > 0)
		kill(b->pid, sig);
	r->rc = reap_child(b->pid);
	if (b->out >= 0)
		slurp(b->out, r->out, sizeof(r->out));
	if (b->err >= 0)
		slurp(b->err, r->err, sizeof(r->err));
}

/*
 * Two host arenas of 64 KiB frames, linked with tier; a process
 * publishes filled frames and leaves.  kvarenactl agent -n copies some
 * down and stops; one in the background copies the rest, and later ones,
 * down as they come, and copies frames up for a PROMOTE; SIGTERM stops
 * it, and it says what it copied.  Every byte arrives, below and back
 * above, and the tier shows in stat.
 */
TEST(tier_links_two_arenas_and_agent_copies_frames_down_and_up)
{
	const __u64 tag_a = 0x7a, tag_b = 0x7b;
	struct kvarena_stat s;
	struct bg_run bg;
	pid_t promoter;
	struct run r;

	destroy("tup");
	destroy("tlo");
	CTL(&r, "create", "tup", "--frames", "8", "--frame-size", "64K",
	    "--low-watermark", "2");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "create", "tlo", "--frames", "16", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);

	/* Every cached frame goes down: 8 frames, all of them free. */
	CTL(&r, "tier", "tup", "--lower", "tlo", "--free-target", "512Ki");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("tier: tlo is the lower tier of tup: cached frames of tup go down to it while fewer than 8 frames (512Ki) of tup are free; kvarenactl agent tup copies them\n",
		     r.out);
	EXPECT_STREQ("", r.err);
	CTL(&r, "stat", "tup");
	EXPECT_NE(NULL, strstr(r.out, "\ntier: lower tier tlo (cached frames go there; kvarenactl agent copies them)\n"))
		TH_LOG("%s", r.out);
	CTL(&r, "stat", "tlo");
	EXPECT_NE(NULL, strstr(r.out, "\ntier: the lower tier of tup\n"))
		TH_LOG("%s", r.out);
	CTL(&r, "stat", "tup", "-j");
	EXPECT_NE(NULL, strstr(r.out, ",\"lower_tier\":\"tlo\"")) TH_LOG("%s", r.out);
	CTL(&r, "metrics");
	EXPECT_NE(NULL, strstr(r.out, "\nkvarena_lower_tier_info{arena=\"tup\",lower=\"tlo\"} 1\n"))
		TH_LOG("%s", r.out);

	/* 6 frames cached above; -n 4 copies 4 of them down, oldest first. */
	ASSERT_EQ(0, tier_publish("tup", tag_a, 6, true));
	ASSERT_TRUE(tier_settles("tup", 2, 6));
	CTL(&r, "agent", "tup", "-n", "4");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_TRUE(starts(r.out, "tup: 4 frames demoted, 0 promoted (256Ki) in "))
		TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, " s, copying at ")) TH_LOG("%s", r.out);
	EXPECT_TRUE(ends(r.out, "/s\n")) TH_LOG("%s", r.out);
	EXPECT_EQ(strlen(r.out) - 1, (size_t)(strchr(r.out, '\n') - r.out));
	EXPECT_STREQ("", r.err);
	ASSERT_EQ(0, wait_no_clients("tup", &s));
	EXPECT_EQ(6, s.nr_free);
	EXPECT_EQ(2, s.nr_cached);
	ASSERT_EQ(0, wait_no_clients("tlo", &s));
	EXPECT_EQ(12, s.nr_free);
	EXPECT_EQ(4, s.nr_cached);

	/* In the background: the other 2, then 3 published meanwhile. */
	bg_start(&bg, ARGV("agent", "tup"));
	ASSERT_LT(0, bg.pid);
	EXPECT_TRUE(tier_settles("tup", 8, 0));
	EXPECT_TRUE(tier_settles("tlo", 10, 6));
	ASSERT_EQ(0, tier_publish("tup", tag_b, 3, true));
	EXPECT_TRUE(tier_settles("tup", 8, 0));
	EXPECT_TRUE(tier_settles("tlo", 7, 9));
	/* Up again, byte for byte, for a client that asks (PROMOTE). */
	EXPECT_EQ(0, tier_check("tup", tag_a, 6, true));
	/* Cached above once more, they go down without a copy: 9 below. */
	EXPECT_TRUE(tier_settles("tup", 8, 0));
	EXPECT_TRUE(tier_settles("tlo", 7, 9));
	bg_wait(&bg, &r, SIGTERM);
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_TRUE(starts(r.out, "tup: 5 frames demoted, 6 promoted (704Ki) in "))
		TH_LOG("%s", r.out);
	EXPECT_TRUE(ends(r.out, "/s\n")) TH_LOG("%s", r.out);
	EXPECT_STREQ("", r.err);

	/* Below, every byte of both chains; above, every frame free. */
	EXPECT_EQ(0, tier_check("tlo", tag_a, 6, false));
	EXPECT_EQ(0, tier_check("tlo", tag_b, 3, false));
	ASSERT_EQ(0, wait_no_clients("tlo", &s));
	EXPECT_EQ(7, s.nr_free);
	EXPECT_EQ(9, s.nr_cached);
	ASSERT_EQ(0, wait_no_clients("tup", &s));
	EXPECT_EQ(8, s.nr_free);
	EXPECT_EQ(0, s.nr_cached);

	/* Nothing to copy: --wait ends it, having copied nothing. */
	CTL(&r, "agent", "tup", "--wait", "0.3");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_TRUE(starts(r.out, "tup: 0 frames demoted, 0 promoted (0B) in 0."))
		TH_LOG("%s", r.out);
	EXPECT_TRUE(ends(r.out, ", copying at 0B/s\n")) TH_LOG("%s", r.out);

	/*
	 * A PROMOTE that waits for an agent (none runs now) is a copy under
	 * way: --none waits for it to end (here, its timeout).
	 */
	promoter = fork();
	if (promoter == 0) {
		struct kvarena_prefix_entry e[3];
		struct kvarena_promote pr = {
			.entries = (__u64)(unsigned long)e, .count = 3,
			.timeout_ms = 3000,
		};
		int cfd = kva_open(O_RDWR);

		if (cfd < 0 || kva_attach(cfd, "tup", "promoter", 0, 0, NULL))
			_exit(1);
		client_chain(e, 3, tag_b, NULL);
		_exit(kva_ioctl(cfd, KVARENA_IOC_PROMOTE, &pr) == -ETIMEDOUT ?
		      0 : 2);
	}
	ASSERT_LT(0, promoter);
	/* Its 3 fresh frames are taken from the free ones once it waits. */
	EXPECT_TRUE(tier_settles("tup", 5, 0));
	CTL(&r, "tier", "tup", "--none");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: copies between \"tup\" and \"tlo\" are under way: try again once they are done\n",
		     r.err);
	EXPECT_EQ(0, reap_child(promoter));
	EXPECT_TRUE(tier_settles("tup", 8, 0));
	EXPECT_TRUE(tier_settles("tlo", 7, 9));

	/* The lower tier stays while it is one; --none lets it go. */
	CTL(&r, "destroy", "tlo");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: destroy: arena \"tlo\" is the lower tier of \"tup\" (kvarenactl tier tup --none first)\n",
		     r.err);
	CTL(&r, "tier", "tup", "--none");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("tier: tup has no lower tier now; tlo keeps what it holds, an arena of its own again\n",
		     r.out);
	CTL(&r, "stat", "tup");
	EXPECT_EQ(NULL, strstr(r.out, "\ntier: ")) TH_LOG("%s", r.out);
	ASSERT_EQ(0, stat_of("tlo", &s));
	EXPECT_EQ(0, s.tier);
	EXPECT_EQ(9, s.nr_cached);
	CTL(&r, "tier", "tup", "--none");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: \"tup\" has no lower tier\n", r.err);
	CTL(&r, "agent", "tup");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("", r.out);
	EXPECT_STREQ("kvarenactl: agent: \"tup\" has no lower tier (kvarenactl tier tup --lower LOWER first)\n",
		     r.err);

	/* Without --free-target, the low watermark decides. */
	CTL(&r, "tier", "tup", "--lower", "tlo");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("tier: tlo is the lower tier of tup: cached frames of tup go down to it while fewer than 2 frames (128Ki) of tup are free (its low watermark); kvarenactl agent tup copies them\n",
		     r.out);
	/* Destroying the upper arena takes the tier with it. */
	EXPECT_EQ(0, destroy("tup"));
	EXPECT_EQ(0, destroy("tlo"));
}

#define FDISK	"/tmp/kvarenactl-fdisk"	/* tmpfs, in the VM */

/*
 * How many of the first @n frames of file @path hold key @i of chain
 * @tag, every byte.
 */
static int file_holds(const char *path, __u32 n, __u64 tag, __u32 i)
{
	unsigned char *buf = malloc(TIER_FS);
	int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;

	for (__u32 k = 0; buf && fd >= 0 && k < n; k++) {
		bool same = pread(fd, buf, TIER_FS, (off_t)k * TIER_FS) ==
			    TIER_FS;

		for (size_t j = 0; same && j < TIER_FS; j++)
			same = buf[j] == tier_pat(tag, i, j);
		found += same;
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return found;
}

/* What agent says about @dir's filesystem, where it takes no O_DIRECT. */
static const char *no_direct_msg(const char *dir, const char *lower)
{
	char probe[64];
	int fd, err;

	snprintf(probe, sizeof(probe), "%s/kvarenactl-probe", dir);
	fd = open(probe, O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
	err = errno;
	unlink(probe);
	if (fd >= 0) {
		close(fd);
		return "";
	}
	return fmt("kvarenactl: agent: the file of \"%s\" takes no O_DIRECT (%s): reading and writing it through the page cache\n",
		   lower, strerror(err));
}

/*
 * A file arena below a host arena: create --file makes its file (mode
 * 0600, allocated), the agent writes cached frames into it - with
 * O_DIRECT where the filesystem takes it (tmpfs from Linux 6.6), else
 * through the page cache, said once - and reads them back up for a
 * PROMOTE, every byte.  A file arena is "file" in the views, "DISK" in
 * its events; destroy leaves the file.
 */
TEST(tier_to_a_file_arena_writes_frames_to_the_file_and_promote_reads_them)
{
	const __u64 tag = 0x7f;
	const char *buffered;
	struct kvarena_stat s;
	struct bg_run bg;
	struct stat st;
	struct run r;

	destroy("fup");
	destroy("fdisk");
	unlink(FDISK);
	buffered = no_direct_msg("/tmp", "fdisk");
	CTL(&r, "create", "fup", "--frames", "8", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "create", "fdisk", "--frames", "16", "--frame-size", "64K",
	    "--file", FDISK);
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("arena fdisk: 16 frames of 64Ki, 1.0Mi in file \"" FDISK "\"\n",
		     r.out);
	EXPECT_STREQ("", r.err);
	ASSERT_EQ(0, stat(FDISK, &st));
	EXPECT_TRUE(S_ISREG(st.st_mode));
	EXPECT_EQ(0600, st.st_mode & 07777);
	EXPECT_EQ(16 * TIER_FS, st.st_size);
	EXPECT_LE(16 * TIER_FS / 512, st.st_blocks);
	ASSERT_EQ(0, stat_of("fdisk", &s));
	EXPECT_EQ(KVARENA_MEM_FILE, s.mem_kind);
	EXPECT_EQ(16, s.nr_backed);
	CTL(&r, "stat", "fdisk");
	EXPECT_TRUE(starts(r.out, "arena fdisk: file, 16 frames of 64Ki, 0 clients\n"))
		TH_LOG("%s", r.out);
	CTL(&r, "stat", "fdisk", "-j");
	EXPECT_TRUE(starts(r.out, "[{\"name\":\"fdisk\",\"mem_kind\":\"file\",\"mem_dev\":0,"))
		TH_LOG("%s", r.out);
	CTL(&r, "metrics", "fdisk");
	EXPECT_NE(NULL, strstr(r.out, "\nkvarena_arena_info{arena=\"fdisk\",mem_kind=\"file\",mem_dev=\"0\"} 1\n"))
		TH_LOG("%s", r.out);
	CTL(&r, "resize", "fdisk", "--frames", "8");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: resize: \"fdisk\" is a file arena: its frames are ranges of its file, and it keeps its size (destroy it and create it again)\n",
		     r.err);

	/* Every cached frame goes down, into the file. */
	CTL(&r, "tier", "fup", "--lower", "fdisk", "--free-target", "512Ki");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("tier: fdisk is the lower tier of fup: cached frames of fup go down to it while fewer than 8 frames (512Ki) of fup are free; kvarenactl agent fup copies them\n",
		     r.out);
	ASSERT_EQ(0, tier_publish("fup", tag, 6, true));
	ASSERT_TRUE(tier_settles("fup", 2, 6));
	CTL(&r, "agent", "fup", "--wait", "1");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_TRUE(starts(r.out, "fup: 6 frames demoted, 0 promoted (384Ki) in "))
		TH_LOG("%s", r.out);
	EXPECT_STREQ(buffered, r.err);
	ASSERT_EQ(0, wait_no_clients("fup", &s));
	EXPECT_EQ(8, s.nr_free);
	EXPECT_EQ(0, s.nr_cached);
	ASSERT_EQ(0, wait_no_clients("fdisk", &s));
	EXPECT_EQ(10, s.nr_free);
	EXPECT_EQ(6, s.nr_cached);
	for (__u32 key = 0; key < 6; key++) {
		EXPECT_EQ(1, file_holds(FDISK, 16, tag, key))
			TH_LOG("key %u", key);
	}

	/* The lower arena's events: its blocks are on a disk. */
	bg_start(&bg, ARGV("events", "fdisk", "--oldest", "-n", "1"));
	ASSERT_LT(0, bg.pid);
	usleep(500000);
	bg_wait(&bg, &r, SIGTERM);
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_NE(NULL, strstr(r.out, ",\"medium\":\"DISK\",")) TH_LOG("%s", r.out);

	/* Up again for a PROMOTE, read from the file, byte for byte. */
	bg_start(&bg, ARGV("agent", "fup"));
	ASSERT_LT(0, bg.pid);
	EXPECT_EQ(0, tier_check("fup", tag, 6, true));
	/* Cached above once more, they go down without a copy. */
	EXPECT_TRUE(tier_settles("fup", 8, 0));
	EXPECT_TRUE(tier_settles("fdisk", 10, 6));
	bg_wait(&bg, &r, SIGTERM);
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_TRUE(starts(r.out, "fup: 0 frames demoted, 6 promoted (384Ki) in "))
		TH_LOG("%s", r.out);
	EXPECT_STREQ(buffered, r.err);

	/* A directory is no file; a taken name leaves no file behind. */
	CTL(&r, "create", "fdir", "--frames", "4", "--frame-size", "64K",
	    "--file", "/tmp");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("", r.out);
	EXPECT_STREQ("kvarenactl: create: --file \"/tmp\" is a directory: a file arena needs a regular file\n",
		     r.err);
	EXPECT_EQ(-ENOENT, stat_of("fdir", &s));
	CTL(&r, "create", "fdisk", "--frames", "4", "--frame-size", "64K",
	    "--file", FDISK "2");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: create: an arena named \"fdisk\" exists already\n",
		     r.err);
	EXPECT_EQ(-1, stat(FDISK "2", &st));
	EXPECT_EQ(ENOENT, errno);

	/* Destroy leaves the file, and a file long enough is used as it is. */
	CTL(&r, "tier", "fup", "--none");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_EQ(0, destroy("fdisk"));
	CTL(&r, "create", "fdisk", "--frames", "8", "--frame-size", "64K",
	    "--file", FDISK);
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	ASSERT_EQ(0, stat(FDISK, &st));
	EXPECT_EQ(16 * TIER_FS, st.st_size);
	for (__u32 key = 0; key < 6; key++) {
		EXPECT_EQ(1, file_holds(FDISK, 16, tag, key))
			TH_LOG("key %u", key);
	}
	EXPECT_EQ(0, destroy("fdisk"));
	EXPECT_EQ(0, destroy("fup"));
	EXPECT_EQ(0, unlink(FDISK));
}

/*
 * What tier and agent refuse, and how they say it: no capability, no
 * such arena, a second tier, a lower arena that cannot be one, an agent
 * of an arena without a tier or of its lower arena, a file arena below a
 * CUDA arena, a caller that is not the owner, and frames that cannot be
 * mapped (a CUDA arena's).
 */
TEST(tier_and_agent_refusals_say_why)
{
	struct kvarena_arena_create c = { .frame_size = TIER_FS,
					  .nr_frames = 4,
					  .mem_kind = KVARENA_MEM_CUDA };
	int fd = kva_open(O_RDWR), null = open("/dev/null", O_RDWR);
	struct kvarena_stat s;
	struct run r;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, null);
	destroy("ru");
	destroy("rgpu");
	destroy("rl");
	destroy("rl2");
	destroy("rbig");
	destroy("rfile");
	CTL(&r, "create", "ru", "--frames", "4", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "create", "rl", "--frames", "4", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "create", "rl2", "--frames", "8", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "create", "rbig", "--frames", "2", "--frame-size", "128K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "create", "rfile", "--frames", "4", "--frame-size", "64K",
	    "--file", "/tmp/kvarenactl-rfile");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	/* A CUDA arena as the module sees one; its frames do not map. */
	strcpy(c.name, "rgpu");
	ASSERT_EQ(0, kva_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c));
	for (__u32 i = 0; i < c.nr_frames; i++)
		ASSERT_EQ(0, kva_set_backing(fd, "rgpu", i, 1, null, 0));

	CTL_AS(&r, NOCAP, "tier", "ru", "--lower", "rl");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: permission denied (needs CAP_SYS_ADMIN)\n",
		     r.err);
	ASSERT_EQ(0, chmod(KVARENA_DEVICE, 0666));
	CTL_AS(&r, NOBODY, "tier", "ru", "--lower", "rl");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("", r.out);
	EXPECT_STREQ("kvarenactl: tier: permission denied (needs CAP_SYS_ADMIN)\n",
		     r.err);
	ASSERT_EQ(0, chmod(KVARENA_DEVICE, 0660));
	ASSERT_EQ(0, stat_of("ru", &s));
	EXPECT_EQ(0, s.tier);

	CTL(&r, "tier", "nosuch", "--lower", "rl");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: no arena named \"nosuch\"\n", r.err);
	CTL(&r, "tier", "ru", "--lower", "nosuch");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: no arena named \"nosuch\"\n", r.err);
	CTL(&r, "tier", "ru", "--lower", "rbig");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: \"rbig\" cannot be the lower tier of \"ru\": its frames are 128Ki, those of \"ru\" 64Ki (LOWER must be a host arena, or a file arena below a host arena, with frames of 64Ki, below no other arena and with no lower tier of its own)\n",
		     r.err);
	CTL(&r, "tier", "ru", "--lower", "rgpu");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: \"rgpu\" cannot be the lower tier of \"ru\": it is a cuda arena (LOWER must be a host arena, or a file arena below a host arena, with frames of 64Ki, below no other arena and with no lower tier of its own)\n",
		     r.err);
	/* A file arena goes below a host arena only. */
	CTL(&r, "tier", "rgpu", "--lower", "rfile");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: \"rfile\" cannot be the lower tier of \"rgpu\": it is a file arena, and \"rgpu\" a cuda arena (LOWER must be a host arena, or a file arena below a host arena, with frames of 64Ki, below no other arena and with no lower tier of its own)\n",
		     r.err);
	CTL(&r, "tier", "rfile", "--lower", "rl");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: \"rfile\" is a file arena: it goes below a host arena, and has no lower tier of its own\n",
		     r.err);
	ASSERT_EQ(0, stat_of("rfile", &s));
	EXPECT_EQ(0, s.tier);
	CTL(&r, "tier", "ru", "--lower", "rl", "--free-target", "5");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: --free-target 5 is above the arena's 4 frames\n",
		     r.err);
	CTL(&r, "tier", "ru", "--lower", "rl", "--free-target", "100K");
	EXPECT_EQ(2, r.rc);
	EXPECT_STREQ("kvarenactl: tier: --free-target \"100K\": not a whole number of 64Ki frames\nTry 'kvarenactl help tier'.\n",
		     r.err);

	/* Linked: a second tier, or a lower arena that is one, is refused. */
	CTL(&r, "tier", "ru", "--lower", "rl", "--free-target", "4");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "tier", "ru", "--lower", "rl2");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: \"ru\" has a lower tier already, \"rl\" (kvarenactl tier ru --none first)\n",
		     r.err);
	CTL(&r, "tier", "rl2", "--lower", "rl");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: \"rl\" cannot be the lower tier of \"rl2\": it is the lower tier of \"ru\" already (LOWER must be a host arena, or a file arena below a host arena, with frames of 64Ki, below no other arena and with no lower tier of its own)\n",
		     r.err);
	CTL(&r, "tier", "rl", "--lower", "rl2");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: \"rl\" is the lower tier of \"ru\": a lower tier has none of its own\n",
		     r.err);
	CTL(&r, "tier", "rl2", "--lower", "ru");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: \"ru\" cannot be the lower tier of \"rl2\": it has a lower tier of its own, \"rl\" (LOWER must be a host arena, or a file arena below a host arena, with frames of 64Ki, below no other arena and with no lower tier of its own)\n",
		     r.err);
	CTL_AS(&r, NOCAP, "tier", "ru", "--none");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: permission denied (needs CAP_SYS_ADMIN)\n",
		     r.err);

	/* The agent: of the upper arena, and of its owner or root only. */
	CTL(&r, "agent", "rl");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: agent: \"rl\" is the lower tier of \"ru\": run the agent of the upper arena (kvarenactl agent ru)\n",
		     r.err);
	CTL(&r, "agent", "rl2", "-n", "1");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("", r.out);
	EXPECT_STREQ("kvarenactl: agent: \"rl2\" has no lower tier (kvarenactl tier rl2 --lower LOWER first)\n",
		     r.err);
	CTL(&r, "agent", "nosuch");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: agent: no arena named \"nosuch\"\n", r.err);
	ASSERT_EQ(0, chmod(KVARENA_DEVICE, 0666));
	CTL_AS(&r, NOBODY, "agent", "ru", "--wait", "0");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: agent: permission denied: only the owner of \"ru\" or CAP_SYS_ADMIN may copy its frames\n",
		     r.err);
	EXPECT_TRUE(starts(r.out, "ru: 0 frames demoted, 0 promoted (0B) in "))
		TH_LOG("%s", r.out);
	ASSERT_EQ(0, chmod(KVARENA_DEVICE, 0660));
	CTL(&r, "tier", "ru", "--none");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);

	/*
	 * A CUDA arena's frames are GPU memory: libkvarena's agent copies
	 * them, which this statically linked kvarenactl cannot load.  It
	 * says so before it takes any copy: the frames stay cached above
	 * and nothing is published below.
	 */
	CTL(&r, "tier", "rgpu", "--lower", "rl2", "--free-target", "4");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	ASSERT_EQ(0, tier_publish("rgpu", 0x9, 3, false));
	ASSERT_TRUE(tier_settles("rgpu", 1, 3));
	CTL(&r, "agent", "rgpu", "--wait", "1");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: agent: \"rgpu\" is a CUDA arena: this kvarenactl is statically linked and cannot load libcuda.so.1 (the installed kvarenactl copies GPU memory)\n",
		     r.err);
	EXPECT_STREQ("", r.out);
	EXPECT_TRUE(tier_settles("rgpu", 1, 3));
	EXPECT_TRUE(tier_settles("rl2", 8, 0));

	EXPECT_EQ(0, destroy("rgpu"));
	EXPECT_EQ(0, destroy("rl2"));
	EXPECT_EQ(0, destroy("ru"));
	EXPECT_EQ(0, destroy("rl"));
	EXPECT_EQ(0, destroy("rbig"));
	EXPECT_EQ(0, destroy("rfile"));
	EXPECT_EQ(0, unlink("/tmp/kvarenactl-rfile"));
	close(null);
	close(fd);
}

/* The value of /sys/class/misc/kvarena/arenas/@arena/@attr. */
static long sysfs_value(const char *arena, const char *attr)
{
	char path[128], buf[32] = "";
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/misc/kvarena/arenas/%s/%s",
		 arena, attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	return n > 0 ? atol(buf) : -1;
}

/*
 * An arena whose create stopped after 2 of its 4 frames got memory: the
 * 2 without are neither free nor available anywhere, and stat says how
 * to finish or remove it.
 */
TEST(half_made_arena_is_neither_free_nor_available_anywhere)
{
	struct kvarena_stat s;
	int fd = kva_open(O_RDWR), cl, mfd;
	struct run r;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kva_create_flags(fd, "half", 4, 65536, 0, 0));
	mfd = memfd("half", MFD_ALLOW_SEALING);
	ASSERT_LE(0, mfd);
	ASSERT_EQ(0, ftruncate(mfd, 2 * 65536));
	ASSERT_EQ(0, fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW));
	ASSERT_EQ(0, kva_set_backing(fd, "half", 0, 2, mfd, 0));
	close(mfd);

	CTL(&r, "stat", "half");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ("arena half: host, 4 frames of 64Ki, 64 tokens/frame, 0 clients, only 2 of 4 frames backed\n"
		     "        capacity  held  filled  cached   free  unbacked  available\n"
		     "bytes      256Ki    0B      0B      0B  128Ki     128Ki         0B\n"
		     "frames         4     0     0.0       0      2         2          0\n"
		     "tokens       256     0       0       0    128       128          0\n"
		     "internal fragmentation: - (nothing held)\n"
		     "reserved for minimums: 0 frames, peak held: 0 frames, failed allocations: 0 of 0\n"
		     "prefix cache: 0 published frames, 0 cached, hit rate - (0 of 0 keys), 0 reclaimed\n"
		     "half made: 2 frames have no memory yet, so no client can attach (ENODATA).\n"
		     "If the kvarenactl create that registers its memory is still running, let it\n"
		     "finish; if it was killed, remove the arena and make it again:\n"
		     "  kvarenactl destroy half\n", r.out);
	CTL(&r, "stat", "--json", "half");
	EXPECT_NE(NULL, strstr(r.out, "\"frames\":{\"capacity\":4,\"held\":0,\"cached\":0,\"free\":2,\"unbacked\":2,\"available\":0,\"reserved\":0,\"backed\":2,"))
		TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, "\"bytes\":{\"capacity\":262144,\"held\":0,\"filled\":0,\"cached\":0,\"free\":131072,\"unbacked\":131072,\"available\":0},"))
		TH_LOG("%s", r.out);
	CTL(&r, "metrics", "half");
	EXPECT_NE(NULL, strstr(r.out,
			       "kvarena_frames{arena=\"half\",state=\"held\"} 0\n"
			       "kvarena_frames{arena=\"half\",state=\"cached\"} 0\n"
			       "kvarena_frames{arena=\"half\",state=\"reserved\"} 0\n"
			       "kvarena_frames{arena=\"half\",state=\"free\"} 2\n"
			       "kvarena_frames{arena=\"half\",state=\"unbacked\"} 2\n"))
		TH_LOG("%s", r.out);
	EXPECT_EQ(2, sysfs_value("half", "free"));
	EXPECT_EQ(2, sysfs_value("half", "unbacked"));
	EXPECT_EQ(2, sysfs_value("half", "backed"));
	/* STAT itself counts every frame no client holds as free. */
	ASSERT_EQ(0, stat_of("half", &s));
	EXPECT_EQ(4, s.nr_free);

	/* What a client gets: ENODATA at ATTACH, and nothing changes. */
	cl = kva_open(O_RDWR);
	ASSERT_LE(0, cl);
	EXPECT_EQ(-ENODATA, kva_attach(cl, "half", "early", 0, 0, NULL));
	close(cl);
	ASSERT_EQ(0, stat_of("half", &s));
	EXPECT_EQ(0, s.nr_clients);

	/* As stat says: destroy, and it is gone. */
	CTL(&r, "destroy", "half");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_EQ(-ENOENT, stat_of("half", &s));
	close(fd);
}

TEST(accounting_only_arena_has_no_unbacked_frames)
{
	int fd = kva_open(O_RDWR);
	struct run r;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kva_create(fd, "acct", 4, 65536, 0));
	CTL(&r, "stat", "acct");
	EXPECT_EQ(0, r.rc);
	EXPECT_TRUE(starts(r.out, "arena acct: host, 4 frames of 64Ki, 64 tokens/frame, 0 clients, accounting only (no memory)\n"
			   "        capacity  held  filled  cached   free  available\n"))
		TH_LOG("%s", r.out);
	EXPECT_EQ(NULL, strstr(r.out, "half made"));
	CTL(&r, "stat", "--json", "acct");
	EXPECT_NE(NULL, strstr(r.out, "\"accounting_only\":true,"));
	EXPECT_NE(NULL, strstr(r.out, "\"free\":4,\"unbacked\":0,\"available\":4,"));
	EXPECT_EQ(4, sysfs_value("acct", "free"));
	EXPECT_EQ(0, sysfs_value("acct", "unbacked"));
	EXPECT_EQ(0, kva_destroy(fd, "acct"));
	close(fd);
}

/* ---- gangs --------------------------------------------------------------- */

/*
 * A tensor-parallel engine on a gang: its leader, a client of the gang
 * that holds frames and reported usage, and one rank process per member
 * joined to it (JOIN with the leader's GANG_TOKEN), each holding its file
 * until @ctl is closed.
 */
struct engine {
	pid_t leader;
	pid_t ranks[KVARENA_GANG_MAX];
	int nranks;
	int ctl;		/* closing it ends them all */
	__u32 id;
};

/* Wait for EOF on @fd: the test closed the engine's control pipe. */
static void wait_eof(int fd)
{
	char c;

	while (read(fd, &c, 1) > 0)
		;
}

static void close_others(int keep1, int keep2)
{
	for (int fd = 3; fd < 1024; fd++)
		if (fd != keep1 && fd != keep2)
			close(fd);
}

/*
 * Start the engine: 0, or the first failure (-errno of ATTACH, GANG_TOKEN,
 * ALLOC, SET_USAGE or JOIN).
 */
static int engine_start(struct engine *e, const char *gang, __u32 frames,
			__u64 tokens, __u64 bytes, int nranks)
{
	int to[2], from[2], rc = -EIO;
	__u64 token = 0;

	memset(e, 0, sizeof(*e));
	e->ctl = -1;
	if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC))
		return -errno;
	e->leader = fork();
	if (e->leader == 0) {
		struct kvarena_gang_token t = { 0 };
		struct kvarena_attach at = { 0 };
		__u64 h[64];
		int fd;

		close_others(to[0], from[1]);
		fd = kva_open(O_RDWR);
		rc = fd < 0 ? -errno : kva_attach(fd, gang, "engine", 0, 0, &at);
		if (!rc)
			rc = kva_ioctl(fd, KVARENA_IOC_GANG_TOKEN, &t);
		if (!rc && frames)
			rc = kva_alloc(fd, h, frames, 0) == (int)frames ? 0 : -ENOSPC;
		if (!rc && bytes)
			rc = kva_set_usage(fd, tokens, bytes);
		if (write(from[1], &rc, sizeof(rc)) != sizeof(rc) ||
		    write(from[1], &at.client_id, sizeof(at.client_id)) !=
		    sizeof(at.client_id) ||
		    write(from[1], &t.token, sizeof(t.token)) != sizeof(t.token))
			_exit(1);
		wait_eof(to[0]);
		_exit(0);
	}
	close(from[1]);
	e->ctl = to[1];
	if (read(from[0], &rc, sizeof(rc)) != sizeof(rc) ||
	    read(from[0], &e->id, sizeof(e->id)) != sizeof(e->id) ||
	    read(from[0], &token, sizeof(token)) != sizeof(token))
		rc = -EIO;
	close(from[0]);
	for (int r = 0; !rc && r < nranks; r++) {
		int rep[2];

		if (pipe2(rep, O_CLOEXEC)) {
			rc = -errno;
			break;
		}
		e->ranks[r] = fork();
		if (e->ranks[r] == 0) {
			struct kvarena_join j = { .client_id = e->id,
						  .rank = (__u32)r,
						  .token = token };
			int fd, jrc;

			close_others(to[0], rep[1]);
			snprintf(j.name, sizeof(j.name), "%s", gang);
			snprintf(j.label, sizeof(j.label), "rank%d", r);
			fd = kva_open(O_RDWR);
			jrc = fd < 0 ? -errno : kva_ioctl(fd, KVARENA_IOC_JOIN, &j);
			if (write(rep[1], &jrc, sizeof(jrc)) != sizeof(jrc))
				_exit(1);
			wait_eof(to[0]);
			_exit(0);
		}
		close(rep[1]);
		e->nranks = r + 1;
		if (read(rep[0], &rc, sizeof(rc)) != sizeof(rc))
			rc = -EIO;
		close(rep[0]);
	}
	close(to[0]);
	return rc;
}

/* The text of /sys/class/misc/kvarena/arenas/@arena/@attr, or "?". */
static const char *sysfs_text(const char *arena, const char *attr)
{
	static char buf[600];
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/class/misc/kvarena/arenas/%s/%s",
		 arena, attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n < 0)
		return "?";
	buf[n] = '\0';
	return buf;
}

static void gang_cleanup(void)
{
	static const char *const names[] = {
		"tp", "g", "g3", "g4", "g5", "g6", "gm0", "gm1", "ga0", "ga1",
		"ga2", "ga3", "ga4", "gb", "gc", "gf", "grl",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		destroy(names[i]);
}

#define GANG_STAT \
	"arena tp: gang of 2 host arenas, 8 frames of 2 x 64Ki, 64 tokens/frame, 1 client\n" \
	"        capacity   held  filled  cached   free  available\n" \
	"bytes      1.0Mi  384Ki   128Ki      0B  640Ki      640Ki\n" \
	"frames         8      3     1.0       0      5          5\n" \
	"tokens       512    192      64       0    320        320\n" \
	"internal fragmentation: 66.7% (256Ki held but not filled)\n" \
	"reserved for minimums: 0 frames, peak held: 3 frames, failed allocations: 0 of 1\n" \
	"prefix cache: 0 published frames, 0 cached, hit rate - (0 of 0 keys), 0 reclaimed\n" \
	"gang: 2 members in rank order, gm0 gm1; a frame is 64Ki in each of them, and the bytes above count them all\n"

/*
 * Two host arenas of 8 frames of 64 KiB, 1 KiB of each token's KV in
 * each, and the gang tp over them: 8 frames of 2 x 64 KiB, 2 KiB a token
 * (the members' sum), so 64 tokens a frame.  An engine's leader holds 3
 * frames (384 KiB in the two members) and reports 64 tokens, 128 KiB;
 * its two ranks joined.
 */
TEST(gang_shows_its_members_and_each_member_its_gang)
{
	struct engine e;
	struct client c = { 0 };
	struct kvarena_stat s;
	struct run r;

	gang_cleanup();
	CTL(&r, "create", "gm0", "--frames", "8", "--frame-size", "64K",
	    "--bytes-per-token", "1K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "create", "gm1", "--frames", "8", "--frame-size", "64K",
	    "--bytes-per-token", "1K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "create", "tp", "--gang", "gm0,gm1");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("gang tp: 8 frames of 64Ki in each of 2 members (rank order: gm0 gm1), 1.0Mi in all; they serve only tp until kvarenactl destroy tp\n",
		     r.out);
	EXPECT_STREQ("", r.err);
	/* As the module has it. */
	EXPECT_STREQ("gm0 gm1\n", sysfs_text("tp", "members"));
	EXPECT_STREQ("tp\n", sysfs_text("gm1", "gang"));
	ASSERT_EQ(0, stat_of("tp", &s));
	EXPECT_EQ(8, s.nr_frames);
	EXPECT_EQ(65536, s.frame_size);
	EXPECT_EQ(2048, s.bytes_per_token);

	ASSERT_EQ(0, engine_start(&e, "tp", 3, 64, 131072, 2));

	CTL(&r, "stat", "tp");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ(GANG_STAT, r.out);
	/* A member: where its frames are, not 8 free frames it cannot give. */
	CTL(&r, "stat", "gm1");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ("arena gm1: host, 8 frames of 64Ki, 64 tokens/frame, rank 1 of gang tp\n"
		     "member of gang tp: its 8 frames serve the gang, whose clients hold them (kvarenactl stat tp); it takes no client of its own until tp is destroyed\n",
		     r.out);
	/* All three, in creation order. */
	CTL(&r, "stat");
	EXPECT_NE(NULL, strstr(r.out, "\n\n" GANG_STAT)) TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, "arena gm0: host, 8 frames of 64Ki, 64 tokens/frame, rank 0 of gang tp\n"))
		TH_LOG("%s", r.out);

	CTL(&r, "stat", "--json", "tp");
	EXPECT_EQ(0, r.rc);
	EXPECT_TRUE(starts(r.out, "[{\"name\":\"tp\",\"mem_kind\":\"host\",\"mem_dev\":0,"
			   "\"frame_size\":65536,\"bytes_per_token\":2048,\"tokens_per_frame\":64,"
			   "\"clients\":1,"))
		TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, "\"frames\":{\"capacity\":8,\"held\":3,\"cached\":0,\"free\":5,\"unbacked\":0,\"available\":5,\"reserved\":0,\"backed\":8,\"peak_held\":3},"
			       "\"bytes\":{\"capacity\":1048576,\"held\":393216,\"filled\":131072,\"cached\":0,\"free\":655360,\"unbacked\":0,\"available\":655360},"
			       "\"tokens\":{\"capacity\":512,\"held\":192,\"filled\":64,\"cached\":0,\"free\":320,\"unbacked\":0,\"available\":320},"
			       "\"fragmentation_pct\":66.7,"))
		TH_LOG("%s", r.out);
	EXPECT_TRUE(ends(r.out, ",\"gang\":{\"members\":[\"gm0\",\"gm1\"],\"frame_bytes\":131072}}]\n"))
		TH_LOG("%s", r.out);
	CTL(&r, "stat", "--json", "gm0");
	EXPECT_EQ(0, r.rc);
	EXPECT_NE(NULL, strstr(r.out, "\"frames\":{\"capacity\":8,\"held\":0,\"cached\":0,\"free\":0,\"unbacked\":0,\"available\":0,\"ganged\":8,"))
		TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, "\"bytes\":{\"capacity\":524288,\"held\":0,\"filled\":0,\"cached\":0,\"free\":0,\"unbacked\":0,\"available\":0,\"ganged\":524288},"))
		TH_LOG("%s", r.out);
	EXPECT_TRUE(ends(r.out, ",\"member_of\":{\"gang\":\"tp\",\"rank\":0}}]\n"))
		TH_LOG("%s", r.out);

	/* The leader's row, with its ranks: both joined. */
	CTL(&r, "clients", "tp");
	EXPECT_EQ(0, r.rc);
	EXPECT_TRUE(starts(r.out, "ARENA  ID  ")) TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, "  RANKS  LABEL   MIN  MAX  HELD  SHARED  FILLED  TOKENS   FRAG  PEAK  FAILS\n"))
		TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, fmt("  %d    2/2  engine    0    8     3       0   128Ki      64  66.7%%     3      0\n",
					  e.leader)))
		TH_LOG("%s", r.out);
	CTL(&r, "clients", "--json", "tp");
	EXPECT_EQ(0, r.rc);
	EXPECT_TRUE(ends(r.out, fmt("\"domain\":\"uid 0\",\"ranks\":[{\"rank\":0,\"member\":\"gm0\",\"pids\":[%d]},{\"rank\":1,\"member\":\"gm1\",\"pids\":[%d]}]}]\n",
				    e.ranks[0], e.ranks[1])))
		TH_LOG("%s", r.out);
	/* A rank is no client: its own file counts for nobody's PIDS. */
	EXPECT_NE(NULL, strstr(r.out, fmt("\"pids\":[%d],\"attach_pid\":%d,", e.leader,
					  e.leader)))
		TH_LOG("%s", r.out);
	/* Arenas without gangs show no RANKS column. */
	ASSERT_EQ(0, client_start(&c, "tp", "second", 0, 0));
	CTL(&r, "top", "-n", "1", "tp");
	EXPECT_EQ(0, r.rc);
	EXPECT_NE(NULL, strstr(r.out, "gang: 2 members in rank order, gm0 gm1;")) TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, fmt("  %d    0/2  second ", c.pid))) TH_LOG("%s", r.out);
	client_stop(&c, 0);

	CTL(&r, "metrics");
	EXPECT_EQ(0, r.rc);
	EXPECT_NE(NULL, strstr(r.out, "# TYPE kvarena_gang_member_info gauge\n"
			       "kvarena_gang_member_info{arena=\"tp\",member=\"gm0\",rank=\"0\"} 1\n"
			       "kvarena_gang_member_info{arena=\"tp\",member=\"gm1\",rank=\"1\"} 1\n"))
		TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, "kvarena_frames{arena=\"gm0\",state=\"free\"} 0\n"
			       "kvarena_frames{arena=\"gm0\",state=\"unbacked\"} 0\n"
			       "kvarena_frames{arena=\"gm0\",state=\"ganged\"} 8\n"))
		TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, "kvarena_frames{arena=\"tp\",state=\"held\"} 3\n"))
		TH_LOG("%s", r.out);
	EXPECT_EQ(NULL, strstr(r.out, "arena=\"tp\",state=\"ganged\"")) TH_LOG("%s", r.out);

	/* While ganged: what each refuses, and why. */
	CTL(&r, "destroy", "gm0", "--wait", "5");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: destroy: arena \"gm0\" is rank 0 of gang \"tp\": its frames are the gang's until the gang goes (kvarenactl destroy tp first)\n",
		     r.err);
	CTL(&r, "destroy", "tp");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: destroy: arena \"tp\" has 1 client attached (kvarenactl clients tp)\n",
		     r.err);
	CTL(&r, "resize", "gm1", "--frames", "4");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: resize: \"gm1\" is a member of gang \"tp\": its frames are the gang's, and keep their number while it is ganged (kvarenactl destroy tp first)\n",
		     r.err);
	CTL(&r, "resize", "tp", "--frames", "4");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: resize: \"tp\" is a gang: its frames are its members', as many as each has (destroy it, resize them, and make it again)\n",
		     r.err);
	CTL(&r, "create", "grl", "--frames", "8", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "tier", "tp", "--lower", "grl");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: \"tp\" is a gang: a gang has no lower tier and is none (its members' memory is its frames)\n",
		     r.err);
	CTL(&r, "tier", "grl", "--lower", "gm1");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: tier: \"gm1\" is a member of gang \"tp\": it takes no tier while ganged (kvarenactl destroy tp first)\n",
		     r.err);
	EXPECT_EQ(0, destroy("grl"));

	/* The leader dies, its ranks live on: they map nothing now. */
	kill(e.leader, SIGKILL);
	waitpid(e.leader, NULL, 0);
	ASSERT_EQ(0, wait_no_clients("tp", &s));
	CTL(&r, "clients", "tp");
	EXPECT_EQ(0, r.rc);
	EXPECT_NE(NULL, strstr(r.out, fmt("rank 0 (gm0) of gang \"tp\" is still open in %d, its client gone: it maps nothing\n",
					  e.ranks[0])))
		TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, fmt("rank 1 (gm1) of gang \"tp\" is still open in %d, its client gone: it maps nothing\n",
					  e.ranks[1])))
		TH_LOG("%s", r.out);
	e.leader = -1;
	close(e.ctl);
	for (int i = 0; i < e.nranks; i++)
		waitpid(e.ranks[i], NULL, 0);

	/* Destroyed, the gang sets its members free, as they were. */
	CTL(&r, "destroy", "tp");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("destroy: gang tp is gone; its members are arenas of their own again: gm0 gm1\n",
		     r.out);
	EXPECT_EQ(-ENOENT, stat_of("tp", &s));
	EXPECT_STREQ("\n", sysfs_text("gm0", "gang"));
	CTL(&r, "stat", "gm0");
	EXPECT_TRUE(starts(r.out, "arena gm0: host, 8 frames of 64Ki, 64 tokens/frame, 0 clients\n"
			   "        capacity  held  filled  cached   free  available\n"
			   "bytes      512Ki    0B      0B      0B  512Ki      512Ki\n"))
		TH_LOG("%s", r.out);
	ASSERT_EQ(0, client_start(&c, "gm0", "mine-again", 0, 0));
	EXPECT_EQ(2, client_do(&c, 'a', 2, 0, 0));
	client_stop(&c, 0);
	EXPECT_EQ(0, destroy("gm0"));
	EXPECT_EQ(0, destroy("gm1"));
}

#define MEMBER_RULE "(members are arenas of one kind (host, cuda or accounting-only) of equal frame size, frame count and creation flags, whole and backed, with no client, tier or gang of their own)"

TEST(gang_refusals_say_which_member_and_why)
{
	struct kvarena_stat s;
	struct client c = { 0 };
	struct run r;

	gang_cleanup();
	CTL(&r, "create", "ga0", "--frames", "8", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "create", "ga1", "--frames", "8", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "create", "ga3", "--frames", "8", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "create", "ga4", "--frames", "8", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	/* Made with its access given, which ganging does not compare. */
	CTL(&r, "create", "ga2", "--frames", "8", "--frame-size", "64K",
	    "--mode", "0666");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "create", "gb", "--frames", "4", "--frame-size", "64K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "create", "gc", "--frames", "8", "--frame-size", "128K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "create", "gf", "--frames", "8", "--frame-size", "64K",
	    "--file", "/tmp/kvarenactl-gf");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);

	CTL_AS(&r, NOCAP, "create", "g", "--gang", "ga0,ga1");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: create: permission denied (needs CAP_SYS_ADMIN)\n",
		     r.err);
	CTL(&r, "create", "g", "--gang", "ga0,nosuch");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("", r.out);
	EXPECT_STREQ("kvarenactl: create: --gang: no arena named \"nosuch\"\n", r.err);
	CTL(&r, "create", "g", "--gang", "ga0,ga1,gb");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: create: \"gb\" cannot be rank 2 of gang \"g\": it has 4 frames, \"ga0\" 8 " MEMBER_RULE "\n",
		     r.err);
	CTL(&r, "create", "g", "--gang", "gc,ga0");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: create: \"ga0\" cannot be rank 1 of gang \"g\": its frames are 64Ki, those of \"gc\" 128Ki " MEMBER_RULE "\n",
		     r.err);
	CTL(&r, "create", "g", "--gang", "ga0,gf");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: create: \"gf\" cannot be rank 1 of gang \"g\": it is a file arena " MEMBER_RULE "\n",
		     r.err);
	ASSERT_EQ(0, client_start(&c, "ga1", "busy", 0, 0));
	CTL(&r, "create", "g", "--gang", "ga0,ga1");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: create: \"ga1\" cannot be rank 1 of gang \"g\": it has 1 client attached (kvarenactl clients ga1) " MEMBER_RULE "\n",
		     r.err);
	client_stop(&c, 0);
	ASSERT_EQ(0, wait_no_clients("ga1", &s));
	/* Nothing was left of the refused ones. */
	EXPECT_EQ(-ENOENT, stat_of("g", &s));
	EXPECT_STREQ("\n", sysfs_text("ga0", "gang"));

	CTL(&r, "create", "g", "--gang", "ga0,ga1");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "create", "g", "--gang", "ga3,ga4");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: create: an arena named \"g\" exists already\n", r.err);
	CTL(&r, "create", "g3", "--gang", "ga3,ga1");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: create: \"ga1\" cannot be rank 1 of gang \"g3\": it is a member of gang \"g\" already " MEMBER_RULE "\n",
		     r.err);
	CTL(&r, "create", "g3", "--gang", "ga3,g");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: create: \"g\" cannot be rank 1 of gang \"g3\": it is a gang itself " MEMBER_RULE "\n",
		     r.err);
	/* ga3 takes no part in a refused gang: still free. */
	EXPECT_STREQ("\n", sysfs_text("ga3", "gang"));
	/* An access given at create is no creation flag that must match. */
	CTL(&r, "create", "g4", "--gang", "ga3,ga2");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "destroy", "g4");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);

	/* A policy with it: checked against the first member first. */
	CTL(&r, "create", "g5", "--gang", "ga3,ga4", "--client-max-limit", "9");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: create: --client-max-limit 9 is above the arena's 8 frames\n",
		     r.err);
	EXPECT_EQ(-ENOENT, stat_of("g5", &s));
	EXPECT_STREQ("\n", sysfs_text("ga3", "gang"));
	CTL(&r, "create", "g5", "--gang", "ga3,ga4", "--mode", "0660",
	    "--client-max-limit", "256K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	ASSERT_EQ(0, stat_of("g5", &s));
	EXPECT_EQ(0660, s.mode);
	EXPECT_EQ(4, s.client_max_limit);
	CTL(&r, "stat", "g5");
	EXPECT_NE(NULL, strstr(r.out, "\naccess: owner root, group root, mode 0660; clients: no guarantee, max 4\n"))
		TH_LOG("%s", r.out);

	CTL(&r, "destroy", "g5");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	CTL(&r, "destroy", "g");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_STREQ("destroy: gang g is gone; its members are arenas of their own again: ga0 ga1\n",
		     r.out);
	gang_cleanup();
	EXPECT_EQ(0, unlink("/tmp/kvarenactl-gf"));
}

/* /sys/module/kvarena/refcnt: open files of ours, and arenas. */
static long module_refs(void)
{
	char buf[32] = "";
	int fd = open("/sys/module/kvarena/refcnt", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	return n > 0 ? atol(buf) : -1;
}

TEST(rmmod_is_refused_while_an_arena_exists)
{
	long before = module_refs();
	struct run r;

	ASSERT_LE(0, before);
	CTL(&r, "create", "rm", "--frames", "2", "--frame-size", "4K");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	/* No client, no open file: the arena alone holds the module. */
	EXPECT_EQ(before + 1, module_refs());
	errno = 0;
	EXPECT_EQ(-1, syscall(SYS_delete_module, "kvarena", O_NONBLOCK));
	EXPECT_EQ(EWOULDBLOCK, errno);
	EXPECT_EQ(0, destroy("rm"));
	EXPECT_EQ(before, module_refs());
}

/*
 * With the dmem cgroup controller (the debug kernel; SKIP elsewhere):
 * clients shows each client's cgroup, and a client whose ALLOC its
 * cgroup's dmem.max refused is named with the cgroup and the limit.
 */
TEST(clients_show_cgroups_and_the_dmem_limit_that_refused)
{
	char cg[64], file[128], text[96];
	struct kvarena_version v = { 0 };
	struct client c = { 0 };
	struct run r;
	int fd = kva_open(O_RDONLY);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kva_ioctl(fd, KVARENA_IOC_VERSION, &v));
	close(fd);
	if (!(v.features & KVARENA_FEAT_DMEM))
		SKIP(return, "kvarena.ko charges no dmem cgroup on this kernel (CONFIG_CGROUP_DMEM with the 7.x region interface; Debian's kernels have it off)");
	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK))
		ASSERT_EQ(0, mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0,
				   NULL));
	ASSERT_EQ(0, kva_write_file("/sys/fs/cgroup/cgroup.subtree_control",
				    "+dmem"));
	CTL(&r, "create", "cgctl", "--frames", "8", "--frame-size", "64Ki");
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	snprintf(cg, sizeof(cg), "/kvactl%d", (int)getpid());
	snprintf(file, sizeof(file), "/sys/fs/cgroup%s", cg);
	ASSERT_EQ(0, mkdir(file, 0755));
	snprintf(file, sizeof(file), "/sys/fs/cgroup%s/dmem.max", cg);
	ASSERT_EQ(0, kva_write_file(file, "kvarena/cgctl 131072"));
	snprintf(file, sizeof(file), "/sys/fs/cgroup%s/cgroup.procs", cg);
	snprintf(text, sizeof(text), "%d", (int)getpid());
	ASSERT_EQ(0, kva_write_file(file, text));
	/* The client is made in the cgroup; kvarenactl runs from it too. */
	ASSERT_EQ(0, client_start(&c, "cgctl", "vllm-c", 0, 0));
	ASSERT_EQ(0, kva_write_file("/sys/fs/cgroup/cgroup.procs", text));
	EXPECT_EQ(2, client_do(&c, 'a', 2, 0, 0));
	EXPECT_EQ(-ENOSPC, client_do(&c, 'a', 1, 0, 0));

	CTL(&r, "clients", "cgctl");
	EXPECT_EQ(0, r.rc);
	EXPECT_NE(NULL, strstr(r.out, "CGROUP")) TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, fmt(" %s ", cg))) TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, fmt("client %u of cgctl: 1 ALLOC refused by the dmem cgroup controller: cgroup %s has dmem.max 128Ki for kvarena/cgctl, dmem.current 128Ki\n",
					 c.id, cg))) TH_LOG("%s", r.out);
	CTL(&r, "clients", "--json", "cgctl");
	EXPECT_NE(NULL, strstr(r.out, fmt("\"dmem_refused\":1,\"cgroup\":\"%s\",",
					 cg))) TH_LOG("%s", r.out);
	client_stop(&c, 0);
	snprintf(file, sizeof(file), "/sys/fs/cgroup%s", cg);
	rmdir(file);
	CTL(&r, "destroy", "cgctl", "--wait", "10");
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
}

static void write_conf(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

TEST(apply_makes_the_files_arenas_all_or_none_and_keeps_them_on_reload)
{
	const char *conf = "/tmp/kvactl-arenas.conf";
	struct kvarena_stat s;
	struct client c = { 0 };
	struct run r;

	write_conf(conf,
		   "# two arenas and a tier\n"
		   "arena ap1 --frames 8 --frame-size 64K   # the upper one\n"
		   "\n"
		   "arena ap2 --frames 4 --frame-size 64K --mode 0660\n"
		   "tier  ap1 --lower ap2 --free-target 2\n");
	CTL(&r, "apply", conf, "--check");
	EXPECT_EQ(0, r.rc);
	EXPECT_STREQ(fmt("%s: 2 arenas, 1 lower tier: ok\n", conf), r.out);
	EXPECT_NE(0, stat_of("ap1", &s));	/* --check made nothing */

	CTL(&r, "apply", conf);
	ASSERT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_TRUE(starts(r.out, "arena ap1: 8 frames of 64Ki")) TH_LOG("%s", r.out);
	EXPECT_NE(NULL, strstr(r.out, fmt("\napply: %s: 2 arenas made, 0 kept, 1 lower tier set\n",
					  conf))) TH_LOG("%s", r.out);
	ASSERT_EQ(0, stat_of("ap1", &s));
	EXPECT_EQ(KVARENA_STAT_TIER_LOWER, s.tier);
	EXPECT_STREQ("ap2", s.tier_name);
	ASSERT_EQ(0, stat_of("ap2", &s));
	EXPECT_EQ(0660u, s.mode);

	/* A reload keeps what is there, its clients too, and its policy
	 * follows the file. */
	ASSERT_EQ(0, client_start(&c, "ap1", "eng", 0, 0));
	ASSERT_EQ(3, client_do(&c, 'a', 3, 0, 0));
	write_conf(conf,
		   "arena ap1 --frames 8 --frame-size 64K\n"
		   "arena ap2 --frames 4 --frame-size 64K --mode 0640\n"
		   "tier ap1 --lower ap2\n");
	CTL(&r, "apply", conf);
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);
	EXPECT_NE(NULL, strstr(r.out, fmt("apply: %s: 0 arenas made, 2 kept, 0 lower tiers set\n",
					  conf))) TH_LOG("%s", r.out);
	ASSERT_EQ(0, stat_of("ap1", &s));
	EXPECT_EQ(1u, s.nr_clients);
	EXPECT_EQ(3u, s.nr_held);
	ASSERT_EQ(0, stat_of("ap2", &s));
	EXPECT_EQ(0640u, s.mode);

	/* An arena that exists otherwise: said, and nothing made. */
	write_conf(conf,
		   "arena ap3 --frames 2 --frame-size 64K\n"
		   "arena ap1 --frames 16 --frame-size 64K\n");
	CTL(&r, "apply", conf);
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ(fmt("kvarenactl: %s:2: arena ap1 exists as 8 frames of 64Ki, host, this line says 16 frames of 64Ki, host: kvarenactl resize ap1, or destroy it, first\n",
			 conf), r.err);
	EXPECT_NE(0, stat_of("ap3", &s));

	/* One that cannot be made: the ones made before it go again. */
	write_conf(conf,
		   "arena ap3 --frames 2 --frame-size 64K\n"
		   "arena ap4 --frames 16777216 --frame-size 1G\n");
	CTL(&r, "apply", conf);
	EXPECT_EQ(1, r.rc);
	EXPECT_NE(NULL, strstr(r.err, fmt("kvarenactl: apply: %s:2 failed: what this run made is undone\n",
					  conf))) TH_LOG("%s", r.err);
	EXPECT_NE(0, stat_of("ap3", &s));
	EXPECT_NE(0, stat_of("ap4", &s));

	/* A wrong line: named, with the command's own message; nothing done. */
	write_conf(conf,
		   "arena ap3 --frames 2 --frame-size 64K\n"
		   "arena ap5 --frames 2 --frame-size 3M\n"
		   "tier ap3\n");
	CTL(&r, "apply", conf);
	EXPECT_EQ(2, r.rc);
	EXPECT_STREQ(fmt("kvarenactl: %1$s:2: create: --frame-size \"3M\": want a size from 4Ki to 1Gi (bytes, or with K, M, G, T: 64Ki, 2M, 2.0Mi), a power of two\n"
			 "kvarenactl: %1$s:3: tier ap3: give --lower LOWER\n",
			 conf), r.err);
	EXPECT_NE(0, stat_of("ap3", &s));

	/* Making arenas needs CAP_SYS_ADMIN; checking a file does not. */
	write_conf(conf, "arena ap3 --frames 2 --frame-size 64K\n");
	chmod(conf, 0644);
	CTL_AS(&r, NOBODY, "apply", conf);
	EXPECT_EQ(1, r.rc);
	EXPECT_NE(0, stat_of("ap3", &s));
	CTL_AS(&r, NOBODY, "apply", "--check", conf);
	EXPECT_EQ(0, r.rc) TH_LOG("%s", r.err);

	client_stop(&c, 0);
	CTL(&r, "tier", "ap1", "--none");
	EXPECT_EQ(0, destroy("ap1"));
	EXPECT_EQ(0, destroy("ap2"));
	unlink(conf);
}

TEST(missing_module_or_node_is_said_clearly)
{
	char dir[] = "/tmp/kvactl.XXXXXX", node[64];
	char env[96], *envp[] = { env, NULL };
	struct run r;

	/* As if kvarena.ko were not loaded: no node, no sysfs entry. */
	CTL_AS(&r, NOMODULE, "stat");
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("", r.out);
	EXPECT_STREQ("kvarenactl: /dev/kvarena: no such device (is kvarena.ko loaded?)\n", r.err);

	/* The module is loaded, but the node is not where we look. */
	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(node, sizeof(node), "%s/kvarena", dir);
	snprintf(env, sizeof(env), "KVA_DEVICE=%s", node);
	run_as(&r, ROOT, envp, ARGV("clients"));
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ(fmt("kvarenactl: %s: no such file, but kvarena.ko is loaded (is the device node missing from this container or chroot?)\n",
			 node), r.err);

	/* A stale node, of a driver that is not there. */
	ASSERT_EQ(0, mknod(node, S_IFCHR | 0600, makedev(60, 0)));
	run_as(&r, ROOT, envp, ARGV("stat"));
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ(fmt("kvarenactl: %s: no such device (is kvarena.ko loaded?)\n",
			 node), r.err);
	unlink(node);
	rmdir(dir);

	snprintf(env, sizeof(env), "KVA_DEVICE=/dev/null");
	run_as(&r, ROOT, envp, ARGV("metrics"));
	EXPECT_EQ(1, r.rc);
	EXPECT_STREQ("kvarenactl: /dev/null: not a kvarena device\n", r.err);
}

TEST_HARNESS_MAIN
