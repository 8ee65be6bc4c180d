/*
 * AVX-512 IFMA kernel: eight hashes per vector, field elements as five 52-bit limbs (one limb of
 * eight elements per zmm register), Montgomery form with R = 2^260, multiplications with
 * vpmadd52luq/vpmadd52huq. Same algorithm as the scalar kernel (fixed-base windows, affine
 * additions, one shared inversion per window per batch) and the same tables, converted to the
 * R = 2^260 domain as they are loaded. Only called when cpuid and the OS report AVX-512F and IFMA.
 * One-sided pairs (core.h) run the same batches over half the windows plus one constant point.
 *
 * Per window step a batch of IBATCH pairs makes a forward pass (x of the table entries, the
 * differences dx and IG running products of them), one inversion of those products, and a backward
 * pass (the inverses of each dx, then the affine addition). The inversion multiplies its eight
 * lanes together and inverts that one value in scalar code (safegcd), a few thousand cycles where a
 * vector Fermat inversion would be a chain of ~280 dependent products.
 * Table entries are read with plain 256-bit loads and a transpose rather than vpgatherqq, and the
 * next step's entries are prefetched throughout a step: the tables (120 MiB at 16-bit windows) are
 * mostly out of cache.
 *
 * Hashes public data only: not constant-time, by design (see core.h).
 *
 * Value bounds (all non-negative, limbs normalised to 52 bits before any multiplication): loaded
 * table values < 16p; a product of inputs below a*p and b*p with a*b <= 256 is below 2p (since
 * p < 2^252); vsub(a, b, K) = a + K*p - b needs b <= K*p; vfold() takes any non-negative value with
 * limbs 0..3 in (-2^55, 2^55) and limb 4 in (-2^62, 2^62), normalised or not, below 3p.
 * Accumulators (ax, ay) stay below 3p. In an addition: dx = qx + 3p - ax and t = qy + 3p - ay are
 * below 19p, all products below 2p, x3 = lam^2 + 19p - ax - qx below 21p before its fold, and
 * y3 = lam*(ax + 3p - x3) + 3p - ay below 5p before its fold.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "kernel_scalar.h"

#ifdef PED_HAVE_X86
#include <cpuid.h>
#include <immintrin.h>

#define IATTR __attribute__((target("avx512f,avx512ifma")))
#define IINLINE static inline __attribute__((always_inline)) IATTR
#define M52 ((1ULL << 52) - 1)
#define IBATCH 1024
#define IGROUPS (IBATCH / 8)
/* Groups of eight lanes handled together (and product chains): four give the out-of-order core
 * independent chains to overlap; two give it too few, and eight spill registers. */
#define IG_LOG 2
#define IG (1 << IG_LOG)

typedef struct {
  __m512i l[5];
} vfe;

static int ifma_failed;
static pthread_once_t ifma_once = PTHREAD_ONCE_INIT;

/* p and small multiples, as 52-bit limbs. */
static uint64_t KP[20][5];
/* 2^260 mod p (Montgomery one) and 2^780 mod p as 52-bit limbs. */
static uint64_t ONE260[5], R3_260[5];

static void split52(uint64_t out[5], const uint64_t w[4]) {
  out[0] = w[0] & M52;
  out[1] = ((w[0] >> 52) | (w[1] << 12)) & M52;
  out[2] = ((w[1] >> 40) | (w[2] << 24)) & M52;
  out[3] = ((w[2] >> 28) | (w[3] << 36)) & M52;
  out[4] = w[3] >> 16;
}

static void build_ifma(void) {
  if (ped_init() != 0) {
    ifma_failed = 1;
    return;
  }
  for (int k = 0; k < 20; k++) {
    /* K*p for K = 0..19 as 4x64 limbs, then split. */
    uint64_t w[4];
    unsigned __int128 acc = 0;
    for (int i = 0; i < 4; i++) {
      acc += (unsigned __int128)PED_P[i] * (uint64_t)k;
      w[i] = (uint64_t)acc;
      acc >>= 64;
    }
    split52(KP[k], w);
  }
  uint64_t one[4] = {1, 0, 0, 0}, one260[4], r2[4], r3[4];
  ped_to_mont260(one260, one);
  split52(ONE260, one260);
  ped_to_mont260(r2, one260);
  ped_to_mont260(r3, r2);
  split52(R3_260, r3);
}

IINLINE __m512i bc(uint64_t v) { return _mm512_set1_epi64((long long)v); }

IINLINE vfe vconst(const uint64_t c[5]) {
  vfe r;
  for (int i = 0; i < 5; i++) r.l[i] = bc(c[i]);
  return r;
}

