import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { FIXTURES, loadChain } from "../helpers/vectors.js";

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");

/** Environment without any DACD_* the test runner may carry. */
function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("DACD_") && v !== undefined) env[k] = v;
  return { ...env, DACD_HASH_ENGINE: "wasm", ...extra };
}

function dacd(
  args: string[],
  env: Record<string, string> = {},
): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: "utf8",
    env: cleanEnv(env),
    timeout: 120_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** One line on stderr, `dacd: …`, no stack trace, and the exit status. */
function oneLine(r: { code: number | null; err: string }, code: number, pattern: RegExp): void {
  expect(r.code, r.err).toBe(code);
  expect(r.err.trim().split("\n"), r.err).toHaveLength(1);
  expect(r.err).toMatch(/^dacd: /);
  expect(r.err).toMatch(pattern);
  expect(r.err).not.toMatch(/\n\s+at /);
}

let dir: string;
let db: string;
let configPath: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "dacd-cli-conv-"));
  db = join(dir, "db");
  const { expected } = loadChain("spot-chain");
  await writeFile(join(dir, "member.key"), expected.private_key + "\n");
  await chmod(join(dir, "member.key"), 0o600);
  const replay = dacd([
    "replay",
    "--profile",
    "spot",
    "--key-file",
    join(dir, "member.key"),
    "--input",
    join(FIXTURES, "spot-chain", "responses.json"),
    "--db",
    db,
  ]);
  expect(replay.code, replay.err).toBe(0);
  configPath = join(dir, "dacd.yaml");
  await writeFile(
    configPath,
    [
      "profile: spot",
      'availability_gateway_url: "https://gateway.example.com/base"',
      "private_key_path: member.key",
      "data_dir: db",
      "validate_rollup: true",
      "metrics_port: 9464",
      "",
    ].join("\n"),
  );
}, 180_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("dacd command-line conventions", () => {
  it("--version prints the version, the commit and the Node.js version", () => {
    const r = dacd(["--version"]);
    expect(r.code).toBe(0);
    const m = /^dacd (\d+\.\d+\.\d+\S*) \(commit ([0-9a-f]{12}|unknown), node (v\d+\.\d+\.\d+)\)\n$/.exec(
      r.out,
    );
    expect(m, r.out).not.toBeNull();
    expect(m![3]).toBe(process.version);
    // Built from this checkout: the commit is known (dist/build-info.json or git).
    expect(m![2]).not.toBe("unknown");
  }, 180_000);

  it("usage errors are one line and exit 64, with no stack trace", () => {
    oneLine(dacd(["demo", "--variant", "X"]), 64, /--variant must be P or G/);
    oneLine(dacd(["demo", "--traffic", "-3"]), 64, /--traffic must be a positive number/);
    oneLine(dacd(["devnet", "--variant", "Q"]), 64, /--variant must be P or G/);
    oneLine(dacd(["devnet", "--variant", "G", "--expected", "x.json"]), 64, /--expected needs --replay/);
    oneLine(
      dacd([
        "replay",
        "--engine",
        "fast",
        "--profile",
        "spot",
        "--key-file",
        "k",
        "--input",
        "i",
        "--db",
        db,
      ]),
      64,
      /--engine.*fast.*invalid/,
    );
    oneLine(
      dacd(["replay", "--profile", "spotty", "--key-file", "k", "--input", "i", "--db", db]),
      64,
      /--profile must be/,
    );
    oneLine(dacd(["run", "--log-level", "loud"]), 64, /--log-level.*loud/);
    oneLine(dacd(["run", "--log-format", "xml"]), 64, /--log-format.*xml/);
    oneLine(dacd(["stats"]), 64, /unknown command 'stats'/);
    oneLine(dacd(["show", "batch", "x1", "--db", db]), 64, /batch id "x1"/);
    oneLine(
      dacd(["prune", "--db", db, "--keep-batches", "0"]),
      64,
      /--keep-batches must be a positive integer/,
    );
  }, 180_000);

  it("an invalid or unknown DACD_* variable is an error (exit 78), not ignored", () => {
    oneLine(dacd(["status", "--db", db], { DACD_TREE_WALK: "fastest" }), 78, /DACD_TREE_WALK="fastest"/);
    oneLine(dacd(["status", "--db", db], { DACD_HASH_ENGINE: "gpu" }), 78, /DACD_HASH_ENGINE="gpu"/);
    oneLine(
      dacd(["status", "--db", db], { DACD_POLLING_INTERVAL: "3" }),
      78,
      /DACD_POLLING_INTERVAL is not a dacd setting/,
    );
    oneLine(
      dacd(["config", "check", "--config", configPath, "--no-key"], { DACD_POLLING_INTERVAL_S: "soon" }),
      78,
      /DACD_POLLING_INTERVAL_S must be a number/,
    );
    // A valid switch is accepted.
    expect(dacd(["status", "--db", db, "--json"], { DACD_TREE_WALK: "js" }).code).toBe(0);
  }, 180_000);

  it("config check validates, prints the effective configuration, refuses credentials in a URL without printing them, exit 0 or 78", async () => {
    const ok = dacd(["config", "check", "--config", configPath]);
    expect(ok.code, ok.err).toBe(0);
    const effective = parse(ok.out) as Record<string, unknown>;
    expect(effective).toMatchObject({
      profile: "spot",
      data_dir: db,
      private_key_path: join(dir, "member.key"),
      polling_interval_s: 5, // a default
      metrics_port: 9464,
      log_format: "json",
      heights: { vault: 31, order: 251, rollup_vault: 31 },
    });
    expect(effective.availability_gateway_url).toBe("https://gateway.example.com/base");
    // Credentials in a gateway URL would never be sent: refused, and never echoed.
    const withCredentials = join(dir, "credentials.yaml");
    await writeFile(
      withCredentials,
      (await import("node:fs"))
        .readFileSync(configPath, "utf8")
        .replace("https://gateway.example.com", "https://member:hunter2@gateway.example.com"),
    );
    const refused = dacd(["config", "check", "--config", withCredentials]);
    oneLine(refused, 78, /availability_gateway_url .*must not carry credentials/);
    expect(refused.out + refused.err).not.toMatch(/hunter2|member:/);
    const json = dacd(["config", "check", "--config", configPath, "--json"], { DACD_MAX_READY_LAG: "9" });
    expect(JSON.parse(json.out)).toMatchObject({ max_ready_lag: 9, validate_rollup: true });

    const bad = join(dir, "bad.yaml");
    await writeFile(bad, "profile: spot\npolling_interval_s: -1\nmystery: 1\n");
    oneLine(dacd(["config", "check", "--config", bad]), 78, /mystery.*; .*polling_interval_s/);
    // The key must load (as dacd run would need it), unless --no-key.
    const noKey = join(dir, "nokey.yaml");
    await writeFile(
      noKey,
      (await import("node:fs")).readFileSync(configPath, "utf8").replace("member.key", "absent.key"),
    );
    oneLine(dacd(["config", "check", "--config", noKey]), 78, /absent\.key/);
    expect(dacd(["config", "check", "--config", noKey, "--no-key"]).code).toBe(0);
  }, 180_000);

  it("finds the configuration through DACD_CONFIG, else /etc/dacd/dacd.yaml", () => {
    const viaEnv = dacd(["config", "check", "--json"], { DACD_CONFIG: configPath });
    expect(viaEnv.code, viaEnv.err).toBe(0);
    expect(JSON.parse(viaEnv.out)).toMatchObject({ data_dir: db });
    const status = dacd(["status", "--json"], { DACD_CONFIG: configPath });
    expect(status.code, status.err).toBe(0);
    expect(JSON.parse(status.out)).toMatchObject({ profile: "spot" });
    if (!existsSync("/etc/dacd/dacd.yaml")) {
      oneLine(dacd(["config", "check"]), 78, /\/etc\/dacd\/dacd\.yaml.*--config FILE or DACD_CONFIG/);
    }
  }, 180_000);

  it("read-only commands never create a store: status, show, check, proof, dump on a missing one fail (exit 2)", () => {
    const missing = join(dir, "no-such-store");
    for (const args of [
      ["status", "--db", missing],
      ["show", "batch", "1", "--db", missing],
      ["check", "--db", missing],
      ["proof", "vault", "1", "--db", missing],
      ["dump", "--db", missing, "--out", join(dir, "dump-out")],
    ]) {
      oneLine(dacd(args), 2, /the store .*no-such-store does not exist/);
      expect(existsSync(missing), args.join(" ")).toBe(false);
    }
    // A directory that is not a store is refused, and left as it was.
    oneLine(dacd(["status", "--db", dir]), 2, /is not a dacd store/);
    expect(existsSync(join(dir, "CURRENT"))).toBe(false);
  }, 180_000);

  it("status and check: JSON (snake_case) with --json, a summary with --no-json; check exits 0/1/2", async () => {
    const json = dacd(["status", "--db", db, "--json"]);
    expect(json.code).toBe(0);
    const s = JSON.parse(json.out) as Record<string, unknown>;
    expect(s).toMatchObject({ profile: "spot", cursor: null, pending_batch: { batch_id: 5 } });
    expect(JSON.stringify(s)).not.toMatch(/"[a-z]+[A-Z]\w*":/);

    const human = dacd(["status", "--db", db, "--no-json"]);
    expect(human.code).toBe(0);
    expect(human.out).toMatch(/^profile\s+spot$/m);
    expect(human.out).toMatch(/^daemon\s+not running \(store read directly\)$/m);
    expect(human.out).toMatch(/^pending\s+batch 5 verified/m);
    expect(() => JSON.parse(human.out)).toThrow();

    const check = dacd(["check", "--db", db, "--no-json"]);
    expect(check.code).toBe(0);
    expect(check.out).toMatch(/^consistent: profile spot, batches 0-5 \(6 records\)$/m);
    const checkJson = dacd(["check", "--db", db, "--json"]);
    expect(JSON.parse(checkJson.out)).toMatchObject({
      ok: true,
      batches: 6,
      skipped: { count: 0, ranges: "" },
      problem_count: 0,
    });
  }, 180_000);
});
