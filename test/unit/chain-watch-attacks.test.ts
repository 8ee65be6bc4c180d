import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ChainWatch, type ChainWatchOptions } from "../../src/chain/watch.js";
import { createLogger } from "../../src/logging.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { levelDb } from "../../src/storage/level-db.js";
import { ONCHAIN_BATCH_RANGE } from "../../src/storage/keys.js";
import { NodeWrites } from "../../src/storage/records/node-writes.js";
import { placeholderRecord } from "../helpers/batch-record.js";
import { frozenLog, LyingRpc, rootUpdateLog, uint } from "../helpers/lying-rpc.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

/**
 * The base-chain watch against a JSON-RPC server on loopback that lies: logs from other
 * addresses, malformed logs, views that change their answer, far-future and 2^64 batch ids, a
 * head that jumps, malformed answers, floods of forged logs. A freeze is only what the exchange
 * declares and confirms; the watch's memory, records and log lines stay bounded; it never stops
 * for good.
 */
const EXCHANGE = `0x${"ab".repeat(20)}`;
const OTHER = `0x${"cd".repeat(20)}`;
const CONFIRMATIONS = 2;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(removeTempDirs);

/** Batch `id`'s stored roots in these tests. */
const rootsOf = (id: number) => ({
  vault: BigInt(1000 + id),
  rollupVault: BigInt(2000 + id),
  order: BigInt(3000 + id),
});
const hex64 = (v: bigint) => v.toString(16).padStart(64, "0");

interface Setup {
  rpc: LyingRpc;
  store: LevelStore;
  watch: ChainWatch;
  lines: Record<string, unknown>[];
  counts: { rpcFailures: number; mismatches: number; withdrawn: number; rejected: Record<string, number> };
}

/** A store holding batches [0, batches) with rootsOf's roots, a lying RPC server, a watch on both. */
async function setup(batches = 10, extra: Partial<ChainWatchOptions> = {}): Promise<Setup> {
  const rpc = await new LyingRpc().start();
  cleanups.push(() => rpc.close());
  const store = await LevelStore.open(join(await tempDir("dacd-watch-"), "db"));
  cleanups.push(() => store.close());
  for (let id = 0; id < batches; id++) {
    const r = rootsOf(id);
    await store.commitBatch(
      {
        ...placeholderRecord(id),
        roots: { vault: hex64(r.vault), rollup_vault: hex64(r.rollupVault), order: hex64(r.order) },
      },
      new NodeWrites(),
      new NodeWrites(),
    );
  }
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _e, cb) {
      for (const l of chunk.toString().split("\n")) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  const counts: Setup["counts"] = { rpcFailures: 0, mismatches: 0, withdrawn: 0, rejected: {} };
  const watch = new ChainWatch({
    rpcUrl: rpc.url,
    contract: EXCHANGE,
    confirmations: CONFIRMATIONS,
    pollIntervalMs: 20,
    timeoutMs: 5_000,
    mainTree: "vault",
    store,
    log: createLogger({ level: "debug", destination }),
    events: {
      onRpcFailure: () => counts.rpcFailures++,
      onRootMismatch: () => counts.mismatches++,
      onFreezeWithdrawn: () => counts.withdrawn++,
      onRejected: (reason) => (counts.rejected[reason] = (counts.rejected[reason] ?? 0) + 1),
    },
    ...extra,
  });
  cleanups.push(() => watch.stop());
  rpc.views.isFrozen = () => false;
  rpc.views.getLastBatchId = () => BigInt(batches - 1);
  return { rpc, store, watch, lines, counts };
}

const update = (block: number, batchId: bigint, roots = rootsOf(Number(batchId % 1_000_000n)), tx?: string) =>
  rootUpdateLog(EXCHANGE, block, { sequence: batchId + 1n, batchId, ...roots }, tx);

async function onchainRecords(store: LevelStore): Promise<number> {
  let n = 0;
  for await (const _ of levelDb(store).keys({ ...ONCHAIN_BATCH_RANGE })) n++;
  return n;
}