/* Montgomery product a*b/2^260 (see the bounds above). */
IINLINE vfe vmul(const vfe *a, const vfe *b) {
  const __m512i mask = bc(M52), p3 = bc(17ULL << 36), zero = _mm512_setzero_si512();
  __m512i t0 = zero, t1 = zero, t2 = zero, t3 = zero, t4 = zero, t5;
  const __m512i a0 = a->l[0], a1 = a->l[1], a2 = a->l[2], a3 = a->l[3], a4 = a->l[4];
  for (int i = 0; i < 5; i++) {
    const __m512i bi = b->l[i];
    t5 = zero;
    t0 = _mm512_madd52lo_epu64(t0, a0, bi);
    t1 = _mm512_madd52hi_epu64(t1, a0, bi);
    t1 = _mm512_madd52lo_epu64(t1, a1, bi);
    t2 = _mm512_madd52hi_epu64(t2, a1, bi);
    t2 = _mm512_madd52lo_epu64(t2, a2, bi);
    t3 = _mm512_madd52hi_epu64(t3, a2, bi);
    t3 = _mm512_madd52lo_epu64(t3, a3, bi);
    t4 = _mm512_madd52hi_epu64(t4, a3, bi);
    t4 = _mm512_madd52lo_epu64(t4, a4, bi);
    t5 = _mm512_madd52hi_epu64(t5, a4, bi);
    /* m = -t0 mod 2^52 (the Montgomery factor is -1 because p = 1 mod 2^52) */
    const __m512i m = _mm512_and_si512(_mm512_sub_epi64(zero, t0), mask);
    t0 = _mm512_add_epi64(t0, m);
    t3 = _mm512_madd52lo_epu64(t3, m, p3);
    t4 = _mm512_madd52hi_epu64(t4, m, p3);
    t4 = _mm512_add_epi64(t4, _mm512_and_si512(_mm512_slli_epi64(m, 43), mask));
    t5 = _mm512_add_epi64(t5, _mm512_srli_epi64(m, 9));
    t1 = _mm512_add_epi64(t1, _mm512_srli_epi64(t0, 52));
    t0 = t1;
    t1 = t2;
    t2 = t3;
    t3 = t4;
    t4 = t5;
  }
  vfe r;
  t1 = _mm512_add_epi64(t1, _mm512_srli_epi64(t0, 52));
  r.l[0] = _mm512_and_si512(t0, mask);
  t2 = _mm512_add_epi64(t2, _mm512_srli_epi64(t1, 52));
  r.l[1] = _mm512_and_si512(t1, mask);
  t3 = _mm512_add_epi64(t3, _mm512_srli_epi64(t2, 52));
  r.l[2] = _mm512_and_si512(t2, mask);
  t4 = _mm512_add_epi64(t4, _mm512_srli_epi64(t3, 52));
  r.l[3] = _mm512_and_si512(t3, mask);
  r.l[4] = t4;
  return r;
}

