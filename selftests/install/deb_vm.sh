#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# deb_vm.sh SRC DEBDIR BASE KREL WORK [TIMEOUT]
#
# kvarena's Debian packages (DEBDIR: make deb's) installed, used and
# purged in a VM, as an administrator would on a Debian 12 machine:
#
#   1. a copy of the bookworm root BASE/root (deb_root.sh: systemd, DKMS,
#      the headers of kernel KREL) into WORK/root, and the list of its
#      files (list_files.sh);
#   2. dpkg -i of the packages in it (chroot): kvarena-dkms's postinst
#      builds the module with DKMS, kvarena-tools's makes group kvarena
#      and enables kvarena.service; then, as the administrator,
#      /etc/kvarena/arenas.conf with one arena, the exporter enabled, and
#      the test's own unit (kvarena-vmtest.service: deb_checks.sh);
#   3. the root booted as the initramfs of Debian's /boot/vmlinuz-KREL in
#      qemu with systemd as init (rdinit=/sbin/init): modules-load.d loads
#      the module, udev gives the node its group, kvarena.service makes
#      the arena, the exporter serves it; deb_checks.sh checks those,
#      runs Documentation/deployment.rst's command lines (deploy_run.py),
#      reloads, then takes everything down, purges the packages and
#      compares the root's files with the list of step 1.
#
# Prints deb_checks.sh's KTAP; exit status 0 if every test passed.  The
# console log is WORK/console.log.
set -eu

src=$1 debs=$2 base=$3 krel=$4 work=$5 timeout=${6:-1200}
die() { echo "deb_vm.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (chroot)"
[ -f "/boot/vmlinuz-$krel" ] || die "no /boot/vmlinuz-$krel"
[ -d "$base/root" ] || die "no root in $base (deb_root.sh makes it)"
ls "$debs"/kvarena-dkms_*.deb >/dev/null 2>&1 || die "no packages in $debs (make deb)"

rm -rf "$work"
mkdir -p "$work"
root=$work/root
cp -a "$base/root" "$root"
mkdir -p "$root/kvatest"
cp "$src/selftests/install/deb_checks.sh" "$src/selftests/install/list_files.sh" \
	"$src/selftests/install/ktap.sh" "$src/selftests/install/deploy_run.py" \
	"$root/kvatest/"
awk -f "$src/selftests/docs/extract.awk" "$src/Documentation/deployment.rst" \
	> "$root/kvatest/deploy.spec"

# in_root COMMAND: in the root, /proc mounted (DKMS's build reads it).
in_root() {
	unshare --mount --fork chroot "$root" /bin/sh -c \
		"mount -t proc proc /proc && $1"
}

# The VM's own quiet (no getty on the console, no timers), and depmod's
# index files that a machine with the kernel's image has; then the list of
# files that the purge must leave as it finds them.
in_root "systemctl mask serial-getty@ttyS0.service getty@tty1.service \
		systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer \
		dpkg-db-backup.timer e2scrub_all.timer fstrim.timer && \
	depmod $krel" > "$work/dpkg.log" 2>&1 ||
	{ cat "$work/dpkg.log"; die "preparing the root failed"; }
"$src/selftests/install/list_files.sh" "$root" > "$root/kvatest/before.list"

mkdir -p "$root/tmp/debs"
cp $(ls "$debs"/*.deb | grep -v -- '-dbgsym_') "$root/tmp/debs/"
echo "deb_vm.sh: dpkg -i $(ls "$root/tmp/debs" | tr '\n' ' ')"
in_root "dpkg -i /tmp/debs/*.deb" >> "$work/dpkg.log" 2>&1 ||
	{ cat "$work/dpkg.log"; die "dpkg -i failed"; }
# DKMS built for the kernels whose headers it found; the running one here
# is the host's, so KREL's build is asked for where the postinst did not.
if [ ! -f "$root/lib/modules/$krel/updates/dkms/kvarena.ko" ]; then
	echo "deb_vm.sh: dkms install kvarena for $krel (the postinst built for the running kernel only)"
	in_root "dkms install kvarena/\$(dpkg-query -W -f='\${Version}' kvarena-dkms) -k $krel" \
		>> "$work/dpkg.log" 2>&1 || { tail -30 "$work/dpkg.log"; die "dkms install failed"; }
fi
rm -rf "$root/tmp/debs"

mkdir -p "$root/etc/kvarena"
echo "arena boot --frames 16 --frame-size 64K --group kvarena --mode 0660" \
	> "$root/etc/kvarena/arenas.conf"
echo "KVARENA_EXPORTER_ARGS=--listen 127.0.0.1:9847" \
	> "$root/etc/default/kvarena-exporter"
cat > "$root/etc/systemd/system/kvarena-vmtest.service" <<'UNIT'
[Unit]
Description=kvarena's packages, tested
After=kvarena.service kvarena-exporter.service systemd-udev-settle.service

[Service]
Type=oneshot
ExecStart=/kvatest/deb_checks.sh
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0

[Install]
WantedBy=multi-user.target
UNIT
in_root "systemctl enable kvarena-exporter.service kvarena-vmtest.service" \
	>> "$work/dpkg.log" 2>&1 || die "systemctl enable failed"

(cd "$root" && find . | cpio -o -H newc --quiet) > "$work/initramfs.cpio"
echo "deb_vm.sh: booting Debian's $krel with systemd as init ($(du -m "$work/initramfs.cpio" | cut -f1) MiB of root)"
set +e
timeout --foreground -k 5 "$timeout" qemu-system-x86_64 -M pc \
	-accel "${KVA_VM_ACCEL:-tcg}" -m 4096 -smp 2 -nographic -no-reboot \
	-serial mon:stdio -kernel "/boot/vmlinuz-$krel" \
	-initrd "$work/initramfs.cpio" \
	-append "console=ttyS0 rdinit=/sbin/init loglevel=4 panic=-1 systemd.show_status=0" \
	</dev/null > "$work/console.log" 2>&1
qrc=$?
set -e
rm -f "$work/initramfs.cpio"
tr -d '\r' < "$work/console.log" > "$work/console.clean"
if ! grep -q '^KVA-DEB: end' "$work/console.clean"; then
	echo "deb_vm.sh: the VM did not finish the tests (qemu exit $qrc); the console's end:" >&2
	tail -60 "$work/console.clean" >&2
	exit 1
fi
sed -n '/^KVA-DEB: begin/,/^KVA-DEB: end/p' "$work/console.clean" |
	grep -v '^KVA-DEB:'
! grep -q '^not ok' "$work/console.clean"
