/*
 * The node cache (node_cache.h) for JavaScript: src/verifier/trees/cache/node-cache.ts keeps one as a handle
 * (nu_wrap) when the addon is loaded, and passes it to the native walks, which consult it here
 * without calling back into JavaScript.
 */
#include "node_cache_napi.h"

#include <stdlib.h>
#include <string.h>

#include "../napi_call.h"
#include "../napi_util.h"

/** The kind of external a cache lives in (nu_wrap). */
static const char WHAT[] = "node cache";

static void release_cache(void *c) { nc_free(c); }

static napi_value throw_memory(napi_env env) {
  napi_throw_error(env, "ERR_NODE_CACHE_MEMORY", "out of memory");
  return NULL;
}

static napi_value throw_input(napi_env env, const char *msg) {
  napi_throw_range_error(env, "ERR_NODE_CACHE_INPUT", msg);
  return NULL;
}

/** nodeCacheCreate(levels, maxNodes): a handle (maxNodes: Infinity for no bound). */
static napi_value create(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  if (!nu_args(env, info, 2, argv)) return NULL;
  int32_t levels;
  double max_nodes;
  NAPI_CALL(env, napi_get_value_int32(env, argv[0], &levels));
  NAPI_CALL(env, napi_get_value_double(env, argv[1], &max_nodes));
  if (levels < 0 || levels > NC_MAX_LEVELS) return throw_input(env, "levels: 0..30");
  if (!(max_nodes >= 0)) return throw_input(env, "maxNodes: 0 or more");
  nc_cache *c = nc_create(levels);
  if (!c) return throw_memory(env);
  nc_set_max_nodes(c, max_nodes >= (double)SIZE_MAX ? SIZE_MAX : (size_t)max_nodes);
  return nu_wrap(env, c, release_cache, WHAT, "ERR_NODE_CACHE_MEMORY");
}


/** The call's first `want` arguments, the first being a live cache: that cache, or NULL (thrown). */
static nc_cache *cache_call(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
  if (!nu_args(env, info, want, argv)) return NULL;
  return nu_unwrap(env, argv[0], WHAT);
}

/** A 32-byte hash argument, or NULL (thrown). */
static const uint8_t *hash_arg(napi_env env, napi_value v) {
  uint8_t *h;
  size_t n;
  if (!nu_typed(env, v, napi_uint8_array, (void **)&h, &n)) return NULL;
  if (n != 32) {
    throw_input(env, "a hash is 32 bytes");
    return NULL;
  }
  return h;
}

/** nodeCacheGet(handle, hash, gen): a copy of the record of the node with this hash and gen, or null. */
static napi_value get(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  nc_cache *c = cache_call(env, info, 3, argv);
  if (!c) return NULL;
  const uint8_t *hash = hash_arg(env, argv[1]);
  if (!hash) return NULL;
  uint32_t gen;
  NAPI_CALL(env, napi_get_value_uint32(env, argv[2], &gen));
  long slot = nc_find(c, hash, gen);
  if (slot < 0) return nu_null(env);
  uint32_t len;
  const uint8_t *rec = nc_record(c, slot, &len);
  void *out;
  napi_value v = nu_new_typed(env, napi_uint8_array, len, 1, &out);
  if (v) memcpy(out, rec, len);
  return v;
}

/** nodeCacheRemember(handle, tree, depth, index, hash, gen, record). */
static napi_value remember(napi_env env, napi_callback_info info) {
  napi_value argv[7];
  nc_cache *c = cache_call(env, info, 7, argv);
  if (!c) return NULL;
  int32_t tree, depth, index;
  uint32_t gen;
  NAPI_CALL(env, napi_get_value_int32(env, argv[1], &tree));
  NAPI_CALL(env, napi_get_value_int32(env, argv[2], &depth));
  NAPI_CALL(env, napi_get_value_int32(env, argv[3], &index));
  NAPI_CALL(env, napi_get_value_uint32(env, argv[5], &gen));
  const uint8_t *hash = hash_arg(env, argv[4]);
  uint8_t *rec;
  size_t len;
  if (!hash || !nu_typed(env, argv[6], napi_uint8_array, (void **)&rec, &len)) return NULL;
  if (tree < 0 || tree > 0xffff) return throw_input(env, "tree ids: 0..65535");
  if (len <= NC_MAX_RECORD && nc_remember(c, tree, depth, index, hash, gen, rec, (uint32_t)len) < 0)
    return throw_memory(env);
  return NULL;
}

