// SPDX-License-Identifier: GPL-2.0
/*
 * kvarena.ko: KV events - every frame published under a key, every cached
 * frame reclaimed, and the end of the arena, as records in a ring per
 * arena, read in order through events descriptors (KVARENA_IOC_EVENTS_FD).
 * kvarenactl events turns them into vLLM's KV events for the routers of a
 * fleet (Documentation/events.rst).
 *
 * The ring is a byte buffer of variable-size records (a STORED event
 * carries its frame's token ids), written by the core's event hooks under
 * the arena lock, which also serialises the writers, and by arena
 * destruction.  The ring's own spinlock, taken inside the arena lock,
 * orders writers against readers; it guards only memcpy()s, so a STORED or
 * REMOVED event never sleeps, allocates or touches user memory - the
 * commands that make them run under io_uring's non-blocking issue.  When
 * the ring is full the oldest records go, as the kernel log's do: readers
 * are never waited for, and a reader whose next record went learns how
 * many it missed from a KVARENA_EVENT_LOST record.
 *
 * Each reader has its own position (sequence number and offset), so any
 * number of readers - a publisher for the routers, an operator's
 * kvarenactl events - see every event without taking one another's.
 * read() copies records out under the spinlock into a buffer of its own,
 * then to user memory with no lock held, and moves its position only once
 * that copy succeeded.  The ring outlives the arena while readers hold
 * it; after the arena's last event (CLEARED) they read end-of-file.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/build_bug.h>
#include <linux/file.h>
#include <linux/kref.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "kva.h"

static unsigned int events_ring_kib = 1024;
module_param(events_ring_kib, uint, 0444);
MODULE_PARM_DESC(events_ring_kib,
		 "KiB of each arena's ring of KV events (frames published and reclaimed), read through KVARENA_IOC_EVENTS_FD; 64 to 65536, or 0 to keep none (default 1024)");

#define KVA_EV_HDR	sizeof(struct kvarena_event)
/* A reader's copy of the ring at most, per read(). */
#define KVA_EV_READ_MAX	(256u << 10)
/* Room kept free after the tail for the wrap mark (a zero size field). */
#define KVA_EV_SLACK	8u

/* The largest record fits in the smallest ring with room to spare. */
static_assert(KVA_EV_HDR % 8 == 0);
static_assert(KVA_EV_HDR + 4 * KVARENA_EVENT_MAX_TOKENS + KVA_EV_SLACK <
	      (64u << 10) / 2);
static_assert(KVA_EV_HDR + 4 * KVARENA_EVENT_MAX_TOKENS <= KVA_EV_READ_MAX);

/**
 * struct kva_events - one arena's ring of events.
 * @ref:	the arena's reference and each reader's.
 * @lock:	protects everything below.
 * @buf:	@size bytes of records, each 8-byte aligned; a zero size
 *		field where a record would start means "continued at 0".
 * @size:	bytes of @buf.
 * @head:	offset of the oldest record kept (seq @first_seq).
 * @tail:	where the next record goes.
 * @first_seq:	the oldest record's seq; equal to @next_seq when empty.
 * @next_seq:	the seq the next record gets (the first is 1).
 * @dead:	the arena is destroyed: no record comes after the last.
 * @wait:	readers waiting for a record.
 */
struct kva_events {
	struct kref ref;
	spinlock_t lock;
	u8 *buf;
	u32 size;
	u32 head;
	u32 tail;
	u64 first_seq;
	u64 next_seq;
	bool dead;
	wait_queue_head_t wait;
};

/**
 * struct kva_ev_reader - one events descriptor.
 * @q:		the ring.
 * @mutex:	one read() at a time; protects @seq and @pos.
 * @seq:	the next event to read.
 * @pos:	its offset in the ring, while it is there (@seq >
 *		first_seq; at first_seq the ring's head says).
 * @dom:	0: every event; else the cache domain whose STORED and
 *		REMOVED events it reads (the others' pass it by).
 */
struct kva_ev_reader {
	struct kva_events *q;
	struct mutex mutex;
	u64 seq;
	u32 pos;
	u64 dom;
};

