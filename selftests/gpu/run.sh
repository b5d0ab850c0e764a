#!/bin/bash
# SPDX-License-Identifier: MIT
#
# selftests/gpu/run.sh - everything kvarena can learn from a GPU, in one
# unattended run of under five minutes, on a machine that has only this
# repository, a CUDA toolkit (nvcc) and the driver: no build/ from
# elsewhere, no liburing, no kernel source.
#
#   selftests/gpu/run.sh [--dry-run] [--build DIR] OUTDIR
#
#  1. build  gpu_check and runtime_check for sm_90 alone, with the static
#            cudart (no library path needed), into OUTDIR/build (or DIR);
#  2. probe  device 0: name, UUID, memory; without one, print one line
#            saying so and exit 77;
#  3. kernels every CUDA kernel against the CPU reference (gpu_check
#            --check-only, KTAP) -- first, as the step that matters most;
#  4. bench  decode bandwidth (bf16 and fp8, Llama-3-8B geometry) against
#            the card's copy bandwidth, tokens/s, prefill GFLOP/s;
#  5. runtime libkvarena's CUDA backend on the device, and frames that a
#            process exported and passed over SCM_RIGHTS before exiting,
#            imported, read and written by another (runtime_check, KTAP);
#  6. sdpa   where PyTorch sees the GPU, its scaled_dot_product_attention
#            on the decode shapes, as a peer.
#
# Every step runs, under its own time limit, whatever the steps before it
# did.  OUTDIR gets one log per step (build.log, kernels.log, ...) and
# results.jsonl: every result as one JSON object per line, each step as
# {"kind":"step","name":...,"ok":...,"rc":...,"seconds":...}.  Exit
# status: 0 when every step passed, 1 when one failed, 77 when there is
# no GPU.
#
# --dry-run proves the script on a machine without a GPU (make check
# runs it): the build and the steps as above, except that the kernel and
# bench steps, which need a device, are reported as skipped, and
# runtime_check runs against the test double of the driver
# (selftests/lib/cuda_double.c, through KVA_CUDA_LIBRARY).
set -uo pipefail

usage() {
	echo "usage: $0 [--dry-run] [--build DIR] OUTDIR" >&2
	exit 2
}

dry=
build=
while [ $# -gt 0 ]; do
	case $1 in
	--dry-run) dry=1; shift ;;
	--build) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
	-h|--help) usage ;;
	-*) usage ;;
	*) break ;;
	esac
done
[ $# -eq 1 ] || usage

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$1" || exit 1
out=$(cd "$1" && pwd)
build=${build:-$out/build}
mkdir -p "$build" || exit 1
build=$(cd "$build" && pwd)
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
results=$out/results.jsonl
: > "$results"
start=$SECONDS
failed=0

# json_step NAME RC SECONDS [STATUS]: one step's result line.
json_step() {
	local ok=false status=${4:-}
	[ "$2" -eq 0 ] && ok=true
	[ -n "$status" ] || { [ "$2" -eq 0 ] && status=passed || status=failed; }
	printf '{"kind":"step","name":"%s","ok":%s,"rc":%d,"seconds":%d,"status":"%s"}\n' \
		"$1" "$ok" "$2" "$3" "$status" >> "$results"
}

# step NAME LIMIT CMD...: run CMD under LIMIT seconds, its output in
# NAME.log and on stdout, its JSON lines into results.jsonl.
step() {
	local name=$1 limit=$2 t0=$SECONDS rc
	shift 2
	echo "# run.sh: $name"
	timeout --kill-after=10 "$limit" "$@" > "$out/$name.log" 2>&1
	rc=$?
	[ "$rc" -eq 124 ] && echo "# $name: killed after $limit s" >> "$out/$name.log"
	grep -v '^{' "$out/$name.log"
	grep '^{' "$out/$name.log" >> "$results"
	json_step "$name" "$rc" $((SECONDS - t0))
	[ "$rc" -eq 0 ] || failed=1
	return "$rc"
}

skip() {
	echo "# run.sh: $1: skipped ($2)"
	json_step "$1" 0 0 skipped
}

cd "$root" || exit 1
command -v make >/dev/null || { echo "run.sh: make not found" >&2; exit 1; }
[ -x "$CUDA_HOME/bin/nvcc" ] || { echo "run.sh: no nvcc in $CUDA_HOME (set CUDA_HOME)" >&2; exit 1; }
command -v nvidia-smi >/dev/null &&
	nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
		--format=csv,noheader > "$out/nvidia-smi.log" 2>&1

# 1. build: sm_90 alone (half the time of sm_80 + sm_90)
targets="$build/selftests/gpu/gpu_check $build/selftests/gpu/runtime_check"
[ -n "$dry" ] && targets="$targets $build/selftests/lib/libcuda_double.so"
# shellcheck disable=SC2086
if ! step build 240 make -j"$(nproc)" B="$build" NVCC="$CUDA_HOME/bin/nvcc" \
		KVK_CUDA_ARCHS=90 $targets; then
	echo "run.sh: the build failed, see $out/build.log" >&2
	exit 1
fi

# 2. probe
if [ -z "$dry" ]; then
	"$build/selftests/gpu/gpu_check" --probe > "$out/probe.log" 2>&1
	rc=$?
	if [ "$rc" -eq 77 ]; then
		json_step probe 77 0 no_gpu
		echo "run.sh: no GPU here ($(sed -n 's/^# no CUDA device: //p' "$out/probe.log" | head -1)); built in $((SECONDS - start)) s, nothing run"
		exit 77
	fi
	grep '^{' "$out/probe.log" >> "$results"
	json_step probe "$rc" 0
	[ "$rc" -eq 0 ] || failed=1
fi

# 3.-4. the kernels, then their speed
if [ -n "$dry" ]; then
	skip kernels "--dry-run: the kernels need a device"
	skip bench "--dry-run: the kernels need a device"
else
	step kernels 150 "$build/selftests/gpu/gpu_check" --check-only
	step bench 120 "$build/selftests/gpu/gpu_check" --bench-only
fi

# 5. the runtime
if [ -n "$dry" ]; then
	step runtime 60 env KVA_CUDA_LIBRARY="$build/selftests/lib/libcuda_double.so" \
		"$build/selftests/gpu/runtime_check"
else
	step runtime 60 "$build/selftests/gpu/runtime_check"
fi

# 6. the peer
if [ -z "$dry" ] && command -v python3 >/dev/null &&
   python3 -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
	step sdpa 60 python3 "$here/sdpa_peer.py"
else
	skip sdpa "no PyTorch with CUDA here"
fi

# The issue's figures, from results.jsonl.
if command -v python3 >/dev/null; then
	python3 - "$results" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") in ("decode", "sdpa") and r.get("tokens", 0) >= 8192:
        print("# %-6s %-4s tokens %6d batch %2d: %7.1f GB/s of KV, %3.0f%% of copy%s"
              % (r["kind"], r.get("dtype", ""), r["tokens"], r["batch"],
                 r["kv_gbs"], 100 * r["ratio"],
                 ", %.2fx bf16 tokens/s" % r["vs_bf16"] if "vs_bf16" in r else ""))
    elif r.get("kind") == "step" and not r["ok"]:
        print("# step %s failed (rc %d)" % (r["name"], r["rc"]))
PY
fi
echo "# run.sh took $((SECONDS - start)) s; results in $results; exit status $failed"
exit "$failed"
