// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl resize - an arena shrunk or grown within its table
 * (create --max-frames), with ARENA_RESIZE.
 *
 * A shrink takes free and cached frames out at once and their memory goes
 * back to the machine; held frames are taken as their clients free them,
 * and --wait waits that long for them (exit status 1 if some are still
 * held then: the shrink goes on without us, until done or --cancel).
 *
 * A grow brings absent frames back in; they need backing.  A host arena
 * made by create has it for its whole table (one sparse memfd), so the
 * module only allocates the pages again: MemAvailable is checked first,
 * as create does.  A CUDA arena's frames lose their allocation when a
 * shrink takes them, so new ones are made and registered first, one per
 * frame, as create does: SET_BACKING tells which frames lack one, by
 * refusing the others with EBUSY - and a frame whose old memory a client
 * process imported, until that process has exited (it would map its old
 * import again, not the new memory).  A file arena is not resized.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "kvarenactl.h"

static const char *frames_word(uint64_t n)
{
	return n == 1 ? "frame" : "frames";
}

/* "3 frames (6.0Mi)" */
static char *frames_desc(char buf[64], uint64_t n, uint64_t frame_size,
			 bool exact)
{
	char b[KVACTL_NUM_LEN];

	snprintf(buf, 64, "%llu %s (%s)", (unsigned long long)n,
		 frames_word(n), kvactl_fmt_size(b, n * frame_size, exact));
	return buf;
}

/*
 * New GPU memory for @need absent frames that have none: one allocation
 * per frame, registered at the first index that takes it.  0, or -1 after
 * saying why.
 */
static int back_cuda_frames(int fd, const struct kvarena_stat *s,
			    uint32_t need)
{
	struct kvactl_cuda *cu;
	uint32_t idx = 0, done = 0;
	int dfd = -1, err = 0;

	cu = kvactl_cuda_open(s->mem_dev, s->frame_size);
	if (!cu)
		return -1;
	while (done < need && idx < kvactl_max_frames(s)) {
		struct kvarena_set_backing b = {
			.first_frame = idx,
			.nr_frames = 1,
		};

		if (dfd < 0) {
			dfd = kvactl_cuda_frame(cu);
			if (dfd < 0) {
				err = -1;
				break;
			}
		}
		b.fd = dfd;
		kvactl_name_copy(b.name, s->name);
		err = kvactl_ioctl(fd, KVARENA_IOC_ARENA_SET_BACKING, &b);
		idx++;
		if (err == -EBUSY) {
			/*
			 * It has memory (in the arena, or kept for a grow),
			 * or a process still has its old memory imported.
			 */
			err = 0;
			continue;
		}
		if (err) {
			kvactl_err("resize: registering the memory of frame %u: %s",
				   idx - 1, strerror(-err));
			break;
		}
		/* The module holds the file now. */
		close(dfd);
		dfd = -1;
		done++;
	}
	if (dfd >= 0)
		close(dfd);
	kvactl_cuda_close(cu);
	if (!err && done < need) {
		kvactl_err("resize: only %u of the %u absent frames needed may take new memory: the others' old memory is still imported by client processes of \"%s\", and comes back when they exit (kvarenactl clients %s)",
			   done, need, s->name, s->name);
		err = -1;
	}
	return err ? -1 : 0;
}

/* The new memory a grow to @target needs, made or checked. */
static int prepare_grow(int fd, const struct kvactl_opts *o,
			const struct kvarena_stat *s, uint32_t target)
{
	uint32_t in = target - s->nr_frames;	/* frames brought in */
	char b[64];

	if (s->state & KVARENA_STATE_NO_BACKING)
		return 0;
	if (s->mem_kind == KVARENA_MEM_CUDA) {
		/* Absent frames with memory count in nr_backed. */
		uint32_t kept = s->nr_backed > s->nr_frames ?
				s->nr_backed - s->nr_frames : 0;

		return kept >= in ? 0 : back_cuda_frames(fd, s, in - kept);
	}
	if (kvactl_check_host_memory(o, "resize",
				     (uint64_t)in * s->frame_size)) {
		kvactl_err("resize: growing \"%s\" by %s needs that memory",
			   s->name, frames_desc(b, in, s->frame_size, false));
		return -1;
	}
	return 0;
}

static void resize_err(const struct kvarena_stat *s, uint32_t target, int err)
{
	const char *name = s->name;

	if (err == -EPERM || err == -EBADF)
		kvactl_err("resize: permission denied (needs CAP_SYS_ADMIN)");
	else if (err == -ENOENT)
		kvactl_err("resize: no arena named \"%s\"", name);
	else if (err == -EBUSY)
		kvactl_err("resize: the clients' guarantees (--min) of \"%s\" add up to more than %u frames: lower them first (kvarenactl clients %s)",
			   name, target, name);
	else if (err == -ENODATA && kvactl_unbacked(s))
		kvactl_err("resize: \"%s\" is not all backed yet (kvarenactl stat %s)",
			   name, name);
	else if (err == -ENODATA)
		kvactl_err("resize: too few of the absent frames of \"%s\" have memory to grow to %u",
			   name, target);
	else if (err == -EINVAL)
		kvactl_err("resize: the module refused %u frames for \"%s\" (may grow to %u)",
			   target, name, kvactl_max_frames(s));
	else if (err == -EOPNOTSUPP)
		kvactl_err("resize: \"%s\" cannot be resized", name);
	else if (err == -ENOMEM)
		kvactl_err("resize: no memory for %u more frames of \"%s\"",
			   target - s->nr_frames, name);
	else
		kvactl_err("resize: %s", strerror(-err));
}