static u32 rec_size(const struct kva_events *q, u32 off)
{
	return *(const u32 *)(q->buf + off);
}

/* The offset of the record at @off, resolving a wrap mark. */
static u32 rec_at(const struct kva_events *q, u32 off)
{
	return off < q->size && rec_size(q, off) ? off : 0;
}

/* Is there room for a record of @len bytes?  (Locked.) */
static bool has_room(const struct kva_events *q, u32 len)
{
	u32 room;

	if (q->first_seq == q->next_seq)
		return true;
	if (q->tail > q->head)
		room = max(q->size - q->tail, q->head);
	else
		room = q->head - q->tail;
	return room >= len + KVA_EV_SLACK;
}

/* Append one record; the oldest go if need be.  (Locked.) */
static void ring_put(struct kva_events *q, struct kvarena_event *ev,
		     const u32 *tokens)
{
	u32 tbytes = ev->nr_tokens * sizeof(u32);
	u32 len = ALIGN(KVA_EV_HDR + tbytes, 8);
	u8 *p;

	lockdep_assert_held(&q->lock);
	/* @head always names a record's start, never a wrap mark. */
	while (q->first_seq < q->next_seq && !has_room(q, len)) {
		q->head += rec_size(q, q->head);
		if (++q->first_seq < q->next_seq)
			q->head = rec_at(q, q->head);
	}
	if (q->first_seq == q->next_seq)
		q->head = q->tail = 0;
	if (q->tail >= q->head && q->size - q->tail < len + KVA_EV_SLACK) {
		*(u32 *)(q->buf + q->tail) = 0;		/* continued at 0 */
		q->tail = 0;
	}
	ev->size = len;
	ev->seq = q->next_seq++;
	p = q->buf + q->tail;
	memcpy(p, ev, KVA_EV_HDR);
	if (tbytes)
		memcpy(p + KVA_EV_HDR, tokens, tbytes);
	memset(p + KVA_EV_HDR + tbytes, 0, len - KVA_EV_HDR - tbytes);
	q->tail += len;
}

static void events_put_one(struct kva_events *q, struct kvarena_event *ev,
			   const u32 *tokens)
{
	spin_lock(&q->lock);
	if (!q->dead)
		ring_put(q, ev, tokens);
	spin_unlock(&q->lock);
	wake_up_interruptible(&q->wait);
}

/* ---- the core's hooks (arena lock held) --------------------------------- */

static void ev_stored(struct kva_core *c, struct kva_core_client *ccl,
		      u32 idx, const u8 *parent, u32 entry)
{
	struct kva_arena *a = container_of(c, struct kva_arena, core);
	struct kva_client *cl = container_of(ccl, struct kva_client, core);
	const struct kva_publish_tokens *t = a->publishing;
	const u32 *tokens = NULL;
	struct kvarena_event ev = {
		.type = KVARENA_EVENT_STORED,
		.time_ns = ktime_get_real_ns(),
		.client_id = cl->id,
		.frame = idx,
		.domain = kva_domain_id(c->frames[idx].dom),
	};

	lockdep_assert_held(&a->lock);
	memcpy(ev.key, c->keys[idx], KVARENA_KEY_LEN);
	if (parent) {
		memcpy(ev.parent, parent, KVARENA_KEY_LEN);
		ev.flags = KVARENA_EVENT_PARENT;
	}
	if (t && t->ids && entry < t->count) {
		ev.nr_tokens = t->per_entry;
		tokens = t->ids + (size_t)entry * t->per_entry;
	}
	events_put_one(a->events, &ev, tokens);
}

static void ev_removed(struct kva_core *c, u32 idx)
{
	struct kva_arena *a = container_of(c, struct kva_arena, core);
	struct kvarena_event ev = {
		.type = KVARENA_EVENT_REMOVED,
		.time_ns = ktime_get_real_ns(),
		.frame = idx,
		.domain = kva_domain_id(c->frames[idx].dom),
	};

	lockdep_assert_held(&a->lock);
	memcpy(ev.key, c->keys[idx], KVARENA_KEY_LEN);
	events_put_one(a->events, &ev, NULL);
}

