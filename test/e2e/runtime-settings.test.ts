import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readRuntimeSettings } from "../../src/config/runtime-settings.js";

const ROOT = path.join(import.meta.dirname, "..", "..");
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("the runtime settings", () => {
  it("take their defaults from an empty environment", () => {
    const s = readRuntimeSettings({});
    expect(s).toMatchObject({
      hashEngine: undefined,
      hashKernel: undefined,
      treeWalk: "auto",
      nodeCache: "auto",
      systemdNotify: "auto",
      levelBinding: "auto",
      nativeAddon: undefined,
      bzip2: "bzip2",
      configPath: undefined,
      credentialsDirectory: undefined,
      journalStream: undefined,
    });
    expect(Object.isFrozen(s.environment)).toBe(true);
  });

  it("read each switch, trimmed, and classic-level's PREBUILDS_ONLY as the stock binding", () => {
    const env = {
      DACD_HASH_ENGINE: " wasm ",
      DACD_HASH_KERNEL: "portable",
      DACD_TREE_WALK: "js",
      DACD_NODE_CACHE: "js",
      DACD_SYSTEMD_NOTIFY: "exec",
      DACD_LEVEL_BINDING: "stock",
      DACD_NATIVE_ADDON: "/opt/addon.node",
      DACD_BZIP2: "/usr/local/bin/bzip2",
      DACD_CONFIG: " /etc/dacd/x.yaml ",
      CREDENTIALS_DIRECTORY: "/run/credentials/dacd.service",
      JOURNAL_STREAM: "8:1234",
      NOTIFY_SOCKET: "/run/systemd/notify",
    };
    const s = readRuntimeSettings(env);
    expect(s).toMatchObject({
      hashEngine: "wasm",
      hashKernel: "portable",
      treeWalk: "js",
      nodeCache: "js",
      systemdNotify: "exec",
      levelBinding: "stock",
      nativeAddon: "/opt/addon.node",
      bzip2: "/usr/local/bin/bzip2",
      configPath: "/etc/dacd/x.yaml",
      credentialsDirectory: "/run/credentials/dacd.service",
      journalStream: "8:1234",
    });
    expect(s.environment.NOTIFY_SOCKET).toBe("/run/systemd/notify");
    expect(readRuntimeSettings({ PREBUILDS_ONLY: "1" }).levelBinding).toBe("stock");
  });

  it("are the one reader of process.env in src/: the layer check refuses another", () => {
    const copy = mkdtempSync(path.join(tmpdir(), "dacd-env-check-"));
    dirs.push(copy);
    cpSync(path.join(ROOT, "src"), path.join(copy, "src"), { recursive: true });
    cpSync(path.join(ROOT, "scripts", "check-imports.mjs"), path.join(copy, "scripts", "check-imports.mjs"));
    const check = () =>
      spawnSync(process.execPath, [path.join(copy, "scripts", "check-imports.mjs")], { encoding: "utf8" });
    expect(check().status).toBe(0);
    writeFileSync(path.join(copy, "src", "util", "reads-env.ts"), "export const x = process.env.DACD_X;\n");
    const refused = check();
    expect(refused.status).toBe(1);
    expect(refused.stderr + refused.stdout).toMatch(/util\/reads-env\.ts reads process\.env/);
  });
});
