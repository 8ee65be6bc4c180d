/**
 * Scheduled maintenance jobs (integrity check, backup, pruning) on node-cron schedules.
 *
 * - A job never overlaps itself: a tick while the previous run of the same job is still going (or
 *   waiting) is skipped and logged.
 * - Jobs never run concurrently with each other either: they queue on one chain, so a backup never
 *   copies a store a pruning run is rewriting and two scans do not compete for the disk.
 * - Jobs never block signing: they are asynchronous and do their work in chunks that yield to the
 *   event loop (see check.ts and backup.ts); they read LevelDB snapshots, not locks.
 * - Each outcome is one log line (job, outcome, duration, result fields); `stop()` unschedules all
 *   jobs, aborts the one running and waits for it.
 */
import { createTask, type ScheduledTask } from "node-cron";
import type { Logger } from "../logging.js";
import type { DacdMetrics } from "./metrics.js";

export interface JobSpec {
  /** check | backup | prune, or any name (used in logs and metric labels). */
  readonly name: string;
  /** node-cron expression; six fields means seconds first (`*\/10 * * * * *`). */
  readonly schedule: string;
  /** The work; returns fields for the outcome log line. Should honour `signal` between chunks. */
  run(signal: AbortSignal): Promise<Record<string, unknown> | void>;
}

interface JobState {
  spec: JobSpec;
  task: ScheduledTask;
  busy: boolean;
}

export class JobRunner {
  private readonly jobs = new Map<string, JobState>();
  private readonly abort = new AbortController();
  private chain: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly log: Logger,
    private readonly metrics?: DacdMetrics,
  ) {}

  /** Schedules a job (started by `start()`). */
  add(spec: JobSpec): void {
    if (this.jobs.has(spec.name)) throw new Error(`job ${spec.name} is already scheduled`);
    const task = createTask(spec.schedule, () => this.trigger(spec.name), { name: `dacd-${spec.name}` });
    this.jobs.set(spec.name, { spec, task, busy: false });
    this.metrics?.jobAdded(spec.name);
  }

  get names(): string[] {
    return [...this.jobs.keys()];
  }

  start(): void {
    for (const job of this.jobs.values()) {
      void job.task.start();
      this.log.info({ job: job.spec.name, schedule: job.spec.schedule }, `scheduled job ${job.spec.name}`);
    }
  }

  /**
   * Runs a job now (as a tick would) and resolves when this run is over; resolves to false when
   * the run was skipped because the job was still busy or the runner stopped.
   */
  trigger(name: string): Promise<boolean> {
    const job = this.jobs.get(name);
    if (!job || this.stopped) return Promise.resolve(false);
    if (job.busy) {
      this.metrics?.jobs.runs.inc({ task: name, outcome: "skipped" });
      this.log.warn(
        { job: name, outcome: "skipped" },
        `job ${name} skipped: its previous run (or one queued before it) is still going`,
      );
      return Promise.resolve(false);
    }
    job.busy = true;
    const run = this.chain.then(() => this.execute(job));
    this.chain = run.then(
      () => undefined,
      () => undefined,
    );
    return run.finally(() => (job.busy = false));
  }

  private async execute(job: JobState): Promise<boolean> {
    const name = job.spec.name;
    if (this.abort.signal.aborted) return false;
    const started = performance.now();
    this.log.debug({ job: name }, `job ${name} started`);
    try {
      const result = (await job.spec.run(this.abort.signal)) ?? {};
      const seconds = (performance.now() - started) / 1000;
      this.metrics?.jobs.runs.inc({ task: name, outcome: "ok" });
      this.metrics?.jobs.seconds.observe({ task: name }, seconds);
      this.metrics?.jobs.lastSuccess.set({ task: name }, Date.now() / 1000);
      this.log.info(
        { job: name, outcome: "ok", duration_ms: Math.round(seconds * 1000), ...result },
        `job ${name} done`,
      );
      return true;
    } catch (err) {
      const seconds = (performance.now() - started) / 1000;
      const aborted = this.abort.signal.aborted;
      this.metrics?.jobs.runs.inc({ task: name, outcome: aborted ? "aborted" : "failed" });
      this.metrics?.jobs.seconds.observe({ task: name }, seconds);
      const message = err instanceof Error ? err.message : String(err);
      if (aborted) this.log.info({ job: name, outcome: "aborted" }, `job ${name} aborted by shutdown`);
      else
        this.log.error(
          { job: name, outcome: "failed", duration_ms: Math.round(seconds * 1000), error: message },
          `job ${name} failed: ${message}`,
        );
      return false;
    }
  }

  /** Unschedules every job, aborts the running one and waits until it has returned. */
  async stop(): Promise<void> {
    if (this.stopped) return this.chain;
    this.stopped = true;
    this.abort.abort(new Error("shutting down"));
    await Promise.allSettled([...this.jobs.values()].map((j) => j.task.destroy()));
    await this.chain;
  }
}
