/*
 * The scalar kernel compiled for x86-64 with BMI2 (mulx) and ADX. Only called when cpuid reports
 * both. Hashes public data only: not constant-time, by design (see core.h).
 */
#include "core.h"

#ifdef PED_HAVE_X86
#define KN(name) ped_adx_##name
#define KATTR __attribute__((target("bmi2,adx")))
#define PED_ADX_ASM 1
#include "kernel_scalar.h"

int ped_hash_adx(const uint8_t *xs, const uint8_t *ys, uint8_t *out, size_t n) { return ped_adx_hash(xs, ys, out, n); }
int ped_hash_adx_const(const uint8_t *vs, const uint8_t *c, int c_is_y, uint8_t *out, size_t n) {
  return ped_adx_hash_const(vs, c, c_is_y, out, n);
}
#endif
