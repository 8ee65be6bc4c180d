import { join } from "node:path";
import { ClassicLevel } from "../../src/storage/classic-level.js";
import { afterAll, describe, expect, it } from "vitest";
import { prng } from "../../src/util/prng.js";
import { checkStore } from "../../src/maintenance/integrity-check.js";
import { dumpStore } from "../../src/escape/dump.js";
import { loadDump } from "../../src/escape/load.js";
import { metaKey, Prefix, treeKeyParts, TreeKind } from "../../src/storage/keys.js";
import { LevelStore } from "../../src/storage/level-store.js";
import { bigintToBytes32, bytesEqual, bytesToBigint, toHex64 } from "../../src/util/bytes.js";
import { buildMerkle } from "../../src/verifier/trees/bulk/bulk-build.js";
import { emptyRoots } from "../../src/verifier/trees/update/compute-roots.js";
import {
  ancestorsAt,
  edgeLeafGen,
  encodeMerkleEdge,
  isMerkleEdge,
  merkleEdgeLength,
  recomputeMerkleEdges,
} from "../../src/verifier/trees/format/merkle-edge.js";
import type { NodeWrite } from "../../src/storage/records/node-source.js";
import { naiveMerkleRoot } from "../helpers/naive-trees.js";
import { chainStore, engine, randomBig } from "../helpers/chain-store.js";
import { removeTempDirs, tempDir } from "../helpers/temp-dir.js";
import { levelDb } from "../../src/storage/level-db.js";
import {
  BINARY_RECORD_LENGTH,
  childGen,
  edgeLength,
  isBinaryRecord,
  NODE_FORMAT,
} from "../../src/storage/records/node-record.js";

afterAll(removeTempDirs);

function pack(leaves: Map<bigint, bigint>): { ids: bigint[]; hashes: Uint8Array } {
  const sorted = [...leaves].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const hashes = new Uint8Array(sorted.length * 32);
  sorted.forEach(([, v], i) => hashes.set(bigintToBytes32(v), i * 32));
  return { ids: sorted.map(([id]) => id), hashes };
}

/**
 * Checks the records of a built tree against its leaves: every record hashes to its key (binary
 * nodes directly, edges by recomputeMerkleEdges, every chain entry included), walking them from
 * the root finds exactly the non-empty leaves, the tree is canonical (binary nodes above two or
 * more leaves, edges for the maximal single-leaf subtrees) and no record is unreachable. Every
 * record names its non-empty children (an edge its leaf) by `gen`, the build's, and empty ones by 0.
 */
async function verifyRecords(
  empty: readonly Uint8Array[],
  root: Uint8Array,
  records: Map<string, Uint8Array>,
  leaves: Map<bigint, bigint>,
  gen: number,
): Promise<void> {
  const height = empty.length - 1;
  const e0 = bytesToBigint(empty[0]!);
  const want = new Map([...leaves].filter(([, v]) => v !== e0));

  // Every record verifies on its own.
  const keys = [...records.keys()];
  const binary = keys.filter((k) => isBinaryRecord(records.get(k)!));
  const edges = keys.filter((k) => !isBinaryRecord(records.get(k)!));
  for (const k of binary) {
    const rec = records.get(k)!;
    expect(toHex64(await engine.hashMany(rec.subarray(0, 32), rec.subarray(32, 64)))).toBe(k);
  }
  for (const k of edges) expect(isMerkleEdge(records.get(k)!, records.get(k)![64]!)).toBe(true);
  const checks = await recomputeMerkleEdges(
    engine,
    empty,
    edges.map((k) => records.get(k)!),
  );
  checks.forEach((c, i) => {
    expect(c.badChainAt).toBeUndefined();
    expect(toHex64(c.top)).toBe(edges[i]);
  });

  // Walk from the root: the leaves found, the records used, and the canonical shape.
  const found = new Map<bigint, bigint>();
  const used = new Set<string>();
  const walk = (hash: Uint8Array, h: number, index: bigint): number => {
    if (bytesEqual(hash, empty[h]!)) return 0;
    if (h === 0) {
      found.set(index, bytesToBigint(hash));
      return 1;
    }
    const key = toHex64(hash);
    const rec = records.get(key);
    expect(rec, `record of node (${h}, ${index})`).toBeDefined();
    used.add(key);
    if (isBinaryRecord(rec!)) {
      for (const side of [0, 1] as const) {
        const childEmpty = bytesEqual(rec!.subarray(side * 32, side * 32 + 32), empty[h - 1]!);
        expect(childGen(rec!, side), `gen of child ${side} of (${h}, ${index})`).toBe(childEmpty ? 0 : gen);
      }
      const n =
        walk(rec!.subarray(0, 32), h - 1, index * 2n) + walk(rec!.subarray(32, 64), h - 1, index * 2n + 1n);
      expect(n, `binary node (${h}, ${index}) above ${n} leaves`).toBeGreaterThanOrEqual(2);
      return n;
    }
    expect(rec![64]).toBe(h);
    expect(edgeLeafGen(rec!), `gen of the leaf of edge (${h}, ${index})`).toBe(gen);
    const leaf = (index << BigInt(h)) | bytesToBigint(rec!, 32);
    found.set(leaf, bytesToBigint(rec!, 0, 32));
    return 1;
  };
  const total = walk(root, height, 0n);
  expect(total).toBe(want.size);
  expect(found).toEqual(want);
  expect(used.size).toBe(records.size);
  // A lone leaf is an edge up to the root.
  if (want.size === 1 && height > 0)
    expect(records.get(toHex64(root))!.length).not.toBe(BINARY_RECORD_LENGTH);
}

