/**
 * The findings of the adversarial rounds, each as an attack on a real daemon: huge and trickled
 * bodies, credentials in URLs, a FIFO as key file, a data_dir under /proc, a gateway that
 * switches the chain kind, and on the escape API a one-address connection flood and over-long
 * request targets.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkfifo } from "../helpers/mkfifo.js";
import { readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isDacdError } from "../../src/errors.js";
import { freePort } from "../helpers/free-port.js";
import { answersFrom, getFrom, halfOpenFlood } from "../helpers/connection-flood.js";
import { memberSetup, spotChainMember, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { VectorGateway } from "../helpers/vector-gateway.js";
import { loadChain } from "../helpers/vectors.js";

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");
const KEY = "0x" + "11".repeat(32);
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A gateway whose get_batch_data answer is written by `body`; the rest answers as a plain gateway. */
async function hostileServer(body: (res: ServerResponse) => void): Promise<string> {
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname.endsWith("/get_blockchain_type")) return void res.end("ETHEREUM");
    if (url.pathname.endsWith("/get_batch_data")) return body(res);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Streams `total` bytes: `head`, then `unit` repeated, with backpressure, until the client leaves. */
function stream(head: string, unit: string, total: number) {
  return (res: ServerResponse): void => {
    res.writeHead(200, { "content-type": "application/json" });
    const block = Buffer.from(unit.repeat(Math.ceil((1 << 20) / unit.length)));
    let sent = 0;
    let closed = false;
    res.on("close", () => (closed = true));
    res.write(head);
    const pump = (): void => {
      while (!closed && sent < total) {
        sent += block.length;
        if (!res.write(block)) return void res.once("drain", pump);
      }
      if (!closed) res.end();
    };
    pump();
  };
}

interface Run {
  child: ChildProcess;
  out: () => string;
  exit: Promise<number | null>;
}

function startDaemonProcess(configPath: string): Run {
  const child = spawn(process.execPath, [BIN, "run", "--config", configPath], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exit = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exit;
  });
  return { child, out: () => out, exit };
}

async function peakRssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

const MB = 1_000_000;
const GIB = 1024 ** 3;

describe("hostile bodies: refused within bounds, SIGTERM answered", () => {
  const cases: [string, string, string, number, string][] = [
    // name, head, repeated unit, bytes, what the refusal says
    ["500 MB of [[[[", "", "[", 500 * MB, "nested deeper than"],
    ["500 MB of empty arrays", '{"update":[', "[],", 500 * MB, "elements"],
    ["500 MB of tiny objects", '{"update":[', '{"a":1},', 500 * MB, "elements"],
    ["500 MB of one number", '{"update":[', "1", 500 * MB, "between two tokens"],
  ];
  for (const [name, head, unit, total, says] of cases) {
    it(`${name} (max_response_bytes 600 MB)`, async () => {
      const url = await hostileServer(stream(head, unit, total));
      const setup = await memberSetup({
        profile: "spot",
        privateKey: KEY,
        gatewayUrl: url,
        extra: "max_response_bytes: 600000000\nhttp_request_deadline_s: 60",
        timeoutS: 30,
      });
      cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
      const run = startDaemonProcess(setup.configPath);
      await waitFor(() => run.out().includes("answer refused"), 90_000, `refusal of ${name}`);
      expect(run.out()).toContain(says);
      const rss = await peakRssBytes(run.child.pid!);
      const t0 = Date.now();
      run.child.kill("SIGTERM");
      const code = await run.exit;
      const stopMs = Date.now() - t0;
      console.log(`${name}: peak RSS ${(rss / 2 ** 20).toFixed(0)} MiB, SIGTERM answered in ${stopMs} ms`);
      expect(code).toBe(0);
      expect(rss).toBeLessThan(2 * GIB);
      expect(stopMs).toBeLessThan(20_000);
    }, 120_000);
  }

  it("500 MB of well-formed vault entries are refused by the default size cap", async () => {
    const vault =
      '"31387557":{"stark_key":"0xb02d8a9a830aa5fd8befbe3faa76dba85466dfdf70c7bb9c705de611712b","token":"0x17d3ddb3802f28561a16e4fa5f70e7b544f506f0e4a83bc64053037cda1a411","balance":"8759484507490742094"},';
    const url = await hostileServer(stream('{"update":{"prev_batch_id":-1,"vaults":{', vault, 500 * MB));
    const setup = await memberSetup({ profile: "spot", privateKey: KEY, gatewayUrl: url, timeoutS: 30 });
    cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
    const run = startDaemonProcess(setup.configPath);
    await waitFor(() => run.out().includes("too large"), 90_000, "size refusal");
    expect(run.out()).toContain(`limit ${256 * 1024 * 1024} bytes`);
    const rss = await peakRssBytes(run.child.pid!);
    const t0 = Date.now();
    run.child.kill("SIGTERM");
    expect(await run.exit).toBe(0);
    console.log(
      `vault entries: peak RSS ${(rss / 2 ** 20).toFixed(0)} MiB, SIGTERM answered in ${Date.now() - t0} ms`,
    );
    expect(rss).toBeLessThan(2 * GIB);
  }, 120_000);
});

