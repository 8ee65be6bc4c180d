/**
 * dacd's Prometheus metrics, on a registry of its own (never prom-client's global one, so that
 * nothing else loaded in the process can add to or clash with what dacd exports).
 *
 * The values come from three kinds of sources:
 * - hooks the run loop and the HTTP clients call (MemberEvents, onResult, onRetry): counters and
 *   histograms are updated as things happen;
 * - a state provider read at scrape time (last signed batch, feeder's last batch, lag, readiness);
 * - the file system, read at scrape time at most every 30 s (store size, free space).
 */
import { readdir, stat, statfs } from "node:fs/promises";
import { join } from "node:path";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { REFUSAL_CODES, type DacdError } from "../errors.js";
import type { MemberEvents } from "../poller/member/member.js";
import type { RequestOutcome } from "../poller/gateway/http.js";
import type { BatchRecord } from "../storage/batch-record.js";
import { chainHashes, climbChains, hashWithConstant, type HashEngine } from "../verifier/hash/engine.js";
import type { VerifyDetail } from "../verifier/verify-batch.js";
import { buildInfo } from "../build-info.js";

/** Outcomes of a scheduled job run (jobs.ts). */
export const JOB_OUTCOMES = ["ok", "failed", "skipped", "aborted"] as const;

/** Final outcomes of a gateway call (poller/gateway/http.ts OutcomeKind). */
export const GATEWAY_OUTCOMES = ["ok", "http_status", "transport", "bad_response", "aborted"] as const;

/** The gateway endpoints the run loop calls (the feeder's only with feeder_gateway_url). */
export const DAEMON_ENDPOINTS = ["get_batch_data", "approve_new_roots", "get_last_batch_id"] as const;

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

/** Why a base-chain RPC call failed (chain/rpc.ts RPC_FAILURES). */
export const ONCHAIN_RPC_FAILURES = ["timeout", "error"] as const;

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
  info?: Partial<Record<(typeof INFO_LABELS)[number], string>>;
}

const PREFIX = "dacd_";

/** Labels of `dacd_info`. */
export const INFO_LABELS = ["profile", "chain", "member_key", "engine", "version"] as const;

export class DacdMetrics {
  readonly registry = new Registry();

  readonly lastSignedBatchId: Gauge;
  readonly feederLastBatchId: Gauge;
  readonly batchLag: Gauge;
  readonly secondsSinceLastSignature: Gauge;
  readonly ready: Gauge;
  readonly gatewayReachable: Gauge;
  readonly batchesSigned: Counter;
  readonly batchesRefused: Counter<"reason">;
  readonly rootMismatches: Counter;
  readonly verifySeconds: Histogram<"tree">;
  readonly hashes: Counter;
  readonly leaves: Counter<"tree">;
  readonly nodesWritten: Counter;
  readonly gatewayRequests: Counter<"endpoint" | "outcome">;
  readonly gatewayRequestSeconds: Histogram<"endpoint">;
  readonly gatewayRetries: Counter<"endpoint">;
  readonly storeSizeBytes: Gauge;
  readonly diskFreeBytes: Gauge;
  readonly diskTotalBytes: Gauge;
  readonly jobRuns: Counter<"task" | "outcome">;
  readonly jobSeconds: Histogram<"task">;
  readonly jobLastSuccess: Gauge<"task">;
  readonly info: Gauge<(typeof INFO_LABELS)[number]>;
  readonly mode: Gauge<"mode">;
  readonly buildInfo: Gauge<"version" | "commit" | "node">;
  readonly jobScheduled: Gauge<"task">;
  readonly conflictingClaims: Counter;
  /** Failed calls to the member key's token (signer: pkcs11): each leaves a batch unsigned. */
  readonly signerErrors: Counter;
  readonly escapeApiRequests: Counter<"route" | "status">;
  readonly escapeApiRequestSeconds: Histogram<"route">;
  readonly escapeApiConnectionsRefused: Counter<"reason">;
  readonly onchainBatchId: Gauge;
  readonly onchainFrozen: Gauge;
  readonly onchainBlock: Gauge;
  readonly onchainRootMismatches: Counter;
  readonly onchainRpcFailures: Counter<"reason">;

  private readonly startedAtMs = Date.now();
  private disk: { at: number; size?: number; free?: number; total?: number } | undefined;
  private diskRefresh: Promise<void> | undefined;

