/**
 * Variant P state machine: positions (collateral and synthetic assets with cached funding indices),
 * orders (fulfilled amounts) and the global funding indices. Range rules of docs/algorithms.md, Leaves
 * hold after every transaction, or the transaction is not applied.
 */
import {
  FIELD_PRIME,
  type LeafChanges,
  type PositionAsset,
  type PositionLeaf,
  type TreeName,
} from "../shared.js";
import { B63, B64 } from "../txs/fields.js";
import { parsePTx, type PParseContext } from "../txs/parse-p.js";
import type { PerpOrder, PTx } from "../txs/types-p.js";
import { checkExpiration, type StateMachine } from "./machine.js";
import { ApplyError, Draft, type Journal, Table } from "./tables.js";

const EMPTY: PositionLeaf = { publicKey: 0n, collateral: 0n, assets: [] };
/** Devnet rule: trading fees are credited to the collateral of this position. */
export const FEE_POSITION_ID = 0n;
/** Devnet rule: funding indices are fixed-point numbers with 32 fractional bits. */
const FUNDING_SHIFT = 32n;
const LAST_TICK = -1n;
const hex = (v: bigint): string => "0x" + v.toString(16);

export class PState implements StateMachine<PTx> {
  readonly positions = new Table<PositionLeaf>("positions");
  readonly orders = new Table<bigint>("orders");
  /** Global funding index per synthetic asset id (and, under key -1, the last tick's timestamp). */
  readonly funding = new Table<bigint>("funding");

  constructor(readonly ctx: PParseContext) {}

  parse(raw: unknown): PTx {
    const tx = parsePTx(raw, this.ctx);
    return tx;
  }

  apply(tx: PTx, journal: Journal, nowMs: number): void {
    const d = new Draft();
    this.run(tx, d, nowMs);
    for (const [table, id, v] of d.written()) {
      if (table === (this.positions as Table<unknown>)) checkPosition(id, v as PositionLeaf);
      else if (table === (this.orders as Table<unknown>) && (v as bigint) >= B64) {
        throw new ApplyError(`order ${id} fulfilled amount out of range [0, 2^64)`);
      }
    }
    d.commit(journal);
  }

  changes(journal: Journal): Partial<Record<TreeName, LeafChanges>> {
    const position: LeafChanges = new Map();
    for (const id of journal.touched(this.positions)) position.set(id, this.positions.rows.get(id) ?? EMPTY);
    const order: LeafChanges = new Map();
    for (const id of journal.touched(this.orders)) order.set(id, this.orders.rows.get(id) ?? 0n);
    return { position, order };
  }

  /** Devnet rule: a transaction that cannot be applied is replaced by a NO_OP naming the reason. */
  alternative(_raw: unknown, reason: string): unknown {
    return { type: "NO_OP", reason };
  }

  private run(tx: PTx, d: Draft, now: number): void {
    switch (tx.type) {
      case "DEPOSIT": {
        const p = this.owned(d, tx.position, tx.key, true);
        this.put(d, tx.position, { ...p, collateral: p.collateral + tx.amount });
        return;
      }
      case "WITHDRAWAL": {
        checkExpiration(tx.expiration, now, "withdrawal");
        this.fulfill(d, tx.id, tx.amount, tx.amount, "withdrawal");
        const p = this.owned(d, tx.position, tx.key, false);
        if (p.collateral < tx.amount)
          throw new ApplyError(`position ${tx.position} collateral ${p.collateral} is below ${tx.amount}`);
        this.put(d, tx.position, { ...p, collateral: p.collateral - tx.amount });
        return;
      }
      case "TRANSFER": {
        checkExpiration(tx.expiration, now, "transfer");
        this.fulfill(d, tx.id, tx.amount, tx.amount, "transfer");
        const s = this.owned(d, tx.sender, tx.senderKey, false);
        if (s.collateral < tx.amount)
          throw new ApplyError(`position ${tx.sender} collateral ${s.collateral} is below ${tx.amount}`);
        this.put(d, tx.sender, { ...s, collateral: s.collateral - tx.amount });
        const r = this.owned(d, tx.receiver, tx.receiverKey, true);
        this.put(d, tx.receiver, { ...r, collateral: r.collateral + tx.amount });
        return;
      }
      case "TRADE":
        this.trade(d, tx, now);
        return;
      case "FUNDING_TICK": {
        const last = d.get(this.funding, LAST_TICK);
        if (last !== undefined && BigInt(tx.timestamp) < last)
          throw new ApplyError(`timestamp ${tx.timestamp} precedes the last tick ${last}`);
        d.set(this.funding, LAST_TICK, BigInt(tx.timestamp));
        for (const [asset, index] of tx.indices) d.set(this.funding, asset, index);
        return;
      }
      case "NO_OP":
        return;
    }
  }

