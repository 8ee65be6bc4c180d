import { DacdError } from "../errors.js";
import { computeClaimHash } from "../signer/claim.js";
import type { BatchRecord } from "../storage/batch-record.js";
import type { LevelStore } from "../storage/level-store.js";
import type { VerifiedClaim } from "../model/verified-claim.js";
import type { PendingCommit } from "../storage/pending-commit.js";
import { bytesEqual, hexToBytes32, toHex0x, toHex64 } from "../util/bytes.js";
import type { StateUpdate } from "../model/state-update.js";
import {
  computeRoots,
  type ComputedRoots,
  type Roots,
  type TreeState,
} from "./trees/update/compute-roots.js";
import { MAX_GEN } from "../storage/records/node-record.js";
import type { TreeWalk } from "./trees/update/tree-walk.js";
import type { HashEngine } from "./hash/engine.js";
import { TopNodeCache } from "./trees/cache/node-cache.js";
import {
  keptHeights,
  keptTrees,
  TREES,
  type Profile,
  type TreeName,
  type TreeSpec,
} from "../model/profile.js";
import type { TreeStats } from "./trees/update/tree-stats.js";

export interface VerifyOptions {
  /** Check the order tree's root (default true); when off the stated order root is taken as given. */
  readonly validateOrders: boolean;
  /** Keep and check the rollup vault tree (spot only). Unset: the gateway is not asked for it. */
  readonly validateRollup: boolean | undefined;
  /** Take new batches after the exchange's confirmed freeze (config sign_after_freeze); default: refused. */
  readonly signAfterFreeze?: boolean;
}

export interface VerifyContext {
  readonly profile: Profile;
  readonly engine: HashEngine;
  readonly store: LevelStore;
  readonly options: VerifyOptions;
  /** The top levels of the trees, kept between batches (absent: every node is read from the store). */
  readonly topNodes?: TopNodeCache;
  /**
   * The tree walks every update takes (native, or null: JavaScript), chosen where the member is
   * wired; absent: the automatic choice (native where the addon loads).
   */
  readonly treeWalk?: TreeWalk;
}

/**
 * A verification context bound to a store: the store is checked to hold (or made to hold) this
 * profile's trees at these heights, so roots of one layout are never read as another's.
 */
export async function bindVerifyContext<C extends Omit<VerifyContext, "store">>(
  store: LevelStore,
  parts: C,
): Promise<C & { readonly store: LevelStore }> {
  await store.meta.ensureIdentity({
    profile: parts.profile.name,
    heights: keptHeights(parts.profile, parts.options.validateRollup),
  });
  return { ...parts, store };
}

/** Per-tree detail of one verification, for debug logs and metrics. */
export interface VerifyDetail {
  readonly reused: boolean;
  readonly leaves: Partial<Record<TreeName, number>>;
  readonly nodesWritten: number;
  readonly durationMs: number;
  /** Per tree: leaves, nodes read and written, time (absent for a reused batch). */
  readonly trees?: Partial<Record<TreeName, TreeStats>>;
}

/** The detail of a batch taken from the store as it was (nothing recomputed). */
export const REUSED: VerifyDetail = Object.freeze({
  reused: true,
  leaves: {},
  nodesWritten: 0,
  durationMs: 0,
});

/** Before the V4.5 order-tree upgrade the operator stated this placeholder as the order root. */
const PRE_UPGRADE_ORDER_ROOT = hexToBytes32("deadbeef".repeat(8))!;

/**
 * The verifier's output for a batch not stored before: its roots recomputed from the leaves and
 * checked against the stated ones, its claim computed (VerifiedClaim, which only this module makes:
 * the signer stage signs nothing else), and its records gathered in a pending commit. Nothing is
 * signed and nothing written: the caller signs it (signer/sign-stage.ts), then queues its write
 * (LevelStore.startCommit with `pending`), or abandons `pending` if either fails.
 */
