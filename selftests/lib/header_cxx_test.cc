// SPDX-License-Identifier: GPL-2.0
// The public header compiles as C++ too (engines are often C++).
#include <kvarena.h>

int kva_header_cxx_check(struct kva_seq *s)
{
	return kva_seq_grow(s, 1) ? -1 : (int)kva_seq_kv_addr(s, 0, KVA_K, 0, 0);
}
