/** The devnet's status (GET /devnet/status and `Devnet.status()`). */
import type { Approvals } from "./approvals.js";
import type { BaseChainStatus, LocalBaseChain } from "./base-chain.js";
import type { ChainView } from "./chain.js";
import type { Faults } from "./faults.js";
import type { DevnetOptions, DevnetSettings } from "./options.js";
import type { ChainSource } from "./source.js";
import type { ProfileName } from "./shared.js";
import type { Traffic, TrafficStats } from "./traffic.js";

export interface DevnetStatus {
  readonly variant: "P" | "G";
  readonly profile: ProfileName;
  readonly mode: "live" | "replay";
  readonly last_batch_id: number;
  readonly head_batch_id: number;
  readonly first_unused_tx_id: number | null;
  readonly ready_txs: number | null;
  readonly quorum: number;
  readonly committee: string[] | null;
  readonly blocked_tx_types: string[];
  readonly alternative_endpoint: { url: string } | null;
  readonly faults: unknown;
  readonly traffic: TrafficStats | null;
  readonly batches: unknown[];
  /** With a base chain: its node, the exchange, the last batch committed and whether it is frozen. */
  readonly base_chain: BaseChainStatus | null;
}

/** What the status is read from; the traffic and the base chain may come and go. */
export interface StatusSources {
  readonly opts: DevnetOptions;
  readonly settings: DevnetSettings;
  readonly source: ChainSource;
  readonly faults: Faults;
  readonly approvals: Approvals;
  readonly blockedTxTypes: Set<string>;
  readonly traffic: () => Traffic | undefined;
  readonly baseChain: () => LocalBaseChain | undefined;
}

export function devnetStatus(s: StatusSources): DevnetStatus {
  const { chain, profile, live } = s.source;
  const traffic = s.traffic();
  const alternative = live?.gateway.alternativeConfig;
  return {
    variant: s.opts.variant,
    profile: profile.name,
    mode: s.opts.replay ? "replay" : "live",
    last_batch_id: chain.lastBatchId(),
    head_batch_id: live ? live.batcher.head() : chain.lastBatchId(),
    first_unused_tx_id: live ? live.pool.firstUnused() : null,
    ready_txs: live ? live.pool.ready() : null,
    quorum: s.settings.quorum,
    committee: s.settings.committee ?? null,
    blocked_tx_types: [...s.blockedTxTypes],
    alternative_endpoint: alternative ? { url: alternative.url } : null,
    faults: s.faults.pending(),
    traffic: traffic ? { ...traffic.stats } : null,
    batches: Array.from({ length: chain.lastBatchId() + 1 }, (_, id) => batchStatus(chain, s.approvals, id)),
    base_chain: s.baseChain()?.status() ?? null,
  };
}

function batchStatus(chain: ChainView, approvals: Approvals, id: number): unknown {
  const b = chain.batch(id)!;
  return {
    batch_id: id,
    prev_batch_id: b.prevBatchId,
    sequence_number: b.sequenceNumber,
    rejected: b.rejected,
    tx_count: b.txs.length,
    replaced: b.txs.filter((t) => t.wasReplaced).map((t) => ({ tx_id: t.txId, reason: t.reason })),
    roots: b.stated,
    quorum: approvals.state(id),
  };
}
