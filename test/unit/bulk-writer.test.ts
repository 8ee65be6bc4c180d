import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BULK_SPILL_DIR, BulkWriter, spillPartition } from "../../src/storage/bulk-writer.js";
import { treeKey, TreeKind } from "../../src/storage/keys.js";
import { LevelStore } from "../../src/storage/level-store.js";
import type { NodeWrite } from "../../src/storage/records/node-source.js";
import { levelDb } from "../../src/storage/level-db.js";

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function freshStore(): Promise<LevelStore> {
  const dir = await mkdtemp(join(tmpdir(), "dacd-bulk-writer-"));
  dirs.push(dir);
  return LevelStore.open(dir);
}

function randomWrites(n: number): NodeWrite[] {
  // Records of the lengths the trees write: binary nodes, Patricia edges, Merkle edges, leaves.
  const lengths = [72, 69, 165, 96, 1];
  return Array.from({ length: n }, (_, i) => ({
    hash: new Uint8Array(randomBytes(32)),
    record: new Uint8Array(randomBytes(lengths[i % lengths.length]!)),
  }));
}

const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

describe("BulkWriter", () => {
  it("spreads field-element hashes evenly over its 32 partitions, rising with the key", () => {
    // Pedersen outputs are below 2^251: the top 5 bits are zero.
    const counts = new Array<number>(32).fill(0);
    const n = 64_000;
    for (let i = 0; i < n; i++) {
      const h = new Uint8Array(randomBytes(32));
      h[0]! &= 0x07;
      counts[spillPartition(h)]!++;
    }
    for (const c of counts) {
      expect(c).toBeGreaterThan((n / 32) * 0.8);
      expect(c).toBeLessThan((n / 32) * 1.2);
    }
    // Any key, field element or not: a larger key never falls in an earlier partition.
    const keys = Array.from({ length: 5000 }, () => new Uint8Array(randomBytes(32))).sort(Buffer.compare);
    const parts = keys.map(spillPartition);
    parts.forEach((p, i) => expect(p).toBeGreaterThanOrEqual(parts[i - 1] ?? 0));
    expect(parts[0]).toBe(0);
    expect(spillPartition(new Uint8Array(32).fill(0xff))).toBe(31);
    expect(spillPartition(Uint8Array.of(0x07, 0xff, ...new Uint8Array(30)))).toBe(31);
    expect(spillPartition(Uint8Array.of(0x00, 0x40, ...new Uint8Array(30)))).toBe(1);
  });

  it("stores every record under gen ‖ kind ‖ hash, in several LevelDB writes, and removes its spill files", async () => {
    const store = await freshStore();
    try {
      const spill = join(store.dir, BULK_SPILL_DIR);
      // Small batches (by count and by bytes) and spill buffers, so that files are drained and
      // batches follow each other.
      const writer = new BulkWriter(levelDb(store), spill, {
        batchOps: 97,
        batchBytes: 12_000,
        spillBuffer: 4096,
      });
      const nodes = randomWrites(3000);
      const leaves = randomWrites(700);
      for (let i = 0; i < nodes.length; i += 256) await writer.put(TreeKind.node, nodes.slice(i, i + 256));
      await writer.put(TreeKind.leaf, leaves);
      expect(writer.taken).toBe(3700);
      expect((await readdir(spill)).length).toBeGreaterThan(0);
      // Nothing reaches LevelDB before finish.
      expect(await store.isEmpty()).toBe(true);
      const heard: number[] = [];
      await writer.finish(0x01020304, (written) => heard.push(written));
      expect(existsSync(spill)).toBe(false);
      // Told after every write batch: rising, ending at every record; 97 per batch at most.
      expect(heard.at(-1)).toBe(3700);
      expect(heard.length).toBeGreaterThanOrEqual(Math.ceil(3700 / 97));
      heard.forEach((n, i) => expect(n).toBeGreaterThan(heard[i - 1] ?? 0));

      const stored = new Map<string, string>();
      for await (const [k, v] of levelDb(store).iterator()) stored.set(hex(k), hex(v));
      expect(stored.size).toBe(3700);
      for (const [kind, list] of [
        [TreeKind.node, nodes],
        [TreeKind.leaf, leaves],
      ] as const) {
        for (const w of list) expect(stored.get(hex(treeKey(0x01020304, kind, w.hash)))).toBe(hex(w.record));
      }
    } finally {
      await store.close();
    }
  });

  it("abandon writes nothing and removes the spill files; a new writer starts from an empty spill", async () => {
    const store = await freshStore();
    try {
      const spill = join(store.dir, BULK_SPILL_DIR);
      const first = new BulkWriter(levelDb(store), spill, { spillBuffer: 1024 });
      await first.put(TreeKind.node, randomWrites(500));
      await first.abandon();
      expect(existsSync(spill)).toBe(false);
      expect(await store.isEmpty()).toBe(true);

      // A killed load's files must not be appended to by the next one.
      const killed = new BulkWriter(levelDb(store), spill, { spillBuffer: 1024 });
      await killed.put(TreeKind.node, randomWrites(300));
      const next = new BulkWriter(levelDb(store), spill);
      const writes = randomWrites(10);
      await next.put(TreeKind.node, writes);
      await next.finish(9);
      await killed.abandon(); // closes its files (the directory is already gone)
      const keys = await levelDb(store).keys().all();
      expect(keys.map(hex).sort()).toEqual(writes.map((w) => hex(treeKey(9, TreeKind.node, w.hash))).sort());
    } finally {
      await store.close();
    }
  });

  it("a killed load's spill files are removed when the store is next opened", async () => {
    const store = await freshStore();
    const spill = join(store.dir, BULK_SPILL_DIR);
    const killed = new BulkWriter(levelDb(store), spill, { spillBuffer: 1024 });
    await killed.put(TreeKind.node, randomWrites(300));
    expect((await readdir(spill)).length).toBeGreaterThan(0);
    await store.close(); // as if the process died: the writer never finishes
    const reopened = await LevelStore.open(store.dir);
    try {
      expect(existsSync(spill)).toBe(false);
      expect(await reopened.isEmpty()).toBe(true);
    } finally {
      await reopened.close();
      await killed.abandon(); // closes the dead writer's file handles
    }
  });
  it("compactionWrittenMb counts what LevelDB wrote into its levels", async () => {
    const store = await freshStore();
    try {
      expect(store.compactionWrittenMb()).toBe(0);
      // 3 MiB of random records (about 120 bytes with their keys): below the 4 MiB memtable, so nothing reaches a level
      // until compact() flushes it (and merges it one level down).
      const batch = levelDb(store).batch();
      for (const { hash, record } of randomWrites(24_000)) batch.put(treeKey(1, TreeKind.node, hash), record);
      await batch.write();
      expect(store.compactionWrittenMb()).toBe(0);
      await store.compact();
      const written = store.compactionWrittenMb();
      expect(written).toBeGreaterThanOrEqual(2);
      expect(written).toBeLessThan(12);
    } finally {
      await store.close();
    }
  });
});
