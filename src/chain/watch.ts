/**
 * Follows the exchange contract on the base chain beside the member: which batches it committed
 * (and whether their roots are the ones this member stored), and whether it froze. It acts only on
 * blocks `confirmations` deep, reads logs in bounded ranges, keeps its place in the store (so that
 * a restart continues where it stopped), and treats every RPC failure as a reason to try again at
 * the next poll: nothing it meets stops the member or changes its readiness.
 *
 * The endpoint is not trusted: a log counts only if the exchange emitted it and it has exactly a
 * watched event's shape (exchange-logs.ts); batch ids are range-checked as the integers they are
 * (an id past the newest stored one by more than `maxBatchesAhead` is refused, so a forged id
 * neither pins the metrics nor grows the records: watch-records.ts); a freeze is recorded only
 * when isFrozen() at a confirmed block says so, and withdrawn when it later says otherwise
 * (freeze.ts); what it remembers and the lines it logs are bounded, whatever the answers
 * (root-comparison.ts, watch-report.ts).
 *
 * This class only schedules the polls and runs each one's steps in order; each step is its own
 * module: contract-start.ts (where reading begins), reorg.ts, root-comparison.ts, log-scan.ts,
 * freeze.ts, frozen-shared-state.ts, all asking the endpoint through exchange-endpoint.ts.
 */
import type { Logger } from "../logging.js";
import type { BatchRecord } from "../storage/batch-record.js";
import type { LevelStore } from "../storage/level-store.js";
import type { OnchainCursor } from "../storage/onchain-record.js";
import { contractCursor } from "./contract-start.js";
import { ExchangeEndpoint } from "./exchange-endpoint.js";
import { FreezeCheck } from "./freeze.js";
import { recordFrozenSharedState } from "./frozen-shared-state.js";
import { LogScan } from "./log-scan.js";
import { rewindOnReorg } from "./reorg.js";
import { RootComparison } from "./root-comparison.js";
import { rpcClient } from "./rpc.js";
import { MAX_BATCHES_AHEAD, WatchRecords } from "./watch-records.js";
import { WatchReport, type ChainWatchEvents } from "./watch-report.js";

export type { ChainWatchEvents } from "./watch-report.js";
export { DEFAULT_LOG_RANGE, RANGES_PER_POLL } from "./log-scan.js";
export { REORG_REWIND } from "./reorg.js";
export { MAX_BATCHES_AHEAD } from "./watch-records.js";

export interface ChainWatchOptions {
  readonly rpcUrl: string;
  readonly contract: string;
  readonly confirmations: number;
  readonly pollIntervalMs: number;
  /** Each RPC call's time-out. */
  readonly timeoutMs: number;
  /** Blocks per eth_getLogs at most (default DEFAULT_LOG_RANGE). */
  readonly maxRange?: number;
  /** How far past the newest stored batch an on-chain batch id may be (default MAX_BATCHES_AHEAD). */
  readonly maxBatchesAhead?: number;
  /** dacd's name of the tree the contract's vault root is: vault (spot) or position (perpetual). */
  readonly mainTree: string;
  readonly store: LevelStore;
  readonly log: Logger;
  readonly events?: ChainWatchEvents;
}

export class ChainWatch {
  private readonly abort = new AbortController();
  private readonly endpoint: ExchangeEndpoint;
  private readonly report: WatchReport;
  private readonly records: WatchRecords;
  private readonly roots: RootComparison;
  private readonly freeze: FreezeCheck;
  private readonly scan: LogScan;
  private stopped = false;
  private sleeping: { timer: NodeJS.Timeout; wake: () => void } | undefined;
  private loop: Promise<void> | undefined;

  constructor(private readonly opts: ChainWatchOptions) {
    const address = opts.contract.toLowerCase() as `0x${string}`;
    const aheadLimit = opts.maxBatchesAhead ?? MAX_BATCHES_AHEAD;
    this.endpoint = new ExchangeEndpoint(rpcClient(opts.rpcUrl, opts.timeoutMs, this.abort.signal), address);
    this.report = new WatchReport(opts.log, opts.events, opts.rpcUrl, aheadLimit);
    this.records = new WatchRecords(opts.store, address, this.report, aheadLimit);
    this.roots = new RootComparison(opts.store, this.records, this.report);
    this.freeze = new FreezeCheck(this.endpoint, this.records, this.report);
    this.scan = new LogScan({
      store: opts.store,
      endpoint: this.endpoint,
      records: this.records,
      roots: this.roots,
      freeze: this.freeze,
      report: this.report,
      mainTree: opts.mainTree,
      ...(opts.maxRange !== undefined ? { maxRange: opts.maxRange } : {}),
    });
  }

  /** What the watch knows now (the store's copy, kept in memory for the metrics and status). */
  get state(): OnchainCursor | undefined {
    return this.records.cursor;
  }

  /**
   * Reads the stored cursor and starts polling. Root updates read before their batch was stored
   * and not compared since (the member stored it, then stopped before the next poll) are compared
   * at the first poll.
   */
  async start(): Promise<void> {
    const ours = (): OnchainCursor | undefined => {
      const cursor = this.records.cursor;
      return cursor?.contract === this.endpoint.address ? cursor : undefined;
    };
    await this.records.load();
    await this.roots.loadUncompared();
    const stored = ours();
    if (stored) await this.records.dropOutOfRange(stored);
    // After the drop: a freeze out of range is withdrawn, not announced.
    const frozen = ours()?.frozen;
    if (frozen)
      this.opts.log.warn(
        { batch_id: frozen.batch_id, block_number: frozen.block_number, since: frozen.detected_at },
        `the exchange is frozen at batch ${frozen.batch_id}: escapes are served at that batch`,
      );
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    if (this.sleeping) {
      clearTimeout(this.sleeping.timer);
      this.sleeping.wake();
    }
    await this.loop;
  }

  /** The member stored a batch: compare it at the next poll if the chain's roots for it are known. */
  stored(record: BatchRecord): void {
    this.roots.stored(record.batch_id);
  }

  /**
   * One round: check for a reorg, read confirmed blocks not read yet (at most
   * RANGES_PER_POLL ranges), look for the freeze. True when confirmed blocks are left to read.
   */
  async poll(): Promise<boolean> {
    const { endpoint, records, roots, report } = this;
    const { log, store, confirmations, mainTree } = this.opts;
    const head = await endpoint.head();
    const safe = head - confirmations;
    let cursor = await contractCursor(head, { endpoint, records, log });
    cursor = await rewindOnReorg(cursor, head, { endpoint, records, roots, report, confirmations });
    await roots.compareStored(cursor);
    const scanned = await this.scan.read(cursor, safe, () => this.stopped);
    if (scanned.behind) return true;
    cursor = scanned.cursor;
    // Every confirmed block read: the view at the confirmed head says whether the exchange is frozen.
    if (cursor.next_block > safe && safe >= 0 && !this.stopped) await this.freeze.checkAt(cursor, safe);
    const frozen = records.cursor?.frozen;
    if (mainTree === "position" && frozen && !frozen.shared_state && !this.stopped)
      await recordFrozenSharedState(records.cursor!, { store, endpoint, records, log });
    return false;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        // Still behind after a poll's ranges: the next poll at once (it asks for the head again).
        if (await this.poll()) continue;
      } catch (err) {
        if (this.stopped) break;
        this.report.pollFailed(err);
      }
      await this.sleep(this.opts.pollIntervalMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = (): void => {
        this.sleeping = undefined;
        resolve();
      };
      this.sleeping = { timer: setTimeout(wake, ms), wake };
    });
  }
}
