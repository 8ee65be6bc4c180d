import type { TreeName } from "./profile.js";

/** The leaf kinds a command names a tree by, singular or plural. */
export const TREE_ALIASES: Readonly<Record<string, TreeName>> = {
  vault: "vault",
  vaults: "vault",
  order: "order",
  orders: "order",
  position: "position",
  positions: "position",
  rollup_vault: "rollup_vault",
  rollup_vaults: "rollup_vault",
  "rollup-vault": "rollup_vault",
};