static const struct kva_core_events kva_core_event_ops = {
	.stored = ev_stored,
	.removed = ev_removed,
};

/* ---- the ring's life ------------------------------------------------------ */

static void events_release(struct kref *ref)
{
	struct kva_events *q = container_of(ref, struct kva_events, ref);

	vfree(q->buf);
	kfree(q);
}

/**
 * kva_events_init() - give a new arena its ring (ARENA_CREATE, before
 * anyone can use the arena).  With events_ring_kib=0 it has none.
 * @a:	the arena.
 *
 * Return: 0 or -ENOMEM.
 */
int kva_events_init(struct kva_arena *a)
{
	u32 kib = clamp(events_ring_kib, 64u, 65536u);
	struct kva_events *q;

	if (!events_ring_kib)
		return 0;
	q = kzalloc(sizeof(*q), GFP_KERNEL_ACCOUNT);
	if (!q)
		return -ENOMEM;
	q->size = kib << 10;
	q->buf = vzalloc(q->size);
	if (!q->buf) {
		kfree(q);
		return -ENOMEM;
	}
	kref_init(&q->ref);
	spin_lock_init(&q->lock);
	init_waitqueue_head(&q->wait);
	q->first_seq = q->next_seq = 1;
	a->events = q;
	a->core.events = &kva_core_event_ops;
	return 0;
}

/**
 * kva_events_clear() - the arena is being destroyed: its last event,
 * CLEARED, then end-of-file for readers that have read it.
 * @a:	the arena, locked, with no client left.
 */
void kva_events_clear(struct kva_arena *a)
{
	struct kvarena_event ev = {
		.type = KVARENA_EVENT_CLEARED,
		.time_ns = ktime_get_real_ns(),
	};
	struct kva_events *q = a->events;

	lockdep_assert_held(&a->lock);
	a->core.events = NULL;
	if (!q)
		return;
	spin_lock(&q->lock);
	if (!q->dead)
		ring_put(q, &ev, NULL);
	q->dead = true;
	spin_unlock(&q->lock);
	wake_up_interruptible(&q->wait);
}

/* kva_events_put() - the arena lets go of its ring (arena free). */
void kva_events_put(struct kva_arena *a)
{
	if (a->events)
		kref_put(&a->events->ref, events_release);
	a->events = NULL;
}

/* ---- token ids of a PUBLISH ---------------------------------------------- */

/**
 * kva_publish_tokens_get() - check a PUBLISH's token fields and copy its
 * token ids in, for the STORED events it makes.
 * @t:		out: the ids (none when the command has no
 *		KVARENA_PUBLISH_TOKENS).
 * @p:		the command, copied in.
 * @how:	KVA_HOW_*: under io_uring's non-blocking issue the buffer is
 *		taken without sleeping and the ids copied with page faults
 *		disabled; either failing is -EAGAIN.
 *
 * Return: 0, -EINVAL (bad fields, too many ids), -EFAULT, -ENOMEM or
 * -EAGAIN.  kva_publish_tokens_put() frees what it took.
 */
int kva_publish_tokens_get(struct kva_publish_tokens *t,
			   const struct kvarena_prefix *p, unsigned int how)
{
	size_t n;
	int ret;

	memset(t, 0, sizeof(*t));
	if (!(p->flags & KVARENA_PUBLISH_TOKENS))
		return p->tokens_per_entry || p->tokens ? -EINVAL : 0;
	if (!p->tokens_per_entry ||
	    p->tokens_per_entry > KVARENA_EVENT_MAX_TOKENS ||
	    (u64)p->count * p->tokens_per_entry > KVARENA_PUBLISH_MAX_TOKENS)
		return -EINVAL;
	n = (size_t)p->count * p->tokens_per_entry * sizeof(u32);
	if (how & KVA_HOW_NONBLOCK)
		t->ids = kmalloc(n, GFP_NOWAIT | __GFP_NOWARN | __GFP_ACCOUNT);
	else
		t->ids = kvmalloc(n, GFP_KERNEL_ACCOUNT);
	if (!t->ids)
		return (how & KVA_HOW_NONBLOCK) ? -EAGAIN : -ENOMEM;
	ret = kva_copy_in(t->ids, u64_to_user_ptr(p->tokens), n, how);
	if (ret) {
		kvfree(t->ids);
		t->ids = NULL;
		return ret;
	}
	t->per_entry = p->tokens_per_entry;
	t->count = p->count;
	return 0;
}

