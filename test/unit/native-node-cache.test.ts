import { describe, expect, it } from "vitest";
import { DacdError } from "../../src/errors.js";
import { createEngine } from "../../src/verifier/hash/select.js";
import { MemoryNodeStore } from "../../src/storage/memory-store.js";
import { bigintToBytes32 } from "../../src/util/bytes.js";
import { prng } from "../../src/util/prng.js";
import { emptySubtreeRoots } from "../../src/verifier/trees/update/compute-roots.js";
import { updateMerkle, updatePatricia } from "../../src/verifier/trees/update/update-tree.js";
import { nativeNodeCacheAddon } from "../../src/verifier/trees/native/native-node-cache.js";
import { createTopNodeCache } from "../../src/verifier/trees/cache/node-cache.js";
import type { NodeSource } from "../../src/storage/records/node-source.js";
import { countingSource, type TreeStats } from "../../src/verifier/trees/update/tree-stats.js";
import { randomBatches, walkOf, type Walk } from "../helpers/compare-walks.js";
import { hex } from "../helpers/recording-store.js";
import { nativeAvailable } from "../helpers/native-required.js";

const engine = createEngine("auto");
const addon = nativeNodeCacheAddon();
const haveAddon = nativeAvailable("the native addon", addon !== null);
const haveWalks = nativeAvailable("the native tree walks", walkOf("native") !== null);
const h = (n: number): Uint8Array => new Uint8Array(32).fill(n);
const toHex = (b: Uint8Array | undefined): string => (b ? hex(b) : "-");

