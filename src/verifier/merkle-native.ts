import { climbChains, type HashEngine } from "./hash/engine.js";
import { CHECKPOINT_STEP, packedEmpties } from "./merkle-edge.js";
import { MISSING_RECORD, type NodeSource, type PackedNodes } from "./node-source.js";
import type { NodeWrites } from "./node-writes.js";
import { asStoreError } from "./tree-walk.js";

/** An update in progress inside the addon (an opaque handle). */
type Handle = object;

/** The addon's Merkle update (native/trees/merkle_napi.c, in the Pedersen addon). */
export interface NativeMerkle {
  merkleCreate(
    height: number,
    remembered: number,
    ids: Uint8Array,
    oldRoot: Uint8Array,
    empty: Uint8Array,
  ): Handle;
  /** null when the old paths are read; else the records it needs: hashes, and (depth, index) each. */
  merkleStep(h: Handle): [Uint8Array, Int32Array] | null;
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
  /** The root, and the new nodes: hashes, records back to back, lengths, (depth, index) each. */
  merkleResult(h: Handle): [Uint8Array, Uint8Array, Uint8Array, Uint32Array, Int32Array];
  merkleFree(h: Handle): void;
}

/** The highest `remembered` the addon takes (positions stay int32). */
export const NATIVE_MERKLE_MAX_REMEMBERED = 30;

/**
 * updateMerkleWhileHashing (merkle.ts) with the paths' reading and building in native code. This
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
  ids: Uint8Array,
  leafHashes: () => Promise<Uint8Array>,
  treeName: string,
  out: NodeWrites,
): Promise<Uint8Array> {
  const packedEmpty = packedEmpties(empty);
  const handle = native.merkleCreate(empty.length - 1, remembered, ids, oldRoot, packedEmpty);
  try {
    const step = () => asStoreError(treeName, () => native.merkleStep(handle));
    for (let needs = step(); needs; needs = step()) await readRecords(native, handle, nodes, needs, treeName);
    const job = native.merkleBuild(handle, await leafHashes());
    if (job) {
      const [starts, paths, from, to, slots] = job;
      const climb = { starts, paths, from, to, empty: packedEmpty, step: CHECKPOINT_STEP, slots };
      const { tops, marks } = await climbChains(engine, climb);
      native.merkleChainsClimbed(handle, tops, marks);
    }
    for (let level = native.merkleNextLevel(handle); level; level = native.merkleNextLevel(handle))
      native.merkleLevelHashes(handle, await engine.hashMany(level[0], level[1]));
    const [root, hashes, records, lengths, positions] = native.merkleResult(handle);
    out.addAll(hashes, records, lengths);
    if (remembered > 0) rememberAll(nodes, treeName, hashes, records, lengths, positions);
    return root;
  } finally {
    native.merkleFree(handle);
  }
}

/** Reads the records a step asked for, supplies them, and remembers those the cache keeps. */
async function readRecords(
  native: NativeMerkle,
  handle: Handle,
  nodes: NodeSource,
  [hashes, positions]: [Uint8Array, Int32Array],
  treeName: string,
): Promise<void> {
  const { records, lengths, fromStore } = nodes.getPacked
    ? await nodes.getPacked(treeName, hashes, positions)
    : await getPacked(nodes, hashes);
  // The addon checks every record first: a corrupt one fails the update and is not remembered.
  asStoreError(treeName, () => native.merkleSupply(handle, records, lengths));
  if (!nodes.remember) return;
  // Those that came from the store (the cache's own are there already), by position.
  for (let i = 0, k = 0, at = 0; k < fromStore.length; i++) {
    const length = lengths[i] === MISSING_RECORD ? 0 : lengths[i]!;
    if (i === fromStore[k]) {
      k++;
      const index = positions[2 * i + 1]!;
      if (index >= 0)
        nodes.remember(
          treeName,
          positions[2 * i]!,
          index,
          hashes.subarray(i * 32, i * 32 + 32),
          records.subarray(at, at + length),
        );
    }
    at += length;
  }
}

/** NodeSource.getPacked for a source without it: one getNodes, packed (every record from the store). */
async function getPacked(nodes: NodeSource, hashes: Uint8Array): Promise<PackedNodes> {
  const n = hashes.length / 32;
  const wanted = new Array<Uint8Array>(n);
  for (let i = 0; i < n; i++) wanted[i] = hashes.subarray(i * 32, i * 32 + 32);
  const found = await nodes.getNodes(wanted);
  const lengths = new Uint32Array(n);
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    lengths[i] = found[i]?.length ?? MISSING_RECORD;
    bytes += found[i]?.length ?? 0;
  }
  const records = new Uint8Array(bytes);
  for (let i = 0, at = 0; i < n; i++) {
    const rec = found[i];
    if (rec === undefined) continue;
    records.set(rec, at);
    at += rec.length;
  }
  return { records, lengths, fromStore: Array.from(wanted.keys()) };
}

/** Tells the cache where the new nodes at its levels sit (positions with an index). */
function rememberAll(
  nodes: NodeSource,
  treeName: string,
  hashes: Uint8Array,
  records: Uint8Array,
  lengths: Uint32Array,
  positions: Int32Array,
): void {
  if (nodes.rememberPacked) return nodes.rememberPacked(treeName, hashes, records, lengths, positions);
  for (let i = 0, at = 0; i < lengths.length; at += lengths[i]!, i++) {
    const index = positions[2 * i + 1]!;
    if (index >= 0)
      nodes.remember!(
        treeName,
        positions[2 * i]!,
        index,
        hashes.subarray(i * 32, i * 32 + 32),
        records.subarray(at, at + lengths[i]!),
      );
  }
}
