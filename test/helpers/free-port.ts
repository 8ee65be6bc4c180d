import { createServer } from "node:net";

/** A TCP port on 127.0.0.1 that was free a moment ago (for a server the test starts itself). */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}
