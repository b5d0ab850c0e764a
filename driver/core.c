// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * kvarena core allocator - see core.h for the words, the rules and the
 * locking.
 *
 * Frames live in one table and every link is a frame index.  A frame is
 * on exactly one of three lists: the free list (singly linked, LIFO), the
 * list of the client it is charged to (doubly linked, so that freeing a
 * handle and releasing a whole client cost what they touch, never the
 * arena), or the LRU of cached frames (doubly linked, oldest at the head).
 * The charged client's own hold is a flag on the frame; every other
 * holder has a hold record, linked both into the frame's and into the
 * client's record list.  Published frames are also chained into the key
 * index's buckets.
 */
#include "core.h"

/* Hold records made at init; more come through kva_core_holds_grow(). */
#define KVA_HOLDS_INIT	64u

static u32 unmet(const struct kva_core_client *cl)
{
	return cl->min > cl->charged ? cl->min - cl->charged : 0;
}

/* ---- the key index ------------------------------------------------------- */

static u64 load64(const u8 *p)
{
	u64 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * All 32 bytes of the key, folded with the arena's seed by multiply and
 * xor-shift rounds: keys that are hashes already spread evenly, and keys
 * made to collide need the seed, which never leaves the arena.
 */
static u32 key_hash(const struct kva_core *c, const u8 *key,
		    const struct kva_core_domain *dom)
{
	u64 h = c->seed ^ (dom ? dom->id * 0xff51afd7ed558ccdull : 0);
	int i;

	for (i = 0; i < KVA_KEY_LEN; i += 8) {
		h ^= load64(key + i);
		h *= 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (u32)h & c->hash_mask;
}

static bool key_is_zero(const u8 *key)
{
	int i;

	for (i = 0; i < KVA_KEY_LEN; i++)
		if (key[i])
			return false;
	return true;
}

/* The frame published under @key in domain @dom, KVA_NIL if none. */
static u32 index_find(const struct kva_core *c, const u8 *key,
		      const struct kva_core_domain *dom)
{
	u32 idx;

	for (idx = c->buckets[key_hash(c, key, dom)]; idx != KVA_NIL;
	     idx = c->frames[idx].hnext)
		if (c->frames[idx].dom == dom &&
		    !memcmp(c->keys[idx], key, KVA_KEY_LEN))
			return idx;
	return KVA_NIL;
}

/* Publish @idx under @key in its domain. */
static void index_add(struct kva_core *c, u32 idx, const u8 *key)
{
	struct kva_frame *f = &c->frames[idx];
	u32 h = key_hash(c, key, f->dom);

	memcpy(c->keys[idx], key, KVA_KEY_LEN);
	f->hnext = c->buckets[h];
	c->buckets[h] = idx;
	f->flags |= KVA_FRAME_PUBLISHED;
	c->nr_published++;
	if (f->dom)
		f->dom->published++;
}

static void index_del(struct kva_core *c, u32 idx)
{
	struct kva_frame *f = &c->frames[idx];
	u32 *pp = &c->buckets[key_hash(c, c->keys[idx], f->dom)];

	while (*pp != idx)
		pp = &c->frames[*pp].hnext;
	*pp = f->hnext;
	f->hnext = KVA_NIL;
	f->flags &= ~KVA_FRAME_PUBLISHED;
	memset(c->keys[idx], 0, KVA_KEY_LEN);
	c->nr_published--;
	if (f->dom)
		f->dom->published--;
}

/* ---- domains ----------------------------------------------------------------- */

static void dom_get(struct kva_core_domain *d)
{
	if (d)
		d->refs++;
}

static void dom_put(struct kva_core *c, struct kva_core_domain *d)
{
	if (d && !--d->refs && c->dom_release)
		c->dom_release(c, d);
}

/* Push free frame @idx on its domain's dirty list. */
static void dirty_push(struct kva_core *c, u32 idx)
{
	struct kva_frame *f = &c->frames[idx];
	struct kva_core_domain *d = f->dom;

	f->next = d->dirty_head;
	d->dirty_head = idx;
	if (!d->nr_dirty++) {
		d->dprev = NULL;
		d->dnext = c->dirty;
		if (c->dirty)
			c->dirty->dprev = d;
		c->dirty = d;
	}
	c->nr_dirty++;
}

/*
 * Unlink @idx from @d's dirty list, @prev its predecessor there (KVA_NIL
 * for the head); the frame keeps its @dom.
 */
static void dirty_unlink(struct kva_core *c, struct kva_core_domain *d,
			 u32 prev, u32 idx)
{
	if (prev == KVA_NIL)
		d->dirty_head = c->frames[idx].next;
	else
		c->frames[prev].next = c->frames[idx].next;
	c->frames[idx].next = KVA_NIL;
	if (!--d->nr_dirty) {
		if (d->dprev)
			d->dprev->dnext = d->dnext;
		else
			c->dirty = d->dnext;
		if (d->dnext)
			d->dnext->dprev = d->dprev;
		d->dnext = NULL;
		d->dprev = NULL;
	}
	c->nr_dirty--;
}

/* Pop the top of @d's dirty list; the frame keeps its @dom. */
static u32 dirty_pop(struct kva_core *c, struct kva_core_domain *d)
{
	u32 idx = d->dirty_head;

	dirty_unlink(c, d, KVA_NIL, idx);
	return idx;
}

/* ---- init ------------------------------------------------------------------ */

/* Buckets of the key index: one per frame, rounded up to a power of 2. */
static u32 nr_buckets(u32 nr_frames)
{
	u32 nb = 1;

	while (nb < nr_frames && nb < (1u << 31))
		nb <<= 1;
	return nb;
}

/**
 * kva_core_table_bytes() - what kva_core_init() allocates for @nr_frames.
 * @nr_frames:	the capacity asked for, not trusted.
 *
 * The frame table, the key slots and the key index (the hold records
 * come later, as shares need them), so that a caller can refuse a size
 * the machine cannot spare before anything is allocated.
 *
 * Return: bytes.
 */
u64 kva_core_table_bytes(u32 nr_frames)
{
	return (u64)nr_frames * (sizeof(struct kva_frame) + KVA_KEY_LEN) +
	       (u64)nr_buckets(nr_frames) * sizeof(u32);
}

/**
 * kva_core_init_max() - set up @c with @nr_frames free frames in a table
 * of @max_frames, and an empty prefix cache.
 * @c:		the core to set up.
 * @nr_frames:	its capacity, 1..@max_frames.
 * @max_frames:	the table: what kva_core_grow() may bring the capacity up
 *		to.  Frames @nr_frames and above start absent, as if taken
 *		out by a shrink.
 *
 * Makes everything the core uses later but the hold records beyond the
 * first few: the frame table, a key slot per frame and a bucket per frame
 * (rounded up to a power of two) for the key index.
 *
 * Return: 0, -EINVAL for a zero or too large @nr_frames or @max_frames,
 * -ENOMEM.
 */
int kva_core_init_max(struct kva_core *c, u32 nr_frames, u32 max_frames)
{
	u32 i, nb;

	*c = (struct kva_core){ 0 };
	if (!nr_frames || nr_frames > max_frames || max_frames == KVA_NIL)
		return -EINVAL;
	nb = nr_buckets(max_frames);
	c->frames = kva_shim_calloc(max_frames, sizeof(*c->frames));
	c->keys = kva_shim_calloc(max_frames, sizeof(*c->keys));
	c->buckets = kva_shim_calloc(nb, sizeof(*c->buckets));
	if (!c->frames || !c->keys || !c->buckets)
		goto err_free;
	c->nr_holds = max_frames < KVA_HOLDS_INIT ? max_frames : KVA_HOLDS_INIT;
	c->holds = kva_core_holds_alloc(c->nr_holds);
	if (!c->holds)
		goto err_free;
	for (i = 0; i < c->nr_holds; i++)
		c->holds[i].fnext = i + 1 < c->nr_holds ? i + 1 : KVA_NIL;
	for (i = 0; i < nb; i++)
		c->buckets[i] = KVA_NIL;
	for (i = 0; i < max_frames; i++) {
		struct kva_frame *f = &c->frames[i];
		/* Free frames and absent ones are each a list in index order. */
		u32 last = i < nr_frames ? nr_frames : max_frames;

		f->dom = NULL;
		f->dnext = KVA_NIL;
		f->dprev = KVA_NIL;
		f->gen = 1;
		f->next = i + 1 < last ? i + 1 : KVA_NIL;
		f->prev = i > nr_frames ? i - 1 : KVA_NIL;
		f->holds = KVA_NIL;
		f->hnext = KVA_NIL;
		if (i >= nr_frames)
			f->flags = KVA_FRAME_ABSENT;
	}
	c->hash_mask = nb - 1;
	c->seed = kva_shim_random_u64();
	c->nr_frames = max_frames;
	c->nr_free = nr_frames;
	c->free_head = 0;
	c->lru_head = KVA_NIL;
	c->lru_tail = KVA_NIL;
	c->holds_free = 0;
	c->nr_absent = max_frames - nr_frames;
	c->absent_head = c->nr_absent ? nr_frames : KVA_NIL;
	return 0;

err_free:
	kva_shim_free(c->frames);
	kva_shim_free(c->keys);
	kva_shim_free(c->buckets);
	*c = (struct kva_core){ 0 };
	return -ENOMEM;
}

/**
 * kva_core_init() - set up @c with @nr_frames free frames and an empty
 * prefix cache, in a table of that size.
 * @c:		the core to set up.
 * @nr_frames:	its capacity.
 *
 * Return: as kva_core_init_max().
 */
int kva_core_init(struct kva_core *c, u32 nr_frames)
{
	return kva_core_init_max(c, nr_frames, nr_frames);
}

/**
 * kva_core_fini() - free everything; no client may be attached.
 * @c:	the core.
 */
void kva_core_fini(struct kva_core *c)
{
	KVA_WARN_ON(c->nr_clients);
	kva_shim_free(c->frames);
	kva_shim_free(c->keys);
	kva_shim_free(c->buckets);
	kva_shim_free(c->holds);
	c->frames = NULL;
	c->keys = NULL;
	c->buckets = NULL;
	c->holds = NULL;
}

/* ---- hold records ------------------------------------------------------------ */

/**
 * kva_core_holds_need() - how many hold records to make before a LOOKUP.
 * @c:	the core.
 * @n:	shared holds the LOOKUP may take (its chain's length).
 *
 * Return: 0 if @n unused records are there, else the number of records
 * to pass to kva_core_holds_alloc() and kva_core_holds_grow() (at least
 * twice the present number, so that growing is rare).
 */
u32 kva_core_holds_need(const struct kva_core *c, u32 n)
{
	u64 want;

	if (n <= c->nr_holds - c->holds_used)
		return 0;
	want = (u64)c->holds_used + n;
	if (want < 2ull * c->nr_holds)
		want = 2ull * c->nr_holds;
	return want < KVA_NIL ? (u32)want : KVA_NIL - 1;
}

/**
 * kva_core_holds_alloc() - memory for @nr hold records (may sleep; never
 * call it with the arena's lock held).
 * @nr:	records.
 *
 * Return: the records, or NULL.
 */
struct kva_hold *kva_core_holds_alloc(u32 nr)
{
	return kva_shim_calloc(nr, sizeof(struct kva_hold));
}

/**
 * kva_core_holds_free() - free what kva_core_holds_alloc() made or
 * kva_core_holds_grow() returned.
 * @recs:	the records; NULL is ignored.
 */
void kva_core_holds_free(struct kva_hold *recs)
{
	kva_shim_free(recs);
}

/**
 * kva_core_holds_grow() - hand the core a larger array of hold records.
 * @c:		the core.
 * @recs:	@nr records from kva_core_holds_alloc().
 * @nr:		how many.
 *
 * The core copies its records into @recs and uses it from now on (links
 * are indices, so nothing else moves).  If the core has @nr records or
 * more already (another caller grew it meanwhile), @recs is not used.
 *
 * Return: the array the caller must now free with kva_core_holds_free():
 * the old one, or @recs itself.
 */
struct kva_hold *kva_core_holds_grow(struct kva_core *c,
				     struct kva_hold *recs, u32 nr)
{
	struct kva_hold *old = c->holds;
	u32 i;

	if (nr <= c->nr_holds || nr == KVA_NIL)
		return recs;
	memcpy(recs, old, c->nr_holds * sizeof(*recs));
	for (i = c->nr_holds; i < nr; i++) {
		recs[i].client = NULL;
		recs[i].fnext = i + 1 < nr ? i + 1 : c->holds_free;
	}
	c->holds_free = c->nr_holds;
	c->holds = recs;
	c->nr_holds = nr;
	return old;
}

static u32 hold_find(const struct kva_core *c,
		     const struct kva_core_client *cl, u32 idx)
{
	u32 r;

	for (r = c->frames[idx].holds; r != KVA_NIL; r = c->holds[r].fnext)
		if (c->holds[r].client == cl)
			return r;
	return KVA_NIL;
}

static bool holds_frame(const struct kva_core *c,
			const struct kva_core_client *cl, u32 idx)
{
	const struct kva_frame *f = &c->frames[idx];

	if (f->charge == cl && (f->flags & KVA_FRAME_CHARGE_HELD))
		return true;
	return hold_find(c, cl, idx) != KVA_NIL;
}

static void hold_link(struct kva_core *c, struct kva_core_client *cl, u32 idx)
{
	struct kva_frame *f = &c->frames[idx];
	u32 r = c->holds_free;
	struct kva_hold *h = &c->holds[r];

	c->holds_free = h->fnext;
	c->holds_used++;
	h->client = cl;
	h->frame = idx;
	h->fprev = KVA_NIL;
	h->fnext = f->holds;
	if (f->holds != KVA_NIL)
		c->holds[f->holds].fprev = r;
	f->holds = r;
	h->cprev = KVA_NIL;
	h->cnext = cl->holds;
	if (cl->holds != KVA_NIL)
		c->holds[cl->holds].cprev = r;
	cl->holds = r;
}

static void hold_unlink(struct kva_core *c, u32 r)
{
	struct kva_hold *h = &c->holds[r];
	struct kva_frame *f = &c->frames[h->frame];
	struct kva_core_client *cl = h->client;

	if (h->fprev != KVA_NIL)
		c->holds[h->fprev].fnext = h->fnext;
	else
		f->holds = h->fnext;
	if (h->fnext != KVA_NIL)
		c->holds[h->fnext].fprev = h->fprev;
	if (h->cprev != KVA_NIL)
		c->holds[h->cprev].cnext = h->cnext;
	else
		cl->holds = h->cnext;
	if (h->cnext != KVA_NIL)
		c->holds[h->cnext].cprev = h->cprev;
	h->client = NULL;
	h->fnext = c->holds_free;
	c->holds_free = r;
	c->holds_used--;
}

/* ---- frame states ---------------------------------------------------------------- */

/* Some holder of a frame with refs > 0. */
static struct kva_core_client *first_holder(const struct kva_core *c,
					    const struct kva_frame *f)
{
	if (f->flags & KVA_FRAME_CHARGE_HELD)
		return f->charge;
	return c->holds[f->holds].client;
}

/* @cl is about to hold frame @idx (before its hold is linked). */
static void refs_get(struct kva_core *c, struct kva_core_client *cl, u32 idx)
{
	struct kva_frame *f = &c->frames[idx];

	if (f->refs == 1) {
		first_holder(c, f)->shared++;
		cl->shared++;
	} else if (f->refs > 1) {
		cl->shared++;
	}
	f->refs++;
	if (++cl->held > cl->peak)
		cl->peak = cl->held;
}

/* @cl stopped holding frame @idx (its hold already unlinked). */
static void refs_put(struct kva_core *c, struct kva_core_client *cl, u32 idx)
{
	struct kva_frame *f = &c->frames[idx];

	f->refs--;
	cl->held--;
	if (f->refs == 1) {
		cl->shared--;
		first_holder(c, f)->shared--;
	} else if (f->refs > 1) {
		cl->shared--;
	}
}

static void charge_add(struct kva_core *c, struct kva_core_client *cl,
		       u32 idx)
{
	struct kva_frame *f = &c->frames[idx];

	if (cl->charged < cl->min)
		c->unmet_min--;
	cl->charged++;
	f->charge = cl;
	f->prev = KVA_NIL;
	f->next = cl->head;
	if (cl->head != KVA_NIL)
		c->frames[cl->head].prev = idx;
	cl->head = idx;
}

static void charge_del(struct kva_core *c, u32 idx)
{
	struct kva_frame *f = &c->frames[idx];
	struct kva_core_client *cl = f->charge;

	if (f->prev != KVA_NIL)
		c->frames[f->prev].next = f->next;
	else
		cl->head = f->next;
	if (f->next != KVA_NIL)
		c->frames[f->next].prev = f->prev;
	cl->charged--;
	if (cl->charged < cl->min)
		c->unmet_min++;
	f->charge = NULL;
	f->next = KVA_NIL;
	f->prev = KVA_NIL;
}

/* Take the top of the clean list for @dom's client. */
static u32 free_pop(struct kva_core *c, struct kva_core_domain *dom)
{
	u32 idx = c->free_head;

	c->free_head = c->frames[idx].next;
	c->nr_free--;
	c->frames_allocated++;
	c->frames[idx].dom = dom;
	dom_get(dom);
	return idx;
}

/*
 * Whether a shrink may take one more free or cached frame now: one is
 * left beyond what the unmet minimums count on.
 */
static bool may_retire(const struct kva_core *c)
{
	return c->shrink_pending && c->nr_free + c->nr_cached > c->unmet_min;
}

/* Take frame @idx, which is on no list and not counted free, out. */
static void retire(struct kva_core *c, u32 idx)
{
	struct kva_frame *f = &c->frames[idx];

	dom_put(c, f->dom);
	f->dom = NULL;
	f->flags = KVA_FRAME_ABSENT;
	f->prev = KVA_NIL;
	f->next = c->absent_head;
	if (c->absent_head != KVA_NIL)
		c->frames[c->absent_head].prev = idx;
	c->absent_head = idx;
	c->nr_absent++;
	c->shrink_pending--;
	c->frames_retired++;
	if (c->retired)
		c->retired(c, idx);
}

/*
 * Frame @idx is free again: a new generation, and out of the arena if a
 * shrink waits for it, else onto its domain's dirty list if its data
 * must not reach another domain, else the clean list.
 */
static void free_push(struct kva_core *c, u32 idx)
{
	struct kva_frame *f = &c->frames[idx];

	if (f->tag) {
		/* The end of a tagged tenure, counted once for the owner. */
		c->tag_ended[f->tag]++;
		c->tags_ended++;
		f->tag = 0;
	}
	f->flags = 0;
	f->prev = KVA_NIL;
	/* A handle names one tenure of a frame: the next one gets a new gen. */
	if (++f->gen == 0)
		f->gen = 1;
	c->frames_freed++;
	/* may_retire() with the frame counted free, as it would be. */
	if (c->shrink_pending && c->nr_free + c->nr_cached >= c->unmet_min) {
		retire(c, idx);
		return;
	}
	c->nr_free++;
	if (c->clear != KVA_CLEAR_NONE && f->dom) {
		dirty_push(c, idx);
		return;
	}
	dom_put(c, f->dom);
	f->dom = NULL;
	f->next = c->free_head;
	c->free_head = idx;
}

static u32 take_out(struct kva_core *c);

static void lru_add(struct kva_core *c, u32 idx)
{
	struct kva_frame *f = &c->frames[idx];
	struct kva_core_domain *d = f->dom;

	f->flags |= KVA_FRAME_CACHED;
	f->next = KVA_NIL;
	f->prev = c->lru_tail;
	if (c->lru_tail != KVA_NIL)
		c->frames[c->lru_tail].next = idx;
	else
		c->lru_head = idx;
	c->lru_tail = idx;
	c->nr_cached++;
	if (!d)
		return;
	f->dnext = KVA_NIL;
	f->dprev = d->lru_tail;
	if (d->lru_tail != KVA_NIL)
		c->frames[d->lru_tail].dnext = idx;
	else
		d->lru_head = idx;
	d->lru_tail = idx;
	d->cached++;
}

static void lru_del(struct kva_core *c, u32 idx)
{
	struct kva_frame *f = &c->frames[idx];
	struct kva_core_domain *d = f->dom;

	if (f->prev != KVA_NIL)
		c->frames[f->prev].next = f->next;
	else
		c->lru_head = f->next;
	if (f->next != KVA_NIL)
		c->frames[f->next].prev = f->prev;
	else
		c->lru_tail = f->prev;
	f->flags &= ~KVA_FRAME_CACHED;
	f->next = KVA_NIL;
	f->prev = KVA_NIL;
	c->nr_cached--;
	if (!d)
		return;
	if (f->dprev != KVA_NIL)
		c->frames[f->dprev].dnext = f->dnext;
	else
		d->lru_head = f->dnext;
	if (f->dnext != KVA_NIL)
		c->frames[f->dnext].dprev = f->dprev;
	else
		d->lru_tail = f->dprev;
	f->dnext = KVA_NIL;
	f->dprev = KVA_NIL;
	d->cached--;
}

/* Reclaim cached frame @idx; @count: an allocation's, told and counted. */
static void reclaim_frame(struct kva_core *c, u32 idx, bool count)
{
	lru_del(c, idx);
	if (count && c->events)
		c->events->removed(c, idx);
	if (count && c->frames[idx].dom)
		c->frames[idx].dom->reclaims++;
	index_del(c, idx);
	free_push(c, idx);
}

/**
 * kva_core_trim_domain() - reclaim @d's oldest cached frames while it has
 * more than its cap (struct kva_core.dom_cached_max).
 * @c:	the core.
 * @d:	the domain.
 *
 * Return: the number reclaimed.
 */
u32 kva_core_trim_domain(struct kva_core *c, struct kva_core_domain *d)
{
	u32 n = 0;

	while (c->dom_cached_max && d && d->cached > c->dom_cached_max) {
		reclaim_frame(c, d->lru_head, true);
		c->cache_reclaims++;
		n++;
	}
	return n;
}

/*
 * The last hold on @idx went: the frame is cached if published - its
 * domain's oldest going, past the domain's cap - else free.
 */
static void frame_unheld(struct kva_core *c, u32 idx)
{
	charge_del(c, idx);
	if (!(c->frames[idx].flags & KVA_FRAME_PUBLISHED)) {
		free_push(c, idx);
		return;
	}
	lru_add(c, idx);
	if (may_retire(c)) {
		/* A shrink waits: the oldest cached frame goes to it. */
		reclaim_frame(c, c->lru_head, true);
		c->cache_reclaims++;
		return;
	}
	kva_core_trim_domain(c, c->frames[idx].dom);
}

/* @cl lets go of frame @idx, which it holds. */
static void hold_drop(struct kva_core *c, struct kva_core_client *cl, u32 idx)
{
	struct kva_frame *f = &c->frames[idx];

	if (f->charge == cl && (f->flags & KVA_FRAME_CHARGE_HELD))
		f->flags &= ~KVA_FRAME_CHARGE_HELD;
	else
		hold_unlink(c, hold_find(c, cl, idx));
	refs_put(c, cl, idx);
	if (!f->refs)
		frame_unheld(c, idx);
}

/*
 * @cl takes a hold on published frame @idx: from the cache (charged to
 * @cl), or shared with its holders (a record, unless @cl is the charged
 * client coming back).  A frame @cl holds already is left as it is.
 * Returns whether a hold was taken.
 */
static bool hold_take(struct kva_core *c, struct kva_core_client *cl, u32 idx)
{
	struct kva_frame *f = &c->frames[idx];

	if (f->flags & KVA_FRAME_CACHED) {
		lru_del(c, idx);
		refs_get(c, cl, idx);
		charge_add(c, cl, idx);
		f->flags |= KVA_FRAME_CHARGE_HELD;
		return true;
	}
	if (holds_frame(c, cl, idx))
		return false;
	refs_get(c, cl, idx);
	if (f->charge == cl)
		f->flags |= KVA_FRAME_CHARGE_HELD;
	else
		hold_link(c, cl, idx);
	return true;
}

static void update_peak(struct kva_core *c)
{
	if (kva_core_held(c) > c->peak_held)
		c->peak_held = kva_core_held(c);
}

/* ---- clients ------------------------------------------------------------------------- */

static int check_limits(const struct kva_core *c, u32 min, u32 *max)
{
	if (!*max)
		*max = c->nr_frames;
	if (*max > c->nr_frames || min > *max)
		return -EINVAL;
	return 0;
}

/**
 * kva_core_attach() - add a client with a guarantee of @min frames and a
 * limit of @max (0: the arena's size).
 * @c:		the core.
 * @cl:		the client, owned by the caller; initialised here.
 * @min:	guaranteed frames.
 * @max:	limit.
 *
 * Return: 0; -EINVAL if @min > @max or @max exceeds the arena; -ENOSPC if
 * the free and cached frames not already reserved for others cannot
 * cover @min.
 */
int kva_core_attach(struct kva_core *c, struct kva_core_client *cl,
		    u32 min, u32 max)
{
	return kva_core_attach_domain(c, cl, min, max, NULL);
}

/**
 * kva_core_attach_domain() - kva_core_attach() into cache domain @dom.
 * @c:		the core.
 * @cl:		the client.
 * @min:	as for kva_core_attach().
 * @max:	as for kva_core_attach().
 * @dom:	its domain, which it holds a reference to until detached;
 *		NULL for the domain of everyone without one.
 *
 * Return: as kva_core_attach(); on error @dom is not referenced.
 */
int kva_core_attach_domain(struct kva_core *c, struct kva_core_client *cl,
			   u32 min, u32 max, struct kva_core_domain *dom)
{
	int ret = check_limits(c, min, &max);

	if (ret)
		return ret;
	if (min > kva_core_headroom(c))
		return -ENOSPC;
	*cl = (struct kva_core_client){ .min = min, .max = max,
					.head = KVA_NIL, .holds = KVA_NIL,
					.dom = dom };
	dom_get(dom);
	cl->next = c->clients;
	if (c->clients)
		c->clients->prev = cl;
	c->clients = cl;
	c->unmet_min += min;
	c->nr_clients++;
	return 0;
}

/**
 * kva_core_detach() - remove a client: drop every hold it has, and move
 * its charge for frames others still hold to one of them.  Frames nobody
 * holds any more become free, or cached if published.
 * @c:	the core.
 * @cl:	the client.
 *
 * Return: the number of holds dropped (the client's held).
 */
u32 kva_core_detach(struct kva_core *c, struct kva_core_client *cl)
{
	u32 n = cl->held, steps = 0;

	/* Its guarantee goes first, so that no charge below counts for it. */
	c->unmet_min -= unmet(cl);
	cl->min = 0;
	while (cl->holds != KVA_NIL) {
		u32 idx = c->holds[cl->holds].frame;

		hold_unlink(c, cl->holds);
		refs_put(c, cl, idx);
		if (!c->frames[idx].refs)
			frame_unheld(c, idx);
		/* Long walks (a client of millions of frames) let others run. */
		if (!(++steps % 4096))
			kva_shim_cond_resched();
	}
	while (cl->head != KVA_NIL) {
		u32 idx = cl->head;
		struct kva_frame *f = &c->frames[idx];

		/* The owner takes lent frames back first. */
		if (KVA_WARN_ON(f->flags & KVA_FRAME_LENT))
			f->flags &= ~KVA_FRAME_LENT;
		if (f->flags & KVA_FRAME_CHARGE_HELD) {
			f->flags &= ~KVA_FRAME_CHARGE_HELD;
			refs_put(c, cl, idx);
		}
		if (f->refs) {
			/* A remaining holder's record becomes the charge. */
			u32 r = f->holds;
			struct kva_core_client *to = c->holds[r].client;

			charge_del(c, idx);
			hold_unlink(c, r);
			charge_add(c, to, idx);
			f->flags |= KVA_FRAME_CHARGE_HELD;
		} else {
			frame_unheld(c, idx);
		}
		if (!(++steps % 4096))
			kva_shim_cond_resched();
	}
	KVA_WARN_ON(cl->held || cl->charged || cl->shared);
	if (cl->prev)
		cl->prev->next = cl->next;
	else
		c->clients = cl->next;
	if (cl->next)
		cl->next->prev = cl->prev;
	cl->next = NULL;
	cl->prev = NULL;
	c->nr_clients--;
	dom_put(c, cl->dom);
	cl->dom = NULL;
	/* Its minimum no longer keeps free frames from a shrink. */
	if (c->shrink_pending)
		take_out(c);
	return n;
}

/**
 * kva_core_set_limits() - change a client's guarantee and limit.
 * @c:		the core.
 * @cl:		the client.
 * @min:	new guarantee.
 * @max:	new limit, 0 for the arena's size.  Lowering it below what the
 *		client holds takes nothing away; it only stops further
 *		allocations and lookups.
 *
 * Return: 0, -EINVAL as for attach, -ENOSPC if the new @min cannot be
 * covered now.  On error nothing changes.
 */
int kva_core_set_limits(struct kva_core *c, struct kva_core_client *cl,
			u32 min, u32 max)
{
	u32 old_unmet = unmet(cl), new_unmet;
	int ret = check_limits(c, min, &max);

	if (ret)
		return ret;
	new_unmet = min > cl->charged ? min - cl->charged : 0;
	/* Only a larger reservation needs room; a shrink's is none. */
	if (new_unmet > old_unmet &&
	    new_unmet - old_unmet > kva_core_headroom(c))
		return -ENOSPC;
	c->unmet_min = c->unmet_min - old_unmet + new_unmet;
	cl->min = min;
	cl->max = max;
	/* A lower minimum may free frames a shrink waits for. */
	if (c->shrink_pending)
		take_out(c);
	return 0;
}

/* Free and cached frames @cl may take, not counting its max. */
static u32 pool_for(const struct kva_core *c, const struct kva_core_client *cl)
{
	/*
	 * Our own unmet minimum is ours to take; beyond every minimum, what
	 * a shrink waits for is nobody's.
	 */
	u32 beyond = c->nr_free + c->nr_cached - c->unmet_min;

	beyond = beyond > c->shrink_pending ? beyond - c->shrink_pending : 0;
	return unmet(cl) + beyond;
}

/**
 * kva_core_available() - frames a client could allocate now.
 * @c:	the core.
 * @cl:	the client.
 *
 * Return: the free and cached frames less the other clients' unmet
 * minimums, and no more than the client's room below its max.
 */
u32 kva_core_available(const struct kva_core *c,
		       const struct kva_core_client *cl)
{
	u32 avail = pool_for(c, cl);
	u32 room = cl->max > cl->held ? cl->max - cl->held : 0;

	return avail < room ? avail : room;
}

/**
 * kva_core_usable() - frames a client could allocate now without waiting
 * for any to be cleared.
 * @c:	the core.
 * @cl:	the client.
 *
 * What kva_core_available() says, less every cached frame and the dirty
 * frames of other domains (and, when the core clears always, its own
 * dirty ones): what poll() may promise where nobody but a scrubber can
 * clear.  Cached frames are left out, the client's own too, since an
 * ALLOC reclaims the oldest of any domain first; so this may promise less
 * than an ALLOC could get, never more.
 *
 * Return: the number.
 */
u32 kva_core_usable(const struct kva_core *c,
		    const struct kva_core_client *cl)
{
	u32 avail = kva_core_available(c, cl), ok;

	if (c->clear == KVA_CLEAR_NONE)
		return avail;
	ok = kva_core_clean(c);
	if (c->clear == KVA_CLEAR_DOMAIN && cl->dom)
		ok += cl->dom->nr_dirty;
	return avail < ok ? avail : ok;
}

/* ---- frames ------------------------------------------------------------------------ */

/*
 * Reclaim up to @n cached frames, oldest first; with the owner's ranks
 * (for an allocation), the oldest of rank 0 first, then of rank 1 and so
 * on, each pass looking at the KVA_RECLAIM_SCAN oldest frames at most.
 */
static u32 reclaim(struct kva_core *c, u32 n, bool count)
{
	u32 done = 0, rank, idx, next, seen;

	if (count && c->reclaim_rank) {
		c->reclaim_seq++;
		for (rank = 0; rank + 1 < KVA_RECLAIM_RANKS && done < n;
		     rank++) {
			for (idx = c->lru_head, seen = 0;
			     idx != KVA_NIL && done < n &&
			     seen < KVA_RECLAIM_SCAN; idx = next, seen++) {
				next = c->frames[idx].next;
				if (c->reclaim_rank(c, idx, c->reclaim_seq) >
				    rank)
					continue;
				reclaim_frame(c, idx, count);
				done++;
			}
		}
	}
	while (done < n && c->lru_head != KVA_NIL) {
		reclaim_frame(c, c->lru_head, count);
		done++;
	}
	if (count)
		c->cache_reclaims += done;
	return done;
}

/**
 * kva_core_reclaim() - free up to @n cached frames, oldest first.
 * @c:	the core.
 * @n:	how many.
 *
 * Allocations call it by themselves; it is here for callers that want
 * frames free ahead of need.  Held frames are never touched.
 *
 * Return: the number reclaimed.
 */
u32 kva_core_reclaim(struct kva_core *c, u32 n)
{
	return reclaim(c, n, true);
}

/**
 * kva_core_drop_cache() - free every cached frame (the arena is going
 * away); not counted as reclaims.
 * @c:	the core.
 *
 * Return: the number freed.
 */
u32 kva_core_drop_cache(struct kva_core *c)
{
	return reclaim(c, c->nr_cached, false);
}

/**
 * kva_core_tag() - mark the tenures of frames a client just took.
 * @c:		the core.
 * @handles:	handles kva_core_alloc() gave (or another command that took
 *		frames off the free list).
 * @n:		how many.
 * @tag:	1 to @c->nr_tags - 1: the owner's name for whatever it
 *		accounts these tenures to (the dmem cgroup's pool), counted
 *		in @c->tag_ended when each ends.
 */
void kva_core_tag(struct kva_core *c, const u64 *handles, u32 n, u32 tag)
{
	u32 i;

	if (KVA_WARN_ON(!tag || tag >= c->nr_tags))
		return;
	for (i = 0; i < n; i++)
		c->frames[KVA_HANDLE_IDX(handles[i])].tag = tag;
}

/**
 * kva_core_alloc() - take frames for a client, writing their handles.
 * @c:		the core.
 * @cl:		the client.
 * @handles:	@n entries: the new handles.
 * @n:		frames wanted.
 * @partial:	take as many as available (at least one) instead of all @n.
 *
 * Cached frames are reclaimed, oldest first, for what the free list
 * cannot give.  With clearing on (struct kva_core.clear), the frames come
 * from the client's domain's dirty list first, then from the clean list.
 *
 * Return: the number of frames taken (@n unless @partial), or -ENOSPC
 * (nothing taken), -EINVAL for @n == 0, -EAGAIN when enough frames are
 * free but some of them must be cleared first (nothing taken; see
 * kva_core_take_dirty()).
 */
int kva_core_alloc(struct kva_core *c, struct kva_core_client *cl,
		   u64 *handles, u32 n, bool partial)
{
	struct kva_core_domain *own = NULL;
	u32 avail, usable, i;

	if (!n)
		return -EINVAL;
	avail = kva_core_available(c, cl);
	if (n > avail) {
		if (!partial || !avail) {
			c->alloc_calls++;
			cl->alloc_calls++;
			c->alloc_failures++;
			cl->alloc_failures++;
			return -ENOSPC;
		}
		n = avail;
	}
	/* A frame reclaimed may go to a shrink: it takes its own share. */
	while (n > c->nr_free && c->lru_head != KVA_NIL)
		reclaim(c, n - c->nr_free, true);
	/* Frames it may take as they are: clean ones, and its domain's. */
	if (c->clear == KVA_CLEAR_DOMAIN && cl->dom)
		own = cl->dom;
	usable = kva_core_clean(c) + (own ? own->nr_dirty : 0);
	if (n > usable)
		return -EAGAIN;
	c->alloc_calls++;
	cl->alloc_calls++;

	for (i = 0; i < n; i++) {
		struct kva_frame *f;
		u32 idx;

		if (own && own->nr_dirty) {
			/* Its own domain's data: taken as it is, warm. */
			idx = dirty_pop(c, own);
			c->nr_free--;
			c->frames_allocated++;
		} else {
			idx = free_pop(c, cl->dom);
		}
		f = &c->frames[idx];
		refs_get(c, cl, idx);
		charge_add(c, cl, idx);
		f->flags = KVA_FRAME_CHARGE_HELD;
		handles[i] = KVA_HANDLE(f->gen, idx);
	}
	update_peak(c);
	return n;
}

/*
 * Take up to @n dirty frames, not of @skip, to be cleared (writing their
 * indices to @idx unless it is NULL): those may_clear() allows, or with
 * @all every one.
 */
static u32 dirty_take(struct kva_core *c, struct kva_core_domain *skip,
		      u32 *idx, u32 n, bool all)
{
	struct kva_core_domain *d = c->dirty;
	u32 got = 0;

	while (got < n && d) {
		struct kva_core_domain *next = d->dnext;
		u32 k = 0, prev = KVA_NIL, i;

		for (i = d == skip ? KVA_NIL : d->dirty_head;
		     i != KVA_NIL && got < n;) {
			u32 nx = c->frames[i].next;

			/* One not to be cleared yet stays where it is. */
			if (!all && c->may_clear && !c->may_clear(c, i)) {
				prev = i;
				i = nx;
				continue;
			}
			dirty_unlink(c, d, prev, i);
			c->frames[i].flags = KVA_FRAME_CLEANING;
			c->frames[i].dom = NULL;
			c->nr_cleaning++;
			if (idx)
				idx[got] = i;
			got++;
			k++;
			i = nx;
		}
		/* The last of these may hand @d back: @next was read before. */
		while (k--)
			dom_put(c, d);
		d = next;
	}
	return got;
}

/**
 * kva_core_take_dirty() - take dirty free frames to clear them.
 * @c:		the core.
 * @cl:		the client that needs clean frames (its own domain's frames
 *		are left alone unless the core clears always), or NULL to
 *		take any domain's.
 * @idx:	room for @n frame indices; the frames taken are written.
 * @n:		how many at most.
 *
 * The frames leave the dirty lists but stay counted free (nr_cleaning)
 * and belong to no domain from now on: whoever took them must clear them
 * and give them back with kva_core_put_clean().
 *
 * Return: the number taken.
 */
u32 kva_core_take_dirty(struct kva_core *c, const struct kva_core_client *cl,
			u32 *idx, u32 n)
{
	struct kva_core_domain *skip = NULL;

	if (cl && c->clear == KVA_CLEAR_DOMAIN)
		skip = cl->dom;
	return dirty_take(c, skip, idx, n, false);
}

/**
 * kva_core_put_clean() - frames taken by kva_core_take_dirty() are clear.
 * @c:		the core.
 * @idx:	their indices.
 * @n:		how many.
 */
void kva_core_put_clean(struct kva_core *c, const u32 *idx, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		struct kva_frame *f = &c->frames[idx[i]];

		if (KVA_WARN_ON(f->flags != KVA_FRAME_CLEANING))
			continue;
		c->nr_cleaning--;
		c->frames_cleaned++;
		if (may_retire(c)) {
			c->nr_free--;
			retire(c, idx[i]);
			continue;
		}
		f->flags = 0;
		f->next = c->free_head;
		c->free_head = idx[i];
	}
}

/**
 * kva_core_quarantine() - take free frames that carry data, and clean ones
 * that may, as if kva_core_take_dirty() had taken them (whatever
 * may_clear() says): memory another owner's tenants wrote, which this
 * core's owner must clear before anyone has it (a gang's CUDA frames).
 * @c:		the core.
 * @pick:	which clean frames to take as well; NULL: none.
 * @arg:	for @pick.
 *
 * Return: how many were taken; kva_core_put_clean() gives them back.
 */
u32 kva_core_quarantine(struct kva_core *c,
			bool (*pick)(const void *arg, u32 idx), const void *arg)
{
	u32 *link = &c->free_head, n;

	n = dirty_take(c, NULL, NULL, c->nr_dirty, true);
	while (pick && *link != KVA_NIL) {
		u32 i = *link;
		struct kva_frame *f = &c->frames[i];

		if (!pick(arg, i)) {
			link = &f->next;
			continue;
		}
		*link = f->next;
		f->next = KVA_NIL;
		f->flags = KVA_FRAME_CLEANING;
		c->nr_cleaning++;
		n++;
	}
	return n;
}

/**
 * kva_core_lookup() - check that a handle names a frame the client holds.
 * @c:		the core.
 * @cl:		the client.
 * @handle:	the handle.
 *
 * Return: the frame index, or -ENOENT (no such frame, or nobody holds it:
 * free or cached), -ESTALE (the frame was freed since the handle was
 * issued), -EPERM (held by other clients only), -EBUSY (lent to the
 * owner: kva_core_lend()).
 */
int kva_core_lookup(const struct kva_core *c,
		    const struct kva_core_client *cl, u64 handle)
{
	u32 idx = KVA_HANDLE_IDX(handle);
	const struct kva_frame *f;

	if (idx >= c->nr_frames)
		return -ENOENT;
	f = &c->frames[idx];
	if (f->gen != KVA_HANDLE_GEN(handle))
		return -ESTALE;
	if (!f->refs)
		return -ENOENT;
	if (!holds_frame(c, cl, idx))
		return -EPERM;
	if (f->flags & KVA_FRAME_LENT)
		return -EBUSY;
	return (int)idx;
}

/**
 * kva_core_frame_access() - what a client may do with frame @idx now: the
 * question a mapping of the frame asks at every fault.
 * @c:		the core.
 * @cl:		the client.
 * @idx:	frame index, not trusted.
 *
 * A published frame's contents belong to its key and may be mapped by
 * every client that looks it up, so whoever holds it may only read it -
 * its publisher too, from publication on; the runtime writes into such a
 * frame only through a copy.  A frame can be held by several clients only
 * once published.
 *
 * Return: KVA_ACCESS_WRITE for a frame the client holds that is not
 * published, KVA_ACCESS_READ for a published one it holds, KVA_ACCESS_NONE
 * otherwise (including an index out of range and a frame lent to the
 * owner).
 */
enum kva_access kva_core_frame_access(const struct kva_core *c,
				      const struct kva_core_client *cl,
				      u32 idx)
{
	if (idx >= c->nr_frames || !c->frames[idx].refs ||
	    (c->frames[idx].flags & KVA_FRAME_LENT) ||
	    !holds_frame(c, cl, idx))
		return KVA_ACCESS_NONE;
	if (c->frames[idx].flags & KVA_FRAME_PUBLISHED)
		return KVA_ACCESS_READ;
	return KVA_ACCESS_WRITE;
}

static void unmark(struct kva_core *c, const u64 *handles, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		c->frames[KVA_HANDLE_IDX(handles[i])].flags &= ~KVA_FRAME_MARK;
}

/**
 * kva_core_free() - let go of frames a client holds.
 * @c:		the core.
 * @cl:		the client.
 * @handles:	@n handles.
 * @n:		how many.
 *
 * All or nothing: every handle is checked before any hold is dropped.  A
 * frame others still hold stays held by them; a published frame nobody
 * holds any more becomes cached; any other frame returns to the free list.
 *
 * Return: 0, -EINVAL for @n == 0 or a handle given twice, or the first
 * error of kva_core_lookup().  On error nothing changes.
 */
int kva_core_free(struct kva_core *c, struct kva_core_client *cl,
		  const u64 *handles, u32 n)
{
	u32 i;
	int ret;

	if (!n)
		return -EINVAL;
	c->free_calls++;
	cl->free_calls++;
	for (i = 0; i < n; i++) {
		struct kva_frame *f;

		ret = kva_core_lookup(c, cl, handles[i]);
		if (ret < 0)
			goto err_unmark;
		f = &c->frames[ret];
		if (f->flags & KVA_FRAME_MARK) {
			ret = -EINVAL;
			goto err_unmark;
		}
		f->flags |= KVA_FRAME_MARK;
	}
	for (i = 0; i < n; i++) {
		u32 idx = KVA_HANDLE_IDX(handles[i]);

		c->frames[idx].flags &= ~KVA_FRAME_MARK;
		hold_drop(c, cl, idx);
	}
	return 0;

err_unmark:
	unmark(c, handles, i);
	return ret;
}

/* ---- the prefix cache ---------------------------------------------------------------- */

static void unmark_chain(struct kva_core *c, const struct kva_core_prefix *e,
			 u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		c->frames[KVA_HANDLE_IDX(e[i].handle)].flags &= ~KVA_FRAME_MARK;
}

/**
 * kva_core_publish() - put frames the client holds under keys.
 * @c:		the core.
 * @cl:		the client.
 * @chain:	@n (key, handle) pairs; each entry's flags are written.
 * @n:		how many.
 *
 * The client keeps its holds.  A key already published under another
 * frame keeps that frame (the first wins; see core.h): the entry gets
 * KVA_PREFIX_EXISTED and its frame stays unpublished.  A frame published
 * under the same key already is left as it is.  All or nothing: every
 * entry is checked first.
 *
 * Return: the number of frames newly published, or -EINVAL (@n == 0, a
 * key of all zeros, a frame twice), -EBUSY (a frame published under
 * another key), or an error of kva_core_lookup() (not held by @cl).  On
 * error nothing changes.
 */
int kva_core_publish(struct kva_core *c, struct kva_core_client *cl,
		     struct kva_core_prefix *chain, u32 n)
{
	u32 i, published = 0;
	int ret;

	if (!n)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		struct kva_frame *f;

		if (key_is_zero(chain[i].key)) {
			ret = -EINVAL;
			goto err_unmark;
		}
		ret = kva_core_lookup(c, cl, chain[i].handle);
		if (ret < 0)
			goto err_unmark;
		f = &c->frames[ret];
		if (f->flags & KVA_FRAME_MARK) {
			ret = -EINVAL;
			goto err_unmark;
		}
		if ((f->flags & KVA_FRAME_PUBLISHED) &&
		    memcmp(c->keys[ret], chain[i].key, KVA_KEY_LEN)) {
			ret = -EBUSY;
			goto err_unmark;
		}
		/* Its holders are all of its domain, the publisher too. */
		if (KVA_WARN_ON(f->dom != cl->dom)) {
			ret = -EPERM;
			goto err_unmark;
		}
		f->flags |= KVA_FRAME_MARK;
	}
	for (i = 0; i < n; i++) {
		u32 idx = KVA_HANDLE_IDX(chain[i].handle);
		struct kva_frame *f = &c->frames[idx];

		f->flags &= ~KVA_FRAME_MARK;
		chain[i].flags = 0;
		if (f->flags & KVA_FRAME_PUBLISHED)
			continue;
		if (index_find(c, chain[i].key, cl->dom) != KVA_NIL) {
			chain[i].flags = KVA_PREFIX_EXISTED;
			continue;
		}
		index_add(c, idx, chain[i].key);
		if (c->events)
			c->events->stored(c, cl, idx, i ? chain[i - 1].key : NULL,
					  i);
		published++;
	}
	return (int)published;

err_unmark:
	unmark_chain(c, chain, i);
	return ret;
}

