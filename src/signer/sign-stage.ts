import type { VerifiedClaim } from "../model/verified-claim.js";
import type { ClaimsGuard } from "./claims-guard.js";
import type { PostedSignature, Signer } from "./signer.js";

/** A verified claim and the member's signature of it; nothing of it is stored or posted yet. */
export interface SignedClaim {
  readonly batchId: number;
  readonly claimHash: string;
  readonly signature: PostedSignature;
  readonly memberKey: string;
}

/**
 * The signer stage of a batch: checks the claim against the claims journal (a batch id is never
 * signed with a claim other than the one it holds), then signs it. It takes only the verifier's
 * claim (VerifiedClaim). Nothing leaves the process here: the batch is stored with its signature
 * next, and only posted once that write and the journal's are durable (poller/member/member.ts).
 */
export async function signVerifiedClaim(
  signer: Signer,
  claims: ClaimsGuard | undefined,
  verified: VerifiedClaim,
): Promise<SignedClaim> {
  const { batchId, claimHash } = verified;
  claims?.check(batchId, claimHash);
  // A batch id released before (the store lost it) keeps its journaled signature: a token's is not
  // deterministic, and a second one would differ.
  const signature =
    (await claims?.journaledSignature(batchId, signer.memberKey)) ?? (await signer.sign(verified.claim));
  return { batchId, claimHash, signature, memberKey: signer.memberKey };
}
