/** The scheduled jobs (jobs.ts): runs by outcome, durations, last success, which are scheduled. */
import { Counter, Gauge, Histogram } from "prom-client";
import { PREFIX, type Registers } from "./family.js";

/** Outcomes of a scheduled job run (jobs.ts). */
export const JOB_OUTCOMES = ["ok", "failed", "skipped", "aborted"] as const;

export function jobMetrics(registers: Registers) {
  return {
    runs: new Counter({
      name: `${PREFIX}job_runs_total`,
      help: "Scheduled job runs by job and outcome (ok, failed, skipped: the previous run was still going)",
      labelNames: ["task", "outcome"],
      registers,
    }),
    seconds: new Histogram({
      name: `${PREFIX}job_duration_seconds`,
      help: "Duration of scheduled jobs",
      labelNames: ["task"],
      buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600],
      registers,
    }),
    lastSuccess: new Gauge({
      name: `${PREFIX}job_last_success_timestamp_seconds`,
      help: "Unix time of the last successful run of each scheduled job",
      labelNames: ["task"],
      registers,
    }),
    scheduled: new Gauge({
      name: `${PREFIX}job_scheduled`,
      help: "1 for each scheduled job (schedule.<task> is set)",
      labelNames: ["task"],
      registers,
    }),
  };
}

export type JobMetrics = ReturnType<typeof jobMetrics>;
