#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Debian kernels of other releases than this machine's, for the VM tests.
#
#   kernels.sh prepare DIR         (root) one directory per kernel in DIR
#   kernels.sh build DIR RELEASE SRC OUT [MAKE-ARGS...]
#                                  (root) kvarena.ko of the tree SRC for
#                                  DIR/RELEASE, into OUT/
#   kernels.sh list DIR            the releases prepared in DIR
#
# A module has to be built by the compiler and with the build tree its
# kernel was configured with: Debian's 7.x headers ask for gcc-14 (flags
# such as -fmin-function-alignment, CONFIG_CC_VERSION_TEXT) and their
# kbuild programs for trixie's libc, Debian's 5.10 headers for gcc-10.
# Neither installs on Debian 12.  So each kernel gets a minimal root of
# its own Debian release (debootstrap), with Debian's own linux-headers
# (its .config, Module.symvers and kbuild programs) and compiler installed
# there by apt, and the module is built in that root (chroot); the image
# booted is Debian's own vmlinuz of the same release.
#
# DIR/RELEASE/root      the release's root: /usr/src/linux-headers-RELEASE
# DIR/RELEASE/vmlinuz   Debian's kernel image
# DIR/RELEASE/suite     the suite it came from
# DIR/RELEASE/linux-source-X.Y.tar.xz   Debian's source of that kernel,
#                       where SUITES asks for it
#
# Which kernels: the newest of each suite below, as its linux-headers-amd64
# metapackage names it on the day of the prepare.
set -eu

# name  debootstrap-suite  apt-suites (the first is debootstrap's)  apt -t
# source: whether to keep the kernel's linux-source tarball too (the
# debug kernel of make check-debug is built from the newest)
SUITES='bullseye bullseye bullseye,bullseye-security - -
trixie-backports trixie trixie,trixie-backports trixie-backports source'
# The archive this machine's apt uses (and its proxy, if it has one).
. "$(dirname "$0")/archive.sh"

die() { echo "kernels.sh: $*" >&2; exit 1; }

need_root() {
	[ "$(id -u)" = 0 ] || die "$1 needs root (debootstrap, chroot)"
}

# in_root ROOT COMMAND: run COMMAND with sh in ROOT, with /proc mounted
# there (objtool reads it): in a mount namespace of its own, or, where
# none can be made (some containers), mounted and unmounted around it.
in_root() {
	if unshare --mount --fork true 2>/dev/null; then
		unshare --mount --fork chroot "$1" /bin/sh -c \
			"mount -t proc proc /proc && $2"
		return
	fi
	mount -t proc proc "$1/proc" ||
		echo "kernels.sh: cannot mount /proc in $1; objtool will fail" >&2
	set +e
	chroot "$1" /bin/sh -c "$2"
	r=$?
	set -e
	umount "$1/proc" 2>/dev/null || true
	return $r
}

# fetch_source KDIR RELEASE APT-T: Debian's linux-source-X.Y of RELEASE
# into KDIR, through the root in KDIR.
fetch_source() {
	mm=$(echo "$2" | sed 's/^\([0-9]*\.[0-9]*\).*/\1/')
	echo "kernels.sh: Debian's linux-source-$mm"
	rm -f "$1"/root/tmp/linux-source-*.deb
	in_root "$1/root" "cd /tmp && apt-get download $3 linux-source-$mm" \
		>/dev/null
	dpkg-deb --fsys-tarfile "$(ls "$1"/root/tmp/linux-source-*.deb)" |
		tar -x -O "./usr/src/linux-source-$mm.tar.xz" \
		> "$1/linux-source-$mm.tar.xz.tmp"
	mv "$1/linux-source-$mm.tar.xz.tmp" "$1/linux-source-$mm.tar.xz"
	rm -f "$1"/root/tmp/linux-source-*.deb
}