const errorLines = (lines: Record<string, unknown>[]) =>
  lines.filter((l) => l.level === "error" || l.level === "warn").length;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("a freeze is only what the exchange declares and confirms", () => {
  it("ignores a LogFrozen from another contract address in the answer", async () => {
    const { rpc, store, watch } = await setup();
    rpc.logs = [frozenLog(OTHER, 50)];
    await watch.poll();
    expect((await store.onchain.cursor())?.frozen).toBeUndefined();
    expect((await store.onchain.cursor())?.next_block).toBe(rpc.head - CONFIRMATIONS + 1);
  });

  it("ignores a malformed LogFrozen (an extra topic, or data)", async () => {
    const { rpc, store, watch } = await setup();
    rpc.logs = [frozenLog(EXCHANGE, 50, [`0x${"11".repeat(32)}`]), frozenLog(EXCHANGE, 51, [], uint(7n))];
    await watch.poll();
    expect((await store.onchain.cursor())?.frozen).toBeUndefined();
  });

  it("a LogFrozen that isFrozen() at the confirmed block denies is not recorded", async () => {
    const { rpc, store, watch } = await setup();
    rpc.logs = [frozenLog(EXCHANGE, 50)];
    await watch.poll();
    expect((await store.onchain.cursor())?.frozen).toBeUndefined();
    // The same log, confirmed by the view: recorded.
    rpc.views.isFrozen = (block) => block >= 50;
    rpc.logs = [frozenLog(EXCHANGE, rpc.head + 1)];
    rpc.head += 3;
    await watch.poll();
    expect((await store.onchain.cursor())?.frozen).toMatchObject({ batch_id: 9 });
  });

  it("isFrozen() true for a while, then false: the freeze is withdrawn with an alert", async () => {
    const { rpc, store, watch, lines, counts } = await setup();
    let frozen = true;
    rpc.views.isFrozen = () => frozen;
    await watch.poll();
    expect((await store.onchain.cursor())?.frozen).toMatchObject({ batch_id: 9 });
    frozen = false;
    rpc.head++;
    await watch.poll();
    expect((await store.onchain.cursor())?.frozen).toBeUndefined();
    expect(watch.state?.frozen).toBeUndefined();
    expect(counts.withdrawn).toBe(1);
    expect(lines.some((l) => l.level === "error" && /withdrawn/.test(String(l.msg)))).toBe(true);
  });

  it("a frozen batch id far beyond the newest (getLastBatchId 10^30) is not recorded", async () => {
    const { rpc, store, watch, counts } = await setup();
    rpc.views.isFrozen = () => true;
    rpc.views.getLastBatchId = () => 10n ** 30n;
    await watch.poll();
    await watch.poll();
    expect((await store.onchain.cursor())?.frozen).toBeUndefined();
    expect(counts.rejected.out_of_range).toBeGreaterThanOrEqual(1);
    // Within the bound of the newest stored batch: recorded.
    rpc.views.getLastBatchId = () => 12n;
    await watch.poll();
    expect((await store.onchain.cursor())?.frozen).toMatchObject({ batch_id: 12 });
  });
});

describe("batch ids are range-checked", () => {
  it("a root update for batch 2^64 does not collide with batch 0 (no false mismatch)", async () => {
    const { rpc, store, watch, counts } = await setup();
    rpc.logs = [update(50, 2n ** 64n, { vault: 1n, rollupVault: 2n, order: 3n })];
    await watch.poll();
    expect(counts.mismatches).toBe(0);
    expect(await store.onchain.batch(0)).toBeUndefined();
    expect(watch.state?.last).toBeUndefined();
  });

  it("a forged far-future batch id does not become the on-chain batch", async () => {
    const { rpc, store, watch, counts } = await setup();
    rpc.logs = [update(40, 5n), update(50, 10n ** 12n)];
    await watch.poll();
    expect(watch.state?.last?.batch_id).toBe(5);
    expect(await store.onchain.batch(10 ** 12)).toBeUndefined();
    expect(counts.rejected.out_of_range).toBe(1);
  });

  it("root updates for batch ids never stored do not grow the records without bound", async () => {
    const { rpc, store, watch, lines, counts } = await setup(10, { maxBatchesAhead: 100 });
    rpc.logs = Array.from({ length: 1000 }, (_, i) => update(30 + (i % 60), BigInt(10 + i)));
    await watch.poll();
    expect(await onchainRecords(store)).toBeLessThanOrEqual(100);
    expect(counts.rejected.out_of_range).toBe(1000 - 100);
    expect(lines.filter((l) => /beyond|ahead/.test(String(l.msg))).length).toBeGreaterThanOrEqual(1);
    expect(lines.filter((l) => /beyond|ahead/.test(String(l.msg))).length).toBeLessThanOrEqual(5);
  });
});

