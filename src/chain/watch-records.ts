/**
 * What the base-chain watch keeps, and within which bounds: its cursor (in the store, and a copy
 * in memory for the metrics and status) and the root updates it read, written together in one
 * fsynced write, for batch ids the exchange can have reached only, so that a forged id neither
 * pins the metrics nor grows the store.
 */
import type { LevelStore } from "../storage/level-store.js";
import type { OnchainBatch, OnchainCursor } from "../storage/onchain-record.js";
import type { WatchReport } from "./watch-report.js";

/**
 * How many batches the exchange may be ahead of this member's newest stored batch for the watch to
 * take its batch ids: a member that far behind has bigger troubles (the lag alert fires at 20), and
 * past it an id is taken as forged. It bounds the records of batches not stored (and so the store).
 */
export const MAX_BATCHES_AHEAD = 10_000;

/** The batch ids the watch takes (batchWindow). */
export interface BatchWindow {
  /** The highest batch id taken: the newest stored batch plus the ahead limit. */
  readonly newest: number;
  /** The newest stored batch (null: none yet). */
  readonly stored: number | null;
  /** The store's first batch: root updates of batches not stored are recorded from it on. */
  readonly first: number | undefined;
}

export class WatchRecords {
  private current: OnchainCursor | undefined;

  /** `address`: the exchange followed (lower case); `aheadLimit`: see MAX_BATCHES_AHEAD. */
  constructor(
    private readonly store: LevelStore,
    private readonly address: string,
    private readonly report: WatchReport,
    private readonly aheadLimit: number,
  ) {}

  /** The cursor as last written (or as kept by `keep`); undefined before `load` or when never followed. */
  get cursor(): OnchainCursor | undefined {
    return this.current;
  }

  /** Reads the stored cursor into memory. */
  async load(): Promise<OnchainCursor | undefined> {
    this.current = await this.store.onchain.cursor();
    return this.current;
  }

  /** Holds `cursor` in memory without writing it (a fresh start's, until its first range is recorded). */
  keep(cursor: OnchainCursor): void {
    this.current = cursor;
  }

  /** Writes the cursor (and batches) and logs a freeze the first time it is recorded. */
  async record(
    cursor: OnchainCursor,
    batches: readonly OnchainBatch[],
    drop?: { dropAll?: boolean },
  ): Promise<void> {
    const wasFrozen = this.current?.contract === this.address && this.current.frozen !== undefined;
    await this.store.onchain.record(cursor, batches, drop);
    this.current = cursor;
    if (cursor.frozen && !wasFrozen) this.report.frozen(cursor.frozen);
  }

  /**
   * Writes `cursor` and removes every batch read from block `from` on (a reorg); returns them.
   * The copy in memory stays as it was until the next `record`.
   */
  dropFrom(cursor: OnchainCursor, from: number): Promise<OnchainBatch[]> {
    return this.store.onchain.record(cursor, [], { dropFrom: from });
  }

  /** The recorded batch with the highest id. */
  last(): Promise<OnchainBatch | undefined> {
    return this.store.onchain.last();
  }

  /**
   * The batch ids the watch takes: up to `newest` (the newest stored batch plus the ahead limit),
   * and records for batches not stored only from the store's first batch on.
   */
  async window(): Promise<BatchWindow> {
    const stored = await this.store.batches.lastId();
    return {
      newest: Math.min((stored ?? -1) + this.aheadLimit, Number.MAX_SAFE_INTEGER),
      stored: stored ?? null,
      first: await this.store.batches.firstId(),
    };
  }

  /**
   * What an earlier version recorded from a lying endpoint: a frozen batch or a newest update past
   * the batch ids the exchange can have reached. The freeze is withdrawn; the newest update is
   * forgotten until the next one is read.
   */
  async dropOutOfRange(cursor: OnchainCursor): Promise<void> {
    const { newest } = await this.window();
    const badFreeze = cursor.frozen !== undefined && cursor.frozen.batch_id > newest;
    const badLast = cursor.last !== undefined && cursor.last.batch_id > newest;
    if (!badFreeze && !badLast) return;
    const { frozen, last, ...rest } = cursor;
    await this.record({ ...rest, ...(badFreeze ? {} : { frozen }), ...(badLast ? {} : { last }) }, []);
    if (badFreeze)
      this.report.freezeWithdrawn(
        frozen!,
        `its batch id is more than ${this.aheadLimit} past the newest stored batch`,
      );
  }
}
