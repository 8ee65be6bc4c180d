import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LevelStore } from "../../src/storage/level-store.js";
import type { BatchTimes } from "../../src/poller/member/prefetch.js";
import { startDaemon, type Daemon } from "../../src/app.js";
import { createLogger } from "../../src/logging.js";
import { spotChainMember, startQuietDaemon, waitFor } from "../helpers/daemon.js";
import { comparableState } from "../helpers/store-dump.js";
import type { VectorGateway } from "../helpers/vector-gateway.js";
import { loadChain } from "../helpers/vectors.js";

/**
 * The member fetches and parses batches ahead of the one it verifies (src/poller/member/prefetch.ts).
 * These tests hold it, against a real local gateway and a real store, to what the unpipelined
 * member promised: signatures in id order, one claim per batch id, a refused batch stopping the
 * member at that batch, and nothing signed twice or skipped across SIGKILLs.
 */

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** What the gateway saw, in the order it saw it: requests for batch data and posted signatures. */
type Seen = { kind: "fetch" | "post"; batchId: number };

/** Records every get_batch_data (before `delay` holds its answer back) and every post. */
function record(gw: VectorGateway, delay: (batchId: number) => number = () => 0): Seen[] {
  const seen: Seen[] = [];
  gw.interceptor = async (_req, _res, url, body) => {
    if (url.pathname.endsWith("/get_batch_data")) {
      const batchId = Number(url.searchParams.get("batch_id"));
      seen.push({ kind: "fetch", batchId });
      const ms = delay(batchId);
      if (ms > 0) await sleep(ms);
    } else if (url.pathname.endsWith("/approve_new_roots")) {
      seen.push({ kind: "post", batchId: (JSON.parse(body) as { batch_id: number }).batch_id });
    }
    return false;
  };
  return seen;
}

const index = (seen: Seen[], kind: Seen["kind"], batchId: number): number =>
  seen.findIndex((s) => s.kind === kind && s.batchId === batchId);

function startWithTimes(config: Parameters<typeof startDaemon>[0], times: Map<number, BatchTimes>) {
  return startDaemon(config, {
    log: createLogger({ level: "silent" }),
    retryAttempts: 2,
    events: { onBatchTimes: (id, t) => times.set(id, t) },
  });
}

/** A copy of the chain's answer for `batchId` with a vault root the leaves do not give. */
function wrongRoot(batchId: number): { update: unknown } {
  const update = structuredClone(loadChain("spot-chain").responses[batchId]!.update) as Record<
    string,
    unknown
  >;
  update.vault_root = "0".repeat(64);
  return { update };
}

