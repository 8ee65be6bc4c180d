import { afterEach, describe, expect, it } from "vitest";
import type { BatchRecord } from "../../src/storage/batch-record.js";
import { batchKey, Meta } from "../../src/storage/keys.js";
import { levelDb } from "../../src/storage/level-db.js";
import { LevelStore, type TreeRecordKey } from "../../src/storage/level-store.js";
import { NODE_FORMAT } from "../../src/storage/records/node-record.js";
import { NodeWrites } from "../../src/storage/records/node-writes.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

afterEach(removeTempDirs);

async function openStore(): Promise<LevelStore> {
  return LevelStore.open(await tempDir("dacd-store-door-"));
}

const record = (id: number): BatchRecord =>
  ({
    batch_id: id,
    prev_batch_id: id - 1,
    sequence_number: id,
    roots: {},
    claim_hash: "0x" + String(id).padStart(64, "0"),
  }) as unknown as BatchRecord;

/** `n` records of `bytes` bytes under hashes whose first byte is `tag` and second the index. */
function writes(tag: number, n: number, bytes: number): NodeWrites {
  const w = new NodeWrites();
  for (let i = 0; i < n; i++) {
    const hash = new Uint8Array(32);
    hash[0] = tag;
    hash[1] = i;
    w.add(hash, 0, new Uint8Array(bytes).fill(i + 1), 0, bytes);
  }
  return w;
}

const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

describe("LevelStore's door: what escape, prune, check, backup and load use instead of LevelDB", () => {
  it("isEmpty, putBatchAndCursor with identity and meta, clear", async () => {
    const store = await openStore();
    try {
      expect(await store.isEmpty()).toBe(true);
      const identity = { profile: "spot", heights: { vault: 31 } };
      await store.putBatchAndCursor(
        record(7),
        { next_batch_id: 8, last_accepted_batch_id: 7 },
        { identity, meta: { [Meta.importedFrom]: { batch_id: 7 } } },
      );
      expect(await store.isEmpty()).toBe(false);
      expect(await store.getIdentity()).toEqual(identity);
      expect(await store.getMeta(Meta.format)).toBe(NODE_FORMAT);
      expect(NODE_FORMAT).toBe(3);
      expect(await store.getMeta(Meta.importedFrom)).toEqual({ batch_id: 7 });
      expect((await store.getBatch(7))?.claim_hash).toBe(record(7).claim_hash);
      expect(await store.getCursor()).toEqual({ next_batch_id: 8, last_accepted_batch_id: 7 });
      await store.clear();
      expect(await store.isEmpty()).toBe(true);
    } finally {
      await store.close();
    }
  });

  it("batchIds and batchChunks list the records in id order; an unreadable record comes as undefined", async () => {
    const store = await openStore();
    try {
      for (const id of [3, 1, 300, 2])
        await store.commitBatch(record(id), new NodeWrites(), new NodeWrites());
      await levelDb(store).put(batchKey(5), new TextEncoder().encode("{not json"));
      const ids: number[] = [];
      for await (const id of store.batchIds()) ids.push(id);
      expect(ids).toEqual([1, 2, 3, 5, 300]);
      const chunks: { id: number; claim?: string }[][] = [];
      for await (const chunk of store.batchChunks(2))
        chunks.push(chunk.map((e) => ({ id: e.id, claim: e.record?.claim_hash })));
      expect(chunks.map((c) => c.map((e) => e.id))).toEqual([[1, 2], [3, 5], [300]]);
      expect(chunks[1]![1]!.claim).toBeUndefined();
      expect(chunks[2]![0]!.claim).toBe(record(300).claim_hash);
    } finally {
      await store.close();
    }
  });

  it("treeRecords lists by gen, nodes then leaves; deleteTreeRecords deletes only those named", async () => {
    const store = await openStore();
    try {
      await store.commitBatch(record(4), writes(0xaa, 3, 72), writes(0x11, 2, 96));
      // A later batch's records come after the earlier batch's, whatever their hashes; its retire
      // key (deleted at once) is never listed.
      await store.commitBatch(record(300), writes(0x05, 1, 69), writes(0x06, 1, 96));
      const all: TreeRecordKey[] = [];
      for await (const r of store.treeRecords()) all.push(r);
      expect(all.map((r) => `${r.gen} ${r.node ? "node" : "leaf"} ${hex(r.hash.subarray(0, 2))}`)).toEqual([
        "4 node aa00",
        "4 node aa01",
        "4 node aa02",
        "4 leaf 1100",
        "4 leaf 1101",
        "300 node 0500",
        "300 leaf 0600",
      ]);
      expect(all.every((r) => r.hash.length === 32)).toBe(true);
      await store.deleteTreeRecords([all[1]!, all[4]!, all[5]!]);
      const [n0, n1, n5] = await store.getNodes([all[0]!.hash, all[1]!.hash, all[5]!.hash], [4, 4, 300]);
      expect(n0).toEqual(new Uint8Array(72).fill(1));
      expect(n1).toBeUndefined();
      expect(n5).toBeUndefined();
      const [l0, l1, l6] = await store.getLeafRecords(
        [all[3]!.hash, all[4]!.hash, all[6]!.hash],
        [4, 4, 300],
      );
      expect(new Uint8Array(l0!)).toEqual(new Uint8Array(96).fill(1));
      expect(l1).toBeUndefined();
      expect(new Uint8Array(l6!)).toEqual(new Uint8Array(96).fill(1));
      expect(await store.getBatch(4)).toBeDefined(); // the batch record is not a tree record
    } finally {
      await store.close();
    }
  });

  it("prune info round-trips; a snapshot view reads through its snapshot and refuses every write", async () => {
    const store = await openStore();
    try {
      await store.commitBatch(record(0), writes(0xaa, 2, 64), new NodeWrites());
      expect(await store.getPruneInfo()).toBeUndefined();
      const view = store.snapshot();
      try {
        await store.setPruneInfo({ up_to: 0, kept: [], at: "2026-01-01T00:00:00.000Z" });
        await store.commitBatch(record(1), writes(0xbb, 1, 64), new NodeWrites());
        expect((await store.getPruneInfo())?.up_to).toBe(0);
        expect(await view.getPruneInfo()).toBeUndefined();
        const ids: number[] = [];
        for await (const id of view.batchIds()) ids.push(id);
        expect(ids).toEqual([0]);
        let nodes = 0;
        for await (const r of view.treeRecords()) if (r.node) nodes++;
        expect(nodes).toBe(2);
        await expect(view.deleteTreeRecords([])).rejects.toThrow(/read-only/);
        await expect(view.setPruneInfo({ up_to: 1, kept: [], at: "" })).rejects.toThrow(/read-only/);
        await expect(view.clear()).rejects.toThrow(/read-only/);
        await expect(
          view.putBatchAndCursor(record(2), { next_batch_id: 3, last_accepted_batch_id: 2 }),
        ).rejects.toThrow(/read-only/);
        expect(() => view.bulkWriter()).toThrow(/read-only/);
        await expect(view.compact()).rejects.toThrow(/read-only/);
      } finally {
        await view.close();
      }
    } finally {
      await store.close();
    }
  });
});
