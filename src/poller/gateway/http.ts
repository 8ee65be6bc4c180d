/**
 * A small HTTP client for the gateways on top of undici: one connection pool per base URL,
 * optional mutual TLS, header/body timeouts, a response size cap, and our own retry loop (so
 * that POSTs such as approve_new_roots are retried too; undici's RetryAgent skips them).
 *
 * Every failure ends as DacdError("GATEWAY") naming the endpoint, the URL (credentials removed)
 * and what was wrong; nothing a server sends can make it throw anything else.
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createSecureContext } from "node:tls";
import { Agent, request } from "undici";
import { DacdError } from "../../errors.js";
import { JsonLimitError, JsonShapeScanner, parseJsonBounded, type JsonLimits } from "./bounded-json.js";
import {
  backoffDelay,
  DEFAULT_RETRY_POLICY,
  describeError,
  isRetryableError,
  sleep,
  type RetryPolicy,
} from "./retry.js";

/** PEM material for TLS: `ca` is the only trusted root; `cert`/`key` identify us (mutual TLS). */
export interface TlsMaterial {
  ca: string;
  cert?: string;
  key?: string;
}

/** A certificates directory as the reference uses it (user.crt, user.key, server.crt), or explicit PEMs. */
export type TlsOptions = { certificatesPath: string } | TlsMaterial;

export type OutcomeKind = "ok" | "http_status" | "transport" | "bad_response" | "aborted";

/** What one call (all its attempts together) came to; handed to `onResult` once per call. */
export interface RequestOutcome {
  kind: OutcomeKind;
  /** Status of the last answer received, if any. */
  status?: number;
  attempts: number;
  durationMs: number;
}

export interface HttpClientOptions {
  /** Base address, e.g. `https://availability.example:8443`; a path prefix is kept. */
  baseUrl: string;
  /** Headers timeout and body (idle) timeout of each attempt, and the connect timeout. Default 30 s. */
  timeoutMs?: number;
  /** Attempts and backoff; missing fields take DEFAULT_RETRY_POLICY's. */
  retry?: Partial<RetryPolicy>;
  /** HTTP statuses that are retried. Default 429, 502, 503, 504. */
  retryStatuses?: readonly number[];
  /** Largest accepted response body in bytes. Default DEFAULT_MAX_BODY_BYTES. */
  maxBodyBytes?: number;
  /**
   * Total time one attempt may take, from sending the request to the last byte of the answer
   * (the idle time-outs alone let a body trickled a byte at a time hold a call open for ever).
   * An attempt over it is not retried: the call fails, so the member counts a gateway failure.
   * Default DEFAULT_DEADLINE_MS.
   */
  deadlineMs?: number;
  tls?: TlsOptions;
  /** Shutdown: aborts the attempt in flight and any backoff wait. */
  signal?: AbortSignal;
  /** Called before each backoff wait; `attempt` is the 1-based attempt that just failed. */
  onRetry?: (endpoint: string, attempt: number, reason: string, delayMs: number) => void;
  /** Called once per call with its final outcome (for metrics). */
  onResult?: (endpoint: string, outcome: RequestOutcome) => void;
  /** Randomness for the backoff jitter (tests). */
  random?: () => number;
}

export interface CallRequest {
  /** Short endpoint name used in messages and hooks, e.g. `get_batch_data`. */
  endpoint: string;
  method: "GET" | "POST";
  path: string;
  query?: Record<string, string>;
  /** JSON request body (POST). */
  json?: unknown;
  /** Batch id the call is about, for error messages. */
  batchId?: number;
  /** Largest body for this call (default: the client's maxBodyBytes). */
  maxBodyBytes?: number;
  /** A JSON answer: its shape is checked against these limits while it arrives. */
  jsonLimits?: JsonLimits;
}

export interface HttpResponse {
  status: number;
  contentType: string | undefined;
  body: Buffer;
  /** Aborted on shutdown or when the attempt's deadline passes (for an asynchronous decode). */
  signal?: AbortSignal;
  /** The body passed the call's jsonLimits scan. */
  scannedWith?: JsonLimits;
}

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_BODY_BYTES = 256 * 1024 * 1024;
/** Bodies of answers that are a number or a short text (every endpoint but get_batch_data). */
export const SMALL_BODY_BYTES = 1024 * 1024;
export const DEFAULT_DEADLINE_MS = 300_000;
export const DEFAULT_RETRY_STATUSES: readonly number[] = [429, 502, 503, 504];
const ERROR_SNIPPET_BYTES = 2048;