describe.skipIf(!haveAddon)("the node cache in the native addon", () => {
  it("is the default where the addon is loaded, and DACD_NODE_CACHE=js keeps it in JavaScript", () => {
    expect(createTopNodeCache(4).isNative).toBe(true);
    expect(createTopNodeCache(4, null).isNative).toBe(false);
    expect(nativeNodeCacheAddon("js")).toBeNull();
    expect(nativeNodeCacheAddon("auto")).toBe(addon);
    // No levels, nothing to keep: no native cache either.
    expect(createTopNodeCache(0).isNative).toBe(false);
  });

  it("answers by hash and gen, keeps one node per position and ignores levels below its depth", () => {
    const cache = createTopNodeCache(2, addon);
    cache.remember("vault", 0, 0, h(1), 1, h(11));
    cache.remember("vault", 1, 1, h(2), 1, h(12));
    cache.remember("vault", 2, 0, h(3), 1, h(13)); // depth 2: not kept
    cache.remember("vault", 1, 0, h(6), 1, new Uint8Array(73)); // longer than a slot: not kept
    expect(cache.get(h(1), 1)).toEqual(h(11));
    expect(cache.get(h(2), 1)).toEqual(h(12));
    expect(cache.get(h(3), 1)).toBeUndefined();
    expect(cache.get(h(6), 1)).toBeUndefined();
    // Never under another gen.
    expect(cache.get(h(1), 2)).toBeUndefined();
    expect(cache.get(h(2), 0)).toBeUndefined();
    // A new root replaces the old one (its table cell goes stale); the other tree's positions are its own.
    cache.remember("vault", 0, 0, h(4), 2, h(14));
    cache.remember("order", 0, 0, h(5), 2, h(15));
    expect(cache.get(h(1), 1)).toBeUndefined();
    expect(cache.get(h(4), 2)).toEqual(h(14));
    expect(cache.get(h(5), 2)).toEqual(h(15));
    expect(cache.size).toBe(3);
    // The same node again at its position changes nothing; a hit is a copy.
    cache.remember("vault", 0, 0, h(4), 2, h(14));
    expect(cache.size).toBe(3);
    cache.get(h(4), 2)![0] = 0;
    expect(cache.get(h(4), 2)).toEqual(h(14));
    // The same hash written by a later batch replaces the older copy at its position.
    cache.remember("vault", 0, 0, h(4), 3, h(24));
    expect(cache.size).toBe(3);
    expect(cache.get(h(4), 2)).toBeUndefined();
    expect(cache.get(h(4), 3)).toEqual(h(24));
  });

  it("never answers for a hash that only shares its lookup key, nor for one whose slot was reused", () => {
    const cache = createTopNodeCache(8, addon);
    const a = h(1);
    const b = h(1);
    b[0] = 2; // the same 31 bits at the end: the same table key
    cache.remember("t", 3, 5, a, 1, h(21));
    expect(cache.get(b, 1)).toBeUndefined();
    cache.remember("t", 3, 6, b, 1, h(22));
    expect(cache.get(a, 1)).toEqual(h(21));
    expect(cache.get(b, 1)).toEqual(h(22));
    // a's slot goes to c: a's cell is stale, and b's, behind it in the probe sequence, still found.
    cache.remember("t", 3, 5, h(3), 1, h(23));
    expect(cache.get(a, 1)).toBeUndefined();
    expect(cache.get(b, 1)).toEqual(h(22));
    expect(cache.get(h(3), 1)).toEqual(h(23));
  });

  it("agrees with the JavaScript cache over many random replacements (stale cells, table rebuilds)", () => {
    const rand = prng(11);
    const caches = [createTopNodeCache(14, null), createTopNodeCache(14, addon)];
    const hashes: [Uint8Array, number][] = [];
    const bytes = (n: number): Uint8Array => Uint8Array.from({ length: n }, () => Math.floor(rand() * 256));
    for (let i = 0; i < 100_000; i++) {
      const depth = Math.floor(rand() * 16); // depths 14, 15: not kept
      const index = Math.floor(rand() * Math.min(2 ** depth, 3000));
      // Some hashes come back (the same node again, or at another position).
      // Some hashes come back, under their gen or another.
      const again =
        hashes.length > 0 && rand() < 0.1 ? hashes[Math.floor(rand() * hashes.length)]! : undefined;
      const hash = again?.[0] ?? bytes(32);
      const gen = again && rand() < 0.7 ? again[1] : Math.floor(rand() * 4);
      hashes.push([hash, gen]);
      const record = bytes([72, 69, 33, 73][Math.floor(rand() * 4)]!);
      const tree = rand() < 0.5 ? "vault" : "order";
      if (rand() < 0.5) for (const c of caches) c.remember(tree, depth, index, hash, gen, record);
      else {
        // The packed form, as a walk's new nodes come.
        const positions = Int32Array.from([depth, depth < 14 ? index : -1]);
        const lengths = Uint32Array.of(record.length);
        for (const c of caches) c.rememberPacked(tree, hash, Uint32Array.of(gen), record, lengths, positions);
      }
    }
    expect(caches[1]!.size).toBe(caches[0]!.size);
    expect(caches[0]!.size).toBeGreaterThan(10_000);
    let found = 0;
    for (const [hash, gen] of hashes) {
      for (const g of [gen, gen + 1]) {
        const [js, native] = caches.map((c) => c.get(hash, g));
        expect(toHex(native)).toBe(toHex(js));
        if (js && g === gen) found++;
      }
    }
    expect(found).toBeGreaterThan(10_000);
  });

  for (const native of [false, true])
    it(`at its node bound, a position nearer the top takes a deepest node's slot, any tree's: the ${native ? "native" : "JavaScript"} cache`, () => {
      const cache = createTopNodeCache(4, native ? addon : null, 6);
      const node = (n: number) => [h(n), 1, h(100 + n)] as const;
      const has = (n: number) => cache.get(h(n), 1) !== undefined;
      // The bound filled from the deepest kept level (depth 3) of one tree.
      for (let i = 0; i < 6; i++) cache.remember("vault", 3, i, ...node(10 + i));
      expect(cache.size).toBe(6);
      // Another tree's root takes the slot of a depth-3 node; a depth-3 position gets none.
      cache.remember("order", 0, 0, ...node(1));
      cache.remember("order", 3, 0, ...node(2));
      expect([has(1), has(2)]).toEqual([true, false]);
      expect([10, 11, 12, 13, 14, 15].filter(has)).toHaveLength(5);
      // Depth 2 and 1 take the rest of depth 3, then a new depth-2 position finds nothing deeper.
      for (let i = 0; i < 4; i++) cache.remember("vault", 2, i, ...node(20 + i));
      cache.remember("vault", 1, 0, ...node(30));
      expect([10, 11, 12, 13, 14, 15].filter(has)).toEqual([]);
      expect([20, 21, 22, 23, 30].every(has)).toBe(true);
      cache.remember("order", 2, 0, ...node(24));
      expect(has(24)).toBe(false);
      // A root takes a depth-2 slot; a replaced node keeps its own slot.
      cache.remember("vault", 0, 0, ...node(40));
      cache.remember("vault", 1, 0, ...node(31));
      expect([has(40), has(31), has(30)]).toEqual([true, true, false]);
      expect([20, 21, 22, 23].filter(has)).toHaveLength(3);
      expect(cache.size).toBe(6);
      // Every node is its own record still, where it is answered.
      for (const n of [1, 20, 21, 22, 23, 31, 40]) if (has(n)) expect(cache.get(h(n), 1)).toEqual(h(100 + n));
    });

  for (const native of [false, true])
    it(`a forgotten tree's slots go to new positions first, its nodes answered till then: the ${native ? "native" : "JavaScript"} cache`, () => {
      const cache = createTopNodeCache(4, native ? addon : null, 5);
      const node = (n: number) => [h(n), 1, h(100 + n)] as const;
      const has = (n: number) => cache.get(h(n), 1) !== undefined;
      for (let i = 0; i < 4; i++) cache.remember("vault", 2, i, ...node(10 + i));
      cache.remember("order", 0, 0, ...node(1));
      expect([cache.size, cache.full]).toEqual([5, true]);
      // The vault tree's branch moved: its positions go, its nodes stay findable by hash.
      cache.setTop("vault", 1, 0n);
      expect([cache.size, cache.full]).toEqual([1, false]);
      expect([10, 11, 12, 13].every(has)).toBe(true);
      // Its new positions take the four slots, though the slab holds five.
      for (const [depth, index, n] of [
        [0, 0, 20],
        [1, 0, 21],
        [1, 1, 22],
        [2, 3, 23],
      ] as const)
        cache.remember("vault", depth, index, ...node(n));
      expect([cache.size, cache.full]).toEqual([5, true]);
      expect([20, 21, 22, 23].every(has)).toBe(true);
      expect([10, 11, 12, 13].some(has)).toBe(false);
      // At the bound again: a new position takes the deepest node's slot.
      cache.remember("order", 1, 0, ...node(2));
      expect([has(2), has(23), has(1)]).toEqual([true, false, true]);
      for (const n of [1, 2, 20, 21, 22]) expect(cache.get(h(n), 1)).toEqual(h(100 + n));
    });

  it("agrees with the JavaScript cache at a node bound over many random inserts (deeper slots given up)", () => {
    const rand = prng(12);
    const caches = [createTopNodeCache(12, null, 3000), createTopNodeCache(12, addon, 3000)];
    const bytes = (n: number): Uint8Array => Uint8Array.from({ length: n }, () => Math.floor(rand() * 256));
    const seen: Uint8Array[] = [];
    // Both trees are first kept in the same order in both caches (the order deeper slots are sought in).
    for (const tree of ["vault", "order"])
      for (const c of caches) c.remember(tree, 0, 0, h(tree === "vault" ? 1 : 2), 1, h(9));
    for (let i = 0; i < 50_000; i++) {
      const depth = Math.min(11, Math.floor(-Math.log2(1 - rand()) * 3));
      const index = Math.floor(rand() * 2 ** depth);
      const hash = bytes(32);
      seen.push(hash);
      const record = bytes(33 + Math.floor(rand() * 40));
      const tree = rand() < 0.5 ? "vault" : "order";
      for (const c of caches) c.remember(tree, depth, index, hash, 1, record);
    }
    expect(caches.map((c) => c.size)).toEqual([3000, 3000]);
    let kept = 0;
    for (const hash of seen) {
      const [js, native] = caches.map((c) => c.get(hash, 1));
      expect(toHex(native)).toBe(toHex(js));
      if (js) kept++;
    }
    expect(kept).toBeGreaterThan(2000);
  });
});

