import { bytesToBigint, copy32, writeBigint32 } from "../util/bytes.js";

/**
 * The records of tree nodes, stored under each node's 32-byte hash (storage/keys.ts) and read back
 * by every walk. The kind of a record is told by its length, never by a tag byte:
 *
 * - binary, 64 bytes: `left ‖ right`, the two children's hashes; the node's hash is H(left, right).
 *   Merkle and Patricia trees alike.
 * - edge, 65 bytes: `bottom ‖ path ‖ length`: the hash of the node `length` levels below, the
 *   32-byte big-endian path down to it (below 2^length) and `length` (1 ≤ length ≤ the height);
 *   the node's hash is H(bottom, path) + length. Patricia trees.
 * - Merkle edge, 65 + 32·⌊(h − 1)/8⌋ bytes (never 64): a Merkle subtree of height h that holds one
 *   leaf; its first 65 bytes are laid out like an edge's, then come checkpoints (merkle-edge.ts).
 *
 * NODE_FORMAT numbers this layout; a store records it and one of another format is refused.
 */

/** 2: Merkle edges keep checkpoints every 8 heights rather than every ancestor (merkle-edge.ts). */
export const NODE_FORMAT = 2;

/** A binary node's record: left ‖ right. */
export const BINARY_RECORD_LENGTH = 64;

/** A Patricia edge's record, and the head of a Merkle edge's: bottom ‖ path ‖ length. */
export const EDGE_RECORD_LENGTH = 65;

/** Where an edge record keeps its length (after bottom and path). */
const LENGTH_AT = 64;

export function isBinaryRecord(rec: Uint8Array): boolean {
  return rec.length === BINARY_RECORD_LENGTH;
}

/** True for a Patricia edge; a Merkle edge is checked against its height (isMerkleEdge). */
export function isEdgeRecord(rec: Uint8Array): boolean {
  return rec.length === EDGE_RECORD_LENGTH;
}

/** The first 32 bytes: a binary record's left child, an edge record's bottom. */
export function firstHash(rec: Uint8Array): Uint8Array {
  return rec.subarray(0, 32);
}

/** The second 32 bytes: a binary record's right child, an edge record's path as bytes. */
export function secondHash(rec: Uint8Array): Uint8Array {
  return rec.subarray(32, 64);
}

/** An edge record's length (any edge: Patricia's or Merkle's). */
export function edgeLength(rec: Uint8Array): number {
  return rec[LENGTH_AT]!;
}

/** An edge record's path, below 2^edgeLength in a well-formed record. */
export function edgePath(rec: Uint8Array): bigint {
  return bytesToBigint(rec, 32);
}

/** Writes a binary record at `at` of `out`: the 32 bytes at `leftAt` of `left`, then those at `rightAt` of `right`. */
export function writeBinaryRecord(
  out: Uint8Array,
  at: number,
  left: Uint8Array,
  leftAt: number,
  right: Uint8Array,
  rightAt: number,
): void {
  copy32(out, at, left, leftAt);
  copy32(out, at + 32, right, rightAt);
}

/**
 * Writes an edge record at `at` of `out`: the bottom's 32 bytes at `bottomAt` of `bottom`, the path
 * (a number, or 32 big-endian bytes at `pathAt` of `path`), and the length.
 */
export function writeEdgeRecord(
  out: Uint8Array,
  at: number,
  bottom: Uint8Array,
  bottomAt: number,
  length: number,
  path: bigint | Uint8Array,
  pathAt = 0,
): void {
  copy32(out, at, bottom, bottomAt);
  if (typeof path === "bigint") writeBigint32(path, out, at + 32);
  else copy32(out, at + 32, path, pathAt);
  out[at + LENGTH_AT] = length;
}
