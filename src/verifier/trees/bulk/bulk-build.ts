import { DacdError } from "../../../errors.js";
import { addSmall, bitLength, bytesEqual, copy32, writeBigint32, ZERO32 } from "../../../util/bytes.js";
import type { HashEngine } from "../../hash/engine.js";
import {
  checkpointCount,
  checkpointOffset,
  climbEdgeChains,
  merkleEdgeLength,
  newMerkleEdges,
  setEdgeLeafGen,
  setEdgePath,
} from "../format/merkle-edge.js";
import {
  BINARY_RECORD_LENGTH,
  EDGE_RECORD_LENGTH,
  edgeLength,
  writeBinaryRecord,
  writeEdgeRecord,
} from "../../../storage/records/node-record.js";
import type { NodeWrite } from "../../../storage/records/node-source.js";

/**
 * Whole trees built bottom-up from a complete, sorted leaf set (dump loading, benchmarks), with the
 * same node records the incremental updates write (merkle.ts, patricia.ts), so a store built here
 * continues under incremental updates exactly like one grown batch by batch.
 *
 * Hashing is done a level (Merkle) or a merge height (Patricia) at a time in large engine calls;
 * node records are handed to `sink` in chunks as soon as they are hashed, so the caller can write
 * them to LevelDB in bounded batches. Memory is O(leaves): ids plus one packed buffer of hashes
 * (and, for Merkle edges, the records of one chunk of leaves while their chains are hashed).
 */

export interface BulkLeaves {
  /** Leaf ids, strictly ascending. */
  readonly ids: readonly bigint[];
  /** Leaf hashes (values, for orders), 32 bytes each, packed in the order of `ids`. */
  readonly hashes: Uint8Array;
}

/** Receives node records in chunks; awaited before more are produced. */
export type NodeSink = (nodes: NodeWrite[]) => Promise<void> | void;

export interface BulkOptions {
  /** Node records per sink call (default 16384). */
  readonly sinkChunk?: number;
  /** Record bytes per sink call at most, besides `sinkChunk` (default 8 MiB): edges are long. */
  readonly sinkBytes?: number;
  /** Pairs per engine call (default 65536). */
  readonly engineChunk?: number;
  /** Reports the tree's nodes at one height (checking stated subtree roots); no record is written for it. */
  readonly probe?: NodeProbe;
  /**
   * The gen the records are written under (the batch the load stands for), which every record
   * names its non-empty children by (node-record.ts); default 0.
   */
  readonly gen?: number;
}

/**
 * Hears the hash of every non-empty node of the canonical tree at `height`, by index (its id's
 * bits above that height), whether it is a record of its own or lies inside an edge. Nodes not
 * reported are empty (E[height] in a Merkle tree, 0 in a Patricia tree).
 */
export interface NodeProbe {
  readonly height: number;
  readonly onNode: (index: bigint, hash: Uint8Array) => void;
}

/** Edge record bytes held at once while their chains are hashed (bounds the leaves per chunk). */
const EDGE_CHUNK_BYTES = 32 << 20;
const CLIMB_CHUNK_BYTES = 6 << 20;

class SinkBuffer {
  private buf: NodeWrite[] = [];
  private bytes = 0;
  constructor(
    private readonly sink: NodeSink,
    private readonly size: number,
    private readonly maxBytes = Infinity,
  ) {}
  async push(w: NodeWrite): Promise<void> {
    this.buf.push(w);
    this.bytes += w.hash.length + w.record.length;
    if (this.buf.length >= this.size || this.bytes >= this.maxBytes) await this.flush();
  }
  async flush(): Promise<void> {
    if (this.buf.length === 0) return;
    const out = this.buf;
    this.buf = [];
    this.bytes = 0;
    await this.sink(out);
  }
}

/** n hashes in engine calls of at most `chunk` pairs: `hashRange(from, to)` hashes one call's pairs. */
async function inChunks(
  n: number,
  chunk: number,
  hashRange: (from: number, to: number) => Uint8Array | Promise<Uint8Array>,
): Promise<Uint8Array> {
  if (n <= chunk) return hashRange(0, n);
  const out = new Uint8Array(n * 32);
  for (let i = 0; i < n; i += chunk) {
    const end = Math.min(n, i + chunk);
    out.set(await hashRange(i, end), i * 32);
  }
  return out;
}

