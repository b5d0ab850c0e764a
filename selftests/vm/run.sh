#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# run.sh - boot a kernel in qemu with kvarena.ko and run programs in it.
#
#   run.sh --kernel VMLINUZ --module KVARENA.KO [--timeout SECONDS]
#          [--mem MIB] [--smp N] [--cpu MODEL] [--keep DIR] [--script FILE] [--root DIR]
#          [--data FILE]... [--out DIR] [--append ARGS] PROGRAM...
#
# Builds an initramfs holding busybox-static, the module and the given
# statically linked PROGRAMs (kselftest binaries printing KTAP, or tools),
# boots the kernel under TCG (or KVM with KVA_VM_ACCEL=kvm), loads the
# module, runs each program in order and powers off.  With --script, the
# FILE (a busybox sh script) runs instead of the programs, with them in
# /bin.  Each --data FILE is copied to /data in the VM.  --root DIR lays
# the tree DIR over the initramfs first (an install staged with DESTDIR,
# dynamically linked programs and their libraries gathered by carry.sh).
# With --out DIR, what the programs or the script leave in /out comes back
# into DIR (over a second serial port, as a base64 tar stream).  --append
# adds to the kernel command line (maxcpus=1, say).  --cpu gives qemu's
# -cpu (max: TCG's every feature, AVX2, FMA, F16C and BMI2 among them;
# the default CPU model has none of them).
#
# Prints the programs' output, then one totals line over every KTAP
# "# Totals:" line seen, and exits non-zero when any program failed, the
# module did not load, the kernel logged an oops, BUG, WARNING or
# similar, or the VM did not finish within the timeout (the console log
# is printed then).
set -eu

die() { echo "run.sh: $*" >&2; exit 2; }

kernel= module= timeout=600 mem=1024 smp=2 cpu= keep= script= data= overlay=
out= append=
while [ $# -gt 0 ]; do
	case $1 in
	--kernel)  kernel=$2; shift 2 ;;
	--module)  module=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--mem)     mem=$2; shift 2 ;;
	--smp)     smp=$2; shift 2 ;;
	--cpu)     cpu=$2; shift 2 ;;
	--keep)    keep=$2; shift 2 ;;
	--script)  script=$2; shift 2 ;;
	--data)    [ -r "$2" ] || die "--data: cannot read '$2'"
		   data="$data
$2"; shift 2 ;;
	--root)    overlay=$2; shift 2 ;;
	--out)     out=$2; shift 2 ;;
	--append)  append=$2; shift 2 ;;
	--) shift; break ;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
done
[ -r "$kernel" ] || die "--kernel: cannot read '$kernel'"
[ -r "$module" ] || die "--module: cannot read '$module'"
[ -z "$script" ] || [ -r "$script" ] || die "--script: cannot read '$script'"
[ -z "$overlay" ] || [ -d "$overlay" ] || die "--root: not a directory: '$overlay'"
busybox=$(command -v busybox || true)
[ -n "$busybox" ] || die "busybox not found (apt-get install busybox-static)"
ldd "$busybox" >/dev/null 2>&1 &&
	die "$busybox is dynamically linked (apt-get install busybox-static)"
qemu=$(command -v qemu-system-x86_64 || true)
[ -n "$qemu" ] || die "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"

if [ -n "$keep" ]; then
	work=$keep
	rm -rf "$work"
	mkdir -p "$work"
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/kvarena-vm.XXXXXX")
	trap 'rm -rf "$work"' EXIT
fi
root=$work/root
mkdir -p "$root/bin" "$root/dev" "$root/proc" "$root/sys" "$root/tmp" \
	 "$root/tests" "$root/data" "$root/out"
[ -z "$overlay" ] || cp -a "$overlay/." "$root/"
cp "$busybox" "$root/bin/busybox"
cp "$module" "$root/kvarena.ko"
names=
for p in "$@"; do
	[ -x "$p" ] || die "not an executable: $p"
	cp "$p" "$root/tests/"
	names="$names $(basename "$p")"
done
[ -z "$script" ] || cp "$script" "$root/script.sh"
printf '%s\n' "$data" | while IFS= read -r f; do
	[ -z "$f" ] || cp "$f" "$root/data/"
done

# The init: mount, load, run, report, power off.  Markers are unique
# strings the host side parses; everything else is passed through.
cat > "$root/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/tests:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
# Names for the ids the tests use, as a real system has them.
mkdir -p /etc
printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' > /etc/passwd
printf 'root:x:0:\nkvarena:x:990:\nnogroup:x:65534:\n' > /etc/group
echo "KVA-VM: kernel \$(uname -r)"
if insmod /kvarena.ko; then
	echo "KVA-VM: module loaded"
else
	echo "KVA-VM: insmod failed"
fi
if [ -f /script.sh ]; then
	sh /script.sh
	echo "KVA-VM: result script \$?"
