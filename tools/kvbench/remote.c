// SPDX-License-Identifier: GPL-2.0
/*
 * kvbench remote --redis HOST:PORT[,...] - what a block from the remote
 * tier costs, against recomputing it and against Redis's own client.
 *
 * Blocks of the Llama-3-8B geometry (32 layers, 8 KV heads of 128, bf16:
 * 128 KiB a token, 16 tokens in a 2 MiB frame) are written to the server
 * or cluster in the format of the remote tier (tools/common/kvblock.c),
 * then fetched as kvarenactl remote fetches them: one pipelined batch of
 * GETs through the cluster client (tools/common/rcluster.c), every value
 * checked (MAC, geometry, CRC32C) and copied into a frame.  Beside it, in
 * the same run:
 *
 *  - recompute: kvarena's own prefill kernel (kernels/, the CPU path)
 *    over the same tokens, every layer, causal, 32 query heads - the
 *    attention alone, a lower bound of a real recompute, which also runs
 *    the projections and the MLP (kvsim models the whole forward);
 *  - redis-benchmark, Redis's own C client, GETs of values of the same
 *    size (one connection, the same pipeline depth), against the same
 *    servers: the bandwidth the store gives any client here.
 *
 * Prints the fetch's GB/s and ratios: fetch / recompute (below 1: the
 * cluster wins) and fetch GB/s / redis-benchmark GB/s (1: as fast as
 * Redis's own client).  Best of --reps.
 */
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kvarena/layout.h>

#include "kvattn.h"
#include "kvbench.h"

#ifndef KVB_REMOTE

int kvbench_remote_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "kvbench remote: built without hiredis (Debian's libhiredis-dev)\n");
	return 2;
}

#else

#include "kvblock.h"
#include "rcluster.h"

struct ropts {
	const char *redis;
	const char *bench;	/* redis-benchmark */
	unsigned int blocks, reps, threads;
	uint64_t frame_size;
	bool json;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: kvbench remote --redis HOST:PORT[,...] [--blocks N] [--reps N]\n"
"                      [--frame-size BYTES] [--threads N]\n"
"                      [--redis-benchmark PATH] [--json]\n"
"  --blocks N       blocks fetched in one batch (default 64, at most 64:\n"
"                   one request of an engine)\n"
"  --frame-size B   bytes per block (default 2097152: 16 tokens)\n"
"  --threads N      the prefill kernel's threads (default: every CPU)\n");
}

static int parse(int argc, char **argv, struct ropts *o)
{
	*o = (struct ropts){ .blocks = 64, .reps = 5, .frame_size = 2u << 20,
			     .bench = "redis-benchmark" };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--json")) {
			o->json = true;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		}
		if (!v)
			return -1;
		i++;
		if (!strcmp(a, "--redis"))
			o->redis = v;
		else if (!strcmp(a, "--redis-benchmark"))
			o->bench = v;
		else if (!strcmp(a, "--blocks"))
			o->blocks = (unsigned int)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--reps"))
			o->reps = (unsigned int)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--threads"))
			o->threads = (unsigned int)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--frame-size"))
			o->frame_size = strtoull(v, NULL, 10);
		else
			return -1;
	}
	if (!o->redis || !o->blocks || o->blocks > 64 || !o->reps ||
	    o->frame_size < (128u << 10) || o->frame_size % (128u << 10))
		return -1;
	return 0;
}

