import { DacdError } from "../../../errors.js";
import { addSmall, bitLength, copy32, ZERO32 } from "../../../util/bytes.js";
import type { HashEngine } from "../../hash/engine.js";
import {
  BINARY_RECORD_LENGTH,
  childGen,
  EDGE_RECORD_LENGTH,
  edgeLength,
  edgePath,
  firstHash,
  isBinaryRecord,
  isEdgeRecord,
  secondHash,
  writeBinaryRecord,
  writeEdgeRecord,
} from "../../../storage/records/node-record.js";
import type { NodeSource } from "../../../storage/records/node-source.js";
import type { NodeWrites, TreeUpdate } from "../../../storage/records/node-writes.js";
import { PackedIds } from "../format/packed-ids.js";

/**
 * Patricia-Merkle tree (docs/algorithms.md, Trees): empty subtrees are 0, a node with two non-empty
 * children is binary, a chain of single children collapses into an edge (bottom, path, length)
 * whose hash is H(bottom, path) + length.
 *
 * The update walks down only where leaves change. Every branch of the walk runs concurrently and
 * node lookups are gathered by a BatchedReader, so each level of the walk costs one store round
 * trip. Hashes are computed afterwards, once per new node, grouped so that each group is one engine
 * call — an edge is never hashed at the intermediate lengths it passes through while being built.
 */

// Every node but the empty one carries the gen of its record (node-record.ts): the batch that
// wrote it, or NEW for a node this update makes (its record is written under the update's gen).
type PNode =
  | { readonly t: "empty" }
  | { readonly t: "leaf"; readonly hash: Uint8Array; readonly gen: number }
  // A non-empty subtree of height > 0 known only by its hash (loaded when the walk enters it).
  | { readonly t: "stored"; readonly hash: Uint8Array; readonly gen: number }
  | {
      readonly t: "binary";
      readonly left: PNode;
      readonly right: PNode;
      hash: Uint8Array | undefined;
      readonly gen: number;
    }
  | Edge;

interface Edge {
  readonly t: "edge";
  readonly path: bigint;
  readonly length: number;
  readonly bottom: PNode;
  hash: Uint8Array | undefined;
  readonly gen: number;
}

const EMPTY: PNode = { t: "empty" };

/** The gen of a node this update makes. */
const NEW = -1;

// Binary nodes and edges are made only by these two, new ones with `hash: undefined` (set once
// hashed) and gen NEW, so that every node of a kind has the same properties in the same order: one
// object shape per kind keeps V8's property lookups on `t`, `hash` and the children fast across
// the walk.
function binaryNode(left: PNode, right: PNode, hash?: Uint8Array, gen = NEW): PNode {
  return { t: "binary", left, right, hash, gen };
}
function edgeNode(path: bigint, length: number, bottom: PNode, hash?: Uint8Array, gen = NEW): Edge {
  return { t: "edge", path, length, bottom, hash, gen };
}

/** What an edge leads to below its top k levels: the rest of the edge, or its bottom. */
function belowTop(edge: Edge, k: number): PNode {
  return k === edge.length
    ? edge.bottom
    : edgeNode(edge.path & MASK[edge.length - k]!, edge.length - k, edge.bottom);
}

/**
 * Positions (index among the nodes of a height) are tracked only where `remember` keeps nodes: at
 * depths below `remembered`, where an index is a small exact number. Deeper down it is NONE and
 * never computed (it would be a BigInt of up to 251 bits per node).
 */
const NONE = -1;

/** The index of the node `levels` below the node at `index` along `path`, at depth `depth`. */
function childIndex(
  index: number,
  depth: number,
  remembered: number,
  levels: number,
  path: number | bigint,
): number {
  return index !== NONE && depth < remembered ? index * 2 ** levels + Number(path) : NONE;
}

/** BigInt(k) and 2^k − 1 for every shift a 251-high tree needs: made once, not per step. */
const BIG = Array.from({ length: 257 }, (_, k) => BigInt(k));
const MASK = BIG.map((k) => (1n << k) - 1n);