/** The three ways a tree update can use the cache. */
const SETUPS = [
  { name: "JavaScript walk, JavaScript cache", walk: "js", native: false },
  { name: "native walk, JavaScript cache (packed calls)", walk: "native", native: false },
  { name: "native walk, native cache (consulted in the addon)", walk: "native", native: true },
] as const satisfies readonly { name: string; walk: Walk; native: boolean }[];

type Update = (
  nodes: NodeSource,
  root: Uint8Array,
  rootGen: number,
  batchGen: number,
  leaves: Map<bigint, Uint8Array>,
  walk: Walk,
) => Promise<{
  root: Uint8Array;
  rootGen: number;
  newNodes: Iterable<{ hash: Uint8Array; record: Uint8Array }>;
}>;

/** Runs random batches through every setup, each on its own store and cache; checks they agree. */
async function compareSetups(
  height: number,
  update: Update,
  emptyRoot: Uint8Array,
  levels: number,
  seed: number,
  steps: number,
) {
  const rand = prng(seed);
  // Ids spread over the tree's whole width (the top `height - 40` bits), so that its top levels branch.
  const nextBatch = randomBatches(
    rand,
    80,
    () => BigInt(Math.floor(rand() * 2 ** 40)) << BigInt(height - 40),
  );
  const runs = SETUPS.map((s) => {
    const memory = new MemoryNodeStore();
    const cache = createTopNodeCache(levels, s.native ? addon : null);
    return { ...s, memory, cache, view: cache.over(memory), root: emptyRoot, rootGen: 0 };
  });
  const state = new Map<bigint, bigint>();
  for (let step = 0; step < steps; step++) {
    const changes = nextBatch(step, state);
    for (const [id, v] of changes) state.set(id, v);
    const leaves = new Map([...changes].map(([id, v]) => [id, bigintToBytes32(v)]));
    const outcomes: { root: string; rootGen: number; written: string[]; read: number }[] = [];
    const batchGen = step + 1;
    for (const run of runs) {
      const stats: TreeStats = { leaves: 0, nodes_read: 0, nodes_written: 0, ms: 0 };
      const r = await update(
        countingSource(run.view, stats),
        run.root,
        run.rootGen,
        batchGen,
        leaves,
        run.walk,
      );
      const written = [...r.newNodes].map((n) => `${hex(n.hash)} ${hex(n.record)}`).sort();
      outcomes.push({ root: hex(r.root), rootGen: r.rootGen, written, read: stats.nodes_read });
      run.memory.putNodes(r.newNodes);
      run.root = r.root;
      run.rootGen = r.rootGen;
    }
    for (let k = 1; k < runs.length; k++) {
      expect(outcomes[k]!.root, `step ${step}, ${runs[k]!.name}`).toBe(outcomes[0]!.root);
      expect(outcomes[k]!.rootGen, `step ${step}, ${runs[k]!.name}: root gen`).toBe(outcomes[0]!.rootGen);
      expect(outcomes[k]!.written, `step ${step}, ${runs[k]!.name}`).toEqual(outcomes[0]!.written);
      expect(runs[k]!.cache.size, `step ${step}, ${runs[k]!.name}: cached nodes`).toBe(runs[0]!.cache.size);
    }
    // Both native walks read the same records, from the cache or the store.
    expect(outcomes[2]!.read, `step ${step}: records read`).toBe(outcomes[1]!.read);
    // Every node written, old or new, is cached alike in all three (or in none), under the batch's
    // gen.
    for (const line of outcomes[0]!.written) {
      const hash = Buffer.from(line.slice(0, 64), "hex");
      const want = toHex(runs[0]!.cache.get(hash, batchGen));
      for (const run of runs.slice(1)) expect(toHex(run.cache.get(hash, batchGen)), run.name).toBe(want);
    }
  }
  expect(runs[2]!.cache.size).toBeGreaterThan(100);
  return runs;
}

