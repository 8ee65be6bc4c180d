import type { PostedSignature } from "./signer.js";

/**
 * What the signer and the poller ask of the claims journal (storage/claims-journal.ts), one place
 * each: the signer stage checks and reuses it before signing (sign-stage.ts), the poller records
 * the claim durably before posting (poller/member/member.ts).
 */
export interface ClaimsGuard {
  /** Throws CONFLICTING_CLAIM when `batchId` is journaled with another claim. */
  check(batchId: number, claimHash: string): void;
  /**
   * `check`, then records the claim durably unless it is recorded already; before the POST. Returns
   * the signature to post: the journaled one when the batch was released before by this key.
   */
  ensure(
    batchId: number,
    claimHash: string,
    signature: PostedSignature,
    memberKey?: string,
  ): Promise<PostedSignature>;
  /**
   * The signature this member key released for `batchId`, if any: a batch id is signed once, since
   * a token's ECDSA nonces are random and a second signature would differ from the journaled one.
   */
  journaledSignature(batchId: number, memberKey: string): Promise<PostedSignature | undefined>;
}
