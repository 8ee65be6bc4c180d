/* Standalone test/benchmark driver for the C engine, not part of the addon:
 *   gcc -O3 -DPED_W=14 -o /tmp/pedbench engine.c kernel_adx.c kernel_ifma.c bench_main.c -lpthread */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  double t0 = now();
  if (ped_init()) {
    printf("init failed: %s\n", ped_init_error());
    return 1;
  }
  printf("init %.1f ms, W=%d NW=%d\n", (now() - t0) * 1e3, PED_W, PED_NW);
  uint8_t x[32] = {0}, y[32] = {0}, o[32];
  y[31] = 2;
  x[31] = 1;
  size_t n = argc > 1 ? (size_t)atol(argv[1]) : 100000;
  uint8_t *xs = malloc(32 * n), *ys = malloc(32 * n), *out = malloc(32 * n);
  srand(1);
  for (size_t i = 0; i < 32 * n; i++) {
    xs[i] = rand();
    ys[i] = rand();
  }
  for (size_t i = 0; i < n; i++) {
    xs[32 * i] &= 7;
    ys[32 * i] &= 7;
  }
  for (size_t kk = 0; kk < ped_kernel_count; kk++) { size_t k = getenv("REV") ? ped_kernel_count - 1 - kk : kk;
    if (!ped_kernels[k].supported()) continue;
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
  }
  return 0;
}
