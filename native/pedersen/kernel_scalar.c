/*
 * The scalar kernel: 4x64-bit Montgomery field arithmetic and the batched fixed-base Pedersen hash.
 * binding.gyp compiles this unit twice: as the portable kernel, and with PED_SCALAR_ADX defined as
 * the kernel for x86-64 with BMI2 (mulx) and ADX, which cpuid dispatch calls only where the CPU
 * has both (engine.c). The portable build also gives the arithmetic that building the tables and
 * the one-sided kernels need (kernel_scalar.h). Every function is named per build through KN and
 * carries the build's target attribute (KATTR).
 *
 * Hashes public data only: not constant-time, by design (see core.h).
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "kernel_scalar.h"

#ifndef __SIZEOF_INT128__
#error "the scalar Pedersen kernel needs a 64-bit compiler with unsigned __int128"
#endif

#ifdef PED_SCALAR_ADX
#define KN(name) ped_adx_##name
#define KATTR __attribute__((target("bmi2,adx")))
#define PED_ADX_ASM 1
#else
#define KN(name) ped_portable_##name
#define KATTR
#endif

/* The ADX build is for x86-64 alone; elsewhere it is an empty unit. */
#if !defined(PED_SCALAR_ADX) || defined(PED_HAVE_X86)

typedef unsigned __int128 ped_u128;
#define PED_P3 0x0800000000000011ULL
/* Below this many pairs per call, Jacobian additions with one inversion per hash beat the
 * batched-affine walk, which pays one inversion per window per batch: with safegcd that inversion
 * is cheap, and the walk pays off from a handful of pairs (bench_main.c times both forms). */
#define PED_SMALL 6
/* Pairs processed together by the batched-affine walk. */
#ifndef PED_BATCH
#define PED_BATCH 512
#endif
#define PED_INLINE static inline __attribute__((always_inline))
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(PED_NO_X86)
#include <x86intrin.h>
/* Baseline x86-64 instructions (adc/sbb), no target attribute needed. */
#define PED_ADDC(c, a, b, out) ((c) = _addcarry_u64((unsigned char)(c), (a), (b), (unsigned long long *)&(out)))
#define PED_SUBB(c, a, b, out) ((c) = _subborrow_u64((unsigned char)(c), (a), (b), (unsigned long long *)&(out)))
#else
#define PED_ADDC(c, a, b, out)                                                         \
  do {                                                                                 \
    uint64_t ped_s_, ped_c1_ = __builtin_add_overflow((a), (b), &ped_s_);             \
    uint64_t ped_c2_ = __builtin_add_overflow(ped_s_, (uint64_t)(c), &(out));          \
    (c) = (unsigned char)(ped_c1_ | ped_c2_);                                          \
  } while (0)
#define PED_SUBB(c, a, b, out)                                                         \
  do {                                                                                 \
    uint64_t ped_s_, ped_c1_ = __builtin_sub_overflow((a), (b), &ped_s_);             \
    uint64_t ped_c2_ = __builtin_sub_overflow(ped_s_, (uint64_t)(c), &(out));          \
    (c) = (unsigned char)(ped_c1_ | ped_c2_);                                          \
  } while (0)
#endif
static inline uint64_t ped_load_be64(const uint8_t *b) {
  return ((uint64_t)b[0] << 56) | ((uint64_t)b[1] << 48) | ((uint64_t)b[2] << 40) | ((uint64_t)b[3] << 32) |
         ((uint64_t)b[4] << 24) | ((uint64_t)b[5] << 16) | ((uint64_t)b[6] << 8) | (uint64_t)b[7];
}
static inline void ped_store_be64(uint8_t *b, uint64_t v) {
  for (int i = 7; i >= 0; i--) {
    b[i] = (uint8_t)v;
    v >>= 8;
  }
}

typedef uint64_t KN(fe)[4];

/* Montgomery form of 1, i.e. 2^256 mod p. */
static const uint64_t KN(ONE)[4] = {0xffffffffffffffe1ULL, 0xffffffffffffffffULL, 0xffffffffffffffffULL,
                                    0x07fffffffffffdf0ULL};

/* r = a mod p for a < 2p: one conditional subtraction, branch-free. */
KATTR PED_INLINE void KN(reduce)(uint64_t r[4], const uint64_t a[4]) {
  uint64_t s0, s1, s2, s3;
  unsigned char c = 0;
  PED_SUBB(c, a[0], 1, s0);
  PED_SUBB(c, a[1], 0, s1);
  PED_SUBB(c, a[2], 0, s2);
  PED_SUBB(c, a[3], PED_P3, s3);
  const uint64_t keep = (uint64_t)0 - (uint64_t)c; /* borrow: a was already below p */
  r[0] = (a[0] & keep) | (s0 & ~keep);
  r[1] = (a[1] & keep) | (s1 & ~keep);
  r[2] = (a[2] & keep) | (s2 & ~keep);
  r[3] = (a[3] & keep) | (s3 & ~keep);
}

/* Montgomery reduction of the 512-bit t (t < 4p^2): r = t/2^256 mod p, in [0, 2p) (not fully
 * reduced: see mul_lazy).
 * Specialised for p = 1 + P3*2^192, whose inverse mod 2^256 is 1 - P3*2^192 (the square of P3*2^192
 * vanishes), so the whole Montgomery factor m = -t_low/p mod 2^256 is -t_low + (t_0*P3)*2^192: one
 * negation and one product. Then r = (t + m*p)/2^256 = t_high + (m*P3 >> 64) + k, where k, the
 * carry out of t_low + m + (m*P3 mod 2^64)*2^192 (a multiple of 2^256), is
 *   [t_low != 0] - [the top limb of m overflowed] + [t_0 != 0]
 * (m*P3's low limb is -t_0*P3, so adding it to t_0*P3 carries exactly when t_0 != 0).
 * r < (4p^2 + 2^256 p)/2^256 < 2p, since 4p < 2^256. */