  constructor(private readonly opts: MetricsOptions = {}) {
    const registers = [this.registry];
    const state = (): MetricsState | undefined => opts.state?.();

    this.lastSignedBatchId = new Gauge({
      name: `${PREFIX}last_signed_batch_id`,
      help: "Last batch whose signature the availability gateway accepted (-1: none yet)",
      registers,
      collect() {
        this.set(state()?.lastSignedBatchId ?? -1);
      },
    });
    this.feederLastBatchId = new Gauge({
      name: `${PREFIX}feeder_last_batch_id`,
      help: "Last batch id the feeder gateway reported (-1: unknown or no feeder gateway configured)",
      registers,
      collect() {
        this.set(state()?.feederLastBatchId ?? -1);
      },
    });
    this.batchLag = new Gauge({
      name: `${PREFIX}batch_lag`,
      help: "Batches the feeder gateway reports that this member has not handled yet (0 when unknown)",
      registers,
      collect() {
        this.set(state()?.lag ?? 0);
      },
    });
    const startedAtMs = this.startedAtMs;
    this.secondsSinceLastSignature = new Gauge({
      name: `${PREFIX}seconds_since_last_signature`,
      help: "Seconds since the gateway last accepted a signature of this member (since start-up if never)",
      registers,
      collect() {
        this.set((Date.now() - (state()?.lastSignedAtMs ?? startedAtMs)) / 1000);
      },
    });
    this.ready = new Gauge({
      name: `${PREFIX}ready`,
      help: "1 when /readyz answers 200 (caught up and the gateway reachable), else 0",
      registers,
      collect() {
        this.set(state()?.ready ? 1 : 0);
      },
    });
    this.gatewayReachable = new Gauge({
      name: `${PREFIX}gateway_reachable`,
      help: "1 when the member's last gateway call succeeded, else 0",
      registers,
      collect() {
        this.set(state()?.gatewayReachable === false ? 0 : 1);
      },
    });
    this.batchesSigned = new Counter({
      name: `${PREFIX}batches_signed_total`,
      help: "Batches whose signature the gateway accepted in this run",
      registers,
    });
    this.batchesRefused = new Counter({
      name: `${PREFIX}batches_refused_total`,
      help: "Refusals to sign a batch, by reason (each attempt counts; a refused batch is retried)",
      labelNames: ["reason"],
      registers,
    });
    for (const reason of REFUSAL_CODES) this.batchesRefused.inc({ reason }, 0);
    this.rootMismatches = new Counter({
      name: `${PREFIX}root_mismatch_total`,
      help: "Batches whose recomputed root differed from the stated one (each attempt counts)",
      registers,
    });
    this.verifySeconds = new Histogram({
      name: `${PREFIX}batch_verify_seconds`,
      help: 'Time to verify and sign one batch, up to its write being queued; tree="all" is the whole batch (trees run concurrently)',
      labelNames: ["tree"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    });
    this.hashes = new Counter({
      name: `${PREFIX}hashes_total`,
      help: "Pedersen hashes computed (pairs hashed by the engine)",
      registers,
    });
    this.leaves = new Counter({
      name: `${PREFIX}leaves_total`,
      help: "Changed leaves applied to each tree",
      labelNames: ["tree"],
      registers,
    });
    this.nodesWritten = new Counter({
      name: `${PREFIX}nodes_written_total`,
      help: "Tree nodes written to the store",
      registers,
    });
    this.gatewayRequests = new Counter({
      name: `${PREFIX}gateway_requests_total`,
      help: "Gateway calls (all attempts of one call together) by endpoint and final outcome",
      labelNames: ["endpoint", "outcome"],
      registers,
    });
    this.gatewayRequestSeconds = new Histogram({
      name: `${PREFIX}gateway_request_seconds`,
      help: "Duration of gateway calls including retries, by endpoint",
      labelNames: ["endpoint"],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    });
    this.gatewayRetries = new Counter({
      name: `${PREFIX}gateway_retries_total`,
      help: "Retried gateway attempts, by endpoint",
      labelNames: ["endpoint"],
      registers,
    });
    // Every series starts at 0, so that increase() and rate() see the first failure (a series
    // born at 1 has no earlier sample to increase from).
    for (const endpoint of DAEMON_ENDPOINTS) {
      this.gatewayRetries.inc({ endpoint }, 0);
      for (const outcome of GATEWAY_OUTCOMES) this.gatewayRequests.inc({ endpoint, outcome }, 0);
    }
    const disk = (): Promise<typeof this.disk> => this.refreshDisk().then(() => this.disk);
    this.storeSizeBytes = new Gauge({
      name: `${PREFIX}store_size_bytes`,
      help: "Disk space used by the store (data_dir), refreshed at most every 30 s",
      registers,
      async collect() {
        const d = await disk();
        if (d?.size !== undefined) this.set(d.size);
      },
    });
    this.diskFreeBytes = new Gauge({
      name: `${PREFIX}disk_free_bytes`,
      help: "Free space (for unprivileged users) on the file system of data_dir",
      registers,
      async collect() {
        const d = await disk();
        if (d?.free !== undefined) this.set(d.free);
      },
    });
    this.diskTotalBytes = new Gauge({
      name: `${PREFIX}disk_total_bytes`,
      help: "Size of the file system of data_dir",
      registers,
      async collect() {
        const d = await disk();
        if (d?.total !== undefined) this.set(d.total);
      },
    });
    this.jobRuns = new Counter({
      name: `${PREFIX}job_runs_total`,
      help: "Scheduled job runs by job and outcome (ok, failed, skipped: the previous run was still going)",
      labelNames: ["task", "outcome"],
      registers,
    });
    this.jobSeconds = new Histogram({
      name: `${PREFIX}job_duration_seconds`,
      help: "Duration of scheduled jobs",
      labelNames: ["task"],
      buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600],
      registers,
    });
    this.jobLastSuccess = new Gauge({
      name: `${PREFIX}job_last_success_timestamp_seconds`,
      help: "Unix time of the last successful run of each scheduled job",
      labelNames: ["task"],
      registers,
    });
    this.jobScheduled = new Gauge({
      name: `${PREFIX}job_scheduled`,
      help: "1 for each scheduled job (schedule.<task> is set)",
      labelNames: ["task"],
      registers,
    });
    this.info = new Gauge({
      name: `${PREFIX}info`,
      help: "Constant 1, labelled with the member's static facts",
      labelNames: INFO_LABELS,
      registers,
    });
    this.buildInfo = new Gauge({
      name: `${PREFIX}build_info`,
      help: "Constant 1, labelled with dacd's version, the commit it was built from and the Node.js version",
      labelNames: ["version", "commit", "node"],
      registers,
    });
    const build = buildInfo();
    this.buildInfo.set({ version: build.version, commit: build.commit, node: build.node }, 1);
    this.setInfo(opts.info ?? {});
    this.mode = new Gauge({
      name: `${PREFIX}mode`,
      help: "1 for the mode the member runs in, 0 for the other: active (posts) or shadow (signs, never posts)",
      labelNames: ["mode"],
      registers,
    });
    this.setMode("active");
    this.conflictingClaims = new Counter({
      name: `${PREFIX}conflicting_claims_total`,
      help: "Claims refused because the claims journal holds another claim for the batch id (the store lost or replaced batches)",
      registers,
    });
    this.signerErrors = new Counter({
      name: `${PREFIX}signer_errors_total`,
      help: "Failed calls to the member key's PKCS#11 token (signing, reopening the session): the batch is left unsigned and retried",
      registers,
    });
    this.escapeApiRequests = new Counter({
      name: `${PREFIX}escape_api_requests_total`,
      help: "Escape API requests by route (batches_latest, leaf, proof, escape, escape_info, page, dump, openapi, unknown) and HTTP status",
      labelNames: ["route", "status"],
      registers,
    });
    this.escapeApiRequestSeconds = new Histogram({
      name: `${PREFIX}escape_api_request_seconds`,
      help: "Escape API request durations by route (a dump: until its last byte is sent)",
      labelNames: ["route"],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60, 300],
      registers,
    });
    this.escapeApiConnectionsRefused = new Counter({
      name: `${PREFIX}escape_api_connections_refused_total`,
      help: "Escape API connections closed as they were accepted, by the limit they hit (max_open, per_address, rate)",
      labelNames: ["reason"],
      registers,
    });

