// SPDX-License-Identifier: GPL-2.0
/*
 * kvplan - internal waste of block allocation: what a sequence's last,
 * partly filled block costs.
 *
 * A sequence of length len takes ceil(len / B) blocks of B tokens.  If the
 * fill of the last block is uniform, it holds on average (B - 1) / 2 empty
 * slots, so at mean length L
 *
 *   expected waste = (B - 1) / (2L + B - 1)
 *
 * `waste-table` prints that estimate; `waste --trace` measures the real
 * figure on a request trace,
 *
 *   waste = sum(ceil(len / B) * B - len) / sum(ceil(len / B) * B)
 *
 * and prints it next to the estimate at the trace's mean length.
 */
#include <getopt.h>
#include <string.h>

#include "kvplan.h"

#define MAX_LIST	32
#define LIST_MAX_VAL	(1ull << 16)
#define LEN_MAX_VAL	(1ull << 32)

double kvp_waste_estimate(double avg_len, uint64_t block_tokens)
{
	double b1 = (double)block_tokens - 1.0;

	return b1 / (2.0 * avg_len + b1);
}

enum { OPT_AVG = 256, OPT_BLOCKS, OPT_TRACE, OPT_JSON };

static const struct option waste_options[] = {
	{ "avg-len",      required_argument, NULL, OPT_AVG },
	{ "block-tokens", required_argument, NULL, OPT_BLOCKS },
	{ "trace",        required_argument, NULL, OPT_TRACE },
	{ "json",         no_argument,       NULL, OPT_JSON },
	{ "help",         no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct waste_args {
	uint64_t lens[MAX_LIST], blocks[MAX_LIST];
	int nr_lens, nr_blocks;
	const char *trace;
	int json;
};

static int list_err(const char *opt, const char *range, const char *arg)
{
	fprintf(stderr,
		"%s: %s must be a comma-separated list of at most %d whole numbers from %s: got %s\n",
		kvt_prog, opt, MAX_LIST, range, arg);
	kvt_usage_hint();
	return KVP_EXIT_USAGE;
}

/*
 * Options of both subcommands; @allow_avg and @allow_trace say which of
 * --avg-len and --trace this one takes.  Returns -1 for --help.
 */
static int parse_waste_args(struct waste_args *a, int argc, char **argv,
			    int allow_avg, int allow_trace)
{
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", waste_options, NULL)) != -1) {
		if ((c == OPT_AVG && !allow_avg) ||
		    (c == OPT_TRACE && !allow_trace)) {
			fprintf(stderr, "%s: %s takes no %s\n", kvt_prog,
				argv[0], c == OPT_AVG ? "--avg-len" : "--trace");
			kvt_usage_hint();
			return KVP_EXIT_USAGE;
		}
		switch (c) {
		case OPT_AVG:
			if (kvt_parse_list(optarg, a->lens, MAX_LIST,
					   &a->nr_lens, 1, LEN_MAX_VAL))
				return list_err("--avg-len",
						"1 to 4294967296", optarg);
			break;
		case OPT_BLOCKS:
			if (kvt_parse_list(optarg, a->blocks, MAX_LIST,
					   &a->nr_blocks, 1, LIST_MAX_VAL))
				return list_err("--block-tokens",
						"1 to 65536", optarg);
			break;
		case OPT_TRACE:
			a->trace = optarg;
			break;
		case OPT_JSON:
			a->json = 1;
			break;
		case 'h':
			return -1;
		default:
			return kvp_bad_option(c, argv, argv[0]);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: %s: unexpected argument '%s'\n", kvt_prog,
			argv[0], argv[optind]);
		kvt_usage_hint();
		return KVP_EXIT_USAGE;
	}
	return 0;
}

static void set_default(uint64_t *vals, int *n, const uint64_t *def,
			int nr_def)
{
	if (*n)
		return;
	memcpy(vals, def, (size_t)nr_def * sizeof(*vals));
	*n = nr_def;
}

int kvp_cmd_waste_table(int argc, char **argv)
{
	static const uint64_t def_lens[] = { 32, 64, 128, 512 };
	static const uint64_t def_blocks[] = { 8, 16, 32, 64 };
	struct waste_args a;
	int i, j, err;

	memset(&a, 0, sizeof(a));
	err = parse_waste_args(&a, argc, argv, 1, 0);
	if (err < 0) {
		kvp_help(stdout);
		return KVP_EXIT_OK;
	}
	if (err)
		return err;
	set_default(a.lens, &a.nr_lens, def_lens, 4);
	set_default(a.blocks, &a.nr_blocks, def_blocks, 4);

	if (a.json) {
		printf("{\"formula\":\"(B-1)/(2L+B-1)\",\"rows\":[");
		for (i = 0; i < a.nr_lens; i++)
			for (j = 0; j < a.nr_blocks; j++)
				printf("%s{\"avg_len\":%llu,\"block_tokens\":%llu,\"expected_waste\":%.6f}",
				       i || j ? "," : "",
				       (unsigned long long)a.lens[i],
				       (unsigned long long)a.blocks[j],
				       kvp_waste_estimate((double)a.lens[i],
							  a.blocks[j]));
		printf("]}\n");
		return KVP_EXIT_OK;
	}

	printf("expected internal waste (B-1)/(2L+B-1), block B tokens, mean length L\n\n");
	printf("%8s", "L");
	for (j = 0; j < a.nr_blocks; j++) {
		char h[24];

		snprintf(h, sizeof(h), "B=%llu", (unsigned long long)a.blocks[j]);
		printf(" %7s", h);
	}
	putchar('\n');
	for (i = 0; i < a.nr_lens; i++) {
		printf("%8llu", (unsigned long long)a.lens[i]);
		for (j = 0; j < a.nr_blocks; j++)
			printf(" %6.0f%%", 100.0 *
			       kvp_waste_estimate((double)a.lens[i],
						  a.blocks[j]));
		putchar('\n');
	}
	return KVP_EXIT_OK;
}

struct measure {
	uint64_t block_tokens;
	uint64_t allocated;	/* sum of ceil(len / B) * B */
	uint64_t wasted;	/* sum of ceil(len / B) * B - len */
};

int kvp_cmd_waste(int argc, char **argv)
{
	static const uint64_t def_blocks[] = { 8, 16, 32, 64, 128, 256 };
	struct measure m[MAX_LIST];
	struct waste_args a;
	struct kvt_trace t;
	uint64_t total = 0;
	double mean;
	size_t k;
	int j, err;

	memset(&a, 0, sizeof(a));
	err = parse_waste_args(&a, argc, argv, 0, 1);
	if (err < 0) {
		kvp_help(stdout);
		return KVP_EXIT_OK;
	}
	if (err)
		return err;
	if (!a.trace) {
		fprintf(stderr, "%s: waste: --trace FILE is required\n",
			kvt_prog);
		kvt_usage_hint();
		return KVP_EXIT_USAGE;
	}
	set_default(a.blocks, &a.nr_blocks, def_blocks, 6);

	if (kvt_trace_read(a.trace, 0, &t))
		return KVP_EXIT_USAGE;

	/* Lengths are below 2^41 and B below 2^17: no sum nears 2^64. */
	for (k = 0; k < t.nr; k++)
		total += t.req[k].ctx + t.req[k].gen;
	mean = (double)total / (double)t.nr;
	for (j = 0; j < a.nr_blocks; j++) {
		uint64_t B = a.blocks[j];

		m[j].block_tokens = B;
		m[j].allocated = 0;
		for (k = 0; k < t.nr; k++)
			m[j].allocated += (t.req[k].ctx + t.req[k].gen +
					   B - 1) / B * B;
		m[j].wasted = m[j].allocated - total;
	}

	if (a.json) {
		printf("{\"trace\":");
		kvt_json_str(stdout, a.trace);
		printf(",\"format\":\"%s\",\"requests\":%zu,\"tokens\":%llu,\"mean_len\":%.3f,\"rows\":[",
		       t.format, t.nr, (unsigned long long)total, mean);
		for (j = 0; j < a.nr_blocks; j++)
			printf("%s{\"block_tokens\":%llu,\"allocated_tokens\":%llu,\"wasted_tokens\":%llu,\"measured_waste\":%.6f,\"expected_waste\":%.6f}",
			       j ? "," : "",
			       (unsigned long long)m[j].block_tokens,
			       (unsigned long long)m[j].allocated,
			       (unsigned long long)m[j].wasted,
			       m[j].allocated ? (double)m[j].wasted /
						(double)m[j].allocated : 0.0,
			       kvp_waste_estimate(mean, m[j].block_tokens));
		printf("]}\n");
	} else {
		printf("%-10s %s (%s)\n", "trace", a.trace, t.format);
		printf("%-10s %zu\n", "requests", t.nr);
		printf("%-10s %llu (context + generated)\n", "tokens",
		       (unsigned long long)total);
		printf("%-10s %.1f\n\n", "mean len", mean);
		printf("%8s %10s %10s\n", "B", "measured", "estimate");
		for (j = 0; j < a.nr_blocks; j++)
			printf("%8llu %9.2f%% %9.2f%%\n",
			       (unsigned long long)m[j].block_tokens,
			       m[j].allocated ? 100.0 * (double)m[j].wasted /
						(double)m[j].allocated : 0.0,
			       100.0 * kvp_waste_estimate(mean,
							  m[j].block_tokens));
	}
	kvt_trace_free(&t);
	return KVP_EXIT_OK;
}
