// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl tier and agent - an arena's lower tier (ARENA_SET_TIER) and
 * the agent that copies frames between the two (TIER).
 *
 * tier NAME --lower LOWER puts a host arena of NAME's frame size below
 * NAME (or, below a host arena, a file arena: create --file): while fewer
 * than --free-target of NAME's frames are free (default its low
 * watermark, at least 1), the module hands NAME's oldest cached
 * frames to an agent to copy down, and PROMOTE's frames to copy back up.
 * tier NAME --none takes the tier away again; LOWER keeps what it holds.
 * A refusal is explained from the two arenas' STAT: the module only says
 * EINVAL.
 *
 * agent NAME is such an agent: a client of NAME and one of its lower
 * arena (named by NAME's STAT), TIER takes of up to 64 jobs that wait up
 * to 250 ms for work (signals and limits are seen), the copies, then TIER
 * DONE with each job's result.  A host arena's frames are copied with raw
 * ioctls and no libkvarena, so that the static build runs it too: each
 * job's two frames mapped through FRAME_FD (the source read-only, the
 * destination writable) and copied with memcpy().  A file arena's frames
 * are ranges of its file, which FRAME_FD hands out (the file, and where
 * the frame is in it): a batch's reads and writes go in flight together
 * (fileio.c, io_uring), through buffers of their own, with O_DIRECT where
 * the filesystem takes it - so that the agent's copies do not fill the
 * page cache with frames that the upper arena holds anyway.  A demotion
 * copies the upper frame (mapped read-only) into its buffer and writes
 * that; a promotion reads and then copies into the upper frame (mapped
 * writable).  A short read or write fails that copy.  A CUDA arena's
 * frames are GPU memory, which mmap() cannot reach: libkvarena's
 * kva_tier_agent() imports, maps and copies them with cuMemcpy*Async() on
 * a stream of its own, loading the CUDA driver as libkvarena does
 * (libcuda.so.1, or $KVA_CUDA_LIBRARY); the static build cannot, and
 * says so.  A copy that cannot be made is given back failed, and an agent
 * that could make none of the copies it took stops, since the next take
 * would hand it the same frames.
 *
 * Runs until SIGINT or SIGTERM, until -n COUNT frames are copied, or until
 * --wait SECONDS go by with nothing to copy (--wait 0: copy what is wanted
 * now, then exit), and then prints what it copied on one line.  Exit
 * status 1 when it stopped for an error or a copy failed.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "kvarenactl.h"

#ifndef KVACTL_STATIC
#include <kvarena.h>
#endif

/* Jobs one take asks for (the module hands out at most as many). */
#define AGENT_BATCH	64u
/* How long one take waits at most: signals and limits are seen. */
#define SLICE_MS	250u

static bool denied(int err)
{
	return err == -EPERM || err == -EBADF;
}

static const char *frames_word(uint64_t n)
{
	return n == 1 ? "frame" : "frames";
}

static int stat_arena(int fd, const char *name, struct kvarena_stat *s)
{
	memset(s, 0, sizeof(*s));
	kvactl_name_copy(s->name, name);
	return kvactl_ioctl(fd, KVARENA_IOC_STAT, s);
}

/* The other arena of @s's tier, NUL-terminated; "" if none. */
static char *tier_of(char buf[KVARENA_NAME_LEN + 1],
		     const struct kvarena_stat *s)
{
	memcpy(buf, s->tier_name, KVARENA_NAME_LEN);
	buf[KVARENA_NAME_LEN] = '\0';
	return buf;
}

/* A STAT of arena @name that failed, as command @cmd. */
static void stat_err(const char *cmd, const char *name, int err)
{
	if (err == -ENOENT)
		kvactl_err("%s: no arena named \"%s\"", cmd, name);
	else if (err == -EACCES)
		kvactl_err("%s: permission denied: the mode of \"%s\" does not let this user view it",
			   cmd, name);
	else
		kvactl_err("%s: \"%s\": %s", cmd, name, strerror(-err));
}

/* ---- tier ---------------------------------------------------------------- */

/*
 * Why the module refused @lower below @s (EINVAL): the first of its rules
 * the two arenas' STATs break now.
 */
