import { readFile, writeFile } from "node:fs/promises";
import type { TreeName } from "../src/model/profile.js";
import type { RootGens, Roots } from "../src/verifier/trees/update/compute-roots.js";
import { PackedIds } from "../src/verifier/trees/format/packed-ids.js";
import { bytesToBigint } from "../src/util/bytes.js";

/** How many of a tree's loaded ids the bench keeps for batches to pick existing leaves from. */
const EXISTING_SAMPLE = 1 << 18;

/**
 * Loaded leaves for batches to pick existing ones from: a uniform sample of at most
 * EXISTING_SAMPLE ids, 8 bytes each where they fit (every tree but the 251-high Patricia order
 * tree). A pick from a uniform sample is a uniform pick among all loaded leaves, and the bench's
 * own bookkeeping stays out of the peak RSS it reports (every id of a 10M-vault state is hundreds of
 * MiB).
 */
export class LoadedIds {
  private constructor(
    /** The ids' bytes: 8 each, native order (BigUint64Array's), or 32 each, big-endian (PackedIds'). */
    private readonly small: BigUint64Array | undefined,
    private readonly packed: PackedIds | undefined,
  ) {}

  /** A sample of `sorted`, drawn with `below` (a uniform index below its argument). */
  static sampled(sorted: readonly bigint[], bits: number, below: (n: number) => number): LoadedIds {
    const kept =
      sorted.length <= EXISTING_SAMPLE
        ? sorted
        : Array.from({ length: EXISTING_SAMPLE }, () => sorted[below(sorted.length)]!);
    return bits <= 64
      ? new LoadedIds(BigUint64Array.from(kept), undefined)
      : new LoadedIds(undefined, new PackedIds(kept));
  }

  get length(): number {
    return this.small ? this.small.length : this.packed!.length;
  }

  at(i: number): bigint {
    return this.small ? this.small[i]! : this.packed!.at(i);
  }

  toJSON(): { small: boolean; bytes: string } {
    const bytes = this.small ? new Uint8Array(this.small.buffer) : this.packed!.bytes;
    return { small: this.small !== undefined, bytes: Buffer.from(bytes).toString("base64") };
  }

  static fromJSON(json: { small: boolean; bytes: string }): LoadedIds {
    const bytes = new Uint8Array(Buffer.from(json.bytes, "base64"));
    if (json.small)
      return new LoadedIds(new BigUint64Array(bytes.buffer, bytes.byteOffset, bytes.length / 8), undefined);
    const ids = Array.from({ length: bytes.length / 32 }, (_, i) => bytesToBigint(bytes, 32 * i));
    return new LoadedIds(undefined, new PackedIds(ids));
  }
}

/**
 * A workload's state as its bulk load left it, for batches run by another process (bench/scale.ts:
 * a member loads with `dacd escape load` and signs in the daemon, so the signing process's memory
 * holds nothing of the load's).
 */
export interface LoadedState {
  /** The store's directory, closed. */
  dir: string;
  roots: Roots;
  gens: RootGens;
  ids: Map<TreeName, LoadedIds>;
  bulkLoadS: number;
}

export async function writeLoadedState(path: string, state: LoadedState): Promise<void> {
  const roots = Object.fromEntries(
    Object.entries(state.roots).map(([tree, root]) => [tree, Buffer.from(root).toString("hex")]),
  );
  const json = { ...state, roots, ids: Object.fromEntries(state.ids) };
  await writeFile(path, JSON.stringify(json));
}

export async function readLoadedState(path: string): Promise<LoadedState> {
  const json = JSON.parse(await readFile(path, "utf8")) as {
    dir: string;
    roots: Record<string, string>;
    gens: RootGens;
    ids: Record<string, { small: boolean; bytes: string }>;
    bulkLoadS: number;
  };
  return {
    dir: json.dir,
    roots: Object.fromEntries(
      Object.entries(json.roots).map(([tree, hex]) => [tree, new Uint8Array(Buffer.from(hex, "hex"))]),
    ) as Roots,
    gens: json.gens,
    ids: new Map(Object.entries(json.ids).map(([tree, ids]) => [tree as TreeName, LoadedIds.fromJSON(ids)])),
    bulkLoadS: json.bulkLoadS,
  };
}
