/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvarena.ko internals.
 *
 * Lock order: kva_arenas_lock (the arena list), then arena->resize_lock
 * (one arena's size and which frames have memory: resize.c), then
 * arena->lock (one arena's frames, backing and clients); an arena's lock
 * before its lower tier's (tier.c).  A fault on a frames file takes
 * its fmap->sem, then arena->lock (frames.c).  No user memory is touched
 * with arena->lock held unless page faults are disabled: a fault there
 * could be one of ours.
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
#include <linux/idr.h>
#include <linux/uidgid.h>
#include <linux/kobject.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/kvarena.h>

#include "check.h"
#include "compat.h"
#include "core.h"

/* The pseudo filesystem of the frames files (frames.c). */
#define KVA_FS_MAGIC	0x4b564152	/* "KVAR" */

/* Who may use an arena, and what a client without CAP_SYS_ADMIN gets. */
struct kva_policy {
	kuid_t uid;
	kgid_t gid;
	u32 mode;			/* KVARENA_ACC_* bits */
	u32 client_min_limit;
	u32 client_max_default;
	u32 client_max_limit;
	u32 cache_domains;		/* KVARENA_DOMAINS_* */
	u32 domain_cached_max;		/* 0: no cap */
};

/*
 * What frame i of an arena is: bytes [offset, offset + frame_size) of
 * file, one of @nr_refs frames that one SET_BACKING gave it to (each holds
 * a reference: more than that means an fd or a mapping out there).
 * A host arena's pages of the frame are pinned (arena->pages) while the
 * frame is in the arena.  @releasing: taken out, its memory not given
 * back yet (on arena->release_head, linked by @release_next).  All under
 * arena->lock.  24 bytes: an arena of 2^24 frames has as many.
 */
struct kva_backing {
	struct file *file;
	u64 offset;
	u32 nr_refs : 31;
	u32 releasing : 1;
	u32 release_next;
};

struct kva_arena {
	struct kobject kobj;
	struct list_head node;		/* kva_arenas; kva_arenas_lock */

	/* Set at create, constant after. */
	char name[KVARENA_NAME_LEN];
	u64 frame_size;
	u64 table_bytes;		/* kva_arena_table_bytes() */
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
	/*
	 * Host arenas: the pinned pages of every backed frame, frame_size /
	 * PAGE_SIZE per frame (frames.c).  Written at SET_BACKING before any
	 * client can attach, read by faults after.
	 */
	struct page **pages;
	u32 nr_backed;
	u32 nr_unready;			/* frames in the arena with no backing */
	u32 backing_busy;		/* SET_BACKINGs, RESIZEs under way */
	struct list_head clients;	/* struct kva_client.node */
	struct idr client_ids;		/* id -> struct kva_client */
	u32 nr_clients;			/* also read as a hint, unlocked */
	u64 filled_bytes;		/* sum over clients */
	u64 filled_tokens;
	bool dead;			/* destroyed: no new clients */
	bool pressure;			/* READ_ONCE() without the lock */
	u32 headroom;			/* at the last pressure update */
	/* The token ids of the PUBLISH running, for its events (events.c). */
	const struct kva_publish_tokens *publishing;

	wait_queue_head_t pressure_wq;	/* poll() waiters, woken on change */
	struct kva_events *events;	/* set at create; NULL: none kept */

	/* Cache domains and clearing (domain.c); under @lock. */
	struct list_head domains;	/* struct kva_domain.node */
	u64 next_private;		/* number of the next private domain */
	u32 clean_target;		/* clean frames the worker keeps */
	struct work_struct clear_work;	/* clears dirty host frames */

	/*
	 * CUDA arenas: the scrubbers' frames (scrub.c); under @lock but
	 * @scrub_wq and @scrub_seq, which a waiting scrubber reads without.
	 */
	struct kva_scrub_frame *scrub;	/* core.nr_frames entries, or NULL */
	wait_queue_head_t scrub_wq;	/* scrubbers waiting for frames */
	u64 scrub_seq;			/* moves on every kva_scrub_kick() */
	u32 scrub_need;			/* clean frames refused ALLOCs wanted */
	u32 nr_orphans;			/* taken by a scrubber that went away */

	/*
	 * Resizing (resize.c).  @resize_lock: one resize, SET_BACKING or
	 * release of memory at a time.  @release_head: frames taken out
	 * whose memory is still to be given back (by @release_work or the
	 * next resize), under @lock.  @resize_wq: shrinks waiting for
	 * frames, woken as each is taken out.
	 */
	struct mutex resize_lock;
	u32 release_head;
	struct work_struct release_work;
	wait_queue_head_t resize_wq;

	/*
	 * A lower tier (tier.c).  @tier: this arena's, if it has or had one
	 * (its copies under way; under @lock).  @upper: the arena this one
	 * is the lower tier of, or NULL (set under kva_arenas_lock and both
	 * arenas' locks).  @tier_grants: frames of this arena that tier jobs
	 * let their agents map (under @lock).
	 */
	struct kva_tier *tier;
	struct kva_arena *upper;
	struct list_head tier_grants;

	/*
	 * Gangs (gang.c).  A gang: @members, @nr_members of them, each a
	 * reference, constant from GANG_CREATE to the gang's release.  A
	 * member: @gang, the gang it is in or NULL, written under
	 * kva_arenas_lock and the member's @lock, read under either.
	 */
	struct kva_arena **members;
	u32 nr_members;
	struct kva_arena *gang;

	/* The dmem cgroup region and charges (dmem.c), or NULL. */
	struct kva_dmem *dmem;
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
	struct file *fmap_file;		/* host arenas: frames.c */

	wait_queue_head_t attach_wq;	/* poll() before ATTACH */

	/* Set under arena->lock by EVICT; read under it (or as a hint). */
	bool evicted;
	char label[KVARENA_LABEL_LEN];

	/* Protected by arena->lock. */
	struct list_head node;
	struct kva_core_client core;
	u64 filled_bytes;
	u64 filled_tokens;
	/*
	 * Frames of the last ALLOC refused with -ENOSPC, 0 once one
	 * succeeds: poll() reports EPOLLOUT when they could be had.
	 */
	u32 want;
	u32 nr_scrubbing;		/* frames taken with SCRUB, not done */
	u32 dmem_refused;		/* ALLOCs a dmem.max refused */

	/*
	 * Gangs (gang.c).  A client of a gang of host members: @gang_fmaps,
	 * one frames file per member (frames.c), made at ATTACH and constant
	 * after; @token, its GANG_TOKEN secret (set at ATTACH); @ranks, the
	 * ranks that joined it, and @ranks_fatal (both under arena->lock).
	 * A rank (@is_rank, constant after JOIN): @leader, the client it
	 * joined, NULL once that one is gone, and @rank_node on its @ranks
	 * (under arena->lock); @rank, its member.
	 */
	struct file **gang_fmaps;
	u64 token;
	struct list_head ranks;
	bool ranks_fatal;
	bool is_rank;
	u32 rank;
	struct kva_client *leader;
	struct list_head rank_node;
};

/* How a command reached kva_dispatch(). */
#define KVA_HOW_URING		(1u << 0)	/* io_uring, not ioctl() */
#define KVA_HOW_NONBLOCK	(1u << 1)	/* must not sleep: -EAGAIN */

/* figures.c: what a viewer sees of an arena (the rule is there). */
struct kva_figures {
	u64 domain;		/* 0: the arena's figures, else whose */
	u32 free;		/* no client holds (others' cached too) */
	u32 held;
	u32 cached;
	u32 published;
	u32 reserved;
	u32 peak_held;
	u32 clients;
	u32 dirty;
	u64 filled_bytes;
	u64 filled_tokens;
	u64 hits;
	u64 misses;
	u64 reclaims;
	u64 alloc_calls;
	u64 free_calls;
	u64 alloc_failures;
	u64 frames_allocated;	/* the arena's only: 0 for a domain */
	u64 frames_freed;	/* likewise */
	u64 frames_cleared;	/* likewise */
	u64 demoted;
	u64 promoted;
	u64 failed;
};

void kva_figures(struct kva_arena *a, u64 dom, struct kva_figures *f);

/* fdinfo.c */
void kva_show_fdinfo(struct seq_file *m, struct file *file);

/* main.c */
extern const struct file_operations kva_fops;
long kva_dispatch(struct file *file, unsigned int cmd, void __user *argp,
		  unsigned int how);
int kva_copy_in(void *dst, const void __user *src, size_t n,
		unsigned int how);
int kva_copy_out(void __user *dst, const void *src, size_t n,
		 unsigned int how);
int kva_lock_arena(struct kva_arena *a, unsigned int how);
bool kva_admin(unsigned int how);

/* arena.c */
extern struct mutex kva_arenas_lock;
struct kva_arena *kva_arena_get(const char *name);
struct kva_arena *kva_arena_get_locked(const char *name);
void kva_arena_put(struct kva_arena *a);
void kva_arena_free(struct kva_arena *a);
void kva_arena_update_pressure(struct kva_arena *a);
bool kva_arena_permits(struct kva_arena *a, u32 acc, unsigned int how);
void kva_arenas_destroy_all(void);
void kva_arenas_wait_released(void);
int kva_policy_from_user(struct kva_policy *p, u32 uid, u32 gid, u32 mode,
			 u32 min_limit, u32 max_default, u32 max_limit,
			 u32 nr_frames);
long kva_ioc_arena_create(void __user *argp);
int kva_arena_make(const struct kvarena_arena_create *c,
		   struct kva_arena **out);
int kva_arena_insert_locked(struct kva_arena *a);
int kva_arena_table_grow(struct kva_arena *a, u64 bytes);
long kva_ioc_arena_destroy(void __user *argp);
long kva_ioc_set_backing(void __user *argp);
long kva_ioc_stat(struct kva_client *cl, void __user *argp, size_t size,
		  unsigned int how);
long kva_ioc_set_policy(void __user *argp);

/* client.c */
struct kva_client *kva_client_new(void);
void kva_client_release(struct kva_client *cl);
long kva_ioc_attach(struct kva_client *cl, void __user *argp,
		    unsigned int how);
long kva_ioc_alloc(struct kva_client *cl, void __user *argp,
		   unsigned int how);
long kva_ioc_free(struct kva_client *cl, void __user *argp,
		  unsigned int how);
long kva_ioc_frame_fd(struct kva_client *cl, void __user *argp,
		      unsigned int how);
long kva_ioc_set_usage(struct kva_client *cl, void __user *argp,
		       unsigned int how);
long kva_ioc_clients(struct kva_client *cl, void __user *argp,
		     unsigned int how);
long kva_ioc_set_limits(void __user *argp);
long kva_ioc_evict(void __user *argp);
int kva_client_lock(struct kva_client *cl, unsigned int how);

/* events.c */
struct kva_events;

/* The token ids a PUBLISH gave for its events (KVARENA_PUBLISH_TOKENS). */
struct kva_publish_tokens {
	u32 *ids;		/* @count * @per_entry, or NULL */
	u32 per_entry;
	u32 count;
};

int kva_events_init(struct kva_arena *a);
void kva_events_clear(struct kva_arena *a);
void kva_events_put(struct kva_arena *a);
int kva_publish_tokens_get(struct kva_publish_tokens *t,
			   const struct kvarena_prefix *p, unsigned int how);
void kva_publish_tokens_put(struct kva_publish_tokens *t);
long kva_ioc_events_fd(struct kva_client *cl, void __user *argp,
		       unsigned int how);

/* domain.c */
struct kva_domain;
void kva_domains_init(struct kva_arena *a);
void kva_clean_target_update(struct kva_arena *a);
void kva_domains_fini(struct kva_arena *a);
u64 kva_domain_id(const struct kva_core_domain *d);
void kva_domain_copied(struct kva_arena *a, u64 id, int which);
u64 kva_domain_copies(const struct kva_core_domain *d, int which);
u64 kva_domain_by_rule(struct kva_arena *a);
struct kva_core_domain *kva_domain_find(struct kva_arena *a, u64 id);
struct kva_core_domain *kva_domain_get(struct kva_arena *a, u64 id,
				       struct kva_domain **spare);
struct kva_domain *kva_domain_alloc(void);
void kva_domain_free(struct kva_domain *dom);
void kva_domain_put_unused(struct kva_arena *a, struct kva_core_domain *d);
void kva_domains_set_cap(struct kva_arena *a, u32 max);
bool kva_arena_owner(struct kva_arena *a, unsigned int how);
u64 kva_viewer_domain(struct kva_arena *a, struct kva_client *cl,
		      unsigned int how);
void kva_clear_work(struct work_struct *work);
void kva_clear_kick(struct kva_arena *a);
int kva_clear_for(struct kva_client *cl);
u32 kva_clear_some(struct kva_arena *a);

/* scrub.c */
struct kva_scrub_frame;
u64 kva_scrub_table_bytes(const struct kvarena_arena_create *c);
int kva_scrub_init(struct kva_arena *a);
void kva_scrub_fini(struct kva_arena *a);
bool kva_scrub_may_clear(struct kva_core *c, u32 idx);
int kva_scrub_note_import(struct kva_client *cl, u32 idx, unsigned int how);
int kva_scrub_note_member_import(struct kva_arena *a, struct kva_arena *m,
				 u32 idx, unsigned int how);
int kva_scrub_holds(struct kva_client *cl, u64 handle, unsigned int how);
void kva_scrub_kick(struct kva_arena *a);
int kva_scrub_short(struct kva_client *cl, u32 n);
void kva_scrub_detach(struct kva_arena *a, struct kva_client *cl);
u32 kva_scrub_quarantined(struct kva_arena *a);
bool kva_scrub_old_imports(struct kva_arena *a, u32 idx);
long kva_ioc_scrub(struct kva_client *cl, void __user *argp,
		   unsigned int how);
long kva_ioc_imports_dropped(struct kva_client *cl, void __user *argp,
			     unsigned int how);

/* frames.c */
int kva_frames_init(void);
void kva_frames_exit(void);
int kva_check_host_backing(struct kva_arena *a, struct file *file,
			   u64 offset, u64 len);
int kva_pin_backing(struct kva_arena *a, struct file *file, u64 offset,
		    u32 first, u32 nr);
void kva_unpin_frame(struct kva_arena *a, u32 idx);
void kva_unpin_backing(struct kva_arena *a);
int kva_fmap_create(struct kva_client *cl, struct kva_arena *a);
int kva_fmap_create_gang(struct kva_client *cl, struct kva_arena *a);
void kva_fmap_put_all(struct kva_client *cl);
u32 kva_fmap_files(struct kva_client *cl, struct file **files);
#define KVA_FMAP_ALL	U32_MAX		/* kva_fmap_zap(): every frame */
int kva_fmap_revoke_begin(struct kva_client *cl, bool nonblock);
void kva_fmap_zap(struct kva_client *cl, u32 idx);
void kva_fmap_revoke_end(struct kva_client *cl);
void kva_fmap_detach(struct kva_client *cl);
void kva_fmap_evicted(struct file *file);
void kva_fmap_lock_zap(struct file **files, u32 n);
void kva_fmap_unlock(struct file *file);

/* prefix.c */
long kva_ioc_publish(struct kva_client *cl, void __user *argp,
		     unsigned int how);
long kva_ioc_lookup(struct kva_client *cl, void __user *argp,
		    unsigned int how);

/* resize.c */
void kva_resize_init(struct kva_arena *a);
void kva_resize_kill(struct kva_arena *a);
long kva_ioc_arena_resize(void __user *argp);

/* tier.c */
struct kva_tier;
void kva_tier_pressure(struct kva_arena *a);
enum kva_access kva_frame_access(struct kva_arena *a, struct kva_client *cl,
				 u32 idx);
int kva_tier_granted(struct kva_arena *a, struct kva_client *cl, u64 handle,
		     enum kva_access *acc);
void kva_tier_agent_gone(struct kva_client *cl);
void kva_tier_client_gone(struct kva_client *cl);
u32 kva_tier_count_lower(struct kva_client *cl,
			 const struct kva_core_prefix *e, u32 n);
struct kva_arena *kva_tier_kill(struct kva_arena *a);
bool kva_tier_busy(struct kva_arena *a);
void kva_tier_free(struct kva_arena *a);
u32 kva_tier_name(struct kva_arena *a, char *name);
u64 kva_tier_copies(struct kva_arena *a, int which);
long kva_ioc_tier(struct kva_client *cl, void __user *argp,
		  unsigned int how);
long kva_ioc_promote(struct kva_client *cl, void __user *argp,
		     unsigned int how);
long kva_ioc_arena_set_tier(void __user *argp);

/* gang.c */
long kva_ioc_gang_create(void __user *argp);
long kva_ioc_gang_token(struct kva_client *cl, void __user *argp);
long kva_ioc_join(struct kva_client *cl, void __user *argp, unsigned int how);
long kva_rank_frame_fd(struct kva_client *cl, struct kvarena_frame_fd *ff,
		       unsigned int how, struct file **file,
		       enum kva_access *acc);
void kva_gang_leader_gone(struct kva_arena *a, struct kva_client *cl);
void kva_rank_release(struct kva_client *cl);
void kva_gang_kill(struct kva_arena *a);
void kva_gang_free(struct kva_arena *a);
struct page **kva_member_pages(struct kva_arena *a, u32 member);
int kva_evict_client(struct kva_arena *a, u32 id, u32 *held);

/* dmem.c */
struct kva_dmem;
#ifdef KVA_DMEM
int kva_dmem_init(struct kva_arena *a);
void kva_dmem_flush(struct kva_arena *a);
int kva_dmem_alloc(struct kva_arena *a, struct kva_core_client *cl,
		   u64 *handles, u32 n, bool partial, unsigned int how);
void kva_dmem_attach(struct kva_arena *a);
void kva_dmem_kill(struct kva_arena *a);
void kva_dmem_fini(struct kva_arena *a);
bool kva_dmem_enabled(void);
#else
static inline int kva_dmem_init(struct kva_arena *a)
{
	return 0;
}

static inline void kva_dmem_flush(struct kva_arena *a) { }

static inline int kva_dmem_alloc(struct kva_arena *a,
				 struct kva_core_client *cl, u64 *handles,
				 u32 n, bool partial, unsigned int how)
{
	return kva_core_alloc(&a->core, cl, handles, n, partial);
}

static inline void kva_dmem_attach(struct kva_arena *a) { }
static inline void kva_dmem_kill(struct kva_arena *a) { }
static inline void kva_dmem_fini(struct kva_arena *a) { }

static inline bool kva_dmem_enabled(void)
{
	return false;
}
#endif

/* sysfs.c */
int kva_sysfs_init(struct kobject *parent);
void kva_sysfs_exit(void);
int kva_sysfs_add_arena(struct kva_arena *a);
extern const struct kobj_type kva_arena_ktype;

/* uring.c */
struct io_uring_cmd;
int kva_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags);

#endif /* KVA_DRV_H */
