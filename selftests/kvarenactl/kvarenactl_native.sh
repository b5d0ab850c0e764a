#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# kvarenactl on a machine without kvarena.ko: the command line, the
# messages that say what is missing, and the cuda backend against a test
# double of libcuda.so.1.  Output is TAP; exit status 0 when every test
# passes.  The tests with the module loaded run in the VM
# (kvarenactl_test.c).
#
#   selftests/kvarenactl/kvarenactl_native.sh KVARENACTL FAKE_LIBCUDA FAKE_OLD_LIBCUDA

KVACTL=${1:?usage: $0 KVARENACTL FAKE_LIBCUDA FAKE_OLD_LIBCUDA}
FAKE=${2:?}
FAKE_OLD=${3:?}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kvarenactl-test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM

TAP_CMD=$KVACTL
. "$(dirname "$0")/../tap.sh"

if [ ! -x "$KVACTL" ]; then
	echo "Bail out! no kvarenactl binary at $KVACTL"
	exit 1
fi
TRY="Try 'kvarenactl --help'."

# --- help and usage -------------------------------------------------------

run --help
lines=$(wc -l <"$TMP/out")
wide=$(awk 'length > 80' "$TMP/out" | wc -l)
if [ "$rc" = 0 ] && [ "$lines" -le 24 ] && [ "$wide" = 0 ] &&
   grep -q '^Usage: kvarenactl' "$TMP/out"; then
	pass help_fits_one_screen
else
	fail help_fits_one_screen "rc $rc, $lines lines, $wide over 80 columns"
fi

run
check no_command_is_a_usage_error rc 2 noout \
	err "kvarenactl: no command
$TRY"

run frobnicate
check unknown_command_is_named rc 2 \
	err "kvarenactl: unknown command \"frobnicate\"
$TRY"

run stat --frobnicate
check unknown_option_is_named rc 2 \
	err "kvarenactl: stat: unknown option, or one without its value: --frobnicate
$TRY"

run stat --frames 4
check option_of_another_command_is_refused rc 2 \
	err "kvarenactl: stat: --frames does not apply to stat
$TRY"

run metrics --json
check metrics_has_no_json rc 2 \
	err "kvarenactl: metrics: --json does not apply to metrics
$TRY"

run stat a b
check extra_argument_is_refused rc 2 \
	err "kvarenactl: stat: unexpected argument \"b\"
$TRY"

run stat -- -x -y
check arguments_after_double_dash_are_arguments rc 2 \
	err "kvarenactl: stat: unexpected argument \"-y\"
$TRY"

run -- stat
check double_dash_before_the_command rc 2 \
	err "kvarenactl: no command before \"stat\"
$TRY"

run stat --pretty
check pretty_needs_json rc 2 \
	err "kvarenactl: stat: --pretty goes with --json
$TRY"

run stat 'bad name'
check bad_arena_name_is_explained rc 2 \
	err "kvarenactl: stat: bad arena name \"bad name\": 1-31 characters of A-Z a-z 0-9 _ . -, not starting with '.'"

run create gpu0
check create_needs_frames rc 2 \
	err "kvarenactl: create: --frames is required
$TRY"

run create gpu0 --frames 0
check create_frames_out_of_range rc 2 \
	err "kvarenactl: create: --frames 0: out of range: 1 to 16777216
$TRY"

run create gpu0 --frames 4 --frame-size 3000
check create_frame_size_must_be_a_power_of_two rc 2 \
	err "kvarenactl: create: --frame-size 3000: not a power of two from 4K to 1G
$TRY"

run create gpu0 --frames 4 --frame-size 2X
check create_frame_size_suffix rc 2 \
	err "kvarenactl: --frame-size \"2X\": bytes, or a number with K, M, G or T
$TRY"

run create gpu0 --frames 4 --backend tape
check create_unknown_backend rc 2 \
	err "kvarenactl: --backend \"tape\": host, cuda or cuda:DEVICE
$TRY"

run create gpu0 --frames 4 --low-watermark 5
check create_watermark_above_frames rc 2 \
	err "kvarenactl: create: --low-watermark 5 is above --frames 4
$TRY"

run create gpu0 --frames 4 --backend cuda --hugepages
check create_hugepages_only_on_host rc 2 \
	err "kvarenactl: create: --hugepages is for host memory
$TRY"

run create gpu0 --frames 4 --frame-size 64K --hugepages
check create_hugepages_need_2m_frames rc 2 \
	err "kvarenactl: create: --hugepages needs a --frame-size that is a multiple of 2M
$TRY"

run create gpu0 --frames 4 --bytes-per-token 128K --layers 32
check create_bytes_per_token_or_geometry rc 2 \
	err "kvarenactl: create: give --bytes-per-token or the model geometry, not both
