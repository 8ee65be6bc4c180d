import { bigintToBytes32, bytesEqual, bytesToBigint, copyLowBits } from "../util/bytes.js";
import type { HashEngine } from "./hash/engine.js";

/**
 * A Merkle subtree that holds exactly one non-empty leaf is stored as one "edge" record instead of
 * a chain of binary nodes whose other child is empty. With leaf ids spread at random over 2^31 or
 * 2^64, each leaf sits below such a chain 11 to 45 levels long; one record per chain cuts the
 * store's node count about tenfold and a batch's reads and writes per leaf about threefold.
 *
 * Record, under the subtree's hash (its height h ≥ 1):
 *
 *   leaf hash (32) ‖ leaf path within the subtree (32, big-endian, < 2^h) ‖ h (1) ‖ chain
 *
 * where chain holds the hashes of the leaf's ancestors at heights 1..h−1, bottom-up (32 bytes
 * each), so the record is 33 + 32·h bytes: never 64, so it is told apart from a binary node by its
 * length. The chain costs bytes but saves hashing: when a new leaf lands in the subtree, the old
 * leaf's side of the split is an ancestor already in the chain, and a proof's sibling at the split
 * is read, not recomputed. Its first 65 bytes have the layout of a Patricia edge (bottom ‖ path ‖
 * length), which is what the walkers read.
 */

export function merkleEdgeLength(height: number): number {
  return 33 + 32 * height;
}

/** True when `rec` is a well-formed edge record for a subtree of this height. */
export function isMerkleEdge(rec: Uint8Array, height: number): boolean {
  return (
    height >= 1 && rec.length === merkleEdgeLength(height) && rec[64] === height && pathFits(rec, height)
  );
}

/** The path (bytes 32..64, big-endian) is below 2^height: no bit set at or above `height`. */
function pathFits(rec: Uint8Array, height: number): boolean {
  if (height >= 256) return true;
  const fullBytes = height >> 3; // low-order bytes that may be anything
  for (let i = 32; i < 64 - fullBytes - 1; i++) if (rec[i] !== 0) return false;
  return height % 8 === 0 ? rec[63 - fullBytes] === 0 : rec[63 - fullBytes]! >> (height % 8) === 0;
}

/**
 * A new edge record for a subtree of `height` whose leaf is `leaf` (its index in the tree, or within
 * the subtree: only the low `height` bits are kept; without it the path is left to setEdgePath).
 * The leaf hash (bytes 0..32) and the chain are the caller's to fill.
 */
export function newMerkleEdge(height: number, leaf?: bigint): Uint8Array {
  const rec = new Uint8Array(merkleEdgeLength(height));
  rec[64] = height;
  if (leaf !== undefined) setEdgePath(rec, bigintToBytes32(leaf), 0);
  return rec;
}

/** Writes the path: the low bits (as many as the record's height) of 32 big-endian bytes of `src`. */
export function setEdgePath(rec: Uint8Array, src: Uint8Array, offset: number): void {
  rec.fill(0, 32, 64);
  copyLowBits(rec, 32, src, offset, rec[64]!);
}

/**
 * Encodes the edge record of a subtree of height `chain.length − 1`: `chain[k]` is the leaf's
 * ancestor at height k (chain[0] the leaf hash; the last entry, the subtree's own hash, is the key
 * and is not repeated in the record).
 */
export function encodeMerkleEdge(chain: readonly Uint8Array[], path: bigint): Uint8Array {
  const height = chain.length - 1;
  const rec = newMerkleEdge(height, path);
  rec.set(chain[0]!, 0);
  for (let k = 1; k < height; k++) rec.set(chain[k]!, 65 + 32 * (k - 1));
  return rec;
}

/** The leaf's ancestor at height k (0 ≤ k < the record's height; k = 0 is the leaf hash). */
export function edgeChainAt(rec: Uint8Array, k: number): Uint8Array {
  return k === 0 ? rec.subarray(0, 32) : rec.subarray(65 + 32 * (k - 1), 97 + 32 * (k - 1));
}

/** The leaf's path within the subtree. */
export function edgePath(rec: Uint8Array): bigint {
  return bytesToBigint(rec, 32);
}

