/**
 * Profiles: which trees a member keeps for each kind of service (committee-algorithms §4).
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
}

export type Heights = Partial<Record<TreeName, number>>;
/** Each tree's root hash, by tree. */
export type Roots = Partial<Record<TreeName, Uint8Array>>;

/** Default heights of each profile; a configuration's `heights` may override the trees it has. */
export const DEFAULT_HEIGHTS: Readonly<Record<ProfileName, Readonly<Heights>>> = {
  perpetual: { position: 64, order: 64 },
  spot: { vault: 31, order: 251, rollup_vault: 31 },
  "spot-v4.0": { vault: 31, order: 63 },
};

export function isProfileName(s: unknown): s is ProfileName {
  return (PROFILE_NAMES as readonly unknown[]).includes(s);
}

/** Builds a profile; heights default from the preset and may be overridden by configuration. */
export function makeProfile(name: ProfileName, heights: Heights = {}): Profile {
  const h = { ...DEFAULT_HEIGHTS[name], ...heights };
  const height = (t: TreeName): number => {
    const v = h[t];
    if (v === undefined || !Number.isInteger(v) || v < 1 || v > 251) {
      throw new RangeError(`tree height for ${t} must be an integer in 1..251`);
    }
    return v;
  };
  switch (name) {
    case "perpetual":
      return {
        name,
        variant: "P",
        main: { name: "position", kind: "merkle", height: height("position"), leaf: "position" },
        order: { name: "order", kind: "merkle", height: height("order"), leaf: "order" },
      };
    case "spot":
      return {
        name,
        variant: "G",
        main: { name: "vault", kind: "merkle", height: height("vault"), leaf: "vault" },
        order: { name: "order", kind: "patricia", height: height("order"), leaf: "order" },
        rollup: { name: "rollup_vault", kind: "merkle", height: height("rollup_vault"), leaf: "vault" },
      };
    case "spot-v4.0":
      return {
        name,
        variant: "G",
        main: { name: "vault", kind: "merkle", height: height("vault"), leaf: "vault" },
        order: { name: "order", kind: "merkle", height: height("order"), leaf: "order" },
      };
  }
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
