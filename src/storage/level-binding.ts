import { existsSync, readFileSync } from "node:fs";
import { createRequire, Module } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { runtimeSettings } from "../config/runtime-settings.js";
import type { PackedRecords } from "./records/node-source.js";

/**
 * Which binding classic-level loads: dacd's build of it (scripts/build-level.mjs: classic-level's
 * own sources with batch_put_records, db_get_packed and set_mapped_tables added, in
 * native/build/level) where the install built one, else classic-level's prebuilt binding. Both
 * hold LevelDB 1.20, dacd's with the changes native/README.md lists (the files they write are the
 * same); dacd's puts a batch's records in one call instead of one call per record,
 * answers a read of many keys in one buffer instead of a Buffer per record, and can bound the
 * tables LevelDB memory-maps. `DACD_LEVEL_BINDING=stock` keeps classic-level's.
 *
 * classic-level loads its binding through its binding.js (node-gyp-build) when it is first
 * imported. This module loads dacd's build itself and files it in node's module cache as that
 * binding.js, so classic-level's require finds it there; the environment is left as it is (a
 * `$CLASSIC_LEVEL_PREBUILD` set by the operator still steers node-gyp-build). classic-level.ts, the
 * one module that imports classic-level, imports this module first.
 */
const BINDING_IN_DIR = path.join("build", "Release", "classic_level.node");
const LOCAL_BUILD = path.join("native", "build", "level");
/** The package's prebuilt binding (scripts/build-prebuilds.mjs), beside the version it was made from. */
const PREBUILT = path.join("prebuilds", "linux-x64", "level");
const PREBUILT_VERSION = "classic-level.version";
/** node-gyp-build's override of where classic-level's binding is, which an operator may set. */
const PREBUILD_OVERRIDE = "CLASSIC_LEVEL_PREBUILD";

/** A file's text, trimmed, or undefined where it cannot be read. */
function readTrimmed(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8").trim();
  } catch {
    return undefined;
  }
}

/** The version of the classic-level this module imports, or undefined if it cannot be read. */
function classicLevelVersion(): string | undefined {
  try {
    return (createRequire(import.meta.url)("classic-level/package.json") as { version?: string }).version;
  } catch {
    return undefined;
  }
}

/**
 * The directory node-gyp-build is to look in for dacd's build, or undefined (none, or not wanted):
 * the install's own build first, else the package's prebuilt one (linux-x64), which is taken only
 * beside the classic-level version it was built from, since classic-level's JavaScript calls it.
 */
function dacdBuildDir(): string | undefined {
  const settings = runtimeSettings();
  if (settings.levelBinding === "stock" || settings.environment[PREBUILD_OVERRIDE] !== undefined)
    return undefined;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(path.join(dir, "package.json"))) {
      const local = path.join(dir, LOCAL_BUILD);
      if (existsSync(path.join(local, BINDING_IN_DIR))) return local;
      const prebuilt = path.join(dir, PREBUILT);
      if (
        process.platform === "linux" &&
        process.arch === "x64" &&
        existsSync(path.join(prebuilt, BINDING_IN_DIR)) &&
        readTrimmed(path.join(prebuilt, PREBUILT_VERSION)) === classicLevelVersion()
      )
        return prebuilt;
    }
    const up = path.dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return undefined;
}

/** The binding's batch_put_records (native/level/dacd_level.cc). */
type BatchPutRecords = (
  batch: unknown,
  head: Uint8Array,
  hashes: Uint8Array,
  records: Uint8Array,
  starts: Uint32Array,
  ends: Uint32Array,
  order: Uint32Array,
  from: number,
  to: number,
) => void;

/**
 * Puts records `order[from]` … `order[to - 1]` of `packed` into a chained batch under `head` ‖ hash
 * in one call, or undefined where the binding loaded has no such call (classic-level's own).
 * `context` is classic-level's native handle of the chained batch (nativeContext).
 */
export type PutRecordsInto = (
  context: unknown,
  head: Uint8Array,
  packed: PackedRecords,
  order: Uint32Array,
  from: number,
  to: number,
) => void;

/** The binding's db_get_packed (native/level/dacd_level.cc). */
type DbGetPacked = (
  db: unknown,
  keys: Uint8Array,
  keyLength: number,
  fillCache: boolean,
  snapshot: unknown,
) => Promise<[Buffer, Uint32Array]>;

interface Additions {
  batch_put_records?: BatchPutRecords;
  db_get_packed?: DbGetPacked;
  set_mapped_tables?: (limit: number) => void;
  set_random_reads?: () => void;
}

function loadBinding(): Additions {
  const require = createRequire(import.meta.url);
  const chosen = dacdBuildDir();
  if (chosen) {
    const bindingJs = require.resolve("classic-level/binding.js");
    if (!require.cache[bindingJs]) {
      const entry = new Module(bindingJs);
      entry.filename = bindingJs;
      entry.exports = require(path.join(chosen, BINDING_IN_DIR)) as unknown;
      entry.loaded = true;
      require.cache[bindingJs] = entry;
    }
  }
  return require("classic-level/binding.js") as Additions;
}

const binding = loadBinding();

function loadPutRecords(): PutRecordsInto | undefined {
  const put = binding.batch_put_records;
  if (typeof put !== "function") return undefined;
  return (context, head, packed, order, from, to) =>
    put(context, head, packed.hashes, packed.records, packed.from, packed.to, order, from, to);
}

