/**
 * `dacd load --from-reference` against archives made to hurt it: a few kilobytes whose vaults.csv
 * decompresses to one endless line is refused within its first kilobyte with one line and a small
 * peak RSS, and an import stopped by a signal or killed leaves no `.<dir>.importing` behind (a
 * later import clears a killed one's).
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { writeEndlessLineArchive, writeManyRowsArchive } from "../helpers/bomb-archive.js";
import { BIN } from "../helpers/dacd-cli.js";
import { waitFor } from "../helpers/daemon.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";
import { FIXTURES } from "../helpers/vectors.js";

afterAll(removeTempDirs);

const PRELOAD = join(import.meta.dirname, "..", "helpers", "max-rss-on-exit.mjs");
const GOOD_ARCHIVE = join(FIXTURES, "reference-state-spot", "state.bz2");

interface Load {
  pid: number;
  kill: (signal: NodeJS.Signals) => void;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; err: string; maxRssKiB: number }>;
}

/** `dacd load --from-reference ARCHIVE --db DATA --profile spot` in a child, its peak RSS measured. */
function load(archive: string, data: string, rssFile: string): Load {
  const child = spawn(
    process.execPath,
    ["--import", PRELOAD, BIN, "load", "--from-reference", archive, "--db", data, "--profile", "spot"],
    {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, DACD_HASH_ENGINE: "wasm", TEST_MAX_RSS_FILE: rssFile },
    },
  );
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  child.stdout!.resume();
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once("exit", (code, signal) => r({ code, signal })),
  ).then(async (exit) => ({
    ...exit,
    err,
    maxRssKiB: existsSync(rssFile) ? Number(await readFile(rssFile, "utf8")) : NaN,
  }));
  return { pid: child.pid!, kill: (s) => child.kill(s), done };
}

describe("a reference archive whose vaults.csv is one endless line", () => {
  it("is refused within its first kilobyte: one line naming the file and line, low RSS, nothing left", async () => {
    const dir = await tempDir();
    const archive = join(dir, "bomb.bz2");
    // 200 × 40 MB: 8 GB of one row, from an archive of a few kilobytes.
    const size = await writeEndlessLineArchive(archive, "vaults.csv", 200);
    const parent = join(dir, "stores");
    const t0 = Date.now();
    const r = await load(archive, join(parent, "data"), join(dir, "rss")).done;
    const ms = Date.now() - t0;
    console.log(
      `endless line (${size} bytes of archive): refused in ${ms} ms, peak RSS ${(r.maxRssKiB / 1024).toFixed(0)} MiB`,
    );
    expect(r.err.trim().split("\n")).toEqual([
      "dacd: vaults.csv line 1: longer than 1024 bytes, the most a row may hold",
    ]);
    expect(r.code).toBe(2);
    expect(r.maxRssKiB).toBeLessThan(400 * 1024);
    expect(ms).toBeLessThan(15_000);
    expect(existsSync(parent) ? await readdir(parent) : []).toEqual([]);
  }, 60_000);
});

describe("an import stopped midway", () => {
  it("leaves no .importing directory when stopped by SIGTERM or SIGINT", async () => {
    const dir = await tempDir();
    const archive = join(dir, "many.bz2");
    await writeManyRowsArchive(archive, 400_000);
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      const parent = join(dir, `stores-${signal}`);
      const building = join(parent, ".data.importing");
      const run = load(archive, join(parent, "data"), join(dir, `rss-${signal}`));
      await waitFor(() => existsSync(join(building, "CURRENT")), 30_000, "the import to start");
      await new Promise((r) => setTimeout(r, 300));
      run.kill(signal);
      const r = await run.done;
      expect(r.err).toContain(`dacd: the import stopped by ${signal}; removed ${building}`);
      expect(r.code).toBe(signal === "SIGTERM" ? 143 : 130);
      expect(await readdir(parent)).toEqual([]);
    }
  }, 90_000);

  it("killed with SIGKILL, leaves a stale .importing that the next import clears", async () => {
    const dir = await tempDir();
    const archive = join(dir, "many.bz2");
    await writeManyRowsArchive(archive, 400_000);
    const parent = join(dir, "stores");
    const building = join(parent, ".data.importing");
    const run = load(archive, join(parent, "data"), join(dir, "rss"));
    await waitFor(() => existsSync(join(building, "CURRENT")), 30_000, "the import to start");
    run.kill("SIGKILL");
    await run.done;
    expect(existsSync(building)).toBe(true);
    const again = await load(GOOD_ARCHIVE, join(parent, "data"), join(dir, "rss2")).done;
    expect(again.err).toBe("");
    expect(again.code).toBe(0);
    expect(await readdir(parent)).toEqual(["data"]);
  }, 90_000);
});
