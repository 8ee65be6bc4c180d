import { bigintToBytes32, bitAt, bytesEqual, bytesToBigint, copyLowBits } from "../../../util/bytes.js";
import { ByteChunks } from "../../../util/byte-chunks.js";
import { climbChains, type HashEngine } from "../../hash/engine.js";
import {
  BINARY_RECORD_LENGTH,
  CHECKPOINT_STEP,
  EDGE_HEAD_LENGTH,
  EDGE_PATH_AT,
  GEN_BYTES,
  HASH_BYTES,
  edgeLength,
  readGen,
  setEdgeLength,
  writeGen,
} from "../../../storage/records/node-record.js";

/**
 * A Merkle subtree that holds exactly one non-empty leaf is stored as one "edge" record instead of
 * a chain of binary nodes whose other child is empty. With leaf ids spread at random over 2^31 or
 * 2^64, each leaf sits below such a chain 11 to 45 levels long; one record per chain cuts the
 * store's node count about tenfold and a batch's reads and writes per leaf about threefold.
 *
 * Record, under the subtree's hash (its height h ≥ 1):
 *
 *   leaf hash (32) ‖ leaf path within the subtree (32, big-endian, < 2^h) ‖ h (1) ‖ checkpoints
 *   ‖ leaf gen (4)
 *
 * where the checkpoints are the leaf's ancestors at the heights 8, 16, 24, … below h, bottom-up
 * (32 bytes each), and the leaf gen the number of the batch that wrote the leaf's record
 * (node-record.ts), so the record is 69 + 32·⌊(h − 1)/8⌋ bytes: never 72, so it is told apart from
 * a binary node by its length. When a new leaf lands in the subtree, the old leaf's ancestor at the
 * split is climbed from the checkpoint below it: at most 7 hashes, 3.5 on average, batched over all
 * splits of a batch (ancestorsAt). Storing every ancestor instead would spare those hashes but make
 * a deep lone leaf's record (a position's, in a 64-high tree) several times larger, and these
 * records are most of the bytes a batch writes and most of the store. Its first 65 bytes have the
 * layout of a Patricia edge (bottom ‖ path ‖ length), which is what the walkers read.
 */

/** Checkpoints are kept at the heights that are multiples of this (node-record.ts). */
export { CHECKPOINT_STEP };

/** How many checkpoints an edge of this height keeps (those strictly below it). */
export function checkpointCount(height: number): number {
  return Math.floor((height - 1) / CHECKPOINT_STEP);
}

/** True when the ancestor at height k is stored in every edge above k: the leaf hash or a checkpoint. */
export function isCheckpoint(k: number): boolean {
  return k % CHECKPOINT_STEP === 0;
}

/** Where the ancestor at height k (a checkpoint, k > 0) starts in an edge record. */
export function checkpointOffset(k: number): number {
  return EDGE_HEAD_LENGTH + HASH_BYTES * (k / CHECKPOINT_STEP - 1);
}

export function merkleEdgeLength(height: number): number {
  return EDGE_HEAD_LENGTH + HASH_BYTES * checkpointCount(height) + GEN_BYTES;
}

/** The gen of an edge record's leaf (its last bytes). */
export function edgeLeafGen(rec: Uint8Array): number {
  return readGen(rec, rec.length - GEN_BYTES);
}

export function setEdgeLeafGen(rec: Uint8Array, gen: number): void {
  writeGen(rec, rec.length - GEN_BYTES, gen);
}

/** True when `rec` is a well-formed edge record for a subtree of this height. */
export function isMerkleEdge(rec: Uint8Array, height: number): boolean {
  return (
    height >= 1 &&
    rec.length === merkleEdgeLength(height) &&
    edgeLength(rec) === height &&
    pathFits(rec, height)
  );
}

/** The path (32 bytes, big-endian) is below 2^height: no bit set at or above `height`. */
function pathFits(rec: Uint8Array, height: number): boolean {
  if (height >= 256) return true;
  const fullBytes = height >> 3; // low-order bytes that may be anything
  const end = EDGE_PATH_AT + HASH_BYTES;
  for (let i = EDGE_PATH_AT; i < end - fullBytes - 1; i++) if (rec[i] !== 0) return false;
  const top = rec[end - 1 - fullBytes]!;
  return height % 8 === 0 ? top === 0 : top >> (height % 8) === 0;
}

/** Where single new edge records are carved from: a W-spot batch makes ~4,000 (split old edges). */
const edgeRecords = new ByteChunks();

/**
 * A new edge record for a subtree of `height` whose leaf is `leaf` (its index in the tree, or within
 * the subtree: only the low `height` bits are kept; without it the path is left to setEdgePath).
 * The leaf hash (bytes 0..32) and the checkpoints are the caller's to fill.
 */
