/**
 * dacd's Prometheus metrics, on a registry of its own (never prom-client's global one, so that
 * nothing else loaded in the process can add to or clash with what dacd exports).
 *
 * The values come from three kinds of sources:
 * - hooks the run loop and the HTTP clients call (MemberEvents, onResult, onRetry): counters and
 *   histograms are updated as things happen;
 * - a state provider read at scrape time (last signed batch, feeder's last batch, lag, readiness);
 * - the file system, read at scrape time at most every 30 s (store size, free space).
 *
 * Each group of metrics is defined in metrics/; they are registered here in the order they are
 * exported.
 */
import { collectDefaultMetrics, Registry, type Counter } from "prom-client";
import type { MemberEvents } from "../poller/member/member-events.js";
import type { RequestOutcome } from "../poller/gateway/http.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import { batchEvents, batchMetrics, countingEngine, type BatchMetrics } from "./metrics/batch-metrics.js";
import { diskMetrics, type DiskMetrics } from "./metrics/disk-metrics.js";
import { escapeApiMetrics, type EscapeApiMetrics } from "./metrics/escape-api-metrics.js";
import { PREFIX } from "./metrics/family.js";
import { gatewayMetrics, observeGatewayCall, type GatewayMetrics } from "./metrics/gateway-metrics.js";
import {
  identityMetrics,
  setInfo,
  setMode,
  type IdentityMetrics,
  type InfoLabels,
} from "./metrics/identity-metrics.js";
import { JOB_OUTCOMES, jobMetrics, type JobMetrics } from "./metrics/job-metrics.js";
import { memberStateMetrics, type MemberStateMetrics, type MetricsState } from "./metrics/member-state.js";
import { onchainMetrics, type OnchainMetrics } from "./metrics/onchain-metrics.js";
import { signingMetrics } from "./metrics/signing-metrics.js";

export { JOB_OUTCOMES } from "./metrics/job-metrics.js";
export { DAEMON_ENDPOINTS, GATEWAY_OUTCOMES } from "./metrics/gateway-metrics.js";
export { ONCHAIN_RPC_FAILURES } from "./metrics/onchain-metrics.js";
export { INFO_LABELS } from "./metrics/identity-metrics.js";
export type { MetricsState, OnchainMetricsState } from "./metrics/member-state.js";

export interface MetricsOptions {
  /** Directory whose size `dacd_store_size_bytes` reports (the LevelDB directory). */
  dataDir?: string;
  /** Read at every scrape. */
  state?: () => MetricsState;
  /** Minimum time between two file-system walks for the store size (default 30 s). */
  diskRefreshMs?: number;
  /** Process metrics (CPU, memory, event loop lag, …); default true. */
  processDefaults?: boolean;
  /** Labels of `dacd_info` (see INFO_LABELS); settable later with setInfo. */
  info?: InfoLabels;
}

export class DacdMetrics {
  readonly registry = new Registry();
  readonly member: MemberStateMetrics;
  readonly batches: BatchMetrics;
  readonly gateway: GatewayMetrics;
  readonly disk: DiskMetrics;
  readonly jobs: JobMetrics;
  readonly identity: IdentityMetrics;
  /** Claims refused because the claims journal holds another claim for the batch id. */
  readonly conflictingClaims: Counter;
  /** Failed calls to the member key's token (signer: pkcs11): each leaves a batch unsigned. */
  readonly signerErrors: Counter;
  readonly escapeApi: EscapeApiMetrics;
  readonly onchain: OnchainMetrics;

