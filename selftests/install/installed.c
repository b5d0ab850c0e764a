// SPDX-License-Identifier: GPL-2.0
/*
 * A program built against an installed kvarena with nothing but
 * `pkg-config --cflags --libs kvarena`: the library's header, the frame
 * layout header and the uapi header (<linux/kvarena.h>, for programs that
 * talk to the device themselves) all come from the install.  It runs an
 * embedded arena, so it needs no module.  Prints KTAP-style lines; exits
 * non-zero on the first failure.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <kvarena.h>
#include <linux/kvarena.h>

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
		.mode = KVA_MODE_EMBEDDED, .nr_frames = 4,
		.frame_size = 1u << 20,
	};
	struct kva_geometry g = {
		.layers = 2, .kv_heads = 4, .head_dim = 128,
		.dtype = KVA_DTYPE_FP16, .frame_size = 1u << 20,
	};
	struct kvarena_stat uapi_stat;
	struct kva_stat st;
	struct kva_arena *a;
	struct kva_seq *s;
	uint16_t *p;

	/* The uapi header is the one the installed library speaks. */
	CHECK(KVARENA_ABI_VERSION >= 2 && sizeof(uapi_stat.name) == 32);
	CHECK(kva_open(&o, &a) == 0);
	CHECK(kva_seq_create(a, &g, 1024, &s) == 0);
	CHECK(s->geo.tokens_per_frame == 256);
	CHECK(kva_seq_grow(s, 300) == 0);
	p = kva_seq_kv_ptr(s, 1, KVA_V, 3, 299);
	p[127] = 0x3c00;		/* 1.0 in fp16 */
	CHECK(((uint16_t *)kva_seq_kv_ptr(s, 1, KVA_V, 3, 299))[127] == 0x3c00);
	CHECK(kva_stat(a, &st) == 0 && st.held == 2 && st.nr_free == 2);
	CHECK(kva_seq_grow(s, 1024) == -EFBIG);
	kva_seq_free(s);
	kva_close(a);
	printf("1..%d\n", step);
	return 0;
}
