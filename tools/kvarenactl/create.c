// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl - the commands that change things: create (the arena and its
 * memory), destroy, limit.  All need CAP_SYS_ADMIN.
 *
 * create runs in the order that makes failures cheap and leaves nothing
 * behind: host memory is checked against MemAvailable and the CUDA driver
 * and device are checked first, then ARENA_CREATE (a taken name or a
 * missing capability is found before any memory is made), then the
 * frames' memory is made and registered with ARENA_SET_BACKING.  If that
 * fails or is interrupted (Ctrl-C, SIGTERM, SIGHUP), the arena is
 * destroyed again.  The module holds a reference to every backing file,
 * so the memory lives on after kvarenactl exits, until destroy.
 *
 * An arena made with --max-frames has a table of that many frames, those
 * beyond --frames absent until resize grows it.  Host memory is one memfd
 * for the whole table, sparse: only the frames in the arena get pages now,
 * and the whole table is registered, so that a grow needs no new backing
 * (the module pins a frame's pages only while it is in the arena, and
 * punches them out of the memfd when a shrink takes it).  A CUDA arena's
 * frames get allocations only when they come in (resize.c).
 *
 * A file arena (--file PATH), the lower tier of a host arena, is ranges of
 * one regular file that only the tier's agent reads and writes.  The file
 * is opened (made, mode 0600, where it is missing) once the device is, so
 * that a wrong path is found before the arena is made; its blocks are
 * allocated after ARENA_CREATE, as host memory is, so that a full disk
 * shows at create and not as failed copies later.  A file create made is
 * removed again if the arena is not made; one it found keeps its length.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kvarenactl.h"

#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB (21u << 26)
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23		/* Linux 5.14 */
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008u		/* Linux 6.3 */
#endif

#define HUGE_2MB (2u << 20)

/*
 * Ctrl-C, or a kill that can be caught, during create stops it at the
 * next frame (or interrupts the allocation) and takes the arena down again
 * instead of leaving it half made.
 */
static volatile sig_atomic_t create_stop;

static void create_signal(int sig)
{
	create_stop = sig;
}

