import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine } from "../../src/verifier/hash/select.js";
import type { TreeSpec } from "../../src/model/profile.js";
import type { LeafChanges } from "../../src/model/state-update.js";
import { placeBranchTops, warmTopNodes } from "../../src/verifier/warm-cache.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { findBranchTop } from "../../src/verifier/trees/cache/branch-top.js";
import { computeRoots, emptyRoots, type TreeState } from "../../src/verifier/trees/update/compute-roots.js";
import { createTopNodeCache, type TopNodeCache } from "../../src/verifier/trees/cache/node-cache.js";
import type { NodeSource } from "../../src/storage/records/node-source.js";
import { walkLeaves } from "../../src/verifier/trees/read/walk-leaves.js";
import { defaultTreeWalk, type TreeWalk } from "../../src/verifier/trees/update/tree-walk.js";
import { walkOf } from "../helpers/compare-walks.js";
import { toHex64 } from "../../src/util/bytes.js";
import { prng } from "../../src/util/prng.js";

/**
 * The node cache counted from each tree's first branch, measured in records read from LevelDB: a
 * state of 60,000 vaults with ids given out in sequence against one with ids spread over the tree's
 * range, the same node budget for both (15 levels: 32,767 nodes).
 */
const engine = createEngine("auto");
/** Not a power of two: the next ids still fall under the tree's first branch. */
const LEAVES = 60_000;
/** About half as many nodes as leaves, as the plan gives a store (memory-plan.ts). */
const LEVELS = 15;
const BATCH = 2000;
const spec: TreeSpec = { name: "vault", kind: "merkle", height: 31, leaf: "order" };
const trees = [spec];

interface State {
  dir: string;
  store: LevelStore;
  prev: TreeState;
  ids: bigint[];
  sequential: boolean;
}

async function loadState(sequential: boolean, seed: number): Promise<State> {
  const dir = await mkdtemp(join(tmpdir(), "dacd-branch-top-"));
  const store = await LevelStore.open(dir);
  const rand = prng(seed);
  const picked = new Set<bigint>();
  if (sequential) for (let i = 0; i < LEAVES; i++) picked.add(BigInt(i));
  else while (picked.size < LEAVES) picked.add(BigInt(Math.floor(rand() * 2 ** 31)));
  const vault: LeafChanges = new Map([...picked].map((id) => [id, 1n + BigInt(Math.floor(rand() * 1e9))]));
  const first = await computeRoots(engine, store, trees, null, { vault }, 1);
  await store.commitBatch(
    {
      batch_id: 1,
      prev_batch_id: 0,
      sequence_number: 1,
      roots: { vault: toHex64(first.roots.vault!) },
      root_gens: { vault: first.rootGens.vault! },
      heights: { vault: 31 },
      claim_hash: "",
      signature: "",
      member_key: "",
      verified_at: "",
    },
    first.newNodes,
    first.newLeaves,
  );
  return { dir, store, prev: { roots: first.roots, gens: first.rootGens }, ids: [...picked], sequential };
}

/** A batch as an exchange makes one: half new leaves (the next ids, or random ones), half existing. */
function batchOf(state: State, seed: number): { vault: LeafChanges } {
  const rand = prng(seed);
  const vault: LeafChanges = new Map();
  while (vault.size < BATCH / 2)
    vault.set(
      state.sequential ? BigInt(LEAVES + Math.floor(rand() * BATCH)) : BigInt(Math.floor(rand() * 2 ** 31)),
      7n,
    );
  while (vault.size < BATCH) vault.set(state.ids[Math.floor(rand() * state.ids.length)]!, 9n);
  return { vault };
}

