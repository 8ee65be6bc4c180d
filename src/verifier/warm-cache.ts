import { levelsFor } from "../config/memory-plan.js";
import { walkLeaves } from "./trees/read/walk-leaves.js";
import type { LevelStore } from "../storage/level-store.js";
import { hexToBytes32 } from "../util/bytes.js";
import type { HashEngine } from "./hash/engine.js";
import type { TopNodeCache } from "./trees/cache/node-cache.js";
import type { TreeSpec } from "../model/profile.js";
import { emptyRoots } from "./trees/update/compute-roots.js";
import { findBranchTop, type FoundTop } from "./trees/cache/branch-top.js";
import { openCacheSnapshot, SnapshotRefused } from "./trees/cache/cache-snapshot.js";

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

/**
 * Fills the node cache from the trees of the newest stored batch (or of batch `batchId`), so that
 * the first batches after a start read as few nodes from LevelDB as later ones do. Each Merkle
 * tree's cached levels start where it first branches (branch-top.ts), found first; the walk then
 * reads the levels below it that the cache keeps, a chunk of nodes per read. Reads only; returns
 * the number of nodes it added. Batches may run meanwhile: a node is cached under its hash and gen,
 * so whatever the warm-up adds is a stored record, and a batch finds it or reads it itself.
 *
 * The levels every tree holds in full under the node bound are walked first. The deeper ones, which
 * the trees share, follow one level at a time across all trees (the levels above answered by the
 * cache), each until the bound is reached: a tree walked to the cache's last level before the next
 * would read nodes that the next tree's upper levels then take the slots of.
 */
export async function warmTopNodes(
  cache: TopNodeCache,
  store: LevelStore,
  engine: HashEngine,
  trees: readonly TreeSpec[],
  batchId?: number,
): Promise<number> {
  const tops = await placeBranchTops(cache, store, engine, trees, batchId);
  const before = cache.size;
  const walked = trees.filter((spec) => tops.has(spec.name));
  // The levels every tree, were it full, keeps under the node bound.
  const shared = Math.min(cache.levels, levelsFor(cache.maxNodes, walked.length));
  const fromStore = (hashes: readonly Uint8Array[], gens: ArrayLike<number>) => store.getNodes(hashes, gens);
  await walkLevels(cache, engine, walked, tops, fromStore, shared, false);
  const throughCache = cache.over(store);
  for (let depth = shared; depth < cache.levels && !cache.full; depth++)
    await walkLevels(cache, engine, walked, tops, (h, g) => throughCache.getNodes(h, g), depth + 1, true);
  return cache.size - before;
}

/**
 * Walks the first `levels` levels below each tree's top, keeping the nodes read; with `untilFull`,
 * the nodes of the last of those levels are no longer read once the cache is at its bound.
 */
async function walkLevels(
  cache: TopNodeCache,
  engine: HashEngine,
  trees: readonly TreeSpec[],
  tops: ReadonlyMap<string, FoundTop>,
  getNodes: (hashes: readonly Uint8Array[], gens: ArrayLike<number>) => Promise<(Uint8Array | undefined)[]>,
  levels: number,
  untilFull: boolean,
): Promise<void> {
  for (const spec of trees) {
    const top = tops.get(spec.name)!;
    // The subtree under the top, walked as a tree of its own: its depths and indices are the cache's.
    const below: TreeSpec = { ...spec, height: spec.height - top.depth };
    const walk = walkLeaves(engine, below, top.hash, top.gen, {
      getNodes,
      enter: (t) => {
        const depth = below.height - t.height;
        return t.height > 0 && depth < levels && !(untilFull && depth === levels - 1 && cache.full);
      },
      onNodes: (nodes) => {
        for (const n of nodes)
          cache.remember(spec.name, below.height - n.height, Number(n.index), n.hash, n.gen, n.record);
      },
      // A node missing here (an unchecked order tree's stated root) is simply not cached.
      onProblem: () => undefined,
    });
    for await (const _leaves of walk);
  }
}

