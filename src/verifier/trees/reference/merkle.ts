import { DacdError } from "../../../errors.js";
import { bytesEqual, copy32, copyLowBits } from "../../../util/bytes.js";
import { climbChains, type ChainClimb, type HashEngine } from "../../hash/engine.js";
import {
  ancestorsAt,
  CHECKPOINT_STEP,
  checkpointCount,
  checkpointOffset,
  edgePathBit,
  isMerkleEdge,
  merkleEdgeLength,
  newMerkleEdge,
  edgeLeafGen,
  newMerkleEdges,
  packedEmpties,
  setEdgeLeafGen,
  setEdgePath,
} from "../format/merkle-edge.js";
import {
  childGen,
  EDGE_HEAD_LENGTH,
  isBinaryRecord,
  BINARY_RECORD_LENGTH,
  writeGen,
} from "../../../storage/records/node-record.js";
import { ROOT_TOP, type BranchTop, type NodeSource } from "../../../storage/records/node-source.js";
import type { NodeWrites, TreeUpdate } from "../../../storage/records/node-writes.js";
import { PackedIds } from "../format/packed-ids.js";

/** What a path node was before the update, as read from the store (or implied by an edge above). */
const enum Old {
  Empty,
  Binary,
  /** Inside (or at the top of) a single-leaf subtree: `rec` is that subtree's edge record. */
  Edge,
}

/** What a node is after the update, as its parent needs to know it. */
const enum New {
  Empty,
  /** Exactly one leaf below: part of that leaf's chain, written as an edge record where it ends. */
  Single,
  /** Already stored, or a binary node written now. */
  Stored,
}

interface OldLevel {
  kind: Uint8Array;
  /** Binary: the 64-byte record; Edge: the edge record (whose path leads through this node). */
  rec: (Uint8Array | undefined)[];
  /**
   * Edge nodes whose one path child leaves the old leaf's path (a new leaf splits the edge here):
   * the old leaf's ancestor one level down, the untouched child, by the node's index in its level.
   */
  split: Map<number, Uint8Array>;
}

/** The splits readOldPaths found: edge `recs[i]`'s ancestor at `heights[i]` goes to `at[i]`. */
interface Splits {
  readonly recs: Uint8Array[];
  readonly heights: number[];
  readonly at: [OldLevel, number][];
}

/**
 * The changed paths: the sorted leaf ids, packed, and per height the nodes above changed leaves,
 * each given by its first leaf (its id is that leaf's id >> height). Nodes of one height are in id
 * order, and a node's first leaf also starts a node at every height below it.
 */
interface Paths {
  readonly ids: PackedIds;
  /** starts[h][j]: the first leaf of the j-th path node at height h (starts[0]: every leaf). */
  readonly starts: Int32Array[];
  readonly height: number;
  /** Levels below the root that `remember` keeps. */
  readonly remembered: number;
  /** The gen the update's new records are written under. */
  readonly batchGen: number;
  /** Where the remembered levels start (NodeSource.rememberedTop). */
  readonly top: BranchTop;
}

function changedPaths(
  sortedIds: readonly bigint[],
  height: number,
  remembered: number,
  batchGen: number,
  top: BranchTop,
): Paths {
  const ids = new PackedIds(sortedIds);
  const n = sortedIds.length;
  // Leaf i starts a node at every height below the one where it meets leaf i − 1.
  const meet = new Uint16Array(n);
  for (let i = 1; i < n; i++) {
    meet[i] = ids.meetHeight(i);
    if (meet[i]! > height) throw new RangeError(`a leaf id does not fit a tree of height ${height}`);
  }
  // Nodes at height h: leaf 0 and every leaf that meets its predecessor above h.
  const meetingAbove = new Int32Array(height + 2);
  for (let i = 1; i < n; i++) meetingAbove[meet[i]! - 1]!++;
  for (let h = height - 1; h >= 0; h--) meetingAbove[h]! += meetingAbove[h + 1]!;
  const starts = [Int32Array.from({ length: n }, (_, i) => i)];
  for (let h = 1; h <= height; h++) {
    const below = starts[h - 1]!;
    const level = new Int32Array(1 + meetingAbove[h]!);
    for (let c = 1, j = 1; c < below.length; c++) if (meet[below[c]!]! > h) level[j++] = below[c]!;
    starts.push(level);
  }
  return { ids, starts, height, remembered, batchGen, top };
}

