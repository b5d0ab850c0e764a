// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl - the processes that hold each client, and kill.
 *
 * A client lives as long as its /dev/kvarena file, whoever holds that now:
 * the process that attached may have forked and exited, or passed the
 * file on.  So the holders are found where the kernel says, as gputop and
 * nvtop find a GPU's clients: every /proc/PID/fd/N that is our device
 * (same st_rdev as the node kvarenactl opened), and its
 * /proc/PID/fdinfo/N, where the module writes the arena and client id
 * (driver/fdinfo.c), and whether an administrator evicted the client: its
 * file holds nothing then, but keeps the arena until it is closed, and
 * the client is no longer in the arena's table.  A gang's rank processes
 * hold files that JOINed a client of the gang: fdinfo names the rank, its
 * member and the client (kvarena-rank, kvarena-member, kvarena-rank-of),
 * and they are kept apart (they hold no frames: kill does not signal
 * them, clients counts them).  Reading another user's fds needs root; what could
 * not be read is counted, so that "nobody holds it" is never said when
 * the truth is "kvarenactl could not look".
 *
 * kill signals every holder through a pidfd taken before the holder is
 * checked once more, so a PID reused meanwhile by another process is
 * never signalled.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kvarenactl.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434		/* Linux 5.3, every architecture */
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424	/* Linux 5.1 */
#endif

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* What fdinfo says of a client file, or a rank's (a gang's, joined). */
struct fd_info {
	char arena[KVARENA_NAME_LEN];
	uint32_t id;
	bool evicted;
	char label[4 * KVARENA_LABEL_LEN];
	bool is_rank;
	uint32_t rank, leader;
	char member[KVARENA_NAME_LEN];
};

/*
 * The client fd @fd of process @pid (its directory @piddir) is: the
 * arena, client id, label and eviction from its fdinfo.  Returns true if
 * it is attached.
 */
static bool fd_client(int piddir, const char *fd, struct fd_info *fi)
{
	char path[300], line[256];
	bool have_arena = false, have_id = false;
	unsigned long v;
	FILE *f;
	int ffd;

	snprintf(path, sizeof(path), "fdinfo/%s", fd);
	ffd = openat(piddir, path, O_RDONLY | O_CLOEXEC);
	if (ffd < 0)
		return false;
	f = fdopen(ffd, "re");
	if (!f) {
		close(ffd);
		return false;
	}
	memset(fi, 0, sizeof(*fi));
	while (fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, "\n");

		line[n] = '\0';
		if (!strncmp(line, "kvarena-arena:\t", 15)) {
			if (n > 15 && n - 15 < KVARENA_NAME_LEN) {
				memcpy(fi->arena, line + 15, n - 15 + 1);
				have_arena = true;
			}
		} else if (sscanf(line, "kvarena-client-id:\t%lu", &v) == 1 &&
			   v <= UINT32_MAX) {
			fi->id = (uint32_t)v;
			have_id = true;
		} else if (!strncmp(line, "kvarena-label:\t", 15)) {
			/* Escaped by the module: printable already. */
			size_t l = strnlen(line + 15, sizeof(fi->label) - 1);

			memcpy(fi->label, line + 15, l);
			fi->label[l] = '\0';
		} else if (!strcmp(line, "kvarena-evicted:\t1")) {
			fi->evicted = true;
		} else if (sscanf(line, "kvarena-rank:\t%lu", &v) == 1 &&
			   v < KVARENA_GANG_MAX) {
			fi->rank = (uint32_t)v;
			fi->is_rank = true;
		} else if (sscanf(line, "kvarena-rank-of:\t%lu", &v) == 1 &&
			   v <= UINT32_MAX) {
			fi->leader = (uint32_t)v;
		} else if (!strncmp(line, "kvarena-member:\t", 16)) {
			if (n > 16 && n - 16 < KVARENA_NAME_LEN)
				memcpy(fi->member, line + 16, n - 16 + 1);
		}
	}
	fclose(f);
	return have_arena && have_id;
}

