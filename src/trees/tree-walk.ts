import { DacdError } from "../errors.js";
import { loadNativeAddon } from "../hash/native-engine.js";
import type { NativeMerkle } from "./merkle-native.js";
import type { NativePatricia } from "./patricia-native.js";

/** The native addon's tree walks (native/trees/, built into the Pedersen addon). */
export interface NativeTreeWalks extends NativePatricia, NativeMerkle {}

export type TreeWalkName = "native" | "js";

/**
 * The tree walks to use: `DACD_TREE_WALK` (native | js) forces one; otherwise (auto) the native
 * walks wherever the addon loads. Forced native without the addon is an error rather than a silent
 * JavaScript walk. The JavaScript walks (merkle.ts, patricia.ts) stay as the fallback and the reference.
 */
export function nativeTreeWalks(env: NodeJS.ProcessEnv = process.env): NativeTreeWalks | null {
  const forced = env.DACD_TREE_WALK?.trim() || "auto";
  if (forced !== "native" && forced !== "js" && forced !== "auto")
    throw new DacdError("CONFIG", `DACD_TREE_WALK must be native, js or auto, got ${forced}`);
  if (forced === "js") return null;
  const addon = loadNativeAddon() as unknown as Partial<NativeTreeWalks> | null;
  const native =
    addon && typeof addon.patriciaCreate === "function" && typeof addon.merkleCreate === "function"
      ? (addon as NativeTreeWalks)
      : null;
  if (forced === "native" && !native)
    throw new DacdError(
      "CONFIG",
      "DACD_TREE_WALK=native, but the native addon is not built or lacks the walks",
    );
  return native;
}

/** Which walks the tree updates take here, for the start-up log. */
export function treeWalkName(env: NodeJS.ProcessEnv = process.env): TreeWalkName {
  return nativeTreeWalks(env) ? "native" : "js";
}
