import { DacdError } from "../errors.js";
import { bigintToBytes32, bytesEqual, ZERO32 } from "../util/bytes.js";
import type { HashEngine } from "./hash/engine.js";
import type { NodeWrite } from "./node-source.js";

/**
 * Whole trees built bottom-up from a complete, sorted leaf set (dump loading, benchmarks), with the
 * same node records the incremental updates write (merkle.ts, patricia.ts), so a store built here
 * continues under incremental updates exactly like one grown batch by batch.
 *
 * Hashing is done a level (Merkle) or a merge height (Patricia) at a time in large engine calls;
 * node records are handed to `sink` in chunks as soon as they are hashed, so the caller can write
 * them to LevelDB in bounded batches. Memory is O(leaves): ids plus one packed buffer of hashes.
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
  /** Pairs per engine call (default 65536). */
  readonly engineChunk?: number;
}

class SinkBuffer {
  private buf: NodeWrite[] = [];
  constructor(
    private readonly sink: NodeSink,
    private readonly size: number,
  ) {}
  async push(w: NodeWrite): Promise<void> {
    this.buf.push(w);
    if (this.buf.length >= this.size) await this.flush();
  }
  async flush(): Promise<void> {
    if (this.buf.length === 0) return;
    const out = this.buf;
    this.buf = [];
    await this.sink(out);
  }
}

async function hashChunked(
  engine: HashEngine,
  xs: Uint8Array,
  ys: Uint8Array,
  chunk: number,
): Promise<Uint8Array> {
  const n = xs.length / 32;
  if (n <= chunk) return engine.hashMany(xs, ys);
  const out = new Uint8Array(xs.length);
  for (let i = 0; i < n; i += chunk) {
    const end = Math.min(n, i + chunk);
    out.set(await engine.hashMany(xs.subarray(i * 32, end * 32), ys.subarray(i * 32, end * 32)), i * 32);
  }
  return out;
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
 * Builds a fixed-height Merkle tree. `empty` is E[0..height]; leaves whose hash is E[0] are empty
 * and skipped, and nodes whose hash is E[k] get no record, as in updateMerkle. Returns the root.
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
  const out = new SinkBuffer(sink, opts.sinkChunk ?? 16384);
  const engineChunk = opts.engineChunk ?? 65536;

  // Drop empty leaves.
  let ids: bigint[] = [];
  let hashes: Uint8Array = new Uint8Array(leaves.hashes.length);
  for (let i = 0; i < leaves.ids.length; i++) {
    const h = leaves.hashes.subarray(i * 32, i * 32 + 32);
    if (bytesEqual(h, empty[0]!)) continue;
    hashes.set(h, ids.length * 32);
    ids.push(leaves.ids[i]!);
  }
  hashes = hashes.subarray(0, ids.length * 32);
  if (ids.length === 0) return empty[height]!;

  for (let h = 0; h < height; h++) {
    const n = ids.length;
    const parents: bigint[] = [];
    const lefts = new Uint8Array(n * 32);
    const rights = new Uint8Array(n * 32);
    const e = empty[h]!;
    for (let i = 0; i < n;) {
      const id = ids[i]!;
      const k = parents.length * 32;
      if ((id & 1n) === 0n) {
        lefts.set(hashes.subarray(i * 32, i * 32 + 32), k);
        if (i + 1 < n && ids[i + 1] === id + 1n) {
          rights.set(hashes.subarray((i + 1) * 32, (i + 2) * 32), k);
          i += 2;
        } else {
          rights.set(e, k);
          i += 1;
        }
      } else {
        lefts.set(e, k);
        rights.set(hashes.subarray(i * 32, i * 32 + 32), k);
        i += 1;
      }
      parents.push(id >> 1n);
    }
    const m = parents.length;
    const ls = lefts.subarray(0, m * 32);
    const rs = rights.subarray(0, m * 32);
    const up = await hashChunked(engine, ls, rs, engineChunk);
    const eUp = empty[h + 1]!;
    for (let i = 0; i < m; i++) {
      const hash = up.subarray(i * 32, i * 32 + 32);
      if (bytesEqual(hash, eUp)) continue;
      const record = new Uint8Array(64);
      record.set(ls.subarray(i * 32, i * 32 + 32), 0);
      record.set(rs.subarray(i * 32, i * 32 + 32), 32);
      await out.push({ hash: hash.slice(), record });
    }
    ids = parents;
    hashes = up;
  }
  await out.flush();
  return hashes.slice(0, 32);
}

function bitLength(v: bigint): number {
  return v === 0n ? 0 : v.toString(2).length;
}

