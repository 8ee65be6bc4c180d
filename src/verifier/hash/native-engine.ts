import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ChainClimb, ClimbedChains, HashEngine } from "./engine.js";

/** What the C addon's Pedersen engine (native/pedersen/pedersen_napi.c) exports. */
export interface NativeAddon {
  /** Hashes n packed pairs into `out`; throws a RangeError naming the first input >= p. */
  hashMany(xs: Uint8Array, ys: Uint8Array, out: Uint8Array, kernel?: string): void;
  /** One-sided pairs into `out` (HashEngine.hashConst); the same range checks. */
  hashConst(vs: Uint8Array, c: Uint8Array, constantIsY: boolean, out: Uint8Array, kernel?: string): void;
  /** Chains of one-sided pairs climbed in one call (HashEngine.climbChains); the same range checks. */
  climbChains(
    starts: Uint8Array,
    paths: Uint8Array,
    from: Uint8Array,
    to: Uint8Array,
    empty: Uint8Array,
    step: number,
    slots: number,
    tops: Uint8Array,
    marks: Uint8Array,
    kernel?: string,
  ): void;
  /** The range check alone (same errors as hashMany). */
  checkInputs(xs: Uint8Array, ys: Uint8Array): void;
  /** Kernels this CPU can run, fastest first. */
  kernels(): string[];
  readonly bestKernel: string;
  readonly windowBits: number;
}

const ADDON_RELATIVE = path.join("native", "build", "Release", "dacd_native.node");
const WORKER_RELATIVE = path.join("native", "pedersen-worker.mjs");

/**
 * The repository root holding native/, found by walking up from this module: it sits two levels
 * down in the TS sources (src/verifier/hash) and three in the compiled output (dist/src/verifier/hash).
 */
function findRoot(): string | null {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(path.join(dir, WORKER_RELATIVE))) return dir;
    const up = path.dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return null;
}

let addonOverride: string | undefined;

/** Loads the addon from `file` instead (DACD_NATIVE_ADDON, which the entry point passes); undefined: the usual one. */
export function useNativeAddon(file: string | undefined): void {
  addonOverride = file || undefined;
}

/**
 * Path of the addon (useNativeAddon overrides it): the one built on this host (native/build/),
 * else the one the package carries prebuilt for this platform (prebuilds/linux-x64/, used when the
 * install script did not run or could not build); null when neither is there.
 */
export function nativeAddonPath(): string | null {
  if (addonOverride) return existsSync(addonOverride) ? path.resolve(addonOverride) : null;
  const root = findRoot();
  if (!root) return null;
  const built = path.join(root, ADDON_RELATIVE);
  if (existsSync(built)) return built;
  const prebuilt = path.join(root, "prebuilds", `${process.platform}-${process.arch}`, "dacd_native.node");
  return existsSync(prebuilt) ? prebuilt : null;
}

/** The install script that builds the addon, as a path to run it by (for the message when it is missing). */
export function nativeBuildScriptPath(): string {
  const root = findRoot();
  return root ? path.join(root, "scripts", "build-native.mjs") : "scripts/build-native.mjs";
}

/** Path of the plain-JS worker used by the pool engine (it lives next to the addon sources). */
export function nativeWorkerPath(): string | null {
  const root = findRoot();
  return root ? path.join(root, WORKER_RELATIVE) : null;
}

let cached: { path: string; addon: NativeAddon | null; error?: unknown } | undefined;

/** Loads the addon once; null when it is not built or does not load (the reason is in `lastLoadError`). */
export function loadNativeAddon(): NativeAddon | null {
  const p = nativeAddonPath();
  if (!p) return null;
  if (cached?.path === p) return cached.addon;
  try {
    const addon = createRequire(import.meta.url)(p) as NativeAddon;
    cached = { path: p, addon };
  } catch (error) {
    cached = { path: p, addon: null, error };
  }
  return cached.addon;
}

/** Why the last load attempt failed, if it did. */
export function lastLoadError(): unknown {
  return cached?.error;
}

/**
 * Native engine: the C addon, one call per batch, Buffers end to end (no hex or BigInt per hash).
 * Range checks happen in C and name the offending index, as `checkPackedInputs` does.
 */
export class NativeEngine implements HashEngine {
  readonly name = "native";
  /** The kernel in use, e.g. "adx" or "portable". */
  readonly kernel: string;

  constructor(
    private readonly addon: NativeAddon,
    kernel?: string,
  ) {
    const available = addon.kernels();
    if (kernel !== undefined && !available.includes(kernel)) {
      throw new Error(`Pedersen kernel "${kernel}" is not available here (have: ${available.join(", ")})`);
    }
    this.kernel = kernel ?? addon.bestKernel;
  }

  /** Kernels this CPU can run, fastest first. */
  kernels(): string[] {
    return this.addon.kernels();
  }

  hashMany(xs: Uint8Array, ys: Uint8Array): Uint8Array {
    const out = new Uint8Array(xs.length);
    this.addon.hashMany(xs, ys, out, this.kernel);
    return out;
  }

  hashConst(vs: Uint8Array, c: Uint8Array, constantIsY: boolean): Uint8Array {
    const out = new Uint8Array(vs.length);
    this.addon.hashConst(vs, c, constantIsY, out, this.kernel);
    return out;
  }

  climbChains(job: ChainClimb): ClimbedChains {
    const n = job.from.length;
    const tops = new Uint8Array(n * 32);
    const marks = new Uint8Array(n * job.slots * 32);
    const { starts, paths, from, to, empty, step, slots } = job;
    this.addon.climbChains(starts, paths, from, to, empty, step, slots, tops, marks, this.kernel);
    return { tops, marks };
  }

  /** Hashes into a caller-provided buffer (n*32 bytes), saving an allocation per call. */
  hashInto(xs: Uint8Array, ys: Uint8Array, out: Uint8Array): void {
    this.addon.hashMany(xs, ys, out, this.kernel);
  }
}

/**
 * The native engine, or null when the addon is not built (or does not load). A named kernel that
 * this CPU cannot run is an error, not a silent fallback.
 */
export function loadNativeEngine(kernel?: string): NativeEngine | null {
  const addon = loadNativeAddon();
  return addon ? new NativeEngine(addon, kernel) : null;
}
