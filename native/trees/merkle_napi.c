/*
 * The Merkle update (merkle.h) for JavaScript: src/verifier/trees/native/merkle-native.ts drives it. An update
 * is an external handle (nu_wrap); every buffer crosses as a typed array, copied on the way in and
 * out, so no JavaScript memory is held between calls.
 */
#include <node_api.h>
#include <stdlib.h>
#include <string.h>

#include "../napi_call.h"
#include "../napi_util.h"
#include "merkle.h"
#include "merkle_napi.h"
#include "node_cache_napi.h"

/** The kind of external an update lives in (nu_wrap). */
static const char WHAT[] = "Merkle update";

static void free_update(void *u) { mt_free(u); }

/** The call's first `want` arguments, the first being a live update: that update, or NULL (thrown). */
static nc_walk *walk_call(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
  if (!nu_args(env, info, want, argv)) return NULL;
  return nu_unwrap(env, argv[0], WHAT);
}

static mt_update *update_call(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
  nc_walk *w = walk_call(env, info, want, argv);
  return w ? w->u : NULL;
}

static napi_value throw_input(napi_env env, const char *msg) {
  napi_throw_range_error(env, "ERR_MERKLE_INPUT", msg);
  return NULL;
}

static napi_value throw_failed(napi_env env, const mt_update *u) {
  napi_throw_error(env, mt_error_code(u), mt_error(u));
  return NULL;
}

/**
 * merkleCreate(height, remembered, ids, oldRoot, oldRootGen, batchGen, empty[, cache, tree[, topDepth,
 * topIndex]]): a handle. `cache`: a node cache (node_cache_napi.c) the walk consults, `tree` the
 * tree's id there; `topDepth`, `topIndex` (32 bytes): where positions count from (mt_set_top).
 */
static napi_value create(napi_env env, napi_callback_info info) {
  napi_value argv[11];
  size_t argc = 11;
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 7) {
    napi_throw_type_error(env, NULL, "too few arguments");
    return NULL;
  }
  int32_t height, remembered;
  uint32_t root_gen, batch_gen;
  NAPI_CALL(env, napi_get_value_int32(env, argv[0], &height));
  NAPI_CALL(env, napi_get_value_int32(env, argv[1], &remembered));
  NAPI_CALL(env, napi_get_value_uint32(env, argv[4], &root_gen));
  NAPI_CALL(env, napi_get_value_uint32(env, argv[5], &batch_gen));
  uint8_t *ids, *root, *empty;
  size_t ni, nr, ne;
  if (!nu_typed(env, argv[2], napi_uint8_array, (void **)&ids, &ni) ||
      !nu_typed(env, argv[3], napi_uint8_array, (void **)&root, &nr) ||
      !nu_typed(env, argv[6], napi_uint8_array, (void **)&empty, &ne))
    return NULL;
  if (ni % 32 || nr != 32 || height < 1 || ne != 32 * ((size_t)height + 1))
    return throw_input(env, "ids: 32 bytes each; root: 32; empty: E[0..height], 32 bytes each");
  char err[160];
  mt_update *u = mt_create(height, remembered, ids, ni / 32, root, root_gen, batch_gen, empty, err, sizeof err);
  if (!u) return throw_input(env, err);
  if (argc >= 11) {
    int32_t top_depth = -1;
    uint8_t *top_index = NULL;
    size_t nt = 0;
    if (!nu_typed(env, argv[10], napi_uint8_array, (void **)&top_index, &nt)) {
      mt_free(u);
      return NULL;
    }
    if (napi_get_value_int32(env, argv[9], &top_depth) != napi_ok || nt != 32 ||
        mt_set_top(u, top_depth, top_index) < 0) {
      mt_free(u);
      return throw_input(env, "top: a depth and its index, 32 bytes, fitting it");
    }
  }
  return nc_walk_wrap(env, u, free_update, argv[7], argv[8], WHAT, "ERR_MERKLE_INPUT", "ERR_MERKLE_MEMORY");
}

/** The walk's step and supply as the node cache's link calls them (nc_link_step). */
static long step_needs(void *u, const uint8_t **hashes, const int32_t **positions, const uint32_t **gens) {
  long n = mt_step(u);
  if (n > 0) mt_needs(u, hashes, positions, gens);
  return n;
}

static int supply_records(void *u, const uint8_t *records, size_t bytes, const uint32_t *lengths) {
  return mt_supply(u, records, bytes, lengths);
}

static napi_value failed(napi_env env, void *u) { return throw_failed(env, u); }

/** merkleStep(handle): null when the old paths are read, else [hashes, positions, gens] of the records it needs. */
static napi_value step(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  nc_walk *w = walk_call(env, info, 1, argv);
  if (!w) return NULL;
  return nc_link_step(env, &w->link, w->u, step_needs, supply_records, failed, "ERR_MERKLE_MEMORY");
}

/** merkleSupply(handle, records, lengths): records back to back, lengths a Uint32Array (MT_MISSING: none). */
static napi_value supply(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  nc_walk *w = walk_call(env, info, 3, argv);
  if (!w) return NULL;
  nc_walk_supply(env, w, argv[1], argv[2], mt_pending_count(w->u), MT_MISSING, supply_records, failed,
                 "ERR_MERKLE_INPUT", "ERR_MERKLE_MEMORY");
  return NULL;
}