/**
 * kva_core_prefix_lookup() - find the longest leading run of a key chain
 * that is published, and hold its frames.
 * @c:		the core.
 * @cl:		the client.
 * @chain:	@n keys; the handles of the run are written.
 * @n:		how many.
 *
 * Each frame of the run is held by @cl afterwards: a cached frame comes
 * back from the LRU charged to @cl (as an allocation would be), a frame
 * others hold is shared (a hold record; no charge), a frame @cl holds
 * already (or that came earlier in the chain) is returned again without
 * a second hold, its entry marked KVA_PREFIX_HELD.  All or nothing over
 * the run: it fails when the new holds would take @cl past its max, or
 * the cached frames among them are more than @cl may take.  The caller
 * makes sure of the hold records first (kva_core_holds_need()).
 *
 * Return: the length of the run (0 when the first key is not there), or
 * -EINVAL (@n == 0, a key of all zeros), -ENOSPC (limits), -ENOMEM (too
 * few hold records).  On error nothing changes.
 */
int kva_core_prefix_lookup(struct kva_core *c, struct kva_core_client *cl,
			   struct kva_core_prefix *chain, u32 n)
{
	u32 i, run, take = 0, revive = 0, recs = 0, room;
	int ret;

	if (!n)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (key_is_zero(chain[i].key))
			return -EINVAL;
	/* The run's frame indices go to the handles as they are found. */
	for (i = 0; i < n; i++) {
		u32 idx = index_find(c, chain[i].key, cl->dom);
		struct kva_frame *f;

		if (idx == KVA_NIL)
			break;
		chain[i].handle = idx;
		f = &c->frames[idx];
		if (f->flags & KVA_FRAME_MARK)
			continue;	/* a key given twice */
		f->flags |= KVA_FRAME_MARK;
		if (f->flags & KVA_FRAME_CACHED) {
			revive++;
			take++;
		} else if (!holds_frame(c, cl, idx)) {
			take++;
			recs += f->charge != cl;
		}
	}
	run = i;

