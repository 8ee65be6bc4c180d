import {
  NativeTopNodeCache,
  nativeNodeCacheAddon,
  type NativeNodeCacheAddon,
} from "../native/native-node-cache.js";
import { JsTopNodeCache } from "./js-node-cache.js";
import type { TopNodeCache } from "./top-node-cache.js";

export { SNAPSHOT_ENTRY_HEAD, SNAPSHOT_ENTRY_MAX, type TopNodeCache } from "./top-node-cache.js";

/**
 * The top node cache (top-node-cache.ts) keeping `levels` levels below each tree's top (0 turns it
 * off) and at most `maxNodes` nodes: in the addon whose cache is given (by default the loaded
 * addon's, if any), else in JavaScript (null).
 */
export function createTopNodeCache(
  levels: number,
  addon: NativeNodeCacheAddon | null = nativeNodeCacheAddon(),
  maxNodes = Infinity,
): TopNodeCache {
  return addon && levels > 0
    ? new NativeTopNodeCache(addon, levels, maxNodes)
    : new JsTopNodeCache(levels, maxNodes);
}
