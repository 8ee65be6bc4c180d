import type { HashEngine } from "../../hash/engine.js";
import type { NodeSource } from "../../../storage/records/node-source.js";
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

/** The addon's Patricia update (native/trees/patricia_napi.c). */
export interface NativePatricia {
  patriciaCreate(
    height: number,
    remembered: number,
    ids: Uint8Array,
    leafHashes: Uint8Array,
    oldRoot: Uint8Array,
    /** The gen of the old root's record, and the gen the new records are written under. */
    oldRootGen: number,
    batchGen: number,
    /** The addon's node cache to consult (NodeSource.nativeCache), and the tree's id there. */
    cache?: object,
    tree?: number,
  ): Handle;
  /**
   * null when the new tree is built; else the records it needs (with a cache, those it does not
   * hold): hashes, (depth, index) each, and gens.
   */
  patriciaStep(h: Handle): NativeNeeds | null;
  /** Those records back to back, with their lengths (MISSING_RECORD: not in the store). */
  patriciaSupply(h: Handle, records: Uint8Array, lengths: Uint32Array): void;
  patriciaRanks(h: Handle): number;
  patriciaRankInputs(h: Handle, rank: number): [Uint8Array, Uint8Array];
  patriciaRankHashes(h: Handle, rank: number, hashes: Uint8Array): void;
  /** The root and its gen, and the new nodes: hashes, records back to back, lengths, (depth, index) each. */
  patriciaResult(h: Handle): NativeResult;
  patriciaFree(h: Handle): void;
}

/**
 * referencePatricia (reference/patricia.ts) with the walk and the node building in native code.
 * This side reads the records the walk asks for, one getNodes per round (the node cache answers
 * most of them), and hashes each rank of new nodes with the engine; the addon keeps the tree's
 * shape in flat arrays, so the walk makes no JavaScript object per node. `ids` are sorted, 32 bytes each.
 */
export async function updatePatriciaNative(
  native: NativePatricia,
  engine: HashEngine,
  nodes: NodeSource,
  height: number,
  remembered: number,
  oldRoot: Uint8Array,
  oldRootGen: number,
  batchGen: number,
  ids: Uint8Array,
  leafHashes: Uint8Array,
  treeName: string,
  out: NodeWrites,
): Promise<TreeUpdate> {
  const link = nodes.nativeCache;
  const handle = native.patriciaCreate(
    height,
    remembered,
    ids,
    leafHashes,
    oldRoot,
    oldRootGen,
    batchGen,
    link?.handle,
    link?.treeId(treeName),
  );
  try {
    const step = () => asStoreError(treeName, () => native.patriciaStep(handle));
    const supply = (records: Uint8Array, lengths: Uint32Array) =>
      native.patriciaSupply(handle, records, lengths);
    for (let needs = step(); needs; needs = step()) await readRecords(nodes, needs, treeName, supply);
    const ranks = native.patriciaRanks(handle);
    for (let r = 1; r <= ranks; r++) {
      const [xs, ys] = native.patriciaRankInputs(handle, r);
      native.patriciaRankHashes(handle, r, await engine.hashMany(xs, ys));
    }
    return takeResult(native.patriciaResult(handle), out, nodes, treeName, remembered, batchGen);
  } finally {
    native.patriciaFree(handle);
  }
}
