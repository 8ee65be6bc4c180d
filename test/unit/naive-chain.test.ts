import { describe, expect, it } from "vitest";
import { NaiveChain, hex64, rootValue } from "../helpers/naive-chain.js";
import { loadChain, type ChainName } from "../helpers/vectors.js";

/**
 * The naive chain replay that the devnet tests hold dacd's roots against is itself held against the
 * operator's vectors, root by root, from the wire bodies alone. BigInt Pedersen costs about a
 * millisecond a hash, so each chain's first batches: a Patricia and a Merkle order tree, rollup
 * vaults, emptied vaults and orders, positions with several assets.
 */
const SAMPLE: [ChainName, number][] = [
  ["spot-golden", 1],
  ["spot-chain", 2],
  ["spot-v40-chain", 2],
  ["perpetual-chain", 1],
];

describe("naive chain replay (test helper) reproduces the vectors' roots", () => {
  for (const [name, batches] of SAMPLE) {
    it(`${name}, batches 0..${batches - 1}`, { timeout: 60_000 }, () => {
      const { responses, expected } = loadChain(name);
      const chain = new NaiveChain(expected.profile);
      for (const b of expected.batches.slice(0, batches)) {
        const roots = chain.add(b.batch_id, responses[b.batch_id]!.update as Record<string, unknown>);
        expect(Object.keys(roots).sort(), `${name} batch ${b.batch_id}`).toEqual(Object.keys(b.roots).sort());
        for (const [tree, root] of Object.entries(b.roots))
          expect(hex64(roots[tree]!), `${name} batch ${b.batch_id} ${tree}`).toBe(hex64(rootValue(root)));
      }
    });
  }
});
