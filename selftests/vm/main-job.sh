# SPDX-License-Identifier: GPL-2.0
#
# The main job, run by `make run` in the VM (busybox sh): an operator
# creates a host arena with kvarenactl; three kvserve processes serve
# slices of the Azure traces from it, with real attention over their
# frames; the operator watches kvarenactl stat and clients; one process is
# killed with SIGKILL mid-flight and every frame it held comes back; a
# summary of what was served, and the run's timeline in /out for the
# picture (selftests/vm/runplot.c draws it on the host).
#
# What happens is decided by progress, never by the clock: the kill comes
# once serve-b has served a quarter of its requests and, with all three
# stopped for the count, holds frames (so it has requests open); the job
# waits for that for up to KVA_RUN_PATIENCE seconds and says what it saw
# if it never comes.  A machine's speed changes how long the job takes,
# not what it shows; KVA_RUN_REQUESTS scales it (CI runs 12 a process).
#
# The geometry is small so that the CPU attention keeps up under qemu's
# TCG: 1 layer, 1 KV head, head dim 32, fp32 - 256 bytes of KV a token,
# so that a 4 KiB frame holds 16 tokens, as a 2 MiB frame of Llama-3-8B
# does.  Requests keep their trace lengths and arrival times (prompts
# over 4096 tokens are refused, as a max model length does); each
# process runs at most 16 sequences and prefills at most 2048 prompt
# tokens a step.  Every prompt starts with the same 256-token system
# prompt, which the first process to prefill it publishes and the others
# attach.  The arena (2048 frames, 8 MiB) is smaller than what the three
# would hold at their peaks: they meet its low watermark (128 frames).
#
# Guarantees: each process attaches with a minimum of 512 frames (a
# quarter of the arena; a running set of its typical requests, some 80
# frames each, fits in it).  Under pressure a process admits only what
# its guarantee still covers - or, with nothing running, the request at
# its front - so none of them starves however the others grow; the last
# 512 frames go to whoever asks first.  A process refused frames sleeps
# in poll() until the module says they could be had.
set -eu

ctl=kvarenactl-static
srv=kvserve-static
arena=main
frames=${KVA_RUN_FRAMES:-2048}
min=${KVA_RUN_MIN:-512}
scale=${KVA_RUN_SCALE:-1}
requests=${KVA_RUN_REQUESTS:-40}
patience=${KVA_RUN_PATIENCE:-600}
geom="--layers 1 --kv-heads 1 --head-dim 32 --q-heads 1 --dtype fp32 --frame-size 4K"
conv=/data/AzureLLMInferenceTrace_conv.csv
out=/out
start=$(date +%s)

stamp() { echo "[$(( $(date +%s) - start )) s] $*"; }
fail() { echo "FAILED: $*"; exit 1; }
# Seconds since boot, to the hundredth: the timeline's clock.
now() { cut -d ' ' -f 1 /proc/uptime; }
event() { echo "E $(now) $*" >> $out/events; }

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
# served LABEL: requests done so far, from its latest progress line.
served()
{
	sed -n 's/.* done \([0-9]*\)\/.*/\1/p' /tmp/$1.out | tail -n 1 |
		grep . || echo 0
}
alive() { kill -0 "$1" 2>/dev/null; }
# Signal every process of the list that is still there.
signal() # SIG PID...
{
	sig=$1
	shift
	for p in "$@"; do
		kill -"$sig" "$p" 2>/dev/null || true
	done
}
# What each process said last, for a failure's report.
show()
{
	for p in serve-a serve-b serve-c; do
		echo "$p: $(tail -n 1 /tmp/$p.out 2>/dev/null)"
		sed 's/^/  /' /tmp/$p.err 2>/dev/null
	done
	$ctl clients $arena || true
}

echo "== kvarena main job: three kvserve processes share one arena"
echo
echo "\$ kvarenactl create $arena --frames $frames --frame-size 4K --bytes-per-token 256 --low-watermark 128"
$ctl create $arena --frames "$frames" --frame-size 4K --bytes-per-token 256 \
	--low-watermark 128
echo