/** The depth below the top (Paths.top) of a node at height h; negative above it. */
function depthAt(paths: Paths, h: number): number {
  return paths.height - h - paths.top.depth;
}

/**
 * The index of the path node at height h whose first leaf is `leaf` among the nodes of its depth
 * below the top; with `side` ≥ 0, of that node's child on `side` at height h − 1 instead. −1 above
 * the top, outside it or below the remembered levels.
 */
function indexAt(paths: Paths, leaf: number, h: number, side = -1): number {
  const at = side < 0 ? h : h - 1;
  const depth = depthAt(paths, at);
  if (depth < 0 || depth >= paths.remembered) return -1;
  if (paths.top.depth === 0)
    return side < 0 ? paths.ids.bits(leaf, h, depth) : paths.ids.bits(leaf, h, depth - 1) * 2 + side;
  const above = paths.ids.at(leaf) >> BigInt(h);
  const index = side < 0 ? above : (above << 1n) | BigInt(side);
  if (index >> BigInt(depth) !== paths.top.index) return -1;
  return Number(index & ((1n << BigInt(depth)) - 1n));
}

/**
 * Replaces leaves of a fixed-height Merkle tree and returns the new root and the records it
 * created. It reads only the nodes on the changed paths — one batched lookup per level, top-down,
 * and none below an edge record (merkle-edge.ts), which already describes its whole subtree — and
 * then hashes bottom-up (buildNewPaths): every lone leaf's chain in one engine call, then the binary
 * nodes a level at a time, each level's pairs in one call.
 * Subtrees whose hash is E[k] are known to be empty and are never looked up, so the empty tree
 * needs no stored nodes at all.
 *
 * Records written: a node whose subtree holds exactly one leaf is part of that leaf's chain, and
 * the chain is written as one edge record where it ends (below a binary node, or at the root);
 * every other non-empty node gets a binary record (left ‖ right). Deleting a leaf can leave a
 * binary node above a lone leaf when the other side is a stored node (its leaf count is not read);
 * readers accept both forms, since both describe the same subtree.
 *
 * Every level is an array of path nodes in id order, given by their first leaves (Paths), with
 * typed arrays aligned to it: no BigInt, map or object per node. A parent's one or two path
 * children are the next nodes of the level below.
 *
 * `sortedIds` are the changed leaves' ids in increasing order and `leafHashes` gives their hashes
 * in that order, awaited only once the old paths are read. The same walk runs in C
 * (native/trees/merkle.c, driven by merkle-native.ts); this one is the fallback where the addon
 * does not load and the reference the native walk is tested against. Callers go through
 * update-tree.ts, which chooses.
 */
export async function referenceMerkle(
  engine: HashEngine,
  nodes: NodeSource,
  empty: readonly Uint8Array[],
  remembered: number,
  oldRoot: Uint8Array,
  oldRootGen: number,
  batchGen: number,
  sortedIds: readonly bigint[],
  leafHashes: () => Promise<Uint8Array>,
  treeName: string,
  out: NodeWrites,
): Promise<TreeUpdate> {
  const height = empty.length - 1;
  const paths = changedPaths(
    sortedIds,
    height,
    remembered,
    batchGen,
    nodes.rememberedTop?.(treeName) ?? ROOT_TOP,
  );

  const { old, splits } = await readOldPaths(nodes, empty, oldRoot, oldRootGen, paths, treeName);
  await climbToSplits(engine, empty, splits);

  return buildNewPaths(engine, nodes, empty, await leafHashes(), paths, old, treeName, out);
}

/**
 * A lone leaf's chain that starts outside the changed paths: at an untouched leaf beside a changed
 * one, or at an old edge's ancestor where a new leaf splits the edge.
 */
