#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# selftests/llama.cpp/run.sh [--cuda] LLAMA_DIR - llama.cpp's llama-server
# with its KV cache in a kvarena arena: the tree given, with the patches
# of integrations/llama.cpp/ applied, built against this build's
# libkvarena, serving a tiny random-weight model on loopback (TAP).
# Without LLAMA_DIR it says so in one line and exits 77 (skip).
#
#   --cuda      build with the CUDA backend (nvcc, sm_$CUDA_ARCHS) and run
#               the same checks with the model and its KV cache on GPU 0,
#               the arena of CUDA memory; without a GPU, the build only
#               (the serving checks skip); no VM case
#   LLAMA_DIR   a llama.cpp tree at the commit Documentation/llama.cpp.rst
#               pins (82bb48500a9a), e.g. `git archive 82bb48500a9a | tar
#               -x -C DIR`; it is copied, never written to
#   KVA_BUILD   this project's build directory (default: build); the copy,
#               its build and the model go in $KVA_BUILD/llama.cpp/
#               ($KVA_BUILD/llama.cpp-cuda/ with --cuda)
#   JOBS        build jobs (default 2)
#   CUDA_HOME   the CUDA toolkit (default /usr/local/cuda); CUDA_ARCHS the
#               GPU architectures to build for (default 90)
#
# The build is not for this machine's CPU (GGML_NATIVE=OFF), but ggml then
# still turns on AVX, AVX2, FMA, F16C and BMI2 (unless SOURCE_DATE_EPOCH
# is set or it cross-builds): so the VM case boots qemu with -cpu max,
# whose TCG CPU has those, and AVX-512, which it has not, is off.  A
# server that dies of SIGILL is said so in its log and the TAP line.
#
# Needs cmake, g++, patch (or git apply), a python3 with numpy (the
# system's, python3-numpy, or $PYTHON) and $KVA_BUILD/lib/libkvarena.a
# (make check-llama.cpp builds it).  The first build of llama-server takes
# 10-25 minutes on two cores (with --cuda, about an hour); later runs
# rebuild only what changed.
#
# Here the arena is an embedded one (this machine has no /dev/kvarena):
# the server's own.  What it checks: the patches apply and the tree
# builds; greedy completions are the same text with the arena and
# without; the arena's frames follow the cells in use (grow, give back on
# erase) and a slot's saved state restores into new frames; a request
# larger than the arena fails alone (503) and the server serves on; two
# requests that do not fit together both finish, one parked while the
# other runs; conditions the arena cannot serve are refused with the
# reason.  With --cuda the model is wider (2 KiB rows), so that a 2 MiB
# frame of CUDA memory holds 1024 rows as a 64 KiB host frame holds the
# tiny model's 64-byte ones, and the same frame counts hold.

CUDA=
if [ "${1:-}" = --cuda ]; then
	CUDA=1
	shift
fi
LLAMA_DIR=${1:-}
if [ -z "$LLAMA_DIR" ]; then
	echo "SKIP: no llama.cpp tree given: selftests/llama.cpp/run.sh [--cuda] LLAMA_DIR"
	exit 77
fi
if [ ! -f "$LLAMA_DIR/src/llama-kv-cache.cpp" ] ||
   [ ! -d "$LLAMA_DIR/gguf-py/gguf" ]; then
	echo "run.sh: $LLAMA_DIR is not a llama.cpp tree" >&2
	exit 2
fi

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
KB=$(cd "${KVA_BUILD:-build}" 2>/dev/null && pwd)
OUT=$(mkdir -p "${KVA_BUILD:-build}/llama.cpp${CUDA:+-cuda}" &&
      cd "${KVA_BUILD:-build}/llama.cpp${CUDA:+-cuda}" && pwd)
PATCHES=$SRC/integrations/llama.cpp
# the model writer needs numpy: $PYTHON, else the system python3
# (python3-numpy) or the one on the PATH (a GPU machine's), whichever
# has it
PY=${PYTHON:-}
if [ -z "$PY" ]; then
	for PY in /usr/bin/python3 "$(command -v python3)"; do
		[ -x "$PY" ] && "$PY" -c 'import numpy' 2>/dev/null && break
	done
fi
TMP=$(mktemp -d)
SERVER_PID=
trap '[ -n "$SERVER_PID" ] && kill $SERVER_PID 2>/dev/null; rm -rf "$TMP"' EXIT
. "$HERE/../tap.sh"

