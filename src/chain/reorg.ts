/**
 * A reorg deeper than the confirmations: the last block the watch read is gone (another hash
 * there, or the chain is shorter). What was read from a little before it is dropped and reread;
 * a freeze recorded in the dropped blocks is withdrawn.
 */
import type { OnchainCursor } from "../storage/onchain-record.js";
import type { ExchangeEndpoint } from "./exchange-endpoint.js";
import type { RootComparison } from "./root-comparison.js";
import type { WatchRecords } from "./watch-records.js";
import type { WatchReport } from "./watch-report.js";

/**
 * How far back a reorg deeper than the confirmations sends the watch: the last block it read is
 * gone, and nothing short of rereading tells which block before it still stands. Cheap to reread.
 */
export const REORG_REWIND = 128;

export interface ReorgDeps {
  readonly endpoint: ExchangeEndpoint;
  readonly records: WatchRecords;
  readonly roots: RootComparison;
  readonly report: WatchReport;
  readonly confirmations: number;
}

/** `cursor` when its last block read still stands at `head`; else the cursor rewound and recorded. */
export async function rewindOnReorg(
  cursor: OnchainCursor,
  head: number,
  deps: ReorgDeps,
): Promise<OnchainCursor> {
  const { endpoint, records, roots, report, confirmations } = deps;
  const last = cursor.last_block;
  if (!last) return cursor;
  if (last.number <= head) {
    const block = await endpoint.block(last.number);
    if (block.hash === last.hash) return cursor;
  }
  // From below the confirmed head too: blocks past it that a lying or broken endpoint once
  // answered (a head that jumped ahead and came back) are reread, not waited for.
  const from = Math.max(0, Math.min(last.number, head - confirmations) - REORG_REWIND);
  report.reorg(last, head, from, confirmations);
  const frozen = cursor.frozen && cursor.frozen.block_number < from ? cursor.frozen : undefined;
  const rewound: OnchainCursor = {
    contract: endpoint.address,
    next_block: from,
    ...(frozen ? { frozen } : {}),
  };
  roots.dropped(await records.dropFrom(rewound, from));
  if (cursor.frozen && !frozen)
    report.freezeWithdrawn(cursor.frozen, `block ${last.number}, after the freeze's, was replaced`);
  const kept = await records.last();
  const withLast: OnchainCursor = kept
    ? {
        ...rewound,
        last: {
          batch_id: kept.batch_id,
          sequence_number: kept.sequence_number,
          block_number: kept.block_number,
        },
      }
    : rewound;
  await records.record(withLast, []);
  return withLast;
}