static void catch_stop_signals(void)
{
	struct sigaction sa = { .sa_handler = create_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* An ioctl refused for want of CAP_SYS_ADMIN, or a read-only open. */
static bool denied(int err)
{
	return err == -EPERM || err == -EBADF;
}

/*
 * Clear every page through a temporary mapping, a chunk at a time.
 * fallocate() allocates shmem pages but leaves zeroing them to the first
 * fault; done here, the serving processes' faults are minor ones.
 */
static int clear_pages(int fd, uint64_t size, uint64_t page)
{
	const uint64_t chunk = 1ull << 30;

	for (uint64_t off = 0; off < size; off += chunk) {
		size_t len = (size_t)(size - off < chunk ? size - off : chunk);
		char *p;
		int err = 0;

		if (create_stop)
			return EINTR;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 (off_t)off);
		if (p == MAP_FAILED)
			return errno;
		if (madvise(p, len, MADV_POPULATE_WRITE)) {
			err = errno;
			/* Before Linux 5.14: a store per page. */
			if (err == EINVAL) {
				for (size_t i = 0; i < len; i += page)
					((volatile char *)p)[i] = 0;
				err = 0;
			}
		}
		munmap(p, len);
		if (err)
			return err;
	}
	return 0;
}

/* The frames of the arena's table: --max-frames, else --frames. */
static uint32_t table_frames(const struct kvactl_opts *o)
{
	return o->max_frames > o->frames ? o->max_frames : o->frames;
}

/*
 * Host memory: one memfd of every frame of the table, the pages of the
 * frames in the arena allocated and cleared now (so that a shortage shows
 * here, not as SIGBUS in a serving process), sealed so that nobody can
 * shrink it under a mapping.  Returns the fd or -1.
 */
static int host_memory(const struct kvactl_opts *o, const char *name)
{
	uint64_t size = (uint64_t)o->frames * o->frame_size;
	uint64_t table = (uint64_t)table_frames(o) * o->frame_size;
	unsigned int flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	char mname[64], b[KVACTL_NUM_LEN];
	int fd, err;

	if (o->hugepages)
		flags |= MFD_HUGETLB | MFD_HUGE_2MB;
	snprintf(mname, sizeof(mname), "kvarena:%s", name);
	/* Frames are data: not executable, where the kernel can say so. */
	fd = memfd_create(mname, flags | MFD_NOEXEC_SEAL);
	if (fd < 0 && errno == EINVAL)
		fd = memfd_create(mname, flags);
	if (fd < 0) {
		kvactl_err("create: memfd_create: %s%s", strerror(errno),
			   o->hugepages ? " (no hugetlbfs for 2 MiB pages?)" : "");
		return -1;
	}
	if (ftruncate(fd, (off_t)table)) {
		kvactl_err("create: sizing the memory to %s: %s",
			   kvactl_fmt_size(b, table, false), strerror(errno));
		goto err_close;
	}
	err = fallocate(fd, 0, 0, (off_t)size) ? errno : 0;
	if (!err)
		err = clear_pages(fd, size, o->hugepages ? HUGE_2MB :
				  (uint64_t)sysconf(_SC_PAGESIZE));
	if (err == EINTR) {
		kvactl_err("create: interrupted");
		goto err_close;
	}
	if (err && o->hugepages) {
		kvactl_err("create: cannot allocate %s of 2 MiB huge pages: %s (reserve them in /proc/sys/vm/nr_hugepages)",
			   kvactl_fmt_size(b, size, false), strerror(err));
		goto err_close;
	}
	if (err) {
		kvactl_err("create: cannot allocate %s of host memory: %s",
			   kvactl_fmt_size(b, size, false), strerror(err));
		goto err_close;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		kvactl_err("create: sealing the memory: %s", strerror(errno));
		goto err_close;
	}
	return fd;

err_close:
	close(fd);
	return -1;
}

/* The file create opened for --file, and what it was before. */
struct arena_file {
	int fd;
	bool made;			/* create made it */
	off_t size_was;			/* its length when found */
};

/* What a path that is not a regular file is, for a message. */
static const char *file_type(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	return "not a regular file";
}

static void file_not_regular(const char *path, mode_t mode)
{
	char q[KVACTL_QUOTE_LEN];

	kvactl_err("create: --file %s is %s: a file arena needs a regular file",
		   kvactl_quote(q, path), file_type(mode));
}

/*
 * --file's file, open for reading and writing as the module wants it,
 * made where it is missing.  Anything but a regular file is refused
 * before it is opened (a FIFO or a device has no ranges to lend).  0, or
 * -1 after saying why.
 */
static int file_open(const char *path, struct arena_file *af)
{
	char q[KVACTL_QUOTE_LEN];
	struct stat st;

	af->made = false;
	af->size_was = 0;
	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		file_not_regular(path, st.st_mode);
		return -1;
	}
	af->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (af->fd >= 0)
		af->made = true;
	else if (errno == EEXIST)
		/* Not through a link: root's create must not take another file. */
		af->fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (af->fd < 0) {
		kvactl_err("create: --file %s: %s%s", kvactl_quote(q, path),
			   strerror(errno), errno == ELOOP ?
			   " (a symbolic link: name the file itself)" : "");
		return -1;
	}
	/* Replaced since the stat() above: look again. */
	if (fstat(af->fd, &st))
		kvactl_err("create: --file %s: %s", kvactl_quote(q, path),
			   strerror(errno));
	else if (!S_ISREG(st.st_mode))
		file_not_regular(path, st.st_mode);
	else if (!af->made && st.st_uid != geteuid())
		kvactl_err("create: --file %s belongs to uid %u, not to this user: the agent would write it",
			   kvactl_quote(q, path), (unsigned int)st.st_uid);
	else {
		af->size_was = st.st_size;
		return 0;
	}
	close(af->fd);
	af->fd = -1;
	return -1;
}

/*
 * The file's blocks for every frame, allocated now; a filesystem that
 * cannot allocate ahead (EOPNOTSUPP) gets the length only.  What the file
 * holds stays (a file long enough is used as it is).  0, or -1 after
 * saying why.
 */
static int file_allocate(const struct kvactl_opts *o,
			 const struct arena_file *af)
{
	uint64_t size = (uint64_t)o->frames * o->frame_size;
	char q[KVACTL_QUOTE_LEN], b[KVACTL_NUM_LEN];
	int err;

	err = fallocate(af->fd, 0, 0, (off_t)size) ? errno : 0;
	if (err == EOPNOTSUPP)
		err = (uint64_t)af->size_was < size &&
		      ftruncate(af->fd, (off_t)size) ? errno : 0;
	if (err == EINTR || create_stop) {
		kvactl_err("create: interrupted");
		return -1;
	}
	if (err) {
		kvactl_err("create: cannot allocate %s in --file %s: %s",
			   kvactl_fmt_size(b, size, false),
			   kvactl_quote(q, o->file), strerror(err));
		return -1;
	}
	return 0;
}