export function newMerkleEdge(height: number, leaf?: bigint): Uint8Array {
  const rec = edgeRecords.take(merkleEdgeLength(height));
  setEdgeLength(rec, height);
  if (leaf !== undefined) setEdgePath(rec, bigintToBytes32(leaf), 0);
  return rec;
}

/**
 * New edge records for subtrees of these heights, as views of one buffer: a batch makes tens of
 * thousands, and one allocation each would cost more than filling them.
 */
export function newMerkleEdges(heights: readonly number[]): Uint8Array[] {
  let total = 0;
  for (const h of heights) total += merkleEdgeLength(h);
  const buf = new Uint8Array(total);
  let at = 0;
  return heights.map((h) => {
    const rec = buf.subarray(at, (at += merkleEdgeLength(h)));
    setEdgeLength(rec, h);
    return rec;
  });
}

/** Writes the path: the low bits (as many as the record's height) of 32 big-endian bytes of `src`. */
export function setEdgePath(rec: Uint8Array, src: Uint8Array, offset: number): void {
  rec.fill(0, EDGE_PATH_AT, EDGE_PATH_AT + HASH_BYTES);
  copyLowBits(rec, EDGE_PATH_AT, src, offset, edgeLength(rec));
}

/**
 * Encodes the edge record of a subtree of height `chain.length − 1`: `chain[k]` is the leaf's
 * ancestor at height k (chain[0] the leaf hash, whose record batch `leafGen` wrote; the last entry,
 * the subtree's own hash, is the key and is not repeated in the record). Only the checkpoints of
 * the chain are kept.
 */
export function encodeMerkleEdge(chain: readonly Uint8Array[], path: bigint, leafGen: number): Uint8Array {
  const height = chain.length - 1;
  const rec = newMerkleEdge(height, path);
  rec.set(chain[0]!, 0);
  setEdgeLeafGen(rec, leafGen);
  for (let k = CHECKPOINT_STEP; k < height; k += CHECKPOINT_STEP) rec.set(chain[k]!, checkpointOffset(k));
  return rec;
}

/** The leaf's stored ancestor at height k: the leaf hash (k = 0) or a checkpoint below the edge. */
export function edgeCheckpointAt(rec: Uint8Array, k: number): Uint8Array {
  if (!isCheckpoint(k) || k >= edgeLength(rec))
    throw new RangeError(`an edge keeps no ancestor at height ${k}`);
  const off = k === 0 ? 0 : checkpointOffset(k);
  return rec.subarray(off, off + HASH_BYTES);
}

/** The leaf's path within the subtree. */
export function edgePath(rec: Uint8Array): bigint {
  return bytesToBigint(rec, EDGE_PATH_AT);
}

/** The absolute index of the edge's leaf, for an edge record at (height, index). */
export function edgeLeafIndex(rec: Uint8Array, height: number, index: bigint): bigint {
  return (index << BigInt(height)) | edgePath(rec);
}

/** What recomputing an edge record gives (recomputeMerkleEdges). */
export interface MerkleEdgeCheck {
  /** The subtree's hash, recomputed from the leaf hash and path: the record's key if it is sound. */
  readonly top: Uint8Array;
  /** The lowest checkpoint height whose stored ancestor differs from the recomputed one, if any. */
  readonly badChainAt: number | undefined;
}

/** Bit k of the path of an edge record (bit 0: the leaf's side at height 0). */
export function edgePathBit(rec: Uint8Array, k: number): number {
  return bitAt(rec, EDGE_PATH_AT, k);
}

/**
 * Climbs the chains of edge records from their leaf hashes and paths (the stored checkpoints are not
 * read), all of them in one climbChains call: `visit(i, k, h)` gets record i's ancestor at each
 * checkpoint height k below the record's height, bottom-up, then at its height (the record's key).
 * `recs` must be well-formed edges (isMerkleEdge) of at most the tree's height; `empty` is E[0..].
 */
