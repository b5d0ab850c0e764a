// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl - show and manage kvarena arenas.
 *
 *   kvarenactl [options] stat|clients|top|metrics [NAME]
 *   kvarenactl create NAME --frames N [--frame-size S] [--backend B] ...
 *   kvarenactl destroy NAME
 *   kvarenactl limit NAME CLIENT [--min N] [--max N]
 *
 * Options may come before or after the command.  See
 * Documentation/operators.rst.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <kvarena/layout.h>

#include "kvarenactl.h"

static void help(FILE *f)
{
	fputs(
"Usage: kvarenactl [-j [-p]] [-b] COMMAND [ARGS]\n"
"Show and manage the arenas of kvarena.ko (/dev/kvarena).\n"
"\n"
"  stat [NAME]       capacity, held, filled, cached and free memory, like free\n"
"  clients [NAME]    one row per client: limits, frames held, filled, failures\n"
"  top [NAME] [-d SECONDS] [-n ITERATIONS]     both, live; q or Ctrl-C quits\n"
"  metrics [NAME]    the Prometheus text exposition format\n"
"  create NAME --frames N [--frame-size SIZE] [--backend host|cuda[:DEV]]\n"
"        [--low-watermark N] [--bytes-per-token SIZE | --layers N --kv-heads N\n"
"        --head-dim N [--dtype fp16|bf16|fp32]] [--hugepages]\n"
"                    N frames, 2M each, host memory by default; kept till destroy\n"
"  destroy NAME      refused while clients are attached\n"
"  limit NAME CLIENT [--min N] [--max N]    CLIENT: its id or unique label\n"
"\n"
"  -j, --json   JSON output (stat, clients, top)   -p, --pretty   indented JSON\n"
"  -b, --bytes  exact byte counts, not 1.5Gi        -h, --help     -V, --version\n"
"\n"
"Viewing needs read access to the device; create, destroy and limit need root\n"
"(CAP_SYS_ADMIN).  Figures come from the STAT and CLIENTS ioctls; the same\n"
"totals are in /sys/class/misc/kvarena/arenas/NAME/.  $KVA_DEVICE names\n"
"another device node, $KVA_CUDA_LIBRARY another libcuda.so.1.\n"
"Exit status: 0 ok, 1 the operation failed, 2 usage error.\n"
"See Documentation/operators.rst.\n", f);
}

/* Every option; a command lists those it takes as a bit mask. */
enum opt {
	O_JSON, O_PRETTY, O_BYTES, O_INTERVAL, O_ITERATIONS,
	O_FRAMES, O_FRAME_SIZE, O_BACKEND, O_LOW_WATERMARK, O_BPT,
	O_LAYERS, O_KV_HEADS, O_HEAD_DIM, O_DTYPE, O_HUGEPAGES,
	O_MIN, O_MAX, O_HELP, O_VERSION,
};

#define BIT(o)		(1u << (o))
#define LONG_ONLY	256	/* getopt ids of options without a letter */

static const struct option long_opts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "pretty", no_argument, NULL, 'p' },
	{ "bytes", no_argument, NULL, 'b' },
	{ "interval", required_argument, NULL, 'd' },
	{ "iterations", required_argument, NULL, 'n' },
	{ "frames", required_argument, NULL, LONG_ONLY + O_FRAMES },
	{ "frame-size", required_argument, NULL, LONG_ONLY + O_FRAME_SIZE },
	{ "backend", required_argument, NULL, LONG_ONLY + O_BACKEND },
	{ "low-watermark", required_argument, NULL, LONG_ONLY + O_LOW_WATERMARK },
	{ "bytes-per-token", required_argument, NULL, LONG_ONLY + O_BPT },
	{ "layers", required_argument, NULL, LONG_ONLY + O_LAYERS },
	{ "kv-heads", required_argument, NULL, LONG_ONLY + O_KV_HEADS },
	{ "head-dim", required_argument, NULL, LONG_ONLY + O_HEAD_DIM },
	{ "dtype", required_argument, NULL, LONG_ONLY + O_DTYPE },
	{ "hugepages", no_argument, NULL, LONG_ONLY + O_HUGEPAGES },
	{ "min", required_argument, NULL, LONG_ONLY + O_MIN },
	{ "max", required_argument, NULL, LONG_ONLY + O_MAX },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static const char short_opts[] = "-jpbd:n:hV";

