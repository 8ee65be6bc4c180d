import { describe, expect, it } from "vitest";
import { NaiveChain, hex64, rootValue } from "../helpers/naive-chain.js";
import { fastH, memoH, type Hash2 } from "../helpers/naive-trees.js";
import { CHAINS, loadChain, type ChainName } from "../helpers/vectors.js";

/**
 * The naive chain replay that the devnet tests hold dacd's roots against is itself held against the
 * operator's vectors, root by root, from the wire bodies alone: every batch of every chain (Patricia
 * and Merkle order trees, rollup vaults, emptied vaults, orders and positions, batches built on an
 * earlier batch than their predecessor) with pedersen-fast, and the operator's own batch with
 * BigInt Pedersen (about a millisecond a hash: the whole chains would take minutes).
 */
function replay(name: ChainName, hash: Hash2): void {
  const { responses, expected } = loadChain(name);
  const chain = new NaiveChain(expected.profile, hash);
  for (const b of expected.batches) {
    const roots = chain.add(b.batch_id, responses[b.batch_id]!.update as Record<string, unknown>);
    expect(Object.keys(roots).sort(), `${name} batch ${b.batch_id}`).toEqual(Object.keys(b.roots).sort());
    for (const [tree, root] of Object.entries(b.roots))
      expect(hex64(roots[tree]!), `${name} batch ${b.batch_id} ${tree}`).toBe(hex64(rootValue(root)));
  }
}

describe("naive chain replay (test helper) reproduces the vectors' roots", () => {
  for (const name of CHAINS) it(`${name}, every batch (pedersen-fast)`, () => replay(name, fastH));
  it("spot-golden with @scure/starknet's BigInt Pedersen", { timeout: 60_000 }, () =>
    replay("spot-golden", memoH),
  );
});
