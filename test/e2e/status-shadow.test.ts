import { spawnSync } from "node:child_process";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Daemon } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import { memberSetup, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { VectorGateway } from "../helpers/vector-gateway.js";
import { FIXTURES, type Expected } from "../helpers/vectors.js";

/**
 * After a shadow run on a store imported at batch 4, `dacd status` names the mode and the newest
 * verified batch (7), calls nothing pending, and `dump`/`proof` work on batch 7 by default.
 */

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");

function dacd(...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: "utf8",
    env: { ...process.env, DACD_HASH_ENGINE: "wasm" },
    timeout: 120_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

let gateway: VectorGateway | undefined;
let daemon: Daemon | undefined;
let dir: string | undefined;
afterAll(async () => {
  await daemon?.stop();
  await gateway?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("status, dump and proof after a shadow run", () => {
  it("name the mode and the newest verified batch, and default to it", async () => {
    const name = "reference-state-spot";
    const read = async (f: string): Promise<unknown> =>
      JSON.parse(await readFile(join(FIXTURES, name, f), "utf8"));
    const responses = (await read("responses.json")) as { update: unknown }[];
    const expected = (await read("expected.json")) as Expected;
    gateway = await new VectorGateway(responses, expected, "G").start();
    const setup = await memberSetup({
      profile: "spot",
      privateKey: expected.private_key,
      gatewayUrl: gateway.url,
      validateRollup: null,
      extra: "mode: shadow",
    });
    dir = setup.dir;
    const load = dacd(
      "load",
      "--from-reference",
      join(FIXTURES, name, "state.bz2"),
      "--config",
      setup.configPath,
    );
    expect(load.code, load.err).toBe(0);

    // Before any run: nothing pending, the loaded batch is the newest verified one.
    const fresh = JSON.parse(dacd("status", "--json", "--config", setup.configPath).out) as Record<
      string,
      unknown
    >;
    expect(fresh).toMatchObject({ pending_batch: null, newest_verified_batch: { batch_id: 4 } });

    daemon = await startQuietDaemon(loadConfig(setup.configPath, {}));
    await waitFor(
      async () => (await daemon!.store.getCursor())?.next_batch_id === 8,
      120_000,
      "batches 5-7 verified in shadow mode",
    );
    await daemon.stop();
    daemon = undefined;
    expect(gateway.posts).toEqual([]);

    const json = dacd("status", "--json", "--config", setup.configPath);
    expect(json.code, json.err).toBe(0);
    expect(JSON.parse(json.out)).toMatchObject({
      mode: "shadow",
      newest_verified_batch: { batch_id: 7, shadowed_at: expect.any(String) },
      pending_batch: null,
    });
    const summary = dacd("status", "--no-json", "--config", setup.configPath);
    expect(summary.code, summary.err).toBe(0);
    expect(summary.out).toMatch(/^mode\s+shadow \(verifies and signs, posts nothing\), in its last run$/m);
    expect(summary.out).toMatch(/^newest verified\s+batch 7 \(sequence \d+\), verified in shadow mode /m);
    expect(summary.out).not.toMatch(/pending|accepted \?/);

    const proof = dacd("proof", "vault", "0", "--config", setup.configPath);
    expect(proof.code, proof.err).toBe(0);
    expect(JSON.parse(proof.out)).toMatchObject({ batch_id: 7 });
    const out = join(setup.dir, "dump");
    const dump = dacd("dump", "--out", out, "--config", setup.configPath);
    expect(dump.code, dump.err).toBe(0);
    expect(JSON.parse(dump.out)).toMatchObject({ batch_id: 7 });
  }, 240_000);
});
