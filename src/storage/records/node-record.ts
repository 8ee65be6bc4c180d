import { bytesToBigint, copy32, writeBigint32 } from "../../util/bytes.js";

/**
 * The records of tree nodes, stored under the number of the batch that wrote them and their 32-byte
 * hash (storage/keys.ts), and read back by every walk. A record refers to each child it names by
 * the child's hash and the number of the batch that wrote the child's record (its "gen", a u32,
 * big-endian, after everything else), so that a walk can make the child's key. The kind of a record
 * is told by its length, never by a tag byte:
 *
 * - binary, 72 bytes: `left ‖ right ‖ left gen ‖ right gen`, the two children; the node's hash is
 *   H(left, right). Merkle and Patricia trees alike.
 * - edge, 69 bytes: `bottom ‖ path ‖ length ‖ bottom gen`: the node `length` levels below, the
 *   32-byte big-endian path down to it (below 2^length) and `length` (1 ≤ length ≤ the height);
 *   the node's hash is H(bottom, path) + length. Patricia trees.
 * - Merkle edge, 69 + 32·⌊(h − 1)/8⌋ bytes (never 72): a Merkle subtree of height h that holds one
 *   leaf; its first 65 bytes are laid out like an edge's, then come checkpoints (merkle-edge.ts),
 *   then the leaf record's gen.
 *
 * An empty child (E[h], or a Patricia tree's 0) has gen 0 and is never looked up.
 *
 * NODE_FORMAT numbers this layout; a store records it and one of another format is refused.
 *
 * This module is the layout's one statement in TypeScript; native/trees/record_format.h is the
 * native code's, and test/unit/record-format.test.ts holds the two equal.
 */

/**
 * 3: every child reference carries its gen, and tree records are keyed by gen first.
 * 2: Merkle edges keep checkpoints every 8 heights rather than every ancestor (merkle-edge.ts).
 */
export const NODE_FORMAT = 3;

/** Bytes of a gen: the u32 number of the batch that wrote a record. */
export const GEN_BYTES = 4;

/** The largest gen: batch ids above it cannot be stored. */
export const MAX_GEN = 0xffff_ffff;

/** Bytes of a hash, as a record names a child. */
export const HASH_BYTES = 32;

/** A binary node's record: left ‖ right ‖ left gen ‖ right gen. */
export const BINARY_RECORD_LENGTH = 2 * HASH_BYTES + 2 * GEN_BYTES;

/** Where a binary record's gens start: the left child's, then the right's. */
export const BINARY_GENS_AT = 2 * HASH_BYTES;

/** Where an edge record keeps its path (32 bytes, big-endian), after the bottom. */
export const EDGE_PATH_AT = HASH_BYTES;

/** Where an edge record keeps its length (a Merkle edge: its height), after bottom and path. */
export const EDGE_LENGTH_AT = 2 * HASH_BYTES;

/** An edge's head, shared by Patricia and Merkle edges: bottom ‖ path ‖ length. */
export const EDGE_HEAD_LENGTH = EDGE_LENGTH_AT + 1;

/** A Patricia edge's record: the head, then the bottom's gen. */
export const EDGE_RECORD_LENGTH = EDGE_HEAD_LENGTH + GEN_BYTES;

/** Merkle edges keep the leaf's ancestors at the heights that are multiples of this (merkle-edge.ts). */
export const CHECKPOINT_STEP = 8;

/**
 * The longest record a node cache slot holds: binary nodes, Patricia edges and Merkle edges up to
 * height CHECKPOINT_STEP (longer Merkle edges are read from the store).
 */
export const MAX_CACHED_RECORD_LENGTH = BINARY_RECORD_LENGTH;

export function isBinaryRecord(rec: Uint8Array): boolean {
  return rec.length === BINARY_RECORD_LENGTH;
}

/** True for a Patricia edge; a Merkle edge is checked against its height (isMerkleEdge). */
export function isEdgeRecord(rec: Uint8Array): boolean {
  return rec.length === EDGE_RECORD_LENGTH;
}

/** The first 32 bytes: a binary record's left child, an edge record's bottom. */
export function firstHash(rec: Uint8Array): Uint8Array {
  return rec.subarray(0, HASH_BYTES);
}

/** The second 32 bytes: a binary record's right child, an edge record's path as bytes. */
export function secondHash(rec: Uint8Array): Uint8Array {
  return rec.subarray(HASH_BYTES, 2 * HASH_BYTES);
}

/**
 * The gen of a child: a binary record's left (side 0) or right (side 1), an edge's bottom (side 0),
 * a Merkle edge's leaf (side 0). The gens close every record, in the order of the children.
 */
export function childGen(rec: Uint8Array, side: 0 | 1): number {
  const at = rec.length === BINARY_RECORD_LENGTH ? BINARY_GENS_AT + GEN_BYTES * side : rec.length - GEN_BYTES;
  return readGen(rec, at);
}

export function readGen(buf: Uint8Array, at: number): number {
  return ((buf[at]! << 24) | (buf[at + 1]! << 16) | (buf[at + 2]! << 8) | buf[at + 3]!) >>> 0;
}

export function writeGen(buf: Uint8Array, at: number, gen: number): void {
  buf[at] = gen >>> 24;
  buf[at + 1] = (gen >>> 16) & 0xff;
  buf[at + 2] = (gen >>> 8) & 0xff;
  buf[at + 3] = gen & 0xff;
}

/** An edge record's length (any edge: Patricia's or Merkle's). */
export function edgeLength(rec: Uint8Array): number {
  return rec[EDGE_LENGTH_AT]!;
}

/** Sets an edge record's length (a Merkle edge's: its height). */
export function setEdgeLength(rec: Uint8Array, length: number): void {
  rec[EDGE_LENGTH_AT] = length;
}

/** An edge record's path, below 2^edgeLength in a well-formed record. */
export function edgePath(rec: Uint8Array): bigint {
  return bytesToBigint(rec, EDGE_PATH_AT);
}

/**
 * Writes a binary record at `at` of `out`: the 32 bytes at `leftAt` of `left`, then those at
 * `rightAt` of `right`, then their gens.
 */
export function writeBinaryRecord(
  out: Uint8Array,
  at: number,
  left: Uint8Array,
  leftAt: number,
  leftGen: number,
  right: Uint8Array,
  rightAt: number,
  rightGen: number,
): void {
  copy32(out, at, left, leftAt);
  copy32(out, at + HASH_BYTES, right, rightAt);
  writeGen(out, at + BINARY_GENS_AT, leftGen);
  writeGen(out, at + BINARY_GENS_AT + GEN_BYTES, rightGen);
}

/**
 * Writes an edge record at `at` of `out`: the bottom's 32 bytes at `bottomAt` of `bottom`, the path
 * (a number, or 32 big-endian bytes at `pathAt` of `path`), the length and the bottom's gen.
 */
export function writeEdgeRecord(
  out: Uint8Array,
  at: number,
  bottom: Uint8Array,
  bottomAt: number,
  bottomGen: number,
  length: number,
  path: bigint | Uint8Array,
  pathAt = 0,
): void {
  copy32(out, at, bottom, bottomAt);
  if (typeof path === "bigint") writeBigint32(path, out, at + EDGE_PATH_AT);
  else copy32(out, at + EDGE_PATH_AT, path, pathAt);
  out[at + EDGE_LENGTH_AT] = length;
  writeGen(out, at + EDGE_HEAD_LENGTH, bottomGen);
}
