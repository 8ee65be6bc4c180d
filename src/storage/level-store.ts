import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { ClassicLevel } from "./classic-level.js";
import { canGetPacked, getPacked, NOT_FOUND } from "./level-binding.js";
import { DacdError } from "../errors.js";
import { NODE_FORMAT } from "./records/node-record.js";
import type { NodeSource } from "./records/node-source.js";
import type { NodeWrites } from "./records/node-writes.js";
import type { BatchRecord, Cursor, StoreIdentity } from "./batch-record.js";
import {
  batchIdFromKey,
  batchKey,
  Meta,
  metaKey,
  type MetaName,
  Prefix,
  retireKey,
  setTreeKeyHead,
  TREE_KEY_HASH_AT,
  TREE_KEY_LENGTH,
  treeKey,
  treeKeyOrder,
  treeKeyParts,
  TreeKind,
} from "./keys.js";
import { BULK_SPILL_DIR, BulkWriter, type BulkWriterOptions } from "./bulk-writer.js";
import { type Db, LEVEL_DB } from "./level-db.js";
import { tableFilesWithinLimit } from "./open-files.js";
import { UnwrittenBatch } from "./unwritten-batch.js";
import type { PruneInfo } from "./prune-info.js";
import { OnchainRepository } from "./onchain-repository.js";
import { StoreHandle, type ReadOptions } from "./store-handle.js";
import { batchPuts, putSorted, type BatchPuts } from "./sorted-puts.js";
import { asStoreError } from "./store-errors.js";

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

/** Lookups in one getNodes from which two getMany calls run side by side. */
const PARALLEL_READ_MIN = 2048;

const json = (v: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(v));
const parse = <T>(b: Uint8Array): T => JSON.parse(new TextDecoder().decode(b)) as T;

/** A batch record as read by batchChunks: `record` is undefined when the stored bytes are not JSON. */
export interface BatchEntry {
  readonly id: number;
  readonly record: BatchRecord | undefined;
}

/** A tree record's key: a node's (`node`) or a leaf's, by the batch that wrote it and its 32-byte hash. */
export interface TreeRecordKey {
  readonly node: boolean;
  readonly gen: number;
  readonly hash: Uint8Array;
}

/** The key range of the batch records. */
const BATCH_RANGE = { gte: Uint8Array.of(Prefix.batch), lt: Uint8Array.of(Prefix.batch + 1) };
/** The key range of the tree records: nodes and leaves of every batch. */
const TREE_RANGE = { gte: Uint8Array.of(Prefix.tree), lt: Uint8Array.of(Prefix.tree + 1) };

/**
 * dacd's LevelDB store: content-addressed tree nodes and leaves, one record per verified batch,
 * and a little metadata (cursor, identity). Every state change is one atomic, fsynced write.
 */
export class LevelStore implements NodeSource {
  /** Called inside the write lock, before each commitBatch write (the pruner protects these keys). */
  readonly commitListeners = new Set<(record: BatchRecord, nodes: NodeWrites, leaves: NodeWrites) => void>();
  private writeLock: Promise<unknown> = Promise.resolve();
  /** Verifications under way: from beginCommit until their commit is written or abandoned. */
  private openCommits = 0;
  /** Batches whose write startCommit queued and which LevelDB does not hold yet, by id (gen). */
  private readonly unwritten = new Map<number, UnwrittenBatch>();
  /** Batches whose write failed, so that no batch built on one of them is written. */
  private readonly failedWrites = new Set<number>();
  private commitWaiters: (() => void)[] = [];
  /** The base-chain watch's records. */
  readonly onchain: OnchainRepository;

  private constructor(
    private readonly db: Db,
    readonly dir: string,
    /**
     * Set on a snapshot view (snapshot()): every read passes it, and nothing may be written. A view
     * serves walks that read each block once (dumps, checks), so its reads do not fill LevelDB's
     * block cache (fillCache: false).
     */
    private readonly reads: ReadOptions = {},
  ) {
    const handle = new StoreHandle(db, reads);
    this.onchain = new OnchainRepository(handle);
  }

