/* global process */
// What building and checking the native Pedersen addon needs, shared by scripts/build-native.mjs
// (the install script: this host's addon) and scripts/build-prebuilds.mjs (prepack: the addons the
// package carries): node-gyp, the Node headers, a loading check in a child process and the choice
// of a prebuilt addon.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

/**
 * True under DACD_REQUIRE_NATIVE=1 (CI sets it): a native build that cannot be made then fails the
 * install instead of leaving dacd on its fallbacks.
 */
export function nativeRequired() {
  return process.env.DACD_REQUIRE_NATIVE === "1";
}

/** The node-gyp entry point: npm's own (npm passes it to scripts), else next to the npm on PATH. */
export function findNodeGyp() {
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
export function nodeDirArgs() {
  if (process.env.npm_config_nodedir) return [`--nodedir=${process.env.npm_config_nodedir}`];
  const prefix = path.resolve(path.dirname(process.execPath), "..");
  if (existsSync(path.join(prefix, "include", "node", "node_api.h"))) return [`--nodedir=${prefix}`];
  return [];
}

/**
 * Loads the addon in a child process, so a broken binary is reported here rather than at run time:
 * its kernels and window width, or null when it does not load (missing, another Node ABI, broken).
 */
export function probeAddon(addon) {
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

/**
 * The addon's sources: native/binding.gyp and the C sources and headers in native/, native/pedersen
 * and native/trees, without native/pedersen/bench_main.c (a stand-alone benchmark the package
 * leaves out).
 */
export function nativeSources(nativeDir) {
  const dirs = ["pedersen", "trees"].map((d) => path.join(nativeDir, d));
  return [
    path.join(nativeDir, "binding.gyp"),
    ...readdirSync(nativeDir)
      .filter((f) => f.endsWith(".h") || f.endsWith(".c"))
      .map((f) => path.join(nativeDir, f)),
    ...dirs.flatMap((dir) =>
      readdirSync(dir)
        .filter((f) => (f.endsWith(".h") || f.endsWith(".c")) && f !== "bench_main.c")
        .map((f) => path.join(dir, f)),
    ),
  ];
}

/**
 * A digest of the sources an addon is compiled from (their paths below native/ and contents), so a
 * prebuilt addon is used only for the sources it was built from. File times cannot tell: npm packs
 * every file with the same time.
 */
export function sourcesDigest(nativeDir) {
  const hash = createHash("sha256");
  for (const f of nativeSources(nativeDir).sort()) {
    hash.update(path.relative(nativeDir, f).split(path.sep).join("/") + "\0");
    hash.update(readFileSync(f));
    hash.update("\0");
  }
  return hash.digest("hex");
}

/** The width of the windows the prebuilt addon is built with (the default for CPUs without IFMA). */
export const PREBUILT_WINDOW_BITS = 16;

/** Where the package keeps its prebuilt addon for this platform (prebuilds/linux-x64/, as classic-level). */
export function prebuiltDir(root) {
  return path.join(root, "prebuilds", `${process.platform}-${process.arch}`);
}

/** The file beside the prebuilt addon that holds the digest of the sources it was built from. */
export const PREBUILT_SOURCES = "sources.sha256";

/** The prebuilt addon for this platform when it was built from the sources in `root`/native, else null. */
export function matchingPrebuilt(root) {
  const p = path.join(prebuiltDir(root), "dacd_native.node");
  if (!existsSync(p)) return null;
  try {
    const stamp = readFileSync(path.join(prebuiltDir(root), PREBUILT_SOURCES), "utf8").trim();
    return stamp === sourcesDigest(path.join(root, "native")) ? p : null;
  } catch {
    return null;
  }
}
