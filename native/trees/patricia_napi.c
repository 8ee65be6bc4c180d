/*
 * The Patricia update (patricia.h) for JavaScript: src/verifier/trees/native/patricia-native.ts drives it. An
 * update is an external handle (nu_wrap); every buffer crosses as a typed array, copied on the way in and
 * out, so no JavaScript memory is held between calls.
 */
#include <node_api.h>
#include <stdlib.h>
#include <string.h>

#include "../napi_call.h"
#include "../napi_util.h"
#include "patricia.h"
#include "patricia_napi.h"
#include "node_cache_napi.h"

/** The kind of external an update lives in (nu_wrap). */
static const char WHAT[] = "Patricia update";

static void free_update(void *u) { pt_free(u); }

/** The call's first `want` arguments, the first being a live update: that update, or NULL (thrown). */
static nc_walk *walk_call(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
  if (!nu_args(env, info, want, argv)) return NULL;
  return nu_unwrap(env, argv[0], WHAT);
}

static pt_update *update_call(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
  nc_walk *w = walk_call(env, info, want, argv);
  return w ? w->u : NULL;
}

static napi_value throw_failed(napi_env env, pt_update *u) {
  const char *msg = pt_error(u);
  napi_throw_error(env, strcmp(msg, "out of memory") == 0 ? "ERR_PATRICIA_MEMORY" : "ERR_PATRICIA_STORE", msg);
  return NULL;
}

/**
 * patriciaCreate(height, remembered, ids, leafHashes, oldRoot, oldRootGen, batchGen[, cache, tree]):
 * a handle. `cache`: a node cache (node_cache_napi.c) the walk consults, `tree` the tree's id there.
 */
static napi_value create(napi_env env, napi_callback_info info) {
  napi_value argv[9];
  size_t argc = 9;
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 7) {
    napi_throw_type_error(env, NULL, "too few arguments");
    return NULL;
  }
  int32_t height, remembered;
  uint32_t root_gen, batch_gen;
  NAPI_CALL(env, napi_get_value_int32(env, argv[0], &height));
  NAPI_CALL(env, napi_get_value_int32(env, argv[1], &remembered));
  NAPI_CALL(env, napi_get_value_uint32(env, argv[5], &root_gen));
  NAPI_CALL(env, napi_get_value_uint32(env, argv[6], &batch_gen));
  uint8_t *ids, *leaves, *root;
  size_t ni, nl, nr;
  if (!nu_typed(env, argv[2], napi_uint8_array, (void **)&ids, &ni) ||
      !nu_typed(env, argv[3], napi_uint8_array, (void **)&leaves, &nl) ||
      !nu_typed(env, argv[4], napi_uint8_array, (void **)&root, &nr))
    return NULL;
  if (ni % 32 || ni != nl || nr != 32) {
    napi_throw_range_error(env, "ERR_PATRICIA_INPUT", "ids and leaf hashes: 32 bytes each, as many; root: 32");
    return NULL;
  }
  char err[160];
  pt_update *u = pt_create(height, remembered, ids, leaves, ni / 32, root, root_gen, batch_gen, err, sizeof err);
  if (!u) {
    napi_throw_range_error(env, "ERR_PATRICIA_INPUT", err);
    return NULL;
  }
  return nc_walk_wrap(env, u, free_update, argv[7], argv[8], WHAT, "ERR_PATRICIA_INPUT", "ERR_PATRICIA_MEMORY");
}

/** The walk's step and supply as the node cache's link calls them (nc_link_step). */
static long step_needs(void *u, const uint8_t **hashes, const int32_t **positions, const uint32_t **gens) {
  long n = pt_step(u);
  if (n > 0) pt_needs(u, hashes, positions, gens);
  return n;
}

static int supply_records(void *u, const uint8_t *records, size_t bytes, const uint32_t *lengths) {
  (void)bytes;
  return pt_supply(u, records, lengths);
}

static napi_value failed(napi_env env, void *u) { return throw_failed(env, u); }