/** Thrown by response decoders: the answer arrived but is not what the endpoint promises. */
export class BadResponse extends Error {
  override name = "BadResponse";
}

/** Reads `user.crt`, `user.key` and `server.crt` from a certificates directory. */
export function loadTlsMaterial(certificatesPath: string): Required<TlsMaterial> {
  try {
    if (!statSync(certificatesPath).isDirectory()) {
      throw new DacdError("CONFIG", `certificates path ${certificatesPath} is not a directory`);
    }
  } catch (e) {
    if (e instanceof DacdError) throw e;
    throw new DacdError(
      "CONFIG",
      `certificates directory ${certificatesPath} is not readable: ${describeError(e)}`,
      {
        cause: e,
      },
    );
  }
  const read = (name: string): string => {
    const file = join(certificatesPath, name);
    try {
      return readFileSync(file, "utf8");
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      const what = code === "ENOENT" ? "is missing" : `cannot be read (${describeError(e)})`;
      throw new DacdError("CONFIG", `certificates directory ${certificatesPath}: ${name} ${what}`, {
        cause: e,
      });
    }
  };
  return { cert: read("user.crt"), key: read("user.key"), ca: read("server.crt") };
}

/** The checks a client makes of its TLS material when it is created, without creating one. */
export function checkTlsOptions(tls: TlsOptions): void {
  resolveTls(tls);
}

function resolveTls(tls: TlsOptions): TlsMaterial {
  const material = "certificatesPath" in tls ? loadTlsMaterial(tls.certificatesPath) : tls;
  if ((material.cert === undefined) !== (material.key === undefined)) {
    throw new DacdError("CONFIG", "TLS client certificate and key must be given together");
  }
  try {
    // Fails early on unparsable PEM or a key that does not belong to the certificate.
    createSecureContext({ ca: material.ca, cert: material.cert, key: material.key });
  } catch (e) {
    const where = "certificatesPath" in tls ? ` in ${tls.certificatesPath}` : "";
    throw new DacdError(
      "CONFIG",
      `unusable TLS material${where} (user.crt, user.key, server.crt): ${describeError(e)}`,
      {
        cause: e,
      },
    );
  }
  return material;
}

function parseBaseUrl(baseUrl: string): URL {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new DacdError("CONFIG", `gateway URL ${JSON.stringify(baseUrl)} is not a valid URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new DacdError("CONFIG", `gateway URL ${url.origin} must use http or https`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new DacdError(
      "CONFIG",
      `gateway URL ${url.protocol}//${url.host} carries credentials (user:password@); they are never sent: remove them (use certificates_path for client authentication)`,
    );
  }
  url.search = "";
  url.hash = "";
  url.pathname = url.pathname.replace(/\/+$/, "");
  return url;
}

/** Printable, single-line, bounded excerpt of an answer body. */
function snippet(body: Buffer): string {
  let text = "";
  for (const ch of body.subarray(0, 300).toString("utf8")) {
    const code = ch.charCodeAt(0);
    text += code < 0x20 || code === 0x7f ? " " : ch;
  }
  text = text.replace(/ {2,}/g, " ").trim();
  return body.length > 300 ? `${text}…` : text;
}

type Attempt =
  | { ok: true; value: unknown; status: number }
  | {
      ok: false;
      kind: Exclude<OutcomeKind, "ok">;
      retryable: boolean;
      reason: string;
      status?: number;
      cause?: unknown;
    };

export class HttpClient {
  readonly baseUrl: URL;
  /** Path prefix of the base URL without trailing slash ("" for none). */
  private readonly prefix: string;
  private readonly agent: Agent;
  private readonly timeoutMs: number;
  private readonly policy: RetryPolicy;
  private readonly retryStatuses: ReadonlySet<number>;
  private readonly maxBodyBytes: number;
  private readonly deadlineMs: number;
  private readonly opts: HttpClientOptions;