function isZero(h: Uint8Array): boolean {
  for (let i = 0; i < h.length; i++) if (h[i] !== 0) return false;
  return true;
}

/** A node known by hash and gen at height h: a leaf at height 0, empty when the hash is 0. */
function fromHash(hash: Uint8Array, gen: number, height: number): PNode {
  if (isZero(hash)) return EMPTY;
  return height === 0 ? { t: "leaf", hash, gen } : { t: "stored", hash, gen };
}

/** Coalesces the lookups issued while the walk's promises settle into one getNodes call. */
class BatchedReader {
  private pending: {
    hash: Uint8Array;
    gen: number;
    resolve: (r: Uint8Array | undefined) => void;
    reject: (e: unknown) => void;
  }[] = [];
  private scheduled = false;

  constructor(private readonly source: NodeSource) {}

  get(hash: Uint8Array, gen: number): Promise<Uint8Array | undefined> {
    return new Promise((resolve, reject) => {
      this.pending.push({ hash, gen, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = [];
    this.scheduled = false;
    this.source
      .getNodes(
        batch.map((p) => p.hash),
        batch.map((p) => p.gen),
      )
      .then(
        (records) => batch.forEach((p, i) => p.resolve(records[i])),
        (err: unknown) => batch.forEach((p) => p.reject(err)),
      );
  }
}

/** A value now, or later when a node had to be read from the store. */
type Maybe<T> = T | Promise<T>;

/** Applies f to v, synchronously when v is already there. */
function then<T, U>(v: Maybe<T>, f: (t: T) => Maybe<U>): Maybe<U> {
  return v instanceof Promise ? v.then(f) : f(v);
}

/**
 * Applies `sorted` (the changed leaves and their hashes, in increasing id order) to the tree of
 * `height` whose root is `oldRoot` (its record written by batch `oldRootGen`); the new records,
 * added to `out`, are written under `batchGen`. The same walk runs in C (native/trees/patricia.c,
 * driven by patricia-native.ts); this one is the fallback where the addon does not load and the
 * reference the native walk is tested against. Callers go through update-tree.ts, which chooses.
 */
export async function referencePatricia(
  engine: HashEngine,
  nodes: NodeSource,
  height: number,
  remembered: number,
  oldRoot: Uint8Array,
  oldRootGen: number,
  batchGen: number,
  sorted: readonly Change[],
  treeName: string,
  out: NodeWrites,
): Promise<TreeUpdate> {
  const walker = new PatriciaWalk(nodes, height, remembered, treeName, sorted);
  const root = await walker.walk(
    fromHash(oldRoot, oldRootGen, height),
    height,
    remembered > 0 ? 0 : NONE,
    0,
    sorted.length,
  );
  const newNodes = await hashNewNodes(engine, root, height, remembered, out, nodes, treeName, batchGen);
  return { root: hashOf(root), rootGen: genOf(root, batchGen), newNodes };
}

export type Change = readonly [bigint, Uint8Array];

/**
 * One update's walk down the tree. Its steps are methods, not closures made per update: V8
 * would compile a new closure's optimized code again in every batch, and the walk would run
 * unoptimized until it had.
 */
class PatriciaWalk {
  private readonly reader: BatchedReader;
  /**
   * The changes' ids again, packed: the walk's every step reads their bits here, where BigInt
   * shifts and masks of 251-bit ids made several heap objects per step (W-spot's order tree).
   */
  private readonly ids: PackedIds;

  constructor(
    private readonly nodes: NodeSource,
    private readonly height: number,
    /** Levels below the root whose positions are tracked (for `remember`). */
    private readonly remembered: number,
    private readonly treeName: string,
    /** The changes, sorted by leaf id. */
    private readonly sorted: readonly Change[],
  ) {
    this.reader = new BatchedReader(nodes);
    const ids = new Array<bigint>(sorted.length);
    for (let i = 0; i < sorted.length; i++) ids[i] = sorted[i]![0];
    this.ids = new PackedIds(ids);
  }

  private indexBelow(index: number, h: number, levels: number, path: number | bigint): number {
    return childIndex(index, this.height - (h - levels), this.remembered, levels, path);
  }

  /** The index at height h of the path node above change `i` (NONE below the remembered levels). */
  private indexOf(i: number, h: number): number {
    return this.height - h < this.remembered ? this.ids.bits(i, h, this.height - h) : NONE;
  }

  /**
   * The node behind a hash: from the cache of the top levels at once, or from the store with the
   * other lookups of this round. The walk stays synchronous (no promise per step) while the cache
   * answers, which is most of the way down.
   */
  private load(node: { hash: Uint8Array; gen: number }, h: number, index: number): Maybe<PNode> {
    const cached = this.nodes.getCached?.(node.hash, node.gen);
    if (cached) return this.decode(node.hash, node.gen, cached, h, index);
    return this.reader
      .get(node.hash, node.gen)
      .then((rec) => this.decode(node.hash, node.gen, rec, h, index));
  }

  private decode(
    hash: Uint8Array,
    gen: number,
    rec: Uint8Array | undefined,
    h: number,
    index: number,
  ): PNode {
    if (rec === undefined) throw this.corrupt(hash, h, "missing");
    const binary = isBinaryRecord(rec);
    if ((binary || isEdgeRecord(rec)) && index !== NONE)
      this.nodes.remember!(this.treeName, this.height - h, index, hash, gen, rec);
    if (binary)
      return binaryNode(
        fromHash(firstHash(rec), childGen(rec, 0), h - 1),
        fromHash(secondHash(rec), childGen(rec, 1), h - 1),
        hash,
        gen,
      );
    if (isEdgeRecord(rec)) {
      const length = edgeLength(rec);
      if (length < 1 || length > h) throw this.corrupt(hash, h, `edge length ${length}`);
      return edgeNode(
        edgePath(rec),
        length,
        fromHash(firstHash(rec), childGen(rec, 0), h - length),
        hash,
        gen,
      );
    }
    throw this.corrupt(hash, h, `record of ${rec.length} bytes`);
  }

  private corrupt(hash: Uint8Array, h: number, what: string): DacdError {
    return new DacdError(
      "STORE",
      `${this.treeName} tree: node ${Buffer.from(hash).toString("hex")} at height ${h}: ${what}`,
    );
  }

  /**
   * A subtree at height h whose only non-empty descendant is `child`, `length` levels down along
   * `path`: nothing (child empty), an edge, or — when the child is itself an edge — a longer edge.
   */
  private wrap(path: bigint, length: number, child: PNode, h: number, index: number): Maybe<PNode> {
    if (child.t === "empty") return EMPTY;
    // An untouched stored child may itself be an edge, which must be extended rather than wrapped.
    if (child.t === "stored" && h - length > 0) {
      return then(this.load(child, h - length, this.indexBelow(index, h, length, path)), (loaded) =>
        extend(path, length, loaded.t === "edge" ? loaded : child),
      );
    }
    return extend(path, length, child);
  }

  /** A parent at height h from its children. */
  private combine(left: PNode, right: PNode, h: number, index: number): Maybe<PNode> {
    if (left.t !== "empty" && right.t !== "empty") return binaryNode(left, right);
    return left.t === "empty" ? this.wrap(1n, 1, right, h, index) : this.wrap(0n, 1, left, h, index);
  }

  /**
   * The subtree at height h with changes sorted[lo..hi) applied. Where every change follows the
   * same path for k levels (through an edge or an empty subtree) the walk jumps those k levels at
   * once instead of descending one level at a time: a 251-high tree costs about log2(changes)
   * steps per change, not 251.
   */
  walk(node: PNode, h: number, index: number, lo: number, hi: number): Maybe<PNode> {
    if (lo === hi) return node;
    if (h === 0) return fromHash(this.sorted[hi - 1]![1], NEW, 0);
    if (node.t === "stored")
      return then(this.load(node, h, index), (n) => this.walkLoaded(n, h, index, lo, hi));
    return this.walkLoaded(node, h, index, lo, hi);
  }

  private walkLoaded(node: PNode, h: number, index: number, lo: number, hi: number): Maybe<PNode> {
    const sorted = this.sorted;
    const first = sorted[lo]![0];
    // Levels all changes agree on, below height h.
    let shared = h - this.ids.meetHeightOf(lo, hi - 1);
    if (node.t === "edge") {
      const top = (first >> BIG[h - node.length]!) & MASK[node.length]!;
      shared = Math.min(shared, node.length - bitLength(top ^ node.path));
      if (shared > 0) {
        const rest = belowTop(node, shared);
        return then(this.walk(rest, h - shared, this.indexOf(lo, h - shared), lo, hi), (below) =>
          this.wrap(node.path >> BIG[node.length - shared]!, shared, below, h, index),
        );
      }
    } else if (node.t === "empty" && shared > 0) {
      return then(this.walk(EMPTY, h - shared, this.indexOf(lo, h - shared), lo, hi), (below) =>
        this.wrap((first >> BIG[h - shared]!) & MASK[shared]!, shared, below, h, index),
      );
    }
    const [l, r] = expand(node);
    const split = this.firstWithBit(lo, hi, h - 1);
    const nl = this.walk(l, h - 1, this.indexBelow(index, h, 1, 0), lo, split);
    const nr = this.walk(r, h - 1, this.indexBelow(index, h, 1, 1), split, hi);
    // Most path nodes have changes on one side only, whose walk alone may wait for the store: one
    // `then` there, rather than Promise.all's array, promise and two element callbacks per node:
    // an order tree's update has tens of thousands of such nodes, few with a wait on both sides.
    if (nl instanceof Promise) {
      if (!(nr instanceof Promise)) return nl.then((a) => this.combine(a, nr, h, index));
      return Promise.all([nl, nr]).then(([a, b]) => this.combine(a, b, h, index));
    }
    if (nr instanceof Promise) return nr.then((b) => this.combine(nl, b, h, index));
    return this.combine(nl, nr, h, index);
  }

  /** The first index in [lo, hi) whose id has bit `bit` set (the ids there agree above it). */
  private firstWithBit(lo: number, hi: number, bit: number): number {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.ids.bit(mid, bit) === 1) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}

/** The two children (height h-1) of a loaded non-empty node at height h. */
function expand(node: PNode): [PNode, PNode] {
  switch (node.t) {
    case "empty":
      return [EMPTY, EMPTY];
    case "binary":
      return [node.left, node.right];
    case "edge": {
      const bit = (node.path >> BIG[node.length - 1]!) & 1n;
      const rest = belowTop(node, 1);
      return bit === 0n ? [rest, EMPTY] : [EMPTY, rest];
    }
    default:
      throw new Error(`unexpected ${node.t} node above height 0`);
  }
}

/** `child` below an edge of `length` levels along `path`; a child edge makes the edge longer. */
function extend(path: bigint, length: number, child: PNode): PNode {
  return child.t === "edge"
    ? edgeNode((path << BIG[child.length]!) | child.path, length + child.length, child.bottom)
    : edgeNode(path, length, child);
}

/** The gen a parent's record names for `node`: NEW means the update's own. */
function genOf(node: PNode, batchGen: number): number {
  if (node.t === "empty") return 0;
  return node.gen === NEW ? batchGen : node.gen;
}

function hashOf(node: PNode): Uint8Array {
  switch (node.t) {
    case "empty":
      return ZERO32;
    case "leaf":
    case "stored":
      return node.hash;
    default:
      if (!node.hash) throw new Error("node hashed out of order");
      return node.hash;
  }
}

/**
 * Hashes every node the walk created, deepest first, one engine call per rank, and adds their
 * records to `writes`; tells `nodes.remember` about each new node less than `remembered` levels
 * below the root, with its index in its level.
 */
async function hashNewNodes(
  engine: HashEngine,
  root: PNode,
  height: number,
  remembered: number,
  writes: NodeWrites,
  // The store and tree name rather than a callback: a closure made per update was compiled
  // again in every batch (PatriciaWalk).
  nodes: NodeSource,
  treeName: string,
  batchGen: number,
): Promise<NodeWrites> {
  const byRank: Ranked[][] = [];
  rankNewNodes(byRank, height, remembered, root, height, remembered > 0 ? 0 : NONE);
  for (const group of byRank) {
    if (!group) continue;
    // A rank's records side by side in one buffer (binary: left ‖ right ‖ gens; edge: bottom ‖
    // path ‖ length ‖ gen), and its pairs packed for one engine call.
    const at = new Int32Array(group.length + 1);
    for (let i = 0; i < group.length; i++)
      at[i + 1] = at[i]! + (group[i]!.node.t === "binary" ? BINARY_RECORD_LENGTH : EDGE_RECORD_LENGTH);
    const records = new Uint8Array(at[group.length]!);
    const xs = new Uint8Array(group.length * 32);
    const ys = new Uint8Array(group.length * 32);
    for (let i = 0; i < group.length; i++) {
      const n = group[i]!.node;
      const o = at[i]!;
      if (n.t === "binary")
        writeBinaryRecord(
          records,
          o,
          hashOf(n.left),
          0,
          genOf(n.left, batchGen),
          hashOf(n.right),
          0,
          genOf(n.right, batchGen),
        );
      else writeEdgeRecord(records, o, hashOf(n.bottom), 0, genOf(n.bottom, batchGen), n.length, n.path);
      copy32(xs, i * 32, records, o);
      copy32(ys, i * 32, records, o + 32);
    }
    const hashes = await engine.hashMany(xs, ys);
    for (let i = 0; i < group.length; i++) {
      const { node: n, h, index } = group[i]!;
      const hash = hashes.subarray(i * 32, i * 32 + 32);
      n.hash = n.t === "binary" ? hash : addSmall(hash, n.length);
      writes.add(n.hash, 0, records, at[i]!, at[i + 1]! - at[i]!);
      if (index !== NONE)
        nodes.remember!(treeName, height - h, index, n.hash, batchGen, records.subarray(at[i]!, at[i + 1]!));
    }
  }
  return writes;
}

/** A node the walk created, with where it sits (height, and index where remembered). */
interface Ranked {
  readonly node: Edge | Extract<PNode, { t: "binary" }>;
  readonly h: number;
  readonly index: number;
}

/**
 * Files each new node under its rank (1 + the highest rank below it; untouched nodes are 0) in
 * `byRank`, from the root down; returns the rank of `node`. A module function rather than a
 * closure per update, so that its optimized code lasts from one batch to the next (PatriciaWalk).
 */
function rankNewNodes(
  byRank: Ranked[][],
  height: number,
  remembered: number,
  node: PNode,
  h: number,
  index: number,
): number {
  if (node.t === "empty" || node.t === "leaf" || node.t === "stored" || node.hash) return 0;
  const r =
    1 +
    (node.t === "binary"
      ? Math.max(
          rankNewNodes(
            byRank,
            height,
            remembered,
            node.left,
            h - 1,
            childIndex(index, height - h + 1, remembered, 1, 0),
          ),
          rankNewNodes(
            byRank,
            height,
            remembered,
            node.right,
            h - 1,
            childIndex(index, height - h + 1, remembered, 1, 1),
          ),
        )
      : rankNewNodes(
          byRank,
          height,
          remembered,
          node.bottom,
          h - node.length,
          childIndex(index, height - h + node.length, remembered, node.length, node.path),
        ));
  (byRank[r] ??= []).push({ node, h, index });
  return r;
}