/* getopt's id of an option to enum opt. */
static enum opt opt_of(int id)
{
	switch (id) {
	case 'j': return O_JSON;
	case 'p': return O_PRETTY;
	case 'b': return O_BYTES;
	case 'd': return O_INTERVAL;
	case 'n': return O_ITERATIONS;
	case 'h': return O_HELP;
	case 'V': return O_VERSION;
	default: return (enum opt)(id - LONG_ONLY);
	}
}

static const char *opt_name(enum opt o)
{
	for (const struct option *l = long_opts; l->name; l++)
		if (opt_of(l->val) == o)
			return l->name;
	return "?";
}

#define VIEW_OPTS	(BIT(O_JSON) | BIT(O_PRETTY) | BIT(O_BYTES))
#define CREATE_OPTS	(BIT(O_FRAMES) | BIT(O_FRAME_SIZE) | BIT(O_BACKEND) | \
			 BIT(O_LOW_WATERMARK) | BIT(O_BPT) | BIT(O_LAYERS) | \
			 BIT(O_KV_HEADS) | BIT(O_HEAD_DIM) | BIT(O_DTYPE) | \
			 BIT(O_HUGEPAGES))
#define GEOMETRY_OPTS	(BIT(O_LAYERS) | BIT(O_KV_HEADS) | BIT(O_HEAD_DIM) | \
			 BIT(O_DTYPE))

/* What each command takes. */
struct command {
	const char *name;
	int (*run)(const struct kvactl_opts *o);
	int min_args, max_args;
	const char *usage;		/* its arguments */
	unsigned int opts;		/* BIT(enum opt) it accepts */
};

static const struct command commands[] = {
	{ "stat", kvactl_cmd_stat, 0, 1, "[NAME]", VIEW_OPTS },
	{ "clients", kvactl_cmd_clients, 0, 1, "[NAME]", VIEW_OPTS },
	{ "top", kvactl_cmd_top, 0, 1, "[NAME]",
	  VIEW_OPTS | BIT(O_INTERVAL) | BIT(O_ITERATIONS) },
	{ "metrics", kvactl_cmd_metrics, 0, 1, "[NAME]", 0 },
	{ "create", kvactl_cmd_create, 1, 1, "NAME --frames N [options]",
	  CREATE_OPTS },
	{ "destroy", kvactl_cmd_destroy, 1, 1, "NAME", 0 },
	{ "limit", kvactl_cmd_limit, 2, 2, "NAME CLIENT [--min N] [--max N]",
	  BIT(O_MIN) | BIT(O_MAX) },
};

#define NR_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static int usage_err(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int usage_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, KVACTL_PROG ": %s%s", cmd ? cmd : "", cmd ? ": " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'kvarenactl --help'.\n", stderr);
	return KVACTL_USAGE;
}

static int bad_value(const char *cmd, enum opt o, const char *arg, int err,
		     const char *want)
{
	return usage_err(cmd, "--%s \"%s\": %s%s", opt_name(o), arg,
			 err == -ERANGE ? "out of range: " : "", want);
}

static int parse_backend(struct kvactl_opts *o, const char *arg)
{
	if (!strcmp(arg, "host")) {
		o->cuda = false;
		return 0;
	}
	if (!strncmp(arg, "cuda", 4) && (!arg[4] || arg[4] == ':')) {
		o->cuda = true;
		o->cuda_dev = 0;
		if (!arg[4] || !kvactl_parse_u32(arg + 5, &o->cuda_dev))
			return 0;
	}
	return bad_value(NULL, O_BACKEND, arg, -EINVAL,
			 "host, cuda or cuda:DEVICE");
}

static int parse_dtype(const char *arg, uint32_t *dtype)
{
	for (uint32_t d = 0; d < KVA_DTYPE_COUNT; d++) {
		if (!strcmp(arg, kva_dtype_name((enum kva_dtype)d))) {
			*dtype = d;
			return 0;
		}
	}
	return -EINVAL;
}

