#!/usr/bin/env node
/* global process, console */
// Part of "prepack": builds the native Pedersen addon that the package carries prebuilt, for
// linux-x64 only, into prebuilds/linux-x64/dacd_native.node (and LevelDB's binding with dacd's
// calls, into prebuilds/linux-x64/level: see the end), with the digest of the sources it was
// built from beside it (sources.sha256). dacd loads it when the install script did not run (npm's
// allowScripts, --ignore-scripts) or could not build (no compiler); the install script uses it
// instead of building when its width is the one this CPU wants. The kernels (IFMA, adx, portable)
// are chosen at run time, so one binary serves every x86-64 CPU; the window width is fixed at build
// time, and the prebuilt one has 16-bit windows (the width for CPUs without IFMA).
//
// It builds in a temporary copy of native/, so a checkout's own native/build is left alone. On any
// other platform it builds nothing and says so (the package then carries no prebuilt addon);
// DACD_SKIP_PREBUILDS=1 skips it. A failed build fails `npm pack`: a package must not lose its
// prebuilt addon silently.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  findNodeGyp,
  nodeDirArgs,
  PREBUILT_SOURCES,
  PREBUILT_WINDOW_BITS,
  prebuiltDir,
  probeAddon,
  sourcesDigest,
} from "./native-toolchain.mjs";
import { buildLevelBinding, keepAsPrebuilt, levelSources } from "./build-level.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const nativeDir = path.join(root, "native");
const platform = `${process.platform}-${process.arch}`;

rmSync(path.join(root, "prebuilds"), { recursive: true, force: true });
if (process.env.DACD_SKIP_PREBUILDS === "1") {
  console.log("dacd: prebuilt addon skipped (DACD_SKIP_PREBUILDS=1)");
  process.exit(0);
}
if (platform !== "linux-x64") {
  console.log(`dacd: no prebuilt addon for ${platform} (only linux-x64 is prebuilt)`);
  process.exit(0);
}

function fail(reason) {
  throw new Error(reason);
}

const gyp = findNodeGyp();
if (!gyp) {
  console.error("dacd: building the prebuilt addon failed: node-gyp not found");
  process.exit(1);
}
const work = mkdtempSync(path.join(tmpdir(), "dacd-prebuild-"));
try {
  cpSync(nativeDir, work, { recursive: true, filter: (src) => path.basename(src) !== "build" });
  const build = spawnSync(
    process.execPath,
    [gyp, "rebuild", ...nodeDirArgs(), `--pedersen-window-bits=${PREBUILT_WINDOW_BITS}`],
    { cwd: work, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 10 * 60_000 },
  );
  if (build.status !== 0) {
    fail(`node-gyp exited with ${build.status ?? build.signal}\n${build.stdout}${build.stderr}`);
  }
  const built = path.join(work, "build", "Release", "dacd_native.node");
  const probe = probeAddon(built);
  if (!probe || probe.windowBits !== PREBUILT_WINDOW_BITS) fail("the built addon does not load");
  const dir = prebuiltDir(root);
  mkdirSync(dir, { recursive: true });
  cpSync(built, path.join(dir, "dacd_native.node"));
  writeFileSync(path.join(dir, PREBUILT_SOURCES), sourcesDigest(nativeDir) + "\n");
  console.log(
    `dacd: prebuilt addon for ${platform} (kernels here: ${probe.kernels}; ${PREBUILT_WINDOW_BITS}-bit windows)`,
  );
} catch (err) {
  console.error(`dacd: building the prebuilt addon failed: ${err.message}`);
  process.exitCode = 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}

// LevelDB's binding with dacd's calls (scripts/build-level.mjs), for installs where the install
// script does not run or has no compiler; dacd loads it only beside the classic-level version it
// was built from (src/storage/level-binding.ts).
if (process.exitCode !== 1) {
  const levelWork = mkdtempSync(path.join(tmpdir(), "dacd-prebuild-level-"));
  try {
    const sources = levelSources();
    keepAsPrebuilt(buildLevelBinding(sources, levelWork), sources, root);
    console.log(`dacd: prebuilt LevelDB binding for ${platform} (classic-level ${sources.version})`);
  } catch (err) {
    console.error(`dacd: building the prebuilt LevelDB binding failed: ${err.message}`);
    process.exitCode = 1;
  } finally {
    rmSync(levelWork, { recursive: true, force: true });
  }
}
