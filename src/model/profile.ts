import { B63, B64 } from "./leaf-rules.js";

/**
 * Profiles: which trees a member keeps for each kind of service (docs/algorithms.md, Profiles).
 * Tree names double as the keys of `roots` in replay output, batch records and dumps.
 */
export const PROFILE_NAMES = ["perpetual", "spot", "spot-v4.0"] as const;
export type ProfileName = (typeof PROFILE_NAMES)[number];
export const TREE_NAMES = ["position", "vault", "order", "rollup_vault"] as const;
export type TreeName = (typeof TREE_NAMES)[number];
export type TreeKind = "merkle" | "patricia";
/** What a leaf holds, and so how it is encoded and hashed. */
export type LeafKind = "vault" | "position" | "order";

export interface TreeSpec {
  readonly name: TreeName;
  readonly kind: TreeKind;
  readonly height: number;
  readonly leaf: LeafKind;
}

export interface Profile {
  readonly name: ProfileName;
  /** Service variant: P (perpetual) or G (spot). */
  readonly variant: "P" | "G";
  /** The main tree (always checked) and the order tree; both enter the claim. */
  readonly main: TreeSpec;
  readonly order: TreeSpec;
  /** The rollup vault tree (spot only); kept only when validate_rollup is true. */
  readonly rollup?: TreeSpec;
  /** The bound (exclusive) of an order's fulfilled amount (ProfileData). */
  readonly orderAmountLimit: bigint;
}

export type Heights = Partial<Record<TreeName, number>>;
/** Each tree's root hash, by tree. */
export type Roots = Partial<Record<TreeName, Uint8Array>>;

/**
 * What a tree is whatever the profile: the leaves it holds, and the keys under which the feeder
 * gateway's `update` carries its changed leaves and states its root (the verifier names the root
 * key in a mismatch).
 */
export interface TreeData {
  readonly leaf: LeafKind;
  readonly gatewayLeaves: string;
  readonly gatewayRoot: string;
}

export const TREES: Readonly<Record<TreeName, TreeData>> = {
  position: { leaf: "position", gatewayLeaves: "positions", gatewayRoot: "position_root" },
  vault: { leaf: "vault", gatewayLeaves: "vaults", gatewayRoot: "vault_root" },
  order: { leaf: "order", gatewayLeaves: "orders", gatewayRoot: "order_root" },
  rollup_vault: { leaf: "vault", gatewayLeaves: "rollup_vaults", gatewayRoot: "rollup_vault_root" },
};

/** A tree of a profile as data: which tree, how it is built, its default height. */
interface ProfileTree {
  readonly name: TreeName;
  readonly kind: TreeKind;
  readonly height: number;
}

/** A profile as data: what makeProfile builds from (heights default from here). */
export interface ProfileData {
  readonly variant: Profile["variant"];
  readonly main: ProfileTree;
  readonly order: ProfileTree;
  readonly rollup?: ProfileTree;
  /** The bound (exclusive) of an order's fulfilled amount: unsigned 64-bit in perpetual, below 2^63 in spot. */
  readonly orderAmountLimit: bigint;
}

export const PROFILES: Readonly<Record<ProfileName, ProfileData>> = {
  perpetual: {
    variant: "P",
    main: { name: "position", kind: "merkle", height: 64 },
    order: { name: "order", kind: "merkle", height: 64 },
    orderAmountLimit: B64,
  },
  spot: {
    variant: "G",
    main: { name: "vault", kind: "merkle", height: 31 },
    order: { name: "order", kind: "patricia", height: 251 },
    rollup: { name: "rollup_vault", kind: "merkle", height: 31 },
    orderAmountLimit: B63,
  },
  "spot-v4.0": {
    variant: "G",
    main: { name: "vault", kind: "merkle", height: 31 },
    order: { name: "order", kind: "merkle", height: 63 },
    orderAmountLimit: B63,
  },
};

const treesOf = (d: ProfileData): ProfileTree[] => [d.main, d.order, ...(d.rollup ? [d.rollup] : [])];

/** Default heights of each profile; a configuration's `heights` may override the trees it has. */
export const DEFAULT_HEIGHTS: Readonly<Record<ProfileName, Readonly<Heights>>> = Object.fromEntries(
  PROFILE_NAMES.map((n) => [n, Object.fromEntries(treesOf(PROFILES[n]).map((t) => [t.name, t.height]))]),
) as Record<ProfileName, Heights>;

export function isProfileName(s: unknown): s is ProfileName {
  return (PROFILE_NAMES as readonly unknown[]).includes(s);
}

/** Builds a profile; heights default from the preset and may be overridden by configuration. */
export function makeProfile(name: ProfileName, heights: Heights = {}): Profile {
  const data = PROFILES[name];
  const h = { ...DEFAULT_HEIGHTS[name], ...heights };
  const spec = (t: ProfileTree): TreeSpec => {
    const v = h[t.name];
    if (v === undefined || !Number.isInteger(v) || v < 1 || v > 251) {
      throw new RangeError(`tree height for ${t.name} must be an integer in 1..251`);
    }
    return { name: t.name, kind: t.kind, height: v, leaf: TREES[t.name].leaf };
  };
  return {
    name,
    variant: data.variant,
    main: spec(data.main),
    order: spec(data.order),
    ...(data.rollup ? { rollup: spec(data.rollup) } : {}),
    orderAmountLimit: data.orderAmountLimit,
  };
}

/** Every tree of the profile, main first, whether kept or not. */
export function profileTrees(profile: Profile): TreeSpec[] {
  return [profile.main, profile.order, ...(profile.rollup ? [profile.rollup] : [])];
}

/** The other profiles of the same variant (another StarkEx version of the same service). */
export function siblingProfiles(name: ProfileName): ProfileName[] {
  return PROFILE_NAMES.filter((n) => n !== name && PROFILES[n].variant === PROFILES[name].variant);
}

/** The trees a member keeps under this profile and setting, main first. */
export function keptTrees(profile: Profile, validateRollup: boolean | undefined): TreeSpec[] {
  const trees = [profile.main, profile.order];
  if (profile.rollup && validateRollup === true) trees.push(profile.rollup);
  return trees;
}

/** Tree name → height of the kept trees: what a store and a batch record say they hold. */
export function keptHeights(profile: Profile, validateRollup: boolean | undefined): Record<string, number> {
  return Object.fromEntries(keptTrees(profile, validateRollup).map((t) => [t.name, t.height]));
}
