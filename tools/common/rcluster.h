/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rcluster - a Redis Cluster client on hiredis, which has none: a key's
 * slot (CRC16/XMODEM of the key, or of its {hash tag}, mod 16384), a slot
 * map from CLUSTER SLOTS, MOVED (the map corrected, then refreshed) and
 * ASK (ASKING, once) redirections, one connection per master, made again
 * when lost, and one deadline per batch: a batch of commands is sent
 * pipelined, one round per master, and nothing in it waits past
 * @timeout_ms from its start.  Also talks to a single server that is not
 * a cluster (CLUSTER SLOTS says "cluster support disabled"): every slot
 * is that server's.
 *
 * A command that cannot be run - its master down, unreachable or too
 * slow, the cluster refusing while it fails over - comes back with an
 * error (struct rc_cmd.err); the next batch tries again, after a fresh
 * CLUSTER SLOTS.  A connection of an earlier batch found closed (the
 * server restarted, an idle timeout) is made again within the batch, and
 * its commands sent again once; and commands whose master could not be
 * reached go once more to the master that a fresh CLUSTER SLOTS names,
 * if another (a failover this client had not seen yet).  So a batch's
 * commands must be ones that may run twice (GET, SET, ZADD, UNLINK are).  A master that failed is not tried again for
 * RC_DOWN_MS, so that a partitioned node costs one timeout, not one per
 * batch.
 *
 * Not thread-safe: one struct rcluster per thread.
 */
#ifndef RCLUSTER_H
#define RCLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#define RC_SLOTS	16384u
#define RC_MAX_NODES	64u
#define RC_MAX_REDIRECTS 5u
#define RC_DOWN_MS	1000u

struct rcluster;

/* Counters since rc_open(). */
struct rc_stats {
	uint64_t commands;	/* commands answered (any reply) */
	uint64_t moved;		/* MOVED redirections followed */
	uint64_t ask;		/* ASK redirections followed */
	uint64_t refreshes;	/* CLUSTER SLOTS taken */
	uint64_t connects;	/* connections made (the first ones too) */
	uint64_t timeouts;	/* commands ended by the deadline */
	uint64_t failures;	/* commands ended by a lost or refused node */
	uint64_t busy;		/* TRYAGAIN, CLUSTERDOWN, LOADING answers */
};

/*
 * One command of a batch.  In: @argc arguments (@argv, @argvlen),
 * @key_arg the index of the key that routes it.  Out: @reply (free with
 * freeReplyObject(); a Redis error reply is a reply) and @err 0, or
 * @reply NULL and @err -ETIMEDOUT (the deadline), -ECONNREFUSED (its
 * master down or refusing), -EIO (the connection lost mid-way), -EAGAIN
 * (the cluster busy: failing over, a slot migrating), -ELOOP (more than
 * RC_MAX_REDIRECTS redirections).
 */
struct rc_cmd {
	int argc;
	const char **argv;
	const size_t *argvlen;
	int key_arg;
	redisReply *reply;
	int err;
	/* private */
	int node;
	int asking;
	unsigned int hops;
	int retried;
};

/*
 * Open: @seeds is "HOST:PORT[,HOST:PORT...]" (IPv4 or a name; IPv6 as
 * [ADDR]:PORT); @timeout_ms bounds each batch (1..600000); @password,
 * if not NULL, is sent with AUTH (and @user with it, if not NULL) on
 * every connection.  The slot map is taken from the first seed that
 * answers.  0, or -EINVAL (bad seeds; @err says which), or the failure
 * of the last seed tried (@err says why).
 */
int rc_open(struct rcluster **out, const char *seeds, unsigned int timeout_ms,
	    const char *user, const char *password, char *err, size_t err_len);
void rc_close(struct rcluster *c);

/* Run @n commands, pipelined; returns how many got a reply. */
unsigned int rc_exec(struct rcluster *c, struct rc_cmd *cmds, unsigned int n);

/* Take CLUSTER SLOTS again (within one timeout): 0 or a negative errno. */
int rc_refresh(struct rcluster *c);

/* Whether the server is a single one, not a cluster. */
int rc_standalone(const struct rcluster *c);
/* Masters that own slots now. */
unsigned int rc_masters(const struct rcluster *c);
const struct rc_stats *rc_stats(const struct rcluster *c);
/* The last error, in words ("" if none). */
const char *rc_error(const struct rcluster *c);

uint16_t rc_crc16(const void *buf, size_t len);
unsigned int rc_key_slot(const char *key, size_t len);

#endif /* RCLUSTER_H */
