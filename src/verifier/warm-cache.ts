import { walkLeaves } from "./trees/read/walk-leaves.js";
import type { LevelStore } from "../storage/level-store.js";
import { hexToBytes32 } from "../util/bytes.js";
import type { HashEngine } from "./hash/engine.js";
import type { TopNodeCache } from "./trees/cache/node-cache.js";
import type { TreeSpec } from "../model/profile.js";
import { emptyRoots } from "./trees/update/compute-roots.js";
import { findBranchTop, type FoundTop } from "./trees/cache/branch-top.js";

/**
 * Fills the node cache from the trees of the newest stored batch (or of batch `batchId`), so that
 * the first batches after a start read as few nodes from LevelDB as later ones do. Each Merkle
 * tree's cached levels start where it first branches (branch-top.ts), found first; the walk then
 * reads the levels below it that the cache keeps, a chunk of nodes per read. Reads only; returns
 * the number of nodes it added. Batches may run meanwhile: a node is cached under its hash and gen,
 * so whatever the warm-up adds is a stored record, and a batch finds it or reads it itself.
 */
/**
 * Sets where each Merkle tree's cached levels start (TopNodeCache.setTop) from the trees of the
 * newest stored batch (or of `batchId`): one read per level of each tree's single top path, so it
 * is awaited before the first batch, which then remembers its nodes where the warm-up puts them.
 */
export async function placeBranchTops(
  cache: TopNodeCache,
  store: LevelStore,
  engine: HashEngine,
  trees: readonly TreeSpec[],
  batchId?: number,
): Promise<Map<string, FoundTop>> {
  const tops = new Map<string, FoundTop>();
  if (cache.levels === 0) return tops;
  const id = batchId ?? (await store.lastBatchId());
  const record = id === undefined ? undefined : await store.getBatch(id);
  if (!record) return tops;
  const getNodes = (hashes: readonly Uint8Array[], gens: ArrayLike<number>) => store.getNodes(hashes, gens);
  for (const spec of trees) {
    const root = hexToBytes32(record.roots[spec.name] ?? "");
    const rootGen = record.root_gens[spec.name];
    // No gen: the tree is empty, or its root was taken as stated and is not stored.
    if (!root || rootGen === undefined) continue;
    let top: FoundTop = { depth: 0, index: 0n, hash: root, gen: rootGen };
    if (spec.kind === "merkle") {
      top = await findBranchTop(getNodes, await emptyRoots(engine, spec.leaf, spec.height), root, rootGen);
      cache.setTop(spec.name, top.depth, top.index);
    }
    tops.set(spec.name, top);
  }
  return tops;
}

export async function warmTopNodes(
  cache: TopNodeCache,
  store: LevelStore,
  engine: HashEngine,
  trees: readonly TreeSpec[],
  batchId?: number,
): Promise<number> {
  const tops = await placeBranchTops(cache, store, engine, trees, batchId);
  const before = cache.size;
  const getNodes = (hashes: readonly Uint8Array[], gens: ArrayLike<number>) => store.getNodes(hashes, gens);
  for (const spec of trees) {
    const top = tops.get(spec.name);
    if (!top) continue;
    // The subtree under the top, walked as a tree of its own: its depths and indices are the cache's.
    const below: TreeSpec = { ...spec, height: spec.height - top.depth };
    const walk = walkLeaves(engine, below, top.hash, top.gen, {
      getNodes,
      enter: (t) => t.height > 0 && below.height - t.height < cache.levels,
      onNodes: (nodes) => {
        for (const n of nodes)
          cache.remember(spec.name, below.height - n.height, Number(n.index), n.hash, n.gen, n.record);
      },
      // A node missing here (an unchecked order tree's stated root) is simply not cached.
      onProblem: () => undefined,
    });
    for await (const _leaves of walk);
  }
  return cache.size - before;
}
