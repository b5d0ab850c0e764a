#include "attn_internal.h"
extern const struct kva_isa_ops kva_ops_scalar;
const struct kva_isa_ops kva_ops_avx2 = { 0 };
