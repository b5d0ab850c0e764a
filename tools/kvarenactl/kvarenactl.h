/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvarenactl - the operator's tool for kvarena arenas.
 *
 *   main.c     main(): parse, check, run
 *   cmdline.c  the tables of commands and options, the parser, the help
 *   dev.c      /dev/kvarena: open, the ioctls, snapshots, error messages
 *   fmt.c      numbers in and out, tables, JSON, UTF-8 checks
 *   view.c     stat, clients, top
 *   metrics.c  the Prometheus text exposition format
 *   create.c   create, destroy, limit; host (memfd) and file frames
 *   resize.c   resize: an arena shrunk or grown within its max frames
 *   holders.c  the processes that hold each client (/proc/PID/fdinfo);
 *              kill
 *   cuda.c     CUDA frames through libcuda.so.1, loaded at run time
 *   events.c   events: KV events as JSON lines or on ZeroMQ (events.h)
 *   scrub.c    scrub: a CUDA arena's frames cleared between cache domains,
 *              with libkvarena
 *   tier.c     tier: an arena's lower tier set or taken away; agent: the
 *              copies between the two, with raw ioctls, mmap and memcpy
 *   gang.c     create --gang: one arena over N member arenas (one per GPU
 *              of a tensor-parallel engine); the gangs and members of
 *              the views, from sysfs
 *   cgroup.c   the clients' cgroups and their dmem limits on an arena
 *   ../common/fileio.c  whole frames of a file read and written, several
 *              in flight (io_uring): the agent's copies to a file arena
 *
 * See Documentation/operators.rst.
 */
#ifndef KVARENACTL_H
#define KVARENACTL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <linux/kvarena.h>

/* Exit status. */
enum {
	KVACTL_OK = 0,		/* done */
	KVACTL_FAIL = 1,	/* the operation failed */
	KVACTL_USAGE = 2,	/* bad command line */
};

#define KVACTL_PROG "kvarenactl"

/* ---- the command line (cmdline.c) ---------------------------------------- */

/* Every option, in the order of the table in cmdline.c. */
enum kvactl_opt {
	OPT_JSON, OPT_PRETTY, OPT_BYTES,
	OPT_INTERVAL, OPT_ITERATIONS, OPT_WIDTH,
	OPT_FRAMES, OPT_FRAME_SIZE, OPT_BACKEND, OPT_FILE, OPT_LOW_WATERMARK,
	OPT_BPT, OPT_LAYERS, OPT_KV_HEADS, OPT_HEAD_DIM, OPT_DTYPE,
	OPT_HUGEPAGES, OPT_HEADROOM,
	OPT_OWNER, OPT_GROUP, OPT_MODE, OPT_CLIENT_MIN_LIMIT,
	OPT_CLIENT_MAX_DEFAULT, OPT_CLIENT_MAX_LIMIT, OPT_CACHE_DOMAINS,
	OPT_DOMAIN_CACHED_MAX, OPT_CLEAR_ALWAYS,
	OPT_WAIT, OPT_ID, OPT_MIN, OPT_MAX, OPT_SIGNAL,
	OPT_ZMQ, OPT_REPLAY, OPT_TOPIC, OPT_MEDIUM, OPT_HASHES, OPT_OLDEST,
	OPT_LAYOUT, OPT_LINGER, OPT_DP_RANK, OPT_BIND, OPT_CONNECT,
	OPT_WAIT_SUBSCRIBERS, OPT_SALT,
	OPT_MAX_FRAMES, OPT_RESIZE_FRAMES, OPT_RESIZE_BYTES, OPT_RESIZE_WAIT,
	OPT_CANCEL,
	OPT_LOWER, OPT_NONE, OPT_FREE_TARGET,
	OPT_GANG,
	OPT_LISTEN, OPT_PER_CLIENT, OPT_BY_LABEL, OPT_CHECK,
	OPT_CONFIG,
	OPT_HELP, OPT_VERSION,
	KVACTL_NR_OPTS
};
_Static_assert(KVACTL_NR_OPTS <= 64, "struct kvactl_opts.given has 64 bits");

