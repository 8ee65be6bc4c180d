import { describe, expect, it } from "vitest";
import { prng } from "../../src/util/prng.js";
import { bigintToBytes32, bytesToBigint } from "../../src/util/bytes.js";
import { buildMerkle, buildPatricia } from "../../src/verifier/trees/bulk/bulk-build.js";
import { emptyRoots } from "../../src/verifier/trees/update/compute-roots.js";
import { naiveMerkleRoot, naivePatriciaRoot } from "../helpers/naive-trees.js";
import { engine, randomBig } from "../helpers/chain-store.js";

/**
 * The builders' probe reports each non-empty node at a height (a stated subtree root is checked
 * against it): every reported node must equal the naive root of the leaves under it, and every
 * subtree with leaves must be reported, whether its node is a record or lies inside an edge.
 */

function leafSet(n: number, height: number, seed: number, clustered: boolean): Map<bigint, bigint> {
  const r = prng(seed);
  const leaves = new Map<bigint, bigint>();
  while (leaves.size < n) {
    // Clustered: ids in a few narrow ranges, so some subtrees are empty and some hold one leaf.
    const id = clustered ? (randomBig(r, 2) << BigInt(height - 2)) | randomBig(r, 3) : randomBig(r, height);
    leaves.set(id, 1n + randomBig(r, 60));
  }
  return leaves;
}

function pack(leaves: Map<bigint, bigint>): { ids: bigint[]; hashes: Uint8Array } {
  const ids = [...leaves.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const hashes = new Uint8Array(ids.length * 32);
  ids.forEach((id, i) => hashes.set(bigintToBytes32(leaves.get(id)!), i * 32));
  return { ids, hashes };
}

const under = (leaves: Map<bigint, bigint>, shift: number, index: bigint): Map<bigint, bigint> =>
  new Map(
    [...leaves]
      .filter(([id]) => id >> BigInt(shift) === index)
      .map(([id, v]) => [id & ((1n << BigInt(shift)) - 1n), v]),
  );

const cases: [string, number, number, boolean][] = [
  ["one leaf", 1, 1, false],
  ["two leaves", 2, 2, false],
  ["spread", 40, 3, false],
  ["clustered", 5, 4, true],
  ["clustered, one per subtree", 3, 5, true],
];

describe("bulk build probe", () => {
  it.each(cases)(
    "Merkle: nodes at a height equal the naive subtree roots (%s)",
    async (_n, count, seed, cl) => {
      const height = 12;
      const empty = await emptyRoots(engine, "order", height);
      const leaves = leafSet(count, height, seed, cl);
      for (const probeHeight of [0, 3, 10, 12]) {
        const seen = new Map<bigint, bigint>();
        const root = await buildMerkle(engine, empty, pack(leaves), () => undefined, {
          probe: { height: probeHeight, onNode: (i, h) => seen.set(i, bytesToBigint(h)) },
        });
        const shift = height - (height - probeHeight);
        const indices = new Set([...leaves.keys()].map((id) => id >> BigInt(probeHeight)));
        expect([...seen.keys()].sort()).toEqual([...indices].sort());
        for (const [index, hash] of seen)
          expect(hash).toBe(naiveMerkleRoot(probeHeight, under(leaves, shift, index), 0n));
        if (probeHeight === height) expect(seen.get(0n)).toBe(bytesToBigint(root));
      }
    },
  );

  it.each(cases)(
    "Patricia: nodes at a height equal the naive subtree roots (%s)",
    async (_n, count, seed, cl) => {
      const height = 12;
      const leaves = leafSet(count, height, seed, cl);
      for (const probeHeight of [0, 3, 10, 12]) {
        const seen = new Map<bigint, bigint>();
        const root = await buildPatricia(engine, height, pack(leaves), () => undefined, {
          probe: { height: probeHeight, onNode: (i, h) => seen.set(i, bytesToBigint(h)) },
        });
        const indices = new Set([...leaves.keys()].map((id) => id >> BigInt(probeHeight)));
        expect([...seen.keys()].sort()).toEqual([...indices].sort());
        for (const [index, hash] of seen)
          expect(hash).toBe(naivePatriciaRoot(probeHeight, under(leaves, probeHeight, index)));
        if (probeHeight === height) expect(seen.get(0n)).toBe(bytesToBigint(root));
      }
    },
  );
});
