import {
  ASSET_ID_LIMIT,
  checkAssetCount,
  type Range,
  SIGNED_64,
  sortAssets,
  VAULT_BALANCE,
  vaultProblem,
} from "../model/leaf-rules.js";
import {
  keptTrees,
  profileTrees,
  TREES,
  type Profile,
  type TreeName,
  type TreeSpec,
} from "../model/profile.js";
import {
  type At,
  child,
  fail,
  onlyKeys,
  readDecimal,
  readHex,
  readInteger,
  readLeafId,
  readObject,
  readRoot,
  required,
} from "./fields.js";
import type {
  LeafChanges,
  OrderLeaf,
  PositionAsset,
  PositionLeaf,
  StateUpdate,
  VaultLeaf,
} from "../model/state-update.js";

/** What the member asked for, which decides which parts of the update must be present. */
export interface ParseOptions {
  /** Rollup leaves are expected (and required) only when the member asked for them. */
  readonly validateRollup?: boolean | undefined;
}

/** Where an update carries one tree: the key of its changed leaves and the key of its stated root. */
export interface UpdateTree {
  readonly spec: TreeSpec;
  readonly leavesKey: string;
  readonly rootKey: string;
}

/** The trees an update of this profile carries (the kept ones), in the order they are read. */
export function updateTrees(profile: Profile, opts: ParseOptions = {}): UpdateTree[] {
  return keptTrees(profile, opts.validateRollup).map((spec) => ({
    spec,
    leavesKey: TREES[spec.name].gatewayLeaves,
    rootKey: TREES[spec.name].gatewayRoot,
  }));
}

/**
 * The keys an update of this profile may have: every tree of the profile's, kept or not (rollup
 * data is optional in the format; the gateway sends it when asked, validate_rollup=True).
 */
function updateKeys(profile: Profile): string[] {
  return [
    "prev_batch_id",
    ...profileTrees(profile).flatMap((t) => [TREES[t.name].gatewayLeaves, TREES[t.name].gatewayRoot]),
  ];
}

/**
 * The `prev_batch_id` of batch `batchId`'s update: an integer from -1 that precedes the batch.
 * Throws DacdError BAD_INPUT naming the batch and the field.
 */
export function readPrevBatchId(update: unknown, batchId: number): number {
  const at: At = { batchId, path: "update" };
  const obj = readObject(update, at);
  const prevBatchId = readInteger(required(obj, "prev_batch_id", at), child(at, "prev_batch_id"), -1);
  if (prevBatchId >= batchId)
    fail(child(at, "prev_batch_id"), `${prevBatchId} does not precede batch ${batchId}`);
  return prevBatchId;
}

/**
 * Parses the `update` of a `get_batch_data` answer into typed, range-checked leaves
 * (docs/algorithms.md, Leaves). Throws DacdError BAD_INPUT naming the batch and the field.
 */
export function parseStateUpdate(
  update: unknown,
  profile: Profile,
  batchId: number,
  opts: ParseOptions = {},
): StateUpdate {
  const at: At = { batchId, path: "update" };
  const prevBatchId = readPrevBatchId(update, batchId);
  const obj = update as Record<string, unknown>;
  onlyKeys(obj, updateKeys(profile), at);
  const changes: Partial<Record<TreeName, LeafChanges>> = {};
  const statedRoots: Partial<Record<TreeName, Uint8Array>> = {};
  for (const { spec, leavesKey, rootKey } of updateTrees(profile, opts)) {
    changes[spec.name] = readLeaves(
      required(obj, leavesKey, at),
      child(at, leavesKey),
      spec,
      profile.orderAmountLimit,
    );
    statedRoots[spec.name] = readRoot(required(obj, rootKey, at), child(at, rootKey));
  }
  return { prevBatchId, changes, statedRoots };
}

