import type { ClassicLevel } from "classic-level";

/** The LevelDB handle behind a LevelStore: keys and values are bytes (the `view` encodings). */
export type Db = ClassicLevel<Uint8Array, Uint8Array>;

/**
 * The storage folder's own door to a LevelStore's LevelDB handle. Only modules of src/storage
 * import this file (scripts/check-imports.mjs refuses it elsewhere); everything outside reads and
 * writes through LevelStore and its repositories, which know the key layout (keys.ts). Tests that damage a
 * store on purpose use it too.
 */
export const LEVEL_DB: unique symbol = Symbol("dacd.storage.levelDb");

export interface HasLevelDb {
  [LEVEL_DB](): Db;
}

/** The store's LevelDB handle; refused on a snapshot view, whose reads must carry its snapshot. */
export function levelDb(store: HasLevelDb): Db {
  return store[LEVEL_DB]();
}
