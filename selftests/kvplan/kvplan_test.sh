#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# kvplan against hand-computed figures.  Output is TAP; exit status 0 when
# every test passes.
#
#   selftests/kvplan/kvplan_test.sh [path/to/kvplan]
#
# Every expected number below is worked out in the comment next to it, from
# the model geometry and the arithmetic in Documentation/kvplan.rst, not
# from kvplan's own output.  The traces are written here: the tests need
# nothing outside the tree.

KVPLAN=${1:-${KVPLAN:-build/tools/kvplan}}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kvplan-test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM

TAP_CMD=$KVPLAN
. "$(dirname "$0")/../tap.sh"

if [ ! -x "$KVPLAN" ]; then
	echo "Bail out! no kvplan binary at $KVPLAN"
	exit 1
fi

EXAMPLE="--layers 32 --kv-heads 8 --head-dim 128 --dtype fp16 --gpu-mem-gib 80 --util 0.9 --weights-gib 16 --overhead-gib 2 --block-tokens 16 --max-seq-len 2048"

# --- the plan -----------------------------------------------------------

# bytes/token = 2 * 32 * 8 * 128 * 2 = 131072; block = 16 * 131072 = 2097152
# budget = 80 GiB * 0.9 - 16 GiB - 2 GiB = 54 GiB = 57982058496 bytes
# blocks = 54 GiB / 2 MiB = 27648; tokens = 27648 * 16 = 442368
# max_seqs = 27648 / (2048 / 16 = 128) = 216
# shellcheck disable=SC2086
run $EXAMPLE --json
check example_json_reports_issue_figures rc 0 quiet \
	key bytes_per_block 2097152 key blocks 27648 key tokens 442368 \
	key max_seqs 216

# shellcheck disable=SC2086
run $EXAMPLE --json
check json_is_one_object_with_stable_keys rc 0 out \
'{"model":null,"layers":32,"kv_heads":8,"head_dim":128,"dtype":"fp16","bytes_per_token":131072,"sizing":"block","tokens_per_block":16,"bytes_per_block":2097152,"tail_bytes":0,"gpu_mem_bytes":85899345920,"util":0.9,"usable_bytes":77309411328,"weights_bytes":17179869184,"overhead_bytes":2147483648,"kv_budget_bytes":57982058496,"blocks":27648,"tokens":442368,"max_seq_len":2048,"blocks_per_seq":128,"max_seqs":216,"avg_len":null,"expected_waste":null}'

# 80 GiB = 85899345920, * 0.9 = 77309411328; waste at L=512: 15/1039
# shellcheck disable=SC2086
run $EXAMPLE --avg-len 512
check human_view_is_aligned_like_free rc 0 quiet out \
'model                    custom  32 layers, 8 KV heads, head dim 128, fp16
bytes per token          131072  128.0 KiB
tokens per block             16
bytes per block         2097152  2.0 MiB
GPU memory          85899345920  80.0 GiB
 x util 0.9         77309411328  72.0 GiB
 - weights          17179869184  16.0 GiB
 - overhead          2147483648  2.0 GiB
KV budget           57982058496  54.0 GiB
blocks                    27648
tokens                   442368
max seqs                    216  of 2048 tokens, 128 blocks each
expected waste             1.4%  at mean length 512 (last block half empty)'

# 15 / (2 * 32 + 15) = 0.189873
# shellcheck disable=SC2086
run $EXAMPLE --avg-len 32 --json
check high_waste_is_reported_and_warned rc 0 key expected_waste 0.189873 \
	err 'kvplan: warning: high waste: 19.0% of KV memory holds no token at mean length 32 with 16-token blocks'

