/**
 * Directories dacd writes its state into (data_dir, the claims journal's): created if needed, on a
 * real file system, in bounded time. A recursive mkdir under /proc never returns, so the pseudo
 * file systems are recognised (statfs) before anything is created.
 */
import { access, constants, mkdir, statfs } from "node:fs/promises";
import { dirname, resolve } from "node:path";

/** Pseudo file systems on which state can never live (statfs f_type). */
const PSEUDO_FS: Record<number, string> = { 0x9fa0: "procfs", 0x62656572: "sysfs", 0x1cd1: "devpts" };

/**
 * Creates `dir` (mode 0700) if needed and checks that it is a writable directory on a disk; throws
 * an Error saying why not (the caller names the setting).
 */
export async function ensureLocalDir(dir: string, timeoutMs = 10_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer from the file system within ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
  });
  try {
    await Promise.race([
      (async () => {
        const above = PSEUDO_FS[(await statfs(await nearestExisting(dir))).type];
        if (above) throw new Error(`it is on ${above}, not on a disk`);
        await mkdir(dir, { recursive: true, mode: 0o700 });
        const fs = PSEUDO_FS[(await statfs(dir)).type];
        if (fs) throw new Error(`it is on ${fs}, not on a disk`);
        await access(dir, constants.W_OK);
      })(),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** `dir` or its nearest ancestor that exists. */
async function nearestExisting(dir: string): Promise<string> {
  for (let d = resolve(dir); ; d = dirname(d)) {
    if (
      await access(d).then(
        () => true,
        () => false,
      )
    )
      return d;
    if (dirname(d) === d) return d;
  }
}
