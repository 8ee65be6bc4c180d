import { DacdError } from "../errors.js";
import { bytesEqual } from "../util/bytes.js";
import type { HashEngine } from "./hash/engine.js";
import { hashPairs } from "./leaves.js";
import { edgeChainAt, edgeLeafIndex, isMerkleEdge, newMerkleEdge, setEdgeLeaf } from "./merkle-edge.js";
import type { NodeSource, NodeWrite } from "./node-source.js";

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
  kind: Old[];
  /** Binary: the 64-byte record; Edge: the edge record. */
  rec: (Uint8Array | undefined)[];
  /** Edge: the absolute index of its leaf. */
  leaf: bigint[];
}

/**
 * Replaces leaves of a fixed-height Merkle tree and returns the new root and the records it
 * created. It reads only the nodes on the changed paths — one batched lookup per level, top-down,
 * and none below an edge record (merkle-edge.ts), which already describes its whole subtree — and
 * then hashes bottom-up, one engine call per level with the level's pairs packed into two buffers.
 * Subtrees whose hash is E[k] are known to be empty and are never looked up, so the empty tree
 * needs no stored nodes at all.
 *
 * Records written: a node whose subtree holds exactly one leaf is part of that leaf's chain, and
 * the chain is written as one edge record where it ends (below a binary node, or at the root);
 * every other non-empty node gets a binary record (left ‖ right). Deleting a leaf can leave a
 * binary node above a lone leaf when the other side is a stored node (its leaf count is not read);
 * readers accept both forms, since both describe the same subtree.
 *
 * Every level is a sorted array of node ids with arrays aligned to it (no maps): a parent's
 * children are found by walking the child level's sorted ids alongside.
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

  // pathIds[h]: the ids at height h of nodes above a changed leaf (pathIds[0] = the leaves).
  const pathIds: bigint[][] = [leafIds];
  for (let h = 1; h <= height; h++) pathIds.push(parentsOf(pathIds[h - 1]!));

  const old = await readOldPaths(nodes, empty, oldRoot, pathIds, treeName);

  return buildNewPaths(engine, nodes, empty, leafIds, leaves, pathIds, old, treeName);
}

/** A lone leaf's chain that starts outside the changed paths (see `Derived` in buildNewPaths). */
interface Derived {
  /** The old edge record holding the chain below, or undefined for a bare leaf. */
  readonly rec: Uint8Array | undefined;
  /** Where the leaf's hash is (in `rec`, or in its old parent's record). */
  readonly buf: Uint8Array;
  readonly off: number;
  readonly leaf: bigint;
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
 * Bottom-up: new hashes of every path node, one engine call per level. A hash is referred to as
 * (buffer, offset) and copied 32 bytes at a time, and a lone leaf's chain is not collected as it
 * climbs: each level notes which child a lone chain came from, and the edge record is assembled
 * from the levels' hash buffers once, where the chain ends. A batch of 10,000 new positions climbs
 * ~45 levels each, so this loop runs about a million times per batch.
 */
async function buildNewPaths(
  engine: HashEngine,
  nodes: NodeSource,
  empty: readonly Uint8Array[],
  leafIds: readonly bigint[],
  leaves: ReadonlyMap<bigint, Uint8Array>,
  pathIds: readonly bigint[][],
  old: readonly OldLevel[],
  treeName: string,
): Promise<MerkleUpdate> {
  const height = empty.length - 1;
  const newNodes: NodeWrite[] = [];
  const write = (h: number, id: bigint, hash: Uint8Array, record: Uint8Array): void => {
    newNodes.push({ hash, record });
    nodes.remember?.(treeName, height - h, id, hash, record);
  };

  // Per level: the new hashes (packed), each node's kind, and for a lone chain the child it came
  // from (its index one level down, or DERIVED with the chain's start in `derivedAt`).
  const hashesAt: Uint8Array[] = [new Uint8Array(leafIds.length * 32)];
  const kindAt: Uint8Array[] = [new Uint8Array(leafIds.length)];
  const loneAt: Int32Array[] = [new Int32Array(0)];
  const derivedAt: Map<number, Derived>[] = [new Map()];
  leafIds.forEach((id, i) => {
    const hash = leaves.get(id)!;
    hashesAt[0]!.set(hash, i * 32);
    kindAt[0]![i] = bytesEqual(hash, empty[0]!) ? New.Empty : New.Single;
  });

  /** The edge record of the lone chain ending at node `idx` of level `top`, assembled downward. */
  const writeEdge = (top: number, idx: number): void => {
    const rec = newMerkleEdge(top, 0n);
    let leaf = 0n;
    for (let k = top, i = idx; k > 0; k--) {
      const from = loneAt[k]![i]!;
      if (from === DERIVED) {
        const d = derivedAt[k]!.get(i)!;
        // An old edge's record has the same layout: leaf hash, then the chain from height 1 up.
        if (d.rec) rec.set(d.rec.subarray(0, 32), 0);
        else copy32(rec, 0, d.buf, d.off);
        if (d.rec && k > 1) rec.set(d.rec.subarray(65, 65 + 32 * (k - 1)), 65);
        leaf = d.leaf;
        break;
      }
      if (k - 1 === 0) {
        copy32(rec, 0, hashesAt[0]!, from * 32);
        leaf = leafIds[from]!;
      } else copy32(rec, 65 + 32 * (k - 2), hashesAt[k - 1]!, from * 32);
      i = from;
    }
    setEdgeLeaf(rec, leaf);
    write(top, leaf >> BigInt(top), hashesAt[top]!.subarray(idx * 32, idx * 32 + 32), rec);
  };

  /** The edge record of a lone chain that starts in an old edge record and ends at height t. */
  const writeDerivedEdge = (t: number, d: Derived, id: bigint): void => {
    const rec = newMerkleEdge(t, d.leaf);
    rec.set(d.rec!.subarray(0, 32), 0);
    rec.set(d.rec!.subarray(65, 65 + 32 * (t - 1)), 65);
    write(t, id, edgeChainAt(d.rec!, t), rec);
  };
  /** A child of a binary node that is a lone chain (above a leaf) ends there: its edge is written. */
  const endChain = (slot: ChildSlot, t: number, id: bigint): void => {
    if (slot.kind !== New.Single || t === 0) return;
    if (slot.derived) writeDerivedEdge(t, slot.derived, id);
    else writeEdge(t, slot.path);
  };

  const L: ChildSlot = { kind: New.Empty, buf: empty[0]!, off: 0, path: -1, derived: undefined };
  const R: ChildSlot = { ...L };
  for (let h = 1; h <= height; h++) {
    const parents = pathIds[h]!;
    const children = pathIds[h - 1]!;
    const belowHashes = hashesAt[h - 1]!;
    const belowKind = kindAt[h - 1]!;
    const was = old[h]!;
    const n = parents.length;
    const kind = new Uint8Array(n);
    const lone = new Int32Array(n).fill(-1);
    const derived = new Map<number, Derived>();
    const xs = new Uint8Array(n * 32);
    const ys = new Uint8Array(n * 32);
    const binary: number[] = [];
    const eBelow = empty[h - 1]!;
    let c = 0;
    // Fills `slot` with a path child (its new state) or an untouched sibling (its old state).
    const child = (slot: ChildSlot, j: number, id: bigint): void => {
      slot.derived = undefined;
      slot.path = -1;
      if (c < children.length && children[c] === id) {
        slot.kind = belowKind[c]!;
        slot.buf = belowHashes;
        slot.off = c * 32;
        slot.path = c++;
        return;
      }
      const rec = was.rec[j];
      const wasKind = was.kind[j]!;
      if (wasKind === Old.Binary) {
        slot.buf = rec!;
        slot.off = (id & 1n) === 0n ? 0 : 32;
        if (equal32(rec!, slot.off, eBelow)) slot.kind = New.Empty;
        else if (h === 1) {
          // A leaf: a chain of its own.
          slot.kind = New.Single;
          slot.derived = { rec: undefined, buf: rec!, off: slot.off, leaf: id };
        } else slot.kind = New.Stored;
        return;
      }
      if (wasKind === Old.Edge && was.leaf[j]! >> BigInt(h - 1) === id) {
        // The old lone leaf's side of a split: its chain is in the edge record.
        slot.kind = New.Single;
        slot.buf = rec!;
        slot.off = h - 1 === 0 ? 0 : 65 + 32 * (h - 2);
        slot.derived = { rec, buf: rec!, off: 0, leaf: was.leaf[j]! };
        return;
      }
      slot.kind = New.Empty;
      slot.buf = eBelow;
      slot.off = 0;
    };
    for (let j = 0; j < n; j++) {
      const p2 = parents[j]! << 1n;
      child(L, j, p2);
      child(R, j, p2 + 1n);
      copy32(xs, j * 32, L.buf, L.off);
      copy32(ys, j * 32, R.buf, R.off);
      const only = L.kind === New.Empty ? R : R.kind === New.Empty ? L : undefined;
      if (only === undefined || only.kind === New.Stored) {
        kind[j] = New.Stored;
        binary.push(j);
        endChain(L, h - 1, p2);
        endChain(R, h - 1, p2 + 1n);
      } else if (only.kind === New.Single) {
        // One lone leaf's chain going on up.
        kind[j] = New.Single;
        lone[j] = only.derived ? DERIVED : only.path;
        if (only.derived) derived.set(j, only.derived);
      } else kind[j] = New.Empty;
    }
    const hashes = await engine.hashMany(xs, ys);
    hashesAt.push(hashes);
    kindAt.push(kind);
    loneAt.push(lone);
    derivedAt.push(derived);
    // A lone chain ends below each binary node: it becomes an edge record (leaves need none).
    const records = new Uint8Array(binary.length * 64);
    binary.forEach((j, b) => {
      records.set(xs.subarray(j * 32, j * 32 + 32), b * 64);
      records.set(ys.subarray(j * 32, j * 32 + 32), b * 64 + 32);
      write(h, parents[j]!, hashes.subarray(j * 32, j * 32 + 32), records.subarray(b * 64, b * 64 + 64));
    });
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
  pathIds: readonly bigint[][],
  treeName: string,
): Promise<OldLevel[]> {
  const height = empty.length - 1;
  const old: OldLevel[] = new Array<OldLevel>(height + 1);
  // The old hashes of this level's path nodes; undefined where an edge above already decided.
  let hashes: (Uint8Array | undefined)[] = [oldRoot];
  let inherited: OldLevel = { kind: [Old.Empty], rec: [undefined], leaf: [0n] };
  for (let h = height; h >= 1; h--) {
    const ids = pathIds[h]!;
    const level = inherited;
    const toRead: number[] = [];
    for (let j = 0; j < ids.length; j++) {
      const hash = hashes[j];
      if (hash === undefined) continue;
      if (bytesEqual(hash, empty[h]!)) level.kind[j] = Old.Empty;
      else toRead.push(j);
    }
    const found = await nodes.getNodes(toRead.map((j) => hashes[j]!));
    toRead.forEach((j, k) => {
      const rec = found[k];
      if (rec?.length === 64) {
        level.kind[j] = Old.Binary;
      } else if (rec !== undefined && isMerkleEdge(rec, h)) {
        level.kind[j] = Old.Edge;
        level.leaf[j] = edgeLeafIndex(rec, h, ids[j]!);
      } else {
        const what = rec === undefined ? "is not in the store" : `has a record of ${rec.length} bytes`;
        throw new DacdError(
          "STORE",
          `${treeName} tree: node at height ${h}, index ${ids[j]} (${Buffer.from(hashes[j]!).toString("hex")}) ${what}`,
        );
      }
      level.rec[j] = rec;
      nodes.remember?.(treeName, height - h, ids[j]!, hashes[j]!, rec!);
    });
    old[h] = level;

    // The old state of the path nodes one level down, from their parents.
    const below = pathIds[h - 1]!;
    const next: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(below.length);
    const nextLevel: OldLevel = {
      kind: new Array<Old>(below.length),
      rec: new Array<Uint8Array | undefined>(below.length),
      leaf: new Array<bigint>(below.length),
    };
    for (let c = 0, j = 0; c < below.length; c++) {
      while (ids[j]! !== below[c]! >> 1n) j++;
      const rec = level.rec[j];
      switch (level.kind[j]!) {
        case Old.Empty:
          nextLevel.kind[c] = Old.Empty;
          break;
        case Old.Binary:
          next[c] = (below[c]! & 1n) === 0n ? rec!.subarray(0, 32) : rec!.subarray(32, 64);
          break;
        case Old.Edge:
          if (level.leaf[j]! >> BigInt(h - 1) === below[c]!) {
            nextLevel.kind[c] = Old.Edge;
            nextLevel.rec[c] = rec;
            nextLevel.leaf[c] = level.leaf[j]!;
          } else nextLevel.kind[c] = Old.Empty;
          break;
      }
    }
    hashes = next;
    inherited = nextLevel;
  }
  return old;
}

/** The distinct parents of sorted node ids, in order. */
function parentsOf(sortedIds: readonly bigint[]): bigint[] {
  const out: bigint[] = [];
  for (const id of sortedIds) {
    const p = id >> 1n;
    if (out.length === 0 || out[out.length - 1] !== p) out.push(p);
  }
  return out;
}

function copy32(dst: Uint8Array, dstOff: number, src: Uint8Array, srcOff: number): void {
  for (let i = 0; i < 32; i++) dst[dstOff + i] = src[srcOff + i]!;
}

function equal32(a: Uint8Array, aOff: number, b: Uint8Array): boolean {
  for (let i = 0; i < 32; i++) if (a[aOff + i] !== b[i]) return false;
  return true;
}
