// SPDX-License-Identifier: GPL-2.0
/*
 * rc_repl SEEDS TIMEOUT_MS - the cluster client (tools/common/rcluster.c)
 * driven line by line, for cluster_test.py: one client that lives through
 * the test's failovers, migrations and partitions, as the remote tier's
 * agent does.  Each command is one batch; each answer one line of
 * NAME=VALUE words.
 *
 *   set PREFIX N SIZE SEED   SET PREFIX:0..N-1 to SIZE bytes each
 *   get PREFIX N SIZE SEED   GET them, each checked byte for byte
 *   stats                    the client's counters
 *   refresh                  CLUSTER SLOTS again
 *   error                    the client's last error, in words
 *
 * set/get answer ok= (replies as asked: OK, or the right bytes), nil=
 * (no such key), bad= (other bytes, or an error reply), then one count
 * per errno of the commands that got no reply (etimedout=, econnrefused=,
 * eio=, eagain=, eloop=), and ms= the batch's wall time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rcluster.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void fill(unsigned char *p, size_t size, unsigned int seed,
		 unsigned int i)
{
	for (size_t j = 0; j < size; j++)
		p[j] = (unsigned char)(seed * 31 + i * 7 + j * 13 + (j >> 8));
}

static const char *err_name(int err)
{
	switch (err) {
	case -ETIMEDOUT:	return "etimedout";
	case -ECONNREFUSED:	return "econnrefused";
	case -EIO:		return "eio";
	case -EAGAIN:		return "eagain";
	case -ELOOP:		return "eloop";
	default:		return "eother";
	}
}

static void batch(struct rcluster *c, int is_set, const char *prefix,
		  unsigned int n, size_t size, unsigned int seed)
{
	static const char *names[] = { "etimedout", "econnrefused", "eio",
				       "eagain", "eloop", "eother" };
	struct rc_cmd *cmds = calloc(n, sizeof(*cmds));
	const char **argv = calloc(3 * (size_t)n, sizeof(*argv));
	size_t *argvlen = calloc(3 * (size_t)n, sizeof(*argvlen));
	char (*keys)[96] = calloc(n, sizeof(*keys));
	unsigned char *want = malloc(size ? size : 1);
	unsigned char *vals = malloc(is_set ? size * n + 1 : 1);
	unsigned int ok = 0, nil = 0, bad = 0, errs[6] = { 0 };
	double t0;

	if (!cmds || !argv || !argvlen || !keys || !want || !vals) {
		printf("error=enomem\n");
		exit(1);
	}
	for (unsigned int i = 0; i < n; i++) {
		snprintf(keys[i], sizeof(keys[i]), "%s:%u", prefix, i);
		argv[3 * i] = is_set ? "SET" : "GET";
		argvlen[3 * i] = 3;
		argv[3 * i + 1] = keys[i];
		argvlen[3 * i + 1] = strlen(keys[i]);
		if (is_set) {
			fill(vals + size * i, size, seed, i);
			argv[3 * i + 2] = (const char *)vals + size * i;
			argvlen[3 * i + 2] = size;
		}
		cmds[i] = (struct rc_cmd){ .argc = is_set ? 3 : 2,
					   .argv = argv + 3 * i,
					   .argvlen = argvlen + 3 * i,
					   .key_arg = 1 };
	}
	t0 = now_ms();
	rc_exec(c, cmds, n);
	for (unsigned int i = 0; i < n; i++) {
		redisReply *r = cmds[i].reply;

		if (!r) {
			const char *name = err_name(cmds[i].err);

			for (int k = 0; k < 6; k++)
				errs[k] += !strcmp(names[k], name);
			continue;
		}
		if (is_set) {
			if (r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "OK"))
				ok++;
			else
				bad++;
		} else if (r->type == REDIS_REPLY_NIL) {
			nil++;
		} else {
			fill(want, size, seed, i);
			if (r->type == REDIS_REPLY_STRING && r->len == size &&
			    !memcmp(r->str, want, size))
				ok++;
			else
				bad++;
		}
		freeReplyObject(r);
	}
	printf("ok=%u nil=%u bad=%u", ok, nil, bad);
	for (int k = 0; k < 6; k++)
		printf(" %s=%u", names[k], errs[k]);
	printf(" ms=%.1f\n", now_ms() - t0);
	free(cmds);
	free(argv);
	free(argvlen);
	free(keys);
	free(want);
	free(vals);
}

int main(int argc, char **argv)
{
	struct rcluster *c;
	char line[512], err[256];
	int ret;

	if (argc != 3) {
		fprintf(stderr, "usage: rc_repl SEEDS TIMEOUT_MS\n");
		return 2;
	}
	ret = rc_open(&c, argv[1], (unsigned int)atoi(argv[2]), NULL,
		      getenv("RC_PASSWORD"), err, sizeof(err));
	if (ret) {
		printf("error=%s\n", err);
		return 1;
	}
	printf("ready masters=%u standalone=%d\n", rc_masters(c),
	       rc_standalone(c));
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		char cmd[16], prefix[64];
		unsigned int n, seed;
		size_t size;

		if (sscanf(line, "%15s", cmd) != 1)
			continue;
		if (!strcmp(cmd, "stats")) {
			const struct rc_stats *s = rc_stats(c);

			printf("commands=%llu moved=%llu ask=%llu refreshes=%llu connects=%llu timeouts=%llu failures=%llu busy=%llu masters=%u standalone=%d\n",
			       (unsigned long long)s->commands,
			       (unsigned long long)s->moved,
			       (unsigned long long)s->ask,
			       (unsigned long long)s->refreshes,
			       (unsigned long long)s->connects,
			       (unsigned long long)s->timeouts,
			       (unsigned long long)s->failures,
			       (unsigned long long)s->busy, rc_masters(c),
			       rc_standalone(c));
		} else if (!strcmp(cmd, "error")) {
			printf("error=%s\n", rc_error(c));
		} else if (!strcmp(cmd, "refresh")) {
			ret = rc_refresh(c);
			printf("refresh=%d masters=%u\n", ret, rc_masters(c));
		} else if ((!strcmp(cmd, "set") || !strcmp(cmd, "get")) &&
			   sscanf(line, "%*s %63s %u %zu %u", prefix, &n, &size,
				  &seed) == 4 && n >= 1 && n <= 4096 &&
			   size <= (64u << 20)) {
			batch(c, cmd[0] == 's', prefix, n, size, seed);
		} else {
			printf("error=bad-command\n");
		}
		fflush(stdout);
	}
	rc_close(c);
	return 0;
}
