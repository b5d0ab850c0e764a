/* SPDX-License-Identifier: MIT */
/*
 * fixture.h - sequences laid out in the frame layout in host memory, with
 * random K/V written through kva_kv_append(), for the kernel tests and the
 * GPU check.  Bytes no token owns hold 0xff (NaN in every dtype), so a
 * kernel that reads past a sequence's tokens turns its output into NaN.
 */
#ifndef KVA_TEST_FIXTURE_H
#define KVA_TEST_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "kvattn.h"

struct fx_rng {
	uint64_t s;
};

uint64_t fx_next(struct fx_rng *r);
/* uniform in [-1, 1) */
float fx_unit(struct fx_rng *r);

struct fx_seq {
	uint8_t *mem;		/* the sequence's range: frames * frame_size */
	size_t bytes;
	uint64_t tokens;
};

/*
 * fx_seq_fill() - allocate frames for @tokens tokens (at least one frame)
 * and write random K/V for every layer.  @kscale multiplies K (larger
 * values make the softmax peakier).  Returns 0 or -ENOMEM.
 */
int fx_seq_fill(struct fx_seq *s, const struct kva_geometry *g,
		uint64_t tokens, float kscale, struct fx_rng *rng);
/*
 * fx_seq_fill_scaled() - the same, written with kva_kv_append_scaled()
 * and the per-head scales @kv_scale of every layer (fp8 caches; NULL for
 * all 1).
 */
int fx_seq_fill_scaled(struct fx_seq *s, const struct kva_geometry *g,
		       uint64_t tokens, float kscale, struct fx_rng *rng,
		       const float *kv_scale);
void fx_seq_free(struct fx_seq *s);

/* @n floats uniform in [-1, 1); returns NULL on ENOMEM. */
float *fx_randf(size_t n, struct fx_rng *rng);

#endif
