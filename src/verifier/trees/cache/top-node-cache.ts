import { MAX_CACHED_RECORD_LENGTH } from "../../../storage/records/node-record.js";
import { ROOT_TOP, type BranchTop, type NodeSource } from "../../../storage/records/node-source.js";

/**
 * A snapshot entry, as node_cache.h's NC_ENTRY_HEAD: depth (1) ‖ index (4, little-endian) ‖ hash
 * (32) ‖ gen (4, little-endian) ‖ record length (1) ‖ record. A chunk holds one tree's entries.
 */
export const SNAPSHOT_ENTRY_HEAD = 42;
/** The room one entry may need. */
export const SNAPSHOT_ENTRY_MAX = SNAPSHOT_ENTRY_HEAD + MAX_CACHED_RECORD_LENGTH;

/**
 * The top levels of each tree, kept in memory from one batch to the next. Every batch changes
 * leaves all over the tree, so it reads and rewrites the nodes near the root each time, and the
 * random reads below them are LevelDB lookups; this cache answers those near the root.
 *
 * It holds one node per position (tree, depth, index) for depths below `levels`: a node written at
 * a position replaces the one there before, so old versions leave on their own and the size is
 * bounded by the trees' shape (at most 2^levels positions per tree), not by the number of batches.
 * Lookups are by hash and gen, like the store's: a record found here is the stored record, and a
 * node that is not here is simply read from the store. The gen must match too: two batches may
 * write the same node, their records naming the children each wrote, and a prune may have taken
 * one copy's children away. Merkle edge records above height 8 (longer than a slot's 72 bytes;
 * one per leaf path's end) are not kept: they are read about once each.
 *
 * Two stores implement it, chosen once where the cache is built (createTopNodeCache in
 * node-cache.ts): the JavaScript one (js-node-cache.ts) and, where the addon is loaded, the same
 * cache in native code (native/native-node-cache.ts, native/trees/node_cache.c), which the native
 * walks consult themselves.
 */
export interface TopNodeCache {
  /** How many levels below each tree's top are kept (0: the cache is off). */
  readonly levels: number;
  /** The node bound. */
  readonly maxNodes: number;
  /** Whether the cache lives in the native addon. */
  readonly isNative: boolean;
  /** The nodes held. */
  readonly size: number;
  /** Whether the node bound is reached: a new position then takes a deeper node's slot, or none. */
  readonly full: boolean;
  /** Whether the cache can export and import its nodes (an addon built before that cannot). */
  readonly canSnapshot: boolean;
  /**
   * Where the cached levels of `tree` start: the node at `depth` below the root, `index` among the
   * nodes of its height (the tree's first branch, branch-top.ts). Positions the walks report are
   * then counted from there: depth 0 is that node, and only the nodes below it are kept. Set before
   * the tree's first update or warm-up; set again (a new branch), the tree's cached nodes are
   * forgotten, since their positions no longer mean the same nodes.
   */
  setTop(tree: string, depth: number, index: bigint): void;
  /** Where the cached levels of `tree` start (setTop); the root when never set. */
  topOf(tree: string): BranchTop;
  /**
   * The nodes at `tree`'s positions as snapshot entries, in chunks of at most `chunkBytes`, depth
   * by depth. A chunk is valid until the next is asked for (one buffer is reused).
   */
  snapshotChunks(tree: string, chunkBytes: number): Generator<Uint8Array>;
  /**
   * Keeps snapshot entries of `tree` (snapshotChunks') at their positions, as remember does (so the
   * levels and the node bound apply), but those of a gen above `maxGen` and those whose position
   * holds a node of a later gen (a batch's, run meanwhile). The entries read.
   */
  importEntries(tree: string, entries: Uint8Array, maxGen: number): number;
  /** The record of a node of this gen, if cached. */
  get(hash: Uint8Array, gen: number): Uint8Array | undefined;
  /**
   * Notes the node at `depth` below the root of `tree` (depth = tree height − node height), at
   * `index` among the nodes of its height, and its record's gen. Ignored below the cached levels
   * and for long records.
   */
  remember(
    tree: string,
    depth: number,
    index: number,
    hash: Uint8Array,
    gen: number,
    record: Uint8Array,
  ): void;
  /**
   * Notes many nodes (remember), packed: hash i at 32i of `hashes`, gen i in `gens`, the records
   * back to back. The native walks hand over their new nodes so, without a view per node.
   */
  rememberPacked(
    tree: string,
    hashes: Uint8Array,
    gens: Uint32Array,
    records: Uint8Array,
    lengths: Uint32Array,
    positions: Int32Array,
  ): void;
  /** The store seen through the cache: cached records come from memory, the rest in one lookup. */
  over(source: NodeSource): NodeSource;
}