  /**
   * A read-only view of the store as it is at this call: every read of the view sees this one
   * state, whatever is written afterwards (LevelDB snapshot). A batch is stored in one atomic
   * write, so the view is consistent at one batch. `close()` on the view releases the snapshot
   * only; until then LevelDB keeps every record the snapshot can see (a pruned node's space is
   * reclaimed after it). Writes on the view are refused.
   */
  snapshot(): LevelStore {
    if (this.reads.snapshot) throw new Error("a snapshot view cannot take another snapshot");
    return new LevelStore(this.db, this.dir, { snapshot: this.db.snapshot(), fillCache: false });
  }

  /** True for a view made by snapshot(). */
  get isSnapshot(): boolean {
    return this.reads.snapshot !== undefined;
  }

  private writable(): void {
    if (this.reads.snapshot) throw new Error("a snapshot view of the store is read-only");
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
    const store = new LevelStore(db, dir);
    try {
      // Spill files of a load that was killed (they can take gigabytes): LevelDB's lock is held
      // now, so no load is running in this store. Left to a command that writes.
      if (!mode.existing) await rm(join(dir, BULK_SPILL_DIR), { recursive: true, force: true });
      await store.checkFormat();
    } catch (err) {
      await db.close().catch(() => undefined);
      throw asStoreError(err, dir) ?? err;
    }
    return store;
  }

  /** Refuses a store whose tree nodes are laid out in another format (every command opens here). */
  private async checkFormat(): Promise<void> {
    if (!(await this.getIdentity())) return; // empty: ensureIdentity or a load will record the format
    const format = (await this.getMeta<number>(Meta.format)) ?? 1;
    if (format !== NODE_FORMAT) {
      throw new DacdError(
        "CONFIG",
        `the store ${this.dir} holds tree nodes in format ${format}, this dacd reads format ${NODE_FORMAT}: ` +
          "export its leaves with the dacd that wrote it (dacd dump) and load them here (dacd load --from)",
      );
    }
  }

  async close(): Promise<void> {
    if (this.reads.snapshot) await this.reads.snapshot.close();
    else await this.db.close();
  }

  /**
   * The records of nodes: `hashes[i]` written by batch `gens[i]`. One getMany runs its lookups one
   * after another on one libuv thread; a large one is split so that two threads look up at once.
   */
  async getNodes(
    hashes: readonly Uint8Array[],
    gens: ArrayLike<number>,
  ): Promise<(Uint8Array | undefined)[]> {
    return this.getTreeRecords(TreeKind.node, hashes, gens);
  }

  /** The records of leaves: `hashes[i]` written by batch `gens[i]`. */
  async getLeafRecords(
    hashes: readonly Uint8Array[],
    gens: ArrayLike<number>,
  ): Promise<(Uint8Array | undefined)[]> {
    return this.getTreeRecords(TreeKind.leaf, hashes, gens);
  }

  private async getTreeRecords(
    kind: number,
    hashes: readonly Uint8Array[],
    gens: ArrayLike<number>,
  ): Promise<(Uint8Array | undefined)[]> {
    if (gens.length !== hashes.length) throw new RangeError("a gen for every hash is needed");
    if (this.unwritten.size > 0) return this.getTreeRecordsBesideUnwritten(kind, hashes, gens);
    return this.readTreeRecords(kind, hashes, gens);
  }

  /** getTreeRecords while batches are being written: their gens' records come from memory. */
  private async getTreeRecordsBesideUnwritten(
    kind: number,
    hashes: readonly Uint8Array[],
    gens: ArrayLike<number>,
  ): Promise<(Uint8Array | undefined)[]> {
    const out = new Array<Uint8Array | undefined>(hashes.length);
    const stored: number[] = [];
    for (let i = 0; i < hashes.length; i++) {
      const batch = this.unwritten.get(gens[i]!);
      if (batch) out[i] = batch.find(kind, hashes[i]!);
      else stored.push(i);
    }
    if (stored.length === hashes.length) return this.readTreeRecords(kind, hashes, gens);
    const found = await this.readTreeRecords(
      kind,
      stored.map((i) => hashes[i]!),
      stored.map((i) => gens[i]!),
    );
    for (let k = 0; k < stored.length; k++) out[stored[k]!] = found[k];
    return out;
  }

