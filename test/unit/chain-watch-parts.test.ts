import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ExchangeEndpoint } from "../../src/chain/exchange-endpoint.js";
import { FreezeCheck } from "../../src/chain/freeze.js";
import { RootComparison } from "../../src/chain/root-comparison.js";
import { MalformedAnswer, rpcClient } from "../../src/chain/rpc.js";
import { WatchRecords } from "../../src/chain/watch-records.js";
import { WatchReport } from "../../src/chain/watch-report.js";
import { createLogger } from "../../src/logging.js";
import { LevelStore } from "../../src/storage/level-store.js";
import type { OnchainBatch, OnchainCursor } from "../../src/storage/onchain-record.js";
import { NodeWrites } from "../../src/storage/records/node-writes.js";
import { placeholderRecord } from "../helpers/batch-record.js";
import { LyingRpc } from "../helpers/lying-rpc.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

/**
 * The chain watch's parts alone (ChainWatch only runs them in order; chain-watch-attacks and the
 * system test chain-watch drive them together): the lines and counts of WatchReport, the batch
 * window and out-of-range drop of WatchRecords, the once-only mismatch of RootComparison, the
 * endpoint's checks of its answers and FreezeCheck's record and withdrawal, each against a real
 * store and a real HTTP endpoint on loopback.
 */
const EXCHANGE = `0x${"ab".repeat(20)}` as const;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(removeTempDirs);

interface Counts {
  rpcFailures: string[];
  mismatches: number;
  withdrawn: number;
  rejected: string[];
}

function reportWith(aheadLimit = 100) {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _e, cb) {
      for (const l of chunk.toString().split("\n")) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  const counts: Counts = { rpcFailures: [], mismatches: 0, withdrawn: 0, rejected: [] };
  const report = new WatchReport(
    createLogger({ level: "debug", destination }),
    {
      onRpcFailure: (reason) => counts.rpcFailures.push(reason),
      onRootMismatch: () => counts.mismatches++,
      onFreezeWithdrawn: () => counts.withdrawn++,
      onRejected: (reason) => counts.rejected.push(reason),
    },
    "http://127.0.0.1:1",
    aheadLimit,
  );
  return { report, lines, counts };
}

/** A store holding batches [first, first + count). */
async function storeWith(first: number, count: number): Promise<LevelStore> {
  const store = await LevelStore.open(join(await tempDir("dacd-watch-parts-"), "db"));
  cleanups.push(() => store.close());
  for (let id = first; id < first + count; id++)
    await store.commitBatch(placeholderRecord(id), new NodeWrites(), new NodeWrites());
  return store;
}

const mismatching = (batchId: number, tx: number): OnchainBatch => ({
  batch_id: batchId,
  sequence_number: batchId + 1,
  block_number: 10,
  tx_hash: `0x${tx.toString(16).padStart(64, "0")}`,
  event: "LogRootUpdate",
  roots: { vault: "07".repeat(32) },
  matches: false,
});

describe("WatchReport", () => {
  it("counts an RPC failure by its reason and a refusal by its kind; other errors are lines, not counts", async () => {
    const { report, lines, counts } = reportWith();
    report.pollFailed(new MalformedAnswer("eth_blockNumber answered null"));
    report.pollFailed(new Error("the store refused the write"));
    report.rejected("foreign_address", { block_number: 5 });
    expect(counts.rpcFailures).toEqual(["malformed"]);
    expect(counts.rejected).toEqual(["foreign_address"]);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [
        "warn",
        "base chain RPC call failed (malformed): eth_blockNumber answered null; trying again at the next poll",
      ],
      ["error", "base chain watch: the store refused the write"],
      [
        "warn",
        "base chain endpoint answered a log from another address than starkex_contract_address: ignored (a broken or lying endpoint?)",
      ],
    ]);
  });

  it("1,000 refusals of one kind: each counted, five lines a minute, each kind limited apart", async () => {
    const { report, lines, counts } = reportWith();
    for (let i = 0; i < 1000; i++) report.rejected("malformed_log", { block_number: i });
    for (let i = 0; i < 1000; i++) report.rejected("out_of_range", { batch_id: String(10n ** 30n) });
    expect(counts.rejected.length).toBe(2000);
    expect(lines.filter((l) => l.reason === "malformed_log").length).toBe(5);
    expect(lines.filter((l) => l.reason === "out_of_range").length).toBe(5);
    expect(lines.find((l) => l.reason === "out_of_range")!.msg).toContain("beyond 100 batches ahead");
  });
});