describe.skipIf(!haveAddon || !haveWalks)("the native walks with the native cache", () => {
  it("write, read and cache exactly what the other setups do, batch after batch (Merkle, height 40)", async () => {
    const empty = await emptySubtreeRoots(engine, new Uint8Array(32), 40);
    const update: Update = (nodes, root, rootGen, batchGen, leaves, walk) =>
      updateMerkle(engine, nodes, empty, root, rootGen, batchGen, leaves, "vault", undefined, walkOf(walk));
    await compareSetups(40, update, empty[40]!, 12, 5, 8);
  });

  it("write, read and cache exactly what the other setups do, batch after batch (Patricia, height 251)", async () => {
    const update: Update = (nodes, root, rootGen, batchGen, leaves, walk) =>
      updatePatricia(engine, nodes, 251, root, rootGen, batchGen, leaves, "order", undefined, walkOf(walk));
    await compareSetups(251, update, new Uint8Array(32), 10, 6, 8);
  });

  it("answer from the cache alone when it holds every record, and find nodes kept under another position", async () => {
    const height = 16;
    const leaves = new Map([3n, 700n, 5000n, 9000n, 60_000n].map((id) => [id, bigintToBytes32(id + 1n)]));
    // The whole tree sits in the cache under another tree's name (other positions); the store is empty.
    const cache = createTopNodeCache(height + 1, addon);
    let storeReads = 0;
    const source: NodeSource = {
      getNodes: (hashes, gens) => {
        storeReads += hashes.length;
        return new MemoryNodeStore().getNodes(hashes, gens);
      },
    };
    const zero = new Uint8Array(32);
    const built = await updatePatricia(engine, cache.over(source), height, zero, 0, 1, leaves, "other");
    const sizeBefore = cache.size;
    expect(sizeBefore).toBeGreaterThan(5);
    const again = new Map([
      [4n, bigintToBytes32(9n)],
      [9000n, bigintToBytes32(0n)],
    ]);
    const stats: TreeStats = { leaves: 0, nodes_read: 0, nodes_written: 0, ms: 0 };
    const view = countingSource(cache.over(source), stats);
    const viaCache = await updatePatricia(engine, view, height, built.root, built.rootGen, 2, again, "order");
    expect(storeReads).toBe(0);
    expect(stats.nodes_read).toBeGreaterThan(2);
    // The same as from a store that holds the tree.
    const plain = new MemoryNodeStore();
    plain.putNodes(built.newNodes);
    const direct = await updatePatricia(engine, plain, height, built.root, built.rootGen, 2, again, "order");
    expect(hex(viaCache.root)).toBe(hex(direct.root));
    // What it read under "other" is now also kept at its own positions in "order".
    expect(cache.size).toBeGreaterThanOrEqual(sizeBefore + stats.nodes_read);
  });

  it("copy their hits before the store is read, while another update may replace their slots", async () => {
    const height = 30;
    const ids = [
      1n,
      2n,
      1n << 28n,
      (1n << 28n) + 5n,
      2n << 28n,
      (2n << 28n) + 9n,
      3n << 28n,
      (3n << 28n) + 1n,
    ];
    const leaves = new Map(ids.map((id) => [id, bigintToBytes32(id + 7n)]));
    const store = new MemoryNodeStore();
    const cache = createTopNodeCache(3, addon); // the root and the two levels below it
    const built = await updatePatricia(
      engine,
      cache.over(store),
      height,
      new Uint8Array(32),
      0,
      1,
      leaves,
      "order",
    );
    store.putNodes(built.newNodes);
    // The node at (2, 0) is no longer cached: a step asks for it and for cached nodes at once.
    cache.remember("order", 2, 0, h(99), 1, h(98));
    let storeReads = 0;
    const source: NodeSource = {
      getNodes: (hashes, gens) => {
        storeReads += hashes.length;
        // Another update rewrites every cached position of this tree while the walk reads the store.
        for (let d = 0; d < 3; d++)
          for (let i = 0; i < 2 ** d; i++) cache.remember("order", d, i, h(100 + d * 8 + i), 1, h(200));
        return store.getNodes(hashes, gens);
      },
    };
    const again = new Map(ids.map((id) => [id, bigintToBytes32(id + 8n)]));
    const stats: TreeStats = { leaves: 0, nodes_read: 0, nodes_written: 0, ms: 0 };
    const view = countingSource(cache.over(source), stats);
    const viaCache = await updatePatricia(engine, view, height, built.root, built.rootGen, 2, again, "order");
    // Some records came from the cache, some from the store.
    expect(storeReads).toBeGreaterThan(0);
    expect(stats.nodes_read).toBeGreaterThan(storeReads);
    const direct = await updatePatricia(engine, store, height, built.root, built.rootGen, 2, again, "order");
    expect(hex(viaCache.root)).toBe(hex(direct.root));
  });

  it("report a missing or corrupt record as a STORE error naming the tree, and do not cache it", async () => {
    const empty = await emptySubtreeRoots(engine, new Uint8Array(32), 31);
    const leaves = new Map([3n, 9n, 1n << 30n].map((id) => [id, bigintToBytes32(id + 1n)]));
    const built = await updateMerkle(engine, new MemoryNodeStore(), empty, empty[31]!, 0, 1, leaves, "vault");
    const again = new Map([[4n, bigintToBytes32(8n)]]);
    for (const corrupt of [undefined, new Uint8Array(40)]) {
      const errors: string[] = [];
      for (const native of [false, true]) {
        const store = new MemoryNodeStore();
        store.putNodes(built.newNodes);
        const source: NodeSource = {
          getNodes: async (hashes, gens) =>
            (await store.getNodes(hashes, gens)).map((r, i) =>
              hex(hashes[i]!) === hex(built.root) ? corrupt : r,
            ),
        };
        const cache = createTopNodeCache(8, native ? addon : null);
        const err = await updateMerkle(
          engine,
          cache.over(source),
          empty,
          built.root,
          built.rootGen,
          2,
          again,
          "vault",
        ).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err, `native cache: ${native}`).toBeInstanceOf(DacdError);
        expect((err as DacdError).code).toBe("STORE");
        errors.push((err as Error).message);
        expect(cache.get(built.root, built.rootGen)).toBeUndefined();
      }
      expect(errors[1]).toBe(errors[0]);
      expect(errors[0]).toMatch(
        new RegExp(`^vault tree: node at height 31, index 0 \\(${hex(built.root)}\\)`),
      );
    }
  });
});
