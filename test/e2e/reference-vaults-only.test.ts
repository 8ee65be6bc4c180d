import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDaemon, type Daemon } from "../../src/app.js";
import type { Config } from "../../src/config/config.js";
import { startDevnet, type Devnet } from "../../src/devnet/main.js";
import { expectMemberRootsNaive } from "../helpers/naive-chain.js";
import { createLogger } from "../../src/logging.js";
import type { BatchRecord } from "../../src/storage/batch-record.js";
import { dacdAsync } from "../helpers/dacd-cli.js";
import { memberSetup, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { readArchiveFiles } from "../helpers/reference-archive.js";

/**
 * Onboarding from what the reference member's own dump_state writes: a bzip2 tar holding only
 * vaults.csv (no info.json, no order files; rows CRLF, decimal, in its walk's order). With
 * --batch and the batch's roots and sequence number (--batch-info FILE, or the devnet's gateways
 * over HTTP with --config) the store is built, its vault root checked, and the member verifies and
 * signs the devnet's next batches without validating orders, warning at every start until a full
 * archive is loaded or the configuration accepts it. Each refusal is one line with its exit code.
 */

const KEY_A = "0x" + "51".repeat(32);
const KEY_B = "0x" + "52".repeat(32);
const KEY_C = "0x" + "53".repeat(32);

let dn: Devnet;
let work: string;
/** dacd's own archive of batch 3 (info.json, vaults.csv, the order files), and the reference's (vaults.csv). */
let fullArchive: string;
let vaultsOnly: string;
let batchInfo: string;
const records = new Map<number, BatchRecord>();
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  dn = await startDevnet({ variant: "G", traffic: 60, batchIntervalMs: 200, batchSize: 15, seed: 13 });
  cleanups.push(() => dn.close());
  work = await mkdtemp(join(tmpdir(), "dacd-vaults-only-"));
  cleanups.push(() => rm(work, { recursive: true, force: true }));
  // Member A signs from batch 0: the state the archives are made of, and the claims to compare with.
  const a = await memberSetup({ profile: "spot", privateKey: KEY_A, gatewayUrl: dn.urls.availability });
  cleanups.push(() => rm(a.dir, { recursive: true, force: true }));
  const memberA = await startQuietDaemon({ ...a.config, feederGatewayUrl: dn.urls.feeder });
  try {
    await waitFor(
      async () => ((await memberA.store.getCursor())?.last_accepted_batch_id ?? -1) >= 5,
      90_000,
      "member A signs batches 0-5",
    );
    for (let id = 2; id <= 5; id++) records.set(id, (await memberA.store.getBatch(id))!);
    // The roots every later comparison starts from, against a naive replay (the devnet's are dacd's).
    await expectMemberRootsNaive(dn.chain, memberA.store, [3]);
    fullArchive = join(work, "full.bz2");
    const dump = await dacdAsync([
      "dump",
      "--format",
      "reference",
      "--batch",
      "3",
      "--out",
      fullArchive,
      "--config",
      a.configPath,
    ]);
    expect(dump.code).toBe(0);
  } finally {
    await memberA.stop();
  }

  // The reference's archive: vaults.csv alone, its rows in another order, in a GNU tar as Python's tarfile writes.
  const rows = (await readArchiveFiles(fullArchive)).get("vaults.csv")!.split("\r\n").filter(Boolean);
  expect(rows.length).toBeGreaterThan(1);
  const parts = join(work, "reference");
  await mkdir(parts);
  await writeFile(join(parts, "vaults.csv"), rows.reverse().join("\r\n") + "\r\n", "latin1");
  vaultsOnly = join(work, "state.bz2");
  const tar = spawnSync("tar", ["--format=gnu", "-cjf", vaultsOnly, "-C", parts, "vaults.csv"]);
  expect(tar.status).toBe(0);
  expect([...(await readArchiveFiles(vaultsOnly)).keys()]).toEqual(["vaults.csv"]);

  // The reference member's batch info for batch 3, as it stores it.
  const r3 = records.get(3)!;
  batchInfo = join(work, "batch-3.json");
  await writeFile(
    batchInfo,
    JSON.stringify({ merkle_roots: r3.roots, sequence_number: r3.sequence_number }, null, 2),
  );
}, 180_000);

afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A member's config for the devnet (no validate_rollup: an imported store cannot check rollup vaults). */
async function member(key: string, extra = ""): Promise<Awaited<ReturnType<typeof memberSetup>>> {
  const setup = await memberSetup({
    profile: "spot",
    privateKey: key,
    gatewayUrl: dn.urls.availability,
    validateRollup: null,
    extra: `feeder_gateway_url: "${dn.urls.feeder}"\n${extra}`,
  });
  cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
  return setup;
}