/* One option's value into @o. */
static int take_opt(struct kvactl_opts *o, enum opt id, const char *arg)
{
	uint32_t *u32 = NULL;
	uint64_t *size = NULL;
	int err;

	switch (id) {
	case O_JSON: o->json = true; return 0;
	case O_PRETTY: o->pretty = true; return 0;
	case O_BYTES: o->exact_bytes = true; return 0;
	case O_HUGEPAGES: o->hugepages = true; return 0;
	case O_BACKEND: return parse_backend(o, arg);
	case O_INTERVAL:
		err = kvactl_parse_seconds(arg, &o->interval_ms);
		return err ? bad_value(NULL, id, arg, err,
				       "seconds, at least 0.01") : 0;
	case O_ITERATIONS:
		err = kvactl_parse_u64(arg, &o->iterations);
		return err || !o->iterations ?
		       bad_value(NULL, id, arg, err, "a count, at least 1") : 0;
	case O_DTYPE:
		return parse_dtype(arg, &o->dtype) ?
		       bad_value(NULL, id, arg, -EINVAL, "fp16, bf16 or fp32") : 0;
	case O_FRAMES: u32 = &o->frames; break;
	case O_LOW_WATERMARK: u32 = &o->low_watermark; break;
	case O_LAYERS: u32 = &o->layers; break;
	case O_KV_HEADS: u32 = &o->kv_heads; break;
	case O_HEAD_DIM: u32 = &o->head_dim; break;
	case O_MIN: u32 = &o->min; o->have_min = true; break;
	case O_MAX: u32 = &o->max; o->have_max = true; break;
	case O_FRAME_SIZE: size = &o->frame_size; break;
	case O_BPT: size = &o->bytes_per_token; break;
	default: return 0;
	}
	if (u32) {
		err = kvactl_parse_u32(arg, u32);
		return err ? bad_value(NULL, id, arg, err, "a whole number") : 0;
	}
	err = kvactl_parse_size(arg, size);
	return err ? bad_value(NULL, id, arg, err,
			       "bytes, or a number with K, M, G or T") : 0;
}

#define HUGE_PAGE_SIZE (2u << 20)

/* The checks of create's options that need them all. */
static int check_create(struct kvactl_opts *o, unsigned int given)
{
	char b[KVACTL_NUM_LEN];

	if (!(given & BIT(O_FRAMES)))
		return usage_err("create", "--frames is required");
	if (!o->frames || o->frames > KVARENA_MAX_FRAMES)
		return usage_err("create", "--frames %u: out of range: 1 to %u",
				 o->frames, KVARENA_MAX_FRAMES);
	if (o->frame_size < KVARENA_MIN_FRAME_SIZE ||
	    o->frame_size > KVARENA_MAX_FRAME_SIZE ||
	    (o->frame_size & (o->frame_size - 1)))
		return usage_err("create", "--frame-size %s: not a power of two from 4K to 1G",
				 kvactl_fmt_size(b, o->frame_size, true));
	if (o->low_watermark > o->frames)
		return usage_err("create", "--low-watermark %u is above --frames %u",
				 o->low_watermark, o->frames);
	if (o->hugepages && o->cuda)
		return usage_err("create", "--hugepages is for host memory");
	if (o->hugepages && o->frame_size % HUGE_PAGE_SIZE)
		return usage_err("create", "--hugepages needs a --frame-size that is a multiple of 2M");
	if ((given & GEOMETRY_OPTS) && (given & BIT(O_BPT)))
		return usage_err("create", "give --bytes-per-token or the model geometry, not both");
	if (given & GEOMETRY_OPTS) {
		struct kva_geometry g = {
			.layers = o->layers,
			.kv_heads = o->kv_heads,
			.head_dim = o->head_dim,
			.dtype = o->dtype,
			.frame_size = o->frame_size,
		};
		int err = kva_geometry_init(&g);

		if (err == -E2BIG)
			return usage_err("create", "one token (%llu bytes) does not fit in a %s frame",
					 2ull * g.layers * g.kv_heads *
					 g.head_dim *
					 kva_dtype_size((enum kva_dtype)g.dtype),
					 kvactl_fmt_size(b, o->frame_size, false));
		if (err)
			return usage_err("create", "the model geometry needs --layers, --kv-heads and --head-dim, each 1 to 65536");
		o->bytes_per_token = g.bytes_per_token;
	}
	return 0;
}

