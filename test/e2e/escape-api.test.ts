import { request } from "node:http";
import { connect, type Socket } from "node:net";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Daemon } from "../../src/app.js";
import { startEscapeApi } from "../../src/api/escape-api.js";
import { verifyProof, type Proof } from "../../src/escape/proof.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import { dacdAsync } from "../helpers/dacd-cli.js";
import { memberSetup, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { freePort } from "../helpers/free-port.js";
import { VectorGateway } from "../helpers/vector-gateway.js";
import { loadChain } from "../helpers/vectors.js";

/**
 * The escape API of a daemon signing the spot chain from a local gateway: its answers equal the
 * CLI's, its proofs verify, 1,000 proof requests (10 at a time) while it signs all succeed, and
 * hostile requests get the right status while the daemon keeps signing.
 */

const ROOT = join(import.meta.dirname, "..", "..");
let gw: VectorGateway;
let daemon: Daemon;
let dir: string;
let configPath: string;
let api: string;
let work: string;
const cleanups: (() => Promise<void>)[] = [];

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request with a raw path (no normalisation of `..`, no encoding). */
function get(path: string, method = "GET"): Promise<Answer> {
  const url = new URL(api);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, method, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          body: Buffer.concat(chunks).toString("utf8"),
        }),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

const json = (a: Answer): Record<string, unknown> => JSON.parse(a.body) as Record<string, unknown>;

beforeAll(async () => {
  const { responses, expected } = loadChain("spot-chain");
  gw = await new VectorGateway(responses, expected, "G").start();
  cleanups.push(() => gw.close());
  gw.available = 2;
  const port = await freePort();
  const setup = await memberSetup({
    profile: "spot",
    privateKey: expected.private_key,
    gatewayUrl: gw.url,
    feeder: true,
    extra: [
      `escape_api_port: ${port}`,
      "escape_api_rate_limit: 100000",
      "escape_api_max_concurrency: 8",
      // Every request of get() opens a connection of its own.
      "escape_api_connection_rate: 100000",
    ].join("\n"),
  });
  dir = setup.dir;
  configPath = setup.configPath;
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  daemon = await startQuietDaemon(setup.config);
  cleanups.push(() => daemon.stop());
  api = daemon.escapeApi!.url;
  work = await mkdtemp(join(tmpdir(), "dacd-escape-api-"));
  cleanups.push(() => rm(work, { recursive: true, force: true }));
  // The gateway counts a signature before the daemon stores its acceptance: wait for the cursor.
  await waitFor(() => daemon.member.state.nextBatchId === 2, 60_000, "two batches signed");
}, 120_000);

afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("escape API", () => {
  it("answers as the CLI does; its proofs verify with dacd verify-proof", async () => {
    const cfg = ["--config", configPath];
    const latest = await get("/v1/batches/latest");
    expect(latest.status).toBe(200);
    const status = JSON.parse((await dacdAsync(["status", ...cfg])).out) as {
      last_signed_batch: { batch_id: number; sequence_number: number; roots: unknown };
    };
    expect(json(latest)).toMatchObject({
      batch_id: 1,
      sequence_number: status.last_signed_batch.sequence_number,
      roots: status.last_signed_batch.roots,
    });
    expect(status.last_signed_batch.batch_id).toBe(1);

    const dump = await dacdAsync(["dump", ...cfg, "--out", join(work, "d1")]);
    expect(dump.code).toBe(0);
    for (const [tree, file] of [
      ["vault", "vaults.csv"],
      ["rollup_vault", "rollup_vaults.csv"],
      ["order", "orders.csv"],
    ] as const) {
      const d = await get(`/v1/dump/${tree}`);
      expect(d.status).toBe(200);
      expect(d.headers["x-dacd-batch-id"]).toBe("1");
      expect(d.body).toBe(await readFile(join(work, "d1", file), "utf8"));
    }
    const head = await get("/v1/dump/vault", "HEAD");
    expect(head.status).toBe(200);
    expect(head.body).toBe("");

    const vaults = (await readFile(join(work, "d1", "vaults.csv"), "utf8")).split("\n").slice(1, 3);
    const ids = [...vaults.map((l) => l.split(",")[0]!), "0", String(2 ** 31 - 1)];
    for (const id of ids) {
      for (const batch of ["", "?batch=0"]) {
        const args = batch ? ["--batch", "0"] : [];
        const proof = await get(`/v1/proof/vault/${id}${batch}`);
        expect(proof.status).toBe(200);
        const cli = await dacdAsync(["proof", ...cfg, "vault", id, ...args]);
        expect(json(proof)).toEqual(JSON.parse(cli.out));
        const leaf = await get(`/v1/leaf/vault/${id}${batch}`);
        const cliLeaf = await dacdAsync(["show", "leaf", ...cfg, "vault", id, ...args]);
        expect(json(leaf)).toEqual(JSON.parse(cliLeaf.out));
      }
    }
    const proof = await get(`/v1/proof/vault/${ids[0]}`);
    await writeFile(join(work, "proof.json"), proof.body);
    const verdict = await dacdAsync([
      "verify-proof",
      join(work, "proof.json"),
      "--root",
      (json(latest).roots as Record<string, string>).vault!,
    ]);
    expect(verdict.code).toBe(0);
    expect(JSON.parse(verdict.out)).toMatchObject({ valid: true });

    const doc = await get("/v1/openapi.json");
    expect(json(doc)).toEqual(
      JSON.parse(await readFile(join(ROOT, "docs", "escape-api.openapi.json"), "utf8")),
    );
  }, 300_000);

  it("hostile requests get the right status; the daemon keeps signing, memory stays bounded", async () => {
    const cases: [string, number, string?][] = [
      [`/v1/proof/vault/${2 ** 31}`, 400, "id"],
      [`/v1/leaf/vault/${2n ** 300n}`, 400, "id"],
      ["/v1/proof/vault/-1", 400, "id"],
      ["/v1/proof/vault/0x10", 400, "id"],
      ["/v1/proof/vault/1e3", 400, "id"],
      ["/v1/proof/vault/007", 400, "id"],
      ["/v1/proof/vault/%2e%2e", 400, "id"],
      ["/v1/proof/vault/1?batch=-1", 400, "batch"],
      ["/v1/proof/vault/1?batch=abc", 400, "batch"],
      ["/v1/proof/vault/1?batch=99999999999999999999", 400, "batch"],
      ["/v1/proof/vault/1?batch=1&batch=0", 400, "batch"],
      ["/v1/proof/vault/1?batch=99", 404, "batch"],
      ["/v1/proof/vault/1?evil=1", 400, "evil"],
      ["/v1/batches/latest?batch=1", 400, "batch"],
      ["/v1/proof/position/1", 404, "tree"],
      ["/v1/dump/positions", 404, "tree"],
      ["/v1/proof/..%2f..%2fetc/passwd", 404, "tree"],
      ["/v1/leaf/../../etc/passwd", 404],
      ["/v1/../../../etc/passwd", 404],
      ["/etc/passwd", 404],
      ["/v2/batches/latest", 404],
      ["/v1/proof/vault", 404],
      [`/v1/proof/vault/1?batch=${"1".repeat(2000)}`, 414],
      [`/v1/proof/vault/1?${"a=b&".repeat(5000)}`, 414],
    ];
    for (const [path, want, parameter] of cases) {
      const a = await get(path);
      expect([path, a.status]).toEqual([path, want]);
      if (want < 414) {
        expect(a.headers["content-type"]).toBe("application/json");
        expect(json(a).parameter).toBe(parameter);
      }
    }
    const { body: metrics } = await daemon.metrics.render();
    expect(metrics).toMatch(/dacd_escape_api_requests_total\{route="proof",status="400"\} (\d+)/);
    expect(metrics).toMatch(/dacd_escape_api_requests_total\{route="unknown",status="404"\} [1-9]/);
    expect(metrics).toMatch(/dacd_escape_api_request_seconds_count\{route="proof"\} [1-9]/);
    for (const method of ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"]) {
      const a = await get("/v1/batches/latest", method);
      expect([method, a.status]).toEqual([method, 405]);
      expect(a.headers.allow).toBe("GET, HEAD");
    }

    // 2,000 idle connections while the next batches are released: the ones beyond the server's
    // bound are closed, the others time out; the daemon signs meanwhile, and serves again after.
    const rssBefore = process.memoryUsage().rss;
    const sockets: Socket[] = [];
    const url = new URL(api);
    let closedByServer = 0;
    for (let i = 0; i < 2000; i++) {
      const s = connect(Number(url.port), url.hostname);
      s.on("error", () => undefined);
      s.on("close", () => closedByServer++);
      sockets.push(s);
    }
    gw.available = 4;
    await waitFor(
      () => daemon.member.state.nextBatchId === 4,
      60_000,
      "batches 2 and 3 signed beside 2,000 idle connections",
    );
    const rssDuring = process.memoryUsage().rss;
    const server = daemon.escapeApi!.server;
    const open = (): Promise<number> =>
      new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
    expect(await open()).toBeLessThanOrEqual(256);
    // The server closes those it took once its header time-out passes (and the rest at once).
    await waitFor(async () => (await open()) === 0, 30_000, "idle connections closed by the server");
    expect(closedByServer).toBeGreaterThan(1000);
    for (const s of sockets) s.destroy();
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(200 << 20);
    console.log(`RSS: ${rssBefore >> 20} MiB before, ${rssDuring >> 20} MiB with 2,000 idle connections`);
    const after = await get("/v1/batches/latest");
    expect(after.status).toBe(200);
    expect(json(after).batch_id).toBe(3);

    // A per-client rate limit: 429 with Retry-After (an API of its own, at 2 requests a second).
    const slow = await startEscapeApi({
      host: "127.0.0.1",
      port: 0,
      store: daemon.store,
      engine: createEngine("wasm"),
      rateLimit: 2,
      maxConcurrency: 2,
    });
    try {
      const statuses: number[] = [];
      let retryAfter: string | undefined;
      for (let i = 0; i < 8; i++) {
        const r = await fetch(`${slow.url}/v1/batches/latest`);
        statuses.push(r.status);
        if (r.status === 429) {
          retryAfter = r.headers.get("retry-after") ?? undefined;
          expect(await r.json()).toMatchObject({ status: 429 });
        } else await r.arrayBuffer();
      }
      expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
      expect(statuses).toContain(429);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    } finally {
      await slow.close();
    }
  }, 300_000);

  it("1,000 proof requests, 10 at a time, while the daemon signs: all valid", async () => {
    const vaults = (await readFile(join(work, "d1", "vaults.csv"), "utf8"))
      .split("\n")
      .slice(1)
      .filter(Boolean)
      .map((l) => l.split(",")[0]!);
    const engine = createEngine("wasm");
    const vectorRoots = new Map(
      loadChain("spot-chain").expected.batches.map((b) => [b.batch_id, b.roots.vault!] as const),
    );
    const signedAt = new Map<number, number>();
    const onAccepted = setInterval(() => {
      for (const p of gw.accepted) if (!signedAt.has(p.batch_id)) signedAt.set(p.batch_id, performance.now());
    }, 5);
    let errors = 0;
    let invalid = 0;
    let next = 0;
    const released = new Map<number, number>();
    const worker = async (): Promise<void> => {
      while (next < 1000) {
        const i = next++;
        const id = i % 3 === 0 ? String((i * 7919) % 2 ** 31) : vaults[i % vaults.length]!;
        const r = await fetch(`${api}/v1/proof/vault/${id}`);
        if (r.status !== 200) {
          errors++;
          await r.arrayBuffer();
          continue;
        }
        const proof = (await r.json()) as Proof & { batch_id: number; root: string };
        const verdict = await verifyProof(engine, proof);
        // Valid, and against the vectors' root of its batch, not only the root the daemon put in it.
        if (!verdict.valid || proof.root !== vectorRoots.get(proof.batch_id)) invalid++;
      }
    };
    const release = async (b: number): Promise<void> => {
      released.set(b, performance.now());
      gw.available = b + 1;
      await waitFor(() => signedAt.has(b), 60_000, `batch ${b} signed`);
    };
    await release(4); // without load
    const load = Promise.all(Array.from({ length: 10 }, worker));
    await release(5);
    await load;
    clearInterval(onAccepted);
    await engine.close?.();
    expect(errors).toBe(0);
    expect(invalid).toBe(0);
    const delays = [4, 5].map((b) => Math.round(signedAt.get(b)! - released.get(b)!));
    console.log(
      `release to signature: ${delays[0]} ms without load, ${delays[1]} ms under 10 concurrent proof requests`,
    );
    expect(gw.acceptedIds()).toEqual([0, 1, 2, 3, 4, 5]);
  }, 300_000);
});
