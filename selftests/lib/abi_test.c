// SPDX-License-Identifier: GPL-2.0
/*
 * A user of the installed library: public header and API only, linked
 * against libkvarena.so and against libkvarena.a (check-lib builds it
 * both ways, once through pkg-config from a DESTDIR install).  Prints
 * KTAP-style lines and exits non-zero on the first failure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <kvarena.h>

static int step;

#define CHECK(cond) do {						\
		step++;							\
		if (!(cond)) {						\
			printf("not ok %d %s\n", step, #cond);		\
			return 1;					\
		}							\
		printf("ok %d %s\n", step, #cond);			\
	} while (0)

int main(void)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_EMBEDDED, .nr_frames = 8, .frame_size = 65536,
	};
	struct kva_geometry g = {
		.layers = 4, .kv_heads = 2, .head_dim = 64,
		.dtype = KVA_DTYPE_BF16, .frame_size = 65536,
	};
	struct kva_arena_info info;
	struct kva_seq *s, *c;
	struct kva_arena *a;
	uint16_t *p;

	CHECK(kva_open(&o, &a) == 0);
	CHECK(kva_arena_info(a, &info) == 0 && info.mode == KVA_MODE_EMBEDDED);
	CHECK(kva_seq_create(a, &g, 1000, &s) == 0);
	CHECK(s->geo.tokens_per_frame == 32);
	CHECK(kva_seq_grow(s, 40) == 0 && s->room == 64);
	p = kva_seq_kv_ptr(s, 3, KVA_V, 1, 39);
	p[63] = 0xbeef;
	CHECK(kva_seq_fork(s, &c) == 0);
	CHECK(((uint16_t *)kva_seq_kv_ptr(c, 3, KVA_V, 1, 39))[63] == 0xbeef);
	CHECK(kva_seq_grow(c, 1) == 0);
	((uint16_t *)kva_seq_kv_ptr(c, 3, KVA_V, 1, 39))[63] = 0xf00d;
	CHECK(p[63] == 0xbeef);
	CHECK(kva_seq_grow(s, 1000) == -EFBIG);
	kva_seq_free(c);
	kva_seq_free(s);
	kva_close(a);
	printf("1..%d\n", step);
	return 0;
}