/* Two independent Montgomery products, interleaved so their dependency chains overlap. */
IINLINE void vmul2(vfe *ra, const vfe *a, const vfe *b, vfe *rc, const vfe *c, const vfe *d) {
  const __m512i mask = bc(M52), p3 = bc(17ULL << 36), zero = _mm512_setzero_si512();
  __m512i t0 = zero, t1 = zero, t2 = zero, t3 = zero, t4 = zero, t5;
  __m512i u0 = zero, u1 = zero, u2 = zero, u3 = zero, u4 = zero, u5;
  const __m512i a0 = a->l[0], a1 = a->l[1], a2 = a->l[2], a3 = a->l[3], a4 = a->l[4];
  const __m512i c0 = c->l[0], c1 = c->l[1], c2 = c->l[2], c3 = c->l[3], c4 = c->l[4];
  for (int i = 0; i < 5; i++) {
    const __m512i bi = b->l[i], di = d->l[i];
    t5 = zero;
    u5 = zero;
    t0 = _mm512_madd52lo_epu64(t0, a0, bi);
    u0 = _mm512_madd52lo_epu64(u0, c0, di);
    t1 = _mm512_madd52hi_epu64(t1, a0, bi);
    u1 = _mm512_madd52hi_epu64(u1, c0, di);
    const __m512i m = _mm512_and_si512(_mm512_sub_epi64(zero, t0), mask);
    const __m512i n = _mm512_and_si512(_mm512_sub_epi64(zero, u0), mask);
    t1 = _mm512_madd52lo_epu64(t1, a1, bi);
    u1 = _mm512_madd52lo_epu64(u1, c1, di);
    t0 = _mm512_add_epi64(t0, m);
    u0 = _mm512_add_epi64(u0, n);
    t2 = _mm512_madd52hi_epu64(t2, a1, bi);
    u2 = _mm512_madd52hi_epu64(u2, c1, di);
    t1 = _mm512_add_epi64(t1, _mm512_srli_epi64(t0, 52));
    u1 = _mm512_add_epi64(u1, _mm512_srli_epi64(u0, 52));
    t2 = _mm512_madd52lo_epu64(t2, a2, bi);
    u2 = _mm512_madd52lo_epu64(u2, c2, di);
    t3 = _mm512_madd52hi_epu64(t3, a2, bi);
    u3 = _mm512_madd52hi_epu64(u3, c2, di);
    t3 = _mm512_madd52lo_epu64(t3, a3, bi);
    u3 = _mm512_madd52lo_epu64(u3, c3, di);
    t4 = _mm512_madd52hi_epu64(t4, a3, bi);
    u4 = _mm512_madd52hi_epu64(u4, c3, di);
    t4 = _mm512_madd52lo_epu64(t4, a4, bi);
    u4 = _mm512_madd52lo_epu64(u4, c4, di);
    t5 = _mm512_madd52hi_epu64(t5, a4, bi);
    u5 = _mm512_madd52hi_epu64(u5, c4, di);
    t3 = _mm512_madd52lo_epu64(t3, m, p3);
    u3 = _mm512_madd52lo_epu64(u3, n, p3);
    t4 = _mm512_madd52hi_epu64(t4, m, p3);
    u4 = _mm512_madd52hi_epu64(u4, n, p3);
    t4 = _mm512_add_epi64(t4, _mm512_and_si512(_mm512_slli_epi64(m, 43), mask));
    u4 = _mm512_add_epi64(u4, _mm512_and_si512(_mm512_slli_epi64(n, 43), mask));
    t5 = _mm512_add_epi64(t5, _mm512_srli_epi64(m, 9));
    u5 = _mm512_add_epi64(u5, _mm512_srli_epi64(n, 9));
    t0 = t1, t1 = t2, t2 = t3, t3 = t4, t4 = t5;
    u0 = u1, u1 = u2, u2 = u3, u3 = u4, u4 = u5;
  }
  t1 = _mm512_add_epi64(t1, _mm512_srli_epi64(t0, 52));
  u1 = _mm512_add_epi64(u1, _mm512_srli_epi64(u0, 52));
  ra->l[0] = _mm512_and_si512(t0, mask);
  rc->l[0] = _mm512_and_si512(u0, mask);
  t2 = _mm512_add_epi64(t2, _mm512_srli_epi64(t1, 52));
  u2 = _mm512_add_epi64(u2, _mm512_srli_epi64(u1, 52));
  ra->l[1] = _mm512_and_si512(t1, mask);
  rc->l[1] = _mm512_and_si512(u1, mask);
  t3 = _mm512_add_epi64(t3, _mm512_srli_epi64(t2, 52));
  u3 = _mm512_add_epi64(u3, _mm512_srli_epi64(u2, 52));
  ra->l[2] = _mm512_and_si512(t2, mask);
  rc->l[2] = _mm512_and_si512(u2, mask);
  t4 = _mm512_add_epi64(t4, _mm512_srli_epi64(t3, 52));
  u4 = _mm512_add_epi64(u4, _mm512_srli_epi64(u3, 52));
  ra->l[3] = _mm512_and_si512(t3, mask);
  rc->l[3] = _mm512_and_si512(u3, mask);
  ra->l[4] = t4;
  rc->l[4] = u4;
}

/* Signed carry normalisation of limbs in (-2^62, 2^62) holding a non-negative value. */
IINLINE void vnorm(__m512i *l) {
  const __m512i mask = bc(M52);
  for (int i = 0; i < 4; i++) {
    l[i + 1] = _mm512_add_epi64(l[i + 1], _mm512_srai_epi64(l[i], 52));
    l[i] = _mm512_and_si512(l[i], mask);
  }
}

/* a + K*p - b, normalised. */
IINLINE vfe vsub(const vfe *a, const vfe *b, int k) {
  vfe r;
  for (int i = 0; i < 5; i++) r.l[i] = _mm512_sub_epi64(_mm512_add_epi64(a->l[i], bc(KP[k][i])), b->l[i]);
  vnorm(r.l);
  return r;
}

/* Reduces a non-negative value to below 3p and normalises it. The limbs need not be normalised:
 * limbs 0..3 in (-2^55, 2^55), limb 4 in (-2^62, 2^62). With h = l4 >> 43 (arithmetic, |h| < 2^19),
 * v = lo + h*2^251 where lo keeps l4 mod 2^43, in (-2^212, 2^251 + 2^212); as 2^251 = -(17*2^192 + 1)
 * mod p, v = lo + p - h*(17*2^192 + 1) mod p, which lies in (p - 2^216, 2p + 2^216): positive and
 * below 3p. Then one carry pass. */
