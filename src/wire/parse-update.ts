import type { Profile, TreeName, TreeSpec } from "../model/profile.js";
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

const B63 = 1n << 63n;
const B64 = 1n << 64n;
const ASSET_ID_LIMIT = 1n << 120n;
const MAX_ASSETS = 1 << 16;

/** Where an update carries one tree: the key of its changed leaves and the key of its stated root. */
export interface UpdateTree {
  readonly spec: TreeSpec;
  readonly leavesKey: string;
  readonly rootKey: string;
}

/** The trees an update of this profile carries, in the order they are read. */
export function updateTrees(profile: Profile, opts: ParseOptions = {}): UpdateTree[] {
  if (profile.variant === "P")
    return [
      { spec: profile.main, leavesKey: "positions", rootKey: "position_root" },
      { spec: profile.order, leavesKey: "orders", rootKey: "order_root" },
    ];
  const trees = [
    { spec: profile.main, leavesKey: "vaults", rootKey: "vault_root" },
    { spec: profile.order, leavesKey: "orders", rootKey: "order_root" },
  ];
  if (profile.rollup && opts.validateRollup === true)
    trees.push({ spec: profile.rollup, leavesKey: "rollup_vaults", rootKey: "rollup_vault_root" });
  return trees;
}

/** The keys an update of this profile may have. */
function updateKeys(profile: Profile): string[] {
  if (profile.variant === "P") return ["prev_batch_id", "positions", "position_root", "orders", "order_root"];
  // Rollup data is optional in the format; the gateway sends it when asked (validate_rollup=True).
  return [
    "prev_batch_id",
    "vaults",
    "vault_root",
    "orders",
    "order_root",
    "rollup_vaults",
    "rollup_vault_root",
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
 * (committee-algorithms §2). Throws DacdError BAD_INPUT naming the batch and the field.
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
      profile.variant,
    );
    statedRoots[spec.name] = readRoot(required(obj, rootKey, at), child(at, rootKey));
  }
  return { prevBatchId, changes, statedRoots };
}

function readLeaves(v: unknown, at: At, spec: TreeSpec, variant: Profile["variant"]): LeafChanges {
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
        out.set(id, readOrder(raw, leafAt, variant));
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
  const balance = readDecimal(required(o, "balance", at), child(at, "balance"), 0n, B63);
  if (balance > 0n && key === 0n)
    fail(child(at, hasStark ? "stark_key" : "core_key"), "is 0 in a vault with a balance");
  if (balance > 0n && token === 0n) fail(child(at, "token"), "is 0 in a vault with a balance");
  return { key, token, balance };
}

function readPosition(v: unknown, at: At): PositionLeaf {
  const o = readObject(v, at);
  onlyKeys(o, ["public_key", "collateral_balance", "assets"], at);
  const publicKey = readHex(required(o, "public_key", at), child(at, "public_key"));
  const collateral = readDecimal(
    required(o, "collateral_balance", at),
    child(at, "collateral_balance"),
    -B63,
    B63,
  );
  const assetsAt = child(at, "assets");
  const assetsObj = readObject(required(o, "assets", at), assetsAt);
  const ids = Object.keys(assetsObj);
  if (ids.length >= MAX_ASSETS)
    fail(assetsAt, `${ids.length} assets; a position holds fewer than ${MAX_ASSETS}`);
  const assets: PositionAsset[] = [];
  for (const idKey of ids) {
    const aAt = child(assetsAt, idKey);
    const assetId = readHex(idKey, aAt, ASSET_ID_LIMIT);
    const a = readObject(assetsObj[idKey], aAt);
    onlyKeys(a, ["balance", "cached_funding_index"], aAt);
    const balance = readDecimal(required(a, "balance", aAt), child(aAt, "balance"), -B63, B63);
    const fundingIndex = readDecimal(
      required(a, "cached_funding_index", aAt),
      child(aAt, "cached_funding_index"),
      -B63,
      B63,
    );
    assets.push({ assetId, balance, fundingIndex });
  }
  assets.sort((x, y) => (x.assetId < y.assetId ? -1 : x.assetId > y.assetId ? 1 : 0));
  for (let i = 1; i < assets.length; i++) {
    // Two spellings of one id (0x1 and 0x01) would make the leaf ambiguous.
    if (assets[i]!.assetId === assets[i - 1]!.assetId)
      fail(assetsAt, `asset id ${assets[i]!.assetId} appears twice`);
  }
  return { publicKey, collateral, assets };
}

function readOrder(v: unknown, at: At, variant: Profile["variant"]): OrderLeaf {
  const o = readObject(v, at);
  onlyKeys(o, ["fulfilled_amount"], at);
  // Perpetual order amounts are unsigned 64-bit; spot amounts stay below 2^63 (committee-algorithms §2).
  const limit = variant === "P" ? B64 : B63;
  return readDecimal(required(o, "fulfilled_amount", at), child(at, "fulfilled_amount"), 0n, limit);
}
