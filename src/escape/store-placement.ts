import { mkdir, readdir, rename, rm } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { ClassicLevel } from "../storage/classic-level.js";
import { LevelStore } from "../storage/level-store.js";
import { DacdError } from "../errors.js";
import { syncDir } from "../util/sync-dir.js";

/**
 * Builds a store in a directory beside `dataDir` and moves it into place only when `build`
 * succeeded: a refused import leaves nothing behind, and a store in use or holding data is
 * never replaced unless `force` says so (then the old one is removed only after the move), and one
 * holding the exchange's confirmed freeze never (users escape with its frozen batch).
 * `onBuilding` learns the directory once it is this build's own (a caller that can be killed
 * removes it on the way out), and null once the build succeeded and the moves begin (they must not
 * be cut short); a killed build's leftovers are removed by the next one.
 */
export async function buildBeside<T>(
  dataDir: string,
  force: boolean,
  build: (dir: string) => Promise<T>,
  onBuilding?: (dir: string | null) => void,
): Promise<T> {
  const target = resolve(dataDir);
  const parent = dirname(target);
  const building = importingDir(target);
  const replaced = join(parent, `.${basename(target)}.replaced`);
  if (!(await isEmptyDir(target))) {
    if (!force)
      throw new DacdError(
        "BAD_INPUT",
        `the store ${target} is not empty; an import builds a fresh store (--force replaces it once the import succeeded)`,
      );
    await refuseIfLocked(target);
    await refuseIfFrozen(target);
  }
  await mkdir(parent, { recursive: true });
  // A killed import's leftovers; LevelDB's lock tells whether another import is still at work.
  if (!(await isEmptyDir(building))) await refuseIfLocked(building);
  await rm(building, { recursive: true, force: true });
  await mkdir(building, { mode: 0o700 });
  onBuilding?.(building);
  let result: T;
  try {
    result = await build(building);
  } catch (err) {
    await rm(building, { recursive: true, force: true });
    throw err;
  }
  onBuilding?.(null);
  try {
    await rm(replaced, { recursive: true, force: true });
    if (!(await isEmptyDir(target))) await rename(target, replaced);
    else await rm(target, { recursive: true, force: true });
    await rename(building, target);
    await syncDir(parent);
  } catch (err) {
    await rm(building, { recursive: true, force: true });
    throw new DacdError("STORE", `cannot move the imported store into ${target}: ${(err as Error).message}`);
  }
  await rm(replaced, { recursive: true, force: true });
  return result;
}

/** Where a store for `dataDir` is built before it is moved into place. */
export function importingDir(dataDir: string): string {
  const target = resolve(dataDir);
  return join(dirname(target), `.${basename(target)}.importing`);
}

async function isEmptyDir(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return true;
    throw new DacdError("STORE", `cannot read ${dir}: ${(err as Error).message}`);
  }
}

/**
 * Refuses to replace a store in which the base-chain watch recorded the exchange's freeze: its
 * frozen batch (and the freeze itself) is what users escape with, and no import may drop it.
 */
async function refuseIfFrozen(dir: string): Promise<void> {
  if (!(await readdir(dir)).includes("CURRENT")) return;
  let store: LevelStore;
  try {
    store = await LevelStore.openExisting(dir);
  } catch {
    return; // not a dacd store that opens: nothing recorded in it to keep
  }
  try {
    const frozen = (await store.onchain.cursor())?.frozen;
    if (frozen)
      throw new DacdError(
        "BAD_INPUT",
        `the store ${dir} holds the exchange's freeze at batch ${frozen.batch_id} (base-chain block ${frozen.block_number}): users escape with that batch, so no import replaces the store, even with --force (move it aside, and keep it, if another store must serve)`,
      );
  } finally {
    await store.close();
  }
}

/** Refuses a directory whose LevelDB another process holds open (a running daemon or import). */
async function refuseIfLocked(dir: string): Promise<void> {
  // Not a LevelDB store (opening one would leave LevelDB's files in it): nothing holds it.
  if (!(await readdir(dir)).includes("CURRENT")) return;
  const db = new ClassicLevel(dir, { createIfMissing: false });
  try {
    await db.open();
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    if (cause?.code === "LEVEL_LOCKED" || /lock/i.test(cause?.message ?? ""))
      throw new DacdError("STORE", `the store ${dir} is in use by another process (LevelDB lock held)`);
    return; // not a LevelDB store: nothing holds it
  }
  await db.close();
}
