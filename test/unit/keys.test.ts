import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  exactKeyOrder,
  keyOrder,
  Prefix,
  retireKey,
  TREE_KEY_LENGTH,
  treeKey,
  treeKeyOrder,
  treeKeyParts,
  TreeKind,
} from "../../src/storage/keys.js";

describe("keyOrder", () => {
  it("orders hashes by their first 24 bits, ties in the given order", () => {
    const hashes = [
      Uint8Array.of(0xff, 0, 0, 1),
      Uint8Array.of(0x00, 0x00, 0x01, 9),
      Uint8Array.of(0x00, 0x00, 0x00, 7),
      Uint8Array.of(0xff, 0, 0, 0), // ties with the first: stays after it
      Uint8Array.of(0x80, 0xff, 0xff, 0),
    ];
    expect([...keyOrder(hashes)]).toEqual([2, 1, 4, 0, 3]);
  });

  it("is a permutation that sorts 100,000 random hashes", () => {
    const hashes = Array.from({ length: 100_000 }, () => new Uint8Array(randomBytes(32)));
    const order = keyOrder(hashes);
    expect(new Set(order).size).toBe(hashes.length);
    const prefix = (h: Uint8Array): number => h[0]! * 65536 + h[1]! * 256 + h[2]!;
    let outOfOrder = 0;
    for (let k = 1; k < order.length; k++) {
      const a = prefix(hashes[order[k - 1]!]!);
      const b = prefix(hashes[order[k]!]!);
      if (!(a < b || (a === b && order[k - 1]! < order[k]!))) outOfOrder++;
    }
    expect(outOfOrder).toBe(0);
  });

  it("orders hashes packed end to end in one buffer as it orders the same hashes apart", () => {
    const hashes = Array.from({ length: 5_000 }, (_, i) =>
      // Few distinct prefixes, so that ties (kept in the given order) are common.
      Uint8Array.from(randomBytes(32), (b, k) => (k < 3 ? (i * 7) % 5 : b)),
    );
    const packed = new Uint8Array(hashes.length * 32);
    hashes.forEach((h, i) => packed.set(h, i * 32));
    expect([...keyOrder(packed)]).toEqual([...keyOrder(hashes)]);
    expect(keyOrder(packed)[0]).toBe(0);
  });

  it("gives a stable sort's order, below and above the size where it turns to a radix sort", () => {
    for (const n of [1_023, 1_024, 5_000]) {
      // Few distinct prefixes, differing in both 12-bit halves, so that ties are common.
      const packed = new Uint8Array(randomBytes(n * 32));
      for (let i = 0; i < n; i++) packed.set([(i * 5) % 3, 0x80, (i * 11) % 4], i * 32);
      const prefix = (i: number): number =>
        packed[i * 32]! * 65536 + packed[i * 32 + 1]! * 256 + packed[i * 32 + 2]!;
      const stable = Array.from({ length: n }, (_, i) => i).sort((a, b) => prefix(a) - prefix(b) || a - b);
      expect([...keyOrder(packed)]).toEqual(stable);
    }
  });

  it("handles no hashes", () => {
    expect(keyOrder([]).length).toBe(0);
  });
});

describe("exactKeyOrder", () => {
  const compare = (a: Uint8Array, b: Uint8Array): number => Buffer.compare(a, b);

  it("sorts packed hashes byte for byte, also where their first 24 bits tie", () => {
    const n = 6_000;
    const packed = new Uint8Array(randomBytes(n * 32));
    // Few distinct 24-bit prefixes, so most hashes tie with others on keyOrder's part of the key.
    for (let i = 0; i < n; i++) packed.set([i % 7, 0, (i * 13) % 3], i * 32);
    // Some hashes equal in full: their order is the given one.
    packed.copyWithin(32 * 5, 32 * 9, 32 * 10);
    const order = exactKeyOrder(packed);
    expect(new Set(order).size).toBe(n);
    const at = (i: number): Uint8Array => packed.subarray(i * 32, i * 32 + 32);
    for (let k = 1; k < n; k++) {
      const c = compare(at(order[k - 1]!), at(order[k]!));
      expect(c < 0 || (c === 0 && order[k - 1]! < order[k]!)).toBe(true);
    }
    expect(order.indexOf(5)).toBe(order.indexOf(9) - 1);
  });

  it("handles no hashes and one", () => {
    expect(exactKeyOrder(new Uint8Array(0)).length).toBe(0);
    expect([...exactKeyOrder(new Uint8Array(32))]).toEqual([0]);
  });
});

