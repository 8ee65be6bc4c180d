import { request } from "node:http";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DacdError } from "../errors.js";
import { CONTROL_SOCKET } from "./server.js";

/**
 * Asks a running daemon a read-only question over its control socket. Returns undefined when no
 * daemon answers (no socket, or a stale one), so the caller can read the store directly instead.
 */
export async function askDaemon(
  dataDir: string,
  path: string,
  query: Record<string, string> = {},
): Promise<unknown> {
  const socketPath = join(dataDir, CONTROL_SOCKET);
  if (!existsSync(socketPath)) return undefined;
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
