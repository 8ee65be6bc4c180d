import { describe, expect, it } from "vitest";
import { MemoryNodeStore } from "../../src/storage/memory-store.js";
import { computeRoots } from "../../src/verifier/trees/update/compute-roots.js";
import { WasmEngine } from "../../src/verifier/hash/wasm-engine.js";
import type { TreeName, TreeSpec } from "../../src/model/profile.js";
import type { LeafChanges } from "../../src/model/state-update.js";
import { prng } from "../../src/util/prng.js";

const engine = new WasmEngine();

function randomChanges(seed: number, n: number, idBits: number): LeafChanges {
  const rand = prng(seed);
  const changes: LeafChanges = new Map();
  while (changes.size < n)
    changes.set(BigInt(Math.floor(rand() * 2 ** idBits)), BigInt(1 + Math.floor(rand() * 1e9)));
  return changes;
}

describe("per-tree detail of a batch (dacd run --debug)", () => {
  for (const kind of ["merkle", "patricia"] as const) {
    it(`${kind}: leaves, nodes read and written per tree add up to the batch's`, async () => {
      // Two trees of order leaves updated together, as the trees of a batch are.
      const a: TreeSpec = { name: "order", kind, height: kind === "merkle" ? 16 : 251, leaf: "order" };
      const b: TreeSpec = { ...a, name: "rollup_vault" as TreeName };
      const store = new MemoryNodeStore();
      const first = await computeRoots(
        engine,
        store,
        [a, b],
        null,
        { order: randomChanges(1, 40, 16), rollup_vault: randomChanges(2, 7, 16) },
        1,
      );
      store.putNodes(first.newNodes);
      expect(first.trees.order).toMatchObject({ leaves: 40 });
      expect(first.trees.rollup_vault).toMatchObject({ leaves: 7 });
      expect(first.trees.order!.nodes_written + first.trees.rollup_vault!.nodes_written).toBe(
        first.newNodes.length,
      );
      expect(first.trees.order!.nodes_written).toBeGreaterThan(first.trees.rollup_vault!.nodes_written);

      // The next batch reads the paths of the first.
      const second = await computeRoots(
        engine,
        store,
        [a, b],
        { roots: first.roots, gens: first.rootGens },
        { order: randomChanges(3, 5, 16), rollup_vault: new Map() },
        2,
      );
      // The unchanged tree keeps its root, written by the first batch.
      expect(second.rootGens).toEqual({ order: 2, rollup_vault: 1 });
      expect(second.trees.order!.leaves).toBe(5);
      expect(second.trees.order!.nodes_read).toBeGreaterThan(0);
      expect(second.trees.order!.nodes_written).toBe(second.newNodes.length);
      expect(second.trees.rollup_vault).toEqual({
        leaves: 0,
        nodes_read: 0,
        nodes_written: 0,
        ms: expect.any(Number),
      });
      expect(second.trees.order!.ms).toBeGreaterThanOrEqual(0);
    });
  }
});
