import { chmod, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/daemon.js";
import { createLogger } from "../../src/logging.js";
import { backupStore, listBackups } from "../../src/service/backup.js";
import { scanBatchRecords } from "../../src/maintenance/records-check.js";
import { JobRunner } from "../../src/service/jobs.js";
import { DacdMetrics } from "../../src/service/metrics.js";
import { createSystemdNotifier } from "../../src/service/systemd.js";
import { loadNativeAddon } from "../../src/native/addon.js";
import { createSigner } from "../../src/signer/create-signer.js";
import { batchKey } from "../../src/storage/keys.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import { keptHeights, makeProfile } from "../../src/model/profile.js";
import { parseVerifySignAndStore } from "../../src/poller/member/batch-stages.js";
import { loadChain, privateKeyBytes } from "../helpers/vectors.js";
import { levelDb } from "../../src/storage/level-db.js";
import { nativeAvailable } from "../helpers/native-required.js";

const haveAddon = nativeAvailable("the native addon (sdNotify)", loadNativeAddon() !== null);

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await removeTempDirs();
});

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _e, cb) {
      for (const l of chunk.toString().split("\n")) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { log: createLogger({ level: "debug", destination }), lines };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A store holding the spot-chain's batches, all accepted, as the daemon leaves it. */
async function signedStore(): Promise<LevelStore> {
  const { responses, expected } = loadChain("spot-chain");
  const store = await LevelStore.open(join(await tempDir("dacd-ops-store-"), "data"));
  cleanups.push(() => store.close());
  const profile = makeProfile("spot");
  await store.meta.ensureIdentity({
    profile: profile.name,
    heights: keptHeights(profile, true),
  });
  const engine = createEngine("auto");
  const signer = createSigner("ethereum", privateKeyBytes(expected.private_key));
  const ctx = { profile, engine, store, signer, options: { validateOrders: true, validateRollup: true } };
  for (let id = 0; id < responses.length; id++) {
    const { record } = await parseVerifySignAndStore(ctx, id, responses[id]!.update);
    await store.batches.moveCursor({ kind: "accepted", record, at: new Date() });
  }
  await engine.close?.();
  return store;
}

describe("JobRunner", () => {
  it("never overlaps: a tick while the job runs is skipped and logged; different jobs take turns", async () => {
    const { log, lines } = capture();
    const metrics = new DacdMetrics({ processDefaults: false });
    const runner = new JobRunner(log, metrics);
    let running = 0;
    let maxRunning = 0;
    const runs: string[] = [];
    const work = (name: string, ms: number) => async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      runs.push(name);
      await sleep(ms);
      running--;
      return { name };
    };
    runner.add({ name: "slow", schedule: "*/1 * * * * *", run: work("slow", 1600) });
    runner.add({ name: "quick", schedule: "*/1 * * * * *", run: work("quick", 50) });
    runner.start();
    const okRuns = (job: string) => lines.filter((l) => l.outcome === "ok" && l.job === job).length;
    await waitFor(
      () => okRuns("slow") >= 2 && okRuns("quick") >= 1 && lines.some((l) => l.outcome === "skipped"),
      15_000,
      "two slow runs, a quick one and a skipped tick",
    );
    await runner.stop();
    const after = runs.length;
    await sleep(1200); // longer than a tick: none may come after stop
    expect(runs.length).toBe(after); // nothing after stop
    expect(maxRunning).toBe(1);
    expect(runs.filter((r) => r === "slow").length).toBeGreaterThanOrEqual(2);
    expect(runs.filter((r) => r === "quick").length).toBeGreaterThanOrEqual(1);
    const skipped = lines.filter((l) => l.outcome === "skipped");
    expect(skipped.length).toBeGreaterThan(0);
    expect(String(skipped[0]!.msg)).toMatch(/skipped: its previous run/);
    expect(lines.filter((l) => l.outcome === "ok" && l.job === "slow").length).toBeGreaterThanOrEqual(2);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/dacd_job_runs_total\{task="slow",outcome="skipped"\} [1-9]/);
    expect(text).toMatch(/dacd_job_last_success_timestamp_seconds\{task="slow"\} \d/);
  });

  it("stop() aborts the running job and waits for it; a failing job is logged, not thrown", async () => {
    const { log, lines } = capture();
    const runner = new JobRunner(log);
    let sawAbort = false;
    let started = false;
    runner.add({
      name: "long",
      schedule: "0 0 1 1 *",
      run: async (signal) => {
        started = true;
        while (!signal.aborted) await sleep(10);
        sawAbort = true;
        throw signal.reason;
      },
    });
    runner.add({
      name: "broken",
      schedule: "0 0 1 1 *",
      run: () => Promise.reject(new Error("disk on fire")),
    });
    expect(await runner.trigger("broken")).toBe(false);
    expect(lines.find((l) => l.job === "broken" && l.outcome)).toMatchObject({
      outcome: "failed",
      error: "disk on fire",
    });
    const run = runner.trigger("long");
    await waitFor(() => started, 5000, "the long job to start");
    expect(await runner.trigger("long")).toBe(false); // busy: skipped
    await runner.stop();
    expect(sawAbort).toBe(true);
    expect(await run).toBe(false);
    expect(lines.find((l) => l.job === "long" && l.outcome === "aborted")).toBeDefined();
    expect(await runner.trigger("broken")).toBe(false); // stopped
  });
});