interface Derived {
  /** The old edge record holding the chain below, or undefined for a bare leaf. */
  readonly rec: Uint8Array | undefined;
  /** The gen of the leaf's record (from the old edge, or from the old parent's record). */
  readonly leafGen: number;
  /** Where the leaf's hash is (in `rec`, or in its old parent's record). */
  readonly buf: Uint8Array;
  readonly off: number;
  /** The leaf's id, 32 bytes at pathOff (a new edge keeps its low bits as the path). */
  readonly pathBuf: Uint8Array;
  readonly pathOff: number;
}

/** One child as its parent sees it: a reused scratch object, so the hot loop allocates nothing. */
interface ChildSlot {
  kind: New;
  /** The child's hash: 32 bytes of `buf` from `off`. */
  buf: Uint8Array;
  off: number;
  /** The gen of the child's record: the batch's for a path child, the old record's for a sibling. */
  gen: number;
  /** A path child's index in its level; −1 for a child off the paths. */
  path: number;
  derived: Derived | undefined;
}

/**
 * Bottom-up: new hashes of every path node, in three passes.
 *
 * 1. Structure, without hashing: each path node's kind (empty, one lone leaf's chain, or stored),
 *    and which children every binary node pairs. A lone leaf's chain starts at a leaf (or at an old
 *    edge's ancestor, `Derived`) and climbs while its sibling is empty; the pass notes where each
 *    chain starts and ends. Empty nodes get E[h] at once.
 * 2. All of the tree's chains climb to their ends in one engine call (climbChains), which also
 *    gives the checkpoints their edge records keep. A chain's top is the path node where it ends.
 * 3. The binary nodes, a level at a time (each level's pairs in one engine call): their children
 *    are binary nodes of the level below, chain tops, empty nodes or untouched siblings, all known.
 *
 * A hash is referred to as (buffer, offset) and copied 32 bytes at a time. W-perp's 20,000 new
 * positions and orders climb ~45 levels each: the chains are most of a batch's hashes, and one call
 * for them all spares ~45 rounds of engine calls and the JavaScript around them.
 */