# llama-3-8b in 2 MiB frames (the arena default): 131072 bytes/token, so
# T_f = 16 with no tail.  Weights default to 8030261248 params * 2 bytes =
# 16060522496.  Budget = 77309411328 - 16060522496 = 61248888832;
# frames = floor(61248888832 / 2097152) = 29205; tokens = 467280;
# 8192 tokens = 512 frames, 29205 / 512 = 57.
run --model llama-3-8b --gpu-mem-gib 80 --max-seq-len 8192 --json
check preset_llama3_8b_fills_2m_frames_with_16_tokens rc 0 quiet \
	key model '"llama-3-8b"' key dtype '"bf16"' key sizing '"frame"' \
	key bytes_per_token 131072 key tokens_per_block 16 key tail_bytes 0 \
	key weights_bytes 16060522496 key kv_budget_bytes 61248888832 \
	key blocks 29205 key tokens 467280 key blocks_per_seq 512 \
	key max_seqs 57

# llama-3-70b: 2 * 80 * 8 * 128 * 2 = 327680 bytes/token; T_f =
# floor(2097152 / 327680) = 6, tail 2097152 - 6 * 327680 = 131072.
# Weights 70553706496 * 2 = 141107412992.  Budget = 192 GiB * 0.9 -
# 141107412992 - 4 GiB = 185542587187.2 - 141107412992 - 4294967296 =
# 40140206899.2 -> 40140206899; frames = 19140 (19140.46); tokens = 114840;
# 8192 tokens = ceil(8192 / 6) = 1366 frames; 19140 / 1366 = 14.
# Waste at L = 1000: 1 - (1 - 5/2005) * (6 * 327680 / 2097152) = 26/401.
run -m llama-3-70b --gpu-mem-gib 192 --overhead-gib 4 --max-seq-len 8192 \
	--avg-len 1000 --json
check preset_llama3_70b_leaves_128k_tail_per_frame rc 0 quiet \
	key bytes_per_token 327680 key tokens_per_block 6 \
	key tail_bytes 131072 key weights_bytes 141107412992 \
	key kv_budget_bytes 40140206899 key blocks 19140 key tokens 114840 \
	key blocks_per_seq 1366 key max_seqs 14 key expected_waste 0.064838

# qwen2.5-7b: 2 * 28 * 4 * 128 * 2 = 57344 bytes/token; T_f = 36, tail
# 2097152 - 36 * 57344 = 32768.  Weights 7615616512 * 2 = 15231233024.
# Budget = 23192823398.4 - 15231233024 -> 7961590374; frames = 3796;
# tokens = 136656; 32768 tokens = 911 frames; 3796 / 911 = 4.
run -m qwen2.5-7b --gpu-mem-gib 24 --max-seq-len 32768 --json
check preset_qwen25_7b_fits_36_tokens_per_2m_frame rc 0 quiet \
	key bytes_per_token 57344 key tokens_per_block 36 \
	key tail_bytes 32768 key weights_bytes 15231233024 \
	key kv_budget_bytes 7961590374 key blocks 3796 key tokens 136656 \
	key blocks_per_seq 911 key max_seqs 4

# mistral-7b: 32 layers, 8 KV heads, 128: 131072 bytes/token.  Weights
# 7241732096 * 2 = 14483464192.
run -m mistral-7b --gpu-mem-gib 80 --block-tokens 32 --json
check preset_mistral_7b_geometry_and_weights rc 0 quiet \
	key bytes_per_token 131072 key bytes_per_block 4194304 \
	key weights_bytes 14483464192 key sizing '"block"'

# fp8 (e4m3) halves bf16's bytes per token, so the same budget holds
# twice the tokens: 2 * 32 * 8 * 128 * 1 = 65536 bytes, 32 per 2 MiB
# frame; the budget's 29205 frames (as bf16's) hold 934560 tokens.
run -m llama-3-8b --dtype fp8 --gpu-mem-gib 80 --json
check fp8_halves_bytes_per_token_and_doubles_tokens rc 0 quiet \
	key dtype '"fp8"' key bytes_per_token 65536 key tokens_per_block 32 \
	key blocks 29205 key tokens 934560