	room = cl->max > cl->held ? cl->max - cl->held : 0;
	ret = -ENOSPC;
	if (take > room || revive > pool_for(c, cl))
		goto err_unmark;
	ret = -ENOMEM;
	if (recs > c->nr_holds - c->holds_used)
		goto err_unmark;

	for (i = 0; i < run; i++) {
		u32 idx = (u32)chain[i].handle;
		struct kva_frame *f = &c->frames[idx];
		bool taken = false;

		if (f->flags & KVA_FRAME_MARK) {
			f->flags &= ~KVA_FRAME_MARK;
			taken = hold_take(c, cl, idx);
		}
		chain[i].handle = KVA_HANDLE(f->gen, idx);
		chain[i].flags = taken ? 0 : KVA_PREFIX_HELD;
	}
	c->cache_hits += run;
	c->cache_misses += n - run;
	if (cl->dom) {
		cl->dom->hits += run;
		cl->dom->misses += n - run;
	}
	update_peak(c);
	return (int)run;

err_unmark:
	for (i = 0; i < run; i++)
		c->frames[(u32)chain[i].handle].flags &= ~KVA_FRAME_MARK;
	return ret;
}

/**
 * kva_core_find() - the frame published under @key in domain @dom.
 * @c:		the core.
 * @key:	the key.
 * @dom:	the domain (NULL: the shared namespace).
 *
 * Nothing is taken or counted.
 *
 * Return: the frame's index, or KVA_NIL if the key is not published.
 */
