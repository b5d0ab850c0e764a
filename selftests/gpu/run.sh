#!/bin/bash
# SPDX-License-Identifier: MIT
#
# selftests/gpu/run.sh - everything kvarena can learn from a GPU, in one
# unattended run of under five minutes, on a machine that has only this
# repository, a CUDA toolkit (nvcc) and the driver: no build/ from
# elsewhere, no liburing, no kernel source.
#
#   selftests/gpu/run.sh [--dry-run] [--build DIR] [--llama TREE] OUTDIR
#
#  0. tools  make, the C compiler and nvcc; what is missing is reported;
#  1. probe  device 0 (selftests/gpu/probe.c, built with the C compiler
#            alone): name, UUID, memory; without one, print one line
#            saying so and exit 77, before anything is built;
#  2. build  gpu_check and runtime_check for sm_90 (and its PTX) with the
#            static cudart (no library path needed), into OUTDIR/build
#            (or DIR), with make -k: what can be built is; if gpu_check
#            could not be, it is built again on the CPU kernels without
#            their SIMD files (build_nosimd), which the CUDA checks need
#            only as a reference;
#  3. kernels every CUDA kernel against the CPU reference (gpu_check
#            --check-only GROUP, KTAP), one process per KV dtype and one
#            for the rest (kernels-fp32 ... kernels-other), so that a CUDA
#            error costs one group -- first, as the step that matters most;
#  4. bench  decode bandwidth (bf16 and fp8, Llama-3-8B geometry) against
#            the card's copy bandwidth, tokens/s, prefill GFLOP/s;
#  5. runtime libkvarena's CUDA backend on the device: frames that a
#            process exported and passed over SCM_RIGHTS before exiting,
#            imported, read and written by another; published frames
#            mapped read-only; a sequence freed while the device still
#            reads it (runtime_check, KTAP);
#  6. sdpa   where PyTorch sees the GPU, its scaled_dot_product_attention
#            on the decode shapes, as a peer;
#  7. llama  with --llama TREE (a llama.cpp tree at the commit that
#            integrations/llama.cpp/ pins, or a tar file of one):
#            selftests/llama.cpp/run.sh --cuda, the patched llama-server
#            built with nvcc for sm_90 with as many jobs as CPUs (into
#            BUILD/llama.cpp-cuda/, which a later run reuses) and serving
#            a tiny model on the GPU with its KV cache in an arena of CUDA
#            memory (TAP); under KVG_LLAMA_LIMIT seconds (default 540),
#            the build included, so that step alone outlasts five minutes.
#
# Every step runs, under its own time limit (nvidia-smi and the probe
# too), whatever the steps before it did, if what it runs was built.
# OUTDIR gets one log per step (build.log, kernels-fp32.log, ...) and
# results.jsonl: every result as one JSON object per line, each step as
# {"kind":"step","name":...,"ok":...,"rc":...,"seconds":...,"status":...},
# a failure of any kind (a missing tool or program, a crash, a time-out)
# as such a line with "ok":false.  Exit status: 0 when every step
# passed, 1 when one failed, 77 when there is no GPU.
#
# KVG_MAKE_ARGS adds make variables to the build (make check uses it to
# break the CPU kernels' build on purpose: the CUDA steps must still run).
#
# --dry-run proves the script on a machine without a GPU (make check
# runs it): the build and the steps as above, except that the kernel and
# bench steps, which need a device, are reported as skipped, and
# runtime_check runs against the test double of the driver
# (selftests/lib/cuda_double.c, through KVA_CUDA_LIBRARY) in its
# asynchronous model, which runs queued work only when waited for.
set -uo pipefail

usage() {
	echo "usage: $0 [--dry-run] [--build DIR] [--llama TREE] OUTDIR" >&2
	exit 2
}