describe("catching up with fetches running ahead", () => {
  it("signs in id order while later batches answer sooner than earlier ones", async () => {
    const { gw, expected, setup } = await spotChainMember(cleanups);
    const n = expected.batches.length;
    // Batch 0 answers last of the first three, batch 1 second: every answer comes out of order.
    const seen = record(gw, (id) => (n - id) * 150);
    const times = new Map<number, BatchTimes>();
    const daemon = await startWithTimes(setup.config, times);
    cleanups.push(() => daemon.stop());
    // The member reports a batch's times once its acceptance is stored, after the gateway's answer.
    await waitFor(() => times.size === n, 60_000, "every batch signed");

    const posts = seen.filter((s) => s.kind === "post").map((s) => s.batchId);
    expect(posts).toEqual(expected.batches.map((b) => b.batch_id));
    expect(gw.acceptedIds()).toEqual(expected.batches.map((b) => b.batch_id));
    expect(gw.conflictingClaims()).toEqual([]);
    for (const p of gw.posts) expect(p.claim_hash).toBe(expected.batches[p.batch_id]!.claim_hash);
    // Running ahead: batch k + 1 was asked for before batch k's signature was posted, and each
    // batch was fetched once.
    for (let k = 0; k + 1 < n; k++) expect(index(seen, "fetch", k + 1)).toBeLessThan(index(seen, "post", k));
    for (let k = 0; k < n; k++)
      expect(seen.filter((s) => s.kind === "fetch" && s.batchId === k)).toHaveLength(1);
    // The later batches were ready when their turn came: batch 1 (answered 150 ms after batch 0)
    // and batch 2 had been waiting while batch 0 was awaited.
    expect([...times.keys()]).toEqual(expected.batches.map((b) => b.batch_id));
    expect(times.get(0)!.waitMs).toBeGreaterThan(500);
    expect(times.get(2)!.waitMs).toBeLessThan(times.get(0)!.waitMs);
  }, 90_000);

  it("a refused batch fetched ahead stops the member at that batch; the retry fetches afresh", async () => {
    const { gw, expected, setup } = await spotChainMember(cleanups);
    const n = expected.batches.length;
    const good = gw.responses[3]!;
    gw.responses[3] = wrongRoot(3);
    const seen = record(gw);
    const daemon = await startQuietDaemon(setup.config);
    cleanups.push(() => daemon.stop());
    // Refused more than once (batch 3 fetched again for each retry), and nothing past it signed.
    await waitFor(
      () => seen.filter((s) => s.kind === "fetch" && s.batchId === 3).length >= 3,
      60_000,
      "batch 3 retried",
    );
    expect(index(seen, "fetch", 3)).toBeLessThan(index(seen, "post", 2));
    expect(daemon.member.state.nextBatchId).toBe(3);
    expect(daemon.member.state.failing).toMatchObject({ batch_id: 3, code: "ROOT_MISMATCH" });
    expect(gw.posts.map((p) => p.batch_id)).toEqual([0, 1, 2]);

    gw.responses[3] = good;
    await waitFor(() => gw.accepted.length === n, 60_000, "every batch accepted");
    expect(seen.filter((s) => s.kind === "post").map((s) => s.batchId)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(gw.conflictingClaims()).toEqual([]);
    expect(gw.posts.find((p) => p.batch_id === 3)!.claim_hash).toBe(expected.batches[3]!.claim_hash);
  }, 90_000);

  it("a batch changed by the gateway after it was fetched ahead is signed as fetched, with one claim", async () => {
    // The member signs the data it verified: batch 3 as fetched ahead. It is not fetched again
    // before signing (that would undo the pipelining, and the unpipelined member has the same
    // window between its fetch and its post), and a batch id is never signed with a second claim.
    const { gw, expected, setup } = await spotChainMember(cleanups);
    const n = expected.batches.length;
    const seen = record(gw, (id) => (id < 3 ? 300 : 0));
    const served = gw.interceptor!;
    gw.interceptor = async (req, res, url, body) => {
      const handled = await served(req, res, url, body);
      // Answered as the chain has it this once; changed for every later request.
      if (url.searchParams.get("batch_id") === "3" && url.pathname.endsWith("/get_batch_data"))
        setImmediate(() => (gw.responses[3] = wrongRoot(3)));
      return handled;
    };
    const daemon = await startQuietDaemon(setup.config);
    cleanups.push(() => daemon.stop());
    await waitFor(() => gw.accepted.length === n, 60_000, "every batch accepted");
    expect(index(seen, "fetch", 3)).toBeLessThan(index(seen, "post", 2));
    expect(seen.filter((s) => s.kind === "fetch" && s.batchId === 3)).toHaveLength(1);
    expect(gw.posts.map((p) => p.batch_id)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(gw.posts[3]!.claim_hash).toBe(expected.batches[3]!.claim_hash);
    expect(gw.conflictingClaims()).toEqual([]);
  }, 90_000);

  it("a post refused while the next batch is verified on top of it: posts stay in order, one claim each", async () => {
    // A verified batch is written and posted while the next one is verified (member.ts): batch 4
    // is verified and stored while batch 3's post is refused, and posted only after batch 3's.
    // (Not batch 2: the operator dropped it, batch 3 builds on 1, so a refused post of batch 2 is
    // final and the member moves past it; devnet-rejected-after-signing.test.ts.)
    const { gw, expected, setup } = await spotChainMember(cleanups);
    const n = expected.batches.length;
    const seen = record(gw);
    const served = gw.interceptor!;
    let refusals = 0;
    gw.interceptor = async (req, res, url, body) => {
      const post = url.pathname.endsWith("/approve_new_roots");
      if (post && (JSON.parse(body) as { batch_id: number }).batch_id === 3 && refusals < 2) {
        refusals++;
        seen.push({ kind: "post", batchId: 3 });
        res.writeHead(200, { "content-type": "application/str" }).end("not now");
        return true;
      }
      return served(req, res, url, body);
    };
    const daemon = await startQuietDaemon(setup.config);
    cleanups.push(() => daemon.stop());
    // The cursor moves once the acceptance is stored, after the gateway's answer.
    await waitFor(() => daemon.member.state.nextBatchId === n, 60_000, "every batch accepted");
    await daemon.stop();

    expect(seen.filter((s) => s.kind === "post").map((s) => s.batchId)).toEqual([0, 1, 2, 3, 3, 3, 4, 5]);
    expect(gw.acceptedIds()).toEqual(expected.batches.map((b) => b.batch_id));
    expect(gw.conflictingClaims()).toEqual([]);
    for (const p of gw.posts) expect(p.claim_hash).toBe(expected.batches[p.batch_id]!.claim_hash);
    const store = await LevelStore.open(setup.config.dataDir);
    try {
      const [three, four] = [(await store.getBatch(3))!, (await store.getBatch(4))!];
      expect(Date.parse(four.verified_at)).toBeLessThan(Date.parse(three.accepted_at!));
      expect(Date.parse(four.accepted_at!)).toBeGreaterThanOrEqual(Date.parse(three.accepted_at!));
      expect((await store.getCursor())?.next_batch_id).toBe(n);
    } finally {
      await store.close();
    }
  }, 90_000);

  it("SIGKILL while fetches run ahead: each restart resumes at the stored cursor, nothing signed twice or skipped", async () => {
    const { gw, expected, setup } = await spotChainMember(cleanups);
    const n = expected.batches.length;
    // Answers held back, so that a kill finds fetches ahead in flight.
    record(gw, () => 120);
    const log = gw.interceptor!;
    let child: ChildProcess | undefined;
    // Kill points: when batch k + 2 is asked for ahead (batch k not yet posted), and when batch k's
    // post arrives (batches k + 1 and k + 2 in flight or parsed).
    const pending = new Set<string>();
    for (let k = 0; k < n; k++) {
      if (k + 2 < n) pending.add(`fetch ${k + 2}`);
      pending.add(`post ${k}`);
    }
    let kills = 0;
    gw.interceptor = async (req, res, url, body) => {
      const fetch = url.pathname.endsWith("/get_batch_data");
      const post = url.pathname.endsWith("/approve_new_roots");
      const id = fetch
        ? Number(url.searchParams.get("batch_id"))
        : post
          ? (JSON.parse(body) as { batch_id: number }).batch_id
          : -1;
      const point = `${fetch ? "fetch" : "post"} ${id}`;
      if ((fetch || post) && pending.has(point) && child) {
        // A fetch counts only while it runs ahead: batch k not yet accepted.
        if (post || !gw.acceptedIds().includes(id - 2)) {
          pending.delete(point);
          kills++;
          child.kill("SIGKILL");
          res.destroy();
          return true;
        }
      }
      return log(req, res, url, body);
    };

    /** Per run: the cursor it started from and what it posted. */
    const runs: { cursor: number; posts: number[] }[] = [];
    const deadline = Date.now() + 240_000;
    while (new Set(gw.acceptedIds()).size < n) {
      if (Date.now() > deadline) throw new Error(`not done: accepted ${gw.acceptedIds().join(",")}`);
      const store = await LevelStore.open(setup.config.dataDir).catch(() => undefined);
      const cursor = (await store?.getCursor())?.next_batch_id ?? 0;
      await store?.close();
      const from = gw.posts.length;
      child = spawn(process.execPath, [BIN, "run", "--config", setup.configPath], {
        stdio: ["ignore", "ignore", "pipe"],
      });
      let stderr = "";
      child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
      const current = child;
      const exited = new Promise<void>((r) => current.once("exit", () => r()));
      await Promise.race([
        exited,
        waitFor(() => new Set(gw.acceptedIds()).size >= n, 60_000).catch(() => undefined),
      ]);
      if (current.exitCode !== null && current.exitCode !== 0) throw new Error(`dacd exited: ${stderr}`);
      if (current.exitCode === null && current.signalCode === null) {
        current.kill("SIGTERM");
        await exited;
      }
      runs.push({ cursor, posts: gw.posts.slice(from).map((p) => p.batch_id) });
    }
    await gw.close();

    expect(kills).toBeGreaterThanOrEqual(n);
    expect(gw.conflictingClaims()).toEqual([]);
    for (const p of gw.posts) expect(p.claim_hash).toBe(expected.batches[p.batch_id]!.claim_hash);
    // First acceptances in id order, every id: nothing skipped.
    expect([...new Set(gw.acceptedIds())]).toEqual(expected.batches.map((b) => b.batch_id));
    expect(runs.filter((r) => r.posts.length > 0).length).toBeGreaterThan(0);
    for (const { cursor, posts } of runs) {
      // A run starts at its stored cursor: its first post is that batch (a stored, unacknowledged
      // signature is posted again), and it posts nothing before it.
      if (posts.length > 0) expect(posts[0]).toBe(cursor);
      expect(posts.every((id, i) => id >= cursor && (i === 0 || id > posts[i - 1]!))).toBe(true);
    }
    // A batch is posted at most twice (once more after a kill that cut its acknowledgement), always
    // with its one claim, and the final state is that of an uninterrupted run.
    for (const b of expected.batches)
      expect(gw.posts.filter((p) => p.batch_id === b.batch_id).length).toBeLessThanOrEqual(2);
    const { setup: ref } = await spotChainMember(cleanups);
    const daemon: Daemon = await startQuietDaemon(ref.config);
    await waitFor(() => daemon.member.state.nextBatchId === n);
    await daemon.stop();
    expect(await comparableState(setup.config.dataDir)).toEqual(await comparableState(ref.config.dataDir));
    const store = await LevelStore.open(setup.config.dataDir);
    expect(await store.getCursor()).toMatchObject({ next_batch_id: n });
    expect((await store.getCursor())?.skipped ?? []).toEqual([]);
    await store.close();
  }, 300_000);
});
