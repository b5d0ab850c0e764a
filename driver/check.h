/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The argument checks of every command, and who may run which: pure
 * functions of a command's struct, with no lock, file or process in sight,
 * so that the same file builds into kvarena.ko and into the native
 * libFuzzer target that drives them (selftests/faults/fuzz_args.c).
 *
 * Each check returns 0 or -EINVAL and looks only at what the struct says
 * by itself; what needs the arena (ranges against its size, permissions,
 * state) stays with the command.
 */
#ifndef KVA_CHECK_H
#define KVA_CHECK_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <asm/page.h>
#define KVA_CHECK_PAGE_SIZE	PAGE_SIZE
#else
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
typedef uint32_t u32;
typedef uint64_t u64;
#ifndef KVA_CHECK_PAGE_SIZE
#define KVA_CHECK_PAGE_SIZE	4096ul
#endif
#endif

#include <linux/kvarena.h>

/* Who may run a command: the table of uapi/linux/kvarena.h. */
enum kva_need {
	KVA_ANYONE,		/* read-only opens too */
	KVA_WRITER,		/* file open for writing */
	KVA_ADMIN,		/* writer with CAP_SYS_ADMIN, over ioctl() */
	KVA_CLIENT,		/* writer attached to an arena */
};

int kva_cmd_need(unsigned int cmd);
bool kva_cmd_nonblock(unsigned int cmd);

int kva_name_valid(const char *name);

int kva_check_version(const struct kvarena_version *v);
int kva_check_create(const struct kvarena_arena_create *c);
int kva_check_destroy(const struct kvarena_arena_destroy *d);
int kva_check_resize(const struct kvarena_arena_resize *r);
int kva_check_set_backing(const struct kvarena_set_backing *b);
int kva_check_policy(const struct kvarena_arena_policy *p);
int kva_check_policy_values(u32 mode, u32 min_limit, u32 max_default,
			    u32 max_limit, u32 nr_frames);
int kva_check_attach(const struct kvarena_attach *a);
int kva_check_gang_create(const struct kvarena_gang_create *g);
int kva_check_gang_token(const struct kvarena_gang_token *t);
int kva_check_join(const struct kvarena_join *j);
int kva_check_frames(const struct kvarena_frames *f, u32 flags_ok);
int kva_check_frame_fd(const struct kvarena_frame_fd *ff);
int kva_check_scrub(const struct kvarena_scrub *s);
int kva_check_imports_dropped(const struct kvarena_imports_dropped *d);
int kva_check_usage(const struct kvarena_usage *u);
int kva_check_stat(const struct kvarena_stat *s);
int kva_check_clients(const struct kvarena_clients *c, u32 max_rows);
int kva_check_limits(const struct kvarena_limits *l);
int kva_check_evict(const struct kvarena_evict *e);
int kva_check_prefix(const struct kvarena_prefix *p, u32 flags_ok);
int kva_check_events_fd(const struct kvarena_events_fd *e);
int kva_check_set_tier(const struct kvarena_arena_tier *t);
int kva_check_tier(const struct kvarena_tier *t);
int kva_check_promote(const struct kvarena_promote *p);

#endif /* KVA_CHECK_H */