/* No arena: the file as create found it, or none if it made it. */
static void file_undo(const char *path, const struct arena_file *af)
{
	struct stat st;

	if (af->made) {
		unlink(path);
		return;
	}
	/* Only a length create added is taken away. */
	if (!fstat(af->fd, &st) && st.st_size > af->size_was &&
	    ftruncate(af->fd, af->size_was))
		kvactl_err("create: --file: restoring its length: %s",
			   strerror(errno));
}

/* @key ("MemAvailable") from /proc/meminfo in bytes, or UINT64_MAX. */
static uint64_t meminfo(const char *key)
{
	unsigned long long kib;
	size_t len = strlen(key);
	uint64_t v = UINT64_MAX;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "re");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == ':' &&
		    sscanf(line + len + 1, " %llu", &kib) == 1)
			v = (uint64_t)kib * (strstr(line, " kB") ? 1024 : 1);
	if (f)
		fclose(f);
	return v;
}

/* The MemAvailable create leaves alone: --headroom, 10% of MemTotal. */
static uint64_t headroom(const struct kvactl_opts *o)
{
	uint64_t total;

	if (!o->headroom_pct)
		return o->headroom;
	total = meminfo("MemTotal");
	return total == UINT64_MAX ? 0 : total / 1000 * o->headroom;
}

/* "10% of MemTotal", "--headroom 1Gi", for messages. */
static char *headroom_desc(char buf[64], const struct kvactl_opts *o)
{
	char b[KVACTL_NUM_LEN];

	if (o->headroom_pct && o->headroom % 10)
		snprintf(buf, 64, "%llu.%llu%% of MemTotal",
			 (unsigned long long)(o->headroom / 10),
			 (unsigned long long)(o->headroom % 10));
	else if (o->headroom_pct)
		snprintf(buf, 64, "%llu%% of MemTotal",
			 (unsigned long long)(o->headroom / 10));
	else
		snprintf(buf, 64, "%s", kvactl_fmt_size_exact(b, o->headroom));
	return buf;
}

/*
 * Host memory is allocated in full, as shmem that no process maps: the
 * OOM killer would not blame kvarenactl for it but some serving process.
 * So ask first, and leave the headroom: @size bytes more for @cmd.
 */
int kvactl_check_host_memory(const struct kvactl_opts *o, const char *cmd,
			     uint64_t size)
{
	uint64_t avail = meminfo("MemAvailable"), keep = headroom(o);
	char b[3][KVACTL_NUM_LEN], d[64];

	if (avail == UINT64_MAX || (size <= avail && keep <= avail - size))
		return 0;
	kvactl_err("%s: %s of host memory asked for, but MemAvailable is %s and %s keeps %s of it free (--headroom: %s)",
		   cmd, kvactl_fmt_size(b[0], size, false),
		   kvactl_fmt_size(b[1], avail, false), cmd,
		   kvactl_fmt_size(b[2], keep, false), headroom_desc(d, o));
	return -1;
}

/* What create made, and what it left, on one line. */
static void report(const struct kvactl_opts *o, const char *name)
{
	uint64_t size = (uint64_t)o->frames * o->frame_size;
	char b[3][KVACTL_NUM_LEN], d[64], q[KVACTL_QUOTE_LEN];

	printf("arena %s: %u %s of %s, ", name, o->frames,
	       o->frames == 1 ? "frame" : "frames",
	       kvactl_fmt_size(b[0], o->frame_size, false));
	if (table_frames(o) > o->frames)
		printf("up to %u (resize), ", table_frames(o));
	printf("%s ", kvactl_fmt_size(b[1], size, false));
	if (o->cuda)
		printf("on cuda:%u\n", o->cuda_dev);
	else if (o->file)
		printf("in file %s\n", kvactl_quote(q, o->file));
	else if (o->hugepages)
		printf("of 2 MiB huge pages; %llu huge pages left free\n",
		       (unsigned long long)meminfo("HugePages_Free"));
	else
		printf("of host memory; %s of MemAvailable left (headroom %s: %s)\n",
		       kvactl_fmt_size(b[2], meminfo("MemAvailable"), false),
		       kvactl_fmt_size(b[0], headroom(o), false),
		       headroom_desc(d, o));
}

