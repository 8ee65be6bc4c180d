import { execFileSync } from "node:child_process";
import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toolAvailable } from "./tool-required.js";

/**
 * A tmpfs of `mb` MiB of its own, for tests of a full disk (mounting needs root, as in CI
 * containers): its directory and how to unmount and remove it, or undefined where mounting is not
 * allowed (the test then skips; under DACD_REQUIRE_TOOLS=1 it fails instead).
 */
export async function smallDisk(
  mb: number,
): Promise<{ dir: string; remove: () => Promise<void> } | undefined> {
  const dir = await mkdtemp(join(tmpdir(), "dacd-small-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${mb}m`, "tmpfs", dir], { stdio: "ignore" });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    toolAvailable(`a tmpfs of our own (mount -t tmpfs, as root): ${(err as Error).message}`, false);
    return undefined;
  }
  return {
    dir,
    remove: async () => {
      execFileSync("umount", ["-l", dir], { stdio: "ignore" });
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Writes `path` until the disk is full (ENOSPC). */
export async function fill(path: string): Promise<void> {
  const fh = await open(path, "w");
  const block = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) await fh.write(block);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
  } finally {
    await fh.close();
  }
}
