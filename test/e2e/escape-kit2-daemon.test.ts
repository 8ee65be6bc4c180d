import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { decodeShard } from "../../src/escape/kit/v2/shard.js";
import type { Kit2Manifest } from "../../src/escape/kit/v2/format.js";
import { dacdAsync } from "../helpers/dacd-cli.js";
import { memberSetup, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";
import { VectorGateway } from "../helpers/vector-gateway.js";
import { loadChain } from "../helpers/vectors.js";
import { gunzipSync } from "node:zlib";

/**
 * A format-2 kit made beside a running, signing perpetual member (the daemon walks its snapshot
 * over the control socket, the command builds the shards): `dacd proof position ID --format
 * starkex --kit DIR` prints what the running member's `dacd proof … --format starkex` prints, for
 * positions across the kit, and the contracts given on the command line are in the manifest.
 */

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await removeTempDirs();
});

describe("dacd escape-kit (format 2) beside a running member", () => {
  it("builds through the control socket; the kit's position proofs are the member's", async () => {
    const { responses, expected } = loadChain("perpetual-chain");
    const gw = await new VectorGateway(responses, expected, "P").start();
    cleanups.push(() => gw.close());
    gw.available = expected.batches.length;
    const setup = await memberSetup({
      profile: expected.profile,
      privateKey: expected.private_key,
      gatewayUrl: gw.url,
      feeder: true,
      extra: "",
    });
    cleanups.push(() => rm(setup.dir, { recursive: true, force: true }));
    const daemon = await startQuietDaemon(setup.config);
    cleanups.push(() => daemon.stop());
    await waitFor(
      () => daemon.member.state.nextBatchId === expected.batches.length,
      120_000,
      "every batch signed",
    );

    const kit = join(await tempDir("dacd-kit2-daemon-"), "kit");
    const verifier = "0x" + "cd".repeat(20);
    const made = await dacdAsync([
      "escape-kit",
      "--config",
      setup.configPath,
      "--out",
      kit,
      "--chain-id",
      "31337",
      "--verifier",
      verifier,
    ]);
    expect(made.err).toBe("");
    expect(made.code).toBe(0);
    const manifest = JSON.parse(await readFile(join(kit, "manifest.json"), "utf8")) as Kit2Manifest;
    expect(manifest).toMatchObject({
      format: "dacd-escape-kit/2",
      tree: "position",
      chain_id: 31337,
      verifier,
    });
    const ids: bigint[] = [];
    for (let n = 0; n < manifest.shards.length; n++) {
      const stored = await readFile(join(kit, "shards", `${n}.bin`));
      const raw = manifest.shards[n]!.encoding === "gzip" ? gunzipSync(stored) : stored;
      ids.push(...decodeShard(new Uint8Array(raw), `shard ${n}`).leaves.map((l) => l.id));
    }
    expect(ids.length).toBe(manifest.leaves);
    expect(ids.length).toBeGreaterThan(0);
    // A sample across the shards (two CLI runs a position): the first, the last and every k-th.
    const k = Math.max(1, Math.floor(ids.length / 8));
    for (const id of ids.filter((_, i) => i % k === 0 || i === ids.length - 1)) {
      const fromKit = await dacdAsync(["proof", "position", String(id), "--format", "starkex", "--kit", kit]);
      expect(fromKit.code, fromKit.err).toBe(0);
      const live = await dacdAsync([
        "proof",
        "position",
        String(id),
        "--format",
        "starkex",
        "--config",
        setup.configPath,
      ]);
      expect(live.code, live.err).toBe(0);
      expect(fromKit.out).toBe(live.out);
    }
  }, 600_000);
});