static void link_refused(int fd, const struct kvarena_stat *s,
			 const char *lower)
{
	struct kvarena_stat up, lo;
	char b[2][KVACTL_NUM_LEN], other[KVARENA_NAME_LEN + 1];
	const char *name = s->name;
	char why[160] = "";

	if (stat_arena(fd, name, &up))
		up = *s;
	if (up.tier == KVARENA_STAT_TIER_UPPER) {
		kvactl_err("tier: \"%s\" is the lower tier of \"%s\": a lower tier has none of its own",
			   name, tier_of(other, &up));
		return;
	}
	if (up.mem_kind == KVARENA_MEM_FILE) {
		kvactl_err("tier: \"%s\" is a file arena: it goes below a host arena, and has no lower tier of its own",
			   name);
		return;
	}
	if (stat_arena(fd, lower, &lo))
		memset(&lo, 0, sizeof(lo));
	else if (lo.mem_kind == KVARENA_MEM_FILE &&
		 up.mem_kind != KVARENA_MEM_HOST)
		snprintf(why, sizeof(why), ": it is a file arena, and \"%s\" a %s arena",
			 name, kvactl_mem_kind(up.mem_kind));
	else if (lo.mem_kind != KVARENA_MEM_HOST &&
		 lo.mem_kind != KVARENA_MEM_FILE)
		snprintf(why, sizeof(why), ": it is a %s arena",
			 kvactl_mem_kind(lo.mem_kind));
	else if (lo.frame_size != up.frame_size)
		snprintf(why, sizeof(why), ": its frames are %s, those of \"%s\" %s",
			 kvactl_fmt_size_exact(b[0], lo.frame_size), name,
			 kvactl_fmt_size_exact(b[1], up.frame_size));
	else if (lo.tier == KVARENA_STAT_TIER_LOWER)
		snprintf(why, sizeof(why), ": it has a lower tier of its own, \"%s\"",
			 tier_of(other, &lo));
	else if (lo.tier == KVARENA_STAT_TIER_UPPER)
		snprintf(why, sizeof(why), ": it is the lower tier of \"%s\" already",
			 tier_of(other, &lo));
	kvactl_err("tier: \"%s\" cannot be the lower tier of \"%s\"%s (LOWER must be a host arena, or a file arena below a host arena, with frames of %s, below no other arena and with no lower tier of its own)",
		   lower, name, why,
		   kvactl_fmt_size_exact(b[0], up.frame_size));
}

/* Gangs and their members take no tier: which of the two is one. */
static void gang_refused(const char *name, const char *lower, int err)
{
	struct kvactl_gang up, lo;

	kvactl_gang_read(name, &up);
	kvactl_gang_read(lower, &lo);
	if (kvactl_is_gang(&up) || kvactl_is_gang(&lo))
		kvactl_err("tier: \"%s\" is a gang: a gang has no lower tier and is none (its members' memory is its frames)",
			   kvactl_is_gang(&up) ? name : lower);
	else if (kvactl_is_member(&up) || kvactl_is_member(&lo))
		kvactl_err("tier: \"%s\" is a member of gang \"%s\": it takes no tier while ganged (kvarenactl destroy %s first)",
			   kvactl_is_member(&up) ? name : lower,
			   kvactl_is_member(&up) ? up.gang : lo.gang,
			   kvactl_is_member(&up) ? up.gang : lo.gang);
	else
		kvactl_err("tier: %s", strerror(-err));
}

static void link_err(int fd, const struct kvactl_opts *o,
		     const struct kvarena_stat *s, int err)
{
	char other[KVARENA_NAME_LEN + 1];
	struct kvarena_stat now;
	const char *name = s->name;

	if (denied(err)) {
		kvactl_err("tier: permission denied (needs CAP_SYS_ADMIN)");
	} else if (err == -ENOENT) {
		/* Which of the two is missing. */
		kvactl_err("tier: no arena named \"%s\"",
			   stat_arena(fd, name, &now) == -ENOENT ? name :
			   o->lower);
	} else if (err == -EEXIST) {
		if (!stat_arena(fd, name, &now) &&
		    now.tier == KVARENA_STAT_TIER_LOWER)
			kvactl_err("tier: \"%s\" has a lower tier already, \"%s\" (kvarenactl tier %s --none first)",
				   name, tier_of(other, &now), name);
		else
			kvactl_err("tier: \"%s\" has a lower tier already (kvarenactl tier %s --none first)",
				   name, name);
	} else if (err == -EINVAL) {
		link_refused(fd, s, o->lower);
	} else if (err == -EOPNOTSUPP || err == -EBUSY) {
		gang_refused(name, o->lower, err);
	} else {
		kvactl_err("tier: %s", strerror(-err));
	}
}