describe("a trickled body", () => {
  it("turns /readyz unready within one deadline and the gateway metric to 0", async () => {
    let trickling = false;
    const { responses, expected } = loadChain("spot-chain");
    const gw = await new VectorGateway(responses, expected, "G").start();
    cleanups.push(() => gw.close());
    gw.available = 1;
    const timers: NodeJS.Timeout[] = [];
    cleanups.push(async () => timers.forEach((t) => clearInterval(t)));
    gw.interceptor = (_req, res, url) => {
      if (!trickling || !url.pathname.endsWith("/get_batch_data")) return false;
      res.writeHead(200, { "content-type": "application/json" });
      const t = setInterval(() => res.write(" "), 1000); // a byte a second, never the end
      timers.push(t);
      res.on("close", () => clearInterval(t));
      return true;
    };
    const port = await freePort();
    const setup = await memberSetup({
      profile: "spot",
      privateKey: expected.private_key,
      gatewayUrl: gw.url,
      feeder: true,
      extra: `metrics_port: ${port}\nhttp_request_deadline_s: 3`,
      timeoutS: 2,
    });
    cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
    const daemon = await startQuietDaemon(setup.config);
    cleanups.push(() => daemon.stop());
    const readyz = async (): Promise<number> => (await fetch(`http://127.0.0.1:${port}/readyz`)).status;
    await waitFor(async () => (await readyz()) === 200, 30_000, "ready");
    trickling = true;
    gw.available = 2;
    const t0 = Date.now();
    await waitFor(async () => (await readyz()) === 503, 30_000, "unready");
    const ms = Date.now() - t0;
    console.log(`trickle: /readyz unready after ${ms} ms (deadline 3 s, idle time-out 2 s)`);
    expect(daemon.member.state.failing?.reason).toMatch(/deadline of 3 s/);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toMatch(/^dacd_gateway_reachable 0/m);
    expect(ms).toBeLessThan(15_000);
  }, 60_000);

  it("turns /readyz unready after max_stall_s without progress, whatever the deadline, and ready once it resumes", async () => {
    const { responses, expected } = loadChain("spot-chain");
    const gw = await new VectorGateway(responses, expected, "G").start();
    cleanups.push(() => gw.close());
    gw.available = 1;
    // Batch 1's real answer, its first bytes a byte a second while `trickling`, the rest at once after.
    let trickling = false;
    const held: (() => void)[] = [];
    const timers: NodeJS.Timeout[] = [];
    cleanups.push(async () => timers.forEach((t) => clearInterval(t)));
    gw.interceptor = (_req, res, url) => {
      if (!trickling || !url.pathname.endsWith("/get_batch_data") || url.searchParams.get("batch_id") !== "1")
        return false;
      const body = Buffer.from(JSON.stringify({ update: responses[1]!.update }));
      res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
      let sent = 0;
      const t = setInterval(() => res.write(body.subarray(sent, ++sent)), 1000);
      timers.push(t);
      res.on("close", () => clearInterval(t));
      held.push(() => {
        clearInterval(t);
        res.end(body.subarray(sent));
      });
      return true;
    };
    const port = await freePort();
    const setup = await memberSetup({
      profile: "spot",
      privateKey: expected.private_key,
      gatewayUrl: gw.url,
      feeder: true,
      // The default deadline (300 s): only progress can turn the member unready in time.
      extra: `metrics_port: ${port}\nmax_stall_s: 2`,
      timeoutS: 5,
    });
    cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
    const daemon = await startQuietDaemon(setup.config);
    cleanups.push(() => daemon.stop());
    const readyz = async (): Promise<{ status: number; body: Record<string, unknown> }> => {
      const r = await fetch(`http://127.0.0.1:${port}/readyz`);
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    };
    await waitFor(async () => (await readyz()).status === 200, 30_000, "ready");
    // Idle and caught up for longer than max_stall_s: still ready.
    await new Promise((r) => setTimeout(r, 3000));
    expect((await readyz()).status).toBe(200);

    trickling = true;
    gw.available = 2;
    const t0 = Date.now();
    await waitFor(async () => (await readyz()).status === 503, 15_000, "unready");
    const unreadyMs = Date.now() - t0;
    const { body } = await readyz();
    expect(body).toMatchObject({ status: "stalled", max_stall_s: 2, next_batch_id: 1 });
    expect(body.reason).toMatch(
      /^batch 1, announced by the feeder gateway, has not advanced for \d+ s \(max_stall_s 2\)/,
    );
    expect(daemon.member.state.gatewayReachable).toBe(true);
    expect(held.length).toBeGreaterThan(0);

    trickling = false;
    const t1 = Date.now();
    held.splice(0).forEach((finish) => finish());
    await waitFor(async () => (await readyz()).status === 200, 15_000, "ready again");
    const readyMs = Date.now() - t1;
    await waitFor(() => daemon.member.state.lastSigned?.batch_id === 1, 15_000, "batch 1 signed");
    expect((await readyz()).status).toBe(200);
    console.log(
      `stall: /readyz unready ${unreadyMs} ms after batch 1 started trickling (max_stall_s 2, deadline 300 s), ready ${readyMs} ms after the answer completed`,
    );
    expect(unreadyMs).toBeLessThan(8_000);
  }, 60_000);
});