#define KVACTL_MAX_ARGS	2		/* positional arguments of a command */

struct kvactl_opts {
	const char *cmd;		/* the command word */
	int (*run)(const struct kvactl_opts *o);
	const char *args[KVACTL_MAX_ARGS]; /* its positional arguments */
	int nargs;
	uint64_t given;			/* 1 << enum kvactl_opt, if given */
	/*
	 * Frame counts given as sizes (512Mi): the value, made a count with
	 * the frame size by kvactl_frames_resolve().
	 */
	const char *sizes[KVACTL_NR_OPTS];

	/* viewing */
	bool json;
	bool pretty;
	bool exact_bytes;		/* --bytes: no 1.5Gi */
	unsigned int interval_ms;	/* top */
	uint64_t iterations;		/* top; 0: until q */
	uint32_t width;			/* top: columns; 0: $COLUMNS, the tty */

	/* create, resize */
	uint32_t frames;
	uint32_t max_frames;		/* create: the table; 0: --frames */
	bool cancel;			/* resize --cancel */
	uint64_t frame_size;
	bool cuda;
	uint32_t cuda_dev;
	const char *file;		/* create --file: a file arena's file */
	uint32_t low_watermark;
	uint64_t bytes_per_token;
	uint32_t layers, kv_heads, head_dim, dtype;
	bool hugepages;
	uint64_t headroom;		/* bytes, or per mille of MemTotal */
	bool headroom_pct;		/* headroom is per mille */

	/* create, limit NAME: the arena's access and client policy */
	uint32_t owner_uid, owner_gid, mode;
	uint32_t client_min_limit, client_max_default, client_max_limit;
	uint32_t cache_domains;		/* KVARENA_DOMAINS_* */
	uint32_t domain_cached_max;	/* 0: no cap */
	bool clear_always;		/* create: KVARENA_CREATE_CLEAR_ALWAYS */

	/* destroy, resize, scrub, agent */
	unsigned int wait_ms;

	/* create NAME --gang M0,M1,...: the members, in rank order */
	const char *gang;
	uint32_t nr_members;
	char members[KVARENA_GANG_MAX][KVARENA_NAME_LEN];

	/* tier NAME --lower LOWER [--free-target N] | --none */
	const char *lower;
	bool tier_none;
	uint32_t free_target;		/* 0: the arena's low watermark */

	/* limit, kill: the client is args[1] (label or #ID) or --id */
	uint32_t client_id;
	uint32_t min, max;
	int signal;

	/* events (-n: stop after this many) */
	const char *zmq, *replay, *topic, *medium;
	bool hash_bytes, events_oldest, zmq_bind, zmq_connect, no_salt;
	int layout;			/* enum kvactl_layout (events.h) */
	unsigned int linger_ms;
	uint32_t dp_rank, wait_subscribers;

	/* exporter --listen ADDR [--per-client]; metrics --by-label */
	const char *listen;
	bool per_client, by_label;

	/* apply [FILE] --check */
	bool check;

	/* remote NAME --config FILE */
	const char *config;
};

/* apply's file without FILE. */
#define KVACTL_ARENAS_CONF	"/etc/kvarena/arenas.conf"

/* remote's settings without --config. */
#define KVACTL_REMOTE_CONF	"/etc/kvarena/remote.conf"

/* exporter's address without --listen: this machine only. */
#define KVACTL_EXPORTER_LISTEN	"127.0.0.1:9847"

static inline bool kvactl_given(const struct kvactl_opts *o,
				enum kvactl_opt opt)
{
	return o->given & (1ull << opt);
}

/* Owner, group or mode given: the arena's access is set, not defaulted. */
static inline bool kvactl_access_given(const struct kvactl_opts *o)
{
	return kvactl_given(o, OPT_OWNER) || kvactl_given(o, OPT_GROUP) ||
	       kvactl_given(o, OPT_MODE);
}