  /** Tree records from LevelDB. */
  private async readTreeRecords(
    kind: number,
    hashes: readonly Uint8Array[],
    gens: ArrayLike<number>,
  ): Promise<(Uint8Array | undefined)[]> {
    if (hashes.length === 0) return [];
    // Looked up in key order (treeKeyOrder), the keys packed in one buffer.
    const order = treeKeyOrder(hashes, gens);
    const keyBytes = new Uint8Array(order.length * TREE_KEY_LENGTH);
    for (let k = 0; k < order.length; k++) {
      const i = order[k]!;
      const at = k * TREE_KEY_LENGTH;
      setTreeKeyHead(keyBytes.subarray(at, at + TREE_KEY_LENGTH), gens[i]!, kind);
      keyBytes.set(hashes[i]!, at + TREE_KEY_HASH_AT);
    }
    const out = new Array<Uint8Array | undefined>(hashes.length);
    const parts = await this.lookUpPacked(keyBytes);
    for (let part = 0, k = 0; part < parts.length; part++) {
      const { values, ends } = parts[part]!;
      for (let j = 0, at = 0; j < ends.length; j++, k++) {
        const end = ends[j]!;
        if (end === NOT_FOUND) continue;
        out[order[k]!] = values.subarray(at, end);
        at = end;
      }
    }
    return out;
  }

  /**
   * Looks up the keys packed in `keyBytes` (TREE_KEY_LENGTH bytes each): the values found one after
   * the other, and where each key's ends (getPacked's answer), in one part, or two when the keys are
   * many, looked up side by side. Through dacd's binding where it is loaded (level-binding.ts);
   * else through getMany, whose records, a Buffer each, are copied into one buffer: the trees keep
   * them until their update ends, and the young generation would copy so many objects again and
   * again.
   */
  private async lookUpPacked(keyBytes: Uint8Array): Promise<{ values: Uint8Array; ends: Uint32Array }[]> {
    const count = keyBytes.length / TREE_KEY_LENGTH;
    const cut = count < PARALLEL_READ_MIN ? [count] : [count >> 1, count];
    const halves = cut.map((end, j) =>
      keyBytes.subarray((j === 0 ? 0 : cut[0]!) * TREE_KEY_LENGTH, end * TREE_KEY_LENGTH),
    );
    // Tree records never fill LevelDB's block cache. The lookups below the node cache land on
    // random blocks of a store far larger than the block cache, so a block kept there would only
    // evict another before it is asked for again, while each insert and eviction (a lock, an
    // allocation and a free) is paid on every lookup served by pread, in the tables LevelDB does
    // not memory-map. Memory-mapped tables' blocks are never cached, so nothing changes for them.
    const reads = { ...this.reads, fillCache: false };
    if (getPacked && canGetPacked(this.db, reads)) {
      const get = getPacked;
      return Promise.all(halves.map((keys) => get(this.db, keys, TREE_KEY_LENGTH, reads)));
    }
    return Promise.all(
      halves.map(async (packedKeys) => {
        // The keys are views of one buffer (classic-level copies each key when called).
        const keys = Array.from({ length: packedKeys.length / TREE_KEY_LENGTH }, (_, k) =>
          packedKeys.subarray(k * TREE_KEY_LENGTH, (k + 1) * TREE_KEY_LENGTH),
        );
        const found = await this.db.getMany(keys, reads);
        let bytes = 0;
        for (const record of found) if (record) bytes += record.length;
        const values = new Uint8Array(bytes);
        const ends = new Uint32Array(found.length);
        for (let k = 0, at = 0; k < found.length; k++) {
          const record = found[k];
          if (!record) ends[k] = NOT_FOUND;
          else {
            values.set(record, at);
            ends[k] = at += record.length;
          }
        }
        return { values, ends };
      }),
    );
  }

  async getBatch(batchId: number): Promise<BatchRecord | undefined> {
    const v = await this.db.get(batchKey(batchId), this.reads);
    return v === undefined ? undefined : parse<BatchRecord>(v);
  }

