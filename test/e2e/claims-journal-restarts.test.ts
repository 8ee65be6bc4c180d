import { spawn, type ChildProcess } from "node:child_process";
import { copyFile, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startDevnet } from "../../src/devnet/main.js";
import { EthSigner, ethAddressFromPrivateKey } from "../../src/signer/eth-signer.js";
import {
  defaultClaimsJournalPath,
  formatLine,
  journalLines,
  type JournalEntry,
} from "../../src/storage/claims-journal.js";
import { hexToBytes32 } from "../../src/util/bytes.js";
import { prng } from "../../src/util/prng.js";
import { BIN, dacdAsync } from "../helpers/dacd-cli.js";
import { memberSetup, waitFor } from "../helpers/daemon.js";

const KEY = "0x4444444444444444444444444444444444444444444444444444444444444444";
const ADDRESS = ethAddressFromPrivateKey(new Uint8Array(Buffer.from(KEY.slice(2), "hex")));
const RUNS = 10;
const BATCHES_PER_RUN = 13; // ten runs take the ids across 9 -> 10 and 99 -> 100

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function startMember(configPath: string, log: "ignore" | "pipe" = "ignore"): ChildProcess {
  return spawn(process.execPath, [BIN, "run", "--config", configPath], {
    stdio: ["ignore", log, "pipe"],
    env: { ...process.env, DACD_HASH_ENGINE: "wasm" },
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) =>
    child.exitCode !== null || child.signalCode !== null
      ? resolve(child.exitCode)
      : child.once("exit", (code) => resolve(code)),
  );
}

/** The journal's whole records, as text, in file order; fails on a damaged line. */
async function journalRecords(path: string): Promise<string[]> {
  let text: Buffer;
  try {
    text = await readFile(path);
  } catch {
    return [];
  }
  const lines = journalLines(text);
  expect(lines.filter((l) => l.kind === "damaged")).toEqual([]);
  return lines.flatMap((l) => (l.kind === "record" ? [l.text] : []));
}

/** A devnet whose batches are cut by the test, and a member of its one-key committee (not started). */
async function devnetMember(seed: number) {
  const dn = await startDevnet({
    variant: "G",
    committee: [ADDRESS],
    quorum: 1,
    traffic: 0,
    batchIntervalMs: 0,
    seed,
  });
  cleanups.push(() => dn.close());
  const setup = await memberSetup({
    profile: "spot",
    privateKey: KEY,
    gatewayUrl: dn.urls.availability,
    extra: `feeder_gateway_url: "${dn.urls.feeder}"`,
  });
  cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
  return { dn, setup, journalPath: defaultClaimsJournalPath(setup.config.dataDir) };
}

