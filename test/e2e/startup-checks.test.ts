import { spawn, spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { crc32 } from "node:zlib";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LevelStore } from "../../src/storage/level-store.js";
import { FIXTURES } from "../helpers/vectors.js";

/**
 * `dacd config check` makes every start-up check of `dacd run` that needs no gateway
 * (src/service/startup-checks.ts): for each configuration run refuses, config check refuses it with
 * the same line and status, and every example in config/ passes.
 */

const ROOT = join(import.meta.dirname, "..", "..");
const BIN = join(ROOT, "bin", "dacd.js");

function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("DACD_") && v !== undefined) env[k] = v;
  return { ...env, DACD_HASH_ENGINE: "wasm" };
}

function dacd(...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: "utf8",
    env: cleanEnv(),
    timeout: 120_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** Spawned without blocking: this process's gateway must answer while run starts. */
function dacdAsync(...args: string[]): Promise<{ code: number | null; err: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: cleanEnv(),
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (s: string) => (err += s));
    child.on("close", (code) => done({ code, err }));
  });
}

let dir: string;
let gateway: Server;
let gatewayUrl: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "dacd-startup-"));
  const expected = JSON.parse(
    await readFile(join(FIXTURES, "reference-state-spot", "expected.json"), "utf8"),
  ) as { private_key: string };
  await writeFile(join(dir, "member.key"), expected.private_key + "\n", { mode: 0o600 });
  // A gateway without get_blockchain_type (an Ethereum-kind chain): run goes on to its store.
  gateway = createServer((_req, res) => res.writeHead(404).end("not found"));
  await new Promise<void>((r) => gateway.listen(0, "127.0.0.1", r));
  gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => gateway.close(r));
  await rm(dir, { recursive: true, force: true });
});

async function configFile(name: string, lines: string[]): Promise<string> {
  const path = join(dir, `${name}.yaml`);
  await writeFile(
    path,
    ["profile: spot", "private_key_path: member.key", `data_dir: ${name}-db`, ...lines, ""].join("\n"),
  );
  return path;
}

describe("start-up checks", () => {
  it.each(readdirSync(join(ROOT, "config")).filter((f) => f.endsWith(".yaml")))(
    "config/%s passes config check (key check off)",
    (file) => {
      const r = dacd("config", "check", "--config", join(ROOT, "config", file), "--no-key");
      expect(r.err).toBe("");
      expect(r.code).toBe(0);
    },
  );

  it("config check refuses what run refuses at start, with the same line and exit 78", async () => {
    await writeFile(join(dir, "a-file"), "");
    const cases = [
      await configFile("certs", [
        "availability_gateway_url: https://127.0.0.1:9",
        "certificates_path: no-such-certs",
      ]),
      await configFile("datadir", [`availability_gateway_url: ${gatewayUrl}`, "data_dir: a-file/db"]),
      await configFile("prune", [
        `availability_gateway_url: ${gatewayUrl}`,
        "schedule:",
        '  prune: "0 3 * * *"',
      ]),
    ];
    // A store imported from the reference archive, then run with validate_rollup true.
    const imported = await configFile("imported", [`availability_gateway_url: ${gatewayUrl}`]);
    const load = dacd(
      "load",
      "--from-reference",
      join(FIXTURES, "reference-state-spot", "state.bz2"),
      "--config",
      imported,
    );
    expect(load.code, load.err).toBe(0);
    const rollup = join(dir, "imported-rollup.yaml");
    await writeFile(rollup, (await readFile(imported, "utf8")) + "validate_rollup: true\n");
    cases.push(rollup);
    // A store pinned to one chain kind, configured for the other.
    const pinned = await configFile("pinned", [`availability_gateway_url: ${gatewayUrl}`, "chain: starknet"]);
    const store = await LevelStore.open(join(dir, "pinned-db"));
    await store.meta.pinChain("ethereum");
    await store.close();
    cases.push(pinned);

    for (const path of cases) {
      const check = dacd("config", "check", "--config", path);
      const run = await dacdAsync("run", "--config", path);
      expect(check.code, check.err).toBe(78);
      expect(run.code, run.err).toBe(78);
      expect(check.err.trim().split("\n")).toHaveLength(1);
      expect(check.err).toBe(run.err);
    }
    // And with the problem gone, config check passes the imported store.
    expect(dacd("config", "check", "--config", imported).code).toBe(0);
  }, 180_000);

  it("config check refuses a damaged claims journal as run does, with the same line and exit 2", async () => {
    const path = await configFile("journal", [
      `availability_gateway_url: ${gatewayUrl}`,
      "claims_journal_path: journal/claims.journal",
    ]);
    expect(dacd("config", "check", "--config", path, "--no-key").code).toBe(0);
    const line = (batchId: number, claim: string) => {
      const body = JSON.stringify({
        batch_id: batchId,
        claim_hash: claim,
        signature: "0x00",
        member_key: "0x00",
      });
      return `${body}\t${crc32(body).toString(16).padStart(8, "0")}\n`;
    };
    await mkdir(join(dir, "journal"));
    const journal = join(dir, "journal", "claims.journal");
    // A terminated line whose checksum fails: damaged since it was written, not torn.
    await writeFile(
      journal,
      line(0, "0x" + "1".repeat(64)) + line(1, "0x" + "2".repeat(64)).replace("2222", "3333"),
    );
    const check = dacd("config", "check", "--config", path);
    const run = await dacdAsync("run", "--config", path);
    expect(check.err).toMatch(/claims journal .* line 2 is damaged/);
    expect(check.code).toBe(2);
    expect(run.code).toBe(2);
    expect(check.err).toBe(run.err);
    // Two claims for one batch: an edited journal.
    await writeFile(journal, line(0, "0x" + "1".repeat(64)) + line(0, "0x" + "2".repeat(64)));
    const twice = dacd("config", "check", "--config", path);
    expect(twice.err).toMatch(/holds two claims for batch 0/);
    expect(twice.err).toBe((await dacdAsync("run", "--config", path)).err);
    // A journal path below a file: refused by both, with the same line.
    const nowhere = await configFile("journal-nowhere", [
      `availability_gateway_url: ${gatewayUrl}`,
      "claims_journal_path: a-file/claims.journal",
    ]);
    await writeFile(join(dir, "a-file"), "");
    const below = dacd("config", "check", "--config", nowhere);
    expect(below.err).toMatch(/claims journal .*a-file\/claims.journal cannot be read/);
    expect(below.code).toBe(2);
    expect(below.err).toBe((await dacdAsync("run", "--config", nowhere)).err);
  }, 120_000);
});