  /** Batch records in id order, optionally from `fromId` on. */
  async *batches(fromId = 0): AsyncGenerator<BatchRecord> {
    for await (const [, v] of this.db.iterator({
      gte: batchKey(fromId),
      lt: Uint8Array.of(Prefix.batch + 1),
      ...this.reads,
    })) {
      yield parse<BatchRecord>(v);
    }
  }

  async lastBatchId(): Promise<number | undefined> {
    for await (const k of this.db.keys({
      gte: batchKey(0),
      lt: Uint8Array.of(Prefix.batch + 1),
      reverse: true,
      limit: 1,
      ...this.reads,
    })) {
      return batchIdFromKey(k);
    }
    return undefined;
  }

  async getCursor(): Promise<Cursor | undefined> {
    return this.getMeta<Cursor>(Meta.cursor);
  }

  async getIdentity(): Promise<StoreIdentity | undefined> {
    return this.getMeta<StoreIdentity>(Meta.identity);
  }

  /**
   * Binds the store to one profile and heights on first use and refuses any other afterwards:
   * roots from one layout must never be read as another's.
   */
  async ensureIdentity(identity: StoreIdentity): Promise<void> {
    this.writable();
    const have = await this.getIdentity();
    if (!have) {
      await this.db.batch(LevelStore.identityPuts(identity), { sync: true });
      return;
    }
    if (JSON.stringify(have) !== JSON.stringify(identity)) {
      throw new DacdError(
        "CONFIG",
        `the store ${this.dir} was created for ${JSON.stringify(have)}, not ${JSON.stringify(identity)}`,
      );
    }
  }

  /** The writes that bind a new store to its identity and this node format. */
  static identityPuts(identity: StoreIdentity): { type: "put"; key: Uint8Array; value: Uint8Array }[] {
    return [
      { type: "put", key: metaKey(Meta.identity), value: json(identity) },
      { type: "put", key: metaKey(Meta.format), value: json(NODE_FORMAT) },
    ];
  }

  /**
   * A commit to fill while a batch is verified (PendingCommit); nothing reaches the store until
   * commitBatch writes it.
   */
  beginCommit(gen: number): PendingCommit {
    this.writable();
    // A chained batch rather than an array of operations: no array of operation objects for a
    // batch's hundreds of thousands of records.
    this.openCommits++;
    return new PendingCommit(this.db.batch(), gen, () => {
      if (--this.openCommits > 0) return;
      for (const wake of this.commitWaiters.splice(0)) wake();
    });
  }

  /**
   * Stores a verified batch with its nodes and leaves: one atomic write, fsynced before returning.
   * `pending` may already hold some of the records (those it was given before).
   */
  async commitBatch(
    record: BatchRecord,
    nodes: NodeWrites,
    leaves: NodeWrites,
    pending = this.beginCommit(record.batch_id),
  ): Promise<void> {
    await this.startCommit(record, nodes, leaves, pending).durable;
  }

  /**
   * commitBatch without waiting for the write: queues it and returns `durable`, which settles when
   * the write does. Until then the batch is readable here as if written (its records by gen, its
   * record by batchInFlight), so the next batch can be verified on top of it while it is put,
   * written and fsynced. Writes keep the order of the calls, and a batch built on one whose write
   * failed (or was refused) is refused.
   */
  startCommit(
    record: BatchRecord,
    nodes: NodeWrites,
    leaves: NodeWrites,
    pending = this.beginCommit(record.batch_id),
  ): { durable: Promise<void> } {
    const gen = record.batch_id;
    pending.putNew(nodes, leaves);
    // The lock is taken now, so writes keep the order of these calls; the records still being put
    // are put in its turn, on this thread, between the next batch's steps.
    const durable = this.withWriteLock(async () => {
      try {
        const prev = record.prev_batch_id;
        if (this.failedWrites.has(prev))
          throw new DacdError("STORE", `batch ${gen} builds on batch ${prev}, whose write failed`, {
            batchId: gen,
            field: "prev_batch_id",
          });
        await pending.allPut();
        pending.batch.put(batchKey(gen), json(record));
        for (const listener of this.commitListeners) listener(record, nodes, leaves);
        await pending.batch.write({ sync: true });
      } catch (err) {
        this.failedWrites.add(gen);
        throw err;
      }
      this.failedWrites.delete(gen);
      await this.retireMemtable(gen);
    }).finally(() => {
      if (this.unwritten.get(gen) === unwritten) this.unwritten.delete(gen);
      pending.abandon();
    });
    const unwritten = new UnwrittenBatch(record, nodes, leaves, durable);
    this.unwritten.set(gen, unwritten);
    // Whoever holds `durable` sees a failure; this only keeps an unobserved one from being fatal.
    durable.catch(() => undefined);
    return { durable };
  }

