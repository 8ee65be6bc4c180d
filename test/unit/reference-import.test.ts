import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { importReference } from "../../src/escape/reference-load.js";
import { getImportedFrom } from "../../src/escape/reference-store.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { FIXTURES } from "../helpers/vectors.js";
import { engine } from "../helpers/chain-store.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

afterAll(removeTempDirs);

interface StateJson {
  batch_id: number;
  sequence_number: number;
  roots: Record<string, string>;
  vaults: number;
  orders: number;
}

describe("importing the reference member's state archive", () => {
  it.each([
    ["reference-state-spot", "spot"],
    ["reference-state-spot-v4.0", "spot-v4.0"],
  ] as const)("%s: roots, batch record and cursor as state.json says", async (vector, profile) => {
    const state = JSON.parse(await readFile(join(FIXTURES, vector, "state.json"), "utf8")) as StateJson;
    const dataDir = join(await tempDir(), "data");
    const result = await importReference(engine, {
      archive: join(FIXTURES, vector, "state.bz2"),
      dataDir,
      profile,
    });
    expect(result).toMatchObject({
      batch_id: state.batch_id,
      sequence_number: state.sequence_number,
      roots: state.roots,
      leaves: { vault: state.vaults, order: state.orders },
      order_subtrees: 4,
    });
    const store = await LevelStore.open(dataDir);
    try {
      const record = await store.getBatch(state.batch_id);
      expect(record).toMatchObject({
        batch_id: state.batch_id,
        sequence_number: state.sequence_number,
        roots: state.roots,
        claim_hash: result.claim_hash,
        signature: "",
        loaded_from_dump: true,
      });
      expect(await store.getCursor()).toMatchObject({ next_batch_id: state.batch_id + 1 });
      expect(await store.meta.identity()).toEqual({
        profile,
        heights: profile === "spot" ? { vault: 31, order: 251 } : { vault: 31, order: 63 },
      });
      expect(await getImportedFrom(store)).toMatchObject({ batch_id: state.batch_id });
      const ids: number[] = [];
      for await (const r of store.batches.records()) ids.push(r.batch_id);
      expect(ids).toEqual([state.batch_id]);
    } finally {
      await store.close();
    }
  });
});
