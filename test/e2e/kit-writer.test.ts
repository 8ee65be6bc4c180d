import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { kitPath, shardOf } from "../../src/escape/kit/layout.js";
import { KitWriter } from "../../src/escape/kit/writer.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

/**
 * The kit writer on a real disk: its thread creates every proof file with the bytes it was
 * given, across many batches (more than fit in flight at once, one larger than a batch), the
 * shard lists are what `sha256sum` of the shard gives, the manifest comes last with the rename;
 * a file it cannot create fails the kit with the system's error and abort leaves nothing.
 */

afterAll(removeTempDirs);

const text = (id: number, size: number): string => `{"id": ${id}, "pad": "${"x".repeat(size)}"}\n`;

describe("KitWriter", () => {
  it("writes every file in its shard, the shard lists and the manifest last", async () => {
    const out = join(await tempDir("dacd-kit-writer-"), "kit");
    const writer = await KitWriter.open(out);
    const ids = Array.from({ length: 3000 }, (_, i) => i * 7919 + (i % 3));
    const bodies = new Map<number, string>();
    for (const id of ids) {
      // About 9 MB in all: many batches, and one file larger than a batch.
      const body = text(id, id === ids[1500] ? 3 << 20 : 2000 + (id % 1000));
      bodies.set(id, body);
      const room = writer.add("vault", BigInt(id), body);
      if (room) await room;
    }
    await writer.addFile("index.html", "<html></html>\n");
    const written = await writer.written();
    expect(written.files).toBe(ids.length);
    expect(existsSync(join(writer.tmp, "manifest.json"))).toBe(false);
    await writer.finish({ files: written.files });
    expect(existsSync(writer.tmp)).toBe(false);
    expect(JSON.parse(await readFile(join(out, "manifest.json"), "utf8"))).toEqual({ files: ids.length });

    for (const id of ids)
      expect(await readFile(join(out, kitPath("vault", BigInt(id))), "utf8")).toBe(bodies.get(id));
    const shards = await readdir(join(out, "vault"));
    expect(Object.keys(written.shards)).toEqual(shards.map((s) => `vault/${s}`).sort());
    for (const shard of shards) {
      const inShard = ids.filter((id) => shardOf(BigInt(id)) === shard);
      const list = inShard
        .map((id) => `${createHash("sha256").update(bodies.get(id)!).digest("hex")}  ${id}.json\n`)
        .join("");
      expect(written.shards[`vault/${shard}`]).toEqual({
        files: inShard.length,
        sha256: createHash("sha256").update(list).digest("hex"),
      });
    }
  }, 120_000);

  it("fails with the system's error when a file cannot be created, and abort leaves nothing", async () => {
    const out = join(await tempDir("dacd-kit-writer-"), "kit");
    const writer = await KitWriter.open(out);
    // A file where shard 001's directory must go.
    await mkdir(join(writer.tmp, "vault"));
    await writeFile(join(writer.tmp, "vault", "001"), "in the way");
    const failure = (async () => {
      for (let id = 0; id < 5000; id++) {
        const room = writer.add("vault", BigInt(id), text(id, 4000));
        if (room) await room;
      }
      await writer.written();
    })();
    await expect(failure).rejects.toMatchObject({ code: expect.stringMatching(/^(EEXIST|ENOTDIR)$/) });
    await writer.abort();
    expect(existsSync(writer.tmp)).toBe(false);
    expect(existsSync(out)).toBe(false);
  }, 120_000);
});
