import { climbChains, type HashEngine } from "../../hash/engine.js";
import { CHECKPOINT_STEP, packedEmpties } from "../format/merkle-edge.js";
import { ROOT_TOP, type NodeSource } from "../../../storage/records/node-source.js";
import { bigintToBytes32 } from "../../../util/bytes.js";
import type { NodeWrites, TreeUpdate } from "../../../storage/records/node-writes.js";
import {
  asStoreError,
  readRecords,
  takeResult,
  type NativeNeeds,
  type NativeResult,
} from "./native-bridge.js";

/** An update in progress inside the addon (an opaque handle). */
type Handle = object;

/** The addon's Merkle update (native/trees/merkle_napi.c). */
export interface NativeMerkle {
  merkleCreate(
    height: number,
    remembered: number,
    ids: Uint8Array,
    oldRoot: Uint8Array,
    /** The gen of the old root's record, and the gen the new records are written under. */
    oldRootGen: number,
    batchGen: number,
    empty: Uint8Array,
    /** The addon's node cache to consult (NodeSource.nativeCache), and the tree's id there. */
    cache?: object,
    tree?: number,
    /** Where positions count from (NodeSource.rememberedTop): its depth, its index (32 bytes, big-endian). */
    topDepth?: number,
    topIndex?: Uint8Array,
  ): Handle;
  /**
   * null when the old paths are read; else the records it needs (with a cache, those it does not
   * hold): hashes, (depth, index) each, and gens.
   */
  merkleStep(h: Handle): NativeNeeds | null;
  /** Those records back to back, with their lengths (MISSING_RECORD: not in the store). */
  merkleSupply(h: Handle, records: Uint8Array, lengths: Uint32Array): void;
  /** The new paths' shape from the leaf hashes: null, or the chains to climb (starts, paths, from, to, slots). */
  merkleBuild(
    h: Handle,
    leafHashes: Uint8Array,
  ): [Uint8Array, Uint8Array, Uint8Array, Uint8Array, number] | null;
  merkleChainsClimbed(h: Handle, tops: Uint8Array, marks: Uint8Array): void;
  /** null when every level is hashed; else the next level's binary nodes' pairs. */
  merkleNextLevel(h: Handle): [Uint8Array, Uint8Array] | null;
  merkleLevelHashes(h: Handle, hashes: Uint8Array): void;
  /** The root and its gen, and the new nodes: hashes, records back to back, lengths, (depth, index) each. */
  merkleResult(h: Handle): NativeResult;
  merkleFree(h: Handle): void;
}

/** The highest `remembered` the addon takes (positions stay int32). */
export const NATIVE_MERKLE_MAX_REMEMBERED = 30;

/**
 * referenceMerkle (reference/merkle.ts) with the paths' reading and building in native code. This
 * side reads the records the addon asks for (one getNodes per level, top-down), climbs the lone
 * leaves' chains and hashes each level's binary nodes with the engine; the addon keeps the paths
 * in flat arrays, so the update makes no JavaScript object per node. `ids` are sorted, 32 bytes
 * each; `leafHashes` gives their hashes in the same order once the old paths are read.
 */
export async function updateMerkleNative(
  native: NativeMerkle,
  engine: HashEngine,
  nodes: NodeSource,
  empty: readonly Uint8Array[],
  remembered: number,
  oldRoot: Uint8Array,
  oldRootGen: number,
  batchGen: number,
  ids: Uint8Array,
  leafHashes: () => Promise<Uint8Array>,
  treeName: string,
  out: NodeWrites,
): Promise<TreeUpdate> {
  const packedEmpty = packedEmpties(empty);
  const link = nodes.nativeCache;
  const top = nodes.rememberedTop?.(treeName) ?? ROOT_TOP;
  const handle = native.merkleCreate(
    empty.length - 1,
    remembered,
    ids,
    oldRoot,
    oldRootGen,
    batchGen,
    packedEmpty,
    link?.handle,
    link?.treeId(treeName),
    top.depth,
    bigintToBytes32(top.index),
  );
  try {
    const step = () => asStoreError(treeName, () => native.merkleStep(handle));
    const supply = (records: Uint8Array, lengths: Uint32Array) =>
      native.merkleSupply(handle, records, lengths);
    for (let needs = step(); needs; needs = step()) await readRecords(nodes, needs, treeName, supply);
    const job = native.merkleBuild(handle, await leafHashes());
    if (job) {
      const [starts, paths, from, to, slots] = job;
      const climb = { starts, paths, from, to, empty: packedEmpty, step: CHECKPOINT_STEP, slots };
      const { tops, marks } = await climbChains(engine, climb);
      native.merkleChainsClimbed(handle, tops, marks);
    }
    for (let level = native.merkleNextLevel(handle); level; level = native.merkleNextLevel(handle))
      native.merkleLevelHashes(handle, await engine.hashMany(level[0], level[1]));
    return takeResult(native.merkleResult(handle), out, nodes, treeName, remembered, batchGen);
  } finally {
    native.merkleFree(handle);
  }
}
