#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# matrix.sh [--timeout S] [--smp-race N] [--race TEST]... [--summary FILE]
#           --kernel RELEASE VMLINUZ MODULE [--kernel ...] -- TEST...
#
# The VM tests on every kernel given, one after the other: TESTs booted
# once with the module built for that kernel, then the --race tests again
# on N CPUs.  Every kernel runs even when one fails; at the end a table
# says, per kernel, how many tests ran, passed, failed and were skipped,
# and why each skip was (the reasons the tests printed), also written to
# FILE.  Exit status 1 when any kernel failed.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
timeout=900 smp_race=4 races= summary= kernels=

while [ $# -gt 0 ]; do
	case $1 in
	--timeout)  timeout=$2; shift 2 ;;
	--smp-race) smp_race=$2; shift 2 ;;
	--race)     races="$races $2"; shift 2 ;;
	--summary)  summary=$2; shift 2 ;;
	--kernel)   kernels="$kernels $2|$3|$4"; shift 4 ;;
	--)         shift; break ;;
	*) echo "matrix.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ -n "$kernels" ] || { echo "matrix.sh: no --kernel" >&2; exit 2; }

# boot LOG IMAGE MODULE RUN.SH-ARGS...: one boot, its output shown and
# appended to LOG; fails when run.sh does.  (set -e would end the group at
# a failed run.sh, before its status is written: hence the || r=$?.)
boot() {
	blog=$1 bimage=$2 bmodule=$3
	shift 3
	rm -f "$work/rc"
	{ r=0; "$here/run.sh" --timeout "$timeout" --kernel "$bimage" \
		--module "$bmodule" "$@" 2>&1 || r=$?
	  echo $r > "$work/rc"; } | tee -a "$blog"
	[ "$(cat "$work/rc" 2>/dev/null)" = 0 ]
}

work=$(mktemp -d "${TMPDIR:-/tmp}/kvarena-matrix.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
: > "$work/table"
: > "$work/skips"

for k in $kernels; do
	rel=${k%%|*} rest=${k#*|}
	image=${rest%%|*} module=${rest#*|}
	log=$work/$rel.log
	: > "$log"
	rc=0
	echo "== VM tests on $rel"
	if [ ! -f "$module" ]; then
		echo "matrix.sh: $rel: no module ($module)" | tee -a "$log" >&2
		rc=1
	else
		boot "$log" "$image" "$module" --smp 2 "$@" || rc=1
		if [ -n "$races" ]; then
			echo "== VM tests on $rel with $smp_race CPUs: the races"
			boot "$log" "$image" "$module" --smp "$smp_race" \
				$races || rc=1
		fi
	fi
	[ $rc = 0 ] || failed=1
	# The totals of both boots, the skips with their reasons.
	awk -v rel="$rel" -v rc="$rc" '
		/^# VM totals: / {
			for (i = 4; i <= NF; i++) {
				if ($i ~ /^\(/) { secs += substr($i, 2) ; continue }
				split($i, kv, ":"); tot[kv[1]] += kv[2]
			}
		}
		END {
			n = tot["pass"] + tot["fail"] + tot["skip"] + tot["xfail"] + tot["xpass"] + tot["error"]
			printf "%-28s %6d %6d %6d %6d %6ds  %s\n", rel, n, tot["pass"],
			       tot["fail"] + tot["error"], tot["skip"], secs,
			       (rc == 0 && n > 0 && tot["fail"] + tot["error"] == 0) ? "ok" : "FAILED"
		}' "$log" >> "$work/table"
	tail -n 1 "$work/table" | grep -q 'FAILED$' && failed=1
	sed -n 's/^ok [0-9][0-9]* # SKIP *//p' "$log" | sort | uniq -c |
		sed "s|^|$rel|" >> "$work/skips"
done

{
	echo "== kernel matrix: the VM tests on each kernel"
	printf "%-28s %6s %6s %6s %6s %7s  %s\n" kernel tests pass fail skip time result
	cat "$work/table"
	prev=
	while IFS= read -r line; do
		rel=${line%% *}
		[ "$rel" = "$prev" ] || echo "skipped on $rel:"
		prev=$rel
		echo "  ${line#"$rel"}" | sed 's/^ *\([0-9]*\) /  \1 x /'
	done < "$work/skips"
} > "$work/summary"
cat "$work/summary"
[ -z "$summary" ] || cp "$work/summary" "$summary"
exit $failed
