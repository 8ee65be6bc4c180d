/**
 * Online backup of the store: a consistent copy taken while the daemon keeps signing.
 *
 * The store's records are copied, as one committed state, to a new LevelDB under
 * `backup_dir/.<timestamp>.partial` (storage/store-copy.ts), then the directory is renamed to
 * `backup_dir/<timestamp>`. Only the `keep`
 * newest complete backups are kept. A backup is restored by stopping dacd and putting the backup
 * directory in place of data_dir (see docs/operations.md).
 */
import { copyFile, mkdir, readdir, rename, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { DacdError } from "../errors.js";
import type { LevelStore } from "../storage/level-store.js";
import { copyStore } from "../storage/store-copy.js";

/** Names of complete backups: an ISO time with `:` replaced by `-`, optionally `-N` for same-ms runs. */
const BACKUP_NAME = /^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d(\.\d+)?Z(-\d+)?$/;

export interface BackupOptions {
  /** Complete backups kept (the new one included); older ones are removed. */
  keep: number;
  signal?: AbortSignal;
  /** Entries per write batch (default 2000). */
  chunkEntries?: number;
  /** Clock, for names (tests). */
  now?: () => Date;
  /** The claims journal, copied into the backup as `claims.journal` (LevelDB ignores the file). */
  claimsJournalPath?: string;
}

export interface BackupResult {
  path: string;
  entries: number;
  bytes: number;
  removed: string[];
}

export async function backupStore(
  store: LevelStore,
  backupDir: string,
  opts: BackupOptions,
): Promise<BackupResult> {
  if (resolve(backupDir) === resolve(store.dir))
    throw new DacdError("CONFIG", `backup_dir ${backupDir} must not be the data_dir itself`);
  await mkdir(backupDir, { recursive: true, mode: 0o700 });
  const existing = await readdir(backupDir);
  // Leftovers of a run that died half-way.
  for (const name of existing.filter((n) => n.endsWith(".partial")))
    await rm(join(backupDir, name), { recursive: true, force: true });

  const base = (opts.now?.() ?? new Date()).toISOString().replace(/:/g, "-");
  let name = base;
  for (let i = 1; existing.includes(name); i++) name = `${base}-${i}`;
  const partial = join(backupDir, `.${name}.partial`);
  const final = join(backupDir, name);

  let copied: { entries: number; bytes: number };
  try {
    copied = await copyStore(store, partial, { signal: opts.signal, chunkEntries: opts.chunkEntries });
    if (opts.claimsJournalPath) {
      await copyFile(opts.claimsJournalPath, join(partial, "claims.journal")).catch((err: unknown) => {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      });
    }
    await rename(partial, final);
  } catch (err) {
    await rm(partial, { recursive: true, force: true });
    throw err;
  }
  const removed = await rotateBackups(backupDir, opts.keep);
  return { path: final, ...copied, removed };
}

/** Complete backups in `backupDir`, oldest first. */
export async function listBackups(backupDir: string): Promise<string[]> {
  const names = await readdir(backupDir).catch(() => [] as string[]);
  return names.filter((n) => BACKUP_NAME.test(n)).sort(compareNames);
}

function compareNames(a: string, b: string): number {
  const [ta, na] = splitName(a);
  const [tb, nb] = splitName(b);
  return ta < tb ? -1 : ta > tb ? 1 : na - nb;
}

function splitName(n: string): [string, number] {
  const m = /^(.*Z)(?:-(\d+))?$/.exec(n);
  return [m?.[1] ?? n, Number(m?.[2] ?? 0)];
}

/** Removes all but the `keep` newest complete backups; returns the removed names. */
export async function rotateBackups(backupDir: string, keep: number): Promise<string[]> {
  const all = await listBackups(backupDir);
  const old = all.slice(0, Math.max(0, all.length - keep));
  for (const name of old) await rm(join(backupDir, name), { recursive: true, force: true });
  return old;
}
