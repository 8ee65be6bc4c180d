import type { Leaf, LeafChanges } from "../../../model/state-update.js";
import type { HashEngine } from "../../hash/engine.js";
import { emptyLeaf, hashAndEncodeLeaves, hashLeaves, hashPairs } from "../format/leaves.js";
import type { NodeSource } from "../../../storage/records/node-source.js";
import { NodeWrites } from "../../../storage/records/node-writes.js";
import { updateMerkleWhileHashing, updatePatricia } from "./update-tree.js";
import { defaultTreeWalk, type TreeWalk } from "./tree-walk.js";
import type { LeafKind, TreeName, TreeSpec } from "../../../model/profile.js";
import { countingSource, countingWrites, type TreeStats } from "./tree-stats.js";

export type { Roots } from "../../../model/profile.js";
import type { Roots } from "../../../model/profile.js";
/** Per tree, the gen of its root's record (node-record.ts); 0 for an empty tree (no record). */
export type RootGens = Partial<Record<TreeName, number>>;

/** The state a batch starts from: its trees' roots and their records' gens. */
export interface TreeState {
  readonly roots: Roots;
  readonly gens: RootGens;
}

export interface ComputedRoots {
  readonly roots: Roots;
  readonly rootGens: RootGens;
  /** Inner nodes created by this update, to be stored under their hashes. */
  readonly newNodes: NodeWrites;
  /** Leaf records (vaults, positions) to be stored under their leaf hashes. */
  readonly newLeaves: NodeWrites;
  /** What each tree's update did (leaves, nodes read and written, time). */
  readonly trees: Partial<Record<TreeName, TreeStats>>;
}

/** E[k]: the root of an untouched subtree of height k, from the empty leaf's hash upward. */
export async function emptySubtreeRoots(
  engine: HashEngine,
  emptyLeafHash: Uint8Array,
  height: number,
): Promise<Uint8Array[]> {
  const out = [emptyLeafHash];
  for (let k = 0; k < height; k++) {
    const [h] = await hashPairs(engine, [out[k]!], [out[k]!]);
    out.push(h!);
  }
  return out;
}

// E[k] depends only on the engine's arithmetic, the leaf kind and the height; compute it once.
const emptyCache = new Map<string, Promise<Uint8Array[]>>();

/** E[0..height] of a Merkle tree of this leaf kind. */
export function emptyRoots(engine: HashEngine, leaf: LeafKind, height: number): Promise<Uint8Array[]> {
  const key = `${leaf}/${height}`;
  let hit = emptyCache.get(key);
  if (!hit) {
    hit = hashLeaves(engine, leaf, [emptyLeaf(leaf)]).then(([e0]) => emptySubtreeRoots(engine, e0!, height));
    hit.catch(() => emptyCache.delete(key));
    emptyCache.set(key, hit);
  }
  return hit;
}

/** The root of the empty tree of this spec (0 for a Patricia tree). */
export async function emptyRoot(engine: HashEngine, spec: TreeSpec): Promise<Uint8Array> {
  if (spec.kind === "patricia") return new Uint8Array(32);
  return (await emptyRoots(engine, spec.leaf, spec.height))[spec.height]!;
}

/**
 * Applies changed leaves to each tree, starting from `prev` (null: the empty state), and returns
 * the new roots with everything that must be stored to reach them again, the records to be written
 * under `batchGen` (the batch's id). All trees proceed concurrently, so their store reads and
 * engine calls interleave.
 */