function hashChunked(engine: HashEngine, xs: Uint8Array, ys: Uint8Array, chunk: number): Promise<Uint8Array> {
  return inChunks(xs.length / 32, chunk, (a, b) =>
    engine.hashMany(xs.subarray(a * 32, b * 32), ys.subarray(a * 32, b * 32)),
  );
}

function checkSorted(leaves: BulkLeaves, limit: bigint, what: string): void {
  const n = leaves.ids.length;
  if (leaves.hashes.length !== n * 32)
    throw new RangeError(`${what}: ${n} ids but ${leaves.hashes.length / 32} hashes`);
  for (let i = 0; i < n; i++) {
    const id = leaves.ids[i]!;
    if (id < 0n || id >= limit)
      throw new DacdError("BAD_INPUT", `${what}: leaf id ${id} is outside the tree`);
    if (i > 0 && id <= leaves.ids[i - 1]!) {
      throw new DacdError("BAD_INPUT", `${what}: leaf ids are not strictly ascending at ${id}`);
    }
  }
}

/**
 * Builds a fixed-height Merkle tree in the canonical form (merkle-edge.ts): every maximal subtree
 * of height ≥ 1 that holds exactly one leaf is one edge record under its hash, every node above two
 * or more leaves a binary record (left ‖ right). `empty` is E[0..height]; leaves whose hash is E[0]
 * are empty and skipped, and nodes whose hash is E[k] get no record. Returns the root.
 *
 * Leaf i first shares a subtree with another leaf at height m(i), the least bit length of its id
 * XOR a neighbour's id, so its single-leaf subtree tops out at m(i) − 1 (the root when it is the
 * only leaf). The edges' chains are hashed first, a chunk of leaves at a time and a height at a
 * time (only one chunk's records are held at once); then the binary levels are hashed bottom-up,
 * the nodes of each height being the parents from below merged with the edge tops of that height.
 */
