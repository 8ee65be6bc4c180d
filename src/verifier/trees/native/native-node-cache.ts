import { nativeJob } from "../../../native/addon.js";
import type { NodeSource } from "../../../storage/records/node-source.js";
import { MAX_CACHED_RECORD_LENGTH } from "../../../storage/records/node-record.js";
import { TopNodeCacheBase } from "../cache/top-node-cache.js";

/** An opaque handle to a cache inside the addon. */
type Handle = object;

/** The addon's node cache (native/trees/node_cache_napi.c). */
export interface NativeNodeCacheAddon {
  nodeCacheCreate(levels: number, maxNodes: number): Handle;
  nodeCacheForget(h: Handle, tree: number): void;
  /** A copy of the record of the node with this hash and gen, or null. */
  nodeCacheGet(h: Handle, hash: Uint8Array, gen: number): Uint8Array | null;
  nodeCacheRemember(
    h: Handle,
    tree: number,
    depth: number,
    index: number,
    hash: Uint8Array,
    gen: number,
    record: Uint8Array,
  ): void;
  nodeCacheRememberPacked(
    h: Handle,
    tree: number,
    hashes: Uint8Array,
    gens: Uint32Array,
    records: Uint8Array,
    lengths: Uint32Array,
    positions: Int32Array,
  ): void;
  nodeCacheSize(h: Handle): number;
}

/** The addon's snapshot calls (missing from an addon built before them: then no snapshot). */
export interface NativeNodeCacheSnapshotAddon {
  /** The tree's positioned nodes from `cursor` (depth, index; moved on) as entries into `out`; the bytes. */
  nodeCacheExport(h: Handle, tree: number, cursor: Int32Array, out: Uint8Array): number;
  /** Keeps the entries of gens up to `maxGen` at their positions; the entries read. */
  nodeCacheImport(h: Handle, tree: number, entries: Uint8Array, maxGen: number): number;
}

/**
 * The addon's node cache, where the addon is loaded and has one; else null (the JavaScript cache).
 * `DACD_NODE_CACHE=js` keeps the cache in JavaScript (to compare, or should the native one fail).
 */
export function nativeNodeCacheAddon(mode: "auto" | "js" = "auto"): NativeNodeCacheAddon | null {
  if (mode === "js") return null;
  return nativeJob<NativeNodeCacheAddon>("nodeCacheCreate", "nodeCacheForget");
}

/**
 * The top node cache (cache/top-node-cache.ts) when the addon is loaded: the cache in native code
 * (node_cache.c), which the native walks are handed (NodeSource.nativeCache) and consult
 * themselves, so that a read or a new node costs a memcmp and a memcpy rather than a JavaScript
 * loop. Tree names become small ids here, the addon's key for their positions.
 */
export class NativeTopNodeCache extends TopNodeCacheBase {
  readonly isNative = true;
  private readonly handle: Handle;
  private readonly trees = new Map<string, number>();
  private readonly snapshots: NativeNodeCacheSnapshotAddon | null;

  constructor(
    private readonly addon: NativeNodeCacheAddon,
    levels: number,
    maxNodes = Infinity,
  ) {
    super(levels, maxNodes);
    this.handle = addon.nodeCacheCreate(levels, maxNodes);
    const calls = addon as Partial<NativeNodeCacheSnapshotAddon>;
    this.snapshots =
      typeof calls.nodeCacheExport === "function" && typeof calls.nodeCacheImport === "function"
        ? (calls as NativeNodeCacheSnapshotAddon)
        : null;
  }

  /** Whether this addon exports and imports snapshot entries. */
  get canSnapshot(): boolean {
    return this.snapshots !== null;
  }

  /** The tree's positioned nodes from `cursor` on, as entries into `out` (nc_export); the bytes. */
  protected exportChunk(tree: string, cursor: Int32Array, out: Uint8Array): number {
    return this.snapshotCalls().nodeCacheExport(this.handle, this.treeId(tree), cursor, out);
  }

  /** Keeps the entries of gens up to `maxGen` at their positions in `tree` (nc_import); the entries read. */
  importEntries(tree: string, entries: Uint8Array, maxGen: number): number {
    return this.snapshotCalls().nodeCacheImport(this.handle, this.treeId(tree), entries, maxGen);
  }

  private snapshotCalls(): NativeNodeCacheSnapshotAddon {
    if (!this.snapshots) throw new Error("this build of the native addon has no node cache snapshots");
    return this.snapshots;
  }

  protected forget(tree: string): void {
    this.addon.nodeCacheForget(this.handle, this.treeId(tree));
  }

  get size(): number {
    return this.addon.nodeCacheSize(this.handle);
  }

  get(hash: Uint8Array, gen: number): Uint8Array | undefined {
    return this.addon.nodeCacheGet(this.handle, hash, gen) ?? undefined;
  }

  remember(
    tree: string,
    depth: number,
    index: number,
    hash: Uint8Array,
    gen: number,
    record: Uint8Array,
  ): void {
    // Checked here too, so that the nodes the cache would ignore cost no call into the addon.
    if (depth >= this.levels || index < 0 || record.length > MAX_CACHED_RECORD_LENGTH) return;
    this.addon.nodeCacheRemember(this.handle, this.treeId(tree), depth, index, hash, gen, record);
  }

  rememberPacked(
    tree: string,
    hashes: Uint8Array,
    gens: Uint32Array,
    records: Uint8Array,
    lengths: Uint32Array,
    positions: Int32Array,
  ): void {
    this.addon.nodeCacheRememberPacked(
      this.handle,
      this.treeId(tree),
      hashes,
      gens,
      records,
      lengths,
      positions,
    );
  }

  /** What the native walks are handed to consult this cache, reading the rest from `source`. */
  protected viewCalls(source: NodeSource): Pick<NodeSource, "nativeCache"> {
    return {
      nativeCache: {
        handle: this.handle,
        treeId: (tree) => this.treeId(tree),
        readStore: (hashes, gens) => source.getNodes(hashes, gens),
      },
    };
  }

  private treeId(tree: string): number {
    let id = this.trees.get(tree);
    if (id === undefined) this.trees.set(tree, (id = this.trees.size));
    return id;
  }
}
