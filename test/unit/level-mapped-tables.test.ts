import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ClassicLevel } from "../../src/storage/classic-level.js";
import {
  LEVELDB_MAPPED_TABLES,
  levelBindingName,
  mappedTablesInEffect,
  setMappedTables,
} from "../../src/storage/level-binding.js";
import { nativeAvailable } from "../helpers/native-required.js";

const dacdBinding = nativeAvailable("dacd's LevelDB binding", levelBindingName === "dacd");

// Each test file runs in a process of its own (vitest's forks pool), and LevelDB reads the number
// of mapped tables once per process: this file sets it before anything here opens a database.
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** The table files of `dir` this process has memory-mapped (/proc/self/maps). */
async function mappedTablesOf(dir: string): Promise<number> {
  const maps = await readFile("/proc/self/maps", "utf8");
  return new Set(maps.split("\n").filter((line) => line.includes(dir) && line.endsWith(".ldb"))).size;
}

describe.skipIf(!dacdBinding || process.platform !== "linux")(
  "the number of tables LevelDB memory-maps",
  () => {
    it("is refused when not a count, set before the first database, and fixed after it", async () => {
      expect(() => setMappedTables(-1)).toThrow(RangeError);
      expect(() => setMappedTables(1.5)).toThrow(RangeError);
      expect(mappedTablesInEffect()).toBe(LEVELDB_MAPPED_TABLES);
      expect(setMappedTables(3)).toBe("set");
      expect(mappedTablesInEffect()).toBe(3);

      const parent = await mkdtemp(join(tmpdir(), "dacd-mapped-"));
      dirs.push(parent);
      const first = new ClassicLevel<Uint8Array, Uint8Array>(join(parent, "0"), {
        keyEncoding: "view",
        valueEncoding: "view",
      });
      expect(setMappedTables(10)).toBe("too late");
      expect(setMappedTables(3)).toBe("set");
      expect(mappedTablesInEffect()).toBe(3);
      await first.close();

      // The limit is the process's, over all its databases: six stores of one table each. A store's
      // records become a table when it is opened again (LevelDB recovers its log into one).
      const stores: ClassicLevel<Uint8Array, Uint8Array>[] = [];
      for (let s = 0; s < 6; s++) {
        const dir = join(parent, String(s));
        const keys = Array.from({ length: 50 }, () => new Uint8Array(randomBytes(16)));
        const writer = new ClassicLevel<Uint8Array, Uint8Array>(dir, {
          keyEncoding: "view",
          valueEncoding: "view",
        });
        await writer.batch(keys.map((key) => ({ type: "put" as const, key, value: key })));
        await writer.close();
        const reader = new ClassicLevel<Uint8Array, Uint8Array>(dir, {
          keyEncoding: "view",
          valueEncoding: "view",
        });
        stores.push(reader);
        // Read back, which opens the table: mapped while the limit allows, else read with pread.
        const hex = (values: (Uint8Array | undefined)[]): string[] =>
          values.map((v) => Buffer.from(v ?? []).toString("hex"));
        expect(hex(await reader.getMany(keys))).toEqual(hex(keys));
      }
      const tables = (await Promise.all(stores.map((db) => readdir(db.location))))
        .flat()
        .filter((f) => f.endsWith(".ldb")).length;
      expect(tables).toBe(6);
      const mapped = await mappedTablesOf(parent);
      expect(mapped).toBe(3);
      for (const db of stores) await db.close();
    });
  },
);
