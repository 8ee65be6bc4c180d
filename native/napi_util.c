/* napi_util.h */
#include "napi_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "napi_call.h"

/** What nu_wrap puts in an external: the object, how to free it, and its kind. */
typedef struct {
  void *p;
  void (*release)(void *);
  const char *what;
} handle;

static void finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  handle *h = data;
  if (h->p) h->release(h->p);
  free(h);
}

napi_value nu_wrap(napi_env env, void *p, void (*release)(void *), const char *what, const char *memory_code) {
  handle *h = malloc(sizeof *h);
  napi_value out;
  if (!h || napi_create_external(env, h, finalize, NULL, &out) != napi_ok) {
    free(h);
    release(p);
    napi_throw_error(env, memory_code, "out of memory");
    return NULL;
  }
  *h = (handle){p, release, what};
  return out;
}

/** The handle inside an external of kind `what`, or NULL. */
static handle *handle_of(napi_env env, napi_value v, const char *what) {
  napi_valuetype type;
  handle *h = NULL;
  if (napi_typeof(env, v, &type) != napi_ok || type != napi_external ||
      napi_get_value_external(env, v, (void **)&h) != napi_ok || !h || h->what != what)
    return NULL;
  return h;
}

void *nu_unwrap(napi_env env, napi_value v, const char *what) {
  handle *h = handle_of(env, v, what);
  if (!h || !h->p) {
    char msg[80];
    snprintf(msg, sizeof msg, "not a live %s", what);
    napi_throw_type_error(env, NULL, msg);
    return NULL;
  }
  return h->p;
}

void nu_release(napi_env env, napi_value v, const char *what) {
  handle *h = handle_of(env, v, what);
  if (h && h->p) {
    h->release(h->p);
    h->p = NULL;
  }
}

napi_value nu_null(napi_env env) {
  napi_value out;
  NAPI_CALL(env, napi_get_null(env, &out));
  return out;
}

napi_value nu_needs(napi_env env, size_t n, const uint8_t *hashes, const int32_t *positions,
                    const uint32_t *gens) {
  if (n == 0) return nu_null(env);
  void *h, *p, *g;
  napi_value v[3];
  if (!(v[0] = nu_new_typed(env, napi_uint8_array, n * 32, 1, &h)) ||
      !(v[1] = nu_new_typed(env, napi_int32_array, n * 2, 4, &p)) ||
      !(v[2] = nu_new_typed(env, napi_uint32_array, n, 4, &g)))
    return NULL;
  memcpy(h, hashes, n * 32);
  memcpy(p, positions, n * 2 * sizeof(int32_t));
  memcpy(g, gens, n * sizeof(uint32_t));
  return nu_tuple(env, v, 3);
}

int nu_supplied(napi_env env, napi_value recs, napi_value lens, size_t pending, uint32_t missing,
                const char *code, uint8_t **records, size_t *bytes, uint32_t **lengths) {
  size_t n;
  if (!nu_typed(env, recs, napi_uint8_array, (void **)records, bytes) ||
      !nu_typed(env, lens, napi_uint32_array, (void **)lengths, &n))
    return 0;
  /* The walk reads exactly as many records as its last step asked for. */
  if (n != pending) {
    napi_throw_range_error(env, code, "one record per record asked for");
    return 0;
  }
  size_t sum = 0;
  for (size_t i = 0; i < n; i++)
    if ((*lengths)[i] != missing) sum += (*lengths)[i];
  if (sum != *bytes) {
    napi_throw_range_error(env, code, "the records' lengths do not add up to their bytes");
    return 0;
  }
  return 1;
}

int nu_new_nodes(napi_env env, size_t n, size_t bytes, napi_value v[5], void *data[5]) {
  return (v[0] = nu_new_typed(env, napi_uint8_array, 32, 1, &data[0])) &&
         (v[1] = nu_new_typed(env, napi_uint8_array, n * 32, 1, &data[1])) &&
         (v[2] = nu_new_typed(env, napi_uint8_array, bytes, 1, &data[2])) &&
         (v[3] = nu_new_typed(env, napi_uint32_array, n, 4, &data[3])) &&
         (v[4] = nu_new_typed(env, napi_int32_array, n * 2, 4, &data[4]));
}

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