/** What both stores share: the checks on their bounds, the branch tops, snapshots' chunking, views. */
export abstract class TopNodeCacheBase implements TopNodeCache {
  abstract readonly isNative: boolean;
  abstract readonly size: number;
  abstract readonly canSnapshot: boolean;
  private readonly tops = new Map<string, BranchTop>();
  private readonly views = new WeakMap<NodeSource, NodeSource>();

  constructor(
    readonly levels: number,
    readonly maxNodes = Infinity,
  ) {
    // 2^levels positions per depth array, and positions must be exact small integers.
    if (!Number.isInteger(levels) || levels < 0 || levels > 30)
      throw new RangeError(`node cache levels must be an integer in 0..30, got ${levels}`);
    if (!(maxNodes >= 0)) throw new RangeError(`node cache nodes must be 0 or more, got ${maxNodes}`);
  }

  abstract importEntries(tree: string, entries: Uint8Array, maxGen: number): number;
  abstract get(hash: Uint8Array, gen: number): Uint8Array | undefined;
  abstract remember(
    tree: string,
    depth: number,
    index: number,
    hash: Uint8Array,
    gen: number,
    record: Uint8Array,
  ): void;
  abstract rememberPacked(
    tree: string,
    hashes: Uint8Array,
    gens: Uint32Array,
    records: Uint8Array,
    lengths: Uint32Array,
    positions: Int32Array,
  ): void;
  /**
   * Drops every position of `tree`; its nodes stay findable by hash until new positions take their
   * slots, which they do before any other.
   */
  protected abstract forget(tree: string): void;
  /** nc_export: the tree's entries from `cursor` (depth, index; moved on) into `out`; the bytes. */
  protected abstract exportChunk(tree: string, cursor: Int32Array, out: Uint8Array): number;
  /** The view's calls particular to this store (getPacked, or the native walks' link). */
  protected abstract viewCalls(source: NodeSource): Pick<NodeSource, "getPacked" | "nativeCache">;

  setTop(tree: string, depth: number, index: bigint): void {
    const was = this.topOf(tree);
    if (was.depth === depth && was.index === index) return;
    this.tops.set(tree, { depth, index });
    this.forget(tree);
  }

  topOf(tree: string): BranchTop {
    return this.tops.get(tree) ?? ROOT_TOP;
  }

  get full(): boolean {
    return this.size >= this.maxNodes;
  }

  *snapshotChunks(tree: string, chunkBytes: number): Generator<Uint8Array> {
    const out = new Uint8Array(Math.max(chunkBytes, SNAPSHOT_ENTRY_MAX));
    const cursor = new Int32Array(2);
    while (cursor[0]! < this.levels) {
      const bytes = this.exportChunk(tree, cursor, out);
      if (bytes > 0) yield out.subarray(0, bytes);
    }
  }

  /**
   * One view per source, made once: the trees' optimized code inlines these functions, and a new
   * view per batch would be new closures that throw that code away every batch, and the
   * recompiles take CPU from the batch.
   */
  over(source: NodeSource): NodeSource {
    let view = this.views.get(source);
    if (!view) this.views.set(source, (view = this.makeView(source)));
    return view;
  }

  private makeView(source: NodeSource): NodeSource {
    return {
      getNodes: (hashes, gens) => this.getNodes(source, hashes, gens),
      getCached: (hash, gen) => this.get(hash, gen),
      rememberedLevels: this.levels,
      rememberedTop: (tree) => this.topOf(tree),
      remember: (tree, depth, index, hash, gen, record) =>
        this.remember(tree, depth, index, hash, gen, record),
      rememberPacked: (tree, hashes, gens, records, lengths, positions) =>
        this.rememberPacked(tree, hashes, gens, records, lengths, positions),
      ...this.viewCalls(source),
    };
  }

  /**
   * Cached records at once, the rest in one lookup in `source`. Loops rather than array callbacks:
   * callbacks made per call would be compiled again in every batch.
   */
  private async getNodes(
    source: NodeSource,
    hashes: readonly Uint8Array[],
    gens: ArrayLike<number>,
  ): Promise<(Uint8Array | undefined)[]> {
    const n = hashes.length;
    const out = new Array<Uint8Array | undefined>(n);
    const missing: number[] = [];
    for (let i = 0; i < n; i++) if ((out[i] = this.get(hashes[i]!, gens[i]!)) === undefined) missing.push(i);
    if (missing.length === 0) return out;
    const wanted = new Array<Uint8Array>(missing.length);
    const wantedGens = new Uint32Array(missing.length);
    for (let k = 0; k < missing.length; k++) {
      wanted[k] = hashes[missing[k]!]!;
      wantedGens[k] = gens[missing[k]!]!;
    }
    const found = await source.getNodes(wanted, wantedGens);
    for (let k = 0; k < missing.length; k++) out[missing[k]!] = found[k];
    return out;
  }
}