describe("the watch stays bounded and never stops for good", () => {
  it("a head that jumps +100,000 blocks for a while and comes back: the watch goes on", async () => {
    const { rpc, store, watch, counts } = await setup();
    await watch.poll();
    // The lying node's blocks come with a freeze of their own.
    rpc.views.isFrozen = (block) => block > 1000;
    rpc.head += 100_000;
    while (await watch.poll()); // its blocks read, 20 ranges a poll
    expect(watch.state?.frozen).toBeDefined();
    rpc.head -= 100_000;
    rpc.fork++; // the lying node's blocks were its own
    await watch.poll();
    rpc.logs = [update(rpc.head + 1, 3n)];
    rpc.head += 1 + CONFIRMATIONS;
    await watch.poll();
    await watch.poll();
    expect(await store.onchain.batch(3)).toMatchObject({ batch_id: 3, matches: true });
    expect((await store.onchain.cursor())!.next_block).toBe(rpc.head - CONFIRMATIONS + 1);
    // Its freeze went with its blocks, with the alert.
    expect((await store.onchain.cursor())!.frozen).toBeUndefined();
    expect(counts.withdrawn).toBe(1);
  });

  it("a freeze and a newest batch past the range, recorded by an earlier version: dropped at the start", async () => {
    const { store, watch, counts } = await setup();
    await store.onchain.record(
      {
        contract: EXCHANGE.toLowerCase(),
        next_block: 50,
        last: { batch_id: 10 ** 12, sequence_number: 10 ** 12, block_number: 40 },
        frozen: { batch_id: 1e30, block_number: 45, detected_at: new Date(0).toISOString() },
      },
      [],
    );
    await watch.start();
    await watch.stop();
    const cursor = await store.onchain.cursor();
    expect(cursor?.frozen).toBeUndefined();
    expect(cursor?.last?.batch_id ?? -1).toBeLessThan(10 ** 12);
    expect(counts.withdrawn).toBe(1);
  });

  it("a head of 2^53 - 1: a poll reads 20 ranges, then asks for the head again", async () => {
    const { rpc, store, watch } = await setup();
    await watch.poll();
    const real = rpc.head;
    rpc.head = Number.MAX_SAFE_INTEGER;
    const ranges = rpc.count("eth_getLogs");
    expect(await watch.poll()).toBe(true);
    expect(rpc.count("eth_getLogs") - ranges).toBe(20);
    rpc.head = real + 1 + CONFIRMATIONS;
    rpc.fork++;
    rpc.logs = [update(real + 1, 5n)];
    while (await watch.poll());
    await watch.poll();
    expect(await store.onchain.batch(5)).toMatchObject({ batch_id: 5, matches: true });
  });

  it("a head that goes backwards for a while: the watch goes on", async () => {
    const { rpc, store, watch } = await setup();
    await watch.poll();
    rpc.head -= 60;
    await watch.poll();
    rpc.head += 60;
    rpc.logs = [update(rpc.head + 1, 4n)];
    rpc.head += 1 + CONFIRMATIONS;
    await watch.poll();
    await watch.poll();
    expect(await store.onchain.batch(4)).toMatchObject({ batch_id: 4, matches: true });
  });

  it("malformed answers are counted as RPC failures and logged with a rate limit", async () => {
    const { rpc, watch, lines, counts } = await setup();
    let mode = 0;
    rpc.answer = (method) => {
      if (mode === 0 && method === "eth_blockNumber") return null;
      if (mode === 1 && method === "eth_getLogs") return { not: "an array" };
      if (mode === 2 && method === "eth_getLogs")
        return [
          { ...update(1, 1n), blockNumber: null, logIndex: "0x0", transactionHash: `0x${"22".repeat(32)}` },
        ];
      return undefined;
    };
    await watch.start();
    for (mode = 0; mode < 3; mode++) {
      const before = counts.rpcFailures;
      rpc.head++;
      await waitUntil(() => counts.rpcFailures >= before + 5, `failures in mode ${mode}`);
    }
    await watch.stop();
    expect(counts.rpcFailures).toBeGreaterThanOrEqual(15);
    expect(errorLines(lines)).toBeLessThan(15);
  });

  it("a flood of forged mismatching updates, with a reorg at each poll: memory and log lines bounded", async () => {
    const { rpc, watch, lines, counts } = await setup(200);
    // Every answer: one forged update per stored batch, with new transaction hashes and other roots.
    rpc.answer = (method, params) => {
      if (method !== "eth_getLogs") return undefined;
      const from = Number((params[0] as { fromBlock: string }).fromBlock);
      rpc.fork++;
      return Array.from({ length: 200 }, (_, i) => {
        const log = update(from, BigInt(i), { vault: 7n, rollupVault: 7n, order: 7n });
        return {
          ...log,
          blockNumber: `0x${from.toString(16)}`,
          blockHash: rpc.blockHash(from),
          transactionHash: `0x${(rpc.fork * 1000 + i).toString(16).padStart(64, "0")}`,
          transactionIndex: "0x0",
          logIndex: `0x${i.toString(16)}`,
          removed: false,
        };
      });
    };
    for (let poll = 0; poll < 10; poll++) {
      rpc.head++;
      await watch.poll();
    }
    expect(counts.mismatches).toBeGreaterThanOrEqual(1000);
    const reported = (watch as unknown as { roots: { reported: { size: number } } }).roots.reported.size;
    expect(reported).toBeLessThanOrEqual(1024);
    expect(errorLines(lines)).toBeLessThan(50);
  });
});

describe("a flood in one answer", () => {
  it("9,000 forged logs in one eth_getLogs answer give a few lines, each refusal counted", async () => {
    const { rpc, store, watch, lines, counts } = await setup(50);
    const forged = (i: number) => {
      if (i % 3 === 0) return { ...update(40, BigInt(i % 50)), address: OTHER };
      if (i % 3 === 1) return update(40, BigInt(10 ** 9 + i));
      return update(
        40,
        BigInt(i % 50),
        { vault: 7n, rollupVault: 7n, order: 7n },
        `0x${i.toString(16).padStart(64, "0")}`,
      );
    };
    rpc.logs = Array.from({ length: 9000 }, (_, i) => ({ ...forged(i), logIndex: i }));
    await watch.poll();
    expect(counts.rejected.foreign_address).toBe(3000);
    expect(counts.rejected.out_of_range).toBe(3000);
    expect(counts.mismatches).toBe(3000);
    expect(await onchainRecords(store)).toBe(50);
    expect(errorLines(lines)).toBeLessThanOrEqual(15);
  });
});

async function waitUntil(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
