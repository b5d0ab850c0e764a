// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl - user and group names, read from /etc/passwd and /etc/group
 * themselves, so that the statically linked tool (the VM's) behaves like
 * the dynamic one: no NSS modules to load, names only where the files
 * have them, numbers everywhere else.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvarenactl.h"

/*
 * Walk "name:x:id:..." lines; find @name (if not NULL) or @id.  Returns 0
 * with *@id and @buf filled, or -ENOENT.
 */
static int walk(bool group, const char *name, uint32_t *id, char *buf,
		size_t size)
{
	FILE *f = fopen(group ? "/etc/group" : "/etc/passwd", "re");
	char line[1024];
	int ret = -ENOENT;

	while (f && ret && fgets(line, sizeof(line), f)) {
		char *n = strtok(line, ":"), *x, *num;
		uint32_t v;

		x = n ? strtok(NULL, ":") : NULL;
		num = x ? strtok(NULL, ":") : NULL;
		if (!num || kvactl_parse_u32(num, &v))
			continue;
		if (name ? strcmp(n, name) : v != *id)
			continue;
		*id = v;
		if (buf)
			snprintf(buf, size, "%s", n);
		ret = 0;
	}
	if (f)
		fclose(f);
	return ret;
}

int kvactl_lookup_id(const char *name, bool group, uint32_t *id)
{
	return walk(group, name, id, NULL, 0) ? -EINVAL : 0;
}

const char *kvactl_id_name(char buf[KVACTL_NUM_LEN], uint32_t id, bool group)
{
	if (walk(group, NULL, &id, buf, KVACTL_NUM_LEN))
		snprintf(buf, KVACTL_NUM_LEN, "%u", id);
	return buf;
}