/* Checks that need the command and all its options. */
static int check(struct kvactl_opts *o, const struct command *cmd,
		 unsigned int given)
{
	for (enum opt id = 0; id < O_HELP; id++)
		if ((given & BIT(id)) && !(cmd->opts & BIT(id)))
			return usage_err(cmd->name, "--%s does not apply to %s",
					 opt_name(id), cmd->name);
	if (o->nargs < cmd->min_args)
		return usage_err(cmd->name, "usage: kvarenactl %s %s",
				 cmd->name, cmd->usage);
	if (o->nargs && kvactl_name_check(cmd->name, o->args[0]))
		return KVACTL_USAGE;
	if (o->pretty && !o->json)
		return usage_err(cmd->name, "--pretty goes with --json");
	if (cmd->run == kvactl_cmd_limit) {
		if (!o->have_min && !o->have_max)
			return usage_err(cmd->name, "give --min, --max or both");
		if (o->have_min && o->have_max && o->max && o->min > o->max)
			return usage_err(cmd->name, "--min %u is above --max %u",
					 o->min, o->max);
	}
	if (cmd->run == kvactl_cmd_create)
		return check_create(o, given);
	return 0;
}

int main(int argc, char **argv)
{
	struct kvactl_opts o = {
		.interval_ms = 1000,
		.frame_size = 2u << 20,
		.dtype = KVA_DTYPE_FP16,
	};
	const struct command *cmd = NULL;
	unsigned int given = 0;
	char *args[2];
	int id, ret;
	size_t i;

	o.args = args;
	opterr = 0;
	/* The leading '-' returns the command and its arguments as 1s. */
	while ((id = getopt_long(argc, argv, short_opts, long_opts,
				 NULL)) != -1) {
		const char *cname = cmd ? cmd->name : NULL;

		if (id == 1 && !cmd) {
			for (i = 0; i < NR_COMMANDS && !cmd; i++)
				if (!strcmp(optarg, commands[i].name))
					cmd = &commands[i];
			if (!cmd)
				return usage_err(NULL, "unknown command \"%s\"",
						 optarg);
		} else if (id == 1) {
			if (o.nargs == cmd->max_args)
				return usage_err(cname, "unexpected argument \"%s\"",
						 optarg);
			args[o.nargs++] = optarg;
		} else if (id == '?') {
			if (optopt && strchr("dn", optopt))
				return usage_err(cname, "-%c needs a value",
						 optopt);
			if (optopt)
				return usage_err(cname, "unknown option -%c",
						 optopt);
			return usage_err(cname, "unknown option, or one without its value: %s",
					 argv[optind - 1]);
		} else if (id == 'h') {
			help(stdout);
			return KVACTL_OK;
		} else if (id == 'V') {
			printf("kvarenactl (kvarena ABI %d)\n",
			       KVARENA_ABI_VERSION);
			return KVACTL_OK;
		} else {
			given |= BIT(opt_of(id));
			ret = take_opt(&o, opt_of(id), optarg);
			if (ret)
				return ret;
		}
	}
	/* After "--" everything is an argument, even "-1". */
	for (; optind < argc; optind++) {
		if (!cmd)
			return usage_err(NULL, "no command before \"%s\"",
					 argv[optind]);
		if (o.nargs == cmd->max_args)
			return usage_err(cmd->name, "unexpected argument \"%s\"",
					 argv[optind]);
		args[o.nargs++] = argv[optind];
	}
	if (!cmd)
		return usage_err(NULL, "no command");
	o.cmd = cmd->name;
	ret = check(&o, cmd, given);
	if (ret)
		return ret;

	ret = cmd->run(&o);
	if (fflush(stdout) || ferror(stdout)) {
		kvactl_err("writing the output: %s", strerror(errno));
		return KVACTL_FAIL;
	}
	return ret;
}