/** The absolute index of the edge's leaf, for an edge record at (height, index). */
export function edgeLeafIndex(rec: Uint8Array, height: number, index: bigint): bigint {
  return (index << BigInt(height)) | edgePath(rec);
}

/** What recomputing an edge record gives (recomputeMerkleEdges). */
export interface MerkleEdgeCheck {
  /** The subtree's hash, recomputed from the leaf hash and path: the record's key if it is sound. */
  readonly top: Uint8Array;
  /** The lowest height (1..h−1) whose stored chain entry differs from the recomputed one, if any. */
  readonly badChainAt: number | undefined;
}

/** Bit k of the path of an edge record (bit 0: the leaf's side at height 0). */
export function edgePathBit(rec: Uint8Array, k: number): number {
  return (rec[63 - (k >> 3)]! >> (k & 7)) & 1;
}

/**
 * Climbs the chains of edge records together from their leaf hashes and paths (the stored chains
 * are not read), one `hash` call per height over every edge still climbing: `visit(i, k, h)` gets
 * record i's ancestor at height k, for k = 1 up to the record's height (the last is its key).
 * `recs` must be well-formed edges (isMerkleEdge) of at most the tree's height; `empty` is E[0..].
 */
export async function climbEdgeChains(
  hash: (xs: Uint8Array, ys: Uint8Array) => Uint8Array | Promise<Uint8Array>,
  empty: readonly Uint8Array[],
  recs: readonly Uint8Array[],
  visit: (i: number, k: number, h: Uint8Array) => void,
): Promise<void> {
  // The edges still climbing, and their current hashes packed in the same order.
  let active = recs.map((_, i) => i);
  let cur = new Uint8Array(recs.length * 32);
  recs.forEach((rec, i) => cur.set(rec.subarray(0, 32), i * 32));
  for (let k = 0; active.length > 0; k++) {
    const a = active.length;
    const xs = new Uint8Array(a * 32);
    const ys = new Uint8Array(a * 32);
    const e = empty[k]!;
    active.forEach((i, t) => {
      const h = cur.subarray(t * 32, t * 32 + 32);
      const [x, y] = edgePathBit(recs[i]!, k) === 0 ? [xs, ys] : [ys, xs];
      x.set(h, t * 32);
      y.set(e, t * 32);
    });
    const up = await hash(xs, ys);
    const next: number[] = [];
    const nextCur = new Uint8Array(a * 32);
    active.forEach((i, t) => {
      const h = up.subarray(t * 32, t * 32 + 32);
      visit(i, k + 1, h);
      if (k + 1 === recs[i]![64]) return;
      nextCur.set(h, next.length * 32);
      next.push(i);
    });
    active = next;
    cur = nextCur;
  }
}

/**
 * Recomputes edge records from their leaf hashes and paths, ignoring the stored chains, and
 * compares the stored chains with the result. `empty` is E[0..height] of the tree. Throws a
 * RangeError on a record that is not a well-formed edge of at most the tree's height (callers
 * check isMerkleEdge first), and whatever the engine throws on a leaf hash at or above the prime.
 */
export async function recomputeMerkleEdges(
  engine: HashEngine,
  empty: readonly Uint8Array[],
  recs: readonly Uint8Array[],
): Promise<MerkleEdgeCheck[]> {
  recs.forEach((rec, i) => {
    const h = rec.length > 64 ? rec[64]! : 0;
    if (!isMerkleEdge(rec, h) || h >= empty.length)
      throw new RangeError(`record ${i} (${rec.length} bytes) is not a Merkle edge of this tree`);
  });
  const out = recs.map((): { top: Uint8Array; badChainAt: number | undefined } => ({
    top: new Uint8Array(32),
    badChainAt: undefined,
  }));
  await climbEdgeChains(
    (xs, ys) => engine.hashMany(xs, ys),
    empty,
    recs,
    (i, k, h) => {
      const o = out[i]!;
      if (k === recs[i]![64]) o.top = h.slice();
      else if (o.badChainAt === undefined && !bytesEqual(h, edgeChainAt(recs[i]!, k))) o.badChainAt = k;
    },
  );
  return out;
}
