import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ClassicLevel } from "../../src/storage/classic-level.js";
import { exactKeyOrder, setTreeKeyHead, TREE_KEY_LENGTH, TreeKind } from "../../src/storage/keys.js";
import {
  getPacked,
  levelBindingName,
  nativeContext,
  NOT_FOUND,
  putRecordsInto,
} from "../../src/storage/level-binding.js";
import { batchPuts, putInOrder, type BatchPuts } from "../../src/storage/sorted-puts.js";
import type { PackedRecords } from "../../src/storage/records/node-source.js";
import { nativeAvailable } from "../helpers/native-required.js";

const dacdBinding = nativeAvailable(
  "dacd's LevelDB binding",
  putRecordsInto !== undefined && getPacked !== undefined,
);

type Db = ClassicLevel<Uint8Array, Uint8Array>;

/** n records with random hashes and random bytes of 0 to 199 bytes, packed as a commit holds them. */
function randomRecords(n: number): PackedRecords {
  const lengths = Array.from({ length: n }, (_, i) => (i * 37) % 200);
  const records = new Uint8Array(randomBytes(lengths.reduce((a, b) => a + b, 0)));
  const from = new Uint32Array(n);
  const to = new Uint32Array(n);
  for (let i = 0, at = 0; i < n; i++) {
    from[i] = at;
    to[i] = at += lengths[i]!;
  }
  return { hashes: new Uint8Array(randomBytes(32 * n)), records, from, to };
}

async function entries(db: Db): Promise<[string, string][]> {
  const out: [string, string][] = [];
  for await (const [k, v] of db.iterator())
    out.push([Buffer.from(k).toString("hex"), Buffer.from(v).toString("hex")]);
  return out;
}

let dir: string;
let dbs: Db[];
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "dacd-level-binding-"));
  dbs = [];
});
afterEach(async () => {
  for (const db of dbs) await db.close();
  await rm(dir, { recursive: true, force: true });
});

async function openDb(name: string): Promise<Db> {
  const db = new ClassicLevel<Uint8Array, Uint8Array>(join(dir, name), {
    keyEncoding: "view",
    valueEncoding: "view",
  });
  await db.open();
  dbs.push(db);
  return db;
}

