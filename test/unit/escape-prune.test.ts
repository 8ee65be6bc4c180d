import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkStore } from "../../src/maintenance/integrity-check.js";
import { dumpStore } from "../../src/escape/dump.js";
import { makeProof, verifyProof } from "../../src/escape/proof.js";
import { pruneStore } from "../../src/maintenance/prune.js";
import type { BatchRecord } from "../../src/storage/batch-record.js";
import { Prefix } from "../../src/storage/keys.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { hexToBytes32, toHex0x, toHex64 } from "../../src/util/bytes.js";
import { computeRoots, type TreeState } from "../../src/verifier/trees/update/compute-roots.js";
import { makeProfile, type TreeName } from "../../src/model/profile.js";
import type { Leaf } from "../../src/model/state-update.js";
import {
  chainStore,
  countKeys,
  countTreeRecords,
  tableBytes,
  dumpFiles,
  engine,
} from "../helpers/chain-store.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

afterEach(removeTempDirs);

describe("prune", () => {
  it("keeps the last K batches dumpable and provable, refuses pruned ones, and shrinks the store", async () => {
    const s = await chainStore("spot-chain");
    try {
      const before: Record<number, Record<string, string>> = {};
      for (const id of [4, 5]) {
        const out = join(await tempDir(), "d");
        await dumpStore(s.store, engine, { outDir: out, batchId: id });
        before[id] = await dumpFiles(out);
      }
      await s.store.compact("trees");
      const recordsBefore = await countTreeRecords(s.store);
      const sizeBefore = await tableBytes(s.dir);

      const report = await pruneStore(s.store, { keepBatches: 2, engine, compact: true });
      expect(report.kept_batches).toEqual([4, 5]);
      expect(report.pruned_batches).toEqual([0, 1, 2, 3]);
      expect(report.aborted).toBeUndefined();
      expect(report.nodes_deleted).toBeGreaterThan(0);
      expect(await countTreeRecords(s.store)).toEqual({
        nodes: recordsBefore.nodes - report.nodes_deleted,
        leaves: recordsBefore.leaves - report.leaves_deleted,
      });
      expect(await countKeys(s.store, Prefix.batch)).toBe(6); // records are kept
      const sizeAfter = await tableBytes(s.dir);
      expect(sizeAfter).toBeLessThan(sizeBefore);

      for (const id of [4, 5]) {
        const out = join(await tempDir(), "d");
        await dumpStore(s.store, engine, { outDir: out, batchId: id });
        expect(await dumpFiles(out)).toEqual(before[id]);
        for (const object of ["vault", "order", "rollup_vault"]) {
          const p = await makeProof(s.store, engine, object, "19237833", id);
          expect((await verifyProof(engine, p)).valid).toBe(true);
        }
      }
      await expect(
        dumpStore(s.store, engine, { outDir: join(await tempDir(), "d"), batchId: 1 }),
      ).rejects.toThrow(/batch 1 was pruned/);
      await expect(makeProof(s.store, engine, "vault", "1", 3)).rejects.toThrow(/batch 3 was pruned/);
      const check = await checkStore(s.store, engine, { deep: true, deepBatches: [4, 5] });
      expect(check.problems).toEqual([]);
      expect(check.pruned).toEqual([0, 1, 2, 3]);

      // A second prune with a checkpoint that is already gone is refused.
      await expect(pruneStore(s.store, { keepBatches: 1, checkpoints: [2], engine })).rejects.toThrow(
        /already pruned/,
      );
    } finally {
      await s.store.close();
    }
  });

  // Seconds on a quiet machine, more on a busy one: 60 s rather than the unit project's 20.
  it("loses nothing while a chain is committed between sweep chunks", async () => {
    const s = await chainStore("perpetual-chain", 3); // batches 0, 1, 2; 3 builds on 1, then 4 and 5
    const full = await chainStore("perpetual-chain");
    try {
      let next = 3;
      const report = await pruneStore(s.store, {
        keepBatches: 2,
        engine,
        chunk: 8,
        betweenChunks: async () => {
          if (next < s.responses.length) await s.verify(next++);
        },
      });
      expect(next).toBe(s.responses.length);
      expect(report.aborted).toBeUndefined();
      expect(report.kept_batches).toEqual([1, 2]);
      expect(report.nodes_deleted).toBeGreaterThan(0);
      const check = await checkStore(s.store, engine, { deep: true, deepBatches: [1, 2, 3, 4, 5] });
      expect(check.problems).toEqual([]);
      for (const id of [2, 5]) {
        const a = join(await tempDir(), "a");
        const b = join(await tempDir(), "b");
        await dumpStore(s.store, engine, { outDir: a, batchId: id });
        await dumpStore(full.store, engine, { outDir: b, batchId: id });
        expect(await dumpFiles(a)).toEqual(await dumpFiles(b));
      }
    } finally {
      await s.store.close();
      await full.store.close();
    }
  }, 60_000);

  it("never deletes a node that a concurrent commit re-creates (a reverted leaf): the commit's copies are its own", async () => {
    const dir = await tempDir();
    const store = await LevelStore.open(join(dir, "db"));
    const profile = makeProfile("spot-v4.0");
    const trees = [profile.main, profile.order];
    await store.meta.ensureIdentity({ profile: "spot-v4.0", heights: { vault: 31, order: 63 } });
    const A = { key: 11n, token: 22n, balance: 33n };
    const B = { key: 11n, token: 22n, balance: 44n };
    const commit = async (id: number, prev: number, vault: Leaf, order: bigint): Promise<void> => {
      const prevRec = prev === -1 ? undefined : await store.getBatch(prev);
      const prevState: TreeState | null = prevRec
        ? {
            roots: Object.fromEntries(Object.entries(prevRec.roots).map(([k, v]) => [k, hexToBytes32(v)!])),
            gens: prevRec.root_gens,
          }
        : null;
      const changes: Partial<Record<TreeName, Map<bigint, Leaf>>> = {
        vault: new Map([[5n, vault]]),
        order: new Map([[9n, order]]),
      };
      const c = await computeRoots(engine, store, trees, prevState, changes, id);
      const record: BatchRecord = {
        batch_id: id,
        prev_batch_id: prev,
        sequence_number: id,
        roots: { vault: toHex64(c.roots.vault!), order: toHex64(c.roots.order!) },
        root_gens: { vault: c.rootGens.vault!, order: c.rootGens.order! },
        heights: { vault: 31, order: 63 },
        claim_hash: toHex0x(new Uint8Array(32)),
        signature: "",
        member_key: "",
        verified_at: new Date().toISOString(),
      };
      await store.commitBatch(record, c.newNodes, c.newLeaves);
    };
    try {
      await commit(0, -1, A, 100n);
      await commit(1, 0, B, 200n);
      let committed = false;
      const report = await pruneStore(store, {
        keepBatches: 1,
        engine,
        chunk: 4,
        betweenChunks: async () => {
          if (committed) return;
          committed = true;
          await commit(2, 1, A, 100n); // exactly batch 0's trees again, swept right now
        },
      });
      expect(report.kept_batches).toEqual([1]);
      expect((await store.getBatch(2))!.roots).toEqual((await store.getBatch(0))!.roots);
      // Batch 2 wrote batch 0's nodes again, under its own gen (keys lead with the batch: keys.ts),
      // which the sweep (of the records before the prune) never lists: nothing of it needed
      // protecting, while batch 0's copies went.
      expect(report.protected_kept).toBe(0);
      expect(report.nodes_deleted).toBeGreaterThan(0);
      const root = hexToBytes32((await store.getBatch(2))!.roots.vault!)!;
      expect((await store.getBatch(2))!.root_gens).toEqual({ vault: 2, order: 2 });
      expect(await store.getNodes([root, root], [2, 0])).toEqual([expect.any(Uint8Array), undefined]);
      const check = await checkStore(store, engine, { deep: true, deepBatches: [1, 2] });
      expect(check.problems).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it("stops sweeping when a batch is committed on top of a batch being pruned", async () => {
    const s = await chainStore("spot-v40-chain", 3); // batch 3 builds on batch 1
    try {
      const report = await pruneStore(s.store, {
        keepBatches: 1,
        engine,
        chunk: 4,
        betweenChunks: async () => {
          if (!(await s.store.getBatch(3))) await s.verify(3);
        },
      });
      expect(report.aborted).toMatch(/batch 3 was committed on top of batch 1/);
    } finally {
      await s.store.close();
    }
  });
});