u32 kva_core_find(const struct kva_core *c, const u8 *key,
		  const struct kva_core_domain *dom)
{
	return key_is_zero(key) ? KVA_NIL : index_find(c, key, dom);
}

/**
 * kva_core_take_cached() - take a hold on cached frame @idx for @cl, as a
 * LOOKUP of its key would, without counting a hit.
 * @c:		the core.
 * @cl:		the client, of the frame's domain.
 * @idx:	the frame.
 *
 * For the owner's own copies of a cached frame (a lower tier): while held
 * the frame is neither reclaimed nor taken out by a shrink, and it comes
 * back cached when @cl lets go.
 *
 * Return: the frame's handle, or -ENOENT if it is not cached (or not of
 * @cl's domain), -ENOSPC if @cl may not take it (its max, or the frames an
 * unmet minimum or a shrink counts on).
 */
s64 kva_core_take_cached(struct kva_core *c, struct kva_core_client *cl,
			 u32 idx)
{
	struct kva_frame *f;

	if (idx >= c->nr_frames)
		return -ENOENT;
	f = &c->frames[idx];
	if (!(f->flags & KVA_FRAME_CACHED) || f->dom != cl->dom)
		return -ENOENT;
	if (cl->held >= cl->max || !pool_for(c, cl))
		return -ENOSPC;
	hold_take(c, cl, idx);
	update_peak(c);
	return (s64)KVA_HANDLE(f->gen, idx);
}

