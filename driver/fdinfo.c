// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: /proc/PID/fdinfo/FD of a /dev/kvarena file.
 *
 * The client a file is, and the memory it holds, as "key:\tvalue" lines
 * in the style of the DRM usage stats (Documentation/gpu/drm-usage-stats.rst
 * in the kernel tree): a tool finds every process that holds a client by
 * reading procfs, as gputop and nvtop do for GPUs, whoever opened the file
 * and however it was passed on since.  A file not attached to an arena
 * shows nothing of ours.
 *
 *   kvarena-arena:		the arena's name
 *   kvarena-client-id:		the client's id in that arena (CLIENTS)
 *   kvarena-label:		its label, bytes below 0x20, DEL and '\'
 *				as \ooo
 *   kvarena-frames-held:	frames it holds
 *   kvarena-memory-held:	their size
 *   kvarena-memory-shared:	the part other clients hold too (a prefix
 *				found with LOOKUP)
 *   kvarena-memory-filled:	what it reported filled (SET_USAGE)
 *   kvarena-tokens-filled:	tokens it reported (SET_USAGE)
 *   kvarena-evicted:		1, only once an administrator evicted the
 *				client (EVICT): the file holds nothing and
 *				every command on it fails with ESHUTDOWN, but
 *				it keeps the module loaded until closed
 *
 * Sizes are bytes, or KiB or MiB with the unit when they divide evenly,
 * as DRM prints its drm-memory- keys.
 */
#include <linux/fs.h>
#include <linux/seq_file.h>

#include "kva.h"

static void kva_fdinfo_size(struct seq_file *m, const char *key, u64 bytes)
{
	static const char *const units[] = { "", " KiB", " MiB" };
	unsigned int u = 0;

	while (u < ARRAY_SIZE(units) - 1 && bytes && !(bytes & 1023)) {
		bytes >>= 10;
		u++;
	}
	seq_printf(m, "kvarena-%s:\t%llu%s\n", key, bytes, units[u]);
}

/* Labels are whatever a client passed: one line, whatever it holds. */
static void kva_fdinfo_label(struct seq_file *m, const char *label)
{
	seq_puts(m, "kvarena-label:\t");
	for (; *label; label++) {
		unsigned char c = *label;

		if (c < 0x20 || c == 0x7f || c == '\\')
			seq_printf(m, "\\%03o", c);
		else
			seq_putc(m, c);
	}
	seq_putc(m, '\n');
}

void kva_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct kva_client *cl = file->private_data;
	/* Pairs with smp_store_release() in kva_ioc_attach(). */
	struct kva_arena *a = smp_load_acquire(&cl->arena);
	u64 filled_bytes, filled_tokens;
	u32 held, shared, leader_id = 0;
	bool evicted;

	if (!a)
		return;
	mutex_lock(&a->lock);
	if (cl->is_rank && cl->leader)
		leader_id = cl->leader->id;
	held = cl->core.held;
	shared = cl->core.shared;
	filled_bytes = cl->filled_bytes;
	filled_tokens = cl->filled_tokens;
	evicted = cl->evicted;
	mutex_unlock(&a->lock);

	/* The name, id and label are constant once attached. */
	seq_printf(m, "kvarena-arena:\t%s\n", a->name);
	seq_printf(m, "kvarena-client-id:\t%u\n", cl->id);
	kva_fdinfo_label(m, cl->label);
	if (cl->is_rank) {
		/* A rank holds nothing: its client holds, 0 once gone. */
		seq_printf(m, "kvarena-rank:\t%u\n", cl->rank);
		seq_printf(m, "kvarena-member:\t%s\n",
			   a->members[cl->rank]->name);
		seq_printf(m, "kvarena-rank-of:\t%u\n", leader_id);
	}
	seq_printf(m, "kvarena-frames-held:\t%u\n", held);
	kva_fdinfo_size(m, "memory-held", (u64)held * a->frame_size);
	kva_fdinfo_size(m, "memory-shared", (u64)shared * a->frame_size);
	kva_fdinfo_size(m, "memory-filled", filled_bytes);
	seq_printf(m, "kvarena-tokens-filled:\t%llu\n", filled_tokens);
	if (evicted)
		seq_puts(m, "kvarena-evicted:\t1\n");
}