  /**
   * A batch verified and handed to startCommit whose write has not finished: its record and a
   * promise that settles with the write. Undefined once the write is done (then getBatch has it).
   */
  batchInFlight(batchId: number): { record: BatchRecord; durable: Promise<void> } | undefined {
    return this.unwritten.get(batchId);
  }

  /**
   * A batch's write goes into LevelDB's memtable whole (a large batch is ~170k records), and
   * that memtable stays the one lookups search first until the next write: every lookup of the next
   * batch would then walk a skip list of that size. A write
   * of one key right after it makes LevelDB start a new memtable and flush the full one to a table,
   * whose index answers a lookup for less. Not fsynced: it carries nothing, and
   * its failure is ignored, since the batch is stored by then (a store that cannot write any more
   * fails the next write that matters). In the daemon, the cursor's write after the gateway's
   * answer (markAccepted) has the same effect, but only once the claim is accepted.
   */
  private async retireMemtable(gen: number): Promise<void> {
    await this.db.del(retireKey(gen)).catch(() => undefined);
  }

  /** Runs `fn` while no commitBatch (and no other locked section) is writing; calls are serialised. */
  withWriteLock<T>(fn: () => Promise<T>): Promise<T> {
    this.writable();
    const run = this.writeLock.then(fn, fn);
    this.writeLock = run.catch(() => undefined);
    return run;
  }

