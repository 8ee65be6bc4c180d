/**
 * JSON from an untrusted gateway, parsed within bounds. `JSON.parse` on a hostile body of a few
 * hundred megabytes (`[[[[…`, millions of empty arrays or tiny objects) can hold the main thread
 * for minutes and take gigabytes; here:
 *
 * - a shape scan (`JsonShapeScanner`) fed with the bytes as they arrive refuses a body whose nesting,
 *   number of elements or longest string exceeds the limits, before the body is even complete;
 * - a large body is parsed in a worker thread with a heap limit, so that the main thread keeps
 *   answering signals, health checks and metrics, and a parse that outgrows the limit kills only
 *   the worker; an abort (shutdown, deadline) terminates the worker at once.
 *
 * `parseJsonBounded` is the one entry point for parsing a gateway's JSON.
 */
import { Worker } from "node:worker_threads";

export interface JsonLimits {
  /** Deepest nesting of arrays and objects. */
  readonly maxDepth: number;
  /** Elements: arrays, objects, strings (keys included) and commas, together. */
  readonly maxElements: number;
  /** Longest string, in bytes of its JSON text; also the longest run of other bytes (a number, blanks). */
  readonly maxStringBytes: number;
}

/**
 * A state update nests 4 to 6 levels deep; a leaf takes about 5 to 9 elements (its id, its object,
 * its fields' names and values); 16 million elements is over 2 million leaves. Strings are hex or
 * decimal numbers of at most ~80 characters, and error texts.
 */
export const DEFAULT_JSON_LIMITS: JsonLimits = Object.freeze({
  maxDepth: 64,
  maxElements: 16_000_000,
  maxStringBytes: 1 << 20,
});

/** Bodies up to this size are parsed on the main thread (a few milliseconds at most). */
export const INLINE_PARSE_BYTES = 1 << 20;

/** Heap of a parsing worker; a parse that needs more is refused. */
export const WORKER_HEAP_MB = 1024;

/** Thrown when a body breaks a limit or cannot be parsed within the worker's heap. */
export class JsonLimitError extends Error {
  override name = "JsonLimitError";
}

/**
 * Tracks nesting, element count and string length over a JSON text fed in chunks. It does not
 * validate the syntax (JSON.parse does that afterwards); it only bounds what a parse would build.
 * Written without closures over module scope: the worker runs its source text too.
 */
export class JsonShapeScanner {
  private depth = 0;
  private elements = 0;
  private inString = false;
  private escaped = false;
  private stringBytes = 0;
  private runBytes = 0;

  constructor(private readonly limits: JsonLimits) {}

  /** Scans the next chunk; returns why the body is refused, or undefined. */
  push(chunk: Uint8Array): string | undefined {
    const { maxDepth, maxElements, maxStringBytes } = this.limits;
    let depth = this.depth;
    let elements = this.elements;
    let inString = this.inString;
    let escaped = this.escaped;
    let stringBytes = this.stringBytes;
    let runBytes = this.runBytes;
    let error: string | undefined;
    const n = chunk.length;
    // The first backslash at or after the scan (n: none left), searched again only once passed,
    // so that the scan stays linear however many strings the chunk holds.
    let backslashAt = -1;
    for (let i = 0; i < n; i++) {
      if (inString) {
        if (!escaped) {
          // Strings are most of a body: their plain bytes are skipped to the closing quote or the
          // next backslash by indexOf, not looked at one by one.
          let quoteAt = chunk.indexOf(0x22, i);
          if (quoteAt < 0) quoteAt = n;
          if (backslashAt < i) {
            backslashAt = chunk.indexOf(0x5c, i);
            if (backslashAt < 0) backslashAt = n;
          }
          const stop = quoteAt < backslashAt ? quoteAt : backslashAt;
          stringBytes += stop - i;
          if (stringBytes > maxStringBytes) {
            error = `a string is longer than ${maxStringBytes} bytes`;
            break;
          }
          i = stop;
          if (i === n) break;
          if (i === quoteAt) {
            inString = false;
            continue;
          }
          escaped = true;
        } else escaped = false;
        if (++stringBytes > maxStringBytes) {
          error = `a string is longer than ${maxStringBytes} bytes`;
          break;
        }
        continue;
      }
      const c = chunk[i]!;
      if (c === 0x22) {
        inString = true;
        stringBytes = 0;
        elements++;
      } else if (c === 0x5b || c === 0x7b) {
        elements++;
        if (++depth > maxDepth) {
          error = `nested deeper than ${maxDepth} levels`;
          break;
        }
      } else if (c === 0x5d || c === 0x7d) depth--;
      else if (c === 0x2c) elements++;
      else if (c !== 0x3a) {
        // Digits, literals, blanks: bounded between two tokens, so a body cannot be one huge number.
        if (++runBytes > maxStringBytes) {
          error = `more than ${maxStringBytes} bytes between two tokens`;
          break;
        }
        continue;
      }
      runBytes = 0;
      if (elements > maxElements) {
        error = `more than ${maxElements} elements`;
        break;
      }
    }
    this.depth = depth;
    this.elements = elements;
    this.inString = inString;
    this.escaped = escaped;
    this.stringBytes = stringBytes;
    this.runBytes = runBytes;
    return error;
  }
}

