/* napi_util.h */
#include "napi_util.h"

#include "napi_call.h"

int nu_args(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < want) {
    napi_throw_type_error(env, NULL, "too few arguments");
    return 0;
  }
  return 1;
}

int nu_typed(napi_env env, napi_value v, napi_typedarray_type type, void **data, size_t *length) {
  bool is = false;
  napi_typedarray_type t;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is ||
      napi_get_typedarray_info(env, v, &t, length, data, NULL, NULL) != napi_ok || t != type) {
    napi_throw_type_error(env, NULL, "a typed array of the wrong kind");
    return 0;
  }
  return 1;
}

napi_value nu_new_typed(napi_env env, napi_typedarray_type type, size_t length, size_t elem, void **data) {
  napi_value ab, out;
  if (napi_create_arraybuffer(env, length * elem, data, &ab) != napi_ok ||
      napi_create_typedarray(env, type, length, ab, 0, &out) != napi_ok) {
    napi_throw_error(env, NULL, "N-API call failed");
    return NULL;
  }
  return out;
}

napi_value nu_tuple(napi_env env, const napi_value *values, uint32_t n) {
  napi_value arr;
  NAPI_CALL(env, napi_create_array_with_length(env, n, &arr));
  for (uint32_t i = 0; i < n; i++) NAPI_CALL(env, napi_set_element(env, arr, i, values[i]));
  return arr;
}

int nu_register_all(napi_env env, napi_value exports, const nu_named_fn *fns, size_t n) {
  for (size_t i = 0; i < n; i++) {
    napi_value fn;
    if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL, &fn) != napi_ok ||
        napi_set_named_property(env, exports, fns[i].name, fn) != napi_ok)
      return 0;
  }
  return 1;
}