export async function computeRoots(
  engine: HashEngine,
  nodes: NodeSource,
  trees: readonly TreeSpec[],
  prev: TreeState | null,
  changes: Partial<Record<TreeName, LeafChanges>>,
  batchGen: number,
  /** Called as each tree is done, with the lists so far (the commit puts their records early). */
  onTreeDone?: (written: Written) => void,
  walk: TreeWalk = defaultTreeWalk(),
): Promise<ComputedRoots> {
  // Every tree adds its records to the same two lists, in whatever order they interleave: the
  // commit puts them in key order anyway, a run at each `onTreeDone` and the rest at the end.
  const out: Written = {
    newNodes: new NodeWrites(...lastSizes.newNodes),
    newLeaves: new NodeWrites(...lastSizes.newLeaves),
  };
  const stats: Partial<Record<TreeName, TreeStats>> = {};
  const results = await Promise.all(
    trees.map(async (spec) => {
      const began = performance.now();
      const start = prev?.roots[spec.name] ?? (await emptyRoot(engine, spec));
      const startGen = prev?.gens[spec.name] ?? 0;
      const leaves = changes[spec.name] ?? new Map<bigint, Leaf>();
      const s: TreeStats = (stats[spec.name] = {
        leaves: leaves.size,
        nodes_read: 0,
        nodes_written: 0,
        ms: 0,
      });
      const mine = { newNodes: countingWrites(out.newNodes, s), newLeaves: out.newLeaves };
      const { root, rootGen } = await updateTree(
        engine,
        countingSource(nodes, s),
        spec,
        { root: start, gen: startGen },
        batchGen,
        leaves,
        mine,
        walk,
      );
      s.ms = Math.round((performance.now() - began) * 10) / 10;
      onTreeDone?.(out);
      return { spec, root, rootGen };
    }),
  );
  const roots: Roots = {};
  const rootGens: RootGens = {};
  for (const r of results) {
    roots[r.spec.name] = r.root;
    rootGens[r.spec.name] = r.rootGen;
  }
  lastSizes.newNodes = withMargin(out.newNodes);
  lastSizes.newLeaves = withMargin(out.newLeaves);
  return { roots, rootGens, ...out, trees: stats };
}

/** The last batch's list sizes (records, bytes), for the next batch's first allocation. */
const lastSizes: Record<keyof Written, [number, number]> = { newNodes: [16, 1024], newLeaves: [16, 1024] };

/**
 * A list's size and 1/8 more (batches in a row are alike, and a slightly larger one then grows
 * once), capped so that one huge batch does not make every later one start with its allocation.
 */
function withMargin(list: NodeWrites): [number, number] {
  return [
    Math.min(Math.ceil(list.length * 1.125), 1 << 20) + 16,
    Math.min(Math.ceil(list.recordBytes * 1.125), 64 << 20) + 1024,
  ];
}

type Written = Pick<ComputedRoots, "newNodes" | "newLeaves">;

async function updateTree(
  engine: HashEngine,
  nodes: NodeSource,
  spec: TreeSpec,
  old: { root: Uint8Array; gen: number },
  batchGen: number,
  changes: LeafChanges,
  out: Written,
  walk: TreeWalk,
): Promise<{ root: Uint8Array; rootGen: number }> {
  const ids = [...changes.keys()];
  const values = ids.map((id) => changes.get(id)!);
  // The leaves' hashes, their records added to the batch's list as soon as they are known.
  const hashAndRecord = () =>
    hashAndEncodeLeaves(engine, spec.leaf, values).then(({ hashes, records }) => {
      for (let i = 0; i < values.length; i++) {
        const record = records[i];
        if (record) out.newLeaves.add(hashes[i]!, 0, record, 0, record.length);
      }
      return hashes;
    });
  if (spec.kind === "merkle") {
    // The leaves are hashed while the tree reads its old paths, so hashing does not hold back
    // the first read. The update takes the promise at once, so a failed hashing is never left
    // unhandled.
    const empty = await emptyRoots(engine, spec.leaf, spec.height);
    const hashing = hashAndRecord();
    return updateMerkleWhileHashing(
      engine,
      nodes,
      empty,
      old.root,
      old.gen,
      batchGen,
      ids,
      hashing,
      spec.name,
      out.newNodes,
      walk,
    );
  }
  const hashes = await hashAndRecord();
  const leafHashes = new Map(ids.map((id, i) => [id, hashes[i]!]));
  return updatePatricia(
    engine,
    nodes,
    spec.height,
    old.root,
    old.gen,
    batchGen,
    leafHashes,
    spec.name,
    out.newNodes,
    walk,
  );
}
