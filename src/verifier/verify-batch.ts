import { DacdError } from "../errors.js";
import { computeClaimHash } from "../signer/claim.js";
import type { Signer } from "../signer/signer.js";
import type { BatchRecord } from "../storage/batch-record.js";
import type { ClaimsGuard } from "../storage/claims-journal.js";
import type { LevelStore } from "../storage/level-store.js";
import type { PendingCommit } from "../storage/pending-commit.js";
import { bytesEqual, hexToBytes32, toHex0x, toHex64 } from "../util/bytes.js";
import { parseStateUpdate } from "../wire/parse-update.js";
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
  /** Sign after the exchange's confirmed freeze (config sign_after_freeze); default: refused. */
  readonly signAfterFreeze?: boolean;
}

export interface VerifyContext {
  readonly profile: Profile;
  readonly engine: HashEngine;
  readonly store: LevelStore;
  readonly signer: Signer;
  readonly options: VerifyOptions;
  /** The top levels of the trees, kept between batches (absent: every node is read from the store). */
  readonly topNodes?: TopNodeCache;
  /** The claims journal: a batch id is never signed with a claim other than the one it holds. */
  readonly claims?: ClaimsGuard;
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
export async function bindVerifyContext(
  store: LevelStore,
  parts: Omit<VerifyContext, "store">,
): Promise<VerifyContext> {
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
 * Verifies one batch and stores it, or refuses it. The only path to a signature: the record it
 * returns was either stored by an earlier run (and is returned as it was: a batch id is never
 * signed with two claims) or has just been recomputed, checked and durably stored here.
 */
export async function verifyAndStoreBatch(
  ctx: VerifyContext,
  batchId: number,
  rawUpdate: unknown,
): Promise<{ record: BatchRecord; detail: VerifyDetail }> {
  const started = performance.now();
  const existing = await ctx.store.getBatch(batchId);
  if (existing) {
    return { record: existing, detail: REUSED };
  }

  const update = parseStateUpdate(rawUpdate, ctx.profile, batchId, {
    validateRollup: ctx.options.validateRollup,
  });
  return verifyParsedAndStore(ctx, batchId, update, started);
}

/** The same for an update already parsed and range-checked (benchmarks start the clock here). */
export async function verifyParsedAndStore(
  ctx: VerifyContext,
  batchId: number,
  update: StateUpdate,
  started = performance.now(),
): Promise<{ record: BatchRecord; detail: VerifyDetail }> {
  const { record, detail, stored } = await verifyParsedAndStartStore(ctx, batchId, update, started);
  await stored;
  return { record, detail: detail.reused ? detail : { ...detail, durationMs: performance.now() - started } };
}

/** A batch verified and signed whose durable write may still be under way. */
export interface VerifiedBatch {
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
 * verifyParsedAndStore up to the write: returns once the batch's write is queued (LevelStore.
 * startCommit). The next batch may then be verified on top of this one while it is written.
 */
export async function verifyParsedAndStartStore(
  ctx: VerifyContext,
  batchId: number,
  update: StateUpdate,
  started = performance.now(),
): Promise<VerifiedBatch> {
  // Checked here too so that no caller can sign a stored batch id a second time.
  const existing = await storedOrInFlight(ctx.store, batchId);
  if (existing) return { record: existing.record, detail: REUSED, stored: existing.durable };
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
  // Each tree's records go into the commit as soon as the tree is done; written only below, after
  // every root is checked and the claim signed, and dropped on any failure.
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
    return await signAndStartStore(ctx, batchId, update, prev, computed, pending, started);
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

/** Checks the recomputed roots, signs the claim and queues the batch's one atomic, fsynced write. */
async function signAndStartStore(
  ctx: VerifyContext,
  batchId: number,
  update: StateUpdate,
  prev: BatchRecord | undefined,
  computed: ComputedRoots,
  pending: PendingCommit,
  started: number,
): Promise<VerifiedBatch> {
  const roots = checkRoots(ctx, batchId, update, computed.roots);

  const sequenceNumber = prev ? prev.sequence_number + 1 : 0;
  const claim = computeClaimHash(ctx.profile, roots, sequenceNumber);
  ctx.claims?.check(batchId, toHex0x(claim));
  // A batch id released before (the store lost it) keeps its journaled signature: a token's is not
  // deterministic, and a second one would differ.
  const signature =
    (await ctx.claims?.journaledSignature(batchId, ctx.signer.memberKey)) ?? (await ctx.signer.sign(claim));
  const record: BatchRecord = {
    batch_id: batchId,
    prev_batch_id: update.prevBatchId,
    sequence_number: sequenceNumber,
    roots: Object.fromEntries(Object.entries(roots).map(([k, v]) => [k, toHex64(v)])),
    root_gens: { ...computed.rootGens },
    heights: keptHeights(ctx.profile, ctx.options.validateRollup),
    claim_hash: toHex0x(claim),
    signature,
    member_key: ctx.signer.memberKey,
    verified_at: new Date().toISOString(),
  };
  const { durable } = ctx.store.startCommit(record, computed.newNodes, computed.newLeaves, pending);
  const leaves = Object.fromEntries(Object.entries(update.changes).map(([k, v]) => [k, v.size]));
  return {
    record,
    stored: durable,
    detail: {
      reused: false,
      leaves,
      nodesWritten: computed.newNodes.length,
      durationMs: performance.now() - started,
      trees: computed.trees,
    },
  };
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