/** Runs a member until it has signed through `batch`; returns its warnings. */
async function runUntil(config: Config, batch: number): Promise<{ warnings: string[]; daemon: Daemon }> {
  const lines: string[] = [];
  const daemon = await startDaemon(config, {
    log: createLogger({ level: "warn", destination: { write: (s: string) => void lines.push(s) } }),
    retryAttempts: 2,
  });
  try {
    await waitFor(
      async () => ((await daemon.store.getCursor())?.last_accepted_batch_id ?? -1) >= batch,
      90_000,
      `batches through ${batch} signed and accepted`,
    );
  } finally {
    await daemon.stop();
  }
  const warnings = lines.map((l) => (JSON.parse(l) as { level: string; msg: string }).msg);
  return { warnings, daemon };
}

const ORDERS_WARNING =
  /^orders are not validated \(validate_orders false for this store\): it was loaded at batch 3 from a reference archive without order files; load an archive with them \(dacd load --from-reference FILE --force\) or set accept_missing_orders: true$/;

describe("loading the reference member's own archive (vaults.csv only)", () => {
  it("with --batch and --batch-info: the member warns at each start, verifies and signs the next batches; a full load clears it", async () => {
    const b = await member(KEY_B);
    const load = await dacdAsync([
      "load",
      "--from-reference",
      vaultsOnly,
      "--batch",
      "3",
      "--batch-info",
      batchInfo,
      "--config",
      b.configPath,
    ]);
    expect(load.code).toBe(0);
    const stderr = load.err.trim().split("\n");
    expect(stderr).toHaveLength(1);
    expect(stderr[0]).toMatch(/^dacd: warning: orders are not validated/);
    const r3 = records.get(3)!;
    expect(JSON.parse(load.out)).toMatchObject({
      batch_id: 3,
      sequence_number: r3.sequence_number,
      roots: r3.roots,
      claim_hash: r3.claim_hash,
      leaves: { order: 0 },
      order_subtrees: 0,
      orders_missing: true,
    });
    // config check tells it as run will.
    const check = await dacdAsync(["config", "check", "--no-key", "--config", b.configPath]);
    expect(check.code).toBe(0);
    expect(check.err).toMatch(/^dacd: warning: orders are not validated .*batch 3/m);

    // Batches 4 and 5 verified (vaults) and signed with the claims member A made.
    const first = await runUntil(b.config, 5);
    expect(first.warnings.filter((w) => ORDERS_WARNING.test(w))).toHaveLength(1);
    const store = await reopen(b.config);
    for (const id of [4, 5]) {
      const rec = (await store.getBatch(id))!;
      expect(rec.claim_hash).toBe(records.get(id)!.claim_hash);
      expect(rec.roots.order).toBe(records.get(id)!.roots.order);
      expect(rec.root_gens.order).toBeUndefined(); // orders not computed
    }
    await store.close();

    // Again at the next start; not once the configuration accepts it.
    expect((await runUntil(b.config, 5)).warnings.filter((w) => ORDERS_WARNING.test(w))).toHaveLength(1);
    expect(
      (await runUntil({ ...b.config, acceptMissingOrders: true }, 5)).warnings.filter((w) =>
        /orders are not validated/.test(w),
      ),
    ).toEqual([]);

    // A later load with the order files: no warning, and the orders are validated again.
    const full = await dacdAsync([
      "load",
      "--from-reference",
      fullArchive,
      "--force",
      "--config",
      b.configPath,
    ]);
    expect(full.err).toBe("");
    expect(full.code).toBe(0);
    expect(JSON.parse(full.out)).toMatchObject({ batch_id: 3, orders_missing: false });
    const after = await runUntil(b.config, 5);
    expect(after.warnings.filter((w) => /orders are not validated/.test(w))).toEqual([]);
    const again = await reopen(b.config);
    expect((await again.getBatch(5))!.root_gens.order).toBeDefined();
    expect((await again.getBatch(5))!.claim_hash).toBe(records.get(5)!.claim_hash);
    await again.close();
  }, 300_000);

  it("with --config alone: the roots from get_batch_data and the sequence number from the feeder, over HTTP", async () => {
    const c = await member(KEY_C);
    const load = await dacdAsync([
      "load",
      "--from-reference",
      vaultsOnly,
      "--batch",
      "3",
      "--config",
      c.configPath,
    ]);
    expect(load.code).toBe(0);
    const r3 = records.get(3)!;
    const out = JSON.parse(load.out) as { roots: Record<string, string> };
    expect(out).toMatchObject({
      batch_id: 3,
      sequence_number: r3.sequence_number,
      claim_hash: r3.claim_hash,
    });
    expect(out.roots.vault).toBe(r3.roots.vault);
    expect(out.roots.order).toBe(r3.roots.order);
    const run = await runUntil(c.config, 4);
    expect(run.warnings.filter((w) => ORDERS_WARNING.test(w))).toHaveLength(1);
    const store = await reopen(c.config);
    expect((await store.getBatch(4))!.claim_hash).toBe(records.get(4)!.claim_hash);
    await store.close();
  }, 180_000);

  it("refuses in one line each, with the documented exit code, and leaves no store", async () => {
    const db = join(work, "refused");
    const spot = ["--db", db, "--profile", "spot"];
    const r3 = records.get(3)!;
    // Any other root: the vault tree does not change in every batch.
    const otherRoot = r3.roots.vault!.slice(0, -1) + (r3.roots.vault!.endsWith("0") ? "1" : "0");
    const wrongRoot = join(work, "wrong-root.json");
    await writeFile(
      wrongRoot,
      JSON.stringify({
        merkle_roots: { ...r3.roots, vault: otherRoot },
        sequence_number: r3.sequence_number,
      }),
    );
    const malformed = join(work, "malformed.json");
    await writeFile(malformed, JSON.stringify({ merkle_roots: r3.roots, sequence_number: "3" }));
    const noFeeder = await memberSetup({
      profile: "spot",
      privateKey: KEY_C,
      gatewayUrl: dn.urls.availability,
      validateRollup: null,
    });
    cleanups.push(() => rm(noFeeder.dir, { recursive: true, force: true }));
    // A sequence number the feeder contradicts (the feeder states batch 3's own).
    const lying = join(work, "lying.json");
    await writeFile(lying, JSON.stringify({ merkle_roots: r3.roots, sequence_number: 1000 }));
    const withFeeder = await member("0x" + "54".repeat(32));

    const cases: [string[], number, RegExp][] = [
      [
        ["--config", withFeeder.configPath, "--batch", "3", "--batch-info", lying],
        2,
        new RegExp(
          `batch 3: ${lying}, field sequence_number: 1000, but the feeder gateway's get_batch_info states ${r3.sequence_number} for batch 3; nothing was imported`,
        ),
      ],
      [
        [...spot],
        64,
        /has no info\.json \(the reference member's dump_state writes none\): name its batch with --batch N/,
      ],
      [
        [...spot, "--batch", "3"],
        64,
        /--batch 3 needs the batch's roots and sequence number: --batch-info FILE, or --config/,
      ],
      [[...spot, "--batch-info", batchInfo], 64, /--batch-info FILE needs --batch N/],
      [
        [...spot, "--batch", "3", "--batch-info", wrongRoot],
        2,
        new RegExp(
          `the vault tree root built from the archive is ${r3.roots.vault}; ${wrongRoot} states ${otherRoot} for batch 3$`,
        ),
      ],
      [
        [...spot, "--batch", "3", "--batch-info", malformed],
        2,
        /malformed\.json, field sequence_number: "3" is not an integer in 0 … 9007199254740990$/,
      ],
      [
        ["--db", db, "--profile", "perpetual", "--batch", "3", "--batch-info", batchInfo],
        64,
        /--profile perpetual: the reference member's state archive holds vaults and orders, a spot member's state/,
      ],
      [
        ["--config", noFeeder.configPath, "--batch", "3"],
        78,
        /feeder_gateway_url \(whose get_batch_info does\) is not set/,
      ],
    ];
    for (const [args, code, message] of cases) {
      const r = await dacdAsync(["load", "--from-reference", vaultsOnly, ...args]);
      expect(r.err.trim().split("\n"), args.join(" ")).toHaveLength(1);
      expect(r.err.trim(), args.join(" ")).toMatch(/^dacd: /);
      expect(r.err.trim(), args.join(" ")).toMatch(message);
      expect(r.code, args.join(" ")).toBe(code);
      expect(existsSync(join(db, "CURRENT"))).toBe(false);
    }
    expect(existsSync(join(withFeeder.config.dataDir, "CURRENT"))).toBe(false);
    // A batch id that differs from what the archive's own info.json says.
    const differs = await dacdAsync([
      "load",
      "--from-reference",
      fullArchive,
      ...spot,
      "--batch",
      "4",
      "--batch-info",
      batchInfo,
    ]);
    expect(differs.code).toBe(2);
    expect(differs.err.trim()).toMatch(/^dacd: full\.bz2: info\.json states batch 3, .*batch-3\.json 4$/);
    expect(await readFile(batchInfo, "utf8")).toContain("merkle_roots");
  }, 120_000);
});

async function reopen(config: Config) {
  const { LevelStore } = await import("../../src/storage/level-store.js");
  return LevelStore.openExisting(config.dataDir);
}
