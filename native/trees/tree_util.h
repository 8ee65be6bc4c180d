/* Small helpers shared by the tree walks (patricia.c, merkle.c). */
#ifndef DACD_TREE_UTIL_H
#define DACD_TREE_UTIL_H

#include <stdint.h>
#include <stdlib.h>

/** Grows *p (an array of `size`-byte elements, *cap of them) to hold `need`, doubling; 0: out of memory. */
static inline int grow(void **p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return 1;
  size_t c = *cap ? *cap : 64;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * size);
  if (!q) return 0;
  *p = q;
  *cap = c;
  return 1;
}

/** A record's gen (node-record.ts): a u32, big-endian. */
static inline uint32_t rd_gen(const uint8_t *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline void wr_gen(uint8_t *p, uint32_t g) {
  p[0] = (uint8_t)(g >> 24);
  p[1] = (uint8_t)(g >> 16);
  p[2] = (uint8_t)(g >> 8);
  p[3] = (uint8_t)g;
}

/** A 32-byte hash as 64 hex digits and a terminating zero (as the JavaScript walks print it). */
static inline void hex32(const uint8_t *h, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    out[2 * i] = digits[h[i] >> 4];
    out[2 * i + 1] = digits[h[i] & 15];
  }
  out[64] = 0;
}

#endif
