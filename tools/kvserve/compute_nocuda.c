// SPDX-License-Identifier: GPL-2.0
/*
 * kvserve built without CUDA (no nvcc, or the static build for the VM):
 * --backend cuda is refused.
 */
#include <stddef.h>

#include "kvserve.h"

const struct compute_ops *compute_cuda_ops;