  constructor(opts: HttpClientOptions) {
    this.opts = opts;
    this.baseUrl = parseBaseUrl(opts.baseUrl);
    this.prefix = this.baseUrl.pathname.replace(/\/+$/, "");
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!(this.timeoutMs > 0))
      throw new DacdError("CONFIG", `HTTP timeout must be positive, got ${opts.timeoutMs}`);
    this.policy = { ...DEFAULT_RETRY_POLICY, ...opts.retry };
    if (!Number.isInteger(this.policy.attempts) || this.policy.attempts < 1) {
      throw new DacdError("CONFIG", `retry attempts must be an integer >= 1, got ${this.policy.attempts}`);
    }
    this.retryStatuses = new Set(opts.retryStatuses ?? DEFAULT_RETRY_STATUSES);
    this.maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    this.deadlineMs = opts.deadlineMs ?? DEFAULT_DEADLINE_MS;
    if (!(this.deadlineMs > 0))
      throw new DacdError("CONFIG", `HTTP deadline must be positive, got ${opts.deadlineMs}`);
    let tls: TlsMaterial | undefined;
    if (opts.tls !== undefined) {
      if (this.baseUrl.protocol !== "https:") {
        throw new DacdError(
          "CONFIG",
          `TLS certificates are configured but ${this.displayBase()} is not an https URL`,
        );
      }
      tls = resolveTls(opts.tls);
    }
    this.agent = new Agent({
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
      connect: { timeout: this.timeoutMs, ...(tls ?? {}) },
    });
  }

  /** Closes the connection pool (idle sockets go at once, requests in flight are cancelled). */
  async close(): Promise<void> {
    await this.agent.destroy().catch(() => undefined);
  }

  private displayBase(): string {
    return `${this.baseUrl.protocol}//${this.baseUrl.host}${this.prefix}`;
  }

  private fail(req: CallRequest, message: string, cause?: unknown, httpStatus?: number): DacdError {
    const display = `${this.displayBase()}${req.path}`;
    return new DacdError("GATEWAY", `${req.endpoint}: ${message} (${req.method} ${display})`, {
      batchId: req.batchId,
      cause,
      httpStatus,
    });
  }

  private safeHook(fn: () => void): void {
    try {
      fn();
    } catch {
      // A failing metrics/logging hook must not change what the call does.
    }
  }

  /**
   * Performs `req` with retries; `decode` turns a 2xx answer into the result and throws (any
   * error, preferably BadResponse) when the answer is not acceptable — that is never retried.
   */
  async call<T>(req: CallRequest, decode: (res: HttpResponse) => T | Promise<T>): Promise<T> {
    const started = performance.now();
    const signal = this.opts.signal;
    let attempts = 0;
    let lastStatus: number | undefined;
    const report = (kind: OutcomeKind): void => {
      const outcome: RequestOutcome = { kind, attempts, durationMs: performance.now() - started };
      if (lastStatus !== undefined) outcome.status = lastStatus;
      this.safeHook(() => this.opts.onResult?.(req.endpoint, outcome));
    };
    for (;;) {
      if (signal?.aborted) {
        report("aborted");
        throw this.fail(req, "aborted", signal.reason);
      }
      attempts++;
      const result = await this.attempt(req, decode).catch((e: unknown): Attempt => ({
        ok: false,
        kind: "transport",
        retryable: false,
        reason: describeError(e),
        cause: e,
      }));
      if (result.ok) {
        lastStatus = result.status;
        report("ok");
        return result.value as T;
      }
      if (result.status !== undefined) lastStatus = result.status;
      if (signal?.aborted) {
        report("aborted");
        throw this.fail(req, "aborted", signal.reason);
      }
      if (!result.retryable || attempts >= this.policy.attempts) {
        report(result.kind);
        const tail = result.retryable ? `; gave up after ${attempts} attempts` : "";
        throw this.fail(
          req,
          `${result.reason}${tail}`,
          result.cause,
          result.kind === "http_status" ? result.status : undefined,
        );
      }
      const delay = backoffDelay(attempts, this.policy, this.opts.random);
      this.safeHook(() => this.opts.onRetry?.(req.endpoint, attempts, result.reason, delay));
      try {
        await sleep(delay, signal);
      } catch {
        report("aborted");
        throw this.fail(req, "aborted", signal?.reason);
      }
    }
  }

  private buildUrl(req: CallRequest): string {
    const url = new URL(this.baseUrl.href);
    url.pathname = `${this.prefix}${req.path}`;
    if (req.query) url.search = new URLSearchParams(req.query).toString();
    return url.href;
  }

  private async attempt(req: CallRequest, decode: (res: HttpResponse) => unknown): Promise<Attempt> {
    const deadline = AbortSignal.timeout(this.deadlineMs);
    const signal = this.opts.signal ? AbortSignal.any([this.opts.signal, deadline]) : deadline;
    const limit = req.maxBodyBytes ?? this.maxBodyBytes;
    const overDeadline = (cause: unknown): Attempt => ({
      ok: false,
      kind: "transport",
      retryable: false,
      reason: `no complete answer within the deadline of ${this.deadlineMs / 1000} s`,
      cause,
    });
    const headers: Record<string, string> = { accept: "application/json" };
    let body: string | undefined;
    if (req.json !== undefined) {
      body = JSON.stringify(req.json);
      headers["content-type"] = "application/json";
    } else if (req.method === "POST") {
      body = "";
    }
    let status: number;
    let contentType: string | undefined;
    let payload: Buffer;
    try {
      const res = await request(this.buildUrl(req), {
        method: req.method,
        headers,
        body,
        dispatcher: this.agent,
        signal,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
      status = res.statusCode;
      const ct = res.headers["content-type"];
      contentType = Array.isArray(ct) ? ct[0] : ct;
      const ok = status >= 200 && status < 300;
      const declared = Number(res.headers["content-length"] ?? NaN);
      if (ok) {
        if (Number.isFinite(declared) && declared > limit) {
          discard(res.body);
          return this.tooLarge(status, `declared ${declared} bytes`, limit);
        }
      }
      if (!ok) {
        // The status decides; a broken error body only costs the excerpt.
        const text = await readLimited(res.body, ERROR_SNIPPET_BYTES).then(
          (r) => snippet(r.data),
          () => "",
        );
        return {
          ok: false,
          kind: "http_status",
          retryable: this.retryStatuses.has(status),
          reason: `HTTP ${status}${text ? `: ${text}` : ""}`,
          status,
        };
      }
      const scanner = req.jsonLimits ? new JsonShapeScanner(req.jsonLimits) : undefined;
      const read = await readLimited(
        res.body,
        limit,
        scanner,
        Number.isFinite(declared) ? declared : undefined,
      );
      if (read.overflow) return this.tooLarge(status, `more than ${limit} bytes`, limit);
      if (read.refused !== undefined) {
        return {
          ok: false,
          kind: "bad_response",
          retryable: false,
          reason: `answer refused: ${read.refused}`,
          status,
        };
      }
      payload = read.data;
    } catch (e) {
      if (this.opts.signal?.aborted)
        return { ok: false, kind: "aborted", retryable: false, reason: "aborted", cause: e };
      if (deadline.aborted) return overDeadline(e);
      return {
        ok: false,
        kind: "transport",
        retryable: isRetryableError(e),
        reason: describeError(e),
        cause: e,
      };
    }
    try {
      const value = await decode({ status, contentType, body: payload, signal, scannedWith: req.jsonLimits });
      return { ok: true, value, status };
    } catch (e) {
      if (this.opts.signal?.aborted)
        return { ok: false, kind: "aborted", retryable: false, reason: "aborted", cause: e };
      if (deadline.aborted) return overDeadline(e);
      const reason = e instanceof Error ? e.message : String(e);
      return { ok: false, kind: "bad_response", retryable: false, reason, status, cause: e };
    }
  }

  private tooLarge(status: number, what: string, limit: number): Attempt {
    return {
      ok: false,
      kind: "bad_response",
      retryable: false,
      reason: `response body too large (${what}; limit ${limit} bytes)`,
      status,
    };
  }
}

/** Drops a response body we do not want (closing its connection) without an unhandled error event. */
function discard(body: { on(event: "error", fn: () => void): unknown; destroy(): unknown }): void {
  body.on("error", () => undefined);
  body.destroy();
}

/**
 * Reads at most `limit` bytes of `body`. When more arrives, stops, destroys the stream (which
 * drops the connection) and reports overflow, so an endless answer cannot exhaust memory. With a
 * scanner, each chunk's JSON shape is checked as it arrives, and a body beyond its limits is
 * dropped at once (`refused`).
 */
async function readLimited(
  body: AsyncIterable<Uint8Array> & { on(event: "error", fn: () => void): unknown; destroy(): unknown },
  limit: number,
  scanner?: JsonShapeScanner,
  declared?: number,
): Promise<{ data: Buffer; overflow: boolean; refused?: string }> {
  // With a declared length (within the limit) the body is read straight into its buffer: one copy.
  const into =
    declared !== undefined && declared <= limit ? Buffer.from(new ArrayBuffer(declared)) : undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (size + buf.length > limit || (into && size + buf.length > into.length)) {
      discard(body);
      return { data: Buffer.alloc(0), overflow: true };
    }
    const refused = scanner?.push(buf);
    if (refused !== undefined) {
      discard(body);
      return { data: Buffer.alloc(0), overflow: false, refused };
    }
    if (into) into.set(buf, size);
    else chunks.push(buf);
    size += buf.length;
  }
  if (into) return { data: size === into.length ? into : into.subarray(0, size), overflow: false };
  // A body of its own (not a slice of Node's shared pool), so that a parser may take it over.
  const data = Buffer.from(new ArrayBuffer(size));
  let at = 0;
  for (const c of chunks) {
    data.set(c, at);
    at += c.length;
  }
  return { data, overflow: false };
}

