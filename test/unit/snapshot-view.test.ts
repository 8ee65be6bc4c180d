import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RateLimiter } from "../../src/api/rate-limit.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { withSnapshot } from "../../src/storage/snapshot.js";
import type { BatchRecord } from "../../src/storage/batch-record.js";
import { NodeWrites } from "../../src/storage/records/node-writes.js";
import { levelDb } from "../../src/storage/level-db.js";

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

const record = (id: number): BatchRecord =>
  ({
    batch_id: id,
    prev_batch_id: id - 1,
    sequence_number: id,
    roots: { vault: "00".repeat(32) },
    claim_hash: "0x" + String(id).padStart(64, "0"),
  }) as unknown as BatchRecord;

describe("LevelStore.snapshot", () => {
  it("reads the state at the snapshot whatever is written later; refuses writes; close keeps the store open", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dacd-snapshot-"));
    dirs.push(dir);
    const store = await LevelStore.open(dir);
    try {
      await store.commitBatch(record(0), new NodeWrites(), new NodeWrites());
      await store.batches.moveCursor({ kind: "accepted", record: record(0), at: new Date() });
      const view = store.snapshot();
      expect(view.isSnapshot).toBe(true);
      await store.commitBatch(record(1), new NodeWrites(), new NodeWrites());
      await store.batches.moveCursor({ kind: "accepted", record: record(1), at: new Date() });

      expect(await view.lastBatchId()).toBe(0);
      expect(await view.getBatch(1)).toBeUndefined();
      expect((await view.getCursor())?.last_accepted_batch_id).toBe(0);
      const ids: number[] = [];
      for await (const r of view.batches.records()) ids.push(r.batch_id);
      expect(ids).toEqual([0]);
      expect(await store.lastBatchId()).toBe(1);

      await expect(view.batches.moveCursor({ kind: "skipped", batchId: 8 })).rejects.toThrow(/read-only/);
      expect(() => view.beginCommit(2)).toThrow(/read-only/);
      expect(() => levelDb(view)).toThrow(/read-only/);
      await view.close();
      expect((await store.getBatch(1))?.batch_id).toBe(1);
      // withSnapshot releases its view on an error too, and the store stays usable.
      await expect(withSnapshot(store, () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
      expect(await withSnapshot(store, (v) => v.lastBatchId())).toBe(1);
    } finally {
      await store.close();
    }
  });

  it("commits.whenIdle resolves at once with no batch being verified, else when its commit ends or at the bound", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dacd-snapshot-"));
    dirs.push(dir);
    const store = await LevelStore.open(dir);
    try {
      let resolved = false;
      await store.commits.whenIdle(10_000); // none open: at once
      const pending = store.beginCommit(1);
      const waiting = store.commits.whenIdle(10_000).then(() => (resolved = true));
      await new Promise((r) => setTimeout(r, 50));
      expect(resolved).toBe(false);
      pending.abandon();
      await waiting;
      expect(resolved).toBe(true);
      const other = store.beginCommit(2);
      const t = performance.now();
      await store.commits.whenIdle(100);
      expect(performance.now() - t).toBeGreaterThanOrEqual(90);
      other.abandon();
    } finally {
      await store.close();
    }
  });
});

describe("RateLimiter", () => {
  it("lets a burst through, then one request per 1/rate seconds, per client", () => {
    const rl = new RateLimiter(2, 4);
    const at = 1000;
    expect([0, 1, 2, 3].map(() => rl.take("a", at))).toEqual([0, 0, 0, 0]);
    expect(rl.take("a", at)).toBeCloseTo(0.5);
    expect(rl.take("b", at)).toBe(0); // another client has its own bucket
    expect(rl.take("a", at + 500)).toBe(0); // one token back after 0.5 s
    expect(rl.take("a", at + 500)).toBeGreaterThan(0);
  });

  it("keeps its table of clients bounded", () => {
    const rl = new RateLimiter(1, 1, 100);
    for (let i = 0; i < 1000; i++) rl.take(`10.0.${i >> 8}.${i & 255}`, 0);
    expect(rl.clients).toBeLessThanOrEqual(100);
  });
});
