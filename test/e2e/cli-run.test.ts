import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmod, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { memberSetup, waitFor } from "../helpers/daemon.js";
import { VectorGateway } from "../helpers/vector-gateway.js";
import { loadChain } from "../helpers/vectors.js";

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Runs `dacd …` to completion (async, so the in-process gateway keeps answering). */
function dacd(
  args: string[],
  timeoutMs = 30_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args]);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function setup(opts: { feeder?: boolean } = {}) {
  const { responses, expected } = loadChain("spot-chain");
  const gw = await new VectorGateway(responses, expected, "G").start();
  cleanups.push(() => gw.close());
  const s = await memberSetup({
    profile: "spot",
    privateKey: expected.private_key,
    gatewayUrl: gw.url,
    feeder: opts.feeder ?? true,
  });
  cleanups.push(() => rm(s.dir, { recursive: true, force: true }));
  return { gw, expected, ...s };
}

function start(configPath: string): { child: ChildProcess; out: () => string } {
  const child = spawn(process.execPath, [BIN, "run", "--config", configPath]);
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
    }
  });
  return { child, out: () => out };
}

const exitOf = (child: ChildProcess): Promise<number | null> =>
  new Promise((r) => (child.exitCode !== null ? r(child.exitCode) : child.once("exit", (code) => r(code))));

describe("dacd run as a service", () => {
  it("logs one JSON line per batch, answers status and show while running, stops cleanly on SIGTERM", async () => {
    const { gw, expected, configPath, config } = await setup();
    const { child, out } = start(configPath);
    await waitFor(() => gw.accepted.length === expected.batches.length, 30_000, "all signed");
    await waitFor(() => out().includes('"batch_id":5') && out().includes("batch signed"), 10_000, "log line");

    const lines = out()
      .split("\n")
      .filter((l) => l.includes('"msg":"batch signed"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.batch_id)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(lines[3]).toMatchObject({
      sequence_number: expected.batches[3]!.seq,
      roots: expected.batches[3]!.roots,
      outcome: "signed",
    });
    expect(typeof lines[3]!.verify_ms).toBe("number");
    expect(out()).not.toContain(expected.private_key.slice(2));

    const status = await dacd(["status", "--config", configPath]);
    expect(status.code).toBe(0);
    const s = JSON.parse(status.stdout) as {
      profile: string;
      cursor: unknown;
      last_signed_batch: unknown;
      runtime: { phase: string };
    };
    expect(s.profile).toBe("spot");
    expect(s.cursor).toMatchObject({ next_batch_id: 6, last_accepted_batch_id: 5 });
    expect(s.last_signed_batch).toMatchObject({
      batch_id: 5,
      sequence_number: expected.batches[5]!.seq,
      roots: expected.batches[5]!.roots,
    });
    expect(s.runtime.phase).toBe("idle");

    const batch = await dacd(["show", "batch", "3", "--config", configPath]);
    expect(JSON.parse(batch.stdout)).toMatchObject({
      batch_id: 3,
      prev_batch_id: 1,
      claim_hash: expected.batches[3]!.claim_hash,
    });
    const vaultId = Object.keys(
      (loadChain("spot-chain").responses[0]!.update as { vaults: object }).vaults,
    )[0]!;
    const leaf = await dacd(["show", "leaf", "vault", vaultId, "--batch", "0", "--config", configPath]);
    expect(leaf.code).toBe(0);
    expect(JSON.parse(leaf.stdout)).toMatchObject({ batch_id: 0, tree: "vault", id: vaultId, empty: false });

    // A second instance on the same data_dir refuses to start, with one clear line.
    const second = await dacd(["run", "--config", configPath]);
    expect(second.code).not.toBe(0);
    expect(second.stderr.trim().split("\n")).toHaveLength(1);
    expect(second.stderr).toMatch(/in use by another dacd process/);

    child.kill("SIGTERM");
    expect(await exitOf(child)).toBe(0);
    expect(out()).toContain("dacd stopped");

    // With the daemon gone, status and show read the store directly.
    const after = await dacd(["show", "batch", "5", "--db", config.dataDir]);
    expect(JSON.parse(after.stdout)).toMatchObject({ batch_id: 5, accepted_at: expect.any(String) });
  });

  it("refuses to start with one clear line: missing key, world-readable key, unwritable data dir, unreachable gateway", async () => {
    const { dir, configPath } = await setup();
    const keyPath = join(dir, "member.key");
    const oneLine = (r: { code: number | null; stderr: string }, pattern: RegExp): void => {
      expect(r.code).not.toBe(0);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toMatch(pattern);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    };

    await chmod(keyPath, 0o644);
    oneLine(await dacd(["run", "--config", configPath]), /insecure|group or others/);
    await chmod(keyPath, 0o600);

    await rm(keyPath);
    oneLine(await dacd(["run", "--config", configPath]), /member\.key/);

    await writeFile(keyPath, "0x" + "11".repeat(32) + "\n", { mode: 0o600 });
    const blocked = join(dir, "not-a-dir");
    await writeFile(blocked, "");
    const env = { ...process.env, DACD_DATA_DIR: join(blocked, "data") };
    const r = spawnSync(process.execPath, [BIN, "run", "--config", configPath], {
      env,
      encoding: "utf8",
      timeout: 30_000,
    });
    oneLine({ code: r.status, stderr: r.stderr }, /data_dir .* is not a writable directory/);

    const env2 = { ...process.env, DACD_AVAILABILITY_GATEWAY_URL: "http://127.0.0.1:9" };
    const r2 = spawnSync(process.execPath, [BIN, "run", "--config", configPath], {
      env: env2,
      encoding: "utf8",
      timeout: 60_000,
    });
    oneLine({ code: r2.status, stderr: r2.stderr }, /unreachable at start/);
  });
});
