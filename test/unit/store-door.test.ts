import { afterEach, describe, expect, it } from "vitest";
import type { BatchRecord } from "../../src/storage/batch-record.js";
import { batchKey, Meta } from "../../src/storage/keys.js";
import { levelDb } from "../../src/storage/level-db.js";
import { LevelStore } from "../../src/storage/level-store.js";
import type { TreeRecordKey } from "../../src/storage/tree-record-repository.js";
import type { OnchainBatch, OnchainCursor } from "../../src/storage/onchain-record.js";
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
  it("isEmpty, batches.moveCursor of a load with identity and meta, clear", async () => {
    const store = await openStore();
    try {
      expect(await store.isEmpty()).toBe(true);
      const identity = { profile: "spot", heights: { vault: 31 } };
      await store.batches.moveCursor(
        { kind: "loaded", record: record(7) },
        { identity, meta: { [Meta.importedFrom]: { batch_id: 7 } } },
      );
      expect(await store.isEmpty()).toBe(false);
      expect(await store.meta.identity()).toEqual(identity);
      expect(await store.meta.get(Meta.format)).toBe(NODE_FORMAT);
      expect(NODE_FORMAT).toBe(3);
      expect(await store.meta.get(Meta.importedFrom)).toEqual({ batch_id: 7 });
      expect((await store.getBatch(7))?.claim_hash).toBe(record(7).claim_hash);
      expect(await store.getCursor()).toEqual({ next_batch_id: 8, last_accepted_batch_id: 7 });
      await store.clear();
      expect(await store.isEmpty()).toBe(true);
    } finally {
      await store.close();
    }
  });

  it("batches.ids and batches.chunks list the records in id order; an unreadable record comes as undefined", async () => {
    const store = await openStore();
    try {
      for (const id of [3, 1, 300, 2])
        await store.commitBatch(record(id), new NodeWrites(), new NodeWrites());
      await levelDb(store).put(batchKey(5), new TextEncoder().encode("{not json"));
      const ids: number[] = [];
      for await (const id of store.batches.ids()) ids.push(id);
      expect(ids).toEqual([1, 2, 3, 5, 300]);
      const chunks: { id: number; claim?: string }[][] = [];
      for await (const chunk of store.batches.chunks(2))
        chunks.push(chunk.map((e) => ({ id: e.id, claim: e.record?.claim_hash })));
      expect(chunks.map((c) => c.map((e) => e.id))).toEqual([[1, 2], [3, 5], [300]]);
      expect(chunks[1]![1]!.claim).toBeUndefined();
      expect(chunks[2]![0]!.claim).toBe(record(300).claim_hash);
    } finally {
      await store.close();
    }
  });

  it("trees.keys lists by gen, nodes then leaves; trees.delete deletes only those named", async () => {
    const store = await openStore();
    try {
      await store.commitBatch(record(4), writes(0xaa, 3, 72), writes(0x11, 2, 96));
      // A later batch's records come after the earlier batch's, whatever their hashes; its retire
      // key (deleted at once) is never listed.
      await store.commitBatch(record(300), writes(0x05, 1, 69), writes(0x06, 1, 96));
      const all: TreeRecordKey[] = [];
      for await (const r of store.trees.keys()) all.push(r);
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
      await store.trees.delete([all[1]!, all[4]!, all[5]!]);
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
      expect(await store.batches.pruneInfo()).toBeUndefined();
      const view = store.snapshot();
      try {
        await store.batches.setPruneInfo({ up_to: 0, kept: [], at: "2026-01-01T00:00:00.000Z" });
        await store.commitBatch(record(1), writes(0xbb, 1, 64), new NodeWrites());
        expect((await store.batches.pruneInfo())?.up_to).toBe(0);
        expect(await view.batches.pruneInfo()).toBeUndefined();
        const ids: number[] = [];
        for await (const id of view.batches.ids()) ids.push(id);
        expect(ids).toEqual([0]);
        let nodes = 0;
        for await (const r of view.trees.keys()) if (r.node) nodes++;
        expect(nodes).toBe(2);
        await expect(view.trees.delete([])).rejects.toThrow(/read-only/);
        await expect(view.batches.setPruneInfo({ up_to: 1, kept: [], at: "" })).rejects.toThrow(/read-only/);
        await expect(view.clear()).rejects.toThrow(/read-only/);
        await expect(view.batches.moveCursor({ kind: "loaded", record: record(2) })).rejects.toThrow(
          /read-only/,
        );
        expect(() => view.bulkWriter()).toThrow(/read-only/);
        await expect(view.compact()).rejects.toThrow(/read-only/);
      } finally {
        await view.close();
      }
    } finally {
      await store.close();
    }
  });

  it("the repositories of a snapshot view read its snapshot, and every write through one is refused", async () => {
    const store = await openStore();
    try {
      await store.meta.ensureIdentity({ profile: "spot", heights: { vault: 31 } });
      await store.meta.setNote(Meta.failing, { batch_id: 0 });
      await store.onchain.record(cursorAt(11), [onchainBatch(1, 10)]);
      await store.commitBatch(record(0), writes(0xaa, 1, 64), new NodeWrites());
      await store.batches.moveCursor({ kind: "accepted", record: record(0), at: new Date() });
      const view = store.snapshot();
      try {
        await store.meta.setNote(Meta.failing, { batch_id: 1 });
        await store.onchain.record(cursorAt(21), [onchainBatch(2, 20)]);
        await store.commitBatch(record(1), writes(0xbb, 1, 64), new NodeWrites());
        await store.batches.moveCursor({ kind: "accepted", record: record(1), at: new Date() });

        expect(await view.meta.note(Meta.failing)).toEqual({ batch_id: 0 });
        expect(await store.meta.note(Meta.failing)).toEqual({ batch_id: 1 });
        expect(await view.meta.identity()).toEqual({ profile: "spot", heights: { vault: 31 } });
        expect(await view.onchain.cursor()).toEqual(cursorAt(11));
        expect(await view.onchain.batch(2)).toBeUndefined();
        expect((await view.onchain.last())?.batch_id).toBe(1);
        expect(await view.onchain.uncomparedBatchIds()).toEqual([1]);
        expect(await store.onchain.uncomparedBatchIds()).toEqual([1, 2]);
        expect(await view.batches.lastId()).toBe(0);
        expect((await view.batches.cursor())?.next_batch_id).toBe(1);
        expect(await store.batches.lastId()).toBe(1);

        const refused = /read-only/;
        await expect(view.meta.setNote(Meta.failing, undefined)).rejects.toThrow(refused);
        await expect(view.meta.ensureIdentity({ profile: "spot", heights: { vault: 31 } })).rejects.toThrow(
          refused,
        );
        await expect(view.meta.pinChain("ethereum")).rejects.toThrow(refused);
        await expect(view.batches.moveCursor({ kind: "skipped", batchId: 8 })).rejects.toThrow(refused);
        await expect(
          view.batches.moveCursor({ kind: "accepted", record: record(0), at: new Date() }),
        ).rejects.toThrow(refused);
        await expect(view.onchain.record(cursorAt(31), [])).rejects.toThrow(refused);
        await expect(view.commitBatch(record(2), new NodeWrites(), new NodeWrites())).rejects.toThrow(
          refused,
        );
        expect(() => view.commits.withWriteLock(async () => undefined)).toThrow(refused);
        expect(await store.meta.pinnedChain()).toBeUndefined();
      } finally {
        await view.close();
      }
    } finally {
      await store.close();
    }
  });

  it("onchain.record drops the batches read from a block on, or all of them, in the write that records the rest", async () => {
    const store = await openStore();
    try {
      await store.onchain.record(cursorAt(31), [
        onchainBatch(1, 10),
        onchainBatch(2, 20),
        onchainBatch(3, 30),
      ]);
      const dropped = await store.onchain.record(cursorAt(25), [onchainBatch(4, 24)], { dropFrom: 20 });
      expect(dropped.map((b) => b.batch_id)).toEqual([2, 3]);
      expect(await store.onchain.batch(2)).toBeUndefined();
      expect((await store.onchain.last())?.batch_id).toBe(4);
      expect(await store.onchain.cursor()).toEqual(cursorAt(25));
      const all = await store.onchain.record(cursorAt(26), [], { dropAll: true });
      expect(all.map((b) => b.batch_id)).toEqual([1, 4]);
      expect(await store.onchain.last()).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});

function cursorAt(nextBlock: number): OnchainCursor {
  return { contract: "0x" + "11".repeat(20), next_block: nextBlock };
}

/** A root update of `batchId` read at `block`, with roots not compared yet. */
function onchainBatch(batchId: number, block: number): OnchainBatch {
  return {
    batch_id: batchId,
    sequence_number: batchId,
    block_number: block,
    tx_hash: "0x" + String(batchId).padStart(64, "0"),
    event: "LogRootUpdate",
    roots: { vault: "00".repeat(32) },
  };
}