else
	for t in $names; do
		echo "KVA-VM: run \$t"
		\$t
		echo "KVA-VM: result \$t \$?"
	done
fi
# /out goes back to the host over the second serial port (ttyS1).
if [ -n "\$(ls /out)" ]; then
	tar -c -C /out . | base64 > /dev/ttyS1
fi
echo "KVA-VM: dmesg begin"
dmesg
echo "KVA-VM: dmesg end"
echo "KVA-VM: done"
poweroff -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet) > "$work/initramfs.cpio"

accel=${KVA_VM_ACCEL:-tcg}
log=$work/console.log
start=$(date +%s)
# A guest kernel that dies while it boots, before the init (and so before
# kvarena.ko or any test) has run, is booted once more: under TCG, Debian's
# kernels now and then take an int3 Oops patching their own text on a
# second vCPU (sched_clock_cpu, about one boot in a few hundred).  Said
# on stderr with the console log; a death after the init began fails.
for boot in 1 2; do
	set +e
	: > "$work/out.b64"
	timeout --foreground -k 5 "$timeout" "$qemu" -M pc -accel "$accel" \
		-m "$mem" -smp "$smp" ${cpu:+-cpu "$cpu"} -nographic -no-reboot \
		-serial mon:stdio -serial file:"$work/out.b64" \
		-kernel "$kernel" -initrd "$work/initramfs.cpio" \
		-append "console=ttyS0 loglevel=4 panic=-1 oops=panic $append" \
		</dev/null >"$log" 2>&1
	qrc=$?
	set -e
	if [ "$boot" = 2 ] || [ $qrc -eq 124 ] || [ $qrc -eq 137 ] ||
	   tr -d '\r' < "$log" | grep -q 'KVA-VM: kernel' ||
	   ! tr -d '\r' < "$log" | grep -q 'Kernel panic'; then
		break
	fi
	echo "run.sh: the guest kernel died while booting, before the init ran; booting it once more. Its console:" >&2
	tr -d '\r' < "$log" | grep -E -A12 'Oops|BUG|Kernel panic' | head -40 >&2
	start=$(date +%s)
done
if [ -n "$out" ] && [ -s "$work/out.b64" ]; then
	mkdir -p "$out"
	tr -d '\r' < "$work/out.b64" | base64 -d | tar -x -C "$out" ||
		echo "run.sh: what the VM left in /out did not come back whole" >&2
fi
secs=$(( $(date +%s) - start ))
tr -d '\r' < "$log" > "$log.clean"
log=$log.clean

fail=0
if [ $qrc -eq 124 ] || [ $qrc -eq 137 ]; then
	echo "run.sh: the VM did not finish within ${timeout}s; console log:" >&2
	cat "$log" >&2
	exit 1
fi
if ! grep -q '^KVA-VM: done' "$log"; then
	echo "run.sh: the VM stopped before finishing (qemu exit $qrc); console log:" >&2
	cat "$log" >&2
	exit 1
fi
# Program output, without the kernel log dump and the init's markers.
# Program output: from the init's first line, without the kernel log dump,
# the init's markers and the power-off message.
# (the BIOS's escape codes may precede the first marker on its line).
sed -n '/KVA-VM: kernel/,$p' "$log" | sed 's/^.*KVA-VM: kernel/KVA-VM: kernel/' |
	sed '/^KVA-VM: dmesg begin/,/^KVA-VM: dmesg end/d' |
	grep -v '^KVA-VM: done\|reboot: Power down' || true
if ! grep -q '^KVA-VM: module loaded' "$log"; then
	echo "run.sh: kvarena.ko did not load" >&2
	fail=1
fi
bad=$(grep '^KVA-VM: result ' "$log" | awk '$4 != 0 { print $3 " (exit " $4 ")" }')
if [ -n "$bad" ]; then
	echo "run.sh: failed: $bad" >&2
	fail=1
fi
# Anything the kernel says went wrong fails the run, whatever the tests say.
oops='BUG:|WARNING:|Oops|general protection fault|kernel BUG at|Call Trace:|UBSAN:|KASAN:|RIP: |INFO: task .* blocked|refcount_t:|list_(add|del) corruption|Kernel panic'
if grep -E "$oops" "$log" >/dev/null; then
	echo "run.sh: the kernel log has errors:" >&2
	grep -E -B2 -A20 "$oops" "$log" | head -80 >&2
	fail=1
fi
awk -v secs="$secs" '
	/^# Totals: / {
		for (i = 3; i <= NF; i++) { split($i, kv, ":"); tot[kv[1]] += kv[2] }
		seen = 1
	}
	END {
		if (seen)
			printf "# VM totals: pass:%d fail:%d xfail:%d xpass:%d skip:%d error:%d (%d s)\n",
			       tot["pass"], tot["fail"], tot["xfail"], tot["xpass"],
			       tot["skip"], tot["error"], secs
	}' "$log"
exit $fail
