import { createReadStream, createWriteStream } from "node:fs";
import { rename, rm, stat } from "node:fs/promises";
import { basename } from "node:path";
import { pipeline } from "node:stream/promises";
import { pack as tarPack } from "tar-stream";
import { bzip2 } from "./bzip2.js";

/** One file of an archive: its bytes, or a file on disk to copy in. */
export type ArchiveEntry = { readonly name: string } & (
  { readonly data: Buffer | string } | { readonly path: string }
);

/**
 * Writes a bzip2-compressed tar of `entries` (flat, in this order) to `out`, through `out`.tmp and
 * a rename, so that a file at `out` is always a whole archive. Memory: one chunk of a file at a time.
 * Every header carries `mtime`: the same entries make the same bytes.
 */
export async function writeArchive(
  out: string,
  entries: readonly ArchiveEntry[],
  mtime: Date = new Date(),
): Promise<void> {
  const tmp = `${out}.tmp`;
  const tar = tarPack();
  const bz = bzip2(basename(out));
  const writing = Promise.all([pipeline(tar, bz.input), pipeline(bz.output, createWriteStream(tmp))]);
  writing.catch(() => undefined);
  try {
    for (const e of entries) {
      const header = { name: e.name, mode: 0o644, mtime, uname: "dacd", gname: "dacd" };
      if ("data" in e) {
        await new Promise<void>((resolve, reject) =>
          tar.entry(header, e.data, (err) => (err ? reject(err) : resolve())),
        );
      } else {
        const { size } = await stat(e.path);
        await pipeline(createReadStream(e.path), tar.entry({ ...header, size }));
      }
    }
    tar.finalize();
    await writing;
    await bz.done;
    await rename(tmp, out);
  } catch (err) {
    bz.kill();
    tar.destroy();
    await rm(tmp, { force: true });
    throw err;
  }
}
