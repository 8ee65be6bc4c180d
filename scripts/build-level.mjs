#!/usr/bin/env node
/* global process, console */
// Builds classic-level's binding from the sources its package carries, with dacd's functions
// added (native/level/dacd_level.cc: a chained batch's puts in one call, a read of many keys
// answered in one buffer, the number of memory-mapped tables, a hardware CRC32C) and without
// Bloom filters (REPLACED), into native/build/level. dacd then loads that binding instead of
// classic-level's prebuilt one (src/storage/level-binding.ts).
// Run by `npm install`/`npm ci` after build-native.mjs. It never fails the install: without a
// compiler, node-gyp or classic-level's sources, dacd keeps classic-level's own binding (the same
// LevelDB, one put per call) and this prints one line saying so. Where the package's prebuilt
// binding (scripts/build-prebuilds.mjs) was made from the same sources, it builds nothing.
// DACD_SKIP_NATIVE=1 skips it; a binding already built from the same sources and loadable is kept
// (DACD_NATIVE_REBUILD=1 forces a build).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { findNodeGyp, nodeDirArgs } from "./native-toolchain.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const addition = path.join(root, "native", "level", "dacd_level.cc");
/** The functions dacd_level.cc adds, exported beside classic-level's. */
const ADDED = ["batch_put_records", "db_get_packed", "set_mapped_tables"];
/** Where a build goes, below its work directory (node-gyp's layout, which node-gyp-build reads). */
const BINDING_IN_WORK_DIR = path.join("build", "Release", "classic_level.node");
const workDir = path.join(root, "native", "build", "level");
const binding = path.join(workDir, BINDING_IN_WORK_DIR);
/** Beside a build: the digest of the sources it was built from; beside the prebuilt one, also the version. */
const STAMP = "sources.sha256";
const VERSION_FILE = "classic-level.version";
/** The prebuilt binding the package carries for linux-x64 (scripts/build-prebuilds.mjs). */
export const PREBUILT_LEVEL_DIR = path.join("prebuilds", "linux-x64", "level");
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

/**
 * Lines of classic-level's binding.cc that dacd's build changes (each must occur exactly once):
 * - Tables are written and read without a Bloom filter. classic-level gives every store a 10-bit
 *   filter, which spares a block read when a lookup's key is in a table's key range but not in the
 *   table. dacd's tree records are keyed by the batch that wrote them, so the one table whose
 *   range holds a record's key holds the record: the filter never spares a read, yet every lookup
 *   probes it, and every table opened keeps its filter in memory. Tables written with a filter
 *   stay readable (LevelDB then ignores their filter), and those written without are readable by
 *   classic-level's own binding.
 */
const REPLACED = [["options_.filter_policy = database->filterPolicy_;", "options_.filter_policy = NULL;"]];

/**
 * classic-level's binding.cc with REPLACED applied, the additions before NAPI_INIT and their
 * exports after batch_put's; null where it is not laid out as expected.
 */
