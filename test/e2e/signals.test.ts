import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, openSync, closeSync, readFileSync, statSync } from "node:fs";
import { chmod, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { memberSetup, waitFor } from "../helpers/daemon.js";
import { VectorGateway } from "../helpers/vector-gateway.js";
import { loadChain } from "../helpers/vectors.js";

const BIN = join(import.meta.dirname, "..", "..", "bin", "dacd.js");
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(extra = "") {
  const { responses, expected } = loadChain("spot-chain");
  const gw = await new VectorGateway(responses, expected, "G").start();
  cleanups.push(() => gw.close());
  const s = await memberSetup({
    profile: "spot",
    privateKey: expected.private_key,
    gatewayUrl: gw.url,
    feeder: true,
    extra,
  });
  cleanups.push(() => rm(s.dir, { recursive: true, force: true }));
  return { gw, expected, ...s };
}

/**
 * A stand-in for systemd-notify that takes 3 s to deliver STOPPING=1, so that the shutdown lasts
 * long enough for a second and a third signal to arrive while it runs (dacd awaits the
 * notification before it closes anything).
 */
async function slowNotifyEnv(dir: string): Promise<NodeJS.ProcessEnv> {
  const bin = join(dir, "bin");
  await mkdir(bin);
  const script = join(bin, "systemd-notify");
  await writeFile(script, '#!/bin/sh\ncase "$*" in *STOPPING=1*) sleep 3;; esac\nexit 0\n');
  await chmod(script, 0o755);
  // exec: the stand-in, not the addon's own sender, delivers the notifications.
  return {
    NOTIFY_SOCKET: join(dir, "notify.sock"),
    PATH: `${bin}:${process.env.PATH ?? ""}`,
    DACD_SYSTEMD_NOTIFY: "exec",
  };
}

function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("DACD_")) env[k] = v;
  return { ...env, DACD_HASH_ENGINE: "wasm", ...extra };
}

function start(args: string[], env: NodeJS.ProcessEnv = {}): { child: ChildProcess; out: () => string } {
  const child = spawn(process.execPath, [BIN, ...args], { env: cleanEnv(env) });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
    }
  });
  return { child, out: () => out };
}

const exitOf = (child: ChildProcess): Promise<number | null> =>
  new Promise((r) => (child.exitCode !== null ? r(child.exitCode) : child.once("exit", (code) => r(code))));

