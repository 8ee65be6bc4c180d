/**
 * What the base-chain watch (src/chain) has learned, as the store keeps it: its cursor (meta record
 * `onchain`) and one record per batch whose root update it read (meta `onchain_batch/` ‖ batch id).
 * Only confirmed blocks are recorded.
 */
import type { TreeName } from "../model/profile.js";

export interface OnchainCursor {
  /** The exchange contract followed (lower case): another address starts the watch afresh. */
  readonly contract: string;
  /** The first block not read yet. */
  readonly next_block: number;
  /** The last block read and its hash: another hash there later is a reorg deeper than the confirmations. */
  readonly last_block?: { readonly number: number; readonly hash: string };
  /** The newest root update read. */
  readonly last?: OnchainPosition;
  /** Set once the exchange is seen frozen: the batch escapes are checked against. */
  readonly frozen?: OnchainFreeze;
}

export interface OnchainPosition {
  readonly batch_id: number;
  readonly sequence_number: number;
  readonly block_number: number;
}

export interface OnchainFreeze {
  /** The contract's getLastBatchId() at the block the freeze was seen in. */
  readonly batch_id: number;
  readonly block_number: number;
  readonly detected_at: string;
  /** Perpetual: the frozen batch's shared state, once read from its updateState transaction. */
  readonly shared_state?: FrozenSharedState;
}

/**
 * The shared state a perpetual escape is verified against: the new shared state of the program
 * output of the frozen batch's `updateState` transaction (its keccak is what the exchange keeps).
 */
export interface FrozenSharedState {
  readonly batch_id: number;
  /** The updateState transaction it was read from. */
  readonly tx_hash: string;
  /** The words, 0x hex (64 digits). */
  readonly words: readonly string[];
  /** The exchange's getSystemAssetType() (what `withdraw` takes), 0x hex; absent when unreadable. */
  readonly system_asset_type?: string;
}

export interface OnchainBatch extends OnchainPosition {
  readonly tx_hash: string;
  readonly event: "LogRootUpdate" | "LogUpdateState";
  /** The roots on-chain (64 hex digits per tree); absent when neither logged nor readable. */
  readonly roots?: Partial<Record<TreeName, string>>;
  /** Whether they equal the roots this member stored for the batch; absent when it has none to compare. */
  readonly matches?: boolean;
}
