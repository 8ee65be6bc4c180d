import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { DacdError } from "../errors.js";

/**
 * Listens on `host:port` and returns the server's URL. A failure (a port in use, an address not
 * on this host) is one CONFIG line naming the configuration keys `<keys>_host` and `<keys>_port`.
 */
export async function listenHttp(server: Server, host: string, port: number, keys: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) =>
      reject(
        new DacdError(
          "CONFIG",
          `cannot listen on ${keys}_host ${host} ${keys}_port ${port}: ${err.code ?? err.message}` +
            (err.code === "EADDRINUSE" ? " (another process uses the port)" : ""),
        ),
      ),
    );
    server.listen(port, host, () => resolve());
  });
  const { address, port: bound } = server.address() as AddressInfo;
  return `http://${address.includes(":") ? `[${address}]` : address}:${bound}`;
}

/** Closes the server and every connection it still holds. */
export function closeHttp(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}
