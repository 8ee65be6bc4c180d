/** The read-only view of the batch chain the feeder and availability servers answer from. */
import type { Profile, TreeName } from "./shared.js";

export interface TxRecord {
  readonly txId: number;
  readonly tx: unknown;
  readonly wasReplaced: boolean;
  readonly altTxs: readonly unknown[];
  /** Why the transaction was replaced (devnet status only, not part of the interface). */
  readonly reason?: string | undefined;
}

export interface BatchView {
  readonly batchId: number;
  readonly prevBatchId: number;
  readonly sequenceNumber: number;
  /** Unix seconds. */
  readonly timeCreated: number;
  readonly txs: readonly TxRecord[];
  readonly rejected: boolean;
  /** Roots as published: 64 hex digits, no prefix, per tree. */
  readonly stated: Partial<Record<TreeName, string>>;
  /** The claim hash the devnet expects committee members to sign for this batch. */
  readonly expectedClaim: Uint8Array;
  /** The `update` object of `get_batch_data`. */
  update(validateRollup: boolean): Record<string, unknown>;
}

export interface ChainView {
  readonly profile: Profile;
  /** Roots of the empty state (hex64), the "previous roots" of a batch built on -1. */
  readonly genesis: Partial<Record<TreeName, string>>;
  /** -1 when no batch exists. */
  lastBatchId(): number;
  batch(id: number): BatchView | undefined;
}

/** The published roots a batch builds on (its previous batch's, or the empty state's). */
export function prevStated(chain: ChainView, b: BatchView): Partial<Record<TreeName, string>> {
  return b.prevBatchId < 0 ? chain.genesis : (chain.batch(b.prevBatchId)?.stated ?? chain.genesis);
}
