# SPDX-License-Identifier: GPL-2.0
#
# The main job, run by `make run` in the VM (busybox sh): an operator
# creates a host arena with kvarenactl; three kvserve processes serve
# slices of the Azure traces from it, with real attention over their
# frames; the operator watches kvarenactl stat and clients; one process is
# killed with SIGKILL halfway and every frame it held comes back; a
# summary of what was served.
#
# The geometry is small so that the CPU attention keeps up under qemu's
# TCG: 1 layer, 1 KV head, head dim 32, fp32 - 256 bytes of KV a token,
# so that a 4 KiB frame holds 16 tokens, as a 2 MiB frame of Llama-3-8B
# does.  Requests keep their trace lengths and arrival times (prompts
# over 4096 tokens are refused, as a max model length does); each
# process runs at most 16 sequences and prefills at most 2048 prompt
# tokens a step.  Every prompt starts with the same 256-token system
# prompt, which the first process to prefill it publishes and the others
# attach (where libkvarena shares prefixes).  The arena (2048 frames,
# 8 MiB) is smaller than what the three would hold at their peaks: they
# meet its low watermark.
set -eu

ctl=kvarenactl-static
srv=kvserve-static
arena=main
frames=${KVA_RUN_FRAMES:-2048}
scale=${KVA_RUN_SCALE:-1}
requests=${KVA_RUN_REQUESTS:-40}
kill_at=${KVA_RUN_KILL_AT:-40}
geom="--layers 1 --kv-heads 1 --head-dim 32 --q-heads 1 --dtype fp32 --frame-size 4K"
conv=/data/AzureLLMInferenceTrace_conv.csv
start=$(date +%s)

stamp() { echo "[$(( $(date +%s) - start )) s] $*"; }

# json_num KEY < JSON: the number under "KEY" (the keys are unique).
json_num() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" | head -n 1; }
# client_num LABEL KEY < clients JSON: KEY of the client labelled LABEL.
client_num()
{
	tr '{' '\n' | grep "\"label\":\"$1\"" |
		sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" | head -n 1
}
arena_held() { $ctl -j stat $arena | tr '{' '\n' | grep '"capacity"' | head -n 1 |
	       sed -n 's/.*"held":\([0-9]*\).*/\1/p'; }

echo "== kvarena main job: three kvserve processes share one arena"
echo
echo "\$ kvarenactl create $arena --frames $frames --frame-size 4K --bytes-per-token 256 --low-watermark 128"
$ctl create $arena --frames "$frames" --frame-size 4K --bytes-per-token 256 \
	--low-watermark 128
echo

serve() # LABEL TRACE SLICE
{
	echo "$1: $(basename "$2") slice $3 of its hour, first $requests requests, at ${scale}x time, a 256-token system prompt"
	$srv --trace "$2" --slice "$3" --requests "$requests" --time-scale "$scale" \
		--max-model-len 4096 --max-seqs 16 --prefill-budget 2048 \
		--shared-prefix 256 $geom \
		--arena $arena --label "$1" --json > "/tmp/$1.json" 2> "/tmp/$1.err" &
}
serve serve-a $conv 1/3
pid_a=$!
serve serve-b $conv 2/3
pid_b=$!
serve serve-c $conv 3/3
pid_c=$!
echo

sleep $((kill_at / 2))
stamp "\$ kvarenactl stat $arena"
$ctl stat $arena
echo
stamp "\$ kvarenactl clients $arena"
$ctl clients $arena
echo

# Halfway: all three are paused for a moment, so that the count of what
# comes back is exact (SIGKILL ends a stopped process as well).
sleep $((kill_at - kill_at / 2))
kill -STOP $pid_a $pid_b $pid_c
before=$($ctl -j clients $arena)
b_held=$(echo "$before" | client_num serve-b held_frames)
b_shared=$(echo "$before" | client_num serve-b shared_frames)
b_shared=${b_shared:-0}
held_before=$(arena_held)
stamp "serve-b holds $b_held frames ($b_shared of them shared with others); the arena holds $held_before"
stamp "\$ kill -KILL serve-b"
kill -KILL $pid_b
wait $pid_b 2>/dev/null || true
# The module releases the client when its file's last reference goes;
# io_uring drops its references a moment after the process is gone.
gone=no
for i in 1 2 3 4 5 6 7 8 9 10; do
	$ctl -j clients $arena | grep -q '"label":"serve-b"' || { gone=yes; break; }
	sleep 1
done
held_after=$(arena_held)
returned=$((held_before - held_after))
stamp "the arena holds $held_after: $returned frames came back; serve-b gone from the client table: $gone"
kill -CONT $pid_a $pid_c
echo
stamp "\$ kvarenactl clients $arena"
$ctl clients $arena
echo

wait $pid_a || { echo "serve-a failed:"; cat /tmp/serve-a.err; exit 1; }
wait $pid_c || { echo "serve-c failed:"; cat /tmp/serve-c.err; exit 1; }
stamp "serve-a and serve-c are done"
echo
stamp "\$ kvarenactl stat $arena"
$ctl stat $arena
echo

echo "== summary"
printf '%-8s %9s %10s %12s %12s %7s %8s %12s\n' process served tokens/s \
	"TPOT p50 ms" "TPOT p99 ms" share preempt "prefix hits"
served=0
for p in serve-a serve-c; do
	j=$(cat /tmp/$p.json)
	done_=$(echo "$j" | json_num completed)
	served=$((served + done_))
	printf '%-8s %9s %10s %12s %12s %7s %8s %12s\n' $p \
		"$done_/$(($(echo "$j" | json_num requests) - $(echo "$j" | json_num refused)))" \
		"$(echo "$j" | json_num tokens_per_s)" \
		"$(echo "$j" | json_num tpot_p50_ms)" \
		"$(echo "$j" | json_num tpot_p99_ms)" \
		"$(echo "$j" | json_num token_share | cut -c1-6)" \
		"$(echo "$j" | json_num preemptions)" \
		"$(echo "$j" | json_num prefix_hit_tokens)"
done
printf '%-8s killed at %s s with %s frames held\n' serve-b "$kill_at" "$b_held"
echo
tps=$(cat /tmp/serve-a.json /tmp/serve-c.json | sed -n 's/.*"tokens_per_s":\([0-9.]*\).*/\1/p' |
      awk '{ s += $1 } END { printf "%.1f", s }')
echo "requests served: $served by serve-a and serve-c ($tps tokens/s together); serve-b killed halfway"
echo "arena: peak $($ctl -j stat $arena | sed -n 's/.*"peak_held":\([0-9]*\).*/\1/p') of $frames frames held; allocations refused for want of frames: $($ctl -j stat $arena | sed -n 's/.*"alloc_failures":\([0-9]*\).*/\1/p')"
final=$(arena_held)
if [ "$b_held" -gt 0 ] && [ "$returned" = $((b_held - b_shared)) ] &&
   [ $gone = yes ] && [ "$final" = 0 ]; then
	echo "frames of the killed serve-b: all $b_held returned ($returned to the arena, $b_shared still held by others); at the end the arena holds $final frames"
else
	echo "FAILED: serve-b held $b_held frames ($b_shared shared); $returned came back; gone from the clients: $gone; at the end the arena holds $final"
	exit 1
fi
$ctl destroy $arena
echo "arena $arena destroyed"
