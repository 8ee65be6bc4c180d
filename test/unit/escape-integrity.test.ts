import { createHash } from "node:crypto";
import { cp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkStore } from "../../src/maintenance/integrity-check.js";
import { dumpStore } from "../../src/escape/dump.js";
import type { Manifest } from "../../src/escape/formats.js";
import { loadDump } from "../../src/escape/load.js";
import { batchKey, Prefix, treeKey, TreeKind } from "../../src/storage/keys.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { hexToBytes32 } from "../../src/util/bytes.js";
import { childGen } from "../../src/storage/records/node-record.js";
import { readLeaf } from "../../src/verifier/trees/read/read-leaf.js";
import { chainStore, countKeys, engine, type ChainStore } from "../helpers/chain-store.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";
import { levelDb } from "../../src/storage/level-db.js";

let src: ChainStore;
let dump: string;
beforeAll(async () => {
  src = await chainStore("spot-chain");
  dump = join(await tempDir(), "dump");
  await dumpStore(src.store, engine, { outDir: dump });
});
afterAll(async () => {
  await src.store.close();
  await removeTempDirs();
});

async function tamperedCopy(edit: (dir: string, m: Manifest) => Promise<Manifest | void>): Promise<string> {
  const dir = join(await tempDir(), "dump");
  await cp(dump, dir, { recursive: true });
  const m = JSON.parse(await readFile(join(dir, "manifest.json"), "utf8")) as Manifest;
  const out = (await edit(dir, m)) ?? m;
  await writeFile(join(dir, "manifest.json"), JSON.stringify(out));
  return dir;
}

async function loadInto(from: string): Promise<{ error: string; keys: number }> {
  const store = await LevelStore.open(join(await tempDir(), "db"));
  try {
    await loadDump(store, engine, { fromDir: from });
    return { error: "", keys: -1 };
  } catch (err) {
    let keys = 0;
    for await (const _ of levelDb(store).keys()) keys++;
    return { error: (err as Error).message, keys };
  } finally {
    await store.close();
  }
}

const sha = (s: string): string => createHash("sha256").update(s).digest("hex");

describe("load refuses a bad dump", () => {
  it("with a changed leaf (checksums updated): the tree's root differs, named", async () => {
    const dir = await tamperedCopy(async (d, m) => {
      const path = join(d, "rollup_vaults.csv");
      const lines = (await readFile(path, "utf8")).split("\n");
      const f = lines[3]!.split(",");
      f[3] = String(BigInt(f[3]!) + 1n);
      lines[3] = f.join(",");
      const text = lines.join("\n");
      await writeFile(path, text);
      const t = m.trees.rollup_vault!;
      return {
        ...m,
        trees: { ...m.trees, rollup_vault: { ...t, sha256: sha(text), bytes: Buffer.byteLength(text) } },
      };
    });
    const r = await loadInto(dir);
    expect(r.error).toMatch(/rollup_vault tree built from rollup_vaults\.csv has root/);
    expect(r.keys).toBe(0); // nothing left behind
  });

  it("with a missing file, named", async () => {
    const dir = await tamperedCopy((d) => rm(join(d, "orders.csv")));
    expect((await loadInto(dir)).error).toMatch(/no orders\.csv/);
  });

  it("with a wrong checksum, named", async () => {
    const dir = await tamperedCopy(async (d) => {
      await writeFile(
        join(d, "vaults.csv"),
        (await readFile(join(d, "vaults.csv"), "utf8")).replace(/,1(\d)/, ",2$1"),
      );
    });
    expect((await loadInto(dir)).error).toMatch(/vaults\.csv: SHA-256 .* does not match/);
  });

  it("into a store that is not empty", async () => {
    await expect(loadDump(src.store, engine, { fromDir: dump })).rejects.toThrow(/not empty/);
  });

  it("whose manifest claim does not match its roots", async () => {
    const dir = await tamperedCopy(async (_d, m) => ({ ...m, sequence_number: m.sequence_number + 1 }));
    expect((await loadInto(dir)).error).toMatch(/claim_hash/);
  });
});