if [ ! -f "$KB/lib/libkvarena.a" ]; then
	echo "run.sh: $KB/lib/libkvarena.a missing: make check-llama.cpp builds it" >&2
	exit 2
fi

# ---- build -------------------------------------------------------------

# The copy is made again, and patched, whenever the tree or the patches
# change.  A file the patches touch (now or last time) keeps the last
# copy's mtime if its text is the same, and gets a new one if not, so
# that the build stays incremental and never keeps a stale object.
stamp=$( (cd "$LLAMA_DIR" && find . -path ./build -prune -o -path ./.git \
	-prune -o -type f -printf '%p %s %T@\n' | sort; cat "$PATCHES"/*.patch) |
	sha256sum | cut -c1-32)
if [ "$(cat "$OUT/src.stamp" 2>/dev/null)" != "$stamp" ]; then
	rm -rf "$OUT/src.old"
	[ ! -d "$OUT/src" ] || mv "$OUT/src" "$OUT/src.old"
	mkdir -p "$OUT/src"
	(cd "$LLAMA_DIR" && tar -cf - --exclude=./build --exclude=./.git .) |
		(cd "$OUT/src" && tar -xf -)
	ok=1
	for p in "$PATCHES"/*.patch; do
		if command -v patch >/dev/null; then
			patch -d "$OUT/src" -p1 -s --no-backup-if-mismatch <"$p"
		else
			# not as a path of a repository above the copy
			(cd "$OUT/src" && GIT_CEILING_DIRECTORIES=$OUT git apply -p1 "$p")
		fi >>"$TMP/err" 2>&1 || { ok=0; echo "# $p" >>"$TMP/err"; }
	done
	if [ $ok = 0 ]; then
		fail patches_apply "a patch of $PATCHES does not apply"
		tap_done
		exit 1
	fi
	grep -h '^+++ b/' "$PATCHES"/*.patch | sed 's|^+++ b/||' |
		sort -u >"$TMP/files"
	cat "$OUT/src.files" "$TMP/files" 2>/dev/null | sort -u |
	while read -r f; do
		if [ -f "$OUT/src.old/$f" ] && [ -f "$OUT/src/$f" ] &&
		   cmp -s "$OUT/src.old/$f" "$OUT/src/$f"; then
			touch -r "$OUT/src.old/$f" "$OUT/src/$f"
		else
			touch -c "$OUT/src/$f"
		fi
	done
	rm -rf "$OUT/src.old"
	cp "$TMP/files" "$OUT/src.files"
	echo "$stamp" >"$OUT/src.stamp"
fi
pass patches_apply

URING=
[ -e /usr/include/liburing.h ] && URING="-luring;"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
set --
[ -n "$CUDA" ] && set -- -DGGML_CUDA=ON \
	"-DCMAKE_CUDA_COMPILER=$CUDA_HOME/bin/nvcc" \
	"-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHS:-90}"
cmake -S "$OUT/src" -B "$OUT/build" -DCMAKE_BUILD_TYPE=Release \
	-DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
	-DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
	-DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF \
	-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DLLAMA_KVARENA=ON "$@" \
	"-DKVARENA_INCLUDE_DIRS=$SRC/lib/include;$SRC/include" \
	"-DKVARENA_LIBRARIES=$KB/lib/libkvarena.a;${URING}-ldl;-lpthread" \
	>"$OUT/cmake.log" 2>&1
if cmake --build "$OUT/build" --target llama-server -j "${JOBS:-2}" \
	>"$OUT/build.log" 2>&1; then
	pass llama_server_builds
else
	fail llama_server_builds "see $OUT/build.log"
	tap_done
	exit 1
fi
SERVER=$OUT/build/bin/llama-server

# With --cuda, rows of 2 KiB: 1024 to a 2 MiB frame (see above).
set --
[ -n "$CUDA" ] && set -- --embd 1024 --heads 8 --kv-heads 8 --ff 1024
if PYTHONPATH="$OUT/src/gguf-py" $PY "$HERE/tiny_model.py" \
	"$OUT/tiny.gguf" "$@" >"$TMP/out" 2>"$TMP/err"; then
	pass tiny_model_is_written
else
	fail tiny_model_is_written
	tap_done
	exit 1
fi

# Without a GPU, a CUDA build is all there is to check.
GPU=
if [ -n "$CUDA" ]; then
	if command -v nvidia-smi >/dev/null &&
	   timeout 30 nvidia-smi -L 2>/dev/null | grep -q '^GPU 0'; then
		GPU="-ngl 99"
	else
		n=$((n + 1))
		echo "ok $n serve_on_the_gpu # SKIP no GPU here (nvidia-smi -L lists none)"
		tap_done
		exit $?
	fi
fi

# ---- serve -------------------------------------------------------------

client() { $PY "$HERE/client.py" "$PORT" "$@"; }

# start NAME ARGS... - llama-server on a free port with ARGS; its log in
# $OUT/NAME.log; 0 once /health answers, 1 if it exited first
start()
{
	name=$1
	shift
	# the kernel's pick for a socket bound to port 0
	PORT=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	"$SERVER" -m "$OUT/tiny.gguf" --host 127.0.0.1 --port "$PORT" \
		-c 2048 -fa on -t 2 -lv 4 $GPU "$@" >"$OUT/$name.log" 2>&1 &
	SERVER_PID=$!
	for i in $(seq 240); do
		client health && return 0
		kill -0 $SERVER_PID 2>/dev/null || break
		sleep 0.5
	done
	wait $SERVER_PID 2>/dev/null
	SERVER_PID=
	return 1
}

stop()
{
	kill $SERVER_PID 2>/dev/null
	wait $SERVER_PID 2>/dev/null
	SERVER_PID=
}

# field N KEY - KEY of the Nth JSON line of $TMP/out
field()
{
	sed -n "${1}p" "$TMP/out" | $PY -c 'import json, sys; v = json.load(sys.stdin)[sys.argv[1]]; print("" if v is None else v)' "$2"
}

# held NAME - frames the arena held at the last change the log shows
held()
{
	sed -n 's/.*llama_kv_arena: [0-9]* cells mapped, \([0-9]*\) frames held.*/\1/p' \
		"$OUT/$1.log" | tail -1
}

# Prompts of 17, ~890, ~900 (twice) and ~1600 tokens.
SHORT="the quick brown fox"
MID=$($PY -c 'print(" ".join("kv%d" % i for i in range(200)))')
LONG1=$($PY -c 'print("ab " * 450)')
LONG2=$($PY -c 'print("cd " * 450)')
HUGE=$($PY -c 'print("ab " * 800)')

# Reference: the whole context in a buffer of the server's own.
if start plain -np 1; then
	client complete "$SHORT" >"$TMP/ref" 2>"$TMP/err"
	client complete "$MID" >>"$TMP/ref"
	client complete "$LONG1" >>"$TMP/ref"
	client complete "$LONG2" >>"$TMP/ref"
	stop
fi
cp "$TMP/ref" "$TMP/out"
REF_SHORT=$(field 1 content)
REF_MID=$(field 2 content)
REF_SHORT_LP=$(field 1 logprobs)
REF_MID_LP=$(field 2 logprobs)
REF_LONG1=$(field 3 content)
REF_LONG2=$(field 4 content)
if [ -n "$REF_SHORT" ] && [ -n "$REF_MID" ] && [ -n "$REF_LONG2" ]; then
	pass server_without_arena_answers
	echo "# completion: $REF_SHORT"
else
	fail server_without_arena_answers "see $OUT/plain.log"
fi

# The arena: the same text, frames as the cells go.
mkdir -p "$TMP/slots"
if start arena -np 1 --kv-arena kvtest --slot-save-path "$TMP/slots"; then
	pass server_with_arena_answers
else
	fail server_with_arena_answers "see $OUT/arena.log"
fi
client complete "$SHORT" >"$TMP/out"
client complete "$MID" >>"$TMP/out"
a_short=$(field 1 content)
a_mid=$(field 2 content)
a_short_lp=$(field 1 logprobs)
a_mid_lp=$(field 2 logprobs)
if [ "$a_short" = "$REF_SHORT" ] && [ "$a_mid" = "$REF_MID" ] &&
   [ -n "$REF_MID_LP" ] && [ "$a_short_lp" = "$REF_SHORT_LP" ] &&
   [ "$a_mid_lp" = "$REF_MID_LP" ]; then
	pass greedy_text_is_the_same_with_the_arena
else
	fail greedy_text_is_the_same_with_the_arena \
		"without: $REF_SHORT / $REF_MID" "with: $a_short / $a_mid" \
		"log-probabilities without: $REF_SHORT_LP / $REF_MID_LP" \
		"with: $a_short_lp / $a_mid_lp"
fi
if [ -n "$CUDA" ]; then
	where='(cuda device 0, 2048 KiB frames'
else
	where='(host, 64 KiB frames'
fi
if grep -qF "K and V in embedded arena 'kvtest' $where" "$OUT/arena.log" &&
   grep -q 'llama_kv_arena: 256 cells mapped, 4 frames held' "$OUT/arena.log" &&
   grep -q 'llama_kv_arena: 1024 cells mapped, 4 frames held' "$OUT/arena.log"; then
	pass frames_are_mapped_as_cells_are_used
else
	fail frames_are_mapped_as_cells_are_used "see $OUT/arena.log"
fi

client slot erase >"$TMP/out"
if [ "$(held arena)" = 0 ]; then
	pass erase_gives_every_frame_back
else
	fail erase_gives_every_frame_back "held after erase: $(held arena)"
fi

# Save, erase, restore: the restored KV serves the prompt again (one
# token evaluated) and the text is the same.
client complete --cache "$MID" >"$TMP/out"
saved=$(field 1 content)
client slot save mid.bin >"$TMP/out"
s_status=$(field 1 status)
client slot erase >"$TMP/out"
after_erase=$(held arena)
client slot restore mid.bin >"$TMP/out"
r_status=$(field 1 status)
after_restore=$(held arena)
client complete --cache "$MID" >"$TMP/out"
again=$(field 1 content)
again_n=$(field 1 prompt_n)
if [ "$s_status" = 200 ] && [ "$r_status" = 200 ] &&
   [ "$after_erase" = 0 ] && [ "${after_restore:-0}" -gt 0 ] &&
   [ "$saved" = "$REF_MID" ] && [ "$again" = "$saved" ] &&
   [ "$again_n" = 1 ]; then
	pass slot_state_restores_into_new_frames
else
	fail slot_state_restores_into_new_frames \
		"save $s_status restore $r_status; held after erase" \
		"$after_erase, after restore $after_restore; text $saved /" \
		"$again; evaluated $again_n"
fi
stop

# Too small an arena: that request fails, alone; the server serves on.
if start small -np 1 --kv-arena kvtest --kv-arena-frames 4; then
	client complete "$HUGE" >"$TMP/out"
	h_status=$(field 1 status)
	h_error=$(field 1 error)
	client complete "$SHORT" >"$TMP/out"
	after=$(field 1 content)
	stop
fi
case "$h_error" in
*kv-arena*) e_ok=1 ;;
*) e_ok=0 ;;
esac
if [ "$h_status" = 503 ] && [ $e_ok = 1 ] && [ "$after" = "$REF_SHORT" ]; then
	pass too_small_an_arena_fails_that_request_and_serves_on
	echo "# error: $h_error"
