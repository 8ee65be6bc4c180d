/**
 * The one loader of dacd's C addon (native/, target `dacd_native`): Pedersen hashing, the tree
 * walks, the node cache, the record format and sd_notify are all in it. Each job's module types
 * the functions it uses and takes them through `nativeJob`.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The addon's exports by name; what each one is, the module of its job says. */
export type NativeAddon = Readonly<Record<string, unknown>>;

/** The addon's file name, as native/binding.gyp's target builds it and prebuilds/ carries it. */
export const ADDON_FILE = "dacd_native.node";
const ADDON_RELATIVE = path.join("native", "build", "Release", ADDON_FILE);
/** A file every checkout and every installed package has in native/: it marks the root. */
const ROOT_MARK = path.join("native", "binding.gyp");

/**
 * The repository (or installed package) root holding native/, found by walking up from this
 * module: it sits two levels down in the TS sources (src/native) and three in the compiled output
 * (dist/src/native).
 */
function findRoot(): string | null {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(path.join(dir, ROOT_MARK))) return dir;
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
  const prebuilt = path.join(root, "prebuilds", `${process.platform}-${process.arch}`, ADDON_FILE);
  return existsSync(prebuilt) ? prebuilt : null;
}

/** The install script that builds the addon, as a path to run it by (for the message when it is missing). */
export function nativeBuildScriptPath(): string {
  const root = findRoot();
  return root ? path.join(root, "scripts", "build-native.mjs") : "scripts/build-native.mjs";
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
 * One job's part of the addon, typed as its module declares it: the addon when it loads and
 * exports every function in `names`, else null.
 */
export function nativeJob<Job extends object>(...names: readonly (keyof Job & string)[]): Job | null {
  const addon = loadNativeAddon();
  return addon && names.every((name) => typeof addon[name] === "function") ? (addon as Job) : null;
}
