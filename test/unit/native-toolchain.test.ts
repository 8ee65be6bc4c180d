import { cpSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  matchingPrebuilt,
  nativeSources,
  PREBUILT_SOURCES,
  prebuiltDir,
  sourcesDigest,
} from "../../scripts/native-toolchain.mjs";

const NATIVE = path.join(import.meta.dirname, "..", "..", "native");
const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

/** A package root with a copy of the addon's sources (no build/). */
function packageRoot(): string {
  const root = mkdtempSync(path.join(tmpdir(), "dacd-toolchain-"));
  roots.push(root);
  cpSync(NATIVE, path.join(root, "native"), {
    recursive: true,
    filter: (src) => path.basename(src) !== "build",
  });
  return root;
}

describe("the prebuilt addon is taken only for the sources it was built from", () => {
  it("lists the addon's sources: binding.gyp and the C files, without the stand-alone benchmark", () => {
    const names = nativeSources(NATIVE).map((f) => path.relative(NATIVE, f).split(path.sep).join("/"));
    expect(names).toContain("binding.gyp");
    expect(names).toContain("dacd_native.c");
    expect(names).toContain("pedersen/pedersen_napi.c");
    expect(names).toContain("trees/record_format.h");
    expect(names).toContain("trees/merkle.c");
    expect(names).toContain("napi_util.h");
    expect(names).not.toContain("pedersen/bench_main.c");
    expect(names.filter((n) => !/\.(c|h|gyp)$/.test(n))).toEqual([]);
  });

  it("digests contents, not file times, and any change to a source changes it", () => {
    const root = packageRoot();
    const native = path.join(root, "native");
    const before = sourcesDigest(native);
    expect(before).toBe(sourcesDigest(NATIVE));
    // npm packs every file with one time: times must not matter.
    utimesSync(path.join(native, "binding.gyp"), new Date(499162860000), new Date(499162860000));
    expect(sourcesDigest(native)).toBe(before);
    // Nor does the benchmark the package leaves out.
    rmSync(path.join(native, "pedersen", "bench_main.c"), { force: true });
    expect(sourcesDigest(native)).toBe(before);
    writeFileSync(path.join(native, "trees", "u256.h"), "/* changed */\n", { flag: "a" });
    expect(sourcesDigest(native)).not.toBe(before);
  });

  it("finds prebuilds/<platform>-<arch>/dacd_native.node when its stamp matches, and nothing otherwise", () => {
    const root = packageRoot();
    expect(matchingPrebuilt(root)).toBeNull();
    const dir = prebuiltDir(root);
    expect(dir).toBe(path.join(root, "prebuilds", `${process.platform}-${process.arch}`));
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "dacd_native.node"), "not really an addon");
    expect(matchingPrebuilt(root)).toBeNull(); // no stamp
    writeFileSync(path.join(dir, PREBUILT_SOURCES), "0".repeat(64) + "\n");
    expect(matchingPrebuilt(root)).toBeNull(); // another source tree's stamp
    writeFileSync(path.join(dir, PREBUILT_SOURCES), sourcesDigest(path.join(root, "native")) + "\n");
    expect(matchingPrebuilt(root)).toBe(path.join(dir, "dacd_native.node"));
    writeFileSync(path.join(root, "native", "pedersen", "engine.c"), "\n", { flag: "a" });
    expect(matchingPrebuilt(root)).toBeNull(); // sources edited since
  });
});