static int set_backing(int fd, const char *name, uint32_t first, uint32_t n,
		       int mfd)
{
	struct kvarena_set_backing b = {
		.first_frame = first,
		.nr_frames = n,
		.fd = mfd,
	};
	int err;

	kvactl_name_copy(b.name, name);
	err = kvactl_ioctl(fd, KVARENA_IOC_ARENA_SET_BACKING, &b);
	if (err)
		kvactl_err("create: registering the memory of frame%s %u%s: %s",
			   n > 1 ? "s" : "", first, n > 1 ? "-..." : "",
			   strerror(-err));
	return err;
}

static int back_host(int fd, const struct kvactl_opts *o, const char *name)
{
	int mfd = host_memory(o, name), err;

	if (mfd < 0)
		return -1;
	/* The whole table: absent frames' pages come at a grow. */
	err = set_backing(fd, name, 0, table_frames(o), mfd);
	close(mfd);
	return err ? -1 : 0;
}

static int back_cuda(int fd, const struct kvactl_opts *o, const char *name,
		     struct kvactl_cuda *cu)
{
	for (uint32_t i = 0; i < o->frames; i++) {
		int dfd, err;

		if (create_stop) {
			kvactl_err("create: interrupted after %u of %u frames",
				   i, o->frames);
			return -1;
		}
		dfd = kvactl_cuda_frame(cu);

		if (dfd < 0)
			return -1;
		/* The module takes its own reference to the file. */
		err = set_backing(fd, name, i, 1, dfd);
		close(dfd);
		if (err)
			return -1;
	}
	return 0;
}

/* Every frame is a range of the file, in order: one registration. */
static int back_file(int fd, const struct kvactl_opts *o, const char *name,
		     const struct arena_file *af)
{
	if (file_allocate(o, af))
		return -1;
	/* The module takes its own reference to the file. */
	return set_backing(fd, name, 0, o->frames, af->fd) ? -1 : 0;
}

static int destroy(int fd, const char *name)
{
	struct kvarena_arena_destroy d = { 0 };

	kvactl_name_copy(d.name, name);
	return kvactl_ioctl(fd, KVARENA_IOC_ARENA_DESTROY, &d);
}

