/* The node cache (node_cache.h) for JavaScript, and what the walks' bindings share to consult it. */
#ifndef DACD_NODE_CACHE_NAPI_H
#define DACD_NODE_CACHE_NAPI_H

#include <node_api.h>

#include "node_cache.h"

/**
 * Registers nodeCacheCreate, nodeCacheGet, nodeCacheRemember, nodeCacheRememberPacked,
 * nodeCacheSize, nodeCacheForget, nodeCacheExport and nodeCacheImport; 0 on failure.
 */
int nc_register(napi_env env, napi_value exports);

/**
 * A walk's create call's optional cache and tree id (`cache`, `tree`: undefined for none) into
 * `link`, and a reference in *ref that keeps the cache alive while the walk holds it (NULL
 * without a cache; nc_unref drops it). 0 (thrown, with `code`) when `cache` is not a live node
 * cache or `tree` not a small id.
 */
int nc_link_args(napi_env env, napi_value cache, napi_value tree, const char *code, nc_link *link,
                 napi_ref *ref);
/** Drops a reference nc_link_args made (nothing for NULL). */
void nc_unref(napi_env env, napi_ref ref);

/**
 * An update of either walk and its link to the node cache the walk consults (none: link.cache
 * NULL), with the reference that keeps that cache alive meanwhile.
 */
typedef struct {
  void *u;
  void (*free_u)(void *u);
  nc_link link;
  napi_env env;
  napi_ref cache_ref;
} nc_walk;

/**
 * The handle (an external of kind `what`, nu_wrap) of update `u`, linked to the cache a create
 * call's `cache` and `tree` arguments give (nc_link_args). `free_u` frees the update with the
 * handle, or at once when this fails. NULL when thrown (`input_code`: bad arguments,
 * `memory_code`: out of memory).
 */
napi_value nc_walk_wrap(napi_env env, void *u, void (*free_u)(void *u), napi_value cache, napi_value tree,
                        const char *what, const char *input_code, const char *memory_code);

/**
 * A walk step's answer through its cache: null when the walk needs nothing more (n = 0), else the
 * records the cache does not hold, as nu_needs. While every record a step asks for is cached, the
 * step is supplied here and the walk steps again: `step` and `supply` are the walk's (supply takes
 * the records back to back and their lengths), `u` the update. NULL when thrown (`failed` throws
 * the walk's error; `memory_code` for the link's own out of memory).
 */
typedef long (*nc_step_fn)(void *u, const uint8_t **hashes, const int32_t **positions, const uint32_t **gens);
typedef int (*nc_supply_fn)(void *u, const uint8_t *records, size_t bytes, const uint32_t *lengths);
napi_value nc_link_step(napi_env env, nc_link *link, void *u, nc_step_fn step, nc_supply_fn supply,
                        napi_value (*failed)(napi_env env, void *u), const char *memory_code);
/**
 * A walk's supply call through its cache: `recs` and `lens` the misses' records (as nu_supplied),
 * merged with the hits and handed to `supply`; then those not at their position are kept. 0 when thrown.
 */
int nc_link_supply(napi_env env, nc_link *link, void *u, napi_value recs, napi_value lens, nc_supply_fn supply,
                   napi_value (*failed)(napi_env env, void *u), const char *input_code, const char *memory_code);

/**
 * A walk's supply call: `recs` and `lens` the records the walk's last step asked for (`pending` of
 * them, `missing` the length of one not there), through its cache (nc_link_supply) when it has one,
 * else straight to `supply`. 0 when thrown.
 */
int nc_walk_supply(napi_env env, nc_walk *w, napi_value recs, napi_value lens, size_t pending, uint32_t missing,
                   nc_supply_fn supply, napi_value (*failed)(napi_env env, void *u), const char *input_code,
                   const char *memory_code);

#endif
