import { lstat, mkdir, readdir, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { DacdError } from "../../errors.js";

/**
 * Where a kit is made: a temporary directory beside `out`, renamed into place once complete (the
 * manifest written last), so that a kit cut short (a SIGKILL, a full disk) leaves no `out` and no
 * manifest, only a temporary directory, which the next kit into the same place removes once its
 * writer is gone. Nothing is synced file by file: a kit is made again from the store, and the
 * rename is what tells a kit from a kit's remains. Both kit formats write through this.
 */

const TMP_MARK = ".kit-tmp-";

/**
 * Refuses an `out` that is a symbolic link (rename(2) would fail on it only once the kit is
 * built), a file, or a directory that is not empty: called by the command before the walk, and
 * again when the kit's directory is made.
 */
export async function checkKitOut(out: string): Promise<void> {
  const link = await lstat(out).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw new DacdError("BAD_INPUT", `--out ${out}: ${err.message}`);
  });
  if (link?.isSymbolicLink())
    throw new DacdError(
      "BAD_INPUT",
      `--out ${out} is a symbolic link: give the directory's real path (the kit is renamed into place)`,
    );
  if (link && !link.isDirectory()) throw new DacdError("BAD_INPUT", `${out} is a file, not a directory`);
  if (link && (await readdir(out)).length > 0)
    throw new DacdError("BAD_INPUT", `the output directory ${out} is not empty`);
}

/** Checks `out` (checkKitOut), clears temporary directories left by dead writers, makes a new one. */
export async function openKitDir(out: string): Promise<string> {
  await checkKitOut(out);
  const parent = dirname(out);
  await mkdir(parent, { recursive: true });
  const prefix = `.${basename(out)}${TMP_MARK}`;
  for (const name of await readdir(parent)) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(name.slice(prefix.length));
    if (Number.isInteger(pid) && pid > 0 && !alive(pid))
      await rm(join(parent, name), { recursive: true, force: true });
  }
  const tmp = join(parent, `${prefix}${process.pid}`);
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp);
  return tmp;
}

/** Moves a complete kit into place; rename(2) replaces an empty directory, so `out` may exist, empty. */
export async function placeKit(tmp: string, out: string): Promise<void> {
  await rename(tmp, out).catch((err: NodeJS.ErrnoException) => {
    throw new DacdError(
      "BAD_INPUT",
      `the kit could not be moved to ${out}: ${err.code ?? err.message} (it is left in ${tmp})`,
    );
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
