// SPDX-License-Identifier: GPL-2.0
/*
 * kvsim - the lower tier below an arena (the kvarena+host and
 * kvarena+swap policies): host memory that keeps, instead of dropping,
 * the cached frames the arena reclaims, and holds the frames of
 * preempted sequences swapped out.
 *
 * The tier is inclusive: a frame promoted back into the arena stays
 * below too, so when the arena reclaims it again nothing is copied.
 * Cached frames below are dropped oldest first (their own LRU) when the
 * tier is full; swapped frames are pinned until their sequence is
 * admitted again, and a swap-out that would not fit beside the other
 * swapped sequences is refused (the sequence is recomputed instead).
 * Every copy, either way, adds its frame's bytes to @copy_bytes, which
 * the step loop turns into time (cost.c).
 *
 * A disk tier (struct tier.below, --disk-gib) lies below the host tier
 * the same way: the cached frames the host tier drops are demoted to it
 * (over the disk's link), and a lookup finds keys there as it does in
 * the host tier; a frame found on disk is read (the disk's link) and
 * copied up to the arena (the host tier's).  Swaps stay in host memory.
 *
 * A remote tier (struct tier.remote, kvarena+host+remote, --remote-gib)
 * is one tier every node's host tier shares: what kvarenactl remote does
 * over a Redis cluster.  Blocks reach it when the host tier takes them
 * (REMOTE_ON_DEMOTE: the agent below a GPU arena stores what is demoted
 * to host memory) or when they are published (REMOTE_ON_PUBLISH), off
 * the engines' path (@written counts them).  A lookup finds keys there
 * past the host tier and the disk; each is fetched into the host tier,
 * as the agent's fetch puts it into host memory, and copied up from
 * there: the network's bytes (@copy_bytes of the remote tier) and round
 * trips (@fetches), then the host link's.  Its own LRU drops the oldest
 * when it is full, as the agent's budget does.
 */
#include <errno.h>
#include <stdlib.h>

#include "kvsim.h"

/*
 * tier_init() - a tier of @bytes of host memory in frames of
 * @frame_bytes.  @keyed bounds the keys it could ever hold (the trace's
 * keyed prompt blocks, pool_reach()), so that its tables cost what the
 * trace does, however large the memory.  Returns 0 or -ENOMEM.
 */
int tier_init(struct tier *t, uint64_t bytes, uint64_t frame_bytes,
	      uint64_t keyed)
{
	uint64_t n;
	uint32_t i;

	t->cap = bytes / frame_bytes;
	t->frame_bytes = frame_bytes;
	n = t->cap < keyed ? t->cap : keyed;
	if (n >= KVSIM_NONE)
		n = KVSIM_NONE - 1;
	t->nr_entries = (uint32_t)n;
	t->key = calloc(n ? n : 1, sizeof(*t->key));
	t->free = calloc(n ? n : 1, sizeof(*t->free));
	if (!t->key || !t->free || lru_init(&t->lru, t->nr_entries) ||
	    keyidx_init(&t->idx, t->nr_entries, t->key))
		return -ENOMEM;
	for (i = 0; i < t->nr_entries; i++)
		t->free[i] = t->nr_entries - 1 - i;
	t->nr_free = t->nr_entries;
	return 0;
}

void tier_fini(struct tier *t)
{
	free(t->key);
	free(t->free);
	lru_fini(&t->lru);
	keyidx_fini(&t->idx);
	t->key = NULL;
	t->free = NULL;
}

/* Drop the oldest cached frame below, to the disk if there is one. */
static void drop_oldest(struct tier *t)
{
	uint32_t e = t->lru.head;

	if (t->below)
		tier_demote(t->below, t->key[e]);
	lru_unlink(&t->lru, e);
	keyidx_del(&t->idx, t->key[e]);
	t->free[t->nr_free++] = e;
	t->nr--;
	t->dropped++;
}

/* Room for what is cached below: the tier less the swapped frames. */
static uint64_t cache_room(const struct tier *t)
{
	uint64_t room = t->cap - t->swapped;

	return room < t->nr_entries ? room : t->nr_entries;
}

/*
 * Put @key in @t as its newest: true if it was not there and now is (a
 * full tier dropped its oldest first), false if it was there already or
 * the tier has no room for cached frames (all of it swapped).
 */