KATTR PED_INLINE void KN(redc_lazy)(uint64_t r[4], const uint64_t t[8]) {
  uint64_t m0, m1, m2, m3, x = t[0] * PED_P3;
  unsigned char c = 0, o = 0;
  PED_SUBB(c, 0, t[0], m0);
  PED_SUBB(c, 0, t[1], m1);
  PED_SUBB(c, 0, t[2], m2);
  PED_SUBB(c, 0, t[3], m3);
  PED_ADDC(o, m3, x, m3);
  const uint64_t k = (uint64_t)c - o + (t[0] != 0);
  const ped_u128 q0 = (ped_u128)m0 * PED_P3, q1 = (ped_u128)m1 * PED_P3, q2 = (ped_u128)m2 * PED_P3,
                 q3 = (ped_u128)m3 * PED_P3;
  uint64_t M1, M2, M3, M4, r0, r1, r2, r3;
  c = 0;
  PED_ADDC(c, (uint64_t)(q0 >> 64), (uint64_t)q1, M1);
  PED_ADDC(c, (uint64_t)(q1 >> 64), (uint64_t)q2, M2);
  PED_ADDC(c, (uint64_t)(q2 >> 64), (uint64_t)q3, M3);
  M4 = (uint64_t)(q3 >> 64) + c;
  c = 0;
  PED_ADDC(c, t[4], M1, r0);
  PED_ADDC(c, t[5], M2, r1);
  PED_ADDC(c, t[6], M3, r2);
  PED_ADDC(c, t[7], M4, r3);
  c = 0;
  PED_ADDC(c, r0, k, r0);
  PED_ADDC(c, r1, 0, r1);
  PED_ADDC(c, r2, 0, r2);
  PED_ADDC(c, r3, 0, r3);
  r[0] = r0, r[1] = r1, r[2] = r2, r[3] = r3;
}

#ifdef PED_ADX_ASM
/* x86-64 BMI2 + ADX: the 512-bit product with mulx and the two carry chains of adcx/adox, then
 * redc_lazy's reduction (one negation, five products). */
static const uint64_t KN(P3)[1] = {PED_P3};
#define PED_ADX_MUL_BODY \
  "movq 0(%[b]), %%rdx\n\t" \
  "mulxq 0(%[a]), %[t0], %[t1]\n\t" \
  "mulxq 8(%[a]), %[lo], %[t2]\n\t" \
  "addq %[lo], %[t1]\n\t" \
  "mulxq 16(%[a]), %[lo], %[t3]\n\t" \
  "adcq %[lo], %[t2]\n\t" \
  "mulxq 24(%[a]), %[lo], %[t4]\n\t" \
  "adcq %[lo], %[t3]\n\t" \
  "adcq $0, %[t4]\n\t" \
  "movq 8(%[b]), %%rdx\n\t" \
  "xorl %k[lo], %k[lo]\n\t" \
  "mulxq 0(%[a]), %[lo], %[hi]\n\t" \
  "adcxq %[lo], %[t1]\n\t" \
  "adoxq %[hi], %[t2]\n\t" \
  "mulxq 8(%[a]), %[lo], %[hi]\n\t" \
  "adcxq %[lo], %[t2]\n\t" \
  "adoxq %[hi], %[t3]\n\t" \
  "mulxq 16(%[a]), %[lo], %[hi]\n\t" \
  "adcxq %[lo], %[t3]\n\t" \
  "adoxq %[hi], %[t4]\n\t" \
  "mulxq 24(%[a]), %[lo], %[t5]\n\t" \
  "adcxq %[lo], %[t4]\n\t" \
  "movl $0, %k[lo]\n\t" \
  "adoxq %[lo], %[t5]\n\t" \
  "adcxq %[lo], %[t5]\n\t" \
  "movq 16(%[b]), %%rdx\n\t" \
  "xorl %k[lo], %k[lo]\n\t" \
  "mulxq 0(%[a]), %[lo], %[hi]\n\t" \
  "adcxq %[lo], %[t2]\n\t" \
  "adoxq %[hi], %[t3]\n\t" \
  "mulxq 8(%[a]), %[lo], %[hi]\n\t" \
  "adcxq %[lo], %[t3]\n\t" \
  "adoxq %[hi], %[t4]\n\t" \
  "mulxq 16(%[a]), %[lo], %[hi]\n\t" \
  "adcxq %[lo], %[t4]\n\t" \
  "adoxq %[hi], %[t5]\n\t" \
  "mulxq 24(%[a]), %[lo], %[t6]\n\t" \
  "adcxq %[lo], %[t5]\n\t" \
  "movl $0, %k[lo]\n\t" \
  "adoxq %[lo], %[t6]\n\t" \
  "adcxq %[lo], %[t6]\n\t" \
  "movq 24(%[b]), %%rdx\n\t" \
  "xorl %k[lo], %k[lo]\n\t" \
  "mulxq 0(%[a]), %[lo], %[hi]\n\t" \
  "adcxq %[lo], %[t3]\n\t" \
  "adoxq %[hi], %[t4]\n\t" \
  "mulxq 8(%[a]), %[lo], %[hi]\n\t" \
  "adcxq %[lo], %[t4]\n\t" \
  "adoxq %[hi], %[t5]\n\t" \
  "mulxq 16(%[a]), %[lo], %[hi]\n\t" \
  "adcxq %[lo], %[t5]\n\t" \
  "adoxq %[hi], %[t6]\n\t" \
  "mulxq 24(%[a]), %[lo], %[t7]\n\t" \
  "adcxq %[lo], %[t6]\n\t" \
  "movl $0, %k[lo]\n\t" \
  "adoxq %[lo], %[t7]\n\t" \
  "adcxq %[lo], %[t7]\n\t" \
  /* redc's reduction: m = -t_low + (t0*P3)*2^192 in a, b, t0, t1 and k in hi. */ \
  "movq %[t0], %[lo]\n\t" \
  "imulq %[p3], %[lo]\n\t" \
  "xorl %k[a], %k[a]\n\t" \
  "subq %[t0], %[a]\n\t" \
  "movl $0, %k[b]\n\t" \
  "sbbq %[t1], %[b]\n\t" \
  "movl $0, %k[t0]\n\t" \
  "sbbq %[t2], %[t0]\n\t" \
  "movl $0, %k[t1]\n\t" \
  "sbbq %[t3], %[t1]\n\t" \
  "sbbq %[hi], %[hi]\n\t" \
  "addq %[lo], %[t1]\n\t" \
  "adcq $0, %[hi]\n\t" \
  "negq %[lo]\n\t" \
  "sbbq $0, %[hi]\n\t" \
  "negq %[hi]\n\t" \
  /* t_high += (m*P3 >> 64) + k */ \
  "movq %[p3], %%rdx\n\t" \
  "mulxq %[a], %[lo], %[a]\n\t" \
  "mulxq %[b], %[lo], %[b]\n\t" \
  "addq %[lo], %[a]\n\t" \
  "mulxq %[t0], %[lo], %[t0]\n\t" \
  "adcq %[lo], %[b]\n\t" \
  "mulxq %[t1], %[lo], %[t1]\n\t" \
  "adcq %[lo], %[t0]\n\t" \
  "adcq $0, %[t1]\n\t" \
  "addq %[a], %[t4]\n\t" \
  "adcq %[b], %[t5]\n\t" \
  "adcq %[t0], %[t6]\n\t" \
  "adcq %[t1], %[t7]\n\t" \
  "addq %[hi], %[t4]\n\t" \
  "adcq $0, %[t5]\n\t" \
  "adcq $0, %[t6]\n\t" \
  "adcq $0, %[t7]\n\t"