/** How a warm-up went: the nodes it added, its time and where they came from. */
export interface Warmed {
  readonly nodes: number;
  readonly ms: number;
  readonly source: "snapshot" | "walk";
  /** Why the snapshot was not used (source "walk"). */
  readonly refused?: string;
  /** How many batches the store is past the snapshot's (source "snapshot"). */
  readonly batchesBehind?: number;
  /** The trees walked after all, their top having moved since the snapshot (source "snapshot"). */
  readonly walked?: readonly string[];
}

/**
 * Warms the cache from the snapshot in `snapshotFile` when it fits this store and configuration
 * (loadCacheSnapshot), else by walking the trees (warmTopNodes). The branch tops are placed first
 * (placeBranchTops, as at every start); a tree whose top has moved since the snapshot is walked.
 */
export async function warmNodeCache(
  cache: TopNodeCache,
  store: LevelStore,
  engine: HashEngine,
  trees: readonly TreeSpec[],
  snapshotFile: string | undefined,
): Promise<Warmed> {
  const started = performance.now();
  const ms = (): number => Math.round(performance.now() - started);
  let refused = cache.levels === 0 ? "the node cache is off" : "no snapshot file";
  if (snapshotFile !== undefined && cache.levels > 0) {
    try {
      await placeBranchTops(cache, store, engine, trees);
      const loaded = await loadCacheSnapshot(cache, store, trees, snapshotFile);
      const moved = trees.filter((t) => loaded.moved.includes(t.name));
      const walkedNodes = moved.length > 0 ? await warmTopNodes(cache, store, engine, moved) : 0;
      return {
        nodes: loaded.nodes + walkedNodes,
        batchesBehind: loaded.batchesBehind,
        ...(moved.length > 0 ? { walked: loaded.moved } : {}),
        ms: ms(),
        source: "snapshot",
      };
    } catch (err) {
      refused = err instanceof SnapshotRefused ? err.message : `cannot read the snapshot: ${String(err)}`;
    }
  }
  const nodes = await warmTopNodes(cache, store, engine, trees);
  return { nodes, ms: ms(), source: "walk", refused };
}

/**
 * Loads the snapshot in `file` into `cache` when its checksum, format, node format and trees are
 * this dacd's and the store holds its batch with the same roots; the branch tops must be placed
 * already. The trees whose top has moved since are not loaded (`moved`). Throws SnapshotRefused
 * saying why not.
 */
export async function loadCacheSnapshot(
  cache: TopNodeCache,
  store: Pick<LevelStore, "getBatch" | "lastBatchId">,
  trees: readonly TreeSpec[],
  file: string,
): Promise<{ nodes: number; batchesBehind: number; moved: string[] }> {
  if (!cache.canSnapshot)
    throw new SnapshotRefused("this node cache cannot load a snapshot (an older native addon)");
  const snapshot = await openCacheSnapshot(file);
  try {
    const { header } = snapshot;
    const names = trees.map((t) => t.name).join(", ");
    const theirs = header.trees.map((t) => t.name).join(", ");
    if (names !== theirs)
      throw new SnapshotRefused(`the snapshot holds the trees ${theirs}, this member keeps ${names}`);
    const record = await store.getBatch(header.batch_id);
    if (!record) throw new SnapshotRefused(`the snapshot's batch ${header.batch_id} is not in the store`);
    for (const spec of trees)
      if (record.roots[spec.name] !== header.roots[spec.name])
        throw new SnapshotRefused(
          `the snapshot's ${spec.name} root of batch ${header.batch_id} is not the store's (a snapshot of another store)`,
        );
    const newest = (await store.lastBatchId()) ?? header.batch_id;
    const moved = header.trees
      .filter((t) => {
        const top = cache.topOf(t.name);
        return top.depth !== t.top_depth || top.index.toString() !== t.top_index;
      })
      .map((t) => t.name);
    const before = cache.size;
    await snapshot.load(cache, (tree) => !moved.includes(tree));
    return { nodes: cache.size - before, batchesBehind: Math.max(0, newest - header.batch_id), moved };
  } finally {
    await snapshot.close();
  }
}