/** nodeCacheRememberPacked(handle, tree, hashes, gens, records, lengths, positions): remember for each. */
static napi_value remember_packed(napi_env env, napi_callback_info info) {
  napi_value argv[7];
  nc_cache *c = cache_call(env, info, 7, argv);
  if (!c) return NULL;
  int32_t tree;
  NAPI_CALL(env, napi_get_value_int32(env, argv[1], &tree));
  uint8_t *hashes, *records;
  uint32_t *gens, *lengths;
  int32_t *positions;
  size_t nh, ng, nr, nl, np;
  if (!nu_typed(env, argv[2], napi_uint8_array, (void **)&hashes, &nh) ||
      !nu_typed(env, argv[3], napi_uint32_array, (void **)&gens, &ng) ||
      !nu_typed(env, argv[4], napi_uint8_array, (void **)&records, &nr) ||
      !nu_typed(env, argv[5], napi_uint32_array, (void **)&lengths, &nl) ||
      !nu_typed(env, argv[6], napi_int32_array, (void **)&positions, &np))
    return NULL;
  if (tree < 0 || tree > 0xffff) return throw_input(env, "tree ids: 0..65535");
  size_t sum = 0;
  for (size_t i = 0; i < nl; i++) sum += lengths[i];
  if (nh != nl * 32 || ng != nl || np != nl * 2 || sum != nr)
    return throw_input(env, "32 bytes, a gen and a position per record, and the lengths adding up to the records");
  nc_link link = {.cache = c, .tree = tree};
  if (nc_link_remember_new(&link, nl, hashes, gens, 0, records, lengths, positions) < 0) return throw_memory(env);
  return NULL;
}

/** nodeCacheSize(handle): the slots in use. */
static napi_value size(napi_env env, napi_callback_info info) {
  napi_value argv[1], out;
  nc_cache *c = cache_call(env, info, 1, argv);
  if (!c) return NULL;
  NAPI_CALL(env, napi_create_double(env, (double)nc_size(c), &out));
  return out;
}

/** nodeCacheForget(handle, tree): drops the tree's positions. */
static napi_value forget(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  nc_cache *c = cache_call(env, info, 2, argv);
  if (!c) return NULL;
  int32_t tree;
  NAPI_CALL(env, napi_get_value_int32(env, argv[1], &tree));
  nc_forget(c, tree);
  return NULL;
}

/**
 * nodeCacheExport(handle, tree, cursor, out): the nodes at the tree's positions from the cursor
 * (an Int32Array: depth, index; moved past them, depth = levels once done) into `out` as
 * entries (nc_export); the bytes written.
 */
static napi_value export_chunk(napi_env env, napi_callback_info info) {
  napi_value argv[4], result;
  nc_cache *c = cache_call(env, info, 4, argv);
  if (!c) return NULL;
  int32_t tree;
  NAPI_CALL(env, napi_get_value_int32(env, argv[1], &tree));
  int32_t *cursor;
  uint8_t *out;
  size_t ncursor, cap;
  if (!nu_typed(env, argv[2], napi_int32_array, (void **)&cursor, &ncursor) ||
      !nu_typed(env, argv[3], napi_uint8_array, (void **)&out, &cap))
    return NULL;
  if (ncursor != 2) return throw_input(env, "a cursor is a depth and an index");
  if (cap < NC_ENTRY_HEAD + NC_MAX_RECORD) return throw_input(env, "an export chunk holds at least one entry");
  size_t written = nc_export(c, tree, &cursor[0], &cursor[1], out, cap);
  NAPI_CALL(env, napi_create_double(env, (double)written, &result));
  return result;
}

/**
 * nodeCacheImport(handle, tree, entries, maxGen): keeps the entries (nodeCacheExport's) of gens up
 * to maxGen at their positions; the entries read.
 */
static napi_value import_entries(napi_env env, napi_callback_info info) {
  napi_value argv[4], result;
  nc_cache *c = cache_call(env, info, 4, argv);
  if (!c) return NULL;
  int32_t tree;
  uint32_t max_gen;
  uint8_t *in;
  size_t bytes;
  NAPI_CALL(env, napi_get_value_int32(env, argv[1], &tree));
  NAPI_CALL(env, napi_get_value_uint32(env, argv[3], &max_gen));
  if (!nu_typed(env, argv[2], napi_uint8_array, (void **)&in, &bytes)) return NULL;
  if (tree < 0 || tree > 0xffff) return throw_input(env, "tree ids: 0..65535");
  long read = nc_import(c, tree, in, bytes, max_gen);
  if (read == -1) return throw_memory(env);
  if (read < 0) return throw_input(env, "an entry is cut short or its record too long");
  NAPI_CALL(env, napi_create_double(env, (double)read, &result));
  return result;
}

int nc_register(napi_env env, napi_value exports) {
  static const nu_named_fn fns[] = {
      {"nodeCacheCreate", create},
      {"nodeCacheGet", get},
      {"nodeCacheRemember", remember},
      {"nodeCacheRememberPacked", remember_packed},
      {"nodeCacheSize", size},
      {"nodeCacheForget", forget},
      {"nodeCacheExport", export_chunk},
      {"nodeCacheImport", import_entries},
  };
  return nu_register_all(env, exports, fns, sizeof fns / sizeof fns[0]);
}

