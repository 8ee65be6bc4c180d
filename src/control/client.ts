import { request, type IncomingMessage } from "node:http";
import { existsSync } from "node:fs";
import { DacdError } from "../errors.js";
import { frameJson, Frame, FRAMES_CONTENT_TYPE, readFrames, type DecodedFrame } from "./frames.js";
import { controlSocketPaths } from "./socket-path.js";

/**
 * Asks a running daemon a read-only question over its control socket. Returns undefined when no
 * daemon answers (no socket, or a stale one), so the caller can read the store directly instead.
 */
export async function askDaemon(
  dataDir: string,
  path: string,
  query: Record<string, string> = {},
): Promise<unknown> {
  for (const socketPath of existingSockets(dataDir)) {
    const answer = await askSocket(socketPath, path, query);
    if (answer !== undefined) return answer;
  }
  return undefined;
}

/** The control socket's paths that exist (socket-path.ts: where the daemon puts it). */
function existingSockets(dataDir: string): string[] {
  return controlSocketPaths(dataDir).filter((p) => existsSync(p));
}

async function askSocket(socketPath: string, path: string, query: Record<string, string>): Promise<unknown> {
  const qs = new URLSearchParams(query).toString();
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath, path: qs ? `${path}?${qs}` : path, method: "GET", timeout: 10_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          let body: { error?: string; code?: string } & Record<string, unknown>;
          try {
            body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as typeof body;
          } catch {
            reject(new DacdError("STORE", "the daemon's control socket answered something that is not JSON"));
            return;
          }
          if (res.statusCode === 200) resolve(body);
          else
            reject(
              new DacdError(
                body.code === "BAD_INPUT" ? "BAD_INPUT" : "STORE",
                body.error ?? `status ${res.statusCode}`,
              ),
            );
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", (err: NodeJS.ErrnoException) => {
      // ECONNREFUSED / ENOENT: a socket file left behind by a daemon that is gone.
      if (err.code === "ECONNREFUSED" || err.code === "ENOENT") resolve(undefined);
      else reject(new DacdError("STORE", `cannot reach the daemon's control socket: ${err.message}`));
    });
    req.end();
  });
}

/** Idle time allowed between two frames of a streamed answer (a deep check reports progress). */
const STREAM_IDLE_MS = 120_000;

/**
 * Asks a running daemon for a streamed answer (frames.ts): `onFrame` sees every frame but the last,
 * one at a time (the socket is not read further until it resolves); the result frame's JSON is
 * returned. Undefined when no daemon answers, as for askDaemon.
 */
export async function streamFromDaemon(
  dataDir: string,
  path: string,
  query: Record<string, string>,
  onFrame: (frame: DecodedFrame) => Promise<void> | void,
): Promise<unknown> {
  const qs = new URLSearchParams(query).toString();
  let res: IncomingMessage | undefined;
  for (const socketPath of existingSockets(dataDir)) {
    res = await openStream(socketPath, qs ? `${path}?${qs}` : path);
    if (res) break;
  }
  if (!res) return undefined;
  if (res.statusCode !== 200 || res.headers["content-type"] !== FRAMES_CONTENT_TYPE) {
    res.resume();
    throw new DacdError(
      "STORE",
      `the daemon cannot stream ${path} (status ${res.statusCode}); is it an older dacd? Stop it to read the store directly`,
    );
  }
  try {
    for await (const frame of readFrames(res)) {
      if (frame.type === Frame.result) return frameJson(frame);
      if (frame.type === Frame.error) {
        const e = frameJson<{ error?: string; code?: string }>(frame);
        throw new DacdError(e.code === "BAD_INPUT" ? "BAD_INPUT" : "STORE", e.error ?? "the daemon failed");
      }
      await onFrame(frame);
    }
  } catch (err) {
    if (err instanceof DacdError) throw err;
    throw new DacdError("STORE", `the daemon's answer broke off: ${(err as Error).message}`);
  } finally {
    res.destroy();
  }
  throw new DacdError("STORE", "the daemon's answer ended without a result");
}

/** A streamed request's response, or undefined when no daemon answers on `socketPath`. */
function openStream(socketPath: string, path: string): Promise<IncomingMessage | undefined> {
  return new Promise<IncomingMessage | undefined>((resolve, reject) => {
    const req = request({ socketPath, path, method: "GET", timeout: STREAM_IDLE_MS }, resolve);
    req.on("timeout", () => req.destroy(new Error("the daemon stopped answering")));
    req.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "ECONNREFUSED" || err.code === "ENOENT") resolve(undefined);
      else reject(new DacdError("STORE", `cannot reach the daemon's control socket: ${err.message}`));
    });
    req.end();
  });
}