  /**
   * Resolves when no batch is being verified (at once when none is), or after `maxWaitMs`: a long
   * read (a dump, a deep check) calls it between blocks so that it yields to the signing without
   * stopping while the member catches up batch after batch.
   */
  whenNoCommit(maxWaitMs: number): Promise<void> {
    if (this.openCommits === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, maxWaitMs);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.commitWaiters.push(done);
    });
  }

  /** Marks a batch accepted by the gateway and advances the cursor past it, atomically. */
  async markAccepted(record: BatchRecord, acceptedAt: Date): Promise<BatchRecord> {
    this.writable();
    const updated: BatchRecord = { ...record, accepted_at: acceptedAt.toISOString() };
    const previous = await this.getCursor();
    const cursor: Cursor = {
      ...previous,
      next_batch_id: Math.max(record.batch_id + 1, previous?.next_batch_id ?? 0),
      last_accepted_batch_id: Math.max(record.batch_id, previous?.last_accepted_batch_id ?? -1),
    };
    await this.putBatchAndCursor(updated, cursor);
    return updated;
  }

  /**
   * Writes a batch record and the cursor in one fsynced write. A load that builds a fresh store
   * passes `fresh`: the store's identity (and node format) and meta records go in the same write,
   * the last of the load, so a store whose load did not finish has none of them.
   */
  async putBatchAndCursor(
    record: BatchRecord,
    cursor: Cursor,
    fresh?: { identity: StoreIdentity; meta?: Partial<Record<MetaName, unknown>> },
  ): Promise<void> {
    this.writable();
    const puts = fresh ? LevelStore.identityPuts(fresh.identity) : [];
    for (const [name, value] of Object.entries(fresh?.meta ?? {}))
      puts.push({ type: "put", key: metaKey(name as MetaName), value: json(value) });
    puts.push(
      { type: "put", key: batchKey(record.batch_id), value: json(record) },
      { type: "put", key: metaKey(Meta.cursor), value: json(cursor) },
    );
    await this.db.batch(puts, { sync: true });
  }

  async setCursor(cursor: Cursor): Promise<void> {
    this.writable();
    await this.db.put(metaKey(Meta.cursor), json(cursor), { sync: true });
  }

  /**
   * Advisory state the operator reads with `dacd status` (e.g. the failing batch); not fsynced, and
   * never consulted for a signing decision.
   */
  async setNote(name: typeof Meta.failing, value: unknown): Promise<void> {
    this.writable();
    if (value === undefined) await this.db.del(metaKey(name));
    else await this.db.put(metaKey(name), json(value));
  }

  /** The base chain's kind this member signs for, pinned at its first start (chain-pin.ts). */
  async getPinnedChain(): Promise<string | undefined> {
    return this.getMeta<string>(Meta.chain);
  }

  async pinChain(kind: string): Promise<void> {
    await this.db.put(metaKey(Meta.chain), json(kind), { sync: true });
  }

  async getNote<T>(name: typeof Meta.failing): Promise<T | undefined> {
    return this.getMeta<T>(name);
  }

  /** A meta record (0x04‖name, JSON). */
  async getMeta<T>(name: MetaName): Promise<T | undefined> {
    const v = await this.db.get(metaKey(name), this.reads);
    return v === undefined ? undefined : parse<T>(v);
  }

  /**
   * Merges every table of the store into LevelDB's sorted levels now. After a bulk load of
   * millions of records this spares the first batches the background compaction that would
   * otherwise compete with them for the CPU.
   */
  async compact(range: "all" | "trees" = "all"): Promise<void> {
    this.writable();
    if (range === "trees") await this.db.compactRange(TREE_RANGE.gte, TREE_RANGE.lt);
    else await this.db.compactRange(Uint8Array.of(0x00), Uint8Array.of(0xff));
  }

  /**
   * MB that LevelDB has written into its levels since the store was opened: memtable flushes into
   * level 0 and the merges below it (the Write(MB) column of its `leveldb.stats`, summed; whole
   * MB). Records keyed by hash are merged down the levels again and again: the background work
   * that competes with a batch for the CPU.
   */
  compactionWrittenMb(): number {
    let mb = 0;
    for (const line of this.db.getProperty("leveldb.stats").split("\n")) {
      // Level, Files, Size(MB), Time(sec), Read(MB), Write(MB).
      const cols = line.trim().split(/\s+/);
      if (cols.length === 6 && /^\d+$/.test(cols[0]!)) mb += Number(cols[5]);
    }
    return mb;
  }

  /** The prune marker, if the store was ever pruned (prune-info.ts). */
  async getPruneInfo(): Promise<PruneInfo | undefined> {
    return this.getMeta<PruneInfo>(Meta.prune);
  }

  /** Records which batches lose their trees; written, fsynced, before the prune deletes a node. */
  async setPruneInfo(info: PruneInfo): Promise<void> {
    this.writable();
    await this.db.put(metaKey(Meta.prune), json(info), { sync: true });
  }

  /** Whether the store holds no record at all (a load builds only a fresh store). */
  async isEmpty(): Promise<boolean> {
    for await (const _ of this.db.keys({ limit: 1, ...this.reads })) return false;
    return true;
  }

  /** Deletes every record: a load that failed leaves the fresh store it was given empty again. */
  async clear(): Promise<void> {
    this.writable();
    await this.db.clear();
  }

  /** A writer for the millions of tree records of a load, spilled under the store's directory. */
  bulkWriter(opts?: BulkWriterOptions): BulkWriter {
    this.writable();
    return new BulkWriter(this.db, join(this.dir, BULK_SPILL_DIR), opts);
  }

  /** The ids of the stored batch records, in order. */
  async *batchIds(): AsyncGenerator<number> {
    for await (const k of this.db.keys({ ...BATCH_RANGE, ...this.reads })) yield batchIdFromKey(k);
  }

  /**
   * The batch records in id order, `size` at a time; a record that is not valid JSON comes as
   * undefined (the records check reports it rather than failing).
   */
  async *batchChunks(size: number): AsyncGenerator<BatchEntry[]> {
    const it = this.db.iterator({ ...BATCH_RANGE, ...this.reads });
    try {
      for (;;) {
        const entries = await it.nextv(size);
        if (entries.length === 0) return;
        yield entries.map(([key, value]) => {
          let record: BatchRecord | undefined;
          try {
            record = parse<BatchRecord>(value);
          } catch {
            record = undefined;
          }
          return { id: batchIdFromKey(key), record };
        });
      }
    } finally {
      await it.close();
    }
  }

  /**
   * Which tree records the store holds (by gen, then nodes and leaves in hash order), for the prune's
   * sweep, which deletes those that no kept batch reaches with deleteTreeRecords. `hash` is a copy.
   */
  async *treeRecords(): AsyncGenerator<TreeRecordKey> {
    for await (const k of this.db.keys({ ...TREE_RANGE, ...this.reads })) {
      if (k.length !== TREE_KEY_LENGTH) continue; // a retire key
      const { gen, kind, hash } = treeKeyParts(k);
      yield { node: kind === TreeKind.node, gen, hash: hash.slice() };
    }
  }

  /**
   * Deletes tree node and leaf records in one write, not fsynced: a deleted record that comes back
   * after a crash is only space.
   */
  async deleteTreeRecords(records: readonly TreeRecordKey[]): Promise<void> {
    this.writable();
    if (records.length === 0) return;
    await this.db.batch(
      records.map((r) => ({
        type: "del" as const,
        key: treeKey(r.gen, r.node ? TreeKind.node : TreeKind.leaf, r.hash),
      })),
    );
  }

  /** The LevelDB handle, for the modules of src/storage only (level-db.ts). */
  [LEVEL_DB](): Db {
    // A view's reads must carry its snapshot; direct access would silently read the live store.
    this.writable();
    return this.db;
  }
}

