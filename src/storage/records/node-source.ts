/**
 * How trees read the nodes they did not compute in this batch. Nodes are content-addressed: a node
 * is named by its 32-byte hash and the gen of its record (the id of the batch that wrote it, which
 * leads the store's key), the record its children (node-record.ts).
 */
export interface NodeSource {
  /** Looks up many nodes (`hashes[i]` of gen `gens[i]`) in one round trip; `undefined` where a node is unknown. */
  getNodes(hashes: readonly Uint8Array[], gens: ArrayLike<number>): Promise<(Uint8Array | undefined)[]>;
  /** A node's record if it is at hand in memory (a cache), without waiting; undefined otherwise. */
  getCached?(hash: Uint8Array, gen: number): Uint8Array | undefined;
  /** How many levels below each tree's top (rememberedTop) `remember` keeps (0 or absent: none). */
  readonly rememberedLevels?: number;
  /**
   * Where a tree's remembered levels start (absent: at the root). Positions handed to `remember`,
   * `getPacked` and the native cache are then counted from that node: depth below it, index among
   * the nodes of that depth under it; a node outside it, or above it, has no position (index −1).
   */
  rememberedTop?(tree: string): BranchTop;
  /**
   * Told where a node read or written by a tree update sits (depth below the root of `tree`, index
   * among the nodes of its height) and its record's gen, so that a cache of the top levels can keep
   * it (node-cache.ts). Tree updates call it only for depths below `rememberedLevels`, so the index
   * is a small number.
   */
  remember?(
    tree: string,
    depth: number,
    index: number,
    hash: Uint8Array,
    gen: number,
    record: Uint8Array,
  ): void;
  /**
   * getNodes for nodes of `tree` whose positions are known (the native walks'): `hashes` n × 32
   * bytes, `positions` (depth, index) each (index −1: below the remembered levels), `gens` one
   * each. Optional; a cache answers from its positions without a view per record.
   */
  getPacked?(
    tree: string,
    hashes: Uint8Array,
    positions: Int32Array,
    gens: Uint32Array,
  ): Promise<PackedNodes>;
  /**
   * remember for many nodes, packed as PackedNodes with hashes n × 32 bytes and one gen each;
   * index −1 is skipped.
   */
  rememberPacked?(
    tree: string,
    hashes: Uint8Array,
    gens: Uint32Array,
    records: Uint8Array,
    lengths: Uint32Array,
    positions: Int32Array,
  ): void;
  /**
   * The node cache inside the native addon, when the cache is there (native-node-cache.ts): the
   * native walks consult it themselves, and read only the records it does not hold, through the
   * link's readStore rather than getNodes or getPacked.
   */
  readonly nativeCache?: NativeCacheLink;
}

/** What a native walk is handed to consult the addon's node cache (NodeSource.nativeCache). */
export interface NativeCacheLink {
  /** The addon's cache (an opaque handle). */
  readonly handle: object;
  /** The small id the cache keeps a tree's positions under. */
  treeId(tree: string): number;
  /** Reads records from the store behind the cache: the ones the cache does not hold. */
  readStore(hashes: readonly Uint8Array[], gens: ArrayLike<number>): Promise<(Uint8Array | undefined)[]>;
  /** Told how many of a walk's reads the cache answered (for statistics). */
  noteHits?(count: number): void;
}

/** The length of a record that is not there, in PackedNodes. */
export const MISSING_RECORD = 0xffffffff;

/** Records looked up together: back to back in `records`, record i `lengths[i]` bytes long (or MISSING_RECORD). */
export interface PackedNodes {
  readonly records: Uint8Array;
  readonly lengths: Uint32Array;
  /**
   * The indices, ascending, of the records not found at their own position in a cache (read from
   * the store, or found under another position), which the caller remembers at theirs.
   */
  readonly unplaced: readonly number[];
}

/** A node record to be stored under its hash. */
export interface NodeWrite {
  readonly hash: Uint8Array;
  readonly record: Uint8Array;
}

/**
 * Records laid out flat: record i is `records[from[i], to[i])`, stored under the hash at
 * `hashes[32i, 32i + 32)`.
 */
export interface PackedRecords {
  readonly hashes: Uint8Array;
  /** A plain Uint8Array: a Buffer's subarray would construct a Buffer per record. */
  readonly records: Uint8Array;
  readonly from: Uint32Array;
  readonly to: Uint32Array;
}

/** A node of a tree by its depth below the root and its index among the nodes of that depth. */
export interface BranchTop {
  readonly depth: number;
  readonly index: bigint;
}

/** The root: positions counted from it. */
export const ROOT_TOP: BranchTop = { depth: 0, index: 0n };
