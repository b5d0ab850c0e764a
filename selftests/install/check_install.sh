#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# check_install.sh WORK ROOT PREFIX PYTHON CC
#
# Checks a `make install DESTDIR=ROOT PREFIX=PREFIX` (make check-install
# runs it between the install and the uninstall):
#  - the files installed are exactly those WORK/listed names (INSTALL_FILES)
#  - libkvarena.so carries its soname, and the .so links lead to it
#  - a program built with `pkg-config --cflags --libs kvarena` (and with
#    --static) against the install runs
#  - the installed tools run; every man page formats without a warning
#    and names itself
#  - the installed Python package imports and drives the installed library
set -eu

work=$1 root=$2 prefix=$3 python=$4 cc=$5
libdir=$prefix/lib
fail() { echo "check-install: $*" >&2; exit 1; }

# Exactly the listed files, nothing else.
(cd "$root" && find . ! -type d | sed 's|^\.||' | sort) > "$work/installed"
if ! cmp -s "$work/listed" "$work/installed"; then
	echo "check-install: installed files differ from INSTALL_FILES (< listed, > installed):" >&2
	diff "$work/listed" "$work/installed" >&2 || true
	exit 1
fi

# The shared library and its links.
so=$root$libdir/libkvarena.so
[ "$(readlink "$so")" = libkvarena.so.1 ] || fail "libkvarena.so does not link to libkvarena.so.1"
soname=$(objdump -p "$so" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = libkvarena.so.1 ] || fail "SONAME is '$soname', not libkvarena.so.1"

# A program built through pkg-config against the install, shared and static.
pc() {
	PKG_CONFIG_PATH=$root$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root \
		pkg-config "$@"
}
[ "$(pc --modversion kvarena)" = 1.0.0 ] || fail "pkg-config --modversion kvarena: $(pc --modversion kvarena)"
src=$(dirname "$0")/installed.c
# shellcheck disable=SC2046
$cc -o "$work/installed" "$src" $(pc --cflags --libs kvarena) ||
	fail "building against the install with pkg-config failed"
LD_LIBRARY_PATH=$root$libdir "$work/installed" > "$work/installed.out" ||
	{ cat "$work/installed.out"; fail "the program built against the install failed"; }
ldd_out=$(LD_LIBRARY_PATH=$root$libdir ldd "$work/installed" | grep libkvarena)
case $ldd_out in
*"$root$libdir/libkvarena.so.1"*) ;;
*) fail "the program did not load the installed library: $ldd_out" ;;
esac
# shellcheck disable=SC2046
$cc -o "$work/installed-static" "$src" $(pc --cflags kvarena) \
	$(pc --static --libs kvarena | sed 's/-lkvarena/-Wl,-Bstatic -lkvarena -Wl,-Bdynamic/') ||
	fail "building statically against the install failed"
"$work/installed-static" > /dev/null || fail "the statically linked program failed"

# The tools.
"$root$prefix/bin/kvarenactl" --version | grep -q '^kvarenactl' || fail "kvarenactl --version"
"$root$prefix/bin/kvplan" --help | grep -q '^Usage: kvplan' || fail "kvplan --help"
"$root$prefix/bin/kvbench" --help | grep -q '^usage: kvbench' || fail "kvbench --help"
"$root$prefix/bin/kvsim" --help | grep -q '^Usage: kvsim' || fail "kvsim --help"
"$root$prefix/bin/kvserve" --help | grep -q '^Usage: kvserve' || fail "kvserve --help"

# Man pages: each formats with no warning and is the page its name says.
n=0
grep '/share/man/man' "$work/listed" > "$work/man"
while read -r page; do
	f=$root$page
	base=$(basename "$page")
	name=${base%.*} sect=${base##*.}
	warn=$(groff -man -Tutf8 -ww -z "$f" 2>&1) || fail "groff failed on $page"
	[ -z "$warn" ] || fail "$page: $warn"
	head -n 40 "$f" | grep -qi "^\.TH \"*$name\"* \"*$sect\"*" ||
		fail "$page: no .TH $name $sect"
	n=$((n + 1))
done < "$work/man"
[ $n -ge 7 ] || fail "only $n man pages installed"

# The Python package, from the install, on the installed library.
pydir=$(grep '/kvarena/__init__.py$' "$work/listed" | sed 's|/kvarena/__init__.py$||')
[ -n "$pydir" ] || fail "the Python package is not installed"
env -u KVARENA_LIBRARY PYTHONPATH="$root$pydir" LD_LIBRARY_PATH="$root$libdir" "$python" - "$root" <<'PY' ||
import sys
import kvarena
root = sys.argv[1]
assert kvarena.__file__.startswith(root), kvarena.__file__
assert kvarena.library_path().startswith(root), kvarena.library_path()
with kvarena.open(mode="embedded", nr_frames=4, frame_size=1 << 20) as a:
    g = kvarena.Geometry(layers=2, kv_heads=4, head_dim=128, dtype="fp16",
                         frame_size=1 << 20)
    with a.seq(g, max_tokens=1024) as s:
        s.grow(300)
        assert a.stat().held == 2
PY
	fail "the installed Python package does not work"