/**
 * One atomic write being assembled in a chained batch (which copies each key and value when it is
 * put). A verification puts each tree's records as soon as that tree is done, while the others
 * still hash: the put loop then mostly runs while the main thread would wait anyway. Records are
 * put in runs, each run in key order, a slice per turn of the event loop (sorted-puts.ts), one run
 * after the other. Nothing reaches the store before LevelStore.commitBatch writes the batch, once
 * every run is put (`allPut`); `abandon` drops it.
 */
export class PendingCommit {
  private readonly puts: BatchPuts;
  /** How many records of the lists were handed to the runs so far. */
  private nodesPut = 0;
  private leavesPut = 0;
  private done = false;
  /** The runs handed over so far, one after the other. */
  private runs: Promise<void> = Promise.resolve();

  /** `gen`: the id of the batch whose records these are (their keys lead with it). */
  constructor(
    readonly batch: ReturnType<Db["batch"]>,
    private readonly gen: number,
    private readonly onDone: () => void = () => undefined,
  ) {
    this.puts = batchPuts(batch);
  }

  /** Puts the records added to the lists since the last call (in the background: see allPut). */
  putNew(nodes: NodeWrites, leaves: NodeWrites): void {
    if (this.done) throw new Error("this commit was written or abandoned");
    const [nodesFrom, nodesTo] = [this.nodesPut, nodes.length];
    const [leavesFrom, leavesTo] = [this.leavesPut, leaves.length];
    this.nodesPut = nodesTo;
    this.leavesPut = leavesTo;
    const stopped = () => this.done;
    this.runs = this.runs.then(async () => {
      await putSorted(this.puts, this.gen, TreeKind.node, nodes, nodesFrom, nodesTo, stopped);
      await putSorted(this.puts, this.gen, TreeKind.leaf, leaves, leavesFrom, leavesTo, stopped);
    });
    // Observed by allPut; a commit abandoned meanwhile never asks.
    this.runs.catch(() => undefined);
  }

  /** Resolves once every record handed over is in the batch. */
  allPut(): Promise<void> {
    return this.runs;
  }

  /** Drops the batch unless it is written (nothing of it reaches the store); safe to call again. */
  abandon(): void {
    if (this.done) return;
    this.done = true;
    this.onDone();
    // Idempotent in abstract-level, and a no-op once the batch is written.
    void this.batch.close().catch(() => undefined);
  }
}

/** Whether opening a store failed because another process holds its LevelDB lock (the error or a cause says so). */
export function isLockError(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if ((e as { code?: string }).code === "LEVEL_LOCKED" || /lock/i.test(e.message)) return true;
  }
  return false;
}
