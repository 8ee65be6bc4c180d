/* Helpers (prefix nu_) shared by the addon's tree bindings (trees/patricia_napi.c, trees/merkle_napi.c). */
#ifndef DACD_NAPI_UTIL_H
#define DACD_NAPI_UTIL_H

#include <node_api.h>
#include <stddef.h>
#include <stdint.h>

/** The call's first `want` arguments into argv; 0 (a TypeError thrown) when there are fewer. */
int nu_args(napi_env env, napi_callback_info info, size_t want, napi_value *argv);
/** The data of a typed array of `type`, and its length in elements; 0 (thrown) for anything else. */
int nu_typed(napi_env env, napi_value v, napi_typedarray_type type, void **data, size_t *length);
/** A new typed array of `length` elements of `elem` bytes; its data in *data. NULL (thrown) on failure. */
napi_value nu_new_typed(napi_env env, napi_typedarray_type type, size_t length, size_t elem, void **data);
/** A JavaScript array of `n` values. NULL (thrown) on failure. */
napi_value nu_tuple(napi_env env, const napi_value *values, uint32_t n);
/**
 * An external that owns `p`, tagged with `what` (a string constant naming its kind): `release`
 * frees it when nu_release is called or the collector finds the external. NULL on failure (an
 * error with `memory_code` thrown, and `p` released).
 */
napi_value nu_wrap(napi_env env, void *p, void (*release)(void *), const char *what, const char *memory_code);
/** The live object inside an external that nu_wrap made with the same `what`; NULL (a TypeError) otherwise. */
void *nu_unwrap(napi_env env, napi_value v, const char *what);
/** Releases the object inside an external of kind `what` now (nothing if it is released already). */
void nu_release(napi_env env, napi_value v, const char *what);

/** JavaScript's null (NULL, thrown, if even that fails). */
napi_value nu_null(napi_env env);
/**
 * A walk step's answer: null when it needs nothing (n = 0), else [hashes, positions, gens] of the n
 * records it needs, 32 bytes, (depth, index) and the record's gen each, copied.
 */
napi_value nu_needs(napi_env env, size_t n, const uint8_t *hashes, const int32_t *positions,
                    const uint32_t *gens);
/**
 * The records a walk is supplied with: `recs` (a Uint8Array, back to back) and `lens` (a
 * Uint32Array, `missing` for a record not there), one per record the walk asked for (`pending`)
 * and adding up to the bytes given. 0 when not (a RangeError with `code` thrown).
 */
int nu_supplied(napi_env env, napi_value recs, napi_value lens, size_t pending, uint32_t missing,
                const char *code, uint8_t **records, size_t *bytes, uint32_t **lengths);
/**
 * A walk's result as five new arrays in v: the root (32 bytes), n hashes, `bytes` of records, n
 * lengths (Uint32Array) and n positions (Int32Array pairs); their data in data[0..5]. 0 when thrown.
 */
int nu_new_nodes(napi_env env, size_t n, size_t bytes, napi_value v[5], void *data[5]);

/** Registers `n` functions on `exports` under their names; 0 on failure. */
typedef struct {
  const char *name;
  napi_callback fn;
} nu_named_fn;
int nu_register_all(napi_env env, napi_value exports, const nu_named_fn *fns, size_t n);

#endif
