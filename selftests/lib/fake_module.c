// SPDX-License-Identifier: GPL-2.0
/*
 * fake_module.c: see fake_module.h.  Not the module: no permissions, no
 * pressure, no sysfs; just enough of its contract, read from the uapi
 * header, to drive libkvarena's device path natively.  The module's own
 * tests (selftests/kvarena, in a VM) and lib_vm_test check the real one.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/kvarena.h>

#include "core.h"
#include "hooks.h"
#include "fake_module.h"

#define MAX_ARENAS	4
#define MAX_CLIENTS	16

struct fake_arena {
	bool live;
	char name[KVARENA_NAME_LEN];
	struct kva_core core;
	uint64_t frame_size;
	uint32_t mem_kind, mem_dev;
	bool no_backing;
	int *fd;			/* backing per frame, -1 if none */
	uint64_t *offset;
};

struct fake_client {
	bool live;
	int fd;
	struct fake_arena *arena;
	struct kva_core_client cl;
	uint64_t filled_tokens, filled_bytes;
};

static struct fake_arena arenas[MAX_ARENAS];
static struct fake_client clients[MAX_CLIENTS];
static uint32_t abi = KVARENA_ABI_VERSION;
static uint64_t features;
static unsigned int calls[16];
static unsigned long fail_nr;
static unsigned int fail_nth;
static int fail_err;

static struct fake_arena *arena_by_name(const char *name)
{
	int i;

	for (i = 0; i < MAX_ARENAS; i++)
		if (arenas[i].live && !strncmp(arenas[i].name, name,
					       KVARENA_NAME_LEN))
			return &arenas[i];
	return NULL;
}

static struct fake_client *client_of(int fd)
{
	int i;

	for (i = 0; i < MAX_CLIENTS; i++)
		if (clients[i].live && clients[i].fd == fd)
			return &clients[i];
	return NULL;
}

static uint32_t nr_backed(const struct fake_arena *ar)
{
	uint32_t i, n = 0;

	for (i = 0; i < ar->core.nr_frames; i++)
		n += ar->fd[i] >= 0;
	return n;
}

static unsigned int nr_attached(const struct fake_arena *ar)
{
	unsigned int i, n = 0;

	for (i = 0; i < MAX_CLIENTS; i++)
		n += clients[i].live && clients[i].arena == ar;
	return n;
}

static void arena_destroy(struct fake_arena *ar)
{
	uint32_t i;

	for (i = 0; i < ar->core.nr_frames; i++)
		if (ar->fd[i] >= 0)
			close(ar->fd[i]);
	free(ar->fd);
	free(ar->offset);
	kva_core_fini(&ar->core);
	ar->live = false;
}

static int arena_create(struct kvarena_arena_create *c)
{
	struct fake_arena *ar = NULL;
	uint32_t i;
	int ret;

	if ((c->flags & ~KVARENA_CREATE_NO_BACKING) || c->reserved0 ||
	    c->frame_size < 4096 ||
	    (c->frame_size & (c->frame_size - 1)) || c->mem_kind > 1)
		return -EINVAL;
	if (arena_by_name(c->name))
		return -EEXIST;
	for (i = 0; i < MAX_ARENAS; i++)
		if (!arenas[i].live)
			ar = &arenas[i];
	if (!ar)
		return -ENOSPC;
	ret = kva_core_init(&ar->core, c->nr_frames);
	if (ret)
		return ret;
	memcpy(ar->name, c->name, sizeof(ar->name));
	ar->frame_size = c->frame_size;
	ar->mem_kind = c->mem_kind;
	ar->mem_dev = c->mem_dev;
	ar->no_backing = c->flags & KVARENA_CREATE_NO_BACKING;
	ar->fd = malloc(c->nr_frames * sizeof(*ar->fd));
	ar->offset = calloc(c->nr_frames, sizeof(*ar->offset));
	for (i = 0; i < c->nr_frames; i++)
		ar->fd[i] = -1;
	ar->live = true;
	return 0;
}