run -m llama-3-8b --dtype bf16 --gpu-mem-gib 80 --json
check bf16_beside_fp8_same_frames_half_the_tokens rc 0 quiet \
	key bytes_per_token 131072 key tokens_per_block 16 key blocks 29205 \
	key tokens 467280

# --layers 16 --dtype fp32 over llama-3-8b: 2 * 16 * 8 * 128 * 4 = 131072;
# --weights-gib 10 replaces the preset's 16060522496.
run -m llama-3-8b --layers 16 --dtype fp32 --weights-gib 10 \
	--gpu-mem-gib 80 --json
check options_override_the_preset rc 0 quiet key model '"llama-3-8b"' \
	key layers 16 key kv_heads 8 key dtype '"fp32"' \
	key bytes_per_token 131072 key weights_bytes 10737418240

# 141 GiB * 0.95 = 133.95 GiB = 143827717324.8 bytes, - 0.5 GiB
# (536870912) = 143290846412.8 -> 143290846412.  One-byte-per-token
# blocks: 2 * 1 * 1 * 1 * 2 = 4 bytes per token, 1-token blocks.
run --layers 1 --kv-heads 1 --head-dim 1 --block-tokens 1 \
	--gpu-mem-gib 141 --util 0.95 --weights-gib 0.5 --json
check budget_is_exact_to_the_byte rc 0 quiet \
	key usable_bytes 143827717324 key kv_budget_bytes 143290846412 \
	key bytes_per_block 4 key blocks 35822711603

# qwen2.5-7b in 64 KiB frames: floor(65536 / 57344) = 1 token, tail 8192.
run -m qwen2.5-7b --gpu-mem-gib 24 --frame-size 64K --json
check frame_size_takes_binary_suffixes rc 0 key bytes_per_block 65536 \
	key tokens_per_block 1 key tail_bytes 8192 key blocks 121484 \
	err 'kvplan: warning: high waste: 12.5% of every frame is an unused tail'

# --- a model's config.json (--model-config) -----------------------------

# Llama-3-8B's config.json, as published (the fields kvplan reads, and
# others it must step over: arrays, null, floats, booleans), and its
# safetensors index: total_size 16060522496 = 8030261248 params * 2.
mkdir -p "$TMP/l3" "$TMP/mha" "$TMP/bad"
cat > "$TMP/l3/config.json" <<'JSON'
{
  "architectures": ["LlamaForCausalLM"], "attention_bias": false,
  "bos_token_id": 128000, "eos_token_id": 128009, "hidden_act": "silu",
  "hidden_size": 4096, "intermediate_size": 14336,
  "max_position_embeddings": 8192, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_scaling": null,
  "rope_theta": 500000.0, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "transformers_version": "4.40.0.dev0",
  "use_cache": true, "vocab_size": 128256,
  "nested": {"num_hidden_layers": 1, "a": [1, {"b": "\u00e9\"x"}]}
}
JSON
printf '{"metadata": {"total_size": 16060522496},\n "weight_map": {"lm_head.weight": "model-00004-of-00004.safetensors"}}\n' \
	> "$TMP/l3/model.safetensors.index.json"
# The same figures as the preset's: the nested num_hidden_layers is not
# the model's.
run --model-config "$TMP/l3/config.json" --gpu-mem-gib 80 --max-seq-len 8192 --json
check model_config_gives_the_presets_plan rc 0 quiet \
	key model '"llama"' key dtype '"bf16"' key bytes_per_token 131072 \
	key weights_bytes 16060522496 key kv_budget_bytes 61248888832 \
	key blocks 29205 key max_seqs 57
run --model-config "$TMP/l3/config.json" --gpu-mem-gib 80
check model_config_says_where_the_weights_come_from rc 0 quiet \
	has " - weights          16060522496  15.0 GiB: the checkpoint's tensors"