void kva_publish_tokens_put(struct kva_publish_tokens *t)
{
	kvfree(t->ids);
	t->ids = NULL;
}

/* ---- readers ---------------------------------------------------------------- */

/* Is the record at @p of another domain than @r reads? */
static bool ev_foreign(const struct kva_events *q,
		       const struct kva_ev_reader *r, u32 p)
{
	const struct kvarena_event *e = (const void *)(q->buf + p);

	return r->dom && (e->type == KVARENA_EVENT_STORED ||
			  e->type == KVARENA_EVENT_REMOVED) &&
	       e->domain != r->dom;
}

/*
 * Copy whole records for @r, from its position on, into @out (@room
 * bytes): first a LOST record if the ring no longer has its next one.
 * Records of other domains than @r's are passed by.  Returns the bytes
 * copied and the position after them (and after any passed by) in @seq
 * and @pos, or -EINVAL when even the next record does not fit.  (Ring
 * locked.)
 */
static ssize_t ev_collect(const struct kva_events *q,
			  const struct kva_ev_reader *r, u8 *out, size_t room,
			  u64 *seq, u32 *pos)
{
	u64 s = r->seq;
	u32 p = r->pos;
	size_t n = 0;

	if (s < q->first_seq) {
		struct kvarena_event lost = {
			.size = KVA_EV_HDR,
			.type = KVARENA_EVENT_LOST,
			.seq = s,
			.time_ns = ktime_get_real_ns(),
			.lost = q->first_seq - s,
		};

		memcpy(out, &lost, KVA_EV_HDR);
		n = KVA_EV_HDR;
		s = q->first_seq;
	}
	if (s == q->first_seq)
		p = q->head;
	while (s < q->next_seq) {
		u32 len;

		p = rec_at(q, p);
		len = rec_size(q, p);
		if (ev_foreign(q, r, p)) {
			p += len;
			s++;
			continue;
		}
		if (n + len > room)
			break;
		memcpy(out + n, q->buf + p, len);
		n += len;
		p += len;
		s++;
	}
	if (!n && s < q->next_seq)
		return -EINVAL;
	*seq = s;
	*pos = p;
	return n;
}

static bool ev_ready(struct kva_events *q, struct kva_ev_reader *r)
{
	return READ_ONCE(q->next_seq) != r->seq || READ_ONCE(q->dead) ||
	       READ_ONCE(q->first_seq) > r->seq;
}

