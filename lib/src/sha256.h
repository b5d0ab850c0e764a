/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 (FIPS 180-4), sha256.c: libkvarena's prefix keys, and the
 * tools' remote block keys (tools/common/kvblock.c), which compile
 * sha256.c with their own sources.
 */
#ifndef KVA_SHA256_H
#define KVA_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct kva_sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
};

void kva_sha256_init(struct kva_sha256 *s);
void kva_sha256_update(struct kva_sha256 *s, const void *data, size_t n);
void kva_sha256_final(struct kva_sha256 *s, uint8_t out[32]);

#endif /* KVA_SHA256_H */
