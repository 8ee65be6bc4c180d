/**
 * Traffic generator: submits a seeded, realistic mix of valid and invalid transactions through the
 * devnet's real HTTP gateway. Valid ones may still fail to apply (e.g. a withdrawal larger than the
 * balance) and then show up as replaced; malformed ones are refused with 4xx and their tx_id reused.
 */
import { prng } from "../util/prng.js";

export interface TrafficOptions {
  readonly variant: "P" | "G";
  readonly gatewayUrl: string;
  /** Transactions per second. */
  readonly rate: number;
  readonly seed: number;
}

export interface TrafficStats {
  sent: number;
  accepted: number;
  refused: number;
  errors: number;
}

export interface Traffic {
  readonly stats: TrafficStats;
  stop(): Promise<void>;
}

const hex = (n: number | bigint): string => "0x" + n.toString(16);
const SIG = { r: "0x1234", s: "0x5678" };

/** Builds transactions for one variant; `invalid` ones are meant to be refused by the gateway. */
export class TxFactory {
  private readonly rand: () => number;
  private nonce = 0;
  constructor(
    readonly variant: "P" | "G",
    seed: number,
  ) {
    this.rand = prng(seed);
  }

  private int(n: number): number {
    return Math.floor(this.rand() * n);
  }
  private key(i: number): string {
    return hex(0x1000n + BigInt(i) * 0x1_0000_0001n);
  }
  private token(j: number): string {
    return hex(0xa000n + BigInt(j));
  }
  /** Vault of account i for token j; every third account keeps its vaults in the rollup range. */
  private vault(i: number, j: number): number {
    return (i % 3 === 2 ? 2 ** 30 : 0) + i * 16 + j;
  }
  private expiration(): number {
    return Math.floor(Date.now() / 3_600_000) + 24 * 30;
  }

  next(): { tx: unknown; invalid: boolean } {
    const r = this.rand();
    if (r < 0.12) return { tx: this.invalid(), invalid: true };
    return { tx: this.variant === "G" ? this.validG(r) : this.validP(r), invalid: false };
  }

  private invalid(): unknown {
    const base = this.variant === "G" ? this.validG(0.2) : this.validP(0.2);
    const tx = { ...(base as Record<string, unknown>) };
    switch (this.int(4)) {
      case 0:
        delete tx.amount;
        break;
      case 1:
        tx.amount = "-5";
        break;
      case 2:
        tx.type = "NotAType";
        break;
      default:
        tx.extra_field = 1;
    }
    return tx;
  }

  private validG(r: number): unknown {
    const i = this.int(6);
    const k = (i + 1 + this.int(5)) % 6;
    const j = this.int(3);
    const amount = String(1 + this.int(1_000_000));
    if (r < 0.45)
      return {
        type: "DepositRequest",
        amount,
        core_key: this.key(i),
        token_id: this.token(j),
        vault_id: this.vault(i, j),
      };
    if (r < 0.55)
      return {
        type: "WithdrawalRequest",
        amount: String(1 + this.int(300_000)),
        core_key: this.key(i),
        token_id: this.token(j),
        vault_id: this.vault(i, j),
      };
    if (r < 0.75) {
      return {
        type: "TransferRequest",
        amount: String(1 + this.int(100_000)),
        expiration_timestamp: this.expiration(),
        nonce: this.nonce++,
        receiver_public_key: this.key(k),
        receiver_vault_id: this.vault(k, j),
        sender_public_key: this.key(i),
        sender_vault_id: this.vault(i, j),
        signature: SIG,
        token: this.token(j),
      };
    }
    if (r < 0.95) {
      const l = (j + 1) % 3;
      const x = String(1 + this.int(50_000));
      const y = String(1 + this.int(50_000));
      const order = (
        who: number,
        sell: number,
        buy: number,
        amountSell: string,
        amountBuy: string,
      ): unknown => ({
        type: "OrderL2Request",
        amount_buy: amountBuy,
        amount_sell: amountSell,
        expiration_timestamp: this.expiration(),
        nonce: this.nonce++,
        public_key: this.key(who),
        signature: SIG,
        token_buy: this.token(buy),
        token_sell: this.token(sell),
        vault_id_buy: this.vault(who, buy),
        vault_id_sell: this.vault(who, sell),
      });
      return {
        type: "SettlementRequest",
        party_a_order: order(i, j, l, x, y),
        party_b_order: order(k, l, j, y, x),
        settlement_info: { party_a_sold: x, party_b_sold: y },
      };
    }
    return { type: "FullWithdrawalRequest", core_key: this.key(i), vault_id: this.vault(i, j) };
  }

