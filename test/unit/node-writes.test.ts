import { describe, expect, it } from "vitest";
import { NodeWrites } from "../../src/storage/records/node-writes.js";
import { prng } from "../../src/util/prng.js";

const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

/** n random records of 64 or 65 bytes (binary nodes, edges) with their hashes. */
function randomRecords(n: number, seed: number): { hash: Uint8Array; record: Uint8Array }[] {
  const rand = prng(seed);
  const bytes = (k: number): Uint8Array => Uint8Array.from({ length: k }, () => Math.floor(rand() * 256));
  return Array.from({ length: n }, () => ({ hash: bytes(32), record: bytes(rand() < 0.5 ? 64 : 65) }));
}

describe("NodeWrites", () => {
  it("keeps every record under its hash through many regrowths, and lays them out flat", () => {
    const list = randomRecords(5000, 1);
    const writes = new NodeWrites();
    // Added from inside larger buffers, at offsets, as the trees add them.
    const early: Uint8Array[] = [];
    for (const [i, { hash, record }] of list.entries()) {
      const hashIn = new Uint8Array(40);
      hashIn.set(hash, 5);
      const recordIn = new Uint8Array(100);
      recordIn.set(record, 7);
      writes.add(hashIn, 5, recordIn, 7, record.length);
      if (i < 3) early.push(writes.record(i));
    }
    expect(writes.length).toBe(5000);
    expect(writes.recordBytes).toBe(list.reduce((s, w) => s + w.record.length, 0));
    list.forEach(({ hash, record }, i) => {
      expect(hex(writes.hash(i))).toBe(hex(hash));
      expect(hex(writes.record(i))).toBe(hex(record));
    });
    // Views taken before the buffers grew still read their records.
    early.forEach((r, i) => expect(hex(r)).toBe(hex(list[i]!.record)));
    // The flat layout: hash i at 32i, record i from `from[i]` to `to[i]`.
    const { hashes, records, from, to } = writes.packed();
    expect(hashes.length).toBe(5000 * 32);
    list.forEach(({ hash, record }, i) => {
      expect(hex(hashes.subarray(i * 32, i * 32 + 32))).toBe(hex(hash));
      expect(hex(records.subarray(from[i]!, to[i]!))).toBe(hex(record));
    });
    expect([...writes].map((w) => hex(w.hash) + hex(w.record))).toEqual(
      list.map((w) => hex(w.hash) + hex(w.record)),
    );
  });

  it("refuses a hash that does not have 32 bytes where it is read", () => {
    const writes = new NodeWrites();
    expect(() => writes.add(new Uint8Array(31), 0, new Uint8Array(64), 0, 64)).toThrow(RangeError);
    expect(() => writes.add(new Uint8Array(40), 9, new Uint8Array(64), 0, 64)).toThrow(RangeError);
    expect(writes.length).toBe(0);
  });
});
