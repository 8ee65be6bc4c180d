/** The Pedersen engines a configuration may name; `auto` takes the native addon where it loads. */
export const HASH_ENGINES = ["auto", "native", "wasm", "js"] as const;
export type EngineName = (typeof HASH_ENGINES)[number];
