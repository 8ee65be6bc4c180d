import type { HashEngine } from "./hash/engine.js";
import type { NodeSource } from "./node-source.js";
import type { NodeWrites } from "./node-writes.js";
import { asStoreError } from "./tree-walk.js";

/** An update in progress inside the addon (an opaque handle). */
type Handle = object;

/** The addon's Patricia update (native/trees/patricia_napi.c, in the Pedersen addon). */
export interface NativePatricia {
  patriciaCreate(
    height: number,
    remembered: number,
    ids: Uint8Array,
    leafHashes: Uint8Array,
    oldRoot: Uint8Array,
  ): Handle;
  /** null when the new tree is built; else the records it needs: hashes, and (depth, index) each. */
  patriciaStep(h: Handle): [Uint8Array, Int32Array] | null;
  /** Those records, RECORD bytes each, with their lengths (0: not found). */
  patriciaSupply(h: Handle, records: Uint8Array, lengths: Uint32Array): void;
  patriciaRanks(h: Handle): number;
  patriciaRankInputs(h: Handle, rank: number): [Uint8Array, Uint8Array];
  patriciaRankHashes(h: Handle, rank: number, hashes: Uint8Array): void;
  /** The root, and the new nodes: hashes, records (RECORD bytes each), lengths, (depth, index) each. */
  patriciaResult(h: Handle): [Uint8Array, Uint8Array, Uint8Array, Uint8Array, Int32Array];
  patriciaFree(h: Handle): void;
}

/** Records cross padded to the longest a Patricia node has (an edge: bottom ‖ path ‖ length). */
const RECORD = 65;

/**
 * updatePatricia (patricia.ts) with the walk and the node building in native code. This side reads
 * the records the walk asks for, one getNodes per round (the node cache answers most of them), and
 * hashes each rank of new nodes with the engine; the addon keeps the tree's shape in flat arrays,
 * so the walk makes no JavaScript object per node. `ids` are sorted, 32 bytes each.
 */
export async function updatePatriciaNative(
  native: NativePatricia,
  engine: HashEngine,
  nodes: NodeSource,
  height: number,
  remembered: number,
  oldRoot: Uint8Array,
  ids: Uint8Array,
  leafHashes: Uint8Array,
  treeName: string,
  out: NodeWrites,
): Promise<Uint8Array> {
  const handle = native.patriciaCreate(height, remembered, ids, leafHashes, oldRoot);
  try {
    const step = () => asStoreError(treeName, () => native.patriciaStep(handle));
    for (let needs = step(); needs; needs = step()) {
      const records = await readRecords(nodes, needs, treeName);
      asStoreError(treeName, () => native.patriciaSupply(handle, records.records, records.lengths));
    }
    const ranks = native.patriciaRanks(handle);
    for (let r = 1; r <= ranks; r++) {
      const [xs, ys] = native.patriciaRankInputs(handle, r);
      native.patriciaRankHashes(handle, r, await engine.hashMany(xs, ys));
    }
    const [root, hashes, records, lengths, positions] = native.patriciaResult(handle);
    for (let i = 0; i < lengths.length; i++) {
      out.add(hashes, i * 32, records, i * RECORD, lengths[i]!);
      const index = positions[2 * i + 1]!;
      if (index >= 0)
        nodes.remember!(
          treeName,
          positions[2 * i]!,
          index,
          hashes.subarray(i * 32, i * 32 + 32),
          records.subarray(i * RECORD, i * RECORD + lengths[i]!),
        );
    }
    return root;
  } finally {
    native.patriciaFree(handle);
  }
}

/** Reads the records a step asked for, padded for the addon, remembering those the cache keeps. */
async function readRecords(
  nodes: NodeSource,
  [hashes, positions]: [Uint8Array, Int32Array],
  treeName: string,
): Promise<{ records: Uint8Array; lengths: Uint32Array }> {
  const n = hashes.length / 32;
  const wanted = new Array<Uint8Array>(n);
  for (let i = 0; i < n; i++) wanted[i] = hashes.subarray(i * 32, i * 32 + 32);
  const found = await nodes.getNodes(wanted);
  const records = new Uint8Array(n * RECORD);
  const lengths = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const rec = found[i];
    if (rec === undefined) continue;
    lengths[i] = rec.length;
    if (rec.length > RECORD) continue; // corrupt: the walk reports its length
    records.set(rec, i * RECORD);
    const index = positions[2 * i + 1]!;
    if (index >= 0 && (rec.length === 64 || rec.length === 65))
      nodes.remember!(treeName, positions[2 * i]!, index, wanted[i]!, rec);
  }
  return { records, lengths };
}
