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
import { DacdError, isDacdError } from "../errors.js";
import { isPruned } from "../storage/prune-info.js";
import { dumpTree, type DumpFileSink } from "../escape/dump.js";
import { makeProof } from "../escape/proof.js";
import { showLeaf, storeProfile } from "../inspect/inspect.js";
import type { BatchRecord } from "../storage/batch-record.js";
import type { LevelStore } from "../storage/level-store.js";
import { withSnapshot } from "../storage/snapshot.js";
import { hexToBytes32 } from "../util/bytes.js";
import type { HashEngine } from "../verifier/hash/engine.js";
import type { TreeSpec } from "../model/profile.js";
import { DAEMON_WALK_CHUNK, PACE_MAX_WAIT_MS } from "../control/escape-routes.js";
import { OPENAPI } from "./openapi.js";
import { PAGE_CSP, PAGE_FILES } from "../escape/page/assets.js";
import { RateLimiter } from "./rate-limit.js";
import { routeOf, type ApiRoute } from "./routes.js";
import { clientKey } from "./client-address.js";
import { answerClientError } from "./client-error.js";
import { gateConnections, type ConnectionGate, type RefusedConnection } from "./connection-gate.js";
import { closeHttp, listenHttp } from "../util/http-listen.js";

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
  /** Called once per request with its route, status and duration (metrics). */
  readonly observe?: (route: ApiRoute, status: number, seconds: number) => void;
  /** Called for each connection closed as it was accepted, with the limit it hit (metrics). */
  readonly observeRefused?: (reason: RefusedConnection) => void;
}

export { API_ROUTES, type ApiRoute } from "./routes.js";

export interface EscapeApi {
  readonly server: Server;
  readonly connections: ConnectionGate;
  /** e.g. http://127.0.0.1:8080 */
  readonly url: string;
  close(): Promise<void>;
}

/** Longest request target accepted (a proof URL is under 200 characters). */
export const MAX_URL = 1024;
/** Largest header fields accepted, in bytes (names, values and their separators). */
const MAX_HEADER_BYTES = 8192;
/**
 * The parser's bound on a request head (request line and headers). Above both limits, so that
 * the handler sees the request and tells a long target (414) from long headers (431).
 */
const MAX_HEAD_BYTES = 32 * 1024;
/** Per-address connection limits: well below the global cap, so that eight addresses are needed to fill it. */
const DEFAULT_CONNECTIONS_PER_ADDRESS = 32;
const DEFAULT_CONNECTION_RATE = 20;
const MAX_CONNECTIONS = 256;
const TREE_NAMES = ["vault", "order", "position", "rollup_vault"] as const;
const DUMP_TYPES: Record<string, string> = {
  vault: "text/csv; charset=utf-8",
  rollup_vault: "text/csv; charset=utf-8",
  order: "text/csv; charset=utf-8",
  position: "application/x-ndjson",
};
/** The longest decimal id of any tree (2^251 has 76 digits). */
const MAX_ID_DIGITS = 80;

/** An answer other than 200: status, message, and the parameter at fault. */
class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly parameter?: string,
    readonly retryAfterS?: number,
  ) {
    super(message);
  }
}

