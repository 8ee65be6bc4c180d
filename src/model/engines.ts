/** The Pedersen engines a configuration may name; `auto` takes the native addon where it loads. */
export const HASH_ENGINES = ["auto", "native", "wasm", "js"] as const;
export type EngineName = (typeof HASH_ENGINES)[number];

/** The tree walks DACD_TREE_WALK may name; `auto` takes the native walks where the addon has them. */
export const TREE_WALKS = ["auto", "native", "js"] as const;
