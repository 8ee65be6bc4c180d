import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { DacdError } from "../../src/errors.js";
import {
  AvailabilityGateway,
  FeederGateway,
  type HttpClientOptions,
  type RequestOutcome,
} from "../../src/poller/gateway/gateway-client.js";
import { toolAvailable } from "../helpers/tool-required.js";

interface Seen {
  method: string;
  url: string;
  body: string;
  accept: string | undefined;
  contentType: string | undefined;
}
type Handler = (req: IncomingMessage, res: ServerResponse, n: number) => void;

interface TestServer {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

const servers: TestServer[] = [];
const clients: { close(): Promise<void> }[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function listen(server: Server, protocol: "http" | "https", handler: Handler): Promise<TestServer> {
  const seen: Seen[] = [];
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({
        method: req.method ?? "",
        url: req.url ?? "",
        body: Buffer.concat(chunks).toString("utf8"),
        accept: req.headers.accept,
        contentType: req.headers["content-type"],
      });
      handler(req, res, seen.length);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const ts: TestServer = {
    url: `${protocol}://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  servers.push(ts);
  return ts;
}

function startServer(handler: Handler): Promise<TestServer> {
  return listen(createServer(), "http", handler);
}

function json(res: ServerResponse, value: unknown, status = 200): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function text(res: ServerResponse, body: string, status = 200): void {
  res.writeHead(status, { "content-type": "application/str", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

const FAST = { retry: { attempts: 4, baseDelayMs: 2, maxDelayMs: 10 }, timeoutMs: 2_000 };

function availability(url: string, extra: Partial<HttpClientOptions> = {}): AvailabilityGateway {
  const gw = new AvailabilityGateway({ baseUrl: url, ...FAST, ...extra });
  clients.push(gw);
  return gw;
}

function feeder(url: string, variant: "P" | "G", extra: Partial<HttpClientOptions> = {}): FeederGateway {
  const gw = new FeederGateway({ baseUrl: url, variant, ...FAST, ...extra });
  clients.push(gw);
  return gw;
}

async function gatewayError(p: Promise<unknown>): Promise<DacdError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(DacdError);
    expect((e as DacdError).code).toBe("GATEWAY");
    return e as DacdError;
  }
  throw new Error("expected a GATEWAY error");
}

const UPDATE = { vaults: {}, vault_root: "ab", orders: {}, order_root: "cd", prev_batch_id: 6 };
const SIG = {
  batch_id: 7,
  signature: "0x" + "11".repeat(65),
  member_key: "0xAbC",
  claim_hash: "0x" + "22".repeat(32),
};

describe("AvailabilityGateway.getBatchData", () => {
  it("returns the update and sends the expected request", async () => {
    const srv = await startServer((_req, res) => json(res, { update: UPDATE }));
    const gw = availability(srv.url);
    expect(await gw.getBatchData(7)).toEqual(UPDATE);
    expect(srv.seen).toHaveLength(1);
    expect(srv.seen[0]).toMatchObject({
      method: "GET",
      url: "/availability_gateway/get_batch_data?batch_id=7",
      accept: "application/json",
    });
  });

  it("sends validate_rollup only when set", async () => {
    const srv = await startServer((_req, res) => json(res, { update: UPDATE }));
    const gw = availability(srv.url);
    await gw.getBatchData(1, true);
    await gw.getBatchData(2, false);
    await gw.getBatchData(3, undefined);
    expect(srv.seen.map((s) => s.url)).toEqual([
      "/availability_gateway/get_batch_data?batch_id=1&validate_rollup=True",
      "/availability_gateway/get_batch_data?batch_id=2&validate_rollup=False",
      "/availability_gateway/get_batch_data?batch_id=3",
    ]);
  });

  it("keeps a path prefix of the base URL", async () => {
    const srv = await startServer((_req, res) => json(res, { update: null }));
    await availability(`${srv.url}/prefix/`).getBatchData(0);
    expect(srv.seen[0]?.url).toBe("/prefix/availability_gateway/get_batch_data?batch_id=0");
  });

  it("returns null for {update: null}", async () => {
    const srv = await startServer((_req, res) => json(res, { update: null }));
    expect(await availability(srv.url).getBatchData(7)).toBeNull();
  });

  it("retries a burst of 503s, then succeeds", async () => {
    const srv = await startServer((_req, res, n) =>
      n <= 3 ? text(res, "busy", 503) : json(res, { update: UPDATE }),
    );
    const retries: [string, number, string][] = [];
    const results: [string, RequestOutcome][] = [];
    const gw = availability(srv.url, {
      onRetry: (e, a, r) => retries.push([e, a, r]),
      onResult: (e, o) => results.push([e, o]),
    });
    expect(await gw.getBatchData(7)).toEqual(UPDATE);
    expect(srv.seen).toHaveLength(4);
    expect(retries.map((r) => r[1])).toEqual([1, 2, 3]);
    expect(retries[0]?.[0]).toBe("get_batch_data");
    expect(retries[0]?.[2]).toContain("HTTP 503");
    expect(results).toHaveLength(1);
    expect(results[0]?.[1]).toMatchObject({ kind: "ok", attempts: 4, status: 200 });
  });

  it("gives up after the configured attempts", async () => {
    const srv = await startServer((_req, res) => text(res, "bad gateway", 502));
    const results: RequestOutcome[] = [];
    const e = await gatewayError(
      availability(srv.url, {
        retry: { attempts: 3, baseDelayMs: 1 },
        onResult: (_e, o) => results.push(o),
      }).getBatchData(42),
    );
    expect(srv.seen).toHaveLength(3);
    expect(e.batchId).toBe(42);
    expect(e.message).toContain("batch 42");
    expect(e.message).toContain("get_batch_data");
    expect(e.message).toContain("HTTP 502: bad gateway");
    expect(e.message).toContain("gave up after 3 attempts");
    expect(e.httpStatus).toBe(502); // decisions read the status here, not in the message
    expect(results).toEqual([expect.objectContaining({ kind: "http_status", status: 502, attempts: 3 })]);
  });

  it("retries a hanging server on timeout, then fails", async () => {
    const srv = await startServer(() => undefined);
    const started = Date.now();
    const e = await gatewayError(
      availability(srv.url, { timeoutMs: 150, retry: { attempts: 2 } }).getBatchData(1),
    );
    expect(srv.seen).toHaveLength(2);
    expect(e.message).toMatch(/timeout/i);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("retries after a timeout and succeeds when the server answers", async () => {
    const srv = await startServer((_req, res, n) => (n === 1 ? undefined : json(res, { update: null })));
    expect(await availability(srv.url, { timeoutMs: 150 }).getBatchData(1)).toBeNull();
    expect(srv.seen).toHaveLength(2);
  });

  it("retries a connection reset", async () => {
    const srv = await startServer((req, res, n) =>
      n <= 2 ? req.socket.destroy() : json(res, { update: UPDATE }),
    );
    const reasons: string[] = [];
    expect(await availability(srv.url, { onRetry: (_e, _a, r) => reasons.push(r) }).getBatchData(5)).toEqual(
      UPDATE,
    );
    expect(srv.seen).toHaveLength(3);
    expect(reasons).toHaveLength(2);
  });

  it("retries a truncated body, and fails when it stays truncated", async () => {
    const truncate = (res: ServerResponse): void => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "100" });
      res.write('{"update": {"va');
      setTimeout(() => res.socket?.destroy(), 5);
    };
    const once = await startServer((_req, res, n) =>
      n === 1 ? truncate(res) : json(res, { update: UPDATE }),
    );
    expect(await availability(once.url).getBatchData(5)).toEqual(UPDATE);
    expect(once.seen).toHaveLength(2);

    const always = await startServer((_req, res) => truncate(res));
    const e = await gatewayError(availability(always.url, { retry: { attempts: 2 } }).getBatchData(5));
    expect(always.seen).toHaveLength(2);
    expect(e.message).toContain("gave up after 2 attempts");
  });

  it("rejects malformed JSON without retrying", async () => {
    const srv = await startServer((_req, res) => text(res, '{"update": {'));
    const e = await gatewayError(availability(srv.url).getBatchData(9));
    expect(srv.seen).toHaveLength(1);
    expect(e.message).toMatch(/batch 9: get_batch_data: answer is not valid JSON/);
  });

  it("rejects answers of the wrong shape", async () => {
    const answers: unknown[] = [{}, [], 5, { update: 5 }, { update: [1] }, { update: "x" }, null];
    const srv = await startServer((_req, res, n) => json(res, answers[n - 1]));
    const gw = availability(srv.url);
    const messages: string[] = [];
    for (let i = 0; i < answers.length; i++) messages.push((await gatewayError(gw.getBatchData(i))).message);
    expect(messages[0]).toContain('no "update" key');
    expect(messages[1]).toContain("not a JSON object");
    expect(messages[3]).toContain('"update" is not an object');
    expect(srv.seen).toHaveLength(answers.length);
  });

  it("rejects an empty body", async () => {
    const srv = await startServer((_req, res) => text(res, ""));
    expect((await gatewayError(availability(srv.url).getBatchData(1))).message).toContain("empty body");
  });

  it("enforces the body size limit", async () => {
    const big = { update: { pad: "x".repeat(5_000) } };
    const srv = await startServer((_req, res) => json(res, big));
    const e = await gatewayError(availability(srv.url, { maxBodyBytes: 1_000 }).getBatchData(1));
    expect(e.message).toContain("too large");
    expect(srv.seen).toHaveLength(1);

    const chunked = await startServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(big));
    });
    const e2 = await gatewayError(availability(chunked.url, { maxBodyBytes: 1_000 }).getBatchData(1));
    expect(e2.message).toContain("too large");
  });

  it("retries connection refused, then fails naming the error", async () => {
    const srv = await startServer(() => undefined);
    const url = srv.url;
    await servers.pop()?.close();
    const reasons: string[] = [];
    const e = await gatewayError(
      availability(url, { retry: { attempts: 3 }, onRetry: (_e, _a, r) => reasons.push(r) }).getBatchData(1),
    );
    expect(reasons).toHaveLength(2);
    expect(e.message).toContain("ECONNREFUSED");
  });

  it("stops at once when the shutdown signal aborts", async () => {
    const srv = await startServer(() => undefined);
    const ac = new AbortController();
    const results: RequestOutcome[] = [];
    const gw = availability(srv.url, {
      signal: ac.signal,
      timeoutMs: 10_000,
      onResult: (_e, o) => results.push(o),
    });
    setTimeout(() => ac.abort(), 50);
    const started = Date.now();
    const e = await gatewayError(gw.getBatchData(1));
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(e.message).toContain("aborted");
    expect(results[0]?.kind).toBe("aborted");
  });

  it("survives hooks that throw", async () => {
    const srv = await startServer((_req, res, n) =>
      n === 1 ? text(res, "", 503) : json(res, { update: null }),
    );
    const gw = availability(srv.url, {
      onRetry: () => {
        throw new Error("hook");
      },
      onResult: () => {
        throw new Error("hook");
      },
    });
    expect(await gw.getBatchData(1)).toBeNull();
  });

  it("refuses an invalid batch id before sending", async () => {
    const srv = await startServer((_req, res) => json(res, { update: null }));
    await gatewayError(availability(srv.url).getBatchData(-1));
    await gatewayError(availability(srv.url).getBatchData(1.5));
    expect(srv.seen).toHaveLength(0);
  });
});

describe("AvailabilityGateway.approveNewRoots and getBlockchainType", () => {
  it("posts the committee signature as JSON and returns the text", async () => {
    const srv = await startServer((_req, res) => text(res, "signature accepted\n"));
    expect(await availability(srv.url).approveNewRoots(SIG)).toBe("signature accepted");
    expect(srv.seen[0]).toMatchObject({
      method: "POST",
      url: "/availability_gateway/approve_new_roots",
      contentType: "application/json",
      accept: "application/json",
    });
    expect(JSON.parse(srv.seen[0]?.body ?? "")).toEqual(SIG);
  });

  it("retries the POST on 503 and on a connection reset", async () => {
    const srv = await startServer((req, res, n) => {
      if (n === 1) text(res, "unavailable", 503);
      else if (n === 2) req.socket.destroy();
      else text(res, "signature accepted");
    });
    expect(await availability(srv.url).approveNewRoots(SIG)).toBe("signature accepted");
    expect(srv.seen).toHaveLength(3);
    for (const s of srv.seen) expect(JSON.parse(s.body)).toEqual(SIG);
  });

  it("does not retry a 400", async () => {
    const srv = await startServer((_req, res) => text(res, "Invalid signature", 400));
    const e = await gatewayError(availability(srv.url).approveNewRoots(SIG));
    expect(srv.seen).toHaveLength(1);
    expect(e.message).toContain("batch 7: approve_new_roots: HTTP 400: Invalid signature");
    expect(e.message).not.toContain("gave up");
  });

  it("returns other answers for the caller to judge", async () => {
    const srv = await startServer((_req, res) => text(res, '"signature rejected"'));
    expect(await availability(srv.url).approveNewRoots(SIG)).toBe("signature rejected");
  });

  it("reads the blockchain type, quoted or not", async () => {
    const srv = await startServer((_req, res, n) => text(res, n === 1 ? '"ETHEREUM"' : "STARKNET\n"));
    const gw = availability(srv.url);
    expect(await gw.getBlockchainType()).toBe("ETHEREUM");
    expect(await gw.getBlockchainType()).toBe("STARKNET");
    expect(srv.seen[0]).toMatchObject({ method: "POST", url: "/availability_gateway/get_blockchain_type" });
  });
});

describe("FeederGateway", () => {
  const answer = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? "").split("?")[0] ?? "";
    if (path.endsWith("get_last_batch_id")) json(res, 41);
    else if (path.endsWith("get_prev_batch_id")) json(res, 39);
    else json(res, { prev_batch_id: 39, sequence_number: 40, time_created: 1, txs_info: [] });
  };

  it("uses the variant P paths", async () => {
    const srv = await startServer(answer);
    const gw = feeder(srv.url, "P");
    expect(await gw.getLastBatchId()).toBe(41);
    expect(await gw.getPrevBatchId(41)).toBe(39);
    expect(await gw.getBatchInfo(41)).toMatchObject({ sequence_number: 40 });
    expect(srv.seen.map((s) => s.url)).toEqual([
      "/feeder_gateway/get_last_batch_id",
      "/get_prev_batch_id?batch_id=41",
      "/feeder_gateway/get_batch_info?batch_id=41",
    ]);
  });

  it("uses the variant G paths", async () => {
    const srv = await startServer(answer);
    const gw = feeder(srv.url, "G");
    await gw.getLastBatchId();
    await gw.getPrevBatchId(41);
    await gw.getBatchInfo(41);
    expect(srv.seen.map((s) => s.url)).toEqual([
      "/feeder_gateway/v2/get_last_batch_id",
      "/feeder_gateway/v2/get_prev_batch_id?batch_id=41",
      "/feeder_gateway/v2/get_batch_info?batch_id=41",
    ]);
  });

  it("rejects ids that are not integers and batch info that is not an object", async () => {
    const answers: unknown[] = ["12", 1.5, null, -2];
    const srv = await startServer((_req, res, n) => json(res, answers[n - 1]));
    const gw = feeder(srv.url, "G");
    for (const a of answers) {
      const e = await gatewayError(gw.getLastBatchId());
      expect(e.message).toContain("get_last_batch_id: last batch id is not an integer");
      expect(e.message).toContain(a === null ? "null" : String(a));
    }
    const bad = await startServer((_req, res) => json(res, [1, 2]));
    const e = await gatewayError(feeder(bad.url, "P").getBatchInfo(3));
    expect(e.message).toContain("batch 3: get_batch_info: batch information is not a JSON object");
  });
});

const haveOpenssl = toolAvailable(
  "openssl, which makes the mutual TLS tests' certificates (apt-get install openssl)",
  (() => {
    try {
      execFileSync("openssl", ["version"], { stdio: "ignore" });
      return true;
    } catch {
      return false;
    }
  })(),
);

describe.skipIf(!haveOpenssl)("mutual TLS", () => {
  const dir = mkdtempSync(join(tmpdir(), "dacd-tls-"));
  const pem: Record<string, { cert: string; key: string }> = {};

  function selfSigned(name: string, cn: string, san?: string): void {
    const keyFile = join(dir, `${name}.key`);
    const certFile = join(dir, `${name}.crt`);
    const args = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    args.push("-keyout", keyFile, "-out", certFile, "-days", "2", "-subj", `/CN=${cn}`);
    if (san) args.push("-addext", `subjectAltName=${san}`);
    execFileSync("openssl", args, { stdio: "ignore" });
    pem[name] = { cert: readFileSync(certFile, "utf8"), key: readFileSync(keyFile, "utf8") };
  }

  function certDir(name: string, client: string, server: string): string {
    const d = join(dir, name);
    mkdirSync(d);
    writeFileSync(join(d, "user.crt"), pem[client]?.cert ?? "");
    writeFileSync(join(d, "user.key"), pem[client]?.key ?? "");
    writeFileSync(join(d, "server.crt"), pem[server]?.cert ?? "");
    return d;
  }

  let good: string;
  let wrongServer: string;
  let wrongClient: string;

  beforeAll(() => {
    selfSigned("server", "localhost", "IP:127.0.0.1,DNS:localhost");
    selfSigned("other-server", "localhost", "IP:127.0.0.1,DNS:localhost");
    selfSigned("client", "dacd-member");
    selfSigned("other-client", "dacd-member");
    good = certDir("good", "client", "server");
    wrongServer = certDir("wrong-server", "client", "other-server");
    wrongClient = certDir("wrong-client", "other-client", "server");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function startTls(): Promise<TestServer> {
    const server = createHttpsServer({
      cert: pem.server?.cert,
      key: pem.server?.key,
      ca: pem.client?.cert,
      requestCert: true,
      rejectUnauthorized: true,
    });
    return listen(server, "https", (_req, res) => text(res, "ETHEREUM"));
  }

  it("is accepted with the right certificates directory", async () => {
    const srv = await startTls();
    const gw = availability(srv.url, { tls: { certificatesPath: good } });
    expect(await gw.getBlockchainType()).toBe("ETHEREUM");
    expect(srv.seen).toHaveLength(1);
  });

  it("is refused without a client certificate", async () => {
    const srv = await startTls();
    const gw = availability(srv.url, { tls: { ca: pem.server?.cert ?? "" }, retry: { attempts: 2 } });
    await gatewayError(gw.getBlockchainType());
    expect(srv.seen).toHaveLength(0);
  });

  it("is refused with a client certificate the server does not trust", async () => {
    const srv = await startTls();
    const gw = availability(srv.url, { tls: { certificatesPath: wrongClient }, retry: { attempts: 2 } });
    await gatewayError(gw.getBlockchainType());
    expect(srv.seen).toHaveLength(0);
  });

  it("refuses a server whose certificate is not server.crt, without retrying", async () => {
    const srv = await startTls();
    const retries: string[] = [];
    const gw = availability(srv.url, {
      tls: { certificatesPath: wrongServer },
      onRetry: (_e, _a, r) => retries.push(r),
    });
    const e = await gatewayError(gw.getBlockchainType());
    expect(e.message).toMatch(/certificate|signature/i);
    expect(retries).toEqual([]);
    expect(srv.seen).toHaveLength(0);
  });

  it("names a missing file of the certificates directory", () => {
    const d = certDir("missing-key", "client", "server");
    unlinkSync(join(d, "user.key"));
    let err: unknown;
    try {
      new AvailabilityGateway({ baseUrl: "https://127.0.0.1:1", tls: { certificatesPath: d } });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DacdError);
    expect((err as DacdError).code).toBe("CONFIG");
    expect((err as DacdError).message).toContain("user.key is missing");
  });

  it("rejects a key that does not match the certificate, and TLS on an http URL", () => {
    const d = certDir("mismatch", "client", "server");
    writeFileSync(join(d, "user.key"), pem["other-client"]?.key ?? "");
    expect(
      () => new AvailabilityGateway({ baseUrl: "https://127.0.0.1:1", tls: { certificatesPath: d } }),
    ).toThrow(/unusable TLS material/);
    expect(
      () => new AvailabilityGateway({ baseUrl: "http://127.0.0.1:1", tls: { certificatesPath: good } }),
    ).toThrow(/not an https URL/);
  });
});