describe("small holes", () => {
  it("refuses a gateway URL with credentials in one line, without the password", async () => {
    const setup = await memberSetup({ profile: "spot", privateKey: KEY, gatewayUrl: "http://127.0.0.1:9" });
    cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
    const yaml = await readFile(setup.configPath, "utf8");
    await writeFile(
      setup.configPath,
      yaml.replaceAll("http://127.0.0.1:9", "http://alice:s3cr3t-pw@127.0.0.1:9"),
    );
    const r = spawnSync(process.execPath, [BIN, "run", "--config", setup.configPath], {
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(r.status).toBe(78);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain("must not carry credentials");
    expect(r.stderr + r.stdout).not.toContain("s3cr3t");
  });

  it("refuses a FIFO as key file at once instead of waiting for a writer", async () => {
    const setup = await memberSetup({ profile: "spot", privateKey: KEY, gatewayUrl: "http://127.0.0.1:9" });
    cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
    const fifo = join(setup.dir, "fifo.key");
    mkfifo(fifo);
    await writeFile(
      setup.configPath,
      (await readFile(setup.configPath, "utf8")).replace("member.key", "fifo.key"),
    );
    const r = spawnSync(process.execPath, [BIN, "run", "--config", setup.configPath], {
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(r.signal).toBeNull();
    expect(r.status).toBe(78);
    expect(r.stderr).toContain("is not a regular file");
  });

  it("refuses a data_dir under /proc in one line instead of hanging", async () => {
    const setup = await memberSetup({ profile: "spot", privateKey: KEY, gatewayUrl: "http://127.0.0.1:9" });
    cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
    await writeFile(
      setup.configPath,
      (await readFile(setup.configPath, "utf8")).replace("data_dir: data", "data_dir: /proc/dacd-data"),
    );
    const r = spawnSync(process.execPath, [BIN, "run", "--config", setup.configPath], {
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(r.signal).toBeNull();
    expect(r.status).toBe(78);
    expect(r.stderr.trim()).toMatch(
      /^dacd: data_dir \/proc\/dacd-data is not a writable directory: it is on procfs/,
    );
  });

  it("pins the chain kind: a gateway that later answers STARKNET is refused, never followed", async () => {
    const { gw, setup } = await spotChainMember(cleanups);
    // Two batches only: with fetches running ahead the cursor can pass 2 between two looks.
    gw.available = 2;
    const daemon = await startQuietDaemon(setup.config);
    await waitFor(() => daemon.member.state.nextBatchId === 2, 60_000, "two batches");
    await daemon.stop();
    const posts = gw.posts.length;
    gw.blockchainType = "STARKNET";
    const err = await startQuietDaemon(setup.config).catch((e: unknown) => e);
    expect(isDacdError(err, "CONFIG")).toBe(true);
    expect((err as Error).message).toMatch(
      /now reports a starknet chain, but this member signs for a ethereum chain/,
    );
    expect(gw.posts.length).toBe(posts);
    // The same when the store's record is lost: the journal's signatures still say secp256k1.
    await rm(setup.config.dataDir, { recursive: true });
    const again = await startQuietDaemon(setup.config).catch((e: unknown) => e);
    expect((again as Error).message).toMatch(/pinned by the signatures in the claims journal/);
    // A configured chain that contradicts the pin is refused too.
    gw.blockchainType = "ETHEREUM";
    const err2 = await startQuietDaemon({ ...setup.config, chain: "starknet" }).catch((e: unknown) => e);
    expect((err2 as Error).message).toMatch(/chain kind conflict/);
  }, 90_000);
});

/** A `dacd run` process signing the spot chain with its escape API (and metrics) on free ports. */
async function escapeApiDaemon(extra = ""): Promise<{ api: string; metrics: string; run: Run }> {
  const [apiPort, metricsPort] = [await freePort(), await freePort()];
  const { setup } = await spotChainMember(
    cleanups,
    undefined,
    `escape_api_port: ${apiPort}\nmetrics_port: ${metricsPort}\n${extra}`,
  );
  const run = startDaemonProcess(setup.configPath);
  const api = `http://127.0.0.1:${apiPort}`;
  await waitFor(
    async () => (await getFrom(api, "/v1/batches/latest").catch(() => undefined))?.status === 200,
    60_000,
    "a batch signed and served by the escape API",
  );
  return { api, metrics: `http://127.0.0.1:${metricsPort}/metrics`, run };
}

describe("the escape API under attack", () => {
  it("300 reconnecting half-open connections from one address: a second address is still answered", async () => {
    // The second address is limited by the request rate alone; the flood by the connection limits.
    const { api, metrics } = await escapeApiDaemon("escape_api_rate_limit: 50");
    const flood = halfOpenFlood({
      port: Number(new URL(api).port),
      host: "127.0.0.1",
      localAddress: "127.0.0.1",
      connections: 300,
      reconnectMs: 100,
    });
    cleanups.push(async () => flood.stop());
    // Let the flood take what it can (it fills the global cap within a second, unlimited).
    await new Promise((r) => setTimeout(r, 2000));
    const second = await answersFrom(api, "/v1/batches/latest", {
      localAddress: "127.0.0.2",
      seconds: 20,
      intervalMs: 100,
    });
    flood.stop();
    const perMinute = Math.round((second.answers / second.seconds) * 60);
    const refused = await (await fetch(metrics)).text();
    console.log(
      `one-address flood (${flood.attempts} connections opened): the second address got ` +
        `${second.answers} answers in ${second.tries} tries over ${second.seconds.toFixed(1)} s ` +
        `(${perMinute} a minute, a try every 100 ms at most); failures ${JSON.stringify(second.failures)}; ` +
        (refused.match(/^dacd_escape_api_connections_refused_total.*$/gm) ?? []).join(", "),
    );
    expect(second.tries).toBeGreaterThan(50);
    expect(second.answers).toBeGreaterThanOrEqual(second.tries * 0.95);
    expect(refused).toMatch(/^dacd_escape_api_connections_refused_total\{reason="per_address"\} [1-9]/m);
  }, 120_000);

  it("new connections of one address beyond its rate are closed as they are accepted", async () => {
    const { api, metrics } = await escapeApiDaemon(
      "escape_api_rate_limit: 1000\nescape_api_connection_rate: 5",
    );
    // One connection after the other as fast as they are answered: a burst of 10, then 5 a second.
    const outcomes: string[] = [];
    const started = performance.now();
    for (let i = 0; i < 60; i++)
      outcomes.push(
        await getFrom(api, "/v1/batches/latest", { localAddress: "127.0.0.3" }).then(
          (a) => String(a.status),
          (err: NodeJS.ErrnoException) => err.code ?? err.message,
        ),
      );
    const seconds = (performance.now() - started) / 1000;
    const answered = outcomes.filter((o) => o === "200").length;
    expect(outcomes.slice(0, 10)).toEqual(Array<string>(10).fill("200"));
    expect(answered).toBeLessThanOrEqual(10 + Math.ceil(5 * seconds) + 1);
    expect(new Set(outcomes.filter((o) => o !== "200"))).toEqual(new Set(["ECONNRESET"]));
    // Another address is not charged for them.
    expect((await getFrom(api, "/v1/batches/latest", { localAddress: "127.0.0.4" })).status).toBe(200);
    expect(await (await fetch(metrics)).text()).toMatch(
      /^dacd_escape_api_connections_refused_total\{reason="rate"\} [1-9]/m,
    );
  }, 90_000);

  it("an over-long request target gets 414, over-long headers 431", async () => {
    const { api } = await escapeApiDaemon("escape_api_rate_limit: 1000");
    const status = async (path: string, headers?: Record<string, string>): Promise<number> =>
      (await getFrom(api, path, { headers })).status;
    expect(await status(`/v1/proof/vault/1?batch=${"1".repeat(1100)}`)).toBe(414);
    // Beyond the bound of the header size Node's parser had (8 KiB), and beyond the parser's own.
    expect(await status(`/v1/proof/vault/1?batch=${"1".repeat(10_000)}`)).toBe(414);
    expect(await status(`/v1/proof/vault/1?${"a=b&".repeat(25_000)}`)).toBe(414);
    expect(await status("/v1/batches/latest", { "x-pad": "a".repeat(9000) })).toBe(431);
    expect(await status("/v1/batches/latest", { "x-pad": "a".repeat(100_000) })).toBe(431);
    expect(await status("/v1/batches/latest", { "x-pad": "a".repeat(7000) })).toBe(200);
  }, 90_000);
});
