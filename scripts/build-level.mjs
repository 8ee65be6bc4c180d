#!/usr/bin/env node
/* global process, console */
// Builds classic-level's binding from the sources its package carries, changed by the unified
// diffs in native/level/*.patch (native/README.md says what each does and why: dacd's functions
// added from native/level/dacd_level.cc, no Bloom filter, memtable inserts that start where the
// last one ended, a large write's log sync beside its memtable inserts), into native/build/level.
// dacd then loads that binding instead of classic-level's prebuilt one
// (src/storage/level-binding.ts).
// Run by `npm install`/`npm ci` after build-native.mjs. A patch that does not apply says which file
// and hunk. Without a compiler, node-gyp or classic-level's sources, or with a patch that does not
// apply, dacd keeps classic-level's own binding (stock LevelDB, one put per call) and this prints
// why and exits 0; with DACD_REQUIRE_NATIVE=1 (CI) it exits 1 instead. Where the package's
// prebuilt binding (scripts/build-prebuilds.mjs) was made from the same sources, it builds nothing.
// DACD_SKIP_NATIVE=1 skips it; a binding already built from the same sources and loadable is kept
// (DACD_NATIVE_REBUILD=1 forces a build).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { applyPatch, parsePatch } from "diff";
import { findNodeGyp, nativeRequired, nodeDirArgs } from "./native-toolchain.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const levelNative = path.join(root, "native", "level");
/** The file the binding patch includes beside binding.cc: dacd's functions. */
const ADDITION = "dacd_level.cc";
/** dacd's headers the LevelDB patches include, placed beside LevelDB's db/skiplist.h. */
const LEVELDB_HEADERS = ["dacd_skiplist_finger.h", "dacd_sync_beside.h"];
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

/** Where this step stops: classic-level's own binding stays in use, unless the native code is required. */
function stock(reason) {
  if (nativeRequired()) {
    console.error(`dacd: LevelDB binding not built (${reason}), and DACD_REQUIRE_NATIVE=1 requires it`);
    process.exit(1);
  }
  const hint = verbose ? "" : "; DACD_NATIVE_VERBOSE=1 shows the build output";
  console.log(`dacd: LevelDB binding not built (${reason}); classic-level's own is used${hint}`);
  rmSync(binding, { force: true });
  process.exit(0);
}

/** The patch files, in the order they are applied (by name). */
export function patchFiles(dir = levelNative) {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".patch"))
    .sort()
    .map((f) => path.join(dir, f));
}

