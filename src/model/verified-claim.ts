/**
 * The brand of a claim the verifier made: no object literal can carry it (its key exists only in
 * the types), so a VerifiedClaim comes from src/verifier/verify-batch.ts or from nowhere.
 */
declare const madeByTheVerifier: unique symbol;

/**
 * What the signer stage (signer/sign-stage.ts) signs: a batch's availability claim computed from
 * roots the verifier recomputed from the leaves and checked against the stated ones. The signer
 * takes nothing else, so nothing unverified can be signed.
 */
export interface VerifiedClaim {
  readonly batchId: number;
  /** The claim hash (docs/algorithms.md, From an update to a claim), 32 bytes. */
  readonly claim: Uint8Array;
  /** The same, 0x + 64 lower-case hex digits, as it is journaled, stored and posted. */
  readonly claimHash: string;
  readonly [madeByTheVerifier]: true;
}
