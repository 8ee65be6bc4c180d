/*
 * Pedersen engine: constant points, table construction and CPU dispatch.
 * Hashes public data only: not constant-time, by design (see core.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core.h"
#include "kernel_scalar.h"

const uint64_t PED_P[4] = {1, 0, 0, 0x0800000000000011ULL};

/* StarkWare's Pedersen constant points (shift point S, then P0..P3), affine, 4x64-bit little-endian
 * limbs, normal (not Montgomery) form. */
static const uint64_t PED_CONST[5][2][4] = {
    {{0x551fde4050ca6804ULL, 0x716b0b1022947733ULL, 0x00ee1b87eb599f16ULL, 0x049ee3eba8c16007ULL},
     {0xd0405d266e10268aULL, 0x4e621062c0e056c1ULL, 0xf346d49d06ea0ed3ULL, 0x03ca0cfe4b3bc6ddULL}},
    {{0x1080d17957ebe47bULL, 0x8fa8120b6d56eb0cULL, 0x969c748655fca9e5ULL, 0x0234287dcbaffe7fULL},
     {0x6ed0268ee89e5615ULL, 0x940135dd7a6c94ccULL, 0x1e889527d41f4e39ULL, 0x03b056f100f96fb2ULL}},
    {{0xb7a6932dba8aa378ULL, 0x99099ec1de5e3018ULL, 0x3f9dab2656558f33ULL, 0x04fa56f376c83db3ULL},
     {0x5168f4e80ff5b54dULL, 0x562761f92a7a23b4ULL, 0x8113e0c0e47e4401ULL, 0x03fa0984c931c9e3ULL}},
    {{0x3aa372f0bd2d6997ULL, 0x40c690c74709e90fULL, 0x764910f75b45f74bULL, 0x04ba4cc166be8decULL},
     {0x48151f27b24b219cULL, 0xcac5c59a5ce5ae7cULL, 0x4b971e46c4ede85fULL, 0x0040301cf5c1751fULL}},
    {{0xd36ff12c49a58202ULL, 0x2ca65048d53fb325ULL, 0x6e44cca8f61a63bbULL, 0x054302dcb0e6cc1cULL},
     {0x879dcc77e99c2426ULL, 0xce98ad783c25561aULL, 0xb348046268d8ae25ULL, 0x01b77b3e37d13504ULL}},
};
/* The curve's beta, for checking the constants lie on the curve. */
static const uint64_t PED_BETA[4] = {0xf4cdfcb99cee9e89ULL, 0x609ad26c15c915c1ULL, 0x150e596d72f7a8c5ULL,
                                     0x06f21413efbe40deULL};

ped_point *ped_tables[PED_NW];
uint32_t ped_table_size[PED_NW];
static ped_point *ped_table_block;
static const char *ped_error;
static pthread_once_t ped_once = PTHREAD_ONCE_INIT;

int ped_check_be(const uint8_t *b) {
  uint8_t pb[32]; /* p, big-endian */
  for (int i = 0; i < 32; i++) pb[i] = (uint8_t)(PED_P[3 - i / 8] >> (8 * (7 - i % 8)));
  for (int i = 0; i < 32; i++) {
    if (b[i] != pb[i]) return b[i] < pb[i] ? 0 : 1;
  }
  return 1;
}

static void build_tables(void) {
  ped_point pts[5];
  uint64_t beta_m[4];
  ped_to_mont(beta_m, PED_BETA);
  for (int i = 0; i < 5; i++) {
    ped_to_mont(pts[i].x, PED_CONST[i][0]);
    ped_to_mont(pts[i].y, PED_CONST[i][1]);
    if (!ped_on_curve(&pts[i], beta_m)) {
      ped_error = "a Pedersen constant point is not on the curve";
      return;
    }
  }
  ped_point *bases = (ped_point *)malloc(sizeof(ped_point) * PED_BITS);
  if (!bases) {
    ped_error = "out of memory building Pedersen tables";
    return;
  }
  for (int i = 0; i < PED_BITS; i++) {
    if (i == 0 || i == 248 || i == 252 || i == 500) {
      bases[i] = pts[i == 0 ? 1 : i == 248 ? 2 : i == 252 ? 3 : 4];
    } else {
      ped_affine_double(&bases[i], &bases[i - 1]);
    }
  }
  size_t total = 0;
  for (int j = 0; j < PED_NW; j++) {
    ped_table_size[j] = 1u << PED_WINDOW_BITS(j);
    total += ped_table_size[j];
  }
  /* In 2 MiB pages where the OS has them: a hash looks up one random entry in each of 32 tables of
   * up to 4 MiB, and with 4 KiB pages nearly every lookup also misses the TLB. Linux gives huge
   * pages to such a block only when asked (madvise). */
  const size_t huge = (size_t)2 << 20, bytes = (total * sizeof(ped_point) + huge - 1) / huge * huge;
  ped_point *block = (ped_point *)aligned_alloc(huge, bytes);
#ifdef MADV_HUGEPAGE
  if (block) madvise(block, bytes, MADV_HUGEPAGE); /* advice only: 4 KiB pages if refused */
#endif
  uint64_t(*tmp)[4] = malloc(sizeof(uint64_t[4]) << (PED_W - 1));
  if (!block || !tmp) {
    free(block);
    free(tmp);
    free(bases);
    ped_error = "out of memory building Pedersen tables";
    return;
  }
  memset(block, 0, total * sizeof(ped_point));
  size_t off = 0;
  for (int j = 0; j < PED_NW && !ped_error; j++) {
    ped_point *t = block + off;
    ped_tables[j] = t;
    off += ped_table_size[j];
    const int nb = __builtin_ctz(ped_table_size[j]);
    /* Entry 0 is S in window 0 and unused (the identity) elsewhere. */
    if (j == 0) t[0] = pts[0];
    for (int b = 0; b < nb; b++) {
      const ped_point *base = &bases[PED_WINDOW_START(j) + b];
      const size_t half = (size_t)1 << b;
      if (j == 0) {
        if (ped_add_fixed(t + half, t, base, half, tmp)) ped_error = "degenerate Pedersen table";
      } else {
        t[half] = *base;
        if (half > 1 && ped_add_fixed(t + half + 1, t + 1, base, half - 1, tmp))
          ped_error = "degenerate Pedersen table";
      }
    }
  }
  free(tmp);
  free(bases);
  if (ped_error) {
    free(block);
    return;
  }
  ped_table_block = block;
}

