# SPDX-License-Identifier: GPL-2.0
#
# vm.sh - in the VM (busybox sh, as root, kvarena.ko loaded): the operator
# makes a host arena with kvarenactl for two llama-servers and runs
# vm_serve.py, which starts them as two users and serves the trace (see
# there).  The arena: 112 frames of 4 KiB, less than the two servers
# would hold at their whole contexts (2 x 128); below 48 free frames it is
# under pressure; each user's clients may be guaranteed 32 frames.
ln -sf /tests/kvarenactl-static /bin/kvarenactl
# The device node as the install's udev rule makes it: group kvarena
# (990), 0660; the two users are members.
chgrp 990 /dev/kvarena && chmod 0660 /dev/kvarena
if ! kvarenactl create kvllama --frames 112 --frame-size 4Ki \
	--low-watermark 48 --client-min-limit 32; then
	echo "not ok 1 the operator makes the arena"
	exit 1
fi
/usr/bin/python3 /data/vm_serve.py
rc=$?
kvarenactl destroy kvllama --wait 10 || rc=1
exit $rc
