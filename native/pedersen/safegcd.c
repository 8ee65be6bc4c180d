/*
 * Modular inversion modulo p for the kernels' batched inversions (shared by the scalar and IFMA
 * kernels). Plain C. Hashes public data only: variable-time, by design (see core.h).
 */
#include <string.h>

#include "core.h"

/* Variable-time modular inversion by Bernstein and Yang's safegcd, following libsecp256k1's
 * secp256k1_modinv64_var (src/modinv64_impl.h, MIT licence: LICENSE-libsecp256k1.txt here; the
 * method is in its doc/safegcd_implementation.md): batches of 62
 * divsteps on the low 64 bits of f and g, each batch then applied to the full values as a 2x2
 * matrix. Values as five signed 62-bit limbs. */
#define S62 ((uint64_t)-1 >> 2)
/* p = 2^251 + 17*2^192 + 1 in signed-62 limbs: 1, 0, 0, 17*2^6, 2^3; and 1/p = 1 mod 2^62. */
static const int64_t SP[5] = {1, 0, 0, 17 << 6, 8};

typedef struct {
  int64_t u, v, q, r;
} smat;

/* 62 divsteps on the low bits of f (odd) and g; returns the new eta. The matrix t maps
 * (f, g) to (f', g')*2^62. */
static int64_t divsteps62(int64_t eta, uint64_t f, uint64_t g, smat *t) {
  uint64_t u = 1, v = 0, q = 0, r = 1;
  int i = 62;
  for (;;) {
    /* g's zero bits (a sentinel bit stops the count at i): each just halves g. */
    const int zeros = __builtin_ctzll(g | (UINT64_MAX << i));
    g >>= zeros;
    u <<= zeros;
    v <<= zeros;
    eta -= zeros;
    i -= zeros;
    if (i == 0) break;
    uint64_t w, m;
    int limit;
    if (eta < 0) {
      uint64_t tmp;
      eta = -eta;
      tmp = f, f = g, g = -tmp;
      tmp = u, u = q, q = -tmp;
      tmp = v, v = r, r = -tmp;
      /* cancel up to 6 bits of g at once (no more than i, nor eta + 1) */
      limit = ((int)eta + 1) > i ? i : ((int)eta + 1);
      m = (UINT64_MAX >> (64 - limit)) & 63U;
      w = (f * g * (f * f - 2)) & m;
    } else {
      limit = ((int)eta + 1) > i ? i : ((int)eta + 1);
      m = (UINT64_MAX >> (64 - limit)) & 15U;
      w = f + (((f + 1) & 4) << 1);
      w = (-w * g) & m;
    }
    g += f * w;
    q += u * w;
    r += v * w;
  }
  t->u = (int64_t)u;
  t->v = (int64_t)v;
  t->q = (int64_t)q;
  t->r = (int64_t)r;
  return eta;
}

/* (d, e) = t*(d, e)/2^62 mod p, keeping both in (-2p, p). */
static void update_de(int64_t d[5], int64_t e[5], const smat *t) {
  const int64_t u = t->u, v = t->v, q = t->q, r = t->r;
  const int64_t sd = d[4] >> 63, se = e[4] >> 63;
  int64_t md = (u & sd) + (v & se), me = (q & sd) + (r & se);
  __int128 cd = (__int128)u * d[0] + (__int128)v * e[0];
  __int128 ce = (__int128)q * d[0] + (__int128)r * e[0];
  /* md, me such that t*(d, e) + p*(md, me) has 62 zero low bits (1/p = 1 mod 2^62) */
  md -= ((uint64_t)cd + md) & S62;
  me -= ((uint64_t)ce + me) & S62;
  cd += (__int128)SP[0] * md;
  ce += (__int128)SP[0] * me;
  cd >>= 62;
  ce >>= 62;
  for (int i = 1; i < 5; i++) {
    cd += (__int128)u * d[i] + (__int128)v * e[i];
    ce += (__int128)q * d[i] + (__int128)r * e[i];
    if (SP[i]) {
      cd += (__int128)SP[i] * md;
      ce += (__int128)SP[i] * me;
    }
    d[i - 1] = (int64_t)((uint64_t)cd & S62);
    e[i - 1] = (int64_t)((uint64_t)ce & S62);
    cd >>= 62;
    ce >>= 62;
  }
  d[4] = (int64_t)cd;
  e[4] = (int64_t)ce;
}