# No num_key_value_heads (no GQA) and no head_dim: 4096 / 32 = 128; fp16.
# bytes/token = 2 * 32 * 32 * 128 * 2 = 524288: 4 tokens a 2 MiB frame.
# No checkpoint beside it: --weights-gib is needed.
cat > "$TMP/mha/config.json" <<'JSON'
{"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
 "torch_dtype": "float16", "model_type": "llama"}
JSON
run --model-config "$TMP/mha/config.json" --gpu-mem-gib 80 --weights-gib 13 --json
check model_config_without_kv_heads_is_multi_head rc 0 quiet \
	key kv_heads 32 key head_dim 128 key dtype '"fp16"' \
	key bytes_per_token 524288 key tokens_per_block 4
run --model-config "$TMP/mha/config.json" --gpu-mem-gib 80
check model_config_without_a_checkpoint_needs_weights rc 2 \
	err1 'kvplan: --weights-gib is required: no model.safetensors.index.json or model.safetensors beside the --model-config to take the weights'"'"' size from'
# Options still override it, field by field.
run --model-config "$TMP/mha/config.json" --kv-heads 8 --dtype fp8 --gpu-mem-gib 80 --weights-gib 13 --json
check options_override_the_model_config rc 0 quiet \
	key kv_heads 8 key dtype '"fp8"' key bytes_per_token 65536

printf '{"num_hidden_layers": 32, "num_attention_heads": 32,, }' > "$TMP/bad/a.json"
run --model-config "$TMP/bad/a.json" --gpu-mem-gib 80 --weights-gib 1
check model_config_bad_json_names_the_byte rc 2 \
	err1 "kvplan: $TMP/bad/a.json: not valid JSON at byte offset 52: a string expected"
printf '{"text_config": {"num_hidden_layers": 40}, "num_attention_heads": 8}' > "$TMP/bad/b.json"
run --model-config "$TMP/bad/b.json" --gpu-mem-gib 80 --weights-gib 1
check model_config_multimodal_says_text_config rc 2 \
	err1 "kvplan: $TMP/bad/b.json: no \"num_hidden_layers\" at its top level (a multimodal model's is in text_config: give --layers, --kv-heads and --head-dim)"
printf '{"num_hidden_layers": 32, "num_attention_heads": 32, "head_dim": 128, "torch_dtype": "float8_e4m3fn"}' > "$TMP/bad/c.json"
run --model-config "$TMP/bad/c.json" --gpu-mem-gib 80 --weights-gib 1
check model_config_unknown_dtype_is_named rc 2 \
	err1 "kvplan: $TMP/bad/c.json: torch_dtype \"float8_e4m3fn\": want bfloat16, float16 or float32 (or --dtype)"
printf '{"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 5, "head_dim": 128}' > "$TMP/bad/d.json"
run --model-config "$TMP/bad/d.json" --gpu-mem-gib 80 --weights-gib 1
check model_config_kv_heads_must_divide_heads rc 2 \
	err1 "kvplan: $TMP/bad/d.json: num_key_value_heads 5 does not divide num_attention_heads 32"
run --model-config "$TMP/nonexistent.json" --gpu-mem-gib 80 --weights-gib 1
check model_config_missing_file_is_named rc 2 \
	err1 "kvplan: $TMP/nonexistent.json: No such file or directory"

# --- several engines on one GPU (kvplan gpu) -----------------------------

# llama-3-8b and qwen2.5-7b on 80 GiB at util 0.9 = 77309411328 bytes; each
# engine: weights (params * 2: 16060522496 and 15231233024) + overhead
# 1 GiB + CUDA context 0.5 GiB (the defaults): 17671135232 + 16841845760 =
# 34512980992.  Arena = 42796430336 bytes = 20406 frames of 2 MiB
# (20406.8); qwen2.5-7b's 57344 bytes/token: 36 tokens a frame (tail
# 32768), so 20406 * 16 = 326496 and 20406 * 36 = 734616 tokens.
run gpu --gpu-mem-gib 80 --engine llama-3-8b --engine qwen2.5-7b --json
check gpu_two_engines_share_what_their_memory_leaves rc 0 quiet \
	key usable_bytes 77309411328 key arena_budget_bytes 42796430336 \
	key frames 20406 key overhead_bytes 1073741824 \
	key cuda_context_bytes 536870912
