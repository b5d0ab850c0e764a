#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs in the VM that deb_vm.sh boots: a Debian 12 root, systemd as init,
# where kvarena's packages were installed with dpkg -i (DKMS built the
# module for this kernel) and /etc/kvarena/arenas.conf names one arena.
# Started by kvarena-vmtest.service once kvarena.service and the exporter
# have started; prints KTAP between "KVA-DEB: begin" and "KVA-DEB: end" on
# the console, then powers off.
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin

. /kvatest/ktap.sh

echo "KVA-DEB: begin"
echo "TAP version 13"
echo "1..11"
rel=$(uname -r)

file=$(modinfo -F filename kvarena 2>&1)
case $file in
/lib/modules/$rel/updates/dkms/kvarena.ko*)
	check modules_load_d_loaded_the_module_dkms_built [ -e /sys/module/kvarena ] ;;
*)	notok modules_load_d_loaded_the_module_dkms_built "modinfo: $file" ;;
esac

udevadm settle --timeout=60
mode=$(stat -c '%G %a' /dev/kvarena 2>&1)
if [ "$mode" = "kvarena 660" ]; then
	ok the_packages_udev_rule_and_group_give_kvarena_0660
else
	notok the_packages_udev_rule_and_group_give_kvarena_0660 "/dev/kvarena: '$mode'"
fi

st=$(systemctl is-active kvarena.service)
out=$(kvarenactl stat boot 2>&1)
case "$st $out" in
"active arena boot: host, 16 frames of 64Ki"*) ok kvarena_service_made_the_arenas_conf_arena ;;
*) notok kvarena_service_made_the_arenas_conf_arena "is-active: $st" "$out" ;;
esac

metrics=$(python3 -c '
import urllib.request
print(urllib.request.urlopen("http://127.0.0.1:9847/metrics", timeout=60).read().decode())' 2>&1)
case $metrics in
*'kvarena_frames{arena="boot",state="free"} 16'*)
	ok the_exporter_service_serves_the_arena ;;
*)	notok the_exporter_service_serves_the_arena \
		"is-active: $(systemctl is-active kvarena-exporter.service)" \
		"$(echo "$metrics" | tail -5)" ;;
esac

# Documentation/deployment.rst's command lines, in order, against this
# node (deploy_run.py; its records made by extract.awk on the host).
python3 /kvatest/deploy_run.py /kvatest/deploy.spec > /tmp/deploy.out 2>&1
rc=$?
sed -n 's/^# /# deployment.rst: /p; /^not ok/s/^/# deployment.rst: /p' /tmp/deploy.out
check deployment_guide_commands_print_what_it_shows [ $rc = 0 ]

# A client of the packaged Python binding holds 2 frames across reloads.
python3 -c '
import kvarena, sys, time
a = kvarena.open("boot", mode="device", label="py")
a.alloc(2)
print("ready", flush=True)
time.sleep(3600)' > /tmp/client.out 2>&1 &
client=$!
for i in $(seq 600); do
	grep -q ready /tmp/client.out && break
	sleep 0.1
done
check the_python_binding_attaches [ "$(cat /tmp/client.out)" = ready ]

echo "arena boot2 --frames 8 --frame-size 64K" >> /etc/kvarena/arenas.conf
systemctl reload kvarena.service
held=$(kvarenactl -j stat boot 2>&1 | python3 -c '
import json, sys
s = json.load(sys.stdin)[0]
print(s["clients"], s["frames"]["held"])' 2>&1)
if kvarenactl stat boot2 >/dev/null 2>&1 && [ "$held" = "1 2" ]; then
	ok reload_makes_the_new_arena_and_keeps_the_clients
else
	notok reload_makes_the_new_arena_and_keeps_the_clients "boot: $held" \
		"$(kvarenactl stat 2>&1 | head -3)"
fi

echo "arena boot3 --frames 0" >> /etc/kvarena/arenas.conf
if systemctl reload kvarena.service 2>/dev/null; then
	notok a_wrong_line_fails_the_reload_and_changes_nothing "reload succeeded"
else
	log=$(journalctl -u kvarena.service -n 20 --no-pager 2>&1)
	case $log in
	*'arenas.conf:3: create: --frames "0": out of range'*)
		check a_wrong_line_fails_the_reload_and_changes_nothing \
			[ "$(ls /sys/class/misc/kvarena/arenas | tr '\n' ' ')" = "boot boot2 " ] ;;
	*)	notok a_wrong_line_fails_the_reload_and_changes_nothing "$log" ;;
	esac
fi

# Taken down as an administrator would, then purged.
kill $client
wait $client 2>/dev/null
systemctl stop kvarena-exporter.service
kvarenactl destroy boot2 >/dev/null && kvarenactl destroy boot --wait 30 >/dev/null
rm -rf /etc/kvarena /etc/default/kvarena-exporter
modprobe -r kvarena
check the_module_unloads [ ! -e /sys/module/kvarena ]

dpkg --purge kvarena-tools python3-kvarena libkvarena-dev libkvarena1 \
	kvarena-dkms > /tmp/purge.log 2>&1
rc=$?
check purge_succeeds [ $rc = 0 ]
[ $rc = 0 ] || sed 's/^/# /' /tmp/purge.log | tail -20

/kvatest/list_files.sh / > /tmp/after.list
left=$(diff /kvatest/before.list /tmp/after.list | grep '^[<>]')
if [ -z "$left" ]; then
	ok purge_leaves_nothing_behind
else
	notok purge_leaves_nothing_behind "files that differ from before the install:" \
		$(echo "$left" | head -30)
fi

totals
echo "KVA-DEB: end"
systemctl poweroff --force --force
