#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# vm_root.sh ROOT PYTHON SRC
#
# Completes ROOT, where `make install` and `make modules_install` have been
# staged, into a root the VM can run vm_installed.sh in: kmod (modprobe,
# modinfo, rmmod, lsmod, depmod), systemd-udevd, python3 with its standard
# library, numpy, zmq and msgpack, each with the libraries it loads
# (selftests/vm/carry.sh); group kvarena and two users; the Python tests.
set -eu

root=$1 python=$2 src=$3
die() { echo "vm_root.sh: $*" >&2; exit 2; }

pyinfo=$("$python" - <<'PY'
import os, sysconfig
print(os.path.realpath(__import__("sys").executable))
print(sysconfig.get_path("stdlib"))
for m in ("numpy", "zmq", "msgpack"):
    try:
        print(os.path.dirname(__import__(m).__file__))
    except ImportError:
        print("missing:" + m)
PY
)
case $pyinfo in *missing:*)
	die "python3 lacks $(echo "$pyinfo" | sed -n 's/^missing://p' | tr '\n' ' ')(apt-get install python3-numpy python3-zmq python3-msgpack)" ;;
esac
# One path per line of $pyinfo.
# shellcheck disable=SC2086
"$src/selftests/vm/carry.sh" "$root" \
	--exclude '*/test' --exclude '*/tests' --exclude '*/idlelib' \
	--exclude '*/tkinter' --exclude '*/ensurepip' --exclude '*/lib2to3' \
	--exclude '*/turtledemo' --exclude '*/pydoc_data' \
	--exclude '*/python3.*/dist-packages' --exclude '*/python3.*/site-packages' \
	--exclude '*/config-3*' \
	/usr/bin/python3 $pyinfo /bin/kmod /lib/systemd/systemd-udevd
# kmod's tools where Debian has them: /sbin, which vm_installed.sh puts
# ahead of busybox's /bin.
mkdir -p "$root/sbin"
for t in modprobe modinfo rmmod lsmod depmod; do
	ln -sf /bin/kmod "$root/sbin/$t"
done

mkdir -p "$root/etc" "$root/kvatest"
cat > "$root/etc/passwd" <<'PW'
root:x:0:0:root:/:/bin/sh
kvuser:x:1000:1000::/:/bin/sh
other:x:1001:1001::/:/bin/sh
PW
cat > "$root/etc/group" <<'GR'
root:x:0:
kvarena:x:990:kvuser
kvuser:x:1000:
other:x:1001:
GR
printf 'passwd: files\ngroup: files\n' > "$root/etc/nsswitch.conf"
cp "$src/selftests/python/ktap.py" "$src/selftests/python/test_device.py" \
	"$src/selftests/python/test_events.py" "$root/kvatest/"