static void unlink_err(int fd, const struct kvarena_stat *s, int err)
{
	char lower[KVARENA_NAME_LEN + 1];
	struct kvarena_stat now;
	const char *name = s->name;

	tier_of(lower, s);
	if (denied(err))
		kvactl_err("tier: permission denied (needs CAP_SYS_ADMIN)");
	else if (err == -ENOENT && stat_arena(fd, name, &now) == -ENOENT)
		kvactl_err("tier: no arena named \"%s\"", name);
	else if (err == -ENOENT)
		kvactl_err("tier: \"%s\" has no lower tier", name);
	else if (err == -EBUSY && s->tier == KVARENA_STAT_TIER_LOWER)
		kvactl_err("tier: copies between \"%s\" and \"%s\" are under way: try again once they are done",
			   name, lower);
	else if (err == -EBUSY)
		kvactl_err("tier: copies of \"%s\" are under way: try again once they are done",
			   name);
	else
		kvactl_err("tier: %s", strerror(-err));
}

/* "the arena's 16 frames", or "the 64 frames the arena may grow to". */
static char *table_desc(char buf[64], const struct kvarena_stat *s)
{
	if (kvactl_max_frames(s) != s->nr_frames)
		snprintf(buf, 64, "the %u frames the arena may grow to",
			 kvactl_max_frames(s));
	else
		snprintf(buf, 64, "the arena's %u frames", s->nr_frames);
	return buf;
}

/* What the link does, on one line. */
static void link_report(const struct kvactl_opts *o,
			const struct kvarena_stat *s)
{
	uint32_t target = o->free_target ? o->free_target : s->low_watermark;
	char b[KVACTL_NUM_LEN];
	const char *name = s->name;

	printf("tier: %s is the lower tier of %s: cached frames of %s go down to it ",
	       o->lower, name, name);
	if (target > 1)
		printf("while fewer than %u frames (%s) of %s are free%s", target,
		       kvactl_fmt_size(b, (uint64_t)target * s->frame_size,
				       false),
		       name, o->free_target ? "" : " (its low watermark)");
	else
		printf("while no frame of %s is free", name);
	printf("; kvarenactl agent %s copies them\n", name);
}

int kvactl_cmd_tier(const struct kvactl_opts *opts)
{
	struct kvactl_opts copy = *opts, *o = &copy;
	const char *name = o->args[0];
	struct kvarena_arena_tier t = { 0 };
	char lower[KVARENA_NAME_LEN + 1], d[64];
	struct kvarena_stat s;
	int fd, err, ret = KVACTL_FAIL;

	fd = kvactl_open(true, "tier");
	if (fd < 0)
		return KVACTL_FAIL;
	err = stat_arena(fd, name, &s);
	if (err == -EACCES) {
		/* An administrator may view every arena. */
		kvactl_err("tier: permission denied (needs CAP_SYS_ADMIN)");
		goto out;
	}
	if (err) {
		stat_err("tier", name, err);
		goto out;
	}
	kvactl_name_copy(t.name, name);
	if (o->tier_none) {
		err = kvactl_ioctl(fd, KVARENA_IOC_ARENA_SET_TIER, &t);
		if (err) {
			unlink_err(fd, &s, err);
			goto out;
		}
		if (s.tier == KVARENA_STAT_TIER_LOWER)
			printf("tier: %s has no lower tier now; %s keeps what it holds, an arena of its own again\n",
			       name, tier_of(lower, &s));
		else
			printf("tier: %s has no lower tier now\n", name);
		ret = KVACTL_OK;
		goto out;
	}
	/* --free-target 64Mi: in the arena's frames. */
	ret = kvactl_frames_resolve(o, s.frame_size);
	if (ret)
		goto out;
	ret = KVACTL_FAIL;
	/* Say which number is wrong; the module would take it. */
	if (o->free_target > kvactl_max_frames(&s)) {
		kvactl_err("tier: --free-target %u is above %s", o->free_target,
			   table_desc(d, &s));
		goto out;
	}
	kvactl_name_copy(t.lower, o->lower);
	t.free_target = o->free_target;
	err = kvactl_ioctl(fd, KVARENA_IOC_ARENA_SET_TIER, &t);
	if (err) {
		link_err(fd, o, &s, err);
		goto out;
	}
	link_report(o, &s);
	ret = KVACTL_OK;
out:
	close(fd);
	return ret;
}