async function buildNewPaths(
  engine: HashEngine,
  nodes: NodeSource,
  empty: readonly Uint8Array[],
  leafHashes: Uint8Array,
  paths: Paths,
  old: readonly OldLevel[],
  treeName: string,
  newNodes: NodeWrites,
): Promise<TreeUpdate> {
  const { ids, starts, height } = paths;
  const b = new PathLevels(nodes, empty, leafHashes, paths, old, treeName, newNodes);
  const { hashesAt, kindAt, chainAt, binaryAt, chains } = b;

  // Pass 1: structure.
  const L: ChildSlot = { kind: New.Empty, buf: empty[0]!, off: 0, gen: 0, path: -1, derived: undefined };
  const R: ChildSlot = { ...L };
  for (let h = 1; h <= height; h++) {
    b.enter(h);
    const parents = starts[h]!;
    const children = starts[h - 1]!;
    const belowChain = chainAt[h - 1]!;
    const n = parents.length;
    const hashes = new Uint8Array(n * 32);
    const kind = new Uint8Array(n);
    const chain = new Int32Array(n).fill(-1);
    const binary = new BinaryPairs(n);
    const eHere = empty[h]!;
    for (let j = 0, c = 0; j < n; j++) {
      // The parent's path children: child c (which starts at the same leaf) and maybe child c + 1.
      const end = j + 1 < n ? parents[j + 1]! : ids.length;
      if (c + 1 < children.length && children[c + 1]! < end) {
        b.pathChild(L, c);
        b.pathChild(R, c + 1);
        c += 2;
      } else if (ids.bit(children[c]!, h - 1) === 0) {
        b.pathChild(L, c++);
        b.sibling(R, j, 1);
      } else {
        b.sibling(L, j, 0);
        b.pathChild(R, c++);
      }
      const only = L.kind === New.Empty ? R : R.kind === New.Empty ? L : undefined;
      if (only === undefined || only.kind === New.Stored) {
        kind[j] = New.Stored;
        binary.add(j, L.buf, L.off, L.gen, R.buf, R.off, R.gen);
        b.endChain(L, j, 0);
        b.endChain(R, j, 1);
      } else if (only.kind === New.Single) {
        // One lone leaf's chain going on up: it starts here from a leaf or an old edge's ancestor,
        // or it goes on from the level below.
        kind[j] = New.Single;
        const d = only.derived;
        if (d) chain[j] = chains.start(only.buf, only.off, h - 1, d.pathBuf, d.pathOff, -1, d);
        else if (h - 1 === 0)
          chain[j] = chains.start(leafHashes, only.path * 32, 0, ids.bytes, only.path * 32, only.path);
        // A chain's edge record names its leaf's record: a changed leaf's is the batch's.
        else chain[j] = belowChain[only.path]!;
      } else {
        kind[j] = New.Empty;
        copy32(hashes, j * 32, eHere, 0);
      }
    }
    hashesAt.push(hashes);
    kindAt.push(kind);
    chainAt.push(chain);
    binaryAt.push(binary);
  }
  if (kindAt[height]![0] === New.Single) chains.end(chainAt[height]![0]!, height, 0);

  // Pass 2: every chain climbs to its top in one engine call; each becomes an edge record there.
  if (chains.count > 0) {
    const job = chains.job(empty);
    const { tops, marks } = await climbChains(engine, job);
    const recs = newMerkleEdges(chains.top);
    for (let i = 0; i < chains.count; i++) {
      const top = chains.top[i]!;
      const at = chains.topIndex[i]! * 32;
      const hashes = hashesAt[top]!;
      copy32(hashes, at, tops, i * 32);
      const rec = recs[i]!;
      const d = chains.derived[i];
      const from = job.from[i]!;
      if (d) fillDerived(rec, d, from + 1);
      else {
        copy32(rec, 0, leafHashes, chains.leaf[i]! * 32);
        setEdgePath(rec, ids.bytes, chains.leaf[i]! * 32);
        setEdgeLeafGen(rec, paths.batchGen);
      }
      for (let k = from + CHECKPOINT_STEP - (from % CHECKPOINT_STEP); k < top; k += CHECKPOINT_STEP)
        copy32(rec, checkpointOffset(k), marks, (i * job.slots + k / CHECKPOINT_STEP - 1) * 32);
      b.write(top, starts[top]![chains.topIndex[i]!]!, -1, hashes, at, rec);
    }
  }

  // Pass 3: the binary nodes, bottom-up, a level's pairs per engine call.
  for (let h = 1; h <= height; h++) {
    const binary = binaryAt[h]!;
    if (binary.count === 0) continue;
    const { xs, ys } = binary.inputs();
    const up = await engine.hashMany(xs, ys);
    const hashes = hashesAt[h]!;
    const parents = starts[h]!;
    const records = binary.records(xs, ys);
    for (let k = 0; k < binary.count; k++) {
      const j = binary.nodes[k]!;
      copy32(hashes, j * 32, up, k * 32);
      b.write(h, parents[j]!, -1, hashes, j * 32, records, k * BINARY_RECORD_LENGTH, BINARY_RECORD_LENGTH);
    }
  }
  // Every path node is written anew, the root too, unless the tree is now empty.
  const rootGen = kindAt[height]![0] === New.Empty ? 0 : paths.batchGen;
  return { root: hashesAt[height]!.subarray(0, 32), rootGen, newNodes };
}

/** Fills an edge record's leaf hash and gen, path and checkpoints below height k from a derived start. */
function fillDerived(rec: Uint8Array, d: Derived, k: number): void {
  // An old edge's record has the same layout: leaf hash, then the checkpoints from height 8 up
  // (the old edge reaches at least height k, so it holds every checkpoint below k), then its gen.
  copy32(rec, 0, d.buf, d.off);
  if (d.rec) rec.set(d.rec.subarray(EDGE_HEAD_LENGTH, merkleEdgeLength(k) - 4), EDGE_HEAD_LENGTH);
  setEdgePath(rec, d.pathBuf, d.pathOff);
  setEdgeLeafGen(rec, d.leafGen);
}

