import { spawn, spawnSync } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Daemon } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import { memberSetup, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { VectorGateway } from "../helpers/vector-gateway.js";
import { FIXTURES, type Expected } from "../helpers/vectors.js";

/**
 * Onboarding from the reference member's state archive, end to end: `dacd load --from-reference`
 * (the CLI), then the daemon against a real local gateway serving the whole 8-batch chain. It must
 * sign batches 5-7 exactly as expected.json says and post nothing for batches 0-4.
 */

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");

function dacd(...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: "utf8",
    env: { ...process.env, DACD_HASH_ENGINE: "wasm" },
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function dacdAsync(...args: string[]): Promise<{ code: number | null; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, DACD_HASH_ENGINE: "wasm" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (s: string) => (err += s));
    child.on("close", (code) => resolve({ code, err }));
  });
}

interface Vector {
  responses: { update: unknown }[];
  expected: Expected;
  state: {
    batch_id: number;
    sequence_number: number;
    roots: Record<string, string>;
    vaults: number;
    orders: number;
  };
}

async function vector(name: string): Promise<Vector> {
  const read = async (f: string): Promise<unknown> =>
    JSON.parse(await readFile(join(FIXTURES, name, f), "utf8"));
  return {
    responses: (await read("responses.json")) as Vector["responses"],
    expected: (await read("expected.json")) as Expected,
    state: (await read("state.json")) as Vector["state"],
  };
}

let gateway: VectorGateway | undefined;
let daemon: Daemon | undefined;
afterEach(async () => {
  await daemon?.stop();
  await gateway?.close();
  daemon = undefined;
  gateway = undefined;
});

describe("onboarding from the reference member's state archive", () => {
  it.each([
    ["reference-state-spot", "spot", true],
    ["reference-state-spot-v4.0", "spot-v4.0", false],
  ] as const)(
    "%s: imported at batch 4, the member signs 5-7 as expected.json says and posts nothing for 0-4",
    async (name, profile, feeder) => {
      const v = await vector(name);
      gateway = await new VectorGateway(v.responses, v.expected, "G").start();
      const setup = await memberSetup({
        profile,
        privateKey: v.expected.private_key,
        gatewayUrl: gateway.url,
        feeder,
        validateRollup: null,
      });

      const load = dacd(
        "load",
        "--from-reference",
        join(FIXTURES, name, "state.bz2"),
        "--config",
        setup.configPath,
      );
      // Not a terminal: a progress line every 5 s at most, for logs.
      for (const line of load.err.split("\n").filter(Boolean)) expect(line).toMatch(/^dacd load: /);
      expect(load.code).toBe(0);
      const result = JSON.parse(load.out) as {
        batch_id: number;
        sequence_number: number;
        roots: Record<string, string>;
      };
      expect(result).toMatchObject({
        batch_id: v.state.batch_id,
        sequence_number: v.state.sequence_number,
        leaves: { vault: v.state.vaults, order: v.state.orders },
      });
      expect(result.roots).toEqual(v.state.roots);

      // Every node of the imported trees is there and hashes right.
      const check = dacd("check", "--config", setup.configPath, "--deep");
      expect(check.code).toBe(0);
      expect(JSON.parse(check.out)).toMatchObject({ ok: true, loaded_from_dump: { count: 1, ranges: "4" } });

      // Loading again over the store is refused; the store is kept.
      const again = dacd(
        "load",
        "--from-reference",
        join(FIXTURES, name, "state.bz2"),
        "--config",
        setup.configPath,
      );
      expect(again.code).toBe(2); // could not run (cli/exit-codes.ts)
      expect(again.err).toMatch(/^dacd: the store .* is not empty/);

      if (profile === "spot") {
        // The archive has no rollup vault leaves: validate_rollup true is refused at start, in one line.
        const rollupConfig = join(setup.dir, "rollup.yaml");
        await writeFile(rollupConfig, (await readFile(setup.configPath, "utf8")) + "validate_rollup: true\n");
        // Spawned asynchronously: this process's gateway must answer while it starts.
        const run = await dacdAsync("run", "--config", rollupConfig);
        expect(run.code).toBe(78);
        expect(run.err.trim().split("\n")).toHaveLength(1);
        expect(run.err).toMatch(
          /imported from the reference member's state archive \(batch 4\).*validate_rollup false or absent/,
        );
      }

      daemon = await startQuietDaemon(loadConfig(setup.configPath, {}));
      await waitFor(() => gateway!.acceptedIds().length >= 3, 120_000, "batches 5-7 accepted");
      await new Promise((r) => setTimeout(r, 300)); // nothing more follows
      expect(gateway.acceptedIds()).toEqual([5, 6, 7]);
      expect(gateway.posts.map((p) => p.batch_id)).toEqual([5, 6, 7]);
      for (const post of gateway.posts) {
        const want = v.expected.batches.find((b) => b.batch_id === post.batch_id)!;
        expect(post).toMatchObject({ claim_hash: want.claim_hash, signature: want.signature });
      }
      expect(await daemon.store.getCursor()).toMatchObject({ next_batch_id: 8, last_accepted_batch_id: 7 });
    },
    180_000,
  );

  it("round trip: a member's state at batch 6 exported, imported into a new store, and the chain continued with the same signatures", async () => {
    const name = "reference-state-spot";
    const v = await vector(name);
    gateway = await new VectorGateway(v.responses, v.expected, "G").start();
    // The first member signs 5 and 6 (batch 6 builds on 4: the operator dropped 5).
    gateway.available = 7;
    const first = await memberSetup({
      profile: "spot",
      privateKey: v.expected.private_key,
      gatewayUrl: gateway.url,
      validateRollup: null,
    });
    expect(
      dacd("load", "--from-reference", join(FIXTURES, name, "state.bz2"), "--config", first.configPath).code,
    ).toBe(0);
    daemon = await startQuietDaemon(loadConfig(first.configPath, {}));
    await waitFor(() => gateway!.acceptedIds().length >= 2, 120_000, "batches 5-6 accepted");
    await daemon.stop();
    daemon = undefined;

    const archive = join(first.dir, "state-6.bz2");
    const dump = dacd(
      "dump",
      "--format",
      "reference",
      "--batch",
      "6",
      "--out",
      archive,
      "--config",
      first.configPath,
    );
    expect(dump.err).toBe("");
    expect(dump.code).toBe(0);
    expect(JSON.parse(dump.out)).toMatchObject({
      batch_id: 6,
      sequence_number: v.expected.batches[6]!.seq,
      roots: { vault: v.expected.batches[6]!.roots.vault, order: v.expected.batches[6]!.roots.order },
    });

    const second = await memberSetup({
      profile: "spot",
      privateKey: v.expected.private_key,
      gatewayUrl: gateway.url,
      feeder: true,
      validateRollup: false,
    });
    const load = dacd("load", "--from-reference", archive, "--config", second.configPath);
    expect(load.code).toBe(0);
    expect(JSON.parse(load.out)).toMatchObject({ batch_id: 6, sequence_number: v.expected.batches[6]!.seq });
    gateway.available = 8;
    daemon = await startQuietDaemon(loadConfig(second.configPath, {}));
    await waitFor(() => gateway!.acceptedIds().length >= 3, 120_000, "batch 7 accepted");
    await new Promise((r) => setTimeout(r, 300));
    expect(gateway.posts.map((p) => p.batch_id)).toEqual([5, 6, 7]);
    expect(gateway.acceptedIds()).toEqual([5, 6, 7]); // each with expected.json's signature
    expect(gateway.conflictingClaims()).toEqual([]);
  }, 180_000);
});
