// SPDX-License-Identifier: GPL-2.0
/*
 * kvsim - the timing model (--gpu-tflops).
 *
 * Without it a step takes --step-ms whatever it does.  With it, a step
 * takes --step-ms (the decode step) plus the prefill its engines computed
 * at --gpu-tflops, plus the copies between the arena and its host tier
 * at --copy-gbs, plus those between the host tier and the disk at
 * --disk-gbs, plus the fetches from the remote tier at --remote-gbs and
 * --remote-ms a round trip, one after the other: nothing overlaps, so
 * the tiers' copies cost their whole time (the upper bound of what they
 * cost).
 *
 * Prefill FLOPs of positions [from, to) of one sequence: the weights,
 * 2 * params per token, and causal attention, for the token at position
 * p, Q.K and P.V over p + 1 positions in every layer and query head:
 * 4 * layers * q_heads * head_dim * (p + 1).
 */
#include "kvsim.h"

double cost_prefill_flops(const struct config *cfg, uint64_t from,
			  uint64_t to)
{
	double n, pairs;

	if (to <= from)
		return 0;
	n = (double)(to - from);
	/* sum of p + 1 over [from, to) */
	pairs = ((double)to * (double)(to + 1) -
		 (double)from * (double)(from + 1)) / 2;
	return 2 * cfg->params * n +
	       4.0 * cfg->g.layers * cfg->q_heads * cfg->g.head_dim * pairs;
}

int64_t cost_step_us(const struct config *cfg, double flops,
		     uint64_t copy_bytes, uint64_t disk_bytes,
		     uint64_t net_bytes, uint64_t round_trips)
{
	double us;

	if (cfg->flops_per_s <= 0)
		return cfg->step_us;
	us = flops / cfg->flops_per_s * 1e6 +
	     (double)copy_bytes / cfg->copy_bytes_per_s * 1e6 +
	     (double)disk_bytes / cfg->disk_bytes_per_s * 1e6;
	if (net_bytes)
		us += (double)net_bytes / cfg->remote_bytes_per_s * 1e6 +
		      (double)round_trips * (double)cfg->remote_rtt_us;
	return cfg->step_us + (int64_t)(us + 0.5);
}
