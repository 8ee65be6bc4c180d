import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClassicLevel } from "../../src/storage/classic-level.js";
import { levelBindingName } from "../../src/storage/level-binding.js";
import { nativeAvailable } from "../helpers/native-required.js";

// dacd's build of LevelDB starts a memtable insert after the last one where its key comes after
// the last key (native/level/dacd_skiplist_finger.h). Writes in every order the store makes, and
// others, must leave the memtable holding exactly what a sorted list of the same keys holds: read
// back by key, in order both ways, and by seeks, before anything is flushed to a table.

type Db = ClassicLevel<Uint8Array, Uint8Array>;

/** A small deterministic generator (xorshift32), so that a failure can be replayed. */
function generator(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>>= 0);
  };
}

const next = generator(20261126);
const bytes = (n: number): Uint8Array => Uint8Array.from({ length: n }, () => next() & 0xff);

function compare(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

const hex = (k: Uint8Array): string => Buffer.from(k).toString("hex");

/** A tree record's key: 0x00 ‖ batch ‖ kind ‖ hash (storage/keys.ts's layout). */
function treeKey(batch: number, kind: number, hash: Uint8Array): Uint8Array {
  const key = new Uint8Array(6 + hash.length);
  new DataView(key.buffer).setUint32(1, batch);
  key[5] = kind;
  key.set(hash, 6);
  return key;
}

const sortedRun = (keys: Uint8Array[]): Uint8Array[] => [...keys].sort(compare);

const dacdBinding = nativeAvailable("dacd's LevelDB binding", levelBindingName === "dacd");
let dir: string;
let db: Db;
/** The model: each live key's value. */
const live = new Map<string, Uint8Array>();
let sorted: Uint8Array[] = [];

type Op = { key: Uint8Array; value?: Uint8Array };

/** One write of `ops` in their order (a value: put; none: delete). */
async function write(ops: Op[]): Promise<void> {
  const batch = db.batch();
  for (const { key, value } of ops) {
    if (value) {
      batch.put(key, value);
      live.set(hex(key), value);
    } else {
      batch.del(key);
      live.delete(hex(key));
    }
  }
  await batch.write();
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "dacd-memtable-"));
  // A memtable large enough for every write below: nothing reaches a table.
  db = new ClassicLevel<Uint8Array, Uint8Array>(dir, {
    keyEncoding: "view",
    valueEncoding: "view",
    writeBufferSize: 256 * 1024 * 1024,
  });
  await db.open();
  const put = (key: Uint8Array): Op => ({ key, value: bytes(8 + (next() % 64)) });
  // One run in key order (a bulk load's write).
  await write(sortedRun(Array.from({ length: 20_000 }, () => treeKey(1, 1, bytes(32)))).map(put));
  // A batch as the store writes it: sorted run after sorted run of one batch's tree records
  // (interleaved in key order), then its leaves under another kind, then its batch record.
  const trees = [9_000, 6_000, 3_000].map((n) =>
    sortedRun(Array.from({ length: n }, () => treeKey(2, 1, bytes(32)))),
  );
  const leaves = sortedRun(Array.from({ length: 4_000 }, () => treeKey(2, 2, bytes(32))));
  await write([...trees.flat(), ...leaves, Uint8Array.of(0x02, 0, 0, 0, 2)].map(put));
  // Runs below and among the keys already there, keys of every length, a descending run.
  await write(sortedRun(Array.from({ length: 5_000 }, () => treeKey(1, 1, bytes(32)))).map(put));
  await write(Array.from({ length: 5_000 }, () => bytes(1 + (next() % 50))).map(put));
  await write(
    sortedRun(Array.from({ length: 3_000 }, () => treeKey(3, 1, bytes(32))))
      .reverse()
      .map(put),
  );
  // New versions of keys already in the memtable, in order and shuffled, and deletions.
  const keys = [...live.keys()].map((k) => Uint8Array.from(Buffer.from(k, "hex")));
  await write(sortedRun(keys.filter(() => next() % 5 === 0)).map(put));
  await write(keys.filter(() => next() % 7 === 0).map(put));
  await write(sortedRun(keys.filter(() => next() % 9 === 0)).map((key) => ({ key })));
  sorted = [...live.keys()].map((k) => Uint8Array.from(Buffer.from(k, "hex"))).sort(compare);
}, 120_000);

afterAll(async () => {
  await db?.close();
  await rm(dir, { recursive: true, force: true });
});

describe.skipIf(!dacdBinding)("LevelDB's memtable after inserts in any order", () => {
  it("holds everything in the memtable (no table written)", () => {
    expect(String(db.getProperty("leveldb.sstables")).match(/\d+:\d+\[/g) ?? []).toEqual([]);
    expect(sorted.length).toBeGreaterThan(40_000);
  });

  it("iterates every live key in order, forward and backward, with its last value", async () => {
    const entries = await db.iterator().all();
    expect(entries.map(([k]) => hex(k))).toEqual(sorted.map(hex));
    for (const [k, v] of entries) expect(hex(v)).toBe(hex(live.get(hex(k))!));
    const backward = await db.keys({ reverse: true }).all();
    expect(backward.map(hex)).toEqual(sorted.map(hex).reverse());
  });

  it("finds every live key by key and seeks to the first key at or after any target", async () => {
    const values = await db.getMany(sorted);
    values.forEach((v, i) => expect(hex(v!)).toBe(hex(live.get(hex(sorted[i]!))!)));
    for (let i = 0; i < 2_000; i++) {
      const key = sorted[next() % sorted.length]!;
      const target = Uint8Array.from([...key.subarray(0, next() % (key.length + 1)), ...bytes(next() % 6)]);
      let lo = 0;
      let hi = sorted.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (compare(sorted[mid]!, target) < 0) lo = mid + 1;
        else hi = mid;
      }
      const after = await db.keys({ gte: target, limit: 1 }).all();
      expect(after.map(hex), hex(target)).toEqual(lo < sorted.length ? [hex(sorted[lo]!)] : []);
    }
  });
});