/**
 * kva_core_reclaim_frame() - reclaim cached frame @idx now, as an
 * allocation would (told to @c->events and counted).
 * @c:		the core.
 * @idx:	the frame.
 *
 * Return: 0, or -ENOENT if the frame is not cached.
 */
int kva_core_reclaim_frame(struct kva_core *c, u32 idx)
{
	if (idx >= c->nr_frames || !(c->frames[idx].flags & KVA_FRAME_CACHED))
		return -ENOENT;
	reclaim_frame(c, idx, true);
	c->cache_reclaims++;
	return 0;
}

/**
 * kva_core_lend() - lend a frame that @cl alone holds, unpublished, to the
 * owner (see "Lending" in core.h).
 * @c:		the core.
 * @cl:		the client.
 * @handle:	the frame's handle.
 *
 * Return: 0, an error of kva_core_lookup(), or -EBUSY if others hold the
 * frame too or it is published.
 */
int kva_core_lend(struct kva_core *c, const struct kva_core_client *cl,
		  u64 handle)
{
	int ret = kva_core_lookup(c, cl, handle);

	if (ret < 0)
		return ret;
	if (c->frames[ret].refs != 1 ||
	    (c->frames[ret].flags & KVA_FRAME_PUBLISHED))
		return -EBUSY;
	c->frames[ret].flags |= KVA_FRAME_LENT;
	return 0;
}