export interface ParseOptions {
  readonly limits?: JsonLimits;
  /** Aborts the parse (the worker is terminated). */
  readonly signal?: AbortSignal;
  /** The body was already fed through a JsonShapeScanner with these limits. */
  readonly scanned?: boolean;
}

/**
 * Parses `body` as UTF-8 JSON within `limits`. Throws JsonLimitError for a body beyond the limits,
 * SyntaxError for one that is not JSON, and the signal's reason when aborted. A large body's
 * ArrayBuffer may be handed over to the worker (the caller must not use `body` afterwards).
 */
export async function parseJsonBounded(body: Uint8Array, opts: ParseOptions = {}): Promise<unknown> {
  const limits = opts.limits ?? DEFAULT_JSON_LIMITS;
  opts.signal?.throwIfAborted();
  if (body.length <= INLINE_PARSE_BYTES) return parseJsonHere(body, limits, opts.scanned === true);
  return parseInWorker(body, limits, opts);
}

/**
 * The same parse on this thread, at once: for a small body, or on a thread that is itself a worker
 * (batch-answer.ts). Throws JsonLimitError or SyntaxError as parseJsonBounded does.
 */
export function parseJsonHere(body: Uint8Array, limits: JsonLimits, scanned: boolean): unknown {
  if (!scanned) {
    const refused = new JsonShapeScanner(limits).push(body);
    if (refused) throw new JsonLimitError(refused);
  }
  return JSON.parse(new TextDecoder().decode(body)) as unknown;
}

/** The worker: scans (unless done already), decodes and parses, and posts the value back. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const JsonShapeScanner = ${JsonShapeScanner.toString()};
const { bytes, limits, scanned } = workerData;
let message;
try {
  const refused = scanned ? undefined : new JsonShapeScanner(limits).push(bytes);
  if (refused) message = { ok: false, limit: true, reason: refused };
  else message = { ok: true, value: JSON.parse(new TextDecoder().decode(bytes)) };
} catch (e) {
  message = { ok: false, limit: false, reason: e instanceof Error ? e.message : String(e) };
}
parentPort.postMessage(message);
`;

type WorkerAnswer = { ok: true; value: unknown } | { ok: false; limit: boolean; reason: string };

function parseInWorker(body: Uint8Array, limits: JsonLimits, opts: ParseOptions): Promise<unknown> {
  const bytes = ownBuffer(body);
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { bytes, limits: { ...limits }, scanned: opts.scanned === true },
      transferList: [bytes.buffer as ArrayBuffer],
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: 32 },
      stdout: false,
      stderr: false,
    });
    let settled = false;
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      opts.signal?.removeEventListener("abort", onAbort);
      fn();
      void worker.terminate();
    };
    const onAbort = (): void => finish(() => reject(opts.signal!.reason));
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    worker.once("message", (m: WorkerAnswer) =>
      finish(() => {
        if (m.ok) resolve(m.value);
        else if (m.limit) reject(new JsonLimitError(m.reason));
        else reject(new SyntaxError(m.reason));
      }),
    );
    worker.once("error", (err: Error & { code?: string }) =>
      finish(() =>
        reject(
          err.code === "ERR_WORKER_OUT_OF_MEMORY"
            ? new JsonLimitError(`parsing it needs more than ${WORKER_HEAP_MB} MiB`)
            : err,
        ),
      ),
    );
    worker.once("exit", (code) =>
      finish(() => reject(new JsonLimitError(`the parsing worker stopped (exit code ${code})`))),
    );
  });
}

/**
 * `body` itself when it owns its whole ArrayBuffer (it can then move to a worker without a copy),
 * else a copy that does.
 */
export function ownBuffer(body: Uint8Array): Uint8Array {
  return body.byteOffset === 0 && body.byteLength === body.buffer.byteLength ? body : body.slice();
}
