import { DacdError } from "../errors.js";
import { bytesEqual, copyLowBits } from "../util/bytes.js";
import { hashWithConstant, type HashEngine } from "./hash/engine.js";
import { hashPairs } from "./leaves.js";
import {
  ancestorsAt,
  checkpointOffset,
  edgePathBit,
  isCheckpoint,
  isMerkleEdge,
  merkleEdgeLength,
  newMerkleEdge,
  setEdgePath,
} from "./merkle-edge.js";
import type { NodeSource, NodeWrite } from "./node-source.js";
import { PackedIds } from "./packed-ids.js";

/** In a level's lone-chain links: the chain starts in an old edge record, not a path node. */
const DERIVED = -2;

const byIndex = (a: bigint, b: bigint): number => (a < b ? -1 : a > b ? 1 : 0);

/** E[k]: the root of an untouched subtree of height k, from the empty leaf's hash upward. */
export async function emptySubtreeRoots(
  engine: HashEngine,
  emptyLeaf: Uint8Array,
  height: number,
): Promise<Uint8Array[]> {
  const out = [emptyLeaf];
  for (let k = 0; k < height; k++) {
    const [h] = await hashPairs(engine, [out[k]!], [out[k]!]);
    out.push(h!);
  }
  return out;
}

export interface MerkleUpdate {
  readonly root: Uint8Array;
  readonly newNodes: NodeWrite[];
}

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
}

function changedPaths(sortedIds: readonly bigint[], height: number, remembered: number): Paths {
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
  return { ids, starts, height, remembered };
}

/** The index among the nodes of its height of the path node at height h whose first leaf is `leaf`. */
function indexAt(paths: Paths, leaf: number, h: number): number {
  return paths.ids.bits(leaf, h, paths.height - h);
}

/**
 * Replaces leaves of a fixed-height Merkle tree and returns the new root and the records it
 * created. It reads only the nodes on the changed paths — one batched lookup per level, top-down,
 * and none below an edge record (merkle-edge.ts), which already describes its whole subtree — and
 * then hashes bottom-up a level at a time, each kind of pair packed for one engine call (LevelPairs).
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
 */
export async function updateMerkle(
  engine: HashEngine,
  nodes: NodeSource,
  empty: readonly Uint8Array[],
  oldRoot: Uint8Array,
  leaves: ReadonlyMap<bigint, Uint8Array>,
  treeName: string,
): Promise<MerkleUpdate> {
  const height = empty.length - 1;
  if (leaves.size === 0) return { root: oldRoot, newNodes: [] };
  const leafIds = [...leaves.keys()].sort(byIndex);
  const remembered = nodes.remember ? Math.min(nodes.rememberedLevels ?? 0, height + 1) : 0;
  const paths = changedPaths(leafIds, height, remembered);
  const leafHashes = new Uint8Array(leafIds.length * 32);
  leafIds.forEach((id, i) => leafHashes.set(leaves.get(id)!, i * 32));

  const { old, splits } = await readOldPaths(nodes, empty, oldRoot, paths, treeName);
  await climbToSplits(engine, empty, splits);

  return buildNewPaths(engine, nodes, empty, leafHashes, paths, old, treeName);
}

/** A lone leaf's chain that starts outside the changed paths (see `Derived` in buildNewPaths). */
interface Derived {
  /** The old edge record holding the chain below, or undefined for a bare leaf. */
  readonly rec: Uint8Array | undefined;
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
  /** A path child's index in its level; −1 for a child off the paths. */
  path: number;
  derived: Derived | undefined;
}

/**
 * Bottom-up: new hashes of every path node, a level at a time: the binary nodes' pairs in one engine
 * call, and the lone chains (a child and E[h − 1]) in two one-sided calls. A hash is referred to as
 * (buffer, offset) and copied 32 bytes at a time, and a lone leaf's chain is not collected as it
 * climbs: each level notes which child a lone chain came from, and the edge record is assembled
 * from the levels' hash buffers once, where the chain ends. A batch of 10,000 new positions climbs
 * ~45 levels each, so this loop runs about a million times per batch.
 */
