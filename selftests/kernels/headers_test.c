// SPDX-License-Identifier: MIT
/*
 * headers_test.c - the runtime's and the kernels' public headers in one
 * file, as an engine includes them: compiled (not run) as C and as C++
 * by `make check-kernels`.  struct kva_seq (the runtime's sequence) and
 * struct kva_attn_seq (a kernel's view of one) must not collide.
 */
#include <kvarena.h>

#include "kvattn.h"
#include "kvattn_cuda.h"

/* A runtime sequence handed to the kernels. */
static inline struct kva_attn_seq headers_test_view(const struct kva_seq *s)
{
	struct kva_attn_seq v = {
		(const void *)(uintptr_t)s->base, s->tokens,
	};

	return v;
}

int headers_test(const struct kva_seq *s);

int headers_test(const struct kva_seq *s)
{
	return (int)headers_test_view(s).tokens;
}