IINLINE void vfold(vfe *v) {
  const __m512i h = _mm512_srai_epi64(v->l[4], 43);
  v->l[4] = _mm512_add_epi64(_mm512_and_si512(v->l[4], bc((1ULL << 43) - 1)), bc(1ULL << 43));
  v->l[0] = _mm512_sub_epi64(_mm512_add_epi64(v->l[0], bc(1)), h);
  v->l[3] = _mm512_sub_epi64(_mm512_add_epi64(v->l[3], bc(17ULL << 36)),
                             _mm512_add_epi64(_mm512_slli_epi64(h, 40), _mm512_slli_epi64(h, 36)));
  vnorm(v->l);
}

/* Fully reduces lane values < 2^253 (below 2p) to 4x64 limbs below p. */
static void lane_to_u64(uint64_t w[4], const uint64_t l[5]) {
  w[0] = l[0] | (l[1] << 52);
  w[1] = (l[1] >> 12) | (l[2] << 40);
  w[2] = (l[2] >> 24) | (l[3] << 28);
  w[3] = (l[3] >> 36) | (l[4] << 16);
  for (int rep = 0; rep < 2; rep++) {
    uint64_t s[4];
    unsigned __int128 d = (unsigned __int128)w[0] - PED_P[0];
    s[0] = (uint64_t)d;
    for (int i = 1; i < 4; i++) {
      d = (unsigned __int128)w[i] - PED_P[i] - (uint64_t)((d >> 64) & 1);
      s[i] = (uint64_t)d;
    }
    if (!((d >> 64) & 1)) memcpy(w, s, 32);
  }
}

/* Swaps lanes i and i ^ k (k = 1, 2 or 4) of every limb. */
IINLINE vfe vswap(const vfe *a, int k) {
  vfe r;
  for (int i = 0; i < 5; i++)
    r.l[i] = k == 1   ? _mm512_permutex_epi64(a->l[i], _MM_SHUFFLE(2, 3, 0, 1))
             : k == 2 ? _mm512_permutex_epi64(a->l[i], _MM_SHUFFLE(1, 0, 3, 2))
                      : _mm512_shuffle_i64x2(a->l[i], a->l[i], _MM_SHUFFLE(1, 0, 3, 2));
  return r;
}

/* The eight lanes' inverses (Montgomery form in and out): the lanes are multiplied together in a
 * tree of lane swaps (b = a0a1.., c = a0a1a2a3.., d = a0..a7 in every lane), that product inverted
 * once by ped_inv_safegcd and the tree walked back down (1/c = (1/d)*c', and so on, c' being c
 * with its halves swapped). Seven dependent products plus a scalar safegcd: a few thousand cycles,
 * where a vector Fermat inversion was ~280 dependent products. Returns 1 when some lane is 0 mod p. */
static IATTR int vinv(vfe *r, const vfe *a) {
  vfe s = vswap(a, 1);
  const vfe b = vmul(a, &s);
  s = vswap(&b, 2);
  const vfe c = vmul(&b, &s);
  s = vswap(&c, 4);
  const vfe d = vmul(&c, &s);
  uint64_t l[5], w[4], z[4];
  for (int i = 0; i < 5; i++) l[i] = (uint64_t)_mm_cvtsi128_si64(_mm512_castsi512_si128(d.l[i]));
  lane_to_u64(w, l); /* d = D*2^260 mod p for the product D */
  if (ped_inv_safegcd(z, w)) return 1;
  /* z = 1/(D*2^260), so z*2^780/2^260 = 2^260/D, 1/D in Montgomery form */
  split52(l, z);
  vfe e = vconst(l);
  const vfe r3 = vconst(R3_260);
  e = vmul(&e, &r3);
  s = vswap(&c, 4);
  e = vmul(&e, &s);
  s = vswap(&b, 2);
  e = vmul(&e, &s);
  s = vswap(a, 1);
  *r = vmul(&e, &s);
  return 0;
}

/* Loads the x or y coordinate (word offset 0 or 4) of the eight entries idx[0..7] of a shared table.
 * An entry holds e = v*2^256 mod p; 16e = v*2^260 (mod p) is the same value in this kernel's domain,
 * so the 256-bit e is split into 52-bit limbs shifted by four bits: a value below 16p.
 * Eight 256-bit loads and a 4x64 by 8 transpose: far cheaper than four vpgatherqq (one load each
 * per lane) on Zen 5, where the gathers cost a sixth of the kernel's time. */
