import { DacdError } from "../../errors.js";
import { storeProfile } from "../../inspect/inspect.js";
import type { LevelStore } from "../../storage/level-store.js";
import { toHex64 } from "../../util/bytes.js";
import type { HashEngine } from "../../verifier/hash/engine.js";
import { decodeLeafRecord } from "../../verifier/trees/format/leaves.js";
import { walkLeaves } from "../../verifier/trees/read/walk-leaves.js";
import type { PositionLeaf, VaultLeaf } from "../../model/state-update.js";
import { resolveBatch, rootOf } from "../common.js";

/**
 * A stark key's vaults (spot) or positions (perpetual) at a batch, for a user who knows their key
 * and not their ids (`dacd exit --key`, `GET /v1/escape/keys/{starkKey}`). There is no index by
 * key: this walks every non-empty leaf of the batch's main tree (the dump's walk), so it costs
 * what a dump of that tree costs in reads, without the writing.
 */

export const KEY_LEAVES_FORMAT = "dacd-key-leaves/1";
/** Ids listed at most; a key with more is told it was cut short. */
export const MAX_KEY_LEAVES = 1000;

export interface KeyLeaf {
  id: string;
  /** Spot: the vault's asset id and quantized balance. */
  asset_id?: string;
  quantized_amount?: string;
  /** Perpetual: the position's collateral (signed) and its asset count. */
  collateral_balance?: string;
  n_assets?: number;
}

export interface KeyLeaves {
  format: typeof KEY_LEAVES_FORMAT;
  stark_key: string;
  object: "vault" | "position";
  batch_id: number;
  leaves: KeyLeaf[];
  /** More leaves of this key than MAX_KEY_LEAVES: the list stops there. */
  truncated: boolean;
  /** Non-empty leaves walked. */
  scanned: number;
}

export interface KeyScanOptions {
  readonly chunk?: number;
  /** Awaited before each read (the daemon lets the signing go first). */
  readonly pace?: () => Promise<void>;
}

/** A stark key as 0x and up to 64 hex digits, below 2^252; else a BAD_INPUT error. */
export function parseStarkKey(text: string): bigint {
  if (!/^0x[0-9a-fA-F]{1,64}$/.test(text))
    throw new DacdError(
      "BAD_INPUT",
      `stark key ${JSON.stringify(text.slice(0, 80))} is not 0x and 1 to 64 hex digits`,
    );
  const key = BigInt(text);
  if (key === 0n || key >= 1n << 252n)
    throw new DacdError("BAD_INPUT", `stark key ${text} is not a stark key (from 1 to below 2^252)`);
  return key;
}

export async function leavesOfKey(
  store: LevelStore,
  engine: HashEngine,
  starkKey: bigint,
  batchId: number | undefined,
  opts: KeyScanOptions = {},
): Promise<KeyLeaves> {
  const { profile } = await storeProfile(store);
  const spec = profile.main;
  if (spec.name !== "vault" && spec.name !== "position")
    throw new DacdError("BAD_INPUT", `the ${spec.name} tree has no owners to look up`);
  const record = await resolveBatch(store, batchId);
  const rootGen = record.root_gens[spec.name];
  if (rootGen === undefined)
    throw new DacdError("STORE", `batch ${record.batch_id} keeps no ${spec.name} tree to look keys up in`);
  const leaves: KeyLeaf[] = [];
  let truncated = false;
  let scanned = 0;
  for await (const block of walkLeaves(engine, spec, rootOf(record, spec), rootGen, {
    chunk: opts.chunk,
    getNodes: async (h, gens) => {
      await opts.pace?.();
      return store.getNodes(h, gens);
    },
  })) {
    const records = await store.getLeafRecords(
      block.map((t) => t.hash),
      block.map((t) => t.gen),
    );
    scanned += block.length;
    records.forEach((rec, i) => {
      const t = block[i]!;
      if (!rec)
        throw new DacdError(
          "STORE",
          `${spec.name} leaf ${t.index}: no record for leaf hash ${toHex64(t.hash)}`,
        );
      const found = keyLeaf(spec.name as "vault" | "position", rec, starkKey, t.index);
      if (!found) return;
      if (leaves.length < MAX_KEY_LEAVES) leaves.push(found);
      else truncated = true;
    });
  }
  return {
    format: KEY_LEAVES_FORMAT,
    stark_key: `0x${starkKey.toString(16).padStart(64, "0")}`,
    object: spec.name,
    batch_id: record.batch_id,
    leaves,
    truncated,
    scanned,
  };
}

function keyLeaf(
  tree: "vault" | "position",
  rec: Uint8Array,
  key: bigint,
  index: bigint,
): KeyLeaf | undefined {
  if (tree === "vault") {
    const v = decodeLeafRecord("vault", rec) as VaultLeaf;
    if (v.key !== key || v.balance === 0n) return undefined;
    return {
      id: index.toString(),
      asset_id: `0x${v.token.toString(16).padStart(64, "0")}`,
      quantized_amount: v.balance.toString(),
    };
  }
  const p = decodeLeafRecord("position", rec) as PositionLeaf;
  if (p.publicKey !== key) return undefined;
  return { id: index.toString(), collateral_balance: p.collateral.toString(), n_assets: p.assets.length };
}