run gpu --gpu-mem-gib 80 --engine llama-3-8b --engine qwen2.5-7b
check gpu_prints_the_create_command rc 0 quiet \
	has "frames                      20406  of 2.0 MiB: kvarenactl create ARENA --frames 20406 --frame-size 2M --backend cuda:DEV" \
	has " engine 2 tokens           734616  with every frame"
# Weights given, no overhead or context: 72 GiB - 2 * 10 GiB = 52 GiB =
# 26624 frames of 2 MiB; 16M frames: 3328.
run gpu --gpu-mem-gib 80 --engine llama-3-8b:10 --engine "$TMP/l3/config.json:10" --overhead-gib 0 --cuda-context-gib 0 --frame-size 16M --json
check gpu_weights_given_and_16m_frames rc 0 quiet key frames 3328 \
	key arena_budget_bytes 55834574848
run gpu --gpu-mem-gib 40 --engine llama-3-70b
check gpu_engines_larger_than_the_gpu_are_impossible rc 1 \
	err1 "kvplan: gpu: nothing left for the arena: 36.0 GiB usable, the engines take 132.9 GiB"
run gpu --gpu-mem-gib 80 --engine llama-3-8b --frame-size 3M
check gpu_frame_size_is_one_create_takes rc 2 \
	err1 "kvplan: --frame-size must be a power of two from 4K to 1G, as kvarenactl create takes (64K, 2M, ...): got 3M"
run gpu --gpu-mem-gib 80 --engine gpt-5
check gpu_unknown_engine_is_named rc 2 \
	err1 "kvplan: --engine must be llama-3-8b, llama-3-70b, qwen2.5-7b or mistral-7b or a config.json path: got gpt-5"
run gpu --gpu-mem-gib 80 --engine "$TMP/mha/config.json"
check gpu_config_without_checkpoint_needs_weights rc 2 \
	err1 "kvplan: --engine $TMP/mha/config.json: no model.safetensors.index.json or model.safetensors beside it: give its weights, $TMP/mha/config.json:GIB"
run gpu --engine llama-3-8b
check gpu_needs_the_gpu_memory rc 2 err1 "kvplan: gpu: --gpu-mem-gib is required"

# --- impossible plans: exit 1 ------------------------------------------

# 327680 bytes of KV per token do not fit a 64 KiB frame.
run -m llama-3-70b --gpu-mem-gib 192 --frame-size 64K
check token_larger_than_frame_is_impossible rc 1 \
	err 'kvplan: one token does not fit in a frame: 327680 bytes of KV per token, frames of 65536 bytes (64.0 KiB); T_f would be 0'

# 80 GiB * 0.9 = 72 GiB < 131.4 GiB of llama-3-70b weights.
run -m llama-3-70b --gpu-mem-gib 80 --json
check weights_beyond_usable_memory_is_impossible rc 1 \
	err 'kvplan: nothing left for the KV cache: 80 GiB * 0.9 = 72.0 GiB, weights 131.4 GiB + overhead 0 B'

# 24 GiB card, llama-3-8b: 3400 frames; 131072 tokens need 8192.
run -m llama-3-8b --gpu-mem-gib 24 --max-seq-len 131072
check sequence_longer_than_the_cache_is_impossible rc 1 \
	err 'kvplan: one 131072-token sequence does not fit: it needs 8192 frames, 3400 fit'

