# SPDX-License-Identifier: GPL-2.0
#
# KTAP for the shell scripts that test an installed kvarena in a VM
# (vm_installed.sh, deb_checks.sh), sourced from /kvatest/ktap.sh:
#
#   ok NAME; notok NAME [DIAGNOSTIC...]; skip NAME REASON
#   check NAME COMMAND...     ok if COMMAND succeeds, else notok
#   totals                    the "# Totals:" line the runner sums

n=0 failed=0 skipped=0
ok() { n=$((n + 1)); echo "ok $n $1"; }
notok() {
	n=$((n + 1)); failed=$((failed + 1))
	name=$1; shift
	for l in "$@"; do echo "# $l"; done
	echo "not ok $n $name"
}
skip() { n=$((n + 1)); skipped=$((skipped + 1)); echo "ok $n $1 # SKIP $2"; }
check() {	# check NAME CONDITION...
	name=$1; shift
	if "$@"; then ok "$name"; else notok "$name" "failed: $*"; fi
}
totals() {
	echo "# Totals: pass:$((n - failed - skipped)) fail:$failed xfail:0 xpass:0 skip:$skipped error:0"
}
