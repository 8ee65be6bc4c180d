import type { TreeName } from "./profile.js";

/** A vault leaf (variant G). Balance 0 means empty, whatever key and token say. */
export interface VaultLeaf {
  readonly key: bigint;
  readonly token: bigint;
  readonly balance: bigint;
}

export interface PositionAsset {
  readonly assetId: bigint;
  readonly balance: bigint;
  readonly fundingIndex: bigint;
}

/** A position leaf (variant P). */
export interface PositionLeaf {
  readonly publicKey: bigint;
  readonly collateral: bigint;
  /** Sorted by asset id, ascending. */
  readonly assets: readonly PositionAsset[];
}

/** An order leaf is its fulfilled amount. */
export type OrderLeaf = bigint;

export type Leaf = VaultLeaf | PositionLeaf | OrderLeaf;

/** Changed leaves of one tree: leaf index → new leaf. */
export type LeafChanges<L extends Leaf = Leaf> = Map<bigint, L>;

/** A parsed, range-checked `get_batch_data` update. */
export interface StateUpdate {
  readonly prevBatchId: number;
  /** Changed leaves per tree present in the update. */
  readonly changes: Partial<Record<TreeName, LeafChanges>>;
  /** Roots the update states, 32 bytes each, per tree present in the update. */
  readonly statedRoots: Partial<Record<TreeName, Uint8Array>>;
}