/** A file's path in a patch, below the package's root (`a/binding.cc` → `binding.cc`). */
function patchedPath(name) {
  return name.replace(/^[ab]\//, "");
}

/** The hunk of `filePatch` that does not apply to `text` alone, for the error (the first such). */
function failingHunk(filePatch, text) {
  const hunk = filePatch.hunks.find((h) => applyPatch(text, { ...filePatch, hunks: [h] }) === false);
  if (!hunk) return "the hunks together";
  const first = hunk.lines.find((l) => l.startsWith("-")) ?? hunk.lines[0] ?? "";
  return `hunk @@ -${hunk.oldStart},${hunk.oldLines} @@ (at ${JSON.stringify(first.slice(1).trim())})`;
}

/**
 * The files `patches` change, as path below `packageDir` → patched text. Each patch is a unified
 * diff whose paths are below classic-level's package root (a/…, b/…); its hunks must match the
 * file's lines exactly (a hunk may sit at other line numbers). Throws an Error naming the patch,
 * the file and the hunk that does not apply.
 */
export function applyPatches(packageDir, patches = patchFiles()) {
  const files = new Map();
  for (const patchFile of patches) {
    const name = path.basename(patchFile);
    const filePatches = parsePatch(readFileSync(patchFile, "utf8"));
    if (!filePatches.length || filePatches.some((p) => !p.oldFileName || !p.hunks.length))
      throw new Error(`${name} is not a unified diff`);
    for (const filePatch of filePatches) {
      const relative = patchedPath(filePatch.oldFileName);
      const target = path.join(packageDir, relative);
      if (!files.has(relative) && !existsSync(target))
        throw new Error(`${name} does not apply: classic-level has no ${relative}`);
      const text = files.get(relative) ?? readFileSync(target, "utf8");
      const patched = applyPatch(text, filePatch);
      if (patched === false)
        throw new Error(
          `${name} does not apply to ${relative}: ${failingHunk(filePatch, text)} does not match`,
        );
      files.set(relative, patched);
    }
  }
  return files;
}

/**
 * classic-level's binding.gyp with napi-macros' headers resolved from its package (npm may nest
 * napi-macros below classic-level). Its LevelDB sources stay `<(module_root_dir)/deps/`: the build
 * directory's patched copy.
 */
function patchedGyp(original, napiMacrosDir) {
  const gyp = original.replace(`"<!(node -e \\"require('napi-macros')\\")"`, JSON.stringify(napiMacrosDir));
  return gyp.includes(JSON.stringify(napiMacrosDir)) && gyp.includes("<(module_root_dir)/deps/leveldb/")
    ? gyp
    : null;
}

/** The LevelDB source directory in classic-level's deps (deps/leveldb/leveldb-<version>), below the package. */
function leveldbDir(levelDir) {
  const version = readdirSync(path.join(levelDir, "deps", "leveldb")).find((name) =>
    /^leveldb-\d/.test(name),
  );
  if (!version) throw new Error("classic-level's deps hold no leveldb-<version> directory");
  return path.join("deps", "leveldb", version);
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
 * What a build is made from, as installed here: the files of classic-level's package that dacd's
 * build writes (`files`: path below the package → text: binding.cc and LevelDB's sources as the
 * patches leave them, dacd's files they include, binding.gyp with napi-macros resolved), the
 * package's directory (`levelDir`), classic-level's `version`, and the `digest` of those sources.
 * Throws an Error saying what is missing or which patch does not apply.
 */
export function levelSources() {
  const levelDir = packageDir(root, "classic-level/package.json", "classic-level is not installed");
  const needed = ["binding.cc", "binding.gyp", "package.json"];
  if (
    !needed.every((f) => existsSync(path.join(levelDir, f))) ||
    !existsSync(path.join(levelDir, "deps", "leveldb"))
  )
    throw new Error("classic-level's package carries no sources");
  const napiMacrosDir = packageDir(levelDir, "napi-macros/napi-macros.h", "napi-macros is not installed");
  const originalGyp = readFileSync(path.join(levelDir, "binding.gyp"), "utf8");
  const gyp = patchedGyp(originalGyp, napiMacrosDir);
  if (!gyp) throw new Error("classic-level's binding.gyp is not laid out as this script expects");
  const files = applyPatches(levelDir);
  files.set("binding.gyp", gyp);
  files.set(ADDITION, readFileSync(path.join(levelNative, ADDITION), "utf8"));
  const db = path.join(leveldbDir(levelDir), "db");
  for (const header of LEVELDB_HEADERS)
    files.set(path.join(db, header), readFileSync(path.join(levelNative, header), "utf8"));
  // Node-API: one build serves every Node version, so the digest names only the sources: the
  // rest of the deps directory comes with classic-level's version, in package.json. binding.gyp
  // counts as classic-level ships it: the copy written names this host's napi-macros directory.
  const version = JSON.parse(readFileSync(path.join(levelDir, "package.json"), "utf8")).version;
  const stamp = createHash("sha256").update(`classic-level ${version}\0`);
  for (const [file, text] of [...files].sort(([a], [b]) => (a < b ? -1 : 1)))
    stamp
      .update(file)
      .update("\0")
      .update(file === "binding.gyp" ? originalGyp : text)
      .update("\0");
  return { digest: stamp.digest("hex"), files, levelDir, version };
}

/** Builds the binding from `sources` in `dir` (node-gyp's layout); returns its path. Throws why not. */
export function buildLevelBinding(sources, dir) {
  mkdirSync(dir, { recursive: true });
  rmSync(path.join(dir, STAMP), { force: true });
  const deps = path.join(dir, "deps");
  rmSync(deps, { recursive: true, force: true });
  cpSync(path.join(sources.levelDir, "deps"), deps, { recursive: true });
  for (const [file, text] of sources.files) writeFileSync(path.join(dir, file), text);
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