else
	fail too_small_an_arena_fails_that_request_and_serves_on \
		"status $h_status, error $h_error, then: $after" \
		"see $OUT/small.log"
fi

# Two requests that do not fit together: one is parked, both finish
# with the text each gives alone.
if start park -np 2 -kvu --kv-arena kvtest --kv-arena-frames 4; then
	client complete "$LONG1" "$LONG2" >"$TMP/out"
	p1=$(field 1 content)
	p2=$(field 2 content)
	stop
fi
if [ -n "$p1" ] && [ "$p1" = "$REF_LONG1" ] && [ "$p2" = "$REF_LONG2" ] &&
   grep -q 'kv-arena: no frames for this request.*parked' "$OUT/park.log"; then
	pass a_request_without_frames_is_parked_not_failed
else
	fail a_request_without_frames_is_parked_not_failed \
		"alone: $REF_LONG1 / $REF_LONG2" "together: $p1 / $p2" \
		"see $OUT/park.log"
fi

# What the arena cannot serve is refused at start, with the reason.
refused()
{
	name=$1
	want=$2
	shift 2
	if start "$name" "$@"; then
		stop
		fail "$name" "the server started"
	elif grep -q "$want" "$OUT/$name.log"; then
		pass "$name"
	else
		fail "$name" "no \"$want\" in $OUT/$name.log"
	fi
}
refused arena_refuses_transposed_v 'kv-arena: needs flash attention' \
	-np 1 --kv-arena kvtest -fa off