  private validP(r: number): unknown {
    const i = this.int(6);
    const k = (i + 1 + this.int(5)) % 6;
    const pos = (n: number): string => String(100 + n);
    if (r < 0.45)
      return {
        type: "DEPOSIT",
        amount: String(1 + this.int(1_000_000)),
        position_id: pos(i),
        public_key: this.key(i),
      };
    const sig = { nonce: this.nonce++, expiration_timestamp: this.expiration(), signature: SIG };
    if (r < 0.55)
      return {
        type: "WITHDRAWAL",
        amount: String(1 + this.int(300_000)),
        position_id: pos(i),
        public_key: this.key(i),
        ...sig,
      };
    if (r < 0.7) {
      return {
        type: "TRANSFER",
        amount: String(1 + this.int(100_000)),
        sender_position_id: pos(i),
        sender_public_key: this.key(i),
        receiver_position_id: pos(k),
        receiver_public_key: this.key(k),
        ...sig,
      };
    }
    if (r < 0.92) {
      const asset = hex(0xbeef0n + BigInt(this.int(3)));
      const synthetic = String(1 + this.int(1000));
      const collateral = String(1 + this.int(100_000));
      const order = (who: number, buying: boolean): unknown => ({
        type: "ORDER",
        position_id: pos(who),
        public_key: this.key(who),
        synthetic_asset_id: asset,
        synthetic_amount: synthetic,
        collateral_amount: collateral,
        fee_amount: "10",
        is_buying_synthetic: buying,
        nonce: this.nonce++,
        expiration_timestamp: this.expiration(),
        signature: SIG,
      });
      return {
        type: "TRADE",
        party_a_order: order(i, true),
        party_b_order: order(k, false),
        actual_synthetic: synthetic,
        actual_collateral: collateral,
        actual_a_fee: "10",
        actual_b_fee: "10",
      };
    }
    const indices: Record<string, string> = {};
    for (let a = 0; a < 3; a++) indices[hex(0xbeef0n + BigInt(a))] = String(this.int(1 << 20) - (1 << 19));
    return {
      type: "FUNDING_TICK",
      global_funding_indices: indices,
      timestamp: Math.floor(Date.now() / 1000),
    };
  }
}

export function startTraffic(opts: TrafficOptions): Traffic {
  const factory = new TxFactory(opts.variant, opts.seed);
  const stats: TrafficStats = { sent: 0, accepted: 0, refused: 0, errors: 0 };
  const path = opts.variant === "G" ? "/gateway/v2/add_transaction" : "/add_transaction";
  let txId: number | undefined;
  let inFlight: Promise<void> | undefined;
  let stopped = false;

  const submitOne = async (): Promise<void> => {
    if (txId === undefined) {
      // Variant P can ask where to start; variant G starts after anything already submitted by us.
      txId =
        opts.variant === "P"
          ? Number(await (await fetch(opts.gatewayUrl + "/get_first_unused_tx_id")).text())
          : 0;
    }
    const { tx } = factory.next();
    stats.sent++;
    const res = await fetch(opts.gatewayUrl + path, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ tx_id: txId, tx }),
    });
    await res.arrayBuffer();
    if (res.status === 200) {
      stats.accepted++;
      txId++;
    } else if (res.status === 409) {
      txId++; // someone else used this id: move on
      stats.refused++;
    } else {
      stats.refused++; // refused: the id stays free and is reused
    }
  };

  const timer = setInterval(
    () => {
      if (stopped || inFlight) return;
      inFlight = submitOne()
        .catch(() => void stats.errors++)
        .finally(() => (inFlight = undefined));
    },
    Math.max(1, Math.floor(1000 / opts.rate)),
  );
  timer.unref();
  return {
    stats,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await inFlight;
    },
  };
}