async function buildNewPaths(
  engine: HashEngine,
  nodes: NodeSource,
  empty: readonly Uint8Array[],
  leafHashes: Uint8Array,
  paths: Paths,
  old: readonly OldLevel[],
  treeName: string,
): Promise<MerkleUpdate> {
  const { ids, starts, height, remembered } = paths;
  const newNodes: NodeWrite[] = [];
  /**
   * Records a new node at height h: the path node there whose first leaf is `first` (side −1), or
   * the child on `side` of the path node at height h + 1 whose first leaf is `first`.
   */
  const write = (h: number, first: number, side: number, hash: Uint8Array, record: Uint8Array): void => {
    newNodes.push({ hash, record });
    if (height - h >= remembered) return;
    const index = side < 0 ? indexAt(paths, first, h) : indexAt(paths, first, h + 1) * 2 + side;
    nodes.remember!(treeName, height - h, index, hash, record);
  };

  // Per level: the new hashes (packed), each node's kind, and for a lone chain the child it came
  // from (its index one level down, or DERIVED with the chain's start in `derivedAt`).
  const n0 = ids.length;
  const hashesAt: Uint8Array[] = [leafHashes];
  const kindAt: Uint8Array[] = [new Uint8Array(n0)];
  const loneAt: Int32Array[] = [new Int32Array(0)];
  const derivedAt: Map<number, Derived>[] = [new Map()];
  for (let i = 0; i < n0; i++)
    kindAt[0]![i] = equal32(leafHashes, i * 32, empty[0]!) ? New.Empty : New.Single;

  /** Fills an edge record's leaf hash, path and checkpoints below height k from a derived start. */
  const fillDerived = (rec: Uint8Array, d: Derived, k: number): void => {
    // An old edge's record has the same layout: leaf hash, then the checkpoints from height 8 up
    // (the old edge reaches at least height k, so it holds every checkpoint below k).
    copy32(rec, 0, d.buf, d.off);
    if (d.rec) rec.set(d.rec.subarray(65, merkleEdgeLength(k)), 65);
    setEdgePath(rec, d.pathBuf, d.pathOff);
  };

  /** The edge record of the lone chain ending at node `idx` of level `top`, assembled downward. */
  const writeEdge = (top: number, idx: number): void => {
    const rec = newMerkleEdge(top);
    for (let k = top, i = idx; k > 0; k--) {
      const from = loneAt[k]![i]!;
      if (from === DERIVED) {
        fillDerived(rec, derivedAt[k]!.get(i)!, k);
        break;
      }
      if (k - 1 === 0) {
        copy32(rec, 0, hashesAt[0]!, from * 32);
        setEdgePath(rec, ids.bytes, from * 32);
      } else if (isCheckpoint(k - 1)) copy32(rec, checkpointOffset(k - 1), hashesAt[k - 1]!, from * 32);
      i = from;
    }
    write(top, starts[top]![idx]!, -1, hashesAt[top]!.subarray(idx * 32, idx * 32 + 32), rec);
  };

  /**
   * The edge record of a lone chain that starts in an old edge record and ends at height t, on
   * `side` below the path node at height t + 1 whose first leaf is `first`; `hash` is its top.
   */
  const writeDerivedEdge = (t: number, d: Derived, first: number, side: number, hash: Uint8Array): void => {
    const rec = newMerkleEdge(t);
    fillDerived(rec, d, t);
    write(t, first, side, hash, rec);
  };

  const L: ChildSlot = { kind: New.Empty, buf: empty[0]!, off: 0, path: -1, derived: undefined };
  const R: ChildSlot = { ...L };
  for (let h = 1; h <= height; h++) {
    const parents = starts[h]!;
    const children = starts[h - 1]!;
    const belowHashes = hashesAt[h - 1]!;
    const belowKind = kindAt[h - 1]!;
    const was = old[h]!;
    const n = parents.length;
    const kind = new Uint8Array(n);
    const lone = new Int32Array(n).fill(-1);
    const derived = new Map<number, Derived>();
    const eBelow = empty[h - 1]!;
    // The level's hashes in three engine calls: binary nodes' pairs, and the one-sided pairs of
    // lone chains going up (their other child is E[h − 1]) with the chain on the left or right.
    const pairs = new LevelPairs(n, 2);
    const loneLeft = new LevelPairs(n, 1);
    const loneRight = new LevelPairs(n, 1);
    // Fills `slot` with path child c (its new state).
    const pathChild = (slot: ChildSlot, c: number): void => {
      slot.derived = undefined;
      slot.kind = belowKind[c]!;
      slot.buf = belowHashes;
      slot.off = c * 32;
      slot.path = c;
    };
    // Fills `slot` with the untouched child of parent j on `side` (its old state).
    const sibling = (slot: ChildSlot, j: number, side: number): void => {
      slot.derived = undefined;
      slot.path = -1;
      const rec = was.rec[j];
      const wasKind = was.kind[j]!;
      if (wasKind === Old.Binary) {
        slot.buf = rec!;
        slot.off = side * 32;
        if (equal32(rec!, slot.off, eBelow)) slot.kind = New.Empty;
        else if (h === 1) {
          // A leaf: a chain of its own. Its id is the parent's first leaf's with bit 0 = side.
          slot.kind = New.Single;
          const id = ids.bytes.slice(parents[j]! * 32, parents[j]! * 32 + 32);
          id[31] = (id[31]! & 0xfe) | side;
          slot.derived = { rec: undefined, buf: rec!, off: slot.off, pathBuf: id, pathOff: 0 };
        } else slot.kind = New.Stored;
        return;
      }
      if (wasKind === Old.Edge && edgePathBit(rec!, h - 1) === side) {
        // The old lone leaf's side of a split: its ancestor there was climbed by climbToSplits.
        slot.kind = New.Single;
        slot.buf = was.split.get(j)!;
        slot.off = 0;
        // The chain may climb above the old edge (a deleted neighbour), so its path is the leaf's
        // whole id: the parent's bits above h, the edge's path below.
        const id = ids.bytes.slice(parents[j]! * 32, parents[j]! * 32 + 32);
        copyLowBits(id, 0, rec!, 32, h);
        slot.derived = { rec, buf: rec!, off: 0, pathBuf: id, pathOff: 0 };
        return;
      }
      slot.kind = New.Empty;
      slot.buf = eBelow;
      slot.off = 0;
    };
    /** A child of a binary node that is a lone chain (above a leaf) ends there: its edge is written. */
    const endChain = (slot: ChildSlot, j: number, side: number): void => {
      if (slot.kind !== New.Single || h - 1 === 0) return;
      if (slot.derived)
        writeDerivedEdge(h - 1, slot.derived, parents[j]!, side, slot.buf.subarray(slot.off, slot.off + 32));
      else writeEdge(h - 1, slot.path);
    };
    for (let j = 0, c = 0; j < n; j++) {
      // The parent's path children: child c (which starts at the same leaf) and maybe child c + 1.
      const end = j + 1 < n ? parents[j + 1]! : ids.length;
      if (c + 1 < children.length && children[c + 1]! < end) {
        pathChild(L, c);
        pathChild(R, c + 1);
        c += 2;
      } else if (ids.bit(children[c]!, h - 1) === 0) {
        pathChild(L, c++);
        sibling(R, j, 1);
      } else {
        sibling(L, j, 0);
        pathChild(R, c++);
      }
      const only = L.kind === New.Empty ? R : R.kind === New.Empty ? L : undefined;
      if (only === undefined || only.kind === New.Stored) {
        kind[j] = New.Stored;
        pairs.add(j, L.buf, L.off, R.buf, R.off);
        endChain(L, j, 0);
        endChain(R, j, 1);
      } else if (only.kind === New.Single) {
        // One lone leaf's chain going on up.
        kind[j] = New.Single;
        lone[j] = only.derived ? DERIVED : only.path;
        if (only.derived) derived.set(j, only.derived);
        (only === L ? loneLeft : loneRight).add(j, only.buf, only.off);
      } else kind[j] = New.Empty;
    }
    const eHere = empty[h]!;
    const [pairHashes, leftHashes, rightHashes] = await Promise.all([
      pairs.count > 0 ? engine.hashMany(pairs.side(0), pairs.side(1)) : NO_HASHES,
      loneLeft.count > 0 ? hashWithConstant(engine, loneLeft.side(0), eBelow, true) : NO_HASHES,
      loneRight.count > 0 ? hashWithConstant(engine, loneRight.side(0), eBelow, false) : NO_HASHES,
    ]);
    // Empty nodes are E[h]; the others are scattered back into node order.
    const hashes = new Uint8Array(n * 32);
    for (let j = 0; j < n; j++) if (kind[j] === New.Empty) copy32(hashes, j * 32, eHere, 0);
    pairs.scatter(pairHashes, hashes);
    loneLeft.scatter(leftHashes, hashes);
    loneRight.scatter(rightHashes, hashes);
    hashesAt.push(hashes);
    kindAt.push(kind);
    loneAt.push(lone);
    derivedAt.push(derived);
    // A lone chain ends below each binary node: it becomes an edge record (leaves need none).
    const records = pairs.records();
    for (let b = 0; b < pairs.count; b++) {
      const j = pairs.nodes[b]!;
      write(h, parents[j]!, -1, hashes.subarray(j * 32, j * 32 + 32), records.subarray(b * 64, b * 64 + 64));
    }
  }
  if (kindAt[height]![0] === New.Single) writeEdge(height, 0);
  return { root: hashesAt[height]!.subarray(0, 32), newNodes };
}

