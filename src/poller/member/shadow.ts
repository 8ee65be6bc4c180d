import type { BatchRecord, Cursor } from "../../storage/batch-record.js";
import type { LevelStore } from "../../storage/level-store.js";

/**
 * Shadow mode (config `mode: shadow`, `dacd run --shadow`): every batch is fetched, verified,
 * stored and signed as in active mode, but its signature is never posted to approve_new_roots; the
 * member moves past it once it is verified. A member switched to active later continues at its
 * cursor: batches passed in shadow mode are never posted (the member beside it already signed
 * them, and the operator has moved on).
 */

export type MemberMode = "active" | "shadow";

/** Whether a verified batch's signature goes to the gateway: the one place shadow mode decides it. */
export function postsClaims(mode: MemberMode | undefined): boolean {
  return mode !== "shadow";
}

/**
 * Marks a batch passed in shadow mode and advances the cursor past it, in one fsynced write, so
 * that a member restarted in active mode never finds it waiting to be posted.
 */
export async function markShadowed(store: LevelStore, record: BatchRecord, at: Date): Promise<BatchRecord> {
  const updated: BatchRecord = { ...record, shadowed_at: at.toISOString() };
  const previous = await store.getCursor();
  const cursor: Cursor = {
    ...previous,
    next_batch_id: Math.max(record.batch_id + 1, previous?.next_batch_id ?? 0),
    last_accepted_batch_id: previous?.last_accepted_batch_id ?? -1,
  };
  await store.batches.putWithCursor(updated, cursor);
  return updated;
}
