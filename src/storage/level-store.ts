import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { ClassicLevel } from "./classic-level.js";
import { DacdError } from "../errors.js";
import type { NodeSource } from "./records/node-source.js";
import type { NodeWrites } from "./records/node-writes.js";
import type { BatchRecord, Cursor } from "./batch-record.js";
import { TREE_RANGE } from "./keys.js";
import { BULK_SPILL_DIR, BulkWriter, type BulkWriterOptions } from "./bulk-writer.js";
import { type Db, LEVEL_DB } from "./level-db.js";
import { tableFilesWithinLimit } from "./open-files.js";
import { BatchCommits } from "./batch-commits.js";
import { BatchRepository } from "./batch-repository.js";
import { MetaRepository } from "./meta-repository.js";
import { OnchainRepository } from "./onchain-repository.js";
import type { PendingCommit } from "./pending-commit.js";
import { StoreHandle } from "./store-handle.js";
import { TreeRecordRepository } from "./tree-record-repository.js";
import { asStoreError } from "./store-errors.js";
import { yieldToEventLoop } from "../util/yield.js";

/** Records per read of readEveryRecord (between two paces). */
const READ_ALL_CHUNK = 4096;

/** LevelDB's tunables that dacd sets (classic-level's names; unset: LevelDB's defaults). */
export interface LevelTuning {
  /**
   * Open table files, within what the descriptor limit leaves (open-files.ts); LevelDB memory-maps
   * some of them (setMappedTables, 1000 unless set), the others it reads with pread.
   */
  readonly maxOpenFiles?: number;
  /** The LRU cache of uncompressed blocks, in bytes. */
  readonly cacheSize?: number;
  /** The memtable: writes gather here before they become a level-0 table. */
  readonly writeBufferSize?: number;
  /** The size at which compaction starts a new table file. */
  readonly maxFileSize?: number;
  readonly blockSize?: number;
  /** Snappy per block; off by default (hashes do not compress). */
  readonly compression?: boolean;
}

/**
 * dacd's LevelDB store: content-addressed tree nodes and leaves, one record per verified batch,
 * and a little metadata (cursor, identity). Every state change is one atomic, fsynced write.
 *
 * The store is a set of repositories over one LevelDB handle (store-handle.ts), each with one kind
 * of record: `batches` (batch records, cursor, prune marker), `trees` (node and leaf records),
 * `meta` (identity, format, chain, notes), `onchain` (the base-chain watch's records), and
 * `commits` (the write path of verified batches). Here: opening and closing, snapshot views, the
 * whole-store operations, and the reads and writes most callers need, passed to the repository
 * that holds them.
 */
export class LevelStore implements NodeSource {
  readonly batches: BatchRepository;
  readonly trees: TreeRecordRepository;
  readonly meta: MetaRepository;
  readonly onchain: OnchainRepository;
  readonly commits: BatchCommits;

  /**
   * On a snapshot view (snapshot()) the handle carries the snapshot, which every read passes, and
   * nothing may be written. A view serves walks that read each block once (dumps, checks), so its
   * reads do not fill LevelDB's block cache (fillCache: false).
   */
  private constructor(private readonly handle: StoreHandle) {
    this.batches = new BatchRepository(handle);
    this.meta = new MetaRepository(handle);
    this.onchain = new OnchainRepository(handle);
    this.commits = new BatchCommits(handle);
    this.trees = new TreeRecordRepository(handle, this.commits.unwritten);
  }

  get dir(): string {
    return this.handle.dir;
  }

  /**
   * A read-only view of the store as it is at this call: every read of the view sees this one
   * state, whatever is written afterwards (LevelDB snapshot). A batch is stored in one atomic
   * write, so the view is consistent at one batch. `close()` on the view releases the snapshot
   * only; until then LevelDB keeps every record the snapshot can see (a pruned node's space is
   * reclaimed after it). Writes on the view are refused.
   */
  snapshot(): LevelStore {
    if (this.handle.isSnapshot) throw new Error("a snapshot view cannot take another snapshot");
    const { db, dir } = this.handle;
    return new LevelStore(new StoreHandle(db, dir, { snapshot: db.snapshot(), fillCache: false }));
  }