/* Any part of the arena's policy given. */
static inline bool kvactl_policy_given(const struct kvactl_opts *o)
{
	return kvactl_access_given(o) ||
	       kvactl_given(o, OPT_CLIENT_MIN_LIMIT) ||
	       kvactl_given(o, OPT_CLIENT_MAX_DEFAULT) ||
	       kvactl_given(o, OPT_CLIENT_MAX_LIMIT) ||
	       kvactl_given(o, OPT_CACHE_DOMAINS) ||
	       kvactl_given(o, OPT_DOMAIN_CACHED_MAX);
}

/*
 * Parse argv into @o.  Returns -1 to go on and run o->cmd, or the exit
 * status to leave with (help printed, or a usage error reported).
 */
int kvactl_cmdline(int argc, char **argv, struct kvactl_opts *o);
/* The defaults of every option, as the command line starts from. */
void kvactl_opts_defaults(struct kvactl_opts *o);

/*
 * The frame counts @o has as sizes (a value with a unit, or resize's
 * --bytes) made counts of @frame_size frames, each checked against its
 * option's range, and the checks that need them done.  0, or the usage
 * error's exit status after saying which value is wrong and why.
 */
int kvactl_frames_resolve(struct kvactl_opts *o, uint64_t frame_size);

/* ---- messages ------------------------------------------------------------ */

/* "kvarenactl: " + the message + newline, on stderr. */
void kvactl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Where set, kvactl_err() gives it the message instead of printing it. */
extern void (*kvactl_err_hook)(const char *msg);

/* ---- /dev/kvarena (dev.c) ------------------------------------------------- */

const char *kvactl_device(void);
void kvactl_print_module(void);
void kvactl_print_built(void);
int kvactl_open(bool write, const char *why);
int kvactl_ioctl(int fd, unsigned long cmd, void *arg);
int kvactl_name_check(const char *cmd, const char *name, bool create);
void kvactl_name_copy(char dst[KVARENA_NAME_LEN], const char *name);

/*
 * What sysfs says of an arena's gang (gang.c): a gang's members in rank
 * order (arenas/NAME/members), or the gang a member is in (arenas/NAME/
 * gang) and its rank there.  All empty for other arenas, and where sysfs
 * cannot be read (a module without gangs, a container without /sys).
 */
struct kvactl_gang {
	uint32_t nr_members;		/* a gang: 2..KVARENA_GANG_MAX */
	char members[KVARENA_GANG_MAX][KVARENA_NAME_LEN];
	char gang[KVARENA_NAME_LEN];	/* a member: its gang, else "" */
	int rank;			/* a member: its rank; -1 if unknown */
};

/* One arena as STAT and CLIENTS reported it, and sysfs its gang. */
struct kvactl_arena {
	struct kvarena_stat st;
	struct kvarena_client_info *clients;
	uint32_t nr_clients;
	struct kvactl_gang gang;
};

/* Every arena (or one), read in one pass. */
struct kvactl_snap {
	struct kvactl_arena *arenas;
	size_t nr;
};

int kvactl_snap_read(int fd, const char *cmd, const char *name,
		     bool with_clients, struct kvactl_snap *snap);
void kvactl_snap_free(struct kvactl_snap *snap);

/*
 * The Prometheus text format of @snap (metrics.c): clients one series
 * each, or, @by_label, summed per label of an arena (the exporter's
 * default: no series per process).
 */
void kvactl_print_metrics(FILE *f, const struct kvactl_snap *snap,
			  bool by_label);

/* ---- cgroups (cgroup.c) --------------------------------------------------- */

/* Process @pid's cgroup v2 path ("/a/b") into @buf: 0, or -1 if unknown. */
int kvactl_cgroup_of(pid_t pid, char *buf, size_t len);
/*
 * The figure for region kvarena/@arena in dmem file @file ("dmem.max",
 * "dmem.current") of cgroup @cg: 0 with *@val (UINT64_MAX for "max"), or
 * -1 if the file or the region is not there.
 */