/**
 * kva_core_unlend() - the owner gives a frame lent by kva_core_lend() back
 * to its holder.
 * @c:		the core.
 * @handle:	the handle kva_core_lend() was given.
 */
void kva_core_unlend(struct kva_core *c, u64 handle)
{
	struct kva_frame *f = &c->frames[KVA_HANDLE_IDX(handle)];

	KVA_WARN_ON(!(f->flags & KVA_FRAME_LENT) ||
		    f->gen != KVA_HANDLE_GEN(handle));
	f->flags &= ~KVA_FRAME_LENT;
}

/**
 * kva_core_hand_over() - move a lent frame, hold and charge, from the
 * client it was lent by to another client of its domain, which takes it
 * as its own (no longer lent).
 * @c:		the core.
 * @from:	the client that lent it (kva_core_lend()), whose minimum
 *		must already be 0: its charge falls while free and cached
 *		frames stay as they are.
 * @to:		a client of the same domain below its max.
 * @handle:	the frame's handle.
 *
 * Return: 0, or -EINVAL if the frame is not lent by @from alone, @from
 * still has a minimum, or @to may not take it.  On error nothing changes.
 */
int kva_core_hand_over(struct kva_core *c, struct kva_core_client *from,
		       struct kva_core_client *to, u64 handle)
{
	u32 idx = KVA_HANDLE_IDX(handle);
	struct kva_frame *f;

	if (idx >= c->nr_frames)
		return -EINVAL;
	f = &c->frames[idx];
	if (f->gen != KVA_HANDLE_GEN(handle) || !(f->flags & KVA_FRAME_LENT) ||
	    f->refs != 1 || f->charge != from || from->min ||
	    to->dom != from->dom || to->held >= to->max)
		return -EINVAL;
	charge_del(c, idx);
	refs_put(c, from, idx);
	refs_get(c, to, idx);
	charge_add(c, to, idx);
	f->flags &= ~KVA_FRAME_LENT;
	return 0;
}

