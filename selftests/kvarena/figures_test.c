// SPDX-License-Identifier: GPL-2.0
/*
 * Who sees which figure: the table of Documentation/kvarena.rst ("Who
 * sees which figure"), generated into figures_table.h, walked against
 * the module as root and two unprivileged uids.  uid 1002 watches (an
 * attached client, and sysfs) while uid 1001 works the arena; every
 * figure the table gives the rule "domain" or "owner" must stay as uid
 * 1002 saw it, every "arena" figure must be what the owner sees, and the
 * "capacity" levels must add up - and the work must move the owner's
 * figures, or the walk proved nothing.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "kva_test.h"
#include "kva_tenant.h"

enum fig_surface { FIG_SYSFS, FIG_STAT };
enum fig_rule { FIG_ARENA, FIG_CAPACITY, FIG_DOMAIN, FIG_OWNER };

struct fig_row {
	enum fig_surface surface;
	const char *name;
	enum fig_rule rule;
	size_t off;
	size_t size;
};

#include "figures_table.h"

#define NR_ROWS		(sizeof(fig_rows) / sizeof(fig_rows[0]))
#define NR		16
#define FSIZE		(64 * 1024)
#define WORKER		1001
#define WATCHER		1002
#define SYSFS_ARENAS	"/sys/class/misc/kvarena/arenas"
#define TAG		0xf16

static const char *const rule_names[] = { "arena", "capacity", "domain",
					  "owner" };

/* Every figure of the table as one viewer read it, as text. */
struct snap {
	char v[NR_ROWS][64];
};

static void read_sysfs(const char *arena, const char *file, char *out,
		       size_t len)
{
	char path[256];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "%s/%s/%s", SYSFS_ARENAS, arena, file);
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		n = read(fd, out, len - 1);
		close(fd);
	}
	if (n < 0) {
		snprintf(out, len, "<%s>", strerror(errno));
		return;
	}
	out[n] = 0;
	if (n && out[n - 1] == '\n')
		out[n - 1] = 0;
}

/* A STAT field as text: a number, or the bytes in hex. */
static void stat_text(const struct kvarena_stat *s, const struct fig_row *r,
		      char *out, size_t len)
{
	const unsigned char *p = (const unsigned char *)s + r->off;
	unsigned long long v = 0;
	size_t i, n = 0;

	if (r->size == 4 || r->size == 8) {
		memcpy(&v, p, r->size);
		snprintf(out, len, "%llu", v);
		return;
	}
	for (i = 0; i < r->size && n + 3 < len; i++)
		n += snprintf(out + n, len - n, "%02x", p[i]);
}

/* Every figure, as the caller reads it through @fd (STAT) and sysfs. */
static int take_snap(int fd, const char *arena, struct snap *sn)
{
	struct kvarena_stat s;
	size_t i;

	memset(sn, 0, sizeof(*sn));
	if (kva_stat(fd, arena, &s))
		return -1;
	for (i = 0; i < NR_ROWS; i++) {
		if (fig_rows[i].surface == FIG_SYSFS)
			read_sysfs(arena, fig_rows[i].name, sn->v[i],
				   sizeof(sn->v[i]));
		else
			stat_text(&s, &fig_rows[i], sn->v[i],
				  sizeof(sn->v[i]));
	}
	return 0;
}

static long figure(const struct snap *sn, enum fig_surface surface,
		   const char *name)
{
	size_t i;

	for (i = 0; i < NR_ROWS; i++)
		if (fig_rows[i].surface == surface &&
		    !strcmp(fig_rows[i].name, name))
			return atol(sn->v[i]);
	return -1;
}

/* free + cached + held, by one surface's names. */
static long levels(const struct snap *sn, enum fig_surface surface)
{
	bool st = surface == FIG_STAT;

	return figure(sn, surface, st ? "nr_free" : "free") +
	       figure(sn, surface, st ? "nr_cached" : "cached") +
	       figure(sn, surface, st ? "nr_held" : "held");
}

FIXTURE(fig) {
	int admin;
	mode_t mode;
	char name[32];
};

FIXTURE_SETUP(fig)
{
	struct stat st;
	int mfd;

	snprintf(self->name, sizeof(self->name), "fig%d", getpid());
	self->admin = kva_open(O_RDWR);
	ASSERT_LE(0, self->admin);
	mfd = kva_sealed_memfd((size_t)NR * FSIZE);
	ASSERT_LE(0, mfd);
	ASSERT_EQ(0, kva_create_flags(self->admin, self->name, NR, FSIZE, 0,
				      0));
	ASSERT_EQ(0, kva_set_backing(self->admin, self->name, 0, NR, mfd, 0));
	close(mfd);
	ASSERT_EQ(0, stat(KVARENA_DEVICE, &st));
	self->mode = st.st_mode & 07777;
	ASSERT_EQ(0, chmod(KVARENA_DEVICE, 0666));
}

FIXTURE_TEARDOWN(fig)
{
	chmod(KVARENA_DEVICE, self->mode);
	EXPECT_EQ(0, kva_wait_no_clients(self->admin, self->name));
	EXPECT_EQ(0, kva_destroy(self->admin, self->name));
	close(self->admin);
}