/* reduce() on the result in registers: subtract p unless that borrows. */
#define PED_ADX_REDUCE \
  "movq %[t4], %[lo]\n\t" \
  "subq $1, %[lo]\n\t" \
  "movq %[t5], %[hi]\n\t" \
  "sbbq $0, %[hi]\n\t" \
  "movq %[t6], %[a]\n\t" \
  "sbbq $0, %[a]\n\t" \
  "movq %[t7], %[b]\n\t" \
  "sbbq %[p3], %[b]\n\t" \
  "cmovncq %[lo], %[t4]\n\t" \
  "cmovncq %[hi], %[t5]\n\t" \
  "cmovncq %[a], %[t6]\n\t" \
  "cmovncq %[b], %[t7]\n\t"
/* A product function whose assembly is `code`: the operands every form above uses. */
#define PED_ADX_MUL_FN(name, code)                                                                          \
  KATTR PED_INLINE void KN(name)(uint64_t r[4], const uint64_t a[4], const uint64_t b[4]) {                 \
    uint64_t t0, t1, t2, t3, t4, t5, t6, t7, lo, hi;                                                       \
    const uint64_t *pa = a, *pb = b;                                                                       \
    __asm__(code                                                                                           \
            : [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [t3] "=&r"(t3), [t4] "=&r"(t4), [t5] "=&r"(t5), \
              [t6] "=&r"(t6), [t7] "=&r"(t7), [lo] "=&r"(lo), [hi] "=&r"(hi), [a] "+&r"(pa), [b] "+&r"(pb)    \
            : [p3] "m"(KN(P3)[0])                                                                          \
            : "rdx", "cc", "memory");                                                                      \
    (void)t0, (void)t1, (void)t2, (void)t3;                                                                \
    r[0] = t4, r[1] = t5, r[2] = t6, r[3] = t7;                                                            \
  }
PED_ADX_MUL_FN(mul_lazy, PED_ADX_MUL_BODY)
/* mul, fully reduced, with the subtraction in registers too (the complete path's products). */
PED_ADX_MUL_FN(mul, PED_ADX_MUL_BODY PED_ADX_REDUCE)
#undef PED_ADX_MUL_FN
#undef PED_ADX_MUL_BODY
#undef PED_ADX_REDUCE
#else
/* mul_lazy in C, row by row: four 64x64->128 products, their low halves and high halves added in
 * two carry chains. Not inlined: inlined into hash_batch's large loops, gcc spills and vectorises
 * it into a slower whole. */
KATTR static __attribute__((noinline)) void KN(mul_lazy)(uint64_t r[4], const uint64_t a[4], const uint64_t b[4]) {
  uint64_t t[8];
  unsigned char c;
  const uint64_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
  {
    const ped_u128 p0 = (ped_u128)a0 * b[0], p1 = (ped_u128)a1 * b[0], p2 = (ped_u128)a2 * b[0],
                   p3 = (ped_u128)a3 * b[0];
    t[0] = (uint64_t)p0;
    c = 0;
    PED_ADDC(c, (uint64_t)(p0 >> 64), (uint64_t)p1, t[1]);
    PED_ADDC(c, (uint64_t)(p1 >> 64), (uint64_t)p2, t[2]);
    PED_ADDC(c, (uint64_t)(p2 >> 64), (uint64_t)p3, t[3]);
    t[4] = (uint64_t)(p3 >> 64) + c;
  }
  for (int i = 1; i < 4; i++) {
    const uint64_t bi = b[i];
    const ped_u128 p0 = (ped_u128)a0 * bi, p1 = (ped_u128)a1 * bi, p2 = (ped_u128)a2 * bi, p3 = (ped_u128)a3 * bi;
    uint64_t h;
    c = 0;
    PED_ADDC(c, t[i], (uint64_t)p0, t[i]);
    PED_ADDC(c, t[i + 1], (uint64_t)p1, t[i + 1]);
    PED_ADDC(c, t[i + 2], (uint64_t)p2, t[i + 2]);
    PED_ADDC(c, t[i + 3], (uint64_t)p3, t[i + 3]);
    h = (uint64_t)(p3 >> 64) + c; /* cannot overflow: the high half of a product is < 2^64 - 1 */
    c = 0;
    PED_ADDC(c, t[i + 1], (uint64_t)(p0 >> 64), t[i + 1]);
    PED_ADDC(c, t[i + 2], (uint64_t)(p1 >> 64), t[i + 2]);
    PED_ADDC(c, t[i + 3], (uint64_t)(p2 >> 64), t[i + 3]);
    t[i + 4] = h + c;
  }
  KN(redc_lazy)(r, t);
}
#endif

/* r = a*b/2^256 mod p in [0, 2p), for a, b < 2p. The batch walk keeps its accumulators and
 * differences in [0, 2p) (mul_lazy, sub_lazy), which spares every product its final conditional
 * subtraction; the rest of the code works fully reduced (mul, add, sub). */
KATTR PED_INLINE void KN(sqr_lazy)(uint64_t r[4], const uint64_t a[4]) { KN(mul_lazy)(r, a, a); }

#ifndef PED_ADX_ASM
/* r = a*b/2^256 mod p, fully reduced; a, b < 2p. */
KATTR PED_INLINE void KN(mul)(uint64_t r[4], const uint64_t a[4], const uint64_t b[4]) {
  KN(mul_lazy)(r, a, b);
  KN(reduce)(r, r);
}
#endif

KATTR PED_INLINE void KN(sqr)(uint64_t r[4], const uint64_t a[4]) { KN(mul)(r, a, a); }

/* r = a + b mod p (a, b < p < 2^252, so the sum fits in 256 bits); branch-free. */
KATTR PED_INLINE void KN(add)(uint64_t r[4], const uint64_t a[4], const uint64_t b[4]) {
  uint64_t t[4];
  unsigned char c = 0;
  PED_ADDC(c, a[0], b[0], t[0]);
  PED_ADDC(c, a[1], b[1], t[1]);
  PED_ADDC(c, a[2], b[2], t[2]);
  PED_ADDC(c, a[3], b[3], t[3]);
  KN(reduce)(r, t);
}

/* r = a - b, plus k*p (= k + k*P3*2^192) when that borrows; branch-free. */
KATTR PED_INLINE void KN(sub_plus)(uint64_t r[4], const uint64_t a[4], const uint64_t b[4], const uint64_t k) {
  uint64_t t0, t1, t2, t3;
  unsigned char c = 0;
  PED_SUBB(c, a[0], b[0], t0);
  PED_SUBB(c, a[1], b[1], t1);
  PED_SUBB(c, a[2], b[2], t2);
  PED_SUBB(c, a[3], b[3], t3);
  const uint64_t mask = (uint64_t)0 - (uint64_t)c;
  unsigned char d = 0;
  PED_ADDC(d, t0, k & mask, r[0]);
  PED_ADDC(d, t1, 0, r[1]);
  PED_ADDC(d, t2, 0, r[2]);
  PED_ADDC(d, t3, (k * PED_P3) & mask, r[3]);
}

/* r = a - b mod p, for a, b < p. */
KATTR PED_INLINE void KN(sub)(uint64_t r[4], const uint64_t a[4], const uint64_t b[4]) { KN(sub_plus)(r, a, b, 1); }

/* r = a - b mod p in [0, 2p), for a, b < 2p (the batch walk's range, see mul_lazy). */
KATTR PED_INLINE void KN(sub_lazy)(uint64_t r[4], const uint64_t a[4], const uint64_t b[4]) {
  KN(sub_plus)(r, a, b, 2);
}

KATTR PED_INLINE int KN(is_zero)(const uint64_t a[4]) { return (a[0] | a[1] | a[2] | a[3]) == 0; }

/* a = 0 mod p, for a < 2p: a is 0 or p. */
KATTR PED_INLINE int KN(is_zero_lazy)(const uint64_t a[4]) {
  return KN(is_zero)(a) || ((a[0] ^ 1) | a[1] | a[2] | (a[3] ^ PED_P3)) == 0;
}

KATTR PED_INLINE int KN(eq)(const uint64_t a[4], const uint64_t b[4]) {
  return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3])) == 0;
}