describe("check", () => {
  it("passes on a replayed store, shallow and deep, and reports the skipped chain correctly", async () => {
    const r = await checkStore(src.store, engine, { deep: true, deepBatches: [0, 1, 2, 3, 4, 5] });
    expect(r.problems).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.batches).toBe(6);
  });

  it("reads every record of the store once when asked (readAll), counting them", async () => {
    let keys = 0;
    for await (const _ of levelDb(src.store).keys()) keys++;
    const r = await checkStore(src.store, engine, { readAll: true });
    expect(r.problems).toEqual([]);
    expect(r.records_read).toBe(keys);
    expect(keys).toBeGreaterThan(6);
    expect((await checkStore(src.store, engine)).records_read).toBeUndefined();
  });

  it("--deep finds a deleted node, an altered node and an altered leaf record; shallow finds a missing batch", async () => {
    const s = await chainStore("spot-v40-chain");
    try {
      const record = (await s.store.getBatch(3))!;
      const root = hexToBytes32(record.roots.vault!)!;
      const rootGen = record.root_gens.vault!;
      const [rootRec] = await s.store.getNodes([root], [rootGen]);
      expect(rootRec).toBeDefined();
      const vaults = (s.responses[3]!.update as { vaults: Record<string, { balance: string }> }).vaults;
      const vaultId = Object.keys(vaults).find((id) => vaults[id]!.balance !== "0")!;
      const found = await readLeaf(engine, s.store, s.profile.main, root, rootGen, BigInt(vaultId));
      // Alter one leaf record of the vault tree (batch 3 changed the leaf: its record is batch 3's).
      expect(found.leafGen).toBe(3);
      const leafKey = treeKey(found.leafGen, TreeKind.leaf, found.leafHash);
      const leafRec = (await levelDb(s.store).get(leafKey))!.slice();
      leafRec[95] = leafRec[95]! ^ 1;
      await levelDb(s.store).put(leafKey, leafRec);

      const leafOnly = await checkStore(s.store, engine, { deep: true, deepBatches: [3] });
      expect(leafOnly.problems).toEqual([
        expect.objectContaining({
          batch_id: 3,
          tree: "vault",
          index: vaultId,
          problem: expect.stringMatching(/leaf record hashes to/),
        }),
      ]);
      // Delete the root's left child, alter the right child's record.
      const left = rootRec!.subarray(0, 32);
      const right = rootRec!.subarray(32, 64);
      const leftKey = treeKey(childGen(rootRec!, 0), TreeKind.node, left);
      const rightKey = treeKey(childGen(rootRec!, 1), TreeKind.node, right);
      const [rightRec] = await s.store.getNodes([right], [childGen(rootRec!, 1)]);
      expect(await levelDb(s.store).get(leftKey)).toBeDefined();
      await levelDb(s.store).del(leftKey);
      const altered = rightRec!.slice();
      altered[40] = altered[40]! ^ 1;
      await levelDb(s.store).put(rightKey, altered);
      expect((await checkStore(s.store, engine)).ok).toBe(true); // shallow: records are fine
      const r = await checkStore(s.store, engine, { deep: true, deepBatches: [0, 1, 2, 3] });
      expect(r.ok).toBe(false);
      const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
      expect(r.problems).toContainEqual(
        expect.objectContaining({ batch_id: 3, tree: "vault", hash: hex(left), problem: "missing" }),
      );
      expect(r.problems).toContainEqual(
        expect.objectContaining({
          batch_id: 3,
          tree: "vault",
          hash: hex(right),
          problem: expect.stringMatching(/record hashes to/),
        }),
      );

      await levelDb(s.store).del(batchKey(1));
      const shallow = await checkStore(s.store, engine);
      expect(shallow.ok).toBe(false);
      expect(shallow.problems).toContainEqual(
        expect.objectContaining({ batch_id: 1, problem: "batch record missing" }),
      );
      expect(await countKeys(s.store, Prefix.batch)).toBe(3);
    } finally {
      await s.store.close();
    }
  });
});
