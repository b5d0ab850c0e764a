// SPDX-License-Identifier: GPL-2.0
/* vm_flags_set() (6.3+): vm_flags may no longer be written directly. */
#include <linux/mm.h>

static void kva_probe_vm_flags_set(struct vm_area_struct *vma)
{
	vm_flags_set(vma, VM_IO);
}

void (*kva_probe_vm_flags_set_p)(struct vm_area_struct *vma) =
	kva_probe_vm_flags_set;
