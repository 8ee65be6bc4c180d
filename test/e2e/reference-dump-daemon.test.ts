import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Daemon } from "../../src/app.js";
import { startDevnet } from "../../src/devnet/main.js";
import { expectMemberRootsNaive } from "../helpers/naive-chain.js";
import { dacdAsync } from "../helpers/dacd-cli.js";
import { memberSetup, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { readArchiveFiles } from "../helpers/reference-archive.js";

/**
 * `dacd dump --format reference` while `dacd run` holds the store and keeps signing the devnet's
 * batches: the archive comes from the daemon's snapshot over its control socket, loads into a
 * fresh store with the member's roots, and is the same bytes as the dump of the stopped store.
 */

const KEY = "0x" + "44".repeat(32);
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("dump --format reference through the running daemon", () => {
  it("streams a batch's archive while signing; it loads with the member's roots and equals a stopped store's dump", async () => {
    const dn = await startDevnet({
      variant: "G",
      traffic: 60,
      batchIntervalMs: 200,
      batchSize: 15,
      seed: 11,
    });
    cleanups.push(() => dn.close());
    const setup = await memberSetup({ profile: "spot", privateKey: KEY, gatewayUrl: dn.urls.availability });
    cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
    const daemon: Daemon = await startQuietDaemon({ ...setup.config, feederGatewayUrl: dn.urls.feeder });
    let stopped = false;
    cleanups.push(async () => {
      if (!stopped) await daemon.stop();
    });
    await waitFor(() => daemon.member.state.nextBatchId >= 4, 60_000, "batches 0-3 signed");
    const work = await mkdtemp(join(tmpdir(), "dacd-refdump-"));
    cleanups.push(() => rm(work, { recursive: true, force: true }));
    const cfg = ["--config", setup.configPath];

    // The store is held by the daemon (a direct open would fail on LevelDB's lock).
    const live = join(work, "live.bz2");
    const during = await dacdAsync(["dump", "--format", "reference", "--batch", "3", "--out", live, ...cfg]);
    expect(during.err).toBe("");
    expect(during.code).toBe(0);
    const record = (await daemon.store.getBatch(3))!;
    // The member's roots, which the archive must carry, against a naive replay of the devnet's chain.
    await expectMemberRootsNaive(dn.chain, daemon.store, [3]);
    expect(JSON.parse(during.out)).toMatchObject({
      out: live,
      batch_id: 3,
      sequence_number: record.sequence_number,
      roots: record.roots,
    });
    const files = await readArchiveFiles(live);
    expect([...files.keys()]).toEqual([
      "info.json",
      "vaults.csv",
      "orders_4.csv",
      "orders_5.csv",
      "orders_6.csv",
      "orders_7.csv",
    ]);
    expect(files.get("vaults.csv")!.split("\r\n").filter(Boolean).length).toBeGreaterThan(0);
    // The daemon went on signing meanwhile.
    await waitFor(() => daemon.member.state.nextBatchId >= 6, 60_000, "batches 4-5 signed");

    // A fresh store from the archive has the member's roots for batch 3.
    const loaded = await dacdAsync([
      "load",
      "--from-reference",
      live,
      "--db",
      join(work, "fresh"),
      "--profile",
      "spot",
    ]);
    expect(loaded.err).toBe("");
    expect(loaded.code).toBe(0);
    expect(JSON.parse(loaded.out)).toMatchObject({
      batch_id: 3,
      sequence_number: record.sequence_number,
      roots: record.roots,
    });
    const check = await dacdAsync(["check", "--deep", "--db", join(work, "fresh")]);
    expect(check.code).toBe(0);

    // The stopped store's dump of the same batch: the same bytes.
    await daemon.stop();
    stopped = true;
    const still = join(work, "stopped.bz2");
    const after = await dacdAsync(["dump", "--format", "reference", "--batch", "3", "--out", still, ...cfg]);
    expect(after.code).toBe(0);
    expect((await readFile(still)).equals(await readFile(live))).toBe(true);
  }, 180_000);
});