IINLINE vfe vgather(const ped_point *tab, const uint16_t *idx, int word) {
  __m512i r[4];
  for (int j = 0; j < 4; j++) {
    /* r[j] = the four words of lane j, then those of lane j + 4 */
    const __m256i lo = _mm256_loadu_si256((const __m256i *)((const uint64_t *)&tab[idx[j]] + word));
    const __m256i hi = _mm256_loadu_si256((const __m256i *)((const uint64_t *)&tab[idx[j + 4]] + word));
    r[j] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
  /* u0 = a0 b0 a2 b2 | e0 f0 e2 f2, u1 = a1 b1 a3 b3 | e1 f1 e3 f3 (lanes a..h, words 0..3), and
   * u2, u3 likewise for lanes c, d, g, h; then word k of all lanes from 128-bit pieces of two u. */
  const __m512i u0 = _mm512_unpacklo_epi64(r[0], r[1]), u1 = _mm512_unpackhi_epi64(r[0], r[1]);
  const __m512i u2 = _mm512_unpacklo_epi64(r[2], r[3]), u3 = _mm512_unpackhi_epi64(r[2], r[3]);
  const __m512i even = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0), odd = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
  const __m512i w0 = _mm512_permutex2var_epi64(u0, even, u2), w2 = _mm512_permutex2var_epi64(u0, odd, u2);
  const __m512i w1 = _mm512_permutex2var_epi64(u1, even, u3), w3 = _mm512_permutex2var_epi64(u1, odd, u3);
  const __m512i mask = bc(M52);
  vfe v;
  v.l[0] = _mm512_and_si512(_mm512_slli_epi64(w0, 4), mask);
  v.l[1] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(w0, 48), _mm512_slli_epi64(w1, 16)), mask);
  v.l[2] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(w1, 36), _mm512_slli_epi64(w2, 28)), mask);
  v.l[3] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(w2, 24), _mm512_slli_epi64(w3, 40)), mask);
  v.l[4] = _mm512_srli_epi64(w3, 12);
  return v;
}

typedef struct {
  vfe ax[IGROUPS], ay[IGROUPS], pre[IGROUPS], dx[IGROUPS], qx[IGROUPS];
  uint16_t idx[PED_NW][IBATCH];
} iscratch;

/* Big-endian 64-bit word at b. */
static inline uint64_t load_be64(const uint8_t *b) {
  uint64_t v;
  memcpy(&v, b, 8);
  return __builtin_bswap64(v);
}

/* The window indices of pairs i0..i0+7 (x_i at xs + xstride*i, y_i likewise), pairs from n on
 * padding with all windows 0. The 504-bit scalars x | y << 252 are put together in scalar code as
 * eight 64-bit limbs per pair, then cut into windows eight pairs at a time: the loop over windows
 * is unrolled, so every window's limb and shifts are constants. */
static IATTR void windows8(const uint8_t *xs, size_t xstride, const uint8_t *ys, size_t ystride, size_t n,
                           uint16_t (*idx)[IBATCH], size_t i0) {
  uint64_t s[8][8] __attribute__((aligned(64))); /* s[limb][pair] */
  for (size_t k = 0; k < 8; k++) {
    uint64_t xv[4] = {0, 0, 0, 0}, yv[4] = {0, 0, 0, 0};
    if (i0 + k < n) {
      const uint8_t *x = xs + xstride * (i0 + k), *y = ys + ystride * (i0 + k);
      for (int q = 0; q < 4; q++) {
        xv[q] = load_be64(x + 8 * (3 - q));
        yv[q] = load_be64(y + 8 * (3 - q));
      }
    }
    s[0][k] = xv[0];
    s[1][k] = xv[1];
    s[2][k] = xv[2];
    s[3][k] = xv[3] | (yv[0] << 60);
    s[4][k] = (yv[0] >> 4) | (yv[1] << 60);
    s[5][k] = (yv[1] >> 4) | (yv[2] << 60);
    s[6][k] = (yv[2] >> 4) | (yv[3] << 60);
    s[7][k] = yv[3] >> 4;
  }
  __m512i v[8];
  for (int l = 0; l < 8; l++) v[l] = _mm512_load_si512((const void *)s[l]);
#pragma GCC unroll 64
  for (int j = 0; j < PED_NW; j++) {
    const unsigned pos = PED_WINDOW_START(j), bits = PED_WINDOW_BITS(j), limb = pos >> 6, off = pos & 63;
    __m512i w = _mm512_srli_epi64(v[limb], off);
    if (off + bits > 64 && limb < 7) w = _mm512_or_si512(w, _mm512_slli_epi64(v[limb + 1], 64 - off));
    _mm_storeu_si128((__m128i *)&idx[j][i0], _mm512_cvtepi64_epi16(_mm512_and_si512(w, bc((1u << bits) - 1))));
  }
}

/* What a batch adds up: step s adds entry idx[rows[s]][lane] of table tabs[s] (entry 0 of any step
 * but the first is the identity), the first step's entry being where each lane starts. A two-sided
 * batch adds every window's table; a one-sided batch adds the windows of its varying input and
 * the constant's share (ped_const_point) as a table of its own. */
