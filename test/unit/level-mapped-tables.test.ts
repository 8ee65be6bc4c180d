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
  setRandomReads,
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
/** For each table file of `dir` this process maps, whether the mapping carries the random-read advice. */
async function randomReadFlags(dir: string): Promise<boolean[]> {
  const smaps = (await readFile("/proc/self/smaps", "utf8")).split("\n");
  const flags: boolean[] = [];
  let inTable = false;
  for (const line of smaps) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inTable = line.includes(dir) && line.endsWith(".ldb");
    else if (inTable && line.startsWith("VmFlags:")) flags.push(line.split(/\s+/).includes("rr"));
  }
  return flags;
}

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
      const firstKeys: Uint8Array[] = [];
      for (let s = 0; s < 6; s++) {
        const dir = join(parent, String(s));
        const keys = Array.from({ length: 50 }, () => new Uint8Array(randomBytes(16)));
        firstKeys.push(keys[0]!);
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
        // Not into the block cache, so that the reads below read the table again.
        const hex = (values: (Uint8Array | undefined)[]): string[] =>
          values.map((v) => Buffer.from(v ?? []).toString("hex"));
        expect(hex(await reader.getMany(keys, { fillCache: false }))).toEqual(hex(keys));
      }
      const tables = (await Promise.all(stores.map((db) => readdir(db.location))))
        .flat()
        .filter((f) => f.endsWith(".ldb")).length;
      expect(tables).toBe(6);
      const mapped = await mappedTablesOf(parent);
      expect(mapped).toBe(3);

      // Read-ahead stays until setRandomReads; then each table, already open, gives it up at its
      // next read (the kernel lists the mapping's advice as "rr" among its VmFlags).
      expect(await randomReadFlags(parent)).toEqual([false, false, false]);
      expect(setRandomReads()).toBe("set");
      expect(await randomReadFlags(parent)).toEqual([false, false, false]);
      for (let s = 0; s < 6; s++)
        expect(Buffer.from((await stores[s]!.get(firstKeys[s]!))!)).toEqual(Buffer.from(firstKeys[s]!));
      expect(await randomReadFlags(parent)).toEqual([true, true, true]);
      for (const db of stores) await db.close();
    });
  },
);
