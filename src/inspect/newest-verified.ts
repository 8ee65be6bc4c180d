import type { BatchRecord } from "../storage/batch-record.js";
import type { LevelStore } from "../storage/level-store.js";

/**
 * The newest batch this store's member has verified and moved past: accepted by the gateway, or
 * verified in shadow mode (where nothing is ever accepted), or else the batch the store was loaded
 * at. A batch verified and still waiting for the gateway's acceptance is not one of them.
 */
export async function newestVerifiedBatch(store: LevelStore): Promise<BatchRecord | undefined> {
  const accepted = (await store.getCursor())?.last_accepted_batch_id ?? -1;
  const newest = await store.lastBatchId();
  if (newest === undefined) return undefined;
  // Only the batches after the last accepted one can be shadow-verified ones; few are pending.
  for (let id = newest; id > accepted; id--) {
    const record = await store.getBatch(id);
    if (record?.shadowed_at || record?.accepted_at) return record;
  }
  return accepted >= 0 ? store.getBatch(accepted) : undefined;
}

/** The mode the store's newest batch was handled in: a shadow run marks each batch it passes. */
export function modeOfRecord(record: BatchRecord | undefined): "shadow" | "active" | undefined {
  if (!record) return undefined;
  if ((record as { loaded_from_dump?: true }).loaded_from_dump) return undefined;
  return record.shadowed_at ? "shadow" : "active";
}

/**
 * The batch a read command (show leaf, proof, dump) works on without `--batch`: the newest verified
 * one, else the newest stored.
 */
export async function defaultBatchId(store: LevelStore): Promise<number | undefined> {
  return (await newestVerifiedBatch(store))?.batch_id ?? (await store.lastBatchId());
}