int nc_link_args(napi_env env, napi_value cache, napi_value tree, const char *code, nc_link *link,
                 napi_ref *ref) {
  *ref = NULL;
  napi_valuetype type;
  if (napi_typeof(env, cache, &type) != napi_ok) {
    napi_throw_error(env, NULL, "N-API call failed");
    return 0;
  }
  link->cache = NULL;
  if (type == napi_undefined || type == napi_null) return 1;
  nc_cache *c = nu_unwrap(env, cache, WHAT);
  if (!c) return 0;
  int32_t id;
  if (napi_get_value_int32(env, tree, &id) != napi_ok || id < 0 || id > 0xffff) {
    napi_throw_range_error(env, code, "a node cache's tree id: 0..65535");
    return 0;
  }
  if (napi_create_reference(env, cache, 1, ref) != napi_ok) {
    napi_throw_error(env, NULL, "N-API call failed");
    return 0;
  }
  link->cache = c;
  link->tree = id;
  return 1;
}

void nc_unref(napi_env env, napi_ref ref) {
  if (ref) napi_delete_reference(env, ref);
}

static void release_walk(void *p) {
  nc_walk *w = p;
  w->free_u(w->u);
  nc_link_free(&w->link);
  nc_unref(w->env, w->cache_ref);
  free(w);
}

napi_value nc_walk_wrap(napi_env env, void *u, void (*free_u)(void *u), napi_value cache, napi_value tree,
                        const char *what, const char *input_code, const char *memory_code) {
  nc_link link = {0};
  napi_ref cache_ref;
  if (!nc_link_args(env, cache, tree, input_code, &link, &cache_ref)) {
    free_u(u);
    return NULL;
  }
  nc_walk *w = malloc(sizeof *w);
  if (!w) {
    free_u(u);
    nc_unref(env, cache_ref);
    napi_throw_error(env, memory_code, "out of memory");
    return NULL;
  }
  *w = (nc_walk){u, free_u, link, env, cache_ref};
  return nu_wrap(env, w, release_walk, what, memory_code);
}

napi_value nc_link_step(napi_env env, nc_link *link, void *u, nc_step_fn step, nc_supply_fn supply,
                        napi_value (*failed)(napi_env env, void *u), const char *memory_code) {
  for (;;) {
    const uint8_t *hashes;
    const int32_t *positions;
    const uint32_t *gens;
    long n = step(u, &hashes, &positions, &gens);
    if (n < 0) return failed(env, u);
    if (n == 0 || !link->cache) return nu_needs(env, (size_t)n, hashes, positions, gens);
    long misses = nc_link_filter(link, (size_t)n, hashes, positions, gens);
    if (misses < 0) break;
    if (misses > 0) return nu_needs(env, (size_t)misses, link->miss_hashes, link->miss_pos, link->miss_gens);
    size_t bytes;
    if (nc_link_merge(link, NULL, NULL, &bytes) < 0) break;
    if (supply(u, link->merged, bytes, link->merged_lengths) < 0) return failed(env, u);
    if (nc_link_remember_read(link) < 0) break;
  }
  napi_throw_error(env, memory_code, "out of memory");
  return NULL;
}

int nc_link_supply(napi_env env, nc_link *link, void *u, napi_value recs, napi_value lens, nc_supply_fn supply,
                   napi_value (*failed)(napi_env env, void *u), const char *input_code, const char *memory_code) {
  uint8_t *records;
  uint32_t *lengths;
  size_t bytes;
  if (!nu_supplied(env, recs, lens, link->misses, NC_MISSING, input_code, &records, &bytes, &lengths)) return 0;
  size_t merged;
  if (nc_link_merge(link, records, lengths, &merged) < 0) goto memory;
  if (supply(u, link->merged, merged, link->merged_lengths) < 0) {
    failed(env, u);
    return 0;
  }
  link->misses = 0;
  if (nc_link_remember_read(link) < 0) goto memory;
  return 1;
memory:
  napi_throw_error(env, memory_code, "out of memory");
  return 0;
}

int nc_walk_supply(napi_env env, nc_walk *w, napi_value recs, napi_value lens, size_t pending, uint32_t missing,
                   nc_supply_fn supply, napi_value (*failed)(napi_env env, void *u), const char *input_code,
                   const char *memory_code) {
  if (w->link.cache)
    return nc_link_supply(env, &w->link, w->u, recs, lens, supply, failed, input_code, memory_code);
  uint8_t *records;
  uint32_t *lengths;
  size_t bytes;
  if (!nu_supplied(env, recs, lens, pending, missing, input_code, &records, &bytes, &lengths)) return 0;
  if (supply(w->u, records, bytes, lengths) < 0) {
    failed(env, w->u);
    return 0;
  }
  return 1;
}