static int set_backing(struct kvarena_set_backing *b)
{
	struct fake_arena *ar = arena_by_name(b->name);
	struct stat st;
	uint32_t i;

	if (!ar)
		return -ENOENT;
	if (ar->no_backing || !b->nr_frames ||
	    b->first_frame >= ar->core.nr_frames ||
	    b->nr_frames > ar->core.nr_frames - b->first_frame ||
	    b->offset % 4096)
		return -EINVAL;
	if (fstat(b->fd, &st))
		return -EBADF;
	if ((uint64_t)st.st_size < b->offset + b->nr_frames * ar->frame_size)
		return -EINVAL;
	for (i = 0; i < b->nr_frames; i++)
		if (ar->fd[b->first_frame + i] >= 0)
			return -EBUSY;
	for (i = 0; i < b->nr_frames; i++) {
		ar->fd[b->first_frame + i] = fcntl(b->fd, F_DUPFD_CLOEXEC, 0);
		ar->offset[b->first_frame + i] = b->offset +
						 i * ar->frame_size;
	}
	return 0;
}

static int attach(int fd, struct kvarena_attach *at)
{
	struct fake_arena *ar = arena_by_name(at->name);
	struct fake_client *c = NULL;
	int i, ret;

	if (!ar)
		return -ENOENT;
	if (!ar->no_backing && nr_backed(ar) < ar->core.nr_frames)
		return -EAGAIN;
	if (client_of(fd))
		return -EBUSY;
	for (i = 0; i < MAX_CLIENTS; i++)
		if (!clients[i].live)
			c = &clients[i];
	if (!c)
		return -ENOSPC;
	ret = kva_core_attach(&ar->core, &c->cl, at->min_frames,
			      at->max_frames);
	if (ret)
		return ret;
	c->live = true;
	c->fd = fd;
	c->arena = ar;
	c->filled_tokens = c->filled_bytes = 0;
	at->client_id = (uint32_t)(c - clients) + 1;
	at->nr_frames = ar->core.nr_frames;
	at->mem_kind = ar->mem_kind;
	at->frame_size = ar->frame_size;
	at->bytes_per_token = 0;
	return 0;
}

static int frames_cmd(struct fake_client *c, unsigned long nr,
		      struct kvarena_frames *f)
{
	uint64_t *h = (uint64_t *)(uintptr_t)f->handles;
	int ret;

	if (!f->count || f->count > KVARENA_MAX_BATCH || f->reserved0)
		return -EINVAL;
	if (nr == KVARENA_IOC_FREE) {
		if (f->flags)
			return -EINVAL;
		ret = kva_core_free(&c->arena->core, &c->cl, h, f->count);
		f->nr_done = ret ? 0 : f->count;
		return ret;
	}
	if (f->flags & ~KVARENA_ALLOC_PARTIAL)
		return -EINVAL;
	ret = kva_core_alloc(&c->arena->core, &c->cl, h, f->count,
			     f->flags & KVARENA_ALLOC_PARTIAL);
	if (ret < 0)
		return ret;
	f->nr_done = (uint32_t)ret;
	return 0;
}

static int frame_fd(struct fake_client *c, struct kvarena_frame_fd *f)
{
	struct fake_arena *ar = c->arena;
	int idx = kva_core_lookup(&ar->core, &c->cl, f->handle);

	if (idx < 0)
		return idx;
	if (ar->fd[idx] < 0)
		return -ENODATA;
	f->fd = fcntl(ar->fd[idx], F_DUPFD_CLOEXEC, 0);
	f->offset = ar->offset[idx];
	f->size = ar->frame_size;
	return 0;
}