/* What happened, on one line; a shrink still waiting after --wait fails. */
static int report(const struct kvactl_opts *o, const struct kvarena_stat *s,
		  const struct kvarena_arena_resize *r)
{
	uint64_t fs = s->frame_size;
	uint32_t becoming = r->out_frames - r->out_shrinking;
	char b[3][64];

	if (o->cancel) {
		printf("resize: %s is %s; no shrink waits%s\n", s->name,
		       frames_desc(b[0], r->out_frames, fs, false),
		       s->nr_shrinking ? ", the frames still held stay" : "");
		return KVACTL_OK;
	}
	/* While a shrink waits, the arena is larger than it is becoming. */
	printf("resize: %s is %s", s->name,
	       frames_desc(b[0], r->out_frames, fs, false));
	if (r->out_shrinking)
		printf(", shrinking to %s",
		       frames_desc(b[1], becoming, fs, false));
	if (r->out_frames < s->nr_frames)
		printf("; %s of memory returned",
		       frames_desc(b[1], s->nr_frames - r->out_frames, fs, false));
	else if (r->out_frames > s->nr_frames)
		printf("; %s brought in, new memory",
		       frames_desc(b[1], r->out_frames - s->nr_frames, fs, false));
	if (r->out_shrinking)
		printf("; %s still held, taken as they are freed",
		       frames_desc(b[2], r->out_shrinking, fs, false));
	putchar('\n');
	if (r->out_shrinking && o->wait_ms) {
		kvactl_err("resize: after %u.%03u s, %s of \"%s\" still held: the shrink goes on as they are freed (kvarenactl resize %s --cancel stops it)",
			   o->wait_ms / 1000, o->wait_ms % 1000,
			   frames_desc(b[0], r->out_shrinking, fs, false),
			   s->name, s->name);
		return KVACTL_FAIL;
	}
	return KVACTL_OK;
}

int kvactl_cmd_resize(const struct kvactl_opts *opts)
{
	struct kvactl_opts copy = *opts, *o = &copy;
	struct kvarena_arena_resize r = { 0 };
	const struct kvarena_stat *s;
	struct kvactl_snap snap;
	char b[2][KVACTL_NUM_LEN];
	int fd, err, ret = KVACTL_FAIL;

	fd = kvactl_open(true, "resize");
	if (fd < 0)
		return KVACTL_FAIL;
	if (kvactl_snap_read(fd, o->cmd, o->args[0], false, &snap))
		goto out_close;
	s = &snap.arenas[0].st;
	/* The module would say EBUSY or EOPNOTSUPP: say why. */
	if (kvactl_is_member(&snap.arenas[0].gang)) {
		kvactl_err("resize: \"%s\" is a member of gang \"%s\": its frames are the gang's, and keep their number while it is ganged (kvarenactl destroy %s first)",
			   s->name, snap.arenas[0].gang.gang,
			   snap.arenas[0].gang.gang);
		goto out_free;
	}
	if (kvactl_is_gang(&snap.arenas[0].gang)) {
		kvactl_err("resize: \"%s\" is a gang: its frames are its members', as many as each has (destroy it, resize them, and make it again)",
			   s->name);
		goto out_free;
	}
	if (s->mem_kind == KVARENA_MEM_FILE) {
		kvactl_err("resize: \"%s\" is a file arena: its frames are ranges of its file, and it keeps its size (destroy it and create it again)",
			   s->name);
		goto out_free;
	}
	if (!s->max_frames) {
		kvactl_err("resize: this kvarena.ko cannot resize arenas (no ARENA_RESIZE)");
		goto out_free;
	}
	/* --bytes 1Gi, --frames 512Mi: in the arena's frames. */
	ret = kvactl_frames_resolve(o, s->frame_size);
	if (ret)
		goto out_free;
	ret = KVACTL_FAIL;
	kvactl_name_copy(r.name, s->name);
	if (o->cancel) {
		r.flags = KVARENA_RESIZE_CANCEL;
	} else {
		if (o->frames > kvactl_max_frames(s)) {
			kvactl_err("resize: \"%s\" may grow to %u frames (%s), not %u (%s): its --max-frames at create",
				   s->name, kvactl_max_frames(s),
				   kvactl_fmt_size(b[0], (uint64_t)kvactl_max_frames(s) *
						   s->frame_size, false),
				   o->frames,
				   kvactl_fmt_size(b[1], (uint64_t)o->frames *
						   s->frame_size, false));
			goto out_free;
		}
		if (o->frames > s->nr_frames && prepare_grow(fd, o, s, o->frames))
			goto out_free;
		r.nr_frames = o->frames;
		r.timeout_ms = o->wait_ms;
	}
	err = kvactl_ioctl(fd, KVARENA_IOC_ARENA_RESIZE, &r);
	if (err) {
		resize_err(s, o->frames, err);
		goto out_free;
	}
	ret = report(o, s, &r);
out_free:
	kvactl_snap_free(&snap);
out_close:
	close(fd);
	return ret;
}
