#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# kvbench attn's rows: --mixed batches, and --peer with a test double
# standing in for the peer library (selftests/kvbench/peer_double.c): the
# peer's rows for every pair of dtypes, cache and thread count, and the
# refusals of a peer object that is missing or of another ABI.  Output is
# TAP.  Timings are not checked: a benchmark's figures are not a test's.
#
#   selftests/kvbench/attn_test.sh KVBENCH DOUBLE.so WRONG_ABI.so

KVB=$1
DOUBLE=$2
WRONG=$3
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kvb-peer.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM

TAP_CMD=$KVB
. "$(dirname "$0")/../tap.sh"

small="--tokens 1024 --batch 1 --time 0 --no-prefill --mem 8 --threads 2"

# --mixed: the rows of several sequences say so, batch 1's do not.
run attn --tokens 1024 --batch 1,4 --mixed --time 0 --no-prefill --mem 8 \
	--threads 2 --json
if [ "$rc" = 0 ] &&
   [ "$(grep -c '"kind":"decode","tokens":1024,"batch":4,.*"mixed":true}' "$TMP/out")" = 2 ] &&
   ! grep -q '"batch":1,.*"mixed"' "$TMP/out"; then
	pass mixed_batches_are_marked
else
	fail mixed_batches_are_marked
fi

# --huge: the bandwidth rows say the KV is on huge pages, and decode runs.
# shellcheck disable=SC2086
run attn $small --huge --json
if [ "$rc" = 0 ] &&
   grep -q '"kind":"bandwidth",.*"huge_pages":true}' "$TMP/out" &&
   grep -q '"kind":"decode","tokens":1024,"batch":1,' "$TMP/out"; then
	pass huge_pages_are_said_and_used
else
	fail huge_pages_are_said_and_used
fi

# shellcheck disable=SC2086
run attn $small --dtype fp16,fp8 --json --peer "$DOUBLE"
# Pairs: fp16/f16, bf16/bf16, bf16/f16, fp8/q8_0; cold and hot (1024
# tokens: 4 MiB a layer of bf16, within 32 MiB); 1 and 2 threads: 16.
rows=$(grep -c '"kind":"peer","peer":"double","version":"test double 1"' "$TMP/out")
if [ "$rc" = 0 ] && [ "$rows" = 16 ] &&
   grep -q '"cache":"cold","tokens":1024,"batch":1,"threads":1,"dtype":"fp8","peer_dtype":"q8_0",' "$TMP/out" &&
   grep -q '"cache":"hot","tokens":1024,"batch":1,"threads":2,"dtype":"bf16","peer_dtype":"f16",' "$TMP/out" &&
   grep -q '"cache":"hot",.*"dtype":"fp16","peer_dtype":"f16",.*"vs_peer":' "$TMP/out"; then
	pass peer_rows_for_every_pair_cache_and_thread_count
else
	fail peer_rows_for_every_pair_cache_and_thread_count
	sed 's/^/# /' "$TMP/out" "$TMP/err"
fi

# Cold, --mem 8: 4 layers of fp8 (2 KiB a token), 2 of bf16 (4 KiB);
# hot, 32 MiB: 8 of bf16.
if grep '"cache":"cold",.*"dtype":"fp8","peer_dtype":"q8_0"' "$TMP/out" | grep -q '"layers":4,' &&
   grep '"cache":"cold",.*"dtype":"bf16","peer_dtype":"bf16"' "$TMP/out" | grep -q '"layers":2,' &&
   grep '"cache":"hot","tokens":1024,"batch":1,"threads":1,"dtype":"bf16","peer_dtype":"bf16"' "$TMP/out" | grep -q '"layers":8,'; then
	pass peer_cases_cycle_the_layers_the_memory_holds
else
	fail peer_cases_cycle_the_layers_the_memory_holds
fi

# The prefill beside the peer's: bf16 beside bf16 and f16, 1 and 2 threads.
run attn --tokens 1024 --batch 1 --time 0 --mem 8 --threads 2 --chunk 64 \
	--json --peer "$DOUBLE"
if [ "$rc" = 0 ] &&
   [ "$(grep -c '"kind":"peer_prefill","peer":"double",.*"q_tokens":64,"gflops":' "$TMP/out")" = 4 ] &&
   grep -q '"kind":"peer_prefill",.*"threads":2,"dtype":"bf16","peer_dtype":"f16",' "$TMP/out"; then
	pass peer_prefill_rows_for_every_pair_and_thread_count
else
	fail peer_prefill_rows_for_every_pair_and_thread_count
fi

# shellcheck disable=SC2086
run attn $small --peer "$TMP/none.so"
check peer_that_does_not_load_is_refused rc 1 noout \
	err1 "kvbench attn: --peer $TMP/none.so: $TMP/none.so: cannot open shared object file: No such file or directory"
# shellcheck disable=SC2086
run attn $small --json --peer "$WRONG"
check peer_of_another_abi_is_refused rc 1 \
	err1 "kvbench attn: --peer $WRONG: no kvb_peer_v1 of ABI 1"

tap_done