  /** True for a view made by snapshot(). */
  get isSnapshot(): boolean {
    return this.handle.isSnapshot;
  }

  /**
   * Opens a store that must exist already, for the commands that only read (status, show, check,
   * proof, dump): a missing directory is an error and nothing is created or cleaned up.
   */
  static async openExisting(dir: string, opts: LevelTuning = {}): Promise<LevelStore> {
    if (!existsSync(join(dir, "CURRENT")))
      throw new DacdError(
        "STORE",
        existsSync(dir)
          ? `${dir} is not a dacd store (no LevelDB database in it)`
          : `the store ${dir} does not exist`,
      );
    return LevelStore.open(dir, opts, { existing: true });
  }

  /**
   * Opens (creating if needed) the store in `dir`. `maxOpenFiles` bounds LevelDB's open table files
   * (within the descriptor limit): whole-store walks (dump) pass a small number so that RSS stays
   * bounded.
   */
  static async open(
    dir: string,
    opts: LevelTuning = {},
    mode: { existing?: boolean } = {},
  ): Promise<LevelStore> {
    const db: Db = new ClassicLevel<Uint8Array, Uint8Array>(dir, {
      keyEncoding: "view",
      valueEncoding: "view",
      // Nodes and leaves are hashes: Snappy cannot shrink them and only costs compaction CPU.
      // Tables written with compression stay readable: LevelDB marks each block.
      compression: false,
      ...opts,
      ...(opts.maxOpenFiles === undefined ? {} : { maxOpenFiles: tableFilesWithinLimit(opts.maxOpenFiles) }),
      createIfMissing: !mode.existing,
    });
    try {
      await db.open();
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new DacdError(
        "STORE",
        isLockError(err)
          ? `the store ${dir} is in use by another dacd process (LevelDB lock held)`
          : `cannot open the store ${dir}: ${cause?.message ?? (err as Error).message}`,
        { cause: err },
      );
    }
    const store = new LevelStore(new StoreHandle(db, dir));
    try {
      // Spill files of a load that was killed (they can take gigabytes): LevelDB's lock is held
      // now, so no load is running in this store. Left to a command that writes.
      if (!mode.existing) await rm(join(dir, BULK_SPILL_DIR), { recursive: true, force: true });
      await store.meta.checkFormat();
    } catch (err) {
      await db.close().catch(() => undefined);
      throw asStoreError(err, dir) ?? err;
    }
    return store;
  }

  async close(): Promise<void> {
    const { db, reads } = this.handle;
    if (reads.snapshot) await reads.snapshot.close();
    else await db.close();
  }

  /** The records of nodes: `hashes[i]` written by batch `gens[i]` (store.trees). */
  getNodes(hashes: readonly Uint8Array[], gens: ArrayLike<number>): Promise<(Uint8Array | undefined)[]> {
    return this.trees.nodes(hashes, gens);
  }

  /** The records of leaves: `hashes[i]` written by batch `gens[i]` (store.trees). */
  getLeafRecords(
    hashes: readonly Uint8Array[],
    gens: ArrayLike<number>,
  ): Promise<(Uint8Array | undefined)[]> {
    return this.trees.leaves(hashes, gens);
  }

  /** A batch's record (store.batches). */
  getBatch(batchId: number): Promise<BatchRecord | undefined> {
    return this.batches.get(batchId);
  }

  /** The id of the newest batch record (store.batches). */
  lastBatchId(): Promise<number | undefined> {
    return this.batches.lastId();
  }

  /** Where the member resumes (store.batches). */
  getCursor(): Promise<Cursor | undefined> {
    return this.batches.cursor();
  }

  /** A commit to fill while a batch is verified (store.commits). */
  beginCommit(gen: number): PendingCommit {
    return this.commits.begin(gen);
  }