# 1 GiB - 0.999 GiB = 1073741.824 bytes < one 2 MiB block.
run --layers 32 --kv-heads 8 --head-dim 128 --gpu-mem-gib 1 --util 1 \
	--weights-gib 0.999 --block-tokens 16
check budget_below_one_block_is_impossible rc 1 \
	err 'kvplan: not one block fits: the KV budget is 1.0 MiB, a block is 2.0 MiB'

# --- usage errors: exit 2, naming the wrong thing -----------------------

# 65536-token blocks of 2 * 65536^3 * 4 = 2^51 bytes per token: 2^67 bytes.
run --layers 65536 --kv-heads 65536 --head-dim 65536 --dtype fp32 \
	--block-tokens 65536 --gpu-mem-gib 80 --weights-gib 1
check block_beyond_layout_limits_is_refused rc 2 \
	err "kvplan: this block is beyond the frame layout's limits: at most 1 TiB, under 2^32 tokens and under 4 GiB per head"

run -m llama-3-8b --gpu-mem-gib 80 --util 1.5
check util_above_one_is_refused rc 2 \
	err1 'kvplan: --util must be in (0, 1]: got 1.5'

run -m llama-3-8b --gpu-mem-gib 80 --util 0
check util_zero_is_refused rc 2 \
	err1 'kvplan: --util must be in (0, 1]: got 0'

run -m llama-3-8b --gpu-mem-gib 80 --util 0.0000000001
check util_with_ten_decimals_is_refused rc 2 \
	err1 'kvplan: --util must be in (0, 1]: got 0.0000000001'

run -m llama-3-8b --gpu-mem-gib 80 --layers 3x
check malformed_count_names_the_option rc 2 \
	err1 'kvplan: --layers must be a whole number from 1 to 65536: got 3x'

run -m llama-3-8b --gpu-mem-gib -80
check negative_memory_is_refused rc 2 \
	err1 'kvplan: --gpu-mem-gib must be a size in GiB from 0 to 1048576: got -80'

run -m llama-3-9b --gpu-mem-gib 80
check unknown_model_lists_the_known_ones rc 2 \
	err1 'kvplan: --model must be llama-3-8b, llama-3-70b, qwen2.5-7b or mistral-7b: got llama-3-9b'

run -m llama-3-8b --gpu-mem-gib 80 --dtype int8
check unknown_dtype_is_refused rc 2 \
	err1 'kvplan: --dtype must be fp16, bf16, fp32 or fp8: got int8'

run -m llama-3-8b
check gpu_memory_is_required rc 2 \
	err1 'kvplan: --gpu-mem-gib is required'

run --layers 32 --head-dim 128 --gpu-mem-gib 80 --weights-gib 16
check geometry_without_model_needs_every_field rc 2 \
	err1 'kvplan: --kv-heads is required without --model'

run --layers 32 --kv-heads 8 --head-dim 128 --gpu-mem-gib 80
check weights_required_without_model rc 2 \
	err1 'kvplan: --weights-gib is required without --model'

run -m llama-3-8b --gpu-mem-gib 80 --block-tokens 16 --frame-size 2M
check block_tokens_and_frame_size_exclude_each_other rc 2 \
	err1 'kvplan: --block-tokens and --frame-size exclude each other'

run -m llama-3-8b --gpu-mem-gib 80 --frame-size 2X
check malformed_frame_size_is_refused rc 2 \
	err1 'kvplan: --frame-size must be a power of two from 4K to 1G, as kvarenactl create takes (64K, 2M, ...): got 2X'

# Only frames an arena can have: 10M (no power of two), 2K, 2G.
for fs in 10M 2K 2G; do
	run -m llama-3-70b --gpu-mem-gib 192 --frame-size $fs
	check frame_size_$fs\_is_not_one_create_takes rc 2 \
		err1 "kvplan: --frame-size must be a power of two from 4K to 1G, as kvarenactl create takes (64K, 2M, ...): got $fs"
