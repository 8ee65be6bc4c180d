import { bytesEqual } from "../util/bytes.js";
import type { NodeSource } from "./node-source.js";

/**
 * The top levels of each tree, kept in memory from one batch to the next. Every batch changes
 * leaves all over the tree, so it reads and rewrites the nodes near the root each time, and the
 * random reads below them cost ~10 µs each in LevelDB; this cache answers those near the root.
 *
 * It holds one node per position (tree, depth, index) for depths below `levels`: a node written at
 * a position replaces the one there before, so old versions leave on their own and the size is
 * bounded by the tree's shape (at most 2^levels positions per tree), not by the number of batches.
 * Lookups are by hash, like the store's: nodes are content-addressed, so a record found here is
 * the stored record, and a node that is not here is simply read from the store.
 */
/**
 * 18 levels: up to 2^18 positions per tree. For the benchmark's million-vault tree that leaves 2–3
 * store reads per changed leaf instead of ~8, for ~100–200 MB of memory (bench/).
 */
export const DEFAULT_CACHE_LEVELS = 18;

export class TopNodeCache {
  private readonly byHash = new Map<number, Entry>();
  private readonly byPosition = new Map<string, Map<number, Entry>>();

  /** `levels`: how many levels below each root are kept (0 turns the cache off). */
  constructor(readonly levels: number) {}

  get size(): number {
    return this.byHash.size;
  }

  /** The record of a node, if cached. */
  get(hash: Uint8Array): Uint8Array | undefined {
    const e = this.byHash.get(keyOf(hash));
    return e && bytesEqual(e.hash, hash) ? e.record : undefined;
  }

  /**
   * Notes the node at `depth` below the root of `tree` (depth = tree height − node height), at
   * `index` among the nodes of its height. Ignored below the cached levels.
   */
  remember(tree: string, depth: number, index: bigint, hash: Uint8Array, record: Uint8Array): void {
    if (depth >= this.levels) return;
    const slot = `${tree}/${depth}`;
    let level = this.byPosition.get(slot);
    if (!level) this.byPosition.set(slot, (level = new Map()));
    const at = Number(index);
    const old = level.get(at);
    if (old) {
      if (bytesEqual(old.hash, hash)) return;
      if (this.byHash.get(old.key) === old) this.byHash.delete(old.key);
    }
    // Views, not copies: the buffers they share are the top levels' own (a few KiB to a few MiB).
    const e: Entry = { key: keyOf(hash), hash, record };
    level.set(at, e);
    this.byHash.set(e.key, e);
  }

  /** The store seen through the cache: cached records come from memory, the rest in one lookup. */
  over(source: NodeSource): NodeSource {
    return {
      getNodes: async (hashes) => {
        const out = hashes.map((h) => this.get(h));
        const missing: number[] = [];
        out.forEach((r, i) => r === undefined && missing.push(i));
        if (missing.length === 0) return out;
        const found = await source.getNodes(missing.map((i) => hashes[i]!));
        missing.forEach((i, k) => (out[i] = found[k]));
        return out;
      },
      remember: (tree, depth, index, hash, record) => this.remember(tree, depth, index, hash, record),
    };
  }
}

interface Entry {
  readonly key: number;
  readonly hash: Uint8Array;
  readonly record: Uint8Array;
}

/** 48 bits of the hash: hashes are uniformly spread, and a hit is confirmed on all 32 bytes. */
function keyOf(hash: Uint8Array): number {
  return (
    ((hash[26]! << 16) | (hash[27]! << 8) | hash[28]!) * 0x1000000 +
    ((hash[29]! << 16) | (hash[30]! << 8) | hash[31]!)
  );
}
