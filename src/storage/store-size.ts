import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";

/**
 * Bytes allocated to the regular files directly in `dir` (like `du -s` of a flat directory; a
 * LevelDB store is flat). Subdirectories (a backup_dir placed inside data_dir) are not counted.
 */
export async function directorySize(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (!e.isFile()) continue;
    const st = await stat(join(dir, e.name)).catch(() => undefined);
    if (st) total += st.blocks > 0 ? st.blocks * 512 : st.size;
  }
  return total;
}