export async function buildMerkle(
  engine: HashEngine,
  empty: readonly Uint8Array[],
  leaves: BulkLeaves,
  sink: NodeSink,
  opts: BulkOptions = {},
  what = "merkle tree",
): Promise<Uint8Array> {
  const height = empty.length - 1;
  checkSorted(leaves, 1n << BigInt(height), what);
  const out = new SinkBuffer(sink, opts.sinkChunk ?? 16384, opts.sinkBytes ?? 8 << 20);
  const engineChunk = opts.engineChunk ?? 65536;
  const gen = opts.gen ?? 0;

  const { ids, tops } = nonEmptyLeaves(leaves, empty[0]!);
  const n = ids.length;
  if (n === 0) return empty[height]!;
  // The probe climbs single-leaf subtrees from their leaf, which the edge pass overwrites.
  const leafHashes = opts.probe ? tops.slice(0, n * 32) : undefined;

  // The height of each leaf's maximal single-leaf subtree; `tops` holds its hash once computed.
  const topH = new Uint16Array(n);
  if (n === 1) topH[0] = height;
  let below = Infinity; // the merge height with the previous leaf
  for (let i = 0; i + 1 < n; i++) {
    const m = bitLength(ids[i]! ^ ids[i + 1]!);
    topH[i] = Math.min(below, m) - 1;
    below = m;
  }
  if (n > 1) topH[n - 1] = below - 1;

  await writeLeafEdges(engine, empty, ids, topH, tops, out, engineChunk, gen);

  // Leaves by the height of their subtree's top (stable, so in id order within a height).
  const starts = new Int32Array(height + 2);
  for (let i = 0; i < n; i++) starts[topH[i]! + 1]!++;
  for (let h = 1; h < starts.length; h++) starts[h]! += starts[h - 1]!;
  const order = new Int32Array(n);
  const fill = starts.slice();
  for (let i = 0; i < n; i++) order[fill[topH[i]!]!++] = i;

  // Binary levels: the parents from below merged with the edge tops entering at this height.
  let curIds: bigint[] = [];
  let curHashes: Uint8Array = new Uint8Array(0);
  for (let h = 0; h <= height; h++) {
    const from = starts[h]!;
    const to = starts[h + 1]!;
    if (from === to && curIds.length === 0) {
      if (opts.probe?.height === h)
        await probeMerkle(engine, empty, ids, topH, leafHashes!, [], new Uint8Array(0), opts.probe);
      continue;
    }
    const c = curIds.length;
    const levelIds: bigint[] = [];
    const levelHashes = new Uint8Array((c + to - from) * 32);
    const shift = BigInt(h);
    for (let p = 0, q = from; p < c || q < to;) {
      const qId = q < to ? ids[order[q]!]! >> shift : undefined;
      const k = levelIds.length * 32;
      if (qId === undefined || (p < c && curIds[p]! < qId)) {
        levelHashes.set(curHashes.subarray(p * 32, p * 32 + 32), k);
        levelIds.push(curIds[p++]!);
      } else {
        levelHashes.set(tops.subarray(order[q]! * 32, order[q]! * 32 + 32), k);
        levelIds.push(qId);
        q++;
      }
    }
    if (opts.probe?.height === h)
      await probeMerkle(engine, empty, ids, topH, leafHashes!, levelIds, levelHashes, opts.probe);
    if (h === height) {
      if (levelIds.length !== 1) throw new Error(`buildMerkle: ${levelIds.length} nodes at the root`);
      curHashes = levelHashes;
      break;
    }
    const m = levelIds.length;
    const parents: bigint[] = [];
    const lefts = new Uint8Array(m * 32);
    const rights = new Uint8Array(m * 32);
    const e = empty[h]!;
    for (let i = 0; i < m;) {
      const id = levelIds[i]!;
      const k = parents.length * 32;
      if ((id & 1n) === 0n) {
        lefts.set(levelHashes.subarray(i * 32, i * 32 + 32), k);
        if (i + 1 < m && levelIds[i + 1] === id + 1n) {
          rights.set(levelHashes.subarray((i + 1) * 32, (i + 2) * 32), k);
          i += 2;
        } else {
          rights.set(e, k);
          i += 1;
        }
      } else {
        lefts.set(e, k);
        rights.set(levelHashes.subarray(i * 32, i * 32 + 32), k);
        i += 1;
      }
      parents.push(id >> 1n);
    }
    const pn = parents.length;
    const ls = lefts.subarray(0, pn * 32);
    const rs = rights.subarray(0, pn * 32);
    const up = await hashChunked(engine, ls, rs, engineChunk);
    const eUp = empty[h + 1]!;
    // The level's records in one buffer, and views for hashes and records: an allocation each
    // would cost more than the copies (millions of nodes in a load).
    const B = BINARY_RECORD_LENGTH;
    const records = new Uint8Array(pn * B);
    for (let i = 0; i < pn; i++) {
      const hash = up.subarray(i * 32, i * 32 + 32);
      if (bytesEqual(hash, eUp)) continue;
      // An empty child (E[h]) is named with gen 0, as the walks name it.
      const eHere = empty[h]!;
      const lGen = equalAt(ls, i * 32, eHere) ? 0 : gen;
      const rGen = equalAt(rs, i * 32, eHere) ? 0 : gen;
      writeBinaryRecord(records, i * B, ls, i * 32, lGen, rs, i * 32, rGen);
      await out.push({ hash, record: records.subarray(i * B, i * B + B) });
    }
    curIds = parents;
    curHashes = up;
  }
  await out.flush();
  return curHashes.slice(0, 32);
}

/**
 * A Merkle probe at height h: the binary pass's nodes at h, and for each leaf alone in a subtree
 * higher than h (its edge passes through h without a record there) its chain climbed to h.
 */
async function probeMerkle(
  engine: HashEngine,
  empty: readonly Uint8Array[],
  ids: readonly bigint[],
  topH: Uint16Array,
  leafHashes: Uint8Array,
  levelIds: readonly bigint[],
  levelHashes: Uint8Array,
  probe: NodeProbe,
): Promise<void> {
  const h = probe.height;
  levelIds.forEach((id, i) => probe.onNode(id, levelHashes.slice(i * 32, i * 32 + 32)));
  const alone: number[] = [];
  for (let i = 0; i < ids.length; i++) if (topH[i]! > h) alone.push(i);
  if (alone.length === 0) return;
  let cur = new Uint8Array(alone.length * 32);
  alone.forEach((i, k) => cur.set(leafHashes.subarray(i * 32, i * 32 + 32), k * 32));
  for (let k = 0; k < h; k++) {
    const ls = new Uint8Array(cur.length);
    const rs = new Uint8Array(cur.length);
    alone.forEach((i, j) => {
      const right = ((ids[i]! >> BigInt(k)) & 1n) === 1n;
      (right ? ls : rs).set(empty[k]!, j * 32);
      (right ? rs : ls).set(cur.subarray(j * 32, j * 32 + 32), j * 32);
    });
    cur = Uint8Array.from(await engine.hashMany(ls, rs));
  }
  alone.forEach((i, k) => probe.onNode(ids[i]! >> BigInt(h), cur.slice(k * 32, k * 32 + 32)));
}

