#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# check_dkms.sh WORK VERSION RELEASE...
#
# DKMS on this machine: the sources `make install-dkms` put under
# WORK/root/usr/src/kvarena-VERSION are added, built and installed for
# each kernel RELEASE (every kernel with headers), and removed again.
# dkms runs with private trees (--sourcetree, --dkmstree, --installtree
# under WORK), so no module lands in /lib/modules; dkms still runs depmod
# over /lib/modules/RELEASE and, on first use, makes its module signing key
# /var/lib/dkms/mok.key, as it does on any system.
set -eu

work=$1 version=$2
shift 2
fail() { echo "check-dkms: $*" >&2; exit 1; }

command -v dkms >/dev/null || fail "dkms not found (apt-get install dkms)"
[ "$(id -u)" = 0 ] || fail "dkms needs root"
[ $# -gt 0 ] || fail "no kernel with headers in /lib/modules/*/build"

trees="--sourcetree $work/root/usr/src --dkmstree $work/dkms --installtree $work/modules"
mkdir -p "$work/dkms" "$work/modules"
log=$work/dkms.log
: > "$log"
run() {
	# shellcheck disable=SC2086
	dkms "$@" $trees >>"$log" 2>&1 || { cat "$log" >&2; fail "dkms $*"; }
}

run add "kvarena/$version"
for k in "$@"; do
	mkdir -p "$work/modules/$k"
	run build -k "$k" "kvarena/$version"
	run install -k "$k" "kvarena/$version"
	ko=$(find "$work/modules/$k" -name 'kvarena.ko*')
	[ -n "$ko" ] || fail "dkms install put no kvarena.ko under modules/$k"
	magic=$(/sbin/modinfo -F vermagic "$ko")
	case $magic in
	"$k "*) ;;
	*) fail "$ko: vermagic '$magic', not $k" ;;
	esac
	/sbin/modinfo -F description "$ko" | grep -q 'kvarena' ||
		fail "$ko: no description"
	echo "  DKMS    kvarena/$version built and installed for $k"
done
# shellcheck disable=SC2086
status=$(dkms status $trees "kvarena/$version" 2>>"$log")
[ "$(echo "$status" | grep -c ': installed')" = $# ] ||
	fail "dkms status: $status"
run remove --all "kvarena/$version"
left=$(find "$work/modules" "$work/dkms" -type f)
[ -z "$left" ] || fail "dkms remove left: $left"