/* 2^768 mod p: turns safegcd's 1/(aR) into Montgomery form, (1/(aR)) R^3 / R = (1/a) R. */
static const uint64_t KN(R3)[4] = {0xcc7177d1406df18eULL, 0x7545706677ffcc06ULL, 0xf47d84f836300018ULL,
                                   0x038e5f79873c0a6dULL};

/* r = 1/a (Montgomery form in and out); a != 0. Safegcd rather than Fermat's 283 dependent
 * products: one inversion per window per batch, so it counts. */
KATTR static void KN(inv)(uint64_t r[4], const uint64_t a[4]) {
  uint64_t plain[4];
  ped_inv_safegcd(plain, a);
  KN(mul)(r, plain, KN(R3));
}

/* Jacobian point for the complete (slow) path: (X, Y, Z), Z = 0 means infinity. */
typedef struct {
  uint64_t X[4], Y[4], Z[4];
} KN(jac);

/* p = 2p on y^2 = x^3 + x + b (a = 1). */
KATTR static void KN(jdbl)(KN(jac) * p) {
  if (KN(is_zero)(p->Z)) return;
  if (KN(is_zero)(p->Y)) {
    memset(p->Z, 0, 32);
    return;
  }
  uint64_t XX[4], YY[4], YYYY[4], ZZ[4], S[4], M[4], t[4];
  KN(sqr)(XX, p->X);
  KN(sqr)(YY, p->Y);
  KN(sqr)(YYYY, YY);
  KN(sqr)(ZZ, p->Z);
  /* S = 4 X YY */
  KN(mul)(S, p->X, YY);
  KN(add)(S, S, S);
  KN(add)(S, S, S);
  /* M = 3 XX + ZZ^2 */
  KN(add)(M, XX, XX);
  KN(add)(M, M, XX);
  KN(sqr)(t, ZZ);
  KN(add)(M, M, t);
  /* Z3 = 2 Y Z */
  KN(mul)(t, p->Y, p->Z);
  KN(add)(p->Z, t, t);
  /* X3 = M^2 - 2S */
  KN(sqr)(t, M);
  KN(sub)(t, t, S);
  KN(sub)(p->X, t, S);
  /* Y3 = M (S - X3) - 8 YYYY */
  KN(sub)(t, S, p->X);
  KN(mul)(t, M, t);
  KN(add)(YYYY, YYYY, YYYY);
  KN(add)(YYYY, YYYY, YYYY);
  KN(add)(YYYY, YYYY, YYYY);
  KN(sub)(p->Y, t, YYYY);
}

