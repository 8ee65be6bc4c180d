import { DacdError } from "../errors.js";
import { bytesEqual } from "../util/bytes.js";
import type { HashEngine } from "./hash/engine.js";
import { hashPairs } from "./leaves.js";
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

/**
 * Replaces leaves of a fixed-height Merkle tree and returns the new root and the inner nodes it
 * created. It reads only the nodes on the changed paths — one batched lookup per level, top-down —
 * and then hashes bottom-up, one engine call per level with the level's pairs packed into two
 * buffers. Subtrees whose hash is E[k] are known to be empty and are never looked up, so the empty
 * tree needs no stored nodes at all.
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

  // Top-down: the old children (left ‖ right, 64 bytes) of every path node, level by level.
  const oldChildren: Uint8Array[][] = new Array<Uint8Array[]>(height + 1);
  let oldHashes: Uint8Array[] = [oldRoot];
  for (let h = height; h >= 1; h--) {
    const ids = pathIds[h]!;
    const emptyPair = concatPair(empty[h - 1]!, empty[h - 1]!);
    const records: Uint8Array[] = new Array<Uint8Array>(ids.length);
    const toRead: number[] = [];
    for (let j = 0; j < ids.length; j++) {
      if (bytesEqual(oldHashes[j]!, empty[h]!)) records[j] = emptyPair;
      else toRead.push(j);
    }
    const found = await nodes.getNodes(toRead.map((j) => oldHashes[j]!));
    toRead.forEach((j, k) => {
      const rec = found[k];
      if (rec === undefined || rec.length !== 64) {
        throw new DacdError(
          "STORE",
          `${treeName} tree: node at height ${h}, index ${ids[j]} (${Buffer.from(oldHashes[j]!).toString("hex")}) is not in the store`,
        );
      }
      records[j] = rec;
    });
    oldChildren[h] = records;
    // The old hashes of the path nodes one level down, each taken from its parent's record.
    const below = pathIds[h - 1]!;
    const next: Uint8Array[] = new Array<Uint8Array>(below.length);
    for (let c = 0, j = 0; c < below.length; c++) {
      while (ids[j]! !== below[c]! >> 1n) j++;
      const rec = records[j]!;
      next[c] = (below[c]! & 1n) === 0n ? rec.subarray(0, 32) : rec.subarray(32, 64);
    }
    oldHashes = next;
  }

  // Bottom-up: new hashes of every path node, one engine call per level.
  const newNodes: NodeWrite[] = [];
  let current: Uint8Array[] = leafIds.map((id) => leaves.get(id)!);
  for (let h = 1; h <= height; h++) {
    const parents = pathIds[h]!;
    const children = pathIds[h - 1]!;
    const records = oldChildren[h]!;
    // Each parent's record (left ‖ right) is built in one buffer and doubles as the hash input.
    const pairs = new Uint8Array(parents.length * 64);
    const xs = new Uint8Array(parents.length * 32);
    const ys = new Uint8Array(parents.length * 32);
    for (let j = 0, c = 0; j < parents.length; j++) {
      const p2 = parents[j]! << 1n;
      const rec = records[j]!;
      const left = c < children.length && children[c] === p2 ? current[c++]! : rec.subarray(0, 32);
      const right = c < children.length && children[c] === p2 + 1n ? current[c++]! : rec.subarray(32, 64);
      pairs.set(left, j * 64);
      pairs.set(right, j * 64 + 32);
      xs.set(left, j * 32);
      ys.set(right, j * 32);
    }
    const hashes = await engine.hashMany(xs, ys);
    const next: Uint8Array[] = new Array<Uint8Array>(parents.length);
    for (let j = 0; j < parents.length; j++) {
      const hash = hashes.subarray(j * 32, j * 32 + 32);
      next[j] = hash;
      // An all-empty subtree is recognised by its hash and needs no record.
      if (!bytesEqual(hash, empty[h]!)) newNodes.push({ hash, record: pairs.subarray(j * 64, j * 64 + 64) });
    }
    current = next;
  }
  return { root: current[0]!, newNodes };
}

function concatPair(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(64);
  out.set(a, 0);
  out.set(b, 32);
  return out;
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
