/**
 * The operations listener: `/metrics` (Prometheus text), `/healthz` and `/readyz` (JSON, 200 or
 * 503). Off unless `metrics_port` is set; bound to `metrics_host` (default 127.0.0.1). Read-only:
 * only GET and HEAD are answered.
 */
import { createServer, type Server } from "node:http";
import type { Check } from "./health.js";
import type { DacdMetrics } from "./metrics.js";
import { closeHttp, listenHttp } from "../util/http-listen.js";

export interface OpsHandlers {
  metrics: DacdMetrics;
  healthz: () => Promise<Check>;
  readyz: () => Check | Promise<Check>;
}

export interface OpsServerOptions extends OpsHandlers {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
}

export interface OpsServer {
  readonly server: Server;
  /** e.g. http://127.0.0.1:9464 */
  readonly url: string;
  close(): Promise<void>;
}

/** A listener bound before the member starts; it answers 503 "starting" until `attach`. */
export interface OpsListener extends OpsServer {
  attach(handlers: OpsHandlers): void;
}

const STARTING: Check = { ok: false, status: "starting", reason: "dacd is starting" };

export async function startOpsServer(opts: OpsServerOptions): Promise<OpsServer> {
  const listener = await listenOpsServer(opts);
  listener.attach(opts);
  return listener;
}

/**
 * Binds metrics_host:metrics_port. `dacd run` calls it before the key is used and the member
 * starts, so that a port in use is one line and exit 78 before anything is signed.
 */
export async function listenOpsServer(opts: { host: string; port: number }): Promise<OpsListener> {
  let handlers: OpsHandlers | undefined;
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://dacd").pathname;
    const send = (status: number, contentType: string, body: string): void => {
      res.writeHead(status, { "content-type": contentType, "cache-control": "no-store" });
      res.end(req.method === "HEAD" ? undefined : body);
    };
    const json = (check: Check): void =>
      send(check.ok ? 200 : 503, "application/json", JSON.stringify(check) + "\n");
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      send(405, "text/plain", "method not allowed\n");
      return;
    }
    const handle = async (): Promise<void> => {
      if (!handlers) {
        if (path === "/metrics" || path === "/healthz" || path === "/readyz") json(STARTING);
        else send(404, "text/plain", "not found; try /metrics, /healthz or /readyz\n");
        return;
      }
      const opts = handlers;
      switch (path) {
        case "/metrics": {
          const { contentType, body } = await opts.metrics.render();
          send(200, contentType, body);
          return;
        }
        case "/healthz":
          json(await opts.healthz());
          return;
        case "/readyz":
          json(await opts.readyz());
          return;
        default:
          send(404, "text/plain", "not found; try /metrics, /healthz or /readyz\n");
      }
    };
    handle().catch((err: unknown) => {
      if (!res.headersSent) send(500, "text/plain", `internal error: ${String(err)}\n`);
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 5000;
  const url = await listenHttp(server, opts.host, opts.port, "metrics");
  return {
    server,
    url,
    attach: (h) => {
      handlers = h;
    },
    close: () => closeHttp(server),
  };
}
