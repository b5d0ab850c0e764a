// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the core allocator: the input is a program of
 * operations on four clients (attach with limits, alloc, partial alloc,
 * free of held, stale, forged or duplicated handles, set_limits, detach,
 * publish of held or forged handles under a few keys, lookup of key
 * chains, hold-record growth, shrinking and growing the arena) over a
 * small arena.  After every operation
 * kva_core_check() verifies every invariant, and the clients' holds are
 * checked against a list of handles kept here.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define NR	48
#define NCL	4
#define NKEYS	12

struct fz_client {
	struct kva_core_client cl;
	bool attached;
	u64 held[NR];
	u32 n;
};

static void set_key(u8 *key, u32 k)
{
	memset(key, 0, KVA_KEY_LEN);
	key[5] = 1 + (u8)k;
}

/* The frames @x holds, read back from the core (after forged batches). */
static void resync(const struct kva_core *c, struct fz_client *x)
{
	u32 i;

	x->n = 0;
	for (i = 0; i < NR; i++)
		if (kva_core_lookup(c, &x->cl, KVA_HANDLE(c->frames[i].gen,
							  i)) >= 0)
			x->held[x->n++] = KVA_HANDLE(c->frames[i].gen, i);
}

/*
 * The core's invariants, and each client's holds as kept here: shared
 * frames count once per holder, so the holds add up to at least the
 * arena's held frames, and every held frame is held by someone.
 */