async function buildAndVerify(
  height: number,
  leaves: Map<bigint, bigint>,
  leafKind: "order" | "vault" = "order",
  opts: { sinkChunk?: number; engineChunk?: number; gen?: number } = {},
): Promise<Map<string, Uint8Array>> {
  const empty = await emptyRoots(engine, leafKind, height);
  const records = new Map<string, Uint8Array>();
  let writes = 0;
  const sink = (nodes: NodeWrite[]): void => {
    if (opts.sinkChunk) expect(nodes.length).toBeLessThanOrEqual(opts.sinkChunk);
    for (const n of nodes) {
      writes++;
      records.set(toHex64(n.hash), n.record);
    }
  };
  const root = await buildMerkle(engine, empty, pack(leaves), sink, opts);
  expect(bytesToBigint(root)).toBe(naiveMerkleRoot(height, leaves, bytesToBigint(empty[0]!)));
  expect(writes).toBe(records.size); // no record twice
  await verifyRecords(empty, root, records, leaves, opts.gen ?? 0);
  return records;
}

const top = (h: number): bigint => (1n << BigInt(h)) - 1n;

describe("buildMerkle writes the canonical form with edges", () => {
  const cases: [string, number, bigint[]][] = [
    ["no leaves, H=4", 4, []],
    ["one leaf at 0, H=4", 4, [0n]],
    ["one leaf at the end, H=4", 4, [15n]],
    ["one leaf in the middle, H=4", 4, [9n]],
    ["two adjacent leaves, H=4", 4, [6n, 7n]],
    ["two adjacent leaves across halves, H=4", 4, [7n, 8n]],
    ["leaves at 0 and 2^H−1, H=4", 4, [0n, 15n]],
    ["a full tree, H=4", 4, Array.from({ length: 16 }, (_, i) => BigInt(i))],
    ["one leaf, H=1", 1, [1n]],
    ["two leaves, H=1", 1, [0n, 1n]],
    ["one leaf, H=0", 0, [0n]],
    ["no leaves, H=64", 64, []],
    ["one leaf at 0, H=64", 64, [0n]],
    ["one leaf at 2^64−1, H=64", 64, [top(64)]],
    ["leaves at 0 and 2^64−1, H=64", 64, [0n, top(64)]],
    ["two adjacent leaves, H=64", 64, [1234567890123n, 1234567890124n]],
    ["adjacent leaves around the middle, H=64", 64, [top(63), 1n << 63n]],
    ["a cluster and outliers, H=64", 64, [0n, 1n, 2n, 3n, 5n, 1n << 40n, top(64) - 1n, top(64)]],
  ];
  it.each(cases)("%s", async (_name, height, ids) => {
    const r = prng(ids.length + height);
    const leaves = new Map(ids.map((id) => [id, randomBig(r, 240) + 1n]));
    await buildAndVerify(height, leaves);
    await buildAndVerify(height, leaves, "order", { sinkChunk: 2, engineChunk: 3, gen: 0x8000_0001 });
  });

  // Seconds on a quiet machine, more on a busy one: 60 s rather than the unit project's 20.
  it.each([4, 10, 31, 64])(
    "random sparse and clustered leaf sets (H=%i)",
    async (height) => {
      for (let seed = 1; seed <= 6; seed++) {
        const r = prng(seed * 97 + height);
        const leaves = new Map<bigint, bigint>();
        const n = Math.floor(r() * Math.min(60, 2 ** height));
        while (leaves.size < n) {
          // Some ids clustered (shared subtrees near the bottom), most spread over the whole tree.
          const id = r() < 0.3 ? BigInt(Math.floor(r() * 8)) : randomBig(r, height);
          leaves.set(id, randomBig(r, 240) + 1n);
        }
        const opts = seed % 2 === 0 ? { sinkChunk: 5, engineChunk: 7, gen: seed } : {};
        await buildAndVerify(height, leaves, "order", opts);
      }
    },
    60_000,
  );

  it("drops empty leaves (hash E[0]) and works with a non-zero E[0]", async () => {
    const height = 8;
    const empty = await emptyRoots(engine, "vault", height);
    const e0 = bytesToBigint(empty[0]!);
    const leaves = new Map<bigint, bigint>([
      [3n, 11n],
      [4n, e0],
      [5n, 12n],
      [200n, e0],
      [201n, 13n],
    ]);
    const records = await buildAndVerify(height, leaves, "vault", { gen: 12 });
    // Leaf 201 is alone once 200 is dropped: one edge of height 7 (201 and 3, 5 first meet at 8).
    const edge201 = [...records.values()].find(
      (rec) => !isBinaryRecord(rec) && bytesToBigint(rec, 0) === 13n,
    );
    expect(edge201?.[64]).toBe(7);
    expect((await buildAndVerify(height, new Map([[7n, e0]]), "vault")).size).toBe(0);
  });
});