export async function startEscapeApi(opts: EscapeApiOptions): Promise<EscapeApi> {
  const limiter = new RateLimiter(opts.rateLimit);
  const maxDumps = opts.maxDumps ?? 2;
  const answerTimeoutMs = opts.answerTimeoutMs ?? 10_000;
  const slots = new Slots(opts.maxConcurrency, 4 * opts.maxConcurrency);
  let dumping = 0;

  const server = createServer(
    // Slow connections are found every half second rather than every 30 s (the default).
    { maxHeaderSize: MAX_HEAD_BYTES, connectionsCheckingInterval: 500 },
    (req, res) => {
      const started = performance.now();
      let route: ApiRoute = "unknown";
      res.once("close", () => opts.observe?.(route, res.statusCode, (performance.now() - started) / 1000));
      const handle = async (): Promise<void> => {
        const target = req.url ?? "/";
        const q = target.indexOf("?");
        const path = q < 0 ? target : target.slice(0, q);
        route = routeOf(path);
        const wait = limiter.take(clientKey(req.socket.remoteAddress));
        if (wait > 0)
          throw new ApiError(429, "too many requests from this address", undefined, Math.ceil(wait));
        if (req.method !== "GET" && req.method !== "HEAD") {
          res.setHeader("allow", "GET, HEAD");
          throw new ApiError(405, `method ${req.method} is not allowed: this API is read-only (GET, HEAD)`);
        }
        if (target.length > MAX_URL) throw new ApiError(414, `the request target is longer than ${MAX_URL}`);
        if (headerBytes(req) > MAX_HEADER_BYTES)
          throw new ApiError(431, `the request's header fields are larger than ${MAX_HEADER_BYTES} bytes`);
        const query = parseQuery(
          q < 0 ? "" : target.slice(q + 1),
          route === "leaf" || route === "proof" || route === "escape" || route === "dump",
        );
        const seg = path.split("/"); // "", "v1", ...
        switch (route) {
          case "openapi":
            return sendJson(req, res, 200, OPENAPI, "public, max-age=3600");
          case "page":
            return sendPage(req, res, path === "/" ? "index.html" : path.slice(1));
          case "dump":
            return dump(req, res, seg[3]!, query.batch);
          case "unknown":
            throw new ApiError(
              404,
              `no such path ${JSON.stringify(path.slice(0, 100))}; see /v1/openapi.json`,
            );
          default: {
            const work = slots.run(() => answer(route, seg, query.batch));
            const { body, batchGiven } = await withTimeout(work, answerTimeoutMs);
            return sendJson(req, res, 200, body, batchGiven ? "public, max-age=86400" : "public, max-age=5");
          }
        }
      };
      handle().catch((err: unknown) => {
        if (res.headersSent) {
          res.destroy();
          return;
        }
        const e =
          err instanceof ApiError
            ? err
            : isDacdError(err, "BAD_INPUT")
              ? new ApiError(404, err.message)
              : new ApiError(500, `internal error: ${err instanceof Error ? err.message : String(err)}`);
        if (e.retryAfterS !== undefined) res.setHeader("retry-after", String(e.retryAfterS));
        const body: Record<string, unknown> = { error: e.message, status: e.status };
        if (e.parameter) body.parameter = e.parameter;
        sendJson(req, res, e.status, body, "no-store");
      });
    },
  );

  /** The JSON answers: each from one snapshot of the store. */
  async function answer(
    route: ApiRoute,
    seg: string[],
    batchText: string | undefined,
  ): Promise<{ body: unknown; batchGiven: boolean }> {
    return withSnapshot(opts.store, async (view) => {
      const record = await signedBatch(view, batchText);
      if (route === "escape_info") {
        // What the escape page needs besides a proof: the tree, the latest root, the contracts.
        const { profile } = await storeProfile(view);
        return {
          body: {
            profile: profile.name,
            tree: profile.main.name,
            batch_id: record.batch_id,
            sequence_number: record.sequence_number,
            root: "0x" + (record.roots[profile.main.name] ?? ""),
            tree_height: profile.main.height,
            escape_contracts: opts.contracts ?? null,
          },
          batchGiven: false,
        };
      }
      if (route === "batches_latest") {
        return {
          body: {
            batch_id: record.batch_id,
            sequence_number: record.sequence_number,
            roots: record.roots,
            claim_hash: record.claim_hash,
            accepted_at: record.accepted_at ?? null,
          },
          batchGiven: false,
        };
      }
      const spec = await treeOf(view, seg[3]!);
      if (route === "escape" && spec.name !== "vault" && spec.name !== "position")
        throw new ApiError(
          404,
          `the ${spec.name} tree has no on-chain escape: only vault (spot) and position (perpetual) do`,
          "tree",
        );
      const id = leafId(seg[4]!, spec);
      const body =
        route === "leaf"
          ? await showLeaf(view, opts.engine, spec.name, id, record.batch_id)
          : route === "escape"
            ? await (await onchain()).makeOnchainProof(view, opts.engine, spec.name, id, record.batch_id)
            : await makeProof(view, opts.engine, spec.name, id, record.batch_id);
      return { body, batchGiven: batchText !== undefined };
    });
  }

  /** GET /v1/dump/{tree}: the tree's dump file, streamed from one snapshot. */
  async function dump(
    req: IncomingMessage,
    res: ServerResponse,
    treeText: string,
    batchText: string | undefined,
  ): Promise<void> {
    if (dumping >= maxDumps)
      throw new ApiError(503, `${dumping} dumps are being streamed; try again later`, undefined, 10);
    dumping++;
    try {
      await withSnapshot(opts.store, async (view) => {
        const record = await signedBatch(view, batchText);
        const spec = await treeOf(view, treeText);
        const root = hexToBytes32(record.roots[spec.name] ?? "");
        if (!root) throw new DacdError("STORE", `batch ${record.batch_id} has no ${spec.name} root`);
        const rootGen = record.root_gens[spec.name];
        if (rootGen === undefined)
          throw new ApiError(
            404,
            `the ${spec.name} tree of batch ${record.batch_id} is not stored (orders not validated)`,
            "tree",
          );
        res.writeHead(200, {
          "content-type": DUMP_TYPES[spec.name]!,
          "cache-control": batchText !== undefined ? "public, max-age=86400" : "public, max-age=5",
          "x-dacd-batch-id": String(record.batch_id),
          "x-dacd-root": record.roots[spec.name]!,
        });
        if (req.method === "HEAD") {
          res.end();
          return;
        }
        // A reader that stops reading for a minute loses the connection (and frees the snapshot).
        res.setTimeout(60_000, () => res.destroy());
        await dumpTree(view, opts.engine, spec, root, rootGen, responseSink(res), {
          pace: () => opts.store.commits.whenIdle(PACE_MAX_WAIT_MS),
          chunk: DAEMON_WALK_CHUNK,
        });
      });
    } finally {
      dumping--;
    }
  }

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
  // A connection's request headers must be complete within headersTimeout of its opening (whether
  // it sent nothing or a trickle): short, so that slots held by slow or half-open connections
  // come free within seconds. An idle keep-alive connection goes after keepAliveTimeout.
  server.timeout = 15_000;
  server.headersTimeout = 3_000;
  server.requestTimeout = 5_000;
  server.keepAliveTimeout = 5_000;
  server.maxRequestsPerSocket = 1000;
  const url = await listenHttp(server, opts.host, opts.port, "escape_api");
  return { server, connections, url, close: () => closeHttp(server) };
}

