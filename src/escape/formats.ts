import { DacdError } from "../errors.js";
import { FIELD_PRIME } from "../model/field.js";
import {
  ASSET_ID,
  checkAssetCount,
  inRange as inRangeOf,
  MAX_DECIMAL_DIGITS,
  MAX_HEX_DIGITS,
  type Range,
  SIGNED_64,
  sortAssets,
  VAULT_BALANCE,
  vaultProblem,
} from "../model/leaf-rules.js";
import type { LeafKind, TreeName } from "../model/profile.js";
import type { Leaf, PositionLeaf, VaultLeaf } from "../model/state-update.js";

/**
 * Dump file formats (docs/escape.md). CSV for vaults and orders, JSON lines for positions; ids in
 * decimal, keys and tokens as lower-case 0x hex, amounts in decimal.
 */

export const DUMP_FORMAT = "dacd-dump/1";

export const DUMP_FILES: Record<TreeName, string> = {
  vault: "vaults.csv",
  rollup_vault: "rollup_vaults.csv",
  order: "orders.csv",
  position: "positions.jsonl",
};

export const CSV_HEADERS: Partial<Record<LeafKind, string>> = {
  vault: "vault_id,key,token,balance",
  order: "order_id,fulfilled_amount",
};

export interface ManifestTree {
  readonly kind: "merkle" | "patricia";
  readonly leaf: LeafKind;
  readonly height: number;
  readonly root: string;
  /** The dump file; null when the tree is not stored (an unchecked order tree: its stated root is kept). */
  readonly file: string | null;
  readonly leaves: number | null;
  readonly bytes: number | null;
  readonly sha256: string | null;
}

export interface Manifest {
  readonly format: string;
  readonly profile: string;
  readonly batch_id: number;
  readonly prev_batch_id: number;
  readonly sequence_number: number;
  /** The claim of the dumped batch, for reference. */
  readonly claim_hash: string;
  /** The store identity's heights (trees kept). */
  readonly heights: Record<string, number>;
  /** Every root of the batch record, including an order root taken as stated. */
  readonly roots: Record<string, string>;
  readonly trees: Partial<Record<TreeName, ManifestTree>>;
  readonly created_at: string;
}

const hex = (v: bigint): string => "0x" + v.toString(16);

export function leafLine(kind: LeafKind, id: bigint, leaf: Leaf): string {
  if (kind === "vault") {
    const v = leaf as VaultLeaf;
    return `${id},${hex(v.key)},${hex(v.token)},${v.balance}\n`;
  }
  if (kind === "order") return `${id},${leaf as bigint}\n`;
  const p = leaf as PositionLeaf;
  const assets: Record<string, { balance: string; cached_funding_index: string }> = {};
  for (const a of p.assets)
    assets[hex(a.assetId)] = {
      balance: a.balance.toString(),
      cached_funding_index: a.fundingIndex.toString(),
    };
  return (
    JSON.stringify({
      position_id: id.toString(),
      public_key: hex(p.publicKey),
      collateral_balance: p.collateral.toString(),
      assets,
    }) + "\n"
  );
}

// Numbers are bounded in length before BigInt parses them, as the wire parser bounds them.
const DEC = new RegExp(`^(0|[1-9][0-9]{0,${MAX_DECIMAL_DIGITS - 1}})$`);
const SDEC = new RegExp(`^(0|-?[1-9][0-9]{0,${MAX_DECIMAL_DIGITS - 1}})$`);
const HEX = new RegExp(`^0x[0-9a-f]{1,${MAX_HEX_DIGITS}}$`);

function num(s: unknown, re: RegExp, what: string, where: string): bigint {
  if (typeof s !== "string" || !re.test(s))
    throw new DacdError(
      "BAD_INPUT",
      `${where}: ${what} ${JSON.stringify(typeof s === "string" && s.length > 90 ? s.slice(0, 90) + "…" : s)} is malformed` +
        (re === HEX ? ` (0x and 1 to ${MAX_HEX_DIGITS} lower-case hex digits)` : ""),
    );
  return BigInt(s);
}