/* ---- checking ---------------------------------------------------------------------------- */

/* ---- resizing ------------------------------------------------------------ */

/*
 * Take out what a shrink waits for, as far as free and cached frames
 * beyond the unmet minimums go: free ones first (clean, then dirty),
 * then cached ones, oldest first.  Returns how many.
 */
static u32 take_out(struct kva_core *c)
{
	u32 done = 0, idx;

	while (may_retire(c) && (kva_core_clean(c) || c->dirty)) {
		if (kva_core_clean(c)) {
			idx = c->free_head;
			c->free_head = c->frames[idx].next;
		} else {
			idx = dirty_pop(c, c->dirty);
		}
		c->nr_free--;
		retire(c, idx);
		done++;
	}
	while (may_retire(c) && c->lru_head != KVA_NIL) {
		/* free_push() takes it out. */
		reclaim_frame(c, c->lru_head, true);
		c->cache_reclaims++;
		done++;
	}
	return done;
}

/**
 * kva_core_shrink() - take @n frames out of the arena.
 * @c:		the core.
 * @n:		how many.
 * @taken:	set to the frames taken out now.
 *
 * Free frames go first (clean, then dirty: their data leaves with their
 * memory), then cached ones, oldest first (reclaimed, as for an
 * allocation), but never one that an unmet minimum counts on, and never
 * a held frame.  The rest the core waits for (struct kva_core
 * .shrink_pending): kept from every client from now on, and taken as
 * frames come free, cached or cleared.  The capacity is the new one at
 * once (kva_core_capacity()).  Each frame taken out, now or later, is
 * told to @c->retired.
 *
 * The owner gives a retired frame's memory back, and a dirty one's data
 * goes with it: nobody is given that memory again (a host frame's pages
 * are punched out; a CUDA frame's allocation is let go, and the frame
 * takes new memory only once no process imports the old), so a dirty
 * frame goes out without @c->may_clear.
 *
 * Return: 0, with *@taken the frames taken out now; -EINVAL if @n is 0 or
 * would leave no frame; -EBUSY if the clients' minimums need more than
 * would be left.  On error nothing changes.
 */
int kva_core_shrink(struct kva_core *c, u32 n, u32 *taken)
{
	const struct kva_core_client *cl;
	u64 mins = 0;

	if (!n || n >= kva_core_capacity(c))
		return -EINVAL;
	for (cl = c->clients; cl; cl = cl->next)
		mins += cl->min;
	if (mins > kva_core_capacity(c) - n)
		return -EBUSY;
	c->shrink_pending += n;
	*taken = take_out(c);
	return 0;
}

/**
 * kva_core_shrink_cancel() - stop waiting for the frames a shrink has not
 * taken yet; those taken stay out.
 * @c:	the core.
 *
 * Return: how many it was still waiting for (back in the capacity).
 */
u32 kva_core_shrink_cancel(struct kva_core *c)
{
	u32 n = c->shrink_pending;

	c->shrink_pending = 0;
	return n;
}

/* Bring absent frame @i in, free and clean. */
static void bring_in(struct kva_core *c, u32 i)
{
	struct kva_frame *f = &c->frames[i];

	if (f->prev != KVA_NIL)
		c->frames[f->prev].next = f->next;
	else
		c->absent_head = f->next;
	if (f->next != KVA_NIL)
		c->frames[f->next].prev = f->prev;
	c->nr_absent--;
	f->flags = 0;
	f->prev = KVA_NIL;
	f->next = c->free_head;
	c->free_head = i;
	c->nr_free++;
}

/**
 * kva_core_grow() - add up to @n frames to the arena.
 * @c:		the core.
 * @n:		how many.
 * @idx:	room for @n indices: the frames brought back in.
 *
 * A shrink still waiting is cut first (those frames were never taken);
 * then absent frames come in, free, with no domain, the most recently
 * taken out first.  Their memory is the caller's to set up before
 * anything can allocate them (before it drops its lock).  The table does
 * not grow: at most the frames kva_core_init_max() made.
 *
 * Return: the number of frames brought in (written to @idx); the
 * capacity grew by that many plus what the shrink no longer waits for.
 */
u32 kva_core_grow(struct kva_core *c, u32 n, u32 *idx)
{
	u32 cut = n < c->shrink_pending ? n : c->shrink_pending, done = 0;

	c->shrink_pending -= cut;
	n -= cut;
	while (done < n && c->absent_head != KVA_NIL) {
		idx[done] = c->absent_head;
		bring_in(c, idx[done++]);
	}
	return done;
}

/**
 * kva_core_grow_frames() - bring the absent frames @idx in.
 * @c:		the core.
 * @idx:	@n frame indices, each absent, none twice.
 * @n:		how many.
 *
 * For an owner that chooses which frames come back (those whose memory
 * it has ready).  A shrink still waiting is not cut: see kva_core_grow().
 * The frames come in free and clean; their memory must be set up before
 * the caller drops its lock.
 *
 * Return: 0, or -EINVAL (and nothing changed) if an index is out of the
 * table, not absent or given twice.
 */
int kva_core_grow_frames(struct kva_core *c, const u32 *idx, u32 n)
{
	u32 i;
	int ret = 0;

	for (i = 0; i < n && !ret; i++) {
		if (idx[i] >= c->nr_frames ||
		    c->frames[idx[i]].flags != KVA_FRAME_ABSENT)
			ret = -EINVAL;
		else
			c->frames[idx[i]].flags |= KVA_FRAME_MARK;
	}
	/* Unmark what was marked: all of them, or those before the bad one. */
	while (i--)
		if (idx[i] < c->nr_frames &&
		    c->frames[idx[i]].flags == (KVA_FRAME_ABSENT | KVA_FRAME_MARK))
			c->frames[idx[i]].flags = KVA_FRAME_ABSENT;
	if (ret)
		return ret;
	for (i = 0; i < n; i++)
		bring_in(c, idx[i]);
	return 0;
}

/* A free frame on a list: clean (@dom NULL) or one domain's dirty one. */
static int check_free_frame(const struct kva_core *c, u32 idx, u32 *n,
			    const struct kva_core_domain *dom)
{
	const struct kva_frame *f;

	if (KVA_WARN_ON(idx >= c->nr_frames || ++*n > c->nr_frames))
		return -EUCLEAN;
	f = &c->frames[idx];
	if (KVA_WARN_ON(f->flags || f->charge || f->refs || f->tag ||
			f->dom != dom) ||
	    KVA_WARN_ON(f->holds != KVA_NIL || f->hnext != KVA_NIL))
		return -EUCLEAN;
	return 0;
}

static int check_free_and_lru(const struct kva_core *c)
{
	const struct kva_core_domain *d, *dprev = NULL;
	u32 idx, prev = KVA_NIL, n = 0, dirty = 0;

	for (idx = c->free_head; idx != KVA_NIL; idx = c->frames[idx].next)
		if (check_free_frame(c, idx, &n, NULL))
			return -EUCLEAN;
	if (KVA_WARN_ON(n != kva_core_clean(c)))
		return -EUCLEAN;
	for (d = c->dirty; d; dprev = d, d = d->dnext) {
		u32 nd = 0;

		if (KVA_WARN_ON(c->clear == KVA_CLEAR_NONE || d->dprev != dprev))
			return -EUCLEAN;
		for (idx = d->dirty_head; idx != KVA_NIL;
		     idx = c->frames[idx].next)
			if (check_free_frame(c, idx, &nd, d))
				return -EUCLEAN;
		if (KVA_WARN_ON(!nd || nd != d->nr_dirty || d->refs < nd))
			return -EUCLEAN;
		dirty += nd;
		if (KVA_WARN_ON(dirty > c->nr_frames))
			return -EUCLEAN;
	}
	if (KVA_WARN_ON(dirty != c->nr_dirty))
		return -EUCLEAN;
	n = 0;
	for (idx = c->lru_head; idx != KVA_NIL; idx = c->frames[idx].next) {
		const struct kva_frame *f;

		if (KVA_WARN_ON(idx >= c->nr_frames || ++n > c->nr_frames))
			return -EUCLEAN;
		f = &c->frames[idx];
		if (KVA_WARN_ON(f->flags != (KVA_FRAME_PUBLISHED |
					     KVA_FRAME_CACHED)) ||
		    KVA_WARN_ON(f->charge || f->refs || f->holds != KVA_NIL) ||
		    KVA_WARN_ON(f->prev != prev))
			return -EUCLEAN;
		prev = idx;
	}
	if (KVA_WARN_ON(n != c->nr_cached || c->lru_tail != prev))
		return -EUCLEAN;
	return 0;
}

static int check_absent(const struct kva_core *c)
{
	u32 idx, prev = KVA_NIL, n = 0;

	for (idx = c->absent_head; idx != KVA_NIL;
	     prev = idx, idx = c->frames[idx].next) {
		const struct kva_frame *f;

		if (KVA_WARN_ON(idx >= c->nr_frames || ++n > c->nr_absent))
			return -EUCLEAN;
		f = &c->frames[idx];
		if (KVA_WARN_ON(f->prev != prev))
			return -EUCLEAN;
		if (KVA_WARN_ON(f->flags != KVA_FRAME_ABSENT || f->refs ||
				f->charge || f->dom) ||
		    KVA_WARN_ON(f->holds != KVA_NIL || f->hnext != KVA_NIL))
			return -EUCLEAN;
	}
	if (KVA_WARN_ON(n != c->nr_absent))
		return -EUCLEAN;
	return 0;
}

