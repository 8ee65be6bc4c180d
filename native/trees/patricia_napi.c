/*
 * The Patricia update (patricia.h) for JavaScript: src/verifier/patricia-native.ts drives it. An
 * update is an external handle; every buffer crosses as a typed array, copied on the way in and
 * out, so no JavaScript memory is held between calls.
 */
#include <node_api.h>
#include <stdlib.h>
#include <string.h>

#include "../napi_call.h"
#include "patricia.h"
#include "patricia_napi.h"

typedef struct {
  pt_update *u;
} handle;

static void finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  handle *h = data;
  pt_free(h->u);
  free(h);
}


static int args(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < want) {
    napi_throw_type_error(env, NULL, "too few arguments");
    return 0;
  }
  return 1;
}

/** The data of a typed array of `type`, and its length in elements. */
static int typed(napi_env env, napi_value v, napi_typedarray_type type, void **data, size_t *length) {
  bool is = false;
  napi_typedarray_type t;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is ||
      napi_get_typedarray_info(env, v, &t, length, data, NULL, NULL) != napi_ok || t != type) {
    napi_throw_type_error(env, NULL, "a typed array of the wrong kind");
    return 0;
  }
  return 1;
}

static pt_update *update_of(napi_env env, napi_value v) {
  handle *h = NULL;
  if (napi_get_value_external(env, v, (void **)&h) != napi_ok || !h || !h->u) {
    napi_throw_type_error(env, NULL, "not a live Patricia update");
    return NULL;
  }
  return h->u;
}

/** The call's first `want` arguments, the first being a live update: that update, or NULL (thrown). */
static pt_update *update_call(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
  if (!args(env, info, want, argv)) return NULL;
  return update_of(env, argv[0]);
}

/** A new typed array of `length` elements; its data in *data. */
static napi_value new_typed(napi_env env, napi_typedarray_type type, size_t length, size_t elem, void **data) {
  napi_value ab, out;
  if (napi_create_arraybuffer(env, length * elem, data, &ab) != napi_ok ||
      napi_create_typedarray(env, type, length, ab, 0, &out) != napi_ok) {
    napi_throw_error(env, NULL, "N-API call failed");
    return NULL;
  }
  return out;
}

static napi_value pair(napi_env env, napi_value a, napi_value b) {
  napi_value arr;
  NAPI_CALL(env, napi_create_array_with_length(env, 2, &arr));
  NAPI_CALL(env, napi_set_element(env, arr, 0, a));
  NAPI_CALL(env, napi_set_element(env, arr, 1, b));
  return arr;
}

static void throw_failed(napi_env env, pt_update *u) {
  const char *msg = pt_error(u);
  napi_throw_error(env, strcmp(msg, "out of memory") == 0 ? "ERR_PATRICIA_MEMORY" : "ERR_PATRICIA_STORE", msg);
}

/** patriciaCreate(height, remembered, ids, leafHashes, oldRoot): a handle. */
static napi_value create(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  if (!args(env, info, 5, argv)) return NULL;
  int32_t height, remembered;
  NAPI_CALL(env, napi_get_value_int32(env, argv[0], &height));
  NAPI_CALL(env, napi_get_value_int32(env, argv[1], &remembered));
  uint8_t *ids, *leaves, *root;
  size_t ni, nl, nr;
  if (!typed(env, argv[2], napi_uint8_array, (void **)&ids, &ni) ||
      !typed(env, argv[3], napi_uint8_array, (void **)&leaves, &nl) ||
      !typed(env, argv[4], napi_uint8_array, (void **)&root, &nr))
    return NULL;
  if (ni % 32 || ni != nl || nr != 32) {
    napi_throw_range_error(env, "ERR_PATRICIA_INPUT", "ids and leaf hashes: 32 bytes each, as many; root: 32");
    return NULL;
  }
  char err[160];
  pt_update *u = pt_create(height, remembered, ids, leaves, ni / 32, root, err, sizeof err);
  if (!u) {
    napi_throw_range_error(env, "ERR_PATRICIA_INPUT", err);
    return NULL;
  }
  handle *h = malloc(sizeof *h);
  napi_value out;
  if (!h || napi_create_external(env, h, finalize, NULL, &out) != napi_ok) {
    free(h);
    pt_free(u);
    napi_throw_error(env, "ERR_PATRICIA_MEMORY", "out of memory");
    return NULL;
  }
  h->u = u;
  return out;
}

/** patriciaStep(handle): null when built, else [hashes, positions] of the records it needs. */
static napi_value step(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  pt_update *u = update_call(env, info, 1, argv);
  if (!u) return NULL;
  long n = pt_step(u);
  if (n < 0) {
    throw_failed(env, u);
    return NULL;
  }
  napi_value out;
  if (n == 0) {
    NAPI_CALL(env, napi_get_null(env, &out));
    return out;
  }
  const uint8_t *hashes;
  const int32_t *positions;
  pt_needs(u, &hashes, &positions);
  void *h, *p;
  napi_value hv = new_typed(env, napi_uint8_array, (size_t)n * 32, 1, &h);
  if (!hv) return NULL;
  napi_value pv = new_typed(env, napi_int32_array, (size_t)n * 2, 4, &p);
  if (!pv) return NULL;
  memcpy(h, hashes, (size_t)n * 32);
  memcpy(p, positions, (size_t)n * 8);
  return pair(env, hv, pv);
}

