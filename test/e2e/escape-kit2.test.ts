import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeVaultDump, vaultAt } from "../../bench/vault-dump.js";
import { BIN, dacdAsync } from "../helpers/dacd-cli.js";
import { waitFor } from "../helpers/daemon.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

/**
 * `dacd escape-kit` format 2 (the default) on a stopped store of 4,000 vaults spread over the
 * tree: shards, the key index and the manifest; `dacd proof … --format starkex --kit DIR` prints
 * the bytes the store's `dacd proof … --format starkex` prints; a shard, manifest or index changed
 * afterwards is refused with one line; a kit killed (SIGKILL) mid-write leaves no manifest; an
 * --out that is a symbolic link is refused before anything is built.
 */

const VAULTS = 4000;
let work: string;
let db: string;
let kit: string;

beforeAll(async () => {
  work = await tempDir("dacd-escape-kit2-");
  const dump = join(work, "dump");
  await mkdir(dump);
  await makeVaultDump(dump, VAULTS, { spread: true });
  db = join(work, "db");
  const load = await dacdAsync(["load", "--from", dump, "--db", db]);
  expect(load.err).toBe("");
  kit = join(work, "kit");
}, 600_000);

afterAll(removeTempDirs);

const idOf = (i: number): string => vaultAt(i, VAULTS, true).id.toString();

/** A copy of the kit to tamper with. */
async function copyKit(name: string): Promise<string> {
  const to = join(work, name);
  const r = await dacdAsync(["escape-kit", "--db", db, "--out", to]);
  expect(r.code, r.err).toBe(0);
  return to;
}

const oneLine = (err: string): void => {
  expect(err.trim().split("\n")).toHaveLength(1);
  expect(err).not.toMatch(/\n\s+at /);
};