/**
 * buildNewPaths' state: per level, the new hashes (packed, filled as they become known), each
 * node's kind, the chain through each lone node (−1: none) and the binary nodes' children; and the
 * level being built (`enter`). Its steps are methods rather than closures made per update: V8
 * compiled new closures' optimized code again in every batch, and ran them unoptimized meanwhile.
 */
class PathLevels {
  readonly hashesAt: Uint8Array[];
  readonly kindAt: Uint8Array[];
  readonly chainAt: Int32Array[];
  readonly binaryAt: BinaryPairs[] = [new BinaryPairs(0)];
  readonly chains = new Chains();
  /**
   * The level being built (`enter`): its height, the old state of its path nodes, its path nodes'
   * first leaves, and the level below's kinds, hashes and chains and E[h − 1]. Kept here so that the
   * per-node steps do not look them up again for every node.
   */
  private h = 0;
  private was!: OldLevel;
  private parents!: Int32Array;
  private belowKind!: Uint8Array;
  private belowHashes!: Uint8Array;
  private belowChain!: Int32Array;
  private eBelow!: Uint8Array;

  constructor(
    private readonly nodes: NodeSource,
    private readonly empty: readonly Uint8Array[],
    leafHashes: Uint8Array,
    private readonly paths: Paths,
    private readonly old: readonly OldLevel[],
    private readonly treeName: string,
    private readonly newNodes: NodeWrites,
  ) {
    const n0 = paths.ids.length;
    this.hashesAt = [leafHashes];
    this.kindAt = [new Uint8Array(n0)];
    this.chainAt = [new Int32Array(n0).fill(-1)];
    for (let i = 0; i < n0; i++)
      this.kindAt[0]![i] = equal32(leafHashes, i * 32, empty[0]!) ? New.Empty : New.Single;
  }

  /** Starts the level at height h (the levels below it are built). */
  enter(h: number): void {
    this.h = h;
    this.was = this.old[h]!;
    this.parents = this.paths.starts[h]!;
    this.belowKind = this.kindAt[h - 1]!;
    this.belowHashes = this.hashesAt[h - 1]!;
    this.belowChain = this.chainAt[h - 1]!;
    this.eBelow = this.empty[h - 1]!;
  }

  /**
   * Records a new node at height h: the path node there whose first leaf is `first` (side −1), or
   * the child on `side` of the path node at height h + 1 whose first leaf is `first`. Its hash is
   * 32 bytes of `hashBuf` from `hashOff`, its record `rec[recOff, recOff + recLength)`.
   */
  write(
    h: number,
    first: number,
    side: number,
    hashBuf: Uint8Array,
    hashOff: number,
    rec: Uint8Array,
    recOff = 0,
    recLength = rec.length,
  ): void {
    this.newNodes.add(hashBuf, hashOff, rec, recOff, recLength);
    const index = side < 0 ? indexAt(this.paths, first, h) : indexAt(this.paths, first, h + 1, side);
    if (index < 0) return;
    const hash = hashBuf.subarray(hashOff, hashOff + 32);
    this.nodes.remember!(
      this.treeName,
      depthAt(this.paths, h),
      index,
      hash,
      this.paths.batchGen,
      rec.subarray(recOff, recOff + recLength),
    );
  }

  /** Fills `slot` with path child c (its new state). */
  pathChild(slot: ChildSlot, c: number): void {
    slot.derived = undefined;
    slot.kind = this.belowKind[c]!;
    slot.buf = this.belowHashes;
    slot.off = c * 32;
    // Written by this batch, unless now empty (E[h] has no record: gen 0).
    slot.gen = slot.kind === New.Empty ? 0 : this.paths.batchGen;
    slot.path = c;
  }

