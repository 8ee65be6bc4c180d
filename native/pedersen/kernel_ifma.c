/*
 * AVX-512 IFMA kernel: eight hashes per vector, field elements as five 52-bit limbs (one limb of
 * eight elements per zmm register), Montgomery form with R = 2^260, multiplications with
 * vpmadd52luq/vpmadd52huq. Same algorithm as the scalar kernel (fixed-base windows, affine
 * additions, one shared inversion per window per batch) and the same tables, converted to the
 * R = 2^260 domain as they are gathered. Only called when cpuid and the OS report AVX-512F and IFMA.
 * One-sided pairs (core.h) run the same batches over half the windows plus one constant point.
 *
 * Hashes public data only: not constant-time, by design (see core.h).
 *
 * Value bounds (all non-negative, limbs normalised to 52 bits before any multiplication):
 * gathered table values < 16p; a product of inputs below a*p and b*p with a*b <= 256 is below 2p (since
 * p < 2^252); vsub(a, b, K) = a + K*p - b needs b <= K*p; fold() maps any value < 2^260 below 3p.
 * Accumulators stay below 3p.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#ifdef PED_HAVE_X86
#include <cpuid.h>
#include <immintrin.h>

#define IATTR __attribute__((target("avx512f,avx512ifma")))
#define IINLINE static inline __attribute__((always_inline)) IATTR
#define M52 ((1ULL << 52) - 1)
#define IBATCH 1024
#define IGROUPS (IBATCH / 8)

typedef struct {
  __m512i l[5];
} vfe;

static int ifma_failed;
static pthread_once_t ifma_once = PTHREAD_ONCE_INIT;

/* p and small multiples, as 52-bit limbs. */
static uint64_t KP[20][5];
/* 2^260 mod p (Montgomery one) as 52-bit limbs. */
static uint64_t ONE260[5];

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
  uint64_t one[4] = {1, 0, 0, 0}, one260[4];
  ped_to_mont260(one260, one);
  split52(ONE260, one260);
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

/* Reduces a normalised non-negative value below 2^260 to below 3p: with h = v >> 252,
 * v = lo + h*2^252 and 2^252 = -(34*2^192 + 2) mod p, so v = lo + p - h*(34*2^192 + 2) mod p. */
IINLINE void vfold(vfe *v) {
  const __m512i h = _mm512_srli_epi64(v->l[4], 44);
  v->l[4] = _mm512_add_epi64(_mm512_and_si512(v->l[4], bc((1ULL << 44) - 1)), bc(1ULL << 43));
  v->l[0] = _mm512_sub_epi64(_mm512_add_epi64(v->l[0], bc(1)), _mm512_slli_epi64(h, 1));
  v->l[3] = _mm512_sub_epi64(_mm512_add_epi64(v->l[3], bc(17ULL << 36)),
                             _mm512_add_epi64(_mm512_slli_epi64(h, 41), _mm512_slli_epi64(h, 37)));
  vnorm(v->l);
}

/* r^(2^k), k squarings. */
IINLINE vfe vsqn(vfe r, int k) {
  for (int i = 0; i < k; i++) r = vmul(&r, &r);
  return r;
}

/* 1/a by Fermat, a^(p-2) with p - 2 = 2^251 + 2^196 + (2^192 - 1), left to right: the bits from 251
 * down to 192 one at a time, then the 192 low ones as twelve 16-bit windows of a^(2^16 - 1). That is
 * 266 squarings and 17 products: one chain of dependent products, so its latency is what it costs
 * (a third of the kernel's time at one inversion per 1,024 hashes and window). */
static IATTR vfe vinv(const vfe *a) {
  vfe w = vsqn(*a, 1);
  w = vmul(&w, a); /* a^(2^2 - 1) */
  vfe t = vsqn(w, 2);
  w = vmul(&t, &w); /* a^(2^4 - 1) */
  t = vsqn(w, 4);
  w = vmul(&t, &w); /* a^(2^8 - 1) */
  t = vsqn(w, 8);
  w = vmul(&t, &w); /* a^(2^16 - 1) */
  vfe r = vsqn(*a, 55);
  r = vmul(&r, a); /* a^(2^55 + 1): bits 251 and 196 */
  r = vsqn(r, 4);  /* down to bit 192 */
  for (int i = 0; i < 12; i++) {
    r = vsqn(r, 16);
    r = vmul(&r, &w);
  }
  return r;
}

