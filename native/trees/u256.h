/*
 * 256-bit unsigned values (64-bit limbs, w[0] least significant) for the tree walks' leaf ids and
 * edge paths: the few operations they need, inline.
 */
#ifndef DACD_U256_H
#define DACD_U256_H

#include <stdint.h>

typedef struct {
  uint64_t w[4];
} u256;

static inline u256 u_from_be(const uint8_t *b) {
  u256 v;
  for (int i = 0; i < 4; i++) {
    uint64_t x = 0;
    for (int j = 0; j < 8; j++) x = (x << 8) | b[(3 - i) * 8 + j];
    v.w[i] = x;
  }
  return v;
}

static inline void u_to_be(u256 v, uint8_t *b) {
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 8; j++) b[(3 - i) * 8 + j] = (uint8_t)(v.w[i] >> (56 - 8 * j));
}

static inline u256 u_shr(u256 v, unsigned k) {
  u256 r = {{0, 0, 0, 0}};
  if (k >= 256) return r;
  unsigned limbs = k / 64, bits = k % 64;
  for (unsigned i = 0; i + limbs < 4; i++) {
    uint64_t lo = v.w[i + limbs] >> bits;
    uint64_t hi = (bits && i + limbs + 1 < 4) ? v.w[i + limbs + 1] << (64 - bits) : 0;
    r.w[i] = lo | hi;
  }
  return r;
}

static inline u256 u_shl(u256 v, unsigned k) {
  u256 r = {{0, 0, 0, 0}};
  if (k >= 256) return r;
  unsigned limbs = k / 64, bits = k % 64;
  for (unsigned i = limbs; i < 4; i++) {
    uint64_t lo = v.w[i - limbs] << bits;
    uint64_t hi = (bits && i > limbs) ? v.w[i - limbs - 1] >> (64 - bits) : 0;
    r.w[i] = lo | hi;
  }
  return r;
}

/** The low k bits of v. */
static inline u256 u_low_bits(u256 v, unsigned k) {
  for (unsigned i = 0; i < 4; i++) {
    if (k >= 64 * (i + 1)) continue;
    v.w[i] = k <= 64 * i ? 0 : v.w[i] & ((UINT64_C(1) << (k - 64 * i)) - 1);
  }
  return v;
}

static inline u256 u_or(u256 a, u256 b) {
  for (int i = 0; i < 4; i++) a.w[i] |= b.w[i];
  return a;
}

static inline unsigned u_bit_length(u256 v) {
  for (int i = 3; i >= 0; i--)
    if (v.w[i]) return (unsigned)(64 * i + 64 - __builtin_clzll(v.w[i]));
  return 0;
}

static inline unsigned u_xor_bit_length(const u256 *a, const u256 *b) {
  for (int i = 3; i >= 0; i--) {
    uint64_t x = a->w[i] ^ b->w[i];
    if (x) return (unsigned)(64 * i + 64 - __builtin_clzll(x));
  }
  return 0;
}

static inline int u_bit(const u256 *v, unsigned k) { return (int)((v->w[k / 64] >> (k % 64)) & 1); }

#endif
