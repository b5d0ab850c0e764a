#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# carry.sh DEST [--exclude PATTERN]... PATH...
#
# Copies dynamically linked programs, with everything they load, into
# DEST, a tree run.sh --root lays over the VM's initramfs.  Each PATH (a
# file, or a directory copied whole) lands at its own absolute path under
# DEST, symbolic links to files followed; then, for every ELF file under
# DEST, the shared libraries ldd lists and the dynamic loader are copied
# too, at the paths ldd gives.  --exclude PATTERNs (tar's) leave parts of
# the directories out (tests, caches).
set -eu

die() { echo "carry.sh: $*" >&2; exit 2; }

[ $# -ge 1 ] || die "usage: carry.sh DEST [--exclude PATTERN]... PATH..."
dest=$1
shift
excl=
while [ $# -gt 0 ] && [ "$1" = --exclude ]; do
	excl="$excl --exclude=$2"
	shift 2
done
mkdir -p "$dest"

for p in "$@"; do
	case $p in /*) ;; *) die "not an absolute path: $p" ;; esac
	[ -e "$p" ] || die "no such file: $p"
	if [ -d "$p" ]; then
		# shellcheck disable=SC2086
		tar -C / $excl -cf - "${p#/}" | tar -C "$dest" -xf -
	else
		mkdir -p "$dest$(dirname "$p")"
		# A link to a program keeps its name: python3 -> python3.11.
		if [ -L "$p" ]; then
			t=$(readlink -f "$p")
			mkdir -p "$dest$(dirname "$t")"
			cp -L "$t" "$dest$t"
			ln -sf "$t" "$dest$p"
		else
			cp -L "$p" "$dest$p"
		fi
	fi
done

# The libraries, until nothing new turns up (libraries load libraries).
seen=$(mktemp)
trap 'rm -f "$seen"' EXIT
while :; do
	new=$(find "$dest" -type f \( -perm -u+x -o -name '*.so*' \) | while read -r f; do
		head -c 4 "$f" | grep -q 'ELF' || continue
		grep -qxF "$f" "$seen" && continue
		echo "$f" >> "$seen"
		ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }
					      $1 ~ /^\// { print $1 }'
	done | sort -u | while read -r lib; do
		[ -e "$dest$lib" ] && continue
		mkdir -p "$dest$(dirname "$lib")"
		cp -L "$lib" "$dest$lib"
		echo "$lib"
	done)
	[ -n "$new" ] || break
done