dry=
build=
llama=
while [ $# -gt 0 ]; do
	case $1 in
	--dry-run) dry=1; shift ;;
	--build) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
	--llama) [ $# -ge 2 ] || usage; llama=$2; shift 2 ;;
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

# json_step NAME RC SECONDS [STATUS [MORE]]: one step's result line; MORE
# is extra JSON members (',"missing":"nvcc"').
json_step() {
	local ok=false status=${4:-}
	[ "$2" -eq 0 ] && ok=true
	[ -n "$status" ] || { [ "$2" -eq 0 ] && status=passed || status=failed; }
	printf '{"kind":"step","name":"%s","ok":%s,"rc":%d,"seconds":%d,"status":"%s"%s}\n' \
		"$1" "$ok" "$2" "$3" "$status" "${5:-}" >> "$results"
}

# step NAME LIMIT CMD...: run CMD under LIMIT seconds, its output in
# NAME.log and on stdout, its JSON lines into results.jsonl.
step() {
	local name=$1 limit=$2 t0=$SECONDS rc status=
	shift 2
	echo "# run.sh: $name"
	timeout --kill-after=10 "$limit" "$@" > "$out/$name.log" 2>&1
	rc=$?
	case $rc in
	124|137) status=timed_out
		 echo "# $name: killed after $limit s" >> "$out/$name.log" ;;
	esac
	grep -v '^{' "$out/$name.log"
	grep '^{' "$out/$name.log" >> "$results"
	json_step "$name" "$rc" $((SECONDS - t0)) "$status"
	[ "$rc" -eq 0 ] || failed=1
	return "$rc"
}

skip() {
	echo "# run.sh: $1: skipped ($2)"
	json_step "$1" 0 0 skipped
}

# missing NAME WHAT: a step that cannot run, as a failure.
missing() {
	echo "# run.sh: $1: not run ($2 missing)"
	json_step "$1" 1 0 missing ",\"missing\":\"$2\""
	failed=1
}

# run_if NAME BINARY LIMIT CMD...: step NAME if BINARY was built.
run_if() {
	local name=$1 bin=$2
	shift 2
	if [ -x "$bin" ]; then
		step "$name" "$@"
	else
		missing "$name" "${bin#"$build"/}"
	fi
}

cd "$root" || exit 1

# 0. tools
cc=${CC:-cc}
nvcc=$CUDA_HOME/bin/nvcc
lack=
command -v make >/dev/null || lack="$lack make"
command -v "$cc" >/dev/null || lack="$lack $cc"
[ -x "$nvcc" ] || lack="$lack nvcc"
if [ -n "$lack" ]; then
	echo "run.sh: missing:$lack (CUDA_HOME=$CUDA_HOME)" >&2
	json_step tools 1 0 missing ",\"missing\":\"${lack# }\""
	failed=1
fi

# 1. probe: before any build, so that no GPU costs a second
if [ -z "$dry" ]; then
	t0=$SECONDS
	if ! command -v "$cc" >/dev/null; then
		missing probe "$cc"
	else
		timeout 60 "$cc" -O2 -I"$CUDA_HOME/include" -o "$build/probe" \
			"$here/probe.c" -ldl > "$out/probe.log" 2>&1 &&
			timeout --kill-after=5 30 "$build/probe" >> "$out/probe.log" 2>&1
		rc=$?
		if [ "$rc" -eq 77 ]; then
			json_step probe 77 $((SECONDS - t0)) no_gpu
			echo "run.sh: no GPU here ($(sed -n 's/^# no CUDA device: //p' "$out/probe.log" | head -1)); nothing run"
			exit 77
		fi
		grep '^{' "$out/probe.log" >> "$results"
		json_step probe "$rc" $((SECONDS - t0))
		[ "$rc" -eq 0 ] || { failed=1; cat "$out/probe.log"; }
	fi
	if command -v nvidia-smi >/dev/null; then
		timeout --kill-after=5 20 nvidia-smi \
			--query-gpu=name,uuid,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
			--format=csv,noheader > "$out/nvidia-smi.log" 2>&1 ||
			echo "# nvidia-smi failed or timed out (rc $?)" >> "$out/nvidia-smi.log"
	fi
fi

# 2. build: sm_90 alone (half the time of sm_80 + sm_90), make -k
gpu_check=$build/selftests/gpu/gpu_check
runtime_check=$build/selftests/gpu/runtime_check
double=$build/selftests/lib/libcuda_double.so
targets="$gpu_check $runtime_check"
[ -n "$dry" ] && targets="$targets $double"
[ -n "$llama" ] && targets="$targets $build/lib/libkvarena.a"
make_args=(B="$build" NVCC="$nvcc" KVK_CUDA_ARCHS=90)
# shellcheck disable=SC2206
[ -n "${KVG_MAKE_ARGS:-}" ] && make_args+=($KVG_MAKE_ARGS)
if command -v make >/dev/null; then
	# shellcheck disable=SC2086
	step build 240 make -k -j"$(nproc)" "${make_args[@]}" $targets ||
		echo "run.sh: the build failed, see $out/build.log; running what was built" >&2
	if [ ! -x "$gpu_check" ] && [ -x "$nvcc" ]; then
		step build_nosimd 240 make -k -j"$(nproc)" "${make_args[@]}" \
			KVK_NO_SIMD=1 "$gpu_check"
	fi