/* The rank @fi of process @pid: one entry per gang, client and rank. */
static void add_rank(struct kvactl_holders *h, const struct fd_info *fi,
		     pid_t pid)
{
	struct kvactl_rank_hold *r = NULL;

	for (size_t i = 0; i < h->nr_ranks && !r; i++)
		if (h->ranks[i].leader == fi->leader &&
		    h->ranks[i].rank == fi->rank &&
		    !strcmp(h->ranks[i].arena, fi->arena))
			r = &h->ranks[i];
	if (!r) {
		r = realloc(h->ranks, (h->nr_ranks + 1) * sizeof(*r));
		if (!r)
			abort();
		h->ranks = r;
		r = &h->ranks[h->nr_ranks++];
		memset(r, 0, sizeof(*r));
		memcpy(r->arena, fi->arena, KVARENA_NAME_LEN);
		memcpy(r->member, fi->member, KVARENA_NAME_LEN);
		r->leader = fi->leader;
		r->rank = fi->rank;
	}
	for (size_t i = 0; i < r->n; i++)
		if (r->pids[i] == pid)
			return;
	r->pids = realloc(r->pids, (r->n + 1) * sizeof(*r->pids));
	if (!r->pids)
		abort();
	r->pids[r->n++] = pid;
}

static struct kvactl_hold *hold_of(struct kvactl_holders *h, const char *arena,
				   uint32_t id, bool add)
{
	struct kvactl_hold *n;

	for (size_t i = 0; i < h->n; i++)
		if (h->v[i].id == id && !strcmp(h->v[i].arena, arena))
			return &h->v[i];
	if (!add)
		return NULL;
	n = realloc(h->v, (h->n + 1) * sizeof(*n));
	if (!n)
		abort();
	h->v = n;
	n = &h->v[h->n++];
	memset(n, 0, sizeof(*n));
	memcpy(n->arena, arena, KVARENA_NAME_LEN);
	n->id = id;
	return n;
}

static void add_pid(struct kvactl_hold *c, pid_t pid)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->pids[i] == pid)
			return;		/* the same file twice, or dup()ed */
	c->pids = realloc(c->pids, (c->n + 1) * sizeof(*c->pids));
	if (!c->pids)
		abort();
	c->pids[c->n++] = pid;
}

