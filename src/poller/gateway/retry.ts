/**
 * Retry policy for gateway calls: bounded attempts, exponential backoff with jitter, and the
 * classification of transport errors into "worth another attempt" and "will fail the same way".
 */

export interface RetryPolicy {
  /** Total attempts per call, the first one included (>= 1). */
  attempts: number;
  /** Backoff before the second attempt; doubles for each further attempt. */
  baseDelayMs: number;
  /** Upper bound of a single backoff. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 6, baseDelayMs: 500, maxDelayMs: 30_000 };

/**
 * Backoff before attempt `failedAttempt + 1` (a gateway call's, or the member's next try at a failing
 * batch): "equal jitter", i.e. half of the exponential step
 * fixed and half random, so concurrent members do not hammer a recovering gateway in lockstep
 * while every wait still grows.
 */
export function backoffDelay(
  failedAttempt: number,
  policy: Pick<RetryPolicy, "baseDelayMs" | "maxDelayMs">,
  random: () => number = Math.random,
): number {
  // The exponent is bounded so that a long run of failures never makes 0 · ∞ (NaN).
  const exp = Math.min(
    policy.maxDelayMs,
    policy.baseDelayMs * 2 ** Math.min(30, Math.max(0, failedAttempt - 1)),
  );
  const r = Math.min(1, Math.max(0, random()));
  return Math.round(exp / 2 + (exp / 2) * r);
}

/** Waits `ms`, or rejects with the signal's reason as soon as `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Node/OS error codes of a failed or dropped connection that a later attempt may not meet. */
const RETRYABLE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "EAI_AGAIN",
  "ENOTFOUND",
  "EADDRNOTAVAIL",
]);

/**
 * undici error codes that are NOT worth retrying: they come from our own request or shutdown
 * (aborted, destroyed, invalid argument) or from a limit we set ourselves.
 */
const NON_RETRYABLE_UNDICI = new Set([
  "UND_ERR_ABORTED",
  "UND_ERR_DESTROYED",
  "UND_ERR_INVALID_ARG",
  "UND_ERR_INVALID_RETURN_VALUE",
  "UND_ERR_NOT_SUPPORTED",
  "UND_ERR_REQ_CONTENT_LENGTH_MISMATCH",
  "UND_ERR_RES_EXCEEDED_MAX_SIZE",
]);

function errorCodes(err: unknown, depth = 0): string[] {
  if (depth > 4 || err === null || typeof err !== "object") return [];
  const out: string[] = [];
  const e = err as { code?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === "string") out.push(e.code);
  if (e.cause !== undefined) out.push(...errorCodes(e.cause, depth + 1));
  if (Array.isArray(e.errors)) for (const sub of e.errors) out.push(...errorCodes(sub, depth + 1));
  return out;
}

/**
 * Whether a thrown transport error is transient: connection refused/reset, DNS hiccups, socket
 * hang up, undici socket/timeout/truncation errors. TLS verification failures and our own
 * aborts are permanent.
 */
export function isRetryableError(err: unknown): boolean {
  const codes = errorCodes(err);
  for (const code of codes) {
    if (RETRYABLE_CODES.has(code)) return true;
    if (code.startsWith("UND_ERR_") && !NON_RETRYABLE_UNDICI.has(code)) return true;
  }
  if (codes.length === 0 && err instanceof Error && /socket hang up|other side closed/i.test(err.message))
    return true;
  return false;
}

/** One short line describing a transport error, for messages and the onRetry hook. */
export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const codes = errorCodes(err);
  const sub = (err as { errors?: unknown }).errors;
  let message = err.message;
  if (!message && Array.isArray(sub) && sub[0] instanceof Error) message = sub[0].message;
  const code = codes[0];
  if (code && !message.includes(code)) message = message ? `${code}: ${message}` : code;
  return message || err.name;
}
