import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ClassicLevel } from "../../src/storage/classic-level.js";
import { levelBindingName } from "../../src/storage/level-binding.js";
import { recordKey, recordPuts, recordValue } from "../helpers/level-records.js";
import { fill, smallDisk } from "../helpers/small-disk.js";
import { nativeAvailable } from "../helpers/native-required.js";

const dacdBinding = nativeAvailable("dacd's LevelDB binding", levelBindingName === "dacd");

// dacd's build of LevelDB syncs a large write's log on a thread of its own while the records go
// into the memtable (native/level/dacd_sync_beside.h). Such a write must be readable once it
// returns, and, with the process killed right after, be in the store when it is opened again:
// recovered from the log.

const RECORDS = 24_000;

/** Writes two batches of RECORDS records (each over 1 MiB) with sync, reads them back, and waits to be killed. */
const writer = `
import { ClassicLevel } from "classic-level";
const key = ${recordKey.toString()};
const value = ${recordValue.toString()};
const db = new ClassicLevel(process.argv[1], { keyEncoding: "buffer", valueEncoding: "buffer" });
await db.open();
for (const batch of [1, 2]) {
  const ops = [];
  for (let i = 0; i < ${RECORDS}; i++) ops.push({ type: "put", key: key(batch, i), value: value(batch, i) });
  await db.batch(ops, { sync: true });
}
let bad = 0;
for (const batch of [1, 2])
  for (let i = 0; i < ${RECORDS}; i += 97)
    if (!value(batch, i).equals(await db.get(key(batch, i)))) bad++;
process.stdout.write("written " + bad + "\\n");
setInterval(() => {}, 1000);
`;

/** The directory node-gyp-build found this process's LevelDB binding in (dacd's build). */
function loadedBindingDir(): string | undefined {
  const line = readFileSync("/proc/self/maps", "utf8")
    .split("\n")
    .find((l) => l.endsWith("/classic_level.node"));
  // …/<dir>/build/Release/classic_level.node
  return line ? dirname(dirname(dirname(line.slice(line.indexOf("/"))))) : undefined;
}

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe.skipIf(!dacdBinding || process.platform !== "linux")(
  "large writes synced beside the memtable inserts (dacd's LevelDB)",
  () => {
    it("are read back at once, and recovered from the log after a SIGKILL", async () => {
      const dir = await mkdtemp(join(tmpdir(), "dacd-sync-beside-"));
      dirs.push(dir);
      const bindingDir = loadedBindingDir();
      expect(bindingDir).toBeDefined();
      const child = spawn(process.execPath, ["--input-type=module", "-e", writer, dir], {
        cwd: join(import.meta.dirname, "..", ".."),
        env: { ...process.env, CLASSIC_LEVEL_PREBUILD: bindingDir },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      const line = await new Promise<string>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString();
          if (out.includes("\n")) resolve(out.trim());
        });
        child.once("exit", (code) => reject(new Error(`writer exited (${code}) before writing: ${stderr}`)));
      });
      // Read back in the writing process: every sampled record, none wrong.
      expect(line).toBe("written 0");
      const gone = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await gone;

      const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: "buffer", valueEncoding: "buffer" });
      await db.open();
      try {
        let count = 0;
        let wrong = 0;
        for await (const [k, v] of db.iterator()) {
          const batch = k.readUInt32BE(1);
          const i = k.readUInt32BE(34);
          if (!k.equals(recordKey(batch, i)) || !v.equals(recordValue(batch, i))) wrong++;
          count++;
        }
        expect(wrong).toBe(0);
        expect(count).toBe(2 * RECORDS);
      } finally {
        await db.close();
      }
    }, 60_000);

    it("fail on a full disk without stopping the store: the next one succeeds once space is freed", async (t) => {
      const disk = await smallDisk(24);
      if (!disk) return t.skip();
      // A memtable that holds both writes: the disk fills up in the log's append, not in a flush
      // (where LevelDB stops taking writes until it is reopened, with or without dacd's change).
      const db = new ClassicLevel<Buffer, Buffer>(join(disk.dir, "db"), {
        keyEncoding: "buffer",
        valueEncoding: "buffer",
        writeBufferSize: 64 * 1024 * 1024,
      });
      try {
        await db.open();
        const write = (batch: number) => db.batch(recordPuts(batch, RECORDS), { sync: true });
        await write(1);
        await fill(join(disk.dir, "filler"));
        await expect(write(2)).rejects.toThrow(/No space left on device/);
        await rm(join(disk.dir, "filler"));
        await write(2);
        for (const batch of [1, 2])
          for (let i = 0; i < RECORDS; i += 97)
            expect((await db.get(recordKey(batch, i)))?.equals(recordValue(batch, i))).toBe(true);
      } finally {
        await db.close();
        await disk.remove();
      }
    }, 60_000);
  },
);