static int check_index(const struct kva_core *c)
{
	u32 b, idx, other, n = 0;

	for (b = 0; b <= c->hash_mask; b++) {
		for (idx = c->buckets[b]; idx != KVA_NIL;
		     idx = c->frames[idx].hnext) {
			if (KVA_WARN_ON(idx >= c->nr_frames ||
					++n > c->nr_frames) ||
			    KVA_WARN_ON(!(c->frames[idx].flags &
					  KVA_FRAME_PUBLISHED)) ||
			    KVA_WARN_ON(key_hash(c, c->keys[idx],
					     c->frames[idx].dom) != b) ||
			    KVA_WARN_ON(key_is_zero(c->keys[idx])))
				return -EUCLEAN;
			/* No key names two frames of one domain. */
			for (other = c->frames[idx].hnext; other != KVA_NIL;
			     other = c->frames[other].hnext)
				if (c->frames[idx].dom == c->frames[other].dom &&
				    KVA_WARN_ON(!memcmp(c->keys[idx],
							c->keys[other],
							KVA_KEY_LEN)))
					return -EUCLEAN;
		}
	}
	if (KVA_WARN_ON(n != c->nr_published))
		return -EUCLEAN;
	return 0;
}

/* The holders of held frame @i: the charged client and the records. */
static int check_holders(const struct kva_core *c, u32 i, u32 *records)
{
	const struct kva_frame *f = &c->frames[i];
	u32 r, refs = !!(f->flags & KVA_FRAME_CHARGE_HELD);

	if (KVA_WARN_ON(!f->charge || (f->flags & KVA_FRAME_CACHED)) ||
	    KVA_WARN_ON(f->charge->dom != f->dom) ||
	    KVA_WARN_ON(f->prev == KVA_NIL ? f->charge->head != i :
			c->frames[f->prev].next != i) ||
	    KVA_WARN_ON(f->next != KVA_NIL &&
			(c->frames[f->next].prev != i ||
			 c->frames[f->next].charge != f->charge)))
		return -EUCLEAN;
	for (r = f->holds; r != KVA_NIL; r = c->holds[r].fnext) {
		const struct kva_hold *h = &c->holds[r];

		if (KVA_WARN_ON(r >= c->nr_holds || ++*records > c->nr_holds) ||
		    KVA_WARN_ON(!h->client || h->frame != i) ||
		    KVA_WARN_ON(h->fnext != KVA_NIL &&
				c->holds[h->fnext].fprev != r) ||
		    /* One hold per client and frame. */
		    KVA_WARN_ON(h->client == f->charge &&
				(f->flags & KVA_FRAME_CHARGE_HELD)) ||
		    /* Only clients of the frame's domain hold it. */
		    KVA_WARN_ON(h->client->dom != f->dom) ||
		    KVA_WARN_ON(hold_find(c, h->client, i) != r))
			return -EUCLEAN;
		refs++;
	}
	if (KVA_WARN_ON(refs != f->refs) ||
	    /* Unpublished frames cannot be shared: nobody can look them up. */
	    KVA_WARN_ON(f->refs > 1 && !(f->flags & KVA_FRAME_PUBLISHED)))
		return -EUCLEAN;
	return 0;
}

static int check_held(const struct kva_core *c)
{
	u32 i, r, held = 0, published = 0, records = 0, cleaning = 0;

	for (i = 0; i < c->nr_frames; i++) {
		const struct kva_frame *f = &c->frames[i];

		published += !!(f->flags & KVA_FRAME_PUBLISHED);
		if (KVA_WARN_ON((f->flags & KVA_FRAME_MARK) || !f->gen) ||
		    KVA_WARN_ON(f->dom && !f->dom->refs))
			return -EUCLEAN;
		if (f->flags & KVA_FRAME_CLEANING) {
			if (KVA_WARN_ON(f->flags != KVA_FRAME_CLEANING ||
					f->refs || f->dom))
				return -EUCLEAN;
			cleaning++;
		}
		/* A cached frame of a domain is on the domain's LRU too. */
		if ((f->flags & KVA_FRAME_CACHED) && f->dom &&
		    (KVA_WARN_ON(f->dprev == KVA_NIL ? f->dom->lru_head != i :
				 c->frames[f->dprev].dnext != i) ||
		     KVA_WARN_ON(f->dnext == KVA_NIL ? f->dom->lru_tail != i :
				 c->frames[f->dnext].dprev != i) ||
		     KVA_WARN_ON(c->dom_cached_max &&
				 f->dom->cached > c->dom_cached_max)))
			return -EUCLEAN;
		/* Lent: held by its one holder, unpublished. */
		if ((f->flags & KVA_FRAME_LENT) &&
		    KVA_WARN_ON(f->refs != 1 ||
				(f->flags & KVA_FRAME_PUBLISHED)))
			return -EUCLEAN;
		if (!f->refs)
			continue;
		held++;
		if (check_holders(c, i, &records))
			return -EUCLEAN;
	}
	if (KVA_WARN_ON(held != kva_core_held(c)) ||
	    KVA_WARN_ON(cleaning != c->nr_cleaning) ||
	    KVA_WARN_ON(published != c->nr_published) ||
	    KVA_WARN_ON(records != c->holds_used))
		return -EUCLEAN;
	for (r = c->holds_free, i = 0; r != KVA_NIL; r = c->holds[r].fnext)
		if (KVA_WARN_ON(r >= c->nr_holds || ++i > c->nr_holds) ||
		    KVA_WARN_ON(c->holds[r].client))
			return -EUCLEAN;
	if (KVA_WARN_ON(i + c->holds_used != c->nr_holds))
		return -EUCLEAN;
	return 0;
}

/* One client's lists against its counts. */
static int check_client(const struct kva_core *c,
			const struct kva_core_client *cl)
{
	u32 idx, r, charged = 0, held = 0, shared = 0;

	for (idx = cl->head; idx != KVA_NIL; idx = c->frames[idx].next) {
		const struct kva_frame *f = &c->frames[idx];

		if (KVA_WARN_ON(f->charge != cl || ++charged > c->nr_frames))
			return -EUCLEAN;
		if (f->flags & KVA_FRAME_CHARGE_HELD) {
			held++;
			shared += f->refs > 1;
		}
	}
	for (r = cl->holds; r != KVA_NIL; r = c->holds[r].cnext) {
		const struct kva_hold *h = &c->holds[r];

		if (KVA_WARN_ON(h->client != cl ||
				++held > c->nr_frames + c->nr_holds) ||
		    KVA_WARN_ON(h->cnext != KVA_NIL &&
				c->holds[h->cnext].cprev != r))
			return -EUCLEAN;
		shared += c->frames[h->frame].refs > 1;
	}
	if (KVA_WARN_ON(charged != cl->charged || held != cl->held) ||
	    KVA_WARN_ON(shared != cl->shared || cl->held > cl->peak))
		return -EUCLEAN;
	return 0;
}

static int check_clients(const struct kva_core *c)
{
	const struct kva_core_client *cl, *prev = NULL;
	u32 n = 0, unmet_sum = 0, charged_sum = 0;

	for (cl = c->clients; cl; prev = cl, cl = cl->next) {
		if (KVA_WARN_ON(++n > c->nr_clients || cl->prev != prev) ||
		    check_client(c, cl))
			return -EUCLEAN;
		unmet_sum += unmet(cl);
		charged_sum += cl->charged;
	}
	if (KVA_WARN_ON(n != c->nr_clients) ||
	    KVA_WARN_ON(unmet_sum != c->unmet_min) ||
	    KVA_WARN_ON(charged_sum != kva_core_held(c)))
		return -EUCLEAN;
	return 0;
}

/**
 * kva_core_check() - verify every invariant (tests and fuzzing).
 * @c:	the core.
 *
 * Walks the free list, the LRU, the absent list, the key index, every
 * frame's holders and every client's charged frames and hold records,
 * and checks the counts against each other: free + cached + held +
 * absent = the table's frames, every cached frame
 * has exactly one key, each held frame is charged to one client, each
 * client's held, charged and shared match what it has, and the unmet
 * minimums fit in the free and cached frames.  O(frames + holds).
 *
 * Return: 0 or -EUCLEAN with the first broken invariant warned about.
 */
int kva_core_check(const struct kva_core *c)
{
	int ret;

	if (KVA_WARN_ON((u64)c->nr_free + c->nr_cached + c->nr_absent >
			c->nr_frames) ||
	    KVA_WARN_ON(c->shrink_pending > c->nr_frames - c->nr_absent) ||
	    KVA_WARN_ON(c->nr_dirty + c->nr_cleaning > c->nr_free) ||
	    KVA_WARN_ON(c->unmet_min > c->nr_free + c->nr_cached) ||
	    KVA_WARN_ON(c->frames_allocated - c->frames_freed !=
			(u64)kva_core_held(c) + c->nr_cached) ||
	    KVA_WARN_ON(c->holds_used > c->nr_holds))
		return -EUCLEAN;
	ret = check_free_and_lru(c);
	if (!ret)
		ret = check_absent(c);
	if (!ret)
		ret = check_index(c);
	if (!ret)
		ret = check_held(c);
	if (!ret)
		ret = check_clients(c);
	return ret;
}
