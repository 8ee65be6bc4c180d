/**
 * Variant G state machine: vaults (validium and rollup, one table, split by the rollup rule) and
 * orders (fulfilled amounts). Balance checks and the range rules of docs/algorithms.md, Leaves hold
 * after every transaction, or the transaction is not applied.
 */
import { FIELD_PRIME, type LeafChanges, type TreeName, type VaultLeaf } from "../shared.js";
import { B63 } from "../txs/fields.js";
import { parseGTx, type GParseContext } from "../txs/parse-g.js";
import type { GTx, LimitOrder } from "../txs/types-g.js";
import { checkExpiration, type StateMachine } from "./machine.js";
import { ApplyError, Draft, type Journal, Table } from "./tables.js";

const EMPTY: VaultLeaf = { key: 0n, token: 0n, balance: 0n };
const hex = (v: bigint): string => "0x" + v.toString(16);

export class GState implements StateMachine<GTx> {
  readonly vaults = new Table<VaultLeaf>("vaults");
  readonly orders = new Table<bigint>("orders");
  /** Devnet rule: vault ids at or above this threshold (2^(height-1)) are rollup vaults. */
  readonly rollupThreshold: number;

  constructor(
    readonly ctx: GParseContext,
    hasRollupTree = true,
  ) {
    this.rollupThreshold = hasRollupTree ? 2 ** (ctx.vaultHeight - 1) : Infinity;
  }

  isRollup(vaultId: bigint | number): boolean {
    return Number(vaultId) >= this.rollupThreshold;
  }

  parse(raw: unknown): GTx {
    return parseGTx(raw, this.ctx);
  }

  apply(tx: GTx, journal: Journal, nowMs: number): void {
    const d = new Draft();
    this.run(tx, d, nowMs);
    for (const [table, id, v] of d.written()) {
      if (table === (this.vaults as Table<unknown>)) {
        const vault = v as VaultLeaf;
        if (vault.balance < 0n || vault.balance >= B63)
          throw new ApplyError(`vault ${id} balance ${vault.balance} out of range [0, 2^63)`);
        if (vault.key >= FIELD_PRIME || vault.token >= FIELD_PRIME)
          throw new ApplyError(`vault ${id} key or token not below the field prime`);
      } else if ((v as bigint) >= B63) {
        throw new ApplyError(`order ${id} fulfilled amount ${String(v)} out of range [0, 2^63)`);
      }
    }
    d.commit(journal);
  }

  changes(journal: Journal): Partial<Record<TreeName, LeafChanges>> {
    const vault: LeafChanges = new Map();
    const rollup: LeafChanges = new Map();
    for (const id of journal.touched(this.vaults)) {
      (this.isRollup(id) ? rollup : vault).set(id, this.vaults.rows.get(id) ?? EMPTY);
    }
    const order: LeafChanges = new Map();
    for (const id of journal.touched(this.orders)) order.set(id, this.orders.rows.get(id) ?? 0n);
    return { vault, order, rollup_vault: rollup };
  }

  /** Devnet rule: a transaction that cannot be applied is replaced by a false full withdrawal (a no-op). */
  alternative(raw: unknown, _reason: string): unknown {
    const r = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
    const key =
      [r.core_key, r.sender_public_key, r.requester_core_key].find((k) => typeof k === "string") ?? "0x0";
    const vault = [r.vault_id, r.sender_vault_id].find((v) => typeof v === "number") ?? 0;
    return { type: "FalseFullWithdrawalRequest", requester_core_key: key, vault_id: vault };
  }

