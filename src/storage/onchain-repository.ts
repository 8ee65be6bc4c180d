import { Meta, metaKey, ONCHAIN_BATCH_RANGE, onchainBatchKey } from "./keys.js";
import type { OnchainBatch, OnchainCursor } from "./onchain-record.js";
import { jsonBytes, parseJson, type StoreHandle } from "./store-handle.js";

/**
 * What the base-chain watch records (chain/watch-records.ts): its cursor, and each batch's roots as the
 * exchange contract holds them. Reached as `store.onchain`.
 */
export class OnchainRepository {
  constructor(private readonly handle: StoreHandle) {}

  /** Where the watch continues and what it saw last (undefined: never followed). */
  cursor(): Promise<OnchainCursor | undefined> {
    return this.handle.getJson<OnchainCursor>(metaKey(Meta.onchain));
  }

  /** What the base chain holds for batch `batchId`, as far as the watch has read it. */
  batch(batchId: number): Promise<OnchainBatch | undefined> {
    return this.handle.getJson<OnchainBatch>(onchainBatchKey(batchId));
  }

  /** The batch the exchange froze at, once the watch has seen the freeze. */
  async frozenBatchId(): Promise<number | undefined> {
    return (await this.cursor())?.frozen?.batch_id;
  }

  /**
   * Advances the watch in one fsynced write: its cursor and the batches it read. `dropFrom`
   * (a reorg) first removes every batch read from that block on, `dropAll` (another contract)
   * every batch. Returns the batches removed.
   */
  async record(
    cursor: OnchainCursor,
    batches: readonly OnchainBatch[],
    drop: { dropFrom?: number; dropAll?: boolean } = {},
  ): Promise<OnchainBatch[]> {
    this.handle.writable();
    const { db } = this.handle;
    const ops: ({ type: "put"; key: Uint8Array; value: Uint8Array } | { type: "del"; key: Uint8Array })[] =
      [];
    const dropped: OnchainBatch[] = [];
    if (drop.dropFrom !== undefined || drop.dropAll) {
      for await (const [key, value] of db.iterator({ ...ONCHAIN_BATCH_RANGE })) {
        const batch = parseJson<OnchainBatch>(value);
        if (drop.dropAll || batch.block_number >= drop.dropFrom!) {
          ops.push({ type: "del", key });
          dropped.push(batch);
        }
      }
    }
    for (const b of batches) ops.push({ type: "put", key: onchainBatchKey(b.batch_id), value: jsonBytes(b) });
    ops.push({ type: "put", key: metaKey(Meta.onchain), value: jsonBytes(cursor) });
    await db.batch(ops, { sync: true });
    return dropped;
  }

  /**
   * The batches whose root update was read with roots but not yet compared with a stored batch
   * (the member had not stored it when the update was read).
   */
  async uncomparedBatchIds(): Promise<number[]> {
    const ids: number[] = [];
    for await (const value of this.handle.db.values({ ...ONCHAIN_BATCH_RANGE, ...this.handle.reads })) {
      const batch = parseJson<OnchainBatch>(value);
      if (batch.roots && batch.matches === undefined) ids.push(batch.batch_id);
    }
    return ids;
  }

  /** The recorded batch with the highest id (what is left after a reorg dropped the rest). */
  async last(): Promise<OnchainBatch | undefined> {
    for await (const value of this.handle.db.values({
      ...ONCHAIN_BATCH_RANGE,
      reverse: true,
      limit: 1,
      ...this.handle.reads,
    }))
      return parseJson<OnchainBatch>(value);
    return undefined;
  }
}
