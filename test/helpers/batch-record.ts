import type { BatchRecord } from "../../src/storage/batch-record.js";

/**
 * A batch record for store tests that write records without verifying a batch: batch `batchId` on
 * the one before, its sequence number its id, no roots, a zero claim and no signature.
 */
export function placeholderRecord(batchId: number): BatchRecord {
  return {
    batch_id: batchId,
    prev_batch_id: batchId - 1,
    sequence_number: batchId,
    roots: {},
    root_gens: {},
    heights: {},
    claim_hash: "0x" + "00".repeat(32),
    signature: "0x",
    member_key: "0x",
    verified_at: new Date(0).toISOString(),
  };
}
