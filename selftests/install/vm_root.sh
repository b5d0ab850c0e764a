#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# vm_root.sh ROOT PYTHON SRC [torch]
#
# with $KVEV_BINS the routers' decoders (selftests/events) for
# test_routers.py.
#
# Completes ROOT, where `make install` and `make modules_install` have been
# staged, into a root the VM can run vm_installed.sh in: kmod (modprobe,
# modinfo, rmmod, lsmod, depmod), systemd-udevd, python3 with its standard
# library, numpy, zmq and msgpack, each with the libraries it loads
# (selftests/vm/carry.sh); group kvarena and two users; the Python tests.
# With "torch", torch too (and the modules it imports): half a gigabyte
# of libraries, for test_prefix_torch.py.
set -eu

root=$1 python=$2 src=$3 torch=${4:-}
die() { echo "vm_root.sh: $*" >&2; exit 2; }

pyinfo=$("$python" - "$torch" <<'PY'
import os, sys, sysconfig
print(os.path.realpath(sys.executable))
print(sysconfig.get_path("stdlib"))
mods = ["numpy", "zmq", "msgpack"]
if sys.argv[1] == "torch":
    # What `import torch` imports beyond the standard library (Debian 12).
    mods += ["torch", "typing_extensions", "six", "astunparse"]
for m in mods:
    try:
        f = __import__(m).__file__
        print(f if f.endswith(m + ".py") else os.path.dirname(f))
    except ImportError:
        print("missing:" + m)
PY
)
case $pyinfo in *missing:*)
	die "python3 lacks $(echo "$pyinfo" | sed -n 's/^missing://p' | tr '\n' ' ')(apt-get install python3-numpy python3-zmq python3-msgpack python3-torch)" ;;
esac
# torch/lib/*.so are links into the library directory: carry what they
# name (torch dlopen()s some by those names, so ldd alone would miss them).
libs=
if [ "$torch" = torch ]; then
	tdir=$(echo "$pyinfo" | grep '/torch$')
	for l in "$tdir"/lib/*.so; do
		# The name the link gives (itself a link to the file, which
		# carry.sh copies and links to by that name).
		t=$(readlink "$l")
		case $t in /*) ;; *) t=$(dirname "$l")/$t ;; esac
		t=$(realpath -s "$t")
		[ ! -e "$t" ] || libs="$libs $t"
	done
fi
# The routers' decoders, in /kvatest; carry.sh below brings their
# libraries (libzmq), as it does for every program under ROOT.
mkdir -p "$root/kvatest"
[ -n "${KVEV_BINS:-}" ] || die "KVEV_BINS: the routers' decoders (selftests/events) not given"
for b in $KVEV_BINS; do
	cp "$b" "$root/kvatest/" || die "cannot copy $b"
done
# Prometheus's server and promtool (Debian's prometheus), for
# test_exporter.py; it skips those tests where the host has none.
prom=
for t in /usr/bin/prometheus /usr/bin/promtool; do
	[ ! -x "$t" ] || prom="$prom $t"
done
# Redis's server and client (Debian's redis-server and redis-tools), for
# test_remote.py: a cluster in the VM.
redis=
for t in /usr/bin/redis-server /usr/bin/redis-cli; do
	[ -x "$t" ] || die "$t missing (apt-get install redis-server redis-tools)"
	redis="$redis $t"
done
# One path per line of $pyinfo.
# shellcheck disable=SC2086
"$src/selftests/vm/carry.sh" "$root" \
	--exclude '*/test' --exclude '*/tests' --exclude '*/idlelib' \
	--exclude '*/tkinter' --exclude '*/ensurepip' --exclude '*/lib2to3' \
	--exclude '*/turtledemo' --exclude '*/pydoc_data' \
	--exclude '*/python3.*/dist-packages' --exclude '*/python3.*/site-packages' \
	--exclude '*/config-3*' \
	/usr/bin/python3 $pyinfo $libs /bin/kmod /lib/systemd/systemd-udevd \
	$prom $redis
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
	"$src/selftests/python/test_events.py" \
	"$src/selftests/python/test_routers.py" \
	"$src/selftests/python/test_exporter.py" \
	"$src/selftests/install/ktap.sh" \
	"$src/selftests/python/vllm_rules.py" \
	"$src/selftests/python/kvev_hash.py" \
	"$src/selftests/remote/test_remote.py" "$src/selftests/remote/engine.py" \
	"$src/selftests/remote/redisfix.py" \
	"$src/selftests/remote/kvblock_spec.py" "$root/kvatest/"
[ "$torch" != torch ] ||
	cp "$src/selftests/python/test_prefix_torch.py" "$root/kvatest/"