  private run(tx: GTx, d: Draft, now: number): void {
    switch (tx.type) {
      case "DepositRequest":
      case "MintRequest":
        this.credit(d, tx.vault, tx.key, tx.token, tx.amount);
        return;
      case "WithdrawalRequest":
        this.debit(d, tx.vault, tx.key, tx.token, tx.amount);
        return;
      case "FullWithdrawalRequest": {
        const v = d.get(this.vaults, BigInt(tx.vault)) ?? EMPTY;
        if (v.balance === 0n) return; // nothing to withdraw
        if (v.key !== tx.key)
          throw new ApplyError(`vault ${tx.vault} does not belong to core_key ${hex(tx.key)}`);
        d.set(this.vaults, BigInt(tx.vault), { ...v, balance: 0n });
        return;
      }
      case "FalseFullWithdrawalRequest": {
        const v = d.get(this.vaults, BigInt(tx.vault)) ?? EMPTY;
        if (v.balance > 0n && v.key === tx.requester) {
          throw new ApplyError(
            `vault ${tx.vault} belongs to the requester: the full withdrawal request is not false`,
          );
        }
        return;
      }
      case "TransferRequest":
      case "ConditionalTransferRequest":
        checkExpiration(tx.expiration, now, "transfer");
        this.fulfill(d, tx.id, tx.amount, tx.amount, "transfer");
        this.debit(d, tx.senderVault, tx.senderKey, tx.token, tx.amount);
        this.credit(d, tx.receiverVault, tx.receiverKey, tx.token, tx.amount);
        if (tx.feeUser && tx.feeExchange) {
          this.debit(d, tx.feeUser.sourceVault, tx.senderKey, tx.feeUser.token, tx.feeExchange.feeTaken);
          this.credit(
            d,
            tx.feeExchange.destVault,
            tx.feeExchange.destKey,
            tx.feeUser.token,
            tx.feeExchange.feeTaken,
          );
        }
        return;
      case "SettlementRequest":
        this.settle(d, tx.a, tx.b, tx.aSold, tx.bSold, now);
        if (tx.bFee && tx.b.fee) {
          if (tx.bFee.feeTaken > tx.b.fee.feeLimit) throw new ApplyError("party B fee exceeds its fee_limit");
          this.debit(d, tx.b.fee.sourceVault, tx.b.owner, tx.b.fee.token, tx.bFee.feeTaken);
          this.credit(d, tx.bFee.destVault, tx.bFee.destKey, tx.b.fee.token, tx.bFee.feeTaken);
        }
        return;
      case "MultiAssetTradeRequest":
        this.multiAssetTrade(d, tx, now);
        return;
      case "MultiTransactionRequest":
        // All or nothing: every sub-transaction writes into the same draft.
        tx.txs.forEach((sub, i) => {
          try {
            this.run(sub, d, now);
          } catch (e) {
            if (e instanceof ApplyError) throw new ApplyError(`txs.${i}: ${e.message}`);
            throw e;
          }
        });
        return;
    }
  }

  private settle(d: Draft, a: LimitOrder, b: LimitOrder, aSold: bigint, bSold: bigint, now: number): void {
    checkExpiration(a.expiration, now, "party_a_order");
    checkExpiration(b.expiration, now, "party_b_order");
    // Each party gets at least its limit price: received/sold >= amount_buy/amount_sell.
    if (bSold * a.amountSell < a.amountBuy * aSold) throw new ApplyError("party_a_order limit price not met");
    if (aSold * b.amountSell < b.amountBuy * bSold) throw new ApplyError("party_b_order limit price not met");
    this.fulfill(d, a.id, aSold, a.amountSell, "party_a_order");
    this.fulfill(d, b.id, bSold, b.amountSell, "party_b_order");
    this.debit(d, a.vaultSell, a.owner, a.tokenSell, aSold);
    this.debit(d, b.vaultSell, b.owner, b.tokenSell, bSold);
    this.credit(d, a.vaultBuy, a.owner, a.tokenBuy, bSold);
    this.credit(d, b.vaultBuy, b.owner, b.tokenBuy, aSold);
  }

