/*
 * One update of a Patricia-Merkle tree (committee-algorithms §3) in native code: the walk down the
 * changed paths, the new nodes it makes, and their order for hashing. The same algorithm as
 * src/verifier/trees/reference/patricia.ts, which stays as the fallback and the reference.
 *
 * It touches public data only (tree nodes and leaf hashes) and does no hashing itself: the caller
 * reads the records it asks for (pt_step / pt_supply) and hashes each rank of new nodes with its
 * Pedersen engine (pt_rank_inputs / pt_rank_hashes), so the engine and the store stay the caller's.
 */
#ifndef DACD_PATRICIA_H
#define DACD_PATRICIA_H

#include <stddef.h>
#include <stdint.h>

typedef struct pt_update pt_update;

/** The length pt_supply takes for a record that is not in the store. */
#define PT_MISSING UINT32_MAX

/**
 * A new update of the tree of `height` (1..255) whose root is `old_root` (its record written by batch
 * `old_root_gen`), for `n` changed leaves: `ids` (32 bytes big-endian each, strictly ascending,
 * below 2^height) and their new hashes (32 bytes each; zero deletes the leaf). Its new records name
 * each child with the gen of the child's record (src/storage/records/node-record.ts), `batch_gen` for those
 * it writes. Positions (depth, index) are reported for nodes less than `remembered` (0..30) levels
 * below the root. NULL with a message in `err` when the input is bad.
 */
pt_update *pt_create(int height, int remembered, const uint8_t *ids, const uint8_t *leaf_hashes, size_t n,
                     const uint8_t *old_root, uint32_t old_root_gen, uint32_t batch_gen, char *err,
                     size_t err_len);
void pt_free(pt_update *u);

/**
 * Walks as far as the records supplied so far allow. Returns the number of records it needs next
 * (> 0: their hashes and positions are in pt_needs), 0 when the new tree is built, −1 when it
 * failed (pt_error says why).
 */
long pt_step(pt_update *u);
/** The needed records' hashes (32 bytes each), positions (depth, index; index −1: none) and gens. */
void pt_needs(const pt_update *u, const uint8_t **hashes, const int32_t **positions, const uint32_t **gens);
/** How many records the last pt_step asked for (0 once they are supplied). */
size_t pt_pending_count(const pt_update *u);
/**
 * The records of the last pt_step's needs, in order and back to back in `records`, `lengths` each
 * one's length (PT_MISSING: not found, and no bytes; binary nodes are 72 bytes, edges 69, others
 * corrupt).
 * −1 when one is missing or corrupt (pt_error says which), else 0.
 */
int pt_supply(pt_update *u, const uint8_t *records, const uint32_t *lengths);

/** After pt_step returned 0: how many ranks of new nodes there are to hash (1 first, deepest). */
int pt_rank_count(const pt_update *u);
/** How many nodes rank r (1-based) has; their pairs into xs and ys (32 bytes per node each). */
size_t pt_rank_size(const pt_update *u, int r);
void pt_rank_inputs(const pt_update *u, int r, uint8_t *xs, uint8_t *ys);
/** The engine's hashes of rank r's pairs: the nodes' hashes follow (an edge's adds its length). */
void pt_rank_hashes(pt_update *u, int r, const uint8_t *hashes);

/**
 * After every rank is hashed: the new root and its record's gen (0: the tree is empty), and the new
 * nodes (records back to back, all of the batch's gen).
 */
size_t pt_new_count(const pt_update *u);
size_t pt_new_bytes(const pt_update *u);
uint32_t pt_batch_gen(const pt_update *u);
void pt_result(const pt_update *u, uint8_t *root, uint32_t *root_gen, uint8_t *hashes, uint8_t *records,
               uint32_t *lengths, int32_t *positions);

const char *pt_error(const pt_update *u);

#endif