/** h + small, as 32-byte big-endian values (an edge's hash is H(bottom, path) + length). */
function addSmall(h: Uint8Array, small: number): Uint8Array {
  const out = h.slice();
  let carry = small;
  for (let i = 31; i >= 0 && carry > 0; i--) {
    const s = out[i]! + carry;
    out[i] = s & 0xff;
    carry = s >> 8;
  }
  return out;
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
  const out = new SinkBuffer(sink, opts.sinkChunk ?? 16384);
  const engineChunk = opts.engineChunk ?? 65536;

  const ids: bigint[] = [];
  const tops = new Uint8Array(leaves.hashes.length);
  for (let i = 0; i < leaves.ids.length; i++) {
    const h = leaves.hashes.subarray(i * 32, i * 32 + 32);
    if (bytesEqual(h, ZERO32)) continue;
    tops.set(h, ids.length * 32);
    ids.push(leaves.ids[i]!);
  }
  const n = ids.length;
  if (n === 0) return ZERO32.slice();

  // Cluster bookkeeping: clusters are contiguous ranges [start, end]; their top node is kept at start.
  const topH = new Uint16Array(n);
  const endOfStart = new Int32Array(n).map((_, i) => i);
  const startOfEnd = new Int32Array(n).map((_, i) => i);

  // Pairs (i, i+1) grouped by merge height.
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

  /** Hashes edges (bottom, path, length) and writes their records; returns their hashes. */
  const hashEdges = async (
    bottoms: Uint8Array,
    paths: Uint8Array,
    lengths: number[],
  ): Promise<Uint8Array> => {
    const raw = await hashChunked(engine, bottoms, paths, engineChunk);
    const res = new Uint8Array(raw.length);
    for (let k = 0; k < lengths.length; k++) {
      const hash = addSmall(raw.subarray(k * 32, k * 32 + 32), lengths[k]!);
      res.set(hash, k * 32);
      const record = new Uint8Array(65);
      record.set(bottoms.subarray(k * 32, k * 32 + 32), 0);
      record.set(paths.subarray(k * 32, k * 32 + 32), 32);
      record[64] = lengths[k]!;
      await out.push({ hash, record });
    }
    return res;
  };

  /** The hash of cluster `start`'s subtree raised to height `to` (an edge when its top is lower). */
  type Raise = { start: number; to: number };
  const raise = async (items: Raise[]): Promise<Uint8Array> => {
    const res = new Uint8Array(items.length * 32);
    const need: number[] = [];
    for (let k = 0; k < items.length; k++) {
      const { start, to } = items[k]!;
      if (topH[start]! === to) res.set(tops.subarray(start * 32, start * 32 + 32), k * 32);
      else need.push(k);
    }
    if (need.length === 0) return res;
    const bottoms = new Uint8Array(need.length * 32);
    const paths = new Uint8Array(need.length * 32);
    const lengths: number[] = [];
    need.forEach((k, j) => {
      const { start, to } = items[k]!;
      const from = topH[start]!;
      const length = to - from;
      bottoms.set(tops.subarray(start * 32, start * 32 + 32), j * 32);
      paths.set(bigintToBytes32((ids[start]! >> BigInt(from)) & ((1n << BigInt(length)) - 1n)), j * 32);
      lengths.push(length);
    });
    const hashed = await hashEdges(bottoms, paths, lengths);
    need.forEach((k, j) => res.set(hashed.subarray(j * 32, j * 32 + 32), k * 32));
    return res;
  };

  for (let m = 1; m <= height; m++) {
    const from = counts[m]!;
    const to = counts[m + 1]!;
    if (from === to) continue;
    const pairs = order.subarray(from, to);
    const items: Raise[] = [];
    for (const i of pairs) {
      items.push({ start: startOfEnd[i]!, to: m - 1 });
      items.push({ start: i + 1, to: m - 1 });
    }
    const children = await raise(items);
    const k = pairs.length;
    const ls = new Uint8Array(k * 32);
    const rs = new Uint8Array(k * 32);
    for (let j = 0; j < k; j++) {
      ls.set(children.subarray(2 * j * 32, (2 * j + 1) * 32), j * 32);
      rs.set(children.subarray((2 * j + 1) * 32, (2 * j + 2) * 32), j * 32);
    }
    const parents = await hashChunked(engine, ls, rs, engineChunk);
    for (let j = 0; j < k; j++) {
      const i = pairs[j]!;
      const left = startOfEnd[i]!;
      const rightEnd = endOfStart[i + 1]!;
      const hash = parents.slice(j * 32, j * 32 + 32);
      const record = new Uint8Array(64);
      record.set(ls.subarray(j * 32, j * 32 + 32), 0);
      record.set(rs.subarray(j * 32, j * 32 + 32), 32);
      await out.push({ hash, record });
      tops.set(hash, left * 32);
      topH[left] = m;
      endOfStart[left] = rightEnd;
      startOfEnd[rightEnd] = left;
    }
  }
  const root = await raise([{ start: 0, to: height }]);
  await out.flush();
  return root;
}
