import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { rm } from "node:fs/promises";
import { afterAll, describe, expect, it } from "vitest";
import { memberSetup, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { comparableState } from "../helpers/store-dump.js";
import { VectorGateway } from "../helpers/vector-gateway.js";
import { loadChain } from "../helpers/vectors.js";

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

function startProcess(configPath: string): ChildProcess {
  return spawn(process.execPath, [BIN, "run", "--config", configPath], {
    stdio: ["ignore", "ignore", "pipe"],
  });
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve()),
  );
}

/**
 * Where the daemon is killed: while fetching a batch (nothing stored yet); on approve_new_roots
 * before the gateway answers (stored and posted, not acknowledged); or right after the gateway
 * answered `signature accepted` (the cursor write races the kill).
 */
type KillPoint = { endpoint: "get_batch_data" | "approve_new_roots"; batchId: number; answerFirst: boolean };

describe("crash safety: SIGKILL at many points, then restart", () => {
  it("signs every batch once with one claim per id, and ends with the state of an uninterrupted run", async () => {
    const { responses, expected } = loadChain("spot-chain");
    const gw = await new VectorGateway(responses, expected, "G").start();
    const setup = await memberSetup({
      profile: "spot",
      privateKey: expected.private_key,
      gatewayUrl: gw.url,
      feeder: true,
    });
    dirs.push(setup.dir);

    const points: KillPoint[] = [];
    for (let id = 0; id < expected.batches.length; id++) {
      points.push({ endpoint: "get_batch_data", batchId: id, answerFirst: false });
      points.push({ endpoint: "approve_new_roots", batchId: id, answerFirst: false });
      points.push({ endpoint: "approve_new_roots", batchId: id, answerFirst: true });
    }
    let child: ChildProcess | undefined;
    let pending = [...points];
    let kills = 0;
    gw.interceptor = (_req, res, url) => {
      if (!url.pathname.endsWith("/get_batch_data")) return false;
      const batchId = Number(url.searchParams.get("batch_id"));
      const hit = pending.find((p) => p.endpoint === "get_batch_data" && p.batchId === batchId);
      if (!hit || !child) return false;
      pending = pending.filter((p) => p !== hit);
      kills++;
      child.kill("SIGKILL");
      res.destroy();
      return true;
    };
    // approve_new_roots kill points are checked after the gateway has recorded the post.
    const originalPush = gw.posts.push.bind(gw.posts);
    gw.posts.push = (...items) => {
      const n = originalPush(...items);
      for (const post of items) {
        const before = pending.find(
          (p) => p.endpoint === "approve_new_roots" && p.batchId === post.batch_id && !p.answerFirst,
        );
        const after = pending.find(
          (p) => p.endpoint === "approve_new_roots" && p.batchId === post.batch_id && p.answerFirst,
        );
        const hit = before ?? after;
        if (hit && child) {
          pending = pending.filter((p) => p !== hit);
          kills++;
          const victim = child;
          // Before the answer: kill now. After the answer: kill right after it is sent.
          if (hit === before) victim.kill("SIGKILL");
          else setImmediate(() => victim.kill("SIGKILL"));
        }
      }
      return n;
    };

    const deadline = Date.now() + 120_000;
    while (
      gw.accepted.length < expected.batches.length ||
      new Set(gw.acceptedIds()).size < expected.batches.length
    ) {
      if (Date.now() > deadline) throw new Error(`not done: accepted ${gw.acceptedIds().join(",")}`);
      child = startProcess(setup.configPath);
      let stderr = "";
      child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
      const current = child;
      await Promise.race([
        exited(current),
        waitFor(() => new Set(gw.acceptedIds()).size >= expected.batches.length, 120_000).catch(
          () => undefined,
        ),
      ]);
      if (current.exitCode !== null && current.exitCode !== 0 && current.signalCode === null) {
        throw new Error(`dacd exited with ${current.exitCode}: ${stderr}`);
      }
      if (current.exitCode === null && current.signalCode === null) {
        current.kill("SIGTERM");
        await exited(current);
      }
    }
    await gw.close();
    expect(kills).toBeGreaterThanOrEqual(points.length - 2);
    expect(gw.conflictingClaims()).toEqual([]);
    expect([...new Set(gw.acceptedIds())].sort((a, b) => a - b)).toEqual(
      expected.batches.map((b) => b.batch_id),
    );

    // The same chain without interruptions, in process.
    const gw2 = await new VectorGateway(responses, expected, "G").start();
    const ref = await memberSetup({
      profile: "spot",
      privateKey: expected.private_key,
      gatewayUrl: gw2.url,
      feeder: true,
    });
    dirs.push(ref.dir);
    const daemon = await startQuietDaemon(ref.config);
    await waitFor(() => daemon.member.state.nextBatchId === expected.batches.length);
    await daemon.stop();
    await gw2.close();
    expect(await comparableState(setup.config.dataDir)).toEqual(await comparableState(ref.config.dataDir));
  }, 180_000);
});