/**
 * At most `max` answers computed at once; up to `queue` more wait their turn, in order; beyond
 * that a request is refused at once (503), so waiting requests cannot pile up either.
 */
class Slots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly max: number,
    private readonly queue: number,
  ) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) {
      if (this.waiting.length >= this.queue)
        throw new ApiError(503, "too many requests being answered; try again shortly", undefined, 1);
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else this.running++;
    try {
      return await fn();
    } finally {
      // The slot passes straight to the next waiter, if any.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}

/** The on-chain format's module, with the ABI encoder: loaded with the first escape asked for. */
const onchain = (): Promise<typeof import("../escape/onchain/from-proof.js")> =>
  import("../escape/onchain/from-proof.js");

/** The query: `batch` where the route takes it, nothing else. */
function parseQuery(qs: string, takesBatch: boolean): { batch?: string } {
  const out: { batch?: string } = {};
  if (qs === "") return out;
  for (const [k, v] of new URLSearchParams(qs)) {
    if (k !== "batch" || !takesBatch)
      throw new ApiError(400, `unknown query parameter ${JSON.stringify(k.slice(0, 40))}`, k.slice(0, 40));
    if (out.batch !== undefined) throw new ApiError(400, "batch is given twice", "batch");
    out.batch = v;
  }
  return out;
}

/**
 * The batch an answer reads: `batch` (signed, stored, not pruned), else the batch the exchange
 * froze at, else the latest signed.
 */
async function signedBatch(view: LevelStore, batchText: string | undefined): Promise<BatchRecord> {
  const signed = (await view.getCursor())?.last_accepted_batch_id;
  if (signed === undefined || signed < 0) throw new ApiError(404, "no batch is signed yet");
  let id = (await view.onchain.frozenBatchId()) ?? signed;
  if (batchText !== undefined) {
    if (!/^(0|[1-9][0-9]{0,15})$/.test(batchText) || !Number.isSafeInteger(Number(batchText)))
      throw new ApiError(
        400,
        `batch ${JSON.stringify(batchText.slice(0, 40))} is not a non-negative decimal integer`,
        "batch",
      );
    id = Number(batchText);
    if (id > signed)
      throw new ApiError(404, `batch ${id} is not signed (the latest signed batch is ${signed})`, "batch");
  }
  const record = await view.getBatch(id);
  if (!record) throw new ApiError(404, `batch ${id} is not in this member's store`, "batch");
  const prune = await view.batches.pruneInfo();
  if (isPruned(prune, id))
    throw new ApiError(
      404,
      `batch ${id} was pruned (its trees are no longer kept; kept: ${prune!.kept.join(", ")})`,
      "batch",
    );
  return record;
}

async function treeOf(view: LevelStore, name: string): Promise<TreeSpec> {
  const { trees } = await storeProfile(view);
  const spec = (TREE_NAMES as readonly string[]).includes(name)
    ? trees.find((t) => t.name === name)
    : undefined;
  if (!spec)
    throw new ApiError(
      404,
      `no tree ${JSON.stringify(name.slice(0, 40))} (trees: ${trees.map((t) => t.name).join(", ")})`,
      "tree",
    );
  return spec;
}

function leafId(text: string, spec: TreeSpec): string {
  if (text.length > MAX_ID_DIGITS || !/^(0|[1-9][0-9]*)$/.test(text))
    throw new ApiError(
      400,
      `id ${JSON.stringify(text.slice(0, 40))} is not a non-negative decimal integer`,
      "id",
    );
  if (BigInt(text) >= 1n << BigInt(spec.height))
    throw new ApiError(
      400,
      `id ${text} is out of range: the ${spec.name} tree's ids are below 2^${spec.height}`,
      "id",
    );
  return text;
}

/** The size of the request's header fields as sent: each name, value, ": " and line end. */
function headerBytes(req: IncomingMessage): number {
  let n = 0;
  for (const text of req.rawHeaders) n += Buffer.byteLength(text) + 2;
  return n;
}

function sendJson(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  body: unknown,
  cache: string,
): void {
  const text = JSON.stringify(body, null, 2) + "\n";
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    "cache-control": cache,
  });
  res.end(req.method === "HEAD" ? undefined : text);
}

/** A file of the escape page, with the CSP that keeps it to its own files. */
function sendPage(req: IncomingMessage, res: ServerResponse, name: string): void {
  const file = PAGE_FILES[name]!;
  res.writeHead(200, {
    "content-type": file.type,
    "content-length": Buffer.byteLength(file.body),
    "cache-control": "public, max-age=300",
    "content-security-policy": PAGE_CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
  });
  res.end(req.method === "HEAD" ? undefined : file.body);
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ApiError(503, `no answer within ${ms / 1000} s; try again later`, undefined, 5)),
      ms,
    );
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** A dump file written into a response, with its backpressure; a closed connection stops the walk. */
function responseSink(res: ServerResponse): DumpFileSink {
  const closed = new Promise<never>((_, reject) =>
    res.once("close", () => reject(new Error("the client closed the connection"))),
  );
  closed.catch(() => undefined);
  return {
    async write(buf) {
      if (res.destroyed) throw new Error("the client closed the connection");
      if (!res.write(buf)) await Promise.race([new Promise((r) => res.once("drain", r)), closed]);
    },
    async end() {
      if (!res.destroyed) res.end();
    },
  };
}