/** patriciaStep(handle): null when built, else [hashes, positions] of the records it needs. */
static napi_value step(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  nc_walk *w = walk_call(env, info, 1, argv);
  if (!w) return NULL;
  return nc_link_step(env, &w->link, w->u, step_needs, supply_records, failed, "ERR_PATRICIA_MEMORY");
}

/** patriciaSupply(handle, records, lengths): records back to back, lengths a Uint32Array (PT_MISSING: none). */
static napi_value supply(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  nc_walk *w = walk_call(env, info, 3, argv);
  if (!w) return NULL;
  nc_walk_supply(env, w, argv[1], argv[2], pt_pending_count(w->u), PT_MISSING, supply_records, failed,
                 "ERR_PATRICIA_INPUT", "ERR_PATRICIA_MEMORY");
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
  napi_value xv = nu_new_typed(env, napi_uint8_array, n * 32, 1, &xs);
  if (!xv) return NULL;
  napi_value yv = nu_new_typed(env, napi_uint8_array, n * 32, 1, &ys);
  if (!yv) return NULL;
  pt_rank_inputs(u, r, xs, ys);
  napi_value both[2] = {xv, yv};
  return nu_tuple(env, both, 2);
}

/** patriciaRankHashes(handle, r, hashes): the engine's hashes of rank r's pairs. */
static napi_value rank_hashes(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  pt_update *u = update_call(env, info, 3, argv);
  int32_t r;
  if (!u || !rank_arg(env, argv[1], u, &r)) return NULL;
  uint8_t *hashes;
  size_t n;
  if (!nu_typed(env, argv[2], napi_uint8_array, (void **)&hashes, &n)) return NULL;
  if (n != pt_rank_size(u, r) * 32) {
    napi_throw_range_error(env, "ERR_PATRICIA_INPUT", "one hash per node of the rank");
    return NULL;
  }
  pt_rank_hashes(u, r, hashes);
  return NULL;
}

/**
 * patriciaResult(handle): [root, root gen, hashes, records (back to back), lengths (Uint32Array),
 * positions, how many reads the cache answered].
 */
static napi_value result(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  nc_walk *w = walk_call(env, info, 1, argv);
  if (!w) return NULL;
  pt_update *u = w->u;
  napi_value nodes[5], v[7];
  void *d[5];
  if (!nu_new_nodes(env, pt_new_count(u), pt_new_bytes(u), nodes, d)) return NULL;
  uint32_t root_gen;
  pt_result(u, d[0], &root_gen, d[1], d[2], d[3], d[4]);
  /* The new nodes go into the cache here, and the result says how many reads it answered. */
  if (w->link.cache &&
      nc_link_remember_new(&w->link, pt_new_count(u), d[1], NULL, pt_batch_gen(u), d[2], d[3], d[4]) < 0) {
    napi_throw_error(env, "ERR_PATRICIA_MEMORY", "out of memory");
    return NULL;
  }
  v[0] = nodes[0];
  NAPI_CALL(env, napi_create_uint32(env, root_gen, &v[1]));
  for (int i = 1; i < 5; i++) v[i + 1] = nodes[i];
  NAPI_CALL(env, napi_create_double(env, (double)w->link.found, &v[6]));
  return nu_tuple(env, v, 7);
}

/** patriciaFree(handle): frees the update now rather than when the collector finds the handle. */
static napi_value release(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  if (nu_args(env, info, 1, argv)) nu_release(env, argv[0], WHAT);
  return NULL;
}

int pt_register(napi_env env, napi_value exports) {
  static const nu_named_fn fns[] = {
      {"patriciaCreate", create},         {"patriciaStep", step},
      {"patriciaSupply", supply},         {"patriciaRanks", ranks},
      {"patriciaRankInputs", rank_inputs}, {"patriciaRankHashes", rank_hashes},
      {"patriciaResult", result},         {"patriciaFree", release},
  };
  return nu_register_all(env, exports, fns, sizeof fns / sizeof fns[0]);
}
