import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The commands the shipped systemd units and the container image start dacd with, run for real
 * (`--version` in place of `run --config …`, this checkout's launcher in place of the installed
 * one), with the environment the unit or image sets: Node refuses some of its flags in
 * NODE_OPTIONS and exits before dacd runs, which no reading of the files alone would catch.
 */

const ROOT = join(import.meta.dirname, "..", "..");
const LAUNCHER = join(ROOT, "bin", "dacd.js");
const INSTALLED = "/usr/local/bin/dacd";
const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };

interface Launch {
  argv: string[];
  env: Record<string, string>;
}

/** A unit's ExecStart= as argv and its Environment= lines as variables. */
function unitLaunch(file: string): Launch {
  const text = readFileSync(join(ROOT, file), "utf8");
  const exec = /^ExecStart=(.+)$/m.exec(text)?.[1];
  if (!exec) throw new Error(`${file}: no ExecStart=`);
  const env: Record<string, string> = {};
  for (const [, value] of text.matchAll(/^Environment=(.+)$/gm)) {
    const assignment = value!.replace(/^"(.*)"$/, "$1");
    const eq = assignment.indexOf("=");
    env[assignment.slice(0, eq)] = assignment.slice(eq + 1);
  }
  return { argv: exec.split(/\s+/), env };
}

/** The image's ENTRYPOINT and the variables its ENV lines set. */
function imageLaunch(): Launch {
  const text = readFileSync(join(ROOT, "Dockerfile"), "utf8").replace(/\\\n/g, " ");
  const runtime = text.slice(text.lastIndexOf("\nFROM "));
  const entry = /^ENTRYPOINT (\[.+\])$/m.exec(runtime)?.[1];
  if (!entry) throw new Error("Dockerfile: no ENTRYPOINT in the runtime stage");
  const env: Record<string, string> = {};
  for (const [, line] of runtime.matchAll(/^ENV (.+)$/gm))
    for (const [, key, quoted, bare] of line!.matchAll(/(\w+)=(?:"([^"]*)"|(\S+))/g))
      env[key!] = quoted ?? bare!;
  return { argv: JSON.parse(entry) as string[], env };
}

/** Runs a launch with `--version` for its subcommand and its arguments. */
function runVersion({ argv, env }: Launch): { status: number | null; out: string } {
  const at = argv.indexOf("run");
  expect(at, `no "run" in ${argv.join(" ")}`).toBeGreaterThan(0);
  const args = [...argv.slice(0, at), "--version"].map((a) => (a === INSTALLED ? LAUNCHER : a));
  // `/usr/bin/env node …` and `node …` both start the node on PATH, as the unit and image do.
  const [command, ...rest] = args[0] === "/usr/bin/env" ? args.slice(1) : args;
  const result = spawnSync(command!, rest, {
    env: { PATH: process.env.PATH ?? "", ...env },
    encoding: "utf8",
    timeout: 30_000,
  });
  return { status: result.status, out: `${result.stdout}${result.stderr}` };
}

describe("the shipped launch commands start dacd", () => {
  for (const unit of ["systemd/dacd.service", "systemd/dacd@.service"]) {
    it(`${unit}'s ExecStart= with its Environment=`, () => {
      const launch = unitLaunch(unit);
      expect(launch.argv).toContain(INSTALLED);
      const { status, out } = runVersion(launch);
      expect(out).toContain(version);
      expect(status).toBe(0);
    });
  }

  it("the image's ENTRYPOINT with its ENV, and its health check's node under that ENV", () => {
    const launch = imageLaunch();
    expect(launch.argv).toContain(INSTALLED);
    const { status, out } = runVersion(launch);
    expect(out).toContain(version);
    expect(status).toBe(0);
    const health = spawnSync("node", ["-e", "process.exit(0)"], {
      env: { PATH: process.env.PATH ?? "", ...launch.env },
      encoding: "utf8",
    });
    expect(health.stderr).toBe("");
    expect(health.status).toBe(0);
  });
});
