import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { startDaemon } from "../../src/app.js";
import { inspect } from "node:util";
import { storeProfile } from "../../src/inspect/inspect.js";
import { createLogger } from "../../src/logging.js";
import { scanBatchRecords } from "../../src/maintenance/records-check.js";
import { createSigner } from "../../src/signer/create-signer.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import { parseVerifySignAndStore } from "../../src/poller/member/batch-stages.js";
import { freePort } from "../helpers/free-port.js";
import { memberSetup, waitFor } from "../helpers/daemon.js";
import { VectorGateway } from "../helpers/vector-gateway.js";
import { loadChain, privateKeyBytes } from "../helpers/vectors.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A logger whose JSON lines are kept. */
function capturingLogger(): { log: ReturnType<typeof createLogger>; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString("utf8").split("\n")) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { log: createLogger({ level: "debug", destination }), lines };
}

async function setup(opts: { extra?: string; available?: number } = {}) {
  const { responses, expected } = loadChain("spot-chain");
  const gw = await new VectorGateway(responses, expected, "G").start();
  cleanups.push(() => gw.close());
  if (opts.available !== undefined) gw.available = opts.available;
  const port = await freePort();
  const s = await memberSetup({
    profile: "spot",
    privateKey: expected.private_key,
    gatewayUrl: gw.url,
    feeder: true,
    extra: [`metrics_port: ${port}`, opts.extra ?? ""].join("\n"),
  });
  cleanups.push(() => rm(s.dir, { recursive: true, force: true }));
  const { log, lines } = capturingLogger();
  const daemon = await startDaemon(s.config, { log, retryAttempts: 2, env: {} });
  cleanups.push(() => daemon.stop());
  const base = `http://127.0.0.1:${port}`;
  return { gw, expected, responses, daemon, base, lines, dir: s.dir };
}