export interface VerifiedBatch extends VerifiedClaim {
  readonly prevBatchId: number;
  readonly sequenceNumber: number;
  /** The roots the claim is made of, 64 hex digits: recomputed, or an unchecked order tree's stated one. */
  readonly roots: Record<string, string>;
  readonly heights: Record<string, number>;
  /** The recomputed trees: their root records' gens and the records the batch adds. */
  readonly computed: ComputedRoots;
  readonly pending: PendingCommit;
  /** durationMs: up to the end of the verification. */
  readonly detail: VerifyDetail;
}

/** A batch stored by an earlier run, or verified and being written: its record, and when it is durable. */
export interface StoredBatch {
  readonly record: BatchRecord;
  readonly durable: Promise<void>;
}

/** What the verifier makes of a batch: verified now, or found stored (never verified nor signed again). */
export type VerifyOutcome =
  | { readonly verified: VerifiedBatch; readonly stored?: undefined }
  | { readonly stored: StoredBatch; readonly verified?: undefined };

/**
 * The verifier stage of one batch, already parsed and range-checked: refuses it (a DacdError naming
 * the batch and the field), or returns it verified with its records pending (VerifiedBatch). A batch
 * stored before, or being written, is returned as it was: a batch id is never signed with two
 * claims.
 */
export async function verifyBatch(
  ctx: VerifyContext,
  batchId: number,
  update: StateUpdate,
  started = performance.now(),
): Promise<VerifyOutcome> {
  // Checked here too so that no caller can sign a stored batch id a second time.
  const existing = await storedOrInFlight(ctx.store, batchId);
  if (existing) return { stored: existing };
  const prev =
    update.prevBatchId === -1 ? undefined : (await storedOrInFlight(ctx.store, update.prevBatchId))?.record;
  if (update.prevBatchId !== -1 && !prev) {
    throw new DacdError(
      "UNKNOWN_PREV_BATCH",
      `previous batch ${update.prevBatchId} has not been verified by this member`,
      {
        batchId,
        field: "prev_batch_id",
      },
    );
  }
  // The batch's records are stored under its id (storage/keys.ts), which must fit their keys.
  if (batchId > MAX_GEN)
    throw new DacdError(
      "BAD_INPUT",
      `batch id ${batchId} is above ${MAX_GEN}, the largest the store keys take`,
      {
        batchId,
        field: "batch_id",
      },
    );
  await refuseAfterFreeze(ctx, batchId);
  const prevState = prev ? stateFromRecord(prev, batchId) : null;

  const trees = treesToCompute(ctx, update);
  const nodes = ctx.topNodes ? ctx.topNodes.over(ctx.store) : ctx.store;
  // Each tree's records go into the commit as soon as the tree is done; written only once every
  // root is checked and the claim signed, and dropped on any failure.
  const pending = ctx.store.beginCommit(batchId);
  try {
    const computed = await computeRoots(
      ctx.engine,
      nodes,
      trees,
      prevState,
      update.changes,
      batchId,
      (out) => pending.putNew(out.newNodes, out.newLeaves),
      ctx.treeWalk,
    );
    return { verified: verifiedBatch(ctx, batchId, update, prev, computed, pending, started) };
  } catch (err) {
    pending.abandon();
    throw err;
  }
}

/**
 * Once the base-chain watch confirmed the exchange's freeze (isFrozen() at a confirmed block), the
 * exchange takes no new state: a new batch is not signed unless sign_after_freeze says so.
 */
async function refuseAfterFreeze(ctx: VerifyContext, batchId: number): Promise<void> {
  if (ctx.options.signAfterFreeze) return;
  const frozen = (await ctx.store.onchain.cursor())?.frozen;
  if (frozen)
    throw new DacdError(
      "FROZEN",
      `batch ${batchId} not signed: the exchange is frozen at batch ${frozen.batch_id} (confirmed on the base chain at block ${frozen.block_number}) and takes no new state (sign_after_freeze: true signs anyway)`,
      { batchId, field: "batch_id" },
    );
}

