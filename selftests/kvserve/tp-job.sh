# SPDX-License-Identifier: GPL-2.0
#
# kvserve --tp 2 against --tp 1, in the VM (busybox sh, run by
# `make check-kvserve-tp`, part of make check): the same slice of the
# Azure conversation trace served with --check by one process on a solo
# host arena, and by a scheduler and two rank processes on a gang of two
# host members whose frames are half the size (each rank holds half the
# KV heads, so a frame holds as many tokens); the digests of every decode
# output must be equal, and the gang must hold nothing afterwards.
set -eu
ctl=kvarenactl-static
srv=kvserve-static
T=/data/AzureLLMInferenceTrace_conv.csv
G="--layers 1 --kv-heads 2 --head-dim 32 --q-heads 4 --dtype fp32"
R="-t $T --slice 1/50 --requests ${KVA_TP_REQUESTS:-8} --time-scale 100 --check --json"

json() { sed -n "s/.*\"$1\":\"*\([^,\"}]*\).*/\1/p"; }

$ctl create solo --frames 512 --frame-size 8K
$ctl create tpm0 --frames 512 --frame-size 4K
$ctl create tpm1 --frames 512 --frame-size 4K
$ctl create tp --gang tpm0,tpm1
# shellcheck disable=SC2086
$srv $R $G --frame-size 8K --arena solo > /tmp/tp1.json
# shellcheck disable=SC2086
$srv $R $G --frame-size 4K --arena tp --tp 2 > /tmp/tp2.json
cat /tmp/tp1.json /tmp/tp2.json
d1=$(json digest < /tmp/tp1.json)
d2=$(json digest < /tmp/tp2.json)
n1=$(json output_tokens < /tmp/tp1.json)
n2=$(json output_tokens < /tmp/tp2.json)
echo "tp 1: digest $d1, $n1 tokens, $(json tokens_per_s < /tmp/tp1.json) tokens/s"
echo "tp 2: digest $d2, $n2 tokens, $(json tokens_per_s < /tmp/tp2.json) tokens/s"
[ -n "$d1" ] && [ "$d1" = "$d2" ] && [ "$n1" = "$n2" ] ||
	{ echo "FAILED: --tp 2 computed other outputs than --tp 1"; exit 1; }
held=$($ctl -j stat tp | tr '{' '\n' | grep '"capacity"' | head -n 1 |
       sed -n 's/.*"held":\([0-9]*\).*/\1/p')
[ "$held" = 0 ] || { echo "FAILED: the gang holds $held frames after the run"; exit 1; }
echo "PASSED: --tp 2 equal to --tp 1"