const logLines = (out: string): Record<string, unknown>[] =>
  out
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe("dacd run and signals", () => {
  it("SIGHUP re-reads the configuration and the daemon keeps running; a second SIGINT is logged and the shutdown finishes; the socket is removed", async () => {
    const { gw, expected, dir, configPath, config } = await setup();
    gw.available = 3; // the rest after the SIGHUP, to be verified at debug level
    const { child, out } = start(["run", "--config", configPath], await slowNotifyEnv(dir));
    await waitFor(() => gw.accepted.length === 3, 60_000, "three signed");
    // The gateway counts a signature before the daemon logs it: wait for batch 2's line, so that
    // its per-tree detail was decided at info level, before the SIGHUP below.
    await waitFor(
      () => logLines(out()).some((l) => l.msg === "batch signed" && l.batch_id === 2),
      20_000,
      "batch 2 logged",
    );
    const socket = join(config.dataDir, "dacd.sock");
    expect(existsSync(socket)).toBe(true);
    expect(logLines(out()).some((l) => l.level === "debug")).toBe(false);

    // Levels are names; the start-up line names version, commit, Node, engine and tree walk.
    const started = logLines(out()).find((l) => l.msg === "dacd started")!;
    expect(started).toMatchObject({ level: "info", node: process.version, engine: "wasm" });
    expect(started.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(started.commit).toMatch(/^([0-9a-f]{40}|unknown)$/);
    expect(["native", "js"]).toContain(started.tree_walk);

    // log_level: debug in the file takes effect on SIGHUP; another key is reported for a restart.
    await writeFile(
      configPath,
      (await readFile(configPath, "utf8")) + "log_level: debug\nmax_ready_lag: 7\n",
    );
    child.kill("SIGHUP");
    await waitFor(() => out().includes("configuration re-read"), 20_000, "reload logged");
    const reload = logLines(out()).find((l) => String(l.msg).startsWith("configuration re-read"))!;
    expect(reload).toMatchObject({
      level: "info",
      applied: ["log_level"],
      restart_needed: ["max_ready_lag"],
    });
    // An invalid file on SIGHUP is an error in the log; the daemon keeps its configuration.
    await writeFile(configPath, "profile: nonsense\n");
    child.kill("SIGHUP");
    await waitFor(() => out().includes("configuration not reloaded"), 20_000, "bad reload logged");
    await new Promise((r) => setTimeout(r, 500));
    expect(child.exitCode).toBe(null);
    expect(child.signalCode).toBe(null);
    // At debug level each batch has its per-tree detail.
    gw.available = expected.batches.length;
    await waitFor(() => gw.accepted.length === expected.batches.length, 60_000, "all signed");
    await waitFor(
      () => logLines(out()).filter((l) => l.msg === "batch trees").length === 3,
      20_000,
      "per-tree detail of batches 3 to 5",
    );
    const trees = logLines(out()).filter((l) => l.msg === "batch trees");
    expect(trees.map((l) => l.batch_id)).toEqual([3, 4, 5]);
    for (const l of trees) {
      for (const name of ["vault", "order", "rollup_vault"]) {
        expect((l.trees as Record<string, unknown>)[name], `batch ${String(l.batch_id)} ${name}`).toEqual({
          leaves: expect.any(Number),
          nodes_read: expect.any(Number),
          nodes_written: expect.any(Number),
          ms: expect.any(Number),
        });
      }
    }

    child.kill("SIGINT");
    await waitFor(() => out().includes('"msg":"stopping"'), 10_000, "stopping");
    child.kill("SIGINT");
    expect(await exitOf(child)).toBe(0);
    const lines = logLines(out());
    expect(lines.find((l) => String(l.msg).startsWith("already stopping"))).toMatchObject({
      level: "warn",
      signal: "SIGINT",
    });
    expect(lines.at(-1)).toMatchObject({ msg: "dacd stopped" });
    expect(existsSync(socket)).toBe(false);
  }, 180_000);

  it("a third SIGINT exits at once (130), and the control socket is removed on that path too", async () => {
    const { gw, expected, dir, configPath, config } = await setup();
    const { child, out } = start(["run", "--config", configPath], await slowNotifyEnv(dir));
    await waitFor(() => gw.accepted.length === expected.batches.length, 60_000, "all signed");
    const socket = join(config.dataDir, "dacd.sock");
    expect(existsSync(socket)).toBe(true);
    child.kill("SIGINT");
    await waitFor(() => out().includes('"msg":"stopping"'), 10_000, "stopping");
    child.kill("SIGINT");
    await waitFor(() => out().includes("already stopping"), 10_000, "second logged");
    child.kill("SIGINT");
    expect(await exitOf(child)).toBe(130);
    expect(out()).toContain("exiting at once");
    expect(out()).not.toContain("dacd stopped");
    expect(existsSync(socket)).toBe(false);
  }, 180_000);

  it("a metrics port in use is one line and exit 78 before anything is signed", async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
    cleanups.push(() => new Promise((r) => blocker.close(() => r())));
    const port = (blocker.address() as { port: number }).port;
    const { gw, configPath, config } = await setup(`metrics_port: ${port}\n`);
    const { child, out } = start(["run", "--config", configPath]);
    expect(await exitOf(child)).toBe(78);
    expect(out().trim().split("\n")).toHaveLength(1);
    expect(out()).toMatch(
      new RegExp(`^dacd: cannot listen on metrics_host 127\\.0\\.0\\.1 metrics_port ${port}: EADDRINUSE`),
    );
    expect(gw.posts).toHaveLength(0);
    expect(existsSync(join(config.dataDir, "dacd.sock"))).toBe(false);
  }, 60_000);

  it("under systemd's journal (JOURNAL_STREAM names stdout) each line carries its syslog priority", async () => {
    const { gw, expected, dir, configPath } = await setup();
    const logFile = join(dir, "journal.log");
    const fd = openSync(logFile, "w");
    const st = statSync(logFile);
    const child = spawn(process.execPath, [BIN, "run", "--config", configPath], {
      env: cleanEnv({ JOURNAL_STREAM: `${st.dev}:${st.ino}` }),
      stdio: ["ignore", fd, fd],
    });
    closeSync(fd);
    cleanups.push(async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGKILL");
        await new Promise((r) => child.once("exit", r));
      }
    });
    await waitFor(() => gw.accepted.length === expected.batches.length, 60_000, "all signed");
    child.kill("SIGTERM");
    expect(await exitOf(child)).toBe(0);
    const lines = readFileSync(logFile, "utf8").trim().split("\n");
    expect(lines.length).toBeGreaterThan(5);
    for (const line of lines) {
      const m = /^<(\d)>(\{.*\})$/.exec(line);
      expect(m, line).not.toBeNull();
      const level = (JSON.parse(m![2]!) as { level: string }).level;
      expect(Number(m![1])).toBe({ fatal: 2, error: 3, warn: 4, info: 6, debug: 7, trace: 7 }[level]);
    }
    expect(lines.some((l) => l.startsWith('<6>{"level":"info"') && l.includes('"msg":"batch signed"'))).toBe(
      true,
    );
  }, 120_000);
});
