/** Gauges read from the member's state at scrape time. */
import { scrapedGauge, type Registers } from "./family.js";

/** What the metrics read at scrape time; every field may be unknown. */
export interface MetricsState {
  /** Last batch whose signature the gateway accepted (this run or an earlier one). */
  lastSignedBatchId?: number;
  /** Unix time (ms) of that acceptance. */
  lastSignedAtMs?: number;
  /** Last batch id the feeder gateway reported. */
  feederLastBatchId?: number;
  /** Batches the feeder has that the member has not handled yet. */
  lag?: number;
  ready: boolean;
  gatewayReachable: boolean;
  /** What the base-chain watch knows; absent when the chain is not followed. */
  onchain?: OnchainMetricsState;
}

export interface OnchainMetricsState {
  /** Last batch whose root update is on-chain in a confirmed block. */
  batchId?: number;
  frozen: boolean;
  /** Last confirmed block the watch has read. */
  block?: number;
}

/** The state as the provider gives it at this scrape (undefined without a provider). */
export type StateReader = () => MetricsState | undefined;

export function memberStateMetrics(registers: Registers, state: StateReader, startedAtMs: number) {
  const gauge = (name: string, help: string, read: () => number) => scrapedGauge(registers, name, help, read);
  return {
    lastSignedBatchId: gauge(
      "last_signed_batch_id",
      "Last batch whose signature the availability gateway accepted (-1: none yet)",
      () => state()?.lastSignedBatchId ?? -1,
    ),
    feederLastBatchId: gauge(
      "feeder_last_batch_id",
      "Last batch id the feeder gateway reported (-1: unknown or no feeder gateway configured)",
      () => state()?.feederLastBatchId ?? -1,
    ),
    batchLag: gauge(
      "batch_lag",
      "Batches the feeder gateway reports that this member has not handled yet (0 when unknown)",
      () => state()?.lag ?? 0,
    ),
    secondsSinceLastSignature: gauge(
      "seconds_since_last_signature",
      "Seconds since the gateway last accepted a signature of this member (since start-up if never)",
      () => (Date.now() - (state()?.lastSignedAtMs ?? startedAtMs)) / 1000,
    ),
    ready: gauge("ready", "1 when /readyz answers 200 (caught up and the gateway reachable), else 0", () =>
      state()?.ready ? 1 : 0,
    ),
    gatewayReachable: gauge(
      "gateway_reachable",
      "1 when the member's last gateway call succeeded, else 0",
      () => (state()?.gatewayReachable === false ? 0 : 1),
    ),
  };
}

export type MemberStateMetrics = ReturnType<typeof memberStateMetrics>;