/** merkleBuild(handle, leafHashes): null without chains, else the climb [starts, paths, from, to, slots]. */
static napi_value build(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  mt_update *u = update_call(env, info, 2, argv);
  if (!u) return NULL;
  uint8_t *leaves;
  size_t nl;
  if (!nu_typed(env, argv[1], napi_uint8_array, (void **)&leaves, &nl)) return NULL;
  if (nl != mt_leaf_count(u) * 32) return throw_input(env, "one leaf hash (32 bytes) per leaf id");
  long n = mt_build(u, leaves);
  if (n < 0) return throw_failed(env, u);
  if (n == 0) return nu_null(env);
  void *starts, *paths, *from, *to;
  napi_value v[5];
  if (!(v[0] = nu_new_typed(env, napi_uint8_array, (size_t)n * 32, 1, &starts)) ||
      !(v[1] = nu_new_typed(env, napi_uint8_array, (size_t)n * 32, 1, &paths)) ||
      !(v[2] = nu_new_typed(env, napi_uint8_array, (size_t)n, 1, &from)) ||
      !(v[3] = nu_new_typed(env, napi_uint8_array, (size_t)n, 1, &to)))
    return NULL;
  NAPI_CALL(env, napi_create_int32(env, mt_chain_slots(u), &v[4]));
  mt_chain_job(u, starts, paths, from, to);
  return nu_tuple(env, v, 5);
}

/** merkleChainsClimbed(handle, tops, marks): the engine's climb of merkleBuild's chains. */
static napi_value chains_climbed(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  mt_update *u = update_call(env, info, 3, argv);
  if (!u) return NULL;
  uint8_t *tops, *marks;
  size_t nt, nm;
  if (!nu_typed(env, argv[1], napi_uint8_array, (void **)&tops, &nt) ||
      !nu_typed(env, argv[2], napi_uint8_array, (void **)&marks, &nm))
    return NULL;
  size_t n = mt_chain_count(u);
  if (nt != n * 32 || nm != n * (size_t)mt_chain_slots(u) * 32)
    return throw_input(env, "tops: 32 bytes per chain; marks: 32 bytes per slot per chain");
  if (mt_chains_climbed(u, tops, marks) < 0) return throw_failed(env, u);
  return NULL;
}

/** merkleNextLevel(handle): null when every level is hashed, else the next level's pairs [xs, ys]. */
static napi_value next_level(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  mt_update *u = update_call(env, info, 1, argv);
  if (!u) return NULL;
  long n = mt_next_level(u);
  if (n < 0) return throw_failed(env, u);
  if (n == 0) return nu_null(env);
  void *xs, *ys;
  napi_value v[2];
  if (!(v[0] = nu_new_typed(env, napi_uint8_array, (size_t)n * 32, 1, &xs)) ||
      !(v[1] = nu_new_typed(env, napi_uint8_array, (size_t)n * 32, 1, &ys)))
    return NULL;
  mt_level_inputs(u, xs, ys);
  return nu_tuple(env, v, 2);
}

/** merkleLevelHashes(handle, hashes): the engine's hashes of the current level's pairs. */
static napi_value level_hashes(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  mt_update *u = update_call(env, info, 2, argv);
  if (!u) return NULL;
  uint8_t *hashes;
  size_t n;
  if (!nu_typed(env, argv[1], napi_uint8_array, (void **)&hashes, &n)) return NULL;
  size_t want = mt_level_size(u);
  if (want == 0 || n != want * 32) return throw_input(env, "one hash per binary node of the current level");
  mt_level_hashes(u, hashes);
  return NULL;
}

/**
 * merkleResult(handle): [root, root gen, hashes, records (back to back), lengths (Uint32Array),
 * positions, how many reads the cache answered].
 */
static napi_value result(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  nc_walk *w = walk_call(env, info, 1, argv);
  if (!w) return NULL;
  mt_update *u = w->u;
  if (!mt_done(u)) return throw_input(env, "the result before every level is hashed");
  napi_value nodes[5], v[7];
  void *d[5];
  if (!nu_new_nodes(env, mt_new_count(u), mt_new_bytes(u), nodes, d)) return NULL;
  uint32_t root_gen;
  mt_result(u, d[0], &root_gen, d[1], d[2], d[3], d[4]);
  /* The new nodes go into the cache here, and the result says how many reads it answered. */
  if (w->link.cache &&
      nc_link_remember_new(&w->link, mt_new_count(u), d[1], NULL, mt_batch_gen(u), d[2], d[3], d[4]) < 0) {
    napi_throw_error(env, "ERR_MERKLE_MEMORY", "out of memory");
    return NULL;
  }
  v[0] = nodes[0];
  NAPI_CALL(env, napi_create_uint32(env, root_gen, &v[1]));
  for (int i = 1; i < 5; i++) v[i + 1] = nodes[i];
  NAPI_CALL(env, napi_create_double(env, (double)w->link.found, &v[6]));
  return nu_tuple(env, v, 7);
}

/** merkleFree(handle): frees the update now rather than when the collector finds the handle. */
static napi_value release(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  if (nu_args(env, info, 1, argv)) nu_release(env, argv[0], WHAT);
  return NULL;
}

int mt_register(napi_env env, napi_value exports) {
  static const nu_named_fn fns[] = {
      {"merkleCreate", create},
      {"merkleStep", step},
      {"merkleSupply", supply},
      {"merkleBuild", build},
      {"merkleChainsClimbed", chains_climbed},
      {"merkleNextLevel", next_level},
      {"merkleLevelHashes", level_hashes},
      {"merkleResult", result},
      {"merkleFree", release},
  };
  return nu_register_all(env, exports, fns, sizeof fns / sizeof fns[0]);
}
