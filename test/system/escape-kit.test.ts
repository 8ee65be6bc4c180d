import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeVaultDump, vaultAt } from "../../bench/vault-dump.js";
import { verifyOnchainProof } from "../../src/escape/onchain/check.js";
import { kitPath, shardOf } from "../../src/escape/kit/layout.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import type { HashEngine } from "../../src/verifier/hash/engine.js";
import { BIN, dacdAsync } from "../helpers/dacd-cli.js";
import { waitFor } from "../helpers/daemon.js";
import { hex64, naiveVaultLeaf } from "../helpers/naive-chain.js";
import { fastH, naiveMerkleRoot } from "../helpers/naive-trees.js";
import { nginxAvailable, startNginx } from "../helpers/nginx.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

/**
 * `dacd escape-kit` on a stopped store of 1,500 vaults spread over the tree's ids: one file per
 * non-empty vault in the layout's place, a sample verified by the project's checker and equal
 * byte for byte to `dacd proof --format starkex`, the manifest's shard lists right; served by a
 * real nginx and fetched over HTTP; a kit killed (SIGKILL) mid-write leaves no manifest.
 */

const VAULTS = 1500;
let work: string;
let db: string;
let kit: string;
let engine: HashEngine;

beforeAll(async () => {
  work = await tempDir("dacd-escape-kit-");
  const dump = join(work, "dump");
  await mkdir(dump);
  await makeVaultDump(dump, VAULTS, { spread: true });
  db = join(work, "db");
  const load = await dacdAsync(["load", "--from", dump, "--db", db]);
  expect(load.err).toBe("");
  kit = join(work, "kit");
  engine = createEngine("wasm");
}, 120_000);

afterAll(async () => {
  await engine?.close?.();
  await removeTempDirs();
});

/** Every proof file of a kit: id → path relative to the kit. */
async function kitFiles(dir: string, tree: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const shard of await readdir(join(dir, tree))) {
    for (const name of await readdir(join(dir, tree, shard))) {
      const id = name.replace(/\.json$/, "");
      expect(shard).toBe(shardOf(id));
      out.set(id, `${tree}/${shard}/${name}`);
    }
  }
  return out;
}

const haveNginx = nginxAvailable();