describe("WatchRecords", () => {
  it("takes batch ids up to the newest stored one plus the ahead limit; an empty store's window starts at -1", async () => {
    const { report } = reportWith();
    const records = new WatchRecords(await storeWith(3, 7), EXCHANGE, report, 100);
    expect(await records.window()).toEqual({ newest: 109, stored: 9, first: 3 });
    const empty = new WatchRecords(await storeWith(0, 0), EXCHANGE, report, 100);
    expect(await empty.window()).toEqual({ newest: 99, stored: null, first: undefined });
  });

  it("drops a stored freeze and newest update past the window, withdrawing the freeze once", async () => {
    const { report, lines, counts } = reportWith();
    const store = await storeWith(0, 10);
    const records = new WatchRecords(store, EXCHANGE, report, 100);
    const cursor: OnchainCursor = {
      contract: EXCHANGE,
      next_block: 50,
      last: { batch_id: 110, sequence_number: 111, block_number: 40 },
      frozen: { batch_id: 110, block_number: 45, detected_at: new Date(0).toISOString() },
    };
    await store.onchain.record(cursor, []);
    await records.dropOutOfRange((await records.load())!);
    expect(await store.onchain.cursor()).toEqual({ contract: EXCHANGE, next_block: 50 });
    expect(records.cursor).toEqual({ contract: EXCHANGE, next_block: 50 });
    expect(counts.withdrawn).toBe(1);
    expect(lines.filter((l) => l.level === "error").map((l) => l.msg)).toEqual([
      "the freeze recorded at batch 110 (block 45) is withdrawn: its batch id is more than 100 past the newest stored batch (a reorg, an unfreeze, or an endpoint that lied); escapes and signing no longer follow it",
    ]);

    // Within the window (109 = 9 + 100): kept as it is.
    const within: OnchainCursor = {
      contract: EXCHANGE,
      next_block: 50,
      last: { ...cursor.last!, batch_id: 109 },
    };
    await records.record(within, []);
    await records.dropOutOfRange(within);
    expect((await store.onchain.cursor())?.last?.batch_id).toBe(109);
  });

  it("logs the freeze the first time it is recorded, not at each write after", async () => {
    const { report, lines } = reportWith();
    const records = new WatchRecords(await storeWith(0, 10), EXCHANGE, report, 100);
    await records.load();
    const frozen: OnchainCursor = {
      contract: EXCHANGE,
      next_block: 20,
      frozen: { batch_id: 9, block_number: 19, detected_at: new Date(0).toISOString() },
    };
    await records.record(frozen, []);
    await records.record({ ...frozen, next_block: 21 }, []);
    expect(lines.filter((l) => String(l.msg).startsWith("the exchange is frozen at batch 9")).length).toBe(1);
  });
});

