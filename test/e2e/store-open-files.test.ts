import { rm } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import { startDaemon } from "../../src/app.js";
import { openFileLimit } from "../../src/storage/open-files.js";
import { memberSetup, recordingLogger, waitFor } from "../helpers/daemon.js";
import { VectorGateway } from "../helpers/vector-gateway.js";
import { loadChain } from "../helpers/vectors.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("store_max_open_files above the process's open-file limit", () => {
  it("warns at start, keeps LevelDB within the limit and signs every batch", async () => {
    const limit = openFileLimit();
    if (limit === undefined || limit === Infinity) return; // no /proc/self/limits: nothing to clamp
    const { responses, expected } = loadChain("perpetual-chain");
    const gw = await new VectorGateway(responses, expected, "P").start();
    cleanups.push(() => gw.close());
    const setup = await memberSetup({
      profile: expected.profile,
      privateKey: expected.private_key,
      gatewayUrl: gw.url,
      feeder: true,
      extra: `store_max_open_files: ${limit + 5000}`,
    });
    cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
    const { log, lines } = recordingLogger("warn");
    const daemon = await startDaemon(setup.config, { log, retryAttempts: 2 });
    try {
      await waitFor(() => gw.accepted.length >= expected.batches.length, 60_000, "all batches signed");
    } finally {
      await daemon.stop();
    }
    expect(gw.acceptedIds()).toEqual(expected.batches.map((b) => b.batch_id));
    const warning = lines.find((l) => String(l.msg).startsWith("store_max_open_files is more than"));
    expect(warning).toMatchObject({
      store_max_open_files: limit + 5000,
      open_file_limit: limit,
      tables_open: limit - Math.min(1024, Math.floor(limit / 2)),
    });
  });
});
