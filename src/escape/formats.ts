import { DacdError } from "../errors.js";
import { FIELD_PRIME } from "../model/field.js";
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

const DEC = /^(0|[1-9][0-9]*)$/;
const SDEC = /^(0|-?[1-9][0-9]*)$/;
const HEX = /^0x[0-9a-f]+$/;
const B63 = 1n << 63n;

function num(s: unknown, re: RegExp, what: string, where: string): bigint {
  if (typeof s !== "string" || !re.test(s))
    throw new DacdError("BAD_INPUT", `${where}: ${what} ${JSON.stringify(s)} is malformed`);
  return BigInt(s);
}

function inRange(v: bigint, lo: bigint, hi: bigint, what: string, where: string): bigint {
  if (v < lo || v >= hi) throw new DacdError("BAD_INPUT", `${where}: ${what} ${v} is out of range`);
  return v;
}

/** Parses one data line of a dump file into (id, leaf), with the range rules of the wire format. */
export function parseLeafLine(
  kind: LeafKind,
  line: string,
  where: string,
  perpetual: boolean,
): { id: bigint; leaf: Leaf } {
  if (kind === "vault") {
    const f = line.split(",");
    if (f.length !== 4) throw new DacdError("BAD_INPUT", `${where}: expected 4 fields`);
    const id = num(f[0], DEC, "vault_id", where);
    const key = inRange(num(f[1], HEX, "key", where), 0n, FIELD_PRIME, "key", where);
    const token = inRange(num(f[2], HEX, "token", where), 0n, FIELD_PRIME, "token", where);
    const balance = inRange(num(f[3], DEC, "balance", where), 0n, B63, "balance", where);
    if (balance > 0n && (key === 0n || token === 0n))
      throw new DacdError("BAD_INPUT", `${where}: a vault with a balance needs a key and a token`);
    return { id, leaf: { key, token, balance } };
  }
  if (kind === "order") {
    const f = line.split(",");
    if (f.length !== 2) throw new DacdError("BAD_INPUT", `${where}: expected 2 fields`);
    const id = num(f[0], DEC, "order_id", where);
    const amount = inRange(
      num(f[1], DEC, "fulfilled_amount", where),
      0n,
      perpetual ? 1n << 64n : B63,
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
  const publicKey = inRange(
    num(r.public_key, HEX, "public_key", where),
    0n,
    FIELD_PRIME,
    "public_key",
    where,
  );
  const collateral = inRange(
    num(r.collateral_balance, SDEC, "collateral_balance", where),
    -B63,
    B63,
    "collateral_balance",
    where,
  );
  if (typeof r.assets !== "object" || r.assets === null || Array.isArray(r.assets)) {
    throw new DacdError("BAD_INPUT", `${where}: assets must be an object`);
  }
  const assets = Object.entries(r.assets as Record<string, unknown>).map(([k, v]) => {
    const a = (v ?? {}) as Record<string, unknown>;
    return {
      assetId: inRange(num(k, HEX, "asset id", where), 0n, 1n << 120n, "asset id", where),
      balance: inRange(num(a.balance, SDEC, "balance", where), -B63, B63, "balance", where),
      fundingIndex: inRange(
        num(a.cached_funding_index, SDEC, "cached_funding_index", where),
        -B63,
        B63,
        "cached_funding_index",
        where,
      ),
    };
  });
  assets.sort((a, b) => (a.assetId < b.assetId ? -1 : a.assetId > b.assetId ? 1 : 0));
  if (assets.length >= 1 << 16) throw new DacdError("BAD_INPUT", `${where}: too many assets`);
  return { id, leaf: { publicKey, collateral, assets } };
}