int kvactl_dmem_get(const char *cg, const char *file, const char *arena,
		    uint64_t *val);
/*
 * The dmem.max that binds cgroup @cg on @arena: the nearest cgroup at or
 * above it with a limit that has no room for one more @frame bytes, or
 * else the nearest with a limit.  0 with its path in @at and its max and
 * current, or -1 if no cgroup above has a limit.
 */
int kvactl_dmem_limit(const char *cg, const char *arena, uint64_t frame,
		      char *at, size_t len, uint64_t *max, uint64_t *cur);

/* ---- gangs (gang.c) ------------------------------------------------------ */

/* @name's gang or members from sysfs into @g (all empty if none). */
void kvactl_gang_read(const char *name, struct kvactl_gang *g);

/* A gang: an arena over member arenas.  A member: an arena in a gang. */
static inline bool kvactl_is_gang(const struct kvactl_gang *g)
{
	return g->nr_members > 0;
}

static inline bool kvactl_is_member(const struct kvactl_gang *g)
{
	return g->gang[0] != '\0';
}

/* create --gang (create.c hands it over; the policy with it). */
int kvactl_gang_create(const struct kvactl_opts *o);
/*
 * The arena's policy where @o gives it, as `limit NAME ACCESS` does it
 * (create.c): checked against @s's table, or checked and set.  0, or
 * KVACTL_FAIL after saying why, as command @cmd.
 */
int kvactl_check_policy(const char *cmd, const struct kvactl_opts *o,
			const struct kvarena_stat *s);
int kvactl_set_policy(int fd, const char *cmd, const struct kvactl_opts *o,
		      const struct kvarena_stat *s);

/* ---- arithmetic on a STAT --------------------------------------------------- */

/*
 * Frames without memory behind them: an arena whose create is still
 * registering memory, or was killed half way.  Accounting-only arenas
 * (KVARENA_STATE_NO_BACKING) have none: their frames are handles only.
 */
static inline uint32_t kvactl_unbacked(const struct kvarena_stat *s)
{
	if ((s->state & KVARENA_STATE_NO_BACKING) ||
	    s->nr_backed >= s->nr_frames)
		return 0;
	return s->nr_frames - s->nr_backed;
}

/*
 * Free frames that have memory.  STAT's nr_free counts every frame no
 * client holds, those without memory too, but nobody can be given one.
 */
static inline uint32_t kvactl_free(const struct kvarena_stat *s)
{
	uint32_t unbacked = kvactl_unbacked(s);

	return s->nr_free > unbacked ? s->nr_free - unbacked : 0;
}

/*
 * Frames an allocation without a guarantee could get now: none while a
 * frame has no memory, since ATTACH is refused (ENODATA) until all have.
 */
static inline uint32_t kvactl_available(const struct kvarena_stat *s)
{
	uint32_t unreserved = s->nr_free > s->nr_reserved ?
			      s->nr_free - s->nr_reserved : 0;
	uint64_t avail = (uint64_t)unreserved + s->nr_cached;

	if (kvactl_unbacked(s))
		return 0;
	/* A waiting shrink keeps that many free and cached frames out of reach. */
	return avail > s->nr_shrinking ? (uint32_t)(avail - s->nr_shrinking) : 0;
}

/*
 * The frames an arena may have: its table (struct kvarena_stat
 * .max_frames; a module without ARENA_RESIZE leaves it 0).
 */
static inline uint32_t kvactl_max_frames(const struct kvarena_stat *s)
{
	return s->max_frames > s->nr_frames ? s->max_frames : s->nr_frames;
}

/* The arena can grow, was shrunk, or a shrink waits: the views say so. */
static inline bool kvactl_resizable(const struct kvarena_stat *s)
{
	return kvactl_max_frames(s) != s->nr_frames || s->nr_shrinking ||
	       s->frames_retired;
}

