import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { storePaths } from "../../src/escape/kit/source.js";
import { buildKit2 } from "../../src/escape/kit/v2/build.js";
import { httpFetchBytes, openKit, KitRefused, type FetchBytes } from "../../src/escape/kit/v2/reader.js";
import { pedersen } from "../../src/escape/onchain/path.js";
import { makeOnchainProof } from "../../src/escape/onchain/from-proof.js";
import type { PositionLeaf, VaultLeaf } from "../../src/model/state-update.js";
import { prng } from "../../src/util/prng.js";
import { engine, randomBig } from "../helpers/chain-store.js";
import { leafStore } from "../helpers/leaf-store.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";

/**
 * Escape kit format 2 against the store: for every leaf of generated trees (sequential ids, ids
 * spread over the tree with its first and last id, perpetual positions of 0 and several assets),
 * the reader's proof from the kit alone is the store's `dacd proof … --format starkex` object;
 * the index gives each key's ids; a shard, manifest or index changed after the kit was made is
 * refused.
 */

afterAll(removeTempDirs);

const H = (x: bigint, y: bigint): Promise<bigint> => pedersen(engine, x, y);
const fromDir =
  (dir: string): FetchBytes =>
  async (path) =>
    new Uint8Array(await readFile(join(dir, path)));

function vaults(ids: bigint[], seed: number, keys = 40): Map<bigint, VaultLeaf> {
  const r = prng(seed);
  const keyPool = Array.from({ length: keys }, () => randomBig(r, 250) + 1n);
  return new Map(
    ids.map((id, i) => [
      id,
      {
        key: keyPool[i % keys]!,
        token: i % 3 === 0 ? randomBig(r, 250) : BigInt(1 + (i % 5)),
        balance: BigInt(1 + Math.floor(r() * 1e12)),
      },
    ]),
  );
}

function positions(ids: bigint[], seed: number): Map<bigint, PositionLeaf> {
  const r = prng(seed);
  return new Map(
    ids.map((id, i) => {
      const n = i % 4 === 0 ? 0 : 1 + (i % 5);
      const assets = Array.from({ length: n }, (_, a) => ({
        assetId: BigInt(a * 1000 + 1 + (i % 7)),
        balance: BigInt(Math.floor(r() * 2e9) - 1e9),
        fundingIndex: BigInt(Math.floor(r() * 2e6) - 1e6),
      }));
      return [
        id,
        { publicKey: randomBig(r, 250) + 1n, collateral: BigInt(Math.floor(r() * 2e12) - 1e12), assets },
      ];
    }),
  );
}

async function kitOf(
  profile: "spot-v4.0" | "perpetual",
  leaves: Map<bigint, VaultLeaf | PositionLeaf>,
  shardLeaves: number,
): Promise<{ out: string; store: Awaited<ReturnType<typeof leafStore>>["store"] }> {
  const { store } = await leafStore(engine, profile, leaves);
  const out = join(await tempDir("dacd-kit2-"), "kit");
  await buildKit2(engine, await storePaths(store, engine, undefined), { out, checkEvery: 1, shardLeaves });
  return { out, store };
}

async function expectEveryLeaf(
  out: string,
  store: Awaited<ReturnType<typeof leafStore>>["store"],
  object: "vault" | "position",
  leaves: Map<bigint, VaultLeaf | PositionLeaf>,
): Promise<void> {
  const kit = await openKit(fromDir(out), { pedersen: H });
  expect(kit.manifest.leaves).toBe(leaves.size);
  for (const id of leaves.keys()) {
    const fromKit = await kit.proof(id);
    const fromStore = await makeOnchainProof(store, engine, object, id.toString());
    expect(JSON.stringify(fromKit), `${object} ${id}`).toBe(JSON.stringify(fromStore));
  }
  // Each key's ids, from the index.
  const byKey = new Map<bigint, bigint[]>();
  for (const [id, leaf] of leaves) {
    const key = "key" in leaf ? leaf.key : leaf.publicKey;
    byKey.set(key, [...(byKey.get(key) ?? []), id]);
  }
  for (const [key, ids] of byKey)
    expect(await kit.idsOfKey(key)).toEqual(ids.sort((a, b) => (a < b ? -1 : 1)));
  expect(await kit.idsOfKey(12345n)).toEqual([]);
}

