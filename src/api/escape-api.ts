/**
 * The escape API: a read-only HTTP API for users who need their leaves and Merkle proofs to use
 * the escape hatch (docs/escape.md, "Getting your proof"). Off unless `escape_api_port` is set;
 * bound to `escape_api_host` (default 127.0.0.1). Every answer reads one LevelDB snapshot of the
 * store, so it is consistent at one batch while the daemon keeps signing.
 *
 * Limits, so that a hostile or careless client cannot slow the signing: GET and HEAD only; a
 * bounded URL and header size; a token bucket per client address (429 with Retry-After); bounded
 * concurrent answers and dumps (503 with Retry-After); time-outs for a request's headers, for a
 * JSON answer and for a dump whose reader stops reading; bounds on open connections, in all and per
 * client address, and on new connections a second per address (connection-gate.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { LevelStore } from "../storage/level-store.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import type { ExitSettings } from "../escape/exit/settings.js";
import { OPENAPI } from "./openapi.js";
import { RateLimiter } from "./rate-limit.js";
import { routeOf, type ApiRoute } from "./routes.js";
import { answerClientError } from "./client-error.js";
import { gateConnections, type ConnectionGate, type RefusedConnection } from "./connection-gate.js";
import { closeHttp, listenHttp } from "../util/http-listen.js";
import { ApiError, asApiError } from "./api-error.js";
import { AnswerSlots, withAnswerTimeout } from "./answer-slots.js";
import { DumpStreams } from "./dump-streams.js";
import { answerJson, type AnswerSource, type JsonRoute } from "./json-answers.js";
import { checkRequestLimits, MAX_HEAD_BYTES } from "./request-limits.js";
import { parseQuery } from "./request-params.js";
import { CACHE_LATEST_BATCH, CACHE_NAMED_BATCH, sendError, sendJson, sendPage } from "./responses.js";

export interface EscapeApiOptions {
  readonly host: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  readonly store: LevelStore;
  readonly engine: HashEngine;
  /** Requests a second per client address, on average (bursts of twice as many). */
  readonly rateLimit: number;
  /** JSON answers being computed at once. */
  readonly maxConcurrency: number;
  /** Dumps streaming at once (each walks a whole tree). */
  readonly maxDumps?: number;
  /** Open connections; more are closed at once. */
  readonly maxConnections?: number;
  /** Open connections of one client address; more are closed at once. */
  readonly connectionsPerAddress?: number;
  /** New connections a second of one client address (bursts of twice as many); more are closed. */
  readonly connectionRate?: number;
  /** Time allowed for a JSON answer. */
  readonly answerTimeoutMs?: number;
  /** The base chain's contracts, shown on the escape page (escape_contracts). */
  readonly contracts?: { readonly exchange: string; readonly verifier: string };
  /** The exit plans' contracts and the base chain's RPC URL their state is read from (exitSettings of the configuration). */
  readonly exit?: ExitSettings;
  /** Called once per request with its route, status and duration (metrics). */
  readonly observe?: (route: ApiRoute, status: number, seconds: number) => void;
  /** Called for each connection closed as it was accepted, with the limit it hit (metrics). */
  readonly observeRefused?: (reason: RefusedConnection) => void;
}

export { API_ROUTES, type ApiRoute } from "./routes.js";
export { MAX_URL } from "./request-limits.js";

export interface EscapeApi {
  readonly server: Server;
  readonly connections: ConnectionGate;
  /** e.g. http://127.0.0.1:8080 */
  readonly url: string;
  close(): Promise<void>;
}

/** Per-address connection limits: well below the global cap, so that eight addresses are needed to fill it. */
const DEFAULT_CONNECTIONS_PER_ADDRESS = 32;
const DEFAULT_CONNECTION_RATE = 20;
const MAX_CONNECTIONS = 256;
const DEFAULT_MAX_DUMPS = 2;
const DEFAULT_ANSWER_TIMEOUT_MS = 10_000;
/** Routes whose query may name a batch. */
const BATCH_ROUTES: readonly ApiRoute[] = ["leaf", "proof", "escape", "exit", "keys", "dump"];

