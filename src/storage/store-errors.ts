/**
 * LevelDB's and the file system's failures as one line for the operator. LevelDB reports a damaged
 * table as LEVEL_CORRUPTION, and a truncated or unreadable one (like a full disk) as
 * LEVEL_IO_ERROR with the file in its message; none of them is an internal error of dacd.
 *
 * - A full disk is transient: the member keeps retrying and resumes once space is freed.
 * - Except where the disk filled up while LevelDB wrote a table or its manifest (a flush or a
 *   compaction in the background): LevelDB then refuses every later write with that error until
 *   the store is reopened, so retrying cannot help. The run loop stops, dacd exits non-zero, and
 *   systemd starts it again (which reopens the store) until space is freed.
 * - A damaged or unreadable store is not: retrying cannot help, so the run loop stops and dacd
 *   exits non-zero (systemd and the alerts see it), and the operator restores a backup.
 */
import { DacdError } from "../errors.js";

export interface StoreFailure {
  readonly error: DacdError;
  /** A damaged or unreadable store (not a full disk): stop instead of retrying. */
  readonly fatal: boolean;
}

const FULL = /ENOSPC|No space left on device|disk quota exceeded|EDQUOT/i;
/** A table's or the manifest's file in LevelDB's message: a write LevelDB made in the background. */
const BACKGROUND_FILE = /[\w.-]*\.(?:ldb|sst)\b|MANIFEST-\d+/;
const LEVEL_CODES = new Set(["LEVEL_IO_ERROR", "LEVEL_CORRUPTION", "LEVEL_NOT_FOUND_ERROR"]);
const FS_CODES = new Set(["ENOSPC", "EDQUOT", "EIO", "EROFS"]);

/** The failure `err` is when it comes from the store or its disk; undefined otherwise. */
export function storeFailure(err: unknown, dir: string | undefined): StoreFailure | undefined {
  if (err instanceof DacdError) return undefined;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown } | null;
  if (e === null || typeof e !== "object") return undefined;
  const code = typeof e.code === "string" ? e.code : "";
  const cause = e.cause as { code?: unknown; message?: unknown } | undefined;
  const causeCode = typeof cause?.code === "string" ? cause.code : "";
  const isLevel = LEVEL_CODES.has(code) || LEVEL_CODES.has(causeCode);
  if (!isLevel && !FS_CODES.has(code)) return undefined;
  const detail = [e.message, cause?.message].filter((m) => typeof m === "string" && m).join(": ");
  const where = dir ? `the store ${dir}` : "the store";
  if (FULL.test(detail) || code === "ENOSPC" || code === "EDQUOT") {
    const background = isLevel ? BACKGROUND_FILE.exec(detail)?.[0] : undefined;
    if (background) {
      return {
        fatal: true,
        error: new DacdError(
          "STORE",
          `the disk holding ${where} filled up while LevelDB wrote ${background} (${oneLine(detail)}); ` +
            "LevelDB takes no more writes until the store is reopened: free space and start dacd again " +
            "(systemd restarts it)",
          { cause: err },
        ),
      };
    }
    return {
      fatal: false,
      error: new DacdError(
        "STORE",
        `the disk holding ${where} is full (${oneLine(detail)}); free space: dacd retries and resumes by itself`,
        { cause: err },
      ),
    };
  }
  const damaged =
    code === "LEVEL_CORRUPTION" || causeCode === "LEVEL_CORRUPTION" ? "is damaged" : "cannot be read";
  return {
    fatal: true,
    error: new DacdError(
      "STORE",
      `${where} ${damaged} (${oneLine(detail)}): stop dacd, restore the newest backup into data_dir ` +
        "(docs/operations.md, To restore) or rebuild it from a dump, then run `dacd check --deep`",
      { cause: err },
    ),
  };
}

/** `err` as a DacdError when it is one or a store failure; otherwise undefined. */
export function asStoreError(err: unknown, dir?: string): DacdError | undefined {
  return storeFailure(err, dir)?.error;
}

function oneLine(s: string): string {
  return s.replace(/\s+/g, " ").trim().slice(0, 300);
}
