// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl - /dev/kvarena: opening it, the ioctls, and snapshots of the
 * arenas and their clients.
 *
 * Everything kvarenactl shows comes from the STAT and CLIENTS ioctls on a
 * read-only open, but what STAT does not say: which arenas are gangs and
 * members of gangs, from sysfs (gang.c).  sysfs is read otherwise only to
 * tell a missing device node from a module that is not loaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kvarenactl.h"

/* Present while kvarena.ko is loaded, whatever /dev looks like. */
#define KVACTL_SYSFS_DEV "/sys/class/misc/kvarena"

void (*kvactl_err_hook)(const char *msg);

void kvactl_err(const char *fmt, ...)
{
	va_list ap;

	if (kvactl_err_hook) {
		char msg[512];

		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		kvactl_err_hook(msg);
		return;
	}
	fflush(stdout);
	fputs(KVACTL_PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	putc('\n', stderr);
}

/* The device node: $KVA_DEVICE (as for libkvarena), else /dev/kvarena. */
const char *kvactl_device(void)
{
	const char *d = getenv("KVA_DEVICE");

	return d && *d ? d : KVARENA_DEVICE;
}

int kvactl_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

/*
 * kvactl_open() - open the device, read-only for viewing or read-write for
 * @why (the command, for the message), and check that it speaks our ABI.
 * Returns the fd, or -1 after saying what was wrong.
 */
int kvactl_open(bool write, const char *why)
{
	struct kvarena_version v = { 0 };
	const char *path = kvactl_device();
	int fd, err;

	fd = open(path, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		if (err == ENOENT && !access(KVACTL_SYSFS_DEV, F_OK))
			kvactl_err("%s: no such file, but kvarena.ko is loaded (is the device node missing from this container or chroot?)",
				   path);
		else if (err == ENOENT || err == ENXIO || err == ENODEV)
			kvactl_err("%s: no such device (is kvarena.ko loaded?)",
				   path);
		else if ((err == EACCES || err == EPERM) && write)
			kvactl_err("%s: permission denied (%s needs root)",
				   path, why);
		else if (err == EACCES || err == EPERM)
			kvactl_err("%s: permission denied (viewing needs read access: root or the device's group)",
				   path);
		else
			kvactl_err("%s: %s", path, strerror(err));
		return -1;
	}
	err = kvactl_ioctl(fd, KVARENA_IOC_VERSION, &v);
	if (err == -ENOTTY || err == -EINVAL) {
		kvactl_err("%s: not a kvarena device", path);
		goto err_close;
	}
	if (err) {
		kvactl_err("%s: %s", path, strerror(-err));
		goto err_close;
	}
	if (v.abi_version != KVARENA_ABI_VERSION) {
		kvactl_err("%s: the module speaks kvarena ABI %u, this kvarenactl ABI %u",
			   path, v.abi_version, KVARENA_ABI_VERSION);
		goto err_close;
	}
	return fd;

err_close:
	close(fd);
	return -1;
}

/*
 * kvactl_print_module() - for --version: the loaded module's ABI and how
 * commands reach it, or why nothing is known of it.
 */
/* What this kvarenactl was built with: the commands an absent library
 * leaves out. */
void kvactl_print_built(void)
{
	printf("built with: %s, %s, %s\n",
#ifdef KVACTL_MHD
	       "libmicrohttpd (exporter)",
#else
	       "no libmicrohttpd (no exporter)",
#endif
#ifdef KVACTL_ZMQ
	       "libzmq (events --zmq)",
#else
	       "no libzmq (no events --zmq)",
#endif
#ifdef KVACTL_STATIC
	       "statically linked (no CUDA: cannot load libcuda.so.1)"
#else
	       "CUDA through libcuda.so.1 when it is there"
#endif
	       );
}

/* "version 1.0.0" from the module's modinfo, as sysfs has it. */
static const char *module_version(char *buf, size_t len)
{
	char v[64];
	FILE *f = fopen("/sys/module/kvarena/version", "r");

	if (f && fgets(v, sizeof(v), f)) {
		v[strcspn(v, "\n")] = 0;
		snprintf(buf, len, "version %s", v);
	} else {
		snprintf(buf, len, "version unknown (no /sys/module/kvarena/version)");
	}
	if (f)
		fclose(f);
	return buf;
}

void kvactl_print_module(void)
{
	struct kvarena_version v = { 0 };
	char vers[128];
	const char *path = kvactl_device();
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0) {
		err = errno;
		printf("kvarena.ko: %s\n", err == ENOENT || err == ENXIO ||
		       err == ENODEV ? "not loaded (no /dev/kvarena)" :
		       strerror(err));
		return;
	}
	err = kvactl_ioctl(fd, KVARENA_IOC_VERSION, &v);
	close(fd);
	if (err) {
		printf("kvarena.ko: %s: not a kvarena device\n", path);
		return;
	}
	printf("kvarena.ko: %s, ABI %u; commands over %s\n",
	       module_version(vers, sizeof(vers)), v.abi_version,
	       v.features & KVARENA_FEAT_URING_CMD ? "ioctl() and io_uring" :
	       "ioctl() only: this kernel has no io_uring commands for character devices (IORING_OP_URING_CMD, 5.19+)");
	printf("kvarena.ko: %s\n", v.features & KVARENA_FEAT_DMEM ?
	       "frames charged to the dmem cgroup controller (dmem.max, dmem.min, dmem.low on kvarena/<arena>)" :
	       "frames charged to no cgroup: this kernel has no dmem cgroup controller kvarena can use (CONFIG_CGROUP_DMEM), or the module's dmem parameter is off");
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/*
 * The module's rule for arena names (kva_name_valid() in driver/arena.c);
 * a usage error if broken.  A new arena's name may not start with '-'
 * either, so that it can be named on a command line without "--".
 */
int kvactl_name_check(const char *cmd, const char *name, bool create)
{
	size_t len = strlen(name), i;
	bool ok = len && len < KVARENA_NAME_LEN && name[0] != '.' &&
		  !(create && name[0] == '-');
	char q[KVACTL_QUOTE_LEN];

	for (i = 0; ok && i < len; i++)
		ok = name_char(name[i]);
	if (ok)
		return 0;
	kvactl_err("%s: bad arena name %s: 1-%d characters of A-Z a-z 0-9 _ . -, not starting with '.'%s",
		   cmd, kvactl_quote(q, name), KVARENA_NAME_LEN - 1,
		   create ? " or '-'" : "");
	return -EINVAL;
}

void kvactl_name_copy(char dst[KVARENA_NAME_LEN], const char *name)
{
	memset(dst, 0, KVARENA_NAME_LEN);
	strncpy(dst, name, KVARENA_NAME_LEN - 1);
}

/* The client table of @a, however many clients come and go meanwhile. */
static int read_clients(int fd, struct kvactl_arena *a)
{
	struct kvarena_clients c;
	uint32_t want = a->st.nr_clients + 8;
	int err;

	for (;;) {
		free(a->clients);
		a->clients = calloc(want, sizeof(*a->clients));
		if (!a->clients)
			return -ENOMEM;
		memset(&c, 0, sizeof(c));
		memcpy(c.name, a->st.name, sizeof(c.name));
		c.clients = (uint64_t)(uintptr_t)a->clients;
		c.count = want;
		err = kvactl_ioctl(fd, KVARENA_IOC_CLIENTS, &c);
		if (err)
			return err;
		if (c.nr_clients <= want) {
			a->nr_clients = c.nr_clients;
			return 0;
		}
		want = c.nr_clients + 8;
	}
}

static int stat_one(int fd, const char *name, uint32_t index,
		    struct kvarena_stat *s)
{
	memset(s, 0, sizeof(*s));
	if (name) {
		kvactl_name_copy(s->name, name);
	} else {
		s->flags = KVARENA_STAT_BY_INDEX;
		s->index = index;
	}
	return kvactl_ioctl(fd, KVARENA_IOC_STAT, s);
}

static bool seen(const struct kvactl_snap *snap, const char *name)
{
	for (size_t i = 0; i < snap->nr; i++)
		if (!strncmp(snap->arenas[i].st.name, name, KVARENA_NAME_LEN))
			return true;
	return false;
}

/*
 * kvactl_snap_read() - STAT (and CLIENTS) of arena @name, or of every arena
 * in creation order when @name is NULL.  Returns 0, or -1 after saying
 * what was wrong (as command @cmd).
 */
int kvactl_snap_read(int fd, const char *cmd, const char *name,
		     bool with_clients, struct kvactl_snap *snap)
{
	struct kvarena_stat st;
	uint32_t index = 0;
	int err = 0;

	memset(snap, 0, sizeof(*snap));
	for (;;) {
		struct kvactl_arena *a;

		err = stat_one(fd, name, index++, &st);
		if (err == -ENOENT && !name) {
			err = 0;
			break;
		}
		if (err)
			goto err_free;
		/* An arena destroyed meanwhile shifts the later ones down. */
		if (seen(snap, st.name))
			continue;
		a = realloc(snap->arenas, (snap->nr + 1) * sizeof(*a));
		if (!a) {
			err = -ENOMEM;
			goto err_free;
		}
		snap->arenas = a;
		a = &snap->arenas[snap->nr++];
		memset(a, 0, sizeof(*a));
		a->st = st;
		kvactl_gang_read(st.name, &a->gang);
		if (with_clients) {
			err = read_clients(fd, a);
			/* Gone between the two calls: leave it out. */
			if (err == -ENOENT && !name) {
				free(a->clients);
				snap->nr--;
				err = 0;
			} else if (err) {
				goto err_free;
			}
		}
		if (name)
			break;
	}
	return 0;

err_free:
	if (err == -ENOENT)
		kvactl_err("%s: no arena named \"%s\"", cmd, name);
	else
		kvactl_err("%s: reading %s: %s", cmd, kvactl_device(),
			   strerror(-err));
	kvactl_snap_free(snap);
	return -1;
}

void kvactl_snap_free(struct kvactl_snap *snap)
{
	for (size_t i = 0; i < snap->nr; i++)
		free(snap->arenas[i].clients);
	free(snap->arenas);
	memset(snap, 0, sizeof(*snap));
}
