import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { PackedRecords } from "../trees/node-source.js";

/**
 * Which binding classic-level loads: dacd's build of it (scripts/build-level.mjs: classic-level's
 * own sources with batch_put_records added, in native/build/level) where the install built one,
 * else classic-level's prebuilt binding. Both hold the same LevelDB; dacd's puts a batch's records
 * in one call instead of one call per record. `DACD_LEVEL_BINDING=stock` keeps classic-level's.
 *
 * classic-level finds its binding with node-gyp-build when it is first imported, and node-gyp-build
 * looks in `$CLASSIC_LEVEL_PREBUILD` first when that is set. So this module sets it while it loads
 * the binding itself (node's module cache then hands classic-level the same one), and puts it back
 * so that processes dacd starts choose for themselves. classic-level.ts, the one module that
 * imports classic-level, imports this module first.
 */
const BINDING_RELATIVE = path.join("native", "build", "level", "build", "Release", "classic_level.node");
const ENV = "CLASSIC_LEVEL_PREBUILD";

/** The directory node-gyp-build is to look in for dacd's build, or undefined (not built, or not wanted). */
function dacdBuildDir(): string | undefined {
  if (process.env.DACD_LEVEL_BINDING === "stock" || process.env.PREBUILDS_ONLY) return undefined;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(path.join(dir, BINDING_RELATIVE))) return path.join(dir, "native", "build", "level");
    const up = path.dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return undefined;
}

/** The binding's batch_put_records (native/level/batch_put_records.cc). */
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
 * `context` is classic-level's native handle of the chained batch (chainedBatchContext).
 */
export type PutRecordsInto = (
  context: unknown,
  head: Uint8Array,
  packed: PackedRecords,
  order: Uint32Array,
  from: number,
  to: number,
) => void;

function loadPutRecords(): PutRecordsInto | undefined {
  const chosen = process.env[ENV] === undefined ? dacdBuildDir() : undefined;
  if (chosen) process.env[ENV] = chosen;
  let binding: { batch_put_records?: BatchPutRecords };
  try {
    binding = createRequire(import.meta.url)("classic-level/binding.js") as typeof binding;
  } finally {
    if (chosen) delete process.env[ENV];
  }
  const put = binding.batch_put_records;
  if (typeof put !== "function") return undefined;
  return (context, head, packed, order, from, to) =>
    put(context, head, packed.hashes, packed.records, packed.from, packed.to, order, from, to);
}

/** batch_put_records where dacd's build of the binding is loaded; undefined with classic-level's own. */
export const putRecordsInto: PutRecordsInto | undefined = loadPutRecords();

/** Which binding is in use, for the start-up log. */
export const levelBindingName: "dacd" | "classic-level" = putRecordsInto ? "dacd" : "classic-level";

/**
 * classic-level's native handle of a chained batch (what its own put passes to the binding), or
 * undefined if this classic-level keeps it elsewhere.
 */
export function chainedBatchContext(batch: object): unknown {
  const holder = batch as Record<symbol, unknown>;
  const key = Object.getOwnPropertySymbols(holder).find((s) => s.description === "context");
  return key === undefined ? undefined : holder[key];
}