# The timeline: the arena and its clients, as kvarenactl top sees them,
# twice a second until the job is done.
: > $out/events
(
	while [ ! -e /tmp/sampling-done ]; do
		echo "T $(now)"
		$ctl -j top $arena -n 1 2>/dev/null || true
		sleep 0.5
	done
) > /tmp/samples &
sampler=$!

serve() # LABEL TRACE SLICE
{
	echo "$1: $(basename "$2") slice $3 of its hour, first $requests requests, at ${scale}x time, a 256-token system prompt, $min frames guaranteed"
	$srv --trace "$2" --slice "$3" --requests "$requests" --time-scale "$scale" \
		--max-model-len 4096 --max-seqs 16 --prefill-budget 2048 \
		--shared-prefix 256 $geom --min-frames "$min" \
		--arena $arena --label "$1" --report-every 0.5 --json \
		> "/tmp/$1.out" 2> "/tmp/$1.err" &
}
event start
serve serve-a $conv 1/3
pid_a=$!
serve serve-b $conv 2/3
pid_b=$!
serve serve-c $conv 3/3
pid_c=$!
echo

# Mid-flight: serve-b has served a quarter of its requests (at least one)
# and, with all three stopped so that the count is exact, holds frames.
target=$((requests / 4))
[ $target -ge 1 ] || target=1
waited=0 shown=no b_held=0
while :; do
	alive $pid_b || { show; fail "serve-b exited before it could be killed mid-flight (it served $(served serve-b) of $requests requests)"; }
	# The operator's view, once all three are serving (or before the
	# kill at the latest).
	if [ $shown = no ] && { [ "$(served serve-a)" -gt 0 ] &&
	   [ "$(served serve-b)" -gt 0 ] && [ "$(served serve-c)" -gt 0 ] ||
	   [ "$(served serve-b)" -ge $target ]; }; then
		stamp "\$ kvarenactl stat $arena"
		$ctl stat $arena
		echo
		stamp "\$ kvarenactl clients $arena"
		$ctl clients $arena
		echo
		shown=yes
	fi
	if [ "$(served serve-b)" -ge $target ]; then
		signal STOP $pid_a $pid_b $pid_c
		before=$($ctl -j clients $arena)
		b_held=$(echo "$before" | client_num serve-b held_frames)
		b_held=${b_held:-0}
		[ "$b_held" -gt 0 ] && alive $pid_b && break
		signal CONT $pid_a $pid_b $pid_c
	fi
	if [ $waited -ge $((patience * 2)) ]; then
		show
		fail "serve-b never held frames with $target of $requests requests served within ${patience}s (served $(served serve-b), holding $b_held frames)"
	fi
	sleep 0.5
	waited=$((waited + 1))
done
b_served=$(served serve-b)
b_shared=$(echo "$before" | client_num serve-b shared_frames)
b_shared=${b_shared:-0}
held_before=$(arena_held)
stamp "serve-b has served $b_served of $requests requests and holds $b_held frames ($b_shared of them shared with others); the arena holds $held_before"
stamp "\$ kill -KILL serve-b"
event kill serve-b
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
event back $returned
stamp "the arena holds $held_after: $returned frames came back; serve-b gone from the client table: $gone"
signal CONT $pid_a $pid_c
echo
stamp "\$ kvarenactl clients $arena"
$ctl clients $arena
echo

wait $pid_a || { show; fail "serve-a exited with an error"; }
wait $pid_c || { show; fail "serve-c exited with an error"; }
event done
stamp "serve-a and serve-c are done"
touch /tmp/sampling-done
wait $sampler || true
# The last sample: what the survivors left.
{ echo "T $(now)"; $ctl -j top $arena -n 1; } >> /tmp/samples
echo
stamp "\$ kvarenactl stat $arena"
$ctl stat $arena
echo

echo "== summary"
printf '%-8s %9s %10s %12s %12s %7s %8s %12s %6s %6s\n' process served tokens/s \
	"TPOT p50 ms" "TPOT p99 ms" share preempt "prefix hits" steps waits
