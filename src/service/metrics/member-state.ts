/** Gauges read from the member's state at scrape time. */
import { Gauge } from "prom-client";
import { PREFIX, type Registers } from "./family.js";

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
  return {
    lastSignedBatchId: new Gauge({
      name: `${PREFIX}last_signed_batch_id`,
      help: "Last batch whose signature the availability gateway accepted (-1: none yet)",
      registers,
      collect() {
        this.set(state()?.lastSignedBatchId ?? -1);
      },
    }),
    feederLastBatchId: new Gauge({
      name: `${PREFIX}feeder_last_batch_id`,
      help: "Last batch id the feeder gateway reported (-1: unknown or no feeder gateway configured)",
      registers,
      collect() {
        this.set(state()?.feederLastBatchId ?? -1);
      },
    }),
    batchLag: new Gauge({
      name: `${PREFIX}batch_lag`,
      help: "Batches the feeder gateway reports that this member has not handled yet (0 when unknown)",
      registers,
      collect() {
        this.set(state()?.lag ?? 0);
      },
    }),
    secondsSinceLastSignature: new Gauge({
      name: `${PREFIX}seconds_since_last_signature`,
      help: "Seconds since the gateway last accepted a signature of this member (since start-up if never)",
      registers,
      collect() {
        this.set((Date.now() - (state()?.lastSignedAtMs ?? startedAtMs)) / 1000);
      },
    }),
    ready: new Gauge({
      name: `${PREFIX}ready`,
      help: "1 when /readyz answers 200 (caught up and the gateway reachable), else 0",
      registers,
      collect() {
        this.set(state()?.ready ? 1 : 0);
      },
    }),
    gatewayReachable: new Gauge({
      name: `${PREFIX}gateway_reachable`,
      help: "1 when the member's last gateway call succeeded, else 0",
      registers,
      collect() {
        this.set(state()?.gatewayReachable === false ? 0 : 1);
      },
    }),
  };
}

export type MemberStateMetrics = ReturnType<typeof memberStateMetrics>;
