import { DacdError } from "../errors.js";
import { defaultBatchId } from "../inspect/newest-verified.js";
import type { BatchRecord } from "../storage/batch-record.js";
import type { LevelStore } from "../storage/level-store.js";
import { isPruned } from "../storage/prune-info.js";
import { hexToBytes32 } from "../util/bytes.js";
import type { TreeSpec } from "../model/profile.js";

/** What the escape commands share: which batch a command reads (never a pruned one). */

/**
 * A batch record written by `dacd load`: the state came from a dump, this member never signed it,
 * so `signature` and `member_key` are empty strings and the daemon must never post it.
 */
export interface LoadedBatchRecord extends BatchRecord {
  readonly loaded_from_dump?: true;
}

/**
 * The batch a read command works on: `--batch N`, else the batch the exchange froze at (escapes
 * are checked against it), else the newest verified (inspect/newest-verified.ts).
 */
export async function resolveBatch(store: LevelStore, batchId?: number): Promise<BatchRecord> {
  const id = batchId ?? (await store.onchain.frozenBatchId()) ?? (await defaultBatchId(store));
  if (id === undefined) throw new DacdError("BAD_INPUT", "the store holds no batch yet");
  const record = await store.getBatch(id);
  if (!record) throw new DacdError("BAD_INPUT", `batch ${id} is not in the store`);
  const prune = await store.batches.pruneInfo();
  if (isPruned(prune, id)) {
    throw new DacdError(
      "BAD_INPUT",
      `batch ${id} was pruned on ${prune!.at} (its record is kept, its trees are not); kept batches: ${prune!.kept.join(", ")}`,
    );
  }
  return record;
}

export function rootOf(record: BatchRecord, spec: TreeSpec): Uint8Array {
  const root = hexToBytes32(record.roots[spec.name] ?? "");
  if (!root) throw new DacdError("STORE", `batch ${record.batch_id} has no ${spec.name} root`);
  return root;
}