export async function startEscapeApi(opts: EscapeApiOptions): Promise<EscapeApi> {
  const handler = new RequestHandler(opts);
  const server = createServer(
    // Slow connections are found every half second rather than every 30 s (the default).
    { maxHeaderSize: MAX_HEAD_BYTES, connectionsCheckingInterval: 500 },
    (req, res) => handler.handle(req, res),
  );
  const connections = gateConnections(
    server,
    {
      maxOpen: opts.maxConnections ?? MAX_CONNECTIONS,
      perAddress: opts.connectionsPerAddress ?? DEFAULT_CONNECTIONS_PER_ADDRESS,
      ratePerAddress: opts.connectionRate ?? DEFAULT_CONNECTION_RATE,
    },
    opts.observeRefused,
  );
  server.on("clientError", answerClientError);
  setTimeouts(server);
  const url = await listenHttp(server, opts.host, opts.port, "escape_api");
  return { server, connections, url, close: () => closeHttp(server) };
}

/**
 * A connection's request headers must be complete within headersTimeout of its opening (whether
 * it sent nothing or a trickle): short, so that slots held by slow or half-open connections come
 * free within seconds. An idle keep-alive connection goes after keepAliveTimeout.
 */
function setTimeouts(server: Server): void {
  server.timeout = 15_000;
  server.headersTimeout = 3_000;
  server.requestTimeout = 5_000;
  server.keepAliveTimeout = 5_000;
  server.maxRequestsPerSocket = 1000;
}

/** A request target: as sent, its path, and its query (without the "?"). */
interface RequestTarget {
  readonly text: string;
  readonly path: string;
  readonly query: string;
}

function requestTarget(text: string): RequestTarget {
  const q = text.indexOf("?");
  return q < 0 ? { text, path: text, query: "" } : { text, path: text.slice(0, q), query: text.slice(q + 1) };
}

/** One request: its limits checked, routed, answered, and observed once it is closed. */
class RequestHandler {
  private readonly limiter: RateLimiter;
  private readonly slots: AnswerSlots;
  private readonly dumps: DumpStreams;
  private readonly source: AnswerSource;
  private readonly answerTimeoutMs: number;

  constructor(private readonly opts: EscapeApiOptions) {
    this.limiter = new RateLimiter(opts.rateLimit);
    this.slots = new AnswerSlots(opts.maxConcurrency, 4 * opts.maxConcurrency);
    this.dumps = new DumpStreams(opts.store, opts.engine, opts.maxDumps ?? DEFAULT_MAX_DUMPS);
    this.source = { store: opts.store, engine: opts.engine, contracts: opts.contracts, exit: opts.exit };
    this.answerTimeoutMs = opts.answerTimeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS;
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    const started = performance.now();
    const target = requestTarget(req.url ?? "/");
    const route = routeOf(target.path);
    res.once("close", () => this.opts.observe?.(route, res.statusCode, (performance.now() - started) / 1000));
    this.answer(req, res, target, route).catch((err: unknown) => {
      if (res.headersSent) res.destroy();
      else sendError(req, res, asApiError(err));
    });
  }

  private async answer(
    req: IncomingMessage,
    res: ServerResponse,
    target: RequestTarget,
    route: ApiRoute,
  ): Promise<void> {
    checkRequestLimits(req, res, target.text, this.limiter);
    const { path } = target;
    const query = parseQuery(target.query, BATCH_ROUTES.includes(route));
    const seg = path.split("/"); // "", "v1", ...
    switch (route) {
      case "openapi":
        return sendJson(req, res, 200, OPENAPI, "public, max-age=3600");
      case "page":
        return sendPage(req, res, path === "/" ? "index.html" : path.slice(1));
      case "dump":
        return this.dumps.serve(req, res, seg[3]!, query.batch);
      case "unknown":
        throw new ApiError(404, `no such path ${JSON.stringify(path.slice(0, 100))}; see /v1/openapi.json`);
      default:
        return this.answerJson(req, res, route, seg, query.batch);
    }
  }

  /** A JSON answer computed in one of the slots, within the answer time-out. */
  private async answerJson(
    req: IncomingMessage,
    res: ServerResponse,
    route: JsonRoute,
    seg: string[],
    batchText: string | undefined,
  ): Promise<void> {
    const work = this.slots.run(() => answerJson(this.source, route, seg, batchText));
    const { body, batchGiven } = await withAnswerTimeout(work, this.answerTimeoutMs);
    sendJson(req, res, 200, body, batchGiven ? CACHE_NAMED_BATCH : CACHE_LATEST_BATCH);
  }
}