else
	missing build make
fi

# 3.-4. the kernels, one process per group, then their speed
for g in fp32 fp16 bf16 fp8 other; do
	if [ -n "$dry" ]; then
		skip "kernels-$g" "--dry-run: the kernels need a device"
	else
		run_if "kernels-$g" "$gpu_check" 60 "$gpu_check" --check-only "$g"
	fi
done
if [ -n "$dry" ]; then
	skip bench "--dry-run: the kernels need a device"
else
	run_if bench "$gpu_check" 120 "$gpu_check" --bench-only
fi

# 5. the runtime
if [ -n "$dry" ]; then
	if [ -f "$double" ]; then
		run_if runtime "$runtime_check" 90 env KVA_CUDA_LIBRARY="$double" \
			CUDA_DOUBLE_ASYNC=1 "$runtime_check"
	else
		missing runtime "${double#"$build"/}"
	fi
else
	run_if runtime "$runtime_check" 90 "$runtime_check"
fi

# 6. the peer
if [ -z "$dry" ] && command -v python3 >/dev/null &&
   timeout 60 python3 -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
	step sdpa 60 python3 "$here/sdpa_peer.py"
else
	skip sdpa "no PyTorch with CUDA here"
fi

# 7. llama.cpp on the GPU
if [ -z "$llama" ]; then
	skip llama "no --llama TREE given"
elif [ ! -f "$build/lib/libkvarena.a" ]; then
	missing llama lib/libkvarena.a
else
	tree=$llama
	if [ -f "$llama" ]; then
		tree=$build/llama-tree
		rm -rf "$tree"
		mkdir -p "$tree" && tar -xf "$llama" -C "$tree"
	fi
	step llama "${KVG_LLAMA_LIMIT:-540}" env KVA_BUILD="$build" JOBS="$(nproc)" \
		"$root/selftests/llama.cpp/run.sh" --cuda "$tree"
fi

# The issue's figures, from results.jsonl; a line a killed step left
# half-written is counted, not fatal.
if command -v python3 >/dev/null; then
	timeout 30 python3 - "$results" <<'PY'
import json, sys
bad = 0
for line in open(sys.argv[1], errors="replace"):
    try:
        r = json.loads(line)
    except ValueError:
        bad += 1
        continue
    if not isinstance(r, dict):
        bad += 1
        continue
    try:
        if r.get("kind") in ("decode", "sdpa") and r.get("tokens", 0) >= 8192:
            print("# %-6s %-4s tokens %6d batch %2d: %7.1f GB/s of KV, %3.0f%% of copy%s"
                  % (r["kind"], r.get("dtype", ""), r["tokens"], r["batch"],
                     r["kv_gbs"], 100 * r["ratio"],
                     ", %.2fx bf16 tokens/s" % r["vs_bf16"] if "vs_bf16" in r else ""))
        elif r.get("kind") == "llama_bench":
            q, p = r["result"]["arena"], r["result"]["plain"]
            print("# llama-server on the GPU, arena/plain: prompt %.3f, generation %.3f tokens/s"
                  % (q["prompt_tps"] / p["prompt_tps"], q["gen_tps"] / p["gen_tps"]))
        elif r.get("kind") == "step" and not r.get("ok"):
            print("# step %s %s (rc %s)" % (r.get("name"), r.get("status", "failed"),
                                            r.get("rc")))
        elif r.get("kind") == "error":
            print("# CUDA error: %s: %s at %s" % (r.get("call"), r.get("error"),
                                                 r.get("where")))
    except (KeyError, TypeError, ValueError):
        bad += 1
if bad:
    print("# %d line(s) of results.jsonl were not whole JSON objects" % bad)
PY
fi
echo "# run.sh took $((SECONDS - start)) s; results in $results; exit status $failed"
exit "$failed"