/** Decodes a small body as UTF-8 JSON on this thread; BadResponse when it is not JSON. */
export function decodeJson(res: HttpResponse): unknown {
  const refused = new JsonShapeScanner(res.scannedWith ?? DEFAULT_SMALL_LIMITS).push(res.body);
  if (refused) throw new BadResponse(`answer refused: ${refused}`);
  const text = res.body.toString("utf8");
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw notJson(res.body, e);
  }
}

/** Limits for the small answers decoded by decodeJson. */
const DEFAULT_SMALL_LIMITS: JsonLimits = { maxDepth: 64, maxElements: 100_000, maxStringBytes: 65_536 };

/** The bytes of a body that a JSON failure quotes from (snippet). */
export const JSON_FAILURE_HEAD = 301;

/**
 * Decodes a body of any size as UTF-8 JSON within the limits it was scanned with, off the main
 * thread when it is large; BadResponse when it is not JSON or breaks a limit.
 */
export async function decodeJsonBounded(res: HttpResponse): Promise<unknown> {
  const saved = Buffer.from(res.body.subarray(0, JSON_FAILURE_HEAD)); // the body itself may move to the parsing worker
  try {
    return await parseJsonBounded(res.body, {
      limits: res.scannedWith,
      scanned: res.scannedWith !== undefined,
      signal: res.signal,
    });
  } catch (e) {
    if (res.signal?.aborted) throw e;
    throw jsonFailure(e, saved);
  }
}

/** Why a body's JSON parse failed, as the BadResponse a decoder throws (`head`: the body's first bytes). */
export function jsonFailure(e: unknown, head: Buffer): BadResponse {
  if (e instanceof JsonLimitError) return new BadResponse(`answer refused: ${e.message}`);
  return notJson(head, e);
}

function notJson(body: Buffer, e: unknown): BadResponse {
  const detail = e instanceof Error ? e.message : String(e);
  const excerpt = snippet(body);
  return new BadResponse(`answer is not valid JSON (${detail})${excerpt ? `: ${excerpt}` : ": empty body"}`);
}

/** Decodes a text answer: trimmed, and unquoted when the whole text is a JSON string literal. */
export function decodeText(res: HttpResponse): string {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(res.body).trim();
  } catch {
    throw new BadResponse("answer is not valid UTF-8 text");
  }
  if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) {
    try {
      const unquoted: unknown = JSON.parse(text);
      if (typeof unquoted === "string") return unquoted.trim();
    } catch {
      // Not a JSON string literal after all: keep the text as it is.
    }
  }
  return text;
}
