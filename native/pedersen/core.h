/*
 * Pedersen hash engine for dacd: shared declarations.
 *
 * SECURITY NOTE: this code hashes public data only (state-update contents that every committee
 * member and the operator already see), so it makes no attempt to be constant-time. Branches and
 * table lookups depend on the inputs on purpose.
 *
 * The hash is computed as a fixed-base multi-scalar multiplication. The 504-bit scalar is the
 * concatenation x (bits 0..251) | y (bits 252..503); bit i multiplies the point B[i], where
 * B[i] = 2^i P0 (i < 248), 2^(i-248) P1 (248 <= i < 252), 2^(i-252) P2 (252 <= i < 500) and
 * 2^(i-500) P3. Each input's 252 bits are cut into PED_NW_X windows of PED_W bits, the last
 * taking what is left (12 bits at 16-bit windows), so that x's windows (0..PED_NW_X-1) and y's
 * (the rest) never share one: one input's share of a hash is a sum over its own windows (used by
 * the one-sided kernels). Window j has a table holding every subset sum of its bases, and the
 * shift point S is folded into every entry of window 0. The hash is then S + sum_j T_j[window_j],
 * i.e. PED_NW-1 point additions per hash.
 */
#ifndef DACD_PEDERSEN_CORE_H
#define DACD_PEDERSEN_CORE_H

#include <stddef.h>
#include <stdint.h>

/* The build picks the width per CPU (scripts/build-native.mjs: 14 with AVX-512 IFMA, else 16). */
#ifndef PED_W
#define PED_W 16
#endif
#if PED_W < 2 || PED_W > 16
#error "PED_W must be 2..16 (window indices are kept in 16 bits by the IFMA kernel)"
#endif
#define PED_BITS 504
#define PED_NW_X ((252 + PED_W - 1) / PED_W)
#define PED_NW (2 * PED_NW_X)
/* Window j's first bit in x | y << 252, and its width. */
#define PED_WINDOW_START(j) ((j) < PED_NW_X ? (j) * PED_W : 252 + ((j) - PED_NW_X) * PED_W)
#define PED_WINDOW_BITS(j) ((j) % PED_NW_X == PED_NW_X - 1 ? 252 - (PED_NW_X - 1) * PED_W : PED_W)

/* A table entry: an affine point, coordinates as 4x64-bit little-endian limbs in Montgomery form
 * (R = 2^256). 64 bytes, one cache line. */
typedef struct {
  uint64_t x[4];
  uint64_t y[4];
} ped_point;

/* Window j's table and the number of entries it has (2^bits of that window). */
extern ped_point *ped_tables[PED_NW];
extern uint32_t ped_table_size[PED_NW];

/* Field constants shared by kernels. */
extern const uint64_t PED_P[4];

/* r = 1/a mod p for a < p as four 64-bit limbs, least significant first (safegcd.c); returns 0,
 * or -1 when a = 0. */
int ped_inv_safegcd(uint64_t r[4], const uint64_t a[4]);

/* Builds the tables once per process (thread-safe). Returns 0 on success. */
int ped_init(void);
/* A message describing why ped_init failed, or NULL. */
const char *ped_init_error(void);

/* 0 when the 32-byte big-endian value is below p, else 1. */
int ped_check_be(const uint8_t *b);

/* A kernel hashes n pairs of already range-checked 32-byte big-endian inputs. Returns 0, or -1 on
 * an internal failure (allocation, or a result at infinity, which needs a discrete-log relation
 * between StarkWare's points and cannot happen in practice). */
typedef int (*ped_kernel_fn)(const uint8_t *xs, const uint8_t *ys, uint8_t *out, size_t n);

/* A one-sided kernel hashes n pairs in which one side is the same 32-byte value c for every pair:
 * H(v_i, c) when c_is_y, else H(c, v_i). A tree's lone-leaf chains are such pairs, with c = E[k]
 * (the empty subtree's root at that level); the constant's windows add one precomputed point
 * instead of a table lookup each. Inputs are range-checked already. */
typedef int (*ped_const_kernel_fn)(const uint8_t *vs, const uint8_t *c, int c_is_y, uint8_t *out, size_t n);

typedef struct {
  const char *name;
  ped_kernel_fn fn;
  int (*supported)(void);
  /* NULL: ped_hash_const repeats the constant and calls fn. */
  ped_const_kernel_fn const_fn;
} ped_kernel;

/* One-sided pairs through a two-sided kernel: the constant written out n times, then fn. */
int ped_hash_repeated(ped_kernel_fn fn, const uint8_t *vs, const uint8_t *c, int c_is_y, uint8_t *out, size_t n);

/* One-sided hashing with kernel k (its own one-sided kernel, or fn on the repeated constant). */
int ped_hash_const(const ped_kernel *k, const uint8_t *vs, const uint8_t *c, int c_is_y, uint8_t *out, size_t n);

/* Climbs n chains of one-sided pairs, as a tree's lone leaves climb to where their chains end.
 * Chain i starts with the value starts[i] (32 bytes) at height from[i] and ends at height to[i]
 * (from[i] <= to[i] < 256); at each height k on the way it is paired with empty[k] (32 bytes each,
 * E[0..]): H(v, E[k]) when bit k of paths[i] (32 bytes, big-endian) is 0, else H(E[k], v). Writes
 * the value at to[i] into tops[i], and the value at each height k with from[i] < k < to[i] and
 * k % step == 0 into marks at (i * slots + k / step - 1) * 32. All chains at one height go to the
 * kernel in two one-sided calls. Inputs are range-checked already; the caller checks that empty
 * holds every E[k] needed and that the marks fit. Returns 0, or -1 as the kernels do. */
int ped_climb_chains(const ped_kernel *k, const uint8_t *starts, const uint8_t *paths, const uint8_t *from,
                     const uint8_t *to, const uint8_t *empty, size_t n, unsigned step, size_t slots, uint8_t *tops,
                     uint8_t *marks);

/* Kernels compiled into this build, fastest first; supported() says whether this CPU runs them. */
extern const ped_kernel ped_kernels[];
extern const size_t ped_kernel_count;

/* The IFMA kernel's entry points (kernel_ifma.c; the scalar kernel's: kernel_scalar.h) and the CPU
 * checks (engine.c). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(PED_NO_X86)
#define PED_HAVE_X86 1
int ped_hash_ifma(const uint8_t *xs, const uint8_t *ys, uint8_t *out, size_t n);
int ped_hash_ifma_const(const uint8_t *vs, const uint8_t *c, int c_is_y, uint8_t *out, size_t n);
int ped_cpu_has_adx(void);
int ped_cpu_has_ifma(void);
#endif

#endif
