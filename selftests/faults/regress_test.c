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

/* MemTotal of /proc/meminfo, in bytes; 0 if unreadable. */
static uint64_t mem_total(void)
{
	unsigned long long kib = 0;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu kB", &kib) == 1)
			break;
	fclose(f);
	return (uint64_t)kib << 10;
}

/*
 * An arena's tables grow with its frames: some 90 bytes a frame, 1.5 GiB
 * for the largest arena the header allows.  sysfuzz, scribbling a byte
 * of nr_frames, asked for millions of frames in the 1 GiB VM, and the
 * allocation for them ran the machine into the OOM killer, which took
 * the test's shell.  Now an arena whose tables would take the machine's
 * tables budget (an eighth of RAM, all arenas together) is ENOMEM before
 * anything is allocated, and an allocation that finds memory short fails
 * instead of calling the OOM killer.
 */
TEST(arena_tables_past_an_eighth_of_ram_are_enomem)
{
	int fd = open(KVARENA_DEVICE, O_RDWR | O_CLOEXEC);
	uint64_t ram = mem_total();
	struct kvarena_stat s;
	unsigned int i;
	char name[16];
	int ret;

	ASSERT_LE(0, fd);
	ASSERT_NE(0, ram);
	if ((uint64_t)KVARENA_MAX_FRAMES * 80 < ram / 8)
		SKIP(return, "%llu MiB of RAM: the largest arena's tables fit",
		     (unsigned long long)(ram >> 20));
	/* Again and again: nothing is kept from a refused create. */
	for (i = 0; i < 50; i++)
		ASSERT_EQ(-ENOMEM, fz_arena_create(fd, "huge", KVARENA_MAX_FRAMES,
						   65536, false));
	EXPECT_EQ(-ENOENT, fz_stat(fd, "huge", &s));
	/* Arenas whose tables fit, up to the budget, all of them together. */
	for (i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "big%u", i);
		if (fz_arena_create(fd, name, 1u << 20, 65536, false))
			break;
	}
	TH_LOG("%u arenas of 2^20 frames fit in %llu MiB of RAM", i,
	       (unsigned long long)(ram >> 20));
	EXPECT_LT(0, i);
	EXPECT_GT(64, i);
	EXPECT_EQ(-ENOMEM, fz_arena_create(fd, "one-more", 1u << 20, 65536,
					   false));
	while (i--) {
		snprintf(name, sizeof(name), "big%u", i);
		EXPECT_EQ(0, fz_arena_destroy(fd, name));
	}
	/*
	 * Destroyed, their budget is back once they are released: at once,
	 * or seconds later under DEBUG_KOBJECT_RELEASE.
	 */
	for (i = 0; i < 100; i++) {
		ret = fz_arena_create(fd, "one-more", 1u << 20, 65536, false);
		if (ret != -ENOMEM)
			break;
		usleep(100000);
	}
	EXPECT_EQ(0, ret);
	EXPECT_EQ(0, fz_arena_destroy(fd, "one-more"));
	close(fd);
}

TEST_HARNESS_MAIN