    this.onchainBatchId = new Gauge({
      name: `${PREFIX}onchain_batch_id`,
      help: "Last batch whose root update is on the base chain in a confirmed block (-1: none seen, or the chain is not followed)",
      registers,
      collect() {
        this.set(state()?.onchain?.batchId ?? -1);
      },
    });
    this.onchainFrozen = new Gauge({
      name: `${PREFIX}onchain_frozen`,
      help: "1 once the exchange contract is seen frozen (escapes are served at the frozen batch), else 0",
      registers,
      collect() {
        this.set(state()?.onchain?.frozen ? 1 : 0);
      },
    });
    this.onchainBlock = new Gauge({
      name: `${PREFIX}onchain_confirmed_block`,
      help: "Last confirmed base-chain block the watch has read (-1: none yet, or the chain is not followed)",
      registers,
      collect() {
        this.set(state()?.onchain?.block ?? -1);
      },
    });
    this.onchainRootMismatches = new Counter({
      name: `${PREFIX}onchain_root_mismatch_total`,
      help: "Root updates on the base chain whose roots, any of them, differ from the ones stored for that batch",
      registers,
    });
    this.onchainRpcFailures = new Counter({
      name: `${PREFIX}onchain_rpc_failures_total`,
      help: "Failed base-chain RPC calls by reason (timeout, error); the watch tries again at its next poll",
      labelNames: ["reason"],
      registers,
    });
    for (const reason of ONCHAIN_RPC_FAILURES) this.onchainRpcFailures.inc({ reason }, 0);

