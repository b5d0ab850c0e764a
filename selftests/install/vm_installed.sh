#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the VM (selftests/vm/run.sh --script), over a root that holds
# kvarena as installed: `make modules_install` and `make install` staged
# into it, with kmod, systemd-udevd and python3 carried in (check-vm-
# installed in selftests/install/install.mk).  The init has loaded the
# build's kvarena.ko; this unloads it, then works as an administrator
# would on a machine with kvarena installed: udevd running, modprobe,
# the device's group and mode from the installed udev rule, modinfo and
# the module's parameter, the Python binding in device mode, KV events
# (the module's, kvarenactl events and --zmq), modprobe -r.  Prints KTAP.
set -u
# As on Debian: kmod's tools in /sbin, python3 in /usr/bin, kvarena's
# in /usr/local/bin.  Busybox's shell runs its own applets of the same
# name whatever PATH says, so kmod's are called by path.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

. /kvatest/ktap.sh

echo "TAP version 13"
echo "1..16"
rel=$(uname -r)

/sbin/rmmod kvarena 2>/tmp/err
check rmmod_unloads_the_idle_module [ ! -e /sys/module/kvarena ]

mkdir -p /run
mount -t tmpfs tmpfs /run
/lib/systemd/systemd-udevd --daemon 2>/tmp/udevd.err
# Answers once it listens: the module's uevent will not be missed.
check udevd_runs udevadm control --ping --timeout=30

# A small events ring, so that test_events.py can overflow it.
v=$(/sbin/modprobe -v kvarena events_ring_kib=64 2>&1)
case $v in
"insmod /lib/modules/$rel/extra/kvarena.ko"*)
	check modprobe_loads_the_installed_module [ -e /sys/module/kvarena ] ;;
*)	notok modprobe_loads_the_installed_module "modprobe -v: $v" ;;
esac

udevadm settle --timeout=30
mode=$(stat -c '%G %a' /dev/kvarena 2>&1)
if [ "$mode" = "kvarena 660" ]; then
	ok udev_rule_gives_group_kvarena_mode_0660
else
	notok udev_rule_gives_group_kvarena_mode_0660 "/dev/kvarena: '$mode'"
fi

file=$(/sbin/modinfo -F filename kvarena 2>&1)
case $file in
/lib/modules/$rel/extra/kvarena.ko*) ok modinfo_finds_it_in_extra ;;
*) notok modinfo_finds_it_in_extra "filename: $file" ;;
esac

desc=$(/sbin/modinfo -F description kvarena 2>&1)
check modinfo_describes_it [ -n "$desc" ]

parm=$(/sbin/modinfo -F parm kvarena 2>&1)
case $parm in
events_ring_kib:*"(uint)") ok modinfo_documents_events_ring_kib ;;
*) notok modinfo_documents_events_ring_kib "parm: $parm" ;;
esac
kib=$(cat /sys/module/kvarena/parameters/events_ring_kib 2>&1)
check modprobe_sets_the_parameter [ "$kib" = 64 ]

# The Python binding against the installed module and library, as root
# and as a member of group kvarena (its own KTAP; counted apart).
python3 /kvatest/test_device.py
rc=$?
check python_device_tests_pass [ $rc = 0 ]

# KV events: the module, kvarenactl events, and --zmq over loopback.
ip link set lo up
python3 /kvatest/test_events.py
rc=$?
check python_events_tests_pass [ $rc = 0 ]

# The same events read by llm-d's, Dynamo's and vLLM's decoding rules.
python3 /kvatest/test_routers.py
rc=$?
check python_routers_tests_pass [ $rc = 0 ]

# kvarenactl exporter over loopback, read by promtool and scraped by a
# real prometheus (carried in from Debian's package).
python3 /kvatest/test_exporter.py
rc=$?
check python_exporter_tests_pass [ $rc = 0 ]

# The remote tier: two arenas, two kvarenactl remote agents, a Redis
# cluster of 3 masters and 3 replicas in the VM.
python3 /kvatest/test_remote.py
rc=$?
check python_remote_tests_pass [ $rc = 0 ]

# Where the root carries torch (one VM kernel): the shared prefix through
# torch views.
if [ -e /kvatest/test_prefix_torch.py ]; then
	python3 /kvatest/test_prefix_torch.py
	rc=$?
	check python_prefix_torch_tests_pass [ $rc = 0 ]
else
	skip python_prefix_torch_tests_pass "torch is carried into one VM kernel's root only"
fi

/sbin/modprobe -r kvarena 2>/tmp/err
check modprobe_r_unloads_it [ ! -e /sys/module/kvarena ]
udevadm settle --timeout=30 2>/dev/null
check the_device_node_goes_with_it [ ! -e /dev/kvarena ]

totals
[ $failed = 0 ]
