# SPDX-License-Identifier: GPL-2.0
#
# check-debug.sh - the VM side of `make check-debug` (busybox sh, run by
# selftests/vm/run.sh --script on the debug kernel).  faults.mk puts
# TESTS="..." (the VM tests, in order) in front of this file.
#
# Runs every test, then unloads the module and asks kmemleak what is left
# unreferenced: anything the module allocated and lost shows up then.
# KASAN, lockdep and DEBUG_ATOMIC_SLEEP reports land in the kernel log,
# which run.sh fails on.  Prints "KVA-VM: result NAME RC" per test, as
# run.sh's own loop does, and one for kmemleak.

mount -t debugfs debugfs /sys/kernel/debug
leaks=/sys/kernel/debug/kmemleak
# What boot left behind is not ours: forget it.
[ -w $leaks ] && echo clear > $leaks

for t in $TESTS; do
	echo "KVA-VM: run $t"
	$t
	echo "KVA-VM: result $t $?"
done

# The dmem cgroup controller's cost: ALLOC+FREE on an arena that charges
# it against one that does not, in turn (Documentation/kvarena.rst).  A
# benchmark, printed: it fails only if a frame operation does.
echo "KVA-VM: run kvbench-dmem"
kvbench-static frames --dmem --iters 4000
echo "KVA-VM: result kvbench-dmem $?"

# Unload: every arena, client and frames file must be freed by now or by
# the module's exit.  Then two scans (an object must stay unreferenced
# across scans, and be older than 5 s, to be reported).
echo "KVA-VM: run kmemleak"
rmmod kvarena || echo "kmemleak: rmmod kvarena failed"
n=-1
if [ -w $leaks ]; then
	sleep 6
	echo scan > $leaks
	sleep 6
	echo scan > $leaks
	cat $leaks > /tmp/leaks
	n=$(grep -c '^unreferenced object' /tmp/leaks)
	head -200 /tmp/leaks
fi
echo "kmemleak: $n unreferenced objects after the tests and unload"
[ "$n" = 0 ]
echo "KVA-VM: result kmemleak $?"
