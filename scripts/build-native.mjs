#!/usr/bin/env node
/* global process, console */
// Builds the optional native Pedersen addon (native/binding.gyp) with the node-gyp that npm bundles.
// Run by `npm install`/`npm ci` through the "install" script. It never fails the install: if the
// toolchain, the Node headers or the compiler are missing, dacd falls back to the WASM engine, so
// this prints one line saying so and exits 0. Set DACD_SKIP_NATIVE=1 to skip the build. An addon
// already built from the current sources, for the same window width, and loadable is kept.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chooseWindowBits } from "./window-bits.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const nativeDir = path.join(root, "native");
const addon = path.join(nativeDir, "build", "Release", "pedersen.node");
const verbose = process.env.DACD_NATIVE_VERBOSE === "1";

function unavailable(reason) {
  const hint = verbose ? "" : "; DACD_NATIVE_VERBOSE=1 shows the build output";
  console.log(`dacd: native Pedersen engine unavailable (${reason}); the WASM engine will be used${hint}`);
  process.exit(0);
}

/** The node-gyp entry point: npm's own (npm passes it to scripts), else next to the npm on PATH. */
function findNodeGyp() {
  const candidates = [];
  if (process.env.npm_config_node_gyp) candidates.push(process.env.npm_config_node_gyp);
  if (process.env.npm_execpath) {
    candidates.push(
      path.join(
        path.dirname(process.env.npm_execpath),
        "..",
        "node_modules",
        "node-gyp",
        "bin",
        "node-gyp.js",
      ),
    );
  }
  const which = spawnSync(process.platform === "win32" ? "where" : "which", ["npm"], { encoding: "utf8" });
  if (which.status === 0 && which.stdout.trim()) {
    try {
      const npmBin = realpathSync(which.stdout.trim().split(/\r?\n/)[0]);
      candidates.push(
        path.join(path.dirname(npmBin), "..", "node_modules", "node-gyp", "bin", "node-gyp.js"),
      );
    } catch {
      // ignore: try the next candidate
    }
  }
  candidates.push(
    path.join(
      path.dirname(process.execPath),
      "..",
      "lib",
      "node_modules",
      "npm",
      "node_modules",
      "node-gyp",
      "bin",
      "node-gyp.js",
    ),
  );
  try {
    candidates.push(createRequire(import.meta.url).resolve("node-gyp/bin/node-gyp.js"));
  } catch {
    // not installed locally
  }
  return candidates.find((c) => existsSync(c));
}

/** Local headers so the build works offline: npm's nodedir setting, else the prefix node runs from. */
function nodeDirArgs() {
  if (process.env.npm_config_nodedir) return [`--nodedir=${process.env.npm_config_nodedir}`];
  const prefix = path.resolve(path.dirname(process.execPath), "..");
  if (existsSync(path.join(prefix, "include", "node", "node_api.h"))) return [`--nodedir=${prefix}`];
  return [];
}

/** /proc/cpuinfo, or "" where there is none (not Linux): the CPU's features decide the window width. */
function cpuinfo() {
  try {
    return readFileSync("/proc/cpuinfo", "utf8");
  } catch {
    return "";
  }
}

/**
 * Loads the addon in a child process, so a broken binary is reported here rather than at run time:
 * its kernels and window width, or null when it does not load (missing, another Node ABI, broken).
 */
function probe() {
  const child = spawnSync(
    process.execPath,
    [
      "-e",
      `const a = require(${JSON.stringify(addon)}); if (!a.kernels().length) process.exit(1); console.log(a.kernels().join(","), a.windowBits);`,
    ],
    { encoding: "utf8", timeout: 60_000 },
  );
  if (child.status !== 0) return null;
  const [kernels, windowBits] = child.stdout.trim().split(" ");
  return { kernels, windowBits: Number(windowBits) };
}

/** The newest modification time among the addon's sources: binding.gyp, native/*.{c,h}, pedersen/, trees/. */
function newestSource() {
  const dirs = ["pedersen", "trees"].map((d) => path.join(nativeDir, d));
  const files = [
    path.join(nativeDir, "binding.gyp"),
    ...readdirSync(nativeDir)
      .filter((f) => f.endsWith(".h") || f.endsWith(".c"))
      .map((f) => path.join(nativeDir, f)),
    ...dirs.flatMap((dir) => readdirSync(dir).map((f) => path.join(dir, f))),
  ];
  return Math.max(...files.map((f) => statSync(f).mtimeMs));
}

if (process.env.DACD_SKIP_NATIVE === "1") unavailable("DACD_SKIP_NATIVE=1");

const bits = chooseWindowBits(process.env.DACD_PEDERSEN_WINDOW_BITS, cpuinfo(), (m) =>
  console.log(`dacd: ${m}`),
);

// `npx dacd …` in a checkout runs this script again (npm links the package and runs its install
// script), and node-gyp's rebuild starts by deleting the addon: interrupted (Ctrl-C), it would leave
// dacd on the WASM engine. So an addon that is newer than its sources, built for this width and
// loadable, is kept; DACD_NATIVE_REBUILD=1 forces a build.
const existing =
  process.env.DACD_NATIVE_REBUILD !== "1" && existsSync(addon) && statSync(addon).mtimeMs > newestSource()
    ? probe()
    : null;
if (existing?.windowBits === bits) {
  console.log(`dacd: native Pedersen engine up to date (kernels: ${existing.kernels}; ${bits}-bit windows)`);
  process.exit(0);
}

const gyp = findNodeGyp();
if (!gyp) unavailable("node-gyp not found");
const build = spawnSync(
  process.execPath,
  [gyp, "rebuild", ...nodeDirArgs(), `--pedersen-window-bits=${bits}`],
  {
    cwd: nativeDir,
    encoding: "utf8",
    stdio: verbose ? "inherit" : "pipe",
    timeout: 10 * 60_000,
  },
);
if (build.status !== 0 || !existsSync(addon)) {
  unavailable(build.error ? build.error.message : `node-gyp exited with ${build.status ?? build.signal}`);
}
const built = probe();
if (!built) unavailable("the built addon does not load");
console.log(`dacd: native Pedersen engine built (kernels: ${built.kernels}; ${bits}-bit windows)`);
