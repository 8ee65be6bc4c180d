/**
 * The devnet's perpetual shared state, batch by batch: the roots a batch states, the global
 * funding indices its applied FUNDING_TICKs set, and an oracle price (devnetPrice) for every
 * synthetic asset traded or ticked so far, so that every position's assets are in it.
 */
import type { BatchView, ChainView } from "../chain.js";
import { devnetPrice, sharedStateWords } from "./program-output.js";

interface RawTx {
  readonly type?: string;
  readonly global_funding_indices?: Record<string, string>;
  readonly timestamp?: number;
  readonly party_a_order?: { readonly synthetic_asset_id?: string };
}

export class PerpetualLedger {
  private readonly funding = new Map<bigint, bigint>();
  private fundingTimestamp = 0n;
  private readonly assets = new Set<bigint>();
  /** The shared state the last committed batch leads to (words). */
  private current: bigint[];

  constructor(private readonly chain: ChainView) {
    this.current = this.words(chain.genesis, 0n);
  }

  /** The shared state before and after `batch` (not kept until accept). */
  apply(batch: BatchView): { prev: bigint[]; next: bigint[] } {
    for (const record of batch.txs) {
      if (record.wasReplaced) continue;
      const tx = record.tx as RawTx;
      if (tx.type === "FUNDING_TICK" && tx.global_funding_indices) {
        for (const [asset, index] of Object.entries(tx.global_funding_indices)) {
          this.funding.set(BigInt(asset), BigInt(index));
          this.assets.add(BigInt(asset));
        }
        this.fundingTimestamp = BigInt(tx.timestamp ?? 0);
      } else if (tx.type === "TRADE" && tx.party_a_order?.synthetic_asset_id) {
        this.assets.add(BigInt(tx.party_a_order.synthetic_asset_id));
      }
    }
    return { prev: this.current, next: this.words(batch.stated, BigInt(batch.timeCreated)) };
  }

  accept(next: bigint[]): void {
    this.current = next;
  }

  private words(roots: BatchView["stated"], systemTime: bigint): bigint[] {
    const profile = this.chain.profile;
    const root = (hex: string | undefined): bigint => BigInt(`0x${hex ?? "0"}`);
    // An asset traded but never ticked has the funding index the devnet's state gives it: 0.
    const funding = new Map([...this.assets].map((a) => [a, this.funding.get(a) ?? 0n]));
    return sharedStateWords({
      positionRoot: root(roots[profile.main.name]),
      positionHeight: profile.main.height,
      orderRoot: root(roots.order),
      orderHeight: profile.order.height,
      funding,
      fundingTimestamp: this.fundingTimestamp,
      prices: new Map([...this.assets].map((a) => [a, devnetPrice(a)])),
      systemTime,
    });
  }
}