static bool tier_insert(struct tier *t, uint64_t key)
{
	uint32_t e = keyidx_get(&t->idx, key);

	if (e != KVSIM_NONE) {
		lru_unlink(&t->lru, e);
		lru_push(&t->lru, e);
		return false;
	}
	if (!cache_room(t))
		return false;
	while (t->nr >= cache_room(t))
		drop_oldest(t);
	e = t->free[--t->nr_free];
	t->key[e] = key;
	keyidx_put(&t->idx, key, e);
	lru_push(&t->lru, e);
	t->nr++;
	return true;
}

/*
 * tier_demote() - the arena reclaims its cached frame of @key: keep it
 * below.  A key already there is only made the newest (nothing to copy);
 * a full tier drops its oldest first; a tier with no room for cached
 * frames (all of it swapped) drops the frame as the arena alone would.
 * A frame the tier takes is stored into the remote tier too where that
 * is fed on demotion.
 */
void tier_demote(struct tier *t, uint64_t key)
{
	if (!tier_insert(t, key))
		return;
	t->demoted++;
	t->copy_bytes += t->frame_bytes;
	if (t->remote && t->store_on_demote)
		tier_store(t->remote, key);
}

/*
 * tier_store() - the remote tier @t is sent @key's block: it is its
 * newest (a SET of a key already there is sent all the same).
 */
void tier_store(struct tier *t, uint64_t key)
{
	tier_insert(t, key);
	t->written += t->frame_bytes;
}

static bool tier_has(const struct tier *t, uint64_t key)
{
	return t->nr && keyidx_get(&t->idx, key) != KVSIM_NONE;
}

/*
 * tier_level() - where @key is below: 1 the host tier, 2 the disk, 3 the
 * remote tier, 0 not.
 */
int tier_level(const struct tier *t, uint64_t key)
{
	if (tier_has(t, key))
		return 1;
	if (t->below && tier_has(t->below, key))
		return 2;
	return t->remote && tier_has(t->remote, key) ? 3 : 0;
}

/*
 * tier_touch() - a lookup found @key below and is about to copy it up:
 * make it the newest where it is, so that the demotions its allocation
 * causes cannot drop it first.  A key of the remote tier is fetched into
 * the host tier (tier_level() 1 from now on).
 */
void tier_touch(struct tier *t, uint64_t key)
{
	uint32_t e = keyidx_get(&t->idx, key);

	if (e != KVSIM_NONE) {
		lru_unlink(&t->lru, e);
		lru_push(&t->lru, e);
	} else if (t->below && tier_has(t->below, key)) {
		tier_touch(t->below, key);
	} else {
		tier_touch(t->remote, key);
		tier_insert(t, key);
	}
}

/*
 * tier_promote() - @n frames found below are copied up into the arena,
 * @disk of them read from the disk first, @remote of them fetched from
 * the remote tier first (in round trips of up to 64 keys, as the
 * agent's requests).
 */
void tier_promote(struct tier *t, uint32_t n, uint32_t disk,
		  uint32_t remote)
{
	t->promoted += n;
	t->copy_bytes += (uint64_t)n * t->frame_bytes;
	if (disk) {
		t->below->promoted += disk;
		t->below->copy_bytes += (uint64_t)disk * t->frame_bytes;
	}
	if (remote) {
		t->remote->promoted += remote;
		t->remote->copy_bytes += (uint64_t)remote * t->frame_bytes;
		t->remote->fetches += (remote + 63) / 64;
	}
}

/*
 * tier_swap_out() - pin @frames swapped out of the arena, dropping
 * cached frames below to make room.  Returns false, changing nothing,
 * when the tier cannot hold them beside the frames already swapped.
 */
bool tier_swap_out(struct tier *t, uint32_t frames)
{
	if (t->cap - t->swapped < frames)
		return false;
	t->swapped += frames;
	while (t->nr > cache_room(t))
		drop_oldest(t);
	t->copy_bytes += (uint64_t)frames * t->frame_bytes;
	return true;
}

/* tier_swap_in() - @frames swapped out earlier are copied back up. */
void tier_swap_in(struct tier *t, uint32_t frames)
{
	t->swapped -= frames;
	t->copy_bytes += (uint64_t)frames * t->frame_bytes;
}