/* Tokens per frame, T_f = floor(frame_size / bytes_per_token); 0 if unknown. */
static inline uint64_t kvactl_tokens_per_frame(const struct kvarena_stat *s)
{
	return s->bytes_per_token ? s->frame_size / s->bytes_per_token : 0;
}

/*
 * The memory of one frame of an arena of @nr_members members (0 or 1: not
 * a gang).  A gang's frame i is frame i of every member at once, each of
 * STAT's frame_size (what a rank maps); its bytes_per_token is the
 * members' sum, each member holding its ranks' share of a token.
 */
static inline uint64_t kvactl_frame_bytes(const struct kvarena_stat *s,
					  uint32_t nr_members)
{
	return s->frame_size * (nr_members > 1 ? nr_members : 1);
}

/*
 * Tokens per frame of a gang of @nr_members members: a frame in each
 * member holds its share of as many tokens, so T_f is the whole frame's
 * bytes over the whole token's.  0 if unknown.
 */
static inline uint64_t kvactl_gang_tokens_per_frame(const struct kvarena_stat *s,
						    uint32_t nr_members)
{
	return s->bytes_per_token ?
	       kvactl_frame_bytes(s, nr_members) / s->bytes_per_token : 0;
}

static inline const char *kvactl_mem_kind(uint32_t kind)
{
	if (kind == KVARENA_MEM_CUDA)
		return "cuda";
	return kind == KVARENA_MEM_FILE ? "file" : "host";
}

/*
 * A member's frames while it is in a gang: its own free ones serve the
 * gang (STAT counts them free, its own core standing still), and no
 * client can attach to it (EBUSY).  So none is free or available; the
 * views show them as ganged.  0 for other arenas.
 */
static inline uint32_t kvactl_ganged(const struct kvarena_stat *s,
				     const struct kvactl_gang *g)
{
	return kvactl_is_member(g) ? kvactl_free(s) : 0;
}

/* ---- numbers and text (fmt.c) ------------------------------------------------ */

int kvactl_parse_u64(const char *s, uint64_t *out);
int kvactl_parse_u32(const char *s, uint32_t *out);

int kvactl_parse_size(const char *s, uint64_t *out);
int kvactl_parse_seconds(const char *s, uint64_t *ms);

#define KVACTL_NUM_LEN 32

/* ids.c: names from /etc/passwd and /etc/group, numbers otherwise. */
int kvactl_lookup_id(const char *name, bool group, uint32_t *id);
const char *kvactl_id_name(char buf[KVACTL_NUM_LEN], uint32_t id, bool group);

/* 512B, 64Ki, 1.5Gi as free -h prints them; exact: the byte count. */
char *kvactl_fmt_size(char buf[KVACTL_NUM_LEN], uint64_t bytes, bool exact);
/* 4Ki, 2Mi, 1Gi where exact, else the byte count: for limits. */
char *kvactl_fmt_size_exact(char buf[KVACTL_NUM_LEN], uint64_t bytes);

/*
 * Something the user typed, for a message: in double quotes, with
 * control characters, quotes, backslashes and bytes that are not UTF-8
 * written as C escapes (\x1b), and cut after 64 characters ("...").
 * Returns @buf.
 */
#define KVACTL_QUOTE_LEN 300
char *kvactl_quote(char buf[KVACTL_QUOTE_LEN], const char *s);
char *kvactl_fmt_u64(char buf[KVACTL_NUM_LEN], uint64_t v);
/* 100 * num / den with one decimal, "-" when den is 0. */
char *kvactl_fmt_pct(char buf[KVACTL_NUM_LEN], uint64_t num, uint64_t den);
/* num / den with one decimal. */
char *kvactl_fmt_ratio(char buf[KVACTL_NUM_LEN], uint64_t num, uint64_t den);
/* A client label for a table: printable, "-" when empty. */
void kvactl_fmt_label(char *out, size_t size, const char *label);

/*
 * Arena names separated by @sep (',' on the command line, ' ' in sysfs's
 * members), a final newline ignored, into @out: each a valid arena name
 * (kvactl_name_check()'s rule), none empty.  Returns how many (0 for an
 * empty @s), -EINVAL for a name that is not one, -ERANGE for more than
 * @max.
 */