int kvactl_cmd_create(const struct kvactl_opts *o)
{
	const char *name = o->args[0];
	struct kvarena_arena_create c = {
		.frame_size = o->frame_size,
		.nr_frames = o->frames,
		.mem_kind = o->cuda ? KVARENA_MEM_CUDA :
			    o->file ? KVARENA_MEM_FILE : KVARENA_MEM_HOST,
		.mem_dev = o->cuda ? o->cuda_dev : 0,
		.low_watermark = o->low_watermark,
		.bytes_per_token = o->bytes_per_token,
		.client_min_limit = o->client_min_limit,
		.client_max_default = o->client_max_default,
		.client_max_limit = o->client_max_limit,
		.cache_domains = o->cache_domains,
		.domain_cached_max = o->domain_cached_max,
		.max_frames = kvactl_given(o, OPT_MAX_FRAMES) ? o->max_frames : 0,
	};
	struct arena_file af = { .fd = -1 };
	struct kvactl_cuda *cu = NULL;
	int fd, err, ret = KVACTL_FAIL;

	/* One arena over others: nothing to allocate (gang.c). */
	if (o->gang)
		return kvactl_gang_create(o);
	/* What is not given is the module's default: the caller's, 0666. */
	if (kvactl_access_given(o)) {
		c.flags |= KVARENA_CREATE_ACCESS;
		c.owner_uid = kvactl_given(o, OPT_OWNER) ? o->owner_uid :
			      (uint32_t)geteuid();
		c.owner_gid = kvactl_given(o, OPT_GROUP) ? o->owner_gid :
			      (uint32_t)getegid();
		c.mode = kvactl_given(o, OPT_MODE) ? o->mode :
			 KVARENA_MODE_DEFAULT;
	}
	if (o->clear_always) {
		if (o->cuda) {
			kvactl_err("create: --clear-always is for host arenas: the module cannot clear GPU memory");
			return KVACTL_FAIL;
		}
		c.flags |= KVARENA_CREATE_CLEAR_ALWAYS;
	}
	if (!o->cuda && !o->file && !o->hugepages &&
	    kvactl_check_host_memory(o, "create",
				     (uint64_t)o->frames * o->frame_size))
		return KVACTL_FAIL;
	if (o->cuda) {
		cu = kvactl_cuda_open(o->cuda_dev, o->frame_size);
		if (!cu)
			return KVACTL_FAIL;
		kvactl_cuda_uuid(cu, c.mem_uuid);
	}
	fd = kvactl_open(true, "create");
	if (fd < 0)
		goto out_cuda;
	if (o->file && file_open(o->file, &af))
		goto out_close;

	kvactl_name_copy(c.name, name);
	err = kvactl_ioctl(fd, KVARENA_IOC_ARENA_CREATE, &c);
	if (err) {
		if (err == -EEXIST)
			kvactl_err("create: an arena named \"%s\" exists already",
				   name);
		else if (denied(err))
			kvactl_err("create: permission denied (needs CAP_SYS_ADMIN)");
		else if (err == -EINVAL)
			kvactl_err("create: the module refused the arena's geometry: %s",
				   strerror(-err));
		else
			kvactl_err("create: %s", strerror(-err));
		goto out_file;
	}

	catch_stop_signals();
	if (o->cuda)
		err = back_cuda(fd, o, name, cu);
	else if (o->file)
		err = back_file(fd, o, name, &af);
	else
		err = back_host(fd, o, name);
	if (err) {
		/* Lose nothing, leave nothing: take the arena down again. */
		err = destroy(fd, name);
		if (err == -EBUSY)
			kvactl_err("create: arena \"%s\" is left without all its memory: clients attached meanwhile; destroy it once they are gone",
				   name);
		else if (err)
			kvactl_err("create: arena \"%s\" is left without all its memory: destroying it: %s",
				   name, strerror(-err));
		goto out_file;
	}
	report(o, name);
	ret = KVACTL_OK;
out_file:
	if (af.fd >= 0) {
		/* The module holds the file now, or nobody needs it. */
		if (ret)
			file_undo(o->file, &af);
		close(af.fd);
	}
out_close:
	close(fd);
out_cuda:
	if (cu)
		kvactl_cuda_close(cu);
	return ret;
}

/* "rank 1 of gang \"tp\"", or "a member of gang \"tp\"". */
static char *member_desc(char buf[96], const struct kvactl_gang *g)
{
	if (g->rank >= 0)
		snprintf(buf, 96, "rank %d of gang \"%s\"", g->rank, g->gang);
	else
		snprintf(buf, 96, "a member of gang \"%s\"", g->gang);
	return buf;
}

