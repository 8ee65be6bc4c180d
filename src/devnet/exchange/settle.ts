/**
 * The devnet's operator settling on its base chain: each batch's roots are committed to the
 * exchange contract once the committee's quorum has signed it, in batch order, as a StarkEx
 * operator's state update follows the committee's signatures.
 */
import type { Approvals } from "../approvals.js";
import type { ChainView } from "../chain.js";
import type { TreeName } from "../shared.js";
import type { DevnetExchange } from "./exchange.js";
import { PerpetualLedger } from "./perpetual-ledger.js";

export class Settlement {
  /** The next batch to commit. */
  private next = 0;
  /** The last batch committed (-1: none). */
  committed = -1;
  private stopped = false;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  /** Perpetual: the shared state the batches committed so far lead to. */
  private readonly ledger: PerpetualLedger | undefined;

  constructor(
    private readonly chain: ChainView,
    private readonly approvals: Approvals,
    readonly exchange: DevnetExchange,
    private readonly mainTree: TreeName,
    private readonly onError: (err: unknown) => void,
  ) {
    this.ledger = chain.profile.variant === "P" ? new PerpetualLedger(chain) : undefined;
  }

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const batch = this.chain.batch(this.next);
      if (!batch || !this.approvals.reached(this.next)) {
        await this.pause(50);
        continue;
      }
      if (!batch.rejected) {
        const hex = (tree: TreeName): bigint | undefined => {
          const v = batch.stated[tree];
          return v === undefined ? undefined : BigInt(`0x${v}`);
        };
        try {
          if (this.ledger) {
            const { prev, next } = this.ledger.apply(batch);
            await this.exchange.commitPerpetual(batch.batchId, batch.prevBatchId, prev, next);
            this.ledger.accept(next);
          } else {
            await this.exchange.commit(batch.batchId, {
              vault: hex(this.mainTree),
              rollupVault: hex("rollup_vault"),
              order: hex("order"),
            });
          }
          this.committed = batch.batchId;
        } catch (err) {
          // Frozen, or the node went away: nothing more can be committed.
          this.onError(err);
          return;
        }
      }
      this.next++;
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }
}