describe("escape kit format 2", () => {
  it("sequential vault ids: every proof is the store's", async () => {
    const ids = Array.from({ length: 700 }, (_, i) => BigInt(i));
    const leaves = vaults(ids, 1);
    const { out, store } = await kitOf("spot-v4.0", leaves, 128);
    const manifest = JSON.parse(await readFile(join(out, "manifest.json"), "utf8"));
    expect(manifest.shards.length).toBe(6);
    expect(manifest.shards[0]).toMatchObject({ first: "0", last: "127", leaves: 128 });
    await expectEveryLeaf(out, store, "vault", leaves);
    await store.close();
  }, 120_000);

  it("vault ids spread over the tree, with ids 0 and 2^31 − 1: every proof is the store's", async () => {
    const r = prng(7);
    const set = new Set<bigint>([0n, (1n << 31n) - 1n, 1n, (1n << 31n) - 2n]);
    while (set.size < 300) set.add(BigInt(Math.floor(r() * 2 ** 31)));
    const leaves = vaults([...set], 2, 300);
    const { out, store } = await kitOf("spot-v4.0", leaves, 64);
    await expectEveryLeaf(out, store, "vault", leaves);
    // Over HTTP from a real local server, with the default hash (@scure/starknet, as in a
    // browser): the same proofs.
    const { createServer } = await import("node:http");
    const server = createServer((req, res) => {
      readFile(join(out, decodeURIComponent(new URL(req.url!, "http://x").pathname)))
        .then((body) => res.writeHead(200, { "content-type": "application/octet-stream" }).end(body))
        .catch(() => res.writeHead(404).end());
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as { port: number };
    const kit = await openKit(httpFetchBytes(`http://127.0.0.1:${port}/`));
    await expect(openKit(httpFetchBytes(`http://127.0.0.1:${port}/nowhere/`))).rejects.toMatchObject({
      reason: "fetch",
      message: expect.stringContaining("HTTP 404"),
    });
    for (const id of [0n, (1n << 31n) - 1n])
      expect(JSON.stringify(await kit.proof(id))).toBe(
        JSON.stringify(await makeOnchainProof(store, engine, "vault", id.toString())),
      );
    server.close();
    await store.close();
  }, 120_000);

  it("perpetual positions of 0 and several assets, ids 0 to 2^64 − 1: every proof is the store's", async () => {
    const r = prng(9);
    const set = new Set<bigint>([0n, (1n << 64n) - 1n, (1n << 31n) - 1n]);
    for (let i = 0; i < 60; i++) set.add(BigInt(i) + 1000n);
    while (set.size < 160) set.add(randomBig(r, 64));
    const leaves = positions([...set], 3);
    const { out, store } = await kitOf("perpetual", leaves, 50);
    await expectEveryLeaf(out, store, "position", leaves);

    // Frozen at this batch with its shared state read from the chain: the kit carries the state,
    // and each proof its amount, fact and call data (or the verifier's refusal) as the store's.
    const root = BigInt(JSON.parse(await readFile(join(out, "manifest.json"), "utf8")).root);
    const words = [root, 64n, 0x1234n, 64n, 0n, 1_700_000_000n, 0n, 1_700_000_123n];
    await store.onchain.record(
      {
        contract: "0x" + "11".repeat(20),
        next_block: 10,
        frozen: {
          batch_id: 41,
          block_number: 9,
          detected_at: new Date().toISOString(),
          shared_state: {
            batch_id: 41,
            tx_hash: "0x" + "22".repeat(32),
            words: words.map((w) => "0x" + w.toString(16).padStart(64, "0")),
            system_asset_type: "0x" + "33".repeat(31),
          },
        },
      },
      [],
    );
    const frozen = join(await tempDir("dacd-kit2-"), "kit");
    const m = await buildKit2(engine, await storePaths(store, engine, undefined), {
      out: frozen,
      shardLeaves: 50,
    });
    expect(m).toMatchObject({ frozen_batch_id: 41, shared_state: { tx_hash: "0x" + "22".repeat(32) } });
    await expectEveryLeaf(frozen, store, "position", leaves);
    const kit = await openKit(fromDir(frozen), { pedersen: H });
    const withCalldata = [...leaves].filter(([, p]) => p.assets.length === 0 && p.collateral > 0n);
    expect(withCalldata.length).toBeGreaterThan(0);
    expect(await kit.proof(withCalldata[0]![0])).toHaveProperty("calldata.withdraw");
    await store.close();
  }, 120_000);

  it("refuses a tampered shard, index or manifest, and an id not in the kit", async () => {
    const ids = Array.from({ length: 200 }, (_, i) => BigInt(i * 3));
    const leaves = vaults(ids, 4, 10);
    const { out, store } = await kitOf("spot-v4.0", leaves, 100);
    await store.close();
    const manifestPath = join(out, "manifest.json");
    const original = await readFile(manifestPath, "utf8");
    const kit = await openKit(fromDir(out), { pedersen: H });
    await expect(kit.proof(1n)).rejects.toMatchObject({ reason: "not_found" });
    await expect(kit.proof(10_000n)).rejects.toMatchObject({ reason: "not_found" });
    await expect(openKit(fromDir(out), { pedersen: H, expectedRoot: 5n })).rejects.toMatchObject({
      reason: "root",
    });

    // A byte of shard 1 changed: its SHA-256 is not the manifest's.
    const shard = join(out, "shards", "1.bin");
    const bytes = await readFile(shard);
    const bad = Buffer.from(bytes);
    bad[bad.length - 5]! ^= 1;
    await writeFile(shard, bad);
    const refusal = await openKit(fromDir(out), { pedersen: H }).then((k) =>
      k.proof(ids[150]!).catch((e: unknown) => e),
    );
    expect(refusal).toBeInstanceOf(KitRefused);
    expect(refusal).toMatchObject({ reason: "shard", message: expect.stringContaining("SHA-256") });
    // A leaf's byte changed inside the shard and the manifest made to say the new SHA-256: the
    // shard is well-formed, and its path no longer leads to the root.
    const { gunzipSync, gzipSync } = await import("node:zlib");
    const m = JSON.parse(original);
    const gz = m.shards[1].encoding === "gzip";
    const raw = Buffer.from(gz ? gunzipSync(bytes) : bytes);
    raw[raw.length - 1]! ^= 1;
    const forged = gz ? gzipSync(raw) : raw;
    await writeFile(shard, forged);
    const { createHash } = await import("node:crypto");
    m.shards[1].sha256 = createHash("sha256").update(forged).digest("hex");
    await writeFile(manifestPath, JSON.stringify(m));
    const k2 = await openKit(fromDir(out), { pedersen: H });
    await expect(k2.proof(ids[199]!)).rejects.toMatchObject({
      reason: "root",
      message: expect.stringContaining("refused"),
    });
    // A forged shard that unpacks to megabytes is stopped before it fills memory.
    const bomb = gzipSync(new Uint8Array(4 << 20));
    await writeFile(shard, bomb);
    m.shards[1].encoding = "gzip";
    m.shards[1].sha256 = createHash("sha256").update(bomb).digest("hex");
    await writeFile(manifestPath, JSON.stringify(m));
    await expect((await openKit(fromDir(out), { pedersen: H })).proof(ids[150]!)).rejects.toMatchObject({
      reason: "shard",
      message: expect.stringContaining("unpacks to more than"),
    });
    await writeFile(shard, bytes);
    // A manifest with another root: every proof refused.
    await writeFile(
      manifestPath,
      original.replace(m.root, "0x0" + m.root.slice(3).split("").reverse().join("")),
    );
    await expect((await openKit(fromDir(out), { pedersen: H })).proof(ids[0]!)).rejects.toMatchObject({
      reason: "root",
    });
    // A malformed manifest.
    await writeFile(manifestPath, original.replace('"leaves": 200', '"leaves": 201'));
    await expect(openKit(fromDir(out), { pedersen: H })).rejects.toMatchObject({ reason: "manifest" });
    await writeFile(manifestPath, original);
    // The index changed.
    const indexFile = join(out, "keys", "all.bin");
    const index = await readFile(indexFile);
    const badIndex = Buffer.from(index);
    badIndex[10]! ^= 1;
    await writeFile(indexFile, badIndex);
    const key = (leaves.get(0n) as VaultLeaf).key;
    await expect((await openKit(fromDir(out), { pedersen: H })).idsOfKey(key)).rejects.toMatchObject({
      reason: "index",
    });
  }, 120_000);
});

describe("the key index", () => {
  it.each([
    [1_000_000, 0],
    [2000, 1],
    [100, 2],
    [10, 3],
  ])(
    "files of about %i pairs: split by %i hex digits, every pair in its file, in order",
    async (fileEntries, digits) => {
      const { idsInIndex } = await import("../../src/escape/kit/v2/key-index.js");
      const { KeyIndexWriter } = await import("../../src/escape/kit/v2/index-writer.js");
      const { mkdir, readdir } = await import("node:fs/promises");
      // 5,000 keys of 4 ids each, added in an order neither of keys nor of ids.
      const rand = prng(fileEntries);
      const keyOf = (k: number): bigint =>
        (BigInt(k + 1) * 0x9e3779b97f4a7c15n * 0xfedcban) & ((1n << 251n) - 1n);
      const dir = await tempDir("dacd-kit2-index-");
      await mkdir(join(dir, "keys"));
      const writer = await KeyIndexWriter.open(join(dir, "spill"), fileEntries);
      const idsOf = new Map<bigint, bigint[]>();
      for (let i = 0; i < 20_000; i++) {
        const key = keyOf(Math.floor(rand() * 5000));
        const id = BigInt(i * 104729 + 3) % 2n ** 31n;
        writer.add(key, id);
        idsOf.set(key, [...(idsOf.get(key) ?? []), id]);
      }
      const index = await writer.write(dir);
      expect(index.suffix_digits).toBe(digits);
      const names = (await readdir(join(dir, "keys"))).sort();
      expect(names).toEqual(
        Object.keys(index.files)
          .map((s) => `${s === "" ? "all" : s}.bin`)
          .sort(),
      );
      // Every file read whole, as the reader checks it (its order and suffixes), into key → ids.
      const found = new Map<bigint, bigint[]>();
      for (const name of names) {
        const file = new Uint8Array(await readFile(join(dir, "keys", name)));
        const suffix = name === "all.bin" ? "" : name.slice(0, -4);
        // 4 bytes of magic, the count (LEB128, at most 3 bytes here), then 40 bytes a pair.
        const body = file.subarray(file.length - Math.floor((file.length - 4) / 40) * 40);
        for (let at = 0; at < body.length; at += 40) {
          const key = BigInt("0x" + Buffer.from(body.subarray(at, at + 32)).toString("hex"));
          const id = BigInt("0x" + Buffer.from(body.subarray(at + 32, at + 40)).toString("hex"));
          found.set(key, [...(found.get(key) ?? []), id]);
        }
        const first = BigInt("0x" + Buffer.from(body.subarray(0, 32)).toString("hex"));
        const key64 = first.toString(16).padStart(64, "0");
        expect(idsInIndex(file, key64, suffix, name)).toEqual(
          [...idsOf.get(first)!].sort((a, b) => (a < b ? -1 : 1)),
        );
      }
      expect(found.size).toBe(idsOf.size);
      for (const [key, ids] of idsOf)
        expect(found.get(key)).toEqual([...ids].sort((a, b) => (a < b ? -1 : 1)));
    },
  );

  it("splits by the keys' last hex digits, so keys far below 2^256 spread over the files", async () => {
    const { idsInIndex } = await import("../../src/escape/kit/v2/key-index.js");
    const { KeyIndexWriter } = await import("../../src/escape/kit/v2/index-writer.js");
    const { mkdir } = await import("node:fs/promises");
    const n = 100_000;
    // Keys below 2^84, as a generator of sequential keys gives them: their first digits are all 0.
    const keyOf = (i: number): bigint => (BigInt(i + 1) * 0x9e3779b97f4a7c15n) & ((1n << 250n) - 1n);
    const dir = await tempDir("dacd-kit2-index-");
    await mkdir(join(dir, "keys"));
    const pairs = await KeyIndexWriter.open(join(dir, "spill"));
    for (let i = 0; i < n; i++) pairs.add(keyOf(i), BigInt(n - i));
    const index = await pairs.write(dir);
    expect(existsSync(join(dir, "spill"))).toBe(false);
    expect(index.suffix_digits).toBe(1);
    expect(Object.keys(index.files).sort()).toEqual([..."0123456789abcdef"]);
    for (const i of [0, 1, 4242, n - 1]) {
      const key64 = keyOf(i).toString(16).padStart(64, "0");
      const suffix = key64.slice(63);
      const file = await readFile(join(dir, "keys", `${suffix}.bin`));
      expect(file.length).toBeLessThan(8192 * 40);
      expect(idsInIndex(new Uint8Array(file), key64, suffix, "index")).toEqual([BigInt(n - i)]);
    }
  });
});
