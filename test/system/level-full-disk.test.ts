import { rm } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ClassicLevel } from "../../src/storage/classic-level.js";
import { storeFailure } from "../../src/storage/store-errors.js";
import { recordPuts } from "../helpers/level-records.js";
import { fill, smallDisk } from "../helpers/small-disk.js";

// What LevelDB answers on a full disk, and what dacd makes of it (store-errors.ts): a write whose
// log append finds the disk full fails alone, and the next one succeeds once space is freed; a
// table LevelDB could not write (a flush in the background) makes it refuse every later write,
// even with space freed, until the store is reopened.

const records = (batch: number) => recordPuts(batch, 20_000);

describe("LevelDB on a full disk", () => {
  it("a failed log append is retried; a failed flush stops writes until the store is reopened", async (t) => {
    const disk = await smallDisk(24);
    if (!disk) return t.skip();
    const dir = join(disk.dir, "db");
    const open = async () => {
      const db = new ClassicLevel<Buffer, Buffer>(dir, {
        keyEncoding: "buffer",
        valueEncoding: "buffer",
        compression: false,
      });
      await db.open();
      return db;
    };
    let db = await open();
    try {
      await db.batch(records(1), { sync: true }); // in the memtable and the log only
      await fill(join(disk.dir, "filler"));

      const appendFailed = await db.batch(records(2), { sync: true }).catch((e: unknown) => e);
      expect(String(appendFailed)).toMatch(/\.log: No space left on device/);
      expect(storeFailure(appendFailed, dir)!.fatal).toBe(false);

      // The flush of batch 1's memtable to a table finds no space either.
      await db.compactRange(Buffer.alloc(1), Buffer.alloc(40, 0xff));
      await rm(join(disk.dir, "filler"));
      const stopped = await db.batch(records(3), { sync: true }).catch((e: unknown) => e);
      expect(String(stopped)).toMatch(/\.ldb: No space left on device/);
      const failure = storeFailure(stopped, dir)!;
      expect(failure.fatal).toBe(true);
      expect(failure.error.message).toMatch(/filled up while LevelDB wrote \d+\.ldb .*no more writes until/);

      // Reopened (as a restarted dacd does), the store takes writes again and kept batch 1.
      await db.close();
      db = await open();
      await db.batch(records(3), { sync: true });
      expect((await db.get(records(1)[7]!.key))?.equals(records(1)[7]!.value)).toBe(true);
      expect((await db.get(records(3)[7]!.key))?.equals(records(3)[7]!.value)).toBe(true);
    } finally {
      await db.close();
      await disk.remove();
    }
  }, 60_000);
});