function readLeaves(v: unknown, at: At, spec: TreeSpec, orderAmountLimit: bigint): LeafChanges {
  const map = readObject(v, at);
  const out: LeafChanges = new Map();
  for (const key of Object.keys(map)) {
    const leafAt = child(at, key);
    const id = readLeafId(key, leafAt, spec.height);
    const raw = map[key];
    switch (spec.leaf) {
      case "vault":
        out.set(id, readVault(raw, leafAt));
        break;
      case "position":
        out.set(id, readPosition(raw, leafAt));
        break;
      case "order":
        out.set(id, readOrder(raw, leafAt, orderAmountLimit));
        break;
    }
  }
  return out;
}

function readVault(v: unknown, at: At): VaultLeaf {
  const o = readObject(v, at);
  onlyKeys(o, ["stark_key", "core_key", "token", "balance"], at);
  // The native gateways name the key `stark_key`, the interface text `core_key`: accept either,
  // but never guess between two different values.
  const hasStark = Object.prototype.hasOwnProperty.call(o, "stark_key");
  const hasCore = Object.prototype.hasOwnProperty.call(o, "core_key");
  if (!hasStark && !hasCore) fail(child(at, "stark_key"), "missing (neither stark_key nor core_key given)");
  const stark = hasStark ? readHex(o.stark_key, child(at, "stark_key")) : undefined;
  const core = hasCore ? readHex(o.core_key, child(at, "core_key")) : undefined;
  if (stark !== undefined && core !== undefined && stark !== core) {
    fail(child(at, "core_key"), "stark_key and core_key are both given with different values");
  }
  const key = (stark ?? core)!;
  const token = readHex(required(o, "token", at), child(at, "token"));
  const balance = readRange(required(o, "balance", at), child(at, "balance"), VAULT_BALANCE);
  const problem = vaultProblem({ key, token, balance });
  if (problem)
    fail(
      child(at, problem.field === "token" ? "token" : hasStark ? "stark_key" : "core_key"),
      problem.message,
    );
  return { key, token, balance };
}

function readPosition(v: unknown, at: At): PositionLeaf {
  const o = readObject(v, at);
  onlyKeys(o, ["public_key", "collateral_balance", "assets"], at);
  const publicKey = readHex(required(o, "public_key", at), child(at, "public_key"));
  const collateral = readRange(
    required(o, "collateral_balance", at),
    child(at, "collateral_balance"),
    SIGNED_64,
  );
  const assetsAt = child(at, "assets");
  const assetsObj = readObject(required(o, "assets", at), assetsAt);
  const ids = Object.keys(assetsObj);
  const refuse = (message: string): never => fail(assetsAt, message);
  // The count is refused before any asset is read: a hostile body does not cost a parse per asset.
  checkAssetCount(ids.length, refuse);
  const assets: PositionAsset[] = [];
  for (const idKey of ids) {
    const aAt = child(assetsAt, idKey);
    const assetId = readHex(idKey, aAt, ASSET_ID_LIMIT);
    const a = readObject(assetsObj[idKey], aAt);
    onlyKeys(a, ["balance", "cached_funding_index"], aAt);
    const balance = readRange(required(a, "balance", aAt), child(aAt, "balance"), SIGNED_64);
    const fundingIndex = readRange(
      required(a, "cached_funding_index", aAt),
      child(aAt, "cached_funding_index"),
      SIGNED_64,
    );
    assets.push({ assetId, balance, fundingIndex });
  }
  return { publicKey, collateral, assets: sortAssets(assets, refuse) };
}

function readOrder(v: unknown, at: At, orderAmountLimit: bigint): OrderLeaf {
  const o = readObject(v, at);
  onlyKeys(o, ["fulfilled_amount"], at);
  // Perpetual order amounts are unsigned 64-bit; spot amounts stay below 2^63 (the profile's data).
  return readDecimal(
    required(o, "fulfilled_amount", at),
    child(at, "fulfilled_amount"),
    0n,
    orderAmountLimit,
  );
}

const readRange = (v: unknown, at: At, r: Range): bigint => readDecimal(v, at, r.min, r.max);
