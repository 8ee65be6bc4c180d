import { createServer, type Server } from "node:http";
import { rmSync } from "node:fs";
import { chmod, rename } from "node:fs/promises";
import { isDacdError } from "../errors.js";
import { boundSocketPath, prepareControlSocket } from "./socket-path.js";

// The socket's file name, where callers of the server have always found it.
export { CONTROL_SOCKET } from "./socket-path.js";
import { serveStream, type ControlStream } from "./stream-server.js";

/**
 * A read-only control socket in the data directory. LevelDB admits one process at a time, so
 * `dacd status` and `dacd show` ask the running daemon through this socket instead of opening the
 * store themselves. It is a Unix socket, 0600 in a 0700 directory (socket-path.ts): no network
 * exposure, no other local user, and nothing here can change state.
 */

export type ControlHandler = (query: URLSearchParams) => Promise<unknown>;
/** An answer streamed as frames (frames.ts): dumps, checks. */
export interface StreamRoute {
  readonly stream: ControlStream;
}

export async function startControlServer(
  dataDir: string,
  routes: Record<string, ControlHandler | StreamRoute>,
): Promise<Server> {
  const path = await prepareControlSocket(dataDir);
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://dacd");
    const route = req.method === "GET" ? routes[url.pathname] : undefined;
    if (route && typeof route !== "function") {
      serveStream(route.stream, url.searchParams, res);
      return;
    }
    const handler = route;
    if (!handler) {
      res
        .writeHead(404, { "content-type": "application/json" })
        .end(JSON.stringify({ error: "no such query" }));
      return;
    }
    handler(url.searchParams).then(
      (body) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body)),
      (err: unknown) =>
        res
          .writeHead(isDacdError(err) && err.code === "BAD_INPUT" ? 400 : 500, {
            "content-type": "application/json",
          })
          .end(
            JSON.stringify({
              error: err instanceof Error ? err.message : String(err),
              code: isDacdError(err) ? err.code : undefined,
            }),
          ),
    );
  });
  const bound = boundSocketPath(path);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(bound, () => resolve());
  });
  // Its directory already keeps others out; the mode keeps them out should that directory's change.
  await chmod(bound, 0o600);
  await rename(bound, path);
  server.unref();
  // close() unlinks only the name the socket was bound under, and an exit without close() (an
  // uncaught error, a forced exit on the third signal) nothing: the socket is removed either way.
  const remove = (): void => rmSync(path, { force: true });
  process.on("exit", remove);
  server.once("close", () => {
    process.off("exit", remove);
    remove();
  });
  return server;
}
