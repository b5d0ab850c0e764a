/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvarena.ko internals.
 *
 * Lock order: kva_arenas_lock (the arena list), then arena->lock (one
 * arena's frames, backing and clients).  Nothing else nests.
 *
 * Lifetimes: an arena is a kobject (its sysfs directory); the list holds
 * one reference from ARENA_CREATE to ARENA_DESTROY and every attached
 * client holds one more, so an arena outlives its last client's release
 * and its last sysfs reader.  A client is the private data of one open
 * file of /dev/kvarena and lives until that file's release.
 */
#ifndef KVA_DRV_H
#define KVA_DRV_H

#include <linux/fs.h>
#include <linux/uidgid.h>
#include <linux/kobject.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/kvarena.h>

#include "core.h"

/* Who may use an arena, and what a client without CAP_SYS_ADMIN gets. */
struct kva_policy {
	kuid_t uid;
	kgid_t gid;
	u32 mode;			/* KVARENA_ACC_* bits */
	u32 client_min_limit;
	u32 client_max_default;
	u32 client_max_limit;
};

/* What frame i of an arena is: bytes [offset, offset + frame_size) of file. */
struct kva_backing {
	struct file *file;
	u64 offset;
};

struct kva_arena {
	struct kobject kobj;
	struct list_head node;		/* kva_arenas; kva_arenas_lock */

	/* Set at create, constant after. */
	char name[KVARENA_NAME_LEN];
	u64 frame_size;
	u64 bytes_per_token;
	u32 mem_kind;
	u32 mem_dev;
	u32 low_watermark;
	u32 flags;			/* KVARENA_CREATE_* */
	u8 mem_uuid[16];

	struct mutex lock;		/* protects everything below */
	struct kva_policy policy;
	struct kva_core core;
	struct kva_backing *backing;	/* core.nr_frames entries */
	u32 nr_backed;
	struct list_head clients;	/* struct kva_client.node */
	u32 nr_clients;			/* also read as a hint, unlocked */
	u32 next_client_id;
	u64 filled_bytes;		/* sum over clients */
	u64 filled_tokens;
	bool dead;			/* destroyed: no new clients */
	bool pressure;			/* READ_ONCE() without the lock */

	wait_queue_head_t pressure_wq;	/* poll() waiters, woken on change */
};

struct kva_client {
	/*
	 * NULL until ATTACH, then constant: written once under
	 * kva_arenas_lock with smp_store_release(), read with
	 * smp_load_acquire().
	 */
	struct kva_arena *arena;

	/* Set at ATTACH, constant after. */
	u32 id;
	struct pid *pid;
	kuid_t uid;			/* euid of the attacher */
	char label[KVARENA_LABEL_LEN];

	/* Protected by arena->lock. */
	struct list_head node;
	struct kva_core_client core;
	u64 filled_bytes;
	u64 filled_tokens;
};

/* main.c */
extern const struct file_operations kva_fops;
long kva_dispatch(struct file *file, unsigned int cmd, void __user *argp);

/* arena.c */
extern struct mutex kva_arenas_lock;
struct kva_arena *kva_arena_get(const char *name);
struct kva_arena *kva_arena_get_locked(const char *name);
void kva_arena_put(struct kva_arena *a);
void kva_arena_free(struct kva_arena *a);
void kva_arena_update_pressure(struct kva_arena *a);
void kva_arenas_destroy_all(void);
int kva_name_valid(const char *name);
int kva_policy_from_user(struct kva_policy *p, u32 uid, u32 gid, u32 mode,
			 u32 min_limit, u32 max_default, u32 max_limit,
			 u32 nr_frames);
long kva_ioc_arena_create(void __user *argp);
long kva_ioc_arena_destroy(void __user *argp);
long kva_ioc_set_backing(void __user *argp);
long kva_ioc_stat(void __user *argp);

/* client.c */
struct kva_client *kva_client_new(void);
void kva_client_release(struct kva_client *cl);
long kva_ioc_attach(struct kva_client *cl, void __user *argp);
long kva_ioc_alloc(struct kva_client *cl, void __user *argp);
long kva_ioc_free(struct kva_client *cl, void __user *argp);
long kva_ioc_frame_fd(struct kva_client *cl, void __user *argp);
long kva_ioc_set_usage(struct kva_client *cl, void __user *argp);
long kva_ioc_clients(void __user *argp);
long kva_ioc_set_limits(void __user *argp);

/* sysfs.c */
int kva_sysfs_init(struct kobject *parent);
void kva_sysfs_exit(void);
int kva_sysfs_add_arena(struct kva_arena *a);
extern const struct kobj_type kva_arena_ktype;

/* uring.c */
int kva_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags);

/* True if every byte of @p (@size bytes) is zero. */
static inline bool kva_all_zero(const void *p, size_t size)
{
	return !memchr_inv(p, 0, size);
}

#endif /* KVA_DRV_H */