static int stat_cmd(struct kvarena_stat *s)
{
	struct fake_arena *ar = arena_by_name(s->name);
	uint32_t i;

	if (!ar)
		return -ENOENT;
	s->frame_size = ar->frame_size;
	s->nr_frames = ar->core.nr_frames;
	s->nr_free = ar->core.nr_free;
	s->nr_held = kva_core_held(&ar->core);
	s->nr_clients = nr_attached(ar);
	s->mem_kind = ar->mem_kind;
	s->mem_dev = ar->mem_dev;
	s->nr_backed = nr_backed(ar);
	s->state = ar->no_backing ? KVARENA_STATE_NO_BACKING : 0;
	s->filled_tokens = s->filled_bytes = 0;
	for (i = 0; i < MAX_CLIENTS; i++)
		if (clients[i].live && clients[i].arena == ar) {
			s->filled_tokens += clients[i].filled_tokens;
			s->filled_bytes += clients[i].filled_bytes;
		}
	s->alloc_calls = ar->core.alloc_calls;
	s->free_calls = ar->core.free_calls;
	return 0;
}

static int fake_ioctl(int fd, unsigned long nr, void *arg)
{
	struct fake_client *c = client_of(fd);

	calls[_IOC_NR(nr) & 15]++;
	if (fail_nth && nr == fail_nr && !--fail_nth)
		return -fail_err;

	switch (nr) {
	case KVARENA_IOC_VERSION:
		((struct kvarena_version *)arg)->abi_version = abi;
		((struct kvarena_version *)arg)->features = features;
		return 0;
	case KVARENA_IOC_ARENA_CREATE:
		return arena_create(arg);
	case KVARENA_IOC_ARENA_DESTROY: {
		struct fake_arena *ar = arena_by_name(arg);

		if (!ar)
			return -ENOENT;
		if (nr_attached(ar))
			return -EBUSY;
		arena_destroy(ar);
		return 0;
	}
	case KVARENA_IOC_ARENA_SET_BACKING:
		return set_backing(arg);
	case KVARENA_IOC_ATTACH:
		return attach(fd, arg);
	case KVARENA_IOC_STAT:
		return stat_cmd(arg);
	}
	if (!c)
		return -ENOTCONN;
	switch (nr) {
	case KVARENA_IOC_ALLOC:
	case KVARENA_IOC_FREE:
		return frames_cmd(c, nr, arg);
	case KVARENA_IOC_FRAME_FD:
		return frame_fd(c, arg);
	case KVARENA_IOC_SET_USAGE: {
		struct kvarena_usage *u = arg;

		if (u->filled_bytes > (uint64_t)c->cl.held *
				      c->arena->frame_size)
			return -EINVAL;
		c->filled_tokens = u->filled_tokens;
		c->filled_bytes = u->filled_bytes;
		return 0;
	}
	}
	return -ENOTTY;
}

/* The release of the file: every frame the client held goes back. */
static void fake_close(int fd)
{
	struct fake_client *c = client_of(fd);

	if (!c)
		return;
	kva_core_detach(&c->arena->core, &c->cl);
	c->live = false;
}

void fake_module_install(void)
{
	memset(calls, 0, sizeof(calls));
	abi = KVARENA_ABI_VERSION;
	features = 0;
	fail_nth = 0;
	kva_testing_ioctl = fake_ioctl;
	kva_testing_close = fake_close;
}

void fake_module_remove(void)
{
	int i;

	for (i = 0; i < MAX_CLIENTS; i++)
		if (clients[i].live)
			fake_close(clients[i].fd);
	for (i = 0; i < MAX_ARENAS; i++)
		if (arenas[i].live)
			arena_destroy(&arenas[i]);
	kva_testing_ioctl = NULL;
	kva_testing_close = NULL;
}

void fake_module_set_version(uint32_t abi_version, uint64_t feature_bits)
{
	abi = abi_version;
	features = feature_bits;
}

void fake_module_fail(unsigned long nr, unsigned int nth, int err)
{
	fail_nr = nr;
	fail_nth = nth;
	fail_err = err;
}

unsigned int fake_module_calls(unsigned long nr)
{
	return calls[_IOC_NR(nr) & 15];
}

unsigned int fake_module_clients(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < MAX_CLIENTS; i++)
		n += clients[i].live;
	return n;
}

int fake_module_backing(const char *name, uint32_t idx, uint64_t *offset)
{
	struct fake_arena *ar = arena_by_name(name);

	if (!ar || idx >= ar->core.nr_frames)
		return -1;
	*offset = ar->offset[idx];
	return ar->fd[idx];
}
