// SPDX-License-Identifier: GPL-2.0
/*
 * What the fault campaign found in kvarena.ko, one test each, so that it
 * stays found.  Runs as root in the VM (selftests/vm/run.sh).
 */
#include "kselftest_harness.h"
#include "faults.h"

/*
 * Names are 1-31 characters of [A-Za-z0-9_.-].  The module used the
 * kernel's isalnum(), whose table counts Latin-1 letters (0xc0-0xff) as
 * letters, so "caf\xe9" made an arena that no tool could name back.
 * fuzz_args found it, the header's rule against driver/check.c.
 */
TEST(names_with_bytes_past_ascii_are_einval)
{
	static const char *const bad[] = { "caf\xe9", "\xff", "a\xc0", "\xdf" };
	struct kvarena_stat s;
	unsigned int i;
	int fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, fz_arena_create(fd, bad[i], 4, 65536, false));
		EXPECT_EQ(-EINVAL, fz_stat(fd, bad[i], &s));
		EXPECT_EQ(-EINVAL, fz_arena_destroy(fd, bad[i]));
	}
	/* ASCII letters, digits and _.- still make a name. */
	EXPECT_EQ(0, fz_arena_create(fd, "Az09_.-", 4, 65536, false));
	EXPECT_EQ(0, fz_arena_destroy(fd, "Az09_.-"));
	close(fd);
}

TEST_HARNESS_MAIN