/* p += q (q affine, never infinity); handles p = infinity, p = q and p = -q. */
KATTR static void KN(jadd_affine)(KN(jac) * p, const ped_point *q) {
  if (KN(is_zero)(p->Z)) {
    memcpy(p->X, q->x, 32);
    memcpy(p->Y, q->y, 32);
    memcpy(p->Z, KN(ONE), 32);
    return;
  }
  uint64_t Z1Z1[4], U2[4], S2[4], H[4], HH[4], I[4], J[4], r[4], V[4], t[4];
  KN(sqr)(Z1Z1, p->Z);
  KN(mul)(U2, q->x, Z1Z1);
  KN(mul)(S2, q->y, p->Z);
  KN(mul)(S2, S2, Z1Z1);
  KN(sub)(H, U2, p->X);
  KN(sub)(r, S2, p->Y);
  if (KN(is_zero)(H)) {
    if (KN(is_zero)(r)) {
      KN(jdbl)(p);
    } else {
      memset(p->Z, 0, 32);
    }
    return;
  }
  KN(add)(r, r, r);
  KN(sqr)(HH, H);
  KN(add)(I, HH, HH);
  KN(add)(I, I, I);
  KN(mul)(J, H, I);
  KN(mul)(V, p->X, I);
  /* X3 = r^2 - J - 2V */
  KN(sqr)(t, r);
  KN(sub)(t, t, J);
  KN(sub)(t, t, V);
  KN(sub)(t, t, V);
  /* Y3 = r (V - X3) - 2 Y1 J */
  KN(sub)(V, V, t);
  KN(mul)(V, r, V);
  KN(mul)(J, p->Y, J);
  KN(add)(J, J, J);
  KN(sub)(p->Y, V, J);
  memcpy(p->X, t, 32);
  /* Z3 = (Z1 + H)^2 - Z1Z1 - HH = 2 Z1 H */
  KN(mul)(t, p->Z, H);
  KN(add)(p->Z, t, t);
}

/* Parses one pair into the window indices of its 504-bit scalar. */
KATTR PED_INLINE void KN(windows)(const uint8_t *x, const uint8_t *y, uint32_t *idx, size_t stride) {
  uint64_t s[8];
  uint64_t x0 = ped_load_be64(x + 24), x1 = ped_load_be64(x + 16), x2 = ped_load_be64(x + 8),
           x3 = ped_load_be64(x);
  uint64_t y0 = ped_load_be64(y + 24), y1 = ped_load_be64(y + 16), y2 = ped_load_be64(y + 8),
           y3 = ped_load_be64(y);
  s[0] = x0;
  s[1] = x1;
  s[2] = x2;
  s[3] = x3 | (y0 << 60);
  s[4] = (y0 >> 4) | (y1 << 60);
  s[5] = (y1 >> 4) | (y2 << 60);
  s[6] = (y2 >> 4) | (y3 << 60);
  s[7] = y3 >> 4;
  for (int j = 0; j < PED_NW; j++) {
    const unsigned pos = PED_WINDOW_START(j), bits = PED_WINDOW_BITS(j);
    const unsigned limb = pos >> 6, off = pos & 63;
    uint64_t v = s[limb] >> off;
    if (off + bits > 64 && limb < 7) v |= s[limb + 1] << (64 - off);
    idx[(size_t)j * stride] = (uint32_t)(v & ((1u << bits) - 1));
  }
}

KATTR PED_INLINE void KN(store_x)(uint8_t *out, const uint64_t xm[4]) {
  static const uint64_t one[4] = {1, 0, 0, 0};
  uint64_t x[4];
  KN(mul)(x, xm, one);
  ped_store_be64(out, x[3]);
  ped_store_be64(out + 8, x[2]);
  ped_store_be64(out + 16, x[1]);
  ped_store_be64(out + 24, x[0]);
}

/* A call's pairs: pair i is (xs + xstep * i, ys + ystep * i); a step of 0 repeats one value (the
 * constant of a one-sided call). */
typedef struct {
  const uint8_t *xs, *ys;
  size_t xstep, ystep;
} KN(pairs);

/* The complete path: Jacobian additions, then one inversion per hash batched across n (<= PED_SMALL)
 * pairs. Always correct; used for small calls and whenever the fast path meets a degenerate
 * addition. */