/**
 * The edge records of the leaves' single-leaf subtrees (merkle-edge.ts), a chunk of leaves at a
 * time (climbEdgeChains: all of a chunk's chains climb in one engine call); each subtree's
 * hash is left in `tops` for the binary levels above.
 */
async function writeLeafEdges(
  engine: HashEngine,
  empty: readonly Uint8Array[],
  ids: readonly bigint[],
  topH: Uint16Array,
  tops: Uint8Array,
  out: SinkBuffer,
  engineChunk: number,
  gen: number,
): Promise<void> {
  const height = empty.length - 1;
  const n = ids.length;
  // A chunk's climb (starts, paths, heights, tops: 98 bytes a chain, and its checkpoints) stays
  // within the pool's reusable buffers (8 MiB), rather than a fresh 32 MiB one per chunk.
  const climbBytes = 98 + 32 * checkpointCount(height);
  const leafChunk = Math.max(
    1,
    Math.min(
      engineChunk,
      Math.floor(EDGE_CHUNK_BYTES / merkleEdgeLength(height)),
      Math.floor(CLIMB_CHUNK_BYTES / climbBytes),
    ),
  );
  for (let s = 0; s < n; s += leafChunk) {
    const end = Math.min(n, s + leafChunk);
    const leafOf: number[] = [];
    const heights: number[] = [];
    for (let i = s; i < end; i++) {
      if (topH[i]! === 0) continue;
      leafOf.push(i);
      heights.push(topH[i]!);
    }
    const recs = newMerkleEdges(heights);
    const id32 = new Uint8Array(32);
    recs.forEach((rec, r) => {
      const i = leafOf[r]!;
      writeBigint32(ids[i]!, id32, 0);
      setEdgePath(rec, id32, 0);
      copy32(rec, 0, tops, i * 32);
      setEdgeLeafGen(rec, gen);
    });
    await climbEdgeChains(engine, empty, recs, (r, k, hash) => {
      const rec = recs[r]!;
      if (k < edgeLength(rec)) rec.set(hash, checkpointOffset(k));
      else tops.set(hash, leafOf[r]! * 32);
    });
    for (let r = 0; r < recs.length; r++) {
      const i = leafOf[r]!;
      // A view: a leaf's entry in `tops` is final once its chain has climbed.
      await out.push({ hash: tops.subarray(i * 32, i * 32 + 32), record: recs[r]! });
    }
  }
}

/**
 * Builds a Patricia-Merkle tree of `height`. Leaves of value 0 are empty and skipped. Adjacent
 * leaves (in id order) first meet at the height given by the highest bit in which their ids differ;
 * processing those merge heights in ascending order joins contiguous clusters into binary nodes,
 * each cluster's top being extended by an edge up to the merge, so every node is hashed exactly
 * once and all merges of one height are hashed together. Returns the root (0 for no leaves).
 */
export async function buildPatricia(
  engine: HashEngine,
  height: number,
  leaves: BulkLeaves,
  sink: NodeSink,
  opts: BulkOptions = {},
  what = "patricia tree",
): Promise<Uint8Array> {
  checkSorted(leaves, 1n << BigInt(height), what);
  const { ids, tops } = nonEmptyLeaves(leaves, ZERO32);
  if (ids.length === 0) return ZERO32.slice();
  const out = new SinkBuffer(sink, opts.sinkChunk ?? 16384);
  const clusters = new PatriciaClusters(engine, ids, tops, out, opts.engineChunk ?? 65536, opts.gen ?? 0);
  const { counts, order } = pairsByMergeHeight(ids, height);
  for (let m = 1; m <= height; m++) {
    if (opts.probe?.height === m - 1) await clusters.probe(opts.probe);
    await clusters.merge(m, order.subarray(counts[m]!, counts[m + 1]!));
  }
  if (opts.probe?.height === height) await clusters.probe(opts.probe);
  const root = await clusters.raise([{ start: 0, to: height }]);
  await out.flush();
  return root;
}

