import { DacdError } from "../errors.js";
import type { BatchRecord } from "./batch-record.js";
import { batchKey, retireKey } from "./keys.js";
import { PendingCommit } from "./pending-commit.js";
import type { NodeWrites } from "./records/node-writes.js";
import { jsonBytes, type StoreHandle } from "./store-handle.js";
import { UnwrittenBatch } from "./unwritten-batch.js";

/** What BatchCommits.listeners are called with: the batch about to be written. */
export type CommitListener = (record: BatchRecord, nodes: NodeWrites, leaves: NodeWrites) => void;

/**
 * The write path of verified batches: each batch with its nodes and leaves in one atomic, fsynced
 * write, queued in call order behind one write lock, readable (unwritten) until LevelDB holds it.
 * Reached as `store.commits`; LevelStore's beginCommit, commitBatch and startCommit call it.
 */
export class BatchCommits {
  /** Called inside the write lock, before each batch's write (the pruner protects these keys). */
  readonly listeners = new Set<CommitListener>();
  private writeLock: Promise<unknown> = Promise.resolve();
  /** Verifications under way: from begin until their commit is written or abandoned. */
  private openCommits = 0;
  /** Batches whose write start queued and which LevelDB does not hold yet, by id (gen). */
  private readonly unwrittenByGen = new Map<number, UnwrittenBatch>();
  /** Batches whose write failed, so that no batch built on one of them is written. */
  private readonly failedWrites = new Set<number>();
  private commitWaiters: (() => void)[] = [];

  constructor(private readonly handle: StoreHandle) {}

  /** The batches being written, by gen: the tree records read their records from here. */
  get unwritten(): ReadonlyMap<number, UnwrittenBatch> {
    return this.unwrittenByGen;
  }

  /**
   * A commit to fill while a batch is verified (PendingCommit); nothing reaches the store until
   * commit or start writes it.
   */
  begin(gen: number): PendingCommit {
    this.handle.writable();
    // A chained batch rather than an array of operations: no array of operation objects for a
    // batch's hundreds of thousands of records.
    this.openCommits++;
    return new PendingCommit(this.handle.db.batch(), gen, () => {
      if (--this.openCommits > 0) return;
      for (const wake of this.commitWaiters.splice(0)) wake();
    });
  }

  /**
   * Stores a verified batch with its nodes and leaves: one atomic write, fsynced before returning.
   * `pending` may already hold some of the records (those it was given before).
   */
  async commit(
    record: BatchRecord,
    nodes: NodeWrites,
    leaves: NodeWrites,
    pending = this.begin(record.batch_id),
  ): Promise<void> {
    await this.start(record, nodes, leaves, pending).durable;
  }

  /**
   * commit without waiting for the write: queues it and returns `durable`, which settles when the
   * write does. Until then the batch is readable as if written (its records by gen, its record by
   * inFlight), so the next batch can be verified on top of it while it is put, written and
   * fsynced. Writes keep the order of the calls, and a batch built on one whose write failed (or
   * was refused) is refused.
   */
  start(
    record: BatchRecord,
    nodes: NodeWrites,
    leaves: NodeWrites,
    pending = this.begin(record.batch_id),
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
        pending.batch.put(batchKey(gen), jsonBytes(record));
        for (const listener of this.listeners) listener(record, nodes, leaves);
        await pending.batch.write({ sync: true });
      } catch (err) {
        this.failedWrites.add(gen);
        throw err;
      }
      this.failedWrites.delete(gen);
      await this.retireMemtable(gen);
    }).finally(() => {
      if (this.unwrittenByGen.get(gen) === unwritten) this.unwrittenByGen.delete(gen);
      pending.abandon();
    });
    const unwritten = new UnwrittenBatch(record, nodes, leaves, durable);
    this.unwrittenByGen.set(gen, unwritten);
    // Whoever holds `durable` sees a failure; this only keeps an unobserved one from being fatal.
    durable.catch(() => undefined);
    return { durable };
  }

  /**
   * A batch verified and handed to start whose write has not finished: its record and a promise
   * that settles with the write. Undefined once the write is done (then the batches have it).
   */
  inFlight(batchId: number): { record: BatchRecord; durable: Promise<void> } | undefined {
    return this.unwrittenByGen.get(batchId);
  }

  /**
   * A batch's write goes into LevelDB's memtable whole, and that memtable stays the one lookups
   * search first until the next write: every lookup of the next batch would then walk a skip list
   * of that size. A write of one key right after it makes LevelDB start a new memtable and flush
   * the full one to a table, whose index answers a lookup for less. Not fsynced: it carries
   * nothing, and its failure is ignored, since the batch is stored by then (a store that cannot
   * write any more fails the next write that matters). In the daemon, the cursor's write after the
   * gateway's answer (the "accepted" move, cursor.ts) has the same effect, but only once the claim
   * is accepted.
   */
  private async retireMemtable(gen: number): Promise<void> {
    await this.handle.db.del(retireKey(gen)).catch(() => undefined);
  }

  /** Runs `fn` while no commit (and no other locked section) is writing; calls are serialised. */
  withWriteLock<T>(fn: () => Promise<T>): Promise<T> {
    this.handle.writable();
    const run = this.writeLock.then(fn, fn);
    this.writeLock = run.catch(() => undefined);
    return run;
  }

  /**
   * Resolves when no batch is being verified (at once when none is), or after `maxWaitMs`: a long
   * read (a dump, a deep check) calls it between blocks so that it yields to the signing without
   * stopping while the member catches up batch after batch.
   */
  whenIdle(maxWaitMs: number): Promise<void> {
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
}
