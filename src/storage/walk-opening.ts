import { OPEN_TABLE_BYTES, TABLE_BYTES } from "../config/memory-plan.js";
import { setMappedTables } from "./level-binding.js";
import type { LevelTuning } from "./level-store.js";
import { directorySize } from "./store-size.js";

/** At most this many table files open: their index blocks then take at most 256 MiB. */
export const WALK_MAX_OPEN_FILES = (256 * 2 ** 20) / OPEN_TABLE_BYTES;
/** Files LevelDB opens beside its tables (log, manifest, lock, info log), with room to spare. */
const OTHER_FILES = 100;

/**
 * How a command that walks whole trees of a stopped store (dump, escape kit) opens it. Records are
 * content-addressed, so the walk's lookups land on random table files, every table again and
 * again: each table is kept open (a closed one is reopened, its footer and index block read
 * again, by every lookup that lands on it), up to WALK_MAX_OPEN_FILES. None is memory-mapped:
 * a mapped table's touched pages count in the process's RSS until it closes, while a block read
 * with pread is only the page cache's. LevelDB takes the mapped-table count when the process's
 * first database opens, so this is for a command's own process, called before it opens the store.
 */
export async function wholeWalkTuning(dir: string): Promise<LevelTuning> {
  setMappedTables(0);
  return { maxOpenFiles: walkOpenFiles(await directorySize(dir).catch(() => 0)) };
}

/** LevelDB's `max_open_files` for a walk of a store of `storeBytes`: a file for every table. */
export function walkOpenFiles(storeBytes: number): number {
  return Math.min(WALK_MAX_OPEN_FILES, Math.ceil(storeBytes / TABLE_BYTES) + OTHER_FILES);
}
