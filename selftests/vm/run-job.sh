#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# run-job.sh - the main job (make run, make check-run): boot the VM with
# main-job.sh, keep what it shows and leaves in a results folder, draw
# its picture, and say where it all is.
#
#   run-job.sh --results DIR --plot RUNPLOT [--requests N] [--smp N]
#              [--hog] [--name NAME] -- RUN.SH [RUN.SH-ARGUMENTS...]
#
# The results go into DIR/NAME (NAME: the date and time, and the
# conditions): output.txt (what the job printed), timeline, serve-*.json
# and run.svg.  --requests N gives each kvserve process N requests (the
# job's default is 40), --smp N the VM N virtual CPUs, --hog runs a busy
# loop on every host CPU beside the VM for as long as it runs.
set -eu

die() { echo "run-job.sh: $*" >&2; exit 2; }

results= plot= requests= smp= hog=no name=
while [ $# -gt 0 ]; do
	case $1 in
	--results)  results=$2; shift 2 ;;
	--plot)     plot=$2; shift 2 ;;
	--requests) requests=$2; shift 2 ;;
	--smp)      smp=$2; shift 2 ;;
	--hog)      hog=yes; shift ;;
	--name)     name=$2; shift 2 ;;
	--) shift; break ;;
	*) die "unknown option $1" ;;
	esac
done
[ -n "$results" ] || die "--results is required"
[ -x "$plot" ] || die "--plot: not an executable: '$plot'"

conditions=
[ -z "$requests" ] || conditions="$conditions-$requests-requests"
[ -z "$smp" ] || conditions="$conditions-smp$smp"
[ $hog = no ] || conditions="$conditions-hog"
dir=$results/${name:-$(date +%Y%m%d-%H%M%S)$conditions}
rm -rf "$dir"
mkdir -p "$dir"

hogs=
stop_hogs()
{
	[ -z "$hogs" ] || kill $hogs 2>/dev/null || true
	hogs=
}
trap stop_hogs EXIT INT TERM
if [ $hog = yes ]; then
	for i in $(seq "$(nproc)"); do
		sh -c 'while :; do :; done' &
		hogs="$hogs $!"
	done
	echo "run-job.sh: a busy loop on each of the $(nproc) host CPUs beside the VM"
fi

# The job reads its knobs from its environment: the kernel hands
# NAME=VALUE words of its command line to init as environment.
append=
[ -z "$requests" ] || append="KVA_RUN_REQUESTS=$requests"
vm=$1
shift
rc=0
"$vm" ${smp:+--smp "$smp"} ${append:+--append "$append"} --out "$dir" "$@" \
	> "$dir/output.txt" 2>&1 || rc=$?
stop_hogs
cat "$dir/output.txt"
if [ -s "$dir/timeline" ]; then
	"$plot" "$dir/timeline" "$dir/run.svg" || rc=1
fi
echo
if [ -s "$dir/run.svg" ]; then
	echo "results: $dir/ (run.svg: frames held by each process over time; output.txt, timeline, serve-*.json)"
else
	echo "results: $dir/ (no picture: the job left no timeline)"
fi
exit $rc
