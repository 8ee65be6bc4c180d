import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LevelStore } from "../../src/storage/level-store.js";
import { NodeWrites } from "../../src/storage/records/node-writes.js";
import { levelDb } from "../../src/storage/level-db.js";
import { placeholderRecord } from "../helpers/batch-record.js";

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

// Each test has a store of its own, in a fresh directory.
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

describe("PendingCommit: records put while a batch is verified", () => {
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
    await store.commitBatch(placeholderRecord(7), nodes, leaves, pending);

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
    await store.commitBatch(placeholderRecord(8), other, new NodeWrites());
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
    await store.commitBatch(placeholderRecord(9), nodes, new NodeWrites());
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

describe("startCommit: a batch readable while its write is under way", () => {
  /** Holds the store's writes back until the returned function is called. */
  function holdWrites(): () => void {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    void store.commits.withWriteLock(() => gate);
    return release;
  }

  const hex = (r: Uint8Array | undefined) => r && Buffer.from(r).toString("hex");

  it("serves the batch's records by its gen from memory until LevelDB has them, then from LevelDB", async () => {
    const stored = new NodeWrites();
    addRecords(stored, 20, 50);
    await store.commitBatch(placeholderRecord(4), stored, new NodeWrites());

    const nodes = new NodeWrites();
    const leaves = new NodeWrites();
    addRecords(nodes, 21, 3000);
    addRecords(leaves, 22, 40);
    // A hash twice in one batch (two equal subtrees): either copy answers.
    nodes.add(nodes.hash(7), 0, nodes.record(7), 0, 72);
    const release = holdWrites();
    const { durable } = store.startCommit(placeholderRecord(5), nodes, leaves);
    expect(store.commits.inFlight(5)?.record.batch_id).toBe(5);
    // LevelDB holds none of it yet (a snapshot view reads LevelDB alone)...
    const view = store.snapshot();
    expect(await view.getNodes([nodes.hash(0)], [5])).toEqual([undefined]);
    expect(await view.getBatch(5)).toBeUndefined();
    await view.close();
    // ...while reads of the store get every record, mixed with stored ones, each in its place.
    const picks = [0, 7, 2999, 1234, 3000];
    const asked = [stored.hash(3), ...picks.map((i) => nodes.hash(i)), stored.hash(49)];
    const gens = [4, 5, 5, 5, 5, 5, 4];
    expect((await store.getNodes(asked, gens)).map(hex)).toEqual(
      [stored.record(3), ...picks.map((i) => nodes.record(i)), stored.record(49)].map(hex),
    );
    // Only under its own gen and kind; an unknown hash of that gen is not found.
    expect(await store.getNodes([nodes.hash(0)], [6])).toEqual([undefined]);
    expect(await store.getNodes([leaves.hash(0)], [5])).toEqual([undefined]);
    expect(await store.getNodes([stored.hash(0)], [5])).toEqual([undefined]);
    expect((await store.getLeafRecords([leaves.hash(39)], [5])).map(hex)).toEqual([hex(leaves.record(39))]);

    release();
    await durable;
    expect(store.commits.inFlight(5)).toBeUndefined();
    expect((await store.getBatch(5))?.batch_id).toBe(5);
    const view2 = store.snapshot();
    expect((await view2.getNodes([nodes.hash(2999)], [5])).map(hex)).toEqual([hex(nodes.record(2999))]);
    await view2.close();
  });

  it("keeps the writes in order and refuses a batch built on one whose write failed", async () => {
    const release = holdWrites();
    const first = new NodeWrites();
    addRecords(first, 30, 100);
    const pending = store.beginCommit(6);
    vi.spyOn(pending.batch, "write").mockRejectedValueOnce(new Error("No space left on device"));
    const a = store.startCommit(placeholderRecord(6), first, new NodeWrites(), pending);
    const second = new NodeWrites();
    addRecords(second, 31, 100);
    const b = store.startCommit(placeholderRecord(7), second, new NodeWrites());
    // Batch 7 read batch 6's records while both were in flight.
    expect((await store.getNodes([first.hash(5)], [6])).map(hex)).toEqual([hex(first.record(5))]);
    const third = new NodeWrites();
    addRecords(third, 32, 10);
    const c = store.startCommit(placeholderRecord(8), third, new NodeWrites());
    release();
    await expect(a.durable).rejects.toThrow(/No space left/);
    await expect(b.durable).rejects.toThrow(/batch 7 builds on batch 6, whose write failed/);
    await expect(c.durable).rejects.toThrow(/batch 8 builds on batch 7, whose write failed/);
    expect(await store.getBatch(6)).toBeUndefined();
    expect(await store.getBatch(7)).toBeUndefined();
    expect(await store.getNodes([first.hash(5), second.hash(5)], [6, 7])).toEqual([undefined, undefined]);
    expect(store.commits.inFlight(6)).toBeUndefined();

    // Batch 6 written again (its retry) lets batch 7 through, and batch 8 after it.
    await store.commitBatch(placeholderRecord(6), first, new NodeWrites());
    await store.commitBatch(placeholderRecord(7), second, new NodeWrites());
    await store.commitBatch(placeholderRecord(8), third, new NodeWrites());
    expect((await store.getBatch(8))?.batch_id).toBe(8);
  });
});
