#!/usr/bin/env node
/* global process, console */
// Builds classic-level's binding from the sources its package carries, with dacd's functions
// added (native/level/dacd_level.cc: a chained batch's puts in one call, a read of many keys
// answered in one buffer, the number of memory-mapped tables, a hardware CRC32C), without Bloom
// filters (REPLACED), with memtable inserts in key order that start where the last one ended and
// a large write's log sync beside its memtable inserts (LEVELDB_PATCHES, in a copy of LevelDB's
// sources), into native/build/level. dacd then loads that binding instead of classic-level's
// prebuilt one (src/storage/level-binding.ts).
// Run by `npm install`/`npm ci` after build-native.mjs. It never fails the install: without a
// compiler, node-gyp or classic-level's sources, dacd keeps classic-level's own binding (the same
// LevelDB, one put per call) and this prints one line saying so. Where the package's prebuilt
// binding (scripts/build-prebuilds.mjs) was made from the same sources, it builds nothing.
// DACD_SKIP_NATIVE=1 skips it; a binding already built from the same sources and loadable is kept
// (DACD_NATIVE_REBUILD=1 forces a build).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { findNodeGyp, nodeDirArgs } from "./native-toolchain.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const addition = path.join(root, "native", "level", "dacd_level.cc");
/** dacd's code included into LevelDB's SkipList class and its DBImpl (LEVELDB_PATCHES). */
const skiplistFinger = path.join(root, "native", "level", "dacd_skiplist_finger.h");
const syncBeside = path.join(root, "native", "level", "dacd_sync_beside.h");
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
 * Changes to LevelDB's own sources, made in a copy of classic-level's deps beside the build, as
 * [file, from, to] (each `from` must occur exactly once in its file):
 * - The memtable's skip list keeps a finger on its last insert, and an insert after it searches
 *   from there (native/level/dacd_skiplist_finger.h says why, and why it finds the same nodes).
 * - A large synced write's log is synced on a thread of its own while its records go into the
 *   memtable (native/level/dacd_sync_beside.h says why, and why nothing is read before it is
 *   synced).
 */
const LEVELDB_PATCHES = [
  [
    "db/skiplist.h",
    "  Node* FindLast() const;\n",
    '  Node* FindLast() const;\n\n#include "db/dacd_skiplist_finger.h"\n',
  ],
  ["db/skiplist.h", "      rnd_(0xdeadbeef) {", "      rnd_(0xdeadbeef),\n      dacd_last_(NULL) {"],
  [
    "db/skiplist.h",
    "    head_->SetNext(i, NULL);",
    "    head_->SetNext(i, NULL);\n    dacd_finger_[i] = head_;",
  ],
  [
    "db/skiplist.h",
    "  Node* x = FindGreaterOrEqual(key, prev);",
    "  Node* x = DacdFindGreaterOrEqual(key, prev);",
  ],
  [
    "db/skiplist.h",
    "    prev[i]->SetNext(i, x);\n  }\n",
    "    prev[i]->SetNext(i, x);\n  }\n  DacdMoveFinger(x, height, prev);\n",
  ],
  [
    "db/db_impl.cc",
    '#include "util/mutexlock.h"\n',
    '#include "util/mutexlock.h"\n#include "db/dacd_sync_beside.h"\n',
  ],
  [
    "db/db_impl.cc",
    "    // Add to log and apply to memtable.",
    "    bool dacd_unpublished = false;\n    // Add to log and apply to memtable.",
  ],
  [
    "db/db_impl.cc",
    "      bool sync_error = false;\n",
    [
      "      bool sync_error = false;",
      "      dacd::SyncBeside dacd_sync = {logfile_, Status()};",
      "      pthread_t dacd_syncer;",
      "      if (status.ok() && options.sync &&",
      "          dacd::StartSyncBeside(&dacd_sync, WriteBatchInternal::ByteSize(updates), &dacd_syncer)) {",
      "        status = WriteBatchInternal::InsertInto(updates, mem_);",
      "        pthread_join(dacd_syncer, NULL);",
      "        if (!dacd_sync.status.ok()) {",
      "          status = dacd_sync.status;",
      "          sync_error = true;",
      "          dacd_unpublished = true;",
      "        }",
      "      } else {",
      "",
    ].join("\n"),
  ],
  [
    "db/db_impl.cc",
    "        status = WriteBatchInternal::InsertInto(updates, mem_);\n      }\n      mutex_.Lock();",
    "        status = WriteBatchInternal::InsertInto(updates, mem_);\n      }\n      }\n      mutex_.Lock();",
  ],
  [
    "db/db_impl.cc",
    "    if (updates == tmp_batch_) tmp_batch_->Clear();\n\n    versions_->SetLastSequence(last_sequence);",
    "    if (updates == tmp_batch_) tmp_batch_->Clear();\n\n    if (!dacd_unpublished) versions_->SetLastSequence(last_sequence);",
  ],
];

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
 * classic-level's binding.gyp with napi-macros' headers resolved from its package (npm may nest
 * napi-macros below classic-level). Its LevelDB sources stay `<(module_root_dir)/deps/`: the build
 * directory's patched copy (patchedDeps).
 */
