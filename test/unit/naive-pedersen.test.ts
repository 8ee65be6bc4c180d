import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pedersen } from "@scure/starknet";
import { describe, expect, it } from "vitest";
import { prng } from "../../src/util/prng.js";
import { pedersenPair } from "../helpers/naive-trees.js";
import { FIXTURES } from "../helpers/vectors.js";

/**
 * The naive trees' Pedersen (four scalar multiplications on @scure/starknet's curve) is
 * @scure/starknet's `pedersen` and the operator's vectors: on them, on the field's edges and the
 * split between the low 248 bits and the high 4, and on random pairs.
 */

const P = 2n ** 251n + 17n * 2n ** 192n + 1n;

describe("the naive trees' Pedersen", () => {
  it("gives the vectors' hashes", () => {
    const { vectors } = JSON.parse(readFileSync(join(FIXTURES, "pedersen.json"), "utf8")) as {
      vectors: { x: string; y: string; hash: string }[];
    };
    expect(vectors.length).toBeGreaterThan(3);
    for (const v of vectors)
      expect(pedersenPair(BigInt(v.x), BigInt(v.y)), `${v.x}, ${v.y}`).toBe(BigInt(v.hash));
  });

  it("is @scure/starknet's pedersen at the edges and on random pairs", () => {
    const edges = [0n, 1n, 2n, (1n << 248n) - 1n, 1n << 248n, (1n << 248n) + 1n, 1n << 250n, P - 2n, P - 1n];
    const r = prng(11);
    const random = (): bigint => {
      let v = 0n;
      for (let i = 0; i < 16; i++) v = (v << 16n) | BigInt(Math.floor(r() * 65536));
      return v % P;
    };
    const pairs: [bigint, bigint][] = [];
    for (const x of edges) for (const y of edges) pairs.push([x, y]);
    for (let i = 0; i < 40; i++) pairs.push([random(), random()]);
    for (const [x, y] of pairs) expect(pedersenPair(x, y), `${x}, ${y}`).toBe(BigInt(pedersen(x, y)));
  });
});
