import { createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { LevelStore } from "../../src/storage/level-store.js";
import { spotChainMember, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { freePort } from "../helpers/free-port.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function listenOn(port: number): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  return server;
}

const close = (server: Server): Promise<void> => new Promise((r) => server.close(() => r()));

describe("a start that fails at a late step", () => {
  it("lets go of what the steps before it took (metrics port, store lock), signs nothing, and the next start signs", async () => {
    const metricsPort = await freePort();
    const escapePort = await freePort();
    // The escape API starts after the listener, the key, the engine, the store, the journal and the
    // control socket: its port taken makes the start fail with all of them held.
    const squatter = await listenOn(escapePort);
    const { gw, expected, setup } = await spotChainMember(
      cleanups,
      undefined,
      `metrics_port: ${metricsPort}\nescape_api_port: ${escapePort}`,
    );
    try {
      await expect(startQuietDaemon(setup.config)).rejects.toThrow(
        `cannot listen on escape_api_host 127.0.0.1 escape_api_port ${escapePort}: EADDRINUSE`,
      );
    } finally {
      await close(squatter);
    }
    expect(gw.posts).toEqual([]);

    // The metrics port is free again, and so is the store's LevelDB lock.
    await close(await listenOn(metricsPort));
    const store = await LevelStore.open(setup.config.dataDir);
    expect(await store.lastBatchId()).toBeUndefined();
    await store.close();

    const daemon = await startQuietDaemon(setup.config);
    try {
      await waitFor(() => gw.accepted.length >= expected.batches.length, 60_000, "all batches signed");
    } finally {
      await daemon.stop();
    }
    expect(gw.acceptedIds()).toEqual(expected.batches.map((b) => b.batch_id));
    // A stop lets go as well: the store opens in this process again.
    const reopened = await LevelStore.open(setup.config.dataDir);
    expect(await reopened.lastBatchId()).toBe(expected.batches.length - 1);
    await reopened.close();
  });
});
