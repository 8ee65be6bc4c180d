import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { signVerifiedClaim } from "../../src/signer/sign-stage.js";
import type { Signer } from "../../src/signer/signer.js";
import { ClaimsJournal } from "../../src/storage/claims-journal.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { verifyBatch, type VerifiedBatch } from "../../src/verifier/verify-batch.js";
import { parseStateUpdate } from "../../src/wire/parse-update.js";
import { contextFor } from "../helpers/chain-store.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";
import { loadChain } from "../helpers/vectors.js";

/**
 * The signer stage signs the verifier's claim and nothing else, checks the claims journal first,
 * and leaves nothing stored: the verifier's records stay pending until the storage stage.
 */

afterEach(removeTempDirs);

const { responses, expected } = loadChain("spot-golden");

/** Counts the claims the signer was asked to sign. */
function counting(signer: Signer): { signer: Signer; signed: () => number } {
  let n = 0;
  return {
    signer: {
      chainKind: signer.chainKind,
      memberKey: signer.memberKey,
      sign: (claim) => {
        n++;
        return signer.sign(claim);
      },
    },
    signed: () => n,
  };
}

async function verifiedFirstBatch(): Promise<{ store: LevelStore; verified: VerifiedBatch; signer: Signer }> {
  const store = await LevelStore.open(join(await tempDir("dacd-sign-stage-"), "db"));
  const ctx = contextFor(store, "spot-golden");
  const update = parseStateUpdate(responses[0]!.update, ctx.profile, 0, {
    validateRollup: ctx.options.validateRollup,
  });
  const outcome = await verifyBatch(ctx, 0, update);
  if (!outcome.verified) throw new Error("batch 0 was found stored in a fresh store");
  return { store, verified: outcome.verified, signer: ctx.signer };
}

describe("the signer stage", () => {
  it("signs the verified claim with the vectors' signature; the verifier signed and stored nothing", async () => {
    const { store, verified, signer } = await verifiedFirstBatch();
    try {
      const want = expected.batches[0]!;
      expect(verified.claimHash).toBe(want.claim_hash);
      expect("signature" in verified).toBe(false);
      const journal = await ClaimsJournal.open(join(await tempDir("dacd-sign-stage-"), "claims.journal"));
      try {
        const signed = await signVerifiedClaim(signer, journal, verified);
        expect(signed).toEqual({
          batchId: 0,
          claimHash: want.claim_hash,
          signature: want.signature,
          memberKey: expected.member_key,
        });
        // Signing journals nothing: the poller records the claim before it posts.
        expect(journal.size).toBe(0);
      } finally {
        await journal.close();
      }
      expect(await store.getBatch(0)).toBeUndefined();
      verified.pending.abandon();
    } finally {
      await store.close();
    }
  });

  it("refuses a claim the journal holds another claim for, before the signer is asked", async () => {
    const { store, verified, signer } = await verifiedFirstBatch();
    const journal = await ClaimsJournal.open(join(await tempDir("dacd-sign-stage-"), "claims.journal"));
    try {
      // Another claim for batch 0 released before (what a store that lost the batch would meet).
      const other = "0x" + "cd".repeat(32);
      await journal.ensure(0, other, expected.batches[0]!.signature, expected.member_key);
      const counted = counting(signer);
      await expect(signVerifiedClaim(counted.signer, journal, verified)).rejects.toMatchObject({
        code: "CONFLICTING_CLAIM",
        batchId: 0,
      });
      expect(counted.signed()).toBe(0);
    } finally {
      verified.pending.abandon();
      await journal.close();
      await store.close();
    }
  });

  it("takes only a claim the verifier made (checked by the compiler)", () => {
    const notVerified = { batchId: 0, claim: new Uint8Array(32), claimHash: "0x" + "00".repeat(32) };
    const never = (signer: Signer): unknown =>
      // @ts-expect-error a claim not made by the verifier is not a VerifiedClaim
      signVerifiedClaim(signer, undefined, notVerified);
    expect(typeof never).toBe("function");
  });
});
