/* Standalone test/benchmark driver for the C engine, not part of the addon (the scalar kernel is
 * compiled twice, the second time as the ADX kernel, as binding.gyp does):
 *   gcc -O3 -DPED_W=16 -DPED_SCALAR_ADX -c -o /tmp/kernel_adx.o kernel_scalar.c
 *   gcc -O3 -DPED_W=16 -o /tmp/pedbench engine.c kernel_scalar.c /tmp/kernel_adx.o kernel_ifma.c safegcd.c bench_main.c -lpthread
 *   /tmp/pedbench [n]   times every supported kernel (KERNEL=name: only that one; REV=1: reverse order)
 *   /tmp/pedbench check  compares every kernel (and its one-sided form) with the portable kernel */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"
#include "kernel_scalar.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void random_pairs(uint8_t *xs, uint8_t *ys, size_t n) {
  for (size_t i = 0; i < 32 * n; i++) {
    xs[i] = rand();
    ys[i] = rand();
  }
  for (size_t i = 0; i < n; i++) { /* below 2^251 < p */
    xs[32 * i] &= 7;
    ys[32 * i] &= 7;
  }
}

/* Big-endian 32-byte value from four 64-bit limbs, most significant first. */
static void be(uint8_t *o, uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  const uint64_t w[4] = {a, b, c, d};
  for (int q = 0; q < 4; q++)
    for (int k = 0; k < 8; k++) o[8 * q + k] = (uint8_t)(w[q] >> (56 - 8 * k));
}

static int failures;

/* Kernel k against the portable kernel on n pairs, in one call. */
static void compare(const ped_kernel *k, const uint8_t *xs, const uint8_t *ys, size_t n, const char *what) {
  uint8_t *a = malloc(32 * n + 1), *b = malloc(32 * n + 1);
  const int ra = k->fn(xs, ys, a, n), rb = ped_hash_portable(xs, ys, b, n);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (memcmp(a + 32 * i, b + 32 * i, 32)) bad++ == 0 ? first = i : 0;
  if (ra || rb || bad) {
    printf("FAIL %s %s n=%zu: rc %d/%d, %zu differ (first at %zu)\n", k->name, what, n, ra, rb, bad, first);
    failures++;
  }
  free(a);
  free(b);
}

/* k's one-sided form (H(v_i, c) or H(c, v_i)) against the portable kernel on the written-out pairs. */
static void compare_const(const ped_kernel *k, const uint8_t *vs, const uint8_t *c, int c_is_y, size_t n) {
  uint8_t *rep = malloc(32 * n + 1), *a = malloc(32 * n + 1), *b = malloc(32 * n + 1);
  for (size_t i = 0; i < n; i++) memcpy(rep + 32 * i, c, 32);
  const int ra = ped_hash_const(k, vs, c, c_is_y, a, n);
  const int rb = c_is_y ? ped_hash_portable(vs, rep, b, n) : ped_hash_portable(rep, vs, b, n);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += memcmp(a + 32 * i, b + 32 * i, 32) != 0;
  if (ra || rb || bad) {
    printf("FAIL %s const(c_is_y=%d) n=%zu: rc %d/%d, %zu differ\n", k->name, c_is_y, n, ra, rb, bad);
    failures++;
  }
  free(rep);
  free(a);
  free(b);
}

