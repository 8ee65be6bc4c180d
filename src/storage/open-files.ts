import { readFileSync } from "node:fs";

/**
 * Descriptors left to everything but LevelDB's tables (sockets, logs, the journal, workers), at
 * most: a small limit keeps half of it.
 */
const RESERVED_DESCRIPTORS = 1024;

/** LevelDB holds no fewer table files open than this whatever it is told (its own floor). */
const LEVELDB_MIN_OPEN_FILES = 74;

/**
 * The process's open-file limit (the soft one, which Node raises to the hard one at start), from
 * the text of /proc/self/limits; undefined where there is no such file (not Linux) or no such line.
 */
export function openFileLimit(limits = readLimits()): number | undefined {
  const line = limits?.split("\n").find((l) => l.startsWith("Max open files"));
  const soft = line?.slice("Max open files".length).trim().split(/\s+/)[0];
  if (soft === undefined) return undefined;
  if (soft === "unlimited") return Infinity;
  const n = Number(soft);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

function readLimits(): string | undefined {
  try {
    return readFileSync("/proc/self/limits", "utf8");
  } catch {
    return undefined;
  }
}

/**
 * LevelDB's `max_open_files` within the descriptor limit: asked for more table files than the
 * process may open, LevelDB would fail reads with "Too many open files" once the store has that
 * many tables; fewer tables kept open only makes reads reopen them.
 */
export function tableFilesWithinLimit(requested: number, limit = openFileLimit()): number {
  if (limit === undefined || limit === Infinity) return requested;
  const reserve = Math.min(RESERVED_DESCRIPTORS, Math.floor(limit / 2));
  return Math.max(LEVELDB_MIN_OPEN_FILES, Math.min(requested, limit - reserve));
}
