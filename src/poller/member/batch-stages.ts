import type { StateUpdate } from "../../model/state-update.js";
import type { ClaimsGuard } from "../../signer/claims-guard.js";
import { signVerifiedClaim, type SignedClaim } from "../../signer/sign-stage.js";
import type { Signer } from "../../signer/signer.js";
import type { BatchRecord } from "../../storage/batch-record.js";
import type { LevelStore } from "../../storage/level-store.js";
import {
  REUSED,
  verifyBatch,
  type VerifiedBatch,
  type VerifyContext,
  type VerifyDetail,
} from "../../verifier/verify-batch.js";
import { parseStateUpdate } from "../../wire/parse-update.js";

/**
 * The middle of the pipeline for one batch, parsed: verifier (roots, claim) → signer (journal
 * check, signature) → storage (the batch's one atomic, fsynced write, queued). The poller fetched
 * and parsed it before, and posts it once the write is durable (member.ts); nothing leaves the
 * process here.
 */

/** What the stages of a batch need: the verifier's context, the member's signer and claims journal. */
export interface StageContext extends VerifyContext {
  readonly signer: Signer;
  /** The claims journal: a batch id is never signed with a claim other than the one it holds. */
  readonly claims?: ClaimsGuard;
}

/** A batch verified and signed whose durable write may still be under way. */
export interface SignedBatch {
  readonly record: BatchRecord;
  /** durationMs: up to the write being queued. */
  readonly detail: VerifyDetail;
  /**
   * Settles with the batch's write (at once for a batch stored before). Nothing of the batch (its
   * signature) may leave the process before it resolves; if it rejects, the batch is not stored.
   */
  readonly stored: Promise<void>;
}

/**
 * Verifies, signs and queues the write of one batch; returns once the write is queued (LevelStore.
 * startCommit), so that the next batch may be verified on top of this one while it is written. A
 * batch stored before (or being written) is returned as it was, neither verified nor signed again.
 */
export async function verifySignAndStartStore(
  ctx: StageContext,
  batchId: number,
  update: StateUpdate,
  started = performance.now(),
): Promise<SignedBatch> {
  const outcome = await verifyBatch(ctx, batchId, update, started);
  if (outcome.stored)
    return { record: outcome.stored.record, detail: REUSED, stored: outcome.stored.durable };
  const { verified } = outcome;
  try {
    const signed = await signVerifiedClaim(ctx.signer, ctx.claims, verified);
    const { record, durable } = startStore(ctx.store, verified, signed);
    return {
      record,
      detail: { ...verified.detail, durationMs: performance.now() - started },
      stored: durable,
    };
  } catch (err) {
    // Nothing of the batch reaches the store.
    verified.pending.abandon();
    throw err;
  }
}

/**
 * The storage stage: the batch's record, signature included, goes into the commit the verifier
 * filled with its trees' records, and the one atomic, fsynced write is queued.
 */
function startStore(
  store: LevelStore,
  verified: VerifiedBatch,
  signed: SignedClaim,
): { record: BatchRecord; durable: Promise<void> } {
  const record: BatchRecord = {
    batch_id: verified.batchId,
    prev_batch_id: verified.prevBatchId,
    sequence_number: verified.sequenceNumber,
    roots: verified.roots,
    root_gens: { ...verified.computed.rootGens },
    heights: verified.heights,
    claim_hash: signed.claimHash,
    signature: signed.signature,
    member_key: signed.memberKey,
    verified_at: new Date().toISOString(),
  };
  const { newNodes, newLeaves } = verified.computed;
  const { durable } = store.startCommit(record, newNodes, newLeaves, verified.pending);
  return { record, durable };
}

/** verifySignAndStartStore, returning once the batch is durably stored. */
export async function verifySignAndStore(
  ctx: StageContext,
  batchId: number,
  update: StateUpdate,
  started = performance.now(),
): Promise<{ record: BatchRecord; detail: VerifyDetail }> {
  const { record, detail, stored } = await verifySignAndStartStore(ctx, batchId, update, started);
  await stored;
  return { record, detail: detail.reused ? detail : { ...detail, durationMs: performance.now() - started } };
}

/** The same from a gateway answer's `update` (parsed and range-checked here); a stored batch is returned as it was. */
export async function parseVerifySignAndStore(
  ctx: StageContext,
  batchId: number,
  rawUpdate: unknown,
): Promise<{ record: BatchRecord; detail: VerifyDetail }> {
  const started = performance.now();
  const existing = await ctx.store.getBatch(batchId);
  if (existing) return { record: existing, detail: REUSED };
  const update = parseStateUpdate(rawUpdate, ctx.profile, batchId, {
    validateRollup: ctx.options.validateRollup,
  });
  return verifySignAndStore(ctx, batchId, update, started);
}
