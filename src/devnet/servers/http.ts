/** A minimal node:http server with exact-path routing, JSON helpers and request faults. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Faults, Scope } from "../faults.js";
import { TxError } from "../txs/fields.js";

export interface Request {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly body: string;
}

export interface Response {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

export type Handler = (req: Request) => Response | Promise<Response>;

/** An error answered as JSON `{code, message}` with the given status. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export const json = (value: unknown, status = 200): Response => ({
  status,
  contentType: "application/json",
  body: JSON.stringify(value),
});
export const text = (body: string, contentType = "text/plain", status = 200): Response => ({
  status,
  contentType,
  body,
});

const MAX_BODY = 4 * 1024 * 1024;

export function parseJsonBody(req: Request): unknown {
  try {
    return JSON.parse(req.body) as unknown;
  } catch {
    throw new HttpError(400, "MALFORMED_REQUEST", "body: not valid JSON");
  }
}

/** A required non-negative integer query parameter. */
export function intParam(req: Request, name: string, min = 0): number {
  const v = req.query.get(name);
  if (v === null) throw new HttpError(400, "MALFORMED_REQUEST", `${name}: missing query parameter`);
  if (!/^-?[0-9]{1,15}$/.test(v) || Number(v) < min) {
    throw new HttpError(
      400,
      "MALFORMED_REQUEST",
      `${name}: expected an integer >= ${min}, got ${JSON.stringify(v)}`,
    );
  }
  return Number(v);
}

export class Router {
  private readonly routes = new Map<string, Map<string, Handler>>();

  on(method: string, path: string, handler: Handler): this {
    let m = this.routes.get(path);
    if (!m) this.routes.set(path, (m = new Map()));
    m.set(method, handler);
    return this;
  }

  async handle(req: Request): Promise<Response> {
    const m = this.routes.get(req.path);
    if (!m) return json({ code: "NOT_FOUND", message: `no endpoint ${req.path}` }, 404);
    const h = m.get(req.method);
    if (!h)
      return json(
        { code: "METHOD_NOT_ALLOWED", message: `${req.path} takes ${[...m.keys()].join(", ")}` },
        405,
      );
    try {
      return await h(req);
    } catch (e) {
      if (e instanceof HttpError) return json({ code: e.code, message: e.message }, e.status);
      if (e instanceof TxError) return json({ code: e.code, message: e.message }, e.status);
      return json({ code: "INTERNAL_ERROR", message: e instanceof Error ? e.message : String(e) }, 500);
    }
  }
}

function readBody(req: IncomingMessage): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on("end", () => resolve(size > MAX_BODY ? null : Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

export interface Listening {
  readonly server: Server;
  readonly url: string;
  close(): Promise<void>;
}

/** Paths under this prefix are the devnet's own admin API: never subject to faults. */
export const ADMIN_PREFIX = "/devnet/";

export async function listen(port: number, scope: Scope, router: Router, faults: Faults): Promise<Listening> {
  const hanging = new Set<NodeJS.Timeout>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      const body = await readBody(req);
      const send = (r: Response, truncate = false): void => {
        const buf = Buffer.from(r.body, "utf8");
        const out = truncate ? buf.subarray(0, Math.floor(buf.length / 2)) : buf;
        res.writeHead(r.status, { "Content-Type": r.contentType, "Content-Length": out.length });
        res.end(out);
      };
      if (body === null)
        return send(json({ code: "BODY_TOO_LARGE", message: `body exceeds ${MAX_BODY} bytes` }, 413));
      const fault = url.pathname.startsWith(ADMIN_PREFIX) ? null : faults.onRequest(scope, url.pathname);
      if (fault?.kind === "unavailable") {
        return send(json({ code: "SERVICE_UNAVAILABLE", message: "devnet fault: unavailable" }, 503));
      }
      if (fault?.kind === "hang") {
        await new Promise<void>((resolve) => {
          const t = setTimeout(() => {
            hanging.delete(t);
            resolve();
          }, fault.ms);
          hanging.add(t);
        });
        if (res.destroyed) return;
      }
      const r = await router.handle({
        method: req.method ?? "GET",
        path: url.pathname,
        query: url.searchParams,
        body,
      });
      send(r, fault?.kind === "truncate");
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const addr = server.address() as AddressInfo;
  return {
    server,
    url: `http://127.0.0.1:${addr.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of hanging) clearTimeout(t);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
