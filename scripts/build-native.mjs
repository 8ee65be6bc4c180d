#!/usr/bin/env node
/* global process, console */
// Builds the optional native Pedersen addon (native/binding.gyp) with the node-gyp that npm bundles.
// Run by `npm install`/`npm ci` through the "install" script. If the toolchain, the Node headers or
// the compiler are missing, dacd falls back to the WASM engine, so this prints one line saying so
// and exits 0; with DACD_REQUIRE_NATIVE=1 (CI) it fails the install instead. Set
// DACD_SKIP_NATIVE=1 to skip the build. An addon
// already built from the current sources, for the same window width, and loadable is kept; so is a
// prebuilt one the package carries (prebuilds/), when it was built from these sources and loads.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  findNodeGyp,
  matchingPrebuilt,
  nativeRequired,
  nodeDirArgs,
  nativeSources,
  probeAddon,
} from "./native-toolchain.mjs";
import { chooseWindowBits } from "./window-bits.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const nativeDir = path.join(root, "native");
const addon = path.join(nativeDir, "build", "Release", "dacd_native.node");
const verbose = process.env.DACD_NATIVE_VERBOSE === "1";
const platform = `${process.platform}-${process.arch}`;

/** No addon built here: the package's prebuilt one is used where it loads, else the WASM engine. */
function unavailable(reason) {
  if (nativeRequired()) {
    console.error(`dacd: native addon not built (${reason}), and DACD_REQUIRE_NATIVE=1 requires it`);
    process.exit(1);
  }
  const hint = verbose ? "" : "; DACD_NATIVE_VERBOSE=1 shows the build output";
  const prebuilt = matchingPrebuilt(root);
  const loaded = prebuilt ? probeAddon(prebuilt) : null;
  if (loaded) {
    console.log(
      `dacd: native Pedersen addon not built here (${reason}); the prebuilt ${platform} addon will be used (kernels: ${loaded.kernels}; ${loaded.windowBits}-bit windows)${hint}`,
    );
  } else {
    console.log(`dacd: native Pedersen engine unavailable (${reason}); the WASM engine will be used${hint}`);
  }
  process.exit(0);
}

/** /proc/cpuinfo, or "" where there is none (not Linux): the CPU's features decide the window width. */
function cpuinfo() {
  try {
    return readFileSync("/proc/cpuinfo", "utf8");
  } catch {
    return "";
  }
}

/** The newest modification time among the addon's sources. */
function newestSource() {
  return Math.max(...nativeSources(nativeDir).map((f) => statSync(f).mtimeMs));
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
    ? probeAddon(addon)
    : null;
if (existing?.windowBits === bits) {
  console.log(`dacd: native Pedersen engine up to date (kernels: ${existing.kernels}; ${bits}-bit windows)`);
  process.exit(0);
}

// The package carries an addon prebuilt for linux-x64 (scripts/build-prebuilds.mjs): when it was
// built from these sources, for the width chosen here, and loads, it spares the compiler (dacd
// loads it from prebuilds/ when native/build has no addon).
const prebuilt = process.env.DACD_NATIVE_REBUILD !== "1" ? matchingPrebuilt(root) : null;
const fromPrebuilt = prebuilt ? probeAddon(prebuilt) : null;
if (fromPrebuilt?.windowBits === bits) {
  // dacd prefers native/build's addon to the prebuilt one: one left there is stale or another width.
  rmSync(addon, { force: true });
  console.log(
    `dacd: native Pedersen engine prebuilt for ${platform} (kernels: ${fromPrebuilt.kernels}; ${bits}-bit windows)`,
  );
  process.exit(0);
}

const gyp = findNodeGyp();
if (!gyp) unavailable("node-gyp not found");
// node-gyp's rebuild starts by deleting native/build, where build-level.mjs keeps the LevelDB
// binding's build too: that is set aside meanwhile, so a new addon does not cost a LevelDB build.
const levelBuild = path.join(nativeDir, "build", "level");
const levelAside = path.join(nativeDir, "level-build.aside");
rmSync(levelAside, { recursive: true, force: true });
if (existsSync(levelBuild)) renameSync(levelBuild, levelAside);
let build;
try {
  build = spawnSync(process.execPath, [gyp, "rebuild", ...nodeDirArgs(), `--pedersen-window-bits=${bits}`], {
    cwd: nativeDir,
    encoding: "utf8",
    stdio: verbose ? "inherit" : "pipe",
    timeout: 10 * 60_000,
  });
} finally {
  if (existsSync(levelAside)) {
    mkdirSync(path.dirname(levelBuild), { recursive: true });
    rmSync(levelBuild, { recursive: true, force: true });
    renameSync(levelAside, levelBuild);
  }
}
if (build.status !== 0 || !existsSync(addon)) {
  unavailable(build.error ? build.error.message : `node-gyp exited with ${build.status ?? build.signal}`);
}
const built = probeAddon(addon);
if (!built) unavailable("the built addon does not load");
console.log(`dacd: native Pedersen engine built (kernels: ${built.kernels}; ${bits}-bit windows)`);