function patchedBinding(source, extra) {
  let original = source;
  for (const [from, to] of REPLACED) {
    const at = original.indexOf(from);
    if (at < 0 || original.indexOf(from, at + 1) >= 0) return null;
    original = original.slice(0, at) + to + original.slice(at + from.length);
  }
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

/** The directory of `file` as a package in `base` resolves it; throws `missing` where it does not. */
function packageDir(base, file, missing) {
  try {
    return path.dirname(createRequire(path.join(base, "package.json")).resolve(file));
  } catch {
    throw new Error(missing);
  }
}

/**
 * What a build is made from, as installed here: classic-level's binding.cc with dacd's
 * additions and its binding.gyp pointed at its package (`cc`, `gyp`), classic-level's `version`,
 * and the `digest` of those sources. Throws an Error saying what is missing.
 */
export function levelSources() {
  const levelDir = packageDir(root, "classic-level/package.json", "classic-level is not installed");
  const files = ["binding.cc", "binding.gyp", "package.json"].map((f) => path.join(levelDir, f));
  if (!files.every((f) => existsSync(f)) || !existsSync(path.join(levelDir, "deps", "leveldb")))
    throw new Error("classic-level's package carries no sources");
  const napiMacrosDir = packageDir(levelDir, "napi-macros/napi-macros.h", "napi-macros is not installed");
  // Node-API: one build serves every Node version, so the digest names only the sources.
  const stamp = createHash("sha256");
  for (const f of [...files, addition]) stamp.update(readFileSync(f)).update("\0");
  stamp.update(JSON.stringify(REPLACED));
  const cc = patchedBinding(readFileSync(files[0], "utf8"), readFileSync(addition, "utf8"));
  const gyp = patchedGyp(readFileSync(files[1], "utf8"), levelDir, napiMacrosDir);
  if (!cc || !gyp) throw new Error("classic-level's binding is not laid out as this script expects");
  const version = JSON.parse(readFileSync(files[2], "utf8")).version;
  return { digest: stamp.digest("hex"), cc, gyp, version };
}

/** Builds the binding from `sources` in `dir` (node-gyp's layout); returns its path. Throws why not. */
export function buildLevelBinding(sources, dir) {
  mkdirSync(dir, { recursive: true });
  rmSync(path.join(dir, STAMP), { force: true });
  writeFileSync(path.join(dir, "binding.cc"), sources.cc);
  writeFileSync(path.join(dir, "binding.gyp"), sources.gyp);
  const gypBin = findNodeGyp();
  if (!gypBin) throw new Error("node-gyp not found");
  const build = spawnSync(process.execPath, [gypBin, "rebuild", ...nodeDirArgs()], {
    cwd: dir,
    encoding: "utf8",
    stdio: verbose ? "inherit" : "pipe",
    timeout: 15 * 60_000,
  });
  const built = path.join(dir, BINDING_IN_WORK_DIR);
  if (build.status !== 0 || !existsSync(built))
    throw new Error(
      build.error ? build.error.message : `node-gyp exited with ${build.status ?? build.signal}`,
    );
  if (!loads(built)) throw new Error("the built binding does not load");
  writeFileSync(path.join(dir, STAMP), `${sources.digest}\n`);
  return built;
}

/** Copies a build into the prebuilt binding's place in `root`, with its digest and classic-level's version. */
export function keepAsPrebuilt(built, sources, into = root) {
  const dir = path.join(into, PREBUILT_LEVEL_DIR);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(path.dirname(path.join(dir, BINDING_IN_WORK_DIR)), { recursive: true });
  cpSync(built, path.join(dir, BINDING_IN_WORK_DIR));
  writeFileSync(path.join(dir, STAMP), `${sources.digest}\n`);
  writeFileSync(path.join(dir, VERSION_FILE), `${sources.version}\n`);
}

/** True when `dir` holds a loadable build of exactly `digest`'s sources. */
function builtFrom(dir, digest) {
  const file = path.join(dir, BINDING_IN_WORK_DIR);
  const stamp = path.join(dir, STAMP);
  return (
    existsSync(file) && existsSync(stamp) && readFileSync(stamp, "utf8").trim() === digest && loads(file)
  );
}

function main() {
  if (process.env.DACD_SKIP_NATIVE === "1") stock("DACD_SKIP_NATIVE=1");
  let sources;
  try {
    sources = levelSources();
  } catch (err) {
    stock(err.message);
  }
  const rebuild = process.env.DACD_NATIVE_REBUILD === "1";
  if (!rebuild && builtFrom(workDir, sources.digest)) {
    console.log("dacd: LevelDB binding up to date");
    return;
  }
  // The package's prebuilt binding, made from these very sources: nothing to build. A build of
  // other sources left in native/build would be loaded first, so it goes.
  if (!rebuild && builtFrom(path.join(root, PREBUILT_LEVEL_DIR), sources.digest)) {
    rmSync(binding, { force: true });
    console.log(
      `dacd: LevelDB binding: the prebuilt one (classic-level ${sources.version}, with dacd's calls)`,
    );
    return;
  }
  try {
    buildLevelBinding(sources, workDir);
  } catch (err) {
    stock(err.message);
  }
  console.log("dacd: LevelDB binding built (classic-level's, with batched puts and reads)");
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