/** Sample values of a Prometheus text exposition, keyed by `name{labels}` as printed. */
async function scrape(base: string): Promise<Map<string, number>> {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
  const out = new Map<string, number>();
  for (const line of (await res.text()).split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const i = line.lastIndexOf(" ");
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

async function probe(base: string, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("metrics and health endpoints", () => {
  it("after a vector chain is signed, /metrics shows the counts and the last batch", async () => {
    const { gw, expected, daemon, base } = await setup();
    const n = expected.batches.length;
    await waitFor(() => gw.accepted.length === n, 60_000, "all batches signed");
    await waitFor(() => daemon.member.state.phase === "idle", 10_000, "idle");
    const m = await scrape(base);
    expect(m.get("dacd_last_signed_batch_id")).toBe(n - 1);
    expect(m.get("dacd_feeder_last_batch_id")).toBe(n - 1);
    expect(m.get("dacd_batch_lag")).toBe(0);
    expect(m.get("dacd_batches_signed_total")).toBe(n);
    expect(m.get('dacd_batch_verify_seconds_count{tree="all"}')).toBe(n);
    expect(m.get('dacd_gateway_requests_total{endpoint="approve_new_roots",outcome="ok"}')).toBe(n);
    expect(m.get('dacd_gateway_requests_total{endpoint="get_batch_data",outcome="ok"}')).toBe(n);
    expect(m.get('dacd_gateway_requests_total{endpoint="get_last_batch_id",outcome="ok"}')).toBeGreaterThan(
      n,
    );
    expect(m.get("dacd_root_mismatch_total")).toBe(0);
    expect(m.get('dacd_batches_refused_total{reason="ROOT_MISMATCH"}')).toBe(0);
    expect(m.get("dacd_hashes_total")).toBeGreaterThan(100);
    expect(m.get("dacd_nodes_written_total")).toBeGreaterThan(0);
    expect(m.get('dacd_leaves_total{tree="vault"}')).toBeGreaterThan(0);
    expect(m.get("dacd_seconds_since_last_signature")).toBeLessThan(30);
    expect(m.get("dacd_store_size_bytes")).toBeGreaterThan(0);
    expect(m.get("dacd_disk_free_bytes")).toBeGreaterThan(0);
    expect(m.get("dacd_ready")).toBe(1);
    const info = [...m.keys()].find((k) => k.startsWith("dacd_info{"));
    expect(info).toContain(`member_key="${expected.member_key}"`);
    expect(info).toContain('chain="ethereum"');
    expect(info).toContain('version="0.1.0"');
    expect([...m.keys()].some((k) => k.startsWith("dacd_process_cpu_seconds_total"))).toBe(true);
    expect((await probe(base, "/healthz")).status).toBe(200);
    const ready = await probe(base, "/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ ok: true, status: "ok", lag: 0 });
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: "POST" })).status).toBe(405);
  });

  it("counts a root mismatch and refusals by reason", async () => {
    const { gw, base } = await setup({ available: 2 });
    await waitFor(() => gw.accepted.length === 2, 30_000, "two batches");
    // Batch 2 with a wrong vault root.
    const bad = structuredClone(gw.responses[2]!) as { update: Record<string, unknown> };
    bad.update.vault_root = "0".repeat(63) + "1";
    gw.responses[2] = bad;
    // Only up to batch 2: the chain's batch 3 builds on batch 1, so with it served the member would
    // rightly move past the refused batch 2 (abandoned by the operator) and sign batch 3.
    gw.available = 3;
    await waitFor(
      async () => ((await scrape(base)).get("dacd_root_mismatch_total") ?? 0) >= 1,
      20_000,
      "a root mismatch",
    );
    const m = await scrape(base);
    expect(m.get('dacd_batches_refused_total{reason="ROOT_MISMATCH"}')).toBeGreaterThanOrEqual(1);
    expect(m.get("dacd_last_signed_batch_id")).toBe(1);
    expect(gw.accepted.length).toBe(2);
    expect(gw.posts.some((p) => p.batch_id === 2)).toBe(false);
  });

  it("/readyz turns unready when the gateway stops answering and ready again when it returns", async () => {
    const { gw, expected, base } = await setup();
    await waitFor(() => gw.accepted.length === expected.batches.length, 60_000, "all batches signed");
    await waitFor(async () => (await probe(base, "/readyz")).status === 200, 10_000, "ready");

    gw.interceptor = (_req, res) => {
      res.writeHead(503).end("down for maintenance");
      return true;
    };
    await waitFor(async () => (await probe(base, "/readyz")).status === 503, 20_000, "unready");
    const down = await probe(base, "/readyz");
    expect(down.body).toMatchObject({ ok: false, status: "gateway_unreachable" });
    expect(String(down.body.reason)).toMatch(/HTTP 503/);
    expect((await probe(base, "/healthz")).status).toBe(200); // alive all the same
    const m = await scrape(base);
    expect(m.get("dacd_ready")).toBe(0);
    expect(m.get("dacd_gateway_reachable")).toBe(0);
    expect(
      m.get('dacd_gateway_requests_total{endpoint="get_last_batch_id",outcome="http_status"}'),
    ).toBeGreaterThan(0);
    expect(m.get('dacd_gateway_retries_total{endpoint="get_last_batch_id"}')).toBeGreaterThan(0);

    // Sockets destroyed: a transport failure, still unready.
    gw.interceptor = (_req, res) => {
      res.socket?.destroy();
      return true;
    };
    await new Promise((r) => setTimeout(r, 300));
    expect((await probe(base, "/readyz")).status).toBe(503);

    gw.interceptor = undefined;
    await waitFor(async () => (await probe(base, "/readyz")).status === 200, 30_000, "ready again");
  });

  it("/readyz reports lagging while the member is more than max_ready_lag batches behind", async () => {
    let release: (() => void) | undefined;
    const held = new Promise<void>((r) => (release = r));
    const { gw, expected, base } = await setup({ extra: "max_ready_lag: 1" });
    gw.interceptor = async (_req, _res, url) => {
      if (url.pathname.endsWith("/get_batch_data") && url.searchParams.get("batch_id") === "1") await held;
      return false;
    };
    await waitFor(
      async () => {
        const { body } = await probe(base, "/readyz");
        return body.status === "lagging" && body.next_batch_id === 1;
      },
      20_000,
      "lagging at batch 1",
    );
    const r = await probe(base, "/readyz");
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ lag: 5, max_ready_lag: 1 });
    release!();
    await waitFor(() => gw.accepted.length === expected.batches.length, 60_000, "all batches signed");
    await waitFor(async () => (await probe(base, "/readyz")).status === 200, 10_000, "ready");
  });
});