static int check(void) {
  enum { N = 100000, NE = 14 };
  uint8_t *xs = malloc(32 * N), *ys = malloc(32 * N);
  srand(1);
  random_pairs(xs, ys, N);
  /* Edge values: 0, 1, 2, p-1, p-2, around 2^248, 2^251 - 1 (all bits set below p), 2^251, and
   * the largest values below p with the low limbs all ones. */
  uint8_t edge[NE][32];
  const uint64_t top = 0x0800000000000011ULL;
  be(edge[0], 0, 0, 0, 0);
  be(edge[1], 0, 0, 0, 1);
  be(edge[2], 0, 0, 0, 2);
  be(edge[3], top, 0, 0, 0);     /* p - 1 */
  be(edge[4], top - 1, ~0ULL, ~0ULL, ~0ULL); /* p - 2 */
  be(edge[5], 1ULL << 56, 0, 0, 0);           /* 2^248 */
  be(edge[6], (1ULL << 56) - 1, ~0ULL, ~0ULL, ~0ULL); /* 2^248 - 1 */
  be(edge[7], 1ULL << 56, 0, 0, 1);                   /* 2^248 + 1 */
  be(edge[8], (1ULL << 59) - 1, ~0ULL, ~0ULL, ~0ULL); /* 2^251 - 1 */
  be(edge[9], 1ULL << 59, 0, 0, 0);                   /* 2^251 */
  be(edge[10], top - 1, ~0ULL, ~0ULL, ~0ULL - 5);
  be(edge[11], 0x0800000000000010ULL, ~0ULL, ~0ULL, ~0ULL);
  be(edge[12], 0, 0, 0, 1ULL << 63);
  be(edge[13], 0x07ffffffffffffffULL, 0, ~0ULL, 0);
  for (size_t kk = 0; kk < ped_kernel_count; kk++) {
    const ped_kernel *k = &ped_kernels[kk];
    if (!k->supported()) continue;
    /* One-sided forms, constants random and edge values (every kernel has its own). */
    for (int c_is_y = 0; c_is_y < 2; c_is_y++) {
      compare_const(k, xs, ys, c_is_y, 3001);
      for (int i = 0; i < NE; i++) compare_const(k, xs + 32 * i, edge[i], c_is_y, 1025);
      for (size_t s = 0; s < 4; s++) compare_const(k, xs, ys + 32 * s, c_is_y, (size_t[]){1, 47, 48, 513}[s]);
    }
    if (k->fn == ped_hash_portable) {
      printf("%s: one-sided forms checked against its two-sided form\n", k->name);
      continue;
    }
    compare(k, xs, ys, N, "random");
    const size_t sizes[] = {1, 2, 63, 64, 65, 127, 1000, 1023, 1024, 1025, 2047, 2049, 3001};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) compare(k, xs + 32 * s, ys + 32 * s, sizes[s], "size");
    /* Every pair of edge values (NE * NE * 5 < 1024), inside a batch of random pairs so that vector
     * kernels see them. */
    uint8_t *ex = malloc(32 * 1024), *ey = malloc(32 * 1024);
    memcpy(ex, xs, 32 * 1024);
    memcpy(ey, ys, 32 * 1024);
    for (int i = 0; i < NE; i++)
      for (int j = 0; j < NE; j++) {
        memcpy(ex + 32 * (5 * (NE * i + j)), edge[i], 32);
        memcpy(ey + 32 * (5 * (NE * i + j)), edge[j], 32);
      }
    compare(k, ex, ey, 1024, "edges");
    /* Edge values in every lane of a batch: x all one edge, y random, and the reverse. */
    for (int i = 0; i < NE; i++) {
      for (int l = 0; l < 1024; l++) memcpy(ex + 32 * l, edge[i], 32);
      compare(k, ex, ys, 1024, "edge x");
      compare(k, xs, ex, 1024, "edge y");
      compare(k, ex, ex, 1024, "edge x=y");
    }
    free(ex);
    free(ey);
    printf("%s: checked against portable\n", k->name);
  }
  free(xs);
  free(ys);
  printf(failures ? "CHECK FAILED (%d)\n" : "all checks passed\n", failures);
  return failures != 0;
}

int main(int argc, char **argv) {
  double t0 = now();
  if (ped_init()) {
    printf("init failed: %s\n", ped_init_error());
    return 1;
  }
  printf("init %.1f ms, W=%d NW=%d\n", (now() - t0) * 1e3, PED_W, PED_NW);
  if (argc > 1 && !strcmp(argv[1], "check")) return check();
  uint8_t x[32] = {0}, y[32] = {0}, o[32];
  y[31] = 2;
  x[31] = 1;
  size_t n = argc > 1 ? (size_t)atol(argv[1]) : 100000;
  uint8_t *xs = malloc(32 * n), *ys = malloc(32 * n), *out = malloc(32 * n);
  srand(1);
  random_pairs(xs, ys, n);
  const char *only = getenv("KERNEL");
  for (size_t kk = 0; kk < ped_kernel_count; kk++) {
    const size_t k = getenv("REV") ? ped_kernel_count - 1 - kk : kk;
    if (!ped_kernels[k].supported() || (only && strcmp(only, ped_kernels[k].name))) continue;
    ped_kernels[k].fn(x, y, o, 1);
    printf("%s H(1,2)=", ped_kernels[k].name);
    for (int i = 0; i < 32; i++) printf("%02x", o[i]);
    printf("\n");
    double best = 1e9;
    for (int r = 0; r < 7; r++) {
      double t = now();
      ped_kernels[k].fn(xs, ys, out, n);
      t = now() - t;
      if (t < best) best = t;
    }
    printf("%s: %.3f us/hash (best of 7)\n", ped_kernels[k].name, best / n * 1e6);
    best = 1e9;
    for (int r = 0; r < 7; r++) {
      double t = now();
      ped_hash_const(&ped_kernels[k], xs, ys, 1, out, n);
      t = now() - t;
      if (t < best) best = t;
    }
    printf("%s: %.3f us/hash one-sided (best of 7)\n", ped_kernels[k].name, best / n * 1e6);
  }
  return 0;
}