/* The table names every file of an arena's directory, and no other. */
TEST_F(fig, the_table_names_every_sysfs_file_and_stat_field)
{
	char path[256];
	struct dirent *de;
	size_t i, j, files = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", SYSFS_ARENAS, self->name);
	d = opendir(path);
	ASSERT_NE(NULL, d);
	while ((de = readdir(d))) {
		bool listed = false;

		if (de->d_name[0] == '.')
			continue;
		files++;
		for (i = 0; i < NR_ROWS; i++)
			listed |= fig_rows[i].surface == FIG_SYSFS &&
				  !strcmp(fig_rows[i].name, de->d_name);
		if (!listed)
			TH_LOG("sysfs file %s is not in the table", de->d_name);
		EXPECT_TRUE(listed);
	}
	closedir(d);
	for (i = 0, j = 0; i < NR_ROWS; i++)
		j += fig_rows[i].surface == FIG_SYSFS;
	EXPECT_EQ(files, j);

	for (j = 0; j < sizeof(stat_fields) / sizeof(stat_fields[0]); j++) {
		bool listed = false;

		for (i = 0; i < NR_ROWS; i++)
			listed |= fig_rows[i].surface == FIG_STAT &&
				  !strcmp(fig_rows[i].name, stat_fields[j]);
		if (!listed)
			TH_LOG("STAT field %s is not in the table",
			       stat_fields[j]);
		EXPECT_TRUE(listed);
	}
}

/*
 * uid 1001's work: attach, allocate, report usage, publish, free (two
 * frames cached), look up two keys and miss a third, be refused an ALLOC
 * - and stay attached, holding the two frames it looked up, until told.
 */
static int worker(const char *arena, int done, int end)
{
	int fd = kva_open(O_RDWR);
	__u64 h[NR], got[3];
	char b;

	CHECK(fd >= 0);
	CHECK_EQ(0, kva_attach(fd, arena, "worker", 0, 0, NULL));
	CHECK_EQ(4, kva_alloc(fd, h, 4, 0));
	CHECK_EQ(0, kva_set_usage(fd, 40, 40 * 1024));
	CHECK_EQ(2, publish(fd, TAG, h, 2));
	CHECK_EQ(0, kva_free(fd, h, 4));
	CHECK_EQ(2, lookup(fd, TAG, 0, 3, got));
	CHECK_EQ(-ENOSPC, kva_alloc(fd, h, NR, 0));
	CHECK_EQ(1, write(done, "d", 1));
	CHECK_EQ(1, read(end, &b, 1));
	close(fd);
	return 0;
}

/* uid 1002: an attached client that reads every figure twice. */
static int watcher(const char *arena, int out, int go, int end)
{
	int fd = kva_open(O_RDWR);
	struct snap sn;
	char b;

	CHECK(fd >= 0);
	CHECK_EQ(0, kva_attach(fd, arena, "watcher", 0, 0, NULL));
	CHECK_EQ(0, take_snap(fd, arena, &sn));
	CHECK_EQ(sizeof(sn), write(out, &sn, sizeof(sn)));
	CHECK_EQ(1, read(go, &b, 1));
	CHECK_EQ(0, take_snap(fd, arena, &sn));
	CHECK_EQ(sizeof(sn), write(out, &sn, sizeof(sn)));
	CHECK_EQ(1, read(end, &b, 1));
	close(fd);
	return 0;
}

static int read_snap(int fd, struct snap *sn)
{
	size_t got = 0;

	while (got < sizeof(*sn)) {
		ssize_t n = read(fd, (char *)sn + got, sizeof(*sn) - got);

		if (n <= 0)
			return -1;
		got += n;
	}
	return 0;
}

TEST_F(fig, another_domains_work_moves_none_of_the_figures_the_table_keeps)
{
	static struct snap w0, w1, a0, a1;
	int snaps[2], go[2], done[2], end[2];
	pid_t wpid, apid;
	size_t i, moved = 0;
	char b;

	ASSERT_EQ(0, pipe(snaps));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	ASSERT_EQ(0, pipe(end));
	wpid = fork();
	ASSERT_LE(0, wpid);
	if (!wpid) {
		drop_to(WATCHER);
		_exit(watcher(self->name, snaps[1], go[0], end[0]));
	}
	ASSERT_EQ(0, read_snap(snaps[0], &w0));
	ASSERT_EQ(0, take_snap(self->admin, self->name, &a0));
	apid = fork();
	ASSERT_LE(0, apid);
	if (!apid) {
		drop_to(WORKER);
		_exit(worker(self->name, done[1], end[0]));
	}
	ASSERT_EQ(1, read(done[0], &b, 1));
	ASSERT_EQ(0, take_snap(self->admin, self->name, &a1));
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(0, read_snap(snaps[0], &w1));
	ASSERT_EQ(2, write(end[1], "ee", 2));
	EXPECT_EQ(0, reap(apid));
	EXPECT_EQ(0, reap(wpid));

	for (i = 0; i < NR_ROWS; i++) {
		const struct fig_row *r = &fig_rows[i];
		const char *what = r->surface == FIG_SYSFS ? "sysfs" : "STAT";
		bool ok = true;

		switch (r->rule) {
		case FIG_ARENA:
			ok = !strcmp(w1.v[i], a1.v[i]);
			break;
		case FIG_CAPACITY:
			ok = levels(&w1, r->surface) == levels(&a1, r->surface);
			break;
		case FIG_OWNER:
			ok = !strcmp(w1.v[i], "0");
			/* fall through */
		case FIG_DOMAIN:
			ok = ok && !strcmp(w0.v[i], w1.v[i]);
			moved += !!strcmp(a0.v[i], a1.v[i]);
			break;
		}
		if (!ok)
			TH_LOG("%s %s (%s): uid %u read %s then %s; the owner %s then %s",
			       what, r->name, rule_names[r->rule], WATCHER,
			       w0.v[i], w1.v[i], a0.v[i], a1.v[i]);
		EXPECT_TRUE(ok);
	}
	/* The work was real: the owner saw it. */
	TH_LOG("%zu domain and owner figures moved for the owner", moved);
	EXPECT_LE(20, moved);
}

TEST_HARNESS_MAIN
