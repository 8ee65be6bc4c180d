/*
 * N-API binding for the Pedersen engine.
 *
 *   hashMany(xs, ys, out, kernel?)  xs, ys: n packed 32-byte big-endian field elements each;
 *                                   out: n*32 bytes for the hashes. Throws a RangeError naming the
 *                                   first input at or above the field prime (nothing is reduced).
 *   checkInputs(xs, ys)             the range check alone.
 *   kernels()                       names of the kernels this CPU can run, fastest first.
 *   bestKernel                      the kernel used when none is named.
 *   windowBits                      table window width the addon was built with.
 *
 * Hashes public data only, so none of this is constant-time (see core.h).
 */
#include <node_api.h>
#include <stdio.h>
#include <string.h>

#include "core.h"

#define CALL(env, expr)                                   \
  do {                                                    \
    if ((expr) != napi_ok) {                              \
      napi_throw_error((env), NULL, "N-API call failed"); \
      return NULL;                                        \
    }                                                     \
  } while (0)

static int get_bytes(napi_env env, napi_value v, uint8_t **data, size_t *len, const char *what) {
  bool is_ta = false;
  napi_typedarray_type type;
  size_t length = 0;
  void *ptr = NULL;
  if (napi_is_typedarray(env, v, &is_ta) != napi_ok || !is_ta ||
      napi_get_typedarray_info(env, v, &type, &length, &ptr, NULL, NULL) != napi_ok || type != napi_uint8_array) {
    char msg[96];
    snprintf(msg, sizeof msg, "%s must be a Uint8Array or Buffer", what);
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg);
    return -1;
  }
  *data = (uint8_t *)ptr;
  *len = length;
  return 0;
}

static int check_inputs(napi_env env, const uint8_t *xs, size_t xl, const uint8_t *ys, size_t yl) {
  if (xl != yl || xl % 32 != 0) {
    char msg[128];
    snprintf(msg, sizeof msg, "Pedersen inputs must be equal multiples of 32 bytes (%zu, %zu)", xl, yl);
    napi_throw_range_error(env, "ERR_PEDERSEN_INPUT_LENGTH", msg);
    return -1;
  }
  const size_t n = xl / 32;
  for (size_t i = 0; i < n; i++) {
    const char *which = ped_check_be(xs + 32 * i) ? "x" : ped_check_be(ys + 32 * i) ? "y" : NULL;
    if (which) {
      char msg[96];
      snprintf(msg, sizeof msg, "Pedersen input %s[%zu] is not below the field prime", which, i);
      napi_throw_range_error(env, "ERR_PEDERSEN_RANGE", msg);
      return -1;
    }
  }
  return 0;
}

static const ped_kernel *find_kernel(const char *name) {
  for (size_t i = 0; i < ped_kernel_count; i++) {
    if (!ped_kernels[i].supported()) continue;
    if (!name || strcmp(ped_kernels[i].name, name) == 0) return &ped_kernels[i];
  }
  return NULL;
}

static napi_value hash_many(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 3) {
    napi_throw_type_error(env, NULL, "hashMany(xs, ys, out, kernel?) needs three buffers");
    return NULL;
  }
  uint8_t *xs, *ys, *out;
  size_t xl, yl, ol;
  if (get_bytes(env, argv[0], &xs, &xl, "xs") || get_bytes(env, argv[1], &ys, &yl, "ys") ||
      get_bytes(env, argv[2], &out, &ol, "out"))
    return NULL;
  const ped_kernel *k = NULL;
  char name[32] = {0};
  napi_valuetype vt = napi_undefined;
  if (argc >= 4) CALL(env, napi_typeof(env, argv[3], &vt));
  if (vt == napi_string) {
    size_t nl;
    CALL(env, napi_get_value_string_utf8(env, argv[3], name, sizeof name, &nl));
    k = find_kernel(name);
    if (!k) {
      char msg[96];
      snprintf(msg, sizeof msg, "Pedersen kernel \"%s\" is not available on this CPU or build", name);
      napi_throw_error(env, "ERR_PEDERSEN_KERNEL", msg);
      return NULL;
    }
  } else if (vt != napi_undefined && vt != napi_null) {
    napi_throw_type_error(env, NULL, "kernel must be a string");
    return NULL;
  } else {
    k = find_kernel(NULL);
  }
  if (check_inputs(env, xs, xl, ys, yl)) return NULL;
  if (ol < xl) {
    napi_throw_range_error(env, "ERR_PEDERSEN_INPUT_LENGTH", "out is too small for the hashes");
    return NULL;
  }
  if (ped_init() != 0) {
    napi_throw_error(env, "ERR_PEDERSEN_INIT", ped_init_error());
    return NULL;
  }
  if (k->fn(xs, ys, out, xl / 32) != 0) {
    napi_throw_error(env, "ERR_PEDERSEN_INTERNAL", "Pedersen kernel failed (allocation or point at infinity)");
    return NULL;
  }
  return NULL;
}

static napi_value check_inputs_js(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  uint8_t *xs, *ys;
  size_t xl, yl;
  if (argc < 2 || get_bytes(env, argv[0], &xs, &xl, "xs") || get_bytes(env, argv[1], &ys, &yl, "ys")) {
    if (argc < 2) napi_throw_type_error(env, NULL, "checkInputs(xs, ys) needs two buffers");
    return NULL;
  }
  check_inputs(env, xs, xl, ys, yl);
  return NULL;
}

static napi_value kernels_js(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value arr, s;
  CALL(env, napi_create_array(env, &arr));
  uint32_t j = 0;
  for (size_t i = 0; i < ped_kernel_count; i++) {
    if (!ped_kernels[i].supported()) continue;
    CALL(env, napi_create_string_utf8(env, ped_kernels[i].name, NAPI_AUTO_LENGTH, &s));
    CALL(env, napi_set_element(env, arr, j++, s));
  }
  return arr;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  if (ped_init() != 0) {
    napi_throw_error(env, "ERR_PEDERSEN_INIT", ped_init_error());
    return NULL;
  }
  napi_value fn, v;
  if (napi_create_function(env, "hashMany", NAPI_AUTO_LENGTH, hash_many, NULL, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "hashMany", fn) != napi_ok ||
      napi_create_function(env, "checkInputs", NAPI_AUTO_LENGTH, check_inputs_js, NULL, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "checkInputs", fn) != napi_ok ||
      napi_create_function(env, "kernels", NAPI_AUTO_LENGTH, kernels_js, NULL, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "kernels", fn) != napi_ok ||
      napi_create_string_utf8(env, find_kernel(NULL)->name, NAPI_AUTO_LENGTH, &v) != napi_ok ||
      napi_set_named_property(env, exports, "bestKernel", v) != napi_ok ||
      napi_create_uint32(env, PED_W, &v) != napi_ok || napi_set_named_property(env, exports, "windowBits", v) != napi_ok)
    return NULL;
  return exports;
}