KATTR static int KN(hash_small)(KN(pairs) in, uint8_t *out, size_t n) {
  KN(jac) acc[PED_SMALL];
  uint64_t pre[PED_SMALL][4];
  uint32_t idx[PED_NW];
  for (size_t i = 0; i < n; i++) {
    KN(windows)(in.xs + in.xstep * i, in.ys + in.ystep * i, idx, 1);
    KN(jac) *p = &acc[i];
    const ped_point *q = &ped_tables[0][idx[0]];
    memcpy(p->X, q->x, 32);
    memcpy(p->Y, q->y, 32);
    memcpy(p->Z, KN(ONE), 32);
    for (int j = 1; j < PED_NW; j++) {
      if (idx[j]) KN(jadd_affine)(p, &ped_tables[j][idx[j]]);
    }
    if (KN(is_zero)(p->Z)) return -1;
  }
  /* Batch the 1/Z^2 over the n results. */
  uint64_t prod[4], inv[4], zz[4], t[4];
  memcpy(prod, KN(ONE), 32);
  for (size_t i = 0; i < n; i++) {
    memcpy(pre[i], prod, 32);
    KN(sqr)(zz, acc[i].Z);
    KN(mul)(prod, prod, zz);
  }
  KN(inv)(inv, prod);
  for (size_t i = n; i-- > 0;) {
    KN(mul)(t, inv, pre[i]); /* 1/Z_i^2 */
    KN(sqr)(zz, acc[i].Z);
    KN(mul)(inv, inv, zz);
    KN(mul)(t, acc[i].X, t);
    KN(store_x)(out + 32 * i, t);
  }
  return 0;
}

/* The fast path for one batch of n <= PED_BATCH pairs: affine accumulators, and per window one
 * shared inversion of all the x-differences (Montgomery's trick). */
typedef struct {
  uint64_t ax[PED_BATCH][4];
  uint64_t ay[PED_BATCH][4];
  uint64_t pre[PED_BATCH][4];
  uint64_t dx[PED_BATCH][4];
  uint32_t idx[PED_NW][PED_BATCH];
  uint8_t bad[PED_BATCH];
  uint8_t dead[PED_BATCH]; /* in this window: nothing to add (index skipped, or bad) */
} KN(scratch);

/* Accumulator i += q, given inv = 1/(product of the x-differences up to and including i's in its
 * chain); inv becomes the same for the chain's previous element. Accumulators, differences and
 * running products stay in [0, 2p) (mul_lazy). */
KATTR PED_INLINE void KN(add_one)(KN(scratch) * sc, const ped_point *q, uint64_t inv[4], size_t i) {
  uint64_t di[4], lam[4], x3[4], t[4];
  KN(mul_lazy)(di, inv, sc->pre[i]);
  KN(mul_lazy)(inv, inv, sc->dx[i]);
  KN(sub_lazy)(t, q->y, sc->ay[i]);
  KN(mul_lazy)(lam, t, di);
  KN(sqr_lazy)(x3, lam);
  KN(sub_lazy)(x3, x3, sc->ax[i]);
  KN(sub_lazy)(x3, x3, q->x);
  KN(sub_lazy)(t, sc->ax[i], x3);
  KN(mul_lazy)(t, lam, t);
  KN(sub_lazy)(sc->ay[i], t, sc->ay[i]);
  memcpy(sc->ax[i], x3, 32);
}

/* add_one for two accumulators of different chains, step by step in turn. */
KATTR PED_INLINE void KN(add_pair)(KN(scratch) * sc, const ped_point *q, const ped_point *r, uint64_t inv_q[4],
                                   uint64_t inv_r[4], size_t i, size_t k) {
  uint64_t di[4], dk[4], lam[4], lak[4], x3[4], xk[4], t[4], u[4];
  KN(mul_lazy)(di, inv_q, sc->pre[i]);
  KN(mul_lazy)(dk, inv_r, sc->pre[k]);
  KN(mul_lazy)(inv_q, inv_q, sc->dx[i]);
  KN(mul_lazy)(inv_r, inv_r, sc->dx[k]);
  KN(sub_lazy)(t, q->y, sc->ay[i]);
  KN(sub_lazy)(u, r->y, sc->ay[k]);
  KN(mul_lazy)(lam, t, di);
  KN(mul_lazy)(lak, u, dk);
  KN(sqr_lazy)(x3, lam);
  KN(sqr_lazy)(xk, lak);
  KN(sub_lazy)(x3, x3, sc->ax[i]);
  KN(sub_lazy)(xk, xk, sc->ax[k]);
  KN(sub_lazy)(x3, x3, q->x);
  KN(sub_lazy)(xk, xk, r->x);
  KN(sub_lazy)(t, sc->ax[i], x3);
  KN(sub_lazy)(u, sc->ax[k], xk);
  KN(mul_lazy)(t, lam, t);
  KN(mul_lazy)(u, lak, u);
  KN(sub_lazy)(sc->ay[i], t, sc->ay[i]);
  KN(sub_lazy)(sc->ay[k], u, sc->ay[k]);
  memcpy(sc->ax[i], x3, 32);
  memcpy(sc->ax[k], xk, 32);
}

/* Which windows a batch adds, and where its accumulators start: with `start` NULL, at window 0's
 * entry (S folded in), adding windows 1..end-1; otherwise at *start, adding windows first..end-1
 * (window 0's entry even where its index is 0: that entry is S). A one-sided call starts at the
 * constant's share (ped_const_point) and adds only the other input's windows: half the additions. */
typedef struct {
  const ped_point *start;
  int first, end;
} KN(walk);