  private trade(d: Draft, tx: Extract<PTx, { type: "TRADE" }>, now: number): void {
    const fees = tx.aFee + tx.bFee;
    for (const [o, fee, name] of [
      [tx.a, tx.aFee, "party_a_order"],
      [tx.b, tx.bFee, "party_b_order"],
    ] as [PerpOrder, bigint, string][]) {
      checkExpiration(o.expiration, now, name);
      // Buyer pays at most, seller receives at least, the order's collateral/synthetic ratio.
      if (
        o.buying
          ? tx.collateral * o.synthetic > o.collateral * tx.synthetic
          : tx.collateral * o.synthetic < o.collateral * tx.synthetic
      ) {
        throw new ApplyError(`${name} limit price not met`);
      }
      if (fee * o.synthetic > o.fee * tx.synthetic)
        throw new ApplyError(`${name} fee exceeds its fee_amount pro rata`);
      this.fulfill(d, o.id, tx.synthetic, o.synthetic, name);
      const p = this.owned(d, o.position, o.key, false);
      const delta = o.buying ? tx.synthetic : -tx.synthetic;
      const collateral = p.collateral + (o.buying ? -tx.collateral : tx.collateral) - fee;
      this.put(d, o.position, { ...p, collateral, assets: this.withAsset(d, p.assets, o.asset, delta) });
    }
    if (fees > 0n) {
      const f = this.touch(d, FEE_POSITION_ID);
      this.put(d, FEE_POSITION_ID, { ...f, collateral: f.collateral + fees });
    }
  }

  /** The assets with `delta` added to `asset`; an asset whose balance reaches 0 leaves the position. */
  private withAsset(
    d: Draft,
    assets: readonly PositionAsset[],
    asset: bigint,
    delta: bigint,
  ): PositionAsset[] {
    const cur = assets.find((a) => a.assetId === asset);
    const rest = assets.filter((a) => a.assetId !== asset);
    const balance = (cur?.balance ?? 0n) + delta;
    if (balance !== 0n) {
      rest.push({
        assetId: asset,
        balance,
        fundingIndex: cur?.fundingIndex ?? d.get(this.funding, asset) ?? 0n,
      });
    }
    return rest.sort((x, y) => (x.assetId < y.assetId ? -1 : x.assetId > y.assetId ? 1 : 0));
  }

  /** The position after applying pending funding: collateral -= balance * (global - cached) / 2^32. */
  private touch(d: Draft, id: bigint): PositionLeaf {
    const p = d.get(this.positions, id) ?? EMPTY;
    let collateral = p.collateral;
    let changed = false;
    const assets = p.assets.map((a) => {
      const g = d.get(this.funding, a.assetId) ?? 0n;
      if (g === a.fundingIndex) return a;
      changed = true;
      collateral -= (a.balance * (g - a.fundingIndex)) >> FUNDING_SHIFT;
      return { ...a, fundingIndex: g };
    });
    return changed ? { ...p, collateral, assets } : p;
  }

  /** The position, funded, checked to belong to `key`; an empty one is taken over when `claim`. */
  private owned(d: Draft, id: bigint, key: bigint, claim: boolean): PositionLeaf {
    const p = this.touch(d, id);
    if (p.publicKey === 0n && claim) return { ...p, publicKey: key };
    if (p.publicKey !== key) throw new ApplyError(`position ${id} does not belong to public key ${hex(key)}`);
    return p;
  }

  private put(d: Draft, id: bigint, p: PositionLeaf): void {
    d.set(this.positions, id, p);
  }

  private fulfill(d: Draft, id: bigint, add: bigint, limit: bigint, what: string): void {
    const cur = d.get(this.orders, id) ?? 0n;
    if (cur + add > limit)
      throw new ApplyError(`${what} (order ${id}) would be over-fulfilled: ${cur} + ${add} > ${limit}`);
    if (add > 0n) d.set(this.orders, id, cur + add);
  }
}

function checkPosition(id: bigint, p: PositionLeaf): void {
  const inRange = (x: bigint): boolean => x >= -B63 && x < B63;
  if (!inRange(p.collateral))
    throw new ApplyError(`position ${id} collateral ${p.collateral} out of range [-2^63, 2^63)`);
  if (p.assets.length >= 1 << 16) throw new ApplyError(`position ${id} holds too many assets`);
  if (p.publicKey >= FIELD_PRIME) throw new ApplyError(`position ${id} public key not below the field prime`);
  for (const a of p.assets) {
    if (!inRange(a.balance))
      throw new ApplyError(`position ${id} asset ${hex(a.assetId)} balance out of range`);
    if (!inRange(a.fundingIndex))
      throw new ApplyError(`position ${id} asset ${hex(a.assetId)} funding index out of range`);
  }
}
