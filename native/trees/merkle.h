/*
 * One update of a fixed-height Merkle tree with edge records (src/verifier/trees/format/merkle-edge.ts) in
 * native code: the old paths read top-down, then the new paths built bottom-up. The same algorithm
 * as src/verifier/trees/reference/merkle.ts, which stays as the fallback and the reference.
 *
 * It touches public data only (tree nodes and leaf hashes) and does no hashing itself: the caller
 * reads the records it asks for (mt_step / mt_supply), climbs the lone leaves' chains with its
 * engine (mt_chain_job / mt_chains_climbed) and hashes each level's binary nodes
 * (mt_next_level / mt_level_inputs / mt_level_hashes), so the engine and the store stay the caller's.
 */
#ifndef DACD_MERKLE_H
#define DACD_MERKLE_H

#include <stddef.h>
#include <stdint.h>

#include "record_format.h"

typedef struct mt_update mt_update;

/** The length mt_supply takes for a record that is not in the store. */
#define MT_MISSING UINT32_MAX
/** Edge records keep the leaf's ancestors at multiples of this height (record_format.h). */
#define MT_CHECKPOINT_STEP REC_CHECKPOINT_STEP

/**
 * A new update of the tree of `height` (1..255) whose root is `old_root` (its record written by batch
 * `old_root_gen`), for `n` changed leaves with `ids` (32 bytes big-endian each, strictly ascending,
 * below 2^height); its new records name each child with the gen of the child's record
 * (src/storage/records/node-record.ts), `batch_gen` for those it writes. `empty` is E[0..height] (32 bytes
 * each), the roots of empty subtrees. Positions (depth, index) are reported for nodes less than
 * `remembered` (0..30) levels below the root. NULL with a message in `err` when the input is bad.
 */
mt_update *mt_create(int height, int remembered, const uint8_t *ids, size_t n, const uint8_t *old_root,
                     uint32_t old_root_gen, uint32_t batch_gen, const uint8_t *empty, char *err, size_t err_len);
/**
 * Counts positions from the node `depth` below the root at `index` (32 bytes, big-endian) among
 * its depth: the first branch of a tree whose ids share a prefix (src/verifier/trees/branch-top.ts). −1 when
 * the index does not fit the depth.
 */
int mt_set_top(mt_update *u, int depth, const uint8_t *index);
void mt_free(mt_update *u);

/**
 * Reads the old paths as far as the records supplied so far allow. Returns the number of records
 * it needs next (> 0: their hashes and positions are in mt_needs), 0 when every old path node is
 * known, −1 when it failed (mt_error says why).
 */
long mt_step(mt_update *u);
/** The needed records' hashes (32 bytes each), positions (depth, index; index −1: none) and gens. */
void mt_needs(const mt_update *u, const uint8_t **hashes, const int32_t **positions, const uint32_t **gens);
/** How many records the last mt_step asked for (0 once they are supplied). */
size_t mt_pending_count(const mt_update *u);
/**
 * The records of the last mt_step's needs, in order and back to back in `records` (`bytes` in all),
 * `lengths` each one's length (MT_MISSING: not found, and no bytes). −1 when one is missing or
 * corrupt or the lengths do not add up (mt_error says which), else 0.
 */
int mt_supply(mt_update *u, const uint8_t *records, size_t bytes, const uint32_t *lengths);

/**
 * After mt_step returned 0: the new paths' shape from the leaves' new hashes (32 bytes each, in id
 * order). Returns the number of lone-leaf chains to climb (≥ 0), −1 when it failed.
 */
long mt_build(mt_update *u, const uint8_t *leaf_hashes);
/** How many leaves the update has; how many chains mt_build gave to climb (0 once climbed). */
size_t mt_leaf_count(const mt_update *u);
size_t mt_chain_count(const mt_update *u);
/** How many checkpoints per chain the climb keeps (ChainClimb.slots; its step is MT_CHECKPOINT_STEP). */
int mt_chain_slots(const mt_update *u);
/** The chains to climb (ChainClimb): n × 32 bytes of starts and paths, n heights in from and to. */
void mt_chain_job(const mt_update *u, uint8_t *starts, uint8_t *paths, uint8_t *from, uint8_t *to);
/** The climbed chains: n × 32 bytes of tops, n × slots × 32 of marks. −1 when it failed. */
int mt_chains_climbed(mt_update *u, const uint8_t *tops, const uint8_t *marks);

/**
 * Moves to the next level (bottom-up) that has binary nodes to hash: their count, 0 when none is
 * left, −1 when it failed. Each level's pairs are known once the levels below it are hashed.
 */
long mt_next_level(mt_update *u);
/** How many binary nodes the current level has (0 when there is no current level). */
size_t mt_level_size(const mt_update *u);
/** The current level's pairs into xs and ys (32 bytes per node each). */
void mt_level_inputs(const mt_update *u, uint8_t *xs, uint8_t *ys);
/** The engine's hashes of the current level's pairs. */
void mt_level_hashes(mt_update *u, const uint8_t *hashes);

/**
 * When every level is hashed (mt_next_level returned 0): the new root and its record's gen (0: the
 * tree is empty), and the new nodes (records back to back, all of the batch's gen).
 */
int mt_done(const mt_update *u);
size_t mt_new_count(const mt_update *u);
size_t mt_new_bytes(const mt_update *u);
uint32_t mt_batch_gen(const mt_update *u);
void mt_result(const mt_update *u, uint8_t *root, uint32_t *root_gen, uint8_t *hashes, uint8_t *records,
               uint32_t *lengths, int32_t *positions);

const char *mt_error(const mt_update *u);
/** The failure's error code: ERR_MERKLE_STORE (a record missing or corrupt), _MEMORY or _INPUT (misuse). */
const char *mt_error_code(const mt_update *u);

#endif
