#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# tools/ggml-peer/build.sh GGML_DIR [OUT]
#
# Build ggml's CPU backend from a ggml-org/ggml tree the user gives, and
# kvbench attn's peer object over it (tools/ggml-peer/ggml_peer.c):
#
#   tools/ggml-peer/build.sh ~/src/ggml build/ggml-peer
#   build/tools/kvbench attn --peer build/ggml-peer/kvbench-peer-ggml.so
#
# ggml is configured as it builds for this CPU (GGML_NATIVE), static and
# position-independent, with its own thread pool (no OpenMP, so that both
# libraries' threads are plain pthreads), tests and examples off: about a
# minute on two cores.  Needs cmake and a C/C++ compiler; adds nothing to
# kvarena's own build or dependencies.  The object records the tree's
# commit (git, or the file .commit at its top) for the figures it prints.
set -eu

[ $# -ge 1 ] && [ $# -le 2 ] || {
	echo "usage: $0 GGML_DIR [OUT]" >&2
	exit 2
}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
src=$(cd "$1" && pwd)
out=${2:-$root/build/ggml-peer}
[ -f "$src/include/ggml.h" ] && [ -f "$src/CMakeLists.txt" ] || {
	echo "$0: $src is not a ggml tree (no include/ggml.h)" >&2
	exit 1
}
command -v cmake >/dev/null || {
	echo "$0: cmake is needed (Debian: apt-get install cmake)" >&2
	exit 1
}
mkdir -p "$out"
out=$(cd "$out" && pwd)
commit=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null ||
	 cat "$src/.commit" 2>/dev/null || echo unknown)
jobs=$(nproc 2>/dev/null || echo 2)
gen=
command -v ninja >/dev/null && gen="-G Ninja"

# shellcheck disable=SC2086
cmake -S "$src" -B "$out/ggml" $gen -DCMAKE_BUILD_TYPE=Release \
	-DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
	-DGGML_NATIVE=ON -DGGML_OPENMP=OFF -DGGML_BUILD_TESTS=OFF \
	-DGGML_BUILD_EXAMPLES=OFF >"$out/cmake.log" 2>&1 || {
	tail -20 "$out/cmake.log" >&2
	exit 1
}
cmake --build "$out/ggml" -j "$jobs" >"$out/build.log" 2>&1 || {
	tail -20 "$out/build.log" >&2
	exit 1
}
# ggml before ggml-cpu before ggml-base: each needs the next.
libs=
for l in libggml.a libggml-cpu.a libggml-base.a; do
	f=$(find "$out/ggml" -name "$l" | head -n 1)
	[ -n "$f" ] || {
		echo "$0: $l was not built (see $out/build.log)" >&2
		exit 1
	}
	libs="$libs $f"
done
# shellcheck disable=SC2086
${CC:-cc} -O2 -fPIC -shared -I"$src/include" -I"$root/tools/kvbench" \
	-DKVB_PEER_VERSION="\"ggml $commit\"" -o "$out/kvbench-peer-ggml.so" \
	"$here/ggml_peer.c" -Wl,--whole-archive $libs -Wl,--no-whole-archive \
	-lstdc++ -lm -lpthread
echo "$out/kvbench-peer-ggml.so (ggml $commit)"