describe("backup", () => {
  it("copies a consistent store, keeps only the newest `keep`, and removes leftovers", async () => {
    const store = await signedStore();
    const dir = await tempDir("dacd-backup-");
    await mkdir(join(dir, ".2020-01-01T00-00-00.000Z.partial"));
    const times = ["2024-05-01T10:00:00.000Z", "2024-05-01T10:00:01.000Z", "2024-05-01T10:00:01.000Z"];
    const made: string[] = [];
    for (const t of times) {
      const r = await backupStore(store, dir, { keep: 2, now: () => new Date(t), chunkEntries: 7 });
      made.push(r.path);
      expect(r.entries).toBeGreaterThan(10);
    }
    expect(await listBackups(dir)).toEqual(["2024-05-01T10-00-01.000Z", "2024-05-01T10-00-01.000Z-1"]);
    expect((await readdir(dir)).sort()).toEqual(["2024-05-01T10-00-01.000Z", "2024-05-01T10-00-01.000Z-1"]);
    const copy = await LevelStore.open(made[2]!);
    try {
      expect(await copy.getCursor()).toEqual(await store.getCursor());
      expect(await copy.meta.identity()).toEqual(await store.meta.identity());
      for (let id = 0; id < 6; id++) expect(await copy.getBatch(id)).toEqual(await store.getBatch(id));
      expect((await scanBatchRecords(copy)).problems).toEqual([]);
    } finally {
      await copy.close();
    }
    await expect(backupStore(store, store.dir, { keep: 1 })).rejects.toMatchObject({ code: "CONFIG" });
  });
});

describe("light consistency check", () => {
  it("passes a store as the daemon leaves it", async () => {
    const store = await signedStore();
    const r = await scanBatchRecords(store, { chunk: 2 });
    expect(r).toMatchObject({
      batches: 6,
      first_batch_id: 0,
      last_batch_id: 5,
      next_batch_id: 6,
      problems: [],
    });
  });

  it("finds a missing batch, a wrong sequence number and a claim that does not match the roots", async () => {
    const store = await signedStore();
    const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
    await levelDb(store).del(batchKey(1));
    const b4 = (await store.getBatch(4))!;
    await levelDb(store).put(batchKey(4), enc({ ...b4, sequence_number: 9 }));
    const b5 = (await store.getBatch(5))!;
    await levelDb(store).put(batchKey(5), enc({ ...b5, claim_hash: "0x" + "00".repeat(32) }));
    const { problems } = await scanBatchRecords(store);
    expect(problems.some((p) => /batch 1 is missing/.test(p))).toBe(true);
    expect(problems.some((p) => /batch 4: sequence number 9/.test(p))).toBe(true);
    expect(problems.some((p) => /batch 5: claim hash/.test(p))).toBe(true);
  });
});

