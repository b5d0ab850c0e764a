#include "attn_internal.h"
const struct kva_isa_ops kva_ops_avx512 = { 0 };
