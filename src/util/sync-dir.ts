import { open } from "node:fs/promises";

/** fsync of a directory, so that a file created or renamed in it survives a crash. */
export async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