static ssize_t kva_ev_read(struct file *file, char __user *ubuf,
			   size_t count, loff_t *ppos)
{
	struct kva_ev_reader *r = file->private_data;
	struct kva_events *q = r->q;
	size_t room = min_t(size_t, count, KVA_EV_READ_MAX);
	ssize_t n;
	bool eof;
	u64 seq;
	u32 pos;
	u8 *buf;

	if (count < KVA_EV_HDR)
		return -EINVAL;
	buf = kvmalloc(room, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	if (mutex_lock_interruptible(&r->mutex)) {
		kvfree(buf);
		return -ERESTARTSYS;
	}
	for (;;) {
		spin_lock(&q->lock);
		n = ev_collect(q, r, buf, room, &seq, &pos);
		if (!n) {
			/* Only other domains' records: passed by for good. */
			r->seq = seq;
			r->pos = pos;
		}
		eof = q->dead && r->seq == q->next_seq;
		spin_unlock(&q->lock);
		if (n || eof)
			break;
		if (file->f_flags & O_NONBLOCK) {
			n = -EAGAIN;
			break;
		}
		if (wait_event_interruptible(q->wait, ev_ready(q, r))) {
			n = -ERESTARTSYS;
			break;
		}
	}
	if (n > 0) {
		if (copy_to_user(ubuf, buf, n)) {
			n = -EFAULT;
		} else {
			r->seq = seq;
			r->pos = pos;
		}
	}
	mutex_unlock(&r->mutex);
	kvfree(buf);
	return n;
}

static __poll_t kva_ev_poll(struct file *file, poll_table *wait)
{
	struct kva_ev_reader *r = file->private_data;

	poll_wait(file, &r->q->wait, wait);
	return ev_ready(r->q, r) ? EPOLLIN | EPOLLRDNORM : 0;
}

static int kva_ev_release(struct inode *inode, struct file *file)
{
	struct kva_ev_reader *r = file->private_data;

	kref_put(&r->q->ref, events_release);
	kfree(r);
	return 0;
}

static const struct file_operations kva_events_fops = {
	.owner		= THIS_MODULE,
	.read		= kva_ev_read,
	.poll		= kva_ev_poll,
	.release	= kva_ev_release,
	.llseek		= noop_llseek,
};

/**
 * kva_ioc_events_fd() - KVARENA_IOC_EVENTS_FD: a descriptor that reads the
 * arena's events, for whoever may view the arena: all of them for its
 * owner and administrators, its own cache domain's for anyone else.
 * @cl:		the caller's file (attached or not).
 * @argp:	user pointer to struct kvarena_events_fd.
 * @how:	KVA_HOW_*.
 *
 * Return: 0 with the descriptor in @fd, or -EINVAL, -ENOENT, -EACCES,
 * -EOPNOTSUPP (no events kept), -EMFILE, -ENOMEM, -EFAULT.
 */
long kva_ioc_events_fd(struct kva_client *cl, void __user *argp,
		       unsigned int how)
{
	struct kvarena_events_fd e;
	struct kva_ev_reader *r;
	struct kva_events *q;
	struct kva_arena *a;
	struct file *file;
	int fd, ret;

	if (copy_from_user(&e, argp, sizeof(e)))
		return -EFAULT;
	if (kva_check_events_fd(&e))
		return -EINVAL;
	a = kva_arena_get(e.name);
	if (!a)
		return -ENOENT;
	ret = -EACCES;
	if (!kva_arena_permits(a, KVARENA_ACC_VIEW, how))
		goto err_put_arena;
	ret = -EOPNOTSUPP;
	q = a->events;
	if (!q)
		goto err_put_arena;
	ret = -ENOMEM;
	r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r)
		goto err_put_arena;
	mutex_init(&r->mutex);
	kref_get(&q->ref);
	r->q = q;
	mutex_lock(&a->lock);
	r->dom = kva_viewer_domain(a, cl, how);
	mutex_unlock(&a->lock);
	spin_lock(&q->lock);
	r->seq = (e.flags & KVARENA_EVENTS_OLDEST) ? q->first_seq : q->next_seq;
	r->pos = (e.flags & KVARENA_EVENTS_OLDEST) ? q->head : q->tail;
	spin_unlock(&q->lock);

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_free_reader;
	}
	file = anon_inode_getfile("[kvarena-events]", &kva_events_fops, r,
				  O_RDONLY | ((e.flags & KVARENA_EVENTS_NONBLOCK) ?
					      O_NONBLOCK : 0));
	if (IS_ERR(file)) {
		ret = PTR_ERR(file);
		goto err_put_fd;
	}
	e.fd = fd;
	if (copy_to_user(argp, &e, sizeof(e))) {
		fput(file);		/* its release frees the reader */
		put_unused_fd(fd);
		kva_arena_put(a);
		return -EFAULT;
	}
	fd_install(fd, file);
	kva_arena_put(a);
	return 0;

err_put_fd:
	put_unused_fd(fd);
err_free_reader:
	kref_put(&q->ref, events_release);
	kfree(r);
err_put_arena:
	kva_arena_put(a);
	return ret;
}