describe("tree keys (format 3: 0x00 ‖ u32 gen ‖ kind ‖ hash)", () => {
  it("lay out prefix, big-endian gen, kind and hash, and read back", () => {
    const hash = new Uint8Array(randomBytes(32));
    const key = treeKey(0x01020304, TreeKind.leaf, hash);
    expect(key.length).toBe(TREE_KEY_LENGTH);
    expect([...key.subarray(0, 6)]).toEqual([Prefix.tree, 1, 2, 3, 4, TreeKind.leaf]);
    expect(key.subarray(6)).toEqual(hash);
    expect(treeKeyParts(key)).toEqual({ gen: 0x01020304, kind: TreeKind.leaf, hash });
    expect(treeKeyParts(treeKey(0xffff_ffff, TreeKind.node, hash)).gen).toBe(0xffff_ffff);
    // The hash may be taken from within a larger buffer.
    const packed = new Uint8Array(96);
    packed.set(hash, 32);
    expect(treeKey(7, TreeKind.node, packed, 32)).toEqual(treeKey(7, TreeKind.node, hash));
  });

  it("sort by gen first (a later batch's records above an earlier one's), then kind, then hash", () => {
    const low = new Uint8Array(32);
    const high = new Uint8Array(32).fill(0xff);
    const keys = [
      treeKey(256, TreeKind.node, low),
      treeKey(255, TreeKind.leaf, low),
      treeKey(255, TreeKind.node, high),
      treeKey(1, TreeKind.leaf, high),
      retireKey(255),
      treeKey(255, TreeKind.node, low),
    ];
    const sorted = [...keys].sort((a, b) => Buffer.compare(a, b));
    expect(sorted.map((k) => keys.indexOf(k))).toEqual([3, 5, 2, 1, 4, 0]);
    // The retire key sits in its batch's range, after its records, and is no tree record's length.
    expect([...retireKey(255)]).toEqual([Prefix.tree, 0, 0, 0, 255, TreeKind.retire]);
    expect(retireKey(255).length).not.toBe(TREE_KEY_LENGTH);
  });

  it("treeKeyOrder orders by gen, then as keyOrder within a gen, ties in the given order", () => {
    const n = 3000;
    const hashes = Array.from({ length: n }, () => new Uint8Array(randomBytes(32)));
    hashes[7] = hashes[3]!.slice(); // equal hashes of one gen keep their order
    const gens = Array.from({ length: n }, (_, i) => [9, 2, 300, 2][i % 4]!);
    gens[7] = gens[3]!;
    const order = treeKeyOrder(hashes, gens);
    expect(new Set(order).size).toBe(n);
    const prefix = (h: Uint8Array): number => (h[0]! << 16) | (h[1]! << 8) | h[2]!;
    for (let k = 1; k < n; k++) {
      const [a, b] = [order[k - 1]!, order[k]!];
      const before =
        gens[a]! < gens[b]! ||
        (gens[a] === gens[b] &&
          (prefix(hashes[a]!) < prefix(hashes[b]!) || (prefix(hashes[a]!) === prefix(hashes[b]!) && a < b)));
      expect(before, `positions ${k - 1} and ${k}`).toBe(true);
    }
    // One gen: keyOrder's order.
    expect([...treeKeyOrder(hashes, new Array<number>(n).fill(5))]).toEqual([...keyOrder(hashes)]);
    expect(treeKeyOrder([], []).length).toBe(0);
  });
});
