import { DacdError } from "../errors.js";
import { bytesEqual } from "../util/bytes.js";
import type { HashEngine } from "./hash/engine.js";
import { hashPairs } from "./leaves.js";
import { edgeChainAt, edgeLeafIndex, encodeMerkleEdge, isMerkleEdge } from "./merkle-edge.js";
import type { NodeSource, NodeWrite } from "./node-source.js";

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
  /** One leaf below: `chain` holds its ancestors' hashes from the leaf (chain[0]) up to this node. */
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

interface Child {
  readonly kind: New;
  readonly hash: Uint8Array;
  readonly chain?: Uint8Array[];
  readonly leaf: bigint;
}

interface NewLevel {
  kind: New[];
  hash: Uint8Array[];
  chain: (Uint8Array[] | undefined)[];
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

  // Bottom-up: new hashes of every path node, one engine call per level.
  const newNodes: NodeWrite[] = [];
  const write = (h: number, id: bigint, hash: Uint8Array, record: Uint8Array): void => {
    newNodes.push({ hash, record });
    nodes.remember?.(treeName, height - h, id, hash, record);
  };
  const writeEdge = (chain: Uint8Array[], leaf: bigint): void => {
    const h = chain.length - 1;
    write(h, leaf >> BigInt(h), chain[h]!, encodeMerkleEdge(chain, leaf & ((1n << BigInt(h)) - 1n)));
  };
  let below: NewLevel = {
    kind: leafIds.map((id) => (bytesEqual(leaves.get(id)!, empty[0]!) ? New.Empty : New.Single)),
    hash: leafIds.map((id) => leaves.get(id)!),
    chain: leafIds.map((id) => [leaves.get(id)!]),
    leaf: leafIds,
  };
  for (let h = 1; h <= height; h++) {
    const parents = pathIds[h]!;
    const children = pathIds[h - 1]!;
    const was = old[h]!;
    const n = parents.length;
    const level: NewLevel = {
      kind: new Array<New>(n),
      hash: new Array<Uint8Array>(n),
      chain: new Array<Uint8Array[] | undefined>(n),
      leaf: new Array<bigint>(n),
    };
    // Each parent's record (left ‖ right) is built in one buffer and doubles as the hash input.
    const pairs = new Uint8Array(n * 64);
    const xs = new Uint8Array(n * 32);
    const ys = new Uint8Array(n * 32);
    const binary: boolean[] = new Array<boolean>(n);
    let c = 0;
    // A child of this level: a path node (its new state) or an untouched sibling (its old state).
    const child = (j: number, id: bigint): Child => {
      if (c < children.length && children[c] === id) {
        const k = c++;
        return { kind: below.kind[k]!, hash: below.hash[k]!, chain: below.chain[k], leaf: below.leaf[k]! };
      }
      const rec = was.rec[j];
      switch (was.kind[j]!) {
        case Old.Binary: {
          const hash = (id & 1n) === 0n ? rec!.subarray(0, 32) : rec!.subarray(32, 64);
          if (bytesEqual(hash, empty[h - 1]!)) return { kind: New.Empty, hash, leaf: 0n };
          // A leaf is a chain of its own; a stored inner node is taken as it is.
          if (h === 1) return { kind: New.Single, hash, chain: [hash], leaf: id };
          return { kind: New.Stored, hash, leaf: 0n };
        }
        case Old.Edge: {
          const leaf = was.leaf[j]!;
          if (leaf >> BigInt(h - 1) !== id) break;
          // The old lone leaf's side of a split: its chain is in the edge record.
          const chain: Uint8Array[] = [];
          for (let i = 0; i < h; i++) chain.push(edgeChainAt(rec!, i));
          return { kind: New.Single, hash: chain[h - 1]!, chain, leaf };
        }
      }
      return { kind: New.Empty, hash: empty[h - 1]!, leaf: 0n };
    };
    for (let j = 0; j < n; j++) {
      const p2 = parents[j]! << 1n;
      const l = child(j, p2);
      const r = child(j, p2 + 1n);
      pairs.set(l.hash, j * 64);
      pairs.set(r.hash, j * 64 + 32);
      xs.set(l.hash, j * 32);
      ys.set(r.hash, j * 32);
      const lone = l.kind === New.Empty ? r : r.kind === New.Empty ? l : undefined;
      if (lone === undefined || lone.kind === New.Stored) {
        level.kind[j] = New.Stored;
        binary[j] = true;
        // A lone leaf's chain ends below this binary node: it becomes an edge record.
        if (l.kind === New.Single && h > 1) writeEdge(l.chain!, l.leaf);
        if (r.kind === New.Single && h > 1) writeEdge(r.chain!, r.leaf);
      } else {
        // Both empty, or one lone leaf's chain going on up.
        level.kind[j] = lone.kind;
        level.chain[j] = lone.chain;
        level.leaf[j] = lone.leaf;
      }
    }
    const hashes = await engine.hashMany(xs, ys);
    for (let j = 0; j < n; j++) {
      const hash = hashes.subarray(j * 32, j * 32 + 32);
      level.hash[j] = hash;
      if (level.kind[j] === New.Single) level.chain[j]!.push(hash);
      // An all-empty subtree is recognised by its hash and needs no record.
      if (binary[j]) write(h, parents[j]!, hash, pairs.subarray(j * 64, j * 64 + 64));
    }
    below = level;
  }
  if (below.kind[0] === New.Single) writeEdge(below.chain[0]!, below.leaf[0]!);
  return { root: below.hash[0]!, newNodes };
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