export async function climbEdgeChains(
  engine: HashEngine,
  empty: readonly Uint8Array[],
  recs: readonly Uint8Array[],
  visit: (i: number, k: number, h: Uint8Array) => void,
): Promise<void> {
  const n = recs.length;
  if (n === 0) return;
  const starts = new Uint8Array(n * 32);
  const paths = new Uint8Array(n * 32);
  const to = new Uint8Array(n);
  let tallest = 0;
  recs.forEach((rec, i) => {
    starts.set(rec.subarray(0, HASH_BYTES), i * 32);
    paths.set(rec.subarray(EDGE_PATH_AT, EDGE_PATH_AT + HASH_BYTES), i * 32);
    to[i] = edgeLength(rec);
    tallest = Math.max(tallest, to[i]);
  });
  const slots = checkpointCount(tallest);
  const { tops, marks } = await climbChains(engine, {
    starts,
    paths,
    from: new Uint8Array(n),
    to,
    empty: packedEmpties(empty),
    step: CHECKPOINT_STEP,
    slots,
  });
  for (let i = 0; i < n; i++) {
    for (let k = CHECKPOINT_STEP; k < to[i]!; k += CHECKPOINT_STEP) {
      const at = (i * slots + k / CHECKPOINT_STEP - 1) * 32;
      visit(i, k, marks.subarray(at, at + 32));
    }
    visit(i, to[i]!, tops.subarray(i * 32, i * 32 + 32));
  }
}

const packedCache = new WeakMap<readonly Uint8Array[], Uint8Array>();

/** E[0..] packed back to back, for climbChains (once per array: emptyRoots keeps one per tree shape). */
export function packedEmpties(empty: readonly Uint8Array[]): Uint8Array {
  let packed = packedCache.get(empty);
  if (!packed) {
    packed = new Uint8Array(empty.length * 32);
    empty.forEach((e, k) => packed!.set(e, k * 32));
    packedCache.set(empty, packed);
  }
  return packed;
}

/**
 * Recomputes edge records from their leaf hashes and paths, ignoring the stored checkpoints, and
 * compares the stored checkpoints with the result. `empty` is E[0..height] of the tree. Throws a
 * RangeError on a record that is not a well-formed edge of at most the tree's height (callers
 * check isMerkleEdge first), and whatever the engine throws on a leaf hash at or above the prime.
 */
export async function recomputeMerkleEdges(
  engine: HashEngine,
  empty: readonly Uint8Array[],
  recs: readonly Uint8Array[],
): Promise<MerkleEdgeCheck[]> {
  recs.forEach((rec, i) => {
    const h = rec.length > EDGE_HEAD_LENGTH && rec.length !== BINARY_RECORD_LENGTH ? edgeLength(rec) : 0;
    if (!isMerkleEdge(rec, h) || h >= empty.length)
      throw new RangeError(`record ${i} (${rec.length} bytes) is not a Merkle edge of this tree`);
  });
  const out = recs.map((): { top: Uint8Array; badChainAt: number | undefined } => ({
    top: new Uint8Array(32),
    badChainAt: undefined,
  }));
  await climbEdgeChains(engine, empty, recs, (i, k, h) => {
    const o = out[i]!;
    if (k === edgeLength(recs[i]!)) o.top = h.slice();
    else if (o.badChainAt === undefined && !bytesEqual(h, edgeCheckpointAt(recs[i]!, k))) o.badChainAt = k;
  });
  return out;
}

/**
 * The ancestors of edges' leaves at the given heights (each below its edge's height), climbed from
 * the checkpoint at or below each: at most CHECKPOINT_STEP − 1 rounds, one engine call per round
 * over every ancestor still climbing. `empty` is E[0..] of the tree.
 */
export async function ancestorsAt(
  engine: HashEngine,
  empty: readonly Uint8Array[],
  recs: readonly Uint8Array[],
  heights: readonly number[],
): Promise<Uint8Array[]> {
  const out = recs.map((rec, i) => {
    if (heights[i]! >= edgeLength(rec))
      throw new RangeError(`an edge of height ${edgeLength(rec)} has no ancestor at ${heights[i]}`);
    const from = heights[i]! - (heights[i]! % CHECKPOINT_STEP);
    // A copy (new Uint8Array, not slice: a record read from LevelDB is a Buffer, whose slice is a view).
    return new Uint8Array(edgeCheckpointAt(rec, from));
  });
  let climbing = recs.map((_, i) => i).filter((i) => !isCheckpoint(heights[i]!));
  for (let k = 1; climbing.length > 0; k++) {
    const n = climbing.length;
    const xs = new Uint8Array(n * 32);
    const ys = new Uint8Array(n * 32);
    climbing.forEach((i, t) => {
      const below = heights[i]! - (heights[i]! % CHECKPOINT_STEP) + k - 1;
      const [x, y] = edgePathBit(recs[i]!, below) === 0 ? [xs, ys] : [ys, xs];
      x.set(out[i]!, t * 32);
      y.set(empty[below]!, t * 32);
    });
    const up = await engine.hashMany(xs, ys);
    climbing.forEach((i, t) => out[i]!.set(up.subarray(t * 32, t * 32 + 32)));
    climbing = climbing.filter((i) => heights[i]! % CHECKPOINT_STEP > k);
  }
  return out;
}