prepare_one() {
	dir=$1 name=$2 suite=$3 apt_suites=$4 target=$5 source=$6
	t=
	[ "$target" = - ] || t="-t $target"
	for s in "$dir"/*/suite; do
		if [ -f "$s" ] && [ "$(cat "$s")" = "$name" ]; then
			have=$(dirname "$s")
			echo "kernels.sh: $name: have $(basename "$have")"
			[ "$source" != source ] ||
				ls "$have"/linux-source-*.tar.xz >/dev/null 2>&1 ||
				fetch_source "$have" "$(basename "$have")" "$t"
			return 0
		fi
	done
	tmp=$dir/.new-$name
	rm -rf "$tmp"
	echo "kernels.sh: $name: a minimal $suite root"
	debootstrap --variant=minbase "$suite" "$tmp/root" "$MIRROR" \
		>"$dir/$name.debootstrap.log" 2>&1 ||
		die "$name: debootstrap failed; see $dir/$name.debootstrap.log"
	: > "$tmp/root/etc/apt/sources.list"
	[ -z "$http_proxy" ] || echo "Acquire::http::Proxy \"$http_proxy\";" \
		> "$tmp/root/etc/apt/apt.conf.d/01proxy"
	for s in $(echo "$apt_suites" | tr , ' '); do
		case $s in
		*-security) echo "deb $SECURITY $s main" ;;
		*) echo "deb $MIRROR $s main" ;;
		esac >> "$tmp/root/etc/apt/sources.list"
	done
	in_root "$tmp/root" "apt-get -q update" >/dev/null
	rel=$(in_root "$tmp/root" "apt-cache depends $t linux-headers-amd64" |
	      sed -n 's/^ *Depends: linux-headers-\(.*-amd64\)$/\1/p' | head -n 1)
	[ -n "$rel" ] || die "$name: no linux-headers-amd64 in $apt_suites"
	echo "kernels.sh: $name: Debian's $rel, its headers, compiler and sparse"
	in_root "$tmp/root" "DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends $t make sparse linux-headers-$rel" \
		>"$dir/$name.apt.log" 2>&1 ||
		die "$name: apt-get install failed; see $dir/$name.apt.log"
	# The image: linux-binary-* holds it where linux-image-* is a
	# metapackage (7.x), else linux-image-* itself.
	in_root "$tmp/root" "cd /tmp && { apt-get download $t \
		linux-binary-$rel 2>/dev/null || \
		apt-get download $t linux-image-$rel; }" >/dev/null
	deb=$(ls "$tmp"/root/tmp/linux-*.deb)
	mkdir -p "$tmp/image"
	dpkg-deb -x "$deb" "$tmp/image"
	for v in "$tmp/image/boot/vmlinuz-$rel" \
		 "$tmp/image/usr/lib/modules/$rel/vmlinuz"; do
		[ -f "$v" ] && cp "$v" "$tmp/vmlinuz"
	done
	[ -f "$tmp/vmlinuz" ] || die "$name: no vmlinuz in $(basename "$deb")"
	rm -rf "$tmp/image" "$deb"
	[ "$source" != source ] || fetch_source "$tmp" "$rel" "$t"
	in_root "$tmp/root" "apt-get clean"
	echo "$name" > "$tmp/suite"
	rm -rf "${dir:?}/$rel"
	mv "$tmp" "$dir/$rel"
	echo "kernels.sh: $name: $dir/$rel ready"
}

cmd=${1:-}
case $cmd in
prepare)
	[ $# = 2 ] || die "usage: kernels.sh prepare DIR"
	need_root prepare
	command -v debootstrap >/dev/null ||
		die "debootstrap not found (apt-get install debootstrap)"
	mkdir -p "$2"
	echo "$SUITES" | while read -r name suite apt_suites target source; do
		prepare_one "$2" "$name" "$suite" "$apt_suites" "$target" \
			"$source"
	done
	;;
build)
	[ $# -ge 5 ] || die "usage: kernels.sh build DIR RELEASE SRC OUT [MAKE-ARGS...]"
	dir=$2 rel=$3 src=$4 out=$5
	shift 5
	root=$dir/$rel/root
	[ -d "$root/usr/src/linux-headers-$rel" ] ||
		die "$rel: no build tree in $root (kernels.sh prepare $dir)"
	need_root "building for $rel"
	# The module's sources only, with their times, so that make in the
	# root rebuilds what changed.
	rm -rf "$root/build/kvarena"
	mkdir -p "$root/build/kvarena" "$out"
	(cd "$src" && tar -cf - Makefile Kbuild mk driver include) |
		tar -xf - -C "$root/build/kvarena"
	set +e
	in_root "$root" "make -C /build/kvarena --no-print-directory \
		KDIR=/usr/src/linux-headers-$rel B=/build/out $* module"
	ret=$?
	set -e
	for f in kvarena.ko build.log kva_config.h; do
		rm -f "$out/$f"
		[ ! -f "$root/build/out/kmod/$rel/$f" ] ||
			cp "$root/build/out/kmod/$rel/$f" "$out/"
	done
	exit $ret
	;;
list)
	[ $# = 2 ] || die "usage: kernels.sh list DIR"
	for v in "$2"/*/vmlinuz; do
		[ -f "$v" ] && basename "$(dirname "$v")"
	done | sort -V
	;;
*)
	die "usage: kernels.sh prepare DIR | build DIR RELEASE SRC OUT | list DIR"
	;;
esac