  /** Fills `slot` with the untouched child of parent j on `side` (its old state). */
  sibling(slot: ChildSlot, j: number, side: number): void {
    const { h, parents, eBelow } = this;
    const ids = this.paths.ids;
    slot.derived = undefined;
    slot.path = -1;
    const rec = this.was.rec[j];
    const wasKind = this.was.kind[j]!;
    if (wasKind === Old.Binary) {
      slot.buf = rec!;
      slot.off = side * 32;
      slot.gen = childGen(rec!, side as 0 | 1);
      if (equal32(rec!, slot.off, eBelow)) slot.kind = New.Empty;
      else if (h === 1) {
        // A leaf: a chain of its own. Its id is the parent's first leaf's with bit 0 = side.
        slot.kind = New.Single;
        const id = ids.bytes.slice(parents[j]! * 32, parents[j]! * 32 + 32);
        id[31] = (id[31]! & 0xfe) | side;
        slot.derived = {
          rec: undefined,
          leafGen: slot.gen,
          buf: rec!,
          off: slot.off,
          pathBuf: id,
          pathOff: 0,
        };
      } else slot.kind = New.Stored;
      return;
    }
    if (wasKind === Old.Edge && edgePathBit(rec!, h - 1) === side) {
      // The old lone leaf's side of a split: its ancestor there was climbed by climbToSplits.
      slot.kind = New.Single;
      slot.buf = this.was.split.get(j)!;
      slot.off = 0;
      // Its record is written by this batch, where the chain ends; at h = 1 it is the old leaf.
      slot.gen = h === 1 ? edgeLeafGen(rec!) : this.paths.batchGen;
      // The chain may climb above the old edge (a deleted neighbour), so its path is the leaf's
      // whole id: the parent's bits above h, the edge's path below.
      const id = ids.bytes.slice(parents[j]! * 32, parents[j]! * 32 + 32);
      copyLowBits(id, 0, rec!, 32, h);
      slot.derived = { rec, leafGen: edgeLeafGen(rec!), buf: rec!, off: 0, pathBuf: id, pathOff: 0 };
      return;
    }
    slot.kind = New.Empty;
    slot.buf = eBelow;
    slot.off = 0;
    slot.gen = 0;
  }

  /** A child of a binary node that is a lone chain (above a leaf) ends there as an edge record. */
  endChain(slot: ChildSlot, j: number, side: number): void {
    const h = this.h;
    if (slot.kind !== New.Single || h - 1 === 0) return;
    if (slot.derived) {
      // An old edge's ancestor that climbs no further: its record now, from the old one.
      const rec = newMerkleEdge(h - 1);
      fillDerived(rec, slot.derived, h - 1);
      this.write(h - 1, this.parents[j]!, side, slot.buf, slot.off, rec);
    } else this.chains.end(this.belowChain[slot.path]!, h - 1, slot.path);
  }
}

/**
 * Top-down: the old state of every path node, level by level, with one batched lookup per level.
 * Below an edge record nothing is read: the edge says where its one leaf is and holds its chain.
 */