int kvactl_split_names(const char *s, char sep,
		       char (*out)[KVARENA_NAME_LEN], uint32_t max);

/* Bytes of the valid UTF-8 character at @s (1-4), 0 if none starts there. */
size_t kvactl_utf8_len(const unsigned char *s);

/* A table with columns aligned on their widest cell. */
struct kvactl_table {
	unsigned int ncols;
	const char *align;		/* 'l' or 'r' per column */
	char **cells;
	size_t n, cap;
};

void kvactl_table_init(struct kvactl_table *t, unsigned int ncols,
		       const char *align);
void kvactl_table_add(struct kvactl_table *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define KVACTL_TABLE_MAX_COLS 32

void kvactl_table_print(struct kvactl_table *t, FILE *f);
/*
 * The same in at most @cols columns (0: any width): the columns @drop
 * lists (indices, ended by -1) are left out, in that order, until the
 * rest fits, and a last line names the ones left out, so that none goes
 * silently: "hidden: SHARED, PEAK (-w 84 for all)" (top's -w).  The
 * first row is the heading.  Returns how many were left out.
 */
unsigned int kvactl_table_print_fit(struct kvactl_table *t, FILE *f,
				    unsigned int cols, const int *drop);
void kvactl_table_free(struct kvactl_table *t);

/* A JSON writer: compact like ip -j, or indented with --pretty. */
struct kvactl_json {
	FILE *f;
	bool pretty;
	int depth;
	bool any[16];			/* a member was written at depth i */
	char close[16];			/* what closes depth i + 1 */
};

void kvactl_json_init(struct kvactl_json *j, FILE *f, bool pretty);
void kvactl_json_obj(struct kvactl_json *j, const char *key);
void kvactl_json_arr(struct kvactl_json *j, const char *key);
void kvactl_json_end(struct kvactl_json *j);	/* closes the innermost */
void kvactl_json_u64(struct kvactl_json *j, const char *key, uint64_t v);
void kvactl_json_i64(struct kvactl_json *j, const char *key, int64_t v);
void kvactl_json_str(struct kvactl_json *j, const char *key, const char *s);
void kvactl_json_bool(struct kvactl_json *j, const char *key, bool v);
void kvactl_json_null(struct kvactl_json *j, const char *key);
/* 100 * num / den with one decimal, null when den is 0. */
void kvactl_json_pct(struct kvactl_json *j, const char *key, uint64_t num,
		     uint64_t den);
void kvactl_json_done(struct kvactl_json *j);	/* the final newline */

/* ---- commands ------------------------------------------------------------------ */

int kvactl_cmd_stat(const struct kvactl_opts *o);
int kvactl_cmd_clients(const struct kvactl_opts *o);
int kvactl_cmd_top(const struct kvactl_opts *o);
int kvactl_cmd_metrics(const struct kvactl_opts *o);
int kvactl_cmd_exporter(const struct kvactl_opts *o);	/* exporter.c */
int kvactl_cmd_apply(const struct kvactl_opts *o);	/* apply.c */
int kvactl_cmd_remote(const struct kvactl_opts *o);	/* remote.c */
int kvactl_cmd_create(const struct kvactl_opts *o);
int kvactl_cmd_destroy(const struct kvactl_opts *o);
int kvactl_cmd_limit(const struct kvactl_opts *o);
int kvactl_cmd_resize(const struct kvactl_opts *o);	/* resize.c */
int kvactl_cmd_events(const struct kvactl_opts *o);	/* events.c */
int kvactl_cmd_scrub(const struct kvactl_opts *o);	/* scrub.c */
int kvactl_cmd_tier(const struct kvactl_opts *o);	/* tier.c */
int kvactl_cmd_agent(const struct kvactl_opts *o);	/* tier.c */

int kvactl_cmd_kill(const struct kvactl_opts *o);
int kvactl_cmd_evict(const struct kvactl_opts *o);

/* The client @o names (args[1] or --id) in @a, or NULL after saying why. */
const struct kvarena_client_info *
kvactl_find_client(const struct kvactl_arena *a, const struct kvactl_opts *o);

/* view.c, for top */
void kvactl_print_stat(FILE *f, const struct kvactl_arena *a, bool exact);
void kvactl_json_stat(struct kvactl_json *j, const struct kvactl_arena *a);

/* create.c, for resize: MemAvailable for @size more bytes, headroom kept. */
int kvactl_check_host_memory(const struct kvactl_opts *o, const char *cmd,
			     uint64_t size);

/* ---- who holds each client (holders.c) ------------------------------------------- */

/* The processes holding one client's file. */
struct kvactl_hold {
	char arena[KVARENA_NAME_LEN];
	uint32_t id;
	bool evicted;			/* fdinfo's kvarena-evicted */
	char label[4 * KVARENA_LABEL_LEN];	/* as fdinfo escapes it */
	pid_t *pids;			/* in the order /proc lists them */
	size_t n;
};

/*
 * The processes holding a rank's file: joined as rank @rank (the memory
 * of @member) of client @leader of gang @arena, as fdinfo says; @leader
 * 0 once that client is gone (released or evicted).
 */
struct kvactl_rank_hold {
	char arena[KVARENA_NAME_LEN];
	uint32_t leader;
	uint32_t rank;
	char member[KVARENA_NAME_LEN];
	pid_t *pids;
	size_t n;
};

struct kvactl_holders {
	struct kvactl_hold *v;
	size_t n;
	struct kvactl_rank_hold *ranks;	/* rank files, not in @v */
	size_t nr_ranks;
	unsigned int unreadable;	/* processes whose fds we may not read */
	bool other_pidns;		/* processes of other pid namespaces */
};

/*
 * Every client file held by a process, from /proc/PID/fd and fdinfo;
 * @devfd is kvarenactl's open of the device.  0, or -errno.
 */
int kvactl_holders_scan(struct kvactl_holders *h, int devfd);
/* The holders of client @id of @arena, or NULL if none was found. */
const struct kvactl_hold *kvactl_holders_find(const struct kvactl_holders *h,
					      const char *arena, uint32_t id);
void kvactl_holders_free(struct kvactl_holders *h);
/*
 * The files of evicted clients of @arena still open (@i-th, from 0), for
 * `clients` to name them and `kill` to end them; NULL after the last.
 */
const struct kvactl_hold *kvactl_holders_evicted(const struct kvactl_holders *h,
						const char *arena, size_t i);
/*
 * The ranks joined to client @leader of gang @arena (@i-th, from 0, in
 * the order /proc lists them; @leader 0: those whose client is gone);
 * NULL after the last.
 */
const struct kvactl_rank_hold *kvactl_holders_rank(const struct kvactl_holders *h,
						  const char *arena,
						  uint32_t leader, size_t i);
int kvactl_parse_signal(const char *arg, int *sig);

/* ---- CUDA frames (cuda.c) --------------------------------------------------------- */

struct kvactl_cuda;

/*
 * Load the driver and check that device @dev exists and that @frame_size
 * is a multiple of its allocation granularity.  Prints why not and returns
 * NULL on failure.
 */
struct kvactl_cuda *kvactl_cuda_open(uint32_t dev, uint64_t frame_size);
/*
 * One device allocation of @frame_size bytes, exported as a POSIX file
 * descriptor: returns the fd (the caller closes it), or -1 after printing
 * why.  The process keeps no reference: the fd holds the memory.
 */
int kvactl_cuda_frame(struct kvactl_cuda *cu);
/* The device's UUID (cuDeviceGetUuid), for kvarena_arena_create.mem_uuid. */
void kvactl_cuda_uuid(const struct kvactl_cuda *cu, uint8_t uuid[16]);
void kvactl_cuda_close(struct kvactl_cuda *cu);

#endif /* KVARENACTL_H */
