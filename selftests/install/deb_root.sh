#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# deb_root.sh DIR KREL
#
# A Debian 12 (bookworm) root in DIR/root for the packages' VM test
# (deb_vm.sh), made once and kept: debootstrap's minbase with systemd as
# init, udev, kmod, DKMS with the compiler and Debian's headers of kernel
# KREL (the VM boots /boot/vmlinuz-KREL), and what the packages depend on
# from the archive (python3, libmicrohttpd, liburing, libzmq, hiredis), so that
# `dpkg -i` of the packages needs no network; curl, for the deployment
# guide's commands.  DIR/KREL says which kernel
# it was made for; another KREL makes it again.
set -eu

dir=$1 krel=$2
die() { echo "deb_root.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
# What the root has: a new list of packages makes it again.
stamp="$krel systemd udev kmod dkms gcc make curl hiredis"
if [ -d "$dir/root" ] && [ "$(cat "$dir/krel" 2>/dev/null)" = "$stamp" ]; then
	exit 0
fi

. "$(dirname "$0")/../vm/archive.sh"

rm -rf "$dir" && mkdir -p "$dir"
echo "deb_root.sh: a bookworm root with systemd, DKMS and linux-headers-$krel"
debootstrap --variant=minbase bookworm "$dir/new" "$MIRROR" \
	>"$dir/debootstrap.log" 2>&1 ||
	die "debootstrap failed; see $dir/debootstrap.log"
# The suites this machine's kernels come from: security updates too.
printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
	"$MIRROR" "$MIRROR" "$SECURITY" > "$dir/new/etc/apt/sources.list"
[ -z "$http_proxy" ] || echo "Acquire::http::Proxy \"$http_proxy\";" \
	> "$dir/new/etc/apt/apt.conf.d/01proxy"
chroot "$dir/new" /bin/sh -c "apt-get -q update && \
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	--no-install-recommends systemd systemd-sysv udev kmod dkms gcc make \
	libc6-dev linux-headers-$krel python3 libmicrohttpd12 liburing2 \
	libzmq5 libhiredis0.14 liburing-dev curl && apt-get clean" >"$dir/apt.log" 2>&1 ||
	die "apt-get install failed; see $dir/apt.log"
rm -f "$dir/new/etc/apt/apt.conf.d/01proxy"
mv "$dir/new" "$dir/root"
echo "$stamp" > "$dir/krel"