async function readOldPaths(
  nodes: NodeSource,
  empty: readonly Uint8Array[],
  oldRoot: Uint8Array,
  oldRootGen: number,
  paths: Paths,
  treeName: string,
): Promise<{ old: OldLevel[]; splits: Splits }> {
  const { ids, starts, height, remembered } = paths;
  const old: OldLevel[] = new Array<OldLevel>(height + 1);
  const splits: Splits = { recs: [], heights: [], at: [] };
  // The old hashes of this level's path nodes and their records' gens; undefined where an edge
  // above already decided.
  let hashes: (Uint8Array | undefined)[] = [oldRoot];
  let gens: number[] = [oldRootGen];
  let level: OldLevel = { kind: new Uint8Array(1), rec: [undefined], split: new Map() };
  for (let h = height; h >= 1; h--) {
    const firsts = starts[h]!;
    const toRead: number[] = [];
    for (let j = 0; j < firsts.length; j++) {
      const hash = hashes[j];
      if (hash === undefined) continue;
      if (bytesEqual(hash, empty[h]!)) level.kind[j] = Old.Empty;
      else toRead.push(j);
    }
    const wanted = new Array<Uint8Array>(toRead.length);
    const wantedGens = new Uint32Array(toRead.length);
    for (let k = 0; k < toRead.length; k++) {
      wanted[k] = hashes[toRead[k]!]!;
      wantedGens[k] = gens[toRead[k]!]!;
    }
    const found = await nodes.getNodes(wanted, wantedGens);
    for (let k = 0; k < toRead.length; k++) {
      const j = toRead[k]!;
      const rec = found[k];
      if (rec !== undefined && isBinaryRecord(rec)) level.kind[j] = Old.Binary;
      else if (rec !== undefined && isMerkleEdge(rec, h)) level.kind[j] = Old.Edge;
      else {
        const what = rec === undefined ? "is not in the store" : `has a record of ${rec.length} bytes`;
        throw new DacdError(
          "STORE",
          `${treeName} tree: node at height ${h}, index ${ids.at(firsts[j]!) >> BigInt(h)} (${Buffer.from(hashes[j]!).toString("hex")}) ${what}`,
        );
      }
      level.rec[j] = rec;
      const index = remembered > 0 ? indexAt(paths, firsts[j]!, h) : -1;
      if (index >= 0) nodes.remember!(treeName, depthAt(paths, h), index, hashes[j]!, gens[j]!, rec);
    }
    old[h] = level;

    // The old state of the path nodes one level down, from their parents: a path child's first
    // leaf tells its side (bit h − 1), and its parent is the last one starting at or before it.
    const below = starts[h - 1]!;
    const next: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(below.length);
    const nextGens = new Array<number>(below.length);
    const nextLevel: OldLevel = {
      kind: new Uint8Array(below.length),
      rec: new Array<Uint8Array | undefined>(below.length),
      split: new Map(),
    };
    for (let c = 0, j = 0; c < below.length; c++) {
      while (j + 1 < firsts.length && firsts[j + 1]! <= below[c]!) j++;
      const side = ids.bit(below[c]!, h - 1);
      const rec = level.rec[j];
      switch (level.kind[j]!) {
        case Old.Empty:
          nextLevel.kind[c] = Old.Empty;
          break;
        case Old.Binary:
          next[c] = rec!.subarray(side * 32, side * 32 + 32);
          nextGens[c] = childGen(rec!, side as 0 | 1);
          break;
        case Old.Edge:
          // Still inside the edge's subtree while the child is on its leaf's side.
          if (edgePathBit(rec!, h - 1) === side) {
            nextLevel.kind[c] = Old.Edge;
            nextLevel.rec[c] = rec;
          } else {
            nextLevel.kind[c] = Old.Empty;
            // A new leaf leaves the old leaf's path here. As the parent's only path child (its
            // first, with no second), the untouched child on the old leaf's side needs its hash.
            const second =
              c + 1 < below.length && (j + 1 === firsts.length || below[c + 1]! < firsts[j + 1]!);
            if (below[c] === firsts[j] && !second) {
              splits.recs.push(rec!);
              splits.heights.push(h - 1);
              splits.at.push([level, j]);
            }
          }
          break;
      }
    }
    hashes = next;
    gens = nextGens;
    level = nextLevel;
  }
  return { old, splits };
}

/**
 * The old leaf's ancestor just below each split (the path node's untouched child), into its
 * level's `split`: climbed from the edges' checkpoints for all splits at once, a few engine calls.
 */
async function climbToSplits(
  engine: HashEngine,
  empty: readonly Uint8Array[],
  splits: Splits,
): Promise<void> {
  if (splits.recs.length === 0) return;
  const found = await ancestorsAt(engine, empty, splits.recs, splits.heights);
  splits.at.forEach(([level, j], i) => level.split.set(j, found[i]!));
}

/**
 * A level's binary nodes, in node order: each node's index in its level and where its children's
 * hashes will be (buffer and offset: the level below's hashes are filled in later passes).
 */
class BinaryPairs {
  count = 0;
  readonly nodes: Int32Array;
  private readonly bufs: Uint8Array[] = [];
  private readonly offs: Int32Array;
  private readonly gens: Uint32Array;

  constructor(capacity: number) {
    this.nodes = new Int32Array(capacity);
    this.offs = new Int32Array(capacity * 2);
    this.gens = new Uint32Array(capacity * 2);
  }