int kvactl_cmd_destroy(const struct kvactl_opts *o)
{
	const char *name = o->args[0];
	struct kvarena_stat s = { 0 };
	struct kvactl_gang g;
	char m[96];
	int fd, err;

	fd = kvactl_open(true, "destroy");
	if (fd < 0)
		return KVACTL_FAIL;
	/* A gang's members, to say that they are free again. */
	kvactl_gang_read(name, &g);
	/* --wait: try again every 50 ms while clients are attached. */
	for (unsigned int waited = 0;; waited += 50) {
		struct timespec ts = { .tv_nsec = 50 * 1000 * 1000 };

		err = destroy(fd, name);
		if (err != -EBUSY || waited >= o->wait_ms)
			break;
		/* A member waits for its gang, not for clients: no use. */
		kvactl_gang_read(name, &g);
		if (kvactl_is_member(&g))
			break;
		nanosleep(&ts, NULL);
	}
	if (err == -EBUSY)
		kvactl_gang_read(name, &g);
	if (err == -EBUSY && kvactl_is_member(&g)) {
		kvactl_err("destroy: arena \"%s\" is %s: its frames are the gang's until the gang goes (kvarenactl destroy %s first)",
			   name, member_desc(m, &g), g.gang);
	} else if (err == -EBUSY) {
		char secs[KVACTL_NUM_LEN];
		int serr;

		snprintf(secs, sizeof(secs), " after %u.%03u s", o->wait_ms / 1000,
			 o->wait_ms % 1000);
		kvactl_name_copy(s.name, name);
		serr = kvactl_ioctl(fd, KVARENA_IOC_STAT, &s);
		/* A lower tier goes with its upper arena, or with --none. */
		if (!serr && s.tier == KVARENA_STAT_TIER_UPPER &&
		    !s.nr_clients) {
			char upper[KVARENA_NAME_LEN + 1];

			memcpy(upper, s.tier_name, KVARENA_NAME_LEN);
			upper[KVARENA_NAME_LEN] = '\0';
			kvactl_err("destroy: arena \"%s\" is the lower tier of \"%s\" (kvarenactl tier %s --none first)",
				   name, upper, upper);
		} else if (!serr)
			kvactl_err("destroy: arena \"%s\" has %u %s attached%s (kvarenactl clients %s)",
				   name, s.nr_clients,
				   s.nr_clients == 1 ? "client" : "clients",
				   o->wait_ms ? secs : "", name);
		else
			kvactl_err("destroy: arena \"%s\" has clients attached",
				   name);
	} else if (err == -ENOENT) {
		kvactl_err("destroy: no arena named \"%s\"", name);
	} else if (denied(err)) {
		kvactl_err("destroy: permission denied (needs CAP_SYS_ADMIN)");
	} else if (err) {
		kvactl_err("destroy: %s", strerror(-err));
	} else if (kvactl_is_gang(&g)) {
		printf("destroy: gang %s is gone; its members are arenas of their own again:",
		       name);
		for (uint32_t r = 0; r < g.nr_members; r++)
			printf(" %s", g.members[r]);
		putchar('\n');
	}
	close(fd);
	return err ? KVACTL_FAIL : KVACTL_OK;
}

/*
 * The client @o names in @a: by its id (--id ID; the command line made
 * CLIENT "#ID" into that), or by its label, which exactly one client must
 * have.  Returns the row, or NULL after saying why.
 */
static bool has_id(const struct kvactl_arena *a, uint32_t id)
{
	for (uint32_t i = 0; i < a->nr_clients; i++)
		if (a->clients[i].client_id == id)
			return true;
	return false;
}

const struct kvarena_client_info *
kvactl_find_client(const struct kvactl_arena *a, const struct kvactl_opts *o)
{
	const struct kvarena_client_info *hit = NULL;
	const char *client = o->nargs > 1 ? o->args[1] : NULL;
	char q[KVACTL_QUOTE_LEN];
	uint32_t id = o->client_id, i, n = 0;

	if (!client) {
		for (i = 0; i < a->nr_clients; i++)
			if (a->clients[i].client_id == id)
				return &a->clients[i];
		kvactl_err("%s: arena \"%s\" has no client %u (see kvarenactl clients %s)",
			   o->cmd, a->st.name, id, a->st.name);
		return NULL;
	}
	for (i = 0; i < a->nr_clients; i++) {
		if (!strncmp(a->clients[i].label, client, KVARENA_LABEL_LEN)) {
			hit = &a->clients[i];
			n++;
		}
	}
	if (n == 1)
		return hit;
	if (n)
		kvactl_err("%s: %u clients of arena \"%s\" are labelled %s: name one by its id, --id ID",
			   o->cmd, n, a->st.name, kvactl_quote(q, client));
	else if (!kvactl_parse_u32(client, &id) && has_id(a, id))
		kvactl_err("%s: arena \"%s\" has no client labelled %s (client %u is --id %u)",
			   o->cmd, a->st.name, kvactl_quote(q, client), id, id);
	else
		kvactl_err("%s: arena \"%s\" has no client labelled %s (see kvarenactl clients %s)",
			   o->cmd, a->st.name, kvactl_quote(q, client),
			   a->st.name);
	return NULL;
}