describe("RootComparison", () => {
  it("reports a mismatch each time it is read, but not the reread of one a reorg dropped", async () => {
    const { report, counts } = reportWith();
    const store = await storeWith(0, 10);
    const comparison = new RootComparison(store, new WatchRecords(store, EXCHANGE, report, 100), report);
    const stored = (await store.getBatch(4))!;
    comparison.mismatch(mismatching(4, 1), stored);
    expect(counts.mismatches).toBe(1);
    comparison.dropped([mismatching(4, 1), { ...mismatching(5, 2), matches: true }]);
    comparison.mismatch(mismatching(4, 1), stored); // the reorg's reread: already reported
    expect(counts.mismatches).toBe(1);
    comparison.mismatch(mismatching(4, 1), stored); // read once more: a new report
    comparison.mismatch(mismatching(5, 2), stored); // dropped while it matched: not remembered
    expect(counts.mismatches).toBe(3);
  });

  it("remembers at most 1,024 dropped mismatches: the oldest are forgotten first", async () => {
    const { report, counts } = reportWith();
    const store = await storeWith(0, 10);
    const comparison = new RootComparison(store, new WatchRecords(store, EXCHANGE, report, 100), report);
    const stored = (await store.getBatch(4))!;
    comparison.dropped(Array.from({ length: 5000 }, (_, i) => mismatching(4, i)));
    comparison.mismatch(mismatching(4, 5000 - 1024), stored); // the oldest still held
    comparison.mismatch(mismatching(4, 4999), stored); // the newest
    expect(counts.mismatches).toBe(0);
    comparison.mismatch(mismatching(4, 5000 - 1025), stored); // forgotten: reported
    comparison.mismatch(mismatching(4, 0), stored);
    expect(counts.mismatches).toBe(2);
  });
});

describe("ExchangeEndpoint and FreezeCheck", () => {
  async function onRpc() {
    const rpc = await new LyingRpc().start();
    cleanups.push(() => rpc.close());
    return { rpc, endpoint: new ExchangeEndpoint(rpcClient(rpc.url, 5_000), EXCHANGE) };
  }

  it("a head that is null, negative or past 2^53 - 1 is a malformed answer", async () => {
    const { rpc, endpoint } = await onRpc();
    expect(await endpoint.head()).toBe(100);
    for (const head of [null, "0x", `0x${(2n ** 53n).toString(16)}`, { number: 5 }]) {
      rpc.answer = (method) => (method === "eth_blockNumber" ? head : undefined);
      await expect(endpoint.head()).rejects.toBeInstanceOf(MalformedAnswer);
    }
  });

  it("records the freeze isFrozen() shows at the confirmed block, withdraws it once isFrozen() denies it", async () => {
    const { rpc, endpoint } = await onRpc();
    const { report, counts } = reportWith();
    const store = await storeWith(0, 10);
    const records = new WatchRecords(store, EXCHANGE, report, 100);
    await records.load();
    const freeze = new FreezeCheck(endpoint, records, report);
    rpc.views.isFrozen = () => true;
    rpc.views.getLastBatchId = () => 9n;
    const cursor: OnchainCursor = { contract: EXCHANGE, next_block: 99 };
    await freeze.checkAt(cursor, 98);
    const frozen = (await store.onchain.cursor())?.frozen;
    expect([frozen?.batch_id, frozen?.block_number]).toEqual([9, 98]);

    rpc.views.isFrozen = () => false;
    await freeze.checkAt((await store.onchain.cursor())!, 98);
    expect(await store.onchain.cursor()).toEqual(cursor);
    expect(counts.withdrawn).toBe(1);
  });

  it("a freeze at a batch id past the window, or a LogFrozen isFrozen() denies, is refused and not recorded", async () => {
    const { rpc, endpoint } = await onRpc();
    const { report, counts } = reportWith();
    const store = await storeWith(0, 10);
    const records = new WatchRecords(store, EXCHANGE, report, 100);
    await records.load();
    const freeze = new FreezeCheck(endpoint, records, report);
    rpc.views.isFrozen = () => true;
    rpc.views.getLastBatchId = () => 110n;
    await freeze.checkAt({ contract: EXCHANGE, next_block: 99 }, 98);
    expect(await store.onchain.cursor()).toBeUndefined();
    rpc.views.isFrozen = (block) => block < 50;
    expect(await freeze.confirmLog(40, 98)).toBeUndefined();
    expect(counts.rejected).toEqual(["out_of_range", "freeze_unconfirmed"]);
    rpc.views.getLastBatchId = () => 109n;
    expect((await freeze.confirmLog(40, 45))?.batch_id).toBe(109);
  });
});