describe("isMerkleEdge", () => {
  it("accepts exactly the paths below 2^height, at every height and around every bit", () => {
    const rec = new Uint8Array(merkleEdgeLength(251));
    const next = prng(5);
    for (let height = 1; height <= 251; height++) {
      const r = rec.subarray(0, merkleEdgeLength(height));
      r[64] = height;
      const paths = [0n, (1n << BigInt(height)) - 1n, 1n << BigInt(height), randomBig(next, height)];
      if (height < 250) paths.push(1n << BigInt(height + 1), randomBig(next, 256) | (1n << BigInt(height)));
      for (const path of paths) {
        r.set(bigintToBytes32(path % 2n ** 256n), 32);
        expect(isMerkleEdge(r, height), `height ${height}, path ${path}`).toBe(path < 1n << BigInt(height));
      }
    }
    expect(isMerkleEdge(rec.subarray(0, merkleEdgeLength(9)), 10)).toBe(false);
  });
});

/** The ancestors of leaf `id` (hash `leaf`) at heights 0..height, by plain pair hashing. */
async function naiveChain(empty: readonly Uint8Array[], leaf: Uint8Array, id: bigint): Promise<Uint8Array[]> {
  const chain = [leaf];
  for (let k = 0; k + 1 < empty.length; k++) {
    const right = ((id >> BigInt(k)) & 1n) === 1n;
    chain.push(await engine.hashMany(right ? empty[k]! : chain[k]!, right ? chain[k]! : empty[k]!));
  }
  return chain;
}