/* Free frames not kept for other clients' minimums: what @c could be given. */
static uint32_t unreserved_for(const struct kvarena_stat *s,
			       const struct kvarena_client_info *c)
{
	uint32_t own = c->min_frames > c->held ? c->min_frames - c->held : 0;
	uint32_t others = s->nr_reserved > own ? s->nr_reserved - own : 0;

	return s->nr_free > others ? s->nr_free - others : 0;
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

/*
 * The arena's policy as @o changes it: what is not given stays as @s
 * has it.  The numbers are checked against the arena's table, so that a
 * wrong one is named (the module would only say EINVAL).  0, or
 * KVACTL_FAIL after saying why, as command @cmd.
 */
static int policy_of(const char *cmd, const struct kvactl_opts *o,
		     const struct kvarena_stat *s, struct kvarena_arena_policy *p)
{
	/* The module measures limits against the table, what it may grow to. */
	uint32_t table = kvactl_max_frames(s), max;
	char t[64];

	memset(p, 0, sizeof(*p));
	p->owner_uid = kvactl_given(o, OPT_OWNER) ? o->owner_uid : s->owner_uid;
	p->owner_gid = kvactl_given(o, OPT_GROUP) ? o->owner_gid : s->owner_gid;
	p->mode = kvactl_given(o, OPT_MODE) ? o->mode : s->mode;
	p->client_min_limit = kvactl_given(o, OPT_CLIENT_MIN_LIMIT) ?
			      o->client_min_limit : s->client_min_limit;
	p->client_max_default = kvactl_given(o, OPT_CLIENT_MAX_DEFAULT) ?
				o->client_max_default : s->client_max_default;
	p->client_max_limit = kvactl_given(o, OPT_CLIENT_MAX_LIMIT) ?
			      o->client_max_limit : s->client_max_limit;
	p->cache_domains = kvactl_given(o, OPT_CACHE_DOMAINS) ?
			   o->cache_domains : s->cache_domains;
	p->domain_cached_max = kvactl_given(o, OPT_DOMAIN_CACHED_MAX) ?
			       o->domain_cached_max : s->domain_cached_max;
	max = p->client_max_limit ? p->client_max_limit : table;
	table_desc(t, s);
	if (p->client_max_limit > table) {
		kvactl_err("%s: --client-max-limit %u is above %s", cmd,
			   p->client_max_limit, t);
		return KVACTL_FAIL;
	}
	if (p->domain_cached_max > table) {
		kvactl_err("%s: --domain-cached-max %u is above %s", cmd,
			   p->domain_cached_max, t);
		return KVACTL_FAIL;
	}
	if (p->client_min_limit > max || p->client_max_default > max) {
		kvactl_err("%s: the clients' %s (%u) would be above their max, %u",
			   cmd, p->client_min_limit > max ? "min limit" : "default max",
			   p->client_min_limit > max ? p->client_min_limit :
			   p->client_max_default, max);
		return KVACTL_FAIL;
	}
	kvactl_name_copy(p->name, s->name);
	return 0;
}

int kvactl_check_policy(const char *cmd, const struct kvactl_opts *o,
			const struct kvarena_stat *s)
{
	struct kvarena_arena_policy p;

	return policy_of(cmd, o, s, &p);
}

/* limit NAME [policy options], create --gang: the policy, changed where given. */
int kvactl_set_policy(int fd, const char *cmd, const struct kvactl_opts *o,
		      const struct kvarena_stat *s)
{
	struct kvarena_arena_policy p;
	int err;

	if (policy_of(cmd, o, s, &p))
		return KVACTL_FAIL;
	err = kvactl_ioctl(fd, KVARENA_IOC_ARENA_SET_POLICY, &p);
	if (denied(err))
		kvactl_err("%s: permission denied (needs CAP_SYS_ADMIN)", cmd);
	else if (err == -ENOENT)
		kvactl_err("%s: no arena named \"%s\"", cmd, s->name);
	else if (err)
		kvactl_err("%s: %s", cmd, strerror(-err));
	return err ? KVACTL_FAIL : KVACTL_OK;
}

int kvactl_cmd_limit(const struct kvactl_opts *opts)
{
	struct kvactl_opts copy = *opts, *o = &copy;
	const char *name = o->args[0];
	const struct kvarena_client_info *c;
	const struct kvarena_stat *s;
	struct kvarena_limits l = { 0 };
	struct kvactl_snap snap;
	uint32_t table;
	char t[64];
	int fd, err, ret = KVACTL_FAIL;

	fd = kvactl_open(true, "limit");
	if (fd < 0)
		return KVACTL_FAIL;
	if (kvactl_snap_read(fd, o->cmd, name, true, &snap))
		goto out_close;
	s = &snap.arenas[0].st;
	table = kvactl_max_frames(s);
	table_desc(t, s);
	/* Sizes (--max 4Gi) in the arena's frames. */
	ret = kvactl_frames_resolve(o, s->frame_size);
	if (ret)
		goto out_free;
	ret = KVACTL_FAIL;
	if (kvactl_policy_given(o)) {
		ret = kvactl_set_policy(fd, "limit", o, s);
		goto out_free;
	}
	c = kvactl_find_client(&snap.arenas[0], o);
	if (!c)
		goto out_free;

	/* The one not given stays as it is. */
	kvactl_name_copy(l.name, name);
	l.client_id = c->client_id;
	l.min_frames = kvactl_given(o, OPT_MIN) ? o->min : c->min_frames;
	l.max_frames = kvactl_given(o, OPT_MAX) ? o->max : c->max_frames;
	/* Say which number is wrong; the module would only say EINVAL. */
	if (l.max_frames > table) {
		kvactl_err("limit: --max %u is above %s",
			   l.max_frames, t);
		goto out_free;
	}
	if (l.min_frames > (l.max_frames ? l.max_frames : table)) {
		if (!kvactl_given(o, OPT_MAX))
			kvactl_err("limit: --min %u is above the client's max, %u",
				   l.min_frames, l.max_frames);
		else if (!kvactl_given(o, OPT_MIN))
			kvactl_err("limit: --max %u is below the client's min, %u",
				   l.max_frames, l.min_frames);
		else
			kvactl_err("limit: --min %u is above %s",
				   l.min_frames, t);
		goto out_free;
	}
	err = kvactl_ioctl(fd, KVARENA_IOC_SET_LIMITS, &l);
	if (err == -ENOSPC)
		kvactl_err("limit: cannot guarantee %u frames to client %u: it holds %u and only %u free frames are not reserved for others",
			   l.min_frames, c->client_id, c->held,
			   unreserved_for(s, c));
	else if (err == -ENOENT)
		kvactl_err("limit: client %u of arena \"%s\" is gone",
			   c->client_id, name);
	else if (denied(err))
		kvactl_err("limit: permission denied (needs CAP_SYS_ADMIN)");
	else if (err)
		kvactl_err("limit: %s", strerror(-err));
	else
		ret = KVACTL_OK;
	/* A max below what is held takes nothing back: say so. */
	if (!err && l.max_frames && c->held > l.max_frames)
		printf("client %u holds %u frames, more than its new max of %u: it keeps them, and gets no new frame until it holds fewer than %u\n",
		       c->client_id, c->held, l.max_frames, l.max_frames);
out_free:
	kvactl_snap_free(&snap);
out_close:
	close(fd);
	return ret;
}

int kvactl_cmd_evict(const struct kvactl_opts *o)
{
	const char *name = o->args[0];
	const struct kvarena_client_info *c;
	struct kvarena_evict e = { 0 };
	char label[4 * KVARENA_LABEL_LEN];
	struct kvactl_snap snap;
	int fd, err, ret = KVACTL_FAIL;

	fd = kvactl_open(true, "evict");
	if (fd < 0)
		return KVACTL_FAIL;
	if (kvactl_snap_read(fd, o->cmd, name, true, &snap))
		goto out_close;
	c = kvactl_find_client(&snap.arenas[0], o);
	if (!c)
		goto out_free;
	kvactl_fmt_label(label, sizeof(label), c->label);
	kvactl_name_copy(e.name, name);
	e.client_id = c->client_id;
	err = kvactl_ioctl(fd, KVARENA_IOC_EVICT, &e);
	if (err == -EOPNOTSUPP)
		kvactl_err("evict: \"%s\" is a CUDA arena: the module cannot revoke GPU memory a client imported; stop its processes instead (kvarenactl kill %s '#%u')",
			   name, name, c->client_id);
	else if (err == -ENOENT)
		kvactl_err("evict: client %u of arena \"%s\" is gone",
			   c->client_id, name);
	else if (denied(err))
		kvactl_err("evict: permission denied (needs CAP_SYS_ADMIN)");
	else if (err)
		kvactl_err("evict: %s", strerror(-err));
	else
		ret = KVACTL_OK;
	if (!err)
		printf("evicted client %u (%s) of arena \"%s\": its %u %s back in the arena, its mappings revoked; its processes get ESHUTDOWN and should close the file\n",
		       c->client_id, label, name, e.nr_frames,
		       e.nr_frames == 1 ? "frame is" : "frames are");
out_free:
	kvactl_snap_free(&snap);
out_close:
	close(fd);
	return ret;
}