/* (f, g) = t*(f, g)/2^62 over their len low limbs. */
static void update_fg(int len, int64_t f[5], int64_t g[5], const smat *t) {
  const int64_t u = t->u, v = t->v, q = t->q, r = t->r;
  __int128 cf = (__int128)u * f[0] + (__int128)v * g[0];
  __int128 cg = (__int128)q * f[0] + (__int128)r * g[0];
  cf >>= 62;
  cg >>= 62;
  for (int i = 1; i < len; i++) {
    cf += (__int128)u * f[i] + (__int128)v * g[i];
    cg += (__int128)q * f[i] + (__int128)r * g[i];
    f[i - 1] = (int64_t)((uint64_t)cf & S62);
    g[i - 1] = (int64_t)((uint64_t)cg & S62);
    cf >>= 62;
    cg >>= 62;
  }
  f[len - 1] = (int64_t)cf;
  g[len - 1] = (int64_t)cg;
}

/* r = 1/a mod p for 0 < a < p (4x64 limbs); returns 0, or -1 when a = 0 mod p. */
int ped_inv_safegcd(uint64_t r[4], const uint64_t a[4]) {
  int64_t d[5] = {0, 0, 0, 0, 0}, e[5] = {1, 0, 0, 0, 0}, f[5], g[5];
  memcpy(f, SP, sizeof f);
  g[0] = (int64_t)(a[0] & S62);
  g[1] = (int64_t)(((a[0] >> 62) | (a[1] << 2)) & S62);
  g[2] = (int64_t)(((a[1] >> 60) | (a[2] << 4)) & S62);
  g[3] = (int64_t)(((a[2] >> 58) | (a[3] << 6)) & S62);
  g[4] = (int64_t)(a[3] >> 56);
  if ((g[0] | g[1] | g[2] | g[3] | g[4]) == 0) return -1;
  int64_t eta = -1;
  int len = 5;
  for (;;) {
    smat t;
    eta = divsteps62(eta, (uint64_t)f[0], (uint64_t)g[0], &t);
    update_de(d, e, &t);
    update_fg(len, f, g, &t);
    if (g[0] == 0) {
      int64_t any = 0;
      for (int j = 1; j < len; j++) any |= g[j];
      if (any == 0) break;
    }
    /* Shorten f and g when both top limbs are 0 or -1. */
    const int64_t fn = f[len - 1], gn = g[len - 1];
    if (len > 1 && (fn ^ (fn >> 63)) == 0 && (gn ^ (gn >> 63)) == 0) {
      f[len - 2] = (int64_t)((uint64_t)f[len - 2] | ((uint64_t)fn << 62));
      g[len - 2] = (int64_t)((uint64_t)g[len - 2] | ((uint64_t)gn << 62));
      len--;
    }
  }
  /* f = +-1 now (p is prime); d/f is the inverse, d in (-2p, p). */
  const int64_t neg = f[len - 1] >> 63;
  int64_t add = d[4] >> 63;
  for (int i = 0; i < 5; i++) d[i] += SP[i] & add;
  for (int i = 0; i < 5; i++) d[i] = (d[i] ^ neg) - neg;
  for (int i = 0; i < 4; i++) {
    d[i + 1] += d[i] >> 62;
    d[i] &= (int64_t)S62;
  }
  add = d[4] >> 63;
  for (int i = 0; i < 5; i++) d[i] += SP[i] & add;
  for (int i = 0; i < 4; i++) {
    d[i + 1] += d[i] >> 62;
    d[i] &= (int64_t)S62;
  }
  r[0] = (uint64_t)d[0] | ((uint64_t)d[1] << 62);
  r[1] = ((uint64_t)d[1] >> 2) | ((uint64_t)d[2] << 60);
  r[2] = ((uint64_t)d[2] >> 4) | ((uint64_t)d[3] << 58);
  r[3] = ((uint64_t)d[3] >> 6) | ((uint64_t)d[4] << 56);
  return 0;
}