/* ---- agent --------------------------------------------------------------- */

static volatile sig_atomic_t stopped;

static void on_stop(int sig)
{
	(void)sig;
	stopped = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct agent {
	const char *name;		/* the upper arena */
	char lower[KVARENA_NAME_LEN + 1];
	int up, lo;			/* the agent's clients of the two */
#ifndef KVACTL_STATIC
	struct kva_arena *ua, *la;	/* the same, a CUDA arena's */
#endif
	bool cuda;			/* NAME is a CUDA arena */
	struct kvt_fio *fio;		/* the lower arena is a file arena's */
	uint64_t frame_size;
	uint64_t demoted, promoted, failed;
	uint64_t copy_ns;		/* spent mapping and copying */
	bool said_map, said_frame_fd, said_buffered, said_io;
};

/*
 * Map frame @h of the client file @fd, @prot; the mapping and its size,
 * or NULL after saying why (once) and setting *@err.
 */
static void *map_frame(struct agent *ag, int fd, uint64_t h, int prot,
		       uint64_t *size, int *err)
{
	struct kvarena_frame_fd ff = { .handle = h };
	const char *arena = fd == ag->up ? ag->name : ag->lower;
	void *p;

	*err = kvactl_ioctl(fd, KVARENA_IOC_FRAME_FD, &ff);
	if (*err) {
		if (!ag->said_frame_fd)
			kvactl_err("agent: FRAME_FD of frame %u of \"%s\": %s; the copy is given back failed",
				   KVARENA_HANDLE_IDX(h), arena,
				   strerror(-*err));
		ag->said_frame_fd = true;
		return NULL;
	}
	p = mmap(NULL, ff.size, prot, MAP_SHARED, ff.fd, (off_t)ff.offset);
	*err = p == MAP_FAILED ? -errno : 0;
	close(ff.fd);
	if (p == MAP_FAILED) {
		if (!ag->said_map)
			kvactl_err("agent: cannot map frame %u of \"%s\" (%s): this kvarenactl copies host-mappable frames only, not a CUDA arena's GPU memory; the copy is given back failed",
				   KVARENA_HANDLE_IDX(h), arena,
				   strerror(-*err));
		ag->said_map = true;
		return NULL;
	}
	*size = ff.size;
	return p;
}

/* Job @j's copy: its result, 0 or -errno. */
static int copy_job(struct agent *ag, const struct kvarena_tier_job *j)
{
	bool down = j->op == KVARENA_TIER_DEMOTE;
	uint64_t ssize = 0, dsize = 0, t0 = now_ns();
	void *src = NULL, *dst = NULL;
	int err = -EINVAL;

	if (j->op == KVARENA_TIER_DEMOTE || j->op == KVARENA_TIER_PROMOTE) {
		src = map_frame(ag, down ? ag->up : ag->lo,
				down ? j->upper : j->lower, PROT_READ, &ssize,
				&err);
		if (src)
			dst = map_frame(ag, down ? ag->lo : ag->up,
					down ? j->lower : j->upper,
					PROT_READ | PROT_WRITE, &dsize, &err);
	}
	if (src && dst && ssize == dsize) {
		memcpy(dst, src, ssize);
		err = 0;
	} else if (src && dst) {
		err = -EINVAL;
	}
	if (src)
		munmap(src, ssize);
	if (dst)
		munmap(dst, dsize);
	ag->copy_ns += now_ns() - t0;
	return err;
}

/*
 * Frame @h of the file arena below: FRAME_FD's fd of its file, with
 * O_DIRECT where the filesystem takes it, and the frame's offset in it in
 * *@off; or -errno after saying why (once).
 */
static int file_frame(struct agent *ag, uint64_t h, uint64_t *off)
{
	struct kvarena_frame_fd ff = { .handle = h };
	int err = kvactl_ioctl(ag->lo, KVARENA_IOC_FRAME_FD, &ff);

	if (err) {
		if (!ag->said_frame_fd)
			kvactl_err("agent: FRAME_FD of frame %u of \"%s\": %s; the copy is given back failed",
				   KVARENA_HANDLE_IDX(h), ag->lower,
				   strerror(-err));
		ag->said_frame_fd = true;
		return err;
	}
	if (ff.size != ag->frame_size) {
		close(ff.fd);
		return -EINVAL;
	}
	/* tmpfs before Linux 6.6 has none: the page cache it is. */
	err = kvt_fio_direct(ff.fd);
	if (err && !ag->said_buffered)
		kvactl_err("agent: the file of \"%s\" takes no O_DIRECT (%s): reading and writing it through the page cache",
			   ag->lower, strerror(-err));
	ag->said_buffered |= err != 0;
	*off = ff.offset;
	return ff.fd;
}

/* A file copy under way in a slot of ag->fio. */
struct file_copy {
	struct kvarena_tier_job *job;	/* NULL: the slot is free */
	int fd;				/* the lower frame's file */
};

/*
 * Job @j's copy started in slot @slot (@c): a demotion's upper frame
 * copied into the slot's buffer and its write queued, a promotion's read
 * queued.  0, or the job's result.
 */
static int file_start(struct agent *ag, unsigned int slot,
		      struct kvarena_tier_job *j, struct file_copy *c)
{
	bool down = j->op == KVARENA_TIER_DEMOTE;
	uint64_t off = 0, size = 0;
	void *src;
	int fd, err = 0;

	if (j->op != KVARENA_TIER_DEMOTE && j->op != KVARENA_TIER_PROMOTE)
		return -EINVAL;
	fd = file_frame(ag, j->lower, &off);
	if (fd < 0)
		return fd;
	if (down) {
		src = map_frame(ag, ag->up, j->upper, PROT_READ, &size, &err);
		if (src && size == ag->frame_size)
			memcpy(kvt_fio_buf(ag->fio, slot), src, size);
		else if (src)
			err = -EINVAL;
		if (src)
			munmap(src, size);
	}
	if (!err)
		err = kvt_fio_queue(ag->fio, slot, down, fd, off);
	if (err) {
		close(fd);
		return err;
	}
	c->job = j;
	c->fd = fd;
	return 0;
}

/*
 * The I/O of slot @slot (@c) ended with @res: a promotion's frame copied
 * up into the upper frame.  The job's result.
 */
static int file_finish(struct agent *ag, unsigned int slot,
		       struct file_copy *c, int res)
{
	const struct kvarena_tier_job *j = c->job;
	bool down = j->op == KVARENA_TIER_DEMOTE;
	uint64_t size = 0;
	void *dst;
	int err;

	close(c->fd);
	c->job = NULL;
	/* A short read or write leaves part of the frame behind. */
	err = res < 0 ? res : (uint64_t)res != ag->frame_size ? -EIO : 0;
	if (err) {
		if (!ag->said_io)
			kvactl_err("agent: %s frame %u of \"%s\": %s; the copy is given back failed",
				   down ? "writing" : "reading",
				   KVARENA_HANDLE_IDX(j->lower), ag->lower,
				   res < 0 ? strerror(-res) : "short");
		ag->said_io = true;
		return err;
	}
	if (down)
		return 0;
	dst = map_frame(ag, ag->up, j->upper, PROT_READ | PROT_WRITE, &size,
			&err);
	if (dst && size == ag->frame_size)
		memcpy(dst, kvt_fio_buf(ag->fio, slot), size);
	else if (dst)
		err = -EINVAL;
	if (dst)
		munmap(dst, size);
	return err;
}

/*
 * The copies of @n jobs to or from a file arena, as many in flight as
 * ag->fio has slots: each slot whose I/O ends takes the next job.  Each
 * job's result in it.  Where the ring itself breaks, the agent exits.
 */
static void copy_file_jobs(struct agent *ag, struct kvarena_tier_job *jobs,
			   int n)
{
	struct file_copy c[KVT_FIO_MAX_DEPTH] = { { 0 } };
	unsigned int depth = kvt_fio_depth(ag->fio), busy = 0, slot;
	uint64_t t0 = now_ns();
	int next = 0, res, err = 0;

	while (next < n || busy) {
		for (slot = 0; slot < depth && next < n; slot++) {
			if (c[slot].job)
				continue;
			jobs[next].result = file_start(ag, slot, &jobs[next],
						       &c[slot]);
			busy += !jobs[next++].result;
		}
		if (!busy)
			continue;
		err = kvt_fio_reap(ag->fio, &slot, &res);
		if (err)
			break;
		c[slot].job->result = file_finish(ag, slot, &c[slot], res);
		busy--;
	}
	if (err) {
		/*
		 * I/O may still be in flight, into buffers and file ranges
		 * that a copy given back would let go of.  Exit instead: the
		 * kernel waits for the ring's requests before it releases
		 * the agent's files, and the module then undoes the copies.
		 */
		kvactl_err("agent: io_uring: %s: stopping; the copies taken end undone",
			   strerror(-err));
		fflush(stdout);
		_exit(KVACTL_FAIL);
	}
	ag->copy_ns += now_ns() - t0;
}

/* TIER: take up to @count jobs, waiting up to @timeout_ms; n or -errno. */
static int take(struct agent *ag, struct kvarena_tier_job *jobs,
		unsigned int count, unsigned int timeout_ms)
{
	struct kvarena_tier t = {
		.jobs = (uint64_t)(uintptr_t)jobs, .count = count,
		.timeout_ms = timeout_ms, .lower_fd = ag->lo,
	};
	int err = kvactl_ioctl(ag->up, KVARENA_IOC_TIER, &t);

	return err ? err : (int)t.nr_done;
}

static int give_back(struct agent *ag, struct kvarena_tier_job *jobs,
		     unsigned int n)
{
	struct kvarena_tier t = {
		.jobs = (uint64_t)(uintptr_t)jobs, .count = n,
		.flags = KVARENA_TIER_DONE,
	};

	return kvactl_ioctl(ag->up, KVARENA_IOC_TIER, &t);
}

/* A client of arena @name on @fd, as the agent; 0 or -1 after saying why. */
static int attach(int fd, const char *name)
{
	struct kvarena_attach at = { 0 };
	int err;

	kvactl_name_copy(at.name, name);
	snprintf(at.label, sizeof(at.label), "agent");
	err = kvactl_ioctl(fd, KVARENA_IOC_ATTACH, &at);
	if (err == -ENOENT)
		kvactl_err("agent: no arena named \"%s\"", name);
	else if (err == -EACCES)
		kvactl_err("agent: permission denied: the mode of \"%s\" does not let this user attach",
			   name);
	else if (err == -EPERM)
		kvactl_err("agent: permission denied: the client policy of \"%s\" refuses this user (kvarenactl limit %s)",
			   name, name);
	else if (err == -ENODATA)
		kvactl_err("agent: \"%s\" is not all backed yet (kvarenactl stat %s)",
			   name, name);
	else if (err)
		kvactl_err("agent: attaching to \"%s\": %s", name, strerror(-err));
	return err ? -1 : 0;
}

/* Why a take failed. */
static void take_err(const struct agent *ag, int err)
{
	if (err == -EOPNOTSUPP)
		kvactl_err("agent: \"%s\" has no lower tier any more: stopping",
			   ag->name);
	else if (err == -EINVAL)
		kvactl_err("agent: \"%s\" is no longer the lower tier of \"%s\": stopping",
			   ag->lower, ag->name);
	else if (err == -EPERM)
		kvactl_err("agent: permission denied: only the owner of \"%s\" or CAP_SYS_ADMIN may copy its frames",
			   ag->name);
	else if (err == -ESHUTDOWN)
		kvactl_err("agent: the agent's client of \"%s\" was evicted: stopping",
			   ag->name);
	else
		kvactl_err("agent: \"%s\": %s", ag->name, strerror(-err));
}

/* Every copy of a take failed. */
static void none_made(int n)
{
	/* The next take would hand the same frames. */
	kvactl_err("agent: none of the %d %s taken could be made: stopping",
		   n, n == 1 ? "copy" : "copies");
}

/* The buffers and ring of a file arena's copies; 0 or -1 after saying why. */
static int open_fio(struct agent *ag)
{
	char b[KVACTL_NUM_LEN];
	int ring_err = 0;

	if (kvt_fio_open(&ag->fio, ag->frame_size, &ring_err)) {
		kvactl_err("agent: no memory for %u buffers of a frame (%s each)",
			   KVT_FIO_MAX_DEPTH,
			   kvactl_fmt_size(b, ag->frame_size, false));
		return -1;
	}
	if (ring_err)
		kvactl_err("agent: io_uring: %s: reading and writing the file with pread and pwrite",
			   strerror(-ring_err));
	return 0;
}

/* The upper arena's lower tier, from its STAT; 0 or -1 after saying why. */
static int find_lower(struct agent *ag)
{
	char other[KVARENA_NAME_LEN + 1];
	struct kvarena_stat s;
	int err = stat_arena(ag->up, ag->name, &s);

	if (err) {
		stat_err("agent", ag->name, err);
		return -1;
	}
	if (s.tier == KVARENA_STAT_TIER_UPPER) {
		kvactl_err("agent: \"%s\" is the lower tier of \"%s\": run the agent of the upper arena (kvarenactl agent %s)",
			   ag->name, tier_of(other, &s), other);
		return -1;
	}
	if (s.tier != KVARENA_STAT_TIER_LOWER) {
		kvactl_err("agent: \"%s\" has no lower tier (kvarenactl tier %s --lower LOWER first)",
			   ag->name, ag->name);
		return -1;
	}
	tier_of(ag->lower, &s);
	ag->frame_size = s.frame_size;
	ag->cuda = s.mem_kind == KVARENA_MEM_CUDA;
	/* A file arena below: its buffers and ring, once for every round. */
	err = stat_arena(ag->up, ag->lower, &s);
	if (err) {
		stat_err("agent", ag->lower, err);
		return -1;
	}
	if (s.mem_kind == KVARENA_MEM_FILE)
		return open_fio(ag);
	return 0;
}

/*
 * One round with raw ioctls: up to @want copies taken, waiting up to
 * @slice ms, made and given back; the number given back, or -errno after
 * saying why (-EINTR: a signal, silently).
 */
static int raw_round(struct agent *ag, unsigned int want, unsigned int slice)
{
	struct kvarena_tier_job jobs[AGENT_BATCH];
	unsigned int ok = 0, down = 0;	/* copies made, of them down */
	int n, err;

	memset(jobs, 0, sizeof(jobs));
	n = take(ag, jobs, want, slice);
	if (n <= 0) {
		if (n < 0 && n != -EINTR)
			take_err(ag, n);
		return n;
	}
	if (ag->fio)
		copy_file_jobs(ag, jobs, n);
	for (int i = 0; i < n; i++) {
		if (!ag->fio)
			jobs[i].result = copy_job(ag, &jobs[i]);
		ok += !jobs[i].result;
		down += !jobs[i].result && jobs[i].op == KVARENA_TIER_DEMOTE;
	}
	err = give_back(ag, jobs, (unsigned int)n);
	if (err) {
		/* Not taken back: they end with our file. */
		kvactl_err("agent: giving %d %s back to \"%s\": %s", n,
			   n == 1 ? "copy" : "copies", ag->name,
			   strerror(-err));
		ag->failed += (unsigned int)n;
		return err;
	}
	ag->demoted += down;
	ag->promoted += ok - down;
	ag->failed += (unsigned int)n - ok;
	if (!ok) {
		none_made(n);
		return -EIO;
	}
	return n;
}

#ifdef KVACTL_STATIC

static int lib_round(struct agent *ag, unsigned int want, unsigned int slice)
{
	(void)ag, (void)want, (void)slice;
	return -EOPNOTSUPP;	/* never: open_cuda() refused */
}

static int open_cuda(struct agent *ag)
{
	kvactl_err("agent: \"%s\" is a CUDA arena: this kvarenactl is statically linked and cannot load libcuda.so.1 (the installed kvarenactl copies GPU memory)",
		   ag->name);
	return -1;
}

static void close_cuda(struct agent *ag)
{
	(void)ag;
}

#else

/* One round of a CUDA arena's copies, by libkvarena: as raw_round(). */
static int lib_round(struct agent *ag, unsigned int want, unsigned int slice)
{
	struct kva_tier_counts c = { 0 };
	int n = kva_tier_agent(ag->ua, ag->la, want, (int)slice, &c);

	ag->demoted += c.demoted;
	ag->promoted += c.promoted;
	ag->failed += c.failed;
	ag->copy_ns += c.copy_ns;
	if (n == -EIO)
		none_made((int)c.failed);
	else if (n < 0 && n != -EINTR)
		take_err(ag, n);
	return n;
}

/* libkvarena's clients of the two arenas; 0 or -1 after saying why. */
static int open_cuda(struct agent *ag)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_DEVICE, .label = "agent",
		.device = kvactl_device(), .transport = KVA_TRANSPORT_IOCTL,
	};
	const char *names[2] = { ag->name, ag->lower };
	struct kva_arena **a[2] = { &ag->ua, &ag->la };
	int ret = 0;

	for (int i = 0; i < 2 && !ret; i++) {
		o.name = names[i];
		ret = kva_open(&o, a[i]);
		if (ret == -ENOENT)
			kvactl_err("agent: no arena named \"%s\"", names[i]);
		else if (ret == -EACCES || ret == -EPERM)
			kvactl_err("agent: permission denied: \"%s\" does not let this user attach",
				   names[i]);
		else if (ret == -ELIBACC)
			kvactl_err("agent: cannot load the CUDA driver (libcuda.so.1, or $KVA_CUDA_LIBRARY)");
		else if (ret)
			kvactl_err("agent: attaching to \"%s\": %s", names[i],
				   strerror(-ret));
	}
	return ret ? -1 : 0;
}

