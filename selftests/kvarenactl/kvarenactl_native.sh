#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# kvarenactl on a machine without kvarena.ko: the messages that say what
# is missing, the memory check, and the cuda backend against a test double
# of libcuda.so.1.  Output is TAP; exit status 0 when every test
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

# The command line is args_test's (a table of every option).

# 2^24 frames of 1 GiB: no machine has that; said before anything is made.
run create huge --frames 16777216 --frame-size 1G
check create_more_host_memory_than_available_is_refused rc 1 noout \
	errstart "kvarenactl: create: 16Pi of host memory asked for, but MemAvailable is "

# --- no module ---------------------------------------------------------------

if [ -e /sys/class/misc/kvarena ]; then
	echo "# kvarena.ko is loaded here: the no-module messages are checked in the VM"
else
	KVA_DEVICE=$TMP/kvarena run stat
	check missing_device_asks_whether_the_module_is_loaded rc 1 noout \
		err "kvarenactl: $TMP/kvarena: no such device (is kvarena.ko loaded?)"
	if [ ! -e /dev/kvarena ]; then
		for cmd in stat clients top metrics "destroy x" "limit x 1 --max 2" \
			   "create x --frames 1" "kill x 1"; do
			# shellcheck disable=SC2086
			run $cmd
			check "no_module_${cmd%% *}_fails_with_a_clear_error" rc 1 noout \
				err "kvarenactl: /dev/kvarena: no such device (is kvarena.ko loaded?)"
		done
		run create x --gang a,b --mode 0660
		check no_module_create_gang_fails_with_a_clear_error rc 1 noout \
			err "kvarenactl: /dev/kvarena: no such device (is kvarena.ko loaded?)"
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

# The module records the GPU by UUID, so create asks for it first.
KVA_CUDA_LIBRARY=$FAKE FAKE_CUDA_UUID_ERROR=101 run create g --frames 2 --backend cuda
check cuda_create_asks_the_driver_for_the_gpu_uuid rc 1 noout \
	err "kvarenactl: cuda backend: device 0: cuDeviceGetUuid: CUDA error 101 (fake error)"

KVA_CUDA_LIBRARY=$FAKE run create g --frames 2 --frame-size 64K --backend cuda
check cuda_frame_size_below_granularity rc 1 noout \
	err "kvarenactl: cuda backend: --frame-size 64Ki is not a multiple of device 0's allocation granularity, 2.0Mi"

# Every CUDA check passes; then the device is opened, and it is missing.
KVA_CUDA_LIBRARY=$FAKE KVA_DEVICE=$TMP/kvarena run create g --frames 2 --backend cuda
check cuda_checks_come_before_the_device rc 1 noout \
	errstart "kvarenactl: $TMP/kvarena: no such"

tap_done