/* Best-of seconds of the prefill kernel over @tokens, every layer. */
static int recompute_time(const struct ropts *o, uint32_t tokens,
			  double *best)
{
	struct kva_geometry g = { .layers = 32, .kv_heads = 8, .head_dim = 128,
				  .dtype = KVA_DTYPE_BF16,
				  .frame_size = o->frame_size };
	struct kva_attn_config cfg = { .threads = o->threads };
	const uint32_t q_heads = 32;
	struct kva_attn *h = NULL;
	size_t nq, frames;
	void *kv = NULL;
	float *q = NULL, *out = NULL;
	int err;

	err = kva_geometry_init(&g);
	if (err)
		return err;
	frames = (tokens + g.tokens_per_frame - 1) / g.tokens_per_frame;
	nq = (size_t)tokens * q_heads * g.head_dim;
	kv = aligned_alloc(4096, frames * g.frame_size);
	q = malloc(nq * sizeof(*q));
	out = malloc(nq * sizeof(*out));
	err = -ENOMEM;
	if (!kv || !q || !out)
		goto out;
	/* Small bf16 values: their top halves of floats near 0.01. */
	for (size_t i = 0; i < frames * g.frame_size / 2; i++)
		((uint16_t *)kv)[i] = (uint16_t)(0x3c00 + (i * 2654435761u) % 256);
	for (size_t i = 0; i < nq; i++)
		q[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
	err = kva_attn_create(&h, &cfg);
	if (err)
		goto out;
	*best = INFINITY;
	for (unsigned int r = 0; r < o->reps && !err; r++) {
		double t0 = kvb_now_s();

		for (uint32_t l = 0; l < g.layers && !err; l++) {
			struct kva_prefill_seq s = { .base = kv, .tokens = tokens,
						     .q_tokens = tokens };
			struct kva_attn_params p = {
				.geom = &g, .layer = l, .q_heads = q_heads,
				.scale = 1.0f / sqrtf((float)g.head_dim),
			};

			err = kva_attn_prefill(h, &p, &s, 1, q, out);
		}
		kvb_keep_best(best, t0);
	}
out:
	kva_attn_destroy(h);
	free(kv);
	free(q);
	free(out);
	return err;
}

/*
 * redis-benchmark's GB/s: GETs of one value of @size bytes (its SETs
 * first make it), one connection, @pipeline deep (--cluster for a
 * cluster); best of the runs; 0 if it cannot run.
 */
static double peer_gbs(const struct ropts *o, size_t size, unsigned int n,
		       unsigned int pipeline, bool cluster)
{
	char cmd[1024], host[256], line[512];
	const char *colon;
	double best = 0;
	FILE *p;

	/* The first server named. */
	snprintf(host, sizeof(host), "%.*s", (int)strcspn(o->redis, ","), o->redis);
	colon = strrchr(host, ':');
	if (!colon)
		return 0;
	host[colon - host] = '\0';
	for (unsigned int r = 0; r < o->reps; r++) {
		snprintf(cmd, sizeof(cmd),
			 "'%s' -h '%s' -p %s%s -c 1 -P %u -d %zu -n %u -t set,get --csv 2>/dev/null",
			 o->bench, host, colon + 1, cluster ? " --cluster" : "",
			 pipeline, size, n);
		p = popen(cmd, "r");
		if (!p)
			return 0;
		while (fgets(line, sizeof(line), p)) {
			double rps;

			/* "GET","12345.67",... */
			if (sscanf(line, "\"GET\",\"%lf\"", &rps) == 1 &&
			    isfinite(rps) && rps * size / 1e9 > best)
				best = rps * size / 1e9;
		}
		pclose(p);
	}
	return best;
}

int kvbench_remote_main(int argc, char **argv)
{
	struct kvb_geometry g = { .layers = 32, .kv_heads = 8, .head_dim = 128,
				  .dtype = KVA_DTYPE_BF16 };
	static const char sec[] = "kvbench remote secret, 32 bytes";
	struct rc_cmd cmds[64];
	const char *argv_[64][3];
	size_t argvlen[64][3];
	char keys[64][KVB_KEY_LEN], err[256];
	uint8_t chain[64][32];
	struct kvb_secret s;
	struct rcluster *rc;
	struct ropts o;
	uint8_t *vals, *frame;
	size_t vsize;
	double t_get = INFINITY, t_fetch = INFINITY, t_pre = INFINITY, peer;
	unsigned int bad = 0;
	bool cluster;
	uint32_t tokens;
	int ret;

	if (parse(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	/* As kvarenactl remote does: replies of MiBs keep their memory. */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	g.frame_size = o.frame_size;
	g.tokens = (uint32_t)(o.frame_size / (128u << 10));
	tokens = g.tokens * o.blocks;
	vsize = KVB_HEADER_SIZE + o.frame_size;
	kvb_secret_init(&s, sec, sizeof(sec) - 1);
	ret = rc_open(&rc, o.redis, 60000, NULL, NULL, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "kvbench remote: %s: %s\n", o.redis, err);
		return 1;
	}
	vals = malloc(vsize * o.blocks);
	frame = malloc(o.frame_size);
	if (!vals || !frame) {
		fprintf(stderr, "kvbench remote: out of memory\n");
		return 1;
	}
	/* The blocks: random bytes, stored as the agent stores them. */
	for (unsigned int i = 0; i < o.blocks; i++) {
		uint8_t *v = vals + i * vsize;

		for (size_t j = 0; j < o.frame_size; j++)
			v[KVB_HEADER_SIZE + j] = (uint8_t)rand();
		for (int j = 0; j < 32; j++)
			chain[i][j] = (uint8_t)rand();
		kvb_encode(v, &s, &g, chain[i], i ? chain[i - 1] : NULL,
			   "kvbench", 0, v + KVB_HEADER_SIZE);
		kvb_key(&s, &g, chain[i], keys[i]);
		argv_[i][0] = "SET";
		argv_[i][1] = keys[i];
		argv_[i][2] = (const char *)v;
		argvlen[i][0] = 3;
		argvlen[i][1] = strlen(keys[i]);
		argvlen[i][2] = vsize;
		cmds[i] = (struct rc_cmd){ .argc = 3, .argv = argv_[i],
					   .argvlen = argvlen[i], .key_arg = 1 };
	}
	if (rc_exec(rc, cmds, o.blocks) != o.blocks) {
		fprintf(stderr, "kvbench remote: SET failed: %s\n", rc_error(rc));
		return 1;
	}
	for (unsigned int i = 0; i < o.blocks; i++) {
		freeReplyObject(cmds[i].reply);
		argv_[i][0] = "GET";
		cmds[i].argc = 2;
	}
	/* The fetch: GETs alone, then GETs with the checks and the copy. */
	for (unsigned int r = 0; r < 2 * o.reps; r++) {
		bool full = r >= o.reps;
		double t0 = kvb_now_s();

		rc_exec(rc, cmds, o.blocks);
		for (unsigned int i = 0; i < o.blocks; i++) {
			redisReply *rep = cmds[i].reply;

			if (full) {
				if (!rep || rep->type != REDIS_REPLY_STRING ||
				    kvb_check((const uint8_t *)rep->str, rep->len,
					      &s, &g, chain[i], NULL) != KVB_OK)
					bad++;
				else
					memcpy(frame, rep->str + KVB_HEADER_SIZE,
					       o.frame_size);
			}
			freeReplyObject(rep);
		}
		kvb_keep_best(full ? &t_fetch : &t_get, t0);
	}
	cluster = !rc_standalone(rc);
	rc_close(rc);
	ret = recompute_time(&o, tokens, &t_pre);
	if (ret) {
		fprintf(stderr, "kvbench remote: prefill: %s\n", strerror(-ret));
		return 1;
	}
	peer = peer_gbs(&o, vsize, 4 * o.blocks, o.blocks, cluster);
	if (o.json) {
		printf("{\"bench\":\"remote\",\"blocks\":%u,\"frame_size\":%llu,\"tokens\":%u,"
		       "\"get_s\":%.6f,\"fetch_s\":%.6f,\"recompute_s\":%.6f,"
		       "\"fetch_gbs\":%.3f,\"peer_gbs\":%.3f,\"bad\":%u}\n",
		       o.blocks, (unsigned long long)o.frame_size, tokens,
		       t_get, t_fetch, t_pre, vsize * o.blocks / t_fetch / 1e9,
		       peer, bad);
	} else {
		printf("remote: %u blocks of Llama-3-8B KV (%u tokens, %llu bytes each) from %s\n",
		       o.blocks, g.tokens, (unsigned long long)o.frame_size,
		       o.redis);
		kvb_line_gbs("GET", t_get, vsize * o.blocks, 0, NULL);
		kvb_line_gbs("fetch+check", t_fetch, vsize * o.blocks, 0, NULL);
		printf("  recompute      %9.3f ms  (kvarena's prefill kernel, %u tokens x 32 layers, attention only)\n",
		       t_pre * 1e3, tokens);
		printf("  fetch / recompute: %.3fx (below 1: the remote tier wins)\n",
		       t_fetch / t_pre);
		if (peer > 0)
			printf("  fetch GB/s / redis-benchmark GB/s: %.2f (%.2f GB/s, GETs of %zu bytes, -c 1 -P %u)\n",
			       vsize * o.blocks / t_fetch / 1e9 / peer, peer,
			       vsize, o.blocks);
		else
			printf("  redis-benchmark: could not run %s\n", o.bench);
		if (bad)
			printf("  %u values failed their checks\n", bad);
	}
	free(vals);
	free(frame);
	return bad ? 1 : 0;
}

#endif /* KVB_REMOTE */
