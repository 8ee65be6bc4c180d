import { spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";

/** A ustar header for a regular file `name` of `size` bytes (at most 8 GiB − 1: 11 octal digits). */
export function tarHeader(name: string, size: number): Buffer {
  const h = Buffer.alloc(512);
  const put = (text: string, at: number): void => void h.write(text, at, "latin1");
  const octal = (v: number, width: number): string => v.toString(8).padStart(width - 1, "0") + "\0";
  put(name, 0);
  put(octal(0o644, 8), 100);
  put(octal(0, 8), 108);
  put(octal(0, 8), 116);
  put(octal(size, 12), 124);
  put(octal(Math.floor(Date.now() / 1000), 12), 136);
  put("        ", 148); // the checksum counts its own field as blanks
  put("0", 156);
  put("ustar\u000000", 257);
  let sum = 0;
  for (const b of h) sum += b;
  put(octal(sum, 7) + " ", 148);
  return h;
}

function bzip2(data: Buffer): Buffer {
  const r = spawnSync("bzip2", ["-9c"], { input: data, maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`bzip2: ${r.stderr.toString()}`);
  return r.stdout;
}

/**
 * A reference state archive whose `file` is one endless line: a tar header announcing 8 GiB, then
 * `repeats` concatenated bzip2 streams of 40 MB of '1' each (`bzip2 -d` reads concatenated
 * streams as one). A few kilobytes on disk, gigabytes of a single row once decompressed.
 */
export async function writeEndlessLineArchive(path: string, file: string, repeats: number): Promise<number> {
  const head = bzip2(tarHeader(file, 0o77777777777));
  const run = bzip2(Buffer.alloc(40e6, 0x31));
  const archive = Buffer.concat([head, ...Array.from({ length: repeats }, () => run)]);
  await writeFile(path, archive);
  return archive.length;
}

/**
 * A valid-looking but large vaults.csv stream: `rows` vaults with increasing ids, in a tar with
 * nothing else, for an import that runs long enough to be stopped midway.
 */
export async function writeManyRowsArchive(path: string, rows: number): Promise<void> {
  const lines: string[] = [];
  for (let i = 0; i < rows; i++) lines.push(`${i},${i + 1},${i + 2},${i + 3}\r\n`);
  const body = Buffer.from(lines.join(""), "latin1");
  const pad = Buffer.alloc((512 - (body.length % 512)) % 512);
  const tar = Buffer.concat([tarHeader("vaults.csv", body.length), body, pad, Buffer.alloc(1024)]);
  await writeFile(path, bzip2(tar));
}