describe("recomputeMerkleEdges", () => {
  it("finds an altered checkpoint, an altered leaf, and refuses a non-edge", async () => {
    const height = 20;
    const id = 0x9a5c3n;
    const empty = await emptyRoots(engine, "order", height);
    const records = new Map<string, Uint8Array>();
    await buildMerkle(
      engine,
      empty,
      pack(new Map([[id, 5n]])),
      (ns) => {
        for (const n of ns) records.set(toHex64(n.hash), n.record);
      },
      { gen: 0x01020304 },
    );
    expect(records.size).toBe(1);
    const [[key, rec]] = [...records] as [[string, Uint8Array]];
    expect(rec[64]).toBe(height);
    expect(rec.length).toBe(65 + 2 * 32 + 4); // checkpoints at heights 8 and 16, then the leaf's gen
    expect(rec.length).toBe(merkleEdgeLength(height));
    // The record is what encodeMerkleEdge makes of the whole chain, whose top is the key.
    const chain = await naiveChain(empty, bigintToBytes32(5n), id);
    expect(toHex64(chain[height]!)).toBe(key);
    expect(encodeMerkleEdge(chain, id, 0x01020304)).toEqual(rec);
    expect(rec.subarray(65, 97)).toEqual(chain[8]);
    expect(rec.subarray(97, 129)).toEqual(chain[16]);
    expect([...rec.subarray(129)]).toEqual([1, 2, 3, 4]);
    expect(edgeLeafGen(rec)).toBe(0x01020304);

    const badChain = rec.slice();
    badChain[65 + 32 + 31]! ^= 1; // the checkpoint at height 16
    const badLeaf = rec.slice();
    badLeaf[31]! ^= 1;
    const [ok, c, l] = await recomputeMerkleEdges(engine, empty, [rec, badChain, badLeaf]);
    expect(toHex64(ok!.top)).toBe(key);
    expect(ok!.badChainAt).toBeUndefined();
    expect(toHex64(c!.top)).toBe(key);
    expect(c!.badChainAt).toBe(16);
    expect(toHex64(l!.top)).not.toBe(key);
    expect(l!.badChainAt).toBe(8);
    await expect(recomputeMerkleEdges(engine, empty, [new Uint8Array(64)])).rejects.toThrow(RangeError);
    // A binary record is never taken for an edge, whatever its byte 64 says.
    const binary = new Uint8Array(BINARY_RECORD_LENGTH);
    binary[64] = 1;
    await expect(recomputeMerkleEdges(engine, empty, [binary])).rejects.toThrow(RangeError);
    await expect(recomputeMerkleEdges(engine, empty.slice(0, 4), [rec])).rejects.toThrow(RangeError);
    expect(await recomputeMerkleEdges(engine, empty, [])).toEqual([]);
  });
});

describe("ancestorsAt", () => {
  it("climbs every ancestor below an edge from its checkpoints, many edges at once", async () => {
    const height = 64;
    const empty = await emptyRoots(engine, "order", height);
    const next = prng(11);
    const recs: Uint8Array[] = [];
    const heights: number[] = [];
    const want: Uint8Array[] = [];
    for (const h of [1, 7, 8, 9, 16, 17, 45, 64]) {
      const id = randomBig(next, h);
      const leaf = bigintToBytes32(randomBig(next, 240) + 1n);
      const chain = await naiveChain(empty.slice(0, h + 1), leaf, id);
      const rec = encodeMerkleEdge(chain, id, h);
      expect(isMerkleEdge(rec, h)).toBe(true);
      expect(edgeLeafGen(rec)).toBe(h);
      for (let k = 0; k < h; k++) {
        recs.push(rec);
        heights.push(k);
        want.push(chain[k]!);
      }
    }
    expect(await ancestorsAt(engine, empty, recs, heights)).toEqual(want);
    // Records read from LevelDB are Buffers (whose slice is a view): they must come back untouched.
    const fromStore = recs.map((r) => Buffer.from(r));
    expect((await ancestorsAt(engine, empty, fromStore, heights)).map((a) => Buffer.from(a))).toEqual(
      want.map((w) => Buffer.from(w)),
    );
    expect(fromStore.map((b) => new Uint8Array(b))).toEqual(recs);
    // Not below the edge: the edge's own hash is its key, not an ancestor it can give.
    await expect(ancestorsAt(engine, empty, [recs[0]!], [1])).rejects.toThrow(RangeError);
  });
});

