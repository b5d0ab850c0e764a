// SPDX-License-Identifier: GPL-2.0
/*
 * tools/common/fileio.c, the agent's reads and writes of a file arena's
 * frames, on a file of its own: frames written through every slot at once and read
 * back byte for byte, in whatever order they end; a read past the end
 * that comes back short; an error that fails its slot alone; O_DIRECT set
 * on the open file where the filesystem takes it.  Built twice: on an
 * io_uring (where liburing is) and with pread/pwrite, so that both ways
 * give the same answers.  Runs natively, also under ASan/UBSan.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "fileio.h"

#define FS	(64 * 1024)		/* the tests' frame size */

/* Byte @j of frame @i: no two frames alike. */
static unsigned char pat(unsigned int i, size_t j)
{
	return (unsigned char)(i * 29 + j * 7 + (j >> 12));
}

static bool intact(const unsigned char *p, unsigned int i)
{
	for (size_t j = 0; j < FS; j++)
		if (p[j] != pat(i, j))
			return false;
	return true;
}

FIXTURE(fio) {
	struct kvt_fio *f;
	char path[64];
	int fd;
};

/* A file in $TMPDIR (or /tmp), unlinked at once: nothing is left behind. */
FIXTURE_SETUP(fio)
{
	const char *dir = getenv("TMPDIR");
	int ring_err = 0;

	snprintf(self->path, sizeof(self->path), "%s/fileio_test.XXXXXX",
		 dir && *dir && strlen(dir) < 40 ? dir : "/tmp");
	self->fd = mkstemp(self->path);
	ASSERT_LE(0, self->fd);
	unlink(self->path);
	ASSERT_EQ(0, kvt_fio_open(&self->f, FS, &ring_err));
	/* A kernel that refuses rings (io_uring_disabled): pread and pwrite. */
	if (ring_err)
		TH_LOG("io_uring: %s", strerror(-ring_err));
}

FIXTURE_TEARDOWN(fio)
{
	kvt_fio_close(self->f);
	close(self->fd);
}

/*
 * Frames 0..@n-1 written from, or read into, whichever slot is free, a
 * depth of them in flight, as the agent does; a read's frame is checked
 * as it is reaped.  The number of frames whose result was not a whole
 * frame, or whose bytes differ (@n if the queue itself failed).
 */
static unsigned int all_frames(struct kvt_fio *f, int fd, bool write,
			       unsigned int n)
{
	unsigned int depth = kvt_fio_depth(f), next = 0, busy = 0, bad = 0;
	unsigned int frame_of[KVT_FIO_MAX_DEPTH], slot;
	bool used[KVT_FIO_MAX_DEPTH] = { false };
	int res;

	while (next < n || busy) {
		for (slot = 0; slot < depth && next < n; slot++) {
			unsigned char *buf = kvt_fio_buf(f, slot);

			if (used[slot])
				continue;
			for (size_t j = 0; write && j < FS; j++)
				buf[j] = pat(next, j);
			if (kvt_fio_queue(f, slot, write, fd,
					     (uint64_t)next * FS))
				return n;
			frame_of[slot] = next++;
			used[slot] = true;
			busy++;
		}
		if (kvt_fio_reap(f, &slot, &res) || slot >= depth ||
		    !used[slot])
			return n;
		bad += res != FS ||
		       (!write && !intact(kvt_fio_buf(f, slot),
					  frame_of[slot]));
		used[slot] = false;
		busy--;
	}
	return bad;
}

TEST_F(fio, frames_written_through_every_slot_read_back_byte_exact)
{
	EXPECT_EQ(8, kvt_fio_depth(self->f));
	EXPECT_EQ(0, all_frames(self->f, self->fd, true, 20));
	EXPECT_EQ(20 * FS, lseek(self->fd, 0, SEEK_END));
	EXPECT_EQ(0, all_frames(self->f, self->fd, false, 20));
}

TEST_F(fio, frames_go_through_o_direct_where_the_filesystem_takes_it)
{
	int err = kvt_fio_direct(self->fd);

	/* tmpfs before Linux 6.6 has no O_DIRECT; ext4, xfs and btrfs do. */
	if (err) {
		EXPECT_EQ(-EINVAL, err);
		EXPECT_EQ(0, fcntl(self->fd, F_GETFL) & O_DIRECT);
		SKIP(return, "%s takes no O_DIRECT", self->path);
	}
	EXPECT_EQ(O_DIRECT, fcntl(self->fd, F_GETFL) & O_DIRECT);
	/* Set once for the open file: every fd of it has it. */
	EXPECT_EQ(0, kvt_fio_direct(self->fd));
	EXPECT_EQ(0, all_frames(self->f, self->fd, true, 11));
	EXPECT_EQ(0, all_frames(self->f, self->fd, false, 11));
}

TEST_F(fio, a_read_past_the_end_comes_back_short)
{
	unsigned int slot = 99;
	int res = 0;

	ASSERT_EQ(0, all_frames(self->f, self->fd, true, 1));
	ASSERT_EQ(0, ftruncate(self->fd, FS + FS / 2));
	ASSERT_EQ(0, kvt_fio_queue(self->f, 3, false, self->fd, FS));
	ASSERT_EQ(0, kvt_fio_reap(self->f, &slot, &res));
	EXPECT_EQ(3, slot);
	EXPECT_EQ(FS / 2, res);
	ASSERT_EQ(0, kvt_fio_queue(self->f, 5, false, self->fd, 2 * FS));
	ASSERT_EQ(0, kvt_fio_reap(self->f, &slot, &res));
	EXPECT_EQ(5, slot);
	EXPECT_EQ(0, res);
}

TEST_F(fio, an_error_fails_its_own_slot_and_no_other)
{
	int ro = open("/proc/self/cmdline", O_RDONLY);
	unsigned int slot, seen = 0;
	int res;

	ASSERT_LE(0, ro);
	memset(kvt_fio_buf(self->f, 0), 0x5a, FS);
	ASSERT_EQ(0, kvt_fio_queue(self->f, 0, true, self->fd, 0));
	ASSERT_EQ(0, kvt_fio_queue(self->f, 1, true, ro, 0));
	ASSERT_EQ(0, kvt_fio_queue(self->f, 2, true, self->fd, FS));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, kvt_fio_reap(self->f, &slot, &res));
		ASSERT_GT(3, slot);
		seen |= 1u << slot;
		EXPECT_EQ(slot == 1 ? -EBADF : FS, res) TH_LOG("slot %u", slot);
	}
	EXPECT_EQ(7, seen);
	close(ro);
}

TEST(larger_frames_get_fewer_slots)
{
	static const struct { uint64_t size; unsigned int depth; } t[] = {
		{ 4096, 8 }, { 2 << 20, 8 }, { 16 << 20, 4 }, { 64 << 20, 1 },
		{ 1 << 30, 1 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct kvt_fio *f;

		int ring_err;

		ASSERT_EQ(0, kvt_fio_open(&f, t[i].size, &ring_err));
		EXPECT_EQ(t[i].depth, kvt_fio_depth(f));
		EXPECT_EQ(0, (uintptr_t)kvt_fio_buf(f, 0) %
			     (uintptr_t)sysconf(_SC_PAGESIZE));
		kvt_fio_close(f);
	}
}

TEST_HARNESS_MAIN