static void close_cuda(struct agent *ag)
{
	if (ag->la)
		kva_close(ag->la);
	if (ag->ua)
		kva_close(ag->ua);
}

#endif

/* What it copied, on one line. */
static void agent_report(const struct agent *ag, uint64_t t0, bool exact)
{
	uint64_t copied = ag->demoted + ag->promoted;
	uint64_t bytes = copied * ag->frame_size;
	double rate = ag->copy_ns ?
		      (double)bytes * 1e9 / (double)ag->copy_ns : 0;
	char b[2][KVACTL_NUM_LEN];

	printf("%s: %llu %s demoted, %llu promoted (%s) in %.1f s, copying at %s/s",
	       ag->name, (unsigned long long)ag->demoted,
	       frames_word(ag->demoted), (unsigned long long)ag->promoted,
	       kvactl_fmt_size(b[0], bytes, exact),
	       (double)(now_ns() - t0) / 1e9,
	       kvactl_fmt_size(b[1], (uint64_t)rate, exact));
	if (ag->failed)
		printf("; %llu %s failed", (unsigned long long)ag->failed,
		       ag->failed == 1 ? "copy" : "copies");
	putchar('\n');
}

int kvactl_cmd_agent(const struct kvactl_opts *o)
{
	bool wait = kvactl_given(o, OPT_WAIT);
	bool count = kvactl_given(o, OPT_ITERATIONS);
	struct sigaction sa = { .sa_handler = on_stop };
	struct agent ag = { .name = o->args[0], .up = -1, .lo = -1 };
	uint64_t t0, idle_since;
	int err = 0, ret = KVACTL_FAIL;

	ag.up = kvactl_open(true, "agent");
	if (ag.up < 0)
		return KVACTL_FAIL;
	if (find_lower(&ag))
		goto out;
	if (ag.cuda) {
		if (open_cuda(&ag))
			goto out;
	} else {
		ag.lo = kvactl_open(true, "agent");
		if (ag.lo < 0 || attach(ag.up, ag.name) ||
		    attach(ag.lo, ag.lower))
			goto out;
	}
	/* No SA_RESTART: a signal ends the module's wait at once. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	t0 = idle_since = now_ns();
	while (!stopped) {
		unsigned int want = AGENT_BATCH, slice = SLICE_MS;
		uint64_t copied = ag.demoted + ag.promoted;
		uint64_t idle_ms = (now_ns() - idle_since) / 1000000;
		uint64_t left = o->wait_ms > idle_ms ? o->wait_ms - idle_ms : 0;
		int n;

		if (count && o->iterations - copied < want)
			want = (unsigned int)(o->iterations - copied);
		if (wait && left < slice)
			slice = (unsigned int)left;
		n = ag.cuda ? lib_round(&ag, want, slice) :
			      raw_round(&ag, want, slice);
		if (n == -EINTR)
			continue;
		if (n < 0) {
			err = n;
			break;
		}
		if (n)
			idle_since = now_ns();
		if (count && ag.demoted + ag.promoted >= o->iterations)
			break;
		if (wait && !n &&
		    (now_ns() - idle_since) / 1000000 >= o->wait_ms)
			break;
	}
	agent_report(&ag, t0, o->exact_bytes);
	ret = err || ag.failed ? KVACTL_FAIL : KVACTL_OK;
out:
	kvt_fio_close(ag.fio);
	if (ag.cuda)
		close_cuda(&ag);
	if (ag.lo >= 0)
		close(ag.lo);
	close(ag.up);
	return ret;
}
