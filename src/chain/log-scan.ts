/**
 * Reading the exchange's logs in confirmed blocks: in ranges of at most `maxRange` blocks, at most
 * RANGES_PER_POLL ranges a poll, each range's logs checked (exchange-logs.ts), its root updates
 * taken within the batch window, compared with the stored batches, and recorded with the new
 * cursor in one write.
 */
import type { LevelStore } from "../storage/level-store.js";
import type { OnchainBatch, OnchainCursor } from "../storage/onchain-record.js";
import type { ExchangeEndpoint } from "./exchange-endpoint.js";
import { checkLog } from "./exchange-logs.js";
import type { FreezeCheck } from "./freeze.js";
import { perpetualRoots } from "./perpetual-roots.js";
import type { RootComparison } from "./root-comparison.js";
import { onchainBatch, rootsOf, type RootUpdateLog } from "./root-update.js";
import { MalformedAnswer } from "./rpc.js";
import type { WatchRecords } from "./watch-records.js";
import type { WatchReport } from "./watch-report.js";

/** What the common RPC providers answer for one contract's logs (most cap a range at 10,000 blocks). */
export const DEFAULT_LOG_RANGE = 5000;

/**
 * Log ranges read per poll at most: the head is asked for again between polls, so that a head an
 * endpoint answered far ahead (then the real one) costs a few ranges, not the whole distance.
 */
export const RANGES_PER_POLL = 20;

export interface LogScanDeps {
  readonly store: LevelStore;
  readonly endpoint: ExchangeEndpoint;
  readonly records: WatchRecords;
  readonly roots: RootComparison;
  readonly freeze: FreezeCheck;
  readonly report: WatchReport;
  /** dacd's name of the tree the contract's vault root is: vault (spot) or position (perpetual). */
  readonly mainTree: string;
  /** Blocks per eth_getLogs at most (default DEFAULT_LOG_RANGE). */
  readonly maxRange?: number;
}

export class LogScan {
  constructor(private readonly deps: LogScanDeps) {}

  /**
   * Reads the confirmed blocks from `cursor`'s next block to `safe`, at most RANGES_PER_POLL
   * ranges, until `stopped()`. `behind`: confirmed blocks are left to read.
   */
  async read(
    cursor: OnchainCursor,
    safe: number,
    stopped: () => boolean,
  ): Promise<{ cursor: OnchainCursor; behind: boolean }> {
    const maxRange = this.deps.maxRange ?? DEFAULT_LOG_RANGE;
    for (let ranges = 0; cursor.next_block <= safe && !stopped(); ranges++) {
      if (ranges === RANGES_PER_POLL) return { cursor, behind: true };
      const from = cursor.next_block;
      const to = Math.min(safe, from + maxRange - 1);
      cursor = await this.readRange(cursor, from, to);
    }
    return { cursor, behind: false };
  }

  /** Reads blocks from..to (confirmed) and records what they hold, with the new cursor, in one write. */
  private async readRange(cursor: OnchainCursor, from: number, to: number): Promise<OnchainCursor> {
    const { store, endpoint, records, roots, freeze, report, mainTree } = this.deps;
    const logs = await endpoint.logs(from, to);
    const end = await endpoint.block(to);
    if (typeof end?.hash !== "string")
      throw new MalformedAnswer(`eth_getBlockByNumber answered block ${to} without a hash`);
    const accepted = logs.filter((l) => {
      if (l.removed) return false;
      const refused = checkLog(l, endpoint.address);
      if (refused) report.rejected(refused, { block_number: Number(l.blockNumber), address: l.address });
      return refused === undefined;
    });
    const updates = accepted.sort((a, b) => Number(a.blockNumber - b.blockNumber) || a.logIndex - b.logIndex);
    const window = await records.window();
    const batches: OnchainBatch[] = [];
    let last = cursor.last;
    let frozenAt: number | undefined;
    for (let i = 0; i < updates.length; i++) {
      const log = updates[i]!;
      if (log.eventName === "LogFrozen") {
        frozenAt ??= Number(log.blockNumber);
        continue;
      }
      const update = log as unknown as RootUpdateLog;
      const batchId = update.args.batchId ?? -1n;
      const sequence = update.args.sequenceNumber ?? -1n;
      if (
        batchId < 0n ||
        batchId > BigInt(window.newest) ||
        sequence < 0n ||
        sequence > BigInt(Number.MAX_SAFE_INTEGER)
      ) {
        report.rejected("out_of_range", {
          batch_id: String(batchId),
          sequence_number: String(sequence),
          tx_hash: update.transactionHash,
          newest_stored: window.stored,
        });
        continue;
      }
      const stored = await store.getBatch(Number(batchId));
      const position = {
        batch_id: Number(batchId),
        sequence_number: Number(sequence),
        block_number: Number(log.blockNumber),
      };
      if (!last || position.sequence_number >= last.sequence_number) last = position;
      // Before the store's first batch: history this member can never compare, not recorded.
      if (!stored && window.first !== undefined && batchId < BigInt(window.first)) continue;
      const view =
        log.eventName === "LogUpdateState"
          ? await perpetualRoots(endpoint, report, update, lastUpdateInBlock(updates, i), log.blockNumber)
          : undefined;
      const batch = onchainBatch(update, rootsOf(update, mainTree, view), stored);
      batches.push(batch);
      if (batch.matches === false) roots.mismatch(batch, stored!);
    }
    const frozen =
      cursor.frozen ?? (frozenAt !== undefined ? await freeze.confirmLog(frozenAt, to) : undefined);
    const next: OnchainCursor = {
      contract: endpoint.address,
      next_block: to + 1,
      last_block: { number: to, hash: end.hash },
      ...(last ? { last } : {}),
      ...(frozen ? { frozen } : {}),
    };
    await records.record(next, batches);
    return next;
  }
}

/** Whether `logs[i]` (sorted by block) is the last root update of its block. */
function lastUpdateInBlock(logs: readonly { blockNumber: bigint; eventName: string }[], i: number): boolean {
  for (let j = i + 1; j < logs.length && logs[j]!.blockNumber === logs[i]!.blockNumber; j++)
    if (logs[j]!.eventName !== "LogFrozen") return false;
  return true;
}