  constructor(opts: MetricsOptions = {}) {
    const registers = [this.registry];
    const state = (): MetricsState | undefined => opts.state?.();
    this.member = memberStateMetrics(registers, state, Date.now());
    this.batches = batchMetrics(registers);
    this.gateway = gatewayMetrics(registers);
    this.disk = diskMetrics(registers, opts.dataDir, opts.diskRefreshMs);
    this.jobs = jobMetrics(registers);
    this.identity = identityMetrics(registers, opts.info ?? {});
    const signing = signingMetrics(registers);
    this.conflictingClaims = signing.conflictingClaims;
    this.signerErrors = signing.signerErrors;
    this.escapeApi = escapeApiMetrics(registers);
    this.onchain = onchainMetrics(registers, state);
    if (opts.processDefaults !== false) collectDefaultMetrics({ register: this.registry, prefix: PREFIX });
  }

  /** The base-chain watch's failed RPC calls, by reason. */
  get onchainRpcFailures(): OnchainMetrics["rpcFailures"] {
    return this.onchain.rpcFailures;
  }

  /** Recorded freezes the base chain later denied. */
  get onchainFreezeWithdrawn(): OnchainMetrics["freezeWithdrawn"] {
    return this.onchain.freezeWithdrawn;
  }

  /** What the base-chain endpoint answered and the watch refused, by reason. */
  get onchainRejected(): OnchainMetrics["rejected"] {
    return this.onchain.rejected;
  }

  /** Root updates on the base chain that differ from the stored roots. */
  get onchainRootMismatches(): OnchainMetrics["rootMismatches"] {
    return this.onchain.rootMismatches;
  }

  /** Sets `dacd_mode{mode="active"|"shadow"}`: 1 for this mode, 0 for the other. */
  setMode(mode: "active" | "shadow"): void {
    setMode(this.identity.mode, mode);
  }

  /**
   * A job is scheduled: its run counters start at 0 for every outcome, `dacd_job_scheduled` is 1,
   * and `lastSuccessMs` (e.g. the newest backup found in backup_dir) seeds the last-success time.
   */
  jobAdded(task: string, lastSuccessMs?: number): void {
    for (const outcome of JOB_OUTCOMES) this.jobs.runs.inc({ task, outcome }, 0);
    this.jobs.scheduled.set({ task }, 1);
    if (lastSuccessMs !== undefined) this.jobs.lastSuccess.set({ task }, lastSuccessMs / 1000);
  }

  /** Replaces the labels of the single `dacd_info` series. */
  setInfo(labels: InfoLabels): void {
    setInfo(this.identity.info, labels);
  }

  /** Hooks for the run loop. */
  memberEvents(): MemberEvents {
    return batchEvents(this.batches);
  }

  /** `onResult` of the gateway clients. */
  onResult = (endpoint: string, outcome: RequestOutcome): void => {
    observeGatewayCall(this.gateway, endpoint, outcome);
  };

  /** `observe` of the escape API: one finished request. */
  onEscapeApiRequest = (route: string, status: number, seconds: number): void => {
    this.escapeApi.requests.inc({ route, status: String(status) });
    this.escapeApi.requestSeconds.observe({ route }, seconds);
  };

  /** `observeRefused` of the escape API: one connection closed as it was accepted. */
  onEscapeApiConnectionRefused = (reason: string): void => {
    this.escapeApi.connectionsRefused.inc({ reason });
  };

  /** `onRetry` of the gateway clients. */
  onRetry = (endpoint: string): void => {
    this.gateway.retries.inc({ endpoint });
  };

  /** The engine, counting every pair it hashes. */
  countingEngine(engine: HashEngine): HashEngine {
    return countingEngine(engine, this.batches.hashes);
  }

  /** Prometheus text exposition. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** Every metric family name dacd can export (for validating alert rules and dashboards). */
export async function exportedMetricNames(metrics = new DacdMetrics()): Promise<Set<string>> {
  const names = new Set<string>();
  for (const m of await metrics.registry.getMetricsAsJSON()) {
    names.add(m.name);
    const type = String(m.type); // "histogram" at run time, whatever the typings say
    if (type === "histogram") for (const s of ["_bucket", "_sum", "_count"]) names.add(m.name + s);
    if (type === "summary") for (const s of ["_sum", "_count"]) names.add(m.name + s);
  }
  return names;
}
