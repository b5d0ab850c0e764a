// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl - the command line: the table of commands, the table of
 * options, the parser, and the help, which is made from the tables.
 *
 * An option's row says what its value is (a whole number, a size, seconds
 * or a word a function reads), its limits and the commands that take it;
 * the parser, every message about a wrong value and `kvarenactl help
 * COMMAND` all come from that row, so they cannot disagree.  To add an
 * option: an OPT_ entry and a field in struct kvactl_opts (kvarenactl.h),
 * a row below with the commands that take it in its cmds (CB(C_CREATE)),
 * and a row of each kind in selftests/kvarenactl/args_test.c, which fails
 * until there is one.  Checks that need several options go in the
 * command's check function.  Two rows may have one name for different
 * commands (--bytes: a flag of the views, resize's size): after the
 * command word the row for that command is taken, before it the first.
 *
 * A frame count (V_FRAMES) may be given as a size too, "512Mi": a bare
 * number is frames, a number with a unit is bytes, made frames with the
 * frame size once it is known - create's --frame-size in check_create(),
 * the arena's (STAT) for limit and resize, which call
 * kvactl_frames_resolve() - and refused unless it is whole frames.
 *
 * Every piece of the command line that is echoed in a message goes
 * through kvactl_quote(), so that no input, however made, puts a control
 * character on the terminal.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <kvarena/layout.h>

#include <kvarena/remote.h>

#include "events.h"
#include "kvarenactl.h"

/* ---- commands ------------------------------------------------------------ */

enum cmd_id { C_STAT, C_CLIENTS, C_TOP, C_METRICS, C_EXPORTER, C_CREATE, C_DESTROY,
	      C_LIMIT, C_KILL, C_EVICT, C_EVENTS, C_SCRUB, C_RESIZE, C_TIER,
	      C_AGENT, C_REMOTE, C_APPLY, C_HELP, NR_CMDS };

#define CB(c)		(1u << (c))
#define C_VIEW		(CB(C_STAT) | CB(C_CLIENTS) | CB(C_TOP))
#define C_ALL		((1u << NR_CMDS) - 1)

struct command {
	const char *name;
	int (*run)(const struct kvactl_opts *o);
	int min_args, max_args;
	const char *usage;		/* its arguments */
	const char *what;		/* one line for help */
	int (*check)(struct kvactl_opts *o);
	const char *more;		/* more lines for `help COMMAND` */
};

static int check_create(struct kvactl_opts *o);
static int check_limit(struct kvactl_opts *o);
static int check_kill(struct kvactl_opts *o);
static int check_evict(struct kvactl_opts *o);
static int check_events(struct kvactl_opts *o);
static int check_remote(struct kvactl_opts *o);
static int check_resize(struct kvactl_opts *o);
static int check_tier(struct kvactl_opts *o);
static const struct command *find_command(const char *name);

static const struct command commands[NR_CMDS] = {
	[C_STAT] = { "stat", kvactl_cmd_stat, 0, 1, "[NAME]",
		"Capacity, held, filled, cached and free memory, like free" },
	[C_CLIENTS] = { "clients", kvactl_cmd_clients, 0, 1, "[NAME]",
		"One row per client: limits, frames held, filled, failures" },
	[C_TOP] = { "top", kvactl_cmd_top, 0, 1, "[NAME]",
		"Stat and clients, redrawn; q or Ctrl-C quits" },
	[C_METRICS] = { "metrics", kvactl_cmd_metrics, 0, 1, "[NAME] [--by-label]",
		"Every arena and client in the Prometheus text format" },
	[C_EXPORTER] = { "exporter", kvactl_cmd_exporter, 0, 1,
		"[NAME] [--listen ADDR] [--per-client] [-n COUNT]",
		"Serve the metrics over HTTP at /metrics, for Prometheus to scrape",
		NULL,
		"Until SIGINT or SIGTERM, or -n COUNT scrapes.  Every scrape reads the\n"
		"arenas afresh (every arena, or NAME's); the device is opened for the\n"
		"scrape only, so the exporter never keeps kvarena.ko loaded.  A scrape\n"
		"that cannot read it answers kvarena_up 0, and the reason goes to\n"
		"standard error once.  A client's figures are summed per label unless\n"
		"--per-client: a restarted engine keeps its series.  Viewing as root (or\n"
		"the arena's owner) shows every client; anyone else sees its own domain's.\n" },
	[C_CREATE] = { "create", kvactl_cmd_create, 1, 1,
		"NAME --frames N [options] | NAME --gang M0,M1,... [policy options]",
		"An arena and its memory, kept until destroy",
		check_create,
		"NAME: 1-31 characters of A-Z a-z 0-9 _ . -, not starting with . or -\n"
		"--file PATH: frames that are ranges of a file (made if missing, and\n"
		"allocated), for the lower tier of a host arena (kvarenactl tier); the\n"
		"module keeps the file open until destroy.\n"
		"--gang M0,M1,...: a gang over arenas made before, one per rank of a\n"
		"tensor-parallel engine in rank order: frame i of NAME is frame i of\n"
		"every member.  Clients attach to NAME; the members serve only NAME\n"
		"until it is destroyed.  Its policy is M0's, or as the options say.\n" },
	[C_DESTROY] = { "destroy", kvactl_cmd_destroy, 1, 1,
		"NAME [--wait SECONDS]",
		"Remove an arena and free its memory; refused while clients are attached" },
	[C_LIMIT] = { "limit", kvactl_cmd_limit, 1, 2,
		"NAME CLIENT [--min N] [--max N] | NAME [policy options]",
		"Change a client's guarantee and limit, or the arena's policy",
		check_limit,
		"CLIENT is a label, or #ID (quoted in a shell: '#3') or --id ID for a\n"
		"client's id (kvarenactl clients NAME shows both).\n"
		"--max below what the client holds takes nothing back: it keeps its\n"
		"frames and gets no new ones until it holds fewer than --max.\n"
		"Without CLIENT, the options of the arena's policy change it: who may\n"
		"view and attach (--owner, --group, --mode) and what clients without\n"
		"CAP_SYS_ADMIN may ask for (--client-*); the rest stays as it is.\n" },
	[C_KILL] = { "kill", kvactl_cmd_kill, 1, 2, "NAME CLIENT [-s SIGNAL]",
		"Signal every process that holds a client's file, as fuser -k does",
		check_kill,
		"CLIENT is a label, or #ID or --id ID.  The processes are found in\n"
		"/proc/PID/fdinfo (root sees all); a stopped one also gets SIGCONT.\n" },
	[C_EVICT] = { "evict", kvactl_cmd_evict, 1, 2, "NAME CLIENT",
		"Take a client's frames back while its processes live on",
		check_evict,
		"CLIENT is a label, or #ID or --id ID.  Host arenas only: every\n"
		"mapping of its frames is revoked (a touch raises SIGBUS), its frames\n"
		"and guarantee return to the arena, and its file answers ESHUTDOWN.\n"
		"A CUDA arena's memory cannot be revoked: kill the client instead.\n" },
	[C_EVENTS] = { "events", kvactl_cmd_events, 1, 1,
		"NAME [--zmq ENDPOINT [--replay ENDPOINT] [options]]",
		"The arena's KV events as JSON lines, or published on ZeroMQ as vLLM does",
		check_events,
		"Until the arena is destroyed, or -n COUNT events.  With --zmq, a PUB\n"
		"socket (bound for tcp://*:PORT and other wildcards, else connected,\n"
		"unless --bind or --connect) sends current vLLM's KV event batches,\n"
		"as Dynamo and llm-d read them (--layout for older ones); --replay\n"
		"binds a ROUTER socket that resends kept batches.  Each block carries\n"
		"its cache domain (--salt).  See Documentation/events.rst.\n" },
	[C_SCRUB] = { "scrub", kvactl_cmd_scrub, 1, 1,
		"NAME [-n COUNT] [--wait SECONDS]",
		"Clear a CUDA arena's frames on the GPU so that another cache domain may have them",
		NULL,
		"The arena's owner (or root) runs it beside the engines, until SIGINT\n"
		"or SIGTERM, -n COUNT frames, or --wait SECONDS with nothing to clear.\n"
		"Without a scrubber a CUDA arena's frames stay in the cache domain that\n"
		"last held them; host arenas need none (the module clears them).\n" },
	[C_RESIZE] = { "resize", kvactl_cmd_resize, 1, 1,
		"NAME --frames N | --bytes SIZE [--wait SECONDS] | NAME --cancel",
		"Shrink an arena, giving its memory back, or grow it up to its --max-frames",
		check_resize,
		"A shrink takes free frames, then cached ones, at once, and held ones as\n"
		"their clients free them (--wait waits for them; exit status 1 if some\n"
		"are still held then); --cancel stops waiting, and they stay.  A grow\n"
		"brings frames back up to the arena's --max-frames, with new memory.\n"
		"N and SIZE are the arena's new size; SIZE is whole frames (512Mi).\n" },
	[C_TIER] = { "tier", kvactl_cmd_tier, 1, 1,
		"NAME --lower LOWER [--free-target N] | NAME --none",
		"Give an arena a lower tier that keeps what its cache would drop, or take it away",
		check_tier,
		"While fewer than --free-target of NAME's frames are free, its oldest\n"
		"cached frames are copied down to LOWER, a host arena of NAME's frame\n"
		"size (or, below a host arena, a file arena: create --file), and back\n"
		"up when a client asks for them, by kvarenactl agent NAME; without an\n"
		"agent they are dropped as before.  LOWER cannot be destroyed while it\n"
		"is a lower tier; --none is refused while copies are under way.\n" },
	[C_AGENT] = { "agent", kvactl_cmd_agent, 1, 1,
		"NAME [-n COUNT] [--wait SECONDS]",
		"Copy an arena's cached frames down to its lower tier, and back up",
		NULL,
		"The arena's owner (or root) runs it beside the engines, until SIGINT\n"
		"or SIGTERM, -n COUNT frames copied, or --wait SECONDS with nothing to\n"
		"copy (kvarenactl tier NAME --lower LOWER first).  Host frames are copied\n"
		"with mmap and memcpy; a file arena's are read and written with io_uring,\n"
		"with O_DIRECT where the filesystem takes it; a CUDA arena's by\n"
		"libkvarena, which the statically linked build cannot load.\n" },
	[C_REMOTE] = { "remote", kvactl_cmd_remote, 1, 1,
		"NAME [--config FILE] [-n COUNT] [--zmq ENDPOINT [options]]",
		"Share an arena's published prefixes with every node, on a Redis cluster",
		check_remote,
		"Stores each frame published in NAME's host memory (NAME, or its lower\n"
		"tier) in a cache domain that FILE (" KVACTL_REMOTE_CONF ") gives a\n"
		"secret for, and fetches blocks back for the engines whose LOOKUP missed\n"
		"(libkvarena asks it on " KVA_REMOTE_SOCKET_DIR "/NAME.sock).  A value\n"
		"that fails its checks is a miss, never KV.  With --zmq, the blocks it\n"
		"stored and its budget evicted are published as events --zmq publishes\n"
		"an arena's, medium REMOTE.  Until SIGINT or SIGTERM, or -n COUNT blocks\n"
		"stored and fetched.  Documentation/remote.rst.\n" },
	[C_APPLY] = { "apply", kvactl_cmd_apply, 0, 1, "[FILE] [--check]",
		"Make the arenas and tiers a file lists (" KVACTL_ARENAS_CONF "), all or none",
		NULL,
		"A line is \"arena NAME OPTIONS\" (create's options) or \"tier NAME\n"
		"--lower LOWER [--free-target N]\"; # starts a comment.  Every line is\n"
		"checked first: one wrong line and nothing is done (exit status 2).  An\n"
		"arena that exists as the file says is kept, clients and all, and given\n"
		"the file's policy; one that exists otherwise is an error.  The others\n"
		"are made in order, then the tiers set; if one fails, what was made is\n"
		"destroyed again (exit status 1).  Arenas not in the file are left\n"
		"alone.  --check only reads the file.\n" },
	[C_HELP] = { "help", NULL, 0, 1, "[COMMAND]",
		"This help, or a command's options and their limits" },
};

/* ---- options ------------------------------------------------------------- */

enum value_type {
	V_FLAG,		/* no value: sets a bool */
	V_U32,		/* a whole number in [min, max], into a uint32_t */
	V_U64,		/* the same into a uint64_t */
	V_SIZE,		/* bytes in [min, max] (2097152, 2M, 2.0Mi), uint64_t */
	V_SECONDS,	/* milliseconds in [min, max] from seconds, unsigned int */
	V_WORD,		/* read by ->parse */
	V_FRAMES,	/* frames in [min, max] into a uint32_t, or a size of
			 * whole frames (512Mi; ->bytes: any number is bytes) */
};

struct option_row {
	const char *name;		/* --name */
	char letter;			/* -l, or 0 */
	enum value_type type;
	const char *arg;		/* the value in help: N, SIZE */
	size_t off;			/* the field in struct kvactl_opts */
	uint64_t min, max;
	/* V_WORD: 0, or -EINVAL; a rule beyond the range for the others */
	int (*parse)(struct kvactl_opts *o, const char *arg);
	const char *want;		/* V_WORD: what it takes; else a rule */
	unsigned int cmds;		/* CB(C_x) of the commands taking it */
	const char *help;		/* for `help COMMAND` */
	bool pow2;			/* V_SIZE: a power of two */
	bool bytes;			/* V_FRAMES: a bare number is bytes too */
};

static int parse_backend(struct kvactl_opts *o, const char *arg);
static int parse_file(struct kvactl_opts *o, const char *arg);
static int parse_dtype(struct kvactl_opts *o, const char *arg);
static int parse_headroom(struct kvactl_opts *o, const char *arg);
static int parse_signal(struct kvactl_opts *o, const char *arg);
static int parse_owner(struct kvactl_opts *o, const char *arg);
static int parse_group(struct kvactl_opts *o, const char *arg);
static int parse_mode(struct kvactl_opts *o, const char *arg);
static int parse_zmq(struct kvactl_opts *o, const char *arg);
static int parse_replay(struct kvactl_opts *o, const char *arg);
static int parse_topic(struct kvactl_opts *o, const char *arg);
static int parse_medium(struct kvactl_opts *o, const char *arg);
static int parse_hashes(struct kvactl_opts *o, const char *arg);
static int parse_layout(struct kvactl_opts *o, const char *arg);
static int parse_salt(struct kvactl_opts *o, const char *arg);
static int parse_cache_domains(struct kvactl_opts *o, const char *arg);
static int parse_lower(struct kvactl_opts *o, const char *arg);
static int parse_gang(struct kvactl_opts *o, const char *arg);
static int parse_listen(struct kvactl_opts *o, const char *arg);
static int parse_config(struct kvactl_opts *o, const char *arg);

#define OFF(f)		offsetof(struct kvactl_opts, f)
#define ENDPOINT_WANT	"a ZeroMQ endpoint: tcp://HOST:PORT, ipc://PATH, ..."
#define MAX_SECONDS	86400u
#define NAME_WANT	"1-31 characters of A-Z a-z 0-9 _ . -, not starting with '.'"

static const struct option_row opts[KVACTL_NR_OPTS] = {
	[OPT_JSON] = { "json", 'j', V_FLAG, NULL, OFF(json),
		.cmds = C_VIEW, .help = "JSON instead of tables" },
	[OPT_PRETTY] = { "pretty", 'p', V_FLAG, NULL, OFF(pretty),
		.cmds = C_VIEW, .help = "indented JSON (with --json)" },
	[OPT_BYTES] = { "bytes", 'b', V_FLAG, NULL, OFF(exact_bytes),
		.cmds = C_VIEW, .help = "exact byte counts, not 1.5Gi" },
	[OPT_INTERVAL] = { "interval", 'd', V_SECONDS, "SECONDS",
		OFF(interval_ms), 10, MAX_SECONDS * 1000ull,
		.cmds = CB(C_TOP), .help = "between refreshes; default 1" },
	[OPT_ITERATIONS] = { "iterations", 'n', V_U64, "COUNT",
		OFF(iterations), 1, UINT64_MAX,
		.cmds = CB(C_TOP) | CB(C_EVENTS) | CB(C_SCRUB) | CB(C_AGENT) |
			CB(C_EXPORTER) | CB(C_REMOTE),
		.help = "refreshes (top), events, frames cleared (scrub) or copied (agent), scrapes (exporter), blocks stored and fetched (remote), then exit" },
	[OPT_WIDTH] = { "width", 'w', V_U32, "COLUMNS", OFF(width), 40, 10000,
		.cmds = CB(C_TOP),
		.help = "screen width; default $COLUMNS, else the terminal's" },
	[OPT_FRAMES] = { "frames", 0, V_FRAMES, "N", OFF(frames), 1,
		KVARENA_MAX_FRAMES, .cmds = CB(C_CREATE),
		.help = "frames in the arena (required without --gang)" },
	[OPT_FRAME_SIZE] = { "frame-size", 0, V_SIZE, "SIZE", OFF(frame_size),
		KVARENA_MIN_FRAME_SIZE, KVARENA_MAX_FRAME_SIZE,
		.want = "a power of two", .cmds = CB(C_CREATE),
		.help = "bytes per frame; default 2Mi", .pow2 = true },
	[OPT_BACKEND] = { "backend", 0, V_WORD, "MEMORY", 0, 0, INT32_MAX,
		parse_backend, "host, cuda or cuda:DEVICE (DEVICE 0 to 2147483647)",
		CB(C_CREATE), "where the memory is; default host" },
	[OPT_FILE] = { "file", 0, V_WORD, "PATH", 0, 0, 0, parse_file,
		"a path of a regular file, or of one to make", CB(C_CREATE),
		"frames on a file, for the lower tier of a host arena" },
	[OPT_LOW_WATERMARK] = { "low-watermark", 0, V_FRAMES, "N",
		OFF(low_watermark), 0, KVARENA_MAX_FRAMES,
		.want = "at most --max-frames, or --frames", .cmds = CB(C_CREATE),
		.help = "pressure below N free frames; default 0: never" },
	[OPT_BPT] = { "bytes-per-token", 0, V_SIZE, "SIZE",
		OFF(bytes_per_token), 1, KVARENA_MAX_FRAME_SIZE,
		.want = "at most the frame size", .cmds = CB(C_CREATE),
		.help = "KV bytes per token, to show tokens" },
	[OPT_LAYERS] = { "layers", 0, V_U32, "N", OFF(layers), 1, 65536,
		.cmds = CB(C_CREATE),
		.help = "the model's layers (or --bytes-per-token)" },
	[OPT_KV_HEADS] = { "kv-heads", 0, V_U32, "N", OFF(kv_heads), 1, 65536,
		.cmds = CB(C_CREATE), .help = "its KV heads per layer" },
	[OPT_HEAD_DIM] = { "head-dim", 0, V_U32, "N", OFF(head_dim), 1, 65536,
		.cmds = CB(C_CREATE), .help = "its elements per head" },
	[OPT_DTYPE] = { "dtype", 0, V_WORD, "TYPE", 0, 0, 0, parse_dtype,
		"fp16, bf16, fp32 or fp8", CB(C_CREATE),
		"its element type; default fp16 (fp8: half the bytes)" },
	[OPT_HUGEPAGES] = { "hugepages", 0, V_FLAG, NULL, OFF(hugepages),
		.cmds = CB(C_CREATE),
		.help = "host memory on 2 MiB huge pages (reserved first)" },
	[OPT_HEADROOM] = { "headroom", 0, V_WORD, "SIZE|PCT%", 0, 0, 0,
		parse_headroom,
		"a size (1Gi) or a share of MemTotal from 0% to 100% (12.5%)",
		CB(C_CREATE),
		"MemAvailable to leave; default 10% of MemTotal" },
	[OPT_OWNER] = { "owner", 0, V_WORD, "USER", 0, 0, 0, parse_owner,
		"a user name or a uid from 0 to 4294967294",
		CB(C_CREATE) | CB(C_LIMIT),
		"the arena's owner; default: you" },
	[OPT_GROUP] = { "group", 0, V_WORD, "GROUP", 0, 0, 0, parse_group,
		"a group name or a gid from 0 to 4294967294",
		CB(C_CREATE) | CB(C_LIMIT),
		"the arena's group; default: your group" },
	[OPT_MODE] = { "mode", 0, V_WORD, "MODE", 0, 0, 0, parse_mode,
		"octal bits of 0666: r views, w attaches (0660)",
		CB(C_CREATE) | CB(C_LIMIT),
		"who may view and attach; default 0666" },
	[OPT_CLIENT_MIN_LIMIT] = { "client-min-limit", 0, V_FRAMES, "N",
		OFF(client_min_limit), 0, KVARENA_MAX_FRAMES,
		.want = "at most the arena's frames",
		.cmds = CB(C_CREATE) | CB(C_LIMIT),
		.help = "guarantee a user's clients may ask for, together; default 0" },
	[OPT_CLIENT_MAX_DEFAULT] = { "client-max-default", 0, V_FRAMES, "N",
		OFF(client_max_default), 0, KVARENA_MAX_FRAMES,
		.want = "at most the arena's frames",
		.cmds = CB(C_CREATE) | CB(C_LIMIT),
		.help = "max of a client that asks for none; 0: --client-max-limit" },
	[OPT_CLIENT_MAX_LIMIT] = { "client-max-limit", 0, V_FRAMES, "N",
		OFF(client_max_limit), 0, KVARENA_MAX_FRAMES,
		.want = "at most the arena's frames",
		.cmds = CB(C_CREATE) | CB(C_LIMIT),
		.help = "largest max of a client; default 0: the whole arena" },
	[OPT_CACHE_DOMAINS] = { "cache-domains", 0, V_WORD, "RULE", 0, 0, 0,
		parse_cache_domains, "uid, gid or arena",
		CB(C_CREATE) | CB(C_LIMIT),
		"who shares prefixes: the clients of one uid (default), of one gid, or all" },
	[OPT_DOMAIN_CACHED_MAX] = { "domain-cached-max", 0, V_FRAMES, "N",
		OFF(domain_cached_max), 0, KVARENA_MAX_FRAMES,
		.want = "at most the arena's frames",
		.cmds = CB(C_CREATE) | CB(C_LIMIT),
		.help = "cached frames a cache domain may keep; default 0: no cap" },
	[OPT_CLEAR_ALWAYS] = { "clear-always", 0, V_FLAG, NULL,
		OFF(clear_always), .cmds = CB(C_CREATE),
		.help = "clear host frames between any two holders, not only between domains" },
	[OPT_WAIT] = { "wait", 0, V_SECONDS, "SECONDS", OFF(wait_ms), 0,
		MAX_SECONDS * 1000ull,
		.cmds = CB(C_DESTROY) | CB(C_SCRUB) | CB(C_AGENT),
		.help = "wait this long for the clients to leave (destroy), or with nothing to clear (scrub) or copy (agent)" },
	[OPT_ID] = { "id", 0, V_U32, "ID", OFF(client_id), 1, UINT32_MAX,
		.cmds = CB(C_LIMIT) | CB(C_KILL) | CB(C_EVICT),
		.help = "the client by its id (as CLIENT #ID)" },
	[OPT_MIN] = { "min", 0, V_FRAMES, "N", OFF(min), 0, KVARENA_MAX_FRAMES,
		.want = "at most the arena's frames", .cmds = CB(C_LIMIT),
		.help = "frames guaranteed to the client" },
	[OPT_MAX] = { "max", 0, V_FRAMES, "N", OFF(max), 0, KVARENA_MAX_FRAMES,
		.want = "at most the arena's frames",
		.cmds = CB(C_LIMIT),
		.help = "frames the client may hold; 0: the whole arena" },
	[OPT_SIGNAL] = { "signal", 's', V_WORD, "SIGNAL", 0, 0, 0,
		parse_signal,
		"a name (TERM, SIGKILL, hup) or a number from 1 to 64",
		CB(C_KILL), "the signal to send; default SIGTERM" },
	[OPT_ZMQ] = { "zmq", 0, V_WORD, "ENDPOINT", 0, 0, 0, parse_zmq,
		ENDPOINT_WANT, CB(C_EVENTS) | CB(C_REMOTE),
		"publish on ZeroMQ (PUB) in vLLM's wire format" },
	[OPT_REPLAY] = { "replay", 0, V_WORD, "ENDPOINT", 0, 0, 0,
		parse_replay, ENDPOINT_WANT, CB(C_EVENTS) | CB(C_REMOTE),
		"bind a ROUTER socket resending kept batches" },
	[OPT_TOPIC] = { "topic", 0, V_WORD, "TOPIC", 0, 0, 0, parse_topic,
		"0 to 255 bytes", CB(C_EVENTS) | CB(C_REMOTE),
		"the messages' first part; default empty" },
	[OPT_MEDIUM] = { "medium", 0, V_WORD, "MEDIUM", 0, 0, 0, parse_medium,
		"1 to 31 characters of A-Z a-z 0-9 _ . -",
		CB(C_EVENTS) | CB(C_REMOTE),
		"the events' medium; default the arena's (GPU, CPU, DISK), REMOTE" },
	[OPT_HASHES] = { "hashes", 0, V_WORD, "FORM", 0, 0, 0, parse_hashes,
		"int or bytes", CB(C_EVENTS) | CB(C_REMOTE),
		"block hashes as int (the key's last 8 bytes) or bytes" },
	[OPT_OLDEST] = { "oldest", 0, V_FLAG, NULL, OFF(events_oldest),
		.cmds = CB(C_EVENTS),
		.help = "from the oldest event kept, not the next" },
	[OPT_LAYOUT] = { "layout", 0, V_WORD, "FORM", 0, 0, 0, parse_layout,
		"vllm, vllm-array, vllm-medium or vllm-first",
		CB(C_EVENTS) | CB(C_REMOTE),
		"which vLLM's messages; default vllm, the current" },
	[OPT_LINGER] = { "linger", 0, V_SECONDS, "SECONDS", OFF(linger_ms), 0,
		MAX_SECONDS * 1000ull, .cmds = CB(C_EVENTS),
		.help = "serve --replay this long after the end; default 5" },
	[OPT_DP_RANK] = { "dp-rank", 0, V_U32, "N", OFF(dp_rank), 0, INT32_MAX,
		.cmds = CB(C_EVENTS) | CB(C_REMOTE),
		.help = "the batches' data_parallel_rank; default 0" },
	[OPT_BIND] = { "bind", 0, V_FLAG, NULL, OFF(zmq_bind),
		.cmds = CB(C_EVENTS) | CB(C_REMOTE),
		.help = "bind the --zmq endpoint, whatever it is" },
	[OPT_CONNECT] = { "connect", 0, V_FLAG, NULL, OFF(zmq_connect),
		.cmds = CB(C_EVENTS) | CB(C_REMOTE),
		.help = "connect to the --zmq endpoint (a router's bound SUB)" },
	[OPT_WAIT_SUBSCRIBERS] = { "wait-subscribers", 0, V_U32, "N",
		OFF(wait_subscribers), 0, 1000, .cmds = CB(C_EVENTS),
		.help = "publish nothing until N subscriptions arrived" },
	[OPT_SALT] = { "salt", 0, V_WORD, "FROM", 0, 0, 0, parse_salt,
		"domain or none", CB(C_EVENTS) | CB(C_REMOTE),
		"blocks' salt and hash: with their cache domain (default) or not" },
	[OPT_MAX_FRAMES] = { "max-frames", 0, V_FRAMES, "N", OFF(max_frames),
		1, KVARENA_MAX_FRAMES, .want = "at least --frames",
		.cmds = CB(C_CREATE),
		.help = "frames resize may grow it to; default --frames" },
	[OPT_RESIZE_FRAMES] = { "frames", 0, V_FRAMES, "N", OFF(frames), 1,
		KVARENA_MAX_FRAMES, .want = "at most the arena's --max-frames",
		.cmds = CB(C_RESIZE),
		.help = "the arena's new size (or --bytes)" },
	[OPT_RESIZE_BYTES] = { "bytes", 0, V_FRAMES, "SIZE", OFF(frames), 1,
		KVARENA_MAX_FRAMES, .want = "at most the arena's --max-frames",
		.cmds = CB(C_RESIZE),
		.help = "the arena's new size in bytes (or --frames)",
		.bytes = true },
	[OPT_RESIZE_WAIT] = { "wait", 0, V_SECONDS, "SECONDS", OFF(wait_ms), 0,
		MAX_SECONDS * 1000ull, .cmds = CB(C_RESIZE),
		.help = "wait this long for held frames a shrink takes; default 0" },
	[OPT_CANCEL] = { "cancel", 0, V_FLAG, NULL, OFF(cancel),
		.cmds = CB(C_RESIZE),
		.help = "stop a shrink's waiting: the frames still held stay" },
	[OPT_LOWER] = { "lower", 0, V_WORD, "LOWER", 0, 0, 0, parse_lower,
		"an arena name: " NAME_WANT, CB(C_TIER),
		"the host or file arena to put below NAME, of NAME's frame size" },
	[OPT_NONE] = { "none", 0, V_FLAG, NULL, OFF(tier_none),
		.cmds = CB(C_TIER),
		.help = "take NAME's lower tier away (LOWER keeps what it holds)" },
	[OPT_FREE_TARGET] = { "free-target", 0, V_FRAMES, "N", OFF(free_target),
		0, KVARENA_MAX_FRAMES, .want = "at most the arena's frames",
		.cmds = CB(C_TIER),
		.help = "copy cached frames down while fewer than N are free; default 0: the low watermark (at least 1)" },
	[OPT_GANG] = { "gang", 0, V_WORD, "MEMBERS", 0, 0, 0, parse_gang,
		"2 to 16 arena names, comma-separated, in rank order (gpu0,gpu1)",
		CB(C_CREATE),
		"a gang over these arenas, one per rank: a frame is one in each" },
	[OPT_LISTEN] = { "listen", 'l', V_WORD, "ADDR", 0, 0, 0, parse_listen,
		"PORT, :PORT, HOST:PORT or [IPV6]:PORT, PORT from 0 to 65535",
		CB(C_EXPORTER),
		"where to serve; default " KVACTL_EXPORTER_LISTEN ", :PORT for every address" },
	[OPT_PER_CLIENT] = { "per-client", 0, V_FLAG, NULL, OFF(per_client),
		.cmds = CB(C_EXPORTER),
		.help = "a series per client (its id and pid), not per label" },
	[OPT_BY_LABEL] = { "by-label", 0, V_FLAG, NULL, OFF(by_label),
		.cmds = CB(C_METRICS),
		.help = "clients summed per label, as the exporter serves them" },
	[OPT_CHECK] = { "check", 0, V_FLAG, NULL, OFF(check),
		.cmds = CB(C_APPLY),
		.help = "check the file, change nothing (no device needed)" },
	[OPT_CONFIG] = { "config", 'c', V_WORD, "FILE", 0, 0, 0, parse_config,
		"a file's path", CB(C_REMOTE),
		"the remote tier's settings; default " KVACTL_REMOTE_CONF },
	[OPT_HELP] = { "help", 'h', V_FLAG, NULL, 0, .cmds = C_ALL,
		.help = "this help" },
	[OPT_VERSION] = { "version", 'V', V_FLAG, NULL, 0, .cmds = C_ALL,
		.help = "the version" },
};

/* ---- messages ------------------------------------------------------------- */

static int usage_err(const struct command *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int usage_err(const struct command *cmd, const char *fmt, ...)
{
	va_list ap;

	/* apply's lines: the message alone, for it to say where. */
	if (kvactl_err_hook) {
		char msg[512];
		int n = snprintf(msg, sizeof(msg), "%s%s", cmd ? cmd->name : "",
				 cmd ? ": " : "");

		va_start(ap, fmt);
		vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
		va_end(ap);
		kvactl_err_hook(msg);
		return KVACTL_USAGE;
	}
	fflush(stdout);
	fprintf(stderr, KVACTL_PROG ": %s%s", cmd ? cmd->name : "",
		cmd ? ": " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (cmd && cmd != &commands[C_HELP])
		fprintf(stderr, "\nTry 'kvarenactl help %s'.\n", cmd->name);
	else
		fputs("\nTry 'kvarenactl help'.\n", stderr);
	return KVACTL_USAGE;
}

/* Milliseconds as seconds: "0.01", "1", "86400". */
static char *fmt_seconds(char buf[KVACTL_NUM_LEN], uint64_t ms)
{
	int n = snprintf(buf, KVACTL_NUM_LEN, "%llu.%03u",
			 (unsigned long long)(ms / 1000),
			 (unsigned int)(ms % 1000));

	while (buf[n - 1] == '0')
		buf[--n] = '\0';
	if (buf[n - 1] == '.')
		buf[--n] = '\0';
	return buf;
}

/*
 * What an option's value must be, with its real limits: in full for a
 * message ("a whole number from 1 to 16777216"), or short for the help
 * ("1 to 16777216").
 */
static char *want(char *buf, size_t size, const struct option_row *r,
		  bool full)
{
	char a[KVACTL_NUM_LEN], b[KVACTL_NUM_LEN];
	int n = 0;

	switch (r->type) {
	case V_FLAG:
		n = snprintf(buf, size, "no value");
		break;
	case V_U32:
	case V_U64:
		n = snprintf(buf, size, "%s%llu to %llu",
			     full ? "a whole number from " : "",
			     (unsigned long long)r->min,
			     (unsigned long long)r->max);
		break;
	case V_SIZE:
		n = snprintf(buf, size, "%s%s to %s%s",
			     full ? "a size from " : "",
			     kvactl_fmt_size_exact(a, r->min),
			     kvactl_fmt_size_exact(b, r->max),
			     full ? " (bytes, or with K, M, G, T: 64Ki, 2M, 2.0Mi)" : "");
		break;
	case V_SECONDS:
		n = snprintf(buf, size, "%s%s to %s%s",
			     full ? "seconds from " : "",
			     fmt_seconds(a, r->min), fmt_seconds(b, r->max),
			     full ? ", at most 3 decimals" : " seconds");
		break;
	case V_WORD:
		n = snprintf(buf, size, "%s", r->want);
		break;
	case V_FRAMES:
		if (r->bytes)
			n = snprintf(buf, size, "a size of %llu to %llu whole frames%s",
				     (unsigned long long)r->min,
				     (unsigned long long)r->max,
				     full ? " (bytes, or with K, M, G, T: 512Mi, 1.5Gi)" :
				     " (1.5Gi)");
		else
			n = snprintf(buf, size, "%s%llu to %llu, or a size of whole frames (512Mi)",
				     full ? "a whole number from " : "",
				     (unsigned long long)r->min,
				     (unsigned long long)r->max);
		break;
	}
	if (r->type != V_WORD && r->want && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, ", %s", r->want);
	return buf;
}

static int bad_value(const struct command *cmd, const struct option_row *r,
		     const char *arg, int err)
{
	char q[KVACTL_QUOTE_LEN], w[256];

	return usage_err(cmd, "--%s %s: %swant %s", r->name,
			 kvactl_quote(q, arg),
			 err == -ERANGE ? "out of range: " : "",
			 want(w, sizeof(w), r, true));
}

/* ---- values --------------------------------------------------------------- */

static int parse_backend(struct kvactl_opts *o, const char *arg)
{
	uint32_t dev = 0;

	if (!strcmp(arg, "host")) {
		o->cuda = false;
		o->cuda_dev = 0;
		return 0;
	}
	if (strncmp(arg, "cuda", 4) || (arg[4] && arg[4] != ':'))
		return -EINVAL;
	if (arg[4]) {
		int err = kvactl_parse_u32(arg + 5, &dev);

		if (err)
			return err;
		if (dev > INT32_MAX)
			return -ERANGE;
	}
	o->cuda = true;
	o->cuda_dev = dev;
	return 0;
}

/* Any path; create says what is wrong with the file itself. */
static int parse_file(struct kvactl_opts *o, const char *arg)
{
	if (!*arg)
		return -EINVAL;
	if (strlen(arg) >= PATH_MAX)
		return -ERANGE;
	o->file = arg;
	return 0;
}

static int parse_config(struct kvactl_opts *o, const char *arg)
{
	if (!*arg)
		return -EINVAL;
	if (strlen(arg) >= PATH_MAX)
		return -ERANGE;
	o->config = arg;
	return 0;
}

static int parse_dtype(struct kvactl_opts *o, const char *arg)
{
	for (uint32_t d = 0; d < KVA_DTYPE_COUNT; d++) {
		if (!strcmp(arg, kva_dtype_name((enum kva_dtype)d))) {
			o->dtype = d;
			return 0;
		}
	}
	return -EINVAL;
}

/* "1Gi", or "12.5%": per mille of MemTotal. */
static int parse_headroom(struct kvactl_opts *o, const char *arg)
{
	size_t len = strlen(arg);
	uint64_t v;
	int err;

	if (len > 1 && arg[len - 1] == '%') {
		char num[16];

		if (len > sizeof(num))
			return -ERANGE;
		memcpy(num, arg, len - 1);
		num[len - 1] = '\0';
		/* Milliseconds are thousandths: tenths of a percent. */
		err = kvactl_parse_seconds(num, &v);
		if (err)
			return err;
		if (v % 100)
			return -EINVAL;
		if (v > 100000)
			return -ERANGE;
		o->headroom = v / 100;
		o->headroom_pct = true;
		return 0;
	}
	err = kvactl_parse_size(arg, &v);
	if (err)
		return err;
	o->headroom = v;
	o->headroom_pct = false;
	return 0;
}

static int parse_signal(struct kvactl_opts *o, const char *arg)
{
	return kvactl_parse_signal(arg, &o->signal);
}

/* A uid or gid: a number (not (u32)-1, which means none), or a name. */
static int parse_id(const char *arg, uint32_t *id, bool group)
{
	int err = kvactl_parse_u32(arg, id);

	if (err != -EINVAL)
		return err ? err : *id == UINT32_MAX ? -ERANGE : 0;
	return kvactl_lookup_id(arg, group, id);
}

static int parse_owner(struct kvactl_opts *o, const char *arg)
{
	return parse_id(arg, &o->owner_uid, false);
}

static int parse_group(struct kvactl_opts *o, const char *arg)
{
	return parse_id(arg, &o->owner_gid, true);
}

/* Octal, as chmod takes it, with only the r and w bits of 0666. */
static int parse_mode(struct kvactl_opts *o, const char *arg)
{
	uint32_t m = 0;
	const char *p;

	if (!*arg || strlen(arg) > 4)
		return -EINVAL;
	for (p = arg; *p; p++) {
		if (*p < '0' || *p > '7')
			return -EINVAL;
		m = m * 8 + (uint32_t)(*p - '0');
	}
	if (m & ~KVARENA_MODE_MASK)
		return -EINVAL;
	o->mode = m;
	return 0;
}

/* A ZeroMQ endpoint: TRANSPORT://ADDRESS, printable; libzmq checks the rest. */
static int check_endpoint(const char *arg)
{
	const char *sep = strstr(arg, "://");
	const char *p;

	if (!sep || sep == arg || !sep[3] || strlen(arg) > 255)
		return -EINVAL;
	for (p = arg; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
			return -EINVAL;
	for (p = arg; p < sep; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= '0' && *p <= '9'))
			return -EINVAL;
	return 0;
}

static int parse_zmq(struct kvactl_opts *o, const char *arg)
{
	int err = check_endpoint(arg);

	if (!err)
		o->zmq = arg;
	return err;
}

/*
 * exporter --listen: PORT, :PORT, HOST:PORT or [IPV6]:PORT, PORT a number
 * from 0 (the kernel picks one) to 65535; the host is resolved when the
 * exporter starts.
 */
static int parse_listen(struct kvactl_opts *o, const char *arg)
{
	const char *colon = strrchr(arg, ':'), *port = colon ? colon + 1 : arg;
	size_t hl = colon ? (size_t)(colon - arg) : 0;
	char *end;
	unsigned long n;

	if (!*port || strspn(port, "0123456789") != strlen(port))
		return -EINVAL;
	errno = 0;
	n = strtoul(port, &end, 10);
	if (errno || n > 65535 || strlen(port) > 5)
		return -EINVAL;
	/* A bare IPv6 address needs its brackets: "::1:9847" is ambiguous. */
	if (colon && memchr(arg, ':', hl) &&
	    (arg[0] != '[' || hl < 3 || arg[hl - 1] != ']'))
		return -EINVAL;
	for (size_t i = 0; i < hl; i++)
		if ((unsigned char)arg[i] <= ' ' || arg[i] == 0x7f)
			return -EINVAL;
	if (hl > 255)
		return -EINVAL;
	o->listen = arg;
	return 0;
}

static int parse_replay(struct kvactl_opts *o, const char *arg)
{
	int err = check_endpoint(arg);

	if (!err)
		o->replay = arg;
	return err;
}

static int parse_topic(struct kvactl_opts *o, const char *arg)
{
	if (strlen(arg) > 255)
		return -EINVAL;
	o->topic = arg;
	return 0;
}

static int parse_medium(struct kvactl_opts *o, const char *arg)
{
	size_t n = strlen(arg);

	if (!n || n > 31 || strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "abcdefghijklmnopqrstuvwxyz0123456789_.-") != n)
		return -EINVAL;
	o->medium = arg;
	return 0;
}

static int parse_hashes(struct kvactl_opts *o, const char *arg)
{
	if (strcmp(arg, "int") && strcmp(arg, "bytes"))
		return -EINVAL;
	o->hash_bytes = !strcmp(arg, "bytes");
	return 0;
}

static int parse_cache_domains(struct kvactl_opts *o, const char *arg)
{
	if (!strcmp(arg, "uid"))
		o->cache_domains = KVARENA_DOMAINS_UID;
	else if (!strcmp(arg, "gid"))
		o->cache_domains = KVARENA_DOMAINS_GID;
	else if (!strcmp(arg, "arena"))
		o->cache_domains = KVARENA_DOMAINS_ARENA;
	else
		return -EINVAL;
	return 0;
}

static int parse_layout(struct kvactl_opts *o, const char *arg)
{
	int l = kvactl_layout_by_name(arg);

	if (l < 0)
		return -EINVAL;
	o->layout = l;
	return 0;
}

static int parse_salt(struct kvactl_opts *o, const char *arg)
{
	if (strcmp(arg, "domain") && strcmp(arg, "none"))
		return -EINVAL;
	o->no_salt = !strcmp(arg, "none");
	return 0;
}

/* An arena's name, as the module takes it (kvactl_name_check(), quietly). */
static int parse_lower(struct kvactl_opts *o, const char *arg)
{
	size_t n = strlen(arg);

	if (!n || n >= KVARENA_NAME_LEN || arg[0] == '.' ||
	    strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		   "abcdefghijklmnopqrstuvwxyz0123456789_.-") != n)
		return -EINVAL;
	o->lower = arg;
	return 0;
}

/* M0,M1,...: 2 to 16 arena names, as the module takes them. */
static int parse_gang(struct kvactl_opts *o, const char *arg)
{
	int n = kvactl_split_names(arg, ',', o->members, KVARENA_GANG_MAX);

	if (n <= 0)
		return n ? n : -EINVAL;
	if (n < 2)
		return -ERANGE;
	o->gang = arg;
	o->nr_members = (uint32_t)n;
	return 0;
}

/* One option's value into @o: 0, or a usage error's exit status. */
static int take_value(struct kvactl_opts *o, const struct command *cmd,
		      const struct option_row *r, const char *arg)
{
	void *field = (char *)o + r->off;
	uint64_t v = 0;
	int err = 0;

	switch (r->type) {
	case V_FLAG:
		if (r->off)
			*(bool *)field = true;
		return 0;
	case V_WORD:
		err = r->parse(o, arg);
		return err ? bad_value(cmd, r, arg, err) : 0;
	case V_U32:
	case V_U64:
		err = kvactl_parse_u64(arg, &v);
		break;
	case V_SIZE:
		err = kvactl_parse_size(arg, &v);
		break;
	case V_SECONDS:
		err = kvactl_parse_seconds(arg, &v);
		break;
	case V_FRAMES:
		err = r->bytes ? -EINVAL : kvactl_parse_u64(arg, &v);
		if (err == -EINVAL) {
			/* A size: frames once the frame size is known. */
			err = kvactl_parse_size(arg, &v);
			if (!err) {
				o->sizes[r - opts] = arg;
				return 0;
			}
		}
		o->sizes[r - opts] = NULL;
		break;
	}
	if (!err && (v < r->min || v > r->max))
		err = -ERANGE;
	if (!err && r->pow2 && (v & (v - 1)))
		err = -EINVAL;
	if (err)
		return bad_value(cmd, r, arg, err);
	switch (r->type) {
	case V_U32:
	case V_FRAMES:
		*(uint32_t *)field = (uint32_t)v;
		break;
	case V_SECONDS:
		*(unsigned int *)field = (unsigned int)v;
		break;
	default:
		*(uint64_t *)field = v;
		break;
	}
	return 0;
}

/* ---- frame counts given as sizes ------------------------------------------------ */

/* --min above --max, both given, once both are frame counts. */
static int check_min_max(const struct command *cmd,
			 const struct kvactl_opts *o)
{
	if (kvactl_given(o, OPT_MIN) && kvactl_given(o, OPT_MAX) && o->max &&
	    o->min > o->max)
		return usage_err(cmd, "--min %u is above --max %u", o->min,
				 o->max);
	return 0;
}

static int resolve_frames(const struct command *cmd, struct kvactl_opts *o,
			  uint64_t frame_size)
{
	char q[KVACTL_QUOTE_LEN], w[256], b[KVACTL_NUM_LEN];

	for (int i = 0; i < KVACTL_NR_OPTS; i++) {
		const struct option_row *r = &opts[i];
		uint64_t bytes, n;

		if (!o->sizes[i] || !kvactl_given(o, (enum kvactl_opt)i))
			continue;
		if (kvactl_parse_size(o->sizes[i], &bytes))
			return bad_value(cmd, r, o->sizes[i], -EINVAL);
		if (bytes % frame_size)
			return usage_err(cmd, "--%s %s: not a whole number of %s frames",
					 r->name, kvactl_quote(q, o->sizes[i]),
					 kvactl_fmt_size_exact(b, frame_size));
		n = bytes / frame_size;
		if (n < r->min || n > r->max)
			return usage_err(cmd, "--%s %s: out of range: %llu frames of %s; want %s",
					 r->name, kvactl_quote(q, o->sizes[i]),
					 (unsigned long long)n,
					 kvactl_fmt_size_exact(b, frame_size),
					 want(w, sizeof(w), r, true));
		*(uint32_t *)((char *)o + r->off) = (uint32_t)n;
		o->sizes[i] = NULL;
	}
	return 0;
}

int kvactl_frames_resolve(struct kvactl_opts *o, uint64_t frame_size)
{
	const struct command *cmd = find_command(o->cmd);
	int ret = resolve_frames(cmd, o, frame_size);

	if (!ret && cmd == &commands[C_LIMIT])
		ret = check_min_max(cmd, o);
	return ret;
}

/* ---- checks that need several options --------------------------------------- */

#define HUGE_PAGE_SIZE (2u << 20)

/*
 * The client policy's numbers against each other and the most frames the
 * arena may have, which option @what gave.
 */
static int check_policy(const struct command *cmd,
			const struct kvactl_opts *o, uint32_t frames,
			const char *what)
{
	uint32_t max = o->client_max_limit ? o->client_max_limit : frames;

	if (o->client_max_limit > frames)
		return usage_err(cmd, "--client-max-limit %u is above %s %u",
				 o->client_max_limit, what, frames);
	if (o->domain_cached_max > frames)
		return usage_err(cmd, "--domain-cached-max %u is above %s %u",
				 o->domain_cached_max, what, frames);
	if (o->client_min_limit > max)
		return usage_err(cmd, "--client-min-limit %u is above the clients' max, %u",
				 o->client_min_limit, max);
	if (o->client_max_default > max)
		return usage_err(cmd, "--client-max-default %u is above the clients' max, %u",
				 o->client_max_default, max);
	return 0;
}

/*
 * create NAME --gang M0,M1,...: the members are as they are (frames,
 * memory, size), so only the policy options go with it, and each member
 * once, none of them NAME.  The policy's frame counts are checked once
 * the first member's size is known.
 */
static int check_gang(struct kvactl_opts *o, const struct command *cmd)
{
	static const enum kvactl_opt not_with[] = {
		OPT_FRAMES, OPT_MAX_FRAMES, OPT_FRAME_SIZE, OPT_BACKEND,
		OPT_FILE, OPT_LOW_WATERMARK, OPT_BPT, OPT_LAYERS, OPT_KV_HEADS,
		OPT_HEAD_DIM, OPT_DTYPE, OPT_HUGEPAGES, OPT_HEADROOM,
		OPT_CLEAR_ALWAYS,
	};

	for (size_t i = 0; i < sizeof(not_with) / sizeof(not_with[0]); i++)
		if (kvactl_given(o, not_with[i]))
			return usage_err(cmd, "--%s does not go with --gang: a gang's frames are its members', as they are",
					 opts[not_with[i]].name);
	for (uint32_t r = 0; r < o->nr_members; r++) {
		if (!strcmp(o->members[r], o->args[0]))
			return usage_err(cmd, "--gang names \"%s\", the gang itself: its members are other arenas",
					 o->members[r]);
		for (uint32_t k = 0; k < r; k++)
			if (!strcmp(o->members[r], o->members[k]))
				return usage_err(cmd, "--gang names \"%s\" twice: each member is the memory of one rank",
						 o->members[r]);
	}
	return 0;
}

static int check_create(struct kvactl_opts *o)
{
	const struct command *cmd = &commands[C_CREATE];
	const char *what;
	uint32_t table;
	int err;
	char b[2][KVACTL_NUM_LEN];
	bool geometry = kvactl_given(o, OPT_LAYERS) ||
			kvactl_given(o, OPT_KV_HEADS) ||
			kvactl_given(o, OPT_HEAD_DIM) ||
			kvactl_given(o, OPT_DTYPE);

	if (o->gang)
		return check_gang(o, cmd);
	if (!kvactl_given(o, OPT_FRAMES))
		return usage_err(cmd, "--frames is required");
	err = resolve_frames(cmd, o, o->frame_size);
	if (err)
		return err;
	table = kvactl_given(o, OPT_MAX_FRAMES) ? o->max_frames : o->frames;
	if (table < o->frames)
		return usage_err(cmd, "--max-frames %u is below --frames %u",
				 o->max_frames, o->frames);
	/* Limits in frames are against the most the arena may become. */
	what = kvactl_given(o, OPT_MAX_FRAMES) ? "--max-frames" : "--frames";
	if (o->low_watermark > table)
		return usage_err(cmd, "--low-watermark %u is above %s %u",
				 o->low_watermark, what, table);
	err = check_policy(cmd, o, table, what);
	if (err)
		return err;
	/* A file arena is the file's ranges: no other memory, no resize. */
	if (o->file && kvactl_given(o, OPT_BACKEND))
		return usage_err(cmd, "--file or --backend, not both: a file arena's frames are its file");
	if (o->file && table > o->frames)
		return usage_err(cmd, "--max-frames %u is above --frames %u: a file arena is not resized",
				 o->max_frames, o->frames);
	if (o->file && o->clear_always)
		return usage_err(cmd, "--clear-always is for host arenas: nobody but the agent reads a file arena's frames");
	if (o->hugepages && (o->cuda || o->file))
		return usage_err(cmd, "--hugepages is for host memory");
	if (o->hugepages && o->frame_size % HUGE_PAGE_SIZE)
		return usage_err(cmd, "--hugepages needs a --frame-size that is a multiple of 2Mi");
	if (kvactl_given(o, OPT_HEADROOM) && (o->cuda || o->file || o->hugepages))
		return usage_err(cmd, "--headroom is for host memory without --hugepages");
	if (geometry && kvactl_given(o, OPT_BPT))
		return usage_err(cmd, "give --bytes-per-token or the model geometry, not both");
	if (kvactl_given(o, OPT_BPT) && o->bytes_per_token > o->frame_size)
		return usage_err(cmd, "--bytes-per-token %s is more than a frame (%s): a token must fit in a frame",
				 kvactl_fmt_size_exact(b[0], o->bytes_per_token),
				 kvactl_fmt_size_exact(b[1], o->frame_size));
	if (geometry) {
		struct kva_geometry g = {
			.layers = o->layers,
			.kv_heads = o->kv_heads,
			.head_dim = o->head_dim,
			.dtype = o->dtype,
			.frame_size = o->frame_size,
		};
		err = kva_geometry_init(&g);
		if (err == -E2BIG)
			return usage_err(cmd, "one token (%llu bytes) is more than a frame (%s): a token must fit in a frame",
					 2ull * g.layers * g.kv_heads *
					 g.head_dim *
					 kva_dtype_size((enum kva_dtype)g.dtype),
					 kvactl_fmt_size_exact(b[0], o->frame_size));
		if (err)
			return usage_err(cmd, "the model geometry needs --layers, --kv-heads and --head-dim, each 1 to 65536");
		o->bytes_per_token = g.bytes_per_token;
	}
	return 0;
}

static int check_client(struct kvactl_opts *o, const struct command *cmd)
{
	bool by_id = kvactl_given(o, OPT_ID);

	if (o->nargs < 2 && !by_id)
		return usage_err(cmd, "name the client: a label, or --id ID (kvarenactl clients %s)",
				 o->args[0]);
	if (o->nargs == 2 && by_id)
		return usage_err(cmd, "name the client once: CLIENT or --id, not both");
	if (o->nargs == 2 && o->args[1][0] == '#') {
		/* "#3" is --id 3. */
		char q[KVACTL_QUOTE_LEN];
		uint64_t id;

		if (kvactl_parse_u64(o->args[1] + 1, &id) || !id ||
		    id > UINT32_MAX)
			return usage_err(cmd, "client %s: #ID wants an id from 1 to %u",
					 kvactl_quote(q, o->args[1]), UINT32_MAX);
		o->client_id = (uint32_t)id;
		o->given |= 1ull << OPT_ID;
		o->nargs = 1;
	}
	return 0;
}

static int check_limit(struct kvactl_opts *o)
{
	const struct command *cmd = &commands[C_LIMIT];
	int ret;

	/* limit NAME [policy options]: the arena's policy. */
	if (kvactl_policy_given(o)) {
		if (o->nargs > 1 || kvactl_given(o, OPT_ID) ||
		    kvactl_given(o, OPT_MIN) || kvactl_given(o, OPT_MAX))
			return usage_err(cmd, "the arena's policy or a client's limits, not both");
		/* Checked against the arena's size once it is known. */
		return 0;
	}
	ret = check_client(o, cmd);
	if (ret)
		return ret;
	if (!kvactl_given(o, OPT_MIN) && !kvactl_given(o, OPT_MAX))
		return usage_err(cmd, "give --min, --max or both");
	/* Sizes are compared once the arena's frame size made them frames. */
	if (o->sizes[OPT_MIN] || o->sizes[OPT_MAX])
		return 0;
	return check_min_max(cmd, o);
}

static int check_kill(struct kvactl_opts *o)
{
	return check_client(o, &commands[C_KILL]);
}

static int check_evict(struct kvactl_opts *o)
{
	return check_client(o, &commands[C_EVICT]);
}

/* The options of a --zmq stream (events, remote): only with --zmq. */
static int check_zmq(struct kvactl_opts *o, const struct command *cmd)
{
	static const enum kvactl_opt zmq_only[] = {
		OPT_REPLAY, OPT_TOPIC, OPT_HASHES, OPT_LAYOUT, OPT_LINGER,
		OPT_DP_RANK, OPT_BIND, OPT_CONNECT, OPT_WAIT_SUBSCRIBERS,
		OPT_SALT, OPT_MEDIUM,
	};

	for (size_t i = 0; !o->zmq && i < sizeof(zmq_only) / sizeof(zmq_only[0]); i++)
		/* events' JSON lines say the medium too */
		if (kvactl_given(o, zmq_only[i]) &&
		    !(zmq_only[i] == OPT_MEDIUM && cmd == &commands[C_EVENTS]))
			return usage_err(cmd, "--%s goes with --zmq",
					 opts[zmq_only[i]].name);
	if (o->zmq_bind && o->zmq_connect)
		return usage_err(cmd, "--bind and --connect: one or the other");
	return 0;
}

static int check_events(struct kvactl_opts *o)
{
	return check_zmq(o, &commands[C_EVENTS]);
}

static int check_remote(struct kvactl_opts *o)
{
	return check_zmq(o, &commands[C_REMOTE]);
}

static int check_resize(struct kvactl_opts *o)
{
	const struct command *cmd = &commands[C_RESIZE];
	bool frames = kvactl_given(o, OPT_RESIZE_FRAMES);
	bool bytes = kvactl_given(o, OPT_RESIZE_BYTES);

	if (o->cancel && (frames || bytes || kvactl_given(o, OPT_RESIZE_WAIT)))
		return usage_err(cmd, "--cancel goes alone: no --frames, --bytes or --wait");
	if (o->cancel)
		return 0;
	if (frames && bytes)
		return usage_err(cmd, "--frames or --bytes, not both");
	if (!frames && !bytes)
		return usage_err(cmd, "give the new size: --frames N or --bytes SIZE (or --cancel)");
	return 0;
}

static int check_tier(struct kvactl_opts *o)
{
	const struct command *cmd = &commands[C_TIER];
	char q[KVACTL_QUOTE_LEN];

	if (o->lower && o->tier_none)
		return usage_err(cmd, "--lower or --none, not both");
	if (!o->lower && !o->tier_none)
		return usage_err(cmd, "give --lower LOWER, or --none to take the lower tier away");
	if (o->tier_none && kvactl_given(o, OPT_FREE_TARGET))
		return usage_err(cmd, "--free-target goes with --lower");
	if (o->lower && !strcmp(o->lower, o->args[0]))
		return usage_err(cmd, "--lower %s: an arena cannot be its own lower tier",
				 kvactl_quote(q, o->lower));
	return 0;
}

/* ---- help --------------------------------------------------------------------- */

static void help(FILE *f)
{
	fputs(
"Usage: kvarenactl [-j [-p]] [-b] COMMAND [ARGS]\n"
"Show and manage the arenas of kvarena.ko (/dev/kvarena).\n"
"\n"
"  stat [NAME]       capacity, held, filled, cached and free memory, like free\n"
"  clients [NAME]    one row per client: limits, frames held, filled, failures\n"
"  top [NAME] [-d SECONDS] [-n COUNT] [-w COLUMNS]   both, redrawn; q quits\n"
"  metrics|exporter [NAME] [-l ADDR]  Prometheus's text format, or it over HTTP\n"
"  create NAME --frames N [--backend B] ... | NAME --gang M0,M1,...  an arena\n"
"  destroy NAME [--wait SECONDS]   refused while clients are attached\n"
"  limit NAME CLIENT [--min N] [--max N] | NAME [--owner U] ...  limits, policy\n"
"  kill NAME CLIENT [-s SIGNAL]    signal every process holding the client\n"
"  evict NAME CLIENT  take a host arena client's frames back, revoked\n"
"  events NAME [--zmq ENDPOINT]   KV events as JSON lines, or vLLM's on ZeroMQ\n"
"  scrub NAME [-n COUNT] [--wait SECONDS]  clear CUDA frames between domains\n"
"  resize NAME --frames N | --bytes SIZE [--wait SECONDS]   shrink or grow it\n"
"  tier NAME --lower LOWER [--free-target N] | --none   a lower tier, or none\n"
"  agent|remote NAME [-n COUNT]  copy frames down the tier and up, or to Redis\n"
"  apply [FILE] [--check]   make the arenas " KVACTL_ARENAS_CONF " lists\n"
"\n"
"  -j, --json   JSON output (stat, clients, top)   -p, --pretty   indented JSON\n"
"  -b, --bytes  exact byte counts, not 1.5Gi        -h, --help     -V, --version\n"
"SIZE: 2097152, 2M, 2Mi, 2.0Mi or 2MiB; a frame count N may be a SIZE (512Mi).\n"
"Changes need CAP_SYS_ADMIN, viewing read access to the device.  Exit status:\n"
"0 ok, 1 failed, 2 usage error.  help COMMAND: its options; see operators.rst.\n",
	      f);
}

/* One command's usage and every option it takes, with their limits. */
static void help_command(FILE *f, const struct command *cmd)
{
	enum cmd_id id = (enum cmd_id)(cmd - commands);
	char w[256], name[48];

	fprintf(f, "Usage: kvarenactl %s %s\n%s.\n", cmd->name, cmd->usage,
		cmd->what);
	if (cmd->more)
		fputs(cmd->more, f);
	for (int i = 0; i < KVACTL_NR_OPTS; i++) {
		const struct option_row *r = &opts[i];

		if (!(r->cmds & CB(id)) || i == OPT_HELP || i == OPT_VERSION)
			continue;
		if (r->letter)
			snprintf(name, sizeof(name), "-%c, --%s%s%s", r->letter,
				 r->name, r->arg ? " " : "", r->arg ? r->arg : "");
		else
			snprintf(name, sizeof(name), "    --%s%s%s", r->name,
				 r->arg ? " " : "", r->arg ? r->arg : "");
		fprintf(f, "  %-24s  %s\n", name, r->help);
		if (r->type != V_FLAG)
			fprintf(f, "  %-24s    %s\n", "",
				want(w, sizeof(w), r, false));
	}
}

/* ---- the parser ------------------------------------------------------------------ */

/*
 * The row of option --@name (@len bytes of it) for command @cmd: the one
 * that command takes, else (no command yet, or one that does not take
 * it) the first of that name.
 */
static const struct option_row *find_long(const char *name, size_t len,
					  const struct command *cmd)
{
	const struct option_row *first = NULL;

	for (int i = 0; i < KVACTL_NR_OPTS; i++) {
		if (!opts[i].name || strlen(opts[i].name) != len ||
		    strncmp(opts[i].name, name, len))
			continue;
		if (cmd && (opts[i].cmds & CB(cmd - commands)))
			return &opts[i];
		if (!first)
			first = &opts[i];
	}
	return first;
}

static const struct option_row *find_short(char c)
{
	for (int i = 0; i < KVACTL_NR_OPTS; i++)
		if (opts[i].letter && opts[i].letter == c)
			return &opts[i];
	return NULL;
}

static const struct command *find_command(const char *name)
{
	for (int i = 0; i < NR_CMDS; i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/*
 * A value given as the next word: none if there is no next word or it
 * looks like an option (a negative number is a value, and a wrong one).
 * Any other value that starts with '-' goes in the same word: --x=-y.
 */
static const char *next_value(int argc, char **argv, int *i)
{
	const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;

	if (!v || (v[0] == '-' && v[1] && !(v[1] >= '0' && v[1] <= '9')))
		return NULL;
	return argv[++*i];
}

struct parse {
	const struct command *cmd;
	const struct option_row *given[KVACTL_NR_OPTS];
	const char *values[KVACTL_NR_OPTS];
	int order[KVACTL_NR_OPTS];	/* option indices in command-line order */
	int nr_given;
};

static int missing_value(const struct command *cmd,
			 const struct option_row *r, bool letter)
{
	char w[256];

	if (letter)
		return usage_err(cmd, "-%c (--%s) needs a value: %s", r->letter,
				 r->name, want(w, sizeof(w), r, true));
	return usage_err(cmd, "--%s needs a value: %s", r->name,
			 want(w, sizeof(w), r, true));
}

static int note(struct parse *p, const struct option_row *r, const char *v)
{
	int i = (int)(r - opts);

	if (!p->given[i])
		p->order[p->nr_given++] = i;
	p->given[i] = r;
	p->values[i] = v;		/* the last one given counts */
	return 0;
}

/* A positional word: the command, or one of its arguments. */
static int positional(struct parse *p, struct kvactl_opts *o, const char *w,
		      bool dashdash)
{
	char q[KVACTL_QUOTE_LEN];

	if (!p->cmd && dashdash)
		return usage_err(NULL, "no command before %s",
				 kvactl_quote(q, w));
	if (!p->cmd) {
		p->cmd = find_command(w);
		if (!p->cmd)
			return usage_err(NULL, "unknown command %s",
					 kvactl_quote(q, w));
		return 0;
	}
	if (o->nargs == p->cmd->max_args)
		return usage_err(p->cmd, "unexpected argument %s",
				 kvactl_quote(q, w));
	o->args[o->nargs++] = w;
	return 0;
}

static int parse_words(int argc, char **argv, struct parse *p,
		       struct kvactl_opts *o)
{
	char q[KVACTL_QUOTE_LEN];
	bool dashdash = false;
	int ret;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (dashdash || a[0] != '-' || !a[1]) {
			ret = positional(p, o, a, dashdash);
		} else if (!strcmp(a, "--")) {
			dashdash = true;
			ret = 0;
		} else if (a[1] == '-') {
			const char *eq = strchr(a + 2, '=');
			size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
			const struct option_row *r = find_long(a + 2, len,
								 p->cmd);
			const char *v = eq ? eq + 1 : NULL;

			if (!r)
				return usage_err(p->cmd, "unknown option %s",
						 kvactl_quote(q, a));
			if (r->type == V_FLAG && v)
				return usage_err(p->cmd, "--%s takes no value",
						 r->name);
			if (r->type != V_FLAG && !v)
				v = next_value(argc, argv, &i);
			if (r->type != V_FLAG && !v)
				return missing_value(p->cmd, r, false);
			ret = note(p, r, v);
		} else {
			/* -jp, -d1, -d 1 */
			for (const char *c = a + 1; *c; c++) {
				const struct option_row *r = find_short(*c);
				const char *v = NULL;
				char bad[3] = { '-', *c, 0 };

				if (!r)
					return usage_err(p->cmd, "unknown option %s",
							 kvactl_quote(q, bad));
				if (r->type != V_FLAG) {
					v = c[1] ? c + 1 : next_value(argc, argv, &i);
					if (!v)
						return missing_value(p->cmd, r, true);
					note(p, r, v);
					break;
				}
				note(p, r, NULL);
			}
			ret = 0;
		}
		if (ret)
			return ret;
	}
	return 0;
}

void kvactl_opts_defaults(struct kvactl_opts *o)
{
	*o = (struct kvactl_opts){
		.interval_ms = 1000,
		.frame_size = 2u << 20,
		.dtype = KVA_DTYPE_FP16,
		.headroom = 100,		/* per mille: 10% */
		.headroom_pct = true,
		.signal = SIGTERM,
		.linger_ms = 5000,
	};
}

int kvactl_cmdline(int argc, char **argv, struct kvactl_opts *o)
{
	struct parse p = { 0 };
	int ret;

	ret = parse_words(argc, argv, &p, o);
	if (ret)
		return ret;
	if (p.given[OPT_HELP] || (p.cmd == &commands[C_HELP])) {
		const struct command *c = p.cmd;
		char q[KVACTL_QUOTE_LEN];

		if (c == &commands[C_HELP] && o->nargs) {
			c = find_command(o->args[0]);
			if (!c)
				return usage_err(&commands[C_HELP], "unknown command %s",
						 kvactl_quote(q, o->args[0]));
		}
		if (!c || c == &commands[C_HELP])
			help(stdout);
		else
			help_command(stdout, c);
		return KVACTL_OK;
	}
	if (p.given[OPT_VERSION]) {
		printf("kvarenactl %s (kvarena ABI %d)\n", KVA_VERSION,
		       KVARENA_ABI_VERSION);
		kvactl_print_built();
		kvactl_print_module();
		return KVACTL_OK;
	}
	if (!p.cmd)
		return usage_err(NULL, "no command");

	/* Values in command-line order, so the first wrong one is named. */
	for (int k = 0; k < p.nr_given; k++) {
		int i = p.order[k];
		const struct option_row *r = p.given[i];

		if (!(r->cmds & CB(p.cmd - commands)))
			return usage_err(p.cmd, "--%s does not apply to %s",
					 r->name, p.cmd->name);
		ret = take_value(o, p.cmd, r, p.values[i]);
		if (ret)
			return ret;
		o->given |= 1ull << i;
	}
	if (o->nargs < p.cmd->min_args)
		return usage_err(p.cmd, "usage: kvarenactl %s %s",
				 p.cmd->name, p.cmd->usage);
	if (o->nargs && p.cmd != &commands[C_APPLY] &&
	    kvactl_name_check(p.cmd->name, o->args[0],
			      p.cmd == &commands[C_CREATE]))
		return KVACTL_USAGE;
	if (o->pretty && !o->json)
		return usage_err(p.cmd, "--pretty goes with --json");
	if (p.cmd->check) {
		ret = p.cmd->check(o);
		if (ret)
			return ret;
	}
	o->cmd = p.cmd->name;
	o->run = p.cmd->run;
	return -1;
}
