/* Helpers (prefix nu_) shared by the addon's tree bindings (trees/patricia_napi.c, trees/merkle_napi.c). */
#ifndef DACD_NAPI_UTIL_H
#define DACD_NAPI_UTIL_H

#include <node_api.h>
#include <stddef.h>

/** The call's first `want` arguments into argv; 0 (a TypeError thrown) when there are fewer. */
int nu_args(napi_env env, napi_callback_info info, size_t want, napi_value *argv);
/** The data of a typed array of `type`, and its length in elements; 0 (thrown) for anything else. */
int nu_typed(napi_env env, napi_value v, napi_typedarray_type type, void **data, size_t *length);
/** A new typed array of `length` elements of `elem` bytes; its data in *data. NULL (thrown) on failure. */
napi_value nu_new_typed(napi_env env, napi_typedarray_type type, size_t length, size_t elem, void **data);
/** A JavaScript array of `n` values. NULL (thrown) on failure. */
napi_value nu_tuple(napi_env env, const napi_value *values, uint32_t n);
/** Registers `n` functions on `exports` under their names; 0 on failure. */
typedef struct {
  const char *name;
  napi_callback fn;
} nu_named_fn;
int nu_register_all(napi_env env, napi_value exports, const nu_named_fn *fns, size_t n);

#endif