$TRY"

# 2 * 320 layers * 8 heads * 128 * 2 bytes = 1310720 bytes per token
run create gpu0 --frames 4 --frame-size 64K --layers 320 --kv-heads 8 --head-dim 128
check create_token_larger_than_frame rc 2 \
	err "kvarenactl: create: one token (1310720 bytes) does not fit in a 64Ki frame
$TRY"

run create gpu0 --frames 4 --layers 32
check create_geometry_needs_every_dimension rc 2 \
	err "kvarenactl: create: the model geometry needs --layers, --kv-heads and --head-dim, each 1 to 65536
$TRY"

run limit gpu0 1
check limit_needs_min_or_max rc 2 \
	err "kvarenactl: limit: give --min, --max or both
$TRY"

run limit gpu0 1 --min 5 --max 2
check limit_min_above_max rc 2 \
	err "kvarenactl: limit: --min 5 is above --max 2
$TRY"

run top -n 0
check top_iterations_at_least_one rc 2 \
	err "kvarenactl: --iterations \"0\": a count, at least 1
$TRY"

run top -d 0.001
check top_interval_at_least_10ms rc 2 \
	err "kvarenactl: --interval \"0.001\": out of range: seconds, at least 0.01
$TRY"

# 2^24 frames of 1 GiB: no machine has that; said before anything is made.
run create huge --frames 16777216 --frame-size 1G
check create_more_host_memory_than_available_is_refused rc 1 noout \
	errstart "kvarenactl: create: 16Pi of host memory asked for, only "

# --- no module ---------------------------------------------------------------

if [ -e /sys/class/misc/kvarena ]; then
	echo "# kvarena.ko is loaded here: the no-module messages are checked in the VM"
else
	KVA_DEVICE=$TMP/kvarena run stat
	check missing_device_asks_whether_the_module_is_loaded rc 1 noout \
		err "kvarenactl: $TMP/kvarena: no such device (is kvarena.ko loaded?)"
	if [ ! -e /dev/kvarena ]; then
		for cmd in stat clients top metrics "destroy x" "limit x 1 --max 2" \
			   "create x --frames 1"; do
			# shellcheck disable=SC2086
			run $cmd
			check "no_module_${cmd%% *}_fails_with_a_clear_error" rc 1 noout \
				err "kvarenactl: /dev/kvarena: no such device (is kvarena.ko loaded?)"
		done
	fi
fi

KVA_DEVICE=/dev/null run stat
check other_device_is_not_kvarena rc 1 noout \
	err "kvarenactl: /dev/null: not a kvarena device"

# --- the cuda backend ---------------------------------------------------------

KVA_CUDA_LIBRARY=$TMP/libcuda.so.1 run create g --frames 2 --backend cuda
check cuda_without_driver_fails_before_touching_the_module rc 1 noout \
	errstart "kvarenactl: cuda backend: $TMP/libcuda.so.1 not found: "

if ! (ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '); then
	run create g --frames 2 --backend cuda:0
	check cuda_default_library_missing_is_named rc 1 noout \
		errstart "kvarenactl: cuda backend: libcuda.so.1 not found: "
fi

KVA_CUDA_LIBRARY=$FAKE_OLD run create g --frames 2 --backend cuda
check cuda_driver_without_vmm_is_named rc 1 noout \
	err "kvarenactl: cuda backend: $FAKE_OLD has no cuMemCreate (driver too old for CUDA virtual memory?)"

KVA_CUDA_LIBRARY=$FAKE FAKE_CUDA_INIT_ERROR=100 run create g --frames 2 --backend cuda
check cuda_init_error_is_explained rc 1 noout \
	err "kvarenactl: cuda backend: cuInit: CUDA error 100 (no CUDA-capable device is detected)"

KVA_CUDA_LIBRARY=$FAKE FAKE_CUDA_DEVICES=2 run create g --frames 2 --backend cuda:2
check cuda_device_beyond_count rc 1 noout \
	err "kvarenactl: cuda backend: no CUDA device 2 (2 devices)"

KVA_CUDA_LIBRARY=$FAKE run create g --frames 2 --frame-size 64K --backend cuda
check cuda_frame_size_below_granularity rc 1 noout \
	err "kvarenactl: cuda backend: --frame-size 64Ki is not a multiple of device 0's allocation granularity, 2.0Mi"

# Every CUDA check passes; then the device is opened, and it is missing.
KVA_CUDA_LIBRARY=$FAKE KVA_DEVICE=$TMP/kvarena run create g --frames 2 --backend cuda
check cuda_checks_come_before_the_device rc 1 noout \
	errstart "kvarenactl: $TMP/kvarena: no such"

tap_done
