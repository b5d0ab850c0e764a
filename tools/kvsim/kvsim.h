/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvsim - a trace-driven simulator of a serving engine's KV memory.
 *
 * The pieces:
 *
 *   sim.c      the engines' step loop (one clock for engines sharing a
 *              GPU, one per node with --nodes): arrivals, decode growth with
 *              newest-first preemption, first-come-first-served admission
 *              with prefill, and the figures of every step
 *   tokens.c   the token-granular policies: contiguous-max,
 *              contiguous-oracle, pow2
 *   blocks.c   the block-granular policies' sequences (paged:B, kvarena):
 *              block tables, prefix keys, fill accounting; and paged:B's
 *              pool with its in-engine prefix cache (vLLM's model)
 *   arena.c    kvarena's pool: the core allocator of driver/core.c, one
 *              client per engine, and its prefix cache
 *   tier.c     the lower tiers below an arena: host memory that keeps the
 *              cached frames the arena reclaims, and preempted sequences
 *              swapped out; a disk below it for what it drops; a remote
 *              tier every node shares (a Redis cluster's)
 *   cost.c     the timing model: prefill FLOPs and copies, per step
 *   report.c   the table, --json and --svg
 *   main.c     options, traces, runs
 */
#ifndef KVSIM_H
#define KVSIM_H

#include <stdbool.h>
#include <stdint.h>

#include <kvarena/layout.h>

#include "kvtools.h"

#define KVSIM_MAX_ENGINES	16
#define KVSIM_MAX_POLICIES	16

enum pol_kind {
	POL_CONTIG_MAX,		/* reserve max_model_len at admission */
	POL_CONTIG_ORACLE,	/* reserve prompt + output at admission */
	POL_POW2,		/* reserve the next power of two, double */
	POL_PAGED,		/* vLLM: blocks of B tokens, own prefix cache */
	POL_KVARENA,		/* frames of the core allocator */
};

/* struct policy.flags (POL_KVARENA only) */
#define POL_HOST	(1u << 0)	/* cached frames demoted to the tier */
#define POL_SWAP	(1u << 1)	/* preempted sequences swapped to it */
#define POL_REMOTE	(1u << 2)	/* and a remote tier below (needs HOST) */

struct policy {
	enum pol_kind kind;
	uint32_t block_tokens;	/* POL_PAGED */
	uint32_t flags;		/* POL_HOST, POL_SWAP */
	char name[32];
};

/* Memory arrangement of several engines. */
enum layout {
	LAYOUT_SINGLE,		/* one engine */
	LAYOUT_STATIC,		/* each engine its own 1/N of the memory */
	LAYOUT_SHARED,		/* one arena, a core client per engine */
	LAYOUT_NODES,		/* --nodes: each engine a node, a GPU's
				 * memory and host tier of its own, a clock
				 * of its own */
};

/* How blocks reach the remote tier (--remote-write). */
enum remote_write {
	REMOTE_ON_DEMOTE,	/* when the host tier takes them: the agent
				 * below a GPU arena */
	REMOTE_ON_PUBLISH,	/* when they are published */
};

/**
 * struct req - one request as the engines see it.
 * @arrival_us:	microseconds after the engine's first arrival.
 * @prompt:	prompt tokens.
 * @output:	tokens to generate, cut so that prompt + output stays
 *		within max_model_len.
 * @hash:	the trace's hash_ids (512-token blocks), @nr_hash of them.
 * @chain:	chained keys of the hash blocks (keys.c), @nr_hash of them.
 */
struct req {
	int64_t arrival_us;
	uint32_t prompt;
	uint32_t output;
	uint32_t nr_hash;
	const uint64_t *hash;
	uint64_t *chain;
};

/* One engine's requests, in arrival order. */
struct workload {
	struct req *req;
	uint32_t nr;
	uint32_t rejected;	/* prompts over max_model_len */
	uint64_t prompt_tokens;	/* sum over req */
};

/**
 * struct seq - a request in an engine: waiting, running or done.
 * @tokens:	KV tokens held (0 while waiting).
 * @generated:	output tokens produced so far (kept across preemption).
 * @reserved:	token policies: tokens reserved.
 * @ids:	block policies: the block table, @nr_ids entries (block
 *		index in the low 32 bits; a core handle for kvarena).
 * @nr_hit:	blocks of @ids that the arena's prefix cache held (shared,
 *		not written by this sequence).
 * @nr_found:	the prompt's leading blocks found, in the arena or below
 *		(the rest was computed).
 * @shared:	block policies: per entry of @ids, whether it is one of
 *		those (@cap_ids of them).
 * @swapped:	frames of it in the lower tier's swap space while it waits
 *		after a preemption (POL_SWAP), 0 otherwise.
 * @swapped_tokens: the tokens they hold.
 * @admitted:	first admission done.
 */
struct seq {
	const struct req *req;
	uint32_t tokens;
	uint32_t generated;
	uint64_t reserved;
	uint64_t *ids;
	uint32_t nr_ids;
	uint32_t cap_ids;
	uint32_t nr_hit;
	uint32_t nr_found;
	uint8_t *shared;
	uint32_t swapped;
	uint32_t swapped_tokens;
	bool admitted;
};

struct engine;
struct pool;

/**
 * struct admission - what an admission took from where, in tokens.
 * @hit:	served by the prefix cache: the arena's and the lower tier's.
 * @hit_host:	of @hit, copied up from the host tier.
 * @hit_disk:	of @hit, copied up from the disk below it.
 * @hit_remote:	of @hit, fetched from the remote tier (into host memory,
 *		then copied up).
 * @swapped:	copied back from the swap space (a swapped sequence).
 * @compute_from, @compute_to: the positions prefilled by computing;
 *		the rest of [0, tokens) came from @hit and @swapped.
 */
struct admission {
	uint32_t hit;
	uint32_t hit_host;
	uint32_t hit_disk;
	uint32_t hit_remote;
	uint32_t swapped;
	uint32_t compute_from;
	uint32_t compute_to;
};

/**
 * struct pol_ops - what a policy does to one sequence.
 * @fits:	whether the request could ever run in the engine's memory
 *		(at its full length, alone).
 * @admit:	take memory for @s->req's prompt plus the tokens already
 *		generated (@tokens in all), after looking the prompt up in
 *		the prefix cache; fill *@a with where the tokens came from.
 *		All or nothing: -ENOSPC changes nothing.
 * @prefilled:	the prompt's KV is written: publish it.
 * @grow:	room for one more token; -ENOSPC changes nothing.
 * @swap_out:	NULL, or before a preemption's release: copy what the
 *		prefix cache will not keep of @s to the lower tier, if it
 *		has room (sets @s->swapped).
 * @release:	give everything back (completion or preemption).
 */
struct pol_ops {
	bool (*fits)(const struct engine *e, const struct req *q);
	int (*admit)(struct engine *e, struct seq *s, uint32_t tokens,
		     struct admission *a);
	void (*prefilled)(struct engine *e, struct seq *s);
	int (*grow)(struct engine *e, struct seq *s);
	void (*swap_out)(struct engine *e, struct seq *s);
	void (*release)(struct engine *e, struct seq *s);
};

/**
 * struct bpool_ops - where a block policy's blocks come from.
 * @alloc:	@n new private blocks for engine @eng, all or nothing
 *		(-ENOSPC); cached prefix blocks are reclaimed first.
 * @put:	engine @eng lets go of blocks it took with @alloc or
 *		@lookup (one call per block taken).
 * @lookup:	the longest leading run of @keys in the prefix cache, each
 *		block of it taken by engine @eng; returns the run's length.
 *		(With a lower tier, blk_admit() calls it again past the
 *		keys the tier holds.)
 * @publish:	put the engine's blocks @ids under @keys (a key already
 *		present keeps its block).
 * @fini:	free the pool's state.
 */
struct bpool_ops {
	int (*alloc)(struct pool *p, int eng, uint64_t *ids, uint32_t n);
	void (*put)(struct pool *p, int eng, const uint64_t *ids, uint32_t n);
	uint32_t (*lookup)(struct pool *p, int eng, const uint64_t *keys,
			   uint32_t n, uint64_t *ids);
	void (*publish)(struct pool *p, int eng, const uint64_t *keys,
			const uint64_t *ids, uint32_t n);
	void (*fini)(struct pool *p);
};

#define KVSIM_NONE	0xffffffffu	/* no block or entry: end of a list */

/*
 * struct keyidx - an open-addressing index of entries by 64-bit key:
 * @table holds entry + 1 (0: empty), @key[entry] each entry's key,
 * linear probing, @mask + 1 slots (a power of two, at least twice the
 * entries).  Used by paged:B's prefix cache and the lower tier.
 */
struct keyidx {
	uint32_t *table;
	uint64_t mask;
	const uint64_t *key;
};

int keyidx_init(struct keyidx *x, uint32_t entries, const uint64_t *key);
void keyidx_fini(struct keyidx *x);
uint32_t keyidx_get(const struct keyidx *x, uint64_t key);
void keyidx_put(struct keyidx *x, uint64_t key, uint32_t entry);
void keyidx_del(struct keyidx *x, uint64_t key);

/* struct lru - a list of entries by index, oldest at @head. */
struct lru {
	uint32_t *prev, *next;
	uint32_t head, tail, nr;
};

int lru_init(struct lru *l, uint32_t entries);
void lru_fini(struct lru *l);
void lru_unlink(struct lru *l, uint32_t e);
void lru_push(struct lru *l, uint32_t e);

/**
 * struct pool - one memory: an engine's own, or an arena several share.
 * @pol:	the policy its engines run.
 * @bytes:	its size.
 * @cap_tokens:	token policies: tokens it holds.
 * @used_tokens: token policies: tokens reserved.
 * @nr_blocks:	block policies: blocks (frames) in it.
 * @nr_tracked:	block policies: the blocks the allocator and the
 *		per-block tables are made for: @nr_blocks, or fewer where
 *		the trace could never use them all (see pool_reach());
 *		block indices stay below it.
 * @block_tokens: tokens per block (T_f for kvarena).
 * @block_bytes: bytes per block.
 * @ops:	block policies: the allocator.
 * @priv:	its state.
 * @refs:	block policies: sequences (of any engine) mapping each block.
 * @fill:	block policies: tokens written in each block.
 * @held_blocks, @filled_tokens: blocks mapped by some sequence and the
 *		tokens in them (each counted once).
 * @width:	GPUs a block spans (a gang's; 1 else): kvarena's frames
 *		are @width frames of the geometry, one on each GPU, holding
 *		@width times the tokens (each GPU the 1/@width of the KV
 *		heads of a tensor-parallel engine).
 * @nr_engines:	engines drawing on it.
 * @host_bytes:	the size of its lower tier (POL_HOST, POL_SWAP).
 * @disk_bytes:	the size of the disk below that (POL_HOST).
 * @tier:	the lower tier below it (POL_HOST, POL_SWAP), or NULL.
 */
struct pool {
	const struct policy *pol;
	uint64_t bytes;
	uint64_t cap_tokens;
	uint64_t used_tokens;
	uint32_t nr_blocks;
	uint32_t nr_tracked;
	uint32_t block_tokens;
	uint64_t block_bytes;
	const struct bpool_ops *ops;
	void *priv;
	uint32_t *refs;
	uint32_t *fill;
	uint64_t held_blocks;
	uint64_t filled_tokens;
	uint32_t width;
	int nr_engines;
	uint64_t host_bytes;
	uint64_t disk_bytes;
	struct tier *tier;
};

/**
 * struct tier - the lower tier below one arena: host memory of @cap
 * frames.  Cached frames the arena reclaims are demoted into it (copied
 * down) instead of dropped, and stay there, inclusive of the arena: a
 * frame promoted back is still below, so reclaiming it again copies
 * nothing.  Its own LRU drops the oldest when it is full.  Swapped
 * sequences' frames are pinned in it until their sequence comes back.
 * @cap:	frames of host memory.
 * @swapped:	frames pinned by swapped-out sequences.
 * @nr:		cached frames in it (keys of @key).
 * @nr_entries:	entries @key can hold (at most @cap: never more than
 *		the trace's keyed blocks, see tier_init()).
 * @key, @idx, @lru: the entries, their key index and their LRU.
 * @free:	unused entries, @nr_free of them.
 * @demoted, @dropped, @promoted: frames copied down, dropped from the
 *		tier to make room, copied up, ever.
 * @copy_bytes:	bytes the copies of the current step move over the
 *		tier's link to the level above (both ways); the step loop
 *		takes them.
 * @below:	the disk tier below a host tier, or NULL: what the host
 *		tier drops is demoted there, and found there by lookups.
 * @remote:	the remote tier every node's host tier shares, or NULL:
 *		found by lookups past the host tier and the disk; what it
 *		finds lands in the host tier (as the agent's fetch does)
 *		and is copied up from there.
 * @store_on_demote: the host tier stores what it takes into @remote
 *		(REMOTE_ON_DEMOTE).
 * @fetches:	of the remote tier: its round trips (a batch of up to
 *		64 keys each), ever.
 * @written:	of the remote tier: bytes stored into it, ever (off the
 *		engines' path: the agent's).
 */
struct tier {
	uint64_t cap;
	uint64_t swapped;
	uint32_t nr;
	uint32_t nr_entries;
	uint64_t *key;
	struct keyidx idx;
	struct lru lru;
	uint32_t *free;
	uint32_t nr_free;
	uint64_t demoted, dropped, promoted;
	uint64_t frame_bytes;
	uint64_t copy_bytes;
	struct tier *below;
	struct tier *remote;
	bool store_on_demote;
	uint64_t fetches;
	uint64_t written;
};

/* One point of the --svg series: means over a time bucket. */
struct sample {
	float running;
	float held_gib;
	float filled_gib;
};

/**
 * struct stats - what an engine (or all of them) reports.
 */
struct stats {
	uint64_t steps;			/* steps with work */
	double span_s;			/* first arrival to last done */
	double sum_running;		/* running sequences, per step */
	double sum_held;		/* bytes held by sequences, per step */
	double sum_filled;		/* bytes holding tokens, per step */
	uint32_t peak_running;
	uint32_t completed;
	uint32_t rejected;
	uint64_t preemptions;
	uint64_t recomputed_tokens;
	uint64_t prompt_tokens;		/* of the requests admitted */
	uint64_t hit_tokens;		/* of those, from the cache */
	uint64_t hit_host_tokens;	/* of those, from the host tier */
	uint64_t hit_disk_tokens;	/* of those, from the disk */
	uint64_t hit_remote_tokens;	/* of those, from the remote tier */
	uint64_t computed_tokens;	/* prefilled by computing, all */
	uint64_t swaps;			/* preemptions swapped out */
	uint64_t swapped_tokens;	/* tokens copied back instead of
					 * recomputed */
	uint64_t copy_bytes;		/* moved between arena and host */
	uint64_t disk_bytes;		/* moved between host and disk */
	uint64_t remote_bytes;		/* fetched from the remote tier */
	double busy_s;			/* prefill compute and copies */
	int64_t *delay_us;		/* admission delays, @nr_delay */
	int64_t *ttft_us;		/* arrival to first token, @nr_delay */
	uint32_t nr_delay;
	double admit_p50_ms, admit_p99_ms;
	double ttft_p50_ms, ttft_p99_ms;
	double token_share, mean_running, prefix_hit_share;
	double host_hit_share;
	double disk_hit_share;
	double remote_hit_share;
};

/**
 * struct engine - one serving engine.
 */
struct engine {
	int id;				/* engine number */
	int client;			/* its client number in its pool */
	const struct config *cfg;
	struct pool *pool;
	const struct pol_ops *ops;
	const struct workload *w;
	struct seq *seqs;		/* one per request */
	uint32_t next_arrival;		/* index into w->req */
	struct seq **waiting;		/* ring of @cap_waiting */
	uint32_t wait_head, nr_waiting, cap_waiting;
	struct seq **running;		/* oldest first */
	uint32_t nr_running;
	bool preempted;			/* in this step */
	uint32_t max_blocks;		/* block policies: the most it may
					 * hold */
	uint32_t *refs;			/* block policies: this engine's
					 * sequences mapping each block */
	uint64_t held_blocks;		/* blocks with refs > 0 */
	uint64_t filled_tokens;		/* tokens in them */
	uint64_t held_tokens_resv;	/* token policies: reserved */
	uint64_t filled_tokens_resv;	/* token policies: held */
	double step_flops;		/* prefill work of this step */
	uint64_t step_copy;		/* bytes its tier copies moved */
	uint64_t step_disk;		/* of those, to and from disk */
	uint64_t step_net;		/* fetched from the remote tier */
	uint64_t step_rtt;		/* its round trips */
	uint32_t *first;		/* st.ttft_us of the requests first
					 * admitted in this step */
	uint32_t nr_first;
	struct stats st;
};

/* The simulation's settings. */
struct config {
	struct kva_geometry g;		/* frame_size: the arena's frames */
	uint64_t kv_bytes;
	uint64_t max_len;
	int64_t step_us;
	uint64_t prefill_budget;	/* tokens per step, 0: unlimited */
	uint32_t max_seqs;		/* running per engine, 0: unlimited */
	uint64_t engine_min;		/* shared arena: bytes per engine */
	uint64_t engine_max;
	uint64_t bucket_us;		/* --svg sample width */
	uint64_t host_bytes;		/* the lower tier of every arena */
	double flops_per_s;		/* prefill rate; 0: no timing model */
	double copy_bytes_per_s;	/* between arena and host */
	uint64_t disk_bytes;		/* the disk below the host tier */
	double disk_bytes_per_s;	/* between host and disk */
	uint64_t remote_bytes;		/* the remote tier, all nodes' */
	double remote_bytes_per_s;	/* a node's fetches from it */
	int64_t remote_rtt_us;		/* one round trip of a fetch */
	enum remote_write remote_write;
	double params;			/* the model's parameters */
	uint32_t q_heads;		/* query heads */
	uint32_t gpus;			/* --tp: the GPUs (0: one) */
	uint32_t tp[KVSIM_MAX_ENGINES];	/* --tp: each engine's degree */
};

/**
 * struct run - one policy over all the engines.
 */
struct run {
	const struct policy *pol;
	enum layout layout;
	const struct config *cfg;
	int nr_engines;
	struct engine eng[KVSIM_MAX_ENGINES];
	struct pool pools[KVSIM_MAX_ENGINES];
	int nr_pools;
	struct tier remote;		/* POL_REMOTE: shared by the pools */
	bool has_remote;
	struct stats total;
	double wall_s;
	struct sample *samples;
	uint32_t nr_samples;
	const char *error;		/* why the policy could not run */
};

/* sim.c */
int sim_run(struct run *r, const struct workload *w);
void sim_free(struct run *r);
void stats_finish(struct stats *st, double span_s);

/* tokens.c */
extern const struct pol_ops tokens_ops;
int tokens_pool_init(struct pool *p, const struct config *cfg);

/* blocks.c */
extern const struct pol_ops blocks_ops;
int paged_pool_init(struct pool *p, const struct config *cfg, uint32_t B,
		    const struct workload *w, int nr_w);
uint64_t pool_reach(const struct workload *w, int nr_w,
		    uint32_t block_tokens, uint64_t *keyed);
int bpool_common_init(struct pool *p);
void bpool_common_fini(struct pool *p);
uint32_t seq_prompt_keys(const struct seq *s, uint32_t block_tokens,
			 uint64_t *keys, uint32_t max);

/* tier.c */
int tier_init(struct tier *t, uint64_t bytes, uint64_t frame_bytes,
	      uint64_t keyed);
void tier_fini(struct tier *t);
void tier_demote(struct tier *t, uint64_t key);
int tier_level(const struct tier *t, uint64_t key);
void tier_touch(struct tier *t, uint64_t key);
void tier_promote(struct tier *t, uint32_t n, uint32_t disk,
		  uint32_t remote);
void tier_store(struct tier *t, uint64_t key);
bool tier_swap_out(struct tier *t, uint32_t frames);
void tier_swap_in(struct tier *t, uint32_t frames);

/* cost.c */
double cost_prefill_flops(const struct config *cfg, uint64_t from,
			  uint64_t to);
int64_t cost_step_us(const struct config *cfg, double flops,
		     uint64_t copy_bytes, uint64_t disk_bytes,
		     uint64_t net_bytes, uint64_t round_trips);

/* arena.c */
int arena_pool_init(struct pool *p, const struct config *cfg,
		    int nr_engines, uint32_t min_frames, uint32_t max_frames,
		    const struct workload *w);

/* keys.c */
void keys_chain(struct req *r);
uint64_t key_of_block(const struct req *r, uint32_t block_tokens,
		      uint32_t j);

/* report.c */
void report_table(const struct run *runs, int nr, int per_engine);
void report_tiers(const struct run *runs, int nr, int per_engine);
void report_json(const struct run *runs, int nr, int per_engine);
int report_svg(const char *path, const struct run *runs, int nr,
	       const char *title);

#endif /* KVSIM_H */