// Where the install could not build dacd's binding (no compiler), classic-level's own is loaded and
// every put goes one at a time: these tests then have nothing to test.
describe.skipIf(!dacdBinding)("dacd's build of classic-level's binding", () => {
  it("is the one loaded, and classic-level's chained batches use it", async () => {
    expect(levelBindingName).toBe("dacd");
    // Set only while the binding loaded: processes dacd starts choose for themselves.
    expect(process.env.CLASSIC_LEVEL_PREBUILD).toBeUndefined();
    const db = await openDb("loaded");
    const batch = db.batch();
    expect(nativeContext(batch)).toBeDefined();
    expect(batchPuts(batch).putRecords).toBeTypeOf("function");
    await batch.close();
  });

  it("puts the same keys and values in runs as one put per record", async () => {
    const packed = randomRecords(5000);
    const order = exactKeyOrder(packed.hashes);
    const key = new Uint8Array(TREE_KEY_LENGTH);
    setTreeKeyHead(key, 0x01020304, TreeKind.node);

    const inRuns = await openDb("runs");
    const runsBatch = inRuns.batch();
    const runs = batchPuts(runsBatch);
    // Slices of at most 16 KiB, as the commit puts a slice per turn of the event loop.
    let calls = 0;
    for (let k = 0; k < order.length; calls++)
      k = putInOrder(runs, key, packed, order, k, order.length, 16384);
    expect(calls).toBeGreaterThan(10);
    await runsBatch.write({ sync: true });

    const oneByOne = await openDb("one-by-one");
    const singleBatch = oneByOne.batch();
    const single: BatchPuts = { put: batchPuts(singleBatch).put };
    expect(putInOrder(single, key, packed, order, 0)).toBe(order.length);
    await singleBatch.write({ sync: true });

    const written = await entries(inRuns);
    expect(written).toHaveLength(5000);
    expect(written).toEqual(await entries(oneByOne));
    // Spot checks against the packed records themselves.
    for (const i of [0, 1, 4999]) {
      const k = new Uint8Array(key);
      k.set(packed.hashes.subarray(i * 32, i * 32 + 32), 6);
      expect(Buffer.from((await inRuns.get(k))!)).toEqual(
        Buffer.from(packed.records.subarray(packed.from[i]!, packed.to[i]!)),
      );
    }
  });

  it("refuses a record outside the buffers, a bad range or a long head, and puts nothing of that call", async () => {
    const db = await openDb("refused");
    const batch = db.batch();
    const context = nativeContext(batch);
    const packed = randomRecords(10);
    const order = Uint32Array.from({ length: 10 }, (_, i) => i);
    const head = new Uint8Array(6);
    batch.put(new Uint8Array([9]), new Uint8Array([9]));
    const past = { ...packed, to: packed.to.map((t, i) => (i === 7 ? packed.records.length + 1 : t)) };
    expect(() => putRecordsInto!(context, head, past, order, 0, 10)).toThrow(RangeError);
    const shortHashes = { ...packed, hashes: packed.hashes.subarray(0, 32 * 9) };
    expect(() => putRecordsInto!(context, head, shortHashes, order, 0, 10)).toThrow(RangeError);
    expect(() => putRecordsInto!(context, head, packed, Uint32Array.of(0, 10), 0, 2)).toThrow(RangeError);
    expect(() => putRecordsInto!(context, head, packed, order, 5, 11)).toThrow(RangeError);
    expect(() => putRecordsInto!(context, head, packed, order, 6, 5)).toThrow(RangeError);
    expect(() => putRecordsInto!(context, new Uint8Array(33), packed, order, 0, 10)).toThrow(RangeError);
    const wrongType = { ...packed, from: new Int32Array(packed.from) as unknown as Uint32Array };
    expect(() => putRecordsInto!(context, head, wrongType, order, 0, 10)).toThrow(TypeError);
    await batch.write();
    expect(await entries(db)).toEqual([["09", "09"]]);
  });

  it("reads keys packed in one buffer as getMany reads them, with or without a snapshot", async () => {
    const db = await openDb("reads");
    const packed = randomRecords(3000);
    const key = (i: number): Uint8Array => {
      const k = new Uint8Array(TREE_KEY_LENGTH);
      setTreeKeyHead(k, 7, TreeKind.leaf);
      k.set(packed.hashes.subarray(i * 32, i * 32 + 32), 6);
      return k;
    };
    // Records 0 … 1999 are stored; 2000 … 2999 are not.
    const batch = db.batch();
    for (let i = 0; i < 2000; i++) batch.put(key(i), packed.records.subarray(packed.from[i]!, packed.to[i]!));
    await batch.write();
    const asked = [5, 2500, 5, 0, 1999, 2999, 1234, 17];
    const keys = new Uint8Array(asked.length * TREE_KEY_LENGTH);
    asked.forEach((i, k) => keys.set(key(i), k * TREE_KEY_LENGTH));

    const unpack = ({ values, ends }: { values: Uint8Array; ends: Uint32Array }): (string | undefined)[] => {
      let at = 0;
      return [...ends].map((end) => {
        if (end === NOT_FOUND) return undefined;
        const value = Buffer.from(values.subarray(at, end)).toString("hex");
        at = end;
        return value;
      });
    };
    const viaGetMany = async (options: object): Promise<(string | undefined)[]> =>
      (await db.getMany(asked.map(key), options)).map((v) =>
        v ? Buffer.from(v).toString("hex") : undefined,
      );

    const got = unpack(await getPacked!(db, keys, TREE_KEY_LENGTH, {}));
    expect(got).toEqual(await viaGetMany({}));
    expect(got.map((v) => v === undefined)).toEqual(asked.map((i) => i >= 2000));
    // Record 0 is empty (randomRecords' lengths start at 0): found, with no bytes.
    expect(got[3]).toBe("");

    const snapshot = db.snapshot();
    try {
      await db.put(key(5), new Uint8Array([1, 2, 3]));
      await db.put(key(2500), new Uint8Array([4]));
      const before = unpack(await getPacked!(db, keys, TREE_KEY_LENGTH, { snapshot, fillCache: false }));
      expect(before).toEqual(got);
      expect(before).toEqual(await viaGetMany({ snapshot }));
      const after = unpack(await getPacked!(db, keys, TREE_KEY_LENGTH, {}));
      expect([after[0], after[1], after[2]]).toEqual(["010203", "04", "010203"]);
    } finally {
      await snapshot.close();
    }
    // As abstract-level's own reads: a closed snapshot is refused, not read through.
    await expect(getPacked!(db, keys, TREE_KEY_LENGTH, { snapshot })).rejects.toThrow(/not open/);
    expect(await getPacked!(db, new Uint8Array(0), TREE_KEY_LENGTH, {})).toEqual({
      values: new Uint8Array(0),
      ends: new Uint32Array(0),
    });
    await expect(getPacked!(db, keys.subarray(1), TREE_KEY_LENGTH, {})).rejects.toThrow(RangeError);
    await expect(getPacked!(db, keys, 0, {})).rejects.toThrow(RangeError);
  });
});
