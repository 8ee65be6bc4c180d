/*
 * The top levels of each tree, kept in memory from one batch to the next (src/verifier/trees/cache/node-cache.ts
 * describes the cache; this is the same cache in native code, so the native walks consult it
 * themselves, a memcmp and a memcpy per node, rather than through JavaScript).
 *
 * One node per position (tree, depth, index) for depths below `levels`: a node written at a
 * position replaces the one there before, so the size is bounded by the trees' shape and the node bound. Lookups are
 * by hash and gen (the batch that wrote the record: two batches' records of one node may name
 * different children); the walks, which know where each node they read sits, look up by position
 * first. Storage: a slab of fixed-size slots (hash ‖ gen ‖ record length ‖ record),
 * per tree and depth an array from index to slot, and an open-addressing table from 31 bits of the
 * hash to slot whose stale cells (their slot since given to another node) are dropped when the
 * table is rebuilt.
 */
#ifndef DACD_NODE_CACHE_H
#define DACD_NODE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "record_format.h"

typedef struct nc_cache nc_cache;

/** The longest record a slot holds (record_format.h). */
#define NC_MAX_RECORD REC_MAX_CACHED_LENGTH
/** The deepest `levels` (positions stay int32). */
#define NC_MAX_LEVELS 30
/** The length of a record that is not there (MT_MISSING, PT_MISSING). */
#define NC_MISSING UINT32_MAX

/** A cache of `levels` (0..NC_MAX_LEVELS) levels below each root; NULL when out of memory. */
nc_cache *nc_create(int levels);
void nc_free(nc_cache *c);
int nc_levels(const nc_cache *c);
/**
 * Once `max_nodes` slots are in use (the budget), a new position takes the slot of a node at a
 * deeper level, the deepest first, or gets none; SIZE_MAX by default.
 */
void nc_set_max_nodes(nc_cache *c, size_t max_nodes);
/**
 * Drops a tree's positions (its branch moved); its slots keep their nodes, findable by hash, until
 * new positions take them (before any other slot).
 */
void nc_forget(nc_cache *c, int tree);
/** How many slots are in use (one per position held). */
size_t nc_size(const nc_cache *c);
/** The slot of the node with this hash and gen (at any position), or −1. */
long nc_find(const nc_cache *c, const uint8_t *hash, uint32_t gen);
/** The slot at a position if it holds the node with this hash and gen, or −1. */
long nc_at(const nc_cache *c, int tree, int depth, int32_t index, const uint8_t *hash, uint32_t gen);
/** A slot's record and its length. */
const uint8_t *nc_record(const nc_cache *c, long slot, uint32_t *length);
/**
 * Keeps a node at its position (tree ≥ 0, depth, 0 ≤ index < 2^depth). Ignored below the cached
 * levels, outside the position's range and for records longer than NC_MAX_RECORD. −1 when out of
 * memory (the cache is then unchanged), else 0.
 */
int nc_remember(nc_cache *c, int tree, int depth, int32_t index, const uint8_t *hash, uint32_t gen,
                const uint8_t *record, uint32_t length);

/**
 * A snapshot entry: depth (1) ‖ index (4, little-endian) ‖ hash (32) ‖ gen (4, little-endian) ‖
 * record length (1) ‖ record. Entries of one tree follow each other; the caller names the tree.
 */
#define NC_ENTRY_HEAD 42
/**
 * Writes the nodes at `tree`'s positions into `out` as entries, from position (*depth, *index) on,
 * until the next one would pass `cap` bytes, and moves the cursor past them (*depth is the cache's
 * levels once every position is written). The bytes written.
 */
size_t nc_export(const nc_cache *c, int tree, int32_t *depth, int32_t *index, uint8_t *out, size_t cap);
/**
 * Keeps `bytes` of entries (nc_export's) at their positions in `tree` (as nc_remember, so entries
 * below the levels or past the node bound are ignored), but those of a gen above `max_gen` and
 * those whose position holds a node of a later gen (a batch's, run meanwhile). The entries read;
 * −1: out of memory; −2: an entry is cut short or its record too long.
 */
long nc_import(nc_cache *c, int tree, const uint8_t *in, size_t bytes, uint32_t max_gen);

/**
 * What a native walk's update keeps to consult a cache: the records its last step asked for that
 * the cache holds (copied, since another tree's update may replace their slots before the walk is
 * supplied), and the others', which the caller reads from the store.
 */
typedef struct {
  nc_cache *cache; /* NULL: the walk has no cache */
  int tree;
  size_t n, misses, hit_bytes;
  uint8_t *hashes;   /* n × 32: what the step asked for */
  int32_t *pos;      /* n × 2: their positions */
  uint32_t *gens;    /* n: their records' gens */
  uint32_t *lengths; /* n: a hit's length, or NC_MISSING for a miss */
  uint8_t *placed;   /* n: 1 when found at its own position */
  uint8_t *hits;     /* the hits' records back to back */
  uint8_t *miss_hashes;
  int32_t *miss_pos;
  uint32_t *miss_gens;
  uint8_t *merged; /* hits and the caller's records, in the step's order */
  uint32_t *merged_lengths;
  size_t cap_n, cap_hits, cap_merged;
  uint64_t found; /* records answered by the cache over the update */
} nc_link;

void nc_link_free(nc_link *l);
/**
 * Looks up a step's needs; their misses in miss_hashes, miss_pos and miss_gens. Their count, or −1
 * (out of memory).
 */
long nc_link_filter(nc_link *l, size_t n, const uint8_t *hashes, const int32_t *positions, const uint32_t *gens);
/**
 * The step's records in order: the hits and the misses' records (`records` back to back, `lengths`
 * one per miss, NC_MISSING for none) into merged and merged_lengths; their bytes in *bytes. −1
 * when out of memory.
 */
int nc_link_merge(nc_link *l, const uint8_t *records, const uint32_t *lengths, size_t *bytes);
/**
 * After the walk took the merged records: keeps those not found at their own position there. −1:
 * out of memory.
 */
int nc_link_remember_read(nc_link *l);
/**
 * Keeps new nodes (records back to back; index −1: not at a cached level), of gens `gens` (one
 * each), or all of gen `gen` when `gens` is NULL (a walk's, all its batch's). −1: out of memory.
 */
int nc_link_remember_new(nc_link *l, size_t n, const uint8_t *hashes, const uint32_t *gens, uint32_t gen,
                         const uint8_t *records, const uint32_t *lengths, const int32_t *positions);

#endif