/* Every client fd of process @pid into @h; -errno if its fds are closed to us. */
static int scan_pid(struct kvactl_holders *h, int proc, const char *pid,
		    dev_t rdev)
{
	struct kvactl_hold *hold;
	struct fd_info fi;
	struct dirent *e;
	int piddir, fddir;
	DIR *d;

	piddir = openat(proc, pid, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (piddir < 0)
		return -errno;
	fddir = openat(piddir, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fddir < 0 ? NULL : fdopendir(fddir);
	if (!d) {
		int err = -errno;

		if (fddir >= 0)
			close(fddir);
		close(piddir);
		return err;
	}
	while ((e = readdir(d))) {
		struct stat st;

		if (!all_digits(e->d_name) ||
		    fstatat(fddir, e->d_name, &st, 0) ||
		    !S_ISCHR(st.st_mode) || st.st_rdev != rdev ||
		    !fd_client(piddir, e->d_name, &fi))
			continue;
		/* A rank holds nothing: it maps what its client holds. */
		if (fi.is_rank) {
			add_rank(h, &fi, (pid_t)atol(pid));
			continue;
		}
		hold = hold_of(h, fi.arena, fi.id, true);
		hold->evicted |= fi.evicted;
		memcpy(hold->label, fi.label, sizeof(hold->label));
		add_pid(hold, (pid_t)atol(pid));
	}
	closedir(d);
	close(piddir);
	return 0;
}

/*
 * Are there processes this /proc does not show?  Those of the pid
 * namespaces above ours, unless ours is the first: the kernel gives the
 * initial pid namespace a fixed inode number (PROC_PID_INIT_INO).
 */
#define PID_INIT_NS_INO 0xeffffffcu

static bool in_child_pidns(void)
{
	struct stat st;

	return !stat("/proc/self/ns/pid", &st) && st.st_ino != PID_INIT_NS_INO;
}

int kvactl_holders_scan(struct kvactl_holders *h, int devfd)
{
	struct dirent *e;
	struct stat st;
	int proc;
	DIR *d;

	memset(h, 0, sizeof(*h));
	if (fstat(devfd, &st))
		return -errno;
	h->other_pidns = in_child_pidns();
	proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = proc < 0 ? NULL : fdopendir(proc);
	if (!d) {
		if (proc >= 0)
			close(proc);
		h->unreadable = 1;
		return 0;
	}
	while ((e = readdir(d))) {
		int err;

		if (!all_digits(e->d_name))
			continue;
		err = scan_pid(h, proc, e->d_name, st.st_rdev);
		/* Gone meanwhile (ENOENT, ESRCH) is nothing to count. */
		if (err == -EACCES || err == -EPERM)
			h->unreadable++;
	}
	closedir(d);
	return 0;
}

const struct kvactl_hold *kvactl_holders_find(const struct kvactl_holders *h,
					      const char *arena, uint32_t id)
{
	return hold_of((struct kvactl_holders *)h, arena, id, false);
}

const struct kvactl_hold *kvactl_holders_evicted(const struct kvactl_holders *h,
						const char *arena, size_t i)
{
	for (size_t k = 0; k < h->n; k++)
		if (h->v[k].evicted && !strcmp(h->v[k].arena, arena) && !i--)
			return &h->v[k];
	return NULL;
}

const struct kvactl_rank_hold *kvactl_holders_rank(const struct kvactl_holders *h,
						  const char *arena,
						  uint32_t leader, size_t i)
{
	for (size_t k = 0; k < h->nr_ranks; k++)
		if (h->ranks[k].leader == leader &&
		    !strcmp(h->ranks[k].arena, arena) && !i--)
			return &h->ranks[k];
	return NULL;
}

void kvactl_holders_free(struct kvactl_holders *h)
{
	for (size_t i = 0; i < h->n; i++)
		free(h->v[i].pids);
	free(h->v);
	for (size_t i = 0; i < h->nr_ranks; i++)
		free(h->ranks[i].pids);
	free(h->ranks);
	memset(h, 0, sizeof(*h));
}

/* ---- kill ------------------------------------------------------------------- */

/* /proc/PID/comm, printable, or "?". */
static void comm_of(pid_t pid, char *out, size_t size)
{
	char path[32], raw[64] = "";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, raw, sizeof(raw) - 1);
	if (fd >= 0)
		close(fd);
	raw[n > 0 ? n : 0] = '\0';
	raw[strcspn(raw, "\n")] = '\0';
	kvactl_fmt_label(out, size, raw[0] ? raw : "?");
}

/* The state letter of /proc/PID/stat: 'T' and 't' are stopped. */
static char state_of(pid_t pid)
{
	char path[32], buf[512];
	const char *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	/* After the comm, which may hold anything but ends at the last ')'. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/* Does process @pid still hold client @id of @arena? */
static bool still_holds(pid_t pid, const char *arena, uint32_t id, dev_t rdev)
{
	struct kvactl_holders h = { 0 };
	char name[16];
	bool yes;
	int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (proc < 0)
		return false;
	snprintf(name, sizeof(name), "%d", (int)pid);
	scan_pid(&h, proc, name, rdev);
	close(proc);
	yes = kvactl_holders_find(&h, arena, id) != NULL;
	kvactl_holders_free(&h);
	return yes;
}

/*
 * SIGTERM, TERM, term, 15: a signal by name or number.  Stored in
 * o->signal.
 */
int kvactl_parse_signal(const char *arg, int *sig)
{
	uint32_t n;

	if (!kvactl_parse_u32(arg, &n)) {
		if (n < 1 || n > 64 || n > (uint32_t)SIGRTMAX)
			return -ERANGE;
		*sig = (int)n;
		return 0;
	}
	if (!strncasecmp(arg, "SIG", 3))
		arg += 3;
	for (int s = 1; s < SIGRTMIN; s++) {
		const char *name = sigabbrev_np(s);

		if (name && !strcasecmp(arg, name)) {
			*sig = s;
			return 0;
		}
	}
	return -EINVAL;
}

/* "SIGTERM", or "signal 40". */
static const char *signal_name(int sig, char buf[KVACTL_NUM_LEN])
{
	const char *name = sigabbrev_np(sig);

	if (name)
		snprintf(buf, KVACTL_NUM_LEN, "SIG%s", name);
	else
		snprintf(buf, KVACTL_NUM_LEN, "signal %d", sig);
	return buf;
}

/*
 * Signal @pid as the holder of client @id: through a pidfd, taken before
 * the last check that it holds the client.  0, or -errno.
 */
static int signal_holder(pid_t pid, int sig, const char *arena, uint32_t id,
			 dev_t rdev, bool *continued)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0), err = 0;

	*continued = false;
	if (pidfd < 0)
		return -errno;
	if (!still_holds(pid, arena, id, rdev))
		err = -ESRCH;
	else if (syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0))
		err = -errno;
	/* A stopped process would only act on the signal when continued. */
	if (!err && sig != SIGKILL && sig != SIGCONT && sig != SIGSTOP &&
	    (state_of(pid) == 'T' || state_of(pid) == 't') &&
	    !syscall(SYS_pidfd_send_signal, pidfd, SIGCONT, NULL, 0))
		*continued = true;
	close(pidfd);
	return err;
}