refused arena_refuses_a_stream_per_slot 'kv-arena: needs one KV stream' \
	-np 2 -no-kvu --kv-arena kvtest
refused arena_refuses_rows_that_straddle_frames 'which does not divide' \
	-np 1 --kv-arena kvtest -ctk q8_0
if [ -n "$CUDA" ]; then
	# one layer's KV on the GPU, the other's in host memory
	refused arena_refuses_a_split_cache 'kv-arena: the KV cache would be split' \
		-np 1 --kv-arena kvtest -ngl 1
	# -nkvo: the KV cache in host memory, the arena too; attention runs
	# on the CPU then, so the text to match is -nkvo's without the arena
	if start nkvo_plain -np 1 -nkvo; then
		client complete "$SHORT" >"$TMP/out"
		k_ref=$(field 1 content)$(field 1 logprobs)
		stop
	fi
	if start nkvo -np 1 --kv-arena kvtest -nkvo; then
		client complete "$SHORT" >"$TMP/out"
		k_short=$(field 1 content)$(field 1 logprobs)
		stop
	fi
	if [ -n "$k_ref" ] && [ "$k_short" = "$k_ref" ] &&
	   grep -qF "K and V in embedded arena 'kvtest' (host, " "$OUT/nkvo.log"; then
		pass kv_in_host_memory_takes_a_host_arena
	else
		fail kv_in_host_memory_takes_a_host_arena \
			"text $k_short (without the arena: $k_ref); see $OUT/nkvo.log"
	fi
