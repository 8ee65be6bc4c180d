import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { writeArchive } from "../../src/escape/reference-archive.js";
import { parseBatchInfo, type StatedBatch } from "../../src/escape/reference-format.js";
import { importReference } from "../../src/escape/reference-load.js";
import { getOrdersMissing } from "../../src/escape/reference-store.js";
import { checkStore } from "../../src/maintenance/integrity-check.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { engine } from "../helpers/chain-store.js";
import { readArchiveFiles } from "../helpers/reference-archive.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";
import { FIXTURES } from "../helpers/vectors.js";

/**
 * An archive read with its batch stated outside it (reference-load.ts): without info.json the order
 * files still build the order tree, checked against the stated root; without order files the stated
 * order root is kept and the store marked; with info.json the stated batch must agree with it.
 */

afterAll(removeTempDirs);

const VECTOR = join(FIXTURES, "reference-state-spot");

interface StateJson {
  batch_id: number;
  sequence_number: number;
  roots: { vault: string; order: string; rollup_vault: string };
  vaults: number;
  orders: number;
}

async function setup(): Promise<{ state: StateJson; files: Map<string, string>; dir: string }> {
  const state = JSON.parse(await readFile(join(VECTOR, "state.json"), "utf8")) as StateJson;
  return { state, files: await readArchiveFiles(join(VECTOR, "state.bz2")), dir: await tempDir() };
}

async function archiveOf(
  dir: string,
  name: string,
  files: Map<string, string>,
  keep: (f: string) => boolean,
) {
  const out = join(dir, name);
  await writeArchive(
    out,
    [...files].filter(([f]) => keep(f)).map(([f, data]) => ({ name: f, data: Buffer.from(data, "latin1") })),
  );
  return out;
}

const stated = (
  state: StateJson,
  change: Partial<StatedBatch["batch_info"]["merkle_roots"]> = {},
  seq?: number,
): StatedBatch => ({
  batch_id: state.batch_id,
  batch_info: { merkle_roots: { ...state.roots, ...change }, sequence_number: seq ?? state.sequence_number },
  source: "batch-4.json",
});

describe("a reference archive with its batch stated outside it", () => {
  it("without info.json: the order files build the order tree, checked against the stated root", async () => {
    const { state, files, dir } = await setup();
    const archive = await archiveOf(dir, "no-info.bz2", files, (f) => f !== "info.json");
    const result = await importReference(engine, {
      archive,
      dataDir: join(dir, "a"),
      profile: "spot",
      stated: stated(state),
    });
    expect(result).toMatchObject({
      batch_id: 4,
      roots: state.roots,
      leaves: { vault: state.vaults, order: state.orders },
      order_subtrees: 4,
      orders_missing: false,
    });
    const wrong = "0".repeat(63) + "7";
    await expect(
      importReference(engine, {
        archive,
        dataDir: join(dir, "b"),
        profile: "spot",
        stated: stated(state, { order: wrong }),
      }),
    ).rejects.toThrow(
      `the order tree root built from the archive is ${state.roots.order}; batch-4.json states ${wrong} for batch 4`,
    );
  });

  it("with vaults.csv alone: the stated order root is kept, the store marked as not validating orders", async () => {
    const { state, files, dir } = await setup();
    const archive = await archiveOf(dir, "vaults.bz2", files, (f) => f === "vaults.csv");
    const dataDir = join(dir, "a");
    const result = await importReference(engine, {
      archive,
      dataDir,
      profile: "spot",
      stated: stated(state),
    });
    expect(result).toMatchObject({
      roots: state.roots,
      leaves: { order: 0 },
      order_subtrees: 0,
      orders_missing: true,
    });
    const store = await LevelStore.open(dataDir);
    try {
      const record = (await store.getBatch(4))!;
      expect(record.roots).toEqual(state.roots);
      expect(record.root_gens).toEqual({ vault: 4 });
      expect(await getOrdersMissing(store)).toMatchObject({ batch_id: 4 });
      // The stated order root has no nodes under it, as the member was told: not damage.
      const report = await checkStore(store, engine, { deep: true });
      expect(report).toMatchObject({ ok: true, problems: [] });
    } finally {
      await store.close();
    }
    // The same claim as the full archive's: the order root enters it as stated.
    const full = await importReference(engine, {
      archive: join(VECTOR, "state.bz2"),
      dataDir: join(dir, "full"),
      profile: "spot",
    });
    expect(result.claim_hash).toBe(full.claim_hash);
  });

  it("with info.json: a stated batch that disagrees with it is refused", async () => {
    const { state, dir } = await setup();
    const archive = join(VECTOR, "state.bz2");
    await expect(
      importReference(engine, {
        archive,
        dataDir: join(dir, "a"),
        profile: "spot",
        stated: stated(state, {}, 9),
      }),
    ).rejects.toThrow(`state.bz2: info.json states sequence number ${state.sequence_number}, batch-4.json 9`);
    const ok = await importReference(engine, {
      archive,
      dataDir: join(dir, "b"),
      profile: "spot",
      stated: stated(state),
    });
    expect(ok.orders_missing).toBe(false);
  });

  it("parses a --batch-info file and names the field it refuses", () => {
    const r = "ab".repeat(32);
    expect(
      parseBatchInfo(
        JSON.stringify({ merkle_roots: { vault: "0x1", order: r }, sequence_number: 3 }),
        "f.json",
        4,
      ),
    ).toEqual({
      batch_id: 4,
      batch_info: { merkle_roots: { vault: "0".repeat(63) + "1", order: r }, sequence_number: 3 },
      source: "f.json",
    });
    const refused: [unknown, string][] = [
      ["not json", "f.json, field (whole file): not JSON"],
      [
        { merkle_roots: { vault: r, order: r }, sequence_number: -1 },
        "f.json, field sequence_number: -1 is not an integer in 0 … 9007199254740990",
      ],
      [
        { merkle_roots: { vault: r }, sequence_number: 1 },
        "f.json, field merkle_roots.order: undefined is not a root",
      ],
      [
        { merkle_roots: { vault: r, order: r, position: r }, sequence_number: 1 },
        "f.json, field merkle_roots.position: not a tree of a spot member",
      ],
      [
        { batch_id: 5, merkle_roots: { vault: r, order: r }, sequence_number: 1 },
        "f.json, field batch_id: 5, but --batch is 4",
      ],
      [
        { merkle_roots: { vault: r, order: r }, sequence_number: 1, roots: {} },
        "f.json, field roots: unexpected field",
      ],
    ];
    for (const [body, message] of refused)
      expect(() =>
        parseBatchInfo(typeof body === "string" ? body : JSON.stringify(body), "f.json", 4),
      ).toThrow(message);
  });
});
