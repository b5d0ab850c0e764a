#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# selftests/llama.cpp/run.sh LLAMA_DIR - llama.cpp's llama-server, built
# from the tree given, serving a tiny random-weight model on loopback
# (TAP).  Without LLAMA_DIR it says so in one line and exits 77 (skip).
#
#   LLAMA_DIR   a llama.cpp tree at the commit Documentation/llama.cpp.rst
#               pins (82bb48500a9a), e.g. `git archive 82bb48500a9a | tar
#               -x -C DIR`; it is copied, never written to
#   KVA_BUILD   this project's build directory (default: build); the copy,
#               its build and the model go in $KVA_BUILD/llama.cpp/
#   JOBS        build jobs (default 2)
#
# Needs cmake, g++ and the system python3 with numpy (python3-numpy).
# The first build of llama-server takes 10-25 minutes on two cores; later
# runs rebuild only what changed.
#
# What it checks: the tree builds, tiny_model.py's model loads, the
# server answers on loopback, and greedy completions of one prompt are the
# same text twice.

LLAMA_DIR=${1:-}
if [ -z "$LLAMA_DIR" ]; then
	echo "SKIP: no llama.cpp tree given: selftests/llama.cpp/run.sh LLAMA_DIR"
	exit 77
fi
if [ ! -f "$LLAMA_DIR/src/llama-kv-cache.cpp" ] ||
   [ ! -d "$LLAMA_DIR/gguf-py/gguf" ]; then
	echo "run.sh: $LLAMA_DIR is not a llama.cpp tree" >&2
	exit 2
fi

HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mkdir -p "${KVA_BUILD:-build}/llama.cpp" &&
      cd "${KVA_BUILD:-build}/llama.cpp" && pwd)
PY=/usr/bin/python3
TMP=$(mktemp -d)
SERVER_PID=
trap '[ -n "$SERVER_PID" ] && kill $SERVER_PID 2>/dev/null; rm -rf "$TMP"' EXIT
. "$HERE/../tap.sh"

# ---- build -------------------------------------------------------------

# The copy is refreshed file by file, so that the build stays incremental.
mkdir -p "$OUT/src"
(cd "$LLAMA_DIR" && tar -cf - --exclude=./build --exclude=./.git .) |
	(cd "$OUT/src" && tar -xf - --keep-newer-files 2>/dev/null)
if [ ! -f "$OUT/build/CMakeCache.txt" ]; then
	cmake -S "$OUT/src" -B "$OUT/build" -DCMAKE_BUILD_TYPE=Release \
		-DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
		-DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
		-DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF \
		>"$OUT/cmake.log" 2>&1
fi
if cmake --build "$OUT/build" --target llama-server -j "${JOBS:-2}" \
	>"$OUT/build.log" 2>&1; then
	pass llama_server_builds
else
	fail llama_server_builds "see $OUT/build.log"
	tap_done
	exit 1
fi
SERVER=$OUT/build/bin/llama-server

if PYTHONPATH="$OUT/src/gguf-py" $PY "$HERE/tiny_model.py" \
	"$OUT/tiny.gguf" >"$TMP/out" 2>"$TMP/err"; then
	pass tiny_model_is_written
else
	fail tiny_model_is_written
	tap_done
	exit 1
fi

# ---- serve -------------------------------------------------------------

# http METHOD PATH [JSON] - the response body in $TMP/out, the status in
# $TMP/status (000 when nothing answered).
http()
{
	$PY - "$PORT" "$1" "$2" "${3:-}" >"$TMP/out" 2>"$TMP/err" <<'PYEOF'
import sys, urllib.request, urllib.error
port, method, path, body = sys.argv[1:5]
req = urllib.request.Request("http://127.0.0.1:%s%s" % (port, path),
                             data=body.encode() if body else None,
                             method=method,
                             headers={"Content-Type": "application/json"})
status = "000"
try:
    with urllib.request.urlopen(req, timeout=120) as r:
        status = str(r.status)
        sys.stdout.write(r.read().decode())
except urllib.error.HTTPError as e:
    status = str(e.code)
    sys.stdout.write(e.read().decode())
except OSError as e:
    sys.stderr.write(str(e) + "\n")
sys.stderr.write("status " + status + "\n")
PYEOF
	sed -n 's/^status //p' "$TMP/err" >"$TMP/status"
}

# A free port: the kernel's pick for a socket bound to port 0.
PORT=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$SERVER" -m "$OUT/tiny.gguf" --host 127.0.0.1 --port "$PORT" -c 2048 \
	-np 1 -fa on -t 2 >"$OUT/server.log" 2>&1 &
SERVER_PID=$!

up=0
for i in $(seq 120); do
	http GET /health
	if [ "$(cat "$TMP/status")" = 200 ]; then
		up=1
		break
	fi
	kill -0 $SERVER_PID 2>/dev/null || break
	sleep 0.5
done
if [ $up = 1 ]; then
	pass server_answers_on_loopback
else
	fail server_answers_on_loopback "see $OUT/server.log"
fi

# Random weights: a grammar keeps the text printable, so that the
# server's output parser takes it.
REQ='{"prompt": "the quick brown fox", "n_predict": 24, "temperature": 0,
      "cache_prompt": false, "grammar": "root ::= [a-z ]+"}'
http POST /completion "$REQ"
cp "$TMP/out" "$TMP/first"
first=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["content"])' \
	"$TMP/first" 2>/dev/null)
http POST /completion "$REQ"
second=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["content"])' \
	"$TMP/out" 2>/dev/null)
if [ -n "$first" ] && [ "$first" = "$second" ]; then
	pass greedy_completion_is_the_same_twice
	echo "# completion: $first"
else
	fail greedy_completion_is_the_same_twice "first: $first" \
		"second: $second"
fi

kill $SERVER_PID 2>/dev/null
wait $SERVER_PID 2>/dev/null
SERVER_PID=
tap_done
