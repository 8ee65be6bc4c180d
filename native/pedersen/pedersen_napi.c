/*
 * The Pedersen engine's N-API functions, registered on the addon's exports by ped_register
 * (native/dacd_native.c calls it):
 *
 *   hashMany(xs, ys, out, kernel?)  xs, ys: n packed 32-byte big-endian field elements each;
 *                                   out: n*32 bytes for the hashes. Throws a RangeError naming the
 *                                   first input at or above the field prime (nothing is reduced).
 *   hashConst(vs, c, cIsY, out, kernel?)
 *                                   one-sided pairs: H(v_i, c) when cIsY, else H(c, v_i), with c a
 *                                   single 32-byte value (core.h); same range checks and errors.
 *   climbChains(starts, paths, from, to, empty, step, slots, tops, marks, kernel?)
 *                                   n chains of one-sided pairs climbed to their ends in one call
 *                                   (ped_climb_chains in core.h): starts and paths n*32 bytes, from
 *                                   and to n heights (Uint8Array), empty E[0..] packed; the value at
 *                                   each chain's end into tops (n*32), those at multiples of step
 *                                   on the way into marks (slots per chain). Range checks as above.
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
#include "pedersen_napi.h"
#include "../napi_call.h"

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

/* The range check of one side's packed values, named `which` in the error. */
static int check_inputs_one(napi_env env, const uint8_t *vs, size_t vl, const char *which) {
  for (size_t i = 0; i < vl / 32; i++) {
    if (ped_check_be(vs + 32 * i)) {
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

/* The kernel named by argument v (a string), or the best one when v is undefined or null. Throws
 * and returns NULL when the name is unknown or v is not a string. */
static const ped_kernel *kernel_arg(napi_env env, napi_value v, bool given) {
  napi_valuetype vt = napi_undefined;
  if (given && napi_typeof(env, v, &vt) != napi_ok) {
    napi_throw_error(env, NULL, "N-API call failed");
    return NULL;
  }
  if (vt == napi_undefined || vt == napi_null) return find_kernel(NULL);
  if (vt != napi_string) {
    napi_throw_type_error(env, NULL, "kernel must be a string");
    return NULL;
  }
  char name[32] = {0};
  size_t nl;
  if (napi_get_value_string_utf8(env, v, name, sizeof name, &nl) != napi_ok) {
    napi_throw_error(env, NULL, "N-API call failed");
    return NULL;
  }
  const ped_kernel *k = find_kernel(name);
  if (!k) {
    char msg[96];
    snprintf(msg, sizeof msg, "Pedersen kernel \"%s\" is not available on this CPU or build", name);
    napi_throw_error(env, "ERR_PEDERSEN_KERNEL", msg);
  }
  return k;
}

/* Throws unless out has room for the hashes and the tables are built; 0 when ready to hash. */
static int ready_to_hash(napi_env env, size_t out_len, size_t in_len) {
  if (out_len < in_len) {
    napi_throw_range_error(env, "ERR_PEDERSEN_INPUT_LENGTH", "out is too small for the hashes");
    return -1;
  }
  if (ped_init() != 0) {
    napi_throw_error(env, "ERR_PEDERSEN_INIT", ped_init_error());
    return -1;
  }
  return 0;
}

static void throw_kernel_failed(napi_env env) {
  napi_throw_error(env, "ERR_PEDERSEN_INTERNAL", "Pedersen kernel failed (allocation or point at infinity)");
}

static napi_value hash_many(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 3) {
    napi_throw_type_error(env, NULL, "hashMany(xs, ys, out, kernel?) needs three buffers");
    return NULL;
  }
  uint8_t *xs, *ys, *out;
  size_t xl, yl, ol;
  if (get_bytes(env, argv[0], &xs, &xl, "xs") || get_bytes(env, argv[1], &ys, &yl, "ys") ||
      get_bytes(env, argv[2], &out, &ol, "out"))
    return NULL;
  const ped_kernel *k = kernel_arg(env, argv[3], argc >= 4);
  if (!k || check_inputs(env, xs, xl, ys, yl) || ready_to_hash(env, ol, xl)) return NULL;
  if (k->fn(xs, ys, out, xl / 32) != 0) throw_kernel_failed(env);
  return NULL;
}

static napi_value hash_const(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 4) {
    napi_throw_type_error(env, NULL, "hashConst(vs, c, cIsY, out, kernel?) needs four arguments");
    return NULL;
  }
  uint8_t *vs, *c, *out;
  size_t vl, cl, ol;
  bool c_is_y = false;
  if (get_bytes(env, argv[0], &vs, &vl, "vs") || get_bytes(env, argv[1], &c, &cl, "c") ||
      get_bytes(env, argv[3], &out, &ol, "out"))
    return NULL;
  NAPI_CALL(env, napi_get_value_bool(env, argv[2], &c_is_y));
  const ped_kernel *k = kernel_arg(env, argv[4], argc >= 5);
  if (!k) return NULL;
  if (cl != 32 || vl % 32 != 0) {
    napi_throw_range_error(env, "ERR_PEDERSEN_INPUT_LENGTH", "hashConst needs 32-byte values and a 32-byte constant");
    return NULL;
  }
  if (ped_check_be(c)) {
    napi_throw_range_error(env, "ERR_PEDERSEN_RANGE", "Pedersen constant input is not below the field prime");
    return NULL;
  }
  if (check_inputs_one(env, vs, vl, c_is_y ? "x" : "y") || ready_to_hash(env, ol, vl)) return NULL;
  if (ped_hash_const(k, vs, c, c_is_y, out, vl / 32) != 0) throw_kernel_failed(env);
  return NULL;
}

static int throw_range(napi_env env, const char *code, const char *msg) {
  napi_throw_range_error(env, code, msg);
  return -1;
}

/* The shapes climbChains needs: every chain within the empties given and its marks within marks. */
static int check_chains(napi_env env, size_t n, const uint8_t *from, const uint8_t *to, size_t empties,
                        uint32_t step, uint32_t slots, size_t marks_len) {
  char msg[128];
  if (step == 0) return throw_range(env, "ERR_PEDERSEN_INPUT_LENGTH", "climbChains needs a step of at least 1");
  for (size_t i = 0; i < n; i++) {
    if (from[i] > to[i] || (from[i] < to[i] && to[i] > empties)) {
      snprintf(msg, sizeof msg, "chain %zu climbs from height %u to %u with E[0..%zu)", i, from[i], to[i], empties);
      return throw_range(env, "ERR_PEDERSEN_INPUT_LENGTH", msg);
    }
    const size_t marked = to[i] > 0 ? (size_t)(to[i] - 1) / step : 0; /* marks below to[i] */
    if (marked > 0 && (marked > slots || marks_len < 32 * ((i * slots) + marked))) {
      snprintf(msg, sizeof msg, "marks has no room for chain %zu's values up to height %u", i, to[i]);
      return throw_range(env, "ERR_PEDERSEN_INPUT_LENGTH", msg);
    }
  }
  return 0;
}

static napi_value climb_chains(napi_env env, napi_callback_info info) {
  size_t argc = 10;
  napi_value argv[10];
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 9) {
    napi_throw_type_error(env, NULL,
                          "climbChains(starts, paths, from, to, empty, step, slots, tops, marks, kernel?) needs nine arguments");
    return NULL;
  }
  uint8_t *starts, *paths, *from, *to, *empty, *tops, *marks;
  size_t sl, pl, fl, tl, el, ol, ml;
  uint32_t step, slots;
  if (get_bytes(env, argv[0], &starts, &sl, "starts") || get_bytes(env, argv[1], &paths, &pl, "paths") ||
      get_bytes(env, argv[2], &from, &fl, "from") || get_bytes(env, argv[3], &to, &tl, "to") ||
      get_bytes(env, argv[4], &empty, &el, "empty") || get_bytes(env, argv[7], &tops, &ol, "tops") ||
      get_bytes(env, argv[8], &marks, &ml, "marks"))
    return NULL;
  NAPI_CALL(env, napi_get_value_uint32(env, argv[5], &step));
  NAPI_CALL(env, napi_get_value_uint32(env, argv[6], &slots));
  const ped_kernel *k = kernel_arg(env, argv[9], argc >= 10);
  if (!k) return NULL;
  const size_t n = sl / 32;
  if (sl % 32 != 0 || pl != sl || fl != n || tl != n || el % 32 != 0) {
    napi_throw_range_error(env, "ERR_PEDERSEN_INPUT_LENGTH",
                           "climbChains needs n*32 bytes of starts and paths, n heights each in from and to");
    return NULL;
  }
  if (check_chains(env, n, from, to, el / 32, step, slots, ml) || check_inputs_one(env, starts, sl, "starts") ||
      check_inputs_one(env, empty, el, "empty") || ready_to_hash(env, ol, sl))
    return NULL;
  if (ped_climb_chains(k, starts, paths, from, to, empty, n, step, slots, tops, marks) != 0) throw_kernel_failed(env);
  return NULL;
}

