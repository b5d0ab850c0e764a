// SPDX-License-Identifier: GPL-2.0
/*
 * doc_test - every command line of Documentation/operators.rst and the
 * README, run in the test VM (selftests/vm/run.sh) and compared with what
 * the text shows.
 *
 * At build time selftests/docs/extract.awk turns the two files into a list
 * of records (see there): sessions ("$ COMMAND" and its output), hidden
 * setup (".. doctest: COMMAND" comments: the arenas and clients an example
 * shows), inline commands that must succeed, and commands that cannot run
 * here (CUDA) and must at least not be usage errors.  The list, the static
 * kvarenactl, kvplan and doc-client are built into this program, which
 * writes them to /tmp/doctest/bin and runs every record in order with
 * /bin/sh -c, standard output and error together, in the directory
 * /tmp/doctest/FILE.
 *
 * Everything runs in a pid namespace of its own, with its own /proc: the
 * examples' processes get the PIDs the text shows (doc-client -p), and
 * when the namespace ends, they all end.  Then every arena left is
 * destroyed.
 *
 * What varies from run to run is not compared, on both sides alike: the
 * clock of top's heading, and the MemAvailable figures that create prints
 * (the two kernels boot to different free memory).  Tabs are expanded to
 * 8-column stops, as docutils renders them.  Output is KTAP, one test per
 * record.
 */
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/kvarena.h>

#include "kselftest.h"

#if !defined(KVACTL_BIN) || !defined(KVPLAN_BIN) || !defined(CLIENT_BIN) || \
	!defined(SPEC)
#error "the build names KVACTL_BIN, KVPLAN_BIN, CLIENT_BIN and SPEC"
#endif

#define EMBED(sym, path)						\
	__asm__(".section .rodata\n.balign 16\n" #sym ":\n"		\
		".incbin \"" path "\"\n" #sym "_end:\n"			\
		".byte 0\n.previous\n");				\
	extern const char sym[], sym##_end[]

EMBED(kvactl_bin, KVACTL_BIN);
EMBED(kvplan_bin, KVPLAN_BIN);
EMBED(client_bin, CLIENT_BIN);
EMBED(spec, SPEC);

#define TOP	"/tmp/doctest"
#define BIN	TOP "/bin"

/* ---- the records ------------------------------------------------------- */

enum kind { SESSION, SETUP, RUN, PARSE, NEEDS };

struct record {
	enum kind kind;
	char where[64];		/* FILE:LINE */
	char file[32];
	char *cmd;
	char *want;		/* SESSION: the documented output */
};

static struct record *records;
static int nr_records;

static char *dup_range(const char *s, const char *e)
{
	char *d = malloc((size_t)(e - s) + 1);

	if (!d)
		abort();
	memcpy(d, s, (size_t)(e - s));
	d[e - s] = '\0';
	return d;
}

/* The next line of @*p (without its newline), advancing *p; NULL at end. */
static char *next_line(const char **p, const char *end)
{
	const char *s = *p, *nl;

	if (s >= end)
		return NULL;
	nl = memchr(s, '\n', (size_t)(end - s));
	if (!nl)
		nl = end;
	*p = nl < end ? nl + 1 : end;
	return dup_range(s, nl);
}

static int parse_spec(void)
{
	static const char *const kinds[] = { "session", "setup", "run",
					     "parse", "needs" };
	const char *p = spec, *end = spec_end;
	char *line;

	while ((line = next_line(&p, end))) {
		struct record r = { 0 };
		char kind[16], *out = NULL, *l;
		size_t len = 0;
		int k;

		if (sscanf(line, "@@%15s %63s", kind, r.where) != 2)
			return -1;
		for (k = 0; k < 5 && strcmp(kind, kinds[k]); k++)
			;
		if (k == 5)
			return -1;
		r.kind = (enum kind)k;
		snprintf(r.file, sizeof(r.file), "%.*s",
			 (int)strcspn(r.where, ":"), r.where);
		free(line);
		r.cmd = next_line(&p, end);
		if (!r.cmd)
			return -1;
		while ((l = next_line(&p, end)) && strcmp(l, "@@end")) {
			size_t n = strlen(l);

			if (!strcmp(l, "@@out")) {
				free(l);
				out = calloc(1, 1);
				continue;
			}
			if (!out)
				return -1;
			out = realloc(out, len + n + 2);
			if (!out)
				abort();
			memcpy(out + len, l, n);
			len += n;
			out[len++] = '\n';
			out[len] = '\0';
			free(l);
		}
		free(l);
		r.want = out;
		records = realloc(records, (size_t)(nr_records + 1) *
				  sizeof(*records));
		if (!records)
			abort();
		records[nr_records++] = r;
	}
	return 0;
}

