import type { BatchRecord, Cursor, StoreIdentity } from "./batch-record.js";
import { cursorAfter, type CursorMove } from "./cursor.js";
import { BATCH_RANGE, batchIdFromKey, batchKey, Meta, metaKey, type MetaName, Prefix } from "./keys.js";
import { identityPuts } from "./meta-repository.js";
import type { PruneInfo } from "./prune-info.js";
import { jsonBytes, parseJson, type StoreHandle } from "./store-handle.js";

/** A batch record as read by chunks: `record` is undefined when the stored bytes are not JSON. */
export interface BatchEntry {
  readonly id: number;
  readonly record: BatchRecord | undefined;
}

/**
 * The batch records (one per verified batch, keyed by id), the cursor the member resumes from,
 * and the prune marker that says which batches lost their trees. Reached as `store.batches`; a
 * batch's record is written with its trees by the commit (batch-commits.ts).
 */
export class BatchRepository {
  constructor(private readonly handle: StoreHandle) {}

  get(batchId: number): Promise<BatchRecord | undefined> {
    return this.handle.getJson<BatchRecord>(batchKey(batchId));
  }

  /** Batch records in id order, optionally from `fromId` on. */
  async *records(fromId = 0): AsyncGenerator<BatchRecord> {
    for await (const [, v] of this.handle.db.iterator({
      gte: batchKey(fromId),
      lt: Uint8Array.of(Prefix.batch + 1),
      ...this.handle.reads,
    })) {
      yield parseJson<BatchRecord>(v);
    }
  }

  async lastId(): Promise<number | undefined> {
    for await (const k of this.handle.db.keys({
      gte: batchKey(0),
      lt: Uint8Array.of(Prefix.batch + 1),
      reverse: true,
      limit: 1,
      ...this.handle.reads,
    })) {
      return batchIdFromKey(k);
    }
    return undefined;
  }

  /** The ids of the stored batch records, in order. */
  /** The lowest stored batch id (undefined: none stored). */
  async firstId(): Promise<number | undefined> {
    for await (const k of this.handle.db.keys({ ...BATCH_RANGE, limit: 1, ...this.handle.reads }))
      return batchIdFromKey(k);
    return undefined;
  }

  async *ids(): AsyncGenerator<number> {
    for await (const k of this.handle.db.keys({ ...BATCH_RANGE, ...this.handle.reads }))
      yield batchIdFromKey(k);
  }

  /**
   * The batch records in id order, `size` at a time; a record that is not valid JSON comes as
   * undefined (the records check reports it rather than failing).
   */
  async *chunks(size: number): AsyncGenerator<BatchEntry[]> {
    const it = this.handle.db.iterator({ ...BATCH_RANGE, ...this.handle.reads });
    try {
      for (;;) {
        const entries = await it.nextv(size);
        if (entries.length === 0) return;
        yield entries.map(([key, value]) => {
          let record: BatchRecord | undefined;
          try {
            record = parseJson<BatchRecord>(value);
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

  cursor(): Promise<Cursor | undefined> {
    return this.handle.getJson<Cursor>(metaKey(Meta.cursor));
  }

  /**
   * The one place the cursor is written: moves it (cursor.ts says where each move leads) and writes
   * it with the batch record the move changes, if any, in one fsynced write. A load that builds a
   * fresh store passes `fresh`: the store's identity (and node format) and meta records go in the
   * same write, the last of the load, so a store whose load did not finish has none of them.
   */
  async moveCursor(
    move: CursorMove,
    fresh?: { identity: StoreIdentity; meta?: Partial<Record<MetaName, unknown>> },
  ): Promise<{ cursor: Cursor; record?: BatchRecord }> {
    this.handle.writable();
    const moved = cursorAfter(await this.cursor(), move);
    const puts = fresh ? identityPuts(fresh.identity) : [];
    for (const [name, value] of Object.entries(fresh?.meta ?? {}))
      puts.push({ type: "put", key: metaKey(name as MetaName), value: jsonBytes(value) });
    if (moved.record)
      puts.push({ type: "put", key: batchKey(moved.record.batch_id), value: jsonBytes(moved.record) });
    puts.push({ type: "put", key: metaKey(Meta.cursor), value: jsonBytes(moved.cursor) });
    await this.handle.db.batch(puts, { sync: true });
    return moved;
  }

  /** The prune marker, if the store was ever pruned (prune-info.ts). */
  pruneInfo(): Promise<PruneInfo | undefined> {
    return this.handle.getJson<PruneInfo>(metaKey(Meta.prune));
  }

  /** Records which batches lose their trees; written, fsynced, before the prune deletes a node. */
  async setPruneInfo(info: PruneInfo): Promise<void> {
    this.handle.writable();
    await this.handle.db.put(metaKey(Meta.prune), jsonBytes(info), { sync: true });
  }
}