/* Gathers the x or y coordinate (word offset 0 or 4) of eight entries of the shared tables. An
 * entry holds e = v*2^256 mod p; 16e = v*2^260 (mod p) is the same value in this kernel's domain,
 * so the 256-bit e is split into 52-bit limbs shifted by four bits: a value below 16p. */
IINLINE vfe vgather(const ped_point *tab, __m512i off, int word) {
  const char *base = (const char *)tab + 8 * word;
  const __m512i w0 = _mm512_i64gather_epi64(off, (const void *)base, 1);
  const __m512i w1 = _mm512_i64gather_epi64(off, (const void *)(base + 8), 1);
  const __m512i w2 = _mm512_i64gather_epi64(off, (const void *)(base + 16), 1);
  const __m512i w3 = _mm512_i64gather_epi64(off, (const void *)(base + 24), 1);
  const __m512i mask = bc(M52);
  vfe r;
  r.l[0] = _mm512_and_si512(_mm512_slli_epi64(w0, 4), mask);
  r.l[1] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(w0, 48), _mm512_slli_epi64(w1, 16)), mask);
  r.l[2] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(w1, 36), _mm512_slli_epi64(w2, 28)), mask);
  r.l[3] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(w2, 24), _mm512_slli_epi64(w3, 40)), mask);
  r.l[4] = _mm512_srli_epi64(w3, 12);
  return r;
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

typedef struct {
  vfe ax[IGROUPS], ay[IGROUPS], pre[IGROUPS], dx[IGROUPS], qx[IGROUPS];
  uint16_t idx[PED_NW][IBATCH];
} iscratch;

