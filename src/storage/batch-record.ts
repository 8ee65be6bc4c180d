import type { PostedSignature } from "../signer/signer.js";

/**
 * What dacd keeps per verified batch. It is written in the same atomic, fsynced LevelDB batch as
 * the batch's tree nodes, before the signature is posted, so a crash can never leave a posted
 * signature without the state that justifies it. Hex values are lower case.
 */
export interface BatchRecord {
  readonly batch_id: number;
  readonly prev_batch_id: number;
  readonly sequence_number: number;
  /** Recomputed roots per tree (64 hex digits, no prefix); for an unchecked order tree, the stated root. */
  readonly roots: Record<string, string>;
  /**
   * Per stored tree, the number of the batch that wrote its root's record (the root's key starts
   * with it: storage/keys.ts), 0 for an empty tree. Absent for a tree whose root is not stored (an
   * order tree taken as stated). Kept apart from `roots`, which the claim is made of.
   */
  readonly root_gens: Record<string, number>;
  readonly heights: Record<string, number>;
  readonly claim_hash: string;
  readonly signature: PostedSignature;
  readonly member_key: string;
  /** ISO time of verification. */
  readonly verified_at: string;
  /** ISO time at which approve_new_roots answered `signature accepted`; absent until then. */
  readonly accepted_at?: string;
  /** ISO time at which a member in shadow mode moved past it without posting (poller/member/shadow.ts). */
  readonly shadowed_at?: string;
}

/**
 * The daemon's resume point. `next_batch_id` is where it continues; it passes a batch only when the
 * gateway accepted its signature, or when the operator abandoned a batch this member refused
 * (a later batch builds on an earlier one), which `skipped` records.
 */
export interface Cursor {
  readonly next_batch_id: number;
  /** The last batch whose signature the gateway accepted; -1 before the first. */
  readonly last_accepted_batch_id: number;
  readonly skipped?: readonly number[];
}

/** Which profile and heights the store was created for; a store never mixes profiles. */
export interface StoreIdentity {
  readonly profile: string;
  readonly heights: Record<string, number>;
}
