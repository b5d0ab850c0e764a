// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl - gangs: one arena over the memories of N member arenas, one
 * per GPU of a tensor-parallel engine (KVARENA_IOC_GANG_CREATE).
 *
 * create NAME --gang M0,M1,... makes the gang: frame i of NAME is frame i
 * of every member at once, so one ALLOC of a client of NAME takes a frame
 * in each.  Clients attach to NAME; the engine's rank processes JOIN one
 * of them and map its frames in their member (Mr for rank r).  The
 * members keep their memory and serve the gang alone until it is
 * destroyed.  The gang's policy starts as M0's; --owner, --group, --mode
 * and the client policy options change it right after (ARENA_SET_POLICY),
 * checked against M0 first, and a gang that cannot get it is taken down
 * again.  A refusal is explained from the members' STATs and sysfs: the
 * module only says which errno, not which member.
 *
 * STAT says nothing of gangs: sysfs does, arenas/NAME/members (a gang's
 * members in rank order) and arenas/NAME/gang (a member's gang), which
 * kvactl_gang_read() reads for the views.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "kvarenactl.h"

#define SYSFS_ARENAS	"/sys/class/misc/kvarena/arenas"

/* What a member must be, said after a refusal. */
#define MEMBER_RULE	"members are arenas of one kind (host, cuda or accounting-only) of equal frame size, frame count and creation flags, whole and backed, with no client, tier or gang of their own"

/* ---- sysfs --------------------------------------------------------------- */

/* arenas/@arena/@attr into @buf; 0 or -errno (buf "" then). */
static int sysfs_read(const char *arena, const char *attr, char *buf,
		      size_t size)
{
	char path[128];
	ssize_t n;
	int fd, err = 0;

	buf[0] = '\0';
	snprintf(path, sizeof(path), SYSFS_ARENAS "/%s/%s", arena, attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		err = -errno;
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return err;
}

/* The members of gang @name, in rank order: how many (0: not a gang). */
static uint32_t members_of(const char *name,
			   char (*members)[KVARENA_NAME_LEN])
{
	char buf[KVARENA_GANG_MAX * KVARENA_NAME_LEN + 2];
	int n;

	if (sysfs_read(name, "members", buf, sizeof(buf)))
		return 0;
	n = kvactl_split_names(buf, ' ', members, KVARENA_GANG_MAX);
	return n > 1 ? (uint32_t)n : 0;
}

void kvactl_gang_read(const char *name, struct kvactl_gang *g)
{
	char buf[KVARENA_NAME_LEN + 2];
	char m[KVARENA_GANG_MAX][KVARENA_NAME_LEN];
	uint32_t n;

	memset(g, 0, sizeof(*g));
	g->rank = -1;
	g->nr_members = members_of(name, g->members);
	if (g->nr_members ||
	    sysfs_read(name, "gang", buf, sizeof(buf)) ||
	    kvactl_split_names(buf, ' ', &g->gang, 1) != 1)
		return;
	/* Its rank: where the gang lists it (if this user may view the gang). */
	n = members_of(g->gang, m);
	for (uint32_t r = 0; r < n; r++)
		if (!strcmp(m[r], name))
			g->rank = (int)r;
}

/* ---- create --gang ----------------------------------------------------------- */

static bool denied(int err)
{
	return err == -EPERM || err == -EBADF;
}

static int stat_arena(int fd, const char *name, struct kvarena_stat *s)
{
	memset(s, 0, sizeof(*s));
	kvactl_name_copy(s->name, name);
	return kvactl_ioctl(fd, KVARENA_IOC_STAT, s);
}

static char *other_tier(char buf[KVARENA_NAME_LEN + 1],
			const struct kvarena_stat *s)
{
	memcpy(buf, s->tier_name, KVARENA_NAME_LEN);
	buf[KVARENA_NAME_LEN] = '\0';
	return buf;
}

/*
 * The module's verdict on member @s (its gang @g) of a gang whose first
 * member is @m0, in the module's order (driver/gang.c, member_fits()),
 * and why in @why: 0, -ENOENT, -EOPNOTSUPP, -EBUSY or -EINVAL.
 */
static int member_verdict(const struct kvarena_stat *s,
			  const struct kvactl_gang *g,
			  const struct kvarena_stat *m0, char *why,
			  size_t size)
{
	bool acct = s->state & KVARENA_STATE_NO_BACKING;
	char b[2][KVACTL_NUM_LEN], t[KVARENA_NAME_LEN + 1];

	if (s->mem_kind == KVARENA_MEM_FILE) {
		snprintf(why, size, "it is a file arena");
		return -EOPNOTSUPP;
	}
	if (kvactl_is_gang(g)) {
		snprintf(why, size, "it is a gang itself");
		return -EBUSY;
	}
	if (kvactl_is_member(g)) {
		snprintf(why, size, "it is a member of gang \"%s\" already", g->gang);
		return -EBUSY;
	}
	if (s->nr_clients) {
		snprintf(why, size, "it has %u %s attached (kvarenactl clients %s)",
			 s->nr_clients, s->nr_clients == 1 ? "client" : "clients",
			 s->name);
		return -EBUSY;
	}
	if (s->tier == KVARENA_STAT_TIER_LOWER) {
		snprintf(why, size, "it has a lower tier, \"%s\" (kvarenactl tier %s --none first)",
			 other_tier(t, s), s->name);
		return -EBUSY;
	}
	if (s->tier == KVARENA_STAT_TIER_UPPER) {
		snprintf(why, size, "it is the lower tier of \"%s\" (kvarenactl tier %s --none first)",
			 other_tier(t, s), other_tier(t, s));
		return -EBUSY;
	}
	if (s->nr_shrinking) {
		snprintf(why, size, "a shrink of it waits for %u held frames (kvarenactl resize %s --cancel)",
			 s->nr_shrinking, s->name);
		return -EBUSY;
	}
	if (s->mem_kind != m0->mem_kind) {
		snprintf(why, size, "it is a %s arena, \"%s\" a %s arena",
			 kvactl_mem_kind(s->mem_kind), m0->name,
			 kvactl_mem_kind(m0->mem_kind));
		return -EINVAL;
	}
	if (s->frame_size != m0->frame_size) {
		snprintf(why, size, "its frames are %s, those of \"%s\" %s",
			 kvactl_fmt_size_exact(b[0], s->frame_size), m0->name,
			 kvactl_fmt_size_exact(b[1], m0->frame_size));
		return -EINVAL;
	}
	if (acct != !!(m0->state & KVARENA_STATE_NO_BACKING)) {
		snprintf(why, size, "it is %saccounting-only, \"%s\" %s",
			 acct ? "" : "not ", m0->name, acct ? "not" : "is");
		return -EINVAL;
	}
	if (s->nr_frames != m0->nr_frames) {
		snprintf(why, size, "it has %u frames, \"%s\" %u", s->nr_frames,
			 m0->name, m0->nr_frames);
		return -EINVAL;
	}
	if (kvactl_max_frames(s) != s->nr_frames) {
		snprintf(why, size, "%u of its %u frames are out of it (resize %s --frames %u first)",
			 kvactl_max_frames(s) - s->nr_frames, kvactl_max_frames(s),
			 s->name, kvactl_max_frames(s));
		return -EINVAL;
	}
	if (kvactl_unbacked(s)) {
		snprintf(why, size, "only %u of its %u frames have memory (kvarenactl stat %s)",
			 s->nr_backed, s->nr_frames, s->name);
		return -EINVAL;
	}
	why[0] = '\0';
	return 0;
}

/*
 * Why GANG_CREATE said @err: the first member the module would have
 * refused for it, from the members' STATs now.
 */
static void gang_refused(int fd, const struct kvactl_opts *o, int err)
{
	const char *name = o->args[0];
	struct kvarena_stat m0, s;
	struct kvactl_gang g;
	char why[256];

	if (denied(err)) {
		kvactl_err("create: permission denied (needs CAP_SYS_ADMIN)");
		return;
	}
	if (err == -EEXIST) {
		kvactl_err("create: an arena named \"%s\" exists already", name);
		return;
	}
	if (err == -ENOENT) {
		for (uint32_t r = 0; r < o->nr_members; r++) {
			if (stat_arena(fd, o->members[r], &s) == -ENOENT) {
				kvactl_err("create: --gang: no arena named \"%s\"",
					   o->members[r]);
				return;
			}
		}
	}
	if ((err == -EOPNOTSUPP || err == -EBUSY || err == -EINVAL) &&
	    !stat_arena(fd, o->members[0], &m0)) {
		for (uint32_t r = 0; r < o->nr_members; r++) {
			if (stat_arena(fd, o->members[r], &s))
				continue;
			kvactl_gang_read(o->members[r], &g);
			if (member_verdict(&s, &g, &m0, why, sizeof(why)) != err)
				continue;
			kvactl_err("create: \"%s\" cannot be rank %u of gang \"%s\": %s (" MEMBER_RULE ")",
				   o->members[r], r, name, why);
			return;
		}
	}
	if (err == -ENOENT)
		kvactl_err("create: --gang: a member is gone");
	else if (err == -EBUSY)
		kvactl_err("create: --gang: a member is in use (its memory may be being registered: kvarenactl stat)");
	else if (err == -EINVAL)
		kvactl_err("create: the module refused the gang: the members differ where STAT does not show it, in their creation flags (--clear-always given to one create and not to another) (" MEMBER_RULE ")");
	else if (err == -EOPNOTSUPP)
		kvactl_err("create: the module refused the gang: a member is a file arena (" MEMBER_RULE ")");
	else
		kvactl_err("create: %s", strerror(-err));
}

/* What the gang is, on one line. */
static void gang_report(const struct kvactl_opts *o,
			const struct kvarena_stat *s)
{
	char b[2][KVACTL_NUM_LEN];
	const char *name = s->name;

	printf("gang %s: %u %s of %s in each of %u members (rank order:",
	       name, s->nr_frames, s->nr_frames == 1 ? "frame" : "frames",
	       kvactl_fmt_size(b[0], s->frame_size, false), o->nr_members);
	for (uint32_t r = 0; r < o->nr_members; r++)
		printf(" %s", o->members[r]);
	printf("), %s in all; they serve only %s until kvarenactl destroy %s\n",
	       kvactl_fmt_size(b[1], kvactl_frame_bytes(s, o->nr_members) *
			       s->nr_frames, false), name, name);
}

/* The gang made, but not as asked: take it down again. */
static void gang_undo(int fd, const char *name)
{
	struct kvarena_arena_destroy d = { 0 };
	int err;

	kvactl_name_copy(d.name, name);
	err = kvactl_ioctl(fd, KVARENA_IOC_ARENA_DESTROY, &d);
	if (err == -EBUSY)
		kvactl_err("create: gang \"%s\" is left with the policy of its first member: clients attached meanwhile (kvarenactl limit %s, or destroy it once they are gone)",
			   name, name);
	else if (err)
		kvactl_err("create: gang \"%s\" is left with the policy of its first member: destroying it: %s",
			   name, strerror(-err));
}

int kvactl_gang_create(const struct kvactl_opts *opts)
{
	struct kvactl_opts copy = *opts, *o = &copy;
	const char *name = o->args[0];
	char names[KVARENA_GANG_MAX][KVARENA_NAME_LEN];
	struct kvarena_gang_create g = { 0 };
	struct kvarena_stat m0, s;
	bool policy = kvactl_policy_given(o);
	int fd, err, ret = KVACTL_FAIL;

	fd = kvactl_open(true, "create");
	if (fd < 0)
		return KVACTL_FAIL;
	/*
	 * The policy options against the first member, whose policy and
	 * size the gang takes: a wrong one is said before the gang is made.
	 */
	if (policy && !stat_arena(fd, o->members[0], &m0)) {
		ret = kvactl_frames_resolve(o, m0.frame_size);
		if (ret)
			goto out;
		ret = KVACTL_FAIL;
		if (kvactl_check_policy("create", o, &m0))
			goto out;
	}
	memset(names, 0, sizeof(names));
	for (uint32_t r = 0; r < o->nr_members; r++)
		kvactl_name_copy(names[r], o->members[r]);
	kvactl_name_copy(g.name, name);
	g.members = (uint64_t)(uintptr_t)names;
	g.nr_members = o->nr_members;
	err = kvactl_ioctl(fd, KVARENA_IOC_GANG_CREATE, &g);
	if (err == -ENOTTY) {
		kvactl_err("create: this kvarena.ko makes no gangs (no GANG_CREATE)");
		goto out;
	}
	if (err) {
		gang_refused(fd, o, err);
		goto out;
	}
	err = stat_arena(fd, name, &s);
	if (err) {
		kvactl_err("create: gang \"%s\": %s", name, strerror(-err));
		goto out;
	}
	/* Sizes are frames of the gang's frame size (the first member's). */
	if (policy && (kvactl_frames_resolve(o, s.frame_size) ||
		       kvactl_set_policy(fd, "create", o, &s))) {
		gang_undo(fd, name);
		goto out;
	}
	gang_report(o, &s);
	ret = KVACTL_OK;
out:
	close(fd);
	return ret;
}
