// SPDX-License-Identifier: GPL-2.0
/*
 * kvplan - KV-cache capacity planner.
 *
 *   kvplan [options]             the plan for one model on one GPU (plan.c)
 *   kvplan waste-table           expected waste for mean lengths x blocks
 *   kvplan waste --trace FILE    waste measured on a request trace (waste.c)
 *
 * See Documentation/kvplan.rst.
 */
#include <errno.h>
#include <getopt.h>
#include <string.h>

#include "kvplan.h"

const char *kvt_prog = "kvplan";

void kvp_help(FILE *f)
{
	fputs(
"Usage: kvplan [-m MODEL] [GEOMETRY] --gpu-mem-gib X [options] [--json]\n"
"       kvplan waste-table [--avg-len L,...] [--block-tokens B,...] [--json]\n"
"       kvplan waste --trace FILE [--block-tokens B,...] [--json]\n"
"       kvplan gpu --gpu-mem-gib X --engine MODEL[:GIB]... (kvplan gpu -h)\n"
"Plan KV-cache capacity: blocks or frames, tokens, sequences and waste.\n"
"\n"
"  -m, --model NAME      llama-3-8b, llama-3-70b, qwen2.5-7b or mistral-7b,\n"
"      --model-config F  or a Hugging Face config.json; options override it\n"
"      --layers N, --kv-heads N, --head-dim N\n"
"      --dtype T         fp16, bf16, fp32 or fp8 (e4m3: half the bytes of\n"
"                        fp16; default: the model's, else fp16)\n"
"      --gpu-mem-gib X   GPU memory, GiB (required)\n"
"      --util F          gpu_memory_utilization, in (0, 1] (default 0.9)\n"
"      --weights-gib X   weights, GiB (default: the model's in bf16, or the\n"
"                        model.safetensors* beside its config.json)\n"
"      --overhead-gib X  activations, CUDA graphs, workspace, GiB (default 0)\n"
"      --block-tokens B  blocks of B tokens, or\n"
"      --frame-size S    kvarena frames of S bytes: a power of 2, 4K-1G (2M)\n"
"      --max-seq-len N   also report how many N-token sequences fit\n"
"      --avg-len L       also report the expected waste at mean length L\n"
"      --trace FILE      (waste only) Azure CSV or Mooncake JSONL trace\n"
"      --json            one JSON object, numbers as numbers; -h, --help\n"
"Waste (B-1)/(2L+B-1): a sequence's last block is half empty on average.\n"
"Exit status: 0 ok, 1 impossible plan, 2 usage error or unreadable trace.\n",
	      f);
}

/*
 * kvp_bad_option() - report what getopt_long() refused (@c is ':' for a
 * missing value, '?' otherwise) for subcommand @cmd (NULL: the plan), and
 * return the usage exit status.
 */
int kvp_bad_option(int c, char **argv, const char *cmd)
{
	const char *sep = cmd ? ": " : "";

	if (!cmd)
		cmd = "";
	if (c == ':')
		fprintf(stderr, "%s: %s needs a value\n", kvt_prog,
			argv[optind - 1]);
	else if (optopt)
		fprintf(stderr, "%s: %s%sunknown option -%c\n", kvt_prog, cmd,
			sep, optopt);
	else
		fprintf(stderr, "%s: %s%sunknown option %s\n", kvt_prog, cmd,
			sep, argv[optind - 1]);
	kvt_usage_hint();
	return KVP_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	int ret;

	if (argc > 1 && !strcmp(argv[1], "waste-table"))
		ret = kvp_cmd_waste_table(argc - 1, argv + 1);
	else if (argc > 1 && !strcmp(argv[1], "waste"))
		ret = kvp_cmd_waste(argc - 1, argv + 1);
	else if (argc > 1 && !strcmp(argv[1], "gpu"))
		ret = kvp_cmd_gpu(argc - 1, argv + 1);
	else
		ret = kvp_cmd_plan(argc, argv);

	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: writing the output: %s\n", kvt_prog,
			strerror(errno));
		return KVP_EXIT_USAGE;
	}
	return ret;
}