/* Is the client @o names (by label, or by id) in @a's table? */
static bool client_listed(const struct kvactl_arena *a,
			  const struct kvactl_opts *o)
{
	const char *client = o->nargs > 1 ? o->args[1] : NULL;

	for (uint32_t i = 0; i < a->nr_clients; i++)
		if (client ? !strncmp(a->clients[i].label, client,
				      KVARENA_LABEL_LEN) :
			     a->clients[i].client_id == o->client_id)
			return true;
	return false;
}

/*
 * The evicted client that @o names, among the files still open: evicted
 * clients are out of the arena's table, so only their files know them.
 * By label only if one alone has it.
 */
static const struct kvactl_hold *evicted_named(const struct kvactl_holders *h,
					       const char *arena,
					       const struct kvactl_opts *o)
{
	const char *client = o->nargs > 1 ? o->args[1] : NULL;
	const struct kvactl_hold *e, *hit = NULL;

	for (size_t i = 0; (e = kvactl_holders_evicted(h, arena, i)); i++) {
		if (client ? strcmp(e->label, client) : e->id != o->client_id)
			continue;
		if (hit)
			return NULL;
		hit = e;
	}
	return hit;
}

int kvactl_cmd_kill(const struct kvactl_opts *o)
{
	const char *name = o->args[0];
	const struct kvactl_hold *hold;
	struct kvactl_holders h;
	struct kvactl_snap snap;
	char sn[KVACTL_NUM_LEN], label[4 * KVARENA_LABEL_LEN], comm[64];
	const char *what = "";
	struct stat st;
	int fd, err, ret = KVACTL_FAIL, failed = 0;
	uint32_t id;

	fd = kvactl_open(false, o->cmd);
	if (fd < 0)
		return KVACTL_FAIL;
	if (kvactl_snap_read(fd, o->cmd, name, true, &snap))
		goto out_close;
	err = fstat(fd, &st) ? -errno : kvactl_holders_scan(&h, fd);
	if (err) {
		kvactl_err("kill: reading /proc: %s", strerror(-err));
		goto out_snap;
	}
	hold = client_listed(&snap.arenas[0], o) ? NULL :
	       evicted_named(&h, name, o);
	if (hold) {
		/* Evicted: holds nothing, but keeps the arena while open. */
		id = hold->id;
		snprintf(label, sizeof(label), "%s", hold->label);
		what = "evicted ";
	} else {
		const struct kvarena_client_info *c =
			kvactl_find_client(&snap.arenas[0], o);

		if (!c)
			goto out_holders;
		id = c->client_id;
		kvactl_fmt_label(label, sizeof(label), c->label);
		hold = kvactl_holders_find(&h, name, id);
	}
	if (!hold) {
		kvactl_err("kill: found no process that holds client %u (%s) of arena \"%s\"%s",
			   id, label, name,
			   h.other_pidns ? " in this pid namespace (processes outside it are not visible here)" :
			   h.unreadable ? " among those whose files this user can read (root can read all)" :
			   ": its file is held without a descriptor (io_uring, or in flight in a socket)");
		goto out_holders;
	}
	printf("%sclient %u (%s) of arena \"%s\" is held by %zu %s\n",
	       what, id, label, name, hold->n,
	       hold->n == 1 ? "process" : "processes");
	for (size_t i = 0; i < hold->n; i++) {
		pid_t pid = hold->pids[i];
		bool cont;

		comm_of(pid, comm, sizeof(comm));
		err = signal_holder(pid, o->signal, name, id, st.st_rdev,
				    &cont);
		if (err == -ESRCH) {
			printf("  %d (%s) no longer holds it: not signalled\n",
			       (int)pid, comm);
		} else if (err) {
			kvactl_err("kill: %d (%s): %s", (int)pid, comm,
				   strerror(-err));
			failed++;
		} else {
			printf("  sent %s to %d (%s)%s\n",
			       signal_name(o->signal, sn), (int)pid, comm,
			       cont ? ", and SIGCONT: it was stopped" : "");
		}
	}
	ret = failed ? KVACTL_FAIL : KVACTL_OK;
out_holders:
	kvactl_holders_free(&h);
out_snap:
	kvactl_snap_free(&snap);
out_close:
	close(fd);
	return ret;
}
