// SPDX-License-Identifier: MIT
/*
 * Prefix sharing: key chains, kva_seq_publish() and kva_seq_attach_prefix().
 *
 * A published frame carries FRAME_PUBLISHED in this handle's frame table,
 * whether this process published it or found it with LOOKUP: the backends
 * map it read-only from then on, and a grow that would write into it
 * copies it first (seq.c, FRAME_SHARED), by the copy-on-write rule that
 * serves forked sequences.  Published frames lie in their sequence's
 * copy-on-write prefix (nr_cow), where that rule looks.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Chains up to this long need no heap. */
#define PREFIX_STACK	16

static const char root_tag[] = "kvarena prefix v1";

static void sha_le32(struct kva_sha256 *s, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
			 (uint8_t)(v >> 24) };

	kva_sha256_update(s, b, sizeof(b));
}

static void sha_le64(struct kva_sha256 *s, uint64_t v)
{
	sha_le32(s, (uint32_t)v);
	sha_le32(s, (uint32_t)(v >> 32));
}

/* The key before the first: the layout, so that others never match. */
static void prefix_root(const struct kva_geometry *g, uint8_t out[32])
{
	struct kva_sha256 s;

	kva_sha256_init(&s);
	kva_sha256_update(&s, root_tag, sizeof(root_tag) - 1);
	sha_le64(&s, g->frame_size);
	sha_le32(&s, g->layers);
	sha_le32(&s, g->kv_heads);
	sha_le32(&s, g->head_dim);
	sha_le32(&s, g->dtype);
	kva_sha256_final(&s, out);
}

int kva_prefix_keys(const struct kva_geometry *g, const void *ns,
		    size_t ns_len, const uint32_t *tokens, uint64_t nr_tokens,
		    struct kva_key *keys, unsigned int max_keys)
{
	struct kva_geometry geo;
	uint8_t prev[KVA_KEY_LEN], buf[256];
	uint64_t n, i;
	uint32_t tpf, t, used;
	int ret;

	if (!g || (!ns && ns_len) || ns_len > UINT32_MAX ||
	    (!tokens && nr_tokens) || (!keys && max_keys))
		return -EINVAL;
	geo = *g;
	ret = kva_geometry_init(&geo);
	if (ret)
		return ret;
	tpf = geo.tokens_per_frame;
	n = nr_tokens / tpf;
	if (n > max_keys)
		n = max_keys;
	if (n > INT_MAX)
		n = INT_MAX;

	prefix_root(&geo, prev);
	for (i = 0; i < n; i++) {
		const uint32_t *tok = tokens + i * tpf;
		struct kva_sha256 s;

		kva_sha256_init(&s);
		kva_sha256_update(&s, prev, sizeof(prev));
		sha_le32(&s, (uint32_t)ns_len);
		kva_sha256_update(&s, ns, ns_len);
		sha_le32(&s, tpf);
		for (t = 0, used = 0; t < tpf; t++) {
			buf[used++] = (uint8_t)tok[t];
			buf[used++] = (uint8_t)(tok[t] >> 8);
			buf[used++] = (uint8_t)(tok[t] >> 16);
			buf[used++] = (uint8_t)(tok[t] >> 24);
			if (used == sizeof(buf)) {
				kva_sha256_update(&s, buf, used);
				used = 0;
			}
		}
		kva_sha256_update(&s, buf, used);
		kva_sha256_final(&s, keys[i].b);
		memcpy(prev, keys[i].b, sizeof(prev));
	}
	return (int)n;
}

static int publish(struct kva_seq *seq, const struct kva_key *keys,
		   unsigned int nr, const uint32_t *tokens)
{
	struct kvarena_prefix_entry stack[PREFIX_STACK], *e = stack;
	struct kva_seq_impl *s;
	struct kva_arena *a;
	uint32_t i, top = 0;
	int ret;

	if (!seq || (!keys && nr) || nr > KVA_MAX_BATCH)
		return -EINVAL;
	if (!nr)
		return 0;
	s = seq_impl(seq);
	a = s->arena;
	if (nr > PREFIX_STACK) {
		e = malloc(nr * sizeof(*e));
		if (!e)
			return -ENOMEM;
	}
	memset(e, 0, nr * sizeof(*e));

	kva_lock(a);
	/* Only full frames: a partial one would change under its key. */
	ret = -EINVAL;
	if ((uint64_t)nr * s->pub.geo.tokens_per_frame > s->pub.tokens)
		goto out;
	for (i = 0; i < nr; i++) {
		memcpy(e[i].key, keys[i].b, KVA_KEY_LEN);
		e[i].handle = a->frames[s->slot[i]].handle;
	}
	ret = a->prov->publish(a, e, nr, tokens, s->pub.geo.tokens_per_frame);
	if (ret < 0)
		goto out;
	for (i = 0; i < nr; i++) {
		/* A key another frame has already: ours stays private. */
		if (e[i].flags & KVARENA_PREFIX_EXISTED)
			continue;
		a->frames[s->slot[i]].flags |= FRAME_PUBLISHED;
		top = i + 1;
	}
	if (s->nr_cow < top)
		s->nr_cow = top;
	kva_seq_set_room(s);
	kva_acct_update(a, s);
out:
	kva_unlock(a);
	if (e != stack)
		free(e);
	return ret;
}

int kva_seq_publish(struct kva_seq *seq, const struct kva_key *keys,
		    unsigned int nr)
{
	return publish(seq, keys, nr, NULL);
}

int kva_seq_publish_tokens(struct kva_seq *seq, const struct kva_key *keys,
			   unsigned int nr, const uint32_t *tokens)
{
	if (!tokens)
		return -EINVAL;
	return publish(seq, keys, nr, tokens);
}