static void check(const struct kva_core *c, const struct fz_client *m)
{
	u32 i, held = 0;

	if (kva_core_check(c))
		abort();
	for (i = 0; i < NCL; i++) {
		if (!m[i].attached)
			continue;
		if (m[i].cl.held != m[i].n)
			abort();
		held += m[i].n;
	}
	if (held < kva_core_held(c) || (!held && kva_core_held(c)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_client m[NCL];
	struct kva_core c;
	u64 buf[NR + 2], stale = 0;
	u32 idx[NR];
	size_t pos = 0;
	u32 i;

	memset(m, 0, sizeof(m));
	if (kva_core_init(&c, NR))
		abort();
	c.seed = 1;	/* a run depends on its input only */
	while (pos + 3 <= size) {
		uint8_t op = data[pos] % 12, a = data[pos + 1], b = data[pos + 2];
		struct fz_client *x = &m[(data[pos] >> 3) % NCL];
		int ret;

		pos += 3;
		if (!x->attached && op != 0)
			continue;
		switch (op) {
		case 0:	/* attach, or detach if attached */
			if (x->attached) {
				if (kva_core_detach(&c, &x->cl) != x->n)
					abort();
				x->attached = false;
				x->n = 0;
			} else if (!kva_core_attach(&c, &x->cl, a % (NR / 2),
						    b % (NR + 1))) {
				x->attached = true;
			}
			break;
		case 1:	/* alloc, all or nothing or partial */
		case 2: {
			u32 n = 1 + a % 8, avail = kva_core_available(&c, &x->cl);

			ret = kva_core_alloc(&c, &x->cl, buf, n, op == 2);
			if (ret < 0) {
				if (ret != -ENOSPC || (n <= avail) ||
				    (op == 2 && avail))
					abort();
				break;
			}
			if ((u32)ret != (n <= avail ? n : avail))
				abort();
			memcpy(x->held + x->n, buf, ret * sizeof(u64));
			x->n += ret;
			break;
		}
		case 3: {	/* free some held handles */
			u32 n = 1 + a % 4, j;

			if (n > x->n)
				break;
			for (j = 0; j < n; j++) {
				u32 k = (b + j * 7) % (x->n - j);

				buf[j] = x->held[k];
				x->held[k] = x->held[x->n - j - 1];
				x->held[x->n - j - 1] = buf[j];
			}
			if (kva_core_free(&c, &x->cl, buf, n))
				abort();
			x->n -= n;
			stale = buf[0];
			break;
		}
		case 4:	/* free of a stale, forged or duplicated batch */
			buf[0] = stale;
			buf[1] = KVA_HANDLE(a, b % (NR + 4));
			if (x->n) {
				buf[2] = x->held[a % x->n];
				buf[3] = buf[2];
				if (!kva_core_free(&c, &x->cl, buf + 2, 2))
					abort();
			}
			if (!kva_core_free(&c, &x->cl, buf, 2) &&
			    kva_core_lookup(&c, &x->cl, buf[0]) >= 0)
				abort();
			/* A forged pair may name held frames: resync. */
			resync(&c, x);
			break;
		case 5:
			kva_core_set_limits(&c, &x->cl, a % NR, b % (NR + 2));
			break;
		case 6:	/* lookups never succeed for what is not held */
			ret = kva_core_lookup(&c, &x->cl, KVA_HANDLE(a, b));
			if (ret >= 0) {
				for (i = 0; i < x->n; i++)
					if (KVA_HANDLE_IDX(x->held[i]) ==
					    (u32)ret)
						break;
				if (i == x->n)
					abort();
			}
			break;
		case 7: {	/* publish held (or one forged) handles */
			struct kva_core_prefix e[4];
			u32 n = 1 + a % 4, j;

			if (!x->n)
				break;
			for (j = 0; j < n; j++) {
				set_key(e[j].key, (b + j * (a >> 4)) % NKEYS);
				e[j].handle = x->held[(b + j) % x->n];
			}
			if (a & 0x80)
				e[n - 1].handle = KVA_HANDLE(b, a % (NR + 2));
			ret = kva_core_publish(&c, &x->cl, e, n);
			if (ret < 0 && ret != -EBUSY && ret != -ENOENT &&
			    ret != -EPERM && ret != -ESTALE && ret != -EINVAL)
				abort();
			break;
		}
		case 8: {	/* look up a chain of keys */
			struct kva_core_prefix e[6];
			u32 n = 1 + a % 6, j, k, need;

			need = kva_core_holds_need(&c, n);
			if (need && (b & 1))
				kva_core_holds_free(kva_core_holds_grow(
					&c, kva_core_holds_alloc(need), need));
			for (j = 0; j < n; j++)
				set_key(e[j].key, (b / 2 + j) % NKEYS);
			ret = kva_core_prefix_lookup(&c, &x->cl, e, n);
			if (ret == -ENOMEM && (!need || (b & 1)))
				abort();
			if (ret < 0 && ret != -ENOSPC && ret != -ENOMEM)
				abort();
			for (j = 0; ret > 0 && j < (u32)ret; j++) {
				if (kva_core_lookup(&c, &x->cl, e[j].handle) < 0)
					abort();
				for (k = 0; k < x->n; k++)
					if (x->held[k] == e[j].handle)
						break;
				if (k == x->n)
					x->held[x->n++] = e[j].handle;
			}
			break;
		}
		case 9:	/* reclaim some cached frames ahead of need */
			kva_core_reclaim(&c, a % 8);
			break;
		case 10: {	/* shrink: never a held frame, never below */
			u32 n = a % 16, cap = kva_core_capacity(&c);
			u32 held = kva_core_held(&c), taken = 0;

			ret = kva_core_shrink(&c, n, &taken);
			if (ret ? (ret != -EINVAL && ret != -EBUSY) ||
				  kva_core_capacity(&c) != cap :
			    taken > n || kva_core_capacity(&c) != cap - n ||
			    kva_core_held(&c) != held)
				abort();
			break;
		}
		case 11: {	/* grow, or end a shrink that waits */
			u32 n = a % 16, cap = kva_core_capacity(&c);

			if (b & 1) {
				kva_core_shrink_cancel(&c);
			} else if (kva_core_grow(&c, n, idx) > n ||
				   kva_core_capacity(&c) !=
				   cap + (n < NR - cap ? n : NR - cap)) {
				abort();
			}
			break;
		}
		}
		check(&c, m);
	}
	for (i = 0; i < NCL; i++)
		if (m[i].attached && kva_core_detach(&c, &m[i].cl) != m[i].n)
			abort();
	/* Nobody holds anything: every shrink is done; then all back in. */
	if (c.shrink_pending)
		abort();
	kva_core_grow(&c, NR, idx);
	if (c.nr_free + c.nr_cached != NR || c.unmet_min ||
	    c.nr_published != c.nr_cached || kva_core_check(&c))
		abort();
	i = c.nr_cached;
	if (kva_core_drop_cache(&c) != i)
		abort();
	if (c.nr_free != NR || c.nr_published || kva_core_check(&c))
		abort();
	kva_core_fini(&c);
	return 0;
}