describe("dacd escape-kit --format 2", () => {
  it("writes shards, an index and a manifest; proof --kit prints the store's proof", async () => {
    const r = await dacdAsync([
      "escape-kit",
      "--db",
      db,
      "--out",
      kit,
      "--chain-id",
      "31337",
      "--exchange",
      "0x" + "ab".repeat(20),
    ]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    const manifest = JSON.parse(await readFile(join(kit, "manifest.json"), "utf8")) as {
      format: string;
      leaves: number;
      shards: { first: string; last: string; leaves: number }[];
      chain_id: number;
      exchange: string;
      verifier: string | null;
      index: { files: Record<string, string> };
    };
    expect(manifest).toMatchObject({
      format: "dacd-escape-kit/2",
      leaves: VAULTS,
      chain_id: 31337,
      exchange: "0x" + "ab".repeat(20),
      verifier: null,
    });
    expect(manifest.shards.length).toBe(4);
    // The data files (the page's three and the manifest aside).
    const files = (await readdir(join(kit, "shards"))).length + (await readdir(join(kit, "keys"))).length;
    expect(files).toBeLessThanOrEqual(VAULTS / 500);

    for (const i of [0, 1, 999, 1000, 2345, VAULTS - 1]) {
      const id = idOf(i);
      const fromKit = await dacdAsync(["proof", "vault", id, "--format", "starkex", "--kit", kit]);
      expect(fromKit.code, fromKit.err).toBe(0);
      const fromStore = await dacdAsync(["proof", "vault", id, "--format", "starkex", "--db", db]);
      expect(fromStore.code).toBe(0);
      expect(fromKit.out).toBe(fromStore.out);
    }
    // By stark key, from the index.
    const key = "0x" + vaultAt(7, VAULTS, true).leaf.key.toString(16);
    const byKey = await dacdAsync([
      "proof",
      "vault",
      "--format",
      "starkex",
      "--kit",
      kit,
      "--stark-key",
      key,
    ]);
    expect(byKey.code, byKey.err).toBe(0);
    expect((JSON.parse(byKey.out) as { vault_id: string }[]).map((p) => p.vault_id)).toEqual([idOf(7)]);

    const missing = await dacdAsync(["proof", "vault", "3", "--format", "starkex", "--kit", kit]);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/vault 3 is not in the kit/);
    oneLine(missing.err);
  }, 300_000);

  it("refuses a tampered shard, manifest or index with one line", async () => {
    const bad = await copyKit("tampered");
    const id = idOf(5);
    const proof = () => dacdAsync(["proof", "vault", id, "--format", "starkex", "--kit", bad]);
    const manifestPath = join(bad, "manifest.json");
    const manifest = await readFile(manifestPath, "utf8");
    const m = JSON.parse(manifest) as { root: string; shards: { sha256: string; encoding: string }[] };

    // A shard's byte changed.
    const shardPath = join(bad, "shards", "0.bin");
    const shard = await readFile(shardPath);
    const changed = Buffer.from(shard);
    changed[changed.length - 1]! ^= 1;
    await writeFile(shardPath, changed);
    let r = await proof();
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/shards\/0\.bin: its SHA-256 is [0-9a-f]{64}, the manifest says/);
    oneLine(r.err);

    // The same, the manifest made to agree: the path no longer reaches the root.
    const raw = Buffer.from(m.shards[0]!.encoding === "gzip" ? gunzipSync(shard) : shard);
    raw[raw.length - 1]! ^= 1;
    const forged = m.shards[0]!.encoding === "gzip" ? gzipSync(raw) : raw;
    await writeFile(shardPath, forged);
    const forgedSha = createHash("sha256").update(forged).digest("hex");
    await writeFile(manifestPath, manifest.replace(m.shards[0]!.sha256, forgedSha));
    r = await dacdAsync(["proof", "vault", idOf(999), "--format", "starkex", "--kit", bad]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/not to the kit's root .*: refused/);
    oneLine(r.err);
    await writeFile(shardPath, shard);

    // The manifest's root changed.
    await writeFile(manifestPath, manifest.replace(m.root, "0x0" + "1".repeat(63)));
    r = await proof();
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/not to the kit's root/);
    oneLine(r.err);
    await writeFile(manifestPath, "{ not json");
    r = await proof();
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/manifest\.json: not JSON/);
    await writeFile(manifestPath, manifest);

    // An index file changed.
    const key = vaultAt(5, VAULTS, true).leaf.key.toString(16).padStart(64, "0");
    const keys = await readdir(join(bad, "keys"));
    const file = keys.find((k) => k === "all.bin" || key.endsWith(k.replace(".bin", "")))!;
    const index = await readFile(join(bad, "keys", file));
    const badIndex = Buffer.from(index);
    badIndex[20]! ^= 1;
    await writeFile(join(bad, "keys", file), badIndex);
    r = await dacdAsync(["proof", "vault", "--format", "starkex", "--kit", bad, "--stark-key", "0x" + key]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/keys\/.*\.bin: its SHA-256 is/);
    oneLine(r.err);
  }, 300_000);

  it("leaves no kit and no manifest when killed mid-write (SIGKILL)", async () => {
    const out = join(work, "killed");
    const child = spawn(process.execPath, [BIN, "escape-kit", "--db", db, "--out", out], {
      env: { ...process.env, DACD_HASH_ENGINE: "wasm" },
      stdio: "ignore",
    });
    const tmp = join(work, `.killed.kit-tmp-${child.pid}`);
    // Killed once its directory is made, the walk under way.
    await waitFor(async () => existsSync(join(tmp, "shards")), 120_000, "the kit's directory");
    const gone = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await gone;
    expect(existsSync(out)).toBe(false);
    expect(existsSync(join(tmp, "manifest.json"))).toBe(false);
    const again = await dacdAsync(["escape-kit", "--db", db, "--out", out]);
    expect(again.code, again.err).toBe(0);
    expect(existsSync(join(out, "manifest.json"))).toBe(true);
    expect(existsSync(tmp)).toBe(false);
  }, 300_000);

  it("refuses an --out that is a symbolic link, up front and in one line", async () => {
    const target = join(work, "empty-target");
    await mkdir(target);
    const link = join(work, "link");
    await symlink(target, link);
    for (const format of ["1", "2"]) {
      const started = Date.now();
      const r = await dacdAsync(["escape-kit", "--format", format, "--db", db, "--out", link]);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/--out .*link is a symbolic link/);
      oneLine(r.err);
      expect(Date.now() - started).toBeLessThan(20_000);
    }
    expect((await readdir(work)).filter((n) => n.startsWith(".link.kit-tmp-"))).toEqual([]);
  }, 60_000);
});
