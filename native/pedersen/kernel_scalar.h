/*
 * The scalar kernel (kernel_scalar.c): its entry points, and the portable build's arithmetic that
 * building the tables (engine.c) and the one-sided kernels use. Points and field elements are as
 * core.h describes them (affine, Montgomery form, R = 2^256).
 */
#ifndef DACD_PEDERSEN_KERNEL_SCALAR_H
#define DACD_PEDERSEN_KERNEL_SCALAR_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"

/* The kernels (ped_kernel_fn, ped_const_kernel_fn): portable, and for x86-64 with BMI2 and ADX. */
int ped_hash_portable(const uint8_t *xs, const uint8_t *ys, uint8_t *out, size_t n);
int ped_hash_portable_const(const uint8_t *vs, const uint8_t *c, int c_is_y, uint8_t *out, size_t n);
#ifdef PED_HAVE_X86
int ped_hash_adx(const uint8_t *xs, const uint8_t *ys, uint8_t *out, size_t n);
int ped_hash_adx_const(const uint8_t *vs, const uint8_t *c, int c_is_y, uint8_t *out, size_t n);
#endif

/* r = a R mod p: a (below p, normal form) into Montgomery form. */
void ped_to_mont(uint64_t r[4], const uint64_t a[4]);

/* q = 2p, affine (p.y != 0). */
void ped_affine_double(ped_point *q, const ped_point *p);

/* Whether p lies on y^2 = x^3 + x + beta (beta_m: beta in Montgomery form). */
int ped_on_curve(const ped_point *p, const uint64_t beta_m[4]);

/* dst[i] = a[i] + b for i < n, with one shared inversion; tmp holds n elements. Returns 0, or -1
 * when some a[i] and b share their x (a doubling or the identity, which a table never needs). */
int ped_add_fixed(ped_point *dst, const ped_point *a, const ped_point *b, size_t n, uint64_t (*tmp)[4]);

/* A constant input's share of every hash it is in: the sum of its windows' table entries (S
 * included when it is x), affine in the tables' form. Returns 1, or 0 when that sum is the
 * identity (then *out is untouched). */
int ped_const_point(const uint8_t *c, int c_is_y, ped_point *out);

/* Conversions for kernels with their own Montgomery domain: in is a*2^256 mod p (the tables'
 * form), out is a*2^260 mod p; and plain a to a*2^260 mod p. */
void ped_mont256_to_260(uint64_t out[4], const uint64_t in[4]);
void ped_to_mont260(uint64_t out[4], const uint64_t in[4]);

#endif
