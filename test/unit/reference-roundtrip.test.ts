import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { dumpReference } from "../../src/escape/reference-dump.js";
import { importReference } from "../../src/escape/reference-load.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { readArchiveFiles } from "../helpers/reference-archive.js";
import { FIXTURES } from "../helpers/vectors.js";
import { engine } from "../helpers/chain-store.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

afterAll(removeTempDirs);

/**
 * Export: a store imported from the vector archive, exported again, gives the same rows byte for
 * byte and the same info (roots, sequence number, subtree roots); with 8 subtrees, an archive that
 * imports to the same roots.
 */
describe("exporting the reference state archive", () => {
  it.each([
    ["reference-state-spot", "spot"],
    ["reference-state-spot-v4.0", "spot-v4.0"],
  ] as const)("%s: import, export, and the archive's files are the original's", async (vector, profile) => {
    const archive = join(FIXTURES, vector, "state.bz2");
    const dir = await tempDir();
    await importReference(engine, { archive, dataDir: join(dir, "a"), profile });
    const store = await LevelStore.open(join(dir, "a"));
    let eight: string;
    try {
      const out = join(dir, "again.bz2");
      const result = await dumpReference(store, engine, { out, batchId: 4 });
      const state = JSON.parse(await readFile(join(FIXTURES, vector, "state.json"), "utf8")) as {
        roots: Record<string, string>;
        vaults: number;
        orders: number;
      };
      expect(result).toMatchObject({
        batch_id: 4,
        sequence_number: 3,
        roots: state.roots,
        leaves: { vault: state.vaults, order: state.orders },
      });
      const original = await readArchiveFiles(archive);
      const mine = await readArchiveFiles(out);
      expect([...mine.keys()].sort()).toEqual([...original.keys()].sort());
      for (const [name, text] of original) {
        if (name === "info.json") expect(JSON.parse(mine.get(name)!)).toEqual(JSON.parse(text));
        else expect(mine.get(name), name).toBe(text);
      }
      await expect(dumpReference(store, engine, { out, batchId: 4 })).rejects.toThrow(/exists/);

      eight = join(dir, "eight.bz2");
      const r8 = await dumpReference(store, engine, { out: eight, batchId: 4, subtrees: 8 });
      expect(r8.order_subtree_roots).toHaveLength(8);
      expect([...(await readArchiveFiles(eight)).keys()].sort()).toEqual(
        ["info.json", "vaults.csv", ...[8, 9, 10, 11, 12, 13, 14, 15].map((k) => `orders_${k}.csv`)].sort(),
      );
    } finally {
      await store.close();
    }
    const back = await importReference(engine, { archive: eight, dataDir: join(dir, "b"), profile });
    expect(back).toMatchObject({ batch_id: 4, order_subtrees: 8 });
  });
});