function patchedGyp(original, napiMacrosDir) {
  const gyp = original.replace(`"<!(node -e \\"require('napi-macros')\\")"`, JSON.stringify(napiMacrosDir));
  return gyp.includes(JSON.stringify(napiMacrosDir)) && gyp.includes("<(module_root_dir)/deps/leveldb/")
    ? gyp
    : null;
}

/**
 * The files of classic-level's deps directory that dacd's build changes, as path (relative to
 * it) → text: those LEVELDB_PATCHES changes, patched, and dacd's header beside skiplist.h. Null
 * where a file is not laid out as expected.
 */
function patchedDeps(depsDir) {
  const version = readdirSync(path.join(depsDir, "leveldb")).find((name) => /^leveldb-\d/.test(name));
  if (!version) return null;
  const files = new Map();
  for (const [file, from, to] of LEVELDB_PATCHES) {
    const relative = path.join("leveldb", version, file);
    const source = files.get(relative) ?? readFileSync(path.join(depsDir, relative), "utf8");
    const at = source.indexOf(from);
    if (at < 0 || source.indexOf(from, at + 1) >= 0) return null;
    files.set(relative, source.slice(0, at) + to + source.slice(at + from.length));
  }
  for (const header of [skiplistFinger, syncBeside])
    files.set(path.join("leveldb", version, "db", path.basename(header)), readFileSync(header, "utf8"));
  return files;
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
 * additions and its binding.gyp (`cc`, `gyp`), its deps directory (`depsDir`) and the files of it
 * dacd's build changes (`deps`, patchedDeps), classic-level's `version`, and the `digest` of those
 * sources. Throws an Error saying what is missing.
 */
export function levelSources() {
  const levelDir = packageDir(root, "classic-level/package.json", "classic-level is not installed");
  const files = ["binding.cc", "binding.gyp", "package.json"].map((f) => path.join(levelDir, f));
  const depsDir = path.join(levelDir, "deps");
  if (!files.every((f) => existsSync(f)) || !existsSync(path.join(depsDir, "leveldb")))
    throw new Error("classic-level's package carries no sources");
  const napiMacrosDir = packageDir(levelDir, "napi-macros/napi-macros.h", "napi-macros is not installed");
  const cc = patchedBinding(readFileSync(files[0], "utf8"), readFileSync(addition, "utf8"));
  const gyp = patchedGyp(readFileSync(files[1], "utf8"), napiMacrosDir);
  const deps = patchedDeps(depsDir);
  if (!cc || !gyp || !deps)
    throw new Error("classic-level's sources are not laid out as this script expects");
  // Node-API: one build serves every Node version, so the digest names only the sources: the
  // rest of the deps directory comes with classic-level's version, in package.json.
  const stamp = createHash("sha256");
  for (const f of [...files, addition]) stamp.update(readFileSync(f)).update("\0");
  stamp.update(JSON.stringify(REPLACED));
  for (const [file, text] of deps) stamp.update(file).update("\0").update(text).update("\0");
  const version = JSON.parse(readFileSync(files[2], "utf8")).version;
  return { digest: stamp.digest("hex"), cc, gyp, depsDir, deps, version };
}

/** Builds the binding from `sources` in `dir` (node-gyp's layout); returns its path. Throws why not. */
export function buildLevelBinding(sources, dir) {
  mkdirSync(dir, { recursive: true });
  rmSync(path.join(dir, STAMP), { force: true });
  writeFileSync(path.join(dir, "binding.cc"), sources.cc);
  writeFileSync(path.join(dir, "binding.gyp"), sources.gyp);
  const deps = path.join(dir, "deps");
  rmSync(deps, { recursive: true, force: true });
  cpSync(sources.depsDir, deps, { recursive: true });
  for (const [file, text] of sources.deps) writeFileSync(path.join(deps, file), text);
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
