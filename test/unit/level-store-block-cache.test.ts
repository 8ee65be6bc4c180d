import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClassicLevel } from "../../src/storage/classic-level.js";
import { TreeKind, treeKey } from "../../src/storage/keys.js";
import { levelBindingName, setMappedTables } from "../../src/storage/level-binding.js";
import { levelDb } from "../../src/storage/level-db.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { NodeWrites } from "../../src/storage/records/node-writes.js";
import { placeholderRecord } from "../helpers/batch-record.js";
import { randomNodeWrites } from "../helpers/level-records.js";
import { nativeAvailable } from "../helpers/native-required.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

// LevelDB caches only blocks it read with pread, never those of memory-mapped tables: each test file
// runs in a process of its own (vitest's forks pool), and this one maps none, before anything here
// opens a database, so that every lookup could fill the block cache.
const dacdBinding =
  process.platform === "linux" && nativeAvailable("dacd's LevelDB binding", levelBindingName === "dacd");
if (dacdBinding) setMappedTables(0);

const GEN = 3;
let store: LevelStore;
const { nodes, hashes, values } = randomNodeWrites(4000, () => 72);

beforeAll(async () => {
  store = await LevelStore.open(await tempDir("dacd-block-cache-"));
  await store.commitBatch(placeholderRecord(GEN), nodes, new NodeWrites());
  // Into tables: the memtable is never a block cache's.
  await store.compact();
});
afterAll(async () => {
  await store.close();
  await removeTempDirs();
});

/** LevelDB's block cache, memtables included (`leveldb.approximate-memory-usage`), in bytes. */
function levelMemory(db: ClassicLevel<Uint8Array, Uint8Array>): number {
  return Number(db.getProperty("leveldb.approximate-memory-usage"));
}

describe.skipIf(!dacdBinding)("the store's tree lookups and LevelDB's block cache", () => {
  it("read every record without caching a block, where a plain read with the cache caches them", async () => {
    // The store's database, for the property and the control read (no method of the store shows them).
    const db = levelDb(store);
    const before = levelMemory(db);
    const got = await store.getNodes(
      hashes,
      hashes.map(() => GEN),
    );
    got.forEach((v, i) => expect(v).toEqual(values[i]));
    const leaves = await store.getLeafRecords(hashes.slice(0, 100), new Array(100).fill(GEN));
    expect(leaves.every((v) => v === undefined)).toBe(true);
    expect(levelMemory(db)).toBe(before);

    // The same records read with LevelDB's default options fill the cache with their blocks
    // (4000 records of 110 bytes: about 100 blocks of 4 KiB), so the property does see a fill.
    const raw = await db.getMany(hashes.map((hash) => treeKey(GEN, TreeKind.node, hash)));
    raw.forEach((v, i) => expect(new Uint8Array(v!)).toEqual(values[i]));
    expect(levelMemory(db) - before).toBeGreaterThan(100 * 4096);
  });
});
