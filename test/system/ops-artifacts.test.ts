import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { DacdMetrics, exportedMetricNames } from "../../src/service/metrics.js";
import { toolAvailable } from "../helpers/tool-required.js";

const ROOT = join(import.meta.dirname, "..", "..");

const KEYWORDS = new Set([
  "and",
  "or",
  "unless",
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "offset",
  "bool",
  "inf",
  "nan",
]);

/**
 * The metric names a PromQL expression selects: identifiers that are not functions, keywords,
 * label names (in matchers or grouping clauses), strings, durations or numbers.
 */
export function metricNamesIn(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""') // strings
    .replace(/\{[^}]*\}/g, " ") // label matchers
    .replace(/\[[^\]]*\]/g, " ") // range and subquery durations (also $__rate_interval)
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ") // grouping labels
    .replace(/\boffset\s+\S+/g, " ")
    .replace(/\$\w+/g, " "); // dashboard variables
  const names: string[] = [];
  for (const m of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*(?=\s*(\()?)/g)) {
    const [word, call] = [m[0], m[1]];
    if (call) continue; // a function
    if (KEYWORDS.has(word.toLowerCase())) continue;
    if (/^\d/.test(word)) continue;
    names.push(word);
  }
  return names;
}

describe("metric name extraction", () => {
  it("finds only the selected metrics", () => {
    expect(
      metricNamesIn(
        'sum by (le, instance) (rate(a_bucket{x=~"$i", y="by (z)"}[$__rate_interval])) / on(instance) b > 2 * 3600 and c offset 5m',
      ),
    ).toEqual(["a_bucket", "b", "c"]);
  });
});

describe("shipped monitoring artifacts", async () => {
  const exported = await exportedMetricNames(
    new DacdMetrics({ info: { member_key: "0x0", chain: "ethereum" } }),
  );

  it("the own registry exports the names the issue asks for, all prefixed dacd_", () => {
    for (const name of [
      "dacd_last_signed_batch_id",
      "dacd_feeder_last_batch_id",
      "dacd_batch_lag",
      "dacd_batch_verify_seconds",
      "dacd_batch_verify_seconds_bucket",
      "dacd_root_mismatch_total",
      "dacd_gateway_requests_total",
      "dacd_seconds_since_last_signature",
      "dacd_hashes_total",
      "dacd_gateway_retries_total",
      "dacd_batches_refused_total",
      "dacd_store_size_bytes",
      "dacd_process_cpu_seconds_total",
    ]) {
      expect(exported, name).toContain(name);
    }
    for (const name of exported) expect(name).toMatch(/^dacd_/);
  });

  it("ops/prometheus/dacd-alerts.yml parses and names only metrics dacd exports", () => {
    const doc = parse(readFileSync(join(ROOT, "ops/prometheus/dacd-alerts.yml"), "utf8")) as {
      groups: { name: string; rules: { alert?: string; expr: unknown; labels?: Record<string, string> }[] }[];
    };
    const rules = doc.groups.flatMap((g) => g.rules);
    const alerts = rules.map((r) => r.alert);
    for (const a of [
      "DacdDown",
      "DacdBackupStale",
      "DacdBatchLagGrowing",
      "DacdNoRecentSignature",
      "DacdRootMismatch",
      "DacdGatewayFailing",
      "DacdDiskFilling",
    ]) {
      expect(alerts).toContain(a);
    }
    for (const rule of rules) {
      expect(typeof rule.expr, String(rule.alert)).toBe("string");
      const names = metricNamesIn(rule.expr as string);
      expect(names.length, String(rule.alert)).toBeGreaterThan(0);
      // `up` is Prometheus's own series for each scrape target.
      for (const n of names) if (n !== "up") expect(exported, `${rule.alert}: ${n}`).toContain(n);
      expect(rule.labels?.severity, String(rule.alert)).toMatch(/^(critical|warning|info)$/);
    }
  });

  it("ops/grafana/dacd-dashboard.json is JSON whose targets name only metrics dacd exports", () => {
    const dash = JSON.parse(readFileSync(join(ROOT, "ops/grafana/dacd-dashboard.json"), "utf8")) as {
      panels: { title: string; targets?: { expr: string }[] }[];
      templating: { list: { query?: unknown }[] };
    };
    let targets = 0;
    for (const panel of dash.panels) {
      for (const t of panel.targets ?? []) {
        targets++;
        const names = metricNamesIn(t.expr);
        expect(names.length, panel.title).toBeGreaterThan(0);
        for (const n of names) expect(exported, `${panel.title}: ${n}`).toContain(n);
      }
    }
    expect(targets).toBeGreaterThan(10);
    for (const v of dash.templating.list) {
      const q = typeof v.query === "object" && v.query ? (v.query as { query: string }).query : v.query;
      for (const n of String(q).match(/dacd_\w+/g) ?? []) expect(exported).toContain(n);
    }
  });
  it("every alert has a promtool unit test (ops/prometheus/dacd-alerts.test.yml) that fires it and one that does not", () => {
    const rules = (
      parse(readFileSync(join(ROOT, "ops/prometheus/dacd-alerts.yml"), "utf8")) as {
        groups: { rules: { alert?: string }[] }[];
      }
    ).groups.flatMap((g) => g.rules.map((r) => r.alert));
    const tests = parse(readFileSync(join(ROOT, "ops/prometheus/dacd-alerts.test.yml"), "utf8")) as {
      rule_files: string[];
      tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
    };
    expect(tests.rule_files).toEqual(["dacd-alerts.yml"]);
    const cases = tests.tests.flatMap((t) => t.alert_rule_test);
    for (const alert of rules) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect(
        mine.some((c) => c.exp_alerts.length > 0),
        `${alert} fires in a test`,
      ).toBe(true);
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${alert} stays quiet in a test`,
      ).toBe(true);
    }
  });

  const havePromtool = toolAvailable(
    "promtool (apt-get install prometheus)",
    spawnSync("promtool", ["--version"], { encoding: "utf8" }).status === 0,
  );
  it.skipIf(!havePromtool)(
    "promtool test rules passes (where promtool is installed)",
    () => {
      const r = spawnSync("promtool", ["test", "rules", "dacd-alerts.test.yml"], {
        cwd: join(ROOT, "ops/prometheus"),
        encoding: "utf8",
        timeout: 120_000,
      });
      expect(r.status, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toMatch(/SUCCESS/);
    },
    150_000,
  );

  it("the dashboard's ready and lag panels have thresholds", () => {
    const dash = JSON.parse(readFileSync(join(ROOT, "ops/grafana/dacd-dashboard.json"), "utf8")) as {
      panels: {
        title: string;
        fieldConfig?: {
          defaults?: { thresholds?: { mode: string; steps: { color: string; value: number | null }[] } };
        };
      }[];
    };
    const steps = (title: string) =>
      dash.panels.find((p) => p.title === title)?.fieldConfig?.defaults?.thresholds?.steps;
    // Ready: 0 is red, 1 green.
    expect(steps("Ready")).toEqual([
      { color: "red", value: null },
      { color: "green", value: 1 },
    ]);
    // Lag: green while caught up, amber from 1 batch behind, red beyond max_ready_lag (default 5).
    for (const title of ["Batch lag", "Lag over time"]) {
      expect(steps(title), title).toEqual([
        { color: "green", value: null },
        { color: "orange", value: 1 },
        { color: "red", value: 6 },
      ]);
    }
  });
});
