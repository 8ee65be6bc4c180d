/*
 * The tree records' layout: the one place the native code takes it from. src/storage/records/node-record.ts
 * (and merkle-edge.ts, for the checkpoints) describe the same layout in TypeScript; the addon
 * exports these numbers as `recordFormat` and test/unit/record-format.test.ts asserts they equal
 * TypeScript's, so a format change is made here and in node-record.ts.
 *
 * A record names each child by its 32-byte hash and its gen (the u32 number of the batch that
 * wrote the child's record, big-endian), gens last; its kind is told by its length:
 * - binary: left ‖ right ‖ left gen ‖ right gen;
 * - Patricia edge: bottom ‖ path ‖ length ‖ bottom gen (the head: bottom ‖ path ‖ length);
 * - Merkle edge of height h: the head (its length byte holds h), a checkpoint every
 *   REC_CHECKPOINT_STEP heights below h, then the leaf's gen (never REC_BINARY_LENGTH long).
 */
#ifndef DACD_RECORD_FORMAT_H
#define DACD_RECORD_FORMAT_H

/** The layout's number (NODE_FORMAT): a store of another format is refused. */
#define REC_NODE_FORMAT 3
#define REC_HASH_BYTES 32
#define REC_GEN_BYTES 4

/** A binary record, and where its gens start (the left child's, then the right's). */
#define REC_BINARY_LENGTH 72
#define REC_BINARY_GENS_AT (2 * REC_HASH_BYTES)

/** An edge's path (32 bytes, big-endian) and its length byte (a Merkle edge's height), and its head. */
#define REC_EDGE_PATH_AT REC_HASH_BYTES
#define REC_EDGE_LENGTH_AT (2 * REC_HASH_BYTES)
#define REC_EDGE_HEAD_LENGTH (REC_EDGE_LENGTH_AT + 1)
/** A Patricia edge's record: the head, then the bottom's gen. */
#define REC_EDGE_LENGTH (REC_EDGE_HEAD_LENGTH + REC_GEN_BYTES)

/** Merkle edges keep the leaf's ancestors at multiples of this height. */
#define REC_CHECKPOINT_STEP 8
/** A Merkle edge's checkpoint bytes and its record's length for a subtree of height h (h >= 1). */
#define REC_CHECKPOINT_BYTES(h) ((size_t)REC_HASH_BYTES * (size_t)(((h) - 1) / REC_CHECKPOINT_STEP))
#define REC_MERKLE_EDGE_LENGTH(h) (REC_EDGE_HEAD_LENGTH + REC_CHECKPOINT_BYTES(h) + REC_GEN_BYTES)
/** Where a Merkle edge keeps the ancestor at height k (a multiple of REC_CHECKPOINT_STEP below h). */
#define REC_CHECKPOINT_AT(k) (REC_EDGE_HEAD_LENGTH + (size_t)REC_HASH_BYTES * (size_t)((k) / REC_CHECKPOINT_STEP - 1))

/** The longest record the node cache keeps in a slot: binary nodes, Patricia edges and Merkle edges
 * up to height REC_CHECKPOINT_STEP (longer Merkle edges are read from the store). */
#define REC_MAX_CACHED_LENGTH REC_BINARY_LENGTH

#endif
