import { walkLeaves } from "../trees/walk-leaves.js";
import type { LevelStore } from "../storage/level-store.js";
import { hexToBytes32 } from "../util/bytes.js";
import type { HashEngine } from "../hash/engine.js";
import type { TopNodeCache } from "../trees/node-cache.js";
import type { TreeSpec } from "../model/profile.js";

/**
 * Fills the top-level cache from the trees of the newest stored batch (or of batch `batchId`), so
 * that the first batches after a start read as few nodes from LevelDB as later ones do. Reads only
 * (the walk stops at the cached depth); returns the number of nodes it added.
 */
export async function warmTopNodes(
  cache: TopNodeCache,
  store: LevelStore,
  engine: HashEngine,
  trees: readonly TreeSpec[],
  batchId?: number,
): Promise<number> {
  if (cache.levels === 0) return 0;
  const id = batchId ?? (await store.lastBatchId());
  const record = id === undefined ? undefined : await store.getBatch(id);
  if (!record) return 0;
  const before = cache.size;
  for (const spec of trees) {
    const root = hexToBytes32(record.roots[spec.name] ?? "");
    const rootGen = record.root_gens[spec.name];
    // No gen: the tree is empty, or its root was taken as stated and is not stored.
    if (!root || rootGen === undefined) continue;
    const depth = (height: number): number => spec.height - height;
    const walk = walkLeaves(engine, spec, root, rootGen, {
      getNodes: (hashes, gens) => store.getNodes(hashes, gens),
      enter: (t) => t.height > 0 && depth(t.height) < cache.levels,
      onNodes: (nodes) => {
        for (const n of nodes)
          cache.remember(spec.name, depth(n.height), Number(n.index), n.hash, n.gen, n.record);
      },
      // A node missing here (an unchecked order tree's stated root) is simply not cached.
      onProblem: () => undefined,
    });
    for await (const _leaves of walk);
  }
  return cache.size - before;
}