    if (opts.processDefaults !== false) collectDefaultMetrics({ register: this.registry, prefix: PREFIX });
  }

  /** Sets `dacd_mode{mode="active"|"shadow"}`: 1 for this mode, 0 for the other. */
  setMode(mode: "active" | "shadow"): void {
    this.mode.set({ mode: "active" }, mode === "active" ? 1 : 0);
    this.mode.set({ mode: "shadow" }, mode === "shadow" ? 1 : 0);
  }

  /**
   * A job is scheduled: its run counters start at 0 for every outcome, `dacd_job_scheduled` is 1,
   * and `lastSuccessMs` (e.g. the newest backup found in backup_dir) seeds the last-success time.
   */
  jobAdded(task: string, lastSuccessMs?: number): void {
    for (const outcome of JOB_OUTCOMES) this.jobRuns.inc({ task, outcome }, 0);
    this.jobScheduled.set({ task }, 1);
    if (lastSuccessMs !== undefined) this.jobLastSuccess.set({ task }, lastSuccessMs / 1000);
  }

  /** Replaces the labels of the single `dacd_info` series. */
  setInfo(labels: Partial<Record<(typeof INFO_LABELS)[number], string>>): void {
    this.info.reset();
    this.info.set(labels, 1);
  }

  /** Hooks for the run loop. */
  memberEvents(): MemberEvents {
    return {
      onSigned: (_record: BatchRecord, detail: VerifyDetail) => {
        this.batchesSigned.inc();
        if (detail.reused) return;
        this.verifySeconds.observe({ tree: "all" }, detail.durationMs / 1000);
        for (const [tree, n] of Object.entries(detail.leaves)) if (n) this.leaves.inc({ tree }, n);
        this.nodesWritten.inc(detail.nodesWritten);
      },
      onRefused: (_batchId: number, err: DacdError) => {
        this.batchesRefused.inc({ reason: err.code });
        if (err.code === "ROOT_MISMATCH") this.rootMismatches.inc();
      },
    };
  }

  /** `onResult` of the gateway clients. */
  onResult = (endpoint: string, outcome: RequestOutcome): void => {
    this.gatewayRequests.inc({ endpoint, outcome: outcome.kind });
    this.gatewayRequestSeconds.observe({ endpoint }, outcome.durationMs / 1000);
  };

  /** `observe` of the escape API: one finished request. */
  onEscapeApiRequest = (route: string, status: number, seconds: number): void => {
    this.escapeApiRequests.inc({ route, status: String(status) });
    this.escapeApiRequestSeconds.observe({ route }, seconds);
  };

  /** `observeRefused` of the escape API: one connection closed as it was accepted. */
  onEscapeApiConnectionRefused = (reason: string): void => {
    this.escapeApiConnectionsRefused.inc({ reason });
  };

  /** `onRetry` of the gateway clients. */
  onRetry = (endpoint: string): void => {
    this.gatewayRetries.inc({ endpoint });
  };

  /** The engine, counting every pair it hashes. */
  countingEngine(engine: HashEngine): HashEngine {
    const hashes = this.hashes;
    const wrapped: HashEngine = {
      name: engine.name,
      hashMany(xs, ys) {
        hashes.inc(xs.length / 32);
        return engine.hashMany(xs, ys);
      },
      hashConst(vs, c, constantIsY) {
        hashes.inc(vs.length / 32);
        return hashWithConstant(engine, vs, c, constantIsY);
      },
      climbChains(job) {
        hashes.inc(chainHashes(job));
        return climbChains(engine, job);
      },
    };
    if (engine.close) wrapped.close = () => engine.close!();
    return wrapped;
  }

  /** Prometheus text exposition. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private refreshDisk(): Promise<void> {
    const dir = this.opts.dataDir;
    if (!dir) return Promise.resolve();
    const every = this.opts.diskRefreshMs ?? 30_000;
    if (this.disk && Date.now() - this.disk.at < every) return Promise.resolve();
    this.diskRefresh ??= (async () => {
      const [size, fs] = await Promise.all([
        directorySize(dir).catch(() => undefined),
        statfs(dir).catch(() => undefined),
      ]);
      this.disk = {
        at: Date.now(),
        size,
        free: fs ? fs.bavail * fs.bsize : undefined,
        total: fs ? fs.blocks * fs.bsize : undefined,
      };
    })().finally(() => (this.diskRefresh = undefined));
    return this.diskRefresh;
  }
}

/**
 * Bytes allocated to the regular files directly in `dir` (like `du -s` of a flat directory; a
 * LevelDB store is flat). Subdirectories (a backup_dir placed inside data_dir) are not counted.
 */
export async function directorySize(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (!e.isFile()) continue;
    const st = await stat(join(dir, e.name)).catch(() => undefined);
    if (st) total += st.blocks > 0 ? st.blocks * 512 : st.size;
  }
  return total;
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
