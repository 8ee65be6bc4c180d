import { bigintToBytes32, bytesEqual, bytesToBigint } from "../util/bytes.js";
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

function pathFits(rec: Uint8Array, height: number): boolean {
  return height >= 256 || bytesToBigint(rec, 32) >> BigInt(height) === 0n;
}

/**
 * Encodes the edge record of a subtree of height `chain.length − 1`: `chain[k]` is the leaf's
 * ancestor at height k (chain[0] the leaf hash; the last entry, the subtree's own hash, is the key
 * and is not repeated in the record).
 */
export function encodeMerkleEdge(chain: readonly Uint8Array[], path: bigint): Uint8Array {
  const height = chain.length - 1;
  const rec = new Uint8Array(merkleEdgeLength(height));
  rec.set(chain[0]!, 0);
  rec.set(bigintToBytes32(path), 32);
  rec[64] = height;
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
function pathBit(rec: Uint8Array, k: number): number {
  return (rec[63 - (k >> 3)]! >> (k & 7)) & 1;
}

/**
 * Recomputes edge records from their leaf hashes and paths, ignoring the stored chains, and
 * compares the stored chains with the result. `empty` is E[0..height] of the tree. All records
 * advance a height at a time, so each height is one engine call over every edge still climbing.
 * Throws a RangeError on a record that is not a well-formed edge of at most the tree's height
 * (callers check isMerkleEdge first), and whatever the engine throws on a leaf hash at or above
 * the field prime.
 */
export async function recomputeMerkleEdges(
  engine: HashEngine,
  empty: readonly Uint8Array[],
  recs: readonly Uint8Array[],
): Promise<MerkleEdgeCheck[]> {
  const n = recs.length;
  const heights = recs.map((rec, i) => {
    const h = rec.length > 64 ? rec[64]! : 0;
    if (!isMerkleEdge(rec, h) || h >= empty.length)
      throw new RangeError(`record ${i} (${rec.length} bytes) is not a Merkle edge of this tree`);
    return h;
  });
  const tops: Uint8Array[] = new Array<Uint8Array>(n);
  const bad: (number | undefined)[] = new Array<number | undefined>(n).fill(undefined);
  // The edges still climbing, and their current hashes packed in the same order.
  let active = Array.from({ length: n }, (_, i) => i);
  let cur = new Uint8Array(n * 32);
  recs.forEach((rec, i) => cur.set(rec.subarray(0, 32), i * 32));
  for (let k = 0; active.length > 0; k++) {
    const a = active.length;
    const xs = new Uint8Array(a * 32);
    const ys = new Uint8Array(a * 32);
    const e = empty[k]!;
    active.forEach((i, t) => {
      const h = cur.subarray(t * 32, t * 32 + 32);
      if (pathBit(recs[i]!, k) === 0) {
        xs.set(h, t * 32);
        ys.set(e, t * 32);
      } else {
        xs.set(e, t * 32);
        ys.set(h, t * 32);
      }
    });
    const up = await engine.hashMany(xs, ys);
    const next: number[] = [];
    const nextCur = new Uint8Array(a * 32);
    active.forEach((i, t) => {
      const h = up.subarray(t * 32, t * 32 + 32);
      if (k + 1 === heights[i]) {
        tops[i] = h.slice();
        return;
      }
      if (bad[i] === undefined && !bytesEqual(h, edgeChainAt(recs[i]!, k + 1))) bad[i] = k + 1;
      nextCur.set(h, next.length * 32);
      next.push(i);
    });
    active = next;
    cur = nextCur;
  }
  return tops.map((top, i) => ({ top, badChainAt: bad[i] }));
}
