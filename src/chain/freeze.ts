/**
 * Whether the exchange is frozen, as the watch records it: a well-formed LogFrozen from the
 * exchange (exchange-logs.ts) counts only when isFrozen() at a confirmed block agrees (an endpoint
 * can forge a log, not the contract's state at every block), at a frozen batch id the exchange can
 * have reached; a recorded freeze that isFrozen() later denies is withdrawn, loudly.
 */
import type { OnchainCursor, OnchainFreeze } from "../storage/onchain-record.js";
import type { ExchangeEndpoint } from "./exchange-endpoint.js";
import type { WatchRecords } from "./watch-records.js";
import type { WatchReport } from "./watch-report.js";

export class FreezeCheck {
  constructor(
    private readonly endpoint: ExchangeEndpoint,
    private readonly records: WatchRecords,
    private readonly report: WatchReport,
  ) {}

  /**
   * A LogFrozen at block `block`, taken only when isFrozen() at the confirmed block `confirmed`
   * (at or after it) agrees.
   */
  async confirmLog(block: number, confirmed: number): Promise<OnchainFreeze | undefined> {
    if (!(await this.endpoint.isFrozenAt(confirmed))) {
      this.report.rejected("freeze_unconfirmed", { block_number: block, confirmed_block: confirmed });
      return undefined;
    }
    return this.freezeAt(block);
  }

  /**
   * Every block up to the confirmed block `safe` read into `cursor`: records the freeze that
   * isFrozen() at `safe` shows (a freeze before the first block read has no log left to read: the
   * view says so), or withdraws the recorded one it denies.
   */
  async checkAt(cursor: OnchainCursor, safe: number): Promise<void> {
    const frozen = await this.endpoint.isFrozenAt(safe);
    if (!cursor.frozen && frozen) {
      const freeze = await this.freezeAt(safe);
      if (freeze) await this.records.record({ ...cursor, frozen: freeze }, []);
    } else if (cursor.frozen && !frozen) {
      const { frozen: withdrawn, ...unfrozen } = cursor;
      await this.records.record(unfrozen, []);
      this.report.freezeWithdrawn(withdrawn, `isFrozen() at the confirmed block ${safe} is false`);
    }
  }

  /**
   * The frozen state, read at the block the freeze was seen in: the batch it froze at must be a
   * batch id the exchange can have reached (within the ahead limit of the newest stored batch).
   */
  private async freezeAt(block: number): Promise<OnchainFreeze | undefined> {
    const batchId = await this.endpoint.lastBatchIdAt(block);
    const window = await this.records.window();
    if (batchId < 0n || batchId > BigInt(window.newest)) {
      this.report.rejected("out_of_range", {
        frozen_batch_id: String(batchId),
        block_number: block,
        newest_stored: window.stored,
      });
      return undefined;
    }
    return { batch_id: Number(batchId), block_number: block, detected_at: new Date().toISOString() };
  }
}
