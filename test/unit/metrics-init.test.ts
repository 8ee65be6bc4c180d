import { createLogger } from "../../src/logging.js";
import { describe, expect, it } from "vitest";
import { buildInfo } from "../../src/build-info.js";
import { JobRunner } from "../../src/service/jobs.js";
import { DacdMetrics } from "../../src/service/metrics.js";

/** The value of one series in the exposition text, or undefined when it is not exported. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(series + " "));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("metrics that alerts can use from the first event", () => {
  it("gateway counters exist at 0 for every endpoint the run loop calls and every outcome", async () => {
    const m = new DacdMetrics({ processDefaults: false });
    const text = (await m.render()).body;
    for (const endpoint of ["get_batch_data", "approve_new_roots", "get_last_batch_id"]) {
      for (const outcome of ["ok", "http_status", "transport", "bad_response", "aborted"])
        expect(sample(text, `dacd_gateway_requests_total{endpoint="${endpoint}",outcome="${outcome}"}`)).toBe(
          0,
        );
      expect(sample(text, `dacd_gateway_retries_total{endpoint="${endpoint}"}`)).toBe(0);
    }
    expect(sample(text, 'dacd_batches_refused_total{reason="ROOT_MISMATCH"}')).toBe(0);
    expect(sample(text, "dacd_root_mismatch_total")).toBe(0);
    m.onResult("get_batch_data", { kind: "transport", attempts: 3, durationMs: 10 });
    expect(
      sample(
        (await m.render()).body,
        'dacd_gateway_requests_total{endpoint="get_batch_data",outcome="transport"}',
      ),
    ).toBe(1);
  });

  it("a scheduled job's run counters start at 0 for every outcome, and dacd_job_scheduled is 1", async () => {
    const m = new DacdMetrics({ processDefaults: false });
    const before = (await m.render()).body;
    expect(sample(before, 'dacd_job_runs_total{task="backup",outcome="failed"}')).toBeUndefined();
    const jobs = new JobRunner(createLogger({ level: "silent" }), m);
    jobs.add({ name: "backup", schedule: "0 3 * * *", run: async () => undefined });
    const text = (await m.render()).body;
    for (const outcome of ["ok", "failed", "skipped", "aborted"])
      expect(sample(text, `dacd_job_runs_total{task="backup",outcome="${outcome}"}`)).toBe(0);
    expect(sample(text, 'dacd_job_scheduled{task="backup"}')).toBe(1);
    // No success yet: no last-success time (the staleness alert covers "never" with dacd_job_scheduled).
    expect(text).not.toMatch(/dacd_job_last_success_timestamp_seconds\{task="backup"\}/);
    await jobs.stop();
  });

  it("dacd_build_info names the version, the commit and the Node.js version", async () => {
    const m = new DacdMetrics({ processDefaults: false });
    const b = buildInfo();
    const text = (await m.render()).body;
    expect(
      sample(text, `dacd_build_info{version="${b.version}",commit="${b.commit}",node="${process.version}"}`),
    ).toBe(1);
    expect(b.version).toMatch(/^\d+\.\d+\.\d+/);
  });
});