/* ---- what is not compared ------------------------------------------------ */

static const struct {
	const char *re;
	const char *with;
} varies[] = {
	{ "[0-9][0-9]:[0-9][0-9]:[0-9][0-9]", "HH:MM:SS" },
	{ "[0-9.]+[KMGTPE]i of MemAvailable left \\(headroom [0-9.]+[KMGTPE]i",
	  "N of MemAvailable left (headroom N" },
	{ "MemAvailable is [0-9.]+[KMGTPE]i and create keeps [0-9.]+[KMGTPE]i",
	  "MemAvailable is N and create keeps N" },
};

/* @s with every match of @re replaced by @with (a new string). */
static char *replace_all(const char *s, const char *re, const char *with)
{
	size_t len = 0, cap = strlen(s) + 1;
	char *out = malloc(cap);
	regmatch_t m;
	regex_t rx;

	if (!out || regcomp(&rx, re, REG_EXTENDED))
		abort();
	while (!regexec(&rx, s, 1, &m, 0) && m.rm_eo > m.rm_so) {
		size_t need = len + (size_t)m.rm_so + strlen(with) + 1;

		if (need > cap) {
			cap = need + strlen(s);
			out = realloc(out, cap);
			if (!out)
				abort();
		}
		memcpy(out + len, s, (size_t)m.rm_so);
		len += (size_t)m.rm_so;
		memcpy(out + len, with, strlen(with));
		len += strlen(with);
		s += m.rm_eo;
	}
	if (len + strlen(s) + 1 > cap) {
		cap = len + strlen(s) + 1;
		out = realloc(out, cap);
		if (!out)
			abort();
	}
	strcpy(out + len, s);
	regfree(&rx);
	return out;
}

/* Tabs to 8-column stops, trailing blank lines off, varying parts out. */
static char *normalize(const char *s)
{
	size_t cap = strlen(s) * 8 + 2, o = 0, col = 0;
	char *t = malloc(cap), *r;

	if (!t)
		abort();
	for (; *s; s++) {
		if (*s == '\t') {
			do
				t[o++] = ' ';
			while (++col % 8);
			continue;
		}
		t[o++] = *s;
		col = *s == '\n' ? 0 : col + 1;
	}
	while (o && t[o - 1] == '\n')
		o--;
	t[o] = '\0';
	for (size_t i = 0; i < sizeof(varies) / sizeof(varies[0]); i++) {
		r = replace_all(t, varies[i].re, varies[i].with);
		free(t);
		t = r;
	}
	return t;
}

/* ---- running -------------------------------------------------------------- */

static int write_exe(const char *path, const char *data, const char *end)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);

	if (fd < 0)
		return -1;
	while (data < end) {
		ssize_t n = write(fd, data, (size_t)(end - data));

		if (n <= 0) {
			close(fd);
			return -1;
		}
		data += n;
	}
	return close(fd);
}

/* Run @cmd in /tmp/doctest/@dir; its exit status and its output. */
static int run(const char *dir, const char *cmd, char **output)
{
	char cwd[128];
	int out = memfd_create("out", MFD_CLOEXEC), status = 0;
	off_t size;
	pid_t pid;

	snprintf(cwd, sizeof(cwd), TOP "/%s", dir);
	mkdir(cwd, 0755);
	pid = fork();
	if (pid == 0) {
		char *argv[] = { "sh", "-c", (char *)cmd, NULL };
		char *envp[] = { "PATH=" BIN ":/bin:/sbin", "HOME=/tmp",
				 "LC_ALL=C", NULL };
		int null = open("/dev/null", O_RDONLY);

		if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 ||
		    dup2(out, 2) < 0 || chdir(cwd))
			_exit(126);
		execve("/bin/sh", argv, envp);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		status = -1;
	size = lseek(out, 0, SEEK_END);
	*output = calloc(1, (size_t)(size > 0 ? size : 0) + 1);
	if (*output && size > 0 && pread(out, *output, (size_t)size, 0) != size)
		**output = '\0';
	close(out);
	if (status < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) :
	       128 + WTERMSIG(status);
}

/* Every line of @text after "# @prefix". */
static void show(const char *prefix, const char *text)
{
	while (*text) {
		size_t n = strcspn(text, "\n");

		printf("# %s%.*s\n", prefix, (int)n, text);
		text += n + (text[n] == '\n');
	}
}

/*
 * Why this kernel lacks what a NEEDS record names, or NULL if it has it:
 * "dmem", the dmem cgroup controller with kvarena charging it; "none".
 */