  private multiAssetTrade(d: Draft, tx: Extract<GTx, { type: "MultiAssetTradeRequest" }>, now: number): void {
    const sums = new Map<bigint, bigint>();
    const add = (asset: bigint, n: bigint): void => void sums.set(asset, (sums.get(asset) ?? 0n) + n);
    const givenBy = new Map<bigint, bigint>();
    for (const [i, order] of tx.orders.entries()) {
      checkExpiration(order.expiration, now, `orders.${i}`);
      if ((d.get(this.orders, order.id) ?? 0n) !== 0n) throw new ApplyError(`orders.${i} was already filled`);
    }
    for (const [i, leg] of tx.given.entries()) {
      const order = tx.orders.find(
        (o) => o.key === leg.key && o.give.some((g) => g.vault === leg.vault && g.asset === leg.asset),
      );
      if (!order)
        throw new ApplyError(`given.${i}: no order of ${hex(leg.key ?? 0n)} gives from vault ${leg.vault}`);
      const limit = order.give.find((g) => g.vault === leg.vault && g.asset === leg.asset)!.amount;
      if (leg.amount > limit) throw new ApplyError(`given.${i}: amount exceeds the order's give leg`);
      this.debit(d, leg.vault, leg.key ?? 0n, leg.asset, leg.amount);
      givenBy.set(order.id, (givenBy.get(order.id) ?? 0n) + leg.amount);
      add(leg.asset, leg.amount);
    }
    for (const leg of tx.received) {
      this.credit(d, leg.vault, leg.key ?? 0n, leg.asset, leg.amount);
      add(leg.asset, -leg.amount);
    }
    for (const [asset, n] of sums)
      if (n !== 0n) throw new ApplyError(`asset ${hex(asset)}: given and received differ`);
    for (const [i, order] of tx.orders.entries()) {
      for (const want of order.receive) {
        const got = tx.received.find(
          (r) => r.key === want.key && r.vault === want.vault && r.asset === want.asset,
        );
        if (!got || got.amount < want.amount)
          throw new ApplyError(`orders.${i}: receive leg for vault ${want.vault} not met`);
      }
      const given = givenBy.get(order.id) ?? 0n;
      if (given === 0n) throw new ApplyError(`orders.${i} gives nothing`);
      d.set(this.orders, order.id, given);
    }
  }

  private fulfill(d: Draft, id: bigint, add: bigint, limit: bigint, what: string): void {
    const cur = d.get(this.orders, id) ?? 0n;
    if (cur + add > limit) {
      throw new ApplyError(`${what} (order ${id}) would be over-fulfilled: ${cur} + ${add} > ${limit}`);
    }
    if (add > 0n) d.set(this.orders, id, cur + add);
  }

  private credit(d: Draft, vault: number, key: bigint, token: bigint, amount: bigint): void {
    if (amount === 0n) return;
    const id = BigInt(vault);
    const v = d.get(this.vaults, id) ?? EMPTY;
    // An empty vault (balance 0) can be taken by anyone; a funded one only by its key and token.
    if (v.balance > 0n && (v.key !== key || v.token !== token)) {
      throw new ApplyError(
        `vault ${vault} holds token ${hex(v.token)} of key ${hex(v.key)}, not token ${hex(token)} of ${hex(key)}`,
      );
    }
    d.set(this.vaults, id, { key, token, balance: v.balance + amount });
  }

  private debit(d: Draft, vault: number, key: bigint, token: bigint, amount: bigint): void {
    if (amount === 0n) return;
    const id = BigInt(vault);
    const v = d.get(this.vaults, id) ?? EMPTY;
    if (v.key !== key || v.token !== token || v.balance === 0n) {
      throw new ApplyError(`vault ${vault} does not hold token ${hex(token)} of key ${hex(key)}`);
    }
    if (v.balance < amount) throw new ApplyError(`vault ${vault} balance ${v.balance} is below ${amount}`);
    d.set(this.vaults, id, { ...v, balance: v.balance - amount });
  }
}