describe("scheduled jobs", () => {
  it("back up the store while the daemon signs; each backup is consistent and restorable; runs never overlap", async () => {
    const backupDir = await mkdtemp(join(tmpdir(), "dacd-backups-"));
    cleanups.push(() => rm(backupDir, { recursive: true, force: true }));
    const { gw, expected, responses, daemon, lines } = await setup({
      available: 1,
      extra: [
        "schedule:",
        '  check: "*/1 * * * * *"',
        '  backup: "*/1 * * * * *"',
        `backup_dir: ${backupDir}`,
        "backup_keep: 20",
      ].join("\n"),
    });
    const n = expected.batches.length;
    // Batches arrive one at a time while the jobs run.
    while (gw.available < n) {
      await waitFor(() => gw.accepted.length === gw.available, 30_000, `batch ${gw.available - 1}`);
      await new Promise((r) => setTimeout(r, 700));
      gw.available++;
    }
    await waitFor(() => gw.accepted.length === n, 30_000, "all batches signed");
    await waitFor(
      () => lines.filter((l) => l.job === "backup" && l.outcome === "ok").length >= 5,
      20_000,
      "five backups",
    );
    await daemon.stop();

    const outcomes = lines.filter((l) => l.job !== undefined && l.outcome !== undefined);
    expect(outcomes.filter((l) => l.outcome === "failed")).toEqual([]);
    expect(outcomes.filter((l) => l.job === "check" && l.outcome === "ok").length).toBeGreaterThanOrEqual(3);
    // Never two runs at once: every "started" is followed by its own outcome before the next "started".
    let running: unknown;
    for (const l of lines) {
      if (l.msg === `job ${String(l.job)} started`) {
        expect(running, `job ${String(l.job)} started while ${String(running)} ran`).toBeUndefined();
        running = l.job;
      } else if (l.job !== undefined && (l.outcome === "ok" || l.outcome === "failed")) {
        expect(l.job).toBe(running);
        running = undefined;
      }
    }

    const names = (await readdir(backupDir)).sort();
    expect(names.filter((x) => x.endsWith(".partial"))).toEqual([]);
    const engine = createEngine("auto");
    const signer = createSigner("ethereum", privateKeyBytes(expected.private_key));
    const seen = new Set<number>();
    for (const name of names) {
      const store = await LevelStore.open(join(backupDir, name));
      try {
        const check = await scanBatchRecords(store);
        expect(check.problems, `${name}: ${inspect(check.problems)}`).toEqual([]);
        const cursor = await store.getCursor();
        const last = cursor?.last_accepted_batch_id ?? -1;
        seen.add(last);
        if (last >= 0) {
          const record = await store.getBatch(last);
          expect(record?.roots).toEqual(expected.batches[last]!.roots);
        }
        // Restorable: a member continuing from the backup verifies every later batch to the same claim.
        const { profile } = await storeProfile(store);
        const ctx = {
          profile,
          engine,
          store,
          signer,
          options: { validateOrders: true, validateRollup: true },
        };
        for (let id = last + 1; id < n; id++) {
          const { record } = await parseVerifySignAndStore(ctx, id, responses[id]!.update);
          expect(record.roots).toEqual(expected.batches[id]!.roots);
          expect(record.claim_hash).toBe(expected.batches[id]!.claim_hash);
          expect(record.signature).toBe(expected.batches[id]!.signature);
        }
      } finally {
        await store.close();
      }
    }
    await engine.close?.();
    // Backups were taken at several points of the chain, not only at the end.
    expect(seen.size).toBeGreaterThanOrEqual(2);
  });

  it("refuses a backup schedule without backup_dir, and a prune schedule without prune_keep_batches", async () => {
    const { responses, expected } = loadChain("spot-chain");
    const gw = await new VectorGateway(responses, expected, "G").start();
    cleanups.push(() => gw.close());
    for (const [extra, message] of [
      ['schedule:\n  backup: "0 3 * * *"', /backup_dir/],
      ['schedule:\n  prune: "0 4 * * *"', /prune_keep_batches/],
    ] as const) {
      const s = await memberSetup({
        profile: "spot",
        privateKey: expected.private_key,
        gatewayUrl: gw.url,
        extra,
      });
      cleanups.push(() => rm(s.dir, { recursive: true, force: true }));
      await expect(
        startDaemon(s.config, { log: createLogger({ level: "silent" }), env: {} }),
      ).rejects.toMatchObject({ code: "CONFIG", message: expect.stringMatching(message) as unknown });
    }
  });
});
