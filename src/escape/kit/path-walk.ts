import { DacdError } from "../../errors.js";
import type { HashEngine } from "../../verifier/hash/engine.js";
import type { TreeSpec } from "../../model/profile.js";
import type { LevelStore } from "../../storage/level-store.js";
import { isMerkleEdge } from "../../verifier/trees/format/merkle-edge.js";
import { firstHash, isBinaryRecord, secondHash } from "../../storage/records/node-record.js";
import { walkLeaves } from "../../verifier/trees/read/walk-leaves.js";
import { bitLength, toHex64 } from "../../util/bytes.js";

/**
 * One walk of a Merkle tree in leaf-id order that also hands out each leaf's authentication path,
 * without a path lookup per leaf: consecutive leaves share every ancestor above the highest bit in
 * which their ids differ, so each leaf carries only the levels below it that changed. The inner
 * nodes the walk reads wait in a map by height and index until the path leaves them, so memory is
 * bounded by the walk's frontier, as for a dump.
 *
 * What a leaf's path needs and the walk cannot read: the nodes inside an edge record (a subtree
 * holding one leaf, stored as one record). Those levels have the empty subtree as sibling and are
 * climbed from the leaf hash by whoever builds the proofs (path-stack.ts), not here: the walk runs
 * in the daemon beside the signing, and does no hashing.
 */

export interface LeafPath {
  readonly index: bigint;
  readonly leafHash: Uint8Array;
  /** The leaf's record (vault or position), as stored. */
  readonly record: Uint8Array;
  /** Levels 0 … changed − 1 differ from the previous leaf's path (all levels for the first). */
  readonly changed: number;
  /**
   * The height of the edge record above the leaf: the levels below it have empty siblings and
   * nodes to be climbed; 0 when the leaf hangs from a binary node.
   */
  readonly edge: number;
  /** For each level k from `edge` to `changed − 1`: the path's node then its sibling, 64 bytes. */
  readonly pairs: Uint8Array;
}

export interface PathWalkOptions {
  readonly chunk?: number;
  /** Awaited before each read of the walk (the daemon: yield to a batch being verified). */
  readonly pace?: () => Promise<void>;
}

/** Yields the non-empty leaves of a Merkle tree with their paths, in id order, in blocks. */
export async function* walkPaths(
  store: LevelStore,
  engine: HashEngine,
  spec: TreeSpec,
  root: Uint8Array,
  rootGen: number,
  opts: PathWalkOptions = {},
): AsyncGenerator<LeafPath[]> {
  if (spec.kind !== "merkle") throw new DacdError("BAD_INPUT", `the ${spec.name} tree is not a Merkle tree`);
  const h = spec.height;
  // Inner nodes read and not yet left behind by the path: by height, then index.
  const pending = Array.from({ length: h + 1 }, () => new Map<bigint, Uint8Array>());
  // The current path's binary ancestors, by height.
  const ancestors: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(h + 1);
  let previous: bigint | undefined;
  // Shifts by each height, made once: a BigInt(height) per level and leaf was a measurable part.
  const shift = Array.from({ length: h + 1 }, (_, k) => BigInt(k));
  // The current leaf's new levels, top-down, before they are copied out bottom-up.
  const scratch = new Uint8Array(h * 64);

  const take = (height: number, index: bigint): Uint8Array => {
    const rec = pending[height]!.get(index);
    if (!rec)
      throw new DacdError(
        "STORE",
        `${spec.name} tree: the walk reached height ${height}, index ${index} unread`,
      );
    pending[height]!.delete(index);
    return rec;
  };

  const pathOf = (index: bigint): { changed: number; edge: number; pairs: Uint8Array } => {
    const first = previous === undefined;
    if (previous !== undefined && index <= previous)
      throw new DacdError("STORE", `${spec.name} tree: leaf ${index} after leaf ${previous}`);
    const changed = previous === undefined ? h : bitLength(previous ^ index);
    previous = index;
    let levels = 0;
    let height = changed;
    // Below `changed` the path is new; at `changed` it meets the previous leaf's path (a binary node).
    let rec = first ? take(h, 0n) : ancestors[height]!;
    for (;;) {
      if (!isBinaryRecord(rec)) {
        if (!isMerkleEdge(rec, height))
          throw new DacdError(
            "STORE",
            `${spec.name} tree: a node at height ${height} above leaf ${index} is malformed`,
          );
        break;
      }
      ancestors[height] = rec;
      const right = ((index >> shift[height - 1]!) & 1n) === 1n;
      scratch.set(right ? secondHash(rec) : firstHash(rec), levels * 64);
      scratch.set(right ? firstHash(rec) : secondHash(rec), levels * 64 + 32);
      levels++;
      height -= 1;
      if (height === 0) break;
      rec = take(height, index >> shift[height]!);
    }
    // Levels were found top-down; the pairs go bottom-up.
    const pairs = new Uint8Array(levels * 64);
    for (let i = 0; i < levels; i++)
      pairs.set(scratch.subarray((levels - 1 - i) * 64, (levels - i) * 64), i * 64);
    return { changed, edge: height, pairs };
  };

  for await (const block of walkLeaves(engine, spec, root, rootGen, {
    chunk: opts.chunk,
    getNodes: async (hashes, gens) => {
      await opts.pace?.();
      return store.getNodes(hashes, gens);
    },
    onNodes: (nodes) => {
      for (const n of nodes) pending[n.height]!.set(n.index, n.record);
    },
  })) {
    const records = await store.getLeafRecords(
      block.map((t) => t.hash),
      block.map((t) => t.gen),
    );
    yield block.map((t, i) => {
      const record = records[i];
      if (!record)
        throw new DacdError(
          "STORE",
          `${spec.name} leaf ${t.index}: no record for leaf hash ${toHex64(t.hash)}`,
        );
      return { index: t.index, leafHash: t.hash, record, ...pathOf(t.index) };
    });
  }
}
