import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startDaemon, type Daemon } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/logging.js";
import { readiness } from "../../src/service/health.js";
import { memberSetup, waitFor } from "../helpers/daemon.js";
import { VectorGateway } from "../helpers/vector-gateway.js";
import { loadChain } from "../helpers/vectors.js";

/**
 * Shadow mode against a real local gateway serving the spot chain: every batch is verified,
 * stored, signed and logged with the claim and signature expected.json gives, and the gateway
 * receives no POST; switched to active, the member continues at its cursor and posts only the
 * batches that follow.
 */

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");

interface LogLine {
  msg: string;
  outcome?: string;
  batch_id?: number;
  claim_hash?: string;
  signature?: string;
  mode?: string;
}

let gateway: VectorGateway | undefined;
let daemon: Daemon | undefined;
afterEach(async () => {
  await daemon?.stop();
  await gateway?.close();
  daemon = undefined;
  gateway = undefined;
});

async function start(configPath: string, env: Record<string, string>, lines: LogLine[]): Promise<Daemon> {
  const log = createLogger({
    level: "info",
    destination: { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) },
  });
  return startDaemon(loadConfig(configPath, env), { log, retryAttempts: 2 });
}

describe("shadow mode", () => {
  it.each([
    ["with a feeder", true],
    ["without a feeder", false],
  ])(
    "verifies, signs and logs every batch, posts nothing, then active posts what follows (%s)",
    async (_n, feeder) => {
      const { responses, expected } = loadChain("spot-chain");
      gateway = await new VectorGateway(responses, expected, "G").start();
      gateway.available = 4; // batches 0-3 first
      const setup = await memberSetup({
        profile: "spot",
        privateKey: expected.private_key,
        gatewayUrl: gateway.url,
        feeder,
        extra: "mode: shadow",
      });

      const lines: LogLine[] = [];
      daemon = await start(setup.configPath, {}, lines);
      expect(daemon.member.state.mode).toBe("shadow");
      await waitFor(
        async () => (await daemon!.store.getCursor())?.next_batch_id === 4,
        60_000,
        "batches 0-3",
      );
      expect(gateway.posts).toEqual([]);
      const shadowed = lines.filter((l) => l.outcome === "shadow");
      expect(shadowed.map((l) => l.batch_id)).toEqual([0, 1, 2, 3]);
      for (const l of shadowed) {
        const want = expected.batches.find((b) => b.batch_id === l.batch_id)!;
        expect(l).toMatchObject({ claim_hash: want.claim_hash, signature: want.signature });
      }
      expect(lines.some((l) => l.outcome === "signed")).toBe(false);
      expect(await daemon.store.getCursor()).toMatchObject({ next_batch_id: 4, last_accepted_batch_id: -1 });
      // Status, readiness and metrics say shadow.
      const ready = readiness(daemon.member.state, { maxReadyLag: 5, maxStallS: 120 });
      expect(ready).toMatchObject({ mode: "shadow" });
      if (feeder)
        expect(ready).toMatchObject({ ok: true, reason: expect.stringMatching(/shadow mode/) as unknown });
      const metrics = await daemon.metrics.registry.metrics();
      expect(metrics).toMatch(/^dacd_mode\{mode="shadow"\} 1$/m);
      expect(metrics).toMatch(/^dacd_mode\{mode="active"\} 0$/m);
      await daemon.stop();
      daemon = undefined;

      // Active (the file's mode overridden as an operator would, by the environment): batches 0-3 are
      // never posted; 4 and 5 are, with the expected signatures.
      gateway.available = 6;
      const active: LogLine[] = [];
      daemon = await start(setup.configPath, { DACD_MODE: "active" }, active);
      expect(daemon.member.state.mode).toBe("active");
      await waitFor(() => gateway!.acceptedIds().length >= 2, 60_000, "batches 4-5 posted");
      await new Promise((r) => setTimeout(r, 300));
      expect(gateway.posts.map((p) => p.batch_id)).toEqual([4, 5]);
      expect(gateway.acceptedIds()).toEqual([4, 5]);
      expect(await daemon.store.getCursor()).toMatchObject({ next_batch_id: 6, last_accepted_batch_id: 5 });
      expect(await daemon.metrics.registry.metrics()).toMatch(/^dacd_mode\{mode="active"\} 1$/m);
    },
    180_000,
  );

  it("dacd run --shadow: the flag puts a configured active member in shadow mode", async () => {
    const { responses, expected } = loadChain("spot-chain");
    gateway = await new VectorGateway(responses, expected, "G").start();
    const setup = await memberSetup({
      profile: "spot",
      privateKey: expected.private_key,
      gatewayUrl: gateway.url,
    });
    const child = spawn(process.execPath, [BIN, "run", "--config", setup.configPath, "--shadow"], {
      env: { ...process.env, DACD_HASH_ENGINE: "wasm" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const lines: LogLine[] = [];
    let rest = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => {
      const parts = (rest + s).split("\n");
      rest = parts.pop()!;
      for (const p of parts) if (p.startsWith("{")) lines.push(JSON.parse(p) as LogLine);
    });
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    try {
      await waitFor(
        () => lines.filter((l) => l.outcome === "shadow").length >= responses.length,
        120_000,
        "all batches shadowed",
      );
      expect(lines.find((l) => l.msg.startsWith("dacd started"))).toMatchObject({ mode: "shadow" });
      expect(gateway.posts).toEqual([]);
      const shadowed = lines.filter((l) => l.outcome === "shadow");
      expect(shadowed.map((l) => l.claim_hash)).toEqual(expected.batches.map((b) => b.claim_hash));
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
  }, 180_000);
});