/**
 * Top-down: the old state of every path node, level by level, with one batched lookup per level.
 * Below an edge record nothing is read: the edge says where its one leaf is and holds its chain.
 */
async function readOldPaths(
  nodes: NodeSource,
  empty: readonly Uint8Array[],
  oldRoot: Uint8Array,
  paths: Paths,
  treeName: string,
): Promise<{ old: OldLevel[]; splits: Splits }> {
  const { ids, starts, height, remembered } = paths;
  const old: OldLevel[] = new Array<OldLevel>(height + 1);
  const splits: Splits = { recs: [], heights: [], at: [] };
  // The old hashes of this level's path nodes; undefined where an edge above already decided.
  let hashes: (Uint8Array | undefined)[] = [oldRoot];
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
    const found = await nodes.getNodes(toRead.map((j) => hashes[j]!));
    toRead.forEach((j, k) => {
      const rec = found[k];
      if (rec?.length === 64) level.kind[j] = Old.Binary;
      else if (rec !== undefined && isMerkleEdge(rec, h)) level.kind[j] = Old.Edge;
      else {
        const what = rec === undefined ? "is not in the store" : `has a record of ${rec.length} bytes`;
        throw new DacdError(
          "STORE",
          `${treeName} tree: node at height ${h}, index ${ids.at(firsts[j]!) >> BigInt(h)} (${Buffer.from(hashes[j]!).toString("hex")}) ${what}`,
        );
      }
      level.rec[j] = rec;
      if (height - h < remembered)
        nodes.remember!(treeName, height - h, indexAt(paths, firsts[j]!, h), hashes[j]!, rec);
    });
    old[h] = level;

    // The old state of the path nodes one level down, from their parents: a path child's first
    // leaf tells its side (bit h − 1), and its parent is the last one starting at or before it.
    const below = starts[h - 1]!;
    const next: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(below.length);
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

const NO_HASHES = new Uint8Array(0);

/**
 * One kind of a level's pairs, packed for the engine: for each, the node's index in its level and
 * one or two 32-byte inputs (a one-sided pair's constant is not stored).
 */
class LevelPairs {
  count = 0;
  readonly nodes: Int32Array;
  private readonly inputs: Uint8Array[];

  constructor(capacity: number, sides: 1 | 2) {
    this.nodes = new Int32Array(capacity);
    this.inputs = Array.from({ length: sides }, () => new Uint8Array(capacity * 32));
  }

  add(node: number, a: Uint8Array, aOff: number, b?: Uint8Array, bOff = 0): void {
    const at = this.count++;
    this.nodes[at] = node;
    copy32(this.inputs[0]!, at * 32, a, aOff);
    if (b) copy32(this.inputs[1]!, at * 32, b, bOff);
  }

  /** The packed inputs of one side. */
  side(s: 0 | 1): Uint8Array {
    return this.inputs[s]!.subarray(0, this.count * 32);
  }

  /** Copies the i-th result to its node's place in `hashes`. */
  scatter(results: Uint8Array, hashes: Uint8Array): void {
    for (let i = 0; i < this.count; i++) copy32(hashes, this.nodes[i]! * 32, results, i * 32);
  }

  /** Binary records, left ‖ right, one per two-sided pair. */
  records(): Uint8Array {
    const out = new Uint8Array(this.count * 64);
    for (let i = 0; i < this.count; i++) {
      copy32(out, i * 64, this.inputs[0]!, i * 32);
      copy32(out, i * 64 + 32, this.inputs[1]!, i * 32);
    }
    return out;
  }
}

function copy32(dst: Uint8Array, dstOff: number, src: Uint8Array, srcOff: number): void {
  for (let i = 0; i < 32; i++) dst[dstOff + i] = src[srcOff + i]!;
}

function equal32(a: Uint8Array, aOff: number, b: Uint8Array): boolean {
  for (let i = 0; i < 32; i++) if (a[aOff + i] !== b[i]) return false;
  return true;
}
