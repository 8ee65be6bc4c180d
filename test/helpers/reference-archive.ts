import { createReadStream } from "node:fs";
import { pipeline } from "node:stream/promises";
import { extract as tarExtract } from "tar-stream";
import { bunzip2 } from "../../src/escape/bzip2.js";

/** The files of a bzip2 tar (a reference state archive), by name, as latin1 text. */
export async function readArchiveFiles(path: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const bz = bunzip2(path);
  const ex = tarExtract();
  const feeding = pipeline(createReadStream(path), bz.input);
  const unpacking = pipeline(bz.output, ex);
  for await (const entry of ex) {
    const chunks: Buffer[] = [];
    for await (const c of entry as AsyncIterable<Buffer>) chunks.push(c);
    files.set(entry.header.name, Buffer.concat(chunks).toString("latin1"));
  }
  await Promise.all([feeding, unpacking, bz.done]);
  return files;
}
