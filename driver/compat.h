/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Portability between the kernels kvarena builds for (Debian's 6.1 and
 * 6.12 at least), decided by the compile probes in probes/ (kva_config.h
 * is generated per kernel by probes/run-probes.sh), never by version
 * numbers.
 */
#ifndef KVA_COMPAT_H
#define KVA_COMPAT_H

#include <linux/kconfig.h>
#include <linux/kobject.h>
#include <linux/mm.h>
#include <linux/kvarena.h>

#include "kva_config.h"

/* vm_flags became read-only, with setters, in 6.3. */
static inline void kva_vm_flags_set(struct vm_area_struct *vma,
				    vm_flags_t flags)
{
#ifdef KVA_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

static inline void kva_vm_flags_clear(struct vm_area_struct *vma,
				      vm_flags_t flags)
{
#ifdef KVA_HAVE_VM_FLAGS_SET
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

/*
 * kobject_init() took a writable kobj_type on older kernels (5.10); it
 * never wrote through it.
 */
static inline void kva_kobject_init(struct kobject *kobj,
				    const struct kobj_type *ktype)
{
#ifdef KVA_HAVE_KOBJ_TYPE_CONST
	kobject_init(kobj, ktype);
#else
	kobject_init(kobj, (struct kobj_type *)ktype);
#endif
}

/*
 * The dmem cgroup controller, with the interface dmem.c charges through
 * (probes/dmem_cgroup_init.c: 7.x).  Without it frames are charged to no
 * cgroup and KVARENA_FEAT_DMEM is not offered.
 */
#if defined(KVA_HAVE_DMEM_CGROUP_INIT) && IS_ENABLED(CONFIG_CGROUP_DMEM)
#define KVA_DMEM 1
#endif

#if defined(KVA_HAVE_URING_CMD) && IS_ENABLED(CONFIG_IO_URING)
#define KVA_URING_CMD 1

#ifdef KVA_HAVE_IO_URING_CMD_H
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

/* The 16-byte command area of the SQE (struct kvarena_uring_cmd). */
static inline const void *kva_uring_cmd_area(struct io_uring_cmd *ioucmd)
{
#if defined(KVA_HAVE_IO_URING_SQE_CMD_TYPED)
	return io_uring_sqe_cmd(ioucmd->sqe, struct kvarena_uring_cmd);
#elif defined(KVA_HAVE_IO_URING_SQE_CMD)
	return io_uring_sqe_cmd(ioucmd->sqe);
#else
	return ioucmd->cmd;
#endif
}
#endif /* uring_cmd */

#endif /* KVA_COMPAT_H */
