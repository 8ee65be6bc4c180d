import type { IncomingMessage, ServerResponse } from "node:http";
import { PAGE_CSP, pageFile } from "../escape/page/assets.js";
import type { ApiError } from "./api-error.js";

/** Cache lifetimes: an answer for a named batch never changes; the latest batch moves on. */
export const CACHE_NAMED_BATCH = "public, max-age=86400";
export const CACHE_LATEST_BATCH = "public, max-age=5";

export function sendJson(
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
    // Errors echo the request's path and parameters: no browser may sniff them into HTML.
    "x-content-type-options": "nosniff",
  });
  res.end(req.method === "HEAD" ? undefined : text);
}

/** An error as JSON (`error`, `status`, and `parameter` when one is at fault), never cached. */
export function sendError(req: IncomingMessage, res: ServerResponse, e: ApiError): void {
  if (e.retryAfterS !== undefined) res.setHeader("retry-after", String(e.retryAfterS));
  const body: Record<string, unknown> = { error: e.message, status: e.status };
  if (e.parameter) body.parameter = e.parameter;
  sendJson(req, res, e.status, body, "no-store");
}

/** A file of the escape page, with the CSP that keeps it to its own files. */
export function sendPage(req: IncomingMessage, res: ServerResponse, name: string): void {
  const file = pageFile(name);
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