/*
 * The frames LOOKUP found, @run of them: record the new holds, and check
 * that the ones already held are this handle's sequence frames.  Returns
 * the part of the run that can be used; the new holds beyond it, and all
 * of them on error, are in @fresh (@nfresh) for the caller to put back.
 */
static uint32_t take_found(struct kva_arena *a,
			   const struct kvarena_prefix_entry *e, uint32_t run,
			   uint32_t *idx, uint64_t *fresh, uint32_t *nfresh)
{
	uint32_t i, usable = run;

	*nfresh = 0;
	for (i = 0; i < run; i++) {
		uint32_t x = handle_idx(e[i].handle);
		uint64_t h = e[i].handle;
		struct kva_frame_rec *f;

		if (x >= a->nr_frames)
			return UINT32_MAX;	/* a module that makes frames up */
		f = &a->frames[x];
		idx[i] = x;
		if (!(e[i].flags & KVARENA_PREFIX_HELD)) {
			if (f->handle)
				return UINT32_MAX;
			kva_frames_record(a, &h, 1, FRAME_PUBLISHED);
			fresh[(*nfresh)++] = h;
			continue;
		}
		if (f->handle != e[i].handle)
			return UINT32_MAX;
		/*
		 * Held by this handle but in no sequence (a raw frame, or
		 * one waiting to be returned): the run stops before it.
		 */
		if (!f->refs && usable == run)
			usable = i;
		f->flags |= FRAME_PUBLISHED;
	}
	return usable;
}

/* Return the @n new holds in @fresh. */
static void put_fresh(struct kva_arena *a, const uint64_t *fresh, uint32_t n)
{
	if (n)
		kva_frames_put(a, fresh, n);
}

int kva_seq_attach_prefix(struct kva_seq *seq, const struct kva_key *keys,
			  unsigned int nr)
{
	struct kvarena_prefix_entry stack_e[PREFIX_STACK], *e = stack_e;
	uint64_t stack_h[PREFIX_STACK], *fresh = stack_h;
	uint32_t stack_i[PREFIX_STACK], *idx = stack_i;
	uint32_t i, run, usable, nfresh, past, tpf;
	struct kva_seq_impl *s;
	struct kva_arena *a;
	int ret;

	if (!seq || (!keys && nr))
		return -EINVAL;
	s = seq_impl(seq);
	a = s->arena;
	tpf = s->pub.geo.tokens_per_frame;
	/* Only as many frames as the range holds whole. */
	if (nr > s->pub.max_tokens / tpf)
		nr = (unsigned int)(s->pub.max_tokens / tpf);
	if (nr > KVA_MAX_BATCH)
		nr = KVA_MAX_BATCH;
	if (nr > PREFIX_STACK) {
		e = malloc(nr * sizeof(*e));
		fresh = malloc(nr * sizeof(*fresh));
		idx = malloc(nr * sizeof(*idx));
		ret = -ENOMEM;
		if (!e || !fresh || !idx)
			goto out_free;
	}

	kva_lock(a);
	ret = -EINVAL;
	if (s->pub.tokens || s->nr_mapped)
		goto out_unlock;
	/* a stream-ordered shrink may still unmap the range (seq.c) */
	if (s->unmapping) {
		kva_teardown_wait_locked(a);
		s->unmapping = false;
	}
	ret = 0;
	if (!nr)
		goto out_unlock;
	memset(e, 0, nr * sizeof(*e));
	for (i = 0; i < nr; i++)
		memcpy(e[i].key, keys[i].b, KVA_KEY_LEN);
	ret = a->prov->lookup(a, e, nr);
	if (ret <= 0)
		goto out_unlock;
	run = (uint32_t)ret;

	usable = take_found(a, e, run, idx, fresh, &nfresh);
	if (usable == UINT32_MAX) {
		/* Put back only what the module says this call took. */
		for (i = 0, nfresh = 0; i < run; i++)
			if (!(e[i].flags & KVARENA_PREFIX_HELD) &&
			    handle_idx(e[i].handle) < a->nr_frames &&
			    a->frames[handle_idx(e[i].handle)].handle ==
			    e[i].handle)
				fresh[nfresh++] = e[i].handle;
		put_fresh(a, fresh, nfresh);
		ret = -EPROTO;
		goto out_unlock;
	}
	/* New holds past the usable part (the tail of @fresh) go back. */
	for (i = usable, past = 0; i < run; i++)
		past += !(e[i].flags & KVARENA_PREFIX_HELD);
	put_fresh(a, fresh + nfresh - past, past);
	nfresh -= past;
	run = usable;
	ret = 0;
	if (!run)
		goto out_unlock;

	for (i = 0; i < run; i++) {
		if (a->frames[idx[i]].flags & FRAME_RESOLVED)
			continue;
		ret = a->vmm->resolve(a, idx[i]);
		if (ret)
			goto err_put;
	}
	ret = a->vmm->map(a, s->pub.base, idx, run);
	if (ret)
		goto err_put;

	for (i = 0; i < run; i++) {
		s->slot[i] = idx[i];
		a->frames[idx[i]].refs++;
	}
	s->nr_mapped = run;
	s->nr_cow = run;
	__atomic_store_n(&s->pub.tokens, (uint64_t)run * tpf,
			 __ATOMIC_RELAXED);
	kva_seq_set_room(s);
	kva_acct_update(a, s);
	/* Like every call that maps frames, report the usage it leaves. */
	kva_usage_report(a);
	ret = (int)run;
	goto out_unlock;

err_put:
	put_fresh(a, fresh, nfresh);
out_unlock:
	kva_unlock(a);
out_free:
	if (e != stack_e)
		free(e);
	if (fresh != stack_h)
		free(fresh);
	if (idx != stack_i)
		free(idx);
	return ret;
}
