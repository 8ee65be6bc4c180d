import { DacdError } from "../errors.js";
import { bytesEqual, concatBytes } from "../util/bytes.js";
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
 * and then hashes bottom-up one engine call per level. Subtrees whose hash is E[k] are known to be
 * empty and are never looked up, so the empty tree needs no stored nodes at all.
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

  // Top-down: the old hash of every child of every node on a changed path, level by level.
  // oldChildren[h] maps a node index at height h to its old hash.
  const oldChildren: Map<bigint, Uint8Array>[] = Array.from({ length: height + 1 }, () => new Map());
  oldChildren[height]!.set(0n, oldRoot);
  const leafIds = [...leaves.keys()].sort(byIndex);
  for (let h = height; h >= 1; h--) {
    const pathIds = uniqueShifted(leafIds, h);
    const level = oldChildren[h]!;
    const toRead: bigint[] = [];
    for (const id of pathIds) {
      const hash = level.get(id)!;
      if (bytesEqual(hash, empty[h]!)) {
        oldChildren[h - 1]!.set(2n * id, empty[h - 1]!);
        oldChildren[h - 1]!.set(2n * id + 1n, empty[h - 1]!);
      } else {
        toRead.push(id);
      }
    }
    const records = await nodes.getNodes(toRead.map((id) => level.get(id)!));
    toRead.forEach((id, i) => {
      const rec = records[i];
      if (rec === undefined || rec.length !== 64) {
        throw new DacdError(
          "STORE",
          `${treeName} tree: node at height ${h}, index ${id} (${Buffer.from(level.get(id)!).toString("hex")}) is not in the store`,
        );
      }
      oldChildren[h - 1]!.set(2n * id, rec.subarray(0, 32));
      oldChildren[h - 1]!.set(2n * id + 1n, rec.subarray(32, 64));
    });
  }

  // Bottom-up: new hashes of every node on a changed path, one engine call per level.
  const newNodes: NodeWrite[] = [];
  let current = new Map(leaves);
  for (let h = 1; h <= height; h++) {
    const parentIds = uniqueShifted(leafIds, h);
    const lefts: Uint8Array[] = [];
    const rights: Uint8Array[] = [];
    const below = oldChildren[h - 1]!;
    for (const p of parentIds) {
      lefts.push(current.get(2n * p) ?? below.get(2n * p)!);
      rights.push(current.get(2n * p + 1n) ?? below.get(2n * p + 1n)!);
    }
    const hashes = await hashPairs(engine, lefts, rights);
    const next = new Map<bigint, Uint8Array>();
    parentIds.forEach((p, i) => {
      const hash = hashes[i]!;
      next.set(p, hash);
      // An all-empty subtree is recognised by its hash and needs no record.
      if (!bytesEqual(hash, empty[h]!)) newNodes.push({ hash, record: concatBytes(lefts[i]!, rights[i]!) });
    });
    current = next;
  }
  return { root: current.get(0n)!, newNodes };
}

/** The distinct ancestors at height h of sorted leaf ids, in order. */
function uniqueShifted(sortedIds: readonly bigint[], h: number): bigint[] {
  const out: bigint[] = [];
  const shift = BigInt(h);
  for (const id of sortedIds) {
    const p = id >> shift;
    if (out.length === 0 || out[out.length - 1] !== p) out.push(p);
  }
  return out;
}
