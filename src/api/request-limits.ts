import type { IncomingMessage, ServerResponse } from "node:http";
import { ApiError } from "./api-error.js";
import { clientKey } from "./client-address.js";
import type { RateLimiter } from "./rate-limit.js";

/** Longest request target accepted (a proof URL is under 200 characters). */
export const MAX_URL = 1024;
/** Largest header fields accepted, in bytes (names, values and their separators). */
const MAX_HEADER_BYTES = 8192;
/**
 * The parser's bound on a request head (request line and headers). Above both limits, so that
 * the handler sees the request and tells a long target (414) from long headers (431).
 */
export const MAX_HEAD_BYTES = 32 * 1024;

/**
 * Refuses a request over the client's rate (429), with a method other than GET and HEAD (405),
 * a long target (414) or large header fields (431), in that order.
 */
export function checkRequestLimits(
  req: IncomingMessage,
  res: ServerResponse,
  target: string,
  limiter: RateLimiter,
): void {
  const wait = limiter.take(clientKey(req.socket.remoteAddress));
  if (wait > 0) throw new ApiError(429, "too many requests from this address", undefined, Math.ceil(wait));
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("allow", "GET, HEAD");
    throw new ApiError(405, `method ${req.method} is not allowed: this API is read-only (GET, HEAD)`);
  }
  if (target.length > MAX_URL) throw new ApiError(414, `the request target is longer than ${MAX_URL}`);
  if (headerBytes(req) > MAX_HEADER_BYTES)
    throw new ApiError(431, `the request's header fields are larger than ${MAX_HEADER_BYTES} bytes`);
}

/** The size of the request's header fields as sent: each name, value, ": " and line end. */
function headerBytes(req: IncomingMessage): number {
  let n = 0;
  for (const text of req.rawHeaders) n += Buffer.byteLength(text) + 2;
  return n;
}
