import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { BatchRecord } from "../../src/storage/batch-record.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { NodeWrites } from "../../src/trees/node-writes.js";
import { levelDb } from "../../src/storage/level-db.js";

/** n records with distinct pseudo-random hashes; record i is 72 bytes (a binary record's) of (seed + i). */
function addRecords(list: NodeWrites, seed: number, n: number): void {
  for (let i = 0; i < n; i++) {
    const hash = new Uint8Array(32);
    let x = (seed * 7919 + i * 104729) >>> 0;
    for (let b = 0; b < 32; b++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      hash[b] = x >>> 24;
    }
    const record = new Uint8Array(72).fill((seed + i) & 0xff);
    list.add(hash, 0, record, 0, record.length);
  }
}

const record = (batchId: number): BatchRecord => ({
  batch_id: batchId,
  prev_batch_id: batchId - 1,
  sequence_number: batchId,
  roots: {},
  root_gens: {},
  heights: {},
  claim_hash: "0x" + "00".repeat(32),
  signature: "0x",
  member_key: "0x",
  verified_at: new Date(0).toISOString(),
});

describe("PendingCommit: records put while a batch is verified", () => {
  let dir: string;
  let store: LevelStore;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "dacd-pending-"));
    store = await LevelStore.open(dir);
  });
  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("stores records put in several runs, and those added after the last run, in one commit", async () => {
    const nodes = new NodeWrites();
    const leaves = new NodeWrites();
    const pending = store.beginCommit(7);
    addRecords(nodes, 1, 500);
    addRecords(leaves, 2, 40);
    pending.putNew(nodes, leaves);
    addRecords(nodes, 3, 700);
    pending.putNew(nodes, leaves);
    addRecords(nodes, 4, 300);
    addRecords(leaves, 5, 60);
    // Nothing is in the store before the commit writes.
    expect(await store.getNodes([nodes.hash(0), nodes.hash(1499)], [7, 7])).toEqual([undefined, undefined]);
    await store.commitBatch(record(7), nodes, leaves, pending);

    const gens = (n: number, gen: number) => new Array<number>(n).fill(gen);
    const stored = await store.getNodes(
      [...nodes].map((w) => w.hash),
      gens(nodes.length, 7),
    );
    expect(stored.map((r) => r && Buffer.from(r).toString("hex"))).toEqual(
      [...nodes].map((w) => Buffer.from(w.record).toString("hex")),
    );
    const storedLeaves = await store.getLeafRecords(
      [...leaves].map((w) => w.hash),
      gens(leaves.length, 7),
    );
    expect(storedLeaves.map((r) => r && Buffer.from(r).toString("hex"))).toEqual(
      [...leaves].map((w) => Buffer.from(w.record).toString("hex")),
    );
    // Stored under the batch's gen, and only there.
    expect(await store.getNodes([nodes.hash(0), nodes.hash(1499)], [6, 8])).toEqual([undefined, undefined]);
    expect(await store.getLeafRecords([leaves.hash(0)], [0])).toEqual([undefined]);
    expect((await store.getBatch(7))?.batch_id).toBe(7);
    expect(() => pending.putNew(nodes, leaves)).toThrow(/written or abandoned/);
  });

  it("puts a large run a slice per turn of the event loop, and stops putting once abandoned", async () => {
    const nodes = new NodeWrites();
    addRecords(nodes, 13, 60_000); // ~6 MiB of keys and values: several slices
    const pending = store.beginCommit(1);
    let turns = 0;
    const ticking = setInterval(() => turns++, 0);
    const began = turns;
    pending.putNew(nodes, new NodeWrites());
    await pending.allPut();
    clearInterval(ticking);
    expect(turns - began).toBeGreaterThan(1);
    expect(pending.batch.length).toBeGreaterThan(0);
    pending.abandon();

    // Abandoned after its first slice: the rest is never put, and nothing fails.
    const more = new NodeWrites();
    addRecords(more, 14, 60_000);
    const second = store.beginCommit(2);
    const put = vi.spyOn(second.batch as unknown as { _put: () => void }, "_put");
    second.putNew(more, new NodeWrites());
    await new Promise((r) => setImmediate(r));
    second.abandon();
    await second.allPut();
    const slices = put.mock.calls.length;
    expect(slices).toBeGreaterThan(0);
    expect(slices).toBeLessThan(30_000);
  });

  it("writes nothing of an abandoned commit", async () => {
    const nodes = new NodeWrites();
    const leaves = new NodeWrites();
    const pending = store.beginCommit(8);
    addRecords(nodes, 9, 800);
    addRecords(leaves, 10, 30);
    pending.putNew(nodes, leaves);
    pending.abandon();
    pending.abandon();
    // A later commit of other records does not carry the abandoned ones along.
    const other = new NodeWrites();
    addRecords(other, 11, 5);
    await store.commitBatch(record(8), other, new NodeWrites());
    const keys: string[] = [];
    for await (const k of levelDb(store).keys()) keys.push(Buffer.from(k).toString("hex"));
    expect(keys).toHaveLength(5 + 1);
    expect(await store.getNodes([nodes.hash(0), nodes.hash(799)], [8, 8])).toEqual([undefined, undefined]);
    expect(await store.getLeafRecords([leaves.hash(0)], [8])).toEqual([undefined]);
    expect(await store.getNodes([other.hash(0)], [8])).toEqual([other.record(0)]);
  });

  it("has LevelDB flush a batch larger than its memtable to a table after the commit", async () => {
    // 60,000 records of 72 bytes (~6 MiB with keys) go into the 4 MiB memtable whole. Left there,
    // they would stay in memory until the next write; the commit's follow-up write makes LevelDB
    // flush them to a level-0 table in the background, which its statistics count as written.
    const nodes = new NodeWrites();
    addRecords(nodes, 12, 60_000);
    expect(store.compactionWrittenMb()).toBe(0);
    await store.commitBatch(record(9), nodes, new NodeWrites());
    const deadline = Date.now() + 20_000;
    while (store.compactionWrittenMb() === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    expect(store.compactionWrittenMb()).toBeGreaterThanOrEqual(5);
    expect(await store.getNodes([nodes.hash(0), nodes.hash(59_999)], [9, 9])).toEqual([
      nodes.record(0),
      nodes.record(59_999),
    ]);
  });
});
