/**
 * The one place a tree update chooses its walk: the addon's native walk where `walk` has one
 * (tree-walk.ts), else the JavaScript reference walk (reference/). Both take the same sorted,
 * checked input from here and give the same result, which the differential tests compare.
 */
import { copy32 } from "../../../util/bytes.js";
import type { HashEngine } from "../../hash/engine.js";
import type { NodeSource } from "../../../storage/records/node-source.js";
import { NodeWrites, type TreeUpdate } from "../../../storage/records/node-writes.js";
import { PackedIds } from "../format/packed-ids.js";
import { NATIVE_MERKLE_MAX_REMEMBERED, updateMerkleNative } from "../native/merkle-native.js";
import { updatePatriciaNative } from "../native/patricia-native.js";
import { referenceMerkle } from "../reference/merkle.js";
import { referencePatricia } from "../reference/patricia.js";
import { defaultTreeWalk, type TreeWalk } from "./tree-walk.js";

const byId = (a: bigint, b: bigint): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Replaces leaves of a fixed-height Merkle tree (E[0..height] = `empty`) and returns the new root
 * and the records it created; `leaves` maps id → leaf hash. The walk reads only the nodes on the
 * changed paths, one batched lookup per level, and hashes bottom-up (reference/merkle.ts).
 */
export async function updateMerkle(
  engine: HashEngine,
  nodes: NodeSource,
  empty: readonly Uint8Array[],
  oldRoot: Uint8Array,
  oldRootGen: number,
  batchGen: number,
  leaves: ReadonlyMap<bigint, Uint8Array>,
  treeName: string,
  out = new NodeWrites(),
  walk: TreeWalk = defaultTreeWalk(),
): Promise<TreeUpdate> {
  const ids = [...leaves.keys()];
  return updateMerkleWhileHashing(
    engine,
    nodes,
    empty,
    oldRoot,
    oldRootGen,
    batchGen,
    ids,
    ids.map((id) => leaves.get(id)!),
    treeName,
    out,
    walk,
  );
}

/**
 * updateMerkle for leaves whose hashes may still be on their way: `hashes[i]` is the hash of leaf
 * `ids[i]`. The old paths are read (and old edges split) while the leaves are hashed, since only
 * the new paths need their hashes, so the leaf hashing does not delay the tree's first read. The
 * old root's record was written by batch `oldRootGen`; the new records go under `batchGen`.
 */
export async function updateMerkleWhileHashing(
  engine: HashEngine,
  nodes: NodeSource,
  empty: readonly Uint8Array[],
  oldRoot: Uint8Array,
  oldRootGen: number,
  batchGen: number,
  ids: readonly bigint[],
  hashes: readonly Uint8Array[] | Promise<readonly Uint8Array[]>,
  treeName: string,
  out = new NodeWrites(),
  walk: TreeWalk = defaultTreeWalk(),
): Promise<TreeUpdate> {
  // Handled now, awaited after the reads: a failed hashing must not go unhandled meanwhile.
  if (hashes instanceof Promise) void hashes.catch(() => undefined);
  const height = empty.length - 1;
  if (ids.length === 0) return { root: oldRoot, rootGen: oldRootGen, newNodes: out };
  const order = Array.from(ids, (_, i) => i).sort((a, b) => byId(ids[a]!, ids[b]!));
  const remembered = nodes.remember ? Math.min(nodes.rememberedLevels ?? 0, height + 1) : 0;
  const sortedIds = order.map((i) => ids[i]!);
  const sortedHashes = async (): Promise<Uint8Array> => {
    const hashed = await hashes;
    const leafHashes = new Uint8Array(order.length * 32);
    order.forEach((i, k) => leafHashes.set(hashed[i]!, k * 32));
    return leafHashes;
  };
  const native = remembered <= NATIVE_MERKLE_MAX_REMEMBERED ? walk : null;
  if (!native)
    return referenceMerkle(
      engine,
      nodes,
      empty,
      remembered,
      oldRoot,
      oldRootGen,
      batchGen,
      sortedIds,
      sortedHashes,
      treeName,
      out,
    );
  if (sortedIds[0]! < 0n || sortedIds[sortedIds.length - 1]! >> BigInt(height) !== 0n)
    throw new RangeError(`a leaf id does not fit a tree of height ${height}`);
  return updateMerkleNative(
    native,
    engine,
    nodes,
    empty,
    remembered,
    oldRoot,
    oldRootGen,
    batchGen,
    new PackedIds(sortedIds).bytes,
    sortedHashes,
    treeName,
    out,
  );
}

/**
 * Applies `leaves` (id → leaf hash) to the Patricia tree of `height` whose root is `oldRoot` (its
 * record written by batch `oldRootGen`); the new records, added to `out`, go under `batchGen`.
 */
export async function updatePatricia(
  engine: HashEngine,
  nodes: NodeSource,
  height: number,
  oldRoot: Uint8Array,
  oldRootGen: number,
  batchGen: number,
  leaves: ReadonlyMap<bigint, Uint8Array>,
  treeName: string,
  out = new NodeWrites(),
  walk: TreeWalk = defaultTreeWalk(),
): Promise<TreeUpdate> {
  if (leaves.size === 0) return { root: oldRoot, rootGen: oldRootGen, newNodes: out };
  const remembered = nodes.remember ? (nodes.rememberedLevels ?? 0) : 0;
  const sorted = [...leaves.entries()].sort(([a], [b]) => byId(a, b));
  const last = sorted[sorted.length - 1]![0];
  if (sorted[0]![0] < 0n || last >> BigInt(height) !== 0n)
    throw new RangeError(`a leaf id does not fit a tree of height ${height}`);
  if (!walk)
    return referencePatricia(
      engine,
      nodes,
      height,
      remembered,
      oldRoot,
      oldRootGen,
      batchGen,
      sorted,
      treeName,
      out,
    );
  const leafHashes = new Uint8Array(sorted.length * 32);
  for (let i = 0; i < sorted.length; i++) copy32(leafHashes, i * 32, sorted[i]![1], 0);
  return updatePatriciaNative(
    walk,
    engine,
    nodes,
    height,
    remembered,
    oldRoot,
    oldRootGen,
    batchGen,
    new PackedIds(sorted.map(([id]) => id)).bytes,
    leafHashes,
    treeName,
    out,
  );
}
