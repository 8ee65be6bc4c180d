import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  ADDON_FILE,
  loadNativeAddon,
  nativeAddonPath,
  nativeJob,
  useNativeAddon,
} from "../../src/native/addon.js";
import { nativeAvailable } from "../helpers/native-required.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const haveAddon = nativeAvailable("the native addon", loadNativeAddon() !== null);

/** The one loader of the addon (src/native/addon.ts): each job takes its part through nativeJob. */
describe.skipIf(!haveAddon)("the native addon's loader", () => {
  it("finds the addon built in the checkout, by the file name binding.gyp's target gives it", () => {
    expect(nativeAddonPath()).toBe(path.resolve(here, "../../native/build/Release", ADDON_FILE));
  });

  it("gives each job its part when every function it names is there, else null", () => {
    const addon = loadNativeAddon()!;
    expect(nativeJob("hashMany", "climbChains")).toBe(addon);
    expect(nativeJob("merkleCreate", "patriciaCreate")).toBe(addon);
    expect(nativeJob("nodeCacheCreate", "nodeCacheForget")).toBe(addon);
    expect(nativeJob("hashMany", "noSuchFunction")).toBeNull();
    // recordFormat is an object, not a function: no job takes it this way.
    expect(nativeJob("recordFormat")).toBeNull();
  });

  it("gives no job a part when the addon named does not exist", () => {
    useNativeAddon(path.join(here, "no-such-dir", ADDON_FILE));
    try {
      expect(nativeAddonPath()).toBeNull();
      expect(loadNativeAddon()).toBeNull();
      expect(nativeJob("hashMany")).toBeNull();
    } finally {
      useNativeAddon(undefined);
    }
    expect(nativeJob("hashMany")).not.toBeNull();
  });
});
