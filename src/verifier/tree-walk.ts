import { DacdError } from "../errors.js";
import { loadNativeAddon } from "./hash/native-engine.js";
import type { NativeMerkle } from "./merkle-native.js";
import { MISSING_RECORD, type NodeSource, type PackedNodes } from "./node-source.js";
import type { NodeWrites } from "./node-writes.js";
import type { NativePatricia } from "./patricia-native.js";

/** The native addon's tree walks (native/trees/, built into the Pedersen addon). */
export interface NativeTreeWalks extends NativePatricia, NativeMerkle {}

export type TreeWalkName = "native" | "js";

/**
 * The tree walks to use: `DACD_TREE_WALK` (native | js) forces one; otherwise (auto) the native
 * walks wherever the addon loads. Forced native without the addon is an error rather than a silent
 * JavaScript walk. The JavaScript walks (merkle.ts, patricia.ts) stay as the fallback and the reference.
 */
export function nativeTreeWalks(env: NodeJS.ProcessEnv = process.env): NativeTreeWalks | null {
  const forced = env.DACD_TREE_WALK?.trim() || "auto";
  if (forced !== "native" && forced !== "js" && forced !== "auto")
    throw new DacdError("CONFIG", `DACD_TREE_WALK must be native, js or auto, got ${forced}`);
  if (forced === "js") return null;
  const addon = loadNativeAddon() as unknown as Partial<NativeTreeWalks> | null;
  const native =
    addon && typeof addon.patriciaCreate === "function" && typeof addon.merkleCreate === "function"
      ? (addon as NativeTreeWalks)
      : null;
  if (forced === "native" && !native)
    throw new DacdError(
      "CONFIG",
      "DACD_TREE_WALK=native, but the native addon is not built or lacks the walks",
    );
  return native;
}

/** Which walks the tree updates take here, for the start-up log. */
export function treeWalkName(env: NodeJS.ProcessEnv = process.env): TreeWalkName {
  return nativeTreeWalks(env) ? "native" : "js";
}

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

/**
 * Reads the records a native walk asked for (hashes, and positions: depth and index each), hands
 * them to `supply` back to back with their lengths, and then remembers those the cache does not
 * hold at their position. The addon checks every record first: a corrupt one fails the update and is not remembered.
 */
export async function readRecords(
  nodes: NodeSource,
  [hashes, positions]: [Uint8Array, Int32Array],
  treeName: string,
  supply: (records: Uint8Array, lengths: Uint32Array) => void,
): Promise<void> {
  const { records, lengths, unplaced } = nodes.getPacked
    ? await nodes.getPacked(treeName, hashes, positions)
    : await getPacked(nodes, hashes);
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
          records.subarray(at, at + length),
        );
    }
    at += length;
  }
}

/** NodeSource.getPacked for a source without it: one getNodes, packed (every record unplaced). */
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
  return { records, lengths, unplaced: Array.from(wanted.keys()) };
}

/** A native walk's result: the root, and the new nodes' hashes, records back to back, lengths and positions. */
export type NativeResult = [Uint8Array, Uint8Array, Uint8Array, Uint32Array, Int32Array];

/** Adds a native walk's new nodes to `out`, tells the cache about them, and returns the new root. */
export function takeResult(
  [root, hashes, records, lengths, positions]: NativeResult,
  out: NodeWrites,
  nodes: NodeSource,
  treeName: string,
  remembered: number,
): Uint8Array {
  out.addAll(hashes, records, lengths);
  if (remembered > 0) rememberNewNodes(nodes, treeName, hashes, records, lengths, positions);
  return root;
}

/** Tells the cache where a native walk's new nodes at its levels sit (positions with an index). */
function rememberNewNodes(
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
