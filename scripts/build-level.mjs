#!/usr/bin/env node
/* global process, console */
// Builds classic-level's binding from the sources its package carries, with two functions added
// (native/level/dacd_level.cc: a chained batch's puts in one call, and a read of many keys answered
// in one buffer), into native/build/level. dacd then loads that binding instead of classic-level's
// prebuilt one (src/storage/level-binding.ts).
// Run by `npm install`/`npm ci` after build-native.mjs. It never fails the install: without a
// compiler, node-gyp or classic-level's sources, dacd keeps classic-level's own binding (the same
// LevelDB, one put per call) and this prints one line saying so. DACD_SKIP_NATIVE=1 skips it; a
// binding already built from the same sources and loadable is kept (DACD_NATIVE_REBUILD=1 forces).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { findNodeGyp, nodeDirArgs } from "./native-toolchain.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const addition = path.join(root, "native", "level", "dacd_level.cc");
/** The functions dacd_level.cc adds, exported beside classic-level's. */
const ADDED = ["batch_put_records", "db_get_packed", "set_mapped_tables"];
const workDir = path.join(root, "native", "build", "level");
const binding = path.join(workDir, "build", "Release", "classic_level.node");
const stampFile = path.join(workDir, "sources.sha256");
const verbose = process.env.DACD_NATIVE_VERBOSE === "1";

/** Where this step stops: classic-level's own binding stays in use. */
function stock(reason) {
  const hint = verbose ? "" : "; DACD_NATIVE_VERBOSE=1 shows the build output";
  console.log(`dacd: LevelDB binding not built (${reason}); classic-level's own is used${hint}`);
  rmSync(binding, { force: true });
  process.exit(0);
}

/** The text between which the addition and its export go in classic-level's binding.cc. */
const INIT = "NAPI_INIT() {";
const EXPORT_AFTER = "NAPI_EXPORT_FUNCTION(batch_put);";

/** classic-level's binding.cc with the additions before NAPI_INIT and their exports after batch_put's. */
function patchedBinding(original, extra) {
  const init = original.indexOf(INIT);
  const exportAt = original.indexOf(EXPORT_AFTER);
  if (init < 0 || exportAt < init) return null;
  const afterExport = exportAt + EXPORT_AFTER.length;
  return (
    original.slice(0, init) +
    extra +
    original.slice(init, afterExport) +
    ADDED.map((name) => `\n  NAPI_EXPORT_FUNCTION(${name});`).join("") +
    original.slice(afterExport)
  );
}

/**
 * classic-level's binding.gyp, pointed at its package: its LevelDB sources by absolute path, and
 * napi-macros' headers resolved from it (npm may nest napi-macros below classic-level).
 */
function patchedGyp(original, levelDir, napiMacrosDir) {
  const gyp = original
    .replace("<(module_root_dir)/deps/", `${levelDir.split(path.sep).join("/")}/deps/`)
    .replace(`"<!(node -e \\"require('napi-macros')\\")"`, JSON.stringify(napiMacrosDir));
  return gyp.includes(levelDir.split(path.sep).join("/")) && gyp.includes(JSON.stringify(napiMacrosDir))
    ? gyp
    : null;
}

/** Loads the built binding in a child and checks the additions are there: true when they are. */
function loads(file) {
  const check = `const b = require(${JSON.stringify(file)}); process.exit(${JSON.stringify(ADDED)}.every((f) => typeof b[f] === "function") ? 0 : 1)`;
  const child = spawnSync(process.execPath, ["-e", check], { encoding: "utf8", timeout: 60_000 });
  return child.status === 0;
}

function main() {
  if (process.env.DACD_SKIP_NATIVE === "1") stock("DACD_SKIP_NATIVE=1");
  let levelDir;
  try {
    levelDir = path.dirname(
      createRequire(path.join(root, "package.json")).resolve("classic-level/package.json"),
    );
  } catch {
    stock("classic-level is not installed");
  }
  const sources = ["binding.cc", "binding.gyp", "package.json"].map((f) => path.join(levelDir, f));
  if (!sources.every((f) => existsSync(f)) || !existsSync(path.join(levelDir, "deps", "leveldb")))
    stock("classic-level's package carries no sources");
  let napiMacrosDir;
  try {
    napiMacrosDir = path.dirname(
      createRequire(path.join(levelDir, "package.json")).resolve("napi-macros/napi-macros.h"),
    );
  } catch {
    stock("napi-macros is not installed");
  }

  const stamp = createHash("sha256");
  for (const f of [...sources, addition]) stamp.update(readFileSync(f)).update("\0");
  stamp.update(process.versions.modules);
  const digest = stamp.digest("hex");
  if (
    process.env.DACD_NATIVE_REBUILD !== "1" &&
    existsSync(binding) &&
    existsSync(stampFile) &&
    readFileSync(stampFile, "utf8").trim() === digest &&
    loads(binding)
  ) {
    console.log("dacd: LevelDB binding up to date");
    return;
  }

  const cc = patchedBinding(readFileSync(sources[0], "utf8"), readFileSync(addition, "utf8"));
  const gyp = patchedGyp(readFileSync(sources[1], "utf8"), levelDir, napiMacrosDir);
  if (!cc || !gyp) stock("classic-level's binding is not laid out as this script expects");
  mkdirSync(workDir, { recursive: true });
  rmSync(stampFile, { force: true });
  writeFileSync(path.join(workDir, "binding.cc"), cc);
  writeFileSync(path.join(workDir, "binding.gyp"), gyp);

  const gypBin = findNodeGyp();
  if (!gypBin) stock("node-gyp not found");
  const build = spawnSync(process.execPath, [gypBin, "rebuild", ...nodeDirArgs()], {
    cwd: workDir,
    encoding: "utf8",
    stdio: verbose ? "inherit" : "pipe",
    timeout: 15 * 60_000,
  });
  if (build.status !== 0 || !existsSync(binding))
    stock(build.error ? build.error.message : `node-gyp exited with ${build.status ?? build.signal}`);
  if (!loads(binding)) stock("the built binding does not load");
  writeFileSync(stampFile, `${digest}\n`);
  console.log("dacd: LevelDB binding built (classic-level's, with batched puts and reads)");
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