static void init_once(void) { build_tables(); }

int ped_init(void) {
  pthread_once(&ped_once, init_once);
  return ped_error ? -1 : 0;
}

const char *ped_init_error(void) { return ped_error; }

/* ---- CPU dispatch ---- */

static int always(void) { return 1; }

#ifdef PED_HAVE_X86
#include <cpuid.h>
/* cpuid is slow under virtualisation (it traps to the hypervisor), so ask once. */
static int probe_adx(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
  return (b & (1u << 8)) && (b & (1u << 19)); /* BMI2 and ADX */
}
int ped_cpu_has_adx(void) {
  static int cached = -1;
  if (cached < 0) cached = probe_adx();
  return cached;
}
#endif

int ped_hash_repeated(ped_kernel_fn fn, const uint8_t *vs, const uint8_t *c, int c_is_y, uint8_t *out, size_t n) {
  if (n == 0) return 0;
  uint8_t *rep = (uint8_t *)malloc(32 * n);
  if (!rep) return -1;
  for (size_t i = 0; i < n; i++) memcpy(rep + 32 * i, c, 32);
  const int rc = c_is_y ? fn(vs, rep, out, n) : fn(rep, vs, out, n);
  free(rep);
  return rc;
}

int ped_hash_const(const ped_kernel *k, const uint8_t *vs, const uint8_t *c, int c_is_y, uint8_t *out, size_t n) {
  if (n == 0) return 0;
  if (k->const_fn) return k->const_fn(vs, c, c_is_y, out, n);
  return ped_hash_repeated(k->fn, vs, c, c_is_y, out, n);
}

static int path_bit(const uint8_t *path, unsigned k) { return (path[31 - k / 8] >> (k % 8)) & 1; }

int ped_climb_chains(const ped_kernel *k, const uint8_t *starts, const uint8_t *paths, const uint8_t *from,
                     const uint8_t *to, const uint8_t *empty, size_t n, unsigned step, size_t slots, uint8_t *tops,
                     uint8_t *marks) {
  if (n == 0) return 0;
  unsigned lo = 255, hi = 0;
  for (size_t i = 0; i < n; i++) {
    if (from[i] < to[i] && from[i] < lo) lo = from[i];
    if (to[i] > hi) hi = to[i];
  }
  /* cur: each chain's value; side lists of chain indices and their packed inputs and outputs. */
  uint8_t *cur = (uint8_t *)malloc(32 * n), *in = (uint8_t *)malloc(32 * n), *up = (uint8_t *)malloc(32 * n);
  uint32_t *idx = (uint32_t *)malloc(sizeof(uint32_t) * n);
  int rc = (cur && in && up && idx) ? 0 : -1;
  if (rc == 0) memcpy(cur, starts, 32 * n);
  for (unsigned h = lo; rc == 0 && h < hi; h++) {
    /* Side 0 (the chain on the left, E[h] as y), then side 1. */
    for (int side = 0; rc == 0 && side < 2; side++) {
      size_t m = 0;
      for (size_t i = 0; i < n; i++) {
        if (from[i] <= h && h < to[i] && path_bit(paths + 32 * i, h) == side) {
          idx[m] = (uint32_t)i;
          memcpy(in + 32 * m, cur + 32 * i, 32);
          m++;
        }
      }
      if (m == 0) continue;
      rc = ped_hash_const(k, in, empty + 32 * (size_t)h, side == 0, up, m);
      for (size_t j = 0; rc == 0 && j < m; j++) {
        const size_t i = idx[j];
        memcpy(cur + 32 * i, up + 32 * j, 32);
        const unsigned at = h + 1;
        if (at < to[i] && at % step == 0) memcpy(marks + 32 * (i * slots + at / step - 1), up + 32 * j, 32);
      }
    }
  }
  if (rc == 0) memcpy(tops, cur, 32 * n);
  free(cur);
  free(in);
  free(up);
  free(idx);
  return rc;
}

const ped_kernel ped_kernels[] = {
#ifdef PED_HAVE_X86
    {"ifma", ped_hash_ifma, ped_cpu_has_ifma, ped_hash_ifma_const},
    {"adx", ped_hash_adx, ped_cpu_has_adx, ped_hash_adx_const},
#endif
    {"portable", ped_hash_portable, always, ped_hash_portable_const},
};
const size_t ped_kernel_count = sizeof(ped_kernels) / sizeof(ped_kernels[0]);