done
run -m llama-3-70b --gpu-mem-gib 192 --frame-size 1G --json
check frame_size_1G_is_the_largest rc 0 key bytes_per_block 1073741824
run --layers 1 --kv-heads 1 --head-dim 64 --weights-gib 1 --gpu-mem-gib 8 --frame-size 4K --json
check frame_size_4K_is_the_smallest rc 0 key bytes_per_block 4096

run -m llama-3-8b --gpu-mem-gib 80 --gpus 2
check unknown_option_is_named rc 2 \
	err1 'kvplan: unknown option --gpus'

run -m llama-3-8b --gpu-mem-gib
check missing_value_is_named rc 2 \
	err1 'kvplan: --gpu-mem-gib needs a value'

run -m llama-3-8b --gpu-mem-gib 80 extra
check stray_argument_is_refused rc 2 \
	err1 "kvplan: unexpected argument 'extra'"

run --help
lines=$(wc -l <"$TMP/out")
width=$(awk '{ if (length($0) > w) w = length($0) } END { print w }' "$TMP/out")
if [ "$rc" = 0 ] && [ "$lines" -le 24 ] && [ "$width" -le 80 ] &&
   grep -q -- '--gpu-mem-gib' "$TMP/out"; then
	pass help_fits_one_screen
else
	fail help_fits_one_screen "rc $rc, $lines lines, $width columns"
fi

# --- waste-table ----------------------------------------------------------

# (B-1)/(2L+B-1), whole percent:
#   L=32:  7/71=9.9   15/79=19.0  31/95=32.6  63/127=49.6
#   L=64:  7/135=5.2  15/143=10.5 31/159=19.5 63/191=33.0
#   L=128: 7/263=2.7  15/271=5.5  31/287=10.8 63/319=19.7
#   L=512: 7/1031=0.7 15/1039=1.4 31/1055=2.9 63/1087=5.8
run waste-table
check waste_table_gives_issue_percentages rc 0 quiet out \
'expected internal waste (B-1)/(2L+B-1), block B tokens, mean length L

       L     B=8    B=16    B=32    B=64
      32     10%     19%     33%     50%
      64      5%     10%     19%     33%
     128      3%      6%     11%     20%
     512      1%      1%      3%      6%'

cell()
{
	awk -v L="$1" -v B="B=$2" '
		$1 == "L" { for (i = 2; i <= NF; i++) col[$i] = i }
		$1 == L && (B in col) { print $(col[B]) }' "$TMP/out"
}
if [ "$(cell 32 16)" = 19% ] && [ "$(cell 32 64)" = 50% ] &&
   [ "$(cell 512 16)" = 1% ]; then
	pass waste_table_cells_l32_b16_l32_b64_l512_b16
else
	fail waste_table_cells_l32_b16_l32_b64_l512_b16 \
		"got $(cell 32 16) $(cell 32 64) $(cell 512 16), want 19% 50% 1%"
fi

# 15/79 = 0.189873, 63/127 = 0.496063
run waste-table --avg-len 32 --block-tokens 16,64 --json
check waste_table_json_gives_fractions rc 0 quiet out \
'{"formula":"(B-1)/(2L+B-1)","rows":[{"avg_len":32,"block_tokens":16,"expected_waste":0.189873},{"avg_len":32,"block_tokens":64,"expected_waste":0.496063}]}'

run waste-table --block-tokens 0
check waste_table_refuses_zero_block rc 2 \
	err1 'kvplan: --block-tokens must be a comma-separated list of at most 32 whole numbers from 1 to 65536: got 0'

# --- waste --trace --------------------------------------------------------