served=0
for p in serve-a serve-c; do
	# The JSON summary is the last line, after the progress lines.
	tail -n 1 /tmp/$p.out > $out/$p.json
	j=$(cat $out/$p.json)
	done_=$(echo "$j" | json_num completed)
	served=$((served + done_))
	printf '%-8s %9s %10s %12s %12s %7s %8s %12s %6s %6s\n' $p \
		"$done_/$(($(echo "$j" | json_num requests) - $(echo "$j" | json_num refused)))" \
		"$(echo "$j" | json_num tokens_per_s)" \
		"$(echo "$j" | json_num tpot_p50_ms)" \
		"$(echo "$j" | json_num tpot_p99_ms)" \
		"$(echo "$j" | json_num token_share | cut -c1-6)" \
		"$(echo "$j" | json_num preemptions)" \
		"$(echo "$j" | json_num prefix_hit_tokens)" \
		"$(echo "$j" | json_num steps)" \
		"$(echo "$j" | json_num waits)"
done
printf '%-8s killed after %s of %s requests, holding %s frames\n' serve-b \
	"$b_served" "$requests" "$b_held"
echo
tps=$(cat $out/serve-a.json $out/serve-c.json | sed -n 's/.*"tokens_per_s":\([0-9.]*\).*/\1/p' |
      awk '{ s += $1 } END { printf "%.1f", s }')
echo "requests served: $served by serve-a and serve-c ($tps tokens/s together); serve-b killed mid-flight"
echo "arena: peak $($ctl -j stat $arena | sed -n 's/.*"peak_held":\([0-9]*\).*/\1/p') of $frames frames held; allocations refused for want of frames: $($ctl -j stat $arena | sed -n 's/.*"alloc_failures":\([0-9]*\).*/\1/p')"

# The timeline for the picture: "S time held cached free pressure" for the
# arena and "C time label held" for each client, from the samples; the
# events beside them.
awk -v min="$min" -v wm=128 -v frames="$frames" '
	/^T / { t = $2; seen = 0; next }
	{
		n = split($0, obj, "{")
		for (i = 1; i <= n; i++) {
			o = obj[i]
			if (o ~ /^"capacity"/ && !seen++) {	# frames, not bytes
				match(o, /"held":[0-9]+/); h = substr(o, RSTART + 7, RLENGTH - 7)
				match(o, /"cached":[0-9]+/); c = substr(o, RSTART + 9, RLENGTH - 9)
				match(o, /"free":[0-9]+/); f = substr(o, RSTART + 7, RLENGTH - 7)
				print "S", t, h, c, f, (p == "true")
			} else if (o ~ /"pressure":/) {
				match(o, /"pressure":[a-z]+/); p = substr(o, RSTART + 11, RLENGTH - 11)
			} else if (o ~ /"label":/) {
				match(o, /"label":"[^"]*"/); l = substr(o, RSTART + 9, RLENGTH - 10)
				match(o, /"held_frames":[0-9]+/); h = substr(o, RSTART + 14, RLENGTH - 14)
				print "C", t, l, h
			}
		}
	}
	BEGIN { print "A", frames, wm, min }' /tmp/samples > $out/timeline
cat $out/events >> $out/timeline
rm $out/events

# Nobody spun: a step decodes or prefills (at most a token's step per
# output token, an admission or a preemption besides), and a process
# with nothing to run sleeps until frames come back, a request arrives,
# or a second has passed.
for p in serve-a serve-c; do
	j=$(cat $out/$p.json)
	steps=$(echo "$j" | json_num steps)
	waits=$(echo "$j" | json_num waits)
	work=$(( $(echo "$j" | json_num output_tokens) + $(echo "$j" | json_num requests) +
		 $(echo "$j" | json_num preemptions) ))
	secs=$(echo "$j" | json_num seconds | cut -d . -f 1)
	[ "$steps" -le $work ] && [ "$waits" -le $((10 * secs + 10 + requests)) ] ||
		fail "$p spun: $steps steps for $work tokens, admissions and preemptions; $waits waits in $secs s"
done

final=$(arena_held)
if [ "$b_held" -gt 0 ] && [ "$returned" = $((b_held - b_shared)) ] &&
   [ $gone = yes ] && [ "$final" = 0 ]; then
	echo "frames of the killed serve-b: all $b_held returned ($returned to the arena, $b_shared still held by others); at the end the arena holds $final frames"
else
	fail "serve-b held $b_held frames ($b_shared shared); $returned came back; gone from the clients: $gone; at the end the arena holds $final"
fi
$ctl destroy $arena
echo "arena $arena destroyed"