typedef struct {
  const ped_point *tabs[PED_NW + 1];
  int rows[PED_NW + 1];
  int steps;
} iplan;

/* One batch of n <= IBATCH pairs (x_i at xs + xstride*i, y_i likewise: a stride of 0 repeats one
 * value); returns 1 when a degenerate addition needs the scalar path. `fixed_row`, when not
 * negative, is a row of idx set to 1 in every lane (a constant's one-entry step). */
static IATTR int ifma_batch(iscratch *sc, const iplan *plan, int fixed_row, const uint8_t *xs, size_t xstride,
                            const uint8_t *ys, size_t ystride, uint8_t *out, size_t n) {
  const size_t groups = ((n + 8 * IG - 1) / (8 * IG)) * IG;
  /* padding lanes (from n on) have all windows 0: the first entry, then nothing */
  for (size_t g = 0; g < groups; g++) windows8(xs, xstride, ys, ystride, n, sc->idx, 8 * g);
  if (fixed_row >= 0)
    for (size_t i = 0; i < groups * 8; i++) sc->idx[fixed_row][i] = 1;
  const vfe one = vconst(ONE260);
  /* Starting points, and prefetches of the first step's entries. */
  for (size_t g = 0; g < groups; g++) {
    if (plan->steps > 1)
      for (int k = 0; k < 8; k++) __builtin_prefetch(&plan->tabs[1][sc->idx[plan->rows[1]][8 * g + k]]);
    sc->ax[g] = vgather(plan->tabs[0], &sc->idx[plan->rows[0]][8 * g], 0);
    sc->ay[g] = vgather(plan->tabs[0], &sc->idx[plan->rows[0]][8 * g], 4);
    vfold(&sc->ax[g]);
    vfold(&sc->ay[g]);
  }
  /* groups is rounded up to a multiple of IG: the backward pass handles IG groups at a time, the
   * forward pass keeps IG product chains (group g in chain g % IG). */
  for (int step = 1; step < plan->steps; step++) {
    const ped_point *tab = plan->tabs[step];
    const uint16_t *row = sc->idx[plan->rows[step]];
    /* The next step's entries are prefetched over this whole step, a quarter during the forward
     * pass (two per group) and the rest during the backward pass (6*IG per IG groups), so as not to
     * have more misses outstanding than the core can track. */
    const ped_point *ntab = step + 1 < plan->steps ? plan->tabs[step + 1] : NULL;
    const uint16_t *nrow = ntab ? sc->idx[plan->rows[step + 1]] : NULL;
    size_t pf = 0;
    vfe prod[IG];
    for (int h = 0; h < IG; h++) prod[h] = one;
    for (size_t g = 0; g < groups; g++) {
      if (ntab) {
        __builtin_prefetch(&ntab[nrow[pf]]);
        __builtin_prefetch(&ntab[nrow[pf + 1]]);
        pf += 2;
      }
      const __m512i vidx = _mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i *)&row[8 * g]));
      const __mmask8 active = _mm512_cmpneq_epi64_mask(vidx, _mm512_setzero_si512());
      vfe qx = vgather(tab, &row[8 * g], 0);
      vfe dx = vsub(&qx, &sc->ax[g], 3);
      for (int i = 0; i < 5; i++) dx.l[i] = _mm512_mask_blend_epi64(active, one.l[i], dx.l[i]);
      sc->qx[g] = qx;
      sc->dx[g] = dx;
      sc->pre[g] = prod[g % IG];
      if (g % 2) vmul2(&prod[(g - 1) % IG], &prod[(g - 1) % IG], &sc->dx[g - 1], &prod[g % IG], &prod[g % IG], &dx);
    }
    /* The inverses of the IG chains' products, by Montgomery's trick over a binary tree: tr[k] holds
     * the IG >> k products of level k, then is overwritten top-down by their inverses. */
    vfe tr[IG_LOG + 1][IG];
    for (int h = 0; h < IG; h++) tr[0][h] = prod[h];
    for (int k = 1; k <= IG_LOG; k++)
      for (int h = 0; h < IG >> k; h++) tr[k][h] = vmul(&tr[k - 1][2 * h], &tr[k - 1][2 * h + 1]);
    /* A zero difference (doubling or cancellation) makes a lane's product zero. */
    vfe all = tr[IG_LOG][0];
    if (vinv(&tr[IG_LOG][0], &all)) return 1;
    for (int k = IG_LOG; k > 0; k--)
      for (int h = 0; h < IG >> k; h++) {
        const vfe left = tr[k - 1][2 * h];
        tr[k - 1][2 * h] = vmul(&tr[k][h], &tr[k - 1][2 * h + 1]);
        tr[k - 1][2 * h + 1] = vmul(&tr[k][h], &left);
      }
    vfe inv[IG];
    for (int h = 0; h < IG; h++) inv[h] = tr[0][h];
    for (size_t g = groups; g > 0;) {
      g -= IG;
      if (ntab) {
        for (int k = 0; k < 6 * IG; k++) __builtin_prefetch(&ntab[nrow[pf + k]]);
        pf += 6 * IG;
      }
      vfe di[IG], qy[IG], t[IG], lam[IG], lam2[IG], x3[IG], y3[IG];
      __mmask8 active[IG];
      for (int h = 0; h < IG; h++) {
        const __m512i vidx = _mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i *)&row[8 * (g + h)]));
        active[h] = _mm512_cmpneq_epi64_mask(vidx, _mm512_setzero_si512());
        qy[h] = vgather(tab, &row[8 * (g + h)], 4);
      }
      for (int h = 0; h < IG; h += 2) {
        vmul2(&di[h], &inv[h], &sc->pre[g + h], &di[h + 1], &inv[h + 1], &sc->pre[g + h + 1]);
        vmul2(&inv[h], &inv[h], &sc->dx[g + h], &inv[h + 1], &inv[h + 1], &sc->dx[g + h + 1]);
      }
      for (int h = 0; h < IG; h++) t[h] = vsub(&qy[h], &sc->ay[g + h], 3);
      for (int h = 0; h < IG; h += 2) vmul2(&lam[h], &t[h], &di[h], &lam[h + 1], &t[h + 1], &di[h + 1]);
      for (int h = 0; h < IG; h += 2) vmul2(&lam2[h], &lam[h], &lam[h], &lam2[h + 1], &lam[h + 1], &lam[h + 1]);
      for (int h = 0; h < IG; h++) {
        /* lam2 + 19p - ax - qx, folded straight from limbs in (-2^53, 2^53): no carry pass before */
        for (int i = 0; i < 5; i++)
          x3[h].l[i] = _mm512_sub_epi64(_mm512_add_epi64(lam2[h].l[i], bc(KP[19][i])),
                                        _mm512_add_epi64(sc->ax[g + h].l[i], sc->qx[g + h].l[i]));
        vfold(&x3[h]);
        t[h] = vsub(&sc->ax[g + h], &x3[h], 3);
      }
      for (int h = 0; h < IG; h += 2) vmul2(&y3[h], &lam[h], &t[h], &y3[h + 1], &lam[h + 1], &t[h + 1]);
      for (int h = 0; h < IG; h++) {
        /* y3 + 3p - ay, likewise from limbs in (-2^52, 2^53) */
        for (int i = 0; i < 5; i++)
          y3[h].l[i] = _mm512_sub_epi64(_mm512_add_epi64(y3[h].l[i], bc(KP[3][i])), sc->ay[g + h].l[i]);
        vfold(&y3[h]);
        for (int i = 0; i < 5; i++) {
          sc->ax[g + h].l[i] = _mm512_mask_blend_epi64(active[h], sc->ax[g + h].l[i], x3[h].l[i]);
          sc->ay[g + h].l[i] = _mm512_mask_blend_epi64(active[h], sc->ay[g + h].l[i], y3[h].l[i]);
        }
      }
    }
  }
  /* x / 2^260 out of the Montgomery domain, then fully reduced, big-endian. */
  const uint64_t plain1[5] = {1, 0, 0, 0, 0};
  const vfe one_plain = vconst(plain1);
  for (size_t g = 0; g < groups; g++) {
    const vfe x = vmul(&sc->ax[g], &one_plain);
    uint64_t l[8][5] __attribute__((aligned(64)));
    uint64_t tmp[8] __attribute__((aligned(64)));
    for (int i = 0; i < 5; i++) {
      _mm512_store_si512((void *)tmp, x.l[i]);
      for (int k = 0; k < 8; k++) l[k][i] = tmp[k];
    }
    for (int k = 0; k < 8 && 8 * g + k < n; k++) {
      uint64_t w[4];
      lane_to_u64(w, l[k]);
      uint8_t *o = out + 32 * (8 * g + k);
      for (int q = 0; q < 4; q++) {
        const uint64_t v = w[3 - q];
        for (int b = 0; b < 8; b++) o[8 * q + b] = (uint8_t)(v >> (56 - 8 * b));
      }
    }
  }
  return 0;
}