describe("claims journal across restarts of the member over a growing chain", () => {
  it("holds exactly one line per posted batch id, each the posted claim, after SIGTERMs and SIGKILLs at random", async () => {
    const { dn, setup, journalPath } = await devnetMember(11);
    const rand = prng(48);
    let seen: string[] = [];
    const signals: string[] = [];

    for (let run = 0; run < RUNS; run++) {
      for (let i = 0; i < BATCHES_PER_RUN; i++) await dn.cutBatch(true);
      const child = startMember(setup.configPath);
      let stderr = "";
      child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
      // Stopped while it catches up: once it has journaled a claim of this run, within a moment.
      const before = seen.length;
      await waitFor(
        async () => (await journalRecords(journalPath)).length > before || child.exitCode !== null,
        60_000,
        `run ${run} to sign`,
      );
      await new Promise((r) => setTimeout(r, Math.floor(rand() * 400)));
      const signal = rand() < 0.5 ? "SIGKILL" : "SIGTERM";
      signals.push(signal);
      if (child.exitCode !== null)
        throw new Error(`run ${run} exited by itself (${child.exitCode}): ${stderr}`);
      child.kill(signal);
      await exited(child);
      // Read back after each run: whole lines only, and what was there before is still there, unchanged.
      const now = await journalRecords(journalPath);
      expect(now.slice(0, seen.length)).toEqual(seen);
      seen = now;
    }
    expect(new Set(signals).size).toBe(2);

    // A last run catches up with the head and stops cleanly.
    const head = dn.chain.lastBatchId();
    expect(head).toBe(RUNS * BATCHES_PER_RUN - 1);
    const last = startMember(setup.configPath, "pipe");
    cleanups.push(async () => {
      last.kill("SIGKILL");
      await exited(last);
    });
    let lastOutput = "";
    for (const stream of [last.stdout!, last.stderr!])
      stream.on("data", (d: Buffer) => (lastOutput += d.toString()));
    await dn.waitForQuorum(head, 120_000);
    // The quorum may stand from the runs before: SIGTERM only once this member runs (its handlers
    // are in place), not while it starts.
    await waitFor(() => lastOutput.includes('"member started"'), 60_000, "the last member to start");
    last.kill("SIGTERM");
    expect(await exited(last), lastOutput.slice(-2000)).toBe(0);

    const records = await journalRecords(journalPath);
    expect(records.slice(0, seen.length)).toEqual(seen);
    const entries = records.map(
      (t) => JSON.parse(t.slice(0, t.lastIndexOf("\t"))) as { batch_id: number; claim_hash: string },
    );
    const ids = entries.map((e) => e.batch_id);
    // Every batch id was posted and accepted (the devnet accepts only its expected claim) and is in
    // the journal once, with that claim.
    for (let id = 0; id <= head; id++) {
      const q = await dn.waitForQuorum(id, 1_000);
      expect(q.signers.map((s) => s.toLowerCase())).toEqual([ADDRESS.toLowerCase()]);
    }
    expect([...ids].sort((a, b) => a - b)).toEqual([...Array(head + 1).keys()]);
    for (const e of entries) {
      expect(e.claim_hash).toBe(
        `0x${Buffer.from(dn.chain.batch(e.batch_id)!.expectedClaim).toString("hex")}`,
      );
    }
  }, 240_000);

  it("a journaled signature that is not the member's stops it (exit 2, one line naming the batch and journal repair)", async () => {
    const { dn, setup, journalPath } = await devnetMember(13);
    for (let i = 0; i < 4; i++) await dn.cutBatch(true);
    const first = startMember(setup.configPath);
    await dn.waitForQuorum(3, 60_000);
    first.kill("SIGTERM");
    expect(await exited(first)).toBe(0);

    // Batch 3's line keeps its claim and the member's address, with another key's signature; the
    // store is lost, so the member signs batch 3 again and would post the journaled signature.
    const other = new EthSigner(new Uint8Array(32).fill(7));
    const lines = (await readFile(journalPath, "utf8")).split("\n");
    const at = lines.findIndex((l) => l.startsWith('{"batch_id":3,'));
    const record = JSON.parse(lines[at]!.slice(0, lines[at]!.lastIndexOf("\t"))) as JournalEntry & {
      at: string;
    };
    const forged = { ...record, signature: other.sign(hexToBytes32(record.claim_hash)!) };
    lines[at] = formatLine(forged).slice(0, -1);
    await writeFile(journalPath, lines.join("\n"));
    await rm(setup.config.dataDir, { recursive: true });

    const refused = await dacdAsync(["run", "--config", setup.configPath]);
    expect(refused.code).toBe(2);
    const errorLines = refused.err.trim().split("\n");
    expect(errorLines.at(-1)).toMatch(/batch 3: .*not this member's.*`dacd journal repair`/);
    expect(refused.err).not.toMatch(/^\s+at /m);
  }, 120_000);

  it("a damaged complete line stops the member (exit 2, one line) until `dacd journal repair` merges a backup", async () => {
    const { dn, setup, journalPath } = await devnetMember(12);
    for (let i = 0; i < 4; i++) await dn.cutBatch(true);
    const first = startMember(setup.configPath);
    await dn.waitForQuorum(3, 60_000);
    first.kill("SIGTERM");
    expect(await exited(first)).toBe(0);
    const backup = join(setup.dir, "backup.journal");
    await copyFile(journalPath, backup);

    // The last line, whole and terminated, fails its checksum; the store is lost as well.
    const lines = (await readFile(journalPath, "utf8")).split("\n");
    const last = lines.length - 2;
    lines[last] = lines[last]!.replace(/"batch_id":3/, '"batch_id":7');
    const damaged = lines.join("\n");
    await writeFile(journalPath, damaged);
    await rm(setup.config.dataDir, { recursive: true });

    const refused = await dacdAsync(["run", "--config", setup.configPath]);
    expect(refused.code).toBe(2);
    expect(refused.err.trim().split("\n")).toHaveLength(1);
    expect(refused.err).toMatch(/line 4 is damaged .*dacd journal repair --from/);
    expect(await readFile(journalPath, "utf8")).toBe(damaged);

    const repaired = await dacdAsync(["journal", "repair", "--config", setup.configPath, "--from", backup]);
    expect(repaired.code).toBe(0);
    expect(JSON.parse(repaired.out)).toMatchObject({ recovered: [4], records: 4 });

    // Repaired, the member signs the lost store's batches again, with the journaled claims only.
    await dn.cutBatch(true);
    const again = startMember(setup.configPath);
    cleanups.push(async () => {
      again.kill("SIGKILL");
      await exited(again);
    });
    await dn.waitForQuorum(4, 60_000);
    await waitFor(async () => (await journalRecords(journalPath)).length === 5, 30_000, "batch 4 journaled");
    again.kill("SIGTERM");
    expect(await exited(again)).toBe(0);
    const ids = (await journalRecords(journalPath)).map(
      (t) => (JSON.parse(t.slice(0, t.lastIndexOf("\t"))) as { batch_id: number }).batch_id,
    );
    expect(ids).toEqual([0, 1, 2, 3, 4]);
  }, 120_000);
});