/** A batch stored, or verified and being written: its record, and when it is (or was) durable. */
async function storedOrInFlight(
  store: LevelStore,
  batchId: number,
): Promise<{ record: BatchRecord; durable: Promise<void> } | undefined> {
  const inFlight = store.commits.inFlight(batchId);
  if (inFlight) return inFlight;
  const record = await store.getBatch(batchId);
  return record && { record, durable: Promise.resolve() };
}

/** Checks the recomputed roots and computes the claim they make with the sequence number. */
function verifiedBatch(
  ctx: VerifyContext,
  batchId: number,
  update: StateUpdate,
  prev: BatchRecord | undefined,
  computed: ComputedRoots,
  pending: PendingCommit,
  started: number,
): VerifiedBatch {
  const roots = checkRoots(ctx, batchId, update, computed.roots);
  const sequenceNumber = prev ? prev.sequence_number + 1 : 0;
  const claim = computeClaimHash(ctx.profile, roots, sequenceNumber);
  const leaves = Object.fromEntries(Object.entries(update.changes).map(([k, v]) => [k, v.size]));
  // The one place a VerifiedClaim is made: here, from roots just checked.
  const fields: Omit<VerifiedBatch, keyof VerifiedClaim> &
    Pick<VerifiedClaim, "batchId" | "claim" | "claimHash"> = {
    batchId,
    claim,
    claimHash: toHex0x(claim),
    prevBatchId: update.prevBatchId,
    sequenceNumber,
    roots: Object.fromEntries(Object.entries(roots).map(([k, v]) => [k, toHex64(v)])),
    heights: keptHeights(ctx.profile, ctx.options.validateRollup),
    computed,
    pending,
    detail: {
      reused: false,
      leaves,
      nodesWritten: computed.newNodes.length,
      durationMs: performance.now() - started,
      trees: computed.trees,
    },
  };
  return fields as VerifiedBatch;
}

function treesToCompute(ctx: VerifyContext, update: StateUpdate): TreeSpec[] {
  return keptTrees(ctx.profile, ctx.options.validateRollup).filter(
    (t) => t.name !== ctx.profile.order.name || ctx.options.validateOrders || !update.statedRoots[t.name],
  );
}

/** Compares recomputed roots with the stated ones; returns the roots the claim is made of. */
function checkRoots(ctx: VerifyContext, batchId: number, update: StateUpdate, computed: Roots): Roots {
  const roots: Roots = { ...computed };
  for (const [name, mine] of Object.entries(computed) as [TreeName, Uint8Array][]) {
    const stated = update.statedRoots[name];
    if (!stated) continue;
    // The pre-upgrade placeholder is not a root: keep our own order root.
    if (name === ctx.profile.order.name && bytesEqual(stated, PRE_UPGRADE_ORDER_ROOT)) continue;
    if (!bytesEqual(stated, mine)) {
      throw new DacdError(
        "ROOT_MISMATCH",
        `the ${name} root recomputed from the leaves is ${toHex64(mine)}, the update states ${toHex64(stated)}`,
        { batchId, field: TREES[name].gatewayRoot },
      );
    }
  }
  // An order tree that is not validated contributes its stated root to the claim.
  const order = ctx.profile.order.name;
  if (!computed[order]) roots[order] = update.statedRoots[order];
  return roots;
}

/** The trees a stored batch left: its roots and their records' gens. */
function stateFromRecord(prev: BatchRecord, batchId: number): TreeState {
  const roots: Roots = {};
  for (const [name, hex] of Object.entries(prev.roots)) {
    const b = hexToBytes32(hex);
    if (!b)
      throw new DacdError("STORE", `stored batch ${prev.batch_id} has a malformed ${name} root`, { batchId });
    roots[name as TreeName] = b;
  }
  const gens = { ...prev.root_gens } as TreeState["gens"];
  for (const [name, gen] of Object.entries(gens))
    if (!Number.isInteger(gen) || gen < 0 || gen > MAX_GEN)
      throw new DacdError("STORE", `stored batch ${prev.batch_id} has a malformed ${name} root gen`, {
        batchId,
      });
  return { roots, gens };
}