/**
 * The leaves whose hash is not `empty`: their ids, and their hashes packed in a buffer the size of
 * all leaves' (the builds keep each subtree's top hash there as they climb).
 */
function nonEmptyLeaves(leaves: BulkLeaves, empty: Uint8Array): { ids: bigint[]; tops: Uint8Array } {
  const ids: bigint[] = [];
  const tops = new Uint8Array(leaves.hashes.length);
  for (let i = 0; i < leaves.ids.length; i++) {
    const h = leaves.hashes.subarray(i * 32, i * 32 + 32);
    if (bytesEqual(h, empty)) continue;
    tops.set(h, ids.length * 32);
    ids.push(leaves.ids[i]!);
  }
  return { ids, tops };
}

/**
 * The pairs of adjacent leaves (i, i+1) grouped by the height at which they first meet: those of
 * merge height m are `order[counts[m] .. counts[m + 1]]`, in id order.
 */
function pairsByMergeHeight(
  ids: readonly bigint[],
  height: number,
): { counts: Int32Array; order: Int32Array } {
  const n = ids.length;
  const mergeH = new Uint16Array(Math.max(0, n - 1));
  const counts = new Int32Array(height + 2);
  for (let i = 0; i + 1 < n; i++) {
    const m = bitLength(ids[i]! ^ ids[i + 1]!);
    mergeH[i] = m;
    counts[m + 1]!++;
  }
  for (let m = 1; m < counts.length; m++) counts[m]! += counts[m - 1]!;
  const order = new Int32Array(Math.max(0, n - 1));
  const fill = counts.slice();
  for (let i = 0; i + 1 < n; i++) order[fill[mergeH[i]!]!++] = i;
  return { counts, order };
}

/** The hash of cluster `start`'s subtree raised to height `to` (an edge when its top is lower). */
interface Raise {
  readonly start: number;
  readonly to: number;
}

/**
 * The clusters of a Patricia build: contiguous ranges [start, end] of leaves already joined under
 * one node, whose hash (`tops`) and height (`topH`) are kept at the start.
 */
class PatriciaClusters {
  private readonly topH: Uint16Array;
  private readonly endOfStart: Int32Array;
  private readonly startOfEnd: Int32Array;

  constructor(
    private readonly engine: HashEngine,
    private readonly ids: readonly bigint[],
    private readonly tops: Uint8Array,
    private readonly out: SinkBuffer,
    private readonly engineChunk: number,
    private readonly gen: number,
  ) {
    const n = ids.length;
    this.topH = new Uint16Array(n);
    this.endOfStart = new Int32Array(n).map((_, i) => i);
    this.startOfEnd = new Int32Array(n).map((_, i) => i);
  }

  /**
   * Joins the clusters either side of each pair (i, i+1) of merge height `m` under a binary node
   * at m (each side raised to m − 1 first) and writes the nodes' records.
   */
  async merge(m: number, pairs: Int32Array): Promise<void> {
    const k = pairs.length;
    if (k === 0) return;
    const items: Raise[] = [];
    for (const i of pairs) {
      items.push({ start: this.startOfEnd[i]!, to: m - 1 });
      items.push({ start: i + 1, to: m - 1 });
    }
    const children = await this.raise(items);
    const ls = new Uint8Array(k * 32);
    const rs = new Uint8Array(k * 32);
    for (let j = 0; j < k; j++) {
      ls.set(children.subarray(2 * j * 32, (2 * j + 1) * 32), j * 32);
      rs.set(children.subarray((2 * j + 1) * 32, (2 * j + 2) * 32), j * 32);
    }
    const parents = await hashChunked(this.engine, ls, rs, this.engineChunk);
    const B = BINARY_RECORD_LENGTH;
    const records = new Uint8Array(k * B);
    for (let j = 0; j < k; j++) {
      const i = pairs[j]!;
      const left = this.startOfEnd[i]!;
      const rightEnd = this.endOfStart[i + 1]!;
      const hash = parents.subarray(j * 32, j * 32 + 32);
      writeBinaryRecord(records, j * B, ls, j * 32, this.gen, rs, j * 32, this.gen);
      await this.out.push({ hash, record: records.subarray(j * B, j * B + B) });
      this.tops.set(hash, left * 32);
      this.topH[left] = m;
      this.endOfStart[left] = rightEnd;
      this.startOfEnd[rightEnd] = left;
    }
  }

