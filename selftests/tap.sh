# SPDX-License-Identifier: GPL-2.0
#
# selftests/tap.sh - TAP for the tools' shell tests, sourced after setting
#
#   TAP_CMD   the program under test
#   TMP       a scratch directory the caller removes
#
# then:
#   run ARGS...        run $TAP_CMD; stdout in $TMP/out, stderr in
#                      $TMP/err, exit status in $rc
#   check NAME CHECK...  one test line from the last run's results:
#       rc N           exit status N
#       out TEXT       stdout is exactly TEXT (and a newline)
#       err TEXT       stderr is exactly TEXT (and a newline)
#       err1 TEXT      the first stderr line is TEXT
#       errstart TEXT  stderr starts with TEXT
#       key KEY VALUE  the one JSON object on stdout has KEY: VALUE
#       quiet          stderr is empty
#       noout          stdout is empty
#   pass NAME / fail NAME [LINE...]   a test line by hand
#   tap_done           the plan line; exit status 0 when all passed

n=0
failed=0

run()
{
	"$TAP_CMD" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
}

# json_get KEY - the value of KEY in the one JSON object in $TMP/out.
json_get()
{
	sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" "$TMP/out"
}

pass() { n=$((n + 1)); echo "ok $n $1"; }

fail()
{
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n $1"
	shift
	for line in "$@"; do echo "# $line"; done
	sed 's/^/# stdout: /' "$TMP/out"
	sed 's/^/# stderr: /' "$TMP/err"
}

# want MESSAGE - record a failed check of the current test.
want()
{
	ok=0
	msgs="${msgs}$1
"
}

check()
{
	name=$1
	shift
	msgs=
	ok=1
	while [ $# -gt 0 ]; do
		case $1 in
		rc)
			[ "$rc" = "$2" ] || want "exit status $rc, want $2"
			shift 2 ;;
		out|err)
			printf '%s\n' "$2" | cmp -s - "$TMP/$1" ||
				want "$1 differs from:
$2"
			shift 2 ;;
		err1)
			got=$(head -n 1 "$TMP/err")
			[ "$got" = "$2" ] ||
				want "first stderr line: got '$got', want '$2'"
			shift 2 ;;
		errstart)
			got=$(head -c ${#2} "$TMP/err")
			[ "$got" = "$2" ] || want "stderr starts '$got', want '$2'"
			shift 2 ;;
		has)
			grep -qxF -- "$2" "$TMP/out" ||
				want "no line '$2' in stdout"
			shift 2 ;;
		key)
			got=$(json_get "$2")
			[ "$got" = "$3" ] || want "$2: got '$got', want '$3'"
			shift 3 ;;
		quiet)
			[ ! -s "$TMP/err" ] || want "stderr not empty"
			shift ;;
		noout)
			[ ! -s "$TMP/out" ] || want "stdout not empty"
			shift ;;
		*)
			echo "bad check $1" >&2
			exit 2 ;;
		esac
	done
	if [ $ok = 1 ]; then
		pass "$name"
	else
		old_ifs=$IFS
		IFS='
'
		# shellcheck disable=SC2086
		fail "$name" $msgs
		IFS=$old_ifs
	fi
}

tap_done()
{
	echo "1..$n"
	[ $failed = 0 ]
}
