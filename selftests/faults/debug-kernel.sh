#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# debug-kernel.sh - build the debug kernel of `make check-debug` from a
# Debian linux-source tarball (the newest: faults.mk): tinyconfig, then
# debug-kernel.config over it (KASAN, lockdep, DEBUG_KOBJECT_RELEASE,
# DEBUG_ATOMIC_SLEEP, kmemleak, the dmem cgroup controller and what the
# VM needs).
#
#   debug-kernel.sh TARBALL DIR [JOBS] [plain]
#
# Leaves DIR/obj/arch/x86/boot/bzImage and a tree external modules build
# against (KDIR=DIR/obj).  With "plain", the same kernel without the
# detectors (the fragment up to its "the detectors" part), in DIR/obj-plain:
# the dmem cgroup controller at a production kernel's speed, for `make
# bench-dmem` (not part of make check).  Re-running reuses what is there: the source is
# extracted once, and make rebuilds only what changed.  It takes long on
# two cores (see Documentation/reliability.rst), so it runs at nice 19.
set -eu

die() { echo "debug-kernel.sh: $*" >&2; exit 1; }

tar=$1 dir=$2 jobs=${3:-1} kind=${4:-debug}
here=$(cd "$(dirname "$0")" && pwd)
frag=$here/debug-kernel.config
[ -r "$tar" ] || die "cannot read $tar (.ci/deps fetches it: selftests/vm/kernels.sh prepare)"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
src=$dir/$(basename "$tar" .tar.xz)
obj=$dir/obj
[ "$kind" = plain ] && obj=$dir/obj-plain

if [ ! -f "$src/.extracted" ]; then
	echo "  TAR     $tar"
	rm -rf "$src"
	nice -n 19 tar -xJf "$tar" -C "$dir"
	[ -f "$src/Makefile" ] || die "$tar did not give $src"
	touch "$src/.extracted"
fi

# Objects of another source go first; the configuration is remade when
# the fragment changes.
if [ -d "$obj" ] && [ "$(cat "$obj/.source" 2>/dev/null)" != "$src" ]; then
	echo "  CLEAN   $obj (built from $(cat "$obj/.source" 2>/dev/null || echo another source))"
	rm -rf "$obj"
fi
mkdir -p "$obj"
echo "$src" > "$obj/.source"
if [ "$kind" = plain ]; then
	plain=$obj/plain.config
	if [ ! -f "$plain" ] || [ "$frag" -nt "$plain" ]; then
		{ sed '/^# --- the detectors ---/,$d' "$frag"
		  echo 'CONFIG_LOCALVERSION="-plain"'; } > "$plain.tmp"
		mv "$plain.tmp" "$plain"
	fi
	frag=$plain
fi
if [ ! -f "$obj/.config" ] || [ "$frag" -nt "$obj/.config" ]; then
	echo "  CONFIG  tinyconfig + $(basename "$frag")"
	make -s -C "$src" O="$obj" tinyconfig >/dev/null || die "tinyconfig failed (apt-get install flex bison bc libelf-dev)"
	"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" \
		"$frag" >"$obj/merge.log" 2>&1
	make -s -C "$src" O="$obj" olddefconfig >/dev/null
	# Every line of the fragment must have survived (a dependency
	# missing silently drops an option).
	bad=0
	for l in $(sed -n 's/^\(CONFIG_[A-Z0-9_]*=.*\)$/\1/p' "$frag"); do
		opt=${l%%=*} val=${l#*=}
		if [ "$val" = n ]; then
			! grep -q "^$opt=" "$obj/.config" && continue
		else
			grep -qx "$l" "$obj/.config" && continue
		fi
		echo "debug-kernel.sh: $l did not stick: $(grep "^$opt=\|^# $opt " "$obj/.config" || echo absent)" >&2
		bad=1
	done
	[ $bad -eq 0 ] || { rm -f "$obj/.config"; exit 1; }
fi

echo "  KERNEL  $obj (make -j$jobs, nice 19)"
start=$(date +%s)
nice -n 19 make -s -C "$src" O="$obj" -j"$jobs" bzImage modules \
	>"$obj/build.log" 2>&1 || { tail -40 "$obj/build.log"; exit 1; }
echo "  KERNEL  $(cat "$obj/include/config/kernel.release") built in $(( $(date +%s) - start )) s"
