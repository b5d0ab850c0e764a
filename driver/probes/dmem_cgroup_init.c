// SPDX-License-Identifier: GPL-2.0
/*
 * The dmem cgroup controller's region interface that kvarena charges
 * through: registration with a struct dmem_cgroup_init (7.x; 6.14's took
 * the size alone), and dmem_cgroup_get_common_ancestor(), which takes a
 * reference on a pool (dmem.c keeps one charge per cgroup and frames).
 */
#include <linux/cgroup_dmem.h>

static struct dmem_cgroup_region *kva_probe_register(u64 size)
{
	const struct dmem_cgroup_init init = { .size = size };

	return dmem_cgroup_register_region(&init, "kvarena/%s", "probe");
}

static struct dmem_cgroup_pool_state *
kva_probe_ref(struct dmem_cgroup_pool_state *pool)
{
	return dmem_cgroup_get_common_ancestor(pool, pool);
}

struct dmem_cgroup_region *(*kva_probe_register_p)(u64) = kva_probe_register;
struct dmem_cgroup_pool_state *(*kva_probe_ref_p)(struct dmem_cgroup_pool_state *) =
	kva_probe_ref;