  /** The clusters' hashes raised as `items` ask, the edges this takes hashed and written. */
  async raise(items: readonly Raise[]): Promise<Uint8Array> {
    const res = new Uint8Array(items.length * 32);
    const need: number[] = [];
    for (let k = 0; k < items.length; k++) {
      const { start, to } = items[k]!;
      if (this.topH[start]! === to) res.set(this.topOf(start), k * 32);
      else need.push(k);
    }
    if (need.length === 0) return res;
    const bottoms = new Uint8Array(need.length * 32);
    const paths = new Uint8Array(need.length * 32);
    const lengths: number[] = [];
    need.forEach((k, j) => {
      const { start, to } = items[k]!;
      const from = this.topH[start]!;
      const length = to - from;
      bottoms.set(this.topOf(start), j * 32);
      writeBigint32(this.pathAbove(start, from, length), paths, j * 32);
      lengths.push(length);
    });
    const hashed = await this.hashEdges(bottoms, paths, lengths);
    need.forEach((k, j) => res.set(hashed.subarray(j * 32, j * 32 + 32), k * 32));
    return res;
  }

  /** Hashes edges (bottom, path, length) and writes their records; returns their hashes. */
  private async hashEdges(bottoms: Uint8Array, paths: Uint8Array, lengths: number[]): Promise<Uint8Array> {
    const raw = await hashChunked(this.engine, bottoms, paths, this.engineChunk);
    const res = new Uint8Array(raw.length);
    const E = EDGE_RECORD_LENGTH;
    const records = new Uint8Array(lengths.length * E);
    for (let k = 0; k < lengths.length; k++) {
      res.set(addSmall(raw.subarray(k * 32, k * 32 + 32), lengths[k]!), k * 32);
      writeEdgeRecord(records, k * E, bottoms, k * 32, this.gen, lengths[k]!, paths, k * 32);
      await this.out.push({
        hash: res.subarray(k * 32, k * 32 + 32),
        record: records.subarray(k * E, k * E + E),
      });
    }
    return res;
  }

  /**
   * Reports the nodes at the probe's height: merges below it are done, so each non-empty subtree
   * there is one cluster, its top raised to that height by an edge hashed here but not written.
   */
  async probe(probe: NodeProbe): Promise<void> {
    const h = probe.height;
    const starts: number[] = [];
    for (let i = 0; i < this.ids.length; i = this.endOfStart[i]! + 1) starts.push(i);
    const at = new Uint8Array(starts.length * 32);
    const bottoms: Uint8Array[] = [];
    const paths: Uint8Array[] = [];
    const lengths: number[] = [];
    const raised: number[] = [];
    starts.forEach((start, k) => {
      const from = this.topH[start]!;
      if (from === h) return void at.set(this.topOf(start), k * 32);
      const length = h - from;
      const path = new Uint8Array(32);
      writeBigint32(this.pathAbove(start, from, length), path, 0);
      bottoms.push(this.topOf(start));
      paths.push(path);
      lengths.push(length);
      raised.push(k);
    });
    if (raised.length > 0) {
      const xs = new Uint8Array(raised.length * 32);
      const ys = new Uint8Array(raised.length * 32);
      raised.forEach((_, j) => (xs.set(bottoms[j]!, j * 32), ys.set(paths[j]!, j * 32)));
      const hashed = await this.engine.hashMany(xs, ys);
      raised.forEach((k, j) => at.set(addSmall(hashed.subarray(j * 32, j * 32 + 32), lengths[j]!), k * 32));
    }
    starts.forEach((start, k) => probe.onNode(this.ids[start]! >> BigInt(h), at.slice(k * 32, k * 32 + 32)));
  }

  /** The hash of cluster `start`'s top node (a view into `tops`). */
  private topOf(start: number): Uint8Array {
    return this.tops.subarray(start * 32, start * 32 + 32);
  }

  /** The `length` bits of cluster `start`'s leaf id above height `from`: an edge's path from there. */
  private pathAbove(start: number, from: number, length: number): bigint {
    return (this.ids[start]! >> BigInt(from)) & ((1n << BigInt(length)) - 1n);
  }
}

/** Whether the 32 bytes at `at` of `buf` are `hash`. */
function equalAt(buf: Uint8Array, at: number, hash: Uint8Array): boolean {
  for (let i = 0; i < 32; i++) if (buf[at + i] !== hash[i]) return false;
  return true;
}
