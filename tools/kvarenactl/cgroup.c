// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl: the cgroups of the clients and the dmem controller's view of
 * an arena's region ("kvarena/<arena>": dmem.max, dmem.current), read
 * from the cgroup v2 hierarchy.  Everything here is best effort: a
 * process gone, another pid namespace or no cgroup2 mount gives "no
 * answer", never an error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvarenactl.h"

#define CGROUP_ROOT "/sys/fs/cgroup"

int kvactl_cgroup_of(pid_t pid, char *buf, size_t len)
{
	char path[64], line[4096];
	int ret = -1;
	FILE *f;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	/* The unified hierarchy's line: "0::/path". */
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(buf, len, "%s", line + 3);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

int kvactl_dmem_get(const char *cg, const char *file, const char *arena,
		    uint64_t *val)
{
	char path[4200], want[KVARENA_NAME_LEN + 16], line[256];
	size_t wl;
	int ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), CGROUP_ROOT "%s/%s",
		 strcmp(cg, "/") ? cg : "", file);
	snprintf(want, sizeof(want), "kvarena/%s ", arena);
	wl = strlen(want);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, want, wl))
			continue;
		if (!strncmp(line + wl, "max", 3)) {
			*val = UINT64_MAX;
		} else {
			errno = 0;
			*val = strtoull(line + wl, NULL, 10);
			if (errno)
				break;
		}
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

int kvactl_dmem_limit(const char *cg, const char *arena, uint64_t frame,
		      char *at, size_t len, uint64_t *max, uint64_t *cur)
{
	char path[4096];
	bool found = false;
	char *slash;

	snprintf(path, sizeof(path), "%s", cg);
	/* The root cgroup has no dmem.max. */
	while (strcmp(path, "/") && path[0]) {
		uint64_t m, c;

		if (!kvactl_dmem_get(path, "dmem.max", arena, &m) &&
		    m != UINT64_MAX) {
			if (kvactl_dmem_get(path, "dmem.current", arena, &c))
				c = 0;
			/* The nearest limit; the nearest full one wins. */
			if (!found || c + frame > m) {
				snprintf(at, len, "%s", path);
				*max = m;
				*cur = c;
			}
			found = true;
			if (c + frame > m)
				return 0;
		}
		slash = strrchr(path, '/');
		if (!slash)
			break;
		if (slash == path)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	return found ? 0 : -1;
}
