import type { LevelStore, LevelTuning } from "../../storage/level-store.js";
import type { HashEngine } from "../../verifier/hash/engine.js";
import type { CreateEngineOptions } from "../../verifier/hash/select.js";
import { openStoreAt, storeDirOf, type StoreOptions } from "../store-options.js";

/**
 * How a command opens the store: LevelDB tuning, whether it only reads, and whether it walks whole
 * trees (dump, escape kit: LevelDB tuned for that, storage/walk-opening.ts).
 */
export type StoreOpening = LevelTuning & { readOnly?: boolean; wholeWalk?: boolean };

/**
 * Runs `fn` on the store of --db or --config and a hash engine, closing both afterwards (the
 * engine also when the store cannot be opened). `profile` is the configuration's, when it was read.
 */
export async function withStore<T>(
  opts: StoreOptions,
  engineOpts: CreateEngineOptions,
  fn: (store: LevelStore, engine: HashEngine, profile: string | undefined) => Promise<T>,
  opening: StoreOpening = {},
): Promise<T> {
  const { dir, profile } = storeDirOf(opts);
  // The hash engines are loaded by the commands that hash, not by every dacd command.
  const { commandEngine } = await import("../command-engine.js");
  const engine = commandEngine({ ...engineOpts });
  const { wholeWalk, ...tuning } = opening;
  let store: LevelStore;
  try {
    const walkTuning = wholeWalk
      ? await (await import("../../storage/walk-opening.js")).wholeWalkTuning(dir)
      : {};
    store = await openStoreAt(dir, { ...tuning, ...walkTuning });
  } catch (err) {
    await engine.close?.();
    throw err;
  }
  try {
    return await fn(store, engine, profile);
  } finally {
    await store.close();
    await engine.close?.();
  }
}
