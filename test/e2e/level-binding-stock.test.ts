import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LevelStore } from "../../src/storage/level-store.js";
import { NodeWrites } from "../../src/storage/records/node-writes.js";
import { placeholderRecord } from "../helpers/batch-record.js";
import { randomNodeWrites } from "../helpers/level-records.js";
import { nativeAvailable } from "../helpers/native-required.js";

// Each test file runs in a process of its own (vitest's forks pool), so this one loads classic-level
// with its own binding, as dacd does where the install could not build dacd's.
process.env.DACD_LEVEL_BINDING = "stock";
const binding = await import("../../src/storage/level-binding.js");
const { LevelStore: Store } = await import("../../src/storage/level-store.js");

const record = placeholderRecord(3);
const ROOT = join(import.meta.dirname, "..", "..");
const DACD_BINDING = join(ROOT, "native", "build", "level", "build", "Release", "classic_level.node");
const haveDacdBinding = nativeAvailable(
  "dacd's LevelDB binding (native/build/level)",
  existsSync(DACD_BINDING),
);

/** Runs `script` (an ES module) in a child process whose classic-level loads dacd's build or its own. */
function runWithBinding(binding: "dacd" | "stock", script: string): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    cwd: ROOT,
    env: {
      ...process.env,
      DACD_LEVEL_BINDING: undefined,
      ...(binding === "dacd" ? { CLASSIC_LEVEL_PREBUILD: dirname(dirname(dirname(DACD_BINDING))) } : {}),
    },
    encoding: "utf8",
  });
}

let dir: string;
let store: LevelStore;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "dacd-level-stock-"));
  store = await Store.open(dir);
});
afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe("classic-level's own binding (DACD_LEVEL_BINDING=stock)", () => {
  it("is the one loaded, without dacd's calls", () => {
    expect(binding.levelBindingName).toBe("classic-level");
    expect(binding.putRecordsInto).toBeUndefined();
    expect(binding.getPacked).toBeUndefined();
  });

  it("stores a batch one put per record and reads it back through getMany, missing records too", async () => {
    // More than one getMany takes (the store splits a large read into up to four).
    const { nodes, hashes, values } = randomNodeWrites(5000, (i) => 1 + (i % 90));
    await store.commitBatch(record, nodes, new NodeWrites());
    const absent = Array.from({ length: 100 }, () => new Uint8Array(randomBytes(32)));
    const asked = [...absent.slice(0, 50), ...hashes, ...absent.slice(50)];
    const got = await store.getNodes(
      asked,
      asked.map(() => 3),
    );
    expect(got.slice(0, 50).every((v) => v === undefined)).toBe(true);
    expect(got.slice(5050).every((v) => v === undefined)).toBe(true);
    got.slice(50, 5050).forEach((v, i) => expect(v).toEqual(values[i]));
    // Written by batch 3: asked under another gen, none is found.
    expect((await store.getNodes(hashes.slice(0, 10), new Array(10).fill(2))).every((v) => !v)).toBe(true);
  });

  // dacd's build writes tables without classic-level's Bloom filter (scripts/build-level.mjs); a
  // table's metaindex names its filter block, so the name is in the file where there is one.
  it.skipIf(!haveDacdBinding)(
    "writes tables without a Bloom filter, where classic-level's has one",
    async () => {
      const tableNames = async (binding: "dacd" | "stock"): Promise<string> => {
        const written = await mkdtemp(join(tmpdir(), `dacd-level-filter-${binding}-`));
        try {
          const write = `
        const { ClassicLevel } = await import("classic-level");
        const { readdirSync, readFileSync } = await import("node:fs");
        const db = new ClassicLevel(${JSON.stringify(written)}, { keyEncoding: "utf8", valueEncoding: "utf8" });
        await db.batch(Array.from({ length: 3000 }, (_, i) => ({ type: "put", key: "k" + i, value: "v" + i })));
        await db.compactRange("k", "l");
        await db.close();
        const tables = readdirSync(${JSON.stringify(written)}).filter((f) => f.endsWith(".ldb"));
        const text = tables.map((f) => readFileSync(${JSON.stringify(written)} + "/" + f, "latin1")).join("");
        console.log(tables.length + " " + (text.includes("filter.leveldb.BuiltinBloomFilter2") ? "filter" : "none"));`;
          const child = runWithBinding(binding, write);
          expect(child.stderr).toBe("");
          return child.stdout.trim();
        } finally {
          await rm(written, { recursive: true, force: true });
        }
      };
      expect(await tableNames("dacd")).toBe("1 none");
      expect(await tableNames("stock")).toBe("1 filter");
    },
  );

  // dacd's build computes LevelDB's CRC32C in hardware (native/level/dacd_level.cc); LevelDB checks
  // every logged record's checksum when it replays the log, and drops a record that fails.
  it.skipIf(!haveDacdBinding)(
    "reads a store that dacd's build wrote, its log checksums verified",
    async () => {
      const written = await mkdtemp(join(tmpdir(), "dacd-level-crc-"));
      try {
        const write = `
        const { ClassicLevel } = await import("classic-level");
        const db = new ClassicLevel(${JSON.stringify(written)}, { keyEncoding: "utf8", valueEncoding: "utf8" });
        await db.batch(Array.from({ length: 3000 }, (_, i) => ({ type: "put", key: "k" + i, value: "v".repeat(i % 200) + i })));
        await db.close();`;
        const child = runWithBinding("dacd", write);
        expect(child.stderr).toBe("");
        expect(child.status).toBe(0);
        const { ClassicLevel } = await import("../../src/storage/classic-level.js");
        const db = new ClassicLevel<string, string>(written, { keyEncoding: "utf8", valueEncoding: "utf8" });
        const keys = Array.from({ length: 3000 }, (_, i) => "k" + i);
        const values = await db.getMany(keys);
        await db.close();
        expect(values).toEqual(keys.map((_, i) => "v".repeat(i % 200) + i));
      } finally {
        await rm(written, { recursive: true, force: true });
      }
    },
  );
});