function inRange(v: bigint, r: Range, what: string, where: string): bigint {
  if (!inRangeOf(v, r)) throw new DacdError("BAD_INPUT", `${where}: ${what} ${v} is out of range`);
  return v;
}

const FIELD: Range = { min: 0n, max: FIELD_PRIME };

/**
 * Parses one data line of a dump file into (id, leaf), with the leaf rules of the wire format
 * (src/model/leaf-rules.ts). `orderAmountLimit` is the profile's, needed for an order's line.
 */
export function parseLeafLine(
  kind: LeafKind,
  line: string,
  where: string,
  orderAmountLimit?: bigint,
): { id: bigint; leaf: Leaf } {
  if (kind === "vault") {
    const f = line.split(",");
    if (f.length !== 4) throw new DacdError("BAD_INPUT", `${where}: expected 4 fields`);
    const id = num(f[0], DEC, "vault_id", where);
    const key = inRange(num(f[1], HEX, "key", where), FIELD, "key", where);
    const token = inRange(num(f[2], HEX, "token", where), FIELD, "token", where);
    const balance = inRange(num(f[3], DEC, "balance", where), VAULT_BALANCE, "balance", where);
    if (vaultProblem({ key, token, balance }))
      throw new DacdError("BAD_INPUT", `${where}: a vault with a balance needs a key and a token`);
    return { id, leaf: { key, token, balance } };
  }
  if (kind === "order") {
    if (orderAmountLimit === undefined)
      throw new TypeError("an order's line needs the profile's amount limit");
    const f = line.split(",");
    if (f.length !== 2) throw new DacdError("BAD_INPUT", `${where}: expected 2 fields`);
    const id = num(f[0], DEC, "order_id", where);
    const amount = inRange(
      num(f[1], DEC, "fulfilled_amount", where),
      { min: 0n, max: orderAmountLimit },
      "fulfilled_amount",
      where,
    );
    return { id, leaf: amount };
  }
  let o: unknown;
  try {
    o = JSON.parse(line);
  } catch {
    throw new DacdError("BAD_INPUT", `${where}: not a JSON object`);
  }
  if (typeof o !== "object" || o === null || Array.isArray(o))
    throw new DacdError("BAD_INPUT", `${where}: not a JSON object`);
  const r = o as Record<string, unknown>;
  const id = num(r.position_id, DEC, "position_id", where);
  const publicKey = inRange(num(r.public_key, HEX, "public_key", where), FIELD, "public_key", where);
  const collateral = inRange(
    num(r.collateral_balance, SDEC, "collateral_balance", where),
    SIGNED_64,
    "collateral_balance",
    where,
  );
  if (typeof r.assets !== "object" || r.assets === null || Array.isArray(r.assets)) {
    throw new DacdError("BAD_INPUT", `${where}: assets must be an object`);
  }
  const refuse = (message: string): never => {
    throw new DacdError("BAD_INPUT", `${where}: assets: ${message}`);
  };
  const entries = Object.entries(r.assets as Record<string, unknown>);
  checkAssetCount(entries.length, refuse);
  const assets = entries.map(([k, v]) => {
    const a = (v ?? {}) as Record<string, unknown>;
    return {
      assetId: inRange(num(k, HEX, "asset id", where), ASSET_ID, "asset id", where),
      balance: inRange(num(a.balance, SDEC, "balance", where), SIGNED_64, "balance", where),
      fundingIndex: inRange(
        num(a.cached_funding_index, SDEC, "cached_funding_index", where),
        SIGNED_64,
        "cached_funding_index",
        where,
      ),
    };
  });
  return { id, leaf: { publicKey, collateral, assets: sortAssets(assets, refuse) } };
}
