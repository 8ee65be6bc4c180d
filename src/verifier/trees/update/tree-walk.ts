import { DacdError } from "../../../errors.js";
import { nativeJob } from "../../../native/addon.js";
import { TREE_WALKS } from "../../../model/engines.js";
import type { NativeMerkle } from "../native/merkle-native.js";
import type { NativePatricia } from "../native/patricia-native.js";

/** The native addon's tree walks (native/trees/). */
export interface NativeTreeWalks extends NativePatricia, NativeMerkle {}

export type TreeWalkName = "native" | "js";

/**
 * The walks tree updates take: the addon's native walks, or null for the JavaScript reference
 * walks (reference/), the fallback and what the native ones are tested against. Chosen once, where
 * the application is wired, and passed to every update (update-tree.ts).
 */
export type TreeWalk = NativeTreeWalks | null;

/**
 * The walk named: `native` (an error without the addon, rather than a silent JavaScript walk),
 * `js`, or `auto`: native wherever the addon loads.
 */
export function chooseTreeWalk(requested: string = "auto"): TreeWalk {
  if (!(TREE_WALKS as readonly string[]).includes(requested))
    throw new DacdError("CONFIG", `DACD_TREE_WALK must be one of ${TREE_WALKS.join(", ")}, got ${requested}`);
  if (requested === "js") return null;
  const native = nativeJob<NativeTreeWalks>("patriciaCreate", "merkleCreate");
  if (requested === "native" && !native)
    throw new DacdError(
      "CONFIG",
      "DACD_TREE_WALK=native, but the native addon is not built or lacks the walks",
    );
  return native;
}

let automatic: { walk: TreeWalk } | undefined;

/** The `auto` walk, looked up once: the default of callers that do not choose (tools, tests). */
export function defaultTreeWalk(): TreeWalk {
  automatic ??= { walk: chooseTreeWalk("auto") };
  return automatic.walk;
}

/** The walk's name, for the start-up log. */
export function treeWalkName(walk: TreeWalk): TreeWalkName {
  return walk ? "native" : "js";
}