describe("deep check of a store loaded from a dump (edges from buildMerkle)", () => {
  it("passes, then names an altered edge chain and an altered edge leaf", async () => {
    const src = await chainStore("spot-chain");
    const dump = join(await tempDir(), "dump");
    await dumpStore(src.store, engine, { outDir: dump });
    await src.store.close();
    const store = await LevelStore.open(join(await tempDir(), "db"));
    try {
      await loadDump(store, engine, { fromDir: dump });
      const clean = await checkStore(store, engine, { deep: true });
      expect(clean.problems).toEqual([]);

      // Two edges of height ≥ 9 (a checkpoint to alter).
      const found: { key: Uint8Array; storeKey: Uint8Array; rec: Uint8Array }[] = [];
      for await (const [k, v] of levelDb(store).iterator({
        gte: Uint8Array.of(Prefix.tree),
        lt: Uint8Array.of(Prefix.tree + 1),
      })) {
        const { kind, hash } = treeKeyParts(k);
        if (kind !== TreeKind.node) continue;
        if (!isBinaryRecord(v) && edgeLength(v) >= 9)
          found.push({ key: hash.slice(), storeKey: k.slice(), rec: v.slice() });
        if (found.length === 2) break;
      }
      expect(found.length).toBe(2);
      const put = (storeKey: Uint8Array, rec: Uint8Array): Promise<void> => levelDb(store).put(storeKey, rec);
      const chain = found[0]!.rec.slice();
      chain[65 + 31]! ^= 1; // the checkpoint at height 8
      await put(found[0]!.storeKey, chain);
      const leaf = found[1]!.rec.slice();
      leaf[31]! ^= 1;
      await put(found[1]!.storeKey, leaf);

      const r = await checkStore(store, engine, { deep: true });
      expect(r.ok).toBe(false);
      expect(r.problems).toContainEqual(
        expect.objectContaining({
          hash: toHex64(found[0]!.key),
          problem: "edge chain differs from its recomputation at height 8",
        }),
      );
      expect(r.problems).not.toContainEqual(
        expect.objectContaining({
          hash: toHex64(found[0]!.key),
          problem: expect.stringMatching(/hashes to/),
        }),
      );
      expect(r.problems).toContainEqual(
        expect.objectContaining({
          hash: toHex64(found[1]!.key),
          problem: expect.stringMatching(/^record hashes to/),
        }),
      );
    } finally {
      await store.close();
    }
  });
});

describe("the store's node format", () => {
  const identity = { profile: "spot", heights: { vault: 31, order: 251 } };
  it("is recorded with a new store's identity, and a store of another format is refused", async () => {
    const freshDir = join(await tempDir(), "db");
    const fresh = await LevelStore.open(freshDir);
    await fresh.meta.ensureIdentity(identity);
    await fresh.close();
    const again = await LevelStore.open(freshDir); // its format was recorded with the identity
    await again.meta.ensureIdentity(identity);
    await again.close();
    // A store written before checkpoints: an identity and no format. Every command opens the
    // store through LevelStore.open, which refuses it.
    const dir = join(await tempDir(), "db");
    const old = await LevelStore.open(dir);
    await levelDb(old).put(metaKey("identity"), new TextEncoder().encode(JSON.stringify(identity)));
    await old.close();
    await expect(LevelStore.open(dir)).rejects.toMatchObject({
      code: "CONFIG",
      message: expect.stringMatching(
        new RegExp(`format 1, this dacd reads format ${NODE_FORMAT}`),
      ) as unknown,
    });
    // Refused without keeping LevelDB's lock: the same directory opens again once it is marked.
    // A store of format 2 (tree records keyed by hash alone, no child gens) is refused too.
    const mark = async (format: number): Promise<void> => {
      const raw = new ClassicLevel<Uint8Array, Uint8Array>(dir, {
        keyEncoding: "view",
        valueEncoding: "view",
      });
      await raw.put(metaKey("format"), new TextEncoder().encode(String(format)));
      await raw.close();
    };
    await mark(2);
    await expect(LevelStore.open(dir)).rejects.toMatchObject({
      code: "CONFIG",
      message: expect.stringMatching(
        new RegExp(`format 2, this dacd reads format ${NODE_FORMAT}`),
      ) as unknown,
    });
    await mark(NODE_FORMAT);
    const reopened = await LevelStore.open(dir);
    await reopened.meta.ensureIdentity(identity);
    await reopened.close();
  });
});
