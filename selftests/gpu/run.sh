#!/bin/bash
# SPDX-License-Identifier: MIT
#
# selftests/gpu/run.sh - the GPU check, on a machine with an NVIDIA GPU
# (sm_80 or newer), in under five minutes:
#
#  1. build the CUDA kernels and the check program (make, nvcc);
#  2. check every CUDA kernel against the CPU reference (KTAP);
#  3. print decode bandwidth, Llama-3-8B geometry with bf16 KV, as a
#     fraction of the card's device-to-device copy bandwidth measured in
#     the same run, and prefill GFLOP/s;
#  4. where PyTorch sees the GPU, time its scaled_dot_product_attention
#     on the same decode shapes, as a peer;
#  5. run libkvarena's CUDA backend for real (lib_gpu_test, KTAP):
#     cuMemCreate/export/map/access of frames, sequences written and read
#     on the device, copy-on-write, and the cost of mapping a frame.
#
#   selftests/gpu/run.sh [OUTDIR]
#
# OUTDIR (default build-gpu/) gets the build, gpu_check.log,
# lib_gpu_test.log and results.jsonl (one JSON object per line).  On a
# lent device machine, build lib_gpu_test here first (`make`) and carry
# build/selftests/lib/lib_gpu_test along: the device may lack liburing
# and the kernel source the harness comes from.  Exit status: that of the
# check (0 when every kernel matched), 4 when there is no GPU.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mkdir -p "${1:-$root/build-gpu}" && cd "${1:-$root/build-gpu}" && pwd)
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
start=$SECONDS

cd "$root"
command -v nvidia-smi >/dev/null &&
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
		--format=csv,noheader || true
command -v make >/dev/null || { echo "run.sh: make not found" >&2; exit 1; }
[ -x "$CUDA_HOME/bin/nvcc" ] || { echo "run.sh: no nvcc in $CUDA_HOME" >&2; exit 1; }

make -j"$(nproc)" B="$out" "$out/selftests/gpu/gpu_check"
# lib_gpu_test needs the kselftest harness and liburing, which a bare GPU
# machine may lack: use the one built here and carried along if there is.
lib_gpu_test=$root/build/selftests/lib/lib_gpu_test
if [ ! -x "$lib_gpu_test" ]; then
	lib_gpu_test=$out/selftests/lib/lib_gpu_test
	make -j"$(nproc)" B="$out" "$lib_gpu_test"
fi
echo "# built in $((SECONDS - start)) s"

set +e
"$out/selftests/gpu/gpu_check" | tee "$out/gpu_check.log"
rc=${PIPESTATUS[0]}
set -e
grep '^{' "$out/gpu_check.log" > "$out/results.jsonl" || true

if python3 -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' \
	2>/dev/null; then
	python3 "$here/sdpa_peer.py" | tee -a "$out/results.jsonl"
else
	echo "# no PyTorch with CUDA here: no SDPA peer"
fi

# The figure the issue asks for: decode at >= 8k tokens against copy.
python3 - "$out/results.jsonl" <<'PY' || true
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for r in rows:
    if r.get("kind") in ("decode", "sdpa") and r.get("tokens", 0) >= 8192:
        print("# %-6s tokens %6d batch %2d: %7.1f GB/s of KV, %3.0f%% of copy"
              % (r["kind"], r["tokens"], r["batch"], r["kv_gbs"],
                 100 * r["ratio"]))
PY
set +e
"$lib_gpu_test" 2>&1 | tee "$out/lib_gpu_test.log"
lrc=${PIPESTATUS[0]}
set -e
[ "$rc" -ne 0 ] || rc=$lrc
echo "# run.sh took $((SECONDS - start)) s, exit status $rc (kernels and runtime)"
exit "$rc"
