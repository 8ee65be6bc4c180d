import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { applyPatches, levelSources, patchFiles } from "../../scripts/build-level.mjs";

/**
 * LevelDB's and classic-level's binding's changes are unified diffs in native/level/*.patch,
 * applied by scripts/build-level.mjs; one that does not apply names itself, its file and its hunk,
 * and fails the install under DACD_REQUIRE_NATIVE=1.
 */
const ROOT = path.join(import.meta.dirname, "..", "..");
const LEVEL_DIR = path.dirname(
  createRequire(path.join(ROOT, "package.json")).resolve("classic-level/package.json"),
);
const LEVELDB = "deps/leveldb/leveldb-1.20";
const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A copy of classic-level's package with `edit` applied to one of its files. */
function brokenClassicLevel(file: string, from: string, to: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), "dacd-level-patch-"));
  dirs.push(dir);
  const copy = path.join(dir, "node_modules", "classic-level");
  cpSync(LEVEL_DIR, copy, { recursive: true, filter: (src) => path.basename(src) !== "prebuilds" });
  const text = readFileSync(path.join(copy, file), "utf8");
  expect(text).toContain(from);
  writeFileSync(path.join(copy, file), text.replace(from, to));
  return dir;
}

describe("LevelDB's patches (native/level/*.patch)", () => {
  it("are the four unified diffs, applied in name order", () => {
    expect(patchFiles().map((f) => path.basename(f))).toEqual([
      "classic-level-binding.patch",
      "leveldb-random-reads.patch",
      "leveldb-skiplist-finger.patch",
      "leveldb-sync-beside.patch",
    ]);
  });

  it("change binding.cc, skiplist.h, db_impl.cc and env_posix.cc as the build compiles them", () => {
    const files = applyPatches(LEVEL_DIR);
    expect([...files.keys()].sort()).toEqual([
      "binding.cc",
      `${LEVELDB}/db/db_impl.cc`,
      `${LEVELDB}/db/skiplist.h`,
      `${LEVELDB}/util/env_posix.cc`,
    ]);
    const env = files.get(`${LEVELDB}/util/env_posix.cc`)!;
    expect(env).toContain("std::atomic<bool> dacd_random_reads(false);");
    expect(env).toContain("madvise(mmapped_region_, length_, MADV_RANDOM);");
    expect(env.match(/posix_fadvise\(fd, 0, 0, POSIX_FADV_RANDOM\);/g)).toHaveLength(2);
    const cc = files.get("binding.cc")!;
    expect(cc).toContain("options_.filter_policy = NULL;");
    expect(cc).toContain('#include "dacd_level.cc"\n\nNAPI_INIT() {');
    for (const name of ["batch_put_records", "db_get_packed", "set_mapped_tables", "set_random_reads"])
      expect(cc).toContain(`NAPI_EXPORT_FUNCTION(${name});`);
    expect(files.get(`${LEVELDB}/db/skiplist.h`)).toContain("Node* x = DacdFindGreaterOrEqual(key, prev);");
    expect(files.get(`${LEVELDB}/db/db_impl.cc`)).toContain(
      "if (!dacd_unpublished) versions_->SetLastSequence(last_sequence);",
    );
  });

  // The sources classic-level 3.0.0 is built from, pinned: an edit to a patch that changes what is
  // compiled shows here.
  it.runIf(levelSources().version === "3.0.0")("give classic-level 3.0.0 exactly the pinned sources", () => {
    const files = applyPatches(LEVEL_DIR);
    expect(sha256(files.get("binding.cc")!)).toBe(
      "5fddcb211bbc37f02ebe2a819325ca1d782a4f02546650347b6cc1ad5502d86c",
    );
    expect(sha256(files.get(`${LEVELDB}/db/skiplist.h`)!)).toBe(
      "a6e52d4cd733535aa1d0df622c0696213ce83086b6ff9303b8744196b79d77a1",
    );
    expect(sha256(files.get(`${LEVELDB}/db/db_impl.cc`)!)).toBe(
      "75231dc3380633521b3de0f8ed26abbf32077b3b48fd428a0f1131b1f9be4581",
    );
    expect(sha256(files.get(`${LEVELDB}/util/env_posix.cc`)!)).toBe(
      "86c754fdb2ab2fad6a3e9fa439b6e842962a55974f7be5d8fe998e757320d09e",
    );
  });

  it("refuse a source they do not match, naming the patch, the file and the hunk", () => {
    const dir = brokenClassicLevel(
      `${LEVELDB}/db/db_impl.cc`,
      "      bool sync_error = false;\n",
      "      bool sync_error = 0;\n",
    );
    expect(() => applyPatches(path.join(dir, "node_modules", "classic-level"))).toThrow(
      /^leveldb-sync-beside\.patch does not apply to deps\/leveldb\/leveldb-1\.20\/db\/db_impl\.cc: hunk @@ -1223,6 @@/,
    );
  });

  it("fail the install under DACD_REQUIRE_NATIVE=1, and say why and keep classic-level's binding otherwise", () => {
    const dir = brokenClassicLevel(
      `${LEVELDB}/db/skiplist.h`,
      "      rnd_(0xdeadbeef) {",
      "      rnd_(0xbeef) {",
    );
    mkdirSync(path.join(dir, "scripts"));
    for (const f of ["build-level.mjs", "native-toolchain.mjs"])
      cpSync(path.join(ROOT, "scripts", f), path.join(dir, "scripts", f));
    cpSync(path.join(ROOT, "native", "level"), path.join(dir, "native", "level"), { recursive: true });
    for (const dep of ["diff", "napi-macros"])
      symlinkSync(path.join(ROOT, "node_modules", dep), path.join(dir, "node_modules", dep));
    writeFileSync(path.join(dir, "package.json"), '{ "name": "copy", "type": "module" }\n');
    const run = (env: Record<string, string>) =>
      spawnSync(process.execPath, [path.join(dir, "scripts", "build-level.mjs")], {
        cwd: dir,
        env: { ...process.env, DACD_SKIP_NATIVE: undefined, DACD_REQUIRE_NATIVE: undefined, ...env },
        encoding: "utf8",
      });
    const why =
      /leveldb-skiplist-finger\.patch does not apply to deps\/leveldb\/leveldb-1\.20\/db\/skiplist\.h: hunk @@ -327,9 @@/;
    const required = run({ DACD_REQUIRE_NATIVE: "1" });
    expect(required.status).toBe(1);
    expect(required.stderr).toMatch(why);
    expect(required.stderr).toContain("DACD_REQUIRE_NATIVE=1 requires it");
    const optional = run({});
    expect(optional.status).toBe(0);
    expect(optional.stdout).toMatch(why);
    expect(optional.stdout).toContain("classic-level's own is used");
  });
});
