# SPDX-License-Identifier: GPL-2.0
#
# vm.sh - in the VM (busybox sh, as root, kvarena.ko loaded): the operator
# makes a host arena with kvarenactl for two llama-servers and runs
# vm_serve.py, which starts them as two users and serves the trace (see
# there).  The arena: 160 frames of 4 KiB, less than the two servers
# would hold at their whole contexts (2 x 128); under pressure below 24
# free frames; each user's clients may be guaranteed 64 frames (1024
# cells of the model: one request as long as the test sends).
ln -sf /tests/kvarenactl-static /bin/kvarenactl
# The servers and their clients meet on loopback.
ip link set lo up
# The device node as the install's udev rule makes it: group kvarena
# (990), 0660; the two users are members.
chgrp 990 /dev/kvarena && chmod 0660 /dev/kvarena
if ! kvarenactl create kvllama --frames 160 --frame-size 4Ki \
	--low-watermark 24 --client-min-limit 64; then
	echo "not ok 1 the operator makes the arena"
	exit 1
fi
/usr/bin/python3 /data/vm_serve.py
rc=$?
kvarenactl destroy kvllama --wait 10 || rc=1
exit $rc