describe("systemd notifications", () => {
  it("are off without NOTIFY_SOCKET", async () => {
    const n = await createSystemdNotifier({
      log: createLogger({ level: "silent" }),
      env: { PATH: "/nonexistent" },
    });
    expect(n.enabled).toBe(false);
  });

  it("send READY and watchdog pings through systemd-notify when told to (DACD_SYSTEMD_NOTIFY=exec)", async () => {
    const dir = await tempDir("dacd-notify-");
    const record = join(dir, "calls");
    const fake = join(dir, "systemd-notify");
    await writeFile(fake, `#!/bin/sh\necho "$@" >> "${record}"\n`);
    await chmod(fake, 0o755);
    let healthy = true;
    const n = await createSystemdNotifier({
      log: createLogger({ level: "silent" }),
      env: {
        PATH: dir,
        NOTIFY_SOCKET: "/run/systemd/notify",
        WATCHDOG_USEC: "1000000",
        DACD_SYSTEMD_NOTIFY: "exec",
      },
      healthy: async () => healthy,
    });
    expect(n.enabled).toBe(true);
    await n.ready("signing");
    const pings = async () =>
      (await readFile(record, "utf8").catch(() => ""))
        .split("\n")
        .filter((c) => c === `--pid=${process.pid} WATCHDOG=1`);
    await waitFor(async () => (await pings()).length >= 1, 5000, "a watchdog ping");
    healthy = false;
    const before = (await readFile(record, "utf8")).split("\n").filter(Boolean);
    await sleep(1100); // longer than the ping interval: none may come while unhealthy
    n.close();
    const calls = (await readFile(record, "utf8")).split("\n").filter(Boolean);
    expect(calls[0]).toBe(`--pid=${process.pid} --ready --status=signing`);
    expect(before.filter((c) => c === `--pid=${process.pid} WATCHDOG=1`).length).toBeGreaterThanOrEqual(1);
    expect(calls.length).toBe(before.length); // no ping while unhealthy
  });

  for (const kind of ["a path", "an abstract name"] as const) {
    it.skipIf(!haveAddon)(
      `send READY and watchdog pings from dacd's own process to NOTIFY_SOCKET as ${kind}`,
      async () => {
        const dir = await tempDir("dacd-notify-");
        const socket =
          kind === "a path" ? join(dir, "notify.sock") : `@dacd-test-${process.pid}-${Date.now()}`;
        const received = await datagramReceiver(socket);
        let healthy = true;
        const n = await createSystemdNotifier({
          log: createLogger({ level: "silent" }),
          // No systemd-notify on PATH: the addon sends, from this process.
          env: { PATH: "/nonexistent", NOTIFY_SOCKET: socket, WATCHDOG_USEC: "1000000" },
          healthy: async () => healthy,
        });
        expect(n.enabled).toBe(true);
        await n.ready("signing");
        await waitFor(() => received.messages.length >= 2, 5000, "a watchdog ping");
        healthy = false;
        const before = received.messages.length;
        await sleep(1100);
        await n.stopping();
        await waitFor(() => received.messages.at(-1) === "STOPPING=1", 5000, "STOPPING=1");
        n.close();
        received.close();
        expect(received.messages[0]).toBe("READY=1\nSTATUS=signing");
        expect(received.messages.slice(1, before)).toEqual(new Array(before - 1).fill("WATCHDOG=1"));
        expect(received.messages.length).toBe(before + 1); // no ping while unhealthy
      },
    );
  }

  it.skipIf(!haveAddon)("log a socket that is not there, and keep running", async () => {
    const lines: string[] = [];
    const log = createLogger({
      level: "warn",
      destination: { write: (l: string) => void lines.push(l) },
    });
    const n = await createSystemdNotifier({ log, env: { NOTIFY_SOCKET: "/nonexistent/notify.sock" } });
    await n.ready();
    const warned = JSON.parse(lines.join("")) as { msg: string; error: string };
    expect(warned.msg).toBe("sd_notify READY=1 failed");
    expect(warned.error).toMatch(/No such file or directory/);
  });
});

/** A Unix datagram socket bound at `socket` (python3, which node-gyp needs anyway), and what it got. */
async function datagramReceiver(socket: string): Promise<{ messages: string[]; close(): void }> {
  const script = [
    "import socket, sys",
    "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)",
    "n = sys.argv[1]",
    "s.bind('\\0' + n[1:] if n.startswith('@') else n)",
    "print('bound', flush=True)",
    "while True: print(s.recv(4096).decode().encode('unicode_escape').decode(), flush=True)",
  ].join("\n");
  const child = spawn("python3", ["-c", script, socket], { stdio: ["ignore", "pipe", "inherit"] });
  const messages: string[] = [];
  let bound = false;
  createInterface({ input: child.stdout }).on("line", (line) => {
    if (!bound && line === "bound") bound = true;
    else messages.push(line.replaceAll("\\n", "\n"));
  });
  await waitFor(() => bound, 10_000, "the receiver to bind");
  return { messages, close: () => child.kill() };
}