/** patriciaSupply(handle, records, lengths): PT_MAX_RECORD bytes per record, lengths a Uint32Array. */
static napi_value supply(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  pt_update *u = update_call(env, info, 3, argv);
  if (!u) return NULL;
  uint8_t *records;
  uint32_t *lengths;
  size_t nr, nl;
  if (!typed(env, argv[1], napi_uint8_array, (void **)&records, &nr) ||
      !typed(env, argv[2], napi_uint32_array, (void **)&lengths, &nl))
    return NULL;
  if (nr != nl * PT_MAX_RECORD) {
    napi_throw_range_error(env, "ERR_PATRICIA_INPUT", "records: 65 bytes per length");
    return NULL;
  }
  /* pt_supply reads exactly as many records as the last step asked for. */
  if (nl != pt_pending_count(u)) {
    napi_throw_range_error(env, "ERR_PATRICIA_INPUT", "one record per record asked for");
    return NULL;
  }
  if (pt_supply(u, records, lengths) < 0) throw_failed(env, u);
  return NULL;
}

/** patriciaRanks(handle): how many ranks of new nodes to hash. */
static napi_value ranks(napi_env env, napi_callback_info info) {
  napi_value argv[1], out;
  pt_update *u = update_call(env, info, 1, argv);
  if (!u) return NULL;
  NAPI_CALL(env, napi_create_int32(env, pt_rank_count(u), &out));
  return out;
}

static int rank_arg(napi_env env, napi_value v, pt_update *u, int32_t *r) {
  if (napi_get_value_int32(env, v, r) != napi_ok || *r < 1 || *r > pt_rank_count(u)) {
    napi_throw_range_error(env, "ERR_PATRICIA_INPUT", "no such rank");
    return 0;
  }
  return 1;
}

/** patriciaRankInputs(handle, r): [xs, ys], the pairs of rank r's nodes. */
static napi_value rank_inputs(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  pt_update *u = update_call(env, info, 2, argv);
  int32_t r;
  if (!u || !rank_arg(env, argv[1], u, &r)) return NULL;
  size_t n = pt_rank_size(u, r);
  void *xs, *ys;
  napi_value xv = new_typed(env, napi_uint8_array, n * 32, 1, &xs);
  if (!xv) return NULL;
  napi_value yv = new_typed(env, napi_uint8_array, n * 32, 1, &ys);
  if (!yv) return NULL;
  pt_rank_inputs(u, r, xs, ys);
  return pair(env, xv, yv);
}

/** patriciaRankHashes(handle, r, hashes): the engine's hashes of rank r's pairs. */
static napi_value rank_hashes(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  pt_update *u = update_call(env, info, 3, argv);
  int32_t r;
  if (!u || !rank_arg(env, argv[1], u, &r)) return NULL;
  uint8_t *hashes;
  size_t n;
  if (!typed(env, argv[2], napi_uint8_array, (void **)&hashes, &n)) return NULL;
  if (n != pt_rank_size(u, r) * 32) {
    napi_throw_range_error(env, "ERR_PATRICIA_INPUT", "one hash per node of the rank");
    return NULL;
  }
  pt_rank_hashes(u, r, hashes);
  return NULL;
}

/** patriciaResult(handle): [root, hashes, records (65 bytes each), lengths, positions]. */
static napi_value result(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  pt_update *u = update_call(env, info, 1, argv);
  if (!u) return NULL;
  size_t n = pt_new_count(u);
  void *root, *hashes, *records, *lengths, *positions;
  napi_value v[5];
  if (!(v[0] = new_typed(env, napi_uint8_array, 32, 1, &root)) ||
      !(v[1] = new_typed(env, napi_uint8_array, n * 32, 1, &hashes)) ||
      !(v[2] = new_typed(env, napi_uint8_array, n * PT_MAX_RECORD, 1, &records)) ||
      !(v[3] = new_typed(env, napi_uint8_array, n, 1, &lengths)) ||
      !(v[4] = new_typed(env, napi_int32_array, n * 2, 4, &positions)))
    return NULL;
  pt_result(u, root, hashes, records, lengths, positions);
  napi_value arr;
  NAPI_CALL(env, napi_create_array_with_length(env, 5, &arr));
  for (uint32_t i = 0; i < 5; i++) NAPI_CALL(env, napi_set_element(env, arr, i, v[i]));
  return arr;
}

/** patriciaFree(handle): frees the update now rather than when the collector finds the handle. */
static napi_value release(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  if (!args(env, info, 1, argv)) return NULL;
  handle *h = NULL;
  if (napi_get_value_external(env, argv[0], (void **)&h) == napi_ok && h) {
    pt_free(h->u);
    h->u = NULL;
  }
  return NULL;
}

int pt_register(napi_env env, napi_value exports) {
  static const struct {
    const char *name;
    napi_callback fn;
  } fns[] = {
      {"patriciaCreate", create},         {"patriciaStep", step},
      {"patriciaSupply", supply},         {"patriciaRanks", ranks},
      {"patriciaRankInputs", rank_inputs}, {"patriciaRankHashes", rank_hashes},
      {"patriciaResult", result},         {"patriciaFree", release},
  };
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    napi_value fn;
    if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL, &fn) != napi_ok ||
        napi_set_named_property(env, exports, fns[i].name, fn) != napi_ok)
      return 0;
  }
  return 1;
}