describe("dacd escape-kit", () => {
  it("writes one verified proof per non-empty vault, equal to dacd proof --format starkex", async () => {
    const r = await dacdAsync(["escape-kit", "--format", "1", "--db", db, "--out", kit]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    const manifest = JSON.parse(await readFile(join(kit, "manifest.json"), "utf8")) as {
      files: number;
      tree: string;
      batch_id: number;
      root: string;
      tree_height: number;
      shards: Record<string, { files: number; sha256: string }>;
    };
    expect(manifest).toMatchObject({ files: VAULTS, tree: "vault", batch_id: 41, tree_height: 31 });
    const files = await kitFiles(kit, "vault");
    expect(files.size).toBe(VAULTS);
    expect(existsSync(join(kit, "index.html"))).toBe(true);

    // The shard lists: `sha256sum $(ls | sort -n)` of each shard, hashed.
    let listed = 0;
    for (const [key, s] of Object.entries(manifest.shards)) {
      const names = (await readdir(join(kit, key))).sort(
        (a, b) => Number(a.split(".")[0]) - Number(b.split(".")[0]),
      );
      let list = "";
      for (const n of names)
        list += `${createHash("sha256")
          .update(await readFile(join(kit, key, n)))
          .digest("hex")}  ${n}\n`;
      expect({ key, files: names.length, sha256: createHash("sha256").update(list).digest("hex") }).toEqual({
        key,
        ...s,
      });
      listed += s.files;
    }
    expect(listed).toBe(VAULTS);

    // The root the proofs are held against: the dump's vaults recomputed naively, not the store's.
    const naiveRoot = hex64(
      naiveMerkleRoot(
        31,
        new Map(
          Array.from({ length: VAULTS }, (_, i) => {
            const { id, leaf } = vaultAt(i, VAULTS, true);
            const v = { stark_key: `${leaf.key}`, token: `${leaf.token}`, balance: `${leaf.balance}` };
            return [id, naiveVaultLeaf(v, fastH)] as const;
          }),
        ),
        naiveVaultLeaf({ stark_key: "0", token: "0", balance: "0" }, fastH),
        fastH,
      ),
    );
    expect(manifest.root.replace(/^0x/, "")).toBe(naiveRoot);
    const ids = [...files.keys()].sort((a, b) => Number(a) - Number(b));
    const sample = ids.filter((_, i) => i % 7 === 0 || i === ids.length - 1);
    for (const id of sample) {
      const proof = JSON.parse(await readFile(join(kit, kitPath("vault", id)), "utf8")) as unknown;
      const verdict = await verifyOnchainProof(engine, proof, "0x" + naiveRoot);
      expect({ id, ...verdict }).toMatchObject({ id, valid: true });
    }
    for (const id of [ids[0]!, ids[1]!, ids[700]!, ids.at(-1)!]) {
      const cli = await dacdAsync(["proof", "vault", id, "--format", "starkex", "--db", db]);
      expect(cli.code).toBe(0);
      expect(await readFile(join(kit, kitPath("vault", id)), "utf8")).toBe(cli.out);
    }
  }, 300_000);

  it.skipIf(!haveNginx)(
    "is served by nginx: the manifest, the page and the proofs over HTTP",
    async () => {
      const server = await startNginx(kit, join(work, "nginx"));
      try {
        const manifest = await fetch(`${server.url}/manifest.json`);
        expect(manifest.status).toBe(200);
        expect(manifest.headers.get("content-type")).toMatch(/application\/json/);
        const { files } = (await manifest.json()) as { files: number };
        expect(files).toBe(VAULTS);
        const page = await fetch(`${server.url}/`);
        expect(page.status).toBe(200);
        expect(await page.text()).toMatch(/<html/);
        const ids = [...(await kitFiles(kit, "vault")).keys()].slice(0, 5);
        for (const id of ids) {
          const res = await fetch(`${server.url}/${kitPath("vault", id)}`);
          expect(res.status).toBe(200);
          expect(res.headers.get("cache-control")).toBe("public, max-age=86400");
          expect(await res.text()).toBe(await readFile(join(kit, kitPath("vault", id)), "utf8"));
        }
        expect((await fetch(`${server.url}/${kitPath("vault", "3")}`)).status).toBe(404);
      } finally {
        await server.stop();
      }
    },
    60_000,
  );

  it("leaves no kit and no manifest when killed mid-write (SIGKILL), and the next run clears its remains", async () => {
    const out = join(work, "killed");
    const child = spawn(process.execPath, [BIN, "escape-kit", "--format", "1", "--db", db, "--out", out], {
      env: { ...process.env, DACD_HASH_ENGINE: "wasm" },
      stdio: "ignore",
    });
    const tmp = join(work, `.killed.kit-tmp-${child.pid}`);
    // Killed once it has written some of the proofs.
    await waitFor(
      async () => (await readdir(join(tmp, "vault")).catch(() => [])).length >= 20,
      120_000,
      "the kit's first proofs",
    );
    const gone = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await gone;
    expect(existsSync(out)).toBe(false);
    expect(existsSync(join(tmp, "manifest.json"))).toBe(false);
    expect(existsSync(tmp)).toBe(true);

    const again = await dacdAsync(["escape-kit", "--format", "1", "--db", db, "--out", out]);
    expect(again.code).toBe(0);
    expect(existsSync(join(out, "manifest.json"))).toBe(true);
    expect(existsSync(tmp)).toBe(false);
    // The same kit as the first one, file for file (the manifest's creation time aside).
    const a = await kitFiles(kit, "vault");
    const b = await kitFiles(out, "vault");
    expect([...b.keys()].sort()).toEqual([...a.keys()].sort());
    for (const id of [...a.keys()].slice(0, 50))
      expect(await readFile(join(out, b.get(id)!), "utf8")).toBe(
        await readFile(join(kit, a.get(id)!), "utf8"),
      );
  }, 300_000);

  it("refuses an output directory that is not empty", async () => {
    const r = await dacdAsync(["escape-kit", "--format", "1", "--db", db, "--out", kit]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/not empty/);
  }, 60_000);
});
