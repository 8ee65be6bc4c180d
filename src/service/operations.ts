/**
 * Everything `dacd run` does besides signing: the metrics/health listener, the scheduled jobs and
 * the systemd notifications, started after the member and stopped before the store is closed.
 */
import type { Config } from "../config/config.js";
import { DacdError } from "../errors.js";
import type { Logger } from "../logging.js";
import type { Member } from "../poller/member/member.js";
import type { LevelStore } from "../storage/level-store.js";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { claimsJournalPathOf } from "../storage/member-journal.js";
import { backupStore, listBackups } from "./backup.js";
import { checkJob } from "../maintenance/records-check.js";
import { batchLag, liveness, readiness, type ReadyLimits } from "./health.js";
import { startOpsServer, type OpsListener, type OpsServer } from "./http-server.js";
import { JobRunner } from "./jobs.js";
import type { DacdMetrics, MetricsState } from "./metrics.js";
import { createSystemdNotifier, type SystemdNotifier } from "./systemd.js";

/** Job implementations that live elsewhere (src/escape); a job without one falls back or refuses. */
export interface JobImplementations {
  /** Deep integrity check; default: the light consistency check of check.ts. */
  check?: (store: LevelStore, signal: AbortSignal) => Promise<Record<string, unknown> | void>;
  /** Removes state older than the newest `keepBatches` batches; without it `schedule.prune` is refused. */
  prune?: (
    store: LevelStore,
    keepBatches: number,
    signal: AbortSignal,
  ) => Promise<Record<string, unknown> | void>;
}

export interface OperationsDeps {
  config: Config;
  log: Logger;
  store: LevelStore;
  member: Member;
  metrics: DacdMetrics;
  jobs?: JobImplementations;
  env?: NodeJS.ProcessEnv;
  /** metrics_port bound already (by startDaemon, before the member started); else bound here. */
  listener?: OpsListener;
}

export interface Operations {
  /** The metrics/health listener, when metrics_port is set. */
  readonly server: OpsServer | undefined;
  readonly jobs: JobRunner | undefined;
  readonly notifier: SystemdNotifier;
  stop(): Promise<void>;
}

/** Refuses (CONFIG) schedules that cannot run, before anything is started. */
export function validateSchedules(config: Config, jobs: JobImplementations = {}): void {
  if (config.schedule.backup && !config.backupDir)
    throw new DacdError("CONFIG", "schedule.backup is set but backup_dir is not");
  if (config.backupDir && config.backupDir === config.dataDir)
    throw new DacdError("CONFIG", "backup_dir must not be the data_dir itself");
  if (config.schedule.prune && config.pruneKeepBatches === undefined)
    throw new DacdError("CONFIG", "schedule.prune is set but prune_keep_batches is not");
  if (config.schedule.prune && !jobs.prune)
    throw new DacdError("CONFIG", "schedule.prune is set but this build of dacd has no pruning");
}

/** The metrics' view of the member, with what the store knew at start-up as the fallback. */
export function memberMetricsState(
  member: Member,
  limits: ReadyLimits,
  initial: { lastSignedBatchId?: number; lastSignedAtMs?: number },
): () => MetricsState {
  return () => {
    const s = member.state;
    const last = s.lastSigned;
    return {
      lastSignedBatchId: last?.batch_id ?? initial.lastSignedBatchId,
      lastSignedAtMs: last ? Date.parse(last.signed_at) : initial.lastSignedAtMs,
      feederLastBatchId: s.feederLastBatchId,
      lag: batchLag(s),
      ready: readiness(s, limits).ok,
      gatewayReachable: s.gatewayReachable && s.failing?.code !== "GATEWAY",
    };
  };
}

export async function startOperations(deps: OperationsDeps): Promise<Operations> {
  const { config, log, store, member, metrics } = deps;
  const impl = deps.jobs ?? {};
  validateSchedules(config, impl);

  let server: OpsServer | undefined;
  if (config.metricsPort !== undefined || deps.listener) {
    const handlers = {
      metrics,
      healthz: () => liveness(store),
      readyz: () => readiness(member.state, config),
    };
    if (deps.listener) deps.listener.attach(handlers);
    server =
      deps.listener ??
      (await startOpsServer({ host: config.metricsHost, port: config.metricsPort!, ...handlers }));
    log.info({ url: server.url }, "metrics and health endpoints listening (/metrics, /healthz, /readyz)");
  }

  let jobs: JobRunner | undefined;
  const { check, backup, prune } = config.schedule;
  try {
    if (check || backup || prune) jobs = scheduleJobs(deps, impl);
    // The newest backup on disk is the last success, so that the staleness alert survives restarts.
    if (backup) {
      const newest = (await listBackups(config.backupDir!)).at(-1);
      const at = newest
        ? (await stat(join(config.backupDir!, newest)).catch(() => undefined))?.mtimeMs
        : undefined;
      if (at !== undefined) metrics.jobs.lastSuccess.set({ task: "backup" }, at / 1000);
    }
  } catch (err) {
    await jobs?.stop();
    await server?.close();
    throw err;
  }

  const notifier = await createSystemdNotifier({
    log,
    env: deps.env,
    healthy: async () => (await liveness(store)).ok && member.state.phase !== "stopped",
  });
  if (notifier.enabled) await notifier.ready("signing");

  let stopping: Promise<void> | undefined;
  return {
    server,
    jobs,
    notifier,
    stop: () =>
      (stopping ??= (async () => {
        await notifier.stopping();
        notifier.close();
        await jobs?.stop();
        await server?.close();
      })()),
  };
}

function scheduleJobs(deps: OperationsDeps, impl: JobImplementations): JobRunner {
  const { config, log, store, metrics } = deps;
  const { check, backup, prune } = config.schedule;
  const jobs = new JobRunner(log, metrics);
  if (check) {
    const run = impl.check ?? ((s: LevelStore, signal: AbortSignal) => checkJob(s, signal));
    jobs.add({ name: "check", schedule: check, run: (signal) => run(store, signal) });
  }
  if (backup) {
    const dir = config.backupDir!;
    jobs.add({
      name: "backup",
      schedule: backup,
      run: async (signal) => {
        const r = await backupStore(store, dir, {
          keep: config.backupKeep,
          signal,
          claimsJournalPath: claimsJournalPathOf(config),
        });
        return { path: r.path, entries: r.entries, bytes: r.bytes, removed: r.removed.length };
      },
    });
  }
  if (prune && impl.prune) {
    const keep = config.pruneKeepBatches!;
    const run = impl.prune;
    jobs.add({ name: "prune", schedule: prune, run: (signal) => run(store, keep, signal) });
  }
  jobs.start();
  return jobs;
}
