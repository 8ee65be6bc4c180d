/**
 * The chain's roots against the member's: a root update read before its batch was stored is
 * compared once the member stores it, and a mismatch is reported once, even when a reorg's
 * reread meets the same update again. What it remembers is bounded (a hostile endpoint can forge
 * any number of mismatching updates).
 */
import { BoundedSet } from "../util/bounded-set.js";
import type { BatchRecord } from "../storage/batch-record.js";
import type { LevelStore } from "../storage/level-store.js";
import type { OnchainBatch, OnchainCursor } from "../storage/onchain-record.js";
import { rootsMatch } from "./root-update.js";
import type { WatchRecords } from "./watch-records.js";
import type { WatchReport } from "./watch-report.js";

/** Mismatches remembered across a reorg's reread, at most (and for at most an hour). */
const REPORTED_MAX = 1024;
const REPORTED_AGE_MS = 3_600_000;

export class RootComparison {
  /** Batches stored since their root update was read without a record to compare with. */
  private readonly toCompare = new Set<number>();
  /** Mismatches already reported, by transaction, that a reread after a reorg meets again. */
  private readonly reported = new BoundedSet(REPORTED_MAX, REPORTED_AGE_MS);

  constructor(
    private readonly store: LevelStore,
    private readonly records: WatchRecords,
    private readonly report: WatchReport,
  ) {}

  /**
   * Root updates read before their batch was stored and not compared since (the member stored
   * it, then stopped before the next poll): compared at the next `compareStored`.
   */
  async loadUncompared(): Promise<void> {
    for (const id of await this.store.onchain.uncomparedBatchIds()) this.toCompare.add(id);
  }

  /** The member stored batch `batchId`: compared at the next `compareStored`. */
  stored(batchId: number): void {
    this.toCompare.add(batchId);
  }

  /** Compares the batches stored since their root update was read. */
  async compareStored(cursor: OnchainCursor): Promise<void> {
    if (this.toCompare.size === 0) return;
    const ids = [...this.toCompare];
    this.toCompare.clear();
    const updated: OnchainBatch[] = [];
    for (const id of ids) {
      const batch = await this.store.onchain.batch(id);
      if (!batch?.roots || batch.matches !== undefined) continue;
      const stored = await this.store.getBatch(id);
      const matches = rootsMatch(batch.roots, stored);
      if (matches === undefined) continue;
      const compared = { ...batch, matches };
      updated.push(compared);
      if (!matches) this.mismatch(compared, stored!);
    }
    if (updated.length > 0) await this.records.record(cursor, updated);
  }

  /** A root update whose roots differ from `stored`'s: reported, unless a reorg's reread met it again. */
  mismatch(batch: OnchainBatch, stored: BatchRecord): void {
    if (this.reported.delete(`${batch.tx_hash}/${batch.batch_id}`)) return;
    this.report.mismatch(batch, stored);
  }

  /** Batches a reorg dropped: their mismatches, once read again, are not new. */
  dropped(batches: readonly OnchainBatch[]): void {
    for (const b of batches) if (b.matches === false) this.reported.add(`${b.tx_hash}/${b.batch_id}`);
  }
}
