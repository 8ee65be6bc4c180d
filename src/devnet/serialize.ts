/** Leaves and batches in the JSON forms of the interface (gateway-interface §2, §4). */
import { prevStated, type BatchView, type ChainView, type TxRecord } from "./chain.js";
import type { LeafChanges, PositionLeaf, TreeName, VaultLeaf } from "./shared.js";

const hex = (v: bigint): string => "0x" + v.toString(16);

function entries(changes: LeafChanges | undefined): [bigint, unknown][] {
  return [...(changes ?? new Map()).entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** Vault leaves as the native gateways send them: the key under `stark_key`. */
export function vaultsJson(changes: LeafChanges | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [id, leaf] of entries(changes)) {
    const v = leaf as VaultLeaf;
    out[id.toString()] = { stark_key: hex(v.key), token: hex(v.token), balance: v.balance.toString() };
  }
  return out;
}

export function positionsJson(changes: LeafChanges | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [id, leaf] of entries(changes)) {
    const p = leaf as PositionLeaf;
    const assets: Record<string, unknown> = {};
    for (const a of p.assets) {
      assets[hex(a.assetId)] = {
        balance: a.balance.toString(),
        cached_funding_index: a.fundingIndex.toString(),
      };
    }
    out[id.toString()] = {
      public_key: hex(p.publicKey),
      collateral_balance: p.collateral.toString(),
      assets,
    };
  }
  return out;
}

export function ordersJson(changes: LeafChanges | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [id, leaf] of entries(changes))
    out[id.toString()] = { fulfilled_amount: (leaf as bigint).toString() };
  return out;
}

/** Root hex (no prefix) as a decimal digit string: the variant P feeder form. */
const decimalRoot = (h: string | undefined): string => BigInt("0x" + (h ?? "0")).toString();

function txsInfo(txs: readonly TxRecord[], idKey: "original_tx_id" | "tx_id"): unknown[] {
  return txs.map((t) => ({
    alt_txs: t.altTxs,
    original_tx: t.tx,
    [idKey]: t.txId,
    was_replaced: t.wasReplaced,
  }));
}

/** Variant P feeder batch information. */
export function batchInfoP(chain: ChainView, b: BatchView): Record<string, unknown> {
  const prev = prevStated(chain, b);
  return {
    order_root: decimalRoot(b.stated.order),
    position_root: decimalRoot(b.stated.position),
    previous_batch_id: b.prevBatchId,
    previous_order_root: decimalRoot(prev.order),
    previous_position_root: decimalRoot(prev.position),
    sequence_number: b.sequenceNumber,
    time_created: String(b.timeCreated),
    txs_info: txsInfo(b.txs, "original_tx_id"),
  };
}

/** Variant G feeder batch information, version 2 form. */
export function batchInfoGv2(b: BatchView): Record<string, unknown> {
  return {
    prev_batch_id: b.prevBatchId,
    sequence_number: b.sequenceNumber,
    time_created: b.timeCreated,
    txs_info: txsInfo(b.txs, "tx_id"),
  };
}

/** Variant G feeder batch information, full (deprecated) form with tree roots. */
export function batchInfoGFull(chain: ChainView, b: BatchView): Record<string, unknown> {
  const prev = prevStated(chain, b);
  const root = (t: TreeName, h: string | undefined): { height: number; root: string } => ({
    height: t === "order" ? chain.profile.order.height : chain.profile.main.height,
    root: h ?? "0".repeat(64),
  });
  return {
    order_root: root("order", b.stated.order),
    prev_order_root: root("order", prev.order),
    prev_vault_root: root("vault", prev.vault),
    vault_root: root("vault", b.stated.vault),
    ...batchInfoGv2(b),
  };
}
