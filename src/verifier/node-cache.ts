import type { NodeSource } from "./node-source.js";

/**
 * 18 levels: up to 2^18 positions per tree. For the benchmark's million-vault tree that leaves 2–3
 * store reads per changed leaf instead of ~8, for under 100 MB of memory (bench/).
 */
export const DEFAULT_CACHE_LEVELS = 18;

/** A slot: hash (32) ‖ record length (1) ‖ record (up to 65: binary nodes and Patricia edges). */
const SLOT = 98;
const MAX_RECORD = SLOT - 33;

/**
 * The top levels of each tree, kept in memory from one batch to the next. Every batch changes
 * leaves all over the tree, so it reads and rewrites the nodes near the root each time, and the
 * random reads below them cost ~10–25 µs each in LevelDB; this cache answers those near the root.
 *
 * It holds one node per position (tree, depth, index) for depths below `levels`: a node written at
 * a position replaces the one there before, so old versions leave on their own and the size is
 * bounded by the trees' shape (at most 2^levels positions per tree), not by the number of batches.
 * Lookups are by hash, like the store's: nodes are content-addressed, so a record found here is
 * the stored record, and a node that is not here is simply read from the store. Merkle edge records
 * (up to 1.5 KiB, one per leaf path's end) are not kept: they are read about once each.
 *
 * Nodes live in one slab of fixed-size slots indexed by small integers, so a million cached nodes
 * are a few large buffers rather than millions of objects for the garbage collector to trace.
 */
export class TopNodeCache {
  private slab = new Uint8Array(0);
  private used = 0;
  /** 30 bits of the hash → slot (a hit is confirmed on all 32 bytes). */
  private readonly byHash = new Map<number, number>();
  /** tree → depth → index → slot. */
  private readonly byPosition = new Map<string, Map<number, number>[]>();

  /** `levels`: how many levels below each root are kept (0 turns the cache off). */
  constructor(readonly levels: number) {}

  get size(): number {
    return this.used;
  }

  /** The record of a node, if cached. */
  get(hash: Uint8Array): Uint8Array | undefined {
    const slot = this.byHash.get(keyAt(hash, 0));
    if (slot === undefined || !this.holds(slot, hash)) return undefined;
    const at = slot * SLOT;
    // A copy: the slot may be overwritten by a newer node at its position, and the slab regrown.
    return this.slab.slice(at + 33, at + 33 + this.slab[at + 32]!);
  }

  /**
   * Notes the node at `depth` below the root of `tree` (depth = tree height − node height), at
   * `index` among the nodes of its height. Ignored below the cached levels and for long records.
   */
  remember(tree: string, depth: number, index: bigint, hash: Uint8Array, record: Uint8Array): void {
    if (depth >= this.levels || record.length > MAX_RECORD) return;
    let levels = this.byPosition.get(tree);
    if (!levels) this.byPosition.set(tree, (levels = []));
    const level = (levels[depth] ??= new Map());
    const at = Number(index);
    let slot = level.get(at);
    if (slot !== undefined) {
      if (this.holds(slot, hash)) return;
      const oldKey = keyAt(this.slab, slot * SLOT);
      if (this.byHash.get(oldKey) === slot) this.byHash.delete(oldKey);
    } else {
      slot = this.allocate();
      level.set(at, slot);
    }
    const slab = this.slab;
    const base = slot * SLOT;
    for (let i = 0; i < 32; i++) slab[base + i] = hash[i]!;
    slab[base + 32] = record.length;
    for (let i = 0; i < record.length; i++) slab[base + 33 + i] = record[i]!;
    this.byHash.set(keyAt(hash, 0), slot);
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

  private holds(slot: number, hash: Uint8Array): boolean {
    const base = slot * SLOT;
    for (let i = 0; i < 32; i++) if (this.slab[base + i] !== hash[i]) return false;
    return true;
  }

  /** Slots are never freed: a position, once used, keeps its slot for each newer node there. */
  private allocate(): number {
    if ((this.used + 1) * SLOT > this.slab.length) {
      const grown = new Uint8Array(Math.max(1024 * SLOT, this.slab.length * 2));
      grown.set(this.slab);
      this.slab = grown;
    }
    return this.used++;
  }
}

/** 30 bits of the hash at `off`: a small integer key, which V8's maps handle fastest. */
function keyAt(bytes: Uint8Array, off: number): number {
  return (
    ((bytes[off + 28]! & 0x3f) << 24) | (bytes[off + 29]! << 16) | (bytes[off + 30]! << 8) | bytes[off + 31]!
  );
}