static void init_ifma(void) { build_ifma(); }

static ped_kernel_fn scalar_kernel(void) { return ped_cpu_has_adx() ? ped_hash_adx : ped_hash_portable; }

/* The pairs of a call: x_i at x + xstride*i, y_i likewise (a stride of 0 repeats one value). */
typedef struct {
  const uint8_t *x, *y;
  size_t xstride, ystride;
} ipairs;

static int scalar_strided(ipairs p, uint8_t *out, size_t n);

/* Runs `plan` over n pairs in batches, windows taken from `win`; a batch that meets a degenerate
 * addition is redone by the scalar kernel on the same batch of `real` pairs. */
static int ifma_run(const iplan *plan, int fixed_row, ipairs win, ipairs real, uint8_t *out, size_t n) {
  iscratch *sc = (iscratch *)aligned_alloc(64, (sizeof(iscratch) + 63) / 64 * 64);
  if (!sc) return -1;
  int rc = 0;
  for (size_t done = 0; done < n && rc == 0;) {
    const size_t m = n - done < IBATCH ? n - done : IBATCH;
    if (ifma_batch(sc, plan, fixed_row, win.x + win.xstride * done, win.xstride, win.y + win.ystride * done,
                   win.ystride, out + 32 * done, m)) {
      const ipairs part = {real.x + real.xstride * done, real.y + real.ystride * done, real.xstride, real.ystride};
      rc = scalar_strided(part, out + 32 * done, m);
    }
    done += m;
  }
  free(sc);
  return rc;
}

