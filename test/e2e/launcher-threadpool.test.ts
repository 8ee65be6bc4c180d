import { spawn } from "node:child_process";
import { execFileSync } from "node:child_process";
import { closeSync, constants, openSync } from "node:fs";
import { copyFile, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DACD_THREADPOOL_SIZE, threadpoolSize } from "../../src/util/threadpool.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

const BIN_DIR = join(import.meta.dirname, "..", "..", "bin");
/** Threads the probe keeps busy: more than libuv's default pool, fewer than dacd's. */
const BLOCKED = 8;

afterAll(removeTempDirs);

/**
 * The launcher, copied beside a probe in the place of the CLI: the probe opens BLOCKED FIFOs for
 * reading (each open waits for a writer, holding one of libuv's threads), then asks for one stat.
 * The stat is answered only if the pool has a thread to spare. The test then opens every FIFO
 * itself, read-write, which lets each waiting open through so that the probe can exit.
 */
async function probeThreadpool(env: NodeJS.ProcessEnv): Promise<{ spare: boolean; size: string }> {
  const dir = await tempDir("dacd-launcher-");
  await mkdir(join(dir, "bin"));
  await mkdir(join(dir, "dist", "src", "cli"), { recursive: true });
  await copyFile(join(BIN_DIR, "dacd.js"), join(dir, "bin", "dacd.js"));
  await copyFile(join(BIN_DIR, "package.json"), join(dir, "bin", "package.json"));
  const fifos = Array.from({ length: BLOCKED }, (_, i) => join(dir, `fifo${i}`));
  execFileSync("mkfifo", fifos);
  await writeFile(
    join(dir, "dist", "src", "cli", "main.js"),
    `import { open, stat } from "node:fs";
const fifos = ${JSON.stringify(fifos)};
for (const f of fifos) open(f, "r", () => {});
const say = (spare) => { console.log(JSON.stringify({ spare, size: process.env.UV_THREADPOOL_SIZE ?? "" })); clearTimeout(timer); };
const timer = setTimeout(() => say(false), 2000);
stat(${JSON.stringify(dir)}, () => say(true));
`,
  );
  const child = spawn(process.execPath, [join(dir, "bin", "dacd.js")], {
    env,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const line = await new Promise<string>((resolve) => {
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("\n")) resolve(out.trim());
    });
  });
  const fds = fifos.map((f) => openSync(f, constants.O_RDWR));
  await new Promise((resolve) => child.on("exit", resolve));
  for (const fd of fds) closeSync(fd);
  return JSON.parse(line) as { spare: boolean; size: string };
}

const envWithout = (): NodeJS.ProcessEnv => {
  const env = { ...process.env };
  delete env.UV_THREADPOOL_SIZE;
  return env;
};

describe("bin/dacd.js sizes libuv's threadpool before it starts", () => {
  it(`gives the pool ${DACD_THREADPOOL_SIZE} threads when UV_THREADPOOL_SIZE is not set`, async () => {
    const launcher = await readFile(join(BIN_DIR, "dacd.js"), "utf8");
    expect(launcher).toContain(`process.env.UV_THREADPOOL_SIZE ??= "${DACD_THREADPOOL_SIZE}";`);
    expect(DACD_THREADPOOL_SIZE).toBeGreaterThan(BLOCKED);
    expect(await probeThreadpool(envWithout())).toEqual({ spare: true, size: String(DACD_THREADPOOL_SIZE) });
  }, 30_000);

  it("keeps the operator's UV_THREADPOOL_SIZE: with 4, eight waiting opens leave no thread", async () => {
    expect(await probeThreadpool({ ...envWithout(), UV_THREADPOOL_SIZE: "4" })).toEqual({
      spare: false,
      size: "4",
    });
  }, 30_000);
});

describe("threadpoolSize reads UV_THREADPOOL_SIZE as libuv does", () => {
  it.each([
    [undefined, 4],
    ["16", 16],
    ["1", 1],
    ["0", 1],
    ["", 1],
    ["x", 1],
    ["2000", 1024],
    ["-2", 1024],
  ])("%j → %i", (value, size) => {
    expect(threadpoolSize(value === undefined ? {} : { UV_THREADPOOL_SIZE: value })).toBe(size);
  });
});
