// SPDX-License-Identifier: GPL-2.0
/* kobject_init() takes a const struct kobj_type (not yet in 5.10). */
#include <linux/kobject.h>

static const struct kobj_type kva_probe_ktype;

static void kva_probe_kobject_init(struct kobject *kobj)
{
	kobject_init(kobj, &kva_probe_ktype);
}

void (*kva_probe_kobject_init_p)(struct kobject *kobj) =
	kva_probe_kobject_init;