fi

# On the GPU, the speed with and without the arena: a benchmark, printed
# (its JSON line as it is, for selftests/gpu/run.sh's results), not a test.
if [ -n "$CUDA" ] &&
   PYTHONPATH="$OUT/src/gguf-py" $PY "$HERE/tiny_model.py" "$OUT/bench.gguf" \
	--layers 8 --embd 1024 --heads 8 --kv-heads 8 --ff 2048 --ctx 4096 \
	>"$TMP/err" 2>&1; then
	$PY "$HERE/bench.py" "$SERVER" "$OUT/bench.gguf" --rounds 8 \
		--prompt 1500 --gen 128 --np 1 --ngl 99 2>&1 |
		sed '/^{/!s/^/# bench: /'
fi

# ---- two servers on one kvarena.ko arena, in the VM ----------------------

# vm.sh and vm_serve.py there; their TAP comes back as comments, the run
# as one line here.
if [ -n "$CUDA" ]; then
	n=$((n + 1))
	echo "ok $n two_servers_share_one_arena_in_the_vm # SKIP the VM has no GPU: the host build's case"
elif [ -z "${KVA_VM_KERNEL:-}" ] || [ -z "${KVA_VM_MODULE:-}" ] ||
   [ -z "${KVA_VM_KVARENACTL:-}" ] || [ -z "${KVA_TRACE:-}" ]; then
	n=$((n + 1))
	echo "ok $n two_servers_share_one_arena_in_the_vm # SKIP set KVA_VM_KERNEL, KVA_VM_MODULE, KVA_VM_KVARENACTL and KVA_TRACE (make check-llama.cpp does)"
else
	root=$TMP/root
	mkdir -p "$root/bin"
	cp "$SERVER" "$root/bin/llama-server"
	stdlib=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
	"$SRC/selftests/vm/carry.sh" "$root" \
		--exclude '*/test' --exclude '*/tests' --exclude '*/idlelib' \
		--exclude '*/tkinter' --exclude '*/ensurepip' \
		--exclude '*/lib2to3' --exclude '*/turtledemo' \
		--exclude '*/pydoc_data' --exclude '*/dist-packages' \
		--exclude '*/site-packages' --exclude '*/config-3*' \
		/usr/bin/python3 "$stdlib" >"$TMP/err" 2>&1
	rm -rf "$OUT/vm"
	mkdir -p "$OUT/vm"
	"$SRC/selftests/vm/run.sh" --timeout "${KVA_LLAMA_VM_TIMEOUT:-1800}" \
		--mem 1536 --cpu max \
		--kernel "$KVA_VM_KERNEL" --module "$KVA_VM_MODULE" \
		--root "$root" --script "$HERE/vm.sh" --data "$OUT/tiny.gguf" \
		--data "$HERE/vm_serve.py" --data "$HERE/client.py" \
		--data "$KVA_TRACE" --out "$OUT/vm" \
		"$KVA_VM_KVARENACTL" >"$OUT/vm.log" 2>&1
	vrc=$?
	grep -E '^(ok|not ok|#) ' "$OUT/vm.log" | sed 's/^/# vm: /'
	if [ $vrc = 0 ] && grep -q '^ok .* no_client_left' "$OUT/vm.log" &&
	   ! grep -q '^not ok' "$OUT/vm.log"; then
		pass two_servers_share_one_arena_in_the_vm
	else
		fail two_servers_share_one_arena_in_the_vm \
			"run.sh exit $vrc; see $OUT/vm.log and $OUT/vm/"
	fi
fi

tap_done