/** The cache as it was before: the top LEVELS levels below the root, filled by a walk from the root. */
async function warmFromRoot(cache: TopNodeCache, state: State): Promise<void> {
  const walk = walkLeaves(engine, spec, state.prev.roots.vault!, state.prev.gens.vault!, {
    getNodes: (hs, gens) => state.store.getNodes(hs, gens),
    enter: (t) => t.height > 0 && spec.height - t.height < cache.levels,
    onNodes: (nodes) => {
      for (const n of nodes)
        cache.remember(spec.name, spec.height - n.height, Number(n.index), n.hash, n.gen, n.record);
    },
  });
  for await (const _ of walk);
}

/** Records read from LevelDB by one batch through `cache`, its roots checked against the store's alone. */
async function readsOfBatch(
  state: State,
  cache: TopNodeCache,
  seed: number,
  walk: TreeWalk = defaultTreeWalk(),
): Promise<number> {
  let reads = 0;
  const counted: NodeSource = {
    getNodes: (hs, gens) => {
      reads += hs.length;
      return state.store.getNodes(hs, gens);
    },
  };
  const changes = batchOf(state, seed);
  const cached = await computeRoots(
    engine,
    cache.over(counted),
    trees,
    state.prev,
    changes,
    2,
    undefined,
    walk,
  );
  const plain = await computeRoots(engine, state.store, trees, state.prev, changes, 2);
  expect(toHex64(cached.roots.vault!)).toBe(toHex64(plain.roots.vault!));
  return reads;
}

/**
 * The nodes the cache keeps in the LEVELS levels below a subtree of `height` levels that holds
 * `ids`: binary nodes (subtrees of two leaves or more), and a single leaf's edge record where it is
 * short enough for a slot (up to height 8).
 */
function topKeptNodes(ids: Iterable<bigint>, height: number): number {
  const all = [...ids];
  const counts = (r: number): Map<bigint, number> => {
    const leaves = new Map<bigint, number>();
    for (const id of all)
      leaves.set(id >> BigInt(height - r), (leaves.get(id >> BigInt(height - r)) ?? 0) + 1);
    return leaves;
  };
  let nodes = 0;
  let above = new Map<bigint, number>();
  for (let r = 0; r < LEVELS; r++) {
    const here = counts(r);
    for (const [prefix, n] of here)
      // A single leaf's edge starts where its parent still holds two leaves.
      if (n >= 2 || (height - r <= 8 && (above.get(prefix >> 1n) ?? 0) >= 2)) nodes++;
    above = here;
  }
  return nodes;
}

