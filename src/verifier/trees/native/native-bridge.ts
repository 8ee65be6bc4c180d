/** What both native walks share: reading the records they ask for, and taking their results. */
import { DacdError } from "../../../errors.js";
import { MISSING_RECORD, type NodeSource, type PackedNodes } from "../../../storage/records/node-source.js";
import type { NodeWrites, TreeUpdate } from "../../../storage/records/node-writes.js";

/** The addon's error codes for a missing or corrupt record, which the JavaScript walks report as STORE errors. */
const STORE_CODES = new Set(["ERR_PATRICIA_STORE", "ERR_MERKLE_STORE"]);

/** Calls the addon, turning a missing or corrupt record into the store error the JavaScript walks give. */
export function asStoreError<T>(treeName: string, call: () => T): T {
  try {
    return call();
  } catch (err) {
    if (STORE_CODES.has((err as { code?: string }).code ?? ""))
      throw new DacdError("STORE", `${treeName} tree: ${(err as Error).message}`);
    throw err;
  }
}

/** What a native walk's step asks for: hashes (32 bytes each), positions (depth, index each), gens. */
export type NativeNeeds = [Uint8Array, Int32Array, Uint32Array];

/**
 * Reads the records a native walk asked for (hashes, positions: depth and index each, and gens),
 * hands them to `supply` back to back with their lengths, and then remembers those the cache does
 * not hold at their position. The addon checks every record first: a corrupt one fails the update
 * and is not remembered.
 */
export async function readRecords(
  nodes: NodeSource,
  [hashes, positions, gens]: NativeNeeds,
  treeName: string,
  supply: (records: Uint8Array, lengths: Uint32Array) => void,
): Promise<void> {
  if (nodes.nativeCache) {
    // The walk asked only for what the addon's cache does not hold, and keeps what it reads there.
    const read = await packed(nodes.nativeCache.readStore, hashes, gens);
    asStoreError(treeName, () => supply(read.records, read.lengths));
    return;
  }
  const { records, lengths, unplaced } = nodes.getPacked
    ? await nodes.getPacked(treeName, hashes, positions, gens)
    : await packed((wanted, wantedGens) => nodes.getNodes(wanted, wantedGens), hashes, gens);
  asStoreError(treeName, () => supply(records, lengths));
  if (!nodes.remember) return;
  // The cache's own are at their positions already.
  for (let i = 0, k = 0, at = 0; k < unplaced.length; i++) {
    const length = lengths[i] === MISSING_RECORD ? 0 : lengths[i]!;
    if (i === unplaced[k]) {
      k++;
      const index = positions[2 * i + 1]!;
      if (index >= 0)
        nodes.remember(
          treeName,
          positions[2 * i]!,
          index,
          hashes.subarray(i * 32, i * 32 + 32),
          gens[i]!,
          records.subarray(at, at + length),
        );
    }
    at += length;
  }
}

/** NodeSource.getPacked for a source without it: one getNodes, packed (every record unplaced). */
async function packed(
  getNodes: (hashes: readonly Uint8Array[], gens: ArrayLike<number>) => Promise<(Uint8Array | undefined)[]>,
  hashes: Uint8Array,
  gens: Uint32Array,
): Promise<PackedNodes> {
  const n = hashes.length / 32;
  const wanted = new Array<Uint8Array>(n);
  for (let i = 0; i < n; i++) wanted[i] = hashes.subarray(i * 32, i * 32 + 32);
  const found = await getNodes(wanted, gens);
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
  return { records, lengths, unplaced: Array.from(wanted.keys()) };
}

/**
 * A native walk's result: the root and its record's gen, and the new nodes' hashes, records back
 * to back, lengths and positions; then how many of its reads the addon's node cache answered (0
 * without one). The new nodes' records are the batch's, all of its gen.
 */
export type NativeResult = [Uint8Array, number, Uint8Array, Uint8Array, Uint32Array, Int32Array, number];

/** Adds a native walk's new nodes to `out`, tells the cache about them, and returns the new root. */
export function takeResult(
  [root, rootGen, hashes, records, lengths, positions, cacheHits]: NativeResult,
  out: NodeWrites,
  nodes: NodeSource,
  treeName: string,
  remembered: number,
  batchGen: number,
): TreeUpdate {
  out.addAll(hashes, records, lengths);
  // A walk linked to the addon's cache has put its new nodes there itself.
  if (nodes.nativeCache) nodes.nativeCache.noteHits?.(cacheHits);
  else if (remembered > 0) rememberNewNodes(nodes, treeName, hashes, batchGen, records, lengths, positions);
  return { root, rootGen, newNodes: out };
}

/** Tells the cache where a native walk's new nodes at its levels sit (positions with an index). */
function rememberNewNodes(
  nodes: NodeSource,
  treeName: string,
  hashes: Uint8Array,
  batchGen: number,
  records: Uint8Array,
  lengths: Uint32Array,
  positions: Int32Array,
): void {
  if (nodes.rememberPacked)
    return nodes.rememberPacked(
      treeName,
      hashes,
      new Uint32Array(lengths.length).fill(batchGen),
      records,
      lengths,
      positions,
    );
  for (let i = 0, at = 0; i < lengths.length; at += lengths[i]!, i++) {
    const index = positions[2 * i + 1]!;
    if (index >= 0)
      nodes.remember!(
        treeName,
        positions[2 * i]!,
        index,
        hashes.subarray(i * 32, i * 32 + 32),
        batchGen,
        records.subarray(at, at + lengths[i]!),
      );
  }
}