static void windows16(const uint8_t *x, const uint8_t *y, uint16_t (*idx)[IBATCH], size_t i) {
  uint64_t s[8], xv[4], yv[4];
  for (int k = 0; k < 4; k++) {
    uint64_t a = 0, b = 0;
    for (int j = 0; j < 8; j++) {
      a = (a << 8) | x[8 * (3 - k) + j];
      b = (b << 8) | y[8 * (3 - k) + j];
    }
    xv[k] = a;
    yv[k] = b;
  }
  s[0] = xv[0];
  s[1] = xv[1];
  s[2] = xv[2];
  s[3] = xv[3] | (yv[0] << 60);
  s[4] = (yv[0] >> 4) | (yv[1] << 60);
  s[5] = (yv[1] >> 4) | (yv[2] << 60);
  s[6] = (yv[2] >> 4) | (yv[3] << 60);
  s[7] = yv[3] >> 4;
  for (int j = 0; j < PED_NW; j++) {
    const unsigned pos = (unsigned)j * PED_W, limb = pos >> 6, off = pos & 63;
    uint64_t v = s[limb] >> off;
    if (off + PED_W > 64 && limb < 7) v |= s[limb + 1] << (64 - off);
    idx[j][i] = (uint16_t)(v & ((1u << PED_W) - 1));
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
  const size_t groups = ((n + 15) / 16) * 2;
  for (size_t i = 0; i < n; i++) windows16(xs + xstride * i, ys + ystride * i, sc->idx, i);
  for (size_t i = n; i < groups * 8; i++)
    for (int j = 0; j < PED_NW; j++) sc->idx[j][i] = 0; /* padding lanes: the first entry, then nothing */
  if (fixed_row >= 0)
    for (size_t i = 0; i < groups * 8; i++) sc->idx[fixed_row][i] = 1;
  const vfe one = vconst(ONE260);
  for (size_t g = 0; g < groups; g++) {
    const __m512i off =
        _mm512_slli_epi64(_mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i *)&sc->idx[plan->rows[0]][8 * g])), 6);
    sc->ax[g] = vgather(plan->tabs[0], off, 0);
    sc->ay[g] = vgather(plan->tabs[0], off, 4);
    vfold(&sc->ax[g]);
    vfold(&sc->ay[g]);
  }
  /* groups is rounded up to even: the walk handles groups in pairs, with two product chains. */
  for (int step = 1; step < plan->steps; step++) {
    const ped_point *tab = plan->tabs[step];
    const uint16_t *row = sc->idx[plan->rows[step]];
    vfe prod[2] = {one, one};
    for (size_t g = 0; g < groups; g++) {
      const __m512i vidx = _mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i *)&row[8 * g]));
      const __mmask8 active = _mm512_cmpneq_epi64_mask(vidx, _mm512_setzero_si512());
      const __m512i off = _mm512_slli_epi64(vidx, 6);
      vfe qx = vgather(tab, off, 0);
      vfe dx = vsub(&qx, &sc->ax[g], 3);
      for (int i = 0; i < 5; i++) dx.l[i] = _mm512_mask_blend_epi64(active, one.l[i], dx.l[i]);
      sc->qx[g] = qx;
      sc->dx[g] = dx;
      sc->pre[g] = prod[g & 1];
      if (g & 1) vmul2(&prod[0], &prod[0], &sc->dx[g - 1], &prod[1], &prod[1], &dx);
    }
    vfe all = vmul(&prod[0], &prod[1]);
    /* A zero difference (doubling or cancellation) makes a lane's product zero. */
    {
      uint64_t l[8][5] __attribute__((aligned(64)));
      uint64_t tmp[8] __attribute__((aligned(64)));
      for (int i = 0; i < 5; i++) {
        _mm512_store_si512((void *)tmp, all.l[i]);
        for (int k = 0; k < 8; k++) l[k][i] = tmp[k];
      }
      for (int k = 0; k < 8; k++) {
        uint64_t w[4];
        lane_to_u64(w, l[k]);
        if ((w[0] | w[1] | w[2] | w[3]) == 0) return 1;
      }
    }
    const vfe inv_all = vinv(&all);
    vfe inv[2];
    vmul2(&inv[0], &inv_all, &prod[1], &inv[1], &inv_all, &prod[0]);
    const ped_point *ntab = step + 1 < plan->steps ? plan->tabs[step + 1] : NULL;
    const uint16_t *nrow = ntab ? sc->idx[plan->rows[step + 1]] : NULL;
    for (size_t g = groups; g > 0;) {
      g -= 2;
      if (ntab) {
        for (int k = 0; k < 16; k++) __builtin_prefetch(&ntab[nrow[8 * g + k]]);
      }
      vfe di[2], qy[2], t[2], lam[2], lam2[2], x3[2], y3[2];
      __mmask8 active[2];
      for (int h = 0; h < 2; h++) {
        const __m512i vidx = _mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i *)&row[8 * (g + h)]));
        active[h] = _mm512_cmpneq_epi64_mask(vidx, _mm512_setzero_si512());
        qy[h] = vgather(tab, _mm512_slli_epi64(vidx, 6), 4);
      }
      vmul2(&di[0], &inv[0], &sc->pre[g], &di[1], &inv[1], &sc->pre[g + 1]);
      vmul2(&inv[0], &inv[0], &sc->dx[g], &inv[1], &inv[1], &sc->dx[g + 1]);
      for (int h = 0; h < 2; h++) t[h] = vsub(&qy[h], &sc->ay[g + h], 3);
      vmul2(&lam[0], &t[0], &di[0], &lam[1], &t[1], &di[1]);
      vmul2(&lam2[0], &lam[0], &lam[0], &lam2[1], &lam[1], &lam[1]);
      for (int h = 0; h < 2; h++) {
        for (int i = 0; i < 5; i++)
          x3[h].l[i] = _mm512_sub_epi64(_mm512_add_epi64(lam2[h].l[i], bc(KP[19][i])),
                                        _mm512_add_epi64(sc->ax[g + h].l[i], sc->qx[g + h].l[i]));
        vnorm(x3[h].l);
        vfold(&x3[h]);
        t[h] = vsub(&sc->ax[g + h], &x3[h], 3);
      }
      vmul2(&y3[0], &lam[0], &t[0], &y3[1], &lam[1], &t[1]);
      for (int h = 0; h < 2; h++) {
        y3[h] = vsub(&y3[h], &sc->ay[g + h], 3);
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
  uint8_t *rep = (uint8_t *)malloc(32 * n);
  if (!rep) return -1;
  const uint8_t *c = p.xstride ? p.y : p.x;
  for (size_t i = 0; i < n; i++) memcpy(rep + 32 * i, c, 32);
  const int rc = p.xstride ? scalar_kernel()(p.x, rep, out, n) : scalar_kernel()(rep, p.y, out, n);
  free(rep);
  return rc;
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

#if PED_SPLIT_WINDOWS
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
#endif

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
