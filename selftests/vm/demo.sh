# SPDX-License-Identifier: GPL-2.0
#
# The main job, run by `make demo` in the VM (busybox sh): an operator
# creates a host arena with kvarenactl, two serving processes attach and
# allocate, the operator looks at it with kvarenactl, one process is
# killed and its frames come back, the arena is destroyed.
set -e
ctl=kvarenactl-static

$ctl create demo --frames 64 --frame-size 2M --bytes-per-token 128K \
	--low-watermark 8
echo

start_client() {	# LABEL MIN MAX FRAMES TOKENS
	demo-client demo "$@" > /tmp/$1.out &
	while ! grep -q "$1 ready" /tmp/$1.out; do sleep 0.1; done
	grep -v ready /tmp/$1.out
}
start_client serve-a 8 40 24 375
a=$!
start_client serve-b 8 40 16 156
b=$!
echo

echo '$ kvarenactl stat demo'
$ctl stat demo
echo
echo '$ kvarenactl clients demo'
$ctl clients demo
echo
echo '$ kvarenactl stat --json demo'
$ctl -j stat demo
echo

kill -9 $a
wait $a || true
echo "serve-a killed with SIGKILL"
echo '$ kvarenactl stat demo'
$ctl stat demo
kill -9 $b
wait $b || true
$ctl destroy demo
echo
echo "serve-b killed, arena destroyed"