  /** Stores a verified batch with its records, fsynced before it resolves (store.commits). */
  commitBatch(
    record: BatchRecord,
    nodes: NodeWrites,
    leaves: NodeWrites,
    pending?: PendingCommit,
  ): Promise<void> {
    return this.commits.commit(record, nodes, leaves, pending);
  }

  /** commitBatch without waiting for the write: `durable` settles with it (store.commits). */
  startCommit(
    record: BatchRecord,
    nodes: NodeWrites,
    leaves: NodeWrites,
    pending?: PendingCommit,
  ): { durable: Promise<void> } {
    return this.commits.start(record, nodes, leaves, pending);
  }

  /**
   * Merges every table of the store into LevelDB's sorted levels now. After a bulk load of
   * millions of records this spares the first batches the background compaction that would
   * otherwise compete with them for the CPU.
   */
  async compact(range: "all" | "trees" = "all"): Promise<void> {
    this.handle.writable();
    const { db } = this.handle;
    if (range === "trees") await db.compactRange(TREE_RANGE.gte, TREE_RANGE.lt);
    else await db.compactRange(Uint8Array.of(0x00), Uint8Array.of(0xff));
  }

  /**
   * MB that LevelDB has written into its levels since the store was opened: memtable flushes into
   * level 0 and the merges below it (the Write(MB) column of its `leveldb.stats`, summed; whole
   * MB). Records keyed by hash are merged down the levels again and again: the background work
   * that competes with a batch for the CPU.
   */
  compactionWrittenMb(): number {
    let mb = 0;
    for (const line of this.handle.db.getProperty("leveldb.stats").split("\n")) {
      // Level, Files, Size(MB), Time(sec), Read(MB), Write(MB).
      const cols = line.trim().split(/\s+/);
      if (cols.length === 6 && /^\d+$/.test(cols[0]!)) mb += Number(cols[5]);
    }
    return mb;
  }

  /**
   * Reads every record of the store (of the view's snapshot) once, without filling the block
   * cache: LevelDB reads each block of each table, so a table damaged anywhere fails here with its
   * error (store-errors.ts names it), where a read of the batch records alone would pass it by.
   * `pace` is awaited between chunks. Returns how many records were read.
   */
  async readEveryRecord(pace?: () => Promise<void>): Promise<number> {
    const it = this.handle.db.iterator({ ...this.handle.reads, fillCache: false, values: false });
    let records = 0;
    try {
      for (;;) {
        const chunk = await it.nextv(READ_ALL_CHUNK);
        if (chunk.length === 0) return records;
        records += chunk.length;
        await (pace ?? yieldToEventLoop)();
      }
    } finally {
      await it.close();
    }
  }

  /** Whether the store holds no record at all (a load builds only a fresh store). */
  async isEmpty(): Promise<boolean> {
    for await (const _ of this.handle.db.keys({ limit: 1, ...this.handle.reads })) return false;
    return true;
  }

  /** Deletes every record: a load that failed leaves the fresh store it was given empty again. */
  async clear(): Promise<void> {
    this.handle.writable();
    await this.handle.db.clear();
  }

  /** A writer for the millions of tree records of a load, spilled under the store's directory. */
  bulkWriter(opts?: BulkWriterOptions): BulkWriter {
    this.handle.writable();
    return new BulkWriter(this.handle.db, join(this.handle.dir, BULK_SPILL_DIR), opts);
  }

  /** The LevelDB handle, for the modules of src/storage only (level-db.ts). */
  [LEVEL_DB](): Db {
    // A view's reads must carry its snapshot; direct access would silently read the live store.
    this.handle.writable();
    return this.handle.db;
  }
}

/** Whether opening a store failed because another process holds its LevelDB lock (the error or a cause says so). */
export function isLockError(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if ((e as { code?: string }).code === "LEVEL_LOCKED" || /lock/i.test(e.message)) return true;
  }
  return false;
}