/* The scalar kernel on pairs given with strides: a repeated value is written out n times first. */
static int scalar_strided(ipairs p, uint8_t *out, size_t n) {
  if (p.xstride == 32 && p.ystride == 32) return scalar_kernel()(p.x, p.y, out, n);
  return p.xstride ? ped_hash_repeated(scalar_kernel(), p.x, p.y, 1, out, n)
                   : ped_hash_repeated(scalar_kernel(), p.y, p.x, 0, out, n);
}

int ped_hash_ifma(const uint8_t *xs, const uint8_t *ys, uint8_t *out, size_t n) {
  /* Small calls and degenerate batches go to the best scalar kernel. */
  if (n < 64) return scalar_kernel()(xs, ys, out, n);
  pthread_once(&ifma_once, init_ifma);
  if (ifma_failed) return scalar_kernel()(xs, ys, out, n);
  iplan plan = {.steps = PED_NW};
  for (int j = 0; j < PED_NW; j++) {
    plan.tabs[j] = ped_tables[j];
    plan.rows[j] = j;
  }
  const ipairs pairs = {xs, ys, 32, 32};
  return ifma_run(&plan, -1, pairs, pairs, out, n);
}

/* One-sided pairs (core.h): the varying input's PED_NW_X windows plus the constant's share C, a
 * point computed once per call. With x constant each lane starts at C (which holds S); with y
 * constant it starts at window 0's entry (S folded in) and adds C last, unless C is the identity. */
int ped_hash_ifma_const(const uint8_t *vs, const uint8_t *c, int c_is_y, uint8_t *out, size_t n) {
  static const uint8_t zero[32];
  const ipairs real = c_is_y ? (ipairs){vs, c, 32, 0} : (ipairs){c, vs, 0, 32};
  if (n < 64) return scalar_strided(real, out, n);
  pthread_once(&ifma_once, init_ifma);
  if (ifma_failed) return scalar_strided(real, out, n);
  ped_point ctab[2]; /* C at entry 1, so that a row of 1s selects it; entry 0 unused */
  memset(ctab, 0, sizeof ctab);
  const int has_c = ped_const_point(c, c_is_y, &ctab[1]);
  iplan plan = {.steps = 0};
  if (c_is_y) {
    for (int j = 0; j < PED_NW_X; j++) {
      plan.tabs[plan.steps] = ped_tables[j];
      plan.rows[plan.steps++] = j;
    }
    if (has_c) {
      plan.tabs[plan.steps] = ctab;
      plan.rows[plan.steps++] = PED_NW_X; /* y's rows are all 0 here (the windows of (v, 0)), so free */
    }
    return ifma_run(&plan, has_c ? PED_NW_X : -1, (ipairs){vs, zero, 32, 0}, real, out, n);
  }
  /* C holds S, so it is never the identity: every lane starts there (row 0 of (0, v) is all 0s). */
  plan.tabs[plan.steps] = ctab + 1;
  plan.rows[plan.steps++] = 0;
  for (int j = PED_NW_X; j < PED_NW; j++) {
    plan.tabs[plan.steps] = ped_tables[j];
    plan.rows[plan.steps++] = j;
  }
  return ifma_run(&plan, -1, (ipairs){zero, vs, 0, 32}, real, out, n);
}

/* cpuid is slow under virtualisation (it traps to the hypervisor), so ask once. */
static int probe_ifma(void);
int ped_cpu_has_ifma(void) {
  static int cached = -1;
  if (cached < 0) cached = probe_ifma();
  return cached;
}

static int probe_ifma(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0; /* OSXSAVE */
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 0xe6) != 0xe6) return 0; /* the OS saves SSE, AVX and AVX-512 state */
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
  return (b & (1u << 16)) && (b & (1u << 21)); /* AVX512F and AVX512IFMA */
}
#endif