KATTR static int KN(hash_batch)(KN(scratch) * sc, KN(pairs) in, KN(walk) w, uint8_t *out, size_t n) {
  for (size_t i = 0; i < n; i++)
    KN(windows)(in.xs + in.xstep * i, in.ys + in.ystep * i, &sc->idx[0][i], PED_BATCH);
  memset(sc->bad, 0, n);
  for (size_t i = 0; i < n; i++) {
    const ped_point *q = w.start ? w.start : &ped_tables[0][sc->idx[0][i]];
    memcpy(sc->ax[i], q->x, 32);
    memcpy(sc->ay[i], q->y, 32);
  }
  int any_bad = 0;
  for (int j = w.first; j < w.end; j++) {
    const ped_point *tab = ped_tables[j];
    const uint32_t *idx = sc->idx[j];
    /* Index 0 is the identity, skipped, except in window 0, whose entry 0 is S. */
    const uint32_t skip = j == 0 ? UINT32_MAX : 0;
    /* Two product chains (even and odd i), so that consecutive products do not wait for each
     * other: a product's latency is ~1.6 times its throughput cost. */
    uint64_t prod[2][4];
    memcpy(prod[0], KN(ONE), 32);
    memcpy(prod[1], KN(ONE), 32);
    int live = 0;
    for (size_t i = 0; i < n; i++) {
      if (i + 8 < n) __builtin_prefetch(&tab[idx[i + 8]]);
      const uint32_t k = idx[i];
      sc->dead[i] = k == skip || sc->bad[i];
      if (sc->dead[i]) continue;
      KN(sub_lazy)(sc->dx[i], tab[k].x, sc->ax[i]);
      if (KN(is_zero_lazy)(sc->dx[i])) {
        /* Doubling or cancellation: leave it to the complete path. */
        sc->bad[i] = sc->dead[i] = 1;
        any_bad = 1;
        continue;
      }
      memcpy(sc->pre[i], prod[i & 1], 32);
      KN(mul_lazy)(prod[i & 1], prod[i & 1], sc->dx[i]);
      live = 1;
    }
    if (!live) continue;
    /* One inversion for both chains: 1/prod0 = prod1/(prod0 prod1) and the other way round. */
    uint64_t both[4], inv_both[4], inv[2][4];
    KN(mul)(both, prod[0], prod[1]); /* fully reduced: inv takes a < p */
    KN(inv)(inv_both, both);
    KN(mul_lazy)(inv[0], inv_both, prod[1]);
    KN(mul_lazy)(inv[1], inv_both, prod[0]);
    const uint32_t *nidx = j + 1 < w.end ? sc->idx[j + 1] : NULL;
    const ped_point *ntab = j + 1 < w.end ? ped_tables[j + 1] : NULL;
    /* Backwards in pairs (one element of each chain), the two additions' steps interleaved so
     * that each waits on its own previous step while the other's runs. */
    for (size_t i = n; i-- > 0;) {
      if (nidx) __builtin_prefetch(&ntab[nidx[i]]);
      if (i > 0 && !sc->dead[i] && !sc->dead[i - 1]) {
        if (nidx) __builtin_prefetch(&ntab[nidx[i - 1]]);
        KN(add_pair)(sc, &tab[idx[i]], &tab[idx[i - 1]], inv[i & 1], inv[(i - 1) & 1], i, i - 1);
        i--;
      } else if (!sc->dead[i]) {
        KN(add_one)(sc, &tab[idx[i]], inv[i & 1], i);
      }
    }
  }
  for (size_t i = 0; i < n; i++) {
    if (!sc->bad[i]) KN(store_x)(out + 32 * i, sc->ax[i]);
  }
  if (any_bad) {
    for (size_t i = 0; i < n; i++) {
      const KN(pairs) one = {in.xs + in.xstep * i, in.ys + in.ystep * i, 0, 0};
      if (sc->bad[i] && KN(hash_small)(one, out + 32 * i, 1) != 0) return -1;
    }
  }
  return 0;
}

/* n pairs in batches of PED_BATCH (the complete path for a call or a remainder below PED_SMALL). */
KATTR static int KN(hash_walk)(KN(pairs) in, KN(walk) w, uint8_t *out, size_t n) {
  if (n < PED_SMALL) return n ? KN(hash_small)(in, out, n) : 0;
  KN(scratch) *sc = (KN(scratch) *)malloc(sizeof(KN(scratch)));
  if (!sc) return -1;
  int rc = 0;
  size_t done = 0;
  while (rc == 0 && done < n) {
    size_t m = n - done;
    if (m > PED_BATCH) {
      /* Keep the last batch at least PED_SMALL pairs, or split the remainder evenly. */
      m = (m < PED_BATCH + PED_SMALL) ? m / 2 : PED_BATCH;
    }
    const KN(pairs) part = {in.xs + in.xstep * done, in.ys + in.ystep * done, in.xstep, in.ystep};
    rc = m < PED_SMALL ? KN(hash_small)(part, out + 32 * done, m) : KN(hash_batch)(sc, part, w, out + 32 * done, m);
    done += m;
  }
  free(sc);
  return rc;
}

KATTR static int KN(hash)(const uint8_t *xs, const uint8_t *ys, uint8_t *out, size_t n) {
  const KN(pairs) in = {xs, ys, 32, 32};
  const KN(walk) w = {NULL, 1, PED_NW};
  return KN(hash_walk)(in, w, out, n);
}

/* One-sided pairs (ped_const_kernel_fn): H(v_i, c) when c_is_y, else H(c, v_i). The accumulators
 * start at the constant's share and add only v's windows (half of PED_NW: 16 of 32 at 16 bits). */
KATTR static int KN(hash_const)(const uint8_t *vs, const uint8_t *c, int c_is_y, uint8_t *out, size_t n) {
  const KN(pairs) in = c_is_y ? (KN(pairs)){vs, c, 32, 0} : (KN(pairs)){c, vs, 0, 32};
  const KN(walk) all = {NULL, 1, PED_NW};
  ped_point start;
  /* Small calls take the complete path anyway; a constant whose share is the identity (c = 0 as
   * y) has no point to start from: both take every window. */
  if (n < PED_SMALL || !ped_const_point(c, c_is_y, &start)) return KN(hash_walk)(in, all, out, n);
  const KN(walk) w = c_is_y ? (KN(walk)){&start, 0, PED_NW_X} : (KN(walk)){&start, PED_NW_X, PED_NW};
  return KN(hash_walk)(in, w, out, n);
}