# Four requests, final lengths 10+6=16, 16+1=17, 1+0=1, 30+10=40: 74 tokens,
# mean 18.5.
#   B=8:  2+3+1+5 = 11 blocks = 88 slots, 14 empty: 0.159091;
#         estimate 7/(37+7) = 0.159091
#   B=16: 1+2+1+3 = 7 blocks = 112 slots, 38 empty: 0.339286;
#         estimate 15/(37+15) = 0.288462
WANT_ROWS='"requests":4,"tokens":74,"mean_len":18.500,"rows":[{"block_tokens":8,"allocated_tokens":88,"wasted_tokens":14,"measured_waste":0.159091,"expected_waste":0.159091},{"block_tokens":16,"allocated_tokens":112,"wasted_tokens":38,"measured_waste":0.339286,"expected_waste":0.288462}]}'

printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,10,6\n2023-11-16 18:15:47.01,16,1\n\n2023-11-16 18:15:48.11,1,0\n2023-11-16 18:15:49.50,30,10' \
	>"$TMP/azure.csv"
run waste --trace "$TMP/azure.csv" --block-tokens 8,16 --json
check waste_measured_on_azure_csv_without_final_newline rc 0 quiet out \
"{\"trace\":\"$TMP/azure.csv\",\"format\":\"azure-csv\",$WANT_ROWS"

# Same requests, columns in another order, CRLF line ends.
printf 'GeneratedTokens,ContextTokens,TIMESTAMP\r\n6,10,a\r\n1,16,b\r\n0,1,c\r\n10,30,d\r\n' \
	>"$TMP/crlf.csv"
run waste --trace "$TMP/crlf.csv" --block-tokens 8 --block-tokens 16 --json
check waste_reads_csv_columns_by_name_and_crlf rc 0 quiet out \
"{\"trace\":\"$TMP/crlf.csv\",\"format\":\"azure-csv\",$WANT_ROWS"

cat >"$TMP/mooncake.jsonl" <<'EOF'
{"timestamp": 0, "input_length": 10, "output_length": 6, "hash_ids": [0]}
{"timestamp": 27, "input_length": 16, "output_length": 1, "hash_ids": [0]}
{"timestamp": 30, "input_length": 1, "output_length": 0, "hash_ids": [1]}
{"timestamp": 45, "input_length": 30, "output_length": 10, "hash_ids": [2]}
EOF
run waste --trace "$TMP/mooncake.jsonl" --block-tokens 8,16 --json
check waste_measured_on_mooncake_jsonl rc 0 quiet out \
"{\"trace\":\"$TMP/mooncake.jsonl\",\"format\":\"mooncake-jsonl\",$WANT_ROWS"

run waste --trace "$TMP/azure.csv" --block-tokens 16
check waste_human_view_shows_measured_and_estimate rc 0 quiet out \
"trace      $TMP/azure.csv (azure-csv)
requests   4
tokens     74 (context + generated)
mean len   18.5

       B   measured   estimate
      16     33.93%     28.85%"

printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16,10,6\n2023-11-16,ten,6\n' \
	>"$TMP/bad.csv"
run waste --trace "$TMP/bad.csv"
check waste_malformed_trace_names_the_line rc 2 \
	err "kvplan: $TMP/bad.csv:3: ContextTokens is not a token count"

printf '{"timestamp": 0, "input_length": 10}\n' >"$TMP/bad.jsonl"
run waste --trace "$TMP/bad.jsonl"
check waste_jsonl_without_output_length_is_refused rc 2 \
	err "kvplan: $TMP/bad.jsonl:1: no token count under \"output_length\""

printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n' >"$TMP/empty.csv"
run waste --trace "$TMP/empty.csv"
check waste_trace_without_requests_is_refused rc 2 \
	err "kvplan: $TMP/empty.csv: no requests in the trace"

run waste --trace "$TMP/absent.csv"
check waste_missing_trace_is_named rc 2 \
	err "kvplan: $TMP/absent.csv: No such file or directory"

run waste --block-tokens 16
check waste_needs_a_trace rc 2 \
	err1 'kvplan: waste: --trace FILE is required'

tap_done