describe("the node cache counted from each tree's first branch", () => {
  let seq: State;
  let spread: State;
  /** The spread state's non-empty subtrees in its top LEVELS levels. */
  let spreadTopNodes = 0;
  let sequentialTopNodes = 0;
  beforeAll(async () => {
    seq = await loadState(true, 1);
    spread = await loadState(false, 2);
    spreadTopNodes = topKeptNodes(spread.ids, 31);
    sequentialTopNodes = topKeptNodes(seq.ids, 16);
  }, 300_000);
  afterAll(async () => {
    for (const s of [seq, spread]) {
      await s?.store.close();
      if (s) await rm(s.dir, { recursive: true, force: true });
    }
  });

  it("finds where each state's tree branches: below the ids' shared prefix, or at the root", async () => {
    const empty = await emptyRoots(engine, spec.leaf, spec.height);
    const get = (s: State) => (hs: readonly Uint8Array[], gens: ArrayLike<number>) =>
      s.store.getNodes(hs, gens);
    const top = await findBranchTop(get(seq), empty, seq.prev.roots.vault!, seq.prev.gens.vault!);
    // Ids 0 … 59,999 lie in the leftmost subtree of height 16, and in both its halves.
    expect({ depth: top.depth, index: top.index }).toEqual({ depth: 31 - 16, index: 0n });
    const atRoot = await findBranchTop(get(spread), empty, spread.prev.roots.vault!, spread.prev.gens.vault!);
    expect({ depth: atRoot.depth, index: atRoot.index }).toEqual({ depth: 0, index: 0n });
    expect(toHex64(atRoot.hash)).toBe(toHex64(spread.prev.roots.vault!));
  });

  for (const [kind, addon] of [
    ["native", undefined],
    ["JavaScript", null],
  ] as const) {
    it(`reads fewer records for sequential ids than for spread ones, and far fewer than from the root (${kind} cache)`, async () => {
      const budget = 2 ** LEVELS - 1;
      const reads: Record<string, number> = {};
      for (const state of [seq, spread]) {
        const cache = createTopNodeCache(LEVELS, addon, budget);
        await warmTopNodes(cache, state.store, engine, trees);
        // The warm start holds its target: every node of the top levels below the branch.
        expect(cache.size).toBe(state.sequential ? sequentialTopNodes : spreadTopNodes);
        reads[state.sequential ? "seq" : "spread"] = await readsOfBatch(state, cache, 5);
        // The JavaScript walk reads the same nodes, from a cache warmed alike.
        if (walkOf("native") !== null) {
          const again = createTopNodeCache(LEVELS, addon, budget);
          await warmTopNodes(again, state.store, engine, trees);
          expect(await readsOfBatch(state, again, 5, walkOf("js"))).toBe(
            reads[state.sequential ? "seq" : "spread"],
          );
        }
      }
      const fromRoot = createTopNodeCache(LEVELS, addon, budget);
      await warmFromRoot(fromRoot, seq);
      // From the root, the sequential state's top levels are all on its single top path (15 long).
      expect(fromRoot.size).toBe(15);
      reads.seqFromRoot = await readsOfBatch(seq, fromRoot, 5);
      expect(reads.seq).toBeLessThanOrEqual(reads.spread!);
      expect(reads.seq).toBeLessThan(reads.seqFromRoot * 0.75);
      expect(reads).toMatchInlineSnapshot(`
        {
          "seq": 1006,
          "seqFromRoot": 6067,
          "spread": 4741,
        }
      `);
    }, 300_000);
  }

  it("a batch during the warm-up gives the same roots, and the cache ends with its target nodes", async () => {
    const cache = createTopNodeCache(LEVELS, undefined, 2 ** LEVELS - 1);
    await placeBranchTops(cache, seq.store, engine, trees);
    const warming = warmTopNodes(cache, seq.store, engine, trees);
    await readsOfBatch(seq, cache, 6); // its roots checked against the store's alone
    await warming;
    // The stored state's top nodes, and those the batch added beside them.
    expect(cache.size).toBe(topKeptNodes(new Set([...seq.ids, ...batchOf(seq, 6).vault.keys()]), 16));
  }, 300_000);

  for (const [kind, addon] of [
    ["native", undefined],
    ["JavaScript", null],
  ] as const)
    it(`keeps no more nodes than its bound, and forgets a tree's positions when its top moves (${kind} cache)`, () => {
      const h = (n: number): Uint8Array => new Uint8Array(32).fill(n);
      const cache = createTopNodeCache(4, addon, 3);
      for (let i = 0; i < 5; i++) cache.remember("vault", 2, i, h(i + 1), 1, h(50 + i));
      expect(cache.size).toBe(3);
      expect(cache.get(h(3), 1)).toEqual(h(52));
      expect(cache.get(h(4), 1)).toBeUndefined();
      // A position already held takes a newer node within the bound.
      cache.remember("vault", 2, 0, h(9), 2, h(59));
      expect(cache.get(h(9), 2)).toEqual(h(59));
      expect(cache.topOf("vault")).toEqual({ depth: 0, index: 0n });
      cache.setTop("vault", 3, 5n);
      expect(cache.topOf("vault")).toEqual({ depth: 3, index: 5n });
      // Its positions are gone: a node at an old position no longer replaces the one kept there.
      cache.remember("vault", 2, 0, h(10), 3, h(60));
      expect(cache.get(h(9), 2)).toEqual(h(59));
    });
});
