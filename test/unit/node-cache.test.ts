import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LevelStore } from "../../src/storage/level-store.js";
import { toHex64 } from "../../src/util/bytes.js";
import { warmTopNodes } from "../../src/verifier/warm-cache.js";
import { MemoryNodeStore } from "../../src/storage/memory-store.js";
import { computeRoots, type TreeState } from "../../src/verifier/trees/update/compute-roots.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import { createTopNodeCache, type TopNodeCache } from "../../src/verifier/trees/cache/node-cache.js";
import { MISSING_RECORD, type NodeSource } from "../../src/storage/records/node-source.js";
import { NodeWrites } from "../../src/storage/records/node-writes.js";
import type { TreeSpec } from "../../src/model/profile.js";
import { prng } from "../../src/util/prng.js";
import type { LeafChanges } from "../../src/model/state-update.js";

const engine = createEngine("auto");
const toHex = (b: Uint8Array | undefined): string => Buffer.from(b ?? []).toString("hex");
const h = (n: number): Uint8Array => new Uint8Array(32).fill(n);
const concat = (parts: Uint8Array[]): Uint8Array => new Uint8Array(Buffer.concat(parts));

describe("TopNodeCache", () => {
  it("answers by hash and gen, keeps one node per position and ignores levels below its depth", () => {
    const cache = createTopNodeCache(2);
    cache.remember("vault", 0, 0, h(1), 3, h(11));
    cache.remember("vault", 1, 1, h(2), 2, h(12));
    cache.remember("vault", 2, 0, h(3), 3, h(13)); // depth 2: not kept
    expect(cache.get(h(1), 3)).toEqual(h(11));
    expect(cache.get(h(2), 2)).toEqual(h(12));
    expect(cache.get(h(3), 3)).toBeUndefined();
    // A new root replaces the old one; the other tree's positions are its own.
    cache.remember("vault", 0, 0, h(4), 4, h(14));
    cache.remember("order", 0, 0, h(5), 4, h(15));
    expect(cache.get(h(1), 3)).toBeUndefined();
    expect(cache.get(h(4), 4)).toEqual(h(14));
    expect(cache.get(h(5), 4)).toEqual(h(15));
    expect(cache.size).toBe(3);
  });

  it("never answers for a node remembered under another gen: the JavaScript cache", async () => {
    const cache = createTopNodeCache(4, null);
    cache.remember("vault", 1, 0, h(1), 5, h(11));
    expect(cache.get(h(1), 5)).toEqual(h(11));
    expect(cache.get(h(1), 6)).toBeUndefined();
    expect(cache.get(h(1), 0)).toBeUndefined();
    // Through a view: asked under another gen, the store is read (under that gen), by hash as by
    // position.
    const asked: string[] = [];
    const source: NodeSource = {
      getNodes: (hashes, gens) => {
        hashes.forEach((hash, i) => asked.push(`${toHex(hash.subarray(0, 1))}@${gens[i]}`));
        return Promise.resolve(hashes.map(() => h(99)));
      },
    };
    const view = cache.over(source);
    expect(await view.getNodes([h(1), h(1)], [5, 6])).toEqual([h(11), h(99)]);
    expect(view.getCached!(h(1), 6)).toBeUndefined();
    expect(view.getCached!(h(1), 5)).toEqual(h(11));
    const packed = await view.getPacked!("vault", h(1), Int32Array.from([1, 0]), Uint32Array.of(7));
    expect(toHex(packed.records)).toBe(toHex(h(99)));
    expect(asked).toEqual(["01@6", "01@7"]);
    // The same hash written again at its position by a later batch replaces the older copy.
    cache.remember("vault", 1, 0, h(1), 8, h(18));
    expect(cache.get(h(1), 5)).toBeUndefined();
    expect(cache.get(h(1), 8)).toEqual(h(18));
    expect(cache.size).toBe(1);
  });

  it("hands out copies that keep their bytes when the slot is reused and the slab regrows", () => {
    const cache = createTopNodeCache(12);
    cache.remember("vault", 1, 0, h(1), 1, h(11));
    const first = cache.get(h(1), 1)!;
    const firstAgain = cache.get(h(1), 1)!;
    // The same position gets a newer node (its slot is rewritten), then thousands more grow the slab.
    cache.remember("vault", 1, 0, h(2), 2, h(12));
    for (let i = 0; i < 3000; i++) cache.remember("vault", 11, i, h(100 + (i % 100)), 2, h(i % 250));
    expect(first).toEqual(h(11));
    expect(firstAgain).toEqual(h(11));
    expect(cache.get(h(2), 2)).toEqual(h(12));
    // Two hits are two copies: writing into one does not change the other or the cache.
    first[0] = 0;
    expect(firstAgain).toEqual(h(11));
  });

  it("agrees with a plain map of positions over many replacements (stale cells, table rebuilds)", () => {
    const cache = createTopNodeCache(14);
    const rand = prng(3);
    const at = new Map<string, string>(); // position → hash hex and gen currently there
    const records = new Map<string, Uint8Array>(); // hash hex and gen → record
    const randomBytes = (n: number): Uint8Array =>
      Uint8Array.from({ length: n }, () => Math.floor(rand() * 256));
    for (let i = 0; i < 60_000; i++) {
      const depth = Math.floor(rand() * 14);
      const index = Math.floor(rand() * Math.min(2 ** depth, 300));
      const hash = randomBytes(32);
      const gen = Math.floor(rand() * 3);
      const record = randomBytes(rand() < 0.5 ? 72 : 69);
      cache.remember("t", depth, index, hash, gen, record);
      at.set(`${depth}/${index}`, `${toHex(hash)}/${gen}`);
      records.set(`${toHex(hash)}/${gen}`, record);
    }
    const current = new Set(at.values());
    expect(cache.size).toBe(at.size);
    for (const [key, record] of records) {
      const [hex, gen] = key.split("/");
      const found = cache.get(Buffer.from(hex!, "hex"), Number(gen));
      if (current.has(key)) expect(toHex(found)).toBe(toHex(record));
      else expect(found).toBeUndefined();
      // Never under another gen (the hashes are random: no other gen's copy is kept).
      expect(cache.get(Buffer.from(hex!, "hex"), Number(gen) + 1)).toBeUndefined();
    }
  });

  it("looks up packed by position, then by hash, and reads the rest from the source in one lookup", async () => {
    const cache = createTopNodeCache(4, null);
    const source = new MemoryNodeStore();
    source.putNodes([
      { hash: h(7), record: h(17) },
      { hash: h(8), record: new Uint8Array(165).fill(18) },
    ]);
    const lookups: string[][] = [];
    const counted: NodeSource = {
      getNodes: (hashes, gens) => (
        lookups.push(hashes.map((hash, i) => `${toHex(hash.subarray(0, 1))}@${gens[i]}`)),
        source.getNodes(hashes, gens)
      ),
    };
    cache.remember("vault", 1, 0, h(1), 1, h(11));
    cache.remember("vault", 3, 5, h(2), 2, new Uint8Array(69).fill(12));
    cache.remember("order", 2, 1, h(3), 3, h(13));
    const view = cache.over(counted);
    // At its position; asked at another position (found by hash); in the other tree (by hash);
    // below the cached levels (the source, though the cache has it); from the source; nowhere.
    const asked: [Uint8Array, number, number, number][] = [
      [h(1), 1, 0, 1],
      [h(2), 3, 6, 2],
      [h(3), 2, 1, 3],
      [h(1), 4, -1, 1],
      [h(8), 3, 2, 4],
      [h(9), 0, 0, 5],
    ];
    const hashes = new Uint8Array(asked.length * 32);
    const positions = new Int32Array(asked.length * 2);
    const gens = new Uint32Array(asked.length);
    asked.forEach(([hash, depth, index, gen], i) => {
      hashes.set(hash, i * 32);
      positions.set([depth, index], 2 * i);
      gens[i] = gen;
    });
    const packed = await view.getPacked!("vault", hashes, positions, gens);
    expect([...packed.lengths]).toEqual([32, 69, 32, MISSING_RECORD, 165, MISSING_RECORD]);
    expect(toHex(packed.records)).toBe(
      toHex(concat([h(11), new Uint8Array(69).fill(12), h(13), new Uint8Array(165).fill(18)])),
    );
    expect(packed.unplaced).toEqual([1, 2, 3, 4, 5]);
    expect(lookups).toEqual([["01@1", "08@4", "09@5"]]);
  });

  it("copies packed hits before reading the source, which may replace their slots meanwhile", async () => {
    const cache = createTopNodeCache(4, null);
    cache.remember("vault", 2, 1, h(1), 1, h(11));
    const source: NodeSource = {
      getNodes: async (hashes) => {
        cache.remember("vault", 2, 1, h(2), 2, h(12)); // another tree's update, during the read
        for (let i = 0; i < 3000; i++) cache.remember("order", 3, i % 8, h(i % 200), 2, h(i % 250));
        return hashes.map(() => undefined);
      },
    };
    const hashes = concat([h(1), h(5)]);
    const packed = await cache.over(source).getPacked!(
      "vault",
      hashes,
      Int32Array.from([2, 1, 0, 0]),
      Uint32Array.of(1, 1),
    );
    expect(toHex(packed.records)).toBe(toHex(h(11)));
  });

  it("remembers packed nodes as one remember call each would", () => {
    const rand = prng(8);
    const one = createTopNodeCache(6);
    const many = createTopNodeCache(6);
    for (let round = 0; round < 5; round++) {
      const n = 200;
      const hashes = new Uint8Array(n * 32);
      const positions = new Int32Array(n * 2);
      const lengths = new Uint32Array(n);
      const gens = new Uint32Array(n);
      const parts: Uint8Array[] = [];
      for (let i = 0; i < n; i++) {
        const depth = Math.floor(rand() * 8); // some below the cached levels
        const index = depth < 6 && rand() < 0.9 ? Math.floor(rand() * 2 ** depth) : -1;
        const hash = h(Math.floor(rand() * 250));
        const gen = (gens[i] = 1 + Math.floor(rand() * 3));
        hashes.set(hash, i * 32);
        positions.set([depth, index], 2 * i);
        const record = new Uint8Array([72, 69, 101, 165][Math.floor(rand() * 4)]!).fill(i % 256);
        lengths[i] = record.length;
        parts.push(record);
        if (index >= 0) one.remember("vault", depth, index, hash, gen, record);
      }
      many.rememberPacked("vault", hashes, gens, concat(parts), lengths, positions);
      expect(many.size).toBe(one.size);
      for (let b = 0; b < 250; b++)
        for (let gen = 0; gen <= 4; gen++)
          expect(toHex(many.get(h(b), gen)), `round ${round} hash ${b} gen ${gen}`).toBe(
            toHex(one.get(h(b), gen)),
          );
    }
  });

  it("never answers for a hash that only shares its lookup key", () => {
    const cache = createTopNodeCache(4, null);
    const a = h(7);
    const b = h(7);
    b[0] = 8; // same last 6 bytes (the map key), different hash
    cache.remember("vault", 0, 0, a, 1, h(9));
    expect(cache.get(a, 1)).toEqual(h(9));
    expect(cache.get(b, 1)).toBeUndefined();
  });

  it.each([
    { name: "vault", kind: "merkle", height: 31, leaf: "order" },
    { name: "vault", kind: "patricia", height: 251, leaf: "order" },
  ] satisfies TreeSpec[])(
    "keeps roots equal to an uncached run and saves reads near the root: $kind",
    async (spec) => {
      const plain = new MemoryNodeStore();
      const cachedStore = new MemoryNodeStore();
      const cache = createTopNodeCache(12);
      const reads = { plain: 0, cached: 0 };
      const counting = (store: MemoryNodeStore, which: keyof typeof reads): NodeSource => ({
        getNodes: (hs, gens) => {
          reads[which] += hs.length;
          return store.getNodes(hs, gens);
        },
      });
      const rand = prng(5);
      let plainRoots: TreeState | null = null;
      let cachedRoots: TreeState | null = null;
      for (let batch = 0; batch < 6; batch++) {
        const changes: LeafChanges = new Map();
        while (changes.size < 300)
          changes.set(
            BigInt(Math.floor(rand() * 2 ** 31)) << BigInt(spec.height - 31),
            BigInt(Math.floor(rand() * 3)),
          );
        reads.plain = reads.cached = 0;
        const a = await computeRoots(
          engine,
          counting(plain, "plain"),
          [spec],
          plainRoots,
          { vault: changes },
          batch,
        );
        plain.putNodes(a.newNodes);
        const b = await computeRoots(
          engine,
          cache.over(counting(cachedStore, "cached")),
          [spec],
          cachedRoots,
          { vault: changes },
          batch,
        );
        cachedStore.putNodes(b.newNodes);
        expect(b.roots.vault).toEqual(a.roots.vault);
        expect(b.rootGens.vault).toBe(batch);
        expect(a.rootGens.vault).toBe(batch);
        plainRoots = { roots: a.roots, gens: a.rootGens };
        cachedRoots = { roots: b.roots, gens: b.rootGens };
      }
      // The last batch found the top 12 levels in memory: far fewer store reads than without the cache.
      expect(cache.size).toBeGreaterThan(500);
      expect(reads.plain).toBeGreaterThan(500);
      expect(reads.cached).toBeLessThan(reads.plain / 2);
    },
  );

  it("is warmed from the newest stored batch: the next batch then reads as little as a warm daemon's", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dacd-warm-"));
    const store = await LevelStore.open(dir);
    try {
      const trees: TreeSpec[] = [
        { name: "vault", kind: "merkle", height: 31, leaf: "order" },
        { name: "order", kind: "patricia", height: 251, leaf: "order" },
      ];
      const rand = prng(8);
      const changesOf = () => {
        const vault: LeafChanges = new Map();
        const order: LeafChanges = new Map();
        while (vault.size < 400) vault.set(BigInt(Math.floor(rand() * 2 ** 31)), 1n + BigInt(vault.size));
        while (order.size < 400)
          order.set(BigInt(Math.floor(rand() * 2 ** 31)) << 200n, 1n + BigInt(order.size));
        return { vault, order };
      };
      // The cache of a daemon that verified batch 0 itself.
      const daemon = createTopNodeCache(12);
      const first = await computeRoots(engine, daemon.over(store), trees, null, changesOf(), 3);
      expect(first.rootGens).toEqual({ vault: 3, order: 3 });
      await store.commitBatch(
        {
          batch_id: 3,
          prev_batch_id: 2,
          sequence_number: 3,
          roots: { vault: toHex64(first.roots.vault!), order: toHex64(first.roots.order!) },
          root_gens: { vault: first.rootGens.vault!, order: first.rootGens.order! },
          heights: { vault: 31, order: 251 },
          claim_hash: "",
          signature: "",
          member_key: "",
          verified_at: "",
        },
        first.newNodes,
        new NodeWrites(),
      );
      const next = changesOf();
      const readsWith = async (cache: TopNodeCache): Promise<number> => {
        let reads = 0;
        const counted: NodeSource = {
          getNodes: (hs, gens) => {
            reads += hs.length;
            return store.getNodes(hs, gens);
          },
        };
        const prev = { roots: first.roots, gens: first.rootGens };
        const r = await computeRoots(engine, cache.over(counted), trees, prev, next, 4);
        const plain = await computeRoots(engine, store, trees, prev, next, 4);
        expect(r.roots).toEqual(plain.roots);
        expect(r.rootGens).toEqual(plain.rootGens);
        return reads;
      };
      const warm = createTopNodeCache(12);
      const cached = await warmTopNodes(warm, store, engine, trees);
      expect(cached).toBe(warm.size);
      const [storedRoot] = await store.getNodes([first.roots.vault!], [3]);
      expect(storedRoot).toBeDefined();
      expect(toHex(warm.get(first.roots.vault!, 3))).toBe(toHex(storedRoot));
      expect(warm.get(first.roots.vault!, 0)).toBeUndefined();
      const cold = await readsWith(createTopNodeCache(12));
      const warmed = await readsWith(warm);
      const daemonReads = await readsWith(daemon);
      expect(cold).toBeGreaterThan(500);
      // Only what lies below the cached levels, and the Merkle edges, which are never cached.
      expect(warmed).toBeLessThan(cold * 0.75);
      expect(warmed).toBe(daemonReads);
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
