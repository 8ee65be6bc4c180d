import { request } from "node:http";
import { connect, type Socket } from "node:net";

/**
 * `connections` half-open connections from `localAddress` (each sends the start of a request and
 * never its end), each opened again `reconnectMs` after the server closes it, until `stop`.
 */
export function halfOpenFlood(opts: {
  port: number;
  host: string;
  localAddress: string;
  connections: number;
  reconnectMs: number;
}): { stop(): void; readonly attempts: number } {
  let live = true;
  let attempts = 0;
  const sockets = new Set<Socket>();
  const open = (): void => {
    if (!live) return;
    attempts++;
    const s = connect({ port: opts.port, host: opts.host, localAddress: opts.localAddress });
    sockets.add(s);
    s.on("connect", () => s.write("GET /v1/batches/latest HTTP/1.1\r\nHost: dacd\r\n"));
    s.on("data", () => undefined);
    s.on("error", () => undefined);
    s.on("close", () => {
      sockets.delete(s);
      if (live) setTimeout(open, opts.reconnectMs);
    });
  };
  for (let i = 0; i < opts.connections; i++) open();
  return {
    stop() {
      live = false;
      for (const s of sockets) s.destroy();
    },
    get attempts() {
      return attempts;
    },
  };
}

export interface RawAnswer {
  status: number;
  body: string;
}

/** One GET on a connection of its own from `localAddress`; rejects on a reset or after `timeoutMs`. */
export function getFrom(
  url: string,
  path: string,
  opts: { localAddress?: string; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: hostname,
        port,
        path,
        headers: opts.headers,
        localAddress: opts.localAddress,
        agent: false,
        timeout: opts.timeoutMs ?? 5000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString() }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error("no answer in time")));
    req.on("error", reject);
    req.end();
  });
}

/**
 * GET `path` from `localAddress` for `seconds`, a new connection per try and a try every
 * `intervalMs` at most: how many tries there were and how many got a 200.
 */
export async function answersFrom(
  url: string,
  path: string,
  opts: { localAddress: string; seconds: number; intervalMs: number },
): Promise<{ tries: number; answers: number; seconds: number; failures: Record<string, number> }> {
  const started = performance.now();
  const until = started + opts.seconds * 1000;
  let tries = 0;
  let answers = 0;
  const failures: Record<string, number> = {};
  while (performance.now() < until) {
    const at = performance.now();
    tries++;
    const outcome = await getFrom(url, path, { localAddress: opts.localAddress }).then(
      (a) => (a.status === 200 ? "ok" : String(a.status)),
      (err: NodeJS.ErrnoException) => err.code ?? err.message,
    );
    if (outcome === "ok") answers++;
    else failures[outcome] = (failures[outcome] ?? 0) + 1;
    const wait = at + opts.intervalMs - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  return { tries, answers, seconds: (performance.now() - started) / 1000, failures };
}