#ifdef PED_SCALAR_ADX

int ped_hash_adx(const uint8_t *xs, const uint8_t *ys, uint8_t *out, size_t n) { return KN(hash)(xs, ys, out, n); }
int ped_hash_adx_const(const uint8_t *vs, const uint8_t *c, int c_is_y, uint8_t *out, size_t n) {
  return KN(hash_const)(vs, c, c_is_y, out, n);
}

#else

int ped_hash_portable(const uint8_t *xs, const uint8_t *ys, uint8_t *out, size_t n) { return KN(hash)(xs, ys, out, n); }
int ped_hash_portable_const(const uint8_t *vs, const uint8_t *c, int c_is_y, uint8_t *out, size_t n) {
  return KN(hash_const)(vs, c, c_is_y, out, n);
}

/* ---- the portable build's arithmetic for building the tables (engine.c) and the constants ---- */

void ped_to_mont(uint64_t r[4], const uint64_t a[4]) {
  /* R^2 mod p by doubling R mod p 256 times. */
  static uint64_t r2[4];
  static int have_r2;
  if (!have_r2) {
    memcpy(r2, KN(ONE), 32);
    for (int i = 0; i < 256; i++) KN(add)(r2, r2, r2);
    have_r2 = 1;
  }
  KN(mul)(r, a, r2);
}

void ped_affine_double(ped_point *q, const ped_point *p) {
  uint64_t num[4], den[4], lam[4], t[4], x3[4];
  KN(sqr)(num, p->x);
  KN(add)(t, num, num);
  KN(add)(num, num, t);
  KN(add)(num, num, KN(ONE)); /* 3x^2 + a, a = 1 */
  KN(add)(den, p->y, p->y);
  KN(inv)(den, den);
  KN(mul)(lam, num, den);
  KN(sqr)(x3, lam);
  KN(sub)(x3, x3, p->x);
  KN(sub)(x3, x3, p->x);
  KN(sub)(t, p->x, x3);
  KN(mul)(t, lam, t);
  KN(sub)(q->y, t, p->y);
  memcpy(q->x, x3, 32);
}

int ped_on_curve(const ped_point *p, const uint64_t beta_m[4]) {
  uint64_t l[4], r[4];
  KN(sqr)(l, p->y);
  KN(sqr)(r, p->x);
  KN(mul)(r, r, p->x);
  KN(add)(r, r, p->x);
  KN(add)(r, r, beta_m);
  return KN(eq)(l, r);
}

int ped_add_fixed(ped_point *dst, const ped_point *a, const ped_point *b, size_t n, uint64_t (*tmp)[4]) {
  uint64_t prod[4], inv[4];
  memcpy(prod, KN(ONE), 32);
  for (size_t i = 0; i < n; i++) {
    uint64_t dx[4];
    KN(sub)(dx, b->x, a[i].x);
    if (KN(is_zero)(dx)) return -1;
    memcpy(tmp[i], prod, 32);
    KN(mul)(prod, prod, dx);
  }
  KN(inv)(inv, prod);
  for (size_t i = n; i-- > 0;) {
    uint64_t dx[4], di[4], lam[4], x3[4], t[4];
    KN(sub)(dx, b->x, a[i].x);
    KN(mul)(di, inv, tmp[i]);
    KN(mul)(inv, inv, dx);
    KN(sub)(t, b->y, a[i].y);
    KN(mul)(lam, t, di);
    KN(sqr)(x3, lam);
    KN(sub)(x3, x3, a[i].x);
    KN(sub)(x3, x3, b->x);
    KN(sub)(t, a[i].x, x3);
    KN(mul)(t, lam, t);
    KN(sub)(dst[i].y, t, a[i].y);
    memcpy(dst[i].x, x3, 32);
  }
  return 0;
}

void ped_mont256_to_260(uint64_t out[4], const uint64_t in[4]) {
  uint64_t t[4];
  KN(add)(t, in, in);
  KN(add)(t, t, t);
  KN(add)(t, t, t);
  KN(add)(out, t, t);
}

void ped_to_mont260(uint64_t out[4], const uint64_t in[4]) {
  uint64_t t[4];
  ped_to_mont(t, in);
  ped_mont256_to_260(out, t);
}

int ped_const_point(const uint8_t *c, int c_is_y, ped_point *out) {
  static const uint8_t zero[32];
  uint32_t idx[PED_NW];
  KN(windows)(c_is_y ? zero : c, c_is_y ? c : zero, idx, 1);
  KN(jac) p;
  memset(&p, 0, sizeof p); /* Z = 0: the identity */
  const int first = c_is_y ? PED_NW_X : 0, end = c_is_y ? PED_NW : PED_NW_X;
  for (int j = first; j < end; j++) {
    if (idx[j] || j == 0) KN(jadd_affine)(&p, &ped_tables[j][idx[j]]); /* entry 0 of window 0 is S */
  }
  if (KN(is_zero)(p.Z)) return 0;
  uint64_t zi[4], zi2[4], zi3[4];
  KN(inv)(zi, p.Z);
  KN(sqr)(zi2, zi);
  KN(mul)(zi3, zi2, zi);
  KN(mul)(out->x, p.X, zi2);
  KN(mul)(out->y, p.Y, zi3);
  return 1;
}

#endif /* PED_SCALAR_ADX */

#endif /* the ADX build on x86-64 */