static napi_value check_inputs_js(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
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
  NAPI_CALL(env, napi_create_array(env, &arr));
  uint32_t j = 0;
  for (size_t i = 0; i < ped_kernel_count; i++) {
    if (!ped_kernels[i].supported()) continue;
    NAPI_CALL(env, napi_create_string_utf8(env, ped_kernels[i].name, NAPI_AUTO_LENGTH, &s));
    NAPI_CALL(env, napi_set_element(env, arr, j++, s));
  }
  return arr;
}

int ped_register(napi_env env, napi_value exports) {
  if (ped_init() != 0) {
    napi_throw_error(env, "ERR_PEDERSEN_INIT", ped_init_error());
    return 0;
  }
  napi_value fn, v;
  return napi_create_function(env, "hashMany", NAPI_AUTO_LENGTH, hash_many, NULL, &fn) == napi_ok &&
         napi_set_named_property(env, exports, "hashMany", fn) == napi_ok &&
         napi_create_function(env, "hashConst", NAPI_AUTO_LENGTH, hash_const, NULL, &fn) == napi_ok &&
         napi_set_named_property(env, exports, "hashConst", fn) == napi_ok &&
         napi_create_function(env, "climbChains", NAPI_AUTO_LENGTH, climb_chains, NULL, &fn) == napi_ok &&
         napi_set_named_property(env, exports, "climbChains", fn) == napi_ok &&
         napi_create_function(env, "checkInputs", NAPI_AUTO_LENGTH, check_inputs_js, NULL, &fn) == napi_ok &&
         napi_set_named_property(env, exports, "checkInputs", fn) == napi_ok &&
         napi_create_function(env, "kernels", NAPI_AUTO_LENGTH, kernels_js, NULL, &fn) == napi_ok &&
         napi_set_named_property(env, exports, "kernels", fn) == napi_ok &&
         napi_create_string_utf8(env, find_kernel(NULL)->name, NAPI_AUTO_LENGTH, &v) == napi_ok &&
         napi_set_named_property(env, exports, "bestKernel", v) == napi_ok &&
         napi_create_uint32(env, PED_W, &v) == napi_ok && napi_set_named_property(env, exports, "windowBits", v) == napi_ok;
}
