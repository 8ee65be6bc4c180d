import { DacdError } from "../../errors.js";
import type { HashEngine } from "../../verifier/hash/engine.js";
import { storeProfile } from "../../inspect/inspect.js";
import type { TreeSpec } from "../../model/profile.js";
import type { LevelStore } from "../../storage/level-store.js";
import type { FrozenSharedState } from "../../storage/onchain-record.js";
import { toHex64 } from "../../util/bytes.js";
import { resolveBatch, rootOf } from "../common.js";
import { walkPaths, type LeafPath, type PathWalkOptions } from "./path-walk.js";

/**
 * What a kit is made from: the batch and its escape tree (the vault tree of a spot profile, the
 * position tree of the perpetual one; rollup vaults' data is on the chain already), then the
 * leaves with their paths. From the store, or from the daemon over its control socket.
 */

export interface KitHead {
  readonly profile: string;
  readonly tree: TreeSpec;
  readonly batch_id: number;
  readonly prev_batch_id: number;
  readonly sequence_number: number;
  readonly claim_hash: string;
  readonly roots: Record<string, string>;
  /** The height of every tree the store keeps. */
  readonly heights: Record<string, number>;
  /** The escape tree's root, 64 hex digits. */
  readonly root: string;
  /** Perpetual, at the frozen batch once its shared state is read from the base chain. */
  readonly shared_state?: FrozenSharedState;
  /** The batch the exchange froze at, once the base-chain watch saw the freeze. */
  readonly frozen_batch_id?: number;
}

export interface PathSource {
  readonly head: KitHead;
  readonly blocks: AsyncIterable<LeafPath[]>;
}

/** The kit's source in a store (a snapshot view, in the daemon). */
export async function storePaths(
  store: LevelStore,
  engine: HashEngine,
  batchId: number | undefined,
  opts: PathWalkOptions = {},
): Promise<PathSource> {
  const { profile, trees } = await storeProfile(store);
  const record = await resolveBatch(store, batchId);
  const tree = profile.main;
  const root = rootOf(record, tree);
  const rootGen = record.root_gens[tree.name];
  if (rootGen === undefined)
    throw new DacdError("STORE", `the ${tree.name} tree of batch ${record.batch_id} is not stored`);
  const frozen = (await store.onchain.cursor())?.frozen;
  const shared = frozen?.shared_state;
  return {
    head: {
      profile: profile.name,
      tree,
      batch_id: record.batch_id,
      prev_batch_id: record.prev_batch_id,
      sequence_number: record.sequence_number,
      claim_hash: record.claim_hash,
      roots: { ...record.roots },
      heights: Object.fromEntries(trees.map((t) => [t.name, t.height])),
      root: toHex64(root),
      ...(tree.leaf === "position" && shared?.batch_id === record.batch_id ? { shared_state: shared } : {}),
      ...(frozen ? { frozen_batch_id: frozen.batch_id } : {}),
    },
    blocks: walkPaths(store, engine, tree, root, rootGen, opts),
  };
}