/** batch_put_records where dacd's build of the binding is loaded; undefined with classic-level's own. */
export const putRecordsInto: PutRecordsInto | undefined = loadPutRecords();

/** A value of getPacked's `ends` for a key not found. */
export const NOT_FOUND = 0xffffffff;

/** The read options the store passes to getMany; a snapshot is abstract-level's. */
export interface PackedReads {
  readonly snapshot?: { ref(): void; unref(): void };
  readonly fillCache?: boolean;
}

/**
 * Looks up `keys`, packed one after the other `keyLength` bytes each, in `db` (open) with `reads`:
 * the values found one after the other in `values`, and for key i the end of its value there
 * (`NOT_FOUND` where it is missing), in the keys' order.
 */
export type GetPacked = (
  db: object,
  keys: Uint8Array,
  keyLength: number,
  reads: PackedReads,
) => Promise<{ values: Uint8Array; ends: Uint32Array }>;

function loadGetPacked(): GetPacked | undefined {
  const get = binding.db_get_packed;
  if (typeof get !== "function") return undefined;
  return async (db, keys, keyLength, reads) => {
    const { snapshot } = reads;
    // As abstract-level does around a read: refused on a closed snapshot, and the snapshot is not
    // released while the read runs.
    snapshot?.ref();
    try {
      const snapshotContext = snapshot && nativeContext(snapshot);
      if (snapshot && snapshotContext === undefined) throw new Error("a snapshot without its native handle");
      const [values, ends] = await get(
        nativeContext(db),
        keys,
        keyLength,
        reads.fillCache ?? true,
        snapshotContext,
      );
      // A plain view: a Buffer's subarray would construct a Buffer per record.
      return { values: new Uint8Array(values.buffer, values.byteOffset, values.length), ends };
    } finally {
      snapshot?.unref();
    }
  };
}

/** db_get_packed where dacd's build of the binding is loaded; undefined with classic-level's own. */
export const getPacked: GetPacked | undefined = loadGetPacked();

/**
 * True when getPacked can serve a read of `db` with `reads`: dacd's binding is loaded, `db` is open
 * (abstract-level's methods check that; a call straight into the binding must do it itself) and
 * classic-level's native handles of it and of the snapshot are where nativeContext finds them.
 */
export function canGetPacked(db: { readonly status: string }, reads: PackedReads): boolean {
  return (
    getPacked !== undefined &&
    db.status === "open" &&
    nativeContext(db) !== undefined &&
    (reads.snapshot === undefined || nativeContext(reads.snapshot) !== undefined)
  );
}

/** How many table files LevelDB memory-maps unless told otherwise (its POSIX Env, 64-bit hosts). */
export const LEVELDB_MAPPED_TABLES = 1000;

let mappedTables = LEVELDB_MAPPED_TABLES;
let databaseCreated = false;

/** Called by classic-level.ts for every database made: after the first, the mapped tables are fixed. */
export function noteDatabaseCreated(): void {
  databaseCreated = true;
}

/**
 * Sets how many table files LevelDB memory-maps; it reads the others with `pread`. Each page of a
 * mapped table that a lookup touched counts in the process's RSS (clean file pages, which the
 * kernel drops under pressure), so the number bounds that share: about 2 MiB per table. LevelDB
 * reads the number once, when the process's first database opens, so a change after that is
 * "too late"; classic-level's own binding cannot set it ("unsupported"). Either way LevelDB keeps
 * the number it has (mappedTablesInEffect).
 */
export function setMappedTables(limit: number): "set" | "unsupported" | "too late" {
  if (!Number.isInteger(limit) || limit < 0) throw new RangeError(`mapped tables: ${limit} is not a count`);
  if (limit === mappedTables) return "set";
  const set = binding.set_mapped_tables;
  if (typeof set !== "function") return "unsupported";
  if (databaseCreated) return "too late";
  set(limit);
  mappedTables = limit;
  return "set";
}

/**
 * From now on, every table file LevelDB reads (open or opened later) reads without the kernel's
 * read-ahead: a lookup below the node cache then reads its block alone rather than the blocks
 * around it, which on a store larger than the page cache would evict pages that other lookups need.
 * Called once the node cache is warm: its warm-up walks whole trees and gains from read-ahead. For
 * the rest of the process; "unsupported" under classic-level's own binding.
 */
export function setRandomReads(): "set" | "unsupported" {
  const set = binding.set_random_reads;
  if (typeof set !== "function") return "unsupported";
  set();
  return "set";
}

/** The number of tables LevelDB memory-maps in this process. */
export const mappedTablesInEffect = (): number => mappedTables;

/** Which binding is in use, for the start-up log. */
export const levelBindingName: "dacd" | "classic-level" = putRecordsInto ? "dacd" : "classic-level";

/**
 * classic-level's native handle of a database, chained batch or snapshot (what its own methods
 * pass to the binding), or undefined if this classic-level keeps it elsewhere.
 */
export function nativeContext(holder: object): unknown {
  const fields = holder as Record<symbol, unknown>;
  const key = Object.getOwnPropertySymbols(fields).find((s) => s.description === "context");
  return key === undefined ? undefined : fields[key];
}