  add(
    node: number,
    l: Uint8Array,
    lOff: number,
    lGen: number,
    r: Uint8Array,
    rOff: number,
    rGen: number,
  ): void {
    const at = this.count++;
    this.nodes[at] = node;
    this.bufs.push(l, r);
    this.offs[2 * at] = lOff;
    this.offs[2 * at + 1] = rOff;
    this.gens[2 * at] = lGen;
    this.gens[2 * at + 1] = rGen;
  }

  /** The children's hashes, packed for the engine (they must all be known by now). */
  inputs(): { xs: Uint8Array; ys: Uint8Array } {
    const xs = new Uint8Array(this.count * 32);
    const ys = new Uint8Array(this.count * 32);
    for (let b = 0; b < this.count; b++) {
      copy32(xs, b * 32, this.bufs[2 * b]!, this.offs[2 * b]!);
      copy32(ys, b * 32, this.bufs[2 * b + 1]!, this.offs[2 * b + 1]!);
    }
    return { xs, ys };
  }

  /** Binary records, left ‖ right ‖ their gens, from the packed inputs. */
  records(xs: Uint8Array, ys: Uint8Array): Uint8Array {
    const B = BINARY_RECORD_LENGTH;
    const out = new Uint8Array(this.count * B);
    for (let b = 0; b < this.count; b++) {
      copy32(out, b * B, xs, b * 32);
      copy32(out, b * B + 32, ys, b * 32);
      writeGen(out, b * B + 64, this.gens[2 * b]!);
      writeGen(out, b * B + 68, this.gens[2 * b + 1]!);
    }
    return out;
  }
}

/**
 * A tree update's lone chains: where each starts (its hash, height and leaf id), and where it ends
 * (the path node at its top, by height and index in that level).
 */
class Chains {
  count = 0;
  private readonly startBuf: Uint8Array[] = [];
  private readonly startOff: number[] = [];
  private readonly from: number[] = [];
  private readonly pathBuf: Uint8Array[] = [];
  private readonly pathOff: number[] = [];
  /** The leaf a chain starts at (its index among the changed leaves), or −1 for a derived start. */
  readonly leaf: number[] = [];
  readonly derived: (Derived | undefined)[] = [];
  readonly top: number[] = [];
  readonly topIndex: number[] = [];

  /** A new chain from the hash at (buf, off) at height `from`; returns its number. */
  start(
    buf: Uint8Array,
    off: number,
    from: number,
    pathBuf: Uint8Array,
    pathOff: number,
    leaf: number,
    derived?: Derived,
  ): number {
    this.startBuf.push(buf);
    this.startOff.push(off);
    this.from.push(from);
    this.pathBuf.push(pathBuf);
    this.pathOff.push(pathOff);
    this.leaf.push(leaf);
    this.derived.push(derived);
    this.top.push(-1);
    this.topIndex.push(-1);
    return this.count++;
  }

  /** Chain c ends at the path node at height `top`, index `index` in its level. */
  end(c: number, top: number, index: number): void {
    this.top[c] = top;
    this.topIndex[c] = index;
  }

  /** The climb of every chain, for climbChains; checkpoints are the marks. */
  job(empty: readonly Uint8Array[]): ChainClimb {
    const n = this.count;
    const starts = new Uint8Array(n * 32);
    const paths = new Uint8Array(n * 32);
    const from = new Uint8Array(n);
    const to = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      if (this.top[i]! < 0) throw new Error(`internal: a lone chain from height ${this.from[i]} has no end`);
      copy32(starts, i * 32, this.startBuf[i]!, this.startOff[i]!);
      copy32(paths, i * 32, this.pathBuf[i]!, this.pathOff[i]!);
      from[i] = this.from[i]!;
      to[i] = this.top[i]!;
    }
    const height = empty.length - 1;
    return {
      starts,
      paths,
      from,
      to,
      empty: packedEmpties(empty),
      step: CHECKPOINT_STEP,
      slots: checkpointCount(height),
    };
  }
}

function equal32(a: Uint8Array, aOff: number, b: Uint8Array): boolean {
  for (let i = 0; i < 32; i++) if (a[aOff + i] !== b[i]) return false;
  return true;
}
