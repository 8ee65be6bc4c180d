import { spawn, spawnSync, type SpawnSyncReturns } from "node:child_process";
import { cp, mkdtemp, open, readdir, rm, stat, truncate } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memberSetup, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { VectorGateway } from "../helpers/vector-gateway.js";
import { loadChain } from "../helpers/vectors.js";

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");
let base: string;
let gw: VectorGateway;
const dirs: string[] = [];

/** A member that signed the first 4 batches of the spot chain, its store compacted into one table. */
beforeAll(async () => {
  const { responses, expected } = loadChain("spot-chain");
  gw = await new VectorGateway(responses, expected, "G").start();
  gw.available = 4;
  const setup = await memberSetup({
    profile: "spot",
    privateKey: expected.private_key,
    gatewayUrl: gw.url,
    feeder: true,
  });
  base = setup.dir;
  dirs.push(base);
  const daemon = await startQuietDaemon(setup.config);
  await waitFor(() => daemon.member.state.nextBatchId === 4, 60_000, "4 batches");
  await daemon.store.compact();
  await daemon.stop();
  gw.available = 6;
}, 90_000);
afterAll(async () => {
  await gw.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function corruptCopy(how: "truncate" | "overwrite"): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "dacd-corrupt-"));
  dirs.push(dir);
  await cp(base, dir, { recursive: true });
  const data = join(dir, "data");
  const tables = (await readdir(data)).filter((f) => f.endsWith(".ldb"));
  expect(tables.length).toBeGreaterThan(0);
  for (const t of tables) {
    const file = join(data, t);
    const size = (await stat(file)).size;
    if (how === "truncate") await truncate(file, Math.floor(size / 2));
    else {
      const fh = await open(file, "r+");
      await fh.write(Buffer.alloc(Math.floor(size * 0.8), 0xaa), 0, Math.floor(size * 0.8), 0);
      await fh.close();
    }
  }
  return join(dir, "dacd.yaml");
}

function noStackTrace(text: string): void {
  expect(text).not.toMatch(/triggerUncaughtException|^\s+at .+:\d+:\d+\)?$|node:internal/m);
}

/** A store that cannot be opened or read: exit 2 (cli/exit-codes.ts) and one line, naming the store. */
function cannotRun(r: SpawnSyncReturns<string>): void {
  expect(r.status).toBe(2);
  expect(r.stdout).toBe("");
  expect(r.stderr.trim().split("\n")).toHaveLength(1);
  expect(r.stderr).toMatch(
    /^dacd: the store .*\/data (is damaged|cannot be read) .*restore the newest backup/,
  );
}

/** `check` ran and found the damage: exit 1 and a report that is not ok and names it. */
function checkFindsDamage(r: SpawnSyncReturns<string>): void {
  expect(r.stderr).toBe("");
  expect(r.status).toBe(1);
  const report = JSON.parse(r.stdout) as { ok: boolean; problems: { problem: string }[] };
  expect(report.ok).toBe(false);
  expect(report.problems.map((p) => p.problem)).toContainEqual(
    expect.stringMatching(/^the store .*\/data is damaged \(Corruption: .*restore the newest backup/),
  );
}

const dacd = (cmd: string[], config: string) =>
  spawnSync(process.execPath, [BIN, ...cmd, "--json", "--config", config], {
    encoding: "utf8",
    timeout: 60_000,
  });

describe("a damaged store: one line, no stack trace, no retrying for ever", () => {
  // A table cut in half: LevelDB cannot open it, so no command gets to read the store.
  for (const cmd of [["status"], ["check"], ["check", "--deep"]]) {
    it(`truncate a table: dacd ${cmd.join(" ")}`, async () => {
      const r = dacd(cmd, await corruptCopy("truncate"));
      noStackTrace(r.stderr);
      cannotRun(r);
    }, 90_000);
  }

  // The first 80% of the table overwritten: its index (at the end) is whole, so the store opens
  // and the cursor and the batch records (which sort after the tree records) still read; the tree
  // records do not.
  it("overwrite a table: dacd status reads the cursor, which it is about", async () => {
    const r = dacd(["status"], await corruptCopy("overwrite"));
    noStackTrace(r.stderr);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      cursor: { next_batch_id: 4, last_accepted_batch_id: 3 },
      last_signed_batch: { batch_id: 3 },
    });
  }, 90_000);
  for (const cmd of [["check"], ["check", "--deep"]]) {
    it(`overwrite a table: dacd ${cmd.join(" ")} finds the damage`, async () => {
      const r = dacd(cmd, await corruptCopy("overwrite"));
      noStackTrace(r.stderr);
      checkFindsDamage(r);
    }, 90_000);
  }

  for (const how of ["truncate", "overwrite"] as const) {
    it(`${how} a table: dacd run stops with one line and a non-zero exit`, async () => {
      const config = await corruptCopy(how);
      const child = spawn(process.execPath, [BIN, "run", "--config", config], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
      const code = await new Promise<number | null>((resolve) => {
        const t = setTimeout(() => child.kill("SIGKILL"), 60_000);
        child.once("exit", (c) => (clearTimeout(t), resolve(c)));
      });
      noStackTrace(err);
      console.log(`run on a ${how} table: exit ${code}: ${err.trim()}`);
      expect(code).toBe(2);
      expect(err.trim().split("\n")).toHaveLength(1);
      expect(err).toMatch(/^dacd: .*the store .* (is damaged|cannot be read)/);
      expect(out).not.toContain('"code":"INTERNAL"');
    }, 90_000);
  }
});