static const char *lacks(const char *what)
{
	struct kvarena_version v = { 0 };
	int fd;

	if (!strcmp(what, "none"))
		return NULL;
	if (strcmp(what, "dmem"))
		return "an unknown need";
	fd = open(KVARENA_DEVICE, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, KVARENA_IOC_VERSION, &v) ||
	    !(v.features & KVARENA_FEAT_DMEM)) {
		if (fd >= 0)
			close(fd);
		return "kvarena.ko charges no dmem cgroup on this kernel (CONFIG_CGROUP_DMEM with the 7.x region interface; Debian's kernels have it off)";
	}
	close(fd);
	return NULL;
}

/* What the records from the last NEEDS on need and this kernel lacks. */
static const char *unmet;

static void one(int i)
{
	const struct record *r = &records[i];
	char *got = NULL, *a, *b;
	int rc;

	if (r->kind == NEEDS) {
		unmet = lacks(r->cmd);
		if (unmet && !strcmp(unmet, "an unknown need"))
			ksft_test_result_fail("%s needs %s: not a need doc_test knows\n",
					      r->where, r->cmd);
		else
			ksft_test_result_pass("%s needs %s: %s here\n", r->where,
					      r->cmd, unmet ? "not" : "met");
		return;
	}
	if (unmet) {
		/* One reason per file, so that a summary counts them as one. */
		printf("# %s: not run: %s\n", r->where, r->cmd);
		ksft_test_result_skip("%s: %s\n", r->file, unmet);
		return;
	}
	rc = run(r->file, r->cmd, &got);
	switch (r->kind) {
	case SETUP:
	case RUN:
		if (rc == 0) {
			ksft_test_result_pass("%s %s %s\n", r->where,
					      r->kind == SETUP ? "setup:" : "runs:",
					      r->cmd);
		} else {
			show("", got ? got : "");
			ksft_test_result_fail("%s exit status %d: %s\n",
					      r->where, rc, r->cmd);
		}
		break;
	case PARSE:
		/* Anything but a usage error: the command line is right. */
		if (rc != 2 && rc >= 0) {
			ksft_test_result_pass("%s parses (exit status %d here): %s\n",
					      r->where, rc, r->cmd);
		} else {
			show("", got ? got : "");
			ksft_test_result_fail("%s usage error: %s\n", r->where,
					      r->cmd);
		}
		break;
	case SESSION:
		a = normalize(r->want);
		b = normalize(got ? got : "");
		if (!strcmp(a, b)) {
			ksft_test_result_pass("%s $ %s\n", r->where, r->cmd);
		} else {
			show("want| ", a);
			show("got | ", b);
			ksft_test_result_fail("%s $ %s\n", r->where, r->cmd);
		}
		free(a);
		free(b);
		break;
	case NEEDS:
		break;
	}
	free(got);
}

/*
 * The first process of a new pid namespace, with a /proc of its own:
 * every record, then the namespace ends and takes every process it made
 * with it.  Exit status: what ksft_finished() says.
 */
static int in_namespace(void)
{
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("proc", "/proc", "proc", 0, NULL))
		ksft_exit_fail_msg("a /proc of our own: %s\n", strerror(errno));
	ksft_print_header();
	ksft_set_plan((unsigned int)nr_records);
	for (int i = 0; i < nr_records; i++)
		one(i);
	ksft_finished();
	return 0;
}

/* Destroy every arena the examples left. */
static void destroy_all(void)
{
	int fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	struct kvarena_stat s;

	while (fd >= 0) {
		struct kvarena_arena_destroy d = { 0 };

		memset(&s, 0, sizeof(s));
		s.flags = KVARENA_STAT_BY_INDEX;
		if (ioctl(fd, KVARENA_IOC_STAT, &s))
			break;
		memcpy(d.name, s.name, sizeof(d.name));
		if (ioctl(fd, KVARENA_IOC_ARENA_DESTROY, &d)) {
			printf("# arena %s is left: %s\n", s.name,
			       strerror(errno));
			break;
		}
	}
	if (fd >= 0)
		close(fd);
}

int main(void)
{
	int status;
	pid_t pid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (parse_spec())
		ksft_exit_fail_msg("the list of documented commands is malformed\n");
	mkdir(TOP, 0755);
	mkdir(BIN, 0755);
	if (write_exe(BIN "/kvarenactl", kvactl_bin, kvactl_bin_end) ||
	    write_exe(BIN "/kvplan", kvplan_bin, kvplan_bin_end) ||
	    write_exe(BIN "/doc-client", client_bin, client_bin_end))
		ksft_exit_fail_msg("writing %s: %s\n", BIN, strerror(errno));
	if (unshare(CLONE_NEWPID | CLONE_NEWNS))
		ksft_exit_fail_msg("unshare: %s\n", strerror(errno));
	pid = fork();
	if (pid == 0)
		_exit(in_namespace());
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	destroy_all();
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
